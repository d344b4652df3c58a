/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch_local: the local launcher, banyan's default: engine processes
    on this host, children of the cluster's supervisor, each reading the
    profile's engine connection file.  */
#include "bn_connfile.h"
#include "bn_launch.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

static int
s_prepare (bn_launch_plan_t *plan, char *error, size_t size)
{
    assert (plan);
    const char *remote_only = plan->hosts            ? "--hosts"
                              : plan->per_host       ? "--engines-per-host"
                              : plan->engine_cmd     ? "--engine-cmd"
                              : plan->host_node      ? "--host-node"
                              : plan->min_hosts      ? "--min-hosts"
                              : plan->ssh_cmd        ? "--ssh-cmd"
                              : plan->mpiexec_cmd    ? "--mpiexec-cmd"
                              : plan->remote_prefix  ? "--remote-prefix"
                              : plan->batch_template ? "--batch-template"
                                                     : NULL;
    if (remote_only) {
        snprintf (error, size,
                  "%s is for the ssh, slurm and mpiexec launchers, not "
                  "local",
                  remote_only);
        return -1;
    }
    plan->nhosts = plan->n > 0 ? 1 : 0;
    plan->engines_per_host = plan->n;
    return 0;
}

static zlistx_t *
s_commands (const bn_launch_plan_t *plan)
{
    assert (plan);
    zlistx_t *commands = bn_launch_cmd_list ();
    char *file = bn_connfile_path (plan->profile_dir, plan->cluster_id,
                                   BN_CONNFILE_ENGINE);
    size_t extra = plan->engine_args ? zlist_size (plan->engine_args) : 0;
    char **argv = calloc (extra + 8, sizeof *argv);
    int per_process = plan->per_process > 0 ? plan->per_process : 1;
    bool ok = commands && file && argv;
    for (int first = 0; ok && first < plan->n; first += per_process) {
        int count =
            plan->n - first < per_process ? plan->n - first : per_process;
        char count_text[16], first_text[16];
        snprintf (count_text, sizeof count_text, "%d", count);
        snprintf (first_text, sizeof first_text, "%d", first + plan->first_id);
        size_t argc = 0;
        argv[argc++] = (char *)plan->engine;
        argv[argc++] = "--file";
        argv[argc++] = file;
        argv[argc++] = "--count";
        argv[argc++] = count_text;
        argv[argc++] = "--id";
        argv[argc++] = first_text;
        for (char *arg = extra ? zlist_first (plan->engine_args) : NULL; arg;
             arg = zlist_next (plan->engine_args))
            argv[argc++] = arg;
        argv[argc] = NULL;
        bn_launch_cmd_t *command =
            bn_launch_cmd_new ("local", BN_LAUNCH_INFO_FILE, argv);
        if (command) {
            command->first = first + plan->first_id;
            command->count = count;
            command->hosts = 1;
        }
        ok = command && zlistx_add_end (commands, command) != NULL;
        if (!ok)
            bn_launch_cmd_destroy (&command);
    }
    free (argv);
    free (file);
    if (!ok)
        zlistx_destroy (&commands);
    return commands;
}

const bn_launch_ops_t bn_launch_local = {
    .name = "local",
    .remote = false,
    .prepare = s_prepare,
    .commands = s_commands,
};

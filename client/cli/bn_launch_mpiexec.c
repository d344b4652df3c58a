/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch_mpiexec: the mpiexec launcher (MPICH's hydra): one process a
    host, `mpiexec -hosts H1,H2 -ppn 1 -n H sh -c SCRIPT banyan-host`; hydra
    passes the environment, so the connection info with it, and numbers
    the hosts by PMI_RANK. Ending mpiexec ends its proxies and with them the
    host scripts. hydra starts each host's proxy by ssh, in the hosts'
    order, and when one such ssh fails it waits on for that proxy: the
    supervisor watches them (bn_launchwatch) to name such a host at once.  */
#include "bn_hostscript.h"
#include "bn_launch.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
s_prepare (bn_launch_plan_t *plan, char *error, size_t size)
{
    assert (plan);
    return bn_launch_check_remote (plan, "mpiexec", error, size) ||
                   bn_launch_spread (plan, 0, error, size)
               ? -1
               : 0;
}

static zlistx_t *
s_commands (const bn_launch_plan_t *plan)
{
    assert (plan);
    zlistx_t *commands = bn_launch_cmd_list ();
    char **mpiexec =
        bn_launch_words (plan->mpiexec_cmd ? plan->mpiexec_cmd : "mpiexec");
    char *script = bn_hostscript (plan, "$PMI_RANK", BN_LAUNCH_INFO_ENV);
    size_t words = bn_launch_words_size (mpiexec);
    char **argv = calloc (words + 12, sizeof *argv);
    char *hosts = NULL;
    char count[16];
    snprintf (count, sizeof count, "%d", plan->nhosts);
    if (plan->hosts)
        hosts = bn_launch_host_list (plan, plan->nhosts);
    bn_launch_cmd_t *command = NULL;
    if (commands && mpiexec && script && argv && (hosts || !plan->hosts) &&
        plan->nhosts > 0) {
        memcpy (argv, mpiexec, words * sizeof *argv);
        size_t argc = words;
        if (hosts) {
            argv[argc++] = "-hosts";
            argv[argc++] = hosts;
        }
        argv[argc++] = "-ppn";
        argv[argc++] = "1";
        argv[argc++] = "-n";
        argv[argc++] = count;
        argv[argc++] = "sh";
        argv[argc++] = "-c";
        argv[argc++] = script;
        argv[argc++] = "banyan-host";
        argv[argc] = NULL;
        command = bn_launch_cmd_new ("mpiexec", BN_LAUNCH_INFO_ENV, argv);
        if (command) {
            command->hosts = plan->nhosts;
            command->script = strdup (script);
            //  hydra waits on for a proxy whose ssh failed: its end says
            //  the host cannot start
            command->host_children = true;
        }
    }
    bool ok = commands && mpiexec && script && argv;
    if (ok && plan->nhosts > 0)
        ok = command && command->script && zlistx_add_end (commands, command);
    if (!ok) {
        bn_launch_cmd_destroy (&command);
        zlistx_destroy (&commands);
    }
    free (hosts);
    free (argv);
    free (script);
    bn_launch_words_free (mpiexec);
    return commands;
}

const bn_launch_ops_t bn_launch_mpiexec = {
    .name = "mpiexec",
    .remote = true,
    .prepare = s_prepare,
    .commands = s_commands,
};

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch_ssh: the ssh launcher, as ipcluster's SSHEngineSetLauncher
    but one session per host: `ssh HOST sh -c SCRIPT banyan-host RANK`
    starts the host's engines, the connection info goes on the session's
    standard input (never on a command line, where other users of the host
    could read the key), and the session's end ends the engines.  */
#include "bn_hostscript.h"
#include "bn_launch.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

//  ssh without password prompts: the cluster starts in the background,
//  where nobody could answer one
#define S_SSH_CMD "ssh -o BatchMode=yes"

//  Seconds a host gets to end its engines when told to by `cluster stop`
#define S_KILL_TIMEOUT 15.0

static int
s_prepare (bn_launch_plan_t *plan, char *error, size_t size)
{
    assert (plan);
    if (!plan->hosts) {
        snprintf (error, size,
                  "--launcher ssh needs --hosts H1,H2,... or --hosts @FILE");
        return -1;
    }
    return bn_launch_check_remote (plan, "ssh", error, size) ||
                   bn_launch_spread (plan, 0, error, size)
               ? -1
               : 0;
}

static zlistx_t *
s_commands (const bn_launch_plan_t *plan)
{
    assert (plan);
    zlistx_t *commands = bn_launch_cmd_list ();
    char **ssh = bn_launch_words (plan->ssh_cmd ? plan->ssh_cmd : S_SSH_CMD);
    char *script = bn_hostscript (plan, "$1", BN_LAUNCH_INFO_STDIN);
    size_t words = bn_launch_words_size (ssh);
    char **argv = calloc (words + 3, sizeof *argv);
    bool ok = commands && ssh && script && argv;
    if (ok)
        memcpy (argv, ssh, words * sizeof *argv);
    char *host = plan->hosts ? zlist_first (plan->hosts) : NULL;
    for (int rank = 0; ok && host && rank < plan->nhosts; rank++) {
        char *remote = zsys_sprintf ("sh -c '%s' banyan-host %d", script, rank);
        argv[words] = host;
        argv[words + 1] = remote;
        bn_launch_cmd_t *command =
            remote ? bn_launch_cmd_new (host, BN_LAUNCH_INFO_STDIN, argv)
                   : NULL;
        free (remote);
        if (command) {
            command->first = rank * plan->engines_per_host;
            command->count = plan->n - command->first;
            if (command->count > plan->engines_per_host)
                command->count = plan->engines_per_host;
            command->hosts = 1;
            command->script = strdup (script);
        }
        ok = command && command->script &&
             zlistx_add_end (commands, command) != NULL;
        if (!ok)
            bn_launch_cmd_destroy (&command);
        host = zlist_next (plan->hosts);
    }
    free (argv);
    free (script);
    bn_launch_words_free (ssh);
    if (!ok)
        zlistx_destroy (&commands);
    return commands;
}

//  Ask host, over ssh, to end process group pgid if it is still the host
//  script's (a group outlives its leader only while members hold its id,
//  so a live leader that is not ours means the group is not ours either):
//  SIGTERM, SIGKILL after 5 s, until the group is gone.
static int
s_kill_host (char **ssh, const char *host, int pgid, FILE *log)
{
    char *remote = zsys_sprintf (
        "g=%d; if [ -r /proc/$g/cmdline ] && ! grep -q banyan-host "
        "/proc/$g/cmdline; then exit 0; fi; kill -TERM -$g 2>/dev/null || "
        "exit 0; i=0; while kill -0 -$g 2>/dev/null; do [ $i -ne 50 ] || "
        "kill -KILL -$g; [ $i -lt 100 ] || exit 1; sleep 0.1; i=$((i + 1)); "
        "done",
        pgid);
    size_t words = bn_launch_words_size (ssh);
    char **argv = calloc (words + 3, sizeof *argv);
    int rc = -1;
    if (remote && argv) {
        memcpy (argv, ssh, words * sizeof *argv);
        argv[words] = (char *)host;
        argv[words + 1] = remote;
        int status = bn_launch_run (argv, S_KILL_TIMEOUT, NULL, 0, log);
        rc = status >= 0 && WIFEXITED (status) && WEXITSTATUS (status) == 0
                 ? 0
                 : -1;
        if (rc != 0 && log)
            fprintf (log, "cannot end the engines on %s (process group %d)\n",
                     host, pgid);
    }
    free (argv);
    free (remote);
    return rc;
}

static int
s_stop (bn_clusterrec_t *record, double grace, FILE *log)
{
    assert (record);
    (void)grace;
    const char *ssh_cmd = bn_clusterrec_command (record);
    char **ssh = bn_launch_words (*ssh_cmd ? ssh_cmd : S_SSH_CMD);
    if (!ssh)
        return -1;
    int told = 0;
    bool failed = false;
    size_t hosts = bn_clusterrec_hosts (record);
    for (size_t index = 0; index < hosts; index++) {
        const bn_clusterrec_host_t *host = bn_clusterrec_host (record, index);
        if (host->state != BN_HOST_RUNNING && host->state != BN_HOST_LOST)
            continue;
        if (s_kill_host (ssh, host->name, host->pgid, log) == 0) {
            bn_clusterrec_set_host_state (record, index, BN_HOST_ENDED, NULL);
            told++;
        } else
            failed = true;
    }
    bn_launch_words_free (ssh);
    return failed ? -1 : told;
}

const bn_launch_ops_t bn_launch_ssh = {
    .name = "ssh",
    .remote = true,
    .prepare = s_prepare,
    .commands = s_commands,
    .stop = s_stop,
};

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch_slurm: the Slurm launcher. Inside an allocation (SLURM_JOB_ID
    set) one srun step, one task a node, runs the host script on each
    node; outside one, sbatch submits a batch script of the shape of
    ipyparallel's SlurmEngineSetLauncher (job name with the cluster id,
    --ntasks, --export=ALL, one srun step), or the user's --batch-template.
    The connection info travels in the environment (--export=ALL); a task's
    SLURM_PROCID is its host's rank. `cluster stop` ends the step or
    cancels the job.  */
#define _GNU_SOURCE //  open_memstream
#include "bn_hostscript.h"
#include "bn_launch.h"
#include "bn_launcher.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

//  Seconds a Slurm command may take to answer
#define S_SLURM_TIMEOUT 20.0

//  The batch script, with ipyparallel's {placeholders}
static const char *s_template = "#!/bin/sh\n"
                                "#SBATCH --job-name={job_name}\n"
                                "#SBATCH --nodes={hosts}\n"
                                "#SBATCH --ntasks={hosts}\n"
                                "#SBATCH --ntasks-per-node=1\n"
                                "#SBATCH --output={output_file}\n"
                                "#SBATCH --export=ALL\n"
                                "srun {program_and_args}\n";

static int
s_prepare (bn_launch_plan_t *plan, char *error, size_t size)
{
    assert (plan);
    const char *job = getenv ("SLURM_JOB_ID");
    plan->job_id = job && *job ? job : NULL;
    if (plan->job_id && plan->batch_template) {
        snprintf (error, size,
                  "--batch-template is for sbatch, outside an allocation; "
                  "this runs inside Slurm job %s",
                  plan->job_id);
        return -1;
    }
    if (bn_launch_check_remote (plan, "slurm", error, size))
        return -1;
    int hosts = 0;
    if (!plan->hosts && plan->job_id) {
        const char *nodes = getenv ("SLURM_JOB_NUM_NODES");
        if (!nodes)
            nodes = getenv ("SLURM_NNODES");
        hosts = nodes ? atoi (nodes) : 0;
        if (hosts <= 0) {
            snprintf (error, size,
                      "inside Slurm job %s, but SLURM_JOB_NUM_NODES does not "
                      "say how many nodes it has",
                      plan->job_id);
            return -1;
        }
    }
    return bn_launch_spread (plan, hosts, error, size);
}

//  "banyan-engines" or "banyan-engines-<cluster id>"
static char *
s_job_name (const bn_launch_plan_t *plan)
{
    return zsys_sprintf ("banyan-engines%s%s", *plan->cluster_id ? "-" : "",
                         plan->cluster_id);
}

//  text with each {key} of keys (pairs, NULL-terminated) replaced.
static char *
s_fill (const char *text, const char **keys)
{
    char *filled = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&filled, &size);
    if (!out)
        return NULL;
    const char *c = text;
    while (*c) {
        bool done = false;
        for (size_t index = 0; *c == '{' && keys[index]; index += 2) {
            size_t length = strlen (keys[index]);
            if (strncmp (c + 1, keys[index], length) == 0 &&
                c[length + 1] == '}') {
                fputs (keys[index + 1], out);
                c += length + 2;
                done = true;
                break;
            }
        }
        if (!done)
            fputc (*c++, out);
    }
    if (fclose (out) != 0) {
        free (filled);
        return NULL;
    }
    return filled;
}

//  The sbatch command and its batch script.
static bn_launch_cmd_t *
s_sbatch (const bn_launch_plan_t *plan, const char *script)
{
    char *name = s_job_name (plan);
    bool named = *plan->cluster_id;
    char *file = bn_launcher_batch_path (plan->profile_dir, plan->cluster_id);
    char *output =
        zsys_sprintf ("%s/log/banyan-engines%s%s.log", plan->profile_dir,
                      named ? "-" : "", plan->cluster_id);
    char *program = zsys_sprintf ("sh -c '%s' banyan-host", script);
    char *nodelist =
        plan->hosts ? bn_launch_host_list (plan, plan->nhosts) : NULL;
    char hosts[16], engines[16];
    snprintf (hosts, sizeof hosts, "%d", plan->nhosts);
    snprintf (engines, sizeof engines, "%d", plan->n);
    char *template = NULL;
    if (plan->batch_template)
        template = strdup (plan->batch_template);
    else if (nodelist) {
        //  A node list for the default script: after the task counts
        const char *at = strstr (s_template, "#SBATCH --output");
        template = zsys_sprintf ("%.*s#SBATCH --nodelist={nodelist}\n%s",
                                 (int)(at - s_template), s_template, at);
    } else
        template = strdup (s_template);
    bn_launch_cmd_t *command = NULL;
    if (name && file && output && program && template &&
        (nodelist || !plan->hosts)) {
        const char *keys[] = {"job_name",
                              name,
                              "hosts",
                              hosts,
                              "n",
                              engines,
                              "cluster_id",
                              plan->cluster_id,
                              "profile_dir",
                              plan->profile_dir,
                              "output_file",
                              output,
                              "nodelist",
                              nodelist ? nodelist : "",
                              "program_and_args",
                              program,
                              NULL};
        char *text = s_fill (template, keys);
        char *argv[] = {"sbatch", "--parsable", file, NULL};
        command = text ? bn_launch_cmd_new ("sbatch", BN_LAUNCH_INFO_ENV, argv)
                       : NULL;
        if (command) {
            command->file = file;
            command->file_text = text;
            file = NULL;
            //  The hosts report on the step's output, which Slurm writes
            //  to the job's output file: read there
            if (strstr (template, "{output_file}")) {
                command->reports = output;
                output = NULL;
            }
        } else
            free (text);
    }
    free (name);
    free (file);
    free (output);
    free (program);
    free (nodelist);
    free (template);
    return command;
}

//  The srun step, inside an allocation.
static bn_launch_cmd_t *
s_srun (const bn_launch_plan_t *plan, char *script)
{
    char *name = s_job_name (plan);
    char *nodes = zsys_sprintf ("--nodes=%d", plan->nhosts);
    char *tasks = zsys_sprintf ("--ntasks=%d", plan->nhosts);
    char *job = name ? zsys_sprintf ("--job-name=%s", name) : NULL;
    char *list = plan->hosts ? bn_launch_host_list (plan, plan->nhosts) : NULL;
    char *nodelist = list ? zsys_sprintf ("--nodelist=%s", list) : NULL;
    bn_launch_cmd_t *command = NULL;
    if (nodes && tasks && job && (nodelist || !plan->hosts)) {
        char *argv[12];
        size_t argc = 0;
        argv[argc++] = "srun";
        argv[argc++] = nodes;
        argv[argc++] = tasks;
        argv[argc++] = "--ntasks-per-node=1";
        argv[argc++] = job;
        if (nodelist)
            argv[argc++] = nodelist;
        argv[argc++] = "sh";
        argv[argc++] = "-c";
        argv[argc++] = script;
        argv[argc++] = "banyan-host";
        argv[argc] = NULL;
        command = bn_launch_cmd_new ("srun", BN_LAUNCH_INFO_ENV, argv);
    }
    free (name);
    free (nodes);
    free (tasks);
    free (job);
    free (list);
    free (nodelist);
    return command;
}

static zlistx_t *
s_commands (const bn_launch_plan_t *plan)
{
    assert (plan);
    zlistx_t *commands = bn_launch_cmd_list ();
    char *script = bn_hostscript (plan, "$SLURM_PROCID", BN_LAUNCH_INFO_ENV);
    bool ok = commands && script;
    if (ok && plan->nhosts > 0) {
        bn_launch_cmd_t *command =
            plan->job_id ? s_srun (plan, script) : s_sbatch (plan, script);
        if (command) {
            command->hosts = plan->job_id ? plan->nhosts : 0;
            command->script = script;
            script = NULL;
        }
        ok = command && zlistx_add_end (commands, command);
        if (!ok)
            bn_launch_cmd_destroy (&command);
    }
    free (script);
    if (!ok)
        zlistx_destroy (&commands);
    return commands;
}

//  sbatch --parsable prints "JOBID" or "JOBID;CLUSTER".
static int
s_output (bn_clusterrec_t *record, const char *line)
{
    char job[64];
    size_t length = strcspn (line, ";\r\n");
    if (length == 0 || length >= sizeof job ||
        strspn (line, "0123456789") != length)
        return -1;
    memcpy (job, line, length);
    job[length] = 0;
    bn_clusterrec_set_job (record, job);
    return 0;
}

//  The state and nodes of job (squeue), into state and nodes; returns 0,
//  1 if Slurm no longer knows it, -1 if squeue cannot say.
static int
s_squeue (const char *job, char *state, size_t state_size, char *nodes,
          size_t nodes_size)
{
    char jobs[80], output[512];
    snprintf (jobs, sizeof jobs, "--jobs=%s", job);
    char *argv[] = {"squeue", "--noheader", jobs, "--format=%T %N", NULL};
    int status =
        bn_launch_run (argv, S_SLURM_TIMEOUT, output, sizeof output, NULL);
    if (status < 0 || !WIFEXITED (status))
        return -1;
    state[0] = nodes[0] = 0;
    if (WEXITSTATUS (status) != 0)
        //  "Invalid job id specified": it ended and is forgotten
        return 1;
    if (sscanf (output, "%63s %255s", state, nodes) < 1)
        return 1;
    (void)state_size;
    (void)nodes_size;
    return 0;
}

static int
s_poll (bn_clusterrec_t *record, char *problem, size_t size)
{
    const char *job = bn_clusterrec_job (record);
    if (!*job)
        return 0;
    char state[64], nodes[256];
    int rc = s_squeue (job, state, sizeof state, nodes, sizeof nodes);
    if (rc < 0)
        return 0;
    if (rc == 0 && strcmp (state, "RUNNING") == 0 && *nodes)
        bn_clusterrec_set_nodes (record, nodes);
    if (rc == 0 &&
        (strcmp (state, "PENDING") == 0 || strcmp (state, "RUNNING") == 0 ||
         strcmp (state, "CONFIGURING") == 0 ||
         strcmp (state, "SUSPENDED") == 0))
        return 0;
    snprintf (problem, size, "Slurm job %s ended%s%s%s", job,
              *state ? " (" : "", state, *state ? ")" : "");
    return 1;
}

//  True while Slurm still lists job (a job, or a step "JOB.STEP") as
//  running; false once it ended or Slurm no longer knows it, or if squeue
//  cannot say.
static bool
s_listed (const char *job)
{
    char output[4096];
    if (!strchr (job, '.')) {
        char state[64], nodes[256];
        int rc = s_squeue (job, state, sizeof state, nodes, sizeof nodes);
        return rc == 0 && (strcmp (state, "PENDING") == 0 ||
                           strcmp (state, "RUNNING") == 0 ||
                           strcmp (state, "COMPLETING") == 0 ||
                           strcmp (state, "CONFIGURING") == 0 ||
                           strcmp (state, "SUSPENDED") == 0);
    }
    //  A step is listed among its job's steps while it runs
    char jobs[80];
    snprintf (jobs, sizeof jobs, "--jobs=%.*s", (int)strcspn (job, "."), job);
    char *argv[] = {"squeue", "--noheader",  "--steps",
                    jobs,     "--format=%i", NULL};
    int status =
        bn_launch_run (argv, S_SLURM_TIMEOUT, output, sizeof output, NULL);
    if (status < 0 || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
        return false;
    char *save = NULL;
    for (char *line = strtok_r (output, " \n", &save); line;
         line = strtok_r (NULL, " \n", &save))
        if (strcmp (line, job) == 0)
            return true;
    return false;
}

//  Cancel job (a job or a step) and wait until Slurm no longer runs it;
//  one that ended already is fine. Returns 0, or -1 if it still runs.
static int
s_cancel (const char *job, double grace, FILE *log)
{
    char *argv[] = {"scancel", (char *)job, NULL};
    bn_launch_run (argv, S_SLURM_TIMEOUT, NULL, 0, NULL);
    int64_t deadline = zclock_mono () + (int64_t)((grace + 30) * 1000);
    while (s_listed (job)) {
        if (zclock_mono () >= deadline) {
            if (log)
                fprintf (log, "Slurm still runs %s after scancel\n", job);
            return -1;
        }
        zclock_sleep (200);
    }
    return 0;
}

//  SIGTERM to the tasks of the job's steps, or of each host's step; the
//  host scripts end their engines and so their steps.
static void
s_end (bn_clusterrec_t *record, FILE *log)
{
    assert (record);
    const char *targets[64];
    size_t count = 0;
    if (*bn_clusterrec_job (record))
        targets[count++] = bn_clusterrec_job (record);
    for (size_t index = 0; index < bn_clusterrec_hosts (record); index++) {
        const bn_clusterrec_host_t *host = bn_clusterrec_host (record, index);
        //  A step of a job told already was told with it
        bool known = false;
        for (size_t at = 0; at < count; at++)
            known |=
                strcmp (targets[at], host->step) == 0 ||
                (strncmp (targets[at], host->step, strlen (targets[at])) == 0 &&
                 host->step[strlen (targets[at])] == '.');
        if (host->state == BN_HOST_RUNNING && *host->step && !known &&
            count < 64)
            targets[count++] = host->step;
    }
    for (size_t index = 0; index < count; index++) {
        char *argv[] = {"scancel", "--signal=TERM", (char *)targets[index],
                        NULL};
        int status = bn_launch_run (argv, S_SLURM_TIMEOUT, NULL, 0, log);
        if (status != 0 && log)
            fprintf (log, "scancel --signal=TERM %s failed\n", targets[index]);
    }
}

static int
s_stop (bn_clusterrec_t *record, double grace, FILE *log)
{
    assert (record);
    int told = 0;
    bool failed = false;
    const char *job = bn_clusterrec_job (record);
    size_t hosts = bn_clusterrec_hosts (record);
    if (*job) {
        if (s_cancel (job, grace, log) == 0) {
            told++;
            for (size_t index = 0; index < hosts; index++)
                bn_clusterrec_set_host_state (record, index, BN_HOST_ENDED,
                                              NULL);
        } else
            failed = true;
    }
    //  Steps inside an allocation: each host names its step, which ends
    //  with all of its hosts
    for (size_t index = 0; index < hosts; index++) {
        const bn_clusterrec_host_t *host = bn_clusterrec_host (record, index);
        if ((host->state != BN_HOST_RUNNING && host->state != BN_HOST_LOST) ||
            !*host->step)
            continue;
        char step[64];
        snprintf (step, sizeof step, "%s", host->step);
        if (s_cancel (step, grace, log) == 0)
            told++;
        else
            failed = true;
        for (size_t other = index; other < hosts; other++)
            if (strcmp (bn_clusterrec_host (record, other)->step, step) == 0)
                bn_clusterrec_set_host_state (record, other, BN_HOST_ENDED,
                                              NULL);
    }
    return failed ? -1 : told;
}

const bn_launch_ops_t bn_launch_slurm = {
    .name = "slurm",
    .remote = true,
    .prepare = s_prepare,
    .commands = s_commands,
    .output = s_output,
    .poll = s_poll,
    .end = s_end,
    .stop = s_stop,
};

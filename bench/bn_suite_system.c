/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_system: start-up (time until N engines are registered) and
    memory (peak resident size of the controller, a tree node and one
    engine process) of a banyan cluster.  */
#include "bn_benchcluster.h"
#include "bn_procinfo.h"
#include "bn_suites.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bn_benchcluster_t *cluster; //  the cluster measured
    int engines;                //  its engines
} s_state_t;

//  track_: seconds from launching a controller until `engines` engines
//  have registered; a fresh cluster each sample.
int
bn_suite_registered_run (bn_benchcase_t *c, double *value)
{
    int engines = (int)bn_benchcase_long (c, "engines", 1);
    bn_benchcluster_t *cluster =
        bn_benchcluster_new (c, BN_BENCHSTACK_BANYAN, engines);
    if (!cluster)
        return bn_benchcase_fail (c, "out of memory");
    int rc = bn_benchcluster_start (cluster, 60 + engines / 8.0);
    *value = bn_benchcluster_start_seconds (cluster);
    bn_benchcluster_destroy (&cluster);
    return rc == 0 ? BN_BENCH_OK : BN_BENCH_FAIL;
}

//  A cluster whose engines all run in one process (`count` of them) or
//  spread as usual (`engines`), after one echo through every engine on
//  the direct view and one on the broadcast view.
int
bn_suite_memory_setup (bn_benchcase_t *c)
{
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    long count = bn_benchcase_long (c, "count", 0);
    self->engines =
        count > 0 ? (int)count : (int)bn_benchcase_long (c, "engines", 1);
    self->cluster =
        bn_benchcluster_new (c, BN_BENCHSTACK_BANYAN, self->engines);
    if (!self->cluster)
        return bn_benchcase_fail (c, "out of memory");
    if (count > 0)
        bn_benchcluster_set_per_process (self->cluster, (int)count);
    char mode[32];
    if (bn_benchcase_str (c, "tree_mode", mode, sizeof mode))
        bn_benchcluster_set_tree_mode (self->cluster, mode);
    if (bn_benchcluster_start (self->cluster, 60 + self->engines / 8.0) != 0)
        return BN_BENCH_FAIL;
    bn_client_t *client = bn_benchcluster_client (self->cluster);
    bn_value_t *args = bn_value_new_list ();
    char payload[1000] = {0};
    bn_value_append (args, bn_value_new_bytes (payload, sizeof payload));
    bn_view_kind_t kinds[] = {BN_VIEW_DIRECT, BN_VIEW_BROADCAST};
    int rc = BN_BENCH_OK;
    for (size_t k = 0; k < 2; k++) {
        bn_view_t *view = bn_view_new (client, kinds[k]);
        bn_result_t *result = NULL;
        if (kinds[k] == BN_VIEW_BROADCAST)
            bn_view_set_coalescing (view, true);
        int sent = view ? bn_view_apply (view, "echo", args, NULL, &result)
                        : BN_ENOMEM;
        int got = sent == 0 ? bn_result_get (result, 60) : sent;
        //  the tree's absence only costs the tree node's figure
        if (got != 0 && kinds[k] == BN_VIEW_DIRECT)
            rc = bn_benchcase_fail (c, "echo: %s", bn_strerror (got));
        bn_result_destroy (&result);
        bn_view_destroy (&view);
    }
    bn_value_destroy (&args);
    return rc;
}

void
bn_suite_memory_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    bn_benchcluster_destroy (&self->cluster);
    free (self);
    c->state = NULL;
}

//  The first process running program (a basename) with an argument that
//  names the case's folder; 0 if there is none.
static pid_t
s_find_process (bn_benchcase_t *c, const char *program)
{
    DIR *proc = opendir ("/proc");
    struct dirent *entry;
    pid_t found = 0;
    while (proc && !found && (entry = readdir (proc))) {
        pid_t pid = (pid_t)atoi (entry->d_name);
        if (pid <= 0)
            continue;
        char path[64], cmdline[8192];
        snprintf (path, sizeof path, "/proc/%d/cmdline", (int)pid);
        FILE *file = fopen (path, "r");
        if (!file)
            continue;
        size_t size = fread (cmdline, 1, sizeof cmdline - 1, file);
        fclose (file);
        cmdline[size] = 0;
        const char *base = strrchr (cmdline, '/');
        base = base ? base + 1 : cmdline;
        if (strcmp (base, program) != 0)
            continue;
        for (size_t at = strlen (cmdline) + 1; at < size;
             at += strlen (cmdline + at) + 1)
            if (strstr (cmdline + at, c->dir))
                found = pid;
    }
    if (proc)
        closedir (proc);
    return found;
}

int
bn_suite_controller_mem_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    pid_t pid = bn_benchcluster_controller_pid (self->cluster);
    *value = pid > 0 ? bn_procinfo_peak (pid) : -1;
    return *value >= 0 ? BN_BENCH_OK
                       : bn_benchcase_fail (c, "no controller process");
}

//  The largest tree node process of the controller (tree_mode
//  processes).
int
bn_suite_tree_node_mem_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    pid_t controller = bn_benchcluster_controller_pid (self->cluster);
    *value = controller > 0
                 ? bn_procinfo_largest_child (controller, "banyan-scheduler")
                 : -1;
    if (*value < 0)
        return bn_benchcase_skip (c, "no banyan-scheduler process: the "
                                     "tree's nodes run inside the controller");
    return BN_BENCH_OK;
}

int
bn_suite_engine_mem_run (bn_benchcase_t *c, double *value)
{
    pid_t pid = s_find_process (c, "banyan-engine");
    *value = pid > 0 ? bn_procinfo_peak (pid) : -1;
    return *value >= 0 ? BN_BENCH_OK
                       : bn_benchcase_fail (c, "no banyan-engine process");
}

int
bn_suite_engine_bytes_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    int rc = bn_suite_engine_mem_run (c, value);
    if (rc == BN_BENCH_OK)
        *value /= self->engines;
    return rc;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_large: payloads past 2 GiB (MPI4Dask moves 3.2 GB a worker):
    a push of B bytes from the C client to one engine through the mux, or
    to four engines through the broadcast tree, each engine's CRC-32 of
    what it holds (zlib.crc32) checked against the client's; the push's time and
   the peak resident size of every process on the path: a transfer per case
   (banyan-bench runs each in a process of its own), each costing B bytes in
   every process, which every case of the suite measures once.  */
#include "bn_apply.h"
#include "bn_benchcluster.h"
#include "bn_procinfo.h"
#include "bn_suites.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

//  Seconds the push, and the checksums, may take
#define S_CALL_TIMEOUT 900.0
//  Engines of the tree views
#define S_TREE_ENGINES 4

//  One transfer's figures.
typedef struct {
    char view[32];    //  direct, tree or tree_processes
    long bytes;       //  payload
    int rc;           //  BN_BENCH_OK, _FAIL or _SKIP
    char reason[512]; //  why not OK
    int engines;      //  engines pushed to
    double seconds;   //  push to its last reply
    double client;    //  peak resident bytes of the client
    double controller;
    double node;                   //  largest tree node process, or -1
    double engine[S_TREE_ENGINES]; //  each engine's process
} s_transfer_t;

//  MemAvailable of /proc/meminfo in bytes, or -1.
static double
s_available (void)
{
    FILE *file = fopen ("/proc/meminfo", "r");
    char line[256];
    double bytes = -1;
    while (file && fgets (line, sizeof line, file))
        if (strncmp (line, "MemAvailable:", 13) == 0)
            bytes = atol (line + 13) * 1024.0;
    if (file)
        fclose (file);
    return bytes;
}

static void
s_release (void *data, void *hint)
{
    free (data);
}

//  Record why the transfer did not give its figures; returns rc.
static int s_stop (s_transfer_t *t, int rc, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

static int
s_stop (s_transfer_t *t, int rc, const char *format, ...)
{
    t->rc = rc;
    va_list args;
    va_start (args, format);
    vsnprintf (t->reason, sizeof t->reason, format, args);
    va_end (args);
    return rc;
}

//  The process id of each engine, in the order of targets' ids (the
//  engines answer getpid).
static int
s_engine_pids (bn_client_t *client, pid_t *pids, int engines)
{
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    int rc =
        view ? bn_view_apply (view, "getpid", NULL, NULL, &result) : BN_ENOMEM;
    if (rc == 0)
        rc = bn_result_get (result, S_CALL_TIMEOUT);
    for (size_t i = 0; rc == 0 && i < bn_result_count (result); i++) {
        int id = bn_result_engine_id (result, i);
        if (id >= 0 && id < engines)
            pids[id] = (pid_t)bn_value_int (bn_result_value (result, i));
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    return rc;
}

//  Push, then the engines' checksums of what they hold; the cluster is
//  started and the payload made.
static int
s_push (s_transfer_t *t, bn_view_t *view, void *payload, size_t size,
        int64_t expected)
{
    //  the value takes the payload: the only copy the client makes
    bn_value_t *bytes =
        bn_value_new_bytes_shared (payload, size, s_release, NULL);
    bn_value_t *ns = bytes ? bn_value_new_dict () : NULL;
    if (!bytes)
        free (payload);
    if (!ns || bn_value_dict_set_str (ns, "x", bytes) != 0) {
        if (!ns)
            bn_value_destroy (&bytes);
        bn_value_destroy (&ns);
        return s_stop (t, BN_BENCH_FAIL, "%s", "out of memory");
    }
    bn_result_t *result = NULL;
    double start = zclock_usecs () / 1e6;
    int rc = bn_view_push (view, ns, &result);
    //  the request's frame keeps the bytes until it is sent
    bn_value_destroy (&ns);
    if (rc == 0)
        rc = bn_result_get (result, S_CALL_TIMEOUT);
    t->seconds = zclock_usecs () / 1e6 - start;
    bn_result_destroy (&result);
    if (rc != 0)
        return s_stop (t, BN_BENCH_FAIL, "push: %s", bn_strerror (rc));

    bn_value_t *args = bn_value_new_list ();
    if (!args || bn_value_append (args, bn_apply_reference_new ("x")) != 0) {
        bn_value_destroy (&args);
        return s_stop (t, BN_BENCH_FAIL, "%s", "out of memory");
    }
    rc = bn_view_apply (view, "crc32", args, NULL, &result);
    bn_value_destroy (&args);
    if (rc == 0)
        rc = bn_result_get (result, S_CALL_TIMEOUT);
    if (rc != 0) {
        bn_result_destroy (&result);
        return s_stop (t, BN_BENCH_FAIL, "checksum: %s", bn_strerror (rc));
    }
    for (size_t i = 0; i < bn_result_count (result); i++) {
        const bn_value_t *got = bn_result_value (result, i);
        if (bn_value_type (got) != BN_VALUE_INT ||
            bn_value_int (got) != expected) {
            char which[64];
            snprintf (which, sizeof which, "%d",
                      bn_result_engine_id (result, i));
            bn_result_destroy (&result);
            return s_stop (t, BN_BENCH_FAIL,
                           "engine %s holds other bytes than were pushed",
                           which);
        }
    }
    bn_result_destroy (&result);
    return BN_BENCH_OK;
}

//  Start a cluster for t's view, push t->bytes and read every figure.
static int
s_transfer (bn_benchcase_t *c, s_transfer_t *t)
{
    bool direct = strcmp (t->view, "direct") == 0;
    bool processes = strcmp (t->view, "tree_processes") == 0;
    if (t->bytes <= 0)
        return s_stop (t, BN_BENCH_FAIL, "%s", "bytes must be positive");
    //  a copy in the controller, each engine and, in processes mode, the
    //  root node's process, all at once at the end (the client's goes
    //  once the controller has it); and a margin
    double needed = (double)t->bytes * (t->engines + 1 + processes) + (1 << 30);
    double available = s_available ();
    if (available < needed) {
        char detail[128];
        snprintf (detail, sizeof detail, "%.1f GiB available, %.1f needed",
                  available / (1 << 30), needed / (1 << 30));
        return s_stop (t, BN_BENCH_SKIP, "too little memory: %s", detail);
    }
    bn_benchcluster_t *cluster =
        bn_benchcluster_new (c, BN_BENCHSTACK_BANYAN, t->engines);
    if (!cluster)
        return s_stop (t, BN_BENCH_FAIL, "%s", "out of memory");
    bn_benchcluster_set_per_process (cluster, 1);
    if (!direct) {
        bn_benchcluster_set_depth (cluster, 0);
        bn_benchcluster_set_tree_mode (cluster,
                                       processes ? "processes" : "threads");
    }
    if (bn_benchcluster_start (cluster, 120) != 0) {
        bn_benchcluster_destroy (&cluster);
        return s_stop (t, BN_BENCH_FAIL, "%s", c->reason);
    }
    bn_client_t *client = bn_benchcluster_client (cluster);
    pid_t pids[S_TREE_ENGINES] = {0};
    bn_view_t *view =
        bn_view_new (client, direct ? BN_VIEW_DIRECT : BN_VIEW_BROADCAST);
    int rc = BN_BENCH_OK;
    if (!view || (!direct && (bn_view_set_coalescing (view, true) != 0 ||
                              bn_view_set_output_in_reply (view, true) != 0)))
        rc = s_stop (t, BN_BENCH_FAIL, "%s", "broadcast view options");
    else if (s_engine_pids (client, pids, t->engines) != 0)
        rc = s_stop (t, BN_BENCH_FAIL, "%s", "no engine process ids");
    //  The payload is made once the cluster runs: a process the cluster
    //  forked from this one would keep its pages after the push.
    size_t size = (size_t)t->bytes;
    uint64_t *payload =
        rc == BN_BENCH_OK ? malloc (size + sizeof (uint64_t)) : NULL;
    if (rc == BN_BENCH_OK && !payload)
        rc = s_stop (t, BN_BENCH_SKIP, "%s", "cannot allocate the payload");
    if (rc == BN_BENCH_OK) {
        for (size_t i = 0; i <= size / sizeof (uint64_t); i++)
            payload[i] = i * 0x9e3779b97f4a7c15u;
        int64_t expected = (int64_t)crc32_z (0, (const Bytef *)payload, size);
        //  The payload is resident already: the client's peak from here
        //  is that one copy and what the push adds to it.
        bn_procinfo_reset_peak (getpid ());
        rc = s_push (t, view, payload, size, expected);
    }
    if (rc == BN_BENCH_OK) {
        pid_t controller = bn_benchcluster_controller_pid (cluster);
        t->client = bn_procinfo_peak (getpid ());
        t->controller = controller > 0 ? bn_procinfo_peak (controller) : -1;
        t->node =
            controller > 0
                ? bn_procinfo_largest_child (controller, "banyan-scheduler")
                : -1;
        for (int i = 0; i < t->engines; i++)
            t->engine[i] = pids[i] > 0 ? bn_procinfo_peak (pids[i]) : -1;
        t->rc = BN_BENCH_OK;
    }
    bn_view_destroy (&view);
    bn_benchcluster_destroy (&cluster);
    return rc;
}

//  The engines of a view, or 0 if it is unknown.
static int
s_engines_of (const char *view)
{
    if (strcmp (view, "direct") == 0)
        return 1;
    if (strcmp (view, "tree") == 0 || strcmp (view, "tree_processes") == 0)
        return S_TREE_ENGINES;
    return 0;
}

int
bn_suite_large_setup (bn_benchcase_t *c)
{
    char view[32] = "direct", process[32] = "";
    bn_benchcase_str (c, "view", view, sizeof view);
    int engines = s_engines_of (view);
    if (!engines)
        return bn_benchcase_fail (c, "unknown view %s", view);
    //  what the view has no process for is known before any transfer
    if (bn_benchcase_str (c, "process", process, sizeof process)) {
        int n = strncmp (process, "engine", 6) == 0 ? atoi (process + 6) : 0;
        if (strcmp (process, "node") == 0 &&
            strcmp (view, "tree_processes") != 0)
            return bn_benchcase_skip (
                c, "no banyan-scheduler process: the tree's nodes run as "
                   "threads of the controller, or there is no tree");
        if (strncmp (process, "engine", 6) == 0 && n > engines)
            return bn_benchcase_skip (c, "%d engine(s) on this view", engines);
    }
    s_transfer_t *t = calloc (1, sizeof *t);
    if (!t)
        return bn_benchcase_fail (c, "out of memory");
    c->state = t;
    snprintf (t->view, sizeof t->view, "%s", view);
    t->bytes = bn_benchcase_long (c, "bytes", 0);
    t->engines = engines;
    int rc = s_transfer (c, t);
    if (rc == BN_BENCH_FAIL)
        return bn_benchcase_fail (c, "%s", t->reason);
    if (rc == BN_BENCH_SKIP)
        return bn_benchcase_skip (c, "%s", t->reason);
    return BN_BENCH_OK;
}

void
bn_suite_large_teardown (bn_benchcase_t *c)
{
    free (c->state);
    c->state = NULL;
}

int
bn_suite_large_seconds_run (bn_benchcase_t *c, double *value)
{
    *value = ((s_transfer_t *)c->state)->seconds;
    return BN_BENCH_OK;
}

int
bn_suite_large_peak_run (bn_benchcase_t *c, double *value)
{
    s_transfer_t *t = c->state;
    char process[32] = "";
    bn_benchcase_str (c, "process", process, sizeof process);
    *value = -1;
    if (strcmp (process, "client") == 0)
        *value = t->client;
    else if (strcmp (process, "controller") == 0)
        *value = t->controller;
    else if (strcmp (process, "node") == 0)
        *value = t->node;
    else if (strncmp (process, "engine", 6) == 0) {
        int n = atoi (process + 6);
        if (n < 1 || n > t->engines)
            return bn_benchcase_fail (c, "unknown process %s", process);
        *value = t->engine[n - 1];
    } else
        return bn_benchcase_fail (c, "unknown process %s", process);
    return *value >= 0 ? BN_BENCH_OK
                       : bn_benchcase_fail (c, "no %s process", process);
}

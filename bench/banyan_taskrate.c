/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan-taskrate: tasks per second through a controller's task
    scheduler (or, for comparison, its mux): TASKS calls of a function
    with no arguments, at most INFLIGHT outstanding, from one libbanyan
    client. Works against banyan-controller and a stock ipcontroller
    alike, with whatever engines they serve.

    Usage: banyan-taskrate [--tasks N] [--inflight N] [--mux] [--fn NAME]
                           [--repeat N] CONNECTION-FILE-OR-PROFILE  */
#include "banyan.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
s_usage (void)
{
    fprintf (stderr, "usage: banyan-taskrate [--tasks N] [--inflight N] "
                     "[--mux] [--fn NAME] [--repeat N] SOURCE\n");
    return 2;
}

//  One run: tasks calls, at most inflight outstanding; returns the tasks
//  per second, or -1 on a failed call.
static double
s_run (bn_client_t *client, bool mux, const char *fn, long tasks, long inflight)
{
    int *ids = NULL;
    bn_view_t **views = NULL;
    size_t nviews = 1;
    if (mux) {
        //  one direct view per engine, used in turn
        bn_idset_t *set = bn_client_ids (client);
        nviews = set ? bn_idset_count (set) : 0;
        ids = calloc (nviews ? nviews : 1, sizeof *ids);
        size_t n = 0;
        for (int id = set ? bn_idset_first (set) : -1; id >= 0 && n < nviews;
             id = bn_idset_next (set, id))
            ids[n++] = id;
        bn_idset_destroy (&set);
        if (!nviews)
            return -1;
    }
    views = calloc (nviews, sizeof *views);
    for (size_t v = 0; v < nviews; v++) {
        views[v] =
            bn_view_new (client, mux ? BN_VIEW_DIRECT : BN_VIEW_LOAD_BALANCED);
        if (mux)
            bn_view_set_target_list (views[v], &ids[v], 1);
    }
    bn_result_t **ring = calloc ((size_t)inflight, sizeof *ring);
    double start = zclock_usecs () / 1e6;
    long sent = 0, done = 0;
    int failed = 0;
    while (done < tasks && !failed) {
        //  keep the window full, then wait for the oldest
        while (sent < tasks && sent - done < inflight) {
            bn_result_t **slot = &ring[sent % inflight];
            if (bn_view_apply (views[sent % nviews], fn, NULL, NULL, slot)) {
                failed = 1;
                break;
            }
            sent++;
        }
        if (failed)
            break;
        bn_result_t **oldest = &ring[done % inflight];
        int rc = bn_result_get (*oldest, 60);
        if (rc != 0) {
            fprintf (stderr, "task %ld: %s %s\n", done, bn_strerror (rc),
                     bn_result_ename (*oldest, 0) ? bn_result_ename (*oldest, 0)
                                                  : "");
            failed = 1;
        }
        bn_result_destroy (oldest);
        done++;
    }
    double elapsed = zclock_usecs () / 1e6 - start;
    for (long i = 0; i < inflight; i++)
        bn_result_destroy (&ring[i]);
    free (ring);
    for (size_t v = 0; v < nviews; v++)
        bn_view_destroy (&views[v]);
    free (views);
    free (ids);
    return failed ? -1 : (double)tasks / elapsed;
}

int
main (int argc, char **argv)
{
    long tasks = 10000, inflight = 1000, repeat = 3, engines = 1;
    bool mux = false;
    const char *fn = "noop";
    const char *source = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp (arg, "--tasks") && has_value)
            tasks = atol (argv[++i]);
        else if (!strcmp (arg, "--inflight") && has_value)
            inflight = atol (argv[++i]);
        else if (!strcmp (arg, "--repeat") && has_value)
            repeat = atol (argv[++i]);
        else if (!strcmp (arg, "--engines") && has_value)
            engines = atol (argv[++i]);
        else if (!strcmp (arg, "--fn") && has_value)
            fn = argv[++i];
        else if (!strcmp (arg, "--mux"))
            mux = true;
        else if (arg[0] != '-' && !source)
            source = arg;
        else
            return s_usage ();
    }
    if (tasks < 1 || inflight < 1 || repeat < 1 || engines < 1)
        return s_usage ();
    int rc;
    bn_client_t *client = bn_client_new (source, 30, &rc);
    if (!client) {
        fprintf (stderr, "banyan-taskrate: %s\n", bn_strerror (rc));
        return 1;
    }
    if (bn_client_wait_for_engines (client, (size_t)engines, 120) != 0) {
        fprintf (stderr, "banyan-taskrate: fewer than %ld engines\n", engines);
        bn_client_destroy (&client);
        return 1;
    }
    //  one short warm-up run, then the measured ones
    s_run (client, mux, fn, inflight < 100 ? inflight : 100, inflight);
    printf ("%s, %zu engines, %ld tasks of %s, %ld in flight:",
            mux ? "mux" : "task scheduler", bn_client_engine_count (client),
            tasks, fn, inflight);
    int status = 0;
    for (long r = 0; r < repeat; r++) {
        double rate = s_run (client, mux, fn, tasks, inflight);
        if (rate < 0) {
            status = 1;
            break;
        }
        printf (" %.0f", rate);
        fflush (stdout);
    }
    printf (" tasks/s\n");
    bn_client_destroy (&client);
    return status;
}

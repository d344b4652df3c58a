/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_soak: banyan-bench's soak: mixed traffic against a banyan cluster
    for a given time (direct, broadcast coalescing, grouped, reduced and
    forwarded, load-balanced tasks with dependencies, push and pull of
    1 kB to 10 MB, history queries) while engines join and die and
    clients vanish mid-request, in threads and processes tree modes at
    once. Every msg_id sent must get a reply or an error, and no banyan
    process's RSS or open descriptors may grow after warm-up.  */
#ifndef BN_SOAK_H_INCLUDED
#define BN_SOAK_H_INCLUDED

#include <stdbool.h>
#include <stdio.h>

typedef struct _bn_soak_t bn_soak_t;

//  A soak of the programs in bin_dir (banyan-controller, banyan-engine,
//  and banyan-bench itself for the clients that vanish); 10 minutes,
//  warm-up a fifth of it, 4 engines per cluster, both tree modes, 5 %
//  growth allowed. Returns NULL if out of memory.
bn_soak_t *bn_soak_new (const char *bin_dir);

//  Destroy the soak; NULLs *self_p; NULL-safe.
void bn_soak_destroy (bn_soak_t **self_p);

//  How long the traffic runs, in seconds.
void bn_soak_set_duration (bn_soak_t *self, double seconds);

//  Seconds before the figures judged are taken (default: a fifth of the
//  duration).
void bn_soak_set_warmup (bn_soak_t *self, double seconds);

//  Engines started with each cluster (besides those that join and die).
void bn_soak_set_engines (bn_soak_t *self, int engines);

//  "threads", "processes" or "both" (the default). Returns -1 for any
//  other text.
int bn_soak_set_tree_modes (bn_soak_t *self, const char *modes);

//  Growth allowed after warm-up, a fraction (0.05).
void bn_soak_set_max_growth (bn_soak_t *self, double fraction);

//  Keep the clusters' folders (logs) even when the soak passes.
void bn_soak_set_keep (bn_soak_t *self, bool keep);

//  Run the soak, printing progress and the report to out. Returns 0 if
//  it passed, 1 if it failed (requests unanswered, wrong results,
//  growth), 2 if SIGINT or SIGTERM cut it short (reported, the clusters
//  stopped), -1 if a cluster could not be started.
int bn_soak_run (bn_soak_t *self, FILE *out);

//  The client that vanishes, as its own process (banyan-bench soak
//  --client FILE): connect with the client connection file, send
//  load-balanced sleeps and a direct echo, print each msg_id on a line
//  of stdout, then wait to be killed. Returns an exit status.
int bn_soak_client_main (const char *file);

#endif

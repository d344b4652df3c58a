/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcluster: the cluster a benchmark case runs against: banyan's
    controller and engines (through the launcher, as `cluster start`),
    a stock ipcontroller with stock ipengines (peer mode), or stock
    engines behind banyan-controller (mixed mode); with a client
    connected once every engine has registered.  */
#ifndef BN_BENCHCLUSTER_H_INCLUDED
#define BN_BENCHCLUSTER_H_INCLUDED

#include "banyan.h"
#include "bn_benchcase.h"

#include <stdbool.h>
#include <sys/types.h>

typedef enum {
    BN_BENCHSTACK_BANYAN, //  banyan-controller, banyan-engine --count
    BN_BENCHSTACK_IPP,    //  ipcontroller, ipengine (IPython Parallel)
    BN_BENCHSTACK_MIXED   //  banyan-controller, ipengine
} bn_benchstack_t;

typedef struct _bn_benchcluster_t bn_benchcluster_t;

//  The stack named "banyan", "ipp" or "mixed"; -1 if unknown.
int bn_benchstack_parse (const char *name);

//  A cluster of engines for case c, in c's folder; not started. Returns
//  NULL if out of memory.
bn_benchcluster_t *bn_benchcluster_new (bn_benchcase_t *c,
                                        bn_benchstack_t stack, int engines);

//  Stop everything the cluster started; NULLs *self_p; NULL-safe.
void bn_benchcluster_destroy (bn_benchcluster_t **self_p);

//  Depth of banyan-controller's broadcast tree (default: its own).
void bn_benchcluster_set_depth (bn_benchcluster_t *self, int depth);

//  Run banyan-controller's tree nodes as "threads" or "processes".
void bn_benchcluster_set_tree_mode (bn_benchcluster_t *self, const char *mode);

//  Shape the tree as topology (controller --topology; NULL: the default),
//  telling the controller how many engines to expect (for auto).
void bn_benchcluster_set_topology (bn_benchcluster_t *self,
                                   const char *topology);

//  CurveZMQ on the controller's sockets (banyan-controller --curve).
void bn_benchcluster_set_curve (bn_benchcluster_t *self, bool curve);

//  Engines per banyan-engine process (default: the case's rule).
void bn_benchcluster_set_per_process (bn_benchcluster_t *self, int k);

//  Start the controller and engines and connect a client; returns when
//  every engine has registered. Returns 0, or -1 with the reason given
//  to the case (within timeout seconds). Must be called before the
//  process creates a ZeroMQ context other than a destroyed client's.
int bn_benchcluster_start (bn_benchcluster_t *self, double timeout);

//  The connected client (owned by the cluster).
bn_client_t *bn_benchcluster_client (bn_benchcluster_t *self);

//  Seconds from launching the controller until every engine registered.
double bn_benchcluster_start_seconds (bn_benchcluster_t *self);

//  Process id of the controller, or 0 if not known.
pid_t bn_benchcluster_controller_pid (bn_benchcluster_t *self);

//  The process group of the banyan stack's controller, tree node and
//  engine processes (the launcher's), or 0 for the other stacks.
pid_t bn_benchcluster_pgid (bn_benchcluster_t *self);

//  The client connection file.
const char *bn_benchcluster_client_file (bn_benchcluster_t *self);

//  The engine connection file (for engines started later).
const char *bn_benchcluster_engine_file (bn_benchcluster_t *self);

//  Function names for an echo and a consuming call on this stack's
//  engines: "echo" and "noop" on banyan's, "copy.copy" and
//  "builtins.len" on IPython's.
const char *bn_benchcluster_echo_fn (bn_benchcluster_t *self);
const char *bn_benchcluster_noop_fn (bn_benchcluster_t *self);

#endif

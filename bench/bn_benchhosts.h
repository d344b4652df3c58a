/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchhosts: the test hosts of a multi-host benchmark case: network
    namespaces on a bridge made by tests/hosts/hosts.sh, a controller on
    the bridge ("head"), one host node (banyan-scheduler --host) on each
    host with its engines (banyan-engine --count) behind it, and a client
    connected to the controller.  */
#ifndef BN_BENCHHOSTS_H_INCLUDED
#define BN_BENCHHOSTS_H_INCLUDED

#include "banyan.h"
#include "bn_benchcase.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct _bn_benchhosts_t bn_benchhosts_t;

//  Hosts for case c: hosts of them with per_host engines each; nothing is
//  made yet. Returns NULL if out of memory.
bn_benchhosts_t *bn_benchhosts_new (bn_benchcase_t *c, int hosts, int per_host);

//  Stop everything and remove the hosts (hosts.sh down); NULLs *self_p;
//  NULL-safe.
void bn_benchhosts_destroy (bn_benchhosts_t **self_p);

//  Make the hosts, start the controller and the host nodes, connect the
//  client, then start the engines and wait until every one has
//  registered, all within timeout seconds. Returns BN_BENCH_OK,
//  BN_BENCH_SKIP where hosts cannot be made here (not root, no network
//  namespaces, no hosts.sh: the reason given to the case), or
//  BN_BENCH_FAIL with the reason.
int bn_benchhosts_start (bn_benchhosts_t *self, double timeout);

//  The connected client (owned by the hosts).
bn_client_t *bn_benchhosts_client (bn_benchhosts_t *self);

//  Seconds from starting the engines until the client saw all of them.
double bn_benchhosts_registration_seconds (bn_benchhosts_t *self);

//  Bytes that went into host i (0-based) over its link so far (the
//  counter of its bridge-side veth); -1 if unknown.
int64_t bn_benchhosts_bytes_in (bn_benchhosts_t *self, int i);

//  The controller's pid, and host i's host node's.
pid_t bn_benchhosts_controller_pid (bn_benchhosts_t *self);
pid_t bn_benchhosts_node_pid (bn_benchhosts_t *self, int i);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_task: the task (load-balanced) scheduler (doc/wire.md 8): schemes,
    high-water mark, msg_id dependencies (after, follow), targets,
    timeouts, retries and blacklists, between a client-facing ROUTER and an
    engine-facing ROUTER, behaving as IPython Parallel 7.1.0's
    TaskScheduler.  */
#ifndef BN_TASK_H_INCLUDED
#define BN_TASK_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_hosts.h"
#include "bn_monitor.h"
#include "bn_msg.h"
#include "bn_session.h"

typedef struct _bn_task_t bn_task_t;

//  How an engine is chosen among the candidates (doc/wire.md 8.1).
typedef enum {
    BN_TASK_LEASTLOAD,   //  least outstanding tasks, LRU among equals
    BN_TASK_LRU,         //  least recently used
    BN_TASK_PLAINRANDOM, //  uniform
    BN_TASK_TWOBIN,      //  LRU of two uniform picks
    BN_TASK_WEIGHTED,    //  less loaded of two picks weighted 1/load
    BN_TASK_PURE         //  round robin, no dependencies, no high-water mark
} bn_task_scheme_t;

//  Tasks held (queued, or running and kept for a retry) past which the
//  scheduler stops reading its client side until they are down to half
//  (a flooding client is slowed).
#define BN_TASK_QUEUE_MAX 100000

//  Finished tasks whose outcome the scheduler remembers for later
//  dependencies (the oldest are forgotten past it: a dependency on one
//  of those is then an InvalidDependency, as an id never submitted).
#define BN_TASK_RECORDS_MAX 1000000

//  The scheme named name ("leastload", "lru", "plainrandom", "twobin",
//  "weighted", "pure"), or -1 if unknown.
int bn_task_scheme_parse (const char *name);

//  Create a task scheduler with scheme and hwm (outstanding tasks per
//  engine, 0 = unlimited; ignored by pure) between client_side and
//  engine_side (ROUTERs with ROUTER_MANDATORY, borrowed). Returns NULL if
//  out of memory.
bn_task_t *bn_task_new (zsock_t *client_side, zsock_t *engine_side,
                        bn_session_t *session, bn_task_scheme_t scheme,
                        int hwm);

//  Destroy a scheduler (not its sockets); NULL-safe.
void bn_task_destroy (bn_task_t **self_p);

//  Register the socket readers and timers in loop. Returns -1 on failure.
int bn_task_attach (bn_task_t *self, zloop_t *loop);

//  Reach hosted engines through the links of hosts (borrowed; NULL: none),
//  as the relays do (bn_relay_set_hosts, doc/hosts.md).
void bn_task_set_hosts (bn_task_t *self, bn_hosts_t *hosts);

//  Tell monitor (copied; its arg is borrowed) about requests, assignments
//  and replies; NULL stops.
void bn_task_set_monitor (bn_task_t *self, const bn_monitor_t *monitor);

//  Hold the task sent to an engine added less than msecs ago that is not
//  connected to the engine side yet until it connects; past that the task
//  is placed elsewhere with the engine blacklisted (ImpossibleDependency if
//  nothing else may take it). 0 (the default) holds nothing. Needs the
//  scheduler attached to a loop.
void bn_task_set_connect_grace (bn_task_t *self, int msecs);

//  Change the queue bound (tests); the default is BN_TASK_QUEUE_MAX.
void bn_task_set_queue_max (bn_task_t *self, size_t queue_max);

//  Change the bound on finished records (tests); the default is
//  BN_TASK_RECORDS_MAX.
void bn_task_set_records_max (bn_task_t *self, size_t records_max);

//  Seed the random schemes (tests).
void bn_task_set_seed (bn_task_t *self, unsigned int seed);

//  Read and schedule what waits on the client side; returns 0.
int bn_task_client_ready (bn_task_t *self);

//  Read and handle what waits on the engine side; returns 0.
int bn_task_engine_ready (bn_task_t *self);

//  Schedule a request made inside the controller (the hub's resubmission),
//  taking *msg_p. Replies to it are reported to the monitor, not sent to
//  any client. Returns -1 if it is not a well-formed request (destroyed).
int bn_task_submit (bn_task_t *self, bn_msg_t **msg_p);

//  A registered engine uuid (engine id eid) takes tasks. Returns -1 if out
//  of memory or uuid is already a live engine.
int bn_task_engine_add (bn_task_t *self, const char *uuid, int eid);

//  Engine uuid unregistered: it gets no new tasks; replies to those it
//  runs still count. No-op for an unknown uuid.
void bn_task_engine_close (bn_task_t *self, const char *uuid);

//  Engine uuid is gone: each task it still runs gets an EngineError reply,
//  retried elsewhere when its retries allow. No-op for an unknown uuid.
void bn_task_engine_remove (bn_task_t *self, const char *uuid);

//  The same for an engine lost for why ("host node on h3 (198.18.0.3)
//  stopped answering"), which the EngineError replies say; NULL: as
//  bn_task_engine_remove.
void bn_task_engine_lost (bn_task_t *self, const char *uuid, const char *why);

//  Tasks running on engine uuid (0 if unknown).
size_t bn_task_engine_load (bn_task_t *self, const char *uuid);

//  A new JSON array of the msg_ids running on engine uuid, oldest first;
//  NULL if out of memory.
json_t *bn_task_engine_tasks (bn_task_t *self, const char *uuid);

//  Tasks submitted and not yet given to an engine.
size_t bn_task_unassigned (bn_task_t *self);

//  A new JSON array of the msg_ids not yet given to an engine, in
//  submission order; NULL if out of memory.
json_t *bn_task_unassigned_ids (bn_task_t *self);

//  A new JSON object of the scheduler's counters; NULL if out of memory.
json_t *bn_task_stats (bn_task_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_hub: the hub (doc/wire.md 4, 5): engine registration and unregistration,
    client queries on the registration ROUTER, and notifications on the
    notifier XPUB.  */
#ifndef BN_HUB_H_INCLUDED
#define BN_HUB_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_heart.h"
#include "bn_hosts.h"
#include "bn_record_queries.h"
#include "bn_records.h"
#include "bn_relay.h"
#include "bn_session.h"
#include "bn_task.h"

typedef struct _bn_hub_t bn_hub_t;

//  Called once, about a second after a shutdown_request was answered;
//  its return value is returned to the zloop (-1 ends the loop).
typedef int (bn_hub_shutdown_fn) (void *arg);

//  Delay between answering shutdown_request and calling the shutdown
//  handler, in milliseconds (clients get their reply and notification).
#define BN_HUB_SHUTDOWN_DELAY 1000

//  Create a hub answering on query (ROUTER) and publishing on notifier
//  (XPUB with ZMQ_XPUB_VERBOSE, which bn_hub_attach reads: notifications
//  wait for the subscription of a client just answered; a PUB: they do
//  not), both borrowed, finishing registrations through heart (borrowed).
//  connection_info (taken) is the engine connection dict sent in every
//  registration_reply with hb_period_ms; a pending registration that has
//  not answered a ping after registration_timeout seconds is dropped.
//  Returns NULL if out of memory.
bn_hub_t *bn_hub_new (zsock_t *query, zsock_t *notifier, bn_session_t *session,
                      bn_heart_t *heart, json_t *connection_info,
                      int hb_period_ms, double registration_timeout);

//  Destroy a hub (not its sockets, heart or relays); NULL-safe.
void bn_hub_destroy (bn_hub_t **self_p);

//  Tell relay (borrowed) about engines as they come and go; the queue and
//  completed counts of queue_request come from the relay added with
//  counts set (the mux). Returns -1 if out of memory.
int bn_hub_add_relay (bn_hub_t *self, bn_relay_t *relay, bool counts);

//  Milliseconds the requests pending on an engine that unregistered wait
//  for its replies before they fail with EngineError (the default,
//  BN_HUB_STRANDED_TIMEOUT, is controller.stranded_timeout's).
#define BN_HUB_STRANDED_TIMEOUT 500
void bn_hub_set_stranded_timeout (bn_hub_t *self, int msecs);

//  Serve host nodes (doc/hosts.md): their bn_host_request and
//  bn_host_engines, registrations through their links, and their hearts,
//  keeping in hosts (borrowed; shared with the relays and the task
//  scheduler) which engine each link serves. Without it a message through
//  a link is taken as any other.
void bn_hub_set_hosts (bn_hub_t *self, bn_hosts_t *hosts);

//  Tell the task scheduler (borrowed) about engines as they come and go,
//  as the relays are told; queue_request counts its tasks.
void bn_hub_set_task (bn_hub_t *self, bn_task_t *task);

//  Called in the hub's thread when an engine finishes its registration
//  (registered true) and at once when it is unregistered (false; before the
//  grace the relays give its pending requests). why says why an engine
//  was lost when the hub knows more than that its heart stopped ("host
//  node on h3 (198.18.0.3) stopped answering"), else it is NULL.
//  via, when registered and not NULL, is the routing id of the connection
//  that the engine's process shares for broadcast (bn_hub_share_broadcast).
typedef void (bn_hub_engine_fn) (void *arg, const char *uuid, int eid,
                                 bool registered, const char *why,
                                 const char *via);

//  The broadcast port on which the engines of one process may share one
//  connection to engine eid's leaf, or -1 (a bn_bcast_mode_t shared_port).
typedef int (bn_hub_port_fn) (void *arg, int eid);

//  Offer the engines of a banyan-engine process one shared broadcast
//  connection (doc/wire.md 4.1): a registration_request naming the
//  connection's routing id (bn_broadcast_via) is answered with the port
//  fn gives (bn_broadcast_port), and the listeners get the routing id
//  with the engine. Without it, or when fn says -1, an engine connects
//  its own.
void bn_hub_share_broadcast (bn_hub_t *self, bn_hub_port_fn *fn, void *arg);

//  Tell fn about engines as they come and go (the broadcast tree, the
//  task scheduler). Returns -1 if out of memory.
int bn_hub_add_engine_listener (bn_hub_t *self, bn_hub_engine_fn *fn,
                                void *arg);

//  Unregister engines whose shutdown_reply passes through the iopub relay
//  (borrowed).
void bn_hub_watch_iopub (bn_hub_t *self, bn_relay_t *iopub);

//  Answer result, history, db, purge and resubmit queries and the queue,
//  tasks and unassigned counts of queue_request from records (borrowed).
void bn_hub_set_records (bn_hub_t *self, bn_records_t *records);

//  Set how resubmit_request sends its new tasks (the task scheduler's
//  bn_task_submit); without it resubmit_request gets an error reply.
void bn_hub_set_resubmit (bn_hub_t *self, bn_hub_submit_fn *fn, void *arg);

//  Gathers the counters of the controller's actors for bn_stats_request:
//  a new JSON object of one object per actor ("hub", "mux", ...), or NULL
//  if out of memory.
typedef json_t *(bn_hub_stats_fn)(void *arg);

//  Answer bn_stats_request with the counters fn gathers; without it the
//  request gets hub_error NotImplementedError, as any unknown query.
void bn_hub_set_stats (bn_hub_t *self, bn_hub_stats_fn *fn, void *arg);

//  Keep the engine table in path (log/engines<cluster_id>.json, as 7.1.0:
//  {"engines": {"<id>": uuid}, "next_id": n}), rewritten at every
//  registration and unregistration. With restore, first read it: its
//  engines become pending registrations under their old ids (registered
//  when their hearts answer, as engines that outlived a controller do),
//  an engine registering again under its uuid gets its old id, and the
//  id counter resumes at next_id. Returns -1 if restore cannot read the
//  file (a missing file is not an error).
int bn_hub_set_state_file (bn_hub_t *self, const char *path, bool restore);

//  Set the handler called after a shutdown_request.
void bn_hub_set_shutdown_handler (bn_hub_t *self, bn_hub_shutdown_fn *fn,
                                  void *arg);

//  Read queries in loop and take the heart's callbacks. Returns -1 on
//  failure.
int bn_hub_attach (bn_hub_t *self, zloop_t *loop);

//  Answer the queries that are waiting; returns 0.
int bn_hub_query_ready (bn_hub_t *self);

//  Unregister a registered engine (or drop a pending registration) and
//  publish unregistration_notification; reason goes to the log. Returns
//  the engine id, or -1 if uuid is unknown.
int bn_hub_unregister (bn_hub_t *self, const char *uuid, const char *reason);

//  A new JSON object of the hub's counters; NULL if out of memory.
json_t *bn_hub_stats (bn_hub_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_relay: the controller's relays (doc/wire.md 6): mux and control swap the
    first two idents between a client-facing and an engine-facing ROUTER and
    forward the frames unchanged; iopub forwards a SUB to a PUB.  */
#ifndef BN_RELAY_H_INCLUDED
#define BN_RELAY_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_hosts.h"
#include "bn_monitor.h"
#include "bn_msg.h"
#include "bn_session.h"

typedef struct _bn_relay_t bn_relay_t;

//  Called for each forwarded message of the watched type (forward relays).
typedef void (bn_relay_watch_fn) (void *arg, bn_msg_t *msg);

//  The verbose `completed` list of queue_request keeps this many ids per
//  engine (the count is exact).
#define BN_RELAY_COMPLETED_KEEP 1024

//  Create a swap relay named name ("mux", "control") between a client-
//  facing ROUTER and an engine-facing ROUTER (both borrowed). It tracks
//  requests per engine and answers EngineError for requests to engines it
//  was not told about with bn_relay_engine_add. Returns NULL if out of
//  memory.
bn_relay_t *bn_relay_new_swap (const char *name, zsock_t *client_side,
                               zsock_t *engine_side, bn_session_t *session);

//  Create a forward relay (iopub) from a SUB to a PUB (both borrowed).
//  Returns NULL if out of memory.
bn_relay_t *bn_relay_new_forward (const char *name, zsock_t *input,
                                  zsock_t *output, bn_session_t *session);

//  Destroy a relay (not its sockets); NULL-safe.
void bn_relay_destroy (bn_relay_t **self_p);

//  Register the relay's socket readers in loop. Returns -1 on failure.
int bn_relay_attach (bn_relay_t *self, zloop_t *loop);

//  Hold requests for an engine added less than msecs ago that is not
//  connected to the engine side yet, retrying them in order until it is
//  or the time is up (then EngineError); 0 (the default) fails them at
//  once. Retries need the relay attached to a loop.
void bn_relay_set_connect_grace (bn_relay_t *self, int msecs);

//  Retry the held requests (the loop's timer calls this); returns 0.
int bn_relay_retry (bn_relay_t *self);

//  Call fn for every forwarded message whose msg_type is msg_type
//  (forward relays only; one watch per relay).
void bn_relay_set_watch (bn_relay_t *self, const char *msg_type,
                         bn_relay_watch_fn *fn, void *arg);

//  Reach hosted engines through the links of hosts (borrowed; NULL: none),
//  doc/hosts.md: a request to one gets its link's routing frame in front,
//  and what comes up through a link is taken as from the engine named
//  after it (swap relays).
void bn_relay_set_hosts (bn_relay_t *self, bn_hosts_t *hosts);

//  Report to monitor (borrowed; NULL: stop): a swap relay calls request
//  for each request it forwards to a registered engine and reply for each
//  reply (or EngineError it makes) going back to a client, with its name
//  as the queue; a forward relay calls iopub for each message it forwards.
void bn_relay_set_monitor (bn_relay_t *self, const bn_monitor_t *monitor);

//  Read and forward what is waiting on the client side (swap) or the input
//  (forward); returns 0.
int bn_relay_client_ready (bn_relay_t *self);

//  Read and forward what is waiting on the engine side (swap); returns 0.
int bn_relay_engine_ready (bn_relay_t *self);

//  Accept requests for the engine uuid (engine id eid, used in error
//  texts); a closed engine of the same uuid is removed first. Returns -1
//  if out of memory or uuid is already open.
int bn_relay_engine_add (bn_relay_t *self, const char *uuid, int eid);

//  Stop accepting requests for engine uuid (they get EngineError at once)
//  while replies to its pending requests still pass and complete them.
//  No-op for an unknown uuid.
void bn_relay_engine_close (bn_relay_t *self, const char *uuid);

//  Forget engine uuid: every request still pending on it gets an
//  EngineError reply. No-op for an unknown uuid.
void bn_relay_engine_remove (bn_relay_t *self, const char *uuid);

//  The same for an engine lost for why ("host node on h3 (198.18.0.3)
//  stopped answering"), which the EngineError replies say; NULL: as
//  bn_relay_engine_remove.
void bn_relay_engine_lost (bn_relay_t *self, const char *uuid, const char *why);

//  Requests sent to engine uuid and not answered yet (0 if unknown).
size_t bn_relay_queue_size (bn_relay_t *self, const char *uuid);

//  Requests engine uuid has answered since it was added (0 if unknown).
size_t bn_relay_completed_size (bn_relay_t *self, const char *uuid);

//  New JSON arrays of the pending msg_ids (oldest first) and of the last
//  completed msg_ids of engine uuid (empty for an unknown engine); NULL if
//  out of memory.
json_t *bn_relay_queue_ids (bn_relay_t *self, const char *uuid);
json_t *bn_relay_completed_ids (bn_relay_t *self, const char *uuid);

//  A new JSON object of the relay's counters; NULL if out of memory.
json_t *bn_relay_stats (bn_relay_t *self);

//  A reply of reply_type (NULL: derived from the request's type) to
//  request with content (taken): parent = the request's header, idents =
//  the request's, metadata {"status": "error", "dependencies_met": true,
//  "engine": engine (omitted if NULL), and is_broadcast, is_coalescing,
//  original_msg_id copied from the request (defaults false, false, "")}.
//  Returns NULL if out of memory or the request has no usable msg_type.
bn_msg_t *bn_relay_error_reply (bn_session_t *session, bn_msg_t *request,
                                const char *reply_type, const char *engine,
                                json_t *content);

#endif

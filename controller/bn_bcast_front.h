/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_front: the client-facing broadcast port of a tree whose root
    runs as a process (bn_bcast_procs). The controller holds the port, a
    ROUTER, and passes what arrives on it to the root over a private ipc
    link, the clients' routing ids kept in front (the root reads them as
    any ident path and sends its replies back through them). So a client's
    connection outlives the root: when the root dies, the requests in
    flight through it get their error replies here, in the shape the
    client waits for (one EngineError per engine that has not answered:
    a reply per engine, "<original>_<uuid>", or, coalescing, one merged
    reply with their broadcast_targets and bn_replies), a stock client
    included, which has no other way to learn it; while the root is being
    restarted, new requests are answered so at once. The front is what
    tells the records (bn_monitor) of the requests and replies that pass,
    sharing their frames, so the root process reports nothing.

    On the message path a request costs one copy sharing its frames, and
    without its buffers, a scan of its metadata and a hash entry until its
    last reply; a reply a scan of its metadata (and, for one engine's, its
    uuid noted while other engines are owed). Nothing is parsed unless the
    root dies.  */
#ifndef BN_BCAST_FRONT_H_INCLUDED
#define BN_BCAST_FRONT_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_monitor.h"
#include "bn_session.h"

typedef struct _bn_bcast_front_t bn_bcast_front_t;

//  Create the front: a ROUTER bound at endpoint (tcp://ip:port, port 0 or
//  a range as bn_wire_tcp_bind_endpoint writes them), a CURVE server of
//  curve unless NULL, and a link to the root's port at root (an ipc
//  endpoint the root binds). hwm bounds what waits for the root (the
//  tree's flow control), client_hwm (0: hwm) the replies queued toward one
//  client, as on the controller's other client ports. Replies it makes are
//  signed with key. Every request it passes or answers, and every reply, is
//  reported to monitor (borrowed, called on the loop's thread; NULL: none).
//  Returns NULL (logged) on failure.
bn_bcast_front_t *bn_bcast_front_new (const char *endpoint, const char *root,
                                      int hwm, int client_hwm, zcert_t *curve,
                                      const char *key,
                                      const bn_monitor_t *monitor);

//  Destroy the front and its sockets; NULL-safe.
void bn_bcast_front_destroy (bn_bcast_front_t **self_p);

//  The port the client side bound.
int bn_bcast_front_port (bn_bcast_front_t *self);

//  Relay from loop, on the thread that runs it. Returns -1 on failure.
int bn_bcast_front_attach (bn_bcast_front_t *self, zloop_t *loop);

//  The root is running (true) or gone and being restarted (false): while
//  it is gone, each request is answered at once with EngineError.
void bn_bcast_front_set_root (bn_bcast_front_t *self, bool running);

//  The root died: what it sent before is passed on, then every request in
//  flight gets an EngineError reply (why) for each engine that has not
//  answered, and the root counts as gone until bn_bcast_front_set_root.
void bn_bcast_front_root_lost (bn_bcast_front_t *self, const char *why);

//  A new JSON object of the front's counters; NULL if out of memory.
json_t *bn_bcast_front_stats (bn_bcast_front_t *self);

#endif

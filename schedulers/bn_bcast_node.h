/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_node: one node of the broadcast spanning tree (doc/wire.md 7,
    doc/broadcast.md). Root, inner node and leaf are roles of the same
    actor; each node runs its own zloop in its own thread (threads mode,
    links over inproc://) or process (banyan-scheduler, links over ipc://
    or tcp://).

    Sockets of a node:
      up    ROUTER, routing id = the node's routing id. The root binds it
            (it is the client-facing broadcast port); every other node
            connects it to its parent's down socket.
      down  ROUTER, routing id = the node's routing id, bound. An inner
            node's children connect their up sockets to it; a leaf's down
            socket is the engine-facing broadcast port
            (engine e connects to leaf e % leaves).
    A node at depth 0 is root and leaf at once (up = client port,
    down = the one engine port).

    Requests go down split by child (each child gets only its targets, a
    child without targets gets nothing); a leaf sends each engine its own
    copy with header.msg_id = "<original>_<engine uuid>", sharing every
    other frame. Replies go up forwarded or merged per level. Each node
    tracks its requests in flight (request -> engines still owed); an
    engine removed with ENGINE_REMOVE or a child lost with CHILD_LOST fails
    its slots at once with EngineError, and a request past its deadline
    fails the slots still missing. With a high-water mark, a node holding
    that many requests stops reading new ones until one completes, so a
    client that floods the tree is slowed, not given unbounded memory.  */
#ifndef BN_BCAST_NODE_H_INCLUDED
#define BN_BCAST_NODE_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_topology.h"

//  Longest routing id a node accepts from a peer.
#define BN_BCAST_NODE_ID_MAX 128

//  What a node starts from. Everything is read (and copied) before the
//  actor signals, i.e. before zactor_new returns, except the topology and
//  the monitor (borrowed for the node's life).
typedef struct {
    //  The tree and this node's place in it: its routing id (doc/wire.md
    //  7.1), level, children, and which child serves each engine all come
    //  from the topology, which the nodes of one process share (it is only
    //  read).
    bn_topology_t *topology;
    int node;               //  index in topology: 0 = root, then breadth-first
    const char *key;        //  session key (connection file "key")
    const char *routing_id; //  NULL: the topology's; a host node's leaf
                            //  (doc/hosts.md) has a name of its own
    zcert_t *curve;         //  a socket bound on tcp:// is a CURVE server with
                            //  these keys; NULL: no CURVE
    const char *curve_serverkey; //  with curve: the up socket connected on
                                 //  tcp:// is a CURVE client of this server
                                 //  key (a host node's leaf), and the down
                                 //  socket is plain, as its engines are on
                                 //  its host; NULL: not

    //  Upward link. The root binds up_endpoint; other nodes connect it
    //  (the parent's down endpoint).
    const char *up_endpoint; //  bind (root) or connect (others)
    bool up_trusted;         //  the peer above is a node of this tree
                             //  in the same process: no signing, no
                             //  verification on this link

    //  Downward link: an inner node binds down_endpoint for its
    //  children, a leaf for its engines. A tcp:// port still held by a
    //  process that is closing is tried again for BN_WIRE_REBIND_WAIT.
    const char *down_endpoint; //  bind
    bool down_trusted;         //  children are nodes in the same process

    const char *reduce_plugins; //  reduction plugins to load, paths
                                //  separated by ':' (NULL: none)
    int hwm;         //  SNDHWM/RCVHWM of both sockets, and the most requests a
                     //  node holds in flight before it stops reading new ones
                     //  (0 = no limit)
    int deadline_ms; //  default request deadline at the root (0 = none)
    int connect_grace_ms; //  leaf: how long a registered engine's requests
                          //  wait for its connection (bn_holdq; 0 = not)
    const bn_monitor_t *monitor; //  root only: the hub's monitor, or NULL
    int status;                  //  Out: 0 started, -1 start-up failed
    int down_error;              //  Out: the errno of a down_endpoint that
                                 //  could not be bound (EADDRINUSE: no port
                                 //  of its range is free), else 0
} bn_bcast_node_args_t;

//  The node actor (args: bn_bcast_node_args_t *). Commands on the pipe:
//    ENGINE_ADD uuid eid     the hub registered an engine this leaf serves
//    ENGINE_ADD uuid eid host
//                            ...through the leaf of a host node (doc/
//                            hosts.md), routing id host, a child of this
//                            leaf that gets the engine's targets
//    ENGINE_REMOVE uuid      the hub unregistered it: its slots fail now
//    ENGINE_REMOVE uuid why  ...as lost for why ("host node on h3
//                            (198.18.0.3) stopped answering"), which their
//                            EngineErrors say
//    ENGINE_ROUTE eid leaf   an inner node sends engine eid's targets toward
//                            leaf (its host node's), not eid % leaves
//    ENGINE_UNROUTE eid      no longer
//    CHILD_LOST index        child index is gone: its slots fail now
//    BIND endpoint           bind the down socket to endpoint too (the
//                            leaves of a folded tree, bn_topology.h);
//                            reply [endpoint as bound, or "" (logged)]
//    ENDPOINTS               reply [up endpoint, down endpoint] as bound
//                            or connected
//    STATS                   reply [JSON object of counters; "requests"
//                            is the number of requests in flight]
//    $TERM                   stop
//  The pipe carries no reply to ENGINE_ADD, ENGINE_REMOVE or CHILD_LOST.
void bn_bcast_node_actor (zsock_t *pipe, void *args);

#endif

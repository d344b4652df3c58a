/*  bn_bcast_tree: the broadcast tree in threads mode: one bn_bcast_node
    actor per node of a topology, linked over inproc://, inside the
    controller process.  */
#ifndef BN_BCAST_TREE_H_INCLUDED
#define BN_BCAST_TREE_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_monitor.h"
#include "bn_topology.h"

typedef struct _bn_bcast_tree_t bn_bcast_tree_t;

//  Sockets the tree's threads open besides the root and leaf ports (a
//  pipe pair and up to two ROUTERs per node), to size the process's
//  socket limit.
#define BN_BCAST_TREE_SOCKETS(nodes) ((size_t)(nodes)*4)

//  Start one node thread per node of topology (borrowed; read during the
//  call only). The root takes *root_sock (the bound client-facing
//  broadcast ROUTER) and leaf i takes leaf_socks[i] (the bound engine
//  ports, one per leaf); the taken sockets are set to NULL in the caller's
//  variables, also on failure. key signs messages; hwm bounds every
//  queue (0 = none); deadline_ms is the default request deadline
//  (0 = none); connect_grace_ms is how long a leaf holds the requests of
//  an engine registered but not connected yet; reduce_plugins lists the
//  reduction plugins every node loads
//  (':'-separated paths, NULL or "" for none); monitor (borrowed, may be
//  NULL) hears from the root's thread of each request and of each reply
//  it sends to a client (bn_monitor_link_sender gives one that may be
//  called from there). Returns NULL if a node cannot start.
bn_bcast_tree_t *bn_bcast_tree_new (bn_topology_t *topology, const char *key,
                                    zsock_t **root_sock, zsock_t **leaf_socks,
                                    int hwm, int deadline_ms,
                                    int connect_grace_ms,
                                    const char *reduce_plugins,
                                    const bn_monitor_t *monitor);

//  Stop every node and destroy the tree; NULL-safe.
void bn_bcast_tree_destroy (bn_bcast_tree_t **self_p);

//  Tell the leaf serving engine eid that engine uuid was registered or
//  unregistered (the signature of bn_hub_engine_fn, arg = the tree).
void bn_bcast_tree_engine (void *self, const char *uuid, int eid,
                           bool registered);

//  A new JSON object: {"requests": requests in flight over all nodes,
//  "nodes": [each node's counters, in node order]}; NULL if out of
//  memory.
json_t *bn_bcast_tree_stats (bn_bcast_tree_t *self);

#endif

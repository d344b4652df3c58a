/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_mode: the broadcast tree as its controller sees it, whatever
    runs the nodes: threads of the controller (bn_bcast_threads, in
    bn_bcast_tree) or banyan-scheduler processes (bn_bcast_processes, in
    the controller's bn_bcast_procs). Both start from the same options,
    bind the root's client-facing port and each leaf's engine-facing port
    themselves, report to the same records link, and are told of engines,
    asked for counters and stopped through one table of operations.  */
#ifndef BN_BCAST_MODE_H_INCLUDED
#define BN_BCAST_MODE_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_hosts.h"
#include "bn_monitor_link.h"
#include "bn_topology.h"

//  What a tree starts from (read during start only, except records).
typedef struct {
    const char *ip;             //  address of the root and leaf ports
    zcert_t *curve;             //  the root and leaves are CURVE servers
                                //  with these keys; NULL: no CURVE
    int lowest_port;            //  root and leaf ports come from lowest..
    int highest_port;           //  highest when lowest > 0
    int root_port;              //  client-facing port, 0 = any
    const int *leaf_ports;      //  NULL, or one per leaf (0 = any)
    int hwm;                    //  high-water mark of the nodes' sockets
    int client_hwm;             //  processes: replies queued toward one
                                //  client on the client port (0: hwm)
    int deadline_ms;            //  default request deadline (0 = none)
    int connect_grace_ms;       //  leaves hold a new engine's requests
    const char *reduce_plugins; //  reduction plugins, ':'-separated paths
    bn_monitor_link_t *records; //  where the root reports the requests and
                                //  replies it passes (borrowed for the
                                //  tree's life), or NULL
    bn_hosts_t *hosts;          //  host nodes and their engines (borrowed
                                //  for the tree's life; read when told of
                                //  an engine), or NULL
    //  threads only
    int fold; //  a tree of 2 ... fold leaves runs folded into its root
              //  (bn_topology_fold); 0: never
    //  processes only
    const char *program;    //  banyan-scheduler to run (path or PATH name)
    const char *log_file;   //  the nodes' log file; NULL or "" = our stderr
    const char *run_dir;    //  where the links' folder goes (NULL: $TMPDIR)
    int restart_backoff_ms; //  longest wait to restart a node (0: the
                            //  default)
    int ping_ms;            //  a node is asked whether it answers this
    int ping_misses;        //  often; this many periods silent, it is
                            //  killed and restarted (0: never)
} bn_bcast_options_t;

typedef struct {
    const char *name; //  controller.tree_mode: "threads", "processes"
    //  Start the nodes of topology (borrowed, read during the call) and
    //  wait until each has bound its ports. key signs messages. Returns
    //  NULL (logged) if a node cannot start; none is left running then.
    void *(*start) (bn_topology_t *topology, const char *key,
                    const bn_bcast_options_t *options);
    //  Stop every node and destroy the tree; NULL-safe.
    void (*stop) (void **self_p);
    //  The port the root (leaf -1) or leaf bound.
    int (*port) (void *self, int leaf);
    //  Watch the nodes from loop, if the mode needs to. Returns -1 on
    //  failure.
    int (*attach) (void *self, zloop_t *loop);
    //  Tell the leaf serving engine eid that engine uuid was registered or
    //  unregistered (a bn_hub_engine_fn; why, when not NULL, is why it was
    //  lost, for its slots' EngineErrors). An engine behind a host node
    //  (options' hosts) is served by the host node's leaf below the leaf
    //  it names, and the inner nodes above that leaf route it there. via,
    //  when not NULL, is the routing id of the connection its process
    //  shares for broadcast (shared_port).
    void (*engine) (void *self, const char *uuid, int eid, bool registered,
                    const char *why, const char *via);
    //  The broadcast port (an index into the connection file's list) on
    //  which the engines of one banyan-engine process may share one
    //  connection to engine eid's leaf (doc/wire.md 4.1, "A shared
    //  broadcast connection"); -1 if they may not. NULL: never.
    int (*shared_port) (void *self, int eid);
    //  A new JSON object: {"requests": requests in flight over all nodes,
    //  "nodes": [each node's counters, in node order], ...}; NULL if out
    //  of memory.
    json_t *(*stats) (void *self);
} bn_bcast_mode_t;

#endif

/*  bn_bcast_procs: the broadcast tree in processes mode: one
    banyan-scheduler process per node of a topology, started and watched by
    a bn_treeproc supervisor. The counterpart of bn_bcast_tree (threads
    mode) for the controller.

    Links: the root binds the client-facing broadcast port and each leaf
    its engine-facing port on tcp://<ip> (the ports the connection files
    give); every inner node binds its down socket on
    ipc://<private folder>/<node>.ipc and its children connect there. ipc
    rather than loopback tcp: no TCP stack per hop, no port to find or to
    win back after a restart (the path is fixed by the node's index), and
    the folder is mode 0700, so only the controller's user reaches it.

    The processes report the ports they bound before bn_bcast_procs_new
    returns, so the controller writes its connection files after. A node
    that dies is restarted on the same ports and paths; the engines it
    served reconnect by themselves, and it is told again which engines are
    registered.  */
#ifndef BN_BCAST_PROCS_H_INCLUDED
#define BN_BCAST_PROCS_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "bn_topology.h"

typedef struct _bn_bcast_procs_t bn_bcast_procs_t;

typedef struct {
    const char *program;        //  banyan-scheduler to run (path or PATH name)
    const char *ip;             //  Address of the root and leaf ports
    int root_port;              //  Client-facing port, 0 = any
    const int *leaf_ports;      //  NULL, or one per leaf (0 = any)
    int hwm;                    //  High-water mark of the nodes' sockets
    int deadline_ms;            //  Default request deadline (0 = none)
    int connect_grace_ms;       //  Leaves hold a new engine's requests
    int restart_backoff_ms;     //  Longest wait to restart a node (0: the
                                //  default)
    const char *reduce_plugins; //  Reduction plugins, ':'-separated paths
    const char *log_file;       //  Nodes' log file; NULL or "" = our stderr
    const char *run_dir;        //  Where the ipc links' folder goes (NULL:
                                //  $TMPDIR)
} bn_bcast_procs_options_t;

//  Start one process per node of topology (borrowed; its spec and depth
//  are passed on) and wait until each has bound its ports. key signs
//  messages. Returns NULL (logged) if a node cannot start; none is left
//  running then.
bn_bcast_procs_t *bn_bcast_procs_new (bn_topology_t *topology, const char *key,
                                      const bn_bcast_procs_options_t *options);

//  Stop every node process and destroy the tree; NULL-safe.
void bn_bcast_procs_destroy (bn_bcast_procs_t **self_p);

//  Where the root sends its reports for the hub's records (a new string):
//  bind a bn_monitor_link there (bn_monitor_link_bind); reports wait in
//  the root until it is bound.
char *bn_bcast_procs_monitor_endpoint (bn_bcast_procs_t *self);

//  The client-facing broadcast port the root bound.
int bn_bcast_procs_root_port (bn_bcast_procs_t *self);

//  The engine-facing port leaf bound.
int bn_bcast_procs_leaf_port (bn_bcast_procs_t *self, size_t leaf);

//  Supervise the processes from loop. Returns -1 on failure.
int bn_bcast_procs_attach (bn_bcast_procs_t *self, zloop_t *loop);

//  Tell the leaf serving engine eid that engine uuid was registered or
//  unregistered (the signature of bn_hub_engine_fn, arg = the tree).
void bn_bcast_procs_engine (void *self, const char *uuid, int eid,
                            bool registered);

//  A new JSON object: {"mode": "processes", "requests": requests in
//  flight over all nodes, "nodes": [per node pid, state, restarts,
//  last_loss and the node's own counters (as bn_bcast_tree_stats gives
//  them) when it answers]}; NULL if out of memory. Asks every node, so
//  it waits up to a second for one that does not answer.
json_t *bn_bcast_procs_stats (bn_bcast_procs_t *self);

#endif

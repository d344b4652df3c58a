/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_tree: the broadcast tree's nodes as threads of one process.

    Nodes start parents first, so that a child connects to an inproc
    endpoint that is already bound. A tree of a few leaves runs folded
    (options->fold): the root alone, serving every leaf's port. Links
    between nodes are trusted (one process, one key): a node does not
    verify what another node sends it. The nodes share one topology, which
    they only read.  */
#include "bn_bcast_tree.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "bn_bcast_node.h"
#include "bn_log.h"
#include "bn_wire.h"

typedef struct {
    bn_topology_t *topology; //  a copy, rebuilt from spec and depth
    zactor_t **nodes;        //  one per topology node
    int size;
    int root_port;     //  the client port the root bound
    int *leaf_ports;   //  the engine port each leaf bound
    bn_hosts_t *hosts; //  host nodes and their engines (borrowed), or NULL
    bool shares;       //  takes shared broadcast connections
} s_tree_t;

static void
s_stop (void **self_p)
{
    assert (self_p);
    s_tree_t *self = (s_tree_t *)*self_p;
    if (!self)
        return;
    //  leaves first: a parent outlives its children's last sends
    for (int i = self->size - 1; i >= 0; i--)
        zactor_destroy (&self->nodes[i]);
    free (self->nodes);
    free (self->leaf_ports);
    bn_topology_destroy (&self->topology);
    free (self);
    *self_p = NULL;
}

//  The port node bound for its up (root) or down (leaf) socket; -1 if it
//  does not say.
static int
s_bound_port (zactor_t *node, bool up)
{
    zstr_send (node, "ENDPOINTS");
    char *up_endpoint = NULL, *down_endpoint = NULL;
    zstr_recvx (node, &up_endpoint, &down_endpoint, NULL);
    int port = bn_wire_endpoint_port (up ? up_endpoint : down_endpoint);
    zstr_free (&up_endpoint);
    zstr_free (&down_endpoint);
    return port;
}

//  Bind node's down socket to endpoint too; the port bound, or -1.
static int
s_bind_more (zactor_t *node, const char *endpoint)
{
    zstr_sendx (node, "BIND", endpoint, NULL);
    char *bound = zstr_recv (node);
    int port = bound && *bound ? bn_wire_endpoint_port (bound) : -1;
    zstr_free (&bound);
    return port;
}

static void *
s_start (bn_topology_t *topology, const char *key,
         const bn_bcast_options_t *options)
{
    assert (topology);
    assert (options && options->ip);
    s_tree_t *self = calloc (1, sizeof *self);
    char err[256] = "";
    if (self)
        self->topology =
            bn_topology_new (bn_topology_spec (topology),
                             bn_topology_depth (topology), 0, err, sizeof err);
    int leaves = bn_topology_leaves (topology);
    //  out of memory to fold: the tree runs as its shape says
    if (self && self->topology && leaves >= 2 && leaves <= options->fold &&
        bn_topology_fold (self->topology) != 0)
        bn_log_warn ("broadcast: out of memory to fold the tree");
    if (self && self->topology) {
        self->size = bn_topology_size (self->topology);
        self->nodes = calloc ((size_t)self->size, sizeof (zactor_t *));
        self->leaf_ports = calloc ((size_t)leaves, sizeof (int));
    }
    bool ok = self && self->nodes && self->leaf_ports;
    if (ok) {
        self->hosts = options->hosts;
        //  a high-water mark counts a connection's messages: shared by an
        //  engine process, it would count all its engines' together
        self->shares = options->hwm == 0;
    }
    bn_topology_t *topo = ok ? self->topology : NULL;
    char up[128], down[128];
    for (int n = 0; ok && n < self->size; n++) {
        int leaf = bn_topology_leaf_index (topo, n);
        bn_bcast_node_args_t args = {
            .topology = topo,
            .node = n,
            .key = key,
            .curve = options->curve,
            .hwm = options->hwm,
            .deadline_ms = options->deadline_ms,
            .connect_grace_ms = options->connect_grace_ms,
            .reduce_plugins = options->reduce_plugins,
            .up_endpoint = up,
            .down_endpoint = down,
            .up_trusted = n != 0,
            .down_trusted = leaf < 0,
            .monitor = n == 0 && options->records
                           ? bn_monitor_link_sender (options->records)
                           : NULL};
        if (n == 0)
            bn_wire_tcp_bind_endpoint (up, sizeof up, options->ip,
                                       options->root_port, options->lowest_port,
                                       options->highest_port);
        else
            snprintf (up, sizeof up, "inproc://bn-bcast-%p-%d", (void *)self,
                      bn_topology_parent (topo, n));
        if (leaf >= 0)
            bn_wire_tcp_bind_endpoint (
                down, sizeof down, options->ip,
                options->leaf_ports ? options->leaf_ports[leaf] : 0,
                options->lowest_port, options->highest_port);
        else
            snprintf (down, sizeof down, "inproc://bn-bcast-%p-%d",
                      (void *)self, n);
        self->nodes[n] = zactor_new (bn_bcast_node_actor, &args);
        if (!self->nodes[n] || args.status != 0) {
            bn_log_error ("broadcast: tree node %s did not start",
                          bn_topology_routing_id (topo, n));
            ok = false;
            break;
        }
        if (n == 0)
            ok = (self->root_port = s_bound_port (self->nodes[n], true)) > 0;
        if (ok && leaf >= 0)
            ok = (self->leaf_ports[leaf] =
                      s_bound_port (self->nodes[n], false)) > 0;
        //  a folded tree's root: the other leaves' ports too
        for (int other = 1;
             ok && leaf == 0 && bn_topology_folded (topo) && other < leaves;
             other++) {
            bn_wire_tcp_bind_endpoint (
                down, sizeof down, options->ip,
                options->leaf_ports ? options->leaf_ports[other] : 0,
                options->lowest_port, options->highest_port);
            ok = (self->leaf_ports[other] =
                      s_bind_more (self->nodes[n], down)) > 0;
        }
    }
    if (!ok) {
        if (self && !self->topology)
            bn_log_error ("broadcast: %s", err);
        s_stop ((void **)&self);
    } else
        bn_log_info ("broadcast tree: %s as threads, root port %d",
                     bn_topology_describe (self->topology), self->root_port);
    return self;
}

static int
s_port (void *arg, int leaf)
{
    s_tree_t *self = (s_tree_t *)arg;
    assert (self);
    assert (leaf < bn_topology_leaves (self->topology));
    return leaf < 0 ? self->root_port : self->leaf_ports[leaf];
}

static int
s_attach (void *self, zloop_t *loop)
{
    return 0; //  the threads run their own loops
}

static void
s_engine (void *arg, const char *uuid, int eid, bool registered,
          const char *why, const char *via)
{
    s_tree_t *self = (s_tree_t *)arg;
    assert (self);
    //  an engine behind a host node: the leaf its host node hangs below
    const char *host = NULL;
    int leaf = self->hosts
                   ? bn_hosts_leaf (self->hosts,
                                    bn_hosts_via (self->hosts, uuid), &host)
                   : -1;
    int node = leaf >= 0 ? bn_topology_leaf_node (self->topology, leaf)
                         : bn_topology_engine_node (self->topology, eid);
    if (node < 0 || !self->nodes[node])
        return;
    char id[16], at[16];
    snprintf (id, sizeof id, "%d", eid);
    snprintf (at, sizeof at, "%d", leaf);
    //  the nodes above its leaf first: each drains its commands before it
    //  takes a request, so none splits it by id once the hub announces it
    for (int up = leaf >= 0 ? bn_topology_parent (self->topology, node) : -1;
         up >= 0; up = bn_topology_parent (self->topology, up))
        if (registered)
            zstr_sendx (self->nodes[up], "ENGINE_ROUTE", id, at, NULL);
        else
            zstr_sendx (self->nodes[up], "ENGINE_UNROUTE", id, NULL);
    //  the shared connection first: the leaf may send to the engine as
    //  soon as it is added
    if (registered && via && leaf < 0)
        zstr_sendx (self->nodes[node], "ENGINE_VIA", uuid, via, NULL);
    if (registered)
        zstr_sendx (self->nodes[node], "ENGINE_ADD", uuid, id, host, NULL);
    else
        zstr_sendx (self->nodes[node], "ENGINE_REMOVE", uuid, why, NULL);
}

//  A folded root binds every leaf's port on one socket, where one routing
//  id may be connected once: a process shares the first port. Otherwise
//  each leaf has a socket of its own, and the process connects to eid's.
//  None with a high-water mark (controller.hwm).
static int
s_shared_port (void *arg, int eid)
{
    s_tree_t *self = (s_tree_t *)arg;
    assert (self);
    if (eid < 0 || !self->shares)
        return -1;
    return bn_topology_folded (self->topology)
               ? 0
               : bn_topology_engine_leaf (self->topology, eid);
}

static json_t *
s_stats (void *arg)
{
    s_tree_t *self = (s_tree_t *)arg;
    assert (self);
    json_t *nodes = json_array ();
    json_int_t requests = 0;
    for (int n = 0; nodes && n < self->size; n++) {
        zstr_send (self->nodes[n], "STATS");
        char *text = zstr_recv (self->nodes[n]);
        json_t *stats = text ? json_loads (text, 0, NULL) : NULL;
        zstr_free (&text);
        if (!stats)
            stats = json_object ();
        requests += json_integer_value (json_object_get (stats, "requests"));
        json_array_append_new (nodes, stats);
    }
    return nodes
               ? json_pack ("{s:I, s:o}", "requests", requests, "nodes", nodes)
               : NULL;
}

const bn_bcast_mode_t bn_bcast_threads = {.name = "threads",
                                          .start = s_start,
                                          .stop = s_stop,
                                          .port = s_port,
                                          .attach = s_attach,
                                          .engine = s_engine,
                                          .shared_port = s_shared_port,
                                          .stats = s_stats};

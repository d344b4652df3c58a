/*  bn_bcast_tree: the broadcast tree's nodes as threads of one process.

    Nodes start parents first, so that a child connects to an inproc
    endpoint that is already bound. Links between nodes are trusted (one
    process, one key): a node does not verify what another node sends it.  */
#include "bn_bcast_tree.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "bn_bcast_node.h"
#include "bn_log.h"

struct _bn_bcast_tree_t {
    bn_topology_t *topology; //  a copy, rebuilt from spec and depth
    zactor_t **nodes;        //  one per topology node
    int size;
};

void
bn_bcast_tree_destroy (bn_bcast_tree_t **self_p)
{
    assert (self_p);
    bn_bcast_tree_t *self = *self_p;
    if (!self)
        return;
    //  leaves first: a parent outlives its children's last sends
    for (int i = self->size - 1; i >= 0; i--)
        zactor_destroy (&self->nodes[i]);
    free (self->nodes);
    bn_topology_destroy (&self->topology);
    free (self);
    *self_p = NULL;
}

bn_bcast_tree_t *
bn_bcast_tree_new (bn_topology_t *topology, const char *key,
                   zsock_t **root_sock, zsock_t **leaf_socks, int hwm,
                   int deadline_ms, int connect_grace_ms,
                   const char *reduce_plugins, const bn_monitor_t *monitor)
{
    assert (topology);
    assert (root_sock);
    assert (leaf_socks);
    int leaves = bn_topology_leaves (topology);
    bn_bcast_tree_t *self = calloc (1, sizeof *self);
    char err[256] = "";
    if (self)
        self->topology =
            bn_topology_new (bn_topology_spec (topology),
                             bn_topology_depth (topology), 0, err, sizeof err);
    if (self && self->topology) {
        self->size = bn_topology_size (self->topology);
        self->nodes = calloc ((size_t)self->size, sizeof (zactor_t *));
    }
    bool ok = self && self->nodes;
    bn_topology_t *topo = ok ? self->topology : NULL;
    char up[128], down[128];
    for (int n = 0; ok && n < self->size; n++) {
        bn_bcast_node_args_t args = {0};
        args.topology = topo;
        args.node = n;
        args.key = key;
        args.hwm = hwm;
        args.deadline_ms = deadline_ms;
        args.connect_grace_ms = connect_grace_ms;
        args.reduce_plugins = reduce_plugins;
        if (n == 0) {
            args.monitor = monitor;
            args.up_sock = *root_sock;
            *root_sock = NULL;
        } else {
            snprintf (up, sizeof up, "inproc://bn-bcast-%p-%d", (void *)self,
                      bn_topology_parent (topo, n));
            args.up_endpoint = up;
            args.up_trusted = true;
        }
        if (bn_topology_is_leaf (topo, n)) {
            int leaf = bn_topology_leaf_index (topo, n);
            args.down_sock = leaf_socks[leaf];
            leaf_socks[leaf] = NULL;
        } else {
            snprintf (down, sizeof down, "inproc://bn-bcast-%p-%d",
                      (void *)self, n);
            args.down_endpoint = down;
            args.down_trusted = true;
        }
        self->nodes[n] = zactor_new (bn_bcast_node_actor, &args);
        if (!self->nodes[n] || args.status != 0) {
            bn_log_error ("broadcast: tree node %s did not start",
                          bn_topology_routing_id (topo, n));
            ok = false;
        }
    }
    if (!ok) {
        if (self && !self->topology)
            bn_log_error ("broadcast: %s", err);
        zsock_destroy (root_sock);
        for (int l = 0; l < leaves; l++)
            zsock_destroy (&leaf_socks[l]);
        bn_bcast_tree_destroy (&self);
    }
    return self;
}

void
bn_bcast_tree_engine (void *arg, const char *uuid, int eid, bool registered)
{
    bn_bcast_tree_t *self = (bn_bcast_tree_t *)arg;
    assert (self);
    int node = bn_topology_engine_node (self->topology, eid);
    if (node < 0 || !self->nodes[node])
        return;
    if (registered) {
        char id[16];
        snprintf (id, sizeof id, "%d", eid);
        zstr_sendx (self->nodes[node], "ENGINE_ADD", uuid, id, NULL);
    } else
        zstr_sendx (self->nodes[node], "ENGINE_REMOVE", uuid, NULL);
}

json_t *
bn_bcast_tree_stats (bn_bcast_tree_t *self)
{
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

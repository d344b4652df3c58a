/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_procs: the topology turned into banyan-scheduler command
    lines for bn_treeproc, the engine table replayed to a leaf that was
    restarted, and the client port held for the root (bn_bcast_front).  */
#include "bn_bcast_procs.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bn_bcast_front.h"
#include "bn_log.h"
#include "bn_treeproc.h"
#include "bn_wire.h"

//  ms the hub waits for a leaf to take an engine it registers
#define S_ADD_WAIT 1000
//  ms a node process has to answer STATS
#define S_STATS_WAIT 1000

typedef struct {
    bn_topology_t *topology; //  Rebuilt from the given one's spec, owned
    bn_treeproc_t *procs;
    zhashx_t *engines; //  Registered engines: uuid -> s_engine_t
    size_t nleaves;
    bn_hosts_t *hosts; //  host nodes and their engines (borrowed), or NULL
    bn_bcast_front_t *front; //  the client port, held for the root
} s_procs_t;

//  A registered engine, as its nodes were told of it.
typedef struct {
    int eid;
    int leaf;   //  the leaf of its host node (doc/hosts.md), or -1
    char *host; //  its host node's leaf's routing id, or NULL
} s_engine_t;

static void
s_engine_free (void **item)
{
    s_engine_t *engine = (s_engine_t *)*item;
    if (!engine)
        return;
    free (engine->host);
    free (engine);
    *item = NULL;
}

//  The down endpoint of inner node.
static char *
s_ipc (s_procs_t *self, int node)
{
    return zsys_sprintf ("ipc://%s/%d.ipc", bn_treeproc_dir (self->procs),
                         node);
}

//  Tell a node that was restarted what it knew: a leaf the engines it
//  serves, an inner node the engines of host nodes below it.
static void
s_replay (s_procs_t *self, size_t node)
{
    bool leaf = bn_topology_is_leaf (self->topology, (int)node);
    for (s_engine_t *engine = zhashx_first (self->engines); engine;
         engine = zhashx_next (self->engines)) {
        char eid[16], at[16];
        snprintf (eid, sizeof eid, "%d", engine->eid);
        snprintf (at, sizeof at, "%d", engine->leaf);
        int serving =
            engine->leaf >= 0
                ? bn_topology_leaf_node (self->topology, engine->leaf)
                : bn_topology_engine_node (self->topology, engine->eid);
        if (leaf && serving == (int)node)
            bn_treeproc_sendx (self->procs, node, "ENGINE_ADD",
                               (const char *)zhashx_cursor (self->engines), eid,
                               engine->host, NULL);
        else if (!leaf && engine->leaf >= 0 &&
                 bn_topology_serves_leaf (self->topology, (int)node,
                                          engine->leaf))
            bn_treeproc_sendx (self->procs, node, "ENGINE_ROUTE", eid, at,
                               NULL);
    }
}

static void
s_on_event (void *arg, size_t node, const char *event, zmsg_t *msg)
{
    s_procs_t *self = (s_procs_t *)arg;
    if (streq (event, "READY"))
        s_replay (self, node);
    if (node != 0 || !self->front)
        return;
    if (streq (event, "READY"))
        bn_bcast_front_set_root (self->front, true);
    else if (streq (event, "LOST")) {
        char *why = msg ? zmsg_popstr (msg) : NULL;
        char text[320];
        snprintf (text, sizeof text,
                  "the broadcast tree's root (a process) %s while the request "
                  "was in flight",
                  why ? why : "ended");
        zstr_free (&why);
        bn_bcast_front_root_lost (self->front, text);
    }
}

//  Where the front reaches the root (ipc, in the links' folder).
static char *
s_root_endpoint (s_procs_t *self)
{
    return zsys_sprintf ("ipc://%s/root.ipc", bn_treeproc_dir (self->procs));
}

//  Set up node's command line and binds. Returns -1 if out of memory.
static int
s_set_node (s_procs_t *self, int node, const bn_bcast_options_t *options)
{
    bn_topology_t *topology = self->topology;
    char depth[16], hwm[16], deadline[16], grace[16];
    snprintf (depth, sizeof depth, "%d", bn_topology_depth (topology));
    snprintf (hwm, sizeof hwm, "%d", options->hwm);
    snprintf (deadline, sizeof deadline, "%d", options->deadline_ms);
    snprintf (grace, sizeof grace, "%d", options->connect_grace_ms);
    int parent = bn_topology_parent (topology, node);
    char *up = parent >= 0 ? s_ipc (self, parent) : NULL;
    char *connect = up ? zsys_sprintf ("up=%s", up) : NULL;
    const char *log_file =
        options->log_file && *options->log_file ? options->log_file : NULL;
    const char *args[24] = {
        "--topology",      bn_topology_spec (topology),
        "--depth",         depth,
        "--hwm",           hwm,
        "--deadline",      deadline,
        "--connect-grace", grace,
        "--log-level",     bn_log_level_name (bn_log_level ())};
    size_t count = 12;
    //  the ipc links live in a folder only our user reaches, who can read
    //  the key anyway: verifying what crosses them buys nothing
    args[count++] = "--trusted-links";
    if (connect) {
        args[count++] = "--connect";
        args[count++] = connect;
    }
    if (log_file) {
        args[count++] = "--log-file";
        args[count++] = log_file;
    }
    if (options->reduce_plugins && *options->reduce_plugins) {
        args[count++] = "--reduce-plugins";
        args[count++] = options->reduce_plugins;
    }
    args[count] = NULL;
    int rc = bn_treeproc_set_node (self->procs, (size_t)node, parent, args);
    zstr_free (&up);
    zstr_free (&connect);
    if (rc)
        return -1;
    char endpoint[300];
    if (node == 0) {
        //  the client port is the front's: the root is reached through it
        char *root = s_root_endpoint (self);
        rc = root ? bn_treeproc_add_bind (self->procs, 0, "up", root) : -1;
        zstr_free (&root);
    }
    int leaf = bn_topology_leaf_index (topology, node);
    if (rc == 0 && leaf >= 0) {
        int port = options->leaf_ports ? options->leaf_ports[leaf] : 0;
        rc = bn_wire_tcp_bind_endpoint (endpoint, sizeof endpoint, options->ip,
                                        port, options->lowest_port,
                                        options->highest_port) ||
             bn_treeproc_add_bind (self->procs, (size_t)node, "down", endpoint);
    } else if (rc == 0) {
        char *down = s_ipc (self, node);
        rc = down ? bn_treeproc_add_bind (self->procs, (size_t)node, "down",
                                          down)
                  : -1;
        zstr_free (&down);
    }
    return rc;
}

static void s_stop (void **self_p);
static int s_port (void *self, int leaf);

static void *
s_start (bn_topology_t *topology, const char *key,
         const bn_bcast_options_t *options)
{
    assert (topology);
    assert (key);
    assert (options && options->program && options->ip);
    s_procs_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    char err[256] = "";
    self->topology =
        bn_topology_new (bn_topology_spec (topology),
                         bn_topology_depth (topology), 0, err, sizeof err);
    self->engines = zhashx_new ();
    if (self->engines)
        zhashx_set_destructor (self->engines, s_engine_free);
    self->hosts = options->hosts;
    size_t nnodes = (size_t)bn_topology_size (topology);
    self->nleaves = (size_t)bn_topology_leaves (topology);
    self->procs =
        self->topology && self->engines
            ? bn_treeproc_new (options->program, key, nnodes, options->run_dir)
            : NULL;
    int rc = self->procs ? 0 : -1;
    if (rc == 0 && options->curve)
        rc = bn_treeproc_set_curve (self->procs,
                                    zcert_secret_txt (options->curve));
    for (size_t node = 0; rc == 0 && node < nnodes; node++)
        rc = s_set_node (self, (int)node, options);
    if (rc == 0) {
        bn_treeproc_set_handler (self->procs, s_on_event, self);
        if (options->restart_backoff_ms > 0)
            bn_treeproc_set_restart_backoff (self->procs,
                                             options->restart_backoff_ms);
        bn_treeproc_set_liveness (self->procs, options->ping_ms,
                                  options->ping_misses);
        rc = bn_treeproc_start (self->procs);
    }
    //  the front reports what passes it to the records, on this thread: the
    //  root reports nothing (no copy of a request or reply crosses into
    //  this process but the one the front relays)
    char endpoint[300];
    char *root = rc == 0 ? s_root_endpoint (self) : NULL;
    if (root && bn_wire_tcp_bind_endpoint (
                    endpoint, sizeof endpoint, options->ip, options->root_port,
                    options->lowest_port, options->highest_port) == 0)
        self->front = bn_bcast_front_new (
            endpoint, root, options->hwm, options->client_hwm, options->curve,
            key,
            options->records ? bn_monitor_link_target (options->records)
                             : NULL);
    zstr_free (&root);
    if (!self->front)
        rc = -1;
    if (rc == 0)
        bn_log_info ("broadcast tree: %s as processes, root port %d",
                     bn_topology_describe (self->topology), s_port (self, -1));
    else {
        bn_log_error ("broadcast tree: cannot start %s as processes of %s",
                      bn_topology_describe (topology), options->program);
        s_stop ((void **)&self);
    }
    return self;
}

static void
s_stop (void **self_p)
{
    assert (self_p);
    s_procs_t *self = (s_procs_t *)*self_p;
    if (!self)
        return;
    bn_bcast_front_destroy (&self->front);
    bn_treeproc_destroy (&self->procs);
    zhashx_destroy (&self->engines);
    bn_topology_destroy (&self->topology);
    free (self);
    *self_p = NULL;
}

static int
s_port (void *arg, int leaf)
{
    s_procs_t *self = (s_procs_t *)arg;
    assert (self);
    assert (leaf < (int)self->nleaves);
    if (leaf < 0)
        return bn_bcast_front_port (self->front);
    int node = bn_topology_leaf_node (self->topology, leaf);
    const char *endpoint =
        bn_treeproc_endpoint (self->procs, (size_t)node, "down");
    return endpoint ? bn_wire_endpoint_port (endpoint) : -1;
}

static int
s_attach (void *arg, zloop_t *loop)
{
    s_procs_t *self = (s_procs_t *)arg;
    assert (self);
    return bn_treeproc_attach (self->procs, loop) ||
                   bn_bcast_front_attach (self->front, loop)
               ? -1
               : 0;
}

//  Send node command and its arguments (NULL-terminated) and wait until it
//  answers reply.
static void
s_call (s_procs_t *self, int node, const char *reply, const char *command, ...)
{
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, command);
    va_list args;
    va_start (args, command);
    const char *arg;
    while ((arg = va_arg (args, const char *)))
        zmsg_addstr (msg, arg);
    va_end (args);
    bn_treeproc_call (self->procs, (size_t)node, &msg, reply, S_ADD_WAIT, NULL);
}

static void
s_engine (void *arg, const char *uuid, int eid, bool registered,
          const char *why, const char *via)
{
    s_procs_t *self = (s_procs_t *)arg;
    assert (self);
    //  an engine behind a host node: the leaf its host node hangs below
    const char *host = NULL;
    int leaf = self->hosts && uuid
                   ? bn_hosts_leaf (self->hosts,
                                    bn_hosts_via (self->hosts, uuid), &host)
                   : -1;
    int node = leaf >= 0 ? bn_topology_leaf_node (self->topology, leaf)
                         : bn_topology_engine_node (self->topology, eid);
    if (node < 0 || !uuid)
        return;
    char text[16], at[16];
    snprintf (text, sizeof text, "%d", eid);
    snprintf (at, sizeof at, "%d", leaf);
    if (!registered) {
        zhashx_delete (self->engines, uuid);
        for (int up = leaf >= 0 ? bn_topology_parent (self->topology, node)
                                : -1;
             up >= 0; up = bn_topology_parent (self->topology, up))
            bn_treeproc_sendx (self->procs, (size_t)up, "ENGINE_UNROUTE", text,
                               NULL);
        bn_treeproc_sendx (self->procs, (size_t)node, "ENGINE_REMOVE", uuid,
                           why, NULL);
        return;
    }
    s_engine_t *engine = calloc (1, sizeof *engine);
    if (engine) {
        engine->eid = eid;
        engine->leaf = leaf;
        engine->host = host ? strdup (host) : NULL;
        zhashx_update (self->engines, uuid, engine);
    }
    //  the hub announces the engine when this returns: wait until the nodes
    //  above its leaf route it and its leaf knows it, or a client's first
    //  broadcast may overtake it
    for (int up = leaf >= 0 ? bn_topology_parent (self->topology, node) : -1;
         up >= 0; up = bn_topology_parent (self->topology, up))
        s_call (self, up, "ENGINE_ROUTED", "ENGINE_ROUTE", text, at, NULL);
    s_call (self, node, "ENGINE_ADDED", "ENGINE_ADD", uuid, text, host, NULL);
}

//  Node's own counters (its actor's STATS), or NULL if it does not answer.
static json_t *
s_node_stats (s_procs_t *self, size_t node)
{
    if (!bn_treeproc_ready (self->procs, node))
        return NULL;
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "STATS");
    zmsg_t *reply = NULL;
    if (bn_treeproc_call (self->procs, node, &msg, "STATS", S_STATS_WAIT,
                          &reply))
        return NULL;
    zframe_t *frame = zmsg_next (reply);
    json_t *stats = frame ? json_loadb ((const char *)zframe_data (frame),
                                        zframe_size (frame), 0, NULL)
                          : NULL;
    zmsg_destroy (&reply);
    if (!json_is_object (stats)) {
        json_decref (stats);
        return NULL;
    }
    return stats;
}

static json_t *
s_stats (void *arg)
{
    s_procs_t *self = (s_procs_t *)arg;
    assert (self);
    json_t *stats = bn_treeproc_stats (self->procs);
    json_t *nodes = json_object_get (stats, "nodes");
    json_int_t requests = 0;
    for (size_t node = 0; node < json_array_size (nodes); node++) {
        json_t *counters = s_node_stats (self, node);
        json_t *entry = json_array_get (nodes, node);
        requests += json_integer_value (json_object_get (counters, "requests"));
        if (counters)
            json_object_update_missing (entry, counters);
        json_decref (counters);
    }
    if (stats) {
        json_object_set_new (stats, "requests", json_integer (requests));
        json_object_set_new (stats, "front",
                             bn_bcast_front_stats (self->front));
    }
    return stats;
}

const bn_bcast_mode_t bn_bcast_processes = {.name = "processes",
                                            .start = s_start,
                                            .stop = s_stop,
                                            .port = s_port,
                                            .attach = s_attach,
                                            .engine = s_engine,
                                            .stats = s_stats};

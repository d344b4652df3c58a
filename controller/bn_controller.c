/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_controller: the controller actor; one thread, one zloop, every
    socket of doc/wire.md 3 bound on tcp://<ip>:* (a port of
    controller.ports when that is set, or the ports of the old connection
    files when controller.reuse_files is), each a CURVE server with
    controller.curve (doc/wire.md 3.3).  */
#include "bn_controller.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bn_bcast_procs.h"
#include "bn_bcast_tree.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_heart.h"
#include "bn_hosts.h"
#include "bn_hub.h"
#include "bn_limits.h"
#include "bn_log.h"
#include "bn_monitor_link.h"
#include "bn_msgtypes.h"
#include "bn_path.h"
#include "bn_records.h"
#include "bn_refuser.h"
#include "bn_relay.h"
#include "bn_session.h"
#include "bn_task.h"
#include "bn_topology.h"
#include "bn_watch.h"
#include "bn_wire.h"

#define S_LISTEN_BACKLOG                                                       \
    4096 //  pending connections per port (capped by
         //  net.core.somaxconn)
//  Requests a client may have on its way into the task port's ROUTER
//  beyond what the scheduler queues (the scheduler stops reading past
//  BN_TASK_QUEUE_MAX queued tasks; then this bounds libzmq's buffer and
//  the flooding client's sends block).
#define S_TASK_RCVHWM 1000

//  A context option of libzmq 4.3 that zmq.h lists among its drafts
#ifndef ZMQ_ZERO_COPY_RECV
#define ZMQ_ZERO_COPY_RECV 10
#endif

//  One bound socket and the port it got.
typedef struct {
    zsock_t *sock;
    int port;
} s_bound_t;

typedef struct {
    zsock_t *pipe;   //  Actor pipe
    char *ip;        //  Bind address
    char *interface; //  "tcp://<ip>"
    char *location;  //  Where peers on other hosts reach us ("": our name)
    char *cluster_id;
    int depth;               //  Broadcast tree depth
    bn_topology_t *topology; //  Broadcast tree shape
    int tree_deadline;       //  Default broadcast deadline, ms (0: none)
    int fold;                //  controller.fold
    int connect_grace;       //  ms a registered engine's requests wait for
                             //  its shell, control, task and broadcast
                             //  connections instead of failing
    int stranded_timeout;    //  ms a leaving engine's replies may take
    int restart_backoff;     //  ms, longest wait to restart a tree node
    int db_flush;            //  ms between writes of records to SQLite
    char *reduce_plugins;    //  Reduction plugins the tree's nodes load
    int hwm;                 //  SNDHWM/RCVHWM of every socket
    int client_hwm;          //  SNDHWM toward each client, 0: hwm
    int hb_period;           //  ms between heartbeats (tree nodes' too)
    int hb_misses;           //  heartbeats missed before one is lost
    zcert_t *curve;          //  Our CURVE keypair, or NULL without CURVE
    int ports[2];            //  controller.ports: lowest, highest (0: any)
    bool reuse;              //  Keep (and reuse) connection files
    char *client_path;       //  Connection files and pid file
    char *engine_path;
    char *pid_path;
    bool files_written;
    bn_session_t *session;
    char *key;

    s_bound_t query;    //  Hub ROUTER (registration)
    s_bound_t notifier; //  Hub PUB
    s_bound_t hb_ping;  //  Heart PUB
    s_bound_t hb_pong;  //  Heart ROUTER
    s_bound_t mux_in, mux_out;
    s_bound_t control_in, control_out;
    s_bound_t iopub_in, iopub_out;
    s_bound_t task_in, task_out;
    int bcast_port;        //  Root node's port (client side)
    int *bcast_leaf_ports; //  Each leaf's port (engine side)
    size_t nleaves;

    zloop_t *loop;
    bn_watch_t *sockets;       //  the actor pipe and the publishers
    bn_watch_item_t *items[3]; //  their items
    bn_heart_t *heart;
    bn_hub_t *hub;
    bn_relay_t *mux;
    bn_relay_t *control;
    bn_relay_t *iopub;
    bn_hosts_t *hosts;                //  Host nodes' links and their engines
    bn_task_t *task;                  //  Task scheduler, or NULL (scheme none)
    bn_refuser_t *task_refuser;       //  Task port with scheme none
    const bn_bcast_mode_t *tree_mode; //  controller.tree_mode
    void *tree;                       //  Broadcast tree nodes
    char *scheduler_path;             //  banyan-scheduler, for processes
    char *log_file;                   //  Passed on to the node processes
    char *run_dir;         //  <profile>/pid: the node processes' links
    bn_records_t *records; //  Task records the hub answers queries from
    char *db;              //  controller.db: memory, none, sqlite:PATH
    int record_limit;
    bn_monitor_link_t *record_link; //  The tree root's reports to records
    bool restore;                   //  Restore the engine table from state_path
    char *state_path;               //  log/engines<cluster_id>.json
    bool shutdown;                  //  Ended by a hub shutdown_request
} s_controller_t;

//  Create a socket of type with our HWM, an optional routing id and
//  ROUTER_MANDATORY when mandatory, and bind it to port (0 = any).
static int
s_bind (s_controller_t *self, s_bound_t *bound, int type, const char *id,
        bool mandatory, int port)
{
    bound->sock = zsock_new (type);
    if (!bound->sock)
        return -1;
    //  a client-facing socket queues at most client_hwm replies for a peer
    //  (below the socket's own hwm): a client that never reads costs that
    //  much of the controller's memory, not everything it asked for. (A
    //  listener takes the options the socket has when it binds.)
    bool client = bound == &self->query || bound == &self->mux_in ||
                  bound == &self->control_in || bound == &self->task_in;
    int sndhwm = self->hwm;
    if (client && self->client_hwm > 0 &&
        (self->hwm == 0 || self->client_hwm < self->hwm))
        sndhwm = self->client_hwm;
    zsock_set_sndhwm (bound->sock, sndhwm);
    zsock_set_rcvhwm (bound->sock, bound == &self->task_in && self->hwm == 0
                                       ? S_TASK_RCVHWM
                                       : self->hwm);
    zsock_set_linger (bound->sock, 0);
    //  every engine connects to the registration, mux, control, heart and
    //  leaf ports at about the same time: with libzmq's backlog of 100, a
    //  burst of 1,024 overflows the accept queue and the dropped SYNs are
    //  retried only after a second
    zsock_set_backlog (bound->sock, S_LISTEN_BACKLOG);
    if (id)
        zsock_set_identity (bound->sock, id);
    if (mandatory)
        zsock_set_router_mandatory (bound->sock, 1);
    //  a peer that connects again under its routing id (an engine's uuid,
    //  a client's session) takes it over from its old connection, which
    //  may not be torn down yet: without this, libzmq keeps the new
    //  connection aside and reads its next message as its name
    if (type == ZMQ_ROUTER)
        zsock_set_router_handover (bound->sock, 1);
    if (type == ZMQ_SUB)
        zsock_set_subscribe (bound->sock, "");
    //  the hub hears of every subscription, not only a topic's first
    if (type == ZMQ_XPUB)
        zsock_set_xpub_verbose (bound->sock, 1);
    if (self->curve && bn_curve_server (bound->sock, self->curve)) {
        bn_log_error ("this libzmq cannot use CURVE: %s", zmq_strerror (errno));
        return -1;
    }
    char endpoint[300];
    if (bn_wire_tcp_bind_endpoint (endpoint, sizeof endpoint, self->ip, port,
                                   self->ports[0], self->ports[1])) {
        bn_log_error ("controller.ip '%s' is too long", self->ip);
        return -1;
    }
    //  a port reused from the last run may be held a moment longer by a
    //  controller that is still closing
    if (bn_wire_bind (bound->sock, endpoint, BN_WIRE_REBIND_WAIT) < 0) {
        int error = errno;
        if (self->ports[0] && error == EADDRINUSE)
            bn_log_error ("cannot bind %s: no port of controller.ports "
                          "%d-%d is free",
                          endpoint, self->ports[0], self->ports[1]);
        else
            bn_log_error ("cannot bind %s: %s", endpoint, zmq_strerror (error));
        return -1;
    }
    char *last = zsock_last_endpoint (bound->sock);
    bound->port = bn_wire_endpoint_port (last);
    zstr_free (&last);
    if (bound->port <= 0) {
        bn_log_error ("cannot read the port bound for %s", endpoint);
        return -1;
    }
    return 0;
}

//  Port of name in a loaded connection file, or 0 (bind any port).
static int
s_old_port (bn_connfile_t *file, const char *name)
{
    int port = file ? bn_connfile_port (file, name) : 0;
    return port > 0 ? port : 0;
}

//  Start the broadcast tree's nodes on the ports wanted (those of the old
//  connection files, 0 = any), reporting to the records, and take the
//  ports they bound. Returns -1 on failure.
static int
s_start_tree (s_controller_t *self)
{
    //  processes mode: the links' folder goes with the profile (else into
    //  $TMPDIR)
    bn_path_mkdir (self->run_dir);
    bn_bcast_options_t options = {.ip = self->ip,
                                  .curve = self->curve,
                                  .lowest_port = self->ports[0],
                                  .highest_port = self->ports[1],
                                  .root_port = self->bcast_port,
                                  .leaf_ports = self->bcast_leaf_ports,
                                  .hwm = self->hwm,
                                  .client_hwm = self->client_hwm,
                                  .deadline_ms = self->tree_deadline,
                                  .connect_grace_ms = self->connect_grace,
                                  .restart_backoff_ms = self->restart_backoff,
                                  .ping_ms = self->hb_period,
                                  .ping_misses = self->hb_misses,
                                  .reduce_plugins = self->reduce_plugins,
                                  .records = self->record_link,
                                  .hosts = self->hosts,
                                  .fold = self->fold,
                                  .program = self->scheduler_path,
                                  .log_file = self->log_file,
                                  .run_dir = self->run_dir};
    self->tree = self->tree_mode->start (self->topology, self->key, &options);
    if (!self->tree)
        return -1;
    self->bcast_port = self->tree_mode->port (self->tree, -1);
    for (size_t leaf = 0; leaf < self->nleaves; leaf++)
        self->bcast_leaf_ports[leaf] =
            self->tree_mode->port (self->tree, (int)leaf);
    return 0;
}

//  banyan-scheduler: controller.scheduler_path, else the one beside this
//  program, else the one in PATH. Returns a new string or NULL.
static char *
s_scheduler_path (bn_config_t *config)
{
    const char *given = bn_config_str (config, "controller.scheduler_path");
    if (*given)
        return strdup (given);
    char *found = bn_path_program ("banyan-scheduler");
    return found ? found : strdup ("banyan-scheduler");
}

static int
s_bind_all (s_controller_t *self, bn_connfile_t *old_client,
            bn_connfile_t *old_engine)
{
    bn_connfile_t *c = old_client, *e = old_engine;
    if (s_bind (self, &self->query, ZMQ_ROUTER, NULL, false,
                s_old_port (c, "registration")) ||
        s_bind (self, &self->control_out, ZMQ_ROUTER, BN_ROUTING_CONTROL_OUT,
                true, s_old_port (e, "control")) ||
        s_bind (self, &self->mux_out, ZMQ_ROUTER, BN_ROUTING_MUX_OUT, true,
                s_old_port (e, "mux")) ||
        s_bind (self, &self->task_out, ZMQ_ROUTER, BN_ROUTING_TASK_OUT, true,
                s_old_port (e, "task")) ||
        s_bind (self, &self->iopub_in, ZMQ_SUB, NULL, false,
                s_old_port (e, "iopub")) ||
        s_bind (self, &self->hb_ping, ZMQ_PUB, NULL, false,
                s_old_port (e, "hb_ping")) ||
        s_bind (self, &self->hb_pong, ZMQ_ROUTER, NULL, false,
                s_old_port (e, "hb_pong")))
        return -1;
    self->nleaves = (size_t)bn_topology_leaves (self->topology);
    self->bcast_leaf_ports = calloc (self->nleaves, sizeof (int));
    if (!self->bcast_leaf_ports)
        return -1;
    //  the tree's nodes bind its ports when they start (s_start_tree)
    for (size_t leaf = 0;
         e && leaf < self->nleaves && leaf < bn_connfile_broadcast_count (e);
         leaf++) {
        int port = bn_connfile_broadcast (e, leaf);
        self->bcast_leaf_ports[leaf] = port > 0 ? port : 0;
    }
    int bcast_port = c ? bn_connfile_broadcast (c, 0) : 0;
    self->bcast_port = bcast_port > 0 ? bcast_port : 0;
    if (s_bind (self, &self->control_in, ZMQ_ROUTER, BN_ROUTING_CONTROL_IN,
                true, s_old_port (c, "control")) ||
        s_bind (self, &self->mux_in, ZMQ_ROUTER, BN_ROUTING_MUX_IN, true,
                s_old_port (c, "mux")) ||
        s_bind (self, &self->task_in, ZMQ_ROUTER, BN_ROUTING_TASK_IN, true,
                s_old_port (c, "task")) ||
        s_bind (self, &self->iopub_out, ZMQ_PUB, NULL, false,
                s_old_port (c, "iopub")) ||
        s_bind (self, &self->notifier, ZMQ_XPUB, NULL, false,
                s_old_port (c, "notification")))
        return -1;
    return 0;
}

//  The settings both connection files share.
static int
s_fill_common (s_controller_t *self, bn_connfile_t *file)
{
    struct {
        const char *name;
        s_bound_t *bound;
    } ports[] = {
        {"registration", &self->query},
        {"control", NULL},
        {"mux", NULL},
        {"task", NULL},
        {"iopub", NULL},
    };
    bool client = bn_connfile_kind (file) == BN_CONNFILE_CLIENT;
    ports[1].bound = client ? &self->control_in : &self->control_out;
    ports[2].bound = client ? &self->mux_in : &self->mux_out;
    ports[3].bound = client ? &self->task_in : &self->task_out;
    ports[4].bound = client ? &self->iopub_out : &self->iopub_in;
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++)
        if (bn_connfile_set_port (file, ports[i].name, ports[i].bound->port))
            return -1;
    if (bn_connfile_set_interface (file, self->interface) ||
        (*self->location && bn_connfile_set_location (file, self->location)) ||
        bn_connfile_set_key (file, self->key) ||
        bn_connfile_set_curve_serverkey (
            file, self->curve ? zcert_public_txt (self->curve) : NULL))
        return -1;
    return 0;
}

static int
s_write_files (s_controller_t *self, const char *scheme)
{
    bn_connfile_t *client = bn_connfile_new (BN_CONNFILE_CLIENT);
    bn_connfile_t *engine = bn_connfile_new (BN_CONNFILE_ENGINE);
    int rc = -1;
    if (client && engine && !s_fill_common (self, client) &&
        !s_fill_common (self, engine)) {
        rc = bn_connfile_set_port (client, "notification",
                                   self->notifier.port) ||
                     bn_connfile_set_broadcast (client, &self->bcast_port, 1) ||
                     bn_connfile_set_task_scheme (client, scheme) ||
                     bn_connfile_set_port (engine, "hb_ping",
                                           self->hb_ping.port) ||
                     bn_connfile_set_port (engine, "hb_pong",
                                           self->hb_pong.port) ||
                     bn_connfile_set_broadcast (engine, self->bcast_leaf_ports,
                                                self->nleaves)
                 ? -1
                 : 0;
    }
    if (rc == 0)
        rc = bn_connfile_save (engine, self->engine_path);
    if (rc == 0)
        rc = bn_connfile_save (client, self->client_path);
    if (rc == 0)
        self->files_written = true;
    else
        bn_log_error ("cannot write the connection files %s, %s",
                      self->client_path, self->engine_path);
    bn_connfile_destroy (&client);
    bn_connfile_destroy (&engine);
    return rc;
}

static int
s_write_pid (s_controller_t *self)
{
    char *dir = strdup (self->pid_path);
    if (!dir)
        return -1;
    *strrchr (dir, '/') = 0;
    int rc = bn_path_mkdir (dir);
    free (dir);
    FILE *file = rc == 0 ? fopen (self->pid_path, "w") : NULL;
    if (!file) {
        bn_log_error ("cannot write the pid file %s: %s", self->pid_path,
                      strerror (errno));
        return -1;
    }
    fprintf (file, "%d\n", (int)getpid ());
    return fclose (file) == 0 ? 0 : -1;
}

//  The engine connection dict sent in registration_reply.
static json_t *
s_connection_info (s_controller_t *self)
{
    json_t *leaves = json_array ();
    for (size_t leaf = 0; leaves && leaf < self->nleaves; leaf++)
        json_array_append_new (leaves,
                               json_integer (self->bcast_leaf_ports[leaf]));
    return json_pack (
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o}", "interface",
        self->interface, "registration", self->query.port, "control",
        self->control_out.port, "mux", self->mux_out.port, "task",
        self->task_out.port, "iopub", self->iopub_in.port, "hb_ping",
        self->hb_ping.port, "hb_pong", self->hb_pong.port, "broadcast", leaves);
}

static int
s_on_hub_shutdown (void *arg)
{
    s_controller_t *self = (s_controller_t *)arg;
    self->shutdown = true;
    return -1;
}

static void
s_remove_files (s_controller_t *self)
{
    if (self->files_written && !self->reuse) {
        unlink (self->client_path);
        unlink (self->engine_path);
    }
    if (self->pid_path)
        unlink (self->pid_path);
    self->files_written = false;
}

//  The ports the controller binds itself (the tree's nodes bind the rest).
#define S_OWN_PORTS BN_CONTROLLER_OWN_PORTS
static void
s_own_ports (s_controller_t *self, s_bound_t *all[S_OWN_PORTS])
{
    s_bound_t *ports[] = {
        &self->query,      &self->notifier,    &self->hb_ping,
        &self->hb_pong,    &self->mux_in,      &self->mux_out,
        &self->control_in, &self->control_out, &self->iopub_in,
        &self->iopub_out,  &self->task_in,     &self->task_out,
    };
    static_assert (sizeof ports / sizeof ports[0] == S_OWN_PORTS,
                   "S_OWN_PORTS counts the bound sockets");
    memcpy (all, ports, sizeof ports);
}

static void
s_controller_destroy (s_controller_t **self_p)
{
    s_controller_t *self = *self_p;
    if (!self)
        return;
    //  components use the loop's timers; destroy them first
    bn_hub_destroy (&self->hub);
    bn_heart_destroy (&self->heart);
    bn_relay_destroy (&self->mux);
    bn_relay_destroy (&self->control);
    bn_relay_destroy (&self->iopub);
    bn_hosts_destroy (&self->hosts);
    bn_task_destroy (&self->task);
    bn_refuser_destroy (&self->task_refuser);
    if (self->tree_mode)
        self->tree_mode->stop (&self->tree);
    bn_monitor_link_destroy (&self->record_link);
    bn_records_destroy (&self->records);
    if (self->sockets) {
        for (size_t i = 0; i < sizeof self->items / sizeof self->items[0]; i++)
            bn_watch_cancel (self->sockets, &self->items[i]);
        bn_watch_destroy (&self->sockets);
    }
    zloop_destroy (&self->loop);
    s_bound_t *all[S_OWN_PORTS];
    s_own_ports (self, all);
    for (size_t i = 0; i < S_OWN_PORTS; i++)
        zsock_destroy (&all[i]->sock);
    zcert_destroy (&self->curve);
    free (self->bcast_leaf_ports);
    free (self->scheduler_path);
    free (self->log_file);
    free (self->run_dir);
    bn_topology_destroy (&self->topology);
    s_remove_files (self);
    bn_session_destroy (&self->session);
    free (self->key);
    free (self->ip);
    free (self->location);
    free (self->interface);
    free (self->cluster_id);
    free (self->reduce_plugins);
    free (self->client_path);
    free (self->engine_path);
    free (self->pid_path);
    free (self->db);
    free (self->state_path);
    free (self);
    *self_p = NULL;
}

static json_t *
s_stats (s_controller_t *self)
{
    json_t *records = bn_records_stats (self->records);
    //  what the broadcast root reported, and dropped when the link was full
    if (records && self->record_link)
        json_object_set_new (records, "link",
                             bn_monitor_link_stats (self->record_link));
    return json_pack (
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "records", records, "hub",
        bn_hub_stats (self->hub), "heart", bn_heart_stats (self->heart), "mux",
        bn_relay_stats (self->mux), "control", bn_relay_stats (self->control),
        "iopub", bn_relay_stats (self->iopub), "task",
        self->task ? bn_task_stats (self->task)
                   : bn_refuser_stats (self->task_refuser),
        "broadcast", self->tree_mode->stats (self->tree));
}

//  The same counters for a client's bn_stats_request.
static json_t *
s_stats_query (void *arg)
{
    return s_stats ((s_controller_t *)arg);
}

static int
s_on_pipe (zloop_t *loop, zsock_t *pipe, void *arg)
{
    s_controller_t *self = (s_controller_t *)arg;
    zmsg_t *request = zmsg_recv (pipe);
    if (!request)
        return -1;
    char *command = zmsg_popstr (request);
    int rc = 0;
    if (!command || streq (command, "$TERM"))
        rc = -1;
    else if (streq (command, "CONNFILES") || streq (command, "ENDPOINTS"))
        zstr_sendx (pipe, self->client_path, self->engine_path, NULL);
    else if (streq (command, "PIDFILE"))
        zstr_send (pipe, self->pid_path);
    else if (streq (command, "STATS")) {
        json_t *stats = s_stats (self);
        char *text = stats ? json_dumps (stats, JSON_COMPACT) : NULL;
        zstr_send (pipe, text ? text : "{}");
        free (text);
        json_decref (stats);
    } else
        bn_log_warn ("controller: unknown actor command %s", command);
    free (command);
    zmsg_destroy (&request);
    //  an answer sent may have taken the signal of the next command
    bn_watch_check (self->sockets, self->items[0]);
    return rc;
}

//  The hub's resubmissions go into the task scheduler.
static int
s_submit_task (void *arg, bn_msg_t **msg_p)
{
    return bn_task_submit ((bn_task_t *)arg, msg_p);
}

static int
s_on_flush (zloop_t *loop, int timer_id, void *arg)
{
    bn_records_flush ((bn_records_t *)arg);
    return 0;
}

//  The task records as controller.db asks; NULL if out of memory. A
//  database that cannot be opened is logged and records stay in memory.
static bn_records_t *
s_new_records (s_controller_t *self)
{
    bool none = streq (self->db, "none");
    bn_records_t *records =
        bn_records_new (none ? BN_RECORDS_NONE : BN_RECORDS_MEMORY,
                        (size_t)self->record_limit, 0);
    if (records && strncmp (self->db, "sqlite:", 7) == 0) {
        char err[512];
        if (bn_records_open_sqlite (records, self->db + 7, err, sizeof err))
            bn_log_error ("controller: task records stay in memory: %s", err);
        else
            bn_log_info ("controller: task records in %s", self->db + 7);
    }
    return records;
}

//  A PUB socket is only written to, and libzmq processes the commands of
//  a socket (among them the end of a subscriber's connection, which frees
//  its pipe) only when the socket is used or polled: polled for input,
//  which never comes, iopub frees each client's pipe as it goes instead
//  of holding it (about 11 kB) until output flows again. (The hub reads
//  the notification port's subscriptions, which polls it.)
static int
s_on_pub_commands (zloop_t *loop, zsock_t *reader, void *arg)
{
    return 0;
}

//  Build components and register them in the loop.
static int
s_start_components (s_controller_t *self, int period, int misses,
                    double registration_timeout, const char *scheme,
                    int task_hwm)
{
    self->loop = zloop_new ();
    self->heart =
        bn_heart_new (self->hb_ping.sock, self->hb_pong.sock, period, misses);
    self->mux = bn_relay_new_swap ("mux", self->mux_in.sock, self->mux_out.sock,
                                   self->session);
    self->control = bn_relay_new_swap ("control", self->control_in.sock,
                                       self->control_out.sock, self->session);
    self->iopub = bn_relay_new_forward ("iopub", self->iopub_in.sock,
                                        self->iopub_out.sock, self->session);
    self->hosts = bn_hosts_new ();
    int scheme_id = bn_task_scheme_parse (scheme);
    if (scheme_id >= 0) {
        self->task =
            bn_task_new (self->task_in.sock, self->task_out.sock, self->session,
                         (bn_task_scheme_t)scheme_id, task_hwm);
        if (!self->task)
            return -1;
    } else {
        bn_log_info ("controller: no task scheduler (scheme %s)", scheme);
        self->task_refuser =
            bn_refuser_new (BN_REFUSER_TASK, self->task_in.sock, self->session);
        if (!self->task_refuser)
            return -1;
    }
    //  the tree's root runs in its own thread (or process): it reports to
    //  the records through a link read on this loop
    self->records = s_new_records (self);
    self->record_link =
        self->records ? bn_monitor_link_new (bn_records_monitor (self->records))
                      : NULL;
    if (!self->loop || !self->heart || !self->mux || !self->control ||
        !self->iopub || !self->hosts || !self->records || !self->record_link ||
        s_start_tree (self))
        return -1;
    self->hub = bn_hub_new (
        self->query.sock, self->notifier.sock, self->session, self->heart,
        s_connection_info (self), period, registration_timeout);
    if (!self->hub)
        return -1;
    if (self->task_refuser &&
        bn_refuser_add_engine_side (self->task_refuser, self->task_out.sock))
        return -1;
    if (self->task)
        bn_hub_set_task (self->hub, self->task);
    if (bn_hub_add_engine_listener (self->hub, self->tree_mode->engine,
                                    self->tree) ||
        bn_hub_add_relay (self->hub, self->mux, true) ||
        bn_hub_add_relay (self->hub, self->control, false))
        return -1;
    if (self->tree_mode->shared_port)
        bn_hub_share_broadcast (self->hub, self->tree_mode->shared_port,
                                self->tree);
    bn_hub_watch_iopub (self->hub, self->iopub);
    bn_hub_set_hosts (self->hub, self->hosts);
    bn_relay_set_hosts (self->mux, self->hosts);
    bn_relay_set_hosts (self->control, self->hosts);
    bn_hub_set_records (self->hub, self->records);
    bn_hub_set_stranded_timeout (self->hub, self->stranded_timeout);
    bn_relay_set_connect_grace (self->mux, self->connect_grace);
    bn_relay_set_connect_grace (self->control, self->connect_grace);
    bn_relay_set_monitor (self->mux, bn_records_monitor (self->records));
    bn_relay_set_monitor (self->iopub, bn_records_monitor (self->records));
    if (self->task) {
        bn_task_set_connect_grace (self->task, self->connect_grace);
        bn_task_set_hosts (self->task, self->hosts);
        bn_task_set_monitor (self->task, bn_records_monitor (self->records));
        bn_hub_set_resubmit (self->hub, s_submit_task, self->task);
    }
    bn_hub_set_shutdown_handler (self->hub, s_on_hub_shutdown, self);
    bn_hub_set_stats (self->hub, s_stats_query, self);
    //  signals are the main thread's business; only $TERM stops the loop
    zloop_set_nonstop (self->loop, true);
    //  Every socket the loop reads is in an epoll set (bn_watch), one per
    //  component: the loop polls descriptors only, and a wake-up costs for
    //  the socket that has input, not for each of the loop's sockets.
    self->sockets = bn_watch_new (self->loop);
    if (!self->sockets ||
        !(self->items[0] =
              bn_watch_zreader (self->sockets, self->pipe, s_on_pipe, self)) ||
        !(self->items[1] = bn_watch_zreader (
              self->sockets, self->iopub_out.sock, s_on_pub_commands, NULL)) ||
        !(self->items[2] = bn_watch_zreader (self->sockets, self->hb_ping.sock,
                                             s_on_pub_commands, NULL)) ||
        bn_hub_attach (self->hub, self->loop) ||
        bn_heart_attach (self->heart, self->loop) ||
        bn_relay_attach (self->mux, self->loop) ||
        bn_relay_attach (self->control, self->loop) ||
        bn_relay_attach (self->iopub, self->loop) ||
        (self->record_link &&
         bn_monitor_link_attach (self->record_link, self->loop)) ||
        self->tree_mode->attach (self->tree, self->loop) ||
        (self->task && bn_task_attach (self->task, self->loop)) ||
        (self->task_refuser &&
         bn_refuser_attach (self->task_refuser, self->loop)))
        return -1;
    if (bn_records_sqlite_ok (self->records) &&
        zloop_timer (self->loop, self->db_flush, 0, s_on_flush, self->records) <
            0)
        return -1;
    //  after attach: restored engines wait for their hearts on the loop
    if (bn_hub_set_state_file (self->hub, self->state_path, self->restore))
        bn_log_warn ("controller: engines not restored from %s",
                     self->state_path);
    return 0;
}

//  The broadcast tree's shape from controller.topology and .depth (a
//  depth left at its default does not override a shape's own, 4x16).
static bn_topology_t *
s_topology (bn_config_t *config, char *err, size_t errsize)
{
    const char *source = bn_config_source (config, "controller.depth");
    bool given = source && strcmp (source, "default") != 0;
    return bn_topology_new (
        bn_config_str (config, "controller.topology"),
        given ? bn_config_int (config, "controller.depth")
              : BN_TOPOLOGY_DEPTH_DEFAULT,
        (size_t)bn_config_int (config, "controller.engines"), err, errsize);
}

size_t
bn_controller_sockets (bn_config_t *config)
{
    char err[256];
    bn_topology_t *topology = s_topology (config, err, sizeof err);
    if (!topology)
        return 0;
    size_t needed = (size_t)bn_topology_leaves (topology) + 64 +
                    BN_BCAST_TREE_SOCKETS (bn_topology_size (topology));
    bn_topology_destroy (&topology);
    return needed;
}

static s_controller_t *
s_controller_new (zsock_t *pipe, bn_controller_args_t *args)
{
    bn_config_t *config = args->config;
    s_controller_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pipe = pipe;
    self->ip = strdup (bn_config_str (config, "controller.ip"));
    self->interface = zsys_sprintf ("tcp://%s", self->ip);
    self->location = strdup (bn_config_str (config, "controller.location"));
    self->cluster_id = strdup (bn_config_str (config, "cluster.id"));
    self->depth = bn_config_int (config, "controller.depth");
    self->tree_deadline =
        (int)bn_config_msecs (config, "controller.tree_deadline");
    self->connect_grace =
        (int)bn_config_msecs (config, "controller.connect_grace");
    self->fold = bn_config_int (config, "controller.fold");
    self->stranded_timeout =
        (int)bn_config_msecs (config, "controller.stranded_timeout");
    self->restart_backoff =
        (int)bn_config_msecs (config, "controller.node_restart_backoff");
    self->db_flush = (int)bn_config_msecs (config, "controller.db_flush");
    self->reduce_plugins =
        strdup (bn_config_str (config, "controller.reduce_plugins"));
    char err[256] = "";
    self->topology = s_topology (config, err, sizeof err);
    if (self->topology)
        self->depth = bn_topology_depth (self->topology);
    if (!self->topology) {
        bn_log_error ("broadcast tree: %s", err);
        s_controller_destroy (&self);
        return NULL;
    }
    self->hwm = bn_config_int (config, "controller.hwm");
    self->client_hwm = bn_config_int (config, "controller.client_hwm");
    self->hb_period =
        (int)bn_config_msecs (config, "controller.heartbeat_period");
    self->hb_misses = bn_config_int (config, "controller.heartbeat_misses");
    //  the config allows only the modes' names
    const bn_bcast_mode_t *modes[] = {&bn_bcast_threads, &bn_bcast_processes};
    const char *mode = bn_config_str (config, "controller.tree_mode");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (streq (mode, modes[i]->name))
            self->tree_mode = modes[i];
    self->scheduler_path = s_scheduler_path (config);
    self->run_dir = zsys_sprintf ("%s/pid", args->profile_dir);
    self->log_file = strdup (bn_config_str (config, "log.file"));
    self->reuse = bn_config_bool (config, "controller.reuse_files");
    self->client_path = bn_connfile_path (args->profile_dir, self->cluster_id,
                                          BN_CONNFILE_CLIENT);
    self->engine_path = bn_connfile_path (args->profile_dir, self->cluster_id,
                                          BN_CONNFILE_ENGINE);
    self->pid_path =
        zsys_sprintf ("%s/pid/banyan-controller%s%s.pid", args->profile_dir,
                      *self->cluster_id ? "-" : "", self->cluster_id);
    self->state_path = zsys_sprintf ("%s/log/engines%s.json", args->profile_dir,
                                     self->cluster_id);
    self->db = strdup (bn_config_str (config, "controller.db"));
    self->record_limit = bn_config_int (config, "controller.record_limit");
    self->restore = bn_config_bool (config, "controller.restore");
    //  engines that outlive us come back only to the same ports and key
    if (self->restore)
        self->reuse = true;
    if (!self->ip || !self->interface || !self->location || !self->cluster_id ||
        !self->client_path || !self->engine_path || !self->pid_path ||
        !self->tree_mode || !self->scheduler_path || !self->log_file ||
        !self->run_dir || !self->state_path || !self->db) {
        s_controller_destroy (&self);
        return NULL;
    }
    //  czmq asserts when a socket cannot be created: check the room first
    size_t needed = (size_t)bn_topology_leaves (self->topology) + 64 +
                    BN_BCAST_TREE_SOCKETS (bn_topology_size (self->topology));
    int limit = zmq_ctx_get (zsys_init (), ZMQ_MAX_SOCKETS);
    if (limit > 0 && needed > (size_t)limit) {
        bn_log_error ("%s needs %zu sockets; this process allows %d",
                      bn_topology_describe (self->topology), needed, limit);
        s_controller_destroy (&self);
        return NULL;
    }
    //  The records keep requests' and replies' frames as long as they keep
    //  the records. libzmq receives a frame under 8 kB into the batch it
    //  read, shared by refcount (about 16 kB with its counters), so a kept
    //  200-byte frame would hold all of that: with the copy libzmq makes
    //  when zero-copy receiving is off, each frame has memory of its own.
    //  It holds for the sockets made from here on; a libzmq without the
    //  option refuses it and receives as before.
    zmq_ctx_set (zsys_init (), ZMQ_ZERO_COPY_RECV, 0);
    //  a range too small for every port fails now, not at the last bind
    bn_config_ports (config, "controller.ports", &self->ports[0],
                     &self->ports[1]);
    int leaves = bn_topology_leaves (self->topology);
    int listening = S_OWN_PORTS + 1 + leaves;
    if (self->ports[0] && self->ports[1] - self->ports[0] + 1 < listening) {
        bn_log_error ("controller.ports %d-%d holds %d ports; this "
                      "controller listens on %d (%d of its own, the "
                      "broadcast root and %d leaves)",
                      self->ports[0], self->ports[1],
                      self->ports[1] - self->ports[0] + 1, listening,
                      S_OWN_PORTS, leaves);
        s_controller_destroy (&self);
        return NULL;
    }
    if (bn_config_bool (config, "controller.curve")) {
        char *cert_path =
            bn_curve_cert_path (args->profile_dir, self->cluster_id);
        self->curve =
            cert_path ? bn_curve_keypair (cert_path, err, sizeof err) : NULL;
        if (self->curve)
            bn_log_info ("controller: CURVE with the keypair in %s", cert_path);
        else
            bn_log_error ("controller: no CURVE keypair: %s",
                          cert_path ? err : "out of memory");
        zstr_free (&cert_path);
        if (!self->curve) {
            s_controller_destroy (&self);
            return NULL;
        }
    }
    bn_connfile_t *old_client = NULL, *old_engine = NULL;
    if (self->reuse) {
        old_client = bn_connfile_load (self->client_path, err, sizeof err);
        old_engine = old_client
                         ? bn_connfile_load (self->engine_path, err, sizeof err)
                         : NULL;
        if (!old_engine)
            bn_connfile_destroy (&old_client);
        else if (bn_connfile_broadcast_count (old_engine) !=
                 (size_t)bn_topology_leaves (self->topology)) {
            bn_log_warn ("%s is for another depth; not reused",
                         self->engine_path);
            bn_connfile_destroy (&old_client);
            bn_connfile_destroy (&old_engine);
        }
    }
    self->key = old_client ? strdup (bn_connfile_key (old_client))
                           : bn_connfile_new_key ();
    self->session = self->key ? bn_session_new (self->key, NULL) : NULL;
    if (self->session && bn_session_reserve_history (self->session) != 0)
        bn_session_destroy (&self->session);
    int rc = self->session ? s_bind_all (self, old_client, old_engine) : -1;
    bn_connfile_destroy (&old_client);
    bn_connfile_destroy (&old_engine);
    if (rc == 0)
        rc = s_start_components (
            self, (int)bn_config_msecs (config, "controller.heartbeat_period"),
            bn_config_int (config, "controller.heartbeat_misses"),
            bn_config_msecs (config, "controller.registration_timeout") /
                1000.0,
            bn_config_str (config, "controller.scheme"),
            bn_config_int (config, "controller.task_hwm"));
    if (rc == 0)
        rc = s_write_files (self, bn_config_str (config, "controller.scheme"));
    if (rc == 0)
        rc = s_write_pid (self);
    if (rc != 0) {
        s_controller_destroy (&self);
        return NULL;
    }
    bn_log_info ("controller: listening on %s:%d (registration), client "
                 "file %s",
                 self->interface, self->query.port, self->client_path);
    return self;
}

void
bn_controller_actor (zsock_t *pipe, void *args)
{
    bn_controller_args_t *start = (bn_controller_args_t *)args;
    assert (start);
    assert (start->config);
    assert (start->profile_dir);
    bn_log_set_ident ("controller");
    s_controller_t *self = s_controller_new (pipe, start);
    __atomic_store_n (&start->status, self ? 0 : -1, __ATOMIC_RELEASE);
    zsock_signal (pipe, 0);
    if (!self)
        return;
    zloop_start (self->loop);
    bool shutdown = self->shutdown;
    s_controller_destroy (&self);
    if (!shutdown)
        return;
    zstr_send (pipe, "SHUTDOWN");
    while (true) {
        char *command = zstr_recv (pipe);
        bool term = !command || streq (command, "$TERM");
        free (command);
        if (term)
            break;
    }
}

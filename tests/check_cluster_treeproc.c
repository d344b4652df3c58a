/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_treeproc: the broadcast tree in processes mode: a
    controller actor in this process running its tree as banyan-scheduler
    processes, banyan engines as actors, and a client speaking the wire.
    Broadcasts give the direct view's results; a killed node process is
    reported at once, restarted, and its subtree served again; requests in
    flight through a root that died are answered by the controller, which
    holds the client port; no node process outlives the controller.  */
#include <check.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bn_apply.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_controller.h"
#include "bn_engine_actor.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_pickle.h"
#include "bn_session.h"
#include "bn_value.h"

#define T_TIMEOUT 10000 //  ms any single receive may wait
#define T_ENGINES 4

typedef struct {
    char dir[64];
    bn_config_t *config;
    zactor_t *controller;
    zactor_t *engines;
    bn_session_t *session;
    zsock_t *query; //  DEALERs on the client ports
    zsock_t *mux;
    zsock_t *bcast;
    char bcast_endpoint[256]; //  Where bcast is connected
    char *uuids[T_ENGINES];   //  Engine uuid by id
} t_cluster_t;

static zsock_t *
s_dealer (bn_connfile_t *file, int port)
{
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    ck_assert_ptr_nonnull (sock);
    zsock_set_rcvtimeo (sock, T_TIMEOUT);
    zsock_set_linger (sock, 0);
    ck_assert_int_eq (
        zsock_connect (sock, "%s:%d", bn_connfile_interface (file), port), 0);
    return sock;
}

static void
s_set (bn_config_t *config, const char *name, const char *value)
{
    ck_assert_int_eq (bn_config_set (config, name, value, BN_CONFIG_CMDLINE),
                      0);
}

static void s_wait_served (t_cluster_t *self, const int *eids, size_t n);

//  A controller whose tree of depth runs as processes, its sockets' hwm
//  (NULL: the default), and T_ENGINES engines, all registered.
static t_cluster_t *
s_cluster_new_hwm (const char *depth, const char *hwm)
{
    t_cluster_t *self = calloc (1, sizeof *self);
    snprintf (self->dir, sizeof self->dir, "/tmp/bn-treeproc-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (self->dir));
    self->config = bn_config_new ();
    s_set (self->config, "controller.tree_mode", "processes");
    s_set (self->config, "controller.scheduler_path",
           BN_BUILD_DIR "/bin/banyan-scheduler");
    s_set (self->config, "controller.depth", depth);
    s_set (self->config, "controller.reduce_plugins",
           BN_PLUGIN_DIR "/bn_reduce_example.so");
    s_set (self->config, "controller.heartbeat_period", "100");
    s_set (self->config, "controller.heartbeat_misses", "50");
    if (hwm)
        s_set (self->config, "controller.hwm", hwm);
    bn_controller_args_t args = {self->config, self->dir,
                                 BN_CONTROLLER_STARTING};
    self->controller = zactor_new (bn_controller_actor, &args);
    ck_assert_ptr_nonnull (self->controller);
    ck_assert_int_eq (args.status, 0);
    char *client_path = NULL, *engine_path = NULL;
    zstr_send (self->controller, "CONNFILES");
    zstr_recvx (self->controller, &client_path, &engine_path, NULL);
    ck_assert_ptr_nonnull (engine_path);
    char err[256] = "";
    bn_connfile_t *client = bn_connfile_load (client_path, err, sizeof err);
    ck_assert_msg (client != NULL, "%s", err);
    bn_engine_args_t engines = {engine_path, NULL, self->config,
                                T_ENGINES,   0,    self->dir};
    self->engines = zactor_new (bn_engine_actor, &engines);
    ck_assert_ptr_nonnull (self->engines);
    zstr_sendx (self->engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (self->engines);
    ck_assert_str_eq (answer, "OK");
    zstr_free (&answer);
    self->session = bn_session_new (bn_connfile_key (client), NULL);
    self->query = s_dealer (client, bn_connfile_port (client, "registration"));
    self->mux = s_dealer (client, bn_connfile_port (client, "mux"));
    self->bcast = s_dealer (client, bn_connfile_broadcast (client, 0));
    snprintf (self->bcast_endpoint, sizeof self->bcast_endpoint, "%s:%d",
              bn_connfile_interface (client),
              bn_connfile_broadcast (client, 0));
    bn_connfile_destroy (&client);
    zstr_free (&client_path);
    zstr_free (&engine_path);
    //  the engines by id; the hub lists an engine from its first heartbeat
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    while (true) {
        bn_msg_t *request =
            bn_msg_new (self->session, BN_MSG_CONNECTION_REQUEST);
        ck_assert_int_eq (
            bn_msg_send (&request, zsock_resolve (self->query), self->session),
            0);
        bn_msg_t *reply = bn_msg_recv (zsock_resolve (self->query));
        ck_assert_ptr_nonnull (reply);
        json_t *map = json_object_get (bn_msg_content (reply), "engines");
        bool all = json_object_size (map) == T_ENGINES;
        for (int eid = 0; all && eid < T_ENGINES; eid++) {
            char key[16];
            snprintf (key, sizeof key, "%d", eid);
            const char *uuid = json_string_value (json_object_get (map, key));
            ck_assert_msg (uuid != NULL, "engine %d is not registered", eid);
            self->uuids[eid] = strdup (uuid);
        }
        bn_msg_destroy (&reply);
        if (all)
            break;
        ck_assert_msg (zclock_mono () < give_up, "the engines did not "
                                                 "register");
        zclock_sleep (20);
    }
    //  an engine connects to its leaf a moment after it registers
    int all[T_ENGINES];
    for (int eid = 0; eid < T_ENGINES; eid++)
        all[eid] = eid;
    s_wait_served (self, all, T_ENGINES);
    return self;
}

static t_cluster_t *
s_cluster_new (const char *depth)
{
    return s_cluster_new_hwm (depth, NULL);
}

//  The pids of the tree's node processes, from the controller's STATS.
static size_t
s_node_pids (t_cluster_t *self, pid_t *pids, size_t max)
{
    zstr_send (self->controller, "STATS");
    char *text = zstr_recv (self->controller);
    ck_assert_ptr_nonnull (text);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *tree = json_object_get (stats, "broadcast");
    ck_assert_str_eq (json_string_value (json_object_get (tree, "mode")),
                      "processes");
    json_t *nodes = json_object_get (tree, "nodes");
    size_t count = json_array_size (nodes);
    for (size_t i = 0; i < count && i < max; i++)
        pids[i] = (pid_t)json_integer_value (
            json_object_get (json_array_get (nodes, i), "pid"));
    json_decref (stats);
    return count;
}

//  Restarts of node so far, and whether it is ready.
static int
s_node_restarts (t_cluster_t *self, size_t node, bool *ready)
{
    zstr_send (self->controller, "STATS");
    char *text = zstr_recv (self->controller);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *entry = json_array_get (
        json_object_get (json_object_get (stats, "broadcast"), "nodes"), node);
    *ready =
        streq (json_string_value (json_object_get (entry, "state")), "ready");
    int restarts =
        (int)json_integer_value (json_object_get (entry, "restarts"));
    json_decref (stats);
    return restarts;
}

static bool
s_gone (pid_t pid)
{
    return kill (pid, 0) != 0 && errno == ESRCH;
}

static void
s_cluster_destroy (t_cluster_t **self_p)
{
    t_cluster_t *self = *self_p;
    zactor_destroy (&self->engines);
    zsock_destroy (&self->query);
    zsock_destroy (&self->mux);
    zsock_destroy (&self->bcast);
    zactor_destroy (&self->controller);
    bn_session_destroy (&self->session);
    bn_config_destroy (&self->config);
    for (int eid = 0; eid < T_ENGINES; eid++)
        free (self->uuids[eid]);
    zdir_t *dir = zdir_new (self->dir, NULL);
    if (dir)
        zdir_remove (dir, true);
    zdir_destroy (&dir);
    rmdir (self->dir);
    free (self);
    *self_p = NULL;
}

//  An apply request of the named engine function with one argument.
static bn_msg_t *
s_apply (t_cluster_t *self, const char *function, bn_value_t *arg)
{
    bn_value_t *args = bn_value_new_list ();
    bn_value_append (args, arg);
    zmsg_t *frames = bn_apply_pack_reference (function, args, NULL);
    bn_value_destroy (&args);
    ck_assert_ptr_nonnull (frames);
    bn_msg_t *request = bn_msg_new (self->session, BN_MSG_APPLY_REQUEST);
    zframe_t *frame;
    while ((frame = zmsg_pop (frames))) {
        bn_msg_add_buffer (request, zframe_data (frame), zframe_size (frame));
        zframe_destroy (&frame);
    }
    zmsg_destroy (&frames);
    return request;
}

//  Each engine's reply buffers to an echo of payload, through the mux.
static zlist_t *
s_direct (t_cluster_t *self, int eid, const char *payload)
{
    bn_msg_t *request =
        s_apply (self, "echo", bn_value_new_bytes (payload, strlen (payload)));
    bn_msg_push_ident (request, self->uuids[eid], strlen (self->uuids[eid]));
    ck_assert_int_eq (
        bn_msg_send (&request, zsock_resolve (self->mux), self->session), 0);
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (self->mux));
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "status")),
        "ok");
    zlist_t *buffers = zlist_new ();
    for (size_t b = 0; b < bn_msg_nbuffers (reply); b++) {
        zmq_msg_t *part = bn_msg_buffer (reply, b);
        zlist_append (buffers,
                      zchunk_new (zmq_msg_data (part), zmq_msg_size (part)));
    }
    bn_msg_destroy (&reply);
    return buffers;
}

static void
s_buffers_destroy (zlist_t **buffers)
{
    zchunk_t *chunk;
    while ((chunk = (zchunk_t *)zlist_pop (*buffers)))
        zchunk_destroy (&chunk);
    zlist_destroy (buffers);
}

//  Send a broadcast of request to engines eids[0..n-1], with extra
//  metadata (taken, or NULL).
static void
s_bcast_send_with (t_cluster_t *self, bn_msg_t **request, const int *eids,
                   size_t n, bool coalescing, json_t *extra)
{
    json_t *targets = json_array ();
    for (size_t i = 0; i < n; i++)
        json_array_append_new (
            targets, json_pack ("[s,i]", self->uuids[eids[i]], eids[i]));
    json_t *metadata =
        json_pack ("{s:o, s:b, s:b}", "targets", targets, "is_broadcast", 1,
                   "is_coalescing", coalescing ? 1 : 0);
    if (extra)
        json_object_update (metadata, extra);
    json_decref (extra);
    bn_msg_set_metadata (*request, metadata);
    ck_assert_int_eq (
        bn_msg_send (request, zsock_resolve (self->bcast), self->session), 0);
}

static void
s_bcast_send (t_cluster_t *self, bn_msg_t **request, const int *eids, size_t n,
              bool coalescing)
{
    s_bcast_send_with (self, request, eids, n, coalescing, NULL);
}

static int
s_eid_of (t_cluster_t *self, const char *uuid)
{
    for (int eid = 0; eid < T_ENGINES; eid++)
        if (uuid && streq (uuid, self->uuids[eid]))
            return eid;
    return -1;
}

//  Broadcast an echo to every engine, coalescing or not, and check that
//  each engine's result is what the direct view gets.
static void
s_check_same_as_direct (t_cluster_t *self, bool coalescing)
{
    const char *payload = coalescing ? "merged payload" : "forwarded payload";
    zlist_t *direct[T_ENGINES];
    for (int eid = 0; eid < T_ENGINES; eid++)
        direct[eid] = s_direct (self, eid, payload);
    int eids[T_ENGINES];
    for (int eid = 0; eid < T_ENGINES; eid++)
        eids[eid] = eid;
    bn_msg_t *request =
        s_apply (self, "echo", bn_value_new_bytes (payload, strlen (payload)));
    char *msg_id = strdup (bn_msg_id (request));
    s_bcast_send (self, &request, eids, T_ENGINES, coalescing);
    bool seen[T_ENGINES] = {false};
    if (coalescing) {
        bn_msg_t *reply = bn_msg_recv (zsock_resolve (self->bcast));
        ck_assert_ptr_nonnull (reply);
        ck_assert_int_eq (bn_msg_verify (reply, self->session, true), 0);
        ck_assert_str_eq (json_string_value (json_object_get (
                              bn_msg_content (reply), "status")),
                          "ok");
        json_t *metadata = bn_msg_metadata (reply);
        ck_assert_str_eq (
            json_string_value (json_object_get (metadata, "original_msg_id")),
            msg_id);
        json_t *targets = json_object_get (metadata, "broadcast_targets");
        ck_assert_int_eq (json_array_size (targets), T_ENGINES);
        //  the buffers are each engine's, in broadcast_targets order
        size_t at = 0;
        for (size_t i = 0; i < T_ENGINES; i++) {
            json_t *pair = json_array_get (targets, i);
            int eid =
                s_eid_of (self, json_string_value (json_array_get (pair, 0)));
            ck_assert_int_ge (eid, 0);
            ck_assert_int_eq (json_integer_value (json_array_get (pair, 1)),
                              eid);
            ck_assert (!seen[eid]);
            seen[eid] = true;
            for (zchunk_t *chunk = (zchunk_t *)zlist_first (direct[eid]); chunk;
                 chunk = (zchunk_t *)zlist_next (direct[eid])) {
                ck_assert_uint_lt (at, bn_msg_nbuffers (reply));
                zmq_msg_t *part = bn_msg_buffer (reply, at++);
                ck_assert_uint_eq (zmq_msg_size (part), zchunk_size (chunk));
                ck_assert_mem_eq (zmq_msg_data (part), zchunk_data (chunk),
                                  zchunk_size (chunk));
            }
        }
        ck_assert_uint_eq (at, bn_msg_nbuffers (reply));
        bn_msg_destroy (&reply);
    } else {
        for (size_t i = 0; i < T_ENGINES; i++) {
            bn_msg_t *reply = bn_msg_recv (zsock_resolve (self->bcast));
            ck_assert_ptr_nonnull (reply);
            ck_assert_int_eq (bn_msg_verify (reply, self->session, true), 0);
            //  the stock client matches "<msg_id>_<engine uuid>"
            const char *parent = bn_msg_parent_id (reply);
            ck_assert_ptr_nonnull (parent);
            size_t len = strlen (msg_id);
            ck_assert (strncmp (parent, msg_id, len) == 0 &&
                       parent[len] == '_');
            int eid = s_eid_of (self, parent + len + 1);
            ck_assert_int_ge (eid, 0);
            ck_assert (!seen[eid]);
            seen[eid] = true;
            ck_assert_uint_eq (bn_msg_nbuffers (reply),
                               zlist_size (direct[eid]));
            size_t at = 0;
            for (zchunk_t *chunk = (zchunk_t *)zlist_first (direct[eid]); chunk;
                 chunk = (zchunk_t *)zlist_next (direct[eid])) {
                zmq_msg_t *part = bn_msg_buffer (reply, at++);
                ck_assert_uint_eq (zmq_msg_size (part), zchunk_size (chunk));
                ck_assert_mem_eq (zmq_msg_data (part), zchunk_data (chunk),
                                  zchunk_size (chunk));
            }
            bn_msg_destroy (&reply);
        }
    }
    for (int eid = 0; eid < T_ENGINES; eid++)
        s_buffers_destroy (&direct[eid]);
    free (msg_id);
}

//  Coalescing echo to engines eids; true if every engine answered ok.
static bool
s_bcast_ok (t_cluster_t *self, const int *eids, size_t n)
{
    bn_msg_t *request = s_apply (self, "echo", bn_value_new_bytes ("x", 1));
    s_bcast_send (self, &request, eids, n, true);
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (self->bcast));
    ck_assert_ptr_nonnull (reply);
    const char *status =
        json_string_value (json_object_get (bn_msg_content (reply), "status"));
    bool ok = status && streq (status, "ok") &&
              json_array_size (json_object_get (bn_msg_metadata (reply),
                                                "broadcast_targets")) == n;
    if (!ok && getenv ("T_DEBUG"))
        bn_msg_print (reply);
    bn_msg_destroy (&reply);
    return ok;
}

//  Wait until node has been restarted (restarts > before) and is ready.
static void
s_wait_restarted (t_cluster_t *self, size_t node, int before)
{
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    bool ready = false;
    while (s_node_restarts (self, node, &ready) <= before || !ready) {
        ck_assert_msg (zclock_mono () < give_up, "node %zu was not restarted",
                       node);
        zclock_sleep (10);
    }
}

//  Wait until every thread of process pid is stopped (a SIGSTOP is
//  taken by each thread as it next runs: until then it may still serve).
static void
s_wait_stopped (pid_t pid)
{
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/task", (int)pid);
    while (true) {
        DIR *dir = opendir (path);
        ck_assert_ptr_nonnull (dir);
        bool stopped = true;
        size_t threads = 0;
        struct dirent *entry;
        while (stopped && (entry = readdir (dir))) {
            if (entry->d_name[0] == '.')
                continue;
            char stat[384];
            snprintf (stat, sizeof stat, "%s/%s/stat", path, entry->d_name);
            FILE *in = fopen (stat, "r");
            char state = 0;
            //  "tid (comm) state ...": comm may hold spaces, not ')'
            if (in && fscanf (in, "%*d (%*[^)]) %c", &state) != 1)
                state = 0;
            if (in)
                fclose (in);
            stopped = state == 'T' || state == 't';
            threads++;
        }
        closedir (dir);
        stopped = stopped && threads > 0;
        if (stopped)
            return;
        ck_assert_msg (zclock_mono () < give_up, "process %d did not stop",
                       (int)pid);
        zclock_sleep (5);
    }
}

//  Broadcast to eids until all answer: engines connect to their leaves,
//  and a restarted node's links and its engines' connections come back, by
//  themselves a moment after the registration or the restart; until then
//  the tree answers at once that they cannot be reached. Fails if they are
//  not served within T_TIMEOUT.
static void
s_wait_served (t_cluster_t *self, const int *eids, size_t n)
{
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    while (!s_bcast_ok (self, eids, n)) {
        ck_assert_msg (zclock_mono () < give_up,
                       "the restarted subtree is not served");
        zclock_sleep (20);
    }
}

START_TEST (test_depth1)
{
    t_cluster_t *cluster = s_cluster_new ("1");
    pid_t pids[8];
    ck_assert_uint_eq (s_node_pids (cluster, pids, 8), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_gt (pids[i], 0);
    s_check_same_as_direct (cluster, true);
    s_check_same_as_direct (cluster, false);
    //  the root's reports reach the hub's records: the broadcast is in the
    //  history, as in threads mode
    int all[] = {0, 1, 2, 3};
    bn_msg_t *request = s_apply (cluster, "echo", bn_value_new_bytes ("h", 1));
    char *msg_id = strdup (bn_msg_id (request));
    s_bcast_send (cluster, &request, all, 4, true);
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (cluster->bcast));
    ck_assert_ptr_nonnull (reply);
    bn_msg_destroy (&reply);
    bool found = false;
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    while (!found && zclock_mono () < give_up) {
        request = bn_msg_new (cluster->session, BN_MSG_HISTORY_REQUEST);
        ck_assert_int_eq (bn_msg_send (&request, zsock_resolve (cluster->query),
                                       cluster->session),
                          0);
        reply = bn_msg_recv (zsock_resolve (cluster->query));
        ck_assert_ptr_nonnull (reply);
        json_t *history = json_object_get (bn_msg_content (reply), "history");
        for (size_t i = 0; i < json_array_size (history); i++) {
            const char *id = json_string_value (json_array_get (history, i));
            if (id && strncmp (id, msg_id, strlen (msg_id)) == 0)
                found = true;
        }
        bn_msg_destroy (&reply);
        if (!found)
            zclock_sleep (20);
    }
    ck_assert_msg (found, "broadcast %s is not in the history", msg_id);
    free (msg_id);
    //  each node's own counters, as in threads mode: nothing in flight
    zstr_send (cluster->controller, "STATS");
    char *text = zstr_recv (cluster->controller);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *tree = json_object_get (stats, "broadcast");
    ck_assert (json_is_integer (json_object_get (tree, "requests")));
    ck_assert_int_eq (json_integer_value (json_object_get (tree, "requests")),
                      0);
    json_t *nodes = json_object_get (tree, "nodes");
    for (size_t i = 0; i < 3; i++)
        ck_assert (json_is_integer (
            json_object_get (json_array_get (nodes, i), "requests")));
    json_decref (stats);
    s_cluster_destroy (&cluster);
    //  stopping the controller leaves no node process
    for (size_t i = 0; i < 3; i++)
        ck_assert (s_gone (pids[i]));
}
END_TEST

START_TEST (test_depth2)
{
    t_cluster_t *cluster = s_cluster_new ("2");
    pid_t pids[8];
    ck_assert_uint_eq (s_node_pids (cluster, pids, 8), 7);
    s_check_same_as_direct (cluster, true);
    s_check_same_as_direct (cluster, false);
    //  every node process loaded the reduction plugin
    int all[] = {0, 1, 2, 3};
    bn_msg_t *request = s_apply (cluster, "echo", bn_value_new_bytes ("x", 1));
    s_bcast_send_with (cluster, &request, all, 4, true,
                       json_pack ("{s:s}", "bn_reduce", "example:count"));
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (cluster->bcast));
    ck_assert_ptr_nonnull (reply);
    json_t *reduced = json_object_get (bn_msg_metadata (reply), "bn_reduced");
    ck_assert_str_eq (json_string_value (json_object_get (reduced, "op")),
                      "example:count");
    ck_assert_str_eq (json_string_value (json_object_get (reduced, "engines")),
                      "0-3");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
    zmq_msg_t *buffer = bn_msg_buffer (reply, 0);
    char err[128];
    bn_value_t *count = bn_pickle_decode (
        zmq_msg_data (buffer), zmq_msg_size (buffer), err, sizeof err);
    ck_assert_msg (count != NULL, "%s", err);
    ck_assert_int_eq (bn_value_int (count), 4);
    bn_value_destroy (&count);
    bn_msg_destroy (&reply);
    s_cluster_destroy (&cluster);
    for (size_t i = 0; i < 7; i++)
        ck_assert (s_gone (pids[i]));
}
END_TEST

START_TEST (test_node_killed)
{
    //  kary:2 depth 2: node 1 is the parent of leaves 3 and 4, which serve
    //  engines 0 and 1 (e % 4); node 5 is the leaf of engine 2
    t_cluster_t *cluster = s_cluster_new ("2");
    pid_t pids[8];
    s_node_pids (cluster, pids, 8);
    int subtree[] = {0, 1};
    //  a request waiting on node 1 fails as soon as node 1 dies, naming
    //  its engines, although the engines are still busy
    bn_msg_t *request = s_apply (cluster, "sleep", bn_value_new_float (2.0));
    s_bcast_send (cluster, &request, subtree, 2, true);
    zclock_sleep (100);
    ck_assert_int_eq (kill (pids[1], SIGKILL), 0);
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (cluster->bcast));
    ck_assert_ptr_nonnull (reply);
    json_t *content = bn_msg_content (reply);
    ck_assert_str_eq (json_string_value (json_object_get (content, "status")),
                      "error");
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "EngineError");
    json_t *metadata = bn_msg_metadata (reply);
    json_t *targets = json_object_get (metadata, "broadcast_targets");
    json_t *replies = json_object_get (metadata, "bn_replies");
    ck_assert_int_eq (json_array_size (targets), 2);
    ck_assert_int_eq (json_array_size (replies), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *entry = json_array_get (replies, i);
        ck_assert_str_eq (json_string_value (json_object_get (entry, "status")),
                          "error");
        ck_assert_str_eq (json_string_value (json_object_get (
                              json_object_get (entry, "content"), "ename")),
                          "EngineError");
        int eid = (int)json_integer_value (
            json_array_get (json_array_get (targets, i), 1));
        ck_assert (eid == 0 || eid == 1);
        //  the error names the engine
        const char *evalue = json_string_value (
            json_object_get (json_object_get (entry, "content"), "evalue"));
        ck_assert_ptr_nonnull (evalue);
        ck_assert_ptr_nonnull (strstr (evalue, cluster->uuids[eid]));
    }
    bn_msg_destroy (&reply);
    //  restarted; the next broadcasts reach its whole subtree
    s_wait_restarted (cluster, 1, 0);
    ck_assert (s_gone (pids[1]));
    s_wait_served (cluster, subtree, 2);
    //  a leaf killed with a request waiting on it: its parent fails it at
    //  once; restarted, its engines reconnect to the same port
    int leaf_engines[] = {2};
    s_node_pids (cluster, pids, 8);
    request = s_apply (cluster, "sleep", bn_value_new_float (2.0));
    s_bcast_send (cluster, &request, leaf_engines, 1, true);
    zclock_sleep (100);
    ck_assert_int_eq (kill (pids[5], SIGKILL), 0);
    reply = bn_msg_recv (zsock_resolve (cluster->bcast));
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "EngineError");
    ck_assert_ptr_nonnull (strstr (
        json_string_value (json_object_get (bn_msg_content (reply), "evalue")),
        cluster->uuids[2]));
    bn_msg_destroy (&reply);
    s_wait_restarted (cluster, 5, 0);
    s_wait_served (cluster, leaf_engines, 1);
    //  and the whole tree still answers as the direct view does
    s_check_same_as_direct (cluster, true);
    s_node_pids (cluster, pids, 8);
    s_cluster_destroy (&cluster);
    for (size_t i = 0; i < 7; i++)
        ck_assert (s_gone (pids[i]));
}
END_TEST

//  The controller's STATS value at path (keys, NULL-terminated) as an
//  integer; -1 if absent.
static json_int_t
s_stat (t_cluster_t *self, ...)
{
    zstr_send (self->controller, "STATS");
    char *text = zstr_recv (self->controller);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *value = stats;
    va_list keys;
    va_start (keys, self);
    const char *key;
    while ((key = va_arg (keys, const char *)))
        value = json_object_get (value, key);
    va_end (keys);
    json_int_t result =
        json_is_integer (value) ? json_integer_value (value) : -1;
    json_decref (stats);
    return result;
}

START_TEST (test_root_killed)
{
    //  hwm 4: the root holds four requests, and the link to it four more
    //  (less starves the engines' registration and heartbeats)
    t_cluster_t *cluster = s_cluster_new_hwm ("1", "4");
    pid_t pids[8];
    s_node_pids (cluster, pids, 8);
    //  a request under a msg_id in flight is refused at once, as the root
    //  refuses it, and the one in flight is still answered when the root
    //  dies
    int third[] = {2}, all[] = {0, 1, 2, 3};
    bn_msg_t *request = s_apply (cluster, "sleep", bn_value_new_float (1.0));
    char *busy = strdup (bn_msg_id (request));
    s_bcast_send (cluster, &request, third, 1, true);
    request = s_apply (cluster, "echo", bn_value_new_bytes ("d", 1));
    bn_msg_set_msg_id (request, busy);
    s_bcast_send (cluster, &request, third, 1, true);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *reply = bn_msg_recv (zsock_resolve (cluster->bcast));
        ck_assert_ptr_nonnull (reply);
        ck_assert_str_eq (json_string_value (json_object_get (
                              bn_msg_metadata (reply), "original_msg_id")),
                          busy);
        ck_assert_str_eq (json_string_value (json_object_get (
                              bn_msg_content (reply), "ename")),
                          i ? "EngineError" : "KeyError");
        bn_msg_destroy (&reply);
        if (i == 0)
            ck_assert_int_eq (kill (pids[0], SIGKILL), 0);
    }
    free (busy);
    s_wait_restarted (cluster, 0, 0);
    s_wait_served (cluster, all, 4);
    s_node_pids (cluster, pids, 8);
    //  the root stopped: a non-coalescing request to engines 1 and 3, then
    //  twelve coalescing ones of 1 MiB to engine 0: the link fills, the
    //  controller holds one and leaves the others waiting in its port
    ck_assert_int_eq (kill (pids[0], SIGSTOP), 0);
    s_wait_stopped (pids[0]);
    int odd[] = {1, 3}, first[] = {0};
    request = s_apply (cluster, "echo", bn_value_new_bytes ("f", 1));
    char *forwarded = strdup (bn_msg_id (request));
    s_bcast_send (cluster, &request, odd, 2, false);
    size_t size = 1 << 20;
    char *payload = calloc (1, size);
    zhashx_t *merged = zhashx_new ();
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    for (int i = 0; i < 12; i++) {
        request = s_apply (cluster, "echo", bn_value_new_bytes (payload, size));
        zhashx_insert (merged, bn_msg_id (request), (void *)1);
        s_bcast_send (cluster, &request, first, 1, true);
    }
    //  (each STATS waits a second for the stopped root)
    while (s_stat (cluster, "broadcast", "front", "held", NULL) < 1)
        ck_assert_msg (zclock_mono () < give_up, "no request was held");
    free (payload);
    //  killed: each one that went to it is answered with EngineError, the
    //  engines named, in the shape the client waits for; the held one, and
    //  those waiting behind it, too, or (once the root is back) served
    ck_assert_int_eq (kill (pids[0], SIGKILL), 0);
    size_t owed = zhashx_size (merged) + 2, failed = 0;
    for (size_t i = 0; i < owed; i++) {
        bn_msg_t *reply = bn_msg_recv (zsock_resolve (cluster->bcast));
        ck_assert_ptr_nonnull (reply);
        ck_assert_int_eq (bn_msg_verify (reply, cluster->session, true), 0);
        json_t *content = bn_msg_content (reply);
        const char *status =
            json_string_value (json_object_get (content, "status"));
        if (status && streq (status, "ok")) {
            ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
            ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (reply, 0)), size);
        } else {
            ck_assert_str_eq (
                json_string_value (json_object_get (content, "ename")),
                "EngineError");
            failed++;
        }
        json_t *metadata = bn_msg_metadata (reply);
        const char *original =
            json_string_value (json_object_get (metadata, "original_msg_id"));
        ck_assert_ptr_nonnull (original);
        if (streq (original, forwarded)) {
            //  one reply per engine, "<original>_<uuid>"
            const char *parent = bn_msg_parent_id (reply);
            int eid = s_eid_of (cluster, parent + strlen (forwarded) + 1);
            ck_assert_msg (eid == 1 || eid == 3, "%s", parent);
            ck_assert_ptr_nonnull (
                strstr (json_string_value (json_object_get (content, "evalue")),
                        cluster->uuids[eid]));
        } else {
            ck_assert_msg (zhashx_lookup (merged, original), "%s", original);
            zhashx_delete (merged, original);
            if (status && streq (status, "ok")) {
                bn_msg_destroy (&reply);
                continue;
            }
            json_t *entry =
                json_array_get (json_object_get (metadata, "bn_replies"), 0);
            ck_assert_str_eq (
                json_string_value (json_object_get (entry, "status")), "error");
            ck_assert_str_eq (
                json_string_value (json_array_get (
                    json_array_get (
                        json_object_get (metadata, "broadcast_targets"), 0),
                    0)),
                cluster->uuids[0]);
            ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
        }
        bn_msg_destroy (&reply);
    }
    ck_assert_uint_eq (zhashx_size (merged), 0);
    //  the non-coalescing request's two, the three coalescing ones at least
    //  that filled the link (hwm 4) beside it, and the one held
    ck_assert_uint_ge (failed, 6);
    zhashx_destroy (&merged);
    free (forwarded);
    //  restarted, the tree serves every engine again, and the records hold
    //  nothing pending
    s_wait_restarted (cluster, 0, 1);
    s_wait_served (cluster, all, 4);
    give_up = zclock_mono () + T_TIMEOUT;
    while (s_stat (cluster, "records", "pending", NULL) != 0) {
        ck_assert_msg (zclock_mono () < give_up, "records left pending");
        zclock_sleep (20);
    }
    ck_assert_int_eq (s_stat (cluster, "broadcast", "front", "in_flight", NULL),
                      0);
    ck_assert_int_ge (s_stat (cluster, "broadcast", "front", "failed", NULL),
                      2);
    s_cluster_destroy (&cluster);
}
END_TEST

//  A client that sends broadcasts and vanishes before they are answered:
//  the controller's front still sees each through, so that nothing stays
//  in flight or pending (the replies to the gone client are counted), and
//  the next client is served.
START_TEST (test_client_gone)
{
    t_cluster_t *cluster = s_cluster_new ("1");
    zsock_t *gone = zsock_new (ZMQ_DEALER);
    ck_assert_ptr_nonnull (gone);
    zsock_set_linger (gone, 0);
    ck_assert_int_eq (zsock_connect (gone, "%s", cluster->bcast_endpoint), 0);
    int all[] = {0, 1, 2, 3}, half[] = {1, 2};
    for (int i = 0; i < 6; i++) {
        bn_msg_t *request =
            s_apply (cluster, "sleep", bn_value_new_float (0.5));
        json_t *targets = json_array ();
        const int *eids = i % 2 ? half : all;
        size_t n = i % 2 ? 2 : 4;
        for (size_t e = 0; e < n; e++)
            json_array_append_new (
                targets, json_pack ("[s,i]", cluster->uuids[eids[e]], eids[e]));
        bn_msg_set_metadata (request,
                             json_pack ("{s:o, s:b, s:b}", "targets", targets,
                                        "is_broadcast", 1, "is_coalescing",
                                        i < 3 ? 1 : 0));
        ck_assert_int_eq (
            bn_msg_send (&request, zsock_resolve (gone), cluster->session), 0);
    }
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    while (s_stat (cluster, "broadcast", "front", "requests", NULL) < 6)
        ck_assert_msg (zclock_mono () < give_up, "the requests did not come");
    zsock_destroy (&gone);
    give_up = zclock_mono () + T_TIMEOUT;
    while (s_stat (cluster, "broadcast", "front", "in_flight", NULL) != 0 ||
           s_stat (cluster, "records", "pending", NULL) != 0) {
        ck_assert_msg (zclock_mono () < give_up,
                       "broadcasts of a gone client left in flight");
        zclock_sleep (20);
    }
    ck_assert_int_ge (
        s_stat (cluster, "broadcast", "front", "client_gone", NULL), 1);
    ck_assert_int_eq (s_stat (cluster, "broadcast", "front", "failed", NULL),
                      0);
    s_wait_served (cluster, all, 4);
    s_cluster_destroy (&cluster);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("cluster_treeproc");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_depth1);
    tcase_add_test (tc, test_depth2);
    tcase_add_test (tc, test_node_killed);
    tcase_add_test (tc, test_root_killed);
    tcase_add_test (tc, test_client_gone);
    suite_add_tcase (suite, tc);
    return suite;
}

int
main (void)
{
    SRunner *runner = srunner_create (s_suite ());
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? 1 : 0;
}

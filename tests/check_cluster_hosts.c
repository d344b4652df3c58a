/*  check_cluster_hosts: engines behind a host node (doc/hosts.md), with the
    controller, the host node and the engines as actors of this process and
    a libbanyan client: what a client sees of engines on another host.  */
#include <dirent.h>
#include <pthread.h>

#include "banyan.h"
#include "bn_ctltest.h"
#include "bn_engine_actor.h"
#include "bn_hostnode.h"
#include "bn_log.h"

//  Host node port ranges of test_ports: BN_HOSTNODE_PORTS ports each, from
//  a block no other test binds from (check_bn_wire searches 62500-63499),
//  above Linux's ephemeral ports (32768-60999), which outgoing connections
//  take
#define S_LOWEST_PORT 63600
#define S_HIGHEST_PORT 63699

static char s_dir[256];        //  the controller's profile folder
static char s_host_dir[300];   //  the host node's
static bn_config_t *s_config;  //  settings of the controller and engines
static zactor_t *s_controller; //  the controller
static zactor_t *s_host;       //  the host node
static char *s_host_file;      //  its connection file
static char *s_engine_file;    //  the controller's engine connection file

//  The text of file path (caller frees).
static char *
s_slurp (const char *path)
{
    FILE *file = fopen (path, "r");
    ck_assert_ptr_nonnull (file);
    char *text = NULL;
    size_t size = 0;
    ck_assert_int_gt (getdelim (&text, &size, 0, file), 0);
    fclose (file);
    return text;
}

//  Start a host node for the controller, from the JSON of its engine file,
//  and wait until it says READY.
static void
s_start_host (const char *engine_file)
{
    char *info = s_slurp (engine_file);
    snprintf (s_host_dir, sizeof s_host_dir, "%s/h1", s_dir);
    char path[400];
    snprintf (path, sizeof path, "%s/security/ipcontroller-engine.json",
              s_host_dir);
    bn_hostnode_args_t args = {.connection_info = info,
                               .name = "h1",
                               .connfile_path = path,
                               .registration_timeout_ms = 10000,
                               .connect_grace_ms = 3000,
                               .status = -1};
    s_host = zactor_new (bn_hostnode_actor, &args);
    free (info);
    ck_assert_ptr_nonnull (s_host);
    ck_assert_int_eq (args.status, 0);
    zpoller_t *poller = zpoller_new (s_host, NULL);
    ck_assert_ptr_nonnull (zpoller_wait (poller, 10000));
    zpoller_destroy (&poller);
    char *ready = NULL;
    zstr_recvx (s_host, &ready, &s_host_file, NULL);
    ck_assert_str_eq (ready, "READY");
    ck_assert_str_eq (s_host_file, path);
    zstr_free (&ready);
}

//  A controller beating every period ms, misses allowed, and a host node;
//  a broadcast tree of depth (NULL: the default), its nodes banyan-scheduler
//  processes when processes is set; CURVE on the controller's sockets when
//  curve is set.
static void
s_start_tree (const char *period, const char *misses, const char *depth,
              bool processes, bool curve)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/bn-check-cluster-hosts-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    s_config = bn_config_new ();
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_period",
                                     period, BN_CONFIG_CMDLINE),
                      0);
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_misses",
                                     misses, BN_CONFIG_CMDLINE),
                      0);
    if (depth)
        ck_assert_int_eq (bn_config_set (s_config, "controller.depth", depth,
                                         BN_CONFIG_CMDLINE),
                          0);
    if (curve)
        ck_assert_int_eq (bn_config_set (s_config, "controller.curve", "true",
                                         BN_CONFIG_CMDLINE),
                          0);
    if (processes) {
        ck_assert_int_eq (bn_config_set (s_config, "controller.tree_mode",
                                         "processes", BN_CONFIG_CMDLINE),
                          0);
        ck_assert_int_eq (bn_config_set (s_config, "controller.scheduler_path",
                                         BN_BUILD_DIR "/bin/banyan-scheduler",
                                         BN_CONFIG_CMDLINE),
                          0);
    }
    bn_controller_args_t args = {s_config, s_dir, 0};
    s_controller = zactor_new (bn_controller_actor, &args);
    ck_assert_ptr_nonnull (s_controller);
    ck_assert_int_eq (args.status, 0);
    zstr_send (s_controller, "CONNFILES");
    char *client_file = NULL, *engine_file = NULL;
    zstr_recvx (s_controller, &client_file, &engine_file, NULL);
    ck_assert_ptr_nonnull (engine_file);
    s_start_host (engine_file);
    s_engine_file = engine_file;
    zstr_free (&client_file);
}

static void
s_start (const char *period, const char *misses)
{
    s_start_tree (period, misses, NULL, false, false);
}

//  count banyan engines connected to file (the host node's or the
//  controller's), registered.
static zactor_t *
s_start_engines_of (const char *file, int count)
{
    bn_engine_args_t args = {file, NULL, s_config, count, -1, s_dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (engines);
    zstr_sendx (engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (engines);
    ck_assert_str_eq (answer, "OK");
    zstr_free (&answer);
    return engines;
}

//  count banyan engines connected to the host node, registered.
static zactor_t *
s_start_engines (int count)
{
    return s_start_engines_of (s_host_file, count);
}

static void
s_stop (void)
{
    zactor_destroy (&s_host);
    zactor_destroy (&s_controller);
    bn_config_destroy (&s_config);
    zstr_free (&s_host_file);
    zstr_free (&s_engine_file);
    char command[300];
    snprintf (command, sizeof command, "rm -rf '%s'", s_dir);
    ck_assert_int_eq (system (command), 0);
}

static bn_client_t *
s_client (size_t engines)
{
    int rc;
    bn_client_t *client = bn_client_new (s_dir, 10, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, engines, 20), 0);
    return client;
}

//  One counter of the controller's actor as the client reads it.
static json_int_t
s_stat (bn_client_t *client, const char *actor, const char *counter)
{
    char *text = NULL;
    ck_assert_int_eq (bn_client_stats (client, 10, &text), 0);
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    json_int_t value = t_counter (stats, actor, counter);
    json_decref (stats);
    return value;
}

//  One counter of the host node, or of its broadcast leaf (leaf true).
static json_int_t
s_host_counter (const char *counter, bool leaf)
{
    zstr_send (s_host, "STATS");
    char *text = zstr_recv (s_host);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *value = json_object_get (
        leaf ? json_object_get (stats, "broadcast") : stats, counter);
    ck_assert_msg (json_is_integer (value), "no host counter %s", counter);
    json_int_t result = json_integer_value (value);
    json_decref (stats);
    return result;
}

static json_int_t
s_host_stat (const char *counter)
{
    return s_host_counter (counter, false);
}

//  A tuple of one argument (taken).
static bn_value_t *
s_args1 (bn_value_t *value)
{
    bn_value_t *args = bn_value_new_tuple ();
    ck_assert_int_eq (bn_value_append (args, value), 0);
    return args;
}

//  Wait until the client knows count engines.
static void
s_wait_count (bn_client_t *client, size_t count, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (bn_client_engine_count (client) != count && zclock_mono () < end)
        zclock_sleep (5);
    ck_assert_uint_eq (bn_client_engine_count (client), count);
}

START_TEST (test_usage)
{
    //  a controller, a host node, and four engines on the node's host
    s_start ("100", "50");
    zactor_t *engines = s_start_engines (4);
    bn_client_t *client = s_client (4);
    ck_assert_int_eq (s_stat (client, "hub", "hosts"), 1);
    ck_assert_int_eq (s_stat (client, "hub", "host_engines"), 4);
    ck_assert_int_eq (s_host_stat ("engines"), 4);
    //  the four share their process's connections to the host node
    ck_assert_int_eq (s_host_stat ("shared"), 4);

    //  direct requests reach every engine, and their output comes back
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "echo hi", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq (bn_result_stdout (result, i), "hi\n");
    bn_result_destroy (&result);
    ck_assert_int_gt (s_host_stat ("iopub"), 0);

    //  an apply with arguments, and its value
    bn_value_t *args = s_args1 (bn_value_new_int (42));
    ck_assert_int_eq (bn_view_apply (direct, "echo", args, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), 42);
    bn_result_destroy (&result);

    //  load-balanced tasks run on them too
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    bn_result_t *tasks[8];
    for (int n = 0; n < 8; n++)
        ck_assert_int_eq (bn_view_apply (lb, "echo", args, NULL, &tasks[n]), 0);
    for (int n = 0; n < 8; n++) {
        ck_assert_int_eq (bn_result_get (tasks[n], 20), 0);
        ck_assert_int_eq (bn_value_int (bn_result_value (tasks[n], 0)), 42);
        bn_result_destroy (&tasks[n]);
    }
    bn_value_destroy (&args);

    //  control requests reach them: a queued request is aborted
    int one = 0;
    bn_view_t *single = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (single, &one, 1), 0);
    bn_result_t *busy = NULL, *queued = NULL;
    ck_assert_int_eq (bn_view_execute (single, "sleep 0.5", &busy), 0);
    ck_assert_int_eq (bn_view_execute (single, "echo never", &queued), 0);
    ck_assert_int_eq (bn_view_abort (single, queued, 10), 0);
    ck_assert_int_eq (bn_result_get (queued, 20), BN_EABORTED);
    ck_assert_int_eq (bn_result_get (busy, 20), 0);
    bn_result_destroy (&busy);
    bn_result_destroy (&queued);
    bn_view_destroy (&single);
    ck_assert_int_gt (s_host_stat ("down"), 0);
    ck_assert_int_gt (s_host_stat ("up"), 0);
    ck_assert_int_eq (s_host_stat ("bad_signature"), 0);

    bn_view_destroy (&lb);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    zactor_destroy (&engines);
    s_stop ();
}
END_TEST

//  Broadcasts to four engines behind the host node and one engine of the
//  controller, through a tree of depth: one copy reaches the host node.
static void
s_broadcasts (const char *depth, bool processes, bool curve)
{
    s_start_tree ("100", "50", depth, processes, curve);
    zactor_t *hosted = s_start_engines (4);
    zactor_t *direct = s_start_engines_of (s_engine_file, 1);
    bn_client_t *client = s_client (5);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    int runs = 0;
    for (int coalescing = 0; coalescing < 2; coalescing++) {
        ck_assert_int_eq (bn_view_set_coalescing (view, coalescing), 0);
        bn_result_t *result = NULL;
        ck_assert_int_eq (bn_view_execute (view, "echo b", &result), 0);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_uint_eq (bn_result_count (result), 5);
        for (size_t i = 0; i < 5; i++)
            ck_assert_str_eq (bn_result_stdout (result, i), "b\n");
        bn_result_destroy (&result);
        bn_value_t *args = s_args1 (bn_value_new_int (7));
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        bn_value_destroy (&args);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_uint_eq (bn_result_count (result), 5);
        for (size_t i = 0; i < 5; i++)
            ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), 7);
        bn_result_destroy (&result);
        runs += 2;
    }
    //  the host node's leaf got each request once and sent each of its
    //  engines a copy
    ck_assert_int_eq (s_host_counter ("received", true), runs);
    ck_assert_int_eq (s_host_counter ("to_engines", true), 4 * runs);
    ck_assert_int_eq (s_host_counter ("requests", true), 0);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    zactor_destroy (&direct);
    zactor_destroy (&hosted);
    s_stop ();
}

START_TEST (test_broadcast)
{
    //  the default tree, two leaves: the host node hangs below one of them
    s_broadcasts (NULL, false, false);
}
END_TEST

START_TEST (test_broadcast_deeper)
{
    //  depth 0, the root serving all; depth 2, the inner nodes routing the
    //  host node's engines toward its leaf
    s_broadcasts ("0", false, false);
    s_broadcasts ("2", false, false);
}
END_TEST

START_TEST (test_broadcast_processes)
{
    //  the tree's nodes as banyan-scheduler processes
    s_broadcasts ("2", true, false);
}
END_TEST

START_TEST (test_broadcast_curve)
{
    //  CURVE on the controller's sockets: the host node's leaf is a CURVE
    //  client of its parent, and its engines reach it as without
    s_broadcasts (NULL, false, true);
}
END_TEST

//  A stock-like engine of the host node made of sockets, which can die
//  without a word.
typedef struct {
    char uuid[40];
    int id;
    bn_session_t *session;
    zsock_t *reg, *shell, *hb_sub, *hb_dealer;
} s_fake_t;

static s_fake_t *
s_fake_new (void)
{
    s_fake_t *self = calloc (1, sizeof *self);
    char err[256] = "";
    bn_connfile_t *file = bn_connfile_load (s_host_file, err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    bn_session_new_id (self->uuid);
    self->session = bn_session_new (bn_connfile_key (file), self->uuid);
    self->reg = t_sock (ZMQ_DEALER, self->uuid);
    t_connect (self->reg, t_port (file, "registration"));
    bn_msg_t *msg = t_msg (self->session, BN_MSG_REGISTRATION_REQUEST,
                           json_pack ("{s:s}", "uuid", self->uuid), NULL);
    t_send (&msg, self->reg, self->session);
    bn_msg_t *reply = t_recv (self->reg);
    ck_assert_ptr_nonnull (reply);
    ck_assert_int_eq (bn_msg_verify (reply, self->session, true), 0);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    self->id = (int)json_integer_value (
        json_object_get (bn_msg_content (reply), "id"));
    bn_msg_destroy (&reply);
    self->shell = t_sock (ZMQ_ROUTER, self->uuid);
    t_connect (self->shell, t_port (file, "mux"));
    t_connect (self->shell, t_port (file, "task"));
    t_connect (self->shell, bn_connfile_broadcast (file, 0));
    self->hb_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (self->hb_sub, t_port (file, "hb_ping"));
    self->hb_dealer = t_sock (ZMQ_DEALER, self->uuid);
    t_connect (self->hb_dealer, t_port (file, "hb_pong"));
    bn_connfile_destroy (&file);
    return self;
}

static void
s_fake_echo (s_fake_t *self)
{
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    while (zmq_msg_recv (&frame, zsock_resolve (self->hb_sub), ZMQ_DONTWAIT) >=
           0)
        zmq_msg_send (&frame, zsock_resolve (self->hb_dealer), 0);
    zmq_msg_close (&frame);
}

//  The engine dies: its sockets close, nothing said.
static void
s_fake_die (s_fake_t **self_p)
{
    s_fake_t *self = *self_p;
    zsock_destroy (&self->reg);
    zsock_destroy (&self->shell);
    zsock_destroy (&self->hb_sub);
    zsock_destroy (&self->hb_dealer);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

START_TEST (test_engine_killed)
{
    //  heartbeats would take 5 s to notice: the host node sees the engine's
    //  connection close and the hub hears of it at once
    s_start ("100", "50");
    zactor_t *engines = s_start_engines (1);
    bn_client_t *client = s_client (1);
    s_fake_t *fake = s_fake_new ();
    int64_t end = zclock_mono () + 10000;
    while (bn_client_engine_count (client) < 2 && zclock_mono () < end) {
        s_fake_echo (fake);
        zclock_sleep (5);
    }
    ck_assert_uint_eq (bn_client_engine_count (client), 2);

    //  a request is running on it when it dies
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (direct, &fake->id, 1), 0);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "sleep 10", &result), 0);
    bn_msg_t *request = t_recv_within (fake->shell, 5000);
    ck_assert_msg (request != NULL, "the request did not reach the engine");
    bn_msg_destroy (&request);
    int id = fake->id;
    int64_t start = zclock_mono ();
    s_fake_die (&fake);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EENGINEDIED);
    char text[64];
    snprintf (text, sizeof text, "Engine %d", id);
    ck_assert_msg (strstr (bn_result_evalue (result, 0), text), "%s",
                   bn_result_evalue (result, 0));
    s_wait_count (client, 1, 5000);
    ck_assert_int_lt (zclock_mono () - start, 3000);
    ck_assert_int_eq (s_host_stat ("closed"), 1);
    ck_assert_int_eq (s_stat (client, "hub", "heart_failures"), 1);
    bn_result_destroy (&result);

    //  one more dies while a broadcast waits for it: its slot fails, the
    //  other engine's reply comes
    fake = s_fake_new ();
    end = zclock_mono () + 10000;
    while (bn_client_engine_count (client) < 2 && zclock_mono () < end) {
        s_fake_echo (fake);
        zclock_sleep (5);
    }
    ck_assert_uint_eq (bn_client_engine_count (client), 2);
    bn_view_t *bcast = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (bcast, true), 0);
    ck_assert_int_eq (bn_view_execute (bcast, "true", &result), 0);
    request = t_recv_within (fake->shell, 5000);
    ck_assert_msg (request != NULL, "the broadcast did not reach the engine");
    bn_msg_destroy (&request);
    id = fake->id;
    s_fake_die (&fake);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EENGINEDIED);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq (bn_result_status (result, i),
                          bn_result_engine_id (result, i) == id ? BN_EENGINEDIED
                                                                : 0);
    bn_result_destroy (&result);
    bn_view_destroy (&bcast);
    s_wait_count (client, 1, 5000);

    //  the other engine goes on
    bn_view_t *all = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_execute (all, "true", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 1);
    bn_result_destroy (&result);
    bn_view_destroy (&all);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    zactor_destroy (&engines);
    s_stop ();
}
END_TEST

START_TEST (test_shared_engines)
{
    //  the engines of one process share its connections to the host node:
    //  one of them shut down, the others go on
    s_start ("100", "50");
    zactor_t *engines = s_start_engines (3);
    bn_client_t *client = s_client (3);
    ck_assert_int_eq (s_host_stat ("shared"), 3);
    int first = 0;
    bn_view_t *single = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (single, &first, 1), 0);
    ck_assert_int_eq (bn_view_shutdown (single, 10), 0);
    bn_view_destroy (&single);
    s_wait_count (client, 2, 5000);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "echo on", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_str_eq (bn_result_stdout (result, i), "on\n");
        ck_assert_int_ne (bn_result_engine_id (result, i), first);
    }
    bn_result_destroy (&result);
    bn_view_t *bcast = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (bcast, true), 0);
    ck_assert_int_eq (bn_view_execute (bcast, "echo all", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_str_eq (bn_result_stdout (result, i), "all\n");
    bn_result_destroy (&result);
    bn_view_destroy (&bcast);
    //  no connection closes for it: the host node forgets it as its
    //  shutdown_reply passes on iopub, not when its heart stops (50
    //  periods of 100 ms)
    int64_t end = zclock_mono () + 15000;
    while (s_host_stat ("engines") != 2 && zclock_mono () < end)
        zclock_sleep (50);
    ck_assert_int_eq (s_host_stat ("engines"), 2);
    ck_assert_int_eq (s_host_stat ("unregistered"), 1);
    ck_assert_int_eq (s_host_stat ("lost"), 0);
    ck_assert_int_eq (s_host_stat ("closed"), 0);

    //  the process ends: the two unregister, and are forgotten at once
    zactor_destroy (&engines);
    s_wait_count (client, 0, 5000);
    ck_assert_int_eq (s_host_stat ("unregistered"), 3);
    ck_assert_int_eq (s_host_stat ("engines"), 0);
    ck_assert_int_eq (s_host_stat ("lost"), 0);
    ck_assert_int_eq (s_stat (client, "hub", "heart_failures"), 0);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    s_stop ();
}
END_TEST

//  A process of two engines sharing its connections to the host node, made
//  of sockets, which can die without a word.
#define S_SHARED_ID BN_SHARED_PREFIX "fake-process"
typedef struct {
    char uuid[2][40];
    int id[2];
    bn_session_t *session[2];
    zsock_t *reg, *shell, *hb_sub, *hb_dealer;
} s_pair_t;

static s_pair_t *
s_pair_new (void)
{
    s_pair_t *self = calloc (1, sizeof *self);
    char err[256] = "";
    bn_connfile_t *file = bn_connfile_load (s_host_file, err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert (bn_connfile_shared_channels (file));
    //  one registration socket too, its routing id printable
    self->reg = t_sock (ZMQ_DEALER, "bn-engines-fake-process");
    t_connect (self->reg, t_port (file, "registration"));
    for (int e = 0; e < 2; e++) {
        bn_session_new_id (self->uuid[e]);
        self->session[e] =
            bn_session_new (bn_connfile_key (file), self->uuid[e]);
        bn_msg_t *msg =
            t_msg (self->session[e], BN_MSG_REGISTRATION_REQUEST,
                   json_pack ("{s:s}", "uuid", self->uuid[e]), NULL);
        t_send (&msg, self->reg, self->session[e]);
        bn_msg_t *reply = t_recv (self->reg);
        ck_assert_ptr_nonnull (reply);
        ck_assert_int_eq (bn_msg_verify (reply, self->session[e], true), 0);
        ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
        self->id[e] = (int)json_integer_value (
            json_object_get (bn_msg_content (reply), "id"));
        bn_msg_destroy (&reply);
    }
    self->shell = t_sock (ZMQ_ROUTER, S_SHARED_ID);
    t_connect (self->shell, t_port (file, "mux"));
    t_connect (self->shell, t_port (file, "task"));
    t_connect (self->shell, bn_connfile_broadcast (file, 0));
    self->hb_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (self->hb_sub, t_port (file, "hb_ping"));
    self->hb_dealer = t_sock (ZMQ_DEALER, S_SHARED_ID);
    t_connect (self->hb_dealer, t_port (file, "hb_pong"));
    bn_connfile_destroy (&file);
    return self;
}

//  Both hearts echo the pings waiting, [uuid, ping] each.
static void
s_pair_echo (s_pair_t *self)
{
    char *ping;
    while ((zsock_events (self->hb_sub) & ZMQ_POLLIN) &&
           (ping = zstr_recv (self->hb_sub))) {
        for (int e = 0; e < 2; e++)
            zstr_sendx (self->hb_dealer, self->uuid[e], ping, NULL);
        zstr_free (&ping);
    }
}

static void
s_pair_die (s_pair_t **self_p)
{
    s_pair_t *self = *self_p;
    zsock_destroy (&self->reg);
    zsock_destroy (&self->shell);
    zsock_destroy (&self->hb_sub);
    zsock_destroy (&self->hb_dealer);
    for (int e = 0; e < 2; e++)
        bn_session_destroy (&self->session[e]);
    free (self);
    *self_p = NULL;
}

START_TEST (test_shared_process_killed)
{
    //  two engines behind one process's connections: a request reaches the
    //  one it names, and when the process dies both are lost at once,
    //  while an engine of another process goes on
    s_start ("100", "50");
    zactor_t *engines = s_start_engines (1);
    bn_client_t *client = s_client (1);
    s_pair_t *pair = s_pair_new ();
    int64_t end = zclock_mono () + 10000;
    while (bn_client_engine_count (client) < 3 && zclock_mono () < end) {
        s_pair_echo (pair);
        zclock_sleep (5);
    }
    ck_assert_uint_eq (bn_client_engine_count (client), 3);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (direct, &pair->id[1], 1), 0);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "sleep 10", &result), 0);
    bn_msg_t *request = t_recv_within (pair->shell, 5000);
    ck_assert_msg (request != NULL, "the request did not reach the engine");
    ck_assert_uint_ge (bn_msg_nidents (request), 3);
    ck_assert (bn_msg_ident_is (request, 0, BN_ROUTING_MUX_OUT,
                                strlen (BN_ROUTING_MUX_OUT)));
    ck_assert (
        bn_msg_ident_is (request, 1, pair->uuid[1], strlen (pair->uuid[1])));
    bn_msg_destroy (&request);
    int64_t start = zclock_mono ();
    s_pair_die (&pair);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EENGINEDIED);
    s_wait_count (client, 1, 5000);
    ck_assert_int_lt (zclock_mono () - start, 3000);
    ck_assert_int_eq (s_host_stat ("closed"), 2);
    ck_assert_int_eq (s_host_stat ("shared"), 3);
    bn_result_destroy (&result);
    bn_view_destroy (&direct);

    bn_view_t *all = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_execute (all, "echo on", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 1);
    ck_assert_str_eq (bn_result_stdout (result, 0), "on\n");
    bn_result_destroy (&result);
    bn_view_destroy (&all);
    bn_client_destroy (&client);
    zactor_destroy (&engines);
    s_stop ();
}
END_TEST

//  bn_view_shutdown of one engine in a thread of its own.
typedef struct {
    bn_client_t *client;
    int target;
    int rc;
} s_shutdown_t;

static void *
s_shutdown_thread (void *arg)
{
    s_shutdown_t *shutdown = (s_shutdown_t *)arg;
    bn_view_t *view = bn_view_new (shutdown->client, BN_VIEW_DIRECT);
    bn_view_set_target_list (view, &shutdown->target, 1);
    shutdown->rc = bn_view_shutdown (view, 10);
    bn_view_destroy (&view);
    return NULL;
}

START_TEST (test_shared_reply_after_iopub)
{
    //  an engine behind a shared connection answers a shutdown on control
    //  and on iopub, two connections: the host node forgets it as its
    //  iopub shutdown_reply passes, and its reply on control, arriving
    //  after that, still reaches the client
    s_start ("100", "50");
    bn_client_t *client = s_client (0);
    s_pair_t *pair = s_pair_new ();
    char err[256] = "";
    bn_connfile_t *file = bn_connfile_load (s_host_file, err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    zsock_t *control = t_sock (ZMQ_ROUTER, S_SHARED_ID);
    t_connect (control, t_port (file, "control"));
    zsock_t *iopub = t_sock (ZMQ_PUB, NULL);
    t_connect (iopub, t_port (file, "iopub"));
    bn_connfile_destroy (&file);
    int64_t end = zclock_mono () + 10000;
    while (bn_client_engine_count (client) < 2 && zclock_mono () < end) {
        s_pair_echo (pair);
        zclock_sleep (5);
    }
    ck_assert_uint_eq (bn_client_engine_count (client), 2);

    s_shutdown_t shutdown = {client, pair->id[0], -1};
    pthread_t thread;
    ck_assert_int_eq (
        pthread_create (&thread, NULL, s_shutdown_thread, &shutdown), 0);
    bn_msg_t *request = t_recv_within (control, 5000);
    ck_assert_msg (request != NULL, "the shutdown did not reach the engine");
    ck_assert_str_eq (bn_msg_type (request), BN_MSG_SHUTDOWN_REQUEST);
    ck_assert (
        bn_msg_ident_is (request, 1, pair->uuid[0], strlen (pair->uuid[0])));
    //  the word on iopub first, until the host node has forgotten it
    char topic[64];
    snprintf (topic, sizeof topic, "engine.%d.shutdown", pair->id[0]);
    end = zclock_mono () + 10000;
    while (s_host_stat ("unregistered") < 1 && zclock_mono () < end) {
        t_send_raw (iopub, topic, "<IDS|MSG>", NULL);
        s_pair_echo (pair);
        zclock_sleep (20);
    }
    ck_assert_int_eq (s_host_stat ("unregistered"), 1);
    json_int_t dropped = s_host_stat ("bad_frame");
    //  then the reply
    bn_msg_t *reply =
        bn_msg_new_reply (pair->session[0], request, BN_MSG_SHUTDOWN_REPLY);
    bn_msg_set_content (
        reply, json_pack ("{s:s, s:b}", "status", "ok", "restart", false));
    t_send (&reply, control, pair->session[0]);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
    ck_assert_msg (shutdown.rc == 0, "the shutdown said %s",
                   bn_strerror (shutdown.rc));
    ck_assert_int_eq (s_host_stat ("bad_frame"), dropped);

    zsock_destroy (&control);
    zsock_destroy (&iopub);
    s_pair_die (&pair);
    bn_client_destroy (&client);
    s_stop ();
}
END_TEST

//  Start a host node named name from the controller's engine connection
//  info, its ports from lowest..highest, its file in s_dir/name; wait until
//  it says READY. NULL if it did not start.
static zactor_t *
s_host_ranged (const char *info, const char *name, int lowest, int highest)
{
    char path[400];
    snprintf (path, sizeof path, "%s/%s/security/ipcontroller-engine.json",
              s_dir, name);
    bn_hostnode_args_t args = {.connection_info = info,
                               .name = name,
                               .ports = {lowest, highest},
                               .connfile_path = path,
                               .registration_timeout_ms = 10000,
                               .connect_grace_ms = 3000,
                               .status = -1};
    zactor_t *host = zactor_new (bn_hostnode_actor, &args);
    ck_assert_ptr_nonnull (host);
    if (args.status != 0) {
        zactor_destroy (&host);
        return NULL;
    }
    zpoller_t *poller = zpoller_new (host, NULL);
    ck_assert_ptr_nonnull (zpoller_wait (poller, 10000));
    zpoller_destroy (&poller);
    char *ready = NULL, *file = NULL;
    zstr_recvx (host, &ready, &file, NULL);
    ck_assert_str_eq (ready, "READY");
    ck_assert_str_eq (file, path);
    zstr_free (&ready);
    zstr_free (&file);
    return host;
}

//  The IPv4 ports this process listens on: the sockets of /proc/net/tcp in
//  state LISTEN whose inodes are among its descriptors.
static zlistx_t *
s_listening (void)
{
    zlistx_t *inodes = zlistx_new ();
    zlistx_set_destructor (inodes, (zlistx_destructor_fn *)zstr_free);
    zlistx_set_comparator (inodes, (zlistx_comparator_fn *)strcmp);
    DIR *fds = opendir ("/proc/self/fd");
    ck_assert_ptr_nonnull (fds);
    struct dirent *entry;
    while ((entry = readdir (fds))) {
        char link[300], target[64];
        snprintf (link, sizeof link, "/proc/self/fd/%s", entry->d_name);
        ssize_t length = readlink (link, target, sizeof target - 1);
        if (length <= 0)
            continue;
        target[length] = 0;
        unsigned long inode;
        if (sscanf (target, "socket:[%lu]", &inode) == 1)
            zlistx_add_end (inodes, zsys_sprintf ("%lu", inode));
    }
    closedir (fds);
    zlistx_t *ports = zlistx_new ();
    zlistx_set_destructor (ports, (zlistx_destructor_fn *)zstr_free);
    zlistx_set_comparator (ports, (zlistx_comparator_fn *)strcmp);
    FILE *table = fopen ("/proc/net/tcp", "r");
    ck_assert_ptr_nonnull (table);
    char line[512];
    while (fgets (line, sizeof line, table)) {
        unsigned int port, state;
        char inode[32];
        //  sl local_address rem_address st tx:rx tr:when retrnsmt uid
        //  timeout inode
        if (sscanf (line, " %*s %*x:%x %*s %x %*s %*s %*s %*s %*s %31s", &port,
                    &state, inode) == 3 &&
            state == 0x0A && zlistx_find (inodes, inode))
            zlistx_add_end (ports, zsys_sprintf ("%u", port));
    }
    fclose (table);
    zlistx_destroy (&inodes);
    return ports;
}

START_TEST (test_ports)
{
    s_start ("100", "50");
    char *info = s_slurp (s_engine_file);
    char log_path[300];
    snprintf (log_path, sizeof log_path, "%s/host.log", s_dir);
    ck_assert_int_eq (bn_log_set_file (log_path), 0);

    //  a host node given a range listens on its ports only: the first range
    //  of the block that another run of this test does not hold
    zlistx_t *before = s_listening ();
    zactor_t *host = NULL;
    int lowest, highest;
    for (lowest = S_LOWEST_PORT;; lowest += BN_HOSTNODE_PORTS) {
        highest = lowest + BN_HOSTNODE_PORTS - 1;
        ck_assert_msg (highest <= S_HIGHEST_PORT,
                       "no host node started with a range of %d-%d",
                       S_LOWEST_PORT, S_HIGHEST_PORT);
        if ((host = s_host_ranged (info, "h2", lowest, highest)))
            break;
    }
    zlistx_t *after = s_listening ();
    size_t added = 0;
    for (char *port = zlistx_first (after); port; port = zlistx_next (after)) {
        if (zlistx_find (before, port))
            continue;
        ck_assert_msg (atoi (port) >= lowest && atoi (port) <= highest,
                       "the host node listens on %s, not in %d-%d", port,
                       lowest, highest);
        added++;
    }
    ck_assert_uint_eq (added, BN_HOSTNODE_PORTS);
    zlistx_destroy (&before);
    zlistx_destroy (&after);

    //  its connection file gives its engines those ports, and they are
    //  served through them
    char path[400];
    snprintf (path, sizeof path, "%s/h2/security/ipcontroller-engine.json",
              s_dir);
    json_t *file = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (file);
    static const char *names[] = {"registration", "mux",      "control",
                                  "task",         "iopub",    "hb_ping",
                                  "hb_pong",      "broadcast"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_t *value = json_object_get (file, names[i]);
        json_int_t port = json_integer_value (
            json_is_array (value) ? json_array_get (value, 0) : value);
        ck_assert_msg (port >= lowest && port <= highest,
                       "%s port %lld is not in %d-%d", names[i],
                       (long long)port, lowest, highest);
    }
    json_decref (file);
    zactor_t *engines = s_start_engines_of (path, 2);
    bn_client_t *client = s_client (2);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "echo ranged", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_str_eq (bn_result_stdout (result, i), "ranged\n");
    bn_result_destroy (&result);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    zactor_destroy (&engines);

    //  a second host node in the same range finds no port free, and says
    //  which range
    ck_assert_ptr_null (s_host_ranged (info, "h3", lowest, highest));
    //  a range smaller than its ports is refused before it binds any
    ck_assert_ptr_null (s_host_ranged (info, "h4", lowest, highest - 1));
    //  the next range with its last port held: the broadcast leaf, bound
    //  last, finds none (or, when another run of this test holds more of
    //  it, a port bound before)
    int next = highest <= S_HIGHEST_PORT - BN_HOSTNODE_PORTS ? highest + 1
                                                             : S_LOWEST_PORT;
    int last = next + BN_HOSTNODE_PORTS - 1;
    zsock_t *held = zsock_new (ZMQ_ROUTER);
    ck_assert_ptr_nonnull (held);
    zsock_bind (held, "tcp://127.0.0.1:%d", last);
    ck_assert_ptr_null (s_host_ranged (info, "h5", next, last));
    zsock_destroy (&held);
    bn_log_set_file (NULL);
    char *log = s_slurp (log_path);
    char expected[200];
    snprintf (expected, sizeof expected,
              "host: cannot bind tcp://127.0.0.1:*[%d-%d]: no port of "
              "controller.ports %d-%d is free",
              lowest, highest, lowest, highest);
    ck_assert_msg (strstr (log, expected), "%s", log);
    snprintf (expected, sizeof expected,
              "host: controller.ports %d-%d holds 7 ports; a host node "
              "listens on 8",
              lowest, highest - 1);
    ck_assert_msg (strstr (log, expected), "%s", log);
    snprintf (expected, sizeof expected,
              "no port of controller.ports %d-%d is free", next, last);
    ck_assert_msg (strstr (log, expected), "%s", log);
    free (log);
    zactor_destroy (&host);
    free (info);
    s_stop ();
}
END_TEST

START_TEST (test_host_killed)
{
    //  the host node goes away: its link's heart stops, so do its engines
    s_start ("100", "5");
    zactor_t *engines = s_start_engines (2);
    bn_client_t *client = s_client (2);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (direct, "sleep 10", &result), 0);
    zclock_sleep (200);
    int64_t start = zclock_mono ();
    zactor_destroy (&s_host);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EENGINEDIED);
    for (size_t i = 0; i < 2; i++)
        ck_assert_str_eq (bn_result_ename (result, i), "EngineError");
    s_wait_count (client, 0, 5000);
    ck_assert_int_lt (zclock_mono () - start, 5000);
    ck_assert_int_eq (s_stat (client, "hub", "hosts_lost"), 1);
    ck_assert_int_eq (s_stat (client, "hub", "hosts"), 0);
    bn_result_destroy (&result);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    zactor_destroy (&engines);
    s_stop ();
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_hosts");
    TCase *tc = tcase_create ("hosts");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_broadcast);
    tcase_add_test (tc, test_broadcast_deeper);
    tcase_add_test (tc, test_broadcast_processes);
    tcase_add_test (tc, test_broadcast_curve);
    tcase_add_test (tc, test_engine_killed);
    tcase_add_test (tc, test_shared_engines);
    tcase_add_test (tc, test_shared_process_killed);
    tcase_add_test (tc, test_shared_reply_after_iopub);
    tcase_add_test (tc, test_host_killed);
    tcase_add_test (tc, test_ports);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? 1 : 0;
}

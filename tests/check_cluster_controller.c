/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_controller: the controller end to end: connection and pid
    files, a fake engine and client through every relay, error answers,
    bad input, and the banyan-controller binary (flags, signals).  */
#include "bn_ctltest.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define S_BINARY BN_BUILD_DIR "/bin/banyan-controller"

static t_controller_t *s_ctl;
static t_client_t *s_client;
static t_engine_t *s_engine;

static void
s_setup (void)
{
    s_ctl = t_controller_start (NULL);
    s_client = t_client_new (s_ctl);
    s_engine = t_engine_new (s_ctl);
    t_engine_register (s_engine, s_ctl, s_client, -1);
}

static void
s_teardown (void)
{
    t_engine_destroy (&s_engine);
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
}

//  The keys of a JSON file, sorted, comma-separated.
static char *
s_keys (const char *path)
{
    json_t *root = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (root);
    zlistx_t *keys = zlistx_new ();
    zlistx_set_comparator (keys, (zlistx_comparator_fn *)strcmp);
    const char *key;
    json_t *value;
    json_object_foreach (root, key, value)
    {
        zlistx_add_end (keys, (void *)key);
    }
    zlistx_sort (keys);
    char *text = strdup ("");
    for (key = zlistx_first (keys); key; key = zlistx_next (keys)) {
        char *longer = zsys_sprintf ("%s%s%s", text, *text ? "," : "", key);
        free (text);
        text = longer;
    }
    zlistx_destroy (&keys);
    json_decref (root);
    return text;
}

START_TEST (test_usage)
{
    t_controller_t *ctl =
        t_controller_start ("cluster.id=abc", "controller.depth=2", NULL);
    //  files named after the cluster id, mode 0600
    char expected[256];
    snprintf (expected, sizeof expected,
              "%s/security/ipcontroller-abc-client.json", ctl->profile);
    ck_assert_str_eq (ctl->client_path, expected);
    snprintf (expected, sizeof expected,
              "%s/security/ipcontroller-abc-engine.json", ctl->profile);
    ck_assert_str_eq (ctl->engine_path, expected);
    struct stat st;
    ck_assert_int_eq (stat (ctl->client_path, &st), 0);
    ck_assert_int_eq (st.st_mode & 0777, 0600);
    ck_assert_int_eq (stat (ctl->engine_path, &st), 0);
    ck_assert_int_eq (st.st_mode & 0777, 0600);

    //  every key of doc/wire.md 2, nothing else
    char *keys = s_keys (ctl->client_path);
    ck_assert_str_eq (keys, "broadcast,control,curve_serverkey,interface,iopub,"
                            "key,location,mux,notification,pack,registration,"
                            "signature_scheme,ssh,task,task_scheme,unpack");
    free (keys);
    keys = s_keys (ctl->engine_path);
    ck_assert_str_eq (keys, "broadcast,control,curve_serverkey,hb_ping,"
                            "hb_pong,interface,iopub,key,location,mux,pack,"
                            "registration,signature_scheme,ssh,task,unpack");
    free (keys);
    json_t *client = json_load_file (ctl->client_path, 0, NULL);
    json_t *engine = json_load_file (ctl->engine_path, 0, NULL);
    ck_assert (json_equal (json_object_get (client, "registration"),
                           json_object_get (engine, "registration")));
    ck_assert (json_equal (json_object_get (client, "key"),
                           json_object_get (engine, "key")));
    ck_assert (json_is_integer (json_object_get (client, "broadcast")));
    ck_assert_uint_eq (json_array_size (json_object_get (engine, "broadcast")),
                       4);
    ck_assert (json_is_null (json_object_get (engine, "curve_serverkey")));
    ck_assert_str_eq (json_string_value (json_object_get (client, "interface")),
                      "tcp://127.0.0.1");
    ck_assert_str_eq (
        json_string_value (json_object_get (client, "task_scheme")),
        "leastload");
    //  every port distinct
    zhashx_t *ports = zhashx_new ();
    const char *names[] = {"registration", "control", "mux",    "task",
                           "iopub",        "hb_ping", "hb_pong"};
    int count = 0;
    for (size_t i = 0; i < 7; i++) {
        char key[16];
        snprintf (key, sizeof key, "%d",
                  bn_connfile_port (ctl->engine, names[i]));
        zhashx_insert (ports, key, "e");
        count++;
    }
    const char *cnames[] = {"control", "mux", "task", "iopub", "notification"};
    for (size_t i = 0; i < 5; i++) {
        char key[16];
        snprintf (key, sizeof key, "%d",
                  bn_connfile_port (ctl->client, cnames[i]));
        zhashx_insert (ports, key, "c");
        count++;
    }
    for (size_t i = 0; i < 4; i++) {
        char key[16];
        snprintf (key, sizeof key, "%d",
                  bn_connfile_broadcast (ctl->engine, i));
        zhashx_insert (ports, key, "b");
        count++;
    }
    ck_assert_uint_eq (zhashx_size (ports), (size_t)count);
    zhashx_destroy (&ports);
    json_decref (client);
    json_decref (engine);

    //  the pid file
    zstr_send (ctl->actor, "PIDFILE");
    char *pid_path = zstr_recv (ctl->actor);
    snprintf (expected, sizeof expected, "%s/pid/banyan-controller-abc.pid",
              ctl->profile);
    ck_assert_str_eq (pid_path, expected);
    FILE *file = fopen (pid_path, "r");
    ck_assert_ptr_nonnull (file);
    int pid = 0;
    ck_assert_int_eq (fscanf (file, "%d", &pid), 1);
    fclose (file);
    ck_assert_int_eq (pid, getpid ());
    //  ENDPOINTS answers as CONNFILES does
    zstr_send (ctl->actor, "ENDPOINTS");
    char *client_path, *engine_path;
    zstr_recvx (ctl->actor, &client_path, &engine_path, NULL);
    ck_assert_str_eq (client_path, ctl->client_path);
    ck_assert_str_eq (engine_path, ctl->engine_path);
    zstr_free (&client_path);
    zstr_free (&engine_path);

    //  $TERM removes the files
    zactor_destroy (&ctl->actor);
    ck_assert_int_ne (access (ctl->client_path, F_OK), 0);
    ck_assert_int_ne (access (ctl->engine_path, F_OK), 0);
    ck_assert_int_ne (access (pid_path, F_OK), 0);
    zstr_free (&pid_path);
    t_controller_stop (&ctl);
}
END_TEST

START_TEST (test_reuse_files)
{
    t_controller_t *first =
        t_controller_start ("controller.reuse_files=true", NULL);
    int registration = bn_connfile_port (first->client, "registration");
    int leaf = bn_connfile_broadcast (first->engine, 1);
    char key[64];
    snprintf (key, sizeof key, "%s", first->key);
    //  stopped, it leaves its connection files in place
    zactor_destroy (&first->actor);
    ck_assert_int_eq (access (first->client_path, F_OK), 0);
    ck_assert_int_eq (access (first->engine_path, F_OK), 0);
    //  and a controller started on them binds the same ports, same key
    first->args.status = -1;
    first->actor = zactor_new (bn_controller_actor, &first->args);
    ck_assert_int_eq (first->args.status, 0);
    char err[256];
    bn_connfile_t *client =
        bn_connfile_load (first->client_path, err, sizeof err);
    bn_connfile_t *engine =
        bn_connfile_load (first->engine_path, err, sizeof err);
    ck_assert_int_eq (bn_connfile_port (client, "registration"), registration);
    ck_assert_int_eq (bn_connfile_broadcast (engine, 1), leaf);
    ck_assert_str_eq (bn_connfile_key (client), key);
    //  engines and clients holding the old files still get through
    t_client_t *fake = t_client_new (first);
    bn_msg_t *reply = t_query (fake, BN_MSG_CONNECTION_REQUEST, NULL);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);
    t_client_destroy (&fake);
    bn_connfile_destroy (&client);
    bn_connfile_destroy (&engine);
    t_controller_stop (&first);
}
END_TEST

START_TEST (test_mux_round_trip)
{
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, s_engine->uuid);
    bn_msg_add_buffer (msg, "function", 8);
    bn_msg_add_buffer (msg, "argument", 8);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    char answered[BN_MSG_ID_SIZE];
    t_engine_answer (s_engine, s_engine->shell, answered, sizeof answered);
    ck_assert_str_eq (answered, msg_id);
    bn_msg_t *reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    ck_assert (
        bn_msg_ident_is (reply, 0, s_engine->uuid, strlen (s_engine->uuid)));
    ck_assert_int_eq (bn_msg_verify (reply, s_client->session, true), 0);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 2);
    bn_msg_destroy (&reply);
    free (msg_id);
    ck_assert_int_eq (t_stat (s_ctl, "mux", "forwarded"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "forwarded"), 2);
}
END_TEST

START_TEST (test_control_and_iopub)
{
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_CLEAR_REQUEST, NULL, s_engine->uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->control, s_client->session);
    char answered[BN_MSG_ID_SIZE];
    t_engine_answer (s_engine, s_engine->control, answered, sizeof answered);
    ck_assert_str_eq (answered, msg_id);
    bn_msg_t *reply = t_recv (s_client->control);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_CLEAR_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    free (msg_id);

    //  the engine's iopub reaches the client unchanged, topic included
    bn_msg_t *status = t_msg (s_engine->session, BN_MSG_STATUS,
                              json_pack ("{s:s}", "execution_state", "idle"),
                              "engine.0.status");
    t_send (&status, s_engine->iopub, s_engine->session);
    bn_msg_t *got = t_recv (s_client->iopub);
    ck_assert_ptr_nonnull (got);
    ck_assert (bn_msg_ident_is (got, 0, "engine.0.status", 15));
    ck_assert_str_eq (t_content_str (got, "execution_state"), "idle");
    ck_assert_str_eq (bn_msg_session (got), s_engine->uuid);
    bn_msg_destroy (&got);
}
END_TEST

START_TEST (test_unknown_engine)
{
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_EXECUTE_REQUEST, NULL, "gone-uuid");
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    ck_assert (bn_msg_ident_is (reply, 0, "gone-uuid", 9));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    ck_assert_str_eq (t_metadata_str (reply, "engine"), "gone-uuid");
    bn_msg_destroy (&reply);
    free (msg_id);

    msg = t_msg (s_client->session, BN_MSG_ABORT_REQUEST, NULL, "gone-uuid");
    msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->control, s_client->session);
    reply = t_recv (s_client->control);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_ABORT_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    bn_msg_destroy (&reply);
    free (msg_id);
}
END_TEST

START_TEST (test_stranded)
{
    //  the engine takes a mux and a control request, then leaves
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, s_engine->uuid);
    char *mux_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    msg = t_msg (s_client->session, BN_MSG_CLEAR_REQUEST, NULL, s_engine->uuid);
    char *control_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->control, s_client->session);
    bn_msg_t *got = t_recv (s_engine->shell);
    bn_msg_destroy (&got);
    got = t_recv (s_engine->control);
    bn_msg_destroy (&got);
    msg = t_msg (s_engine->session, BN_MSG_UNREGISTRATION_REQUEST,
                 json_pack ("{s:i}", "id", s_engine->id), NULL);
    t_send (&msg, s_engine->reg, s_engine->session);

    //  both get an EngineError...
    char text[200];
    bn_msg_t *reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), mux_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    snprintf (text, sizeof text, "Engine %d died while running task '%s'",
              s_engine->id, mux_id);
    ck_assert_str_eq (t_content_str (reply, "evalue"), text);
    bn_msg_destroy (&reply);
    reply = t_recv (s_client->control);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_CLEAR_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), control_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    bn_msg_destroy (&reply);
    //  ...and then the unregistration is announced
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 2000);
    ck_assert_ptr_nonnull (note);
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "mux", "stranded"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "stranded"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "control", "stranded"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "control", "stranded"), 1);
    free (mux_id);
    free (control_id);
}
END_TEST

START_TEST (test_engine_shutdown)
{
    //  a client shuts an engine down through control
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_SHUTDOWN_REQUEST,
                           json_pack ("{s:b}", "restart", 0), s_engine->uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->control, s_client->session);
    bn_msg_t *request = t_recv (s_engine->control);
    ck_assert_ptr_nonnull (request);
    //  the iopub copy of its reply overtakes the control reply (the nanny
    //  relays the latter): the client must still get the real reply
    bn_msg_t *iopub =
        t_msg (s_engine->session, BN_MSG_SHUTDOWN_REPLY,
               json_pack ("{s:s, s:b}", "status", "ok", "restart", 0),
               "engine.0.shutdown");
    t_send (&iopub, s_engine->iopub, s_engine->session);
    zclock_sleep (100);
    bn_msg_t *reply =
        bn_msg_new_reply (s_engine->session, request, BN_MSG_SHUTDOWN_REPLY);
    bn_msg_set_content (reply,
                        json_pack ("{s:s, s:b}", "status", "ok", "restart", 0));
    bn_msg_destroy (&request);
    t_send (&reply, s_engine->control, s_engine->session);
    bn_msg_t *got = t_recv (s_client->control);
    ck_assert_ptr_nonnull (got);
    ck_assert_str_eq (bn_msg_parent_id (got), msg_id);
    ck_assert_str_eq (t_content_str (got, "status"), "ok");
    bn_msg_destroy (&got);
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 2000);
    ck_assert_ptr_nonnull (note);
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "control", "stranded"), 0);
    ck_assert_int_eq (t_query_stat (s_client, "control", "stranded"), 0);
    free (msg_id);
}
END_TEST

START_TEST (test_task_and_broadcast)
{
    //  the task scheduler gives the request to the one engine, and its
    //  reply comes back through it
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_EXECUTE_REQUEST, NULL, NULL);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->task, s_client->session);
    char got_id[128];
    t_engine_answer (s_engine, s_engine->shell, got_id, sizeof got_id);
    ck_assert_str_eq (got_id, msg_id);
    bn_msg_t *reply = t_recv (s_client->task);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);
    free (msg_id);

    //  the broadcast tree sends the engine its own copy and the reply
    //  comes back to the client unchanged
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (
        msg, json_pack ("{s:[[s, i]], s:b, s:b}", "targets", s_engine->uuid,
                        s_engine->id, "is_broadcast", 1, "is_coalescing", 0));
    msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->broadcast, s_client->session);
    char answered[BN_MSG_ID_SIZE + 64];
    t_engine_answer (s_engine, s_engine->shell, answered, sizeof answered);
    char expected[200];
    snprintf (expected, sizeof expected, "%s_%s", msg_id, s_engine->uuid);
    ck_assert_str_eq (answered, expected);
    reply = t_recv (s_client->broadcast);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), expected);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);
    free (msg_id);
    ck_assert_int_eq (t_stat (s_ctl, "task", "forwarded"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "task", "forwarded"), 1);
}
END_TEST

//  A mux request still makes its round trip.
static void
s_assert_mux_works (void)
{
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, s_engine->uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    char answered[BN_MSG_ID_SIZE];
    t_engine_answer (s_engine, s_engine->shell, answered, sizeof answered);
    ck_assert_str_eq (answered, msg_id);
    bn_msg_t *reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    free (msg_id);
}

//  The engine's shell (mux, task, broadcast leaf) and control sockets,
//  named by its uuid, that never connect again by themselves once closed,
//  with a handshake monitor on each set up before they connect.
static void
s_engine_sockets (zsock_t **shell, zsock_t **control, zsock_t *monitors[2])
{
    static int count;
    bn_connfile_t *file = s_ctl->engine;
    *shell = t_sock (ZMQ_ROUTER, s_engine->uuid);
    *control = t_sock (ZMQ_ROUTER, s_engine->uuid);
    zsock_t *socks[2] = {*shell, *control};
    for (int i = 0; i < 2; i++) {
        zsock_set_reconnect_ivl (socks[i], -1);
        char endpoint[64];
        snprintf (endpoint, sizeof endpoint,
                  "inproc://check-controller-monitor-%d", count++);
        ck_assert_int_eq (zmq_socket_monitor (zsock_resolve (socks[i]),
                                              endpoint,
                                              ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
                          0);
        monitors[i] = zsock_new (ZMQ_PAIR);
        ck_assert_int_eq (zsock_connect (monitors[i], "%s", endpoint), 0);
        zsock_set_rcvtimeo (monitors[i], T_TIMEOUT);
    }
    t_connect (*shell, t_port (file, "mux"));
    t_connect (*shell, t_port (file, "task"));
    size_t leaves = bn_connfile_broadcast_count (file);
    t_connect (*shell,
               bn_connfile_broadcast (file, (size_t)s_engine->id % leaves));
    t_connect (*control, t_port (file, "control"));
    //  shell: three handshakes (mux, task, leaf); control: one
    int wanted[2] = {3, 1};
    for (int i = 0; i < 2; i++) {
        for (int n = 0; n < wanted[i]; n++) {
            zmsg_t *event = zmsg_recv (monitors[i]);
            ck_assert_msg (event != NULL, "no handshake");
            zmsg_destroy (&event);
        }
        zmq_socket_monitor (zsock_resolve (socks[i]), NULL, 0);
        zsock_destroy (&monitors[i]);
    }
}

//  Send one request on channel ("mux", "control", "task" or "broadcast")
//  and answer it on whichever of old (or NULL) and new it reaches; the
//  client must get the reply. Returns true if it reached new.
static bool
s_request_reaches_new (const char *channel, zsock_t *old, zsock_t *new)
{
    bool bcast = streq (channel, "broadcast");
    bool to_engine = streq (channel, "mux") || streq (channel, "control");
    const char *type = streq (channel, "control") ? BN_MSG_CLEAR_REQUEST
                       : streq (channel, "task")  ? BN_MSG_EXECUTE_REQUEST
                                                  : BN_MSG_APPLY_REQUEST;
    zsock_t *out = streq (channel, "mux")       ? s_client->mux
                   : streq (channel, "control") ? s_client->control
                   : streq (channel, "task")    ? s_client->task
                                                : s_client->broadcast;
    bn_msg_t *msg = t_msg (s_client->session, type, NULL,
                           to_engine ? s_engine->uuid : NULL);
    if (bcast)
        bn_msg_set_metadata (msg,
                             json_pack ("{s:[[s, i]], s:b, s:b}", "targets",
                                        s_engine->uuid, s_engine->id,
                                        "is_broadcast", 1, "is_coalescing", 0));
    t_send (&msg, out, s_client->session);
    zpoller_t *poller = zpoller_new (new, NULL);
    if (old)
        zpoller_add (poller, old);
    zsock_t *which = NULL;
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (!which && zclock_mono () < end) {
        t_engine_echo (s_engine);
        which = (zsock_t *)zpoller_wait (poller, 10);
    }
    zpoller_destroy (&poller);
    ck_assert_msg (which != NULL, "%s: the engine got no request", channel);
    char msg_id[BN_MSG_ID_SIZE + 64];
    t_engine_answer (s_engine, which, msg_id, sizeof msg_id);
    bn_msg_t *reply = t_recv (out);
    ck_assert_msg (reply != NULL, "%s: no reply", channel);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    return which == new;
}

START_TEST (test_same_uuid_again)
{
    //  an engine's connections are made again under its uuid while the
    //  old ones are still open here (as after a network failure the
    //  controller has not noticed yet): its requests go to the new ones
    zsock_destroy (&s_engine->shell);
    zsock_destroy (&s_engine->control);
    zsock_t *old_shell, *old_control, *monitors[2];
    s_engine_sockets (&old_shell, &old_control, monitors);
    const char *channels[] = {"mux", "control", "task", "broadcast"};
    for (size_t c = 0; c < 4; c++) {
        zsock_t *old = streq (channels[c], "control") ? old_control : old_shell;
        ck_assert (s_request_reaches_new (channels[c], NULL, old));
    }
    zsock_t *new_shell, *new_control;
    s_engine_sockets (&new_shell, &new_control, monitors);
    for (size_t c = 0; c < 4; c++) {
        bool control = streq (channels[c], "control");
        zsock_t *old = control ? old_control : old_shell;
        zsock_t *new = control ? new_control : new_shell;
        //  (a request sent before the controller took in the new
        //  connection still goes to the old one; a loaded machine may
        //  take a while to hand it over)
        int64_t end = zclock_mono () + T_TIMEOUT;
        while (!s_request_reaches_new (channels[c], old, new))
            ck_assert_msg (zclock_mono () < end,
                           "%s: requests still reach the old "
                           "connection",
                           channels[c]);
        ck_assert (s_request_reaches_new (channels[c], old, new));
    }
    zsock_destroy (&old_shell);
    zsock_destroy (&old_control);
    s_engine->shell = new_shell;
    s_engine->control = new_control;
}
END_TEST

START_TEST (test_bad_input)
{
    s_assert_mux_works ();
    //  on the mux: no delimiter, truncated, bad signature, replay,
    //  a header that is not JSON
    t_send_raw (s_client->mux, s_engine->uuid, "no delimiter", NULL);
    t_send_raw (s_client->mux, s_engine->uuid, BN_DELIM, "sig", NULL);
    t_send_raw (s_client->mux, s_engine->uuid, BN_DELIM, "bad", "{}", "{}",
                "{}", "{}", NULL);
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, s_engine->uuid);
    bn_msg_t *copy = bn_msg_dup (msg);
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *got = t_recv (s_engine->shell);
    bn_msg_destroy (&got);
    t_send (&copy, s_client->mux, s_client->session);
    s_assert_mux_works ();
    ck_assert_int_eq (t_stat (s_ctl, "mux", "bad_frame"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "bad_frame"), 2);
    ck_assert_int_eq (t_stat (s_ctl, "mux", "bad_signature"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "bad_signature"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "mux", "replayed"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "replayed"), 1);

    //  on control and iopub
    t_send_raw (s_client->control, s_engine->uuid, "junk", NULL);
    t_send_raw (s_engine->iopub, "engine.0.status", BN_DELIM, "bad", "{}", "{}",
                "{}", "{}", NULL);
    s_assert_mux_works ();
    ck_assert_int_eq (t_stat (s_ctl, "control", "bad_frame"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "control", "bad_frame"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "iopub", "bad_signature"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "iopub", "bad_signature"), 1);

    //  a 100 MB buffer passes through to the engine
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, s_engine->uuid);
    size_t size = 100 * 1024 * 1024;
    char *big = malloc (size);
    memset (big, 'x', size);
    big[size - 1] = 'y';
    bn_msg_add_buffer_owned (msg, big, size);
    t_send (&msg, s_client->mux, s_client->session);
    zsock_set_rcvtimeo (s_engine->shell, 30000);
    got = t_recv (s_engine->shell);
    ck_assert_ptr_nonnull (got);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (got, 0)), size);
    ck_assert_int_eq (((char *)zmq_msg_data (bn_msg_buffer (got, 0)))[size - 1],
                      'y');
    bn_msg_destroy (&got);
    s_assert_mux_works ();
}
END_TEST

//  --------------------------------------------------------------------------
//  The binary

//  Run banyan-controller with argv (NULL-terminated, without argv[0]) and
//  env ("NAME=value" strings to add), output to out/err files in dir.
static pid_t
s_spawn (const char *dir, const char **argv, const char **env)
{
    pid_t pid = fork ();
    ck_assert_int_ge (pid, 0);
    if (pid == 0) {
        char path[300];
        snprintf (path, sizeof path, "%s/out", dir);
        freopen (path, "w", stdout);
        snprintf (path, sizeof path, "%s/err", dir);
        freopen (path, "w", stderr);
        for (size_t i = 0; env && env[i]; i++)
            putenv ((char *)env[i]);
        const char *args[32] = {S_BINARY};
        for (size_t i = 0; argv[i] && i < 30; i++)
            args[i + 1] = argv[i];
        execv (S_BINARY, (char **)args);
        _exit (127);
    }
    return pid;
}

//  Exit status of pid within ms, or -1 (then it is killed).
static int
s_wait (pid_t pid, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (zclock_mono () < end) {
        int status;
        if (waitpid (pid, &status, WNOHANG) == pid)
            return WIFEXITED (status) ? WEXITSTATUS (status) : 128;
        zclock_sleep (10);
    }
    kill (pid, SIGKILL);
    waitpid (pid, NULL, 0);
    return -1;
}

static char *
s_file_text (const char *dir, const char *name)
{
    char path[300];
    snprintf (path, sizeof path, "%s/%s", dir, name);
    FILE *file = fopen (path, "r");
    if (!file)
        return strdup ("");
    char *text = calloc (1, 65536);
    fread (text, 1, 65535, file);
    fclose (file);
    return text;
}

static bool
s_wait_file (const char *path, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (access (path, F_OK) != 0 && zclock_mono () < end)
        zclock_sleep (10);
    return access (path, F_OK) == 0;
}

static char s_dir[64];

static void
s_dir_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/bn-ctlbin-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_dir_teardown (void)
{
    zdir_t *dir = zdir_new (s_dir, NULL);
    if (dir)
        zdir_remove (dir, true);
    zdir_destroy (&dir);
    rmdir (s_dir);
}

START_TEST (test_binary_flags)
{
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq (s_wait (s_spawn (s_dir, help, NULL), 5000), 0);
    char *out = s_file_text (s_dir, "out");
    ck_assert_ptr_nonnull (strstr (out, "Usage: banyan-controller"));
    ck_assert_ptr_nonnull (strstr (out, "Examples:"));
    ck_assert_ptr_nonnull (strstr (out, "--profile-dir"));
    free (out);

    const char *version[] = {"--version", NULL};
    ck_assert_int_eq (s_wait (s_spawn (s_dir, version, NULL), 5000), 0);
    out = s_file_text (s_dir, "out");
    ck_assert_ptr_nonnull (strstr (out, "banyan-controller "));
    free (out);

    const char *bad[][4] = {{"--bogus", NULL},
                            {"--depth", NULL},
                            {"--depth", "x", NULL},
                            {"--ip=", "--depth=99", NULL},
                            {"--log-level", "loud", NULL},
                            {"--config", "/nonexistent.conf", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq (s_wait (s_spawn (s_dir, bad[i], NULL), 5000), 2);
        char *err = s_file_text (s_dir, "err");
        ck_assert_msg (strstr (err, "banyan-controller: "), "stderr: %s", err);
        ck_assert_ptr_nonnull (strstr (err, "--help"));
        free (err);
        out = s_file_text (s_dir, "out");
        ck_assert_str_eq (out, "");
        free (out);
    }
}
END_TEST

START_TEST (test_binary_signal)
{
    char profile[128];
    snprintf (profile, sizeof profile, "%s/prof", s_dir);
    const char *argv[] = {"--profile-dir", profile, "--cluster-id", "sig",
                          NULL};
    pid_t pid = s_spawn (s_dir, argv, NULL);
    char client[256], engine[256], pidfile[256];
    snprintf (client, sizeof client, "%s/security/ipcontroller-sig-client.json",
              profile);
    snprintf (engine, sizeof engine, "%s/security/ipcontroller-sig-engine.json",
              profile);
    snprintf (pidfile, sizeof pidfile, "%s/pid/banyan-controller-sig.pid",
              profile);
    ck_assert (s_wait_file (client, 5000));
    ck_assert (s_wait_file (pidfile, 5000));
    char *text = s_file_text (profile, "pid/banyan-controller-sig.pid");
    ck_assert_int_eq (atoi (text), pid);
    free (text);
    kill (pid, SIGTERM);
    ck_assert_int_eq (s_wait (pid, 5000), 0);
    ck_assert_int_ne (access (client, F_OK), 0);
    ck_assert_int_ne (access (engine, F_OK), 0);
    ck_assert_int_ne (access (pidfile, F_OK), 0);

    //  SIGINT does the same
    pid = s_spawn (s_dir, argv, NULL);
    ck_assert (s_wait_file (client, 5000));
    kill (pid, SIGINT);
    ck_assert_int_eq (s_wait (pid, 5000), 0);
    ck_assert_int_ne (access (client, F_OK), 0);
}
END_TEST

START_TEST (test_binary_settings)
{
    //  profile by name under BANYAN_DIR; file < environment < flags
    char conf[256], env_dir[300];
    snprintf (conf, sizeof conf, "%s/test.conf", s_dir);
    FILE *file = fopen (conf, "w");
    fprintf (file, "controller\n    depth = 2\n    ip = 127.0.0.1\n");
    fclose (file);
    snprintf (env_dir, sizeof env_dir, "BANYAN_DIR=%s", s_dir);
    const char *env[] = {env_dir, "BANYAN_CONTROLLER_DEPTH=3", NULL};
    const char *env_file_only[] = {env_dir, NULL};
    char engine[300];
    snprintf (engine, sizeof engine,
              "%s/profile_p1/security/ipcontroller-engine.json", s_dir);
    struct {
        const char **env;
        const char *depth_flag;
        size_t leaves;
    } cases[] = {{env_file_only, NULL, 4}, {env, NULL, 8}, {env, "0", 1}};
    for (size_t i = 0; i < 3; i++) {
        const char *argv[] = {"--profile",
                              "p1",
                              "--config",
                              conf,
                              cases[i].depth_flag ? "--depth" : NULL,
                              cases[i].depth_flag,
                              NULL};
        pid_t pid = s_spawn (s_dir, argv, cases[i].env);
        ck_assert_msg (s_wait_file (engine, 5000), "no %s", engine);
        char err[256] = "";
        bn_connfile_t *cf = NULL;
        int64_t end = zclock_mono () + 2000;
        while (!cf && zclock_mono () < end)
            cf = bn_connfile_load (engine, err, sizeof err);
        ck_assert_msg (cf != NULL, "%s", err);
        ck_assert_uint_eq (bn_connfile_broadcast_count (cf), cases[i].leaves);
        bn_connfile_destroy (&cf);
        kill (pid, SIGTERM);
        ck_assert_int_eq (s_wait (pid, 5000), 0);
        ck_assert_int_ne (access (engine, F_OK), 0);
    }
}
END_TEST

START_TEST (test_binary_hub_shutdown)
{
    char profile[128];
    snprintf (profile, sizeof profile, "%s/prof", s_dir);
    const char *argv[] = {"--profile-dir", profile, NULL};
    pid_t pid = s_spawn (s_dir, argv, NULL);
    char client_path[256];
    snprintf (client_path, sizeof client_path,
              "%s/security/ipcontroller-client.json", profile);
    ck_assert (s_wait_file (client_path, 5000));
    char err[256] = "";
    bn_connfile_t *cf = NULL;
    int64_t end = zclock_mono () + 2000;
    while (!cf && zclock_mono () < end)
        cf = bn_connfile_load (client_path, err, sizeof err);
    ck_assert_msg (cf != NULL, "%s", err);
    bn_session_t *session = bn_session_new (bn_connfile_key (cf), NULL);
    zsock_t *query = t_sock (ZMQ_DEALER, NULL);
    t_connect (query, bn_connfile_port (cf, "registration"));
    bn_msg_t *msg = t_msg (session, BN_MSG_SHUTDOWN_REQUEST, NULL, NULL);
    t_send (&msg, query, session);
    bn_msg_t *reply = t_recv (query);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_SHUTDOWN_REPLY);
    bn_msg_destroy (&reply);
    //  the process exits by itself about a second later
    ck_assert_int_eq (s_wait (pid, 5000), 0);
    ck_assert_int_ne (access (client_path, F_OK), 0);
    zsock_destroy (&query);
    bn_session_destroy (&session);
    bn_connfile_destroy (&cf);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("cluster_controller");
    TCase *tc = tcase_create ("usage");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_reuse_files);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("cluster");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_mux_round_trip);
    tcase_add_test (tc, test_control_and_iopub);
    tcase_add_test (tc, test_unknown_engine);
    tcase_add_test (tc, test_stranded);
    tcase_add_test (tc, test_engine_shutdown);
    tcase_add_test (tc, test_task_and_broadcast);
    tcase_add_test (tc, test_bad_input);
    tcase_add_test (tc, test_same_uuid_again);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("binary");
    tcase_add_checked_fixture (tc, s_dir_setup, s_dir_teardown);
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_binary_flags);
    tcase_add_test (tc, test_binary_signal);
    tcase_add_test (tc, test_binary_settings);
    tcase_add_test (tc, test_binary_hub_shutdown);
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
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

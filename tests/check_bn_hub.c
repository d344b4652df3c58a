/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_hub: the engine table, and the hub's registration, queries and
    notifications as a client and engines see them over tcp (the hub runs
    inside a controller actor, the way it is deployed).  */
#include "bn_ctltest.h"
#include "bn_engine_table.h"
#include "bn_error.h"

static t_controller_t *s_ctl;
static t_client_t *s_client;

static void
s_start (const char *setting)
{
    s_ctl = t_controller_start (setting, NULL);
    s_client = t_client_new (s_ctl);
}

static void
s_setup (void)
{
    s_start (NULL);
}

static void
s_teardown (void)
{
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
}

//  Assert reply is a hub_error with ename and an evalue containing text.
static void
s_assert_hub_error (bn_msg_t *reply, const char *ename, const char *text)
{
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HUB_ERROR);
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), ename);
    ck_assert_msg (strstr (t_content_str (reply, "evalue"), text),
                   "evalue '%s' lacks '%s'", t_content_str (reply, "evalue"),
                   text);
    ck_assert (
        json_is_array (json_object_get (bn_msg_content (reply), "traceback")));
    ck_assert (json_is_object (
        json_object_get (bn_msg_content (reply), "engine_info")));
}

//  connection_request works and lists n engines.
//  Engines registered, as queue_request counts them: a key each, besides
//  status and unassigned. (A connection_request would make the hub hold
//  its notifications for a joining client's subscription.)
static void
s_assert_engines (size_t n)
{
    bn_msg_t *reply =
        t_query (s_client, BN_MSG_QUEUE_REQUEST,
                 json_pack ("{s:n, s:b}", "targets", "verbose", 0));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_QUEUE_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_uint_eq (json_object_size (bn_msg_content (reply)), n + 2);
    bn_msg_destroy (&reply);
}

START_TEST (test_usage)
{
    //  an engine registers
    t_engine_t *engine = t_engine_new (s_ctl);
    bn_msg_t *reply = t_engine_request (engine, -1);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_REGISTRATION_REPLY);
    //  registration_reply names the request as its parent (so that the
    //  engines of one process can share the socket they register on) and
    //  carries the engine's ports
    ck_assert_str_eq (bn_msg_parent_session (reply), engine->uuid);
    json_t *content = bn_msg_content (reply);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_int_eq (json_integer_value (json_object_get (content, "id")), 0);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "hb_period")), 10000);
    json_t *info = json_object_get (content, "connection_info");
    const char *keys[] = {"registration", "control", "mux",    "task",
                          "iopub",        "hb_ping", "hb_pong"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq (json_integer_value (json_object_get (info, keys[i])),
                          bn_connfile_port (s_ctl->engine, keys[i]));
    ck_assert_str_eq (json_string_value (json_object_get (info, "interface")),
                      "tcp://127.0.0.1");
    ck_assert_uint_eq (json_array_size (json_object_get (info, "broadcast")),
                       2);
    ck_assert_ptr_null (json_object_get (info, "key"));
    bn_msg_destroy (&reply);

    //  not yet registered: clients do not see it
    s_assert_engines (0);
    engine->id = 0;
    t_engine_connect (engine, s_ctl);

    //  its first pong finishes the registration and is announced
    int64_t start = zclock_mono ();
    bn_msg_t *note = NULL;
    while (!note && zclock_mono () - start < T_TIMEOUT) {
        t_engine_echo (engine);
        note = t_notification (s_client, BN_MSG_REGISTRATION_NOTIFICATION, 10);
    }
    ck_assert_ptr_nonnull (note);
    //  in well under a heartbeat period (10 s here)
    ck_assert_int_lt (zclock_mono () - start, 2000);
    ck_assert_str_eq (t_content_str (note, "uuid"), engine->uuid);
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (note), "id")), 0);
    ck_assert_uint_eq (json_object_size (bn_msg_parent (note)), 0);
    bn_msg_destroy (&note);
    s_assert_engines (1);
    reply = t_query (s_client, BN_MSG_CONNECTION_REQUEST, NULL);
    json_t *engines = json_object_get (bn_msg_content (reply), "engines");
    ck_assert_str_eq (json_string_value (json_object_get (engines, "0")),
                      engine->uuid);
    bn_msg_destroy (&reply);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_requested_ids)
{
    t_engine_t *a = t_engine_new (s_ctl);
    t_engine_t *b = t_engine_new (s_ctl);
    t_engine_t *c = t_engine_new (s_ctl);
    t_engine_t *d = t_engine_new (s_ctl);
    //  a requested id is honoured when free
    ck_assert_int_eq (t_engine_register (a, s_ctl, s_client, 5), 5);
    //  taken: the counter (past 5) gives the next one
    ck_assert_int_eq (t_engine_register (b, s_ctl, s_client, 5), 6);
    ck_assert_int_eq (t_engine_register (c, s_ctl, s_client, -1), 7);
    //  a free id below the counter is still honoured
    ck_assert_int_eq (t_engine_register (d, s_ctl, s_client, 2), 2);
    s_assert_engines (4);
    t_engine_destroy (&a);
    t_engine_destroy (&b);
    t_engine_destroy (&c);
    t_engine_destroy (&d);
}
END_TEST

START_TEST (test_uuid_in_use)
{
    t_engine_t *engine = t_engine_new (s_ctl);
    ck_assert_int_eq (t_engine_register (engine, s_ctl, s_client, -1), 0);
    //  the same uuid again
    bn_msg_t *reply = t_engine_request (engine, -1);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_REGISTRATION_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), "KeyError");
    char evalue[100];
    snprintf (evalue, sizeof evalue, "uuid '%s' in use", engine->uuid);
    ck_assert_str_eq (t_content_str (reply, "evalue"), evalue);
    bn_msg_destroy (&reply);
    //  the refused registration consumed id 1: ids are never reused
    t_engine_t *other = t_engine_new (s_ctl);
    ck_assert_int_eq (t_engine_register (other, s_ctl, s_client, -1), 2);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "refused"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "refused"), 1);
    t_engine_destroy (&engine);
    t_engine_destroy (&other);
}
END_TEST

START_TEST (test_registration_errors)
{
    //  no uuid
    bn_msg_t *reply = t_query (s_client, BN_MSG_REGISTRATION_REQUEST, NULL);
    s_assert_hub_error (reply, "KeyError", "uuid");
    bn_msg_destroy (&reply);
    //  a uuid that is not a string, an id that is not an integer
    reply = t_query (s_client, BN_MSG_REGISTRATION_REQUEST,
                     json_pack ("{s:i}", "uuid", 7));
    s_assert_hub_error (reply, "TypeError", "uuid");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_REGISTRATION_REQUEST,
                     json_pack ("{s:s, s:s}", "uuid", "abc", "id", "x"));
    s_assert_hub_error (reply, "TypeError", "id");
    bn_msg_destroy (&reply);
    //  an empty uuid, one with spaces
    reply = t_query (s_client, BN_MSG_REGISTRATION_REQUEST,
                     json_pack ("{s:s}", "uuid", ""));
    s_assert_hub_error (reply, "ValueError", "uuid");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_REGISTRATION_REQUEST,
                     json_pack ("{s:s}", "uuid", "a b"));
    s_assert_hub_error (reply, "ValueError", "uuid");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_content"), 5);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "bad_content"), 5);
    s_assert_engines (0);
}
END_TEST

//  Send engine's registration_request with key set to value (taken; NULL:
//  no key) and return the content of its registration_reply, which must
//  say ok.
static json_t *
s_ask (t_engine_t *engine, const char *key, json_t *value)
{
    json_t *content = json_pack ("{s:s}", "uuid", engine->uuid);
    if (value)
        json_object_set_new (content, key, value);
    bn_msg_t *msg =
        t_msg (engine->session, BN_MSG_REGISTRATION_REQUEST, content, NULL);
    t_send (&msg, engine->reg, engine->session);
    bn_msg_t *reply = t_recv (engine->reg);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    json_t *answer = json_incref (bn_msg_content (reply));
    bn_msg_destroy (&reply);
    return answer;
}

//  Register engine with features (taken: NULL for none) added to its
//  registration_request; returns its registration_notification.
static bn_msg_t *
s_register_with (t_engine_t *engine, json_t *features)
{
    json_t *answer = s_ask (engine, BN_REG_FEATURES, features);
    engine->id = (int)json_integer_value (json_object_get (answer, "id"));
    json_decref (answer);
    t_engine_connect (engine, s_ctl);
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (zclock_mono () < end) {
        t_engine_echo (engine);
        bn_msg_t *note =
            t_notification (s_client, BN_MSG_REGISTRATION_NOTIFICATION, 10);
        if (note && streq (t_content_str (note, "uuid"), engine->uuid))
            return note;
        bn_msg_destroy (&note);
    }
    ck_abort_msg ("engine %s was not registered", engine->uuid);
    return NULL;
}

//  What a banyan engine says it understands (bn_features) reaches the
//  clients with its registration_notification and in connection_reply; a
//  stock engine says nothing and is listed without; a list that is not
//  one is counted as bad content and ignored, the engine registered.
START_TEST (test_features)
{
    t_engine_t *banyan = t_engine_new (s_ctl);
    t_engine_t *stock = t_engine_new (s_ctl);
    t_engine_t *odd = t_engine_new (s_ctl);
    bn_msg_t *note =
        s_register_with (banyan, json_pack ("[s]", BN_FEATURE_OUTPUT));
    json_t *said = json_object_get (bn_msg_content (note), BN_REG_FEATURES);
    ck_assert_uint_eq (json_array_size (said), 1);
    ck_assert_str_eq (json_string_value (json_array_get (said, 0)),
                      BN_FEATURE_OUTPUT);
    bn_msg_destroy (&note);
    note = s_register_with (stock, NULL);
    ck_assert_ptr_null (
        json_object_get (bn_msg_content (note), BN_REG_FEATURES));
    bn_msg_destroy (&note);
    note = s_register_with (odd, json_pack ("{s:b}", BN_FEATURE_OUTPUT, 1));
    ck_assert_ptr_null (
        json_object_get (bn_msg_content (note), BN_REG_FEATURES));
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_content"), 1);

    bn_msg_t *reply = t_query (s_client, BN_MSG_CONNECTION_REQUEST, NULL);
    json_t *content = bn_msg_content (reply);
    ck_assert_uint_eq (json_object_size (json_object_get (content, "engines")),
                       3);
    json_t *features = json_object_get (content, BN_REG_FEATURES);
    ck_assert_uint_eq (json_object_size (features), 1);
    char key[16];
    snprintf (key, sizeof key, "%d", banyan->id);
    json_t *expected = json_pack ("[s]", BN_FEATURE_OUTPUT);
    ck_assert (json_equal (json_object_get (features, key), expected));
    json_decref (expected);
    bn_msg_destroy (&reply);
    t_engine_destroy (&banyan);
    t_engine_destroy (&stock);
    t_engine_destroy (&odd);
}
END_TEST

//  An engine that offers a shared broadcast connection (a routing id
//  "bn-shared ...") is told the broadcast port to connect it to: the
//  default tree runs folded, and all its engines share the first port. An
//  offer that names no shared connection is counted as bad content, and
//  the engine registers as a stock one does.
START_TEST (test_broadcast_via)
{
    const char *offers[] = {
        BN_SHARED_PREFIX "p1",  BN_SHARED_PREFIX "p1", NULL, "p1",
        BN_SHARED_PREFIX "a b", BN_SHARED_PREFIX};
    json_int_t expected[] = {0, 0, -1, -1, -1, -1};
    for (size_t i = 0; i < sizeof offers / sizeof offers[0]; i++) {
        t_engine_t *engine = t_engine_new (s_ctl);
        json_t *answer = s_ask (engine, BN_REG_BROADCAST_VIA,
                                offers[i] ? json_string (offers[i]) : NULL);
        json_t *port = json_object_get (answer, BN_REG_BROADCAST_PORT);
        if (expected[i] < 0)
            ck_assert_msg (!port, "offer %zu got a port", i);
        else
            ck_assert_int_eq (json_integer_value (port), expected[i]);
        json_decref (answer);
        t_engine_destroy (&engine);
    }
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_content"), 3);
}
END_TEST

START_TEST (test_stalled_registration)
{
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
    s_start ("controller.registration_timeout=0.3");
    t_engine_t *engine = t_engine_new (s_ctl);
    bn_msg_t *reply = t_engine_request (engine, -1);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "pending"), 1);
    //  its heart never answers: purged after the registration timeout
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (t_stat (s_ctl, "hub", "purged") == 0 && zclock_mono () < end)
        zclock_sleep (20);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "purged"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "pending"), 0);
    ck_assert_int_eq (t_stat (s_ctl, "heart", "expected"), 0);
    s_assert_engines (0);
    //  and the uuid is free again (its id is not)
    reply = t_engine_request (engine, -1);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (reply), "id")), 1);
    bn_msg_destroy (&reply);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_unregistration_request)
{
    t_engine_t *engine = t_engine_new (s_ctl);
    int id = t_engine_register (engine, s_ctl, s_client, -1);
    bn_msg_t *msg = t_msg (engine->session, BN_MSG_UNREGISTRATION_REQUEST,
                           json_pack ("{s:i}", "id", id), NULL);
    t_send (&msg, engine->reg, engine->session);
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 2000);
    ck_assert_ptr_nonnull (note);
    ck_assert_str_eq (t_content_str (note, "uuid"), engine->uuid);
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (note), "id")), id);
    bn_msg_destroy (&note);
    //  no reply to an unregistration_request
    ck_assert_ptr_null (t_recv_within (engine->reg, 200));
    s_assert_engines (0);
    //  again, or an id nobody has, or null: ignored
    msg = t_msg (engine->session, BN_MSG_UNREGISTRATION_REQUEST,
                 json_pack ("{s:i}", "id", id), NULL);
    t_send (&msg, engine->reg, engine->session);
    msg = t_msg (engine->session, BN_MSG_UNREGISTRATION_REQUEST,
                 json_pack ("{s:n}", "id"), NULL);
    t_send (&msg, engine->reg, engine->session);
    ck_assert_ptr_null (
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 200));
    ck_assert_int_eq (t_stat (s_ctl, "hub", "unregistrations"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "unregistrations"), 1);
    t_engine_destroy (&engine);
}
END_TEST

//  An engine back under the same uuid while its old requests wait out the
//  unregistration grace keeps its new place in the relays.
START_TEST (test_registered_again_in_grace)
{
    t_engine_t *engine = t_engine_new (s_ctl);
    int id = t_engine_register (engine, s_ctl, s_client, -1);
    //  a request it never answers makes the unregistration wait
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, engine->uuid);
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *got = t_recv (engine->shell);
    ck_assert_ptr_nonnull (got);
    bn_msg_destroy (&got);
    msg = t_msg (engine->session, BN_MSG_UNREGISTRATION_REQUEST,
                 json_pack ("{s:i}", "id", id), NULL);
    t_send (&msg, engine->reg, engine->session);
    int64_t until = zclock_mono () + T_TIMEOUT;
    while (t_stat (s_ctl, "hub", "unregistrations") == 0)
        ck_assert_int_lt (zclock_mono (), until);
    //  back at once with the same uuid, on new connections
    zsock_t **socks[] = {&engine->shell, &engine->control, &engine->iopub,
                         &engine->hb_sub, &engine->hb_dealer};
    for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
        zsock_destroy (socks[i]);
    zclock_sleep (100);
    t_engine_register (engine, s_ctl, s_client, -1);
    //  once the grace is over (the old registration's unregistration goes
    //  out), requests still reach it
    bn_msg_t *gone = t_notification (
        s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, T_TIMEOUT);
    ck_assert_msg (gone != NULL, "the grace did not end");
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (gone), "id")), id);
    bn_msg_destroy (&gone);
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, engine->uuid);
    t_send (&msg, s_client->mux, s_client->session);
    got = t_recv (engine->shell);
    ck_assert_msg (got != NULL, "the engine registered again got no request");
    ck_assert_str_eq (bn_msg_type (got), BN_MSG_APPLY_REQUEST);
    bn_msg_destroy (&got);
    s_assert_engines (1);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_iopub_shutdown_reply)
{
    t_engine_t *engine = t_engine_new (s_ctl);
    int id = t_engine_register (engine, s_ctl, s_client, -1);
    //  the engine shuts down: its iopub shutdown_reply unregisters it
    char topic[64];
    snprintf (topic, sizeof topic, "engine.%d.shutdown", id);
    bn_msg_t *msg =
        t_msg (engine->session, BN_MSG_SHUTDOWN_REPLY,
               json_pack ("{s:s, s:b}", "status", "ok", "restart", 0), topic);
    t_send (&msg, engine->iopub, engine->session);
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 2000);
    ck_assert_ptr_nonnull (note);
    ck_assert_str_eq (t_content_str (note, "uuid"), engine->uuid);
    bn_msg_destroy (&note);
    //  clients saw the shutdown_reply on iopub too
    bn_msg_t *got = t_recv (s_client->iopub);
    ck_assert_ptr_nonnull (got);
    ck_assert_str_eq (bn_msg_type (got), BN_MSG_SHUTDOWN_REPLY);
    bn_msg_destroy (&got);
    s_assert_engines (0);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_heart_failure)
{
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
    s_ctl = t_controller_start ("controller.heartbeat_period=100",
                                "controller.heartbeat_misses=2", NULL);
    s_client = t_client_new (s_ctl);
    t_engine_t *engine = t_engine_new (s_ctl);
    t_engine_register (engine, s_ctl, s_client, -1);
    //  it keeps answering for a while: still registered
    t_engine_beat_for (engine, 600);
    s_assert_engines (1);
    //  then falls silent: gone after more than two missed beats
    int64_t start = zclock_mono ();
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 2000);
    ck_assert_ptr_nonnull (note);
    ck_assert_int_lt (zclock_mono () - start, 1000);
    ck_assert_str_eq (t_content_str (note, "uuid"), engine->uuid);
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "heart_failures"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "heart_failures"), 1);
    s_assert_engines (0);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_heart_closed)
{
    //  10 s beats: an engine whose heart's connection closes (its process
    //  died) is lost at once, not after the heartbeat bound, and the other
    //  stays
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
    s_ctl = t_controller_start ("controller.heartbeat_period=10000",
                                "controller.heartbeat_misses=2", NULL);
    s_client = t_client_new (s_ctl);
    t_engine_t *engine = t_engine_new (s_ctl);
    t_engine_t *other = t_engine_new (s_ctl);
    t_engine_register (engine, s_ctl, s_client, -1);
    t_engine_register (other, s_ctl, s_client, -1);
    s_assert_engines (2);
    int64_t start = zclock_mono ();
    zsock_destroy (&engine->hb_dealer);
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 3000);
    ck_assert_ptr_nonnull (note);
    ck_assert_int_lt (zclock_mono () - start, 3000);
    ck_assert_str_eq (t_content_str (note, "uuid"), engine->uuid);
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "heart_failures"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "heart", "closed"), 1);
    s_assert_engines (1);
    t_engine_destroy (&engine);
    t_engine_destroy (&other);
}
END_TEST

START_TEST (test_queue_request)
{
    t_engine_t *engine = t_engine_new (s_ctl);
    int id = t_engine_register (engine, s_ctl, s_client, -1);
    char key[16];
    snprintf (key, sizeof key, "%d", id);
    //  one mux request answered, one waiting
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, engine->uuid);
    char *done_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    char answered[BN_MSG_ID_SIZE];
    t_engine_answer (engine, engine->shell, answered, sizeof answered);
    bn_msg_t *reply = t_recv (s_client->mux);
    bn_msg_destroy (&reply);
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, engine->uuid);
    char *pending_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *request = t_recv (engine->shell);
    bn_msg_destroy (&request);

    //  targets null: every engine, counts
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:n, s:b}", "targets", "verbose", 0));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_QUEUE_REPLY);
    json_t *content = bn_msg_content (reply);
    ck_assert_uint_eq (json_object_size (content), 3);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    json_t *expected =
        json_pack ("{s:i, s:i, s:i}", "queue", 1, "completed", 1, "tasks", 0);
    ck_assert (json_equal (json_object_get (content, key), expected));
    json_decref (expected);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "unassigned")), 0);
    bn_msg_destroy (&reply);

    //  verbose, by uuid: msg_id lists
    reply = t_query (
        s_client, BN_MSG_QUEUE_REQUEST,
        json_pack ("{s:[s], s:b}", "targets", engine->uuid, "verbose", 1));
    content = bn_msg_content (reply);
    expected = json_pack ("{s:[s], s:[s], s:[]}", "queue", pending_id,
                          "completed", done_id, "tasks");
    ck_assert (json_equal (json_object_get (content, key), expected));
    json_decref (expected);
    ck_assert (json_is_array (json_object_get (content, "unassigned")));
    bn_msg_destroy (&reply);

    //  a single int target, a single uuid string
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:i}", "targets", id));
    ck_assert_ptr_nonnull (json_object_get (bn_msg_content (reply), key));
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:s}", "targets", engine->uuid));
    ck_assert_ptr_nonnull (json_object_get (bn_msg_content (reply), key));
    bn_msg_destroy (&reply);

    //  bad targets
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:[i, s, i]}", "targets", id, "nope", 99));
    s_assert_hub_error (reply, "IndexError", "No Such Engine: ['nope', 99]");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:[]}", "targets"));
    s_assert_hub_error (reply, "IndexError", "No Engines Registered");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:{s:i}}", "targets", "a", 1));
    s_assert_hub_error (reply, "TypeError", "targets");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_QUEUE_REQUEST,
                     json_pack ("{s:n, s:s}", "targets", "verbose", "yes"));
    s_assert_hub_error (reply, "TypeError", "verbose");
    bn_msg_destroy (&reply);
    free (done_id);
    free (pending_id);
    t_engine_destroy (&engine);
}
END_TEST

START_TEST (test_queue_request_no_engines)
{
    bn_msg_t *reply =
        t_query (s_client, BN_MSG_QUEUE_REQUEST,
                 json_pack ("{s:n, s:b}", "targets", "verbose", 0));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_QUEUE_REPLY);
    ck_assert_uint_eq (json_object_size (bn_msg_content (reply)), 2);
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_unsupported_queries)
{
    const char *types[] = {"load_request", "become_dask_request", "frobnicate"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        bn_msg_t *reply = t_query (s_client, types[i], NULL);
        s_assert_hub_error (reply, "NotImplementedError", "not supported");
        ck_assert (strstr (t_content_str (reply, "evalue"), types[i]));
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (t_stat (s_ctl, "hub", "unsupported"), 3);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "unsupported"), 3);
}
END_TEST

START_TEST (test_stats_request)
{
    //  every actor's counters, as the controller's STATS shows them
    json_t *actors = t_query_stats (s_client);
    //  the default tree, kary:2 of depth 1, folded into its root
    t_assert_actors (actors, 1);
    json_decref (actors);
    //  the same counters, kept from the start; this query is one more
    json_int_t queries = t_query_stat (s_client, "hub", "queries");
    ck_assert_int_eq (t_stat (s_ctl, "hub", "queries"), queries);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "queries"), queries + 1);
    //  they follow the cluster: an engine registers with the hub, the
    //  relays and the tree
    ck_assert_int_eq (t_query_stat (s_client, "hub", "registrations"), 0);
    t_engine_t *engine = t_engine_new (s_ctl);
    t_engine_register (engine, s_ctl, s_client, -1);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "registrations"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "engines"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "heart", "hearts"), 1);
    //  a request through the mux: received from the client, then the
    //  engine's reply; both forwarded
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_EXECUTE_REQUEST, NULL, engine->uuid);
    t_send (&msg, s_client->mux, s_client->session);
    char msg_id[BN_MSG_ID_SIZE];
    t_engine_answer (engine, engine->shell, msg_id, sizeof msg_id);
    bn_msg_t *reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    bn_msg_destroy (&reply);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "received"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "mux", "forwarded"), 2);
    t_engine_destroy (&engine);
    //  what the request's content holds does not matter
    reply = t_query (s_client, BN_MSG_STATS_REQUEST,
                     json_pack ("{s:s}", "actor", "hub"));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_STATS_REPLY);
    t_assert_actors (json_object_get (bn_msg_content (reply), "actors"), 1);
    bn_msg_destroy (&reply);
}
END_TEST

//  The hub passes record queries to their answers (check_bn_record_queries
//  tests each), which count in its own counters.
START_TEST (test_record_queries)
{
    bn_msg_t *reply = t_query (s_client, BN_MSG_HISTORY_REQUEST, NULL);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HISTORY_REPLY);
    ck_assert_uint_eq (
        json_array_size (json_object_get (bn_msg_content (reply), "history")),
        0);
    bn_msg_destroy (&reply);
    //  errors in the query's own reply type
    reply = t_query (s_client, BN_MSG_RESULT_REQUEST,
                     json_pack ("{s:i}", "msg_ids", 5));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_RESULT_REPLY);
    ck_assert_str_eq (t_content_str (reply, "ename"), "TypeError");
    bn_msg_destroy (&reply);
    reply = t_query (s_client, BN_MSG_PURGE_REQUEST,
                     json_pack ("{s:[i]}", "engine_ids", 99));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_PURGE_REPLY);
    ck_assert_str_eq (t_content_str (reply, "ename"), "IndexError");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "errors"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "bad_content"), 1);
    //  and the hub still answers
    bn_msg_t *ok = t_query (s_client, BN_MSG_HISTORY_REQUEST, NULL);
    ck_assert_str_eq (t_content_str (ok, "status"), "ok");
    bn_msg_destroy (&ok);
}
END_TEST

START_TEST (test_shutdown_request)
{
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_SHUTDOWN_REQUEST, NULL, NULL);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->query, s_client->session);
    bn_msg_t *reply = t_recv (s_client->query);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_SHUTDOWN_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    //  every client hears about it, parent = the request
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_SHUTDOWN_NOTIFICATION, 1000);
    ck_assert_ptr_nonnull (note);
    ck_assert_str_eq (t_content_str (note, "status"), "ok");
    ck_assert_str_eq (bn_msg_parent_id (note), msg_id);
    ck_assert_uint_eq (bn_msg_nidents (note), 0);
    bn_msg_destroy (&note);
    free (msg_id);
    //  about a second later the controller stops and says so
    int64_t start = zclock_mono ();
    zpoller_t *poller = zpoller_new (s_ctl->actor, NULL);
    ck_assert_ptr_nonnull (zpoller_wait (poller, 3000));
    zpoller_destroy (&poller);
    char *event = zstr_recv (s_ctl->actor);
    ck_assert_str_eq (event, "SHUTDOWN");
    zstr_free (&event);
    ck_assert_int_gt (zclock_mono () - start, 700);
    //  having removed its files
    ck_assert_int_ne (access (s_ctl->client_path, F_OK), 0);
    ck_assert_int_ne (access (s_ctl->engine_path, F_OK), 0);
}
END_TEST

//  A good query still gets its answer after whatever came before.
static void
s_assert_still_works (void)
{
    s_assert_engines (0);
}

//  Frames signed with the controller's key, header/content as given.
static void
s_raw_query (const char *header, const char *content, const char *sig)
{
    const void *parts[4] = {header, "{}", "{}", content};
    size_t sizes[4] = {strlen (header), 2, 2, strlen (content)};
    char good[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (s_client->session, parts, sizes, good);
    t_send_raw (s_client->query, BN_DELIM, sig ? sig : good, header, "{}", "{}",
                content, NULL);
}

static char *
s_header (const char *msg_id, const char *type)
{
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    return zsys_sprintf ("{\"msg_id\":\"%s\",\"msg_type\":\"%s\","
                         "\"username\":\"u\",\"session\":\"%s\","
                         "\"date\":\"%s\",\"version\":\"5.3\"}",
                         msg_id, type, bn_session_id (s_client->session), date);
}

START_TEST (test_bad_input)
{
    s_assert_still_works ();
    //  truncated frames, no delimiter
    t_send_raw (s_client->query, BN_DELIM, "sig", "{}", NULL);
    t_send_raw (s_client->query, "no", "delimiter", NULL);
    s_assert_still_works ();
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_frame"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "bad_frame"), 2);

    //  bad and missing signatures
    char *header = s_header ("q-1", BN_MSG_CONNECTION_REQUEST);
    s_raw_query (header, "{}", "deadbeef");
    s_raw_query (header, "{}", "");
    s_assert_still_works ();
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_signature"), 2);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "bad_signature"), 2);

    //  a replayed query is answered once
    s_raw_query (header, "{}", NULL);
    bn_msg_t *reply = t_recv (s_client->query);
    ck_assert_str_eq (bn_msg_parent_id (reply), "q-1");
    bn_msg_destroy (&reply);
    s_raw_query (header, "{}", NULL);
    ck_assert_ptr_null (t_recv_within (s_client->query, 200));
    ck_assert_int_eq (t_stat (s_ctl, "hub", "replayed"), 1);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "replayed"), 1);
    zstr_free (&header);
    s_assert_still_works ();

    //  a header that is not JSON: dropped (nothing to answer to)
    s_raw_query ("{\"msg_id\": ", "{}", NULL);
    ck_assert_ptr_null (t_recv_within (s_client->query, 200));
    s_assert_still_works ();

    //  content that is not JSON: hub_error
    header = s_header ("q-2", BN_MSG_QUEUE_REQUEST);
    s_raw_query (header, "{\"targets\": [", NULL);
    reply = t_recv (s_client->query);
    ck_assert_str_eq (bn_msg_parent_id (reply), "q-2");
    s_assert_hub_error (reply, "ValueError", "content");
    bn_msg_destroy (&reply);
    zstr_free (&header);
    //  content that is JSON but not an object
    header = s_header ("q-3", BN_MSG_QUEUE_REQUEST);
    s_raw_query (header, "[1, 2]", NULL);
    reply = t_recv (s_client->query);
    s_assert_hub_error (reply, "ValueError", "content");
    bn_msg_destroy (&reply);
    zstr_free (&header);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "bad_json"), 3);
    ck_assert_int_eq (t_query_stat (s_client, "hub", "bad_json"), 3);
    s_assert_still_works ();

    //  msg_type of the wrong type
    s_raw_query ("{\"msg_id\": \"q-4\", \"msg_type\": 42}", "{}", NULL);
    reply = t_recv (s_client->query);
    ck_assert_str_eq (bn_msg_parent_id (reply), "q-4");
    s_assert_hub_error (reply, "KeyError", "msg_type");
    bn_msg_destroy (&reply);
    s_assert_still_works ();

    //  an unknown msg_type
    reply = t_query (s_client, "no_such_request", NULL);
    s_assert_hub_error (reply, "NotImplementedError", "no_such_request");
    bn_msg_destroy (&reply);
    s_assert_still_works ();

    //  a 100 MB buffer on a query
    bn_msg_t *msg =
        t_msg (s_client->session, BN_MSG_CONNECTION_REQUEST, NULL, NULL);
    size_t size = 100 * 1024 * 1024;
    char *big = malloc (size);
    memset (big, 'x', size);
    bn_msg_add_buffer_owned (msg, big, size);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->query, s_client->session);
    zsock_set_rcvtimeo (s_client->query, 20000);
    reply = t_recv (s_client->query);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    free (msg_id);
    s_assert_still_works ();
}
END_TEST

//  --------------------------------------------------------------------------
//  bn_engine_table

START_TEST (test_table)
{
    bn_engine_table_t *table = bn_engine_table_new ();
    ck_assert_int_eq (bn_engine_table_new_id (table, -1), 0);
    ck_assert_int_eq (bn_engine_table_add_pending (table, "a", 0), 0);
    ck_assert (bn_engine_table_is_pending (table, "a"));
    ck_assert_int_eq (bn_engine_table_id (table, "a"), -1);
    ck_assert_ptr_null (bn_engine_table_uuid (table, 0, false));
    ck_assert_str_eq (bn_engine_table_uuid (table, 0, true), "a");
    //  a pending id is taken
    ck_assert_int_eq (bn_engine_table_new_id (table, 0), 1);
    ck_assert_int_eq (bn_engine_table_add_pending (table, "a", 1), -1);
    ck_assert_int_eq (bn_engine_table_finish (table, "a"), 0);
    ck_assert_int_eq (bn_engine_table_finish (table, "a"), -1);
    ck_assert_int_eq (bn_engine_table_id (table, "a"), 0);
    ck_assert_uint_eq (bn_engine_table_size (table), 1);
    //  requests above the counter move it
    ck_assert_int_eq (bn_engine_table_new_id (table, 10), 10);
    bn_engine_table_add_pending (table, "b", 10);
    bn_engine_table_finish (table, "b");
    ck_assert_int_eq (bn_engine_table_new_id (table, -1), 11);
    json_t *ids = bn_engine_table_ids (table);
    json_t *expected = json_pack ("[i, i]", 0, 10);
    ck_assert (json_equal (ids, expected));
    json_decref (ids);
    json_decref (expected);
    json_t *engines = bn_engine_table_engines (table);
    ck_assert_str_eq (json_string_value (json_object_get (engines, "10")), "b");
    json_decref (engines);
    //  removed: the counter never gives its id again, a request may
    ck_assert_int_eq (bn_engine_table_remove (table, "b"), 10);
    ck_assert_int_eq (bn_engine_table_remove (table, "b"), -1);
    ck_assert (!bn_engine_table_has (table, "b"));
    ck_assert_int_eq (bn_engine_table_new_id (table, -1), 12);
    ck_assert_int_eq (bn_engine_table_new_id (table, 10), 10);
    ck_assert_uint_eq (bn_engine_table_size (table), 1);
    //  a peer asking for the last id does not overflow the counter
    ck_assert_int_eq (bn_engine_table_new_id (table, INT32_MAX - 1),
                      INT32_MAX - 1);
    ck_assert_int_eq (bn_engine_table_add_pending (table, "c", INT32_MAX - 1),
                      0);
    ck_assert_int_eq (bn_engine_table_new_id (table, -1), 1);
    ck_assert_int_eq (bn_engine_table_new_id (table, -1), 1);
    ck_assert_int_eq (bn_engine_table_new_id (table, INT32_MAX - 1), 1);
    bn_engine_table_destroy (&table);
    ck_assert_ptr_null (table);
    bn_engine_table_destroy (&table);
}
END_TEST

//  True if the engine state file at path lists uuid.
static bool
s_state_lists (const char *path, const char *uuid)
{
    json_t *state = json_load_file (path, 0, NULL);
    json_t *listed = json_object_get (state, "engines");
    bool found = false;
    const char *key;
    json_t *value;
    json_object_foreach (listed, key, value)
    {
        if (json_is_string (value) && streq (json_string_value (value), uuid))
            found = true;
    }
    json_decref (state);
    return found;
}

//  A burst of registrations: every registration_notification comes after
//  the state file lists its engine, and each engine is announced once; an
//  unregistration is in the state file when it is announced.
START_TEST (test_registration_burst_state)
{
    enum { N = 8 };
    t_engine_t *engines[N];
    for (int i = 0; i < N; i++) {
        engines[i] = t_engine_new (s_ctl);
        bn_msg_t *reply = t_engine_request (engines[i], -1);
        ck_assert_str_eq (t_content_str (reply, "status"), "ok");
        engines[i]->id = (int)json_integer_value (
            json_object_get (bn_msg_content (reply), "id"));
        bn_msg_destroy (&reply);
        t_engine_connect (engines[i], s_ctl);
    }
    char path[256];
    snprintf (path, sizeof path, "%s/log/engines.json", s_ctl->profile);
    bool seen[N] = {false};
    int count = 0;
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (count < N && zclock_mono () < end) {
        for (int i = 0; i < N; i++)
            t_engine_echo (engines[i]);
        bn_msg_t *note =
            t_notification (s_client, BN_MSG_REGISTRATION_NOTIFICATION, 10);
        if (!note)
            continue;
        const char *uuid = t_content_str (note, "uuid");
        int i = 0;
        while (i < N && strcmp (engines[i]->uuid, uuid) != 0)
            i++;
        ck_assert_int_lt (i, N);
        ck_assert (!seen[i]);
        seen[i] = true;
        count++;
        ck_assert_msg (s_state_lists (path, uuid),
                       "engine %s announced before the state file listed it",
                       uuid);
        bn_msg_destroy (&note);
    }
    ck_assert_int_eq (count, N);
    s_assert_engines (N);
    //  an unregistration: the state file has dropped the engine by then
    bn_msg_t *msg = t_msg (engines[0]->session, BN_MSG_UNREGISTRATION_REQUEST,
                           json_pack ("{s:i}", "id", engines[0]->id), NULL);
    t_send (&msg, engines[0]->reg, engines[0]->session);
    bn_msg_t *note =
        t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION, 5000);
    ck_assert_ptr_nonnull (note);
    ck_assert_str_eq (t_content_str (note, "uuid"), engines[0]->uuid);
    bn_msg_destroy (&note);
    ck_assert (!s_state_lists (path, engines[0]->uuid));
    ck_assert (s_state_lists (path, engines[1]->uuid));
    for (int i = 0; i < N; i++)
        t_engine_destroy (&engines[i]);
}
END_TEST

//  --------------------------------------------------------------------------
//  Host nodes (doc/hosts.md): a fake host node's links to the controller

typedef struct {
    char link[64];
    bn_session_t *session; //  the host node's own messages
    zsock_t *query;        //  DEALER, id link -> registration
    zsock_t *mux;          //  DEALER, id link -> engine mux port
    zsock_t *hb_sub;       //  SUB -> hb_ping
    zsock_t *hb_dealer;    //  DEALER, id link -> hb_pong
} s_host_t;

static s_host_t *
s_host_new (t_controller_t *controller, const char *name)
{
    s_host_t *self = calloc (1, sizeof *self);
    ck_assert_ptr_nonnull (self);
    snprintf (self->link, sizeof self->link, BN_HOST_LINK_PREFIX "%s %08x",
              name, (unsigned)getpid ());
    self->session = bn_session_new (controller->key, NULL);
    bn_connfile_t *file = controller->engine;
    self->query = t_sock (ZMQ_DEALER, self->link);
    t_connect (self->query, t_port (file, "registration"));
    self->mux = t_sock (ZMQ_DEALER, self->link);
    t_connect (self->mux, t_port (file, "mux"));
    self->hb_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (self->hb_sub, t_port (file, "hb_ping"));
    self->hb_dealer = t_sock (ZMQ_DEALER, self->link);
    t_connect (self->hb_dealer, t_port (file, "hb_pong"));
    return self;
}

static void
s_host_destroy (s_host_t **self_p)
{
    s_host_t *self = *self_p;
    zsock_destroy (&self->query);
    zsock_destroy (&self->mux);
    zsock_destroy (&self->hb_sub);
    zsock_destroy (&self->hb_dealer);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

//  Answer the controller's pings to the link.
static void
s_host_echo (s_host_t *self)
{
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    while (zmq_msg_recv (&frame, zsock_resolve (self->hb_sub), ZMQ_DONTWAIT) >=
           0)
        zmq_msg_send (&frame, zsock_resolve (self->hb_dealer), 0);
    zmq_msg_close (&frame);
}

//  The next message on the host node's query link, answering pings while
//  it waits; NULL if none within ms.
static bn_msg_t *
s_host_recv (s_host_t *self, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (zclock_mono () < end) {
        s_host_echo (self);
        bn_msg_t *msg = t_recv_within (self->query, 10);
        if (msg) {
            ck_assert_int_eq (bn_msg_verify (msg, self->session, false), 0);
            return msg;
        }
    }
    return NULL;
}

//  The host node's own message of type with content (taken).
static void
s_host_says (s_host_t *self, const char *type, json_t *content)
{
    bn_msg_t *msg = t_msg (self->session, type, content, NULL);
    t_send (&msg, self->query, self->session);
}

//  Say bn_host_request with engines (taken; NULL: none) and return the
//  bn_host_reply, answering pings meanwhile.
static bn_msg_t *
s_host_hello (s_host_t *self, json_t *engines)
{
    s_host_says (self, BN_MSG_HOST_REQUEST,
                 json_pack ("{s:s, s:o}", "name", "h1", "engines",
                            engines ? engines : json_array ()));
    bn_msg_t *reply = s_host_recv (self, T_TIMEOUT);
    ck_assert_msg (reply != NULL, "no " BN_MSG_HOST_REPLY);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HOST_REPLY);
    ck_assert_uint_eq (bn_msg_nidents (reply), 0);
    return reply;
}

//  An engine of the host node registers through its link; returns its id.
static int
s_host_register (s_host_t *self, const char *uuid, bn_session_t *session)
{
    bn_msg_t *msg = t_msg (session, BN_MSG_REGISTRATION_REQUEST,
                           json_pack ("{s:s}", "uuid", uuid), uuid);
    t_send (&msg, self->query, session);
    bn_msg_t *reply = s_host_recv (self, T_TIMEOUT);
    ck_assert_ptr_nonnull (reply);
    //  the reply comes back through the link, addressed to the engine
    ck_assert_uint_eq (bn_msg_nidents (reply), 1);
    ck_assert (bn_msg_ident_is (reply, 0, uuid, strlen (uuid)));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_REGISTRATION_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    int id = (int)json_integer_value (
        json_object_get (bn_msg_content (reply), "id"));
    bn_msg_destroy (&reply);
    return id;
}

//  The next message on the client's mux, answering the link's pings.
static bn_msg_t *
s_host_mux_reply (s_host_t *self)
{
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (zclock_mono () < end) {
        s_host_echo (self);
        bn_msg_t *reply = t_recv_within (s_client->mux, 10);
        if (reply)
            return reply;
    }
    return NULL;
}

//  Wait for a notification of type about uuid, answering the link's pings.
static bn_msg_t *
s_host_notification (s_host_t *self, const char *type, const char *uuid, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (zclock_mono () < end) {
        s_host_echo (self);
        bn_msg_t *note = t_notification (s_client, type, 10);
        if (note && streq (t_content_str (note, "uuid"), uuid))
            return note;
        bn_msg_destroy (&note);
    }
    return NULL;
}

//  A controller beating every 100 ms, misses (text) allowed.
static void
s_host_restart (const char *misses)
{
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
    char setting[64];
    snprintf (setting, sizeof setting, "controller.heartbeat_misses=%s",
              misses);
    s_ctl =
        t_controller_start ("controller.heartbeat_period=100", setting, NULL);
    s_client = t_client_new (s_ctl);
}

START_TEST (test_host_node)
{
    s_host_restart ("20");
    s_host_t *host = s_host_new (s_ctl, "h1");
    //  the host node says hello; the hub answers once the link's heart has
    bn_msg_t *reply = s_host_hello (host, NULL);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    json_t *content = bn_msg_content (reply);
    ck_assert_int_eq (json_integer_value (json_object_get (content, "index")),
                      0);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "hb_period")), 100);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "hb_misses")), 20);
    ck_assert_uint_eq (json_array_size (json_object_get (content, "refused")),
                       0);
    bn_msg_destroy (&reply);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "hosts"), 1);

    //  an engine registers through it, and is registered once the host node
    //  says its heart answered
    char uuid[40];
    bn_session_new_id (uuid);
    bn_session_t *engine = bn_session_new (s_ctl->key, uuid);
    int id = s_host_register (host, uuid, engine);
    ck_assert_int_eq (id, 0);
    s_assert_engines (0);
    s_host_says (host, BN_MSG_HOST_ENGINES,
                 json_pack ("{s:[s]}", "alive", uuid));
    bn_msg_t *note = s_host_notification (
        host, BN_MSG_REGISTRATION_NOTIFICATION, uuid, T_TIMEOUT);
    ck_assert_ptr_nonnull (note);
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (note), "id")), id);
    bn_msg_destroy (&note);
    s_assert_engines (1);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "host_engines"), 1);

    //  a mux request reaches it through the link, and its reply the client
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *request = t_recv (host->mux);
    ck_assert_ptr_nonnull (request);
    ck_assert (bn_msg_ident_is (request, 0, uuid, strlen (uuid)));
    ck_assert_str_eq (bn_msg_id (request), msg_id);
    bn_msg_t *answer = bn_msg_new_reply (engine, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (answer, json_pack ("{s:s}", "status", "ok"));
    bn_msg_destroy (&request);
    t_send (&answer, host->mux, engine);
    reply = s_host_mux_reply (host);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    bn_msg_destroy (&reply);
    free (msg_id);

    //  its heart stops on the host: the hub hears it at once, its pending
    //  request fails naming it, then it is unregistered
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, uuid);
    msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    request = t_recv (host->mux);
    ck_assert_ptr_nonnull (request);
    bn_msg_destroy (&request);
    int64_t start = zclock_mono ();
    s_host_says (host, BN_MSG_HOST_ENGINES,
                 json_pack ("{s:[s]}", "lost", uuid));
    reply = s_host_mux_reply (host);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    char text[200];
    snprintf (text, sizeof text, "Engine %d died", id);
    ck_assert_msg (strstr (t_content_str (reply, "evalue"), text), "%s",
                   t_content_str (reply, "evalue"));
    bn_msg_destroy (&reply);
    note = s_host_notification (host, BN_MSG_UNREGISTRATION_NOTIFICATION, uuid,
                                T_TIMEOUT);
    ck_assert_ptr_nonnull (note);
    bn_msg_destroy (&note);
    ck_assert_int_lt (zclock_mono () - start, 1500);
    s_assert_engines (0);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "heart_failures"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "host_engines"), 0);
    free (msg_id);
    bn_session_destroy (&engine);
    s_host_destroy (&host);
}
END_TEST

START_TEST (test_host_link_lost)
{
    s_host_restart ("4");
    s_host_t *host = s_host_new (s_ctl, "h1");
    bn_msg_t *reply = s_host_hello (host, NULL);
    bn_msg_destroy (&reply);
    char uuid[40];
    bn_session_new_id (uuid);
    bn_session_t *engine = bn_session_new (s_ctl->key, uuid);
    int id = s_host_register (host, uuid, engine);
    s_host_says (host, BN_MSG_HOST_ENGINES,
                 json_pack ("{s:[s]}", "alive", uuid));
    bn_msg_t *note = s_host_notification (
        host, BN_MSG_REGISTRATION_NOTIFICATION, uuid, T_TIMEOUT);
    ck_assert_ptr_nonnull (note);
    bn_msg_destroy (&note);

    //  a request is pending on the engine when the link falls silent
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->mux, s_client->session);
    bn_msg_t *request = t_recv (host->mux);
    ck_assert_ptr_nonnull (request);
    bn_msg_destroy (&request);
    reply = t_recv (s_client->mux);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    bn_msg_destroy (&reply);
    note = t_notification (s_client, BN_MSG_UNREGISTRATION_NOTIFICATION,
                           T_TIMEOUT);
    ck_assert_ptr_nonnull (note);
    ck_assert_str_eq (t_content_str (note, "uuid"), uuid);
    bn_msg_destroy (&note);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "hosts_lost"), 1);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "hosts"), 0);
    s_assert_engines (0);
    free (msg_id);

    //  the link works again: the hub no longer knows it, and says so
    s_host_says (host, BN_MSG_HOST_ENGINES, json_object ());
    reply = s_host_recv (host, T_TIMEOUT);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HOST_REPLY);
    ck_assert_str_eq (t_content_str (reply, "ename"), "KeyError");
    bn_msg_destroy (&reply);

    //  so the host node says hello again with its engine: served again,
    //  same id and uuid
    reply = s_host_hello (host, json_pack ("[[s, i]]", uuid, id));
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    ck_assert_uint_eq (
        json_array_size (json_object_get (bn_msg_content (reply), "refused")),
        0);
    bn_msg_destroy (&reply);
    note = s_host_notification (host, BN_MSG_REGISTRATION_NOTIFICATION, uuid,
                                T_TIMEOUT);
    ck_assert_ptr_nonnull (note);
    ck_assert_int_eq (
        json_integer_value (json_object_get (bn_msg_content (note), "id")), id);
    bn_msg_destroy (&note);
    msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, uuid);
    t_send (&msg, s_client->mux, s_client->session);
    request = t_recv (host->mux);
    ck_assert_ptr_nonnull (request);
    bn_msg_t *answer = bn_msg_new_reply (engine, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (answer, json_pack ("{s:s}", "status", "ok"));
    bn_msg_destroy (&request);
    t_send (&answer, host->mux, engine);
    reply = s_host_mux_reply (host);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    bn_msg_destroy (&reply);

    //  an engine whose id another engine holds cannot come back
    t_engine_t *other = t_engine_new (s_ctl);
    int taken = t_engine_register (other, s_ctl, s_client, -1);
    char stranger[40];
    bn_session_new_id (stranger);
    reply = s_host_hello (
        host, json_pack ("[[s, i], [s, i]]", uuid, id, stranger, taken));
    json_t *refused = json_object_get (bn_msg_content (reply), "refused");
    ck_assert_uint_eq (json_array_size (refused), 1);
    ck_assert_str_eq (json_string_value (json_array_get (refused, 0)),
                      stranger);
    bn_msg_destroy (&reply);
    s_assert_engines (2);
    t_engine_destroy (&other);
    bn_session_destroy (&engine);
    s_host_destroy (&host);
}
END_TEST

START_TEST (test_host_bad_input)
{
    s_host_t *host = s_host_new (s_ctl, "h1");
    //  no name, engines not pairs
    const char *bad[] = {"{}",
                         "{\"name\": \"h1\", \"leaf\": 99, \"leaf_id\": \"s\"}",
                         "{\"name\": \"h1\", \"leaf\": 0}",
                         "{\"name\": \"h1\", \"engines\": [\"x\"]}",
                         "{\"name\": \"h1\", \"engines\": [[\"a b\", 1]]}",
                         "{\"name\": 3}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_host_says (host, BN_MSG_HOST_REQUEST, json_loads (bad[i], 0, NULL));
        bn_msg_t *reply = s_host_recv (host, T_TIMEOUT);
        ck_assert_ptr_nonnull (reply);
        ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HOST_REPLY);
        ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
        bn_msg_destroy (&reply);
    }
    //  an engine's registration through a link the hub does not know
    char uuid[40];
    bn_session_new_id (uuid);
    bn_session_t *engine = bn_session_new (s_ctl->key, uuid);
    bn_msg_t *msg = t_msg (engine, BN_MSG_REGISTRATION_REQUEST,
                           json_pack ("{s:s}", "uuid", uuid), uuid);
    t_send (&msg, host->query, engine);
    bn_msg_t *reply = s_host_recv (host, T_TIMEOUT);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HOST_REPLY);
    ck_assert_str_eq (t_content_str (reply, "ename"), "KeyError");
    bn_msg_destroy (&reply);
    s_assert_engines (0);
    ck_assert_int_eq (t_stat (s_ctl, "hub", "hosts"), 0);
    bn_session_destroy (&engine);
    s_host_destroy (&host);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_hub");
    TCase *tc = tcase_create ("hub");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_registration_burst_state);
    tcase_add_test (tc, test_requested_ids);
    tcase_add_test (tc, test_uuid_in_use);
    tcase_add_test (tc, test_registration_errors);
    tcase_add_test (tc, test_features);
    tcase_add_test (tc, test_broadcast_via);
    tcase_add_test (tc, test_stalled_registration);
    tcase_add_test (tc, test_unregistration_request);
    tcase_add_test (tc, test_registered_again_in_grace);
    tcase_add_test (tc, test_iopub_shutdown_reply);
    tcase_add_test (tc, test_heart_failure);
    tcase_add_test (tc, test_heart_closed);
    tcase_add_test (tc, test_queue_request);
    tcase_add_test (tc, test_queue_request_no_engines);
    tcase_add_test (tc, test_unsupported_queries);
    tcase_add_test (tc, test_stats_request);
    tcase_add_test (tc, test_record_queries);
    tcase_add_test (tc, test_shutdown_request);
    tcase_add_test (tc, test_bad_input);
    tcase_add_test (tc, test_host_node);
    tcase_add_test (tc, test_host_link_lost);
    tcase_add_test (tc, test_host_bad_input);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("engine_table");
    tcase_add_test (tc, test_table);
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

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_relay: the mux/control swap relay and the iopub forwarder,
    driven directly (no loop) between fake clients and engines over tcp.  */
#include "bn_ctltest.h"
#include "bn_error.h"
#include "bn_relay.h"

static const char *s_key = "e05ab558-73805a94e21c7ce24a0654fe";
static const char *s_uuid = "1e38875f-68ce0b6f9accadab8cc143d0";

static bn_session_t *s_relay_session; //  the controller's session
static bn_session_t *s_client_session;
static bn_session_t *s_engine_session;
static zsock_t *s_client_side, *s_engine_side; //  relay sockets
static zsock_t *s_client;                      //  client DEALER
static zsock_t *s_engine;                      //  engine ROUTER, id uuid
static bn_relay_t *s_relay;
static int s_engine_port; //  the relay's engine side

static void
s_setup (void)
{
    s_relay_session = bn_session_new (s_key, NULL);
    s_client_session = bn_session_new (s_key, NULL);
    s_engine_session = bn_session_new (s_key, s_uuid);
    int client_port, engine_port;
    s_client_side = t_bound (ZMQ_ROUTER, BN_ROUTING_MUX_IN, &client_port);
    zsock_set_router_mandatory (s_client_side, 1);
    s_engine_side = t_bound (ZMQ_ROUTER, BN_ROUTING_MUX_OUT, &engine_port);
    s_engine_port = engine_port;
    zsock_set_router_mandatory (s_engine_side, 1);
    s_relay = bn_relay_new_swap ("mux", s_client_side, s_engine_side,
                                 s_relay_session);
    ck_assert_ptr_nonnull (s_relay);
    s_client = t_sock (ZMQ_DEALER, NULL);
    t_connect (s_client, client_port);
    s_engine = t_sock (ZMQ_ROUTER, s_uuid);
    t_connect (s_engine, engine_port);
    //  ROUTER to ROUTER: the relay can route to the engine once connected
    t_wait_route (s_engine_side, s_uuid, s_engine);
    t_wait_route (s_engine, BN_ROUTING_MUX_OUT, s_engine_side);
}

static void
s_teardown (void)
{
    bn_relay_destroy (&s_relay);
    zsock_destroy (&s_client);
    zsock_destroy (&s_engine);
    zsock_destroy (&s_client_side);
    zsock_destroy (&s_engine_side);
    bn_session_destroy (&s_relay_session);
    bn_session_destroy (&s_client_session);
    bn_session_destroy (&s_engine_session);
}

static json_int_t
s_stat (bn_relay_t *relay, const char *name)
{
    json_t *stats = bn_relay_stats (relay);
    json_int_t value = json_integer_value (json_object_get (stats, name));
    json_decref (stats);
    return value;
}

//  Let the relay read until it has received n more messages on a side.
static void
s_pump_within (bn_relay_t *relay, zsock_t *sock, bool client_side, int n,
               int ms)
{
    json_int_t target = s_stat (relay, "received") + n;
    int64_t end = zclock_mono () + ms;
    zpoller_t *poller = zpoller_new (sock, NULL);
    while (s_stat (relay, "received") < target && zclock_mono () < end) {
        if (zpoller_wait (poller, 50)) {
            if (client_side)
                bn_relay_client_ready (relay);
            else
                bn_relay_engine_ready (relay);
        }
    }
    zpoller_destroy (&poller);
    ck_assert_int_ge (s_stat (relay, "received"), target);
}

static void
s_pump (bn_relay_t *relay, zsock_t *sock, bool client_side, int n)
{
    s_pump_within (relay, sock, client_side, n, T_TIMEOUT);
}

static void
s_pump_client (int n)
{
    s_pump (s_relay, s_client_side, true, n);
}

static void
s_pump_engine (int n)
{
    s_pump (s_relay, s_engine_side, false, n);
}

//  Client sends a request of type to engine uuid; returns its msg_id.
static char *
s_request (const char *type, const char *uuid)
{
    bn_msg_t *msg = t_msg (s_client_session, type, NULL, uuid);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    return msg_id;
}

//  Engine answers one request; returns the request's msg_id.
static char *
s_engine_answers (void)
{
    bn_msg_t *request = t_recv (s_engine);
    ck_assert_ptr_nonnull (request);
    ck_assert_int_eq (bn_msg_verify (request, s_engine_session, true), 0);
    ck_assert (bn_msg_ident_is (request, 0, BN_ROUTING_MUX_OUT, 7));
    char *msg_id = strdup (bn_msg_id (request));
    bn_msg_t *reply =
        bn_msg_new_reply (s_engine_session, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_add_buffer (reply, "\x80\x04K\x07.", 5);
    bn_msg_destroy (&request);
    t_send (&reply, s_engine, s_engine_session);
    return msg_id;
}

//  Assert reply is an EngineError answer to msg_id whose evalue has text.
static void
s_assert_engine_error (bn_msg_t *reply, const char *msg_id, const char *type,
                       const char *engine, const char *text)
{
    ck_assert_ptr_nonnull (reply);
    ck_assert_int_eq (bn_msg_verify (reply, s_client_session, true), 0);
    ck_assert_str_eq (bn_msg_type (reply), type);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    ck_assert_msg (strstr (t_content_str (reply, "evalue"), text),
                   "evalue '%s' lacks '%s'", t_content_str (reply, "evalue"),
                   text);
    json_t *info = json_object_get (bn_msg_content (reply), "engine_info");
    ck_assert (json_is_object (info) && json_object_size (info) == 0);
    ck_assert (
        json_is_array (json_object_get (bn_msg_content (reply), "traceback")));
    json_t *md = bn_msg_metadata (reply);
    ck_assert_str_eq (t_metadata_str (reply, "status"), "error");
    ck_assert (json_is_true (json_object_get (md, "dependencies_met")));
    ck_assert (json_is_false (json_object_get (md, "is_broadcast")));
    ck_assert (json_is_false (json_object_get (md, "is_coalescing")));
    ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), "");
    if (engine) {
        ck_assert_str_eq (t_metadata_str (reply, "engine"), engine);
        //  the client's DEALER sees [engine_uuid, DELIM, ...]
        ck_assert_uint_eq (bn_msg_nidents (reply), 1);
        ck_assert (bn_msg_ident_is (reply, 0, engine, strlen (engine)));
    }
}

START_TEST (test_usage)
{
    //  the hub tells the relay about a registered engine
    ck_assert_int_eq (bn_relay_engine_add (s_relay, s_uuid, 0), 0);

    //  a client sends an apply_request with buffers to that engine
    bn_msg_t *msg =
        t_msg (s_client_session, BN_MSG_APPLY_REQUEST, NULL, s_uuid);
    bn_msg_add_buffer (msg, "f", 1);
    bn_msg_add_buffer (msg, "args", 4);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    s_pump_client (1);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 1);

    //  the engine sees ['mux_out', client_id, DELIM, ...] and answers
    bn_msg_t *request = t_recv (s_engine);
    ck_assert_ptr_nonnull (request);
    ck_assert_uint_eq (bn_msg_nidents (request), 2);
    ck_assert (bn_msg_ident_is (request, 0, "mux_out", 7));
    ck_assert_int_eq (bn_msg_verify (request, s_engine_session, true), 0);
    ck_assert_str_eq (bn_msg_id (request), msg_id);
    ck_assert_uint_eq (bn_msg_nbuffers (request), 2);
    bn_msg_t *reply =
        bn_msg_new_reply (s_engine_session, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_add_buffer (reply, "\x80\x04K\x07.", 5);
    bn_msg_destroy (&request);
    t_send (&reply, s_engine, s_engine_session);
    s_pump_engine (1);

    //  the client gets [uuid, DELIM, ...] signed by the engine
    bn_msg_t *got = t_recv (s_client);
    ck_assert_ptr_nonnull (got);
    ck_assert_uint_eq (bn_msg_nidents (got), 1);
    ck_assert (bn_msg_ident_is (got, 0, s_uuid, strlen (s_uuid)));
    ck_assert_int_eq (bn_msg_verify (got, s_client_session, true), 0);
    ck_assert_str_eq (bn_msg_session (got), s_uuid);
    ck_assert_str_eq (bn_msg_parent_id (got), msg_id);
    ck_assert_uint_eq (bn_msg_nbuffers (got), 1);
    bn_msg_destroy (&got);

    //  and the relay counted it for queue_request
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 0);
    ck_assert_uint_eq (bn_relay_completed_size (s_relay, s_uuid), 1);
    json_t *done = bn_relay_completed_ids (s_relay, s_uuid);
    ck_assert_str_eq (json_string_value (json_array_get (done, 0)), msg_id);
    json_decref (done);
    free (msg_id);
}
END_TEST

//  Frames as a client would put them on the wire, signed with s_key.
static void
s_raw_request (zsock_t *sock, const char *ident, const char *header,
               const char *content, const char *sig_override, zmq_msg_t *buffer)
{
    const void *parts[4] = {header, "{}", "{}", content};
    size_t sizes[4] = {strlen (header), 2, 2, strlen (content)};
    char sig[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (s_client_session, parts, sizes, sig);
    void *handle = zsock_resolve (sock);
    if (ident)
        zmq_send (handle, ident, strlen (ident), ZMQ_SNDMORE);
    zmq_send (handle, BN_DELIM, BN_DELIM_SIZE, ZMQ_SNDMORE);
    const char *s = sig_override ? sig_override : sig;
    zmq_send (handle, s, strlen (s), ZMQ_SNDMORE);
    for (int i = 0; i < 4; i++)
        zmq_send (handle, parts[i], sizes[i],
                  i < 3 || buffer ? ZMQ_SNDMORE : 0);
    if (buffer)
        zmq_msg_send (buffer, handle, 0);
}

static char *
s_header (const char *msg_id, const char *type)
{
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    return zsys_sprintf ("{\"msg_id\":\"%s\",\"msg_type\":\"%s\","
                         "\"username\":\"u\",\"session\":\"%s\","
                         "\"date\":\"%s\",\"version\":\"5.3\"}",
                         msg_id, type, bn_session_id (s_client_session), date);
}

START_TEST (test_bytes_unchanged)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    char *header = s_header ("raw-1", BN_MSG_EXECUTE_REQUEST);
    const char *content = "{\"code\":\"x = 1\",  \"silent\": false}";
    s_raw_request (s_client, s_uuid, header, content, NULL, NULL);
    s_pump_client (1);
    zmsg_t *got = zmsg_recv (s_engine);
    ck_assert_ptr_nonnull (got);
    ck_assert_uint_eq (zmsg_size (got), 8);
    zframe_t *frame = zmsg_first (got);
    ck_assert (zframe_streq (frame, "mux_out"));
    zmsg_next (got);
    ck_assert (zframe_streq (zmsg_next (got), BN_DELIM));
    const void *parts[4] = {header, "{}", "{}", content};
    size_t sizes[4] = {strlen (header), 2, 2, strlen (content)};
    char sig[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (s_client_session, parts, sizes, sig);
    ck_assert (zframe_streq (zmsg_next (got), sig));
    for (int i = 0; i < 4; i++)
        ck_assert (zframe_streq (zmsg_next (got), parts[i]));
    zmsg_destroy (&got);
    zstr_free (&header);
}
END_TEST

START_TEST (test_unknown_engine)
{
    char *msg_id = s_request (BN_MSG_APPLY_REQUEST, "no-such-engine");
    s_pump_client (1);
    bn_msg_t *reply = t_recv (s_client);
    s_assert_engine_error (reply, msg_id, BN_MSG_APPLY_REPLY, "no-such-engine",
                           "No such engine");
    bn_msg_destroy (&reply);
    free (msg_id);

    //  the reply type follows the request type
    msg_id = s_request (BN_MSG_EXECUTE_REQUEST, "no-such-engine");
    s_pump_client (1);
    reply = t_recv (s_client);
    s_assert_engine_error (reply, msg_id, BN_MSG_EXECUTE_REPLY,
                           "no-such-engine", "No such engine");
    bn_msg_destroy (&reply);
    free (msg_id);

    //  no target at all
    msg_id = s_request (BN_MSG_APPLY_REQUEST, NULL);
    s_pump_client (1);
    reply = t_recv (s_client);
    s_assert_engine_error (reply, msg_id, BN_MSG_APPLY_REPLY, NULL,
                           "no engine named");
    bn_msg_destroy (&reply);
    free (msg_id);
    ck_assert_int_eq (s_stat (s_relay, "unknown_engine"), 3);
}
END_TEST

START_TEST (test_not_connected)
{
    //  registered, but its shell never connected to this relay
    bn_relay_engine_add (s_relay, "ghost", 4);
    char *msg_id = s_request (BN_MSG_APPLY_REQUEST, "ghost");
    s_pump_client (1);
    bn_msg_t *reply = t_recv (s_client);
    s_assert_engine_error (reply, msg_id, BN_MSG_APPLY_REPLY, "ghost",
                           "Engine 4 is not connected");
    bn_msg_destroy (&reply);
    free (msg_id);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, "ghost"), 0);
    ck_assert_int_eq (s_stat (s_relay, "not_connected"), 1);
}
END_TEST

//  An engine registered before its shell connected: within the connect
//  grace its requests wait, in order, and reach it once it connects.
START_TEST (test_held_until_connected)
{
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_relay_attach (s_relay, loop), 0);
    bn_relay_set_connect_grace (s_relay, 60000);
    const char *late = "2b0f0e4c-5d3a6a1f9b2c4d5e6f708192";
    bn_relay_engine_add (s_relay, late, 6);
    char *first = s_request (BN_MSG_APPLY_REQUEST, late);
    char *second = s_request (BN_MSG_EXECUTE_REQUEST, late);
    s_pump_client (2);
    ck_assert_int_eq (s_stat (s_relay, "held"), 2);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, late), 2);
    ck_assert_ptr_null (t_recv_within (s_client, 100));

    char *endpoint = zsock_last_endpoint (s_engine_side);
    zsock_t *engine = t_sock (ZMQ_ROUTER, late);
    ck_assert_int_eq (zsock_connect (engine, "%s", endpoint), 0);
    zstr_free (&endpoint);
    const char *expected[] = {first, second};
    for (int i = 0; i < 2; i++) {
        bn_msg_t *got = NULL;
        int64_t end = zclock_mono () + 5000;
        while (!got && zclock_mono () < end) {
            bn_relay_retry (s_relay);
            got = t_recv_within (engine, 10);
        }
        ck_assert_ptr_nonnull (got);
        ck_assert_str_eq (bn_msg_id (got), expected[i]);
        bn_msg_destroy (&got);
    }
    ck_assert_int_eq (s_stat (s_relay, "not_connected"), 0);
    ck_assert_int_eq (s_stat (s_relay, "forwarded"), 2);
    zsock_destroy (&engine);
    free (first);
    free (second);
    bn_relay_destroy (&s_relay);
    zloop_destroy (&loop);
}
END_TEST

//  Past the grace, a request for an engine that never connected fails
//  with EngineError; held requests of a removed engine are dropped with
//  the rest of its requests answered.
START_TEST (test_held_then_failed)
{
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_relay_attach (s_relay, loop), 0);
    bn_relay_set_connect_grace (s_relay, 50);
    bn_relay_engine_add (s_relay, "ghost", 4);
    char *msg_id = s_request (BN_MSG_APPLY_REQUEST, "ghost");
    s_pump_client (1);
    ck_assert_int_eq (s_stat (s_relay, "held"), 1);
    bn_msg_t *reply = NULL;
    int64_t end = zclock_mono () + 5000;
    while (!reply && zclock_mono () < end) {
        bn_relay_retry (s_relay);
        reply = t_recv_within (s_client, 20);
    }
    ck_assert_ptr_nonnull (reply);
    s_assert_engine_error (reply, msg_id, BN_MSG_APPLY_REPLY, "ghost",
                           "Engine 4 is not connected");
    bn_msg_destroy (&reply);
    free (msg_id);

    bn_relay_set_connect_grace (s_relay, 60000);
    bn_relay_engine_add (s_relay, "ghost2", 5);
    msg_id = s_request (BN_MSG_APPLY_REQUEST, "ghost2");
    s_pump_client (1);
    bn_relay_engine_remove (s_relay, "ghost2");
    reply = t_recv (s_client);
    s_assert_engine_error (reply, msg_id, BN_MSG_APPLY_REPLY, "ghost2", "died");
    bn_msg_destroy (&reply);
    free (msg_id);
    bn_relay_retry (s_relay);
    ck_assert_ptr_null (t_recv_within (s_client, 50));
    bn_relay_destroy (&s_relay);
    zloop_destroy (&loop);
}
END_TEST

START_TEST (test_stranded)
{
    bn_relay_engine_add (s_relay, s_uuid, 3);
    char *first = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    char *second = s_request (BN_MSG_EXECUTE_REQUEST, s_uuid);
    s_pump_client (2);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 2);
    json_t *queue = bn_relay_queue_ids (s_relay, s_uuid);
    ck_assert_str_eq (json_string_value (json_array_get (queue, 0)), first);
    ck_assert_str_eq (json_string_value (json_array_get (queue, 1)), second);
    json_decref (queue);

    //  the engine dies without answering
    bn_relay_engine_remove (s_relay, s_uuid);
    char text[200];
    bn_msg_t *reply = t_recv (s_client);
    snprintf (text, sizeof text, "Engine 3 died while running task '%s'",
              first);
    s_assert_engine_error (reply, first, BN_MSG_APPLY_REPLY, s_uuid, text);
    bn_msg_destroy (&reply);
    reply = t_recv (s_client);
    snprintf (text, sizeof text, "Engine 3 died while running task '%s'",
              second);
    s_assert_engine_error (reply, second, BN_MSG_EXECUTE_REPLY, s_uuid, text);
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 0);
    ck_assert_int_eq (s_stat (s_relay, "stranded"), 2);
    free (first);
    free (second);

    //  gone: new requests are refused at once
    char *third = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    reply = t_recv (s_client);
    s_assert_engine_error (reply, third, BN_MSG_APPLY_REPLY, s_uuid,
                           "No such engine");
    bn_msg_destroy (&reply);
    free (third);
}
END_TEST

START_TEST (test_close_lets_replies_through)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    char *first = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    bn_relay_engine_close (s_relay, s_uuid);

    //  closed: a new request fails at once
    char *second = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    bn_msg_t *reply = t_recv (s_client);
    s_assert_engine_error (reply, second, BN_MSG_APPLY_REPLY, s_uuid,
                           "No such engine");
    bn_msg_destroy (&reply);

    //  but the reply already on its way still arrives and completes
    char *answered = s_engine_answers ();
    ck_assert_str_eq (answered, first);
    s_pump_engine (1);
    reply = t_recv (s_client);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_str_eq (bn_msg_parent_id (reply), first);
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 0);

    //  removing it then fails nothing
    bn_relay_engine_remove (s_relay, s_uuid);
    ck_assert_int_eq (s_stat (s_relay, "stranded"), 0);
    ck_assert_ptr_null (t_recv_within (s_client, 100));

    //  the same uuid may come back
    ck_assert_int_eq (bn_relay_engine_add (s_relay, s_uuid, 1), 0);
    ck_assert_int_eq (bn_relay_engine_add (s_relay, s_uuid, 1), -1);
    free (first);
    free (second);
    free (answered);
}
END_TEST

//  A good request still goes through after whatever came before.
static void
s_assert_still_works (void)
{
    char *msg_id = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    char *answered = s_engine_answers ();
    ck_assert_str_eq (answered, msg_id);
    s_pump_engine (1);
    bn_msg_t *reply = t_recv (s_client);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_int_eq (bn_msg_verify (reply, s_client_session, true), 0);
    bn_msg_destroy (&reply);
    free (msg_id);
    free (answered);
}

START_TEST (test_bad_client_input)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    s_assert_still_works ();

    //  no delimiter
    t_send_raw (s_client, s_uuid, "garbage", "more", NULL);
    s_pump_client (1);
    ck_assert_int_eq (s_stat (s_relay, "bad_frame"), 1);
    s_assert_still_works ();

    //  truncated: delimiter, signature and header only
    t_send_raw (s_client, s_uuid, BN_DELIM, "sig", "{}", NULL);
    s_pump_client (1);
    ck_assert_int_eq (s_stat (s_relay, "bad_frame"), 2);
    s_assert_still_works ();

    //  wrong signature, missing signature
    char *header = s_header ("bad-sig", BN_MSG_APPLY_REQUEST);
    s_raw_request (s_client, s_uuid, header, "{}",
                   "0000000000000000000000000000000000000000000000000000000000"
                   "000000",
                   NULL);
    s_raw_request (s_client, s_uuid, header, "{}", "", NULL);
    s_pump_client (2);
    ck_assert_int_eq (s_stat (s_relay, "bad_signature"), 2);
    zstr_free (&header);
    s_assert_still_works ();

    //  a replayed message: the second copy is dropped
    header = s_header ("replayed", BN_MSG_APPLY_REQUEST);
    s_raw_request (s_client, s_uuid, header, "{}", NULL, NULL);
    s_raw_request (s_client, s_uuid, header, "{}", NULL, NULL);
    s_pump_client (2);
    ck_assert_int_eq (s_stat (s_relay, "replayed"), 1);
    zstr_free (&header);
    bn_msg_t *first = t_recv (s_engine);
    ck_assert_str_eq (bn_msg_id (first), "replayed");
    bn_msg_destroy (&first);
    ck_assert_ptr_null (t_recv_within (s_engine, 100));
    s_assert_still_works ();

    //  a header that is not JSON, a msg_id that is not a string
    s_raw_request (s_client, s_uuid, "{not json", "{}", NULL, NULL);
    s_raw_request (s_client, s_uuid,
                   "{\"msg_id\": 5, \"msg_type\": \"apply_request\"}", "{}",
                   NULL, NULL);
    s_pump_client (2);
    ck_assert_int_eq (s_stat (s_relay, "bad_header"), 2);
    ck_assert_ptr_null (t_recv_within (s_engine, 100));
    s_assert_still_works ();

    //  the relay does not judge msg_types: an unknown one is forwarded
    char *msg_id = s_request ("frobnicate_request", s_uuid);
    s_pump_client (1);
    char *answered = s_engine_answers ();
    ck_assert_str_eq (answered, msg_id);
    s_pump_engine (1);
    bn_msg_t *reply = t_recv (s_client);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    free (msg_id);
    free (answered);
    s_assert_still_works ();
}
END_TEST

START_TEST (test_big_buffer)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    size_t size = 100 * 1024 * 1024;
    zmq_msg_t buffer;
    ck_assert_int_eq (zmq_msg_init_size (&buffer, size), 0);
    memset (zmq_msg_data (&buffer), 0xab, size);
    ((char *)zmq_msg_data (&buffer))[size - 1] = 0x01;
    char *header = s_header ("big", BN_MSG_APPLY_REQUEST);
    s_raw_request (s_client, s_uuid, header, "{}", NULL, &buffer);
    zmq_msg_close (&buffer);
    zstr_free (&header);
    s_pump_within (s_relay, s_client_side, true, 1, 60000);
    zsock_set_rcvtimeo (s_engine, 20000);
    bn_msg_t *request = t_recv (s_engine);
    ck_assert_ptr_nonnull (request);
    ck_assert_str_eq (bn_msg_id (request), "big");
    ck_assert_uint_eq (bn_msg_nbuffers (request), 1);
    zmq_msg_t *got = bn_msg_buffer (request, 0);
    ck_assert_uint_eq (zmq_msg_size (got), size);
    ck_assert_int_eq (((unsigned char *)zmq_msg_data (got))[0], 0xab);
    ck_assert_int_eq (((unsigned char *)zmq_msg_data (got))[size - 1], 0x01);
    bn_msg_destroy (&request);
    s_assert_still_works ();
}
END_TEST

START_TEST (test_bad_engine_input)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    //  replies from an engine: garbage, a bad signature, too few idents
    //  (the engine ROUTER must address the relay by its routing id)
    t_send_raw (s_engine, BN_ROUTING_MUX_OUT, "garbage", NULL);
    t_send_raw (s_engine, BN_ROUTING_MUX_OUT, "client", BN_DELIM, "00", "{}",
                "{}", "{}", "{}", NULL);
    t_send_raw (s_engine, BN_ROUTING_MUX_OUT, BN_DELIM, "00", "{}", "{}", "{}",
                "{}", NULL);
    s_pump_engine (3);
    ck_assert_int_eq (s_stat (s_relay, "bad_frame"), 2);
    ck_assert_int_eq (s_stat (s_relay, "bad_signature"), 1);
    ck_assert_ptr_null (t_recv_within (s_client, 100));
    s_assert_still_works ();
}
END_TEST

START_TEST (test_completed_ring)
{
    bn_relay_engine_add (s_relay, s_uuid, 0);
    for (int i = 0; i < 3; i++)
        s_assert_still_works ();
    ck_assert_uint_eq (bn_relay_completed_size (s_relay, s_uuid), 3);
    json_t *done = bn_relay_completed_ids (s_relay, s_uuid);
    ck_assert_uint_eq (json_array_size (done), 3);
    json_decref (done);
    //  unknown engines have nothing
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, "x"), 0);
    json_t *none = bn_relay_queue_ids (s_relay, "x");
    ck_assert_uint_eq (json_array_size (none), 0);
    json_decref (none);
}
END_TEST

START_TEST (test_error_reply)
{
    bn_msg_t *request =
        t_msg (s_client_session, BN_MSG_APPLY_REQUEST, NULL, "client-id");
    bn_msg_set_metadata (request, json_pack ("{s:b, s:b, s:s}", "is_broadcast",
                                             1, "is_coalescing", 1,
                                             "original_msg_id", "orig"));
    bn_msg_t *reply = bn_relay_error_reply (
        s_relay_session, request, NULL, "eng",
        bn_wire_error ("EngineError", "gone", NULL, NULL));
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), bn_msg_id (request));
    json_t *md = bn_msg_metadata (reply);
    ck_assert (json_is_true (json_object_get (md, "is_broadcast")));
    ck_assert (json_is_true (json_object_get (md, "is_coalescing")));
    ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), "orig");
    ck_assert_str_eq (t_metadata_str (reply, "engine"), "eng");
    ck_assert (bn_msg_ident_is (reply, 0, "client-id", 9));
    bn_msg_destroy (&reply);
    reply = bn_relay_error_reply (s_relay_session, request, "custom_reply",
                                  NULL, json_object ());
    ck_assert_str_eq (bn_msg_type (reply), "custom_reply");
    ck_assert_ptr_null (json_object_get (bn_msg_metadata (reply), "engine"));
    bn_msg_destroy (&reply);
    bn_msg_destroy (&request);
}
END_TEST

static int s_watched;
static char s_watched_session[64];

static void
s_watch (void *arg, bn_msg_t *msg)
{
    s_watched++;
    snprintf (s_watched_session, sizeof s_watched_session, "%s",
              bn_msg_session (msg));
}

START_TEST (test_host_link)
{
    //  a host node's link serves engine "hosted" (doc/hosts.md); s_uuid
    //  still connects straight to the relay
    const char *link = BN_HOST_LINK_PREFIX "h1 0a1b2c3d";
    const char *hosted = "5c1d3a0e-8f9b0c1d2e3f405162738495";
    bn_session_t *hosted_session = bn_session_new (s_key, hosted);
    bn_hosts_t *hosts = bn_hosts_new ();
    ck_assert_ptr_nonnull (hosts);
    bn_relay_set_hosts (s_relay, hosts);
    ck_assert_int_eq (bn_hosts_link_add (hosts, link), 0);
    ck_assert_int_eq (bn_hosts_route (hosts, hosted, link), 0);
    ck_assert_int_eq (bn_relay_engine_add (s_relay, hosted, 5), 0);
    ck_assert_int_eq (bn_relay_engine_add (s_relay, s_uuid, 0), 0);
    zsock_t *host = t_sock (ZMQ_DEALER, link);
    t_connect (host, s_engine_port);
    t_wait_route (s_engine_side, link, host);

    //  a request for the hosted engine reaches the link as [hosted, client,
    //  DELIM, ...], the client's signature kept
    char *msg_id = s_request (BN_MSG_APPLY_REQUEST, hosted);
    s_pump_client (1);
    bn_msg_t *request = t_recv (host);
    ck_assert_ptr_nonnull (request);
    ck_assert_uint_eq (bn_msg_nidents (request), 2);
    ck_assert (bn_msg_ident_is (request, 0, hosted, strlen (hosted)));
    ck_assert_int_eq (bn_msg_verify (request, hosted_session, true), 0);
    ck_assert_str_eq (bn_msg_id (request), msg_id);

    //  the host node passes the engine's reply up with the same idents: the
    //  client gets it from the hosted engine
    bn_msg_t *reply =
        bn_msg_new_reply (hosted_session, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_destroy (&request);
    t_send (&reply, host, hosted_session);
    s_pump_engine (1);
    bn_msg_t *got = t_recv (s_client);
    ck_assert_ptr_nonnull (got);
    ck_assert_uint_eq (bn_msg_nidents (got), 1);
    ck_assert (bn_msg_ident_is (got, 0, hosted, strlen (hosted)));
    ck_assert_str_eq (bn_msg_parent_id (got), msg_id);
    bn_msg_destroy (&got);
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, hosted), 0);
    ck_assert_uint_eq (bn_relay_completed_size (s_relay, hosted), 1);
    free (msg_id);

    //  the engine that connects straight to the relay is served as before
    msg_id = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    char *answered = s_engine_answers ();
    ck_assert_str_eq (answered, msg_id);
    s_pump_engine (1);
    got = t_recv (s_client);
    ck_assert_ptr_nonnull (got);
    ck_assert_str_eq (bn_msg_parent_id (got), msg_id);
    bn_msg_destroy (&got);
    free (answered);
    free (msg_id);

    //  a link cannot answer for an engine it does not serve
    msg_id = s_request (BN_MSG_APPLY_REQUEST, s_uuid);
    s_pump_client (1);
    request = t_recv (s_engine);
    ck_assert_ptr_nonnull (request);
    reply = bn_msg_new_reply (s_engine_session, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_pop_ident (reply);
    bn_msg_push_ident (reply, s_uuid, strlen (s_uuid));
    bn_msg_destroy (&request);
    t_send (&reply, host, s_engine_session);
    s_pump_engine (1);
    ck_assert_ptr_null (t_recv_within (s_client, 100));
    ck_assert_uint_eq (bn_relay_queue_size (s_relay, s_uuid), 1);
    json_t *stats = bn_hosts_stats (hosts);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "stray")), 1);
    json_decref (stats);
    free (msg_id);

    bn_relay_set_hosts (s_relay, NULL);
    zsock_destroy (&host);
    bn_hosts_destroy (&hosts);
    bn_session_destroy (&hosted_session);
}
END_TEST

START_TEST (test_iopub)
{
    int in_port, out_port;
    zsock_t *input = t_bound (ZMQ_SUB, NULL, &in_port);
    zsock_t *output = t_bound (ZMQ_PUB, NULL, &out_port);
    bn_relay_t *iopub =
        bn_relay_new_forward ("iopub", input, output, s_relay_session);
    bn_relay_set_watch (iopub, BN_MSG_SHUTDOWN_REPLY, s_watch, NULL);
    zsock_t *engine_pub = t_sock (ZMQ_PUB, NULL);
    t_connect (engine_pub, in_port);
    zsock_t *client_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (client_sub, out_port);
    //  until both subscriptions are in place, messages are lost: warm up
    bn_msg_t *got = NULL;
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (!got && zclock_mono () < end) {
        bn_msg_t *warm = t_msg (s_engine_session, BN_MSG_STATUS, NULL, "w");
        t_send (&warm, engine_pub, s_engine_session);
        zclock_sleep (20);
        bn_relay_client_ready (iopub);
        got = t_recv_within (client_sub, 0);
    }
    ck_assert_ptr_nonnull (got);
    bn_msg_destroy (&got);
    zclock_sleep (50);
    bn_relay_client_ready (iopub);
    while ((got = t_recv_within (client_sub, 0)))
        bn_msg_destroy (&got);
    json_t *before = bn_relay_stats (iopub);
    json_int_t forwarded_before =
        json_integer_value (json_object_get (before, "forwarded"));
    json_decref (before);

    //  a stream message with its topic is forwarded frame for frame
    bn_msg_t *msg =
        t_msg (s_engine_session, BN_MSG_STREAM,
               json_pack ("{s:s, s:s}", "name", "stdout", "text", "hello\n"),
               "engine.0.stdout");
    char header[512];
    size_t size;
    const void *data = bn_msg_part_data (msg, BN_PART_HEADER, &size);
    snprintf (header, sizeof header, "%.*s", (int)size, (const char *)data);
    t_send (&msg, engine_pub, s_engine_session);
    s_pump (iopub, input, true, 1);
    got = t_recv (client_sub);
    ck_assert_ptr_nonnull (got);
    ck_assert (bn_msg_ident_is (got, 0, "engine.0.stdout", 15));
    ck_assert_int_eq (bn_msg_verify (got, s_client_session, true), 0);
    data = bn_msg_part_data (got, BN_PART_HEADER, &size);
    ck_assert_uint_eq (size, strlen (header));
    ck_assert (memcmp (data, header, size) == 0);
    ck_assert_str_eq (t_content_str (got, "text"), "hello\n");
    bn_msg_destroy (&got);
    ck_assert_int_eq (s_watched, 0);

    //  a shutdown_reply is forwarded and reported
    msg = t_msg (s_engine_session, BN_MSG_SHUTDOWN_REPLY,
                 json_pack ("{s:s, s:b}", "status", "ok", "restart", 0),
                 "engine.0.shutdown");
    t_send (&msg, engine_pub, s_engine_session);
    s_pump (iopub, input, true, 1);
    got = t_recv (client_sub);
    ck_assert_str_eq (bn_msg_type (got), BN_MSG_SHUTDOWN_REPLY);
    bn_msg_destroy (&got);
    ck_assert_int_eq (s_watched, 1);
    ck_assert_str_eq (s_watched_session, s_uuid);

    //  a bad signature is dropped
    t_send_raw (engine_pub, "engine.0.status", BN_DELIM, "bad", "{}", "{}",
                "{}", "{}", NULL);
    s_pump (iopub, input, true, 1);
    ck_assert_ptr_null (t_recv_within (client_sub, 100));
    json_t *stats = bn_relay_stats (iopub);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "forwarded")),
                      forwarded_before + 2);
    ck_assert_int_eq (
        json_integer_value (json_object_get (stats, "bad_signature")), 1);
    json_decref (stats);

    bn_relay_destroy (&iopub);
    zsock_destroy (&engine_pub);
    zsock_destroy (&client_sub);
    zsock_destroy (&input);
    zsock_destroy (&output);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_relay");
    TCase *tc = tcase_create ("relay");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_bytes_unchanged);
    tcase_add_test (tc, test_unknown_engine);
    tcase_add_test (tc, test_not_connected);
    tcase_add_test (tc, test_held_until_connected);
    tcase_add_test (tc, test_held_then_failed);
    tcase_add_test (tc, test_stranded);
    tcase_add_test (tc, test_close_lets_replies_through);
    tcase_add_test (tc, test_bad_client_input);
    tcase_add_test (tc, test_big_buffer);
    tcase_add_test (tc, test_bad_engine_input);
    tcase_add_test (tc, test_completed_ring);
    tcase_add_test (tc, test_error_reply);
    tcase_add_test (tc, test_host_link);
    tcase_add_test (tc, test_iopub);
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

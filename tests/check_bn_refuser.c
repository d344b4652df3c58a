/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_refuser: error replies on the task and broadcast ports, shaped
    so that the stock client resolves the right futures.  */
#include "bn_ctltest.h"
#include "bn_refuser.h"

static const char *s_key = "e05ab558-73805a94e21c7ce24a0654fe";

static bn_session_t *s_session; //  the controller's
static bn_session_t *s_client_session;
static zsock_t *s_port;        //  client-facing ROUTER
static zsock_t *s_engine_port; //  engine-facing ROUTER
static zsock_t *s_client;      //  client DEALER
static zsock_t *s_engine;      //  engine ROUTER
static bn_refuser_t *s_refuser;

static void
s_start (bn_refuser_kind_t kind)
{
    s_session = bn_session_new (s_key, NULL);
    s_client_session = bn_session_new (s_key, NULL);
    int port, engine_port;
    s_port = t_bound (ZMQ_ROUTER,
                      kind == BN_REFUSER_TASK ? BN_ROUTING_TASK_IN
                                              : BN_ROUTING_SCHEDULER_PREFIX "0",
                      &port);
    s_engine_port = t_bound (ZMQ_ROUTER, "leaf", &engine_port);
    s_refuser = bn_refuser_new (kind, s_port, s_session);
    ck_assert_ptr_nonnull (s_refuser);
    ck_assert_int_eq (bn_refuser_add_engine_side (s_refuser, s_engine_port), 0);
    s_client = t_sock (ZMQ_DEALER, NULL);
    t_connect (s_client, port);
    s_engine = t_sock (ZMQ_ROUTER, "engine-uuid");
    t_connect (s_engine, engine_port);
}

static void
s_setup_task (void)
{
    s_start (BN_REFUSER_TASK);
}

static void
s_setup_broadcast (void)
{
    s_start (BN_REFUSER_BROADCAST);
}

static void
s_teardown (void)
{
    bn_refuser_destroy (&s_refuser);
    zsock_destroy (&s_client);
    zsock_destroy (&s_engine);
    zsock_destroy (&s_port);
    zsock_destroy (&s_engine_port);
    bn_session_destroy (&s_session);
    bn_session_destroy (&s_client_session);
}

static json_int_t
s_stat (const char *name)
{
    json_t *stats = bn_refuser_stats (s_refuser);
    json_int_t value = json_integer_value (json_object_get (stats, name));
    json_decref (stats);
    return value;
}

//  Let the refuser read until it has received n more client messages.
static void
s_pump (int n)
{
    json_int_t target = s_stat ("received") + n;
    int64_t end = zclock_mono () + T_TIMEOUT;
    zpoller_t *poller = zpoller_new (s_port, NULL);
    while (s_stat ("received") < target && zclock_mono () < end)
        if (zpoller_wait (poller, 50))
            bn_refuser_client_ready (s_refuser);
    zpoller_destroy (&poller);
    ck_assert_int_ge (s_stat ("received"), target);
}

static bn_msg_t *
s_reply (void)
{
    bn_msg_t *reply = t_recv (s_client);
    ck_assert_ptr_nonnull (reply);
    ck_assert_int_eq (bn_msg_verify (reply, s_client_session, true), 0);
    ck_assert_uint_eq (bn_msg_nidents (reply), 0);
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), "NotImplementedError");
    ck_assert_ptr_nonnull (t_content_str (reply, "evalue"));
    json_t *info = json_object_get (bn_msg_content (reply), "engine_info");
    ck_assert (json_is_object (info) && json_object_size (info) == 0);
    return reply;
}

START_TEST (test_usage)
{
    //  a load-balanced apply from a client
    bn_msg_t *msg = t_msg (s_client_session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_add_buffer (msg, "f", 1);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    s_pump (1);
    //  gets one apply_reply error, parent = the request
    bn_msg_t *reply = s_reply ();
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert (strstr (t_content_str (reply, "evalue"), "task"));
    bn_msg_destroy (&reply);
    free (msg_id);
    ck_assert_int_eq (s_stat ("answered"), 1);
}
END_TEST

START_TEST (test_task_execute)
{
    //  scheduler failures are apply_replies even for execute (WIRE 8.3)
    bn_msg_t *msg =
        t_msg (s_client_session, BN_MSG_EXECUTE_REQUEST,
               json_pack ("{s:s, s:b}", "code", "1", "silent", 0), NULL);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    s_pump (1);
    bn_msg_t *reply = s_reply ();
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    bn_msg_destroy (&reply);
    free (msg_id);
}
END_TEST

static int
s_end_loop (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

START_TEST (test_bad_input)
{
    t_send_raw (s_client, "garbage", NULL);
    t_send_raw (s_client, BN_DELIM, "bad", "{}", "{}", "{}", "{}", NULL);
    bn_msg_t *msg = t_msg (s_client_session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_t *copy = bn_msg_dup (msg);
    t_send (&msg, s_client, s_client_session);
    s_pump (3);
    ck_assert_int_eq (s_stat ("bad_frame"), 1);
    ck_assert_int_eq (s_stat ("bad_signature"), 1);
    bn_msg_t *reply = s_reply ();
    bn_msg_destroy (&reply);
    //  the same bytes again are a replay
    t_send (&copy, s_client, s_client_session);
    s_pump (1);
    ck_assert_int_eq (s_stat ("replayed"), 1);
    ck_assert_ptr_null (t_recv_within (s_client, 100));

    //  whatever an engine sends on the engine side is dropped
    t_wait_route (s_engine, "leaf", s_engine_port);
    json_int_t bad_before = s_stat ("bad_frame");
    t_send_raw (s_engine, "leaf", "junk", NULL);
    msg = t_msg (s_client_session, BN_MSG_APPLY_REPLY, NULL, "leaf");
    t_send (&msg, s_engine, s_client_session);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_refuser_attach (s_refuser, loop), 0);
    zloop_timer (loop, 300, 1, s_end_loop, NULL);
    zloop_start (loop);
    zloop_destroy (&loop);
    ck_assert_int_eq (s_stat ("engine_side"), 1);
    ck_assert_int_eq (s_stat ("bad_frame"), bad_before + 1);
    ck_assert_ptr_null (t_recv_within (s_client, 50));
}
END_TEST

//  A broadcast request to targets, coalescing or not.
static char *
s_broadcast (bool coalescing, json_t *targets)
{
    bn_msg_t *msg = t_msg (s_client_session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    json_t *metadata = json_pack ("{s:b, s:b}", "is_broadcast", 1,
                                  "is_coalescing", coalescing);
    if (targets)
        json_object_set_new (metadata, "targets", targets);
    bn_msg_set_metadata (msg, metadata);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    s_pump (1);
    return msg_id;
}

START_TEST (test_broadcast_per_target)
{
    char *orig = s_broadcast (
        false, json_pack ("[[s, i], [s, i]]", "uuid-a", 0, "uuid-b", 1));
    const char *uuids[] = {"uuid-a", "uuid-b"};
    for (int i = 0; i < 2; i++) {
        bn_msg_t *reply = s_reply ();
        char expected[256];
        snprintf (expected, sizeof expected, "%s_%s", orig, uuids[i]);
        //  the client pre-registered a future per "<orig>_<uuid>"
        ck_assert_str_eq (bn_msg_parent_id (reply), expected);
        ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
        json_t *md = bn_msg_metadata (reply);
        ck_assert (json_is_true (json_object_get (md, "is_broadcast")));
        ck_assert (json_is_false (json_object_get (md, "is_coalescing")));
        ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), orig);
        ck_assert_str_eq (t_metadata_str (reply, "engine"), uuids[i]);
        //  the rest of the parent is the request's header
        ck_assert_str_eq (json_string_value (json_object_get (
                              bn_msg_parent (reply), "session")),
                          bn_session_id (s_client_session));
        bn_msg_destroy (&reply);
    }
    ck_assert_ptr_null (t_recv_within (s_client, 100));
    free (orig);
}
END_TEST

START_TEST (test_broadcast_coalescing)
{
    json_t *targets = json_pack ("[[s, i], [s, i]]", "uuid-a", 0, "uuid-b", 1);
    char *orig = s_broadcast (true, json_incref (targets));
    bn_msg_t *reply = s_reply ();
    //  one reply, found by metadata.original_msg_id
    ck_assert_str_eq (bn_msg_parent_id (reply), orig);
    json_t *md = bn_msg_metadata (reply);
    ck_assert (json_is_true (json_object_get (md, "is_broadcast")));
    ck_assert (json_is_true (json_object_get (md, "is_coalescing")));
    ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), orig);
    ck_assert (json_equal (json_object_get (md, "broadcast_targets"), targets));
    bn_msg_destroy (&reply);
    ck_assert_ptr_null (t_recv_within (s_client, 100));
    json_decref (targets);
    free (orig);
}
END_TEST

START_TEST (test_broadcast_without_targets)
{
    char *orig = s_broadcast (false, NULL);
    bn_msg_t *reply = s_reply ();
    ck_assert_str_eq (bn_msg_parent_id (reply), orig);
    bn_msg_destroy (&reply);
    free (orig);
    orig = s_broadcast (false, json_string ("all"));
    reply = s_reply ();
    ck_assert_str_eq (bn_msg_parent_id (reply), orig);
    bn_msg_destroy (&reply);
    free (orig);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_refuser");
    TCase *tc = tcase_create ("task");
    tcase_add_checked_fixture (tc, s_setup_task, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_task_execute);
    tcase_add_test (tc, test_bad_input);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("broadcast");
    tcase_add_checked_fixture (tc, s_setup_broadcast, s_teardown);
    tcase_add_test (tc, test_broadcast_per_target);
    tcase_add_test (tc, test_broadcast_coalescing);
    tcase_add_test (tc, test_broadcast_without_targets);
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

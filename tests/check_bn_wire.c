/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_wire: error content, broadcast marks, reply types, endpoints.  */
#include "bn_wire.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

START_TEST (test_usage)
{
    json_t *content = bn_wire_errorf (
        "EngineError", NULL, "Engine %d died while running task %s", 3, "abc");
    ck_assert_ptr_nonnull (content);
    ck_assert_str_eq (json_string_value (json_object_get (content, "status")),
                      "error");
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "EngineError");
    ck_assert_str_eq (json_string_value (json_object_get (content, "evalue")),
                      "Engine 3 died while running task abc");
    json_t *tb = json_object_get (content, "traceback");
    ck_assert_uint_eq (json_array_size (tb), 1);
    ck_assert_str_eq (json_string_value (json_array_get (tb, 0)),
                      "EngineError: Engine 3 died while running task abc");
    ck_assert (json_is_object (json_object_get (content, "engine_info")));
    json_decref (content);
}
END_TEST

START_TEST (test_reply_type)
{
    char buf[64];
    ck_assert_int_eq (bn_wire_reply_type ("apply_request", buf, sizeof buf), 0);
    ck_assert_str_eq (buf, "apply_reply");
    ck_assert_int_eq (bn_wire_reply_type ("odd", buf, sizeof buf), 0);
    ck_assert_str_eq (buf, "odd_reply");
    ck_assert_int_eq (bn_wire_reply_type ("execute_request", buf, 8), -1);
}
END_TEST

START_TEST (test_mark_broadcast)
{
    //  the keys 7.1.0's client reads to file a reply under its broadcast,
    //  replacing what an engine's reply said
    json_t *md = json_pack ("{s:s, s:b, s:s}", "status", "ok", "is_broadcast",
                            0, "original_msg_id", "old");
    ck_assert_int_eq (bn_wire_mark_broadcast (md, "m-1", true), 0);
    char *text = json_dumps (md, JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_str_eq (text, "{\"is_broadcast\":true,\"is_coalescing\":true,"
                            "\"original_msg_id\":\"m-1\",\"status\":\"ok\"}");
    free (text);
    ck_assert_int_eq (bn_wire_mark_broadcast (md, "m-2", false), 0);
    ck_assert (json_is_false (json_object_get (md, "is_coalescing")));
    ck_assert_str_eq (
        json_string_value (json_object_get (md, "original_msg_id")), "m-2");
    json_decref (md);
}
END_TEST

START_TEST (test_urls)
{
    char buf[64];
    ck_assert_int_eq (bn_wire_url ("tcp://127.0.0.1", 5555, buf, sizeof buf),
                      0);
    ck_assert_str_eq (buf, "tcp://127.0.0.1:5555");
    ck_assert_int_eq (bn_wire_endpoint_port ("tcp://127.0.0.1:41235"), 41235);
    ck_assert_int_eq (bn_wire_endpoint_port ("tcp://127.0.0.1:"), -1);
    ck_assert_int_eq (bn_wire_endpoint_port ("inproc://x"), -1);
    ck_assert_int_eq (bn_wire_endpoint_port (NULL), -1);
}
END_TEST

START_TEST (test_bind_range)
{
    char buf[64];
    ck_assert_int_eq (
        bn_wire_tcp_bind_endpoint (buf, sizeof buf, "127.0.0.1", 0, 0, 0), 0);
    ck_assert_str_eq (buf, "tcp://127.0.0.1:0");
    ck_assert_int_eq (
        bn_wire_tcp_bind_endpoint (buf, sizeof buf, "127.0.0.1", 5555, 0, 0),
        0);
    ck_assert_str_eq (buf, "tcp://127.0.0.1:5555");
    ck_assert_int_eq (bn_wire_tcp_bind_endpoint (buf, sizeof buf, "10.0.0.1", 0,
                                                 60000, 60099),
                      0);
    ck_assert_str_eq (buf, "tcp://10.0.0.1:*[60000-60099]");
    //  a port of the last run is kept when it is in the range, else not
    ck_assert_int_eq (
        bn_wire_tcp_bind_endpoint (buf, sizeof buf, "*", 60050, 60000, 60099),
        0);
    ck_assert_str_eq (buf, "tcp://*:60050");
    ck_assert_int_eq (
        bn_wire_tcp_bind_endpoint (buf, sizeof buf, "*", 5555, 60000, 60099),
        0);
    ck_assert_str_eq (buf, "tcp://*:*[60000-60099]");
    ck_assert_int_eq (
        bn_wire_tcp_bind_endpoint (buf, 12, "127.0.0.1", 0, 60000, 60099), -1);

    //  sockets bound to a range of three ports get those three, and a
    //  fourth finds none free; a range some other process holds a port of
    //  is passed over (above the ephemeral ports outgoing connections take)
    zsock_t *socks[4] = {NULL};
    int lowest = 0;
    for (int base = 62500; base < 63500 && !lowest; base += 3) {
        int bound = 0;
        for (int i = 0; i < 3; i++) {
            socks[i] = zsock_new (ZMQ_ROUTER);
            bn_wire_tcp_bind_endpoint (buf, sizeof buf, "127.0.0.1", 0, base,
                                       base + 2);
            bound += bn_wire_bind (socks[i], buf, BN_WIRE_REBIND_WAIT) == 0;
        }
        if (bound == 3)
            lowest = base;
        else
            for (int i = 0; i < 3; i++)
                zsock_destroy (&socks[i]);
    }
    ck_assert_int_gt (lowest, 0);
    bool seen[3] = {false};
    for (int i = 0; i < 3; i++) {
        char *last = zsock_last_endpoint (socks[i]);
        int port = bn_wire_endpoint_port (last);
        zstr_free (&last);
        ck_assert_int_ge (port, lowest);
        ck_assert_int_le (port, lowest + 2);
        seen[port - lowest] = true;
    }
    ck_assert (seen[0] && seen[1] && seen[2]);
    socks[3] = zsock_new (ZMQ_ROUTER);
    bn_wire_tcp_bind_endpoint (buf, sizeof buf, "127.0.0.1", 0, lowest,
                               lowest + 2);
    ck_assert_int_eq (bn_wire_bind (socks[3], buf, BN_WIRE_REBIND_WAIT), -1);
    ck_assert_int_eq (errno, EADDRINUSE);
    for (int i = 0; i < 4; i++)
        zsock_destroy (&socks[i]);
}
END_TEST

//  Python's repr of JSON values, as 7.1.0's error texts show them.
START_TEST (test_repr)
{
    char buf[64] = "No such engine: ";
    json_t *values =
        json_loads ("[\"a\", 7, true, false, null, [1, 2]]", 0, NULL);
    ck_assert_ptr_nonnull (values);
    for (size_t i = 0; i < json_array_size (values); i++) {
        if (i)
            strcat (buf, ",");
        bn_wire_repr (json_array_get (values, i), buf, sizeof buf);
    }
    ck_assert_str_eq (buf, "No such engine: 'a',7,True,False,None,[1,2]");
    //  cut to fit
    char small[8] = "";
    bn_wire_repr (json_array_get (values, 0), small, sizeof small);
    bn_wire_repr (json_array_get (values, 5), small, sizeof small);
    ck_assert_str_eq (small, "'a'[1,2");
    bn_wire_repr (json_array_get (values, 1), small, sizeof small);
    ck_assert_str_eq (small, "'a'[1,2");
    json_decref (values);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_wire");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_reply_type);
    tcase_add_test (tc, test_mark_broadcast);
    tcase_add_test (tc, test_urls);
    tcase_add_test (tc, test_bind_range);
    tcase_add_test (tc, test_repr);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

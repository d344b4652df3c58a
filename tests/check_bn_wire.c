/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_wire: error content, reply types, endpoints.  */
#include "bn_wire.h"

#include <check.h>
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
    tcase_add_test (tc, test_urls);
    tcase_add_test (tc, test_repr);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

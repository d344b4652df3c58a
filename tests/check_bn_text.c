/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_text: text written piece by piece is what snprintf writes, and
    text that does not fit says so.  */
#include "bn_text.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

START_TEST (test_pieces)
{
    char buf[64];
    bn_text_t text;
    bn_text_init (&text, buf, sizeof buf);
    bn_text_str (&text, "id_");
    bn_text_uint (&text, 0);
    bn_text_add (&text, "_xy", 2);
    bn_text_uint (&text, 18446744073709551615ULL);
    bn_text_add (&text, ",", 1);
    bn_text_int (&text, LLONG_MIN);
    bn_text_add (&text, ",", 1);
    bn_text_int (&text, -7);
    bn_text_add (&text, ",", 1);
    bn_text_int (&text, 42);
    char expected[64];
    snprintf (expected, sizeof expected, "id_%u_x%llu,%lld,%d,%d", 0,
              18446744073709551615ULL, LLONG_MIN, -7, 42);
    ck_assert_int_eq (bn_text_end (&text), (long)strlen (expected));
    ck_assert_str_eq (buf, expected);
}
END_TEST

START_TEST (test_full)
{
    //  room for 4 bytes and the NUL: the fifth does not fit
    char buf[5];
    bn_text_t text;
    bn_text_init (&text, buf, sizeof buf);
    bn_text_str (&text, "abcd");
    ck_assert_int_eq (bn_text_end (&text), 4);
    ck_assert_str_eq (buf, "abcd");
    bn_text_init (&text, buf, sizeof buf);
    bn_text_str (&text, "abc");
    bn_text_uint (&text, 12);
    ck_assert_int_eq (bn_text_end (&text), -1);
    //  nothing fits in no room
    bn_text_init (&text, buf, 0);
    ck_assert_int_eq (bn_text_end (&text), -1);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_text");
    TCase *tc = tcase_create ("text");
    tcase_add_test (tc, test_pieces);
    tcase_add_test (tc, test_full);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

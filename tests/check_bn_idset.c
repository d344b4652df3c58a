/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_idset: engine id sets, their syntax, folding and iteration.  */
#include "bn_idset.h"

#include <check.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

//  Encode a set and compare with the expected folded text.
static void
s_assert_encoded (bn_idset_t *set, const char *expected)
{
    char *text = bn_idset_encode (set);
    ck_assert_ptr_nonnull (text);
    ck_assert_str_eq (text, expected);
    free (text);
}

START_TEST (test_usage)
{
    //  A user selects engines 0-15 and 32, walks them, and shows them
    bn_idset_t *targets = bn_idset_parse ("0-15,32");
    ck_assert_ptr_nonnull (targets);
    ck_assert_uint_eq (bn_idset_count (targets), 17);
    ck_assert (bn_idset_contains (targets, 7));
    ck_assert (!bn_idset_contains (targets, 16));

    int seen = 0, last = -1;
    for (int id = bn_idset_first (targets); id != -1;
         id = bn_idset_next (targets, id)) {
        ck_assert_int_gt (id, last);
        last = id;
        seen++;
    }
    ck_assert_int_eq (seen, 17);
    ck_assert_int_eq (last, 32);

    bn_idset_remove (targets, 32);
    bn_idset_add (targets, 16);
    s_assert_encoded (targets, "0-16");
    char *shown = bn_idset_format (targets);
    ck_assert_str_eq (shown, "engines[0-16] (17)");
    free (shown);
    bn_idset_destroy (&targets);
    ck_assert_ptr_null (targets);
    bn_idset_destroy (&targets);
}
END_TEST

START_TEST (test_parse_valid)
{
    struct {
        const char *text;
        const char *folded;
        size_t count;
    } cases[] = {
        {"0-15,32", "0-15,32", 17},
        {"3", "3", 1},
        {"0-7,9-10", "0-7,9-10", 10},
        {"", "", 0},
        {"   ", "", 0},
        {"5,4,3,2,1,0", "0-5", 6},
        {"0-5,3-8", "0-8", 9},
        {"9-10,0-7,8", "0-10", 11},
        {" 0 - 3 , 5 ", "0-3,5", 5},
        {"7-7", "7", 1},
        {"007", "7", 1},
        {"2147483647", "2147483647", 1},
        {"2147483640-2147483647", "2147483640-2147483647", 8},
        {"1,1,1", "1", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_idset_t *set = bn_idset_parse (cases[i].text);
        ck_assert_msg (set, "'%s' should parse", cases[i].text);
        s_assert_encoded (set, cases[i].folded);
        ck_assert_uint_eq (bn_idset_count (set), cases[i].count);
        bn_idset_destroy (&set);
    }
}
END_TEST

START_TEST (test_parse_garbage)
{
    const char *bad[] = {
        "1-",           "a",           "5-2",   "-1",   "1,",
        ",1",           ",",           "1,,2",  "1 2",  "2147483648",
        "0-2147483648", "99999999999", "1-2-3", "0x10", "+1",
        "1;2",          "[1]",         "1-a",   "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bn_idset_t *set = bn_idset_parse (bad[i]);
        ck_assert_msg (set == NULL, "'%s' should be refused", bad[i]);
    }
    //  A refused text leaves an existing set unchanged
    bn_idset_t *set = bn_idset_parse ("1-3");
    ck_assert_int_eq (bn_idset_add_text (set, "7,8-"), -1);
    s_assert_encoded (set, "1-3");
    ck_assert_int_eq (bn_idset_add_text (set, "7, 9-10"), 0);
    s_assert_encoded (set, "1-3,7,9-10");
    bn_idset_destroy (&set);
}
END_TEST

START_TEST (test_add_remove)
{
    bn_idset_t *set = bn_idset_new ();
    ck_assert_int_eq (bn_idset_first (set), -1);
    ck_assert_int_eq (bn_idset_last (set), -1);
    ck_assert_int_eq (bn_idset_next (set, -1), -1);
    ck_assert_int_eq (bn_idset_add (set, -1), -1);
    ck_assert_int_eq (bn_idset_add_range (set, 5, 4), -1);
    ck_assert (!bn_idset_contains (set, -1));

    ck_assert_int_eq (bn_idset_add (set, 5), 0);
    ck_assert_int_eq (bn_idset_add (set, 7), 0);
    s_assert_encoded (set, "5,7");
    ck_assert_int_eq (bn_idset_add (set, 6), 0); //  bridges two ranges
    s_assert_encoded (set, "5-7");
    ck_assert_int_eq (bn_idset_add (set, 4), 0);
    ck_assert_int_eq (bn_idset_add (set, 8), 0);
    s_assert_encoded (set, "4-8");
    ck_assert_uint_eq (bn_idset_count (set), 5);

    ck_assert_int_eq (bn_idset_remove (set, 6), 0); //  splits the range
    s_assert_encoded (set, "4-5,7-8");
    ck_assert_int_eq (bn_idset_remove (set, 4), 0);
    ck_assert_int_eq (bn_idset_remove (set, 8), 0);
    ck_assert_int_eq (bn_idset_remove (set, 100), 0);
    ck_assert_int_eq (bn_idset_remove (set, -3), 0);
    s_assert_encoded (set, "5,7");
    ck_assert_uint_eq (bn_idset_count (set), 2);
    ck_assert_int_eq (bn_idset_remove (set, 5), 0);
    ck_assert_int_eq (bn_idset_remove (set, 7), 0);
    s_assert_encoded (set, "");
    ck_assert_uint_eq (bn_idset_count (set), 0);

    ck_assert_int_eq (bn_idset_add_range (set, 0, 9), 0);
    ck_assert_int_eq (bn_idset_add_range (set, 20, 29), 0);
    ck_assert_int_eq (bn_idset_add_range (set, 40, 49), 0);
    ck_assert_int_eq (bn_idset_add_range (set, 5, 44), 0); //  swallows all
    s_assert_encoded (set, "0-49");
    ck_assert_uint_eq (bn_idset_count (set), 50);
    bn_idset_clear (set);
    ck_assert_uint_eq (bn_idset_count (set), 0);
    ck_assert_int_eq (bn_idset_first (set), -1);

    ck_assert_int_eq (bn_idset_add (set, INT_MAX), 0);
    ck_assert_int_eq (bn_idset_add (set, INT_MAX - 1), 0);
    ck_assert_int_eq (bn_idset_last (set), INT_MAX);
    ck_assert_int_eq (bn_idset_next (set, INT_MAX - 1), INT_MAX);
    ck_assert_int_eq (bn_idset_next (set, INT_MAX), -1);
    bn_idset_destroy (&set);
}
END_TEST

START_TEST (test_iteration)
{
    bn_idset_t *set = bn_idset_parse ("3,10-12,40");
    ck_assert_int_eq (bn_idset_first (set), 3);
    ck_assert_int_eq (bn_idset_next (set, 3), 10);
    ck_assert_int_eq (bn_idset_next (set, 10), 11);
    ck_assert_int_eq (bn_idset_next (set, 12), 40);
    ck_assert_int_eq (bn_idset_next (set, 40), -1);
    //  prev need not be a member
    ck_assert_int_eq (bn_idset_next (set, 5), 10);
    ck_assert_int_eq (bn_idset_next (set, -1), 3);
    ck_assert_int_eq (bn_idset_next (set, -50), 3);
    ck_assert_int_eq (bn_idset_last (set), 40);
    bn_idset_destroy (&set);
}
END_TEST

START_TEST (test_format)
{
    const char *cases[][2] = {
        {"0-15,32", "engines[0-15,32] (17)"},
        {"3", "engines[3] (1)"},
        {"", "engines[] (0)"},
        {"0,2,4", "engines[0,2,4] (3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_idset_t *set = bn_idset_parse (cases[i][0]);
        char *text = bn_idset_format (set);
        ck_assert_str_eq (text, cases[i][1]);
        free (text);
        bn_idset_destroy (&set);
    }
}
END_TEST

START_TEST (test_equal_dup)
{
    bn_idset_t *a = bn_idset_parse ("0-3,8");
    bn_idset_t *b = bn_idset_parse ("8,3,2,1,0");
    bn_idset_t *empty = bn_idset_new ();
    bn_idset_t *empty2 = bn_idset_parse ("");
    ck_assert (bn_idset_equal (a, b));
    ck_assert (bn_idset_equal (empty, empty2));
    ck_assert (!bn_idset_equal (a, empty));

    bn_idset_t *copy = bn_idset_dup (a);
    ck_assert (bn_idset_equal (a, copy));
    bn_idset_add (copy, 9);
    ck_assert (!bn_idset_equal (a, copy));
    s_assert_encoded (a, "0-3,8");
    s_assert_encoded (copy, "0-3,8-9");

    bn_idset_t *copy_empty = bn_idset_dup (empty);
    ck_assert_uint_eq (bn_idset_count (copy_empty), 0);
    bn_idset_add (copy_empty, 1);
    s_assert_encoded (copy_empty, "1");

    bn_idset_destroy (&a);
    bn_idset_destroy (&b);
    bn_idset_destroy (&empty);
    bn_idset_destroy (&empty2);
    bn_idset_destroy (&copy);
    bn_idset_destroy (&copy_empty);
}
END_TEST

START_TEST (test_many_ids)
{
    //  Every other id of 0..19999, then the gaps, in a scattered order
    bn_idset_t *set = bn_idset_new ();
    for (int id = 0; id < 20000; id += 2)
        ck_assert_int_eq (bn_idset_add (set, id), 0);
    ck_assert_uint_eq (bn_idset_count (set), 10000);
    ck_assert (bn_idset_contains (set, 19998));
    ck_assert (!bn_idset_contains (set, 19999));
    for (int k = 0; k < 10000; k++) {
        int id = (int)((k * 7919L) % 10000) * 2 + 1;
        ck_assert_int_eq (bn_idset_add (set, id), 0);
    }
    ck_assert_uint_eq (bn_idset_count (set), 20000);
    s_assert_encoded (set, "0-19999");

    //  Remove every multiple of 3 and check iteration against a model
    for (int id = 0; id < 20000; id += 3)
        ck_assert_int_eq (bn_idset_remove (set, id), 0);
    int expected = 1, count = 0;
    for (int id = bn_idset_first (set); id != -1;
         id = bn_idset_next (set, id)) {
        if (expected % 3 == 0)
            expected++;
        ck_assert_int_eq (id, expected);
        expected++;
        count++;
    }
    ck_assert_uint_eq (bn_idset_count (set), (size_t)count);
    ck_assert_int_eq (count, 20000 - 6667);

    char *text = bn_idset_encode (set);
    bn_idset_t *again = bn_idset_parse (text);
    ck_assert (bn_idset_equal (set, again));
    free (text);
    bn_idset_destroy (&again);

    //  A large range is one entry, not a million
    bn_idset_t *big = bn_idset_parse ("0-999999");
    ck_assert_uint_eq (bn_idset_count (big), 1000000);
    s_assert_encoded (big, "0-999999");
    bn_idset_destroy (&big);
    bn_idset_destroy (&set);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_idset");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_parse_valid);
    tcase_add_test (tc, test_parse_garbage);
    tcase_add_test (tc, test_add_remove);
    tcase_add_test (tc, test_iteration);
    tcase_add_test (tc, test_format);
    tcase_add_test (tc, test_equal_dup);
    tcase_add_test (tc, test_many_ids);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

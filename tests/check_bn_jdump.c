/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_jdump: compact JSON text written as jansson's json_dumps
    writes it, byte for byte, and refused where it refuses.  */
#include "bn_jdump.h"

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  bn_jdump's text of json is jansson's, and its size is the text's.
static void
s_same (json_t *json)
{
    char *expected = json_dumps (json, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t size = 0;
    char *got = bn_jdump (json, &size);
    ck_assert_ptr_nonnull (expected);
    ck_assert_ptr_nonnull (got);
    ck_assert_str_eq (got, expected);
    ck_assert_uint_eq (size, strlen (expected));
    free (expected);
    free (got);
}

START_TEST (test_usage)
{
    json_t *header = json_pack (
        "{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", "3f2a_1", "msg_type",
        "apply_reply", "username", "u", "session", "3f2a", "date",
        "2026-11-28T04:40:00.000000Z", "version", "5.3");
    s_same (header);
    json_t *metadata = json_pack (
        "{s:s, s:b, s:s, s:b, s:b, s:s, s:s, s:[[s,i],[s,i]], s:f, s:n, "
        "s:{}, s:[]}",
        "started", "2026-11-28T04:40:00.000000Z", "dependencies_met", 1,
        "engine", "e\"1\\", "is_broadcast", 1, "is_coalescing", 0,
        "original_msg_id", "caf\xc3\xa9\n\t\x01", "status", "ok", "targets",
        "a", 0, "b", -9223372036854775807LL - 1, "elapsed", 0.25, "none",
        "empty", "list");
    s_same (metadata);
    json_decref (header);
    json_decref (metadata);
    //  keys with a NUL inside, which jansson 2.14 keeps
    json_t *odd = json_object ();
    json_object_setn_new (odd, "a\0b", 3, json_integer (1));
    s_same (odd);
    json_decref (odd);
}
END_TEST

//  A random string of up to 12 characters from an alphabet that holds
//  everything jansson escapes and UTF-8 of every length.
static char *
s_random_string (unsigned *seed, char *buf)
{
    static const char *pieces[] = {"a",
                                   "Z",
                                   "0",
                                   " ",
                                   "\"",
                                   "\\",
                                   "/",
                                   "\b",
                                   "\f",
                                   "\n",
                                   "\r",
                                   "\t",
                                   "\x01",
                                   "\x1f",
                                   "\x7f",
                                   "~",
                                   "\xc3\xa9",
                                   "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80",
                                   "{}"};
    size_t n = (size_t)(rand_r (seed) % 13), used = 0;
    for (size_t i = 0; i < n; i++) {
        const char *piece =
            pieces[rand_r (seed) % (sizeof pieces / sizeof pieces[0])];
        memcpy (buf + used, piece, strlen (piece));
        used += strlen (piece);
    }
    buf[used] = 0;
    return buf;
}

static json_t *
s_random (unsigned *seed, int depth)
{
    char text[64];
    int kind = rand_r (seed) % (depth >= 4 ? 6 : 8);
    switch (kind) {
    case 0:
        return json_string (s_random_string (seed, text));
    case 1: {
        static const json_int_t ints[] = {
            0, 1, -1, 9, 10, 99, 1000000007, INT64_MAX, INT64_MIN};
        return json_integer (rand_r (seed) % 2
                                 ? ints[rand_r (seed) % 9]
                                 : (json_int_t)rand_r (seed) - RAND_MAX / 2);
    }
    case 2: {
        static const double reals[] = {0.0,  -0.0, 0.5,         1e300, -1e-300,
                                       3.25, 1e21, 123456789.0, 0.1,   2.0 / 3};
        return json_real (reals[rand_r (seed) % 10]);
    }
    case 3:
        return json_true ();
    case 4:
        return json_false ();
    case 5:
        return json_null ();
    case 6: {
        json_t *array = json_array ();
        for (int i = rand_r (seed) % 5; i > 0; i--)
            json_array_append_new (array, s_random (seed, depth + 1));
        return array;
    }
    default: {
        json_t *object = json_object ();
        for (int i = rand_r (seed) % 5; i > 0; i--)
            json_object_set_new (object, s_random_string (seed, text),
                                 s_random (seed, depth + 1));
        return object;
    }
    }
}

START_TEST (test_random_trees)
{
    unsigned seed = 20261128;
    for (int i = 0; i < 5000; i++) {
        json_t *json = s_random (&seed, 0);
        ck_assert_ptr_nonnull (json);
        s_same (json);
        json_decref (json);
    }
}
END_TEST

START_TEST (test_refused)
{
    //  what jansson will not write, neither does bn_jdump: text that is
    //  not UTF-8, or a surrogate, put in without jansson's check
    const char *bad[] = {"bad\xff", "\xed\xa0\x80", "\xc3", "\xc0\xaf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *json = json_pack ("{s:o}", "k", json_string_nocheck (bad[i]));
        ck_assert_ptr_null (json_dumps (json, JSON_COMPACT));
        ck_assert_ptr_null (bn_jdump (json, NULL));
        json_decref (json);
    }
    ck_assert_ptr_null (bn_jdump (NULL, NULL));
    //  nesting past 2,048 levels
    json_t *deep = json_array ();
    json_t *at = deep;
    for (int i = 0; i < 3000; i++) {
        json_t *inner = json_array ();
        json_array_append_new (at, inner);
        at = inner;
    }
    ck_assert_ptr_null (bn_jdump (deep, NULL));
    json_decref (deep);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_jdump");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_random_trees);
    tcase_add_test (tc, test_refused);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

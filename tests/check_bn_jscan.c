/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_jscan: top-level fields and array elements read without a
    JSON tree agree with jansson.  */
#include "bn_jscan.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
s_scan (const char *text, const char *key, char *out, size_t outsize)
{
    return bn_jscan_string (text, strlen (text), key, out, outsize);
}

START_TEST (test_usage)
{
    const char *header =
        "{\"msg_id\": \"abc_1\", \"msg_type\": \"apply_request\", "
        "\"username\": \"u\", \"session\": \"abc\", \"date\": "
        "\"2026-11-21T14:29:26.444445Z\", \"version\": \"5.3\"}";
    char value[128];
    ck_assert_int_eq (s_scan (header, "msg_id", value, sizeof value), 5);
    ck_assert_str_eq (value, "abc_1");
    ck_assert_int_eq (s_scan (header, "msg_type", value, sizeof value), 13);
    ck_assert_str_eq (value, "apply_request");
    ck_assert_int_eq (s_scan (header, "missing", value, sizeof value), -1);
}
END_TEST

START_TEST (test_shapes)
{
    char value[128];
    //  nested values before the key are skipped
    ck_assert_int_eq (
        s_scan ("{\"a\": {\"msg_id\": \"inner\", \"l\": [1, {\"x\": \"}\"}]}, "
                "\"b\": -1.5e+3, \"c\": null, \"msg_id\": \"outer\"}",
                "msg_id", value, sizeof value),
        5);
    ck_assert_str_eq (value, "outer");
    //  the last of repeated keys wins, as in Python
    ck_assert_int_eq (
        s_scan ("{\"k\": \"one\", \"k\": \"two\"}", "k", value, sizeof value),
        3);
    ck_assert_str_eq (value, "two");
    ck_assert_int_eq (
        s_scan ("{\"k\": \"one\", \"k\": 2}", "k", value, sizeof value), -1);
    //  escapes
    ck_assert_int_eq (
        s_scan ("{\"k\": \"a\\\"b\\\\c\\/d\\n\\u00e9\\ud83d\\ude00\"}", "k",
                value, sizeof value),
        14);
    ck_assert_str_eq (value, "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80");
    //  an escaped key matches its unescaped name
    ck_assert_int_eq (
        s_scan ("{\"msg\\u005fid\": \"x\"}", "msg_id", value, sizeof value), 1);
    //  not a string, too long, malformed
    ck_assert_int_eq (s_scan ("{\"k\": 7}", "k", value, sizeof value), -1);
    ck_assert_int_eq (s_scan ("{\"k\": \"0123456789\"}", "k", value, 8), -2);
    const char *bad[] = {"",
                         "[]",
                         "{",
                         "{\"k\"}",
                         "{\"k\": }",
                         "{\"k\": \"x}",
                         "{\"k\": \"x\",}",
                         "{\"k\": \"x\"} x",
                         "{\"k\": [}",
                         "{\"k\": \"\\q\"}",
                         "{\"k\": \"\\u12\"}",
                         "{\"k\": \"\\ud800\"}",
                         "{\"k\": \"\\u0000\"}",
                         "{\"k\": \"a\tb\"}",
                         "{\"k\": \"x\" \"j\": 1}",
                         "{k: \"x\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg (s_scan (bad[i], "k", value, sizeof value) == -1,
                       "accepted %s", bad[i]);
    ck_assert_int_eq (s_scan ("  {}  ", "k", value, sizeof value), -1);
}
END_TEST

START_TEST (test_deep_nesting)
{
    size_t depth = 100000;
    char *text = malloc (2 * depth + 32);
    size_t len = (size_t)sprintf (text, "{\"a\": ");
    memset (text + len, '[', depth);
    len += depth;
    memset (text + len, ']', depth);
    len += depth;
    len += (size_t)sprintf (text + len, ", \"k\": \"v\"}");
    char value[8];
    ck_assert_int_eq (bn_jscan_string (text, len, "k", value, sizeof value),
                      -1);
    free (text);
}
END_TEST

//  Whenever jansson reads the text as an object with a string at key, the
//  scanner gives the same string.
START_TEST (test_agrees_with_jansson)
{
    const char *seeds[] = {
        "{\"msg_id\":\"a_1\",\"msg_type\":\"apply_request\",\"x\":[1,2,{}]}",
        "{\"x\": {\"msg_id\": 3}, \"msg_id\": \"b\\u00e9\", \"y\": true}",
        "{\"msg_id\": \"\\\"q\\\"\", \"z\": [\"]\", \"}\"]}",
    };
    const char alphabet[] = "{}[]\":,\\ u0a1_-.etrnl";
    srand (7);
    for (size_t seed = 0; seed < sizeof seeds / sizeof seeds[0]; seed++) {
        for (int round = 0; round < 20000; round++) {
            char text[256];
            size_t len = strlen (seeds[seed]);
            memcpy (text, seeds[seed], len);
            int edits = 1 + rand () % 3;
            for (int e = 0; e < edits; e++) {
                size_t at = (size_t)rand () % len;
                text[at] = alphabet[rand () % (int)(sizeof alphabet - 1)];
            }
            json_error_t error;
            json_t *root = json_loadb (text, len, 0, &error);
            const char *expect =
                root ? json_string_value (json_object_get (root, "msg_id"))
                     : NULL;
            char value[256];
            int got =
                bn_jscan_string (text, len, "msg_id", value, sizeof value);
            if (expect)
                ck_assert_msg (got >= 0 && strcmp (value, expect) == 0,
                               "%.*s: scanner %d, jansson '%s'", (int)len, text,
                               got, expect);
            if (root && json_is_object (root) && !expect)
                ck_assert_msg (got < 0, "%.*s: scanner found a value", (int)len,
                               text);
            json_decref (root);
        }
    }
}
END_TEST

//  The grammar check says what jansson says of the same text: an object,
//  or not (hand-picked texts, then random edits of well-formed ones).
static void
s_valid_as_jansson (const char *text, size_t len)
{
    json_t *root = json_loadb (text, len, 0, NULL);
    bool expect = json_is_object (root);
    json_decref (root);
    ck_assert_msg (bn_jscan_valid_object (text, len) == expect,
                   "%.*s: jansson says %s", (int)len, text,
                   expect ? "an object" : "not one");
}

START_TEST (test_valid_object)
{
    const char *texts[] = {
        "{}",
        " {\"a\":1}\n",
        "{\"a\":{}}",
        "{\"a\":[]}",
        "{\"a\":[{}]}",
        "{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":false,\"e\":-0.5e+10}",
        "{\"f\":\"x\\u00e9\\n\\\"\",\"g\":\"\xc3\xa9\",\"h\":0,\"i\":1E3}",
        "{\"a\":\"\\ud83d\\ude00\"}",
        "{\"a\":\"\xf0\x9f\x98\x80\"}",
        "",
        "[]",
        "{",
        "}",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,}",
        "{\"a\":1 \"b\":2}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":1e}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":nan}",
        "{\"a\":[1 2]}",
        "{\"a\":[1,]}",
        "{\"a\":\"\x01\"}",
        "{\"a\":\"\xff\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":1} x",
        "{\"a\":1}}",
        "{\"a\":]}",
        "{\"a\":[}",
        "{1:2}",
        "{\"a\":-}",
        "{\"a\":+1}",
        "{\"a\":1}{}",
        "{\"a\":\"b}",
        "{\"a\":[]]}",
        "{\"a\":{]}",
        "{\"a\" : [ 1 , { \"b\" : [ ] } ] }",
        "{\"a\":\"\\x\"}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        s_valid_as_jansson (texts[i], strlen (texts[i]));
    const char *seeds[] = {
        "{\"msg_id\":\"a_1\",\"n\":[1,-2.5e3,{\"t\":true,\"f\":null}]}",
        "{\"x\": {\"y\": [\"\\u00e9\", \"\xc3\xa9\"]}, \"z\": false}",
    };
    const char alphabet[] = "{}[]\":,\\ u0a1_-+.eEtrnlf\x01\xff\xed\xa0\xc3";
    srand (11);
    for (size_t seed = 0; seed < sizeof seeds / sizeof seeds[0]; seed++)
        for (int round = 0; round < 20000; round++) {
            char text[256];
            size_t len = strlen (seeds[seed]);
            memcpy (text, seeds[seed], len);
            int edits = 1 + rand () % 3;
            for (int e = 0; e < edits; e++)
                text[(size_t)rand () % len] =
                    alphabet[rand () % (int)(sizeof alphabet - 1)];
            s_valid_as_jansson (text, len);
        }
}
END_TEST

//  Members dropped by name at the top level only, the rest kept as they
//  were, without the closing brace.
START_TEST (test_drop_keys)
{
    const char *drop[] = {"a", "status"};
    struct {
        const char *text;
        const char *kept; //  NULL: not an object
    } cases[] = {
        {"{}", "{"},
        {" { } ", "{"},
        {"{\"a\":1}", "{"},
        {"{\"a\":1,\"b\":[1,{\"a\":2}]}", "{\"b\":[1,{\"a\":2}]"},
        {"{\"b\" : \"x\", \"a\": {\"status\": 1}, \"c\": null}",
         "{\"b\" : \"x\",\"c\": null"},
        {"{\"st\\u0061tus\":\"ok\",\"d\":true}", "{\"d\":true"},
        {"{\"status\":\"ok\",\"a\":2,\"status\":\"x\"}", "{"},
        {"{\"a\":1", NULL},
        {"{\"a\" 1}", NULL},
        {"[1]", NULL},
        {"{\"a\":1} x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size = strlen (cases[i].text);
        char out[128];
        long got = bn_jscan_drop_keys (cases[i].text, size, drop, 2, out);
        if (!cases[i].kept) {
            ck_assert_msg (got == -1, "%s: %ld", cases[i].text, got);
            continue;
        }
        ck_assert_msg (got == (long)strlen (cases[i].kept) &&
                           memcmp (out, cases[i].kept, (size_t)got) == 0,
                       "%s: %.*s", cases[i].text, (int)(got > 0 ? got : 0),
                       out);
    }
}
END_TEST

//  Array sizes: what json_array_size says of jansson's tree.
START_TEST (test_array_size)
{
    const char *merged =
        "{\"status\": \"ok\", \"broadcast_targets\": [[\"a]\", 0], "
        "[\"b,\\\"\", 1], [\"c\", 2]], \"bn_replies\": [{\"x\": [1, 2]}]}";
    ck_assert_int_eq (
        bn_jscan_array_size (merged, strlen (merged), "broadcast_targets"), 3);
    ck_assert_int_eq (
        bn_jscan_array_size (merged, strlen (merged), "bn_replies"), 1);
    //  absent, not an array, empty, repeated (the last wins), malformed
    ck_assert_int_eq (bn_jscan_array_size (merged, strlen (merged), "x"), -1);
    ck_assert_int_eq (bn_jscan_array_size (merged, strlen (merged), "status"),
                      -1);
    const char *cases[][2] = {
        {"{\"t\": []}", "0"},
        {"{\"t\": [1], \"t\": [1, 2]}", "2"},
        {"{\"t\": [1, 2], \"t\": 3}", "-1"},
        {"{\"t\": [1, 2}", "-1"},
        {"{\"t\": [1,, 2]}", "-1"},
        {"{\"t\": [1, 2]", "-1"},
        {"[1, 2]", "-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_int_eq (
            bn_jscan_array_size (cases[i][0], strlen (cases[i][0]), "t"),
            atoi (cases[i][1]));
    //  agrees with jansson on generated arrays
    for (int n = 0; n < 40; n++) {
        json_t *list = json_array ();
        for (int i = 0; i < n; i++)
            json_array_append_new (
                list, i % 3 ? json_pack ("[si]", "u[\"]", i)
                            : json_pack ("{s:[i,s]}", "k", i, "]}"));
        json_t *root = json_pack ("{s:s, s:o}", "a", "[", "t", list);
        char *text = json_dumps (root, JSON_COMPACT);
        ck_assert_int_eq (bn_jscan_array_size (text, strlen (text), "t"), n);
        free (text);
        json_decref (root);
    }
}
END_TEST

//  Raw values, and well-formed objects told from the rest.
START_TEST (test_value)
{
    const char *md = "{\"is_broadcast\": true, \"time_limit\": 2.5, "
                     "\"t\": [1, {\"a\": \"}\"}], \"is_broadcast\": false}";
    const char *value = NULL;
    size_t len = 0;
    ck_assert_int_eq (
        bn_jscan_value (md, strlen (md), "time_limit", &value, &len), 0);
    ck_assert_uint_eq (len, 3);
    ck_assert_mem_eq (value, "2.5", 3);
    ck_assert_int_eq (bn_jscan_value (md, strlen (md), "t", &value, &len), 0);
    ck_assert_uint_eq (len, strlen ("[1, {\"a\": \"}\"}]"));
    ck_assert_int_eq (
        bn_jscan_value (md, strlen (md), "is_broadcast", &value, &len), 0);
    ck_assert_uint_eq (len, 5);
    ck_assert_mem_eq (value, "false", 5);
    ck_assert_int_eq (bn_jscan_value (md, strlen (md), "x", &value, &len), -1);
    ck_assert_int_eq (bn_jscan_value ("{}", 2, "x", &value, &len), -1);
    const char *bad[] = {"",         "not json", "[1,2]",      "42",
                         "null",     "{",        "\"s\"",      "{\"a\":1}{",
                         "\xff\xfe", "{\"a\"}",  "{\"a\": [1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq (
            bn_jscan_value (bad[i], strlen (bad[i]), "a", &value, &len), -2);
}
END_TEST

//  Several keys in one walk of an object that text goes on after.
START_TEST (test_object)
{
    const char *text = "{\"status\":\"ok\",\"nbuffers\":2,\"c\":{\"nbuffers\""
                       ":9},\"status\":\"error\"} ,{\"next\":1}";
    const char *keys[] = {"status", "nbuffers", "missing"};
    bn_jscan_slice_t values[3];
    size_t used = 0;
    ck_assert_int_eq (
        bn_jscan_object (text, strlen (text), keys, 3, values, &used), 0);
    ck_assert_uint_eq (used, strlen (text) - strlen (" ,{\"next\":1}"));
    //  the last status wins; the nested nbuffers is not a top-level one
    ck_assert_uint_eq (values[0].size, 7);
    ck_assert_mem_eq (values[0].data, "\"error\"", 7);
    ck_assert_uint_eq (values[1].size, 1);
    ck_assert_mem_eq (values[1].data, "2", 1);
    ck_assert_ptr_null (values[2].data);
    //  blanks before, an empty object
    ck_assert_int_eq (bn_jscan_object (" {}", 3, keys, 3, values, &used), 0);
    ck_assert_uint_eq (used, 3);
    ck_assert_ptr_null (values[0].data);
    const char *bad[] = {"",         "[]",        "{\"a\":}",
                         "{\"a\":1", "{\"a\" 1}", "{1:2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq (
            bn_jscan_object (bad[i], strlen (bad[i]), keys, 3, values, NULL),
            -2);
}
END_TEST

START_TEST (test_keys)
{
    //  a whole text: the object with blanks around it, and nothing else
    const char *keys[] = {"status", "started"};
    bn_jscan_slice_t values[2];
    const char *text = " {\"started\":\"t\",\"status\":\"ok\"}\n\t ";
    ck_assert_int_eq (bn_jscan_keys (text, strlen (text), keys, 2, values), 0);
    ck_assert_mem_eq (values[0].data, "\"ok\"", 4);
    ck_assert_mem_eq (values[1].data, "\"t\"", 3);
    const char *bad[] = {"{} {}", "{\"status\":\"ok\"}x", "{\"a\":1", "",
                         "null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq (
            bn_jscan_keys (bad[i], strlen (bad[i]), keys, 2, values), -2);
    //  and as bn_jscan_value reads one key
    const char *value;
    size_t len;
    ck_assert_int_eq (bn_jscan_value ("{} {}", 5, "a", &value, &len), -2);
    ck_assert_int_eq (bn_jscan_value (" {} ", 4, "a", &value, &len), -1);
}
END_TEST

//  The elements of an array one by one, as their raw text.
START_TEST (test_next)
{
    const char *array = "[ [\"a]\", 0], \"b,\\\"\" ,{\"k\":[1]},-2.5e3 ] tail";
    const char *at = array + 1, *end = array + strlen (array);
    const char *expected[] = {"[\"a]\", 0]", "\"b,\\\"\"", "{\"k\":[1]}",
                              "-2.5e3"};
    bn_jscan_slice_t element;
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq (bn_jscan_next (&at, end, &element), 1);
        ck_assert_uint_eq (element.size, strlen (expected[i]));
        ck_assert_mem_eq (element.data, expected[i], element.size);
    }
    ck_assert_int_eq (bn_jscan_next (&at, end, &element), 0);
    ck_assert_str_eq (at, " tail");
    //  an empty array; elements not separated, not closed, missing
    const char *empty = "[]";
    at = empty + 1;
    ck_assert_int_eq (bn_jscan_next (&at, empty + 2, &element), 0);
    const char *bad[] = {"[1 2]", "[1", "[,1]", "[1,", "[}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        at = bad[i] + 1;
        end = bad[i] + strlen (bad[i]);
        int rc;
        while ((rc = bn_jscan_next (&at, end, &element)) == 1)
            ;
        ck_assert_msg (rc == -1, "%s gave %d", bad[i], rc);
    }
}
END_TEST

//  An array of objects, each walked once for its fields.
START_TEST (test_next_object)
{
    const char *array = "[{\"status\":\"ok\",\"n\":1}, {\"n\":[2]} ,{}]";
    const char *at = array + 1, *end = array + strlen (array);
    const char *keys[] = {"status", "n"};
    bn_jscan_slice_t values[2], element;
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), 1);
    ck_assert_uint_eq (element.size, strlen ("{\"status\":\"ok\",\"n\":1}"));
    ck_assert_mem_eq (values[0].data, "\"ok\"", 4);
    ck_assert_mem_eq (values[1].data, "1", 1);
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), 1);
    ck_assert_ptr_null (values[0].data);
    ck_assert_uint_eq (values[1].size, 3);
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), 1);
    ck_assert_uint_eq (element.size, 2);
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), 0);
    ck_assert (at == end);
    //  an element that is not an object
    const char *mixed = "[{}, 3]";
    at = mixed + 1;
    end = mixed + strlen (mixed);
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), 1);
    ck_assert_int_eq (
        bn_jscan_next_object (&at, end, keys, 2, values, &element), -1);
}
END_TEST

START_TEST (test_unescape)
{
    char out[16];
    const char *text = "\"a\\u00e9\\n\\\"\"";
    bn_jscan_slice_t value = {text, strlen (text)};
    ck_assert_int_eq (bn_jscan_unescape (value, out, sizeof out), 5);
    ck_assert_str_eq (out, "a\xc3\xa9\n\"");
    ck_assert_int_eq (bn_jscan_unescape (value, out, 4), -2);
    const char *bad[] = {"12", "\"open", "\"a\" ", "\"\\u0000\"", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        value = (bn_jscan_slice_t){bad[i], strlen (bad[i])};
        ck_assert_int_eq (bn_jscan_unescape (value, out, sizeof out), -1);
    }
    value = (bn_jscan_slice_t){NULL, 0};
    ck_assert_int_eq (bn_jscan_unescape (value, out, sizeof out), -1);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_jscan");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_shapes);
    tcase_add_test (tc, test_deep_nesting);
    tcase_add_test (tc, test_agrees_with_jansson);
    tcase_add_test (tc, test_valid_object);
    tcase_add_test (tc, test_drop_keys);
    tcase_add_test (tc, test_array_size);
    tcase_add_test (tc, test_value);
    tcase_add_test (tc, test_object);
    tcase_add_test (tc, test_keys);
    tcase_add_test (tc, test_next);
    tcase_add_test (tc, test_next_object);
    tcase_add_test (tc, test_unescape);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_query: Mongo-style db_request queries against TaskRecords:
    each operator, dates, and malformed queries.  */
#include <check.h>
#include <string.h>

#include "bn_query.h"

static json_t *
s_record (void)
{
    return json_pack (
        "{s:s, s:s, s:s, s:n, s:i, s:f, s:[s,s], s:s, s:n}", "msg_id", "m-1",
        "submitted", "2026-11-21T14:29:26.444445Z", "completed",
        "2026-11-21T14:29:27Z", "resubmitted", "count", 7, "ratio", 0.5, "tags",
        "a", "b", "queue", "mux", "engine_uuid");
}

//  True if query (JSON text) matches s_record.
static bool
s_matches (const char *text)
{
    json_error_t error;
    json_t *query = json_loads (text, 0, &error);
    ck_assert_msg (query, "bad test JSON %s: %s", text, error.text);
    char ename[64], evalue[256];
    bn_query_t *compiled =
        bn_query_new (query, ename, sizeof ename, evalue, sizeof evalue);
    ck_assert_msg (compiled, "%s refused: %s: %s", text, ename, evalue);
    json_t *record = s_record ();
    bool match = bn_query_match (compiled, record);
    json_decref (record);
    json_decref (query);
    bn_query_destroy (&compiled);
    return match;
}

//  The ename a malformed query gets (query refused), "" if accepted.
static char s_ename[64], s_evalue[256];

static const char *
s_refused (const char *text)
{
    json_t *query = json_loads (text, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull (query);
    s_ename[0] = 0;
    bn_query_t *compiled = bn_query_new (query, s_ename, sizeof s_ename,
                                         s_evalue, sizeof s_evalue);
    json_decref (query);
    if (compiled) {
        bn_query_destroy (&compiled);
        return "";
    }
    return s_ename;
}

START_TEST (test_usage)
{
    //  7.1.0's purge: completed records
    json_t *query = json_pack ("{s:{s:n}}", "completed", "$ne");
    ck_assert_ptr_nonnull (query);
    char ename[64], evalue[256];
    bn_query_t *q =
        bn_query_new (query, ename, sizeof ename, evalue, sizeof evalue);
    ck_assert_ptr_nonnull (q);
    json_t *record = s_record ();
    ck_assert (bn_query_match (q, record));
    json_object_set_new (record, "completed", json_null ());
    ck_assert (!bn_query_match (q, record));
    json_decref (record);
    json_decref (query);
    bn_query_destroy (&q);
    ck_assert_ptr_null (q);
    bn_query_destroy (&q);
}
END_TEST

START_TEST (test_equality)
{
    ck_assert (s_matches ("{}"));
    ck_assert (s_matches ("{\"msg_id\": \"m-1\"}"));
    ck_assert (!s_matches ("{\"msg_id\": \"m-2\"}"));
    ck_assert (s_matches ("{\"count\": 7.0}"));
    ck_assert (s_matches ("{\"resubmitted\": null}"));
    ck_assert (s_matches ("{\"missing_key\": null}"));
    ck_assert (s_matches ("{\"msg_id\": {\"$eq\": \"m-1\"}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$eq\": \"m-2\"}}"));
    ck_assert (s_matches ("{\"msg_id\": {\"$ne\": \"m-2\"}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$ne\": \"m-1\"}}"));
    ck_assert (s_matches ("{\"msg_id\": \"m-1\", \"queue\": \"mux\"}"));
    ck_assert (!s_matches ("{\"msg_id\": \"m-1\", \"queue\": \"task\"}"));
}
END_TEST

START_TEST (test_order)
{
    ck_assert (s_matches ("{\"count\": {\"$lt\": 8}}"));
    ck_assert (!s_matches ("{\"count\": {\"$lt\": 7}}"));
    ck_assert (s_matches ("{\"count\": {\"$lte\": 7}}"));
    //  $gt means greater than (7.1.0's DictDB had it backwards)
    ck_assert (s_matches ("{\"count\": {\"$gt\": 6}}"));
    ck_assert (!s_matches ("{\"count\": {\"$gt\": 8}}"));
    ck_assert (!s_matches ("{\"count\": {\"$gt\": 7}}"));
    ck_assert (s_matches ("{\"count\": {\"$gte\": 7}}"));
    ck_assert (!s_matches ("{\"count\": {\"$gte\": 7.5}}"));
    ck_assert (s_matches ("{\"ratio\": {\"$gt\": 0.25, \"$lt\": 1}}"));
    ck_assert (!s_matches ("{\"ratio\": {\"$gt\": 0.25, \"$lt\": 0.5}}"));
    ck_assert (s_matches ("{\"msg_id\": {\"$gt\": \"m-0\"}}"));
    //  no order between a string and a number, or with null
    ck_assert (!s_matches ("{\"msg_id\": {\"$gt\": 1}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$lt\": 1}}"));
    ck_assert (!s_matches ("{\"resubmitted\": {\"$lt\": 1}}"));
}
END_TEST

START_TEST (test_dates)
{
    //  compared as instants, whatever the text
    ck_assert (
        s_matches ("{\"submitted\": {\"$gt\": \"2026-11-21T14:29:26Z\"}}"));
    ck_assert (
        s_matches ("{\"submitted\": {\"$lt\": \"2026-11-21T14:29:26.5Z\"}}"));
    ck_assert (
        !s_matches ("{\"submitted\": {\"$gt\": \"2026-11-21T14:29:26.5Z\"}}"));
    ck_assert (s_matches (
        "{\"submitted\": {\"$gt\": \"2026-11-21T15:29:26+01:00\"}}"));
    ck_assert (s_matches ("{\"completed\": \"2026-11-21T14:29:27.000000Z\"}"));
    ck_assert (s_matches ("{\"completed\": \"2026-11-21T15:29:27+01:00\"}"));
    ck_assert (
        s_matches ("{\"completed\": {\"$gte\": \"2026-11-21T14:29:27\"}}"));
    //  a string compared with a 'Z' date by text would say the opposite
    ck_assert (
        s_matches ("{\"completed\": {\"$gt\": \"2026-11-21T14:29:26.9Z\"}}"));

    int64_t usec;
    ck_assert_int_eq (bn_query_parse_date ("1970-01-01T00:00:01.5Z", &usec), 0);
    ck_assert_int_eq (usec, 1500000);
    ck_assert_int_eq (bn_query_parse_date ("2026-13-01T00:00:00Z", &usec), -1);
    ck_assert_int_eq (bn_query_parse_date ("yesterday", &usec), -1);
    ck_assert_int_eq (bn_query_parse_date ("2026-11-21T14:29:26Zx", &usec), -1);
    char text[32];
    ck_assert_int_eq (
        bn_query_parse_date ("2026-11-21T14:29:26.444445Z", &usec), 0);
    bn_query_format_date (usec, text);
    ck_assert_str_eq (text, "2026-11-21T14:29:26.444445Z");
    bn_query_format_date (0, text);
    ck_assert_str_eq (text, "1970-01-01T00:00:00.000000Z");
}
END_TEST

START_TEST (test_lists)
{
    ck_assert (s_matches ("{\"msg_id\": {\"$in\": [\"m-0\", \"m-1\"]}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$in\": [\"m-0\"]}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$in\": []}}"));
    ck_assert (s_matches ("{\"resubmitted\": {\"$in\": [null]}}"));
    ck_assert (s_matches ("{\"msg_id\": {\"$nin\": [\"m-0\"]}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$nin\": [\"m-1\", \"x\"]}}"));
    ck_assert (s_matches ("{\"tags\": {\"$all\": [\"a\", \"b\"]}}"));
    ck_assert (s_matches ("{\"tags\": {\"$all\": [\"b\"]}}"));
    ck_assert (!s_matches ("{\"tags\": {\"$all\": [\"a\", \"c\"]}}"));
    ck_assert (s_matches ("{\"queue\": {\"$all\": [\"mux\"]}}"));
    ck_assert (!s_matches ("{\"queue\": {\"$all\": [\"mux\", \"task\"]}}"));
    ck_assert (!s_matches ("{\"queue\": {\"$all\": []}}"));
}
END_TEST

START_TEST (test_mod_exists)
{
    ck_assert (s_matches ("{\"count\": {\"$mod\": [2, 1]}}"));
    ck_assert (!s_matches ("{\"count\": {\"$mod\": [2, 0]}}"));
    ck_assert (s_matches ("{\"count\": {\"$mod\": [-3, -2]}}"));
    ck_assert (s_matches ("{\"count\": {\"$mod\": [-1, 0]}}"));
    ck_assert (s_matches ("{\"ratio\": {\"$mod\": [0.25, 0]}}"));
    ck_assert (!s_matches ("{\"msg_id\": {\"$mod\": [2, 1]}}"));
    ck_assert (s_matches ("{\"completed\": {\"$exists\": true}}"));
    ck_assert (!s_matches ("{\"completed\": {\"$exists\": false}}"));
    ck_assert (s_matches ("{\"resubmitted\": {\"$exists\": false}}"));
    ck_assert (s_matches ("{\"nothing\": {\"$exists\": 0}}"));
    ck_assert (!s_matches ("{\"engine_uuid\": {\"$exists\": 1}}"));
}
END_TEST

START_TEST (test_malformed)
{
    ck_assert_str_eq (s_refused ("[1, 2]"), "TypeError");
    ck_assert_str_eq (s_refused ("\"all\""), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$regex\": \".*\"}}"), "KeyError");
    ck_assert (strstr (s_evalue, "$regex"));
    ck_assert_str_eq (s_refused ("{\"a\": {\"plain\": 1}}"), "KeyError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$in\": \"abc\"}}"), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$nin\": 3}}"), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$all\": {}}}"), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$mod\": [2]}}"), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$mod\": [0, 1]}}"), "TypeError");
    ck_assert_str_eq (s_refused ("{\"a\": {\"$mod\": [\"2\", 1]}}"),
                      "TypeError");
    ck_assert_str_eq (s_refused ("null"), "");
    ck_assert_str_eq (s_refused ("{\"a\": {}}"), "");
    //  bounded: too many terms or list items are refused up front
    json_t *big = json_object ();
    for (int i = 0; i <= BN_QUERY_MAX_TERMS; i++) {
        char key[16];
        snprintf (key, sizeof key, "k%d", i);
        json_object_set_new (big, key, json_integer (i));
    }
    char *text = json_dumps (big, 0);
    ck_assert_str_eq (s_refused (text), "ValueError");
    free (text);
    json_decref (big);
    json_t *list = json_array ();
    for (int i = 0; i <= BN_QUERY_MAX_LIST; i++)
        json_array_append_new (list, json_integer (i));
    json_t *query = json_pack ("{s:{s:o}}", "a", "$in", list);
    text = json_dumps (query, 0);
    ck_assert_str_eq (s_refused (text), "TypeError");
    free (text);
    json_decref (query);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_query");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_equality);
    tcase_add_test (tc, test_order);
    tcase_add_test (tc, test_dates);
    tcase_add_test (tc, test_lists);
    tcase_add_test (tc, test_mod_exists);
    tcase_add_test (tc, test_malformed);
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

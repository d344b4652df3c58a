/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_record_queries: the hub's answers to result, history, db,
    purge and resubmit requests over a set of task records, and the error
    reply of its own type that each malformed query gets.  */
#include <check.h>
#include <czmq.h>
#include <string.h>

#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_record_queries.h"

#define S_ENGINE "e0e0e0e0-00000000000000000000000a"

static bn_session_t *s_client;  //  Sends queries and requests
static bn_session_t *s_hub;     //  Signs the answers
static bn_session_t *s_engine;  //  Sends replies
static bn_records_t *s_records; //  What the queries read
static bn_engine_table_t *s_engines;
static bn_record_queries_t *s_queries;

static void
s_setup (void)
{
    s_client = bn_session_new ("key", NULL);
    s_hub = bn_session_new ("key", NULL);
    s_engine = bn_session_new ("key", S_ENGINE);
    s_records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    s_engines = bn_engine_table_new ();
    ck_assert (s_client && s_hub && s_engine && s_records && s_engines);
    s_queries = bn_record_queries_new (s_hub, s_records, s_engines);
    ck_assert_ptr_nonnull (s_queries);
}

static void
s_teardown (void)
{
    bn_record_queries_destroy (&s_queries);
    bn_engine_table_destroy (&s_engines);
    bn_records_destroy (&s_records);
    bn_session_destroy (&s_client);
    bn_session_destroy (&s_hub);
    bn_session_destroy (&s_engine);
}

//  The answer to a query of type with content (taken; NULL for {}).
static bn_msg_t *
s_query (const char *type, json_t *content)
{
    bn_msg_t *query = bn_msg_new (s_client, type);
    ck_assert_ptr_nonnull (query);
    bn_msg_push_ident (query, "client", 6);
    if (content)
        bn_msg_set_content (query, content);
    ck_assert (bn_record_queries_handles (type));
    bn_msg_t *reply = bn_record_queries_answer (s_queries, query);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (bn_msg_parent_id (reply), bn_msg_id (query));
    ck_assert_uint_eq (bn_msg_nidents (reply), 1);
    bn_msg_destroy (&query);
    return reply;
}

static const char *
s_content_str (bn_msg_t *msg, const char *key)
{
    return json_string_value (json_object_get (bn_msg_content (msg), key));
}

//  A request through the mux with a buffer, answered by the engine with
//  one; the request's msg_id in msg_id.
static void
s_run_request (char *msg_id, size_t size)
{
    bn_msg_t *request = bn_msg_new (s_client, BN_MSG_APPLY_REQUEST);
    bn_msg_add_buffer (request, "arguments", 9);
    snprintf (msg_id, size, "%s", bn_msg_id (request));
    bn_records_request (s_records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    bn_msg_t *reply = bn_msg_new_reply (s_engine, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_add_buffer (reply, "result", 6);
    bn_records_reply (s_records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&request);
}

//  Takes the place of the task scheduler for resubmit_request.
static int
s_submit (void *arg, bn_msg_t **msg_p)
{
    (*(int *)arg)++;
    bn_msg_destroy (msg_p);
    return 0;
}

START_TEST (test_usage)
{
    char msg_id[BN_MSG_ID_SIZE];
    s_run_request (msg_id, sizeof msg_id);

    bn_msg_t *reply = s_query (BN_MSG_HISTORY_REQUEST, NULL);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HISTORY_REPLY);
    json_t *history = json_object_get (bn_msg_content (reply), "history");
    ck_assert_uint_eq (json_array_size (history), 1);
    ck_assert_str_eq (json_string_value (json_array_get (history, 0)), msg_id);
    bn_msg_destroy (&reply);

    reply = s_query (BN_MSG_RESULT_REQUEST,
                     json_pack ("{s:[s]}", "msg_ids", msg_id));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_RESULT_REPLY);
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    json_t *entry = json_object_get (bn_msg_content (reply), msg_id);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_object_get (entry, "result_content"), "status")),
                      "ok");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (reply, 0)), 6);
    bn_msg_destroy (&reply);

    reply = s_query (BN_MSG_DB_REQUEST,
                     json_pack ("{s:{s:s}, s:[s, s]}", "query", "msg_id",
                                msg_id, "keys", "queue", "buffers"));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_DB_REPLY);
    json_t *records = json_object_get (bn_msg_content (reply), "records");
    ck_assert_uint_eq (json_array_size (records), 1);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (records, 0), "queue")),
                      BN_MONITOR_QUEUE_MUX);
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (reply, 0)), 9);
    bn_msg_destroy (&reply);

    int submitted = 0;
    bn_record_queries_set_resubmit (s_queries, s_submit, &submitted);
    reply = s_query (BN_MSG_RESUBMIT_REQUEST,
                     json_pack ("{s:[s]}", "msg_ids", msg_id));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_RESUBMIT_REPLY);
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    ck_assert_int_eq (submitted, 1);
    json_t *resubmitted =
        json_object_get (bn_msg_content (reply), "resubmitted");
    const char *new_id =
        json_string_value (json_object_get (resubmitted, msg_id));
    ck_assert_ptr_nonnull (new_id);
    ck_assert (bn_records_pending (s_records, new_id));
    bn_msg_destroy (&reply);

    reply = s_query (BN_MSG_PURGE_REQUEST,
                     json_pack ("{s:[s]}", "msg_ids", msg_id));
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);
    ck_assert_ptr_null (bn_records_get (s_records, msg_id));
    ck_assert_uint_eq (bn_record_queries_errors (s_queries), 0);
}
END_TEST

//  A record query answered with an error reply of reply_type.
static void
s_assert_record_error (const char *type, const char *content_json,
                       const char *reply_type, const char *ename,
                       const char *text)
{
    json_t *content = json_loads (content_json, 0, NULL);
    ck_assert_ptr_nonnull (content);
    bn_msg_t *reply = s_query (type, content);
    ck_assert_str_eq (bn_msg_type (reply), reply_type);
    ck_assert_str_eq (s_content_str (reply, "status"), "error");
    ck_assert_str_eq (s_content_str (reply, "ename"), ename);
    ck_assert_msg (strstr (s_content_str (reply, "evalue"), text),
                   "%s: evalue '%s' lacks '%s'", type,
                   s_content_str (reply, "evalue"), text);
    bn_msg_destroy (&reply);
}

START_TEST (test_record_queries)
{
    //  no records
    bn_msg_t *reply = s_query (BN_MSG_HISTORY_REQUEST, NULL);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_HISTORY_REPLY);
    ck_assert_uint_eq (
        json_array_size (json_object_get (bn_msg_content (reply), "history")),
        0);
    bn_msg_destroy (&reply);
    reply =
        s_query (BN_MSG_DB_REQUEST, json_pack ("{s:{}, s:n}", "query", "keys"));
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    ck_assert (
        json_is_null (json_object_get (bn_msg_content (reply), "buffer_lens")));
    bn_msg_destroy (&reply);
    reply =
        s_query (BN_MSG_PURGE_REQUEST, json_pack ("{s:s}", "msg_ids", "all"));
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_PURGE_REPLY);
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);

    //  malformed queries: an error reply of the query's own reply type
    s_assert_record_error (BN_MSG_RESULT_REQUEST, "{\"msg_ids\": 5}",
                           BN_MSG_RESULT_REPLY, "TypeError", "msg_ids");
    s_assert_record_error (BN_MSG_RESULT_REQUEST, "{\"msg_ids\": [1, 2]}",
                           BN_MSG_RESULT_REPLY, "TypeError", "msg_ids");
    s_assert_record_error (BN_MSG_RESULT_REQUEST, "{\"msg_ids\": [\"x\"]}",
                           BN_MSG_RESULT_REPLY, "KeyError",
                           "No such message: x");
    s_assert_record_error (BN_MSG_DB_REQUEST, "{\"query\": [1]}",
                           BN_MSG_DB_REPLY, "TypeError", "dict");
    s_assert_record_error (BN_MSG_DB_REQUEST,
                           "{\"query\": {\"a\": {\"$where\": 1}}}",
                           BN_MSG_DB_REPLY, "KeyError", "$where");
    s_assert_record_error (BN_MSG_DB_REQUEST,
                           "{\"query\": {\"a\": {\"$in\": 1}}}",
                           BN_MSG_DB_REPLY, "TypeError", "$in");
    s_assert_record_error (BN_MSG_DB_REQUEST, "{\"keys\": \"msg_id\"}",
                           BN_MSG_DB_REPLY, "TypeError", "keys");
    s_assert_record_error (BN_MSG_DB_REQUEST, "{\"keys\": [\"nope\"]}",
                           BN_MSG_DB_REPLY, "KeyError", "nope");
    s_assert_record_error (BN_MSG_PURGE_REQUEST, "{\"msg_ids\": 3}",
                           BN_MSG_PURGE_REPLY, "TypeError", "msg_ids");
    s_assert_record_error (BN_MSG_PURGE_REQUEST, "{\"engine_ids\": [99]}",
                           BN_MSG_PURGE_REPLY, "IndexError",
                           "No such engine: 99");
    s_assert_record_error (BN_MSG_RESUBMIT_REQUEST, "{\"msg_ids\": {}}",
                           BN_MSG_RESUBMIT_REPLY, "TypeError", "msg_ids");
    s_assert_record_error (BN_MSG_RESUBMIT_REQUEST, "{\"msg_ids\": [\"x\"]}",
                           BN_MSG_RESUBMIT_REPLY, "KeyError", "No such msg(s)");
    //  counted: every error, and those of malformed content
    ck_assert_uint_eq (bn_record_queries_errors (s_queries), 12);
    ck_assert_uint_eq (bn_record_queries_bad_content (s_queries), 9);
    //  and the queries are still answered
    bn_msg_t *ok = s_query (BN_MSG_HISTORY_REQUEST, NULL);
    ck_assert_str_eq (s_content_str (ok, "status"), "ok");
    bn_msg_destroy (&ok);
    ck_assert (!bn_record_queries_handles (BN_MSG_QUEUE_REQUEST));
}
END_TEST

//  Without records kept (--nodb) and without a task scheduler.
START_TEST (test_nodb)
{
    bn_record_queries_destroy (&s_queries);
    bn_records_destroy (&s_records);
    s_records = bn_records_new (BN_RECORDS_NONE, 0, 0);
    s_queries = bn_record_queries_new (s_hub, s_records, s_engines);
    s_assert_record_error (BN_MSG_HISTORY_REQUEST, "{}", BN_MSG_HISTORY_REPLY,
                           "NoData", "NoDB backend");
    s_assert_record_error (BN_MSG_RESULT_REQUEST, "{\"msg_ids\": []}",
                           BN_MSG_RESULT_REPLY, "NoData", "NoDB backend");
    s_assert_record_error (BN_MSG_DB_REQUEST, "{\"query\": {}}",
                           BN_MSG_DB_REPLY, "NoData", "NoDB backend");
    //  status_only needs no record
    bn_msg_t *reply =
        s_query (BN_MSG_RESULT_REQUEST,
                 json_pack ("{s:[], s:b}", "msg_ids", "status_only", 1));
    ck_assert_str_eq (s_content_str (reply, "status"), "ok");
    bn_msg_destroy (&reply);

    bn_record_queries_destroy (&s_queries);
    bn_records_destroy (&s_records);
    s_records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    s_queries = bn_record_queries_new (s_hub, s_records, s_engines);
    char msg_id[BN_MSG_ID_SIZE], content[200];
    s_run_request (msg_id, sizeof msg_id);
    snprintf (content, sizeof content, "{\"msg_ids\": [\"%s\"]}", msg_id);
    s_assert_record_error (BN_MSG_RESUBMIT_REQUEST, content,
                           BN_MSG_RESUBMIT_REPLY, "NotImplementedError",
                           "task scheduler");
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_record_queries");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_record_queries);
    tcase_add_test (tc, test_nodb);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

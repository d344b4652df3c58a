/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_record: one task record: the TaskRecord a request, its reply
    and its output make, the buffers it shares and keeps, and a record
    written to SQLite and read back.  */
#include <check.h>
#include <czmq.h>
#include <string.h>
#include <unistd.h>

#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_record.h"

#define S_ENGINE "e0e0e0e0-00000000000000000000000a" //  an engine uuid

//  Signs requests and replies alike (a record reads neither signature)
static bn_session_t *s_session;

static void
s_setup (void)
{
    s_session = bn_session_new ("key", NULL);
    ck_assert_ptr_nonnull (s_session);
}

static void
s_teardown (void)
{
    bn_session_destroy (&s_session);
}

//  An execute_request routed from a client, with a buffer of 100 bytes
//  (large enough for libzmq to share it rather than copy it).
static bn_msg_t *
s_request (void)
{
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_EXECUTE_REQUEST);
    ck_assert_ptr_nonnull (msg);
    bn_msg_push_ident (msg, "client", 6);
    bn_msg_set_content (msg, json_pack ("{s:s}", "code", "echo hi"));
    char data[100];
    memset (data, 'r', sizeof data);
    bn_msg_add_buffer (msg, data, sizeof data);
    return msg;
}

static bn_msg_t *
s_reply (bn_msg_t *request)
{
    bn_msg_t *msg = bn_msg_new_reply (s_session, request, BN_MSG_EXECUTE_REPLY);
    ck_assert_ptr_nonnull (msg);
    bn_msg_set_metadata (
        msg, json_pack ("{s:s}", "started", "2026-11-21T14:29:26.5Z"));
    bn_msg_set_content (msg, json_pack ("{s:s}", "status", "ok"));
    char data[50];
    memset (data, 'a', sizeof data);
    bn_msg_add_buffer (msg, data, sizeof data);
    return msg;
}

static bn_msg_t *
s_stream (bn_msg_t *request, const char *name, const char *text)
{
    bn_msg_t *msg = bn_msg_new_reply (s_session, request, BN_MSG_STREAM);
    ck_assert_ptr_nonnull (msg);
    bn_msg_set_content (msg,
                        json_pack ("{s:s, s:s}", "name", name, "text", text));
    return msg;
}

static const char *
s_str (json_t *json, const char *key)
{
    return json_string_value (json_object_get (json, key));
}

START_TEST (test_usage)
{
    bn_msg_t *request = s_request ();
    bn_record_t *record = bn_record_new (bn_msg_id (request));
    ck_assert_ptr_nonnull (record);
    bn_record_set_request (record, BN_MONITOR_QUEUE_MUX, request, S_ENGINE,
                           NULL);
    ck_assert (!bn_record_completed (record));
    bn_msg_t *out = s_stream (request, "stdout", "hi\n");
    ck_assert_int_eq (bn_record_add_iopub (record, out), 0);
    bn_msg_t *reply = s_reply (request);
    bn_record_set_reply (record, reply, NULL);
    ck_assert (bn_record_completed (record));

    json_t *json = bn_record_json (record);
    ck_assert_ptr_nonnull (json);
    ck_assert_str_eq (s_str (json, "msg_id"), bn_msg_id (request));
    ck_assert_str_eq (s_str (json, "queue"), BN_MONITOR_QUEUE_MUX);
    ck_assert_str_eq (s_str (json, "engine_uuid"), S_ENGINE);
    ck_assert_str_eq (s_str (json, "stdout"), "hi\n");
    ck_assert_str_eq (s_str (json, "stderr"), "");
    ck_assert_str_eq (s_str (json, "started"), "2026-11-21T14:29:26.5Z");
    ck_assert_str_eq (s_str (json, "client_uuid"), bn_msg_session (request));
    ck_assert_ptr_nonnull (s_str (json, "submitted"));
    ck_assert_ptr_nonnull (s_str (json, "completed"));
    ck_assert_ptr_nonnull (s_str (json, "received"));
    ck_assert (json_is_null (json_object_get (json, "resubmitted")));
    ck_assert_str_eq (
        s_str (json_object_get (json, "result_content"), "status"), "ok");
    bn_msg_destroy (&out);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&request);
    bn_record_destroy (&record);
    ck_assert_ptr_null (record);
}
END_TEST

//  A record shares the frames of what it stores, without the idents.
START_TEST (test_shared_buffers)
{
    bn_msg_t *request = s_request ();
    bn_msg_t *reply = s_reply (request);
    bn_record_t *record = bn_record_new (bn_msg_id (request));
    bn_record_set_request (record, BN_MONITOR_QUEUE_TASK, request, NULL, NULL);
    bn_record_set_reply (record, reply, S_ENGINE);
    ck_assert_uint_eq (bn_record_bytes (record), 150);
    ck_assert_uint_eq (bn_record_nbuffers (record, false), 1);
    ck_assert_uint_eq (bn_record_nbuffers (record, true), 1);
    ck_assert_ptr_eq (zmq_msg_data (bn_record_buffer (record, false, 0)),
                      zmq_msg_data (bn_msg_buffer (request, 0)));
    ck_assert_ptr_eq (zmq_msg_data (bn_record_buffer (record, true, 0)),
                      zmq_msg_data (bn_msg_buffer (reply, 0)));
    ck_assert_ptr_null (bn_record_buffer (record, true, 1));
    ck_assert_uint_eq (bn_msg_nidents (bn_record_request (record)), 0);
    ck_assert_uint_eq (bn_msg_nidents (request), 1);
    ck_assert_int_gt (bn_record_submitted (record), 0);

    //  a change is seen by the next view, and makes the record dirty again
    ck_assert (bn_record_dirty (record));
    bn_record_set_written (record);
    ck_assert (!bn_record_dirty (record));
    json_t *json = bn_record_json (record);
    ck_assert (json_is_null (json_object_get (json, "resubmitted")));
    bn_record_set_resubmitted (record, "again");
    ck_assert (bn_record_dirty (record));
    ck_assert_str_eq (s_str (bn_record_json (record), "resubmitted"), "again");
    //  a record made by its output alone has no request
    bn_record_t *orphan = bn_record_new ("orphan");
    ck_assert_ptr_null (bn_record_request (orphan));
    ck_assert_uint_eq (bn_record_nbuffers (orphan, false), 0);
    ck_assert_int_eq (bn_record_submitted (orphan), 0);
    bn_record_destroy (&orphan);
    bn_record_destroy (&record);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&request);
}
END_TEST

//  A request's buffers from libzmq's batch size up are kept in memory of
//  the record's own, so that libzmq can receive the next message into the
//  memory of the last; the bytes are the same, and stay when the message
//  is gone. A reply's are shared. Copied here (_i 0) or by a copier on
//  its thread (_i 1), which the record's accessors wait for.
START_TEST (test_kept_buffers)
{
    bn_copier_t *copier = _i ? bn_copier_new () : NULL;
    bn_msg_t *request = s_request ();
    size_t sizes[] = {8191, 8192, 100000};
    for (size_t i = 0; i < 3; i++) {
        char *data = malloc (sizes[i]);
        memset (data, 'a' + (int)i, sizes[i]);
        ck_assert_int_eq (bn_msg_add_buffer (request, data, sizes[i]), 0);
        free (data);
    }
    bn_msg_t *reply = s_reply (request);
    char *big = malloc (50000);
    memset (big, 'z', 50000);
    ck_assert_int_eq (bn_msg_add_buffer (reply, big, 50000), 0);
    bn_record_t *record = bn_record_new (bn_msg_id (request));
    bn_record_set_request (record, BN_MONITOR_QUEUE_MUX, request, S_ENGINE,
                           copier);
    bn_record_set_reply (record, reply, NULL);
    ck_assert_uint_eq (bn_record_bytes (record),
                       100 + 8191 + 8192 + 100000 + 50 + 50000);
    ck_assert_uint_eq (bn_record_nbuffers (record, false), 4);
    //  100 and 8191 bytes shared, 8192 and 100000 kept
    for (size_t i = 0; i < 4; i++) {
        zmq_msg_t *kept = bn_record_buffer (record, false, i);
        zmq_msg_t *sent = bn_msg_buffer (request, i);
        ck_assert_uint_eq (zmq_msg_size (kept), zmq_msg_size (sent));
        ck_assert_mem_eq (zmq_msg_data (kept), zmq_msg_data (sent),
                          zmq_msg_size (sent));
        if (i < 2)
            ck_assert_ptr_eq (zmq_msg_data (kept), zmq_msg_data (sent));
        else
            ck_assert_ptr_ne (zmq_msg_data (kept), zmq_msg_data (sent));
    }
    ck_assert_ptr_eq (zmq_msg_data (bn_record_buffer (record, true, 1)),
                      zmq_msg_data (bn_msg_buffer (reply, 1)));
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    zmq_msg_t *kept = bn_record_buffer (record, false, 3);
    ck_assert_uint_eq (zmq_msg_size (kept), 100000);
    const char *bytes = zmq_msg_data (kept);
    ck_assert (bytes[0] == 'c' && bytes[99999] == 'c');
    kept = bn_record_buffer (record, true, 1);
    ck_assert_mem_eq (zmq_msg_data (kept), big, 50000);
    free (big);
    bn_record_destroy (&record);
    bn_copier_destroy (&copier);
}
END_TEST

//  As bn_records reads one back from SQLite: a temporary record.
static int
s_read_row (void *arg, const bn_records_row_t *row)
{
    *(bn_record_t **)arg = bn_record_new_row (row);
    return 1;
}

START_TEST (test_sqlite)
{
    char path[] = "/tmp/check_bn_record.XXXXXX";
    int fd = mkstemp (path);
    ck_assert_int_ge (fd, 0);
    close (fd);
    unlink (path);
    char err[256];
    bn_records_sqlite_t *db = bn_records_sqlite_new (path, err, sizeof err);
    ck_assert_msg (db != NULL, "%s", err);

    bn_msg_t *request = s_request ();
    bn_msg_t *out = s_stream (request, "stderr", "oops\n");
    bn_msg_t *reply = s_reply (request);
    bn_record_t *record = bn_record_new (bn_msg_id (request));
    bn_record_set_request (record, BN_MONITOR_QUEUE_MUX, request, S_ENGINE,
                           NULL);
    bn_record_add_iopub (record, out);
    bn_record_set_reply (record, reply, NULL);
    ck_assert_int_eq (bn_records_sqlite_begin (db), 0);
    ck_assert_int_eq (bn_record_write (record, db), 0);
    ck_assert_int_eq (bn_records_sqlite_commit (db), 0);

    bn_record_t *loaded = NULL;
    ck_assert_int_eq (
        bn_records_sqlite_get (db, bn_msg_id (request), s_read_row, &loaded),
        1);
    ck_assert_ptr_nonnull (loaded);
    json_t *json = bn_record_json (loaded);
    ck_assert_str_eq (s_str (json, "msg_id"), bn_msg_id (request));
    ck_assert_str_eq (s_str (json, "queue"), BN_MONITOR_QUEUE_MUX);
    ck_assert_str_eq (s_str (json, "engine_uuid"), S_ENGINE);
    ck_assert_str_eq (s_str (json, "stderr"), "oops\n");
    ck_assert_str_eq (s_str (json, "received"),
                      s_str (bn_record_json (record), "received"));
    ck_assert_uint_eq (bn_record_bytes (loaded), 150);
    ck_assert (bn_record_completed (loaded));
    //  a temporary record goes on release; a kept one stays
    bn_record_release (&loaded);
    ck_assert_ptr_null (loaded);
    ck_assert_int_eq (
        bn_records_sqlite_get (db, bn_msg_id (request), s_read_row, &loaded),
        1);
    bn_record_keep (loaded);
    bn_record_t *kept = loaded;
    bn_record_release (&loaded);
    ck_assert_ptr_null (loaded);
    ck_assert_str_eq (bn_record_msg_id (kept), bn_msg_id (request));
    bn_record_destroy (&kept);
    bn_record_t *live = record;
    bn_record_release (&live);
    ck_assert_str_eq (bn_record_msg_id (record), bn_msg_id (request));

    bn_record_destroy (&record);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&out);
    bn_msg_destroy (&request);
    bn_records_sqlite_destroy (&db);
    unlink (path);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_record");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_shared_buffers);
    tcase_add_loop_test (tc, test_kept_buffers, 0, 2);
    tcase_add_test (tc, test_sqlite);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

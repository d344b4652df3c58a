/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_records: the hub's task records: what a request, its reply and
    its iopub output make of a TaskRecord, pending and per-engine counts
    (dropped with their engine), the DictDB limits, --nodb, and SQLite (kept
   across a restart, an unusable file, a full database).  */
#include <check.h>
#include <czmq.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bn_merged_writer.h"
#include "bn_msgtypes.h"
#include "bn_records.h"
#include "bn_testdir.h"

#define S_ENGINE "e0e0e0e0-00000000000000000000000a"

static bn_session_t *s_client; //  Sends requests
static bn_session_t *s_engine; //  Sends replies and output

static void
s_setup (void)
{
    s_client = bn_session_new ("key", NULL);
    s_engine = bn_session_new ("key", S_ENGINE);
    ck_assert (s_client && s_engine);
}

static void
s_teardown (void)
{
    bn_session_destroy (&s_client);
    bn_session_destroy (&s_engine);
}

//  An apply_request with one buffer of size bytes.
static bn_msg_t *
s_request (size_t size)
{
    bn_msg_t *msg = bn_msg_new (s_client, BN_MSG_APPLY_REQUEST);
    ck_assert_ptr_nonnull (msg);
    bn_msg_set_metadata (msg, json_pack ("{s:s}", "label", "x"));
    char *data = calloc (1, size ? size : 1);
    bn_msg_add_buffer (msg, data, size);
    free (data);
    return msg;
}

static bn_msg_t *
s_reply (bn_msg_t *request, const char *status)
{
    bn_msg_t *msg = bn_msg_new_reply (s_engine, request, BN_MSG_APPLY_REPLY);
    ck_assert_ptr_nonnull (msg);
    bn_msg_clear_idents (msg);
    bn_msg_set_metadata (msg, json_pack ("{s:s, s:s, s:s}", "engine", S_ENGINE,
                                         "status", status, "started",
                                         "2026-11-21T14:29:26.5Z"));
    bn_msg_set_content (msg, json_pack ("{s:s}", "status", status));
    bn_msg_add_buffer (msg, "result", 6);
    return msg;
}

static void
s_output (bn_records_t *records, bn_msg_t *request, const char *type,
          json_t *content)
{
    bn_msg_t *msg = bn_msg_new_reply (s_engine, request, type);
    bn_msg_clear_idents (msg);
    bn_msg_set_content (msg, content);
    bn_records_iopub (records, msg);
    bn_msg_destroy (&msg);
}

static const char *
s_str (json_t *record, const char *key)
{
    return json_string_value (json_object_get (record, key));
}

START_TEST (test_usage)
{
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_ptr_nonnull (records);
    const bn_monitor_t *monitor = bn_records_monitor (records);
    bn_msg_t *request = s_request (100);
    char *msg_id = strdup (bn_msg_id (request));
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    ck_assert (bn_records_pending (records, msg_id));
    ck_assert_uint_eq (bn_records_queue_count (records, S_ENGINE), 1);

    s_output (records, request, "stream",
              json_pack ("{s:s, s:s}", "name", "stdout", "text", "hello "));
    s_output (records, request, "stream",
              json_pack ("{s:s, s:s}", "name", "stdout", "text", "world\n"));
    s_output (records, request, "stream",
              json_pack ("{s:s, s:s}", "name", "stderr", "text", "oops\n"));
    s_output (records, request, "execute_input",
              json_pack ("{s:s, s:i}", "code", "a = 1", "execution_count", 1));
    s_output (records, request, "status",
              json_pack ("{s:s}", "execution_state", "idle"));
    bn_msg_t *reply = s_reply (request, "ok");
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    ck_assert (!bn_records_pending (records, msg_id));
    ck_assert_uint_eq (bn_records_queue_count (records, S_ENGINE), 0);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);

    bn_record_t *record = bn_records_get (records, msg_id);
    ck_assert_ptr_nonnull (record);
    ck_assert (bn_record_completed (record));
    json_t *rec = bn_record_json (record);
    ck_assert_str_eq (s_str (rec, "msg_id"), msg_id);
    ck_assert_str_eq (s_str (rec, "queue"), "mux");
    ck_assert_str_eq (s_str (rec, "engine_uuid"), S_ENGINE);
    ck_assert_str_eq (s_str (rec, "client_uuid"), bn_msg_session (request));
    ck_assert_str_eq (s_str (rec, "started"), "2026-11-21T14:29:26.5Z");
    ck_assert_str_eq (s_str (rec, "stdout"), "hello world\n");
    ck_assert_str_eq (s_str (rec, "stderr"), "oops\n");
    ck_assert_str_eq (s_str (rec, "execute_input"), "a = 1");
    ck_assert (json_is_null (json_object_get (rec, "error")));
    ck_assert (json_is_string (json_object_get (rec, "submitted")));
    ck_assert (json_is_string (json_object_get (rec, "completed")));
    ck_assert (json_is_string (json_object_get (rec, "received")));
    ck_assert_str_eq (s_str (json_object_get (rec, "result_content"), "status"),
                      "ok");
    ck_assert_str_eq (s_str (json_object_get (rec, "metadata"), "label"), "x");
    ck_assert_str_eq (s_str (json_object_get (rec, "header"), "msg_type"),
                      BN_MSG_APPLY_REQUEST);
    //  the buffers are the messages' own frames, shared (libzmq copies
    //  only frames under 34 bytes)
    ck_assert_uint_eq (bn_record_nbuffers (record, false), 1);
    ck_assert_uint_eq (zmq_msg_size (bn_record_buffer (record, false, 0)), 100);
    ck_assert_ptr_eq (zmq_msg_data (bn_record_buffer (record, false, 0)),
                      zmq_msg_data (bn_msg_buffer (request, 0)));
    ck_assert_uint_eq (bn_record_nbuffers (record, true), 1);
    ck_assert_uint_eq (bn_records_bytes (records), 106);
    bn_record_release (&record);

    json_t *history = bn_records_history (records);
    ck_assert_uint_eq (json_array_size (history), 1);
    ck_assert_str_eq (json_string_value (json_array_get (history, 0)), msg_id);
    json_decref (history);

    ck_assert_int_eq (bn_records_drop (records, msg_id), 0);
    ck_assert_ptr_null (bn_records_get (records, msg_id));
    ck_assert_int_eq (bn_records_drop (records, msg_id), -1);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    free (msg_id);
    bn_records_destroy (&records);
    ck_assert_ptr_null (records);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_tasks)
{
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *task = s_request (1);
    char *msg_id = strdup (bn_msg_id (task));
    bn_records_request (records, BN_MONITOR_QUEUE_TASK, task, NULL);
    ck_assert_uint_eq (bn_records_unassigned_count (records), 1);
    json_t *ids = bn_records_unassigned_ids (records);
    ck_assert_str_eq (json_string_value (json_array_get (ids, 0)), msg_id);
    json_decref (ids);
    bn_records_assigned (records, msg_id, S_ENGINE);
    ck_assert_uint_eq (bn_records_unassigned_count (records), 0);
    ck_assert_uint_eq (bn_records_tasks_count (records, S_ENGINE), 1);
    ids = bn_records_tasks_ids (records, S_ENGINE);
    ck_assert_uint_eq (json_array_size (ids), 1);
    json_decref (ids);
    //  the engine is read from the reply's metadata
    bn_msg_t *reply = s_reply (task, "ok");
    bn_records_reply (records, BN_MONITOR_QUEUE_TASK, reply, NULL);
    ck_assert_uint_eq (bn_records_tasks_count (records, S_ENGINE), 0);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    ids = bn_records_completed_ids (records, S_ENGINE);
    ck_assert_str_eq (json_string_value (json_array_get (ids, 0)), msg_id);
    json_decref (ids);
    bn_record_t *record = bn_records_get (records, msg_id);
    ck_assert_str_eq (s_str (bn_record_json (record), "queue"), "task");
    ck_assert_str_eq (s_str (bn_record_json (record), "engine_uuid"), S_ENGINE);
    bn_record_release (&record);

    //  an aborted task is not counted as completed
    bn_msg_t *task2 = s_request (1);
    bn_records_request (records, BN_MONITOR_QUEUE_TASK, task2, NULL);
    bn_records_assigned (records, bn_msg_id (task2), S_ENGINE);
    bn_msg_t *aborted = s_reply (task2, "aborted");
    bn_records_reply (records, BN_MONITOR_QUEUE_TASK, aborted, NULL);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    ck_assert (!bn_records_pending (records, bn_msg_id (task2)));

    //  a reply nobody asked for changes nothing
    bn_records_reply (records, BN_MONITOR_QUEUE_TASK, reply, NULL);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    bn_msg_destroy (&task);
    bn_msg_destroy (&task2);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&aborted);
    free (msg_id);
    bn_records_destroy (&records);
}
END_TEST

//  The records' count of engines they keep state for.
static json_int_t
s_engines_kept (bn_records_t *records)
{
    json_t *stats = bn_records_stats (records);
    json_int_t kept = json_integer_value (json_object_get (stats, "engines"));
    json_decref (stats);
    return kept;
}

START_TEST (test_engine_gone)
{
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    const bn_monitor_t *monitor = bn_records_monitor (records);
    bn_msg_t *done = s_request (1);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, done, S_ENGINE);
    bn_msg_t *reply = s_reply (done, "ok");
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_msg_destroy (&reply);
    bn_msg_t *waiting = s_request (1);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, waiting, S_ENGINE);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    ck_assert_int_eq (s_engines_kept (records), 1);

    //  unregistered with a request pending on it: kept until its answer
    bn_records_engine_gone (records, S_ENGINE);
    ck_assert_int_eq (s_engines_kept (records), 1);
    ck_assert_uint_eq (bn_records_queue_count (records, S_ENGINE), 1);
    reply = s_reply (waiting, "error");
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_msg_destroy (&reply);
    ck_assert (!bn_records_pending (records, bn_msg_id (waiting)));
    ck_assert_int_eq (s_engines_kept (records), 0);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 0);
    //  the records themselves stay
    ck_assert_uint_eq (bn_records_size (records), 2);

    //  the same uuid again starts afresh; gone while idle, dropped at once
    bn_msg_t *again = s_request (1);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, again, S_ENGINE);
    reply = s_reply (again, "ok");
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    bn_records_engine_gone (records, S_ENGINE);
    ck_assert_int_eq (s_engines_kept (records), 0);
    bn_records_engine_gone (records, S_ENGINE);
    bn_records_engine_gone (records, "unknown");

    //  registered again under its uuid while a request was pending: kept
    bn_msg_t *first = s_request (1);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, first, S_ENGINE);
    bn_records_engine_gone (records, S_ENGINE);
    bn_msg_t *second = s_request (1);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_MUX, second, S_ENGINE);
    reply = s_reply (first, "ok");
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_engines_kept (records), 1);
    ck_assert_uint_eq (bn_records_queue_count (records, S_ENGINE), 1);
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    bn_msg_destroy (&done);
    bn_msg_destroy (&waiting);
    bn_msg_destroy (&again);
    bn_msg_destroy (&first);
    bn_msg_destroy (&second);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_output_in_reply)
{
    //  a banyan engine asked for output in its reply publishes no iopub
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *request = s_request (1);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    bn_msg_t *reply = s_reply (request, "ok");
    //  (stderr holds the byte 0xFF as bn_rawtext encodes it)
    bn_msg_set_content (reply,
                        json_pack ("{s:s, s:s, s:s}", "status", "ok",
                                   "bn_stdout", "in reply\n", "bn_stderr",
                                   "warned \xF4\x8F\xBF\xBF\n"));
    bn_records_reply (records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    bn_record_t *record = bn_records_get (records, bn_msg_id (request));
    json_t *json = bn_record_json (record);
    ck_assert_str_eq (s_str (json, "stdout"), "in reply\n");
    ck_assert_ptr_null (json_object_get (json, "bn_stdout"));
    //  every reader sees U+FFFD for it, banyan's the exact byte too
    ck_assert_str_eq (s_str (json, "stderr"), "warned \xEF\xBF\xBD\n");
    ck_assert_str_eq (s_str (json, "bn_stderr"), "warned \xF4\x8F\xBF\xBF\n");
    bn_record_release (&record);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_broadcast)
{
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *request = s_request (100000);
    bn_msg_set_metadata (request,
                         json_pack ("{s:[[s,i],[s,i]], s:b, s:b}", "targets",
                                    S_ENGINE, 0, "other", 1, "is_broadcast", 1,
                                    "is_coalescing", 0));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    //  two per-engine replies, "<orig>_<uuid>": records of their own, and
    //  the original completes with the last
    for (int i = 0; i < 2; i++) {
        bn_msg_t *per_engine = bn_msg_dup (request);
        char id[256];
        snprintf (id, sizeof id, "%s_%s", orig, i ? "other" : S_ENGINE);
        bn_msg_set_msg_id (per_engine, id);
        bn_msg_t *reply = s_reply (per_engine, i ? "ok" : "error");
        json_object_set_new (bn_msg_metadata (reply), "original_msg_id",
                             json_string (orig));
        bn_msg_touch (reply, BN_PART_METADATA);
        ck_assert (bn_records_pending (records, orig));
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
        bn_record_t *record = bn_records_get (records, id);
        ck_assert_ptr_nonnull (record);
        ck_assert (bn_record_completed (record));
        ck_assert_str_eq (s_str (bn_record_json (record), "queue"),
                          "broadcast");
        //  an engine's record shares the bytes the original's keeps
        bn_record_t *original = bn_records_get (records, orig);
        ck_assert_ptr_eq (zmq_msg_data (bn_record_buffer (record, false, 0)),
                          zmq_msg_data (bn_record_buffer (original, false, 0)));
        bn_record_release (&original);
        bn_record_release (&record);
        bn_msg_destroy (&per_engine);
        bn_msg_destroy (&reply);
    }
    ck_assert (!bn_records_pending (records, orig));
    bn_record_t *record = bn_records_get (records, orig);
    ck_assert (bn_record_completed (record));
    //  its status is the failing engine's, though the last reply is ok
    json_t *content =
        json_object_get (bn_record_json (record), "result_content");
    ck_assert_str_eq (s_str (content, "status"), "error");
    //  the replies' bytes count once, in the engines' records
    uint64_t request_bytes = 0;
    for (size_t i = 0; i < bn_msg_nbuffers (request); i++)
        request_bytes += zmq_msg_size (bn_msg_buffer (request, i));
    ck_assert_uint_eq (bn_record_bytes (record), request_bytes);
    ck_assert_uint_eq (bn_records_bytes (records), 3 * request_bytes + 2 * 6);
    bn_record_release (&record);
    bn_msg_destroy (&request);
    free (orig);
    bn_records_destroy (&records);
}
END_TEST

//  A merged reply of the tree to a broadcast (orig) for engine id: its
//  parent is the engine's copy, as the tree sends it; shape 0 is
//  broadcast_targets, 1 bn_groups, 2 bn_reduced.
static bn_msg_t *
s_merged_reply (bn_msg_t *request, const char *orig, int shape, int id)
{
    bn_msg_t *copy = bn_msg_dup (request);
    char copy_id[256];
    snprintf (copy_id, sizeof copy_id, "%s_%s", orig, id ? "other" : S_ENGINE);
    bn_msg_set_msg_id (copy, copy_id);
    bn_msg_t *reply = s_reply (copy, "ok");
    bn_msg_destroy (&copy);
    char engines[16];
    snprintf (engines, sizeof engines, "%d", id);
    json_t *md = bn_msg_metadata (reply);
    json_object_set_new (md, "original_msg_id", json_string (orig));
    json_object_del (md, "engine");
    if (shape == 0)
        json_object_set_new (
            md, "broadcast_targets",
            json_pack ("[[s,i]]", id ? "other" : S_ENGINE, id));
    else if (shape == 1)
        json_object_set_new (md, "bn_groups",
                             json_pack ("[{s:s, s:s, s:i}]", "engines", engines,
                                        "status", "ok", "nbuffers", 1));
    else
        json_object_set_new (md, "bn_reduced",
                             json_pack ("{s:s, s:s, s:[]}", "op", "sum",
                                        "engines", engines, "failed"));
    bn_msg_touch (reply, BN_PART_METADATA);
    return reply;
}

START_TEST (test_broadcast_merged)
{
    //  a coalescing broadcast to two engines, answered by two merged
    //  messages of one engine each (a forwarding root passes its children's
    //  merged messages up): the original completes with the second; each
    //  engine's part is read from them under "<orig>_<uuid>" when asked,
    //  without keeping a record of it
    int shape = _i;
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *request = s_request (1);
    bn_msg_set_metadata (request,
                         json_pack ("{s:[[s,i],[s,i]], s:b, s:b}", "targets",
                                    S_ENGINE, 0, "other", 1, "is_broadcast", 1,
                                    "is_coalescing", 1));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    for (int id = 0; id < 2; id++) {
        ck_assert (bn_records_pending (records, orig));
        bn_msg_t *reply = s_merged_reply (request, orig, shape, id);
        char *copy_id = strdup (bn_msg_parent_id (reply));
        bn_record_t *part = bn_records_get (records, copy_id);
        ck_assert_msg (part && !bn_record_completed (part),
                       "%s is pending before its reply", copy_id);
        bn_record_release (&part);
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
        part = bn_records_get (records, copy_id);
        ck_assert_msg (part && bn_record_completed (part),
                       "%s is complete after its reply", copy_id);
        json_t *json = bn_record_json (part);
        ck_assert_str_eq (json_string_value (json_object_get (json, "msg_id")),
                          copy_id);
        ck_assert_str_eq (
            json_string_value (json_object_get (json, "engine_uuid")),
            id ? "other" : S_ENGINE);
        ck_assert_str_eq (
            json_string_value (json_object_get (
                json_object_get (json, "result_content"), "status")),
            "ok");
        //  (7.1.0's broadcast_targets alone does not say whose buffers
        //  are whose, and a reduced value is no engine's)
        ck_assert_uint_eq (bn_record_nbuffers (part, true), shape == 1);
        bn_record_release (&part);
        ck_assert_uint_eq (bn_records_size (records), 1);
        free (copy_id);
        bn_msg_destroy (&reply);
    }
    char stray[300];
    snprintf (stray, sizeof stray, "%s_no-such-engine", orig);
    ck_assert_ptr_null (bn_records_get (records, stray));
    ck_assert (!bn_records_pending (records, orig));
    //  a merged reply repeated once the broadcast completed changes nothing
    uint64_t bytes = bn_records_bytes (records);
    for (int i = 0; i < 100; i++) {
        bn_msg_t *reply = s_merged_reply (request, orig, shape, 0);
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
        bn_msg_destroy (&reply);
    }
    ck_assert_uint_eq (bn_records_bytes (records), bytes);
    ck_assert_uint_eq (bn_records_size (records), 1);
    bn_record_t *record = bn_records_get (records, orig);
    ck_assert_ptr_nonnull (record);
    ck_assert (bn_record_completed (record));
    bn_record_release (&record);
    bn_msg_destroy (&request);
    free (orig);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_broadcast_merged_without)
{
    //  a coalescing broadcast that completes without one engine's entry (a
    //  merged reply that reached no engine ends it): that engine's part is
    //  no such record, not one that waits for ever
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *request = s_request (1);
    bn_msg_set_metadata (request,
                         json_pack ("{s:[[s,i],[s,i]], s:b, s:b}", "targets",
                                    S_ENGINE, 0, "other", 1, "is_broadcast", 1,
                                    "is_coalescing", 1));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    char other[300];
    snprintf (other, sizeof other, "%s_other", orig);
    bn_record_t *part = bn_records_get (records, other);
    ck_assert_msg (part && !bn_record_completed (part),
                   "a part is pending before the replies");
    bn_record_release (&part);
    bn_msg_t *reply = s_merged_reply (request, orig, 0, 0);
    bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    bn_msg_destroy (&reply);
    reply = s_merged_reply (request, orig, 0, 0);
    json_object_set_new (bn_msg_metadata (reply), "broadcast_targets",
                         json_array ());
    bn_msg_touch (reply, BN_PART_METADATA);
    bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    bn_msg_destroy (&reply);
    ck_assert (!bn_records_pending (records, orig));
    ck_assert_ptr_null (bn_records_get (records, other));
    char mine[300];
    snprintf (mine, sizeof mine, "%s_%s", orig, S_ENGINE);
    part = bn_records_get (records, mine);
    ck_assert (part && bn_record_completed (part));
    bn_record_release (&part);
    bn_msg_destroy (&request);
    free (orig);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_broadcast_merged_many)
{
    //  one merged reply (as a tree node writes it, bn_replies spliced) for
    //  a broadcast to 100 engines: each engine's part, asked for once the
    //  broadcast completed, has its own status, times and buffers
    enum { N = 100 };
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    bn_msg_t *request = s_request (1);
    json_t *targets = json_array ();
    char uuid[64];
    for (int i = 0; i < N; i++) {
        snprintf (uuid, sizeof uuid, "engine-%03d", i);
        json_array_append_new (targets, json_pack ("[s,i]", uuid, i));
    }
    bn_msg_set_metadata (request,
                         json_pack ("{s:o, s:b, s:b}", "targets", targets,
                                    "is_broadcast", 1, "is_coalescing", 1));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    bn_msg_t *copy = bn_msg_dup (request);
    char id[300];
    snprintf (id, sizeof id, "%s_engine-000", orig);
    bn_msg_set_msg_id (copy, id);
    bn_msg_t *reply = bn_msg_new_reply (s_engine, copy, BN_MSG_APPLY_REPLY);
    bn_msg_clear_idents (reply);
    bn_merged_writer_t *writer = bn_merged_writer_new ();
    for (int i = 0; i < N; i++) {
        //  every third engine failed (no buffer), the others one buffer
        bool ok = i % 3 != 0;
        char started[32], value[16];
        snprintf (started, sizeof started, "2026-01-01T00:00:%02d.000000Z",
                  i % 60);
        json_t *error = ok ? NULL
                           : json_pack ("{s:s, s:s, s:s}", "status", "error",
                                        "ename", "ValueError", "evalue", "bad");
        char *entry = bn_merged_entry (ok ? "ok" : "error", started, started,
                                       ok ? 1 : 0, error, NULL, NULL);
        json_decref (error);
        snprintf (uuid, sizeof uuid, "engine-%03d", i);
        bn_merged_writer_add (writer, uuid, i, entry, strlen (entry));
        free (entry);
        snprintf (value, sizeof value, "v%d", i);
        if (ok)
            bn_msg_add_buffer (reply, value, strlen (value));
    }
    json_t *base = json_pack ("{s:s, s:b, s:s}", "status", "error",
                              "is_coalescing", 1, "original_msg_id", orig);
    ck_assert_int_eq (bn_merged_writer_finish (writer, base, reply), 0);
    json_decref (base);
    bn_merged_writer_destroy (&writer);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "error"));
    bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    ck_assert (!bn_records_pending (records, orig));
    for (int i = N - 1; i >= 0; i--) {
        snprintf (id, sizeof id, "%s_engine-%03d", orig, i);
        bn_record_t *part = bn_records_get (records, id);
        ck_assert_msg (part && bn_record_completed (part), "%s", id);
        json_t *json = bn_record_json (part);
        const char *status =
            s_str (json_object_get (json, "result_metadata"), "status");
        ck_assert_str_eq (status, i % 3 ? "ok" : "error");
        char started[32];
        snprintf (started, sizeof started, "2026-01-01T00:00:%02d.000000Z",
                  i % 60);
        ck_assert_str_eq (s_str (json, "started"), started);
        ck_assert_uint_eq (bn_record_nbuffers (part, true), i % 3 ? 1 : 0);
        if (i % 3) {
            char value[16];
            snprintf (value, sizeof value, "v%d", i);
            zmq_msg_t *buffer = bn_record_buffer (part, true, 0);
            ck_assert_uint_eq (zmq_msg_size (buffer), strlen (value));
            ck_assert_mem_eq (zmq_msg_data (buffer), value, strlen (value));
        }
        bn_record_release (&part);
    }
    snprintf (id, sizeof id, "%s_engine-%03d", orig, N);
    ck_assert_ptr_null (bn_records_get (records, id));
    bn_msg_destroy (&reply);
    bn_msg_destroy (&copy);
    bn_msg_destroy (&request);
    free (orig);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_limits)
{
    //  10 records at most: the 11th culls the oldest tenth (+1), never a
    //  pending one
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 10, 1000);
    bn_msg_t *first = s_request (1);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, first, S_ENGINE);
    char *ids[12];
    for (int i = 0; i < 11; i++) {
        bn_msg_t *request = s_request (1);
        ids[i] = strdup (bn_msg_id (request));
        bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
        bn_msg_t *reply = s_reply (request, "ok");
        bn_records_reply (records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
        bn_msg_destroy (&request);
        bn_msg_destroy (&reply);
    }
    ck_assert_uint_le (bn_records_size (records), 10);
    ck_assert (bn_records_pending (records, bn_msg_id (first)));
    bn_record_t *record = bn_records_get (records, bn_msg_id (first));
    ck_assert_ptr_nonnull (record);
    ck_assert_ptr_null (bn_records_get (records, ids[0]));
    record = bn_records_get (records, ids[10]);
    ck_assert_ptr_nonnull (record);
    //  bytes: a 2000-byte request goes over 1000 and culls older ones
    bn_msg_t *big = s_request (2000);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, big, S_ENGINE);
    ck_assert_ptr_null (bn_records_get (records, ids[10]));
    for (int i = 0; i < 11; i++)
        free (ids[i]);
    bn_msg_destroy (&big);
    //  pending requests are never culled, however many
    bn_msg_t *waiting[30];
    for (int i = 0; i < 30; i++) {
        waiting[i] = s_request (1);
        bn_records_request (records, BN_MONITOR_QUEUE_TASK, waiting[i], NULL);
    }
    for (int i = 0; i < 30; i++) {
        record = bn_records_get (records, bn_msg_id (waiting[i]));
        ck_assert_ptr_nonnull (record);
        bn_msg_destroy (&waiting[i]);
    }
    ck_assert_uint_eq (bn_records_unassigned_count (records), 30);
    bn_msg_destroy (&first);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_nodb)
{
    bn_records_t *records = bn_records_new (BN_RECORDS_NONE, 0, 0);
    ck_assert (!bn_records_storing (records));
    bn_msg_t *request = s_request (10);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    //  still tracked, never kept
    ck_assert (bn_records_pending (records, bn_msg_id (request)));
    ck_assert_ptr_null (bn_records_get (records, bn_msg_id (request)));
    bn_msg_t *reply = s_reply (request, "ok");
    bn_records_reply (records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    ck_assert (!bn_records_pending (records, bn_msg_id (request)));
    ck_assert_uint_eq (bn_records_completed_count (records, S_ENGINE), 1);
    ck_assert_uint_eq (bn_records_size (records), 0);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    bn_records_destroy (&records);
}
END_TEST

static char s_dir[256];

static void
s_tmp_setup (void)
{
    s_setup ();
    snprintf (s_dir, sizeof s_dir, "/tmp/check_bn_records.XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_tmp_teardown (void)
{
    s_teardown ();
    t_rmtree (s_dir);
}

START_TEST (test_sqlite_restart)
{
    char path[300];
    snprintf (path, sizeof path, "%s/records.db", s_dir);
    char err[512];
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    ck_assert (bn_records_sqlite_ok (records));
    struct stat st;
    ck_assert_int_eq (stat (path, &st), 0);
    ck_assert_int_eq (st.st_mode & 0777, 0600);
    bn_msg_t *request = s_request (3000);
    char *msg_id = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    s_output (records, request, "stream",
              json_pack ("{s:s, s:s}", "name", "stdout", "text", "out\n"));
    bn_msg_t *reply = s_reply (request, "ok");
    bn_records_reply (records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    ck_assert_int_eq (bn_records_flush (records), 0);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    //  a second one that only the destructor writes
    request = s_request (1);
    char *second = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_TASK, request, NULL);
    bn_msg_destroy (&request);
    bn_records_destroy (&records);

    //  the next controller reads them back
    records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    ck_assert_uint_eq (bn_records_size (records), 0);
    bn_record_t *record = bn_records_get (records, msg_id);
    ck_assert_ptr_nonnull (record);
    ck_assert (bn_record_completed (record));
    json_t *rec = bn_record_json (record);
    ck_assert_str_eq (s_str (rec, "stdout"), "out\n");
    ck_assert_str_eq (s_str (rec, "engine_uuid"), S_ENGINE);
    ck_assert_str_eq (s_str (json_object_get (rec, "metadata"), "label"), "x");
    ck_assert_uint_eq (bn_record_nbuffers (record, false), 1);
    ck_assert_uint_eq (zmq_msg_size (bn_record_buffer (record, false, 0)),
                       3000);
    ck_assert_uint_eq (zmq_msg_size (bn_record_buffer (record, true, 0)), 6);
    ck_assert (memcmp (zmq_msg_data (bn_record_buffer (record, true, 0)),
                       "result", 6) == 0);
    bn_record_release (&record);
    json_t *history = bn_records_history (records);
    ck_assert_uint_eq (json_array_size (history), 2);
    ck_assert_str_eq (json_string_value (json_array_get (history, 0)), msg_id);
    ck_assert_str_eq (json_string_value (json_array_get (history, 1)), second);
    json_decref (history);
    //  purge reaches the database
    ck_assert_int_eq (bn_records_drop (records, msg_id), 0);
    ck_assert_ptr_null (bn_records_get (records, msg_id));
    bn_records_destroy (&records);
    free (msg_id);
    free (second);
}
END_TEST

//  A request's large buffer is copied by the records' copier: the bytes
//  read from its record are the request's, once the message is gone, and
//  SQLite gets them the same, written and read back.
START_TEST (test_large_request_kept)
{
    char path[300];
    snprintf (path, sizeof path, "%s/large.db", s_dir);
    char err[512];
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    size_t size = 300000;
    char *bytes = malloc (size);
    ck_assert_ptr_nonnull (bytes);
    for (size_t i = 0; i < size; i++)
        bytes[i] = (char)(i * 7 + i / 251);
    bn_msg_t *request = bn_msg_new (s_client, BN_MSG_APPLY_REQUEST);
    ck_assert_ptr_nonnull (request);
    ck_assert_int_eq (bn_msg_add_buffer (request, bytes, size), 0);
    char *msg_id = strdup (bn_msg_id (request));
    const void *sent = zmq_msg_data (bn_msg_buffer (request, 0));
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    bn_msg_destroy (&request);

    bn_record_t *record = bn_records_get (records, msg_id);
    ck_assert_ptr_nonnull (record);
    zmq_msg_t *kept = bn_record_buffer (record, false, 0);
    ck_assert_ptr_ne (zmq_msg_data (kept), sent);
    ck_assert_uint_eq (zmq_msg_size (kept), size);
    ck_assert (memcmp (zmq_msg_data (kept), bytes, size) == 0);
    bn_record_release (&record);
    ck_assert_int_eq (bn_records_flush (records), 0);
    bn_records_destroy (&records);

    records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    record = bn_records_get (records, msg_id);
    ck_assert_ptr_nonnull (record);
    kept = bn_record_buffer (record, false, 0);
    ck_assert_uint_eq (zmq_msg_size (kept), size);
    ck_assert (memcmp (zmq_msg_data (kept), bytes, size) == 0);
    bn_record_release (&record);
    bn_records_destroy (&records);
    free (msg_id);
    free (bytes);
}
END_TEST

START_TEST (test_sqlite_broadcast)
{
    //  a coalescing broadcast to three engines: one engine's own error
    //  first, then two merged replies of one engine each (a forwarding
    //  root above merging nodes; bn_groups, then 7.1.0's broadcast_targets
    //  alone, which does not say whose buffers are whose). Written to SQLite,
    //  read back by the next controller: each engine's part of the merged
    //  replies, and the broadcast's result content (the error), as before
    char path[300];
    snprintf (path, sizeof path, "%s/records.db", s_dir);
    char err[512];
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    bn_msg_t *request = s_request (1);
    bn_msg_set_metadata (request,
                         json_pack ("{s:[[s,i],[s,i],[s,i]], s:b, "
                                    "s:b}",
                                    "targets", S_ENGINE, 0, "other", 1, "third",
                                    2, "is_broadcast", 1, "is_coalescing", 1));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    char third[300];
    snprintf (third, sizeof third, "%s_third", orig);
    bn_msg_t *copy = bn_msg_dup (request);
    bn_msg_set_msg_id (copy, third);
    bn_msg_t *reply = s_reply (copy, "error");
    json_object_set_new (bn_msg_metadata (reply), "original_msg_id",
                         json_string (orig));
    json_object_set_new (bn_msg_metadata (reply), "engine",
                         json_string ("third"));
    bn_msg_touch (reply, BN_PART_METADATA);
    bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&copy);
    //  written while pending, then again once complete
    ck_assert_int_eq (bn_records_flush (records), 0);
    for (int id = 0; id < 2; id++) {
        reply = s_merged_reply (request, orig, id ? 0 : 1, id);
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
        bn_msg_destroy (&reply);
    }
    ck_assert (!bn_records_pending (records, orig));
    ck_assert_int_eq (bn_records_flush (records), 0);
    bn_records_destroy (&records);

    records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    for (int round = 0; round < 2; round++)
        for (int id = 0; id < 3; id++) {
            const char *uuid = id == 0 ? S_ENGINE : id == 1 ? "other" : "third";
            char part_id[300];
            snprintf (part_id, sizeof part_id, "%s_%s", orig, uuid);
            bn_record_t *part = bn_records_get (records, part_id);
            ck_assert_msg (part && bn_record_completed (part), "%s", part_id);
            json_t *json = bn_record_json (part);
            ck_assert_str_eq (s_str (json, "msg_id"), part_id);
            ck_assert_str_eq (s_str (json, "engine_uuid"), uuid);
            ck_assert_str_eq (
                s_str (json_object_get (json, "result_content"), "status"),
                id == 2 ? "error" : "ok");
            ck_assert_uint_eq (bn_record_nbuffers (part, true), id != 1);
            zmq_msg_t *buffer = bn_record_buffer (part, true, 0);
            ck_assert (id == 1 ||
                       (zmq_msg_size (buffer) == 6 &&
                        memcmp (zmq_msg_data (buffer), "result", 6) == 0));
            bn_record_release (&part);
        }
    char stray[300];
    snprintf (stray, sizeof stray, "%s_no-such-engine", orig);
    ck_assert_ptr_null (bn_records_get (records, stray));
    bn_record_t *record = bn_records_get (records, orig);
    ck_assert (record && bn_record_completed (record));
    ck_assert_str_eq (
        s_str (json_object_get (bn_record_json (record), "result_content"),
               "status"),
        "error");
    bn_record_release (&record);
    //  purged, its parts go with it
    ck_assert_int_eq (bn_records_drop (records, orig), 0);
    char mine[300];
    snprintf (mine, sizeof mine, "%s_%s", orig, S_ENGINE);
    ck_assert_ptr_null (bn_records_get (records, mine));
    bn_records_destroy (&records);
    bn_msg_destroy (&request);
    free (orig);
}
END_TEST

START_TEST (test_sqlite_abandoned)
{
    //  requests still unanswered when their controller stopped: read back
    //  by the next, each says ControllerGone instead of pending for ever;
    //  a broadcast's engine that had answered keeps its answer
    char path[300];
    snprintf (path, sizeof path, "%s/records.db", s_dir);
    char err[512];
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    bn_msg_t *direct = s_request (1);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, direct, S_ENGINE);
    bn_msg_t *request = s_request (1);
    bn_msg_set_metadata (request,
                         json_pack ("{s:[[s,i],[s,i]], s:b, s:b}", "targets",
                                    S_ENGINE, 0, "other", 1, "is_broadcast", 1,
                                    "is_coalescing", 1));
    char *orig = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
    bn_msg_t *reply = s_merged_reply (request, orig, 0, 0);
    bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    bn_msg_destroy (&reply);
    ck_assert (bn_records_pending (records, orig));
    bn_records_destroy (&records);

    records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    const char *ids[] = {bn_msg_id (direct), orig, NULL, NULL};
    char mine[300], other[300];
    snprintf (mine, sizeof mine, "%s_%s", orig, S_ENGINE);
    snprintf (other, sizeof other, "%s_other", orig);
    ids[2] = other;
    for (int i = 0; ids[i]; i++) {
        bn_record_t *record = bn_records_get (records, ids[i]);
        ck_assert_msg (record && bn_record_completed (record), "%s", ids[i]);
        json_t *content =
            json_object_get (bn_record_json (record), "result_content");
        ck_assert_str_eq (s_str (content, "ename"), "ControllerGone");
        bn_record_release (&record);
    }
    bn_record_t *record = bn_records_get (records, mine);
    ck_assert (record && bn_record_completed (record));
    ck_assert_str_eq (
        s_str (json_object_get (bn_record_json (record), "result_content"),
               "status"),
        "ok");
    bn_record_release (&record);
    bn_records_destroy (&records);
    bn_msg_destroy (&direct);
    bn_msg_destroy (&request);
    free (orig);
}
END_TEST

START_TEST (test_sqlite_unusable)
{
    char path[300], err[512];
    //  a file where a folder should be, and a folder where the file should be
    snprintf (path, sizeof path, "%s/file", s_dir);
    FILE *file = fopen (path, "w");
    fputs ("not a folder\n", file);
    fclose (file);
    snprintf (path, sizeof path, "%s/file/records.db", s_dir);
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    err[0] = 0;
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      -1);
    ck_assert_msg (strstr (err, path), "error names the file: %s", err);
    ck_assert (!bn_records_sqlite_ok (records));
    ck_assert_int_eq (bn_records_open_sqlite (records, s_dir, err, sizeof err),
                      -1);
    //  and a file that is not a database
    snprintf (path, sizeof path, "%s/file", s_dir);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      -1);
    ck_assert_msg (strstr (err, "not a database"), "%s", err);
    //  the records go on in memory
    bn_msg_t *request = s_request (1);
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    bn_record_t *record = bn_records_get (records, bn_msg_id (request));
    ck_assert_ptr_nonnull (record);
    bn_msg_destroy (&request);
    bn_records_destroy (&records);
}
END_TEST

START_TEST (test_sqlite_full)
{
    char path[300], err[512];
    snprintf (path, sizeof path, "%s/records.db", s_dir);
    bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
    ck_assert_int_eq (bn_records_open_sqlite (records, path, err, sizeof err),
                      0);
    //  a database that cannot grow fails like a full disk
    ck_assert_int_eq (bn_records_sqlite_limit (records, 4), 0);
    bn_msg_t *request = s_request (64 * 1024);
    char *msg_id = strdup (bn_msg_id (request));
    bn_records_request (records, BN_MONITOR_QUEUE_MUX, request, S_ENGINE);
    ck_assert_int_eq (bn_records_flush (records), -1);
    ck_assert (!bn_records_sqlite_ok (records));
    json_t *stats = bn_records_stats (records);
    ck_assert_str_eq (s_str (stats, "storage"), "memory");
    ck_assert (json_is_true (json_object_get (stats, "sqlite_failed")));
    json_decref (stats);
    //  every record is still served from memory, and new ones are kept
    bn_record_t *record = bn_records_get (records, msg_id);
    ck_assert_ptr_nonnull (record);
    bn_msg_t *reply = s_reply (request, "ok");
    bn_records_reply (records, BN_MONITOR_QUEUE_MUX, reply, S_ENGINE);
    ck_assert (bn_record_completed (record));
    ck_assert_int_eq (bn_records_flush (records), 0);
    json_t *history = bn_records_history (records);
    ck_assert_uint_eq (json_array_size (history), 1);
    json_decref (history);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    free (msg_id);
    bn_records_destroy (&records);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_records");
    TCase *tc = tcase_create ("memory");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_tasks);
    tcase_add_test (tc, test_engine_gone);
    tcase_add_test (tc, test_output_in_reply);
    tcase_add_test (tc, test_broadcast);
    tcase_add_loop_test (tc, test_broadcast_merged, 0, 3);
    tcase_add_test (tc, test_broadcast_merged_without);
    tcase_add_test (tc, test_broadcast_merged_many);
    tcase_add_test (tc, test_limits);
    tcase_add_test (tc, test_nodb);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("sqlite");
    tcase_add_checked_fixture (tc, s_tmp_setup, s_tmp_teardown);
    tcase_add_test (tc, test_sqlite_restart);
    tcase_add_test (tc, test_large_request_kept);
    tcase_add_test (tc, test_sqlite_broadcast);
    tcase_add_test (tc, test_sqlite_abandoned);
    tcase_add_test (tc, test_sqlite_unusable);
    tcase_add_test (tc, test_sqlite_full);
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

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_group: grouping replies by identical outcome, merging the
    groups of children, and the bn_groups metadata round trip.  */
#include "bn_group.h"
#include "bn_session.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A frame holding a copy of text (or of size bytes of data).
static zmq_msg_t *
s_frame (const void *data, size_t size)
{
    zmq_msg_t *frame = malloc (sizeof (zmq_msg_t));
    ck_assert_int_eq (zmq_msg_init_size (frame, size), 0);
    if (size)
        memcpy (zmq_msg_data (frame), data, size);
    return frame;
}

static zmq_msg_t *
s_text (const char *text)
{
    return s_frame (text, strlen (text));
}

static void
s_frame_destroy (zmq_msg_t **frame_p)
{
    zmq_msg_close (*frame_p);
    free (*frame_p);
    *frame_p = NULL;
}

//  Encoded engines of group index.
static void
s_assert_engines (bn_group_t *groups, size_t index, const char *expected)
{
    char *text = bn_group_engines_text (groups, index);
    ck_assert_str_eq (text, expected);
    free (text);
}

//  A reply message with content and text buffers.
static bn_msg_t *
s_reply (bn_session_t *session, const char *content, const char *buffer1,
         const char *buffer2)
{
    bn_msg_t *reply = bn_msg_new (session, "apply_reply");
    ck_assert_ptr_nonnull (reply);
    json_error_t error;
    json_t *value = json_loads (content, 0, &error);
    ck_assert_msg (value != NULL, "%s", error.text);
    bn_msg_set_content (reply, value);
    if (buffer1)
        bn_msg_add_buffer (reply, buffer1, strlen (buffer1));
    if (buffer2)
        bn_msg_add_buffer (reply, buffer2, strlen (buffer2));
    return reply;
}

START_TEST (test_usage)
{
    //  A leaf gets replies from engines 3, 0, 2, 1: three identical 2 kB
    //  results and one different one; it sends up two groups.
    char big[2048];
    memset (big, 'x', sizeof big);
    zmq_msg_t *same[3];
    for (int i = 0; i < 3; i++)
        same[i] = s_frame (big, sizeof big);
    zmq_msg_t *other = s_text ("other");

    bn_group_t *groups = bn_group_new ();
    ck_assert_ptr_nonnull (groups);
    bn_group_reply_t ok = {"ok", NULL, NULL, NULL, NULL, NULL, &same[0], 1};
    ck_assert_int_eq (bn_group_add (groups, 3, &ok), 0);
    ok.buffers = &same[1];
    ck_assert_int_eq (bn_group_add (groups, 0, &ok), 0);
    bn_group_reply_t odd = {"ok", NULL, NULL, NULL, NULL, NULL, &other, 1};
    ck_assert_int_eq (bn_group_add (groups, 2, &odd), 0);
    ok.buffers = &same[2];
    ck_assert_int_eq (bn_group_add (groups, 1, &ok), 0);

    ck_assert_uint_eq (bn_group_size (groups), 2);
    ck_assert_uint_eq (bn_group_engines_total (groups), 4);
    s_assert_engines (groups, 0, "0-1,3");
    s_assert_engines (groups, 1, "2");
    ck_assert_str_eq (bn_group_status (groups, 0), "ok");
    ck_assert_uint_eq (bn_group_nbuffers (groups, 0), 1);
    //  The group shares the first member's bytes: no copy.
    ck_assert_ptr_eq (zmq_msg_data (bn_group_buffer (groups, 0, 0)),
                      zmq_msg_data (same[0]));

    //  The merged message: metadata and each group's buffers once.
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *merged = bn_msg_new (session, "apply_reply");
    json_t *json = bn_group_json (groups);
    char *text = json_dumps (json, JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_str_eq (text, "[{\"engines\":\"0-1,3\",\"nbuffers\":1,"
                            "\"status\":\"ok\"},{\"engines\":\"2\","
                            "\"nbuffers\":1,\"status\":\"ok\"}]");
    free (text);
    json_t *metadata = json_object ();
    json_object_set_new (metadata, "bn_groups", json);
    bn_msg_set_metadata (merged, metadata);
    ck_assert_int_eq (bn_group_add_buffers (groups, merged), 0);
    ck_assert_uint_eq (bn_msg_nbuffers (merged), 2);
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (merged, 0)),
                      zmq_msg_data (same[0]));
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (merged, 1)), 5);

    bn_group_destroy (&groups);
    ck_assert_ptr_null (groups);
    bn_group_destroy (&groups);
    //  The message still holds its shared frames after the table is gone.
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (merged, 0)), sizeof big);
    bn_msg_destroy (&merged);
    bn_session_destroy (&session);
    for (int i = 0; i < 3; i++)
        s_frame_destroy (&same[i]);
    s_frame_destroy (&other);
}
END_TEST

START_TEST (test_keys)
{
    //  Each of these differs from the first in one part of the outcome.
    zmq_msg_t *ab[] = {s_text ("a"), s_text ("b")};
    zmq_msg_t *joined[] = {s_text ("ab")};
    zmq_msg_t *split[] = {s_text ("a"), s_text ("b")};
    zmq_msg_t *empty[] = {s_text ("")};
    bn_group_reply_t cases[] = {
        {"ok", NULL, NULL, NULL, NULL, NULL, ab, 2},
        {"ok", NULL, NULL, NULL, NULL, NULL, joined, 1},
        {"ok", NULL, NULL, NULL, NULL, NULL, ab, 1},
        {"ok", NULL, NULL, NULL, NULL, NULL, NULL, 0},
        {"ok", NULL, NULL, NULL, NULL, NULL, empty, 1},
        {"ok", NULL, NULL, "out", NULL, NULL, ab, 2},
        {"ok", NULL, NULL, NULL, "out", NULL, ab, 2},
        {"ok", NULL, NULL, "o", "ut", NULL, ab, 2},
        {"error", "ValueError", "bad", NULL, NULL, NULL, ab, 2},
        {"error", "ValueError", "worse", NULL, NULL, NULL, ab, 2},
        {"error", "TypeError", "bad", NULL, NULL, NULL, ab, 2},
        {"aborted", NULL, NULL, NULL, NULL, NULL, ab, 2},
    };
    size_t n = sizeof cases / sizeof cases[0];
    bn_group_t *groups = bn_group_new ();
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq (bn_group_add (groups, (int)i, &cases[i]), 0);
    ck_assert_uint_eq (bn_group_size (groups), n);

    //  These are the same as the first: equal bytes in other frames,
    //  status defaulted, empty texts as absent, ename ignored when ok.
    bn_group_reply_t same[] = {
        {"ok", NULL, NULL, NULL, NULL, NULL, split, 2},
        {NULL, NULL, NULL, NULL, NULL, NULL, ab, 2},
        {"ok", NULL, NULL, "", "", NULL, ab, 2},
        {"ok", "Ignored", "ignored", NULL, NULL, NULL, ab, 2},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        ck_assert_int_eq (bn_group_add (groups, 100 + (int)i, &same[i]), 0);
    ck_assert_uint_eq (bn_group_size (groups), n);
    s_assert_engines (groups, 0, "0,100-103");
    ck_assert_ptr_null (bn_group_ename (groups, 0));
    ck_assert_str_eq (bn_group_ename (groups, 8), "ValueError");
    ck_assert_str_eq (bn_group_evalue (groups, 9), "worse");
    ck_assert_str_eq (bn_group_stdout (groups, 5), "out");
    ck_assert_ptr_null (bn_group_stderr (groups, 5));
    ck_assert_str_eq (bn_group_stderr (groups, 6), "out");
    ck_assert_str_eq (bn_group_status (groups, 11), "aborted");
    bn_group_destroy (&groups);
    for (int i = 0; i < 2; i++) {
        s_frame_destroy (&ab[i]);
        s_frame_destroy (&split[i]);
    }
    s_frame_destroy (&joined[0]);
    s_frame_destroy (&empty[0]);
}
END_TEST

START_TEST (test_duplicates)
{
    zmq_msg_t *frame = s_text ("r");
    bn_group_reply_t ok = {"ok", NULL, NULL, NULL, NULL, NULL, &frame, 1};
    bn_group_reply_t bad = {"error", "E", "v", NULL, NULL, NULL, NULL, 0};
    bn_group_t *groups = bn_group_new ();
    ck_assert_int_eq (bn_group_add (groups, 5, &ok), 0);
    //  An engine answers once, whatever its outcome.
    ck_assert_int_eq (bn_group_add (groups, 5, &ok), -1);
    ck_assert_int_eq (bn_group_add (groups, 5, &bad), -1);
    ck_assert_int_eq (bn_group_add (groups, -1, &ok), -1);
    bn_idset_t *set = bn_idset_parse ("3-6");
    ck_assert_int_eq (bn_group_add_set (groups, set, &bad), -1);
    bn_idset_t *none = bn_idset_new ();
    ck_assert_int_eq (bn_group_add_set (groups, none, &ok), -1);
    //  The table is as before.
    ck_assert_uint_eq (bn_group_size (groups), 1);
    ck_assert_uint_eq (bn_group_engines_total (groups), 1);
    ck_assert (bn_group_has (groups, 5));
    ck_assert (!bn_group_has (groups, 4));
    ck_assert (!bn_group_has (groups, -1));
    bn_idset_destroy (&set);
    bn_idset_destroy (&none);

    //  Clear empties the table, and engines may answer again.
    bn_group_clear (groups);
    ck_assert_uint_eq (bn_group_size (groups), 0);
    ck_assert_int_eq (bn_group_add (groups, 5, &bad), 0);
    bn_group_destroy (&groups);
    s_frame_destroy (&frame);
}
END_TEST

START_TEST (test_order)
{
    //  Groups are listed by lowest engine id, whatever the arrival order.
    zmq_msg_t *frames[] = {s_text ("a"), s_text ("b"), s_text ("c")};
    bn_group_t *groups = bn_group_new ();
    int arrivals[][2] = {{9, 2}, {7, 1}, {8, 0}, {4, 2}, {6, 0}, {5, 1}};
    for (size_t i = 0; i < 6; i++) {
        bn_group_reply_t reply = {
            "ok", NULL, NULL, NULL, NULL, NULL, &frames[arrivals[i][1]], 1};
        ck_assert_int_eq (bn_group_add (groups, arrivals[i][0], &reply), 0);
    }
    s_assert_engines (groups, 0, "4,9");
    s_assert_engines (groups, 1, "5,7");
    s_assert_engines (groups, 2, "6,8");
    //  A later arrival can move a group first.
    bn_group_reply_t reply = {"ok", NULL, NULL,       NULL,
                              NULL, NULL, &frames[0], 1};
    ck_assert_int_eq (bn_group_add (groups, 1, &reply), 0);
    s_assert_engines (groups, 0, "1,6,8");
    ck_assert_uint_eq (zmq_msg_size (bn_group_buffer (groups, 0, 0)), 1);
    ck_assert_int_eq (*(char *)zmq_msg_data (bn_group_buffer (groups, 0, 0)),
                      'a');
    bn_group_destroy (&groups);
    for (int i = 0; i < 3; i++)
        s_frame_destroy (&frames[i]);
}
END_TEST

START_TEST (test_merge)
{
    //  Two children's tables: the same outcome under both joins.
    zmq_msg_t *yes = s_text ("yes"), *no = s_text ("no");
    bn_group_reply_t ok = {"ok", NULL, NULL, NULL, NULL, NULL, &yes, 1};
    bn_group_reply_t nay = {"ok", NULL, NULL, NULL, NULL, NULL, &no, 1};
    bn_group_t *left = bn_group_new (), *right = bn_group_new ();
    bn_group_add (left, 0, &ok);
    bn_group_add (left, 2, &nay);
    bn_group_add (right, 1, &ok);
    bn_group_add (right, 3, &ok);
    bn_group_t *root = bn_group_new ();
    ck_assert_int_eq (bn_group_merge (root, left), 0);
    ck_assert_int_eq (bn_group_merge (root, right), 0);
    ck_assert_uint_eq (bn_group_size (root), 2);
    s_assert_engines (root, 0, "0-1,3");
    s_assert_engines (root, 1, "2");
    //  The sources are unchanged.
    ck_assert_uint_eq (bn_group_size (left), 2);
    s_assert_engines (right, 0, "1,3");
    //  Merging a table again overlaps: refused, root unchanged.
    ck_assert_int_eq (bn_group_merge (root, right), -1);
    ck_assert_uint_eq (bn_group_engines_total (root), 4);
    s_assert_engines (root, 0, "0-1,3");
    //  The sources can go before the merged table.
    bn_group_destroy (&left);
    bn_group_destroy (&right);
    s_frame_destroy (&yes);
    s_frame_destroy (&no);
    ck_assert_int_eq (
        memcmp (zmq_msg_data (bn_group_buffer (root, 0, 0)), "yes", 3), 0);
    bn_group_destroy (&root);
}
END_TEST

START_TEST (test_reply_messages)
{
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_group_t *groups = bn_group_new ();
    char err[256] = "";
    //  Two errors that differ only in engine_info and traceback group
    //  together; the first one's content is kept.
    const char *errors[] = {
        "{\"status\": \"error\", \"ename\": \"ZeroDivisionError\", "
        "\"evalue\": \"division by zero\", \"traceback\": [\"t0\"], "
        "\"engine_info\": {\"engine_id\": 0}}",
        "{\"status\": \"error\", \"ename\": \"ZeroDivisionError\", "
        "\"evalue\": \"division by zero\", \"traceback\": [\"t1\"], "
        "\"engine_info\": {\"engine_id\": 1}}"};
    for (int eid = 0; eid < 2; eid++) {
        bn_msg_t *reply = s_reply (session, errors[eid], NULL, NULL);
        ck_assert_int_eq (
            bn_group_add_reply (groups, eid, reply, err, sizeof err), 0);
        bn_msg_destroy (&reply);
    }
    bn_msg_t *reply = s_reply (
        session, "{\"status\": \"ok\", \"bn_stdout\": \"hi\\n\"}", "r1", "r2");
    ck_assert_int_eq (bn_group_add_reply (groups, 2, reply, err, sizeof err),
                      0);
    //  The same engine again is refused with a message.
    ck_assert_int_eq (bn_group_add_reply (groups, 2, reply, err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "engine 2 already has a reply");
    bn_msg_destroy (&reply);

    ck_assert_uint_eq (bn_group_size (groups), 2);
    s_assert_engines (groups, 0, "0-1");
    ck_assert_str_eq (bn_group_ename (groups, 0), "ZeroDivisionError");
    json_t *content = bn_group_content (groups, 0);
    ck_assert_int_eq (
        json_integer_value (json_object_get (
            json_object_get (content, "engine_info"), "engine_id")),
        0);
    ck_assert_ptr_null (bn_group_content (groups, 1));
    ck_assert_str_eq (bn_group_stdout (groups, 1), "hi\n");
    ck_assert_uint_eq (bn_group_nbuffers (groups, 1), 2);

    json_t *json = bn_group_json (groups);
    json_t *first = json_array_get (json, 0),
           *second = json_array_get (json, 1);
    ck_assert_str_eq (json_string_value (json_object_get (first, "engines")),
                      "0-1");
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_object_get (first, "content"), "evalue")),
                      "division by zero");
    ck_assert_int_eq (json_integer_value (json_object_get (first, "nbuffers")),
                      0);
    ck_assert_str_eq (json_string_value (json_object_get (second, "bn_stdout")),
                      "hi\n");
    ck_assert_ptr_null (json_object_get (second, "content"));
    ck_assert_ptr_null (json_object_get (second, "bn_stderr"));
    json_decref (json);
    bn_group_destroy (&groups);
    bn_session_destroy (&session);
}
END_TEST

//  A merged message carrying groups' json and their buffers.
static bn_msg_t *
s_merged (bn_session_t *session, bn_group_t *groups)
{
    bn_msg_t *merged = bn_msg_new (session, "apply_reply");
    json_t *metadata = json_object ();
    json_object_set_new (metadata, "bn_groups", bn_group_json (groups));
    bn_msg_set_metadata (merged, metadata);
    ck_assert_int_eq (bn_group_add_buffers (groups, merged), 0);
    return merged;
}

START_TEST (test_merged_round_trip)
{
    bn_session_t *session = bn_session_new ("key", NULL);
    zmq_msg_t *frames[] = {s_text ("one"), s_text ("two"), s_text ("three")};
    bn_group_reply_t two = {"ok", NULL, NULL, "out", "err", NULL, frames, 2};
    bn_group_reply_t none = {"ok", NULL, NULL, NULL, NULL, NULL, NULL, 0};
    json_t *content = json_pack ("{s:s, s:s, s:s}", "status", "error", "ename",
                                 "KeyError", "evalue", "'x'");
    bn_group_reply_t fail = {"error", "KeyError", "'x'",      NULL,
                             NULL,    content,    &frames[2], 1};
    bn_group_t *leaf = bn_group_new ();
    bn_idset_t *set = bn_idset_parse ("0-3,8");
    bn_group_add_set (leaf, set, &two);
    bn_group_add (leaf, 4, &none);
    bn_group_add (leaf, 5, &fail);
    bn_idset_destroy (&set);

    //  The parent reads the child's merged message back into a table and
    //  adds a reply of its own matching the child's first group.
    bn_msg_t *merged = s_merged (session, leaf);
    bn_group_t *parent = bn_group_new ();
    char err[256] = "";
    ck_assert_msg (bn_group_add_merged (parent, merged, err, sizeof err) == 0,
                   "%s", err);
    ck_assert_int_eq (bn_group_add (parent, 9, &two), 0);
    ck_assert_uint_eq (bn_group_size (parent), 3);
    s_assert_engines (parent, 0, "0-3,8-9");
    ck_assert_uint_eq (bn_group_nbuffers (parent, 0), 2);
    ck_assert_str_eq (bn_group_stdout (parent, 0), "out");
    ck_assert_str_eq (bn_group_stderr (parent, 0), "err");
    s_assert_engines (parent, 1, "4");
    ck_assert_uint_eq (bn_group_nbuffers (parent, 1), 0);
    s_assert_engines (parent, 2, "5");
    ck_assert_str_eq (bn_group_ename (parent, 2), "KeyError");
    ck_assert_str_eq (bn_group_evalue (parent, 2), "'x'");
    ck_assert_uint_eq (zmq_msg_size (bn_group_buffer (parent, 2, 0)), 5);
    //  The same message again: its engines already answered.
    ck_assert_int_eq (bn_group_add_merged (parent, merged, err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "bn_groups[0] names an engine that already has a "
                           "reply");
    ck_assert_uint_eq (bn_group_engines_total (parent), 8);
    bn_msg_destroy (&merged);

    //  Malformed metadata from a child: refused, table unchanged.
    struct {
        const char *groups;
        size_t nbuffers;
        const char *error;
    } bad[] = {
        {NULL, 0, "merged reply has no bn_groups array"},
        {"{}", 0, "merged reply has no bn_groups array"},
        {"[1]", 0, "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20-x\", \"status\": \"ok\", \"nbuffers\": 0}]", 0,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"\", \"status\": \"ok\", \"nbuffers\": 0}]", 0,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"nbuffers\": 0}]", 0,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"status\": \"ok\", \"nbuffers\": -1}]", 0,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"status\": \"ok\", \"nbuffers\": 2}]", 1,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"status\": \"ok\", \"nbuffers\": \"1\"}]", 1,
         "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"status\": \"error\", \"nbuffers\": 0, "
         "\"content\": []}]",
         0, "bn_groups[0] is malformed"},
        {"[{\"engines\": \"20\", \"status\": \"ok\", \"nbuffers\": 1}]", 2,
         "merged reply has 2 buffers, its bn_groups name 1"},
        {"[{\"engines\": \"20-21\", \"status\": \"ok\", \"nbuffers\": 0}, "
         "{\"engines\": \"21\", \"status\": \"ok\", \"nbuffers\": 0}]",
         0, "bn_groups[1] names an engine that already has a reply"},
        {"[{\"engines\": \"20\", \"status\": \"ok\", \"nbuffers\": 0}, "
         "{\"engines\": \"9\", \"status\": \"ok\", \"nbuffers\": 0}]",
         0, "bn_groups[1] names an engine that already has a reply"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bn_msg_t *msg = bn_msg_new (session, "apply_reply");
        json_t *metadata = json_object ();
        if (bad[i].groups)
            json_object_set_new (metadata, "bn_groups",
                                 json_loads (bad[i].groups, 0, NULL));
        bn_msg_set_metadata (msg, metadata);
        for (size_t b = 0; b < bad[i].nbuffers; b++)
            bn_msg_add_buffer (msg, "b", 1);
        err[0] = '\0';
        ck_assert_int_eq (bn_group_add_merged (parent, msg, err, sizeof err),
                          -1);
        ck_assert_str_eq (err, bad[i].error);
        ck_assert_uint_eq (bn_group_engines_total (parent), 8);
        ck_assert_uint_eq (bn_group_size (parent), 3);
        bn_msg_destroy (&msg);
    }
    bn_group_destroy (&leaf);
    bn_group_destroy (&parent);
    json_decref (content);
    for (int i = 0; i < 3; i++)
        s_frame_destroy (&frames[i]);
    bn_session_destroy (&session);
}
END_TEST

START_TEST (test_many_engines)
{
    //  256 engines with 16 kB results: even engines all the same, odd ones
    //  each different only in their last byte.
    enum { ENGINES = 256, SIZE = 16384 };
    unsigned char *data = calloc (1, SIZE);
    bn_group_t *groups = bn_group_new ();
    for (int eid = 0; eid < ENGINES; eid++) {
        data[SIZE - 1] = eid % 2 ? (unsigned char)eid : 0;
        zmq_msg_t *frame = s_frame (data, SIZE);
        bn_group_reply_t reply = {"ok", NULL, NULL,   NULL,
                                  NULL, NULL, &frame, 1};
        if (bn_group_add (groups, eid, &reply))
            ck_abort_msg ("engine %d refused", eid);
        s_frame_destroy (&frame);
    }
    ck_assert_uint_eq (bn_group_size (groups), 1 + ENGINES / 2);
    char *text = bn_group_engines_text (groups, 0);
    ck_assert_uint_eq (bn_idset_count (bn_group_engines (groups, 0)),
                       ENGINES / 2);
    free (text);
    s_assert_engines (groups, 1, "1");
    s_assert_engines (groups, ENGINES / 2, "255");
    ck_assert_int_eq (((unsigned char *)zmq_msg_data (
                          bn_group_buffer (groups, 1, 0)))[SIZE - 1],
                      1);
    bn_group_destroy (&groups);
    free (data);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_group");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_keys);
    tcase_add_test (tc, test_duplicates);
    tcase_add_test (tc, test_order);
    tcase_add_test (tc, test_merge);
    tcase_add_test (tc, test_reply_messages);
    tcase_add_test (tc, test_merged_round_trip);
    tcase_add_test (tc, test_many_engines);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

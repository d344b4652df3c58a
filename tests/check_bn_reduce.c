/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_reduce: sum, min and max of apply results, partial reductions
    combined across tree levels, and reduction plugins.  */
#include "bn_apply.h"
#include "bn_reduce.h"
#include "bn_reducers.h"
#include "bn_reduction_cases.h"
#include "bn_session.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PLUGIN BN_PLUGIN_DIR "/bn_reduce_example.so"
#define S_ENGINE_PLUGIN BN_PLUGIN_DIR "/bn_plugin_example.so"

static bn_reducers_t *s_reducers;
static bn_session_t *s_session;

static void
s_setup (void)
{
    s_reducers = bn_reducers_new ();
    ck_assert_ptr_nonnull (s_reducers);
    s_session = bn_session_new ("key", NULL);
}

static void
s_teardown (void)
{
    bn_reducers_destroy (&s_reducers);
    bn_session_destroy (&s_session);
}

//  A new reduction that must exist.
static bn_reduce_t *
s_new (const char *op)
{
    char err[256] = "";
    bn_reduce_t *reduce = bn_reduce_new (s_reducers, op, err, sizeof err);
    ck_assert_msg (reduce != NULL, "%s", err);
    return reduce;
}

//  Add a value that must be accepted.
static void
s_add (bn_reduce_t *reduce, int eid, bn_value_t *value)
{
    ck_assert_ptr_nonnull (value);
    ck_assert_int_eq (bn_reduce_add_value (reduce, eid, &value), 0);
    ck_assert_ptr_null (value);
}

//  The reduction's value as Python's repr ("" for none).
static void
s_assert_value (bn_reduce_t *reduce, const char *expected)
{
    const bn_value_t *value = bn_reduce_value (reduce);
    char *repr = value ? bn_value_repr (value) : strdup ("");
    ck_assert_str_eq (repr, expected);
    free (repr);
}

//  The bn_reduced metadata as compact sorted JSON.
static void
s_assert_json (bn_reduce_t *reduce, const char *expected)
{
    json_t *json = bn_reduce_json (reduce);
    char *text = json_dumps (json, JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_str_eq (text, expected);
    free (text);
    json_decref (json);
}

//  A merged message carrying the reduction's metadata and value, as a
//  node sends it up.
static bn_msg_t *
s_merged (bn_reduce_t *reduce)
{
    bn_msg_t *merged = bn_msg_new (s_session, "apply_reply");
    json_t *metadata = json_object ();
    json_object_set_new (metadata, "bn_reduced", bn_reduce_json (reduce));
    bn_msg_set_metadata (merged, metadata);
    ck_assert_int_eq (bn_reduce_add_buffers (reduce, merged), 0);
    return merged;
}

//  The value a merged message carries, as repr.
static void
s_assert_carried (bn_msg_t *merged, const char *expected)
{
    bn_bytes_t bytes[4];
    size_t n = bn_bytes_from_msg (merged, bytes, 4);
    char err[256] = "";
    bn_value_t *value = bn_apply_decode_result (bytes, n, err, sizeof err);
    ck_assert_msg (value != NULL, "%s", err);
    char *repr = bn_value_repr (value);
    ck_assert_str_eq (repr, expected);
    free (repr);
    bn_value_destroy (&value);
}

START_TEST (test_usage)
{
    //  A leaf sums the results of engines 0-3, then writes its merged
    //  message: bn_reduced metadata and the pickled sum.
    bn_reduce_t *reduce = s_new ("sum");
    ck_assert_str_eq (bn_reduce_op (reduce), "sum");
    for (int eid = 0; eid < 4; eid++)
        s_add (reduce, eid, bn_value_new_int (10 * eid));
    s_assert_value (reduce, "60");
    ck_assert_uint_eq (bn_reduce_count (reduce), 4);
    s_assert_json (reduce,
                   "{\"engines\":\"0-3\",\"failed\":[],\"op\":\"sum\"}");
    bn_msg_t *merged = s_merged (reduce);
    ck_assert_uint_eq (bn_msg_nbuffers (merged), 1);
    s_assert_carried (merged, "60");
    bn_msg_destroy (&merged);
    bn_reduce_destroy (&reduce);
    ck_assert_ptr_null (reduce);
    bn_reduce_destroy (&reduce);
}
END_TEST

START_TEST (test_sum)
{
    bn_reduce_t *reduce = s_new ("sum");
    //  Nothing yet: no value, None on the wire.
    s_assert_value (reduce, "");
    bn_msg_t *merged = s_merged (reduce);
    s_assert_carried (merged, "None");
    bn_msg_destroy (&merged);
    //  ints, a bool (as 1), then a float makes the sum a float.
    s_add (reduce, 0, bn_value_new_int (2));
    s_add (reduce, 1, bn_value_new_bool (true));
    s_assert_value (reduce, "3");
    s_add (reduce, 2, bn_value_new_float (0.5));
    s_assert_value (reduce, "3.5");
    s_add (reduce, 3, bn_value_new_int (-4));
    s_assert_value (reduce, "-0.5");
    bn_reduce_destroy (&reduce);

    //  An int sum past 64 bits fails the whole reduction, clearly.
    reduce = s_new ("sum");
    s_add (reduce, 0, bn_value_new_int (INT64_MAX));
    s_add (reduce, 1, bn_value_new_int (1));
    s_assert_value (reduce, "");
    json_t *error = bn_reduce_error (reduce);
    ck_assert_str_eq (json_string_value (json_object_get (error, "ename")),
                      "OverflowError");
    ck_assert_str_eq (json_string_value (json_object_get (error, "evalue")),
                      "sum of ints does not fit in 64 bits");
    //  Later values are still counted, the error stays.
    s_add (reduce, 2, bn_value_new_int (-5));
    ck_assert_uint_eq (bn_reduce_count (reduce), 3);
    s_assert_json (reduce,
                   "{\"engines\":\"0-2\",\"error\":{\"ename\":"
                   "\"OverflowError\",\"evalue\":\"sum of ints does not fit "
                   "in 64 bits\",\"status\":\"error\",\"traceback\":[]},"
                   "\"failed\":[],\"op\":\"sum\"}");
    merged = s_merged (reduce);
    s_assert_carried (merged, "None");
    bn_msg_destroy (&merged);
    bn_reduce_destroy (&reduce);

    //  The largest negative sum still fits.
    reduce = s_new ("sum");
    s_add (reduce, 0, bn_value_new_int (INT64_MIN + 1));
    s_add (reduce, 1, bn_value_new_int (-1));
    s_assert_value (reduce, "-9223372036854775808");
    bn_reduce_destroy (&reduce);
}
END_TEST

START_TEST (test_min_max)
{
    bn_reduce_t *low = s_new ("min"), *high = s_new ("max");
    double values[] = {3, -2.5, 7, 7.0, -2.5};
    bool is_int[] = {true, false, true, false, false};
    for (int i = 0; i < 5; i++) {
        s_add (low, i,
               is_int[i] ? bn_value_new_int ((int64_t)values[i])
                         : bn_value_new_float (values[i]));
        s_add (high, i,
               is_int[i] ? bn_value_new_int ((int64_t)values[i])
                         : bn_value_new_float (values[i]));
    }
    s_assert_value (low, "-2.5");
    //  7 and 7.0 tie: the int is kept whatever the order.
    s_assert_value (high, "7");
    //  A NaN is never chosen over a number.
    s_add (low, 10, bn_value_new_float (NAN));
    s_add (high, 10, bn_value_new_float (NAN));
    s_assert_value (low, "-2.5");
    s_assert_value (high, "7");
    //  ints past 2^53 compare exactly against floats.
    s_add (high, 11, bn_value_new_int (9007199254740993LL));
    s_add (high, 12, bn_value_new_float (9007199254740992.0));
    s_assert_value (high, "9007199254740993");
    bn_reduce_destroy (&low);
    bn_reduce_destroy (&high);

    //  NaN first, then a number.
    high = s_new ("max");
    s_add (high, 0, bn_value_new_float (NAN));
    s_add (high, 1, bn_value_new_int (-1));
    s_assert_value (high, "-1");
    bn_reduce_destroy (&high);
}
END_TEST

//  The repr a node's reduction of x then y ends with ("" when it fails),
//  the values added by a leaf (merged false) or carried up by two
//  children's merged messages to their parent (merged true).
static char *
s_reduces (const char *op, bn_case_number_t x, bn_case_number_t y, bool merged)
{
    bn_reduce_t *node = s_new (op);
    bn_case_number_t numbers[] = {x, y};
    for (int eid = 0; eid < 2; eid++) {
        if (!merged) {
            s_add (node, eid, bn_case_value (numbers[eid]));
            continue;
        }
        bn_reduce_t *child = s_new (op);
        s_add (child, eid, bn_case_value (numbers[eid]));
        bn_msg_t *message = s_merged (child);
        char err[256] = "";
        ck_assert_msg (bn_reduce_add_merged (node, message, err, sizeof err) ==
                           0,
                       "%s", err);
        bn_msg_destroy (&message);
        bn_reduce_destroy (&child);
    }
    const bn_value_t *value = bn_reduce_value (node);
    ck_assert ((value == NULL) == (bn_reduce_error (node) != NULL));
    char *repr = value ? bn_value_repr (value) : strdup ("");
    bn_reduce_destroy (&node);
    return repr;
}

//  A leaf's and a parent's reduction give the same answer whichever
//  value comes first (NaN, ties, ints past 2^53, overflow).
START_TEST (test_arrival_order)
{
    for (size_t i = 0; i < BN_REDUCTION_NCASES; i++) {
        const bn_reduction_case_t *c = &bn_reduction_cases[i];
        const char *expected = c->expected ? c->expected : "";
        for (int merged = 0; merged < 2; merged++) {
            char *forward = s_reduces (c->op, c->a, c->b, merged);
            char *backward = s_reduces (c->op, c->b, c->a, merged);
            ck_assert_msg (strcmp (forward, expected) == 0 &&
                               strcmp (backward, expected) == 0,
                           "case %zu, %s%s: %s one way, %s the other, not %s",
                           i, c->op, merged ? " of merged" : "", forward,
                           backward, expected);
            free (forward);
            free (backward);
        }
    }
}
END_TEST

START_TEST (test_not_numbers)
{
    //  Results that are not numbers fail their engines, grouped by error.
    bn_reduce_t *reduce = s_new ("sum");
    s_add (reduce, 0, bn_value_new_int (1));
    s_add (reduce, 5, bn_value_new_str ("five"));
    s_add (reduce, 3, bn_value_new_str ("three"));
    s_add (reduce, 4, bn_value_new_none ());
    s_add (reduce, 2, bn_value_new_int (2));
    s_assert_value (reduce, "3");
    ck_assert_uint_eq (bn_reduce_count (reduce), 2);
    ck_assert_uint_eq (bn_reduce_total (reduce), 5);
    ck_assert_uint_eq (bn_reduce_nfailed (reduce), 2);
    s_assert_json (
        reduce,
        "{\"engines\":\"0,2\",\"failed\":[{\"content\":{\"ename\":"
        "\"TypeError\",\"evalue\":\"sum of a 'str': numbers only\","
        "\"status\":\"error\",\"traceback\":[]},\"engines\":\"3,5\"},"
        "{\"content\":{\"ename\":\"TypeError\",\"evalue\":\"sum of a "
        "'NoneType': numbers only\",\"status\":\"error\",\"traceback\":[]},"
        "\"engines\":\"4\"}],\"op\":\"sum\"}");
    bn_reduce_destroy (&reduce);

    reduce = s_new ("max");
    bn_value_t *list = bn_value_new_list ();
    bn_value_append (list, bn_value_new_int (1));
    s_add (reduce, 0, list);
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_reduce_failed_content (reduce, 0), "evalue")),
                      "max of a 'list': numbers only");
    bn_reduce_destroy (&reduce);
}
END_TEST

START_TEST (test_counted_once)
{
    bn_reduce_t *reduce = s_new ("min");
    s_add (reduce, 4, bn_value_new_int (1));
    bn_value_t *again = bn_value_new_int (-100);
    ck_assert_int_eq (bn_reduce_add_value (reduce, 4, &again), -1);
    ck_assert_ptr_null (again);
    bn_value_t *negative = bn_value_new_int (-100);
    ck_assert_int_eq (bn_reduce_add_value (reduce, -1, &negative), -1);
    bn_idset_t *set = bn_idset_parse ("3-4");
    json_t *content = json_pack ("{s:s, s:s, s:s}", "status", "error", "ename",
                                 "E", "evalue", "v");
    ck_assert_int_eq (bn_reduce_add_failure (reduce, set, content), -1);
    bn_idset_t *empty = bn_idset_new ();
    ck_assert_int_eq (bn_reduce_add_failure (reduce, empty, content), -1);
    s_assert_value (reduce, "1");
    ck_assert_uint_eq (bn_reduce_total (reduce), 1);
    ck_assert (bn_reduce_has (reduce, 4));
    ck_assert (!bn_reduce_has (reduce, 3));
    //  A failure of new engines is recorded.
    bn_idset_remove (set, 4);
    ck_assert_int_eq (bn_reduce_add_failure (reduce, set, content), 0);
    ck_assert (bn_reduce_has (reduce, 3));
    ck_assert_uint_eq (bn_reduce_nfailed (reduce), 1);
    bn_idset_destroy (&set);
    bn_idset_destroy (&empty);
    json_decref (content);
    bn_reduce_destroy (&reduce);
}
END_TEST

//  An apply_reply from an engine: status ok with a serialized result, or
//  an error content.
static bn_msg_t *
s_reply (bn_value_t *result, const char *error_json)
{
    bn_msg_t *reply = bn_msg_new (s_session, "apply_reply");
    if (result) {
        bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
        ck_assert_int_eq (bn_serialize_object_add (reply, result), 0);
        bn_value_destroy (&result);
    } else
        bn_msg_set_content (reply, json_loads (error_json, 0, NULL));
    return reply;
}

START_TEST (test_replies)
{
    bn_reduce_t *reduce = s_new ("sum");
    char err[256] = "";
    bn_msg_t *replies[] = {
        s_reply (bn_value_new_int (5), NULL),
        s_reply (bn_value_new_float (1.25), NULL),
        s_reply (NULL, "{\"status\": \"error\", \"ename\": \"NameError\", "
                       "\"evalue\": \"x\", \"engine_info\": {\"engine_id\": "
                       "2}}"),
        s_reply (NULL, "{\"status\": \"error\", \"ename\": \"NameError\", "
                       "\"evalue\": \"x\", \"engine_info\": {\"engine_id\": "
                       "3}}"),
        s_reply (NULL, "{\"status\": \"aborted\"}"),
        s_reply (NULL, "{\"status\": \"ok\"}"),
    };
    size_t n = sizeof replies / sizeof replies[0];
    for (size_t i = 0; i < n; i++)
        ck_assert_msg (bn_reduce_add_reply (reduce, (int)i, replies[i], err,
                                            sizeof err) == 0,
                       "%s", err);
    //  An engine answers once.
    ck_assert_int_eq (
        bn_reduce_add_reply (reduce, 0, replies[0], err, sizeof err), -1);
    ck_assert_str_eq (err, "engine 0 already has a reply");
    for (size_t i = 0; i < n; i++)
        bn_msg_destroy (&replies[i]);

    s_assert_value (reduce, "6.25");
    ck_assert_uint_eq (bn_reduce_count (reduce), 2);
    ck_assert_uint_eq (bn_reduce_nfailed (reduce), 3);
    //  Errors grouped by ename and evalue; the first content is kept.
    char *set = bn_idset_encode (bn_reduce_failed_engines (reduce, 0));
    ck_assert_str_eq (set, "2-3");
    free (set);
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_object_get (bn_reduce_failed_content (reduce, 0),
                                           "engine_info"),
                          "engine_id")),
                      2);
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_reduce_failed_content (reduce, 1), "status")),
                      "aborted");
    //  An ok reply without a result buffer fails its engine.
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_reduce_failed_content (reduce, 2), "ename")),
                      "ValueError");
    bn_reduce_destroy (&reduce);
}
END_TEST

START_TEST (test_levels)
{
    //  Two leaves reduce their engines, the root combines their merged
    //  messages with its own: the same sum as one reduction of them all.
    bn_reduce_t *left = s_new ("sum"), *right = s_new ("sum");
    bn_reduce_t *flat = s_new ("sum");
    for (int eid = 0; eid < 16; eid++) {
        bn_reduce_t *leaf = eid % 2 ? right : left;
        s_add (leaf, eid, bn_value_new_int (eid * eid));
        s_add (flat, eid, bn_value_new_int (eid * eid));
    }
    s_add (right, 17, bn_value_new_str ("x"));
    s_add (flat, 17, bn_value_new_str ("x"));
    bn_msg_t *from_left = s_merged (left), *from_right = s_merged (right);
    bn_reduce_t *root = s_new ("sum");
    char err[256] = "";
    ck_assert_msg (bn_reduce_add_merged (root, from_left, err, sizeof err) == 0,
                   "%s", err);
    ck_assert_msg (bn_reduce_add_merged (root, from_right, err, sizeof err) ==
                       0,
                   "%s", err);
    s_assert_value (root, "1240");
    s_assert_value (flat, "1240");
    json_t *a = bn_reduce_json (root), *b = bn_reduce_json (flat);
    ck_assert (json_equal (a, b));
    json_decref (a);
    json_decref (b);
    //  A child's message again: its engines are counted already.
    ck_assert_int_eq (bn_reduce_add_merged (root, from_left, err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "merged reply names an engine already counted");
    s_assert_value (root, "1240");
    bn_msg_destroy (&from_left);
    bn_msg_destroy (&from_right);

    //  A child whose reduction failed fails the parent's.
    bn_reduce_t *broken = s_new ("sum");
    s_add (broken, 20, bn_value_new_int (INT64_MAX));
    s_add (broken, 21, bn_value_new_int (INT64_MAX));
    bn_msg_t *from_broken = s_merged (broken);
    ck_assert_int_eq (bn_reduce_add_merged (root, from_broken, err, sizeof err),
                      0);
    s_assert_value (root, "");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_reduce_error (root), "ename")),
        "OverflowError");
    ck_assert_uint_eq (bn_reduce_count (root), 18);
    bn_msg_destroy (&from_broken);

    //  A child with no engines changes nothing.
    bn_reduce_t *idle = s_new ("min"), *parent = s_new ("min");
    s_add (parent, 1, bn_value_new_int (4));
    bn_msg_t *from_idle = s_merged (idle);
    ck_assert_int_eq (bn_reduce_add_merged (parent, from_idle, err, sizeof err),
                      0);
    s_assert_value (parent, "4");
    bn_msg_destroy (&from_idle);
    //  Nor does a child of another reduction.
    bn_msg_t *from_flat = s_merged (flat);
    ck_assert_int_eq (bn_reduce_add_merged (parent, from_flat, err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "merged reply reduces with sum, this request with "
                           "min");
    bn_msg_destroy (&from_flat);

    bn_reduce_destroy (&idle);
    bn_reduce_destroy (&parent);
    bn_reduce_destroy (&broken);
    bn_reduce_destroy (&left);
    bn_reduce_destroy (&right);
    bn_reduce_destroy (&flat);
    bn_reduce_destroy (&root);
}
END_TEST

START_TEST (test_bad_merged)
{
    //  Malformed metadata from a child: refused, state unchanged.
    struct {
        const char *reduced;
        const char *buffer;
        const char *error;
    } cases[] = {
        {NULL, NULL, "merged reply has no valid bn_reduced"},
        {"[]", NULL, "merged reply has no valid bn_reduced"},
        {"{\"op\": \"max\"}", NULL, "merged reply has no valid bn_reduced"},
        {"{\"op\": \"max\", \"engines\": \"1\", \"failed\": {}}", NULL,
         "merged reply has no valid bn_reduced"},
        {"{\"op\": \"max\", \"engines\": \"1\", \"error\": 3}", NULL,
         "merged reply has no valid bn_reduced"},
        {"{\"op\": \"max\", \"engines\": \"1-\"}", NULL,
         "bn_reduced.engines is not an engine set"},
        {"{\"op\": \"max\", \"engines\": \"1\", \"failed\": [{\"engines\": "
         "\"2\"}]}",
         NULL, "bn_reduced.failed[0] is malformed"},
        {"{\"op\": \"max\", \"engines\": \"1\", \"failed\": [{\"engines\": "
         "\"\", \"content\": {}}]}",
         NULL, "bn_reduced.failed[0] is malformed"},
        {"{\"op\": \"max\", \"engines\": \"1\", \"failed\": [{\"engines\": "
         "\"1\", \"content\": {}}]}",
         NULL, "bn_reduced.failed[0] names an engine twice"},
        {"{\"op\": \"max\", \"engines\": \"7\"}", NULL,
         "merged reply names an engine already counted"},
        {"{\"op\": \"max\", \"engines\": \"1\"}", NULL,
         "merged reply's value: no buffers to deserialize"},
        {"{\"op\": \"max\", \"engines\": \"1\"}", "not a pickle",
         "merged reply's value: "},
    };
    char err[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_reduce_t *reduce = s_new ("max");
        s_add (reduce, 7, bn_value_new_int (7));
        bn_msg_t *merged = bn_msg_new (s_session, "apply_reply");
        json_t *metadata = json_object ();
        if (cases[i].reduced)
            json_object_set_new (metadata, "bn_reduced",
                                 json_loads (cases[i].reduced, 0, NULL));
        bn_msg_set_metadata (merged, metadata);
        if (cases[i].buffer)
            bn_msg_add_buffer (merged, cases[i].buffer,
                               strlen (cases[i].buffer));
        err[0] = '\0';
        ck_assert_int_eq (
            bn_reduce_add_merged (reduce, merged, err, sizeof err), -1);
        ck_assert_msg (strncmp (err, cases[i].error, strlen (cases[i].error)) ==
                           0,
                       "case %zu: %s", i, err);
        ck_assert_uint_eq (bn_reduce_total (reduce), 1);
        s_assert_value (reduce, "7");
        bn_msg_destroy (&merged);
        bn_reduce_destroy (&reduce);
    }
}
END_TEST

START_TEST (test_plugin)
{
    char err[512] = "";
    size_t builtins = bn_reducers_size (s_reducers);
    ck_assert_uint_eq (builtins, 3);
    //  Unknown until loaded.
    ck_assert_ptr_null (
        bn_reduce_new (s_reducers, "example:prod", err, sizeof err));
    ck_assert_str_eq (err, "no reduction 'example:prod': sum, min, max or "
                           "<plugin>:<name> of a loaded plugin");
    ck_assert_msg (bn_reducers_load (s_reducers, S_PLUGIN, err, sizeof err) ==
                       0,
                   "%s", err);
    ck_assert_uint_eq (bn_reducers_size (s_reducers), builtins + 3);

    bn_reduce_t *prod = s_new ("example:prod");
    for (int eid = 1; eid <= 5; eid++)
        s_add (prod, eid, bn_value_new_int (eid));
    s_add (prod, 6, bn_value_new_float (1.5));
    s_assert_value (prod, "120");
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_reduce_failed_content (prod, 0), "evalue")),
                      "example:prod takes ints, not 'float'");
    //  Partials of a plugin combine across levels too.
    bn_msg_t *merged = s_merged (prod);
    bn_reduce_t *root = s_new ("example:prod");
    s_add (root, 0, bn_value_new_int (-2));
    ck_assert_int_eq (bn_reduce_add_merged (root, merged, err, sizeof err), 0);
    s_assert_value (root, "-240");
    bn_msg_destroy (&merged);
    //  A combine error fails the reduction.
    s_add (root, 7, bn_value_new_int (INT64_MAX));
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_reduce_error (root), "evalue")),
        "product does not fit in 64 bits");
    bn_reduce_destroy (&root);
    bn_reduce_destroy (&prod);

    //  lift can turn each result into something else.
    bn_reduce_t *count = s_new ("example:count");
    s_add (count, 0, bn_value_new_str ("a"));
    s_add (count, 1, bn_value_new_none ());
    s_add (count, 2, bn_value_new_float (2));
    s_assert_value (count, "3");
    bn_reduce_destroy (&count);

    bn_reduce_t *longest = s_new ("example:longest");
    s_add (longest, 0, bn_value_new_str ("pear"));
    s_add (longest, 1, bn_value_new_str ("fig"));
    s_add (longest, 2, bn_value_new_str ("kiwi"));
    s_assert_value (longest, "'kiwi'");
    bn_reduce_destroy (&longest);

    //  Loading it again would name its reductions twice.
    ck_assert_int_eq (bn_reducers_load (s_reducers, S_PLUGIN, err, sizeof err),
                      -1);
    ck_assert_str_eq (err, S_PLUGIN " names a reduction already loaded "
                                    "(example:prod)");
    ck_assert_uint_eq (bn_reducers_size (s_reducers), builtins + 3);
}
END_TEST

START_TEST (test_plugin_errors)
{
    char err[512] = "";
    ck_assert_int_eq (
        bn_reducers_load (s_reducers, "/nonexistent/r.so", err, sizeof err),
        -1);
    ck_assert (strstr (err, "cannot load reduction plugin: ") == err);
    //  An engine function plugin is not a reduction plugin.
    ck_assert_int_eq (
        bn_reducers_load (s_reducers, S_ENGINE_PLUGIN, err, sizeof err), -1);
    ck_assert_str_eq (err,
                      S_ENGINE_PLUGIN " exports no 'bn_reduce_plugin' table");
    //  A list stops at its first failure.
    ck_assert_int_eq (bn_reducers_load_list (s_reducers,
                                             S_PLUGIN ":/nonexistent/r.so", err,
                                             sizeof err),
                      -1);
    ck_assert_ptr_nonnull (bn_reducers_find (s_reducers, "example:count"));
    ck_assert_int_eq (bn_reducers_load_list (s_reducers, "", err, sizeof err),
                      0);
    ck_assert_int_eq (bn_reducers_load_list (s_reducers, NULL, err, sizeof err),
                      0);
    ck_assert_ptr_null (bn_reducers_find (s_reducers, "example"));
    ck_assert_ptr_null (bn_reducers_find (s_reducers, NULL));
    ck_assert_ptr_null (bn_reduce_new (s_reducers, NULL, err, sizeof err));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_reduce");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_sum);
    tcase_add_test (tc, test_min_max);
    tcase_add_test (tc, test_arrival_order);
    tcase_add_test (tc, test_not_numbers);
    tcase_add_test (tc, test_counted_once);
    tcase_add_test (tc, test_replies);
    tcase_add_test (tc, test_levels);
    tcase_add_test (tc, test_bad_merged);
    tcase_add_test (tc, test_plugin);
    tcase_add_test (tc, test_plugin_errors);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_msg: framing, lazy parsing, idents, buffers, signing on send.  */
#include "bn_error.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"

#include <check.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *s_key = "e05ab558-73805a94e21c7ce24a0654fe";
static zsock_t *s_out, *s_in;
static void *s_rout, *s_rin;
static bn_session_t *s_session;

static void
s_setup (void)
{
    char endpoint[64];
    snprintf (endpoint, sizeof endpoint, "inproc://check-msg-%d", rand ());
    s_in = zsock_new_pull (endpoint);
    s_out = zsock_new_push (endpoint);
    ck_assert_ptr_nonnull (s_in);
    ck_assert_ptr_nonnull (s_out);
    zsock_set_rcvtimeo (s_in, 2000);
    s_rin = zsock_resolve (s_in);
    s_rout = zsock_resolve (s_out);
    s_session = bn_session_new (s_key, NULL);
}

static void
s_teardown (void)
{
    bn_session_destroy (&s_session);
    zsock_destroy (&s_out);
    zsock_destroy (&s_in);
}

START_TEST (test_usage)
{
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_EXECUTE_REQUEST);
    ck_assert_ptr_nonnull (msg);
    bn_msg_push_ident (msg, "engine-1", 8);
    json_t *content = json_pack ("{s:s, s:b}", "code", "hostname", "silent", 0);
    bn_msg_set_content (msg, content);
    bn_msg_add_buffer (msg, "payload", 7);
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    ck_assert_ptr_null (msg);

    bn_msg_t *got = bn_msg_recv (s_rin);
    ck_assert_ptr_nonnull (got);
    ck_assert (bn_msg_well_framed (got));
    ck_assert_int_eq (bn_msg_verify (got, s_session, true), 0);
    ck_assert_uint_eq (bn_msg_nidents (got), 1);
    ck_assert (bn_msg_ident_is (got, 0, "engine-1", 8));
    ck_assert_str_eq (bn_msg_type (got), "execute_request");
    ck_assert_str_eq (bn_msg_session (got), bn_session_id (s_session));
    json_t *header = bn_msg_header (got);
    ck_assert_str_eq (json_string_value (json_object_get (header, "version")),
                      "5.3");
    //  the header as written is jansson's compact text of it, keys in
    //  Jupyter's order, and the msg_id is "<session>_<pid>_<counter>"
    size_t size;
    const char *raw = bn_msg_part_data (got, BN_PART_HEADER, &size);
    char *compact = json_dumps (header, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_uint_eq (strlen (compact), size);
    ck_assert_mem_eq (compact, raw, size);
    free (compact);
    ck_assert (strncmp (raw, "{\"msg_id\":", 10) == 0);
    char prefix[128];
    snprintf (prefix, sizeof prefix, "%s_%d_", bn_session_id (s_session),
              (int)getpid ());
    const char *msg_id = bn_msg_id (got);
    ck_assert_msg (strncmp (msg_id, prefix, strlen (prefix)) == 0 &&
                       strspn (msg_id + strlen (prefix), "0123456789") ==
                           strlen (msg_id + strlen (prefix)) &&
                       strlen (msg_id) > strlen (prefix),
                   "msg_id %s", msg_id);
    ck_assert_ptr_nonnull (json_object_get (header, "date"));
    ck_assert_ptr_nonnull (json_object_get (header, "username"));
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (got), "code")),
        "hostname");
    ck_assert_uint_eq (json_object_size (bn_msg_parent (got)), 0);
    ck_assert_uint_eq (bn_msg_nbuffers (got), 1);
    zmq_msg_t *buffer = bn_msg_buffer (got, 0);
    ck_assert_uint_eq (zmq_msg_size (buffer), 7);
    ck_assert (memcmp (zmq_msg_data (buffer), "payload", 7) == 0);
    //  delivering the same bytes again is a replay
    bn_msg_t *again = bn_msg_dup (got);
    ck_assert_int_eq (bn_msg_verify (again, s_session, true), BN_EREPLAY);
    bn_msg_destroy (&again);
    bn_msg_destroy (&got);
}
END_TEST

START_TEST (test_reply_parent_is_request_header)
{
    bn_msg_t *request = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    bn_msg_push_ident (request, "client", 6);
    bn_msg_push_ident (request, "mux_out", 7);
    size_t size;
    const void *data = bn_msg_part_data (request, BN_PART_HEADER, &size);
    char *expected = strndup (data, size);
    bn_msg_t *reply = bn_msg_new_reply (s_session, request, BN_MSG_APPLY_REPLY);
    bn_msg_destroy (&request);
    ck_assert_uint_eq (bn_msg_nidents (reply), 2);
    ck_assert (bn_msg_ident_is (reply, 0, "mux_out", 7));
    ck_assert (bn_msg_ident_is (reply, 1, "client", 6));
    ck_assert_int_eq (bn_msg_send (&reply, s_rout, s_session), 0);
    bn_msg_t *got = bn_msg_recv (s_rin);
    ck_assert_int_eq (bn_msg_verify (got, s_session, true), 0);
    data = bn_msg_part_data (got, BN_PART_PARENT, &size);
    ck_assert_uint_eq (size, strlen (expected));
    ck_assert (memcmp (data, expected, size) == 0);
    ck_assert_str_eq (bn_msg_type (got), "apply_reply");
    ck_assert_ptr_nonnull (bn_msg_parent_id (got));
    free (expected);
    bn_msg_destroy (&got);
}
END_TEST

//  A reply type derived from a peer's msg_type keeps the header JSON.
START_TEST (test_odd_msg_type)
{
    const char *types[] = {"quote\"d_reply", "back\\slash_reply",
                           "new\nline_reply", "caf\xc3\xa9_reply"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        bn_msg_t *request = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
        bn_msg_t *reply = bn_msg_new_reply (s_session, request, types[i]);
        bn_msg_destroy (&request);
        ck_assert_ptr_nonnull (reply);
        ck_assert_int_eq (bn_msg_send (&reply, s_rout, s_session), 0);
        bn_msg_t *got = bn_msg_recv (s_rin);
        ck_assert_int_eq (bn_msg_verify (got, s_session, true), 0);
        ck_assert_ptr_nonnull (bn_msg_header (got));
        ck_assert_str_eq (bn_msg_type (got), types[i]);
        ck_assert_ptr_nonnull (bn_msg_id (got));
        bn_msg_destroy (&got);
    }
    //  not UTF-8: no message rather than a header that is not JSON
    ck_assert_ptr_null (bn_msg_new (s_session, "bad\xff_reply"));
}
END_TEST

START_TEST (test_idents)
{
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    for (int i = 0; i < 10; i++) {
        char ident[8];
        snprintf (ident, sizeof ident, "id%d", i);
        ck_assert_int_eq (bn_msg_append_ident (msg, ident, strlen (ident)), 0);
    }
    ck_assert_uint_eq (bn_msg_nidents (msg), 10);
    bn_msg_swap_idents (msg);
    ck_assert (bn_msg_ident_is (msg, 0, "id1", 3));
    ck_assert (bn_msg_ident_is (msg, 1, "id0", 3));
    bn_msg_pop_ident (msg);
    ck_assert (bn_msg_ident_is (msg, 0, "id0", 3));
    ck_assert_uint_eq (bn_msg_nidents (msg), 9);
    bn_msg_push_ident (msg, "first", 5);
    char *first = bn_msg_ident_strdup (msg, 0);
    ck_assert_str_eq (first, "first");
    free (first);
    ck_assert_ptr_null (bn_msg_ident_strdup (msg, 99));
    bn_msg_clear_idents (msg);
    ck_assert_uint_eq (bn_msg_nidents (msg), 0);
    bn_msg_pop_ident (msg);
    bn_msg_swap_idents (msg);
    bn_msg_destroy (&msg);
}
END_TEST

START_TEST (test_rewrite_resigns)
{
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    bn_msg_t *got = bn_msg_recv (s_rin);
    ck_assert_int_eq (bn_msg_verify (got, s_session, true), 0);
    //  a relay rewrites the header and metadata: new signature, same buffers
    ck_assert_int_eq (bn_msg_set_msg_id (got, "orig_engine"), 0);
    json_object_set_new (bn_msg_metadata (got), "original_msg_id",
                         json_string ("orig"));
    bn_msg_touch (got, BN_PART_METADATA);
    ck_assert_int_eq (bn_msg_send (&got, s_rout, s_session), 0);
    got = bn_msg_recv (s_rin);
    ck_assert_int_eq (bn_msg_verify (got, s_session, true), 0);
    ck_assert_str_eq (bn_msg_id (got), "orig_engine");
    ck_assert_str_eq (json_string_value (json_object_get (bn_msg_metadata (got),
                                                          "original_msg_id")),
                      "orig");
    bn_msg_destroy (&got);
}
END_TEST

//  Send frames as they are, and receive them as a message.
static bn_msg_t *
s_send_raw (int count, const char **frames)
{
    zmsg_t *raw = zmsg_new ();
    for (int i = 0; i < count; i++)
        zmsg_addstr (raw, frames[i]);
    zmsg_send (&raw, s_out);
    return bn_msg_recv (s_rin);
}

START_TEST (test_fields_without_parsing)
{
    const char *frames[] = {
        BN_DELIM,
        "",
        "{\"msg_id\": \"m\\u00e9\", \"msg_type\": "
        "\"apply_request\", \"session\": \"s\", "
        "\"bad\": [1, 2}",
        "{\"msg_id\": \"parent\", \"session\": "
        "\"p\\u00e9\", \"n\": 123456789012345678901234567890}",
        "{}",
        "{}"};
    bn_msg_t *msg = s_send_raw (6, frames);
    //  a malformed header yields no field, scanned or parsed
    ck_assert_ptr_null (bn_msg_id (msg));
    ck_assert_ptr_null (bn_msg_header (msg));
    //  a parent's fields are read where jansson refuses the part (an
    //  integer out of its range)
    ck_assert_str_eq (bn_msg_parent_id (msg), "parent");
    ck_assert_str_eq (bn_msg_parent_session (msg), "p\xc3\xa9");
    ck_assert_ptr_null (bn_msg_parent (msg));
    bn_msg_destroy (&msg);

    msg = bn_msg_new (s_session, BN_MSG_EXECUTE_REQUEST);
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    msg = bn_msg_recv (s_rin);
    const char *scanned = bn_msg_id (msg);
    ck_assert_ptr_nonnull (scanned);
    const char *date = bn_msg_date (msg);
    ck_assert_ptr_nonnull (date);
    ck_assert_str_eq (date, json_string_value (
                                json_object_get (bn_msg_header (msg), "date")));
    ck_assert_str_eq (bn_msg_type (msg), "execute_request");
    ck_assert_str_eq (bn_msg_session (msg), bn_session_id (s_session));
    //  the scan agrees with the parse, and a rewrite is seen at once
    ck_assert_str_eq (scanned, json_string_value (json_object_get (
                                   bn_msg_header (msg), "msg_id")));
    char *long_id = malloc (1000);
    memset (long_id, 'x', 999);
    long_id[999] = 0;
    ck_assert_int_eq (bn_msg_set_msg_id (msg, long_id), 0);
    ck_assert_str_eq (bn_msg_id (msg), long_id);
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    msg = bn_msg_recv (s_rin);
    //  longer than the scan buffer: read through jansson
    ck_assert_str_eq (bn_msg_id (msg), long_id);
    free (long_id);
    bn_msg_destroy (&msg);
}
END_TEST

//  A copy reads the fields its original read, and its own once changed;
//  a field that is not a string is none, the others still read.
START_TEST (test_fields_of_a_copy)
{
    const char *frames[] = {
        BN_DELIM,
        "",
        "{\"msg_type\": 7, \"session\": \"s\\\"q\", \"msg_id\": \"m1\", "
        "\"msg_id\": \"m2\"}",
        "{\"session\": \"ps\"}",
        "{}",
        "{}"};
    bn_msg_t *msg = s_send_raw (6, frames);
    ck_assert_ptr_nonnull (msg);
    ck_assert_str_eq (bn_msg_id (msg), "m2"); //  the last one wins
    ck_assert_ptr_null (bn_msg_type (msg));
    ck_assert_str_eq (bn_msg_session (msg), "s\"q");
    ck_assert_ptr_null (bn_msg_parent_id (msg));
    ck_assert_ptr_null (bn_msg_date (msg));
    bn_msg_t *copy = bn_msg_dup (msg);
    ck_assert_ptr_nonnull (copy);
    ck_assert_str_eq (bn_msg_id (copy), "m2");
    ck_assert_ptr_null (bn_msg_type (copy));
    ck_assert_str_eq (bn_msg_session (copy), "s\"q");
    ck_assert_str_eq (bn_msg_parent_session (copy), "ps");
    ck_assert_ptr_null (bn_msg_parent_id (copy));
    ck_assert_int_eq (bn_msg_set_msg_id (copy, "m3"), 0);
    ck_assert_str_eq (bn_msg_id (copy), "m3");
    ck_assert_str_eq (bn_msg_id (msg), "m2");
    ck_assert_str_eq (bn_msg_parent_session (msg), "ps");
    //  a copy of a changed message reads the change
    bn_msg_t *again = bn_msg_dup (copy);
    ck_assert_ptr_nonnull (again);
    ck_assert_str_eq (bn_msg_id (again), "m3");
    ck_assert_str_eq (bn_msg_session (again), "s\"q");
    bn_msg_destroy (&again);
    bn_msg_destroy (&copy);
    bn_msg_destroy (&msg);
}
END_TEST

START_TEST (test_fields_past_the_scan_room)
{
    //  five header and parent fields of 200 bytes each: the first two are
    //  scanned, the rest no longer fit beside them and are read by jansson
    char value[5][201];
    for (int f = 0; f < 5; f++) {
        memset (value[f], 'a' + f, 200);
        value[f][200] = 0;
    }
    char *header = zsys_sprintf (
        "{\"msg_id\": \"%s\", \"msg_type\": \"%s\", \"session\": \"%s\"}",
        value[0], value[1], value[2]);
    char *parent = zsys_sprintf ("{\"msg_id\": \"%s\", \"session\": \"%s\"}",
                                 value[3], value[4]);
    zmsg_t *raw = zmsg_new ();
    zmsg_addstr (raw, BN_DELIM);
    zmsg_addstr (raw, "");
    zmsg_addstr (raw, header);
    zmsg_addstr (raw, parent);
    zmsg_addstr (raw, "{}");
    zmsg_addstr (raw, "{}");
    zmsg_send (&raw, s_out);
    zstr_free (&header);
    zstr_free (&parent);
    bn_msg_t *msg = bn_msg_recv (s_rin);
    ck_assert_ptr_nonnull (msg);
    ck_assert_str_eq (bn_msg_id (msg), value[0]);
    ck_assert_str_eq (bn_msg_type (msg), value[1]);
    ck_assert_str_eq (bn_msg_session (msg), value[2]);
    ck_assert_str_eq (bn_msg_parent_id (msg), value[3]);
    ck_assert_str_eq (bn_msg_parent_session (msg), value[4]);
    //  asked again, in another order, the same values
    ck_assert_str_eq (bn_msg_parent_session (msg), value[4]);
    ck_assert_str_eq (bn_msg_id (msg), value[0]);
    ck_assert_str_eq (bn_msg_session (msg), value[2]);
    bn_msg_destroy (&msg);
}
END_TEST

START_TEST (test_buffers_shared)
{
    size_t big = 1 << 20;
    char *payload = malloc (big);
    memset (payload, 'x', big);
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    ck_assert_int_eq (bn_msg_add_buffer_owned (msg, payload, big), 0);
    bn_msg_t *copy = bn_msg_dup (msg);
    //  the copy refers to the same bytes
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (copy, 0)), payload);
    bn_msg_t *third = bn_msg_new (s_session, BN_MSG_APPLY_REPLY);
    bn_msg_add_buffer_msg (third, bn_msg_buffer (msg, 0));
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (third, 0)), payload);
    ck_assert_uint_eq (bn_msg_size (third) > big, 1);
    bn_msg_destroy (&msg);
    ck_assert_int_eq (bn_msg_send (&copy, s_rout, s_session), 0);
    bn_msg_t *got = bn_msg_recv (s_rin);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (got, 0)), big);
    bn_msg_clear_buffers (got);
    ck_assert_uint_eq (bn_msg_nbuffers (got), 0);
    bn_msg_destroy (&got);
    bn_msg_destroy (&third);
}
END_TEST

START_TEST (test_bad_framing)
{
    const char *nodelim[] = {"a", "b", "c"};
    bn_msg_t *msg = s_send_raw (3, nodelim);
    ck_assert_ptr_nonnull (msg);
    ck_assert (!bn_msg_well_framed (msg));
    ck_assert_int_eq (bn_msg_verify (msg, s_session, true), BN_EPROTO);
    ck_assert_ptr_null (bn_msg_header (msg));
    ck_assert_ptr_null (bn_msg_type (msg));
    bn_msg_destroy (&msg);

    const char *truncated[] = {"id", BN_DELIM, "sig", "{}", "{}"};
    msg = s_send_raw (5, truncated);
    ck_assert_int_eq (bn_msg_verify (msg, s_session, true), BN_EPROTO);
    bn_msg_destroy (&msg);

    const char *badsig[] = {BN_DELIM, "deadbeef", "{}", "{}", "{}", "{}"};
    msg = s_send_raw (6, badsig);
    ck_assert_int_eq (bn_msg_verify (msg, s_session, true), BN_ESIGNATURE);
    bn_msg_destroy (&msg);

    const char *nosig[] = {BN_DELIM, "", "{}", "{}", "{}", "{}"};
    msg = s_send_raw (6, nosig);
    ck_assert_int_eq (bn_msg_verify (msg, s_session, true), BN_ESIGNATURE);
    bn_msg_destroy (&msg);

    const char *badjson[] = {
        BN_DELIM, "", "{\"msg_type\":", "[]", "3", "{\"a\":1}"};
    msg = s_send_raw (6, badjson);
    ck_assert (bn_msg_well_framed (msg));
    ck_assert_ptr_null (bn_msg_header (msg));
    ck_assert_ptr_null (bn_msg_parent (msg));
    ck_assert_ptr_null (bn_msg_metadata (msg));
    ck_assert_ptr_nonnull (bn_msg_content (msg));
    bn_msg_destroy (&msg);

    const char *wrongtype[] = {BN_DELIM, "",   "{\"msg_type\":7,\"msg_id\":[]}",
                               "{}",     "{}", "{}"};
    msg = s_send_raw (6, wrongtype);
    ck_assert_ptr_nonnull (bn_msg_header (msg));
    ck_assert_ptr_null (bn_msg_type (msg));
    ck_assert_ptr_null (bn_msg_id (msg));
    bn_msg_destroy (&msg);
}
END_TEST

//  What a receiver drops, each counted by its cause.
START_TEST (test_check)
{
    bn_msg_drops_t drops = {0};
    const int all = BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER;
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_EXECUTE_REQUEST);
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    bn_msg_t *got = bn_msg_recv (s_rin);
    ck_assert_int_eq (bn_msg_check (got, s_session, all, &drops, "test"), 0);
    bn_msg_t *again = bn_msg_dup (got);
    ck_assert_int_eq (
        bn_msg_check (again, s_session, all, &drops, "test %d", 2), BN_EREPLAY);
    //  a replay is refused only where signatures are recorded
    ck_assert_int_eq (
        bn_msg_check (again, s_session, BN_MSG_CHECK_SIGNATURE, &drops, "test"),
        0);
    bn_msg_destroy (&again);
    bn_msg_destroy (&got);
    ck_assert_uint_eq (drops.replayed, 1);

    const char *badsig[] = {BN_DELIM, "deadbeef", "{}", "{}", "{}", "{}"};
    msg = s_send_raw (6, badsig);
    ck_assert_int_eq (bn_msg_check (msg, s_session, all, &drops, "test"),
                      BN_ESIGNATURE);
    //  framing and header only: the signature is not looked at
    ck_assert_int_eq (bn_msg_check (msg, s_session, 0, &drops, "test"), 0);
    ck_assert_int_eq (
        bn_msg_check (msg, s_session, BN_MSG_CHECK_HEADER, &drops, "test"),
        BN_EPROTO);
    bn_msg_destroy (&msg);
    ck_assert_uint_eq (drops.bad_signature, 1);
    ck_assert_uint_eq (drops.bad_header, 1);

    const char *nodelim[] = {"a", "b", "c"};
    msg = s_send_raw (3, nodelim);
    ck_assert_int_eq (bn_msg_check (msg, s_session, 0, &drops, "test"),
                      BN_EPROTO);
    ck_assert_int_eq (bn_msg_check (msg, s_session, all, &drops, "test"),
                      BN_EPROTO);
    bn_msg_destroy (&msg);
    ck_assert_uint_eq (drops.bad_frame, 2);

    //  with signing off, a message with a bad header is still dropped
    bn_session_t *open = bn_session_new ("", NULL);
    const char *wrongtype[] = {BN_DELIM, "",   "{\"msg_type\":7,\"msg_id\":[]}",
                               "{}",     "{}", "{}"};
    msg = s_send_raw (6, wrongtype);
    ck_assert_int_eq (
        bn_msg_check (msg, open, BN_MSG_CHECK_SIGNATURE, &drops, "test"), 0);
    ck_assert_int_eq (bn_msg_check (msg, open, all, &drops, "test"), BN_EPROTO);
    bn_msg_destroy (&msg);
    bn_session_destroy (&open);
    ck_assert_uint_eq (drops.bad_header, 2);
    ck_assert_uint_eq (drops.bad_frame, 2);
    ck_assert_uint_eq (drops.bad_signature, 1);
    ck_assert_uint_eq (drops.replayed, 1);
}
END_TEST

START_TEST (test_recv_nothing)
{
    ck_assert_ptr_null (bn_msg_recv_flags (s_rin, ZMQ_DONTWAIT));
}
END_TEST

//  A message received over TCP names its peer's address, on a ROUTER
//  (whose routing frame it makes) as on a PULL; over inproc, or made here,
//  it names none.
START_TEST (test_peer_address)
{
    char address[64] = "x";
    bn_msg_t *msg = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    ck_assert (!bn_msg_peer_address (msg, address, sizeof address));
    ck_assert_str_eq (address, "");
    ck_assert_int_eq (bn_msg_send (&msg, s_rout, s_session), 0);
    msg = bn_msg_recv (s_rin);
    ck_assert_ptr_nonnull (msg);
    ck_assert (!bn_msg_peer_address (msg, address, sizeof address));
    bn_msg_destroy (&msg);

    zsock_t *router = zsock_new (ZMQ_ROUTER);
    int port = zsock_bind (router, "tcp://127.0.0.1:*");
    ck_assert_int_gt (port, 0);
    zsock_set_rcvtimeo (router, 5000);
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    ck_assert_int_eq (zsock_connect (dealer, "tcp://127.0.0.1:%d", port), 0);
    msg = bn_msg_new (s_session, BN_MSG_APPLY_REQUEST);
    ck_assert_int_eq (bn_msg_send (&msg, zsock_resolve (dealer), s_session), 0);
    msg = bn_msg_recv (zsock_resolve (router));
    ck_assert_ptr_nonnull (msg);
    ck_assert_uint_eq (bn_msg_nidents (msg), 1);
    ck_assert (bn_msg_peer_address (msg, address, sizeof address));
    ck_assert_str_eq (address, "127.0.0.1");
    //  a copy keeps it; a buffer too short gets what fits
    bn_msg_t *copy = bn_msg_dup (msg);
    ck_assert (bn_msg_peer_address (copy, address, 4));
    ck_assert_str_eq (address, "127");
    bn_msg_destroy (&copy);
    bn_msg_destroy (&msg);
    zsock_destroy (&dealer);
    zsock_destroy (&router);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_msg");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_reply_parent_is_request_header);
    tcase_add_test (tc, test_odd_msg_type);
    tcase_add_test (tc, test_idents);
    tcase_add_test (tc, test_rewrite_resigns);
    tcase_add_test (tc, test_fields_without_parsing);
    tcase_add_test (tc, test_fields_past_the_scan_room);
    tcase_add_test (tc, test_fields_of_a_copy);
    tcase_add_test (tc, test_buffers_shared);
    tcase_add_test (tc, test_bad_framing);
    tcase_add_test (tc, test_check);
    tcase_add_test (tc, test_recv_nothing);
    tcase_add_test (tc, test_peer_address);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_bcast_node: the broadcast tree inside a controller actor, seen
    from a fake client and fake engines on the wire: splitting, per-engine
    msg_ids, forwarded and merged replies at depths 0-3, engines lost,
    deadlines, bad requests, and requests in flight returning to zero.  */
#include "bn_bcast_node.h"
#include "bn_ctltest.h"
#include "bn_pickle.h"
#include "bn_value.h"

#define S_ENGINES 4

static t_controller_t *s_ctl;
static t_client_t *s_client;
static t_engine_t *s_engines[S_ENGINES];

//  A controller with a tree of depth (more settings may follow), folded
//  into its root (fold) or not, and S_ENGINES fake engines with ids 0 ...
//  S_ENGINES-1.
static void
s_start_folded (int depth, bool fold, const char *setting)
{
    char text[64];
    snprintf (text, sizeof text, "controller.depth=%d", depth);
    s_ctl = t_controller_start (
        text, fold ? "controller.fold=8" : "controller.fold=0", setting, NULL);
    s_client = t_client_new (s_ctl);
    for (int i = 0; i < S_ENGINES; i++) {
        s_engines[i] = t_engine_new (s_ctl);
        ck_assert_int_eq (t_engine_register (s_engines[i], s_ctl, s_client, i),
                          i);
    }
}

//  The same, the tree's nodes running as its shape says.
static void
s_start (int depth, const char *setting)
{
    s_start_folded (depth, false, setting);
}

static void
s_stop (void)
{
    for (int i = 0; i < S_ENGINES; i++)
        t_engine_destroy (&s_engines[i]);
    t_client_destroy (&s_client);
    t_controller_stop (&s_ctl);
}

//  Send a broadcast apply_request to the engines listed in ids (ending
//  with -1), with extra metadata (taken, may be NULL); returns its msg_id.
static char *
s_broadcast (bool coalescing, const int *ids, json_t *extra)
{
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    json_t *targets = json_array ();
    for (int i = 0; ids[i] >= 0; i++)
        json_array_append_new (targets,
                               json_pack ("[s, i]", s_engines[ids[i]]->uuid,
                                          s_engines[ids[i]]->id));
    json_t *metadata =
        json_pack ("{s:o, s:b, s:b}", "targets", targets, "is_broadcast", 1,
                   "is_coalescing", coalescing);
    if (extra)
        json_object_update (metadata, extra);
    json_decref (extra);
    bn_msg_set_metadata (msg, metadata);
    bn_msg_add_buffer (msg, "payload", 7);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->broadcast, s_client->session);
    return msg_id;
}

//  Engine i receives its copy of request original and checks it; returns
//  the request (for the answer).
static bn_msg_t *
s_engine_receive (int i, const char *original)
{
    t_engine_t *engine = s_engines[i];
    bn_msg_t *request = t_recv (engine->shell);
    ck_assert_msg (request != NULL, "engine %d got no request", i);
    ck_assert_int_eq (bn_msg_verify (request, engine->session, false), 0);
    char expected[256];
    snprintf (expected, sizeof expected, "%s_%s", original, engine->uuid);
    ck_assert_str_eq (bn_msg_id (request), expected);
    ck_assert_str_eq (t_metadata_str (request, "original_msg_id"), original);
    //  the first ident is the leaf's routing id
    char *leaf = bn_msg_ident_strdup (request, 0);
    ck_assert_ptr_nonnull (strstr (leaf, BN_ROUTING_SCHEDULER_PREFIX));
    free (leaf);
    ck_assert_uint_eq (bn_msg_nbuffers (request), 1);
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (request, 0)), "payload", 7);
    return request;
}

static void s_engine_reply_with (int i, bn_msg_t *request, bool ok,
                                 const void *data, size_t size);

//  Engine i answers request (taken): status ok and one buffer "r<i>", or
//  an error.
static void
s_engine_reply (int i, bn_msg_t *request, bool ok)
{
    char text[16];
    snprintf (text, sizeof text, "r%d", i);
    s_engine_reply_with (i, request, ok, text, strlen (text));
}

//  Same, with the buffer given.
static void
s_engine_reply_with (int i, bn_msg_t *request, bool ok, const void *data,
                     size_t size)
{
    t_engine_t *engine = s_engines[i];
    bn_msg_t *reply =
        bn_msg_new_reply (engine->session, request, BN_MSG_APPLY_REPLY);
    json_t *md = bn_msg_metadata (request);
    bn_msg_set_metadata (
        reply,
        json_pack ("{s:s, s:s, s:s, s:O, s:O, s:O}", "status",
                   ok ? "ok" : "error", "engine", engine->uuid, "started",
                   "2026-01-01T00:00:00.000000Z", "is_broadcast",
                   json_object_get (md, "is_broadcast"), "is_coalescing",
                   json_object_get (md, "is_coalescing"), "original_msg_id",
                   json_object_get (md, "original_msg_id")));
    if (ok) {
        bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
        bn_msg_add_buffer (reply, data, size);
    } else
        bn_msg_set_content (reply,
                            bn_wire_error ("ValueError", "bad", NULL, NULL));
    bn_msg_destroy (&request);
    t_send (&reply, engine->shell, engine->session);
}

//  The merged reply of original: checks broadcast_targets and bn_replies
//  against the expected engine order (ids, ending with -1).
static bn_msg_t *
s_merged (const char *original, const int *order)
{
    bn_msg_t *reply = t_recv (s_client->broadcast);
    ck_assert_msg (reply != NULL, "no merged reply");
    ck_assert_int_eq (bn_msg_verify (reply, s_client->session, true), 0);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), original);
    json_t *md = bn_msg_metadata (reply);
    ck_assert (json_is_true (json_object_get (md, "is_coalescing")));
    json_t *targets = json_object_get (md, "broadcast_targets");
    json_t *replies = json_object_get (md, "bn_replies");
    size_t n = 0;
    while (order[n] >= 0)
        n++;
    ck_assert_uint_eq (json_array_size (targets), n);
    ck_assert_uint_eq (json_array_size (replies), n);
    for (size_t i = 0; i < n; i++) {
        json_t *pair = json_array_get (targets, i);
        ck_assert_str_eq (json_string_value (json_array_get (pair, 0)),
                          s_engines[order[i]]->uuid);
        ck_assert_int_eq (json_integer_value (json_array_get (pair, 1)),
                          order[i]);
    }
    return reply;
}

//  The merged reply's entry index is an engine's ValueError (s_engine_reply
//  not ok): the merged status is the failure's, and the entry has one
//  placeholder buffer.
static void
s_assert_failed (bn_msg_t *reply, size_t index)
{
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, index)), "\x80\x04N.",
                      4);
    json_t *replies =
        json_object_get (bn_msg_metadata (reply), BN_BCAST_REPLIES);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (replies, index), "status")),
                      "error");
}

//  Run one broadcast to every engine at the current depth; engines answer
//  in reverse order; check what the client gets.
static void
s_round_trip (bool coalescing, const int *tree_order)
{
    const int all[] = {0, 1, 2, 3, -1};
    char *original = s_broadcast (coalescing, all, NULL);
    bn_msg_t *requests[S_ENGINES];
    for (int i = 0; i < S_ENGINES; i++)
        requests[i] = s_engine_receive (i, original);
    for (int i = S_ENGINES - 1; i >= 0; i--)
        s_engine_reply (i, requests[i], true);
    if (coalescing) {
        bn_msg_t *reply = s_merged (original, tree_order);
        ck_assert_str_eq (t_content_str (reply, "status"), "ok");
        ck_assert_uint_eq (bn_msg_nbuffers (reply), S_ENGINES);
        for (int i = 0; i < S_ENGINES; i++) {
            char text[16];
            snprintf (text, sizeof text, "r%d", tree_order[i]);
            zmq_msg_t *buffer = bn_msg_buffer (reply, (size_t)i);
            ck_assert_uint_eq (zmq_msg_size (buffer), strlen (text));
            ck_assert_mem_eq (zmq_msg_data (buffer), text, strlen (text));
        }
        bn_msg_destroy (&reply);
    } else {
        bool seen[S_ENGINES] = {false};
        for (int i = 0; i < S_ENGINES; i++) {
            bn_msg_t *reply = t_recv (s_client->broadcast);
            ck_assert_msg (reply != NULL, "reply %d missing", i);
            ck_assert_int_eq (bn_msg_verify (reply, s_client->session, true),
                              0);
            const char *engine = t_metadata_str (reply, "engine");
            int which = -1;
            for (int e = 0; e < S_ENGINES; e++)
                if (streq (engine, s_engines[e]->uuid))
                    which = e;
            ck_assert_int_ge (which, 0);
            ck_assert (!seen[which]);
            seen[which] = true;
            char expected[256];
            snprintf (expected, sizeof expected, "%s_%s", original, engine);
            ck_assert_str_eq (bn_msg_parent_id (reply), expected);
            bn_msg_destroy (&reply);
        }
    }
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
}

START_TEST (test_usage)
{
    //  depth 1: engines 0, 2 on leaf 0 and 1, 3 on leaf 1
    s_start (1, NULL);
    const int order[] = {0, 2, 1, 3, -1};
    s_round_trip (false, order);
    s_round_trip (true, order);
    s_stop ();
}
END_TEST

//  Output banyan engines put in their replies (bn_output) goes into the
//  merged entries; an empty text is left out.
START_TEST (test_output_in_reply)
{
    s_start (1, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all, json_pack ("{s:s}", "bn_output", "reply"));
    for (int i = 0; i < S_ENGINES; i++) {
        bn_msg_t *request = s_engine_receive (i, original);
        t_engine_t *engine = s_engines[i];
        bn_msg_t *reply =
            bn_msg_new_reply (engine->session, request, BN_MSG_APPLY_REPLY);
        bn_msg_set_metadata (reply,
                             json_pack ("{s:s, s:s, s:s, s:s}", "status", "ok",
                                        "engine", engine->uuid, "started",
                                        "2026-01-01T00:00:00.000000Z",
                                        "original_msg_id", original));
        char out[16];
        snprintf (out, sizeof out, i % 2 ? "out %d\n" : "", i);
        bn_msg_set_content (reply,
                            json_pack ("{s:s, s:s, s:s}", "status", "ok",
                                       "bn_stdout", out, "bn_stderr", ""));
        bn_msg_add_buffer (reply, "r", 1);
        bn_msg_destroy (&request);
        t_send (&reply, engine->shell, engine->session);
    }
    const int order[] = {0, 2, 1, 3, -1};
    bn_msg_t *reply = s_merged (original, order);
    json_t *replies = json_object_get (bn_msg_metadata (reply), "bn_replies");
    for (int i = 0; i < S_ENGINES; i++) {
        json_t *entry = json_array_get (replies, (size_t)i);
        ck_assert_str_eq (json_string_value (json_object_get (entry, "status")),
                          "ok");
        json_t *out = json_object_get (entry, "bn_stdout");
        if (order[i] % 2) {
            char expected[16];
            snprintf (expected, sizeof expected, "out %d\n", order[i]);
            ck_assert_str_eq (json_string_value (out), expected);
        } else {
            ck_assert_ptr_null (out);
            ck_assert_ptr_null (json_object_get (entry, "bn_stderr"));
        }
    }
    bn_msg_destroy (&reply);
    free (original);
    s_stop ();
}
END_TEST

START_TEST (test_depths)
{
    const int orders[4][S_ENGINES + 1] = {
        {0, 1, 2, 3, -1}, //  depth 0: one leaf
        {0, 2, 1, 3, -1}, //  depth 1: e % 2
        {0, 1, 2, 3, -1}, //  depth 2: e % 4, one engine a leaf
        {0, 1, 2, 3, -1}, //  depth 3: 8 leaves, 4 of them without engines
    };
    int depth = _i;
    s_start (depth, NULL);
    s_round_trip (false, orders[depth]);
    s_round_trip (true, orders[depth]);
    s_stop ();
}
END_TEST

//  A folded tree: the root alone serves every leaf's port, and the client
//  gets the order of the tree as its shape runs (the node where the ways
//  down to the engines' leaves part merges them child by child). Depths
//  0 ... 3 as they run (_i 0 ... 3), then folded (4 ... 7); the stats
//  list the nodes that run.
START_TEST (test_folded)
{
    int depth = _i % 4;
    bool fold = _i >= 4;
    const int orders[4][S_ENGINES + 1] = {
        {0, 1, 2, 3, -1}, //  depth 0: nothing to fold
        {0, 2, 1, 3, -1}, //  depth 1: e % 2
        {0, 1, 2, 3, -1}, //  depth 2: e % 4, two leaves a child
        {0, 1, 2, 3, -1}, //  depth 3: e % 8, all below child 0
    };
    s_start_folded (depth, fold, NULL);
    s_round_trip (false, orders[depth]);
    s_round_trip (true, orders[depth]);
    //  targets given out of order
    const int some[] = {3, 2, 1, -1};
    char *original = s_broadcast (true, some, NULL);
    for (int i = 3; i >= 1; i--)
        s_engine_reply (i, s_engine_receive (i, original), true);
    const int ordered[4][4] = {
        {3, 2, 1, -1}, //  one leaf: the client's order
        {2, 3, 1, -1}, //  the root merges: leaf 0 (e % 2 == 0), leaf 1
        {1, 3, 2, -1}, //  the root merges: child 0 (leaf 1), child 1
        {1, 3, 2, -1}, //  child 0 merges (leaf 1, then 2 and 3 below its
                       //  child 1); the root passes that on
    };
    bn_msg_t *reply = s_merged (original, ordered[depth]);
    bn_msg_destroy (&reply);
    free (original);
    json_t *stats = t_stats (s_ctl);
    json_t *nodes =
        json_object_get (json_object_get (stats, "broadcast"), "nodes");
    const size_t sizes[] = {1, 3, 7, 15};
    ck_assert_uint_eq (json_array_size (nodes), fold ? 1 : sizes[depth]);
    json_decref (stats);
    s_stop ();
}
END_TEST

//  A binomial tree of order 3 has its 4 leaves at levels 1 to 3 (engine e
//  on leaf e, below the root's child 2, 0, 1, 0): the root merges them by
//  that child, as the tree runs and folded.
START_TEST (test_binomial_order)
{
    s_start_folded (3, _i == 1, "controller.topology=binomial");
    const int order[] = {1, 3, 2, 0, -1};
    s_round_trip (true, order);
    json_t *stats = t_stats (s_ctl);
    ck_assert_uint_eq (json_array_size (json_object_get (
                           json_object_get (stats, "broadcast"), "nodes")),
                       _i == 1 ? 1 : 8);
    json_decref (stats);
    s_stop ();
}
END_TEST

START_TEST (test_split)
{
    //  only the targets' leaves get the request; an engine not targeted
    //  gets nothing
    s_start (2, NULL);
    const int some[] = {3, 1, -1};
    char *original = s_broadcast (true, some, NULL);
    bn_msg_t *r3 = s_engine_receive (3, original);
    bn_msg_t *r1 = s_engine_receive (1, original);
    ck_assert_ptr_null (t_recv_within (s_engines[0]->shell, 100));
    ck_assert_ptr_null (t_recv_within (s_engines[2]->shell, 100));
    s_engine_reply (3, r3, true);
    s_engine_reply (1, r1, true);
    const int order[] = {1, 3, -1};
    bn_msg_t *reply = s_merged (original, order);
    bn_msg_destroy (&reply);
    free (original);
    json_t *stats = t_stats (s_ctl);
    json_t *nodes =
        json_object_get (json_object_get (stats, "broadcast"), "nodes");
    //  root, 2 inner, 4 leaves: leaves 0 and 2 got nothing
    ck_assert_uint_eq (json_array_size (nodes), 7);
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_array_get (nodes, 3), "received")),
                      0);
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_array_get (nodes, 4), "received")),
                      1);
    //  the root read its children's merged replies without parsing every
    //  engine's entry
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_array_get (nodes, 0), "spliced")),
                      2);
    json_decref (stats);
    s_stop ();
}
END_TEST

//  An engine's copy of a request carries the client's header as it came
//  (its keys, their order and spacing) with only msg_id's value changed.
START_TEST (test_header_as_sent)
{
    s_start (0, NULL);
    const char *header =
        "{\"msg_id\": \"k1\", \"msg_type\": \"apply_request\", \"x\": "
        "[1, {\"b\": \"\\u00e9\"}], \"username\": \"u\"}";
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (msg, json_pack ("{s:[[s, i]], s:b, s:b}", "targets",
                                         s_engines[1]->uuid, 1, "is_broadcast",
                                         1, "is_coalescing", 1));
    ck_assert_int_eq (
        bn_msg_set_part_raw (msg, BN_PART_HEADER, header, strlen (header)), 0);
    bn_msg_add_buffer (msg, "payload", 7);
    t_send (&msg, s_client->broadcast, s_client->session);
    bn_msg_t *request = s_engine_receive (1, "k1");
    char *expected = zsys_sprintf (
        "{\"msg_id\": \"k1_%s\", \"msg_type\": \"apply_request\", \"x\": "
        "[1, {\"b\": \"\\u00e9\"}], \"username\": \"u\"}",
        s_engines[1]->uuid);
    size_t size;
    const void *got = bn_msg_part_data (request, BN_PART_HEADER, &size);
    ck_assert_uint_eq (size, strlen (expected));
    ck_assert_mem_eq (got, expected, size);
    zstr_free (&expected);
    s_engine_reply (1, request, true);
    bn_msg_t *reply = s_merged ("k1", (const int[]){1, -1});
    bn_msg_destroy (&reply);
    s_stop ();
}
END_TEST

//  The root's merged reply of the engines of one leaf is that leaf's,
//  sent on as it came (its counters say so): the client gets the same
//  targets, entries, failure and buffers as from a merge. Engines of two
//  leaves are merged at the root.
static int
s_root_stat (const char *name)
{
    json_t *stats = t_stats (s_ctl);
    json_t *nodes =
        json_object_get (json_object_get (stats, "broadcast"), "nodes");
    int value = (int)json_integer_value (
        json_object_get (json_array_get (nodes, 0), name));
    json_decref (stats);
    return value;
}

START_TEST (test_one_leaf_passed_on)
{
    s_start (1, NULL);
    //  engines 0 and 2 are the first leaf's (e % 2)
    const int even[] = {0, 2, -1};
    char *original = s_broadcast (true, even, NULL);
    bn_msg_t *r0 = s_engine_receive (0, original);
    bn_msg_t *r2 = s_engine_receive (2, original);
    s_engine_reply (2, r2, false);
    s_engine_reply (0, r0, true);
    bn_msg_t *reply = s_merged (original, even);
    //  the parent is the last engine's copy of the request, as a merge
    //  at the root would have it
    char parent[256];
    snprintf (parent, sizeof parent, "%s_%s", original, s_engines[0]->uuid);
    ck_assert_str_eq (bn_msg_parent_id (reply), parent);
    ck_assert_str_eq (t_metadata_str (reply, "status"), "error");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 2);
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 0)), "r0", 2);
    s_assert_failed (reply, 1);
    bn_msg_destroy (&reply);
    free (original);
    ck_assert_int_eq (s_root_stat ("passed"), 1);
    ck_assert_int_eq (s_root_stat ("merged"), 1);
    //  both leaves: merged again
    s_round_trip (true, (const int[]){0, 2, 1, 3, -1});
    ck_assert_int_eq (s_root_stat ("passed"), 1);
    ck_assert_int_eq (s_root_stat ("merged"), 2);
    //  with timestamps the root adds its hop
    json_t *extra = json_pack ("{s:b}", BN_BCAST_TIMESTAMPS, 1);
    original = s_broadcast (true, (const int[]){2, -1}, extra);
    s_engine_reply (2, s_engine_receive (2, original), true);
    reply = s_merged (original, (const int[]){2, -1});
    json_t *hops = json_object_get (bn_msg_metadata (reply), BN_BCAST_HOPS);
    ck_assert_uint_eq (json_array_size (hops), 2);
    bn_msg_destroy (&reply);
    free (original);
    ck_assert_int_eq (s_root_stat ("passed"), 1);
    s_stop ();
}
END_TEST

START_TEST (test_errors_keep_alignment)
{
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original = s_broadcast (true, all, NULL);
    for (int i = 0; i < S_ENGINES; i++)
        s_engine_reply (i, s_engine_receive (i, original), i != 2);
    bn_msg_t *reply = s_merged (original, all);
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 4);
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 3)), "r3", 2);
    s_assert_failed (reply, 2);
    json_t *replies =
        json_object_get (bn_msg_metadata (reply), BN_BCAST_REPLIES);
    ck_assert_str_eq (
        json_string_value (json_object_get (
            json_object_get (json_array_get (replies, 2), "content"), "ename")),
        "ValueError");
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (replies, 1), "status")),
                      "ok");
    bn_msg_destroy (&reply);
    free (original);
    s_stop ();
}
END_TEST

START_TEST (test_engine_lost)
{
    //  depth 2, coalescing: engine 2 unregisters while the others answer
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original = s_broadcast (true, all, NULL);
    bn_msg_t *requests[S_ENGINES];
    for (int i = 0; i < S_ENGINES; i++)
        requests[i] = s_engine_receive (i, original);
    s_engine_reply (0, requests[0], true);
    s_engine_reply (1, requests[1], true);
    bn_msg_destroy (&requests[2]);
    bn_msg_t *bye = t_msg (s_engines[2]->session, BN_MSG_UNREGISTRATION_REQUEST,
                           json_pack ("{s:i}", "id", 2), NULL);
    t_send (&bye, s_engines[2]->reg, s_engines[2]->session);
    s_engine_reply (3, requests[3], true);
    bn_msg_t *reply = s_merged (original, all);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    json_t *replies =
        json_object_get (bn_msg_metadata (reply), BN_BCAST_REPLIES);
    for (int i = 0; i < S_ENGINES; i++)
        ck_assert_str_eq (json_string_value (json_object_get (
                              json_array_get (replies, (size_t)i), "status")),
                          i == 2 ? "error" : "ok");
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 3)), "r3", 2);
    bn_msg_destroy (&reply);
    free (original);

    //  the next broadcast fails engine 2 at once, never waits for it
    original = s_broadcast (false, all, NULL);
    for (int i = 0; i < S_ENGINES; i++)
        if (i != 2)
            s_engine_reply (i, s_engine_receive (i, original), true);
    int errors = 0;
    for (int i = 0; i < S_ENGINES; i++) {
        bn_msg_t *got = t_recv (s_client->broadcast);
        ck_assert_ptr_nonnull (got);
        if (streq (t_content_str (got, "status"), "error")) {
            errors++;
            ck_assert_str_eq (t_content_str (got, "ename"), "EngineError");
            char expected[256];
            snprintf (expected, sizeof expected, "%s_%s", original,
                      s_engines[2]->uuid);
            ck_assert_str_eq (bn_msg_parent_id (got), expected);
        }
        bn_msg_destroy (&got);
    }
    ck_assert_int_eq (errors, 1);
    ck_assert_ptr_null (t_recv_within (s_engines[2]->shell, 50));
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

//  An engine the hub registered before its shell reached the leaf (its
//  heart answered first) gets the broadcast once it connects, instead of
//  an EngineError.
START_TEST (test_engine_connects_late)
{
    s_start (1, NULL);
    t_engine_t *late = t_engine_new (s_ctl);
    bn_msg_t *reply = t_engine_request (late, 7);
    late->id = (int)json_integer_value (
        json_object_get (bn_msg_content (reply), "id"));
    ck_assert_int_eq (late->id, 7);
    bn_msg_destroy (&reply);
    bn_connfile_t *file = s_ctl->engine;
    late->hb_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (late->hb_sub, t_port (file, "hb_ping"));
    late->hb_dealer = t_sock (ZMQ_DEALER, late->uuid);
    t_connect (late->hb_dealer, t_port (file, "hb_pong"));
    bool registered = false;
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (!registered && zclock_mono () < end) {
        t_engine_echo (late);
        bn_msg_t *note = t_recv_within (s_client->notification, 10);
        registered = note && streq (bn_msg_type (note),
                                    BN_MSG_REGISTRATION_NOTIFICATION);
        bn_msg_destroy (&note);
    }
    ck_assert (registered);

    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (msg, json_pack ("{s:[[s, i]], s:b, s:b}", "targets",
                                         late->uuid, late->id, "is_broadcast",
                                         1, "is_coalescing", 1));
    char *original = strdup (bn_msg_id (msg));
    t_send (&msg, s_client->broadcast, s_client->session);
    ck_assert_ptr_null (t_recv_within (s_client->broadcast, 100));

    late->shell = t_sock (ZMQ_ROUTER, late->uuid);
    size_t leaves = bn_connfile_broadcast_count (file);
    t_connect (late->shell,
               bn_connfile_broadcast (file, (size_t)late->id % leaves));
    bn_msg_t *request = t_recv (late->shell);
    ck_assert_msg (request != NULL, "the late engine got no request");
    char expected[256];
    snprintf (expected, sizeof expected, "%s_%s", original, late->uuid);
    ck_assert_str_eq (bn_msg_id (request), expected);
    bn_msg_destroy (&request);
    free (original);
    t_engine_destroy (&late);
    s_stop ();
}
END_TEST

START_TEST (test_deadline)
{
    //  the controller's default deadline, then a request's own
    s_start (2, "controller.tree_deadline=300");
    for (int round = 0; round < 2; round++) {
        const int all[] = {0, 1, 2, 3, -1};
        char *original = s_broadcast (
            true, all,
            round ? json_pack ("{s:i}", BN_BCAST_DEADLINE, 200) : NULL);
        bn_msg_t *requests[S_ENGINES];
        for (int i = 0; i < S_ENGINES; i++)
            requests[i] = s_engine_receive (i, original);
        for (int i = 0; i < S_ENGINES; i++)
            if (i == 1)
                bn_msg_destroy (&requests[i]);
            else
                s_engine_reply (i, requests[i], true);
        bn_msg_t *reply = s_merged (original, all);
        ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
        ck_assert_ptr_nonnull (
            strstr (t_content_str (reply, "evalue"), "deadline"));
        ck_assert_uint_eq (bn_msg_nbuffers (reply), 4);
        bn_msg_destroy (&reply);
        free (original);
    }
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_deadline_far)
{
    //  a deadline too far to reach (the clock's sums would overflow) is
    //  one that does not come: the broadcast waits for its last engine
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all,
                     json_pack ("{s:I}", BN_BCAST_DEADLINE,
                                (json_int_t)9223372036854775000LL));
    bn_msg_t *requests[S_ENGINES];
    for (int i = 0; i < S_ENGINES; i++)
        requests[i] = s_engine_receive (i, original);
    for (int i = 0; i < S_ENGINES; i++)
        if (i != 1)
            s_engine_reply (i, requests[i], true);
    bn_msg_t *early = t_recv_within (s_client->broadcast, 300);
    ck_assert_msg (early == NULL, "a reply came before the last engine's");
    s_engine_reply (1, requests[1], true);
    bn_msg_t *reply = s_merged (original, all);
    ck_assert_str_eq (t_content_str (reply, "status"), "ok");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 4);
    bn_msg_destroy (&reply);
    free (original);
    s_stop ();
}
END_TEST

START_TEST (test_bad_requests)
{
    s_start (1, NULL);
    //  no targets: an error reply, nothing tracked
    bn_msg_t *msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (msg, json_pack ("{s:b}", "is_coalescing", 1));
    t_send (&msg, s_client->broadcast, s_client->session);
    bn_msg_t *reply = t_recv (s_client->broadcast);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
    bn_msg_destroy (&reply);
    //  targets that are not [uuid, engine id] pairs: the same
    const char *bad[] = {
        "[[\"e0\", 1.0]]", "[[\"e0\", 01]]", "[[\"e0\", 2147483648]]",
        "[[\"e0\", -1]]",  "[[\"e0\"]]",     "[[0, 0]]",
        "[\"e0\", 0]",     "{\"e0\": 0}",    "[[\"e\xff\", 0]]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
        char *metadata =
            zsys_sprintf ("{\"is_broadcast\": true, \"targets\": %s}", bad[i]);
        ck_assert_int_eq (bn_msg_set_part_raw (msg, BN_PART_METADATA, metadata,
                                               strlen (metadata)),
                          0);
        zstr_free (&metadata);
        t_send (&msg, s_client->broadcast, s_client->session);
        reply = t_recv (s_client->broadcast);
        ck_assert_msg (reply != NULL, "no reply to targets %s", bad[i]);
        ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
        ck_assert_msg (strstr (t_content_str (reply, "evalue"), "targets"),
                       "targets %s: %s", bad[i],
                       t_content_str (reply, "evalue"));
        bn_msg_destroy (&reply);
    }
    //  garbage and a bad signature are dropped and counted
    t_send_raw (s_client->broadcast, "junk", NULL);
    t_send_raw (s_client->broadcast, BN_DELIM, "bad", "{}", "{}", "{}", "{}",
                NULL);
    //  a target that is not registered fails at once
    bn_msg_t *req = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (req, json_pack ("{s:[[s, i]], s:b, s:b}", "targets",
                                         "nobody", 7, "is_broadcast", 1,
                                         "is_coalescing", 0));
    t_send (&req, s_client->broadcast, s_client->session);
    reply = t_recv (s_client->broadcast);
    ck_assert_ptr_nonnull (reply);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    bn_msg_destroy (&reply);
    //  a header that is not JSON by jansson's reading (nor by Python's): no
    //  engine gets the request, and it is counted
    int bad_before = s_root_stat ("bad_request");
    const char *headers[] = {
        "{\"msg_id\":\"h1\",\"msg_type\":\"apply_request\",\"n\":01}",
        "{\"msg_id\":\"h2\",\"msg_type\":\"apply_request\",\"s\":\"\xff\"}",
        "{\"msg_id\":\"h3\",\"msg_type\":\"apply_request\",\"a\":[1 2]}"};
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        msg = t_msg (s_client->session, BN_MSG_APPLY_REQUEST, NULL, NULL);
        bn_msg_set_metadata (msg, json_pack ("{s:[[s, i]], s:b}", "targets",
                                             s_engines[0]->uuid, 0,
                                             "is_broadcast", 1));
        ck_assert_int_eq (bn_msg_set_part_raw (msg, BN_PART_HEADER, headers[i],
                                               strlen (headers[i])),
                          0);
        t_send (&msg, s_client->broadcast, s_client->session);
    }
    ck_assert_ptr_null (t_recv_within (s_engines[0]->shell, 200));
    ck_assert_int_eq (s_root_stat ("bad_request"), bad_before + 3);
    const int order[] = {0, 2, 1, 3, -1};
    s_round_trip (true, order);
    json_t *stats = t_stats (s_ctl);
    json_t *root = json_array_get (
        json_object_get (json_object_get (stats, "broadcast"), "nodes"), 0);
    ck_assert_int_eq (json_integer_value (json_object_get (root, "bad_frame")),
                      1);
    ck_assert_int_eq (
        json_integer_value (json_object_get (root, "bad_signature")), 1);
    json_decref (stats);
    s_stop ();
}
END_TEST

//  Receive one message on the client's broadcast socket, verified.
static bn_msg_t *
s_client_recv (void)
{
    bn_msg_t *reply = t_recv (s_client->broadcast);
    ck_assert_msg (reply != NULL, "no reply");
    ck_assert_int_eq (bn_msg_verify (reply, s_client->session, true), 0);
    return reply;
}

START_TEST (test_group)
{
    //  engines 0, 1, 3 give the same bytes, engine 2 others: two groups,
    //  each group's buffer once
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all, json_pack ("{s:b}", BN_BCAST_GROUP, 1));
    for (int i = 0; i < S_ENGINES; i++)
        s_engine_reply_with (i, s_engine_receive (i, original), true,
                             i == 2 ? "other" : "same", i == 2 ? 5 : 4);
    bn_msg_t *reply = s_client_recv ();
    json_t *md = bn_msg_metadata (reply);
    ck_assert_ptr_null (json_object_get (md, "broadcast_targets"));
    json_t *groups = json_object_get (md, BN_BCAST_GROUPS);
    ck_assert_uint_eq (json_array_size (groups), 2);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (groups, 0), "engines")),
                      "0-1,3");
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (groups, 1), "engines")),
                      "2");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 2);
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 0)), "same", 4);
    ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 1)), "other", 5);
    bn_msg_destroy (&reply);
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_group_failure)
{
    //  engine 2 fails: the merged reply has the failure's content, and its
    //  group says so
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    for (int round = 0; round < 2; round++) {
        char *original =
            s_broadcast (true, all, json_pack ("{s:b}", BN_BCAST_GROUP, 1));
        for (int i = 0; i < S_ENGINES; i++)
            s_engine_reply (i, s_engine_receive (i, original), i != 2);
        bn_msg_t *reply = s_client_recv ();
        ck_assert_str_eq (t_content_str (reply, "status"), "error");
        ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
        json_t *groups =
            json_object_get (bn_msg_metadata (reply), BN_BCAST_GROUPS);
        bool failed_group = false;
        size_t g;
        json_t *group;
        json_array_foreach (groups, g, group)
        {
            const char *engines =
                json_string_value (json_object_get (group, "engines"));
            const char *status =
                json_string_value (json_object_get (group, "status"));
            if (engines && streq (engines, "2")) {
                ck_assert_str_eq (status, "error");
                failed_group = true;
            }
        }
        ck_assert (failed_group);
        bn_msg_destroy (&reply);
        free (original);
    }
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_reduce)
{
    //  sum of 1 + 2 + 3 at the leaves and inner nodes; engine 3 fails
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all, json_pack ("{s:s}", BN_BCAST_REDUCE, "sum"));
    for (int i = 0; i < S_ENGINES; i++) {
        bn_value_t *value = bn_value_new_int (i + 1);
        size_t size;
        void *pickle = bn_pickle_encode (value, &size);
        s_engine_reply_with (i, s_engine_receive (i, original), i != 3, pickle,
                             size);
        free (pickle);
        bn_value_destroy (&value);
    }
    bn_msg_t *reply = s_client_recv ();
    json_t *reduced =
        json_object_get (bn_msg_metadata (reply), BN_BCAST_REDUCED);
    ck_assert_str_eq (json_string_value (json_object_get (reduced, "op")),
                      "sum");
    ck_assert_str_eq (json_string_value (json_object_get (reduced, "engines")),
                      "0-2");
    json_t *failed = json_object_get (reduced, "failed");
    ck_assert_uint_eq (json_array_size (failed), 1);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_array_get (failed, 0), "engines")),
                      "3");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
    zmq_msg_t *buffer = bn_msg_buffer (reply, 0);
    char err[128];
    bn_value_t *sum = bn_pickle_decode (zmq_msg_data (buffer),
                                        zmq_msg_size (buffer), err, sizeof err);
    ck_assert_ptr_nonnull (sum);
    ck_assert_int_eq (bn_value_int (sum), 6);
    bn_value_destroy (&sum);
    bn_msg_destroy (&reply);
    free (original);
    //  an unknown reduction is refused at once
    original =
        s_broadcast (true, all, json_pack ("{s:s}", BN_BCAST_REDUCE, "nope:x"));
    reply = s_client_recv ();
    ck_assert_str_eq (t_content_str (reply, "ename"), "ValueError");
    bn_msg_destroy (&reply);
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_levels_and_timestamps)
{
    //  depth 2: the root forwards, the levels below merge: one merged
    //  message per level-1 subtree, each with the hops of its path
    s_start (2, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all,
                     json_pack ("{s:[s, s], s:b}", BN_BCAST_LEVELS, "forward",
                                "merge", BN_BCAST_TIMESTAMPS, 1));
    for (int i = 0; i < S_ENGINES; i++)
        s_engine_reply (i, s_engine_receive (i, original), true);
    //  leaves 0 and 1 are under sub_scheduler_00, 2 and 3 under _01
    const int first[] = {0, 1, -1}, second[] = {2, 3, -1};
    for (int m = 0; m < 2; m++) {
        bn_msg_t *reply = s_client_recv ();
        json_t *targets =
            json_object_get (bn_msg_metadata (reply), "broadcast_targets");
        ck_assert_uint_eq (json_array_size (targets), 2);
        int e0 = (int)json_integer_value (
            json_array_get (json_array_get (targets, 0), 1));
        int e1 = (int)json_integer_value (
            json_array_get (json_array_get (targets, 1), 1));
        const int *order = e0 == 0 ? first : second;
        ck_assert_int_eq (e0, order[0]);
        ck_assert_int_eq (e1, order[1]);
        bn_msg_destroy (&reply);
    }
    free (original);
    //  all levels merging: the hops of all 7 nodes, the root last
    original =
        s_broadcast (true, all, json_pack ("{s:b}", BN_BCAST_TIMESTAMPS, 1));
    for (int i = 0; i < S_ENGINES; i++)
        s_engine_reply (i, s_engine_receive (i, original), true);
    bn_msg_t *reply = s_client_recv ();
    json_t *hops = json_object_get (bn_msg_metadata (reply), BN_BCAST_HOPS);
    ck_assert_uint_eq (json_array_size (hops), 7);
    json_t *last = json_array_get (hops, 6);
    ck_assert_str_eq (json_string_value (json_object_get (last, "node")),
                      "sub_scheduler_0");
    ck_assert_ptr_nonnull (json_string_value (json_object_get (last, "sent")));
    ck_assert_ptr_nonnull (
        json_string_value (json_object_get (last, "received")));
    bn_msg_destroy (&reply);
    free (original);
    //  forwarded replies carry the hops of the nodes they passed
    original =
        s_broadcast (false, all, json_pack ("{s:b}", BN_BCAST_TIMESTAMPS, 1));
    for (int i = 0; i < S_ENGINES; i++)
        s_engine_reply (i, s_engine_receive (i, original), true);
    for (int i = 0; i < S_ENGINES; i++) {
        reply = s_client_recv ();
        hops = json_object_get (bn_msg_metadata (reply), BN_BCAST_HOPS);
        ck_assert_uint_eq (json_array_size (hops), 3);
        bn_msg_destroy (&reply);
    }
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_release_none)
{
    //  each arrival goes up at once as a merged message of one
    s_start (0, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original =
        s_broadcast (true, all, json_pack ("{s:s}", BN_BCAST_RELEASE, "none"));
    for (int i = 0; i < S_ENGINES; i++) {
        s_engine_reply (i, s_engine_receive (i, original), true);
        bn_msg_t *reply = s_client_recv ();
        json_t *md = bn_msg_metadata (reply);
        ck_assert_uint_eq (
            json_array_size (json_object_get (md, "broadcast_targets")), 1);
        ck_assert (json_is_boolean (json_object_get (md, BN_BCAST_PARTIAL)));
        ck_assert_int_eq (json_is_true (json_object_get (md, BN_BCAST_PARTIAL)),
                          i < S_ENGINES - 1);
        char text[16];
        snprintf (text, sizeof text, "r%d", i);
        ck_assert_mem_eq (zmq_msg_data (bn_msg_buffer (reply, 0)), text, 2);
        bn_msg_destroy (&reply);
    }
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_release_window)
{
    //  two answers, then the window passes: a partial message of two;
    //  the rest when complete
    s_start (1, NULL);
    const int all[] = {0, 1, 2, 3, -1};
    char *original = s_broadcast (
        true, all,
        json_pack ("{s:s, s:i, s:[s]}", BN_BCAST_RELEASE, "window",
                   BN_BCAST_WINDOW, 100, BN_BCAST_LEVELS, "merge"));
    bn_msg_t *requests[S_ENGINES];
    for (int i = 0; i < S_ENGINES; i++)
        requests[i] = s_engine_receive (i, original);
    s_engine_reply (0, requests[0], true);
    s_engine_reply (1, requests[1], true);
    size_t seen = 0;
    bn_msg_t *reply = s_client_recv ();
    json_t *md = bn_msg_metadata (reply);
    ck_assert (json_is_true (json_object_get (md, BN_BCAST_PARTIAL)));
    seen += json_array_size (json_object_get (md, "broadcast_targets"));
    bn_msg_destroy (&reply);
    s_engine_reply (2, requests[2], true);
    s_engine_reply (3, requests[3], true);
    while (seen < S_ENGINES) {
        reply = s_client_recv ();
        md = bn_msg_metadata (reply);
        seen += json_array_size (json_object_get (md, "broadcast_targets"));
        ck_assert_int_eq (json_is_true (json_object_get (md, BN_BCAST_PARTIAL)),
                          seen < S_ENGINES);
        bn_msg_destroy (&reply);
    }
    ck_assert_uint_eq (seen, S_ENGINES);
    free (original);
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

START_TEST (test_flow_control)
{
    //  with a high-water mark of 4, the tree holds 4 requests in flight;
    //  the others wait until one completes, and none is lost
    s_start (1, "controller.hwm=4");
    const int one[] = {0, -1};
    char *ids[10];
    for (int i = 0; i < 10; i++)
        ids[i] = s_broadcast (true, one, NULL);
    int answered = 0;
    while (answered < 10) {
        bn_msg_t *held[10];
        int n = 0;
        while (n < 10) {
            bn_msg_t *request = t_recv_within (s_engines[0]->shell, 200);
            if (!request)
                break;
            held[n++] = request;
        }
        ck_assert_int_gt (n, 0);
        ck_assert_int_le (n, 4);
        for (int i = 0; i < n; i++)
            s_engine_reply (0, held[i], true);
        answered += n;
    }
    for (int i = 0; i < 10; i++) {
        bn_msg_t *reply = s_client_recv ();
        ck_assert_str_eq (t_content_str (reply, "status"), "ok");
        bn_msg_destroy (&reply);
        free (ids[i]);
    }
    ck_assert_int_eq (t_stat (s_ctl, "broadcast", "requests"), 0);
    s_stop ();
}
END_TEST

//  The node's thread stops in the monitor's request hook, which runs
//  before the request is dispatched, until the test has queued commands
//  on the node's pipe (arg: the hook's PAIR socket, node side).
static void
s_pause_in_dispatch (void *arg, const char *queue, bn_msg_t *request,
                     const char *engine_uuid)
{
    zsock_t *hook = (zsock_t *)arg;
    zstr_send (hook, "dispatching");
    char *go = zstr_recv (hook);
    zstr_free (&go);
}

//  A one-engine broadcast whose engine is added and removed on the leaf's
//  pipe while the leaf dispatches it: the leaf reads both commands before
//  it routes the request, the engine is gone, and the client gets an
//  EngineError for it; the node is unharmed and holds no request.
START_TEST (test_engine_gone_during_dispatch)
{
    char up[64], down[64], hook_endpoint[64];
    snprintf (up, sizeof up, "inproc://node-up-%d", getpid ());
    snprintf (down, sizeof down, "inproc://node-down-%d", getpid ());
    snprintf (hook_endpoint, sizeof hook_endpoint, "inproc://node-hook-%d",
              getpid ());
    zsock_t *hook_node = t_sock (ZMQ_PAIR, NULL);
    zsock_t *hook = t_sock (ZMQ_PAIR, NULL);
    ck_assert_int_eq (zsock_bind (hook_node, "%s", hook_endpoint), 0);
    ck_assert_int_eq (zsock_connect (hook, "%s", hook_endpoint), 0);
    bn_monitor_t monitor = {.request = s_pause_in_dispatch, .arg = hook_node};
    //  depth 0: the root is the leaf
    char err[256] = "";
    bn_topology_t *topology = bn_topology_new ("kary:2", 0, 0, err, sizeof err);
    ck_assert_ptr_nonnull (topology);
    bn_bcast_node_args_t args = {.topology = topology,
                                 .key = "node-key",
                                 .up_endpoint = up,
                                 .down_endpoint = down,
                                 .monitor = &monitor};
    zactor_t *node = zactor_new (bn_bcast_node_actor, &args);
    ck_assert_ptr_nonnull (node);
    ck_assert_int_eq (args.status, 0);
    bn_session_t *session = bn_session_new ("node-key", NULL);
    zsock_t *client = t_sock (ZMQ_DEALER, "client");
    ck_assert_int_eq (zsock_connect (client, "%s", up), 0);

    const char *uuid = "engine-0";
    bn_msg_t *msg = t_msg (session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    bn_msg_set_metadata (msg,
                         json_pack ("{s:[[s, i]], s:b, s:b}", "targets", uuid,
                                    0, "is_broadcast", 1, "is_coalescing", 1));
    bn_msg_add_buffer (msg, "payload", 7);
    char *original = strdup (bn_msg_id (msg));
    t_send (&msg, client, session);
    char *dispatching = zstr_recv (hook);
    ck_assert_str_eq (dispatching, "dispatching");
    zstr_free (&dispatching);
    zstr_sendx (node, "ENGINE_ADD", uuid, "0", NULL);
    zstr_sendx (node, "ENGINE_REMOVE", uuid, NULL);
    zstr_send (hook, "go");

    bn_msg_t *reply = t_recv (client);
    ck_assert_msg (reply != NULL, "no reply to the broadcast");
    ck_assert_int_eq (bn_msg_verify (reply, session, true), 0);
    ck_assert_str_eq (t_metadata_str (reply, "original_msg_id"), original);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    json_t *targets =
        json_object_get (bn_msg_metadata (reply), "broadcast_targets");
    ck_assert_uint_eq (json_array_size (targets), 1);
    ck_assert_str_eq (
        json_string_value (json_array_get (json_array_get (targets, 0), 0)),
        uuid);
    bn_msg_destroy (&reply);
    ck_assert_ptr_null (t_recv_within (client, 50));

    zstr_send (node, "STATS");
    char *text = zstr_recv (node);
    json_t *stats = text ? json_loads (text, 0, NULL) : NULL;
    ck_assert_ptr_nonnull (stats);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "requests")),
                      0);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "engines")),
                      0);
    json_decref (stats);
    zstr_free (&text);

    free (original);
    zsock_destroy (&client);
    bn_session_destroy (&session);
    zactor_destroy (&node);
    bn_topology_destroy (&topology);
    zsock_destroy (&hook);
    zsock_destroy (&hook_node);
}
END_TEST

//  An inner node given a target its subtree does not serve (a parent
//  that split by another tree) sends each child only its own targets and
//  fails the stranger at once with an EngineError.
START_TEST (test_target_from_another_subtree)
{
    //  kary:2 depth 2: node 1 (sub_scheduler_00) has children 3 and 4,
    //  leaves 0 and 1; engine 2 is served by leaf 2, under node 2
    char err[256] = "";
    bn_topology_t *topology = bn_topology_new ("kary:2", 2, 0, err, sizeof err);
    ck_assert_ptr_nonnull (topology);
    char up[64], down[64];
    snprintf (up, sizeof up, "inproc://inner-up-%d", getpid ());
    snprintf (down, sizeof down, "inproc://inner-down-%d", getpid ());
    zsock_t *parent = t_sock (ZMQ_ROUTER, "sub_scheduler_0");
    ck_assert_int_eq (zsock_bind (parent, "%s", up), 0);
    bn_bcast_node_args_t args = {.topology = topology,
                                 .node = 1,
                                 .key = "node-key",
                                 .up_endpoint = up,
                                 .down_endpoint = down};
    zactor_t *node = zactor_new (bn_bcast_node_actor, &args);
    ck_assert_ptr_nonnull (node);
    ck_assert_int_eq (args.status, 0);
    zsock_t *children[2];
    for (int c = 0; c < 2; c++) {
        children[c] = t_sock (
            ZMQ_DEALER, bn_topology_routing_id (topology, c == 0 ? 3 : 4));
        ck_assert_int_eq (zsock_connect (children[c], "%s", down), 0);
    }
    //  the parent can route to the node once it has connected
    zsock_set_router_mandatory (parent, 1);
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (zmq_send (zsock_resolve (parent), "sub_scheduler_00", 16,
                     ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        ck_assert_msg (zclock_mono () < end, "the node did not connect");
        zclock_sleep (5);
    }
    zmq_send (zsock_resolve (parent), "probe", 5, 0);

    bn_session_t *session = bn_session_new ("node-key", NULL);
    bn_msg_t *msg =
        t_msg (session, BN_MSG_APPLY_REQUEST, NULL, "sub_scheduler_00");
    bn_msg_set_metadata (msg,
                         json_pack ("{s:[[s, i], [s, i], [s, i]], s:b, s:b}",
                                    "targets", "e0", 0, "e2", 2, "e1", 1,
                                    "is_broadcast", 1, "is_coalescing", 0));
    char *original = strdup (bn_msg_id (msg));
    t_send (&msg, parent, session);
    const char *expected[2] = {"e0", "e1"};
    for (int c = 0; c < 2; c++) {
        bn_msg_t *request = t_recv (children[c]);
        ck_assert_msg (request != NULL, "child %d got no request", c);
        json_t *targets =
            json_object_get (bn_msg_metadata (request), "targets");
        ck_assert_uint_eq (json_array_size (targets), 1);
        ck_assert_str_eq (
            json_string_value (json_array_get (json_array_get (targets, 0), 0)),
            expected[c]);
        bn_msg_destroy (&request);
    }
    //  each child's pairs go as the request wrote them, with the other
    //  keys of its metadata
    msg = t_msg (session, BN_MSG_APPLY_REQUEST, NULL, "sub_scheduler_00");
    const char *written =
        "{\"is_broadcast\": true, \"targets\": [[\"e\\u0030\", -0, {\"k\": "
        "[1]}], [\"e1\", 1]], \"is_coalescing\": false, \"x\": [1, 2]}";
    ck_assert_int_eq (
        bn_msg_set_part_raw (msg, BN_PART_METADATA, written, strlen (written)),
        0);
    char *second = strdup (bn_msg_id (msg));
    t_send (&msg, parent, session);
    for (int c = 0; c < 2; c++) {
        bn_msg_t *request = t_recv (children[c]);
        ck_assert_msg (request != NULL, "child %d got no request", c);
        json_t *md = bn_msg_metadata (request);
        json_t *want = c == 0 ? json_pack ("[[s, i, {s:[i]}]]", "e0", 0, "k", 1)
                              : json_pack ("[[s, i]]", "e1", 1);
        ck_assert (json_equal (json_object_get (md, "targets"), want));
        json_decref (want);
        want = json_pack ("[i, i]", 1, 2);
        ck_assert (json_equal (json_object_get (md, "x"), want));
        json_decref (want);
        ck_assert (json_is_true (json_object_get (md, "is_broadcast")));
        ck_assert_str_eq (
            json_string_value (json_object_get (md, "original_msg_id")),
            second);
        bn_msg_destroy (&request);
    }
    free (second);

    bn_msg_t *reply = t_recv (parent);
    ck_assert_msg (reply != NULL, "no EngineError for engine 2");
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    ck_assert_ptr_nonnull (strstr (t_content_str (reply, "evalue"),
                                   "not served by this broadcast tree"));
    char parent_id[256];
    snprintf (parent_id, sizeof parent_id, "%s_e2", original);
    ck_assert_str_eq (bn_msg_parent_id (reply), parent_id);
    bn_msg_destroy (&reply);

    free (original);
    bn_session_destroy (&session);
    for (int c = 0; c < 2; c++)
        zsock_destroy (&children[c]);
    zactor_destroy (&node);
    zsock_destroy (&parent);
    bn_topology_destroy (&topology);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_bcast_node");
    TCase *tc = tcase_create ("tree");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_output_in_reply);
    tcase_add_test (tc, test_engine_connects_late);
    tcase_add_loop_test (tc, test_depths, 0, 4);
    tcase_add_loop_test (tc, test_folded, 0, 8);
    tcase_add_loop_test (tc, test_binomial_order, 0, 2);
    tcase_add_test (tc, test_split);
    tcase_add_test (tc, test_errors_keep_alignment);
    tcase_add_test (tc, test_one_leaf_passed_on);
    tcase_add_test (tc, test_header_as_sent);
    tcase_add_test (tc, test_engine_lost);
    tcase_add_test (tc, test_deadline);
    tcase_add_test (tc, test_deadline_far);
    tcase_add_test (tc, test_bad_requests);
    tcase_add_test (tc, test_group);
    tcase_add_test (tc, test_group_failure);
    tcase_add_test (tc, test_reduce);
    tcase_add_test (tc, test_levels_and_timestamps);
    tcase_add_test (tc, test_release_none);
    tcase_add_test (tc, test_release_window);
    tcase_add_test (tc, test_flow_control);
    tcase_add_test (tc, test_engine_gone_during_dispatch);
    tcase_add_test (tc, test_target_from_another_subtree);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

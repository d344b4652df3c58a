/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_bcast_view: libbanyan's broadcast view through the real tree
    (banyan-controller's broadcast nodes, threads mode) to banyan engines,
    all run in this process as actors: the same results as the direct
    view at depth 0 to 3, output in the reply by default, per-level modes,
    grouping, reductions, window release, deadlines and per-hop
    timestamps.  */
#include "bn_clustertest.h"

#include <check.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_ENGINES 5  //  engines of every cluster (fewer than 8 leaves)
#define S_TIMEOUT 20 //  seconds any wait of a test may take

static t_cluster_t s_cluster;

//  A controller whose tree has depth (kary:2) with S_ENGINES engines,
//  folded into its root (doc/broadcast.md) or running as its shape says.
static void
s_start_tree (int depth, bool fold)
{
    char text[16];
    snprintf (text, sizeof text, "%d", depth);
    t_cluster_start (&s_cluster, "bn-check-cluster-bcast-view", S_ENGINES,
                     "controller.heartbeat_misses", "50", "controller.depth",
                     text, "controller.fold", fold ? "8" : "0", NULL);
}

static void
s_start_cluster (int depth)
{
    s_start_tree (depth, false);
}

static void
s_stop_cluster (void)
{
    t_cluster_stop (&s_cluster);
}

static bn_client_t *
s_client (void)
{
    return t_cluster_client (&s_cluster, S_ENGINES);
}

//  The index of engine id's item in result.
static size_t
s_index_of (bn_result_t *result, int id)
{
    for (size_t i = 0; i < bn_result_count (result); i++)
        if (bn_result_engine_id (result, i) == id)
            return i;
    ck_abort_msg ("no item for engine %d", id);
    return 0;
}

//  The two results hold the same outcome for every engine.
static void
s_assert_same (bn_result_t *direct, bn_result_t *bcast, const char *what)
{
    ck_assert_uint_eq (bn_result_count (direct), bn_result_count (bcast));
    for (size_t i = 0; i < bn_result_count (direct); i++) {
        int id = bn_result_engine_id (direct, i);
        size_t j = s_index_of (bcast, id);
        ck_assert_msg (
            bn_result_status (direct, i) == bn_result_status (bcast, j),
            "%s: engine %d: status %d, broadcast %d", what, id,
            bn_result_status (direct, i), bn_result_status (bcast, j));
        ck_assert_str_eq (bn_result_stdout (direct, i),
                          bn_result_stdout (bcast, j));
        ck_assert_str_eq (bn_result_stderr (direct, i),
                          bn_result_stderr (bcast, j));
        const bn_value_t *a = bn_result_value (direct, i);
        const bn_value_t *b = bn_result_value (bcast, j);
        ck_assert_msg ((!a && !b) || (a && b && bn_value_equal (a, b)),
                       "%s: engine %d: different values", what, id);
        const char *ea = bn_result_ename (direct, i);
        const char *eb = bn_result_ename (bcast, j);
        ck_assert_str_eq (ea ? ea : "-", eb ? eb : "-");
        const char *va = bn_result_evalue (direct, i);
        const char *vb = bn_result_evalue (bcast, j);
        ck_assert_str_eq (va ? va : "-", vb ? vb : "-");
    }
}

//  Run code (execute) or echo(engine's x) (apply) on view.
static bn_result_t *
s_run (bn_view_t *view, bool apply)
{
    bn_result_t *result = NULL;
    if (apply) {
        bn_value_t *names = bn_value_new_str ("x");
        ck_assert_int_eq (bn_view_pull (view, names, &result), 0);
        bn_value_destroy (&names);
    } else
        ck_assert_int_eq (
            bn_view_execute (view,
                             "echo out $BANYAN_ENGINE_ID; echo err >&2; "
                             "exit $((BANYAN_ENGINE_ID % 3))",
                             &result),
            0);
    bn_result_wait (result, S_TIMEOUT);
    ck_assert (bn_result_ready (result));
    return result;
}

//  Every engine gets x = its id * 10.
static void
s_push_ids (bn_client_t *client)
{
    for (int id = 0; id < S_ENGINES; id++) {
        bn_view_t *one = bn_view_new (client, BN_VIEW_DIRECT);
        ck_assert_int_eq (bn_view_set_target_list (one, &id, 1), 0);
        bn_value_t *ns = bn_value_new_dict ();
        ck_assert_int_eq (bn_value_dict_set (ns, bn_value_new_str ("x"),
                                             bn_value_new_int (id * 10)),
                          0);
        bn_result_t *result;
        ck_assert_int_eq (bn_view_push (one, ns, &result), 0);
        ck_assert_int_eq (bn_result_get (result, S_TIMEOUT), 0);
        bn_result_destroy (&result);
        bn_value_destroy (&ns);
        bn_view_destroy (&one);
    }
}

//  Depths 0 ... 3, then 1 and 2 folded.
START_TEST (test_same_as_direct)
{
    int depth = _i < 4 ? _i : _i - 3;
    s_start_tree (depth, _i >= 4);
    bn_client_t *client = s_client ();
    s_push_ids (client);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_view_t *bcast = bn_view_new (client, BN_VIEW_BROADCAST);
    for (int apply = 0; apply < 2; apply++) {
        bn_result_t *expected = s_run (direct, apply);
        //  forwarded, merged, merged with output in the reply
        for (int mode = 0; mode < 3; mode++) {
            ck_assert_int_eq (bn_view_set_coalescing (bcast, mode > 0), 0);
            ck_assert_int_eq (bn_view_set_output_in_reply (bcast, mode == 2),
                              0);
            bn_result_t *result = s_run (bcast, apply);
            char what[64];
            snprintf (what, sizeof what, "depth %d%s, %s, mode %d", depth,
                      _i >= 4 ? " folded" : "", apply ? "apply" : "execute",
                      mode);
            s_assert_same (expected, result, what);
            //  Merged: one message for the whole request
            ck_assert_uint_eq (bn_result_messages (result),
                               mode ? 1 : S_ENGINES);
            bn_result_destroy (&result);
        }
        bn_result_destroy (&expected);
    }
    bn_view_destroy (&bcast);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Messages the controller's iopub relay has received so far.
static json_int_t
s_iopub_received (bn_client_t *client)
{
    char *text = NULL;
    ck_assert_int_eq (bn_client_stats (client, S_TIMEOUT, &text), 0);
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    ck_assert_ptr_nonnull (stats);
    json_int_t received = json_integer_value (
        json_object_get (json_object_get (stats, "iopub"), "received"));
    json_decref (stats);
    return received;
}

//  By default a broadcast to banyan engines (which say at registration
//  that they can) asks for output in the reply: the engines publish
//  nothing on iopub, and results and output are as the direct view's;
//  asked not to, they publish it there.
START_TEST (test_default_output_in_reply)
{
    s_start_cluster (1);
    bn_client_t *client = s_client ();
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_view_t *bcast = bn_view_new (client, BN_VIEW_BROADCAST);
    for (int coalescing = 0; coalescing < 2; coalescing++) {
        ck_assert_int_eq (bn_view_set_coalescing (bcast, coalescing), 0);
        bn_result_t *expected = s_run (direct, false);
        json_int_t before = s_iopub_received (client);
        bn_result_t *result = s_run (bcast, false);
        s_assert_same (expected, result, "default");
        ck_assert_int_eq (s_iopub_received (client), before);
        bn_result_destroy (&result);

        ck_assert_int_eq (bn_view_set_output_in_reply (bcast, false), 0);
        result = s_run (bcast, false);
        s_assert_same (expected, result, "by iopub");
        ck_assert_int_gt (s_iopub_received (client), before);
        bn_result_destroy (&result);
        bn_result_destroy (&expected);
        bn_view_destroy (&bcast);
        bcast = bn_view_new (client, BN_VIEW_BROADCAST);
    }
    bn_view_destroy (&bcast);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Leaves merge, the levels above forward: one message per leaf that had
//  targets.
START_TEST (test_levels)
{
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    s_push_ids (client);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    ck_assert_int_eq (bn_view_set_levels (view, levels, 3), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    bn_result_t *result = s_run (view, true);
    ck_assert_int_eq (bn_result_get (result, 0), 0);
    //  5 engines on 4 leaves (engine e on leaf e % 4)
    ck_assert_uint_eq (bn_result_messages (result), 4);
    for (size_t i = 0; i < bn_result_count (result); i++)
        ck_assert_int_eq (bn_value_int (bn_result_value (result, i)),
                          bn_result_engine_id (result, i) * 10);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Grouping at the nodes: two outputs, two groups, every item filled
START_TEST (test_groups)
{
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    ck_assert_int_eq (bn_view_set_group (view, true), 0);
    bn_result_t *result;
    ck_assert_int_eq (
        bn_view_execute (view, "echo $((BANYAN_ENGINE_ID % 2))", &result), 0);
    ck_assert_int_eq (bn_result_get (result, S_TIMEOUT), 0);
    ck_assert_uint_eq (bn_result_messages (result), 1);
    ck_assert_uint_eq (bn_result_group_count (result), 2);
    for (size_t g = 0; g < 2; g++) {
        char *text = bn_idset_encode (bn_result_group_engines (result, g));
        ck_assert_str_eq (text, g == 0 ? "0,2,4" : "1,3");
        free (text);
    }
    for (size_t i = 0; i < bn_result_count (result); i++) {
        int id = bn_result_engine_id (result, i);
        ck_assert_str_eq (bn_result_stdout (result, i), id % 2 ? "1\n" : "0\n");
        ck_assert_int_eq (bn_result_group_of (result, i), id % 2);
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Reductions of x = 0, 10, 20, 30, 40 at every merging level, and
//  partial ones (a forwarding root) combined by the client.
START_TEST (test_reductions)
{
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    s_push_ids (client);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    const char *ops[] = {"sum", "min", "max"};
    int64_t expected[] = {100, 0, 40};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq (bn_view_set_reduce (view, ops[k]), 0);
        bn_result_t *result = s_run (view, true);
        ck_assert_int_eq (bn_result_get (result, 0), 0);
        ck_assert_msg (bn_result_reduced (result) != NULL, "%s: no value",
                       ops[k]);
        ck_assert_int_eq (bn_value_int (bn_result_reduced (result)),
                          expected[k]);
        char *text = bn_idset_encode (bn_result_reduced_engines (result));
        ck_assert_str_eq (text, "0-4");
        free (text);
        ck_assert_uint_eq (bn_idset_count (bn_result_reduced_failed (result)),
                           0);
        bn_result_destroy (&result);
    }
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    ck_assert_int_eq (bn_view_set_reduce (view, "sum"), 0);
    ck_assert_int_eq (bn_view_set_levels (view, levels, 3), 0);
    bn_result_t *result = s_run (view, true);
    ck_assert_int_eq (bn_result_get (result, 0), 0);
    ck_assert_uint_eq (bn_result_reduced_count (result), 4);
    ck_assert_int_eq (bn_value_int (bn_result_reduced (result)), 100);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Engine 0 waits for the file go in the profile folder (the test
//  creates it), so what comes first does not depend on timing.
static void
s_waiting_code (char *go, size_t gosize, char *code, size_t codesize)
{
    snprintf (go, gosize, "%s/go", s_cluster.dir);
    snprintf (code, codesize,
              "if [ $BANYAN_ENGINE_ID = 0 ]; then while [ ! -e %s ]; do "
              "sleep 0.02; done; fi; echo $BANYAN_ENGINE_ID",
              go);
}

static void
s_touch (const char *path)
{
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fclose (file);
}

//  Window release streams what has arrived
START_TEST (test_window_release)
{
    s_start_cluster (1);
    bn_client_t *client = s_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    ck_assert_int_eq (bn_view_set_release (view, BN_RELEASE_WINDOW, 50), 0);
    char go[300], code[400];
    s_waiting_code (go, sizeof go, code, sizeof code);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, code, &result), 0);
    //  Every engine but 0 comes first
    for (int k = 0; k < S_ENGINES - 1; k++) {
        int index = bn_result_next (result, S_TIMEOUT);
        ck_assert_int_ge (index, 0);
        ck_assert_int_ne (bn_result_engine_id (result, (size_t)index), 0);
    }
    ck_assert (!bn_result_ready (result));
    ck_assert_int_eq (bn_result_status (result, s_index_of (result, 0)),
                      BN_ENOTREADY);
    s_touch (go);
    int index = bn_result_next (result, S_TIMEOUT);
    ck_assert_int_ge (index, 0);
    ck_assert_int_eq (bn_result_engine_id (result, (size_t)index), 0);
    ck_assert_int_eq (bn_result_get (result, 0), 0);
    ck_assert_uint_ge (bn_result_messages (result), 2);
    ck_assert_str_eq (bn_result_stdout (result, (size_t)index), "0\n");
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  A deadline: engine 0 (waiting for a file) is reported, the others
//  delivered (within 3 s: they answer at once, but the machine may be
//  busy)
START_TEST (test_deadline)
{
    s_start_cluster (1);
    bn_client_t *client = s_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    ck_assert_int_eq (bn_view_set_deadline_ms (view, 3000), 0);
    char go[300], code[400];
    s_waiting_code (go, sizeof go, code, sizeof code);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, code, &result), 0);
    ck_assert_int_eq (bn_result_get (result, S_TIMEOUT), BN_EENGINEDIED);
    size_t zero = s_index_of (result, 0);
    ck_assert_str_eq (bn_result_ename (result, zero), "EngineError");
    for (size_t i = 0; i < bn_result_count (result); i++)
        if (i != zero) {
            ck_assert_int_eq (bn_result_status (result, i), 0);
            ck_assert_str_ne (bn_result_stdout (result, i), "");
        }
    bn_result_destroy (&result);
    s_touch (go);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Per-hop timestamps: at depth 2 a merged reply names every node it
//  passed through, the root last: 4 leaves (5 engines), 2 inner nodes.
START_TEST (test_hops)
{
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_timestamps (view, true), 0);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "true", &result), 0);
    ck_assert_int_eq (bn_result_get (result, S_TIMEOUT), 0);
    for (size_t i = 0; i < bn_result_count (result); i++) {
        int id = bn_result_engine_id (result, i);
        ck_assert_uint_eq (bn_result_hop_count (result, i), 7);
        const char *node, *received, *sent;
        ck_assert_int_eq (bn_result_hop (result, i, 6, &node, &received, &sent),
                          0);
        ck_assert_str_eq (node, "sub_scheduler_0");
        ck_assert_ptr_nonnull (received);
        ck_assert_ptr_nonnull (sent);
        ck_assert_int_eq (bn_result_hop (result, i, 7, &node, NULL, NULL),
                          BN_EINVAL);
        //  Engine id's leaf is among them: sub_scheduler_0 + 2 bits
        char leaf[32];
        snprintf (leaf, sizeof leaf, "sub_scheduler_0%d%d", (id % 4) / 2,
                  id % 2);
        bool seen = false;
        for (size_t hop = 0; hop < 6; hop++) {
            ck_assert_int_eq (bn_result_hop (result, i, hop, &node, NULL, NULL),
                              0);
            seen |= strcmp (node, leaf) == 0;
        }
        ck_assert_msg (seen, "no hop of %s", leaf);
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_bcast_view");
    TCase *tc = tcase_create ("tree");
    tcase_set_timeout (tc, 90);
    tcase_add_loop_test (tc, test_same_as_direct, 0, 6);
    tcase_add_test (tc, test_default_output_in_reply);
    tcase_add_test (tc, test_levels);
    tcase_add_test (tc, test_groups);
    tcase_add_test (tc, test_reductions);
    tcase_add_test (tc, test_window_release);
    tcase_add_test (tc, test_deadline);
    tcase_add_test (tc, test_hops);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

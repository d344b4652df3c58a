/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_stats: the controller's counters as a client reads them
    (bn_client_stats, banyan's bn_stats_request) from an in-process
    cluster, with the broadcast tree's nodes as threads and as
    banyan-scheduler processes: each actor's counters follow what the
    client did.  */
#include "bn_clustertest.h"

#include <check.h>
#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define S_ENGINES 4

static t_cluster_t s_cluster;

//  A counter of the tree's node (0 the root, then in node order).
static json_int_t
s_node_stat (json_t *stats, size_t node, const char *counter)
{
    json_t *nodes =
        json_object_get (json_object_get (stats, "broadcast"), "nodes");
    json_t *value = json_object_get (json_array_get (nodes, node), counter);
    ck_assert_msg (json_is_integer (value), "node %zu has no counter %s", node,
                   counter);
    return json_integer_value (value);
}

//  Run code on view count times, each to completion.
static void
s_run (bn_view_t *view, const char *code, int count)
{
    for (int i = 0; i < count; i++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_execute (view, code, &result), 0);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        bn_result_destroy (&result);
    }
}

START_TEST (test_usage)
{
    t_cluster_start (&s_cluster, "bn-check-cluster-stats", S_ENGINES,
                     "controller.depth", "1", "controller.fold", "0", NULL);
    bn_client_t *client = t_cluster_client (&s_cluster, S_ENGINES);

    //  one object per actor; the tree of depth 1 lists its three nodes
    json_t *before = t_client_stats (client);
    t_assert_actors (before, 3);
    ck_assert_int_eq (t_counter (before, "hub", "registrations"), S_ENGINES);
    ck_assert_int_eq (t_counter (before, "hub", "engines"), S_ENGINES);

    //  3 broadcasts, 2 direct executes and a task
    bn_view_t *broadcast = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_view_set_coalescing (broadcast, true);
    s_run (broadcast, "true", 3);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    s_run (direct, "true", 2);
    bn_view_t *balanced = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    s_run (balanced, "true", 1);

    json_t *after = t_client_stats (client);
    //  the root got each broadcast once and passed it to its two leaves,
    //  which sent a copy to each of their engines and merged the replies
    ck_assert_int_eq (s_node_stat (after, 0, "received") -
                          s_node_stat (before, 0, "received"),
                      3);
    ck_assert_int_eq (s_node_stat (after, 0, "to_children") -
                          s_node_stat (before, 0, "to_children"),
                      3 * 2);
    json_int_t copies = 0;
    for (size_t leaf = 1; leaf <= 2; leaf++) {
        ck_assert_int_eq (s_node_stat (after, leaf, "received") -
                              s_node_stat (before, leaf, "received"),
                          3);
        copies += s_node_stat (after, leaf, "to_engines") -
                  s_node_stat (before, leaf, "to_engines");
    }
    ck_assert_int_eq (copies, 3 * S_ENGINES);
    //  the mux relayed a request to and a reply from each engine, twice
    ck_assert_int_eq (t_counter (after, "mux", "received") -
                          t_counter (before, "mux", "received"),
                      2 * 2 * S_ENGINES);
    ck_assert_int_eq (t_counter (after, "mux", "forwarded") -
                          t_counter (before, "mux", "forwarded"),
                      2 * 2 * S_ENGINES);
    //  the task scheduler: the task and its reply in, one of each out
    ck_assert_int_eq (t_counter (after, "task", "received") -
                          t_counter (before, "task", "received"),
                      2);
    ck_assert_int_eq (t_counter (after, "task", "submitted") -
                          t_counter (before, "task", "submitted"),
                      1);
    //  the query itself is a hub query; nothing was dropped anywhere
    ck_assert_int_eq (t_counter (after, "hub", "queries") -
                          t_counter (before, "hub", "queries"),
                      1);
    ck_assert_int_eq (t_counter (after, "mux", "bad_signature"), 0);
    ck_assert_int_eq (s_node_stat (after, 0, "bad_signature"), 0);
    json_decref (before);
    json_decref (after);

    //  the controller's own view of them is the same
    zstr_send (s_cluster.controller, "STATS");
    char *text = zstr_recv (s_cluster.controller);
    json_t *own = json_loads (text, 0, NULL);
    zstr_free (&text);
    ck_assert_int_eq (t_counter (own, "mux", "received"),
                      t_client_stat (client, "mux", "received"));
    json_decref (own);

    ck_assert_int_eq (bn_client_stats (client, 10, NULL), BN_EINVAL);
    ck_assert_int_eq (bn_client_stats (NULL, 10, &text), BN_EINVAL);
    bn_view_destroy (&balanced);
    bn_view_destroy (&direct);
    bn_view_destroy (&broadcast);
    bn_client_destroy (&client);
    t_cluster_stop (&s_cluster);
}
END_TEST

START_TEST (test_processes)
{
    //  the nodes' counters come from their banyan-scheduler processes
    t_cluster_start (&s_cluster, "bn-check-cluster-stats", S_ENGINES,
                     "controller.depth", "1", "controller.tree_mode",
                     "processes", "controller.scheduler_path",
                     BN_BUILD_DIR "/bin/banyan-scheduler", NULL);
    bn_client_t *client = t_cluster_client (&s_cluster, S_ENGINES);
    bn_view_t *broadcast = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_view_set_coalescing (broadcast, true);
    s_run (broadcast, "true", 2);
    json_t *stats = t_client_stats (client);
    json_t *tree = json_object_get (stats, "broadcast");
    ck_assert_str_eq (json_string_value (json_object_get (tree, "mode")),
                      "processes");
    ck_assert_int_eq (t_counter (stats, "broadcast", "requests"), 0);
    json_t *nodes = json_object_get (tree, "nodes");
    ck_assert_uint_eq (json_array_size (nodes), 3);
    for (size_t node = 0; node < 3; node++) {
        json_t *entry = json_array_get (nodes, node);
        ck_assert_int_gt (s_node_stat (stats, node, "pid"), 0);
        ck_assert_str_eq (json_string_value (json_object_get (entry, "state")),
                          "ready");
        ck_assert_int_eq (s_node_stat (stats, node, "restarts"), 0);
        ck_assert_int_eq (s_node_stat (stats, node, "received"), 2);
    }
    ck_assert_int_eq (s_node_stat (stats, 1, "to_engines") +
                          s_node_stat (stats, 2, "to_engines"),
                      2 * S_ENGINES);
    //  a banyan-scheduler leaf takes no shared broadcast connection
    ck_assert_int_eq (
        s_node_stat (stats, 1, "shared") + s_node_stat (stats, 2, "shared"), 0);
    json_decref (stats);
    bn_view_destroy (&broadcast);
    bn_client_destroy (&client);
    t_cluster_stop (&s_cluster);
}
END_TEST

//  A cluster of S_ENGINES engines in one process, the tree of depth 1
//  folded or not, with a high-water mark or not, the engines offering to
//  share a broadcast connection or not: every
//  engine answers a broadcast with its own output, and the nodes
//  that serve engines reach shared of them through the process's shared
//  connection (doc/wire.md 4.1).
static void
s_shared (const char *fold, const char *share, const char *hwm,
          json_int_t shared)
{
    t_cluster_start (&s_cluster, "bn-check-cluster-stats", S_ENGINES,
                     "controller.depth", "1", "controller.fold", fold,
                     "engine.share_broadcast", share, "controller.hwm", hwm,
                     NULL);
    bn_client_t *client = t_cluster_client (&s_cluster, S_ENGINES);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_view_set_coalescing (view, true);
    for (int round = 0; round < 3; round++) {
        bn_result_t *result;
        ck_assert_int_eq (
            bn_view_execute (view, "echo engine $BANYAN_ENGINE_ID", &result),
            0);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_uint_eq (bn_result_count (result), S_ENGINES);
        bool seen[S_ENGINES] = {false};
        for (size_t i = 0; i < S_ENGINES; i++) {
            int id = bn_result_engine_id (result, i);
            ck_assert (id >= 0 && id < S_ENGINES && !seen[id]);
            seen[id] = true;
            char expected[32];
            snprintf (expected, sizeof expected, "engine %d\n", id);
            ck_assert_str_eq (bn_result_stdout (result, i), expected);
        }
        bn_result_destroy (&result);
    }
    json_t *stats = t_client_stats (client);
    size_t nodes = json_array_size (
        json_object_get (json_object_get (stats, "broadcast"), "nodes"));
    json_int_t through = 0, copies = 0;
    for (size_t node = nodes == 1 ? 0 : 1; node < nodes; node++) {
        through += s_node_stat (stats, node, "shared");
        copies += s_node_stat (stats, node, "to_engines");
        ck_assert_int_eq (s_node_stat (stats, node, "stray"), 0);
        ck_assert_int_eq (s_node_stat (stats, node, "send_failed"), 0);
    }
    ck_assert_uint_eq (nodes, streq (fold, "0") ? 3 : 1);
    ck_assert_int_eq (through, shared);
    ck_assert_int_eq (copies, 3 * S_ENGINES);
    json_decref (stats);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    t_cluster_stop (&s_cluster);
}

START_TEST (test_shared_broadcast)
{
    s_shared ("8", "true", "0", S_ENGINES);
    s_shared ("0", "true", "0", S_ENGINES);
    s_shared ("8", "false", "0", 0);
    //  a high-water mark counts per connection: no sharing under one
    s_shared ("8", "true", "1000", 0);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_stats");
    TCase *tc = tcase_create ("in-process");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_processes);
    tcase_add_test (tc, test_shared_broadcast);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? 0 : 1;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_bcast: libbanyan's broadcast view through the tree of a
    controller actor, with banyan engines as actors in this process:
    the same results as the direct view at depths 0-3, coalescing and
    not; many requests in flight; and 10,000 broadcasts leaving no
    request tracked in any node.  */
#include "bn_clustertest.h"

#include <check.h>
#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_ENGINES 6

static t_cluster_t s_cluster;

//  A controller whose tree has depth (kary:2) with S_ENGINES engines.
static void
s_start_cluster (int depth)
{
    char text[16];
    snprintf (text, sizeof text, "%d", depth);
    t_cluster_start (&s_cluster, "bn-check-cluster-bcast", S_ENGINES,
                     "controller.heartbeat_misses", "1000", "controller.depth",
                     text, NULL);
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

//  Requests the tree's nodes hold, from the controller's counters.
static json_int_t
s_in_flight (void)
{
    zstr_send (s_cluster.controller, "STATS");
    char *text = zstr_recv (s_cluster.controller);
    ck_assert_ptr_nonnull (text);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    json_t *value =
        json_object_get (json_object_get (stats, "broadcast"), "requests");
    ck_assert (json_is_integer (value));
    json_int_t requests = json_integer_value (value);
    json_decref (stats);
    return requests;
}

static bn_value_t *
s_args1 (bn_value_t *value)
{
    bn_value_t *args = bn_value_new_tuple ();
    ck_assert_int_eq (bn_value_append (args, value), 0);
    return args;
}

//  Run an execute and an apply on view; the value and stdout of each
//  engine, indexed by engine id, go to out and out_text.
static void
s_collect (bn_view_t *view, char out_text[S_ENGINES][64],
           long values[S_ENGINES])
{
    bn_result_t *result;
    ck_assert_int_eq (
        bn_view_execute (view, "echo engine $BANYAN_ENGINE_ID", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_int_eq (bn_result_wait (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), S_ENGINES);
    for (size_t i = 0; i < S_ENGINES; i++) {
        int id = bn_result_engine_id (result, i);
        ck_assert (id >= 0 && id < S_ENGINES);
        const char *text = bn_result_stdout (result, i);
        snprintf (out_text[id], 64, "%s", text ? text : "(none)");
    }
    bn_result_destroy (&result);
    bn_value_t *args = s_args1 (bn_value_new_int (41));
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    bn_value_destroy (&args);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), S_ENGINES);
    for (size_t i = 0; i < S_ENGINES; i++) {
        int id = bn_result_engine_id (result, i);
        values[id] = (long)bn_value_int (bn_result_value (result, i)) + id;
    }
    bn_result_destroy (&result);
}

START_TEST (test_same_as_direct)
{
    int depth = _i;
    s_start_cluster (depth);
    bn_client_t *client = s_client ();
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    char direct_text[S_ENGINES][64];
    long direct_values[S_ENGINES];
    s_collect (direct, direct_text, direct_values);
    for (int coalescing = 0; coalescing < 2; coalescing++) {
        bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
        ck_assert_int_eq (bn_view_set_coalescing (view, coalescing), 0);
        char text[S_ENGINES][64];
        long values[S_ENGINES];
        s_collect (view, text, values);
        for (int e = 0; e < S_ENGINES; e++) {
            ck_assert_str_eq (text[e], direct_text[e]);
            ck_assert_int_eq (values[e], direct_values[e]);
        }
        bn_view_destroy (&view);
    }
    ck_assert_int_eq (s_in_flight (), 0);
    ck_assert_int_eq (t_client_stat (client, "broadcast", "requests"), 0);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_many_in_flight)
{
    //  64 broadcasts sent before any is collected
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    bn_result_t *results[64];
    for (int i = 0; i < 64; i++) {
        bn_value_t *args = s_args1 (bn_value_new_int (i));
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &results[i]),
                          0);
        bn_value_destroy (&args);
    }
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq (bn_result_get (results[i], 20), 0);
        for (size_t e = 0; e < S_ENGINES; e++)
            ck_assert_int_eq (bn_value_int (bn_result_value (results[i], e)),
                              i);
        bn_result_destroy (&results[i]);
    }
    ck_assert_int_eq (s_in_flight (), 0);
    ck_assert_int_eq (t_client_stat (client, "broadcast", "requests"), 0);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_memory_flat)
{
    //  10,000 broadcasts, coalescing and not, at depth 2, in windows of
    //  100 in flight: afterwards no node tracks any request
    s_start_cluster (2);
    bn_client_t *client = s_client ();
    bn_view_t *views[2];
    for (int k = 0; k < 2; k++) {
        views[k] = bn_view_new (client, BN_VIEW_BROADCAST);
        ck_assert_int_eq (bn_view_set_coalescing (views[k], k == 1), 0);
    }
    bn_value_t *args = s_args1 (bn_value_new_int (7));
    bn_result_t *window[100];
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 100; i++)
            ck_assert_int_eq (
                bn_view_apply (views[i % 2], "echo", args, NULL, &window[i]),
                0);
        for (int i = 0; i < 100; i++) {
            ck_assert_int_eq (bn_result_get (window[i], 30), 0);
            ck_assert_uint_eq (bn_result_count (window[i]), S_ENGINES);
            bn_result_destroy (&window[i]);
        }
    }
    ck_assert_int_eq (s_in_flight (), 0);
    ck_assert_int_eq (t_client_stat (client, "broadcast", "requests"), 0);
    bn_value_destroy (&args);
    for (int k = 0; k < 2; k++)
        bn_view_destroy (&views[k]);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_bcast");
    TCase *tc = tcase_create ("in-process");
    tcase_set_timeout (tc, 100);
    tcase_add_loop_test (tc, test_same_as_direct, 0, 4);
    tcase_add_test (tc, test_many_in_flight);
    tcase_add_test (tc, test_memory_flat);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

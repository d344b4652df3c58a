/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_clock: the wall clock jumps and nothing a user sees
    changes. This program replaces gettimeofday, time and clock_gettime's
    CLOCK_REALTIME for everything in it (the controller, its tree's nodes
    as threads, the engines and the client): every reading is an hour
    ahead, an hour behind or right, as if the clock were reset
    between any two readings. Broadcast deadlines, task timeouts,
    heartbeats and the client's waits run on the monotonic clock, so
    healthy engines answer, a slow engine fails at its deadline (not at
    once, not never), and every wait ends.  */
#define _GNU_SOURCE
#include "bn_clustertest.h"

#include <check.h>
#include <czmq.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define S_ENGINES 4
#define S_TIMEOUT 30 //  seconds any wait of a test may take
#define S_JUMP 3600  //  seconds the wall clock jumps

static atomic_uint s_readings;

//  The real clock, from the kernel (not through the functions below).
static int
s_real (clockid_t clock, struct timespec *ts)
{
    return (int)syscall (SYS_clock_gettime, clock, ts);
}

//  Seconds to add to the reading now: +S_JUMP, -S_JUMP or 0, in an order
//  that looks random (a plain cycle would only ever move forward between
//  two readings a few apart).
static time_t
s_jump (void)
{
    unsigned n = atomic_fetch_add (&s_readings, 1);
    return (time_t)((int)((n * 2654435761u) >> 16) % 3 - 1) * S_JUMP;
}

int
clock_gettime (clockid_t clock, struct timespec *ts)
{
    int rc = s_real (clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
        ts->tv_sec += s_jump ();
    return rc;
}

int
gettimeofday (struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime (CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return rc;
}

time_t
time (time_t *t)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}

//  Seconds on the real monotonic clock.
static double
s_now (void)
{
    struct timespec ts;
    s_real (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static t_cluster_t s_cluster;

static bn_client_t *
s_start (const char *depth)
{
    t_cluster_start (&s_cluster, "bn-check-cluster-clock", S_ENGINES,
                     "controller.heartbeat_misses", "10", "controller.depth",
                     depth, "controller.tree_deadline", "1500ms", NULL);
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

START_TEST (test_clock_is_real)
{
    //  the replacements are what this program's code calls
    struct timeval a, b;
    gettimeofday (&a, NULL);
    gettimeofday (&b, NULL);
    ck_assert (labs ((long)(a.tv_sec - b.tv_sec)) >= S_JUMP - 1);
    int64_t x = zclock_time (), y = zclock_time ();
    ck_assert (llabs ((long long)(x - y)) >= (S_JUMP - 1) * 1000ll);
}
END_TEST

START_TEST (test_broadcast_deadline)
{
    //  depth 2: the deadline crosses two levels of nodes, each reading
    //  the wall clock at another moment
    bn_client_t *client = s_start ("2");
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    //  healthy engines answer, every time
    for (int round = 0; round < 20; round++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_execute (view, "echo ok", &result), 0);
        int rc = bn_result_get (result, S_TIMEOUT);
        ck_assert_msg (
            rc == 0, "round %d: %s (%s)", round, bn_strerror (rc),
            bn_result_evalue (result, 0) ? bn_result_evalue (result, 0) : "");
        for (size_t i = 0; i < S_ENGINES; i++)
            ck_assert_str_eq (bn_result_stdout (result, i), "ok\n");
        bn_result_destroy (&result);
    }
    //  a slow engine fails at the deadline, the others are delivered
    double start = s_now ();
    bn_result_t *result;
    ck_assert_int_eq (
        bn_view_execute (
            view, "[ $BANYAN_ENGINE_ID -eq 3 ] && sleep 60; echo ok", &result),
        0);
    ck_assert_int_eq (bn_result_get (result, S_TIMEOUT), BN_EENGINEDIED);
    double took = s_now () - start;
    ck_assert_msg (took >= 1.4 && took < S_TIMEOUT, "took %.2f s", took);
    size_t slow = s_index_of (result, 3);
    ck_assert_str_eq (bn_result_ename (result, slow), "EngineError");
    ck_assert_ptr_nonnull (
        strstr (bn_result_evalue (result, slow), "within the deadline"));
    for (int id = 0; id < 3; id++)
        ck_assert_int_eq (bn_result_status (result, s_index_of (result, id)),
                          0);
    ck_assert_int_eq (bn_result_abort (result, S_TIMEOUT), 0);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    //  nobody was taken for dead meanwhile
    ck_assert_uint_eq (bn_client_engine_count (client), S_ENGINES);
    bn_client_destroy (&client);
    t_cluster_stop (&s_cluster);
}
END_TEST

START_TEST (test_task_timeout_and_waits)
{
    bn_client_t *client = s_start ("1");
    //  a load-balanced task times out after its timeout
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    int three = 3;
    ck_assert_int_eq (bn_view_set_target_list (lb, &three, 1), 0);
    //  (the engine takes one task at a time: the second waits)
    bn_result_t *busy;
    ck_assert_int_eq (bn_view_execute (lb, "sleep 60", &busy), 0);
    ck_assert_int_eq (bn_view_set_timeout (lb, 1.5), 0);
    double start = s_now ();
    bn_result_t *task;
    ck_assert_int_eq (bn_view_execute (lb, "echo late", &task), 0);
    ck_assert_int_eq (bn_result_get (task, S_TIMEOUT), BN_EREMOTE);
    double took = s_now () - start;
    ck_assert_msg (took >= 1.4 && took < S_TIMEOUT, "took %.2f s", took);
    ck_assert_str_eq (bn_result_ename (task, 0), "TaskTimeout");
    bn_result_destroy (&task);
    //  a client's wait lasts its time
    start = s_now ();
    ck_assert_int_eq (bn_result_wait (busy, 1.0), BN_ETIMEDOUT);
    took = s_now () - start;
    ck_assert_msg (took >= 0.95 && took < S_TIMEOUT, "took %.2f s", took);
    ck_assert_int_eq (bn_result_abort (busy, S_TIMEOUT), 0);
    ck_assert_int_eq (bn_result_get (busy, S_TIMEOUT), BN_EABORTED);
    bn_result_destroy (&busy);
    //  and the engine serves the next request
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (direct, &three, 1), 0);
    ck_assert_int_eq (bn_view_execute (direct, "echo next", &busy), 0);
    ck_assert_int_eq (bn_result_get (busy, S_TIMEOUT), 0);
    ck_assert_str_eq (bn_result_stdout (busy, 0), "next\n");
    bn_result_destroy (&busy);
    ck_assert_uint_eq (bn_client_engine_count (client), S_ENGINES);
    bn_view_destroy (&direct);
    bn_view_destroy (&lb);
    bn_client_destroy (&client);
    t_cluster_stop (&s_cluster);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("cluster_clock");
    TCase *tc = tcase_create ("clock");
    tcase_set_timeout (tc, 90);
    tcase_add_test (tc, test_clock_is_real);
    tcase_add_test (tc, test_broadcast_deadline);
    tcase_add_test (tc, test_task_timeout_and_waits);
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

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_client: libbanyan against banyan's own controller and
    engines, both run in this process as actors.  */
#include "banyan.h"
#include "bn_config.h"
#include "bn_controller.h"
#include "bn_engine_actor.h"

#include <check.h>
#include <czmq.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[256];        //  profile folder of the cluster
static char *s_engine_file;    //  its engine connection file
static bn_config_t *s_config;  //  settings shared by both actors
static zactor_t *s_controller; //  the controller
static zactor_t *s_engines;    //  the engines

//  Start count more engines in their own actor and wait until they are
//  registered.
static zactor_t *
s_start_engines (int count)
{
    bn_engine_args_t args = {s_engine_file, NULL, s_config, count, -1, s_dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (engines);
    zstr_sendx (engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
    return engines;
}

//  A controller with engines, in a fresh profile folder.
static void
s_start_cluster (int engines)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/bn-check-cluster-client-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    s_config = bn_config_new ();
    //  Engines count as registered at the first heartbeat: beat fast
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_period",
                                     "100", BN_CONFIG_CMDLINE),
                      0);
    //  ...but do not declare one dead because a loaded machine paused it
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_misses",
                                     "50", BN_CONFIG_CMDLINE),
                      0);
    bn_controller_args_t args = {s_config, s_dir, 0};
    s_controller = zactor_new (bn_controller_actor, &args);
    ck_assert_ptr_nonnull (s_controller);
    ck_assert_int_eq (args.status, 0);
    zstr_send (s_controller, "CONNFILES");
    char *client_file = NULL;
    zstr_recvx (s_controller, &client_file, &s_engine_file, NULL);
    ck_assert_ptr_nonnull (s_engine_file);
    free (client_file);
    s_engines = engines ? s_start_engines (engines) : NULL;
}

static void
s_stop_cluster (void)
{
    zactor_destroy (&s_engines);
    zactor_destroy (&s_controller);
    bn_config_destroy (&s_config);
    zstr_free (&s_engine_file);
    char command[300];
    snprintf (command, sizeof command, "rm -rf '%s'", s_dir);
    ck_assert_int_eq (system (command), 0);
}

static bn_client_t *
s_client (size_t engines)
{
    int rc;
    bn_client_t *client = bn_client_new (s_dir, 10, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, engines, 20), 0);
    return client;
}

static bn_value_t *
s_args1 (bn_value_t *value)
{
    bn_value_t *args = bn_value_new_tuple ();
    ck_assert_int_eq (bn_value_append (args, value), 0);
    return args;
}

START_TEST (test_usage)
{
    s_start_cluster (4);
    bn_client_t *client = s_client (4);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    //  A shell command on every engine
    bn_result_t *result;
    ck_assert_int_eq (
        bn_view_execute (view, "echo engine $BANYAN_ENGINE_ID; echo oops >&2",
                         &result),
        0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 4);
    for (size_t i = 0; i < 4; i++) {
        char expected[32];
        snprintf (expected, sizeof expected, "engine %d\n",
                  bn_result_engine_id (result, i));
        ck_assert_str_eq (bn_result_stdout (result, i), expected);
        ck_assert_str_eq (bn_result_stderr (result, i), "oops\n");
    }
    bn_result_destroy (&result);
    //  A named function
    bn_value_t *args = s_args1 (bn_value_new_str ("hello"));
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq (bn_value_str (bn_result_value (result, i)), "hello");
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_push_pull_and_errors)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *ns = bn_value_new_dict ();
    bn_value_dict_set_str (ns, "a", bn_value_new_int (5));
    bn_value_dict_set_str (ns, "b", bn_value_new_bytes ("\x00\x01", 2));
    bn_result_t *result;
    ck_assert_int_eq (bn_view_push (view, ns, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    bn_result_destroy (&result);
    bn_value_t *names = bn_value_new_list ();
    bn_value_append (names, bn_value_new_str ("b"));
    bn_value_append (names, bn_value_new_str ("a"));
    ck_assert_int_eq (bn_view_pull (view, names, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    const bn_value_t *got = bn_result_value (result, 1);
    ck_assert_int_eq (bn_value_int (bn_value_item (got, 1)), 5);
    ck_assert_uint_eq (bn_value_bytes_size (bn_value_item (got, 0)), 2);
    bn_result_destroy (&result);
    //  A name nobody pushed
    bn_value_t *missing = bn_value_new_str ("zz");
    ck_assert_int_eq (bn_view_pull (view, missing, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 0), "NameError");
    bn_result_destroy (&result);
    //  A command that fails: its output and its exit status
    ck_assert_int_eq (bn_view_execute (view, "echo out; exit 3", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_stdout (result, 0), "out\n");
    ck_assert_str_eq (bn_result_ename (result, 0), "CalledProcessError");
    ck_assert_ptr_nonnull (
        strstr (bn_result_content (result, 0), "\"returncode\":3"));
    bn_result_destroy (&result);
    //  A function the engines do not have is the engine's error, not a
    //  missing feature of the controller
    ck_assert_int_eq (bn_view_apply (view, "nosuch", NULL, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 1), "NotImplementedError");
    bn_result_destroy (&result);
    bn_value_destroy (&missing);
    bn_value_destroy (&names);
    bn_value_destroy (&ns);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_partial_results)
{
    s_start_cluster (3);
    bn_client_t *client = s_client (3);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    //  Engine 2 answers at once, the others after a while
    ck_assert_int_eq (
        bn_view_execute (
            view, "[ $BANYAN_ENGINE_ID = 2 ] || sleep 1; echo done", &result),
        0);
    int first = bn_result_next (result, 20);
    ck_assert_int_ge (first, 0);
    ck_assert_int_eq (bn_result_engine_id (result, (size_t)first), 2);
    ck_assert_str_eq (bn_result_stdout (result, (size_t)first), "done\n");
    ck_assert (!bn_result_ready (result));
    ck_assert_uint_eq (bn_result_progress (result), 1);
    ck_assert_int_ge (bn_result_next (result, 20), 0);
    ck_assert_int_ge (bn_result_next (result, 20), 0);
    ck_assert_int_eq (bn_result_next (result, 20), BN_ENOENT);
    ck_assert (bn_result_elapsed (result) >= 0.9);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_abort_and_queue_status)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int zero = 0;
    bn_view_set_target_list (view, &zero, 1);
    bn_result_t *running, *queued;
    ck_assert_int_eq (bn_view_execute (view, "sleep 0.5; echo first", &running),
                      0);
    ck_assert_int_eq (bn_view_execute (view, "echo second", &queued), 0);
    ck_assert_int_eq (bn_view_abort (view, queued, 20), 0);
    ck_assert_int_eq (bn_result_get (running, 20), 0);
    ck_assert_str_eq (bn_result_stdout (running, 0), "first\n");
    ck_assert_int_eq (bn_result_get (queued, 20), BN_EABORTED);
    bn_result_destroy (&running);
    bn_result_destroy (&queued);
    ck_assert_int_eq (bn_view_clear (view, 20), 0);

    bn_queue_status_t *status;
    size_t count;
    int unassigned = -1;
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 20, &status, &count, &unassigned),
        0);
    ck_assert_uint_eq (count, 2);
    ck_assert_int_eq (status[0].engine_id, 0);
    ck_assert_int_eq (status[0].queue, 0);
    ck_assert_int_ge (status[0].completed, 2);
    free (status);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_result_abort_ends_running)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    bn_view_kind_t kinds[] = {BN_VIEW_DIRECT, BN_VIEW_BROADCAST};
    for (int k = 0; k < 2; k++) {
        bn_view_t *view = bn_view_new (client, kinds[k]);
        bn_result_t *running, *next;
        ck_assert_int_eq (bn_view_execute (view, "sleep 30", &running), 0);
        ck_assert_int_eq (bn_result_wait (running, 0.3), BN_ETIMEDOUT);
        //  each engine says what it runs, at once
        bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
        bn_result_t *info;
        ck_assert_int_eq (bn_view_kernel_info (direct, 20, &info), 0);
        ck_assert_uint_eq (bn_result_count (info), 2);
        for (size_t i = 0; i < 2; i++) {
            ck_assert_int_eq (bn_result_status (info, i), 0);
            json_t *content = json_loads (bn_result_content (info, i), 0, NULL);
            json_t *run = json_object_get (content, "bn_running");
            ck_assert_str_eq (json_string_value (json_object_get (run, "code")),
                              "sleep 30");
            //  the same request as the result's item of that engine
            const char *msg_id =
                json_string_value (json_object_get (run, "msg_id"));
            size_t item = bn_result_engine_id (running, 0) ==
                                  bn_result_engine_id (info, i)
                              ? 0
                              : 1;
            ck_assert_str_eq (msg_id, bn_result_msg_id (running, item));
            json_decref (content);
        }
        bn_result_destroy (&info);
        bn_view_destroy (&direct);
        double start = zclock_usecs () / 1e6;
        ck_assert_int_eq (bn_result_abort (running, 20), 0);
        ck_assert_int_eq (bn_result_get (running, 20), BN_EABORTED);
        for (size_t i = 0; i < bn_result_count (running); i++)
            ck_assert_int_eq (bn_result_status (running, i), BN_EABORTED);
        //  the engines are free at once, not 30 s later
        ck_assert_int_eq (bn_view_execute (view, "echo next", &next), 0);
        ck_assert_int_eq (bn_result_get (next, 20), 0);
        ck_assert_str_eq (bn_result_stdout (next, 1), "next\n");
        ck_assert (zclock_usecs () / 1e6 - start < 5);
        //  nothing is left to abort
        ck_assert_int_eq (bn_result_abort (next, 20), 0);
        bn_result_destroy (&running);
        bn_result_destroy (&next);
        bn_view_destroy (&view);
    }
    ck_assert_int_eq (bn_result_abort (NULL, 1), BN_EINVAL);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_other_views)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    bn_value_t *args = s_args1 (bn_value_new_int (7));
    bn_view_kind_t kinds[] = {BN_VIEW_LOAD_BALANCED, BN_VIEW_BROADCAST};
    for (int k = 0; k < 2; k++) {
        bn_view_t *view = bn_view_new (client, kinds[k]);
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        int rc = bn_result_get (result, 20);
        //  Until the controller has these schedulers it says so; once it
        //  has, the calls work.
        ck_assert_msg (rc == 0 || rc == BN_ENOTSUP, "got %s", bn_strerror (rc));
        if (rc == 0)
            for (size_t i = 0; i < bn_result_count (result); i++)
                ck_assert_int_eq (bn_value_int (bn_result_value (result, i)),
                                  7);
        bn_result_destroy (&result);
        bn_view_destroy (&view);
    }
    bn_value_destroy (&args);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  Apply of name(arg) through view; returns the result (waited for).
static bn_result_t *
s_lb_apply (bn_view_t *view, const char *name, bn_value_t *arg)
{
    bn_value_t *args = s_args1 (arg);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, name, args, NULL, &result), 0);
    bn_value_destroy (&args);
    ck_assert_int_eq (bn_result_wait (result, 20), 0);
    return result;
}

START_TEST (test_load_balanced)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    //  A task runs on whichever engine is free
    bn_result_t *first = s_lb_apply (lb, "echo", bn_value_new_int (7));
    ck_assert_int_eq (bn_result_get (first, 20), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (first, 0)), 7);
    int eid = bn_result_engine_id (first, 0);
    ck_assert_int_ge (eid, 0);

    //  follow: where the first ran, every time
    ck_assert_int_eq (bn_view_set_follow_result (lb, first, true, true, false),
                      0);
    for (int n = 0; n < 4; n++) {
        bn_result_t *result = s_lb_apply (lb, "echo", bn_value_new_int (n));
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_int_eq (bn_result_engine_id (result, 0), eid);
        bn_result_destroy (&result);
    }
    ck_assert_int_eq (bn_view_set_follow (lb, NULL, 0, true, true, false), 0);

    //  after: once a slow task finished
    bn_value_t *args = s_args1 (bn_value_new_float (0.2));
    bn_result_t *slow;
    ck_assert_int_eq (bn_view_apply (lb, "sleep", args, NULL, &slow), 0);
    bn_value_destroy (&args);
    ck_assert_int_eq (bn_view_set_after_result (lb, slow, true, true, false),
                      0);
    bn_result_t *later = s_lb_apply (lb, "echo", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (later, 20), 0);
    ck_assert_int_eq (bn_result_get (slow, 20), 0);
    bn_result_destroy (&later);
    bn_result_destroy (&slow);

    //  after a failure that was required to succeed: impossible
    bn_result_t *failed = s_lb_apply (lb, "nosuch", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (failed, 20), BN_EREMOTE);
    ck_assert_int_eq (bn_view_set_after_result (lb, failed, true, true, false),
                      0);
    bn_result_t *never = s_lb_apply (lb, "echo", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (never, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (never, 0), "ImpossibleDependency");
    bn_result_destroy (&never);
    //  ...unless failures count
    ck_assert_int_eq (bn_view_set_after_result (lb, failed, true, false, true),
                      0);
    bn_result_t *cleanup = s_lb_apply (lb, "echo", bn_value_new_int (2));
    ck_assert_int_eq (bn_result_get (cleanup, 20), 0);
    bn_result_destroy (&cleanup);
    bn_result_destroy (&failed);

    //  a msg_id the task scheduler never saw: invalid
    const char *unknown[] = {"no-such-msg-id"};
    ck_assert_int_eq (bn_view_set_after (lb, unknown, 1, true, true, false), 0);
    bn_result_t *invalid = s_lb_apply (lb, "echo", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (invalid, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (invalid, 0), "InvalidDependency");
    bn_result_destroy (&invalid);
    ck_assert_int_eq (bn_view_set_after (lb, NULL, 0, true, true, false), 0);

    //  retries: a failing task is tried again, then its error comes back
    ck_assert_int_eq (bn_view_set_retries (lb, 1), 0);
    bn_result_t *retried = s_lb_apply (lb, "nosuch", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (retried, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (retried, 0), "NotImplementedError");
    bn_result_destroy (&retried);
    ck_assert_int_eq (bn_view_set_retries (lb, 0), 0);

    //  timeout: a task for a busy engine gives up
    ck_assert_int_eq (bn_view_set_target_list (lb, &eid, 1), 0);
    args = s_args1 (bn_value_new_float (1.0));
    bn_result_t *busy;
    ck_assert_int_eq (bn_view_apply (lb, "sleep", args, NULL, &busy), 0);
    bn_value_destroy (&args);
    ck_assert_int_eq (bn_view_set_timeout (lb, 0.1), 0);
    bn_result_t *late = s_lb_apply (lb, "echo", bn_value_new_int (1));
    ck_assert_int_eq (bn_result_get (late, 20), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (late, 0), "TaskTimeout");
    bn_result_destroy (&late);
    ck_assert_int_eq (bn_result_get (busy, 20), 0);
    ck_assert_int_eq (bn_result_engine_id (busy, 0), eid);
    bn_result_destroy (&busy);

    //  bad settings
    ck_assert_int_eq (bn_view_set_timeout (lb, -1), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_retries (lb, -1), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_after (lb, unknown, 1, true, false, false),
                      BN_EINVAL);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_retries (direct, 1), BN_EINVAL);
    ck_assert_int_eq (
        bn_view_set_follow (direct, unknown, 1, true, true, false), BN_EINVAL);
    bn_view_destroy (&direct);
    bn_result_destroy (&first);
    bn_view_destroy (&lb);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_engines_come_and_go)
{
    s_start_cluster (1);
    bn_client_t *client = s_client (1);
    zactor_t *more = s_start_engines (2);
    ck_assert_int_eq (bn_client_wait_for_engines (client, 3, 20), 0);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 30", &result), 0);
    //  Two engines stop (and unregister) while running the command: their
    //  requests fail at once, the other's is still running
    double start = zclock_usecs () / 1e6;
    zactor_destroy (&more);
    for (int i = 0; i < 2; i++) {
        int index = bn_result_next (result, 20);
        ck_assert_int_ge (index, 0);
        ck_assert_int_eq (bn_result_status (result, (size_t)index),
                          BN_EENGINEDIED);
        ck_assert_str_eq (bn_result_ename (result, (size_t)index),
                          "EngineError");
    }
    ck_assert (zclock_usecs () / 1e6 - start < 15);
    ck_assert (!bn_result_ready (result));
    //  (their stranded replies may come before their unregistration)
    for (int i = 0; i < 200 && bn_client_engine_count (client) != 1; i++)
        usleep (50000);
    ck_assert_uint_eq (bn_client_engine_count (client), 1);
    ck_assert_int_eq (bn_view_abort (view, NULL, 20), 0);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_controller_vanishes)
{
    s_start_cluster (1);
    bn_client_t *client = s_client (1);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 30", &result), 0);
    usleep (100000);
    double start = zclock_usecs () / 1e6;
    zactor_destroy (&s_controller);
    ck_assert_int_eq (bn_result_get (result, 60), BN_ENOCONTROLLER);
    ck_assert (zclock_usecs () / 1e6 - start < 15);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_shutdown)
{
    s_start_cluster (2);
    bn_client_t *client = s_client (2);
    ck_assert_int_eq (bn_client_shutdown (client, true, 20), 0);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    //  The engines stop, the controller says it shut down
    zsock_set_rcvtimeo (s_engines, 20000);
    char *stopped = zstr_recv (s_engines);
    ck_assert_str_eq (stopped, "STOPPED");
    zstr_free (&stopped);
    zsock_set_rcvtimeo (s_controller, 20000);
    char *shutdown = zstr_recv (s_controller);
    ck_assert_str_eq (shutdown, "SHUTDOWN");
    zstr_free (&shutdown);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

//  One of the threads of test_threads_share_client: rounds of a call
//  whose answer is the thread's own, on a view of its own.
typedef struct {
    bn_client_t *client;
    int index;    //  the thread's number
    int rounds;   //  round trips made
    bool polling; //  waits by asking bn_result_ready, not bn_result_get
} s_worker_t;

static void *
s_worker_main (void *arg)
{
    s_worker_t *self = arg;
    bn_view_t *view = bn_view_new (
        self->client, self->index % 2 ? BN_VIEW_DIRECT : BN_VIEW_BROADCAST);
    int target = self->index % 4;
    if (self->index % 2)
        bn_view_set_target_list (view, &target, 1);
    for (int round = 0; round < 100; round++) {
        int value = self->index * 1000 + round;
        bn_value_t *args = s_args1 (bn_value_new_int (value));
        bn_result_t *result = NULL;
        int rc = bn_view_apply (view, "echo", args, NULL, &result);
        bn_value_destroy (&args);
        if (rc != 0)
            break;
        double deadline = zclock_usecs () / 1e6 + 20;
        //  (looking now and then, as a program busy elsewhere would)
        if (self->polling)
            while (!bn_result_ready (result) &&
                   zclock_usecs () / 1e6 < deadline)
                usleep (100);
        bool right = bn_result_get (result, 20) == 0;
        for (size_t i = 0; right && i < bn_result_count (result); i++)
            right = bn_value_int (bn_result_value (result, i)) == value;
        bn_result_destroy (&result);
        if (!right)
            break;
        self->rounds++;
    }
    bn_view_destroy (&view);
    return NULL;
}

START_TEST (test_threads_share_client)
{
    s_start_cluster (4);
    bn_client_t *client = s_client (4);
    //  A request that runs all along, which the main thread waits for
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int target = 0;
    bn_view_set_target_list (view, &target, 1);
    bn_result_t *slow;
    ck_assert_int_eq (bn_view_execute (view, "sleep 1; echo slept", &slow), 0);
    //  Four threads make round trips meanwhile and after, each seeing its
    //  own answers: whichever thread reads the sockets, every thread's
    //  replies reach it, and one that only asks bn_result_ready sees its
    //  result complete
    s_worker_t workers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (s_worker_t){client, i, 0, i == 3};
        ck_assert_int_eq (
            pthread_create (&threads[i], NULL, s_worker_main, &workers[i]), 0);
    }
    ck_assert_int_eq (bn_result_get (slow, 20), 0);
    ck_assert_str_eq (bn_result_stdout (slow, 0), "slept\n");
    for (int i = 0; i < 4; i++) {
        pthread_join (threads[i], NULL);
        ck_assert_int_eq (workers[i].rounds, 100);
    }
    bn_result_destroy (&slow);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

START_TEST (test_64_engines)
{
    s_start_cluster (64);
    bn_client_t *client = s_client (64);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *args = s_args1 (bn_value_new_int (42));
    for (int round = 0; round < 5; round++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_uint_eq (bn_result_count (result), 64);
        ck_assert_uint_eq (bn_result_progress (result), 64);
        bn_idset_t *seen = bn_idset_new ();
        for (size_t i = 0; i < 64; i++) {
            ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), 42);
            bn_idset_add (seen, bn_result_engine_id (result, i));
        }
        ck_assert_uint_eq (bn_idset_count (seen), 64);
        bn_idset_destroy (&seen);
        bn_result_destroy (&result);
    }
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_stop_cluster ();
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_client");
    TCase *tc = tcase_create ("in-process");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_push_pull_and_errors);
    tcase_add_test (tc, test_partial_results);
    tcase_add_test (tc, test_abort_and_queue_status);
    tcase_add_test (tc, test_result_abort_ends_running);
    tcase_add_test (tc, test_other_views);
    tcase_add_test (tc, test_load_balanced);
    tcase_add_test (tc, test_engines_come_and_go);
    tcase_add_test (tc, test_controller_vanishes);
    tcase_add_test (tc, test_shutdown);
    tcase_add_test (tc, test_threads_share_client);
    tcase_add_test (tc, test_64_engines);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? 0 : 1;
}

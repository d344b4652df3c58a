/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_clusterrec: the record of a started cluster, and the process
    facts (bn_proctable) that tell whether it still runs.  */
#include "bn_clusterrec.h"
#include "bn_proctable.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char s_dir[] = "/tmp/check_bn_clusterrec.XXXXXX";

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_clusterrec.XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    char path[256];
    snprintf (path, sizeof path, "%s/pid", s_dir);
    ck_assert_int_eq (mkdir (path, 0755), 0);
}

static void
s_teardown (void)
{
    char command[300];
    snprintf (command, sizeof command, "rm -rf %s", s_dir);
    ck_assert_int_eq (system (command), 0);
}

static unsigned long long
s_start (pid_t pid)
{
    bn_procinfo_t info;
    ck_assert_int_eq (bn_proctable_stat (pid, &info), 0);
    return info.starttime;
}

//  A child that sleeps until killed.
static pid_t
s_sleeper (void)
{
    pid_t pid = fork ();
    ck_assert_int_ge (pid, 0);
    if (pid == 0) {
        signal (SIGTERM, SIG_DFL);
        pause ();
        _exit (0);
    }
    return pid;
}

static void
s_kill (pid_t pid)
{
    kill (pid, SIGKILL);
    waitpid (pid, NULL, 0);
}

START_TEST (test_usage)
{
    //  cluster start records what it started; cluster list reads it back
    bn_clusterrec_t *record = bn_clusterrec_new (s_dir, "a");
    ck_assert_ptr_nonnull (record);
    bn_clusterrec_set_profile (record, "test");
    bn_clusterrec_set_engines (record, 10, 4);
    bn_clusterrec_set_supervisor (record, getpid (), s_start (getpid ()));
    bn_clusterrec_set_controller (record, getpid (), s_start (getpid ()));
    ck_assert_int_eq (bn_clusterrec_add_engines (record, 101, 7, 0, 4), 0);
    ck_assert_int_eq (bn_clusterrec_add_engines (record, 102, 8, 4, 4), 0);
    ck_assert_int_eq (bn_clusterrec_add_engines (record, 103, 9, 8, 2), 0);
    char *path = bn_clusterrec_path (s_dir, "a");
    ck_assert (strstr (path, "/pid/banyan-cluster-a.json"));
    ck_assert_int_eq (bn_clusterrec_save (record, path), 0);
    bn_clusterrec_destroy (&record);
    ck_assert_ptr_null (record);

    record = bn_clusterrec_load (path);
    ck_assert_ptr_nonnull (record);
    ck_assert_str_eq (bn_clusterrec_profile_dir (record), s_dir);
    ck_assert_str_eq (bn_clusterrec_cluster_id (record), "a");
    ck_assert_str_eq (bn_clusterrec_profile (record), "test");
    ck_assert_int_eq (bn_clusterrec_n (record), 10);
    ck_assert_int_eq (bn_clusterrec_per_process (record), 4);
    ck_assert_int_eq (bn_clusterrec_pgid (record), getpid ());
    ck_assert_uint_eq (bn_clusterrec_engine_procs (record), 3);
    ck_assert_int_eq (bn_clusterrec_engine_pid (record, 5), 102);
    ck_assert_int_eq (bn_clusterrec_engine_pid (record, 9), 103);
    ck_assert_int_eq (bn_clusterrec_engine_pid (record, 10), 0);
    int first, count;
    ck_assert_int_eq (
        bn_clusterrec_engine_proc (record, 2, NULL, NULL, &first, &count), 0);
    ck_assert_int_eq (first, 8);
    ck_assert_int_eq (count, 2);
    ck_assert_int_eq (
        bn_clusterrec_engine_proc (record, 3, NULL, NULL, NULL, NULL), -1);
    //  The "controller" (this process) runs
    ck_assert_int_eq (bn_clusterrec_state (record, NULL), BN_CLUSTER_RUNNING);
    bn_clusterrec_destroy (&record);
    free (path);
    bn_clusterrec_destroy (&record);
}
END_TEST

START_TEST (test_state)
{
    pid_t controller = s_sleeper ();
    pid_t engine = s_sleeper ();
    bn_clusterrec_t *record = bn_clusterrec_new (s_dir, "");
    bn_clusterrec_set_controller (record, controller, s_start (controller));
    bn_clusterrec_add_engines (record, engine, s_start (engine), 0, 1);
    size_t live = 0;
    ck_assert_int_eq (bn_clusterrec_state (record, &live), BN_CLUSTER_RUNNING);
    ck_assert_uint_eq (live, 1);
    s_kill (controller);
    ck_assert_int_eq (bn_clusterrec_state (record, &live), BN_CLUSTER_BROKEN);
    s_kill (engine);
    ck_assert_int_eq (bn_clusterrec_state (record, &live), BN_CLUSTER_STALE);
    ck_assert_uint_eq (live, 0);
    ck_assert_str_eq (bn_clusterrec_state_name (BN_CLUSTER_STALE), "stale");

    //  A pid now used by another process (other start time) is not ours
    bn_clusterrec_set_controller (record, getpid (), s_start (getpid ()) + 1);
    ck_assert_int_eq (bn_clusterrec_state (record, NULL), BN_CLUSTER_STALE);

    //  Only a supervisor: starting
    bn_clusterrec_t *starting = bn_clusterrec_new (s_dir, "");
    bn_clusterrec_set_supervisor (starting, getpid (), s_start (getpid ()));
    ck_assert_int_eq (bn_clusterrec_state (starting, NULL),
                      BN_CLUSTER_STARTING);
    bn_clusterrec_destroy (&starting);
    bn_clusterrec_destroy (&record);
}
END_TEST

START_TEST (test_ids_and_bad_files)
{
    const char *ids[] = {"", "b", "a-1"};
    for (size_t index = 0; index < 3; index++) {
        bn_clusterrec_t *record = bn_clusterrec_new (s_dir, ids[index]);
        char *path = bn_clusterrec_path (s_dir, ids[index]);
        ck_assert_int_eq (bn_clusterrec_save (record, path), 0);
        free (path);
        bn_clusterrec_destroy (&record);
    }
    char path[300];
    snprintf (path, sizeof path, "%s/pid/banyan-cluster-x.json.tmp", s_dir);
    FILE *file = fopen (path, "w");
    fputs ("junk", file);
    fclose (file);
    zlist_t *found = bn_clusterrec_ids (s_dir);
    ck_assert_uint_eq (zlist_size (found), 3);
    ck_assert_str_eq (zlist_first (found), "");
    ck_assert_str_eq (zlist_next (found), "a-1");
    ck_assert_str_eq (zlist_next (found), "b");
    zlist_destroy (&found);

    //  Missing, not JSON, JSON of the wrong shape
    snprintf (path, sizeof path, "%s/pid/nothing.json", s_dir);
    ck_assert_ptr_null (bn_clusterrec_load (path));
    snprintf (path, sizeof path, "%s/pid/banyan-cluster-x.json.tmp", s_dir);
    ck_assert_ptr_null (bn_clusterrec_load (path));
    file = fopen (path, "w");
    fputs ("{\"profile_dir\": 3}", file);
    fclose (file);
    ck_assert_ptr_null (bn_clusterrec_load (path));

    //  No profile folder at all: no ids
    found = bn_clusterrec_ids ("/nonexistent/banyan");
    ck_assert_uint_eq (zlist_size (found), 0);
    zlist_destroy (&found);
}
END_TEST

START_TEST (test_controller_pidfile)
{
    //  A pid file naming a process that is not a controller counts as stale
    char *path = bn_clusterrec_controller_pidfile (s_dir, "c");
    ck_assert (strstr (path, "/pid/banyan-controller-c.pid"));
    FILE *file = fopen (path, "w");
    fprintf (file, "%d\n", (int)getpid ());
    fclose (file);
    ck_assert_int_eq (bn_clusterrec_controller_pid (s_dir, "c"), 0);
    ck_assert_int_eq (bn_clusterrec_controller_pid (s_dir, "none"), 0);
    free (path);
}
END_TEST

START_TEST (test_proctable)
{
    bn_procinfo_t info;
    ck_assert_int_eq (bn_proctable_stat (getpid (), &info), 0);
    ck_assert_int_eq (info.pid, getpid ());
    ck_assert_int_eq (info.ppid, getppid ());
    ck_assert_int_eq (info.pgrp, getpgrp ());
    ck_assert (bn_proctable_alive (getpid (), 0));
    ck_assert (bn_proctable_alive (getpid (), info.starttime));
    ck_assert (!bn_proctable_alive (getpid (), info.starttime + 1));
    ck_assert (!bn_proctable_alive (0, 0));

    //  A zombie is not alive
    pid_t child = fork ();
    if (child == 0)
        _exit (0);
    usleep (100000);
    ck_assert (!bn_proctable_alive (child, 0));
    waitpid (child, NULL, 0);
    ck_assert_int_eq (bn_proctable_stat (child, &info), -1);
}
END_TEST

START_TEST (test_collect_and_terminate)
{
    //  A group leader with a child in a group of its own (as engines run
    //  commands) and a grandchild: all of them are found, and ended
    int fds[2];
    ck_assert_int_eq (pipe (fds), 0);
    pid_t leader = fork ();
    if (leader == 0) {
        //  Check's runner handles SIGTERM by signalling its group
        signal (SIGTERM, SIG_DFL);
        setpgid (0, 0);
        pid_t command = fork ();
        if (command == 0) {
            setpgid (0, 0);
            pid_t grandchild = fork ();
            if (grandchild == 0) {
                //  Ignores SIGTERM: only SIGKILL ends it
                signal (SIGTERM, SIG_IGN);
                pause ();
                _exit (0);
            }
            pause ();
            _exit (0);
        }
        close (fds[0]);
        (void)!write (fds[1], "x", 1);
        pause ();
        _exit (0);
    }
    setpgid (leader, leader);
    char byte;
    close (fds[1]);
    ck_assert_int_eq (read (fds[0], &byte, 1), 1);
    close (fds[0]);
    usleep (100000);

    bn_proctable_t *table = bn_proctable_new ();
    ck_assert_ptr_nonnull (table);
    ck_assert_uint_gt (bn_proctable_size (table), 3);
    ck_assert_ptr_nonnull (bn_proctable_find (table, leader));
    pid_t *pids = NULL;
    int found = bn_proctable_collect (table, leader, NULL, 0, &pids);
    ck_assert_int_eq (found, 3);
    free (pids);
    bn_proctable_destroy (&table);

    int ended = bn_proctable_terminate (leader, &leader, 1, SIGTERM, 0.3, 5,
                                        NULL, NULL);
    ck_assert_int_eq (ended, 3);
    table = bn_proctable_new ();
    found = bn_proctable_collect (table, leader, &leader, 1, &pids);
    ck_assert_int_eq (found, 0);
    free (pids);
    bn_proctable_destroy (&table);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_clusterrec");
    TCase *tcase = tcase_create ("core");
    tcase_add_checked_fixture (tcase, s_setup, s_teardown);
    tcase_set_timeout (tcase, 30);
    tcase_add_test (tcase, test_usage);
    tcase_add_test (tcase, test_state);
    tcase_add_test (tcase, test_ids_and_bad_files);
    tcase_add_test (tcase, test_controller_pidfile);
    tcase_add_test (tcase, test_proctable);
    tcase_add_test (tcase, test_collect_and_terminate);
    suite_add_tcase (suite, tcase);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_launchwatch: a stand-in launch program that starts one process
    a host, as hydra's mpiexec runs an ssh for each, and never reaps them:
    the watch tells which host each serves (named on its command line, or
    by the order they were started) and which ended, with their status.  */
#include "bn_launchwatch.h"

#include <check.h>
#include <czmq.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

//  Fork a process that runs sh -c script with the words after it, and
//  returns the pid; the launch program's side.
static pid_t
s_start (const char *script, const char *word1, const char *word2)
{
    pid_t pid = fork ();
    if (pid == 0) {
        //  Nothing of it outlives a failed test holding its output
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        int null = open ("/dev/null", O_RDWR);
        dup2 (null, STDOUT_FILENO);
        dup2 (null, STDERR_FILENO);
        execl ("/bin/sh", "sh", "-c", script, "ssh", word1, word2,
               (char *)NULL);
        _exit (127);
    }
    return pid;
}

//  The stand-in launch program: starts its hosts' processes (h1's stays;
//  the second names no host and fails; h3's fails), then waits without
//  reaping them, as hydra does for a proxy whose ssh failed.
static pid_t
s_launcher (void)
{
    pid_t pid = fork ();
    if (pid == 0) {
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        setpgid (0, 0);
        s_start ("sleep 60; exit 0", "-x", "root@h1");
        s_start ("sleep 0.5; exit 255", "-x", "somewhere");
        s_start ("sleep 0.5; exit 7", "-x", "h3");
        while (true)
            pause ();
    }
    setpgid (pid, pid);
    return pid;
}

START_TEST (test_ended_by_host)
{
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "h1");
    zlist_append (hosts, "h2");
    zlist_append (hosts, "h3");
    pid_t launcher = s_launcher ();
    bn_launchwatch_t *watch = bn_launchwatch_new (launcher, hosts, 3);
    ck_assert_ptr_nonnull (watch);
    int status[3] = {-2, -2, -2};
    char comm[3][16] = {"", "", ""};
    int64_t deadline = zclock_mono () + 20000;
    while ((status[1] == -2 || status[2] == -2) && zclock_mono () < deadline) {
        bn_launchwatch_update (watch);
        bn_launchwatch_end_t end;
        while (bn_launchwatch_ended (watch, &end)) {
            ck_assert_int_ge (end.rank, 0);
            ck_assert_int_lt (end.rank, 3);
            //  each once
            ck_assert_int_eq (status[end.rank], -2);
            status[end.rank] = end.status;
            snprintf (comm[end.rank], sizeof comm[0], "%s", end.comm);
            ck_assert_int_gt (end.pid, 0);
        }
        zclock_sleep (20);
    }
    //  h2's process named no host: it takes the rank left, the second
    ck_assert_int_eq (status[0], -2);
    ck_assert (WIFEXITED (status[1]) && WEXITSTATUS (status[1]) == 255);
    ck_assert (WIFEXITED (status[2]) && WEXITSTATUS (status[2]) == 7);
    ck_assert_str_eq (comm[1], "sh");
    ck_assert_str_eq (comm[2], "sh");
    //  nothing more once told
    bn_launchwatch_update (watch);
    bn_launchwatch_end_t end;
    ck_assert (!bn_launchwatch_ended (watch, &end));

    //  The launch program killed: its children go with it here (its
    //  group); h1's is found ended, a status or none
    kill (-launcher, SIGKILL);
    waitpid (launcher, NULL, 0);
    deadline = zclock_mono () + 20000;
    bool h1 = false;
    while (!h1 && zclock_mono () < deadline) {
        bn_launchwatch_update (watch);
        while (bn_launchwatch_ended (watch, &end)) {
            ck_assert_int_eq (end.rank, 0);
            h1 = true;
        }
        zclock_sleep (20);
    }
    ck_assert (h1);
    bn_launchwatch_destroy (&watch);
    bn_launchwatch_destroy (&watch);
    zlist_destroy (&hosts);
}
END_TEST

//  No such process, or one without children: nothing ends.
START_TEST (test_nothing)
{
    bn_launchwatch_t *watch = bn_launchwatch_new (getpid (), NULL, 2);
    bn_launchwatch_update (watch);
    bn_launchwatch_end_t end;
    ck_assert (!bn_launchwatch_ended (watch, &end));
    bn_launchwatch_destroy (&watch);
    watch = bn_launchwatch_new (0x3fffffff, NULL, 0);
    bn_launchwatch_update (watch);
    ck_assert (!bn_launchwatch_ended (watch, &end));
    bn_launchwatch_destroy (&watch);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_launchwatch");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_ended_by_host);
    tcase_add_test (tc, test_nothing);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

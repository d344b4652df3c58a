/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_bench: banyan-bench end to end: a --quick run of the
    direct-view echo at one engine (and its floor) writes a valid asv
    result file, and publish turns it into a site with plots.  */
#define _GNU_SOURCE //  posix_openpt, ptsname
#include "bn_benchcompare.h"
#include "bn_testdir.h"

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_BENCH BN_BUILD_DIR "/bin/banyan-bench"
#define S_COMMIT "0123456789abcdef0123456789abcdef01234567"
#define S_ECHO "echo.DirectViewBroadcast.time_echo"
#define S_FLOOR "floor.ZmqFloor.time_echo"
#define S_MANY "many.CoalescingBroadcast.time_many"
#define S_FLOOR_MANY "floor.ZmqFloor.time_many"
#define S_PUSH "push.CoalescingBroadcast.time_push"
#define S_FLOOR_PUSH "floor.ZmqFloor.time_push"
#define S_FLOOR_RELAY "floor.ZmqRelayFloor.time_push"
#define S_WAKEUP "floor.Wakeup.time_wakeup"

static char s_dir[64];

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_cluster_bench-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

//  Run banyan-bench with args, stdout and stderr into out; returns its
//  exit status. A run that outlives 120 s is killed.
static int
s_bench (char *out, size_t size, const char *const *args)
{
    char path[128];
    snprintf (path, sizeof path, "%s/out.txt", s_dir);
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2 (fd, 1);
        dup2 (fd, 2);
        char *argv[24] = {S_BENCH};
        for (size_t i = 0; args[i] && i < 22; i++)
            argv[i + 1] = (char *)args[i];
        alarm (120);
        execv (S_BENCH, argv);
        _exit (127);
    }
    int status;
    ck_assert_int_eq (waitpid (pid, &status, 0), pid);
    FILE *file = fopen (path, "r");
    size_t n = file ? fread (out, 1, size - 1, file) : 0;
    out[n] = 0;
    if (file)
        fclose (file);
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

//  banyan-bench run --quick of the benchmarks pattern matches, at engines,
//  into this test's results; its output in out. Asserts it exits 0.
static void
s_quick_run (char *out, size_t size, const char *pattern, const char *engines)
{
    char results[128];
    snprintf (results, sizeof results, "%s/results", s_dir);
    const char *run[] = {"run",       "--quick", "-b",        pattern,
                         "--engines", engines,   "--results", results,
                         "--machine", "testbox", "--commit",  S_COMMIT,
                         NULL};
    int rc = s_bench (out, size, run);
    ck_assert_msg (rc == 0, "run exited %d:\n%s", rc, out);
}

static bool
s_file_has (const char *path, const char *text)
{
    char *content = bn_benchresults_slurp (path);
    bool found = content && strstr (content, text);
    free (content);
    return found;
}

START_TEST (test_usage)
{
    //  A user runs one tiny suite quickly, then publishes the results
    char out[16384], results[128], html[128];
    snprintf (results, sizeof results, "%s/results", s_dir);
    snprintf (html, sizeof html, "%s/html", s_dir);
    const char *run[] = {"run",       "--quick", "-b",        "^echo\\.Direct",
                         "--engines", "1",       "--results", results,
                         "--machine", "testbox", "--commit",  S_COMMIT,
                         "-e",        NULL};
    int rc = s_bench (out, sizeof out, run);
    ck_assert_msg (rc == 0, "run exited %d:\n%s", rc, out);
    //  one line per case, the figure stated against the floor; no
    //  progress line when the output is not a terminal
    ck_assert_ptr_nonnull (strstr (out, S_ECHO " (1, 1000)  "));
    ck_assert_ptr_nonnull (strstr (out, "× floor"));
    ck_assert_ptr_nonnull (strstr (out, S_FLOOR " (1, 1000)  "));
    ck_assert_ptr_null (strstr (out, "%]"));
    ck_assert_ptr_null (strstr (out, "failed"));

    //  The result file is asv's, and holds both
    char err[256] = "";
    bn_benchresults_t *saved =
        bn_benchcompare_find (results, "testbox", S_COMMIT, err, sizeof err);
    ck_assert_msg (saved != NULL, "%s", err);
    double value = 0;
    double *samples = NULL;
    size_t count = 0;
    ck_assert_int_eq (
        bn_benchresults_case (saved, S_ECHO, 0, &value, NULL, &samples, &count),
        BN_BENCHRESULT_OK);
    ck_assert (value > 0);
    ck_assert_uint_eq (count, 1); //  --quick: one sample
    free (samples);
    ck_assert_int_eq (
        bn_benchresults_case (saved, S_FLOOR, 0, &value, NULL, NULL, NULL),
        BN_BENCHRESULT_OK);
    bn_benchresults_destroy (&saved);
    char path[256];
    snprintf (path, sizeof path, "%s/benchmarks.json", results);
    ck_assert (s_file_has (path, "\"" S_ECHO "\""));
    snprintf (path, sizeof path, "%s/testbox/machine.json", results);
    ck_assert (s_file_has (path, "\"machine\": \"testbox\""));

    //  The site: an index and a page per benchmark, with SVG plots
    char page[160];
    snprintf (page, sizeof page, "%s/performance.md", s_dir);
    const char *publish[] = {"publish", "--results",  results, "--html",
                             html,      "--markdown", page,    NULL};
    rc = s_bench (out, sizeof out, publish);
    ck_assert_msg (rc == 0, "publish exited %d:\n%s", rc, out);
    snprintf (path, sizeof path, "%s/index.html", html);
    ck_assert (s_file_has (path, "href=\"" S_ECHO ".html\""));
    ck_assert (s_file_has (path, "<img class=\"plot\""));
    snprintf (path, sizeof path, "%s/" S_ECHO ".html", html);
    ck_assert (s_file_has (path, "plots/" S_ECHO ".testbox.params.svg"));
    ck_assert (s_file_has (path, "plots/" S_ECHO ".testbox.commits.svg"));
    snprintf (path, sizeof path, "%s/plots/" S_ECHO ".testbox.params.svg",
              html);
    ck_assert (s_file_has (path, "<svg"));
    snprintf (path, sizeof path, "%s/plots/" S_ECHO ".testbox.commits.svg",
              html);
    ck_assert (s_file_has (path, "<svg"));
    snprintf (path, sizeof path, "%s/table.md", html);
    ck_assert (s_file_has (path, "| " S_ECHO " | engines=1, bytes=1000 | "));
    ck_assert (s_file_has (path, "Machine `testbox`"));
    //  and the same table as a page of its own
    ck_assert (s_file_has (page, "# Performance\n"));
    ck_assert (s_file_has (page, "Machine `testbox`"));
    ck_assert (s_file_has (page, "| " S_ECHO " | engines=1, bytes=1000 | "));
}
END_TEST

START_TEST (test_many_against_pipelined_floor)
{
    //  Many messages in flight are stated against a floor that keeps as
    //  many in flight (M to each echo socket), run in the same run, and
    //  published with that ratio
    char out[16384], results[128], html[128];
    snprintf (results, sizeof results, "%s/results", s_dir);
    snprintf (html, sizeof html, "%s/html", s_dir);
    const char *run[] = {"run",       "--quick", "-b",        "^many\\.Coal",
                         "--engines", "1",       "-p",        "messages=5",
                         "--results", results,   "--machine", "testbox",
                         "--commit",  S_COMMIT,  NULL};
    int rc = s_bench (out, sizeof out, run);
    ck_assert_msg (rc == 0, "run exited %d:\n%s", rc, out);
    char *floor = strstr (out, S_FLOOR_MANY " (1, 5)  ");
    char *many = strstr (out, S_MANY " (1, 5)  ");
    ck_assert_msg (floor && many && floor < many, "floor not first:\n%s", out);
    char *line_end = strchr (many, '\n');
    char *ratio = strstr (many, "× floor");
    ck_assert_msg (ratio && ratio < line_end, "no ratio:\n%s", out);
    //  only the case asked for: neither the sequential floor nor other
    //  message counts
    ck_assert_ptr_null (strstr (out, S_FLOOR " ("));
    ck_assert_ptr_null (strstr (out, S_FLOOR_MANY " (1, 1)"));
    char err[256] = "";
    bn_benchresults_t *saved =
        bn_benchcompare_find (results, "testbox", S_COMMIT, err, sizeof err);
    ck_assert_msg (saved != NULL, "%s", err);
    const char *values[] = {"1", "5"};
    long index = bn_benchresults_find (saved, S_FLOOR_MANY, values, 2);
    ck_assert_int_ge (index, 0);
    double floor_value = 0, many_value = 0;
    ck_assert_int_eq (bn_benchresults_case (saved, S_FLOOR_MANY, (size_t)index,
                                            &floor_value, NULL, NULL, NULL),
                      BN_BENCHRESULT_OK);
    index = bn_benchresults_find (saved, S_MANY, values, 2);
    ck_assert_int_ge (index, 0);
    ck_assert_int_eq (bn_benchresults_case (saved, S_MANY, (size_t)index,
                                            &many_value, NULL, NULL, NULL),
                      BN_BENCHRESULT_OK);
    ck_assert (floor_value > 0 && many_value > 0);
    bn_benchresults_destroy (&saved);
    //  published with its ratio to that floor
    char page[160];
    snprintf (page, sizeof page, "%s/performance.md", s_dir);
    const char *publish[] = {"publish", "--results",  results, "--html",
                             html,      "--markdown", page,    NULL};
    rc = s_bench (out, sizeof out, publish);
    ck_assert_msg (rc == 0, "publish exited %d:\n%s", rc, out);
    char *text = bn_benchresults_slurp (page);
    ck_assert_ptr_nonnull (text);
    char *row = strstr (text, "| " S_MANY " | engines=1, messages=5 | ");
    ck_assert_msg (row, "no row in:\n%s", text);
    char expected[32];
    snprintf (expected, sizeof expected, "| %.2f× |", many_value / floor_value);
    char *row_end = strchr (row, '\n');
    char *found = strstr (row, expected);
    ck_assert_msg (found && found < row_end, "%s not in the row:\n%.*s",
                   expected, (int)(row_end - row), row);
    //  the floors are the yardstick, not rows of their own
    ck_assert_ptr_null (strstr (text, "| " S_FLOOR_MANY " |"));
    free (text);
}
END_TEST

START_TEST (test_push_against_one_way_floor)
{
    //  A push (the payload consumed, a short reply back) is stated against
    //  the floor sending the payload one way, not against an echo of it
    char out[16384];
    s_quick_run (out, sizeof out, "^push\\.Coal", "2");
    char *floor = strstr (out, S_FLOOR_PUSH " (2, 1000)  ");
    char *push = strstr (out, S_PUSH " (2, 1000)  ");
    ck_assert_msg (floor && push && floor < push, "floor not first:\n%s", out);
    char *ratio = strstr (push, "× floor");
    ck_assert_msg (ratio && ratio < strchr (push, '\n'), "no ratio:\n%s", out);
    ck_assert_ptr_null (strstr (out, S_FLOOR " ("));
}
END_TEST

START_TEST (test_relay_floor)
{
    //  The relay floor passes the payload through a relay process to each
    //  DEALER and their answers back: every case measured, a time each
    char out[16384];
    s_quick_run (out, sizeof out, "^floor\\.ZmqRelayFloor\\.time_push", "1,2");
    for (int engines = 1; engines <= 2; engines++) {
        char cell[128];
        snprintf (cell, sizeof cell, "%s (%d, 1000)  ", S_FLOOR_RELAY, engines);
        char *row = strstr (out, cell);
        ck_assert_msg (row, "no %s in:\n%s", cell, out);
        char value[64];
        ck_assert_int_eq (sscanf (row + strlen (cell), "%63s", value), 1);
        //  "417μs", or "1.2±0.1ms" over several samples
        size_t length = strlen (value);
        ck_assert_msg (strtod (value, NULL) > 0 && length > 2 &&
                           value[length - 1] == 's',
                       "%s is not a time", value);
    }
}
END_TEST

START_TEST (test_skipped_case)
{
    //  A case that does not apply (stock engines are one Python process
    //  each, so peer mode stops at 16) is reported n/a, with the reason,
    //  and the run goes on
    char out[16384];
    s_quick_run (out, sizeof out, "^peer\\.DirectViewBroadcast\\.time_echo",
                 "17");
    ck_assert_ptr_nonnull (strstr (out, "('ipp', 17, 1000)  n/a"));
    ck_assert_ptr_nonnull (strstr (out, "at most 16"));
}
END_TEST

START_TEST (test_wakeup)
{
    //  The machine's price of a wake-up, between two threads on one CPU
    //  and on two: a figure for each, or n/a with the reason where the
    //  process may use only one CPU
    char out[16384], results[128], err[256] = "";
    s_quick_run (out, sizeof out, "^floor\\.Wakeup", "1");
    ck_assert_msg (strstr (out, S_WAKEUP " ('same')  "), "%s", out);
    ck_assert_msg (strstr (out, S_WAKEUP " ('other')  "), "%s", out);
    snprintf (results, sizeof results, "%s/results", s_dir);
    bn_benchresults_t *saved =
        bn_benchcompare_find (results, "testbox", S_COMMIT, err, sizeof err);
    ck_assert_msg (saved != NULL, "%s", err);
    const char *same[] = {"'same'"}, *other[] = {"'other'"};
    long index = bn_benchresults_find (saved, S_WAKEUP, same, 1);
    ck_assert_int_ge (index, 0);
    double value = 0;
    ck_assert_int_eq (bn_benchresults_case (saved, S_WAKEUP, (size_t)index,
                                            &value, NULL, NULL, NULL),
                      BN_BENCHRESULT_OK);
    ck_assert (value > 0 && value < 1);
    cpu_set_t cpus;
    ck_assert_int_eq (sched_getaffinity (0, sizeof cpus, &cpus), 0);
    index = bn_benchresults_find (saved, S_WAKEUP, other, 1);
    ck_assert_int_ge (index, 0);
    bn_benchresult_t status = bn_benchresults_case (
        saved, S_WAKEUP, (size_t)index, &value, NULL, NULL, NULL);
    if (CPU_COUNT (&cpus) > 1) {
        ck_assert_int_eq (status, BN_BENCHRESULT_OK);
        ck_assert (value > 0 && value < 1);
    } else {
        ck_assert_int_eq (status, BN_BENCHRESULT_SKIPPED);
        ck_assert_ptr_nonnull (strstr (out, "one CPU only"));
    }
    bn_benchresults_destroy (&saved);
}
END_TEST

START_TEST (test_runs_with_other_grids)
{
    //  A --quick run at one commit and a run with other engines at the
    //  next: asv keeps both (the same version as benchmarks.json's, whose
    //  grid holds both runs' values), and compare finds them comparable
    char out[16384], results[128];
    snprintf (results, sizeof results, "%s/results", s_dir);
    const char *commits[] = {S_COMMIT,
                             "89abcdef0123456789abcdef0123456789abcdef"};
    const char *engines[] = {"1", "2"};
    for (size_t i = 0; i < 2; i++) {
        const char *run[] = {"run",       "--quick",  "-b",        "^floor\\.",
                             "--engines", engines[i], "--results", results,
                             "--machine", "testbox",  "--commit",  commits[i],
                             NULL};
        int rc = s_bench (out, sizeof out, run);
        ck_assert_msg (rc == 0, "run exited %d:\n%s", rc, out);
    }
    char path[256];
    snprintf (path, sizeof path, "%s/benchmarks.json", results);
    json_t *benchmarks = json_load_file (path, 0, NULL);
    json_t *entry = json_object_get (benchmarks, S_FLOOR);
    const char *version =
        json_string_value (json_object_get (entry, "version"));
    ck_assert_ptr_nonnull (version);
    json_t *declared = json_array_get (json_object_get (entry, "params"), 0);
    for (size_t i = 0; i < 2; i++) {
        char err[256] = "";
        bn_benchresults_t *saved = bn_benchcompare_find (
            results, "testbox", commits[i], err, sizeof err);
        ck_assert_msg (saved != NULL, "%s", err);
        ck_assert_str_eq (bn_benchresults_row_version (saved, S_FLOOR),
                          version);
        //  every engine count a run used is declared
        json_t *ran =
            json_array_get (bn_benchresults_params (saved, S_FLOOR), 0);
        size_t k, d;
        json_t *value, *other;
        json_array_foreach (ran, k, value)
        {
            bool found = false;
            json_array_foreach (declared, d, other)
            {
                found = found || json_equal (value, other);
            }
            ck_assert_msg (found, "%s not declared", json_string_value (value));
        }
        bn_benchresults_destroy (&saved);
    }
    json_decref (benchmarks);
    const char *compare[] = {"compare",   commits[0], commits[1],
                             "--results", results,    NULL};
    int rc = s_bench (out, sizeof out, compare);
    ck_assert_msg (rc == 0, "compare exited %d:\n%s", rc, out);
    ck_assert_msg (!strstr (out, "\nx "), "not comparable:\n%s", out);
    //  each commit's case, from either file
    ck_assert_ptr_nonnull (strstr (out, S_FLOOR "(1, 1000)"));
    ck_assert_ptr_nonnull (strstr (out, S_FLOOR "(2, 1000)"));
}
END_TEST

START_TEST (test_progress_on_a_terminal)
{
    //  On a terminal the runner shows "[ 37%] name (params)" as it goes
    int master = posix_openpt (O_RDWR | O_NOCTTY);
    ck_assert_int_ge (master, 0);
    ck_assert_int_eq (grantpt (master), 0);
    ck_assert_int_eq (unlockpt (master), 0);
    char results[128];
    snprintf (results, sizeof results, "%s/results", s_dir);
    pid_t pid = fork ();
    if (pid == 0) {
        int slave = open (ptsname (master), O_RDWR);
        dup2 (slave, 1);
        int null = open ("/dev/null", O_WRONLY);
        dup2 (null, 2);
        alarm (60);
        execl (S_BENCH, S_BENCH, "run", "--quick", "-b", "^floor\\.",
               "--engines", "1", "--results", results, "--machine", "testbox",
               "--commit", S_COMMIT, (char *)NULL);
        _exit (127);
    }
    char out[8192];
    size_t used = 0;
    while (used < sizeof out - 1) {
        struct pollfd pfd = {master, POLLIN, 0};
        if (poll (&pfd, 1, 60000) <= 0)
            break;
        ssize_t n = read (master, out + used, sizeof out - 1 - used);
        if (n <= 0)
            break; //  EIO once the child has closed the terminal
        used += (size_t)n;
    }
    out[used] = 0;
    int status;
    ck_assert_int_eq (waitpid (pid, &status, 0), pid);
    ck_assert (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    ck_assert_msg (strstr (out, "[  0%] " S_FLOOR " (1, 1000)") != NULL,
                   "no progress line in:\n%s", out);
    //  and the result line after it
    ck_assert_ptr_nonnull (strstr (out, S_FLOOR " (1, 1000)  "));
    close (master);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_bench");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 110);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_many_against_pipelined_floor);
    tcase_add_test (tc, test_push_against_one_way_floor);
    tcase_add_test (tc, test_relay_floor);
    tcase_add_test (tc, test_skipped_case);
    tcase_add_test (tc, test_wakeup);
    tcase_add_test (tc, test_runs_with_other_grids);
    tcase_add_test (tc, test_progress_on_a_terminal);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

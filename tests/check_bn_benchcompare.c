/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchcompare: banyan-bench compare and continuous on fixed
    result files: the marks, and the exit status a CI job sees.  */
#include "bn_benchcompare.h"
#include "bn_testdir.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_BENCH BN_BUILD_DIR "/bin/banyan-bench"
#define S_BASE "1111111111111111111111111111111111111111"
#define S_HEAD "2222222222222222222222222222222222222222"
#define S_SAME "3333333333333333333333333333333333333333"
#define S_CHANGED "4444444444444444444444444444444444444444"

static char s_dir[64];

//  Ten samples around center.
static void
s_samples (double center, double *samples)
{
    for (int i = 0; i < 10; i++)
        samples[i] = center * (1 + (i - 5) * 0.002);
}

//  One result file: four benchmarks with the given medians (0: failed),
//  A of version version_a, the others of v1.
static void
s_write (const char *commit, const char *version_a, double a, double b,
         double c, double d)
{
    json_t *machine = bn_benchresults_machine_info ("testbox");
    bn_benchresults_t *results =
        bn_benchresults_new (machine, commit, "banyan-release", 1.7e12);
    json_decref (machine);
    const char *names[] = {"suite.A.time_a", "suite.B.time_b", "suite.C.time_c",
                           "suite.D.time_d"};
    double centers[] = {a, b, c, d};
    json_t *grid = json_pack ("[[s]]", "1");
    for (size_t i = 0; i < 4; i++) {
        bn_benchresults_begin (results, names[i], grid, i ? "v1" : version_a,
                               1.8e12);
        double samples[10];
        s_samples (centers[i], samples);
        bn_benchresults_set_case (results, names[i], 0,
                                  centers[i] > 0 ? BN_BENCHRESULT_OK
                                                 : BN_BENCHRESULT_FAILED,
                                  samples, 10, 1);
    }
    json_decref (grid);
    char err[256];
    ck_assert_int_eq (bn_benchresults_save (results, s_dir, err, sizeof err),
                      0);
    bn_benchresults_destroy (&results);
}

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_benchcompare-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    //  base: all 1 s; head: A worse, B better, C failing, D the same
    s_write (S_BASE, "v1", 1.0, 1.0, 1.0, 1.0);
    s_write (S_HEAD, "v1", 1.5, 0.5, 0, 1.001);
    s_write (S_SAME, "v1", 1.0, 1.0, 1.0, 1.0);
    //  A's code changed: its figures do not compare with base's
    s_write (S_CHANGED, "v2", 1.5, 1.0, 1.0, 1.0);
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

//  Run banyan-bench with args; its stdout goes to out (size bytes).
//  Returns its exit status.
static int
s_bench (char *out, size_t size, const char *const *args)
{
    char path[128];
    snprintf (path, sizeof path, "%s/out.txt", s_dir);
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2 (fd, 1);
        int null = open ("/dev/null", O_WRONLY);
        dup2 (null, 2);
        char *argv[16] = {S_BENCH};
        for (size_t i = 0; args[i] && i < 14; i++)
            argv[i + 1] = (char *)args[i];
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

//  The line of out that names benchmark, or NULL.
static const char *
s_line (const char *out, const char *benchmark)
{
    const char *at = strstr (out, benchmark);
    if (!at)
        return NULL;
    while (at > out && at[-1] != '\n')
        at--;
    return at;
}

START_TEST (test_usage)
{
    //  A developer compares two commits, then a CI job gates on it
    char out[8192];
    const char *compare[] = {"compare",   S_BASE, S_HEAD,
                             "--results", s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, compare), 0);
    ck_assert_ptr_nonnull (strstr (out, "[11111111]"));
    ck_assert_ptr_nonnull (strstr (out, "[22222222]"));
    ck_assert_int_eq (s_line (out, "suite.A.time_a")[0], '+');
    ck_assert_int_eq (s_line (out, "suite.B.time_b")[0], '-');
    ck_assert_int_eq (s_line (out, "suite.C.time_c")[0], '!');
    ck_assert_int_eq (s_line (out, "suite.D.time_d")[0], ' ');
    ck_assert_ptr_nonnull (strstr (s_line (out, "suite.A.time_a"), "1.50"));

    const char *continuous[] = {"continuous", "11111111", "22222222",
                                "--results",  s_dir,      NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, continuous), 1);
    //  continuous shows only what changed
    ck_assert_ptr_null (s_line (out, "suite.D.time_d"));
    ck_assert_ptr_nonnull (s_line (out, "suite.A.time_a"));
}
END_TEST

START_TEST (test_only_changed)
{
    char out[8192];
    const char *args[] = {"compare", S_BASE,           S_HEAD, "--results",
                          s_dir,     "--only-changed", NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, args), 0);
    ck_assert_ptr_null (s_line (out, "suite.D.time_d"));
    ck_assert_ptr_nonnull (s_line (out, "suite.C.time_c"));
}
END_TEST

START_TEST (test_continuous_exit)
{
    char out[8192];
    //  no change: 0
    const char *same[] = {"continuous", S_BASE, S_SAME,
                          "--results",  s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, same), 0);
    //  the other way round, B is worse and C is fixed: still 1
    const char *back[] = {"continuous", S_HEAD, S_BASE,
                          "--results",  s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, back), 1);
    ck_assert_int_eq (s_line (out, "suite.B.time_b")[0], '+');
    //  a factor of 2: A (1.5) and B are within it, C still fails newly
    const char *factor[] = {"continuous", S_BASE,     S_HEAD, "--results",
                            s_dir,        "--factor", "2",    NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, factor), 1);
    ck_assert_ptr_null (s_line (out, "suite.A.time_a"));
    ck_assert_int_eq (s_line (out, "suite.C.time_c")[0], '!');
    //  a result file named by its path works too
    char path[256];
    snprintf (path, sizeof path, "%s/testbox/33333333-banyan-release.json",
              s_dir);
    const char *by_path[] = {"continuous", S_BASE, path,
                             "--results",  s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, by_path), 0);
}
END_TEST

START_TEST (test_changed_version)
{
    //  As asv: a benchmark whose version differs is marked x, and is
    //  neither worse nor better
    char out[8192];
    const char *compare[] = {"compare",   S_BASE, S_CHANGED,
                             "--results", s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, compare), 0);
    ck_assert_int_eq (s_line (out, "suite.A.time_a")[0], 'x');
    ck_assert_int_eq (s_line (out, "suite.B.time_b")[0], ' ');
    const char *continuous[] = {"continuous", S_BASE, S_CHANGED,
                                "--results",  s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, continuous), 0);
    ck_assert_ptr_null (s_line (out, "suite.A.time_a"));
}
END_TEST

START_TEST (test_errors)
{
    char out[8192];
    const char *missing[] = {"continuous", S_BASE, "deadbeef",
                             "--results",  s_dir,  NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, missing), 3);
    const char *one[] = {"compare", S_BASE, "--results", s_dir, NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, one), 2);
    const char *factor[] = {"compare", S_BASE, S_HEAD, "--factor", "0.5", NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, factor), 2);
    const char *unknown[] = {"frobnicate", NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, unknown), 2);
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq (s_bench (out, sizeof out, help), 0);
    ck_assert_ptr_nonnull (strstr (out, "Examples:"));
}
END_TEST

START_TEST (test_counts)
{
    char err[256];
    bn_benchresults_t *base =
        bn_benchcompare_find (s_dir, NULL, S_BASE, err, sizeof err);
    bn_benchresults_t *head =
        bn_benchcompare_find (s_dir, "testbox", "2222", err, sizeof err);
    ck_assert_ptr_nonnull (base);
    ck_assert_ptr_nonnull (head);
    ck_assert_ptr_null (
        bn_benchcompare_find (s_dir, "otherbox", S_BASE, err, sizeof err));
    FILE *out = fopen ("/dev/null", "w");
    bn_benchcompare_counts_t counts;
    bn_benchcompare_print (base, head, NULL, 1.1, false, out, &counts);
    ck_assert_uint_eq (counts.worse, 1);
    ck_assert_uint_eq (counts.better, 1);
    ck_assert_uint_eq (counts.failing, 1);
    ck_assert_uint_eq (counts.compared, 4);
    fclose (out);
    bn_benchresults_destroy (&base);
    bn_benchresults_destroy (&head);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchcompare");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_only_changed);
    tcase_add_test (tc, test_continuous_exit);
    tcase_add_test (tc, test_changed_version);
    tcase_add_test (tc, test_errors);
    tcase_add_test (tc, test_counts);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

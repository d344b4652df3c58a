/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchrunner: the order banyan-bench runs a benchmark's cases
    in: the grid's (the last parameter fastest), for a comparison of
    stacks each cell's stacks one after the other, and with --rounds the
    whole selection pass after pass, each case's samples pooled.  */
#include "bn_benchcase.h"
#include "bn_benchresults.h"
#include "bn_benchrunner.h"
#include "bn_testdir.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_COMMIT "0123456789abcdef0123456789abcdef01234567"

static char s_dir[] = "/tmp/check_bn_benchrunner-XXXXXX";
static char s_log[sizeof s_dir + 16];

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_benchrunner-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    snprintf (s_log, sizeof s_log, "%s/cases", s_dir);
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

//  Each case, in the process the runner starts for it, writes its two
//  parameters to the log.
static int
s_log_case (bn_benchcase_t *c, const char *first, const char *second)
{
    char a[32], b[32], line[80];
    snprintf (line, sizeof line, "%s %s\n",
              bn_benchcase_str (c, first, a, sizeof a),
              bn_benchcase_str (c, second, b, sizeof b));
    int fd = open (s_log, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0)
        return BN_BENCH_FAIL;
    ssize_t written = write (fd, line, strlen (line));
    close (fd);
    return written == (ssize_t)strlen (line) ? BN_BENCH_OK : BN_BENCH_FAIL;
}

static int
s_stack_setup (bn_benchcase_t *c)
{
    return s_log_case (c, "stack", "engines");
}

static int
s_plain_setup (bn_benchcase_t *c)
{
    return s_log_case (c, "engines", "bytes");
}

static int
s_run (bn_benchcase_t *c, double *value)
{
    return BN_BENCH_OK;
}

static const bn_benchdef_t s_table[] = {
    {.name = "order.Stacks.time_call",
     .param_names = "stack engines",
     .params = "'mixed' 'ipp' | 1 2 16",
     .setup = s_stack_setup,
     .run = s_run,
     .repeat = 1,
     .number = 1,
     .warmup = -1},
    {.name = "order.Plain.time_call",
     .param_names = "engines bytes",
     .params = "1 2 | 10 20",
     .setup = s_plain_setup,
     .run = s_run,
     .repeat = 1,
     .number = 1,
     .warmup = -1},
};

//  Run the benchmarks that match regex in as many rounds; the log of their
//  cases.
static char *
s_run_rounds (const char *regex, int rounds)
{
    unlink (s_log);
    bn_benchrunner_t *runner = bn_benchrunner_new (s_table, 2);
    ck_assert_ptr_nonnull (runner);
    ck_assert_int_eq (bn_benchrunner_add_regex (runner, regex), 0);
    bn_benchrunner_set_rounds (runner, rounds);
    bn_benchrunner_set_results (runner, s_dir);
    bn_benchrunner_set_machine (runner, "testbox");
    bn_benchrunner_set_commit (runner, S_COMMIT, 1.7e12);
    ck_assert_int_eq (bn_benchrunner_run (runner), 0);
    bn_benchrunner_destroy (&runner);
    FILE *file = fopen (s_log, "r");
    ck_assert_ptr_nonnull (file);
    char *text = calloc (1, 4096);
    ck_assert_uint_gt (fread (text, 1, 4095, file), 0);
    fclose (file);
    return text;
}

static char *
s_run_cases (const char *regex)
{
    return s_run_rounds (regex, 1);
}

START_TEST (test_stacks_side_by_side)
{
    char *cases = s_run_cases ("^order\\.Stacks");
    ck_assert_str_eq (cases, "mixed 1\nipp 1\n"
                             "mixed 2\nipp 2\n"
                             "mixed 16\nipp 16\n");
    free (cases);
}
END_TEST

START_TEST (test_grid_order)
{
    char *cases = s_run_cases ("^order\\.Plain");
    ck_assert_str_eq (cases, "1 10\n1 20\n2 10\n2 20\n");
    free (cases);
}
END_TEST

START_TEST (test_rounds)
{
    char *cases = s_run_rounds ("^order\\.", 3);
    //  every case of the selection, then all of them again
    const char *pass = "mixed 1\nipp 1\nmixed 2\nipp 2\nmixed 16\nipp 16\n"
                       "1 10\n1 20\n2 10\n2 20\n";
    char want[512];
    snprintf (want, sizeof want, "%s%s%s", pass, pass, pass);
    ck_assert_str_eq (cases, want);
    free (cases);
    //  each case's figure is over the samples of the three passes
    char name[256], path[600], err[256];
    bn_benchresults_filename (S_COMMIT, "banyan", name, sizeof name);
    snprintf (path, sizeof path, "%s/testbox/%s", s_dir, name);
    bn_benchresults_t *results = bn_benchresults_load (path, err, sizeof err);
    ck_assert_msg (results != NULL, "%s", err);
    const char *benchmarks[] = {"order.Stacks.time_call",
                                "order.Plain.time_call"};
    size_t counts[] = {6, 4};
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < counts[b]; i++) {
            double value, *samples = NULL;
            size_t count = 0;
            ck_assert_int_eq (bn_benchresults_case (results, benchmarks[b], i,
                                                    &value, NULL, &samples,
                                                    &count),
                              BN_BENCHRESULT_OK);
            ck_assert_uint_eq (count, 3);
            free (samples);
        }
    bn_benchresults_destroy (&results);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchrunner");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_stacks_side_by_side);
    tcase_add_test (tc, test_grid_order);
    tcase_add_test (tc, test_rounds);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

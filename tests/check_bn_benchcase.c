/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchcase: what a benchmark's functions read and record in
    their case: parameter values, reasons, engines per process, programs.  */
#include "bn_benchcase.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static int
s_run (bn_benchcase_t *self, double *value)
{
    return BN_BENCH_OK;
}

static const bn_benchdef_t s_def = {.name = "echo.DirectView.time_echo",
                                    .param_names = "engines view",
                                    .params = "1 16 | 'direct' 'tree'",
                                    .run = s_run};

START_TEST (test_usage)
{
    bn_benchcase_t c = {.def = &s_def,
                        .param_count = 2,
                        .param_names = {"engines", "view"},
                        .param_values = {"16", "'tree'"}};
    char buf[32];
    ck_assert_str_eq (bn_benchcase_str (&c, "view", buf, sizeof buf), "tree");
    ck_assert_str_eq (bn_benchcase_str (&c, "engines", buf, sizeof buf), "16");
    ck_assert_ptr_null (bn_benchcase_str (&c, "bytes", buf, sizeof buf));
    ck_assert_int_eq (bn_benchcase_long (&c, "engines", 1), 16);
    ck_assert_int_eq (bn_benchcase_long (&c, "bytes", 1000), 1000);
    //  a value cut to the buffer
    char small[3];
    ck_assert_str_eq (bn_benchcase_str (&c, "view", small, sizeof small), "tr");

    ck_assert_int_eq (bn_benchcase_fail (&c, "no %s", "engines"),
                      BN_BENCH_FAIL);
    ck_assert_str_eq (c.reason, "no engines");
    ck_assert_int_eq (bn_benchcase_skip (&c, "needs %d hosts", 2),
                      BN_BENCH_SKIP);
    ck_assert_str_eq (c.reason, "needs 2 hosts");
}
END_TEST

START_TEST (test_per_process)
{
    bn_benchcase_t c = {.def = &s_def};
    ck_assert_int_eq (bn_benchcase_per_process (&c, 1), 1);
    ck_assert_int_eq (bn_benchcase_per_process (&c, 4), 1);
    ck_assert_int_eq (bn_benchcase_per_process (&c, 5), 2);
    ck_assert_int_eq (bn_benchcase_per_process (&c, 1024), 256);
    c.per_process = 8;
    ck_assert_int_eq (bn_benchcase_per_process (&c, 1024), 8);
    ck_assert_int_eq (bn_benchcase_per_process (&c, 3), 3);
}
END_TEST

START_TEST (test_program)
{
    bn_benchcase_t c = {.def = &s_def, .bin_dir = "/bin"};
    char *sh = bn_benchcase_program (&c, "sh");
    ck_assert_ptr_nonnull (sh);
    ck_assert_str_eq (sh, "/bin/sh");
    free (sh);
    ck_assert_ptr_null (bn_benchcase_program (&c, "bn-no-such-program"));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchcase");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_per_process);
    tcase_add_test (tc, test_program);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_climits: a cluster's needs against limits, and the
    --engines-per-process that fits.  */
#include "bn_climits.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_GIB (1024L * 1024L * 1024L)

//  Limits that hold nothing back
static bn_climits_t
s_roomy (void)
{
    return (bn_climits_t){-1, 0, 4000000, 300, 1024, 1048576, 64 * S_GIB};
}

START_TEST (test_fits)
{
    bn_climits_t limits = s_roomy ();
    char error[512] = "";
    ck_assert_int_eq (
        bn_climits_check (&limits, 1024, 1, true, error, sizeof error), 0);
    ck_assert_int_eq (
        bn_climits_check (&limits, 0, 1, true, error, sizeof error), 0);
    //  Nothing known, nothing refused
    limits = (bn_climits_t){-1, 0, -1, 0, -1, -1, -1};
    ck_assert_int_eq (
        bn_climits_check (&limits, 1000000, 1, true, error, sizeof error), 0);
    ck_assert_str_eq (error, "");
}
END_TEST

START_TEST (test_processes)
{
    bn_climits_t limits = s_roomy ();
    limits.tasks_limit = 100;
    limits.tasks_used = 20;
    char error[512];
    ck_assert_int_eq (
        bn_climits_check (&limits, 64, 1, true, error, sizeof error), -1);
    ck_assert_str_eq (error,
                      "-n 64: 64 engine processes and the cluster need about "
                      "272 processes and threads of yours; 20 of the 100 you "
                      "may have (ulimit -u) run already; with "
                      "--engines-per-process 4 (-k 4) it fits in 16 "
                      "processes");
    //  A remote launch's engines are not ours
    ck_assert_int_eq (
        bn_climits_check (&limits, 64, 1, false, error, sizeof error), 0);
    //  The host's own bound
    limits = s_roomy ();
    limits.machine_limit = 1000;
    limits.machine_used = 900;
    ck_assert_int_eq (
        bn_climits_check (&limits, 100, 2, true, error, sizeof error), -1);
    ck_assert_ptr_nonnull (strstr (error, "this host runs 900 of the 1000"));
    ck_assert_ptr_nonnull (
        strstr (error, "with --engines-per-process 5 (-k 5) it fits in 20"));
}
END_TEST

START_TEST (test_files)
{
    bn_climits_t limits = s_roomy ();
    limits.files_hard = 4096;
    char error[512];
    //  The controller's: no --engines-per-process helps, local or not
    ck_assert_int_eq (
        bn_climits_check (&limits, 1000, 10, false, error, sizeof error), -1);
    ck_assert_str_eq (error, "the controller of 1000 engines needs about "
                             "5128 open files, more than the 4096 a process "
                             "may have here (ulimit -Hn): raise that limit, "
                             "or start fewer engines");
    ck_assert_int_eq (bn_climits_controller_files (1000), 5128);
    //  An engine process's: fewer engines a process
    ck_assert_int_eq (
        bn_climits_check (&limits, 700, 700, true, error, sizeof error), -1);
    ck_assert_str_eq (error, "--engines-per-process 700: a process of 700 "
                             "engines needs about 5669 open files, more than "
                             "the 4096 a process may have here (ulimit -Hn); "
                             "with --engines-per-process 503 (-k 503) it fits "
                             "in 2 processes");
}
END_TEST

START_TEST (test_memory)
{
    bn_climits_t limits = s_roomy ();
    limits.memory = 2 * S_GIB;
    char error[512];
    ck_assert_int_eq (
        bn_climits_check (&limits, 500, 1, true, error, sizeof error), -1);
    ck_assert_ptr_nonnull (strstr (error, "-n 500: 500 engine processes and "
                                          "the controller need about 7269 MiB "
                                          "of memory; 2048 MiB are available; "
                                          "with --engines-per-process 8 (-k "
                                          "8) it fits in 63 processes"));
    //  Nothing fits: fewer engines
    limits.memory = 64L * 1024 * 1024;
    ck_assert_int_eq (
        bn_climits_check (&limits, 500, 1, true, error, sizeof error), -1);
    ck_assert_ptr_nonnull (strstr (error, "; no --engines-per-process fits: "
                                          "start fewer engines"));
}
END_TEST

START_TEST (test_read)
{
    bn_climits_t limits;
    bn_climits_read (&limits);
    //  A Linux host knows its bounds and what runs
    ck_assert_int_gt (limits.machine_limit, 0);
    ck_assert_int_gt (limits.machine_used, 0);
    ck_assert_int_gt (limits.memory, 0);
    ck_assert_int_gt (limits.files_soft, 0);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_climits");
    TCase *tcase = tcase_create ("core");
    tcase_add_test (tcase, test_fits);
    tcase_add_test (tcase, test_processes);
    tcase_add_test (tcase, test_files);
    tcase_add_test (tcase, test_memory);
    tcase_add_test (tcase, test_read);
    suite_add_tcase (suite, tcase);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

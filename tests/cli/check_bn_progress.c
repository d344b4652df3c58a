/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_progress: the progress line, shown on terminals only.  */
#include "bn_progress.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST (test_usage)
{
    //  Forced as if on a terminal, without delay
    char *text = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&text, &size);
    bn_progress_t *progress = bn_progress_new (file, "registered", 0.0);
    ck_assert_ptr_nonnull (progress);
    bn_progress_set_force (progress, true);
    bn_progress_update (progress, 37, 64);
    bn_progress_update (progress, 37, 64);
    bn_progress_update (progress, 64, 64);
    bn_progress_destroy (&progress);
    ck_assert_ptr_null (progress);
    fclose (file);
    ck_assert_str_eq (text, "\rregistered 37/64\033[K"
                            "\rregistered 64/64\033[K"
                            "\r\033[K");
    free (text);
}
END_TEST

START_TEST (test_silent_off_terminal)
{
    char *text = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&text, &size);
    bn_progress_t *progress = bn_progress_new (file, "", 0.0);
    bn_progress_update (progress, 1, 2);
    bn_progress_clear (progress);
    bn_progress_destroy (&progress);
    fclose (file);
    ck_assert_uint_eq (size, 0);
    free (text);
}
END_TEST

START_TEST (test_delay)
{
    char *text = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&text, &size);
    bn_progress_t *progress = bn_progress_new (file, "", 0.3);
    bn_progress_set_force (progress, true);
    bn_progress_update (progress, 1, 16);
    fflush (file);
    ck_assert_uint_eq (size, 0);
    usleep (350000);
    bn_progress_update (progress, 12, 16);
    bn_progress_destroy (&progress);
    fclose (file);
    ck_assert_str_eq (text, "\r12/16\033[K\r\033[K");
    free (text);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_progress");
    TCase *tcase = tcase_create ("core");
    tcase_add_test (tcase, test_usage);
    tcase_add_test (tcase, test_silent_off_terminal);
    tcase_add_test (tcase, test_delay);
    suite_add_tcase (suite, tcase);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

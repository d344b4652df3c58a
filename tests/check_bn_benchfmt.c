/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchfmt: figures printed as asv prints them.  */
#include "bn_benchfmt.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

START_TEST (test_usage)
{
    char buf[64];
    bn_benchfmt_value (0.0123, 0.0004, "seconds", buf, sizeof buf);
    ck_assert_str_eq (buf, "12.3±0.4ms");
    bn_benchfmt_value (1.5e-4, 1e-5, "seconds", buf, sizeof buf);
    ck_assert_str_eq (buf, "150±10μs");
    bn_benchfmt_value (2.25, -1, "seconds", buf, sizeof buf);
    ck_assert_str_eq (buf, "2.25s");
    bn_benchfmt_value (1.5e6, -1, "bytes", buf, sizeof buf);
    ck_assert_str_eq (buf, "1.50M");
    bn_benchfmt_value (NAN, -1, "seconds", buf, sizeof buf);
    ck_assert_str_eq (buf, "n/a");
    //  a unit of its own is spaced from the figure
    bn_benchfmt_value (42, 1.5, "msgs/s", buf, sizeof buf);
    ck_assert_str_eq (buf, "42.0±1.5 msgs/s");
    bn_benchfmt_value (0, -1, "seconds", buf, sizeof buf);
    ck_assert_str_eq (buf, "0ns");
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchfmt");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchstats: banyan-bench's median, quartiles, intervals and
    Mann-Whitney U, against values printed in statistics tables.  */
#include "bn_benchstats.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

START_TEST (test_usage)
{
    //  Ten samples of a benchmark: summarise them, print median ± IQR/2
    double samples[] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};
    bn_benchstats_t stats;
    ck_assert_int_eq (bn_benchstats_compute (&stats, samples, 10), 0);
    ck_assert_double_eq_tol (stats.median, 5.5, 1e-12);
    ck_assert_double_eq_tol (stats.q_25, 3.25, 1e-12);
    ck_assert_double_eq_tol (stats.q_75, 7.75, 1e-12);
    ck_assert_double_eq_tol (bn_benchstats_err (&stats), 2.25, 1e-12);
    ck_assert_double_eq (stats.min, 1);
    ck_assert_double_eq (stats.max, 10);
    ck_assert_uint_eq (stats.count, 10);
    //  the samples are left in the order they were measured
    ck_assert_double_eq (samples[0], 9);

    //  Is a second run different? Not from itself
    ck_assert (!bn_benchstats_differ (samples, 10, samples, 10));
}
END_TEST

START_TEST (test_quantiles)
{
    double odd[] = {3, 1, 2};
    ck_assert_double_eq (bn_benchstats_quantile (odd, 3, 0.5), 2);
    double even[] = {4, 1, 3, 2};
    ck_assert_double_eq_tol (bn_benchstats_quantile (even, 4, 0.5), 2.5, 1e-12);
    ck_assert_double_eq_tol (bn_benchstats_quantile (even, 4, 0.25), 1.75,
                             1e-12);
    ck_assert_double_eq (bn_benchstats_quantile (even, 4, 0), 1);
    ck_assert_double_eq (bn_benchstats_quantile (even, 4, 1), 4);
    double one = 7;
    ck_assert_double_eq (bn_benchstats_quantile (&one, 1, 0.75), 7);
    ck_assert (isnan (bn_benchstats_quantile (NULL, 0, 0.5)));
    bn_benchstats_t stats;
    ck_assert_int_eq (bn_benchstats_compute (&stats, NULL, 0), -1);
}
END_TEST

START_TEST (test_median_interval)
{
    //  The distribution-free 99 % interval of the median uses the order
    //  statistics of rank 4 and 17 for 20 samples (tables of the sign
    //  test); with 10 samples or fewer it is the whole range
    double samples[20];
    for (int i = 0; i < 20; i++)
        samples[i] = 20 - i; //  x(k) = k
    bn_benchstats_t stats;
    bn_benchstats_compute (&stats, samples, 20);
    ck_assert_double_eq (stats.ci_a, 4);
    ck_assert_double_eq (stats.ci_b, 17);
    bn_benchstats_compute (&stats, samples, 10);
    ck_assert_double_eq (stats.ci_a, 11);
    ck_assert_double_eq (stats.ci_b, 20);
}
END_TEST

START_TEST (test_mwu_statistic)
{
    double a[] = {1, 2, 3}, b[] = {4, 5, 6};
    ck_assert_double_eq (bn_benchstats_mwu_u (a, 3, b, 3), 0);
    ck_assert_double_eq (bn_benchstats_mwu_u (b, 3, a, 3), 9);
    //  ties count one half
    double c[] = {1, 2}, d[] = {2, 3};
    ck_assert_double_eq (bn_benchstats_mwu_u (c, 2, d, 2), 0.5);
    ck_assert_double_eq (bn_benchstats_mwu_u (d, 2, c, 2), 3.5);
}
END_TEST

START_TEST (test_mwu_critical_values)
{
    //  Two-tailed critical values of U from the published tables (e.g.
    //  Zar, Biostatistical Analysis, table B.11)
    struct {
        size_t n1, n2;
        double alpha;
        int critical;
    } table[] = {{5, 5, 0.05, 2},    {6, 6, 0.05, 5},     {7, 7, 0.05, 8},
                 {8, 8, 0.05, 13},   {10, 10, 0.05, 23},  {12, 12, 0.05, 37},
                 {15, 15, 0.05, 64}, {20, 20, 0.05, 127}, {5, 10, 0.05, 8},
                 {3, 20, 0.05, 8},   {8, 12, 0.05, 22},   {5, 5, 0.01, 0},
                 {6, 6, 0.01, 2},    {10, 10, 0.01, 16},  {15, 15, 0.01, 51},
                 {20, 20, 0.01, 105}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        ck_assert_msg (
            bn_benchstats_mwu_critical (table[i].n1, table[i].n2,
                                        table[i].alpha) == table[i].critical,
            "n1=%zu n2=%zu alpha=%g", table[i].n1, table[i].n2, table[i].alpha);
    //  No U is significant at 5 % with 2 and 2 samples
    ck_assert_int_eq (bn_benchstats_mwu_critical (2, 2, 0.05), -1);
}
END_TEST

START_TEST (test_mwu_p)
{
    //  Complete separation of 5 and 5: p = 2 / C(10, 5) = 2 / 252
    double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    ck_assert_double_eq_tol (bn_benchstats_mwu_p (a, 5, b, 5), 2.0 / 252,
                             1e-12);
    ck_assert_double_eq_tol (bn_benchstats_mwu_p (b, 5, a, 5), 2.0 / 252,
                             1e-12);
    //  Interleaved: nothing to see
    double c[] = {1, 3, 5, 7, 9}, d[] = {2, 4, 6, 8, 10};
    ck_assert (bn_benchstats_mwu_p (c, 5, d, 5) > 0.5);
    //  Large samples take the normal approximation: 30 against 30
    double low[30], high[30], mixed[30];
    for (int i = 0; i < 30; i++) {
        low[i] = i;
        high[i] = 100 + i;
        mixed[i] = i + 0.5;
    }
    ck_assert (bn_benchstats_mwu_p (low, 30, high, 30) < 1e-6);
    ck_assert (bn_benchstats_mwu_p (low, 30, mixed, 30) > 0.5);
    //  All tied
    double same[30];
    for (int i = 0; i < 30; i++)
        same[i] = 1;
    ck_assert_double_eq (bn_benchstats_mwu_p (same, 30, same, 30), 1);
    ck_assert (isnan (bn_benchstats_mwu_p (a, 0, b, 5)));
}
END_TEST

START_TEST (test_differ)
{
    double fast[10], slow[10];
    for (int i = 0; i < 10; i++) {
        fast[i] = 1.0 + i * 0.01;
        slow[i] = 1.5 + i * 0.01;
    }
    ck_assert (bn_benchstats_differ (fast, 10, slow, 10));
    ck_assert (bn_benchstats_differ (slow, 10, fast, 10));
    //  Three samples each: too few for U at 1 %, but the intervals (the
    //  ranges) do not overlap
    double a[] = {1, 1.1, 1.2}, b[] = {5, 5.1, 5.2}, c[] = {1.1, 1.15, 5};
    ck_assert (bn_benchstats_differ (a, 3, b, 3));
    ck_assert (!bn_benchstats_differ (a, 3, c, 3));
    ck_assert (!bn_benchstats_differ (a, 0, b, 3));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchstats");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_quantiles);
    tcase_add_test (tc, test_median_interval);
    tcase_add_test (tc, test_mwu_statistic);
    tcase_add_test (tc, test_mwu_critical_values);
    tcase_add_test (tc, test_mwu_p);
    tcase_add_test (tc, test_differ);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchdef: what a benchmark's definition says: its kind, unit
    and parameter grid as asv lists it.  */
#include "bn_benchdef.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static int
s_run (bn_benchcase_t *self, double *value)
{
    return BN_BENCH_OK;
}

//  The grid as compact JSON text; caller frees.
static char *
s_text (json_t *json)
{
    char *text = json_dumps (json, JSON_COMPACT);
    json_decref (json);
    ck_assert_ptr_nonnull (text);
    return text;
}

START_TEST (test_usage)
{
    bn_benchdef_t def = {.name = "echo.DirectView.time_echo",
                         .param_names = "engines bytes",
                         .params = "1 2 16 | 1000 10000",
                         .quick_params = "2 | 1000",
                         .run = s_run};
    ck_assert_int_eq (bn_benchdef_kind (&def), BN_BENCH_TIME);
    ck_assert_str_eq (bn_benchdef_unit (&def), "seconds");
    char *grid = s_text (bn_benchdef_grid (&def, false));
    ck_assert_str_eq (grid, "[[\"1\",\"2\",\"16\"],[\"1000\",\"10000\"]]");
    free (grid);
    grid = s_text (bn_benchdef_grid (&def, true));
    ck_assert_str_eq (grid, "[[\"2\"],[\"1000\"]]");
    free (grid);
}
END_TEST

START_TEST (test_kinds)
{
    bn_benchdef_t track = {
        .name = "memory.Engine.track_rss", .unit = "MB", .run = s_run};
    ck_assert_int_eq (bn_benchdef_kind (&track), BN_BENCH_TRACK);
    ck_assert_str_eq (bn_benchdef_unit (&track), "MB");
    bn_benchdef_t peak = {.name = "memory.Engine.peakmem_start", .run = s_run};
    ck_assert_int_eq (bn_benchdef_kind (&peak), BN_BENCH_PEAKMEM);
    ck_assert_str_eq (bn_benchdef_unit (&peak), "bytes");
    //  no parameters: an empty grid
    bn_benchdef_t plain = {.name = "time_plain", .run = s_run};
    ck_assert_int_eq (bn_benchdef_kind (&plain), BN_BENCH_TIME);
    char *grid = s_text (bn_benchdef_grid (&plain, true));
    ck_assert_str_eq (grid, "[]");
    free (grid);
}
END_TEST

START_TEST (test_grid_add)
{
    json_t *values = json_pack ("[s, s, s]", "2", "16", "'direct'");
    bn_benchdef_grid_add (values, "4");
    bn_benchdef_grid_add (values, "16");
    bn_benchdef_grid_add (values, "1");
    bn_benchdef_grid_add (values, "'tree'");
    char *text = s_text (values);
    ck_assert_str_eq (text,
                      "[\"1\",\"2\",\"4\",\"16\",\"'direct'\",\"'tree'\"]");
    free (text);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchdef");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_kinds);
    tcase_add_test (tc, test_grid_add);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

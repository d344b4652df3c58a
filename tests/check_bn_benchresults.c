/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchresults: banyan-bench's result files, written and read
    back, with every field asv's reader needs.  */
#include "bn_benchresults.h"
#include "bn_testdir.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_COMMIT "0123456789abcdef0123456789abcdef01234567"

static char s_dir[] = "/tmp/check_bn_benchresults-XXXXXX";

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_benchresults-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

static json_t *
s_grid (const char *a, const char *b)
{
    return json_pack ("[[s, s], [s]]", a, b, "1000");
}

//  Results of echo (engines 1 and 16, 1000 bytes): 1 ok, 16 as given.
static bn_benchresults_t *
s_make (bn_benchresult_t second)
{
    json_t *machine = bn_benchresults_machine_info ("testbox");
    bn_benchresults_t *results =
        bn_benchresults_new (machine, S_COMMIT, "banyan-release", 1.7e12);
    json_decref (machine);
    json_t *grid = s_grid ("1", "16");
    bn_benchresults_begin (results, "echo.DirectViewBroadcast.time_echo", grid,
                           "abcd", 1.8e12);
    json_decref (grid);
    double samples[] = {0.002, 0.001, 0.003, 0.0015, 0.0025};
    bn_benchresults_set_case (results, "echo.DirectViewBroadcast.time_echo", 0,
                              BN_BENCHRESULT_OK, samples, 5, 7);
    bn_benchresults_set_case (results, "echo.DirectViewBroadcast.time_echo", 1,
                              second, NULL, 0, 0);
    bn_benchresults_set_duration (results, "echo.DirectViewBroadcast.time_echo",
                                  1.5);
    return results;
}

START_TEST (test_usage)
{
    //  A run records its cases, saves, and compare reads them back
    bn_benchresults_t *results = s_make (BN_BENCHRESULT_FAILED);
    ck_assert_ptr_nonnull (results);
    char err[256] = "";
    ck_assert_int_eq (bn_benchresults_save (results, s_dir, err, sizeof err),
                      0);
    bn_benchresults_destroy (&results);
    ck_assert_ptr_null (results);

    char path[512];
    snprintf (path, sizeof path, "%s/testbox/01234567-banyan-release.json",
              s_dir);
    results = bn_benchresults_load (path, err, sizeof err);
    ck_assert_msg (results != NULL, "%s", err);
    ck_assert_str_eq (bn_benchresults_commit (results), S_COMMIT);
    ck_assert_str_eq (bn_benchresults_env (results), "banyan-release");
    ck_assert_str_eq (bn_benchresults_machine (results), "testbox");
    double value;
    bn_benchstats_t stats;
    double *samples;
    size_t count;
    ck_assert_int_eq (
        bn_benchresults_case (results, "echo.DirectViewBroadcast.time_echo", 0,
                              &value, &stats, &samples, &count),
        BN_BENCHRESULT_OK);
    ck_assert_double_eq_tol (value, 0.002, 1e-15);
    ck_assert_uint_eq (count, 5);
    //  samples in the order measured
    ck_assert_double_eq_tol (samples[1], 0.001, 1e-15);
    ck_assert_double_eq_tol (stats.q_25, 0.0015, 1e-9);
    ck_assert_double_eq_tol (stats.q_75, 0.0025, 1e-9);
    free (samples);
    ck_assert_int_eq (
        bn_benchresults_case (results, "echo.DirectViewBroadcast.time_echo", 1,
                              NULL, NULL, NULL, NULL),
        BN_BENCHRESULT_FAILED);
    ck_assert_int_eq (bn_benchresults_case (results, "no.Such.time_x", 0, NULL,
                                            NULL, NULL, NULL),
                      BN_BENCHRESULT_MISSING);
    const char *values[] = {"16", "1000"};
    ck_assert_int_eq (
        bn_benchresults_find (results, "echo.DirectViewBroadcast.time_echo",
                              values, 2),
        1);
    bn_benchresults_destroy (&results);
    bn_benchresults_destroy (&results);
}
END_TEST

//  Counts the results it is given, keeps none; stops at stop_at.
typedef struct {
    int seen;
    int stop_at;
} s_count_t;

static int
s_count (void *arg, bn_benchresults_t **results_p)
{
    s_count_t *count = (s_count_t *)arg;
    ck_assert_str_eq (bn_benchresults_machine (*results_p), "testbox");
    return ++count->seen == count->stop_at ? 7 : 0;
}

//  The result files of a machine folder, read one by one.
START_TEST (test_each)
{
    bn_benchresults_t *results = s_make (BN_BENCHRESULT_OK);
    char err[256] = "";
    ck_assert_int_eq (bn_benchresults_save (results, s_dir, err, sizeof err),
                      0);
    bn_benchresults_destroy (&results);
    char path[512];
    snprintf (path, sizeof path, "%s/testbox/fedcba98-banyan-dev.json", s_dir);
    FILE *other = fopen (path, "w");
    fputs ("not json", other);
    fclose (other);
    snprintf (path, sizeof path, "%s/testbox", s_dir);
    //  machine.json and the file that does not load are left out
    s_count_t count = {0, 0};
    ck_assert_int_eq (bn_benchresults_each (path, NULL, s_count, &count), 0);
    ck_assert_int_eq (count.seen, 1);
    count = (s_count_t){0, 0};
    ck_assert_int_eq (bn_benchresults_each (path, "fedc", s_count, &count), 0);
    ck_assert_int_eq (count.seen, 0);
    count = (s_count_t){0, 1};
    ck_assert_int_eq (bn_benchresults_each (path, "0123", s_count, &count), 7);
    ck_assert_int_eq (count.seen, 1);
    snprintf (path, sizeof path, "%s/nobox", s_dir);
    ck_assert_int_eq (bn_benchresults_each (path, NULL, s_count, &count), 0);
}
END_TEST

START_TEST (test_asv_fields)
{
    bn_benchresults_t *results = s_make (BN_BENCHRESULT_SKIPPED);
    char err[256] = "";
    ck_assert_int_eq (bn_benchresults_save (results, s_dir, err, sizeof err),
                      0);
    bn_benchresults_destroy (&results);
    char path[512];
    snprintf (path, sizeof path, "%s/testbox/01234567-banyan-release.json",
              s_dir);
    char *text = bn_benchresults_slurp (path);
    ck_assert_ptr_nonnull (text);
    //  a skipped case is NaN, as Python's json writes it
    ck_assert_ptr_nonnull (strstr (text, "NaN"));
    ck_assert_ptr_null (strstr (text, "\"NaN\""));
    json_t *root = bn_benchresults_loads (text, err, sizeof err);
    free (text);
    ck_assert_ptr_nonnull (root);
    //  what asv's Results.load reads
    ck_assert_int_eq (json_integer_value (json_object_get (root, "version")),
                      2);
    ck_assert_str_eq (json_string_value (json_object_get (root, "commit_hash")),
                      S_COMMIT);
    ck_assert_str_eq (json_string_value (json_object_get (root, "env_name")),
                      "banyan-release");
    ck_assert (json_is_integer (json_object_get (root, "date")));
    ck_assert (json_is_string (json_object_get (root, "python")));
    ck_assert (json_is_object (json_object_get (root, "requirements")));
    ck_assert (json_is_object (json_object_get (root, "env_vars")));
    ck_assert (json_is_object (json_object_get (root, "durations")));
    json_t *params = json_object_get (root, "params");
    const char *keys[] = {"arch", "cpu", "machine", "num_cpu", "os", "ram"};
    for (size_t i = 0; i < 6; i++)
        ck_assert_msg (json_is_string (json_object_get (params, keys[i])),
                       "params.%s", keys[i]);
    const char *columns[] = {"result",        "params",       "version",
                             "started_at",    "duration",     "stats_ci_99_a",
                             "stats_ci_99_b", "stats_q_25",   "stats_q_75",
                             "stats_number",  "stats_repeat", "samples",
                             "profile"};
    json_t *names = json_object_get (root, "result_columns");
    ck_assert_uint_eq (json_array_size (names), 13);
    for (size_t i = 0; i < 13; i++)
        ck_assert_str_eq (json_string_value (json_array_get (names, i)),
                          columns[i]);
    json_t *row = json_object_get (json_object_get (root, "results"),
                                   "echo.DirectViewBroadcast.time_echo");
    //  no profile column: trailing nulls are dropped
    ck_assert_uint_eq (json_array_size (row), 12);
    json_t *result = json_array_get (row, 0);
    ck_assert_uint_eq (json_array_size (result), 2);
    ck_assert (json_is_real (json_array_get (result, 0)));
    ck_assert_str_eq (json_string_value (json_array_get (result, 1)), "NaN");
    json_t *grid = json_array_get (row, 1);
    ck_assert_str_eq (
        json_string_value (json_array_get (json_array_get (grid, 0), 1)), "16");
    ck_assert_str_eq (json_string_value (json_array_get (row, 2)), "abcd");
    ck_assert (json_is_integer (json_array_get (row, 3)));
    ck_assert_double_eq_tol (json_number_value (json_array_get (row, 4)), 1.5,
                             1e-12);
    ck_assert_int_eq (
        json_integer_value (json_array_get (json_array_get (row, 9), 0)), 7);
    ck_assert_int_eq (
        json_integer_value (json_array_get (json_array_get (row, 10), 0)), 5);
    ck_assert (json_is_null (json_array_get (json_array_get (row, 10), 1)));
    ck_assert_uint_eq (
        json_array_size (json_array_get (json_array_get (row, 11), 0)), 5);
    json_decref (root);

    //  machine.json
    snprintf (path, sizeof path, "%s/testbox/machine.json", s_dir);
    json_t *machine = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (machine);
    ck_assert_int_eq (json_integer_value (json_object_get (machine, "version")),
                      1);
    ck_assert_str_eq (json_string_value (json_object_get (machine, "machine")),
                      "testbox");
    json_decref (machine);

    //  a loaded file reads the skipped case back as skipped
    snprintf (path, sizeof path, "%s/testbox/01234567-banyan-release.json",
              s_dir);
    results = bn_benchresults_load (path, err, sizeof err);
    ck_assert_int_eq (
        bn_benchresults_case (results, "echo.DirectViewBroadcast.time_echo", 1,
                              NULL, NULL, NULL, NULL),
        BN_BENCHRESULT_SKIPPED);
    //  and saves it unchanged
    ck_assert_int_eq (bn_benchresults_save (results, s_dir, err, sizeof err),
                      0);
    bn_benchresults_destroy (&results);
    results = bn_benchresults_load (path, err, sizeof err);
    ck_assert_int_eq (
        bn_benchresults_case (results, "echo.DirectViewBroadcast.time_echo", 1,
                              NULL, NULL, NULL, NULL),
        BN_BENCHRESULT_SKIPPED);
    bn_benchresults_destroy (&results);
}
END_TEST

START_TEST (test_benchmarks_json)
{
    bn_benchdef_t defs[] = {{.name = "echo.DirectViewBroadcast.time_echo",
                             .param_names = "engines bytes",
                             .params = "1 16 | 1000",
                             .floor = "engines bytes",
                             .description = "echo"},
                            {.name = "memory.Engine.peakmem_engine_process",
                             .param_names = "count",
                             .params = "1"},
                            {.name = "startup.Registration.track_registered",
                             .param_names = "",
                             .params = "",
                             .unit = "seconds"}};
    const bn_benchdef_t *pointers[] = {&defs[0], &defs[1], &defs[2]};
    json_t *grids[] = {s_grid ("1", "16"), json_pack ("[[s]]", "1"),
                       json_array ()};
    char err[256];
    ck_assert_int_eq (bn_benchresults_save_benchmarks (s_dir, pointers, grids,
                                                       3, err, sizeof err),
                      0);
    char path[512];
    snprintf (path, sizeof path, "%s/benchmarks.json", s_dir);
    json_t *root = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (root);
    ck_assert_int_eq (json_integer_value (json_object_get (root, "version")),
                      2);
    json_t *echo = json_object_get (root, "echo.DirectViewBroadcast.time_echo");
    ck_assert_str_eq (json_string_value (json_object_get (echo, "type")),
                      "time");
    ck_assert_str_eq (json_string_value (json_object_get (echo, "unit")),
                      "seconds");
    ck_assert_str_eq (json_string_value (json_object_get (echo, "name")),
                      "echo.DirectViewBroadcast.time_echo");
    ck_assert_uint_eq (json_array_size (json_object_get (echo, "param_names")),
                       2);
    ck_assert (json_equal (json_object_get (echo, "params"), grids[0]));
    ck_assert (json_is_string (json_object_get (echo, "version")));
    json_t *memory =
        json_object_get (root, "memory.Engine.peakmem_engine_process");
    ck_assert_str_eq (json_string_value (json_object_get (memory, "type")),
                      "peakmemory");
    ck_assert_str_eq (json_string_value (json_object_get (memory, "unit")),
                      "bytes");
    json_t *track =
        json_object_get (root, "startup.Registration.track_registered");
    ck_assert_str_eq (json_string_value (json_object_get (track, "type")),
                      "track");
    ck_assert_uint_eq (json_array_size (json_object_get (track, "params")), 0);
    json_decref (root);
    for (size_t i = 0; i < 3; i++)
        json_decref (grids[i]);
}
END_TEST

//  benchmarks.json's entry for name, read back; NULL if it has none.
static json_t *
s_entry (const char *name)
{
    char path[512];
    snprintf (path, sizeof path, "%s/benchmarks.json", s_dir);
    json_t *root = json_load_file (path, 0, NULL);
    json_t *entry = json_incref (json_object_get (root, name));
    json_decref (root);
    return entry;
}

//  Save def's entry after a run with grid (JSON text).
static void
s_ran (const bn_benchdef_t *def, const char *grid_text)
{
    json_t *grid = json_loads (grid_text, 0, NULL);
    ck_assert_ptr_nonnull (grid);
    char err[256];
    ck_assert_int_eq (bn_benchresults_save_benchmarks (s_dir, &def, &grid, 1,
                                                       err, sizeof err),
                      0);
    json_decref (grid);
}

static void
s_assert_params (json_t *entry, const char *expected_text)
{
    json_t *expected = json_loads (expected_text, 0, NULL);
    char *got = json_dumps (json_object_get (entry, "params"), JSON_COMPACT);
    ck_assert_msg (json_equal (json_object_get (entry, "params"), expected),
                   "params %s, expected %s", got, expected_text);
    free (got);
    json_decref (expected);
}

START_TEST (test_version_across_grids)
{
    //  asv drops every result whose version is not benchmarks.json's, and
    //  reads a result's cases through the grid benchmarks.json declares:
    //  runs with other grids (--quick, --engines, -p) must keep the version
    //  and leave the whole grid declared
    bn_benchdef_t def = {.name = "echo.CoalescingBroadcast.time_echo",
                         .param_names = "engines bytes",
                         .params = "1 16 64 | 1000 10000",
                         .quick_params = "1 2 | 1000",
                         .description = "coalescing echo"};
    char version[64];
    bn_benchresults_version (&def, version, sizeof version);

    s_ran (&def, "[[\"1\", \"2\"], [\"1000\"]]"); //  --quick
    json_t *entry = s_entry (def.name);
    ck_assert_str_eq (json_string_value (json_object_get (entry, "version")),
                      version);
    s_assert_params (entry, "[[\"1\", \"2\", \"16\", \"64\"], "
                            "[\"1000\", \"10000\"]]");
    json_decref (entry);

    s_ran (&def, "[[\"1024\"], [\"1000\"]]"); //  --engines 1024
    s_ran (&def, "[[\"4\"], [\"100\"]]");     //  --engines 4 -p bytes=100
    entry = s_entry (def.name);
    ck_assert_str_eq (json_string_value (json_object_get (entry, "version")),
                      version);
    //  every value any run used, numbers in order
    s_assert_params (entry, "[[\"1\", \"2\", \"4\", \"16\", \"64\", "
                            "\"1024\"], [\"100\", \"1000\", \"10000\"]]");
    json_decref (entry);

    //  a result row carries the same version
    json_t *machine = bn_benchresults_machine_info ("testbox");
    bn_benchresults_t *results =
        bn_benchresults_new (machine, S_COMMIT, "banyan-release", 1.7e12);
    json_decref (machine);
    json_t *grid = json_pack ("[[s], [s]]", "1024", "1000");
    bn_benchresults_begin (results, def.name, grid, version, 1.8e12);
    json_decref (grid);
    ck_assert_str_eq (bn_benchresults_row_version (results, def.name), version);
    bn_benchresults_destroy (&results);

    //  the version changes with the definition; values that no run of the
    //  new version used are then dropped
    def.description = "coalescing echo, through the tree";
    char changed[64];
    bn_benchresults_version (&def, changed, sizeof changed);
    ck_assert_str_ne (changed, version);
    s_ran (&def, "[[\"1\"], [\"1000\"]]");
    entry = s_entry (def.name);
    ck_assert_str_eq (json_string_value (json_object_get (entry, "version")),
                      changed);
    s_assert_params (entry, "[[\"1\", \"2\", \"16\", \"64\"], "
                            "[\"1000\", \"10000\"]]");
    json_decref (entry);

    //  a version the definition gives is taken as it is
    def.version = "2";
    bn_benchresults_version (&def, changed, sizeof changed);
    ck_assert_str_eq (changed, "2");

    //  text parameters keep the table's order, new ones after it
    bn_benchdef_t modes = {.name = "tree.TreeShapes.time_echo",
                           .param_names = "tree_mode",
                           .params = "'threads' 'processes'"};
    s_ran (&modes, "[[\"'hosts'\", \"'threads'\"]]");
    entry = s_entry (modes.name);
    s_assert_params (entry, "[[\"'threads'\", \"'processes'\", "
                            "\"'hosts'\"]]");
    json_decref (entry);
}
END_TEST

START_TEST (test_machine_ram)
{
    //  asv writes ram as the bytes of MemTotal, as text
    json_t *machine = bn_benchresults_machine_info (NULL);
    const char *ram = json_string_value (json_object_get (machine, "ram"));
    ck_assert_ptr_nonnull (ram);
    FILE *meminfo = fopen ("/proc/meminfo", "r");
    ck_assert_ptr_nonnull (meminfo);
    long long kb = 0;
    char line[256];
    while (fgets (line, sizeof line, meminfo))
        if (sscanf (line, "MemTotal: %lld kB", &kb) == 1)
            break;
    fclose (meminfo);
    ck_assert_int_gt (kb, 0);
    char expected[32];
    snprintf (expected, sizeof expected, "%lld", kb * 1024);
    ck_assert_str_eq (ram, expected);
    ck_assert (json_is_string (json_object_get (machine, "num_cpu")));
    json_decref (machine);
}
END_TEST

START_TEST (test_bad_files)
{
    char err[256] = "";
    char path[512];
    snprintf (path, sizeof path, "%s/missing.json", s_dir);
    ck_assert_ptr_null (bn_benchresults_load (path, err, sizeof err));
    ck_assert (strlen (err) > 0);
    const char *texts[] = {"{", "[]", "{\"version\": 1, \"results\": {}}",
                           "{\"version\": 2, \"results\": [],"
                           " \"result_columns\": [], \"commit_hash\": \"x\"}"};
    for (size_t i = 0; i < 4; i++) {
        FILE *file = fopen (path, "w");
        fputs (texts[i], file);
        fclose (file);
        err[0] = 0;
        ck_assert_ptr_null (bn_benchresults_load (path, err, sizeof err));
        ck_assert (strlen (err) > 0);
    }
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchresults");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_each);
    tcase_add_test (tc, test_asv_fields);
    tcase_add_test (tc, test_benchmarks_json);
    tcase_add_test (tc, test_version_across_grids);
    tcase_add_test (tc, test_machine_ram);
    tcase_add_test (tc, test_bad_files);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

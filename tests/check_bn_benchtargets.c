/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_benchtargets: the README's targets, met or not by results
    files, and the table put in place between its markers.  */
#include "bn_benchtargets.h"
#include "bn_suites.h"
#include "bn_testdir.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_OLD "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define S_NEW "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define S_ECHO "echo.CoalescingBroadcast.time_echo"
#define S_FLOOR "floor.ZmqFloor.time_echo"
#define S_PEER "peer.CoalescingBroadcast.time_echo"
#define S_PEAK "large.Memory.peakmem_process"

static char s_dir[] = "/tmp/check_bn_benchtargets-XXXXXX";
static json_t *s_benchmarks;

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_benchtargets-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    s_benchmarks =
        json_pack ("{s:{s:[s,s], s:s, s:s, s:s}, s:{s:[s,s]}, s:{s:[s,s]},"
                   " s:{s:[s,s], s:s}}",
                   S_ECHO, "param_names", "engines", "bytes", "unit", "seconds",
                   "banyan_floor", "engines bytes", "banyan_floor_benchmark",
                   S_FLOOR, S_FLOOR, "param_names", "engines", "bytes", S_PEER,
                   "param_names", "stack", "engines", S_PEAK, "param_names",
                   "bytes", "process", "unit", "bytes");
    ck_assert_ptr_nonnull (s_benchmarks);
}

static void
s_teardown (void)
{
    json_decref (s_benchmarks);
    t_rmtree (s_dir);
}

static bn_benchresults_t *
s_results (const char *commit)
{
    json_t *machine = bn_benchresults_machine_info ("testbox");
    bn_benchresults_t *results =
        bn_benchresults_new (machine, commit, "banyan-release", 1.7e12);
    json_decref (machine);
    ck_assert_ptr_nonnull (results);
    return results;
}

//  Benchmark name with grid (asv's list of lists, as JSON text) and one
//  value per case (NAN: failed).
static void
s_add (bn_benchresults_t *results, const char *name, const char *grid_text,
       const double *values, size_t count)
{
    json_t *grid = json_loads (grid_text, 0, NULL);
    ck_assert_ptr_nonnull (grid);
    bn_benchresults_begin (results, name, grid, "v1", 1.8e12);
    json_decref (grid);
    for (size_t i = 0; i < count; i++)
        bn_benchresults_set_case (
            results, name, i,
            values[i] == values[i] ? BN_BENCHRESULT_OK : BN_BENCHRESULT_FAILED,
            &values[i], 1, 1);
}

//  The echo at 1 and 16 engines: 3 ms and 10 ms against 1 ms and 4 ms.
static bn_benchresults_t *
s_echo_results (const char *commit)
{
    bn_benchresults_t *results = s_results (commit);
    double echo[] = {0.003, 0.010}, floor[] = {0.001, 0.004};
    s_add (results, S_ECHO, "[[\"1\", \"16\"], [\"1000\"]]", echo, 2);
    s_add (results, S_FLOOR, "[[\"1\", \"16\"], [\"1000\"]]", floor, 2);
    return results;
}

//  The table of one target against results (count of them), asserted
//  to be written; the caller frees it.
static char *
s_table (bn_benchtarget_t target, bn_benchresults_t **results, size_t count)
{
    char err[256] = "";
    char *table = bn_benchtargets_table (&target, 1, s_benchmarks, results,
                                         count, err, sizeof err);
    ck_assert_msg (table != NULL, "no table: %s", err);
    return table;
}

static void
s_assert_has (const char *text, const char *part)
{
    ck_assert_msg (strstr (text, part) != NULL, "'%s' not in:\n%s", part, text);
}

//  Assert that the table of one target against results (count of them)
//  holds part.
static void
s_expect (bn_benchtarget_t target, bn_benchresults_t **results, size_t count,
          const char *part)
{
    char *table = s_table (target, results, count);
    s_assert_has (table, part);
    free (table);
}

START_TEST (test_floor)
{
    bn_benchresults_t *results = s_echo_results (S_OLD);
    bn_benchtarget_t target = {
        "echo within 3x",     S_ECHO, "engines=1,16 bytes=1000",
        BN_BENCHTARGET_FLOOR, NULL,   3.0};
    char *table = s_table (target, &results, 1);
    s_assert_has (table, "| target | measured [commit] | met |\n");
    s_assert_has (table, "| echo within 3x | engines=1: 3.00× (3.00ms); "
                         "engines=16: 2.50× (10.0ms) [aaaaaaaa] | yes |\n");
    free (table);

    //  one cell past the bound
    target.bound = 2.8;
    s_expect (target, &results, 1, "| no |\n");

    //  a cell no run measured: not met, though none measured is past it
    target.bound = 3.0;
    target.cells = "engines=1,16,64 bytes=1000";
    s_expect (target, &results, 1,
              "(10.0ms); 1 of 3 cells not measured [aaaaaaaa] | "
              "not measured |\n");
    //  ...and past the bound where one measured is
    target.bound = 2.8;
    s_expect (target, &results, 1, "not measured [aaaaaaaa] | no |\n");
    bn_benchresults_destroy (&results);
}
END_TEST

//  A target stated against another floor than the benchmark's own (the
//  relay floor of a push through the mux): its cells' ratios are to that
//  one, at the same parameters; without it, not measured.
START_TEST (test_other_floor)
{
    bn_benchresults_t *results = s_echo_results (S_OLD);
    bn_benchtarget_t target = {
        "echo within 2x of a relay",     S_ECHO,
        "engines=1,16 bytes=1000",       BN_BENCHTARGET_FLOOR,
        "floor.ZmqRelayFloor.time_echo", 2.0};
    s_expect (target, &results, 1, "not measured");
    double relay[] = {0.002, 0.005};
    s_add (results, "floor.ZmqRelayFloor.time_echo",
           "[[\"1\", \"16\"], [\"1000\"]]", relay, 2);
    s_expect (target, &results, 1,
              "| echo within 2x of a relay | engines=1: 1.50× (3.00ms); "
              "engines=16: 2.00× (10.0ms) [aaaaaaaa] | yes |\n");
    bn_benchresults_destroy (&results);
}
END_TEST

START_TEST (test_newest_with_yardstick)
{
    bn_benchresults_t *results[2] = {s_echo_results (S_OLD), s_results (S_NEW)};
    //  the newer run measured the echo at one engine but not its floor,
    //  and failed at 16 engines
    double echo[] = {0.002, NAN};
    s_add (results[1], S_ECHO, "[[\"1\", \"16\"], [\"1000\"]]", echo, 2);
    bn_benchtarget_t target = {
        "echo", S_ECHO, "engines=1,16 bytes=1000", BN_BENCHTARGET_FLOOR,
        NULL,   3.0};
    s_expect (target, results, 2,
              "engines=1: 3.00× (3.00ms); engines=16: 2.50× "
              "(10.0ms) [aaaaaaaa] | yes |");

    //  with its floor beside it, the newer figure is the one
    double floor[] = {0.001};
    s_add (results[1], S_FLOOR, "[[\"1\"], [\"1000\"]]", floor, 1);
    s_expect (target, results, 2,
              "engines=1: 2.00× (2.00ms); engines=16: 2.50× "
              "(10.0ms) [bbbbbbbb, aaaaaaaa] | yes |");

    //  the newer run's floor measured again by a later run, which did not
    //  measure the echo: not the echo's yardstick, the older run's is
    json_t *grid = json_loads ("[[\"1\"], [\"1000\"]]", 0, NULL);
    bn_benchresults_begin (results[1], S_FLOOR, grid, "v1", 1.9e12);
    json_decref (grid);
    double faster = 0.0005;
    bn_benchresults_set_case (results[1], S_FLOOR, 0, BN_BENCHRESULT_OK,
                              &faster, 1, 1);
    s_expect (target, results, 2,
              "engines=1: 3.00× (3.00ms); engines=16: 2.50× "
              "(10.0ms) [aaaaaaaa] | yes |");
    bn_benchresults_destroy (&results[0]);
    bn_benchresults_destroy (&results[1]);
}
END_TEST

START_TEST (test_stack)
{
    bn_benchresults_t *results = s_results (S_OLD);
    //  banyan-controller ('mixed') against ipcontroller ('ipp')
    double times[] = {0.0010, 0.0021, 0.0010, 0.0020};
    s_add (results, S_PEER, "[[\"'mixed'\", \"'ipp'\"], [\"1\", \"2\"]]", times,
           4);
    bn_benchtarget_t target = {
        "never slower",       S_PEER,        "stack='mixed' engines=1,2",
        BN_BENCHTARGET_STACK, "stack='ipp'", 1.06};
    s_expect (target, &results, 1,
              "| never slower | engines=1: 1.00× (1.00ms); "
              "engines=2: 1.05× (2.10ms) [aaaaaaaa] | yes |");
    target.bound = 1.04;
    s_expect (target, &results, 1, "| no |");
    bn_benchresults_destroy (&results);
}
END_TEST

START_TEST (test_bytes_and_summary)
{
    bn_benchresults_t *results = s_results (S_OLD);
    //  peaks of eight processes moving 1,000 bytes: the fourth holds 1.5
    //  copies
    double peaks[] = {1000, 1100, 1200, 1500, 900, 1000, 1000, 1000};
    s_add (results, S_PEAK,
           "[[\"1000\"], [\"'a'\", \"'b'\", \"'c'\", \"'d'\", \"'e'\", "
           "\"'f'\", \"'g'\", \"'h'\"]]",
           peaks, 8);
    //  and 'h' does not apply (n/a): not a cell of the target
    bn_benchresults_set_case (results, S_PEAK, 7, BN_BENCHRESULT_SKIPPED, NULL,
                              0, 0);
    bn_benchtarget_t target = {
        "one copy",
        S_PEAK,
        "bytes=1000 process='a','b','c','d','e','f','g','h','i'",
        BN_BENCHTARGET_BYTES,
        NULL,
        1.25};
    char *table = s_table (target, &results, 1);
    //  more cells than a row lists: the count and the worst
    s_assert_has (table, "| one copy | 6 of 7 within 1.25×; the worst "
                         "1.50× (process=d, ");
    s_assert_has (table, "); 1 of 8 cells not measured [aaaaaaaa] | no |");
    free (table);
    bn_benchresults_destroy (&results);
}
END_TEST

START_TEST (test_at_most)
{
    bn_benchresults_t *results = s_echo_results (S_OLD);
    //  a bound on the value itself, in the benchmark's unit
    bn_benchtarget_t target = {
        "fast enough",          S_ECHO, "engines=1 bytes=1000",
        BN_BENCHTARGET_AT_MOST, NULL,   0.005};
    s_expect (target, &results, 1, "| fast enough | 3.00ms [aaaaaaaa] | yes |");
    target.bound = 0.002;
    s_expect (target, &results, 1, "| fast enough | 3.00ms [aaaaaaaa] | no |");
    bn_benchresults_destroy (&results);
}
END_TEST

START_TEST (test_unknown)
{
    bn_benchresults_t *results = s_echo_results (S_OLD);
    //  a benchmark no run declared is not measured
    bn_benchtarget_t target = {"later",
                               "px.Gather.time_px",
                               "engines=1024 bytes=0",
                               BN_BENCHTARGET_FLOOR,
                               NULL,
                               1.2};
    s_expect (target, &results, 1, "| later | not measured | not measured |");

    //  a parameter the benchmark does not have is an error
    target = (bn_benchtarget_t){
        "deep", S_ECHO, "engines=1 depth=2", BN_BENCHTARGET_FLOOR, NULL, 2.0};
    char err[256] = "";
    ck_assert_ptr_null (bn_benchtargets_table (&target, 1, s_benchmarks,
                                               &results, 1, err, sizeof err));
    s_assert_has (err, "no parameter depth");
    //  and so is one left without values
    target.cells = "engines=1";
    ck_assert_ptr_null (bn_benchtargets_table (&target, 1, s_benchmarks,
                                               &results, 1, err, sizeof err));
    s_assert_has (err, "no values of bytes");
    bn_benchresults_destroy (&results);
}
END_TEST

//  Assert that every value target's cells name is in the benchmark's
//  grid (entry: its benchmarks.json object).
static void
s_cells_in_grid (const bn_benchtarget_t *target, json_t *grid, json_t *entry)
{
    json_t *param_names = json_object_get (entry, "param_names");
    char cells[512];
    snprintf (cells, sizeof cells, "%s", target->cells);
    char *save = NULL;
    for (char *word = strtok_r (cells, " ", &save); word;
         word = strtok_r (NULL, " ", &save)) {
        char *values = strchr (word, '=');
        ck_assert_ptr_nonnull (values);
        *values++ = '\0';
        size_t p = 0;
        while (p < json_array_size (param_names) &&
               strcmp (json_string_value (json_array_get (param_names, p)),
                       word) != 0)
            p++;
        json_t *list = json_array_get (grid, p);
        char *inner = NULL;
        for (char *value = strtok_r (values, ",", &inner); value;
             value = strtok_r (NULL, ",", &inner)) {
            bool found = false;
            for (size_t i = 0; i < json_array_size (list); i++)
                found |= strcmp (json_string_value (json_array_get (list, i)),
                                 value) == 0;
            ck_assert_msg (found, "%s: %s=%s is not in its grid", target->text,
                           word, value);
        }
    }
}

//  Each of banyan's targets names benchmarks of the suites' table, every
//  parameter of each, values its grid has, and a yardstick it has.
START_TEST (test_builtin)
{
    size_t count, defs_count;
    const bn_benchtarget_t *targets = bn_benchtargets_builtin (&count);
    const bn_benchdef_t *defs = bn_suites_table (&defs_count);
    ck_assert_uint_ge (count, 8);
    for (size_t t = 0; t < count; t++) {
        char names[512];
        snprintf (names, sizeof names, "%s", targets[t].benchmarks);
        char *save = NULL;
        for (char *name = strtok_r (names, " ", &save); name;
             name = strtok_r (NULL, " ", &save)) {
            const bn_benchdef_t *def = NULL;
            for (size_t d = 0; d < defs_count; d++)
                if (strcmp (defs[d].name, name) == 0)
                    def = &defs[d];
            ck_assert_msg (def != NULL, "%s is not a benchmark", name);
            if (targets[t].kind == BN_BENCHTARGET_FLOOR)
                ck_assert_msg (bn_benchdef_floor (def) != NULL,
                               "%s has no floor", name);
            json_t *grid = bn_benchdef_grid (def, false);
            //  its parameters, as benchmarks.json names them
            json_t *param_names = json_array ();
            char params[128];
            snprintf (params, sizeof params, "%s", def->param_names);
            char *inner = NULL;
            for (char *word = strtok_r (params, " ", &inner); word;
                 word = strtok_r (NULL, " ", &inner))
                json_array_append_new (param_names, json_string (word));
            json_t *benchmarks =
                json_pack ("{s:{s:o}}", name, "param_names", param_names);
            //  every cell of the target is in the grid
            bn_benchresults_t *results = s_results (S_OLD);
            bn_benchresults_begin (results, name, grid, "v1", 1.8e12);
            char err[256] = "";
            char *table = bn_benchtargets_table (&targets[t], 1, benchmarks,
                                                 &results, 1, err, sizeof err);
            ck_assert_msg (table != NULL, "%s", err);
            free (table);
            //  and the other stack compared with
            if (targets[t].kind == BN_BENCHTARGET_STACK) {
                const char *value = strchr (targets[t].versus, '=') + 1;
                json_t *stacks = json_array_get (grid, 0);
                bool found = false;
                for (size_t i = 0; i < json_array_size (stacks); i++)
                    found |=
                        strcmp (json_string_value (json_array_get (stacks, i)),
                                value) == 0;
                ck_assert_msg (found, "%s has no %s", name, value);
            }
            s_cells_in_grid (&targets[t], grid,
                             json_object_get (benchmarks, name));
            bn_benchresults_destroy (&results);
            json_decref (benchmarks);
            json_decref (grid);
        }
    }
}
END_TEST

static void
s_write (const char *path, const char *text)
{
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fputs (text, file);
    fclose (file);
}

START_TEST (test_splice)
{
    char path[256];
    snprintf (path, sizeof path, "%s/README.md", s_dir);
    const char *head = "# banyan\n\nIts figures:\n\n";
    s_write (path, "# banyan\n\nIts figures:\n\n" BN_BENCHTARGETS_BEGIN
                   "\n| old | table |\n" BN_BENCHTARGETS_END "\n\nThe end.\n");
    char err[256] = "";
    ck_assert_int_eq (
        bn_benchtargets_splice (path, "| new | table |\n", err, sizeof err), 0);
    char *text = bn_benchresults_slurp (path);
    char expected[512];
    snprintf (expected, sizeof expected,
              "%s%s\n| new | table |\n%s\n\nThe end.\n", head,
              BN_BENCHTARGETS_BEGIN, BN_BENCHTARGETS_END);
    ck_assert_str_eq (text, expected);
    free (text);
    //  again: the same text
    ck_assert_int_eq (
        bn_benchtargets_splice (path, "| new | table |", err, sizeof err), 0);
    text = bn_benchresults_slurp (path);
    ck_assert_str_eq (text, expected);
    free (text);

    //  no markers, or only the end one before the beginning: refused,
    //  saying what is missing, the file as it was
    const char *bad[] = {"# banyan\n",
                         BN_BENCHTARGETS_END "\n" BN_BENCHTARGETS_BEGIN "\n"};
    for (size_t i = 0; i < 2; i++) {
        s_write (path, bad[i]);
        ck_assert_int_eq (
            bn_benchtargets_splice (path, "| new |\n", err, sizeof err), -1);
        s_assert_has (err, "has no lines " BN_BENCHTARGETS_BEGIN);
        text = bn_benchresults_slurp (path);
        ck_assert_str_eq (text, bad[i]);
        free (text);
    }
    //  a file that is not there
    snprintf (path, sizeof path, "%s/missing.md", s_dir);
    ck_assert_int_eq (bn_benchtargets_splice (path, "x", err, sizeof err), -1);
    s_assert_has (err, "cannot read");
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_benchtargets");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_floor);
    tcase_add_test (tc, test_other_floor);
    tcase_add_test (tc, test_newest_with_yardstick);
    tcase_add_test (tc, test_stack);
    tcase_add_test (tc, test_bytes_and_summary);
    tcase_add_test (tc, test_at_most);
    tcase_add_test (tc, test_unknown);
    tcase_add_test (tc, test_builtin);
    tcase_add_test (tc, test_splice);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

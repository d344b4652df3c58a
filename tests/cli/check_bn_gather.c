/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_gather: grouping engines by identical output and status, and
    the prefixed and gathered output formats of `banyan px`.  */
#include "bn_gather.h"
#include "bn_pxout.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Run print into a memory stream and return what it wrote (caller frees).
static char *
s_printed (bn_gather_t *gather, bool quiet)
{
    char *text = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&text, &size);
    ck_assert_ptr_nonnull (file);
    ck_assert_int_eq (bn_gather_print (gather, file, quiet), 0);
    fclose (file);
    return text;
}

START_TEST (test_usage)
{
    //  px -b on four engines: three agree, one failed
    bn_gather_t *gather = bn_gather_new ();
    ck_assert_ptr_nonnull (gather);
    for (int id = 0; id < 3; id++)
        ck_assert_int_eq (bn_gather_add (gather, id, "Linux\n", 6, "", 0, ""),
                          0);
    ck_assert_int_eq (bn_gather_add (gather, 3, "", 0, "no uname\n", 9,
                                     "exited with exit code 127"),
                      0);
    ck_assert_uint_eq (bn_gather_size (gather), 2);
    char *text = s_printed (gather, false);
    ck_assert_str_eq (text, "---------------\n"
                            "engines[0-2] (3)\n"
                            "---------------\n"
                            "Linux\n"
                            "---------------\n"
                            "engines[3] (1)\n"
                            "---------------\n"
                            "[stderr] no uname\n"
                            "[status] exited with exit code 127\n");
    free (text);
    bn_gather_destroy (&gather);
    ck_assert_ptr_null (gather);
    bn_gather_destroy (&gather);
}
END_TEST

START_TEST (test_identical_outputs_fold)
{
    bn_gather_t *gather = bn_gather_new ();
    for (int id = 0; id < 16; id++)
        bn_gather_add (gather, id, "same", 4, NULL, 0, NULL);
    bn_gather_add (gather, 32, "same", 4, NULL, 0, NULL);
    ck_assert_uint_eq (bn_gather_size (gather), 1);
    char *text = s_printed (gather, false);
    //  A final newline is added to output that lacks one
    ck_assert_str_eq (text, "---------------\n"
                            "engines[0-15,32] (17)\n"
                            "---------------\n"
                            "same\n");
    free (text);
    bn_gather_destroy (&gather);
}
END_TEST

START_TEST (test_differing_outputs)
{
    //  Engines arrive in any order; groups come out by smallest id, each
    //  with its own folded set
    bn_gather_t *gather = bn_gather_new ();
    int order[] = {5, 1, 4, 0, 3, 2};
    for (size_t index = 0; index < 6; index++) {
        int id = order[index];
        const char *out = id % 2 ? "odd\n" : "even\n";
        bn_gather_add (gather, id, out, strlen (out), "", 0, "");
    }
    ck_assert_uint_eq (bn_gather_size (gather), 2);
    char *first = bn_idset_encode (bn_gather_ids (gather, 0));
    char *second = bn_idset_encode (bn_gather_ids (gather, 1));
    ck_assert_str_eq (first, "0,2,4");
    ck_assert_str_eq (second, "1,3,5");
    free (first);
    free (second);
    size_t size;
    ck_assert_str_eq (bn_gather_out (gather, 0, &size), "even\n");
    ck_assert_uint_eq (size, 5);
    ck_assert_ptr_null (bn_gather_out (gather, 2, &size));
    bn_gather_destroy (&gather);
}
END_TEST

START_TEST (test_status_and_stderr_split_groups)
{
    //  Same stdout, different status or stderr: different groups
    bn_gather_t *gather = bn_gather_new ();
    bn_gather_add (gather, 0, "x\n", 2, "", 0, "");
    bn_gather_add (gather, 1, "x\n", 2, "", 0, "exited with exit code 1");
    bn_gather_add (gather, 2, "x\n", 2, "warn\n", 5, "");
    bn_gather_add (gather, 3, "x\n", 2, "", 0, "");
    //  The boundary between stdout and stderr counts
    bn_gather_add (gather, 4, "x\nw", 3, "arn\n", 4, "");
    ck_assert_uint_eq (bn_gather_size (gather), 4);
    ck_assert_str_eq (bn_gather_status (gather, 1), "exited with exit code 1");
    char *ids = bn_idset_encode (bn_gather_ids (gather, 0));
    ck_assert_str_eq (ids, "0,3");
    free (ids);
    //  Quiet drops status lines, not output
    char *text = s_printed (gather, true);
    ck_assert_ptr_null (strstr (text, "[status]"));
    ck_assert_ptr_nonnull (strstr (text, "[stderr] warn\n"));
    free (text);
    bn_gather_destroy (&gather);
}
END_TEST

START_TEST (test_binary_and_empty_output)
{
    bn_gather_t *gather = bn_gather_new ();
    bn_gather_add (gather, 2, "a\0b", 3, "", 0, "");
    bn_gather_add (gather, 3, "a\0c", 3, "", 0, "");
    bn_gather_add (gather, 0, "", 0, "", 0, "");
    bn_gather_add (gather, 1, "", 0, "", 0, "");
    ck_assert_uint_eq (bn_gather_size (gather), 3);
    ck_assert_int_eq (bn_gather_add (gather, -1, "", 0, "", 0, ""), -1);
    char *text = s_printed (gather, false);
    //  Engines without output still get their header
    ck_assert (strncmp (text,
                        "---------------\nengines[0-1] (2)\n"
                        "---------------\n---------------\nengines[2] (1)\n",
                        64) == 0);
    free (text);
    bn_gather_destroy (&gather);
}
END_TEST

START_TEST (test_many_engines)
{
    bn_gather_t *gather = bn_gather_new ();
    for (int id = 0; id < 4096; id++) {
        char out[32];
        snprintf (out, sizeof out, "host%d\n", id / 1024);
        bn_gather_add (gather, id, out, strlen (out), "", 0, "");
    }
    ck_assert_uint_eq (bn_gather_size (gather), 4);
    char *ids = bn_idset_encode (bn_gather_ids (gather, 3));
    ck_assert_str_eq (ids, "3072-4095");
    free (ids);
    bn_gather_destroy (&gather);
}
END_TEST

static char *
s_prefixed (const char *kind, int id, const char *text)
{
    char *out = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&out, &size);
    ck_assert_int_eq (bn_pxout_prefixed (file, kind, id, text, strlen (text)),
                      0);
    fclose (file);
    return out;
}

START_TEST (test_prefixed_lines)
{
    struct {
        const char *text;
        const char *expected;
    } cases[] = {
        {"hello\n", "[stdout:3] hello\n"},
        {"no newline", "[stdout:3] no newline\n"},
        {"a\nb\n", "[stdout:3] a\n[stdout:3] b\n"},
        {"a\n\nb", "[stdout:3] a\n[stdout:3] \n[stdout:3] b\n"},
        {"", ""},
    };
    for (size_t index = 0; index < sizeof cases / sizeof cases[0]; index++) {
        char *out = s_prefixed ("stdout", 3, cases[index].text);
        ck_assert_str_eq (out, cases[index].expected);
        free (out);
    }
    char *out = s_prefixed ("stderr", 12, "oops\n");
    ck_assert_str_eq (out, "[stderr:12] oops\n");
    free (out);
}
END_TEST

START_TEST (test_header)
{
    bn_idset_t *ids = bn_idset_parse ("0-3");
    char *out = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&out, &size);
    ck_assert_int_eq (bn_pxout_header (file, ids), 0);
    fclose (file);
    ck_assert_str_eq (out,
                      "---------------\nengines[0-3] (4)\n---------------\n");
    free (out);
    bn_idset_destroy (&ids);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_gather");
    TCase *tcase = tcase_create ("core");
    tcase_add_test (tcase, test_usage);
    tcase_add_test (tcase, test_identical_outputs_fold);
    tcase_add_test (tcase, test_differing_outputs);
    tcase_add_test (tcase, test_status_and_stderr_split_groups);
    tcase_add_test (tcase, test_binary_and_empty_output);
    tcase_add_test (tcase, test_many_engines);
    tcase_add_test (tcase, test_prefixed_lines);
    tcase_add_test (tcase, test_header);
    suite_add_tcase (suite, tcase);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_reduction: the built-in reductions sum, min and max that the
    tree's nodes and the client both apply, and the call of a reduction's
    functions.  */
#include "bn_reduction.h"
#include "bn_reduction_cases.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

//  The repr of what the built-in op makes of a then b (both taken): each
//  lifted, then combined; NULL if a call fails, with its error in *error.
static char *
s_reduce (const char *op, bn_value_t *a, bn_value_t *b,
          bn_reduction_error_t *error)
{
    const bn_reduction_t *reduction = bn_reduction_builtin (op);
    ck_assert_ptr_nonnull (reduction);
    bn_value_t *acc = bn_reduction_call (reduction->lift, op, NULL, a, error);
    if (!acc) {
        bn_value_destroy (&b);
        return NULL;
    }
    bn_value_t *value = bn_reduction_call (reduction->lift, op, NULL, b, error);
    if (!value) {
        bn_value_destroy (&acc);
        return NULL;
    }
    bn_value_t *result =
        bn_reduction_call (reduction->combine, op, acc, value, error);
    char *repr = result ? bn_value_repr (result) : NULL;
    bn_value_destroy (&result);
    return repr;
}

START_TEST (test_usage)
{
    //  A node lifts each engine's result into a partial and folds the
    //  partials with combine; the client folds the partials it receives.
    const bn_reduction_t *sum = bn_reduction_builtin ("sum");
    ck_assert_ptr_nonnull (sum);
    ck_assert_str_eq (sum->name, "sum");
    bn_reduction_error_t error;
    bn_value_t *acc = bn_reduction_call (sum->lift, "sum", NULL,
                                         bn_value_new_int (40), &error);
    bn_value_t *partial = bn_reduction_call (sum->lift, "sum", NULL,
                                             bn_value_new_bool (true), &error);
    ck_assert_int_eq (bn_value_type (partial), BN_VALUE_INT);
    acc = bn_reduction_call (sum->combine, "sum", acc, partial, &error);
    partial = bn_reduction_call (sum->lift, "sum", NULL, bn_value_new_int (1),
                                 &error);
    acc = bn_reduction_call (sum->combine, "sum", acc, partial, &error);
    ck_assert_int_eq (bn_value_type (acc), BN_VALUE_INT);
    ck_assert_int_eq (bn_value_int (acc), 42);
    ck_assert_str_eq (error.ename, "");
    bn_value_destroy (&acc);
}
END_TEST

START_TEST (test_builtins)
{
    const char *names[] = {"sum", "min", "max"};
    const bn_reduction_t *all = bn_reduction_builtins ();
    size_t count = 0;
    for (; all[count].name; count++) {
        ck_assert_str_eq (all[count].name, names[count]);
        ck_assert_ptr_nonnull (all[count].lift);
        ck_assert_ptr_nonnull (all[count].combine);
        ck_assert_ptr_nonnull (all[count].doc);
        ck_assert_ptr_eq (bn_reduction_builtin (names[count]), &all[count]);
    }
    ck_assert_uint_eq (count, 3);
    ck_assert_ptr_null (bn_reduction_builtin ("avg"));
    ck_assert_ptr_null (bn_reduction_builtin ("example:prod"));
    ck_assert_ptr_null (bn_reduction_builtin (""));
    ck_assert_ptr_null (bn_reduction_builtin (NULL));
}
END_TEST

//  Every case gives its answer whichever partial comes first.
START_TEST (test_arrival_order)
{
    for (size_t i = 0; i < BN_REDUCTION_NCASES; i++) {
        const bn_reduction_case_t *c = &bn_reduction_cases[i];
        bn_reduction_error_t error;
        char *forward = s_reduce (c->op, bn_case_value (c->a),
                                  bn_case_value (c->b), &error);
        char *backward = s_reduce (c->op, bn_case_value (c->b),
                                   bn_case_value (c->a), &error);
        const char *expected = c->expected ? c->expected : "(fails)";
        ck_assert_msg (strcmp (forward ? forward : "(fails)", expected) == 0 &&
                           strcmp (backward ? backward : "(fails)", expected) ==
                               0,
                       "case %zu, %s: %s one way, %s the other, not %s", i,
                       c->op, forward, backward, expected);
        if (!c->expected) {
            ck_assert_str_eq (error.ename, "OverflowError");
            ck_assert_str_eq (error.evalue,
                              "sum of ints does not fit in 64 bits");
        }
        free (forward);
        free (backward);
    }
}
END_TEST

START_TEST (test_exact_comparison)
{
    //  Around 2^53 and 2^63, where doubles skip integers: each pair is
    //  ordered by value, not by the rounded double of the int.
    struct {
        int64_t i;
        double f;
        const char *max;
    } pairs[] = {
        {9007199254740993LL, 9007199254740992.0, "9007199254740993"},
        {9007199254740991LL, 9007199254740992.0, "9007199254740992.0"},
        {-9007199254740993LL, -9007199254740992.0, "-9007199254740992.0"},
        {INT64_MAX, 9223372036854775808.0, "9.223372036854776e+18"},
        {INT64_MIN, -9223372036854775808.0, "-9223372036854775808"},
        {INT64_MIN, -9223372036854777856.0, "-9223372036854775808"},
        {2, 2.5, "2.5"},
        {-2, -2.5, "-2"},
        {3, INFINITY, "inf"},
        {3, -INFINITY, "3"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        bn_reduction_error_t error;
        char *one = s_reduce ("max", bn_value_new_int (pairs[i].i),
                              bn_value_new_float (pairs[i].f), &error);
        char *other = s_reduce ("max", bn_value_new_float (pairs[i].f),
                                bn_value_new_int (pairs[i].i), &error);
        ck_assert_msg (one && other && strcmp (one, pairs[i].max) == 0 &&
                           strcmp (other, pairs[i].max) == 0,
                       "pair %zu: %s and %s, not %s", i, one, other,
                       pairs[i].max);
        free (one);
        free (other);
    }
}
END_TEST

START_TEST (test_not_numbers)
{
    //  lift refuses what is not a number, naming the reduction and type.
    const bn_reduction_t *max = bn_reduction_builtin ("max");
    bn_reduction_error_t error;
    bn_value_t *value = bn_reduction_call (max->lift, "max", NULL,
                                           bn_value_new_str ("x"), &error);
    ck_assert_ptr_null (value);
    ck_assert_str_eq (error.ename, "TypeError");
    ck_assert_str_eq (error.evalue, "max of a 'str': numbers only");
    value = bn_reduction_call (max->lift, "max", NULL, bn_value_new_none (),
                               &error);
    ck_assert_ptr_null (value);
    ck_assert_str_eq (error.evalue, "max of a 'NoneType': numbers only");
    //  So does combine, for a partial from a peer that is not one.
    const char *ops[] = {"sum", "min", "max"};
    for (size_t i = 0; i < 3; i++) {
        const bn_reduction_t *reduction = bn_reduction_builtin (ops[i]);
        value =
            bn_reduction_call (reduction->combine, ops[i], bn_value_new_int (1),
                               bn_value_new_str ("x"), &error);
        ck_assert_ptr_null (value);
        ck_assert_str_eq (error.ename, "TypeError");
        value =
            bn_reduction_call (reduction->combine, ops[i], bn_value_new_none (),
                               bn_value_new_float (1), &error);
        ck_assert_ptr_null (value);
        ck_assert_str_eq (error.ename, "TypeError");
    }
}
END_TEST

//  A function that fails without saying why.
static bn_value_t *
s_silent (bn_reduce_call_t *call)
{
    (void)call;
    return NULL;
}

//  One that reports an error and still returns a value.
static bn_value_t *
s_both (bn_reduce_call_t *call)
{
    call->error (call, "ValueError", "bad %s", call->reduction);
    call->error (call, "KeyError", "later");
    bn_value_t *value = call->value;
    call->value = NULL;
    return value;
}

START_TEST (test_call)
{
    bn_reduction_error_t error;
    bn_value_t *value =
        bn_reduction_call (s_silent, "p:silent", bn_value_new_int (1),
                           bn_value_new_int (2), &error);
    ck_assert_ptr_null (value);
    ck_assert_str_eq (error.ename, "RuntimeError");
    ck_assert_str_eq (error.evalue, "reduction p:silent returned nothing");
    //  The first error counts and the value is dropped.
    value = bn_reduction_call (s_both, "p:both", NULL, bn_value_new_int (2),
                               &error);
    ck_assert_ptr_null (value);
    ck_assert_str_eq (error.ename, "ValueError");
    ck_assert_str_eq (error.evalue, "bad p:both");
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_reduction");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_builtins);
    tcase_add_test (tc, test_arrival_order);
    tcase_add_test (tc, test_exact_comparison);
    tcase_add_test (tc, test_not_numbers);
    tcase_add_test (tc, test_call);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

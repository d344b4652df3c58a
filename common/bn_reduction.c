/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduction: the built-in reductions sum, min and max, and the call of
    a reduction's lift or combine with its error collected.  */
#include "bn_reduction.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

//  Check that *value_p is a number for the call's reduction, a bool made
//  the int 0 or 1. Returns 0, or -1 after call->error (or out of memory).
static int
s_numeric (bn_reduce_call_t *call, bn_value_t **value_p)
{
    bn_value_type_t type = bn_value_type (*value_p);
    if (type == BN_VALUE_INT || type == BN_VALUE_FLOAT)
        return 0;
    if (type != BN_VALUE_BOOL) {
        call->error (call, "TypeError", "%s of a '%s': numbers only",
                     call->reduction, bn_value_type_name (*value_p));
        return -1;
    }
    bn_value_t *number = bn_value_new_int (bn_value_int (*value_p));
    if (!number) {
        call->error (call, "MemoryError", "out of memory");
        return -1;
    }
    bn_value_destroy (value_p);
    *value_p = number;
    return 0;
}

//  lift of the built-ins: numbers pass (bools as ints), others fail.
static bn_value_t *
s_lift (bn_reduce_call_t *call)
{
    if (s_numeric (call, &call->value))
        return NULL;
    bn_value_t *value = call->value;
    call->value = NULL;
    return value;
}

//  combine of sum: int + int stays int (or fails on overflow), a float
//  makes a float.
static bn_value_t *
s_sum (bn_reduce_call_t *call)
{
    if (s_numeric (call, &call->acc) || s_numeric (call, &call->value))
        return NULL;
    if (bn_value_type (call->acc) == BN_VALUE_INT &&
        bn_value_type (call->value) == BN_VALUE_INT) {
        int64_t total;
        if (__builtin_add_overflow (bn_value_int (call->acc),
                                    bn_value_int (call->value), &total)) {
            call->error (call, "OverflowError",
                         "sum of ints does not fit in 64 bits");
            return NULL;
        }
        return bn_value_new_int (total);
    }
    return bn_value_new_float (bn_value_float (call->acc) +
                               bn_value_float (call->value));
}

//  -1, 0 or 1 as the int i is below, equal to or above the float f
//  (not a NaN), exactly: no rounding of i to a double.
static int
s_compare_int_float (int64_t i, double f)
{
    //  -2^63 and 2^63 are exact doubles; past them f is beyond any int.
    if (f >= 9223372036854775808.0)
        return -1;
    if (f < -9223372036854775808.0)
        return 1;
    double whole = trunc (f);
    int64_t j = (int64_t)whole;
    if (i != j)
        return (i > j) - (i < j);
    //  Same integer part: the fraction decides.
    return (f > whole) ? -1 : (f < whole) ? 1 : 0;
}

//  -1, 0 or 1 as a < b, a == b, a > b for ints and floats, exact for ints
//  past 2^53; 2 when either is a NaN (unordered).
static int
s_compare (const bn_value_t *a, const bn_value_t *b)
{
    bool a_int = bn_value_type (a) == BN_VALUE_INT;
    bool b_int = bn_value_type (b) == BN_VALUE_INT;
    if (a_int && b_int) {
        int64_t x = bn_value_int (a), y = bn_value_int (b);
        return (x > y) - (x < y);
    }
    double x = bn_value_float (a), y = bn_value_float (b);
    if (isnan (x) || isnan (y))
        return 2;
    if (a_int)
        return s_compare_int_float (bn_value_int (a), y);
    if (b_int)
        return -s_compare_int_float (bn_value_int (b), x);
    return (x > y) - (x < y);
}

//  Keep acc or value, whichever want (-1 min, 1 max) picks. Ties and NaN
//  are settled by what the values are, never by which came first: a
//  number over a NaN, an int over an equal float, for max 0.0 over -0.0
//  and for min the reverse.
static bn_value_t *
s_pick (bn_reduce_call_t *call, int want)
{
    if (s_numeric (call, &call->acc) || s_numeric (call, &call->value))
        return NULL;
    bn_value_t *acc = call->acc, *value = call->value;
    int order = s_compare (value, acc);
    bool take_value;
    if (order == 2)
        take_value =
            isnan (bn_value_float (acc)) && !isnan (bn_value_float (value));
    else if (order != 0)
        take_value = order == want;
    else if (bn_value_type (value) != bn_value_type (acc))
        take_value = bn_value_type (value) == BN_VALUE_INT;
    else if (bn_value_type (value) == BN_VALUE_FLOAT &&
             signbit (bn_value_float (value)) != signbit (bn_value_float (acc)))
        take_value = (signbit (bn_value_float (value)) != 0) == (want < 0);
    else
        take_value = false;
    bn_value_t **kept = take_value ? &call->value : &call->acc;
    bn_value_t *result = *kept;
    *kept = NULL;
    return result;
}

static bn_value_t *
s_min (bn_reduce_call_t *call)
{
    return s_pick (call, -1);
}

static bn_value_t *
s_max (bn_reduce_call_t *call)
{
    return s_pick (call, 1);
}

static const bn_reduction_t s_builtins[] = {
    {"sum", s_lift, s_sum, "sum of numbers"},
    {"min", s_lift, s_min, "smallest number"},
    {"max", s_lift, s_max, "largest number"},
    {NULL, NULL, NULL, NULL}};

const bn_reduction_t *
bn_reduction_builtins (void)
{
    return s_builtins;
}

const bn_reduction_t *
bn_reduction_builtin (const char *name)
{
    for (const bn_reduction_t *r = s_builtins; name && r->name; r++)
        if (strcmp (r->name, name) == 0)
            return r;
    return NULL;
}

//  call->error: keep the first exception in the caller's error.
static void s_call_error (bn_reduce_call_t *call, const char *ename,
                          const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

static void
s_call_error (bn_reduce_call_t *call, const char *ename, const char *format,
              ...)
{
    bn_reduction_error_t *error = call->node;
    if (*error->ename)
        return;
    snprintf (error->ename, sizeof error->ename, "%s",
              ename && *ename ? ename : "Exception");
    va_list args;
    va_start (args, format);
    vsnprintf (error->evalue, sizeof error->evalue, format, args);
    va_end (args);
}

bn_value_t *
bn_reduction_call (bn_reduce_fn *fn, const char *op, bn_value_t *acc,
                   bn_value_t *value, bn_reduction_error_t *error)
{
    assert (fn);
    assert (op);
    assert (error);
    memset (error, 0, sizeof *error);
    bn_reduce_call_t call = {BN_REDUCE_ABI_VERSION, op,   acc, value,
                             s_call_error,          error};
    bn_value_t *result = fn (&call);
    bn_value_destroy (&call.acc);
    bn_value_destroy (&call.value);
    if (result && *error->ename)
        bn_value_destroy (&result);
    if (!result && !*error->ename) {
        snprintf (error->ename, sizeof error->ename, "RuntimeError");
        snprintf (error->evalue, sizeof error->evalue,
                  "reduction %s returned nothing", op);
    }
    return result;
}

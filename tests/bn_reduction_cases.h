/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduction_cases: pairs of partial reductions and what the built-in
    reductions make of them in either order; check_bn_reduction runs them
    on the reductions, check_bn_reduce through a tree node's reduction and
    check_bn_client through the client's combining of forwarded partials,
    so that each shows the same answer whichever partial arrives first.  */
#ifndef BN_REDUCTION_CASES_H_INCLUDED
#define BN_REDUCTION_CASES_H_INCLUDED

#include "bn_value.h"

#include <math.h>
#include <stdint.h>

//  A number as a case spells it: 'i' int, 'f' float, 'b' bool.
typedef struct {
    char type;
    int64_t i;
    double f;
} bn_case_number_t;

typedef struct {
    const char *op;       //  sum, min or max
    bn_case_number_t a;   //  one partial
    bn_case_number_t b;   //  the other
    const char *expected; //  repr of the result; NULL: the reduction fails
} bn_reduction_case_t;

#define BN_CASE_INT(v)                                                         \
    {                                                                          \
        'i', (v), 0                                                            \
    }
#define BN_CASE_FLOAT(v)                                                       \
    {                                                                          \
        'f', 0, (v)                                                            \
    }
#define BN_CASE_BOOL(v)                                                        \
    {                                                                          \
        'b', (v), 0                                                            \
    }

static const bn_reduction_case_t bn_reduction_cases[] = {
    //  A NaN is never chosen over a number; two NaNs give a NaN.
    {"max", BN_CASE_FLOAT (NAN), BN_CASE_INT (3), "3"},
    {"min", BN_CASE_FLOAT (NAN), BN_CASE_INT (3), "3"},
    {"max", BN_CASE_FLOAT (NAN), BN_CASE_FLOAT (-1.5), "-1.5"},
    {"max", BN_CASE_FLOAT (NAN), BN_CASE_FLOAT (NAN), "nan"},
    //  On a tie the int is kept; of two zeros max keeps 0.0, min -0.0.
    {"max", BN_CASE_FLOAT (7.0), BN_CASE_INT (7), "7"},
    {"min", BN_CASE_FLOAT (7.0), BN_CASE_INT (7), "7"},
    {"max", BN_CASE_FLOAT (-0.0), BN_CASE_FLOAT (0.0), "0.0"},
    {"min", BN_CASE_FLOAT (-0.0), BN_CASE_FLOAT (0.0), "-0.0"},
    {"min", BN_CASE_FLOAT (0.0), BN_CASE_INT (0), "0"},
    //  Ints past 2^53 compare exactly with floats, and with each other.
    {"max", BN_CASE_INT (9007199254740993LL),
     BN_CASE_FLOAT (9007199254740992.0), "9007199254740993"},
    {"min", BN_CASE_INT (9007199254740993LL),
     BN_CASE_FLOAT (9007199254740992.0), "9007199254740992.0"},
    {"max", BN_CASE_INT (9007199254740993LL), BN_CASE_INT (9007199254740992LL),
     "9007199254740993"},
    {"min", BN_CASE_INT (INT64_MAX), BN_CASE_FLOAT (9223372036854775808.0),
     "9223372036854775807"},
    //  Sums: exact in ints, a float once a float is in, bools as ints,
    //  and an int sum past 64 bits fails.
    {"sum", BN_CASE_INT (9007199254740993LL), BN_CASE_INT (2),
     "9007199254740995"},
    {"sum", BN_CASE_INT (2), BN_CASE_FLOAT (0.5), "2.5"},
    {"sum", BN_CASE_BOOL (1), BN_CASE_INT (2), "3"},
    {"max", BN_CASE_BOOL (1), BN_CASE_INT (1), "1"},
    {"sum", BN_CASE_INT (INT64_MAX), BN_CASE_INT (1), NULL},
    {"sum", BN_CASE_INT (INT64_MIN), BN_CASE_INT (-1), NULL},
};

#define BN_REDUCTION_NCASES                                                    \
    (sizeof bn_reduction_cases / sizeof bn_reduction_cases[0])

//  A new value for a case's number.
static inline bn_value_t *
bn_case_value (bn_case_number_t number)
{
    return number.type == 'i'   ? bn_value_new_int (number.i)
           : number.type == 'b' ? bn_value_new_bool (number.i != 0)
                                : bn_value_new_float (number.f);
}

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduction: what a reduction of broadcast results is (a lift and a
    combine function, the ABI reduction plugins implement:
    bn_reduce_plugin.h), how one is called, and the built-in sum, min and
    max: the one implementation that the tree's nodes apply to their
    engines' results and the client to the partial reductions the tree
    forwards, so that both give the same answer.

    Built-ins work on numbers: int (64-bit), float, and bool (as the int 0
    or 1, as Python adds them). sum of ints is an int, and a float once
    any float is in; an int sum that leaves 64 bits fails with
    OverflowError (Python would grow the int; a wrong float would be
    worse). min and max compare ints and floats by value, exactly (ints
    past 2^53 too), and keep the winning value's type. A result that does
    not depend on which partial comes first: a NaN is never chosen over a
    number, of an int and a float that are equal the int is kept, and of
    0.0 and -0.0 max keeps 0.0 and min -0.0. Any other value (str, None,
    a list...) fails with TypeError ("sum of a 'str': numbers only").  */
#ifndef BN_REDUCTION_H_INCLUDED
#define BN_REDUCTION_H_INCLUDED

#include "bn_value.h"

//  Version of the reduction ABI; a plugin built for another is refused.
#define BN_REDUCE_ABI_VERSION 1

typedef struct _bn_reduce_call_t bn_reduce_call_t;

//  One call of lift or combine.
struct _bn_reduce_call_t {
    int abi_version;       //  BN_REDUCE_ABI_VERSION of the caller
    const char *reduction; //  full name, "example:prod" or "sum"
    //  combine: the partial so far (acc) and the one to fold in (value);
    //  lift: the engine's result in value, acc NULL. Both are owned by the
    //  caller and destroyed after the call; a function may take one to
    //  return it (or keep parts of it) by setting the field to NULL.
    bn_value_t *acc;
    bn_value_t *value;

    //  Make the call fail with a Python-style exception: ename (such as
    //  "TypeError") and a printf-style message. The function then returns
    //  NULL.
    void (*error) (bn_reduce_call_t *call, const char *ename,
                   const char *format, ...)
        __attribute__ ((format (printf, 3, 4)));

    void *node; //  private to the caller
};

//  lift or combine: returns the new partial (ownership passes to the
//  caller), or NULL after calling call->error.
typedef bn_value_t *(bn_reduce_fn)(bn_reduce_call_t *call);

//  One reduction.
typedef struct {
    const char *name;      //  sum, or the name after "<plugin>:"
    bn_reduce_fn *lift;    //  engine result -> partial, or NULL
    bn_reduce_fn *combine; //  two partials -> one (required)
    const char *doc;       //  one line, or NULL
} bn_reduction_t;

//  Why a call failed: a Python exception's name and message.
typedef struct {
    char ename[64];
    char evalue[512];
} bn_reduction_error_t;

//  The built-in reductions (sum, min, max), ending with a NULL name.
const bn_reduction_t *bn_reduction_builtins (void);

//  The built-in reduction named name, or NULL (NULL name too).
const bn_reduction_t *bn_reduction_builtin (const char *name);

//  Call fn (a lift or combine of the reduction named op) on acc and value,
//  both taken (either may be NULL). Returns the new partial, or NULL with
//  the reason in *error (a function that fails without saying why, or
//  returns a value after calling call->error, counts as failed).
bn_value_t *bn_reduction_call (bn_reduce_fn *fn, const char *op,
                               bn_value_t *acc, bn_value_t *value,
                               bn_reduction_error_t *error);

#endif

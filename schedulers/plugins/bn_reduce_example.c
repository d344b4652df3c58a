/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduce_example: a small reduction plugin showing the reduction
    plugin ABI (bn_reduce_plugin.h): lift to check or transform each
    engine's result, combine to fold partials, errors of both kinds.  */
#include "bn_reduce_plugin.h"

#include <string.h>

//  lift of prod: ints only.
static bn_value_t *
s_check_int (bn_reduce_call_t *call)
{
    if (bn_value_type (call->value) != BN_VALUE_INT) {
        call->error (call, "TypeError", "%s takes ints, not '%s'",
                     call->reduction, bn_value_type_name (call->value));
        return NULL;
    }
    bn_value_t *value = call->value;
    call->value = NULL;
    return value;
}

//  prod: the product of ints; past 64 bits the reduction fails.
static bn_value_t *
s_prod (bn_reduce_call_t *call)
{
    int64_t product;
    if (__builtin_mul_overflow (bn_value_int (call->acc),
                                bn_value_int (call->value), &product)) {
        call->error (call, "OverflowError", "product does not fit in 64 bits");
        return NULL;
    }
    return bn_value_new_int (product);
}

//  lift of count: any result counts as one.
static bn_value_t *
s_one (bn_reduce_call_t *call)
{
    return bn_value_new_int (1);
}

//  count: how many engines answered.
static bn_value_t *
s_add (bn_reduce_call_t *call)
{
    return bn_value_new_int (bn_value_int (call->acc) +
                             bn_value_int (call->value));
}

//  lift of longest: strs only.
static bn_value_t *
s_check_str (bn_reduce_call_t *call)
{
    if (bn_value_type (call->value) != BN_VALUE_STR) {
        call->error (call, "TypeError", "%s takes strs, not '%s'",
                     call->reduction, bn_value_type_name (call->value));
        return NULL;
    }
    bn_value_t *value = call->value;
    call->value = NULL;
    return value;
}

//  longest: the longest str, the smaller one on a tie so that the result
//  does not depend on the order replies arrive in.
static bn_value_t *
s_longest (bn_reduce_call_t *call)
{
    size_t a = bn_value_str_size (call->acc),
           b = bn_value_str_size (call->value);
    bool take_value =
        b > a || (b == a && strcmp (bn_value_str (call->value),
                                    bn_value_str (call->acc)) < 0);
    bn_value_t **kept = take_value ? &call->value : &call->acc;
    bn_value_t *result = *kept;
    *kept = NULL;
    return result;
}

static const bn_reduction_t s_reductions[] = {
    {"prod", s_check_int, s_prod, "product of ints"},
    {"count", s_one, s_add, "number of engines that answered"},
    {"longest", s_check_str, s_longest, "longest str"},
    {NULL, NULL, NULL, NULL}};

BN_REDUCE_EXPORT const bn_reduce_plugin_t bn_reduce_plugin = {
    BN_REDUCE_ABI_VERSION, "example", s_reductions};

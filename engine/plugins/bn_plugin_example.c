/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_plugin_example: a small function plugin showing the engine plugin
    ABI (bn_plugin.h): arguments, errors, the namespace and deferral.  */
#include "bn_plugin.h"

#include <stdio.h>
#include <string.h>

//  double(x): twice an int or float.
static bn_value_t *
s_double (bn_plugin_call_t *call)
{
    bn_value_t *x = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1 ||
        (bn_value_type (x) != BN_VALUE_INT &&
         bn_value_type (x) != BN_VALUE_FLOAT)) {
        call->error (call, "TypeError", "double() takes one int or float");
        return NULL;
    }
    if (bn_value_type (x) == BN_VALUE_FLOAT)
        return bn_value_new_float (2 * bn_value_float (x));
    int64_t twice;
    if (__builtin_mul_overflow (bn_value_int (x), 2, &twice)) {
        call->error (call, "OverflowError", "double() result is too large");
        return NULL;
    }
    return bn_value_new_int (twice);
}

//  greet(name="world"): a str naming the engine that answered.
static bn_value_t *
s_greet (bn_plugin_call_t *call)
{
    bn_value_t *name = bn_value_dict_get (call->kwargs, "name");
    if (!name && bn_value_size (call->args) > 0)
        name = bn_value_item (call->args, 0);
    const char *who = name ? bn_value_str (name) : "world";
    if (!who) {
        call->error (call, "TypeError", "greet() name must be a str");
        return NULL;
    }
    char text[512];
    snprintf (text, sizeof text, "hello %s from engine %d", who,
              call->engine_id);
    return bn_value_new_str (text);
}

//  total(name): the sum of the numbers in the list pushed as name.
static bn_value_t *
s_total (bn_plugin_call_t *call)
{
    bn_value_t *name = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1 || !bn_value_str (name)) {
        call->error (call, "TypeError", "total() takes one name");
        return NULL;
    }
    bn_value_t *list = call->lookup (call, bn_value_str (name));
    if (!list) {
        call->error (call, "NameError", "name '%s' is not defined",
                     bn_value_str (name));
        return NULL;
    }
    double sum = 0;
    for (size_t i = 0; i < bn_value_size (list); i++)
        sum += bn_value_float (bn_value_item (list, i));
    //  Remember the last total, for functions called later.
    call->assign (call, "last_total", bn_value_new_float (sum));
    return bn_value_new_float (sum);
}

//  later(x, seconds): x, answered seconds later without blocking.
static bn_value_t *
s_later (bn_plugin_call_t *call)
{
    bn_value_t *seconds = bn_value_item (call->args, 1);
    if (bn_value_size (call->args) != 2 ||
        (bn_value_type (seconds) != BN_VALUE_INT &&
         bn_value_type (seconds) != BN_VALUE_FLOAT)) {
        call->error (call, "TypeError", "later() takes a value and seconds");
        return NULL;
    }
    call->defer (call, bn_value_float (seconds));
    return bn_value_swap_item (call->args, 0, bn_value_new_none ());
}

//  needs(name): the value pushed as name on this engine. An engine without
//  it raises UnmetDependency, which tells the task scheduler to try the
//  task on another engine (IPython Parallel's functional dependencies).
static bn_value_t *
s_needs (bn_plugin_call_t *call)
{
    bn_value_t *name = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1 || !bn_value_str (name)) {
        call->error (call, "TypeError", "needs() takes one name");
        return NULL;
    }
    bn_value_t *value = call->lookup (call, bn_value_str (name));
    if (!value) {
        call->error (call, "UnmetDependency", "engine %d has no '%s'",
                     call->engine_id, bn_value_str (name));
        return NULL;
    }
    return bn_value_dup (value);
}

static const bn_plugin_function_t s_functions[] = {
    {"double", s_double, "double(x): twice an int or float"},
    {"greet", s_greet, "greet(name='world'): a greeting naming the engine"},
    {"total", s_total, "total(name): sum of the list pushed as name"},
    {"later", s_later, "later(x, seconds): x, after seconds"},
    {"needs", s_needs,
     "needs(name): the value pushed as name; UnmetDependency without it"},
    {NULL, NULL, NULL}};

BN_PLUGIN_EXPORT const bn_plugin_t bn_plugin = {BN_PLUGIN_ABI_VERSION,
                                                "example", s_functions};

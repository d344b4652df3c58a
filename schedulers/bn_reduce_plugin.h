/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduce_plugin: the ABI of reduction plugins, shared objects that
    add named reductions every broadcast node can apply to apply results
    (request metadata bn_reduce = "<plugin>:<name>").

    A plugin exports one symbol, `bn_reduce_plugin` (BN_REDUCE_SYMBOL), a
    bn_reduce_plugin_t listing its reductions:

        #include "bn_reduce_plugin.h"

        //  Both partials are ints: their product.
        static bn_value_t *
        s_prod (bn_reduce_call_t *call)
        {
            int64_t product;
            if (__builtin_mul_overflow (bn_value_int (call->acc),
                                        bn_value_int (call->value),
                                        &product)) {
                call->error (call, "OverflowError", "product too large");
                return NULL;
            }
            return bn_value_new_int (product);
        }

        static const bn_reduction_t s_reductions[] = {
            {"prod", s_check_int, s_prod, "product of ints"},
            {NULL, NULL, NULL, NULL}};

        BN_REDUCE_EXPORT const bn_reduce_plugin_t bn_reduce_plugin = {
            BN_REDUCE_ABI_VERSION, "example", s_reductions};

    The call, function and table entry types (bn_reduce_call_t,
    bn_reduce_fn, bn_reduction_t) are in bn_reduction.h, shared with the
    built-in reductions. Build it as a shared object linked with bn_common
    (for bn_value) and name its path in the controller.reduce_plugins
    setting (colon-separated paths); every node of the tree loads it. Its
    reductions are then named "example:prod".

    How a node reduces: each engine's result (the value its apply_reply
    carries) goes through `lift`, which checks it and turns it into a
    partial (NULL lift: the result is the partial); partials are folded
    pairwise with `combine`, at the leaf and again at every merging level
    above it, in whatever order replies arrive: combine must therefore be
    associative and commutative. A lift error fails that engine only (it
    is reported under bn_reduced.failed); a combine error fails the whole
    reduction.

    A function runs on the node's thread: it must be quick and must not
    block.  */
#ifndef BN_REDUCE_PLUGIN_H_INCLUDED
#define BN_REDUCE_PLUGIN_H_INCLUDED

#include "bn_reduction.h"

//  Name of the exported bn_reduce_plugin_t.
#define BN_REDUCE_SYMBOL "bn_reduce_plugin"

//  Put before the bn_reduce_plugin definition so that it is exported even
//  when the plugin is built with hidden visibility.
#define BN_REDUCE_EXPORT __attribute__ ((visibility ("default")))

//  What a plugin exports as BN_REDUCE_SYMBOL.
typedef struct {
    int abi_version;                  //  BN_REDUCE_ABI_VERSION
    const char *name;                 //  plugin name, the prefix of names
    const bn_reduction_t *reductions; //  ends with a NULL name
} bn_reduce_plugin_t;

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_fuzz_value: what the pickle and value harnesses know of the values
    bn_pickle_encode refuses.  */
#ifndef BN_FUZZ_VALUE_H_INCLUDED
#define BN_FUZZ_VALUE_H_INCLUDED

#include "bn_value.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

//  What bn_pickle_encode refuses: a list, dict or set (also inside a
//  tuple) as a dict key or set item.
static inline bool
bn_fuzz_hashable (const bn_value_t *value)
{
    bn_value_type_t type = bn_value_type (value);
    if (type == BN_VALUE_LIST || type == BN_VALUE_DICT || type == BN_VALUE_SET)
        return false;
    for (size_t i = 0; type == BN_VALUE_TUPLE && i < bn_value_size (value); i++)
        if (!bn_fuzz_hashable (bn_value_item (value, i)))
            return false;
    return true;
}

//  True unless bn_pickle_encode must refuse the value.
static inline bool
bn_fuzz_encodable (const bn_value_t *value)
{
    if (!value)
        return true;
    switch (bn_value_type (value)) {
    case BN_VALUE_DICT:
        for (size_t i = 0; i < bn_value_size (value); i++)
            if (!bn_fuzz_hashable (bn_value_dict_key (value, i)) ||
                !bn_fuzz_encodable (bn_value_dict_key (value, i)) ||
                !bn_fuzz_encodable (bn_value_dict_value (value, i)))
                return false;
        return true;
    case BN_VALUE_SET:
        for (size_t i = 0; i < bn_value_size (value); i++)
            if (!bn_fuzz_hashable (bn_value_item (value, i)) ||
                !bn_fuzz_encodable (bn_value_item (value, i)))
                return false;
        return true;
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
        for (size_t i = 0; i < bn_value_size (value); i++)
            if (!bn_fuzz_encodable (bn_value_item (value, i)))
                return false;
        return true;
    case BN_VALUE_OBJECT:
        return bn_fuzz_encodable (bn_value_object_class (value)) &&
               bn_fuzz_encodable (bn_value_object_args (value)) &&
               bn_fuzz_encodable (bn_value_object_state (value)) &&
               bn_fuzz_encodable (bn_value_object_items (value)) &&
               bn_fuzz_encodable (bn_value_object_kwargs (value));
    default:
        return true;
    }
}

//  Abort, showing both, unless two values are equal.
#define BN_FUZZ_CHECK_EQUAL(a, b)                                              \
    do {                                                                       \
        if (!bn_value_equal ((a), (b))) {                                      \
            char *ra = bn_value_repr (a), *rb = bn_value_repr (b);             \
            fprintf (stderr, "%s:%d: %s != %s:\n  %s\n  %s\n", __FILE__,       \
                     __LINE__, #a, #b, ra ? ra : "?", rb ? rb : "?");          \
            abort ();                                                          \
        }                                                                      \
    } while (0)

#endif

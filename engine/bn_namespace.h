/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_namespace: an engine's named values (what push stores and pull
    reads), one per logical engine.  */
#ifndef BN_NAMESPACE_H_INCLUDED
#define BN_NAMESPACE_H_INCLUDED

#include "bn_value.h"

#include <stddef.h>

typedef struct _bn_namespace_t bn_namespace_t;

//  Create an empty namespace; NULL if out of memory.
bn_namespace_t *bn_namespace_new (void);

//  Destroy a namespace and every value in it; NULL-safe.
void bn_namespace_destroy (bn_namespace_t **self_p);

//  Bind name to value, replacing (and destroying) an older value. Takes
//  ownership of value; returns -1 (value destroyed) if out of memory.
int bn_namespace_set (bn_namespace_t *self, const char *name,
                      bn_value_t *value);

//  The value bound to name (borrowed, valid until the name is rebound or
//  removed), or NULL if unbound.
bn_value_t *bn_namespace_get (bn_namespace_t *self, const char *name);

//  Unbind name; returns -1 if it was not bound.
int bn_namespace_remove (bn_namespace_t *self, const char *name);

//  Unbind every name.
void bn_namespace_clear (bn_namespace_t *self);

//  Number of bound names.
size_t bn_namespace_size (bn_namespace_t *self);

#endif

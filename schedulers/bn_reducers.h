/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reducers: the reductions a broadcast node knows by name: the
    built-in sum, min and max, and those of reduction plugins
    (bn_reduce_plugin.h) loaded from shared objects, named
    "<plugin>:<name>".

    The built-ins are bn_reduction's, the same the client applies to
    the partial reductions it receives.

    One table serves a node for its whole life; plugins stay loaded until
    it is destroyed.  */
#ifndef BN_REDUCERS_H_INCLUDED
#define BN_REDUCERS_H_INCLUDED

#include <stddef.h>

#include "bn_reduce_plugin.h"

typedef struct _bn_reducers_t bn_reducers_t;

//  Create a table holding the built-ins; NULL if out of memory.
bn_reducers_t *bn_reducers_new (void);

//  Destroy the table and unload its plugins; NULLs the reference;
//  NULL-safe. Reductions found in it must not be used afterwards.
void bn_reducers_destroy (bn_reducers_t **self_p);

//  Load a reduction plugin. Returns 0, or -1 with a message in err (cannot
//  load, no bn_reduce_plugin symbol, another ABI version, no plugin name,
//  an entry without combine, a name the table already has); the table is
//  then unchanged.
int bn_reducers_load (bn_reducers_t *self, const char *path, char *err,
                      size_t errsize);

//  Load every plugin of a colon-separated list of paths (the
//  controller.reduce_plugins setting; NULL or "" loads none). Stops at
//  the first failure: returns 0, or -1 with a message in err.
int bn_reducers_load_list (bn_reducers_t *self, const char *paths, char *err,
                           size_t errsize);

//  The reduction named name ("sum", "example:prod"), borrowed, or NULL.
const bn_reduction_t *bn_reducers_find (bn_reducers_t *self, const char *name);

//  Number of reductions known (built-ins included).
size_t bn_reducers_size (bn_reducers_t *self);

#endif

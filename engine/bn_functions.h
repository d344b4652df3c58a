/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_functions: the named functions an engine can apply: built-ins,
    push/pull, and functions from plugin shared objects (bn_plugin.h).  */
#ifndef BN_FUNCTIONS_H_INCLUDED
#define BN_FUNCTIONS_H_INCLUDED

#include "bn_namespace.h"
#include "bn_plugin.h"
#include "bn_value.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_functions_t bn_functions_t;

//  Module and name of the helpers behind DirectView.push and pull.
#define BN_FUNCTIONS_PUSH "ipyparallel.util._push"
#define BN_FUNCTIONS_PULL "ipyparallel.util._pull"

//  What a call produced.
typedef struct {
    bn_value_t *value; //  result on success, owned by the caller
    char ename[64];    //  exception name on failure
    char evalue[1024]; //  exception message on failure
    double defer;      //  > 0: deliver the result this many seconds later
} bn_functions_result_t;

//  Create a table holding the built-ins: echo, noop, sleep, sum, len,
//  checksum, crc32, getpid, hostname, time, the push/pull helpers, and the
//  Python names they stand for (builtins.sum, time.sleep...). NULL if out
//  of memory.
bn_functions_t *bn_functions_new (void);

//  Destroy the table and unload its plugins; NULL-safe.
void bn_functions_destroy (bn_functions_t **self_p);

//  Load a plugin shared object and add its functions (a later function
//  replaces an earlier one of the same name). Returns -1, with the reason
//  in bn_functions_error, if it cannot be loaded, exports no bn_plugin,
//  or was built for another ABI version.
int bn_functions_load (bn_functions_t *self, const char *path);

//  Load every plugin of a colon-separated list of paths (the
//  engine.plugins setting); returns -1 at the first that fails.
int bn_functions_load_list (bn_functions_t *self, const char *paths);

//  Text of the last load error, or "".
const char *bn_functions_error (bn_functions_t *self);

//  Add or replace one function; returns -1 if out of memory.
int bn_functions_add (bn_functions_t *self, const char *name, bn_plugin_fn *fn);

//  The function registered under name, or NULL.
bn_plugin_fn *bn_functions_lookup (bn_functions_t *self, const char *name);

//  Find the function for a Python module-level name: "module.name"
//  first, then the bare name when module is __main__ or builtins (or
//  NULL, as for a Reference). Writes the name found into found (size
//  bytes) if given; returns NULL if nothing matches.
bn_plugin_fn *bn_functions_resolve (bn_functions_t *self, const char *module,
                                    const char *name, char *found, size_t size);

//  Number of names in the table.
size_t bn_functions_size (bn_functions_t *self);

//  Call the function found by bn_functions_resolve (module, name) with
//  args (a LIST or TUPLE, or NULL) and kwargs (a DICT or NULL), both
//  taken and destroyed.
//  Arguments that are Reference('x') objects are replaced by a copy of x
//  from the namespace first, as IPython Parallel does. Returns 0 with
//  result->value set (and result->defer when the function deferred), or
//  -1 with result->ename/evalue set: NotImplementedError for an unknown
//  function, NameError for an unbound Reference, or the function's own.
int bn_functions_call (bn_functions_t *self, const char *module,
                       const char *name, bn_value_t *args, bn_value_t *kwargs,
                       bn_namespace_t *ns, int engine_id,
                       const char *engine_uuid, bn_functions_result_t *result);

#endif

/*  bn_reducers: a name -> reduction table with the numeric built-ins and
    the entries of dlopen'd reduction plugins.  */
#include "bn_reducers.h"

#include "bn_error.h"
#include "bn_log.h"

#include <assert.h>
#include <czmq.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>

struct _bn_reducers_t {
    zhashx_t *reductions; //  name -> const bn_reduction_t * (not owned)
    zlistx_t *handles;    //  dlopen handles of loaded plugins
};

//  True for the values the built-ins reduce.
static bool
s_is_number (const bn_value_t *value)
{
    bn_value_type_t type = bn_value_type (value);
    return type == BN_VALUE_INT || type == BN_VALUE_FLOAT ||
           type == BN_VALUE_BOOL;
}

//  lift of the built-ins: numbers pass (bools as ints), others fail.
static bn_value_t *
s_number (bn_reduce_call_t *call)
{
    if (!s_is_number (call->value)) {
        call->error (call, "TypeError", "%s of a '%s': numbers only",
                     call->reduction, bn_value_type_name (call->value));
        return NULL;
    }
    if (bn_value_type (call->value) == BN_VALUE_BOOL)
        return bn_value_new_int (bn_value_int (call->value));
    bn_value_t *value = call->value;
    call->value = NULL;
    return value;
}

//  combine of sum: int + int stays int (or fails on overflow), a float
//  makes a float.
static bn_value_t *
s_sum (bn_reduce_call_t *call)
{
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

//  -1, 0 or 1 as a < b, a == b, a > b for numbers of either type, exact
//  for ints past 2^53; a NaN compares as 2 (unordered).
static int
s_compare (const bn_value_t *a, const bn_value_t *b)
{
    bool a_int = bn_value_type (a) == BN_VALUE_INT;
    bool b_int = bn_value_type (b) == BN_VALUE_INT;
    if (a_int && b_int) {
        int64_t x = bn_value_int (a), y = bn_value_int (b);
        return (x > y) - (x < y);
    }
    if (!a_int && !b_int) {
        double x = bn_value_float (a), y = bn_value_float (b);
        if (isnan (x) || isnan (y))
            return 2;
        return (x > y) - (x < y);
    }
    //  int against float: compare in long double, which holds every
    //  int64 exactly on x86-64; elsewhere ties near 2^63 may round.
    long double x = a_int ? (long double)bn_value_int (a) : bn_value_float (a);
    long double y = b_int ? (long double)bn_value_int (b) : bn_value_float (b);
    if (isnan (x) || isnan (y))
        return 2;
    return (x > y) - (x < y);
}

//  Keep acc or value, whichever `want` (-1 min, 1 max) picks; on a tie
//  or a NaN keep the one that is a number, then the int, for a result
//  that does not depend on arrival order.
static bn_value_t *
s_pick (bn_reduce_call_t *call, int want)
{
    int order = s_compare (call->value, call->acc);
    bool take_value;
    if (order == 2)
        take_value = isnan (bn_value_float (call->acc)) &&
                     !isnan (bn_value_float (call->value));
    else if (order == 0)
        take_value = bn_value_type (call->value) == BN_VALUE_INT &&
                     bn_value_type (call->acc) != BN_VALUE_INT;
    else
        take_value = order == want;
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
    {"sum", s_number, s_sum, "sum of numbers"},
    {"min", s_number, s_min, "smallest number"},
    {"max", s_number, s_max, "largest number"},
    {NULL, NULL, NULL, NULL}};

bn_reducers_t *
bn_reducers_new (void)
{
    bn_reducers_t *self = calloc (1, sizeof (bn_reducers_t));
    if (!self)
        return NULL;
    self->reductions = zhashx_new ();
    self->handles = zlistx_new ();
    if (!self->reductions || !self->handles) {
        bn_reducers_destroy (&self);
        return NULL;
    }
    for (const bn_reduction_t *r = s_builtins; r->name; r++)
        zhashx_insert (self->reductions, r->name, (void *)r);
    return self;
}

void
bn_reducers_destroy (bn_reducers_t **self_p)
{
    assert (self_p);
    bn_reducers_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->reductions);
    if (self->handles) {
        for (void *handle = zlistx_first (self->handles); handle;
             handle = zlistx_next (self->handles))
            dlclose (handle);
        zlistx_destroy (&self->handles);
    }
    free (self);
    *self_p = NULL;
}

int
bn_reducers_load (bn_reducers_t *self, const char *path, char *err,
                  size_t errsize)
{
    assert (self);
    assert (path);
    void *handle = dlopen (path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        bn_error_set (err, errsize, "cannot load reduction plugin: %s",
                      dlerror ());
        return -1;
    }
    const bn_reduce_plugin_t *plugin =
        (const bn_reduce_plugin_t *)dlsym (handle, BN_REDUCE_SYMBOL);
    const char *problem = NULL;
    char name[256] = "";
    if (!plugin)
        problem = "exports no '" BN_REDUCE_SYMBOL "' table";
    else if (plugin->abi_version != BN_REDUCE_ABI_VERSION) {
        bn_error_set (err, errsize,
                      "%s was built for reduction ABI %d, this node has %d",
                      path, plugin->abi_version, BN_REDUCE_ABI_VERSION);
        dlclose (handle);
        return -1;
    } else if (!plugin->name || !*plugin->name || strchr (plugin->name, ':'))
        problem = "has no plugin name (or one with ':')";
    else
        for (const bn_reduction_t *r = plugin->reductions; r && r->name; r++) {
            snprintf (name, sizeof name, "%s:%s", plugin->name, r->name);
            if (!r->combine) {
                problem = "has a reduction without combine";
                break;
            }
            if (zhashx_lookup (self->reductions, name)) {
                problem = "names a reduction already loaded";
                break;
            }
        }
    if (problem) {
        bn_error_set (err, errsize, "%s %s%s%s%s", path, problem,
                      *name ? " (" : "", name, *name ? ")" : "");
        dlclose (handle);
        return -1;
    }
    size_t count = 0;
    for (const bn_reduction_t *r = plugin->reductions; r && r->name; r++) {
        snprintf (name, sizeof name, "%s:%s", plugin->name, r->name);
        if (zhashx_insert (self->reductions, name, (void *)r) == 0)
            count++;
    }
    zlistx_add_end (self->handles, handle);
    bn_log_info ("loaded reduction plugin %s (%s): %zu reductions",
                 plugin->name, path, count);
    return 0;
}

int
bn_reducers_load_list (bn_reducers_t *self, const char *paths, char *err,
                       size_t errsize)
{
    assert (self);
    if (!paths || !*paths)
        return 0;
    char *copy = strdup (paths);
    if (!copy) {
        bn_error_set (err, errsize, "out of memory");
        return -1;
    }
    int rc = 0;
    char *saveptr = NULL;
    for (char *path = strtok_r (copy, ":", &saveptr); path && rc == 0;
         path = strtok_r (NULL, ":", &saveptr))
        if (*path)
            rc = bn_reducers_load (self, path, err, errsize);
    free (copy);
    return rc;
}

const bn_reduction_t *
bn_reducers_find (bn_reducers_t *self, const char *name)
{
    assert (self);
    return name ? zhashx_lookup (self->reductions, name) : NULL;
}

size_t
bn_reducers_size (bn_reducers_t *self)
{
    assert (self);
    return zhashx_size (self->reductions);
}

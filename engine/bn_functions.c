/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_functions: a hash of name -> C function, filled with the built-ins
    and with the tables of dlopen'd plugins.  */
#include "bn_functions.h"
#include "bn_log.h"
#include "bn_path.h"

#include <assert.h>
#include <czmq.h>
#include <dlfcn.h>
#include <math.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define S_REFERENCE_MODULE "ipyparallel.serialize.canning"
#define S_REFERENCE_CLASS "Reference"
#define S_MAX_DEPTH 32 //  how deep arguments are searched for References

struct _bn_functions_t {
    zhashx_t *functions; //  name -> bn_plugin_fn * (not owned)
    zlistx_t *handles;   //  dlopen handles of loaded plugins
    char error[512];     //  last load error
};

//  What the engine's services write to while a call runs.
typedef struct {
    bn_namespace_t *ns;
    bn_functions_result_t *result;
    bool failed;
} s_call_state_t;

//  ---------------------------------------------------------------------
//  Built-ins

static bool
s_is_number (const bn_value_t *value)
{
    bn_value_type_t type = bn_value_type (value);
    return type == BN_VALUE_INT || type == BN_VALUE_BOOL ||
           type == BN_VALUE_FLOAT;
}

static bool
s_is_sequence (const bn_value_t *value)
{
    bn_value_type_t type = bn_value_type (value);
    return type == BN_VALUE_LIST || type == BN_VALUE_TUPLE ||
           type == BN_VALUE_SET;
}

//  Take item index out of a container, leaving None in its place.
static bn_value_t *
s_take (bn_value_t *container, size_t index)
{
    bn_value_t *none = bn_value_new_none ();
    if (!none)
        return NULL;
    return bn_value_swap_item (container, index, none);
}

//  echo(x) returns x; echo() None; echo(a, b, ...) the tuple (a, b, ...).
static bn_value_t *
s_echo (bn_plugin_call_t *call)
{
    size_t nargs = bn_value_size (call->args);
    if (nargs == 0)
        return bn_value_new_none ();
    if (nargs == 1)
        return s_take (call->args, 0);
    bn_value_t *tuple = bn_value_new_tuple ();
    for (size_t i = 0; tuple && i < nargs; i++) {
        bn_value_t *item = s_take (call->args, i);
        if (!item || bn_value_append (tuple, item))
            bn_value_destroy (&tuple);
    }
    return tuple;
}

static bn_value_t *
s_noop (bn_plugin_call_t *call)
{
    return bn_value_new_none ();
}

//  sleep(seconds): None, delivered after seconds without blocking.
static bn_value_t *
s_sleep (bn_plugin_call_t *call)
{
    bn_value_t *seconds = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1 || !s_is_number (seconds)) {
        call->error (call, "TypeError", "sleep() takes one number of seconds");
        return NULL;
    }
    double delay = bn_value_float (seconds);
    if (!(delay >= 0) || isinf (delay)) {
        call->error (call, "ValueError", "sleep length must be non-negative");
        return NULL;
    }
    call->defer (call, delay);
    return bn_value_new_none ();
}

//  Add value to the running sum (*isum while integral, *fsum after).
static int
s_sum_add (bn_plugin_call_t *call, const bn_value_t *value, int64_t *isum,
           double *fsum, bool *is_float)
{
    if (!s_is_number (value)) {
        call->error (call, "TypeError",
                     "unsupported operand type(s) for +: '%s' and '%s'",
                     *is_float ? "float" : "int", bn_value_type_name (value));
        return -1;
    }
    if (bn_value_type (value) == BN_VALUE_FLOAT && !*is_float) {
        *is_float = true;
        *fsum = (double)*isum;
    }
    if (*is_float)
        *fsum += bn_value_float (value);
    else if (__builtin_add_overflow (*isum, bn_value_int (value), isum)) {
        call->error (call, "OverflowError",
                     "sum does not fit in a 64-bit integer");
        return -1;
    }
    return 0;
}

//  sum(iterable[, start]) as Python's, or sum(a, b, c...) of numbers.
static bn_value_t *
s_sum (bn_plugin_call_t *call)
{
    size_t nargs = bn_value_size (call->args);
    bn_value_t *first = bn_value_item (call->args, 0);
    const bn_value_t *items = call->args;
    bn_value_t *start = bn_value_dict_get (call->kwargs, "start");
    if (first && s_is_sequence (first)) {
        if (nargs > 2 || (nargs == 2 && start)) {
            call->error (call, "TypeError",
                         "sum() takes at most 2 arguments (%zu given)",
                         nargs + (start ? 1 : 0));
            return NULL;
        }
        items = first;
        if (nargs == 2)
            start = bn_value_item (call->args, 1);
    }
    int64_t isum = 0;
    double fsum = 0;
    bool is_float = false;
    if (start && s_sum_add (call, start, &isum, &fsum, &is_float))
        return NULL;
    for (size_t i = 0; i < bn_value_size (items); i++)
        if (s_sum_add (call, bn_value_item (items, i), &isum, &fsum, &is_float))
            return NULL;
    return is_float ? bn_value_new_float (fsum) : bn_value_new_int (isum);
}

//  len(x) of a str (code points), bytes or container.
static bn_value_t *
s_len (bn_plugin_call_t *call)
{
    bn_value_t *value = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1) {
        call->error (call, "TypeError",
                     "len() takes exactly one argument (%zu given)",
                     bn_value_size (call->args));
        return NULL;
    }
    switch (bn_value_type (value)) {
    case BN_VALUE_STR: {
        const unsigned char *text = (const unsigned char *)bn_value_str (value);
        size_t size = bn_value_str_size (value), count = 0;
        for (size_t i = 0; i < size; i++)
            count += (text[i] & 0xC0) != 0x80;
        return bn_value_new_int ((int64_t)count);
    }
    case BN_VALUE_BYTES:
        return bn_value_new_int ((int64_t)bn_value_bytes_size (value));
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
    case BN_VALUE_SET:
    case BN_VALUE_DICT:
        return bn_value_new_int ((int64_t)bn_value_size (value));
    default:
        call->error (call, "TypeError", "object of type '%s' has no len()",
                     bn_value_type_name (value));
        return NULL;
    }
}

//  checksum(data): SHA-256 of bytes (or of a str's UTF-8), lower-case hex.
static bn_value_t *
s_checksum (bn_plugin_call_t *call)
{
    bn_value_t *value = bn_value_item (call->args, 0);
    const void *data;
    size_t size;
    if (bn_value_size (call->args) == 1 &&
        bn_value_type (value) == BN_VALUE_BYTES) {
        data = bn_value_bytes_data (value);
        size = bn_value_bytes_size (value);
    } else if (bn_value_size (call->args) == 1 &&
               bn_value_type (value) == BN_VALUE_STR) {
        data = bn_value_str (value);
        size = bn_value_str_size (value);
    } else {
        call->error (call, "TypeError", "checksum() takes one bytes or str");
        return NULL;
    }
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (digest, data, size);
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    sodium_bin2hex (hex, sizeof hex, digest, sizeof digest);
    return bn_value_new_str (hex);
}

//  crc32(data[, value]): zlib.crc32, the CRC-32 of bytes (or of a str's
//  UTF-8) continuing from value: a check of gigabytes in about a second
//  each, where SHA-256 takes six.
static bn_value_t *
s_crc32 (bn_plugin_call_t *call)
{
    bn_value_t *value = bn_value_item (call->args, 0);
    bn_value_t *start = bn_value_item (call->args, 1);
    size_t nargs = bn_value_size (call->args);
    const void *data = NULL;
    size_t size = 0;
    if (bn_value_type (value) == BN_VALUE_BYTES) {
        data = bn_value_bytes_data (value);
        size = bn_value_bytes_size (value);
    } else if (bn_value_type (value) == BN_VALUE_STR) {
        data = bn_value_str (value);
        size = bn_value_str_size (value);
    }
    if (nargs < 1 || nargs > 2 || !data ||
        (start && bn_value_type (start) != BN_VALUE_INT &&
         bn_value_type (start) != BN_VALUE_BOOL)) {
        call->error (call, "TypeError",
                     "crc32() takes bytes or str and an optional int");
        return NULL;
    }
    //  Python keeps the low 32 bits of the starting value
    uLong crc =
        start ? (uLong)((uint64_t)bn_value_int (start) & 0xffffffffu) : 0;
    crc = crc32_z (crc, (const Bytef *)data, size);
    return bn_value_new_int ((int64_t)crc);
}

static bn_value_t *
s_getpid (bn_plugin_call_t *call)
{
    return bn_value_new_int ((int64_t)getpid ());
}

static bn_value_t *
s_hostname (bn_plugin_call_t *call)
{
    char name[256];
    if (gethostname (name, sizeof name)) {
        call->error (call, "OSError", "gethostname failed");
        return NULL;
    }
    name[sizeof name - 1] = 0;
    return bn_value_new_str (name);
}

static bn_value_t *
s_time (bn_plugin_call_t *call)
{
    return bn_value_new_float ((double)zclock_time () / 1000.0);
}

//  _push(**ns): bind each keyword to its value (taken, not copied).
static bn_value_t *
s_push (bn_plugin_call_t *call)
{
    if (bn_value_size (call->args)) {
        call->error (call, "TypeError",
                     "_push() takes 0 positional arguments but %zu were "
                     "given",
                     bn_value_size (call->args));
        return NULL;
    }
    for (size_t i = 0; i < bn_value_size (call->kwargs); i++) {
        const char *name = bn_value_str (bn_value_dict_key (call->kwargs, i));
        bn_value_t *none = bn_value_new_none ();
        if (!name || !*name || !none) {
            bn_value_destroy (&none);
            call->error (call, "TypeError", "_push() keywords must be names");
            return NULL;
        }
        bn_value_t *value = bn_value_dict_swap_value (call->kwargs, i, none);
        if (call->assign (call, name, value)) {
            call->error (call, "MemoryError", "cannot store '%s'", name);
            return NULL;
        }
    }
    return bn_value_new_none ();
}

//  A copy of the value bound to key (a STR), or NULL with NameError set.
static bn_value_t *
s_pull_one (bn_plugin_call_t *call, const bn_value_t *key)
{
    const char *name = bn_value_str (key);
    if (!name) {
        call->error (call, "TypeError", "names to pull must be str, not %s",
                     bn_value_type_name (key));
        return NULL;
    }
    bn_value_t *value = call->lookup (call, name);
    if (!value) {
        call->error (call, "NameError", "name '%s' is not defined", name);
        return NULL;
    }
    bn_value_t *copy = bn_value_dup (value);
    if (!copy)
        call->error (call, "MemoryError", "cannot copy '%s'", name);
    return copy;
}

//  _pull(name) the value bound to name; _pull([names]) a list of them.
static bn_value_t *
s_pull (bn_plugin_call_t *call)
{
    bn_value_t *keys = bn_value_item (call->args, 0);
    if (bn_value_size (call->args) != 1) {
        call->error (call, "TypeError",
                     "_pull() takes 1 positional argument but %zu were given",
                     bn_value_size (call->args));
        return NULL;
    }
    if (!s_is_sequence (keys))
        return s_pull_one (call, keys);
    bn_value_t *list = bn_value_new_list ();
    for (size_t i = 0; list && i < bn_value_size (keys); i++) {
        bn_value_t *value = s_pull_one (call, bn_value_item (keys, i));
        if (!value || bn_value_append (list, value))
            bn_value_destroy (&list);
    }
    return list;
}

static const bn_plugin_function_t s_builtins[] = {
    {"echo", s_echo, "echo(x): x; echo(a, b...): the tuple (a, b...)"},
    {"noop", s_noop, "noop(...): None"},
    {"sleep", s_sleep, "sleep(seconds): None, after seconds"},
    {"time.sleep", s_sleep, NULL},
    {"sum", s_sum, "sum(iterable[, start]) or sum(a, b, c...)"},
    {"builtins.sum", s_sum, NULL},
    {"len", s_len, "len(x) of a str, bytes or container"},
    {"builtins.len", s_len, NULL},
    {"checksum", s_checksum, "checksum(data): SHA-256 hex of bytes or str"},
    {"crc32", s_crc32, "crc32(data[, value]): CRC-32 of bytes or str"},
    {"zlib.crc32", s_crc32, NULL},
    {"getpid", s_getpid, "getpid(): the engine's process id"},
    {"os.getpid", s_getpid, NULL},
    {"posix.getpid", s_getpid, NULL},
    {"hostname", s_hostname, "hostname(): the engine's host name"},
    {"socket.gethostname", s_hostname, NULL},
    {"_socket.gethostname", s_hostname, NULL},
    {"time", s_time, "time(): seconds since the epoch"},
    {"time.time", s_time, NULL},
    {BN_FUNCTIONS_PUSH, s_push, "_push(**ns): store values by name"},
    {BN_FUNCTIONS_PULL, s_pull, "_pull(names): values by name"},
    {NULL, NULL, NULL}};

//  ---------------------------------------------------------------------
//  Engine services offered to a call

static bn_value_t *
s_lookup (bn_plugin_call_t *call, const char *name)
{
    s_call_state_t *state = (s_call_state_t *)call->engine;
    return state->ns ? bn_namespace_get (state->ns, name) : NULL;
}

static int
s_assign (bn_plugin_call_t *call, const char *name, bn_value_t *value)
{
    s_call_state_t *state = (s_call_state_t *)call->engine;
    if (!value)
        return -1;
    if (!state->ns || !name) {
        bn_value_destroy (&value);
        return -1;
    }
    return bn_namespace_set (state->ns, name, value);
}

static void
s_call_error (bn_plugin_call_t *call, const char *ename, const char *format,
              ...)
{
    s_call_state_t *state = (s_call_state_t *)call->engine;
    if (state->failed)
        return; //  the first error is the one the function failed with
    state->failed = true;
    snprintf (state->result->ename, sizeof state->result->ename, "%s",
              ename && *ename ? ename : "Exception");
    va_list args;
    va_start (args, format);
    vsnprintf (state->result->evalue, sizeof state->result->evalue, format,
               args);
    va_end (args);
}

static void
s_defer (bn_plugin_call_t *call, double seconds)
{
    s_call_state_t *state = (s_call_state_t *)call->engine;
    state->result->defer = seconds > 0 ? seconds : 0;
}

//  ---------------------------------------------------------------------

bn_functions_t *
bn_functions_new (void)
{
    bn_functions_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->functions = zhashx_new ();
    self->handles = zlistx_new ();
    if (!self->functions || !self->handles) {
        bn_functions_destroy (&self);
        return NULL;
    }
    for (const bn_plugin_function_t *f = s_builtins; f->name; f++)
        zhashx_update (self->functions, f->name, (void *)f->fn);
    return self;
}

void
bn_functions_destroy (bn_functions_t **self_p)
{
    assert (self_p);
    bn_functions_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->functions);
    if (self->handles) {
        void *handle = zlistx_first (self->handles);
        while (handle) {
            dlclose (handle);
            handle = zlistx_next (self->handles);
        }
        zlistx_destroy (&self->handles);
    }
    free (self);
    *self_p = NULL;
}

int
bn_functions_load (bn_functions_t *self, const char *path)
{
    assert (self);
    assert (path);
    self->error[0] = 0;
    char *where = bn_path_plugin (path);
    void *handle = where ? dlopen (where, RTLD_NOW | RTLD_LOCAL) : NULL;
    free (where);
    if (!handle) {
        snprintf (self->error, sizeof self->error, "cannot load plugin: %s",
                  dlerror ());
        return -1;
    }
    const bn_plugin_t *plugin =
        (const bn_plugin_t *)dlsym (handle, BN_PLUGIN_SYMBOL);
    if (!plugin) {
        snprintf (self->error, sizeof self->error, "%s exports no '%s' table",
                  path, BN_PLUGIN_SYMBOL);
        dlclose (handle);
        return -1;
    }
    if (plugin->abi_version != BN_PLUGIN_ABI_VERSION) {
        snprintf (self->error, sizeof self->error,
                  "%s was built for plugin ABI %d, this engine has %d", path,
                  plugin->abi_version, BN_PLUGIN_ABI_VERSION);
        dlclose (handle);
        return -1;
    }
    size_t count = 0;
    for (const bn_plugin_function_t *f = plugin->functions; f && f->name; f++) {
        if (!f->fn)
            continue;
        if (zhashx_lookup (self->functions, f->name))
            bn_log_info ("plugin %s replaces function '%s'",
                         plugin->name ? plugin->name : path, f->name);
        zhashx_update (self->functions, f->name, (void *)f->fn);
        count++;
    }
    zlistx_add_end (self->handles, handle);
    bn_log_info ("loaded plugin %s (%s): %zu functions",
                 plugin->name ? plugin->name : "?", path, count);
    return 0;
}

int
bn_functions_load_list (bn_functions_t *self, const char *paths)
{
    assert (self);
    if (!paths)
        return 0;
    char *copy = strdup (paths);
    if (!copy)
        return -1;
    int rc = 0;
    char *saveptr = NULL;
    for (char *path = strtok_r (copy, ":", &saveptr); path && rc == 0;
         path = strtok_r (NULL, ":", &saveptr))
        if (*path)
            rc = bn_functions_load (self, path);
    free (copy);
    return rc;
}

const char *
bn_functions_error (bn_functions_t *self)
{
    assert (self);
    return self->error;
}

int
bn_functions_add (bn_functions_t *self, const char *name, bn_plugin_fn *fn)
{
    assert (self);
    assert (name);
    assert (fn);
    zhashx_update (self->functions, name, (void *)fn);
    return 0;
}

bn_plugin_fn *
bn_functions_lookup (bn_functions_t *self, const char *name)
{
    assert (self);
    return name ? (bn_plugin_fn *)zhashx_lookup (self->functions, name) : NULL;
}

bn_plugin_fn *
bn_functions_resolve (bn_functions_t *self, const char *module,
                      const char *name, char *found, size_t size)
{
    assert (self);
    if (!name || !*name)
        return NULL;
    bn_plugin_fn *fn = NULL;
    const char *used = name;
    char dotted[512];
    if (module && *module) {
        snprintf (dotted, sizeof dotted, "%s.%s", module, name);
        fn = bn_functions_lookup (self, dotted);
        if (fn)
            used = dotted;
        else if (strcmp (module, "__main__") == 0 ||
                 strcmp (module, "builtins") == 0)
            fn = bn_functions_lookup (self, name);
    } else
        fn = bn_functions_lookup (self, name);
    if (fn && found)
        snprintf (found, size, "%s", used);
    return fn;
}

size_t
bn_functions_size (bn_functions_t *self)
{
    assert (self);
    return zhashx_size (self->functions);
}

//  Replace Reference('x') objects in value (a container) by copies of x
//  from the namespace; -1 with NameError set if one is unbound.
static int
s_resolve_references (bn_value_t *container, s_call_state_t *state, int depth)
{
    bool is_dict = bn_value_type (container) == BN_VALUE_DICT;
    if (depth > S_MAX_DEPTH ||
        (!is_dict && bn_value_type (container) != BN_VALUE_LIST &&
         bn_value_type (container) != BN_VALUE_TUPLE))
        return 0;
    for (size_t i = 0; i < bn_value_size (container); i++) {
        bn_value_t *item = is_dict ? bn_value_dict_value (container, i)
                                   : bn_value_item (container, i);
        if (!bn_value_object_is (item, S_REFERENCE_MODULE, S_REFERENCE_CLASS)) {
            if (s_resolve_references (item, state, depth + 1))
                return -1;
            continue;
        }
        bn_value_t *ref_state = bn_value_object_state (item);
        bn_value_t *ref_name =
            ref_state && bn_value_type (ref_state) == BN_VALUE_DICT
                ? bn_value_dict_get (ref_state, "name")
                : NULL;
        const char *name = ref_name ? bn_value_str (ref_name) : NULL;
        bn_value_t *bound =
            name && state->ns ? bn_namespace_get (state->ns, name) : NULL;
        bn_value_t *copy = bound ? bn_value_dup (bound) : NULL;
        if (!copy) {
            snprintf (state->result->ename, sizeof state->result->ename, "%s",
                      bound ? "MemoryError" : "NameError");
            snprintf (state->result->evalue, sizeof state->result->evalue,
                      "name '%s' is not defined", name ? name : "?");
            return -1;
        }
        bn_value_t *old = is_dict
                              ? bn_value_dict_swap_value (container, i, copy)
                              : bn_value_swap_item (container, i, copy);
        bn_value_destroy (&old);
    }
    return 0;
}

int
bn_functions_call (bn_functions_t *self, const char *module, const char *name,
                   bn_value_t *args, bn_value_t *kwargs, bn_namespace_t *ns,
                   int engine_id, const char *engine_uuid,
                   bn_functions_result_t *result)
{
    assert (self);
    assert (result);
    memset (result, 0, sizeof *result);
    s_call_state_t state = {ns, result, false};
    int rc = -1;
    char found[512] = "";
    bn_plugin_fn *fn =
        bn_functions_resolve (self, module, name, found, sizeof found);
    if (!args)
        args = bn_value_new_tuple ();
    if (!kwargs)
        kwargs = bn_value_new_dict ();
    if (!fn) {
        snprintf (result->ename, sizeof result->ename, "NotImplementedError");
        snprintf (result->evalue, sizeof result->evalue,
                  "function %s%s%s is not available on this banyan engine "
                  "(it runs named C functions, not Python code)",
                  module && *module ? module : "", module && *module ? "." : "",
                  name ? name : "?");
    } else if (!args || !kwargs || bn_value_type (kwargs) != BN_VALUE_DICT ||
               (bn_value_type (args) != BN_VALUE_LIST &&
                bn_value_type (args) != BN_VALUE_TUPLE)) {
        snprintf (result->ename, sizeof result->ename, "TypeError");
        snprintf (result->evalue, sizeof result->evalue, "bad arguments for %s",
                  found);
    } else if (s_resolve_references (args, &state, 0) == 0 &&
               s_resolve_references (kwargs, &state, 0) == 0) {
        bn_plugin_call_t call = {.abi_version = BN_PLUGIN_ABI_VERSION,
                                 .function = found,
                                 .args = args,
                                 .kwargs = kwargs,
                                 .engine_id = engine_id,
                                 .engine_uuid = engine_uuid ? engine_uuid : "",
                                 .lookup = s_lookup,
                                 .assign = s_assign,
                                 .error = s_call_error,
                                 .defer = s_defer,
                                 .engine = &state};
        result->value = fn (&call);
        if (state.failed)
            bn_value_destroy (&result->value);
        else if (!result->value) {
            snprintf (result->ename, sizeof result->ename, "SystemError");
            snprintf (result->evalue, sizeof result->evalue,
                      "%s returned no result and no error", found);
        } else
            rc = 0;
    }
    if (rc)
        result->defer = 0;
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
    return rc;
}

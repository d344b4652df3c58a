/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_plugin: the ABI of banyan engine function plugins, shared objects
    that add named functions clients can apply.

    A plugin exports one symbol, `bn_plugin` (BN_PLUGIN_SYMBOL), a
    bn_plugin_t listing its functions:

        #include "bn_plugin.h"

        static bn_value_t *
        s_double (bn_plugin_call_t *call)
        {
            bn_value_t *x = bn_value_item (call->args, 0);
            if (bn_value_size (call->args) != 1
                || bn_value_type (x) != BN_VALUE_INT) {
                call->error (call, "TypeError", "double() takes one int");
                return NULL;
            }
            return bn_value_new_int (2 * bn_value_int (x));
        }

        static const bn_plugin_function_t s_functions[] = {
            {"double", s_double, "twice an int"}, {NULL, NULL, NULL}};

        BN_PLUGIN_EXPORT const bn_plugin_t bn_plugin = {
            BN_PLUGIN_ABI_VERSION, "example", s_functions};

    Build it as a shared object linked with bn_common (for bn_value), and
    start the engine with `--plugin path.so` (or the engine.plugins
    setting). Everything else a function needs from the engine comes
    through the call's function pointers, so a plugin resolves no symbol
    of the engine executable.

    Names: a client calls a function by Reference('name'), by a module
    function pickled by name (module.name, e.g. builtins.sum), or by a
    Python function object whose module and name are known (a function
    defined in __main__ or builtins is looked up by its bare name). A
    plugin may register dotted names ("mymodule.func") to serve Python
    functions of a real module, and may replace a built-in by its name.

    A function runs on the engine's only thread: it must not block. To
    answer later (as the built-in `sleep` does), it calls defer.  */
#ifndef BN_PLUGIN_H_INCLUDED
#define BN_PLUGIN_H_INCLUDED

#include "bn_value.h"

//  Version of this ABI; a plugin built for another version is refused.
#define BN_PLUGIN_ABI_VERSION 1

//  Name of the exported bn_plugin_t.
#define BN_PLUGIN_SYMBOL "bn_plugin"

//  Put before the bn_plugin definition so that it is exported even when
//  the plugin is built with hidden visibility.
#define BN_PLUGIN_EXPORT __attribute__ ((visibility ("default")))

typedef struct _bn_plugin_call_t bn_plugin_call_t;

//  One call of a function: its arguments and the engine's services.
struct _bn_plugin_call_t {
    int abi_version;      //  BN_PLUGIN_ABI_VERSION of the engine
    const char *function; //  name the function was found under
    //  Positional arguments (a LIST) and keyword arguments (a DICT with
    //  STR keys), owned by the engine and destroyed after the call. A
    //  function may take items out of them (bn_value_swap_item,
    //  bn_value_dict_swap_value) to keep or return them without a copy.
    bn_value_t *args;
    bn_value_t *kwargs;
    int engine_id;           //  the engine's id, -1 before registration
    const char *engine_uuid; //  the engine's identity

    //  The value bound to name in the engine's namespace (what push
    //  stored), borrowed until the function returns; NULL if unbound.
    bn_value_t *(*lookup) (bn_plugin_call_t *call, const char *name);

    //  Bind name to value in the namespace (ownership taken, an older
    //  value is destroyed); returns -1 if out of memory.
    int (*assign) (bn_plugin_call_t *call, const char *name, bn_value_t *value);

    //  Make the call fail with a Python-style exception: ename (such as
    //  "ValueError") and a printf-style message. The function then
    //  returns NULL.
    void (*error) (bn_plugin_call_t *call, const char *ename,
                   const char *format, ...)
        __attribute__ ((format (printf, 3, 4)));

    //  Deliver the function's result `seconds` from now instead of at
    //  once; the engine serves other requests meanwhile.
    void (*defer) (bn_plugin_call_t *call, double seconds);

    void *engine; //  private to the engine
};

//  A function: returns its result (ownership passes to the engine; return
//  bn_value_new_none () for None), or NULL after calling call->error.
typedef bn_value_t *(bn_plugin_fn)(bn_plugin_call_t *call);

//  One entry of a plugin's table.
typedef struct {
    const char *name; //  name clients call it by
    bn_plugin_fn *fn;
    const char *doc; //  one line, or NULL
} bn_plugin_function_t;

//  What a plugin exports as BN_PLUGIN_SYMBOL.
typedef struct {
    int abi_version;                       //  BN_PLUGIN_ABI_VERSION
    const char *name;                      //  plugin name, for logs
    const bn_plugin_function_t *functions; //  ends with a NULL name
} bn_plugin_t;

#endif

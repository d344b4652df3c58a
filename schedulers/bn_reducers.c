/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reducers: a name -> reduction table with the built-ins
    (bn_reduction) and the entries of dlopen'd reduction plugins.  */
#include "bn_reducers.h"

#include "bn_error.h"
#include "bn_log.h"
#include "bn_path.h"

#include <assert.h>
#include <czmq.h>
#include <dlfcn.h>

struct _bn_reducers_t {
    zhashx_t *reductions; //  name -> const bn_reduction_t * (not owned)
    zlistx_t *handles;    //  dlopen handles of loaded plugins
};

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
    for (const bn_reduction_t *r = bn_reduction_builtins (); r->name; r++)
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
    char *where = bn_path_plugin (path);
    void *handle = where ? dlopen (where, RTLD_NOW | RTLD_LOCAL) : NULL;
    free (where);
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

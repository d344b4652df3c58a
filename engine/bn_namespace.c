/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_namespace: named values in a hash table that owns them.  */
#include "bn_namespace.h"

#include <assert.h>
#include <czmq.h>
#include <stdlib.h>

struct _bn_namespace_t {
    zhashx_t *values; //  name -> bn_value_t *, owned
};

static void
s_value_destructor (void **item)
{
    bn_value_destroy ((bn_value_t **)item);
}

bn_namespace_t *
bn_namespace_new (void)
{
    bn_namespace_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->values = zhashx_new ();
    if (!self->values) {
        free (self);
        return NULL;
    }
    zhashx_set_destructor (self->values, s_value_destructor);
    return self;
}

void
bn_namespace_destroy (bn_namespace_t **self_p)
{
    assert (self_p);
    bn_namespace_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->values);
    free (self);
    *self_p = NULL;
}

int
bn_namespace_set (bn_namespace_t *self, const char *name, bn_value_t *value)
{
    assert (self);
    assert (name);
    assert (value);
    //  zhashx_update destroys the old value and keeps the key.
    zhashx_update (self->values, name, value);
    return 0;
}

bn_value_t *
bn_namespace_get (bn_namespace_t *self, const char *name)
{
    assert (self);
    return (bn_value_t *)zhashx_lookup (self->values, name);
}

int
bn_namespace_remove (bn_namespace_t *self, const char *name)
{
    assert (self);
    if (!zhashx_lookup (self->values, name))
        return -1;
    zhashx_delete (self->values, name);
    return 0;
}

void
bn_namespace_clear (bn_namespace_t *self)
{
    assert (self);
    zhashx_purge (self->values);
}

size_t
bn_namespace_size (bn_namespace_t *self)
{
    assert (self);
    return zhashx_size (self->values);
}

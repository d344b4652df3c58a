/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engines: the registered engines by id and by uuid.  */
#include "bn_engines.h"

#include "bn_msgtypes.h"

#include <assert.h>
#include <czmq.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct _bn_engines_t {
    char **uuids;            //  uuid by id, NULL if absent
    unsigned char *features; //  BN_ENGINE_* bits by id
    size_t size;             //  entries in uuids
    size_t count;            //  registered engines
    zhashx_t *ids;           //  uuid -> id + 1
};

bn_engines_t *
bn_engines_new (void)
{
    bn_engines_t *self = calloc (1, sizeof *self);
    if (self && !(self->ids = zhashx_new ())) {
        free (self);
        self = NULL;
    }
    return self;
}

void
bn_engines_destroy (bn_engines_t **self_p)
{
    assert (self_p);
    bn_engines_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->size; i++)
        free (self->uuids[i]);
    free (self->uuids);
    free (self->features);
    zhashx_destroy (&self->ids);
    free (self);
    *self_p = NULL;
}

int
bn_engines_add (bn_engines_t *self, int id, const char *uuid)
{
    assert (self);
    if (id < 0 || !uuid || !*uuid || strlen (uuid) >= BN_UUID_SIZE)
        return -1;
    if ((size_t)id >= self->size) {
        size_t size = self->size ? self->size : 16;
        while (size <= (size_t)id)
            size *= 2;
        char **bigger = realloc (self->uuids, size * sizeof *bigger);
        if (!bigger)
            return -1;
        memset (bigger + self->size, 0, (size - self->size) * sizeof *bigger);
        self->uuids = bigger;
        unsigned char *more = realloc (self->features, size);
        if (!more)
            return -1;
        memset (more + self->size, 0, size - self->size);
        self->features = more;
        self->size = size;
    }
    if (self->uuids[id]) {
        if (strcmp (self->uuids[id], uuid) == 0)
            return 0;
        free (bn_engines_remove (self, id));
    }
    self->uuids[id] = strdup (uuid);
    if (!self->uuids[id])
        return -1;
    self->features[id] = 0;
    zhashx_update (self->ids, uuid, (void *)(intptr_t)(id + 1));
    self->count++;
    return 0;
}

int
bn_engines_set_features (bn_engines_t *self, int id, json_t *names)
{
    assert (self);
    if (!bn_engines_uuid (self, id))
        return -1;
    unsigned features = 0;
    size_t index;
    json_t *name;
    json_array_foreach (names, index, name)
    {
        const char *text = json_string_value (name);
        if (text && strcmp (text, BN_FEATURE_OUTPUT) == 0)
            features |= BN_ENGINE_OUTPUT_IN_REPLY;
    }
    self->features[id] = (unsigned char)features;
    return 0;
}

unsigned
bn_engines_features (bn_engines_t *self, int id)
{
    assert (self);
    return bn_engines_uuid (self, id) ? self->features[id] : 0;
}

char *
bn_engines_remove (bn_engines_t *self, int id)
{
    assert (self);
    if (id < 0 || (size_t)id >= self->size || !self->uuids[id])
        return NULL;
    char *uuid = self->uuids[id];
    self->uuids[id] = NULL;
    zhashx_delete (self->ids, uuid);
    self->count--;
    return uuid;
}

const char *
bn_engines_uuid (bn_engines_t *self, int id)
{
    assert (self);
    return id >= 0 && (size_t)id < self->size ? self->uuids[id] : NULL;
}

int
bn_engines_id_of (bn_engines_t *self, const char *uuid)
{
    assert (self);
    void *found = uuid ? zhashx_lookup (self->ids, uuid) : NULL;
    return found ? (int)(intptr_t)found - 1 : -1;
}

size_t
bn_engines_count (bn_engines_t *self)
{
    assert (self);
    return self->count;
}

bn_idset_t *
bn_engines_ids (bn_engines_t *self)
{
    assert (self);
    bn_idset_t *ids = bn_idset_new ();
    for (size_t id = 0; ids && id < self->size; id++)
        if (self->uuids[id] && bn_idset_add (ids, (int)id) != 0)
            bn_idset_destroy (&ids);
    return ids;
}

int
bn_engines_resolve (bn_engines_t *self, const int *ids, size_t count,
                    bn_target_t **targets, size_t *ntargets)
{
    assert (self);
    *targets = NULL;
    *ntargets = 0;
    size_t n = ids ? count : self->count;
    if (n == 0)
        return BN_ENOENGINE;
    bn_target_t *out = malloc (n * sizeof *out);
    if (!out)
        return BN_ENOMEM;
    size_t k = 0;
    if (ids) {
        for (size_t i = 0; i < count; i++) {
            const char *uuid = bn_engines_uuid (self, ids[i]);
            if (!uuid) {
                free (out);
                return BN_ENOENGINE;
            }
            out[k].id = ids[i];
            out[k].features = self->features[ids[i]];
            snprintf (out[k].uuid, BN_UUID_SIZE, "%s", uuid);
            k++;
        }
    } else
        for (size_t id = 0; id < self->size; id++)
            if (self->uuids[id]) {
                out[k].id = (int)id;
                out[k].features = self->features[id];
                snprintf (out[k].uuid, BN_UUID_SIZE, "%s", self->uuids[id]);
                k++;
            }
    assert (k == n);
    *targets = out;
    *ntargets = n;
    return 0;
}

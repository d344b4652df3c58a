/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine_table: two hashes over the same entries (uuid and id).  */
#include "bn_engine_table.h"

#include <assert.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *uuid;       //  Engine uuid
    int id;           //  Engine id
    bool registered;  //  false while pending
    json_t *features; //  What it said it understands, or NULL
} s_entry_t;

struct _bn_engine_table_t {
    zhashx_t *by_uuid; //  uuid -> s_entry_t (owns the entries)
    zhashx_t *by_id;   //  "<id>" -> s_entry_t
    int counter;       //  Next id to hand out
    size_t registered; //  Entries with registered set
};

static void
s_entry_destroy (void **item)
{
    s_entry_t *entry = (s_entry_t *)*item;
    if (entry) {
        free (entry->uuid);
        json_decref (entry->features);
        free (entry);
    }
    *item = NULL;
}

bn_engine_table_t *
bn_engine_table_new (void)
{
    bn_engine_table_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->by_uuid = zhashx_new ();
    self->by_id = zhashx_new ();
    if (!self->by_uuid || !self->by_id) {
        bn_engine_table_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->by_uuid, s_entry_destroy);
    return self;
}

void
bn_engine_table_destroy (bn_engine_table_t **self_p)
{
    assert (self_p);
    bn_engine_table_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->by_id);
    zhashx_destroy (&self->by_uuid);
    free (self);
    *self_p = NULL;
}

static s_entry_t *
s_by_id (bn_engine_table_t *self, int id)
{
    char key[16];
    snprintf (key, sizeof key, "%d", id);
    return (s_entry_t *)zhashx_lookup (self->by_id, key);
}

int
bn_engine_table_new_id (bn_engine_table_t *self, int requested)
{
    assert (self);
    if (requested >= 0 && !s_by_id (self, requested)) {
        if (requested >= self->counter && requested < INT32_MAX)
            self->counter = requested + 1;
        return requested;
    }
    if (self->counter < INT32_MAX)
        return self->counter++;
    //  a peer asked for the last id: reuse the lowest free one rather than
    //  overflow (among size + 1 ids one is free)
    int id = 0;
    while (s_by_id (self, id))
        id++;
    return id;
}

int
bn_engine_table_next_id (bn_engine_table_t *self)
{
    assert (self);
    return self->counter;
}

void
bn_engine_table_set_next_id (bn_engine_table_t *self, int next)
{
    assert (self);
    if (next > self->counter && next <= INT32_MAX)
        self->counter = next;
}

int
bn_engine_table_add_pending (bn_engine_table_t *self, const char *uuid, int id)
{
    assert (self);
    assert (uuid);
    if (zhashx_lookup (self->by_uuid, uuid) || s_by_id (self, id))
        return -1;
    s_entry_t *entry = calloc (1, sizeof *entry);
    if (!entry)
        return -1;
    entry->uuid = strdup (uuid);
    entry->id = id;
    if (!entry->uuid) {
        free (entry);
        return -1;
    }
    char key[16];
    snprintf (key, sizeof key, "%d", id);
    if (zhashx_insert (self->by_uuid, uuid, entry) != 0) {
        void *item = entry;
        s_entry_destroy (&item);
        return -1;
    }
    if (zhashx_insert (self->by_id, key, entry) != 0) {
        zhashx_delete (self->by_uuid, uuid);
        return -1;
    }
    return 0;
}

int
bn_engine_table_finish (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    if (!entry || entry->registered)
        return -1;
    entry->registered = true;
    self->registered++;
    return entry->id;
}

int
bn_engine_table_remove (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    if (!entry)
        return -1;
    int id = entry->id;
    if (entry->registered)
        self->registered--;
    char key[16];
    snprintf (key, sizeof key, "%d", id);
    zhashx_delete (self->by_id, key);
    zhashx_delete (self->by_uuid, uuid);
    return id;
}

bool
bn_engine_table_has (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    return zhashx_lookup (self->by_uuid, uuid) != NULL;
}

bool
bn_engine_table_is_pending (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    return entry && !entry->registered;
}

int
bn_engine_table_id (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    return entry && entry->registered ? entry->id : -1;
}

const char *
bn_engine_table_uuid (bn_engine_table_t *self, int id, bool with_pending)
{
    assert (self);
    s_entry_t *entry = s_by_id (self, id);
    return entry && (entry->registered || with_pending) ? entry->uuid : NULL;
}

size_t
bn_engine_table_size (bn_engine_table_t *self)
{
    assert (self);
    return self->registered;
}

static int
s_compare_ints (const void *a, const void *b)
{
    int x = *(const int *)a;
    int y = *(const int *)b;
    return (x > y) - (x < y);
}

json_t *
bn_engine_table_ids (bn_engine_table_t *self)
{
    assert (self);
    json_t *array = json_array ();
    int *ids = malloc ((self->registered + 1) * sizeof (int));
    if (!array || !ids) {
        json_decref (array);
        free (ids);
        return NULL;
    }
    size_t count = 0;
    s_entry_t *entry = (s_entry_t *)zhashx_first (self->by_uuid);
    while (entry) {
        if (entry->registered)
            ids[count++] = entry->id;
        entry = (s_entry_t *)zhashx_next (self->by_uuid);
    }
    qsort (ids, count, sizeof (int), s_compare_ints);
    for (size_t i = 0; i < count; i++)
        json_array_append_new (array, json_integer (ids[i]));
    free (ids);
    return array;
}

int
bn_engine_table_set_features (bn_engine_table_t *self, const char *uuid,
                              json_t *features)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    json_t *copy = features ? json_deep_copy (features) : NULL;
    if (!entry || (features && !copy)) {
        json_decref (copy);
        return -1;
    }
    json_decref (entry->features);
    entry->features = copy;
    return 0;
}

json_t *
bn_engine_table_features (bn_engine_table_t *self, const char *uuid)
{
    assert (self);
    s_entry_t *entry = (s_entry_t *)zhashx_lookup (self->by_uuid, uuid);
    return entry ? entry->features : NULL;
}

json_t *
bn_engine_table_all_features (bn_engine_table_t *self)
{
    assert (self);
    json_t *all = json_object ();
    s_entry_t *entry = (s_entry_t *)zhashx_first (self->by_uuid);
    while (all && entry) {
        if (entry->registered && entry->features) {
            char key[16];
            snprintf (key, sizeof key, "%d", entry->id);
            if (json_object_set (all, key, entry->features) != 0) {
                json_decref (all);
                all = NULL;
            }
        }
        entry = (s_entry_t *)zhashx_next (self->by_uuid);
    }
    return all;
}

json_t *
bn_engine_table_engines (bn_engine_table_t *self)
{
    assert (self);
    json_t *engines = json_object ();
    if (!engines)
        return NULL;
    s_entry_t *entry = (s_entry_t *)zhashx_first (self->by_uuid);
    while (entry) {
        if (entry->registered) {
            char key[16];
            snprintf (key, sizeof key, "%d", entry->id);
            json_object_set_new (engines, key, json_string (entry->uuid));
        }
        entry = (s_entry_t *)zhashx_next (self->by_uuid);
    }
    return engines;
}

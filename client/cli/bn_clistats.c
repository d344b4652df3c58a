/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clistats: the controller's counters as rows of actor, counter and
    value, for banyan stats.  */
#include "bn_clistats.h"

#include <assert.h>
#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *actor;
    char *counter;
    char *value;
} s_row_t;

//  An actor: a top-level one, or an item of a list of objects in one.
typedef struct {
    char *name;
    json_t *object; //  borrowed from root
} s_actor_t;

struct _bn_clistats_t {
    json_t *root;     //  Every actor's counters
    json_t *selected; //  What print_json prints (borrowed)
    s_row_t *rows;
    size_t nrows;
    size_t rows_room;
    s_actor_t *actors;
    size_t nactors;
    size_t actors_room;
};

//  Grow an array of items of size bytes to hold one more; -1 if out of
//  memory.
static int
s_grow (void **items, size_t count, size_t *room, size_t size)
{
    if (count < *room)
        return 0;
    size_t bigger = *room ? *room * 2 : 16;
    void *more = realloc (*items, bigger * size);
    if (!more)
        return -1;
    *items = more;
    *room = bigger;
    return 0;
}

//  A scalar's text (a list of scalars joined by ","; anything else as
//  compact JSON); a new string, or NULL if out of memory.
static char *
s_text (json_t *value)
{
    if (json_is_string (value))
        return strdup (json_string_value (value));
    if (json_is_integer (value))
        return zsys_sprintf ("%" JSON_INTEGER_FORMAT,
                             json_integer_value (value));
    if (json_is_real (value))
        return zsys_sprintf ("%g", json_real_value (value));
    if (json_is_null (value))
        return strdup ("-");
    if (json_is_array (value)) {
        bool scalars = true;
        for (size_t i = 0; i < json_array_size (value); i++)
            if (json_is_object (json_array_get (value, i)) ||
                json_is_array (json_array_get (value, i)))
                scalars = false;
        if (scalars) {
            char *joined = strdup (json_array_size (value) ? "" : "-");
            for (size_t i = 0; joined && i < json_array_size (value); i++) {
                char *item = s_text (json_array_get (value, i));
                char *longer =
                    item ? zsys_sprintf ("%s%s%s", joined, i ? "," : "", item)
                         : NULL;
                free (item);
                free (joined);
                joined = longer;
            }
            return joined;
        }
    }
    return json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
}

static int
s_add_row (bn_clistats_t *self, const char *actor, const char *counter,
           json_t *value)
{
    if (s_grow ((void **)&self->rows, self->nrows, &self->rows_room,
                sizeof (s_row_t)))
        return -1;
    s_row_t *row = &self->rows[self->nrows];
    row->actor = strdup (actor);
    row->counter = strdup (counter);
    row->value = s_text (value);
    if (!row->actor || !row->counter || !row->value) {
        free (row->actor);
        free (row->counter);
        free (row->value);
        return -1;
    }
    self->nrows++;
    return 0;
}

//  True for a non-empty list of objects only: its items are actors.
static bool
s_is_actor_list (json_t *value)
{
    if (!json_is_array (value) || json_array_size (value) == 0)
        return false;
    for (size_t i = 0; i < json_array_size (value); i++)
        if (!json_is_object (json_array_get (value, i)))
            return false;
    return true;
}

//  The rows of object's counters under actor, nested objects' counters
//  named prefix + key + "." + their key.
static int
s_add_counters (bn_clistats_t *self, const char *actor, const char *prefix,
                json_t *object)
{
    const char *key;
    json_t *value;
    json_object_foreach (object, key, value)
    {
        if (s_is_actor_list (value))
            continue;
        char *counter = zsys_sprintf ("%s%s", prefix, key);
        if (!counter)
            return -1;
        int rc = 0;
        if (json_is_object (value)) {
            char *nested = zsys_sprintf ("%s.", counter);
            rc = nested ? s_add_counters (self, actor, nested, value) : -1;
            free (nested);
        } else
            rc = s_add_row (self, actor, counter, value);
        free (counter);
        if (rc)
            return -1;
    }
    return 0;
}

//  Add actor name with the counters of object, then the actors of its
//  lists of objects (name.0, name.1, ...).
static int
s_add_actor (bn_clistats_t *self, const char *name, json_t *object)
{
    if (s_grow ((void **)&self->actors, self->nactors, &self->actors_room,
                sizeof (s_actor_t)))
        return -1;
    s_actor_t *actor = &self->actors[self->nactors];
    if (!(actor->name = strdup (name)))
        return -1;
    actor->object = object;
    self->nactors++;
    if (s_add_counters (self, name, "", object))
        return -1;
    const char *key;
    json_t *value;
    json_object_foreach (object, key, value)
    {
        if (!s_is_actor_list (value))
            continue;
        for (size_t i = 0; i < json_array_size (value); i++) {
            char *part = zsys_sprintf ("%s.%zu", name, i);
            int rc =
                part ? s_add_actor (self, part, json_array_get (value, i)) : -1;
            free (part);
            if (rc)
                return -1;
        }
    }
    return 0;
}

bn_clistats_t *
bn_clistats_new (const char *json)
{
    assert (json);
    bn_clistats_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->root = json_loads (json, 0, NULL);
    self->selected = self->root;
    bool ok = json_is_object (self->root);
    const char *name;
    json_t *object;
    json_object_foreach (ok ? self->root : NULL, name, object)
    {
        if (!json_is_object (object) || s_add_actor (self, name, object)) {
            ok = false;
            break;
        }
    }
    if (!ok)
        bn_clistats_destroy (&self);
    return self;
}

static void
s_free_row (s_row_t *row)
{
    free (row->actor);
    free (row->counter);
    free (row->value);
}

void
bn_clistats_destroy (bn_clistats_t **self_p)
{
    assert (self_p);
    bn_clistats_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->nrows; i++)
        s_free_row (&self->rows[i]);
    for (size_t i = 0; i < self->nactors; i++)
        free (self->actors[i].name);
    free (self->rows);
    free (self->actors);
    json_decref (self->root);
    free (self);
    *self_p = NULL;
}

//  True if row_actor is actor or one of its parts (actor + "." + ...).
static bool
s_within (const char *row_actor, const char *actor)
{
    size_t len = strlen (actor);
    return strncmp (row_actor, actor, len) == 0 &&
           (row_actor[len] == 0 || row_actor[len] == '.');
}

int
bn_clistats_select (bn_clistats_t *self, const char *actor)
{
    assert (self);
    assert (actor);
    json_t *object = NULL;
    for (size_t i = 0; !object && i < self->nactors; i++)
        if (strcmp (self->actors[i].name, actor) == 0)
            object = self->actors[i].object;
    if (!object)
        return -1;
    self->selected = object;
    size_t kept = 0;
    for (size_t i = 0; i < self->nrows; i++) {
        if (s_within (self->rows[i].actor, actor))
            self->rows[kept++] = self->rows[i];
        else
            s_free_row (&self->rows[i]);
    }
    self->nrows = kept;
    return 0;
}

size_t
bn_clistats_size (bn_clistats_t *self)
{
    assert (self);
    return self->nrows;
}

const char *
bn_clistats_actor (bn_clistats_t *self, size_t index)
{
    assert (self);
    assert (index < self->nrows);
    return self->rows[index].actor;
}

const char *
bn_clistats_counter (bn_clistats_t *self, size_t index)
{
    assert (self);
    assert (index < self->nrows);
    return self->rows[index].counter;
}

const char *
bn_clistats_value (bn_clistats_t *self, size_t index)
{
    assert (self);
    assert (index < self->nrows);
    return self->rows[index].value;
}

char *
bn_clistats_actors (bn_clistats_t *self)
{
    assert (self);
    char *names = strdup ("");
    for (size_t i = 0; names && i < self->nactors; i++) {
        char *longer =
            zsys_sprintf ("%s%s%s", names, i ? ", " : "", self->actors[i].name);
        free (names);
        names = longer;
    }
    return names;
}

void
bn_clistats_print (bn_clistats_t *self, FILE *file)
{
    assert (self);
    assert (file);
    int actor_width = (int)strlen ("ACTOR");
    int counter_width = (int)strlen ("COUNTER");
    for (size_t i = 0; i < self->nrows; i++) {
        int actor = (int)strlen (self->rows[i].actor);
        int counter = (int)strlen (self->rows[i].counter);
        actor_width = actor > actor_width ? actor : actor_width;
        counter_width = counter > counter_width ? counter : counter_width;
    }
    fprintf (file, "%-*s  %-*s  %s\n", actor_width, "ACTOR", counter_width,
             "COUNTER", "VALUE");
    for (size_t i = 0; i < self->nrows; i++)
        fprintf (file, "%-*s  %-*s  %s\n", actor_width, self->rows[i].actor,
                 counter_width, self->rows[i].counter, self->rows[i].value);
}

int
bn_clistats_print_json (bn_clistats_t *self, FILE *file)
{
    assert (self);
    assert (file);
    if (json_dumpf (self->selected, file, JSON_INDENT (2)) != 0)
        return -1;
    fputc ('\n', file);
    return 0;
}

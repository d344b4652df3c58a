/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_heap: an indexed binary heap.  */
#include "bn_heap.h"

#include <assert.h>
#include <stdlib.h>

struct _bn_heap_t {
    bn_heap_before_fn *before;
    void *arg;
    size_t offset; //  Of each item's place
    void **items;  //  items[0] first; the children of i are 2i+1, 2i+2
    size_t *walk;  //  Frontier of bn_heap_find, as many as items
    size_t size;
    size_t cap;
};

//  Where item keeps its place.
static size_t *
s_place (bn_heap_t *self, const void *item)
{
    return (size_t *)((char *)item + self->offset);
}

static void
s_set (bn_heap_t *self, size_t at, void *item)
{
    self->items[at] = item;
    *s_place (self, item) = at;
}

static bool
s_before (bn_heap_t *self, size_t a, size_t b)
{
    return self->before (self->arg, self->items[a], self->items[b]);
}

static void
s_up (bn_heap_t *self, size_t at)
{
    void *item = self->items[at];
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (!self->before (self->arg, item, self->items[parent]))
            break;
        s_set (self, at, self->items[parent]);
        at = parent;
    }
    s_set (self, at, item);
}

static void
s_down (bn_heap_t *self, size_t at)
{
    void *item = self->items[at];
    while (true) {
        size_t child = 2 * at + 1;
        if (child >= self->size)
            break;
        if (child + 1 < self->size && s_before (self, child + 1, child))
            child++;
        if (!self->before (self->arg, self->items[child], item))
            break;
        s_set (self, at, self->items[child]);
        at = child;
    }
    s_set (self, at, item);
}

bn_heap_t *
bn_heap_new (bn_heap_before_fn *before, void *arg, size_t place_offset)
{
    assert (before);
    bn_heap_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->before = before;
    self->arg = arg;
    self->offset = place_offset;
    return self;
}

void
bn_heap_destroy (bn_heap_t **self_p)
{
    assert (self_p);
    bn_heap_t *self = *self_p;
    if (self) {
        free (self->items);
        free (self->walk);
        free (self);
        *self_p = NULL;
    }
}

int
bn_heap_reserve (bn_heap_t *self, size_t count)
{
    assert (self);
    if (count <= self->cap)
        return 0;
    size_t cap = self->cap ? self->cap : 16;
    while (cap < count)
        cap *= 2;
    void **items = realloc (self->items, cap * sizeof *items);
    if (items)
        self->items = items;
    size_t *walk = realloc (self->walk, cap * sizeof *walk);
    if (walk)
        self->walk = walk;
    if (!items || !walk)
        return -1;
    self->cap = cap;
    return 0;
}

int
bn_heap_insert (bn_heap_t *self, void *item)
{
    assert (self);
    assert (item);
    assert (*s_place (self, item) == BN_HEAP_NONE);
    if (bn_heap_reserve (self, self->size + 1) != 0)
        return -1;
    s_set (self, self->size++, item);
    s_up (self, self->size - 1);
    return 0;
}

void
bn_heap_remove (bn_heap_t *self, void *item)
{
    assert (self);
    assert (bn_heap_has (self, item));
    size_t at = *s_place (self, item);
    *s_place (self, item) = BN_HEAP_NONE;
    if (at == --self->size)
        return;
    void *moved = self->items[self->size];
    s_set (self, at, moved);
    s_up (self, at);
    s_down (self, *s_place (self, moved));
}

void
bn_heap_update (bn_heap_t *self, void *item)
{
    assert (self);
    assert (bn_heap_has (self, item));
    s_up (self, *s_place (self, item));
    s_down (self, *s_place (self, item));
}

bool
bn_heap_has (bn_heap_t *self, const void *item)
{
    assert (self);
    assert (item);
    size_t at = *s_place (self, item);
    return at < self->size && self->items[at] == item;
}

void *
bn_heap_first (bn_heap_t *self)
{
    assert (self);
    return self->size ? self->items[0] : NULL;
}

//  A best-first walk: the frontier holds the children of the items
//  refused so far, and the best of it is asked next.
void *
bn_heap_find (bn_heap_t *self, bn_heap_accept_fn *accept, void *arg)
{
    assert (self);
    assert (accept);
    if (self->size == 0)
        return NULL;
    size_t *frontier = self->walk;
    size_t nfront = 0;
    frontier[nfront++] = 0;
    while (nfront) {
        size_t best = 0;
        for (size_t i = 1; i < nfront; i++)
            if (s_before (self, frontier[i], frontier[best]))
                best = i;
        size_t at = frontier[best];
        frontier[best] = frontier[--nfront];
        if (accept (arg, self->items[at]))
            return self->items[at];
        for (size_t child = 2 * at + 1; child <= 2 * at + 2; child++)
            if (child < self->size)
                frontier[nfront++] = child;
    }
    return NULL;
}

size_t
bn_heap_size (bn_heap_t *self)
{
    assert (self);
    return self->size;
}

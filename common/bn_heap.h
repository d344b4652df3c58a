/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_heap: a binary heap of items that know their place in it, so that
    one can be removed, or moved after its key changed, in O(log n): the
    task scheduler's available engines (best first) and its deadlines
    (earliest first).  */
#ifndef BN_HEAP_H_INCLUDED
#define BN_HEAP_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _bn_heap_t bn_heap_t;

//  The place of an item not in the heap.
#define BN_HEAP_NONE SIZE_MAX

//  True if a comes out before b.
typedef bool (bn_heap_before_fn) (void *arg, const void *a, const void *b);

//  True if item will do (bn_heap_find).
typedef bool (bn_heap_accept_fn) (void *arg, const void *item);

//  Create an empty heap ordered by before. Each item holds its place in a
//  size_t at place_offset (offsetof), BN_HEAP_NONE while it is not in the
//  heap (the item's owner sets that first). Returns NULL if out of memory.
bn_heap_t *bn_heap_new (bn_heap_before_fn *before, void *arg,
                        size_t place_offset);

//  Destroy a heap (not its items); NULL-safe.
void bn_heap_destroy (bn_heap_t **self_p);

//  Make room for count items, so that inserting up to that many cannot
//  fail. Returns 0, or -1 if out of memory.
int bn_heap_reserve (bn_heap_t *self, size_t count);

//  Add item (not in the heap). Returns 0, or -1 if out of memory.
int bn_heap_insert (bn_heap_t *self, void *item);

//  Take item (in the heap) out of it.
void bn_heap_remove (bn_heap_t *self, void *item);

//  Put item (in the heap) back in order after its key changed.
void bn_heap_update (bn_heap_t *self, void *item);

//  True if item is in the heap.
bool bn_heap_has (bn_heap_t *self, const void *item);

//  The first item, or NULL if the heap is empty.
void *bn_heap_first (bn_heap_t *self);

//  The first item accept takes, walking the heap in order: accept is asked
//  about at most (items it refuses + 1) items, the walk's frontier being
//  the children of those it refused (made for the few a blacklist
//  refuses). NULL if it takes none.
void *bn_heap_find (bn_heap_t *self, bn_heap_accept_fn *accept, void *arg);

//  Number of items.
size_t bn_heap_size (bn_heap_t *self);

#endif

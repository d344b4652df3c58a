/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_idset: sets of engine ids written in pdsh/ClusterShell syntax (0-15,32).
 */
#ifndef BN_IDSET_H_INCLUDED
#define BN_IDSET_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_idset_t bn_idset_t;

//  Create an empty set; returns NULL if out of memory.
bn_idset_t *bn_idset_new (void);

//  Destroy a set and NULL the caller's reference; NULL-safe.
void bn_idset_destroy (bn_idset_t **self_p);

//  Create a set from text such as "0-15,32", "3" or "" (the empty set);
//  spaces around elements are allowed. Returns NULL on a syntax error
//  ("1-", "a", "5-2", "-1", ids above INT_MAX) or if out of memory.
bn_idset_t *bn_idset_parse (const char *text);

//  Add every id named by text (same syntax as bn_idset_parse) to the set.
//  Returns 0, or -1 on a syntax error, in which case the set is unchanged.
int bn_idset_add_text (bn_idset_t *self, const char *text);

//  Add one id. Returns 0, or -1 if id is negative or memory runs out.
int bn_idset_add (bn_idset_t *self, int id);

//  Add the ids first..last inclusive. Returns 0, or -1 if first is
//  negative, first > last, or memory runs out.
int bn_idset_add_range (bn_idset_t *self, int first, int last);

//  Remove one id (absent ids are ignored). Returns 0, or -1 if memory
//  runs out while splitting a range.
int bn_idset_remove (bn_idset_t *self, int id);

//  Remove every id.
void bn_idset_clear (bn_idset_t *self);

//  True if id is in the set.
bool bn_idset_contains (bn_idset_t *self, int id);

//  Number of ids in the set.
size_t bn_idset_count (bn_idset_t *self);

//  Smallest id, or -1 if the set is empty.
int bn_idset_first (bn_idset_t *self);

//  Largest id, or -1 if the set is empty.
int bn_idset_last (bn_idset_t *self);

//  Smallest id greater than prev, or -1 if there is none; with
//  bn_idset_first it walks the set in ascending order.
int bn_idset_next (bn_idset_t *self, int prev);

//  Folded text of the set ("0-15,32", "" when empty), malloc'd for the
//  caller to free; NULL if out of memory.
char *bn_idset_encode (bn_idset_t *self);

//  Display text "engines[0-15,32] (17)", malloc'd for the caller to free;
//  NULL if out of memory.
char *bn_idset_format (bn_idset_t *self);

//  True if both sets hold the same ids.
bool bn_idset_equal (bn_idset_t *self, bn_idset_t *other);

//  Copy of the set; NULL if out of memory.
bn_idset_t *bn_idset_dup (bn_idset_t *self);

#endif

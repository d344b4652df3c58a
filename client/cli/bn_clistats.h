/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clistats: the controller's counters (bn_client_stats) as banyan
    stats shows them: one row per actor, counter and value. A nested object
    gives dotted counter names ("link.delivered"), and a list of objects
    gives actors of their own, one per item: the broadcast tree's nodes are
    broadcast.0 (the root), broadcast.1, ...  */
#ifndef BN_CLISTATS_H_INCLUDED
#define BN_CLISTATS_H_INCLUDED

#include <stddef.h>
#include <stdio.h>

typedef struct _bn_clistats_t bn_clistats_t;

//  Read json, an object of one object per actor. Returns NULL if it is not
//  such an object or if out of memory.
bn_clistats_t *bn_clistats_new (const char *json);

//  Destroy and NULL the caller's reference; NULL-safe.
void bn_clistats_destroy (bn_clistats_t **self_p);

//  Keep only actor and its parts ("broadcast" keeps broadcast.0 and the
//  other nodes; "broadcast.1" keeps that node). Returns 0, or -1 if no
//  actor has that name (nothing changes).
int bn_clistats_select (bn_clistats_t *self, const char *actor);

//  Number of rows.
size_t bn_clistats_size (bn_clistats_t *self);

//  A row's actor, counter and value (a number as text, text as is, "-"
//  for null, a list of values joined by ","); index below the size.
const char *bn_clistats_actor (bn_clistats_t *self, size_t index);
const char *bn_clistats_counter (bn_clistats_t *self, size_t index);
const char *bn_clistats_value (bn_clistats_t *self, size_t index);

//  The names of every actor, joined by ", " (for messages); a new string,
//  NULL if out of memory.
char *bn_clistats_actors (bn_clistats_t *self);

//  Print the rows as a table with the header ACTOR COUNTER VALUE.
void bn_clistats_print (bn_clistats_t *self, FILE *file);

//  Print the selected actor's object (every actor's before a selection)
//  as indented JSON. Returns 0, or -1 if out of memory.
int bn_clistats_print_json (bn_clistats_t *self, FILE *file);

#endif

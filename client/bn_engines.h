/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engines: a client's table of the controller's registered engines,
    id to uuid and back, kept from the connection reply and the hub's
    notifications. Internal to libbanyan; the tracker's lock guards it.  */
#ifndef BN_ENGINES_H_INCLUDED
#define BN_ENGINES_H_INCLUDED

#include "banyan.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define BN_UUID_SIZE 64 //  room for an engine uuid and its NUL

//  What an engine said at registration that it understands
//  (BN_REG_FEATURES), as bits
#define BN_ENGINE_OUTPUT_IN_REPLY 0x1u //  bn_output: "reply"

typedef struct _bn_engines_t bn_engines_t;

//  An engine a request goes to.
typedef struct {
    int id;                  //  engine id
    char uuid[BN_UUID_SIZE]; //  engine identity
    unsigned features;       //  BN_ENGINE_* bits
} bn_target_t;

//  Create an empty table; NULL if out of memory.
bn_engines_t *bn_engines_new (void);

//  Destroy a table; NULLs the reference; NULL-safe.
void bn_engines_destroy (bn_engines_t **self_p);

//  Register engine id as uuid (replacing another uuid at that id).
//  Returns 0, or -1 for a negative id, an empty or too long uuid, or out
//  of memory.
int bn_engines_add (bn_engines_t *self, int id, const char *uuid);

//  Set the features of engine id from the names its registration listed
//  (names unknown here, or NULL: none). Returns 0, or -1 if id is not
//  registered.
int bn_engines_set_features (bn_engines_t *self, int id, json_t *names);

//  The features of engine id (BN_ENGINE_* bits), 0 if it said none or is
//  not registered.
unsigned bn_engines_features (bn_engines_t *self, int id);

//  Unregister engine id: its uuid (for the caller to free), or NULL if it
//  was not registered.
char *bn_engines_remove (bn_engines_t *self, int id);

//  The uuid of engine id (borrowed), or NULL.
const char *bn_engines_uuid (bn_engines_t *self, int id);

//  The id of the engine with this uuid, or -1.
int bn_engines_id_of (bn_engines_t *self, const char *uuid);

//  Number of registered engines.
size_t bn_engines_count (bn_engines_t *self);

//  The ids of the registered engines as a new set; NULL if out of memory.
bn_idset_t *bn_engines_ids (bn_engines_t *self);

//  Resolve engine ids (all registered engines when ids is NULL) into a
//  malloc'd array. Returns 0, BN_ENOENGINE (an id is not registered, or
//  no engines at all) or BN_ENOMEM.
int bn_engines_resolve (bn_engines_t *self, const int *ids, size_t count,
                        bn_target_t **targets, size_t *ntargets);

#endif

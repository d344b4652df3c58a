/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine_table: the hub's engines by uuid and by id, pending or
    registered, and the id counter (doc/wire.md 4.1: ids are never reused).  */
#ifndef BN_ENGINE_TABLE_H_INCLUDED
#define BN_ENGINE_TABLE_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_engine_table_t bn_engine_table_t;

//  Create an empty table; NULL if out of memory.
bn_engine_table_t *bn_engine_table_new (void);

//  Destroy a table; NULL-safe.
void bn_engine_table_destroy (bn_engine_table_t **self_p);

//  The id for a new registration: requested (if >= 0 and no registered or
//  pending engine has it), else the next value of the counter. The counter
//  always moves past the id returned, so the counter never hands out an id
//  twice, even when the registration then fails; once a request has taken
//  it to INT32_MAX, the lowest free id is given instead.
int bn_engine_table_new_id (bn_engine_table_t *self, int requested);

//  The id the counter gives next; and move the counter to at least next
//  (ids of a restored engine table stay unused).
int bn_engine_table_next_id (bn_engine_table_t *self);
void bn_engine_table_set_next_id (bn_engine_table_t *self, int next);

//  Add uuid as a pending registration with id. Returns -1 if the uuid is
//  already pending or registered, or out of memory.
int bn_engine_table_add_pending (bn_engine_table_t *self, const char *uuid,
                                 int id);

//  Make a pending uuid registered; returns its id, or -1 if not pending.
int bn_engine_table_finish (bn_engine_table_t *self, const char *uuid);

//  Remove uuid, pending or registered; returns its id, or -1 if unknown.
int bn_engine_table_remove (bn_engine_table_t *self, const char *uuid);

//  True if uuid is pending or registered.
bool bn_engine_table_has (bn_engine_table_t *self, const char *uuid);

//  True if uuid is pending.
bool bn_engine_table_is_pending (bn_engine_table_t *self, const char *uuid);

//  Id of a registered uuid, or -1.
int bn_engine_table_id (bn_engine_table_t *self, const char *uuid);

//  Uuid of the engine with id (registered, or pending too when
//  with_pending), or NULL.
const char *bn_engine_table_uuid (bn_engine_table_t *self, int id,
                                  bool with_pending);

//  Keep features (a JSON list of strings, borrowed and copied) as what the
//  pending or registered engine uuid said it understands (BN_REG_FEATURES).
//  Returns -1 if uuid is unknown or out of memory.
int bn_engine_table_set_features (bn_engine_table_t *self, const char *uuid,
                                  json_t *features);

//  The features of uuid (borrowed), or NULL if it said none.
json_t *bn_engine_table_features (bn_engine_table_t *self, const char *uuid);

//  New JSON object {"<id>": features} of the registered engines that said
//  any; NULL if out of memory.
json_t *bn_engine_table_all_features (bn_engine_table_t *self);

//  Number of registered engines.
size_t bn_engine_table_size (bn_engine_table_t *self);

//  New JSON array of the registered ids, ascending; NULL if out of memory.
json_t *bn_engine_table_ids (bn_engine_table_t *self);

//  New JSON object {"<id>": uuid} of the registered engines; NULL if out
//  of memory.
json_t *bn_engine_table_engines (bn_engine_table_t *self);

#endif

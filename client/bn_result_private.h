/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_result_private: the part of bn_result (banyan.h) that libbanyan's
    views, hub queries and reply decoding use to make and fill results.  */
#ifndef BN_RESULT_PRIVATE_H_INCLUDED
#define BN_RESULT_PRIVATE_H_INCLUDED

#include "banyan.h"
#include "bn_item.h"
#include "bn_msg.h"
#include "bn_tracker.h"

#include <jansson.h>

//  Create a result with room for capacity items, whose items tracker
//  routes replies to; it takes a reference to tracker. NULL if out of
//  memory.
bn_result_t *bn_result_new (bn_tracker_t *tracker, size_t capacity);

//  Drops the reference a result holds to the client it came from.
typedef void (bn_result_release_fn) (bn_client_t **client_p);

//  The result came from client (its reference taken, dropped with release
//  when the result is destroyed), for what is done with a result through
//  its client (bn_result_abort).
void bn_result_set_client (bn_result_t *self, bn_client_t *client,
                           bn_result_release_fn *release);

//  The client the result came from (borrowed), or NULL.
bn_client_t *bn_result_client (bn_result_t *self);

//  The request asked engines for output in the reply (bn_output), so an
//  item whose reply carries none has no iopub output to wait for either.
//  Set before adding items.
void bn_result_set_output_in_reply (bn_result_t *self, bool in_reply);

//  Add an item of kind for a request sent with msg_id at date, to engine
//  id/uuid (-1/NULL when not known). NULL if out of memory or full.
bn_item_t *bn_result_add (bn_result_t *self, const char *msg_id,
                          const char *date, int engine_id, const char *uuid,
                          bn_item_kind_t kind);

//  The item at index.
bn_item_t *bn_result_item (bn_result_t *self, size_t index);

//  With the lock held: one more reply message arrived for the result.
void bn_result_count_message (bn_result_t *self);

//  With the lock held: record a group of engines (taken) that came as
//  one entry; returns its number, or -1 if out of memory.
int bn_result_add_group (bn_result_t *self, bn_idset_t *engines);

//  With the lock held: record a reduced value (taken, may be NULL when
//  it could not be decoded), its op, its contributors and failed
//  engines (borrowed). Returns 0 or -1 if out of memory.
int bn_result_add_reduced (bn_result_t *self, const char *op, bn_value_t *value,
                           bn_idset_t *engines, bn_idset_t *failed);

//  The reply message of a complete hub query item (borrowed), or NULL.
bn_msg_t *bn_result_reply_msg (bn_result_t *self, size_t index);

//  The reply content of a complete item (borrowed), or NULL.
json_t *bn_result_reply (bn_result_t *self, size_t index);

#endif

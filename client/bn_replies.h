/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_replies: reply messages made into what their items record: a plain
    reply (one engine's, or the hub's) goes to the item of its parent
    msg_id; a merged broadcast reply, read entry by entry with
    bn_merged_reader, to the item of each engine it answers for (with its
    group, or its part of a reduction). Internal to libbanyan.  */
#ifndef BN_REPLIES_H_INCLUDED
#define BN_REPLIES_H_INCLUDED

#include "bn_engines.h"
#include "bn_item.h"
#include "bn_msg.h"
#include "bn_tracker.h"

#include <stdbool.h>
#include <stddef.h>

//  Told of a message, or an entry of a merged one, that was dropped.
typedef void (bn_replies_drop_fn) (void *arg, const char *why);

//  Without the lock: hand a verified reply message to the tracker's items
//  (engines finds the uuid of an engine a merged reply names by id).
//  broadcast: it came from the broadcast tree, where merged replies come.
//  A message no item takes, a malformed one, or a malformed entry of a
//  merged one is dropped and told to drop (arg). Returns true if an item
//  completed.
bool bn_replies_on_reply (bn_tracker_t *tracker, bn_engines_t *engines,
                          bn_msg_t *msg, bool broadcast,
                          bn_replies_drop_fn *drop, void *arg);

//  With the lock held: record the plain reply msg in item; value is its
//  decoded result (taken; may be NULL), or decode_error a BN_E* code
//  with its text in why; engine_id is the replying engine's id when the
//  item did not know it. Returns true if the item completed now.
bool bn_replies_deliver (bn_item_t *item, bn_msg_t *msg, bn_value_t *value,
                         int decode_error, const char *why, int engine_id);

//  Decode the first result object of an ok apply_reply from buffer start
//  on, using no buffer at or past end (SIZE_MAX: all); *used is how many
//  buffers it took. NULL with *error (BN_EPICKLE, BN_ENOMEM) and why.
bn_value_t *bn_replies_decode (bn_msg_t *msg, size_t start, size_t end,
                               size_t *used, int *error, char *why,
                               size_t whysize);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduce: the partial reduction of one broadcast request at one node
    (request metadata bn_reduce = "sum" | "min" | "max" | "<plugin>:<name>",
    doc/broadcast.md).

    State: the value reduced so far (NULL before the first contribution),
    the set of engines that contributed to it, the engines that failed
    (grouped by ename and evalue, each group with the first failure's
    error content), and, when combining failed (an int sum past 64 bits, a
    plugin's combine error), the error of the whole reduction.

    A leaf adds its engines' apply replies (bn_reduce_add_reply); a node
    above adds its children's merged messages (bn_reduce_add_merged); both
    end by writing their own merged message: metadata `bn_reduced`
    (bn_reduce_json) and the value as one serialized object
    (bn_reduce_add_buffers):

        bn_reduced = {"op": "sum", "engines": "0-15,32",
                      "failed": [{"engines": "7", "content": {...}}],
                      "error": {...}}   (only when the reduction failed)

    with one buffer set: the result serialized as ipyparallel's
    serialize_object does (one pickle frame for a number; None when no
    engine contributed or the reduction failed), which the stock
    deserialize_object decodes.  */
#ifndef BN_REDUCE_H_INCLUDED
#define BN_REDUCE_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "bn_idset.h"
#include "bn_msg.h"
#include "bn_reducers.h"

typedef struct _bn_reduce_t bn_reduce_t;

//  Start a reduction named op, looked up in reducers (which must outlive
//  it). Returns NULL with a message in err for an unknown name ("no
//  reduction 'x:y'; known: sum, min, max, ...") or out of memory.
bn_reduce_t *bn_reduce_new (bn_reducers_t *reducers, const char *op, char *err,
                            size_t errsize);

//  Destroy the state; NULLs the reference; NULL-safe.
void bn_reduce_destroy (bn_reduce_t **self_p);

//  Add engine eid's result. Takes ownership of *value_p (NULLs it). A
//  result lift refuses makes eid a failed engine (TypeError...); a
//  combine error fails the reduction. Returns 0, or -1 if eid is
//  negative or already counted (the value is destroyed, the state
//  unchanged).
int bn_reduce_add_value (bn_reduce_t *self, int eid, bn_value_t **value_p);

//  Record engines as failed with an error content (borrowed; the first of
//  each ename/evalue is kept). Returns 0, or -1 if the set is empty or an
//  engine is already counted.
int bn_reduce_add_failure (bn_reduce_t *self, bn_idset_t *engines,
                           json_t *content);

//  Add engine eid's apply_reply: its result decoded from the buffers when
//  content.status is "ok" (a result that does not decode fails the
//  engine), else a failure with its content. Returns 0, or -1 with a
//  message in err (content not JSON, eid already counted).
int bn_reduce_add_reply (bn_reduce_t *self, int eid, bn_msg_t *reply, char *err,
                         size_t errsize);

//  Add a child's merged message (metadata bn_reduced, buffers holding the
//  serialized partial): its value is combined with ours, its engines and
//  failures joined, its error kept. Returns 0, or -1 with a message in
//  err (no bn_reduced, another op, a bad idset, a value that does not
//  decode, engines already counted); the state is then unchanged.
int bn_reduce_add_merged (bn_reduce_t *self, bn_msg_t *merged, char *err,
                          size_t errsize);

//  The reduction's full name ("sum", "example:prod").
const char *bn_reduce_op (bn_reduce_t *self);

//  The value reduced so far, borrowed; NULL if nothing contributed or the
//  reduction failed.
const bn_value_t *bn_reduce_value (bn_reduce_t *self);

//  Number of engines that contributed.
size_t bn_reduce_count (bn_reduce_t *self);

//  Number of engines counted: contributed or failed.
size_t bn_reduce_total (bn_reduce_t *self);

//  True if engine eid has been counted (contributed or failed).
bool bn_reduce_has (bn_reduce_t *self, int eid);

//  Error content of the failed reduction (borrowed), or NULL.
json_t *bn_reduce_error (bn_reduce_t *self);

//  Number of failure groups, and each group's engines and content, in
//  order of lowest engine id (borrowed).
size_t bn_reduce_nfailed (bn_reduce_t *self);
bn_idset_t *bn_reduce_failed_engines (bn_reduce_t *self, size_t index);
json_t *bn_reduce_failed_content (bn_reduce_t *self, size_t index);

//  The bn_reduced metadata object (new reference); NULL if out of memory.
json_t *bn_reduce_json (bn_reduce_t *self);

//  Append the serialized value (None when there is none) to msg as
//  buffers. Returns 0, or -1 if the value cannot be pickled or memory
//  runs out.
int bn_reduce_add_buffers (bn_reduce_t *self, bn_msg_t *msg);

#endif

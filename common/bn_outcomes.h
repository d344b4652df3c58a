/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_outcomes: what became of the last finished msg_ids (succeeded or
    failed, and where), up to a bound, the oldest forgotten first: the task
    scheduler's memory for dependencies on finished tasks. A msg_id is kept
    as a 16-byte keyed digest (SipHash-128) with its outcome, in a ring in
    finishing order indexed by an open-addressed table: 32 bytes an entry
    and 8 to 16 of index (40 a task at a million), where the msg_id's
    string in a hash table and a list took 209. Two msg_ids of a million
    share a digest with odds of about 10^-27.  */
#ifndef BN_OUTCOMES_H_INCLUDED
#define BN_OUTCOMES_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_outcomes_t bn_outcomes_t;

typedef enum {
    BN_OUTCOME_NONE,      //  Not remembered
    BN_OUTCOME_SUCCEEDED, //  Finished with success
    BN_OUTCOME_FAILED     //  Finished with an error
} bn_outcome_t;

//  Create an empty memory of at most max outcomes (at least 1). Room is
//  made as they come. Returns NULL if out of memory.
bn_outcomes_t *bn_outcomes_new (size_t max);

//  Destroy it; NULL-safe.
void bn_outcomes_destroy (bn_outcomes_t **self_p);

//  Remember that msg_id finished with outcome (SUCCEEDED or FAILED) at
//  where (borrowed, may be NULL), as the newest: one it held before is
//  replaced, and the oldest go while more than max are held. Returns 0, or
//  -1 if out of memory (msg_id is then not remembered).
int bn_outcomes_add (bn_outcomes_t *self, const char *msg_id,
                     bn_outcome_t outcome, const void *where);

//  What became of msg_id, and where (if where_p), or BN_OUTCOME_NONE if it
//  is not remembered.
bn_outcome_t bn_outcomes_get (bn_outcomes_t *self, const char *msg_id,
                              const void **where_p);

//  Forget msg_id. Returns true if it was remembered.
bool bn_outcomes_remove (bn_outcomes_t *self, const char *msg_id);

//  Outcomes remembered.
size_t bn_outcomes_size (bn_outcomes_t *self);

//  Change the bound (the oldest go at once if more are held).
void bn_outcomes_set_max (bn_outcomes_t *self, size_t max);

//  Bytes its tables take.
size_t bn_outcomes_bytes (bn_outcomes_t *self);

#endif

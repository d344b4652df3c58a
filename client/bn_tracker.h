/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_tracker: the requests of one client that wait for replies, by
    msg_id, with the lock that guards them (and everything else the
    client's threads share: its engine table, the results' items, the
    views' settings), the condition waiters sleep on, and whether the
    client still has its controller. Internal to libbanyan.

    Reference counted: the client and each of its results hold one, so
    that a result can be read and destroyed after its client.  */
#ifndef BN_TRACKER_H_INCLUDED
#define BN_TRACKER_H_INCLUDED

#include "bn_item.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

typedef struct _bn_tracker_t bn_tracker_t;

//  Create a tracker (one reference); NULL if out of memory.
bn_tracker_t *bn_tracker_new (void);

//  Take one more reference.
void bn_tracker_ref (bn_tracker_t *self);

//  Drop a reference; the last one frees the tracker. NULLs *self_p;
//  NULL-safe.
void bn_tracker_unref (bn_tracker_t **self_p);

void bn_tracker_lock (bn_tracker_t *self);
void bn_tracker_unlock (bn_tracker_t *self);

//  With the lock held: sleep until something changes (bn_tracker_changed)
//  or until deadline (bn_tracker_deadline; negative: none). Returns 0, or
//  BN_ETIMEDOUT once the deadline has passed.
int bn_tracker_wait_change (bn_tracker_t *self, double deadline);

//  With the lock held: sleep on the condition until it is signalled or
//  until deadline, as bn_tracker_wait_change does when no waiter is set.
int bn_tracker_sleep (bn_tracker_t *self, double deadline);

//  With the lock held: sleep on cond (made for CLOCK_MONOTONIC) until it
//  is signalled or until the time at until (NULL: no limit).
void bn_tracker_wait_on (bn_tracker_t *self, pthread_cond_t *cond,
                         const struct timespec *until);

//  What bn_tracker_wait_change does instead of sleeping: called with the
//  lock held and returning with it held, it returns 0 once something may
//  have changed, BN_ETIMEDOUT once deadline has passed.
typedef int (bn_tracker_waiter_fn) (void *arg, double deadline);

//  With the lock held: have waiters call fn with arg (NULL: sleep).
void bn_tracker_set_waiter (bn_tracker_t *self, bn_tracker_waiter_fn *fn,
                            void *arg);

//  With the lock held: wake every waiter.
void bn_tracker_changed (bn_tracker_t *self);

//  Absolute deadline of a timeout in seconds (negative: none, -1).
double bn_tracker_deadline (double timeout);

//  With the lock held: 0 while the client has its controller, else why
//  not (BN_ENOCONTROLLER, BN_ECLOSED).
int bn_tracker_state (bn_tracker_t *self);

//  With the lock held: the client lost its controller or was closed
//  (code): the state becomes code unless it was set before, and every
//  request still tracked fails with code.
void bn_tracker_close (bn_tracker_t *self, int code);

//  With the lock held: route replies and output for item's msg_id to it.
//  Returns 0 or -1 if out of memory.
int bn_tracker_track (bn_tracker_t *self, bn_item_t *item);

//  With the lock held: stop routing to item (no-op if not tracked).
void bn_tracker_untrack (bn_tracker_t *self, bn_item_t *item);

//  With the lock held: the item tracked for msg_id, or NULL.
bn_item_t *bn_tracker_find (bn_tracker_t *self, const char *msg_id);

//  With the lock held: engine id (uuid) unregistered: settle the items
//  still waiting on it (bn_item_engine_died). Returns true if any
//  completed.
bool bn_tracker_engine_died (bn_tracker_t *self, const char *uuid, int id);

//  With the lock held: the connection to the broadcast scheduler was lost
//  (its process ended, or stopped answering): the items sent there that
//  have no reply fail with EngineError, as nothing will answer them.
//  Returns true if any completed.
bool bn_tracker_broadcast_lost (bn_tracker_t *self);

//  With the lock held: a JSON list of the msg_ids of every shell request
//  still waiting for its reply; NULL if out of memory.
json_t *bn_tracker_outstanding (bn_tracker_t *self);

#endif

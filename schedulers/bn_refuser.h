/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_refuser: holds the task and broadcast ports while the controller has
    no scheduler behind them, answering every request with an error reply
    the stock client matches (doc/wire.md 7.4, 8.3).  */
#ifndef BN_REFUSER_H_INCLUDED
#define BN_REFUSER_H_INCLUDED

#include <czmq.h>
#include <jansson.h>

#include "bn_session.h"

typedef struct _bn_refuser_t bn_refuser_t;

typedef enum {
    BN_REFUSER_TASK,     //  one apply_reply per request
    BN_REFUSER_BROADCAST //  one reply per target, or one coalesced reply
} bn_refuser_kind_t;

//  Create a refuser answering requests that arrive on client_side (a
//  ROUTER, borrowed). Returns NULL if out of memory.
bn_refuser_t *bn_refuser_new (bn_refuser_kind_t kind, zsock_t *client_side,
                              bn_session_t *session);

//  Destroy a refuser (not its sockets); NULL-safe.
void bn_refuser_destroy (bn_refuser_t **self_p);

//  Also read an engine-facing socket (borrowed): whatever arrives there is
//  verified, counted and dropped. Returns -1 if out of memory.
int bn_refuser_add_engine_side (bn_refuser_t *self, zsock_t *sock);

//  Register the refuser's socket readers in loop. Returns -1 on failure.
int bn_refuser_attach (bn_refuser_t *self, zloop_t *loop);

//  Answer what is waiting on the client side; returns 0.
int bn_refuser_client_ready (bn_refuser_t *self);

//  A new JSON object of the refuser's counters; NULL if out of memory.
json_t *bn_refuser_stats (bn_refuser_t *self);

#endif

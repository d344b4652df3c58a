/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_heart: the heart monitor (doc/wire.md 4.2): pings engines on a PUB every
    period, collects their pongs on a ROUTER, and reports hearts that are
    new or have stopped.  */
#ifndef BN_HEART_H_INCLUDED
#define BN_HEART_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

typedef struct _bn_heart_t bn_heart_t;

//  Called with a heart id (an engine uuid).
typedef void (bn_heart_fn) (void *arg, const char *heart);

//  Delay of the first extra ping after bn_heart_expect, and between the
//  next ones while a heart is expected, in milliseconds.
#define BN_HEART_FAST_PING 50
#define BN_HEART_EXTRA_PING 100

//  Create a heart monitor on a ping PUB and a pong ROUTER (both borrowed;
//  the ROUTER is set to ZMQ_ROUTER_HANDOVER, so that a heart connecting
//  again under its name takes it over) beating every period_ms; a heart
//  that misses more than max_misses beats in a row has stopped. Returns
//  NULL if out of memory.
bn_heart_t *bn_heart_new (zsock_t *ping, zsock_t *pong, int period_ms,
                          int max_misses);

//  Destroy a heart monitor (not its sockets); NULL-safe.
void bn_heart_destroy (bn_heart_t **self_p);

//  on_new is called when an expected heart first answers (it is then
//  monitored); on_stopped when a monitored heart has stopped (it is then
//  forgotten).
void bn_heart_set_handlers (bn_heart_t *self, bn_heart_fn *on_new,
                            bn_heart_fn *on_stopped, void *arg);

//  on_closed (arg as set_handlers') is called when the connection a
//  monitored heart's pongs came in on closes: the process at its end died
//  or closed it, which is known at once instead of a heartbeat bound
//  later. The heart stays monitored until the handler forgets it. Set it
//  before bn_heart_attach, which then watches the pong socket's
//  connections (a socket monitor, and each new heart's ZMQ_SRCFD).
void bn_heart_set_closed_handler (bn_heart_t *self, bn_heart_fn *on_closed);

//  Take pongs of three frames [via, heart, ping] too, where via, the routing
//  id of a DEALER that the hearts of one process share, starts with prefix:
//  the heart's pong connection is then via's, which bn_heart_via tells, and
//  its closing reports every heart on it. Returns -1 if out of memory.
int bn_heart_set_shared (bn_heart_t *self, const char *prefix);

//  The routing id of the shared connection a monitored heart's pongs came
//  on first, or NULL (its own connection, or not monitored).
const char *bn_heart_via (bn_heart_t *self, const char *heart);

//  Set the handler of pongs to the current or the previous ping from a
//  heart neither monitored nor expected (arg as set_handlers'): one that
//  was declared stopped and beats again, say.
void bn_heart_set_unknown_handler (bn_heart_t *self, bn_heart_fn *on_unknown);

//  Start beating in loop and read pongs there. Returns -1 on failure.
int bn_heart_attach (bn_heart_t *self, zloop_t *loop);

//  Wait for heart's first pong. Until it answers, extra pings go out soon
//  (after BN_HEART_FAST_PING ms, then every BN_HEART_EXTRA_PING ms), shared
//  by every expected heart, so that a new engine does not wait a period.
//  Returns -1 if out of memory.
int bn_heart_expect (bn_heart_t *self, const char *heart);

//  Stop expecting or monitoring heart (no callback).
void bn_heart_forget (bn_heart_t *self, const char *heart);

//  One beat: count misses, report stopped hearts, send a new ping.
void bn_heart_beat (bn_heart_t *self);

//  Send the current ping again (answers count for the current beat).
void bn_heart_ping (bn_heart_t *self);

//  Read the pongs that are waiting; returns 0.
int bn_heart_pong_ready (bn_heart_t *self);

//  Beats a heart may miss in a row (bn_heart_new's max_misses).
int bn_heart_max_misses (bn_heart_t *self);

//  Number of monitored hearts.
size_t bn_heart_size (bn_heart_t *self);

//  A new JSON object of the monitor's counters; NULL if out of memory.
json_t *bn_heart_stats (bn_heart_t *self);

#endif

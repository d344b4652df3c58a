/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_monitor_link: a bn_monitor_t that a scheduler running in another
    thread of the controller (the broadcast tree's root node) may call: its
    calls travel over an inproc PUSH/PULL pair, sharing the messages'
    frames, and reach the target monitor on the controller's loop thread.
    A full link (the loop is behind by BN_MONITOR_LINK_HWM reports) drops
    reports and counts them rather than slow the scheduler.  */
#ifndef BN_MONITOR_LINK_H_INCLUDED
#define BN_MONITOR_LINK_H_INCLUDED

#include <czmq.h>
#include <jansson.h>

#include "bn_monitor.h"

typedef struct _bn_monitor_link_t bn_monitor_link_t;

#define BN_MONITOR_LINK_HWM 100000

//  Create a link delivering to target (borrowed). Returns NULL if out of
//  memory or the sockets cannot be made.
bn_monitor_link_t *bn_monitor_link_new (const bn_monitor_t *target);

//  A link whose reports go to another process: only its sender is used
//  (no target, never attached); it connects to endpoint, where that
//  process's link is bound with bn_monitor_link_bind. Reports wait in the
//  link until that side is there. Returns NULL on failure.
bn_monitor_link_t *bn_monitor_link_new_remote (const char *endpoint);

//  Also take reports from other processes' remote links at endpoint
//  (ipc:// in a folder only this user reaches: what arrives is trusted).
//  Returns -1 if it cannot be bound.
int bn_monitor_link_bind (bn_monitor_link_t *self, const char *endpoint);

//  Destroy a link (its sender must be stopped first); NULL-safe.
void bn_monitor_link_destroy (bn_monitor_link_t **self_p);

//  Deliver reports in loop, on the thread that runs it (destroy the link
//  before the loop). Returns -1 on failure.
int bn_monitor_link_attach (bn_monitor_link_t *self, zloop_t *loop);

//  The monitor for the other thread (one thread only: the link's sending
//  socket is not shared). Valid as long as the link is.
const bn_monitor_t *bn_monitor_link_sender (bn_monitor_link_t *self);

//  The monitor the link delivers to, for a caller on the loop's own thread
//  (NULL for a remote link). Valid as long as the link is.
const bn_monitor_t *bn_monitor_link_target (bn_monitor_link_t *self);

//  Deliver what has arrived; returns 0.
int bn_monitor_link_ready (bn_monitor_link_t *self);

//  A new JSON object {"delivered", "dropped"}; NULL if out of memory.
json_t *bn_monitor_link_stats (bn_monitor_link_t *self);

#endif

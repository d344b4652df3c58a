/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_monitor: what the schedulers tell the hub about the requests they
    pass (doc/wire.md 5.2), as direct calls inside the controller instead of
    7.1.0's monitor PUB/SUB bus. A scheduler holds one bn_monitor_t
    (borrowed); every callback may be NULL, and none may keep the message
    beyond the call except by bn_msg_dup (which shares the frames).
    Callbacks run on the controller's loop thread: a scheduler running in
    another thread must not call them directly.  */
#ifndef BN_MONITOR_H_INCLUDED
#define BN_MONITOR_H_INCLUDED

#include "bn_msg.h"

//  Queues a request can pass through, as TaskRecord.queue names them.
#define BN_MONITOR_QUEUE_MUX "mux"
#define BN_MONITOR_QUEUE_TASK "task"
#define BN_MONITOR_QUEUE_BROADCAST "broadcast"

typedef struct {
    //  A request entered queue from a client; engine_uuid is its target
    //  when the queue already knows it (mux), else NULL.
    void (*request) (void *arg, const char *queue, bn_msg_t *request,
                     const char *engine_uuid);
    //  A queued request was given to an engine (task scheduler).
    void (*assigned) (void *arg, const char *msg_id, const char *engine_uuid);
    //  A reply to a request of queue left for its client; engine_uuid is
    //  the engine that answered, or NULL for a reply the scheduler made
    //  itself (an error it generated).
    void (*reply) (void *arg, const char *queue, bn_msg_t *reply,
                   const char *engine_uuid);
    //  A message an engine published on iopub passed the iopub relay.
    void (*iopub) (void *arg, bn_msg_t *msg);
    void *arg;
} bn_monitor_t;

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_iothread: a client's sockets once connected, and the I/O thread
    that reads them while no user thread does. Whoever holds the sockets
    signs and sends what user threads hand over, and routes replies
    (bn_replies), iopub output and the hub's notifications to the
    tracker's items and the engine table. A user thread that sends, or
    waits (bn_tracker_wait_change), while nobody holds them uses them
    itself. Internal to libbanyan.  */
#ifndef BN_IOTHREAD_H_INCLUDED
#define BN_IOTHREAD_H_INCLUDED

#include "bn_engines.h"
#include "bn_msg.h"
#include "bn_session.h"
#include "bn_tracker.h"

#include <stdatomic.h>
#include <stdint.h>

//  The client's sockets to the controller that requests are sent on.
typedef enum {
    BN_SOCK_QUERY,     //  hub queries (registration port)
    BN_SOCK_MUX,       //  direct requests
    BN_SOCK_CONTROL,   //  control requests to engines
    BN_SOCK_TASK,      //  load-balanced requests
    BN_SOCK_BROADCAST, //  broadcast requests
    BN_SOCK_COUNT
} bn_sock_t;

typedef struct _bn_iothread_t bn_iothread_t;

//  What the thread works with. The sockets and the session are taken when
//  the thread starts (their fields then NULLed); the rest is borrowed and
//  must outlive it.
typedef struct {
    void *context;                //  the client's libzmq context
    void *sockets[BN_SOCK_COUNT]; //  DEALERs to the controller, or NULL
    void *iopub;                  //  SUB to the iopub relay
    void *notification;           //  SUB to the hub's notifications
    void *monitor;                //  PAIR with the query socket's events
    void *bcast_monitor;          //  PAIR with the broadcast socket's, or NULL
    bn_session_t *rx;             //  verifies what comes, signs what goes
    const char *session_id;       //  the client's header.session
    bn_tracker_t *tracker;        //  the requests waiting for replies
    bn_engines_t *engines;        //  the engine table (tracker's lock)
    atomic_size_t *dropped;       //  counts the messages dropped
} bn_iothread_args_t;

//  Start the thread, and have the tracker's waiters read the sockets
//  while nobody holds them (bn_tracker_set_waiter). NULL if out of memory
//  (args are then unchanged).
bn_iothread_t *bn_iothread_new (bn_iothread_args_t *args);

//  Stop the thread after it has sent every message handed to it before
//  (its sockets are then closed); later sends fail with BN_ECLOSED. Once
//  stopped it stays stopped.
void bn_iothread_stop (bn_iothread_t *self);

//  Stop the thread and destroy it; NULLs the reference; NULL-safe.
void bn_iothread_destroy (bn_iothread_t **self_p);

//  From any thread: sign and send count messages on sock (ownership
//  taken and the array NULLed; they are destroyed on failure too), at
//  once if nobody holds the sockets, else by their holder. Returns 0,
//  BN_ECLOSED or BN_ENOMEM.
int bn_iothread_send (bn_iothread_t *self, bn_sock_t sock, bn_msg_t **msgs,
                      size_t count);

//  The event of the next message on a socket monitor's PAIR (the first
//  frame's event number), 0 when none is waiting.
uint16_t bn_iothread_monitor_event (void *monitor);

#endif

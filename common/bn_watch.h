/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_watch: many sockets and file descriptors watched through one epoll
    set, which a zloop polls as a single item or which runs a loop of its
    own, so that a wake-up costs per event, not per watched socket:
    thousands of engines in one thread, or the dozen sockets of a thread
    that wakes for every message.  */
#ifndef BN_WATCH_H_INCLUDED
#define BN_WATCH_H_INCLUDED

#include <czmq.h>
#include <stddef.h>

typedef struct _bn_watch_t bn_watch_t;
typedef struct _bn_watch_item_t bn_watch_item_t;

//  Called when the item is ready: a file descriptor is readable, or a
//  socket has a message to receive. A socket handler may stop before the
//  socket is drained; it is called again soon.
typedef void (bn_watch_fn) (bn_watch_item_t *item, void *arg);

//  Create a watch set polled by loop, or with loop NULL one that the
//  caller runs with bn_watch_wait; NULL on failure (errno set).
bn_watch_t *bn_watch_new (zloop_t *loop);

//  Destroy the set and every item still in it; NULL-safe. The loop must
//  outlive it.
void bn_watch_destroy (bn_watch_t **self_p);

//  The loop the set was made for (NULL for a set of its own).
zloop_t *bn_watch_loop (bn_watch_t *self);

//  A set of its own: wait up to timeout ms (-1 for ever; not at all while
//  a socket is known to hold input) and call the items that are ready.
//  Returns 0 (also when interrupted by a signal), -1 on error (errno set).
int bn_watch_wait (bn_watch_t *self, int timeout);

//  Watch a file descriptor for reading; NULL on failure (errno set).
bn_watch_item_t *bn_watch_fd (bn_watch_t *self, int fd, bn_watch_fn *fn,
                              void *arg);

//  Watch a socket for incoming messages; NULL on failure.
bn_watch_item_t *bn_watch_sock (bn_watch_t *self, zsock_t *sock,
                                bn_watch_fn *fn, void *arg);

//  The same for a libzmq socket handle.
bn_watch_item_t *bn_watch_socket (bn_watch_t *self, void *handle,
                                  bn_watch_fn *fn, void *arg);

//  Watch a socket of a set in a loop with a zloop reader's handler, for
//  code written for zloop_reader: called with the loop and the socket
//  when it has input; a return of -1 ends the loop, as in zloop.
bn_watch_item_t *bn_watch_zreader (bn_watch_t *self, zsock_t *sock,
                                   zloop_reader_fn *fn, void *arg);

//  Watch a libzmq socket whose handler receives until a receive fails
//  with EAGAIN, or calls bn_watch_again when it stops before: the handler
//  is called whenever the socket's descriptor fires, with no look at the
//  socket's events before or after (each look costs system calls).
bn_watch_item_t *bn_watch_reader (bn_watch_t *self, void *handle,
                                  bn_watch_fn *fn, void *arg);

//  Stop watching (safe inside any handler, including the item's own; the
//  item is not called again). Cancel before closing the descriptor or
//  destroying the socket. NULL-safe; NULLs the caller's reference.
void bn_watch_cancel (bn_watch_t *self, bn_watch_item_t **item_p);

//  After sending on a watched socket: libzmq may have taken the socket's
//  wake-up while sending, so look for waiting input now. (Nothing to do
//  for a reader inside its own handler, which reads on until its socket
//  is empty.)
void bn_watch_check (bn_watch_t *self, bn_watch_item_t *item);

//  Call the item again soon, without waiting for its descriptor: a
//  reader's handler that stopped before its socket was empty.
void bn_watch_again (bn_watch_t *self, bn_watch_item_t *item);

//  Number of items watched.
size_t bn_watch_size (bn_watch_t *self);

#endif

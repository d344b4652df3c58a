/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_watch: many sockets and file descriptors watched through one epoll
    set that a zloop polls as a single item, so that thousands of engines
    in one thread cost per event, not per watched socket.  */
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

//  Create a watch set polled by loop; NULL on failure (errno set).
bn_watch_t *bn_watch_new (zloop_t *loop);

//  Destroy the set and every item still in it; NULL-safe. The loop must
//  outlive it.
void bn_watch_destroy (bn_watch_t **self_p);

//  The loop the set was made for.
zloop_t *bn_watch_loop (bn_watch_t *self);

//  Watch a file descriptor for reading; NULL on failure (errno set).
bn_watch_item_t *bn_watch_fd (bn_watch_t *self, int fd, bn_watch_fn *fn,
                              void *arg);

//  Watch a socket for incoming messages; NULL on failure.
bn_watch_item_t *bn_watch_sock (bn_watch_t *self, zsock_t *sock,
                                bn_watch_fn *fn, void *arg);

//  Stop watching (safe inside any handler, including the item's own; the
//  item is not called again). Cancel before closing the descriptor or
//  destroying the socket. NULL-safe; NULLs the caller's reference.
void bn_watch_cancel (bn_watch_t *self, bn_watch_item_t **item_p);

//  After sending on a watched socket: libzmq may have taken the socket's
//  wake-up while sending, so look for waiting input now.
void bn_watch_check (bn_watch_t *self, bn_watch_item_t *item);

//  Number of items watched.
size_t bn_watch_size (bn_watch_t *self);

#endif

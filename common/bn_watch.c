/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_watch: an epoll set of descriptors and libzmq sockets, one item of
    a zloop or a loop of its own (bn_watch_wait).

    zmq_poll costs time for every item on every call (about 28 ms for
    12,000 sockets here), and zloop rebuilds its poll set and stops
    dispatching whenever an item is added or removed; with thousands of
    engines in one thread both dominate. Here each socket's ZMQ_FD (the
    descriptor libzmq signals when the socket has work) sits in an epoll
    set, so a wake-up costs only for the items that are ready.

    A socket's ZMQ_FD says "look at me", not "a message is waiting": after
    it fires, ZMQ_EVENTS tells whether there is input, and libzmq clears
    the signal whenever the socket is used, also by a send. So a socket
    whose handler stopped early, or that was sent on, is put on a ready
    list and looked at again without waiting for its descriptor: in a
    zloop an eventfd in the set wakes the loop for that, on its own the
    next wait does not block.

    Asking ZMQ_EVENTS costs system calls too (libzmq looks at the socket's
    mailbox), as many as a receive that finds nothing; so a reader, whose
    handler receives until the socket has nothing left, is called when
    its descriptor fires without a look before or after.

    Items cancelled while a batch of events is being dispatched are only
    marked; they are freed after the batch.  */
#define _GNU_SOURCE
#include "bn_watch.h"
#include "bn_log.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define S_BATCH 256 //  events taken per epoll_wait

struct _bn_watch_item_t {
    void *handle; //  watched libzmq socket, or NULL
    int fd;       //  watched descriptor (ZMQ_FD for a socket)
    bn_watch_fn *fn;
    void *arg;
    zloop_reader_fn *reader; //  or a zloop reader's handler
    zsock_t *sock;           //  and its socket
    bool drains;             //  its handler reads until the socket is empty
    bool dead;               //  cancelled; free when not referenced
    bool queued;             //  on the ready list
    bn_watch_item_t *next;   //  ready list or graveyard link
};

struct _bn_watch_t {
    zloop_t *loop;               //  the loop polling the set, or NULL
    int epfd;                    //  the epoll set
    int wakefd;                  //  eventfd: the ready list is not empty
                                 //  (with a loop; else -1)
    zmq_pollitem_t item;         //  epfd, as registered with loop
    bn_watch_item_t *ready;      //  sockets to look at again
    bn_watch_item_t **ready_end; //  where the next ready item goes
    bn_watch_item_t *graveyard;  //  cancelled items waiting to be freed
    int dispatching;             //  inside s_event
    bn_watch_item_t *current;    //  the reader whose handler runs
    bool woken;                  //  wakefd was written
    bool stop;                   //  a zloop reader's handler returned -1
    size_t size;                 //  live items
};

//  Whether a libzmq socket has a message to receive.
static bool
s_readable (void *handle)
{
    int events = 0;
    size_t size = sizeof events;
    return zmq_getsockopt (handle, ZMQ_EVENTS, &events, &size) == 0 &&
           (events & ZMQ_POLLIN);
}

static void
s_wake (bn_watch_t *self)
{
    if (self->woken || self->wakefd < 0)
        return;
    uint64_t one = 1;
    if (write (self->wakefd, &one, sizeof one) == sizeof one)
        self->woken = true;
}

static void
s_queue (bn_watch_t *self, bn_watch_item_t *item)
{
    if (item->queued || item->dead)
        return;
    item->queued = true;
    item->next = NULL;
    *self->ready_end = item;
    self->ready_end = &item->next;
    //  inside a turn, the turn wakes the loop for what it leaves queued
    if (!self->dispatching)
        s_wake (self);
}

//  Call a ready item; a socket only if it has input, and queued again if
//  its handler left some.
static void
s_dispatch (bn_watch_t *self, bn_watch_item_t *item)
{
    if (item->dead)
        return;
    if (!item->handle || item->drains) {
        bn_watch_item_t *outer = self->current;
        self->current = item;
        item->fn (item, item->arg);
        self->current = outer;
        return;
    }
    if (!s_readable (item->handle))
        return;
    if (item->reader) {
        if (item->reader (self->loop, item->sock, item->arg) == -1)
            self->stop = true;
    } else
        item->fn (item, item->arg);
    if (!item->dead && s_readable (item->handle))
        s_queue (self, item);
}

//  Free the items cancelled during a batch.
static void
s_bury (bn_watch_t *self)
{
    while (self->graveyard) {
        bn_watch_item_t *item = self->graveyard;
        self->graveyard = item->next;
        free (item);
    }
}

//  Take the events of up to timeout ms and call what is ready.
static int
s_turn (bn_watch_t *self, int timeout)
{
    self->dispatching++;
    struct epoll_event events[S_BATCH];
    int count = epoll_wait (self->epfd, events, S_BATCH, timeout);
    int rc = count < 0 && errno != EINTR ? -1 : 0;
    for (int i = 0; i < count; i++) {
        bn_watch_item_t *item = (bn_watch_item_t *)events[i].data.ptr;
        if (item)
            s_dispatch (self, item);
        else {
            uint64_t value;
            if (read (self->wakefd, &value, sizeof value) < 0 &&
                errno != EAGAIN)
                bn_log_warn ("watch: eventfd: %s", strerror (errno));
            self->woken = false;
        }
    }
    //  One pass over the ready list; what is queued meanwhile waits for
    //  the next call, so one busy socket cannot hold the loop.
    bn_watch_item_t *ready = self->ready;
    self->ready = NULL;
    self->ready_end = &self->ready;
    while (ready) {
        bn_watch_item_t *item = ready;
        ready = item->next;
        item->queued = false;
        item->next = NULL;
        if (item->dead) {
            //  Cancelled while queued: the list was its last reference.
            item->next = self->graveyard;
            self->graveyard = item;
        } else
            s_dispatch (self, item);
    }
    if (self->ready)
        s_wake (self);
    self->dispatching--;
    if (!self->dispatching)
        s_bury (self);
    return rc;
}

static int
s_event (zloop_t *loop, zmq_pollitem_t *pollitem, void *arg)
{
    bn_watch_t *self = (bn_watch_t *)arg;
    s_turn (self, 0);
    return self->stop ? -1 : 0;
}

bn_watch_t *
bn_watch_new (zloop_t *loop)
{
    bn_watch_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->loop = loop;
    self->ready_end = &self->ready;
    self->epfd = epoll_create1 (EPOLL_CLOEXEC);
    self->wakefd = loop ? eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
    struct epoll_event event = {EPOLLIN, {.ptr = NULL}};
    if (self->epfd < 0 || (loop && self->wakefd < 0) ||
        (loop && epoll_ctl (self->epfd, EPOLL_CTL_ADD, self->wakefd, &event))) {
        int saved = errno;
        if (self->epfd >= 0)
            close (self->epfd);
        if (self->wakefd >= 0)
            close (self->wakefd);
        free (self);
        errno = saved;
        return NULL;
    }
    if (loop) {
        self->item = (zmq_pollitem_t){NULL, self->epfd, ZMQ_POLLIN, 0};
        zloop_poller (loop, &self->item, s_event, self);
        zloop_poller_set_tolerant (loop, &self->item);
    }
    return self;
}

void
bn_watch_destroy (bn_watch_t **self_p)
{
    assert (self_p);
    bn_watch_t *self = *self_p;
    if (!self)
        return;
    assert (!self->dispatching);
    if (self->loop)
        zloop_poller_end (self->loop, &self->item);
    close (self->epfd);
    if (self->wakefd >= 0)
        close (self->wakefd);
    //  Owners cancel their items first; cancelled ones may still wait on
    //  the ready list.
    while (self->ready) {
        bn_watch_item_t *item = self->ready;
        self->ready = item->next;
        if (item->dead)
            free (item);
    }
    s_bury (self);
    free (self);
    *self_p = NULL;
}

zloop_t *
bn_watch_loop (bn_watch_t *self)
{
    assert (self);
    return self->loop;
}

int
bn_watch_wait (bn_watch_t *self, int timeout)
{
    assert (self);
    assert (!self->loop);
    return s_turn (self, self->ready ? 0 : timeout);
}

static bn_watch_item_t *
s_add (bn_watch_t *self, void *handle, int fd, bn_watch_fn *fn, void *arg)
{
    bn_watch_item_t *item = calloc (1, sizeof *item);
    if (!item)
        return NULL;
    item->handle = handle;
    item->fd = fd;
    item->fn = fn;
    item->arg = arg;
    struct epoll_event event = {EPOLLIN, {.ptr = item}};
    if (epoll_ctl (self->epfd, EPOLL_CTL_ADD, fd, &event)) {
        int saved = errno;
        free (item);
        errno = saved;
        return NULL;
    }
    self->size++;
    //  A socket may hold input already: its signal may have been taken.
    if (handle)
        s_queue (self, item);
    return item;
}

bn_watch_item_t *
bn_watch_fd (bn_watch_t *self, int fd, bn_watch_fn *fn, void *arg)
{
    assert (self);
    assert (fn);
    return s_add (self, NULL, fd, fn, arg);
}

bn_watch_item_t *
bn_watch_sock (bn_watch_t *self, zsock_t *sock, bn_watch_fn *fn, void *arg)
{
    assert (sock);
    return bn_watch_socket (self, zsock_resolve (sock), fn, arg);
}

bn_watch_item_t *
bn_watch_socket (bn_watch_t *self, void *handle, bn_watch_fn *fn, void *arg)
{
    assert (self);
    assert (handle);
    assert (fn);
    int fd;
    size_t size = sizeof fd;
    if (zmq_getsockopt (handle, ZMQ_FD, &fd, &size) != 0)
        return NULL;
    return s_add (self, handle, fd, fn, arg);
}

//  bn_watch_fn of an item that a zloop reader's handler serves instead.
static void
s_by_reader (bn_watch_item_t *item, void *arg)
{
}

bn_watch_item_t *
bn_watch_zreader (bn_watch_t *self, zsock_t *sock, zloop_reader_fn *fn,
                  void *arg)
{
    assert (self);
    assert (self->loop);
    assert (sock);
    assert (fn);
    bn_watch_item_t *item =
        bn_watch_socket (self, zsock_resolve (sock), s_by_reader, arg);
    if (item) {
        item->reader = fn;
        item->sock = sock;
    }
    return item;
}

bn_watch_item_t *
bn_watch_reader (bn_watch_t *self, void *handle, bn_watch_fn *fn, void *arg)
{
    bn_watch_item_t *item = bn_watch_socket (self, handle, fn, arg);
    if (item)
        item->drains = true;
    return item;
}

void
bn_watch_cancel (bn_watch_t *self, bn_watch_item_t **item_p)
{
    assert (self);
    assert (item_p);
    bn_watch_item_t *item = *item_p;
    if (!item)
        return;
    *item_p = NULL;
    assert (!item->dead);
    epoll_ctl (self->epfd, EPOLL_CTL_DEL, item->fd, NULL);
    item->dead = true;
    self->size--;
    //  A queued item stays on the ready list, which frees it; one that an
    //  event batch may still name waits in the graveyard.
    if (item->queued)
        return;
    if (self->dispatching) {
        item->next = self->graveyard;
        self->graveyard = item;
    } else
        free (item);
}

void
bn_watch_check (bn_watch_t *self, bn_watch_item_t *item)
{
    assert (self);
    //  a reader's own handler reads on until its socket is empty
    if (item && item->drains && item == self->current)
        return;
    if (item && item->handle && !item->dead && s_readable (item->handle))
        s_queue (self, item);
}

void
bn_watch_again (bn_watch_t *self, bn_watch_item_t *item)
{
    assert (self);
    if (item && !item->dead)
        s_queue (self, item);
}

size_t
bn_watch_size (bn_watch_t *self)
{
    assert (self);
    return self->size;
}

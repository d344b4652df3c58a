/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_nodelink: multi-frame messages as netstring packets on a
    SOCK_SEQPACKET socket pair (one packet, one message; packets keep their
    boundaries, so a reader never reassembles).  */
#include "bn_nodelink.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct _bn_nodelink_t {
    int fd;           //  Our end of the pair
    zlist_t *queue;   //  zchunk_t packets not yet written
    size_t malformed; //  Packets dropped as not netstrings
    bool broken;      //  A write failed for good
};

int
bn_nodelink_pair (int *ours, int *theirs)
{
    int fds[2];
    if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
        return -1;
    *ours = fds[0];
    *theirs = fds[1];
    return 0;
}

bn_nodelink_t *
bn_nodelink_new (int fd)
{
    assert (fd >= 0);
    bn_nodelink_t *self = calloc (1, sizeof *self);
    if (self)
        self->queue = zlist_new ();
    if (!self || !self->queue) {
        free (self);
        close (fd);
        return NULL;
    }
    self->fd = fd;
    int flags = fcntl (fd, F_GETFL);
    if (flags >= 0)
        fcntl (fd, F_SETFL, flags | O_NONBLOCK);
    return self;
}

void
bn_nodelink_destroy (bn_nodelink_t **self_p)
{
    assert (self_p);
    bn_nodelink_t *self = *self_p;
    if (!self)
        return;
    zchunk_t *chunk;
    while ((chunk = (zchunk_t *)zlist_pop (self->queue)))
        zchunk_destroy (&chunk);
    zlist_destroy (&self->queue);
    close (self->fd);
    free (self);
    *self_p = NULL;
}

int
bn_nodelink_fd (bn_nodelink_t *self)
{
    assert (self);
    return self->fd;
}

//  Write one packet; 1 if written, 0 if the socket is full, -1 if broken.
static int
s_write (bn_nodelink_t *self, zchunk_t *chunk)
{
    ssize_t rc;
    do
        rc = send (self->fd, zchunk_data (chunk), zchunk_size (chunk),
                   MSG_NOSIGNAL | MSG_DONTWAIT);
    while (rc < 0 && errno == EINTR);
    if (rc >= 0)
        return 1;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    self->broken = true;
    return -1;
}

int
bn_nodelink_flush (bn_nodelink_t *self)
{
    assert (self);
    zchunk_t *chunk;
    while ((chunk = (zchunk_t *)zlist_first (self->queue))) {
        int rc = s_write (self, chunk);
        if (rc <= 0)
            return rc;
        zlist_pop (self->queue);
        zchunk_destroy (&chunk);
    }
    return self->broken ? -1 : 0;
}

int
bn_nodelink_send (bn_nodelink_t *self, zmsg_t **msg_p)
{
    assert (self);
    assert (msg_p);
    zmsg_t *msg = *msg_p;
    *msg_p = NULL;
    if (!msg || zmsg_size (msg) == 0) {
        //  an empty packet would read as the end of the link
        zmsg_destroy (&msg);
        errno = EINVAL;
        return -1;
    }
    size_t size = 0;
    for (zframe_t *frame = zmsg_first (msg); frame; frame = zmsg_next (msg))
        size += zframe_size (frame) + 12;
    zchunk_t *chunk =
        size <= BN_NODELINK_MAX_PACKET ? zchunk_new (NULL, size) : NULL;
    for (zframe_t *frame = zmsg_first (msg); chunk && frame;
         frame = zmsg_next (msg)) {
        char prefix[16];
        int len = snprintf (prefix, sizeof prefix, "%zu:", zframe_size (frame));
        zchunk_extend (chunk, prefix, (size_t)len);
        zchunk_extend (chunk, zframe_data (frame), zframe_size (frame));
        zchunk_extend (chunk, ",", 1);
    }
    zmsg_destroy (&msg);
    if (!chunk) {
        errno = EMSGSIZE;
        return -1;
    }
    if (self->broken || zlist_size (self->queue) >= BN_NODELINK_MAX_QUEUED) {
        zchunk_destroy (&chunk);
        errno = self->broken ? EPIPE : ENOBUFS;
        return -1;
    }
    int rc = zlist_size (self->queue) ? 0 : s_write (self, chunk);
    if (rc == 1) {
        zchunk_destroy (&chunk);
        return 0;
    }
    if (rc < 0) {
        zchunk_destroy (&chunk);
        return -1;
    }
    zlist_append (self->queue, chunk);
    return 0;
}

int
bn_nodelink_sendx (bn_nodelink_t *self, const char *frame, ...)
{
    zmsg_t *msg = zmsg_new ();
    va_list args;
    va_start (args, frame);
    while (msg && frame) {
        zmsg_addstr (msg, frame);
        frame = va_arg (args, const char *);
    }
    va_end (args);
    return bn_nodelink_send (self, &msg);
}

bool
bn_nodelink_pending (bn_nodelink_t *self)
{
    assert (self);
    return zlist_size (self->queue) > 0;
}

//  Parse a packet of netstrings into a message; NULL if it is not one.
static zmsg_t *
s_parse (const char *data, size_t size)
{
    zmsg_t *msg = zmsg_new ();
    size_t at = 0;
    while (msg && at < size) {
        size_t len = 0, digits = 0;
        while (at < size && data[at] >= '0' && data[at] <= '9' && digits < 8) {
            len = len * 10 + (size_t)(data[at++] - '0');
            digits++;
        }
        if (digits == 0 || at >= size || data[at] != ':' ||
            size - at - 1 < len + 1 || data[at + 1 + len] != ',') {
            zmsg_destroy (&msg);
            break;
        }
        zmsg_addmem (msg, data + at + 1, len);
        at += len + 2;
    }
    if (msg && zmsg_size (msg) == 0)
        zmsg_destroy (&msg);
    return msg;
}

zmsg_t *
bn_nodelink_recv (bn_nodelink_t *self, int timeout, bool *eof)
{
    assert (self);
    assert (eof);
    *eof = false;
    if (timeout != 0) {
        struct pollfd item = {.fd = self->fd, .events = POLLIN};
        int64_t end = zclock_mono () + timeout;
        while (true) {
            int wait = timeout < 0 ? -1 : (int)(end - zclock_mono ());
            if (timeout >= 0 && wait < 0)
                wait = 0;
            int rc = poll (&item, 1, wait);
            if (rc > 0)
                break;
            if (rc == 0 || errno != EINTR)
                return NULL;
        }
    }
    static __thread char buffer[BN_NODELINK_MAX_PACKET];
    ssize_t size;
    do
        size = recv (self->fd, buffer, sizeof buffer, MSG_DONTWAIT | MSG_TRUNC);
    while (size < 0 && errno == EINTR);
    if (size == 0 || (size < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        *eof = true;
        return NULL;
    }
    if (size < 0)
        return NULL;
    zmsg_t *msg =
        (size_t)size <= sizeof buffer ? s_parse (buffer, (size_t)size) : NULL;
    if (!msg)
        self->malformed++;
    return msg;
}

size_t
bn_nodelink_malformed (bn_nodelink_t *self)
{
    assert (self);
    return self->malformed;
}

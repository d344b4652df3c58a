/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_monitor_link: monitor calls from another thread, as multipart
    messages [kind+queue, engine or msg_id, header, parent, metadata,
    content, buffers...] on an inproc pair. The four JSON parts are copied
    (small); buffers are sent with zmq_msg_copy (shared).  */
#include "bn_monitor_link.h"

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

#include "bn_log.h"
#include "bn_watch.h"

//  Kinds of report (first byte of the first frame).
#define S_REQUEST 'R'
#define S_ASSIGNED 'A'
#define S_REPLY 'P'
#define S_IOPUB 'I'

struct _bn_monitor_link_t {
    zsock_t *pull; //  Read on the loop's thread
    zsock_t *push; //  Written by the sending thread
    void *pull_handle;
    void *push_handle;
    bn_watch_t *sockets; //  pull, in the loop
    bn_watch_item_t *pull_item;
    const bn_monitor_t *target; //  borrowed
    bn_monitor_t sender;
    atomic_uint_fast64_t dropped; //  Reports the full link refused
    uint64_t delivered;           //  Reports given to the target
};

//  Send one frame of bytes; 0 or -1.
static int
s_send_bytes (void *socket, const void *data, size_t size, int flags)
{
    zmq_msg_t frame;
    if (zmq_msg_init_size (&frame, size) != 0)
        return -1;
    if (size)
        memcpy (zmq_msg_data (&frame), data, size);
    if (zmq_msg_send (&frame, socket, flags) < 0) {
        zmq_msg_close (&frame);
        return -1;
    }
    return 0;
}

//  Send a report; a full link drops it (counted).
static void
s_send (bn_monitor_link_t *self, char kind, const char *queue, const char *text,
        bn_msg_t *msg)
{
    char head[64];
    size_t len = strlen (queue ? queue : "");
    if (len > sizeof head - 2)
        len = sizeof head - 2;
    head[0] = kind;
    memcpy (head + 1, queue ? queue : "", len);
    //  the first frame decides: once it is queued, the rest of a
    //  multipart message always is
    if (s_send_bytes (self->push_handle, head, len + 1,
                      ZMQ_DONTWAIT | ZMQ_SNDMORE) != 0) {
        atomic_fetch_add (&self->dropped, 1);
        return;
    }
    size_t nbuffers = msg ? bn_msg_nbuffers (msg) : 0;
    s_send_bytes (self->push_handle, text ? text : "", text ? strlen (text) : 0,
                  msg ? ZMQ_SNDMORE : 0);
    for (int part = 0; msg && part < 4; part++) {
        size_t size;
        const void *data = bn_msg_part_data (msg, (bn_part_t)part, &size);
        s_send_bytes (self->push_handle, data, size,
                      part < 3 || nbuffers ? ZMQ_SNDMORE : 0);
    }
    for (size_t i = 0; i < nbuffers; i++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        zmq_msg_copy (&frame, bn_msg_buffer (msg, i));
        if (zmq_msg_send (&frame, self->push_handle,
                          i + 1 < nbuffers ? ZMQ_SNDMORE : 0) < 0)
            zmq_msg_close (&frame);
    }
}

static void
s_on_request (void *arg, const char *queue, bn_msg_t *request,
              const char *engine_uuid)
{
    s_send ((bn_monitor_link_t *)arg, S_REQUEST, queue, engine_uuid, request);
}

static void
s_on_assigned (void *arg, const char *msg_id, const char *engine_uuid)
{
    bn_monitor_link_t *self = (bn_monitor_link_t *)arg;
    //  msg_id travels as the queue field's neighbour: "<msg_id>\0<uuid>"
    size_t a = strlen (msg_id), b = strlen (engine_uuid);
    char *both = malloc (a + b + 2);
    if (!both) {
        atomic_fetch_add (&self->dropped, 1);
        return;
    }
    memcpy (both, msg_id, a);
    both[a] = '\n';
    memcpy (both + a + 1, engine_uuid, b + 1);
    s_send (self, S_ASSIGNED, "", both, NULL);
    free (both);
}

static void
s_on_reply (void *arg, const char *queue, bn_msg_t *reply,
            const char *engine_uuid)
{
    s_send ((bn_monitor_link_t *)arg, S_REPLY, queue, engine_uuid, reply);
}

static void
s_on_iopub (void *arg, bn_msg_t *msg)
{
    s_send ((bn_monitor_link_t *)arg, S_IOPUB, "", NULL, msg);
}

bn_monitor_link_t *
bn_monitor_link_new (const bn_monitor_t *target)
{
    assert (target);
    bn_monitor_link_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->target = target;
    char endpoint[64];
    snprintf (endpoint, sizeof endpoint, "inproc://bn-monitor-link-%p",
              (void *)self);
    self->pull = zsock_new (ZMQ_PULL);
    self->push = zsock_new (ZMQ_PUSH);
    if (!self->pull || !self->push) {
        bn_monitor_link_destroy (&self);
        return NULL;
    }
    zsock_set_rcvhwm (self->pull, BN_MONITOR_LINK_HWM);
    zsock_set_sndhwm (self->push, BN_MONITOR_LINK_HWM);
    zsock_set_linger (self->push, 0);
    if (zsock_bind (self->pull, "%s", endpoint) != 0 ||
        zsock_connect (self->push, "%s", endpoint) != 0) {
        bn_monitor_link_destroy (&self);
        return NULL;
    }
    self->pull_handle = zsock_resolve (self->pull);
    self->push_handle = zsock_resolve (self->push);
    self->sender.request = s_on_request;
    self->sender.assigned = s_on_assigned;
    self->sender.reply = s_on_reply;
    self->sender.iopub = s_on_iopub;
    self->sender.arg = self;
    return self;
}

bn_monitor_link_t *
bn_monitor_link_new_remote (const char *endpoint)
{
    assert (endpoint);
    bn_monitor_link_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->push = zsock_new (ZMQ_PUSH);
    if (!self->push) {
        bn_monitor_link_destroy (&self);
        return NULL;
    }
    zsock_set_sndhwm (self->push, BN_MONITOR_LINK_HWM);
    //  what is queued when the process ends is lost with it anyway
    zsock_set_linger (self->push, 0);
    if (zsock_connect (self->push, "%s", endpoint) != 0) {
        bn_monitor_link_destroy (&self);
        return NULL;
    }
    self->push_handle = zsock_resolve (self->push);
    self->sender.request = s_on_request;
    self->sender.assigned = s_on_assigned;
    self->sender.reply = s_on_reply;
    self->sender.iopub = s_on_iopub;
    self->sender.arg = self;
    return self;
}

int
bn_monitor_link_bind (bn_monitor_link_t *self, const char *endpoint)
{
    assert (self);
    assert (self->pull);
    return zsock_bind (self->pull, "%s", endpoint) < 0 ? -1 : 0;
}

void
bn_monitor_link_destroy (bn_monitor_link_t **self_p)
{
    assert (self_p);
    bn_monitor_link_t *self = *self_p;
    if (!self)
        return;
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->pull_item);
        bn_watch_destroy (&self->sockets);
    }
    zsock_destroy (&self->push);
    zsock_destroy (&self->pull);
    free (self);
    *self_p = NULL;
}

const bn_monitor_t *
bn_monitor_link_target (bn_monitor_link_t *self)
{
    assert (self);
    return self->target;
}

const bn_monitor_t *
bn_monitor_link_sender (bn_monitor_link_t *self)
{
    assert (self);
    return &self->sender;
}

//  Read the rest of a multipart message into frames (up to max); returns
//  the count read.
static size_t
s_recv_rest (void *socket, zmq_msg_t *frames, size_t max, bool more)
{
    size_t n = 0;
    while (more) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, socket, 0) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        more = zmq_msg_more (&frame);
        if (n < max)
            frames[n++] = frame;
        else
            zmq_msg_close (&frame);
    }
    return n;
}

#define S_MAX_FRAMES 4096

//  Deliver one report whose first frame is head.
static void
s_deliver (bn_monitor_link_t *self, zmq_msg_t *head)
{
    zmq_msg_t *frames = malloc (S_MAX_FRAMES * sizeof (zmq_msg_t));
    size_t n = frames ? s_recv_rest (self->pull_handle, frames, S_MAX_FRAMES,
                                     zmq_msg_more (head))
                      : 0;
    char queue[64] = "", text[512] = "";
    size_t hsize = zmq_msg_size (head);
    const char *hdata = zmq_msg_data (head);
    char kind = hsize ? hdata[0] : 0;
    if (hsize > 1 && hsize - 1 < sizeof queue) {
        memcpy (queue, hdata + 1, hsize - 1);
        queue[hsize - 1] = 0;
    }
    if (n >= 1 && zmq_msg_size (&frames[0]) < sizeof text) {
        memcpy (text, zmq_msg_data (&frames[0]), zmq_msg_size (&frames[0]));
        text[zmq_msg_size (&frames[0])] = 0;
    }
    bn_msg_t *msg = NULL;
    if (n >= 5) {
        const void *data[4];
        size_t sizes[4];
        for (int part = 0; part < 4; part++) {
            data[part] = zmq_msg_data (&frames[1 + part]);
            sizes[part] = zmq_msg_size (&frames[1 + part]);
        }
        msg = bn_msg_new_parts (data, sizes);
        for (size_t i = 5; msg && i < n; i++)
            bn_msg_add_buffer_msg (msg, &frames[i]);
    }
    const bn_monitor_t *t = self->target;
    if (kind == S_REQUEST && msg && t->request)
        t->request (t->arg, queue, msg, *text ? text : NULL);
    else if (kind == S_REPLY && msg && t->reply)
        t->reply (t->arg, queue, msg, *text ? text : NULL);
    else if (kind == S_IOPUB && msg && t->iopub)
        t->iopub (t->arg, msg);
    else if (kind == S_ASSIGNED && t->assigned) {
        char *newline = strchr (text, '\n');
        if (newline) {
            *newline = 0;
            t->assigned (t->arg, text, newline + 1);
        }
    }
    self->delivered++;
    bn_msg_destroy (&msg);
    for (size_t i = 0; i < n; i++)
        zmq_msg_close (&frames[i]);
    free (frames);
}

int
bn_monitor_link_ready (bn_monitor_link_t *self)
{
    assert (self);
    for (int i = 0; i < 1024; i++) {
        zmq_msg_t head;
        zmq_msg_init (&head);
        if (zmq_msg_recv (&head, self->pull_handle, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&head);
            break;
        }
        s_deliver (self, &head);
        zmq_msg_close (&head);
    }
    return 0;
}

static int
s_on_pull (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_monitor_link_ready ((bn_monitor_link_t *)arg);
}

int
bn_monitor_link_attach (bn_monitor_link_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    //  a descriptor of its own in the loop (bn_watch): the link is only
    //  read here
    self->sockets = bn_watch_new (loop);
    return self->sockets && (self->pull_item = bn_watch_zreader (
                                 self->sockets, self->pull, s_on_pull, self))
               ? 0
               : -1;
}

json_t *
bn_monitor_link_stats (bn_monitor_link_t *self)
{
    assert (self);
    return json_pack ("{s:I, s:I}", "delivered", (json_int_t)self->delivered,
                      "dropped", (json_int_t)atomic_load (&self->dropped));
}

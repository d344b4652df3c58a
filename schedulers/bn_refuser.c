/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_refuser: NotImplementedError answers on the task and broadcast ports.

    The replies are shaped so that the stock client resolves the right
    futures: a task failure is always an apply_reply (doc/wire.md 8.3, point 6);
    a broadcast failure is one reply per target whose parent msg_id is
    "<orig>_<uuid>", or, when coalescing, one reply found through
    metadata.original_msg_id with the broadcast_targets pairs.  */
#include "bn_refuser.h"

#include <assert.h>
#include <string.h>

#include "bn_error.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_relay.h"
#include "bn_wire.h"

#define S_BATCH 1024 //  messages read per wake-up before polling again

typedef struct {
    uint64_t received;    //  Requests read on the client side
    uint64_t answered;    //  Error replies sent
    bn_msg_drops_t drops; //  Dropped: framing, signature, replay, header
    uint64_t engine_side; //  Messages dropped on engine-facing sockets
    uint64_t send_failed; //  Replies that could not be sent
} s_stats_t;

struct _bn_refuser_t {
    bn_refuser_kind_t kind;
    zsock_t *client_side;  //  Client ROUTER (borrowed)
    zlistx_t *engine_side; //  Engine-facing sockets (borrowed)
    bn_session_t *session;
    s_stats_t stats;
};

//  The port's kind, for log lines.
static const char *
s_kind (bn_refuser_t *self)
{
    return self->kind == BN_REFUSER_TASK ? "task" : "broadcast";
}

bn_refuser_t *
bn_refuser_new (bn_refuser_kind_t kind, zsock_t *client_side,
                bn_session_t *session)
{
    assert (client_side);
    assert (session);
    bn_refuser_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->kind = kind;
    self->client_side = client_side;
    self->session = session;
    self->engine_side = zlistx_new ();
    if (!self->engine_side)
        bn_refuser_destroy (&self);
    return self;
}

void
bn_refuser_destroy (bn_refuser_t **self_p)
{
    assert (self_p);
    bn_refuser_t *self = *self_p;
    if (!self)
        return;
    zlistx_destroy (&self->engine_side);
    free (self);
    *self_p = NULL;
}

int
bn_refuser_add_engine_side (bn_refuser_t *self, zsock_t *sock)
{
    assert (self);
    assert (sock);
    return zlistx_add_end (self->engine_side, sock) ? 0 : -1;
}

static void
s_send (bn_refuser_t *self, bn_msg_t **reply_p)
{
    if (!*reply_p) {
        self->stats.send_failed++;
        return;
    }
    if (bn_msg_send_flags (reply_p, zsock_resolve (self->client_side),
                           self->session, ZMQ_DONTWAIT) == 0)
        self->stats.answered++;
    else
        self->stats.send_failed++;
}

static json_t *
s_content (bn_refuser_t *self, const char *msg_id)
{
    if (self->kind == BN_REFUSER_TASK)
        return bn_wire_errorf ("NotImplementedError", NULL,
                               "banyan-controller has no task (load-balanced) "
                               "scheduler yet; request '%s' was not run",
                               msg_id);
    return bn_wire_errorf ("NotImplementedError", NULL,
                           "banyan-controller has no broadcast scheduler yet; "
                           "request '%s' was not run",
                           msg_id);
}

//  The uuid of one broadcast target, [uuid, eid] or a bare uuid; NULL if
//  neither.
static const char *
s_target_uuid (json_t *target)
{
    if (json_is_array (target))
        target = json_array_get (target, 0);
    return json_string_value (target);
}

//  True if targets is a non-empty list of valid targets.
static bool
s_targets_ok (json_t *targets)
{
    if (!json_is_array (targets) || json_array_size (targets) == 0)
        return false;
    size_t index;
    json_t *target;
    json_array_foreach (targets, index, target)
    {
        if (!s_target_uuid (target))
            return false;
    }
    return true;
}

//  Mark reply metadata as part of broadcast original.
static void
s_broadcast_metadata (bn_msg_t *reply, const char *original, bool coalescing)
{
    bn_wire_mark_broadcast (bn_msg_metadata (reply), original, coalescing);
    bn_msg_touch (reply, BN_PART_METADATA);
}

static void
s_refuse_broadcast (bn_refuser_t *self, bn_msg_t *request)
{
    json_t *metadata = bn_msg_metadata (request);
    json_t *targets = metadata ? json_object_get (metadata, "targets") : NULL;
    json_t *value =
        metadata ? json_object_get (metadata, BN_MD_ORIGINAL_MSG_ID) : NULL;
    const char *original = json_is_string (value) ? json_string_value (value)
                                                  : bn_msg_id (request);
    bool coalescing =
        metadata &&
        json_is_true (json_object_get (metadata, BN_MD_IS_COALESCING));
    json_t *header = bn_msg_header (request);

    if (!s_targets_ok (targets) || coalescing) {
        //  one reply; the client finds a coalesced one by original_msg_id
        bn_msg_t *reply = bn_relay_error_reply (
            self->session, request, NULL, NULL, s_content (self, original));
        if (reply) {
            s_broadcast_metadata (reply, original, coalescing);
            if (coalescing && s_targets_ok (targets)) {
                json_object_set_new (bn_msg_metadata (reply), BN_BCAST_TARGETS,
                                     json_deep_copy (targets));
                bn_msg_touch (reply, BN_PART_METADATA);
            }
        }
        s_send (self, &reply);
        return;
    }
    size_t index;
    json_t *target;
    json_array_foreach (targets, index, target)
    {
        const char *uuid = s_target_uuid (target);
        char msg_id[1024];
        snprintf (msg_id, sizeof msg_id, "%s_%s", original, uuid);
        json_t *parent = json_deep_copy (header);
        bn_msg_t *reply = bn_relay_error_reply (
            self->session, request, NULL, uuid, s_content (self, original));
        if (!parent || !reply) {
            json_decref (parent);
            bn_msg_destroy (&reply);
            s_send (self, &reply);
            continue;
        }
        json_object_set_new (parent, "msg_id", json_string (msg_id));
        bn_msg_set_part (reply, BN_PART_PARENT, parent);
        s_broadcast_metadata (reply, original, false);
        s_send (self, &reply);
    }
}

static void
s_refuse (bn_refuser_t *self, bn_msg_t *request)
{
    bn_log_info ("%s port: refused %s '%s'", s_kind (self),
                 bn_msg_type (request), bn_msg_id (request));
    if (self->kind == BN_REFUSER_BROADCAST) {
        s_refuse_broadcast (self, request);
        return;
    }
    bn_msg_t *reply =
        bn_relay_error_reply (self->session, request, BN_MSG_APPLY_REPLY, NULL,
                              s_content (self, bn_msg_id (request)));
    s_send (self, &reply);
}

int
bn_refuser_client_ready (bn_refuser_t *self)
{
    assert (self);
    void *handle = zsock_resolve (self->client_side);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.received++;
        if (bn_msg_check (msg, self->session,
                          BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "%s port", s_kind (self)) == 0)
            s_refuse (self, msg);
        bn_msg_destroy (&msg);
    }
    return 0;
}

static int
s_on_client (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_refuser_client_ready ((bn_refuser_t *)arg);
}

static int
s_on_engine (zloop_t *loop, zsock_t *sock, void *arg)
{
    bn_refuser_t *self = (bn_refuser_t *)arg;
    void *handle = zsock_resolve (sock);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        if (bn_msg_check (msg, self->session,
                          BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "%s port", s_kind (self)) == 0) {
            self->stats.engine_side++;
            bn_log_debug ("dropped %s from an engine: no scheduler",
                          bn_msg_type (msg));
        }
        bn_msg_destroy (&msg);
    }
    return 0;
}

int
bn_refuser_attach (bn_refuser_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    if (zloop_reader (loop, self->client_side, s_on_client, self) != 0)
        return -1;
    zsock_t *sock = zlistx_first (self->engine_side);
    while (sock) {
        if (zloop_reader (loop, sock, s_on_engine, self) != 0)
            return -1;
        sock = zlistx_next (self->engine_side);
    }
    return 0;
}

json_t *
bn_refuser_stats (bn_refuser_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "received",
        (json_int_t)s->received, "answered", (json_int_t)s->answered,
        "bad_frame", (json_int_t)s->drops.bad_frame, "bad_signature",
        (json_int_t)s->drops.bad_signature, "replayed",
        (json_int_t)s->drops.replayed, "bad_header",
        (json_int_t)s->drops.bad_header, "engine_side",
        (json_int_t)s->engine_side, "send_failed", (json_int_t)s->send_failed);
}

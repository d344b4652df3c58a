/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_relay: mux/control swap relays and the iopub forwarder.

    A request is forwarded as the frames it arrived in (bn_msg moves the
    zmq_msg_t frames, so buffers are never copied and the signature is
    kept). What the relay remembers of a pending request is a stub sharing
    its idents and JSON frames, without buffers, so that it can answer
    EngineError if the engine goes away.

    The hub registers an engine once its heart answers, which can be
    before its shell's connection to this relay has finished its
    handshake (with a thousand engines registering at once it often is).
    Within the connect grace after an engine was added, a request it
    cannot take yet waits in a bn_holdq, in order, instead of failing at
    once; only past the grace is it answered with EngineError.  */
#include "bn_relay.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "bn_error.h"
#include "bn_holdq.h"
#include "bn_hosts.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_watch.h"
#include "bn_wire.h"

#define S_BATCH 1024   //  messages read per wake-up before polling again
#define S_KEY_MAX 256  //  longest engine uuid accepted as a key
#define S_TYPE_MAX 128 //  longest msg_type we derive a reply type from

typedef struct {
    char *uuid;        //  Engine uuid (its routing id)
    int eid;           //  Engine id, for error texts
    bool closed;       //  Unregistered: no new requests
    zlistx_t *pending; //  s_pending_t *, oldest first
    size_t completed;  //  Requests answered since added
    char **done;       //  Ring of the last completed msg_ids
    size_t done_next;  //  Next slot to overwrite in done
} s_engine_t;

typedef struct {
    char *msg_id;       //  Request msg_id (key in pending)
    s_engine_t *engine; //  Engine it was sent to
    bn_msg_t *stub;     //  Request without buffers, idents as received
    void *handle;       //  Position in engine->pending
} s_pending_t;

typedef struct {
    uint64_t received;       //  Messages read, both sides
    uint64_t forwarded;      //  Messages sent on
    bn_msg_drops_t drops;    //  Dropped: framing, signature, replay, header
    uint64_t unknown_engine; //  Requests for engines not registered
    uint64_t not_connected;  //  Engine registered but not connected here
    uint64_t held;           //  Requests held until the engine connected
    uint64_t stranded;       //  Requests failed because the engine left
    bn_msg_undelivered_t undelivered; //  Replies clients did not get
    uint64_t duplicate_id;            //  Requests reusing a pending msg_id
    uint64_t send_failed;             //  Other send errors
} s_stats_t;

struct _bn_relay_t {
    char *name;           //  "mux", "control", "iopub"
    bool swap;            //  ROUTER/ROUTER swap relay, else SUB->PUB
    zsock_t *client_side; //  Client ROUTER, or iopub SUB (input)
    zsock_t *engine_side; //  Engine ROUTER, or iopub PUB (output)
    void *client_handle;  //  libzmq handles of the two sockets
    void *engine_handle;
    bn_session_t *session; //  Verifies and signs our own replies
    zhashx_t *engines;     //  uuid -> s_engine_t
    zhashx_t *pending;     //  msg_id -> s_pending_t
    char *watch_type;      //  Forwarded type reported to watch_fn
    bn_relay_watch_fn *watch_fn;
    void *watch_arg;
    const bn_monitor_t *monitor; //  Told of what passes (borrowed)
    bn_holdq_t *holdq;           //  Requests for engines connecting
    bn_hosts_t *hosts;           //  Links of host nodes (borrowed), or NULL
    bn_watch_t *sockets;         //  The sockets it reads, in a loop
    bn_watch_item_t *client_item;
    bn_watch_item_t *engine_item;
    s_stats_t stats;
};

//  After a send on a socket the relay reads: the send may have taken the
//  signal of input that came meanwhile (bn_watch).
static void
s_sent (bn_relay_t *self, bn_watch_item_t *item)
{
    if (self->sockets)
        bn_watch_check (self->sockets, item);
}

static void
s_pending_free (s_pending_t **self_p)
{
    s_pending_t *self = *self_p;
    if (!self)
        return;
    bn_msg_destroy (&self->stub);
    free (self->msg_id);
    free (self);
    *self_p = NULL;
}

static void
s_engine_destroy (void **item)
{
    s_engine_t *self = (s_engine_t *)*item;
    if (!self)
        return;
    zlistx_destroy (&self->pending);
    if (self->done) {
        for (size_t i = 0; i < BN_RELAY_COMPLETED_KEEP; i++)
            free (self->done[i]);
        free (self->done);
    }
    free (self->uuid);
    free (self);
    *item = NULL;
}

static void
s_pending_destructor (void **item)
{
    s_pending_free ((s_pending_t **)item);
}

static void
s_msg_destructor (void **item)
{
    bn_msg_destroy ((bn_msg_t **)item);
}

static bn_holdq_send_fn s_send_held;
static bn_holdq_fail_fn s_fail_held;

static bn_relay_t *
s_new (const char *name, zsock_t *client_side, zsock_t *engine_side,
       bn_session_t *session, bool swap)
{
    assert (name);
    assert (client_side);
    assert (engine_side);
    assert (session);
    bn_relay_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->name = strdup (name);
    self->swap = swap;
    self->client_side = client_side;
    self->engine_side = engine_side;
    self->client_handle = zsock_resolve (client_side);
    self->engine_handle = zsock_resolve (engine_side);
    self->session = session;
    self->engines = zhashx_new ();
    self->pending = zhashx_new ();
    self->holdq = bn_holdq_new (0, s_send_held, s_fail_held, self);
    if (!self->name || !self->engines || !self->pending || !self->holdq) {
        bn_relay_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->engines, s_engine_destroy);
    //  pending entries are owned by their engine's list, and keyed by
    //  their own msg_id string (no copy per request)
    zhashx_set_key_duplicator (self->pending, NULL);
    zhashx_set_key_destructor (self->pending, NULL);
    bn_holdq_set_destructor (self->holdq, s_msg_destructor);
    return self;
}

bn_relay_t *
bn_relay_new_swap (const char *name, zsock_t *client_side, zsock_t *engine_side,
                   bn_session_t *session)
{
    return s_new (name, client_side, engine_side, session, true);
}

bn_relay_t *
bn_relay_new_forward (const char *name, zsock_t *input, zsock_t *output,
                      bn_session_t *session)
{
    return s_new (name, input, output, session, false);
}

void
bn_relay_destroy (bn_relay_t **self_p)
{
    assert (self_p);
    bn_relay_t *self = *self_p;
    if (!self)
        return;
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->client_item);
        bn_watch_cancel (self->sockets, &self->engine_item);
        bn_watch_destroy (&self->sockets);
    }
    bn_holdq_destroy (&self->holdq);
    zhashx_destroy (&self->pending);
    zhashx_destroy (&self->engines);
    free (self->watch_type);
    free (self->name);
    free (self);
    *self_p = NULL;
}

static void
s_on_client (bn_watch_item_t *item, void *arg)
{
    bn_relay_client_ready ((bn_relay_t *)arg);
}

static void
s_on_engine (bn_watch_item_t *item, void *arg)
{
    bn_relay_engine_ready ((bn_relay_t *)arg);
}

int
bn_relay_attach (bn_relay_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    assert (!self->sockets);
    //  One descriptor in the loop for the relay's sockets: a wake-up costs
    //  for the socket that has input, not for each socket of the loop.
    self->sockets = bn_watch_new (loop);
    if (!self->sockets ||
        !(self->client_item = bn_watch_sock (self->sockets, self->client_side,
                                             s_on_client, self)))
        return -1;
    if (self->swap &&
        !(self->engine_item = bn_watch_sock (self->sockets, self->engine_side,
                                             s_on_engine, self)))
        return -1;
    return bn_holdq_attach (self->holdq, loop);
}

void
bn_relay_set_connect_grace (bn_relay_t *self, int msecs)
{
    assert (self);
    bn_holdq_set_grace (self->holdq, msecs);
}

void
bn_relay_set_watch (bn_relay_t *self, const char *msg_type,
                    bn_relay_watch_fn *fn, void *arg)
{
    assert (self);
    assert (msg_type);
    free (self->watch_type);
    self->watch_type = strdup (msg_type);
    self->watch_fn = fn;
    self->watch_arg = arg;
}

void
bn_relay_set_hosts (bn_relay_t *self, bn_hosts_t *hosts)
{
    assert (self);
    self->hosts = hosts;
}

void
bn_relay_set_monitor (bn_relay_t *self, const bn_monitor_t *monitor)
{
    assert (self);
    self->monitor = monitor;
}

//  Copy ident index into key as a C string; NULL if absent, too long or
//  holding a NUL byte.
static const char *
s_ident_key (bn_msg_t *msg, size_t index, char *key, size_t keysize)
{
    size_t size;
    const void *data = bn_msg_ident (msg, index, &size);
    if (!data || size == 0 || size >= keysize || memchr (data, 0, size))
        return NULL;
    memcpy (key, data, size);
    key[size] = 0;
    return key;
}

bn_msg_t *
bn_relay_error_reply (bn_session_t *session, bn_msg_t *request,
                      const char *reply_type, const char *engine,
                      json_t *content)
{
    assert (session);
    assert (request);
    char derived[S_TYPE_MAX];
    if (!reply_type) {
        const char *type = bn_msg_type (request);
        if (!type || bn_wire_reply_type (type, derived, sizeof derived) != 0) {
            json_decref (content);
            return NULL;
        }
        reply_type = derived;
    }
    json_t *request_md = bn_msg_metadata (request);
    json_t *is_broadcast =
        request_md ? json_object_get (request_md, BN_MD_IS_BROADCAST) : NULL;
    json_t *is_coalescing =
        request_md ? json_object_get (request_md, BN_MD_IS_COALESCING) : NULL;
    json_t *original =
        request_md ? json_object_get (request_md, BN_MD_ORIGINAL_MSG_ID) : NULL;
    json_t *metadata = json_pack (
        "{s:s, s:b, s:b, s:b, s:s}", "status", BN_STATUS_ERROR,
        "dependencies_met", 1, BN_MD_IS_BROADCAST, json_is_true (is_broadcast),
        BN_MD_IS_COALESCING, json_is_true (is_coalescing),
        BN_MD_ORIGINAL_MSG_ID,
        json_is_string (original) ? json_string_value (original) : "");
    if (metadata && engine)
        json_object_set_new (metadata, "engine", json_string (engine));
    bn_msg_t *reply = bn_msg_new_reply (session, request, reply_type);
    if (!metadata || !content || !reply) {
        json_decref (metadata);
        json_decref (content);
        bn_msg_destroy (&reply);
        return NULL;
    }
    bn_msg_set_metadata (reply, metadata);
    bn_msg_set_content (reply, content);
    return reply;
}

//  Send reply on the client side, counting a gone client.
static void
s_send_client (bn_relay_t *self, bn_msg_t **reply_p)
{
    if (bn_msg_send_client (reply_p, self->client_handle, self->session,
                            &self->stats.undelivered, self->name) == 0)
        self->stats.forwarded++;
    s_sent (self, self->client_item);
}

//  Answer request (idents [client, engine]) with an EngineError.
static void s_engine_error (bn_relay_t *self, bn_msg_t *request,
                            const char *engine, const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
s_engine_error (bn_relay_t *self, bn_msg_t *request, const char *engine,
                const char *format, ...)
{
    char evalue[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, sizeof evalue, format, args);
    va_end (args);
    json_t *content = bn_wire_error ("EngineError", evalue, NULL, NULL);
    bn_msg_t *reply =
        bn_relay_error_reply (self->session, request, NULL, engine, content);
    if (!reply) {
        self->stats.send_failed++;
        bn_log_error ("%s: cannot build an EngineError reply", self->name);
        return;
    }
    bn_log_info ("%s: %s", self->name, evalue);
    if (self->monitor && self->monitor->reply)
        self->monitor->reply (self->monitor->arg, self->name, reply, NULL);
    s_send_client (self, &reply);
}

//  Remember request (already verified, idents [client, engine]) as pending
//  on engine. Failing to remember only costs the EngineError later.
static s_pending_t *
s_track (bn_relay_t *self, s_engine_t *engine, bn_msg_t *request)
{
    const char *msg_id = bn_msg_id (request);
    if (zhashx_lookup (self->pending, msg_id)) {
        self->stats.duplicate_id++;
        bn_log_warn ("%s: msg_id %s is already pending; not tracked",
                     self->name, msg_id);
        return NULL;
    }
    s_pending_t *pending = calloc (1, sizeof *pending);
    if (!pending)
        return NULL;
    pending->msg_id = strdup (msg_id);
    pending->engine = engine;
    pending->stub = bn_msg_dup (request);
    if (!pending->msg_id || !pending->stub) {
        s_pending_free (&pending);
        return NULL;
    }
    bn_msg_clear_buffers (pending->stub);
    pending->handle = zlistx_add_end (engine->pending, pending);
    if (!pending->handle) {
        s_pending_free (&pending);
        return NULL;
    }
    zhashx_insert (self->pending, pending->msg_id, pending);
    return pending;
}

//  Unlink and free a pending request.
static void
s_untrack (bn_relay_t *self, s_pending_t *pending)
{
    zhashx_delete (self->pending, pending->msg_id);
    zlistx_delete (pending->engine->pending, pending->handle);
}

//  A request (idents [engine, client]) could not be sent: answer its
//  client with EngineError (pending, when tracked) or count the loss.
static void
s_send_failed (bn_relay_t *self, s_engine_t *engine, s_pending_t *pending,
               int error)
{
    if (pending) {
        self->stats.not_connected++;
        s_engine_error (self, pending->stub, engine->uuid,
                        "Engine %d is not connected to the %s relay "
                        "(request '%s': %s)",
                        engine->eid, self->name, pending->msg_id,
                        zmq_strerror (error));
        s_untrack (self, pending);
    } else {
        self->stats.send_failed++;
        bn_log_warn ("%s: send to engine %d failed: %s", self->name,
                     engine->eid, zmq_strerror (error));
    }
}

//  Send a copy of held request msg (idents [engine, client]); 0 when it
//  went, else the errno of the failed send.
static int
s_send_held (void *arg, const char *uuid, void *item)
{
    bn_relay_t *self = (bn_relay_t *)arg;
    bn_msg_t *copy = bn_msg_dup ((bn_msg_t *)item);
    if (!copy)
        return ENOMEM;
    int rc = bn_msg_send_flags (&copy, self->engine_handle, NULL, ZMQ_DONTWAIT);
    int error = errno;
    s_sent (self, self->engine_item);
    if (rc != 0)
        return error;
    self->stats.forwarded++;
    return 0;
}

//  A held request cannot go: answer it with EngineError.
static void
s_fail_held (void *arg, const char *uuid, void *item, bn_holdq_why_t why,
             int error)
{
    bn_relay_t *self = (bn_relay_t *)arg;
    bn_msg_t *msg = (bn_msg_t *)item;
    s_pending_t *pending = zhashx_lookup (self->pending, bn_msg_id (msg));
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (pending && streq (pending->engine->uuid, uuid))
        engine = pending->engine;
    else
        pending = NULL;
    if (!engine)
        return;
    if (pending && why == BN_HOLDQ_REMOVED) {
        self->stats.stranded++;
        s_engine_error (self, pending->stub, engine->uuid,
                        "Engine %d died before it connected to the %s relay "
                        "(request '%s')",
                        engine->eid, self->name, pending->msg_id);
        s_untrack (self, pending);
    } else if (pending && why == BN_HOLDQ_FULL) {
        self->stats.not_connected++;
        s_engine_error (self, pending->stub, engine->uuid,
                        "Engine %d is not connected to the %s relay and has "
                        "%d requests waiting (request '%s')",
                        engine->eid, self->name, BN_HOLDQ_MAX, pending->msg_id);
        s_untrack (self, pending);
    } else
        s_send_failed (self, engine, pending, error ? error : EHOSTUNREACH);
}

//  Tell the monitor of a request to engine (report taken; NULL: none).
static void
s_report_request (bn_relay_t *self, bn_msg_t **report_p, s_engine_t *engine)
{
    if (*report_p)
        self->monitor->request (self->monitor->arg, self->name, *report_p,
                                engine->uuid);
    bn_msg_destroy (report_p);
}

static void
s_client_request (bn_relay_t *self, bn_msg_t *msg)
{
    if (bn_msg_nidents (msg) < 1) {
        self->stats.drops.bad_frame++;
        bn_msg_destroy (&msg);
        return;
    }
    if (bn_msg_check (msg, self->session,
                      BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER,
                      &self->stats.drops, "%s", self->name) != 0) {
        bn_msg_destroy (&msg);
        return;
    }
    char key[S_KEY_MAX];
    const char *uuid = s_ident_key (msg, 1, key, sizeof key);
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    if (!engine || engine->closed) {
        self->stats.unknown_engine++;
        if (bn_msg_nidents (msg) < 2)
            s_engine_error (self, msg, NULL,
                            "no engine named in the %s request '%s'",
                            self->name, bn_msg_id (msg));
        else if (uuid)
            s_engine_error (self, msg, uuid, "No such engine: '%s'", uuid);
        else
            s_engine_error (self, msg, NULL, "No such engine");
        bn_msg_destroy (&msg);
        return;
    }
    s_pending_t *pending = s_track (self, engine, msg);
    //  the monitor (the hub's records, on this thread) is told once the
    //  request is on its way, not before (its copy shares the frames)
    bn_msg_t *report =
        self->monitor && self->monitor->request ? bn_msg_dup (msg) : NULL;
    bn_msg_swap_idents (msg);
    if (bn_hosts_wrap (self->hosts, msg) != 0) {
        s_report_request (self, &report, engine);
        s_send_failed (self, engine, pending, ENOMEM);
        bn_msg_destroy (&msg);
        return;
    }
    //  a young engine's request may have to wait for its connection
    if (bn_holdq_waits (self->holdq, engine->uuid)) {
        if (bn_holdq_send (self->holdq, engine->uuid, msg) == 1)
            self->stats.held++;
        s_report_request (self, &report, engine);
        return;
    }
    int rc = bn_msg_send_flags (&msg, self->engine_handle, NULL, ZMQ_DONTWAIT);
    int error = errno;
    s_sent (self, self->engine_item);
    s_report_request (self, &report, engine);
    if (rc == 0) {
        self->stats.forwarded++;
        return;
    }
    s_send_failed (self, engine, pending, error);
}

int
bn_relay_retry (bn_relay_t *self)
{
    assert (self);
    return bn_holdq_retry (self->holdq);
}

//  Record that engine answered pending, keeping its msg_id in the ring.
static void
s_complete (bn_relay_t *self, s_pending_t *pending)
{
    s_engine_t *engine = pending->engine;
    engine->completed++;
    zhashx_delete (self->pending, pending->msg_id);
    if (!engine->done)
        engine->done = calloc (BN_RELAY_COMPLETED_KEEP, sizeof (char *));
    if (engine->done) {
        free (engine->done[engine->done_next]);
        engine->done[engine->done_next] = pending->msg_id;
        pending->msg_id = NULL;
        engine->done_next = (engine->done_next + 1) % BN_RELAY_COMPLETED_KEEP;
    }
    zlistx_delete (engine->pending, pending->handle);
}

static void
s_engine_reply (bn_relay_t *self, bn_msg_t *msg)
{
    if (bn_hosts_unwrap (self->hosts, msg) < 0) {
        self->stats.drops.bad_frame++;
        bn_log_debug ("%s: dropped a message through a host link for an "
                      "engine it does not serve",
                      self->name);
        bn_msg_destroy (&msg);
        return;
    }
    if (bn_msg_nidents (msg) < 2) {
        self->stats.drops.bad_frame++;
        bn_log_warn ("%s: dropped an engine message without two idents",
                     self->name);
        bn_msg_destroy (&msg);
        return;
    }
    if (bn_msg_check (msg, self->session,
                      BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                      &self->stats.drops, "%s", self->name) != 0) {
        bn_msg_destroy (&msg);
        return;
    }
    const char *parent_id = bn_msg_parent_id (msg);
    s_pending_t *pending =
        parent_id ? zhashx_lookup (self->pending, parent_id) : NULL;
    if (pending) {
        size_t size;
        const void *ident = bn_msg_ident (msg, 0, &size);
        if (strlen (pending->engine->uuid) == size &&
            memcmp (ident, pending->engine->uuid, size) == 0)
            s_complete (self, pending);
    }
    //  the monitor is told once the client has the reply (as above)
    bn_msg_t *report =
        self->monitor && self->monitor->reply ? bn_msg_dup (msg) : NULL;
    bn_msg_swap_idents (msg);
    s_send_client (self, &msg);
    if (report) {
        char key[S_KEY_MAX];
        self->monitor->reply (self->monitor->arg, self->name, report,
                              s_ident_key (report, 0, key, sizeof key));
    }
    bn_msg_destroy (&report);
}

static void
s_forward (bn_relay_t *self, bn_msg_t *msg)
{
    if (bn_msg_check (msg, self->session,
                      BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                      &self->stats.drops, "%s", self->name) != 0) {
        bn_msg_destroy (&msg);
        return;
    }
    if (self->watch_fn && streq (bn_msg_type (msg), self->watch_type))
        self->watch_fn (self->watch_arg, msg);
    if (self->monitor && self->monitor->iopub)
        self->monitor->iopub (self->monitor->arg, msg);
    if (bn_msg_send_flags (&msg, self->engine_handle, NULL, ZMQ_DONTWAIT) == 0)
        self->stats.forwarded++;
    else
        self->stats.send_failed++;
}

int
bn_relay_client_ready (bn_relay_t *self)
{
    assert (self);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (self->client_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.received++;
        if (self->swap)
            s_client_request (self, msg);
        else
            s_forward (self, msg);
    }
    return 0;
}

int
bn_relay_engine_ready (bn_relay_t *self)
{
    assert (self);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (self->engine_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.received++;
        s_engine_reply (self, msg);
    }
    return 0;
}

int
bn_relay_engine_add (bn_relay_t *self, const char *uuid, int eid)
{
    assert (self);
    assert (uuid);
    s_engine_t *old = zhashx_lookup (self->engines, uuid);
    if (old && !old->closed)
        return -1;
    if (old)
        bn_relay_engine_remove (self, uuid);
    s_engine_t *engine = calloc (1, sizeof *engine);
    if (!engine)
        return -1;
    engine->uuid = strdup (uuid);
    engine->eid = eid;
    engine->pending = zlistx_new ();
    if (!engine->uuid || !engine->pending ||
        bn_holdq_engine_add (self->holdq, uuid) != 0) {
        void *item = engine;
        s_engine_destroy (&item);
        return -1;
    }
    zlistx_set_destructor (engine->pending, s_pending_destructor);
    zhashx_insert (self->engines, uuid, engine);
    return 0;
}

void
bn_relay_engine_close (bn_relay_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (engine)
        engine->closed = true;
}

void
bn_relay_engine_remove (bn_relay_t *self, const char *uuid)
{
    bn_relay_engine_lost (self, uuid, NULL);
}

void
bn_relay_engine_lost (bn_relay_t *self, const char *uuid, const char *why)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine)
        return;
    bn_holdq_engine_remove (self->holdq, uuid);
    s_pending_t *pending = zlistx_first (engine->pending);
    while (pending) {
        self->stats.stranded++;
        if (why)
            s_engine_error (self, pending->stub, engine->uuid,
                            "Engine %d lost while running task '%s': %s",
                            engine->eid, pending->msg_id, why);
        else
            s_engine_error (self, pending->stub, engine->uuid,
                            "Engine %d died while running task '%s'",
                            engine->eid, pending->msg_id);
        zhashx_delete (self->pending, pending->msg_id);
        pending = zlistx_next (engine->pending);
    }
    zhashx_delete (self->engines, uuid);
}

size_t
bn_relay_queue_size (bn_relay_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    return engine ? zlistx_size (engine->pending) : 0;
}

size_t
bn_relay_completed_size (bn_relay_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    return engine ? engine->completed : 0;
}

json_t *
bn_relay_queue_ids (bn_relay_t *self, const char *uuid)
{
    assert (self);
    json_t *ids = json_array ();
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!ids || !engine)
        return ids;
    s_pending_t *pending = zlistx_first (engine->pending);
    while (pending) {
        json_array_append_new (ids, json_string (pending->msg_id));
        pending = zlistx_next (engine->pending);
    }
    return ids;
}

json_t *
bn_relay_completed_ids (bn_relay_t *self, const char *uuid)
{
    assert (self);
    json_t *ids = json_array ();
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!ids || !engine || !engine->done)
        return ids;
    for (size_t i = 0; i < BN_RELAY_COMPLETED_KEEP; i++) {
        size_t slot = (engine->done_next + i) % BN_RELAY_COMPLETED_KEEP;
        if (engine->done[slot])
            json_array_append_new (ids, json_string (engine->done[slot]));
    }
    return ids;
}

json_t *
bn_relay_stats (bn_relay_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I}",
        "received", (json_int_t)s->received, "forwarded",
        (json_int_t)s->forwarded, "bad_frame", (json_int_t)s->drops.bad_frame,
        "bad_signature", (json_int_t)s->drops.bad_signature, "replayed",
        (json_int_t)s->drops.replayed, "bad_header",
        (json_int_t)s->drops.bad_header, "unknown_engine",
        (json_int_t)s->unknown_engine, "not_connected",
        (json_int_t)s->not_connected, "held", (json_int_t)s->held, "stranded",
        (json_int_t)s->stranded, "client_gone",
        (json_int_t)s->undelivered.client_gone, "client_full",
        (json_int_t)s->undelivered.client_full, "duplicate_id",
        (json_int_t)s->duplicate_id, "send_failed",
        (json_int_t)(s->send_failed + s->undelivered.send_failed), "engines",
        (json_int_t)zhashx_size (self->engines), "pending",
        (json_int_t)zhashx_size (self->pending));
}

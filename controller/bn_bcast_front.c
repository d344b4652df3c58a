/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_front: the broadcast port held for a root process, and the
    answers to what was in flight through a root that died.

    The link to the root is a DEALER with ZMQ_IMMEDIATE: it queues nothing
    for a root that is not connected, so a request either reached the root
    that died (it is in flight here and failed) or was never sent (it is
    failed at once, or waits while the link is only full).  */
#define _GNU_SOURCE //  memmem
#include "bn_bcast_front.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "bn_curve.h"
#include "bn_idset.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_relay.h"
#include "bn_watch.h"
#include "bn_wire.h"

#define S_BATCH 1024       //  messages read per wake-up before polling again
#define S_RETRY 10         //  ms between tries of a request the link held
#define S_RECONNECT_IVL 10 //  ms between attempts to reach a new root
#define S_BACKLOG 4096     //  pending connections on the client port
#define S_ID_MAX 256       //  longest msg_id read by the scanner
#define S_ROUTING_ID "bn_front"

//  A pickled None (protocol 4): a failed engine's buffer in a merged reply.
static const char s_pickled_none[] = "\x80\x04N.";
#define S_PICKLED_NONE_SIZE 4

//  A request the root holds.
typedef struct {
    char *key;          //  Its original msg_id
    bn_msg_t *request;  //  As the client sent it, without its buffers
    long owed;          //  Engines whose answer has not come by
    bool coalescing;    //  is_coalescing
    bool plain;         //  No bn_levels or bn_release: the root merges a
                        //  coalescing one whole, and forwards each engine's
                        //  reply of another
    bool released;      //  bn_release: merged replies say bn_partial
    zhashx_t *answered; //  Uuids of engines that answered alone, or NULL
    zlistx_t *merged;   //  Merged replies (no buffers) of part of it, or NULL
} s_flight_t;

typedef struct {
    uint64_t requests;    //  Requests read from clients
    uint64_t replies;     //  Replies passed from the root to clients
    uint64_t held;        //  Requests held while the link was full
    uint64_t root_lost;   //  Times the root died
    uint64_t failed;      //  Requests failed for a lost or absent root
    uint64_t errors;      //  Error replies made for them
    uint64_t send_failed; //  Requests the link refused for another reason
    bn_msg_drops_t drops; //  Requests dropped: framing, signature, replay
    bn_msg_undelivered_t undelivered;
} s_stats_t;

struct _bn_bcast_front_t {
    zsock_t *client; //  ROUTER on the client port
    zsock_t *root;   //  DEALER to the root's port
    void *client_handle;
    void *root_handle;
    bn_watch_t *sockets;          //  the two, in the loop
    bn_watch_item_t *client_item; //  NULL while clients are not read
    bn_watch_item_t *root_item;
    int port;
    bn_session_t *session;
    const bn_monitor_t *monitor;
    zloop_t *loop;
    zhashx_t *flights; //  key -> s_flight_t
    bn_msg_t *held;    //  A request the full link did not take yet
    int retry;         //  Its timer, or -1
    bool running;      //  The root is up
    s_stats_t stats;
};

static void
s_flight_destroy (void **item)
{
    s_flight_t *self = (s_flight_t *)*item;
    if (!self)
        return;
    free (self->key);
    bn_msg_destroy (&self->request);
    zhashx_destroy (&self->answered);
    if (self->merged) {
        for (bn_msg_t *msg = zlistx_first (self->merged); msg;
             msg = zlistx_next (self->merged))
            bn_msg_destroy (&msg);
        zlistx_destroy (&self->merged);
    }
    free (self);
    *item = NULL;
}

bn_bcast_front_t *
bn_bcast_front_new (const char *endpoint, const char *root, int hwm,
                    int client_hwm, zcert_t *curve, const char *key,
                    const bn_monitor_t *monitor)
{
    assert (endpoint);
    assert (root);
    assert (key);
    bn_bcast_front_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->retry = -1;
    self->running = true;
    self->monitor = monitor;
    self->session = bn_session_new (key, NULL);
    //  the replay history it checks clients' requests against is reserved
    //  whole, as the root's in threads mode: grown as requests come, it
    //  raised the controller's memory by 4 MB over its first 65,536
    if (self->session && bn_session_reserve_history (self->session) != 0)
        bn_session_destroy (&self->session);
    self->flights = zhashx_new ();
    self->client = zsock_new (ZMQ_ROUTER);
    self->root = zsock_new (ZMQ_DEALER);
    if (!self->session || !self->flights || !self->client || !self->root) {
        bn_bcast_front_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->flights, s_flight_destroy);
    self->client_handle = zsock_resolve (self->client);
    self->root_handle = zsock_resolve (self->root);
    zsock_set_sndhwm (self->client, client_hwm > 0 ? client_hwm : hwm);
    zsock_set_rcvhwm (self->client, hwm);
    zsock_set_linger (self->client, 0);
    //  a client that connects again under its session takes it over from
    //  its old connection (bn_controller's s_bind)
    zsock_set_router_handover (self->client, 1);
    zsock_set_backlog (self->client, S_BACKLOG);
    zsock_set_router_mandatory (self->client, 1);
    zsock_set_sndhwm (self->root, hwm);
    zsock_set_rcvhwm (self->root, hwm);
    zsock_set_linger (self->root, 0);
    zsock_set_identity (self->root, S_ROUTING_ID);
    zsock_set_immediate (self->root, 1);
    zsock_set_reconnect_ivl (self->root, S_RECONNECT_IVL);
    if (curve && bn_curve_server (self->client, curve)) {
        bn_log_error ("broadcast: this libzmq cannot use CURVE");
        bn_bcast_front_destroy (&self);
        return NULL;
    }
    if (bn_wire_bind (self->client, endpoint, BN_WIRE_REBIND_WAIT) < 0) {
        bn_log_error ("broadcast: cannot bind %s: %s", endpoint,
                      zmq_strerror (errno));
        bn_bcast_front_destroy (&self);
        return NULL;
    }
    char *last = zsock_last_endpoint (self->client);
    self->port = bn_wire_endpoint_port (last);
    zstr_free (&last);
    if (self->port <= 0 || zsock_connect (self->root, "%s", root) != 0) {
        bn_log_error ("broadcast: cannot link the client port to %s", root);
        bn_bcast_front_destroy (&self);
    }
    return self;
}

void
bn_bcast_front_destroy (bn_bcast_front_t **self_p)
{
    assert (self_p);
    bn_bcast_front_t *self = *self_p;
    if (!self)
        return;
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->client_item);
        bn_watch_cancel (self->sockets, &self->root_item);
        bn_watch_destroy (&self->sockets);
    }
    if (self->loop && self->retry >= 0)
        zloop_timer_end (self->loop, self->retry);
    bn_msg_destroy (&self->held);
    zhashx_destroy (&self->flights);
    zsock_destroy (&self->client);
    zsock_destroy (&self->root);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

int
bn_bcast_front_port (bn_bcast_front_t *self)
{
    assert (self);
    return self->port;
}

//  --------------------------------------------------------------------------
//  Errors for what the root will not answer

//  After a send on a socket the front reads: the send may have taken the
//  signal of input that came meanwhile (bn_watch).
static void
s_sent (bn_bcast_front_t *self, bn_watch_item_t *item)
{
    if (self->sockets)
        bn_watch_check (self->sockets, item);
}

//  Report a reply to the records, then send it to its client.
static void
s_send_reply (bn_bcast_front_t *self, bn_msg_t **reply_p)
{
    if (!*reply_p)
        return;
    if (self->monitor && self->monitor->reply)
        self->monitor->reply (self->monitor->arg, BN_MONITOR_QUEUE_BROADCAST,
                              *reply_p, NULL);
    bn_msg_send_client (reply_p, self->client_handle, self->session,
                        &self->stats.undelivered, "broadcast");
    s_sent (self, self->client_item);
}

//  The same for a reply made here.
static void
s_send_made (bn_bcast_front_t *self, bn_msg_t **reply_p)
{
    if (*reply_p)
        self->stats.errors++;
    s_send_reply (self, reply_p);
}

static void
s_report_request (bn_bcast_front_t *self, bn_msg_t *request)
{
    if (self->monitor && self->monitor->request)
        self->monitor->request (self->monitor->arg, BN_MONITOR_QUEUE_BROADCAST,
                                request, NULL);
}

//  Mark reply as a part of broadcast key.
static void
s_mark (bn_msg_t *reply, const char *key, bool coalescing)
{
    bn_wire_mark_broadcast (bn_msg_metadata (reply), key, coalescing);
    bn_msg_touch (reply, BN_PART_METADATA);
}

//  True if the engine (uuid, eid) has answered part of flight.
static bool
s_has_answered (s_flight_t *flight, bn_idset_t *eids, const char *uuid, int eid)
{
    return (flight->answered && zhashx_lookup (flight->answered, uuid)) ||
           (eids && eid >= 0 && bn_idset_contains (eids, eid));
}

//  The engines of the merged replies of flight: their uuids go into
//  flight->answered, the ids of engine sets into eids.
static void
s_merged_engines (s_flight_t *flight, bn_idset_t *eids)
{
    if (!flight->merged || !eids)
        return;
    if (!flight->answered && !(flight->answered = zhashx_new ()))
        return;
    for (bn_msg_t *msg = zlistx_first (flight->merged); msg;
         msg = zlistx_next (flight->merged)) {
        bn_merged_reader_t *reader = bn_merged_reader_new (msg);
        bn_merged_entry_t entry;
        int rc;
        while (reader && (rc = bn_merged_reader_next (reader, &entry)) != 0 &&
               rc != -1) {
            if (entry.uuid)
                zhashx_update (flight->answered, entry.uuid, (void *)1);
            for (int eid = entry.engines ? bn_idset_first (entry.engines) : -1;
                 eid >= 0; eid = bn_idset_next (entry.engines, eid))
                bn_idset_add (eids, eid);
        }
        bn_merged_reader_destroy (&reader);
    }
}

//  Answer every engine of flight that has not answered with an EngineError
//  saying why: one reply per engine, or one merged reply when coalescing.
static void
s_fail (bn_bcast_front_t *self, s_flight_t *flight, const char *why)
{
    self->stats.failed++;
    bn_msg_t *request = flight->request;
    json_t *targets = json_object_get (bn_msg_metadata (request), "targets");
    if (!json_is_array (targets) || json_array_size (targets) == 0) {
        //  no engine to name: one error, as the root refuses such a request
        bn_msg_t *reply = bn_relay_error_reply (
            self->session, request, NULL, NULL,
            bn_wire_errorf ("EngineError", NULL, "%s", why));
        if (reply)
            s_mark (reply, flight->key, flight->coalescing);
        s_send_made (self, &reply);
        return;
    }
    bn_idset_t *eids = bn_idset_new ();
    s_merged_engines (flight, eids);
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    bn_merged_writer_t *writer =
        flight->coalescing ? bn_merged_writer_new () : NULL;
    bn_msg_t *merged = NULL;
    json_t *first = NULL;
    size_t index;
    json_t *target;
    json_array_foreach (targets, index, target)
    {
        const char *uuid = json_string_value (json_array_get (target, 0));
        json_t *id = json_array_get (target, 1);
        int eid = json_is_integer (id) ? (int)json_integer_value (id) : -1;
        if (!uuid || s_has_answered (flight, eids, uuid, eid))
            continue;
        json_t *content = bn_wire_errorf ("EngineError", NULL,
                                          "engine %d (%s): %s", eid, uuid, why);
        if (!content)
            continue;
        if (!flight->coalescing) {
            bn_msg_t *reply = bn_relay_error_reply (self->session, request,
                                                    NULL, uuid, content);
            json_t *parent = reply ? bn_msg_parent (reply) : NULL;
            char *msg_id = zsys_sprintf ("%s_%s", flight->key, uuid);
            if (parent && msg_id) {
                json_object_set_new (parent, "msg_id", json_string (msg_id));
                bn_msg_touch (reply, BN_PART_PARENT);
                s_mark (reply, flight->key, false);
                s_send_made (self, &reply);
            }
            zstr_free (&msg_id);
            bn_msg_destroy (&reply);
            continue;
        }
        char *entry = bn_merged_entry (BN_STATUS_ERROR, NULL, date, 1, content,
                                       NULL, NULL);
        if (entry && writer) {
            bn_merged_writer_add (writer, uuid, eid, entry, strlen (entry));
            if (!merged)
                merged = bn_relay_error_reply (self->session, request, NULL,
                                               NULL, json_incref (content));
            if (merged)
                bn_msg_add_buffer (merged, s_pickled_none, S_PICKLED_NONE_SIZE);
        }
        free (entry);
        if (!first)
            first = json_incref (content);
        json_decref (content);
    }
    if (merged && writer) {
        s_mark (merged, flight->key, true);
        if (flight->released)
            json_object_set_new (bn_msg_metadata (merged), BN_BCAST_PARTIAL,
                                 json_false ());
        json_t *base = json_copy (bn_msg_metadata (merged));
        if (base && bn_merged_writer_finish (writer, base, merged) == 0)
            s_send_made (self, &merged);
        json_decref (base);
    }
    bn_msg_destroy (&merged);
    bn_merged_writer_destroy (&writer);
    json_decref (first);
    bn_idset_destroy (&eids);
}

//  A new flight for request (borrowed), or NULL if it cannot be tracked.
static s_flight_t *
s_flight_new (bn_msg_t *request)
{
    static const char *const keys[] = {BN_MD_ORIGINAL_MSG_ID, "targets",
                                       BN_MD_IS_COALESCING, BN_BCAST_LEVELS,
                                       BN_BCAST_RELEASE};
    bn_jscan_slice_t values[5];
    size_t size;
    const void *md = bn_msg_part_data (request, BN_PART_METADATA, &size);
    const char *msg_id = bn_msg_id (request);
    if (!md || !msg_id || bn_jscan_object (md, size, keys, 5, values, NULL))
        return NULL;
    s_flight_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    //  (a client does not set original_msg_id: read only when it is there)
    char original[S_ID_MAX];
    bool given =
        values[0].data && bn_jscan_string (md, size, BN_MD_ORIGINAL_MSG_ID,
                                           original, sizeof original) >= 0;
    self->key = strdup (given ? original : msg_id);
    //  the targets are counted, not parsed
    if (values[1].data && *values[1].data == '[') {
        const char *at = values[1].data + 1;
        const char *end = values[1].data + values[1].size;
        bn_jscan_slice_t element;
        while (bn_jscan_next (&at, end, &element) == 1)
            self->owed++;
    }
    if (self->owed == 0)
        self->owed = 1;
    self->coalescing = values[2].data && values[2].size == 4 &&
                       memcmp (values[2].data, "true", 4) == 0;
    self->plain = !values[3].data && !values[4].data;
    self->released = values[4].data != NULL;
    self->request = bn_msg_dup (request);
    if (!self->key || !self->request) {
        s_flight_destroy ((void **)&self);
        return NULL;
    }
    bn_msg_clear_buffers (self->request);
    return self;
}

//  --------------------------------------------------------------------------
//  Relaying

//  Note the engines reply answers of its flight, and end the flight when
//  none is owed.
static void
s_answered (bn_bcast_front_t *self, bn_msg_t *reply)
{
    size_t size;
    const void *md = bn_msg_part_data (reply, BN_PART_METADATA, &size);
    char key[S_ID_MAX];
    if (!md ||
        bn_jscan_string (md, size, BN_MD_ORIGINAL_MSG_ID, key, sizeof key) < 0)
        return;
    s_flight_t *flight = zhashx_lookup (self->flights, key);
    if (!flight)
        return;
    const char *parent = bn_msg_parent_id (reply);
    size_t len = strlen (key);
    const char *uuid = parent && strncmp (parent, key, len) == 0 &&
                               parent[len] == '_' && parent[len + 1]
                           ? parent + len + 1
                           : NULL;
    int engines = -1;
    if (flight->plain && flight->coalescing)
        //  merged whole at the root, or refused: one reply answers all
        flight->owed = 0;
    else if (!flight->plain && (engines = bn_merged_engines (reply)) >= 0) {
        //  a merged reply of part of it (or one that reached no engine)
        flight->owed = engines ? flight->owed - engines : 0;
        bn_msg_t *copy = flight->owed > 0 ? bn_msg_dup (reply) : NULL;
        if (copy && (flight->merged || (flight->merged = zlistx_new ())) &&
            zlistx_add_end (flight->merged, copy)) {
            bn_msg_clear_buffers (copy);
            bn_msg_clear_idents (copy);
        } else
            bn_msg_destroy (&copy);
    } else if (!uuid)
        //  one reply to the whole request: the root refused it
        flight->owed = 0;
    else if (--flight->owed > 0 &&
             (flight->answered || (flight->answered = zhashx_new ())))
        zhashx_update (flight->answered, uuid, (void *)1);
    if (flight->owed <= 0)
        zhashx_delete (self->flights, key);
}

static int s_on_client (zloop_t *loop, zsock_t *sock, void *arg);

static int
s_on_retry (zloop_t *loop, int timer_id, void *arg)
{
    bn_bcast_front_t *self = (bn_bcast_front_t *)arg;
    return s_on_client (loop, self->client, arg);
}

//  Stop reading clients until the held request has gone.
static void
s_pause (bn_bcast_front_t *self)
{
    if (self->retry >= 0 || !self->loop)
        return;
    bn_watch_cancel (self->sockets, &self->client_item);
    self->retry = zloop_timer (self->loop, S_RETRY, 0, s_on_retry, self);
}

//  Read clients again.
static void
s_resume (bn_bcast_front_t *self)
{
    if (self->retry < 0 || !self->loop)
        return;
    zloop_timer_end (self->loop, self->retry);
    self->retry = -1;
    if (!(self->client_item = bn_watch_zreader (self->sockets, self->client,
                                                s_on_client, self)))
        bn_log_error ("broadcast: cannot read clients again");
}

//  Answer request (reported already) at once: it cannot reach the root.
static void
s_refuse_reported (bn_bcast_front_t *self, bn_msg_t *request)
{
    s_flight_t *flight = s_flight_new (request);
    if (flight) {
        //  (what an answer would hold; the targets are known)
        flight->plain = true;
        s_fail (self, flight,
                "the broadcast tree's root is being restarted; not sent");
        s_flight_destroy ((void **)&flight);
    }
}

//  Answer request at once: the root is not there.
static void
s_refuse (bn_bcast_front_t *self, bn_msg_t *request)
{
    s_report_request (self, request);
    s_refuse_reported (self, request);
}

//  Pass request on to the root; returns false if the link is full (the
//  request is then held).
static bool
s_pass (bn_bcast_front_t *self, bn_msg_t **request_p)
{
    if (!self->running) {
        s_refuse (self, *request_p);
        bn_msg_destroy (request_p);
        return true;
    }
    if (!(zsock_events (self->root) & ZMQ_POLLOUT)) {
        //  the link is full (or not connected yet): wait
        self->stats.held++;
        self->held = *request_p;
        *request_p = NULL;
        return false;
    }
    s_flight_t *flight = s_flight_new (*request_p);
    if (flight && zhashx_lookup (self->flights, flight->key)) {
        //  refused as the root refuses it, here: the root's refusal would
        //  be taken for the answer to the request in flight
        bn_msg_t *reply = bn_relay_error_reply (
            self->session, *request_p, NULL, NULL,
            bn_wire_error ("KeyError",
                           "a broadcast request with this msg_id is in flight",
                           NULL, NULL));
        if (reply) {
            s_mark (reply, flight->key, flight->coalescing);
            if (flight->coalescing) {
                json_object_set_new (bn_msg_metadata (reply), BN_BCAST_TARGETS,
                                     json_array ());
                bn_msg_touch (reply, BN_PART_METADATA);
            }
        }
        s_send_reply (self, &reply);
        s_flight_destroy ((void **)&flight);
        bn_msg_destroy (request_p);
        return true;
    }
    s_report_request (self, *request_p);
    int rc =
        bn_msg_send_routed (request_p, self->root_handle, NULL, ZMQ_DONTWAIT);
    s_sent (self, self->root_item);
    if (rc != 0) {
        s_flight_destroy ((void **)&flight);
        if (*request_p)
            s_refuse_reported (self, *request_p);
        bn_msg_destroy (request_p);
        self->stats.send_failed++;
        return true;
    }
    if (flight && zhashx_insert (self->flights, flight->key, flight) != 0)
        s_flight_destroy ((void **)&flight);
    return true;
}

static int
s_on_client (zloop_t *loop, zsock_t *sock, void *arg)
{
    bn_bcast_front_t *self = (bn_bcast_front_t *)arg;
    if (self->held) {
        bn_msg_t *held = self->held;
        self->held = NULL;
        if (!s_pass (self, &held)) {
            s_pause (self);
            return 0;
        }
        s_resume (self);
    }
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *request =
            bn_msg_recv_flags (self->client_handle, ZMQ_DONTWAIT);
        if (!request)
            break;
        self->stats.requests++;
        //  the root takes what comes from here as it is: this is where a
        //  client's message is checked, as a root on the client port did
        if (bn_msg_check (request, self->session,
                          BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "broadcast")) {
            bn_msg_destroy (&request);
            continue;
        }
        if (!s_pass (self, &request)) {
            s_pause (self);
            break;
        }
    }
    return 0;
}

static int
s_on_root (zloop_t *loop, zsock_t *sock, void *arg)
{
    bn_bcast_front_t *self = (bn_bcast_front_t *)arg;
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *reply = bn_msg_recv_flags (self->root_handle, ZMQ_DONTWAIT);
        if (!reply)
            break;
        s_answered (self, reply);
        self->stats.replies++;
        s_send_reply (self, &reply);
    }
    return 0;
}

int
bn_bcast_front_attach (bn_bcast_front_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    self->loop = loop;
    //  one descriptor in the loop for both sockets (bn_watch)
    self->sockets = bn_watch_new (loop);
    return self->sockets &&
                   (self->client_item = bn_watch_zreader (
                        self->sockets, self->client, s_on_client, self)) &&
                   (self->root_item = bn_watch_zreader (
                        self->sockets, self->root, s_on_root, self))
               ? 0
               : -1;
}

void
bn_bcast_front_set_root (bn_bcast_front_t *self, bool running)
{
    assert (self);
    self->running = running;
}

void
bn_bcast_front_root_lost (bn_bcast_front_t *self, const char *why)
{
    assert (self);
    self->stats.root_lost++;
    //  what the root answered before it died goes first
    s_on_root (self->loop, self->root, self);
    self->running = false;
    size_t failed = zhashx_size (self->flights);
    for (s_flight_t *flight = zhashx_first (self->flights); flight;
         flight = zhashx_next (self->flights))
        s_fail (self, flight, why);
    zhashx_purge (self->flights);
    if (self->held) {
        //  never sent: the clients waiting behind it are answered too
        s_refuse (self, self->held);
        bn_msg_destroy (&self->held);
        failed++;
        s_resume (self);
    }
    if (failed)
        bn_log_info ("broadcast: the root died with %zu requests in flight; "
                     "each engine of them got EngineError",
                     failed);
}

json_t *
bn_bcast_front_stats (bn_bcast_front_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I}",
        "bad_frame", (json_int_t)s->drops.bad_frame, "bad_signature",
        (json_int_t)s->drops.bad_signature, "replayed",
        (json_int_t)s->drops.replayed, "bad_header",
        (json_int_t)s->drops.bad_header, "requests", (json_int_t)s->requests,
        "replies", (json_int_t)s->replies, "in_flight",
        (json_int_t)zhashx_size (self->flights), "held", (json_int_t)s->held,
        "root_lost", (json_int_t)s->root_lost, "failed", (json_int_t)s->failed,
        "errors", (json_int_t)s->errors, "send_failed",
        (json_int_t)s->send_failed, "client_gone",
        (json_int_t)s->undelivered.client_gone, "client_full",
        (json_int_t)s->undelivered.client_full, "undelivered",
        (json_int_t)s->undelivered.send_failed);
}

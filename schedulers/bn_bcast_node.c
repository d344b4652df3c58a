/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_node: a node of the broadcast tree.

    A request is tracked from its arrival until every target it holds has
    an answer: one slot per target, in tree order (child order, then the
    client's target order within a child). A slot is filled by an engine's
    reply, by a merged message from a child (which fills the slots named
    in its broadcast_targets), or by an EngineError the node makes itself
    (engine unregistered, child lost, deadline passed, send failed).

    Forwarding levels send each reply up as it came (the engine's own
    frames and signature). Merging levels keep, per slot, the reply's
    buffers (frames shared with the reply, never copied) and its bn_replies
    entry as text, and send one message built from the last reply
    received, with broadcast_targets, bn_replies and the slots' buffers in
    slot order (bn_merged_writer); they read their children's merged
    replies with bn_merged_reader.

    Links between nodes of one process are trusted: what comes from them is
    not verified. Everything a node sends is signed (once per message, not
    per engine, except the per-engine copies to engines).

    Deadlines: the root turns bn_deadline_ms (or the configured default)
    into the time its leaves act, each level above S_DEADLINE_STEP ms
    later, so that what the level below delivered at its deadline is in
    before a parent gives up on it. Every node keeps that time on its
    monotonic clock and tells a child how many ms are left of it
    (bn_deadline_left), never a wall-clock time: the wall clock may jump,
    and nodes on other hosts read other wall clocks.  */
#define _GNU_SOURCE //  memmem
#include "bn_bcast_node.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bn_curve.h"
#include "bn_error.h"
#include "bn_group.h"
#include "bn_holdq.h"
#include "bn_idset.h"
#include "bn_jdump.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_reduce.h"
#include "bn_reducers.h"
#include "bn_relay.h"
#include "bn_session.h"
#include "bn_topology.h"
#include "bn_utf8.h"
#include "bn_wire.h"

#define S_BATCH 1024       //  messages read per wake-up before polling again
#define S_TICK 10          //  ms between deadline/window checks
#define S_DEADLINE_STEP 25 //  ms each level waits past the level below
//  The longest deadline taken, ms (31 years): the clock's sums with it
//  never overflow.
#define S_DEADLINE_MAX INT64_C (1000000000000)
#define S_RECONNECT_IVL 10 //  ms between attempts to reach the parent
#define S_FIELD 256        //  longest metadata string scanned in place
#define S_DEADLINE_LEFT "bn_deadline_left"
//  ms the root holds a request's report to the hub, so that the report of
//  its reply, when it comes by then, wakes the hub's thread once for both
#define S_REPORT_HOLD 5

//  A pickled None (protocol 4): the buffer a failed engine contributes to
//  a merged reply, so the buffer list stays aligned.
static const char s_pickled_none[] = "\x80\x04N.";
#define S_PICKLED_NONE_SIZE 4

typedef enum { S_PENDING, S_DONE, S_RELEASED } s_state_t;
typedef enum { S_RELEASE_ALL, S_RELEASE_WINDOW, S_RELEASE_NONE } s_release_t;

typedef struct {
    char *uuid;
    int eid;
    int child; //  child index (inner node), -1 at a leaf
    s_state_t state;
    char *entry;        //  bn_replies entry as JSON text (merging levels)
    size_t entry_len;   //  its bytes
    bool ok;            //  status "ok"
    zmq_msg_t *buffers; //  shared frames (merging levels)
    size_t nbuffers;
} s_slot_t;

typedef struct {
    char *key;           //  original msg_id
    bn_msg_t *request;   //  the request as received, without buffers
    bool coalescing;     //  is_coalescing
    bool merge;          //  this level merges
    s_release_t release; //  when a merging level sends
    int window_ms;       //  window release period
    int64_t next_window; //  mono ms of the next window release
    int64_t deadline;    //  mono ms when missing slots fail (0: none)
    int64_t leaf_at;     //  mono ms when the leaves act (with deadline)
    s_slot_t *slots;
    size_t nslots;
    size_t owed;                 //  slots still pending
    size_t unreleased;           //  slots done, not yet sent (merging)
    zhashx_t *by_uuid;           //  uuid -> slot index + 1
    bn_msg_t *last;              //  last reply received (merging)
    bool last_spliced;           //  it is a child's, read as spliced
    size_t last_whole;           //  slots it filled when it filled one for
                                 //  each of its entries, else 0
    void *timed;                 //  handle in the node's timed list, or NULL
    bn_group_t *group;           //  bn_group: outcomes grouped (merging)
    bn_reduce_t *reduce;         //  bn_reduce: the partial reduction (merging)
    zhashx_t *by_eid;            //  group, reduce: engine id -> slot index + 1
    bool timestamps;             //  bn_timestamps
    char received[BN_DATE_SIZE]; //  when this node got the request
    json_t *hops;                //  bn_hops gathered from below (merging)
} s_request_t;

typedef struct {
    uint64_t requests;       //  requests received
    bn_msg_drops_t drops;    //  Dropped: framing, signature, replay, header
    uint64_t bad_request;    //  unusable header, metadata or targets
    uint64_t duplicate;      //  a request reusing a msg_id in flight
    uint64_t to_engines;     //  per-engine copies sent
    uint64_t held;           //  copies held until the engine connected
    uint64_t to_children;    //  per-child requests sent
    uint64_t replies;        //  replies received from below
    uint64_t forwarded;      //  replies sent up unchanged
    uint64_t merged;         //  merged messages sent up
    uint64_t passed;         //  of which a child's, sent on as it came
    uint64_t late;           //  replies for no request or a filled slot
    uint64_t stray;          //  replies from an unknown peer
    uint64_t engine_lost;    //  slots failed: engine unregistered
    uint64_t child_lost;     //  slots failed: child lost
    uint64_t unknown_engine; //  slots failed: engine not registered
    uint64_t expired;        //  slots failed: deadline
    uint64_t send_failed;    //  sends that failed (slot failed if down)
    uint64_t bad_merge;      //  merged messages from below we could not use
    uint64_t spliced;        //  merged messages read through their text
} s_stats_t;

typedef struct {
    zsock_t *pipe;
    char *id; //  routing id
    int level;
    bool leaf;
    zsock_t *up;
    zsock_t *down;
    void *up_handle;
    void *down_handle;
    bool up_trusted;
    bool down_trusted;
    char *up_endpoint;
    char *down_endpoint;
    bn_topology_t *topology; //  the tree's shape (borrowed)
    int node;                //  this node's index in it
    size_t nchildren;
    bn_session_t *session;
    zhashx_t *requests; //  key -> s_request_t
    zhashx_t *engines;  //  leaf: uuid -> eid + 1
    zhashx_t *hosted;   //  leaf: uuid -> 1 + index in hosts of the host node
    zhashx_t *via;      //  leaf: uuid -> routing id of the shared connection
                        //  it is behind (a host node's engines)
                        //  serving it (doc/hosts.md)
    char **hosts;       //  leaf: host nodes' leaves, children of this leaf
    size_t nhosts;
    zhashx_t *routes;  //  inner: engine id -> 1 + the leaf of its host
                       //  node, when not eid % leaves
    bn_holdq_t *holdq; //  leaf: s_held_t * for engines connecting
    bool dispatching;  //  in s_send_engine: a failed slot is not
                       //  progressed (the dispatch does that)
    zlistx_t *timed;   //  requests with a deadline or window
    zlistx_t *losses;  //  s_loss_t * read, not yet applied to requests
    int timer;         //  zloop timer id, -1 when none
    int deadline_ms;
    size_t max_requests;     //  requests in flight before reading pauses
    bool paused;             //  not reading requests (max_requests reached)
    bn_reducers_t *reducers; //  reductions known by name
    const bn_monitor_t *monitor;
    bn_msg_t *unreported; //  the root's request being dispatched, unreported
    zlistx_t *held;       //  root: copies of requests sent, not yet reported
    int held_timer;       //  zloop timer reporting them, -1 when none
    zloop_t *loop;
    bool terminated;
    s_stats_t stats;
} s_node_t;

//  An engine unregistered or a child lost: the slots it serves fail. A
//  pipe command only records the loss; the loop's handlers apply it
//  (s_apply_losses) between requests, never while one is being worked on,
//  so commands read in the middle of a dispatch (s_drain_pipe) cannot
//  finish and free the request the dispatch holds.
typedef struct {
    char *uuid; //  the engine, or NULL for a child
    char *why;  //  why the engine was lost, or NULL
    int child;  //  the child's index (uuid NULL)
} s_loss_t;

static void
s_loss_free (void **item)
{
    s_loss_t *loss = (s_loss_t *)*item;
    if (!loss)
        return;
    free (loss->uuid);
    free (loss->why);
    free (loss);
    *item = NULL;
}

//  A per-engine copy of a request whose engine is not connected yet.
typedef struct {
    char *key;     //  the request's original msg_id
    bn_msg_t *msg; //  ready to send
} s_held_t;

static void
s_held_free (void **item)
{
    s_held_t *held = (s_held_t *)*item;
    if (!held)
        return;
    bn_msg_destroy (&held->msg);
    free (held->key);
    free (held);
    *item = NULL;
}

//  --------------------------------------------------------------------------
//  Small helpers

//  The value of a top-level string key of a JSON part, scanned in place
//  into buf; NULL if absent, not a string or too long.
static const char *
s_scan (bn_msg_t *msg, bn_part_t part, const char *key, char *buf, size_t size)
{
    size_t len;
    const void *data = bn_msg_part_data (msg, part, &len);
    return bn_jscan_string (data, len, key, buf, size) >= 0 ? buf : NULL;
}

//  True if the raw JSON part contains text (a cheap test before parsing).
static bool
s_part_has (bn_msg_t *msg, bn_part_t part, const char *text)
{
    size_t len;
    const void *data = bn_msg_part_data (msg, part, &len);
    return memmem (data, len, text, strlen (text)) != NULL;
}

//  The string value of slice into buf (size bytes), or NULL when it is
//  not a string or does not fit.
static const char *
s_slice_string (bn_jscan_slice_t slice, char *buf, size_t size)
{
    return slice.data && bn_jscan_unescape (slice, buf, size) >= 0 ? buf : NULL;
}

//  True if slice is a non-empty JSON string (output a banyan engine put in
//  its reply; an empty one, the common case, is left out of the merged
//  entry, which is then built without a JSON tree).
static bool
s_has_output (bn_jscan_slice_t slice)
{
    char probe[2];
    int found =
        slice.data ? bn_jscan_unescape (slice, probe, sizeof probe) : -1;
    return found > 0 || found == -2;
}

static void
s_slot_clear (s_slot_t *slot)
{
    free (slot->uuid);
    free (slot->entry);
    for (size_t i = 0; i < slot->nbuffers; i++)
        zmq_msg_close (&slot->buffers[i]);
    free (slot->buffers);
}

static void
s_request_destroy (s_request_t **self_p)
{
    s_request_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->nslots; i++)
        s_slot_clear (&self->slots[i]);
    free (self->slots);
    zhashx_destroy (&self->by_uuid);
    zhashx_destroy (&self->by_eid);
    bn_group_destroy (&self->group);
    bn_reduce_destroy (&self->reduce);
    json_decref (self->hops);
    bn_msg_destroy (&self->request);
    bn_msg_destroy (&self->last);
    free (self->key);
    free (self);
    *self_p = NULL;
}

static void
s_request_free (void **item)
{
    s_request_destroy ((s_request_t **)item);
}

static s_slot_t *
s_slot_of (s_request_t *req, const char *uuid)
{
    size_t index = (size_t)(uintptr_t)zhashx_lookup (req->by_uuid, uuid);
    return index ? &req->slots[index - 1] : NULL;
}

//  Set the slot's buffers to shared copies of count frames of msg from
//  first (or to the pickled-None placeholder when msg is NULL).
static int
s_slot_take_buffers (s_slot_t *slot, bn_msg_t *msg, size_t first, size_t count)
{
    size_t n = msg ? count : 1;
    slot->buffers = n ? calloc (n, sizeof (zmq_msg_t)) : NULL;
    if (n && !slot->buffers)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (msg) {
            zmq_msg_init (&slot->buffers[i]);
            zmq_msg_copy (&slot->buffers[i], bn_msg_buffer (msg, first + i));
        } else
            zmq_msg_init_data (&slot->buffers[i], (void *)s_pickled_none,
                               S_PICKLED_NONE_SIZE, NULL, NULL);
        slot->nbuffers++;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Sending up

static void s_request_done (s_node_t *self, s_request_t *req);

//  Report the requests held to the hub, in the order they came.
static void
s_report_held (s_node_t *self)
{
    if (self->held_timer >= 0)
        zloop_timer_end (self->loop, self->held_timer);
    self->held_timer = -1;
    bn_msg_t *copy;
    while ((copy = (bn_msg_t *)zlistx_detach (self->held, NULL))) {
        self->monitor->request (self->monitor->arg, BN_MONITOR_QUEUE_BROADCAST,
                                copy, NULL);
        bn_msg_destroy (&copy);
    }
}

//  The hold is over (a one-shot timer: czmq ends it, not its handler).
static int
s_on_held_timer (zloop_t *loop, int timer_id, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    self->held_timer = -1;
    s_report_held (self);
    return 0;
}

//  Hold the report of the request being dispatched, if not yet done: it
//  goes to the hub with the next reply, or S_REPORT_HOLD ms from the first
//  report held, whichever comes first (then at once, if it cannot be
//  held).
static void
s_report_request (s_node_t *self)
{
    bn_msg_t *request = self->unreported;
    self->unreported = NULL;
    if (!request)
        return;
    bn_msg_t *copy = bn_msg_dup (request);
    if (copy && zlistx_add_end (self->held, copy)) {
        if (self->held_timer < 0)
            self->held_timer = zloop_timer (self->loop, S_REPORT_HOLD, 1,
                                            s_on_held_timer, self);
        //  no timer to end the hold: at once
        if (self->held_timer < 0)
            s_report_held (self);
        return;
    }
    //  it cannot be held: what is held, then it, at once
    bn_msg_destroy (&copy);
    s_report_held (self);
    self->monitor->request (self->monitor->arg, BN_MONITOR_QUEUE_BROADCAST,
                            request, NULL);
}

static void
s_send_up (s_node_t *self, bn_msg_t **msg_p)
{
    s_report_request (self);
    //  (only a root with a monitor holds reports)
    if (zlistx_size (self->held))
        s_report_held (self);
    //  the root's replies are what clients get: the hub records them, after
    //  the client has its reply (the hub's thread, woken by the report,
    //  would otherwise run before the send on a busy core)
    bn_msg_t *report =
        self->level == 0 && self->monitor && self->monitor->reply && *msg_p
            ? bn_msg_dup (*msg_p)
            : NULL;
    if (bn_msg_send_flags (msg_p, self->up_handle, self->session,
                           ZMQ_DONTWAIT) != 0)
        self->stats.send_failed++;
    if (report)
        self->monitor->reply (self->monitor->arg, BN_MONITOR_QUEUE_BROADCAST,
                              report, NULL);
    bn_msg_destroy (&report);
}

//  This node's hop entry for bn_hops (received = when the request came,
//  sent = now).
static json_t *
s_hop (s_node_t *self, s_request_t *req)
{
    char now[BN_DATE_SIZE];
    bn_session_date (now);
    return json_pack ("{s:s, s:s, s:s}", "node", self->id, "received",
                      req->received, "sent", now);
}

//  Keep the bn_hops of a message from below for the next merged message.
static void
s_gather_hops (s_request_t *req, bn_msg_t *msg)
{
    if (!req->timestamps ||
        !s_part_has (msg, BN_PART_METADATA, "\"" BN_BCAST_HOPS "\""))
        return;
    json_t *hops = json_object_get (bn_msg_metadata (msg), BN_BCAST_HOPS);
    if (!req->hops)
        req->hops = json_array ();
    if (json_is_array (hops) && req->hops)
        json_array_extend (req->hops, hops);
}

//  Append this node's hop to a message forwarded up as it came.
static void
s_add_hop (s_node_t *self, s_request_t *req, bn_msg_t *msg)
{
    json_t *md = bn_msg_metadata (msg);
    if (!md)
        return;
    json_t *hops = json_object_get (md, BN_BCAST_HOPS);
    if (!json_is_array (hops)) {
        hops = json_array ();
        json_object_set_new (md, BN_BCAST_HOPS, hops);
    }
    json_array_append_new (hops, s_hop (self, req));
    bn_msg_touch (msg, BN_PART_METADATA);
}

//  A slot done whose entry and buffers went into a message sent: released,
//  and what was sent is not needed any more.
static void
s_slot_release (s_slot_t *slot)
{
    slot->state = S_RELEASED;
    for (size_t b = 0; b < slot->nbuffers; b++)
        zmq_msg_close (&slot->buffers[b]);
    free (slot->buffers);
    slot->buffers = NULL;
    slot->nbuffers = 0;
    free (slot->entry);
    slot->entry = NULL;
}

//  Mark the slots done as released.
static void
s_release_all_done (s_request_t *req)
{
    for (size_t i = 0; i < req->nslots; i++)
        if (req->slots[i].state == S_DONE)
            req->slots[i].state = S_RELEASED;
}

//  The plain merged format: broadcast_targets, bn_replies (each slot's
//  entry as it was kept, as text) and each slot's buffers in slot order.
//  Returns the first failure's content, or NULL.
static json_t *
s_merge_plain (s_request_t *req, bn_msg_t *out, bn_merged_writer_t *writer)
{
    json_t *failure = NULL;
    for (size_t i = 0; i < req->nslots; i++) {
        s_slot_t *slot = &req->slots[i];
        if (slot->state != S_DONE)
            continue;
        char lost[96];
        if (!slot->entry) {
            //  its entry could not be made (out of memory)
            snprintf (lost, sizeof lost,
                      "{\"status\":\"error\",\"started\":null,"
                      "\"completed\":null,\"nbuffers\":%zu,\"content\":{}}",
                      slot->nbuffers);
            slot->ok = false;
        }
        bn_merged_writer_add (writer, slot->uuid, slot->eid,
                              slot->entry ? slot->entry : lost,
                              slot->entry ? slot->entry_len : strlen (lost));
        if (!slot->ok && !failure) {
            const char *content = NULL;
            size_t len = 0;
            if (slot->entry && bn_jscan_value (slot->entry, slot->entry_len,
                                               "content", &content, &len) == 0)
                failure = bn_merged_json ((bn_jscan_slice_t){content, len});
            if (!json_is_object (failure)) {
                json_decref (failure);
                failure = json_object ();
            }
        }
        for (size_t b = 0; b < slot->nbuffers; b++)
            bn_msg_add_buffer_msg (out, &slot->buffers[b]);
        s_slot_release (slot);
    }
    return failure;
}

//  The grouped format: bn_groups and each group's buffers once. Returns a
//  copy of the first failing group's content, or NULL.
static json_t *
s_merge_groups (s_request_t *req, bn_msg_t *out, json_t *metadata)
{
    json_t *failure = NULL;
    json_t *groups = bn_group_json (req->group);
    bn_group_add_buffers (req->group, out);
    size_t i;
    json_t *group;
    json_array_foreach (groups, i, group)
    {
        const char *status =
            json_string_value (json_object_get (group, "status"));
        if (!failure && status && !streq (status, BN_STATUS_OK))
            failure = json_object_get (group, "content");
    }
    json_object_set_new (metadata, BN_BCAST_GROUPS,
                         groups ? groups : json_array ());
    bn_group_clear (req->group);
    s_release_all_done (req);
    return failure ? json_deep_copy (failure) : NULL;
}

//  The reduced format: bn_reduced and the value as one serialized object.
static json_t *
s_merge_reduced (s_request_t *req, bn_msg_t *out, json_t *metadata)
{
    json_t *reduced = bn_reduce_json (req->reduce);
    bn_reduce_add_buffers (req->reduce, out);
    json_t *failure = bn_reduce_error (req->reduce);
    if (!failure && bn_reduce_nfailed (req->reduce))
        failure = bn_reduce_failed_content (req->reduce, 0);
    json_object_set_new (metadata, BN_BCAST_REDUCED,
                         reduced ? reduced : json_object ());
    s_release_all_done (req);
    return failure ? json_deep_copy (failure) : NULL;
}

//  The keys a merging node sets in its merged message's metadata, beside
//  its entries: the last reply's are left out of its base.
static const char *const s_set_here[] = {
    BN_BCAST_TARGETS,      BN_BCAST_REPLIES,
    BN_BCAST_GROUPS,       BN_BCAST_REDUCED,
    BN_BCAST_HOPS,         BN_BCAST_PARTIAL,
    BN_MD_IS_BROADCAST,    BN_MD_IS_COALESCING,
    BN_MD_ORIGINAL_MSG_ID, "status"};

//  Write the plain shape's metadata: base (text: "{" and members), the
//  keys of set (an object) and writer's entries. Returns 0 or -1.
static int
s_finish_plain (bn_merged_writer_t *writer, const char *base, size_t base_len,
                json_t *set, bn_msg_t *out)
{
    size_t set_len;
    char *keys = bn_jdump (set, &set_len);
    char *head = keys ? malloc (base_len + set_len) : NULL;
    int rc = -1;
    if (head && set_len >= 2) {
        //  base, a comma, set's members without its braces
        size_t len = base_len;
        memcpy (head, base, base_len);
        if (base_len > 1 && set_len > 2)
            head[len++] = ',';
        memcpy (head + len, keys + 1, set_len - 2);
        len += set_len - 2;
        rc = bn_merged_writer_finish_text (writer, head, len, out);
    }
    free (keys);
    free (head);
    return rc;
}

//  An inner node's merged message would say what the last child's merged
//  message says when that message's slots are all it releases and the
//  node has nothing of its own to add (no bn_partial, no hops, no
//  reduction or groups): the child's message then goes on as it came,
//  with its buffers back and the client's idents. Merging it again would
//  write the same metadata and content, and sign them again. True if
//  sent.
static bool
s_pass_through (s_node_t *self, s_request_t *req, int partial)
{
    bn_msg_t *last = req->last;
    if (self->leaf || !last || !req->last_spliced || req->reduce ||
        req->group || req->timestamps || partial >= 0 ||
        req->last_whole != req->unreleased ||
        s_part_has (last, BN_PART_METADATA, "\"" BN_BCAST_PARTIAL "\"") ||
        s_part_has (last, BN_PART_METADATA, "\"" BN_BCAST_HOPS "\""))
        return false;
    bn_msg_t *out = bn_msg_dup (last);
    if (!out || bn_msg_copy_idents (out, req->request) != 0) {
        bn_msg_destroy (&out);
        return false;
    }
    int rc = 0;
    for (size_t i = 0; i < req->nslots && rc == 0; i++) {
        s_slot_t *slot = &req->slots[i];
        for (size_t b = 0; slot->state == S_DONE && b < slot->nbuffers; b++)
            rc = bn_msg_add_buffer_msg (out, &slot->buffers[b]);
    }
    if (rc != 0) {
        bn_msg_destroy (&out);
        return false;
    }
    for (size_t i = 0; i < req->nslots; i++) {
        s_slot_t *slot = &req->slots[i];
        if (slot->state == S_DONE)
            s_slot_release (slot);
    }
    req->unreleased = 0;
    self->stats.merged++;
    self->stats.passed++;
    s_send_up (self, &out);
    return true;
}

//  A merged message of the slots done and not yet released; partial
//  is -1 (no bn_partial key), 0 or 1.
static void
s_send_merged (s_node_t *self, s_request_t *req, int partial)
{
    if (req->unreleased == 0 || s_pass_through (self, req, partial))
        return;
    //  built on the last reply; with none (every slot failed here), a
    //  reply to the request
    bn_msg_t *out = NULL;
    if (req->last)
        out = bn_msg_dup (req->last);
    else {
        char type[128];
        if (bn_wire_reply_type (bn_msg_type (req->request), type,
                                sizeof type) == 0)
            out = bn_msg_new_reply (self->session, req->request, type);
    }
    if (!out) {
        self->stats.send_failed++;
        return;
    }
    bn_msg_clear_buffers (out);
    bn_msg_copy_idents (out, req->request);
    //  the last reply's metadata without its entries (a child's spliced
    //  lists are not parsed): for the plain shape its text, without the
    //  keys this node sets, which metadata then holds alone
    bool plain = !req->reduce && !req->group;
    char *base = NULL;
    size_t base_len = 0;
    json_t *metadata = NULL;
    if (plain && req->last)
        base = bn_merged_base_text (req->last, req->last_spliced, s_set_here,
                                    sizeof s_set_here / sizeof s_set_here[0],
                                    &base_len);
    if (plain && !base && (base = strdup ("{")))
        base_len = 1;
    if (!plain && req->last)
        metadata = bn_merged_base (req->last, req->last_spliced);
    if (!metadata)
        metadata = json_object ();
    json_object_del (metadata, BN_BCAST_HOPS);
    bn_merged_writer_t *writer = plain ? bn_merged_writer_new () : NULL;
    if (!metadata || (plain && (!writer || !base))) {
        json_decref (metadata);
        bn_merged_writer_destroy (&writer);
        free (base);
        bn_msg_destroy (&out);
        self->stats.send_failed++;
        return;
    }
    json_t *failure = req->reduce  ? s_merge_reduced (req, out, metadata)
                      : req->group ? s_merge_groups (req, out, metadata)
                                   : s_merge_plain (req, out, writer);
    req->unreleased = 0;
    bn_wire_mark_broadcast (metadata, req->key, req->coalescing);
    if (partial >= 0)
        json_object_set_new (metadata, BN_BCAST_PARTIAL,
                             json_boolean (partial));
    else
        json_object_del (metadata, BN_BCAST_PARTIAL);
    if (req->timestamps) {
        json_t *hops = req->hops ? req->hops : json_array ();
        req->hops = NULL;
        json_array_append_new (hops, s_hop (self, req));
        json_object_set_new (metadata, BN_BCAST_HOPS, hops);
    }
    if (failure) {
        json_object_set_new (metadata, "status", json_string ("error"));
        bn_msg_set_content (out, failure);
    } else {
        json_object_set_new (metadata, "status", json_string (BN_STATUS_OK));
        if (!req->last ||
            !s_part_has (req->last, BN_PART_CONTENT, "\"" BN_STATUS_OK "\""))
            bn_msg_set_content (out, json_pack ("{s:s}", "status", "ok"));
    }
    int rc = 0;
    if (writer)
        rc = s_finish_plain (writer, base, base_len, metadata, out);
    else
        bn_msg_set_metadata (out, json_incref (metadata));
    json_decref (metadata);
    free (base);
    bn_merged_writer_destroy (&writer);
    if (rc != 0) {
        bn_msg_destroy (&out);
        self->stats.send_failed++;
        return;
    }
    self->stats.merged++;
    s_send_up (self, &out);
}

//  An EngineError reply of one engine, for forwarding levels.
static void
s_send_engine_error (s_node_t *self, s_request_t *req, s_slot_t *slot,
                     json_t *content)
{
    bn_msg_t *reply = bn_relay_error_reply (self->session, req->request, NULL,
                                            slot->uuid, json_incref (content));
    if (!reply) {
        self->stats.send_failed++;
        return;
    }
    json_t *parent = bn_msg_parent (reply);
    char *msg_id = zsys_sprintf ("%s_%s", req->key, slot->uuid);
    json_t *md = bn_msg_metadata (reply);
    if (parent && msg_id && md) {
        json_object_set_new (parent, "msg_id", json_string (msg_id));
        bn_msg_touch (reply, BN_PART_PARENT);
        bn_wire_mark_broadcast (md, req->key, req->coalescing);
        bn_msg_touch (reply, BN_PART_METADATA);
    }
    zstr_free (&msg_id);
    s_send_up (self, &reply);
}

//  Fail a pending slot with an EngineError whose text is why.
static void
s_fail_slot (s_node_t *self, s_request_t *req, s_slot_t *slot, const char *why)
{
    assert (slot->state == S_PENDING);
    json_t *content = bn_wire_errorf ("EngineError", NULL, "engine %d (%s): %s",
                                      slot->eid, slot->uuid, why);
    if (req->merge && (req->group || req->reduce)) {
        if (req->group) {
            bn_group_reply_t reply = {.status = "error",
                                      .ename = "EngineError",
                                      .evalue = json_string_value (
                                          json_object_get (content, "evalue")),
                                      .content = content};
            bn_group_add (req->group, slot->eid, &reply);
        } else {
            bn_idset_t *one = bn_idset_new ();
            if (one && bn_idset_add (one, slot->eid) == 0)
                bn_reduce_add_failure (req->reduce, one, content);
            bn_idset_destroy (&one);
        }
        req->unreleased++;
    } else if (req->merge) {
        char date[BN_DATE_SIZE];
        bn_session_date (date);
        slot->entry = bn_merged_entry (BN_STATUS_ERROR, NULL, date, 1, content,
                                       NULL, NULL);
        slot->entry_len = slot->entry ? strlen (slot->entry) : 0;
        s_slot_take_buffers (slot, NULL, 0, 0);
        slot->ok = false;
        req->unreleased++;
    } else
        s_send_engine_error (self, req, slot, content);
    json_decref (content);
    slot->state = S_DONE;
    if (!req->merge)
        slot->state = S_RELEASED;
    req->owed--;
}

//  After slots were filled: send what the release mode says, and finish
//  the request when nothing is owed.
static void
s_progress (s_node_t *self, s_request_t *req)
{
    if (req->merge) {
        bool partial = req->release != S_RELEASE_ALL;
        if (req->owed == 0)
            s_send_merged (self, req, partial ? 0 : -1);
        else if (req->release == S_RELEASE_NONE)
            s_send_merged (self, req, 1);
    }
    if (req->owed == 0)
        s_request_done (self, req);
}

static int s_on_up (zloop_t *loop, zsock_t *sock, void *arg);

static void
s_request_done (s_node_t *self, s_request_t *req)
{
    if (req->timed)
        zlistx_delete (self->timed, req->timed);
    req->timed = NULL;
    zhashx_delete (self->requests, req->key);
    //  room again: read requests (those that waited are still queued)
    if (self->paused && zhashx_size (self->requests) < self->max_requests) {
        self->paused = false;
        if (zloop_reader (self->loop, self->up, s_on_up, self) != 0)
            bn_log_error ("%s: cannot read requests again", self->id);
    }
}

//  --------------------------------------------------------------------------
//  Requests coming down

//  Reply to a request that cannot be routed with one error reply
//  (found by the client through original_msg_id when coalescing).
static void
s_refuse (s_node_t *self, bn_msg_t *request, const char *original,
          bool coalescing, const char *ename, const char *evalue)
{
    bn_msg_t *reply =
        bn_relay_error_reply (self->session, request, NULL, NULL,
                              bn_wire_error (ename, evalue, NULL, NULL));
    if (!reply) {
        self->stats.send_failed++;
        return;
    }
    json_t *md = bn_msg_metadata (reply);
    bn_wire_mark_broadcast (md, original, coalescing);
    if (coalescing)
        json_object_set_new (md, BN_BCAST_TARGETS, json_array ());
    bn_msg_touch (reply, BN_PART_METADATA);
    s_send_up (self, &reply);
}

//  This level's reply mode: bn_levels[level] (past the end: the last
//  entry), else merge when coalescing.
static bool
s_level_merges (s_node_t *self, json_t *metadata, bool coalescing)
{
    json_t *levels = json_object_get (metadata, BN_BCAST_LEVELS);
    size_t n = json_is_array (levels) ? json_array_size (levels) : 0;
    if (n == 0)
        return coalescing;
    size_t at = (size_t)self->level < n ? (size_t)self->level : n - 1;
    const char *mode = json_string_value (json_array_get (levels, at));
    return mode ? strcmp (mode, "forward") != 0 : coalescing;
}

static int s_on_tick (zloop_t *loop, int timer_id, void *arg);

static void
s_timed_add (s_node_t *self, s_request_t *req)
{
    req->timed = zlistx_add_end (self->timed, req);
    if (req->timed && self->timer < 0)
        self->timer = zloop_timer (self->loop, S_TICK, 0, s_on_tick, self);
}

//  A request's targets, read from its metadata's text without a JSON
//  tree: each [uuid, eid] pair's values, and its raw text for the
//  children's lists (bn_target_t.ref points at it).
typedef struct {
    bn_target_t *list;     //  n targets
    bn_jscan_slice_t *raw; //  each pair's text
    char *uuids;           //  their uuids, each with its NUL
    size_t n;
} s_targets_t;

static void
s_targets_free (s_targets_t *targets)
{
    free (targets->list);
    free (targets->raw);
    free (targets->uuids);
    memset (targets, 0, sizeof *targets);
}

//  A JSON integer's text (no fraction, no exponent, no leading zero) from
//  0 to INT32_MAX into *value; -1 if it is not that.
static int
s_eid (bn_jscan_slice_t text, int *value)
{
    const char *p = text.data;
    size_t size = text.size;
    if (size == 2 && p[0] == '-' && p[1] == '0') {
        *value = 0; //  -0 is 0, as jansson reads it
        return 0;
    }
    if (size == 0 || size > 10 || (size > 1 && p[0] == '0'))
        return -1;
    int64_t number = 0;
    for (size_t i = 0; i < size; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        number = number * 10 + (p[i] - '0');
    }
    if (number > INT32_MAX)
        return -1;
    *value = (int)number;
    return 0;
}

//  Read text, the raw value of metadata.targets: an array of [uuid, eid]
//  pairs (a string and an integer from 0 to INT32_MAX, then anything).
//  Returns 0, or -1 if it is not that or memory runs out.
static int
s_targets_read (bn_jscan_slice_t text, s_targets_t *targets)
{
    memset (targets, 0, sizeof *targets);
    if (!text.data || text.size < 2 || text.data[0] != '[')
        return -1;
    const char *end = text.data + text.size;
    const char *at = text.data + 1;
    bn_jscan_slice_t pair;
    size_t n = 0;
    int rc;
    while ((rc = bn_jscan_next (&at, end, &pair)) == 1)
        n++;
    if (rc != 0)
        return -1;
    targets->list = calloc (n ? n : 1, sizeof (bn_target_t));
    targets->raw = calloc (n ? n : 1, sizeof (bn_jscan_slice_t));
    targets->uuids = malloc (text.size);
    if (!targets->list || !targets->raw || !targets->uuids) {
        s_targets_free (targets);
        return -1;
    }
    char *next = targets->uuids;
    at = text.data + 1;
    for (size_t i = 0; i < n; i++) {
        bn_jscan_next (&at, end, &pair);
        bn_jscan_slice_t uuid, eid;
        const char *in = pair.data + 1;
        const char *in_end = pair.data + pair.size;
        int len =
            pair.data[0] == '[' && bn_jscan_next (&in, in_end, &uuid) == 1 &&
                    bn_jscan_next (&in, in_end, &eid) == 1
                ? bn_jscan_unescape (
                      uuid, next, (size_t)(targets->uuids + text.size - next))
                : -1;
        if (len < 0 ||
            !bn_utf8_valid ((const unsigned char *)next, (size_t)len) ||
            s_eid (eid, &targets->list[i].eid) != 0) {
            s_targets_free (targets);
            return -1;
        }
        targets->list[i].uuid = next;
        targets->list[i].ref = &targets->raw[i];
        targets->raw[i] = pair;
        next += len + 1;
    }
    targets->n = n;
    return 0;
}

//  A request's metadata as a JSON object without its targets, which are
//  read from the text into *targets (by s_targets_read: -1 in *rc when
//  they are not a list of pairs). NULL if the metadata is not a JSON
//  object.
static json_t *
s_metadata_read (bn_msg_t *msg, s_targets_t *targets, int *rc)
{
    static const char *const keys[] = {"targets"};
    bn_jscan_slice_t value;
    size_t size;
    const char *text =
        (const char *)bn_msg_part_data (msg, BN_PART_METADATA, &size);
    memset (targets, 0, sizeof *targets);
    *rc = -1;
    if (!text || bn_jscan_keys (text, size, keys, 1, &value) != 0)
        return NULL;
    json_t *metadata = NULL;
    if (value.data) {
        //  the rest parsed by jansson, the list's place taken by a 0
        size_t head = (size_t)(value.data - text);
        size_t tail = size - head - value.size;
        char *rest = malloc (head + 1 + tail);
        if (rest) {
            memcpy (rest, text, head);
            rest[head] = '0';
            memcpy (rest + head + 1, value.data + value.size, tail);
            metadata = json_loadb (rest, head + 1 + tail, 0, NULL);
            free (rest);
        }
    } else
        metadata = json_loadb (text, size, 0, NULL);
    if (!json_is_object (metadata)) {
        json_decref (metadata);
        return NULL;
    }
    json_object_del (metadata, "targets");
    *rc = s_targets_read (value, targets);
    return metadata;
}

//  Process what waits on the pipe without blocking (engine registrations
//  that were sent before the request we are routing); the losses read
//  wait until the request is dispatched.
static void s_drain_pipe (s_node_t *self);

//  The per-engine header: the request's header as it came with its
//  msg_id's value replaced, written around that value so that no JSON is
//  built per engine. Returns 0 with *text_p the header's text (the
//  request's own, valid while it is unchanged), *size its bytes, *at where
//  the value's characters start (past its opening quote) and *marker_len
//  how many there are; -1 if the header has no string msg_id.
static int
s_header_template (bn_msg_t *request, const char **text_p, size_t *size,
                   size_t *at, size_t *marker_len)
{
    size_t len;
    const char *header = bn_msg_part_data (request, BN_PART_HEADER, &len);
    const char *value;
    size_t value_len;
    if (!header ||
        bn_jscan_value (header, len, "msg_id", &value, &value_len) != 0 ||
        value_len < 2 || *value != '"')
        return -1;
    *text_p = header;
    *size = len;
    *at = (size_t)(value - header) + 1;
    *marker_len = value_len - 2;
    return 0;
}

//  Send a copy of a held request's copy to engine uuid (bn_holdq_send_fn);
//  0 also when its slot no longer waits for it.
static int
s_send_held (void *arg, const char *uuid, void *item)
{
    s_node_t *self = (s_node_t *)arg;
    s_held_t *held = (s_held_t *)item;
    s_request_t *req = (s_request_t *)zhashx_lookup (self->requests, held->key);
    s_slot_t *slot = req ? s_slot_of (req, uuid) : NULL;
    if (!slot || slot->state != S_PENDING ||
        !zhashx_lookup (self->engines, uuid))
        return 0;
    bn_msg_t *copy = bn_msg_dup (held->msg);
    if (!copy)
        return ENOMEM;
    if (bn_msg_send_flags (&copy, self->down_handle, self->session,
                           ZMQ_DONTWAIT) != 0)
        return errno;
    self->stats.to_engines++;
    return 0;
}

//  A held copy cannot reach engine uuid: its slot fails (bn_holdq_fail_fn).
static void
s_fail_held (void *arg, const char *uuid, void *item, bn_holdq_why_t why,
             int error)
{
    s_node_t *self = (s_node_t *)arg;
    s_held_t *held = (s_held_t *)item;
    s_request_t *req = (s_request_t *)zhashx_lookup (self->requests, held->key);
    s_slot_t *slot = req ? s_slot_of (req, uuid) : NULL;
    if (!slot || slot->state != S_PENDING)
        return;
    self->stats.send_failed++;
    s_fail_slot (self, req, slot,
                 why == BN_HOLDQ_FULL ? "too many requests wait for it to "
                                        "connect to its leaf"
                 : why == BN_HOLDQ_EXPIRED || error == EHOSTUNREACH
                     ? "not connected to its leaf"
                     : "the request could not be sent");
    if (!self->dispatching)
        s_progress (self, req);
}

//  Send a request's copy (taken) to its engine; one that cannot reach an
//  engine still connecting is held, any other failure fails the slot.
static void
s_send_engine (s_node_t *self, s_request_t *req, s_slot_t *slot,
               bn_msg_t **copy_p)
{
    if (bn_holdq_waits (self->holdq, slot->uuid)) {
        s_held_t *held = calloc (1, sizeof *held);
        char *key = held ? strdup (req->key) : NULL;
        if (!key) {
            free (held);
            bn_msg_destroy (copy_p);
            self->stats.send_failed++;
            s_fail_slot (self, req, slot, "the request could not be sent");
            return;
        }
        held->key = key;
        held->msg = *copy_p;
        *copy_p = NULL;
        self->dispatching = true;
        if (bn_holdq_send (self->holdq, slot->uuid, held) == 1)
            self->stats.held++;
        self->dispatching = false;
        return;
    }
    if (bn_msg_send_flags (copy_p, self->down_handle, self->session,
                           ZMQ_DONTWAIT) == 0) {
        self->stats.to_engines++;
        return;
    }
    int error = errno;
    self->stats.send_failed++;
    s_fail_slot (self, req, slot,
                 error == EHOSTUNREACH ? "not connected to its leaf"
                                       : "the request could not be sent");
}

static void
s_dispatch_engines (s_node_t *self, s_request_t *req, bn_msg_t *request,
                    json_t *metadata)
{
    bool drained = false;
    for (size_t i = 0; i < req->nslots; i++) {
        s_slot_t *slot = &req->slots[i];
        //  an engine of a host node is its leaf's to serve
        if (slot->child >= 0)
            continue;
        if (!drained && !zhashx_lookup (self->engines, slot->uuid)) {
            s_drain_pipe (self);
            drained = true;
        }
    }
    //  what every engine's copy shares: the metadata (read without its
    //  targets, s_metadata_read) less the deadline
    json_t *md = json_copy (metadata);
    json_object_del (md, S_DEADLINE_LEFT);
    json_object_set_new (md, BN_MD_ORIGINAL_MSG_ID, json_string (req->key));
    char *md_text = md ? bn_jdump (md, NULL) : NULL;
    json_decref (md);
    const char *header = NULL;
    size_t header_len = 0, at = 0, marker = 0;
    zmq_msg_t md_frame;
    zmq_msg_init (&md_frame);
    if (!md_text ||
        s_header_template (request, &header, &header_len, &at, &marker) != 0 ||
        zmq_msg_init_size (&md_frame, strlen (md_text)) != 0) {
        free (md_text);
        zmq_msg_close (&md_frame);
        for (size_t i = 0; i < req->nslots; i++)
            if (req->slots[i].state == S_PENDING) {
                self->stats.send_failed++;
                s_fail_slot (self, req, &req->slots[i],
                             "the request could not be sent");
            }
        return;
    }
    memcpy (zmq_msg_data (&md_frame), md_text, strlen (md_text));
    free (md_text);
    const char *suffix = header + at + marker;
    size_t suffix_len = header_len - at - marker;
    size_t key_len = strlen (req->key);
    bn_msg_t *proto = bn_msg_dup (request);
    if (proto)
        bn_msg_set_part_frame (proto, BN_PART_METADATA, &md_frame);
    zmq_msg_close (&md_frame);
    char stack[1024];
    for (size_t i = 0; i < req->nslots; i++) {
        s_slot_t *slot = &req->slots[i];
        if (slot->state != S_PENDING || slot->child >= 0)
            continue;
        if (!zhashx_lookup (self->engines, slot->uuid)) {
            self->stats.unknown_engine++;
            s_fail_slot (self, req, slot, "not registered");
            continue;
        }
        size_t uuid_len = strlen (slot->uuid);
        size_t need = header_len - marker + key_len + 1 + uuid_len;
        char *text = need <= sizeof stack ? stack : malloc (need);
        bn_msg_t *copy = proto ? bn_msg_dup (proto) : NULL;
        int rc = text && copy ? 0 : -1;
        if (rc == 0) {
            //  uuids are printable ASCII (the hub checks); only quote and
            //  backslash would need escaping, and then we let jansson do it
            bool plain =
                !strpbrk (slot->uuid, "\"\\") && !strpbrk (req->key, "\"\\");
            if (plain) {
                char *p = text;
                memcpy (p, header, at);
                p += at;
                memcpy (p, req->key, key_len);
                p += key_len;
                *p++ = '_';
                memcpy (p, slot->uuid, uuid_len);
                p += uuid_len;
                memcpy (p, suffix, suffix_len);
                p += suffix_len;
                rc = bn_msg_set_part_raw (copy, BN_PART_HEADER, text,
                                          (size_t)(p - text));
            } else {
                char *id = zsys_sprintf ("%s_%s", req->key, slot->uuid);
                rc = id ? bn_msg_set_msg_id (copy, id) : -1;
                zstr_free (&id);
            }
        }
        if (text != stack)
            free (text);
        if (rc == 0)
            rc = bn_msg_push_ident (copy, slot->uuid, uuid_len);
        const char *via =
            rc == 0 && self->via && zhashx_size (self->via)
                ? (const char *)zhashx_lookup (self->via, slot->uuid)
                : NULL;
        if (via)
            rc = bn_msg_push_ident (copy, via, strlen (via));
        if (rc == 0)
            s_send_engine (self, req, slot, &copy);
        else {
            bn_msg_destroy (&copy);
            self->stats.send_failed++;
            s_fail_slot (self, req, slot, "the request could not be sent");
        }
    }
    bn_msg_destroy (&proto);
}

//  Set msg's metadata to the text of md (an object without targets) with
//  "targets" the list (an open "[" and the pairs' text). Returns 0 or -1.
static int
s_set_metadata_with (bn_msg_t *msg, json_t *md, zchunk_t *list)
{
    size_t size;
    char *text = md ? bn_jdump (md, &size) : NULL;
    zchunk_t *chunk = text && size >= 2 ? zchunk_new (text, size - 1) : NULL;
    free (text);
    if (!chunk)
        return -1;
    if (size > 2)
        zchunk_extend (chunk, ",", 1);
    zchunk_extend (chunk, "\"targets\":", 10);
    zchunk_extend (chunk, zchunk_data (list), zchunk_size (list));
    zchunk_extend (chunk, "]}", 2);
    int rc = bn_msg_set_part_raw (msg, BN_PART_METADATA, zchunk_data (chunk),
                                  zchunk_size (chunk));
    zchunk_destroy (&chunk);
    return rc;
}

//  Send each child the request with its own targets: an inner node's
//  children, or the host nodes' leaves below a leaf, whose deadline comes a
//  step earlier than the leaf's.
static void
s_dispatch_children (s_node_t *self, s_request_t *req, bn_msg_t *request,
                     json_t *metadata, zchunk_t **lists, size_t count)
{
    int64_t left = 0;
    if (req->deadline) {
        left =
            req->leaf_at - (self->leaf ? S_DEADLINE_STEP : 0) - zclock_mono ();
        if (left < 0)
            left = 0;
    }
    for (size_t c = 0; c < count; c++) {
        if (!lists[c])
            continue;
        const char *child =
            self->leaf
                ? self->hosts[c]
                : bn_topology_routing_id (
                      self->topology,
                      bn_topology_child (self->topology, self->node, (int)c));
        json_t *md = json_copy (metadata);
        bn_msg_t *copy = md ? bn_msg_dup (request) : NULL;
        int rc = copy ? 0 : -1;
        if (rc == 0) {
            json_object_set_new (md, BN_MD_ORIGINAL_MSG_ID,
                                 json_string (req->key));
            if (req->deadline)
                json_object_set_new (md, S_DEADLINE_LEFT, json_integer (left));
            rc = s_set_metadata_with (copy, md, lists[c]);
            if (rc == 0)
                rc = bn_msg_push_ident (copy, child, strlen (child));
        }
        json_decref (md);
        if (rc == 0)
            rc = bn_msg_send_flags (&copy, self->down_handle, self->session,
                                    ZMQ_DONTWAIT);
        bn_msg_destroy (&copy);
        if (rc == 0) {
            self->stats.to_children++;
            continue;
        }
        self->stats.send_failed++;
        for (size_t i = 0; i < req->nslots; i++)
            if (req->slots[i].child == (int)c &&
                req->slots[i].state == S_PENDING)
                s_fail_slot (self, req, &req->slots[i],
                             "its tree node could not be reached");
    }
}

//  Add one slot to req for target (child: the child serving it, -1 at a
//  leaf or for a target no child serves); a target named twice is served
//  once. An inner node's lists[child] gets the target.
static void
s_add_slot (s_node_t *self, s_request_t *req, const bn_target_t *target,
            int child, zchunk_t **lists)
{
    if (zhashx_lookup (req->by_uuid, target->uuid))
        return;
    s_slot_t *slot = &req->slots[req->nslots];
    slot->uuid = strdup (target->uuid);
    slot->eid = target->eid;
    slot->child = child;
    slot->state = S_PENDING;
    if (!slot->uuid)
        return;
    req->nslots++;
    req->owed++;
    zhashx_insert (req->by_uuid, slot->uuid, (void *)(uintptr_t)req->nslots);
    if (req->by_eid) {
        char eid[16];
        snprintf (eid, sizeof eid, "%d", slot->eid);
        zhashx_insert (req->by_eid, eid, (void *)(uintptr_t)req->nslots);
    }
    if (child >= 0) {
        //  the pair as the request wrote it
        const bn_jscan_slice_t *pair = (const bn_jscan_slice_t *)target->ref;
        if (!lists[child])
            lists[child] = zchunk_new ("[", 1);
        else
            zchunk_extend (lists[child], ",", 1);
        if (lists[child])
            zchunk_extend (lists[child], pair->data, pair->size);
    }
}

//  The slots of req, one per target in tree order: child by child as the
//  topology splits them (the client's order within a child), then the
//  targets no child serves. Returns -1 if out of memory.
//  True if the engine eid, served by leaf (-1: by eid % leaves), is in this
//  node's subtree.
static bool
s_serves (s_node_t *self, int eid, int leaf)
{
    return leaf >= 0
               ? bn_topology_serves_leaf (self->topology, self->node, leaf)
               : bn_topology_serves (self->topology, self->node, eid);
}

//  1 + the index of host node leaf id among this leaf's children, or 0;
//  with add, one not known yet becomes the next child (0 if out of
//  memory).
static size_t
s_host_index (s_node_t *self, const char *id, bool add)
{
    for (size_t i = 0; i < self->nhosts; i++)
        if (streq (self->hosts[i], id))
            return i + 1;
    if (!add)
        return 0;
    char **hosts = realloc (self->hosts, (self->nhosts + 1) * sizeof (char *));
    if (!hosts)
        return 0;
    self->hosts = hosts;
    if (!(hosts[self->nhosts] = strdup (id)))
        return 0;
    return ++self->nhosts;
}

//  The step toward engine eid's leaf at level (bn_topology_leaf_step), or
//  -1.
static int
s_step (s_node_t *self, int eid, int level)
{
    return bn_topology_leaf_step (
        self->topology, bn_topology_engine_leaf (self->topology, eid), level);
}

//  Put the n targets of given in the order the tree folded into this node
//  would give them: the node where their ways down part merges them child
//  by child, the client's order within a child, and the nodes above it
//  pass its message on; the engines of no leaf last. scratch holds n
//  targets. Returns -1 if out of memory.
static int
s_order_folded (s_node_t *self, bn_target_t *given, size_t n,
                bn_target_t *scratch)
{
    //  the level where the ways part: the first where two steps differ
    int level = 0, steps = 0;
    for (; level < BN_TOPOLOGY_MAX_DEPTH; level++) {
        int first = -1, most = -1;
        bool parted = false;
        for (size_t i = 0; i < n; i++) {
            int step = s_step (self, given[i].eid, level);
            if (step < 0)
                continue;
            if (first < 0)
                first = step;
            parted |= step != first;
            if (step > most)
                most = step;
        }
        if (parted)
            steps = most + 1;
        if (parted || most < 0)
            break;
    }
    if (!steps)
        return 0; //  one leaf's engines: the client's order
    //  a stable counting sort by the step there: count, prefix-sum, place
    size_t inline_next[16] = {0};
    size_t *next = (size_t)steps + 2 <= 16
                       ? inline_next
                       : calloc ((size_t)steps + 2, sizeof (size_t));
    if (!next)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int step = s_step (self, given[i].eid, level);
        next[(step < 0 ? steps : step) + 1]++;
    }
    for (int step = 0; step < steps; step++)
        next[step + 1] += next[step];
    for (size_t i = 0; i < n; i++) {
        int step = s_step (self, given[i].eid, level);
        scratch[next[step < 0 ? steps : step]++] = given[i];
    }
    memcpy (given, scratch, n * sizeof (bn_target_t));
    if (next != inline_next)
        free (next);
    return 0;
}

static int
s_add_slots (s_node_t *self, s_request_t *req, s_targets_t *targets,
             zchunk_t **lists)
{
    size_t n = targets->n;
    size_t nchildren = self->nchildren;
    //  given, then the split (an inner node), then the children's offsets
    void *block = malloc ((n ? 2 * n : 1) * sizeof (bn_target_t) +
                          (nchildren + 1) * sizeof (size_t));
    if (!block)
        return -1;
    bn_target_t *given = (bn_target_t *)block;
    bn_target_t *split = given + n;
    size_t *offsets = (size_t *)(split + n);
    memcpy (given, targets->list, n * sizeof (bn_target_t));
    if (self->leaf) {
        //  the root of a folded tree serves every leaf
        if (bn_topology_folded (self->topology) &&
            s_order_folded (self, given, n, split) != 0) {
            free (block);
            return -1;
        }
        //  its engines, and those of the host nodes below it
        for (size_t i = 0; i < n; i++) {
            void *host = self->hosted && given[i].uuid
                             ? zhashx_lookup (self->hosted, given[i].uuid)
                             : NULL;
            s_add_slot (self, req, &given[i],
                        host ? (int)((uintptr_t)host - 1) : -1, lists);
        }
        free (block);
        return 0;
    }
    //  the leaf of each engine behind a host node, given and as split
    int *leaves = NULL;
    if (n && self->routes && zhashx_size (self->routes)) {
        leaves = malloc (2 * n * sizeof (int));
        if (!leaves) {
            free (block);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            char key[16];
            snprintf (key, sizeof key, "%d", given[i].eid);
            void *leaf = zhashx_lookup (self->routes, key);
            leaves[i] = leaf ? (int)((uintptr_t)leaf - 1) : -1;
        }
    }
    //  a parent splits by the same topology, so a target from elsewhere is
    //  rare: those go last, and the others are split
    size_t served = n;
    if (bn_topology_split_leaves (self->topology, self->node, given, leaves, n,
                                  split, offsets, NULL, 0) != 0) {
        int *moved = leaves ? leaves + n : NULL;
        size_t next = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < n; i++) {
                if (s_serves (self, given[i].eid, leaves ? leaves[i] : -1) !=
                    (pass == 0))
                    continue;
                if (moved)
                    moved[next] = leaves[i];
                split[next++] = given[i];
            }
            if (pass == 0)
                served = next;
        }
        memcpy (given, split, n * sizeof (bn_target_t));
        if (leaves)
            memcpy (leaves, moved, n * sizeof (int));
        bn_topology_split_leaves (self->topology, self->node, given, leaves,
                                  served, split, offsets, NULL, 0);
    }
    for (size_t c = 0; c < nchildren; c++)
        for (size_t i = offsets[c]; i < offsets[c + 1]; i++)
            s_add_slot (self, req, &split[i], (int)c, lists);
    for (size_t i = served; i < n; i++)
        s_add_slot (self, req, &given[i], -1, lists);
    free (leaves);
    free (block);
    return 0;
}

static void s_on_request_read (s_node_t *self, bn_msg_t *msg, json_t *metadata,
                               s_targets_t *targets, int targets_rc);

static void
s_on_request (s_node_t *self, bn_msg_t *msg)
{
    self->stats.requests++;
    bool root = self->level == 0;
    if (!self->up_trusted &&
        bn_msg_check (msg, self->session,
                      root ? BN_MSG_CHECK_REPLAY : BN_MSG_CHECK_SIGNATURE,
                      &self->stats.drops, "%s", self->id))
        return;
    s_targets_t targets;
    int targets_rc;
    json_t *metadata = s_metadata_read (msg, &targets, &targets_rc);
    s_on_request_read (self, msg, metadata, &targets, targets_rc);
    s_targets_free (&targets);
    json_decref (metadata);
}

//  s_on_request with the request's metadata (without targets) and targets
//  read (targets_rc -1 if they are not a list of pairs).
static void
s_on_request_read (s_node_t *self, bn_msg_t *msg, json_t *metadata,
                   s_targets_t *targets, int targets_rc)
{
    bool root = self->level == 0;
    const char *msg_id = bn_msg_id (msg);
    bool header = bn_msg_part_is_object (msg, BN_PART_HEADER);
    if (!metadata || !msg_id || !bn_msg_type (msg) || !header) {
        self->stats.bad_request++;
        //  (a root answers what it can: whoever passed the request on
        //  counts on an answer to each)
        if (root && msg_id && bn_msg_type (msg) && header)
            s_refuse (self, msg, msg_id, false, "ValueError",
                      "a broadcast request's metadata must be a JSON object");
        else
            bn_log_warn ("%s: dropped a request without header or metadata",
                         self->id);
        return;
    }
    json_t *original = json_object_get (metadata, BN_MD_ORIGINAL_MSG_ID);
    const char *key =
        json_is_string (original) ? json_string_value (original) : msg_id;
    bool coalescing =
        json_is_true (json_object_get (metadata, BN_MD_IS_COALESCING));
    if (targets_rc != 0) {
        self->stats.bad_request++;
        if (root)
            s_refuse (self, msg, key, coalescing, "ValueError",
                      "a broadcast request needs metadata.targets, a list of "
                      "[engine uuid, engine id] pairs");
        return;
    }
    if (zhashx_lookup (self->requests, key)) {
        self->stats.duplicate++;
        if (root)
            s_refuse (self, msg, key, coalescing, "KeyError",
                      "a broadcast request with this msg_id is in flight");
        return;
    }
    s_request_t *req = calloc (1, sizeof *req);
    if (!req) {
        self->stats.send_failed++;
        return;
    }
    req->key = strdup (key);
    req->coalescing = coalescing;
    req->merge = s_level_merges (self, metadata, coalescing);
    const char *release =
        json_string_value (json_object_get (metadata, BN_BCAST_RELEASE));
    req->release = release && streq (release, "window") ? S_RELEASE_WINDOW
                   : release && streq (release, "none") ? S_RELEASE_NONE
                                                        : S_RELEASE_ALL;
    req->timestamps =
        json_is_true (json_object_get (metadata, BN_BCAST_TIMESTAMPS));
    if (req->timestamps)
        bn_session_date (req->received);
    const char *reduce =
        json_string_value (json_object_get (metadata, BN_BCAST_REDUCE));
    char why[256] = "";
    if (reduce && req->merge)
        req->reduce = bn_reduce_new (self->reducers, reduce, why, sizeof why);
    else if (reduce && !bn_reducers_find (self->reducers, reduce))
        snprintf (why, sizeof why, "no reduction '%s' in this tree", reduce);
    if (*why) {
        self->stats.bad_request++;
        if (root)
            s_refuse (self, msg, key, coalescing, "ValueError", why);
        s_request_destroy (&req);
        return;
    }
    if (req->reduce)
        req->release = S_RELEASE_ALL; //  a partial value cannot be split
    else if (req->merge &&
             json_is_true (json_object_get (metadata, BN_BCAST_GROUP)))
        req->group = bn_group_new ();
    json_t *window = json_object_get (metadata, BN_BCAST_WINDOW);
    req->window_ms = json_is_integer (window) &&
                             json_integer_value (window) > 0 &&
                             json_integer_value (window) <= INT_MAX
                         ? (int)json_integer_value (window)
                         : 100;
    //  ms until the leaves act, from the client or the parent (a longer
    //  one is S_DEADLINE_MAX)
    int64_t left = -1;
    if (root) {
        json_t *ms = json_object_get (metadata, BN_BCAST_DEADLINE);
        double relative =
            json_is_number (ms) ? json_number_value (ms) : self->deadline_ms;
        if (relative > 0)
            left =
                relative < S_DEADLINE_MAX ? (int64_t)relative : S_DEADLINE_MAX;
    } else {
        json_t *ms = json_object_get (metadata, S_DEADLINE_LEFT);
        if (json_is_integer (ms))
            left = json_integer_value (ms) < 0 ? 0
                   : json_integer_value (ms) < S_DEADLINE_MAX
                       ? json_integer_value (ms)
                       : S_DEADLINE_MAX;
    }
    size_t n = targets->n;
    req->slots = n ? calloc (n, sizeof (s_slot_t)) : NULL;
    req->by_uuid = zhashx_new ();
    if (req->by_uuid) {
        //  keyed by the slots' own uuids, which live as long
        zhashx_set_key_duplicator (req->by_uuid, NULL);
        zhashx_set_key_destructor (req->by_uuid, NULL);
    }
    if (reduce || json_is_true (json_object_get (metadata, BN_BCAST_GROUP)))
        req->by_eid = zhashx_new ();
    req->request = bn_msg_dup (msg);
    //  what engines and host nodes were told before this request
    s_drain_pipe (self);
    //  the targets of each child (a leaf's: each host node's leaf)
    size_t nlists = self->leaf ? self->nhosts : self->nchildren;
    zchunk_t **lists = nlists ? calloc (nlists, sizeof (zchunk_t *)) : NULL;
    if (!req->key || (n && !req->slots) || !req->by_uuid || !req->request ||
        ((req->group || req->reduce) && !req->by_eid) ||
        (reduce && !req->by_eid) || (nlists && !lists) ||
        zhashx_insert (self->requests, req->key, req) != 0) {
        s_request_destroy (&req);
        free (lists);
        self->stats.send_failed++;
        return;
    }
    bn_msg_clear_buffers (req->request);
    if (s_add_slots (self, req, targets, lists) != 0) {
        zhashx_delete (self->requests, req->key);
        free (lists);
        self->stats.send_failed++;
        return;
    }
    if (left >= 0) {
        req->leaf_at = zclock_mono () + left;
        req->deadline =
            req->leaf_at +
            (int64_t)(bn_topology_depth (self->topology) - self->level) *
                S_DEADLINE_STEP;
    }
    if (req->merge && req->release == S_RELEASE_WINDOW)
        req->next_window = zclock_mono () + req->window_ms;
    if (req->deadline || (req->merge && req->release == S_RELEASE_WINDOW))
        s_timed_add (self, req);
    //  the hub records the request once it is on its way (see s_send_up),
    //  or before a reply to it that comes first
    if (root && self->monitor && self->monitor->request)
        self->unreported = msg;
    if (self->leaf)
        s_dispatch_engines (self, req, msg, metadata);
    if (lists)
        s_dispatch_children (self, req, msg, metadata, lists, nlists);
    s_report_request (self);
    //  targets no child serves cannot be reached from here
    for (size_t i = 0; i < req->nslots; i++)
        if (!self->leaf && req->slots[i].child < 0) {
            self->stats.unknown_engine++;
            s_fail_slot (self, req, &req->slots[i],
                         "not served by this broadcast tree");
        }
    if (lists)
        for (size_t c = 0; c < nlists; c++)
            zchunk_destroy (&lists[c]);
    free (lists);
    s_progress (self, req);
}

//  --------------------------------------------------------------------------
//  Replies coming up

//  What a node reads of a reply's metadata, in one walk.
enum { S_MD_ORIGINAL, S_MD_STATUS, S_MD_STARTED, S_MD_KEYS };

static void
s_metadata_scan (bn_msg_t *msg, bn_jscan_slice_t values[S_MD_KEYS])
{
    static const char *const keys[S_MD_KEYS] = {BN_MD_ORIGINAL_MSG_ID, "status",
                                                "started"};
    size_t size;
    const void *data = bn_msg_part_data (msg, BN_PART_METADATA, &size);
    if (bn_jscan_keys (data, size, keys, S_MD_KEYS, values) != 0)
        memset (values, 0, S_MD_KEYS * sizeof *values);
}

//  Store an engine's own reply in slot (merging level), its metadata's
//  values read (s_metadata_scan).
static void
s_fill_from_reply (s_slot_t *slot, bn_msg_t *msg,
                   const bn_jscan_slice_t in_metadata[S_MD_KEYS])
{
    //  one walk of the content
    static const char *const content_keys[] = {"status", "bn_stdout",
                                               "bn_stderr"};
    bn_jscan_slice_t in_content[3];
    size_t size;
    const void *data = bn_msg_part_data (msg, BN_PART_CONTENT, &size);
    if (bn_jscan_keys (data, size, content_keys, 3, in_content) != 0)
        memset (in_content, 0, sizeof in_content);
    char status[64], started[64];
    const char *st = s_slice_string (in_content[0], status, sizeof status);
    if (!st)
        st = s_slice_string (in_metadata[S_MD_STATUS], status, sizeof status);
    slot->ok = st && streq (st, BN_STATUS_OK);
    const char *s_started =
        s_slice_string (in_metadata[S_MD_STARTED], started, sizeof started);
    const char *s_date = bn_msg_date (msg);
    size_t nbuffers = slot->ok ? bn_msg_nbuffers (msg) : 1;
    bool output = s_has_output (in_content[1]) || s_has_output (in_content[2]);
    //  the common case, an ok reply without output, needs no JSON tree
    json_t *content = !slot->ok || output ? bn_msg_content (msg) : NULL;
    const char *out = NULL, *err = NULL;
    if (output) {
        out = json_string_value (json_object_get (content, "bn_stdout"));
        err = json_string_value (json_object_get (content, "bn_stderr"));
    }
    slot->entry =
        bn_merged_entry (st ? st : BN_STATUS_ERROR, s_started, s_date, nbuffers,
                         slot->ok ? NULL : content, out, err);
    slot->entry_len = slot->entry ? strlen (slot->entry) : 0;
    if (slot->ok)
        s_slot_take_buffers (slot, msg, 0, nbuffers);
    else
        s_slot_take_buffers (slot, NULL, 0, 0);
}

//  One entry of a child's merged message, read and checked before any
//  slot changes.
typedef struct {
    s_slot_t *slot;        //  the slot it fills, or NULL (late)
    bn_jscan_slice_t text; //  its bn_replies entry, or none (7.1.0)
    bool ok;               //  its status is "ok"
    bool sized;            //  it says how many buffers it has
    size_t first;          //  its first buffer
    size_t nbuffers;       //  its buffers
} s_piece_t;

//  A child's merged message of the targets shape: fill (merging) or
//  release (forwarding) the slots it names, sharing its buffers. Returns
//  the number of slots filled, -1 with the reason in err if the message is
//  malformed (then nothing changed).
static int
s_take_merged (s_node_t *self, s_request_t *req, bn_msg_t *msg, char *err,
               size_t errsize, bool *spliced, bool *whole)
{
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    size_t count = 0, cap = 16;
    s_piece_t *pieces = malloc (cap * sizeof *pieces);
    if (!reader || !pieces) {
        bn_merged_reader_destroy (&reader);
        free (pieces);
        snprintf (err, errsize, "out of memory");
        return -1;
    }
    //  first read and check everything, then change the slots
    bn_merged_entry_t entry;
    int rc;
    while ((rc = bn_merged_reader_next (reader, &entry)) == 1) {
        if (count == cap) {
            s_piece_t *bigger = realloc (pieces, 2 * cap * sizeof *pieces);
            if (!bigger) {
                rc = -1;
                break;
            }
            pieces = bigger;
            cap *= 2;
        }
        s_slot_t *slot = s_slot_of (req, entry.uuid);
        pieces[count++] =
            (s_piece_t){slot && slot->state == S_PENDING ? slot : NULL,
                        entry.text,
                        entry.ok,
                        entry.sized,
                        entry.first,
                        entry.nbuffers};
    }
    if (rc != 0) {
        snprintf (err, errsize, "%s",
                  rc < 0 && *bn_merged_reader_error (reader)
                      ? bn_merged_reader_error (reader)
                      : "out of memory");
        bn_merged_reader_destroy (&reader);
        free (pieces);
        return -1;
    }
    *spliced = bn_merged_reader_spliced (reader);
    if (*spliced)
        self->stats.spliced++;
    bn_merged_reader_destroy (&reader);
    int filled = 0;
    for (size_t i = 0; i < count; i++) {
        s_piece_t *piece = &pieces[i];
        s_slot_t *slot = piece->slot;
        if (!slot) {
            self->stats.late++;
            continue;
        }
        if (req->merge) {
            //  7.1.0's entries do not say their buffers: one target has
            //  them all
            size_t nbuffers = piece->sized ? piece->nbuffers
                              : count == 1 ? bn_msg_nbuffers (msg)
                                           : 0;
            slot->ok = piece->ok;
            if (piece->text.data) {
                slot->entry = strndup (piece->text.data, piece->text.size);
                slot->entry_len = piece->text.size;
            } else {
                slot->entry = bn_merged_entry (
                    piece->ok ? BN_STATUS_OK : BN_STATUS_ERROR, NULL, NULL,
                    nbuffers, piece->ok ? NULL : bn_msg_content (msg), NULL,
                    NULL);
                slot->entry_len = slot->entry ? strlen (slot->entry) : 0;
            }
            s_slot_take_buffers (slot, msg, piece->first, nbuffers);
            slot->state = S_DONE;
            req->unreleased++;
        } else
            slot->state = S_RELEASED;
        req->owed--;
        filled++;
    }
    free (pieces);
    *whole = filled == (int)count;
    return filled;
}

//  Mark the slots of engines done (merging) or released (forwarding).
static void
s_mark_set (s_request_t *req, bn_idset_t *engines)
{
    for (int id = bn_idset_first (engines); id >= 0;
         id = bn_idset_next (engines, id)) {
        char eid[16];
        snprintf (eid, sizeof eid, "%d", id);
        size_t index = req->by_eid
                           ? (size_t)(uintptr_t)zhashx_lookup (req->by_eid, eid)
                           : 0;
        s_slot_t *slot = index ? &req->slots[index - 1] : NULL;
        if (!slot || slot->state != S_PENDING)
            continue;
        slot->state = req->merge ? S_DONE : S_RELEASED;
        if (req->merge)
            req->unreleased++;
        req->owed--;
    }
}

//  A child's bn_groups or bn_reduced message: mark the slots of the
//  engines it answers for. Returns 0, or -1 with the reason in err if it
//  is malformed (then no slot changed).
static int
s_take_sets (s_request_t *req, bn_msg_t *msg, char *err, size_t errsize)
{
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    bn_idset_t *all = bn_idset_new ();
    int rc = reader && all ? 1 : -1;
    bn_merged_entry_t entry;
    while (rc == 1 && (rc = bn_merged_reader_next (reader, &entry)) == 1)
        for (int id = bn_idset_first (entry.engines); rc == 1 && id >= 0;
             id = bn_idset_next (entry.engines, id))
            if (bn_idset_add (all, id) != 0)
                rc = -1;
    if (rc == 0)
        s_mark_set (req, all);
    else
        snprintf (err, errsize, "%s",
                  reader && *bn_merged_reader_error (reader)
                      ? bn_merged_reader_error (reader)
                      : "out of memory");
    bn_merged_reader_destroy (&reader);
    bn_idset_destroy (&all);
    return rc;
}

//  A message from below; takes *msg_p (forwarded or kept as the
//  request's last reply without copying).
static void
s_on_reply (s_node_t *self, bn_msg_t **msg_p)
{
    bn_msg_t *msg = *msg_p;
    self->stats.replies++;
    if (!self->down_trusted &&
        bn_msg_check (msg, self->session, BN_MSG_CHECK_SIGNATURE,
                      &self->stats.drops, "%s", self->id))
        return;
    if (bn_msg_nidents (msg) < 2) {
        self->stats.stray++;
        return;
    }
    //  a shared connection's: the engine behind it is named next
    if (self->leaf && zhashx_size (self->via) && bn_msg_nidents (msg) >= 3 &&
        bn_msg_ident_prefix (msg, 0, BN_SHARED_PREFIX)) {
        size_t via_len, uuid_len;
        const char *via = bn_msg_ident (msg, 0, &via_len);
        const char *uuid = bn_msg_ident (msg, 1, &uuid_len);
        char key[BN_BCAST_NODE_ID_MAX + 1];
        const char *behind = NULL;
        if (uuid_len <= BN_BCAST_NODE_ID_MAX && !memchr (uuid, 0, uuid_len)) {
            memcpy (key, uuid, uuid_len);
            key[uuid_len] = 0;
            behind = zhashx_lookup (self->via, key);
        }
        if (!behind || strlen (behind) != via_len ||
            memcmp (behind, via, via_len) != 0) {
            self->stats.stray++;
            return;
        }
        bn_msg_pop_ident (msg);
    }
    size_t from_len;
    const char *from = bn_msg_ident (msg, 0, &from_len);
    char peer[BN_BCAST_NODE_ID_MAX + 1];
    if (from_len > BN_BCAST_NODE_ID_MAX) {
        self->stats.stray++;
        return;
    }
    memcpy (peer, from, from_len);
    peer[from_len] = 0;
    //  a leaf hears from its engines, and from host nodes' leaves, which it
    //  takes as an inner node takes its children
    bool engine = self->leaf && !s_host_index (self, peer, false);
    char key[S_FIELD];
    bn_jscan_slice_t md[S_MD_KEYS];
    s_metadata_scan (msg, md);
    const char *original = s_slice_string (md[S_MD_ORIGINAL], key, sizeof key);
    if (!original || !*original) {
        //  an engine that does not copy original_msg_id: the parent
        //  msg_id is "<original>_<engine uuid>"
        char named[S_FIELD];
        const char *uuid = engine ? peer
                                  : s_scan (msg, BN_PART_METADATA, "engine",
                                            named, sizeof named);
        const char *parent = bn_msg_parent_id (msg);
        size_t plen = parent ? strlen (parent) : 0;
        size_t ulen = uuid ? strlen (uuid) : 0;
        original = NULL;
        if (uuid && plen > ulen + 1 && plen - ulen - 1 < sizeof key &&
            strcmp (parent + plen - ulen, uuid) == 0 &&
            parent[plen - ulen - 1] == '_') {
            memcpy (key, parent, plen - ulen - 1);
            key[plen - ulen - 1] = 0;
            original = key;
        }
    }
    s_request_t *req =
        original ? (s_request_t *)zhashx_lookup (self->requests, original)
                 : NULL;
    if (!req) {
        self->stats.late++;
        return;
    }
    //  a child's merged message, in one of the three shapes
    bn_merged_shape_t shape = engine ? BN_MERGED_NONE : bn_merged_shape (msg);
    bool plain = shape == BN_MERGED_TARGETS;
    bool grouped = shape == BN_MERGED_GROUPS;
    bool reduced = shape == BN_MERGED_REDUCED;
    bool merged = shape != BN_MERGED_NONE;
    s_slot_t *slot = NULL;
    if (engine)
        slot = s_slot_of (req, peer);
    else if (!merged) {
        //  the engine's uuid is what follows "<original>_" in parent msg_id
        const char *parent = bn_msg_parent_id (msg);
        size_t klen = strlen (req->key);
        if (parent && strncmp (parent, req->key, klen) == 0 &&
            parent[klen] == '_')
            slot = s_slot_of (req, parent + klen + 1);
    }
    if (!merged && (!slot || slot->state != S_PENDING)) {
        self->stats.late++;
        return;
    }
    bn_msg_pop_ident (msg);
    int rc = 0;
    char err[256] = "";
    bool spliced = false;
    bool whole = false;
    size_t whole_slots = 0;
    if (!req->merge) {
        //  forward as it came
        if (plain)
            rc = s_take_merged (self, req, msg, err, sizeof err, &spliced,
                                &whole) < 0
                     ? -1
                     : 0;
        else if (merged)
            rc = s_take_sets (req, msg, err, sizeof err);
        else {
            slot->state = S_RELEASED;
            req->owed--;
        }
        if (rc != 0) {
            self->stats.bad_merge++;
            bn_log_warn ("%s: a reply to %s could not be forwarded: %s",
                         self->id, req->key, err);
            return;
        }
        if (req->timestamps)
            s_add_hop (self, req, msg);
        self->stats.forwarded++;
        s_send_up (self, msg_p);
        s_progress (self, req);
        return;
    }
    if (req->group || req->reduce) {
        if (grouped && req->group)
            rc = bn_group_add_merged (req->group, msg, err, sizeof err);
        else if (reduced && req->reduce)
            rc = bn_reduce_add_merged (req->reduce, msg, err, sizeof err);
        else if (!merged && req->group)
            rc = bn_group_add_reply (req->group, slot->eid, msg, err,
                                     sizeof err);
        else if (!merged)
            rc = bn_reduce_add_reply (req->reduce, slot->eid, msg, err,
                                      sizeof err);
        else {
            rc = -1;
            snprintf (err, sizeof err, "a merged message of another shape");
        }
        if (rc == 0 && merged)
            rc = s_take_sets (req, msg, err, sizeof err);
        else if (rc == 0) {
            slot->state = S_DONE;
            req->unreleased++;
            req->owed--;
        }
    } else if (plain) {
        int filled =
            s_take_merged (self, req, msg, err, sizeof err, &spliced, &whole);
        rc = filled < 0 ? -1 : 0;
        whole_slots = whole && filled > 0 ? (size_t)filled : 0;
    } else if (merged) {
        rc = -1;
        snprintf (err, sizeof err, "a merged message of another shape");
    } else {
        s_fill_from_reply (slot, msg, md);
        slot->state = S_DONE;
        req->unreleased++;
        req->owed--;
    }
    if (rc != 0) {
        self->stats.bad_merge++;
        bn_log_warn ("%s: a reply to %s could not be merged: %s", self->id,
                     req->key, *err ? err : "malformed");
        return;
    }
    s_gather_hops (req, msg);
    //  the slots share what they need of the buffers
    bn_msg_clear_buffers (msg);
    bn_msg_destroy (&req->last);
    req->last = msg;
    req->last_spliced = spliced;
    req->last_whole = whole_slots;
    *msg_p = NULL;
    s_progress (self, req);
}

//  --------------------------------------------------------------------------
//  Engines and children lost, deadlines

static void
s_fail_matching (s_node_t *self, const char *uuid, int child, const char *why,
                 uint64_t *counter)
{
    //  collect first: finishing a request deletes it from the table
    zlistx_t *hit = zlistx_new ();
    s_request_t *req = (s_request_t *)zhashx_first (self->requests);
    while (req) {
        zlistx_add_end (hit, req);
        req = (s_request_t *)zhashx_next (self->requests);
    }
    req = (s_request_t *)zlistx_first (hit);
    while (req) {
        bool touched = false;
        if (uuid) {
            s_slot_t *slot = s_slot_of (req, uuid);
            if (slot && slot->state == S_PENDING) {
                s_fail_slot (self, req, slot, why);
                (*counter)++;
                touched = true;
            }
        } else
            for (size_t i = 0; i < req->nslots; i++)
                if (req->slots[i].child == child &&
                    req->slots[i].state == S_PENDING) {
                    s_fail_slot (self, req, &req->slots[i], why);
                    (*counter)++;
                    touched = true;
                }
        if (touched)
            s_progress (self, req);
        req = (s_request_t *)zlistx_next (hit);
    }
    zlistx_destroy (&hit);
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    int64_t now = zclock_mono ();
    zlistx_t *due = zlistx_new ();
    s_request_t *req = (s_request_t *)zlistx_first (self->timed);
    while (req) {
        if ((req->deadline && now >= req->deadline) ||
            (req->next_window && now >= req->next_window))
            zlistx_add_end (due, req);
        req = (s_request_t *)zlistx_next (self->timed);
    }
    req = (s_request_t *)zlistx_first (due);
    while (req) {
        if (req->deadline && now >= req->deadline) {
            char why[64];
            snprintf (why, sizeof why, "no reply within the deadline");
            for (size_t i = 0; i < req->nslots; i++)
                if (req->slots[i].state == S_PENDING) {
                    self->stats.expired++;
                    s_fail_slot (self, req, &req->slots[i], why);
                }
        } else if (req->next_window && now >= req->next_window) {
            req->next_window = now + req->window_ms;
            if (req->owed)
                s_send_merged (self, req, 1);
        }
        s_progress (self, req);
        req = (s_request_t *)zlistx_next (due);
    }
    zlistx_destroy (&due);
    if (zlistx_size (self->timed) == 0 && self->timer >= 0) {
        zloop_timer_end (self->loop, self->timer);
        self->timer = -1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Actor plumbing

static json_t *
s_stats (s_node_t *self)
{
    s_stats_t *s = &self->stats;
    json_t *stats = json_pack (
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "node", self->id, "requests",
        (json_int_t)zhashx_size (self->requests), "engines",
        (json_int_t)(self->engines ? zhashx_size (self->engines) : 0), "shared",
        (json_int_t)(self->via ? zhashx_size (self->via) : 0), "received",
        (json_int_t)s->requests, "hosts", (json_int_t)self->nhosts, "routes",
        (json_int_t)(self->routes ? zhashx_size (self->routes) : 0));
    struct {
        const char *name;
        uint64_t value;
    } counters[] = {
        {"bad_frame", s->drops.bad_frame},
        {"bad_signature", s->drops.bad_signature},
        {"replayed", s->drops.replayed},
        {"bad_request", s->bad_request},
        {"duplicate", s->duplicate},
        {"to_engines", s->to_engines},
        {"held", s->held},
        {"to_children", s->to_children},
        {"replies", s->replies},
        {"forwarded", s->forwarded},
        {"merged", s->merged},
        {"passed", s->passed},
        {"late", s->late},
        {"stray", s->stray},
        {"engine_lost", s->engine_lost},
        {"child_lost", s->child_lost},
        {"unknown_engine", s->unknown_engine},
        {"expired", s->expired},
        {"send_failed", s->send_failed},
        {"bad_merge", s->bad_merge},
        {"spliced", s->spliced},
    };
    for (size_t i = 0; stats && i < sizeof counters / sizeof counters[0]; i++)
        json_object_set_new (stats, counters[i].name,
                             json_integer ((json_int_t)counters[i].value));
    return stats;
}

//  Record that engine uuid (or, when NULL, child) was lost, for why (may
//  be NULL).
static void
s_lost (s_node_t *self, const char *uuid, int child, const char *why)
{
    s_loss_t *loss = calloc (1, sizeof *loss);
    if (loss) {
        loss->uuid = uuid ? strdup (uuid) : NULL;
        loss->why = why ? zsys_sprintf ("lost: %s", why) : NULL;
        loss->child = child;
    }
    if (!loss || (uuid && !loss->uuid) || (why && !loss->why) ||
        !zlistx_add_end (self->losses, loss)) {
        s_loss_free ((void **)&loss);
        bn_log_error ("%s: out of memory: a loss was not recorded", self->id);
    }
}

//  Fail the slots of what was lost, in the order it was lost. Called only
//  from the loop's handlers, with no request in hand.
static void
s_apply_losses (s_node_t *self)
{
    s_loss_t *loss;
    while ((loss = (s_loss_t *)zlistx_detach (self->losses, NULL))) {
        if (loss->uuid) {
            s_fail_matching (self, loss->uuid, -1,
                             loss->why ? loss->why
                                       : "unregistered (engine died)",
                             &self->stats.engine_lost);
            //  unless it came back since: what it held is over
            if (self->holdq && !zhashx_lookup (self->engines, loss->uuid))
                bn_holdq_engine_remove (self->holdq, loss->uuid);
        } else
            s_fail_matching (self, NULL, loss->child, "its tree node was lost",
                             &self->stats.child_lost);
        s_loss_free ((void **)&loss);
    }
}

//  Handle one pipe command; returns -1 on $TERM. What it does to the
//  requests in flight waits in self->losses (see s_loss_t).
static int
s_command (s_node_t *self, zmsg_t *request)
{
    char *command = zmsg_popstr (request);
    int rc = 0;
    if (!command || streq (command, "$TERM")) {
        rc = -1;
        self->terminated = true;
        if (zlistx_size (self->held))
            s_report_held (self);
    } else if (streq (command, "ENGINE_ADD")) {
        char *uuid = zmsg_popstr (request);
        char *eid = zmsg_popstr (request);
        //  the leaf of the host node serving it, when it has one
        char *host = zmsg_popstr (request);
        size_t index =
            host && self->hosted ? s_host_index (self, host, true) : 0;
        if (uuid && eid && self->engines && (!host || index)) {
            zhashx_update (self->engines, uuid,
                           (void *)(uintptr_t)(atoi (eid) + 1));
            if (index)
                zhashx_update (self->hosted, uuid, (void *)(uintptr_t)index);
            else {
                zhashx_delete (self->hosted, uuid);
                bn_holdq_engine_add (self->holdq, uuid);
            }
        }
        free (uuid);
        free (eid);
        free (host);
    } else if (streq (command, "ENGINE_REMOVE")) {
        char *uuid = zmsg_popstr (request);
        char *why = zmsg_popstr (request);
        if (uuid) {
            if (self->engines)
                zhashx_delete (self->engines, uuid);
            if (self->hosted)
                zhashx_delete (self->hosted, uuid);
            if (self->via)
                zhashx_delete (self->via, uuid);
            s_lost (self, uuid, -1, why);
        }
        free (uuid);
        free (why);
    } else if (streq (command, "ENGINE_VIA")) {
        //  an engine behind a shared connection (doc/wire.md 4.1)
        char *uuid = zmsg_popstr (request);
        char *via = zmsg_popstr (request);
        if (uuid && via && self->via && zhashx_insert (self->via, uuid, via))
            zhashx_update (self->via, uuid, via);
        free (uuid);
        free (via);
    } else if (streq (command, "ENGINE_ROUTE") ||
               streq (command, "ENGINE_UNROUTE")) {
        //  an engine of a host node: its targets go toward that node's leaf
        char *eid = zmsg_popstr (request);
        char *leaf = zmsg_popstr (request);
        if (eid && self->routes && streq (command, "ENGINE_UNROUTE"))
            zhashx_delete (self->routes, eid);
        else if (eid && leaf && self->routes && atoi (leaf) >= 0)
            zhashx_update (self->routes, eid,
                           (void *)(uintptr_t)(atoi (leaf) + 1));
        free (eid);
        free (leaf);
    } else if (streq (command, "CHILD_LOST")) {
        char *index = zmsg_popstr (request);
        if (index && !self->leaf)
            s_lost (self, NULL, atoi (index), NULL);
        free (index);
    } else if (streq (command, "BIND")) {
        //  one more endpoint for the down socket: a folded tree's leaves
        char *endpoint = zmsg_popstr (request);
        bool bound_ok = endpoint && bn_wire_bind (self->down, endpoint,
                                                  BN_WIRE_REBIND_WAIT) >= 0;
        if (!bound_ok)
            bn_log_error ("%s: cannot bind %s: %s", self->id,
                          endpoint ? endpoint : "(none)",
                          endpoint ? zmq_strerror (errno) : "no endpoint");
        char *bound = bound_ok ? zsock_last_endpoint (self->down) : NULL;
        zstr_send (self->pipe, bound ? bound : "");
        zstr_free (&bound);
        free (endpoint);
    } else if (streq (command, "ENDPOINTS"))
        zstr_sendx (self->pipe, self->up_endpoint ? self->up_endpoint : "",
                    self->down_endpoint ? self->down_endpoint : "", NULL);
    else if (streq (command, "STATS")) {
        json_t *stats = s_stats (self);
        char *text = stats ? json_dumps (stats, JSON_COMPACT) : NULL;
        zstr_send (self->pipe, text ? text : "{}");
        free (text);
        json_decref (stats);
    } else
        bn_log_warn ("%s: unknown actor command %s", self->id, command);
    free (command);
    return rc;
}

static void
s_drain_pipe (s_node_t *self)
{
    while (!self->terminated && (zsock_events (self->pipe) & ZMQ_POLLIN)) {
        zmsg_t *request = zmsg_recv (self->pipe);
        if (!request)
            break;
        s_command (self, request);
        zmsg_destroy (&request);
    }
}

static int
s_on_pipe (zloop_t *loop, zsock_t *pipe, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    zmsg_t *request = zmsg_recv (pipe);
    if (!request)
        return -1;
    int rc = s_command (self, request);
    zmsg_destroy (&request);
    s_apply_losses (self);
    return rc || self->terminated ? -1 : 0;
}

static int
s_on_up (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    for (int i = 0; i < S_BATCH && !self->terminated; i++) {
        if (self->max_requests &&
            zhashx_size (self->requests) >= self->max_requests) {
            //  flow control: requests wait in the socket's queue (and,
            //  past its high-water mark, in the sender's)
            self->paused = true;
            zloop_reader_end (self->loop, self->up);
            break;
        }
        bn_msg_t *msg = bn_msg_recv_flags (self->up_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        s_on_request (self, msg);
        bn_msg_destroy (&msg);
        //  what the dispatch read on the pipe, now that it is over
        s_apply_losses (self);
    }
    return self->terminated ? -1 : 0;
}

static int
s_on_down (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    for (int i = 0; i < S_BATCH && !self->terminated; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (self->down_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        s_on_reply (self, &msg);
        bn_msg_destroy (&msg);
    }
    return self->terminated ? -1 : 0;
}

static void
s_node_destroy (s_node_t **self_p)
{
    s_node_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->requests);
    zlistx_destroy (&self->timed);
    zlistx_destroy (&self->losses);
    zlistx_destroy (&self->held);
    zhashx_destroy (&self->engines);
    zhashx_destroy (&self->hosted);
    zhashx_destroy (&self->via);
    zhashx_destroy (&self->routes);
    for (size_t i = 0; i < self->nhosts; i++)
        free (self->hosts[i]);
    free (self->hosts);
    bn_holdq_destroy (&self->holdq);
    zloop_destroy (&self->loop);
    zsock_destroy (&self->up);
    zsock_destroy (&self->down);
    bn_session_destroy (&self->session);
    bn_reducers_destroy (&self->reducers);
    free (self->up_endpoint);
    free (self->down_endpoint);
    free (self->id);
    free (self);
    *self_p = NULL;
}

//  A ROUTER with the node's routing id, bound or connected to endpoint;
//  the endpoint as bound goes to *last.
static zsock_t *
s_socket (s_node_t *self, const char *endpoint, bool bind, int hwm,
          zcert_t *curve, const char *serverkey, char **last)
{
    zsock_t *sock = zsock_new (ZMQ_ROUTER);
    if (!sock)
        return NULL;
    zsock_set_sndhwm (sock, hwm);
    zsock_set_rcvhwm (sock, hwm);
    zsock_set_linger (sock, 0);
    //  a leaf's engines all connect at once: libzmq's backlog of 100 pending
    //  connections overflows, and dropped SYNs are retried after a second
    zsock_set_backlog (sock, 4096);
    zsock_set_identity (sock, self->id);
    //  an unreachable peer is an error we can report, not a silent drop
    zsock_set_router_mandatory (sock, 1);
    //  an engine or child node that connects again under its name takes
    //  it over from its old connection (bn_controller's s_bind)
    if (bind)
        zsock_set_router_handover (sock, 1);
    //  a parent node process that was restarted is found again within
    //  S_RECONNECT_IVL instead of ZeroMQ's 100 ms (inproc never waits)
    if (!bind)
        zsock_set_reconnect_ivl (sock, S_RECONNECT_IVL);
    //  what leaves the host is a tcp port: the client's and the engines'
    //  ...or, for a host node's leaf, the link up to the controller's
    bool tcp = strncmp (endpoint, "tcp://", 6) == 0;
    if (tcp && curve &&
        (bind ? bn_curve_server (sock, curve)
              : serverkey && bn_curve_client (sock, curve, serverkey))) {
        bn_log_error ("%s: this libzmq cannot use CURVE", self->id);
        zsock_destroy (&sock);
        return NULL;
    }
    int rc = bind ? bn_wire_bind (sock, endpoint, BN_WIRE_REBIND_WAIT)
                  : zsock_connect (sock, "%s", endpoint);
    if (rc < 0) {
        int error = errno;
        bn_log_error ("%s: cannot %s %s: %s", self->id,
                      bind ? "bind" : "connect", endpoint,
                      zmq_strerror (error));
        zsock_destroy (&sock);
        errno = error;
        return NULL;
    }
    *last = bind ? zsock_last_endpoint (sock) : strdup (endpoint);
    return sock;
}

static s_node_t *
s_node_new (zsock_t *pipe, bn_bcast_node_args_t *args)
{
    s_node_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pipe = pipe;
    self->topology = args->topology;
    self->node = args->node;
    self->id = strdup (
        args->routing_id ? args->routing_id
                         : bn_topology_routing_id (self->topology, self->node));
    self->level = bn_topology_level (self->topology, self->node);
    self->nchildren =
        (size_t)bn_topology_nchildren (self->topology, self->node);
    self->leaf = self->nchildren == 0;
    self->up_trusted = args->up_trusted;
    self->down_trusted = args->down_trusted;
    self->deadline_ms = args->deadline_ms;
    self->max_requests = args->hwm > 0 ? (size_t)args->hwm : 0;
    self->monitor = args->monitor;
    self->timer = -1;
    self->held_timer = -1;
    self->session = bn_session_new (args->key ? args->key : "", NULL);
    self->requests = zhashx_new ();
    self->timed = zlistx_new ();
    self->losses = zlistx_new ();
    self->held = zlistx_new ();
    self->holdq =
        bn_holdq_new (args->connect_grace_ms, s_send_held, s_fail_held, self);
    self->loop = zloop_new ();
    if (!self->id || !self->session || !self->requests || !self->timed ||
        !self->losses || !self->held || !self->holdq || !self->loop ||
        strlen (self->id) > BN_BCAST_NODE_ID_MAX ||
        //  the root remembers what it received against replays
        (self->level == 0 && bn_session_reserve_history (self->session))) {
        s_node_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->requests, s_request_free);
    zlistx_set_destructor (self->held, (zlistx_destructor_fn *)bn_msg_destroy);
    bn_holdq_set_destructor (self->holdq, s_held_free);
    zlistx_set_destructor (self->losses, s_loss_free);
    self->reducers = bn_reducers_new ();
    char err[256] = "";
    if (!self->reducers ||
        bn_reducers_load_list (self->reducers, args->reduce_plugins, err,
                               sizeof err) != 0) {
        bn_log_error ("%s: %s", self->id, *err ? err : "out of memory");
        s_node_destroy (&self);
        return NULL;
    }
    if (self->leaf) {
        self->engines = zhashx_new ();
        self->hosted = zhashx_new ();
        self->via = zhashx_new ();
        if (!self->engines || !self->hosted || !self->via) {
            s_node_destroy (&self);
            return NULL;
        }
        zhashx_set_destructor (self->via, (zhashx_destructor_fn *)zstr_free);
        zhashx_set_duplicator (self->via, (zhashx_duplicator_fn *)strdup);
    } else if (!(self->routes = zhashx_new ())) {
        s_node_destroy (&self);
        return NULL;
    }
    if (args->up_endpoint)
        self->up =
            s_socket (self, args->up_endpoint, self->level == 0, args->hwm,
                      args->curve, args->curve_serverkey, &self->up_endpoint);
    //  a host node's leaf: its engines, on its host, connect as they
    //  connect to the host node's other ports, without CURVE
    if (args->down_endpoint &&
        !(self->down = s_socket (self, args->down_endpoint, true, args->hwm,
                                 args->curve_serverkey ? NULL : args->curve,
                                 NULL, &self->down_endpoint)))
        args->down_error = errno;
    if (!self->up || !self->down) {
        bn_log_error ("%s: needs an up and a down socket", self->id);
        s_node_destroy (&self);
        return NULL;
    }
    self->up_handle = zsock_resolve (self->up);
    self->down_handle = zsock_resolve (self->down);
    zloop_set_nonstop (self->loop, true);
    if (zloop_reader (self->loop, pipe, s_on_pipe, self) ||
        zloop_reader (self->loop, self->up, s_on_up, self) ||
        zloop_reader (self->loop, self->down, s_on_down, self) ||
        bn_holdq_attach (self->holdq, self->loop)) {
        s_node_destroy (&self);
        return NULL;
    }
    return self;
}

void
bn_bcast_node_actor (zsock_t *pipe, void *args)
{
    bn_bcast_node_args_t *start = (bn_bcast_node_args_t *)args;
    assert (start);
    assert (start->topology);
    s_node_t *self = NULL;
    if (start->node < 0 || start->node >= bn_topology_size (start->topology))
        bn_log_error ("node %d is not in %s", start->node,
                      bn_topology_describe (start->topology));
    else
        self = s_node_new (pipe, start);
    start->status = self ? 0 : -1;
    zsock_signal (pipe, 0);
    if (!self)
        return;
    zloop_start (self->loop);
    s_node_destroy (&self);
}

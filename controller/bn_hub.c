/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_hub: registration, unregistration, queries and notifications.

    A registration is pending from its registration_request until the
    engine's heart first answers a ping; only then is the engine added to
    the relays and announced. An unregistered engine takes no new requests
    at once, but replies already on their way (a control shutdown_reply
    relayed by the engine's nanny, say) get the stranded timeout
    (controller.stranded_timeout, BN_HUB_STRANDED_TIMEOUT ms by default) to
    arrive; then whatever is still pending gets EngineError replies and the
    unregistration_notification goes out, in that order, so that a client
    sees the errors before it synthesizes its own.

    An engine whose heart's connection closes (its process died) is lost
    at once, as one whose heart stopped. An engine whose heart stopped (a
    process stopped, a link cut for a while) keeps its uuid and id in the
    lost table: when its heart answers a ping again it is a pending
    registration of that id, as a restored engine is, and is back with its
    first pong after that. Its sockets are still connected, and an engine
    takes no notice of its unregistration.

    The engine state file (log/engines<ID>.json, for --restore) is written
    before an engine's registration_notification goes out. Registrations
    come in bursts (1,024 engines in a few seconds) and the file holds
    every engine, so it is written at most once per S_STATE_DELAY_MS (or
    S_STATE_COST times as long as the last write took, so that writing
    it takes a bounded share of the hub's time with tens of thousands of
    engines): registration and unregistration notifications wait with it,
    in order, and anything else that notifies (a shutdown) sends them
    first, writing it then. A host node lost takes its thousands of
    engines with it, and one write covers them all.

    A client learns the engines from its connection_reply and then
    subscribes to the notifier (7.1.0's Client does it in that order, and
    never asks again): what is published in between is lost to it, and it
    would wait for ever for engines that registered then. So from each
    connection_reply until a subscription reaches the notifier (an XPUB
    that passes every one up), or S_JOIN_MS, (un)registration
    notifications wait, in order, as they wait for the state file. A
    subscription that comes first (libbanyan subscribes, then asks) counts
    for the next connection_reply within S_JOIN_MS.  */
#include "bn_hub.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <errno.h>
#include <unistd.h>

#include "bn_engine_table.h"
#include "bn_error.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_watch.h"
#include "bn_wire.h"

#define S_BATCH 1024        //  queries read per wake-up before polling again
#define S_UUID_MAX 255      //  longest engine uuid accepted
#define S_VIA_MAX 64        //  longest id of a shared broadcast connection
#define S_FEATURES_MAX 16   //  names an engine's bn_features may list
#define S_FEATURE_MAX 32    //  longest of them
#define S_STATE_DELAY_MS 20 //  longest wait to write the state file
#define S_STATE_COST 5      //  or this times the last write's duration
#define S_LOST_MAX 65536    //  lost engines remembered at most
#define S_JOIN_MS 1000      //  longest wait for a new client's subscription

typedef struct {
    uint64_t queries;         //  Messages read on the query socket
    bn_msg_drops_t drops;     //  Dropped: framing, signature, replay, header
    uint64_t bad_json;        //  A JSON part that is not an object
    uint64_t bad_content;     //  Missing keys, wrong key types
    uint64_t unsupported;     //  Query types we answer with hub_error
    uint64_t errors;          //  hub_error and error replies sent
    uint64_t registrations;   //  Registrations finished
    uint64_t refused;         //  Registrations refused (uuid in use)
    uint64_t purged;          //  Pending registrations that timed out
    uint64_t unregistrations; //  Engines unregistered
    uint64_t heart_failures;  //  ...of which by heart failure
    uint64_t returned;        //  Engines whose heart beat again
    uint64_t hosts_lost;      //  Host links whose heart stopped or closed
    uint64_t send_failed;     //  Replies or notifications not sent
} s_stats_t;

typedef struct {
    bn_hub_engine_fn *fn;
    void *arg;
} s_listener_t;

typedef struct {
    bn_hub_t *hub;
    char *uuid;   //  Engine whose registration is pending
    void *ticket; //  zloop ticket, NULL once it fired
} s_stall_t;

//  A host node's link (doc/hosts.md).
typedef struct {
    bn_hub_t *hub;
    char *link;       //  Its link id
    char *name;       //  Its host name, for logs and errors
    char address[64]; //  The address it connects from, or ""
    int index;        //  Order of arrival
    bool alive;       //  Its heart has answered
    bn_msg_t *hello;  //  bn_host_request waiting for its heart, or NULL
    void *ticket;     //  zloop ticket while waiting, NULL once it fired
} s_host_t;

typedef struct {
    bn_hub_t *hub;
    char *uuid; //  Engine that unregistered
    char *why;  //  Why it was lost, for its EngineErrors, or NULL
    int id;
    int timer;    //  zloop timer id
    void *handle; //  Position in the hub's leaving list
} s_leaving_t;

struct _bn_hub_t {
    zsock_t *query;              //  ROUTER (borrowed)
    zsock_t *notifier;           //  XPUB or PUB (borrowed)
    bn_watch_t *sockets;         //  the two, in the loop
    bn_watch_item_t *query_item; //  their items
    bn_watch_item_t *notify_item;
    bn_session_t *session;
    bn_heart_t *heart;       //  borrowed
    json_t *connection_info; //  Engine connection dict
    int hb_period_ms;
    double registration_timeout;
    int stranded_timeout; //  ms a leaving engine's replies may take
    bn_engine_table_t *engines;
    zlistx_t *relays;    //  bn_relay_t * (borrowed)
    bn_relay_t *counts;  //  Relay giving queue/completed counts
    bn_task_t *task;     //  Task scheduler (borrowed), or NULL
    zlistx_t *listeners; //  s_listener_t *, told of (un)registrations
    zhashx_t *stalls;    //  uuid -> s_stall_t
    zlistx_t *leaving;   //  s_leaving_t *, waiting for replies
    zloop_t *loop;
    bool shutting_down; //  shutdown_request answered
    bn_hub_shutdown_fn *shutdown_fn;
    void *shutdown_arg;
    bn_records_t *records;        //  Task records (borrowed), or NULL
    bn_record_queries_t *queries; //  Their queries, with records
    bn_hub_submit_fn *submit_fn;
    void *submit_arg;
    bn_hub_stats_fn *stats_fn; //  Counters for bn_stats_request, or NULL
    void *stats_arg;
    char *state_path;    //  log/engines<cluster_id>.json, or NULL
    zhashx_t *restored;  //  uuid -> old id + 1 (as a pointer), or NULL
    zhashx_t *lost;      //  uuid -> id + 1 of engines whose heart stopped
    bool state_dirty;    //  the state file is behind the engine table
    int state_timer;     //  zloop timer writing it, or -1
    int state_delay;     //  ms the timer waits
    zlistx_t *announce;  //  json_t [type, content] of notifications waiting
                         //  for the state file or a client's subscription
    int joining;         //  clients answered but not yet subscribed
    int join_timer;      //  zloop timer ending the wait for them, or -1
    int early;           //  subscriptions ahead of their connection_reply
    int64_t early_until; //  ...which count until then
    bn_hosts_t *hosts;   //  Links of host nodes and their engines (borrowed),
                         //  or NULL: no host nodes
    bn_hub_port_fn *port_fn; //  shared broadcast connections, or NULL
    void *port_arg;
    zhashx_t *broadcast_via; //  uuid -> routing id of its process's shared
                             //  broadcast connection
    zhashx_t *links;         //  link id -> s_host_t
    int next_host;           //  index of the next host node
    s_stats_t stats;
};

static void s_save_state (bn_hub_t *self);
static bool s_via_ok (const char *via);

static void
s_stall_destroy (void **item)
{
    s_stall_t *stall = (s_stall_t *)*item;
    if (!stall)
        return;
    if (stall->ticket && stall->hub->loop)
        zloop_ticket_delete (stall->hub->loop, stall->ticket);
    free (stall->uuid);
    free (stall);
    *item = NULL;
}

static void
s_host_destroy (void **item)
{
    s_host_t *host = (s_host_t *)*item;
    if (!host)
        return;
    if (host->ticket && host->hub->loop)
        zloop_ticket_delete (host->hub->loop, host->ticket);
    bn_msg_destroy (&host->hello);
    free (host->link);
    free (host->name);
    free (host);
    *item = NULL;
}

static void
s_leaving_destroy (void **item)
{
    s_leaving_t *leaving = (s_leaving_t *)*item;
    if (!leaving)
        return;
    free (leaving->uuid);
    free (leaving->why);
    free (leaving);
    *item = NULL;
}

static void
s_listener_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

bn_hub_t *
bn_hub_new (zsock_t *query, zsock_t *notifier, bn_session_t *session,
            bn_heart_t *heart, json_t *connection_info, int hb_period_ms,
            double registration_timeout)
{
    assert (query);
    assert (notifier);
    assert (session);
    assert (heart);
    bn_hub_t *self = calloc (1, sizeof *self);
    if (!self) {
        json_decref (connection_info);
        return NULL;
    }
    self->query = query;
    self->notifier = notifier;
    self->session = session;
    self->heart = heart;
    self->connection_info = connection_info;
    self->hb_period_ms = hb_period_ms;
    self->stranded_timeout = BN_HUB_STRANDED_TIMEOUT;
    self->registration_timeout = registration_timeout;
    self->engines = bn_engine_table_new ();
    self->relays = zlistx_new ();
    self->stalls = zhashx_new ();
    self->leaving = zlistx_new ();
    self->listeners = zlistx_new ();
    self->announce = zlistx_new ();
    self->links = zhashx_new ();
    self->lost = zhashx_new ();
    self->broadcast_via = zhashx_new ();
    self->state_timer = -1;
    self->join_timer = -1;
    self->state_delay = S_STATE_DELAY_MS;
    if (!connection_info || !self->engines || !self->relays || !self->stalls ||
        !self->leaving || !self->listeners || !self->announce || !self->links ||
        !self->lost || !self->broadcast_via) {
        bn_hub_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->broadcast_via,
                           (zhashx_destructor_fn *)zstr_free);
    zhashx_set_duplicator (self->broadcast_via, (zhashx_duplicator_fn *)strdup);
    zhashx_set_destructor (self->stalls, s_stall_destroy);
    zhashx_set_destructor (self->links, s_host_destroy);
    zlistx_set_destructor (self->leaving, s_leaving_destroy);
    zlistx_set_destructor (self->listeners, s_listener_destroy);
    return self;
}

void
bn_hub_destroy (bn_hub_t **self_p)
{
    assert (self_p);
    bn_hub_t *self = *self_p;
    if (!self)
        return;
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->query_item);
        bn_watch_cancel (self->sockets, &self->notify_item);
        bn_watch_destroy (&self->sockets);
    }
    zhashx_destroy (&self->stalls);
    zhashx_destroy (&self->links);
    if (self->leaving && self->loop) {
        s_leaving_t *leaving = zlistx_first (self->leaving);
        while (leaving) {
            zloop_timer_end (self->loop, leaving->timer);
            leaving = zlistx_next (self->leaving);
        }
    }
    zlistx_destroy (&self->leaving);
    if (self->state_timer >= 0 && self->loop)
        zloop_timer_end (self->loop, self->state_timer);
    if (self->state_dirty)
        s_save_state (self);
    if (self->announce) {
        json_t *content = zlistx_first (self->announce);
        while (content) {
            json_decref (content);
            content = zlistx_next (self->announce);
        }
    }
    zlistx_destroy (&self->announce);
    zlistx_destroy (&self->relays);
    zlistx_destroy (&self->listeners);
    zhashx_destroy (&self->restored);
    zhashx_destroy (&self->lost);
    zhashx_destroy (&self->broadcast_via);
    free (self->state_path);
    bn_record_queries_destroy (&self->queries);
    bn_engine_table_destroy (&self->engines);
    json_decref (self->connection_info);
    free (self);
    *self_p = NULL;
}

int
bn_hub_add_relay (bn_hub_t *self, bn_relay_t *relay, bool counts)
{
    assert (self);
    assert (relay);
    if (!zlistx_add_end (self->relays, relay))
        return -1;
    if (counts)
        self->counts = relay;
    return 0;
}

int
bn_hub_add_engine_listener (bn_hub_t *self, bn_hub_engine_fn *fn, void *arg)
{
    assert (self);
    assert (fn);
    s_listener_t *listener = calloc (1, sizeof *listener);
    if (!listener)
        return -1;
    listener->fn = fn;
    listener->arg = arg;
    if (!zlistx_add_end (self->listeners, listener)) {
        free (listener);
        return -1;
    }
    return 0;
}

//  Tell every engine listener that uuid came or went.
static void
s_tell_listeners (bn_hub_t *self, const char *uuid, int id, bool registered,
                  const char *why)
{
    const char *via =
        registered ? zhashx_lookup (self->broadcast_via, uuid) : NULL;
    s_listener_t *listener = zlistx_first (self->listeners);
    while (listener) {
        listener->fn (listener->arg, uuid, id, registered, why, via);
        listener = zlistx_next (self->listeners);
    }
}

void
bn_hub_set_stranded_timeout (bn_hub_t *self, int msecs)
{
    assert (self);
    self->stranded_timeout = msecs > 0 ? msecs : 0;
}

void
bn_hub_set_hosts (bn_hub_t *self, bn_hosts_t *hosts)
{
    assert (self);
    self->hosts = hosts;
}

void
bn_hub_share_broadcast (bn_hub_t *self, bn_hub_port_fn *fn, void *arg)
{
    assert (self);
    self->port_fn = fn;
    self->port_arg = arg;
}

void
bn_hub_set_task (bn_hub_t *self, bn_task_t *task)
{
    assert (self);
    self->task = task;
}

void
bn_hub_set_shutdown_handler (bn_hub_t *self, bn_hub_shutdown_fn *fn, void *arg)
{
    assert (self);
    self->shutdown_fn = fn;
    self->shutdown_arg = arg;
}

//  After a send on a socket the hub reads: the send may have taken the
//  signal of input that came meanwhile (bn_watch).
static void
s_sent (bn_hub_t *self, bn_watch_item_t *item)
{
    if (self->sockets)
        bn_watch_check (self->sockets, item);
}

//  Send msg on the query socket.
static void
s_send_query (bn_hub_t *self, bn_msg_t **msg_p)
{
    if (!*msg_p || bn_msg_send_flags (msg_p, zsock_resolve (self->query),
                                      self->session, ZMQ_DONTWAIT) != 0) {
        bn_msg_destroy (msg_p);
        self->stats.send_failed++;
    }
    s_sent (self, self->query_item);
}

//  Reply to request with msg_type and content (taken).
static void
s_reply (bn_hub_t *self, bn_msg_t *request, const char *msg_type,
         json_t *content)
{
    bn_msg_t *reply = bn_msg_new_reply (self->session, request, msg_type);
    if (!reply || !content) {
        json_decref (content);
        bn_msg_destroy (&reply);
        self->stats.send_failed++;
        return;
    }
    bn_msg_set_content (reply, content);
    s_send_query (self, &reply);
}

//  Reply hub_error with an exception of ename and a printf-style evalue.
static void s_hub_error (bn_hub_t *self, bn_msg_t *request, const char *ename,
                         const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
s_hub_error (bn_hub_t *self, bn_msg_t *request, const char *ename,
             const char *format, ...)
{
    char evalue[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, sizeof evalue, format, args);
    va_end (args);
    bn_log_info ("hub: %s to %s: %s: %s", BN_MSG_HUB_ERROR,
                 bn_msg_type (request) ? bn_msg_type (request) : "a query",
                 ename, evalue);
    self->stats.errors++;
    s_reply (self, request, BN_MSG_HUB_ERROR,
             bn_wire_error (ename, evalue, NULL, NULL));
}

//  Publish a notification of msg_type with content (taken), parent =
//  parent's header when parent is given.
static void
s_notify (bn_hub_t *self, const char *msg_type, json_t *content,
          bn_msg_t *parent)
{
    bn_msg_t *msg = parent ? bn_msg_new_reply (self->session, parent, msg_type)
                           : bn_msg_new (self->session, msg_type);
    if (!msg || !content) {
        json_decref (content);
        bn_msg_destroy (&msg);
        self->stats.send_failed++;
        return;
    }
    bn_msg_clear_idents (msg);
    bn_msg_set_content (msg, content);
    if (bn_msg_send_flags (&msg, zsock_resolve (self->notifier), self->session,
                           ZMQ_DONTWAIT) != 0)
        self->stats.send_failed++;
    s_sent (self, self->notify_item);
}

void
bn_hub_set_records (bn_hub_t *self, bn_records_t *records)
{
    assert (self);
    self->records = records;
    bn_record_queries_destroy (&self->queries);
    if (records)
        self->queries =
            bn_record_queries_new (self->session, records, self->engines);
    if (self->queries)
        bn_record_queries_set_resubmit (self->queries, self->submit_fn,
                                        self->submit_arg);
}

void
bn_hub_set_resubmit (bn_hub_t *self, bn_hub_submit_fn *fn, void *arg)
{
    assert (self);
    self->submit_fn = fn;
    self->submit_arg = arg;
    if (self->queries)
        bn_record_queries_set_resubmit (self->queries, fn, arg);
}

void
bn_hub_set_stats (bn_hub_t *self, bn_hub_stats_fn *fn, void *arg)
{
    assert (self);
    self->stats_fn = fn;
    self->stats_arg = arg;
}

//  Write the engine table to the state file (temporary file, then rename).
static void
s_save_state (bn_hub_t *self)
{
    if (!self->state_path)
        return;
    int64_t start = zclock_mono ();
    json_t *state = json_pack (
        "{s:o, s:i}", "engines", bn_engine_table_engines (self->engines),
        "next_id", bn_engine_table_next_id (self->engines));
    //  the engines' shared broadcast connections, which a restored engine
    //  does not name again
    json_t *vias = state ? json_object () : NULL;
    const char *via = zhashx_first (self->broadcast_via);
    while (vias && via) {
        const char *uuid = zhashx_cursor (self->broadcast_via);
        if (bn_engine_table_has (self->engines, uuid))
            json_object_set_new (vias, uuid, json_string (via));
        via = zhashx_next (self->broadcast_via);
    }
    if (vias && json_object_size (vias))
        json_object_set (state, BN_REG_BROADCAST_VIA, vias);
    json_decref (vias);
    char *tmp = zsys_sprintf ("%s.tmp", self->state_path);
    char *dir = strdup (self->state_path);
    char *slash = dir ? strrchr (dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = 0;
        zsys_dir_create ("%s", dir);
    }
    free (dir);
    if (!state || !tmp || json_dump_file (state, tmp, JSON_COMPACT) != 0 ||
        rename (tmp, self->state_path) != 0)
        bn_log_warn ("hub: cannot write the engine state %s: %s",
                     self->state_path, strerror (errno));
    json_decref (state);
    zstr_free (&tmp);
    int64_t took = zclock_mono () - start;
    self->state_delay = took * S_STATE_COST > S_STATE_DELAY_MS
                            ? (int)(took * S_STATE_COST)
                            : S_STATE_DELAY_MS;
}

static void s_expect (bn_hub_t *self, const char *uuid, int id,
                      const char *via);

//  Write the state file if it is behind, then send the notifications that
//  waited for it.
static void
s_state_flush (bn_hub_t *self)
{
    if (self->state_timer >= 0 && self->loop)
        zloop_timer_end (self->loop, self->state_timer);
    self->state_timer = -1;
    if (self->state_dirty) {
        s_save_state (self);
        self->state_dirty = false;
    }
    if (self->joining > 0)
        return;
    json_t *note = zlistx_first (self->announce);
    while (note) {
        s_notify (self, json_string_value (json_array_get (note, 0)),
                  json_incref (json_array_get (note, 1)), NULL);
        json_decref (note);
        note = zlistx_next (self->announce);
    }
    zlistx_purge (self->announce);
}

static int
s_on_state_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    self->state_timer = -1;
    s_state_flush (self);
    return 0;
}

//  The state file is behind: write it with the timer (at once without a
//  loop).
static void
s_state_later (bn_hub_t *self)
{
    self->state_dirty = true;
    if (self->loop && self->state_timer < 0)
        self->state_timer = zloop_timer (self->loop, (size_t)self->state_delay,
                                         1, s_on_state_timer, self);
    if (self->state_timer < 0)
        s_state_flush (self);
}

//  Send notification type with content (taken) once the state file is
//  written, after those waiting already.
static void
s_announce (bn_hub_t *self, const char *type, json_t *content)
{
    json_t *note = self->loop && content ? json_array () : NULL;
    if (note && json_array_append_new (note, json_string (type)) == 0 &&
        json_array_append (note, content) == 0 &&
        zlistx_add_end (self->announce, note)) {
        json_decref (content);
        s_state_later (self);
        return;
    }
    json_decref (note);
    s_state_flush (self);
    s_notify (self, type, content, NULL);
}

int
bn_hub_set_state_file (bn_hub_t *self, const char *path, bool restore)
{
    assert (self);
    assert (path);
    free (self->state_path);
    self->state_path = strdup (path);
    if (!self->state_path)
        return -1;
    if (!restore)
        return 0;
    if (access (path, F_OK) != 0)
        return 0;
    json_error_t error;
    json_t *state = json_load_file (path, 0, &error);
    json_t *engines = json_object_get (state, "engines");
    json_t *next = json_object_get (state, "next_id");
    json_t *vias = json_object_get (state, BN_REG_BROADCAST_VIA);
    if (!json_is_object (engines)) {
        bn_log_error ("hub: cannot restore engines from %s: %s", path,
                      state ? "no 'engines' dict" : error.text);
        json_decref (state);
        return -1;
    }
    if (!self->restored && !(self->restored = zhashx_new ())) {
        json_decref (state);
        return -1;
    }
    const char *key;
    json_t *uuid;
    json_object_foreach (engines, key, uuid)
    {
        char *end;
        long id = strtol (key, &end, 10);
        if (*end || id < 0 || id >= INT32_MAX || !json_is_string (uuid)) {
            bn_log_warn ("hub: ignored engine %s in %s", key, path);
            continue;
        }
        zhashx_update (self->restored, json_string_value (uuid),
                       (void *)(intptr_t)(id + 1));
        json_t *via = json_object_get (vias, json_string_value (uuid));
        if (json_is_string (via) && s_via_ok (json_string_value (via)))
            zhashx_update (self->broadcast_via, json_string_value (uuid),
                           (void *)json_string_value (via));
        bn_engine_table_set_next_id (self->engines, (int)id + 1);
        s_expect (self, json_string_value (uuid), (int)id, NULL);
    }
    if (json_is_integer (next) && json_integer_value (next) >= 0 &&
        json_integer_value (next) < INT32_MAX)
        bn_engine_table_set_next_id (self->engines,
                                     (int)json_integer_value (next));
    bn_log_info ("hub: restoring %zu engines from %s",
                 zhashx_size (self->restored), path);
    json_decref (state);
    return 0;
}

//  --------------------------------------------------------------------------
//  Registration

static void
s_stall_end (bn_hub_t *self, const char *uuid)
{
    zhashx_delete (self->stalls, uuid);
}

static int
s_on_stall (zloop_t *loop, int timer_id, void *arg)
{
    s_stall_t *stall = (s_stall_t *)arg;
    bn_hub_t *self = stall->hub;
    //  the loop deletes a ticket that fired
    stall->ticket = NULL;
    char *uuid = strdup (stall->uuid);
    if (!uuid)
        return 0;
    if (bn_engine_table_is_pending (self->engines, uuid)) {
        int id = bn_engine_table_remove (self->engines, uuid);
        bn_heart_forget (self->heart, uuid);
        if (self->hosts)
            bn_hosts_unroute (self->hosts, uuid);
        self->stats.purged++;
        bn_log_warn ("hub: purged stalled registration %d:%s", id, uuid);
    }
    zhashx_delete (self->stalls, uuid);
    free (uuid);
    return 0;
}

//  Make uuid a pending registration with id, waiting for its heart, or
//  for the host node of link via (not NULL) to say it is alive.
static void
s_expect (bn_hub_t *self, const char *uuid, int id, const char *via)
{
    s_stall_t *stall = calloc (1, sizeof *stall);
    if (!stall || bn_engine_table_add_pending (self->engines, uuid, id) != 0) {
        free (stall);
        bn_log_error ("hub: out of memory registering %s", uuid);
        return;
    }
    stall->hub = self;
    stall->uuid = strdup (uuid);
    stall->ticket =
        self->loop ? zloop_ticket (self->loop, s_on_stall, stall) : NULL;
    zhashx_update (self->stalls, uuid, stall);
    if (!via) {
        bn_log_info ("hub: registration %d:%s pending", id, uuid);
        bn_heart_expect (self->heart, uuid);
    } else if (bn_hosts_route (self->hosts, uuid, via) == 0)
        bn_log_info ("hub: registration %d:%s pending (through %s)", id, uuid,
                     via);
    else
        bn_log_error ("hub: out of memory routing %s through %s", uuid, via);
}

//  Finish the pending registration of uuid: the relays, the task scheduler
//  and the listeners take the engine, and it is announced. Returns its id,
//  or -1 if uuid is not pending.
static int
s_finish (bn_hub_t *self, const char *uuid)
{
    int id = bn_engine_table_finish (self->engines, uuid);
    if (id < 0)
        return -1;
    s_stall_end (self, uuid);
    bn_relay_t *relay = zlistx_first (self->relays);
    while (relay) {
        if (bn_relay_engine_add (relay, uuid, id) != 0)
            bn_log_error ("hub: relay refused engine %d:%s", id, uuid);
        relay = zlistx_next (self->relays);
    }
    if (self->task && bn_task_engine_add (self->task, uuid, id) != 0)
        bn_log_error ("hub: task scheduler refused engine %d:%s", id, uuid);
    s_tell_listeners (self, uuid, id, true, NULL);
    self->stats.registrations++;
    bn_log_info ("hub: engine %d:%s registered", id, uuid);
    //  the state file is current before anyone hears of the engine: both
    //  wait for the timer, which takes a burst of registrations at once
    self->state_dirty = true;
    json_t *content = json_pack ("{s:i, s:s}", "id", id, "uuid", uuid);
    json_t *features = bn_engine_table_features (self->engines, uuid);
    if (content && features)
        json_object_set (content, BN_REG_FEATURES, features);
    s_announce (self, BN_MSG_REGISTRATION_NOTIFICATION, content);
    return id;
}

static void s_host_alive (bn_hub_t *self, const char *link);

static void
s_on_new_heart (void *arg, const char *uuid)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    if (zhashx_lookup (self->links, uuid))
        s_host_alive (self, uuid);
    else if (s_finish (self, uuid) < 0)
        bn_heart_forget (self->heart, uuid);
}

//  True if uuid is usable as an engine identity (doc/wire.md 1.5).
static bool
s_uuid_ok (const char *uuid)
{
    size_t len = strlen (uuid);
    if (len == 0 || len > S_UUID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (uuid[i] < 0x21 || uuid[i] > 0x7e)
            return false;
    return true;
}

//  True if features is what an engine may say it understands: a list of
//  at most S_FEATURES_MAX printable names of at most S_FEATURE_MAX bytes.
static bool
s_features_ok (json_t *features)
{
    if (!json_is_array (features) ||
        json_array_size (features) > S_FEATURES_MAX)
        return false;
    size_t index;
    json_t *name;
    json_array_foreach (features, index, name)
    {
        const char *text = json_string_value (name);
        if (!text || strlen (text) > S_FEATURE_MAX || !s_uuid_ok (text))
            return false;
    }
    return true;
}

//  True if via names a shared connection: BN_SHARED_PREFIX and a
//  printable id of at most S_VIA_MAX bytes.
static bool
s_via_ok (const char *via)
{
    size_t prefix = strlen (BN_SHARED_PREFIX);
    return strncmp (via, BN_SHARED_PREFIX, prefix) == 0 &&
           strlen (via + prefix) <= S_VIA_MAX && s_uuid_ok (via + prefix);
}

//  A registration_request from an engine, or through the host node of link
//  via (not NULL).
static void
s_registration_request (bn_hub_t *self, bn_msg_t *request, const char *via)
{
    json_t *content = bn_msg_content (request);
    json_t *uuid_value = json_object_get (content, "uuid");
    json_t *id_value = json_object_get (content, "id");
    if (!json_is_string (uuid_value)) {
        self->stats.bad_content++;
        s_hub_error (self, request, uuid_value ? "TypeError" : "KeyError",
                     "registration_request needs a string 'uuid'");
        return;
    }
    const char *uuid = json_string_value (uuid_value);
    if (!s_uuid_ok (uuid)) {
        self->stats.bad_content++;
        s_hub_error (self, request, "ValueError",
                     "engine uuid must be 1-%d printable ASCII characters",
                     S_UUID_MAX);
        return;
    }
    int requested = -1;
    if (json_is_integer (id_value)) {
        json_int_t value = json_integer_value (id_value);
        if (value >= 0 && value < INT32_MAX)
            requested = (int)value;
        else
            bn_log_warn (
                "hub: ignored requested engine id %" JSON_INTEGER_FORMAT,
                value);
    } else if (id_value && !json_is_null (id_value)) {
        self->stats.bad_content++;
        s_hub_error (self, request, "TypeError",
                     "registration_request 'id' must be an integer or null");
        return;
    }
    //  an extension only banyan reads: a bad one is ignored, not refused
    json_t *features = json_object_get (content, BN_REG_FEATURES);
    if (features && !s_features_ok (features)) {
        self->stats.bad_content++;
        bn_log_warn ("hub: ignored the %s of engine %s: not a list of at most "
                     "%d names",
                     BN_REG_FEATURES, uuid, S_FEATURES_MAX);
        features = NULL;
    }
    json_t *shared = json_object_get (content, BN_REG_BROADCAST_VIA);
    if (shared &&
        !(json_is_string (shared) && s_via_ok (json_string_value (shared)))) {
        self->stats.bad_content++;
        bn_log_warn ("hub: ignored the %s of engine %s: not '%s' and at most "
                     "%d printable characters",
                     BN_REG_BROADCAST_VIA, uuid, BN_SHARED_PREFIX, S_VIA_MAX);
        shared = NULL;
    }
    zhashx_delete (self->lost, uuid);
    void *old = self->restored ? zhashx_lookup (self->restored, uuid) : NULL;
    if (old && bn_engine_table_is_pending (self->engines, uuid)) {
        //  an engine of the restored table registers again: its pending
        //  entry makes way, and it gets its old id
        bn_engine_table_remove (self->engines, uuid);
        bn_heart_forget (self->heart, uuid);
        s_stall_end (self, uuid);
    }
    if (old && requested < 0)
        requested = (int)((intptr_t)old - 1);
    int id = bn_engine_table_new_id (self->engines, requested);
    if (requested >= 0 && id != requested)
        bn_log_warn ("hub: engine id %d is taken; %s gets %d", requested, uuid,
                     id);

    //  the parent names the engine's session: the engines of one process
    //  may share the socket they register on
    bn_msg_t *reply =
        bn_msg_new_reply (self->session, request, BN_MSG_REGISTRATION_REPLY);
    if (!reply) {
        self->stats.send_failed++;
        return;
    }
    bool in_use = bn_engine_table_has (self->engines, uuid);
    if (in_use) {
        char evalue[S_UUID_MAX + 32];
        snprintf (evalue, sizeof evalue, "uuid '%s' in use", uuid);
        self->stats.refused++;
        self->stats.errors++;
        bn_log_warn ("hub: registration %d refused: %s", id, evalue);
        bn_msg_set_content (reply,
                            bn_wire_error ("KeyError", evalue, NULL, NULL));
        s_send_query (self, &reply);
        return;
    }
    json_t *answer = json_pack ("{s:i, s:s, s:i, s:O}", "id", id, "status",
                                BN_STATUS_OK, "hb_period", self->hb_period_ms,
                                "connection_info", self->connection_info);
    //  through a host node, the engines share all their connections to it
    int port = shared && !via && self->port_fn
                   ? self->port_fn (self->port_arg, id)
                   : -1;
    if (port >= 0 && answer &&
        json_object_set_new (answer, BN_REG_BROADCAST_PORT,
                             json_integer (port)) == 0)
        zhashx_update (self->broadcast_via, uuid,
                       (void *)json_string_value (shared));
    else
        zhashx_delete (self->broadcast_via, uuid);
    bn_msg_set_content (reply, answer);
    s_send_query (self, &reply);

    s_expect (self, uuid, id, via);
    if (features &&
        bn_engine_table_set_features (self->engines, uuid, features) != 0)
        bn_log_error ("hub: out of memory registering %s", uuid);
}

//  --------------------------------------------------------------------------
//  Unregistration

//  why: why the engine was lost, for its EngineErrors, or NULL.
static void
s_fail_and_notify (bn_hub_t *self, const char *uuid, int id, const char *why)
{
    //  registered again under the same uuid (within the grace): adding it
    //  to the relays failed the old requests, and what they hold now is
    //  the new engine
    bn_relay_t *relay = bn_engine_table_id (self->engines, uuid) < 0
                            ? zlistx_first (self->relays)
                            : NULL;
    if (self->task && bn_engine_table_id (self->engines, uuid) < 0)
        bn_task_engine_lost (self->task, uuid, why);
    if (self->hosts && !bn_engine_table_has (self->engines, uuid))
        bn_hosts_unroute (self->hosts, uuid);
    while (relay) {
        bn_relay_engine_lost (relay, uuid, why);
        relay = zlistx_next (self->relays);
    }
    if (self->records && bn_engine_table_id (self->engines, uuid) < 0)
        bn_records_engine_gone (self->records, uuid);
    s_announce (self, BN_MSG_UNREGISTRATION_NOTIFICATION,
                json_pack ("{s:i, s:s}", "id", id, "uuid", uuid));
}

static int
s_on_leave (zloop_t *loop, int timer_id, void *arg)
{
    s_leaving_t *leaving = (s_leaving_t *)arg;
    bn_hub_t *self = leaving->hub;
    s_fail_and_notify (self, leaving->uuid, leaving->id, leaving->why);
    zlistx_delete (self->leaving, leaving->handle);
    return 0;
}

//  bn_hub_unregister, with why the engine was lost for its pending
//  requests' EngineErrors (NULL: they say it died).
static int
s_unregister (bn_hub_t *self, const char *uuid, const char *reason,
              const char *why)
{
    char *copy = strdup (uuid);
    if (!copy)
        return -1;
    bool pending = bn_engine_table_is_pending (self->engines, copy);
    int id = bn_engine_table_remove (self->engines, copy);
    if (id < 0) {
        free (copy);
        return -1;
    }
    bn_heart_forget (self->heart, copy);
    zhashx_delete (self->broadcast_via, copy);
    if (pending) {
        s_stall_end (self, copy);
        if (self->hosts)
            bn_hosts_unroute (self->hosts, copy);
        bn_log_info ("hub: pending registration %d:%s dropped (%s)", id, copy,
                     reason);
        free (copy);
        return id;
    }
    self->stats.unregistrations++;
    bn_log_info ("hub: engine %d:%s unregistered (%s)", id, copy, reason);
    s_tell_listeners (self, copy, id, false, why);
    s_state_later (self);
    size_t waiting = 0;
    bn_relay_t *relay = zlistx_first (self->relays);
    while (relay) {
        bn_relay_engine_close (relay, copy);
        waiting += bn_relay_queue_size (relay, copy);
        relay = zlistx_next (self->relays);
    }
    if (self->task) {
        bn_task_engine_close (self->task, copy);
        waiting += bn_task_engine_load (self->task, copy);
    }
    //  An engine lost with why is announced after the grace too, whatever
    //  it still has pending here: the broadcast tree fails its slots
    //  meanwhile, and a client hearing first of the unregistration (a
    //  7.1.0 one) would fail them itself saying only that it died
    s_leaving_t *leaving =
        (waiting || why) && self->loop ? calloc (1, sizeof *leaving) : NULL;
    if (leaving) {
        leaving->hub = self;
        leaving->uuid = copy;
        leaving->why = why ? strdup (why) : NULL;
        leaving->id = id;
        leaving->timer = zloop_timer (self->loop, self->stranded_timeout, 1,
                                      s_on_leave, leaving);
        if (leaving->timer >= 0)
            leaving->handle = zlistx_add_end (self->leaving, leaving);
        if (leaving->handle)
            return id;
        if (leaving->timer >= 0)
            zloop_timer_end (self->loop, leaving->timer);
        leaving->uuid = NULL;
        free (leaving->why);
        free (leaving);
    }
    s_fail_and_notify (self, copy, id, why);
    free (copy);
    return id;
}

int
bn_hub_unregister (bn_hub_t *self, const char *uuid, const char *reason)
{
    assert (self);
    assert (uuid);
    return s_unregister (self, uuid, reason, NULL);
}

//  --------------------------------------------------------------------------
//  Host nodes (doc/hosts.md)

//  Answer a host node's request with bn_host_reply and content (taken),
//  addressed to the host node itself (its link, without what follows it).
static void
s_host_reply (bn_hub_t *self, bn_msg_t *request, json_t *content)
{
    size_t size;
    const void *link = bn_msg_ident (request, 0, &size);
    bn_msg_t *reply =
        bn_msg_new_reply (self->session, request, BN_MSG_HOST_REPLY);
    if (reply)
        bn_msg_clear_idents (reply);
    if (!reply || !content || bn_msg_push_ident (reply, link, size) != 0) {
        json_decref (content);
        bn_msg_destroy (&reply);
        self->stats.send_failed++;
        return;
    }
    bn_msg_set_content (reply, content);
    s_send_query (self, &reply);
}

//  Engine uuid, which the host node of host still serves under id, is
//  registered through it (at once: the host node vouches for its heart).
//  Returns -1 if the engine cannot keep that id or is another link's.
static int
s_host_keep (bn_hub_t *self, s_host_t *host, const char *uuid, int id)
{
    const char *via = bn_hosts_via (self->hosts, uuid);
    bool ours = via && streq (via, host->link);
    if (bn_engine_table_has (self->engines, uuid)) {
        if (!ours)
            return -1;
        if (bn_engine_table_is_pending (self->engines, uuid))
            return s_finish (self, uuid) == id ? 0 : -1;
        return bn_engine_table_id (self->engines, uuid) == id ? 0 : -1;
    }
    if (id < 0 || bn_engine_table_uuid (self->engines, id, true) ||
        bn_engine_table_new_id (self->engines, id) != id)
        return -1;
    s_expect (self, uuid, id, host->link);
    return s_finish (self, uuid) == id ? 0 : -1;
}

//  Answer host's waiting bn_host_request: the engines it no longer serves
//  are lost, those it still serves are kept (or refused).
static void
s_host_welcome (bn_hub_t *self, s_host_t *host)
{
    bn_msg_t *hello = host->hello;
    host->hello = NULL;
    json_t *engines = json_object_get (bn_msg_content (hello), "engines");
    zhashx_t *listed = zhashx_new ();
    json_t *refused = json_array ();
    json_t *had = bn_hosts_engines (self->hosts, host->link);
    if (!listed || !refused || !had) {
        self->stats.send_failed++;
        goto done;
    }
    size_t index;
    json_t *pair;
    json_array_foreach (engines, index, pair) zhashx_update (
        listed, json_string_value (json_array_get (pair, 0)), host);
    json_t *uuid;
    json_array_foreach (
        had, index, uuid) if (!zhashx_lookup (listed, json_string_value (uuid)))
        bn_hub_unregister (self, json_string_value (uuid),
                           "no longer served by its host node");
    json_array_foreach (engines, index, pair)
    {
        const char *name = json_string_value (json_array_get (pair, 0));
        int id = (int)json_integer_value (json_array_get (pair, 1));
        if (s_host_keep (self, host, name, id) != 0) {
            bn_log_warn ("hub: host %s: engine %d:%s cannot come back",
                         host->name, id, name);
            json_array_append_new (refused, json_string (name));
        }
    }
    bn_log_info ("hub: host node %s (%s) serves %zu engines", host->name,
                 host->link,
                 json_array_size (engines) - json_array_size (refused));
    s_host_reply (
        self, hello,
        json_pack ("{s:s, s:i, s:i, s:i, s:O}", "status", BN_STATUS_OK, "index",
                   host->index, "hb_period", self->hb_period_ms, "hb_misses",
                   bn_heart_max_misses (self->heart), "refused", refused));
done:
    json_decref (had);
    json_decref (refused);
    zhashx_destroy (&listed);
    bn_msg_destroy (&hello);
}

//  The heart of link answered: the host node is told it is welcome.
static void
s_host_alive (bn_hub_t *self, const char *link)
{
    s_host_t *host = zhashx_lookup (self->links, link);
    if (!host)
        return;
    host->alive = true;
    if (host->ticket && self->loop)
        zloop_ticket_delete (self->loop, host->ticket);
    host->ticket = NULL;
    bn_log_info ("hub: host node %s is linked", host->name);
    if (host->hello)
        s_host_welcome (self, host);
}

//  Forget link, unregistering every engine behind it: what happened to its
//  host node ("stopped answering") is what their EngineErrors say, with
//  the host and the address the node connected from.
static void
s_host_lost (bn_hub_t *self, const char *link, const char *what)
{
    char *copy = strdup (link);
    s_host_t *host = copy ? zhashx_lookup (self->links, copy) : NULL;
    if (!host) {
        free (copy);
        return;
    }
    json_t *engines = bn_hosts_engines (self->hosts, copy);
    char why[400];
    snprintf (why, sizeof why, "host node on %s%s%s%s %s",
              host->name ? host->name : "an unnamed host",
              *host->address ? " (" : "", host->address,
              *host->address ? ")" : "", what);
    bn_log_warn ("hub: %s: %zu engines lost", why, json_array_size (engines));
    size_t index;
    json_t *uuid;
    json_array_foreach (engines, index, uuid)
    {
        if (s_unregister (self, json_string_value (uuid), why, why) >= 0)
            self->stats.heart_failures++;
    }
    json_decref (engines);
    self->stats.hosts_lost++;
    bn_heart_forget (self->heart, copy);
    bn_hosts_link_remove (self->hosts, copy);
    zhashx_delete (self->links, copy);
    free (copy);
}

static int
s_on_host_stall (zloop_t *loop, int timer_id, void *arg)
{
    s_host_t *host = (s_host_t *)arg;
    bn_hub_t *self = host->hub;
    host->ticket = NULL;
    if (host->hello) {
        char evalue[400];
        snprintf (evalue, sizeof evalue,
                  "no heartbeat from host node %s within %g s", host->name,
                  self->registration_timeout);
        self->stats.errors++;
        s_host_reply (self, host->hello,
                      bn_wire_error ("TimeoutError", evalue, NULL, NULL));
    }
    s_host_lost (self, host->link, "never answered");
    return 0;
}

//  True if engines is absent or a list of [uuid, id] pairs.
static bool
s_host_engines_ok (json_t *engines)
{
    if (!engines)
        return true;
    if (!json_is_array (engines))
        return false;
    size_t index;
    json_t *pair;
    json_array_foreach (engines, index, pair)
    {
        if (!json_is_array (pair) || json_array_size (pair) != 2 ||
            !json_is_string (json_array_get (pair, 0)) ||
            !s_uuid_ok (json_string_value (json_array_get (pair, 0))) ||
            !json_is_integer (json_array_get (pair, 1)) ||
            json_integer_value (json_array_get (pair, 1)) < 0 ||
            json_integer_value (json_array_get (pair, 1)) >= INT32_MAX)
            return false;
    }
    return true;
}

//  bn_host_request from the host node of link: say hello, or again.
static void
s_host_request (bn_hub_t *self, bn_msg_t *msg, const char *link)
{
    json_t *content = bn_msg_content (msg);
    json_t *name = json_object_get (content, "name");
    //  where its broadcast leaf hangs: a leaf of the engine file's list
    json_t *leaf = json_object_get (content, "leaf");
    json_t *leaf_id = json_object_get (content, "leaf_id");
    size_t leaves =
        json_array_size (json_object_get (self->connection_info, "broadcast"));
    bool leaf_ok =
        (!leaf && !leaf_id) ||
        (json_is_integer (leaf) && json_integer_value (leaf) >= 0 &&
         json_integer_value (leaf) < (json_int_t)leaves &&
         json_is_string (leaf_id) && s_uuid_ok (json_string_value (leaf_id)));
    if (!json_is_string (name) || !*json_string_value (name) ||
        strlen (json_string_value (name)) > S_UUID_MAX ||
        !s_host_engines_ok (json_object_get (content, "engines")) || !leaf_ok) {
        self->stats.bad_content++;
        self->stats.errors++;
        s_host_reply (self, msg,
                      bn_wire_error ("ValueError",
                                     BN_MSG_HOST_REQUEST
                                     " needs a 'name', 'engines' (a list "
                                     "of [uuid, id] pairs), and 'leaf' (a "
                                     "broadcast port's index) with 'leaf_id' "
                                     "or neither",
                                     NULL, NULL));
        return;
    }
    s_host_t *host = zhashx_lookup (self->links, link);
    if (!host) {
        host = calloc (1, sizeof *host);
        if (host) {
            host->hub = self;
            host->link = strdup (link);
            host->index = self->next_host;
        }
        if (!host || !host->link || bn_hosts_link_add (self->hosts, link) ||
            zhashx_insert (self->links, link, host)) {
            void *item = host;
            s_host_destroy (&item);
            self->stats.send_failed++;
            return;
        }
        self->next_host++;
    }
    if (leaf &&
        bn_hosts_set_leaf (self->hosts, link, (int)json_integer_value (leaf),
                           json_string_value (leaf_id)) != 0) {
        self->stats.send_failed++;
        return;
    }
    free (host->name);
    host->name = strdup (json_string_value (name));
    bn_msg_peer_address (msg, host->address, sizeof host->address);
    bn_msg_destroy (&host->hello);
    host->hello = bn_msg_dup (msg);
    if (!host->name || !host->hello) {
        self->stats.send_failed++;
        return;
    }
    bn_log_info ("hub: host node %s (%s) says hello", host->name, link);
    if (host->alive)
        s_host_welcome (self, host);
    else {
        bn_heart_expect (self->heart, link);
        if (!host->ticket && self->loop)
            host->ticket = zloop_ticket (self->loop, s_on_host_stall, host);
    }
}

//  bn_host_engines from host: engines whose hearts answered or stopped.
static void
s_host_engines (bn_hub_t *self, bn_msg_t *msg, s_host_t *host)
{
    json_t *content = bn_msg_content (msg);
    json_t *alive = json_object_get (content, "alive");
    json_t *lost = json_object_get (content, "lost");
    if ((alive && !json_is_array (alive)) || (lost && !json_is_array (lost))) {
        self->stats.bad_content++;
        bn_log_warn ("hub: host %s: bad " BN_MSG_HOST_ENGINES, host->name);
        return;
    }
    char why[300];
    snprintf (why, sizeof why, "heart failure on host %s", host->name);
    size_t index;
    json_t *uuid;
    json_array_foreach (lost, index, uuid)
    {
        const char *via = bn_hosts_via (self->hosts, json_string_value (uuid));
        if (via && streq (via, host->link) &&
            bn_hub_unregister (self, json_string_value (uuid), why) >= 0)
            self->stats.heart_failures++;
    }
    json_array_foreach (alive, index, uuid)
    {
        const char *via = bn_hosts_via (self->hosts, json_string_value (uuid));
        if (via && streq (via, host->link))
            s_finish (self, json_string_value (uuid));
    }
}

static void s_dispatch (bn_hub_t *self, bn_msg_t *msg, const char *via);

//  A message through a host node's link: the host node's own (one ident),
//  or one of its engines' it passes on.
static void
s_from_link (bn_hub_t *self, bn_msg_t *msg)
{
    char *link = bn_msg_ident_strdup (msg, 0);
    if (!link) {
        self->stats.send_failed++;
        return;
    }
    s_host_t *host = zhashx_lookup (self->links, link);
    const char *type = bn_msg_type (msg);
    bool own = bn_msg_nidents (msg) == 1;
    if (own && streq (type, BN_MSG_HOST_REQUEST))
        s_host_request (self, msg, link);
    else if (!host) {
        //  a link lost, or known to a controller before this one: the host
        //  node says hello again when it hears this
        char evalue[400];
        snprintf (evalue, sizeof evalue, "unknown host link '%s'", link);
        self->stats.errors++;
        bn_log_info ("hub: %s from %s", type, evalue);
        s_host_reply (self, msg,
                      bn_wire_error ("KeyError", evalue, NULL, NULL));
    } else if (!host->alive)
        bn_log_debug ("hub: %s from host node %s before its heart", type,
                      host->name);
    else if (own && streq (type, BN_MSG_HOST_ENGINES))
        s_host_engines (self, msg, host);
    else if (own) {
        self->stats.unsupported++;
        s_hub_error (self, msg, "NotImplementedError",
                     "'%.200s' is not a host node's message", type);
    } else
        s_dispatch (self, msg, link);
    free (link);
}

//  Engine uuid's heart stopped, or its connection closed (why): it is
//  unregistered as for a heart failure, and kept in the lost table.
static void
s_heart_lost (bn_hub_t *self, const char *uuid, const char *why)
{
    bool pending = bn_engine_table_is_pending (self->engines, uuid);
    //  one that beats again is reached as before
    char *via = zhashx_lookup (self->broadcast_via, uuid);
    via = via ? strdup (via) : NULL;
    int id = bn_hub_unregister (self, uuid, why);
    if (id >= 0) {
        self->stats.heart_failures++;
        if (!pending && zhashx_size (self->lost) < S_LOST_MAX) {
            zhashx_update (self->lost, uuid, (void *)(intptr_t)(id + 1));
            if (via)
                zhashx_update (self->broadcast_via, uuid, via);
        }
    }
    free (via);
}

static void
s_on_stopped_heart (void *arg, const char *uuid)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    if (zhashx_lookup (self->links, uuid))
        s_host_lost (self, uuid, "stopped answering");
    else
        s_heart_lost (self, uuid, "heart failure");
}

//  A pong from a heart the monitor does not know: an engine lost to heart
//  failure that beats again waits for its next pong under its old id.
static void
s_on_unknown_heart (void *arg, const char *uuid)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    void *lost = zhashx_lookup (self->lost, uuid);
    if (!lost || self->shutting_down)
        return;
    zhashx_delete (self->lost, uuid);
    int id = (int)((intptr_t)lost - 1);
    if (bn_engine_table_has (self->engines, uuid) ||
        bn_engine_table_new_id (self->engines, id) != id) {
        bn_log_warn ("hub: engine %d:%s beats again, but its id or uuid is "
                     "taken",
                     id, uuid);
        return;
    }
    self->stats.returned++;
    bn_log_warn ("hub: engine %d:%s beats again", id, uuid);
    s_expect (self, uuid, id, NULL);
}

//  A heart's pong connection closed: the process at its end died (or
//  closed it), which is known at once instead of a heartbeat bound later.
//  A host node's link loses its engines, so that its launcher may start it
//  again and its engines come back under their ids; an engine is lost as
//  for a heart failure (one still alive comes back as one whose heart
//  beats again).
static void
s_on_closed_heart (void *arg, const char *uuid)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    if (zhashx_lookup (self->links, uuid))
        s_host_lost (self, uuid, "closed its connection");
    else
        s_heart_lost (self, uuid, "its connection closed");
}

static void
s_on_iopub_shutdown (void *arg, bn_msg_t *msg)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    const char *uuid = bn_msg_session (msg);
    if (uuid && bn_engine_table_id (self->engines, uuid) >= 0)
        bn_hub_unregister (self, uuid, BN_MSG_SHUTDOWN_REPLY " on iopub");
}

void
bn_hub_watch_iopub (bn_hub_t *self, bn_relay_t *iopub)
{
    assert (self);
    assert (iopub);
    bn_relay_set_watch (iopub, BN_MSG_SHUTDOWN_REPLY, s_on_iopub_shutdown,
                        self);
}

static void
s_unregistration_request (bn_hub_t *self, bn_msg_t *request)
{
    json_t *id_value = json_object_get (bn_msg_content (request), "id");
    if (!json_is_integer (id_value)) {
        if (id_value && !json_is_null (id_value))
            self->stats.bad_content++;
        bn_log_debug ("hub: unregistration_request without an engine id");
        return;
    }
    json_int_t id = json_integer_value (id_value);
    const char *uuid = id >= 0 && id < INT32_MAX
                           ? bn_engine_table_uuid (self->engines, (int)id, true)
                           : NULL;
    if (!uuid) {
        bn_log_info (
            "hub: engine %" JSON_INTEGER_FORMAT " already unregistered", id);
        return;
    }
    bn_hub_unregister (self, uuid, BN_MSG_UNREGISTRATION_REQUEST);
}

//  --------------------------------------------------------------------------
//  Queries

//  The wait for new clients' subscriptions is over: what waited goes out.
static int
s_on_join_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    self->join_timer = -1;
    self->joining = 0;
    if (self->state_timer < 0)
        s_state_flush (self);
    return 0;
}

//  Subscriptions reaching the notifier: each one ends a client's join.
static int
s_on_subscription (zloop_t *loop, zsock_t *sock, void *arg)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    while (zmq_msg_recv (&frame, zsock_resolve (sock), ZMQ_DONTWAIT) >= 0) {
        if (zmq_msg_size (&frame) == 0 ||
            *(unsigned char *)zmq_msg_data (&frame) != 1)
            continue;
        if (self->joining > 0)
            self->joining--;
        else {
            //  a client that subscribed before asking (libbanyan's)
            self->early++;
            self->early_until = zclock_mono () + S_JOIN_MS;
        }
    }
    zmq_msg_close (&frame);
    if (self->joining > 0)
        return 0;
    if (self->join_timer >= 0)
        zloop_timer_end (loop, self->join_timer);
    self->join_timer = -1;
    if (self->state_timer < 0)
        s_state_flush (self);
    return 0;
}

static void
s_connection_request (bn_hub_t *self, bn_msg_t *request)
{
    s_reply (self, request, BN_MSG_CONNECTION_REPLY,
             json_pack ("{s:s, s:o, s:o}", "status", BN_STATUS_OK, "engines",
                        bn_engine_table_engines (self->engines),
                        BN_REG_FEATURES,
                        bn_engine_table_all_features (self->engines)));
    if (!self->loop || zsock_type (self->notifier) != ZMQ_XPUB)
        return;
    if (self->early > 0 && zclock_mono () < self->early_until) {
        self->early--;
        return;
    }
    self->early = 0;
    //  one wait for the clients that come together, so that clients that
    //  never subscribe, however often they come, hold nothing for long
    if (self->joining++ > 0)
        return;
    self->join_timer =
        zloop_timer (self->loop, S_JOIN_MS, 1, s_on_join_timer, self);
    if (self->join_timer < 0)
        self->joining = 0;
}

//  Resolve one queue_request target to a registered id, or -1.
static int
s_target_id (bn_hub_t *self, json_t *target)
{
    if (json_is_integer (target)) {
        json_int_t id = json_integer_value (target);
        if (id < 0 || id >= INT32_MAX ||
            !bn_engine_table_uuid (self->engines, (int)id, false))
            return -1;
        return (int)id;
    }
    if (json_is_string (target))
        return bn_engine_table_id (self->engines, json_string_value (target));
    return -1;
}

static void
s_queue_request (bn_hub_t *self, bn_msg_t *request)
{
    json_t *content = bn_msg_content (request);
    json_t *targets = json_object_get (content, "targets");
    json_t *verbose_value = json_object_get (content, "verbose");
    if (verbose_value && !json_is_boolean (verbose_value) &&
        !json_is_null (verbose_value)) {
        self->stats.bad_content++;
        s_hub_error (self, request, "TypeError",
                     "queue_request 'verbose' must be true or false");
        return;
    }
    bool verbose = json_is_true (verbose_value);
    json_t *ids;
    if (!targets || json_is_null (targets))
        ids = bn_engine_table_ids (self->engines);
    else if (json_is_integer (targets) || json_is_string (targets))
        ids = json_pack ("[O]", targets);
    else if (json_is_array (targets))
        ids = json_incref (targets);
    else {
        self->stats.bad_content++;
        s_hub_error (self, request, "TypeError",
                     "queue_request 'targets' must be null, an engine id, "
                     "a uuid or a list of them");
        return;
    }
    if (!ids) {
        self->stats.send_failed++;
        return;
    }
    if (json_array_size (ids) == 0 && targets && !json_is_null (targets)) {
        json_decref (ids);
        s_hub_error (self, request, "IndexError", "No Engines Registered");
        return;
    }
    char bad[1024] = "";
    size_t nbad = 0;
    size_t index;
    json_t *target;
    json_array_foreach (ids, index, target)
    {
        if (s_target_id (self, target) < 0) {
            strncat (bad, nbad++ ? ", " : "[", sizeof bad - strlen (bad) - 1);
            bn_wire_repr (target, bad, sizeof bad);
        }
    }
    if (nbad) {
        json_decref (ids);
        strncat (bad, "]", sizeof bad - strlen (bad) - 1);
        s_hub_error (self, request, "IndexError", "No Such Engine: %s", bad);
        return;
    }
    json_t *reply = json_pack ("{s:s}", "status", BN_STATUS_OK);
    json_array_foreach (ids, index, target)
    {
        int id = s_target_id (self, target);
        const char *uuid = bn_engine_table_uuid (self->engines, id, false);
        json_t *queue, *completed, *tasks;
        if (self->records) {
            bn_records_t *r = self->records;
            queue = verbose ? bn_records_queue_ids (r, uuid)
                            : json_integer (
                                  (json_int_t)bn_records_queue_count (r, uuid));
            completed =
                verbose ? bn_records_completed_ids (r, uuid)
                        : json_integer (
                              (json_int_t)bn_records_completed_count (r, uuid));
            tasks = verbose ? bn_records_tasks_ids (r, uuid)
                            : json_integer (
                                  (json_int_t)bn_records_tasks_count (r, uuid));
        } else if (!self->counts) {
            queue = verbose ? json_array () : json_integer (0);
            completed = verbose ? json_array () : json_integer (0);
            tasks = verbose ? json_array () : json_integer (0);
        } else if (verbose) {
            queue = bn_relay_queue_ids (self->counts, uuid);
            completed = bn_relay_completed_ids (self->counts, uuid);
            tasks = json_array ();
        } else {
            queue = json_integer (
                (json_int_t)bn_relay_queue_size (self->counts, uuid));
            completed = json_integer (
                (json_int_t)bn_relay_completed_size (self->counts, uuid));
            tasks = json_integer (0);
        }
        if (self->task) {
            //  the task scheduler knows best what each engine holds
            json_decref (tasks);
            tasks = verbose ? bn_task_engine_tasks (self->task, uuid)
                            : json_integer ((json_int_t)bn_task_engine_load (
                                  self->task, uuid));
        }
        char key[16];
        snprintf (key, sizeof key, "%d", id);
        json_object_set_new (reply, key,
                             json_pack ("{s:o, s:o, s:o}", "queue", queue,
                                        "completed", completed, "tasks",
                                        tasks));
    }
    json_decref (ids);
    json_t *unassigned;
    if (self->task)
        unassigned =
            verbose
                ? bn_task_unassigned_ids (self->task)
                : json_integer ((json_int_t)bn_task_unassigned (self->task));
    else if (self->records)
        unassigned =
            verbose ? bn_records_unassigned_ids (self->records)
                    : json_integer ((json_int_t)bn_records_unassigned_count (
                          self->records));
    else
        unassigned = verbose ? json_array () : json_integer (0);
    json_object_set_new (reply, "unassigned", unassigned);
    s_reply (self, request, BN_MSG_QUEUE_REPLY, reply);
}

static int
s_on_shutdown (zloop_t *loop, int timer_id, void *arg)
{
    bn_hub_t *self = (bn_hub_t *)arg;
    bn_log_info ("hub: shutting down");
    return self->shutdown_fn ? self->shutdown_fn (self->shutdown_arg) : 0;
}

static void
s_shutdown_request (bn_hub_t *self, bn_msg_t *request)
{
    s_reply (self, request, BN_MSG_SHUTDOWN_REPLY,
             json_pack ("{s:s}", "status", BN_STATUS_OK));
    self->joining = 0;
    s_state_flush (self);
    s_notify (self, BN_MSG_SHUTDOWN_NOTIFICATION,
              json_pack ("{s:s}", "status", BN_STATUS_OK), request);
    if (self->shutting_down)
        return;
    self->shutting_down = true;
    bn_log_info ("hub: shutdown requested");
    if (self->loop)
        zloop_timer (self->loop, BN_HUB_SHUTDOWN_DELAY, 1, s_on_shutdown, self);
}

//  bn_stats_request, banyan's extension: {"status": "ok", "actors":
//  {name: {counter: value, ...}, ...}}.
static void
s_stats_request (bn_hub_t *self, bn_msg_t *request)
{
    json_t *actors = self->stats_fn (self->stats_arg);
    if (!json_is_object (actors)) {
        json_decref (actors);
        self->stats.errors++;
        s_reply (self, request, BN_MSG_STATS_REPLY,
                 bn_wire_error ("MemoryError", "cannot gather the counters",
                                NULL, NULL));
        return;
    }
    s_reply (
        self, request, BN_MSG_STATS_REPLY,
        json_pack ("{s:s, s:o}", "status", BN_STATUS_OK, "actors", actors));
}

static void
s_handle_query (bn_hub_t *self, bn_msg_t *msg)
{
    if (bn_msg_check (msg, self->session, BN_MSG_CHECK_REPLAY,
                      &self->stats.drops, "hub"))
        return;
    if (bn_msg_nidents (msg) == 0) {
        self->stats.drops.bad_frame++;
        bn_log_warn ("hub: dropped a query without a routing id");
        return;
    }
    if (!bn_msg_header (msg)) {
        //  a reply would carry this header as its parent: drop instead
        self->stats.bad_json++;
        bn_log_warn ("hub: dropped a query whose header is not JSON");
        return;
    }
    const char *type = bn_msg_type (msg);
    if (!type || !bn_msg_id (msg)) {
        self->stats.bad_content++;
        s_hub_error (self, msg, "KeyError",
                     "the header needs string 'msg_id' and 'msg_type'");
        return;
    }
    static const char *names[] = {"parent_header", "metadata", "content"};
    for (int part = BN_PART_PARENT; part <= BN_PART_CONTENT; part++)
        if (!bn_msg_part (msg, (bn_part_t)part)) {
            self->stats.bad_json++;
            s_hub_error (self, msg, "ValueError",
                         "%s of %s is not a JSON object", names[part - 1],
                         type);
            return;
        }
    bn_log_debug ("hub: %s", type);
    size_t size;
    const void *first = bn_msg_ident (msg, 0, &size);
    if (self->hosts && bn_hosts_is_link_id (first, size))
        s_from_link (self, msg);
    else
        s_dispatch (self, msg, NULL);
}

//  Answer a query (through the host node of link via, or NULL).
static void
s_dispatch (bn_hub_t *self, bn_msg_t *msg, const char *via)
{
    const char *type = bn_msg_type (msg);
    if (streq (type, BN_MSG_REGISTRATION_REQUEST))
        s_registration_request (self, msg, via);
    else if (streq (type, BN_MSG_UNREGISTRATION_REQUEST))
        s_unregistration_request (self, msg);
    else if (streq (type, BN_MSG_CONNECTION_REQUEST))
        s_connection_request (self, msg);
    else if (streq (type, BN_MSG_QUEUE_REQUEST))
        s_queue_request (self, msg);
    else if (streq (type, BN_MSG_SHUTDOWN_REQUEST))
        s_shutdown_request (self, msg);
    else if (self->stats_fn && streq (type, BN_MSG_STATS_REQUEST))
        s_stats_request (self, msg);
    else if (self->queries && bn_record_queries_handles (type)) {
        bn_msg_t *reply = bn_record_queries_answer (self->queries, msg);
        s_send_query (self, &reply);
    } else {
        self->stats.unsupported++;
        s_hub_error (self, msg, "NotImplementedError",
                     "'%.200s' is not supported by banyan-controller", type);
    }
}

int
bn_hub_query_ready (bn_hub_t *self)
{
    assert (self);
    void *handle = zsock_resolve (self->query);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.queries++;
        s_handle_query (self, msg);
        bn_msg_destroy (&msg);
    }
    return 0;
}

static int
s_on_query (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_hub_query_ready ((bn_hub_t *)arg);
}

int
bn_hub_attach (bn_hub_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    self->loop = loop;
    zloop_set_ticket_delay (loop,
                            (size_t)(self->registration_timeout * 1000.0));
    bn_heart_set_handlers (self->heart, s_on_new_heart, s_on_stopped_heart,
                           self);
    bn_heart_set_closed_handler (self->heart, s_on_closed_heart);
    bn_heart_set_unknown_handler (self->heart, s_on_unknown_heart);
    //  one descriptor in the loop for both sockets (bn_watch)
    self->sockets = bn_watch_new (loop);
    return !self->sockets ||
                   !(self->query_item = bn_watch_zreader (
                         self->sockets, self->query, s_on_query, self)) ||
                   !(self->notify_item =
                         bn_watch_zreader (self->sockets, self->notifier,
                                           s_on_subscription, self))
               ? -1
               : 0;
}

json_t *
bn_hub_stats (bn_hub_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    uint64_t queries_bad_content =
        self->queries ? bn_record_queries_bad_content (self->queries) : 0;
    uint64_t queries_errors =
        self->queries ? bn_record_queries_errors (self->queries) : 0;
    json_t *hosts = self->hosts ? bn_hosts_stats (self->hosts) : NULL;
    json_int_t host_engines =
        json_integer_value (json_object_get (hosts, "engines"));
    json_int_t host_stray =
        json_integer_value (json_object_get (hosts, "stray"));
    json_decref (hosts);
    return json_pack (
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "queries", (json_int_t)s->queries, "bad_frame",
        (json_int_t)s->drops.bad_frame, "bad_signature",
        (json_int_t)s->drops.bad_signature, "replayed",
        (json_int_t)s->drops.replayed, "bad_json", (json_int_t)s->bad_json,
        "bad_content", (json_int_t)(s->bad_content + queries_bad_content),
        "unsupported", (json_int_t)s->unsupported, "errors",
        (json_int_t)(s->errors + queries_errors), "registrations",
        (json_int_t)s->registrations, "refused", (json_int_t)s->refused,
        "purged", (json_int_t)s->purged, "unregistrations",
        (json_int_t)s->unregistrations, "heart_failures",
        (json_int_t)s->heart_failures, "returned", (json_int_t)s->returned,
        "hosts", (json_int_t)zhashx_size (self->links), "hosts_lost",
        (json_int_t)s->hosts_lost, "host_engines", host_engines, "host_stray",
        host_stray, "send_failed", (json_int_t)s->send_failed, "engines",
        (json_int_t)bn_engine_table_size (self->engines), "pending",
        (json_int_t)zhashx_size (self->stalls));
}

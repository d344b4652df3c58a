/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine_actor: N logical engines in one zloop.

    Besides the engines, the loop holds what they share: the iopub PUB,
    the heartbeat SUB (each ping is echoed by every running engine), the
    registration DEALER, the function table, and one periodic timer that checks
   every engine's deadlines (one timer rather than one per engine keeps zloop's
    timer list short with thousands of engines).

    The first engine registers alone on the shared DEALER: when the reply
    names its session as its parent's (banyan's hub), the others register
    there too, each reply going to the engine its parent names; when it
    does not (7.1.0's hub), or no reply comes, each other engine registers
    on a socket of its own, as ipengine does, so that no reply can go to
    the wrong engine.

    Behind a banyan host node (bn_shared_channels in its connection file),
    the engines also share their shell, control and pong sockets, one
    connection per channel for the whole process: the loop reads shell and
    control and hands each request to the engine named in its second
    routing frame (doc/wire.md 4.1).

    At most BN_ENGINE_REGISTERING_MAX engines register at once; the next starts
    when one of them is answered. Thousands of engines that all ask at
    once only queue at the controller (or their host node), and each
    would count that queue against its own registration timeout; in
    turns, an engine's timeout measures how long the controller takes to
    answer it.

    Straight to banyan-controller, the engines of a process offer to share
    one broadcast connection (engine.share_broadcast, doc/wire.md 4.1): a
    ROUTER of routing id `bn-shared <uuid>`, connected to the port the hub
    names when it takes the offer. A request there reads [leaf, uuid,
    ...] and goes to the engine it names, as on the shared channels; the
    engines keep their own mux, task and control connections. One
    request to the engines of the process is then one batch on one
    connection, not one on each engine's.

    Every socket, the engines' and the shared ones, sits in one bn_watch
    set, the only item the zloop polls: a wake-up looks only at the
    sockets that have work (zloop would look at every reader on every
    turn, a poll and more inside libzmq for each). An engine that stops
    cancels its watches, which is safe anywhere, the timer included.  */
#include "bn_engine_actor.h"
#include "bn_curve.h"
#include "bn_engine.h"
#include "bn_log.h"
#include "bn_msgtypes.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define S_TICK_MS 100 //  deadline check period
//  An engine holds 3 sockets (shell, control, pong) and 8 descriptors: 3
//  socket mailboxes and 5 TCP connections (mux, task, broadcast, control,
//  hb_pong), none when they share them; a running command 3 more.
#define S_SOCKETS_PER_ENGINE 3
#define S_DRAIN 256 //  registration replies read per wake-up
#define S_FDS_PER_ENGINE 8
#define S_FDS_PER_COMMAND 3
//  Engines of a process whose replay histories are sized whole at the
//  start (about 4 MiB each): a few engines a process stay flat from the
//  start, many engines a process keep histories that grow with their
//  traffic only
#define S_RESERVED_HISTORIES 4

//  Where the engines register (see above).
typedef enum {
    S_PROBING, //  the first engine asks on the shared DEALER, alone
    S_SHARED,  //  the hub names the parent: all on the shared DEALER
    S_OWN      //  each on a DEALER of its own
} s_mode_t;

typedef struct {
    zsock_t *pipe;     //  to the actor's owner
    zloop_t *loop;     //  runs the timers and polls watch
    bn_watch_t *watch; //  every socket: the engines' and those below
    //  the watches of the sockets below, by their handlers' order
    bn_watch_item_t *ping_item, *handshake_item, *registration_item, *pipe_item,
        *shell_item, *control_item;
    bn_connfile_t *connfile;
    zsock_t *iopub;        //  shared PUB
    zsock_t *ping;         //  shared heartbeat SUB
    zsock_t *registration; //  shared DEALER: (un)registration_request
    zsock_t *shell;        //  shared ROUTER (shared channels), or NULL
    zsock_t *control;      //  ditto
    zsock_t *pong;         //  shared DEALER (shared channels), or NULL
    zsock_t *broadcast;    //  shared broadcast ROUTER, once joined
    bn_watch_item_t *broadcast_item;
    char broadcast_via[64]; //  its routing id, "": not offered
    bool *joined;           //  broadcast ports it is connected to
    uint64_t strays;        //  shared requests for no running engine of ours
    zsock_t *handshakes;    //  its monitor until a handshake succeeds
    int refusals;           //  handshakes the controller refused (bn_curve)
    zlistx_t *waiting;      //  engines waiting to start a command
    bn_functions_t *functions;
    bn_apply_memo_t *apply_memo; //  the engines' last apply_request
    zcert_t *curve_cert;         //  when the controller uses CURVE
    char *cwd;
    bn_engine_env_t env; //  handed to every engine
    bn_engine_t **engines;
    zhashx_t *by_uuid;  //  uuid -> bn_engine_t *, for registration replies
    s_mode_t mode;      //  where the engines register
    bn_engine_t *probe; //  the engine asking while S_PROBING, or NULL
    int count;
    int started;        //  engines[0..started) have asked to register
    bool starting;      //  inside s_start_more: no recursion
    int running;        //  engines in BN_ENGINE_RUNNING
    int stopped;        //  engines in BN_ENGINE_STOPPED
    int exit_code;      //  highest exit code of a stopped engine
    bool reported;      //  STOPPED was sent
    bool stop_asked;    //  STOP: end the loop, then wait for $TERM
    int64_t wait_until; //  pending WAIT deadline, or 0
} s_actor_t;

static void
s_report_stopped (s_actor_t *self)
{
    if (self->reported)
        return;
    self->reported = true;
    zstr_sendx (self->pipe, "STOPPED",
                self->exit_code == 255 ? "255"
                : self->exit_code      ? "1"
                                       : "0",
                NULL);
    if (self->watch)
        bn_watch_check (self->watch, self->pipe_item);
}

//  Answer a pending WAIT once every engine has registered or settled.
static void
s_check_wait (s_actor_t *self, int64_t now)
{
    if (!self->wait_until)
        return;
    bool failed = false, registering = false;
    for (int i = 0; i < self->count; i++) {
        bn_engine_t *engine = self->engines[i];
        if (bn_engine_state (engine) == BN_ENGINE_REGISTERING)
            registering = true;
        else if (bn_engine_state (engine) == BN_ENGINE_STOPPED &&
                 bn_engine_id (engine) < 0)
            failed = true;
    }
    const char *answer = NULL;
    if (!registering)
        answer = failed ? "FAILED" : "OK";
    else if (now >= self->wait_until)
        answer = "TIMEOUT";
    if (answer) {
        zstr_send (self->pipe, answer);
        bn_watch_check (self->watch, self->pipe_item);
        self->wait_until = 0;
    }
}

//  Start engines, in order, while fewer than BN_ENGINE_REGISTERING_MAX of the
//  started ones wait for their registration_reply.
static void
s_start_more (s_actor_t *self)
{
    if (self->starting)
        return;
    self->starting = true;
    while (self->started < self->count &&
           self->started - self->running - self->stopped <
               (self->mode == S_PROBING ? 1 : BN_ENGINE_REGISTERING_MAX)) {
        bn_engine_t *engine = self->engines[self->started++];
        //  one stopped before its turn (a refused handshake, the end)
        if (bn_engine_state (engine) != BN_ENGINE_REGISTERING)
            continue;
        if (bn_engine_start (engine, self->mode != S_OWN)) {
            bn_log_error ("engine %d: cannot reach the registration URL",
                          self->started - 1);
            bn_engine_stop (engine, BN_ENGINE_EXIT_REGISTRATION);
        } else if (self->mode == S_PROBING)
            self->probe = engine;
    }
    self->starting = false;
}

static void
s_on_state (bn_engine_t *engine, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    //  the first engine had no answer on the shared socket: a late one
    //  must not go to another engine
    if (engine == self->probe &&
        bn_engine_state (engine) == BN_ENGINE_STOPPED) {
        self->probe = NULL;
        self->mode = S_OWN;
    }
    //  registered: one more running (engines register one at a time, and
    //  counting them all each time cost a thousand engines a million
    //  looks); a stop, rarer, counts again, as the engine may be one whose
    //  turn had not come
    if (bn_engine_state (engine) == BN_ENGINE_RUNNING)
        self->running++;
    else {
        self->running = 0;
        self->stopped = 0;
        for (int i = 0; i < self->count; i++) {
            if (!self->engines[i])
                continue;
            bn_engine_state_t state = bn_engine_state (self->engines[i]);
            self->running += state == BN_ENGINE_RUNNING;
            self->stopped += i < self->started && state == BN_ENGINE_STOPPED;
        }
    }
    if (bn_engine_state (engine) == BN_ENGINE_STOPPED &&
        (int)bn_engine_exit_code (engine) > self->exit_code)
        self->exit_code = (int)bn_engine_exit_code (engine);
    s_start_more (self);
    s_check_wait (self, zclock_mono ());
    if (self->stopped == self->count)
        s_report_stopped (self);
}

//  Hand each registration reply waiting on the shared socket to the engine
//  that asked (its parent's session); drop what names none.
static void
s_registration_drain (s_actor_t *self)
{
    for (int n = 0; n < S_DRAIN; n++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (self->registration),
                                           ZMQ_DONTWAIT);
        if (!msg)
            break;
        const char *session = bn_msg_parent_session (msg);
        bn_engine_t *engine =
            session ? zhashx_lookup (self->by_uuid, session) : NULL;
        //  a hub that does not name the parent: the first engine's answer
        bool unnamed = !session && self->probe;
        if (unnamed)
            engine = self->probe;
        if (engine) {
            bool probe = engine == self->probe;
            //  once it is taken as the reply (not before: what it drops
            //  decides nothing), the others register on the shared socket,
            //  or on sockets of their own
            if (probe)
                self->mode = unnamed ? S_OWN : S_SHARED;
            if (bn_engine_registration_reply (engine, &msg) == 0 && probe)
                self->probe = NULL;
            else if (probe && self->probe)
                self->mode = S_PROBING;
        } else {
            bn_log_warn ("engines: dropped a %s for no engine of ours",
                         bn_msg_type (msg) ? bn_msg_type (msg) : "message");
            bn_msg_destroy (&msg);
        }
    }
}

static int
s_registration_event (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_registration_drain ((s_actor_t *)arg);
    return 0;
}

static int
s_tick_timer (zloop_t *loop, int timer_id, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    //  a reply may be waiting behind other engines' work: read it before
    //  judging deadlines
    s_registration_drain (self);
    bn_watch_check (self->watch, self->registration_item);
    int64_t now = zclock_mono ();
    //  an engine not started yet has no deadline
    for (int i = 0; i < self->started; i++)
        bn_engine_tick (self->engines[i], now);
    s_check_wait (self, now);
    return 0;
}

//  The registration port's handshakes: watched until one succeeds; when
//  the controller refuses them, the engines still registering stop now
//  with the reason instead of at their registration timeout.
static int
s_handshake_event (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    zmsg_t *msg = zmsg_recv (sock);
    zframe_t *first = msg ? zmsg_first (msg) : NULL;
    uint16_t event = 0;
    if (first && zframe_size (first) >= sizeof event)
        memcpy (&event, zframe_data (first), sizeof event);
    zmsg_destroy (&msg);
    bool refused = bn_curve_refused (&self->refusals, event);
    if (refused || event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        zmq_socket_monitor (zsock_resolve (self->registration), NULL, 0);
        bn_watch_cancel (self->watch, &self->handshake_item);
    }
    if (refused) {
        bn_log_error (
            "the controller refuses the engines' security handshake: %s",
            bn_curve_refusal (bn_connfile_curve_serverkey (self->connfile) !=
                              NULL));
        //  none starts any more
        self->started = self->count;
        for (int i = 0; i < self->count; i++)
            if (bn_engine_state (self->engines[i]) == BN_ENGINE_REGISTERING)
                bn_engine_stop (self->engines[i], BN_ENGINE_EXIT_REGISTRATION);
    }
    return 0;
}

static int
s_ping_event (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    for (int n = 0; n < 16; n++) {
        zmq_msg_t ping;
        zmq_msg_init (&ping);
        if (zmq_msg_recv (&ping, zsock_resolve (sock), ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&ping);
            break;
        }
        bool more = zmq_msg_more (&ping);
        //  A ping is one frame; anything longer is not from a heart.
        if (!more)
            for (int i = 0; i < self->count; i++)
                bn_engine_ping (self->engines[i], &ping);
        zmq_msg_close (&ping);
        while (more) {
            zmq_msg_t rest;
            zmq_msg_init (&rest);
            if (zmq_msg_recv (&rest, zsock_resolve (sock), 0) < 0)
                more = false;
            else
                more = zmq_msg_more (&rest);
            zmq_msg_close (&rest);
        }
    }
    return 0;
}

//  Hand each request waiting on a shared socket to the engine it names
//  ([peer, uuid, ...]); drop what names none of ours. The socket is
//  watched as a reader: read until it is empty, or ask to be called again.
static void
s_shared_drain (s_actor_t *self, bn_watch_item_t *item, zsock_t *sock,
                bool control)
{
    for (int n = 0; n < S_DRAIN; n++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT);
        if (!msg)
            return;
        char *uuid =
            bn_msg_nidents (msg) >= 2 ? bn_msg_ident_strdup (msg, 1) : NULL;
        bn_engine_t *engine = uuid ? zhashx_lookup (self->by_uuid, uuid) : NULL;
        free (uuid);
        if (!engine || bn_engine_state (engine) != BN_ENGINE_RUNNING) {
            self->strays++;
            bn_log_debug ("engines: dropped a %s for no running engine of ours",
                          bn_msg_type (msg) ? bn_msg_type (msg) : "message");
            bn_msg_destroy (&msg);
        } else if (control)
            bn_engine_control_request (engine, &msg);
        else
            bn_engine_shell_request (engine, &msg);
    }
    bn_watch_again (self->watch, item);
}

static void
s_shared_shell_event (bn_watch_item_t *item, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    s_shared_drain (self, item, self->shell, false);
}

static void
s_shared_control_event (bn_watch_item_t *item, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    s_shared_drain (self, item, self->control, true);
}

static void
s_shared_broadcast_event (bn_watch_item_t *item, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    s_shared_drain (self, item, self->broadcast, false);
}

static zsock_t *s_shared_channel (s_actor_t *self, int type,
                                  const char *identity, bool broadcast,
                                  const char **keys);

//  Connect the shared broadcast ROUTER, made and watched the first time,
//  to broadcast port `port` unless it is already (env.broadcast_join).
static int
s_broadcast_join (int port, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    if (self->joined[port])
        return 0;
    if (!self->broadcast) {
        static const char *none[] = {NULL};
        self->broadcast = s_shared_channel (self, ZMQ_ROUTER,
                                            self->broadcast_via, false, none);
        self->broadcast_item =
            self->broadcast
                ? bn_watch_reader (self->watch, zsock_resolve (self->broadcast),
                                   s_shared_broadcast_event, self)
                : NULL;
        if (!self->broadcast_item) {
            bn_log_error ("engines: cannot make the shared broadcast socket");
            zsock_destroy (&self->broadcast);
            return -1;
        }
        self->env.broadcast = self->broadcast;
        self->env.broadcast_item = self->broadcast_item;
    }
    char *url = bn_connfile_broadcast_url (self->connfile, (size_t)port);
    int rc = url ? zsock_connect (self->broadcast, "%s", url) : -1;
    if (rc)
        bn_log_error ("engines: cannot connect the shared broadcast socket "
                      "to %s",
                      url ? url : "its port");
    else {
        self->joined[port] = true;
        bn_log_info ("engines: their broadcast requests come through %s as "
                     "'%s'",
                     url, self->broadcast_via);
    }
    free (url);
    return rc;
}

static char *
s_list (s_actor_t *self, bool uuids)
{
    size_t size = (size_t)self->count * 40 + 1;
    char *text = calloc (1, size);
    if (!text)
        return NULL;
    size_t used = 0;
    for (int i = 0; i < self->count; i++) {
        bn_engine_t *engine = self->engines[i];
        if (!uuids && bn_engine_state (engine) != BN_ENGINE_RUNNING)
            continue;
        int n = uuids ? snprintf (text + used, size - used, "%s%s",
                                  used ? "," : "", bn_engine_uuid (engine))
                      : snprintf (text + used, size - used, "%s%d",
                                  used ? "," : "", bn_engine_id (engine));
        if (n > 0 && (size_t)n < size - used)
            used += (size_t)n;
    }
    return text;
}

static char *
s_stats (s_actor_t *self)
{
    bn_engine_stats_t sum;
    memset (&sum, 0, sizeof sum);
    for (int i = 0; i < self->count; i++) {
        const bn_engine_stats_t *one = bn_engine_stats (self->engines[i]);
        sum.received += one->received;
        sum.handled += one->handled;
        sum.errors += one->errors;
        sum.aborted += one->aborted;
        sum.drops.bad_frame += one->drops.bad_frame;
        sum.drops.bad_signature += one->drops.bad_signature;
        sum.drops.replayed += one->drops.replayed;
        sum.drops.bad_header += one->drops.bad_header;
        sum.pings += one->pings;
    }
    return zsys_sprintf (
        "{\"engines\": %d, \"running\": %d, \"stopped\": %d, "
        "\"received\": %llu, \"handled\": %llu, \"errors\": %llu, "
        "\"aborted\": %llu, \"bad_framing\": %llu, \"bad_signature\": %llu, "
        "\"replayed\": %llu, \"bad_header\": %llu, \"pings\": %llu, "
        "\"shared\": %s, \"strays\": %llu}",
        self->count, self->running, self->stopped,
        (unsigned long long)sum.received, (unsigned long long)sum.handled,
        (unsigned long long)sum.errors, (unsigned long long)sum.aborted,
        (unsigned long long)sum.drops.bad_frame,
        (unsigned long long)sum.drops.bad_signature,
        (unsigned long long)sum.drops.replayed,
        (unsigned long long)sum.drops.bad_header, (unsigned long long)sum.pings,
        self->shell ? "true" : "false", (unsigned long long)self->strays);
}

static int
s_pipe_event (zloop_t *loop, zsock_t *pipe, void *arg)
{
    s_actor_t *self = (s_actor_t *)arg;
    zmsg_t *msg = zmsg_recv (pipe);
    if (!msg)
        return 0; //  interrupted; zloop sees zsys_interrupted itself
    char *command = zmsg_popstr (msg);
    int rc = 0;
    if (!command)
        ;
    else if (streq (command, "$TERM"))
        rc = -1;
    else if (streq (command, "STOP")) {
        self->stop_asked = true;
        rc = -1;
    } else if (streq (command, "WAIT")) {
        char *ms = zmsg_popstr (msg);
        long timeout = ms ? atol (ms) : 0;
        free (ms);
        self->wait_until = zclock_mono () + (timeout > 0 ? timeout : 0) + 1;
        s_check_wait (self, zclock_mono ());
    } else if (streq (command, "IDS") || streq (command, "UUIDS")) {
        char *text = s_list (self, streq (command, "UUIDS"));
        zstr_send (pipe, text ? text : "");
        free (text);
    } else if (streq (command, "STATS")) {
        char *text = s_stats (self);
        zstr_send (pipe, text ? text : "{}");
        free (text);
    } else
        bn_log_warn ("engine actor: unknown command %s", command);
    free (command);
    zmsg_destroy (&msg);
    return rc;
}

static void
s_actor_destroy (s_actor_t *self)
{
    for (int i = 0; self->engines && i < self->count; i++)
        bn_engine_destroy (&self->engines[i]);
    free (self->engines);
    if (self->watch) {
        bn_watch_item_t **items[] = {
            &self->ping_item,         &self->handshake_item,
            &self->registration_item, &self->pipe_item,
            &self->shell_item,        &self->control_item,
            &self->broadcast_item,
        };
        for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
            bn_watch_cancel (self->watch, items[i]);
        bn_watch_destroy (&self->watch);
    }
    zhashx_destroy (&self->by_uuid);
    if (self->ping)
        zsock_destroy (&self->ping);
    if (self->handshakes && self->registration)
        zmq_socket_monitor (zsock_resolve (self->registration), NULL, 0);
    zsock_destroy (&self->handshakes);
    //  Let the last iopub messages and unregistrations go out.
    if (self->iopub) {
        zsock_set_linger (self->iopub, 1000);
        zsock_destroy (&self->iopub);
    }
    if (self->registration) {
        zsock_set_linger (self->registration, 1000);
        zsock_destroy (&self->registration);
    }
    zsock_t **shared[] = {&self->shell, &self->control, &self->pong,
                          &self->broadcast};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if (*shared[i]) {
            zsock_set_linger (*shared[i], 1000);
            zsock_destroy (shared[i]);
        }
    zlistx_destroy (&self->waiting);
    zloop_destroy (&self->loop);
    bn_functions_destroy (&self->functions);
    bn_apply_memo_destroy (&self->apply_memo);
    zcert_destroy (&self->curve_cert);
    bn_connfile_destroy (&self->connfile);
    free (self->cwd);
    free (self->joined);
}

//  zlistx comparator: the same engine.
static int
s_same (const void *item1, const void *item2)
{
    return item1 == item2 ? 0 : item1 < item2 ? -1 : 1;
}

//  A socket the engines share, connected to the URL of key, its
//  handshakes reported to monitor when given; NULL (logged) on failure. A
//  DEALER gets a routing id of its own, printable as the host node wants
//  it (libzmq's own starts with a zero byte).
static zsock_t *
s_shared_socket (s_actor_t *self, int type, const char *key,
                 const char *monitor)
{
    char *url = bn_connfile_url (self->connfile, key);
    zsock_t *sock = url ? zsock_new (type) : NULL;
    if (sock) {
        zsock_set_sndhwm (sock, 0);
        zsock_set_rcvhwm (sock, 0);
        if (type == ZMQ_SUB)
            zsock_set_subscribe (sock, "");
        if (type == ZMQ_DEALER) {
            zuuid_t *uuid = zuuid_new ();
            char identity[64];
            snprintf (identity, sizeof identity, "bn-engines-%s",
                      uuid ? zuuid_str_canonical (uuid) : "");
            zuuid_destroy (&uuid);
            zsock_set_identity (sock, identity);
        }
        if (self->curve_cert &&
            bn_curve_client (sock, self->curve_cert,
                             bn_connfile_curve_serverkey (self->connfile)))
            zsock_destroy (&sock);
        if (sock && monitor &&
            zmq_socket_monitor (zsock_resolve (sock), monitor,
                                BN_CURVE_HANDSHAKE_EVENTS))
            zsock_destroy (&sock);
        if (sock && zsock_connect (sock, "%s", url))
            zsock_destroy (&sock);
    }
    if (!sock)
        bn_log_error ("cannot connect to the controller's %s (%s)", key,
                      url ? url : "no URL");
    free (url);
    return sock;
}

//  A socket the engines share towards a host node, routing id identity,
//  connected to the URLs of keys (NULL-terminated) and, with broadcast, to
//  every broadcast port; NULL (logged) on failure.
static zsock_t *
s_shared_channel (s_actor_t *self, int type, const char *identity,
                  bool broadcast, const char **keys)
{
    zsock_t *sock = zsock_new (type);
    if (!sock)
        return NULL;
    zsock_set_sndhwm (sock, 0);
    zsock_set_rcvhwm (sock, 0);
    zsock_set_identity (sock, identity);
    int rc =
        self->curve_cert
            ? bn_curve_client (sock, self->curve_cert,
                               bn_connfile_curve_serverkey (self->connfile))
            : 0;
    for (size_t i = 0; keys[i] && rc == 0; i++) {
        char *url = bn_connfile_url (self->connfile, keys[i]);
        rc = url ? zsock_connect (sock, "%s", url) : -1;
        if (rc)
            bn_log_error ("cannot connect to the host node's %s (%s)", keys[i],
                          url ? url : "no URL");
        free (url);
    }
    size_t count = broadcast ? bn_connfile_broadcast_count (self->connfile) : 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        char *url = bn_connfile_broadcast_url (self->connfile, i);
        rc = url ? zsock_connect (sock, "%s", url) : -1;
        if (rc)
            bn_log_error ("cannot connect to the host node's broadcast (%s)",
                          url ? url : "no URL");
        free (url);
    }
    if (rc)
        zsock_destroy (&sock);
    return sock;
}

//  The shared shell, control and pong sockets. Returns -1 (logged) on
//  failure.
static int
s_shared_channels (s_actor_t *self)
{
    zuuid_t *uuid = zuuid_new ();
    char identity[64];
    snprintf (identity, sizeof identity, BN_SHARED_PREFIX "%s",
              uuid ? zuuid_str_canonical (uuid) : "");
    zuuid_destroy (&uuid);
    static const char *shell[] = {"mux", "task", NULL};
    static const char *control[] = {"control", NULL};
    static const char *pong[] = {"hb_pong", NULL};
    self->shell = s_shared_channel (self, ZMQ_ROUTER, identity, true, shell);
    self->control =
        s_shared_channel (self, ZMQ_ROUTER, identity, false, control);
    self->pong = s_shared_channel (self, ZMQ_DEALER, identity, false, pong);
    if (!self->shell || !self->control || !self->pong)
        return -1;
    bn_log_info ("the engines share their connections to the host node as "
                 "'%s'",
                 identity);
    return 0;
}

//  Refuse a count that would run out of sockets or file descriptors
//  (libzmq asserts when it cannot make a socket), and set how many
//  commands may run at once with the descriptors left. Returns -1
//  (logged).
static int
s_check_limits (s_actor_t *self, int count, bool shared)
{
    int per_engine = shared ? 0 : S_SOCKETS_PER_ENGINE;
    int max_sockets = zmq_ctx_get (zsys_init (), ZMQ_MAX_SOCKETS);
    long sockets = (long)count * per_engine + 16;
    if (max_sockets > 0 && sockets > (long)max_sockets) {
        bn_log_error ("%d engines need %ld sockets; this process allows %d "
                      "(zsys_set_max_sockets before any socket is made)",
                      count, sockets, max_sockets);
        return -1;
    }
    struct rlimit limit;
    if (getrlimit (RLIMIT_NOFILE, &limit) || limit.rlim_cur == RLIM_INFINITY)
        return 0;
    long need = (long)count * (shared ? 0 : S_FDS_PER_ENGINE) + 64;
    long spare = (long)limit.rlim_cur - need;
    if (spare < S_FDS_PER_COMMAND + 2) {
        bn_log_error ("%d engines need about %ld open files; the limit is "
                      "%ld: run fewer engines per process or raise "
                      "ulimit -n",
                      count, need, (long)limit.rlim_cur);
        return -1;
    }
    //  Two more while a command starts (the pipes' other ends).
    long commands = (spare - 2) / S_FDS_PER_COMMAND;
    self->env.max_commands = commands > INT_MAX ? INT_MAX : (int)commands;
    if (commands < count)
        bn_log_info ("at most %ld of the %d engines run a command at a time "
                     "(open files are limited to %ld)",
                     commands, count, (long)limit.rlim_cur);
    return 0;
}

//  Read the settings and the connection file, make the shared sockets and
//  the engines. Returns -1 (logged) on failure.
static int
s_actor_init (s_actor_t *self, bn_engine_args_t *args)
{
    bn_config_t *defaults = args->config ? NULL : bn_config_new ();
    bn_config_t *config = args->config ? args->config : defaults;
    if (!config)
        return -1;
    self->count =
        args->count > 0 ? args->count : bn_config_int (config, "engine.count");
    //  The controller answers a burst of registrations one by one, and
    //  this thread sets each engine up in turn: allow 2 ms per engine
    //  registering at once.
    int burst = self->count < BN_ENGINE_REGISTERING_MAX
                    ? self->count
                    : BN_ENGINE_REGISTERING_MAX;
    self->env.registration_timeout =
        bn_config_msecs (config, "engine.registration_timeout") / 1000.0 +
        0.002 * burst;
    self->env.timeout = bn_config_msecs (config, "engine.timeout") / 1000.0;
    self->env.heartbeat_misses =
        bn_config_int (config, "engine.heartbeat_misses");
    self->env.time_limit =
        bn_config_msecs (config, "engine.request_time_limit") / 1000.0;
    self->env.abort_grace =
        bn_config_msecs (config, "engine.abort_grace") / 1000.0;
    bool share_broadcast =
        self->count >= 2 && bn_config_bool (config, "engine.share_broadcast");
    self->functions = bn_functions_new ();
    int rc = self->functions ? 0 : -1;
    if (!rc && bn_functions_load_list (
                   self->functions, bn_config_str (config, "engine.plugins"))) {
        bn_log_error ("%s", bn_functions_error (self->functions));
        rc = -1;
    }
    bn_config_destroy (&defaults);
    if (rc)
        return -1;

    char err[256] = "";
    if (args->connection_file)
        self->connfile =
            bn_connfile_load (args->connection_file, err, sizeof err);
    else if (args->connection_info)
        self->connfile =
            bn_connfile_parse (args->connection_info, err, sizeof err);
    else
        snprintf (err, sizeof err, "no connection file given");
    if (!self->connfile) {
        bn_log_error ("bad engine connection file %s: %s",
                      args->connection_file ? args->connection_file : "", err);
        return -1;
    }
    if (bn_connfile_kind (self->connfile) != BN_CONNFILE_ENGINE) {
        bn_log_error ("%s is a client connection file; engines need "
                      "ipcontroller-engine.json",
                      args->connection_file ? args->connection_file
                                            : "the connection info");
        return -1;
    }
    if (args->cwd)
        self->cwd = strdup (args->cwd);
    const char *serverkey = bn_connfile_curve_serverkey (self->connfile);
    if (serverkey) {
        self->curve_cert = zcert_new ();
        if (!self->curve_cert)
            return -1;
    }

    bool shared = bn_connfile_shared_channels (self->connfile);
    if (s_check_limits (self, self->count, shared))
        return -1;
    self->waiting = zlistx_new ();
    if (!self->waiting)
        return -1;
    zlistx_set_comparator (self->waiting, s_same);
    self->loop = zloop_new ();
    self->watch = self->loop ? bn_watch_new (self->loop) : NULL;
    self->iopub = s_shared_socket (self, ZMQ_PUB, "iopub", NULL);
    self->ping = s_shared_socket (self, ZMQ_SUB, "hb_ping", NULL);
    //  the registration port's handshakes tell a controller that refuses
    //  our key from one not up yet
    char *monitor =
        zsys_sprintf ("inproc://bn-engine-handshakes-%p", (void *)self);
    self->handshakes = monitor ? zsock_new (ZMQ_PAIR) : NULL;
    self->registration =
        self->handshakes
            ? s_shared_socket (self, ZMQ_DEALER, "registration", monitor)
            : NULL;
    if (self->registration && zsock_connect (self->handshakes, "%s", monitor))
        zsock_destroy (&self->handshakes);
    zstr_free (&monitor);
    self->by_uuid = zhashx_new ();
    self->apply_memo = bn_apply_memo_new ();
    if (!self->apply_memo || !self->loop || !self->watch || !self->iopub ||
        !self->ping || !self->registration || !self->handshakes ||
        !self->by_uuid || (shared && s_shared_channels (self) != 0))
        return -1;

    self->env.loop = self->loop;
    self->env.watch = self->watch;
    self->env.connfile = self->connfile;
    self->env.iopub = self->iopub;
    self->env.waiting = self->waiting;
    self->env.registration = self->registration;
    self->env.shell = self->shell;
    self->env.control = self->control;
    self->env.pong = self->pong;
    self->env.functions = self->functions;
    self->env.apply_memo = self->apply_memo;
    self->env.cwd = self->cwd;
    self->env.curve_cert = self->curve_cert;
    self->env.on_state = s_on_state;
    self->env.arg = self;
    size_t nbroadcast = bn_connfile_broadcast_count (self->connfile);
    if (share_broadcast && !shared && nbroadcast) {
        self->joined = calloc (nbroadcast, sizeof *self->joined);
        zuuid_t *uuid = zuuid_new ();
        if (!self->joined || !uuid) {
            zuuid_destroy (&uuid);
            return -1;
        }
        snprintf (self->broadcast_via, sizeof self->broadcast_via,
                  BN_SHARED_PREFIX "%s", zuuid_str_canonical (uuid));
        zuuid_destroy (&uuid);
        self->env.broadcast_via = self->broadcast_via;
        self->env.broadcast_join = s_broadcast_join;
        self->env.broadcast_join_arg = self;
    }
    self->engines = calloc ((size_t)self->count, sizeof *self->engines);
    if (!self->engines)
        return -1;
    for (int i = 0; i < self->count; i++) {
        self->engines[i] = bn_engine_new (
            &self->env, args->first_id >= 0 ? args->first_id + i : -1);
        if (!self->engines[i] ||
            (i < S_RESERVED_HISTORIES &&
             bn_engine_reserve_history (self->engines[i]) != 0) ||
            zhashx_insert (self->by_uuid, bn_engine_uuid (self->engines[i]),
                           self->engines[i])) {
            bn_log_error ("out of memory creating engine %d", i);
            bn_engine_destroy (&self->engines[i]);
            self->count = i;
            return -1;
        }
    }
    //  in the watch, these cost nothing while they are quiet; zloop
    //  would look at each of them on every wake-up
    bn_watch_t *watch = self->watch;
    if (!(self->ping_item =
              bn_watch_zreader (watch, self->ping, s_ping_event, self)) ||
        !(self->handshake_item = bn_watch_zreader (watch, self->handshakes,
                                                   s_handshake_event, self)) ||
        !(self->registration_item = bn_watch_zreader (
              watch, self->registration, s_registration_event, self)) ||
        !(self->pipe_item =
              bn_watch_zreader (watch, self->pipe, s_pipe_event, self)) ||
        (shared && (!(self->shell_item =
                          bn_watch_reader (watch, zsock_resolve (self->shell),
                                           s_shared_shell_event, self)) ||
                    !(self->control_item =
                          bn_watch_reader (watch, zsock_resolve (self->control),
                                           s_shared_control_event, self)))))
        return -1;
    self->env.registration_item = self->registration_item;
    self->env.shell_item = self->shell_item;
    self->env.control_item = self->control_item;
    zloop_timer (self->loop, S_TICK_MS, 0, s_tick_timer, self);
    s_start_more (self);
    return 0;
}

void
bn_engine_actor (zsock_t *pipe, void *args)
{
    assert (args);
    s_actor_t self;
    memset (&self, 0, sizeof self);
    self.pipe = pipe;
    bn_log_set_ident ("engine");
    int rc = s_actor_init (&self, (bn_engine_args_t *)args);
    //  The caller may free args from here on.
    zsock_signal (pipe, 0);
    if (rc) {
        self.exit_code = 1;
        s_report_stopped (&self);
    } else if (self.count == 0)
        s_report_stopped (&self);
    bool terminated = false;
    if (rc == 0 && self.loop)
        terminated = zloop_start (self.loop) == -1 && !self.stop_asked;
    //  Interrupted, or told to end: say goodbye to the controller (and
    //  start none of those still waiting for their turn).
    self.started = self.count;
    for (int i = 0; self.engines && i < self.count; i++)
        if (self.engines[i])
            bn_engine_stop (self.engines[i], BN_ENGINE_EXIT_OK);
    s_report_stopped (&self);
    while (!terminated) {
        char *command = zstr_recv (pipe);
        if (command && streq (command, "$TERM"))
            terminated = true;
        else if (command)
            zstr_send (pipe, "STOPPED");
        free (command);
    }
    s_actor_destroy (&self);
}

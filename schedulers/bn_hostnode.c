/*  bn_hostnode: a host node, one zloop in one thread, and its broadcast
    leaf, a bn_bcast_node actor of its own.

    Towards the controller every channel is one socket whose routing id is
    the link id; requests come down with the engine's uuid first, which is
    the routing id the engine's socket has on the host node's ROUTER, so a
    request goes on with its frames untouched. What engines send up is
    verified here (a bad peer on the host costs the link nothing) and goes
    on as it came: the controller takes the link's frame off and verifies it
    again as an engine's.

    Shared connections: the engines of one banyan-engine process share one
    connection per channel (mux, task, broadcast, control, hb_pong), whose
    routing id starts with BN_SHARED_PREFIX, the engine named in the frame
    after it (doc/wire.md 4.1); the host-local connection file says that we
    understand it. An engine's first pong tells which shared connection it
    is behind (bn_heart_via): requests to it go there with its uuid as the
    second frame, and what comes on that connection is taken only for the
    engines behind it. Such an engine's unregistration_request, or its
    iopub shutdown_reply (topic engine.<id>.shutdown), passing up, forgets
    it here at once, as no connection closes for it.

    Hearts: the host node pings its engines with the hub's period and
    misses, and hears from bn_heart when an engine's pong connection
    closes, which is how an engine that died is known at once rather than
    a heartbeat bound later. The hub is told of hearts that answered or
    stopped in one bn_host_engines message per loop turn, and once per
    period with nothing in it, which is how a hub that lost the link makes
    itself heard (it answers a link it does not know with an error, and the
    host node says hello again with the engines it still serves).  */
#include "bn_hostnode.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "bn_bcast_node.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_heart.h"
#include "bn_holdq.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_relay.h"
#include "bn_topology.h"
#include "bn_wire.h"

#define S_BATCH 1024         //  messages read per wake-up before polling again
#define S_KEY_MAX 256        //  longest engine uuid taken as a key
#define S_NAME_MAX 200       //  longest host name put into the link id
#define S_BACKLOG 4096       //  pending connections per port
#define S_FLUSH_MS 1         //  hearts are told to the hub within this
#define S_WAIT_ACTOR 5000    //  ms the leaf has to answer a command
#define S_PENDING_MAX 100000 //  registrations awaiting the hub's reply
#define S_DEPARTED_MS 10000  //  replies of an unregistered engine still pass
#define S_DEPARTED_MAX 65536 //  such engines remembered at most

//  An engine of this host.
typedef struct {
    char *uuid;
    int id;     //  its id, from its registration_reply
    bool alive; //  its heart answered; the hub has been told
    char *via;  //  routing id of the shared connection it is behind, or NULL
} s_engine_t;

typedef struct _s_node_t s_node_t;

//  A channel relayed both ways: mux, control or task.
typedef struct {
    s_node_t *node;
    const char *name;
    zsock_t *local;    //  ROUTER, routing id as the controller's, bound
    zsock_t *up;       //  DEALER, routing id = link id, to the controller
    bn_holdq_t *holdq; //  requests for engines not connected yet
} s_channel_t;

enum { S_MUX, S_CONTROL, S_TASK, S_CHANNELS };

typedef struct {
    uint64_t down;          //  requests passed to engines
    uint64_t up;            //  engines' messages passed to the controller
    uint64_t iopub;         //  iopub messages forwarded
    bn_msg_drops_t drops;   //  engines' messages dropped
    uint64_t held;          //  requests held for an engine connecting
    uint64_t not_connected; //  requests answered EngineError here
    uint64_t send_failed;   //  sends that failed otherwise
    uint64_t registrations; //  registration replies passed to engines
    uint64_t alive;         //  hearts told to the hub as alive
    uint64_t lost;          //  ... as lost
    uint64_t closed;        //  ... of which when the connection closed
    uint64_t hellos;        //  bn_host_request sent
    uint64_t shared;        //  engines behind a shared connection
    uint64_t unregistered;  //  ... forgotten at their unregistration
} s_stats_t;

struct _s_node_t {
    zsock_t *pipe;
    zloop_t *loop;
    bn_session_t *session;   //  the key; signs our own messages
    bn_connfile_t *upstream; //  the controller's engine connection file
    char *link;              //  link id
    char *name;              //  host name
    char *ip;                //  engine-facing address
    int ports[2];            //  range of the engine-facing ports (0: any)
    char *connfile_path;     //  host-local connection file
    bool connfile_written;
    int registration_timeout; //  ms
    int hwm;
    zcert_t *curve_cert; //  our keys when the controller uses CURVE
    zsock_t *reg;        //  ROUTER: engines' registration DEALERs
    zsock_t *up_query;   //  DEALER to the hub
    s_channel_t channels[S_CHANNELS];
    zsock_t *iopub;          //  SUB, engines' PUBs connect
    zsock_t *up_iopub;       //  PUB to the controller's iopub
    zsock_t *hb_ping;        //  PUB, our pings
    zsock_t *hb_pong;        //  ROUTER, engines' pongs
    zsock_t *up_hb_sub;      //  SUB to the controller's pings
    zsock_t *up_hb_dealer;   //  DEALER (link id) for our pongs
    bn_topology_t *topology; //  the leaf's (a chain: it is alone)
    zactor_t *leaf;          //  broadcast leaf of our engines
    char *leaf_id;           //  its routing id
    int leaf_port;
    int up_leaf;              //  the controller's leaf ours hangs below
    bn_heart_t *heart;        //  pings our engines, once welcomed
    zhashx_t *engines;        //  uuid -> s_engine_t
    zhashx_t *departed;       //  uuid -> s_departed_t: unregistered, shared
    zlistx_t *departed_order; //  their uuids, oldest first
    zhashx_t *pending;  //  registration_request msg_id -> uuid it asked for
    json_t *tell_alive; //  uuids to tell the hub
    json_t *tell_lost;
    int flush_timer; //  -1 when none
    int hello_timer; //  waiting for bn_host_reply, -1 when none
    int beat_timer;  //  keepalive, -1 until welcomed
    bool welcomed;   //  the hub answered ok once
    bool linked;     //  ... and has not said since that it lost us
    int hb_period;   //  ms, the hub's
    int hb_misses;   //  the hub's
    bool failed;     //  start-up failed after signalling: FAILED sent
    s_stats_t stats;
};

static void
s_engine_free (void **item)
{
    s_engine_t *engine = (s_engine_t *)*item;
    if (!engine)
        return;
    free (engine->uuid);
    free (engine->via);
    free (engine);
    *item = NULL;
}

//  An engine behind a shared connection that unregistered: its replies
//  sent before may come after the word that made us forget it (the
//  iopub shutdown_reply, the unregistration_request: other connections),
//  and still pass for S_DEPARTED_MS.
typedef struct {
    char *via;     //  its shared connection
    int64_t until; //  zclock_mono
} s_departed_t;

static void
s_departed_free (void **item)
{
    s_departed_t *departed = (s_departed_t *)*item;
    if (!departed)
        return;
    free (departed->via);
    free (departed);
    *item = NULL;
}

//  Remember engine as departed, forgetting those whose time is up (the
//  oldest first: they were added in time order).
static void
s_departed_add (s_node_t *self, s_engine_t *engine)
{
    int64_t now = zclock_mono ();
    const char *oldest;
    while ((oldest = zlistx_first (self->departed_order))) {
        s_departed_t *departed = zhashx_lookup (self->departed, oldest);
        if (departed && departed->until > now)
            break;
        zhashx_delete (self->departed, oldest);
        zlistx_delete (self->departed_order,
                       zlistx_cursor (self->departed_order));
    }
    if (zhashx_size (self->departed) >= S_DEPARTED_MAX)
        return;
    s_departed_t *departed = calloc (1, sizeof *departed);
    char *uuid = strdup (engine->uuid);
    if (departed && uuid && (departed->via = strdup (engine->via)) &&
        zlistx_add_end (self->departed_order, uuid)) {
        departed->until = now + S_DEPARTED_MS;
        zhashx_update (self->departed, engine->uuid, departed);
        return;
    }
    if (departed)
        free (departed->via);
    free (departed);
    free (uuid);
}

static void
s_msg_free (void **item)
{
    bn_msg_destroy ((bn_msg_t **)item);
}

//  --------------------------------------------------------------------------
//  Sockets

//  A socket of type with our high-water mark and linger 0.
static zsock_t *
s_sock (s_node_t *self, int type, const char *identity)
{
    zsock_t *sock = zsock_new (type);
    if (!sock)
        return NULL;
    zsock_set_sndhwm (sock, self->hwm);
    zsock_set_rcvhwm (sock, self->hwm);
    zsock_set_linger (sock, 0);
    if (identity)
        zsock_set_identity (sock, identity);
    if (type == ZMQ_SUB)
        zsock_set_subscribe (sock, "");
    return sock;
}

//  The endpoint a port for the engines binds: any port of our address, or
//  the first free one of our range. Returns -1 (logged) if it is too long.
static int
s_endpoint (s_node_t *self, char *buf, size_t size)
{
    if (bn_wire_tcp_bind_endpoint (buf, size, self->ip, 0, self->ports[0],
                                   self->ports[1]) == 0)
        return 0;
    bn_log_error ("host: the address '%s' is too long", self->ip);
    return -1;
}

//  A socket bound on our address for the engines; its port in *port.
static zsock_t *
s_local (s_node_t *self, int type, const char *identity, int *port)
{
    zsock_t *sock = s_sock (self, type, identity);
    if (!sock)
        return NULL;
    zsock_set_backlog (sock, S_BACKLOG);
    if (type == ZMQ_ROUTER) {
        zsock_set_router_mandatory (sock, 1);
        //  an engine that connects again under its uuid takes it over
        //  from its old connection (bn_controller's s_bind)
        zsock_set_router_handover (sock, 1);
    }
    char endpoint[300];
    if (s_endpoint (self, endpoint, sizeof endpoint)) {
        zsock_destroy (&sock);
        return NULL;
    }
    if (bn_wire_bind (sock, endpoint, 0) < 0) {
        int error = errno;
        if (self->ports[0] && error == EADDRINUSE)
            bn_log_error ("host: cannot bind %s: no port of controller.ports "
                          "%d-%d is free",
                          endpoint, self->ports[0], self->ports[1]);
        else
            bn_log_error ("host: cannot bind %s: %s", endpoint,
                          zmq_strerror (error));
        zsock_destroy (&sock);
        return NULL;
    }
    char *last = zsock_last_endpoint (sock);
    *port = bn_wire_endpoint_port (last);
    zstr_free (&last);
    if (*port <= 0) {
        bn_log_error ("host: cannot read the port bound for %s", endpoint);
        zsock_destroy (&sock);
        return NULL;
    }
    return sock;
}

//  A socket connected to the controller's port name, a CURVE client when
//  the controller asks for it.
static zsock_t *
s_upstream (s_node_t *self, int type, const char *name, bool identified)
{
    char *url = bn_connfile_url (self->upstream, name);
    zsock_t *sock =
        url ? s_sock (self, type, identified ? self->link : NULL) : NULL;
    const char *serverkey = bn_connfile_curve_serverkey (self->upstream);
    if (sock && serverkey &&
        bn_curve_client (sock, self->curve_cert, serverkey) != 0)
        zsock_destroy (&sock);
    if (sock && zsock_connect (sock, "%s", url) != 0) {
        bn_log_error ("host: cannot connect to %s", url);
        zsock_destroy (&sock);
    }
    zstr_free (&url);
    return sock;
}

//  --------------------------------------------------------------------------
//  Telling the hub

//  Send our own message of type with content (taken) to the hub.
static void
s_to_hub (s_node_t *self, const char *type, json_t *content)
{
    bn_msg_t *msg = content ? bn_msg_new (self->session, type) : NULL;
    if (!msg) {
        json_decref (content);
        self->stats.send_failed++;
        return;
    }
    bn_msg_set_content (msg, content);
    if (bn_msg_send_flags (&msg, zsock_resolve (self->up_query), self->session,
                           ZMQ_DONTWAIT) != 0)
        self->stats.send_failed++;
}

static int s_on_hello_timeout (zloop_t *loop, int timer_id, void *arg);

//  Say bn_host_request with the engines we serve and wait for the answer.
static void
s_hello (s_node_t *self)
{
    json_t *engines = json_array ();
    for (s_engine_t *engine = zhashx_first (self->engines); engine && engines;
         engine = zhashx_next (self->engines))
        if (engine->alive)
            json_array_append_new (
                engines, json_pack ("[s, i]", engine->uuid, engine->id));
    s_to_hub (self, BN_MSG_HOST_REQUEST,
              engines ? json_pack ("{s:s, s:o, s:i, s:s}", "name", self->name,
                                   "engines", engines, "leaf", self->up_leaf,
                                   "leaf_id", self->leaf_id)
                      : NULL);
    self->stats.hellos++;
    //  what we kept for the hub it hears from the hello
    json_array_clear (self->tell_alive);
    json_array_clear (self->tell_lost);
    if (self->hello_timer >= 0)
        zloop_timer_end (self->loop, self->hello_timer);
    self->hello_timer =
        zloop_timer (self->loop, (size_t)self->registration_timeout, 1,
                     s_on_hello_timeout, self);
}

//  Tell the hub which hearts answered or stopped (and, with nothing to
//  tell, that we are here).
static void
s_flush (s_node_t *self)
{
    if (!self->linked) {
        //  a hello says it all once the hub answers again
        json_array_clear (self->tell_alive);
        json_array_clear (self->tell_lost);
        return;
    }
    s_to_hub (self, BN_MSG_HOST_ENGINES,
              json_pack ("{s:O, s:O}", "alive", self->tell_alive, "lost",
                         self->tell_lost));
    json_array_clear (self->tell_alive);
    json_array_clear (self->tell_lost);
}

static int
s_on_flush (zloop_t *loop, int timer_id, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    self->flush_timer = -1;
    s_flush (self);
    return 0;
}

static void
s_flush_soon (s_node_t *self)
{
    if (self->flush_timer < 0)
        self->flush_timer =
            zloop_timer (self->loop, S_FLUSH_MS, 1, s_on_flush, self);
    if (self->flush_timer < 0)
        s_flush (self);
}

static int
s_on_beat (zloop_t *loop, int timer_id, void *arg)
{
    s_flush ((s_node_t *)arg);
    return 0;
}

//  --------------------------------------------------------------------------
//  Engines and their hearts

//  Tell the leaf actor command for engine (ENGINE_ADD, with the shared
//  connection it is behind first; ENGINE_REMOVE).
static void
s_tell_leaf (s_node_t *self, const char *command, s_engine_t *engine)
{
    char id[16];
    snprintf (id, sizeof id, "%d", engine->id);
    if (streq (command, "ENGINE_ADD")) {
        if (engine->via)
            zstr_sendx (self->leaf, "ENGINE_VIA", engine->uuid, engine->via,
                        NULL);
        zstr_sendx (self->leaf, command, engine->uuid, id, NULL);
    } else
        zstr_sendx (self->leaf, command, engine->uuid, NULL);
}

//  Forget engine here: its requests held, its heart, its leaf's slot.
static void
s_engine_forget (s_node_t *self, s_engine_t *engine)
{
    if (engine->alive)
        s_tell_leaf (self, "ENGINE_REMOVE", engine);
    for (int c = 0; c < S_CHANNELS; c++)
        bn_holdq_engine_remove (self->channels[c].holdq, engine->uuid);
    if (self->heart)
        bn_heart_forget (self->heart, engine->uuid);
    zhashx_delete (self->engines, engine->uuid);
}

//  Engine uuid's heart stopped, or its connection closed (why): it is
//  forgotten here and the hub is told at once.
static void
s_engine_lost (s_node_t *self, const char *uuid, const char *why)
{
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine)
        return;
    bn_log_warn ("host: engine %d:%s lost (%s)", engine->id, engine->uuid, why);
    json_array_append_new (self->tell_lost, json_string (engine->uuid));
    self->stats.lost++;
    s_engine_forget (self, engine);
    s_flush_soon (self);
}

//  Engine id, if it is behind a shared connection, said
//  unregistration_request or shutdown_reply (on their way up): nothing
//  closes for it, so it is forgotten now, and the hub, which unregisters
//  it, is not told it was lost.
static void
s_engine_unregistered (s_node_t *self, json_int_t id)
{
    for (s_engine_t *engine = zhashx_first (self->engines); engine;
         engine = zhashx_next (self->engines))
        if (engine->id == id) {
            if (engine->via) {
                bn_log_info ("host: engine %d:%s unregistered", engine->id,
                             engine->uuid);
                self->stats.unregistered++;
                s_departed_add (self, engine);
                s_engine_forget (self, engine);
            }
            return;
        }
}

static void
s_on_new_heart (void *arg, const char *uuid)
{
    s_node_t *self = (s_node_t *)arg;
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine) {
        bn_heart_forget (self->heart, uuid);
        return;
    }
    engine->alive = true;
    self->stats.alive++;
    const char *via = bn_heart_via (self->heart, uuid);
    free (engine->via);
    engine->via = via ? strdup (via) : NULL;
    if (engine->via)
        self->stats.shared++;
    for (int c = 0; c < S_CHANNELS; c++)
        bn_holdq_engine_add (self->channels[c].holdq, uuid);
    s_tell_leaf (self, "ENGINE_ADD", engine);
    json_array_append_new (self->tell_alive, json_string (uuid));
    s_flush_soon (self);
}

static void
s_on_stopped_heart (void *arg, const char *uuid)
{
    s_engine_lost ((s_node_t *)arg, uuid, "heart stopped");
}

static void
s_on_closed_heart (void *arg, const char *uuid)
{
    s_node_t *self = (s_node_t *)arg;
    self->stats.closed++;
    s_engine_lost (self, uuid, "its connection closed");
}

//  --------------------------------------------------------------------------
//  The hub's answers

static void s_fail (s_node_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Start-up failed after we signalled: say why on the pipe; the loop ends.
static void
s_fail (s_node_t *self, const char *format, ...)
{
    char why[512];
    va_list args;
    va_start (args, format);
    vsnprintf (why, sizeof why, format, args);
    va_end (args);
    bn_log_error ("host: %s", why);
    zstr_sendx (self->pipe, "FAILED", why, NULL);
    self->failed = true;
}

static int
s_on_hello_timeout (zloop_t *loop, int timer_id, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    self->hello_timer = -1;
    if (!self->welcomed) {
        s_fail (self, "the hub did not answer within %d ms",
                self->registration_timeout);
        return -1;
    }
    bn_log_warn ("host: the hub did not answer; saying hello again");
    s_hello (self);
    return 0;
}

//  Write the host-local connection file (doc/hosts.md). Returns -1 on
//  failure (logged).
static int
s_write_connfile (s_node_t *self)
{
    bn_connfile_t *file = bn_connfile_new (BN_CONNFILE_ENGINE);
    char interface[300];
    snprintf (interface, sizeof interface, "tcp://%s", self->ip);
    struct {
        const char *name;
        zsock_t *sock;
    } ports[] = {{"registration", self->reg},
                 {"mux", self->channels[S_MUX].local},
                 {"control", self->channels[S_CONTROL].local},
                 {"task", self->channels[S_TASK].local},
                 {"iopub", self->iopub},
                 {"hb_ping", self->hb_ping},
                 {"hb_pong", self->hb_pong}};
    int rc = file ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof ports / sizeof ports[0]; i++) {
        char *endpoint = zsock_last_endpoint (ports[i].sock);
        rc = bn_connfile_set_port (file, ports[i].name,
                                   bn_wire_endpoint_port (endpoint));
        zstr_free (&endpoint);
    }
    if (rc == 0)
        rc = bn_connfile_set_broadcast (file, &self->leaf_port, 1) ||
                     bn_connfile_set_interface (file, interface) ||
                     bn_connfile_set_key (file,
                                          bn_connfile_key (self->upstream)) ||
                     bn_connfile_set_location (file, self->name)
                 ? -1
                 : 0;
    //  banyan engines may share their connections to us
    if (file)
        bn_connfile_set_shared_channels (file, true);
    if (rc == 0)
        rc = bn_connfile_save (file, self->connfile_path);
    bn_connfile_destroy (&file);
    if (rc == 0)
        self->connfile_written = true;
    else
        bn_log_error ("host: cannot write %s", self->connfile_path);
    return rc;
}

//  The hub welcomed us (content of its bn_host_reply).
static int
s_welcome (s_node_t *self, json_t *content)
{
    json_t *period = json_object_get (content, "hb_period");
    json_t *misses = json_object_get (content, "hb_misses");
    if (!self->welcomed &&
        (!json_is_integer (period) || json_integer_value (period) <= 0 ||
         json_integer_value (period) > INT32_MAX || !json_is_integer (misses) ||
         json_integer_value (misses) < 0 ||
         json_integer_value (misses) > INT32_MAX)) {
        s_fail (self, "the hub's " BN_MSG_HOST_REPLY " has no heartbeat");
        return -1;
    }
    self->linked = true;
    json_t *refused = json_object_get (content, "refused");
    size_t index;
    json_t *uuid;
    json_array_foreach (refused, index, uuid)
    {
        if (!json_is_string (uuid))
            continue;
        s_engine_t *engine =
            zhashx_lookup (self->engines, json_string_value (uuid));
        if (!engine)
            continue;
        bn_log_warn ("host: the hub refused engine %d:%s", engine->id,
                     engine->uuid);
        if (engine->alive)
            s_tell_leaf (self, "ENGINE_REMOVE", engine);
        bn_heart_forget (self->heart, engine->uuid);
        zhashx_delete (self->engines, json_string_value (uuid));
    }
    if (self->welcomed) {
        bn_log_info ("host: linked again to the hub");
        return 0;
    }
    self->welcomed = true;
    self->hb_period = (int)json_integer_value (period);
    self->hb_misses = (int)json_integer_value (misses);
    self->heart = bn_heart_new (self->hb_ping, self->hb_pong, self->hb_period,
                                self->hb_misses);
    if (!self->heart) {
        s_fail (self, "out of memory");
        return -1;
    }
    bn_heart_set_handlers (self->heart, s_on_new_heart, s_on_stopped_heart,
                           self);
    bn_heart_set_closed_handler (self->heart, s_on_closed_heart);
    if (bn_heart_set_shared (self->heart, BN_SHARED_PREFIX) != 0) {
        s_fail (self, "out of memory");
        return -1;
    }
    self->beat_timer =
        zloop_timer (self->loop, (size_t)self->hb_period, 0, s_on_beat, self);
    if (bn_heart_attach (self->heart, self->loop) != 0 ||
        self->beat_timer < 0) {
        s_fail (self, "out of memory");
        return -1;
    }
    if (s_write_connfile (self) != 0) {
        s_fail (self, "cannot write the connection file %s",
                self->connfile_path);
        return -1;
    }
    bn_log_info ("host: %s linked to the controller as '%s'; engines "
                 "connect with %s",
                 self->name, self->link, self->connfile_path);
    zstr_sendx (self->pipe, "READY", self->connfile_path, NULL);
    return 0;
}

//  The hub's bn_host_reply to a hello or to anything from a link it does
//  not know.
static int
s_host_reply (s_node_t *self, bn_msg_t *msg)
{
    if (bn_msg_check (msg, self->session,
                      BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                      &self->stats.drops, "host"))
        return 0;
    json_t *content = bn_msg_content (msg);
    const char *status =
        json_string_value (json_object_get (content, "status"));
    const char *ename = json_string_value (json_object_get (content, "ename"));
    const char *evalue =
        json_string_value (json_object_get (content, "evalue"));
    if (status && streq (status, BN_STATUS_OK)) {
        if (self->hello_timer >= 0)
            zloop_timer_end (self->loop, self->hello_timer);
        self->hello_timer = -1;
        return s_welcome (self, content);
    }
    if (!self->welcomed) {
        s_fail (self, "the hub refused us: %s: %s", ename ? ename : "error",
                evalue ? evalue : "");
        return -1;
    }
    //  the hub lost our link (or never had it): hello again, once
    bn_log_warn ("host: the hub says %s: %s", ename ? ename : "error",
                 evalue ? evalue : "");
    self->linked = false;
    if (self->hello_timer < 0)
        s_hello (self);
    return 0;
}

//  --------------------------------------------------------------------------
//  Registration

//  Copy the first ident into key; NULL if absent or unusable.
static const char *
s_ident_key (bn_msg_t *msg, char *key)
{
    size_t size;
    const void *data = bn_msg_ident (msg, 0, &size);
    if (!data || size == 0 || size >= S_KEY_MAX || memchr (data, 0, size))
        return NULL;
    memcpy (key, data, size);
    key[size] = 0;
    return key;
}

//  An engine's registration socket sent something: up to the hub.
static int
s_on_reg (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT);
        if (!msg)
            break;
        char key[S_KEY_MAX];
        if (!s_ident_key (msg, key) ||
            bn_msg_check (msg, self->session,
                          BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "host: registration")) {
            bn_msg_destroy (&msg);
            continue;
        }
        //  by msg_id, as the engines of one process may share a socket
        if (streq (bn_msg_type (msg), BN_MSG_REGISTRATION_REQUEST) &&
            bn_msg_id (msg)) {
            const char *uuid = json_string_value (
                json_object_get (bn_msg_content (msg), "uuid"));
            //  replies that never came do not pile up for ever
            if (zhashx_size (self->pending) >= S_PENDING_MAX) {
                bn_log_warn ("host: %d registrations had no reply; "
                             "forgotten",
                             S_PENDING_MAX);
                zhashx_purge (self->pending);
            }
            if (uuid)
                zhashx_update (self->pending, bn_msg_id (msg), strdup (uuid));
        } else if (streq (bn_msg_type (msg), BN_MSG_UNREGISTRATION_REQUEST) &&
                   json_is_integer (
                       json_object_get (bn_msg_content (msg), "id")))
            s_engine_unregistered (self, json_integer_value (json_object_get (
                                             bn_msg_content (msg), "id")));
        if (bn_msg_send_flags (&msg, zsock_resolve (self->up_query), NULL,
                               ZMQ_DONTWAIT) == 0)
            self->stats.up++;
        else
            self->stats.send_failed++;
    }
    return 0;
}

//  A registration_reply going down: note the engine and its id, and expect
//  its heart.
static void
s_registration_reply (s_node_t *self, bn_msg_t *msg)
{
    const char *key = bn_msg_parent_id (msg);
    if (!key)
        return;
    char *uuid = zhashx_lookup (self->pending, key);
    json_t *content = bn_msg_content (msg);
    json_t *id = json_object_get (content, "id");
    const char *status =
        json_string_value (json_object_get (content, "status"));
    if (uuid && status && streq (status, BN_STATUS_OK) &&
        json_is_integer (id) && json_integer_value (id) >= 0 &&
        json_integer_value (id) < INT32_MAX && self->heart &&
        !zhashx_lookup (self->engines, uuid)) {
        s_engine_t *engine = calloc (1, sizeof *engine);
        if (engine) {
            engine->uuid = strdup (uuid);
            engine->id = (int)json_integer_value (id);
        }
        if (engine && engine->uuid &&
            zhashx_insert (self->engines, uuid, engine) == 0) {
            bn_heart_expect (self->heart, uuid);
            bn_log_info ("host: engine %d:%s registered; waiting for its "
                         "heart",
                         engine->id, uuid);
        } else {
            void *item = engine;
            s_engine_free (&item);
        }
    }
    zhashx_delete (self->pending, key);
}

//  What the hub sends: our own answers, and engines' through us.
static int
s_on_up_query (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT);
        if (!msg)
            break;
        if (bn_msg_nidents (msg) == 0) {
            int rc = streq (bn_msg_type (msg) ? bn_msg_type (msg) : "",
                            BN_MSG_HOST_REPLY)
                         ? s_host_reply (self, msg)
                         : 0;
            bn_msg_destroy (&msg);
            if (rc < 0)
                return -1;
            continue;
        }
        if (bn_msg_type (msg) &&
            streq (bn_msg_type (msg), BN_MSG_REGISTRATION_REPLY))
            s_registration_reply (self, msg);
        if (bn_msg_send_flags (&msg, zsock_resolve (self->reg), NULL,
                               ZMQ_DONTWAIT) == 0)
            self->stats.registrations++;
        else
            self->stats.send_failed++;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Mux, control, task

//  Answer request (idents [engine, client, ...]) on channel with an
//  EngineError sent up, as the controller's relay would.
static void
s_refuse (s_channel_t *channel, bn_msg_t *request, const char *uuid, int error)
{
    s_node_t *self = channel->node;
    char evalue[512];
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    snprintf (evalue, sizeof evalue,
              "Engine %d is not connected to host node %s's %s (request "
              "'%s': %s)",
              engine ? engine->id : -1, self->name, channel->name,
              bn_msg_id (request) ? bn_msg_id (request) : "",
              zmq_strerror (error));
    bn_msg_t *reply = bn_relay_error_reply (
        self->session, request, NULL, uuid,
        bn_wire_error ("EngineError", evalue, NULL, NULL));
    self->stats.not_connected++;
    bn_log_info ("host: %s", evalue);
    if (!reply || bn_msg_send_flags (&reply, zsock_resolve (channel->up),
                                     self->session, ZMQ_DONTWAIT) != 0) {
        bn_msg_destroy (&reply);
        self->stats.send_failed++;
    }
}

//  Put the routing id of the shared connection engine uuid is behind, if
//  it is, in front of msg's frames; -1 if out of memory.
static int
s_route (s_node_t *self, bn_msg_t *msg, const char *uuid)
{
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine || !engine->via)
        return 0;
    return bn_msg_push_ident (msg, engine->via, strlen (engine->via));
}

static int
s_send_held (void *arg, const char *uuid, void *item)
{
    s_channel_t *channel = (s_channel_t *)arg;
    bn_msg_t *copy = bn_msg_dup ((bn_msg_t *)item);
    if (copy && s_route (channel->node, copy, uuid) != 0)
        bn_msg_destroy (&copy);
    if (!copy)
        return ENOMEM;
    if (bn_msg_send_flags (&copy, zsock_resolve (channel->local), NULL,
                           ZMQ_DONTWAIT) != 0)
        return errno;
    channel->node->stats.down++;
    return 0;
}

static void
s_fail_held (void *arg, const char *uuid, void *item, bn_holdq_why_t why,
             int error)
{
    s_refuse ((s_channel_t *)arg, (bn_msg_t *)item, uuid,
              error ? error : EHOSTUNREACH);
}

//  Requests from the controller: on to the engine named first.
static int
s_on_channel_up (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_channel_t *channel = (s_channel_t *)arg;
    s_node_t *self = channel->node;
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT);
        if (!msg)
            break;
        char key[S_KEY_MAX];
        if (bn_msg_nidents (msg) < 2 || !s_ident_key (msg, key)) {
            self->stats.drops.bad_frame++;
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_holdq_waits (channel->holdq, key)) {
            if (bn_holdq_send (channel->holdq, key, msg) == 1)
                self->stats.held++;
            continue;
        }
        size_t idents = bn_msg_nidents (msg);
        if (s_route (self, msg, key) != 0) {
            s_refuse (channel, msg, key, ENOMEM);
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_msg_send_routed (&msg, zsock_resolve (channel->local), NULL,
                                ZMQ_DONTWAIT) == 0)
            self->stats.down++;
        else if (msg) {
            int error = errno;
            //  answered with the frames it came with
            if (bn_msg_nidents (msg) > idents)
                bn_msg_pop_ident (msg);
            s_refuse (channel, msg, key, error);
        } else
            self->stats.send_failed++;
        bn_msg_destroy (&msg);
    }
    return 0;
}

//  What came on a shared connection (its routing id first, the engine's
//  uuid second): the first frame goes when the engine is behind it; false
//  (counted) for anything else.
static bool
s_unshare (s_node_t *self, bn_msg_t *msg)
{
    size_t via_len, uuid_len;
    const char *via = bn_msg_ident (msg, 0, &via_len);
    const char *uuid = bn_msg_ident (msg, 1, &uuid_len);
    char key[S_KEY_MAX];
    s_engine_t *engine = NULL;
    if (via && uuid && uuid_len > 0 && uuid_len < S_KEY_MAX &&
        !memchr (uuid, 0, uuid_len)) {
        memcpy (key, uuid, uuid_len);
        key[uuid_len] = 0;
        engine = zhashx_lookup (self->engines, key);
    }
    const char *behind = engine ? engine->via : NULL;
    if (!engine && via && uuid_len > 0 && uuid_len < S_KEY_MAX) {
        //  a reply of an engine that unregistered a moment ago
        s_departed_t *departed = zhashx_lookup (self->departed, key);
        if (departed && departed->until > zclock_mono ())
            behind = departed->via;
    }
    if (!behind || strlen (behind) != via_len ||
        memcmp (behind, via, via_len) != 0) {
        self->stats.drops.bad_frame++;
        return false;
    }
    bn_msg_pop_ident (msg);
    return true;
}

//  Engines' replies: verified, then up as they came.
static int
s_on_channel_local (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_channel_t *channel = (s_channel_t *)arg;
    s_node_t *self = channel->node;
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT);
        if (!msg)
            break;
        if (bn_msg_nidents (msg) < 2) {
            self->stats.drops.bad_frame++;
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_msg_nidents (msg) >= 3 &&
            bn_msg_ident_prefix (msg, 0, BN_SHARED_PREFIX) &&
            !s_unshare (self, msg)) {
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_msg_check (msg, self->session,
                          BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "host: %s", channel->name)) {
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_msg_send_flags (&msg, zsock_resolve (channel->up), NULL,
                               ZMQ_DONTWAIT) == 0)
            self->stats.up++;
        else
            self->stats.send_failed++;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  IOPub and the link's heart: frames passed as they are

//  The engine id of an iopub topic "engine.<id>.shutdown" (a banyan
//  engine's shutdown_reply), else -1.
static int
s_shutdown_topic (zmq_msg_t *frame)
{
    static const char prefix[] = "engine.", suffix[] = ".shutdown";
    size_t size = zmq_msg_size (frame);
    const char *data = (const char *)zmq_msg_data (frame);
    size_t before = sizeof prefix - 1, after = sizeof suffix - 1;
    if (size <= before + after || size > before + after + 10 ||
        memcmp (data, prefix, before) != 0 ||
        memcmp (data + size - after, suffix, after) != 0)
        return -1;
    int id = 0;
    for (size_t i = before; i < size - after; i++) {
        if (data[i] < '0' || data[i] > '9' || id > (INT32_MAX - 9) / 10)
            return -1;
        id = id * 10 + (data[i] - '0');
    }
    return id;
}

//  Move every frame of one message from one socket to another; -1 when
//  nothing is waiting. With shutdown, the engine id of a shutdown topic
//  (s_shutdown_topic) in the first frame goes there.
static int
s_pass_frames (zsock_t *from, zsock_t *to, int *shutdown)
{
    void *in = zsock_resolve (from), *out = zsock_resolve (to);
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    if (zmq_msg_recv (&frame, in, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close (&frame);
        return -1;
    }
    if (shutdown)
        *shutdown = s_shutdown_topic (&frame);
    bool more = zmq_msg_more (&frame);
    while (true) {
        zmq_msg_send (&frame, out, (more ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
        zmq_msg_close (&frame);
        if (!more)
            return 0;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, in, 0) < 0) {
            zmq_msg_close (&frame);
            return 0;
        }
        more = zmq_msg_more (&frame);
    }
}

static int
s_on_iopub (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    int shutdown = -1;
    for (int i = 0;
         i < S_BATCH && s_pass_frames (sock, self->up_iopub, &shutdown) == 0;
         i++) {
        self->stats.iopub++;
        if (shutdown >= 0)
            s_engine_unregistered (self, shutdown);
    }
    return 0;
}

static int
s_on_up_ping (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    for (int i = 0;
         i < S_BATCH && s_pass_frames (sock, self->up_hb_dealer, NULL) == 0;
         i++)
        ;
    return 0;
}

//  --------------------------------------------------------------------------
//  The actor

static json_t *
s_stats (s_node_t *self)
{
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "link", self->link, "linked", self->linked, "engines",
        (json_int_t)zhashx_size (self->engines), "down", (json_int_t)s->down,
        "up", (json_int_t)s->up, "iopub", (json_int_t)s->iopub, "bad_frame",
        (json_int_t)s->drops.bad_frame, "bad_signature",
        (json_int_t)s->drops.bad_signature, "bad_header",
        (json_int_t)s->drops.bad_header, "held", (json_int_t)s->held,
        "not_connected", (json_int_t)s->not_connected, "send_failed",
        (json_int_t)s->send_failed, "registrations",
        (json_int_t)s->registrations, "alive", (json_int_t)s->alive, "lost",
        (json_int_t)s->lost, "closed", (json_int_t)s->closed, "hellos",
        (json_int_t)s->hellos, "shared", (json_int_t)s->shared, "unregistered",
        (json_int_t)s->unregistered, "leaf", (json_int_t)self->up_leaf,
        "leaf_port", (json_int_t)self->leaf_port);
}

static int
s_on_pipe (zloop_t *loop, zsock_t *pipe, void *arg)
{
    s_node_t *self = (s_node_t *)arg;
    char *command = zstr_recv (pipe);
    int rc = 0;
    if (!command || streq (command, "$TERM"))
        rc = -1;
    else if (streq (command, "LINK"))
        zstr_send (pipe, self->link);
    else if (streq (command, "STATS")) {
        json_t *stats = s_stats (self);
        //  and its leaf's, which answers at once (a thread of ours)
        zstr_send (self->leaf, "STATS");
        char *leaf = zstr_recv (self->leaf);
        json_t *leaf_stats = leaf ? json_loads (leaf, 0, NULL) : NULL;
        zstr_free (&leaf);
        if (stats && leaf_stats)
            json_object_set_new (stats, "broadcast", leaf_stats);
        else
            json_decref (leaf_stats);
        char *text = stats ? json_dumps (stats, JSON_COMPACT) : NULL;
        zstr_send (pipe, text ? text : "{}");
        free (text);
        json_decref (stats);
    } else
        bn_log_warn ("host: unknown actor command %s", command);
    zstr_free (&command);
    return rc;
}

static void
s_node_destroy (s_node_t **self_p)
{
    s_node_t *self = *self_p;
    if (!self)
        return;
    if (self->connfile_written)
        unlink (self->connfile_path);
    zactor_destroy (&self->leaf);
    bn_heart_destroy (&self->heart);
    for (int c = 0; c < S_CHANNELS; c++) {
        bn_holdq_destroy (&self->channels[c].holdq);
        zsock_destroy (&self->channels[c].local);
        zsock_destroy (&self->channels[c].up);
    }
    zsock_destroy (&self->reg);
    zsock_destroy (&self->up_query);
    zsock_destroy (&self->iopub);
    zsock_destroy (&self->up_iopub);
    zsock_destroy (&self->hb_ping);
    zsock_destroy (&self->hb_pong);
    zsock_destroy (&self->up_hb_sub);
    zsock_destroy (&self->up_hb_dealer);
    zloop_destroy (&self->loop);
    zhashx_destroy (&self->engines);
    zhashx_destroy (&self->departed);
    zlistx_destroy (&self->departed_order);
    zhashx_destroy (&self->pending);
    json_decref (self->tell_alive);
    json_decref (self->tell_lost);
    bn_topology_destroy (&self->topology);
    zcert_destroy (&self->curve_cert);
    bn_connfile_destroy (&self->upstream);
    bn_session_destroy (&self->session);
    free (self->link);
    free (self->name);
    free (self->ip);
    free (self->connfile_path);
    free (self->leaf_id);
    free (self);
    *self_p = NULL;
}

//  The host name for the hub and the link id: printable, without spaces.
static char *
s_host_name (const char *given)
{
    char host[256] = "";
    if (!given && gethostname (host, sizeof host - 1) != 0)
        snprintf (host, sizeof host, "host");
    char *name = strndup (given ? given : host, S_NAME_MAX);
    for (char *c = name; c && *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            *c = '_';
    if (name && !*name) {
        free (name);
        name = strdup ("host");
    }
    return name;
}

//  Start the broadcast leaf: it binds the engines' broadcast port and hangs
//  below the controller's leaf up_leaf. Returns -1 on failure.
static int
s_start_leaf (s_node_t *self, const char *reduce_plugins, int grace,
              uint32_t random)
{
    char down[300];
    if (s_endpoint (self, down, sizeof down))
        return -1;
    char err[256] = "";
    self->topology = bn_topology_new ("kary:1", 1, 0, err, sizeof err);
    char *up =
        self->topology
            ? bn_connfile_broadcast_url (self->upstream, (size_t)self->up_leaf)
            : NULL;
    self->leaf_id = zsys_sprintf (BN_ROUTING_SCHEDULER_PREFIX "h%08x", random);
    //  its link up leaves the host: CURVE, when the controller asks for it
    bn_bcast_node_args_t args = {
        .topology = self->topology,
        .node = 1,
        .key = bn_connfile_key (self->upstream),
        .routing_id = self->leaf_id,
        .curve = self->curve_cert,
        .curve_serverkey = bn_connfile_curve_serverkey (self->upstream),
        .up_endpoint = up,
        .down_endpoint = down,
        .reduce_plugins = reduce_plugins,
        .hwm = self->hwm,
        .connect_grace_ms = grace,
        .status = -1};
    if (up && self->leaf_id)
        self->leaf = zactor_new (bn_bcast_node_actor, &args);
    zstr_free (&up);
    if (!self->leaf || args.status != 0) {
        if (self->ports[0] && args.down_error == EADDRINUSE)
            bn_log_error ("host: the broadcast leaf did not start: no port "
                          "of controller.ports %d-%d is free",
                          self->ports[0], self->ports[1]);
        else
            bn_log_error ("host: the broadcast leaf did not start%s%s",
                          *err ? ": " : "", err);
        return -1;
    }
    zstr_send (self->leaf, "ENDPOINTS");
    zpoller_t *poller = zpoller_new (self->leaf, NULL);
    char *up_endpoint = NULL, *down_endpoint = NULL;
    if (poller && zpoller_wait (poller, S_WAIT_ACTOR))
        zstr_recvx (self->leaf, &up_endpoint, &down_endpoint, NULL);
    zpoller_destroy (&poller);
    self->leaf_port = bn_wire_endpoint_port (down_endpoint);
    zstr_free (&up_endpoint);
    zstr_free (&down_endpoint);
    return self->leaf_port > 0 ? 0 : -1;
}

static s_node_t *
s_node_new (zsock_t *pipe, bn_hostnode_args_t *args)
{
    s_node_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pipe = pipe;
    self->hwm = args->hwm > 0 ? args->hwm : 0;
    self->registration_timeout = args->registration_timeout_ms > 0
                                     ? args->registration_timeout_ms
                                     : 30000;
    self->flush_timer = self->hello_timer = self->beat_timer = -1;
    //  a range too small for every port fails now, not at the last bind
    if (args->ports[0] > 0 && args->ports[1] >= args->ports[0]) {
        self->ports[0] = args->ports[0];
        self->ports[1] = args->ports[1];
        int held = self->ports[1] - self->ports[0] + 1;
        if (held < BN_HOSTNODE_PORTS) {
            bn_log_error ("host: controller.ports %d-%d holds %d ports; a "
                          "host node listens on %d",
                          self->ports[0], self->ports[1], held,
                          BN_HOSTNODE_PORTS);
            s_node_destroy (&self);
            return NULL;
        }
    }
    char err[256] = "";
    self->upstream =
        args->connection_info
            ? bn_connfile_parse (args->connection_info, err, sizeof err)
            : NULL;
    if (!self->upstream ||
        bn_connfile_kind (self->upstream) != BN_CONNFILE_ENGINE) {
        bn_log_error ("host: the controller's connection info is not an "
                      "engine connection file%s%s",
                      *err ? ": " : "", err);
        s_node_destroy (&self);
        return NULL;
    }
    uint32_t random = randombytes_random ();
    size_t leaves = bn_connfile_broadcast_count (self->upstream);
    self->up_leaf = leaves ? (int)(random % leaves) : 0;
    self->name = s_host_name (args->name);
    self->ip = strdup (args->ip ? args->ip : "127.0.0.1");
    self->connfile_path =
        args->connfile_path ? strdup (args->connfile_path) : NULL;
    self->link = self->name ? zsys_sprintf (BN_HOST_LINK_PREFIX "%s %08x",
                                            self->name, random)
                            : NULL;
    self->session = bn_session_new (bn_connfile_key (self->upstream), NULL);
    self->engines = zhashx_new ();
    self->departed = zhashx_new ();
    self->departed_order = zlistx_new ();
    self->pending = zhashx_new ();
    self->tell_alive = json_array ();
    self->tell_lost = json_array ();
    self->loop = zloop_new ();
    if (bn_connfile_curve_serverkey (self->upstream))
        self->curve_cert = zcert_new ();
    if (!self->name || !self->ip || !self->connfile_path || !self->link ||
        !self->session || !self->engines || !self->departed ||
        !self->departed_order || !self->pending || !self->tell_alive ||
        !self->tell_lost || !self->loop || !leaves ||
        (bn_connfile_curve_serverkey (self->upstream) && !self->curve_cert)) {
        if (!leaves)
            bn_log_error ("host: the controller's connection info has no "
                          "broadcast port");
        s_node_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->engines, s_engine_free);
    zhashx_set_destructor (self->departed, s_departed_free);
    zlistx_set_destructor (self->departed_order,
                           (zlistx_destructor_fn *)zstr_free);
    zhashx_set_destructor (self->pending, (zhashx_destructor_fn *)zstr_free);
    static const char *names[] = {"mux", "control", "task"};
    static const char *ids[] = {BN_ROUTING_MUX_OUT, BN_ROUTING_CONTROL_OUT,
                                BN_ROUTING_TASK_OUT};
    int port;
    bool ok = true;
    for (int c = 0; c < S_CHANNELS && ok; c++) {
        s_channel_t *channel = &self->channels[c];
        channel->node = self;
        channel->name = names[c];
        channel->local = s_local (self, ZMQ_ROUTER, ids[c], &port);
        channel->up = s_upstream (self, ZMQ_DEALER, names[c], true);
        channel->holdq = bn_holdq_new (args->connect_grace_ms, s_send_held,
                                       s_fail_held, channel);
        ok = channel->local && channel->up && channel->holdq;
        if (ok)
            bn_holdq_set_destructor (channel->holdq, s_msg_free);
    }
    ok = ok && (self->reg = s_local (self, ZMQ_ROUTER, NULL, &port)) &&
         (self->up_query =
              s_upstream (self, ZMQ_DEALER, "registration", true)) &&
         (self->iopub = s_local (self, ZMQ_SUB, NULL, &port)) &&
         (self->up_iopub = s_upstream (self, ZMQ_PUB, "iopub", false)) &&
         (self->hb_ping = s_local (self, ZMQ_PUB, NULL, &port)) &&
         (self->hb_pong = s_local (self, ZMQ_ROUTER, NULL, &port)) &&
         (self->up_hb_sub = s_upstream (self, ZMQ_SUB, "hb_ping", false)) &&
         (self->up_hb_dealer = s_upstream (self, ZMQ_DEALER, "hb_pong", true));
    ok = ok && s_start_leaf (self, args->reduce_plugins, args->connect_grace_ms,
                             random) == 0;
    zloop_set_nonstop (self->loop, true);
    for (int c = 0; c < S_CHANNELS && ok; c++)
        ok = zloop_reader (self->loop, self->channels[c].up, s_on_channel_up,
                           &self->channels[c]) == 0 &&
             zloop_reader (self->loop, self->channels[c].local,
                           s_on_channel_local, &self->channels[c]) == 0 &&
             bn_holdq_attach (self->channels[c].holdq, self->loop) == 0;
    ok = ok && zloop_reader (self->loop, pipe, s_on_pipe, self) == 0 &&
         zloop_reader (self->loop, self->reg, s_on_reg, self) == 0 &&
         zloop_reader (self->loop, self->up_query, s_on_up_query, self) == 0 &&
         zloop_reader (self->loop, self->iopub, s_on_iopub, self) == 0 &&
         zloop_reader (self->loop, self->up_hb_sub, s_on_up_ping, self) == 0;
    if (!ok) {
        s_node_destroy (&self);
        return NULL;
    }
    return self;
}

void
bn_hostnode_actor (zsock_t *pipe, void *args)
{
    bn_hostnode_args_t *start = (bn_hostnode_args_t *)args;
    assert (start);
    s_node_t *self = s_node_new (pipe, start);
    start->status = self ? 0 : -1;
    zsock_signal (pipe, 0);
    if (!self)
        return;
    bn_log_info ("host: %s says hello to the controller as '%s'", self->name,
                 self->link);
    s_hello (self);
    zloop_start (self->loop);
    bool failed = self->failed;
    s_node_destroy (&self);
    if (!failed)
        return;
    //  said FAILED: wait for the caller's $TERM
    while (true) {
        char *command = zstr_recv (pipe);
        bool term = !command || streq (command, "$TERM");
        zstr_free (&command);
        if (term)
            break;
    }
}

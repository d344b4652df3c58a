/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_ctltest: test helpers for the controller's Check programs: a
    controller actor in a temporary profile, a fake client and a fake engine
    speaking the wire protocol through bn_msg.  Included by one test
    program each, so everything here is static.  */
#ifndef BN_CTLTEST_H_INCLUDED
#define BN_CTLTEST_H_INCLUDED

#include <check.h>
#include <czmq.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_controller.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_session.h"
#include "bn_stattest.h"
#include "bn_wire.h"

#define T_TIMEOUT 3000 //  ms any single receive in a test may wait

//  --------------------------------------------------------------------------
//  Sockets and messages

static inline zsock_t *
t_sock (int type, const char *identity)
{
    zsock_t *sock = zsock_new (type);
    ck_assert_ptr_nonnull (sock);
    zsock_set_rcvtimeo (sock, T_TIMEOUT);
    zsock_set_sndtimeo (sock, T_TIMEOUT);
    zsock_set_linger (sock, 0);
    zsock_set_sndhwm (sock, 0);
    zsock_set_rcvhwm (sock, 0);
    if (identity)
        zsock_set_identity (sock, identity);
    if (type == ZMQ_SUB)
        zsock_set_subscribe (sock, "");
    return sock;
}

//  A bound socket; its port goes to *port.
static inline zsock_t *
t_bound (int type, const char *identity, int *port)
{
    zsock_t *sock = t_sock (type, identity);
    *port = zsock_bind (sock, "tcp://127.0.0.1:*");
    ck_assert_int_gt (*port, 0);
    return sock;
}

static inline void
t_connect (zsock_t *sock, int port)
{
    ck_assert_int_eq (zsock_connect (sock, "tcp://127.0.0.1:%d", port), 0);
}

//  Wait until ROUTER from can route to peer (its routing id). The probe
//  message this sends is swallowed from to, the peer's socket.
static inline void
t_wait_route (zsock_t *from, const char *peer, zsock_t *to)
{
    zsock_set_router_mandatory (from, 1);
    int64_t end = zclock_mono () + T_TIMEOUT;
    void *handle = zsock_resolve (from);
    while (zmq_send (handle, peer, strlen (peer), ZMQ_SNDMORE | ZMQ_DONTWAIT) <
           0) {
        ck_assert_msg (zclock_mono () < end, "no route to %s", peer);
        zclock_sleep (5);
    }
    zmq_send (handle, "probe", 5, 0);
    zmsg_t *probe = zmsg_recv (to);
    ck_assert_ptr_nonnull (probe);
    zmsg_destroy (&probe);
}

//  Build a message of type with content (taken, NULL = {}) and an optional
//  first ident.
static inline bn_msg_t *
t_msg (bn_session_t *session, const char *type, json_t *content,
       const char *ident)
{
    bn_msg_t *msg = bn_msg_new (session, type);
    ck_assert_ptr_nonnull (msg);
    if (content)
        bn_msg_set_content (msg, content);
    if (ident)
        ck_assert_int_eq (bn_msg_push_ident (msg, ident, strlen (ident)), 0);
    return msg;
}

static inline void
t_send (bn_msg_t **msg, zsock_t *sock, bn_session_t *session)
{
    ck_assert_int_eq (bn_msg_send (msg, zsock_resolve (sock), session), 0);
}

//  Receive one message (bounded by the socket's timeout); NULL if none.
static inline bn_msg_t *
t_recv (zsock_t *sock)
{
    return bn_msg_recv (zsock_resolve (sock));
}

//  Receive one message within ms, or NULL.
static inline bn_msg_t *
t_recv_within (zsock_t *sock, int ms)
{
    zpoller_t *poller = zpoller_new (sock, NULL);
    void *which = zpoller_wait (poller, ms);
    zpoller_destroy (&poller);
    return which ? bn_msg_recv_flags (zsock_resolve (sock), ZMQ_DONTWAIT)
                 : NULL;
}

//  Send raw frames (strings; NULL ends the list) as one message.
static inline void
t_send_raw (zsock_t *sock, ...)
{
    va_list args;
    va_start (args, sock);
    const char *frame = va_arg (args, const char *);
    while (frame) {
        const char *next = va_arg (args, const char *);
        ck_assert_int_ge (zmq_send (zsock_resolve (sock), frame, strlen (frame),
                                    next ? ZMQ_SNDMORE : 0),
                          0);
        frame = next;
    }
    va_end (args);
}

static inline const char *
t_content_str (bn_msg_t *msg, const char *key)
{
    return json_string_value (json_object_get (bn_msg_content (msg), key));
}

static inline const char *
t_metadata_str (bn_msg_t *msg, const char *key)
{
    return json_string_value (json_object_get (bn_msg_metadata (msg), key));
}

//  --------------------------------------------------------------------------
//  A controller actor in a fresh profile folder

typedef struct {
    char profile[64]; //  Temporary profile folder
    bn_config_t *config;
    bn_controller_args_t args;
    zactor_t *actor;
    char *client_path;
    char *engine_path;
    bn_connfile_t *client; //  Loaded connection files
    bn_connfile_t *engine;
    char key[64];
} t_controller_t;

//  Start a controller; settings are "name=value" strings ending with NULL.
static inline t_controller_t *
t_controller_start (const char *setting, ...)
{
    t_controller_t *self = calloc (1, sizeof *self);
    ck_assert_ptr_nonnull (self);
    snprintf (self->profile, sizeof self->profile, "/tmp/bn-ctltest-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (self->profile));
    self->config = bn_config_new ();
    //  tests beat rarely unless they test the heart
    bn_config_set (self->config, "controller.heartbeat_period", "10000",
                   BN_CONFIG_CMDLINE);
    va_list args;
    va_start (args, setting);
    while (setting) {
        char name[128];
        const char *eq = strchr (setting, '=');
        ck_assert_ptr_nonnull (eq);
        snprintf (name, sizeof name, "%.*s", (int)(eq - setting), setting);
        ck_assert_int_eq (
            bn_config_set (self->config, name, eq + 1, BN_CONFIG_CMDLINE), 0);
        setting = va_arg (args, const char *);
    }
    va_end (args);
    self->args.config = self->config;
    self->args.profile_dir = self->profile;
    self->actor = zactor_new (bn_controller_actor, &self->args);
    ck_assert_ptr_nonnull (self->actor);
    ck_assert_int_eq (self->args.status, 0);
    zstr_send (self->actor, "CONNFILES");
    ck_assert_int_eq (
        zstr_recvx (self->actor, &self->client_path, &self->engine_path, NULL),
        2);
    char err[256] = "";
    self->client = bn_connfile_load (self->client_path, err, sizeof err);
    ck_assert_msg (self->client != NULL, "%s", err);
    self->engine = bn_connfile_load (self->engine_path, err, sizeof err);
    ck_assert_msg (self->engine != NULL, "%s", err);
    snprintf (self->key, sizeof self->key, "%s",
              bn_connfile_key (self->client));
    return self;
}

static inline void
t_controller_stop (t_controller_t **self_p)
{
    t_controller_t *self = *self_p;
    if (!self)
        return;
    zactor_destroy (&self->actor);
    bn_connfile_destroy (&self->client);
    bn_connfile_destroy (&self->engine);
    zstr_free (&self->client_path);
    zstr_free (&self->engine_path);
    bn_config_destroy (&self->config);
    zdir_t *dir = zdir_new (self->profile, NULL);
    if (dir)
        zdir_remove (dir, true);
    zdir_destroy (&dir);
    rmdir (self->profile);
    free (self);
    *self_p = NULL;
}

//  The controller's counters as JSON (caller decrefs).
static inline json_t *
t_stats (t_controller_t *self)
{
    zstr_send (self->actor, "STATS");
    char *text = zstr_recv (self->actor);
    ck_assert_ptr_nonnull (text);
    json_t *stats = json_loads (text, 0, NULL);
    zstr_free (&text);
    ck_assert_ptr_nonnull (stats);
    return stats;
}

//  One counter, e.g. t_stat (c, "mux", "bad_signature").
static inline json_int_t
t_stat (t_controller_t *self, const char *part, const char *name)
{
    json_t *stats = t_stats (self);
    json_int_t result = t_counter (stats, part, name);
    json_decref (stats);
    return result;
}

static inline int
t_port (bn_connfile_t *file, const char *name)
{
    int port = bn_connfile_port (file, name);
    ck_assert_int_gt (port, 0);
    return port;
}

//  --------------------------------------------------------------------------
//  A fake client (the sockets a Python Client opens)

typedef struct {
    bn_session_t *session;
    zsock_t *query;        //  DEALER -> registration
    zsock_t *mux;          //  DEALER
    zsock_t *control;      //  DEALER
    zsock_t *task;         //  DEALER
    zsock_t *broadcast;    //  DEALER
    zsock_t *notification; //  SUB
    zsock_t *iopub;        //  SUB
} t_client_t;

static inline t_client_t *
t_client_new (t_controller_t *controller)
{
    t_client_t *self = calloc (1, sizeof *self);
    ck_assert_ptr_nonnull (self);
    bn_connfile_t *file = controller->client;
    self->session = bn_session_new (controller->key, NULL);
    self->query = t_sock (ZMQ_DEALER, NULL);
    t_connect (self->query, t_port (file, "registration"));
    self->mux = t_sock (ZMQ_DEALER, NULL);
    t_connect (self->mux, t_port (file, "mux"));
    self->control = t_sock (ZMQ_DEALER, NULL);
    t_connect (self->control, t_port (file, "control"));
    self->task = t_sock (ZMQ_DEALER, NULL);
    t_connect (self->task, t_port (file, "task"));
    self->broadcast = t_sock (ZMQ_DEALER, NULL);
    t_connect (self->broadcast, bn_connfile_broadcast (file, 0));
    self->notification = t_sock (ZMQ_SUB, NULL);
    t_connect (self->notification, t_port (file, "notification"));
    self->iopub = t_sock (ZMQ_SUB, NULL);
    t_connect (self->iopub, t_port (file, "iopub"));
    //  let the subscriptions reach the PUBs
    zclock_sleep (150);
    return self;
}

static inline void
t_client_destroy (t_client_t **self_p)
{
    t_client_t *self = *self_p;
    if (!self)
        return;
    zsock_destroy (&self->query);
    zsock_destroy (&self->mux);
    zsock_destroy (&self->control);
    zsock_destroy (&self->task);
    zsock_destroy (&self->broadcast);
    zsock_destroy (&self->notification);
    zsock_destroy (&self->iopub);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

//  Send a query and return the reply (asserting it came, parent matches).
static inline bn_msg_t *
t_query (t_client_t *self, const char *type, json_t *content)
{
    bn_msg_t *msg = t_msg (self->session, type, content, NULL);
    char msg_id[BN_MSG_ID_SIZE];
    snprintf (msg_id, sizeof msg_id, "%s", bn_msg_id (msg));
    t_send (&msg, self->query, self->session);
    bn_msg_t *reply = t_recv (self->query);
    ck_assert_msg (reply != NULL, "no reply to %s", type);
    ck_assert_int_eq (bn_msg_verify (reply, self->session, true), 0);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    return reply;
}

//  The controller's counters as a client reads them, through
//  bn_stats_request: the reply's "actors" (caller decrefs).
static inline json_t *
t_query_stats (t_client_t *self)
{
    bn_msg_t *reply = t_query (self, BN_MSG_STATS_REQUEST, NULL);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_STATS_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    json_t *actors = json_object_get (bn_msg_content (reply), "actors");
    ck_assert (json_is_object (actors));
    json_incref (actors);
    bn_msg_destroy (&reply);
    return actors;
}

//  One counter as a client reads it, e.g. t_query_stat (c, "hub", "queries").
static inline json_int_t
t_query_stat (t_client_t *self, const char *part, const char *name)
{
    json_t *actors = t_query_stats (self);
    json_int_t result = t_counter (actors, part, name);
    json_decref (actors);
    return result;
}

//  Wait up to ms for a notification of type; returns it or NULL.
static inline bn_msg_t *
t_notification (t_client_t *self, const char *type, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (zclock_mono () < end) {
        bn_msg_t *msg =
            t_recv_within (self->notification, (int)(end - zclock_mono ()));
        if (!msg)
            return NULL;
        ck_assert_int_eq (bn_msg_verify (msg, self->session, false), 0);
        if (streq (bn_msg_type (msg), type))
            return msg;
        bn_msg_destroy (&msg);
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  A fake engine (the sockets an ipengine opens)

typedef struct {
    char uuid[40];
    int id;
    bn_session_t *session; //  session id = uuid
    zsock_t *reg;          //  DEALER, id uuid
    zsock_t *shell;        //  ROUTER, id uuid: mux, task, broadcast leaf
    zsock_t *control;      //  ROUTER, id uuid
    zsock_t *iopub;        //  PUB
    zsock_t *hb_sub;       //  heart SUB
    zsock_t *hb_dealer;    //  heart DEALER, id uuid
    bool connected;
} t_engine_t;

static inline t_engine_t *
t_engine_new (t_controller_t *controller)
{
    t_engine_t *self = calloc (1, sizeof *self);
    ck_assert_ptr_nonnull (self);
    bn_session_new_id (self->uuid);
    self->id = -1;
    self->session = bn_session_new (controller->key, self->uuid);
    self->reg = t_sock (ZMQ_DEALER, self->uuid);
    t_connect (self->reg, t_port (controller->engine, "registration"));
    return self;
}

static inline void
t_engine_destroy (t_engine_t **self_p)
{
    t_engine_t *self = *self_p;
    if (!self)
        return;
    zsock_destroy (&self->reg);
    zsock_destroy (&self->shell);
    zsock_destroy (&self->control);
    zsock_destroy (&self->iopub);
    zsock_destroy (&self->hb_sub);
    zsock_destroy (&self->hb_dealer);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

//  Send registration_request (id < 0: none requested); return the reply.
static inline bn_msg_t *
t_engine_request (t_engine_t *self, int requested)
{
    json_t *content = json_pack ("{s:s}", "uuid", self->uuid);
    if (requested >= 0)
        json_object_set_new (content, "id", json_integer (requested));
    bn_msg_t *msg =
        t_msg (self->session, BN_MSG_REGISTRATION_REQUEST, content, NULL);
    t_send (&msg, self->reg, self->session);
    bn_msg_t *reply = t_recv (self->reg);
    ck_assert_msg (reply != NULL, "no registration_reply");
    ck_assert_int_eq (bn_msg_verify (reply, self->session, true), 0);
    return reply;
}

//  Connect the engine's sockets as ipengine does after a good reply.
static inline void
t_engine_connect (t_engine_t *self, t_controller_t *controller)
{
    bn_connfile_t *file = controller->engine;
    self->shell = t_sock (ZMQ_ROUTER, self->uuid);
    t_connect (self->shell, t_port (file, "mux"));
    t_connect (self->shell, t_port (file, "task"));
    size_t leaves = bn_connfile_broadcast_count (file);
    t_connect (self->shell,
               bn_connfile_broadcast (file, (size_t)self->id % leaves));
    self->control = t_sock (ZMQ_ROUTER, self->uuid);
    t_connect (self->control, t_port (file, "control"));
    self->iopub = t_sock (ZMQ_PUB, NULL);
    t_connect (self->iopub, t_port (file, "iopub"));
    self->hb_sub = t_sock (ZMQ_SUB, NULL);
    t_connect (self->hb_sub, t_port (file, "hb_ping"));
    self->hb_dealer = t_sock (ZMQ_DEALER, self->uuid);
    t_connect (self->hb_dealer, t_port (file, "hb_pong"));
    self->connected = true;
}

//  Echo every ping waiting on the heart, as an engine's heart device does.
static inline int
t_engine_echo (t_engine_t *self)
{
    int count = 0;
    while (true) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, zsock_resolve (self->hb_sub), ZMQ_DONTWAIT) <
            0) {
            zmq_msg_close (&frame);
            return count;
        }
        zmq_msg_send (&frame, zsock_resolve (self->hb_dealer), 0);
        zmq_msg_close (&frame);
        count++;
    }
}

//  Echo pings for ms.
static inline void
t_engine_beat_for (t_engine_t *self, int ms)
{
    int64_t end = zclock_mono () + ms;
    while (zclock_mono () < end) {
        t_engine_echo (self);
        zclock_sleep (10);
    }
}

//  Register (requested id or -1), answer pings until client sees the
//  registration_notification; returns the engine id.
static inline int
t_engine_register (t_engine_t *self, t_controller_t *controller,
                   t_client_t *client, int requested)
{
    bn_msg_t *reply = t_engine_request (self, requested);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_REGISTRATION_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    self->id = (int)json_integer_value (
        json_object_get (bn_msg_content (reply), "id"));
    bn_msg_destroy (&reply);
    t_engine_connect (self, controller);
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (zclock_mono () < end) {
        t_engine_echo (self);
        bn_msg_t *note = t_recv_within (client->notification, 10);
        if (!note)
            continue;
        bool mine =
            streq (bn_msg_type (note), BN_MSG_REGISTRATION_NOTIFICATION) &&
            streq (t_content_str (note, "uuid"), self->uuid);
        bn_msg_destroy (&note);
        if (mine) {
            //  let the shell connections settle before requests come
            zclock_sleep (20);
            return self->id;
        }
    }
    ck_abort_msg ("engine %s was not registered", self->uuid);
    return -1;
}

//  Receive a request on the engine's shell (or control) socket and answer
//  it with reply content {"status": "ok"} and the request's buffers;
//  returns the request's msg_id in buf.
static inline void
t_engine_answer (t_engine_t *self, zsock_t *sock, char *msg_id, size_t size)
{
    bn_msg_t *request = t_recv (sock);
    ck_assert_msg (request != NULL, "engine got no request");
    ck_assert_int_eq (bn_msg_verify (request, self->session, false), 0);
    snprintf (msg_id, size, "%s", bn_msg_id (request));
    char type[64];
    bn_wire_reply_type (bn_msg_type (request), type, sizeof type);
    bn_msg_t *reply = bn_msg_new_reply (self->session, request, type);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
    bn_msg_set_metadata (
        reply, json_pack ("{s:s, s:s}", "status", "ok", "engine", self->uuid));
    for (size_t i = 0; i < bn_msg_nbuffers (request); i++)
        bn_msg_add_buffer_msg (reply, bn_msg_buffer (request, i));
    bn_msg_destroy (&request);
    t_send (&reply, sock, self->session);
}

#endif

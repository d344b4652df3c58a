/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_engine: banyan engines (bn_engine_actor) against a fake
    controller built here with bn_msg: registration, heartbeat, shell and
    control requests, iopub, unregistration, and bad input on every
    socket.  */
#include "bn_apply.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_engine.h"
#include "bn_engine_actor.h"
#include "bn_error.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_rawtext.h"
#include "bn_wire.h"

#include <check.h>
#include <czmq.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_KEY "0a1b2c3d-4e5f60718293a4b5c6d7e8f9"
#define S_CLIENT "\x00\x6b\x8b\x45\x67" //  a libzmq-style client id
#define S_CLIENT_SIZE 5
#define S_MAX 64
#define S_TIMEOUT 5000
#define S_PLUGIN BN_PLUGIN_DIR "/bn_plugin_example.so"

//  The controller side: every engine-facing socket of doc/wire.md 3.
typedef struct {
    char dir[64];          //  temporary profile folder
    char *path;            //  engine connection file
    bn_session_t *hub;     //  the controller's session
    bn_session_t *client;  //  a client's session (requests)
    bn_session_t *check;   //  verifies what engines send (replay check)
    zsock_t *registration; //  hub ROUTER
    zsock_t *mux;          //  ROUTER "mux_out"
    zsock_t *task;         //  ROUTER "task_out"
    zsock_t *control;      //  ROUTER "control_out"
    zsock_t *bcast[2];     //  ROUTERs "sub_scheduler_00", "..._01"
    zsock_t *ping;         //  PUB
    zsock_t *pong;         //  ROUTER
    zsock_t *iopub;        //  SUB
    zactor_t *engines;
    bool stock; //  registration replies name no parent, as 7.1.0's hub's
    int n;      //  registered engines
    char uuid[S_MAX][64];
    int id[S_MAX];
} s_fake_t;

static s_fake_t *s_fake;

static zsock_t *
s_bind (int type, const char *identity)
{
    zsock_t *sock = zsock_new (type);
    ck_assert_ptr_nonnull (sock);
    if (identity)
        zsock_set_identity (sock, identity);
    if (type == ZMQ_ROUTER)
        zsock_set_router_mandatory (sock, 1);
    zsock_set_rcvtimeo (sock, S_TIMEOUT);
    zsock_set_sndtimeo (sock, S_TIMEOUT);
    ck_assert_int_ge (zsock_bind (sock, "tcp://127.0.0.1:*"), 0);
    return sock;
}

static int
s_port (zsock_t *sock)
{
    return bn_wire_endpoint_port (zsock_endpoint (sock));
}

static void
s_setup (void)
{
    bn_log_set_level (BN_LOG_ERROR);
    s_fake_t *fake = calloc (1, sizeof *fake);
    s_fake = fake;
    snprintf (fake->dir, sizeof fake->dir, "/tmp/bn-engine-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (fake->dir));
    fake->hub = bn_session_new (S_KEY, NULL);
    fake->client = bn_session_new (S_KEY, NULL);
    fake->check = bn_session_new (S_KEY, NULL);
    fake->registration = s_bind (ZMQ_ROUTER, NULL);
    fake->mux = s_bind (ZMQ_ROUTER, BN_ROUTING_MUX_OUT);
    fake->task = s_bind (ZMQ_ROUTER, BN_ROUTING_TASK_OUT);
    fake->control = s_bind (ZMQ_ROUTER, BN_ROUTING_CONTROL_OUT);
    fake->bcast[0] = s_bind (ZMQ_ROUTER, "sub_scheduler_00");
    fake->bcast[1] = s_bind (ZMQ_ROUTER, "sub_scheduler_01");
    fake->ping = s_bind (ZMQ_PUB, NULL);
    fake->pong = s_bind (ZMQ_ROUTER, NULL);
    fake->iopub = s_bind (ZMQ_SUB, NULL);
    zsock_set_subscribe (fake->iopub, "");
    bn_connfile_t *cf = bn_connfile_new (BN_CONNFILE_ENGINE);
    bn_connfile_set_key (cf, S_KEY);
    bn_connfile_set_port (cf, "registration", s_port (fake->registration));
    bn_connfile_set_port (cf, "mux", s_port (fake->mux));
    bn_connfile_set_port (cf, "task", s_port (fake->task));
    bn_connfile_set_port (cf, "control", s_port (fake->control));
    bn_connfile_set_port (cf, "iopub", s_port (fake->iopub));
    bn_connfile_set_port (cf, "hb_ping", s_port (fake->ping));
    bn_connfile_set_port (cf, "hb_pong", s_port (fake->pong));
    int ports[2] = {s_port (fake->bcast[0]), s_port (fake->bcast[1])};
    bn_connfile_set_broadcast (cf, ports, 2);
    fake->path = bn_connfile_path (fake->dir, NULL, BN_CONNFILE_ENGINE);
    ck_assert_int_eq (bn_connfile_save (cf, fake->path), 0);
    bn_connfile_destroy (&cf);
}

static void
s_teardown (void)
{
    s_fake_t *fake = s_fake;
    zactor_destroy (&fake->engines);
    zsock_t **socks[] = {&fake->registration, &fake->mux,      &fake->task,
                         &fake->control,      &fake->bcast[0], &fake->bcast[1],
                         &fake->ping,         &fake->pong,     &fake->iopub};
    for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
        zsock_destroy (socks[i]);
    bn_session_destroy (&fake->hub);
    bn_session_destroy (&fake->client);
    bn_session_destroy (&fake->check);
    unlink (fake->path);
    char security[128];
    snprintf (security, sizeof security, "%s/security", fake->dir);
    rmdir (security);
    rmdir (fake->dir);
    free (fake->path);
    free (fake);
    s_fake = NULL;
}

//  Start count engines with config (NULL: defaults).
static void
s_start (s_fake_t *fake, int count, int first_id, bn_config_t *config)
{
    bn_engine_args_t args = {fake->path, NULL, config, count, first_id, NULL};
    fake->engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (fake->engines);
}

//  Receive a message within timeout ms, or NULL. Messages signed with
//  another key are skipped: a test binds ports the system just freed, and
//  an engine of another process may still be reconnecting to one.
static bn_msg_t *
s_recv (zsock_t *sock, int timeout)
{
    int64_t until = zclock_mono () + timeout;
    while (true) {
        int64_t left = until - zclock_mono ();
        zsock_set_rcvtimeo (sock, left > 0 ? (int)left : 0);
        bn_msg_t *msg = bn_msg_recv (zsock_resolve (sock));
        if (!msg)
            return NULL;
        bn_msg_t *copy = bn_msg_dup (msg);
        int rc = bn_msg_verify (copy, s_fake->hub, false);
        bn_msg_destroy (&copy);
        if (rc != BN_ESIGNATURE)
            return msg;
        bn_msg_destroy (&msg);
    }
}

//  Receive and check a message the engines signed.
static bn_msg_t *
s_recv_ok (zsock_t *sock)
{
    bn_msg_t *msg = s_recv (sock, S_TIMEOUT);
    ck_assert_msg (msg != NULL, "no message within %d ms", S_TIMEOUT);
    ck_assert_int_eq (bn_msg_verify (msg, s_fake->check, true), 0);
    return msg;
}

static int
s_index_of (s_fake_t *fake, const char *uuid)
{
    for (int i = 0; i < fake->n; i++)
        if (strcmp (fake->uuid[i], uuid) == 0)
            return i;
    return -1;
}

static void s_probe_iopub (s_fake_t *fake, int index);

//  A registration_reply to request: its parent is the request's header,
//  as banyan's hub sends it, or none, as 7.1.0's hub does (fake->stock).
static bn_msg_t *
s_registration_reply_new (s_fake_t *fake, bn_msg_t *request)
{
    bn_msg_t *reply;
    if (fake->stock) {
        reply = bn_msg_new (fake->hub, BN_MSG_REGISTRATION_REPLY);
        bn_msg_copy_idents (reply, request);
    } else
        reply =
            bn_msg_new_reply (fake->hub, request, BN_MSG_REGISTRATION_REPLY);
    ck_assert_ptr_nonnull (reply);
    return reply;
}

//  The routing id of the socket the engines of a process share.
#define S_SHARED_PREFIX "bn-engines-"

static bool
s_from_shared (bn_msg_t *msg)
{
    size_t size;
    const char *ident = bn_msg_ident (msg, 0, &size);
    return ident && size > strlen (S_SHARED_PREFIX) &&
           memcmp (ident, S_SHARED_PREFIX, strlen (S_SHARED_PREFIX)) == 0;
}

//  Answer count registration requests (giving the requested id, else the
//  next free one) with hb_period ms, and wait until the engines run.
static void
s_register_only (s_fake_t *fake, int count, int hb_period)
{
    int next = 0;
    for (int i = 0; i < count; i++) {
        bn_msg_t *request = s_recv_ok (fake->registration);
        ck_assert_str_eq (bn_msg_type (request), BN_MSG_REGISTRATION_REQUEST);
        json_t *content = bn_msg_content (request);
        const char *uuid =
            json_string_value (json_object_get (content, "uuid"));
        ck_assert_ptr_nonnull (uuid);
        //  the session is the uuid; the first asks on the socket the
        //  process's engines share, the others too when the hub names the
        //  parent of its replies, else each on its own, its routing id the
        //  uuid
        ck_assert_str_eq (bn_msg_session (request), uuid);
        if (fake->n == 0 || !fake->stock)
            ck_assert (s_from_shared (request));
        else
            ck_assert (bn_msg_ident_is (request, 0, uuid, strlen (uuid)));
        ck_assert (json_object_get (content, "id") != NULL);
        json_t *asked = json_object_get (content, "id");
        int id =
            json_is_integer (asked) ? (int)json_integer_value (asked) : next;
        next = id + 1;
        snprintf (fake->uuid[fake->n], sizeof fake->uuid[0], "%s", uuid);
        fake->id[fake->n++] = id;
        bn_msg_t *reply = s_registration_reply_new (fake, request);
        bn_msg_set_content (reply,
                            json_pack ("{s:i, s:s, s:i}", "id", id, "status",
                                       "ok", "hb_period", hb_period));
        ck_assert_int_eq (
            bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub),
            0);
        bn_msg_destroy (&request);
    }
    zsock_set_rcvtimeo (fake->engines, S_TIMEOUT);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
}

//  As s_register_only, then wait until every engine says "starting" on
//  iopub.
static void
s_register (s_fake_t *fake, int count, int hb_period)
{
    s_register_only (fake, count, hb_period);
    //  iopub is a PUB: until its connection is up, what it sends is lost.
    //  Probe each engine with kernel_info until its idle status arrives.
    for (int i = fake->n - count; i < fake->n; i++)
        s_probe_iopub (fake, i);
}

//  Send a request of type to engine index on sock with these idents after
//  the engine's uuid (the client id, or a broadcast path). content and
//  metadata are taken (NULL: {}); buffers are added by add (may be NULL).
//  Retries while the engine's connection is not up yet. Returns the
//  request's msg_id (static buffer).
typedef void (s_add_fn) (bn_msg_t *msg, void *arg);

//  As s_send_to, with shared (not NULL) in front of the engine's uuid: the
//  routing id of the connection the engine shares.
static const char *
s_send_routed (s_fake_t *fake, zsock_t *sock, int index, const char *type,
               json_t *content, json_t *metadata, s_add_fn *add, void *arg,
               const char *via, const char *shared)
{
    static char msg_id[BN_MSG_ID_SIZE];
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (true) {
        bn_msg_t *msg = bn_msg_new (fake->client, type);
        bn_msg_push_ident (msg, S_CLIENT, S_CLIENT_SIZE);
        if (via)
            bn_msg_push_ident (msg, via, strlen (via));
        bn_msg_push_ident (msg, fake->uuid[index], strlen (fake->uuid[index]));
        if (shared)
            bn_msg_push_ident (msg, shared, strlen (shared));
        bn_msg_set_content (msg,
                            content ? json_incref (content) : json_object ());
        bn_msg_set_metadata (msg, metadata ? json_incref (metadata)
                                           : json_object ());
        if (add)
            add (msg, arg);
        snprintf (msg_id, sizeof msg_id, "%s", bn_msg_id (msg));
        if (bn_msg_send (&msg, zsock_resolve (sock), fake->client) == 0)
            break;
        ck_assert_int_eq (errno, EHOSTUNREACH);
        ck_assert_int_lt (zclock_mono (), until);
        zclock_sleep (10);
    }
    json_decref (content);
    json_decref (metadata);
    return msg_id;
}

static const char *
s_send_to (s_fake_t *fake, zsock_t *sock, int index, const char *type,
           json_t *content, json_t *metadata, s_add_fn *add, void *arg,
           const char *via)
{
    return s_send_routed (fake, sock, index, type, content, metadata, add, arg,
                          via, NULL);
}

static const char *
s_send (s_fake_t *fake, zsock_t *sock, int index, const char *type,
        json_t *content)
{
    return s_send_to (fake, sock, index, type, content, NULL, NULL, NULL, NULL);
}

//  Apply buffers calling Reference(name) with the args in arg (a LIST).
static void
s_add_reference (bn_msg_t *msg, void *arg)
{
    const char **call = (const char **)arg;
    bn_value_t *args = bn_value_new_list ();
    for (int i = 1; call[i]; i++) {
        //  numbers stay numbers, the rest are strings
        char *end;
        long long number = strtoll (call[i], &end, 10);
        bn_value_append (args, *end || end == call[i]
                                   ? bn_value_new_str (call[i])
                                   : bn_value_new_int (number));
    }
    ck_assert_int_eq (bn_apply_add_reference (msg, call[0], args, NULL), 0);
    bn_value_destroy (&args);
}

//  Apply Reference(call[0]) (call[1...] as args) on engine index via mux.
static const char *
s_apply (s_fake_t *fake, int index, const char **call, json_t *metadata)
{
    return s_send_to (fake, fake->mux, index, BN_MSG_APPLY_REQUEST, NULL,
                      metadata, s_add_reference, (void *)call, NULL);
}

//  Receive a reply to msg_id on sock, check idents and engine metadata.
static bn_msg_t *
s_reply (s_fake_t *fake, zsock_t *sock, int index, const char *msg_id,
         const char *type)
{
    bn_msg_t *reply = s_recv_ok (sock);
    ck_assert_str_eq (bn_msg_type (reply), type);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (bn_msg_session (reply), fake->uuid[index]);
    ck_assert (bn_msg_ident_is (reply, 0, fake->uuid[index],
                                strlen (fake->uuid[index])));
    ck_assert (bn_msg_ident_is (reply, bn_msg_nidents (reply) - 1, S_CLIENT,
                                S_CLIENT_SIZE));
    json_t *metadata = bn_msg_metadata (reply);
    ck_assert_str_eq (json_string_value (json_object_get (metadata, "engine")),
                      fake->uuid[index]);
    return reply;
}

//  The part of msg is byte for byte the compact text jansson writes of
//  the JSON it holds.
static void
s_assert_canonical (bn_msg_t *msg, bn_part_t part)
{
    size_t size;
    const char *raw = (const char *)bn_msg_part_data (msg, part, &size);
    json_t *parsed = json_loadb (raw, size, 0, NULL);
    ck_assert_ptr_nonnull (parsed);
    char *text = json_dumps (parsed, JSON_COMPACT);
    ck_assert_ptr_nonnull (text);
    ck_assert_uint_eq (strlen (text), size);
    ck_assert_int_eq (memcmp (text, raw, size), 0);
    free (text);
    json_decref (parsed);
}

static const char *
s_status_of (bn_msg_t *reply)
{
    return json_string_value (
        json_object_get (bn_msg_content (reply), "status"));
}

//  The result of an apply_reply, as a repr string (caller frees).
static char *
s_result_repr (bn_msg_t *reply)
{
    bn_bytes_t bufs[8];
    size_t n = bn_bytes_from_msg (reply, bufs, 8);
    char err[128];
    bn_value_t *value = bn_apply_decode_result (bufs, n, err, sizeof err);
    ck_assert_msg (value != NULL, "bad result: %s", err);
    char *repr = bn_value_repr (value);
    bn_value_destroy (&value);
    return repr;
}

//  Read iopub messages whose parent is msg_id until its idle status (or
//  the timeout); returns "type:detail" items joined by spaces.
static char *
s_iopub_trace (s_fake_t *fake, const char *msg_id, bool until_idle)
{
    char *trace = strdup ("");
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (zclock_mono () < until) {
        bn_msg_t *msg = s_recv (fake->iopub, 200);
        if (!msg)
            continue;
        ck_assert_int_eq (bn_msg_verify (msg, fake->check, true), 0);
        const char *parent = bn_msg_parent_id (msg);
        if (!parent || strcmp (parent, msg_id) != 0) {
            bn_msg_destroy (&msg);
            continue;
        }
        json_t *content = bn_msg_content (msg);
        const char *type = bn_msg_type (msg);
        const char *detail = "";
        if (strcmp (type, BN_MSG_STATUS) == 0)
            detail = json_string_value (
                json_object_get (content, "execution_state"));
        else if (strcmp (type, BN_MSG_STREAM) == 0)
            detail = json_string_value (json_object_get (content, "text"));
        else if (strcmp (type, BN_MSG_ERROR) == 0)
            detail = json_string_value (json_object_get (content, "ename"));
        char *longer =
            zsys_sprintf ("%s%s%s:%s", trace, *trace ? " " : "", type, detail);
        free (trace);
        trace = longer;
        bool idle = strcmp (detail, "idle") == 0;
        bn_msg_destroy (&msg);
        if (idle && until_idle)
            break;
    }
    return trace;
}

static void
s_probe_iopub (s_fake_t *fake, int index)
{
    int64_t until = zclock_mono () + S_TIMEOUT;
    bool seen = false;
    while (!seen) {
        ck_assert_int_lt (zclock_mono (), until);
        char id[BN_MSG_ID_SIZE];
        snprintf (id, sizeof id, "%s",
                  s_send (fake, fake->control, index,
                          BN_MSG_KERNEL_INFO_REQUEST, NULL));
        bn_msg_t *reply =
            s_reply (fake, fake->control, index, id, BN_MSG_KERNEL_INFO_REPLY);
        bn_msg_destroy (&reply);
        int64_t wait_until = zclock_mono () + 200;
        while (!seen && zclock_mono () < wait_until) {
            bn_msg_t *msg = s_recv (fake->iopub, 50);
            if (msg && bn_msg_parent_id (msg) &&
                strcmp (bn_msg_parent_id (msg), id) == 0 &&
                strcmp (bn_msg_type (msg), BN_MSG_STATUS) == 0 &&
                strcmp (json_string_value (json_object_get (
                            bn_msg_content (msg), "execution_state")),
                        "idle") == 0)
                seen = true;
            bn_msg_destroy (&msg);
        }
    }
}

static char *
s_command (s_fake_t *fake, const char *command)
{
    zstr_send (fake->engines, command);
    zsock_set_rcvtimeo (fake->engines, S_TIMEOUT);
    char *answer = zstr_recv (fake->engines);
    ck_assert_ptr_nonnull (answer);
    return answer;
}

//  Wait for the actor's STOPPED report and return its exit status.
static int
s_stopped (s_fake_t *fake, int timeout)
{
    zsock_set_rcvtimeo (fake->engines, timeout);
    char *what = NULL, *code = NULL;
    ck_assert_int_eq (zstr_recvx (fake->engines, &what, &code, NULL), 2);
    ck_assert_str_eq (what, "STOPPED");
    int status = atoi (code);
    free (what);
    free (code);
    return status;
}

//  The next unregistration_request on the hub socket; returns its id (-1
//  for null).
static int
s_unregistration (s_fake_t *fake, int timeout)
{
    bn_msg_t *msg = s_recv (fake->registration, timeout);
    ck_assert_msg (msg != NULL, "no unregistration_request");
    ck_assert_int_eq (bn_msg_verify (msg, fake->check, true), 0);
    ck_assert_str_eq (bn_msg_type (msg), BN_MSG_UNREGISTRATION_REQUEST);
    json_t *id = json_object_get (bn_msg_content (msg), "id");
    ck_assert_ptr_nonnull (id);
    int value = json_is_null (id) ? -1 : (int)json_integer_value (id);
    bn_msg_destroy (&msg);
    return value;
}

//  ---------------------------------------------------------------------

START_TEST (test_usage)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "0");
    free (ids);

    //  execute runs a shell command and streams its output
    const char *msg_id =
        s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                json_pack ("{s:s, s:b}", "code", "echo hi; echo oops >&2",
                           "silent", 0));
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s", msg_id);
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    json_t *content = bn_msg_content (reply);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "execution_count")), 1);
    ck_assert (json_is_object (json_object_get (content, "user_expressions")));
    ck_assert (json_is_array (json_object_get (content, "payload")));
    json_t *metadata = bn_msg_metadata (reply);
    ck_assert_str_eq (json_string_value (json_object_get (metadata, "status")),
                      "ok");
    ck_assert (json_is_string (json_object_get (metadata, "started")));
    ck_assert (json_is_true (json_object_get (metadata, "dependencies_met")));
    ck_assert (json_is_false (json_object_get (metadata, "is_broadcast")));
    bn_msg_destroy (&reply);
    char *trace = s_iopub_trace (fake, id, true);
    ck_assert_str_eq (trace, "status:busy execute_input: stream:hi\n "
                             "stream:oops\n status:idle");
    free (trace);

    //  $TERM unregisters the engine
    zactor_destroy (&fake->engines);
    ck_assert_int_eq (s_unregistration (fake, S_TIMEOUT), 0);
}
END_TEST

START_TEST (test_registration_ids_and_heartbeat)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 3, 5, NULL);
    s_register (fake, 3, 3000);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "5,6,7");
    free (ids);
    char *uuids = s_command (fake, "UUIDS");
    ck_assert_uint_eq (strlen (uuids), 3 * 33 + 2);
    free (uuids);
    //  each got the id it asked for (requests may arrive in any order)
    ck_assert_int_eq (fake->id[0] + fake->id[1] + fake->id[2], 5 + 6 + 7);
    for (int i = 0; i < 3; i++)
        ck_assert (fake->id[i] >= 5 && fake->id[i] <= 7);
    ck_assert_str_ne (fake->uuid[0], fake->uuid[1]);

    //  every engine echoes every ping, unchanged, from its uuid
    zstr_send (fake->ping, "42.002521374000025");
    bool seen[3] = {false, false, false};
    for (int i = 0; i < 3; i++) {
        char *who = NULL, *beat = NULL;
        zsock_set_rcvtimeo (fake->pong, S_TIMEOUT);
        ck_assert_int_eq (zstr_recvx (fake->pong, &who, &beat, NULL), 2);
        ck_assert_str_eq (beat, "42.002521374000025");
        int index = s_index_of (fake, who);
        ck_assert_int_ge (index, 0);
        seen[index] = true;
        free (who);
        free (beat);
    }
    ck_assert (seen[0] && seen[1] && seen[2]);

    //  a ping repeated (a heart waiting for new hearts) is not echoed
    //  again: after the repeat and a new ping, the new one's echoes come
    zstr_send (fake->ping, "42.002521374000025");
    zstr_send (fake->ping, "45.5");
    for (int i = 0; i < 3; i++) {
        char *who = NULL, *beat = NULL;
        ck_assert_int_eq (zstr_recvx (fake->pong, &who, &beat, NULL), 2);
        ck_assert_str_eq (beat, "45.5");
        free (who);
        free (beat);
    }
}
END_TEST

//  Many engines of one process ask to register in turns: the first alone,
//  then no more than BN_ENGINE_REGISTERING_MAX wait for their reply at
//  once, and each reply lets the next one ask; all on the one socket they
//  share, as the hub names each reply's parent.
START_TEST (test_registration_window)
{
    s_fake_t *fake = s_fake;
    int count = BN_ENGINE_REGISTERING_MAX + 8;
    s_start (fake, count + 1, -1, NULL);
    bn_msg_t *first = s_recv_ok (fake->registration);
    ck_assert (s_from_shared (first));
    ck_assert_ptr_null (s_recv (fake->registration, 300));
    bn_msg_t *welcome = s_registration_reply_new (fake, first);
    bn_msg_set_content (welcome, json_pack ("{s:i, s:s, s:i}", "id", count,
                                            "status", "ok", "hb_period", 3000));
    ck_assert_int_eq (
        bn_msg_send (&welcome, zsock_resolve (fake->registration), fake->hub),
        0);
    size_t size;
    const void *shared = bn_msg_ident (first, 0, &size);
    bn_msg_t *asked[S_MAX];
    for (int i = 0; i < BN_ENGINE_REGISTERING_MAX; i++) {
        asked[i] = s_recv_ok (fake->registration);
        ck_assert (bn_msg_ident_is (asked[i], 0, shared, size));
    }
    bn_msg_destroy (&first);
    //  the rest wait: nothing more comes while none is answered
    ck_assert_ptr_null (s_recv (fake->registration, 300));
    for (int i = 0; i < BN_ENGINE_REGISTERING_MAX; i++) {
        bn_msg_t *reply = s_registration_reply_new (fake, asked[i]);
        bn_msg_set_content (reply,
                            json_pack ("{s:i, s:s, s:i}", "id", i, "status",
                                       "ok", "hb_period", 3000));
        ck_assert_int_eq (
            bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub),
            0);
        bn_msg_destroy (&asked[i]);
        //  one more asks for each one answered, until all have
        if (i < count - BN_ENGINE_REGISTERING_MAX)
            asked[BN_ENGINE_REGISTERING_MAX + i] =
                s_recv_ok (fake->registration);
    }
    for (int i = BN_ENGINE_REGISTERING_MAX; i < count; i++) {
        bn_msg_t *reply = s_registration_reply_new (fake, asked[i]);
        bn_msg_set_content (reply,
                            json_pack ("{s:i, s:s, s:i}", "id", i, "status",
                                       "ok", "hb_period", 3000));
        ck_assert_int_eq (
            bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub),
            0);
        bn_msg_destroy (&asked[i]);
    }
    zsock_set_rcvtimeo (fake->engines, S_TIMEOUT);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
}
END_TEST

START_TEST (test_apply)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);

    //  Reference('echo') gives back its argument; broadcast keys are copied
    const char *echo[] = {"echo", "5", NULL};
    char id[BN_MSG_ID_SIZE];
    snprintf (
        id, sizeof id, "%s",
        s_apply (fake, 0, echo,
                 json_pack ("{s:b, s:b, s:s}", "is_broadcast", 1,
                            "is_coalescing", 0, "original_msg_id", "orig-1")));
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "5");
    free (repr);
    json_t *metadata = bn_msg_metadata (reply);
    ck_assert (json_is_true (json_object_get (metadata, "is_broadcast")));
    ck_assert (json_is_false (json_object_get (metadata, "is_coalescing")));
    ck_assert_str_eq (
        json_string_value (json_object_get (metadata, "original_msg_id")),
        "orig-1");
    bn_msg_destroy (&reply);
    char *trace = s_iopub_trace (fake, id, true);
    ck_assert_str_eq (trace, "status:busy status:idle");
    free (trace);

    //  sum of several numbers
    const char *sum[] = {"sum", "1", "2", "39", NULL};
    snprintf (id, sizeof id, "%s", s_apply (fake, 0, sum, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "42");
    free (repr);
    bn_msg_destroy (&reply);

    //  an unknown function is an error reply naming it
    const char *unknown[] = {"no_such_function", NULL};
    snprintf (id, sizeof id, "%s", s_apply (fake, 0, unknown, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    json_t *content = bn_msg_content (reply);
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "NotImplementedError");
    ck_assert_ptr_nonnull (
        strstr (json_string_value (json_object_get (content, "evalue")),
                "no_such_function"));
    json_t *info = json_object_get (content, "engine_info");
    ck_assert_str_eq (json_string_value (json_object_get (info, "engine_uuid")),
                      fake->uuid[0]);
    ck_assert_str_eq (json_string_value (json_object_get (info, "method")),
                      "apply");
    ck_assert (json_is_array (json_object_get (content, "traceback")));
    metadata = bn_msg_metadata (reply);
    ck_assert_str_eq (json_string_value (json_object_get (metadata, "status")),
                      "error");
    ck_assert_ptr_nonnull (json_object_get (metadata, "engine_info"));
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 0);
    bn_msg_destroy (&reply);
    trace = s_iopub_trace (fake, id, true);
    ck_assert_str_eq (trace,
                      "status:busy error:NotImplementedError status:idle");
    free (trace);
}
END_TEST

static void
s_add_push (bn_msg_t *msg, void *arg)
{
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "a", bn_value_new_int (5));
    bn_value_t *list = bn_value_new_list ();
    bn_value_append (list, bn_value_new_float (2.5));
    bn_value_append (list, bn_value_new_str ("x"));
    bn_value_dict_set_str (kwargs, "b", list);
    char big[4096];
    memset (big, 'z', sizeof big);
    bn_value_dict_set_str (kwargs, "c", bn_value_new_bytes (big, sizeof big));
    ck_assert_int_eq (
        bn_apply_add_global (msg, "ipyparallel.util", "_push", NULL, kwargs),
        0);
    bn_value_destroy (&kwargs);
}

static void
s_add_pull (bn_msg_t *msg, void *arg)
{
    bn_value_t *names = bn_value_new_list ();
    for (const char **name = (const char **)arg; *name; name++)
        bn_value_append (names, bn_value_new_str (*name));
    bn_value_t *args = bn_value_new_list ();
    bn_value_append (args, names);
    ck_assert_int_eq (
        bn_apply_add_global (msg, "ipyparallel.util", "_pull", args, NULL), 0);
    bn_value_destroy (&args);
}

START_TEST (test_push_pull_clear)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_push, NULL, NULL));
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);

    const char *names[] = {"a", "b", NULL};
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_pull, names, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "[5, [2.5, 'x']]");
    free (repr);
    bn_msg_destroy (&reply);

    //  a pulled bytes value over 1024 bytes comes back out of band
    const char *big[] = {"c", NULL};
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_pull, big, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    ck_assert_uint_ge (bn_msg_nbuffers (reply), 2);
    bn_msg_destroy (&reply);

    //  clear_request empties the namespace
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_CLEAR_REQUEST, NULL));
    reply = s_reply (fake, fake->control, 0, id, BN_MSG_CLEAR_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    char *trace = s_iopub_trace (fake, id, true);
    ck_assert_str_eq (trace, "status:busy status:idle");
    free (trace);
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_pull, names, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "NameError");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "evalue")),
        "name 'a' is not defined");
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_sleep_does_not_block)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 2, -1, NULL);
    s_register (fake, 2, 3000);
    int64_t start = zclock_mono ();
    const char *sleep_call[] = {"sleep", "1", NULL};
    char slow[BN_MSG_ID_SIZE], fast[BN_MSG_ID_SIZE], info[BN_MSG_ID_SIZE];
    snprintf (slow, sizeof slow, "%s", s_apply (fake, 0, sleep_call, NULL));
    //  the other engine, and the sleeping engine's control, answer at once
    const char *echo[] = {"echo", "x", NULL};
    snprintf (fast, sizeof fast, "%s", s_apply (fake, 1, echo, NULL));
    bn_msg_t *reply = s_reply (fake, fake->mux, 1, fast, BN_MSG_APPLY_REPLY);
    bn_msg_destroy (&reply);
    snprintf (
        info, sizeof info, "%s",
        s_send (fake, fake->control, 0, BN_MSG_KERNEL_INFO_REQUEST, NULL));
    reply = s_reply (fake, fake->control, 0, info, BN_MSG_KERNEL_INFO_REPLY);
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_msg_content (reply), "protocol_version")),
                      "5.3");
    bn_msg_destroy (&reply);
    ck_assert_int_lt (zclock_mono () - start, 700);
    reply = s_reply (fake, fake->mux, 0, slow, BN_MSG_APPLY_REPLY);
    ck_assert_int_ge (zclock_mono () - start, 950);
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "None");
    free (repr);
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_execute_errors_and_limits)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (bn_config_set (config, "engine.request_time_limit", "20",
                                     BN_CONFIG_CMDLINE),
                      0);
    s_start (fake, 1, -1, config);
    bn_config_destroy (&config);
    s_register (fake, 1, 3000);

    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo partial; exit 3")));
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    json_t *content = bn_msg_content (reply);
    ck_assert_str_eq (s_status_of (reply), "error");
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "CalledProcessError");
    ck_assert_str_eq (json_string_value (json_object_get (content, "evalue")),
                      "Command 'echo partial; exit 3' returned non-zero "
                      "exit status 3.");
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "returncode")), 3);
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "execution_count")), 1);
    ck_assert_str_eq (json_string_value (json_object_get (
                          json_object_get (content, "engine_info"), "method")),
                      "execute");
    bn_msg_destroy (&reply);
    char *trace = s_iopub_trace (fake, id, true);
    ck_assert_str_eq (trace, "status:busy execute_input: stream:partial\n "
                             "error:CalledProcessError status:idle");
    free (trace);

    //  a request's time_limit kills the command's process group
    int64_t start = zclock_mono ();
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                         json_pack ("{s:s, s:b}", "code", "sleep 30 & wait",
                                    "silent", 1),
                         json_pack ("{s:f}", "time_limit", 0.3), NULL, NULL,
                         NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    ck_assert_int_lt (zclock_mono () - start, 3000);
    content = bn_msg_content (reply);
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "TimeoutExpired");
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "returncode")), -SIGKILL);
    //  silent: the count did not move
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "execution_count")), 1);
    bn_msg_destroy (&reply);

    //  killed by a signal
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "kill -TERM $$")));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    content = bn_msg_content (reply);
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "CalledProcessError");
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "returncode")), -SIGTERM);
    bn_msg_destroy (&reply);

    //  commands know which engine runs them
    snprintf (
        id, sizeof id, "%s",
        s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                json_pack ("{s:s}", "code",
                           "echo $BANYAN_ENGINE_ID $BANYAN_ENGINE_UUID")));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    bn_msg_destroy (&reply);
    trace = s_iopub_trace (fake, id, true);
    char expected[256];
    snprintf (expected, sizeof expected,
              "status:busy execute_input: stream:0 %s\n status:idle",
              fake->uuid[0]);
    ck_assert_str_eq (trace, expected);
    free (trace);
}
END_TEST

//  Give the request the msg_id in arg.
static void
s_set_id (bn_msg_t *msg, void *arg)
{
    ck_assert_int_eq (bn_msg_set_msg_id (msg, (const char *)arg), 0);
}

//  Send an abort_request for ids (taken) and check its reply.
static void
s_abort_ids (s_fake_t *fake, json_t *ids)
{
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_ABORT_REQUEST,
                      json_pack ("{s:o}", "msg_ids", ids)));
    bn_msg_t *reply = s_reply (fake, fake->control, 0, id, BN_MSG_ABORT_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
}

//  Run "true" as msg_id; the reply's status.
static char *
s_run_as (s_fake_t *fake, const char *msg_id)
{
    s_send_to (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
               json_pack ("{s:s}", "code", "true"), NULL, s_set_id,
               (void *)msg_id, NULL);
    bn_msg_t *reply =
        s_reply (fake, fake->mux, 0, msg_id, BN_MSG_EXECUTE_REPLY);
    char *status = strdup (s_status_of (reply));
    bn_msg_destroy (&reply);
    return status;
}

START_TEST (test_aborted_ids_bounded)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    s_abort_ids (fake, json_pack ("[s]", "doomed-1"));
    char *status = s_run_as (fake, "doomed-1");
    ck_assert_str_eq (status, "aborted");
    free (status);
    //  ids that never arrive push an aborted id out after two generations
    s_abort_ids (fake, json_pack ("[s]", "doomed-2"));
    json_t *many = json_array ();
    for (int i = 0; i < 2 * BN_ENGINE_ABORTED_MAX; i++) {
        char id[32];
        snprintf (id, sizeof id, "never-%d", i);
        json_array_append_new (many, json_string (id));
    }
    s_abort_ids (fake, many);
    status = s_run_as (fake, "doomed-2");
    ck_assert_str_eq (status, "ok");
    free (status);
}
END_TEST

START_TEST (test_queue_abort_signal)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    char a[BN_MSG_ID_SIZE], b[BN_MSG_ID_SIZE], c[BN_MSG_ID_SIZE];
    snprintf (a, sizeof a, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "sleep 0.5; echo a")));
    snprintf (b, sizeof b, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo b")));
    snprintf (c, sizeof c, "%s",
              s_send (fake, fake->task, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo c")));
    //  abort c while a runs
    char abort_id[BN_MSG_ID_SIZE];
    snprintf (abort_id, sizeof abort_id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_ABORT_REQUEST,
                      json_pack ("{s:[s]}", "msg_ids", c)));
    bn_msg_t *reply =
        s_reply (fake, fake->control, 0, abort_id, BN_MSG_ABORT_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    //  replies come in order, on the socket each request came from
    reply = s_reply (fake, fake->mux, 0, a, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->mux, 0, b, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    ck_assert_int_eq (json_integer_value (json_object_get (
                          bn_msg_content (reply), "execution_count")),
                      2);
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->task, 0, c, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "aborted");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_metadata (reply), "status")),
        "aborted");
    bn_msg_destroy (&reply);

    //  signal_request interrupts a running command
    char run[BN_MSG_ID_SIZE], sig[BN_MSG_ID_SIZE];
    snprintf (run, sizeof run, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "sleep 30")));
    zclock_sleep (200);
    snprintf (sig, sizeof sig, "%s",
              s_send (fake, fake->control, 0, BN_MSG_SIGNAL_REQUEST,
                      json_pack ("{s:s}", "sig", "SIGINT")));
    reply = s_reply (fake, fake->control, 0, sig, BN_MSG_SIGNAL_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->mux, 0, run, BN_MSG_EXECUTE_REPLY);
    ck_assert_int_eq (json_integer_value (json_object_get (
                          bn_msg_content (reply), "returncode")),
                      -SIGINT);
    bn_msg_destroy (&reply);

    //  and a deferred function
    const char *sleep_call[] = {"sleep", "30", NULL};
    snprintf (run, sizeof run, "%s", s_apply (fake, 0, sleep_call, NULL));
    zclock_sleep (100);
    snprintf (sig, sizeof sig, "%s",
              s_send (fake, fake->control, 0, BN_MSG_SIGNAL_REQUEST,
                      json_pack ("{s:i}", "sig", SIGINT)));
    reply = s_reply (fake, fake->mux, 0, run, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "KeyboardInterrupt");
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->control, 0, sig, BN_MSG_SIGNAL_REPLY);
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_abort_running)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    //  the running command is ended, and the one queued behind it runs
    char run[BN_MSG_ID_SIZE], next[BN_MSG_ID_SIZE];
    snprintf (run, sizeof run, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo started; sleep 30")));
    snprintf (next, sizeof next, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo next")));
    zclock_sleep (200);
    //  the control channel says what runs, and what waits behind it
    char info[BN_MSG_ID_SIZE];
    snprintf (info, sizeof info, "%s",
              s_send (fake, fake->control, 0, BN_MSG_KERNEL_INFO_REQUEST,
                      json_object ()));
    bn_msg_t *reply =
        s_reply (fake, fake->control, 0, info, BN_MSG_KERNEL_INFO_REPLY);
    json_t *running = json_object_get (bn_msg_content (reply), "bn_running");
    ck_assert_str_eq (json_string_value (json_object_get (running, "msg_id")),
                      run);
    ck_assert_str_eq (json_string_value (json_object_get (running, "code")),
                      "echo started; sleep 30");
    ck_assert_str_eq (json_string_value (json_object_get (running, "msg_type")),
                      BN_MSG_EXECUTE_REQUEST);
    ck_assert (json_is_string (json_object_get (running, "started")));
    ck_assert_int_eq (json_integer_value (json_object_get (
                          bn_msg_content (reply), "bn_queued")),
                      1);
    bn_msg_destroy (&reply);
    int64_t start = zclock_mono ();
    s_abort_ids (fake, json_pack ("[s]", run));
    reply = s_reply (fake, fake->mux, 0, run, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "aborted");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_metadata (reply), "status")),
        "aborted");
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->mux, 0, next, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    ck_assert_int_lt (zclock_mono () - start, 2000);
    //  it had begun: busy, its output, and idle after the aborted reply
    char *trace = s_iopub_trace (fake, run, true);
    ck_assert_str_eq (trace, "status:busy execute_input: stream:started\n "
                             "status:idle");
    free (trace);

    //  a bare msg_id string, as 7.1.0's client may send, ends a deferred
    //  function
    const char *sleep_call[] = {"sleep", "30", NULL};
    snprintf (run, sizeof run, "%s", s_apply (fake, 0, sleep_call, NULL));
    zclock_sleep (100);
    snprintf (info, sizeof info, "%s",
              s_send (fake, fake->control, 0, BN_MSG_KERNEL_INFO_REQUEST,
                      json_object ()));
    reply = s_reply (fake, fake->control, 0, info, BN_MSG_KERNEL_INFO_REPLY);
    running = json_object_get (bn_msg_content (reply), "bn_running");
    ck_assert_str_eq (json_string_value (json_object_get (running, "function")),
                      "sleep");
    bn_msg_destroy (&reply);
    char abort_id[BN_MSG_ID_SIZE];
    snprintf (abort_id, sizeof abort_id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_ABORT_REQUEST,
                      json_pack ("{s:s}", "msg_ids", run)));
    reply = s_reply (fake, fake->control, 0, abort_id, BN_MSG_ABORT_REPLY);
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->mux, 0, run, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "aborted");
    bn_msg_destroy (&reply);

    //  an empty list aborts what waits in the queue, not what runs
    snprintf (run, sizeof run, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "sleep 0.3")));
    snprintf (next, sizeof next, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo next")));
    zclock_sleep (100);
    s_abort_ids (fake, json_array ());
    reply = s_reply (fake, fake->mux, 0, run, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    reply = s_reply (fake, fake->mux, 0, next, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "aborted");
    bn_msg_destroy (&reply);
    //  idle
    snprintf (info, sizeof info, "%s",
              s_send (fake, fake->control, 0, BN_MSG_KERNEL_INFO_REQUEST,
                      json_object ()));
    reply = s_reply (fake, fake->control, 0, info, BN_MSG_KERNEL_INFO_REPLY);
    ck_assert (
        json_is_null (json_object_get (bn_msg_content (reply), "bn_running")));
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_task_and_broadcast_routes)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 2, -1, NULL);
    s_register (fake, 2, 3000);
    //  engine 1 listens on broadcast[1 % 2]; ids pass through unchanged
    const char *echo[] = {"echo", "7", NULL};
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->bcast[1], 1, BN_MSG_APPLY_REQUEST, NULL,
                         json_pack ("{s:b, s:b, s:s}", "is_broadcast", 1,
                                    "is_coalescing", 1, "original_msg_id",
                                    "bcast-orig"),
                         s_add_reference, (void *)echo, "sub_scheduler_0"));
    bn_msg_t *reply = s_reply (fake, fake->bcast[1], 1, id, BN_MSG_APPLY_REPLY);
    ck_assert_uint_eq (bn_msg_nidents (reply), 3);
    ck_assert (bn_msg_ident_is (reply, 1, "sub_scheduler_0", 15));
    ck_assert (json_is_true (
        json_object_get (bn_msg_metadata (reply), "is_coalescing")));
    bn_msg_destroy (&reply);
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->task, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_reference, (void *)echo, NULL));
    reply = s_reply (fake, fake->task, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
}
END_TEST

//  The iopub messages of every request up to the idle status of msg_id,
//  as "parent-msg_id:type" items joined by spaces.
static char *
s_iopub_parents_until (s_fake_t *fake, const char *msg_id)
{
    char *trace = strdup ("");
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (zclock_mono () < until) {
        bn_msg_t *msg = s_recv (fake->iopub, 200);
        if (!msg)
            continue;
        const char *parent = bn_msg_parent_id (msg);
        char *longer = zsys_sprintf ("%s%s%s:%s", trace, *trace ? " " : "",
                                     parent ? parent : "-", bn_msg_type (msg));
        free (trace);
        trace = longer;
        bool idle = parent && strcmp (parent, msg_id) == 0 &&
                    strcmp (bn_msg_type (msg), BN_MSG_STATUS) == 0 &&
                    strcmp (json_string_value (json_object_get (
                                bn_msg_content (msg), "execution_state")),
                            "idle") == 0;
        bn_msg_destroy (&msg);
        if (idle)
            return trace;
    }
    ck_abort_msg ("no idle status for %s: %s", msg_id, trace);
    return trace;
}

START_TEST (test_output_in_reply)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    s_probe_iopub (fake, 0);
    json_t *quiet =
        json_pack ("{s:b, s:b, s:s, s:s}", "is_broadcast", 1, "is_coalescing",
                   1, "original_msg_id", "orig-1", "bn_output", "reply");
    //  A command's output comes in the reply, with the broadcast keys
    char ok_id[BN_MSG_ID_SIZE];
    snprintf (ok_id, sizeof ok_id, "%s",
              s_send_to (fake, fake->bcast[0], 0, BN_MSG_EXECUTE_REQUEST,
                         json_pack ("{s:s, s:b}", "code",
                                    "echo out; echo err >&2; printf 'x\\377y'",
                                    "silent", 0),
                         json_incref (quiet), NULL, NULL, "sub_scheduler_0"));
    bn_msg_t *reply =
        s_reply (fake, fake->bcast[0], 0, ok_id, BN_MSG_EXECUTE_REPLY);
    json_t *content = bn_msg_content (reply);
    json_t *metadata = bn_msg_metadata (reply);
    ck_assert_str_eq (s_status_of (reply), "ok");
    //  bytes that are not UTF-8 travel as bn_rawtext encodes them, and
    //  come back as they were
    json_t *out = json_object_get (content, "bn_stdout");
    ck_assert_str_eq (json_string_value (out), "out\nx\xf4\x8f\xbf\xbfy");
    char raw[32];
    snprintf (raw, sizeof raw, "%s", json_string_value (out));
    ck_assert_uint_eq (bn_rawtext_decode (raw, strlen (raw)), 7);
    ck_assert_str_eq (raw, "out\nx\xffy");
    ck_assert_str_eq (
        json_string_value (json_object_get (content, "bn_stderr")), "err\n");
    ck_assert (json_is_true (json_object_get (metadata, "is_broadcast")));
    ck_assert (json_is_true (json_object_get (metadata, "is_coalescing")));
    ck_assert_str_eq (
        json_string_value (json_object_get (metadata, "original_msg_id")),
        "orig-1");
    bn_msg_destroy (&reply);

    //  A failing command: its output and returncode in the error reply
    char fail_id[BN_MSG_ID_SIZE];
    snprintf (fail_id, sizeof fail_id, "%s",
              s_send_to (fake, fake->bcast[0], 0, BN_MSG_EXECUTE_REQUEST,
                         json_pack ("{s:s}", "code", "echo partial; exit 3"),
                         json_incref (quiet), NULL, NULL, "sub_scheduler_0"));
    reply = s_reply (fake, fake->bcast[0], 0, fail_id, BN_MSG_EXECUTE_REPLY);
    content = bn_msg_content (reply);
    ck_assert_str_eq (s_status_of (reply), "error");
    ck_assert_int_eq (
        json_integer_value (json_object_get (content, "returncode")), 3);
    ck_assert_str_eq (
        json_string_value (json_object_get (content, "bn_stdout")),
        "partial\n");
    ck_assert_str_eq (
        json_string_value (json_object_get (content, "bn_stderr")), "");
    bn_msg_destroy (&reply);

    //  An apply: empty output
    const char *echo[] = {"echo", "5", NULL};
    char apply_id[BN_MSG_ID_SIZE];
    snprintf (apply_id, sizeof apply_id, "%s",
              s_send_to (fake, fake->bcast[0], 0, BN_MSG_APPLY_REQUEST, NULL,
                         json_incref (quiet), s_add_reference, (void *)echo,
                         "sub_scheduler_0"));
    reply = s_reply (fake, fake->bcast[0], 0, apply_id, BN_MSG_APPLY_REPLY);
    //  its metadata and content are the text jansson writes of them
    s_assert_canonical (reply, BN_PART_METADATA);
    s_assert_canonical (reply, BN_PART_CONTENT);
    content = bn_msg_content (reply);
    metadata = bn_msg_metadata (reply);
    ck_assert_str_eq (s_status_of (reply), "ok");
    ck_assert_str_eq (
        json_string_value (json_object_get (content, "bn_stdout")), "");
    ck_assert_str_eq (
        json_string_value (json_object_get (content, "bn_stderr")), "");
    ck_assert (json_is_true (json_object_get (metadata, "is_broadcast")));
    ck_assert (json_is_true (json_object_get (metadata, "dependencies_met")));
    ck_assert_str_eq (
        json_string_value (json_object_get (metadata, "original_msg_id")),
        "orig-1");
    ck_assert (json_is_string (json_object_get (metadata, "engine")));
    //  in the order of every other reply's metadata (s_reply_metadata)
    const char *order[] = {
        "started",       "dependencies_met", "engine", "is_broadcast",
        "is_coalescing", "original_msg_id",  "status"};
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach (metadata, key, value)
    {
        ck_assert_uint_lt (k, 7);
        ck_assert_str_eq (key, order[k++]);
    }
    ck_assert_uint_eq (k, 7);
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "5");
    free (repr);
    bn_msg_destroy (&reply);

    //  None of them published anything: iopub up to a plain request's
    //  idle holds only that request's messages.
    char loud_id[BN_MSG_ID_SIZE];
    snprintf (loud_id, sizeof loud_id, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                      json_pack ("{s:s}", "code", "echo loud")));
    reply = s_reply (fake, fake->mux, 0, loud_id, BN_MSG_EXECUTE_REPLY);
    ck_assert_ptr_null (json_object_get (bn_msg_content (reply), "bn_stdout"));
    bn_msg_destroy (&reply);
    char *trace = s_iopub_parents_until (fake, loud_id);
    char *expected =
        zsys_sprintf ("%s:status %s:execute_input %s:stream %s:status", loud_id,
                      loud_id, loud_id, loud_id);
    ck_assert_str_eq (trace, expected);
    free (expected);
    free (trace);
    json_decref (quiet);
}
END_TEST

START_TEST (test_shutdown)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 2, -1, NULL);
    s_register (fake, 2, 3000);
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 1, BN_MSG_SHUTDOWN_REQUEST,
                      json_pack ("{s:b}", "restart", 0)));
    bn_msg_t *reply =
        s_reply (fake, fake->control, 1, id, BN_MSG_SHUTDOWN_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    ck_assert (
        json_is_false (json_object_get (bn_msg_content (reply), "restart")));
    bn_msg_destroy (&reply);
    //  the iopub copy, by which the hub unregisters the engine
    bool copy = false;
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (!copy && zclock_mono () < until) {
        bn_msg_t *msg = s_recv (fake->iopub, 500);
        if (msg && strcmp (bn_msg_type (msg), BN_MSG_SHUTDOWN_REPLY) == 0) {
            char topic[64];
            snprintf (topic, sizeof topic, "engine.%d.shutdown", fake->id[1]);
            ck_assert (bn_msg_ident_is (msg, 0, topic, strlen (topic)));
            ck_assert_str_eq (bn_msg_session (msg), fake->uuid[1]);
            ck_assert_str_eq (bn_msg_parent_id (msg), id);
            copy = true;
        }
        bn_msg_destroy (&msg);
    }
    ck_assert (copy);
    //  the iopub copy is the unregistration: no request races it
    bn_msg_t *none = s_recv (fake->registration, 300);
    ck_assert_ptr_null (none);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "0");
    free (ids);
    //  the process ends when the last engine is shut down
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_SHUTDOWN_REQUEST,
                      json_pack ("{s:b}", "restart", 0)));
    reply = s_reply (fake, fake->control, 0, id, BN_MSG_SHUTDOWN_REPLY);
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 0);
}
END_TEST

//  ---------------------------------------------------------------------
//  Shared channels: the engines of the process behind one connection per
//  channel, as a banyan host node offers (bn_shared_channels)

//  Rewrite the fake's connection file as a host node writes it.
static void
s_offer_shared (s_fake_t *fake)
{
    char err[256] = "";
    bn_connfile_t *cf = bn_connfile_load (fake->path, err, sizeof err);
    ck_assert_msg (cf != NULL, "%s", err);
    bn_connfile_set_shared_channels (cf, true);
    ck_assert_int_eq (bn_connfile_save (cf, fake->path), 0);
    bn_connfile_destroy (&cf);
}

//  Ping text until every engine of mask (bit i: engine i) answered it on
//  the shared pong connection, [via, uuid, ping]; the connection's routing
//  id into via. Fails if another engine answers.
static void
s_shared_pongs (s_fake_t *fake, const char *text, unsigned mask, char *via,
                size_t size)
{
    unsigned seen = 0;
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (seen != mask) {
        ck_assert_msg (zclock_mono () < until, "pongs of %x, not %x", seen,
                       mask);
        zstr_send (fake->ping, text);
        zpoller_t *poller = zpoller_new (fake->pong, NULL);
        while (zpoller_wait (poller, 50)) {
            zmsg_t *pong = zmsg_recv (fake->pong);
            ck_assert_ptr_nonnull (pong);
            ck_assert_uint_eq (zmsg_size (pong), 3);
            char *from = zmsg_popstr (pong);
            char *uuid = zmsg_popstr (pong);
            char *echo = zmsg_popstr (pong);
            ck_assert_str_eq (echo, text);
            ck_assert_msg (strncmp (from, BN_SHARED_PREFIX,
                                    strlen (BN_SHARED_PREFIX)) == 0,
                           "pong from %s", from);
            if (seen)
                ck_assert_str_eq (from, via);
            snprintf (via, size, "%s", from);
            int index = s_index_of (fake, uuid);
            ck_assert_int_ge (index, 0);
            ck_assert_msg (mask & (1u << index), "engine %d answered", index);
            seen |= 1u << index;
            free (from);
            free (uuid);
            free (echo);
            zmsg_destroy (&pong);
        }
        zpoller_destroy (&poller);
    }
}

//  Send a request of type to engine index behind the shared connection
//  via: [via, uuid, client, ...]. Returns its msg_id (static buffer).
static const char *
s_send_shared (s_fake_t *fake, zsock_t *sock, const char *via, int index,
               const char *type, json_t *content, s_add_fn *add, void *arg)
{
    return s_send_routed (fake, sock, index, type, content, NULL, add, arg,
                          NULL, via);
}

//  The reply of engine index to msg_id on the shared connection via.
static bn_msg_t *
s_shared_reply (s_fake_t *fake, zsock_t *sock, const char *via, int index,
                const char *msg_id, const char *type)
{
    bn_msg_t *reply = s_recv_ok (sock);
    ck_assert_str_eq (bn_msg_type (reply), type);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (bn_msg_session (reply), fake->uuid[index]);
    ck_assert_uint_eq (bn_msg_nidents (reply), 3);
    ck_assert (bn_msg_ident_is (reply, 0, via, strlen (via)));
    ck_assert (bn_msg_ident_is (reply, 1, fake->uuid[index],
                                strlen (fake->uuid[index])));
    ck_assert (bn_msg_ident_is (reply, 2, S_CLIENT, S_CLIENT_SIZE));
    return reply;
}

//  The value of a counter in the actor's STATS.
static json_int_t
s_actor_stat (s_fake_t *fake, const char *name)
{
    char *text = s_command (fake, "STATS");
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    ck_assert_ptr_nonnull (stats);
    json_t *value = json_object_get (stats, name);
    json_int_t result =
        json_is_true (value) ? 1 : (json_int_t)json_integer_value (value);
    json_decref (stats);
    return result;
}

START_TEST (test_shared_channels)
{
    s_fake_t *fake = s_fake;
    s_offer_shared (fake);
    s_start (fake, 3, -1, NULL);
    s_register_only (fake, 3, 3000);
    ck_assert_int_eq (s_actor_stat (fake, "shared"), 1);

    //  the three hearts answer on one connection, each naming its engine
    char via[128];
    s_shared_pongs (fake, "1.5", 7, via, sizeof via);

    //  a mux request to engine 2 of the connection: its reply comes back
    //  the same way, and only engine 2 ran it
    const char *echo[] = {"echo", "7", NULL};
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send_shared (fake, fake->mux, via, 2, BN_MSG_APPLY_REQUEST,
                             NULL, s_add_reference, (void *)echo));
    bn_msg_t *reply =
        s_shared_reply (fake, fake->mux, via, 2, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "7");
    free (repr);
    bn_msg_destroy (&reply);
    //  task and both broadcast ports reach them on the same connection
    snprintf (id, sizeof id, "%s",
              s_send_shared (fake, fake->task, via, 0, BN_MSG_APPLY_REQUEST,
                             NULL, s_add_reference, (void *)echo));
    reply = s_shared_reply (fake, fake->task, via, 0, id, BN_MSG_APPLY_REPLY);
    bn_msg_destroy (&reply);
    for (int b = 0; b < 2; b++) {
        snprintf (id, sizeof id, "%s",
                  s_send_shared (fake, fake->bcast[b], via, 1,
                                 BN_MSG_APPLY_REQUEST, NULL, s_add_reference,
                                 (void *)echo));
        reply = s_shared_reply (fake, fake->bcast[b], via, 1, id,
                                BN_MSG_APPLY_REPLY);
        bn_msg_destroy (&reply);
    }
    //  control too
    snprintf (id, sizeof id, "%s",
              s_send_shared (fake, fake->control, via, 1,
                             BN_MSG_KERNEL_INFO_REQUEST, NULL, NULL, NULL));
    reply = s_shared_reply (fake, fake->control, via, 1, id,
                            BN_MSG_KERNEL_INFO_REPLY);
    bn_msg_destroy (&reply);

    //  a request naming no engine of the process is dropped, counted
    snprintf (fake->uuid[3], sizeof fake->uuid[3], "no-such-engine");
    s_send_shared (fake, fake->mux, via, 3, BN_MSG_APPLY_REQUEST, NULL,
                   s_add_reference, (void *)echo);
    int64_t until = zclock_mono () + S_TIMEOUT;
    while (s_actor_stat (fake, "strays") < 1 && zclock_mono () < until)
        zclock_sleep (10);
    ck_assert_int_eq (s_actor_stat (fake, "strays"), 1);

    //  engine 0 is shut down: the others go on answering on the
    //  connection, engine 0 no longer does, and what is sent to it is
    //  dropped
    snprintf (id, sizeof id, "%s",
              s_send_shared (fake, fake->control, via, 0,
                             BN_MSG_SHUTDOWN_REQUEST,
                             json_pack ("{s:b}", "restart", 0), NULL, NULL));
    reply =
        s_shared_reply (fake, fake->control, via, 0, id, BN_MSG_SHUTDOWN_REPLY);
    bn_msg_destroy (&reply);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "1,2");
    free (ids);
    s_shared_pongs (fake, "2.5", 6, via, sizeof via);
    snprintf (id, sizeof id, "%s",
              s_send_shared (fake, fake->mux, via, 1, BN_MSG_APPLY_REQUEST,
                             NULL, s_add_reference, (void *)echo));
    reply = s_shared_reply (fake, fake->mux, via, 1, id, BN_MSG_APPLY_REPLY);
    bn_msg_destroy (&reply);
    s_send_shared (fake, fake->mux, via, 0, BN_MSG_APPLY_REQUEST, NULL,
                   s_add_reference, (void *)echo);
    until = zclock_mono () + S_TIMEOUT;
    while (s_actor_stat (fake, "strays") < 2 && zclock_mono () < until)
        zclock_sleep (10);
    ck_assert_int_eq (s_actor_stat (fake, "strays"), 2);

    //  $TERM: the two running unregister
    zactor_destroy (&fake->engines);
    int first = s_unregistration (fake, S_TIMEOUT);
    int second = s_unregistration (fake, S_TIMEOUT);
    ck_assert_int_eq (first + second, fake->id[1] + fake->id[2]);
}
END_TEST

START_TEST (test_shared_not_offered)
{
    //  a controller's file (or a stock hub's) does not offer it: each
    //  engine has its own connections, routing id its uuid
    s_fake_t *fake = s_fake;
    s_start (fake, 2, -1, NULL);
    s_register (fake, 2, 3000);
    ck_assert_int_eq (s_actor_stat (fake, "shared"), 0);
    zpoller_t *poller = zpoller_new (fake->pong, NULL);
    int64_t until = zclock_mono () + S_TIMEOUT;
    do {
        ck_assert_int_lt (zclock_mono (), until);
        zstr_send (fake->ping, "1.5");
    } while (!zpoller_wait (poller, 50));
    zpoller_destroy (&poller);
    zmsg_t *pong = zmsg_recv (fake->pong);
    ck_assert_ptr_nonnull (pong);
    ck_assert_uint_eq (zmsg_size (pong), 2);
    char *from = zmsg_popstr (pong);
    ck_assert_int_ge (s_index_of (fake, from), 0);
    free (from);
    zmsg_destroy (&pong);
}
END_TEST

START_TEST (test_registration_timeout)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    bn_config_set (config, "engine.registration_timeout", "0.3",
                   BN_CONFIG_CMDLINE);
    s_start (fake, 1, -1, config);
    bn_config_destroy (&config);
    //  the request arrives, nobody answers
    bn_msg_t *request = s_recv_ok (fake->registration);
    bn_msg_destroy (&request);
    ck_assert_int_eq (s_unregistration (fake, S_TIMEOUT), -1);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 255);
}
END_TEST

//  Reply to registration request (taken) with id.
static void
s_reply_registration (s_fake_t *fake, bn_msg_t **request, int id)
{
    bn_msg_t *reply = s_registration_reply_new (fake, *request);
    bn_msg_set_content (reply, json_pack ("{s:i, s:s, s:i}", "id", id, "status",
                                          "ok", "hb_period", 3000));
    ck_assert_int_eq (
        bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub), 0);
    bn_msg_destroy (request);
}

//  A controller that answers the engines of a process slowly, one after
//  the other, is not taken for a gone one: an engine waits past its own
//  timeout while another of its process was answered within it.
START_TEST (test_registration_slow_controller)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    //  2 s; the times below keep 0.5 s from every deadline
    bn_config_set (config, "engine.registration_timeout", "2",
                   BN_CONFIG_CMDLINE);
    s_start (fake, 3, -1, config);
    bn_config_destroy (&config);
    //  the first asks alone; the two after it at once
    bn_msg_t *probe = s_recv_ok (fake->registration);
    s_reply_registration (fake, &probe, 0);
    bn_msg_t *first = s_recv_ok (fake->registration);
    bn_msg_t *second = s_recv_ok (fake->registration);
    int64_t asked = zclock_mono ();
    //  the first answered after 1 s, the second after 2.5 s: past its own
    //  deadline (2 s), within 2 s of the first's answer
    while (zclock_mono () < asked + 1000)
        zclock_sleep (10);
    s_reply_registration (fake, &first, 1);
    while (zclock_mono () < asked + 2500)
        zclock_sleep (10);
    s_reply_registration (fake, &second, 2);
    zsock_set_rcvtimeo (fake->engines, S_TIMEOUT);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
    char *ids = s_command (fake, "IDS");
    ck_assert (streq (ids, "0,1,2") || streq (ids, "0,2,1"));
    free (ids);
}
END_TEST

//  A hub that names no parent in its registration replies (7.1.0's): the
//  first engine has its answer on the shared socket, where it asked
//  alone, and the others ask on sockets of their own; each gets its own
//  id.
START_TEST (test_registration_stock_hub)
{
    s_fake_t *fake = s_fake;
    fake->stock = true;
    s_start (fake, 3, 5, NULL);
    s_register (fake, 3, 3000);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "5,6,7");
    free (ids);
}
END_TEST

//  The first engine's request has no answer in time: a late answer naming
//  no parent goes to no other engine, and the others register on sockets
//  of their own.
START_TEST (test_registration_probe_timeout)
{
    s_fake_t *fake = s_fake;
    fake->stock = true;
    bn_config_t *config = bn_config_new ();
    bn_config_set (config, "engine.registration_timeout", "0.3",
                   BN_CONFIG_CMDLINE);
    s_start (fake, 2, 5, config);
    bn_config_destroy (&config);
    bn_msg_t *probe = s_recv_ok (fake->registration);
    ck_assert (s_from_shared (probe));
    //  it gives up ({"id": null}), then the second asks on its own socket
    ck_assert_int_eq (s_unregistration (fake, S_TIMEOUT), -1);
    bn_msg_t *second = s_recv_ok (fake->registration);
    ck_assert (!s_from_shared (second));
    //  the late answer to the first goes nowhere, though it comes before
    //  the second's (answered at once: its timeout is short too)
    s_reply_registration (fake, &probe, 5);
    s_reply_registration (fake, &second, 6);
    ck_assert_ptr_null (s_recv (fake->registration, 300));
    zsock_set_rcvtimeo (fake->engines, S_TIMEOUT);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "FAILED");
    free (answer);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "6");
    free (ids);
}
END_TEST

START_TEST (test_registration_refused)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    bn_msg_t *request = s_recv_ok (fake->registration);
    bn_msg_t *reply = s_registration_reply_new (fake, request);
    bn_msg_set_content (reply,
                        bn_wire_error ("KeyError", "uuid in use", NULL, NULL));
    bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub);
    bn_msg_destroy (&request);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 255);
}
END_TEST

START_TEST (test_controller_gone)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    bn_config_set (config, "engine.timeout", "0.1", BN_CONFIG_CMDLINE);
    s_start (fake, 1, -1, config);
    bn_config_destroy (&config);
    //  a 100 ms heartbeat period: the floor is three periods + 0.5 s
    s_register (fake, 1, 100);
    int64_t start = zclock_mono ();
    ck_assert_int_eq (s_unregistration (fake, S_TIMEOUT), 0);
    ck_assert_int_ge (zclock_mono () - start, 500);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 1);
}
END_TEST

START_TEST (test_pings_keep_engine_alive)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    bn_config_set (config, "engine.timeout", "0.1", BN_CONFIG_CMDLINE);
    s_start (fake, 1, -1, config);
    bn_config_destroy (&config);
    s_register (fake, 1, 100);
    for (int i = 0; i < 20; i++) {
        zstr_sendf (fake->ping, "%d.5", i);
        zclock_sleep (100);
    }
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "0");
    free (ids);
}
END_TEST

START_TEST (test_plugin_setting)
{
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (
        bn_config_set (config, "engine.plugins", S_PLUGIN, BN_CONFIG_CMDLINE),
        0);
    s_start (fake, 1, 4, config);
    bn_config_destroy (&config);
    s_register (fake, 1, 3000);
    const char *greet[] = {"greet", "bob", NULL};
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s", s_apply (fake, 0, greet, NULL));
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    char *repr = s_result_repr (reply);
    ck_assert_str_eq (repr, "'hello bob from engine 4'");
    free (repr);
    bn_msg_destroy (&reply);

    //  a function raising UnmetDependency: dependencies_met false, so the
    //  task scheduler tries another engine
    const char *needs[] = {"needs", "nothing_here", NULL};
    snprintf (id, sizeof id, "%s", s_apply (fake, 0, needs, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    json_t *metadata = bn_msg_metadata (reply);
    ck_assert (json_is_false (json_object_get (metadata, "dependencies_met")));
    ck_assert_str_eq (json_string_value (json_object_get (metadata, "status")),
                      "error");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "UnmetDependency");
    bn_msg_destroy (&reply);
    //  any other error leaves it true
    const char *bad[] = {"needs", NULL};
    snprintf (id, sizeof id, "%s", s_apply (fake, 0, bad, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert (json_is_true (
        json_object_get (bn_msg_metadata (reply), "dependencies_met")));
    bn_msg_destroy (&reply);
}
END_TEST

START_TEST (test_bad_start)
{
    //  a missing plugin or connection file: the actor reports and stops
    s_fake_t *fake = s_fake;
    bn_config_t *config = bn_config_new ();
    bn_config_set (config, "engine.plugins", "/no/such/plugin.so",
                   BN_CONFIG_CMDLINE);
    s_start (fake, 1, -1, config);
    bn_config_destroy (&config);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 1);
    zactor_destroy (&fake->engines);
    bn_engine_args_t args = {"/no/such/file.json", NULL, NULL, 1, -1, NULL};
    fake->engines = zactor_new (bn_engine_actor, &args);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 1);
    zactor_destroy (&fake->engines);
    args.connection_file = NULL;
    args.connection_info = "{not json";
    fake->engines = zactor_new (bn_engine_actor, &args);
    ck_assert_int_eq (s_stopped (fake, S_TIMEOUT), 1);
}
END_TEST

//  ---------------------------------------------------------------------
//  Bad input

//  Send raw frames to engine index through sock (after uuid + client id).
static void
s_send_raw (s_fake_t *fake, zsock_t *sock, int index, zmsg_t *frames)
{
    zmsg_pushmem (frames, S_CLIENT, S_CLIENT_SIZE);
    zmsg_pushstr (frames, fake->uuid[index]);
    ck_assert_int_eq (zmsg_send (&frames, sock), 0);
}

//  Frames of a signed message with these four JSON parts.
static zmsg_t *
s_frames (s_fake_t *fake, const char *header, const char *parent,
          const char *metadata, const char *content, bool sign)
{
    const void *parts[4] = {header, parent, metadata, content};
    size_t sizes[4] = {strlen (header), strlen (parent), strlen (metadata),
                       strlen (content)};
    char sig[BN_SIGNATURE_SIZE + 1] = "";
    if (sign)
        bn_session_sign (fake->client, parts, sizes, sig);
    zmsg_t *frames = zmsg_new ();
    zmsg_addstr (frames, BN_DELIM);
    zmsg_addstr (frames, sig);
    for (int i = 0; i < 4; i++)
        zmsg_addmem (frames, parts[i], sizes[i]);
    return frames;
}

//  A fresh header of type from the client session, as JSON text.
static char *
s_header (s_fake_t *fake, const char *type)
{
    char id[BN_MSG_ID_SIZE], date[BN_DATE_SIZE];
    bn_session_msg_id (fake->client, id);
    bn_session_date (date);
    return zsys_sprintf ("{\"msg_id\": \"%s\", \"msg_type\": \"%s\", "
                         "\"username\": \"u\", \"session\": \"%s\", "
                         "\"date\": \"%s\", \"version\": \"5.3\"}",
                         id, type, bn_session_id (fake->client), date);
}

static json_t *
s_stats (s_fake_t *fake)
{
    char *text = s_command (fake, "STATS");
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    ck_assert_ptr_nonnull (stats);
    return stats;
}

static json_int_t
s_stat (json_t *stats, const char *name)
{
    return json_integer_value (json_object_get (stats, name));
}

//  The engine still answers echo on mux.
static void
s_still_alive (s_fake_t *fake, int index)
{
    const char *echo[] = {"echo", "1", NULL};
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s", s_apply (fake, index, echo, NULL));
    bn_msg_t *reply = s_reply (fake, fake->mux, index, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
}

START_TEST (test_bad_frames_dropped)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    zsock_t *socks[] = {fake->mux, fake->control};
    for (int s = 0; s < 2; s++) {
        zsock_t *sock = socks[s];
        //  no delimiter
        zmsg_t *frames = zmsg_new ();
        zmsg_addstr (frames, "hello");
        zmsg_addstr (frames, "{}");
        s_send_raw (fake, sock, 0, frames);
        //  truncated: delimiter, signature, two parts
        frames = zmsg_new ();
        zmsg_addstr (frames, BN_DELIM);
        zmsg_addstr (frames, "abc");
        zmsg_addstr (frames, "{}");
        zmsg_addstr (frames, "{}");
        s_send_raw (fake, sock, 0, frames);
        //  nothing after the delimiter
        frames = zmsg_new ();
        zmsg_addstr (frames, BN_DELIM);
        s_send_raw (fake, sock, 0, frames);
        //  missing signature
        char *header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
        s_send_raw (fake, sock, 0,
                    s_frames (fake, header, "{}", "{}",
                              "{\"code\": \"touch /tmp/bn-never\"}", false));
        //  bad signature
        frames =
            s_frames (fake, header, "{}", "{}", "{\"code\": \"true\"}", false);
        zmsg_first (frames);
        zframe_t *sig = zmsg_next (frames);
        zframe_reset (sig,
                      "0123456789abcdef0123456789abcdef"
                      "0123456789abcdef0123456789abcdef",
                      64);
        s_send_raw (fake, sock, 0, frames);
        free (header);
        //  header not JSON / without msg_type (content differs per
        //  socket, else the second copy would be a replay)
        const char *content = s ? "{\"on\": \"control\"}" : "{}";
        s_send_raw (fake, sock, 0,
                    s_frames (fake, "{not json", "{}", "{}", content, true));
        s_send_raw (
            fake, sock, 0,
            s_frames (fake, "{\"msg_id\": \"x\"}", "{}", "{}", content, true));
        s_send_raw (fake, sock, 0,
                    s_frames (fake, "[1, 2]", "{}", "{}", content, true));
    }
    s_still_alive (fake, 0);
    //  control is another connection: let it catch up too
    char id[BN_MSG_ID_SIZE];
    snprintf (
        id, sizeof id, "%s",
        s_send (fake, fake->control, 0, BN_MSG_KERNEL_INFO_REQUEST, NULL));
    bn_msg_t *reply =
        s_reply (fake, fake->control, 0, id, BN_MSG_KERNEL_INFO_REPLY);
    bn_msg_destroy (&reply);
    json_t *stats = s_stats (fake);
    ck_assert_int_eq (s_stat (stats, "bad_framing"), 6);
    ck_assert_int_eq (s_stat (stats, "bad_signature"), 4);
    ck_assert_int_eq (s_stat (stats, "bad_header"), 6);
    ck_assert_int_eq (s_stat (stats, "replayed"), 0);
    json_decref (stats);
    ck_assert_int_ne (access ("/tmp/bn-never", F_OK), 0);
}
END_TEST

START_TEST (test_replay_dropped)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    char *header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    zmsg_t *frames =
        s_frames (fake, header, "{}", "{}", "{\"code\": \"echo once\"}", true);
    zmsg_t *again = zmsg_dup (frames);
    s_send_raw (fake, fake->mux, 0, frames);
    s_send_raw (fake, fake->mux, 0, again);
    bn_msg_t *reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    s_still_alive (fake, 0);
    json_t *stats = s_stats (fake);
    ck_assert_int_eq (s_stat (stats, "replayed"), 1);
    json_decref (stats);
    free (header);
}
END_TEST

START_TEST (test_bad_content_answered)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    //  content that is not an object; code that is not a string; an
    //  unknown type on shell and on control
    char *header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    s_send_raw (fake, fake->mux, 0,
                s_frames (fake, header, "{}", "{}", "[\"code\"]", true));
    bn_msg_t *reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    bn_msg_destroy (&reply);
    free (header);
    header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    s_send_raw (fake, fake->mux, 0,
                s_frames (fake, header, "{}", "{\"time_limit\": \"x\"}",
                          "{\"code\": 12}", true));
    reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "TypeError");
    bn_msg_destroy (&reply);
    free (header);
    header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    s_send_raw (
        fake, fake->mux, 0,
        s_frames (fake, header, "{}", "null", "{\"code\": \"true\"}", true));
    reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (s_status_of (reply), "error");
    bn_msg_destroy (&reply);
    free (header);
    //  metadata with text after its object is not an object; blanks after
    //  it are nothing
    header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    s_send_raw (fake, fake->mux, 0,
                s_frames (fake, header, "{}", "{\"bn_output\": \"reply\"} {}",
                          "{\"code\": \"true\"}", true));
    reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (s_status_of (reply), "error");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "evalue")),
        "metadata and content must be JSON objects");
    bn_msg_destroy (&reply);
    free (header);
    header = s_header (fake, BN_MSG_EXECUTE_REQUEST);
    s_send_raw (fake, fake->mux, 0,
                s_frames (fake, header, "{}",
                          " {\"bn_output\": \"reply\"}\n\t ",
                          "{\"code\": \"echo hi\"}", true));
    reply = s_recv_ok (fake->mux);
    ck_assert_str_eq (s_status_of (reply), "ok");
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_msg_content (reply), "bn_stdout")),
                      "hi\n");
    bn_msg_destroy (&reply);
    free (header);

    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->mux, 0, "frobnicate_request", NULL));
    reply = s_reply (fake, fake->mux, 0, id, "frobnicate_reply");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "NotImplementedError");
    bn_msg_destroy (&reply);
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, "frobnicate", NULL));
    reply = s_reply (fake, fake->control, 0, id, "frobnicate_reply");
    ck_assert_str_eq (s_status_of (reply), "error");
    bn_msg_destroy (&reply);
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_SIGNAL_REQUEST,
                      json_pack ("{s:s}", "sig", "SIGNOPE")));
    reply = s_reply (fake, fake->control, 0, id, BN_MSG_SIGNAL_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    bn_msg_destroy (&reply);
    //  abort with null msg_ids still answers
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->control, 0, BN_MSG_ABORT_REQUEST,
                      json_pack ("{s:n}", "msg_ids")));
    reply = s_reply (fake, fake->control, 0, id, BN_MSG_ABORT_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    s_still_alive (fake, 0);
}
END_TEST

static void
s_add_garbage (bn_msg_t *msg, void *arg)
{
    size_t size = *(size_t *)arg;
    char *data = malloc (size);
    ck_assert_ptr_nonnull (data);
    memset (data, 0x95, size);
    ck_assert_int_eq (bn_msg_add_buffer_owned (msg, data, size), 0);
    bn_msg_add_buffer (msg, "\x80\x04K\x01.", 5);
}

//  pack_apply_message (lambda x: x, (), {}) from Python 3.11: a
//  CannedFunction of __main__.<lambda> with CPython bytecode.
static const unsigned char s_lambda_f[] = {
    0x80, 0x04, 0x95, 0x1e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8c,
    0x1d, 0x69, 0x70, 0x79, 0x70, 0x61, 0x72, 0x61, 0x6c, 0x6c, 0x65, 0x6c,
    0x2e, 0x73, 0x65, 0x72, 0x69, 0x61, 0x6c, 0x69, 0x7a, 0x65, 0x2e, 0x63,
    0x61, 0x6e, 0x6e, 0x69, 0x6e, 0x67, 0x94, 0x8c, 0x0e, 0x43, 0x61, 0x6e,
    0x6e, 0x65, 0x64, 0x46, 0x75, 0x6e, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x94,
    0x93, 0x94, 0x29, 0x81, 0x94, 0x7d, 0x94, 0x28, 0x8c, 0x04, 0x63, 0x6f,
    0x64, 0x65, 0x94, 0x8c, 0x1e, 0x69, 0x70, 0x79, 0x70, 0x61, 0x72, 0x61,
    0x6c, 0x6c, 0x65, 0x6c, 0x2e, 0x73, 0x65, 0x72, 0x69, 0x61, 0x6c, 0x69,
    0x7a, 0x65, 0x2e, 0x63, 0x6f, 0x64, 0x65, 0x75, 0x74, 0x69, 0x6c, 0x94,
    0x8c, 0x09, 0x63, 0x6f, 0x64, 0x65, 0x5f, 0x63, 0x74, 0x6f, 0x72, 0x94,
    0x93, 0x94, 0x28, 0x4b, 0x01, 0x4b, 0x00, 0x4b, 0x00, 0x4b, 0x01, 0x4b,
    0x01, 0x4b, 0x03, 0x43, 0x06, 0x97, 0x00, 0x7c, 0x00, 0x53, 0x00, 0x94,
    0x4e, 0x85, 0x94, 0x29, 0x8c, 0x01, 0x78, 0x94, 0x85, 0x94, 0x8c, 0x07,
    0x3c, 0x73, 0x74, 0x64, 0x69, 0x6e, 0x3e, 0x94, 0x8c, 0x08, 0x3c, 0x6c,
    0x61, 0x6d, 0x62, 0x64, 0x61, 0x3e, 0x94, 0x68, 0x0e, 0x4b, 0x02, 0x43,
    0x06, 0x80, 0x00, 0xb0, 0x71, 0x80, 0x00, 0x94, 0x43, 0x00, 0x94, 0x29,
    0x29, 0x74, 0x94, 0x52, 0x94, 0x8c, 0x08, 0x64, 0x65, 0x66, 0x61, 0x75,
    0x6c, 0x74, 0x73, 0x94, 0x4e, 0x8c, 0x0a, 0x6b, 0x77, 0x64, 0x65, 0x66,
    0x61, 0x75, 0x6c, 0x74, 0x73, 0x94, 0x4e, 0x8c, 0x0b, 0x61, 0x6e, 0x6e,
    0x6f, 0x74, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x94, 0x4e, 0x8c, 0x07,
    0x63, 0x6c, 0x6f, 0x73, 0x75, 0x72, 0x65, 0x94, 0x4e, 0x8c, 0x06, 0x6d,
    0x6f, 0x64, 0x75, 0x6c, 0x65, 0x94, 0x8c, 0x08, 0x5f, 0x5f, 0x6d, 0x61,
    0x69, 0x6e, 0x5f, 0x5f, 0x94, 0x8c, 0x08, 0x5f, 0x5f, 0x6e, 0x61, 0x6d,
    0x65, 0x5f, 0x5f, 0x94, 0x68, 0x0e, 0x8c, 0x07, 0x62, 0x75, 0x66, 0x66,
    0x65, 0x72, 0x73, 0x94, 0x5d, 0x94, 0x75, 0x62, 0x2e};
static const unsigned char s_lambda_info[] = {
    0x80, 0x04, 0x95, 0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x7d, 0x94, 0x28, 0x8c, 0x05, 0x6e, 0x61, 0x72, 0x67, 0x73, 0x94,
    0x4b, 0x00, 0x8c, 0x09, 0x6e, 0x61, 0x72, 0x67, 0x5f, 0x62, 0x75,
    0x66, 0x73, 0x94, 0x4b, 0x00, 0x8c, 0x07, 0x6b, 0x77, 0x5f, 0x6b,
    0x65, 0x79, 0x73, 0x94, 0x5d, 0x94, 0x75, 0x2e};

static void
s_add_pickled_function (bn_msg_t *msg, void *arg)
{
    bn_msg_add_buffer (msg, s_lambda_f, sizeof s_lambda_f);
    bn_msg_add_buffer (msg, s_lambda_info, sizeof s_lambda_info);
}

START_TEST (test_bad_apply_answered)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    s_register (fake, 1, 3000);
    //  a 100 MB buffer that is not a pickle
    size_t size = 100 * 1024 * 1024;
    char id[BN_MSG_ID_SIZE];
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_garbage, &size, NULL));
    bn_msg_t *reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    ck_assert_str_eq (
        json_string_value (json_object_get (bn_msg_content (reply), "ename")),
        "ValueError");
    bn_msg_destroy (&reply);
    //  no buffers at all
    snprintf (id, sizeof id, "%s",
              s_send (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    bn_msg_destroy (&reply);
    //  a pickled Python function
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_APPLY_REQUEST, NULL, NULL,
                         s_add_pickled_function, NULL, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (s_status_of (reply), "error");
    json_t *content = bn_msg_content (reply);
    ck_assert_str_eq (json_string_value (json_object_get (content, "ename")),
                      "NotImplementedError");
    ck_assert_ptr_nonnull (strstr (
        json_string_value (json_object_get (content, "evalue")), "<lambda>"));
    bn_msg_destroy (&reply);
    //  a 100 MB buffer on an execute_request is ignored
    snprintf (id, sizeof id, "%s",
              s_send_to (fake, fake->mux, 0, BN_MSG_EXECUTE_REQUEST,
                         json_pack ("{s:s}", "code", "echo fine"), NULL,
                         s_add_garbage, &size, NULL));
    reply = s_reply (fake, fake->mux, 0, id, BN_MSG_EXECUTE_REPLY);
    ck_assert_str_eq (s_status_of (reply), "ok");
    bn_msg_destroy (&reply);
    s_still_alive (fake, 0);
}
END_TEST

START_TEST (test_bad_registration_reply)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    bn_msg_t *request = s_recv_ok (fake->registration);
    size_t size;
    const void *uuid = bn_msg_ident (request, 0, &size);
    //  unsigned, then a wrong type, then garbage: all ignored
    zmsg_t *frames = s_frames (fake, "{}", "{}", "{}", "{}", false);
    zmsg_pushmem (frames, uuid, size);
    zmsg_send (&frames, fake->registration);
    bn_msg_t *other = bn_msg_new (fake->hub, "queue_reply");
    bn_msg_copy_idents (other, request);
    bn_msg_send (&other, zsock_resolve (fake->registration), fake->hub);
    zmsg_t *garbage = zmsg_new ();
    zmsg_addmem (garbage, uuid, size);
    zmsg_addstr (garbage, "garbage");
    zmsg_send (&garbage, fake->registration);
    //  then the real reply registers it
    bn_msg_t *reply = s_registration_reply_new (fake, request);
    bn_msg_set_content (reply,
                        json_pack ("{s:i, s:s}", "id", 3, "status", "ok"));
    bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub);
    bn_msg_destroy (&request);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "3");
    free (ids);
}
END_TEST

//  A registration_reply's hb_period that an int cannot hold (-500 once
//  truncated, so hb_period + 500 was a division by zero) is not used.
START_TEST (test_bad_hb_period)
{
    s_fake_t *fake = s_fake;
    s_start (fake, 1, -1, NULL);
    bn_msg_t *request = s_recv_ok (fake->registration);
    bn_msg_t *reply = s_registration_reply_new (fake, request);
    bn_msg_set_content (reply,
                        json_pack ("{s:i, s:s, s:I}", "id", 4, "status", "ok",
                                   "hb_period", (json_int_t)4294966796ll));
    bn_msg_send (&reply, zsock_resolve (fake->registration), fake->hub);
    bn_msg_destroy (&request);
    zstr_sendx (fake->engines, "WAIT", "5000", NULL);
    char *answer = zstr_recv (fake->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
    //  deadline checks run every 100 ms
    zclock_sleep (400);
    char *ids = s_command (fake, "IDS");
    ck_assert_str_eq (ids, "4");
    free (ids);
}
END_TEST

START_TEST (test_many_engines_one_thread)
{
    s_fake_t *fake = s_fake;
    int count = S_MAX;
    s_start (fake, count, 0, NULL);
    s_register (fake, count, 3000);
    //  every engine runs a command at once; all finish
    char ids[S_MAX][BN_MSG_ID_SIZE];
    for (int i = 0; i < count; i++)
        snprintf (ids[i], sizeof ids[i], "%s",
                  s_send (fake, fake->mux, i, BN_MSG_EXECUTE_REQUEST,
                          json_pack ("{s:s}", "code", "sleep 0.3")));
    int64_t start = zclock_mono ();
    int done = 0;
    while (done < count) {
        bn_msg_t *reply = s_recv_ok (fake->mux);
        ck_assert_str_eq (s_status_of (reply), "ok");
        bn_msg_destroy (&reply);
        done++;
    }
    //  in parallel, not one after the other
    ck_assert_int_lt (zclock_mono () - start, 0.3 * S_MAX * 1000 / 2);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_engine");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_registration_ids_and_heartbeat);
    tcase_add_test (tc, test_registration_window);
    tcase_add_test (tc, test_apply);
    tcase_add_test (tc, test_push_pull_clear);
    tcase_add_test (tc, test_sleep_does_not_block);
    tcase_add_test (tc, test_execute_errors_and_limits);
    tcase_add_test (tc, test_queue_abort_signal);
    tcase_add_test (tc, test_abort_running);
    tcase_add_test (tc, test_aborted_ids_bounded);
    tcase_add_test (tc, test_task_and_broadcast_routes);
    tcase_add_test (tc, test_output_in_reply);
    tcase_add_test (tc, test_shutdown);
    tcase_add_test (tc, test_shared_channels);
    tcase_add_test (tc, test_shared_not_offered);
    tcase_add_test (tc, test_registration_timeout);
    tcase_add_test (tc, test_registration_slow_controller);
    tcase_add_test (tc, test_registration_stock_hub);
    tcase_add_test (tc, test_registration_probe_timeout);
    tcase_add_test (tc, test_registration_refused);
    tcase_add_test (tc, test_controller_gone);
    tcase_add_test (tc, test_pings_keep_engine_alive);
    tcase_add_test (tc, test_plugin_setting);
    tcase_add_test (tc, test_bad_start);
    tcase_add_test (tc, test_many_engines_one_thread);
    suite_add_tcase (suite, tc);
    TCase *bad = tcase_create ("bad input");
    tcase_add_checked_fixture (bad, s_setup, s_teardown);
    tcase_set_timeout (bad, 60);
    tcase_add_test (bad, test_bad_frames_dropped);
    tcase_add_test (bad, test_replay_dropped);
    tcase_add_test (bad, test_bad_content_answered);
    tcase_add_test (bad, test_bad_apply_answered);
    tcase_add_test (bad, test_bad_registration_reply);
    tcase_add_test (bad, test_bad_hb_period);
    suite_add_tcase (suite, bad);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

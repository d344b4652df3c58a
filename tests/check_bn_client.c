/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_client: libbanyan against a scripted controller played by the
    test (every call, every error code, a controller that vanishes), and,
    with BN_STOCK_CLIENT_FILE set (tests/interop/test_libbanyan_stock.py),
    against a stock ipcontroller with stock ipengines.  */
#include "banyan.h"
#include "bn_apply.h"
#include "bn_connfile.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_reduction_cases.h"
#include "bn_session.h"
#include "bn_testdir.h"

#include <check.h>
#include <czmq.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MOCK_ENGINES 8

//  -------------------------------------------------------------------
//  A controller played by the test: the client-side sockets of a hub,
//  mux, control, task and broadcast scheduler, and the iopub and
//  notification publishers, with a connection file pointing at them.

typedef struct {
    bn_session_t *session;        //  the controller's session
    char key[40];                 //  HMAC key
    char dir[256];                //  profile folder
    char file[320];               //  client connection file
    zsock_t *query;               //  hub ROUTER
    zsock_t *mux;                 //  mux ROUTER
    zsock_t *control;             //  control ROUTER
    zsock_t *task;                //  task ROUTER
    zsock_t *broadcast;           //  broadcast ROUTER
    zsock_t *iopub;               //  XPUB, so subscriptions are seen
    zsock_t *notify;              //  XPUB
    int nengines;                 //  engines in the connection reply
    char uuids[MOCK_ENGINES][40]; //  their uuids
} s_mock_t;

static int
s_port (zsock_t *sock)
{
    char *endpoint = zsock_last_endpoint (sock);
    ck_assert_ptr_nonnull (endpoint);
    int port = atoi (strrchr (endpoint, ':') + 1);
    free (endpoint);
    return port;
}

static void
s_mkdtemp (char *dir, size_t size)
{
    snprintf (dir, size, "/tmp/bn-check-client-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (dir));
}

static void
s_rmtree (const char *dir)
{
    t_rmtree (dir);
    ck_assert_int_ne (access (dir, F_OK), 0);
}

//  Write a client connection file for the mock at path, with key.
static void
s_mock_write_file (s_mock_t *self, const char *path, const char *key)
{
    bn_connfile_t *cf = bn_connfile_new (BN_CONNFILE_CLIENT);
    ck_assert_ptr_nonnull (cf);
    ck_assert_int_eq (bn_connfile_set_key (cf, key), 0);
    ck_assert_int_eq (
        bn_connfile_set_port (cf, "registration", s_port (self->query)), 0);
    ck_assert_int_eq (bn_connfile_set_port (cf, "mux", s_port (self->mux)), 0);
    ck_assert_int_eq (
        bn_connfile_set_port (cf, "control", s_port (self->control)), 0);
    ck_assert_int_eq (bn_connfile_set_port (cf, "task", s_port (self->task)),
                      0);
    ck_assert_int_eq (bn_connfile_set_port (cf, "iopub", s_port (self->iopub)),
                      0);
    ck_assert_int_eq (
        bn_connfile_set_port (cf, "notification", s_port (self->notify)), 0);
    int broadcast = s_port (self->broadcast);
    ck_assert_int_eq (bn_connfile_set_broadcast (cf, &broadcast, 1), 0);
    ck_assert_int_eq (bn_connfile_save (cf, path), 0);
    bn_connfile_destroy (&cf);
}

static s_mock_t *
s_mock_new (int nengines)
{
    s_mock_t *self = zmalloc (sizeof *self);
    bn_session_new_id (self->key);
    self->session = bn_session_new (self->key, NULL);
    self->query = zsock_new_router ("tcp://127.0.0.1:*");
    self->mux = zsock_new_router ("tcp://127.0.0.1:*");
    self->control = zsock_new_router ("tcp://127.0.0.1:*");
    self->task = zsock_new_router ("tcp://127.0.0.1:*");
    self->broadcast = zsock_new_router ("tcp://127.0.0.1:*");
    self->iopub = zsock_new_xpub ("tcp://127.0.0.1:*");
    self->notify = zsock_new_xpub ("tcp://127.0.0.1:*");
    ck_assert (self->query && self->mux && self->control && self->task &&
               self->broadcast && self->iopub && self->notify);
    zsock_set_xpub_verbose (self->iopub, 1);
    zsock_set_xpub_verbose (self->notify, 1);
    self->nengines = nengines;
    for (int i = 0; i < MOCK_ENGINES; i++)
        bn_session_new_id (self->uuids[i]);
    s_mkdtemp (self->dir, sizeof self->dir);
    char *path = bn_connfile_path (self->dir, NULL, BN_CONNFILE_CLIENT);
    snprintf (self->file, sizeof self->file, "%s", path);
    free (path);
    s_mock_write_file (self, self->file, self->key);
    return self;
}

//  Close every socket: the controller vanishes.
static void
s_mock_vanish (s_mock_t *self)
{
    zsock_destroy (&self->query);
    zsock_destroy (&self->mux);
    zsock_destroy (&self->control);
    zsock_destroy (&self->task);
    zsock_destroy (&self->broadcast);
    zsock_destroy (&self->iopub);
    zsock_destroy (&self->notify);
}

static void
s_mock_destroy (s_mock_t **self_p)
{
    s_mock_t *self = *self_p;
    if (!self)
        return;
    s_mock_vanish (self);
    bn_session_destroy (&self->session);
    s_rmtree (self->dir);
    free (self);
    *self_p = NULL;
}

//  Receive one request on sock within timeout_ms; NULL if none came.
//  Messages that fail verification are skipped: on a shared machine a
//  stray peer of some other test can hit a port the mock reuses.
static bn_msg_t *
s_mock_recv (s_mock_t *self, zsock_t *sock, int timeout_ms)
{
    double deadline = zclock_usecs () / 1e6 + timeout_ms / 1000.0;
    while (true) {
        int left = (int)((deadline - zclock_usecs () / 1e6) * 1000);
        zsock_set_rcvtimeo (sock, left > 0 ? left : 0);
        bn_msg_t *msg = bn_msg_recv (zsock_resolve (sock));
        if (!msg || bn_msg_verify (msg, self->session, true) == 0)
            return msg;
        bn_msg_destroy (&msg);
    }
}

static bn_msg_t *
s_mock_expect (s_mock_t *self, zsock_t *sock, const char *type)
{
    bn_msg_t *msg = s_mock_recv (self, sock, 5000);
    ck_assert_msg (msg != NULL, "no %s arrived", type);
    ck_assert_str_eq (bn_msg_type (msg), type);
    return msg;
}

//  The index of the engine a mux or control request was routed to.
static int
s_mock_engine_of (s_mock_t *self, bn_msg_t *request)
{
    char *uuid = bn_msg_ident_strdup (request, 1);
    ck_assert_ptr_nonnull (uuid);
    for (int i = 0; i < MOCK_ENGINES; i++)
        if (strcmp (uuid, self->uuids[i]) == 0) {
            free (uuid);
            return i;
        }
    ck_abort_msg ("request for unknown engine %s", uuid);
    return -1;
}

//  Wait for one subscription on an XPUB (the client's SUB connecting).
static void
s_mock_wait_subscriber (zsock_t *xpub)
{
    zsock_set_rcvtimeo (xpub, 5000);
    zframe_t *frame = zframe_recv (xpub);
    ck_assert_msg (frame != NULL, "no subscriber came");
    ck_assert_int_eq (zframe_data (frame)[0], 1);
    zframe_destroy (&frame);
}

//  Answer a connection_request with status (and the engines when ok).
static void
s_mock_serve_connect (s_mock_t *self, bool ok)
{
    bn_msg_t *request =
        s_mock_expect (self, self->query, BN_MSG_CONNECTION_REQUEST);
    bn_msg_t *reply =
        bn_msg_new_reply (self->session, request,
                          ok ? BN_MSG_CONNECTION_REPLY : BN_MSG_HUB_ERROR);
    json_t *content;
    if (ok) {
        json_t *engines = json_object ();
        for (int i = 0; i < self->nengines; i++) {
            char id[16];
            snprintf (id, sizeof id, "%d", i);
            json_object_set_new (engines, id, json_string (self->uuids[i]));
        }
        content = json_pack ("{s:s, s:o}", "status", "ok", "engines", engines);
    } else
        content =
            json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                       "RuntimeError", "evalue", "go away", "traceback");
    bn_msg_set_content (reply, content);
    ck_assert_int_eq (
        bn_msg_send (&reply, zsock_resolve (self->query), self->session), 0);
    bn_msg_destroy (&request);
}

typedef struct {
    const char *source;
    double timeout;
    bn_client_t *client;
    int error;
} s_connect_t;

static void *
s_connect_main (void *arg)
{
    s_connect_t *connect = arg;
    connect->client =
        bn_client_new (connect->source, connect->timeout, &connect->error);
    return NULL;
}

//  Connect a client to the mock from source (NULL: its file), serving the
//  handshake; returns once the client's subscriptions have arrived.
static bn_client_t *
s_mock_client_from (s_mock_t *self, const char *source)
{
    s_connect_t connect = {source ? source : self->file, 5, NULL, 0};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_connect_main, &connect),
                      0);
    s_mock_serve_connect (self, true);
    pthread_join (thread, NULL);
    ck_assert_msg (connect.client != NULL, "connect failed: %s",
                   bn_strerror (connect.error));
    s_mock_wait_subscriber (self->iopub);
    s_mock_wait_subscriber (self->notify);
    return connect.client;
}

static bn_client_t *
s_mock_client (s_mock_t *self)
{
    return s_mock_client_from (self, NULL);
}

//  Publish an iopub message of type for request from engine index.
static void
s_mock_publish (s_mock_t *self, bn_msg_t *request, int engine, const char *type,
                const char *kind, json_t *content)
{
    bn_msg_t *msg = bn_msg_new_reply (self->session, request, type);
    bn_msg_clear_idents (msg);
    char topic[64];
    snprintf (topic, sizeof topic, "engine.%d.%s", engine, kind);
    bn_msg_push_ident (msg, topic, strlen (topic));
    bn_msg_set_metadata (msg,
                         json_pack ("{s:s}", "engine", self->uuids[engine]));
    bn_msg_set_content (msg, content);
    ck_assert_int_eq (
        bn_msg_send (&msg, zsock_resolve (self->iopub), self->session), 0);
}

static void
s_mock_status (s_mock_t *self, bn_msg_t *request, int engine, const char *state)
{
    s_mock_publish (self, request, engine, BN_MSG_STATUS, "status",
                    json_pack ("{s:s}", "execution_state", state));
}

static void
s_mock_stream (s_mock_t *self, bn_msg_t *request, int engine, const char *name,
               const char *text)
{
    s_mock_publish (self, request, engine, BN_MSG_STREAM, name,
                    json_pack ("{s:s, s:s}", "name", name, "text", text));
}

//  Reply to request on sock as engine (-1: the controller itself), with
//  content (taken) and a pickled value (borrowed, may be NULL).
static void
s_mock_reply (s_mock_t *self, zsock_t *sock, bn_msg_t *request, int engine,
              const char *type, json_t *content, const bn_value_t *value)
{
    bn_msg_t *reply = bn_msg_new_reply (self->session, request, type);
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    if (engine >= 0)
        bn_msg_set_metadata (
            reply,
            json_pack (
                "{s:s, s:s, s:b, s:s}", "started", date, "engine",
                self->uuids[engine], "dependencies_met", 1, "status",
                json_string_value (json_object_get (content, "status"))));
    bn_msg_set_content (reply, content);
    if (value)
        ck_assert_int_eq (bn_serialize_object_add (reply, value), 0);
    ck_assert_int_eq (bn_msg_send (&reply, zsock_resolve (sock), self->session),
                      0);
}

static json_t *
s_ok (void)
{
    return json_pack ("{s:s}", "status", "ok");
}

static json_t *
s_engine_error (s_mock_t *self, int engine, const char *ename,
                const char *evalue)
{
    return json_pack ("{s:s, s:s, s:s, s:[s,s], s:{s:s, s:i, s:s}}", "status",
                      "error", "ename", ename, "evalue", evalue, "traceback",
                      "Traceback (most recent call last):", "  line 1",
                      "engine_info", "engine_uuid", self->uuids[engine],
                      "engine_id", engine, "method", "apply");
}

//  Run a whole request as an engine does: busy, stdout, reply, idle.
static void
s_mock_run (s_mock_t *self, zsock_t *sock, bn_msg_t *request, int engine,
            const char *out, json_t *content, const bn_value_t *value)
{
    s_mock_status (self, request, engine, "busy");
    if (out)
        s_mock_stream (self, request, engine, "stdout", out);
    bool apply = strcmp (bn_msg_type (request), BN_MSG_APPLY_REQUEST) == 0;
    s_mock_reply (self, sock, request, engine,
                  apply ? BN_MSG_APPLY_REPLY : BN_MSG_EXECUTE_REPLY, content,
                  value);
    s_mock_status (self, request, engine, "idle");
}

static void
s_mock_notify (s_mock_t *self, const char *type, json_t *content)
{
    bn_msg_t *msg = bn_msg_new (self->session, type);
    bn_msg_set_content (msg, content);
    ck_assert_int_eq (
        bn_msg_send (&msg, zsock_resolve (self->notify), self->session), 0);
}

//  A tuple of one value (taken).
static bn_value_t *
s_args1 (bn_value_t *value)
{
    bn_value_t *args = bn_value_new_tuple ();
    ck_assert_int_eq (bn_value_append (args, value), 0);
    return args;
}

//  -------------------------------------------------------------------
//  Tests against the scripted controller

START_TEST (test_usage)
{
    s_mock_t *mock = s_mock_new (2);
    //  Connect, see the engines, run a command on all of them.
    bn_client_t *client = s_mock_client (mock);
    ck_assert_int_eq (bn_client_wait_for_engines (client, 2, 5), 0);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_ptr_nonnull (view);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_execute (view, "hostname", &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);
        int engine = s_mock_engine_of (mock, request);
        json_t *content = bn_msg_content (request);
        ck_assert_str_eq (json_string_value (json_object_get (content, "code")),
                          "hostname");
        ck_assert (json_is_true (json_object_get (content, "silent")));
        char out[32];
        snprintf (out, sizeof out, "node%d\n", engine);
        s_mock_run (
            mock, mock->mux, request, engine, out,
            json_pack ("{s:s, s:i}", "status", "ok", "execution_count", 1),
            NULL);
        bn_msg_destroy (&request);
    }
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    for (size_t i = 0; i < 2; i++) {
        int id = bn_result_engine_id (result, i);
        char expected[32];
        snprintf (expected, sizeof expected, "node%d\n", id);
        ck_assert_str_eq (bn_result_stdout (result, i), expected);
        ck_assert_str_eq (bn_result_stderr (result, i), "");
        ck_assert_int_eq (bn_result_status (result, i), 0);
        ck_assert_int_eq (bn_result_execution_count (result, i), 1);
        ck_assert_ptr_null (bn_result_value (result, i));
        ck_assert_ptr_null (bn_result_ename (result, i));
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    ck_assert_ptr_null (client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_error_codes_have_text)
{
    int codes[] = {BN_EINVAL,        BN_ENOMEM,    BN_ETIMEDOUT,   BN_ECONNECT,
                   BN_ENOCONTROLLER, BN_ENOENGINE, BN_EENGINEDIED, BN_EREMOTE,
                   BN_EABORTED,      BN_EPROTO,    BN_ESIGNATURE,  BN_EREPLAY,
                   BN_ENOTSUP,       BN_ECONNFILE, BN_ECONFIG,     BN_EPICKLE,
                   BN_ENOTREADY,     BN_EIO,       BN_ENOENT,      BN_ECLOSED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        ck_assert_int_lt (codes[i], 0);
        ck_assert_str_ne (bn_strerror (codes[i]), "unknown error");
        ck_assert_str_ne (bn_err_name (codes[i]), "BN_UNKNOWN");
    }
    ck_assert_str_eq (bn_strerror (BN_ETIMEDOUT), "timed out");
    ck_assert_str_eq (bn_err_name (BN_EENGINEDIED), "BN_EENGINEDIED");
    ck_assert_str_eq (bn_strerror (0), "success");
}
END_TEST

START_TEST (test_connect_sources)
{
    s_mock_t *mock = s_mock_new (1);
    //  A profile folder
    bn_client_t *client = s_mock_client_from (mock, mock->dir);
    ck_assert_uint_eq (bn_client_engine_count (client), 1);
    bn_client_destroy (&client);
    //  The connection JSON itself
    char *json = NULL;
    size_t size = 0;
    FILE *file = fopen (mock->file, "r");
    ck_assert_ptr_nonnull (file);
    ck_assert_int_ge (getdelim (&json, &size, 0, file), 10);
    fclose (file);
    client = s_mock_client_from (mock, json);
    bn_client_destroy (&client);
    //  BANYAN_CONNECTION_INFO, as JSON or as a path
    setenv ("BANYAN_CONNECTION_INFO", json, 1);
    client = s_mock_client_from (mock, NULL);
    bn_client_destroy (&client);
    setenv ("BANYAN_CONNECTION_INFO", mock->file, 1);
    client = s_mock_client_from (mock, NULL);
    bn_client_destroy (&client);
    unsetenv ("BANYAN_CONNECTION_INFO");
    //  IPP_CONNECTION_INFO
    setenv ("IPP_CONNECTION_INFO", json, 1);
    client = s_mock_client_from (mock, NULL);
    bn_client_destroy (&client);
    unsetenv ("IPP_CONNECTION_INFO");
    free (json);
    //  A profile name under BANYAN_DIR, with and without a cluster id
    char root[256];
    s_mkdtemp (root, sizeof root);
    char path[400];
    snprintf (path, sizeof path, "%s/profile_test", root);
    char *named = bn_connfile_path (path, NULL, BN_CONNFILE_CLIENT);
    s_mock_write_file (mock, named, mock->key);
    free (named);
    named = bn_connfile_path (path, "abc", BN_CONNFILE_CLIENT);
    s_mock_write_file (mock, named, mock->key);
    free (named);
    setenv ("BANYAN_DIR", root, 1);
    client = s_mock_client_from (mock, "test");
    bn_client_destroy (&client);
    //  The default profile and cluster id from the environment
    setenv ("BANYAN_PROFILE", "test", 1);
    setenv ("BANYAN_CLUSTER_ID", "abc", 1);
    client = s_mock_client_from (mock, NULL);
    bn_client_destroy (&client);
    unsetenv ("BANYAN_PROFILE");
    unsetenv ("BANYAN_CLUSTER_ID");
    unsetenv ("BANYAN_DIR");
    s_rmtree (root);
    s_mock_destroy (&mock);
}
END_TEST

typedef struct {
    const char *profile;
    const char *cluster_id;
    bn_client_t *client;
    int error;
} s_profile_connect_t;

static void *
s_profile_main (void *arg)
{
    s_profile_connect_t *connect = arg;
    connect->client = bn_client_new_profile (
        connect->profile, connect->cluster_id, 5, &connect->error);
    return NULL;
}

START_TEST (test_connect_profile)
{
    s_mock_t *mock = s_mock_new (1);
    char *path = bn_connfile_path (mock->dir, "xyz", BN_CONNFILE_CLIENT);
    s_mock_write_file (mock, path, mock->key);
    free (path);
    s_profile_connect_t connect = {mock->dir, "xyz", NULL, 0};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_profile_main, &connect),
                      0);
    s_mock_serve_connect (mock, true);
    pthread_join (thread, NULL);
    ck_assert_ptr_nonnull (connect.client);
    bn_client_destroy (&connect.client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_connect_failures)
{
    int rc = 0;
    char dir[256];
    s_mkdtemp (dir, sizeof dir);
    char path[400];
    //  No file: waits for it, then BN_ENOENT
    snprintf (path, sizeof path, "%s/missing.json", dir);
    double start = zclock_usecs () / 1e6;
    ck_assert_ptr_null (bn_client_new (path, 0.3, &rc));
    ck_assert_int_eq (rc, BN_ENOENT);
    ck_assert (zclock_usecs () / 1e6 - start >= 0.25 &&
               zclock_usecs () / 1e6 - start < 3);
    //  A file that is not a connection file
    snprintf (path, sizeof path, "%s/bad.json", dir);
    FILE *file = fopen (path, "w");
    fputs ("{\"not\": \"a connection file\"}", file);
    fclose (file);
    ck_assert_ptr_null (bn_client_new (path, 0.2, &rc));
    ck_assert_int_eq (rc, BN_ECONNFILE);
    ck_assert_ptr_null (bn_client_new ("{broken", 0.2, &rc));
    ck_assert_int_eq (rc, BN_ECONNFILE);
    //  An engine file is the wrong kind
    ck_assert_ptr_null (bn_client_new (
        BN_SOURCE_DIR "/tests/data/connfile/ipp710-engine.json", 0.2, &rc));
    ck_assert_int_eq (rc, BN_ECONNFILE);
    //  The error argument may be NULL
    ck_assert_ptr_null (bn_client_new (path, 0.1, NULL));
    s_rmtree (dir);

    //  A controller that never answers: BN_ETIMEDOUT within the timeout
    s_mock_t *mock = s_mock_new (1);
    start = zclock_usecs () / 1e6;
    ck_assert_ptr_null (bn_client_new (mock->file, 0.5, &rc));
    ck_assert_int_eq (rc, BN_ETIMEDOUT);
    ck_assert (zclock_usecs () / 1e6 - start < 3);
    s_mock_destroy (&mock);
    //  One that refuses
    mock = s_mock_new (1);
    s_connect_t connect = {mock->file, 5, NULL, 0};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_connect_main, &connect),
                      0);
    s_mock_serve_connect (mock, false);
    pthread_join (thread, NULL);
    ck_assert_ptr_null (connect.client);
    ck_assert_int_eq (connect.error, BN_ECONNECT);

    //  One signing with another key
    char other[400];
    snprintf (other, sizeof other, "%s/other-key.json", mock->dir);
    s_mock_write_file (mock, other, "not-the-key");
    connect.source = other;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_connect_main, &connect),
                      0);
    zsock_set_rcvtimeo (mock->query, 5000);
    bn_msg_t *request = bn_msg_recv (zsock_resolve (mock->query));
    ck_assert_ptr_nonnull (request);
    ck_assert_int_eq (bn_msg_verify (request, mock->session, true),
                      BN_ESIGNATURE);
    bn_msg_t *reply =
        bn_msg_new_reply (mock->session, request, BN_MSG_CONNECTION_REPLY);
    bn_msg_set_content (reply,
                        json_pack ("{s:s, s:{}}", "status", "ok", "engines"));
    bn_msg_send (&reply, zsock_resolve (mock->query), mock->session);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
    ck_assert_ptr_null (connect.client);
    ck_assert_int_eq (connect.error, BN_ECONNECT);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_engines_follow_notifications)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    ck_assert_uint_eq (bn_client_engine_count (client), 2);
    ck_assert_str_eq (bn_client_session (client), bn_client_session (client));
    ck_assert_int_eq (bn_client_status (client), 0);
    char uuid[64];
    ck_assert_int_eq (bn_client_engine_uuid (client, 1, uuid, sizeof uuid), 0);
    ck_assert_str_eq (uuid, mock->uuids[1]);
    ck_assert_int_eq (bn_client_engine_uuid (client, 7, uuid, sizeof uuid),
                      BN_ENOENGINE);
    ck_assert_int_eq (bn_client_engine_uuid (client, 1, uuid, 8), BN_EINVAL);
    ck_assert_int_eq (bn_client_engine_uuid (client, -1, uuid, sizeof uuid),
                      BN_ENOENGINE);

    //  Waiting for more engines than there are times out
    double start = zclock_usecs () / 1e6;
    ck_assert_int_eq (bn_client_wait_for_engines (client, 3, 0.2),
                      BN_ETIMEDOUT);
    ck_assert (zclock_usecs () / 1e6 - start < 2);

    //  A registration arrives
    s_mock_notify (mock, BN_MSG_REGISTRATION_NOTIFICATION,
                   json_pack ("{s:i, s:s}", "id", 5, "uuid", mock->uuids[5]));
    ck_assert_int_eq (bn_client_wait_for_engines (client, 3, 5), 0);
    bn_idset_t *ids = bn_client_ids (client);
    char *text = bn_idset_encode (ids);
    ck_assert_str_eq (text, "0-1,5");
    free (text);
    bn_idset_destroy (&ids);

    //  An unregistration
    s_mock_notify (mock, BN_MSG_UNREGISTRATION_NOTIFICATION,
                   json_pack ("{s:i, s:s}", "id", 0, "uuid", mock->uuids[0]));
    for (int i = 0; i < 100 && bn_client_engine_count (client) != 2; i++)
        usleep (10000);
    ids = bn_client_ids (client);
    text = bn_idset_encode (ids);
    ck_assert_str_eq (text, "1,5");
    free (text);
    bn_idset_destroy (&ids);
    ck_assert_int_eq (bn_client_engine_uuid (client, 0, uuid, sizeof uuid),
                      BN_ENOENGINE);
    //  Unknown notifications are dropped and counted
    s_mock_notify (mock, "surprise_notification", json_object ());
    for (int i = 0; i < 100 && bn_client_dropped (client) == 0; i++)
        usleep (10000);
    ck_assert_uint_eq (bn_client_dropped (client), 1);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  A direct reply's metadata as its item records it: the start time, the
//  hops, one start time longer than dates are; a reply whose metadata is
//  not an object is dropped and counted, its request left waiting.
START_TEST (test_direct_reply_metadata)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    char long_start[100];
    memset (long_start, 's', sizeof long_start - 1);
    long_start[sizeof long_start - 1] = 0;
    const char *starts[] = {"2026-01-01T00:00:00.000001Z", long_start, NULL};
    for (int i = 0; i < 3; i++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "noop", NULL, NULL, &result), 0);
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
        bn_msg_t *reply =
            bn_msg_new_reply (mock->session, request, BN_MSG_APPLY_REPLY);
        if (starts[i])
            bn_msg_set_metadata (
                reply,
                json_pack ("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "started",
                           starts[i], "engine", mock->uuids[0], "bn_hops",
                           "node", "n0", "received", "r0", "sent", "s0"));
        else
            ck_assert_int_eq (
                bn_msg_set_part_raw (reply, BN_PART_METADATA, "[1]", 3), 0);
        bn_msg_set_content (reply, s_ok ());
        bn_value_t *value = bn_value_new_int (i);
        ck_assert_int_eq (bn_serialize_object_add (reply, value), 0);
        s_mock_status (mock, request, 0, "busy");
        ck_assert_int_eq (
            bn_msg_send (&reply, zsock_resolve (mock->mux), mock->session), 0);
        s_mock_status (mock, request, 0, "idle");
        bn_msg_destroy (&request);
        if (starts[i]) {
            ck_assert_int_eq (bn_result_get (result, 5), 0);
            ck_assert (bn_value_equal (bn_result_value (result, 0), value));
            ck_assert_str_eq (bn_result_started (result, 0), starts[i]);
            ck_assert_ptr_nonnull (bn_result_completed (result, 0));
            ck_assert_uint_eq (bn_result_hop_count (result, 0), 1);
            const char *node, *received, *sent;
            ck_assert_int_eq (
                bn_result_hop (result, 0, 0, &node, &received, &sent), 0);
            ck_assert_str_eq (node, "n0");
            ck_assert_str_eq (sent, "s0");
        } else {
            for (int k = 0; k < 500 && bn_client_dropped (client) == 0; k++)
                usleep (10000);
            ck_assert_uint_eq (bn_client_dropped (client), 1);
            ck_assert_int_eq (bn_result_get (result, 0), BN_ETIMEDOUT);
        }
        bn_value_destroy (&value);
        bn_result_destroy (&result);
    }
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  A direct view asks banyan engines (they said bn_output at registration)
//  for their output in the reply, and its result holds the output the
//  reply carried; an engine that did not say so is not asked, nor one
//  whose view says no.
START_TEST (test_direct_output_in_reply)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    s_mock_notify (mock, BN_MSG_REGISTRATION_NOTIFICATION,
                   json_pack ("{s:i, s:s, s:[s]}", "id", 5, "uuid",
                              mock->uuids[5], BN_REG_FEATURES,
                              BN_FEATURE_OUTPUT));
    ck_assert_int_eq (bn_client_wait_for_engines (client, 3, 5), 0);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int cases[3][2] = {{5, -1}, {0, -1}, {5, 0}}; //  engine, in reply
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq (bn_view_set_target_list (view, &cases[i][0], 1), 0);
        if (cases[i][1] >= 0)
            ck_assert_int_eq (bn_view_set_output_in_reply (view, cases[i][1]),
                              0);
        bool in_reply = i == 0;
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "noop", NULL, NULL, &result), 0);
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
        json_t *asked =
            json_object_get (bn_msg_metadata (request), BN_BCAST_OUTPUT);
        if (in_reply)
            ck_assert_str_eq (json_string_value (asked), "reply");
        else
            ck_assert_ptr_null (asked);
        bn_msg_t *reply =
            bn_msg_new_reply (mock->session, request, BN_MSG_APPLY_REPLY);
        bn_msg_set_content (reply,
                            json_pack ("{s:s, s:s, s:s}", "status", "ok",
                                       "bn_stdout", "out\n", "bn_stderr", ""));
        bn_value_t *value = bn_value_new_int (i);
        ck_assert_int_eq (bn_serialize_object_add (reply, value), 0);
        bn_value_destroy (&value);
        ck_assert_int_eq (
            bn_msg_send (&reply, zsock_resolve (mock->mux), mock->session), 0);
        if (!in_reply)
            s_mock_status (mock, request, cases[i][0], "idle");
        ck_assert_int_eq (bn_result_get (result, 5), 0);
        ck_assert_str_eq (bn_result_stdout (result, 0), "out\n");
        bn_msg_destroy (&request);
        bn_result_destroy (&result);
    }
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_apply_by_name)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_kind (view), BN_VIEW_DIRECT);

    //  A name without dots is a Reference, args and kwargs pickled
    bn_value_t *args = s_args1 (bn_value_new_str ("hello"));
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "times", bn_value_new_int (3));
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, "echo", args, kwargs, &result), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
    bn_bytes_t bufs[16];
    size_t nbufs = bn_bytes_from_msg (request, bufs, 16);
    bn_apply_t call;
    char err[256];
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
    ck_assert_int_eq (call.kind, BN_APPLY_REFERENCE);
    ck_assert_str_eq (call.name, "echo");
    ck_assert_str_eq (bn_value_str (bn_value_item (call.args, 0)), "hello");
    ck_assert_int_eq (bn_value_int (bn_value_dict_get (call.kwargs, "times")),
                      3);
    bn_apply_clear (&call);
    bn_value_t *value = bn_value_new_str ("hellohellohello");
    s_mock_run (mock, mock->mux, request, 0, NULL, s_ok (), value);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert (bn_value_equal (bn_result_value (result, 0), value));
    ck_assert_ptr_nonnull (bn_result_started (result, 0));
    ck_assert_ptr_nonnull (bn_result_completed (result, 0));
    ck_assert_ptr_nonnull (bn_result_submitted (result, 0));
    ck_assert_str_eq (bn_result_content (result, 0), "{\"status\":\"ok\"}");
    ck_assert_str_eq (bn_result_engine_uuid (result, 0), mock->uuids[0]);
    bn_value_destroy (&value);
    bn_result_destroy (&result);

    //  A dotted name is a module-level global, for stock engines
    ck_assert_int_eq (bn_view_apply (view, "builtins.sum", args, NULL, &result),
                      0);
    request = s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
    nbufs = bn_bytes_from_msg (request, bufs, 16);
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
    ck_assert_int_eq (call.kind, BN_APPLY_GLOBAL);
    ck_assert_str_eq (call.module, "builtins");
    ck_assert_str_eq (call.name, "sum");
    bn_apply_clear (&call);
    s_mock_run (mock, mock->mux, request, 0, NULL, s_ok (), NULL);
    bn_msg_destroy (&request);
    //  An ok reply without a result pickle is an unreadable result
    ck_assert_int_eq (bn_result_get (result, 5), BN_EPICKLE);
    ck_assert_ptr_null (bn_result_value (result, 0));
    ck_assert_str_eq (bn_result_ename (result, 0), "UnpicklingError");
    bn_result_destroy (&result);

    //  Large bytes travel as their own frame
    char big[5000];
    memset (big, 'x', sizeof big);
    bn_value_t *bigargs = s_args1 (bn_value_new_bytes (big, sizeof big));
    ck_assert_int_eq (bn_view_apply (view, "echo", bigargs, NULL, &result), 0);
    request = s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
    ck_assert_uint_ge (bn_msg_nbuffers (request), 3);
    nbufs = bn_bytes_from_msg (request, bufs, 16);
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
    ck_assert_uint_eq (bn_value_bytes_size (bn_value_item (call.args, 0)),
                       sizeof big);
    s_mock_run (mock, mock->mux, request, 0, NULL, s_ok (),
                bn_value_item (call.args, 0));
    bn_apply_clear (&call);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_uint_eq (bn_value_bytes_size (bn_result_value (result, 0)),
                       sizeof big);
    bn_result_destroy (&result);
    bn_value_destroy (&bigargs);

    //  Bad arguments
    ck_assert_int_eq (bn_view_apply (view, "", args, NULL, &result), BN_EINVAL);
    ck_assert_ptr_null (result);
    ck_assert_int_eq (bn_view_apply (view, "mod.", args, NULL, &result),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_apply (view, ".f", args, NULL, &result),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_apply (view, "echo", kwargs, NULL, &result),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_apply (view, "echo", args, args, &result),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_apply (view, "echo", NULL, NULL, NULL),
                      BN_EINVAL);
    bn_value_t *badkw = bn_value_new_dict ();
    bn_value_dict_set (badkw, bn_value_new_int (1), bn_value_new_int (2));
    ck_assert_int_eq (bn_view_apply (view, "echo", NULL, badkw, &result),
                      BN_EINVAL);
    bn_value_destroy (&badkw);
    //  A value that cannot be pickled: text that is not UTF-8
    bn_value_t *unpicklable = s_args1 (bn_value_new_strn ("\xff\xfe", 2));
    ck_assert_int_eq (bn_view_apply (view, "echo", unpicklable, NULL, &result),
                      BN_EPICKLE);
    ck_assert_ptr_null (result);
    bn_value_destroy (&unpicklable);
    ck_assert_int_eq (bn_view_execute (view, "\xff", &result), BN_EINVAL);
    ck_assert_int_eq (bn_view_execute (view, NULL, &result), BN_EINVAL);

    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_push_pull)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int one = 1;
    ck_assert_int_eq (bn_view_set_target_list (view, &one, 1), 0);

    bn_value_t *ns = bn_value_new_dict ();
    bn_value_dict_set_str (ns, "a", bn_value_new_int (5));
    bn_value_dict_set_str (ns, "b", bn_value_new_str ("hi"));
    bn_result_t *result;
    ck_assert_int_eq (bn_view_push (view, ns, &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 1);
    bn_msg_t *request = s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
    ck_assert_int_eq (s_mock_engine_of (mock, request), 1);
    bn_bytes_t bufs[16];
    size_t nbufs = bn_bytes_from_msg (request, bufs, 16);
    bn_apply_t call;
    char err[256];
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
    //  What the Python client sends, but by reference, not as bytecode
    ck_assert_int_eq (call.kind, BN_APPLY_GLOBAL);
    ck_assert_str_eq (call.module, "ipyparallel.util");
    ck_assert_str_eq (call.name, "_push");
    ck_assert_uint_eq (bn_value_size (call.args), 0);
    ck_assert (bn_value_equal (call.kwargs, ns));
    bn_apply_clear (&call);
    bn_value_t *none = bn_value_new_none ();
    s_mock_run (mock, mock->mux, request, 1, NULL, s_ok (), none);
    bn_value_destroy (&none);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 1);
    bn_result_destroy (&result);

    bn_value_t *names = bn_value_new_list ();
    bn_value_append (names, bn_value_new_str ("a"));
    bn_value_append (names, bn_value_new_str ("b"));
    ck_assert_int_eq (bn_view_pull (view, names, &result), 0);
    request = s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
    nbufs = bn_bytes_from_msg (request, bufs, 16);
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
    ck_assert_str_eq (call.name, "_pull");
    ck_assert_uint_eq (bn_value_size (call.args), 1);
    ck_assert (bn_value_equal (bn_value_item (call.args, 0), names));
    bn_apply_clear (&call);
    bn_value_t *values = bn_value_new_list ();
    bn_value_append (values, bn_value_new_int (5));
    bn_value_append (values, bn_value_new_str ("hi"));
    s_mock_run (mock, mock->mux, request, 1, NULL, s_ok (), values);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert (bn_value_equal (bn_result_value (result, 0), values));
    bn_value_destroy (&values);
    bn_result_destroy (&result);

    //  Bad names and namespaces
    bn_value_t *number = bn_value_new_int (1);
    ck_assert_int_eq (bn_view_pull (view, number, &result), BN_EINVAL);
    ck_assert_int_eq (bn_view_push (view, number, &result), BN_EINVAL);
    bn_value_append (names, bn_value_new_int (3));
    ck_assert_int_eq (bn_view_pull (view, names, &result), BN_EINVAL);
    bn_value_destroy (&number);
    bn_value_destroy (&names);
    bn_value_destroy (&ns);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_partial_results_and_output)
{
    s_mock_t *mock = s_mock_new (3);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "work", &result), 0);
    bn_msg_t *requests[3];
    for (int i = 0; i < 3; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);
        requests[s_mock_engine_of (mock, request)] = request;
    }
    ck_assert (!bn_result_ready (result));
    ck_assert_uint_eq (bn_result_progress (result), 0);
    ck_assert_int_eq (bn_result_status (result, 0), BN_ENOTREADY);
    ck_assert_ptr_null (bn_result_stdout (result, 0));
    ck_assert_int_eq (bn_result_next (result, 0.05), BN_ETIMEDOUT);
    ck_assert_int_eq (bn_result_wait (result, 0.05), BN_ETIMEDOUT);
    ck_assert_int_eq (bn_result_get (result, 0.05), BN_ETIMEDOUT);
    ck_assert (bn_result_elapsed (result) > 0.1);

    //  Engine 2 answers first, its output in pieces, stdout and stderr;
    //  its reply comes before its idle: not complete until the idle.
    s_mock_status (mock, requests[2], 2, "busy");
    s_mock_stream (mock, requests[2], 2, "stdout", "one ");
    s_mock_stream (mock, requests[2], 2, "stderr", "warning\n");
    s_mock_stream (mock, requests[2], 2, "stdout", "two\n");
    s_mock_reply (mock, mock->mux, requests[2], 2, BN_MSG_EXECUTE_REPLY,
                  s_ok (), NULL);
    ck_assert_int_eq (bn_result_next (result, 0.2), BN_ETIMEDOUT);
    s_mock_status (mock, requests[2], 2, "idle");
    ck_assert_int_eq (bn_result_next (result, 5), 2);
    ck_assert_uint_eq (bn_result_progress (result), 1);
    ck_assert_str_eq (bn_result_stdout (result, 2), "one two\n");
    ck_assert_str_eq (bn_result_stderr (result, 2), "warning\n");
    ck_assert_int_eq (bn_result_engine_id (result, 2), 2);

    //  Engine 0: idle before the reply (the two travel apart)
    s_mock_stream (mock, requests[0], 0, "stdout", "zero\n");
    s_mock_status (mock, requests[0], 0, "idle");
    s_mock_reply (mock, mock->mux, requests[0], 0, BN_MSG_EXECUTE_REPLY,
                  s_ok (), NULL);
    ck_assert_int_eq (bn_result_next (result, 5), 0);
    ck_assert_str_eq (bn_result_stdout (result, 0), "zero\n");
    //  Engine 1: a Python expression's execute_result
    s_mock_publish (mock, requests[1], 1, BN_MSG_EXECUTE_RESULT,
                    "execute_result",
                    json_pack ("{s:{s:s}, s:{}, s:i}", "data", "text/plain",
                               "42", "metadata", "execution_count", 3));
    s_mock_run (mock, mock->mux, requests[1], 1, NULL,
                json_pack ("{s:s, s:i}", "status", "ok", "execution_count", 3),
                NULL);
    ck_assert_int_eq (bn_result_next (result, 5), 1);
    ck_assert_int_eq (bn_result_next (result, 5), BN_ENOENT);
    ck_assert (bn_result_ready (result));
    ck_assert_str_eq (bn_result_execute_result (result, 1), "42");
    ck_assert_int_eq (bn_result_execution_count (result, 1), 3);
    ck_assert_int_eq (bn_result_get (result, 0), 0);
    double elapsed = bn_result_elapsed (result);
    usleep (20000);
    ck_assert (bn_result_elapsed (result) == elapsed);
    for (int i = 0; i < 3; i++)
        bn_msg_destroy (&requests[i]);
    bn_result_destroy (&result);

    //  Not silent: asked for in the request
    ck_assert_int_eq (bn_view_set_silent (view, false), 0);
    ck_assert_int_eq (bn_view_execute (view, "1+1", &result), 0);
    for (int i = 0; i < 3; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);
        ck_assert (json_is_false (
            json_object_get (bn_msg_content (request), "silent")));
        bn_msg_destroy (&request);
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_remote_errors)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, "boom", NULL, NULL, &result), 0);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
        int engine = s_mock_engine_of (mock, request);
        if (engine == 0)
            //  The engine raised: error as a value, with output
            s_mock_run (mock, mock->mux, request, 0, "before\n",
                        s_engine_error (mock, 0, "ZeroDivisionError",
                                        "division by zero"),
                        NULL);
        else
            //  Aborted before it ran: no idle follows
            s_mock_reply (mock, mock->mux, request, 1, BN_MSG_APPLY_REPLY,
                          json_pack ("{s:s}", "status", "aborted"), NULL);
        bn_msg_destroy (&request);
    }
    ck_assert_int_eq (bn_result_get (result, 5), BN_EREMOTE);
    ck_assert_int_eq (bn_result_status (result, 0), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 0), "ZeroDivisionError");
    ck_assert_str_eq (bn_result_evalue (result, 0), "division by zero");
    ck_assert_str_eq (bn_result_traceback (result, 0),
                      "Traceback (most recent call last):\n  line 1");
    ck_assert_str_eq (bn_result_stdout (result, 0), "before\n");
    ck_assert_int_eq (bn_result_status (result, 1), BN_EABORTED);
    ck_assert_str_eq (bn_result_ename (result, 1), "TaskAborted");
    ck_assert_str_eq (bn_result_evalue (result, 1),
                      bn_result_msg_id (result, 1));
    bn_result_destroy (&result);

    //  A failure from the controller itself: no output is waited for;
    //  NotImplementedError from the controller means not supported.
    ck_assert_int_eq (bn_view_apply (view, "f", NULL, NULL, &result), 0);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_APPLY_REQUEST);
        int engine = s_mock_engine_of (mock, request);
        json_t *content =
            engine == 0
                ? json_pack ("{s:s, s:s, s:s, s:[], s:{}}", "status", "error",
                             "ename", "NotImplementedError", "evalue",
                             "no scheduler", "traceback", "engine_info")
                : json_pack ("{s:s}", "result", "no status");
        s_mock_reply (mock, mock->mux, request, -1, BN_MSG_APPLY_REPLY, content,
                      NULL);
        bn_msg_destroy (&request);
    }
    ck_assert_int_eq (bn_result_get (result, 5), BN_ENOTSUP);
    ck_assert_int_eq (bn_result_status (result, 1), BN_EPROTO);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_engine_dies)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 100", &result), 0);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);
        if (s_mock_engine_of (mock, request) == 1)
            s_mock_run (mock, mock->mux, request, 1, "fine\n", s_ok (), NULL);
        bn_msg_destroy (&request);
    }
    ck_assert_int_eq (bn_result_next (result, 5), 1);
    //  Engine 0 unregisters: its request fails at once
    s_mock_notify (mock, BN_MSG_UNREGISTRATION_NOTIFICATION,
                   json_pack ("{s:i, s:s}", "id", 0, "uuid", mock->uuids[0]));
    ck_assert_int_eq (bn_result_get (result, 5), BN_EENGINEDIED);
    ck_assert_int_eq (bn_result_status (result, 0), BN_EENGINEDIED);
    ck_assert_str_eq (bn_result_ename (result, 0), "EngineError");
    ck_assert_ptr_nonnull (strstr (bn_result_evalue (result, 0), "Engine 0"));
    ck_assert_int_eq (bn_result_status (result, 1), 0);
    bn_result_destroy (&result);
    //  It is no longer a target
    int zero = 0;
    bn_view_set_target_list (view, &zero, 1);
    ck_assert_int_eq (bn_view_execute (view, "x", &result), BN_ENOENGINE);
    ck_assert_ptr_null (result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_controller_vanishes)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 100", &result), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);
    bn_msg_destroy (&request);
    //  The controller goes while the call is outstanding: the wait ends
    //  with BN_ENOCONTROLLER well within its (long) timeout.
    double start = zclock_usecs () / 1e6;
    s_mock_vanish (mock);
    ck_assert_int_eq (bn_result_get (result, 30), BN_ENOCONTROLLER);
    ck_assert (zclock_usecs () / 1e6 - start < 10);
    ck_assert_int_eq (bn_result_status (result, 1), BN_ENOCONTROLLER);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    bn_result_destroy (&result);
    //  Later calls fail at once
    ck_assert_int_eq (bn_view_execute (view, "x", &result), BN_ENOCONTROLLER);
    ck_assert_int_eq (bn_client_wait_for_engines (client, 5, 30),
                      BN_ENOCONTROLLER);
    ck_assert_int_eq (bn_view_clear (view, 30), BN_ENOCONTROLLER);
    bn_queue_status_t *status;
    size_t count;
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 30, &status, &count, NULL),
        BN_ENOCONTROLLER);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_controller_shuts_down)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 100", &result), 0);
    s_mock_notify (mock, BN_MSG_SHUTDOWN_NOTIFICATION,
                   json_pack ("{s:s}", "status", "ok"));
    ck_assert_int_eq (bn_result_get (result, 5), BN_ENOCONTROLLER);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_bad_messages_dropped)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "x", &result), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);

    //  A reply signed with another key is dropped and counted
    bn_session_t *forger = bn_session_new ("forged-key", NULL);
    bn_msg_t *reply = bn_msg_new_reply (forger, request, BN_MSG_EXECUTE_REPLY);
    bn_msg_set_content (reply, s_ok ());
    bn_msg_send (&reply, zsock_resolve (mock->mux), forger);
    bn_session_destroy (&forger);
    //  A reply of a type the mux never carries, and one to no request
    reply = bn_msg_new_reply (mock->session, request, "comm_open");
    bn_msg_send (&reply, zsock_resolve (mock->mux), mock->session);
    reply = bn_msg_new (mock->session, BN_MSG_EXECUTE_REPLY);
    bn_msg_copy_idents (reply, request);
    bn_msg_set_content (reply, s_ok ());
    bn_msg_send (&reply, zsock_resolve (mock->mux), mock->session);
    //  A replayed reply: the real one, twice
    reply = bn_msg_new_reply (mock->session, request, BN_MSG_EXECUTE_REPLY);
    bn_msg_set_content (reply, json_pack ("{s:s}", "status", "error"));
    bn_msg_size (reply); //  serialises the parts, so the copy has them
    bn_msg_t *copy = bn_msg_dup (reply);
    bn_msg_send (&reply, zsock_resolve (mock->mux), mock->session);
    bn_msg_send (&copy, zsock_resolve (mock->mux), mock->session);
    ck_assert_int_eq (bn_result_get (result, 5), BN_EREMOTE);
    for (int i = 0; i < 200 && bn_client_dropped (client) < 4; i++)
        usleep (10000);
    ck_assert_uint_eq (bn_client_dropped (client), 4);
    bn_msg_destroy (&request);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_targets)
{
    s_mock_t *mock = s_mock_new (4);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_idset_t *set = bn_idset_parse ("1,3");
    ck_assert_int_eq (bn_view_set_targets (view, set), 0);
    bn_idset_destroy (&set);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "x", &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 1);
    ck_assert_int_eq (bn_result_engine_id (result, 1), 3);
    ck_assert_str_eq (bn_result_engine_uuid (result, 1), mock->uuids[3]);
    bn_result_destroy (&result);
    //  A list keeps its order and duplicates
    int ids[] = {2, 0, 2};
    ck_assert_int_eq (bn_view_set_target_list (view, ids, 3), 0);
    ck_assert_int_eq (bn_view_execute (view, "x", &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 3);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 2);
    ck_assert_int_eq (bn_result_engine_id (result, 1), 0);
    ck_assert_int_eq (bn_result_engine_id (result, 2), 2);
    //  Three requests were sent; all distinct msg_ids
    ck_assert_str_ne (bn_result_msg_id (result, 0),
                      bn_result_msg_id (result, 2));
    bn_result_destroy (&result);
    //  Unregistered targets, bad lists
    int missing[] = {0, 9};
    bn_view_set_target_list (view, missing, 2);
    ck_assert_int_eq (bn_view_execute (view, "x", &result), BN_ENOENGINE);
    int negative = -2;
    ck_assert_int_eq (bn_view_set_target_list (view, &negative, 1), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_target_list (view, NULL, 1), BN_EINVAL);
    bn_view_set_target_list (view, NULL, 0);
    ck_assert_int_eq (bn_view_execute (view, "x", &result), BN_ENOENGINE);
    //  Back to all engines
    ck_assert_int_eq (bn_view_set_targets (view, NULL), 0);
    ck_assert_int_eq (bn_view_execute (view, "x", &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 4);
    bn_result_destroy (&result);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), BN_EINVAL);
    ck_assert_ptr_null (bn_view_new (client, (bn_view_kind_t)7));
    ck_assert_ptr_null (bn_view_new (NULL, BN_VIEW_DIRECT));
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_no_engines)
{
    s_mock_t *mock = s_mock_new (0);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "x", &result), BN_ENOENGINE);
    //  A load-balanced task waits in the scheduler for an engine
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    ck_assert_int_eq (bn_view_apply (lb, "f", NULL, NULL, &result), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->task, BN_MSG_APPLY_REQUEST);
    bn_msg_destroy (&request);
    bn_result_destroy (&result);
    ck_assert_int_eq (bn_view_clear (view, 1), BN_ENOENGINE);
    bn_view_destroy (&lb);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_load_balanced)
{
    s_mock_t *mock = s_mock_new (3);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    bn_result_t *result;
    bn_value_t *args = s_args1 (bn_value_new_int (7));
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 1);
    ck_assert_int_eq (bn_result_engine_id (result, 0), -1);
    ck_assert_ptr_null (bn_result_engine_uuid (result, 0));
    bn_msg_t *request = s_mock_expect (mock, mock->task, BN_MSG_APPLY_REQUEST);
    //  No routing prefix; the Python LoadBalancedView's metadata
    ck_assert_uint_eq (bn_msg_nidents (request), 1);
    json_t *metadata = bn_msg_metadata (request);
    ck_assert_uint_eq (json_array_size (json_object_get (metadata, "targets")),
                       0);
    ck_assert_int_eq (
        json_integer_value (json_object_get (metadata, "retries")), 0);
    ck_assert_ptr_nonnull (json_object_get (metadata, "after"));
    ck_assert_ptr_nonnull (json_object_get (metadata, "follow"));
    ck_assert_ptr_nonnull (json_object_get (metadata, "timeout"));
    //  The scheduler picked engine 2
    bn_value_t *seven = bn_value_new_int (7);
    s_mock_run (mock, mock->task, request, 2, NULL, s_ok (), seven);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 2);
    ck_assert_str_eq (bn_result_engine_uuid (result, 0), mock->uuids[2]);
    ck_assert (bn_value_equal (bn_result_value (result, 0), seven));
    bn_result_destroy (&result);

    //  Targets become uuids in the metadata
    int ids[] = {0, 1};
    bn_view_set_target_list (view, ids, 2);
    ck_assert_int_eq (bn_view_execute (view, "hostname", &result), 0);
    request = s_mock_expect (mock, mock->task, BN_MSG_EXECUTE_REQUEST);
    json_t *targets = json_object_get (bn_msg_metadata (request), "targets");
    ck_assert_uint_eq (json_array_size (targets), 2);
    ck_assert_str_eq (json_string_value (json_array_get (targets, 1)),
                      mock->uuids[1]);
    //  A scheduler failure (no engine_info): complete without output
    s_mock_reply (mock, mock->task, request, -1, BN_MSG_APPLY_REPLY,
                  json_pack ("{s:s, s:s, s:s, s:[], s:{}}", "status", "error",
                             "ename", "ImpossibleDependency", "evalue",
                             "no engine", "traceback", "engine_info"),
                  NULL);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 0), "ImpossibleDependency");
    bn_result_destroy (&result);
    bn_value_destroy (&seven);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_broadcast)
{
    s_mock_t *mock = s_mock_new (3);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_value_t *args = s_args1 (bn_value_new_int (7));
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 3);
    bn_msg_t *request =
        s_mock_expect (mock, mock->broadcast, BN_MSG_APPLY_REQUEST);
    json_t *metadata = bn_msg_metadata (request);
    ck_assert (json_is_true (json_object_get (metadata, "is_broadcast")));
    ck_assert (json_is_false (json_object_get (metadata, "is_coalescing")));
    json_t *targets = json_object_get (metadata, "targets");
    ck_assert_uint_eq (json_array_size (targets), 3);
    ck_assert_str_eq (
        json_string_value (json_array_get (json_array_get (targets, 2), 0)),
        mock->uuids[2]);
    ck_assert_int_eq (
        json_integer_value (json_array_get (json_array_get (targets, 2), 1)),
        2);
    //  The tree sends each engine "<msg_id>_<uuid>"; each replies alone
    const char *original = bn_msg_id (request);
    bn_value_t *seven = bn_value_new_int (7);
    for (int engine = 0; engine < 3; engine++) {
        char sub_id[256];
        snprintf (sub_id, sizeof sub_id, "%s_%s", original,
                  mock->uuids[engine]);
        ck_assert_str_eq (bn_result_msg_id (result, (size_t)engine), sub_id);
        bn_msg_t *copy = bn_msg_dup (request);
        ck_assert_int_eq (bn_msg_set_msg_id (copy, sub_id), 0);
        s_mock_run (mock, mock->broadcast, copy, engine, NULL, s_ok (), seven);
        bn_msg_destroy (&copy);
    }
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    for (size_t i = 0; i < 3; i++)
        ck_assert (bn_value_equal (bn_result_value (result, i), seven));
    bn_result_destroy (&result);

    //  Coalescing: one reply carries every engine's result
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    request = s_mock_expect (mock, mock->broadcast, BN_MSG_APPLY_REQUEST);
    ck_assert (json_is_true (
        json_object_get (bn_msg_metadata (request), "is_coalescing")));
    original = bn_msg_id (request);
    for (int engine = 0; engine < 3; engine++) {
        char sub_id[256];
        snprintf (sub_id, sizeof sub_id, "%s_%s", original,
                  mock->uuids[engine]);
        bn_msg_t *copy = bn_msg_dup (request);
        bn_msg_set_msg_id (copy, sub_id);
        s_mock_status (mock, copy, engine, "busy");
        s_mock_status (mock, copy, engine, "idle");
        bn_msg_destroy (&copy);
    }
    char sub_id[256];
    snprintf (sub_id, sizeof sub_id, "%s_%s", original, mock->uuids[1]);
    bn_msg_t *last = bn_msg_dup (request);
    bn_msg_set_msg_id (last, sub_id);
    bn_msg_t *reply =
        bn_msg_new_reply (mock->session, last, BN_MSG_APPLY_REPLY);
    bn_msg_set_metadata (
        reply, json_pack ("{s:s, s:b, s:b, s:s, s:s, s:[[s,i],[s,i],[s,i]]}",
                          "engine", mock->uuids[1], "is_broadcast", 1,
                          "is_coalescing", 1, "original_msg_id", original,
                          "status", "ok", "broadcast_targets", mock->uuids[0],
                          0, mock->uuids[2], 2, mock->uuids[1], 1));
    bn_msg_set_content (reply, s_ok ());
    for (int i = 0; i < 3; i++) {
        bn_value_t *value = bn_value_new_int (100 + (i == 0   ? 0
                                                     : i == 1 ? 2
                                                              : 1));
        bn_serialize_object_add (reply, value);
        bn_value_destroy (&value);
    }
    bn_msg_send (&reply, zsock_resolve (mock->broadcast), mock->session);
    bn_msg_destroy (&last);
    bn_msg_destroy (&request);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq (bn_value_int (bn_result_value (result, i)),
                          100 + (int64_t)i);
    bn_result_destroy (&result);
    bn_value_destroy (&seven);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  -------------------------------------------------------------------
//  Broadcast replies of every shape the tree sends (doc/broadcast.md), built by
//  hand: the tree itself is not needed to check how they are decoded.

//  An EngineError as a tree node makes it for an engine that did not
//  answer (no engine_info: no output will follow).
static json_t *
s_tree_error (const char *evalue)
{
    return json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                      "EngineError", "evalue", evalue, "traceback");
}

//  Start an apply of echo on a broadcast view of mock's engines and
//  return the request the root received.
static bn_msg_t *
s_bcast_start (s_mock_t *mock, bn_view_t *view, bn_result_t **result)
{
    bn_value_t *args = s_args1 (bn_value_new_int (1));
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, result), 0);
    bn_value_destroy (&args);
    return s_mock_expect (mock, mock->broadcast, BN_MSG_APPLY_REQUEST);
}

//  Send a merged reply of type to request (as the last reply the node
//  got, engine's), with extra metadata keys (taken), content (taken) and
//  the values (borrowed; NULL entries: a pickled None) as buffers.
static void
s_bcast_merged (s_mock_t *mock, bn_msg_t *request, const char *type, int engine,
                json_t *extra, json_t *content, bn_value_t **values,
                size_t nvalues)
{
    char sub_id[256];
    snprintf (sub_id, sizeof sub_id, "%s_%s", bn_msg_id (request),
              mock->uuids[engine]);
    bn_msg_t *last = bn_msg_dup (request);
    ck_assert_int_eq (bn_msg_set_msg_id (last, sub_id), 0);
    bn_msg_t *reply = bn_msg_new_reply (mock->session, last, type);
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    json_t *metadata =
        json_pack ("{s:s, s:s, s:b, s:b, s:s, s:s}", "started", date, "engine",
                   mock->uuids[engine], "is_broadcast", 1, "is_coalescing", 1,
                   "original_msg_id", bn_msg_id (request), "status",
                   json_string_value (json_object_get (content, "status")));
    json_object_update (metadata, extra);
    json_decref (extra);
    bn_msg_set_metadata (reply, metadata);
    bn_msg_set_content (reply, content);
    bn_value_t *none = bn_value_new_none ();
    for (size_t i = 0; i < nvalues; i++)
        ck_assert_int_eq (
            bn_serialize_object_add (reply, values[i] ? values[i] : none), 0);
    bn_value_destroy (&none);
    ck_assert_int_eq (
        bn_msg_send (&reply, zsock_resolve (mock->broadcast), mock->session),
        0);
    bn_msg_destroy (&last);
}

//  [uuid, id] pairs of engines ids (count of them).
static json_t *
s_bcast_targets (s_mock_t *mock, const int *ids, size_t count)
{
    json_t *targets = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (
            targets, json_pack ("[s,i]", mock->uuids[ids[i]], ids[i]));
    return targets;
}

START_TEST (test_broadcast_options)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    //  Only broadcast views take them
    ck_assert_int_eq (bn_view_set_levels (direct, levels, 2), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_release (direct, BN_RELEASE_NONE, 0),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_set_group (direct, true), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_reduce (direct, "sum"), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_deadline_ms (direct, 10), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_timestamps (direct, true), BN_EINVAL);
    bn_view_t *balanced = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    ck_assert_int_eq (bn_view_set_output_in_reply (balanced, true), BN_EINVAL);
    bn_view_destroy (&balanced);
    //  Bad arguments
    ck_assert_int_eq (bn_view_set_levels (view, NULL, 2), BN_EINVAL);
    bn_level_t bad = (bn_level_t)7;
    ck_assert_int_eq (bn_view_set_levels (view, &bad, 1), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_release (view, BN_RELEASE_WINDOW, 0),
                      BN_EINVAL);
    ck_assert_int_eq (bn_view_set_reduce (view, "avg"), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_reduce (view, ":x"), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_reduce (view, "p:"), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_reduce (view, "p:a b"), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_deadline_ms (view, -1), BN_EINVAL);

    //  By default the request is exactly the stock one
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    json_t *metadata = bn_msg_metadata (request);
    ck_assert_uint_eq (json_object_size (metadata), 3);
    bn_msg_destroy (&request);
    bn_result_destroy (&result);

    ck_assert_int_eq (bn_view_set_levels (view, levels, 2), 0);
    ck_assert_int_eq (bn_view_set_release (view, BN_RELEASE_WINDOW, 250), 0);
    ck_assert_int_eq (bn_view_set_group (view, true), 0);
    ck_assert_int_eq (bn_view_set_reduce (view, "stats:mean"), 0);
    ck_assert_int_eq (bn_view_set_deadline_ms (view, 1500), 0);
    ck_assert_int_eq (bn_view_set_timestamps (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    request = s_bcast_start (mock, view, &result);
    metadata = bn_msg_metadata (request);
    json_t *copy = json_deep_copy (metadata);
    json_object_del (copy, "targets");
    char *text = json_dumps (copy, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq (text,
                      "{\"bn_deadline_ms\":1500,\"bn_group\":true,"
                      "\"bn_levels\":[\"forward\",\"merge\"],"
                      "\"bn_output\":\"reply\",\"bn_reduce\":\"stats:mean\","
                      "\"bn_release\":\"window\",\"bn_timestamps\":true,"
                      "\"bn_window_ms\":250,\"is_broadcast\":true,"
                      "\"is_coalescing\":false}");
    json_decref (copy);
    free (text);
    ck_assert_str_eq (
        json_string_value (json_object_get (metadata, "bn_release")), "window");
    bn_msg_destroy (&request);
    bn_result_destroy (&result);

    //  Coalescing with output in the reply and no levels: merged through
    //  bn_levels, so that a stock tree forwards each reply with its output
    ck_assert_int_eq (bn_view_set_levels (view, NULL, 0), 0);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    request = s_bcast_start (mock, view, &result);
    metadata = bn_msg_metadata (request);
    ck_assert (json_is_false (json_object_get (metadata, "is_coalescing")));
    text = json_dumps (json_object_get (metadata, "bn_levels"), JSON_COMPACT);
    ck_assert_str_eq (text, "[\"merge\"]");
    free (text);
    bn_msg_destroy (&request);
    bn_result_destroy (&result);
    //  Without output in the reply, the stock coalescing request
    ck_assert_int_eq (bn_view_set_output_in_reply (view, false), 0);
    request = s_bcast_start (mock, view, &result);
    metadata = bn_msg_metadata (request);
    ck_assert (json_is_true (json_object_get (metadata, "is_coalescing")));
    ck_assert_ptr_null (json_object_get (metadata, "bn_levels"));
    bn_msg_destroy (&request);
    bn_result_destroy (&result);
    ck_assert_int_eq (bn_view_set_coalescing (view, false), 0);

    //  And back to the defaults
    ck_assert_int_eq (bn_view_set_levels (view, NULL, 0), 0);
    ck_assert_int_eq (bn_view_set_release (view, BN_RELEASE_NONE, 0), 0);
    ck_assert_int_eq (bn_view_set_group (view, false), 0);
    ck_assert_int_eq (bn_view_set_reduce (view, NULL), 0);
    ck_assert_int_eq (bn_view_set_deadline_ms (view, 0), 0);
    ck_assert_int_eq (bn_view_set_timestamps (view, false), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, false), 0);
    request = s_bcast_start (mock, view, &result);
    metadata = bn_msg_metadata (request);
    ck_assert_uint_eq (json_object_size (metadata), 4);
    ck_assert_str_eq (
        json_string_value (json_object_get (metadata, "bn_release")), "none");
    bn_msg_destroy (&request);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_view_destroy (&direct);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  bn_replies: each engine's status, output and buffer count; a failed
//  engine's pickled None keeps the buffers aligned.
START_TEST (test_broadcast_bn_replies)
{
    s_mock_t *mock = s_mock_new (3);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    //  Engine 2's result is large bytes: two buffers of its own
    char big[3000];
    memset (big, 'b', sizeof big);
    bn_value_t *values[3] = {bn_value_new_int (10), NULL,
                             bn_value_new_bytes (big, sizeof big)};
    int order[] = {0, 1, 2};
    json_t *failure = s_engine_error (mock, 1, "CalledProcessError", "boom");
    json_object_set_new (failure, "returncode", json_integer (3));
    json_t *replies = json_pack (
        "[{s:s, s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:O, s:s, s:s},"
        " {s:s, s:i, s:s}]",
        "status", "ok", "started", "2026-01-01T00:00:00.000001Z", "completed",
        "2026-01-01T00:00:01.000001Z", "nbuffers", 1, "bn_stdout", "zero\n",
        "bn_stderr", "", "status", "error", "completed",
        "2026-01-01T00:00:02.000001Z", "nbuffers", 1, "content", failure,
        "bn_stdout", "partial\n", "bn_stderr", "oops\n", "status", "ok",
        "nbuffers", 2, "bn_stdout", "");
    json_t *content = json_deep_copy (failure);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 2,
                    json_pack ("{s:o, s:o}", "broadcast_targets",
                               s_bcast_targets (mock, order, 3), "bn_replies",
                               replies),
                    content, values, 3);
    //  No iopub at all: the output came in the reply
    ck_assert_int_eq (bn_result_wait (result, 5), 0);
    ck_assert_uint_eq (bn_result_messages (result), 1);
    ck_assert_int_eq (bn_result_status (result, 0), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 0)), 10);
    ck_assert_str_eq (bn_result_stdout (result, 0), "zero\n");
    ck_assert_str_eq (bn_result_started (result, 0),
                      "2026-01-01T00:00:00.000001Z");
    ck_assert_str_eq (bn_result_completed (result, 0),
                      "2026-01-01T00:00:01.000001Z");
    ck_assert_int_eq (bn_result_status (result, 1), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 1), "CalledProcessError");
    ck_assert_str_eq (bn_result_evalue (result, 1), "boom");
    ck_assert_ptr_null (bn_result_value (result, 1));
    ck_assert_str_eq (bn_result_stdout (result, 1), "partial\n");
    ck_assert_str_eq (bn_result_stderr (result, 1), "oops\n");
    ck_assert_ptr_nonnull (
        strstr (bn_result_content (result, 1), "\"returncode\":3"));
    ck_assert_int_eq (bn_result_status (result, 2), 0);
    ck_assert (bn_value_equal (bn_result_value (result, 2), values[2]));
    ck_assert_int_eq (bn_result_engine_id (result, 2), 2);
    ck_assert_int_eq (bn_result_get (result, 0), BN_EREMOTE);
    ck_assert_uint_eq (bn_result_group_count (result), 0);
    ck_assert_ptr_null (bn_result_reduced (result));
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    //  The same without nbuffers: results are decoded one after the other
    //  (as the Python client does) and a failure takes its one buffer.
    //  Output is not asked for in the reply: it comes on iopub.
    ck_assert_int_eq (bn_view_set_output_in_reply (view, false), 0);
    request = s_bcast_start (mock, view, &result);
    replies =
        json_pack ("[{s:s}, {s:s, s:o}, {s:s}]", "status", "ok", "status",
                   "error", "content", s_tree_error ("gone"), "status", "ok");
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:o, s:o}", "broadcast_targets",
                               s_bcast_targets (mock, order, 3), "bn_replies",
                               replies),
                    s_tree_error ("gone"), values, 3);
    //  No output in these replies: items wait for the engines' idle
    ck_assert_int_eq (bn_result_wait (result, 0.1), BN_ETIMEDOUT);
    ck_assert_int_eq (bn_result_status (result, 1), BN_EENGINEDIED);
    char sub_id[256];
    for (int engine = 0; engine < 3; engine += 2) {
        snprintf (sub_id, sizeof sub_id, "%s_%s", bn_msg_id (request),
                  mock->uuids[engine]);
        bn_msg_t *copy = bn_msg_dup (request);
        bn_msg_set_msg_id (copy, sub_id);
        s_mock_stream (mock, copy, engine, "stdout", "iopub\n");
        s_mock_status (mock, copy, engine, "idle");
        bn_msg_destroy (&copy);
    }
    ck_assert_int_eq (bn_result_get (result, 5), BN_EENGINEDIED);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 0)), 10);
    ck_assert (bn_value_equal (bn_result_value (result, 2), values[2]));
    ck_assert_str_eq (bn_result_stdout (result, 2), "iopub\n");
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    //  A 7.1.0 leaf at depth 0 lists bare uuids
    request = s_bcast_start (mock, view, &result);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 1,
                    json_pack ("{s:[s,s,s]}", "broadcast_targets",
                               mock->uuids[1], mock->uuids[0], mock->uuids[2]),
                    s_ok (), values, 1);
    ck_assert_int_eq (bn_result_wait (result, 0.1), BN_ETIMEDOUT);
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    for (int i = 0; i < 3; i++)
        bn_value_destroy (&values[i]);
    json_decref (failure);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  Execute replies merged, and per-hop timestamps
START_TEST (test_broadcast_execute_and_hops)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_timestamps (view, true), 0);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "hostname", &result), 0);
    bn_msg_t *request =
        s_mock_expect (mock, mock->broadcast, BN_MSG_EXECUTE_REQUEST);
    int order[] = {1, 0};
    json_t *failure = s_engine_error (mock, 0, "CalledProcessError", "exit 2");
    json_object_set_new (failure, "returncode", json_integer (2));
    s_bcast_merged (
        mock, request, BN_MSG_EXECUTE_REPLY, 1,
        json_pack ("{s:o, s:[{s:s, s:i, s:s, s:s}, {s:s, s:i, s:o, s:s}],"
                   " s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
                   "broadcast_targets", s_bcast_targets (mock, order, 2),
                   "bn_replies", "status", "ok", "nbuffers", 0, "bn_stdout",
                   "host1\n", "bn_stderr", "", "status", "error", "nbuffers", 0,
                   "content", json_deep_copy (failure), "bn_stdout", "host0\n",
                   "bn_hops", "node", "sub_scheduler_00", "received",
                   "2026-01-01T00:00:00.000001Z", "sent",
                   "2026-01-01T00:00:00.000300Z", "node", "sub_scheduler_0",
                   "received", "2026-01-01T00:00:00.000000Z", "sent",
                   "2026-01-01T00:00:00.000400Z"),
        failure, NULL, 0);
    ck_assert_int_eq (bn_result_get (result, 5), BN_EREMOTE);
    ck_assert_str_eq (bn_result_stdout (result, 0), "host0\n");
    ck_assert_str_eq (bn_result_stdout (result, 1), "host1\n");
    ck_assert_int_eq (bn_result_status (result, 1), 0);
    ck_assert_str_eq (bn_result_ename (result, 0), "CalledProcessError");
    ck_assert_uint_eq (bn_result_hop_count (result, 0), 2);
    const char *node, *received, *sent;
    ck_assert_int_eq (bn_result_hop (result, 1, 0, &node, &received, &sent), 0);
    ck_assert_str_eq (node, "sub_scheduler_00");
    ck_assert_str_eq (received, "2026-01-01T00:00:00.000001Z");
    ck_assert_str_eq (sent, "2026-01-01T00:00:00.000300Z");
    ck_assert_int_eq (bn_result_hop (result, 1, 1, &node, NULL, NULL), 0);
    ck_assert_str_eq (node, "sub_scheduler_0");
    ck_assert_int_eq (bn_result_hop (result, 1, 2, &node, NULL, NULL),
                      BN_EINVAL);
    bn_result_destroy (&result);
    bn_msg_destroy (&request);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  A merged reply in 7.1.0's shape (broadcast_targets only): its entries
//  take the message's start time and original_msg_id, read from the text,
//  or through the tree for a value longer than the client's room for it.
START_TEST (test_broadcast_stock_merged)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    const char *starts[] = {"2026-01-01T00:00:00.000001Z",
                            "2026-01-01T00:00:00.000001Z and then some more "
                            "words, past the sixty-four bytes kept"};
    for (int i = 0; i < 2; i++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_execute (view, "true", &result), 0);
        bn_msg_t *request =
            s_mock_expect (mock, mock->broadcast, BN_MSG_EXECUTE_REQUEST);
        int order[] = {1, 0};
        s_bcast_merged (mock, request, BN_MSG_EXECUTE_REPLY, 1,
                        json_pack ("{s:o, s:s}", "broadcast_targets",
                                   s_bcast_targets (mock, order, 2), "started",
                                   starts[i]),
                        json_pack ("{s:s}", "status", "ok"), NULL, 0);
        ck_assert_int_eq (bn_result_get (result, 5), 0);
        ck_assert_str_eq (bn_result_started (result, 0), starts[i]);
        ck_assert_str_eq (bn_result_started (result, 1), starts[i]);
        bn_result_destroy (&result);
        bn_msg_destroy (&request);
    }
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  Partial messages: a window release, or a forwarding root above merging
//  leaves, completes items batch by batch, and bn_result_next streams.
START_TEST (test_broadcast_partial_messages)
{
    s_mock_t *mock = s_mock_new (4);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    ck_assert_int_eq (bn_view_set_levels (view, levels, 2), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    //  is_coalescing is false: the merged keys alone say what it is
    ck_assert (json_is_false (
        json_object_get (bn_msg_metadata (request), "is_coalescing")));
    bn_value_t *values[2] = {bn_value_new_int (1), bn_value_new_int (3)};
    int leaf1[] = {1, 3};
    json_t *ok2 = json_pack ("[{s:s, s:i, s:s}, {s:s, s:i, s:s}]", "status",
                             "ok", "nbuffers", 1, "bn_stdout", "", "status",
                             "ok", "nbuffers", 1, "bn_stdout", "");
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 3,
                    json_pack ("{s:o, s:O, s:b, s:b}", "broadcast_targets",
                               s_bcast_targets (mock, leaf1, 2), "bn_replies",
                               ok2, "bn_partial", 0, "is_coalescing", 0),
                    s_ok (), values, 2);
    ck_assert_int_eq (bn_result_next (result, 5), 1);
    ck_assert_int_eq (bn_result_next (result, 5), 3);
    ck_assert_int_eq (bn_result_next (result, 0), BN_ETIMEDOUT);
    ck_assert_uint_eq (bn_result_progress (result), 2);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 3)), 3);
    //  The other leaf's window: engine 2 first, then engine 0
    int first[] = {2};
    bn_value_destroy (&values[0]);
    values[0] = bn_value_new_int (2);
    json_t *ok1 = json_pack ("[{s:s, s:i, s:s}]", "status", "ok", "nbuffers", 1,
                             "bn_stdout", "");
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 2,
                    json_pack ("{s:o, s:O, s:b}", "broadcast_targets",
                               s_bcast_targets (mock, first, 1), "bn_replies",
                               ok1, "bn_partial", 1),
                    s_ok (), values, 1);
    ck_assert_int_eq (bn_result_next (result, 5), 2);
    ck_assert (!bn_result_ready (result));
    int last[] = {0};
    bn_value_destroy (&values[0]);
    values[0] = bn_value_new_int (0);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:o, s:O, s:b}", "broadcast_targets",
                               s_bcast_targets (mock, last, 1), "bn_replies",
                               ok1, "bn_partial", 0),
                    s_ok (), values, 1);
    ck_assert_int_eq (bn_result_next (result, 5), 0);
    ck_assert_int_eq (bn_result_next (result, 5), BN_ENOENT);
    ck_assert_int_eq (bn_result_get (result, 0), 0);
    ck_assert_uint_eq (bn_result_messages (result), 3);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), i);
    json_decref (ok1);
    json_decref (ok2);
    bn_value_destroy (&values[0]);
    bn_value_destroy (&values[1]);
    bn_result_destroy (&result);
    bn_msg_destroy (&request);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  bn_groups: one entry per set of engines with identical replies
START_TEST (test_broadcast_groups)
{
    s_mock_t *mock = s_mock_new (5);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    ck_assert_int_eq (bn_view_set_coalescing (view, true), 0);
    ck_assert_int_eq (bn_view_set_group (view, true), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    ck_assert (
        json_is_true (json_object_get (bn_msg_metadata (request), "bn_group")));
    bn_value_t *values[2] = {bn_value_new_str ("same"), NULL};
    json_t *failure = s_engine_error (mock, 1, "ValueError", "bad");
    s_bcast_merged (
        mock, request, BN_MSG_APPLY_REPLY, 4,
        json_pack ("{s:[{s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:O,"
                   " s:s, s:s}]}",
                   "bn_groups", "engines", "0,2-4", "status", "ok", "nbuffers",
                   1, "bn_stdout", "hello\n", "bn_stderr", "", "engines", "1",
                   "status", "error", "nbuffers", 1, "content", failure,
                   "bn_stdout", "", "bn_stderr", "trace\n"),
        json_deep_copy (failure), values, 2);
    ck_assert_int_eq (bn_result_get (result, 5), BN_EREMOTE);
    ck_assert_uint_eq (bn_result_messages (result), 1);
    ck_assert_uint_eq (bn_result_group_count (result), 2);
    char *text = bn_idset_encode (bn_result_group_engines (result, 0));
    ck_assert_str_eq (text, "0,2-4");
    free (text);
    text = bn_idset_encode (bn_result_group_engines (result, 1));
    ck_assert_str_eq (text, "1");
    free (text);
    ck_assert_ptr_null (bn_result_group_engines (result, 2));
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq (bn_result_engine_id (result, i), i);
        if (i == 1) {
            ck_assert_int_eq (bn_result_group_of (result, 1), 1);
            ck_assert_int_eq (bn_result_status (result, 1), BN_EREMOTE);
            ck_assert_str_eq (bn_result_ename (result, 1), "ValueError");
            ck_assert_str_eq (bn_result_stderr (result, 1), "trace\n");
            continue;
        }
        ck_assert_int_eq (bn_result_group_of (result, i), 0);
        ck_assert_int_eq (bn_result_status (result, i), 0);
        ck_assert (bn_value_equal (bn_result_value (result, i), values[0]));
        ck_assert_str_eq (bn_result_stdout (result, i), "hello\n");
    }
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    //  Entries with bad engine sets are dropped and counted
    request = s_bcast_start (mock, view, &result);
    size_t dropped = bn_client_dropped (client);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:[{s:s, s:s, s:i}, {s:i, s:i},"
                               " {s:s, s:s, s:i}]}",
                               "bn_groups", "engines", "x-y", "status", "ok",
                               "nbuffers", 1, "engines", 3, "nbuffers", 0,
                               "engines", "0-4", "status", "ok", "nbuffers", 1),
                    s_ok (), values, 1);
    //  Output was asked for in the reply: a group without it had none
    ck_assert_int_eq (bn_result_wait (result, 5), 0);
    ck_assert_uint_eq (bn_client_dropped (client), dropped + 2);
    ck_assert_uint_eq (bn_result_group_count (result), 1);
    //  Every engine got the value of its own group's buffers
    ck_assert_ptr_null (bn_result_value (result, 0));
    ck_assert_int_eq (bn_result_status (result, 0), BN_EPICKLE);
    ck_assert_str_eq (bn_result_stdout (result, 4), "");
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    bn_value_destroy (&values[0]);
    json_decref (failure);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  bn_reduced: a value per merged message, combined by the client; the
//  failed engines' items carry their errors.
START_TEST (test_broadcast_reduced)
{
    s_mock_t *mock = s_mock_new (4);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    ck_assert_int_eq (bn_view_set_levels (view, levels, 2), 0);
    ck_assert_int_eq (bn_view_set_reduce (view, "sum"), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    ck_assert_str_eq (json_string_value (json_object_get (
                          bn_msg_metadata (request), "bn_reduce")),
                      "sum");
    bn_value_t *value = bn_value_new_int (10);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 2,
                    json_pack ("{s:{s:s, s:s, s:[]}}", "bn_reduced", "op",
                               "sum", "engines", "0,2", "failed"),
                    s_ok (), &value, 1);
    ck_assert_int_eq (bn_result_next (result, 5), 0);
    ck_assert_int_eq (bn_result_next (result, 5), 2);
    ck_assert_ptr_null (bn_result_reduced (result));
    bn_value_destroy (&value);
    value = bn_value_new_float (5.5);
    json_t *gone = json_pack (
        "{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "EngineError",
        "evalue", "no reply from engine 3 within the deadline", "traceback");
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 1,
                    json_pack ("{s:{s:s, s:s, s:[{s:s, s:O}]}}", "bn_reduced",
                               "op", "sum", "engines", "1", "failed", "engines",
                               "3", "content", gone),
                    s_ok (), &value, 1);
    ck_assert_int_eq (bn_result_get (result, 5), BN_EENGINEDIED);
    ck_assert_int_eq (bn_result_status (result, 1), 0);
    ck_assert_ptr_null (bn_result_value (result, 1));
    ck_assert_str_eq (bn_result_evalue (result, 3),
                      "no reply from engine 3 within the deadline");
    ck_assert_str_eq (bn_result_reduced_op (result), "sum");
    ck_assert_uint_eq (bn_result_reduced_count (result), 2);
    ck_assert_int_eq (bn_value_int (bn_result_reduced_part (result, 0)), 10);
    ck_assert_ptr_null (bn_result_reduced_part (result, 2));
    ck_assert_double_eq (bn_value_float (bn_result_reduced (result)), 15.5);
    char *text = bn_idset_encode (bn_result_reduced_engines (result));
    ck_assert_str_eq (text, "0-2");
    free (text);
    text = bn_idset_encode (bn_result_reduced_failed (result));
    ck_assert_str_eq (text, "3");
    free (text);
    ck_assert_uint_eq (bn_result_messages (result), 2);
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    //  A plugin's partial results are not combined here
    ck_assert_int_eq (bn_view_set_reduce (view, "stats:median"), 0);
    request = s_bcast_start (mock, view, &result);
    bn_value_destroy (&value);
    value = bn_value_new_int (7);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:{s:s, s:s}}", "bn_reduced", "op",
                               "stats:median", "engines", "0-1"),
                    s_ok (), &value, 1);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 2,
                    json_pack ("{s:{s:s, s:s}}", "bn_reduced", "op",
                               "stats:median", "engines", "2-3"),
                    s_ok (), &value, 1);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_uint_eq (bn_result_reduced_count (result), 2);
    ck_assert_ptr_null (bn_result_reduced (result));
    bn_result_destroy (&result);
    bn_msg_destroy (&request);
    //  One message: its value is the result, whatever the op
    request = s_bcast_start (mock, view, &result);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:{s:s, s:s}}", "bn_reduced", "op",
                               "stats:median", "engines", "0-3"),
                    s_ok (), &value, 1);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_int_eq (bn_value_int (bn_result_reduced (result)), 7);
    bn_result_destroy (&result);
    bn_msg_destroy (&request);

    bn_value_destroy (&value);
    json_decref (gone);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  The value the client reduces from two merged messages carrying a and
//  b (borrowed) in that order, one per engine, as Python's repr.
static char *
s_client_reduces (s_mock_t *mock, bn_view_t *view, bn_value_t *a, bn_value_t *b)
{
    bn_result_t *result;
    bn_msg_t *request = s_bcast_start (mock, view, &result);
    const char *op = json_string_value (
        json_object_get (bn_msg_metadata (request), "bn_reduce"));
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 0,
                    json_pack ("{s:{s:s, s:s, s:[]}}", "bn_reduced", "op", op,
                               "engines", "0", "failed"),
                    s_ok (), &a, 1);
    s_bcast_merged (mock, request, BN_MSG_APPLY_REPLY, 1,
                    json_pack ("{s:{s:s, s:s, s:[]}}", "bn_reduced", "op", op,
                               "engines", "1", "failed"),
                    s_ok (), &b, 1);
    ck_assert_int_eq (bn_result_get (result, 5), 0);
    ck_assert_uint_eq (bn_result_reduced_count (result), 2);
    const bn_value_t *reduced = bn_result_reduced (result);
    char *repr = reduced ? bn_value_repr (reduced) : strdup ("(none)");
    bn_result_destroy (&result);
    bn_msg_destroy (&request);
    return repr;
}

//  The client combines forwarded partial reductions as the tree does:
//  the same answer whichever arrives first, a NaN never chosen over a
//  number, the int kept on a tie, ints past 2^53 compared exactly.
START_TEST (test_broadcast_reduced_order)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_level_t levels[] = {BN_LEVEL_FORWARD, BN_LEVEL_MERGE};
    ck_assert_int_eq (bn_view_set_levels (view, levels, 2), 0);
    ck_assert_int_eq (bn_view_set_output_in_reply (view, true), 0);
    for (size_t i = 0; i < BN_REDUCTION_NCASES; i++) {
        const bn_reduction_case_t *c = &bn_reduction_cases[i];
        bn_value_t *a = bn_case_value (c->a), *b = bn_case_value (c->b);
        ck_assert_int_eq (bn_view_set_reduce (view, c->op), 0);
        char *forward = s_client_reduces (mock, view, a, b);
        char *backward = s_client_reduces (mock, view, b, a);
        const char *expected = c->expected ? c->expected : "(none)";
        ck_assert_msg (strcmp (forward, expected) == 0 &&
                           strcmp (backward, expected) == 0,
                       "case %zu, %s: %s one way, %s the other, not %s", i,
                       c->op, forward, backward, expected);
        free (forward);
        free (backward);
        bn_value_destroy (&a);
        bn_value_destroy (&b);
    }
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  Answer n control requests of type on the mock's control socket.
static void
s_mock_control (s_mock_t *self, const char *type, int n, json_t **contents)
{
    for (int i = 0; i < n; i++) {
        bn_msg_t *request = s_mock_expect (self, self->control, type);
        if (contents)
            contents[i] = json_incref (bn_msg_content (request));
        char reply_type[64];
        snprintf (reply_type, sizeof reply_type, "%.*s_reply",
                  (int)(strlen (type) - strlen ("_request")), type);
        s_mock_reply (self, self->control, request,
                      s_mock_engine_of (self, request), reply_type, s_ok (),
                      NULL);
        bn_msg_destroy (&request);
    }
}

typedef struct {
    bn_view_t *view;
    bn_result_t *result;
    int op;
    int rc;
} s_call_t;

static void *
s_call_main (void *arg)
{
    s_call_t *call = arg;
    call->rc = call->op == 0   ? bn_view_abort (call->view, call->result, 5)
               : call->op == 1 ? bn_view_clear (call->view, 5)
                               : bn_view_shutdown (call->view, 5);
    return NULL;
}

static int
s_call_control (s_mock_t *mock, bn_view_t *view, bn_result_t *result, int op,
                const char *type, int n, json_t **contents)
{
    s_call_t call = {view, result, op, 0};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_call_main, &call), 0);
    s_mock_control (mock, type, n, contents);
    pthread_join (thread, NULL);
    return call.rc;
}

START_TEST (test_abort_clear_shutdown)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 1", &result), 0);
    bn_msg_t *requests[2];
    for (int i = 0; i < 2; i++)
        requests[i] = s_mock_expect (mock, mock->mux, BN_MSG_EXECUTE_REQUEST);

    //  Abort this result's requests: each engine is told of its own
    json_t *contents[2];
    ck_assert_int_eq (s_call_control (mock, view, result, 0,
                                      BN_MSG_ABORT_REQUEST, 2, contents),
                      0);
    bool named[2] = {false, false};
    for (int i = 0; i < 2; i++) {
        json_t *ids = json_object_get (contents[i], "msg_ids");
        ck_assert_uint_eq (json_array_size (ids), 1);
        const char *id = json_string_value (json_array_get (ids, 0));
        for (size_t item = 0; item < 2; item++)
            if (strcmp (id, bn_result_msg_id (result, item)) == 0)
                named[item] = true;
        json_decref (contents[i]);
    }
    ck_assert (named[0] && named[1]);
    //  Without a result: every outstanding shell request of the client
    ck_assert_int_eq (
        s_call_control (mock, view, NULL, 0, BN_MSG_ABORT_REQUEST, 2, contents),
        0);
    ck_assert_uint_eq (
        json_array_size (json_object_get (contents[0], "msg_ids")), 2);
    json_decref (contents[0]);
    json_decref (contents[1]);
    for (int i = 0; i < 2; i++) {
        int engine = s_mock_engine_of (mock, requests[i]);
        s_mock_reply (mock, mock->mux, requests[i], engine,
                      BN_MSG_EXECUTE_REPLY,
                      json_pack ("{s:s}", "status", "aborted"), NULL);
        bn_msg_destroy (&requests[i]);
    }
    ck_assert_int_eq (bn_result_get (result, 5), BN_EABORTED);
    bn_result_destroy (&result);

    //  Clear
    ck_assert_int_eq (
        s_call_control (mock, view, NULL, 1, BN_MSG_CLEAR_REQUEST, 2, NULL), 0);
    //  A control request nobody answers times out
    double start = zclock_usecs () / 1e6;
    ck_assert_int_eq (bn_view_clear (view, 0.2), BN_ETIMEDOUT);
    ck_assert (zclock_usecs () / 1e6 - start < 3);
    bn_msg_t *ignored = s_mock_recv (mock, mock->control, 5000);
    bn_msg_destroy (&ignored);
    ignored = s_mock_recv (mock, mock->control, 5000);
    bn_msg_destroy (&ignored);

    //  Shutdown of engine 1: it replies; engine 0: it unregisters
    //  instead, which counts as done too
    s_call_t call = {view, NULL, 2, 0};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_call_main, &call), 0);
    for (int i = 0; i < 2; i++) {
        bn_msg_t *request =
            s_mock_expect (mock, mock->control, BN_MSG_SHUTDOWN_REQUEST);
        ck_assert (json_is_false (
            json_object_get (bn_msg_content (request), "restart")));
        int engine = s_mock_engine_of (mock, request);
        if (engine == 1)
            s_mock_reply (mock, mock->control, request, 1,
                          BN_MSG_SHUTDOWN_REPLY, s_ok (), NULL);
        else
            s_mock_notify (
                mock, BN_MSG_UNREGISTRATION_NOTIFICATION,
                json_pack ("{s:i, s:s}", "id", 0, "uuid", mock->uuids[0]));
        bn_msg_destroy (&request);
    }
    pthread_join (thread, NULL);
    ck_assert_int_eq (call.rc, 0);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

typedef struct {
    bn_client_t *client;
    bool hub;
    int rc;
} s_shutdown_t;

static void *
s_shutdown_main (void *arg)
{
    s_shutdown_t *call = arg;
    call->rc = bn_client_shutdown (call->client, call->hub, 5);
    return NULL;
}

START_TEST (test_client_shutdown)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    s_shutdown_t call = {client, true, -100};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_shutdown_main, &call),
                      0);
    s_mock_control (mock, BN_MSG_SHUTDOWN_REQUEST, 1, NULL);
    bn_msg_t *request =
        s_mock_expect (mock, mock->query, BN_MSG_SHUTDOWN_REQUEST);
    //  The notification may overtake the reply: still a success
    s_mock_notify (mock, BN_MSG_SHUTDOWN_NOTIFICATION,
                   json_pack ("{s:s}", "status", "ok"));
    s_mock_reply (mock, mock->query, request, -1, BN_MSG_SHUTDOWN_REPLY,
                  s_ok (), NULL);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
    ck_assert_int_eq (call.rc, 0);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

typedef struct {
    bn_client_t *client;
    bn_idset_t *targets;
    int rc;
    bn_queue_status_t *status;
    size_t count;
    int unassigned;
} s_queue_t;

static void *
s_queue_main (void *arg)
{
    s_queue_t *call = arg;
    call->rc =
        bn_client_queue_status (call->client, call->targets, 5, &call->status,
                                &call->count, &call->unassigned);
    return NULL;
}

START_TEST (test_queue_status)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    s_queue_t call = {client, NULL, -100, NULL, 0, -1};
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_queue_main, &call), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->query, BN_MSG_QUEUE_REQUEST);
    ck_assert (
        json_is_null (json_object_get (bn_msg_content (request), "targets")));
    s_mock_reply (mock, mock->query, request, -1, BN_MSG_QUEUE_REPLY,
                  json_pack ("{s:s, s:{s:i, s:i, s:i}, s:{s:i, s:i, s:i}, "
                             "s:i}",
                             "status", "ok", "1", "queue", 2, "completed", 5,
                             "tasks", 1, "0", "queue", 0, "completed", 7,
                             "tasks", 0, "unassigned", 3),
                  NULL);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
    ck_assert_int_eq (call.rc, 0);
    ck_assert_uint_eq (call.count, 2);
    ck_assert_int_eq (call.unassigned, 3);
    ck_assert_int_eq (call.status[0].engine_id, 0);
    ck_assert_int_eq (call.status[0].completed, 7);
    ck_assert_int_eq (call.status[1].engine_id, 1);
    ck_assert_int_eq (call.status[1].queue, 2);
    ck_assert_int_eq (call.status[1].tasks, 1);
    free (call.status);

    //  Targets, and the hub's IndexError for an unknown one
    call.targets = bn_idset_parse ("0,9");
    ck_assert_int_eq (pthread_create (&thread, NULL, s_queue_main, &call), 0);
    request = s_mock_expect (mock, mock->query, BN_MSG_QUEUE_REQUEST);
    json_t *targets = json_object_get (bn_msg_content (request), "targets");
    ck_assert_uint_eq (json_array_size (targets), 2);
    ck_assert_int_eq (json_integer_value (json_array_get (targets, 1)), 9);
    s_mock_reply (mock, mock->query, request, -1, BN_MSG_HUB_ERROR,
                  json_pack ("{s:s, s:s, s:s, s:[], s:{}}", "status", "error",
                             "ename", "IndexError", "evalue",
                             "No Such Engine: 9", "traceback", "engine_info"),
                  NULL);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
    ck_assert_int_eq (call.rc, BN_ENOENGINE);
    ck_assert_ptr_null (call.status);
    bn_idset_destroy (&call.targets);
    //  No answer
    bn_queue_status_t *status;
    size_t count;
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 0.1, &status, &count, NULL),
        BN_ETIMEDOUT);
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 0.1, NULL, &count, NULL),
        BN_EINVAL);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

typedef struct {
    bn_client_t *client;
    int rc;
    char *stats;
} s_stats_call_t;

static void *
s_stats_main (void *arg)
{
    s_stats_call_t *call = (s_stats_call_t *)arg;
    call->rc = bn_client_stats (call->client, 5, &call->stats);
    return NULL;
}

//  bn_client_stats while the mock answers its bn_stats_request with
//  reply_type and content (taken).
static void
s_stats_answered (s_mock_t *mock, s_stats_call_t *call, const char *reply_type,
                  json_t *content)
{
    pthread_t thread;
    ck_assert_int_eq (pthread_create (&thread, NULL, s_stats_main, call), 0);
    bn_msg_t *request = s_mock_expect (mock, mock->query, BN_MSG_STATS_REQUEST);
    s_mock_reply (mock, mock->query, request, -1, reply_type, content, NULL);
    bn_msg_destroy (&request);
    pthread_join (thread, NULL);
}

START_TEST (test_stats)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    s_stats_call_t call = {client, -100, NULL};
    //  banyan's hub: the actors' counters, as JSON text
    s_stats_answered (mock, &call, BN_MSG_STATS_REPLY,
                      json_pack ("{s:s, s:{s:{s:i}, s:{s:i}}}", "status", "ok",
                                 "actors", "hub", "queries", 4, "mux",
                                 "received", 8));
    ck_assert_int_eq (call.rc, 0);
    json_t *stats = json_loads (call.stats, 0, NULL);
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_object_get (stats, "mux"), "received")),
                      8);
    ck_assert_uint_eq (json_object_size (stats), 2);
    json_decref (stats);
    free (call.stats);
    //  a hub that does not know the request, as 7.1.0's answers it
    s_stats_answered (mock, &call, BN_MSG_HUB_ERROR,
                      json_pack ("{s:s, s:s, s:s, s:[], s:{}}", "status",
                                 "error", "ename", "KeyError", "evalue",
                                 "'Bad Message Type: bn_stats_request'",
                                 "traceback", "engine_info"));
    ck_assert_int_eq (call.rc, BN_ENOTSUP);
    ck_assert_ptr_null (call.stats);
    //  banyan's hub failing, and replies without counters
    s_stats_answered (mock, &call, BN_MSG_STATS_REPLY,
                      json_pack ("{s:s, s:s, s:s, s:[], s:{}}", "status",
                                 "error", "ename", "MemoryError", "evalue",
                                 "cannot gather the counters", "traceback",
                                 "engine_info"));
    ck_assert_int_eq (call.rc, BN_EREMOTE);
    ck_assert_ptr_null (call.stats);
    s_stats_answered (mock, &call, BN_MSG_STATS_REPLY,
                      json_pack ("{s:s, s:[]}", "status", "ok", "actors"));
    ck_assert_int_eq (call.rc, BN_EPROTO);
    ck_assert_ptr_null (call.stats);
    s_stats_answered (mock, &call, "queue_reply",
                      json_pack ("{s:s, s:{}}", "status", "ok", "actors"));
    ck_assert_int_eq (call.rc, BN_EPROTO);
    //  no answer, bad arguments
    char *text = NULL;
    ck_assert_int_eq (bn_client_stats (client, 0.1, &text), BN_ETIMEDOUT);
    ck_assert_ptr_null (text);
    ck_assert_int_eq (bn_client_stats (client, 0.1, NULL), BN_EINVAL);
    ck_assert_int_eq (bn_client_stats (NULL, 0.1, &text), BN_EINVAL);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_destroy_order)
{
    s_mock_t *mock = s_mock_new (1);
    bn_client_t *client = s_mock_client (mock);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "x", &result), 0);
    //  The client goes first: outstanding requests complete as closed,
    //  views and results stay usable.
    bn_client_destroy (&client);
    ck_assert_int_eq (bn_result_get (result, 1), BN_ECLOSED);
    ck_assert_str_eq (bn_result_ename (result, 0), "ClientClosed");
    bn_result_t *other = NULL;
    ck_assert_int_eq (bn_view_execute (view, "x", &other), BN_ECLOSED);
    ck_assert_ptr_null (other);
    ck_assert_int_eq (bn_view_clear (view, 1), BN_ECLOSED);
    bn_view_destroy (&view);
    bn_result_destroy (&result);
    //  NULL-safe destructors
    bn_client_destroy (&client);
    bn_view_destroy (&view);
    bn_result_destroy (&result);
    bn_result_destroy (NULL);
    s_mock_destroy (&mock);
}
END_TEST

START_TEST (test_null_arguments)
{
    ck_assert_int_eq (bn_client_status (NULL), BN_EINVAL);
    ck_assert_ptr_null (bn_client_session (NULL));
    ck_assert_ptr_null (bn_client_ids (NULL));
    ck_assert_uint_eq (bn_client_engine_count (NULL), 0);
    ck_assert_int_eq (bn_client_wait_for_engines (NULL, 1, 0), BN_EINVAL);
    ck_assert_int_eq (bn_client_shutdown (NULL, true, 0), BN_EINVAL);
    ck_assert_uint_eq (bn_client_dropped (NULL), 0);
    ck_assert_int_eq (bn_view_execute (NULL, "x", NULL), BN_EINVAL);
    ck_assert_int_eq (bn_view_set_silent (NULL, true), BN_EINVAL);
    ck_assert_int_eq (bn_view_abort (NULL, NULL, 0), BN_EINVAL);
    ck_assert_uint_eq (bn_result_count (NULL), 0);
    ck_assert (!bn_result_ready (NULL));
    ck_assert_int_eq (bn_result_wait (NULL, 0), BN_EINVAL);
    ck_assert_int_eq (bn_result_next (NULL, 0), BN_EINVAL);
    ck_assert_int_eq (bn_result_status (NULL, 0), BN_EINVAL);
    ck_assert_ptr_null (bn_result_stdout (NULL, 0));
    ck_assert_ptr_null (bn_result_msg_id (NULL, 0));
    ck_assert_int_eq (bn_result_engine_id (NULL, 0), -1);
}
END_TEST

//  An engine played by a thread: answers every mux request at once.
typedef struct {
    s_mock_t *mock;
    volatile bool stop;
    int served;
} s_echo_t;

static void *
s_echo_main (void *arg)
{
    s_echo_t *echo = arg;
    s_mock_t *mock = echo->mock;
    while (!echo->stop) {
        bn_msg_t *request = s_mock_recv (mock, mock->mux, 50);
        if (!request)
            continue;
        int engine = s_mock_engine_of (mock, request);
        bn_value_t *value = NULL;
        if (strcmp (bn_msg_type (request), BN_MSG_APPLY_REQUEST) == 0) {
            bn_bytes_t bufs[16];
            size_t nbufs = bn_bytes_from_msg (request, bufs, 16);
            bn_apply_t call;
            char err[256];
            ck_assert_int_eq (
                bn_apply_unpack (bufs, nbufs, &call, err, sizeof err), 0);
            value = bn_value_dup (bn_value_item (call.args, 0));
            bn_apply_clear (&call);
        }
        s_mock_run (mock, mock->mux, request, engine, NULL, s_ok (), value);
        bn_value_destroy (&value);
        bn_msg_destroy (&request);
        echo->served++;
    }
    return NULL;
}

typedef struct {
    bn_client_t *client;
    int index;
    int failures;
} s_worker_t;

static void *
s_worker_main (void *arg)
{
    s_worker_t *worker = arg;
    bn_view_t *view = bn_view_new (worker->client, BN_VIEW_DIRECT);
    int target = worker->index % 2;
    bn_view_set_target_list (view, &target, 1);
    for (int i = 0; i < 50; i++) {
        int64_t token = worker->index * 1000 + i;
        bn_value_t *args = s_args1 (bn_value_new_int (token));
        bn_result_t *result = NULL;
        if (bn_view_apply (view, "echo", args, NULL, &result) != 0 ||
            bn_result_get (result, 10) != 0 ||
            bn_value_int (bn_result_value (result, 0)) != token ||
            bn_result_engine_id (result, 0) != target)
            worker->failures++;
        bn_result_destroy (&result);
        bn_value_destroy (&args);
    }
    bn_view_destroy (&view);
    return NULL;
}

START_TEST (test_threads_and_two_clients)
{
    s_mock_t *mock = s_mock_new (2);
    bn_client_t *client = s_mock_client (mock);
    //  A second client in the same process, on the same controller
    bn_client_t *second = s_mock_client (mock);
    ck_assert_str_ne (bn_client_session (client), bn_client_session (second));
    s_echo_t echo = {mock, false, 0};
    pthread_t echo_thread;
    ck_assert_int_eq (pthread_create (&echo_thread, NULL, s_echo_main, &echo),
                      0);
    //  Four threads share one client, two share the other
    s_worker_t workers[6];
    pthread_t threads[6];
    for (int i = 0; i < 6; i++) {
        workers[i] = (s_worker_t){i < 4 ? client : second, i, 0};
        ck_assert_int_eq (
            pthread_create (&threads[i], NULL, s_worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join (threads[i], NULL);
        ck_assert_int_eq (workers[i].failures, 0);
    }
    echo.stop = true;
    pthread_join (echo_thread, NULL);
    ck_assert_int_eq (echo.served, 300);
    ck_assert_uint_eq (bn_client_dropped (client), 0);
    bn_client_destroy (&second);
    bn_client_destroy (&client);
    s_mock_destroy (&mock);
}
END_TEST

//  -------------------------------------------------------------------
//  Against a stock ipcontroller and two stock ipengines, started by
//  tests/interop/test_libbanyan_stock.py, which names the client file.

static const char *
s_stock_file (void)
{
    return getenv ("BN_STOCK_CLIENT_FILE");
}

static bn_client_t *
s_stock_client (void)
{
    int rc;
    bn_client_t *client = bn_client_new (s_stock_file (), 20, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, 2, 60), 0);
    return client;
}

START_TEST (test_stock_execute)
{
    bn_client_t *client = s_stock_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_result_t *result;
    //  Python source; its output comes back per engine, complete
    ck_assert_int_eq (bn_view_execute (view,
                                       "import sys\n"
                                       "for i in range(3): print('line', i)\n"
                                       "print('to stderr', file=sys.stderr)\n",
                                       &result),
                      0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_str_eq (bn_result_stdout (result, i),
                          "line 0\nline 1\nline 2\n");
        ck_assert_str_eq (bn_result_stderr (result, i), "to stderr\n");
        ck_assert_ptr_nonnull (bn_result_started (result, i));
        ck_assert_ptr_nonnull (bn_result_completed (result, i));
    }
    bn_result_destroy (&result);
    //  An expression, not silent: its execute_result
    bn_view_set_silent (view, false);
    ck_assert_int_eq (bn_view_execute (view, "6*7", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert_str_eq (bn_result_execute_result (result, 0), "42");
    ck_assert_int_ge (bn_result_execution_count (result, 0), 1);
    bn_result_destroy (&result);
    //  A Python exception is an error value
    ck_assert_int_eq (bn_view_execute (view, "1/0", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 1), "ZeroDivisionError");
    ck_assert_str_eq (bn_result_evalue (result, 1), "division by zero");
    ck_assert_ptr_nonnull (bn_result_traceback (result, 1));
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_stock_apply)
{
    bn_client_t *client = s_stock_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *list = bn_value_new_list ();
    for (int i = 1; i <= 4; i++)
        bn_value_append (list, bn_value_new_int (i * 10));
    bn_value_t *args = s_args1 (list);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, "builtins.sum", args, NULL, &result),
                      0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), 100);
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    //  Keyword args, and a float
    args = s_args1 (bn_value_new_float (2.25));
    ck_assert_int_eq (bn_view_apply (view, "math.sqrt", args, NULL, &result),
                      0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert (bn_value_float (bn_result_value (result, 0)) == 1.5);
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    //  Big bytes both ways (out-of-band frames)
    size_t size = 200000;
    char *data = malloc (size);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 7);
    args = s_args1 (bn_value_new_bytes (data, size));
    ck_assert_int_eq (
        bn_view_apply (view, "builtins.bytes", args, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    const bn_value_t *back = bn_result_value (result, 1);
    ck_assert_uint_eq (bn_value_bytes_size (back), size);
    ck_assert (memcmp (bn_value_bytes_data (back), data, size) == 0);
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    free (data);
    //  An unknown name raises on the engine
    ck_assert_int_eq (
        bn_view_apply (view, "no_such_function", NULL, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), BN_EREMOTE);
    ck_assert_str_eq (bn_result_ename (result, 0), "NameError");
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_stock_push_pull)
{
    bn_client_t *client = s_stock_client ();
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *ns = bn_value_new_dict ();
    bn_value_dict_set_str (ns, "alpha", bn_value_new_int (5));
    bn_value_t *list = bn_value_new_list ();
    bn_value_append (list, bn_value_new_str ("x"));
    bn_value_append (list, bn_value_new_float (0.5));
    bn_value_dict_set_str (ns, "beta", list);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_push (view, ns, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    bn_result_destroy (&result);
    bn_value_t *name = bn_value_new_str ("alpha");
    ck_assert_int_eq (bn_view_pull (view, name, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 1)), 5);
    bn_result_destroy (&result);
    bn_value_t *names = bn_value_new_list ();
    bn_value_append (names, bn_value_new_str ("beta"));
    bn_value_append (names, bn_value_new_str ("alpha"));
    ck_assert_int_eq (bn_view_pull (view, names, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    const bn_value_t *got = bn_result_value (result, 0);
    ck_assert_uint_eq (bn_value_size (got), 2);
    ck_assert (bn_value_equal (bn_value_item (got, 0), list));
    bn_result_destroy (&result);
    //  What execute sees
    ck_assert_int_eq (bn_view_execute (view, "print(alpha * 2)", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert_str_eq (bn_result_stdout (result, 0), "10\n");
    bn_result_destroy (&result);
    bn_value_destroy (&names);
    bn_value_destroy (&name);
    bn_value_destroy (&ns);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_stock_views_and_queries)
{
    bn_client_t *client = s_stock_client ();
    bn_value_t *args = s_args1 (bn_value_new_str ("abc"));
    bn_result_t *result;
    //  Load-balanced: one task, the scheduler names the engine
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    ck_assert_int_eq (bn_view_apply (lb, "builtins.len", args, NULL, &result),
                      0);
    ck_assert_int_eq (bn_result_get (result, 30), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 0)), 3);
    ck_assert_int_ge (bn_result_engine_id (result, 0), 0);
    bn_result_destroy (&result);
    //  Broadcast, forwarded and coalesced
    bn_view_t *bc = bn_view_new (client, BN_VIEW_BROADCAST);
    for (int coalescing = 0; coalescing < 2; coalescing++) {
        bn_view_set_coalescing (bc, coalescing);
        ck_assert_int_eq (
            bn_view_apply (bc, "builtins.len", args, NULL, &result), 0);
        ck_assert_int_eq (bn_result_get (result, 30), 0);
        ck_assert_uint_eq (bn_result_count (result), 2);
        for (size_t i = 0; i < 2; i++)
            ck_assert_int_eq (bn_value_int (bn_result_value (result, i)), 3);
        bn_result_destroy (&result);
    }
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_clear (view, 30), 0);
    ck_assert_int_eq (bn_view_abort (view, NULL, 30), 0);
    bn_queue_status_t *status;
    size_t count;
    int unassigned = -1;
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 30, &status, &count, &unassigned),
        0);
    ck_assert_uint_eq (count, 2);
    ck_assert_int_eq (unassigned, 0);
    ck_assert_int_ge (status[0].completed + status[1].completed, 1);
    free (status);
    //  counters are banyan's: the stock hub does not know the query
    char *stats = NULL;
    ck_assert_int_eq (bn_client_stats (client, 30, &stats), BN_ENOTSUP);
    ck_assert_ptr_null (stats);
    ck_assert_uint_eq (bn_client_dropped (client), 0);
    bn_view_destroy (&view);
    bn_view_destroy (&bc);
    bn_view_destroy (&lb);
    bn_value_destroy (&args);
    bn_client_destroy (&client);
}
END_TEST

//  Last: shuts the stock cluster down.
START_TEST (test_stock_shutdown)
{
    bn_client_t *client = s_stock_client ();
    ck_assert_int_eq (bn_client_shutdown (client, true, 30), 0);
    ck_assert_int_eq (bn_client_status (client), BN_ENOCONTROLLER);
    bn_client_destroy (&client);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_client");
    TCase *tc = tcase_create ("scripted");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_error_codes_have_text);
    tcase_add_test (tc, test_connect_sources);
    tcase_add_test (tc, test_connect_profile);
    tcase_add_test (tc, test_connect_failures);
    tcase_add_test (tc, test_engines_follow_notifications);
    tcase_add_test (tc, test_apply_by_name);
    tcase_add_test (tc, test_direct_reply_metadata);
    tcase_add_test (tc, test_direct_output_in_reply);
    tcase_add_test (tc, test_push_pull);
    tcase_add_test (tc, test_partial_results_and_output);
    tcase_add_test (tc, test_remote_errors);
    tcase_add_test (tc, test_engine_dies);
    tcase_add_test (tc, test_controller_vanishes);
    tcase_add_test (tc, test_controller_shuts_down);
    tcase_add_test (tc, test_bad_messages_dropped);
    tcase_add_test (tc, test_targets);
    tcase_add_test (tc, test_no_engines);
    tcase_add_test (tc, test_load_balanced);
    tcase_add_test (tc, test_broadcast);
    tcase_add_test (tc, test_broadcast_options);
    tcase_add_test (tc, test_broadcast_bn_replies);
    tcase_add_test (tc, test_broadcast_execute_and_hops);
    tcase_add_test (tc, test_broadcast_stock_merged);
    tcase_add_test (tc, test_broadcast_partial_messages);
    tcase_add_test (tc, test_broadcast_groups);
    tcase_add_test (tc, test_broadcast_reduced);
    tcase_add_test (tc, test_broadcast_reduced_order);
    tcase_add_test (tc, test_abort_clear_shutdown);
    tcase_add_test (tc, test_client_shutdown);
    tcase_add_test (tc, test_queue_status);
    tcase_add_test (tc, test_stats);
    tcase_add_test (tc, test_destroy_order);
    tcase_add_test (tc, test_null_arguments);
    tcase_add_test (tc, test_threads_and_two_clients);
    suite_add_tcase (suite, tc);

    Suite *stock = suite_create ("stock");
    if (s_stock_file ()) {
        TCase *tcs = tcase_create ("stock");
        tcase_set_timeout (tcs, 120);
        tcase_add_test (tcs, test_stock_execute);
        tcase_add_test (tcs, test_stock_apply);
        tcase_add_test (tcs, test_stock_push_pull);
        tcase_add_test (tcs, test_stock_views_and_queries);
        tcase_add_test (tcs, test_stock_shutdown);
        suite_add_tcase (stock, tcs);
    }
    SRunner *runner = srunner_create (suite);
    srunner_add_suite (runner, stock);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? 0 : 1;
}

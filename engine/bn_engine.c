/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine: one logical engine.

    Sockets (doc/wire.md 3.1): a shell ROUTER connected to mux, task and
    broadcast[id % n], a control ROUTER, and a pong DEALER; all with
    routing id = uuid. The iopub PUB, the ping SUB and a registration
    DEALER are shared by the engines of one process (a PUB has no
    identity, and every engine hears the same pings), which saves two
    sockets and their file descriptors per engine. An engine registers on
    the shared DEALER when the hub's replies name its session as their
    parent's (banyan's hub does, 7.1.0's does not), saving a connection
    and its handshake; else on a DEALER of its own, closed once it is
    registered. unregistration_request goes out on the shared DEALER.

    Behind a banyan host node (its connection file says
    bn_shared_channels), an engine has no socket of its own: the engines of
    the process share a shell ROUTER, a control ROUTER and a pong DEALER,
    whose owner hands each engine the requests that name it after the
    peer's routing id ([mux_out, uuid, client, ...]); a reply, which copies
    the request's routing frames, goes back the same way, and a pong is
    [uuid, ping] (doc/wire.md 4.1).

    One shell request runs at a time; the rest wait in a queue. Control
    requests are answered at once, even while a command runs, so abort,
    signal and shutdown reach a busy engine. An abort_request naming the
    request that runs ends it (a command's process group gets SIGINT, then
    SIGTERM and SIGKILL a grace apart, as clush and pdsh do; a deferred
    function stops at once) and answers it "aborted"; 7.1.0's engines only
    skip the aborted requests still queued.

    execute_request: `code` runs as `/bin/sh -c code` (stdin /dev/null, or
    the request's first buffer when its metadata has `bn_stdin: true`;
    BANYAN_ENGINE_ID and BANYAN_ENGINE_UUID in its environment); its output
    goes to iopub as stream messages while it runs. The reply's content
    has `returncode` (Python's subprocess convention: the exit status, or
    minus the signal that killed it); a failure is a CalledProcessError,
    or TimeoutExpired when the time limit (engine.request_time_limit, or a
    smaller request metadata `time_limit` in seconds) killed its process
    group.

    A shell request whose metadata has `bn_output: "reply"` (banyan's
    broadcast tree, doc/broadcast.md) publishes nothing on iopub (no status, no
    stream, no error): what the command wrote comes back in the reply
    content as `bn_stdout` and `bn_stderr` (both always present, at most
    S_REPLY_OUTPUT_MAX bytes each, its bytes as bn_rawtext encodes them),
    so that it can be merged and grouped with the results on the way up.
    Stream messages carry bytes that are not UTF-8 as U+FFFD in their text
    and exactly in `bn_text` (bn_rawtext).  */
#include "bn_engine.h"
#include "bn_apply.h"
#include "bn_curve.h"
#include "bn_error.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_rawtext.h"
#include "bn_shell.h"
#include "bn_text.h"
#include "bn_wire.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

#define S_DRAIN 64                   //  messages read per readable event
#define S_LINGER_MS 1000             //  time to flush replies when stopping
#define S_DEFAULT_HB_MS 3000         //  hb_period when the reply gives none
#define S_TICK_GAP_MS 1000           //  a tick this late: we were not running
#define S_MAX_HB_MS 86400000         //  longest hb_period taken (a day)
#define S_TIMELIMIT_KEY "time_limit" //  request metadata, seconds
#define S_OUTPUT_KEY BN_BCAST_OUTPUT //  request metadata: "reply"
#define S_REPLY_OUTPUT_MAX (16 * 1024 * 1024) //  bytes kept per stream
#define S_PING_MAX 40 //  longest ping remembered (a float's text)
#define S_ENGINE_ID_VAR "BANYAN_ENGINE_ID"
#define S_ENGINE_UUID_VAR "BANYAN_ENGINE_UUID"

//  The keys of a request's metadata the engine reads, found in one walk
//  of its text (bn_jscan_keys), not a JSON tree.
typedef struct {
    bool object;                 //  the metadata is a JSON object
    bool output_in_reply;        //  bn_output is "reply" (bn_output)
    bool is_broadcast;           //  is_broadcast is true
    bool is_coalescing;          //  is_coalescing is true
    bn_jscan_slice_t original;   //  original_msg_id's raw value, or none
    bn_jscan_slice_t time_limit; //  time_limit's raw value, or none
} s_keys_t;

//  The shell request being handled, while it runs.
typedef struct {
    bn_msg_t *msg;              //  the request; NULL when idle
    s_keys_t keys;              //  its metadata's keys
    char started[BN_DATE_SIZE]; //  when handling began
    bn_shell_t *shell;          //  an execute_request's command
    bn_value_t *result;         //  a deferred apply's result
    int timer;                  //  deferral or time limit, or -1
    double time_limit;          //  seconds, 0: none
    zchunk_t *out;              //  stdout kept for the reply, or NULL
    zchunk_t *err;              //  stderr kept for the reply, or NULL
    bool truncated;             //  output past S_REPLY_OUTPUT_MAX dropped
    bool aborting;              //  an abort_request is ending it
    char function[128];         //  a deferred apply's function, or ""
} s_current_t;

struct _bn_engine_t {
    bn_engine_env_t *env;  //  shared with the other engines
    bn_session_t *session; //  id = uuid; signs and verifies
    const char *uuid;      //  = bn_session_id (session)
    int requested_id;      //  -1: none
    int id;                //  given by the controller, -1 before
    bn_engine_state_t state;
    bn_engine_exit_t exit_code;
    zsock_t *registration;              //  own DEALER while registering,
                                        //  or NULL: the shared one
    zsock_t *shell;                     //  ROUTER: mux, task, broadcast
    zsock_t *control;                   //  ROUTER: control
    zsock_t *pong;                      //  DEALER: hb_pong
    bn_watch_item_t *registration_item; //  watches of the sockets
    bn_watch_item_t *shell_item;
    bn_watch_item_t *control_item;
    char topic[64];            //  "engine.<id>." iopub topic prefix
    int64_t deadline;          //  registration deadline (ms, mono), 0:
                               //  not asked yet
    int64_t last_ping;         //  last ping or registration (ms)
    int64_t last_tick;         //  the previous bn_engine_tick (ms), 0: none
    char answered[S_PING_MAX]; //  the last ping echoed
    size_t answered_size;      //  its size, 0: none
    int hb_period;             //  ms, from the registration reply
    int execution_count;       //  non-silent execute_requests
    bn_namespace_t *ns;        //  push/pull values
    zlistx_t *queue;           //  bn_msg_t * waiting shell requests
    zhashx_t *aborted;         //  msg_ids to answer "aborted"
    zhashx_t *aborted_old;     //  the previous generation of them, or NULL
    s_current_t current;       //  the request being handled
    bool dispatching;          //  inside s_next: no recursion
    bool waiting;              //  in env->waiting for a command slot
    bool shared_broadcast;     //  its leaf reaches it on env->broadcast
    char **envp;               //  commands' environment
    bn_engine_stats_t stats;
};

static void s_aborted_add (bn_engine_t *self, const char *msg_id);
static int s_own_sockets (bn_engine_t *self);
static bool s_aborted_take (bn_engine_t *self, const char *msg_id);

//  ---------------------------------------------------------------------
//  Sockets and messages

//  A socket with routing id = uuid (unless anonymous), connected to url
//  when given; NULL on failure.
static zsock_t *
s_socket (bn_engine_t *self, int type, const char *url, bool anonymous)
{
    zsock_t *sock = zsock_new (type);
    if (!sock)
        return NULL;
    zsock_set_sndhwm (sock, 0);
    zsock_set_rcvhwm (sock, 0);
    if (!anonymous)
        zsock_set_identity (sock, self->uuid);
    const char *serverkey = bn_connfile_curve_serverkey (self->env->connfile);
    if (serverkey && self->env->curve_cert &&
        bn_curve_client (sock, self->env->curve_cert, serverkey)) {
        bn_log_error ("engine %s: cannot use CURVE", self->uuid);
        zsock_destroy (&sock);
        return NULL;
    }
    if (url && zsock_connect (sock, "%s", url)) {
        bn_log_error ("engine %s: cannot connect to %s", self->uuid, url);
        zsock_destroy (&sock);
    }
    return sock;
}

//  Connect to the URL of a connection file key; -1 on failure.
static int
s_connect_key (bn_engine_t *self, zsock_t *sock, const char *key)
{
    char *url = bn_connfile_url (self->env->connfile, key);
    int rc = url ? zsock_connect (sock, "%s", url) : -1;
    if (rc)
        bn_log_error ("engine %d: cannot connect %s (%s)", self->id, key,
                      url ? url : "no URL");
    free (url);
    return rc;
}

static void
s_close (bn_engine_t *self, zsock_t **sock_p, bn_watch_item_t **item_p)
{
    if (item_p)
        bn_watch_cancel (self->env->watch, item_p);
    if (!*sock_p)
        return;
    zsock_set_linger (*sock_p, S_LINGER_MS);
    zsock_destroy (sock_p);
}

//  Close the engine's sockets; the shared ones are only let go.
static void
s_close_all (bn_engine_t *self)
{
    s_close (self, &self->registration, &self->registration_item);
    if (self->env->shell) {
        self->shell = NULL;
        self->control = NULL;
        return;
    }
    s_close (self, &self->shell, &self->shell_item);
    s_close (self, &self->control, &self->control_item);
    s_close (self, &self->pong, NULL);
}

//  True if slice is exactly the JSON text literal.
static bool
s_slice_is (bn_jscan_slice_t slice, const char *literal)
{
    size_t len = strlen (literal);
    return slice.data && slice.size == len &&
           memcmp (slice.data, literal, len) == 0;
}

//  Read the keys of request's metadata into keys.
static void
s_keys_read (bn_msg_t *request, s_keys_t *keys)
{
    static const char *const names[] = {S_OUTPUT_KEY, BN_MD_IS_BROADCAST,
                                        BN_MD_IS_COALESCING,
                                        BN_MD_ORIGINAL_MSG_ID, S_TIMELIMIT_KEY};
    bn_jscan_slice_t values[5];
    size_t size;
    const char *data =
        (const char *)bn_msg_part_data (request, BN_PART_METADATA, &size);
    memset (keys, 0, sizeof *keys);
    if (!data || bn_jscan_keys (data, size, names, 5, values) != 0)
        return;
    keys->object = true;
    keys->output_in_reply = s_slice_is (values[0], "\"reply\"");
    keys->is_broadcast = s_slice_is (values[1], "true");
    keys->is_coalescing = s_slice_is (values[2], "true");
    keys->original = values[3];
    keys->time_limit = values[4];
}

//  The keys of request's metadata: the current request's, read when it
//  started, or another's read into *other.
static const s_keys_t *
s_keys (bn_engine_t *self, bn_msg_t *request, s_keys_t *other)
{
    if (request == self->current.msg)
        return &self->current.keys;
    s_keys_read (request, other);
    return other;
}

//  True if request asks for its output in the reply (bn_output).
static bool
s_output_in_reply (bn_engine_t *self, bn_msg_t *request)
{
    s_keys_t other;
    return request && s_keys (self, request, &other)->output_in_reply;
}

//  Publish on iopub with topic engine.<id>.<kind>; parent is a request or
//  NULL; with_engine adds metadata.engine (doc/wire.md 9.2). Nothing is
//  published for a request that wants its output in the reply.
static void
s_publish (bn_engine_t *self, bn_msg_t *parent, const char *msg_type,
           const char *kind, json_t *content, bool with_engine)
{
    if (parent && s_output_in_reply (self, parent)) {
        json_decref (content);
        return;
    }
    bn_msg_t *msg = parent ? bn_msg_new_reply (self->session, parent, msg_type)
                           : bn_msg_new (self->session, msg_type);
    if (!msg || !content) {
        json_decref (content);
        bn_msg_destroy (&msg);
        return;
    }
    bn_msg_clear_idents (msg);
    char topic[96];
    int size = snprintf (topic, sizeof topic, "%s%s", self->topic, kind);
    bn_msg_push_ident (msg, topic, (size_t)size);
    if (with_engine)
        bn_msg_set_metadata (msg, json_pack ("{s:s}", "engine", self->uuid));
    bn_msg_set_content (msg, content);
    bn_msg_send (&msg, zsock_resolve (self->env->iopub), self->session);
}

static void
s_status (bn_engine_t *self, bn_msg_t *parent, const char *state)
{
    //  a request with its output in the reply has no status messages
    if (parent && parent == self->current.msg &&
        self->current.keys.output_in_reply)
        return;
    s_publish (self, parent, BN_MSG_STATUS, "status",
               json_pack ("{s:s}", "execution_state", state), true);
}

static json_t *
s_engine_info (bn_engine_t *self, const char *method)
{
    if (method)
        return json_pack ("{s:s, s:i, s:s}", "engine_uuid", self->uuid,
                          "engine_id", self->id, "method", method);
    return json_pack ("{s:s, s:i}", "engine_uuid", self->uuid, "engine_id",
                      self->id);
}

//  Reply metadata (doc/wire.md 9.2), copying the request's broadcast keys.
static json_t *
s_reply_metadata (bn_engine_t *self, bn_msg_t *request, const char *status,
                  const char *started)
{
    //  the request's keys are scanned; only a long original_msg_id is read
    //  by jansson
    s_keys_t other;
    const s_keys_t *keys = s_keys (self, request, &other);
    char buf[256];
    int len = keys->original.data
                  ? bn_jscan_unescape (keys->original, buf, sizeof buf)
                  : -1;
    json_t *original =
        len >= 0    ? json_string (buf)
        : len == -2 ? json_incref (json_object_get (bn_msg_metadata (request),
                                                    BN_MD_ORIGINAL_MSG_ID))
                    : NULL;
    json_t *metadata =
        json_pack ("{s:s, s:b, s:s, s:b, s:b, s:o, s:s}", "started", started,
                   "dependencies_met", 1, "engine", self->uuid,
                   BN_MD_IS_BROADCAST, keys->is_broadcast, BN_MD_IS_COALESCING,
                   keys->is_coalescing, BN_MD_ORIGINAL_MSG_ID,
                   original ? original : json_string (""), "status", status);
    if (metadata && strcmp (status, BN_STATUS_ERROR) == 0)
        json_object_set_new (metadata, "engine_info",
                             s_engine_info (self, NULL));
    return metadata;
}

//  A JSON string of size bytes of output (bn_rawtext's encoding).
static json_t *
s_output_string (zchunk_t *chunk)
{
    json_t *string = chunk ? json_stringn ((const char *)zchunk_data (chunk),
                                           zchunk_size (chunk))
                           : NULL;
    return string ? string : json_string ("");
}

//  Put the output the current request kept into its reply content as
//  bn_stdout and bn_stderr ("" when none, or when request is not the
//  current one: a request aborted before it ran).
static void
s_output_into (bn_engine_t *self, bn_msg_t *request, json_t *content)
{
    s_current_t *current = &self->current;
    bool mine = request == current->msg;
    zchunk_t *out = mine ? current->out : NULL;
    zchunk_t *err = mine ? current->err : NULL;
    json_object_set_new (content, "bn_stdout", s_output_string (out));
    json_object_set_new (content, "bn_stderr", s_output_string (err));
}

//  True if reply answers a request that came on the shared broadcast
//  connection: its routing frames are [leaf, our uuid, ...] (on our own
//  shell they are [peer, client, ...]).
static bool
s_via_broadcast (bn_engine_t *self, bn_msg_t *reply)
{
    if (!self->shared_broadcast || bn_msg_nidents (reply) < 2)
        return false;
    size_t size;
    const void *named = bn_msg_ident (reply, 1, &size);
    return size == strlen (self->uuid) && memcmp (named, self->uuid, size) == 0;
}

//  Send reply (taken) on sock, a request's answer.
static void
s_send_reply (bn_engine_t *self, zsock_t *sock, bn_msg_t **reply_p)
{
    bn_engine_env_t *env = self->env;
    bool shell = sock == self->shell;
    bn_watch_item_t *item =
        env->shell ? (shell ? env->shell_item : env->control_item)
                   : (shell ? self->shell_item : self->control_item);
    if (shell && s_via_broadcast (self, *reply_p)) {
        sock = env->broadcast;
        item = env->broadcast_item;
    }
    if (bn_msg_send (reply_p, zsock_resolve (sock), self->session))
        bn_log_warn ("engine %d: cannot send a reply", self->id);
    //  Sending may have taken the socket's signal of waiting input.
    bn_watch_check (env->watch, item);
    self->stats.handled++;
}

//  Send a reply to request on sock: content and metadata taken; value,
//  when given, is serialized into the buffers (an apply result).
//  Returns -1 if value cannot be serialized (nothing sent).
static int
s_reply (bn_engine_t *self, zsock_t *sock, bn_msg_t *request,
         const char *reply_type, json_t *content, json_t *metadata,
         const bn_value_t *value)
{
    bn_msg_t *reply = bn_msg_new_reply (self->session, request, reply_type);
    if (!reply || !content || !metadata) {
        bn_log_error ("engine %d: out of memory replying", self->id);
        json_decref (content);
        json_decref (metadata);
        bn_msg_destroy (&reply);
        return 0;
    }
    if (value && bn_serialize_object_add (reply, value)) {
        json_decref (content);
        json_decref (metadata);
        bn_msg_destroy (&reply);
        return -1;
    }
    if (sock == self->shell && s_output_in_reply (self, request))
        s_output_into (self, request, content);
    bn_msg_set_metadata (reply, metadata);
    bn_msg_set_content (reply, content);
    s_send_reply (self, sock, &reply);
    return 0;
}

//  True if the size bytes of text are printable ASCII that a JSON string
//  holds as they are (no quote, no backslash).
static bool
s_plain (const char *text, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (text[i] < 0x20 || text[i] > 0x7e || text[i] == '"' ||
            text[i] == '\\')
            return false;
    return true;
}

//  An ok reply's metadata as text into buf: byte for byte the text of
//  s_reply_metadata's tree (bn_jdump), written without one when every
//  string in it is plain. Returns its length, or -1 when one is not (or
//  buf is too small): the tree then.
static int
s_ok_metadata_text (bn_engine_t *self, bn_msg_t *request, const char *started,
                    char *buf, size_t size)
{
    s_keys_t other;
    const s_keys_t *keys = s_keys (self, request, &other);
    //  a value that is not a string counts as "" (s_reply_metadata)
    bn_jscan_slice_t original = keys->original;
    const char *id = "";
    size_t id_len = 0;
    if (original.data && original.size >= 2 && original.data[0] == '"') {
        id = original.data + 1;
        id_len = original.size - 2;
    }
    if (!s_plain (id, id_len) || !s_plain (started, strlen (started)) ||
        !s_plain (self->uuid, strlen (self->uuid)))
        return -1;
    bn_text_t md;
    bn_text_init (&md, buf, size);
    bn_text_str (&md, "{\"started\":\"");
    bn_text_str (&md, started);
    bn_text_str (&md, "\",\"dependencies_met\":true,\"engine\":\"");
    bn_text_str (&md, self->uuid);
    bn_text_str (&md, "\",\"" BN_MD_IS_BROADCAST "\":");
    bn_text_str (&md, keys->is_broadcast ? "true" : "false");
    bn_text_str (&md, ",\"" BN_MD_IS_COALESCING "\":");
    bn_text_str (&md, keys->is_coalescing ? "true" : "false");
    bn_text_str (&md, ",\"" BN_MD_ORIGINAL_MSG_ID "\":\"");
    bn_text_add (&md, id, id_len);
    bn_text_str (&md, "\",\"status\":\"" BN_STATUS_OK "\"}");
    return (int)bn_text_end (&md);
}

//  Copy text into buf (size bytes) as valid UTF-8, replacing invalid
//  bytes (or a character cut by truncation) with '?', for JSON strings
//  built from what peers sent.
static const char *
s_utf8 (const char *text, char *buf, size_t size)
{
    const unsigned char *in = (const unsigned char *)text;
    size_t out = 0;
    while (*in && out + 1 < size) {
        unsigned char c = *in;
        size_t length = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
        bool ok = length > 0 && out + length < size;
        for (size_t i = 1; ok && i < length; i++)
            ok = (in[i] & 0xC0) == 0x80;
        if (ok && length > 1) {
            //  overlong forms, surrogates and code points over U+10FFFF
            uint32_t cp = length == 2   ? (c & 0x1F)
                          : length == 3 ? (c & 0x0F)
                                        : (c & 0x07);
            for (size_t i = 1; i < length; i++)
                cp = (cp << 6) | (in[i] & 0x3F);
            ok = (length == 2 && cp >= 0x80) ||
                 (length == 3 && cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) ||
                 (length == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
        }
        if (ok) {
            memcpy (buf + out, in, length);
            out += length;
            in += length;
        } else {
            buf[out++] = '?';
            in++;
        }
    }
    buf[out] = 0;
    return buf;
}

//  Reply with the error ename/evalue (and extra content keys, taken).
static void
s_reply_error (bn_engine_t *self, zsock_t *sock, bn_msg_t *request,
               const char *started, const char *method, const char *ename,
               const char *evalue, json_t *extra)
{
    char ename_ok[128], evalue_ok[1100];
    ename = s_utf8 (ename, ename_ok, sizeof ename_ok);
    evalue = s_utf8 (evalue, evalue_ok, sizeof evalue_ok);
    char reply_type[128];
    const char *type = bn_msg_type (request);
    if (bn_wire_reply_type (type ? type : "unknown", reply_type,
                            sizeof reply_type))
        snprintf (reply_type, sizeof reply_type, "error_reply");
    json_t *content =
        bn_wire_error (ename, evalue, s_engine_info (self, method), NULL);
    if (content && extra)
        json_object_update (content, extra);
    json_decref (extra);
    self->stats.errors++;
    //  What iopub subscribers (the client's %px output) see of it.
    if (content && method)
        s_publish (self, request, BN_MSG_ERROR, "error",
                   json_deep_copy (content), true);
    //  a function that raises UnmetDependency asks the task scheduler to
    //  try another engine (doc/wire.md 9.2)
    json_t *metadata =
        s_reply_metadata (self, request, BN_STATUS_ERROR, started);
    if (metadata && streq (ename, "UnmetDependency"))
        json_object_set_new (metadata, "dependencies_met", json_false ());
    s_reply (self, sock, request, reply_type, content, metadata, NULL);
}

//  Reply to a shell request with status aborted (with the output it kept
//  when it ran and wants it in the reply).
static void
s_reply_aborted (bn_engine_t *self, bn_msg_t *request)
{
    char reply_type[128];
    if (bn_wire_reply_type (bn_msg_type (request), reply_type,
                            sizeof reply_type))
        snprintf (reply_type, sizeof reply_type, "error_reply");
    const char *started =
        request == self->current.msg ? self->current.started : "";
    s_reply (self, self->shell, request, reply_type,
             json_pack ("{s:s}", "status", BN_STATUS_ABORTED),
             s_reply_metadata (self, request, BN_STATUS_ABORTED, started),
             NULL);
    self->stats.aborted++;
}

//  ---------------------------------------------------------------------
//  Shell requests

static void s_next (bn_engine_t *self);
static void s_stop (bn_engine_t *self, bn_engine_exit_t code, bool unregister);

static void s_spawn (bn_engine_t *self);
static void s_output_clear (bn_engine_t *self);

//  Destroy the current command (killing it if it runs), or leave the
//  queue for a command slot.
static void
s_drop_shell (bn_engine_t *self)
{
    if (self->current.shell) {
        bn_shell_destroy (&self->current.shell);
        self->env->commands_running--;
    }
    if (self->waiting) {
        void *handle = zlistx_find (self->env->waiting, self);
        if (handle)
            zlistx_delete (self->env->waiting, handle);
        self->waiting = false;
    }
}

//  Give free command slots to the engines waiting for one, in order.
static void
s_start_waiting (bn_engine_env_t *env)
{
    if (env->starting || !env->waiting)
        return;
    env->starting = true;
    while (zlistx_size (env->waiting) &&
           env->commands_running < env->max_commands) {
        bn_engine_t *next = (bn_engine_t *)zlistx_first (env->waiting);
        zlistx_detach_cur (env->waiting);
        next->waiting = false;
        s_spawn (next);
    }
    env->starting = false;
}

//  Finish the current request: idle status, then waiting commands of
//  other engines, then this engine's next request.
static void
s_finish (bn_engine_t *self)
{
    s_current_t *current = &self->current;
    if (current->timer >= 0)
        zloop_timer_end (self->env->loop, current->timer);
    current->timer = -1;
    s_drop_shell (self);
    bn_value_destroy (&current->result);
    if (current->msg)
        s_status (self, current->msg, "idle");
    s_output_clear (self);
    bn_msg_destroy (&current->msg);
    s_start_waiting (self->env);
    s_next (self);
}

//  Effective time limit: the smaller positive of the setting and the
//  request's metadata.time_limit.
static double
s_time_limit (bn_engine_t *self, bn_msg_t *request)
{
    double limit = self->env->time_limit;
    s_keys_t other;
    bn_jscan_slice_t slice = s_keys (self, request, &other)->time_limit;
    const char *text = slice.data;
    size_t len = slice.size;
    char number[64];
    if (text && len > 0 && len < sizeof number &&
        (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) {
        memcpy (number, text, len);
        number[len] = 0;
        char *end;
        double value = strtod (number, &end);
        if (*end == 0 && value > 0 && (limit <= 0 || value < limit))
            limit = value;
    }
    return limit;
}

static size_t
s_ms (double seconds)
{
    double ms = seconds * 1000.0;
    return ms < 1 ? 1 : ms > 1e9 ? 1000000000 : (size_t)ms;
}

//  Forget the output the current request kept.
static void
s_output_clear (bn_engine_t *self)
{
    zchunk_destroy (&self->current.out);
    zchunk_destroy (&self->current.err);
    memset (&self->current.keys, 0, sizeof self->current.keys);
    self->current.truncated = false;
    self->current.aborting = false;
    self->current.function[0] = 0;
}

//  Keep output of the current request for its reply, up to
//  S_REPLY_OUTPUT_MAX bytes per stream.
static void
s_output_keep (bn_engine_t *self, const char *name, const char *text,
               size_t size)
{
    s_current_t *current = &self->current;
    zchunk_t **chunk =
        strcmp (name, "stderr") == 0 ? &current->err : &current->out;
    if (!*chunk)
        *chunk = zchunk_new (NULL, size < 4096 ? 4096 : size);
    if (!*chunk)
        return;
    size_t room = S_REPLY_OUTPUT_MAX - zchunk_size (*chunk);
    if (size > room) {
        //  (not within a character: the text stays UTF-8)
        size = room;
        while (size && ((unsigned char)text[size] & 0xC0) == 0x80)
            size--;
        if (!current->truncated)
            bn_log_warn ("engine %d: output of %s past %d bytes dropped",
                         self->id, bn_msg_id (current->msg),
                         S_REPLY_OUTPUT_MAX);
        current->truncated = true;
    }
    if (size)
        zchunk_extend (*chunk, text, size);
}

//  Output of the command, as it wrote it: kept for the reply, or
//  published. Bytes that are not UTF-8 text (and NULs) reach banyan's
//  readers through bn_rawtext's encoding, in bn_stdout and bn_stderr or a
//  stream's bn_text, and others as U+FFFD in the stream's text.
static void
s_on_output (bn_shell_t *shell, const char *name, const char *text, size_t size,
             void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    if (bn_rawtext_plain (text, size)) {
        if (self->current.keys.output_in_reply)
            s_output_keep (self, name, text, size);
        else
            s_publish (
                self, self->current.msg, BN_MSG_STREAM, name,
                json_pack ("{s:s, s:s%}", "name", name, "text", text, size),
                true);
        return;
    }
    size_t len, replaced_len;
    char *encoded = bn_rawtext_encode (text, size, &len);
    char *replaced = self->current.keys.output_in_reply
                         ? NULL
                         : bn_rawtext_replace (text, size, &replaced_len);
    if (encoded && self->current.keys.output_in_reply)
        s_output_keep (self, name, encoded, len);
    else if (encoded && replaced)
        s_publish (self, self->current.msg, BN_MSG_STREAM, name,
                   json_pack ("{s:s, s:s%, s:s%}", "name", name, "text",
                              replaced, replaced_len, BN_STREAM_BYTES, encoded,
                              len),
                   true);
    else
        bn_log_error ("engine %d: out of memory, %zu bytes of output lost",
                      self->id, size);
    free (encoded);
    free (replaced);
}

static void
s_on_exit (bn_shell_t *shell, const bn_shell_status_t *status, void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    s_current_t *current = &self->current;
    const char *code = json_string_value (
        json_object_get (bn_msg_content (current->msg), "code"));
    //  Python's subprocess.returncode: negative signal numbers.
    int returncode = status->signal ? -status->signal : status->exit_code;
    if (current->aborting)
        s_reply_aborted (self, current->msg);
    else if (status->exit_code == 0 && !status->timed_out) {
        s_reply (self, self->shell, current->msg, BN_MSG_EXECUTE_REPLY,
                 json_pack ("{s:s, s:i, s:{}, s:[], s:i}", "status",
                            BN_STATUS_OK, "execution_count",
                            self->execution_count, "user_expressions",
                            "payload", "returncode", 0),
                 s_reply_metadata (self, current->msg, BN_STATUS_OK,
                                   current->started),
                 NULL);
    } else {
        char evalue[1024];
        const char *ename = "CalledProcessError";
        if (status->timed_out) {
            ename = "TimeoutExpired";
            snprintf (evalue, sizeof evalue,
                      "Command '%.900s' timed out after %g seconds", code,
                      current->time_limit);
        } else if (status->signal)
            snprintf (evalue, sizeof evalue,
                      "Command '%.900s' died with signal %d (%s).", code,
                      status->signal, strsignal (status->signal));
        else
            snprintf (evalue, sizeof evalue,
                      "Command '%.900s' returned non-zero exit status %d.",
                      code, status->exit_code);
        s_reply_error (self, self->shell, current->msg, current->started,
                       "execute", ename, evalue,
                       json_pack ("{s:i, s:{}, s:[], s:i}", "execution_count",
                                  self->execution_count, "user_expressions",
                                  "payload", "returncode", returncode));
    }
    s_finish (self);
}

//  Start the current execute_request's command.
static void
s_spawn (bn_engine_t *self)
{
    s_current_t *current = &self->current;
    const char *code = json_string_value (
        json_object_get (bn_msg_content (current->msg), "code"));
    //  standard input the client sent with the command (banyan px)
    size_t len, value_len;
    const void *data = bn_msg_part_data (current->msg, BN_PART_METADATA, &len);
    const char *value;
    zmq_msg_t *input =
        bn_jscan_value (data, len, BN_EXEC_STDIN, &value, &value_len) == 0 &&
                value_len == 4 && memcmp (value, "true", 4) == 0
            ? bn_msg_buffer (current->msg, 0)
            : NULL;
    current->shell = bn_shell_new_input (
        self->env->watch, code, self->env->cwd, self->envp,
        input ? zmq_msg_data (input) : NULL, input ? zmq_msg_size (input) : 0,
        current->time_limit, s_on_output, s_on_exit, self);
    if (current->shell) {
        self->env->commands_running++;
        return;
    }
    char evalue[512];
    snprintf (evalue, sizeof evalue, "cannot run /bin/sh in %s: %s",
              self->env->cwd ? self->env->cwd : ".", strerror (errno));
    s_reply_error (self, self->shell, current->msg, current->started, "execute",
                   "OSError", evalue,
                   json_pack ("{s:i, s:{}, s:[]}", "execution_count",
                              self->execution_count, "user_expressions",
                              "payload"));
    s_finish (self);
}

static void
s_execute (bn_engine_t *self, bn_msg_t *request)
{
    s_current_t *current = &self->current;
    json_t *content = bn_msg_content (request);
    json_t *code = content ? json_object_get (content, "code") : NULL;
    if (!json_is_string (code)) {
        s_reply_error (self, self->shell, request, current->started, "execute",
                       "TypeError", "execute_request needs a string 'code'",
                       json_pack ("{s:i, s:{}, s:[]}", "execution_count",
                                  self->execution_count, "user_expressions",
                                  "payload"));
        s_finish (self);
        return;
    }
    if (!json_is_true (json_object_get (content, "silent"))) {
        self->execution_count++;
        s_publish (self, request, BN_MSG_EXECUTE_INPUT, "execute_input",
                   json_pack ("{s:O, s:i}", "code", code, "execution_count",
                              self->execution_count),
                   true);
    }
    current->time_limit = s_time_limit (self, request);
    bn_engine_env_t *env = self->env;
    if (env->max_commands > 0 && env->commands_running >= env->max_commands) {
        //  No descriptors to spare: wait for another engine's command.
        zlistx_add_end (env->waiting, self);
        self->waiting = true;
        return;
    }
    s_spawn (self);
}

//  The current apply request's ok reply with value, its metadata and
//  content written as text (the common case: no output kept, plain
//  strings). Returns 0 when sent, 1 when the reply needs JSON trees
//  (nothing sent), -1 if value cannot be serialized.
static int
s_apply_reply_text (bn_engine_t *self, const bn_value_t *value)
{
    s_current_t *current = &self->current;
    if (current->out || current->err)
        return 1;
    char metadata[512];
    int metadata_len = s_ok_metadata_text (self, current->msg, current->started,
                                           metadata, sizeof metadata);
    if (metadata_len < 0)
        return 1;
    //  bn_stdout and bn_stderr as s_output_into adds them
    const char *content = current->keys.output_in_reply
                              ? "{\"status\":\"" BN_STATUS_OK
                                "\",\"bn_stdout\":\"\",\"bn_stderr\":\"\"}"
                              : "{\"status\":\"" BN_STATUS_OK "\"}";
    bn_msg_t *reply =
        bn_msg_new_reply (self->session, current->msg, BN_MSG_APPLY_REPLY);
    if (!reply)
        return 1;
    if (value && bn_serialize_object_add (reply, value)) {
        bn_msg_destroy (&reply);
        return -1;
    }
    if (bn_msg_set_part_raw (reply, BN_PART_METADATA, metadata,
                             (size_t)metadata_len) ||
        bn_msg_set_part_raw (reply, BN_PART_CONTENT, content,
                             strlen (content))) {
        bn_msg_destroy (&reply);
        return 1;
    }
    s_send_reply (self, self->shell, &reply);
    return 0;
}

//  Reply to the current apply_request with value (or an error if it
//  cannot be pickled).
static void
s_apply_reply (bn_engine_t *self, const bn_value_t *value)
{
    s_current_t *current = &self->current;
    int rc = s_apply_reply_text (self, value);
    if (rc == 0)
        return;
    if (rc < 0 || s_reply (self, self->shell, current->msg, BN_MSG_APPLY_REPLY,
                           json_pack ("{s:s}", "status", BN_STATUS_OK),
                           s_reply_metadata (self, current->msg, BN_STATUS_OK,
                                             current->started),
                           value))
        s_reply_error (self, self->shell, current->msg, current->started,
                       "apply", "PicklingError",
                       "the result cannot be pickled for the client", NULL);
}

static int
s_deferred_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    s_current_t *current = &self->current;
    //  zloop may call a timer that was just ended; only ours counts.
    if (timer_id != current->timer || !current->msg)
        return 0;
    current->timer = -1;
    if (current->result)
        s_apply_reply (self, current->result);
    else {
        char evalue[256];
        snprintf (evalue, sizeof evalue,
                  "the function did not finish within %g seconds",
                  current->time_limit);
        s_reply_error (self, self->shell, current->msg, current->started,
                       "apply", "TimeoutExpired", evalue, NULL);
    }
    s_finish (self);
    return 0;
}

static void
s_apply (bn_engine_t *self, bn_msg_t *request)
{
    s_current_t *current = &self->current;
    size_t nbufs = bn_msg_nbuffers (request);
    bn_bytes_t small[8];
    bn_bytes_t *bufs = nbufs <= 8 ? small : calloc (nbufs, sizeof *bufs);
    bn_apply_t apply;
    memset (&apply, 0, sizeof apply);
    char err[256] = "";
    int rc = bufs ? 0 : -1;
    if (bufs) {
        bn_bytes_from_msg (request, bufs, nbufs);
        rc = bn_apply_unpack_with (self->env->apply_memo, bufs, nbufs, &apply,
                                   err, sizeof err);
    }
    if (bufs != small)
        free (bufs);
    if (rc) {
        char evalue[512];
        snprintf (evalue, sizeof evalue, "cannot decode apply_request: %s",
                  err[0] ? err : "out of memory");
        s_reply_error (self, self->shell, request, current->started, "apply",
                       "ValueError", evalue, NULL);
        s_finish (self);
        return;
    }
    bn_functions_result_t result;
    if (apply.kind == BN_APPLY_OTHER) {
        memset (&result, 0, sizeof result);
        snprintf (result.ename, sizeof result.ename, "NotImplementedError");
        snprintf (result.evalue, sizeof result.evalue,
                  "%s cannot run on a banyan engine (it runs named C "
                  "functions, not Python code)",
                  apply.description ? apply.description : "this object");
        rc = -1;
    } else {
        const char *module =
            apply.kind == BN_APPLY_REFERENCE ? NULL : apply.module;
        rc = bn_functions_call (self->env->functions, module, apply.name,
                                apply.args, apply.kwargs, self->ns, self->id,
                                self->uuid, &result);
        apply.args = NULL; //  taken by the call
        apply.kwargs = NULL;
    }
    //  what kernel_info says runs, while it is deferred
    bool global = apply.module && apply.kind != BN_APPLY_REFERENCE;
    bn_text_t function;
    bn_text_init (&function, current->function, sizeof current->function);
    if (global) {
        bn_text_str (&function, apply.module);
        bn_text_add (&function, ".", 1);
    }
    bn_text_str (&function, apply.name ? apply.name : "?");
    if (bn_text_end (&function) < 0)
        snprintf (current->function, sizeof current->function, "%s%s%s",
                  global ? apply.module : "", global ? "." : "",
                  apply.name ? apply.name : "?");
    bn_apply_clear (&apply);
    if (rc) {
        s_reply_error (self, self->shell, request, current->started, "apply",
                       result.ename, result.evalue, NULL);
        s_finish (self);
        return;
    }
    current->time_limit = s_time_limit (self, request);
    if (result.defer > 0) {
        //  Answer later; a limit shorter than the delay wins.
        double delay = result.defer;
        if (current->time_limit > 0 && current->time_limit < delay) {
            delay = current->time_limit;
            bn_value_destroy (&result.value);
        }
        current->result = result.value;
        current->timer = zloop_timer (self->env->loop, s_ms (delay), 1,
                                      s_deferred_timer, self);
        return;
    }
    s_apply_reply (self, result.value);
    bn_value_destroy (&result.value);
    s_finish (self);
}

//  What the engine is doing, for kernel_info_reply: the request that runs
//  (its msg_id, type, when it began, and its command or function), or
//  null.
static json_t *
s_running (bn_engine_t *self)
{
    s_current_t *current = &self->current;
    if (!current->msg)
        return json_null ();
    json_t *running = json_pack (
        "{s:s, s:s, s:s}", "msg_id", bn_msg_id (current->msg), "msg_type",
        bn_msg_type (current->msg), "started", current->started);
    json_t *code = json_object_get (bn_msg_content (current->msg), "code");
    if (running && json_is_string (code) &&
        streq (bn_msg_type (current->msg), BN_MSG_EXECUTE_REQUEST))
        json_object_set (running, "code", code);
    else if (running && current->function[0])
        json_object_set_new (running, "function",
                             json_string (current->function));
    return running ? running : json_null ();
}

//  kernel_info_reply; banyan's keys bn_running (s_running) and bn_queued
//  (shell requests waiting behind it) say what the engine is busy with,
//  which a control request learns at once.
static void
s_kernel_info (bn_engine_t *self, zsock_t *sock, bn_msg_t *request,
               const char *started)
{
    s_reply (self, sock, request, BN_MSG_KERNEL_INFO_REPLY,
             json_pack ("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:[], "
                        "s:o, s:I}",
                        "status", BN_STATUS_OK, "protocol_version",
                        BN_PROTOCOL_VERSION, "implementation", "banyan",
                        "implementation_version", BANYAN_VERSION,
                        "language_info", "name", "sh", "mimetype", "text/x-sh",
                        "file_extension", ".sh", "banner",
                        "banyan engine: execute runs /bin/sh -c, apply runs "
                        "named C functions",
                        "help_links", "bn_running",
                        sock == self->control ? s_running (self) : json_null (),
                        "bn_queued", (json_int_t)zlistx_size (self->queue)),
             s_reply_metadata (self, request, BN_STATUS_OK, started), NULL);
}

//  Start handling one shell request (busy status first, doc/wire.md 9.1).
static void
s_start (bn_engine_t *self, bn_msg_t *request)
{
    s_current_t *current = &self->current;
    assert (!current->msg);
    current->msg = request;
    s_keys_read (request, &current->keys);
    current->timer = -1;
    bn_session_date (current->started);
    s_status (self, request, "busy");
    const char *type = bn_msg_type (request);
    const char *msg_id = bn_msg_id (request);
    if (s_aborted_take (self, msg_id)) {
        //  As ipykernel: an aborted reply, and no idle status after it.
        s_reply_aborted (self, request);
        s_output_clear (self);
        bn_msg_destroy (&current->msg);
        s_next (self);
        return;
    }
    if (!bn_msg_content (request) || !current->keys.object) {
        s_reply_error (self, self->shell, request, current->started, NULL,
                       "ValueError",
                       "metadata and content must be JSON objects", NULL);
        s_finish (self);
    } else if (strcmp (type, BN_MSG_EXECUTE_REQUEST) == 0)
        s_execute (self, request);
    else if (strcmp (type, BN_MSG_APPLY_REQUEST) == 0)
        s_apply (self, request);
    else if (strcmp (type, BN_MSG_KERNEL_INFO_REQUEST) == 0) {
        s_kernel_info (self, self->shell, request, current->started);
        s_finish (self);
    } else {
        char evalue[256];
        snprintf (evalue, sizeof evalue, "unknown message type '%.128s'", type);
        s_reply_error (self, self->shell, request, current->started, NULL,
                       "NotImplementedError", evalue, NULL);
        s_finish (self);
    }
}

//  Start queued requests until one runs asynchronously. A request that
//  finishes at once calls back here; the flag turns that into a loop, so
//  a long queue of quick requests does not grow the stack.
static void
s_next (bn_engine_t *self)
{
    if (self->dispatching)
        return;
    self->dispatching = true;
    while (!self->current.msg && self->state == BN_ENGINE_RUNNING &&
           zlistx_size (self->queue)) {
        bn_msg_t *request = (bn_msg_t *)zlistx_detach (self->queue, NULL);
        s_start (self, request);
    }
    self->dispatching = false;
}

//  ---------------------------------------------------------------------
//  Control requests

//  Parse a signal_request's "sig": a number or a name like "SIGINT".
static int
s_signal_number (json_t *sig)
{
    if (json_is_integer (sig)) {
        json_int_t number = json_integer_value (sig);
        return number > 0 && number < NSIG ? (int)number : -1;
    }
    const char *name = json_string_value (sig);
    if (!name)
        return -1;
    if (strncasecmp (name, "SIG", 3) == 0)
        name += 3;
    static const struct {
        const char *name;
        int number;
    } names[] = {{"INT", SIGINT},   {"TERM", SIGTERM}, {"KILL", SIGKILL},
                 {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
                 {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp (name, names[i].name) == 0)
            return names[i].number;
    return -1;
}

//  signal_request: signal the running command's process group; SIGINT,
//  SIGTERM or SIGKILL also interrupt a deferred function.
static void
s_signal (bn_engine_t *self, bn_msg_t *request, const char *started)
{
    json_t *content = bn_msg_content (request);
    int sig = s_signal_number (json_object_get (content, "sig"));
    if (sig < 0) {
        s_reply_error (self, self->control, request, started, NULL,
                       "ValueError", "'sig' must be a signal number or name",
                       NULL);
        return;
    }
    s_current_t *current = &self->current;
    if (current->shell)
        bn_shell_signal (current->shell, sig);
    else if (current->msg && current->timer >= 0 &&
             (sig == SIGINT || sig == SIGTERM || sig == SIGKILL)) {
        s_reply_error (self, self->shell, current->msg, current->started,
                       "apply", "KeyboardInterrupt",
                       "interrupted by signal_request", NULL);
        s_finish (self);
    }
    s_reply (self, self->control, request, BN_MSG_SIGNAL_REPLY,
             json_pack ("{s:s}", "status", BN_STATUS_OK),
             s_reply_metadata (self, request, BN_STATUS_OK, started), NULL);
}

//  Remember msg_id as aborted. A peer may name ids that never arrive, so
//  the set keeps two generations of at most BN_ENGINE_ABORTED_MAX ids and
//  forgets the older one when the newer is full.
static void
s_aborted_add (bn_engine_t *self, const char *msg_id)
{
    if (zhashx_size (self->aborted) >= BN_ENGINE_ABORTED_MAX) {
        zhashx_t *fresh = zhashx_new ();
        if (!fresh)
            return;
        zhashx_destroy (&self->aborted_old);
        self->aborted_old = self->aborted;
        self->aborted = fresh;
    }
    zhashx_update (self->aborted, msg_id, (void *)1);
}

//  True (and forgotten) if msg_id was aborted.
static bool
s_aborted_take (bn_engine_t *self, const char *msg_id)
{
    if (zhashx_lookup (self->aborted, msg_id)) {
        zhashx_delete (self->aborted, msg_id);
        return true;
    }
    if (self->aborted_old && zhashx_lookup (self->aborted_old, msg_id)) {
        zhashx_delete (self->aborted_old, msg_id);
        return true;
    }
    return false;
}

//  End the request that runs: its command is ended (its exit then answers
//  the request "aborted"); a function that waits, or a command that waits
//  for a slot, is answered "aborted" now.
static void
s_abort_current (bn_engine_t *self)
{
    s_current_t *current = &self->current;
    if (!current->msg || current->aborting)
        return;
    current->aborting = true;
    if (current->shell &&
        bn_shell_end (current->shell, self->env->abort_grace) == 0)
        return;
    if (current->shell || current->timer >= 0 || self->waiting) {
        s_reply_aborted (self, current->msg);
        s_finish (self);
    }
}

//  abort_request: remember msg_ids; an empty list (or null) aborts the
//  execute_requests waiting in the queue, as ipykernel does.
static void
s_abort (bn_engine_t *self, bn_msg_t *request, const char *started)
{
    json_t *ids = json_object_get (bn_msg_content (request), "msg_ids");
    //  7.1.0's client sends one id as a bare string
    if (json_is_string (ids))
        ids = json_pack ("[O]", ids);
    else
        json_incref (ids);
    bool current = false;
    if (json_is_array (ids) && json_array_size (ids) > 0) {
        size_t index;
        json_t *id;
        const char *running =
            self->current.msg ? bn_msg_id (self->current.msg) : NULL;
        json_array_foreach (ids, index, id)
        {
            const char *text = json_string_value (id);
            if (running && text && streq (text, running))
                current = true;
            else if (text)
                s_aborted_add (self, text);
        }
    } else {
        bn_msg_t *queued = (bn_msg_t *)zlistx_first (self->queue);
        while (queued) {
            if (strcmp (bn_msg_type (queued), BN_MSG_EXECUTE_REQUEST) == 0)
                s_aborted_add (self, bn_msg_id (queued));
            queued = (bn_msg_t *)zlistx_next (self->queue);
        }
    }
    json_decref (ids);
    s_reply (self, self->control, request, BN_MSG_ABORT_REPLY,
             json_pack ("{s:s}", "status", BN_STATUS_OK),
             s_reply_metadata (self, request, BN_STATUS_OK, started), NULL);
    if (current)
        s_abort_current (self);
}

static void
s_control_request (bn_engine_t *self, bn_msg_t *request)
{
    char started[BN_DATE_SIZE];
    bn_session_date (started);
    s_status (self, request, "busy");
    const char *type = bn_msg_type (request);
    bool stop = false;
    s_keys_t keys;
    s_keys_read (request, &keys);
    if (!bn_msg_content (request) || !keys.object)
        s_reply_error (self, self->control, request, started, NULL,
                       "ValueError",
                       "metadata and content must be JSON objects", NULL);
    else if (strcmp (type, BN_MSG_CLEAR_REQUEST) == 0) {
        bn_namespace_clear (self->ns);
        s_reply (self, self->control, request, BN_MSG_CLEAR_REPLY,
                 json_pack ("{s:s}", "status", BN_STATUS_OK),
                 s_reply_metadata (self, request, BN_STATUS_OK, started), NULL);
    } else if (strcmp (type, BN_MSG_ABORT_REQUEST) == 0)
        s_abort (self, request, started);
    else if (strcmp (type, BN_MSG_SHUTDOWN_REQUEST) == 0) {
        json_t *restart = json_object_get (bn_msg_content (request), "restart");
        int again = json_is_true (restart);
        s_reply (
            self, self->control, request, BN_MSG_SHUTDOWN_REPLY,
            json_pack ("{s:s, s:b}", "status", BN_STATUS_OK, "restart", again),
            s_reply_metadata (self, request, BN_STATUS_OK, started), NULL);
        //  The copy on iopub is how the hub learns of it (doc/wire.md 9.4).
        s_publish (
            self, request, BN_MSG_SHUTDOWN_REPLY, "shutdown",
            json_pack ("{s:s, s:b}", "status", BN_STATUS_OK, "restart", again),
            false);
        stop = true;
    } else if (strcmp (type, BN_MSG_SIGNAL_REQUEST) == 0)
        s_signal (self, request, started);
    else if (strcmp (type, BN_MSG_KERNEL_INFO_REQUEST) == 0)
        s_kernel_info (self, self->control, request, started);
    else {
        char evalue[256];
        snprintf (evalue, sizeof evalue,
                  "unknown control message type '%.128s'", type);
        s_reply_error (self, self->control, request, started, NULL,
                       "NotImplementedError", evalue, NULL);
    }
    s_status (self, request, "idle");
    bn_msg_destroy (&request);
    //  The hub unregisters the engine when it sees the iopub copy; an
    //  unregistration_request too would race it (7.1.0 logs an error).
    if (stop)
        s_stop (self, BN_ENGINE_EXIT_OK, false);
}

//  ---------------------------------------------------------------------
//  Receiving

//  Check a received message; counts and logs what it drops. Returns 0 if
//  it may be handled.
static int
s_accept (bn_engine_t *self, bn_msg_t *msg, const char *where)
{
    self->stats.received++;
    //  the scans check that the header is a well-formed object; the reply
    //  copies it as its parent without a JSON tree
    return bn_msg_check (msg, self->session,
                         BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER,
                         &self->stats.drops, "engine %d on %s", self->id, where)
               ? -1
               : 0;
}

void
bn_engine_shell_request (bn_engine_t *self, bn_msg_t **msg_p)
{
    assert (self);
    assert (msg_p);
    bn_msg_t *msg = *msg_p;
    *msg_p = NULL;
    if (!msg || self->state != BN_ENGINE_RUNNING ||
        s_accept (self, msg, "shell")) {
        bn_msg_destroy (&msg);
        return;
    }
    zlistx_add_end (self->queue, msg);
    s_next (self);
}

void
bn_engine_control_request (bn_engine_t *self, bn_msg_t **msg_p)
{
    assert (self);
    assert (msg_p);
    bn_msg_t *msg = *msg_p;
    *msg_p = NULL;
    if (!msg || self->state != BN_ENGINE_RUNNING ||
        s_accept (self, msg, "control"))
        bn_msg_destroy (&msg);
    else
        s_control_request (self, msg);
}

//  The shell and control sockets are watched as readers (bn_watch_reader):
//  each handler reads until a receive finds the socket empty, or asks to be
//  called again when it stops before, with no other look at the socket.
static void
s_shell_event (bn_watch_item_t *item, void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    for (int i = 0; self->state == BN_ENGINE_RUNNING; i++) {
        if (i == S_DRAIN) {
            bn_watch_again (self->env->watch, item);
            break;
        }
        bn_msg_t *msg =
            bn_msg_recv_flags (zsock_resolve (self->shell), ZMQ_DONTWAIT);
        if (!msg)
            break;
        if (s_accept (self, msg, "shell")) {
            bn_msg_destroy (&msg);
            continue;
        }
        zlistx_add_end (self->queue, msg);
        s_next (self);
    }
}

static void
s_control_event (bn_watch_item_t *item, void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    for (int i = 0; self->state == BN_ENGINE_RUNNING; i++) {
        if (i == S_DRAIN) {
            bn_watch_again (self->env->watch, item);
            break;
        }
        bn_msg_t *msg =
            bn_msg_recv_flags (zsock_resolve (self->control), ZMQ_DONTWAIT);
        if (!msg)
            break;
        if (s_accept (self, msg, "control"))
            bn_msg_destroy (&msg);
        else
            s_control_request (self, msg);
    }
}

//  ---------------------------------------------------------------------
//  Registration and heartbeat

static void
s_send_unregistration (bn_engine_t *self, zsock_t *sock)
{
    bn_msg_t *msg = bn_msg_new (self->session, BN_MSG_UNREGISTRATION_REQUEST);
    if (!msg)
        return;
    bn_msg_set_content (msg, self->id >= 0 ? json_pack ("{s:i}", "id", self->id)
                                           : json_pack ("{s:n}", "id"));
    if (bn_msg_send_flags (&msg, zsock_resolve (sock), self->session,
                           ZMQ_DONTWAIT))
        bn_log_warn ("engine %d: cannot send unregistration_request: %s",
                     self->id, zmq_strerror (zmq_errno ()));
    if (sock == self->env->registration)
        bn_watch_check (self->env->watch, self->env->registration_item);
}

//  Build the commands' environment: ours plus the engine's id and uuid.
static char **
s_make_envp (bn_engine_t *self)
{
    size_t count = 0;
    while (environ && environ[count])
        count++;
    char **envp = calloc (count + 3, sizeof *envp);
    if (!envp)
        return NULL;
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp (environ[i], S_ENGINE_ID_VAR "=",
                     strlen (S_ENGINE_ID_VAR) + 1) &&
            strncmp (environ[i], S_ENGINE_UUID_VAR "=",
                     strlen (S_ENGINE_UUID_VAR) + 1))
            envp[used++] = environ[i];
    //  The last two entries are ours to free.
    envp[used++] = zsys_sprintf ("%s=%d", S_ENGINE_ID_VAR, self->id);
    envp[used++] = zsys_sprintf ("%s=%s", S_ENGINE_UUID_VAR, self->uuid);
    envp[used] = NULL;
    return envp;
}

static void
s_free_envp (char **envp)
{
    if (!envp)
        return;
    size_t count = 0;
    while (envp[count])
        count++;
    for (size_t i = count >= 2 ? count - 2 : 0; i < count; i++)
        free (envp[i]);
    free (envp);
}

static void
s_registered (bn_engine_t *self, json_t *content)
{
    self->id = (int)json_integer_value (json_object_get (content, "id"));
    json_t *period = json_object_get (content, "hb_period");
    json_int_t asked = json_integer_value (period);
    //  the period divides and is added to in bn_engine_tick: keep it sane
    self->hb_period =
        json_is_integer (period) && asked > 0 && asked <= S_MAX_HB_MS
            ? (int)asked
            : S_DEFAULT_HB_MS;
    if (period && self->hb_period != asked)
        bn_log_warn ("engine %s: hb_period %" JSON_INTEGER_FORMAT
                     " ignored; using %d ms",
                     self->uuid, asked, self->hb_period);
    snprintf (self->topic, sizeof self->topic, "engine.%d.", self->id);
    self->envp = s_make_envp (self);
    //  banyan's hub took the shared broadcast connection we offered
    json_t *port = json_object_get (content, BN_REG_BROADCAST_PORT);
    json_int_t index = json_integer_value (port);
    if (self->env->broadcast_via && json_is_integer (port) && index >= 0 &&
        (size_t)index < bn_connfile_broadcast_count (self->env->connfile)) {
        if (self->env->broadcast_join ((int)index,
                                       self->env->broadcast_join_arg) != 0) {
            bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
            return;
        }
        self->shared_broadcast = true;
    }
    if (self->env->shell) {
        //  the process's sockets, already connected
        self->shell = self->env->shell;
        self->control = self->env->control;
        if (!self->envp) {
            bn_log_error ("engine %d: out of memory", self->id);
            bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
            return;
        }
    } else if (s_own_sockets (self))
        return;
    s_close (self, &self->registration, &self->registration_item);
    self->state = BN_ENGINE_RUNNING;
    self->last_ping = zclock_mono ();
    s_status (self, NULL, "starting");
    bn_log_info ("engine %d registered as %s", self->id, self->uuid);
    if (self->env->on_state)
        self->env->on_state (self, self->env->arg);
}

//  Make and connect the engine's own shell, control and pong sockets, and
//  watch them. Returns -1 when it could not (the engine has stopped).
static int
s_own_sockets (bn_engine_t *self)
{
    bn_connfile_t *cf = self->env->connfile;
    size_t nbroadcast = bn_connfile_broadcast_count (cf);
    self->shell = s_socket (self, ZMQ_ROUTER, NULL, false);
    self->control = s_socket (self, ZMQ_ROUTER, NULL, false);
    self->pong = s_socket (self, ZMQ_DEALER, NULL, false);
    int rc = self->shell && self->control && self->pong && self->envp ? 0 : -1;
    if (!rc)
        rc = s_connect_key (self, self->shell, "mux");
    if (!rc)
        rc = s_connect_key (self, self->shell, "task");
    if (!rc && nbroadcast && !self->shared_broadcast) {
        char *url =
            bn_connfile_broadcast_url (cf, (size_t)self->id % nbroadcast);
        rc = url ? zsock_connect (self->shell, "%s", url) : -1;
        free (url);
    }
    if (!rc)
        rc = s_connect_key (self, self->control, "control");
    if (!rc)
        rc = s_connect_key (self, self->pong, "hb_pong");
    if (rc) {
        bn_log_error ("engine %d: cannot connect its sockets", self->id);
        bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
        return -1;
    }
    self->shell_item = bn_watch_reader (
        self->env->watch, zsock_resolve (self->shell), s_shell_event, self);
    self->control_item = bn_watch_reader (
        self->env->watch, zsock_resolve (self->control), s_control_event, self);
    if (!self->shell_item || !self->control_item) {
        bn_log_error ("engine %d: cannot watch its sockets", self->id);
        bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
        return -1;
    }
    return 0;
}

int
bn_engine_registration_reply (bn_engine_t *self, bn_msg_t **msg_p)
{
    assert (self);
    assert (msg_p);
    bn_msg_t *msg = *msg_p;
    *msg_p = NULL;
    if (!msg || s_accept (self, msg, "registration")) {
        bn_msg_destroy (&msg);
        return -1;
    }
    if (self->state != BN_ENGINE_REGISTERING) {
        bn_log_debug ("engine %d: ignored a %s after registering", self->id,
                      bn_msg_type (msg));
        bn_msg_destroy (&msg);
        return -1;
    }
    int rc = 0;
    self->env->last_reply = zclock_mono ();
    json_t *content = bn_msg_content (msg);
    const char *status =
        json_string_value (json_object_get (content, "status"));
    if (strcmp (bn_msg_type (msg), BN_MSG_REGISTRATION_REPLY) != 0) {
        bn_log_warn ("engine %s: ignored a %s while registering", self->uuid,
                     bn_msg_type (msg));
        rc = -1;
    } else if (status && strcmp (status, BN_STATUS_OK) == 0 &&
               json_is_integer (json_object_get (content, "id")) &&
               json_integer_value (json_object_get (content, "id")) >= 0 &&
               json_integer_value (json_object_get (content, "id")) < INT32_MAX)
        s_registered (self, content);
    else {
        const char *evalue =
            json_string_value (json_object_get (content, "evalue"));
        bn_log_error ("engine %s: registration refused: %s", self->uuid,
                      evalue ? evalue : "bad registration_reply");
        bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
    }
    bn_msg_destroy (&msg);
    return rc;
}

//  A reply on the engine's own registration socket.
static void
s_registration_event (bn_watch_item_t *item, void *arg)
{
    bn_engine_t *self = (bn_engine_t *)arg;
    bn_msg_t *msg =
        bn_msg_recv_flags (zsock_resolve (self->registration), ZMQ_DONTWAIT);
    if (msg)
        bn_engine_registration_reply (self, &msg);
}

//  ---------------------------------------------------------------------
//  Public API

bn_engine_t *
bn_engine_new (bn_engine_env_t *env, int requested_id)
{
    assert (env);
    assert (env->loop);
    assert (env->watch);
    assert (env->connfile);
    assert (env->iopub);
    assert (env->functions);
    bn_engine_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->env = env;
    self->requested_id = requested_id;
    self->id = -1;
    self->state = BN_ENGINE_REGISTERING;
    self->current.timer = -1;
    self->hb_period = S_DEFAULT_HB_MS;
    self->session = bn_session_new (bn_connfile_key (env->connfile), NULL);
    self->ns = bn_namespace_new ();
    self->queue = zlistx_new ();
    self->aborted = zhashx_new ();
    if (!self->session || !self->ns || !self->queue || !self->aborted) {
        bn_engine_destroy (&self);
        return NULL;
    }
    self->uuid = bn_session_id (self->session);
    zlistx_set_destructor (self->queue, (zlistx_destructor_fn *)bn_msg_destroy);
    snprintf (self->topic, sizeof self->topic, "engine.-1.");
    return self;
}

void
bn_engine_destroy (bn_engine_t **self_p)
{
    assert (self_p);
    bn_engine_t *self = *self_p;
    if (!self)
        return;
    if (self->current.timer >= 0)
        zloop_timer_end (self->env->loop, self->current.timer);
    s_drop_shell (self);
    bn_value_destroy (&self->current.result);
    s_output_clear (self);
    bn_msg_destroy (&self->current.msg);
    s_close_all (self);
    zlistx_destroy (&self->queue);
    zhashx_destroy (&self->aborted);
    zhashx_destroy (&self->aborted_old);
    bn_namespace_destroy (&self->ns);
    s_free_envp (self->envp);
    bn_session_destroy (&self->session);
    free (self);
    *self_p = NULL;
}

int
bn_engine_reserve_history (bn_engine_t *self)
{
    assert (self);
    return bn_session_reserve_history (self->session);
}

int
bn_engine_start (bn_engine_t *self, bool shared)
{
    assert (self);
    if (!shared) {
        char *url = bn_connfile_url (self->env->connfile, "registration");
        self->registration =
            url ? s_socket (self, ZMQ_DEALER, url, false) : NULL;
        free (url);
        if (!self->registration)
            return -1;
        self->registration_item = bn_watch_sock (
            self->env->watch, self->registration, s_registration_event, self);
        if (!self->registration_item)
            return -1;
    }
    bn_msg_t *msg = bn_msg_new (self->session, BN_MSG_REGISTRATION_REQUEST);
    if (!msg)
        return -1;
    json_t *content = self->requested_id >= 0
                          ? json_pack ("{s:s, s:i}", "uuid", self->uuid, "id",
                                       self->requested_id)
                          : json_pack ("{s:s, s:n}", "uuid", self->uuid, "id");
    if (!content ||
        json_object_set_new (content, BN_REG_FEATURES,
                             json_pack ("[s]", BN_FEATURE_OUTPUT)) ||
        (self->env->broadcast_via &&
         json_object_set_new (content, BN_REG_BROADCAST_VIA,
                              json_string (self->env->broadcast_via)))) {
        json_decref (content);
        bn_msg_destroy (&msg);
        return -1;
    }
    bn_msg_set_content (msg, content);
    //  Never blocks: a connection whose security handshake the controller
    //  refused has no pipe to queue on, and a blocking send waited for
    //  ever. The request is then lost; the handshake watcher stops the
    //  engines with the reason, or the registration times out.
    zsock_t *sock = shared ? self->env->registration : self->registration;
    int rc = bn_msg_send_flags (&msg, zsock_resolve (sock), self->session,
                                ZMQ_DONTWAIT);
    bn_watch_check (self->env->watch, shared ? self->env->registration_item
                                             : self->registration_item);
    if (rc && errno != EAGAIN)
        return -1;
    self->deadline =
        zclock_mono () + (int64_t)(self->env->registration_timeout * 1000);
    return 0;
}

void
bn_engine_stop (bn_engine_t *self, bn_engine_exit_t code)
{
    assert (self);
    s_stop (self, code, true);
}

static void
s_stop (bn_engine_t *self, bn_engine_exit_t code, bool unregister)
{
    if (self->state == BN_ENGINE_STOPPED)
        return;
    bool was_running = self->state == BN_ENGINE_RUNNING;
    self->state = BN_ENGINE_STOPPED;
    self->exit_code = code;
    if (self->current.timer >= 0)
        zloop_timer_end (self->env->loop, self->current.timer);
    self->current.timer = -1;
    s_drop_shell (self);
    bn_value_destroy (&self->current.result);
    s_output_clear (self);
    bn_msg_destroy (&self->current.msg);
    zlistx_purge (self->queue);
    s_start_waiting (self->env);
    if (code == BN_ENGINE_EXIT_REGISTRATION && !was_running && self->deadline)
        //  As ipengine on a registration timeout: {"id": null}.
        s_send_unregistration (self, self->registration
                                         ? self->registration
                                         : self->env->registration);
    s_close_all (self);
    if (was_running && unregister)
        s_send_unregistration (self, self->env->registration);
    if (self->env->on_state)
        self->env->on_state (self, self->env->arg);
}

void
bn_engine_ping (bn_engine_t *self, zmq_msg_t *ping)
{
    assert (self);
    if (self->state != BN_ENGINE_RUNNING)
        return;
    self->last_ping = zclock_mono ();
    //  A heart pings again with the same text while it waits for new
    //  hearts (every 100 ms while engines register): one answer to each
    //  text is all it counts, and thousands of engines answering every
    //  repeat would bury the pongs it waits for.
    size_t size = zmq_msg_size (ping);
    if (self->answered_size && size == self->answered_size &&
        memcmp (zmq_msg_data (ping), self->answered, size) == 0)
        return;
    self->answered_size = size < sizeof self->answered ? size : 0;
    if (self->answered_size)
        memcpy (self->answered, zmq_msg_data (ping), size);
    //  on the process's pong socket, the engine named first
    void *pong = zsock_resolve (self->env->pong ? self->env->pong : self->pong);
    if (self->env->pong && zmq_send (pong, self->uuid, strlen (self->uuid),
                                     ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return;
    zmq_msg_t copy;
    zmq_msg_init (&copy);
    if (zmq_msg_copy (&copy, ping) == 0 &&
        zmq_msg_send (&copy, pong, ZMQ_DONTWAIT) >= 0)
        self->stats.pings++;
    else
        zmq_msg_close (&copy);
}

void
bn_engine_tick (bn_engine_t *self, int64_t now_ms)
{
    assert (self);
    //  A tick long after the previous one (or after the registration): this
    //  process was stopped (or starved of the processor), and the
    //  controller's silence meanwhile is not its to judge; the pings that
    //  waited may not even be read yet. It counts again from now.
    int64_t since =
        self->last_tick > self->last_ping ? self->last_tick : self->last_ping;
    if (since && now_ms - since > S_TICK_GAP_MS)
        self->last_ping = now_ms;
    self->last_tick = now_ms;
    //  A reply may be waiting behind other engines' work: read it first.
    if (self->state == BN_ENGINE_REGISTERING && self->deadline &&
        now_ms >= self->deadline && self->registration)
        s_registration_event (self->registration_item, self);
    //  The controller answers the engines of this process in turn: one
    //  that answered another of them within the timeout is slow, not
    //  gone, and this engine waits on.
    int64_t progress = self->env->last_reply +
                       (int64_t)(self->env->registration_timeout * 1000);
    if (self->state == BN_ENGINE_REGISTERING && self->deadline &&
        now_ms >= self->deadline && now_ms >= progress) {
        bn_log_error ("engine %s: no registration_reply within %g s",
                      self->uuid, self->env->registration_timeout);
        bn_engine_stop (self, BN_ENGINE_EXIT_REGISTRATION);
    } else if (self->state == BN_ENGINE_RUNNING) {
        int64_t silent = now_ms - self->last_ping;
        //  ipengine counts a miss per hb_period + 500 ms without a ping.
        int64_t misses = silent / (self->hb_period + 500);
        //  engine.timeout, but never less than three ping periods, so a
        //  slowly beating controller is not taken for a gone one.
        double timeout = self->env->timeout;
        double floor_s = 3.0 * self->hb_period / 1000.0 + 0.5;
        if (timeout > 0 && timeout < floor_s)
            timeout = floor_s;
        bool gone = (timeout > 0 && silent >= (int64_t)(timeout * 1000)) ||
                    (self->env->heartbeat_misses > 0 &&
                     misses >= self->env->heartbeat_misses);
        if (gone) {
            bn_log_error ("engine %d: no heartbeat from the controller for "
                          "%.1f s; unregistering",
                          self->id, silent / 1000.0);
            bn_engine_stop (self, BN_ENGINE_EXIT_CONTROLLER_GONE);
        }
    }
}

bn_engine_state_t
bn_engine_state (bn_engine_t *self)
{
    assert (self);
    return self->state;
}

bn_engine_exit_t
bn_engine_exit_code (bn_engine_t *self)
{
    assert (self);
    return self->exit_code;
}

int
bn_engine_id (bn_engine_t *self)
{
    assert (self);
    return self->id;
}

const char *
bn_engine_uuid (bn_engine_t *self)
{
    assert (self);
    return self->uuid;
}

const bn_engine_stats_t *
bn_engine_stats (bn_engine_t *self)
{
    assert (self);
    return &self->stats;
}

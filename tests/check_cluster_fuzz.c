/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_fuzz: a controller and a banyan engine in one process take
    a storm of signed messages with mutated content, and unsigned garbage,
    on every port; then they must still answer a connection_request and
    run an apply through the mux.  */
#include "bn_apply.h"
#include "bn_ctltest.h"
#include "bn_engine_actor.h"
#include "bn_value.h"

#include <stdint.h>

#define S_SEED 0x5eed2024u   //  fixed: a failure replays the same storm
#define S_ROUNDS 3000        //  messages in the storm
#define S_HEART "fuzz-heart" //  identity of the fuzzer's fake engine
#define S_SETTLE 12000       //  ms the cluster gets to answer afterwards

//  Where a storm message goes.
typedef enum {
    S_QUERY,       //  client registration (hub)
    S_MUX,         //  client mux
    S_CONTROL,     //  client control
    S_TASK,        //  client task (refuser)
    S_BCAST,       //  client broadcast root (refuser)
    S_REG,         //  engine registration, identity S_HEART
    S_MUX_OUT,     //  engine side of mux
    S_CONTROL_OUT, //  engine side of control
    S_TASK_OUT,    //  engine side of task
    S_LEAF,        //  a broadcast leaf
    S_IOPUB,       //  engine iopub (a PUB into the controller's SUB)
    S_PONG,        //  heart pongs, identity S_HEART
    S_TARGETS
} s_target_t;

typedef struct {
    uint64_t rng;
    bn_session_t *session; //  signs with the cluster key
    zsock_t *sock[S_TARGETS];
    zsock_t *ping; //  heart pings, to echo as S_HEART
    char uuid[64]; //  the banyan engine
    int engine_id;
    zmsg_t *last; //  last signed message, to replay
    s_target_t last_target;
} s_fuzz_t;

static uint64_t
s_rand (s_fuzz_t *self)
{
    //  xorshift64*
    self->rng ^= self->rng >> 12;
    self->rng ^= self->rng << 25;
    self->rng ^= self->rng >> 27;
    return self->rng * 2685821657736338717ull;
}

static size_t
s_below (s_fuzz_t *self, size_t n)
{
    return (size_t)(s_rand (self) % n);
}

static bool
s_chance (s_fuzz_t *self, int percent)
{
    return (int)s_below (self, 100) < percent;
}

#define S_PICK(self, array)                                                    \
    (array[s_below (self, sizeof array / sizeof array[0])])

static const char *s_types[] = {
    BN_MSG_APPLY_REQUEST,
    BN_MSG_APPLY_REPLY,
    BN_MSG_EXECUTE_REQUEST,
    BN_MSG_EXECUTE_REPLY,
    BN_MSG_KERNEL_INFO_REQUEST,
    BN_MSG_KERNEL_INFO_REPLY,
    BN_MSG_CLEAR_REQUEST,
    BN_MSG_CLEAR_REPLY,
    BN_MSG_ABORT_REQUEST,
    BN_MSG_ABORT_REPLY,
    BN_MSG_SHUTDOWN_REQUEST,
    BN_MSG_SHUTDOWN_REPLY,
    BN_MSG_SIGNAL_REQUEST,
    BN_MSG_SIGNAL_REPLY,
    BN_MSG_STATUS,
    BN_MSG_STREAM,
    BN_MSG_EXECUTE_INPUT,
    BN_MSG_EXECUTE_RESULT,
    BN_MSG_DISPLAY_DATA,
    BN_MSG_ERROR,
    BN_MSG_DATA_MESSAGE,
    BN_MSG_REGISTRATION_REQUEST,
    BN_MSG_REGISTRATION_REPLY,
    BN_MSG_UNREGISTRATION_REQUEST,
    BN_MSG_CONNECTION_REQUEST,
    BN_MSG_CONNECTION_REPLY,
    BN_MSG_QUEUE_REQUEST,
    BN_MSG_QUEUE_REPLY,
    BN_MSG_RESULT_REQUEST,
    BN_MSG_HISTORY_REQUEST,
    BN_MSG_DB_REQUEST,
    BN_MSG_PURGE_REQUEST,
    BN_MSG_RESUBMIT_REQUEST,
    BN_MSG_HUB_ERROR,
    BN_MSG_REGISTRATION_NOTIFICATION,
    BN_MSG_UNREGISTRATION_NOTIFICATION,
    BN_MSG_SHUTDOWN_NOTIFICATION,
    "",
    "bogus",
    "x_request",
    "quote\"d_request",
    "back\\slash",
    "new\nline_request",
    "caf\xc3\xa9_request",
    "%s%n%x_request",
};

static const char *s_keys[] = {
    "uuid",
    "id",
    "targets",
    "verbose",
    "code",
    "silent",
    "sig",
    "msg_ids",
    "restart",
    "time_limit",
    "is_broadcast",
    "is_coalescing",
    "original_msg_id",
    "status",
    "hb_period",
    "msg_id",
    "msg_type",
    "session",
    "username",
    "date",
    "version",
    "engine",
    "name",
    "text",
    "execution_state",
    "evalue",
    "ename",
    "connection_info",
    "engines",
    "broadcast_targets",
    "store_history",
    "allow_stdin",
};

static const json_int_t s_ints[] = {
    0,
    1,
    -1,
    2,
    15,
    9,
    19,
    INT32_MAX - 1,
    INT32_MAX,
    (json_int_t)INT32_MAX + 1,
    INT32_MIN,
    4294966796ll, //  -500 as a 32-bit int
    (json_int_t)1 << 53,
    INT64_MAX,
    INT64_MIN,
};

static const char *s_strings[] = {
    "",
    "x",
    "SIGINT",
    "TERM",
    "SIGSTOPPED",
    "0-3",
    "a\"b",
    "\xf0\x9f\x92\xa5",
    "%s%n%x%p",
    "ok",
    "error",
    "echo",
    "ipyparallel.util._push",
    S_HEART,
    "sub_scheduler_0",
    "mux_in",
};

//  A short-lived shell command: never anything that could touch files.
static const char *s_codes[] = {
    "true", "false", "exit 3", "echo fuzz", "echo err >&2", "sleep 0.01", ":"};

static char *
s_long_string (s_fuzz_t *self)
{
    size_t size = 200 + s_below (self, 1200);
    char *text = malloc (size + 1);
    ck_assert_ptr_nonnull (text);
    for (size_t i = 0; i < size; i++)
        text[i] = (char)('a' + s_below (self, 26));
    //  a multi-byte character where a 1024-byte buffer may cut it
    if (size > 1030)
        memcpy (text + 1021, "\xe2\x82\xac\xe2\x82\xac", 6);
    text[size] = 0;
    return text;
}

static json_t *
s_string (s_fuzz_t *self)
{
    int which = (int)s_below (self, 10);
    if (which == 0)
        return json_string (self->uuid);
    if (which == 1) {
        char *text = s_long_string (self);
        json_t *value = json_string (text);
        free (text);
        return value;
    }
    if (which == 2)
        return json_string (S_PICK (self, s_types));
    return json_string (S_PICK (self, s_strings));
}

static json_t *s_value (s_fuzz_t *self, int depth);

static json_t *
s_object (s_fuzz_t *self, int depth)
{
    json_t *object = json_object ();
    size_t keys = s_below (self, 5);
    for (size_t i = 0; i < keys; i++)
        json_object_set_new (object, S_PICK (self, s_keys),
                             s_value (self, depth + 1));
    return object;
}

static json_t *
s_value (s_fuzz_t *self, int depth)
{
    switch (s_below (self, depth > 3 ? 6 : 9)) {
    case 0:
        return json_null ();
    case 1:
        return json_boolean (s_chance (self, 50));
    case 2:
        return json_integer (S_PICK (self, s_ints));
    case 3:
        return json_real (s_chance (self, 50) ? 0.5 : -1e300);
    case 4:
    case 5:
        return s_string (self);
    case 6:
        return json_integer (self->engine_id);
    case 7: {
        json_t *array = json_array ();
        size_t items = s_below (self, 4);
        for (size_t i = 0; i < items; i++)
            json_array_append_new (array, s_value (self, depth + 1));
        return array;
    }
    default:
        return s_object (self, depth);
    }
}

//  Content that reaches past the first checks of a handler of type.
static json_t *
s_content (s_fuzz_t *self, const char *type, s_target_t target)
{
    json_t *content = s_chance (self, 30) ? s_object (self, 1) : json_object ();
    if (streq (type, BN_MSG_REGISTRATION_REQUEST)) {
        json_object_set_new (content, "uuid",
                             s_chance (self, 40)   ? json_string (S_HEART)
                             : s_chance (self, 50) ? s_string (self)
                                                   : s_value (self, 1));
        json_object_set_new (content, "id", s_value (self, 1));
    } else if (streq (type, BN_MSG_UNREGISTRATION_REQUEST)) {
        json_t *id = s_value (self, 1);
        //  the real engine leaving would be no bug
        if (json_is_integer (id) && json_integer_value (id) == self->engine_id)
            json_integer_set (id, self->engine_id + 1000);
        json_object_set_new (content, "id", id);
    } else if (streq (type, BN_MSG_QUEUE_REQUEST)) {
        json_object_set_new (content, "targets", s_value (self, 1));
        json_object_set_new (content, "verbose", s_value (self, 2));
    } else if (streq (type, BN_MSG_EXECUTE_REQUEST))
        json_object_set_new (content, "code",
                             s_chance (self, 85)
                                 ? json_string (S_PICK (self, s_codes))
                                 : json_integer (7));
    else if (streq (type, BN_MSG_SIGNAL_REQUEST)) {
        static const char *sigs[] = {"SIGINT", "term", "USR2", "nope", "SIG"};
        json_object_set_new (content, "sig",
                             s_chance (self, 50)
                                 ? json_string (S_PICK (self, sigs))
                                 : json_integer (S_PICK (self, s_ints)));
        //  SIGSTOP (19) would hold the engine: legitimate, not a bug
        json_t *sig = json_object_get (content, "sig");
        if (json_integer_value (sig) == 19 || json_integer_value (sig) == 9)
            json_integer_set (sig, 2);
    } else if (streq (type, BN_MSG_ABORT_REQUEST)) {
        json_t *ids = json_array ();
        for (size_t i = s_below (self, 4); i > 0; i--)
            json_array_append_new (ids, s_string (self));
        json_object_set_new (content, "msg_ids",
                             s_chance (self, 80) ? ids : json_integer (1));
        if (!json_is_array (json_object_get (content, "msg_ids")))
            json_decref (ids);
    } else if (streq (type, BN_MSG_SHUTDOWN_REQUEST))
        json_object_set_new (content, "restart", s_value (self, 2));
    (void)target;
    return content;
}

static json_t *
s_header (s_fuzz_t *self, const char *type, s_target_t target)
{
    char msg_id[BN_MSG_ID_SIZE];
    bn_session_msg_id (self->session, msg_id);
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    json_t *header = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id",
                                msg_id, "msg_type", type, "username", "fuzz",
                                "session", bn_session_id (self->session),
                                "date", date, "version", BN_PROTOCOL_VERSION);
    ck_assert_ptr_nonnull (header);
    if (s_chance (self, 4))
        json_object_del (header, "msg_id");
    if (s_chance (self, 4))
        json_object_set_new (header, "msg_id", s_value (self, 2));
    if (s_chance (self, 4))
        json_object_del (header, "msg_type");
    if (s_chance (self, 4))
        json_object_set_new (header, "msg_type", s_value (self, 2));
    if (s_chance (self, 5))
        json_object_set_new (header, "session", s_value (self, 2));
    if (s_chance (self, 5))
        json_object_set_new (header, S_PICK (self, s_keys), s_value (self, 2));
    //  an engine's shutdown_reply on iopub unregisters it: no bug
    json_t *session = json_object_get (header, "session");
    if (target == S_IOPUB && json_is_string (session) &&
        streq (json_string_value (session), self->uuid))
        json_object_set_new (header, "session", json_string ("someone"));
    return header;
}

//  A JSON part's bytes: mostly an object, sometimes anything.
static char *
s_part_text (s_fuzz_t *self, json_t *object, int bad_percent)
{
    if (!s_chance (self, bad_percent))
        return json_dumps (object, JSON_COMPACT);
    static const char *bad[] = {"",      "not json",   "[1,2]",
                                "42",    "null",       "{",
                                "\"s\"", "{\"a\":1}{", "\xff\xfe"};
    return strdup (S_PICK (self, bad));
}

//  Add apply buffers: a good call, a mangled one, or random bytes.
static void
s_buffers (s_fuzz_t *self, zmsg_t *frames, const char *type)
{
    bool apply = streq (type, BN_MSG_APPLY_REQUEST) && s_chance (self, 80);
    if (apply) {
        static const char *functions[] = {
            "echo",    "noop", "len", "sum", "nope", "ipyparallel.util._pull",
            "checksum"};
        bn_value_t *args = bn_value_new_list ();
        for (size_t i = s_below (self, 3); i > 0; i--)
            bn_value_append (args,
                             s_chance (self, 50)
                                 ? bn_value_new_int ((int64_t)s_rand (self))
                                 : bn_value_new_str ("fuzz"));
        zmsg_t *bufs =
            bn_apply_pack_reference (S_PICK (self, functions), args, NULL);
        bn_value_destroy (&args);
        ck_assert_ptr_nonnull (bufs);
        bool mangle = s_chance (self, 40);
        zframe_t *frame = zmsg_pop (bufs);
        while (frame) {
            if (mangle && zframe_size (frame) && s_chance (self, 50)) {
                size_t at = s_below (self, zframe_size (frame));
                if (s_chance (self, 50))
                    zframe_data (frame)[at] ^= (byte)(1 + s_below (self, 255));
                else {
                    zframe_t *cut = zframe_new (zframe_data (frame), at);
                    zframe_destroy (&frame);
                    frame = cut;
                }
            }
            zmsg_append (frames, &frame);
            frame = zmsg_pop (bufs);
        }
        zmsg_destroy (&bufs);
        return;
    }
    for (size_t i = s_below (self, 3); i > 0; i--) {
        byte data[64];
        size_t size = s_below (self, sizeof data);
        for (size_t j = 0; j < size; j++)
            data[j] = (byte)s_rand (self);
        zmsg_addmem (frames, data, size);
    }
}

//  Routing frames ahead of the delimiter for target.
static void
s_idents (s_fuzz_t *self, zmsg_t *frames, s_target_t target)
{
    bool client_relay = target == S_MUX || target == S_CONTROL;
    if (client_relay && s_chance (self, 75))
        zmsg_addstr (frames, self->uuid);
    else if (client_relay && s_chance (self, 30))
        zmsg_addstr (frames, S_HEART);
    size_t extra = s_below (self, 4);
    if (!s_chance (self, 30))
        extra = 0;
    for (size_t i = 0; i < extra; i++) {
        static const char *idents[] = {
            "", "x", "mux_in", "control_in", "sub_scheduler_0", S_HEART};
        if (s_chance (self, 20))
            zmsg_addstr (frames, self->uuid);
        else
            zmsg_addstr (frames, S_PICK (self, idents));
    }
}

//  One signed message of a random type with mutated parts.
static zmsg_t *
s_signed (s_fuzz_t *self, s_target_t target)
{
    const char *type = S_PICK (self, s_types);
    //  the fake engine registers often, to be pinged, relayed to, dropped
    if (target == S_REG && s_chance (self, 50))
        type = BN_MSG_REGISTRATION_REQUEST;
    //  stopping the controller or the engine is what these ask for
    bool to_engine = target == S_CONTROL || target == S_CONTROL_OUT;
    if (streq (type, BN_MSG_SHUTDOWN_REQUEST) &&
        (target == S_QUERY || target == S_REG || to_engine))
        type = BN_MSG_KERNEL_INFO_REQUEST;
    json_t *header = s_header (self, type, target);
    json_t *parent = s_chance (self, 20)
                         ? s_header (self, S_PICK (self, s_types), target)
                         : s_object (self, 2);
    json_t *metadata = s_object (self, 1);
    if (s_chance (self, 20))
        json_object_set_new (metadata, "time_limit",
                             s_chance (self, 50) ? json_real (0.05)
                                                 : json_integer (-3));
    json_t *content = s_content (self, type, target);
    char *parts[4] = {
        s_part_text (self, header, 3), s_part_text (self, parent, 4),
        s_part_text (self, metadata, 4), s_part_text (self, content, 4)};
    json_decref (header);
    json_decref (parent);
    json_decref (metadata);
    json_decref (content);
    const void *data[4];
    size_t sizes[4];
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_nonnull (parts[i]);
        data[i] = parts[i];
        sizes[i] = strlen (parts[i]);
    }
    char sig[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (self->session, data, sizes, sig);
    zmsg_t *frames = zmsg_new ();
    s_idents (self, frames, target);
    zmsg_addmem (frames, BN_DELIM, BN_DELIM_SIZE);
    zmsg_addstr (frames, sig);
    for (int i = 0; i < 4; i++) {
        zmsg_addmem (frames, parts[i], sizes[i]);
        free (parts[i]);
    }
    s_buffers (self, frames, type);
    return frames;
}

//  Frames that are not a signed message: random, unsigned, unframed.
static zmsg_t *
s_garbage (s_fuzz_t *self)
{
    zmsg_t *frames = zmsg_new ();
    int kind = (int)s_below (self, 3);
    if (kind == 0) {
        //  framed, but with a wrong or missing signature
        zmsg_addmem (frames, BN_DELIM, BN_DELIM_SIZE);
        zmsg_addstr (frames, s_chance (self, 50) ? "" : "00ff");
        for (int i = 0; i < 4; i++)
            zmsg_addstr (frames, "{}");
        return frames;
    }
    if (kind == 1) {
        //  a delimiter with too few frames after it
        zmsg_addstr (frames, "x");
        zmsg_addmem (frames, BN_DELIM, BN_DELIM_SIZE);
        for (size_t i = s_below (self, 5); i > 0; i--)
            zmsg_addstr (frames, "{}");
        return frames;
    }
    for (size_t i = 1 + s_below (self, 8); i > 0; i--) {
        byte data[32];
        size_t size = s_below (self, sizeof data);
        for (size_t j = 0; j < size; j++)
            data[j] = (byte)s_rand (self);
        zmsg_addmem (frames, data, size);
    }
    return frames;
}

//  Heart traffic as S_HEART: echoes of real pings, or junk.
static zmsg_t *
s_pong (s_fuzz_t *self)
{
    zmsg_t *frames = zmsg_new ();
    //  the newest ping, as a live heart answers
    zmsg_t *ping = NULL, *newer;
    while ((newer = zmsg_recv_nowait (self->ping))) {
        zmsg_destroy (&ping);
        ping = newer;
    }
    if (ping && s_chance (self, 80)) {
        zframe_t *frame = zmsg_pop (ping);
        zmsg_append (frames, &frame);
    } else {
        for (size_t i = s_below (self, 3); i > 0; i--)
            zmsg_addstr (frames, S_PICK (self, s_strings));
    }
    zmsg_destroy (&ping);
    if (zmsg_size (frames) == 0)
        zmsg_addstr (frames, "0.0");
    return frames;
}

//  Read and drop whatever came back on the fuzzer's sockets.
static void
s_drain (s_fuzz_t *self)
{
    for (int t = 0; t < S_TARGETS; t++) {
        if (zsock_type (self->sock[t]) == ZMQ_PUB)
            continue;
        zmsg_t *msg;
        while ((msg = zmsg_recv_nowait (self->sock[t])))
            zmsg_destroy (&msg);
    }
}

static void
s_send_frames (s_fuzz_t *self, s_target_t target, zmsg_t **frames)
{
    //  never block: a peer that does not read is not what this tests
    zmsg_t *msg = *frames;
    *frames = NULL;
    void *handle = zsock_resolve (self->sock[target]);
    zframe_t *frame = zmsg_pop (msg);
    while (frame) {
        zframe_t *next = zmsg_pop (msg);
        zmq_send (handle, zframe_data (frame), zframe_size (frame),
                  (next ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
        zframe_destroy (&frame);
        frame = next;
    }
    zmsg_destroy (&msg);
}

static zsock_t *
s_connected (int type, const char *identity, int port)
{
    zsock_t *sock = t_sock (type, identity);
    t_connect (sock, port);
    return sock;
}

static void
s_fuzz_open (s_fuzz_t *self, t_controller_t *ctl)
{
    bn_connfile_t *c = ctl->client, *e = ctl->engine;
    self->sock[S_QUERY] =
        s_connected (ZMQ_DEALER, NULL, t_port (c, "registration"));
    self->sock[S_MUX] = s_connected (ZMQ_DEALER, NULL, t_port (c, "mux"));
    self->sock[S_CONTROL] =
        s_connected (ZMQ_DEALER, NULL, t_port (c, "control"));
    self->sock[S_TASK] = s_connected (ZMQ_DEALER, NULL, t_port (c, "task"));
    self->sock[S_BCAST] =
        s_connected (ZMQ_DEALER, NULL, bn_connfile_broadcast (c, 0));
    self->sock[S_REG] =
        s_connected (ZMQ_DEALER, S_HEART, t_port (e, "registration"));
    self->sock[S_MUX_OUT] = s_connected (ZMQ_DEALER, NULL, t_port (e, "mux"));
    self->sock[S_CONTROL_OUT] =
        s_connected (ZMQ_DEALER, NULL, t_port (e, "control"));
    self->sock[S_TASK_OUT] = s_connected (ZMQ_DEALER, NULL, t_port (e, "task"));
    self->sock[S_LEAF] = s_connected (
        ZMQ_DEALER, NULL,
        bn_connfile_broadcast (e, bn_connfile_broadcast_count (e) - 1));
    self->sock[S_IOPUB] = s_connected (ZMQ_PUB, NULL, t_port (e, "iopub"));
    self->sock[S_PONG] =
        s_connected (ZMQ_DEALER, S_HEART, t_port (e, "hb_pong"));
    self->ping = s_connected (ZMQ_SUB, NULL, t_port (e, "hb_ping"));
    zclock_sleep (100);
}

static void
s_fuzz_close (s_fuzz_t *self)
{
    for (int t = 0; t < S_TARGETS; t++)
        zsock_destroy (&self->sock[t]);
    zsock_destroy (&self->ping);
    zmsg_destroy (&self->last);
    bn_session_destroy (&self->session);
}

//  The storm: S_ROUNDS messages spread over every port.
static void
s_storm (s_fuzz_t *self)
{
    for (int round = 0; round < S_ROUNDS; round++) {
        s_target_t target = (s_target_t)s_below (self, S_TARGETS);
        zmsg_t *frames;
        if (target == S_PONG)
            frames = s_pong (self);
        else if (s_chance (self, 10))
            frames = s_garbage (self);
        else if (self->last && s_chance (self, 5)) {
            //  the same signed bytes again
            frames = zmsg_dup (self->last);
            target = self->last_target;
        } else {
            frames = s_signed (self, target);
            zmsg_destroy (&self->last);
            self->last = zmsg_dup (frames);
            self->last_target = target;
        }
        s_send_frames (self, target, &frames);
        if (round % 64 == 0) {
            s_drain (self);
            zclock_sleep (1);
        }
    }
}

//  The result of an apply_reply as a value (caller destroys), or NULL.
static bn_value_t *
s_apply_result (bn_msg_t *reply)
{
    bn_bytes_t bufs[8];
    size_t nbufs = bn_bytes_from_msg (reply, bufs, 8);
    char err[256] = "";
    bn_value_t *value = bn_apply_decode_result (bufs, nbufs, err, sizeof err);
    ck_assert_msg (value != NULL, "cannot decode the apply result: %s", err);
    return value;
}

//  A good apply of Reference('echo') on the engine through the mux.
static void
s_check_echo (t_client_t *client, const char *uuid, const char *word)
{
    bn_msg_t *request =
        t_msg (client->session, BN_MSG_APPLY_REQUEST, NULL, uuid);
    bn_value_t *args = bn_value_new_list ();
    bn_value_append (args, bn_value_new_str (word));
    ck_assert_int_eq (bn_apply_add_reference (request, "echo", args, NULL), 0);
    bn_value_destroy (&args);
    char msg_id[BN_MSG_ID_SIZE];
    snprintf (msg_id, sizeof msg_id, "%s", bn_msg_id (request));
    t_send (&request, client->mux, client->session);
    bn_msg_t *reply = t_recv_within (client->mux, S_SETTLE);
    ck_assert_msg (reply != NULL, "no apply_reply after the storm");
    ck_assert_int_eq (bn_msg_verify (reply, client->session, true), 0);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    bn_value_t *value = s_apply_result (reply);
    ck_assert_int_eq (bn_value_type (value), BN_VALUE_STR);
    ck_assert_str_eq (bn_value_str (value), word);
    bn_value_destroy (&value);
    bn_msg_destroy (&reply);
}

START_TEST (test_storm)
{
    t_controller_t *ctl = t_controller_start (NULL);
    char dir[] = "/tmp/bn-fuzz-XXXXXX";
    ck_assert_ptr_nonnull (mkdtemp (dir));
    bn_engine_args_t args = {ctl->engine_path, NULL, NULL, 1, -1, dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (engines);
    zsock_set_rcvtimeo (engines, 10000);
    zstr_sendx (engines, "WAIT", "10000", NULL);
    char *answer = zstr_recv (engines);
    ck_assert_str_eq (answer, "OK");
    zstr_free (&answer);

    s_fuzz_t fuzz = {.rng = S_SEED};
    fuzz.session = bn_session_new (ctl->key, NULL);
    zstr_send (engines, "UUIDS");
    answer = zstr_recv (engines);
    ck_assert_ptr_nonnull (answer);
    snprintf (fuzz.uuid, sizeof fuzz.uuid, "%s", answer);
    zstr_free (&answer);
    zstr_send (engines, "IDS");
    answer = zstr_recv (engines);
    ck_assert_ptr_nonnull (answer);
    fuzz.engine_id = atoi (answer);
    zstr_free (&answer);
    s_fuzz_open (&fuzz, ctl);

    s_storm (&fuzz);

    //  the cluster still serves a newcomer: the engine is there...
    t_client_t *client = t_client_new (ctl);
    bn_msg_t *reply = t_query (client, BN_MSG_CONNECTION_REQUEST, NULL);
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_CONNECTION_REPLY);
    ck_assert_str_eq (t_content_str (reply, "status"), BN_STATUS_OK);
    char key[16];
    snprintf (key, sizeof key, "%d", fuzz.engine_id);
    json_t *engines_seen = json_object_get (bn_msg_content (reply), "engines");
    ck_assert_str_eq (json_string_value (json_object_get (engines_seen, key)),
                      fuzz.uuid);
    bn_msg_destroy (&reply);
    //  ...and answers through the mux once it has worked off the storm
    s_check_echo (client, fuzz.uuid, "after the storm");
    s_drain (&fuzz);

    //  every request the mux and control forwarded was answered
    int64_t until = zclock_mono () + S_SETTLE;
    while ((t_stat (ctl, "mux", "pending") > 0 ||
            t_stat (ctl, "control", "pending") > 0) &&
           zclock_mono () < until) {
        s_drain (&fuzz);
        zclock_sleep (20);
    }
    ck_assert_int_eq (t_stat (ctl, "mux", "pending"), 0);
    ck_assert_int_eq (t_stat (ctl, "control", "pending"), 0);
    ck_assert_int_gt (t_stat (ctl, "hub", "bad_signature"), 0);
    ck_assert_int_gt (t_stat (ctl, "mux", "forwarded"), 0);

    t_client_destroy (&client);
    s_fuzz_close (&fuzz);
    zactor_destroy (&engines);
    t_controller_stop (&ctl);
    rmdir (dir);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_fuzz");
    TCase *tc = tcase_create ("storm");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_storm);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client: one connection to a controller: its sockets, the engine
    table kept from notifications, the table of outstanding requests, and
    the I/O thread that routes replies and output to them.

    Locking: `lock` guards everything but the sockets, which only the I/O
    thread touches once it has started, and `pipe`, guarded by
    `pipe_lock`. User threads build messages under `lock` (the tx session
    numbers them), then pass them over the inproc pipe; the I/O thread
    signs and sends them with its own session (same key and id), so that
    the replay history of the rx session is only ever touched by it.  */
#define _GNU_SOURCE //  memmem
#include "bn_client_private.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_serialize.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define S_BATCH 256          //  messages read from one socket per turn
#define S_LINGER_MS 250      //  how long unsent messages may delay destroy
#define S_HEARTBEAT_MS 2000  //  ZMTP ping interval on the query socket
#define S_HEARTBEAT_TTL 6000 //  no traffic this long: controller is gone
//  Security handshakes the controller may end before a client gives up
//  on it: one may be a controller that was closing, three is a wrong key
//  (libzmq tries again every 100 ms)
#define S_HANDSHAKE_REFUSALS 3
#define S_HANDSHAKE_REFUSED                                                    \
    (ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
#define S_HANDSHAKE_FAILED                                                     \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | S_HANDSHAKE_REFUSED)

enum { S_CMD_SEND, S_CMD_STOP };

//  What user threads pass to the I/O thread over the pipe.
typedef struct {
    int op;          //  S_CMD_SEND or S_CMD_STOP
    bn_sock_t sock;  //  socket to send on
    size_t count;    //  messages
    bn_msg_t **msgs; //  malloc'd array of messages, owned by the command
} s_cmd_t;

struct _bn_client_t {
    pthread_mutex_t lock;         //  guards the state below
    pthread_cond_t change;        //  broadcast when state changes
    atomic_int refs;              //  client, views and results holding it
    int state;                    //  0, BN_ENOCONTROLLER or BN_ECLOSED
    bn_session_t *tx;             //  numbers outgoing messages (lock)
    bn_session_t *rx;             //  verifies and signs (I/O thread)
    char session_id[40];          //  our header.session
    size_t session_len;           //  its length
    bool has_port[BN_SOCK_COUNT]; //  the controller has this socket
    char **uuids;                 //  engine uuid by id, NULL if absent (lock)
    size_t uuids_size;            //  entries in uuids
    size_t nengines;              //  registered engines
    zhashx_t *engine_ids;         //  uuid -> id + 1 (lock)
    zhashx_t *items;              //  msg_id -> bn_item_t * outstanding (lock)
    atomic_size_t dropped;        //  messages dropped
    void *context;                //  this client's own libzmq context
    void *sockets[BN_SOCK_COUNT]; //  DEALERs, or NULL
    void *iopub;                  //  SUB to the iopub relay
    void *notification;           //  SUB to the hub's notifications
    void *monitor;                //  PAIR receiving query socket events
    void *pipe_back;              //  PAIR the I/O thread reads commands from
    void *pipe;                   //  PAIR user threads write commands to
    pthread_mutex_t pipe_lock;    //  guards pipe and pipe_closed
    bool pipe_closed;             //  no more commands can be sent
    pthread_t thread;             //  the I/O thread
    bool thread_started;          //  it is running
};

double
bn_client_deadline (double timeout)
{
    if (timeout < 0)
        return -1;
    return zclock_usecs () / 1e6 + timeout;
}

static void
s_drop (bn_client_t *self, const char *why)
{
    atomic_fetch_add (&self->dropped, 1);
    bn_log_debug ("client: dropped a message: %s", why);
}

//  -------------------------------------------------------------------
//  Lifetime and locking

void
bn_client_ref (bn_client_t *self)
{
    assert (self);
    atomic_fetch_add (&self->refs, 1);
}

static void
s_free (bn_client_t *self)
{
    assert (!self->thread_started);
    if (self->context) {
        //  Sockets left over when the connection never completed
        for (int i = 0; i < BN_SOCK_COUNT; i++)
            if (self->sockets[i])
                zmq_close (self->sockets[i]);
        void *others[] = {self->iopub, self->notification, self->monitor,
                          self->pipe_back, self->pipe};
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
            if (others[i])
                zmq_close (others[i]);
        zmq_ctx_term (self->context);
    }
    for (size_t i = 0; i < self->uuids_size; i++)
        free (self->uuids[i]);
    free (self->uuids);
    zhashx_destroy (&self->engine_ids);
    zhashx_destroy (&self->items);
    bn_session_destroy (&self->tx);
    bn_session_destroy (&self->rx);
    pthread_mutex_destroy (&self->lock);
    pthread_mutex_destroy (&self->pipe_lock);
    pthread_cond_destroy (&self->change);
    free (self);
}

void
bn_client_unref (bn_client_t **self_p)
{
    assert (self_p);
    bn_client_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (atomic_fetch_sub (&self->refs, 1) == 1)
        s_free (self);
}

void
bn_client_lock (bn_client_t *self)
{
    pthread_mutex_lock (&self->lock);
}

void
bn_client_unlock (bn_client_t *self)
{
    pthread_mutex_unlock (&self->lock);
}

int
bn_client_wait_change (bn_client_t *self, double deadline)
{
    if (deadline < 0) {
        pthread_cond_wait (&self->change, &self->lock);
        return 0;
    }
    double now = zclock_usecs () / 1e6;
    if (now >= deadline)
        return BN_ETIMEDOUT;
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait (&self->change, &self->lock, &ts);
    return 0;
}

static void
s_changed (bn_client_t *self)
{
    pthread_cond_broadcast (&self->change);
}

int
bn_client_state (bn_client_t *self)
{
    return self->state;
}

bn_session_t *
bn_client_tx_session (bn_client_t *self)
{
    return self->tx;
}

bool
bn_client_has_port (bn_client_t *self, bn_sock_t sock)
{
    assert (sock < BN_SOCK_COUNT);
    return self->has_port[sock];
}

//  -------------------------------------------------------------------
//  Engines and outstanding requests (lock held)

static int
s_engine_add (bn_client_t *self, int id, const char *uuid)
{
    if (id < 0 || !uuid || !*uuid || strlen (uuid) >= BN_UUID_SIZE)
        return -1;
    if ((size_t)id >= self->uuids_size) {
        size_t size = self->uuids_size ? self->uuids_size : 16;
        while (size <= (size_t)id)
            size *= 2;
        char **bigger = realloc (self->uuids, size * sizeof *bigger);
        if (!bigger)
            return -1;
        memset (bigger + self->uuids_size, 0,
                (size - self->uuids_size) * sizeof *bigger);
        self->uuids = bigger;
        self->uuids_size = size;
    }
    if (self->uuids[id]) {
        if (strcmp (self->uuids[id], uuid) == 0)
            return 0;
        zhashx_delete (self->engine_ids, self->uuids[id]);
        free (self->uuids[id]);
        self->nengines--;
    }
    self->uuids[id] = strdup (uuid);
    if (!self->uuids[id])
        return -1;
    zhashx_update (self->engine_ids, uuid, (void *)(intptr_t)(id + 1));
    self->nengines++;
    return 0;
}

//  Every outstanding item, as an array for the caller to free.
static bn_item_t **
s_items_snapshot (bn_client_t *self, size_t *count)
{
    *count = zhashx_size (self->items);
    bn_item_t **all = malloc ((*count ? *count : 1) * sizeof *all);
    if (!all)
        return NULL;
    size_t n = 0;
    for (bn_item_t *item = zhashx_first (self->items); item;
         item = zhashx_next (self->items))
        all[n++] = item;
    assert (n == *count);
    return all;
}

//  An engine unregistered: settle the requests still waiting on it.
static bool
s_engine_remove (bn_client_t *self, int id)
{
    if (id < 0 || (size_t)id >= self->uuids_size || !self->uuids[id])
        return false;
    char *uuid = self->uuids[id];
    self->uuids[id] = NULL;
    zhashx_delete (self->engine_ids, uuid);
    self->nengines--;
    size_t count;
    bn_item_t **all = s_items_snapshot (self, &count);
    if (all) {
        for (size_t i = 0; i < count; i++) {
            const char *item_uuid = bn_item_engine_uuid (all[i]);
            if (item_uuid && strcmp (item_uuid, uuid) == 0 &&
                bn_item_engine_died (all[i], id))
                bn_client_untrack (self, all[i]);
        }
        free (all);
    }
    free (uuid);
    return true;
}

//  The controller went away or the client closed: fail everything.
static void
s_fail_all (bn_client_t *self, int code)
{
    size_t count;
    bn_item_t **all = s_items_snapshot (self, &count);
    if (all) {
        for (size_t i = 0; i < count; i++)
            bn_item_fail (all[i], code,
                          code == BN_ECLOSED ? "ClientClosed"
                                             : "ControllerGone",
                          bn_strerror (code));
        free (all);
    }
    zhashx_purge (self->items);
}

static void
s_gone (bn_client_t *self, int code)
{
    if (self->state != 0)
        return;
    self->state = code;
    s_fail_all (self, code);
}

int
bn_client_resolve (bn_client_t *self, const int *ids, size_t count,
                   bn_target_t **targets, size_t *ntargets)
{
    *targets = NULL;
    *ntargets = 0;
    size_t n = ids ? count : self->nengines;
    if (n == 0)
        return BN_ENOENGINE;
    bn_target_t *out = malloc (n * sizeof *out);
    if (!out)
        return BN_ENOMEM;
    size_t k = 0;
    if (ids) {
        for (size_t i = 0; i < count; i++) {
            int id = ids[i];
            if (id < 0 || (size_t)id >= self->uuids_size || !self->uuids[id]) {
                free (out);
                return BN_ENOENGINE;
            }
            out[k].id = id;
            snprintf (out[k].uuid, BN_UUID_SIZE, "%s", self->uuids[id]);
            k++;
        }
    } else
        for (size_t id = 0; id < self->uuids_size; id++)
            if (self->uuids[id]) {
                out[k].id = (int)id;
                snprintf (out[k].uuid, BN_UUID_SIZE, "%s", self->uuids[id]);
                k++;
            }
    assert (k == n);
    *targets = out;
    *ntargets = n;
    return 0;
}

int
bn_client_engine_id_of (bn_client_t *self, const char *uuid)
{
    if (!uuid)
        return -1;
    void *found = zhashx_lookup (self->engine_ids, uuid);
    return found ? (int)(intptr_t)found - 1 : -1;
}

int
bn_client_track (bn_client_t *self, bn_item_t *item)
{
    return zhashx_insert (self->items, bn_item_msg_id (item), item) == 0 ? 0
                                                                         : -1;
}

void
bn_client_untrack (bn_client_t *self, bn_item_t *item)
{
    const char *msg_id = bn_item_msg_id (item);
    if (zhashx_lookup (self->items, msg_id) == item)
        zhashx_delete (self->items, msg_id);
}

json_t *
bn_client_outstanding (bn_client_t *self)
{
    json_t *ids = json_array ();
    if (!ids)
        return NULL;
    for (bn_item_t *item = zhashx_first (self->items); item;
         item = zhashx_next (self->items))
        if (bn_item_kind (item) == BN_ITEM_SHELL && !bn_item_replied (item))
            json_array_append_new (ids, json_string (bn_item_msg_id (item)));
    return ids;
}

//  -------------------------------------------------------------------
//  Sending

int
bn_client_send (bn_client_t *self, bn_sock_t sock, bn_msg_t **msgs,
                size_t count)
{
    assert (sock < BN_SOCK_COUNT);
    s_cmd_t cmd = {S_CMD_SEND, sock, count, NULL};
    cmd.msgs = malloc (count * sizeof *cmd.msgs);
    int rc = cmd.msgs ? 0 : BN_ENOMEM;
    if (cmd.msgs)
        memcpy (cmd.msgs, msgs, count * sizeof *msgs);
    if (rc == 0) {
        pthread_mutex_lock (&self->pipe_lock);
        if (self->pipe_closed)
            rc = BN_ECLOSED;
        else if (zmq_send (self->pipe, &cmd, sizeof cmd, 0) != sizeof cmd)
            rc = BN_EIO;
        pthread_mutex_unlock (&self->pipe_lock);
    }
    if (rc != 0) {
        for (size_t i = 0; i < count; i++)
            bn_msg_destroy (&msgs[i]);
        free (cmd.msgs);
    } else
        memset (msgs, 0, count * sizeof *msgs);
    return rc;
}

//  -------------------------------------------------------------------
//  The I/O thread

static bool
s_is_reply_for (bn_sock_t sock, const char *type)
{
    if (sock == BN_SOCK_MUX || sock == BN_SOCK_TASK ||
        sock == BN_SOCK_BROADCAST)
        return strcmp (type, BN_MSG_APPLY_REPLY) == 0 ||
               strcmp (type, BN_MSG_EXECUTE_REPLY) == 0;
    return true;
}

static const char *
s_status (json_t *content)
{
    return json_string_value (json_object_get (content, "status"));
}

//  Decode the first result object of an ok apply_reply from buffer
//  start on, using no buffer at or past end; *used is how many buffers
//  it took.
static bn_value_t *
s_decode (bn_msg_t *msg, size_t start, size_t end, size_t *used, int *error,
          char *why, size_t whysize)
{
    size_t n = bn_msg_nbuffers (msg);
    if (end < n)
        n = end;
    *used = 0;
    if (start >= n) {
        *error = BN_EPICKLE;
        snprintf (why, whysize, "the reply carries no result buffer");
        return NULL;
    }
    bn_bytes_t stack[16];
    bn_bytes_t *bytes =
        n - start <= 16 ? stack : malloc ((n - start) * sizeof *bytes);
    if (!bytes) {
        *error = BN_ENOMEM;
        return NULL;
    }
    for (size_t i = start; i < n; i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        bytes[i - start].data = zmq_msg_data (frame);
        bytes[i - start].size = zmq_msg_size (frame);
    }
    bn_value_t *value =
        bn_deserialize_object (bytes, n - start, used, why, whysize);
    if (bytes != stack)
        free (bytes);
    *error = value ? 0 : BN_EPICKLE;
    return value;
}

//  Merged broadcast replies (doc/broadcast.md): one message carries the replies
//  of many engines, as
//  - the stock format: metadata.broadcast_targets ([uuid, id] pairs, or
//    bare uuids from a 7.1.0 leaf at depth 0) and every engine's result
//    objects concatenated in the buffers, decoded one after the other as
//    the Python client does; the merged status applies to all;
//  - the same with banyan's bn_replies beside the targets: each engine's
//    status, error content, times, output and buffer count;
//  - bn_groups: entries of an engine set (idset text) sharing one reply;
//  - bn_reduced: one reduced value for the contributing engines, and the
//    errors of those that failed.
//  Each engine's entry completes its item ("<original>_<uuid>"); engines
//  are found by uuid, or by id through the engine table.

//  What a merged message's entries share.
typedef struct {
    bn_msg_t *msg;       //  the message
    const char *type;    //  its msg_type
    bool apply;          //  an apply_reply: buffers hold results
    const char *started; //  metadata.started
    const char *date;    //  header.date
    json_t *hops;        //  metadata.bn_hops, or NULL
    json_t *owned;       //  contents made here, freed with the message
    size_t at;           //  next buffer to decode
} s_merged_t;

//  A JSON string member of object, or NULL.
static const char *
s_str (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

//  The content of an entry: its own error content when it has one (with
//  a status), else {"status": status} made and kept in merged->owned.
static json_t *
s_entry_content (s_merged_t *merged, json_t *entry)
{
    const char *status = s_str (entry, "status");
    json_t *content = json_object_get (entry, "content");
    if (json_is_object (content) && s_str (content, "status"))
        return content;
    json_t *made;
    if (json_is_object (content)) {
        made = json_deep_copy (content);
        if (made)
            json_object_set_new (made, "status",
                                 json_string (status ? status : "error"));
    } else
        made = json_pack ("{s:s}", "status", status ? status : "error");
    if (!made || json_array_append_new (merged->owned, made) != 0)
        return NULL;
    return made;
}

//  Fill reply from one entry (of bn_replies or bn_groups; NULL: the
//  message itself, stock format), decoding its result from the buffers.
static void
s_entry (s_merged_t *merged, json_t *entry, bn_reply_t *reply, char *why,
         size_t whysize)
{
    bn_msg_t *msg = merged->msg;
    memset (reply, 0, sizeof *reply);
    reply->type = merged->type;
    reply->hops = merged->hops;
    reply->engine_id = -1;
    reply->why = why;
    reply->started = merged->started;
    reply->completed = merged->date;
    json_t *content = bn_msg_content (msg);
    json_int_t nbuffers = -1;
    if (entry) {
        content = s_entry_content (merged, entry);
        if (!content)
            content = bn_msg_content (msg);
        json_t *count = json_object_get (entry, "nbuffers");
        if (json_is_integer (count) && json_integer_value (count) >= 0)
            nbuffers = json_integer_value (count);
        reply->started = s_str (entry, "started") ?: merged->started;
        reply->completed = s_str (entry, "completed") ?: merged->date;
        reply->out = s_str (entry, "bn_stdout");
        reply->err = s_str (entry, "bn_stderr");
    }
    reply->content = content;
    bool ok = strcmp (s_str (content, "status") ?: "", BN_STATUS_OK) == 0;
    size_t total = bn_msg_nbuffers (msg);
    if (ok && merged->apply) {
        size_t end = nbuffers >= 0 ? merged->at + (size_t)nbuffers : total;
        size_t used = 0;
        reply->value = s_decode (msg, merged->at, end, &used,
                                 &reply->decode_error, why, whysize);
        merged->at += nbuffers >= 0 ? (size_t)nbuffers : used;
    } else if (nbuffers >= 0)
        merged->at += (size_t)nbuffers;
    else if (entry && merged->apply)
        merged->at++; //  a failed engine's pickled None
}

//  With the lock held: the outstanding item of the request original for
//  engine uuid (or, when uuid is NULL, engine id), or NULL.
static bn_item_t *
s_merged_item (bn_client_t *self, const char *original, const char *uuid,
               int id)
{
    if (!uuid && id >= 0 && (size_t)id < self->uuids_size)
        uuid = self->uuids[id];
    char msg_id[512];
    if (!uuid || snprintf (msg_id, sizeof msg_id, "%s_%s", original, uuid) >=
                     (int)sizeof msg_id)
        return NULL;
    return zhashx_lookup (self->items, msg_id);
}

//  With the lock held: hand reply to item; true if it completed.
static bool
s_deliver (bn_client_t *self, bn_item_t *item, bn_reply_t *reply)
{
    if (bn_item_on_entry (item, reply)) {
        bn_client_untrack (self, item);
        return true;
    }
    return false;
}

static bool
s_on_targets (bn_client_t *self, s_merged_t *merged, const char *original,
              json_t *targets, json_t *replies)
{
    size_t count = json_array_size (targets);
    if (!json_is_array (replies) || json_array_size (replies) != count)
        replies = NULL;
    bn_reply_t *entries = calloc (count ? count : 1, sizeof *entries);
    char (*whys)[128] = calloc (count ? count : 1, sizeof *whys);
    if (!entries || !whys) {
        free (entries);
        free (whys);
        return false;
    }
    for (size_t i = 0; i < count; i++)
        s_entry (merged, replies ? json_array_get (replies, i) : NULL,
                 &entries[i], whys[i], sizeof whys[i]);
    bool changed = false;
    bn_result_t *result = NULL;
    bn_client_lock (self);
    for (size_t i = 0; i < count; i++) {
        json_t *pair = json_array_get (targets, i);
        const char *uuid = json_is_array (pair)
                               ? json_string_value (json_array_get (pair, 0))
                               : json_string_value (pair);
        bn_item_t *item = s_merged_item (self, original, uuid, -1);
        if (!item)
            continue;
        if (!result) {
            result = bn_item_result (item);
            bn_result_count_message (result);
        }
        entries[i].uuid = uuid;
        entries[i].engine_id = bn_client_engine_id_of (self, uuid);
        changed |= s_deliver (self, item, &entries[i]);
    }
    bn_client_unlock (self);
    for (size_t i = 0; i < count; i++)
        bn_value_destroy (&entries[i].value);
    free (entries);
    free (whys);
    return changed;
}

static bool
s_on_groups (bn_client_t *self, s_merged_t *merged, const char *original,
             json_t *groups)
{
    bool changed = false;
    bool counted = false;
    size_t index;
    json_t *group;
    json_array_foreach (groups, index, group)
    {
        //  Decoded even when dropped, to keep the buffers in step
        char why[128] = "";
        bn_reply_t entry;
        s_entry (merged, json_is_object (group) ? group : NULL, &entry, why,
                 sizeof why);
        bn_value_t *value = entry.value;
        const char *text = s_str (group, "engines");
        bn_idset_t *engines = text ? bn_idset_parse (text) : NULL;
        if (!engines) {
            bn_idset_destroy (&engines);
            bn_value_destroy (&value);
            s_drop (self, "bn_groups entry without engines");
            continue;
        }
        bn_client_lock (self);
        bn_result_t *result = NULL;
        int number = -1;
        for (int id = bn_idset_first (engines); id >= 0;
             id = bn_idset_next (engines, id)) {
            bn_item_t *item = s_merged_item (self, original, NULL, id);
            if (!item)
                continue;
            if (!result) {
                result = bn_item_result (item);
                if (!counted)
                    bn_result_count_message (result);
                counted = true;
                number = bn_result_add_group (result, bn_idset_dup (engines));
            }
            bn_item_set_group (item, number);
            entry.value = value ? bn_value_dup (value) : NULL;
            entry.engine_id = id;
            changed |= s_deliver (self, item, &entry);
        }
        bn_client_unlock (self);
        bn_value_destroy (&value);
        bn_idset_destroy (&engines);
    }
    return changed;
}

static bool
s_on_reduced (bn_client_t *self, s_merged_t *merged, const char *original,
              json_t *reduced)
{
    const char *text = s_str (reduced, "engines");
    bn_idset_t *engines = text ? bn_idset_parse (text) : NULL;
    bn_idset_t *failed = bn_idset_new ();
    json_t *ok = json_pack ("{s:s}", "status", BN_STATUS_OK);
    if (!engines || !failed || !ok) {
        bn_idset_destroy (&engines);
        bn_idset_destroy (&failed);
        json_decref (ok);
        s_drop (self, "bn_reduced without engines");
        return false;
    }
    char why[128] = "";
    bn_value_t *value = NULL;
    int error = 0;
    if (merged->apply && bn_idset_count (engines)) {
        size_t used;
        value =
            s_decode (merged->msg, 0, SIZE_MAX, &used, &error, why, sizeof why);
    }
    json_t *failures = json_object_get (reduced, "failed");
    bool changed = false;
    bn_result_t *result = NULL;
    bn_client_lock (self);
    for (int id = bn_idset_first (engines); id >= 0;
         id = bn_idset_next (engines, id)) {
        bn_item_t *item = s_merged_item (self, original, NULL, id);
        if (!item)
            continue;
        result = bn_item_result (item);
        bn_reply_t entry = {.type = merged->type,
                            .content = ok,
                            .started = merged->started,
                            .completed = merged->date,
                            .no_output = bn_result_output_in_reply (result),
                            .decode_error = error,
                            .why = why,
                            .hops = merged->hops,
                            .engine_id = id};
        changed |= s_deliver (self, item, &entry);
    }
    size_t index;
    json_t *failure;
    json_array_foreach (failures, index, failure)
    {
        text = s_str (failure, "engines");
        bn_idset_t *ids = text ? bn_idset_parse (text) : NULL;
        json_t *content = json_object_get (failure, "content");
        if (!ids || !json_is_object (content) || !s_str (content, "status")) {
            bn_idset_destroy (&ids);
            s_drop (self, "bn_reduced failure without engines or content");
            continue;
        }
        for (int id = bn_idset_first (ids); id >= 0;
             id = bn_idset_next (ids, id)) {
            bn_idset_add (failed, id);
            bn_item_t *item = s_merged_item (self, original, NULL, id);
            if (!item)
                continue;
            result = bn_item_result (item);
            bn_reply_t entry = {.type = merged->type,
                                .content = content,
                                .started = merged->started,
                                .completed = merged->date,
                                .no_output = bn_result_output_in_reply (result),
                                .hops = merged->hops,
                                .engine_id = id};
            changed |= s_deliver (self, item, &entry);
        }
        bn_idset_destroy (&ids);
    }
    if (result) {
        bn_result_count_message (result);
        if (bn_result_add_reduced (result, s_str (reduced, "op"), value,
                                   engines, failed) != 0)
            bn_log_warn ("client: out of memory for a reduced result");
        value = NULL;
    }
    bn_client_unlock (self);
    bn_value_destroy (&value);
    bn_idset_destroy (&engines);
    bn_idset_destroy (&failed);
    json_decref (ok);
    return changed;
}

//  True if msg is a merged broadcast reply (of any shape above).
static bool
s_is_merged (json_t *metadata)
{
    return json_object_get (metadata, "broadcast_targets") ||
           json_object_get (metadata, "bn_groups") ||
           json_object_get (metadata, "bn_reduced");
}

static bool
s_on_merged (bn_client_t *self, bn_msg_t *msg)
{
    json_t *metadata = bn_msg_metadata (msg);
    const char *original = s_str (metadata, "original_msg_id");
    json_t *targets = json_object_get (metadata, "broadcast_targets");
    json_t *groups = json_object_get (metadata, "bn_groups");
    json_t *reduced = json_object_get (metadata, "bn_reduced");
    if (!original || !(json_is_array (targets) || json_is_array (groups) ||
                       json_is_object (reduced))) {
        s_drop (self, "merged reply without original_msg_id or targets");
        return false;
    }
    s_merged_t merged = {
        .msg = msg,
        .type = bn_msg_type (msg),
        .apply = strcmp (bn_msg_type (msg), BN_MSG_APPLY_REPLY) == 0,
        .started = s_str (metadata, "started"),
        .date = s_str (bn_msg_header (msg), "date"),
        .hops = json_is_array (json_object_get (metadata, "bn_hops"))
                    ? json_object_get (metadata, "bn_hops")
                    : NULL,
        .owned = json_array (),
        .at = 0};
    if (!merged.owned)
        return false;
    bool changed;
    if (json_is_object (reduced))
        changed = s_on_reduced (self, &merged, original, reduced);
    else if (json_is_array (groups))
        changed = s_on_groups (self, &merged, original, groups);
    else
        changed = s_on_targets (self, &merged, original, targets,
                                json_object_get (metadata, "bn_replies"));
    json_decref (merged.owned);
    return changed;
}

static bool
s_on_reply (bn_client_t *self, bn_msg_t *msg, bn_sock_t sock)
{
    int rc = bn_msg_verify (msg, self->rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    const char *msg_id = bn_msg_parent_id (msg);
    if (!type || !content || !bn_msg_metadata (msg) || !msg_id) {
        s_drop (self, "reply without type, content or parent");
        return false;
    }
    if (!s_is_reply_for (sock, type)) {
        s_drop (self, type);
        return false;
    }
    json_t *metadata = bn_msg_metadata (msg);
    if (sock == BN_SOCK_BROADCAST && s_is_merged (metadata))
        return s_on_merged (self, msg);

    bn_value_t *value = NULL;
    int error = 0;
    char why[256] = "";
    if (strcmp (type, BN_MSG_APPLY_REPLY) == 0 && s_status (content) &&
        strcmp (s_status (content), BN_STATUS_OK) == 0) {
        size_t used;
        value = s_decode (msg, 0, SIZE_MAX, &used, &error, why, sizeof why);
    }
    bool changed = false;
    bn_client_lock (self);
    bn_item_t *item = zhashx_lookup (self->items, msg_id);
    if (item) {
        int engine_id = -1;
        if (!bn_item_engine_uuid (item))
            engine_id = bn_client_engine_id_of (
                self, json_string_value (json_object_get (metadata, "engine")));
        bn_result_count_message (bn_item_result (item));
        changed = bn_item_on_reply (item, msg, value, error, why, engine_id);
        value = NULL;
        if (changed)
            bn_client_untrack (self, item);
    }
    bn_client_unlock (self);
    if (!item) {
        bn_value_destroy (&value);
        s_drop (self, "reply to no outstanding request");
    }
    return changed;
}

static bool
s_on_iopub (bn_client_t *self, bn_msg_t *msg)
{
    //  Most output belongs to other clients: a cheap look for our session
    //  id in the parent header before the signature check and parsing.
    size_t size = 0;
    const void *parent = bn_msg_part_data (msg, BN_PART_PARENT, &size);
    if (!parent || !memmem (parent, size, self->session_id, self->session_len))
        return false;
    int rc = bn_msg_verify (msg, self->rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    json_t *parent_header = bn_msg_parent (msg);
    const char *session =
        json_string_value (json_object_get (parent_header, "session"));
    const char *msg_id = bn_msg_parent_id (msg);
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    if (!session || strcmp (session, self->session_id) != 0 || !msg_id ||
        !type || !content)
        return false;
    bool changed = false;
    bn_client_lock (self);
    bn_item_t *item = zhashx_lookup (self->items, msg_id);
    if (item && bn_item_on_iopub (item, type, content)) {
        bn_client_untrack (self, item);
        changed = true;
    }
    bn_client_unlock (self);
    return changed;
}

static bool
s_on_notification (bn_client_t *self, bn_msg_t *msg)
{
    int rc = bn_msg_verify (msg, self->rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    if (!type || !content) {
        s_drop (self, "notification without type or content");
        return false;
    }
    json_t *id = json_object_get (content, "id");
    const char *uuid = json_string_value (json_object_get (content, "uuid"));
    bool changed = false;
    bn_client_lock (self);
    if (strcmp (type, BN_MSG_REGISTRATION_NOTIFICATION) == 0) {
        if (json_is_integer (id) &&
            s_engine_add (self, (int)json_integer_value (id), uuid) == 0)
            changed = true;
        else
            s_drop (self, "bad registration_notification");
    } else if (strcmp (type, BN_MSG_UNREGISTRATION_NOTIFICATION) == 0) {
        int eid = json_is_integer (id) ? (int)json_integer_value (id) : -1;
        if (json_is_string (id))
            eid = atoi (json_string_value (id));
        changed = s_engine_remove (self, eid);
    } else if (strcmp (type, BN_MSG_SHUTDOWN_NOTIFICATION) == 0) {
        bn_log_info ("client: the controller is shutting down");
        s_gone (self, BN_ENOCONTROLLER);
        changed = true;
    } else
        s_drop (self, type);
    bn_client_unlock (self);
    return changed;
}

//  The next event of the query socket's monitor (0 if none is waiting).
static uint16_t
s_monitor_event (bn_client_t *self)
{
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    uint16_t event = 0;
    bool first = true;
    while (zmq_msg_recv (&frame, self->monitor, ZMQ_DONTWAIT) >= 0) {
        if (first && zmq_msg_size (&frame) >= sizeof event)
            memcpy (&event, zmq_msg_data (&frame), sizeof event);
        first = false;
        if (!zmq_msg_more (&frame))
            break;
    }
    zmq_msg_close (&frame);
    return event;
}

static bool
s_on_monitor (bn_client_t *self)
{
    if (s_monitor_event (self) != ZMQ_EVENT_DISCONNECTED)
        return false;
    bn_log_info ("client: lost the connection to the controller");
    bn_client_lock (self);
    s_gone (self, BN_ENOCONTROLLER);
    bn_client_unlock (self);
    return true;
}

//  Run commands from the pipe; returns true on STOP.
static bool
s_on_pipe (bn_client_t *self)
{
    s_cmd_t cmd;
    while (zmq_recv (self->pipe_back, &cmd, sizeof cmd, ZMQ_DONTWAIT) ==
           sizeof cmd) {
        if (cmd.op == S_CMD_STOP)
            return true;
        void *socket = self->sockets[cmd.sock];
        for (size_t i = 0; i < cmd.count; i++) {
            if (!socket) {
                bn_msg_destroy (&cmd.msgs[i]);
                continue;
            }
            if (bn_msg_send_flags (&cmd.msgs[i], socket, self->rx,
                                   ZMQ_DONTWAIT) != 0)
                bn_log_warn ("client: cannot send a request: %s",
                             zmq_strerror (errno));
        }
        free (cmd.msgs);
    }
    return false;
}

static void
s_close_socket (void *socket, int linger)
{
    if (!socket)
        return;
    zmq_setsockopt (socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close (socket);
}

static void *
s_io_thread (void *arg)
{
    bn_client_t *self = arg;
    bn_log_set_ident ("client");
    //  Within one turn replies are read before output, notifications and
    //  connection events, so that a reply that arrived together with the
    //  news of its engine's (or the controller's) end still counts.
    enum { P_IOPUB = BN_SOCK_COUNT, P_NOTIFY, P_MONITOR, P_PIPE, P_ALL };
    zmq_pollitem_t items[P_ALL];
    memset (items, 0, sizeof items);
    void *sockets[P_ALL];
    for (int i = 0; i < BN_SOCK_COUNT; i++)
        sockets[i] = self->sockets[i];
    sockets[P_IOPUB] = self->iopub;
    sockets[P_NOTIFY] = self->notification;
    sockets[P_MONITOR] = self->monitor;
    sockets[P_PIPE] = self->pipe_back;
    int n = 0;
    int kind[P_ALL];
    for (int i = 0; i < P_ALL; i++)
        if (sockets[i]) {
            items[n].socket = sockets[i];
            items[n].events = ZMQ_POLLIN;
            kind[n++] = i;
        }
    bool stop = false;
    while (!stop) {
        if (zmq_poll (items, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        bool changed = false;
        for (int i = 0; i < n; i++) {
            if (!(items[i].revents & ZMQ_POLLIN))
                continue;
            if (kind[i] == P_PIPE) {
                stop = s_on_pipe (self);
                continue;
            }
            if (kind[i] == P_MONITOR) {
                changed |= s_on_monitor (self);
                continue;
            }
            for (int k = 0; k < S_BATCH; k++) {
                bn_msg_t *msg =
                    bn_msg_recv_flags (items[i].socket, ZMQ_DONTWAIT);
                if (!msg)
                    break;
                if (kind[i] == P_IOPUB)
                    changed |= s_on_iopub (self, msg);
                else if (kind[i] == P_NOTIFY)
                    changed |= s_on_notification (self, msg);
                else
                    changed |= s_on_reply (self, msg, (bn_sock_t)kind[i]);
                bn_msg_destroy (&msg);
            }
        }
        if (changed) {
            bn_client_lock (self);
            s_changed (self);
            bn_client_unlock (self);
        }
    }
    bn_client_lock (self);
    int linger = self->state == BN_ENOCONTROLLER ? 0 : S_LINGER_MS;
    bn_client_unlock (self);
    for (int i = 0; i < BN_SOCK_COUNT; i++) {
        s_close_socket (self->sockets[i], linger);
        self->sockets[i] = NULL;
    }
    s_close_socket (self->iopub, 0);
    s_close_socket (self->notification, 0);
    s_close_socket (self->monitor, 0);
    s_close_socket (self->pipe_back, 0);
    self->iopub = self->notification = self->monitor = self->pipe_back = NULL;
    return NULL;
}

//  -------------------------------------------------------------------
//  Connecting

static const char *s_port_names[BN_SOCK_COUNT] = {
    "registration", "mux", "control", "task", "broadcast"};

//  A socket of type, a CURVE client of curve_server with our keys in cert
//  when the controller uses CURVE; NULL on failure.
static void *
s_socket (bn_client_t *self, int type, const char *curve_server, zcert_t *cert)
{
    void *socket = zmq_socket (self->context, type);
    if (!socket)
        return NULL;
    int zero = 0;
    zmq_setsockopt (socket, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_LINGER, &zero, sizeof zero);
    if (curve_server && bn_curve_client (socket, cert, curve_server)) {
        zmq_close (socket);
        return NULL;
    }
    return socket;
}

static int
s_connect (void *socket, const char *url)
{
    if (zmq_connect (socket, url) != 0) {
        bn_log_warn ("client: cannot connect to %s: %s", url,
                     zmq_strerror (errno));
        return -1;
    }
    return 0;
}

//  Create the sockets and connect them: subscribers first, so that they
//  are subscribed by the time the first request could produce output.
static int
s_open_sockets (bn_client_t *self, bn_connfile_t *cf)
{
    const char *server = bn_connfile_curve_serverkey (cf);
    //  our own keys only encrypt: the controller takes any
    zcert_t *cert = server ? zcert_new () : NULL;
    if (server && !cert) {
        bn_log_warn ("client: this libzmq cannot make CURVE keys");
        return BN_ECONNECT;
    }
    char *url = bn_connfile_url (cf, "iopub");
    char *notify = bn_connfile_url (cf, "notification");
    int rc = 0;
    if (!url || !notify)
        rc = BN_ECONNFILE;
    if (rc == 0) {
        self->iopub = s_socket (self, ZMQ_SUB, server, cert);
        self->notification = s_socket (self, ZMQ_SUB, server, cert);
        if (!self->iopub || !self->notification)
            rc = BN_ENOMEM;
    }
    if (rc == 0) {
        zmq_setsockopt (self->iopub, ZMQ_SUBSCRIBE, "", 0);
        zmq_setsockopt (self->notification, ZMQ_SUBSCRIBE, "", 0);
        if (s_connect (self->iopub, url) ||
            s_connect (self->notification, notify))
            rc = BN_ECONNFILE;
    }
    free (url);
    free (notify);
    for (int i = BN_SOCK_COUNT - 1; rc == 0 && i >= 0; i--) {
        url = i == BN_SOCK_BROADCAST ? bn_connfile_broadcast_url (cf, 0)
                                     : bn_connfile_url (cf, s_port_names[i]);
        if (!url) {
            if (i == BN_SOCK_QUERY || i == BN_SOCK_MUX || i == BN_SOCK_CONTROL)
                rc = BN_ECONNFILE;
            continue;
        }
        self->sockets[i] = s_socket (self, ZMQ_DEALER, server, cert);
        if (!self->sockets[i])
            rc = BN_ENOMEM;
        else if (i == BN_SOCK_QUERY) {
            //  A controller that vanishes without closing its connections
            //  (host down, network cut) is noticed by the ZMTP heartbeat;
            //  one that exits is noticed at once. Either way the monitor
            //  reports the disconnection.
            int ivl = S_HEARTBEAT_MS, ttl = S_HEARTBEAT_TTL;
            zmq_setsockopt (self->sockets[i], ZMQ_HEARTBEAT_IVL, &ivl,
                            sizeof ivl);
            zmq_setsockopt (self->sockets[i], ZMQ_HEARTBEAT_TIMEOUT, &ttl,
                            sizeof ttl);
            char endpoint[64];
            snprintf (endpoint, sizeof endpoint, "inproc://bn-client-mon-%p",
                      (void *)self);
            self->monitor = zmq_socket (self->context, ZMQ_PAIR);
            if (!self->monitor ||
                zmq_socket_monitor (self->sockets[i], endpoint,
                                    ZMQ_EVENT_DISCONNECTED |
                                        S_HANDSHAKE_FAILED) != 0 ||
                zmq_connect (self->monitor, endpoint) != 0)
                rc = BN_ENOMEM;
        }
        if (rc == 0 && s_connect (self->sockets[i], url) != 0)
            rc = BN_ECONNFILE;
        if (rc == 0)
            self->has_port[i] = true;
        free (url);
    }
    zcert_destroy (&cert);
    return rc;
}

static int
s_open_pipe (bn_client_t *self)
{
    char endpoint[64];
    snprintf (endpoint, sizeof endpoint, "inproc://bn-client-pipe-%p",
              (void *)self);
    self->pipe_back = zmq_socket (self->context, ZMQ_PAIR);
    self->pipe = zmq_socket (self->context, ZMQ_PAIR);
    if (!self->pipe_back || !self->pipe)
        return BN_ENOMEM;
    int zero = 0;
    zmq_setsockopt (self->pipe, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (self->pipe_back, ZMQ_RCVHWM, &zero, sizeof zero);
    if (zmq_bind (self->pipe_back, endpoint) != 0 ||
        zmq_connect (self->pipe, endpoint) != 0)
        return BN_ENOMEM;
    return 0;
}

//  connection_request on the query socket, before the I/O thread runs.
//  A controller that refuses the security handshake again and again is
//  one whose key (or lack of one) this connection file does not match.
static int
s_handshake (bn_client_t *self, double deadline, bool curve)
{
    bn_msg_t *request = bn_msg_new (self->tx, BN_MSG_CONNECTION_REQUEST);
    if (!request)
        return BN_ENOMEM;
    char msg_id[BN_MSG_ID_SIZE];
    snprintf (msg_id, sizeof msg_id, "%s", bn_msg_id (request));
    void *query = self->sockets[BN_SOCK_QUERY];
    if (bn_msg_send (&request, query, self->tx) != 0)
        return BN_ECONNECT;
    int refusals = 0;
    while (true) {
        double left = deadline < 0 ? -1 : deadline - zclock_usecs () / 1e6;
        if (deadline >= 0 && left <= 0)
            return BN_ETIMEDOUT;
        zmq_pollitem_t items[] = {{query, 0, ZMQ_POLLIN, 0},
                                  {self->monitor, 0, ZMQ_POLLIN, 0}};
        int rc = zmq_poll (items, 2, left < 0 ? -1 : (long)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR)
            return BN_ECONNECT;
        uint16_t event = rc > 0 && (items[1].revents & ZMQ_POLLIN)
                             ? s_monitor_event (self)
                             : 0;
        //  libzmq gives up on a peer that breaks the protocol (a
        //  mechanism other than ours); a closed connection it tries again
        if (event & S_HANDSHAKE_REFUSED)
            refusals = S_HANDSHAKE_REFUSALS;
        else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
            refusals++;
        if (refusals >= S_HANDSHAKE_REFUSALS) {
            bn_log_warn (
                "client: the controller refuses the connection's security "
                "handshake: %s",
                curve ? "its key is not the connection file's "
                        "curve_serverkey (a stale file?)"
                      : "it uses CURVE and the connection file has no "
                        "curve_serverkey");
            return BN_ECONNECT;
        }
        if (rc <= 0 || !(items[0].revents & ZMQ_POLLIN))
            continue;
        bn_msg_t *reply = bn_msg_recv_flags (query, ZMQ_DONTWAIT);
        if (!reply)
            continue;
        int verify = bn_msg_verify (reply, self->rx, true);
        const char *parent = bn_msg_parent_id (reply);
        if (verify != 0 || !parent || strcmp (parent, msg_id) != 0) {
            s_drop (self, verify ? bn_strerror (verify) : "stray reply");
            bn_msg_destroy (&reply);
            if (verify == BN_ESIGNATURE) {
                bn_log_warn ("client: the controller's replies are not "
                             "signed with this connection file's key");
                return BN_ECONNECT;
            }
            continue;
        }
        json_t *content = bn_msg_content (reply);
        const char *status = s_status (content);
        json_t *engines = json_object_get (content, "engines");
        rc = 0;
        if (!status || strcmp (status, BN_STATUS_OK) != 0) {
            bn_log_warn ("client: the controller refused the connection: %s",
                         json_string_value (json_object_get (content, "evalue"))
                             ?: "?");
            rc = BN_ECONNECT;
        } else {
            const char *key;
            json_t *uuid;
            json_object_foreach (engines, key, uuid)
            {
                char *end;
                long id = strtol (key, &end, 10);
                if (*end || id < 0 || id > INT32_MAX ||
                    s_engine_add (self, (int)id, json_string_value (uuid)))
                    bn_log_warn ("client: ignored engine '%s' in the "
                                 "connection reply",
                                 key);
            }
        }
        bn_msg_destroy (&reply);
        return rc;
    }
}

static bn_client_t *
s_client_new (bn_connfile_t *cf, double deadline, int *error)
{
    int rc = 0;
    bn_client_t *self = calloc (1, sizeof *self);
    if (!self) {
        *error = BN_ENOMEM;
        return NULL;
    }
    pthread_mutex_init (&self->lock, NULL);
    pthread_mutex_init (&self->pipe_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init (&attr);
    pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
    pthread_cond_init (&self->change, &attr);
    pthread_condattr_destroy (&attr);
    atomic_init (&self->refs, 1);
    atomic_init (&self->dropped, 0);
    bn_session_new_id (self->session_id);
    self->session_len = strlen (self->session_id);
    const char *key = bn_connfile_key (cf);
    self->tx = bn_session_new (key, self->session_id);
    self->rx = bn_session_new (key, self->session_id);
    self->engine_ids = zhashx_new ();
    self->items = zhashx_new ();
    self->context = zmq_ctx_new ();
    if (!self->tx || !self->rx || !self->engine_ids || !self->items ||
        !self->context)
        rc = BN_ENOMEM;
    if (rc == 0)
        rc = s_open_sockets (self, cf);
    if (rc == 0)
        rc = s_open_pipe (self);
    if (rc == 0)
        rc = s_handshake (self, deadline,
                          bn_connfile_curve_serverkey (cf) != NULL);
    if (rc == 0) {
        if (pthread_create (&self->thread, NULL, s_io_thread, self) != 0)
            rc = BN_ENOMEM;
        else
            self->thread_started = true;
    }
    if (rc != 0) {
        *error = rc;
        s_free (self);
        return NULL;
    }
    return self;
}

//  Read a client connection file, waiting until deadline for it to
//  appear and to be complete (a Python controller writes it in place).
static bn_connfile_t *
s_load_file (const char *path, double deadline, int *error)
{
    char err[256] = "";
    bool seen = false;
    while (true) {
        if (access (path, F_OK) == 0) {
            seen = true;
            bn_connfile_t *cf = bn_connfile_load (path, err, sizeof err);
            if (cf)
                return cf;
        }
        if (deadline >= 0 && zclock_usecs () / 1e6 >= deadline)
            break;
        usleep (50 * 1000);
    }
    if (seen) {
        bn_log_warn ("client: bad connection file %s: %s", path, err);
        *error = BN_ECONNFILE;
    } else {
        bn_log_info ("client: no connection file %s", path);
        *error = BN_ENOENT;
    }
    return NULL;
}

static bn_client_t *
s_new_from (bn_connfile_t *cf, const char *where, double deadline, int *error)
{
    if (bn_connfile_kind (cf) != BN_CONNFILE_CLIENT) {
        bn_log_warn ("client: %s is an engine connection file, not the "
                     "client one",
                     where);
        bn_connfile_destroy (&cf);
        *error = BN_ECONNFILE;
        return NULL;
    }
    bn_client_t *self = s_client_new (cf, deadline, error);
    bn_connfile_destroy (&cf);
    return self;
}

static double
s_default_timeout (double timeout)
{
    if (timeout != 0)
        return timeout;
    bn_config_t *config = bn_config_new ();
    if (config) {
        bn_config_load_env (config, NULL);
        timeout = bn_config_msecs (config, "client.timeout") / 1000.0;
        bn_config_destroy (&config);
    }
    return timeout > 0 ? timeout : 10;
}

//  JSON text or a path, from an environment variable.
static bn_client_t *
s_new_from_text (const char *text, const char *where, double deadline,
                 int *error)
{
    bn_connfile_t *cf;
    char err[256] = "";
    if (text[0] == '{') {
        cf = bn_connfile_parse (text, err, sizeof err);
        if (!cf) {
            bn_log_warn ("client: bad connection info in %s: %s", where, err);
            *error = BN_ECONNFILE;
            return NULL;
        }
    } else {
        cf = s_load_file (text, deadline, error);
        if (!cf)
            return NULL;
    }
    return s_new_from (cf, where, deadline, error);
}

//  Connect from the client file of the profile folder dir.
static bn_client_t *
s_new_in_dir (const char *dir, const char *cluster_id, double deadline,
              int *error)
{
    char *path = bn_connfile_path (dir, cluster_id, BN_CONNFILE_CLIENT);
    if (!path) {
        *error = BN_ENOMEM;
        return NULL;
    }
    bn_connfile_t *cf = s_load_file (path, deadline, error);
    bn_client_t *self = cf ? s_new_from (cf, path, deadline, error) : NULL;
    free (path);
    return self;
}

bn_client_t *
bn_client_new_profile (const char *profile, const char *cluster_id,
                       double timeout, int *error)
{
    int dummy;
    if (!error)
        error = &dummy;
    *error = 0;
    double deadline = bn_client_deadline (s_default_timeout (timeout));
    bn_config_t *config = bn_config_new ();
    if (!config) {
        *error = BN_ENOMEM;
        return NULL;
    }
    bn_config_load_env (config, NULL);
    char *dir = profile && strchr (profile, '/')
                    ? strdup (profile)
                    : bn_config_profile_dir (config, profile);
    char *cid =
        strdup (cluster_id ? cluster_id : bn_config_str (config, "cluster.id"));
    bn_config_destroy (&config);
    bn_client_t *self = NULL;
    if (dir && cid)
        self = s_new_in_dir (dir, cid, deadline, error);
    else
        *error = BN_ENOMEM;
    free (dir);
    free (cid);
    return self;
}

bn_client_t *
bn_client_new (const char *source, double timeout, int *error)
{
    int dummy;
    if (!error)
        error = &dummy;
    *error = 0;
    timeout = s_default_timeout (timeout);
    double deadline = bn_client_deadline (timeout);
    if (!source) {
        const char *text = getenv ("BANYAN_CONNECTION_INFO");
        if (text && *text)
            return s_new_from_text (text, "BANYAN_CONNECTION_INFO", deadline,
                                    error);
        //  IPython Parallel 8 hands engines their (engine) connection
        //  info in IPP_CONNECTION_INFO: only a client one is used here.
        text = getenv ("IPP_CONNECTION_INFO");
        if (text && text[0] == '{') {
            bn_connfile_t *cf = bn_connfile_parse (text, NULL, 0);
            if (cf && bn_connfile_kind (cf) == BN_CONNFILE_CLIENT)
                return s_new_from (cf, "IPP_CONNECTION_INFO", deadline, error);
            bn_connfile_destroy (&cf);
        } else if (text && *text)
            return s_new_from_text (text, "IPP_CONNECTION_INFO", deadline,
                                    error);
        return bn_client_new_profile (NULL, NULL, timeout, error);
    }
    if (source[0] == '{')
        return s_new_from_text (source, "the connection JSON", deadline, error);
    struct stat st;
    bool exists = stat (source, &st) == 0;
    if (exists && S_ISDIR (st.st_mode)) {
        bn_config_t *config = bn_config_new ();
        if (!config) {
            *error = BN_ENOMEM;
            return NULL;
        }
        bn_config_load_env (config, NULL);
        bn_client_t *self = s_new_in_dir (
            source, bn_config_str (config, "cluster.id"), deadline, error);
        bn_config_destroy (&config);
        return self;
    }
    size_t len = strlen (source);
    if (exists || strchr (source, '/') ||
        (len > 5 && strcmp (source + len - 5, ".json") == 0))
        return s_new_from_text (source, source, deadline, error);
    return bn_client_new_profile (source, NULL, timeout, error);
}

void
bn_client_destroy (bn_client_t **self_p)
{
    assert (self_p);
    bn_client_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    bn_client_lock (self);
    if (self->state == 0)
        self->state = BN_ECLOSED;
    s_fail_all (self, BN_ECLOSED);
    s_changed (self);
    bn_client_unlock (self);

    pthread_mutex_lock (&self->pipe_lock);
    s_cmd_t stop = {S_CMD_STOP, 0, 0, NULL};
    zmq_send (self->pipe, &stop, sizeof stop, 0);
    self->pipe_closed = true;
    pthread_mutex_unlock (&self->pipe_lock);
    //  No command can follow the STOP (pipe_closed is set with it), and
    //  the I/O thread runs every command before it, so none is lost.
    pthread_join (self->thread, NULL);
    self->thread_started = false;
    zmq_close (self->pipe);
    self->pipe = NULL;
    zmq_ctx_term (self->context);
    self->context = NULL;
    bn_client_unref (&self);
}

//  -------------------------------------------------------------------
//  Public queries

int
bn_client_status (bn_client_t *self)
{
    if (!self)
        return BN_EINVAL;
    bn_client_lock (self);
    int state = self->state;
    bn_client_unlock (self);
    return state;
}

const char *
bn_client_session (bn_client_t *self)
{
    return self ? self->session_id : NULL;
}

bn_idset_t *
bn_client_ids (bn_client_t *self)
{
    if (!self)
        return NULL;
    bn_idset_t *ids = bn_idset_new ();
    if (!ids)
        return NULL;
    bn_client_lock (self);
    for (size_t id = 0; id < self->uuids_size; id++)
        if (self->uuids[id] && bn_idset_add (ids, (int)id) != 0) {
            bn_idset_destroy (&ids);
            break;
        }
    bn_client_unlock (self);
    return ids;
}

size_t
bn_client_engine_count (bn_client_t *self)
{
    if (!self)
        return 0;
    bn_client_lock (self);
    size_t count = self->nengines;
    bn_client_unlock (self);
    return count;
}

int
bn_client_wait_for_engines (bn_client_t *self, size_t count, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_client_deadline (timeout);
    int rc = 0;
    bn_client_lock (self);
    while (self->nengines < count) {
        rc = self->state;
        if (rc == 0)
            rc = bn_client_wait_change (self, deadline);
        if (rc != 0)
            break;
    }
    bn_client_unlock (self);
    return rc;
}

int
bn_client_engine_uuid (bn_client_t *self, int id, char *buf, size_t size)
{
    if (!self || !buf)
        return BN_EINVAL;
    int rc = BN_ENOENGINE;
    bn_client_lock (self);
    if (id >= 0 && (size_t)id < self->uuids_size && self->uuids[id]) {
        size_t len = strlen (self->uuids[id]);
        if (len < size) {
            memcpy (buf, self->uuids[id], len + 1);
            rc = 0;
        } else
            rc = BN_EINVAL;
    }
    bn_client_unlock (self);
    return rc;
}

size_t
bn_client_dropped (bn_client_t *self)
{
    return self ? atomic_load (&self->dropped) : 0;
}

int
bn_client_query (bn_client_t *self, const char *type, json_t *content,
                 double timeout, bn_result_t **result_p)
{
    *result_p = NULL;
    bn_client_lock (self);
    int rc = self->state;
    bn_msg_t *msg = NULL;
    bn_result_t *result = NULL;
    if (rc == 0) {
        msg = bn_msg_new (self->tx, type);
        result = bn_result_new (self, 1);
        if (!msg || !result)
            rc = BN_ENOMEM;
    }
    if (rc == 0) {
        json_t *header = bn_msg_header (msg);
        bn_item_t *item =
            bn_result_add (result, bn_msg_id (msg),
                           json_string_value (json_object_get (header, "date")),
                           -1, NULL, BN_ITEM_QUERY);
        if (!item || bn_client_track (self, item) != 0)
            rc = BN_ENOMEM;
    }
    bn_client_unlock (self);
    if (rc == 0) {
        bn_msg_set_content (msg, content);
        content = NULL;
        rc = bn_client_send (self, BN_SOCK_QUERY, &msg, 1);
    }
    json_decref (content);
    bn_msg_destroy (&msg);
    if (rc == 0)
        rc = bn_result_get (result, timeout);
    if (rc == 0 || rc == BN_EREMOTE)
        *result_p = result;
    else
        bn_result_destroy (&result);
    return rc;
}

int
bn_client_queue_status (bn_client_t *self, bn_idset_t *targets, double timeout,
                        bn_queue_status_t **status, size_t *count,
                        int *unassigned)
{
    if (!self || !status || !count)
        return BN_EINVAL;
    *status = NULL;
    *count = 0;
    json_t *ids = json_null ();
    if (targets) {
        ids = json_array ();
        for (int id = bn_idset_first (targets); id >= 0;
             id = bn_idset_next (targets, id))
            json_array_append_new (ids, json_integer (id));
    }
    json_t *content = json_pack ("{s:o, s:b}", "targets", ids, "verbose", 0);
    if (!content)
        return BN_ENOMEM;
    bn_result_t *result;
    int rc =
        bn_client_query (self, BN_MSG_QUEUE_REQUEST, content, timeout, &result);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (result, 0);
        if (ename && strcmp (ename, "IndexError") == 0)
            rc = BN_ENOENGINE;
    }
    if (rc != 0) {
        bn_result_destroy (&result);
        return rc;
    }
    json_t *reply = bn_result_reply (result, 0);
    size_t n = json_object_size (reply);
    bn_queue_status_t *out = calloc (n ? n : 1, sizeof *out);
    if (!out) {
        bn_result_destroy (&result);
        return BN_ENOMEM;
    }
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach (reply, key, value)
    {
        if (strcmp (key, "unassigned") == 0) {
            if (unassigned)
                *unassigned = (int)json_integer_value (value);
            continue;
        }
        char *end;
        long id = strtol (key, &end, 10);
        if (*end || !json_is_object (value))
            continue;
        bn_queue_status_t *entry = &out[k++];
        entry->engine_id = (int)id;
        entry->queue =
            (int)json_integer_value (json_object_get (value, "queue"));
        entry->completed =
            (int)json_integer_value (json_object_get (value, "completed"));
        entry->tasks =
            (int)json_integer_value (json_object_get (value, "tasks"));
    }
    //  JSON objects keep insertion order; sort by id for the caller.
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && out[j - 1].engine_id > out[j].engine_id;
             j--) {
            bn_queue_status_t swap = out[j];
            out[j] = out[j - 1];
            out[j - 1] = swap;
        }
    bn_result_destroy (&result);
    *status = out;
    *count = k;
    return 0;
}

//  ---------------------------------------------------------------------
//  The hub's task records

void
bn_client_free_strv (char ***strv_p)
{
    if (!strv_p || !*strv_p)
        return;
    for (char **s = *strv_p; *s; s++)
        free (*s);
    free (*strv_p);
    *strv_p = NULL;
}

//  A NULL-terminated copy of the strings of a JSON array; NULL if out of
//  memory or an item is not a string.
static char **
s_strv (json_t *list, size_t *count)
{
    size_t n = json_array_size (list);
    char **strv = calloc (n + 1, sizeof (char *));
    for (size_t i = 0; strv && i < n; i++) {
        const char *text = json_string_value (json_array_get (list, i));
        if (!text || !(strv[i] = strdup (text))) {
            bn_client_free_strv (&strv);
            return NULL;
        }
    }
    if (count)
        *count = strv ? n : 0;
    return strv;
}

//  A JSON array of a NULL-terminated string array; NULL if out of memory.
static json_t *
s_json_strv (const char *const *strv)
{
    json_t *list = json_array ();
    for (size_t i = 0; list && strv && strv[i]; i++)
        if (json_array_append_new (list, json_string (strv[i])) != 0) {
            json_decref (list);
            return NULL;
        }
    return list;
}

//  A hub query whose error reply's ename is mapped: NoData (no records
//  kept) gives BN_ENOENT, and so does KeyError (no such record) unless
//  index_error is BN_EREMOTE.
static int
s_records_query (bn_client_t *self, const char *type, json_t *content,
                 double timeout, bn_result_t **result_p, int index_error)
{
    if (!content)
        return BN_ENOMEM;
    int rc = bn_client_query (self, type, content, timeout, result_p);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (*result_p, 0);
        if (ename &&
            (strcmp (ename, "NoData") == 0 ||
             (strcmp (ename, "KeyError") == 0 && index_error != BN_EREMOTE)))
            rc = BN_ENOENT;
    }
    return rc;
}

//  A JSON part's text for bn_msg_new_parts: value dumped into *text.
static void
s_part (json_t *value, char **text, const void **data, size_t *size)
{
    *text = json_is_object (value) ? json_dumps (value, JSON_COMPACT) : NULL;
    *data = *text;
    *size = *text ? strlen (*text) : 0;
}

int
bn_client_get_result (bn_client_t *self, const char *msg_id, double timeout,
                      bn_result_t **result_p)
{
    if (!self || !msg_id || !result_p)
        return BN_EINVAL;
    *result_p = NULL;
    bn_result_t *query;
    int rc = s_records_query (
        self, BN_MSG_RESULT_REQUEST,
        json_pack ("{s:[s], s:b}", "msg_ids", msg_id, "status_only", 0),
        timeout, &query, 0);
    if (rc != 0) {
        bn_result_destroy (&query);
        return rc;
    }
    json_t *reply = bn_result_reply (query, 0);
    json_t *entry = json_object_get (reply, msg_id);
    bn_msg_t *raw = bn_result_reply_msg (query, 0);
    if (!json_is_object (entry) || !raw) {
        rc = json_array_size (json_object_get (reply, "pending")) ? BN_ENOTREADY
                                                                  : BN_EPROTO;
        bn_result_destroy (&query);
        return rc;
    }
    //  the reply as the engine sent it: result header, the request's
    //  header as parent, result metadata and content, result buffers
    json_t *header = json_object_get (entry, "header");
    char *texts[4];
    const void *data[4];
    size_t sizes[4];
    s_part (json_object_get (entry, "result_header"), &texts[0], &data[0],
            &sizes[0]);
    s_part (header, &texts[1], &data[1], &sizes[1]);
    s_part (json_object_get (entry, "result_metadata"), &texts[2], &data[2],
            &sizes[2]);
    s_part (json_object_get (entry, "result_content"), &texts[3], &data[3],
            &sizes[3]);
    bn_msg_t *msg =
        texts[0] && texts[3] ? bn_msg_new_parts (data, sizes) : NULL;
    for (int i = 0; i < 4; i++)
        free (texts[i]);
    for (size_t i = 0; msg && i < bn_msg_nbuffers (raw); i++)
        if (bn_msg_add_buffer_msg (msg, bn_msg_buffer (raw, i)) != 0)
            bn_msg_destroy (&msg);
    bn_result_t *result = msg ? bn_result_new (self, 1) : NULL;
    if (!result) {
        bn_msg_destroy (&msg);
        bn_result_destroy (&query);
        return msg ? BN_ENOMEM : BN_EPROTO;
    }
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    bn_value_t *value = NULL;
    int error = 0;
    char why[256] = "";
    if (type && strcmp (type, BN_MSG_APPLY_REPLY) == 0 && s_status (content) &&
        strcmp (s_status (content), BN_STATUS_OK) == 0) {
        size_t used;
        value = s_decode (msg, 0, SIZE_MAX, &used, &error, why, sizeof why);
    }
    json_t *io = json_object_get (entry, "io");
    const char *uuid = s_str (bn_msg_metadata (msg), "engine");
    bn_client_lock (self);
    int engine_id = uuid ? bn_client_engine_id_of (self, uuid) : -1;
    bn_item_t *item = bn_result_add (result, msg_id, s_str (header, "date"),
                                     engine_id, uuid, BN_ITEM_SHELL);
    if (item) {
        bn_item_on_reply (item, msg, value, error, why, engine_id);
        value = NULL;
        static const char *streams[] = {"stdout", "stderr"};
        for (int i = 0; i < 2; i++) {
            json_t *text = json_object_get (io, streams[i]);
            if (json_is_string (text) && json_string_length (text)) {
                json_t *stream =
                    json_pack ("{s:s, s:O}", "name", streams[i], "text", text);
                bn_item_on_iopub (item, BN_MSG_STREAM, stream);
                json_decref (stream);
            }
        }
        json_t *execute_result = json_object_get (io, "execute_result");
        if (json_is_object (execute_result))
            bn_item_on_iopub (item, BN_MSG_EXECUTE_RESULT, execute_result);
        json_t *idle = json_pack ("{s:s}", "execution_state", "idle");
        bn_item_on_iopub (item, BN_MSG_STATUS, idle);
        json_decref (idle);
    }
    bn_client_unlock (self);
    bn_value_destroy (&value);
    bn_msg_destroy (&msg);
    bn_result_destroy (&query);
    if (!item) {
        bn_result_destroy (&result);
        return BN_ENOMEM;
    }
    *result_p = result;
    return error ? BN_EPICKLE : 0;
}

int
bn_client_history (bn_client_t *self, double timeout, char ***msg_ids,
                   size_t *count)
{
    if (!self || !msg_ids)
        return BN_EINVAL;
    *msg_ids = NULL;
    if (count)
        *count = 0;
    bn_result_t *query;
    int rc = s_records_query (self, BN_MSG_HISTORY_REQUEST, json_object (),
                              timeout, &query, 0);
    if (rc == 0) {
        json_t *history =
            json_object_get (bn_result_reply (query, 0), "history");
        *msg_ids = json_is_array (history) ? s_strv (history, count) : NULL;
        if (!*msg_ids)
            rc = json_is_array (history) ? BN_ENOMEM : BN_EPROTO;
    }
    bn_result_destroy (&query);
    return rc;
}

int
bn_client_db_query (bn_client_t *self, const char *query_json,
                    const char *const *keys, double timeout, char **records)
{
    if (!self || !records)
        return BN_EINVAL;
    *records = NULL;
    json_t *query =
        query_json ? json_loads (query_json, 0, NULL) : json_object ();
    if (!json_is_object (query)) {
        json_decref (query);
        return BN_EINVAL;
    }
    json_t *key_list = keys ? s_json_strv (keys) : json_null ();
    json_t *content =
        key_list ? json_pack ("{s:o, s:o}", "query", query, "keys", key_list)
                 : NULL;
    if (!key_list)
        json_decref (query);
    bn_result_t *result;
    int rc = s_records_query (self, BN_MSG_DB_REQUEST, content, timeout,
                              &result, BN_EREMOTE);
    if (rc == 0) {
        json_t *list = json_object_get (bn_result_reply (result, 0), "records");
        *records =
            json_is_array (list) ? json_dumps (list, JSON_COMPACT) : NULL;
        if (!*records)
            rc = json_is_array (list) ? BN_ENOMEM : BN_EPROTO;
    } else if (rc == BN_EREMOTE && result) {
        const char *ename = bn_result_ename (result, 0);
        const char *evalue = bn_result_evalue (result, 0);
        *records = zsys_sprintf ("%s: %s", ename ? ename : "error",
                                 evalue ? evalue : "");
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_purge (bn_client_t *self, const char *const *msg_ids,
                 bn_idset_t *engines, double timeout)
{
    if (!self)
        return BN_EINVAL;
    json_t *ids = msg_ids ? s_json_strv (msg_ids) : json_string ("all");
    json_t *eids = json_array ();
    for (int id = engines ? bn_idset_first (engines) : -1; eids && id >= 0;
         id = bn_idset_next (engines, id))
        json_array_append_new (eids, json_integer (id));
    json_t *content = ids && eids ? json_pack ("{s:o, s:o}", "msg_ids", ids,
                                               "engine_ids", eids)
                                  : NULL;
    if (!content) {
        json_decref (ids);
        json_decref (eids);
        return BN_ENOMEM;
    }
    bn_result_t *result;
    int rc =
        bn_client_query (self, BN_MSG_PURGE_REQUEST, content, timeout, &result);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (result, 0);
        const char *evalue = bn_result_evalue (result, 0);
        if (ename && strcmp (ename, "IndexError") == 0)
            rc = evalue && strstr (evalue, "pending") ? BN_ENOTREADY
                                                      : BN_ENOENGINE;
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_resubmit (bn_client_t *self, const char *const *msg_ids,
                    double timeout, char ***new_ids)
{
    if (new_ids)
        *new_ids = NULL;
    if (!self || !msg_ids || !msg_ids[0])
        return BN_EINVAL;
    json_t *ids = s_json_strv (msg_ids);
    bn_result_t *result;
    int rc = s_records_query (self, BN_MSG_RESUBMIT_REQUEST,
                              ids ? json_pack ("{s:o}", "msg_ids", ids) : NULL,
                              timeout, &result, 0);
    if (rc == 0 && new_ids) {
        json_t *map =
            json_object_get (bn_result_reply (result, 0), "resubmitted");
        json_t *list = json_array ();
        for (size_t i = 0; list && msg_ids[i]; i++) {
            json_t *id = json_object_get (map, msg_ids[i]);
            json_array_append (list, json_is_string (id) ? id : json_null ());
        }
        //  a msg_id the scheduler did not take has no new id
        size_t n = json_array_size (list);
        for (size_t i = 0; i < n; i++)
            if (!json_is_string (json_array_get (list, i)))
                rc = BN_EREMOTE;
        *new_ids = rc == 0 && list ? s_strv (list, NULL) : NULL;
        if (rc == 0 && !*new_ids)
            rc = BN_ENOMEM;
        json_decref (list);
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_shutdown (bn_client_t *self, bool hub, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_client_deadline (timeout);
    int rc = 0;
    if (bn_client_engine_count (self) > 0) {
        bn_view_t *view = bn_view_new (self, BN_VIEW_DIRECT);
        if (!view)
            return BN_ENOMEM;
        rc = bn_view_shutdown (view, timeout);
        bn_view_destroy (&view);
    }
    if (hub && (rc == 0 || rc == BN_ENOENGINE)) {
        double left = deadline < 0 ? -1 : deadline - zclock_usecs () / 1e6;
        if (deadline >= 0 && left < 0)
            left = 0;
        json_t *content = json_object ();
        if (!content)
            return BN_ENOMEM;
        bn_result_t *result;
        rc = bn_client_query (self, BN_MSG_SHUTDOWN_REQUEST, content, left,
                              &result);
        bn_result_destroy (&result);
        //  Its notification or its exit may overtake the reply.
        if (rc == BN_ENOCONTROLLER)
            rc = 0;
        //  The controller is going: say so now, not when it has gone.
        if (rc == 0) {
            bn_client_lock (self);
            s_gone (self, BN_ENOCONTROLLER);
            s_changed (self);
            bn_client_unlock (self);
        }
    }
    return rc;
}

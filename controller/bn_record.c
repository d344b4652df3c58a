/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_record: one task record; its TaskRecord dict is built on demand.  */
#include "bn_record.h"

#include <assert.h>
#include <czmq.h>
#include <string.h>
#include <sys/time.h>

#include "bn_apply.h"
#include "bn_copier.h"
#include "bn_jscan.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_query.h"
#include "bn_rawtext.h"
#include "bn_serialize.h"
#include "bn_wire.h"

//  Buffers a record keeps in memory of its own (s_keep): from libzmq's
//  batch size, past which a received frame has memory of its own, to a
//  size where a second copy would cost more than its pages
#define S_OWN_MIN 8192
#define S_OWN_MAX (64 * 1024 * 1024)

struct _bn_record_t {
    char *msg_id;
    const char *queue; //  BN_MONITOR_QUEUE_* or NULL
    char *engine_uuid;
    char *resubmitted;
    bn_msg_t *request;    //  No idents; large buffers copied (s_keep)
    bn_msg_t *reply;      //  No idents; buffers shared
    int64_t received;     //  Microseconds since the epoch, 0 if no reply
    zlistx_t *iopub;      //  bn_msg_t *, in arrival order, or NULL
    zlistx_t *parts;      //  Broadcast: bn_msg_t * of every reply, merged
                          //  or one engine's, in arrival order, or NULL
    uint64_t parts_bytes; //  Buffer bytes of the merged parts
    zhashx_t *split;      //  uuid -> s_split_t, the merged parts' entries
                          //  by engine once complete, or NULL
    json_t *io;           //  Folded iopub of a record read from SQLite
    json_t *json;         //  Cached TaskRecord, NULL when stale
    uint64_t bytes;       //  Buffer bytes of request and reply
    bool dirty;           //  Changed since written to SQLite
    bool temporary;       //  Read from SQLite: freed on release

    //  The copy of the request's buffers (s_keep), or NULL
    bn_copier_job_t *copying;
};

static int64_t
s_now (void)
{
    struct timeval tv;
    gettimeofday (&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static uint64_t
s_msg_bytes (bn_msg_t *msg)
{
    uint64_t bytes = 0;
    for (size_t i = 0; msg && i < bn_msg_nbuffers (msg); i++)
        bytes += zmq_msg_size (bn_msg_buffer (msg, i));
    return bytes;
}

//  Buffer bytes of the request and the replies: a broadcast's are its
//  merged parts (its last reply is one of its parts; an engine's own
//  reply counts in that engine's record).
static uint64_t
s_bytes (bn_record_t *self)
{
    return s_msg_bytes (self->request) +
           (self->parts ? self->parts_bytes : s_msg_bytes (self->reply));
}

static void
s_msg_list_destroy (zlistx_t **list_p)
{
    if (!*list_p)
        return;
    bn_msg_t *msg = zlistx_first (*list_p);
    while (msg) {
        bn_msg_destroy (&msg);
        msg = zlistx_next (*list_p);
    }
    zlistx_destroy (list_p);
}

//  Wait until the request's buffers are in the record's own memory.
static void
s_settle (bn_record_t *self)
{
    if (!self->copying)
        return;
    bn_copier_job_wait (self->copying);
    bn_copier_job_release (&self->copying);
}

//  Mark a record changed.
static void
s_changed (bn_record_t *self)
{
    json_decref (self->json);
    self->json = NULL;
    self->dirty = true;
}

static void
s_set_string (char **field, const char *value)
{
    if (!value || (*field && strcmp (*field, value) == 0))
        return;
    char *copy = strdup (value);
    if (!copy)
        return;
    free (*field);
    *field = copy;
}

bn_record_t *
bn_record_new (const char *msg_id)
{
    assert (msg_id);
    bn_record_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->msg_id = strdup (msg_id);
    self->dirty = true;
    if (!self->msg_id)
        bn_record_destroy (&self);
    return self;
}

bn_record_t *
bn_record_new_row (const bn_records_row_t *row)
{
    assert (row);
    bn_record_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->temporary = true;
    self->msg_id = strdup (row->msg_id);
    if (row->queue)
        self->queue = streq (row->queue, BN_MONITOR_QUEUE_MUX)
                          ? BN_MONITOR_QUEUE_MUX
                      : streq (row->queue, BN_MONITOR_QUEUE_TASK)
                          ? BN_MONITOR_QUEUE_TASK
                          : BN_MONITOR_QUEUE_BROADCAST;
    s_set_string (&self->engine_uuid, row->engine_uuid);
    s_set_string (&self->resubmitted, row->resubmitted);
    self->request = row->request ? bn_msg_dup (row->request) : NULL;
    self->reply = row->reply ? bn_msg_dup (row->reply) : NULL;
    self->received = row->received;
    if (row->has_parts && (self->parts = zlistx_new ())) {
        //  the reply was the last of a completed broadcast's parts
        for (size_t i = 0; i <= row->nparts; i++) {
            bn_msg_t *part = i < row->nparts ? row->parts[i] : row->reply;
            bn_msg_t *copy = part ? bn_msg_dup (part) : NULL;
            if (copy && !zlistx_add_end (self->parts, copy))
                bn_msg_destroy (&copy);
            if (copy && bn_merged_engines (copy) >= 0)
                self->parts_bytes += s_msg_bytes (copy);
        }
    }
    self->bytes = s_bytes (self);
    if (row->io)
        self->io = json_loads (row->io, 0, NULL);
    if (!self->msg_id)
        bn_record_destroy (&self);
    return self;
}

//  The id of engine uuid among the request's targets ([[uuid, id], ...]);
//  -1 if it is not one of them.
static int
s_target_id (bn_msg_t *request, const char *uuid)
{
    json_t *targets = json_object_get (bn_msg_metadata (request), "targets");
    size_t index;
    json_t *target;
    json_array_foreach (targets, index, target)
    {
        const char *name = json_string_value (json_array_get (target, 0));
        json_t *id = json_array_get (target, 1);
        if (name && streq (name, uuid) && json_is_integer (id))
            return (int)json_integer_value (id);
    }
    return -1;
}

//  A JSON value from an entry's raw text, or NULL.
static json_t *
s_slice_string (bn_jscan_slice_t slice)
{
    char *text = slice.data ? bn_merged_string (slice) : NULL;
    json_t *value = text ? json_string (text) : NULL;
    free (text);
    return value;
}

//  One engine's reply rebuilt from its entry of merged reply: the merged
//  reply's header dated when the engine completed, the engine's request
//  header as parent, the merged metadata with the engine's status,
//  started and uuid, its content (its error, or its status and output)
//  and its buffers (shared). NULL if out of memory.
static bn_msg_t *
s_entry_reply (bn_msg_t *merged, bool spliced, bn_merged_entry_t *entry,
               const char *uuid, bn_msg_t *request)
{
    const void *data[4] = {NULL, NULL, NULL, NULL};
    size_t sizes[4] = {0, 0, 0, 0};
    bn_msg_t *reply = bn_msg_new_parts (data, sizes);
    json_t *header = json_deep_copy (bn_msg_header (merged));
    json_t *metadata = bn_merged_base (merged, spliced);
    json_t *content =
        entry->content.data ? bn_merged_json (entry->content) : NULL;
    if (!content) {
        //  an entry that is ok has no content of its own: the merged
        //  one's when it is ok too (another engine's: what they share),
        //  else what an ok reply of the type must hold
        json_t *base = bn_msg_content (merged);
        const char *status =
            json_string_value (json_object_get (base, "status"));
        content = status && streq (status, BN_STATUS_OK) ? json_deep_copy (base)
                                                         : json_object ();
        const char *type = bn_msg_type (merged);
        if (content && type && streq (type, BN_MSG_EXECUTE_REPLY) &&
            !json_object_get (content, "execution_count"))
            json_object_set_new (content, "execution_count", json_integer (0));
        if (content && type && streq (type, BN_MSG_EXECUTE_REPLY)) {
            json_object_set_new (content, "user_expressions", json_object ());
            json_object_set_new (content, "payload", json_array ());
        }
        if (content)
            json_object_set_new (content, "status",
                                 json_string (entry->status));
    }
    json_object_del (content, "bn_stdout");
    json_object_del (content, "bn_stderr");
    json_t *completed = s_slice_string (entry->completed);
    json_t *started = s_slice_string (entry->started);
    if (!reply || !header || !metadata || !content) {
        json_decref (header);
        json_decref (metadata);
        json_decref (content);
        json_decref (completed);
        json_decref (started);
        bn_msg_destroy (&reply);
        return NULL;
    }
    if (completed)
        json_object_set (header, "date", completed);
    json_object_set_new (metadata, "status", json_string (entry->status));
    json_object_set_new (metadata, "started", started ? started : json_null ());
    json_object_set_new (metadata, "engine", json_string (uuid));
    //  one engine's reply, as a forwarding tree delivers it
    if (json_object_get (metadata, BN_MD_IS_COALESCING))
        json_object_set_new (metadata, BN_MD_IS_COALESCING, json_false ());
    if (entry->out.data)
        json_object_set_new (content, "bn_stdout", s_slice_string (entry->out));
    if (entry->err.data)
        json_object_set_new (content, "bn_stderr", s_slice_string (entry->err));
    json_decref (completed);
    bn_msg_set_part (reply, BN_PART_HEADER, header);
    json_t *parent = bn_msg_header (request);
    bn_msg_set_part (reply, BN_PART_PARENT,
                     parent ? json_incref (parent) : json_object ());
    bn_msg_set_metadata (reply, metadata);
    bn_msg_set_content (reply, content);
    for (size_t i = 0; entry->sized && i < entry->nbuffers; i++)
        if (bn_msg_add_buffer_msg (reply,
                                   bn_msg_buffer (merged, entry->first + i))) {
            bn_msg_destroy (&reply);
            break;
        }
    return reply;
}

//  One engine's entry of a merged part, found once for every query of an
//  engine's part: a scan of the part for each would take the hub time
//  growing with the square of the engines (46 s to read each part of a
//  10,000-engine broadcast).
typedef struct {
    bn_msg_t *part;          //  the merged reply holding it (in parts)
    bool spliced;            //  its lists were read spliced
    bn_merged_entry_t entry; //  its slices point into the part's metadata
    char status[32];         //  entry.status's text
} s_split_t;

static void
s_split_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

//  Index the entries that name their engine's uuid (the targets shape) of
//  every merged part, the first of an engine's kept; the index stays empty
//  if a merged part has another shape (an entry there may name the engine
//  by its id first), and NULL if out of memory.
static void
s_split_index (bn_record_t *self)
{
    self->split = zhashx_new ();
    if (!self->split)
        return;
    zhashx_set_destructor (self->split, s_split_destroy);
    bn_msg_t *part = self->parts ? zlistx_first (self->parts) : NULL;
    for (; part; part = zlistx_next (self->parts)) {
        bn_merged_shape_t shape = bn_merged_shape (part);
        if (shape != BN_MERGED_TARGETS && shape != BN_MERGED_NONE) {
            zhashx_purge (self->split);
            return;
        }
        if (shape != BN_MERGED_TARGETS)
            continue;
        //  whether the lists were spliced is known once every entry is read
        bn_merged_reader_t *reader = bn_merged_reader_new (part);
        bn_merged_entry_t entry;
        int rc;
        while (reader && (rc = bn_merged_reader_next (reader, &entry)) != 0 &&
               rc != -1)
            ;
        bool spliced = reader && bn_merged_reader_spliced (reader);
        bn_merged_reader_destroy (&reader);
        reader = bn_merged_reader_new (part);
        while (reader && (rc = bn_merged_reader_next (reader, &entry)) != 0 &&
               rc != -1) {
            if (rc < 0 || !entry.uuid ||
                zhashx_lookup (self->split, entry.uuid))
                continue;
            s_split_t *split = calloc (1, sizeof *split);
            if (!split || zhashx_insert (self->split, entry.uuid, split) != 0) {
                free (split);
                bn_merged_reader_destroy (&reader);
                zhashx_destroy (&self->split);
                return;
            }
            split->part = part;
            split->spliced = spliced;
            split->entry = entry;
            split->entry.uuid = NULL;
            split->entry.engines = NULL;
            snprintf (split->status, sizeof split->status, "%s",
                      entry.status ? entry.status : "error");
            split->entry.status = split->status;
        }
        bn_merged_reader_destroy (&reader);
    }
}

//  Find engine uuid (id eid) in merged reply; its reply, or NULL.
static bn_msg_t *
s_find_entry (bn_msg_t *merged, const char *uuid, int eid, bn_msg_t *request)
{
    bn_merged_reader_t *reader = bn_merged_reader_new (merged);
    bn_merged_entry_t entry;
    bn_msg_t *reply = NULL;
    int rc;
    while (reader && !reply &&
           (rc = bn_merged_reader_next (reader, &entry)) != 0 && rc != -1) {
        if (rc < 0)
            continue;
        bool found = entry.uuid ? streq (entry.uuid, uuid)
                                : entry.engines && eid >= 0 &&
                                      bn_idset_contains (entry.engines, eid);
        if (!found)
            continue;
        if (entry.engines && !entry.failure &&
            bn_merged_reader_shape (reader) == BN_MERGED_REDUCED) {
            //  a reduced value is no engine's own: its status, no value
            entry.sized = false;
        }
        //  the metadata's base is known once every entry is read
        bn_merged_entry_t mine = entry;
        char *status = strdup (entry.status ? entry.status : "error");
        bn_jscan_slice_t slices[5] = {entry.started, entry.completed,
                                      entry.content, entry.out, entry.err};
        char *texts[5];
        for (int i = 0; i < 5; i++)
            texts[i] = slices[i].data ? strndup (slices[i].data, slices[i].size)
                                      : NULL;
        while ((rc = bn_merged_reader_next (reader, &entry)) != 0 && rc != -1)
            ;
        bn_jscan_slice_t *fields[5] = {&mine.started, &mine.completed,
                                       &mine.content, &mine.out, &mine.err};
        for (int i = 0; i < 5; i++) {
            fields[i]->data = texts[i];
            fields[i]->size = texts[i] ? slices[i].size : 0;
        }
        mine.status = status;
        if (status)
            reply = s_entry_reply (merged, bn_merged_reader_spliced (reader),
                                   &mine, uuid, request);
        for (int i = 0; i < 5; i++)
            free (texts[i]);
        free (status);
    }
    bn_merged_reader_destroy (&reader);
    return reply;
}

bn_record_t *
bn_record_new_engine (bn_record_t *original, const char *uuid,
                      const char *msg_id)
{
    assert (original);
    assert (uuid);
    assert (msg_id);
    if (!original->request)
        return NULL;
    s_settle (original);
    //  (a complete broadcast's parts no longer change)
    if (original->reply && original->parts && !original->split)
        s_split_index (original);
    s_split_t *split =
        original->split ? zhashx_lookup (original->split, uuid) : NULL;
    //  an engine with an entry of its own is one of the targets
    int eid = split ? split->entry.eid : s_target_id (original->request, uuid);
    if (!split && eid < 0)
        return NULL;
    bn_record_t *self = bn_record_new (msg_id);
    if (!self)
        return NULL;
    self->temporary = true;
    self->queue = original->queue;
    s_set_string (&self->engine_uuid, uuid);
    self->request = bn_msg_dup (original->request);
    if (!self->request || bn_msg_set_msg_id (self->request, msg_id) != 0) {
        bn_record_destroy (&self);
        return NULL;
    }
    if (split) {
        bn_merged_entry_t entry = split->entry;
        self->reply = s_entry_reply (split->part, split->spliced, &entry, uuid,
                                     self->request);
    }
    bn_msg_t *part =
        original->parts && !split ? zlistx_first (original->parts) : NULL;
    for (; part && !self->reply; part = zlistx_next (original->parts))
        if (bn_merged_shape (part) != BN_MERGED_NONE)
            self->reply = s_find_entry (part, uuid, eid, self->request);
    if (!self->reply && original->reply) {
        //  every reply is in and none is the engine's (its own record was
        //  culled, or the tree failed without it): there is none to wait for
        bn_record_destroy (&self);
        return NULL;
    }
    if (self->reply)
        self->received = original->received;
    self->bytes = s_bytes (self);
    return self;
}

void
bn_record_destroy (bn_record_t **self_p)
{
    assert (self_p);
    bn_record_t *self = *self_p;
    if (!self)
        return;
    bn_copier_job_release (&self->copying);
    bn_msg_destroy (&self->request);
    bn_msg_destroy (&self->reply);
    s_msg_list_destroy (&self->iopub);
    s_msg_list_destroy (&self->parts);
    zhashx_destroy (&self->split);
    json_decref (self->io);
    json_decref (self->json);
    free (self->msg_id);
    free (self->engine_uuid);
    free (self->resubmitted);
    free (self);
    *self_p = NULL;
}

void
bn_record_release (bn_record_t **self_p)
{
    assert (self_p);
    bn_record_t *self = *self_p;
    if (self && self->temporary)
        bn_record_destroy (&self);
    *self_p = NULL;
}

void
bn_record_keep (bn_record_t *self)
{
    assert (self);
    self->temporary = false;
}

const char *
bn_record_msg_id (bn_record_t *self)
{
    assert (self);
    return self->msg_id;
}

//  A copy of msg to keep: buffers of S_OWN_MIN ... S_OWN_MAX bytes in
//  memory of the record's own, the other frames shared. A shared buffer
//  is the one libzmq received into; while a record keeps it, the next
//  message of that size needs fresh pages, which libzmq's I/O thread
//  faults in as it receives, ahead of the relay: the cost of keeping
//  the bytes would fall on the path of every later request. Copied by
//  copier, it falls on a thread of its own; without one, on the thread
//  that keeps the records, after the relay's send, where a reply that
//  comes back meanwhile waits for it. Larger buffers stay shared, so
//  that no process holds a second copy of a payload of gigabytes.
static bn_msg_t *
s_keep (bn_record_t *self, bn_msg_t *msg, bn_copier_t *copier)
{
    bn_msg_t *copy = bn_msg_dup (msg);
    if (!copy)
        return NULL;
    if (copier)
        self->copying = bn_copier_keep (copier, copy, S_OWN_MIN, S_OWN_MAX);
    if (!self->copying)
        bn_copier_copy (copy, S_OWN_MIN, S_OWN_MAX);
    return copy;
}

//  A copy of msg without idents in *field: sharing every frame, or with
//  its large buffers copied (s_keep, by copier unless NULL).
static void
s_store (bn_record_t *self, bn_msg_t **field, bn_msg_t *msg, bool shared,
         bn_copier_t *copier)
{
    if (field == &self->request)
        bn_copier_job_release (&self->copying);
    bn_msg_destroy (field);
    *field = !msg     ? NULL
             : shared ? bn_msg_dup (msg)
                      : s_keep (self, msg, copier);
    if (*field)
        bn_msg_clear_idents (*field);
    self->bytes = s_bytes (self);
    s_changed (self);
}

static void
s_set_request (bn_record_t *self, const char *queue, bn_msg_t *request,
               const char *engine_uuid, bool kept, bn_copier_t *copier)
{
    assert (self);
    s_store (self, &self->request, request, kept, copier);
    self->queue = queue;
    s_set_string (&self->engine_uuid, engine_uuid);
}

void
bn_record_set_request (bn_record_t *self, const char *queue, bn_msg_t *request,
                       const char *engine_uuid, bn_copier_t *copier)
{
    s_set_request (self, queue, request, engine_uuid, false, copier);
}

void
bn_record_share_request (bn_record_t *self, const char *queue,
                         bn_msg_t *request, const char *engine_uuid)
{
    s_set_request (self, queue, request, engine_uuid, true, NULL);
}

void
bn_record_set_reply (bn_record_t *self, bn_msg_t *reply,
                     const char *engine_uuid)
{
    assert (self);
    s_store (self, &self->reply, reply, true, NULL);
    self->received = s_now ();
    s_set_string (&self->engine_uuid, engine_uuid);
}

//  True if engine uuid has answered its part of broadcast self: an entry
//  of a merged part, or a record of its own.
static bool
s_part_answered (bn_record_t *self, const char *uuid,
                 bn_record_answered_fn *answered, void *arg)
{
    char *msg_id = zsys_sprintf ("%s_%s", self->msg_id, uuid);
    bool done = msg_id && answered && answered (arg, msg_id);
    bn_record_t *part =
        msg_id && !done ? bn_record_new_engine (self, uuid, msg_id) : NULL;
    done = done || (part && bn_record_completed (part));
    bn_record_destroy (&part);
    zstr_free (&msg_id);
    return done;
}

int
bn_record_abandon (bn_record_t *self, bn_session_t *session, const char *why,
                   bn_record_answered_fn *answered, void *arg)
{
    assert (self);
    assert (session);
    assert (why);
    const char *type = self->request ? bn_msg_type (self->request) : NULL;
    char reply_type[128];
    if (!type || self->reply ||
        bn_wire_reply_type (type, reply_type, sizeof reply_type) != 0)
        return 0;
    bn_msg_t *reply = bn_msg_new_reply (session, self->request, reply_type);
    json_t *metadata = json_pack ("{s:s, s:b}", "status", BN_STATUS_ERROR,
                                  "dependencies_met", 1);
    json_t *content = bn_wire_errorf ("ControllerGone", NULL, "%s", why);
    json_t *request_md = bn_msg_metadata (self->request);
    json_t *targets = json_object_get (request_md, "targets");
    bool broadcast = self->queue &&
                     streq (self->queue, BN_MONITOR_QUEUE_BROADCAST) &&
                     json_array_size (targets) > 0;
    bn_merged_writer_t *writer = broadcast ? bn_merged_writer_new () : NULL;
    int rc = reply && metadata && content && (!broadcast || writer) ? 0 : -1;
    if (rc == 0 && self->engine_uuid)
        json_object_set_new (metadata, "engine",
                             json_string (self->engine_uuid));
    if (rc == 0 && broadcast) {
        bn_msg_clear_idents (reply);
        bn_wire_mark_broadcast (
            metadata, self->msg_id,
            json_is_true (json_object_get (request_md, BN_MD_IS_COALESCING)));
        size_t index;
        json_t *target;
        json_array_foreach (targets, index, target)
        {
            const char *uuid = json_string_value (json_array_get (target, 0));
            json_t *id = json_array_get (target, 1);
            int eid = json_is_integer (id) ? (int)json_integer_value (id) : -1;
            if (!uuid || s_part_answered (self, uuid, answered, arg))
                continue;
            json_t *error = bn_wire_errorf (
                "ControllerGone", NULL, "engine %d (%s): %s", eid, uuid, why);
            char *entry = error ? bn_merged_entry (BN_STATUS_ERROR, NULL, NULL,
                                                   1, error, NULL, NULL)
                                : NULL;
            json_decref (error);
            if (!entry || bn_msg_add_buffer (reply, "\x80\x04N.", 4) != 0) {
                free (entry);
                rc = -1;
                break;
            }
            bn_merged_writer_add (writer, uuid, eid, entry, strlen (entry));
            free (entry);
        }
        if (rc == 0)
            rc = bn_merged_writer_finish (writer, metadata, reply);
    } else if (rc == 0) {
        bn_msg_clear_idents (reply);
        bn_msg_set_metadata (reply, json_incref (metadata));
    }
    if (rc == 0) {
        bn_msg_set_content (reply, content);
        content = NULL;
        if (broadcast)
            rc = bn_record_add_part (self, reply, true);
        bn_record_set_reply (self, reply, NULL);
    }
    bn_merged_writer_destroy (&writer);
    json_decref (metadata);
    json_decref (content);
    bn_msg_destroy (&reply);
    return rc;
}

void
bn_record_set_engine (bn_record_t *self, const char *engine_uuid)
{
    assert (self);
    s_set_string (&self->engine_uuid, engine_uuid);
    s_changed (self);
}

void
bn_record_set_resubmitted (bn_record_t *self, const char *new_id)
{
    assert (self);
    s_set_string (&self->resubmitted, new_id);
    s_changed (self);
}

int
bn_record_add_part (bn_record_t *self, bn_msg_t *reply, bool merged)
{
    assert (self);
    assert (reply);
    if (!self->parts && !(self->parts = zlistx_new ()))
        return -1;
    bn_msg_t *copy = bn_msg_dup (reply);
    if (!copy || !zlistx_add_end (self->parts, copy)) {
        bn_msg_destroy (&copy);
        return -1;
    }
    bn_msg_clear_idents (copy);
    zhashx_destroy (&self->split);
    if (merged)
        self->parts_bytes += s_msg_bytes (copy);
    self->bytes = s_bytes (self);
    s_changed (self);
    return 0;
}

int
bn_record_add_iopub (bn_record_t *self, bn_msg_t *msg)
{
    assert (self);
    if (!self->iopub && !(self->iopub = zlistx_new ()))
        return -1;
    bn_msg_t *copy = bn_msg_dup (msg);
    if (!copy || !zlistx_add_end (self->iopub, copy)) {
        bn_msg_destroy (&copy);
        return -1;
    }
    bn_msg_clear_idents (copy);
    s_changed (self);
    return 0;
}

uint64_t
bn_record_bytes (bn_record_t *self)
{
    assert (self);
    return self->bytes;
}

//  Date of a message's header as microseconds, or 0.
static int64_t
s_header_date (bn_msg_t *msg)
{
    if (!msg)
        return 0;
    size_t len;
    const void *data = bn_msg_part_data (msg, BN_PART_HEADER, &len);
    char date[64];
    int64_t usec;
    if (bn_jscan_string (data, len, "date", date, sizeof date) < 0 ||
        bn_query_parse_date (date, &usec) != 0)
        return 0;
    return usec;
}

int64_t
bn_record_submitted (bn_record_t *self)
{
    assert (self);
    return s_header_date (self->request);
}

bool
bn_record_dirty (bn_record_t *self)
{
    assert (self);
    return self->dirty;
}

void
bn_record_set_written (bn_record_t *self)
{
    assert (self);
    self->dirty = false;
}

//  A banyan engine asked for output in its reply (bn_output) publishes
//  none: its reply's bn_stdout and bn_stderr are the record's output.
static void
s_fold_reply_output (bn_record_t *self, json_t *io)
{
    json_t *content = self->reply ? bn_msg_content (self->reply) : NULL;
    static const char *keys[2][2] = {{"bn_stdout", "stdout"},
                                     {"bn_stderr", "stderr"}};
    for (int i = 0; content && i < 2; i++) {
        json_t *text = json_object_get (content, keys[i][0]);
        if (!json_is_string (text) ||
            json_string_length (json_object_get (io, keys[i][1])) != 0)
            continue;
        //  the engine's bytes (bn_rawtext), as text every reader takes;
        //  text without escapes or NULs (the common case) is that already
        size_t size = json_string_length (text), len;
        if (!memchr (json_string_value (text), 0xF4, size) &&
            !memchr (json_string_value (text), 0, size)) {
            json_object_set (io, keys[i][1], text);
            continue;
        }
        char *bytes = malloc (size + 1);
        if (bytes)
            memcpy (bytes, json_string_value (text), size);
        char *shown = bytes ? bn_rawtext_replace (
                                  bytes, bn_rawtext_decode (bytes, size), &len)
                            : NULL;
        if (shown)
            json_object_set_new (io, keys[i][1], json_stringn (shown, len));
        //  (bytes the text could not hold: banyan's readers get them)
        if (bytes && shown &&
            (len != size || memcmp (shown, json_string_value (text), len)))
            json_object_set (io, keys[i][0], text);
        free (bytes);
        free (shown);
    }
}

//  Append text (a JSON string) to *stream; left as it is if out of memory.
static void
s_join (json_t **stream, json_t *text)
{
    if (!*stream)
        return;
    size_t old = json_string_length (*stream);
    size_t add = json_string_length (text);
    char *joined = malloc (old + add + 1);
    if (!joined)
        return;
    memcpy (joined, json_string_value (*stream), old);
    memcpy (joined + old, json_string_value (text), add + 1);
    json_decref (*stream);
    *stream = json_stringn_nocheck (joined, old + add);
    free (joined);
}

//  The folded iopub output: execute_input, execute_result, error, stdout,
//  stderr (and display_data when some was published), and bn_stdout and
//  bn_stderr, the exact bytes as bn_rawtext encodes them, when they are
//  not what stdout and stderr say.
static json_t *
s_fold_io (bn_record_t *self)
{
    if (self->io)
        return json_deep_copy (self->io);
    json_t *io =
        json_pack ("{s:n, s:n, s:n, s:s, s:s}", "execute_input",
                   "execute_result", "error", "stdout", "", "stderr", "");
    if (!io || !self->iopub) {
        if (io)
            s_fold_reply_output (self, io);
        return io;
    }
    //  the text every reader takes, and the exact bytes (bn_rawtext) that
    //  banyan's engines add when it differs
    json_t *streams[2] = {json_string (""), json_string ("")};
    json_t *exact[2] = {json_string (""), json_string ("")};
    bool differs[2] = {false, false};
    bn_msg_t *msg = zlistx_first (self->iopub);
    while (msg) {
        const char *type = bn_msg_type (msg);
        json_t *content = bn_msg_content (msg);
        if (!type || !content) {
            msg = zlistx_next (self->iopub);
            continue;
        }
        if (streq (type, "stream")) {
            const char *name =
                json_string_value (json_object_get (content, "name"));
            json_t *text = json_object_get (content, "text");
            json_t *bytes = json_object_get (content, BN_STREAM_BYTES);
            int which = name && streq (name, "stderr")   ? 1
                        : name && streq (name, "stdout") ? 0
                                                         : -1;
            if (which >= 0 && json_is_string (text)) {
                s_join (&streams[which], text);
                s_join (&exact[which], json_is_string (bytes) ? bytes : text);
                differs[which] |= json_is_string (bytes);
            }
        } else if (streq (type, "execute_input"))
            json_object_set (io, "execute_input",
                             json_object_get (content, "code")
                                 ? json_object_get (content, "code")
                                 : json_null ());
        else
            json_object_set (io, type, content);
        msg = zlistx_next (self->iopub);
    }
    static const char *keys[2][2] = {{"stdout", "bn_stdout"},
                                     {"stderr", "bn_stderr"}};
    for (int i = 0; i < 2; i++) {
        if (streams[i])
            json_object_set_new (io, keys[i][0], streams[i]);
        if (exact[i] && differs[i])
            json_object_set_new (io, keys[i][1], exact[i]);
        else
            json_decref (exact[i]);
    }
    s_fold_reply_output (self, io);
    return io;
}

static json_t *
s_date_value (int64_t usec)
{
    if (!usec)
        return json_null ();
    char buf[32];
    bn_query_format_date (usec, buf);
    return json_string (buf);
}

static json_t *
s_part_or_null (bn_msg_t *msg, bn_part_t part)
{
    json_t *value = msg ? bn_msg_part (msg, part) : NULL;
    return value ? json_incref (value) : json_null ();
}

static json_t *
s_string_or_null (const char *text)
{
    return text ? json_string (text) : json_null ();
}

//  The result content: a broadcast's is its first failing reply's (each
//  merged reply's content is its first failing engine's), else its last
//  reply's, as a merging node combines its children's.
static json_t *
s_result_content (bn_record_t *self)
{
    bn_msg_t *part = self->parts ? zlistx_first (self->parts) : NULL;
    for (; part && self->reply; part = zlistx_next (self->parts)) {
        size_t len;
        const void *data = bn_msg_part_data (part, BN_PART_CONTENT, &len);
        char status[16];
        if (bn_jscan_string (data, len, "status", status, sizeof status) >= 0 &&
            !streq (status, BN_STATUS_OK))
            return s_part_or_null (part, BN_PART_CONTENT);
    }
    return s_part_or_null (self->reply, BN_PART_CONTENT);
}

//  banyan's bn_function: what an apply_request calls ("echo",
//  "builtins.sum"), read from its first buffers; null for others.
static json_t *
s_function (bn_msg_t *request)
{
    const char *type = request ? bn_msg_type (request) : NULL;
    if (!type || !streq (type, BN_MSG_APPLY_REQUEST))
        return json_null ();
    bn_bytes_t bufs[4];
    size_t nbufs = bn_bytes_from_msg (request, bufs, 4);
    char *name = bn_apply_function (bufs, nbufs < 4 ? nbufs : 4);
    json_t *value = name ? json_string (name) : NULL;
    free (name);
    return value ? value : json_null ();
}

json_t *
bn_record_json (bn_record_t *self)
{
    assert (self);
    if (self->json)
        return self->json;
    s_settle (self);
    json_t *header = self->request ? bn_msg_header (self->request) : NULL;
    json_t *result_header = self->reply ? bn_msg_header (self->reply) : NULL;
    json_t *result_md = self->reply ? bn_msg_metadata (self->reply) : NULL;
    json_t *date = json_object_get (header, "date");
    json_t *session = json_object_get (header, "session");
    json_t *completed = json_object_get (result_header, "date");
    json_t *started = json_object_get (result_md, "started");
    json_t *json = json_object ();
    json_t *io = s_fold_io (self);
    if (!json || !io) {
        json_decref (json);
        json_decref (io);
        return NULL;
    }
    json_object_set_new (json, "msg_id", json_string (self->msg_id));
    json_object_set_new (json, "header",
                         s_part_or_null (self->request, BN_PART_HEADER));
    json_object_set_new (json, "metadata",
                         s_part_or_null (self->request, BN_PART_METADATA));
    json_object_set_new (json, "content",
                         s_part_or_null (self->request, BN_PART_CONTENT));
    json_object_set_new (json, "submitted",
                         json_is_string (date) ? json_incref (date)
                                               : json_null ());
    json_object_set_new (json, "client_uuid",
                         json_is_string (session) ? json_incref (session)
                                                  : json_null ());
    json_object_set_new (json, "engine_uuid",
                         s_string_or_null (self->engine_uuid));
    json_object_set_new (json, "started",
                         json_is_string (started) ? json_incref (started)
                                                  : json_null ());
    json_object_set_new (json, "completed",
                         json_is_string (completed) ? json_incref (completed)
                         : self->reply ? s_date_value (self->received)
                                       : json_null ());
    json_object_set_new (json, "resubmitted",
                         s_string_or_null (self->resubmitted));
    json_object_set_new (json, "received", s_date_value (self->received));
    json_object_set_new (json, "result_header",
                         s_part_or_null (self->reply, BN_PART_HEADER));
    json_object_set_new (json, "result_metadata",
                         s_part_or_null (self->reply, BN_PART_METADATA));
    json_object_set_new (json, "result_content", s_result_content (self));
    json_object_set_new (json, "queue", s_string_or_null (self->queue));
    json_object_set_new (json, "bn_function", s_function (self->request));
    json_object_update (json, io);
    json_decref (io);
    self->json = json;
    return json;
}

size_t
bn_record_nbuffers (bn_record_t *self, bool result)
{
    assert (self);
    bn_msg_t *msg = result ? self->reply : self->request;
    return msg ? bn_msg_nbuffers (msg) : 0;
}

zmq_msg_t *
bn_record_buffer (bn_record_t *self, bool result, size_t index)
{
    assert (self);
    if (!result)
        s_settle (self);
    bn_msg_t *msg = result ? self->reply : self->request;
    return msg ? bn_msg_buffer (msg, index) : NULL;
}

bn_msg_t *
bn_record_request (bn_record_t *self)
{
    assert (self);
    s_settle (self);
    return self->request;
}

bool
bn_record_completed (bn_record_t *self)
{
    assert (self);
    return self->reply != NULL;
}

//  The parts a broadcast's row keeps beside its reply, in a new array
//  (*count of them; NULL if none): every merged part, whose entries are
//  the engines' parts a query splits, but the last when it is the reply
//  (stored already); of the engines' own replies, each kept whole in its
//  own record, only the first failure, without its buffers, for the
//  broadcast's result content. Nothing here is parsed: merged parts are
//  told by their keys' names, and a reply's status by a scan.
static bn_msg_t **
s_stored_parts (bn_record_t *self, size_t *count)
{
    *count = 0;
    size_t size = self->parts ? zlistx_size (self->parts) : 0;
    bn_msg_t **parts = size ? calloc (size, sizeof *parts) : NULL;
    if (!parts)
        return NULL;
    bn_msg_t *last = zlistx_last (self->parts);
    const char *reply_id = self->reply ? bn_msg_id (self->reply) : NULL;
    const char *last_id = bn_msg_id (last);
    bool skip_last = reply_id && last_id && streq (reply_id, last_id);
    bool failure = false;
    for (bn_msg_t *part = zlistx_first (self->parts); part;
         part = zlistx_next (self->parts)) {
        if (part == last && skip_last)
            break;
        if (bn_merged_shape (part) != BN_MERGED_NONE) {
            parts[(*count)++] = bn_msg_dup (part);
            continue;
        }
        size_t len;
        const void *data = bn_msg_part_data (part, BN_PART_CONTENT, &len);
        char status[16];
        if (failure ||
            bn_jscan_string (data, len, "status", status, sizeof status) < 0 ||
            streq (status, BN_STATUS_OK))
            continue;
        failure = true;
        bn_msg_t *copy = bn_msg_dup (part);
        if (copy)
            bn_msg_clear_buffers (copy);
        parts[(*count)++] = copy;
    }
    //  (a copy that failed for lack of memory is left out)
    size_t kept = 0;
    for (size_t i = 0; i < *count; i++)
        if (parts[i])
            parts[kept++] = parts[i];
    *count = kept;
    return parts;
}

int
bn_record_write (bn_record_t *self, bn_records_sqlite_t *db)
{
    assert (self);
    assert (db);
    s_settle (self);
    json_t *io = s_fold_io (self);
    char *io_text = io ? json_dumps (io, JSON_COMPACT) : NULL;
    json_decref (io);
    size_t nparts = 0;
    bn_msg_t **parts = s_stored_parts (self, &nparts);
    bn_records_row_t row = {
        .msg_id = self->msg_id,
        .queue = self->queue,
        .engine_uuid = self->engine_uuid,
        .resubmitted = self->resubmitted,
        .submitted = s_header_date (self->request),
        .received = self->received,
        .request = self->request,
        .reply = self->reply,
        .io = io_text,
        .has_parts = self->parts != NULL,
        .parts = parts,
        .nparts = nparts,
    };
    int rc = bn_records_sqlite_put (db, &row);
    for (size_t i = 0; i < nparts; i++)
        bn_msg_destroy (&parts[i]);
    free (parts);
    free (io_text);
    return rc;
}

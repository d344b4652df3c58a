/*  bn_records: task records sharing the relays' frames, the pending and
    completed state per engine, DictDB-style limits, SQLite write-through.

    On the message path a request costs one bn_msg_dup (frames shared by
    reference count), one record and one tracking entry; a reply or an
    iopub output one bn_msg_dup and a hash lookup by the msg_id the header
    scanner read. Everything else (folding iopub into stdout/stderr, the
    TaskRecord dict, dates) is built when a query asks.  */
#define _GNU_SOURCE //  memmem
#include "bn_records.h"

#include <assert.h>
#include <limits.h>
#include <string.h>
#include <sys/time.h>

#include "bn_idset.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_query.h"
#include "bn_records_sqlite.h"

#define S_DONE_KEEP 1024 //  completed msg_ids kept per engine
#define S_ID_MAX 256     //  longest msg_id or uuid read by the scanner
#define S_CULL_FRACTION 0.1

//  The queue names a track or record points to (compared by address).
static const char s_mux[] = BN_MONITOR_QUEUE_MUX;
static const char s_task[] = BN_MONITOR_QUEUE_TASK;
static const char s_broadcast[] = BN_MONITOR_QUEUE_BROADCAST;

typedef struct {
    char *uuid;
    size_t nqueue;     //  Pending mux requests
    size_t ntasks;     //  Assigned, unfinished tasks
    size_t ncompleted; //  Answered requests
    char **done;       //  Ring of the last completed msg_ids
    size_t done_next;
} s_engine_t;

typedef struct {
    const char *queue;  //  BN_MONITOR_QUEUE_* (static)
    s_engine_t *engine; //  NULL: a task not assigned yet
    void *handle;       //  Position in pending_order
    int remaining;      //  Broadcast: replies still due (-1: unknown)
    char msg_id[];
} s_track_t;

struct _bn_record_t {
    char *msg_id;
    const char *queue; //  BN_MONITOR_QUEUE_* or NULL
    char *engine_uuid;
    char *resubmitted;
    bn_msg_t *request; //  No idents; buffers shared
    bn_msg_t *reply;   //  No idents; buffers shared
    int64_t received;  //  Microseconds since the epoch, 0 if no reply
    zlistx_t *iopub;   //  bn_msg_t *, in arrival order, or NULL
    json_t *io;        //  Folded iopub of a record read from SQLite
    json_t *json;      //  Cached TaskRecord, NULL when stale
    uint64_t bytes;    //  Buffer bytes of request and reply
    bool dirty;        //  Changed since written to SQLite
    bool temporary;    //  Read from SQLite: freed on release
    bn_records_t *owner;
    void *handle; //  Position in the order list
};

typedef struct {
    uint64_t requests;    //  Requests recorded
    uint64_t replies;     //  Replies recorded
    uint64_t iopub;       //  iopub outputs recorded
    uint64_t unknown;     //  Replies to requests we never saw
    uint64_t duplicates;  //  Requests reusing a pending msg_id
    uint64_t culled;      //  Records dropped for the limits
    uint64_t late_iopub;  //  Output for requests without a record
    uint64_t db_writes;   //  Rows written to SQLite
    uint64_t db_failures; //  SQLite errors
    uint64_t no_memory;   //  Records not kept for lack of memory
} s_stats_t;

struct _bn_records_t {
    bn_records_kind_t kind;
    size_t record_limit;
    uint64_t size_limit;
    zhashx_t *records; //  msg_id -> bn_record_t (key owned by the record)
    zlistx_t *order;   //  bn_record_t *, arrival order (owner)
    uint64_t bytes;
    zhashx_t *pending;       //  msg_id -> s_track_t (key owned by it)
    zlistx_t *pending_order; //  s_track_t *, arrival order (owner)
    zhashx_t *engines;       //  uuid -> s_engine_t
    size_t unassigned;
    bool bytes_stuck; //  Over size_limit with nothing to cull
    bn_records_sqlite_t *db;
    char *db_path;
    bn_monitor_t monitor;
    s_stats_t stats;
};

static int64_t
s_now (void)
{
    struct timeval tv;
    gettimeofday (&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

//  --------------------------------------------------------------------------
//  Records

static void
s_record_free (bn_record_t **self_p)
{
    bn_record_t *self = *self_p;
    if (!self)
        return;
    bn_msg_destroy (&self->request);
    bn_msg_destroy (&self->reply);
    if (self->iopub) {
        bn_msg_t *msg = zlistx_first (self->iopub);
        while (msg) {
            bn_msg_destroy (&msg);
            msg = zlistx_next (self->iopub);
        }
        zlistx_destroy (&self->iopub);
    }
    json_decref (self->io);
    json_decref (self->json);
    free (self->msg_id);
    free (self->engine_uuid);
    free (self->resubmitted);
    free (self);
    *self_p = NULL;
}

static void
s_record_destructor (void **item)
{
    s_record_free ((bn_record_t **)item);
}

static uint64_t
s_msg_bytes (bn_msg_t *msg)
{
    uint64_t bytes = 0;
    for (size_t i = 0; msg && i < bn_msg_nbuffers (msg); i++)
        bytes += zmq_msg_size (bn_msg_buffer (msg, i));
    return bytes;
}

//  Mark a record changed.
static void
s_changed (bn_record_t *record)
{
    json_decref (record->json);
    record->json = NULL;
    record->dirty = true;
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

//  --------------------------------------------------------------------------
//  Engines and pending requests

static void
s_engine_destroy (void **item)
{
    s_engine_t *self = (s_engine_t *)*item;
    if (!self)
        return;
    if (self->done) {
        for (size_t i = 0; i < S_DONE_KEEP; i++)
            free (self->done[i]);
        free (self->done);
    }
    free (self->uuid);
    free (self);
    *item = NULL;
}

static s_engine_t *
s_engine (bn_records_t *self, const char *uuid)
{
    if (!uuid)
        return NULL;
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (engine)
        return engine;
    engine = calloc (1, sizeof *engine);
    if (!engine)
        return NULL;
    engine->uuid = strdup (uuid);
    if (!engine->uuid) {
        free (engine);
        return NULL;
    }
    zhashx_insert (self->engines, uuid, engine);
    return engine;
}

static void
s_track_destructor (void **item)
{
    free (*item);
    *item = NULL;
}

//  Count msg_id as answered by engine.
static void
s_engine_done (s_engine_t *engine, const char *msg_id)
{
    engine->ncompleted++;
    if (!engine->done)
        engine->done = calloc (S_DONE_KEEP, sizeof (char *));
    if (!engine->done)
        return;
    free (engine->done[engine->done_next]);
    engine->done[engine->done_next] = strdup (msg_id);
    engine->done_next = (engine->done_next + 1) % S_DONE_KEEP;
}

//  Forget a pending request.
static void
s_untrack (bn_records_t *self, s_track_t *track)
{
    if (track->engine) {
        if (streq (track->queue, BN_MONITOR_QUEUE_MUX)) {
            if (track->engine->nqueue)
                track->engine->nqueue--;
        } else if (streq (track->queue, BN_MONITOR_QUEUE_TASK)) {
            if (track->engine->ntasks)
                track->engine->ntasks--;
        }
    } else if (streq (track->queue, BN_MONITOR_QUEUE_TASK) && self->unassigned)
        self->unassigned--;
    zhashx_delete (self->pending, track->msg_id);
    zlistx_delete (self->pending_order, track->handle);
}

//  --------------------------------------------------------------------------
//  Construction

static void
s_on_request (void *arg, const char *queue, bn_msg_t *request,
              const char *engine_uuid)
{
    bn_records_request ((bn_records_t *)arg, queue, request, engine_uuid);
}

static void
s_on_assigned (void *arg, const char *msg_id, const char *engine_uuid)
{
    bn_records_assigned ((bn_records_t *)arg, msg_id, engine_uuid);
}

static void
s_on_reply (void *arg, const char *queue, bn_msg_t *reply,
            const char *engine_uuid)
{
    bn_records_reply ((bn_records_t *)arg, queue, reply, engine_uuid);
}

static void
s_on_iopub (void *arg, bn_msg_t *msg)
{
    bn_records_iopub ((bn_records_t *)arg, msg);
}

bn_records_t *
bn_records_new (bn_records_kind_t kind, size_t record_limit,
                uint64_t size_limit)
{
    bn_records_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->kind = kind;
    self->record_limit = record_limit ? record_limit : BN_RECORDS_RECORD_LIMIT;
    self->size_limit = size_limit ? size_limit : BN_RECORDS_SIZE_LIMIT;
    self->records = zhashx_new ();
    self->order = zlistx_new ();
    self->pending = zhashx_new ();
    self->pending_order = zlistx_new ();
    self->engines = zhashx_new ();
    if (!self->records || !self->order || !self->pending ||
        !self->pending_order || !self->engines) {
        bn_records_destroy (&self);
        return NULL;
    }
    //  entries own their keys
    zhashx_set_key_duplicator (self->records, NULL);
    zhashx_set_key_destructor (self->records, NULL);
    zhashx_set_key_duplicator (self->pending, NULL);
    zhashx_set_key_destructor (self->pending, NULL);
    zlistx_set_destructor (self->order, s_record_destructor);
    zlistx_set_destructor (self->pending_order, s_track_destructor);
    zhashx_set_destructor (self->engines, s_engine_destroy);
    self->monitor.request = s_on_request;
    self->monitor.assigned = s_on_assigned;
    self->monitor.reply = s_on_reply;
    self->monitor.iopub = s_on_iopub;
    self->monitor.arg = self;
    return self;
}

void
bn_records_destroy (bn_records_t **self_p)
{
    assert (self_p);
    bn_records_t *self = *self_p;
    if (!self)
        return;
    if (self->db)
        bn_records_flush (self);
    bn_records_sqlite_destroy (&self->db);
    zhashx_destroy (&self->records);
    zlistx_destroy (&self->order);
    zhashx_destroy (&self->pending);
    zlistx_destroy (&self->pending_order);
    zhashx_destroy (&self->engines);
    free (self->db_path);
    free (self);
    *self_p = NULL;
}

const bn_monitor_t *
bn_records_monitor (bn_records_t *self)
{
    assert (self);
    return &self->monitor;
}

bool
bn_records_storing (bn_records_t *self)
{
    assert (self);
    return self->kind != BN_RECORDS_NONE;
}

bool
bn_records_sqlite_ok (bn_records_t *self)
{
    assert (self);
    return self->db != NULL;
}

//  --------------------------------------------------------------------------
//  Limits

//  Drop a record from memory (it stays in SQLite if written there).
static void
s_forget (bn_records_t *self, bn_record_t *record)
{
    self->bytes -= record->bytes;
    zhashx_delete (self->records, record->msg_id);
    zlistx_delete (self->order, record->handle);
}

//  Drop the oldest records that are not pending until count are gone or
//  the bytes are under limit (0: no byte goal).
//  Drop the oldest records that are not pending (nor, with SQLite, still
//  to be written: the timer's next flush frees them) until count are gone
//  or the bytes are under limit (0: no byte goal). Returns the count.
static size_t
s_cull (bn_records_t *self, size_t count, uint64_t under)
{
    bn_record_t *record = zlistx_first (self->order);
    size_t culled = 0;
    while (record && (count ? culled < count : self->bytes > under)) {
        bn_record_t *next = zlistx_next (self->order);
        if (!zhashx_lookup (self->pending, record->msg_id) &&
            !(self->db && record->dirty)) {
            s_forget (self, record);
            culled++;
        }
        record = next;
    }
    self->stats.culled += culled;
    bn_log_debug ("records: culled the oldest %zu records (%zu left, %llu "
                  "buffer bytes)",
                  culled, zlistx_size (self->order),
                  (unsigned long long)self->bytes);
    return culled;
}

//  Apply the limits. Pending records are never culled, so only the others
//  count against record_limit, and a byte goal that culling cannot reach
//  is not tried again until a request completes.
static void
s_maybe_cull (bn_records_t *self)
{
    size_t pending = zhashx_size (self->pending);
    size_t size = zlistx_size (self->order);
    if (size > pending && size - pending > self->record_limit)
        s_cull (self, (size_t)(S_CULL_FRACTION * self->record_limit) + 1, 0);
    if (self->bytes > self->size_limit && !self->bytes_stuck &&
        s_cull (self, 0,
                (uint64_t)((double)self->size_limit * (1 - S_CULL_FRACTION))) ==
            0)
        self->bytes_stuck = true;
}

//  A new record for msg_id in memory, or NULL.
static bn_record_t *
s_record_add (bn_records_t *self, const char *msg_id)
{
    bn_record_t *record = calloc (1, sizeof *record);
    if (!record)
        return NULL;
    record->msg_id = strdup (msg_id);
    record->owner = self;
    record->dirty = true;
    record->handle =
        record->msg_id ? zlistx_add_end (self->order, record) : NULL;
    if (!record->handle) {
        s_record_free (&record);
        self->stats.no_memory++;
        return NULL;
    }
    zhashx_insert (self->records, record->msg_id, record);
    return record;
}

//  --------------------------------------------------------------------------
//  Monitor callbacks

void
bn_records_request (bn_records_t *self, const char *queue, bn_msg_t *request,
                    const char *engine_uuid)
{
    assert (self);
    assert (queue);
    assert (request);
    const char *msg_id = bn_msg_id (request);
    if (!msg_id)
        return;
    //  static queue names, so that tracks and records need no copy
    if (streq (queue, BN_MONITOR_QUEUE_MUX))
        queue = s_mux;
    else if (streq (queue, BN_MONITOR_QUEUE_TASK))
        queue = s_task;
    else if (streq (queue, BN_MONITOR_QUEUE_BROADCAST))
        queue = s_broadcast;
    else
        return;
    if (zhashx_lookup (self->pending, msg_id)) {
        self->stats.duplicates++;
        return;
    }
    size_t len = strlen (msg_id);
    s_track_t *track = malloc (sizeof *track + len + 1);
    if (!track) {
        self->stats.no_memory++;
        return;
    }
    memcpy (track->msg_id, msg_id, len + 1);
    track->queue = queue;
    track->engine = s_engine (self, engine_uuid);
    track->remaining = -1;
    track->handle = zlistx_add_end (self->pending_order, track);
    if (!track->handle) {
        free (track);
        self->stats.no_memory++;
        return;
    }
    zhashx_insert (self->pending, track->msg_id, track);
    if (track->engine && queue == s_mux)
        track->engine->nqueue++;
    else if (track->engine && queue == s_task)
        track->engine->ntasks++;
    else if (queue == s_task)
        self->unassigned++;
    self->stats.requests++;

    if (self->kind == BN_RECORDS_NONE)
        return;
    bn_record_t *record = zhashx_lookup (self->records, msg_id);
    if (!record)
        record = s_record_add (self, msg_id);
    if (!record)
        return;
    bn_msg_destroy (&record->request);
    self->bytes -= record->bytes;
    record->request = bn_msg_dup (request);
    if (record->request)
        bn_msg_clear_idents (record->request);
    record->queue = queue;
    s_set_string (&record->engine_uuid, engine_uuid);
    record->bytes = s_msg_bytes (record->request) + s_msg_bytes (record->reply);
    self->bytes += record->bytes;
    s_changed (record);
    s_maybe_cull (self);
}

void
bn_records_assigned (bn_records_t *self, const char *msg_id,
                     const char *engine_uuid)
{
    assert (self);
    if (!msg_id || !engine_uuid)
        return;
    s_track_t *track = zhashx_lookup (self->pending, msg_id);
    if (track && !track->engine) {
        track->engine = s_engine (self, engine_uuid);
        if (track->engine && track->queue == s_task) {
            track->engine->ntasks++;
            if (self->unassigned)
                self->unassigned--;
        }
    }
    bn_record_t *record = zhashx_lookup (self->records, msg_id);
    if (record) {
        s_set_string (&record->engine_uuid, engine_uuid);
        s_changed (record);
    }
}

//  Read a string key of a reply's metadata without a JSON tree.
static const char *
s_metadata_string (bn_msg_t *msg, const char *key, char *buf, size_t size)
{
    size_t len;
    const void *data = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    return bn_jscan_string (data, len, key, buf, size) >= 0 ? buf : NULL;
}

//  The size of an array of a message's metadata, counted without a JSON
//  tree (a merged reply's lists one entry per engine); -1 if not there.
static int
s_metadata_array_size (bn_msg_t *msg, const char *key)
{
    size_t len;
    const void *data = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    return bn_jscan_array_size (data, len, key);
}

//  The engines of an engine set's text (bn_groups, bn_reduced), or 0.
static size_t
s_idset_count (json_t *text)
{
    bn_idset_t *ids = json_is_string (text)
                          ? bn_idset_parse (json_string_value (text))
                          : NULL;
    size_t count = ids ? bn_idset_count (ids) : 0;
    bn_idset_destroy (&ids);
    return count;
}

//  The engines a merged broadcast reply answers for: its broadcast_targets
//  (counted without a JSON tree), or the engine sets of its bn_groups or
//  bn_reduced (a few entries, parsed); -1 if it is one engine's reply.
static int
s_merged_engines (bn_msg_t *reply)
{
    size_t len;
    const void *md = bn_msg_part_data (reply, BN_PART_METADATA, &len);
    if (memmem (md, len, "\"broadcast_targets\"", 19)) {
        int targets = s_metadata_array_size (reply, "broadcast_targets");
        return targets > 0 ? targets : 0;
    }
    bool grouped = memmem (md, len, "\"bn_groups\"", 11) != NULL;
    if (!grouped && !memmem (md, len, "\"bn_reduced\"", 12))
        return -1;
    json_t *metadata = bn_msg_metadata (reply);
    size_t count = 0;
    size_t index;
    json_t *entry;
    if (grouped) {
        json_array_foreach (json_object_get (metadata, "bn_groups"), index,
                            entry) count +=
            s_idset_count (json_object_get (entry, "engines"));
    } else {
        json_t *reduced = json_object_get (metadata, "bn_reduced");
        count = s_idset_count (json_object_get (reduced, "engines"));
        json_array_foreach (json_object_get (reduced, "failed"), index, entry)
            count += s_idset_count (json_object_get (entry, "engines"));
    }
    return count < INT_MAX ? (int)count : INT_MAX;
}

//  Store reply in record (taking a shared copy).
static void
s_record_reply (bn_records_t *self, bn_record_t *record, bn_msg_t *reply,
                const char *engine_uuid)
{
    bn_msg_destroy (&record->reply);
    self->bytes -= record->bytes;
    record->reply = bn_msg_dup (reply);
    if (record->reply)
        bn_msg_clear_idents (record->reply);
    record->received = s_now ();
    self->bytes_stuck = false;
    s_set_string (&record->engine_uuid, engine_uuid);
    record->bytes = s_msg_bytes (record->request) + s_msg_bytes (record->reply);
    self->bytes += record->bytes;
    s_changed (record);
}

//  A broadcast's per-engine reply ("<orig>_<uuid>"): a record of its own
//  sharing the original request, and one fewer reply due on the original.
static void
s_broadcast_reply (bn_records_t *self, const char *parent_id, bn_msg_t *reply,
                   const char *engine_uuid)
{
    char orig[S_ID_MAX];
    if (!s_metadata_string (reply, "original_msg_id", orig, sizeof orig))
        return;
    s_track_t *track = zhashx_lookup (self->pending, orig);
    bn_record_t *original = zhashx_lookup (self->records, orig);
    //  a merged reply carries broadcast_targets, bn_groups or bn_reduced
    int engines = s_merged_engines (reply);
    bool merged = engines >= 0;
    if (!merged && self->kind != BN_RECORDS_NONE && parent_id &&
        !streq (parent_id, orig)) {
        //  (its output may have made the record already)
        bn_record_t *record = zhashx_lookup (self->records, parent_id);
        if (!record)
            record = s_record_add (self, parent_id);
        if (record && !record->request) {
            record->queue = s_broadcast;
            if (original && original->request) {
                record->request = bn_msg_dup (original->request);
                if (record->request)
                    bn_msg_set_msg_id (record->request, parent_id);
            }
        }
        if (record)
            s_record_reply (self, record, reply, engine_uuid);
    }
    if (!track)
        return;
    if (track->remaining < 0) {
        track->remaining = 1;
        int targets = original && original->request
                          ? s_metadata_array_size (original->request, "targets")
                          : -1;
        if (targets > 0)
            track->remaining = targets;
    }
    //  a merged message answers for the engines it lists (a whole request,
    //  or one subtree's when upper levels forward), or ends a request
    //  that reached no engine
    size_t answered = 1;
    if (merged) {
        answered = (size_t)engines;
        if (answered == 0)
            answered = (size_t)track->remaining;
    }
    track->remaining -= (int)answered;
    if (track->remaining > 0)
        return;
    s_untrack (self, track);
    if (original) {
        s_record_reply (self, original, reply, NULL);
        if (!merged)
            s_set_string (&original->engine_uuid, NULL);
    }
}

void
bn_records_reply (bn_records_t *self, const char *queue, bn_msg_t *reply,
                  const char *engine_uuid)
{
    assert (self);
    assert (queue);
    assert (reply);
    const char *parent_id = bn_msg_parent_id (reply);
    s_track_t *track =
        parent_id ? zhashx_lookup (self->pending, parent_id) : NULL;
    char engine_buf[S_ID_MAX];
    if (!engine_uuid && !streq (queue, BN_MONITOR_QUEUE_MUX))
        engine_uuid =
            s_metadata_string (reply, "engine", engine_buf, sizeof engine_buf);
    if (!track && streq (queue, BN_MONITOR_QUEUE_BROADCAST)) {
        self->stats.replies++;
        s_broadcast_reply (self, parent_id, reply, engine_uuid);
        return;
    }
    bn_record_t *record =
        parent_id ? zhashx_lookup (self->records, parent_id) : NULL;
    if (!track && !record) {
        self->stats.unknown++;
        return;
    }
    self->stats.replies++;
    if (track) {
        s_engine_t *engine = track->engine;
        if (!engine && engine_uuid)
            engine = s_engine (self, engine_uuid);
        char status[16];
        bool aborted =
            track->queue == s_task &&
            s_metadata_string (reply, "status", status, sizeof status) &&
            streq (status, "aborted");
        if (engine && !aborted)
            s_engine_done (engine, parent_id);
        s_untrack (self, track);
    }
    if (record) {
        s_record_reply (self, record, reply, engine_uuid);
        s_maybe_cull (self);
    }
}

//  True for the iopub types a record keeps (WIRE.md 5.2).
static bool
s_iopub_kept (const char *type)
{
    return streq (type, "stream") || streq (type, "error") ||
           streq (type, "execute_input") || streq (type, "execute_result") ||
           streq (type, "display_data");
}

void
bn_records_iopub (bn_records_t *self, bn_msg_t *msg)
{
    assert (self);
    assert (msg);
    if (self->kind == BN_RECORDS_NONE)
        return;
    const char *type = bn_msg_type (msg);
    if (!type || !s_iopub_kept (type))
        return;
    const char *parent_id = bn_msg_parent_id (msg);
    if (!parent_id)
        return;
    bn_record_t *record = zhashx_lookup (self->records, parent_id);
    if (!record) {
        //  as 7.1.0 does for output that comes before its request; ours
        //  comes after, so this is output for a record already culled or
        //  for a per-engine broadcast id
        self->stats.late_iopub++;
        record = s_record_add (self, parent_id);
        if (!record)
            return;
    }
    if (!record->iopub && !(record->iopub = zlistx_new ())) {
        self->stats.no_memory++;
        return;
    }
    bn_msg_t *copy = bn_msg_dup (msg);
    if (!copy || !zlistx_add_end (record->iopub, copy)) {
        bn_msg_destroy (&copy);
        self->stats.no_memory++;
        return;
    }
    bn_msg_clear_idents (copy);
    self->stats.iopub++;
    s_changed (record);
}

//  --------------------------------------------------------------------------
//  Pending state

bool
bn_records_pending (bn_records_t *self, const char *msg_id)
{
    assert (self);
    return msg_id && zhashx_lookup (self->pending, msg_id) != NULL;
}

size_t
bn_records_queue_count (bn_records_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    return engine ? engine->nqueue : 0;
}

size_t
bn_records_tasks_count (bn_records_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    return engine ? engine->ntasks : 0;
}

size_t
bn_records_completed_count (bn_records_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    return engine ? engine->ncompleted : 0;
}

size_t
bn_records_unassigned_count (bn_records_t *self)
{
    assert (self);
    return self->unassigned;
}

//  Pending msg_ids of queue on engine (NULL engine: unassigned).
static json_t *
s_pending_ids (bn_records_t *self, const char *queue, const char *uuid)
{
    json_t *ids = json_array ();
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    if (!ids || (uuid && !engine))
        return ids;
    s_track_t *track = zlistx_first (self->pending_order);
    while (track) {
        if (track->engine == engine && streq (track->queue, queue))
            json_array_append_new (ids, json_string (track->msg_id));
        track = zlistx_next (self->pending_order);
    }
    return ids;
}

json_t *
bn_records_queue_ids (bn_records_t *self, const char *uuid)
{
    assert (self);
    return s_pending_ids (self, BN_MONITOR_QUEUE_MUX, uuid ? uuid : "");
}

json_t *
bn_records_tasks_ids (bn_records_t *self, const char *uuid)
{
    assert (self);
    return s_pending_ids (self, BN_MONITOR_QUEUE_TASK, uuid ? uuid : "");
}

json_t *
bn_records_unassigned_ids (bn_records_t *self)
{
    assert (self);
    return s_pending_ids (self, BN_MONITOR_QUEUE_TASK, NULL);
}

json_t *
bn_records_completed_ids (bn_records_t *self, const char *uuid)
{
    assert (self);
    json_t *ids = json_array ();
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    if (!ids || !engine || !engine->done)
        return ids;
    for (size_t i = 0; i < S_DONE_KEEP; i++) {
        size_t slot = (engine->done_next + i) % S_DONE_KEEP;
        if (engine->done[slot])
            json_array_append_new (ids, json_string (engine->done[slot]));
    }
    return ids;
}

//  --------------------------------------------------------------------------
//  Record views

//  A banyan engine asked for output in its reply (bn_output) publishes
//  none: its reply's bn_stdout and bn_stderr are the record's output.
static void
s_fold_reply_output (bn_record_t *record, json_t *io)
{
    json_t *content = record->reply ? bn_msg_content (record->reply) : NULL;
    static const char *keys[2][2] = {{"bn_stdout", "stdout"},
                                     {"bn_stderr", "stderr"}};
    for (int i = 0; content && i < 2; i++) {
        json_t *text = json_object_get (content, keys[i][0]);
        if (json_is_string (text) &&
            json_string_length (json_object_get (io, keys[i][1])) == 0)
            json_object_set (io, keys[i][1], text);
    }
}

//  The folded iopub output: execute_input, execute_result, error, stdout,
//  stderr (and display_data when some was published).
static json_t *
s_fold_io (bn_record_t *record)
{
    if (record->io)
        return json_deep_copy (record->io);
    json_t *io =
        json_pack ("{s:n, s:n, s:n, s:s, s:s}", "execute_input",
                   "execute_result", "error", "stdout", "", "stderr", "");
    if (!io || !record->iopub) {
        if (io)
            s_fold_reply_output (record, io);
        return io;
    }
    json_t *streams[2] = {json_string (""), json_string ("")};
    bn_msg_t *msg = zlistx_first (record->iopub);
    while (msg) {
        const char *type = bn_msg_type (msg);
        json_t *content = bn_msg_content (msg);
        if (!type || !content) {
            msg = zlistx_next (record->iopub);
            continue;
        }
        if (streq (type, "stream")) {
            const char *name =
                json_string_value (json_object_get (content, "name"));
            const char *text =
                json_string_value (json_object_get (content, "text"));
            int which = name && streq (name, "stderr")   ? 1
                        : name && streq (name, "stdout") ? 0
                                                         : -1;
            if (which >= 0 && text && streams[which]) {
                size_t old = json_string_length (streams[which]);
                size_t add = strlen (text);
                char *joined = malloc (old + add + 1);
                if (joined) {
                    memcpy (joined, json_string_value (streams[which]), old);
                    memcpy (joined + old, text, add + 1);
                    json_decref (streams[which]);
                    streams[which] = json_stringn_nocheck (joined, old + add);
                    free (joined);
                }
            }
        } else if (streq (type, "execute_input"))
            json_object_set (io, "execute_input",
                             json_object_get (content, "code")
                                 ? json_object_get (content, "code")
                                 : json_null ());
        else
            json_object_set (io, type, content);
        msg = zlistx_next (record->iopub);
    }
    if (streams[0])
        json_object_set_new (io, "stdout", streams[0]);
    if (streams[1])
        json_object_set_new (io, "stderr", streams[1]);
    s_fold_reply_output (record, io);
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

json_t *
bn_record_json (bn_record_t *record)
{
    assert (record);
    if (record->json)
        return record->json;
    json_t *header = record->request ? bn_msg_header (record->request) : NULL;
    json_t *result_header =
        record->reply ? bn_msg_header (record->reply) : NULL;
    json_t *result_md = record->reply ? bn_msg_metadata (record->reply) : NULL;
    json_t *date = json_object_get (header, "date");
    json_t *session = json_object_get (header, "session");
    json_t *completed = json_object_get (result_header, "date");
    json_t *started = json_object_get (result_md, "started");
    json_t *json = json_object ();
    json_t *io = s_fold_io (record);
    if (!json || !io) {
        json_decref (json);
        json_decref (io);
        return NULL;
    }
    json_object_set_new (json, "msg_id", json_string (record->msg_id));
    json_object_set_new (json, "header",
                         s_part_or_null (record->request, BN_PART_HEADER));
    json_object_set_new (json, "metadata",
                         s_part_or_null (record->request, BN_PART_METADATA));
    json_object_set_new (json, "content",
                         s_part_or_null (record->request, BN_PART_CONTENT));
    json_object_set_new (json, "submitted",
                         json_is_string (date) ? json_incref (date)
                                               : json_null ());
    json_object_set_new (json, "client_uuid",
                         json_is_string (session) ? json_incref (session)
                                                  : json_null ());
    json_object_set_new (json, "engine_uuid",
                         s_string_or_null (record->engine_uuid));
    json_object_set_new (json, "started",
                         json_is_string (started) ? json_incref (started)
                                                  : json_null ());
    json_object_set_new (json, "completed",
                         json_is_string (completed) ? json_incref (completed)
                         : record->reply ? s_date_value (record->received)
                                         : json_null ());
    json_object_set_new (json, "resubmitted",
                         s_string_or_null (record->resubmitted));
    json_object_set_new (json, "received", s_date_value (record->received));
    json_object_set_new (json, "result_header",
                         s_part_or_null (record->reply, BN_PART_HEADER));
    json_object_set_new (json, "result_metadata",
                         s_part_or_null (record->reply, BN_PART_METADATA));
    json_object_set_new (json, "result_content",
                         s_part_or_null (record->reply, BN_PART_CONTENT));
    json_object_set_new (json, "queue", s_string_or_null (record->queue));
    json_object_update (json, io);
    json_decref (io);
    record->json = json;
    return json;
}

size_t
bn_record_nbuffers (bn_record_t *record, bool result)
{
    assert (record);
    bn_msg_t *msg = result ? record->reply : record->request;
    return msg ? bn_msg_nbuffers (msg) : 0;
}

zmq_msg_t *
bn_record_buffer (bn_record_t *record, bool result, size_t index)
{
    assert (record);
    bn_msg_t *msg = result ? record->reply : record->request;
    return msg ? bn_msg_buffer (msg, index) : NULL;
}

bn_msg_t *
bn_record_request (bn_record_t *record)
{
    assert (record);
    return record->request;
}

bool
bn_record_completed (bn_record_t *record)
{
    assert (record);
    return record->reply != NULL;
}

//  --------------------------------------------------------------------------
//  SQLite

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

//  A temporary record from a row read back (fn for bn_records_sqlite_*).
static bn_record_t *
s_record_from_row (const bn_records_row_t *row)
{
    bn_record_t *record = calloc (1, sizeof *record);
    if (!record)
        return NULL;
    record->temporary = true;
    record->msg_id = strdup (row->msg_id);
    if (row->queue)
        record->queue = streq (row->queue, s_mux)    ? s_mux
                        : streq (row->queue, s_task) ? s_task
                                                     : s_broadcast;
    s_set_string (&record->engine_uuid, row->engine_uuid);
    s_set_string (&record->resubmitted, row->resubmitted);
    record->request = row->request ? bn_msg_dup (row->request) : NULL;
    record->reply = row->reply ? bn_msg_dup (row->reply) : NULL;
    record->received = row->received;
    if (row->io)
        record->io = json_loads (row->io, 0, NULL);
    if (!record->msg_id) {
        s_record_free (&record);
        return NULL;
    }
    return record;
}

int
bn_records_open_sqlite (bn_records_t *self, const char *path, char *err,
                        size_t err_size)
{
    assert (self);
    assert (path);
    bn_records_sqlite_destroy (&self->db);
    self->db = bn_records_sqlite_new (path, err, err_size);
    if (!self->db)
        return -1;
    free (self->db_path);
    self->db_path = strdup (path);
    if (self->kind == BN_RECORDS_NONE)
        self->kind = BN_RECORDS_MEMORY;
    return 0;
}

int
bn_records_sqlite_limit (bn_records_t *self, int pages)
{
    assert (self);
    return self->db ? bn_records_sqlite_max_pages (self->db, pages) : -1;
}

static void
s_db_failed (bn_records_t *self, const char *what)
{
    self->stats.db_failures++;
    bn_log_error ("records: SQLite %s failed on %s: %s; keeping records in "
                  "memory only from now on",
                  what, self->db_path ? self->db_path : "?",
                  bn_records_sqlite_error (self->db));
    bn_records_sqlite_rollback (self->db);
    bn_records_sqlite_destroy (&self->db);
}

int
bn_records_flush (bn_records_t *self)
{
    assert (self);
    if (!self->db)
        return 0;
    bn_record_t *record = zlistx_first (self->order);
    while (record && !record->dirty)
        record = zlistx_next (self->order);
    if (!record)
        return 0;
    if (bn_records_sqlite_begin (self->db) != 0) {
        s_db_failed (self, "BEGIN");
        return -1;
    }
    size_t written = 0;
    for (; record; record = zlistx_next (self->order)) {
        if (!record->dirty)
            continue;
        json_t *io = s_fold_io (record);
        char *io_text = io ? json_dumps (io, JSON_COMPACT) : NULL;
        json_decref (io);
        bn_records_row_t row = {
            .msg_id = record->msg_id,
            .queue = record->queue,
            .engine_uuid = record->engine_uuid,
            .resubmitted = record->resubmitted,
            .submitted = s_header_date (record->request),
            .received = record->received,
            .request = record->request,
            .reply = record->reply,
            .io = io_text,
        };
        int rc = bn_records_sqlite_put (self->db, &row);
        free (io_text);
        if (rc != 0) {
            s_db_failed (self, "write");
            return -1;
        }
        written++;
    }
    if (bn_records_sqlite_commit (self->db) != 0) {
        s_db_failed (self, "COMMIT");
        return -1;
    }
    //  only now is every row safe
    for (record = zlistx_first (self->order); record;
         record = zlistx_next (self->order))
        record->dirty = false;
    self->stats.db_writes += written;
    return 0;
}

//  --------------------------------------------------------------------------
//  Reading records

static int
s_get_row (void *arg, const bn_records_row_t *row)
{
    *(bn_record_t **)arg = s_record_from_row (row);
    return 1;
}

bn_record_t *
bn_records_get (bn_records_t *self, const char *msg_id)
{
    assert (self);
    if (!msg_id)
        return NULL;
    bn_record_t *record = zhashx_lookup (self->records, msg_id);
    if (record || !self->db)
        return record;
    bn_record_t *loaded = NULL;
    if (bn_records_sqlite_get (self->db, msg_id, s_get_row, &loaded) < 0)
        s_db_failed (self, "read");
    return loaded;
}

void
bn_record_release (bn_record_t **record_p)
{
    assert (record_p);
    bn_record_t *record = *record_p;
    if (record && record->temporary)
        s_record_free (&record);
    *record_p = NULL;
}

typedef struct {
    bn_records_each_fn *fn;
    void *arg;
} s_each_t;

static int
s_each_row (void *arg, const bn_records_row_t *row)
{
    s_each_t *each = (s_each_t *)arg;
    bn_record_t *record = s_record_from_row (row);
    if (!record)
        return 0;
    int rc = each->fn (each->arg, record);
    s_record_free (&record);
    return rc;
}

typedef struct {
    bn_record_t *record;
    int64_t date;
    uint64_t seq;
} s_sorted_t;

static int
s_sorted_cmp (const void *a, const void *b)
{
    const s_sorted_t *x = a, *y = b;
    //  records without a request (no date) after the others
    if ((x->date == 0) != (y->date == 0))
        return x->date == 0 ? 1 : -1;
    if (x->date != y->date)
        return x->date < y->date ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

//  The records in memory sorted by submission date; caller frees.
static s_sorted_t *
s_sorted (bn_records_t *self, size_t *count)
{
    size_t n = zlistx_size (self->order);
    s_sorted_t *sorted = calloc (n ? n : 1, sizeof *sorted);
    if (!sorted)
        return NULL;
    size_t i = 0;
    bn_record_t *record = zlistx_first (self->order);
    while (record && i < n) {
        sorted[i].record = record;
        sorted[i].date = s_header_date (record->request);
        sorted[i].seq = i;
        i++;
        record = zlistx_next (self->order);
    }
    qsort (sorted, i, sizeof *sorted, s_sorted_cmp);
    *count = i;
    return sorted;
}

int
bn_records_each (bn_records_t *self, bn_records_each_fn *fn, void *arg)
{
    assert (self);
    assert (fn);
    if (self->db && bn_records_flush (self) == 0) {
        s_each_t each = {fn, arg};
        int rc = bn_records_sqlite_each (self->db, s_each_row, &each);
        if (rc >= 0)
            return rc;
        s_db_failed (self, "read");
    }
    size_t count;
    s_sorted_t *sorted = s_sorted (self, &count);
    if (!sorted)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++)
        rc = fn (arg, sorted[i].record);
    free (sorted);
    return rc;
}

static int
s_history_add (void *arg, bn_record_t *record)
{
    if (record->request)
        json_array_append_new ((json_t *)arg, json_string (record->msg_id));
    return 0;
}

json_t *
bn_records_history (bn_records_t *self)
{
    assert (self);
    if (self->db && bn_records_flush (self) == 0) {
        json_t *ids = bn_records_sqlite_history (self->db);
        if (ids)
            return ids;
        s_db_failed (self, "read");
    }
    json_t *history = json_array ();
    if (history && bn_records_each (self, s_history_add, history) < 0) {
        json_decref (history);
        return NULL;
    }
    return history;
}

int
bn_records_drop (bn_records_t *self, const char *msg_id)
{
    assert (self);
    if (!msg_id || zhashx_lookup (self->pending, msg_id))
        return -1;
    int rc = -1;
    bn_record_t *record = zhashx_lookup (self->records, msg_id);
    if (record) {
        s_forget (self, record);
        rc = 0;
    }
    if (self->db) {
        bool found = false;
        bn_record_t *loaded = NULL;
        if (bn_records_sqlite_get (self->db, msg_id, s_get_row, &loaded) > 0)
            found = true;
        bn_record_release (&loaded);
        if (found && bn_records_sqlite_drop (self->db, msg_id) != 0)
            s_db_failed (self, "delete");
        else if (found)
            rc = 0;
    }
    return rc;
}

void
bn_records_set_resubmitted (bn_records_t *self, const char *msg_id,
                            const char *new_id)
{
    assert (self);
    bn_record_t *record = zhashx_lookup (self->records, msg_id);
    if (!record && self->db) {
        //  bring the record back into memory so that it is written again
        bn_record_t *loaded = bn_records_get (self, msg_id);
        if (loaded && (record = s_record_add (self, msg_id))) {
            record->queue = loaded->queue;
            record->request = loaded->request;
            record->reply = loaded->reply;
            record->io = loaded->io;
            record->received = loaded->received;
            loaded->request = loaded->reply = NULL;
            loaded->io = NULL;
            s_set_string (&record->engine_uuid, loaded->engine_uuid);
        }
        bn_record_release (&loaded);
    }
    if (!record)
        return;
    s_set_string (&record->resubmitted, new_id);
    s_changed (record);
}

size_t
bn_records_size (bn_records_t *self)
{
    assert (self);
    return zlistx_size (self->order);
}

uint64_t
bn_records_bytes (bn_records_t *self)
{
    assert (self);
    return self->bytes;
}

json_t *
bn_records_stats (bn_records_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I}",
        "storage",
        self->kind == BN_RECORDS_NONE ? "none"
        : self->db                    ? "sqlite"
                                      : "memory",
        "sqlite_failed", self->db_path && !self->db, "records",
        (json_int_t)zlistx_size (self->order), "bytes", (json_int_t)self->bytes,
        "pending", (json_int_t)zhashx_size (self->pending), "unassigned",
        (json_int_t)self->unassigned, "requests", (json_int_t)s->requests,
        "replies", (json_int_t)s->replies, "iopub", (json_int_t)s->iopub,
        "unknown", (json_int_t)s->unknown, "duplicates",
        (json_int_t)s->duplicates, "culled", (json_int_t)s->culled,
        "late_iopub", (json_int_t)s->late_iopub, "db_writes",
        (json_int_t)s->db_writes, "db_failures", (json_int_t)s->db_failures,
        "no_memory", (json_int_t)s->no_memory);
}

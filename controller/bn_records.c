/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_records: the task records (bn_record) kept in arrival order, the pending
   and completed state per engine, DictDB-style limits, SQLite write-through.

    On the message path a request costs one bn_msg_dup (frames shared by
    reference count), one record and one tracking entry; a reply or an
    iopub output one bn_msg_dup and a hash lookup by the msg_id the header
    scanner read. Everything else (folding iopub into stdout/stderr, the
    TaskRecord dict, dates) is built when a query asks.  */
#include "bn_records.h"

#include <assert.h>
#include <string.h>

#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_merged_reader.h"
#include "bn_msgtypes.h"
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
    size_t tracks; //  Pending requests that point to it
    bool gone;     //  Unregistered: dropped when tracks reaches 0
} s_engine_t;

typedef struct {
    const char *queue;  //  BN_MONITOR_QUEUE_* (static)
    s_engine_t *engine; //  NULL: a task not assigned yet
    void *handle;       //  Position in pending_order
    int remaining;      //  Broadcast: replies still due (-1: unknown)
    char msg_id[];
} s_track_t;

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
    zhashx_t *records; //  msg_id -> handle in order (key owned by the record)
    zlistx_t *order;   //  bn_record_t *, arrival order (owner)
    uint64_t bytes;
    zhashx_t *pending;       //  msg_id -> s_track_t (key owned by it)
    zlistx_t *pending_order; //  s_track_t *, arrival order (owner)
    zhashx_t *engines;       //  uuid -> s_engine_t
    size_t unassigned;
    bool bytes_stuck; //  Over size_limit with nothing to cull
    bn_records_sqlite_t *db;
    char *db_path;
    bn_copier_t *copier; //  Copies the requests' large buffers
    bn_record_t *loaded; //  The broadcast read from SQLite last to split
                         //  an engine's part from, or NULL
    bn_monitor_t monitor;
    s_stats_t stats;
};

//  Destructor of the order list, which owns the records.
static void
s_record_destructor (void **item)
{
    bn_record_destroy ((bn_record_t **)item);
}

//  The record of msg_id in memory, or NULL.
static bn_record_t *
s_lookup (bn_records_t *self, const char *msg_id)
{
    void *handle = zhashx_lookup (self->records, msg_id);
    return handle ? (bn_record_t *)zlistx_handle_item (handle) : NULL;
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
    if (engine) {
        //  registered again under its uuid while a request was pending
        engine->gone = false;
        return engine;
    }
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

//  Point track to engine (which may be NULL).
static void
s_track_engine (s_track_t *track, s_engine_t *engine)
{
    track->engine = engine;
    if (engine)
        engine->tracks++;
}

//  Forget a pending request, and its engine if that has unregistered and
//  this was the last request pointing to it.
static void
s_untrack (bn_records_t *self, s_track_t *track)
{
    s_engine_t *gone = NULL;
    if (track->engine) {
        if (streq (track->queue, BN_MONITOR_QUEUE_MUX)) {
            if (track->engine->nqueue)
                track->engine->nqueue--;
        } else if (streq (track->queue, BN_MONITOR_QUEUE_TASK)) {
            if (track->engine->ntasks)
                track->engine->ntasks--;
        }
        if (--track->engine->tracks == 0 && track->engine->gone)
            gone = track->engine;
    } else if (streq (track->queue, BN_MONITOR_QUEUE_TASK) && self->unassigned)
        self->unassigned--;
    zhashx_delete (self->pending, track->msg_id);
    zlistx_delete (self->pending_order, track->handle);
    if (gone)
        zhashx_delete (self->engines, gone->uuid);
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
    self->copier = bn_copier_new ();
    if (!self->records || !self->order || !self->pending ||
        !self->pending_order || !self->engines || !self->copier) {
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
    bn_record_destroy (&self->loaded);
    zhashx_destroy (&self->records);
    zlistx_destroy (&self->order);
    zhashx_destroy (&self->pending);
    zlistx_destroy (&self->pending_order);
    zhashx_destroy (&self->engines);
    bn_copier_destroy (&self->copier);
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
    const char *msg_id = bn_record_msg_id (record);
    void *handle = zhashx_lookup (self->records, msg_id);
    self->bytes -= bn_record_bytes (record);
    zhashx_delete (self->records, msg_id);
    zlistx_delete (self->order, handle);
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
        if (!zhashx_lookup (self->pending, bn_record_msg_id (record)) &&
            !(self->db && bn_record_dirty (record))) {
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

//  Keep record in memory. Returns 0, or -1 if out of memory.
static int
s_record_insert (bn_records_t *self, bn_record_t *record)
{
    void *handle = zlistx_add_end (self->order, record);
    if (!handle) {
        self->stats.no_memory++;
        return -1;
    }
    zhashx_insert (self->records, bn_record_msg_id (record), handle);
    self->bytes += bn_record_bytes (record);
    return 0;
}

//  A new record for msg_id in memory, or NULL.
static bn_record_t *
s_record_add (bn_records_t *self, const char *msg_id)
{
    bn_record_t *record = bn_record_new (msg_id);
    if (!record || s_record_insert (self, record) != 0) {
        if (!record)
            self->stats.no_memory++;
        bn_record_destroy (&record);
    }
    return record;
}

//  Store request in record (taking a shared copy).
static void
s_record_request (bn_records_t *self, bn_record_t *record, const char *queue,
                  bn_msg_t *request, const char *engine_uuid, bool kept)
{
    uint64_t bytes = bn_record_bytes (record);
    if (kept)
        bn_record_share_request (record, queue, request, engine_uuid);
    else
        bn_record_set_request (record, queue, request, engine_uuid,
                               self->copier);
    self->bytes += bn_record_bytes (record) - bytes;
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
    s_track_engine (track, s_engine (self, engine_uuid));
    track->remaining = -1;
    track->handle = zlistx_add_end (self->pending_order, track);
    if (!track->handle) {
        if (track->engine)
            track->engine->tracks--;
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
    bn_record_t *record = s_lookup (self, msg_id);
    if (!record)
        record = s_record_add (self, msg_id);
    if (!record)
        return;
    s_record_request (self, record, queue, request, engine_uuid, false);
    s_maybe_cull (self);
}

void
bn_records_engine_gone (bn_records_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = uuid ? zhashx_lookup (self->engines, uuid) : NULL;
    if (!engine)
        return;
    if (engine->tracks)
        engine->gone = true;
    else
        zhashx_delete (self->engines, uuid);
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
        s_track_engine (track, s_engine (self, engine_uuid));
        if (track->engine && track->queue == s_task) {
            track->engine->ntasks++;
            if (self->unassigned)
                self->unassigned--;
        }
    }
    bn_record_t *record = s_lookup (self, msg_id);
    if (record)
        bn_record_set_engine (record, engine_uuid);
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

//  Store reply in record (taking a shared copy).
static void
s_record_reply (bn_records_t *self, bn_record_t *record, bn_msg_t *reply,
                const char *engine_uuid)
{
    uint64_t bytes = bn_record_bytes (record);
    bn_record_set_reply (record, reply, engine_uuid);
    self->bytes += bn_record_bytes (record) - bytes;
    self->bytes_stuck = false;
}

//  A broadcast's per-engine reply ("<orig>_<uuid>"): a record of its own
//  sharing the original request, and one fewer reply due on the original.
static void
s_broadcast_reply (bn_records_t *self, const char *parent_id, bn_msg_t *reply,
                   const char *engine_uuid)
{
    char orig[S_ID_MAX];
    if (!s_metadata_string (reply, BN_MD_ORIGINAL_MSG_ID, orig, sizeof orig))
        return;
    s_track_t *track = zhashx_lookup (self->pending, orig);
    bn_record_t *original = s_lookup (self, orig);
    //  a merged reply (bn_merged_reader.h) answers for many engines
    int engines = bn_merged_engines (reply);
    bool merged = engines >= 0;
    if (!merged && self->kind != BN_RECORDS_NONE && parent_id &&
        !streq (parent_id, orig)) {
        //  (its output may have made the record already)
        bn_record_t *record = s_lookup (self, parent_id);
        if (!record)
            record = s_record_add (self, parent_id);
        if (record && !bn_record_request (record)) {
            bn_msg_t *request = original ? bn_record_request (original) : NULL;
            s_record_request (self, record, s_broadcast, request, NULL, true);
            if (bn_record_request (record))
                bn_msg_set_msg_id (bn_record_request (record), parent_id);
        }
        if (record)
            s_record_reply (self, record, reply, engine_uuid);
    }
    if (original && track && self->kind != BN_RECORDS_NONE) {
        //  every engine's part stays in the original's record: a merged
        //  one is split when a query asks for an engine's. (Only while it
        //  is pending: a reply repeated after it completed would grow the
        //  record without bound.)
        uint64_t bytes = bn_record_bytes (original);
        if (bn_record_add_part (original, reply, merged) != 0)
            self->stats.no_memory++;
        self->bytes += bn_record_bytes (original) - bytes;
    }
    if (!track)
        return;
    if (track->remaining < 0) {
        track->remaining = 1;
        bn_msg_t *request = original ? bn_record_request (original) : NULL;
        int targets = request ? s_metadata_array_size (request, "targets") : -1;
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
    if (original)
        s_record_reply (self, original, reply, NULL);
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
    bn_record_t *record = parent_id ? s_lookup (self, parent_id) : NULL;
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

//  True for the iopub types a record keeps (doc/wire.md 5.2).
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
    bn_record_t *record = s_lookup (self, parent_id);
    if (!record) {
        //  as 7.1.0 does for output that comes before its request; ours
        //  comes after, so this is output for a record already culled or
        //  for a per-engine broadcast id
        self->stats.late_iopub++;
        record = s_record_add (self, parent_id);
        if (!record)
            return;
    }
    if (bn_record_add_iopub (record, msg) != 0) {
        self->stats.no_memory++;
        return;
    }
    self->stats.iopub++;
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
//  SQLite

static int s_get_row (void *arg, const bn_records_row_t *row);
static void s_db_failed (bn_records_t *self, const char *what);

static int
s_row_answered (void *arg, const bn_records_row_t *row)
{
    *(bool *)arg = row->reply != NULL;
    return 1;
}

//  True if the database has a reply for msg_id.
static bool
s_answered (void *arg, const char *msg_id)
{
    bn_records_t *self = (bn_records_t *)arg;
    bool answered = false;
    bn_records_sqlite_get (self->db, msg_id, s_row_answered, &answered);
    return answered;
}

//  Complete the requests of an earlier controller that were never
//  answered: pending for ever else (nothing tracks them now), each says
//  ControllerGone. Returns 0, or -1 if the database failed.
static int
s_abandon (bn_records_t *self)
{
    json_t *ids = bn_records_sqlite_unanswered (self->db);
    if (!ids)
        return -1;
    size_t count = json_array_size (ids), done = 0;
    bn_session_t *session = count ? bn_session_new ("", NULL) : NULL;
    int rc = count == 0 || (session && bn_records_sqlite_begin (self->db) == 0)
                 ? 0
                 : -1;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        const char *msg_id = json_string_value (json_array_get (ids, i));
        bn_record_t *record = NULL;
        if (bn_records_sqlite_get (self->db, msg_id, s_get_row, &record) < 0)
            rc = -1;
        if (record &&
            bn_record_abandon (record, session,
                               "the controller stopped before this request "
                               "was answered",
                               s_answered, self) == 0 &&
            bn_record_completed (record)) {
            rc = bn_record_write (record, self->db);
            done++;
        }
        bn_record_destroy (&record);
    }
    if (count && rc == 0)
        rc = bn_records_sqlite_commit (self->db);
    if (done)
        bn_log_info ("records: %zu requests of an earlier controller were "
                     "never answered; each says ControllerGone now",
                     done);
    bn_session_destroy (&session);
    json_decref (ids);
    return rc;
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
    if (s_abandon (self) != 0)
        s_db_failed (self, "write");
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
    bn_record_destroy (&self->loaded);
}

int
bn_records_flush (bn_records_t *self)
{
    assert (self);
    if (!self->db)
        return 0;
    bn_record_t *record = zlistx_first (self->order);
    while (record && !bn_record_dirty (record))
        record = zlistx_next (self->order);
    if (!record)
        return 0;
    if (bn_records_sqlite_begin (self->db) != 0) {
        s_db_failed (self, "BEGIN");
        return -1;
    }
    size_t written = 0;
    for (; record; record = zlistx_next (self->order)) {
        if (!bn_record_dirty (record))
            continue;
        if (bn_record_write (record, self->db) != 0) {
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
        bn_record_set_written (record);
    self->stats.db_writes += written;
    return 0;
}

//  --------------------------------------------------------------------------
//  Reading records

static int
s_get_row (void *arg, const bn_records_row_t *row)
{
    *(bn_record_t **)arg = bn_record_new_row (row);
    return 1;
}

//  The temporary record of one engine's part of a broadcast whose replies
//  were merged, for msg_id "<original>_<engine uuid>"; NULL if msg_id is
//  not one.
static bn_record_t *
s_split (bn_records_t *self, const char *msg_id)
{
    const char *cut = strrchr (msg_id, '_');
    size_t len = cut ? (size_t)(cut - msg_id) : 0;
    if (!cut || len == 0 || len >= S_ID_MAX || !cut[1])
        return NULL;
    char orig[S_ID_MAX];
    memcpy (orig, msg_id, len);
    orig[len] = 0;
    bn_record_t *original = s_lookup (self, orig);
    if (!original && self->loaded &&
        streq (bn_record_msg_id (self->loaded), orig))
        original = self->loaded;
    if (!original && self->db) {
        //  a broadcast of an earlier controller, or one culled from memory:
        //  kept while its engines' parts are read one after the other (a
        //  client asks for each), instead of read back again for each
        bn_record_t *loaded = NULL;
        if (bn_records_sqlite_get (self->db, orig, s_get_row, &loaded) < 0)
            s_db_failed (self, "read");
        else if (loaded) {
            bn_record_destroy (&self->loaded);
            self->loaded = original = loaded;
        }
    }
    return original ? bn_record_new_engine (original, cut + 1, msg_id) : NULL;
}

bn_record_t *
bn_records_get (bn_records_t *self, const char *msg_id)
{
    assert (self);
    if (!msg_id)
        return NULL;
    bn_record_t *record = s_lookup (self, msg_id);
    if (record)
        return record;
    bn_record_t *loaded = NULL;
    if (self->db &&
        bn_records_sqlite_get (self->db, msg_id, s_get_row, &loaded) < 0)
        s_db_failed (self, "read");
    return loaded ? loaded : s_split (self, msg_id);
}

typedef struct {
    bn_records_each_fn *fn;
    void *arg;
} s_each_t;

static int
s_each_row (void *arg, const bn_records_row_t *row)
{
    s_each_t *each = (s_each_t *)arg;
    bn_record_t *record = bn_record_new_row (row);
    if (!record)
        return 0;
    int rc = each->fn (each->arg, record);
    bn_record_destroy (&record);
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
        sorted[i].date = bn_record_submitted (record);
        sorted[i].seq = i;
        i++;
        record = zlistx_next (self->order);
    }
    qsort (sorted, i, sizeof *sorted, s_sorted_cmp);
    *count = i;
    return sorted;
}

int
bn_records_each (bn_records_t *self, bool buffers, bn_records_each_fn *fn,
                 void *arg)
{
    assert (self);
    assert (fn);
    if (self->db && bn_records_flush (self) == 0) {
        s_each_t each = {fn, arg};
        int rc = bn_records_sqlite_each (self->db, buffers, s_each_row, &each);
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
    if (bn_record_request (record))
        json_array_append_new ((json_t *)arg,
                               json_string (bn_record_msg_id (record)));
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
    if (history && bn_records_each (self, false, s_history_add, history) < 0) {
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
    if (self->loaded && streq (bn_record_msg_id (self->loaded), msg_id))
        bn_record_destroy (&self->loaded);
    int rc = -1;
    bn_record_t *record = s_lookup (self, msg_id);
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
    if (self->loaded && streq (bn_record_msg_id (self->loaded), msg_id))
        bn_record_destroy (&self->loaded);
    bn_record_t *record = s_lookup (self, msg_id);
    if (!record && self->db) {
        //  bring the record back into memory so that it is written again
        bn_record_t *loaded = bn_records_get (self, msg_id);
        if (loaded && s_record_insert (self, loaded) == 0) {
            bn_record_keep (loaded);
            record = loaded;
        } else
            bn_record_release (&loaded);
    }
    if (!record)
        return;
    bn_record_set_resubmitted (record, new_id);
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
        "s:I, s:I, s:I, s:I}",
        "storage",
        self->kind == BN_RECORDS_NONE ? "none"
        : self->db                    ? "sqlite"
                                      : "memory",
        "sqlite_failed", self->db_path && !self->db, "records",
        (json_int_t)zlistx_size (self->order), "bytes", (json_int_t)self->bytes,
        "pending", (json_int_t)zhashx_size (self->pending), "engines",
        (json_int_t)zhashx_size (self->engines), "unassigned",
        (json_int_t)self->unassigned, "requests", (json_int_t)s->requests,
        "replies", (json_int_t)s->replies, "iopub", (json_int_t)s->iopub,
        "unknown", (json_int_t)s->unknown, "duplicates",
        (json_int_t)s->duplicates, "culled", (json_int_t)s->culled,
        "late_iopub", (json_int_t)s->late_iopub, "db_writes",
        (json_int_t)s->db_writes, "db_failures", (json_int_t)s->db_failures,
        "no_memory", (json_int_t)s->no_memory);
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_replies: plain and merged reply messages delivered to the items
    they answer, their results decoded outside the lock.  */
#include "bn_replies.h"

#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_merged_reader.h"
#include "bn_msgtypes.h"
#include "bn_result_private.h"
#include "bn_serialize.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
s_str (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

bn_value_t *
bn_replies_decode (bn_msg_t *msg, size_t start, size_t end, size_t *used,
                   int *error, char *why, size_t whysize)
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
        bytes[i - start].frame = frame;
    }
    bn_value_t *value =
        bn_deserialize_object (bytes, n - start, used, why, whysize);
    if (bytes != stack)
        free (bytes);
    *error = value ? 0 : BN_EPICKLE;
    return value;
}

//  What an item records of a plain reply's metadata, read from the part's
//  text in one walk rather than a JSON tree of it all.
typedef struct {
    const char *started; //  metadata.started, or NULL
    const char *engine;  //  metadata.engine, or NULL
    json_t *hops;        //  metadata.bn_hops (a reference), or NULL
    json_t *tree;        //  the part's tree, when a value did not fit here
    char started_text[64];
    char engine_text[64];
} s_metadata_t;

//  Read msg's metadata into md; -1 if it is not a JSON object. Release md
//  with s_metadata_clear.
static int
s_metadata_read (bn_msg_t *msg, s_metadata_t *md)
{
    static const char *const keys[] = {"started", "engine", BN_BCAST_HOPS};
    memset (md, 0, sizeof *md);
    bn_jscan_slice_t values[3];
    size_t size;
    const void *data = bn_msg_part_data (msg, BN_PART_METADATA, &size);
    if (!data || bn_jscan_keys (data, size, keys, 3, values) != 0)
        return -1;
    int started = bn_jscan_unescape (values[0], md->started_text,
                                     sizeof md->started_text);
    int engine =
        bn_jscan_unescape (values[1], md->engine_text, sizeof md->engine_text);
    if (started == -2 || engine == -2) {
        //  longer than the room here: as the tree has them
        md->tree = json_incref (bn_msg_metadata (msg));
        md->started = s_str (md->tree, "started");
        md->engine = s_str (md->tree, "engine");
        md->hops = json_incref (json_object_get (md->tree, BN_BCAST_HOPS));
        return md->tree ? 0 : -1;
    }
    md->started = started >= 0 ? md->started_text : NULL;
    md->engine = engine >= 0 ? md->engine_text : NULL;
    if (values[2].data)
        md->hops = json_loadb (values[2].data, values[2].size, 0, NULL);
    return 0;
}

static void
s_metadata_clear (s_metadata_t *md)
{
    json_decref (md->hops);
    json_decref (md->tree);
    memset (md, 0, sizeof *md);
}

static bool
s_deliver_plain (bn_item_t *item, bn_msg_t *msg, const s_metadata_t *md,
                 bn_value_t *value, int decode_error, const char *why,
                 int engine_id)
{
    json_t *content = bn_msg_content (msg);
    bn_reply_t reply = {.type = bn_msg_type (msg),
                        .content = content,
                        .started = md->started,
                        .completed = bn_msg_date (msg),
                        .out = s_str (content, "bn_stdout"),
                        .err = s_str (content, "bn_stderr"),
                        .value = value,
                        .decode_error = decode_error,
                        .why = why,
                        .hops = md->hops,
                        .uuid = md->engine,
                        .engine_id = engine_id,
                        .raw = msg};
    return bn_item_on_entry (item, &reply);
}

bool
bn_replies_deliver (bn_item_t *item, bn_msg_t *msg, bn_value_t *value,
                    int decode_error, const char *why, int engine_id)
{
    s_metadata_t md;
    s_metadata_read (msg, &md);
    bool completed =
        s_deliver_plain (item, msg, &md, value, decode_error, why, engine_id);
    s_metadata_clear (&md);
    return completed;
}

//  With the lock held: hand reply to item, and stop tracking it when it
//  completes; true if it did.
static bool
s_deliver (bn_tracker_t *tracker, bn_item_t *item, bn_reply_t *reply)
{
    if (bn_item_on_entry (item, reply)) {
        bn_tracker_untrack (tracker, item);
        return true;
    }
    return false;
}

//  ---------------------------------------------------------------------
//  Merged broadcast replies

//  What a merged message's entries share.
typedef struct {
    bn_tracker_t *tracker; //  where the items are
    bn_engines_t *engines; //  uuids by engine id
    bn_msg_t *msg;         //  the message
    const char *type;      //  its msg_type
    bool apply;            //  an apply_reply: buffers hold results
    json_t *base;          //  its metadata's tree, when it was needed
    const char *original;  //  original_msg_id
    const char *started;   //  metadata.started
    const char *date;      //  header.date
    json_t *hops;          //  bn_hops (a reference), or NULL
    char original_text[128];
    char started_text[64];
    json_t *ok; //  {"status": "ok"}, the content of ok entries
    size_t at;  //  next buffer to decode
} s_merged_t;

//  original_msg_id, started and bn_hops of the metadata without the
//  entries, read from its text; through its tree when a value is longer
//  than the room here.
static void
s_base_read (s_merged_t *merged, bool spliced)
{
    static const char *const keys[] = {BN_MD_ORIGINAL_MSG_ID, "started",
                                       BN_BCAST_HOPS};
    bn_jscan_slice_t values[3];
    char *copy = NULL;
    if (bn_merged_base_keys (merged->msg, spliced, keys, 3, values, &copy) != 0)
        return;
    int original = bn_jscan_unescape (values[0], merged->original_text,
                                      sizeof merged->original_text);
    int started = bn_jscan_unescape (values[1], merged->started_text,
                                     sizeof merged->started_text);
    json_t *hops = NULL;
    if (original != -2 && started != -2) {
        merged->original = original >= 0 ? merged->original_text : NULL;
        merged->started = started >= 0 ? merged->started_text : NULL;
        if (values[2].data)
            hops = json_loadb (values[2].data, values[2].size, 0, NULL);
    } else {
        merged->base = bn_merged_base (merged->msg, spliced);
        merged->original = s_str (merged->base, BN_MD_ORIGINAL_MSG_ID);
        merged->started = s_str (merged->base, "started");
        hops = json_incref (json_object_get (merged->base, BN_BCAST_HOPS));
    }
    free (copy);
    if (json_is_array (hops))
        merged->hops = hops;
    else
        json_decref (hops);
}

//  One entry, made ready for its items outside the lock.
typedef struct {
    bn_reply_t reply;    //  what its items record
    char *strings[4];    //  started, completed, stdout, stderr (owned)
    json_t *content;     //  reference held
    bn_idset_t *engines; //  groups, reduced: its engines
    bool failure;        //  reduced: a failure, not the contributors
    char why[128];       //  a decoding error
    char uuid[BN_MERGED_UUID_MAX + 1]; //  targets: its engine
} s_piece_t;

static void
s_piece_clear (s_piece_t *piece)
{
    for (int i = 0; i < 4; i++)
        free (piece->strings[i]);
    json_decref (piece->content);
    bn_value_destroy (&piece->reply.value);
    bn_idset_destroy (&piece->engines);
}

//  The content an entry's items get: its own error content (with a
//  status), else {"status": status}; for 7.1.0's entries the message's;
//  for an entry without a status, a ProtocolError saying why (problem).
static json_t *
s_content (s_merged_t *merged, bn_merged_entry_t *entry, const char *problem)
{
    if (!*entry->status)
        return json_pack ("{s:s, s:s, s:s, s:[]}", "status", BN_STATUS_ERROR,
                          "ename", "ProtocolError", "evalue",
                          problem ? problem : "no status", "traceback");
    if (!entry->text.data && entry->uuid)
        return json_incref (bn_msg_content (merged->msg));
    json_t *content = bn_merged_json (entry->content);
    if (json_is_object (content)) {
        if (!s_str (content, "status"))
            json_object_set_new (content, "status",
                                 json_string (entry->status));
        return content;
    }
    json_decref (content);
    if (entry->ok)
        return json_incref (merged->ok);
    return json_pack ("{s:s}", "status", entry->status);
}

//  Fill piece from entry (malformed when problem says why), decoding its
//  result from the buffers. Returns 0, or -1 if out of memory.
static int
s_piece (s_merged_t *merged, bn_merged_entry_t *entry, const char *problem,
         s_piece_t *piece)
{
    memset (piece, 0, sizeof *piece);
    bn_reply_t *reply = &piece->reply;
    reply->type = merged->type;
    reply->engine_id = entry->eid;
    reply->why = piece->why;
    bn_jscan_slice_t texts[4] = {entry->started, entry->completed, entry->out,
                                 entry->err};
    for (int i = 0; i < 4; i++)
        piece->strings[i] = bn_merged_string (texts[i]);
    reply->started = piece->strings[0];
    reply->completed = piece->strings[1];
    reply->out = piece->strings[2];
    reply->err = piece->strings[3];
    piece->content = s_content (merged, entry, problem);
    reply->content = piece->content;
    piece->failure = entry->failure;
    if (entry->uuid)
        snprintf (piece->uuid, sizeof piece->uuid, "%s", entry->uuid);
    if (entry->engines && !(piece->engines = bn_idset_dup (entry->engines)))
        return -1;
    //  the buffers: an entry says how many are its own; 7.1.0's do not,
    //  and each takes the objects its result is made of
    size_t total = bn_msg_nbuffers (merged->msg);
    bool engines = !entry->engines || bn_idset_count (entry->engines) > 0;
    if (entry->ok && merged->apply && !entry->failure && engines) {
        size_t end = entry->sized ? merged->at + entry->nbuffers : total;
        size_t used = 0;
        reply->value = bn_replies_decode (merged->msg, merged->at, end, &used,
                                          &reply->decode_error, piece->why,
                                          sizeof piece->why);
        merged->at += entry->sized ? entry->nbuffers : used;
    } else if (entry->sized)
        merged->at += entry->nbuffers;
    else if (entry->text.data && merged->apply)
        merged->at++; //  a failed engine's pickled None
    return piece->content ? 0 : -1;
}

//  What an entry's reply takes from the message when the entry does not
//  say it.
static void
s_complete_reply (s_merged_t *merged, bn_reply_t *reply)
{
    reply->hops = merged->hops;
    if (!reply->started)
        reply->started = merged->started;
    if (!reply->completed)
        reply->completed = merged->date;
}

//  With the lock held: the outstanding item of the merged reply's request
//  for engine uuid (or, when uuid is NULL, engine id), or NULL.
static bn_item_t *
s_item (s_merged_t *merged, const char *uuid, int id)
{
    if (!uuid)
        uuid = bn_engines_uuid (merged->engines, id);
    char msg_id[512];
    if (!uuid || snprintf (msg_id, sizeof msg_id, "%s_%s", merged->original,
                           uuid) >= (int)sizeof msg_id)
        return NULL;
    return bn_tracker_find (merged->tracker, msg_id);
}

//  With the lock held: the targets shape, one engine per entry.
static bool
s_on_targets (s_merged_t *merged, s_piece_t *pieces, size_t count)
{
    bool changed = false;
    bn_result_t *result = NULL;
    for (size_t i = 0; i < count; i++) {
        bn_item_t *item = s_item (merged, pieces[i].uuid, -1);
        if (!item)
            continue;
        if (!result) {
            result = bn_item_result (item);
            bn_result_count_message (result);
        }
        s_complete_reply (merged, &pieces[i].reply);
        pieces[i].reply.uuid = pieces[i].uuid;
        pieces[i].reply.engine_id =
            bn_engines_id_of (merged->engines, pieces[i].uuid);
        changed |= s_deliver (merged->tracker, item, &pieces[i].reply);
    }
    return changed;
}

//  With the lock held: the groups shape, engines with one reply.
static bool
s_on_groups (s_merged_t *merged, s_piece_t *pieces, size_t count)
{
    bool changed = false, counted = false;
    for (size_t i = 0; i < count; i++) {
        bn_idset_t *engines = pieces[i].engines;
        bn_result_t *result = NULL;
        int number = -1;
        s_complete_reply (merged, &pieces[i].reply);
        for (int id = bn_idset_first (engines); id >= 0;
             id = bn_idset_next (engines, id)) {
            bn_item_t *item = s_item (merged, NULL, id);
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
            bn_reply_t reply = pieces[i].reply;
            reply.value = reply.value ? bn_value_dup (reply.value) : NULL;
            reply.engine_id = id;
            changed |= s_deliver (merged->tracker, item, &reply);
        }
    }
    return changed;
}

//  With the lock held: the reduced shape, the contributors first, then
//  the failures; the value goes to the result.
static bool
s_on_reduced (s_merged_t *merged, const char *op, s_piece_t *pieces,
              size_t count)
{
    bool changed = false;
    bn_result_t *result = NULL;
    bn_idset_t *failed = bn_idset_new ();
    for (size_t i = 0; i < count; i++) {
        bn_idset_t *engines = pieces[i].engines;
        s_complete_reply (merged, &pieces[i].reply);
        for (int id = bn_idset_first (engines); id >= 0;
             id = bn_idset_next (engines, id)) {
            if (pieces[i].failure && failed)
                bn_idset_add (failed, id);
            bn_item_t *item = s_item (merged, NULL, id);
            if (!item)
                continue;
            result = bn_item_result (item);
            bn_reply_t reply = pieces[i].reply;
            reply.value = NULL;
            reply.engine_id = id;
            changed |= s_deliver (merged->tracker, item, &reply);
        }
    }
    if (result) {
        bn_result_count_message (result);
        //  the contributors' piece holds the reduced value
        if (bn_result_add_reduced (result, op, pieces[0].reply.value,
                                   pieces[0].engines, failed) != 0)
            bn_log_warn ("client: out of memory for a reduced result");
        pieces[0].reply.value = NULL;
    }
    bn_idset_destroy (&failed);
    return changed;
}

//  A merged reply: its entries read and decoded, then delivered under the
//  lock. Returns true if an item completed.
static bool
s_on_merged (bn_tracker_t *tracker, bn_engines_t *engines, bn_msg_t *msg,
             bn_replies_drop_fn *drop, void *arg)
{
    s_merged_t merged = {.tracker = tracker,
                         .engines = engines,
                         .msg = msg,
                         .type = bn_msg_type (msg),
                         .date = bn_msg_date (msg)};
    merged.apply = strcmp (merged.type, BN_MSG_APPLY_REPLY) == 0;
    merged.ok = json_pack ("{s:s}", "status", BN_STATUS_OK);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    size_t count = 0, cap = 0;
    s_piece_t *pieces = NULL;
    int rc = merged.ok && reader ? 1 : -3;
    bn_merged_entry_t entry;
    while (rc != 0 && rc != -1 && rc != -3) {
        rc = bn_merged_reader_next (reader, &entry);
        //  a malformed entry is dropped, unless it is whole enough to
        //  tell its engines: then they learn what went wrong with it
        //  (a result that does not decode)
        bool named =
            (rc == 1 || rc == -2) &&
            (entry.uuid || (entry.engines && bn_idset_count (entry.engines)));
        if (rc == -2 && !named)
            drop (arg, bn_merged_reader_error (reader));
        if (rc != 1 && !(rc == -2 && named))
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            s_piece_t *bigger = realloc (pieces, cap * sizeof *pieces);
            if (!bigger) {
                rc = -3;
                break;
            }
            pieces = bigger;
        }
        if (s_piece (&merged, &entry,
                     rc == -2 ? bn_merged_reader_error (reader) : NULL,
                     &pieces[count++]) != 0)
            rc = -3;
    }
    //  the rest of the metadata: only what precedes the entries when the
    //  reader found them spliced in last
    if (rc == 0)
        s_base_read (&merged, bn_merged_reader_spliced (reader));
    bool changed = false;
    if (rc == 0 && merged.original) {
        bn_tracker_lock (tracker);
        bn_merged_shape_t shape = bn_merged_reader_shape (reader);
        if (shape == BN_MERGED_TARGETS)
            changed = s_on_targets (&merged, pieces, count);
        else if (shape == BN_MERGED_GROUPS)
            changed = s_on_groups (&merged, pieces, count);
        else
            changed = s_on_reduced (&merged, bn_merged_reader_op (reader),
                                    pieces, count);
        bn_tracker_unlock (tracker);
    } else if (rc == 0)
        drop (arg, "merged reply without original_msg_id");
    else
        drop (arg, rc == -1 ? bn_merged_reader_error (reader)
                            : "out of memory for a merged reply");
    for (size_t i = 0; i < count; i++)
        s_piece_clear (&pieces[i]);
    free (pieces);
    bn_merged_reader_destroy (&reader);
    json_decref (merged.ok);
    json_decref (merged.hops);
    json_decref (merged.base);
    return changed;
}

bool
bn_replies_on_reply (bn_tracker_t *tracker, bn_engines_t *engines,
                     bn_msg_t *msg, bool broadcast, bn_replies_drop_fn *drop,
                     void *arg)
{
    assert (tracker);
    assert (engines);
    assert (msg);
    assert (drop);
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    const char *msg_id = bn_msg_parent_id (msg);
    if (!type || !content || !msg_id) {
        drop (arg, "reply without type, content or parent");
        return false;
    }
    //  a merged reply's entries are read without a tree of its metadata
    if (broadcast && bn_merged_shape (msg) != BN_MERGED_NONE)
        return s_on_merged (tracker, engines, msg, drop, arg);
    s_metadata_t md;
    if (s_metadata_read (msg, &md) != 0) {
        drop (arg, "reply without metadata");
        return false;
    }
    bn_value_t *value = NULL;
    int error = 0;
    char problem[256] = "";
    const char *status = s_str (content, "status");
    if (strcmp (type, BN_MSG_APPLY_REPLY) == 0 && status &&
        strcmp (status, BN_STATUS_OK) == 0) {
        size_t used;
        value = bn_replies_decode (msg, 0, SIZE_MAX, &used, &error, problem,
                                   sizeof problem);
    }
    bool changed = false;
    bn_tracker_lock (tracker);
    bn_item_t *item = bn_tracker_find (tracker, msg_id);
    if (item) {
        int engine_id = -1;
        if (!bn_item_engine_uuid (item))
            engine_id = bn_engines_id_of (engines, md.engine);
        bn_result_count_message (bn_item_result (item));
        changed =
            s_deliver_plain (item, msg, &md, value, error, problem, engine_id);
        value = NULL;
        if (changed)
            bn_tracker_untrack (tracker, item);
    }
    bn_tracker_unlock (tracker);
    s_metadata_clear (&md);
    if (!item) {
        bn_value_destroy (&value);
        drop (arg, "reply to no outstanding request");
    }
    return changed;
}

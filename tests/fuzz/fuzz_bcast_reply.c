/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_bcast_reply: the merged broadcast reply as the tree's nodes, the
    records and the client read it (bn_merged_reader), in its three
    shapes: broadcast_targets with bn_replies (or 7.1.0's targets alone),
    bn_groups and bn_reduced. The input is a frame list (bn_fuzz.h): the
    header, parent, metadata and content, then the buffers.

    A refused reply says why. An accepted one must read as jansson reads
    its metadata (the second parser: the same engines, statuses, buffer
    counts and contents), the same whether its lists are spliced in as a
    node writes them or anywhere in the metadata (a splice the reader
    refuses aside), the same again once
    written back with bn_merged_writer's builders, and a tree node's
    group table (bn_group_add_merged) takes every engine of it.  */
#include "bn_fuzz.h"
#include "bn_group.h"
#include "bn_idset.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"

#include <jansson.h>
#include <limits.h>

#define S_MAX_ENTRIES 256 //  entries compared (the rest are only read)

//  One entry as read, copied out of the reader.
typedef struct {
    char *uuid;          //  targets: the engine's uuid
    int eid;             //  targets: its id, or -1
    bn_idset_t *engines; //  groups, reduced: the engines
    bool failure;        //  reduced: a failure
    char *status;        //  its status
    bool ok;             //  status is "ok"
    bool sized;          //  it says how many buffers it has
    size_t first;        //  its first buffer
    size_t nbuffers;     //  its buffers (when sized)
    char *text;          //  its JSON object's text, or NULL
    json_t *content;     //  its content, or NULL
    char *strings[4];    //  started, completed, bn_stdout, bn_stderr
} s_entry_t;

//  What a reader made of a message.
typedef struct {
    bn_merged_shape_t shape;
    int rc; //  0 read to the end, -1 malformed, -2 an entry malformed
    char error[256];
    bool spliced;
    char *op;             //  reduced: op
    json_t *reduce_error; //  reduced: the reduction's error
    s_entry_t *entries;   //  the first S_MAX_ENTRIES
    size_t count;         //  entries read
    size_t engines;       //  engines named
} s_read_t;

static char *
s_slice_dup (bn_jscan_slice_t slice)
{
    if (!slice.data)
        return NULL;
    char *text = malloc (slice.size + 1);
    BN_FUZZ_CHECK (text);
    memcpy (text, slice.data, slice.size);
    text[slice.size] = 0;
    return text;
}

static void
s_read (bn_msg_t *msg, s_read_t *read)
{
    memset (read, 0, sizeof *read);
    read->entries = calloc (S_MAX_ENTRIES, sizeof (s_entry_t));
    BN_FUZZ_CHECK (read->entries);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    BN_FUZZ_CHECK (reader);
    read->shape = bn_merged_reader_shape (reader);
    BN_FUZZ_CHECK (read->shape == bn_merged_shape (msg));
    bn_merged_entry_t entry;
    int rc;
    while ((rc = bn_merged_reader_next (reader, &entry)) == 1) {
        BN_FUZZ_CHECK ((entry.uuid != NULL) != (entry.engines != NULL));
        BN_FUZZ_CHECK (entry.status &&
                       entry.ok == !strcmp (entry.status, "ok"));
        read->engines += entry.uuid ? 1 : bn_idset_count (entry.engines);
        if (read->count < S_MAX_ENTRIES) {
            s_entry_t *copy = &read->entries[read->count];
            copy->uuid = entry.uuid ? strdup (entry.uuid) : NULL;
            copy->eid = entry.eid;
            copy->engines = entry.engines ? bn_idset_dup (entry.engines) : NULL;
            copy->failure = entry.failure;
            copy->status = strdup (entry.status);
            copy->ok = entry.ok;
            copy->sized = entry.sized;
            copy->first = entry.first;
            copy->nbuffers = entry.nbuffers;
            copy->text = s_slice_dup (entry.text);
            copy->content = bn_merged_json (entry.content);
            bn_jscan_slice_t strings[4] = {entry.started, entry.completed,
                                           entry.out, entry.err};
            for (int i = 0; i < 4; i++)
                copy->strings[i] = bn_merged_string (strings[i]);
        }
        read->count++;
    }
    read->rc = rc;
    snprintf (read->error, sizeof read->error, "%s",
              bn_merged_reader_error (reader));
    read->spliced = bn_merged_reader_spliced (reader);
    if (bn_merged_reader_op (reader))
        read->op = strdup (bn_merged_reader_op (reader));
    read->reduce_error = bn_merged_reader_reduce_error (reader);
    //  past a malformed entry (-2) the reader may go on
    BN_FUZZ_CHECK (rc == -2 || bn_merged_reader_next (reader, &entry) == rc);
    bn_merged_reader_destroy (&reader);
}

static void
s_read_clear (s_read_t *read)
{
    for (size_t i = 0; i < read->count && i < S_MAX_ENTRIES; i++) {
        s_entry_t *entry = &read->entries[i];
        free (entry->uuid);
        bn_idset_destroy (&entry->engines);
        free (entry->status);
        free (entry->text);
        json_decref (entry->content);
        for (int k = 0; k < 4; k++)
            free (entry->strings[k]);
    }
    free (read->entries);
    free (read->op);
    json_decref (read->reduce_error);
    memset (read, 0, sizeof *read);
}

static bool
s_same_str (const char *a, const char *b)
{
    return (a == NULL) == (b == NULL) && (!a || strcmp (a, b) == 0);
}

static bool
s_same_json (json_t *a, json_t *b)
{
    return (a == NULL) == (b == NULL) && (!a || json_equal (a, b));
}

//  Two readings of what must be the same reply agree entry by entry
//  (their entries' texts may be written differently).
static void
s_check_same (const s_read_t *a, const s_read_t *b, const char *what)
{
    bool same = a->shape == b->shape && a->rc == b->rc &&
                a->count == b->count && a->engines == b->engines &&
                s_same_str (a->op, b->op) &&
                s_same_json (a->reduce_error, b->reduce_error);
    for (size_t i = 0; same && i < a->count && i < S_MAX_ENTRIES; i++) {
        const s_entry_t *x = &a->entries[i], *y = &b->entries[i];
        same = s_same_str (x->uuid, y->uuid) && x->eid == y->eid &&
               (x->engines == NULL) == (y->engines == NULL) &&
               (!x->engines || bn_idset_equal (x->engines, y->engines)) &&
               x->failure == y->failure && !strcmp (x->status, y->status) &&
               x->ok == y->ok && x->sized == y->sized && x->first == y->first &&
               x->nbuffers == y->nbuffers &&
               s_same_json (x->content, y->content);
        for (int k = 0; same && k < 4; k++)
            same = s_same_str (x->strings[k], y->strings[k]);
        if (!same)
            fprintf (stderr, "entry %zu differs\n", i);
    }
    if (!same) {
        fprintf (stderr,
                 "%s: read as rc %d, %zu entries (%s) and rc %d, %zu "
                 "entries (%s)\n",
                 what, a->rc, a->count, a->error, b->rc, b->count, b->error);
        abort ();
    }
}

//  A message of these parts and buffers; a NULL part is {}.
static bn_msg_t *
s_message (const void *const parts[4], const size_t sizes[4],
           const bn_fuzz_frames_t *frames, size_t first_buffer)
{
    bn_msg_t *msg = bn_msg_new_parts (parts, sizes);
    BN_FUZZ_CHECK (msg);
    for (size_t i = first_buffer; i < frames->count; i++)
        BN_FUZZ_CHECK (
            bn_msg_add_buffer (msg, frames->data[i], frames->size[i]) == 0);
    return msg;
}

//  The same message with other metadata.
static bn_msg_t *
s_with_metadata (bn_msg_t *msg, const char *metadata,
                 const bn_fuzz_frames_t *frames, size_t first_buffer)
{
    const void *parts[4];
    size_t sizes[4];
    for (int i = 0; i < 4; i++)
        parts[i] = bn_msg_part_data (msg, (bn_part_t)i, &sizes[i]);
    parts[BN_PART_METADATA] = metadata;
    sizes[BN_PART_METADATA] = strlen (metadata);
    return s_message (parts, sizes, frames, first_buffer);
}

static int
s_depth (json_t *value)
{
    int deepest = 0;
    size_t index;
    const char *key;
    json_t *item;
    if (json_is_object (value))
        json_object_foreach (value, key, item)
        {
            int d = s_depth (item);
            deepest = d > deepest ? d : deepest;
        }
    else if (json_is_array (value))
        json_array_foreach (value, index, item)
        {
            int d = s_depth (item);
            deepest = d > deepest ? d : deepest;
        }
    else
        return 0;
    return deepest + 1;
}

//  The status of an entry or content as jansson reads it, or fallback
//  when it has none; one the reader's buffer (31 bytes) cannot hold reads
//  as "error".
static const char *
s_status_of (json_t *entry, const char *fallback)
{
    const char *status = json_string_value (json_object_get (entry, "status"));
    if (!status)
        return fallback;
    return strlen (status) < 32 ? status : BN_STATUS_ERROR;
}

static bool
s_same_set (bn_idset_t *set, json_t *text)
{
    bn_idset_t *want = json_is_string (text)
                           ? bn_idset_parse (json_string_value (text))
                           : NULL;
    bool same = want && set && bn_idset_equal (set, want);
    bn_idset_destroy (&want);
    return same;
}

//  What the reader read is what jansson reads in the metadata object md.
static void
s_check_jansson (const s_read_t *read, json_t *md, bn_msg_t *msg)
{
    size_t count = read->count < S_MAX_ENTRIES ? read->count : S_MAX_ENTRIES;
    const char *what = NULL;
    if (read->shape == BN_MERGED_TARGETS) {
        json_t *targets = json_object_get (md, BN_BCAST_TARGETS);
        json_t *replies = json_object_get (md, BN_BCAST_REPLIES);
        //  7.1.0's targets alone share the message's status
        json_t *content = bn_msg_content (msg);
        const char *merged = s_status_of (content, BN_STATUS_ERROR);
        if (json_array_size (targets) != read->count)
            what = "the number of targets";
        for (size_t i = 0; !what && i < count; i++) {
            const s_entry_t *entry = &read->entries[i];
            json_t *target = json_array_get (targets, i);
            json_t *uuid =
                json_is_array (target) ? json_array_get (target, 0) : target;
            json_t *eid = json_array_get (target, 1);
            json_t *reply = json_array_get (replies, i);
            if (!json_is_string (uuid) ||
                strcmp (json_string_value (uuid), entry->uuid))
                what = "a target's uuid";
            else if (entry->eid != (eid ? (int)json_integer_value (eid) : -1))
                what = "a target's engine id";
            else if (strcmp (entry->status,
                             replies ? s_status_of (reply, "?") : merged) &&
                     (replies || content))
                what = "a target's status";
            else if (replies && entry->sized &&
                     (json_int_t)entry->nbuffers !=
                         json_integer_value (
                             json_object_get (reply, "nbuffers")))
                what = "a target's buffer count";
            else if (replies &&
                     !s_same_json (entry->content,
                                   json_object_get (reply, "content")))
                what = "a target's content";
        }
    } else if (read->shape == BN_MERGED_GROUPS) {
        json_t *groups = json_object_get (md, BN_BCAST_GROUPS);
        if (json_array_size (groups) != read->count)
            what = "the number of groups";
        for (size_t i = 0; !what && i < count; i++) {
            const s_entry_t *entry = &read->entries[i];
            json_t *group = json_array_get (groups, i);
            if (!s_same_set (entry->engines,
                             json_object_get (group, "engines")))
                what = "a group's engines";
            else if (strcmp (entry->status, s_status_of (group, "?")))
                what = "a group's status";
            else if ((json_int_t)entry->nbuffers !=
                     json_integer_value (json_object_get (group, "nbuffers")))
                what = "a group's buffer count";
            else if (!s_same_json (entry->content,
                                   json_object_get (group, "content")))
                what = "a group's content";
        }
    } else if (read->shape == BN_MERGED_REDUCED) {
        json_t *reduced = json_object_get (md, BN_BCAST_REDUCED);
        json_t *failed = json_object_get (reduced, "failed");
        if (read->count != 1 + json_array_size (failed))
            what = "the number of reduced entries";
        else if (!s_same_str (read->op, json_string_value (
                                            json_object_get (reduced, "op"))))
            what = "the reduction's op";
        else if (!s_same_set (read->entries[0].engines,
                              json_object_get (reduced, "engines")))
            what = "the contributors";
        for (size_t i = 1; !what && i < count; i++) {
            const s_entry_t *entry = &read->entries[i];
            json_t *failure = json_array_get (failed, i - 1);
            json_t *content = json_object_get (failure, "content");
            if (!entry->failure ||
                !s_same_set (entry->engines,
                             json_object_get (failure, "engines")))
                what = "a failure's engines";
            else if (strcmp (entry->status, s_status_of (content, "error")))
                what = "a failure's status";
            else if (!s_same_json (entry->content, content))
                what = "a failure's content";
        }
    }
    if (what) {
        fprintf (stderr, "the reader and jansson disagree on %s\n", what);
        abort ();
    }
}

//  The reply written back with the writer's builders reads the same.
static void
s_check_rewritten (const s_read_t *read, bn_msg_t *msg,
                   const bn_fuzz_frames_t *frames, size_t first_buffer)
{
    if (read->count > S_MAX_ENTRIES)
        return;
    json_t *base = bn_merged_base (msg, read->spliced);
    if (!json_is_object (base)) {
        json_decref (base);
        return;
    }
    bn_msg_t *again = NULL;
    if (read->shape == BN_MERGED_TARGETS) {
        //  as a merging node passes its children's entries on
        bool entries = true;
        for (size_t i = 0; i < read->count; i++)
            entries =
                entries && read->entries[i].text && read->entries[i].eid >= 0;
        if (entries) {
            bn_merged_writer_t *writer = bn_merged_writer_new ();
            BN_FUZZ_CHECK (writer);
            for (size_t i = 0; i < read->count; i++)
                bn_merged_writer_add (
                    writer, read->entries[i].uuid, read->entries[i].eid,
                    read->entries[i].text, strlen (read->entries[i].text));
            again = s_with_metadata (msg, "{}", frames, first_buffer);
            BN_FUZZ_CHECK (bn_merged_writer_finish (writer, base, again) == 0);
            bn_merged_writer_destroy (&writer);
        }
    } else if (read->shape == BN_MERGED_GROUPS) {
        json_t *groups = json_array ();
        for (size_t i = 0; i < read->count; i++) {
            const s_entry_t *entry = &read->entries[i];
            char *engines = bn_idset_encode (entry->engines);
            json_array_append_new (
                groups, bn_merged_group (engines, entry->status,
                                         entry->nbuffers, entry->content,
                                         entry->strings[2], entry->strings[3]));
            free (engines);
        }
        json_object_set_new (base, BN_BCAST_GROUPS, groups);
    } else if (read->shape == BN_MERGED_REDUCED) {
        char *engines = bn_idset_encode (read->entries[0].engines);
        json_t *reduced = bn_merged_reduced (read->op, engines);
        free (engines);
        BN_FUZZ_CHECK (reduced);
        for (size_t i = 1; i < read->count; i++) {
            engines = bn_idset_encode (read->entries[i].engines);
            BN_FUZZ_CHECK (bn_merged_reduced_fail (reduced, engines,
                                                   read->entries[i].content) ==
                           0);
            free (engines);
        }
        if (read->reduce_error)
            BN_FUZZ_CHECK (
                bn_merged_reduced_set_error (reduced, read->reduce_error) == 0);
        json_object_set_new (base, BN_BCAST_REDUCED, reduced);
    }
    if (!again && read->shape != BN_MERGED_TARGETS) {
        char *text = json_dumps (base, JSON_COMPACT);
        BN_FUZZ_CHECK (text);
        again = s_with_metadata (msg, text, frames, first_buffer);
        free (text);
    }
    if (again) {
        s_read_t written;
        s_read (again, &written);
        s_check_same (read, &written, "written back by the writer");
        //  as a node writes it, read through the splice (unless the base
        //  holds the key too, nested, which the reader then walks past)
        char *base_text = json_dumps (base, JSON_COMPACT);
        BN_FUZZ_CHECK (base_text);
        if (read->shape == BN_MERGED_TARGETS &&
            !strstr (base_text, "\"" BN_BCAST_TARGETS "\""))
            BN_FUZZ_CHECK (written.spliced);
        free (base_text);
        s_read_clear (&written);
        bn_msg_destroy (&again);
    }
    json_decref (base);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    bn_fuzz_frames_t frames;
    bn_fuzz_frames (data, size, &frames);
    const void *parts[4] = {NULL, NULL, NULL, NULL};
    size_t sizes[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < 4 && i < frames.count; i++) {
        parts[i] = frames.data[i];
        sizes[i] = frames.size[i];
    }
    size_t first_buffer = frames.count < 4 ? frames.count : 4;
    bn_msg_t *msg = s_message (parts, sizes, &frames, first_buffer);

    s_read_t read;
    s_read (msg, &read);
    int engines = bn_merged_engines (msg);
    if (read.shape == BN_MERGED_NONE)
        BN_FUZZ_CHECK (engines == -1);
    else
        BN_FUZZ_CHECK (engines == (read.rc == 0 ? (int)(read.engines < INT_MAX
                                                            ? read.engines
                                                            : INT_MAX)
                                                : 0));
    if (read.rc < 0) {
        BN_FUZZ_CHECK (read.error[0] != 0);
    } else {
        //  the entries name the buffers in order, all of them when each
        //  says how many it has
        size_t next = 0;
        bool sized = true;
        for (size_t i = 0; i < read.count && i < S_MAX_ENTRIES; i++) {
            if (sized)
                BN_FUZZ_CHECK (read.entries[i].first == next);
            next += read.entries[i].nbuffers;
            sized = sized && read.entries[i].sized;
        }
        if (sized && read.count <= S_MAX_ENTRIES)
            BN_FUZZ_CHECK (next == bn_msg_nbuffers (msg));
    }

    //  jansson's reading, and the same metadata written by jansson (its
    //  keys sorted, so that no node's splicing is left to read)
    size_t md_size;
    const char *md_text = bn_msg_part_data (msg, BN_PART_METADATA, &md_size);
    json_t *md = memchr (md_text, 0, md_size)
                     ? NULL
                     : json_loadb (md_text, md_size, 0, NULL);
    if (json_is_object (md) && s_depth (md) <= 512) {
        if (read.rc == 0)
            s_check_jansson (&read, md, msg);
        char *text = json_dumps (md, JSON_COMPACT | JSON_SORT_KEYS);
        BN_FUZZ_CHECK (text);
        bn_msg_t *sorted = s_with_metadata (msg, text, &frames, first_buffer);
        free (text);
        s_read_t resorted;
        s_read (sorted, &resorted);
        //  (lists spliced in and then refused, as with a key written twice,
        //  are a peer's error the reader need not see past)
        if (!(read.spliced && read.rc < 0))
            s_check_same (&read, &resorted, "the metadata written by jansson");
        s_read_clear (&resorted);
        bn_msg_destroy (&sorted);
    }
    json_decref (md);

    if (read.rc == 0) {
        s_check_rewritten (&read, msg, &frames, first_buffer);

        //  a tree node takes a child's groups whole, or refuses them whole
        //  when two name the same engine
        if (read.shape == BN_MERGED_GROUPS) {
            bn_group_t *table = bn_group_new ();
            BN_FUZZ_CHECK (table);
            char err[256] = "";
            int rc = bn_group_add_merged (table, msg, err, sizeof err);
            bn_idset_t *all = bn_idset_new ();
            BN_FUZZ_CHECK (all);
            for (size_t i = 0; i < read.count && i < S_MAX_ENTRIES; i++) {
                char *text = bn_idset_encode (read.entries[i].engines);
                BN_FUZZ_CHECK (text && bn_idset_add_text (all, text) == 0);
                free (text);
            }
            if (read.count <= S_MAX_ENTRIES) {
                bool overlap = bn_idset_count (all) != read.engines;
                BN_FUZZ_CHECK (rc == (overlap ? -1 : 0));
                if (rc == 0)
                    BN_FUZZ_CHECK (bn_group_engines_total (table) ==
                                   read.engines);
            }
            BN_FUZZ_CHECK (rc == 0 || err[0] != 0);
            bn_idset_destroy (&all);
            bn_group_destroy (&table);
        }
    }
    s_read_clear (&read);
    bn_msg_destroy (&msg);
    return 0;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_merged: the merged broadcast reply codec over the corpus in
    tests/data/merged (replies of every shape as the tree writes them,
    7.1.0's, and malformed ones): the reader's entries, the writer's bytes,
    and what the hub's records and the client's decoding make of each
    reply.

    A corpus file has one line per part, a tab after its name: about,
    header, parent, metadata, content, buffer (hex, one per buffer), then
    what the reply must read as, in order: `entry <uuid or engines> <eid>
    <status> <first buffer> <nbuffers or ->` per entry, and `error <text>`
    for a malformed entry read past or, with a `fatal` line, the place the
    reader stops at; `engines <n>` (bn_merged_engines); `spliced yes|no`
    for the targets shape.  */
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_records.h"
#include "bn_replies.h"
#include "bn_result_private.h"
#include "bn_session.h"

#include <check.h>
#include <czmq.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_CORPUS BN_SOURCE_DIR "/tests/data/merged"
#define S_FILES_MAX 128

//  One corpus file.
typedef struct {
    char *name;        //  file name
    zlist_t *lines;    //  its lines, split at the first tab: "key\tvalue"
    bn_msg_t *msg;     //  the reply
    const char *error; //  the (first) reader error it must give, or NULL
    bool fatal;        //  the reader stops at it
    int engines;       //  what bn_merged_engines must say
    int spliced;       //  1 yes, 0 no, -1 not said
} s_case_t;

static char *s_names[S_FILES_MAX];
static size_t s_nnames;

//  The value of a line with key (the first one), or NULL.
static const char *
s_value (s_case_t *self, const char *key)
{
    size_t len = strlen (key);
    for (char *line = zlist_first (self->lines); line;
         line = zlist_next (self->lines))
        if (strncmp (line, key, len) == 0 && line[len] == '\t')
            return line + len + 1;
    return NULL;
}

static s_case_t *
s_case_load (const char *name)
{
    char path[512];
    snprintf (path, sizeof path, "%s/%s", S_CORPUS, name);
    zfile_t *file = zfile_new (NULL, path);
    ck_assert_msg (file && zfile_input (file) == 0, "cannot read %s", path);
    s_case_t *self = calloc (1, sizeof *self);
    self->name = strdup (name);
    self->lines = zlist_new ();
    zlist_autofree (self->lines);
    const char *line;
    while ((line = zfile_readln (file)))
        zlist_append (self->lines, (void *)line);
    zfile_destroy (&file);
    const char *keys[] = {"header", "parent", "metadata", "content"};
    const void *data[4];
    size_t sizes[4];
    for (int i = 0; i < 4; i++) {
        data[i] = s_value (self, keys[i]);
        ck_assert_msg (data[i] != NULL, "%s has no %s", name, keys[i]);
        sizes[i] = strlen (data[i]);
    }
    self->msg = bn_msg_new_parts (data, sizes);
    ck_assert_ptr_nonnull (self->msg);
    for (char *l = zlist_first (self->lines); l; l = zlist_next (self->lines))
        if (strncmp (l, "buffer\t", 7) == 0) {
            size_t size = strlen (l + 7) / 2;
            unsigned char *bytes = malloc (size + 1);
            for (size_t i = 0; i < size; i++)
                sscanf (l + 7 + 2 * i, "%2hhx", &bytes[i]);
            bn_msg_add_buffer (self->msg, bytes, size);
            free (bytes);
        }
    self->error = s_value (self, "error");
    self->fatal = s_value (self, "fatal") != NULL;
    const char *engines = s_value (self, "engines");
    ck_assert_msg (engines != NULL, "%s has no engines line", name);
    self->engines = atoi (engines);
    const char *spliced = s_value (self, "spliced");
    self->spliced = spliced ? strcmp (spliced, "yes") == 0 : -1;
    return self;
}

static void
s_case_destroy (s_case_t **self_p)
{
    s_case_t *self = *self_p;
    bn_msg_destroy (&self->msg);
    zlist_destroy (&self->lines);
    free (self->name);
    free (self);
    *self_p = NULL;
}

//  An entry as its corpus line's value.
static char *
s_entry_line (const bn_merged_entry_t *entry)
{
    char *engines = entry->engines ? bn_idset_encode (entry->engines) : NULL;
    char count[24];
    if (entry->sized)
        snprintf (count, sizeof count, "%zu", entry->nbuffers);
    else
        snprintf (count, sizeof count, "-");
    char *line = zsys_sprintf ("%s\t%d\t%s\t%zu\t%s",
                               entry->uuid ? entry->uuid : engines, entry->eid,
                               entry->status, entry->first, count);
    free (engines);
    return line;
}

//  The next line of c that is an entry or an error, from *line on.
static char *
s_expected (s_case_t *c, char *line)
{
    while (line && strncmp (line, "entry\t", 6) != 0 &&
           strncmp (line, "error\t", 6) != 0)
        line = zlist_next (c->lines);
    return line;
}

//  A reader of corpus file c, stepped through to its end: every entry it
//  reads, and every malformed entry it goes past (-2) or stops at (-1),
//  against the file's entry and error lines in order.
static void
s_check_reader (s_case_t *c)
{
    bn_merged_reader_t *reader = bn_merged_reader_new (c->msg);
    ck_assert_ptr_nonnull (reader);
    bn_merged_entry_t entry;
    int rc;
    char *expected = s_expected (c, zlist_first (c->lines));
    while ((rc = bn_merged_reader_next (reader, &entry)) != 0) {
        ck_assert_msg (expected != NULL, "%s: read %d past the end", c->name,
                       rc);
        if (rc == 1) {
            char *line = s_entry_line (&entry);
            ck_assert_msg (strcmp (line, expected + 6) == 0 &&
                               strncmp (expected, "entry", 5) == 0,
                           "%s: entry\n  %s\nnot\n  %s", c->name, line,
                           expected);
            ck_assert (entry.ok == (strcmp (entry.status, BN_STATUS_OK) == 0));
            free (line);
        } else
            ck_assert_msg (
                strncmp (expected, "error", 5) == 0 &&
                    strcmp (bn_merged_reader_error (reader), expected + 6) == 0,
                "%s: error %d '%s', not %s", c->name, rc,
                bn_merged_reader_error (reader), expected);
        expected = s_expected (c, zlist_next (c->lines));
        if (rc == -1)
            break;
    }
    ck_assert_msg (expected == NULL, "%s: %s not read", c->name, expected);
    if (rc == -1)
        //  a reader that failed stays failed
        ck_assert_int_eq (bn_merged_reader_next (reader, &entry), -1);
    else
        ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 0);
    ck_assert_msg ((rc == -1) == (c->error && c->fatal), "%s: ends with %d",
                   c->name, rc);
    if (c->spliced >= 0)
        ck_assert_msg (bn_merged_reader_spliced (reader) == (c->spliced == 1),
                       "%s: spliced is %d", c->name,
                       bn_merged_reader_spliced (reader));
    bn_merged_reader_destroy (&reader);
    ck_assert_ptr_null (reader);
}

START_TEST (test_usage)
{
    //  A client or a parent node walks a merged reply's entries.
    s_case_t *c = s_case_load ("targets_error.msg");
    ck_assert_int_eq (bn_merged_shape (c->msg), BN_MERGED_TARGETS);
    bn_merged_reader_t *reader = bn_merged_reader_new (c->msg);
    ck_assert_int_eq (bn_merged_reader_shape (reader), BN_MERGED_TARGETS);
    bn_merged_entry_t entry;
    size_t count = 0, failed = 0, buffers = 0;
    while (bn_merged_reader_next (reader, &entry) == 1) {
        ck_assert_ptr_nonnull (entry.uuid);
        ck_assert_int_eq (entry.eid, (int)count);
        ck_assert_uint_eq (entry.first, buffers);
        buffers += entry.nbuffers;
        if (!entry.ok) {
            //  a failure carries its error content
            json_t *content = bn_merged_json (entry.content);
            ck_assert_str_eq (
                json_string_value (json_object_get (content, "ename")),
                "ValueError");
            json_decref (content);
            failed++;
        }
        char *started = bn_merged_string (entry.started);
        ck_assert_str_eq (started, "2026-01-01T00:00:00.000000Z");
        free (started);
        count++;
    }
    ck_assert_str_eq (bn_merged_reader_error (reader), "");
    ck_assert_uint_eq (count, 4);
    ck_assert_uint_eq (failed, 1);
    ck_assert_uint_eq (buffers, bn_msg_nbuffers (c->msg));
    bn_merged_reader_destroy (&reader);
    bn_merged_reader_destroy (&reader);
    s_case_destroy (&c);
}
END_TEST

START_TEST (test_reader)
{
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        s_check_reader (c);
        s_case_destroy (&c);
    }
}
END_TEST

START_TEST (test_engines)
{
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        ck_assert_msg (bn_merged_engines (c->msg) == c->engines,
                       "%s: %d engines, not %d", c->name,
                       bn_merged_engines (c->msg), c->engines);
        bool merged = c->engines >= 0;
        ck_assert_msg ((bn_merged_shape (c->msg) != BN_MERGED_NONE) == merged,
                       "%s: shape %d", c->name, bn_merged_shape (c->msg));
        s_case_destroy (&c);
    }
}
END_TEST

//  A reply whose metadata part is the text md, as a peer may send it.
static bn_msg_t *
s_raw_reply (bn_session_t *session, const char *md)
{
    bn_msg_t *msg = bn_msg_new (session, BN_MSG_APPLY_REPLY);
    ck_assert_ptr_nonnull (msg);
    ck_assert_int_eq (
        bn_msg_set_part_raw (msg, BN_PART_METADATA, md, strlen (md)), 0);
    return msg;
}

//  The shape goes by the keys of the metadata's top-level object: a key
//  nested in a value or quoted in a string is a single engine's metadata,
//  an escaped key is the key, and text that is not JSON goes by the keys
//  written in it, for the reader to refuse.
START_TEST (test_shape)
{
    struct {
        const char *metadata;
        bn_merged_shape_t shape;
    } cases[] = {
        {"{\"status\":\"ok\"}", BN_MERGED_NONE},
        {"{\"user\":{\"" BN_BCAST_TARGETS "\":[[\"u\",1]]}}", BN_MERGED_NONE},
        {"{\"note\":\"\\\"" BN_BCAST_TARGETS "\\\":[\",\"a\":1}",
         BN_MERGED_NONE},
        {"{\"x\":[{\"" BN_BCAST_GROUPS "\":[]}],\"" BN_BCAST_REDUCED "\":{}}",
         BN_MERGED_REDUCED},
        {"{\"broadcast\\u005ftargets\":[]}", BN_MERGED_TARGETS},
        {"{\"a\":{\"" BN_BCAST_TARGETS "\":[]},\"" BN_BCAST_TARGETS "\":[]}",
         BN_MERGED_TARGETS},
        {"{\"" BN_BCAST_GROUPS "\":[", BN_MERGED_GROUPS},
    };
    bn_session_t *session = bn_session_new ("key", NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_msg_t *msg = s_raw_reply (session, cases[i].metadata);
        ck_assert_msg (bn_merged_shape (msg) == cases[i].shape,
                       "%s: shape %d, not %d", cases[i].metadata,
                       bn_merged_shape (msg), cases[i].shape);
        if (cases[i].shape == BN_MERGED_NONE)
            ck_assert_int_eq (bn_merged_engines (msg), -1);
        bn_msg_destroy (&msg);
    }
    bn_session_destroy (&session);
}
END_TEST

//  A replies key nested in a value after the targets, in a text that ends
//  as a node's splice does, is not the list of the targets' replies.
START_TEST (test_nested_replies)
{
    const char *md = "{\"" BN_BCAST_TARGETS
                     "\":[[\"u\",1]],\"y\":[{\"a\":[1],\"" BN_BCAST_REPLIES
                     "\":[{\"status\":\"ok\",\"nbuffers\":0}]}]}";
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *msg = s_raw_reply (session, md);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    ck_assert_ptr_nonnull (reader);
    ck_assert (!bn_merged_reader_spliced (reader));
    bn_merged_entry_t entry;
    int rc;
    while ((rc = bn_merged_reader_next (reader, &entry)) == 1)
        ck_assert_msg (entry.status == NULL || strcmp (entry.status, "ok") != 0,
                       "an entry read from the nested list");
    ck_assert (!bn_merged_reader_spliced (reader));
    bn_merged_reader_destroy (&reader);
    bn_msg_destroy (&msg);
    bn_session_destroy (&session);
}
END_TEST

//  -0 is a count of 0, as JSON parsers read it: the same entry as the
//  metadata written again by jansson.
START_TEST (test_minus_zero)
{
    const char *md =
        "{\"" BN_BCAST_TARGETS "\":[[\"v\",-0]],\"" BN_BCAST_REPLIES
        "\":[{\"status\":\"ok\",\"started\":null,"
        "\"completed\":null,\"nbuffers\":-0}]}";
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *msg = s_raw_reply (session, md);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    ck_assert_ptr_nonnull (reader);
    bn_merged_entry_t entry;
    ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 1);
    ck_assert_str_eq (entry.uuid, "v");
    ck_assert_int_eq (entry.eid, 0);
    ck_assert_uint_eq (entry.nbuffers, 0);
    ck_assert (entry.ok);
    ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 0);
    ck_assert_str_eq (bn_merged_reader_error (reader), "");
    bn_merged_reader_destroy (&reader);
    bn_msg_destroy (&msg);
    bn_session_destroy (&session);
}
END_TEST

//  Every entry of the tree's targets replies written again from its
//  fields, and the whole metadata from the base and the entries: the same
//  bytes as the node wrote.
START_TEST (test_writer)
{
    size_t rewritten = 0;
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        if (c->spliced != 1) {
            s_case_destroy (&c);
            continue;
        }
        bn_merged_reader_t *reader = bn_merged_reader_new (c->msg);
        bn_merged_writer_t *writer = bn_merged_writer_new ();
        bn_merged_entry_t entry;
        size_t entries = 0;
        while (bn_merged_reader_next (reader, &entry) == 1) {
            entries++;
            char *started = bn_merged_string (entry.started);
            char *completed = bn_merged_string (entry.completed);
            char *out = bn_merged_string (entry.out);
            char *err = bn_merged_string (entry.err);
            json_t *content = bn_merged_json (entry.content);
            char *text = bn_merged_entry (entry.status, started, completed,
                                          entry.nbuffers, content, out, err);
            ck_assert_uint_eq (strlen (text), entry.text.size);
            ck_assert_msg (memcmp (text, entry.text.data, entry.text.size) == 0,
                           "%s: entry\n  %s\nnot\n  %.*s", c->name, text,
                           (int)entry.text.size, entry.text.data);
            bn_merged_writer_add (writer, entry.uuid, entry.eid, text,
                                  strlen (text));
            free (text);
            free (started);
            free (completed);
            free (out);
            free (err);
            json_decref (content);
        }
        ck_assert_str_eq (bn_merged_reader_error (reader), "");
        //  the part before the spliced lists is the rest of the metadata
        json_t *base = bn_merged_base (c->msg, true);
        ck_assert_ptr_nonnull (base);
        ck_assert_ptr_null (json_object_get (base, BN_BCAST_TARGETS));
        json_t *walked = bn_merged_base (c->msg, false);
        ck_assert (json_equal (base, walked));
        //  the same as text, a key dropped, and a key's raw value
        const char *drop[] = {BN_MD_ORIGINAL_MSG_ID, BN_BCAST_TARGETS,
                              BN_BCAST_REPLIES, BN_BCAST_GROUPS,
                              BN_BCAST_REDUCED};
        json_t *expect = json_deep_copy (base);
        json_object_del (expect, BN_MD_ORIGINAL_MSG_ID);
        for (int spliced = 0; spliced < 2; spliced++) {
            size_t size;
            char *text = bn_merged_base_text (c->msg, spliced, drop, 5, &size);
            ck_assert_ptr_nonnull (text);
            char *closed = zsys_sprintf ("%.*s}", (int)size, text);
            json_t *read = json_loads (closed, 0, NULL);
            ck_assert_msg (json_equal (read, expect), "%s: base text %s",
                           c->name, closed);
            json_decref (read);
            zstr_free (&closed);
            free (text);
            const char *keys[] = {BN_MD_ORIGINAL_MSG_ID};
            bn_jscan_slice_t value;
            char *copy = NULL;
            ck_assert_int_eq (
                bn_merged_base_keys (c->msg, spliced, keys, 1, &value, &copy),
                0);
            char original[256] = "";
            if (value.data)
                ck_assert_int_ge (
                    bn_jscan_unescape (value, original, sizeof original), 0);
            json_t *want = json_object_get (base, BN_MD_ORIGINAL_MSG_ID);
            ck_assert_str_eq (original, want ? json_string_value (want) : "");
            free (copy);
        }
        json_decref (expect);
        ck_assert_ptr_null (json_object_get (walked, BN_BCAST_REPLIES));
        json_decref (walked);
        bn_msg_t *out = bn_msg_dup (c->msg);
        ck_assert_uint_eq (bn_merged_writer_count (writer), entries);
        ck_assert_int_eq (bn_merged_writer_finish (writer, base, out), 0);
        ck_assert_uint_eq (bn_merged_writer_count (writer), 0);
        size_t len, expected_len;
        const char *md = bn_msg_part_data (out, BN_PART_METADATA, &len);
        const char *expected =
            bn_msg_part_data (c->msg, BN_PART_METADATA, &expected_len);
        ck_assert_msg (len == expected_len && memcmp (md, expected, len) == 0,
                       "%s: metadata\n  %.*s\nnot\n  %.*s", c->name, (int)len,
                       md, (int)expected_len, expected);
        json_decref (base);
        bn_msg_destroy (&out);
        bn_merged_writer_destroy (&writer);
        bn_merged_reader_destroy (&reader);
        s_case_destroy (&c);
        rewritten++;
    }
    ck_assert_uint_ge (rewritten, 7);
}
END_TEST

//  Uuids and texts that need escapes go through the writer and come back
//  the same from the reader (not on the in-place path for uuids).
START_TEST (test_escapes)
{
    const char *uuids[] = {"plain-uuid", "q\"uote", "back\\slash",
                           "new\nline\x01"};
    bn_merged_writer_t *writer = bn_merged_writer_new ();
    json_t *content = json_pack ("{s:s, s:s}", "ename", "E\t", "evalue", "é");
    for (int i = 0; i < 4; i++) {
        char *entry = bn_merged_entry (i % 2 ? BN_STATUS_ERROR : BN_STATUS_OK,
                                       uuids[i], NULL, i % 2 ? 0 : 1, content,
                                       i == 2 ? "out\n\"x\"\x1f" : NULL, NULL);
        //  an entry as jansson would write it
        json_t *parsed = json_loads (entry, 0, NULL);
        ck_assert_ptr_nonnull (parsed);
        char *again = json_dumps (parsed, JSON_COMPACT);
        ck_assert_str_eq (entry, again);
        free (again);
        json_decref (parsed);
        bn_merged_writer_add (writer, uuids[i], i, entry, strlen (entry));
        free (entry);
    }
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *msg = bn_msg_new (session, BN_MSG_APPLY_REPLY);
    for (int i = 0; i < 2; i++)
        bn_msg_add_buffer (msg, "r", 1);
    json_t *base = json_pack ("{s:s}", "original_msg_id", "x");
    ck_assert_int_eq (bn_merged_writer_finish (writer, base, msg), 0);
    json_t *md = bn_msg_metadata (msg);
    ck_assert_uint_eq (json_array_size (json_object_get (md, BN_BCAST_TARGETS)),
                       4);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    ck_assert (bn_merged_reader_spliced (reader));
    bn_merged_entry_t entry;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 1);
        ck_assert_str_eq (entry.uuid, uuids[i]);
        ck_assert_int_eq (entry.eid, i);
        char *started = bn_merged_string (entry.started);
        ck_assert_str_eq (started, uuids[i]);
        free (started);
        ck_assert_ptr_null (bn_merged_string (entry.completed));
        ck_assert (entry.ok == !(i % 2));
    }
    ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 0);
    bn_merged_reader_destroy (&reader);
    json_decref (base);
    json_decref (content);
    bn_msg_destroy (&msg);
    bn_session_destroy (&session);
    bn_merged_writer_destroy (&writer);
}
END_TEST

//  Lists written after an empty base (no comma before them) are read
//  through the splice too, and the base read back is empty.
START_TEST (test_empty_base)
{
    bn_merged_writer_t *writer = bn_merged_writer_new ();
    char *entry =
        bn_merged_entry (BN_STATUS_OK, NULL, NULL, 1, NULL, NULL, NULL);
    bn_merged_writer_add (writer, "v", 1, entry, strlen (entry));
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *msg = bn_msg_new (session, BN_MSG_APPLY_REPLY);
    bn_msg_add_buffer (msg, "r", 1);
    json_t *base = json_object ();
    ck_assert_int_eq (bn_merged_writer_finish (writer, base, msg), 0);
    size_t len;
    const char *md = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    const char *expected =
        "{\"" BN_BCAST_TARGETS "\":[[\"v\",1]],\"" BN_BCAST_REPLIES
        "\":[{\"status\":\"ok\",\"started\":null,\"completed\":null,"
        "\"nbuffers\":1}]}";
    ck_assert_msg (len == strlen (expected) && memcmp (md, expected, len) == 0,
                   "metadata %.*s", (int)len, md);
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    ck_assert (bn_merged_reader_spliced (reader));
    bn_merged_entry_t read;
    ck_assert_int_eq (bn_merged_reader_next (reader, &read), 1);
    ck_assert_str_eq (read.uuid, "v");
    ck_assert_int_eq (read.eid, 1);
    ck_assert (read.ok);
    ck_assert_uint_eq (read.nbuffers, 1);
    ck_assert_uint_eq (read.text.size, strlen (entry));
    ck_assert_int_eq (bn_merged_reader_next (reader, &read), 0);
    json_t *again = bn_merged_base (msg, true);
    ck_assert (json_equal (again, base));
    json_decref (again);
    bn_merged_reader_destroy (&reader);
    json_decref (base);
    free (entry);
    bn_msg_destroy (&msg);
    bn_session_destroy (&session);
    bn_merged_writer_destroy (&writer);
}
END_TEST

//  bn_groups and bn_reduced built again from what the reader read: the
//  same JSON as the metadata's.
START_TEST (test_sets_writer)
{
    size_t rebuilt = 0;
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        bn_merged_shape_t shape = bn_merged_shape (c->msg);
        if (c->error ||
            (shape != BN_MERGED_GROUPS && shape != BN_MERGED_REDUCED)) {
            s_case_destroy (&c);
            continue;
        }
        bn_merged_reader_t *reader = bn_merged_reader_new (c->msg);
        json_t *built = shape == BN_MERGED_GROUPS ? json_array () : NULL;
        bn_merged_entry_t entry;
        while (bn_merged_reader_next (reader, &entry) == 1) {
            char *engines = bn_idset_encode (entry.engines);
            json_t *content = bn_merged_json (entry.content);
            if (shape == BN_MERGED_GROUPS) {
                char *out = bn_merged_string (entry.out);
                char *err = bn_merged_string (entry.err);
                json_array_append_new (
                    built, bn_merged_group (engines, entry.status,
                                            entry.nbuffers, content, out, err));
                free (out);
                free (err);
            } else if (!entry.failure)
                built =
                    bn_merged_reduced (bn_merged_reader_op (reader), engines);
            else
                ck_assert_int_eq (
                    bn_merged_reduced_fail (built, engines, content), 0);
            json_decref (content);
            free (engines);
        }
        json_t *error = bn_merged_reader_reduce_error (reader);
        if (error)
            bn_merged_reduced_set_error (built, error);
        json_decref (error);
        json_t *expected = json_object_get (
            bn_msg_metadata (c->msg),
            shape == BN_MERGED_GROUPS ? BN_BCAST_GROUPS : BN_BCAST_REDUCED);
        char *text = json_dumps (built, JSON_COMPACT);
        ck_assert_msg (json_equal (built, expected), "%s: %s", c->name, text);
        free (text);
        json_decref (built);
        bn_merged_reader_destroy (&reader);
        s_case_destroy (&c);
        rebuilt++;
    }
    ck_assert_uint_ge (rebuilt, 3);
}
END_TEST

//  The hub's records: a broadcast to one engine more than a merged reply
//  answers for stays pending after it, and completes with the last
//  engine's reply; a reply that is not merged answers for one engine.
START_TEST (test_records)
{
    bn_session_t *session = bn_session_new ("key", NULL);
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        if (c->engines < 1) {
            s_case_destroy (&c);
            continue;
        }
        bn_records_t *records = bn_records_new (BN_RECORDS_MEMORY, 0, 0);
        bn_msg_t *request = bn_msg_new (session, BN_MSG_APPLY_REQUEST);
        json_t *targets = json_array ();
        for (int t = 0; t <= c->engines; t++)
            json_array_append_new (targets, json_pack ("[s,i]", "e", t));
        bn_msg_set_metadata (request,
                             json_pack ("{s:o, s:b, s:b}", "targets", targets,
                                        "is_broadcast", 1, "is_coalescing", 1));
        char *orig = strdup (bn_msg_id (request));
        bn_records_request (records, BN_MONITOR_QUEUE_BROADCAST, request, NULL);
        bn_msg_t *reply = bn_msg_dup (c->msg);
        json_object_set_new (bn_msg_metadata (reply), "original_msg_id",
                             json_string (orig));
        bn_msg_touch (reply, BN_PART_METADATA);
        ck_assert_int_eq (bn_merged_engines (reply), c->engines);
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
        ck_assert_msg (bn_records_pending (records, orig),
                       "%s: completed by a reply for %d of %d engines", c->name,
                       c->engines, c->engines + 1);
        bn_msg_t *last = bn_msg_new_reply (session, request, "apply_reply");
        bn_msg_set_metadata (last, json_pack ("{s:s, s:s}", "original_msg_id",
                                              orig, "engine", "e"));
        bn_msg_set_content (last, json_pack ("{s:s}", "status", "ok"));
        bn_records_reply (records, BN_MONITOR_QUEUE_BROADCAST, last, NULL);
        ck_assert_msg (!bn_records_pending (records, orig), "%s: still pending",
                       c->name);
        bn_msg_destroy (&last);
        bn_msg_destroy (&reply);
        bn_msg_destroy (&request);
        free (orig);
        bn_records_destroy (&records);
        s_case_destroy (&c);
    }
    bn_session_destroy (&session);
}
END_TEST

//  bn_replies_drop_fn: count what the client dropped.
static void
s_count_drop (void *arg, const char *why)
{
    (void)why;
    (*(size_t *)arg)++;
}

//  The JSON status and ename an engine's item must end with, from the
//  metadata as jansson reads it: its bn_replies entry or group, or the
//  reduced contributors or failure naming it; NULL status when the reply
//  does not name it.
static void
s_expected_outcome (json_t *md, json_t *content, int index, int eid,
                    const char **status, const char **ename)
{
    *status = NULL;
    *ename = NULL;
    json_t *entry = NULL;
    json_t *replies = json_object_get (md, BN_BCAST_REPLIES);
    if (json_object_get (md, BN_BCAST_TARGETS)) {
        entry = json_array_get (replies, (size_t)index);
        if (!replies) {
            *status = json_string_value (json_object_get (content, "status"));
            *ename = json_string_value (json_object_get (content, "ename"));
            return;
        }
    }
    json_t *list = json_object_get (md, BN_BCAST_GROUPS);
    json_t *reduced = json_object_get (md, BN_BCAST_REDUCED);
    if (reduced) {
        bn_idset_t *ids = bn_idset_parse (
            json_string_value (json_object_get (reduced, "engines")));
        if (bn_idset_contains (ids, eid))
            *status = BN_STATUS_OK;
        bn_idset_destroy (&ids);
        list = json_object_get (reduced, "failed");
    }
    size_t i;
    json_t *set;
    json_array_foreach (list, i, set)
    {
        bn_idset_t *ids = bn_idset_parse (
            json_string_value (json_object_get (set, "engines")));
        if (bn_idset_contains (ids, eid))
            entry = set;
        bn_idset_destroy (&ids);
    }
    if (!entry)
        return;
    json_t *error = json_object_get (entry, "content");
    *status = json_string_value (json_object_get (entry, "status"));
    if (!*status)
        *status = json_string_value (json_object_get (error, "status"));
    *ename = json_string_value (json_object_get (error, "ename"));
    if (!*status && json_is_integer (json_object_get (entry, "nbuffers"))) {
        //  an entry without a status is a protocol error of its engine
        *status = BN_STATUS_ERROR;
        *ename = "ProtocolError";
    }
}

//  The client's decoding (bn_replies, as libbanyan's I/O thread hands it a
//  broadcast reply): every engine a well-formed reply names gets its
//  outcome, a reply the reader stops at completes nothing and is dropped.
START_TEST (test_client)
{
    size_t decoded = 0;
    for (size_t i = 0; i < s_nnames; i++) {
        s_case_t *c = s_case_load (s_names[i]);
        json_t *md = bn_msg_metadata (c->msg);
        const char *original =
            json_string_value (json_object_get (md, "original_msg_id"));
        if (c->engines < 0 || !original) {
            s_case_destroy (&c);
            continue;
        }
        //  the engines it names: targets' uuids and ids, or the sets'
        //  ids as engine-<id>
        bn_tracker_t *tracker = bn_tracker_new ();
        bn_engines_t *engines = bn_engines_new ();
        int ids[64];
        char uuids[64][BN_UUID_SIZE];
        int n = 0;
        json_t *targets = json_object_get (md, BN_BCAST_TARGETS);
        size_t index;
        json_t *target;
        json_array_foreach (targets, index, target)
        {
            json_t *uuid =
                json_is_array (target) ? json_array_get (target, 0) : target;
            if (!json_is_string (uuid) || n == 64)
                continue;
            ids[n] = json_is_array (target)
                         ? (int)json_integer_value (json_array_get (target, 1))
                         : n;
            snprintf (uuids[n], BN_UUID_SIZE, "%s", json_string_value (uuid));
            n++;
        }
        if (!targets)
            for (int id = 0; id < c->engines && n < 64; id++, n++) {
                ids[n] = id;
                snprintf (uuids[n], BN_UUID_SIZE, "engine-%d", id);
            }
        bn_result_t *result = bn_result_new (tracker, (size_t)n);
        bn_result_set_output_in_reply (result, true);
        for (int e = 0; e < n; e++) {
            bn_engines_add (engines, ids[e], uuids[e]);
            char msg_id[256];
            snprintf (msg_id, sizeof msg_id, "%s_%s", original, uuids[e]);
            bn_item_t *item = bn_result_add (result, msg_id, NULL, ids[e],
                                             uuids[e], BN_ITEM_SHELL);
            ck_assert_int_eq (bn_tracker_track (tracker, item), 0);
        }
        size_t drops = 0;
        bn_replies_on_reply (tracker, engines, c->msg, true, s_count_drop,
                             &drops);
        for (int e = 0; e < n; e++) {
            const char *status, *ename;
            s_expected_outcome (md, bn_msg_content (c->msg), e, ids[e], &status,
                                &ename);
            int got = bn_result_status (result, (size_t)e);
            if (c->fatal || !status) {
                //  not delivered: the engine still waits
                ck_assert_msg (got == BN_ENOTREADY, "%s: engine %d got %d",
                               c->name, ids[e], got);
                continue;
            }
            if (strcmp (status, BN_STATUS_OK) == 0)
                //  the corpus's buffers are the tree tests' raw bytes or
                //  pickles: a value, or an error that says it does not
                //  decode
                ck_assert_msg (got == 0 || got == BN_EPICKLE,
                               "%s: engine %d got %d", c->name, ids[e], got);
            else {
                ck_assert_msg (got != 0 && got != BN_ENOTREADY,
                               "%s: engine %d got %d", c->name, ids[e], got);
                if (ename)
                    ck_assert_str_eq (bn_result_ename (result, (size_t)e),
                                      ename);
            }
        }
        if (c->fatal)
            ck_assert_msg (drops == 1, "%s: %zu drops", c->name, drops);
        if (json_object_get (md, BN_BCAST_REDUCED) && !c->error)
            ck_assert_str_eq (
                bn_result_reduced_op (result),
                json_string_value (json_object_get (
                    json_object_get (md, BN_BCAST_REDUCED), "op")));
        bn_result_destroy (&result);
        bn_engines_destroy (&engines);
        bn_tracker_unref (&tracker);
        s_case_destroy (&c);
        decoded++;
    }
    ck_assert_uint_ge (decoded, 20);
}
END_TEST

static int
s_compare_names (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

int
main (void)
{
    DIR *dir = opendir (S_CORPUS);
    if (!dir) {
        fprintf (stderr, "check_bn_merged: no corpus in %s\n", S_CORPUS);
        return EXIT_FAILURE;
    }
    struct dirent *file;
    while ((file = readdir (dir)) && s_nnames < S_FILES_MAX) {
        size_t len = strlen (file->d_name);
        if (len > 4 && strcmp (file->d_name + len - 4, ".msg") == 0)
            s_names[s_nnames++] = strdup (file->d_name);
    }
    closedir (dir);
    qsort (s_names, s_nnames, sizeof s_names[0], s_compare_names);

    Suite *suite = suite_create ("bn_merged");
    TCase *tc = tcase_create ("corpus");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_reader);
    tcase_add_test (tc, test_engines);
    tcase_add_test (tc, test_shape);
    tcase_add_test (tc, test_nested_replies);
    tcase_add_test (tc, test_minus_zero);
    tcase_add_test (tc, test_writer);
    tcase_add_test (tc, test_escapes);
    tcase_add_test (tc, test_empty_base);
    tcase_add_test (tc, test_sets_writer);
    tcase_add_test (tc, test_records);
    tcase_add_test (tc, test_client);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    for (size_t i = 0; i < s_nnames; i++)
        free (s_names[i]);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_merged: the merged broadcast reply codec over the corpus in
    tests/data/merged (replies of every shape as the tree writes them,
    7.1.0's, and malformed ones): the reader's entries, the writer's bytes,
    and what the records make of each reply.

    A corpus file has one line per part, a tab after its name: about,
    header, parent, metadata, content, buffer (hex, one per buffer), then
    what the reply must read as: `entry <uuid or engines> <eid> <status>
    <first buffer> <nbuffers or ->` per entry, or `error <text>`; `engines
    <n>` (bn_merged_engines); `spliced yes|no` for the targets shape.  */
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_monitor.h"
#include "bn_msgtypes.h"
#include "bn_records.h"
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
    const char *error; //  the reader error it must give, or NULL
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

//  A reader of corpus file name, stepped through; checks every entry
//  against the file's entry lines and the end against its error line.
static void
s_check_reader (s_case_t *c)
{
    bn_merged_reader_t *reader = bn_merged_reader_new (c->msg);
    ck_assert_ptr_nonnull (reader);
    bn_merged_entry_t entry;
    int rc;
    char *expected = zlist_first (c->lines);
    while ((rc = bn_merged_reader_next (reader, &entry)) == 1) {
        while (expected && strncmp (expected, "entry\t", 6) != 0)
            expected = zlist_next (c->lines);
        ck_assert_msg (expected != NULL, "%s: an entry too many", c->name);
        char *line = s_entry_line (&entry);
        ck_assert_msg (strcmp (line, expected + 6) == 0,
                       "%s: entry\n  %s\nnot\n  %s", c->name, line,
                       expected + 6);
        ck_assert (entry.ok == (strcmp (entry.status, BN_STATUS_OK) == 0));
        free (line);
        expected = zlist_next (c->lines);
    }
    if (c->error) {
        ck_assert_msg (rc == -1, "%s: read without error", c->name);
        ck_assert_str_eq (bn_merged_reader_error (reader), c->error);
        //  a reader that failed stays failed
        ck_assert_int_eq (bn_merged_reader_next (reader, &entry), -1);
    } else {
        ck_assert_msg (rc == 0, "%s: %s", c->name,
                       bn_merged_reader_error (reader));
        ck_assert_str_eq (bn_merged_reader_error (reader), "");
        while (expected && strncmp (expected, "entry\t", 6) != 0)
            expected = zlist_next (c->lines);
        ck_assert_msg (expected == NULL, "%s: entry %s not read", c->name,
                       expected);
        ck_assert_int_eq (bn_merged_reader_next (reader, &entry), 0);
    }
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
        json_t *base = bn_merged_base (c->msg);
        ck_assert_ptr_nonnull (base);
        ck_assert_ptr_null (json_object_get (base, BN_BCAST_TARGETS));
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
    tcase_add_test (tc, test_writer);
    tcase_add_test (tc, test_escapes);
    tcase_add_test (tc, test_sets_writer);
    tcase_add_test (tc, test_records);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    for (size_t i = 0; i < s_nnames; i++)
        free (s_names[i]);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_merged_reader: the entries of a merged broadcast reply read from its
    metadata text, checked one by one.  */
#define _GNU_SOURCE //  memmem
#include "bn_merged_reader.h"

#include "bn_msgtypes.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Where a merging node's spliced lists start (bn_merged_writer_finish):
//  no JSON string holds an unescaped quote, so these are never inside one.
//  The targets key follows the base metadata's last value and a comma, or
//  the opening brace when the base is empty.
#define S_TARGETS_KEY "\"" BN_BCAST_TARGETS "\":["
#define S_TARGETS_MARK "," S_TARGETS_KEY
#define S_REPLIES_MARK "],\"" BN_BCAST_REPLIES "\":["

//  Keys of an entry object, in the order of s_field_t.
static const char *s_entry_keys[] = {"status",    "nbuffers", "engines",
                                     "content",   "started",  "completed",
                                     "bn_stdout", "bn_stderr"};
typedef enum {
    S_STATUS,
    S_NBUFFERS,
    S_ENGINES,
    S_CONTENT,
    S_STARTED,
    S_COMPLETED,
    S_OUT,
    S_ERR,
    S_FIELDS
} s_field_t;

struct _bn_merged_reader_t {
    bn_msg_t *msg;                    //  the message read
    bn_merged_shape_t shape;          //  its shape
    const char *md;                   //  its metadata text
    size_t md_len;                    //  its bytes
    size_t nbuffers;                  //  the message's buffers
    size_t buffer;                    //  buffers named by the entries so far
    bool sized;                       //  every entry so far said its buffers
    bool spliced;                     //  lists read through the spliced text
    int state;                        //  1 reading, 0 done, -1 malformed
    size_t index;                     //  entries read
    char error[192];                  //  why malformed
    const char *at;                   //  next element of the main list
    const char *end;                  //  end of the main list's text
    const char *targets;              //  targets: the list's '[' (spliced)
    const char *replies_list;         //  bn_replies' '[' (spliced)
    const char *replies;              //  next bn_replies element, or NULL
    const char *replies_end;          //  end of bn_replies' text
    bool contributors;                //  reduced: the contributors are next
    char *op;                         //  reduced: op
    bn_jscan_slice_t reduced_engines; //  reduced: the contributors' set
    bn_jscan_slice_t reduce_error;    //  reduced: error, or none
    char merged_status[32];           //  content status of the message
    char uuid[BN_MERGED_UUID_MAX + 1];
    char status[32];
    bn_idset_t *engines;
};

//  Stop reading with a reason; returns -1.
static int s_fail (bn_merged_reader_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static int
s_fail (bn_merged_reader_t *self, const char *format, ...)
{
    if (self->state >= 0) {
        va_list args;
        va_start (args, format);
        vsnprintf (self->error, sizeof self->error, format, args);
        va_end (args);
    }
    self->state = -1;
    return -1;
}

//  The current entry is malformed but the entries after it can be read:
//  keep the reason; returns -2.
static int s_skip (bn_merged_reader_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static int
s_skip (bn_merged_reader_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->error, sizeof self->error, format, args);
    va_end (args);
    return -2;
}

//  A quoted key in the metadata text, a look without parsing.
static bool
s_has_key (const char *md, size_t len, const char *quoted)
{
    return md && memmem (md, len, quoted, strlen (quoted)) != NULL;
}

//  A slice that must be a JSON array: its elements' bounds. -1 if not one.
static int
s_array (bn_jscan_slice_t value, const char **at, const char **end)
{
    if (!value.data || *value.data != '[')
        return -1;
    *at = value.data + 1;
    *end = value.data + value.size;
    return 0;
}

//  Walk JSON text from c towards end, counting in *depth the brackets
//  open outside strings (*quoted: inside one): returns the closing bracket
//  that brings the depth back to 0, or end, with *depth and *quoted as
//  they are there.
static const char *
s_walk (const char *c, const char *end, int *depth, bool *quoted)
{
    for (; c < end; c++) {
        if (*quoted) {
            if (*c == '\\')
                c++;
            else if (*c == '"')
                *quoted = false;
        } else if (*c == '"')
            *quoted = true;
        else if (*c == '{' || *c == '[')
            (*depth)++;
        else if ((*c == '}' || *c == ']') && --*depth == 0)
            return c;
    }
    return end;
}

//  True if at (inside md) is in the top-level object itself, not in a
//  value nested in it: a walk of the text before the spliced lists, the
//  short base metadata a node wrote them after.
static bool
s_top_level (const char *md, const char *at)
{
    int depth = 0;
    bool quoted = false;
    return s_walk (md, at, &depth, &quoted) == at && depth == 1 && !quoted;
}

//  True if the JSON array opening at open closes at close: a walk of its
//  text that stops there, so that a replies key found after it is the one
//  following the list, not one nested in a later value.
static bool
s_closes_at (const char *open, const char *close)
{
    int depth = 0;
    bool quoted = false;
    return s_walk (open, close + 1, &depth, &quoted) == close;
}

//  The character before the first spliced targets key in md: the comma
//  after the base metadata, or md's opening brace when the base is empty
//  (the mark is as long either way). NULL if there is none.
static const char *
s_targets_mark (const char *md, size_t len)
{
    if (len > strlen (S_TARGETS_KEY) && md[0] == '{' &&
        memcmp (md + 1, S_TARGETS_KEY, strlen (S_TARGETS_KEY)) == 0)
        return md;
    return memmem (md, len, S_TARGETS_MARK, strlen (S_TARGETS_MARK));
}

bn_merged_shape_t
bn_merged_shape (bn_msg_t *msg)
{
    assert (msg);
    size_t len;
    const char *md = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    if (!md || len == 0)
        return BN_MERGED_NONE;
    //  A merging node's spliced lists, after its short base metadata
    const char *mark = s_targets_mark (md, len);
    if (mark && s_top_level (md, mark + 1))
        return BN_MERGED_TARGETS;
    //  The keys written plainly; none, and no escape that could spell one,
    //  is a reply of one engine, told without a walk
    bool plain[3] = {s_has_key (md, len, "\"" BN_BCAST_TARGETS "\""),
                     s_has_key (md, len, "\"" BN_BCAST_GROUPS "\""),
                     s_has_key (md, len, "\"" BN_BCAST_REDUCED "\"")};
    if (!plain[0] && !plain[1] && !plain[2] && !memchr (md, '\\', len))
        return BN_MERGED_NONE;
    //  Otherwise a key counts only at the top level: a value nested in the
    //  metadata may hold any of them. Metadata that is not well-formed goes
    //  by the plain keys, for the reader to say what is wrong with it.
    const char *keys[] = {BN_BCAST_TARGETS, BN_BCAST_GROUPS, BN_BCAST_REDUCED};
    bn_jscan_slice_t values[3];
    if (bn_jscan_object (md, len, keys, 3, values, NULL) != 0)
        for (int k = 0; k < 3; k++)
            values[k].data = plain[k] ? md : NULL;
    if (values[0].data)
        return BN_MERGED_TARGETS;
    if (values[1].data)
        return BN_MERGED_GROUPS;
    if (values[2].data)
        return BN_MERGED_REDUCED;
    return BN_MERGED_NONE;
}

//  Open the targets shape: the spliced lists when a node wrote them, else
//  the lists wherever they are in the metadata.
static void
s_open_targets (bn_merged_reader_t *self)
{
    const char *md = self->md, *md_end = self->md + self->md_len;
    const char *mark = s_targets_mark (md, self->md_len);
    const char *replies = mark
                              ? memmem (mark, (size_t)(md_end - mark),
                                        S_REPLIES_MARK, strlen (S_REPLIES_MARK))
                              : NULL;
    if (replies && md_end - md >= 2 && md_end[-1] == '}' && md_end[-2] == ']' &&
        s_top_level (md, mark + 1) &&
        s_closes_at (mark + strlen (S_TARGETS_MARK) - 1, replies)) {
        self->spliced = true;
        self->targets = mark + strlen (S_TARGETS_MARK) - 1;
        self->replies_list = replies + strlen (S_REPLIES_MARK) - 1;
        self->at = mark + strlen (S_TARGETS_MARK);
        self->end = replies + 1;
        self->replies = replies + strlen (S_REPLIES_MARK);
        self->replies_end = md_end - 1;
        return;
    }
    const char *keys[] = {BN_BCAST_TARGETS, BN_BCAST_REPLIES};
    bn_jscan_slice_t lists[2];
    size_t used;
    if (bn_jscan_object (md, self->md_len, keys, 2, lists, &used) != 0 ||
        s_array (lists[0], &self->at, &self->end) != 0)
        s_fail (self, "merged reply's %s is not an array", BN_BCAST_TARGETS);
    else if (lists[1].data &&
             s_array (lists[1], &self->replies, &self->replies_end) != 0)
        s_fail (self, "merged reply's %s is not an array", BN_BCAST_REPLIES);
}

//  Open bn_reduced: op, the contributors, failed and error.
static void
s_open_reduced (bn_merged_reader_t *self)
{
    const char *key = BN_BCAST_REDUCED;
    bn_jscan_slice_t reduced;
    if (bn_jscan_object (self->md, self->md_len, &key, 1, &reduced, NULL) !=
            0 ||
        !reduced.data || *reduced.data != '{') {
        s_fail (self, "merged reply has no valid %s", BN_BCAST_REDUCED);
        return;
    }
    const char *keys[] = {"op", "engines", "failed", "error"};
    bn_jscan_slice_t fields[4];
    bn_jscan_object (reduced.data, reduced.size, keys, 4, fields, NULL);
    self->op = bn_merged_string (fields[0]);
    self->reduced_engines = fields[1];
    self->reduce_error = fields[3];
    self->contributors = true;
    if (!self->op || !fields[1].data || *fields[1].data != '"' ||
        (fields[2].data && s_array (fields[2], &self->at, &self->end) != 0) ||
        (fields[3].data && *fields[3].data != '{'))
        s_fail (self, "merged reply has no valid %s", BN_BCAST_REDUCED);
}

bn_merged_reader_t *
bn_merged_reader_new (bn_msg_t *msg)
{
    assert (msg);
    bn_merged_reader_t *self = calloc (1, sizeof (bn_merged_reader_t));
    if (!self)
        return NULL;
    self->msg = msg;
    self->state = 1;
    self->sized = true;
    self->nbuffers = bn_msg_nbuffers (msg);
    self->md = bn_msg_part_data (msg, BN_PART_METADATA, &self->md_len);
    self->shape = bn_merged_shape (msg);
    if (self->shape == BN_MERGED_TARGETS)
        s_open_targets (self);
    else if (self->shape == BN_MERGED_GROUPS) {
        const char *key = BN_BCAST_GROUPS;
        bn_jscan_slice_t groups;
        if (bn_jscan_object (self->md, self->md_len, &key, 1, &groups, NULL) !=
                0 ||
            s_array (groups, &self->at, &self->end) != 0)
            s_fail (self, "merged reply has no %s array", BN_BCAST_GROUPS);
    } else if (self->shape == BN_MERGED_REDUCED)
        s_open_reduced (self);
    else
        s_fail (self, "not a merged reply: no %s, %s or %s", BN_BCAST_TARGETS,
                BN_BCAST_GROUPS, BN_BCAST_REDUCED);
    if (self->shape == BN_MERGED_TARGETS && !self->replies) {
        //  7.1.0's entries: the merged status applies to every engine
        size_t len;
        const char *content = bn_msg_part_data (msg, BN_PART_CONTENT, &len);
        if (!content ||
            bn_jscan_string (content, len, "status", self->merged_status,
                             sizeof self->merged_status) < 0)
            snprintf (self->merged_status, sizeof self->merged_status, "%s",
                      BN_STATUS_ERROR);
    }
    return self;
}

void
bn_merged_reader_destroy (bn_merged_reader_t **self_p)
{
    assert (self_p);
    bn_merged_reader_t *self = *self_p;
    if (!self)
        return;
    free (self->op);
    bn_idset_destroy (&self->engines);
    free (self);
    *self_p = NULL;
}

bn_merged_shape_t
bn_merged_reader_shape (bn_merged_reader_t *self)
{
    assert (self);
    return self->shape;
}

const char *
bn_merged_reader_error (bn_merged_reader_t *self)
{
    assert (self);
    return self->error;
}

bool
bn_merged_reader_spliced (bn_merged_reader_t *self)
{
    assert (self);
    return self->spliced;
}

const char *
bn_merged_reader_op (bn_merged_reader_t *self)
{
    assert (self);
    return self->op;
}

json_t *
bn_merged_reader_reduce_error (bn_merged_reader_t *self)
{
    assert (self);
    return bn_merged_json (self->reduce_error);
}

//  A non-negative JSON integer that fits in size_t (-0 is 0, as JSON
//  parsers read it); -1 if value is not one.
static int
s_count (bn_jscan_slice_t value, size_t *count)
{
    if (value.data && value.size == 2 && memcmp (value.data, "-0", 2) == 0) {
        *count = 0;
        return 0;
    }
    if (!value.data || value.size == 0 || value.size > 19 ||
        *value.data < '0' || *value.data > '9')
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < value.size; i++) {
        if (value.data[i] < '0' || value.data[i] > '9')
            return -1;
        n = n * 10 + (size_t)(value.data[i] - '0');
    }
    *count = n;
    return 0;
}

//  An engine set's text value into self->engines; -1 if not one.
static int
s_engines (bn_merged_reader_t *self, bn_jscan_slice_t value)
{
    bn_idset_destroy (&self->engines);
    char *text = bn_merged_string (value);
    self->engines = text ? bn_idset_parse (text) : NULL;
    free (text);
    return self->engines ? 0 : -1;
}

//  Fill entry from an entry object (text) and its fields (walked with
//  s_entry_keys): buffer count (required: with_count), status, engines.
//  Returns 1; -2 (after s_skip) if the entry is malformed but says its
//  buffers, so that the next can be read; -1 (after s_fail) if not.
static int
s_entry_fields (bn_merged_reader_t *self, bn_jscan_slice_t text,
                const bn_jscan_slice_t *fields, bn_merged_entry_t *entry,
                const char *what, bool with_count)
{
    entry->text = text;
    entry->started = fields[S_STARTED];
    entry->completed = fields[S_COMPLETED];
    entry->content = fields[S_CONTENT];
    entry->out = fields[S_OUT];
    entry->err = fields[S_ERR];
    if (fields[S_NBUFFERS].data) {
        if (s_count (fields[S_NBUFFERS], &entry->nbuffers) != 0)
            return s_fail (self, "%s's nbuffers is not a count", what);
        entry->sized = true;
    } else if (with_count)
        return s_fail (self, "%s has no nbuffers", what);
    bn_idset_destroy (&self->engines);
    if (fields[S_ENGINES].data && s_engines (self, fields[S_ENGINES]) != 0)
        return s_skip (self, "%s's engines are not an engine set", what);
    if (fields[S_CONTENT].data && *fields[S_CONTENT].data != '{')
        return s_skip (self, "%s's content is not an object", what);
    if (!fields[S_STATUS].data)
        return s_skip (self, "%s has no status", what);
    if (bn_jscan_unescape (fields[S_STATUS], self->status,
                           sizeof self->status) < 0)
        return s_skip (self, "%s's status is not a short string", what);
    return 1;
}

//  A target as the writer writes it, ["uuid",eid] with a uuid that needs
//  no escape, read in place at self->at. Returns 1, or 0 when the target
//  is written otherwise (nothing read: the general walk reads it).
static int
s_fast_target (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    const char *p = self->at, *end = self->end;
    if (end - p < 6 || p[0] != '[' || p[1] != '"')
        return 0;
    const char *uuid = p + 2;
    const char *quote = memchr (uuid, '"', (size_t)(end - uuid));
    size_t len = quote ? (size_t)(quote - uuid) : 0;
    if (len == 0 || len > BN_MERGED_UUID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)uuid[i] < 0x20 || uuid[i] == '\\')
            return 0;
    p = quote + 1;
    if (p >= end || *p++ != ',')
        return 0;
    long long eid = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 10)
        eid = eid * 10 + (*p++ - '0');
    if (p == digits || eid > INT_MAX || p >= end || *p++ != ']')
        return 0;
    if (p < end && *p == ',')
        p++;
    else if (p >= end || *p != ']')
        return 0;
    memcpy (self->uuid, uuid, len);
    self->uuid[len] = 0;
    entry->uuid = self->uuid;
    entry->eid = (int)eid;
    self->at = p;
    return 1;
}

//  A target, ["uuid", id] or a bare "uuid", into entry. -1 after s_fail.
static int
s_target (bn_merged_reader_t *self, bn_jscan_slice_t target,
          bn_merged_entry_t *entry)
{
    bn_jscan_slice_t uuid = target, id = {NULL, 0};
    if (*target.data == '[') {
        const char *at = target.data + 1, *end = target.data + target.size;
        if (bn_jscan_next (&at, end, &uuid) != 1 ||
            bn_jscan_next (&at, end, &id) != 1 ||
            bn_jscan_next (&at, end, &(bn_jscan_slice_t){0}) != 0)
            return s_fail (self, "a target is not a [uuid, id] pair");
    }
    if (bn_jscan_unescape (uuid, self->uuid, sizeof self->uuid) <= 0)
        return s_fail (self,
                       "a target's uuid is not a string of at most %d "
                       "bytes",
                       BN_MERGED_UUID_MAX);
    entry->uuid = self->uuid;
    entry->eid = -1;
    if (id.data) {
        size_t eid;
        if (s_count (id, &eid) != 0 || eid > INT_MAX)
            return s_fail (self, "target %s has no engine id", self->uuid);
        entry->eid = (int)eid;
    }
    return 0;
}

//  End of the entries: they must have named every buffer.
static int
s_end (bn_merged_reader_t *self)
{
    if (self->sized && self->buffer != self->nbuffers)
        return s_fail (self, "merged reply has %zu buffers, its %s name %zu",
                       self->nbuffers,
                       self->shape == BN_MERGED_GROUPS ? BN_BCAST_GROUPS
                                                       : BN_BCAST_REPLIES,
                       self->buffer);
    self->state = 0;
    return 0;
}

//  A JSON string without escapes, or null, at *p (before end): its raw
//  text, *p moved past it. False when it is written otherwise.
static bool
s_fast_value (const char **p, const char *end, bn_jscan_slice_t *value)
{
    const char *at = *p;
    if (end - at >= 4 && memcmp (at, "null", 4) == 0) {
        *value = (bn_jscan_slice_t){at, 4};
        *p = at + 4;
        return true;
    }
    if (at >= end || *at != '"')
        return false;
    const char *quote = memchr (at + 1, '"', (size_t)(end - at - 1));
    if (!quote)
        return false;
    for (const char *c = at + 1; c < quote; c++)
        if ((unsigned char)*c < 0x20 || *c == '\\')
            return false;
    *value = (bn_jscan_slice_t){at, (size_t)(quote + 1 - at)};
    *p = quote + 1;
    return true;
}

//  A literal at *p, *p moved past it; false if it is not there.
static bool
s_fast_literal (const char **p, const char *end, const char *literal)
{
    size_t len = strlen (literal);
    if ((size_t)(end - *p) < len || memcmp (*p, literal, len) != 0)
        return false;
    *p += len;
    return true;
}

//  The bn_replies entry of an ok reply as bn_merged_entry writes it
//  (status, started, completed, nbuffers, texts without escapes) read in
//  place at self->replies. Returns 1, or 0 when the entry is written
//  otherwise (nothing read: the general walk reads it).
static int
s_fast_entry (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    const char *p = self->replies, *end = self->replies_end;
    bn_jscan_slice_t started, completed;
    if (!s_fast_literal (&p, end, "{\"status\":\"ok\",\"started\":") ||
        !s_fast_value (&p, end, &started) ||
        !s_fast_literal (&p, end, ",\"completed\":") ||
        !s_fast_value (&p, end, &completed) ||
        !s_fast_literal (&p, end, ",\"nbuffers\":"))
        return 0;
    const char *digits = p;
    size_t count = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 18)
        count = count * 10 + (size_t)(*p++ - '0');
    if (p == digits || !s_fast_literal (&p, end, "}"))
        return 0;
    entry->text =
        (bn_jscan_slice_t){self->replies, (size_t)(p - self->replies)};
    if (p < end && *p == ',')
        p++;
    else if (p >= end || *p != ']')
        return 0;
    entry->started = started;
    entry->completed = completed;
    entry->sized = true;
    entry->nbuffers = count;
    snprintf (self->status, sizeof self->status, "%s", BN_STATUS_OK);
    self->replies = p;
    return 1;
}

static int
s_next_target (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    int rc = s_fast_target (self, entry);
    if (rc == 0) {
        bn_jscan_slice_t target;
        rc = bn_jscan_next (&self->at, self->end, &target);
        if (rc < 0)
            return s_fail (self, "%s is malformed", BN_BCAST_TARGETS);
        if (rc == 1 && s_target (self, target, entry) != 0)
            return -1;
    }
    bn_jscan_slice_t reply, fields[S_FIELDS];
    bool fast = self->spliced && rc == 1 && s_fast_entry (self, entry);
    int more =
        fast ? 1
        : self->replies
            ? bn_jscan_next_object (&self->replies, self->replies_end,
                                    s_entry_keys, S_FIELDS, fields, &reply)
            : rc;
    if (more < 0)
        return s_fail (self, "%s is malformed", BN_BCAST_REPLIES);
    if (rc != more)
        return s_fail (self, "%s and %s differ in length", BN_BCAST_TARGETS,
                       BN_BCAST_REPLIES);
    if (rc == 0) {
        if (self->spliced && self->at != self->end)
            return s_fail (self, "text follows the spliced %s",
                           BN_BCAST_TARGETS);
        //  keys after the lists: they were a node's spliced lists only if
        //  a walk of the metadata finds them where they were read
        if (self->spliced && self->replies != self->replies_end) {
            const char *keys[] = {BN_BCAST_TARGETS, BN_BCAST_REPLIES};
            bn_jscan_slice_t lists[2];
            if (bn_jscan_object (self->md, self->md_len, keys, 2, lists,
                                 NULL) != 0 ||
                lists[0].data != self->targets ||
                lists[1].data != self->replies_list)
                return s_fail (self, "%s and %s are not the metadata's",
                               BN_BCAST_TARGETS, BN_BCAST_REPLIES);
            self->spliced = false;
        }
        return s_end (self);
    }
    if (fast)
        return 1;
    if (!self->replies) {
        entry->status = self->merged_status;
        return 1;
    }
    char what[64 + BN_MERGED_UUID_MAX];
    snprintf (what, sizeof what, "the %s entry of %s", BN_BCAST_REPLIES,
              self->uuid);
    return s_entry_fields (self, reply, fields, entry, what, false);
}

static int
s_next_group (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    bn_jscan_slice_t group, fields[S_FIELDS];
    int rc = bn_jscan_next_object (&self->at, self->end, s_entry_keys, S_FIELDS,
                                   fields, &group);
    if (rc == 0)
        return s_end (self);
    if (rc < 0)
        return s_fail (self, "%s[%zu] is malformed", BN_BCAST_GROUPS,
                       self->index);
    rc = s_entry_fields (self, group, fields, entry, "a group", true);
    if (rc == 1 && (!self->engines || bn_idset_count (self->engines) == 0))
        rc = -2;
    if (rc == -1) {
        self->state = 1;
        return s_fail (self, "%s[%zu] is malformed", BN_BCAST_GROUPS,
                       self->index);
    }
    //  a group is right or wrong as a whole
    if (rc == -2)
        return s_skip (self, "%s[%zu] is malformed", BN_BCAST_GROUPS,
                       self->index);
    return 1;
}

static int
s_next_reduced (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    if (self->contributors) {
        //  the contributors: the value is all the buffers
        self->contributors = false;
        if (s_engines (self, self->reduced_engines) != 0)
            return s_fail (self, "%s.engines is not an engine set",
                           BN_BCAST_REDUCED);
        snprintf (self->status, sizeof self->status, "%s", BN_STATUS_OK);
        entry->sized = true;
        entry->nbuffers = self->nbuffers;
        return 1;
    }
    bn_jscan_slice_t failure, fields[S_FIELDS];
    int rc = self->at
                 ? bn_jscan_next_object (&self->at, self->end, s_entry_keys,
                                         S_FIELDS, fields, &failure)
                 : 0;
    if (rc == 0)
        return s_end (self);
    //  the contributors came first
    if (rc < 0)
        return s_fail (self, "%s.failed[%zu] is malformed", BN_BCAST_REDUCED,
                       self->index - 1);
    entry->failure = true;
    entry->sized = true;
    entry->nbuffers = 0;
    if (s_engines (self, fields[S_ENGINES]) != 0 ||
        bn_idset_count (self->engines) == 0 || !fields[S_CONTENT].data ||
        *fields[S_CONTENT].data != '{')
        return s_skip (self, "%s.failed[%zu] is malformed", BN_BCAST_REDUCED,
                       self->index - 1);
    entry->text = failure;
    entry->content = fields[S_CONTENT];
    if (bn_jscan_string (fields[S_CONTENT].data, fields[S_CONTENT].size,
                         "status", self->status, sizeof self->status) < 0)
        snprintf (self->status, sizeof self->status, "%s", BN_STATUS_ERROR);
    return 1;
}

int
bn_merged_reader_next (bn_merged_reader_t *self, bn_merged_entry_t *entry)
{
    assert (self);
    assert (entry);
    memset (entry, 0, sizeof *entry);
    entry->eid = -1;
    if (self->state <= 0)
        return self->state;
    self->status[0] = 0;
    int rc = self->shape == BN_MERGED_TARGETS   ? s_next_target (self, entry)
             : self->shape == BN_MERGED_GROUPS  ? s_next_group (self, entry)
             : self->shape == BN_MERGED_REDUCED ? s_next_reduced (self, entry)
                                                : -1;
    if (rc != 1 && rc != -2)
        return rc;
    //  an entry, well-formed or not, takes its buffers
    if (!entry->status)
        entry->status = self->status;
    entry->ok = strcmp (entry->status, BN_STATUS_OK) == 0;
    entry->engines = entry->uuid ? NULL : self->engines;
    entry->first = self->buffer;
    self->index++;
    if (!entry->sized) {
        self->sized = false;
        return rc;
    }
    if (entry->nbuffers > self->nbuffers - self->buffer) {
        entry->nbuffers = self->nbuffers - self->buffer;
        rc = self->shape == BN_MERGED_GROUPS
                 ? s_skip (self, "%s[%zu] is malformed", BN_BCAST_GROUPS,
                           self->index - 1)
                 : s_skip (self,
                           "merged reply's entries name more than its %zu "
                           "buffers",
                           self->nbuffers);
    }
    self->buffer += entry->nbuffers;
    return rc;
}

//  The part of metadata md before its spliced lists at mark, closed:
//  "{}" when they follow the opening brace. NULL if out of memory.
static char *
s_head (const char *md, const char *mark, size_t *size)
{
    size_t head = mark == md ? 1 : (size_t)(mark - md);
    char *text = malloc (head + 1);
    if (text) {
        memcpy (text, md, head);
        text[head] = '}';
        *size = head + 1;
    }
    return text;
}

char *
bn_merged_base_text (bn_msg_t *msg, bool spliced, const char *const *drop,
                     size_t n, size_t *size)
{
    assert (msg);
    assert (size);
    size_t len;
    const char *md = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    if (!md)
        return NULL;
    const char *mark = spliced ? s_targets_mark (md, len) : NULL;
    char *head = mark ? s_head (md, mark, &len) : NULL;
    if (mark && !head)
        return NULL;
    char *text = malloc (len ? len : 1);
    long written =
        text ? bn_jscan_drop_keys (head ? head : md, len, drop, n, text) : -1;
    free (head);
    if (written < 0) {
        free (text);
        return NULL;
    }
    *size = (size_t)written;
    return text;
}

int
bn_merged_base_keys (bn_msg_t *msg, bool spliced, const char *const *keys,
                     size_t n, bn_jscan_slice_t *values, char **copy_p)
{
    assert (msg);
    assert (copy_p);
    *copy_p = NULL;
    size_t len;
    const char *md = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    if (!md)
        return -1;
    const char *mark = spliced ? s_targets_mark (md, len) : NULL;
    if (mark) {
        *copy_p = s_head (md, mark, &len);
        md = *copy_p;
    }
    if (!md || bn_jscan_keys (md, len, keys, n, values) != 0) {
        free (*copy_p);
        *copy_p = NULL;
        return -1;
    }
    return 0;
}

json_t *
bn_merged_base (bn_msg_t *msg, bool spliced)
{
    assert (msg);
    size_t len;
    const char *md = bn_msg_part_data (msg, BN_PART_METADATA, &len);
    const char *mark = spliced && md ? s_targets_mark (md, len) : NULL;
    if (mark) {
        size_t size;
        char *text = s_head (md, mark, &size);
        json_t *base = text ? json_loadb (text, size, 0, NULL) : NULL;
        free (text);
        if (json_is_object (base))
            return base;
        json_decref (base);
    }
    json_t *metadata = bn_msg_metadata (msg);
    json_t *base = json_is_object (metadata) ? json_copy (metadata) : NULL;
    if (base) {
        json_object_del (base, BN_BCAST_TARGETS);
        json_object_del (base, BN_BCAST_REPLIES);
        json_object_del (base, BN_BCAST_GROUPS);
        json_object_del (base, BN_BCAST_REDUCED);
    }
    return base;
}

int
bn_merged_engines (bn_msg_t *msg)
{
    assert (msg);
    if (bn_merged_shape (msg) == BN_MERGED_NONE)
        return -1;
    bn_merged_reader_t *reader = bn_merged_reader_new (msg);
    size_t count = 0;
    bn_merged_entry_t entry;
    int rc = reader ? 1 : -1;
    while (rc == 1 && (rc = bn_merged_reader_next (reader, &entry)) == 1)
        count += entry.uuid ? 1 : bn_idset_count (entry.engines);
    bn_merged_reader_destroy (&reader);
    if (rc < 0)
        return 0;
    return count < INT_MAX ? (int)count : INT_MAX;
}

char *
bn_merged_string (bn_jscan_slice_t value)
{
    if (!value.data || *value.data != '"')
        return NULL;
    //  unescaped, a string is never longer than its JSON text
    char *text = malloc (value.size);
    if (text && bn_jscan_unescape (value, text, value.size) < 0) {
        free (text);
        text = NULL;
    }
    return text;
}

json_t *
bn_merged_json (bn_jscan_slice_t value)
{
    return value.data ? json_loadb (value.data, value.size, 0, NULL) : NULL;
}

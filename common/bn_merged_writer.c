/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_merged_writer: the metadata of merged broadcast replies, and their
    entries, written as text where a node writes one per engine.  */
#include "bn_merged_writer.h"

#include "bn_jdump.h"
#include "bn_msgtypes.h"
#include "bn_text.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

//  A growing text.
typedef struct {
    char *data;
    size_t len;
    size_t cap;
    bool failed; //  out of memory at some point
} s_text_t;

static void
s_add (s_text_t *text, const char *data, size_t size)
{
    if (text->failed)
        return;
    if (text->len + size + 1 > text->cap) {
        size_t cap = text->cap ? text->cap * 2 : 256;
        while (cap < text->len + size + 1)
            cap *= 2;
        char *bigger = realloc (text->data, cap);
        if (!bigger) {
            text->failed = true;
            return;
        }
        text->data = bigger;
        text->cap = cap;
    }
    memcpy (text->data + text->len, data, size);
    text->len += size;
    text->data[text->len] = 0;
}

static void
s_add_str (s_text_t *text, const char *str)
{
    s_add (text, str, strlen (str));
}

//  Append str as a JSON string, escaped as jansson escapes it (short forms
//  for the usual controls, \u00XX for the others), or null when NULL.
static void
s_add_json_string (s_text_t *text, const char *str)
{
    if (!str) {
        s_add (text, "null", 4);
        return;
    }
    s_add (text, "\"", 1);
    const char *run = str;
    for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
        if (*c >= 0x20 && *c != '"' && *c != '\\')
            continue;
        s_add (text, run, (size_t)((const char *)c - run));
        char escaped[8];
        switch (*c) {
        case '"':
        case '\\':
            snprintf (escaped, sizeof escaped, "\\%c", *c);
            break;
        case '\b':
            snprintf (escaped, sizeof escaped, "\\b");
            break;
        case '\f':
            snprintf (escaped, sizeof escaped, "\\f");
            break;
        case '\n':
            snprintf (escaped, sizeof escaped, "\\n");
            break;
        case '\r':
            snprintf (escaped, sizeof escaped, "\\r");
            break;
        case '\t':
            snprintf (escaped, sizeof escaped, "\\t");
            break;
        default:
            snprintf (escaped, sizeof escaped, "\\u%04X", *c);
        }
        s_add_str (text, escaped);
        run = (const char *)c + 1;
    }
    s_add_str (text, run);
    s_add (text, "\"", 1);
}

struct _bn_merged_writer_t {
    s_text_t targets; //  ["uuid",eid] pairs, comma-separated
    s_text_t replies; //  entries, comma-separated
    size_t count;     //  engines added
};

bn_merged_writer_t *
bn_merged_writer_new (void)
{
    return calloc (1, sizeof (bn_merged_writer_t));
}

void
bn_merged_writer_destroy (bn_merged_writer_t **self_p)
{
    assert (self_p);
    bn_merged_writer_t *self = *self_p;
    if (!self)
        return;
    free (self->targets.data);
    free (self->replies.data);
    free (self);
    *self_p = NULL;
}

void
bn_merged_writer_add (bn_merged_writer_t *self, const char *uuid, int eid,
                      const char *entry, size_t size)
{
    assert (self);
    assert (uuid);
    assert (entry);
    if (self->count) {
        s_add (&self->targets, ",", 1);
        s_add (&self->replies, ",", 1);
    }
    s_add (&self->targets, "[", 1);
    s_add_json_string (&self->targets, uuid);
    char tail[24];
    bn_text_t pair;
    bn_text_init (&pair, tail, sizeof tail);
    bn_text_add (&pair, ",", 1);
    bn_text_int (&pair, eid);
    bn_text_add (&pair, "]", 1);
    s_add (&self->targets, tail, (size_t)bn_text_end (&pair));
    s_add (&self->replies, entry, size);
    self->count++;
}

size_t
bn_merged_writer_count (bn_merged_writer_t *self)
{
    assert (self);
    return self->count;
}

//  Empty lists for the next message.
static void
s_start_over (bn_merged_writer_t *self)
{
    self->targets.len = self->replies.len = 0;
    self->targets.failed = self->replies.failed = false;
    self->count = 0;
}

int
bn_merged_writer_finish_text (bn_merged_writer_t *self, const char *base,
                              size_t size, bn_msg_t *msg)
{
    assert (self);
    assert (base);
    assert (msg);
    static const char targets[] = "\"" BN_BCAST_TARGETS "\":[";
    static const char replies[] = "],\"" BN_BCAST_REPLIES "\":[";
    int rc = -1;
    if (size >= 1 && base[0] == '{' && !self->targets.failed &&
        !self->replies.failed) {
        //  the base, a comma unless it is "{", the two lists
        size_t total = size + (size > 1) + sizeof targets - 1 +
                       self->targets.len + sizeof replies - 1 +
                       self->replies.len + 2;
        zmq_msg_t frame;
        if (zmq_msg_init_size (&frame, total) == 0) {
            char *at = zmq_msg_data (&frame);
            memcpy (at, base, size);
            at += size;
            if (size > 1)
                *at++ = ',';
            memcpy (at, targets, sizeof targets - 1);
            at += sizeof targets - 1;
            if (self->targets.len)
                memcpy (at, self->targets.data, self->targets.len);
            at += self->targets.len;
            memcpy (at, replies, sizeof replies - 1);
            at += sizeof replies - 1;
            if (self->replies.len)
                memcpy (at, self->replies.data, self->replies.len);
            at += self->replies.len;
            memcpy (at, "]}", 2);
            rc = bn_msg_set_part_frame (msg, BN_PART_METADATA, &frame);
            zmq_msg_close (&frame);
        }
    }
    s_start_over (self);
    return rc;
}

int
bn_merged_writer_finish (bn_merged_writer_t *self, json_t *base, bn_msg_t *msg)
{
    assert (self);
    assert (base);
    assert (msg);
    char *head = bn_jdump (base, NULL);
    size_t head_len = head ? strlen (head) : 0;
    int rc = -1;
    if (head_len >= 2 && head[head_len - 1] == '}')
        //  without its '}'
        rc = bn_merged_writer_finish_text (self, head, head_len - 1, msg);
    else
        s_start_over (self);
    free (head);
    return rc;
}

char *
bn_merged_entry (const char *status, const char *started, const char *completed,
                 size_t nbuffers, json_t *content, const char *out,
                 const char *err)
{
    if (!status)
        status = BN_STATUS_ERROR;
    bool ok = strcmp (status, BN_STATUS_OK) == 0;
    s_text_t text = {0};
    s_add_str (&text, "{\"status\":");
    s_add_json_string (&text, status);
    s_add_str (&text, ",\"started\":");
    s_add_json_string (&text, started);
    s_add_str (&text, ",\"completed\":");
    s_add_json_string (&text, completed);
    char count[48];
    bn_text_t buffers;
    bn_text_init (&buffers, count, sizeof count);
    bn_text_str (&buffers, ",\"nbuffers\":");
    bn_text_uint (&buffers, nbuffers);
    s_add (&text, count, (size_t)bn_text_end (&buffers));
    if (!ok) {
        char *dumped = content ? json_dumps (content, JSON_COMPACT) : NULL;
        s_add_str (&text, ",\"content\":");
        s_add_str (&text, dumped ? dumped : "{}");
        text.failed |= content && !dumped;
        free (dumped);
    }
    if (out) {
        s_add_str (&text, ",\"bn_stdout\":");
        s_add_json_string (&text, out);
    }
    if (err) {
        s_add_str (&text, ",\"bn_stderr\":");
        s_add_json_string (&text, err);
    }
    s_add (&text, "}", 1);
    if (text.failed) {
        free (text.data);
        return NULL;
    }
    return text.data;
}

json_t *
bn_merged_group (const char *engines, const char *status, size_t nbuffers,
                 json_t *content, const char *out, const char *err)
{
    assert (engines);
    assert (status);
    json_t *group = json_pack ("{s:s, s:s, s:I}", "engines", engines, "status",
                               status, "nbuffers", (json_int_t)nbuffers);
    if (group && content && json_object_set (group, "content", content)) {
        json_decref (group);
        return NULL;
    }
    //  texts that are not UTF-8 are left out rather than the group
    if (group && out)
        json_object_set_new (group, "bn_stdout", json_string (out));
    if (group && err)
        json_object_set_new (group, "bn_stderr", json_string (err));
    return group;
}

json_t *
bn_merged_reduced (const char *op, const char *engines)
{
    assert (op);
    assert (engines);
    return json_pack ("{s:s, s:s, s:[]}", "op", op, "engines", engines,
                      "failed");
}

int
bn_merged_reduced_fail (json_t *reduced, const char *engines, json_t *content)
{
    assert (reduced);
    assert (engines);
    json_t *failure =
        json_pack ("{s:s, s:O}", "engines", engines, "content", content);
    return failure ? json_array_append_new (json_object_get (reduced, "failed"),
                                            failure)
                   : -1;
}

int
bn_merged_reduced_set_error (json_t *reduced, json_t *content)
{
    assert (reduced);
    assert (content);
    return json_object_set (reduced, "error", content);
}

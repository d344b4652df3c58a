/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_item: one request of a result, filled in from its reply (or an
    entry of a merged one), its iopub output and its engine's fate.  */
#include "bn_item.h"

#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_rawtext.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

//  Growing text (stdout or stderr).
typedef struct {
    char *data; //  NUL-terminated, or NULL when empty
    size_t len; //  bytes used
    size_t cap; //  bytes allocated
} s_text_t;

struct _bn_item_t {
    bn_result_t *owner;    //  told when the item completes
    size_t index;          //  place in the owner
    bn_item_done_fn *done; //  what to tell it
    bn_item_kind_t kind;   //  what the request is
    bool output_in_reply;  //  the request asked for bn_output: "reply"
    bool via_broadcast;    //  sent to the broadcast scheduler
    char *msg_id;          //  the request's msg_id
    char *engine_uuid;     //  engine, once known
    int engine_id;         //  its id, or -1
    bool replied;          //  the reply (or a failure) has been recorded
    bool idle;             //  the engine reported idle for the request
    bool complete;         //  nothing more will change
    int status;            //  0 or a BN_E* code
    char *submitted;       //  request date
    char *started;         //  reply metadata.started
    char *completed;       //  reply header.date
    json_t *content;       //  reply content
    char *content_text;    //  the same as JSON, made on demand
    bn_value_t *value;     //  decoded apply result
    char *execute_result;  //  text/plain of execute_result
    int execution_count;   //  from an execute_reply, or -1
    char *ename;           //  exception name of a failure
    char *evalue;          //  exception value
    char *traceback;       //  traceback lines joined by newlines
    s_text_t out;          //  stdout
    s_text_t err;          //  stderr
    json_t *hops;          //  bn_hops of the reply's message, or NULL
    int group;             //  group it arrived in, or -1
    bn_msg_t *raw;         //  a hub query's reply (buffers shared)
};

bn_item_t *
bn_item_new (const char *msg_id, const char *date, int engine_id,
             const char *uuid, bn_item_kind_t kind, bool output_in_reply,
             bn_item_done_fn *done, bn_result_t *owner, size_t index)
{
    assert (msg_id);
    assert (done);
    bn_item_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->msg_id = strdup (msg_id);
    self->submitted = date ? strdup (date) : NULL;
    self->engine_uuid = uuid ? strdup (uuid) : NULL;
    if (!self->msg_id || (date && !self->submitted) ||
        (uuid && !self->engine_uuid)) {
        bn_item_destroy (&self);
        return NULL;
    }
    self->owner = owner;
    self->index = index;
    self->done = done;
    self->kind = kind;
    self->output_in_reply = output_in_reply;
    self->engine_id = engine_id;
    self->execution_count = -1;
    self->group = -1;
    return self;
}

void
bn_item_destroy (bn_item_t **self_p)
{
    assert (self_p);
    bn_item_t *self = *self_p;
    if (!self)
        return;
    free (self->msg_id);
    free (self->engine_uuid);
    free (self->submitted);
    free (self->started);
    free (self->completed);
    json_decref (self->content);
    free (self->content_text);
    bn_value_destroy (&self->value);
    free (self->execute_result);
    free (self->ename);
    free (self->evalue);
    free (self->traceback);
    free (self->out.data);
    free (self->err.data);
    json_decref (self->hops);
    bn_msg_destroy (&self->raw);
    free (self);
    *self_p = NULL;
}

static bool
s_complete (bn_item_t *self)
{
    assert (!self->complete);
    self->complete = true;
    self->done (self->owner, self->index);
    return true;
}

static char *
s_strdup_json (json_t *value)
{
    const char *text = json_string_value (value);
    return text ? strdup (text) : NULL;
}

static void
s_set_error (bn_item_t *self, int code, const char *ename, const char *evalue)
{
    self->status = code;
    free (self->ename);
    free (self->evalue);
    self->ename = strdup (ename ? ename : "Error");
    self->evalue = strdup (evalue ? evalue : "");
}

//  Traceback lines joined by newlines (lines that end in one keep it).
static char *
s_join_traceback (json_t *lines)
{
    size_t size = 1;
    size_t index;
    json_t *line;
    json_array_foreach (lines, index, line) size +=
        json_string_length (line) + 1;
    char *text = malloc (size);
    if (!text)
        return NULL;
    size_t at = 0;
    json_array_foreach (lines, index, line)
    {
        const char *piece = json_string_value (line);
        if (!piece)
            continue;
        size_t len = json_string_length (line);
        memcpy (text + at, piece, len);
        at += len;
        if (len == 0 || piece[len - 1] != '\n')
            text[at++] = '\n';
    }
    //  No newline after the last line
    if (at > 0 && text[at - 1] == '\n')
        at--;
    text[at] = 0;
    return text;
}

static int s_append (s_text_t *text, const char *data, size_t len);
static int s_append_raw (s_text_t *text, const char *data, size_t len);

bool
bn_item_on_entry (bn_item_t *self, bn_reply_t *reply)
{
    bn_value_t *value = reply->value;
    reply->value = NULL;
    if (self->replied || self->complete) {
        bn_value_destroy (&value);
        return false;
    }
    //  a hub query's answer may carry buffers (result_reply, db_reply)
    if (self->kind == BN_ITEM_QUERY && reply->raw && !self->raw)
        self->raw = bn_msg_dup (reply->raw);
    json_t *content = reply->content;
    const char *status =
        json_string_value (json_object_get (content, "status"));
    //  The Python client ignores these too: a resubmitted task's reply
    //  comes to the hub, not to us.
    if (status && strcmp (status, "resubmitted") == 0) {
        bn_value_destroy (&value);
        return false;
    }
    if (!self->engine_uuid) {
        self->engine_uuid = reply->uuid ? strdup (reply->uuid) : NULL;
        self->engine_id = reply->engine_id;
    }
    free (self->started);
    self->started = reply->started ? strdup (reply->started) : NULL;
    free (self->completed);
    self->completed = reply->completed ? strdup (reply->completed) : NULL;
    json_decref (self->content);
    self->content = json_incref (content);
    json_decref (self->hops);
    self->hops = json_is_array (reply->hops) ? json_incref (reply->hops) : NULL;
    json_t *count = json_object_get (content, "execution_count");
    if (json_is_integer (count))
        self->execution_count = (int)json_integer_value (count);
    //  Output that came inside the reply is all of it: no iopub follows.
    //  When the request asked for it there (bn_output), a reply without
    //  it had none (the tree leaves out empty texts); a stock engine
    //  ignores bn_output, and its iopub output counts as far as it came
    //  before its reply.
    if (reply->out || reply->err || reply->no_output || self->output_in_reply) {
        if ((reply->out &&
             s_append_raw (&self->out, reply->out, strlen (reply->out)) != 0) ||
            (reply->err &&
             s_append_raw (&self->err, reply->err, strlen (reply->err)) != 0))
            bn_log_warn ("client: out of memory for output");
        self->idle = true;
    }

    bool output = false;
    if (!status)
        s_set_error (self, BN_EPROTO, "ProtocolError",
                     "the reply has no status");
    else if (strcmp (status, BN_STATUS_OK) == 0) {
        output = true;
        if (reply->decode_error)
            s_set_error (self, reply->decode_error, "UnpicklingError",
                         reply->why);
        self->value = value;
        value = NULL;
    } else if (strcmp (status, BN_STATUS_ABORTED) == 0)
        s_set_error (self, BN_EABORTED, "TaskAborted", self->msg_id);
    else if (strcmp (status, BN_STATUS_ERROR) == 0) {
        const char *ename =
            json_string_value (json_object_get (content, "ename"));
        json_t *info = json_object_get (content, "engine_info");
        bool from_engine = json_is_object (info) && json_object_size (info);
        //  A controller without a scheduler for this view says so itself
        //  (no engine_info); an engine's NotImplementedError stays remote.
        //  EngineError is how the hub, a scheduler or a stopping engine
        //  report a request stranded on an engine that went away.
        int code = BN_EREMOTE;
        if (ename && strcmp (ename, "EngineError") == 0)
            code = BN_EENGINEDIED;
        else if (ename && !from_engine &&
                 strcmp (ename, "NotImplementedError") == 0)
            code = BN_ENOTSUP;
        s_set_error (self, code, ename,
                     json_string_value (json_object_get (content, "evalue")));
        json_t *traceback = json_object_get (content, "traceback");
        if (json_is_array (traceback))
            self->traceback = s_join_traceback (traceback);
        //  A failure the engine itself reports comes with output; one
        //  from the hub or a scheduler (no engine_info) does not.
        output = from_engine;
    } else
        s_set_error (self, BN_EPROTO, "ProtocolError", status);
    bn_value_destroy (&value);
    self->replied = true;
    if (self->kind != BN_ITEM_SHELL || !output || self->idle)
        return s_complete (self);
    return false;
}

static int
s_append (s_text_t *text, const char *data, size_t len)
{
    if (text->len + len + 1 > text->cap) {
        size_t cap = text->cap ? text->cap * 2 : 256;
        while (cap < text->len + len + 1)
            cap *= 2;
        char *bigger = realloc (text->data, cap);
        if (!bigger)
            return -1;
        text->data = bigger;
        text->cap = cap;
    }
    memcpy (text->data + text->len, data, len);
    text->len += len;
    text->data[text->len] = 0;
    return 0;
}

//  Append text as bn_rawtext encoded it: the bytes it stands for.
static int
s_append_raw (s_text_t *text, const char *data, size_t len)
{
    size_t old = text->len;
    if (s_append (text, data, len) != 0)
        return -1;
    if (len)
        text->len = old + bn_rawtext_decode (text->data + old, len);
    return 0;
}

bool
bn_item_on_iopub (bn_item_t *self, const char *msg_type, json_t *content)
{
    if (self->complete)
        return false;
    if (strcmp (msg_type, BN_MSG_STREAM) == 0) {
        const char *name =
            json_string_value (json_object_get (content, "name"));
        json_t *text = json_object_get (content, "text");
        //  a banyan engine's exact bytes, when the text could not hold them
        json_t *bytes = json_object_get (content, BN_STREAM_BYTES);
        if (name && json_is_string (text)) {
            s_text_t *into =
                strcmp (name, "stderr") == 0 ? &self->err : &self->out;
            if ((json_is_string (bytes)
                     ? s_append_raw (into, json_string_value (bytes),
                                     json_string_length (bytes))
                     : s_append (into, json_string_value (text),
                                 json_string_length (text))) != 0)
                bn_log_warn ("client: out of memory for output");
        }
    } else if (strcmp (msg_type, BN_MSG_EXECUTE_RESULT) == 0) {
        json_t *data = json_object_get (content, "data");
        char *plain = s_strdup_json (json_object_get (data, "text/plain"));
        if (plain) {
            free (self->execute_result);
            self->execute_result = plain;
        }
    } else if (strcmp (msg_type, BN_MSG_STATUS) == 0) {
        const char *state =
            json_string_value (json_object_get (content, "execution_state"));
        if (state && strcmp (state, "idle") == 0) {
            self->idle = true;
            if (self->replied)
                return s_complete (self);
        }
    }
    return false;
}

bool
bn_item_fail (bn_item_t *self, int code, const char *ename, const char *evalue)
{
    if (self->complete)
        return false;
    if (!self->replied) {
        s_set_error (self, code, ename, evalue);
        self->replied = true;
    }
    return s_complete (self);
}

bool
bn_item_engine_died (bn_item_t *self, int id)
{
    if (self->complete || self->kind == BN_ITEM_QUERY)
        return false;
    if (self->kind == BN_ITEM_SHUTDOWN) {
        self->replied = true;
        return s_complete (self);
    }
    char evalue[256];
    snprintf (evalue, sizeof evalue, "Engine %d died while running task '%s'",
              id, self->msg_id);
    return bn_item_fail (self, BN_EENGINEDIED, "EngineError", evalue);
}

void
bn_item_set_via_broadcast (bn_item_t *self)
{
    self->via_broadcast = true;
}

bool
bn_item_via_broadcast (bn_item_t *self)
{
    return self->via_broadcast;
}

void
bn_item_set_group (bn_item_t *self, int group)
{
    self->group = group;
}

bn_result_t *
bn_item_result (bn_item_t *self)
{
    return self->owner;
}

const char *
bn_item_msg_id (bn_item_t *self)
{
    return self->msg_id;
}

const char *
bn_item_submitted (bn_item_t *self)
{
    return self->submitted;
}

bn_item_kind_t
bn_item_kind (bn_item_t *self)
{
    return self->kind;
}

const char *
bn_item_engine_uuid (bn_item_t *self)
{
    return self->engine_uuid;
}

int
bn_item_engine_id (bn_item_t *self)
{
    return self->engine_id;
}

bool
bn_item_replied (bn_item_t *self)
{
    return self->replied;
}

bool
bn_item_complete (bn_item_t *self)
{
    return self->complete;
}

int
bn_item_status (bn_item_t *self)
{
    return self->status;
}

const char *
bn_item_started (bn_item_t *self)
{
    return self->started;
}

const char *
bn_item_completed (bn_item_t *self)
{
    return self->completed;
}

json_t *
bn_item_content (bn_item_t *self)
{
    return self->content;
}

const char *
bn_item_content_text (bn_item_t *self)
{
    if (!self->content_text && self->content)
        self->content_text = json_dumps (self->content, JSON_COMPACT);
    return self->content_text;
}

const bn_value_t *
bn_item_value (bn_item_t *self)
{
    return self->value;
}

const char *
bn_item_execute_result (bn_item_t *self)
{
    return self->execute_result;
}

int
bn_item_execution_count (bn_item_t *self)
{
    return self->execution_count;
}

const char *
bn_item_ename (bn_item_t *self)
{
    return self->ename;
}

const char *
bn_item_evalue (bn_item_t *self)
{
    return self->evalue;
}

const char *
bn_item_traceback (bn_item_t *self)
{
    return self->traceback;
}

const char *
bn_item_stdout (bn_item_t *self)
{
    return self->out.data ? self->out.data : "";
}

const char *
bn_item_stderr (bn_item_t *self)
{
    return self->err.data ? self->err.data : "";
}

size_t
bn_item_stdout_size (bn_item_t *self)
{
    return self->out.len;
}

size_t
bn_item_stderr_size (bn_item_t *self)
{
    return self->err.len;
}

json_t *
bn_item_hops (bn_item_t *self)
{
    return self->hops;
}

int
bn_item_group (bn_item_t *self)
{
    return self->group;
}

bn_msg_t *
bn_item_raw (bn_item_t *self)
{
    return self->raw;
}

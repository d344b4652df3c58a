/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_result: what a call returns: one item per request (per engine or
    task), filled in by the client's I/O thread as replies and output
    arrive, read by the caller once complete.

    Every field of an item is written with the client's lock held and
    never again once the item is complete, so accessors take the lock
    only to see that the item is complete and then read without it.  */
#include "bn_client_private.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_reduction.h"

#include <assert.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>

//  Growing text (stdout or stderr).
typedef struct {
    char *data; //  NUL-terminated, or NULL when empty
    size_t len; //  bytes used
    size_t cap; //  bytes allocated
} s_text_t;

struct _bn_item_t {
    bn_result_t *result;  //  owner
    size_t index;         //  place in the result
    bn_item_kind_t kind;  //  what the request is
    char *msg_id;         //  the request's msg_id
    char *engine_uuid;    //  engine, once known
    int engine_id;        //  its id, or -1
    bool replied;         //  the reply (or a failure) has been recorded
    bool idle;            //  the engine reported idle for the request
    bool complete;        //  nothing more will change
    int status;           //  0 or a BN_E* code
    char *submitted;      //  request date
    char *started;        //  reply metadata.started
    char *completed;      //  reply header.date
    json_t *content;      //  reply content
    char *content_text;   //  the same as JSON, made on demand
    bn_value_t *value;    //  decoded apply result
    char *execute_result; //  text/plain of execute_result
    int execution_count;  //  from an execute_reply, or -1
    char *ename;          //  exception name of a failure
    char *evalue;         //  exception value
    char *traceback;      //  traceback lines joined by newlines
    s_text_t out;         //  stdout
    s_text_t err;         //  stderr
    json_t *hops;         //  bn_hops of the reply's message, or NULL
    int group;            //  group it arrived in, or -1
    bn_msg_t *raw;        //  a hub query's reply (buffers shared)
};

struct _bn_result_t {
    bn_client_t *client;         //  reference held
    bn_item_t *items;            //  capacity items, count in use
    size_t count;                //  items in use
    size_t capacity;             //  items allocated
    size_t *order;               //  indexes in completion order
    size_t ncomplete;            //  complete items
    size_t handed;               //  items handed out by bn_result_next
    double sent;                 //  clock when the first item was added
    double done;                 //  clock when the last item completed
    bool output_in_reply;        //  the request asked for bn_output: "reply"
    size_t messages;             //  reply messages received
    bn_idset_t **groups;         //  engines of each group, in arrival order
    size_t ngroups;              //  groups in use
    char *reduced_op;            //  reduction the tree reported, or NULL
    bn_value_t **parts;          //  reduced values as they came
    size_t nparts;               //  entries in parts
    bn_value_t *combined;        //  their combination, or NULL
    bool uncombinable;           //  parts that this library cannot combine
    bn_idset_t *reduced_engines; //  contributors, or NULL
    bn_idset_t *reduced_failed;  //  failed engines, or NULL
};

//  -------------------------------------------------------------------
//  Internal API

bn_result_t *
bn_result_new (bn_client_t *client, size_t capacity)
{
    assert (client);
    bn_result_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->items = calloc (capacity ? capacity : 1, sizeof *self->items);
    self->order = calloc (capacity ? capacity : 1, sizeof *self->order);
    if (!self->items || !self->order) {
        free (self->items);
        free (self->order);
        free (self);
        return NULL;
    }
    self->capacity = capacity;
    self->client = client;
    bn_client_ref (client);
    return self;
}

bn_item_t *
bn_result_add (bn_result_t *self, const char *msg_id, const char *date,
               int engine_id, const char *uuid, bn_item_kind_t kind)
{
    assert (self);
    assert (msg_id);
    if (self->count == self->capacity)
        return NULL;
    bn_item_t *item = &self->items[self->count];
    item->msg_id = strdup (msg_id);
    item->submitted = date ? strdup (date) : NULL;
    item->engine_uuid = uuid ? strdup (uuid) : NULL;
    if (!item->msg_id || (date && !item->submitted) ||
        (uuid && !item->engine_uuid)) {
        free (item->msg_id);
        free (item->submitted);
        free (item->engine_uuid);
        memset (item, 0, sizeof *item);
        return NULL;
    }
    item->result = self;
    item->index = self->count;
    item->kind = kind;
    item->engine_id = engine_id;
    item->execution_count = -1;
    item->group = -1;
    if (self->count == 0)
        self->sent = zclock_usecs () / 1e6;
    self->count++;
    return item;
}

bn_msg_t *
bn_result_reply_msg (bn_result_t *self, size_t index)
{
    assert (self);
    return index < self->count && self->items[index].complete
               ? self->items[index].raw
               : NULL;
}

bn_item_t *
bn_result_item (bn_result_t *self, size_t index)
{
    assert (self);
    assert (index < self->count);
    return &self->items[index];
}

bn_client_t *
bn_result_client (bn_result_t *self)
{
    assert (self);
    return self->client;
}

json_t *
bn_result_reply (bn_result_t *self, size_t index)
{
    assert (self);
    if (index >= self->count)
        return NULL;
    bn_item_t *item = &self->items[index];
    bn_client_lock (self->client);
    json_t *content = item->complete ? item->content : NULL;
    bn_client_unlock (self->client);
    return content;
}

void
bn_result_set_output_in_reply (bn_result_t *self, bool in_reply)
{
    assert (self);
    self->output_in_reply = in_reply;
}

bool
bn_result_output_in_reply (bn_result_t *self)
{
    assert (self);
    return self->output_in_reply;
}

void
bn_result_count_message (bn_result_t *self)
{
    assert (self);
    self->messages++;
}

int
bn_result_add_group (bn_result_t *self, bn_idset_t *engines)
{
    assert (self);
    bn_idset_t **bigger =
        realloc (self->groups, (self->ngroups + 1) * sizeof *bigger);
    if (!bigger || !engines) {
        bn_idset_destroy (&engines);
        if (bigger)
            self->groups = bigger;
        return -1;
    }
    self->groups = bigger;
    self->groups[self->ngroups] = engines;
    return (int)self->ngroups++;
}

//  Fold a part (borrowed) into the combination of the parts so far with
//  the built-in reduction op (bn_reduction, the same the tree's nodes
//  apply, so that the answer does not depend on which part came first).
//  A plugin's reduction, another op than the first part's, or parts the
//  built-in refuses leave the parts uncombinable.
static void
s_fold (bn_result_t *self, const char *op, const bn_value_t *part)
{
    const bn_reduction_t *reduction = bn_reduction_builtin (op);
    bn_value_t *value = bn_value_dup (part);
    bn_value_t *acc = self->combined;
    self->combined = NULL;
    if (self->uncombinable || !reduction || !value || !self->reduced_op ||
        strcmp (op, self->reduced_op) != 0) {
        bn_value_destroy (&value);
        bn_value_destroy (&acc);
    } else if (!acc)
        self->combined = value;
    else {
        bn_reduction_error_t error;
        self->combined =
            bn_reduction_call (reduction->combine, op, acc, value, &error);
    }
    self->uncombinable = !self->combined;
}

int
bn_result_add_reduced (bn_result_t *self, const char *op, bn_value_t *value,
                       bn_idset_t *engines, bn_idset_t *failed)
{
    assert (self);
    if (!self->reduced_engines)
        self->reduced_engines = bn_idset_new ();
    if (!self->reduced_failed)
        self->reduced_failed = bn_idset_new ();
    if (!self->reduced_op && op)
        self->reduced_op = strdup (op);
    bn_value_t **bigger =
        value ? realloc (self->parts, (self->nparts + 1) * sizeof *bigger)
              : self->parts;
    if (!self->reduced_engines || !self->reduced_failed || (value && !bigger)) {
        bn_value_destroy (&value);
        return -1;
    }
    for (int id = engines ? bn_idset_first (engines) : -1; id >= 0;
         id = bn_idset_next (engines, id))
        bn_idset_add (self->reduced_engines, id);
    for (int id = failed ? bn_idset_first (failed) : -1; id >= 0;
         id = bn_idset_next (failed, id))
        bn_idset_add (self->reduced_failed, id);
    if (!value)
        return 0;
    self->parts = bigger;
    self->parts[self->nparts++] = value;
    s_fold (self, op, value);
    return 0;
}

bn_result_t *
bn_item_result (bn_item_t *self)
{
    return self->result;
}

void
bn_item_set_group (bn_item_t *self, int group)
{
    self->group = group;
}

const char *
bn_item_msg_id (bn_item_t *self)
{
    return self->msg_id;
}

const char *
bn_item_engine_uuid (bn_item_t *self)
{
    return self->engine_uuid;
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

bn_item_kind_t
bn_item_kind (bn_item_t *self)
{
    return self->kind;
}

static bool
s_complete (bn_item_t *self)
{
    assert (!self->complete);
    self->complete = true;
    bn_result_t *result = self->result;
    result->order[result->ncomplete++] = self->index;
    result->done = zclock_usecs () / 1e6;
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

bool
bn_item_on_reply (bn_item_t *self, bn_msg_t *msg, bn_value_t *value,
                  int decode_error, const char *why, int engine_id)
{
    json_t *content = bn_msg_content (msg);
    json_t *metadata = bn_msg_metadata (msg);
    bn_reply_t reply = {
        .type = bn_msg_type (msg),
        .content = content,
        .started = json_string_value (json_object_get (metadata, "started")),
        .completed =
            json_string_value (json_object_get (bn_msg_header (msg), "date")),
        .out = json_string_value (json_object_get (content, "bn_stdout")),
        .err = json_string_value (json_object_get (content, "bn_stderr")),
        .value = value,
        .decode_error = decode_error,
        .why = why,
        .hops = json_object_get (metadata, "bn_hops"),
        .uuid = json_string_value (json_object_get (metadata, "engine")),
        .engine_id = engine_id};
    //  a hub query's answer may carry buffers (result_reply, db_reply)
    if (self->kind == BN_ITEM_QUERY && !self->replied && !self->raw)
        self->raw = bn_msg_dup (msg);
    return bn_item_on_entry (self, &reply);
}

static int s_append (s_text_t *text, const char *data, size_t len);

bool
bn_item_on_entry (bn_item_t *self, bn_reply_t *reply)
{
    bn_value_t *value = reply->value;
    reply->value = NULL;
    if (self->replied || self->complete) {
        bn_value_destroy (&value);
        return false;
    }
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
    if (reply->out || reply->err || reply->no_output ||
        self->result->output_in_reply) {
        if ((reply->out &&
             s_append (&self->out, reply->out, strlen (reply->out)) != 0) ||
            (reply->err &&
             s_append (&self->err, reply->err, strlen (reply->err)) != 0))
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

bool
bn_item_on_iopub (bn_item_t *self, const char *msg_type, json_t *content)
{
    if (self->complete)
        return false;
    if (strcmp (msg_type, BN_MSG_STREAM) == 0) {
        const char *name =
            json_string_value (json_object_get (content, "name"));
        json_t *text = json_object_get (content, "text");
        if (name && json_is_string (text)) {
            s_text_t *into =
                strcmp (name, "stderr") == 0 ? &self->err : &self->out;
            if (s_append (into, json_string_value (text),
                          json_string_length (text)) != 0)
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

//  -------------------------------------------------------------------
//  Public API

void
bn_result_destroy (bn_result_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    bn_result_t *self = *self_p;
    *self_p = NULL;
    bn_client_lock (self->client);
    for (size_t i = 0; i < self->count; i++)
        if (!self->items[i].complete)
            bn_client_untrack (self->client, &self->items[i]);
    bn_client_unlock (self->client);
    for (size_t i = 0; i < self->count; i++) {
        bn_item_t *item = &self->items[i];
        free (item->msg_id);
        free (item->engine_uuid);
        free (item->submitted);
        free (item->started);
        free (item->completed);
        json_decref (item->content);
        free (item->content_text);
        bn_value_destroy (&item->value);
        free (item->execute_result);
        free (item->ename);
        free (item->evalue);
        free (item->traceback);
        free (item->out.data);
        free (item->err.data);
        json_decref (item->hops);
        bn_msg_destroy (&item->raw);
    }
    for (size_t i = 0; i < self->ngroups; i++)
        bn_idset_destroy (&self->groups[i]);
    free (self->groups);
    for (size_t i = 0; i < self->nparts; i++)
        bn_value_destroy (&self->parts[i]);
    free (self->parts);
    bn_value_destroy (&self->combined);
    free (self->reduced_op);
    bn_idset_destroy (&self->reduced_engines);
    bn_idset_destroy (&self->reduced_failed);
    free (self->items);
    free (self->order);
    bn_client_unref (&self->client);
    free (self);
}

size_t
bn_result_count (bn_result_t *self)
{
    return self ? self->count : 0;
}

size_t
bn_result_progress (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_client_lock (self->client);
    size_t done = self->ncomplete;
    bn_client_unlock (self->client);
    return done;
}

bool
bn_result_ready (bn_result_t *self)
{
    return self && bn_result_progress (self) == self->count;
}

int
bn_result_wait (bn_result_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_client_deadline (timeout);
    int rc = 0;
    bn_client_lock (self->client);
    while (self->ncomplete < self->count && rc == 0)
        rc = bn_client_wait_change (self->client, deadline);
    bn_client_unlock (self->client);
    return rc;
}

int
bn_result_get (bn_result_t *self, double timeout)
{
    int rc = bn_result_wait (self, timeout);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < self->count; i++)
        if (self->items[i].status != 0)
            return self->items[i].status;
    return 0;
}

int
bn_result_next (bn_result_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_client_deadline (timeout);
    int rc = 0;
    bn_client_lock (self->client);
    while (true) {
        if (self->handed < self->ncomplete) {
            rc = (int)self->order[self->handed++];
            break;
        }
        if (self->handed == self->count) {
            rc = BN_ENOENT;
            break;
        }
        rc = bn_client_wait_change (self->client, deadline);
        if (rc != 0)
            break;
    }
    bn_client_unlock (self->client);
    return rc;
}

double
bn_result_elapsed (bn_result_t *self)
{
    if (!self || self->count == 0)
        return 0;
    bn_client_lock (self->client);
    double end =
        self->ncomplete == self->count ? self->done : zclock_usecs () / 1e6;
    bn_client_unlock (self->client);
    return end - self->sent;
}

//  The item at index if it is complete, else NULL.
static bn_item_t *
s_complete_item (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return NULL;
    bn_item_t *item = &self->items[index];
    bn_client_lock (self->client);
    bool complete = item->complete;
    bn_client_unlock (self->client);
    return complete ? item : NULL;
}

const char *
bn_result_msg_id (bn_result_t *self, size_t index)
{
    return self && index < self->count ? self->items[index].msg_id : NULL;
}

int
bn_result_status (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return BN_EINVAL;
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->status : BN_ENOTREADY;
}

int
bn_result_engine_id (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return -1;
    bn_client_lock (self->client);
    int id = self->items[index].engine_id;
    bn_client_unlock (self->client);
    return id;
}

const char *
bn_result_engine_uuid (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return NULL;
    bn_client_lock (self->client);
    const char *uuid = self->items[index].engine_uuid;
    bn_client_unlock (self->client);
    return uuid;
}

const char *
bn_result_submitted (bn_result_t *self, size_t index)
{
    return self && index < self->count ? self->items[index].submitted : NULL;
}

const char *
bn_result_started (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->started : NULL;
}

const char *
bn_result_completed (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->completed : NULL;
}

const char *
bn_result_stdout (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? (item->out.data ? item->out.data : "") : NULL;
}

const char *
bn_result_stderr (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? (item->err.data ? item->err.data : "") : NULL;
}

const bn_value_t *
bn_result_value (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->value : NULL;
}

const char *
bn_result_execute_result (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->execute_result : NULL;
}

int
bn_result_execution_count (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? item->execution_count : -1;
}

const char *
bn_result_ename (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && item->status ? item->ename : NULL;
}

const char *
bn_result_evalue (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && item->status ? item->evalue : NULL;
}

const char *
bn_result_traceback (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && item->status ? item->traceback : NULL;
}

const char *
bn_result_content (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    if (!item || !item->content)
        return NULL;
    //  Made once, under the lock, so that concurrent callers agree.
    bn_client_lock (self->client);
    if (!item->content_text)
        item->content_text = json_dumps (item->content, JSON_COMPACT);
    bn_client_unlock (self->client);
    return item->content_text;
}

size_t
bn_result_messages (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_client_lock (self->client);
    size_t messages = self->messages;
    bn_client_unlock (self->client);
    return messages;
}

size_t
bn_result_group_count (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_client_lock (self->client);
    size_t count = self->ngroups;
    bn_client_unlock (self->client);
    return count;
}

bn_idset_t *
bn_result_group_engines (bn_result_t *self, size_t group)
{
    if (!self)
        return NULL;
    bn_client_lock (self->client);
    bn_idset_t *engines = group < self->ngroups ? self->groups[group] : NULL;
    bn_client_unlock (self->client);
    return engines;
}

int
bn_result_group_of (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return -1;
    bn_client_lock (self->client);
    int group = self->items[index].group;
    bn_client_unlock (self->client);
    return group;
}

const bn_value_t *
bn_result_reduced (bn_result_t *self)
{
    if (!bn_result_ready (self))
        return NULL;
    bn_client_lock (self->client);
    const bn_value_t *value = self->nparts == 1    ? self->parts[0]
                              : self->uncombinable ? NULL
                                                   : self->combined;
    bn_client_unlock (self->client);
    return value;
}

const char *
bn_result_reduced_op (bn_result_t *self)
{
    if (!self)
        return NULL;
    bn_client_lock (self->client);
    const char *op = self->reduced_op;
    bn_client_unlock (self->client);
    return op;
}

size_t
bn_result_reduced_count (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_client_lock (self->client);
    size_t count = self->nparts;
    bn_client_unlock (self->client);
    return count;
}

const bn_value_t *
bn_result_reduced_part (bn_result_t *self, size_t part)
{
    if (!self)
        return NULL;
    bn_client_lock (self->client);
    const bn_value_t *value = part < self->nparts ? self->parts[part] : NULL;
    bn_client_unlock (self->client);
    return value;
}

//  *set_p, made empty on first use, under the lock.
static bn_idset_t *
s_reduced_set (bn_result_t *self, bn_idset_t **set_p)
{
    if (!self)
        return NULL;
    bn_client_lock (self->client);
    if (!*set_p)
        *set_p = bn_idset_new ();
    bn_idset_t *set = *set_p;
    bn_client_unlock (self->client);
    return set;
}

bn_idset_t *
bn_result_reduced_engines (bn_result_t *self)
{
    return s_reduced_set (self, self ? &self->reduced_engines : NULL);
}

bn_idset_t *
bn_result_reduced_failed (bn_result_t *self)
{
    return s_reduced_set (self, self ? &self->reduced_failed : NULL);
}

size_t
bn_result_hop_count (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && item->hops ? json_array_size (item->hops) : 0;
}

int
bn_result_hop (bn_result_t *self, size_t index, size_t hop, const char **node,
               const char **received, const char **sent)
{
    if (!self || index >= self->count)
        return BN_EINVAL;
    bn_item_t *item = s_complete_item (self, index);
    if (!item)
        return BN_ENOTREADY;
    json_t *entry = item->hops ? json_array_get (item->hops, hop) : NULL;
    if (!json_is_object (entry))
        return BN_EINVAL;
    if (node)
        *node = json_string_value (json_object_get (entry, "node"));
    if (received)
        *received = json_string_value (json_object_get (entry, "received"));
    if (sent)
        *sent = json_string_value (json_object_get (entry, "sent"));
    return 0;
}

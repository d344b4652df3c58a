/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_result: what a call returns: one item per request (per engine or
    task), filled in by the client's I/O thread as replies and output
    arrive, read by the caller once complete.

    Items are written with the tracker's lock held and never again once
    complete, so accessors take the lock only to see that an item is
    complete and then read without it.  */
#include "bn_result_private.h"

#include "bn_reduction.h"

#include <assert.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>

struct _bn_result_t {
    bn_tracker_t *tracker;         //  reference held
    bn_client_t *client;           //  where it came from (reference), or NULL
    bn_result_release_fn *release; //  how to drop that reference
    bn_item_t **items;             //  capacity items, count in use
    size_t count;                  //  items in use
    size_t capacity;               //  items allocated
    size_t *order;                 //  indexes in completion order
    size_t ncomplete;              //  complete items
    size_t handed;                 //  items handed out by bn_result_next
    double sent;                   //  clock when the first item was added
    double done;                   //  clock when the last item completed
    bool output_in_reply;          //  the request asked for bn_output: "reply"
    size_t messages;               //  reply messages received
    bn_idset_t **groups;           //  engines of each group, in arrival order
    size_t ngroups;                //  groups in use
    char *reduced_op;              //  reduction the tree reported, or NULL
    bn_value_t **parts;            //  reduced values as they came
    size_t nparts;                 //  entries in parts
    bn_value_t *combined;          //  their combination, or NULL
    bool uncombinable;             //  parts that this library cannot combine
    bn_idset_t *reduced_engines;   //  contributors, or NULL
    bn_idset_t *reduced_failed;    //  failed engines, or NULL
};

//  -------------------------------------------------------------------
//  Internal API

bn_result_t *
bn_result_new (bn_tracker_t *tracker, size_t capacity)
{
    assert (tracker);
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
    self->tracker = tracker;
    bn_tracker_ref (tracker);
    return self;
}

//  An item completed (bn_item_done_fn): it comes next in completion order.
static void
s_item_done (bn_result_t *self, size_t index)
{
    self->order[self->ncomplete++] = index;
    self->done = zclock_usecs () / 1e6;
}

bn_item_t *
bn_result_add (bn_result_t *self, const char *msg_id, const char *date,
               int engine_id, const char *uuid, bn_item_kind_t kind)
{
    assert (self);
    assert (msg_id);
    if (self->count == self->capacity)
        return NULL;
    bn_item_t *item =
        bn_item_new (msg_id, date, engine_id, uuid, kind, self->output_in_reply,
                     s_item_done, self, self->count);
    if (!item)
        return NULL;
    self->items[self->count] = item;
    if (self->count == 0)
        self->sent = zclock_usecs () / 1e6;
    self->count++;
    return item;
}

bn_msg_t *
bn_result_reply_msg (bn_result_t *self, size_t index)
{
    assert (self);
    return index < self->count && bn_item_complete (self->items[index])
               ? bn_item_raw (self->items[index])
               : NULL;
}

bn_item_t *
bn_result_item (bn_result_t *self, size_t index)
{
    assert (self);
    assert (index < self->count);
    return self->items[index];
}

void
bn_result_set_client (bn_result_t *self, bn_client_t *client,
                      bn_result_release_fn *release)
{
    assert (self);
    assert (!self->client);
    self->client = client;
    self->release = release;
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
    bn_item_t *item = self->items[index];
    bn_tracker_lock (self->tracker);
    json_t *content = bn_item_complete (item) ? bn_item_content (item) : NULL;
    bn_tracker_unlock (self->tracker);
    return content;
}

void
bn_result_set_output_in_reply (bn_result_t *self, bool in_reply)
{
    assert (self);
    self->output_in_reply = in_reply;
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

//  -------------------------------------------------------------------
//  Public API

void
bn_result_destroy (bn_result_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    bn_result_t *self = *self_p;
    *self_p = NULL;
    bn_tracker_lock (self->tracker);
    for (size_t i = 0; i < self->count; i++)
        if (!bn_item_complete (self->items[i]))
            bn_tracker_untrack (self->tracker, self->items[i]);
    bn_tracker_unlock (self->tracker);
    for (size_t i = 0; i < self->count; i++)
        bn_item_destroy (&self->items[i]);
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
    bn_tracker_unref (&self->tracker);
    if (self->release)
        self->release (&self->client);
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
    bn_tracker_lock (self->tracker);
    //  a deadline already past: replies that have come are read, if no
    //  other thread is reading them, without waiting for more
    if (self->ncomplete < self->count)
        bn_tracker_wait_change (self->tracker, 0);
    size_t done = self->ncomplete;
    bn_tracker_unlock (self->tracker);
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
    double deadline = bn_tracker_deadline (timeout);
    int rc = 0;
    bn_tracker_lock (self->tracker);
    while (self->ncomplete < self->count && rc == 0)
        rc = bn_tracker_wait_change (self->tracker, deadline);
    bn_tracker_unlock (self->tracker);
    return rc;
}

int
bn_result_get (bn_result_t *self, double timeout)
{
    int rc = bn_result_wait (self, timeout);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < self->count; i++)
        if (bn_item_status (self->items[i]) != 0)
            return bn_item_status (self->items[i]);
    return 0;
}

int
bn_result_next (bn_result_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_tracker_deadline (timeout);
    int rc = 0;
    bn_tracker_lock (self->tracker);
    while (true) {
        if (self->handed < self->ncomplete) {
            rc = (int)self->order[self->handed++];
            break;
        }
        if (self->handed == self->count) {
            rc = BN_ENOENT;
            break;
        }
        rc = bn_tracker_wait_change (self->tracker, deadline);
        if (rc != 0)
            break;
    }
    bn_tracker_unlock (self->tracker);
    return rc;
}

double
bn_result_elapsed (bn_result_t *self)
{
    if (!self || self->count == 0)
        return 0;
    bn_tracker_lock (self->tracker);
    double end =
        self->ncomplete == self->count ? self->done : zclock_usecs () / 1e6;
    bn_tracker_unlock (self->tracker);
    return end - self->sent;
}

//  The item at index if it is complete, else NULL.
static bn_item_t *
s_complete_item (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return NULL;
    bn_item_t *item = self->items[index];
    bn_tracker_lock (self->tracker);
    bool complete = bn_item_complete (item);
    bn_tracker_unlock (self->tracker);
    return complete ? item : NULL;
}

const char *
bn_result_msg_id (bn_result_t *self, size_t index)
{
    return self && index < self->count ? bn_item_msg_id (self->items[index])
                                       : NULL;
}

int
bn_result_status (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return BN_EINVAL;
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_status (item) : BN_ENOTREADY;
}

int
bn_result_engine_id (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return -1;
    bn_tracker_lock (self->tracker);
    int id = bn_item_engine_id (self->items[index]);
    bn_tracker_unlock (self->tracker);
    return id;
}

const char *
bn_result_engine_uuid (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return NULL;
    bn_tracker_lock (self->tracker);
    const char *uuid = bn_item_engine_uuid (self->items[index]);
    bn_tracker_unlock (self->tracker);
    return uuid;
}

const char *
bn_result_submitted (bn_result_t *self, size_t index)
{
    return self && index < self->count ? bn_item_submitted (self->items[index])
                                       : NULL;
}

const char *
bn_result_started (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_started (item) : NULL;
}

const char *
bn_result_completed (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_completed (item) : NULL;
}

const char *
bn_result_stdout (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_stdout (item) : NULL;
}

const char *
bn_result_stderr (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_stderr (item) : NULL;
}

size_t
bn_result_stdout_size (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_stdout_size (item) : 0;
}

size_t
bn_result_stderr_size (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_stderr_size (item) : 0;
}

const bn_value_t *
bn_result_value (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_value (item) : NULL;
}

const char *
bn_result_execute_result (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_execute_result (item) : NULL;
}

int
bn_result_execution_count (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item ? bn_item_execution_count (item) : -1;
}

const char *
bn_result_ename (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && bn_item_status (item) ? bn_item_ename (item) : NULL;
}

const char *
bn_result_evalue (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && bn_item_status (item) ? bn_item_evalue (item) : NULL;
}

const char *
bn_result_traceback (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    return item && bn_item_status (item) ? bn_item_traceback (item) : NULL;
}

const char *
bn_result_content (bn_result_t *self, size_t index)
{
    bn_item_t *item = s_complete_item (self, index);
    if (!item)
        return NULL;
    //  Made once, under the lock, so that concurrent callers agree.
    bn_tracker_lock (self->tracker);
    const char *text = bn_item_content_text (item);
    bn_tracker_unlock (self->tracker);
    return text;
}

size_t
bn_result_messages (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_tracker_lock (self->tracker);
    size_t messages = self->messages;
    bn_tracker_unlock (self->tracker);
    return messages;
}

size_t
bn_result_group_count (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_tracker_lock (self->tracker);
    size_t count = self->ngroups;
    bn_tracker_unlock (self->tracker);
    return count;
}

bn_idset_t *
bn_result_group_engines (bn_result_t *self, size_t group)
{
    if (!self)
        return NULL;
    bn_tracker_lock (self->tracker);
    bn_idset_t *engines = group < self->ngroups ? self->groups[group] : NULL;
    bn_tracker_unlock (self->tracker);
    return engines;
}

int
bn_result_group_of (bn_result_t *self, size_t index)
{
    if (!self || index >= self->count)
        return -1;
    bn_tracker_lock (self->tracker);
    int group = bn_item_group (self->items[index]);
    bn_tracker_unlock (self->tracker);
    return group;
}

const bn_value_t *
bn_result_reduced (bn_result_t *self)
{
    if (!bn_result_ready (self))
        return NULL;
    bn_tracker_lock (self->tracker);
    const bn_value_t *value = self->nparts == 1    ? self->parts[0]
                              : self->uncombinable ? NULL
                                                   : self->combined;
    bn_tracker_unlock (self->tracker);
    return value;
}

const char *
bn_result_reduced_op (bn_result_t *self)
{
    if (!self)
        return NULL;
    bn_tracker_lock (self->tracker);
    const char *op = self->reduced_op;
    bn_tracker_unlock (self->tracker);
    return op;
}

size_t
bn_result_reduced_count (bn_result_t *self)
{
    if (!self)
        return 0;
    bn_tracker_lock (self->tracker);
    size_t count = self->nparts;
    bn_tracker_unlock (self->tracker);
    return count;
}

const bn_value_t *
bn_result_reduced_part (bn_result_t *self, size_t part)
{
    if (!self)
        return NULL;
    bn_tracker_lock (self->tracker);
    const bn_value_t *value = part < self->nparts ? self->parts[part] : NULL;
    bn_tracker_unlock (self->tracker);
    return value;
}

//  *set_p, made empty on first use, under the lock.
static bn_idset_t *
s_reduced_set (bn_result_t *self, bn_idset_t **set_p)
{
    if (!self)
        return NULL;
    bn_tracker_lock (self->tracker);
    if (!*set_p)
        *set_p = bn_idset_new ();
    bn_idset_t *set = *set_p;
    bn_tracker_unlock (self->tracker);
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
    return item ? json_array_size (bn_item_hops (item)) : 0;
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
    json_t *entry = json_array_get (bn_item_hops (item), hop);
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

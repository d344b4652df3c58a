/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_reduce: one request's partial reduction at a node: lift each
    engine's result, fold partials with combine, keep who contributed and
    who failed.  */
#include "bn_reduce.h"

#include "bn_apply.h"
#include "bn_error.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_msgtypes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bn_idset_t *engines; //  engines that failed this way
    json_t *content;     //  first failure's error content
} s_failure_t;

struct _bn_reduce_t {
    const bn_reduction_t *reduction; //  from the reducers table
    char *op;                        //  full name
    bn_value_t *value;               //  partial so far, or NULL
    bn_idset_t *engines;             //  contributors
    bn_idset_t *seen;                //  contributors and failed engines
    s_failure_t *failures;           //  grouped by ename and evalue
    size_t nfailures;                //  groups in use
    bool sorted;                     //  failures by lowest engine id
    json_t *error;                   //  the reduction's error, or NULL
};

//  An error content as an engine would send it.
static json_t *
s_error_content (const char *ename, const char *evalue)
{
    return json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                      ename, "evalue", evalue, "traceback");
}

//  Fail the whole reduction with content (taken), unless it failed before.
static void
s_fail (bn_reduce_t *self, json_t *content)
{
    if (self->error)
        json_decref (content);
    else {
        self->error = content;
        bn_value_destroy (&self->value);
    }
}

//  Fold a partial (taken) into the value.
static void
s_combine (bn_reduce_t *self, bn_value_t *partial)
{
    if (self->error)
        bn_value_destroy (&partial);
    else if (!self->value)
        self->value = partial;
    else {
        bn_reduction_error_t error;
        bn_value_t *acc = self->value;
        self->value = NULL;
        self->value = bn_reduction_call (self->reduction->combine, self->op,
                                         acc, partial, &error);
        if (!self->value)
            s_fail (self, s_error_content (error.ename, error.evalue));
    }
}

//  True if any id of set was counted already.
static bool
s_overlaps (bn_idset_t *seen, bn_idset_t *set)
{
    for (int id = bn_idset_first (set); id >= 0; id = bn_idset_next (set, id))
        if (bn_idset_contains (seen, id))
            return true;
    return false;
}

//  Add the ids of from to to; -1 if out of memory.
static int
s_union (bn_idset_t *to, bn_idset_t *from)
{
    char *text = bn_idset_encode (from);
    int rc = text ? bn_idset_add_text (to, text) : -1;
    free (text);
    return rc;
}

//  True if both JSON values are the same string or both absent.
static bool
s_same (json_t *a, json_t *b)
{
    const char *x = json_string_value (a), *y = json_string_value (b);
    return x == y || (x && y && strcmp (x, y) == 0);
}

//  Record engines (already checked as new) as failed with content
//  (borrowed). Returns -1 if out of memory.
static int
s_add_failure (bn_reduce_t *self, bn_idset_t *engines, json_t *content)
{
    json_t *ename = json_object_get (content, "ename");
    json_t *evalue = json_object_get (content, "evalue");
    size_t i = 0;
    for (; i < self->nfailures; i++) {
        json_t *other = self->failures[i].content;
        if (s_same (ename, json_object_get (other, "ename")) &&
            s_same (evalue, json_object_get (other, "evalue")))
            break;
    }
    if (i == self->nfailures) {
        s_failure_t *failures = realloc (
            self->failures, (self->nfailures + 1) * sizeof (s_failure_t));
        if (!failures)
            return -1;
        self->failures = failures;
        bn_idset_t *set = bn_idset_new ();
        if (!set)
            return -1;
        self->failures[i] = (s_failure_t){set, json_incref (content)};
        self->nfailures++;
    }
    self->sorted = false;
    if (s_union (self->failures[i].engines, engines) ||
        s_union (self->seen, engines))
        return -1;
    return 0;
}

bn_reduce_t *
bn_reduce_new (bn_reducers_t *reducers, const char *op, char *err,
               size_t errsize)
{
    assert (reducers);
    const bn_reduction_t *reduction = bn_reducers_find (reducers, op);
    if (!reduction) {
        bn_error_set (err, errsize,
                      "no reduction '%s': sum, min, max or "
                      "<plugin>:<name> of a loaded plugin",
                      op ? op : "");
        return NULL;
    }
    bn_reduce_t *self = calloc (1, sizeof (bn_reduce_t));
    if (self) {
        self->reduction = reduction;
        self->op = strdup (op);
        self->engines = bn_idset_new ();
        self->seen = bn_idset_new ();
        self->sorted = true;
        if (!self->op || !self->engines || !self->seen)
            bn_reduce_destroy (&self);
    }
    if (!self)
        bn_error_set (err, errsize, "out of memory");
    return self;
}

void
bn_reduce_destroy (bn_reduce_t **self_p)
{
    assert (self_p);
    bn_reduce_t *self = *self_p;
    if (!self)
        return;
    free (self->op);
    bn_value_destroy (&self->value);
    bn_idset_destroy (&self->engines);
    bn_idset_destroy (&self->seen);
    for (size_t i = 0; i < self->nfailures; i++) {
        bn_idset_destroy (&self->failures[i].engines);
        json_decref (self->failures[i].content);
    }
    free (self->failures);
    json_decref (self->error);
    free (self);
    *self_p = NULL;
}

int
bn_reduce_add_value (bn_reduce_t *self, int eid, bn_value_t **value_p)
{
    assert (self);
    assert (value_p);
    bn_value_t *value = *value_p;
    *value_p = NULL;
    if (eid < 0 || bn_idset_contains (self->seen, eid)) {
        bn_value_destroy (&value);
        return -1;
    }
    bn_value_t *partial = value;
    bn_reduction_error_t error = {"", ""};
    if (self->reduction->lift)
        partial = bn_reduction_call (self->reduction->lift, self->op, NULL,
                                     value, &error);
    if (!partial) {
        bn_idset_t *one = bn_idset_new ();
        json_t *content = s_error_content (error.ename, error.evalue);
        int rc = one && content && bn_idset_add (one, eid) == 0
                     ? s_add_failure (self, one, content)
                     : -1;
        json_decref (content);
        bn_idset_destroy (&one);
        return rc;
    }
    if (bn_idset_add (self->engines, eid) || bn_idset_add (self->seen, eid)) {
        bn_value_destroy (&partial);
        return -1;
    }
    s_combine (self, partial);
    return 0;
}

int
bn_reduce_add_failure (bn_reduce_t *self, bn_idset_t *engines, json_t *content)
{
    assert (self);
    assert (engines);
    if (bn_idset_count (engines) == 0 || s_overlaps (self->seen, engines))
        return -1;
    return s_add_failure (self, engines, content);
}

int
bn_reduce_add_reply (bn_reduce_t *self, int eid, bn_msg_t *reply, char *err,
                     size_t errsize)
{
    assert (self);
    assert (reply);
    json_t *content = bn_msg_content (reply);
    if (!content) {
        bn_error_set (err, errsize, "reply of engine %d has no JSON content",
                      eid);
        return -1;
    }
    if (eid < 0 || bn_idset_contains (self->seen, eid)) {
        bn_error_set (err, errsize, "engine %d already has a reply", eid);
        return -1;
    }
    const char *status =
        json_string_value (json_object_get (content, "status"));
    int rc;
    if (!status || strcmp (status, "ok") != 0) {
        bn_idset_t *one = bn_idset_new ();
        rc = one && bn_idset_add (one, eid) == 0
                 ? s_add_failure (self, one, content)
                 : -1;
        bn_idset_destroy (&one);
    } else {
        size_t nbuffers = bn_msg_nbuffers (reply);
        bn_bytes_t *bytes = calloc (nbuffers ? nbuffers : 1, sizeof *bytes);
        if (!bytes) {
            bn_error_set (err, errsize, "out of memory");
            return -1;
        }
        bn_bytes_from_msg (reply, bytes, nbuffers);
        char problem[256] = "";
        bn_value_t *value =
            bn_apply_decode_result (bytes, nbuffers, problem, sizeof problem);
        free (bytes);
        if (value)
            rc = bn_reduce_add_value (self, eid, &value);
        else {
            char evalue[400];
            snprintf (evalue, sizeof evalue, "cannot decode the result: %s",
                      problem);
            json_t *failure = s_error_content ("ValueError", evalue);
            bn_idset_t *one = bn_idset_new ();
            rc = failure && one && bn_idset_add (one, eid) == 0
                     ? s_add_failure (self, one, failure)
                     : -1;
            bn_idset_destroy (&one);
            json_decref (failure);
        }
    }
    if (rc)
        bn_error_set (err, errsize, "out of memory");
    return rc;
}

int
bn_reduce_add_merged (bn_reduce_t *self, bn_msg_t *merged, char *err,
                      size_t errsize)
{
    assert (self);
    assert (merged);
    if (bn_merged_shape (merged) != BN_MERGED_REDUCED) {
        bn_error_set (err, errsize, "merged reply has no valid %s",
                      BN_BCAST_REDUCED);
        return -1;
    }
    bn_merged_reader_t *reader = bn_merged_reader_new (merged);
    bn_idset_t *engines = NULL;
    bn_idset_t *counted = bn_idset_new ();
    bn_idset_t **sets = NULL;
    json_t **contents = NULL;
    size_t nfailed = 0, cap = 0;
    json_t *error = NULL;
    bn_bytes_t *bytes = NULL;
    bn_value_t *value = NULL;
    int rc = -1;
    if (!reader || !counted)
        goto oom;
    //  first read and check everything, then apply
    bn_merged_entry_t entry;
    int more;
    while ((more = bn_merged_reader_next (reader, &entry)) == 1) {
        if (!entry.failure) {
            engines = bn_idset_dup (entry.engines);
            if (!engines || s_union (counted, engines))
                goto oom;
            continue;
        }
        if (s_overlaps (counted, entry.engines)) {
            bn_error_set (err, errsize, "%s.failed[%zu] names an engine twice",
                          BN_BCAST_REDUCED, nfailed);
            goto done;
        }
        if (nfailed == cap) {
            cap = cap ? 2 * cap : 4;
            bn_idset_t **more_sets = realloc (sets, cap * sizeof *sets);
            if (more_sets)
                sets = more_sets;
            json_t **more_contents = realloc (contents, cap * sizeof *contents);
            if (more_contents)
                contents = more_contents;
            if (!more_sets || !more_contents)
                goto oom;
        }
        sets[nfailed] = bn_idset_dup (entry.engines);
        contents[nfailed] = bn_merged_json (entry.content);
        nfailed++;
        if (!sets[nfailed - 1] || !contents[nfailed - 1] ||
            s_union (counted, entry.engines))
            goto oom;
    }
    if (more < 0) {
        bn_error_set (err, errsize, "%s", bn_merged_reader_error (reader));
        goto done;
    }
    const char *op = bn_merged_reader_op (reader);
    if (strcmp (op, self->op) != 0) {
        bn_error_set (err, errsize,
                      "merged reply reduces with %s, this request with %s", op,
                      self->op);
        goto done;
    }
    if (s_overlaps (self->seen, counted)) {
        bn_error_set (err, errsize,
                      "merged reply names an engine already counted");
        goto done;
    }
    error = bn_merged_reader_reduce_error (reader);
    if (bn_idset_count (engines) > 0 && !error) {
        size_t nbuffers = bn_msg_nbuffers (merged);
        bytes = calloc (nbuffers ? nbuffers : 1, sizeof *bytes);
        if (!bytes)
            goto oom;
        bn_bytes_from_msg (merged, bytes, nbuffers);
        char problem[256] = "";
        value = bn_deserialize_object (bytes, nbuffers, NULL, problem,
                                       sizeof problem);
        if (!value) {
            bn_error_set (err, errsize, "merged reply's value: %s", problem);
            goto done;
        }
    }
    //  Checked: apply.
    if (s_union (self->engines, engines) || s_union (self->seen, engines))
        goto oom;
    for (size_t i = 0; i < nfailed; i++)
        if (s_add_failure (self, sets[i], contents[i]))
            goto oom;
    if (error) {
        s_fail (self, error);
        error = NULL;
    } else if (value) {
        s_combine (self, value);
        value = NULL;
    }
    rc = 0;
    goto done;
oom:
    bn_error_set (err, errsize, "out of memory");
done:
    for (size_t i = 0; i < nfailed; i++) {
        bn_idset_destroy (&sets[i]);
        json_decref (contents[i]);
    }
    free (sets);
    free (contents);
    free (bytes);
    json_decref (error);
    bn_value_destroy (&value);
    bn_idset_destroy (&engines);
    bn_idset_destroy (&counted);
    bn_merged_reader_destroy (&reader);
    return rc;
}

const char *
bn_reduce_op (bn_reduce_t *self)
{
    assert (self);
    return self->op;
}

const bn_value_t *
bn_reduce_value (bn_reduce_t *self)
{
    assert (self);
    return self->value;
}

size_t
bn_reduce_count (bn_reduce_t *self)
{
    assert (self);
    return bn_idset_count (self->engines);
}

size_t
bn_reduce_total (bn_reduce_t *self)
{
    assert (self);
    return bn_idset_count (self->seen);
}

bool
bn_reduce_has (bn_reduce_t *self, int eid)
{
    assert (self);
    return eid >= 0 && bn_idset_contains (self->seen, eid);
}

json_t *
bn_reduce_error (bn_reduce_t *self)
{
    assert (self);
    return self->error;
}

//  Failure groups by lowest engine id (sets are disjoint).
static int
s_compare_failures (const void *a, const void *b)
{
    int x = bn_idset_first (((const s_failure_t *)a)->engines);
    int y = bn_idset_first (((const s_failure_t *)b)->engines);
    return (x > y) - (x < y);
}

//  Failure group index, in order.
static s_failure_t *
s_failure (bn_reduce_t *self, size_t index)
{
    assert (self);
    if (!self->sorted) {
        qsort (self->failures, self->nfailures, sizeof (s_failure_t),
               s_compare_failures);
        self->sorted = true;
    }
    assert (index < self->nfailures);
    return &self->failures[index];
}

size_t
bn_reduce_nfailed (bn_reduce_t *self)
{
    assert (self);
    return self->nfailures;
}

bn_idset_t *
bn_reduce_failed_engines (bn_reduce_t *self, size_t index)
{
    return s_failure (self, index)->engines;
}

json_t *
bn_reduce_failed_content (bn_reduce_t *self, size_t index)
{
    return s_failure (self, index)->content;
}

json_t *
bn_reduce_json (bn_reduce_t *self)
{
    assert (self);
    char *text = bn_idset_encode (self->engines);
    json_t *reduced = text ? bn_merged_reduced (self->op, text) : NULL;
    free (text);
    for (size_t i = 0; reduced && i < self->nfailures; i++) {
        s_failure_t *failure = s_failure (self, i);
        char *set = bn_idset_encode (failure->engines);
        if (!set ||
            bn_merged_reduced_fail (reduced, set, failure->content) != 0) {
            json_decref (reduced);
            reduced = NULL;
        }
        free (set);
    }
    if (reduced && self->error &&
        bn_merged_reduced_set_error (reduced, self->error)) {
        json_decref (reduced);
        reduced = NULL;
    }
    return reduced;
}

int
bn_reduce_add_buffers (bn_reduce_t *self, bn_msg_t *msg)
{
    assert (self);
    assert (msg);
    if (self->value)
        return bn_serialize_object_add (msg, self->value);
    bn_value_t *none = bn_value_new_none ();
    int rc = none ? bn_serialize_object_add (msg, none) : -1;
    bn_value_destroy (&none);
    return rc;
}

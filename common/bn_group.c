/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_group: a table of reply outcomes, each with the engines that gave
    it; entries live in an array kept sorted by lowest engine id on demand,
    and are found by a 64-bit hash then confirmed byte for byte.  */
#include "bn_group.h"

#include "bn_error.h"
#include "bn_merged_reader.h"
#include "bn_merged_writer.h"
#include "bn_msgtypes.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;       //  of status, texts and buffers
    char *status;        //  never NULL
    char *ename;         //  NULL when status is "ok" or absent
    char *evalue;        //  NULL when status is "ok" or absent
    char *out;           //  bn_stdout, NULL when empty
    char *err;           //  bn_stderr, NULL when empty
    json_t *content;     //  first member's content when not "ok", or NULL
    zmq_msg_t *buffers;  //  shared references to the first member's frames
    size_t nbuffers;     //  frames in buffers
    bn_idset_t *engines; //  engines with this outcome, never empty
} s_entry_t;

struct _bn_group_t {
    s_entry_t **entries; //  groups, sorted when `sorted`
    size_t count;        //  groups in use
    size_t size;         //  groups allocated
    bool sorted;         //  entries are in order of lowest engine id
    bn_idset_t *seen;    //  every engine in some group
};

//  An outcome with empty texts as NULL and status defaulted, for hashing
//  and comparing in one form.
typedef struct {
    const char *status;
    const char *ename;
    const char *evalue;
    const char *out;
    const char *err;
} s_key_t;

//  Mix a 64-bit word into a hash state.
static inline uint64_t
s_mix (uint64_t h, uint64_t word)
{
    h ^= word;
    h *= 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

//  Hash bytes: four independent lanes of 8-byte words, then the tail.
static uint64_t
s_hash_bytes (uint64_t seed, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    uint64_t lane[4] = {seed, seed ^ 0x243F6A8885A308D3ULL,
                        seed ^ 0x13198A2E03707344ULL,
                        seed ^ 0xA4093822299F31D0ULL};
    size_t offset = 0;
    for (; offset + 32 <= size; offset += 32)
        for (int i = 0; i < 4; i++) {
            uint64_t word;
            memcpy (&word, bytes + offset + 8 * i, 8);
            lane[i] = s_mix (lane[i], word);
        }
    uint64_t h = s_mix (s_mix (s_mix (lane[0], lane[1]), lane[2]), lane[3]);
    for (; offset + 8 <= size; offset += 8) {
        uint64_t word;
        memcpy (&word, bytes + offset, 8);
        h = s_mix (h, word);
    }
    uint64_t tail = 0;
    if (size > offset)
        memcpy (&tail, bytes + offset, size - offset);
    return s_mix (s_mix (h, tail), size);
}

//  Hash a string including its end, so "a","b" differs from "ab","".
static uint64_t
s_hash_text (uint64_t h, const char *text)
{
    return text ? s_hash_bytes (h, text, strlen (text) + 1) : s_mix (h, 0);
}

//  Normal form of a reply's outcome.
static s_key_t
s_key (const bn_group_reply_t *reply)
{
    s_key_t key = {reply->status ? reply->status : "ok", NULL, NULL,
                   reply->stdout_text, reply->stderr_text};
    if (strcmp (key.status, "ok") != 0) {
        key.ename = reply->ename;
        key.evalue = reply->evalue;
    }
    if (key.out && !*key.out)
        key.out = NULL;
    if (key.err && !*key.err)
        key.err = NULL;
    return key;
}

//  Hash of an outcome and its buffers.
static uint64_t
s_hash (const s_key_t *key, zmq_msg_t *const *buffers, size_t nbuffers)
{
    uint64_t h = s_hash_text (0x62616E79616EULL, key->status);
    h = s_hash_text (h, key->ename);
    h = s_hash_text (h, key->evalue);
    h = s_hash_text (h, key->out);
    h = s_hash_text (h, key->err);
    h = s_mix (h, nbuffers);
    for (size_t i = 0; i < nbuffers; i++)
        h = s_hash_bytes (h, zmq_msg_data (buffers[i]),
                          zmq_msg_size (buffers[i]));
    return h;
}

//  True if both strings are NULL or equal.
static bool
s_same_text (const char *a, const char *b)
{
    return a == b || (a && b && strcmp (a, b) == 0);
}

//  The entry holding this outcome, or NULL.
static s_entry_t *
s_find (bn_group_t *self, uint64_t hash, const s_key_t *key,
        zmq_msg_t *const *buffers, size_t nbuffers)
{
    for (size_t i = 0; i < self->count; i++) {
        s_entry_t *entry = self->entries[i];
        if (entry->hash != hash || entry->nbuffers != nbuffers ||
            strcmp (entry->status, key->status) != 0 ||
            !s_same_text (entry->ename, key->ename) ||
            !s_same_text (entry->evalue, key->evalue) ||
            !s_same_text (entry->out, key->out) ||
            !s_same_text (entry->err, key->err))
            continue;
        size_t b = 0;
        for (; b < nbuffers; b++) {
            zmq_msg_t *mine = &entry->buffers[b];
            size_t size = zmq_msg_size (mine);
            if (size != zmq_msg_size (buffers[b]) ||
                memcmp (zmq_msg_data (mine), zmq_msg_data (buffers[b]), size) !=
                    0)
                break;
        }
        if (b == nbuffers)
            return entry;
    }
    return NULL;
}

//  Free an entry and everything it holds; NULL-safe.
static void
s_entry_destroy (s_entry_t **entry_p)
{
    s_entry_t *entry = *entry_p;
    if (!entry)
        return;
    free (entry->status);
    free (entry->ename);
    free (entry->evalue);
    free (entry->out);
    free (entry->err);
    json_decref (entry->content);
    for (size_t i = 0; i < entry->nbuffers; i++)
        zmq_msg_close (&entry->buffers[i]);
    free (entry->buffers);
    bn_idset_destroy (&entry->engines);
    free (entry);
    *entry_p = NULL;
}

//  strdup that passes NULL through; sets *failed when out of memory.
static char *
s_strdup (const char *text, bool *failed)
{
    if (!text)
        return NULL;
    char *copy = strdup (text);
    if (!copy)
        *failed = true;
    return copy;
}

//  A new entry for an outcome with an empty engine set; NULL if out of
//  memory.
static s_entry_t *
s_entry_new (uint64_t hash, const s_key_t *key, json_t *content,
             zmq_msg_t *const *buffers, size_t nbuffers)
{
    s_entry_t *entry = calloc (1, sizeof (s_entry_t));
    if (!entry)
        return NULL;
    bool failed = false;
    entry->hash = hash;
    entry->status = s_strdup (key->status, &failed);
    entry->ename = s_strdup (key->ename, &failed);
    entry->evalue = s_strdup (key->evalue, &failed);
    entry->out = s_strdup (key->out, &failed);
    entry->err = s_strdup (key->err, &failed);
    if (strcmp (key->status, "ok") != 0 && content)
        entry->content = json_incref (content);
    entry->engines = bn_idset_new ();
    if (nbuffers) {
        entry->buffers = calloc (nbuffers, sizeof (zmq_msg_t));
        if (!entry->buffers)
            failed = true;
    }
    for (size_t i = 0; !failed && i < nbuffers; i++) {
        zmq_msg_init (&entry->buffers[i]);
        entry->nbuffers++;
        if (zmq_msg_copy (&entry->buffers[i], buffers[i]) != 0)
            failed = true;
    }
    if (failed || !entry->engines)
        s_entry_destroy (&entry);
    return entry;
}

//  Append an entry to the table; -1 if out of memory.
static int
s_append (bn_group_t *self, s_entry_t *entry)
{
    if (self->count == self->size) {
        size_t size = self->size ? self->size * 2 : 8;
        s_entry_t **entries = realloc (self->entries, size * sizeof *entries);
        if (!entries)
            return -1;
        self->entries = entries;
        self->size = size;
    }
    self->entries[self->count++] = entry;
    self->sorted = false;
    return 0;
}

//  True if any id of set is already in the table.
static bool
s_overlaps (bn_group_t *self, bn_idset_t *set)
{
    for (int id = bn_idset_first (set); id >= 0; id = bn_idset_next (set, id))
        if (bn_idset_contains (self->seen, id))
            return true;
    return false;
}

//  Add the ids of `from` (folded text) to `to`; -1 if out of memory.
static int
s_union (bn_idset_t *to, bn_idset_t *from)
{
    char *text = bn_idset_encode (from);
    int rc = text ? bn_idset_add_text (to, text) : -1;
    free (text);
    return rc;
}

bn_group_t *
bn_group_new (void)
{
    bn_group_t *self = calloc (1, sizeof (bn_group_t));
    if (self) {
        self->sorted = true;
        self->seen = bn_idset_new ();
        if (!self->seen) {
            free (self);
            self = NULL;
        }
    }
    return self;
}

void
bn_group_destroy (bn_group_t **self_p)
{
    assert (self_p);
    bn_group_t *self = *self_p;
    if (self) {
        bn_group_clear (self);
        free (self->entries);
        bn_idset_destroy (&self->seen);
        free (self);
        *self_p = NULL;
    }
}

void
bn_group_clear (bn_group_t *self)
{
    assert (self);
    for (size_t i = 0; i < self->count; i++)
        s_entry_destroy (&self->entries[i]);
    self->count = 0;
    self->sorted = true;
    bn_idset_clear (self->seen);
}

int
bn_group_add_set (bn_group_t *self, bn_idset_t *engines,
                  const bn_group_reply_t *reply)
{
    assert (self);
    assert (engines);
    assert (reply);
    assert (reply->buffers || reply->nbuffers == 0);
    if (bn_idset_count (engines) == 0 || s_overlaps (self, engines))
        return -1;
    s_key_t key = s_key (reply);
    uint64_t hash = s_hash (&key, reply->buffers, reply->nbuffers);
    s_entry_t *entry =
        s_find (self, hash, &key, reply->buffers, reply->nbuffers);
    bool fresh = entry == NULL;
    if (fresh) {
        entry = s_entry_new (hash, &key, reply->content, reply->buffers,
                             reply->nbuffers);
        if (!entry)
            return -1;
    }
    //  The seen set first: if the group's update then fails, the table
    //  still tells the truth by removing them again.
    bn_idset_t *before = fresh ? NULL : bn_idset_dup (entry->engines);
    if ((!fresh && !before) || s_union (self->seen, engines) ||
        s_union (entry->engines, engines) ||
        (fresh && s_append (self, entry))) {
        for (int id = bn_idset_first (engines); id >= 0;
             id = bn_idset_next (engines, id))
            bn_idset_remove (self->seen, id);
        if (fresh)
            s_entry_destroy (&entry);
        else if (before) {
            bn_idset_destroy (&entry->engines);
            entry->engines = before;
            before = NULL;
        }
        bn_idset_destroy (&before);
        return -1;
    }
    bn_idset_destroy (&before);
    //  A larger set may now start lower than its neighbours.
    self->sorted = false;
    return 0;
}

int
bn_group_add (bn_group_t *self, int eid, const bn_group_reply_t *reply)
{
    assert (self);
    if (eid < 0)
        return -1;
    bn_idset_t *one = bn_idset_new ();
    int rc = one && bn_idset_add (one, eid) == 0
                 ? bn_group_add_set (self, one, reply)
                 : -1;
    bn_idset_destroy (&one);
    return rc;
}

//  A string member of an object, or NULL when absent or not a string.
static const char *
s_string (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

int
bn_group_add_reply (bn_group_t *self, int eid, bn_msg_t *reply, char *err,
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
    size_t nbuffers = bn_msg_nbuffers (reply);
    zmq_msg_t **buffers = calloc (nbuffers ? nbuffers : 1, sizeof *buffers);
    if (!buffers) {
        bn_error_set (err, errsize, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nbuffers; i++)
        buffers[i] = bn_msg_buffer (reply, i);
    bn_group_reply_t outcome = {s_string (content, "status"),
                                s_string (content, "ename"),
                                s_string (content, "evalue"),
                                s_string (content, "bn_stdout"),
                                s_string (content, "bn_stderr"),
                                content,
                                buffers,
                                nbuffers};
    int rc = 0;
    if (eid < 0 || bn_idset_contains (self->seen, eid)) {
        bn_error_set (err, errsize, "engine %d already has a reply", eid);
        rc = -1;
    } else if (bn_group_add (self, eid, &outcome)) {
        bn_error_set (err, errsize, "out of memory");
        rc = -1;
    }
    free (buffers);
    return rc;
}

int
bn_group_add_merged (bn_group_t *self, bn_msg_t *merged, char *err,
                     size_t errsize)
{
    assert (self);
    assert (merged);
    if (bn_merged_shape (merged) != BN_MERGED_GROUPS) {
        bn_error_set (err, errsize, "merged reply has no %s array",
                      BN_BCAST_GROUPS);
        return -1;
    }
    size_t nbuffers = bn_msg_nbuffers (merged);
    zmq_msg_t **buffers = calloc (nbuffers ? nbuffers : 1, sizeof *buffers);
    bn_group_t *staged = bn_group_new ();
    bn_merged_reader_t *reader = bn_merged_reader_new (merged);
    int rc = -1;
    if (!buffers || !staged || !reader) {
        bn_error_set (err, errsize, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nbuffers; i++)
        buffers[i] = bn_msg_buffer (merged, i);
    //  staged first, so that a bad group leaves the table unchanged
    bn_merged_entry_t group;
    size_t index = 0;
    while ((rc = bn_merged_reader_next (reader, &group)) == 1) {
        json_t *content = bn_merged_json (group.content);
        char *out = bn_merged_string (group.out);
        char *errtext = bn_merged_string (group.err);
        bn_group_reply_t outcome = {group.status,
                                    s_string (content, "ename"),
                                    s_string (content, "evalue"),
                                    out,
                                    errtext,
                                    content,
                                    buffers + group.first,
                                    group.nbuffers};
        if (s_overlaps (staged, group.engines) ||
            s_overlaps (self, group.engines)) {
            bn_error_set (err, errsize,
                          "%s[%zu] names an engine that already has a reply",
                          BN_BCAST_GROUPS, index);
            rc = -3;
        } else if (bn_group_add_set (staged, group.engines, &outcome)) {
            bn_error_set (err, errsize, "out of memory");
            rc = -3;
        }
        json_decref (content);
        free (out);
        free (errtext);
        if (rc == -3)
            break;
        index++;
    }
    if (rc == -1 || rc == -2)
        bn_error_set (err, errsize, "%s", bn_merged_reader_error (reader));
    if (rc == 0) {
        rc = bn_group_merge (self, staged);
        if (rc)
            bn_error_set (err, errsize, "out of memory");
    } else
        rc = -1;
done:
    bn_merged_reader_destroy (&reader);
    bn_group_destroy (&staged);
    free (buffers);
    return rc;
}

int
bn_group_merge (bn_group_t *self, bn_group_t *other)
{
    assert (self);
    assert (other);
    if (s_overlaps (self, other->seen))
        return -1;
    for (size_t i = 0; i < other->count; i++) {
        s_entry_t *entry = other->entries[i];
        zmq_msg_t **buffers =
            calloc (entry->nbuffers ? entry->nbuffers : 1, sizeof *buffers);
        if (!buffers)
            return -1;
        for (size_t b = 0; b < entry->nbuffers; b++)
            buffers[b] = &entry->buffers[b];
        bn_group_reply_t outcome = {
            entry->status, entry->ename,   entry->evalue, entry->out,
            entry->err,    entry->content, buffers,       entry->nbuffers};
        int rc = bn_group_add_set (self, entry->engines, &outcome);
        free (buffers);
        if (rc)
            return -1;
    }
    return 0;
}

size_t
bn_group_size (bn_group_t *self)
{
    assert (self);
    return self->count;
}

size_t
bn_group_engines_total (bn_group_t *self)
{
    assert (self);
    return bn_idset_count (self->seen);
}

bool
bn_group_has (bn_group_t *self, int eid)
{
    assert (self);
    return eid >= 0 && bn_idset_contains (self->seen, eid);
}

//  Order of entries: by lowest engine id (sets are disjoint).
static int
s_compare (const void *a, const void *b)
{
    int first_a = bn_idset_first ((*(s_entry_t *const *)a)->engines);
    int first_b = bn_idset_first ((*(s_entry_t *const *)b)->engines);
    return (first_a > first_b) - (first_a < first_b);
}

//  Entry `index` in group order.
static s_entry_t *
s_entry (bn_group_t *self, size_t index)
{
    assert (self);
    if (!self->sorted) {
        qsort (self->entries, self->count, sizeof *self->entries, s_compare);
        self->sorted = true;
    }
    assert (index < self->count);
    return self->entries[index];
}

bn_idset_t *
bn_group_engines (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->engines;
}

char *
bn_group_engines_text (bn_group_t *self, size_t index)
{
    return bn_idset_encode (s_entry (self, index)->engines);
}

const char *
bn_group_status (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->status;
}

const char *
bn_group_ename (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->ename;
}

const char *
bn_group_evalue (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->evalue;
}

const char *
bn_group_stdout (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->out;
}

const char *
bn_group_stderr (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->err;
}

json_t *
bn_group_content (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->content;
}

size_t
bn_group_nbuffers (bn_group_t *self, size_t index)
{
    return s_entry (self, index)->nbuffers;
}

zmq_msg_t *
bn_group_buffer (bn_group_t *self, size_t index, size_t buffer)
{
    s_entry_t *entry = s_entry (self, index);
    assert (buffer < entry->nbuffers);
    return &entry->buffers[buffer];
}

json_t *
bn_group_json (bn_group_t *self)
{
    assert (self);
    json_t *array = json_array ();
    for (size_t i = 0; array && i < self->count; i++) {
        s_entry_t *entry = s_entry (self, i);
        char *text = bn_idset_encode (entry->engines);
        json_t *group =
            text ? bn_merged_group (text, entry->status, entry->nbuffers,
                                    entry->content, entry->out, entry->err)
                 : NULL;
        free (text);
        if (!group || json_array_append_new (array, group)) {
            json_decref (array);
            array = NULL;
        }
    }
    return array;
}

int
bn_group_add_buffers (bn_group_t *self, bn_msg_t *msg)
{
    assert (self);
    assert (msg);
    for (size_t i = 0; i < self->count; i++) {
        s_entry_t *entry = s_entry (self, i);
        for (size_t b = 0; b < entry->nbuffers; b++)
            if (bn_msg_add_buffer_msg (msg, &entry->buffers[b]))
                return -1;
    }
    return 0;
}

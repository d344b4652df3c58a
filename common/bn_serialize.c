/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_serialize: ipyparallel.serialize's serialize_object and
    deserialize_object, canning big bytes out of band and uncanning.  */
#include "bn_serialize.h"
#include "bn_error.h"
#include "bn_pickle.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *data;
    size_t size;
    bool owned; //  a malloc'd pickle, else bytes borrowed from a value
    void *hold; //  borrowed bytes: a hold on them (bn_value_bytes_hold)
} s_frame_t;

typedef struct {
    s_frame_t *frames;
    size_t size;
    size_t cap;
} s_frames_t;

//  Add a frame: a malloc'd pickle (owned, taken even on failure), or a
//  value's bytes with a hold on them (taken likewise).
static int
s_frames_add (s_frames_t *self, void *data, size_t size, bool owned, void *hold)
{
    if (self->size == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 8;
        s_frame_t *frames =
            (s_frame_t *)realloc (self->frames, cap * sizeof (s_frame_t));
        if (!frames) {
            if (owned)
                free (data);
            bn_value_bytes_let_go (hold);
            return -1;
        }
        self->frames = frames;
        self->cap = cap;
    }
    self->frames[self->size].data = data;
    self->frames[self->size].size = size;
    self->frames[self->size].owned = owned;
    self->frames[self->size].hold = hold;
    self->size++;
    return 0;
}

static void
s_frames_clear (s_frames_t *self)
{
    for (size_t i = 0; i < self->size; i++) {
        if (self->frames[i].owned)
            free (self->frames[i].data);
        bn_value_bytes_let_go (self->frames[i].hold);
    }
    free (self->frames);
    memset (self, 0, sizeof (*self));
}

//  libzmq's free function of a frame sharing a value's bytes.
static void
s_let_go (void *data, void *hold)
{
    bn_value_bytes_let_go (hold);
}

static zmsg_t *
s_frames_to_zmsg (s_frames_t *self)
{
    zmsg_t *msg = zmsg_new ();
    for (size_t i = 0; msg && i < self->size; i++)
        if (zmsg_addmem (msg, self->frames[i].data, self->frames[i].size))
            zmsg_destroy (&msg);
    s_frames_clear (self);
    return msg;
}

static int
s_frames_to_msg (s_frames_t *self, bn_msg_t *msg)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < self->size; i++) {
        s_frame_t *frame = &self->frames[i];
        if (frame->owned) {
            //  The message takes the pickle, even when it fails.
            frame->owned = false;
            rc = bn_msg_add_buffer_owned (msg, frame->data, frame->size);
        } else {
            //  and the hold on a value's bytes likewise
            void *hold = frame->hold;
            frame->hold = NULL;
            rc = bn_msg_add_buffer_data (msg, frame->data, frame->size,
                                         s_let_go, hold);
        }
    }
    s_frames_clear (self);
    return rc;
}

int
bn_serialize_key_compare (const bn_value_t *a, const bn_value_t *b)
{
    bn_value_type_t ta = bn_value_type (a);
    bn_value_type_t tb = bn_value_type (b);
    if ((ta == BN_VALUE_STR || ta == BN_VALUE_BYTES) && ta == tb) {
        //  UTF-8 byte order is code point order.
        bool str = ta == BN_VALUE_STR;
        const void *pa =
            str ? (const void *)bn_value_str (a) : bn_value_bytes_data (a);
        const void *pb =
            str ? (const void *)bn_value_str (b) : bn_value_bytes_data (b);
        size_t sa = str ? bn_value_str_size (a) : bn_value_bytes_size (a);
        size_t sb = str ? bn_value_str_size (b) : bn_value_bytes_size (b);
        int cmp = memcmp (pa, pb, sa < sb ? sa : sb);
        if (cmp)
            return cmp;
        return sa < sb ? -1 : sa > sb;
    }
    if (ta != BN_VALUE_FLOAT && tb != BN_VALUE_FLOAT) {
        int64_t ia = bn_value_int (a), ib = bn_value_int (b);
        return ia < ib ? -1 : ia > ib;
    }
    double da = bn_value_float (a), db = bn_value_float (b);
    return da < db ? -1 : da > db;
}

//  Whether Python's sorted() accepts these dict keys: all str, all bytes
//  or all numbers (and bools), or fewer than two.
static bool
s_keys_sortable (const bn_value_t *dict)
{
    size_t size = bn_value_size (dict);
    int kind = -1;
    for (size_t i = 0; i < size && size > 1; i++) {
        bn_value_type_t type = bn_value_type (bn_value_dict_key (dict, i));
        int k = type == BN_VALUE_STR     ? 0
                : type == BN_VALUE_BYTES ? 1
                : type == BN_VALUE_INT || type == BN_VALUE_BOOL ||
                        type == BN_VALUE_FLOAT
                    ? 2
                    : 3;
        if (k == 3 || (kind >= 0 && k != kind))
            return false;
        kind = k;
    }
    return true;
}

//  What ipyparallel pickles for bytes sent out of band (CannedBytes with
//  state {'buffers': [None]}), and the bytes so sent, in order.
typedef struct {
    const bn_value_t *value; //  bytes sent out of band
    const bn_value_t *key;   //  their dict key, for Python's sorted order
} s_oob_t;

typedef struct {
    bn_pickle_writer_t *writer;
    bn_value_t *canned; //  the CannedBytes written for each, once needed
    s_oob_t *oob;
    size_t noob;
    size_t cap;
    bool failed;
} s_canner_t;

//  A new CannedBytes for the writer to write for each bytes out of band;
//  its class and key are written once, as Python refers back to them.
static bn_value_t *
s_canned_bytes (bn_pickle_writer_t *writer)
{
    bn_value_t *cls = bn_value_new_global (BN_SERIALIZE_CANNING, "CannedBytes");
    bn_value_t *key = bn_value_new_str ("buffers");
    bn_value_t *buffers = bn_value_new_list ();
    bn_value_t *state = bn_value_new_dict ();
    if (!cls || !key || !buffers || !state ||
        bn_value_append (buffers, bn_value_new_none ())) {
        bn_value_destroy (&cls);
        bn_value_destroy (&key);
        bn_value_destroy (&buffers);
        bn_value_destroy (&state);
        return NULL;
    }
    bn_pickle_writer_share (writer, cls);
    bn_pickle_writer_share (writer, key);
    if (bn_value_dict_set (state, key, buffers)) {
        bn_value_destroy (&cls);
        bn_value_destroy (&state);
        return NULL;
    }
    return bn_value_new_object (cls, NULL, state);
}

//  Note value (with its dict key) as sent out of band; the CannedBytes
//  to write in its place, or NULL if out of memory.
static const bn_value_t *
s_canner_add (s_canner_t *self, const bn_value_t *value, const bn_value_t *key)
{
    if (!self->canned && !(self->canned = s_canned_bytes (self->writer))) {
        self->failed = true;
        return NULL;
    }
    if (self->noob == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 8;
        s_oob_t *oob = (s_oob_t *)realloc (self->oob, cap * sizeof (s_oob_t));
        if (!oob) {
            self->failed = true;
            return NULL;
        }
        self->oob = oob;
        self->cap = cap;
    }
    self->oob[self->noob].value = value;
    self->oob[self->noob].key = key;
    self->noob++;
    return self->canned;
}

//  An item of the top value: big bytes go out of band (bn_pickle_item_fn).
static const bn_value_t *
s_can_item (void *arg, const bn_value_t *item, const bn_value_t *key)
{
    s_canner_t *self = (s_canner_t *)arg;
    if (bn_value_type (item) != BN_VALUE_BYTES ||
        bn_value_bytes_size (item) <= BN_SERIALIZE_BUFFER_THRESHOLD)
        return NULL;
    return s_canner_add (self, item, key);
}

//  The dict in the "obj" slot of a CannedObject's state (bn_pickle_item_fn).
static const bn_value_t *
s_wrap_item (void *arg, const bn_value_t *item, const bn_value_t *key)
{
    return key && bn_value_type (key) == BN_VALUE_STR &&
                   streq (bn_value_str (key), "obj")
               ? (const bn_value_t *)arg
               : NULL;
}

//  A dict whose keys Python cannot sort (deserialize_object sorts a
//  top-level dict's keys) travels in a CannedObject that uncans to it:
//  state {'keys': [], 'obj': dict, 'hook': None, 'buffers': []}.
static int
s_save_wrapped (bn_pickle_writer_t *writer, const bn_value_t *dict)
{
    bn_value_t *cls =
        bn_value_new_global (BN_SERIALIZE_CANNING, "CannedObject");
    bn_value_t *state = bn_value_new_dict ();
    if (!cls || !state ||
        bn_value_dict_set_str (state, "keys", bn_value_new_list ()) ||
        bn_value_dict_set_str (state, "obj", bn_value_new_none ()) ||
        bn_value_dict_set_str (state, "hook", bn_value_new_none ()) ||
        bn_value_dict_set_str (state, "buffers", bn_value_new_list ())) {
        bn_value_destroy (&cls);
        bn_value_destroy (&state);
        return -1;
    }
    bn_value_t *wrapper = bn_value_new_object (cls, NULL, state);
    if (!wrapper)
        return -1;
    bn_pickle_writer_set_items (writer, state, s_wrap_item, (void *)dict);
    bn_pickle_writer_save (writer, wrapper);
    bn_value_destroy (&wrapper);
    return 0;
}

//  serialize_object: the pickle, then bytes sent out of band.
static int
s_serialize (const bn_value_t *value, s_frames_t *frames)
{
    assert (value);
    bn_pickle_writer_t *writer = bn_pickle_writer_new ();
    if (!writer)
        return -1;
    s_canner_t canner = {.writer = writer};
    bn_value_type_t type = bn_value_type (value);
    size_t size = bn_value_size (value);
    if (type == BN_VALUE_BYTES &&
        bn_value_bytes_size (value) > BN_SERIALIZE_BUFFER_THRESHOLD) {
        const bn_value_t *canned = s_canner_add (&canner, value, NULL);
        if (canned)
            bn_pickle_writer_save (writer, canned);
    } else if ((type == BN_VALUE_LIST || type == BN_VALUE_TUPLE ||
                type == BN_VALUE_DICT) &&
               size < BN_SERIALIZE_ITEM_THRESHOLD) {
        if (type == BN_VALUE_DICT && !s_keys_sortable (value))
            canner.failed |= s_save_wrapped (writer, value) != 0;
        else {
            bn_pickle_writer_set_items (writer, value, s_can_item, &canner);
            bn_pickle_writer_save (writer, value);
        }
    } else
        bn_pickle_writer_save (writer, value);

    size_t pickle_size;
    void *pickle = bn_pickle_writer_finish (writer, &pickle_size);
    bn_pickle_writer_destroy (&writer);
    bn_value_destroy (&canner.canned);
    if (canner.failed) {
        free (pickle);
        pickle = NULL;
    }
    //  The stock deserializer fills None slots in sorted key order.
    s_oob_t *oob = canner.oob;
    for (size_t i = 1; type == BN_VALUE_DICT && i < canner.noob; i++) {
        s_oob_t entry = oob[i];
        size_t j = i;
        for (;
             j > 0 && bn_serialize_key_compare (oob[j - 1].key, entry.key) > 0;
             j--)
            oob[j] = oob[j - 1];
        oob[j] = entry;
    }
    int rc =
        pickle ? s_frames_add (frames, pickle, pickle_size, true, NULL) : -1;
    for (size_t i = 0; rc == 0 && i < canner.noob; i++) {
        void *hold = bn_value_bytes_hold (oob[i].value);
        rc = hold ? s_frames_add (
                        frames, (void *)bn_value_bytes_data (oob[i].value),
                        bn_value_bytes_size (oob[i].value), false, hold)
                  : -1;
    }
    free (oob);
    return rc;
}

zmsg_t *
bn_serialize_object (const bn_value_t *value)
{
    s_frames_t frames = {0};
    if (s_serialize (value, &frames)) {
        s_frames_clear (&frames);
        return NULL;
    }
    return s_frames_to_zmsg (&frames);
}

int
bn_serialize_object_add (bn_msg_t *msg, const bn_value_t *value)
{
    assert (msg);
    s_frames_t frames = {0};
    if (s_serialize (value, &frames)) {
        s_frames_clear (&frames);
        return -1;
    }
    return s_frames_to_msg (&frames, msg);
}

static bool
s_is_canned (const bn_value_t *value)
{
    if (bn_value_type (value) != BN_VALUE_OBJECT)
        return false;
    const bn_value_t *cls = bn_value_object_class (value);
    return bn_value_type (cls) == BN_VALUE_GLOBAL &&
           strcmp (bn_value_global_module (cls), BN_SERIALIZE_CANNING) == 0;
}

//  The `buffers` list in a canned object's state, or NULL.
static bn_value_t *
s_canned_buffers (const bn_value_t *value)
{
    if (!s_is_canned (value))
        return NULL;
    const bn_value_t *state = bn_value_object_state (value);
    if (!state || bn_value_type (state) != BN_VALUE_DICT)
        return NULL;
    bn_value_t *buffers = bn_value_dict_get (state, "buffers");
    if (!buffers || bn_value_type (buffers) != BN_VALUE_LIST)
        return NULL;
    return buffers;
}

//  The release of bytes that share a frame: close the frame's copy.
static void
s_close_frame (void *data, void *frame)
{
    zmq_msg_close ((zmq_msg_t *)frame);
    free (frame);
}

//  A BYTES value of a buffer: sharing its frame when it has one of at
//  least BN_SERIALIZE_SHARE_THRESHOLD bytes, else a copy. NULL when out
//  of memory.
static bn_value_t *
s_bytes_of (const bn_bytes_t *buffer)
{
    if (!buffer->frame || buffer->size < BN_SERIALIZE_SHARE_THRESHOLD)
        return bn_value_new_bytes (buffer->data, buffer->size);
    zmq_msg_t *copy = (zmq_msg_t *)malloc (sizeof *copy);
    if (!copy)
        return NULL;
    zmq_msg_init (copy);
    if (zmq_msg_copy (copy, buffer->frame) != 0) {
        zmq_msg_close (copy);
        free (copy);
        return NULL;
    }
    bn_value_t *value = bn_value_new_bytes_shared (
        zmq_msg_data (copy), zmq_msg_size (copy), s_close_frame, copy);
    if (!value)
        s_close_frame (NULL, copy);
    return value;
}

//  _restore_buffers: fill a canned object's None buffers from the frames.
static int
s_restore (bn_value_t *value, const bn_bytes_t *frames, size_t nframes,
           size_t *next, char *err, size_t errsize)
{
    bn_value_t *buffers = s_canned_buffers (value);
    size_t size = buffers ? bn_value_size (buffers) : 0;
    for (size_t i = 0; i < size; i++) {
        if (bn_value_type (bn_value_item (buffers, i)) != BN_VALUE_NONE)
            continue;
        if (*next >= nframes) {
            bn_error_set (err, errsize,
                          "canned object wants more buffers than were sent");
            return -1;
        }
        const bn_bytes_t *frame = &frames[(*next)++];
        bn_value_t *data = s_bytes_of (frame);
        if (!data) {
            bn_error_set (err, errsize, "out of memory");
            return -1;
        }
        bn_value_t *old = bn_value_swap_item (buffers, i, data);
        bn_value_destroy (&old);
    }
    return 0;
}

//  CannedObject.get_object of one with no keys and no hook (what
//  serialize_object wraps a dict in): its obj, taken out for the caller;
//  NULL for any other.
static bn_value_t *
s_canned_object (bn_value_t *value)
{
    bn_value_t *state = bn_value_object_state (value);
    bn_value_t *keys = bn_value_dict_get (state, "keys");
    bn_value_t *hook = bn_value_dict_get (state, "hook");
    if (!keys || bn_value_type (keys) != BN_VALUE_LIST ||
        bn_value_size (keys) != 0 || !hook ||
        bn_value_type (hook) != BN_VALUE_NONE)
        return NULL;
    for (size_t i = 0; i < bn_value_size (state); i++) {
        bn_value_t *key = bn_value_dict_key (state, i);
        if (bn_value_str_size (key) == 3 &&
            strcmp (bn_value_str (key), "obj") == 0)
            return bn_value_dict_swap_value (state, i, bn_value_new_none ());
    }
    return NULL;
}

//  uncan: a CannedBytes or CannedMemoryView gives its bytes and a
//  CannedObject its object (returned, for the caller to put in its
//  place); a dict's values are uncanned in place.
static bn_value_t *
s_uncan (bn_value_t *value)
{
    if (bn_value_object_is (value, BN_SERIALIZE_CANNING, "CannedObject"))
        return s_canned_object (value);
    if (bn_value_type (value) == BN_VALUE_DICT) {
        size_t size = bn_value_size (value);
        for (size_t i = 0; i < size; i++) {
            bn_value_t *replacement = s_uncan (bn_value_dict_value (value, i));
            if (replacement) {
                bn_value_t *old =
                    bn_value_dict_swap_value (value, i, replacement);
                bn_value_destroy (&old);
            }
        }
        return NULL;
    }
    if (!bn_value_object_is (value, BN_SERIALIZE_CANNING, "CannedBytes") &&
        !bn_value_object_is (value, BN_SERIALIZE_CANNING, "CannedMemoryView"))
        return NULL;
    bn_value_t *buffers = s_canned_buffers (value);
    if (!buffers || bn_value_size (buffers) < 1 ||
        bn_value_type (bn_value_item (buffers, 0)) != BN_VALUE_BYTES)
        return NULL;
    return bn_value_swap_item (buffers, 0, bn_value_new_none ());
}

//  Uncan the items of a top-level list, tuple or set.
static int
s_uncan_items (bn_value_t **value_p)
{
    bn_value_t *value = *value_p;
    size_t size = bn_value_size (value);
    bool changed = false;
    for (size_t i = 0; i < size; i++) {
        bn_value_t *replacement = s_uncan (bn_value_item (value, i));
        if (replacement) {
            bn_value_t *old = bn_value_swap_item (value, i, replacement);
            bn_value_destroy (&old);
            changed = true;
        }
    }
    if (!changed || bn_value_type (value) != BN_VALUE_SET)
        return 0;
    //  Bytes that were distinct objects may now be equal items.
    bn_value_t *set = bn_value_new_set ();
    if (!set)
        return -1;
    for (size_t i = 0; i < size; i++)
        if (bn_value_append (
                set, bn_value_swap_item (value, i, bn_value_new_none ()))) {
            bn_value_destroy (&set);
            return -1;
        }
    bn_value_destroy (value_p);
    *value_p = set;
    return 0;
}

bn_value_t *
bn_deserialize_object (const bn_bytes_t *frames, size_t nframes, size_t *used,
                       char *err, size_t errsize)
{
    assert (frames || nframes == 0);
    if (nframes == 0) {
        bn_error_set (err, errsize, "no buffers to deserialize");
        return NULL;
    }
    bn_value_t *value =
        bn_pickle_decode (frames[0].data, frames[0].size, err, errsize);
    if (!value)
        return NULL;
    size_t next = 1;
    int rc = 0;
    bn_value_type_t type = bn_value_type (value);
    size_t size = bn_value_size (value);
    if ((type == BN_VALUE_LIST || type == BN_VALUE_TUPLE ||
         type == BN_VALUE_SET) &&
        size < BN_SERIALIZE_ITEM_THRESHOLD) {
        for (size_t i = 0; rc == 0 && i < size; i++)
            rc = s_restore (bn_value_item (value, i), frames, nframes, &next,
                            err, errsize);
        if (rc == 0 && s_uncan_items (&value)) {
            bn_error_set (err, errsize, "out of memory");
            rc = -1;
        }
    } else if (type == BN_VALUE_DICT && size < BN_SERIALIZE_ITEM_THRESHOLD) {
        size_t order[BN_SERIALIZE_ITEM_THRESHOLD];
        bool sortable = s_keys_sortable (value);
        for (size_t i = 0; i < size; i++) {
            size_t j = i;
            for (; sortable && j > 0 &&
                   bn_serialize_key_compare (
                       bn_value_dict_key (value, order[j - 1]),
                       bn_value_dict_key (value, i)) > 0;
                 j--)
                order[j] = order[j - 1];
            order[j] = i;
        }
        for (size_t i = 0; rc == 0 && i < size; i++)
            rc = s_restore (bn_value_dict_value (value, order[i]), frames,
                            nframes, &next, err, errsize);
        if (rc == 0)
            s_uncan (value);
    } else {
        rc = s_restore (value, frames, nframes, &next, err, errsize);
        bn_value_t *replacement = rc == 0 ? s_uncan (value) : NULL;
        if (replacement) {
            bn_value_destroy (&value);
            value = replacement;
        }
    }
    if (rc) {
        bn_value_destroy (&value);
        return NULL;
    }
    if (used)
        *used = next;
    return value;
}

size_t
bn_bytes_from_msg (bn_msg_t *msg, bn_bytes_t *out, size_t max)
{
    assert (msg);
    assert (out || max == 0);
    size_t n = bn_msg_nbuffers (msg);
    for (size_t i = 0; i < n && i < max; i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        out[i].data = zmq_msg_data (frame);
        out[i].size = zmq_msg_size (frame);
        out[i].frame = frame;
    }
    return n;
}

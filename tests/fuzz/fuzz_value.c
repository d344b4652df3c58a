/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_value: the value codec above the pickle subset: ipyparallel's
    deserialize_object over a list of buffers (canned objects, out-of-band
    buffers put back), unpack_apply_message (f, info, args, kwargs) as an
    engine reads an apply_request, and the result of an apply_reply as the
    client reads it. The input is a frame list (bn_fuzz.h) of buffers.

    A refused list leaves an error text (and a cleared apply); what was
    read serializes to buffers that read back to an equal value, and an
    apply of a Reference or a global packs to buffers that unpack to the
    same call.  */
#include "bn_apply.h"
#include "bn_fuzz.h"
#include "bn_fuzz_value.h"
#include "bn_serialize.h"
#include "bn_value.h"

//  Borrowed views of a zmsg's frames; returns how many (at most max).
static size_t
s_views (zmsg_t *msg, bn_bytes_t *out, size_t max)
{
    size_t count = 0;
    for (zframe_t *frame = zmsg_first (msg); frame && count < max;
         frame = zmsg_next (msg)) {
        out[count].data = zframe_data (frame);
        out[count].size = zframe_size (frame);
        out[count].frame = NULL;
        count++;
    }
    return count;
}

//  serialize_object then deserialize_object gives the value back.
static void
s_check_serialize (const bn_value_t *value)
{
    zmsg_t *msg = bn_serialize_object (value);
    if (!msg) {
        BN_FUZZ_CHECK (!bn_fuzz_encodable (value));
        return;
    }
    bn_bytes_t views[BN_FUZZ_MAX_FRAMES * 2];
    size_t count = s_views (msg, views, BN_FUZZ_MAX_FRAMES * 2);
    BN_FUZZ_CHECK (count == zmsg_size (msg));
    char err[256] = "";
    size_t used = 0;
    bn_value_t *back =
        bn_deserialize_object (views, count, &used, err, sizeof err);
    if (!back)
        fprintf (stderr, "deserializing what was serialized: %s\n", err);
    BN_FUZZ_CHECK (back);
    BN_FUZZ_CHECK (used == count);
    BN_FUZZ_CHECK_EQUAL (value, back);
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
}

//  An apply of a Reference or a global packs to buffers that unpack to
//  the same call.
static void
s_check_apply (const bn_apply_t *apply)
{
    zmsg_t *msg = NULL;
    if (apply->kind == BN_APPLY_REFERENCE)
        msg = bn_apply_pack_reference (apply->name, apply->args, apply->kwargs);
    else if (apply->kind == BN_APPLY_GLOBAL)
        msg = bn_apply_pack_global (apply->module, apply->name, apply->args,
                                    apply->kwargs);
    else
        return;
    if (!msg) {
        BN_FUZZ_CHECK (!bn_fuzz_encodable (apply->args) ||
                       !bn_fuzz_encodable (apply->kwargs));
        return;
    }
    bn_bytes_t views[BN_FUZZ_MAX_FRAMES * 4];
    size_t count = s_views (msg, views, BN_FUZZ_MAX_FRAMES * 4);
    BN_FUZZ_CHECK (count == zmsg_size (msg));
    bn_apply_t again;
    char err[256] = "";
    int rc = bn_apply_unpack (views, count, &again, err, sizeof err);
    if (rc != 0)
        fprintf (stderr, "unpacking what was packed: %s\n", err);
    BN_FUZZ_CHECK (rc == 0);
    BN_FUZZ_CHECK (again.kind == apply->kind);
    BN_FUZZ_CHECK (strcmp (again.name, apply->name) == 0);
    BN_FUZZ_CHECK ((again.module == NULL) == (apply->module == NULL));
    BN_FUZZ_CHECK (!again.module || strcmp (again.module, apply->module) == 0);
    BN_FUZZ_CHECK_EQUAL (again.args, apply->args);
    BN_FUZZ_CHECK_EQUAL (again.kwargs, apply->kwargs);
    bn_apply_clear (&again);
    zmsg_destroy (&msg);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    bn_fuzz_frames_t frames;
    bn_fuzz_frames (data, size, &frames);
    bn_bytes_t bufs[BN_FUZZ_MAX_FRAMES];
    for (size_t i = 0; i < frames.count; i++) {
        bufs[i].data = frames.data[i];
        bufs[i].size = frames.size[i];
        bufs[i].frame = NULL;
    }

    //  the result of an apply_reply, or a pushed value
    char err[256] = "";
    size_t used = 0;
    bn_value_t *value =
        bn_deserialize_object (bufs, frames.count, &used, err, sizeof err);
    if (!value)
        BN_FUZZ_CHECK (err[0] != 0);
    else {
        BN_FUZZ_CHECK (used >= 1 && used <= frames.count);
        s_check_serialize (value);
        bn_value_destroy (&value);
    }
    err[0] = 0;
    value = bn_apply_decode_result (bufs, frames.count, err, sizeof err);
    BN_FUZZ_CHECK (value || err[0] != 0);
    bn_value_destroy (&value);

    //  the buffers of an apply_request
    bn_apply_t apply;
    err[0] = 0;
    if (bn_apply_unpack (bufs, frames.count, &apply, err, sizeof err) != 0) {
        BN_FUZZ_CHECK (err[0] != 0);
        BN_FUZZ_CHECK (!apply.f && !apply.args && !apply.kwargs &&
                       !apply.name && !apply.module && !apply.description);
        return 0;
    }
    BN_FUZZ_CHECK (apply.f && apply.description);
    BN_FUZZ_CHECK (bn_value_type (apply.args) == BN_VALUE_LIST);
    BN_FUZZ_CHECK (bn_value_type (apply.kwargs) == BN_VALUE_DICT);
    s_check_apply (&apply);
    bn_apply_clear (&apply);
    return 0;
}

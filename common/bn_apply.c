/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_apply: the buffers of an apply_request (pack_apply_message,
    unpack_apply_message) and of its reply.  */
#include "bn_apply.h"
#include "bn_error.h"
#include "bn_pickle.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

//  Which function f names: a Reference, a global or a canned function.
static int
s_classify (bn_apply_t *self)
{
    const bn_value_t *f = self->f;
    const bn_value_t *state = bn_value_object_state (f);
    if (bn_value_type (f) == BN_VALUE_GLOBAL) {
        self->kind = BN_APPLY_GLOBAL;
        self->module = strdup (bn_value_global_module (f));
        self->name = strdup (bn_value_global_name (f));
        self->description = zsys_sprintf ("%s.%s", bn_value_global_module (f),
                                          bn_value_global_name (f));
    } else if (state &&
               bn_value_object_is (f, BN_SERIALIZE_CANNING, "Reference") &&
               bn_value_str (bn_value_dict_get (state, "name"))) {
        const char *name = bn_value_str (bn_value_dict_get (state, "name"));
        self->kind = BN_APPLY_REFERENCE;
        self->name = strdup (name);
        self->description = zsys_sprintf ("Reference('%s')", name);
    } else if (state &&
               bn_value_object_is (f, BN_SERIALIZE_CANNING, "CannedFunction") &&
               bn_value_str (bn_value_dict_get (state, "module")) &&
               bn_value_str (bn_value_dict_get (state, "__name__"))) {
        const char *module = bn_value_str (bn_value_dict_get (state, "module"));
        const char *name = bn_value_str (bn_value_dict_get (state, "__name__"));
        self->kind = BN_APPLY_CANNED_FUNCTION;
        self->module = strdup (module);
        self->name = strdup (name);
        self->description = zsys_sprintf ("%s.%s", module, name);
    } else {
        const bn_value_t *cls = bn_value_object_class (f);
        self->kind = BN_APPLY_OTHER;
        if (cls && bn_value_type (cls) == BN_VALUE_GLOBAL)
            self->description =
                zsys_sprintf ("%s.%s object", bn_value_global_module (cls),
                              bn_value_global_name (cls));
        else
            self->description = strdup (bn_value_type_name (f));
        return self->description ? 0 : -1;
    }
    bool complete = self->name && self->description &&
                    (self->kind == BN_APPLY_REFERENCE || self->module);
    return complete ? 0 : -1;
}

//  Info keys as ints of a sane size; -1 if missing or not so.
static int64_t
s_info_count (const bn_value_t *info, const char *key)
{
    const bn_value_t *value = bn_value_dict_get (info, key);
    if (!value || bn_value_type (value) != BN_VALUE_INT ||
        bn_value_int (value) < 0)
        return -1;
    return bn_value_int (value);
}

char *
bn_apply_function (const bn_bytes_t *bufs, size_t nbufs)
{
    assert (bufs || nbufs == 0);
    if (nbufs < 1)
        return NULL;
    bn_apply_t apply;
    memset (&apply, 0, sizeof apply);
    char reason[256];
    size_t used = 0;
    apply.f =
        bn_deserialize_object (bufs, nbufs, &used, reason, sizeof (reason));
    char *name = NULL;
    if (apply.f && s_classify (&apply) == 0)
        name = apply.kind == BN_APPLY_REFERENCE ? strdup (apply.name)
                                                : strdup (apply.description);
    bn_apply_clear (&apply);
    return name;
}

//  Runs of buffers a memo keeps a copy of, up to this many bytes.
#define S_MEMO_MAX (64 * 1024)

//  A copy of a run of buffers: their count, sizes and bytes.
typedef struct {
    size_t count;  //  buffers, 0: none
    size_t *sizes; //  their sizes
    byte *bytes;   //  their bytes, one after the other
} s_run_t;

struct _bn_apply_memo_t {
    s_run_t f_run;    //  f's buffers
    bn_apply_t f;     //  what they decoded to (no args or kwargs)
    s_run_t info_run; //  the info buffer
    bn_value_t *info; //  what it decoded to
};

static void
s_run_clear (s_run_t *run)
{
    free (run->sizes);
    free (run->bytes);
    memset (run, 0, sizeof *run);
}

//  Whether bufs starts with the buffers of run.
static bool
s_run_same (const s_run_t *run, const bn_bytes_t *bufs, size_t nbufs)
{
    if (run->count == 0 || run->count > nbufs)
        return false;
    const byte *at = run->bytes;
    for (size_t i = 0; i < run->count; i++) {
        if (bufs[i].size != run->sizes[i] ||
            (run->sizes[i] && memcmp (bufs[i].data, at, run->sizes[i])))
            return false;
        at += run->sizes[i];
    }
    return true;
}

//  Keep a copy of the first count buffers; -1 (run empty) if they are
//  too large to keep or memory is short.
static int
s_run_keep (s_run_t *run, const bn_bytes_t *bufs, size_t count)
{
    s_run_clear (run);
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        if (bufs[i].size > S_MEMO_MAX - total)
            return -1;
        total += bufs[i].size;
    }
    run->sizes = (size_t *)malloc (count * sizeof *run->sizes);
    run->bytes = (byte *)malloc (total ? total : 1);
    if (!run->sizes || !run->bytes) {
        s_run_clear (run);
        return -1;
    }
    byte *at = run->bytes;
    for (size_t i = 0; i < count; i++) {
        run->sizes[i] = bufs[i].size;
        if (bufs[i].size)
            memcpy (at, bufs[i].data, bufs[i].size);
        at += bufs[i].size;
    }
    run->count = count;
    return 0;
}

bn_apply_memo_t *
bn_apply_memo_new (void)
{
    return (bn_apply_memo_t *)calloc (1, sizeof (bn_apply_memo_t));
}

void
bn_apply_memo_destroy (bn_apply_memo_t **self_p)
{
    assert (self_p);
    bn_apply_memo_t *self = *self_p;
    if (!self)
        return;
    s_run_clear (&self->f_run);
    bn_apply_clear (&self->f);
    s_run_clear (&self->info_run);
    bn_value_destroy (&self->info);
    free (self);
    *self_p = NULL;
}

//  f and the names that say what it is, copied; -1 if out of memory.
static int
s_copy_f (const bn_apply_t *from, bn_apply_t *to)
{
    to->kind = from->kind;
    to->module = from->module ? strdup (from->module) : NULL;
    to->name = from->name ? strdup (from->name) : NULL;
    to->description = from->description ? strdup (from->description) : NULL;
    to->f = bn_value_dup (from->f);
    return (from->module && !to->module) || (from->name && !to->name) ||
                   (from->description && !to->description) || !to->f
               ? -1
               : 0;
}

//  f, decoded from the count buffers at bufs into out, kept in memo.
static void
s_memo_keep_f (bn_apply_memo_t *memo, const bn_bytes_t *bufs, size_t count,
               const bn_apply_t *out)
{
    bn_apply_clear (&memo->f);
    if (s_run_keep (&memo->f_run, bufs, count) || s_copy_f (out, &memo->f)) {
        s_run_clear (&memo->f_run);
        bn_apply_clear (&memo->f);
    }
}

//  info, decoded from buf, kept in memo: taken (NULLed) when kept.
static void
s_memo_keep_info (bn_apply_memo_t *memo, const bn_bytes_t *buf,
                  bn_value_t **info_p)
{
    bn_value_destroy (&memo->info);
    if (s_run_keep (&memo->info_run, buf, 1) == 0) {
        memo->info = *info_p;
        *info_p = NULL;
    }
}

int
bn_apply_unpack (const bn_bytes_t *bufs, size_t nbufs, bn_apply_t *out,
                 char *err, size_t errsize)
{
    return bn_apply_unpack_with (NULL, bufs, nbufs, out, err, errsize);
}

int
bn_apply_unpack_with (bn_apply_memo_t *memo, const bn_bytes_t *bufs,
                      size_t nbufs, bn_apply_t *out, char *err, size_t errsize)
{
    assert (bufs || nbufs == 0);
    assert (out);
    memset (out, 0, sizeof (*out));
    char reason[256] = "";
    bn_value_t *info = NULL; //  decoded here, when memo did not keep it
    const bn_value_t *read_info = NULL; //  info or memo's
    size_t used = 0;
    if (nbufs < 2) {
        bn_error_set (err, errsize,
                      "apply_request has %zu buffers, wants 2 or more", nbufs);
        return -1;
    }
    if (memo && s_run_same (&memo->f_run, bufs, nbufs)) {
        used = memo->f_run.count;
        *out = memo->f;
        out->borrowed = true;
    } else {
        out->f =
            bn_deserialize_object (bufs, nbufs, &used, reason, sizeof (reason));
        if (!out->f) {
            bn_error_set (err, errsize, "f: %s", reason);
            goto failed;
        }
        if (s_classify (out)) {
            bn_error_set (err, errsize, "out of memory");
            goto failed;
        }
        if (memo)
            s_memo_keep_f (memo, bufs, used, out);
    }
    if (used >= nbufs) {
        bn_error_set (err, errsize, "no info buffer after f");
        goto failed;
    }
    if (memo && memo->info && s_run_same (&memo->info_run, bufs + used, 1))
        read_info = memo->info;
    else {
        info = bn_pickle_decode (bufs[used].data, bufs[used].size, reason,
                                 sizeof (reason));
        if (!info) {
            bn_error_set (err, errsize, "info: %s", reason);
            goto failed;
        }
        read_info = info;
        if (memo)
            s_memo_keep_info (memo, bufs + used, &info);
    }
    used++;
    int64_t nargs = s_info_count (read_info, "nargs");
    int64_t narg_bufs = s_info_count (read_info, "narg_bufs");
    const bn_value_t *kw_keys = bn_value_dict_get (read_info, "kw_keys");
    size_t nkw = kw_keys ? bn_value_size (kw_keys) : 0;
    bool keys_ok = kw_keys && bn_value_type (kw_keys) == BN_VALUE_LIST;
    for (size_t i = 0; keys_ok && i < nkw; i++)
        keys_ok = bn_value_type (bn_value_item (kw_keys, i)) == BN_VALUE_STR;
    if (nargs < 0 || narg_bufs < 0 || !keys_ok) {
        bn_error_set (err, errsize,
                      "info is not {'nargs', 'narg_bufs', "
                      "'kw_keys'}");
        goto failed;
    }
    //  Every arg takes at least one buffer.
    if ((uint64_t)narg_bufs > nbufs - used || nargs > narg_bufs) {
        bn_error_set (err, errsize,
                      "info claims %" PRId64 " args in %" PRId64
                      " buffers, %zu left",
                      nargs, narg_bufs, nbufs - used);
        goto failed;
    }
    out->args = bn_value_new_list ();
    out->kwargs = bn_value_new_dict ();
    if (!out->args || !out->kwargs) {
        bn_error_set (err, errsize, "out of memory");
        goto failed;
    }
    const bn_bytes_t *arg_bufs = bufs + used;
    size_t offset = 0;
    for (int64_t i = 0; i < nargs; i++) {
        size_t taken = 0;
        bn_value_t *arg = bn_deserialize_object (
            arg_bufs + offset, (size_t)narg_bufs - offset, &taken, reason,
            sizeof (reason));
        if (!arg) {
            bn_error_set (err, errsize, "arg %" PRId64 ": %s", i, reason);
            goto failed;
        }
        offset += taken;
        if (bn_value_append (out->args, arg)) {
            bn_error_set (err, errsize, "out of memory");
            goto failed;
        }
    }
    if (offset != (size_t)narg_bufs) {
        bn_error_set (err, errsize, "%zu arg buffers left over",
                      (size_t)narg_bufs - offset);
        goto failed;
    }
    const bn_bytes_t *kw_bufs = arg_bufs + narg_bufs;
    size_t nkw_bufs = nbufs - used - (size_t)narg_bufs;
    offset = 0;
    for (size_t i = 0; i < nkw; i++) {
        const bn_value_t *key = bn_value_item (kw_keys, i);
        size_t taken = 0;
        bn_value_t *value =
            bn_deserialize_object (kw_bufs + offset, nkw_bufs - offset, &taken,
                                   reason, sizeof (reason));
        if (!value) {
            bn_error_set (err, errsize, "kwarg %s: %s", bn_value_str (key),
                          reason);
            goto failed;
        }
        offset += taken;
        if (bn_value_dict_set (out->kwargs, bn_value_dup (key), value)) {
            bn_error_set (err, errsize, "out of memory");
            goto failed;
        }
    }
    if (offset != nkw_bufs) {
        bn_error_set (err, errsize, "%zu kwarg buffers left over",
                      nkw_bufs - offset);
        goto failed;
    }
    bn_value_destroy (&info);
    return 0;

failed:
    bn_value_destroy (&info);
    bn_apply_clear (out);
    return -1;
}

void
bn_apply_clear (bn_apply_t *self)
{
    assert (self);
    if (!self->borrowed) {
        free (self->module);
        free (self->name);
        free (self->description);
        bn_value_destroy (&self->f);
    }
    bn_value_destroy (&self->args);
    bn_value_destroy (&self->kwargs);
    memset (self, 0, sizeof (*self));
}

//  An empty message to gather buffers in.
static bn_msg_t *
s_holder (void)
{
    const void *parts[4] = {NULL, NULL, NULL, NULL};
    size_t sizes[4] = {0, 0, 0, 0};
    return bn_msg_new_parts (parts, sizes);
}

//  pack_apply_message, appending to msg: f's frames, info, args' frames,
//  kwargs' frames. Takes f. Returns 0, or -1 (msg may then hold some).
static int
s_pack (bn_msg_t *msg, bn_value_t *f, const bn_value_t *args,
        const bn_value_t *kwargs)
{
    assert (!args || bn_value_type (args) == BN_VALUE_LIST ||
            bn_value_type (args) == BN_VALUE_TUPLE);
    assert (!kwargs || bn_value_type (kwargs) == BN_VALUE_DICT);
    size_t nargs = args ? bn_value_size (args) : 0;
    size_t nkw = kwargs ? bn_value_size (kwargs) : 0;
    bn_msg_t *frames = s_holder (); //  args' frames, then kwargs'
    size_t *order = (size_t *)malloc ((nkw + 1) * sizeof (size_t));
    bn_value_t *info = bn_value_new_dict ();
    bn_value_t *kw_keys = bn_value_new_list ();
    int rc = -1;
    if (!frames || !order || !info || !kw_keys || !f)
        goto done;
    for (size_t i = 0; i < nargs; i++)
        if (bn_serialize_object_add (frames, bn_value_item (args, i)))
            goto done;
    size_t narg_bufs = bn_msg_nbuffers (frames);
    //  Keyword names are str, sent in sorted order.
    for (size_t i = 0; i < nkw; i++) {
        const bn_value_t *key = bn_value_dict_key (kwargs, i);
        if (bn_value_type (key) != BN_VALUE_STR)
            goto done;
        size_t j = i;
        for (; j > 0 && bn_serialize_key_compare (
                            bn_value_dict_key (kwargs, order[j - 1]), key) > 0;
             j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (size_t i = 0; i < nkw; i++) {
        if (bn_value_append (
                kw_keys, bn_value_dup (bn_value_dict_key (kwargs, order[i]))) ||
            bn_serialize_object_add (frames,
                                     bn_value_dict_value (kwargs, order[i])))
            goto done;
    }
    if (bn_value_dict_set_str (info, "nargs",
                               bn_value_new_int ((int64_t)nargs)) ||
        bn_value_dict_set_str (info, "narg_bufs",
                               bn_value_new_int ((int64_t)narg_bufs)))
        goto done;
    int set = bn_value_dict_set_str (info, "kw_keys", kw_keys);
    kw_keys = NULL;
    size_t size;
    void *pickle = set == 0 ? bn_pickle_encode (info, &size) : NULL;
    if (!pickle || bn_serialize_object_add (msg, f) != 0) {
        free (pickle);
        goto done;
    }
    //  (the message takes the pickle, even when it fails)
    rc = bn_msg_add_buffer_owned (msg, pickle, size);
    for (size_t i = 0; rc == 0 && i < bn_msg_nbuffers (frames); i++)
        rc = bn_msg_add_buffer_msg (msg, bn_msg_buffer (frames, i));

done:
    bn_msg_destroy (&frames);
    bn_value_destroy (&info);
    bn_value_destroy (&kw_keys);
    bn_value_destroy (&f);
    free (order);
    return rc;
}

bn_value_t *
bn_apply_reference_new (const char *fname)
{
    assert (fname);
    bn_value_t *state = bn_value_new_dict ();
    if (!state ||
        bn_value_dict_set_str (state, "name", bn_value_new_str (fname)) ||
        bn_value_dict_set_str (state, "buffers", bn_value_new_list ())) {
        bn_value_destroy (&state);
        return NULL;
    }
    bn_value_t *cls = bn_value_new_global (BN_SERIALIZE_CANNING, "Reference");
    if (!cls) {
        bn_value_destroy (&state);
        return NULL;
    }
    return bn_value_new_object (cls, NULL, state);
}

//  s_pack as a zmsg_t of copies; takes f.
static zmsg_t *
s_pack_to_zmsg (bn_value_t *f, const bn_value_t *args, const bn_value_t *kwargs)
{
    bn_msg_t *holder = s_holder ();
    zmsg_t *msg = NULL;
    if (!holder)
        bn_value_destroy (&f);
    else if (s_pack (holder, f, args, kwargs) == 0)
        msg = zmsg_new ();
    for (size_t i = 0; msg && i < bn_msg_nbuffers (holder); i++) {
        zmq_msg_t *frame = bn_msg_buffer (holder, i);
        if (zmsg_addmem (msg, zmq_msg_data (frame), zmq_msg_size (frame)))
            zmsg_destroy (&msg);
    }
    bn_msg_destroy (&holder);
    return msg;
}

zmsg_t *
bn_apply_pack_reference (const char *fname, const bn_value_t *args,
                         const bn_value_t *kwargs)
{
    return s_pack_to_zmsg (bn_apply_reference_new (fname), args, kwargs);
}

zmsg_t *
bn_apply_pack_global (const char *module, const char *name,
                      const bn_value_t *args, const bn_value_t *kwargs)
{
    return s_pack_to_zmsg (bn_value_new_global (module, name), args, kwargs);
}

int
bn_apply_add_reference (bn_msg_t *msg, const char *fname,
                        const bn_value_t *args, const bn_value_t *kwargs)
{
    assert (msg);
    return s_pack (msg, bn_apply_reference_new (fname), args, kwargs);
}

int
bn_apply_add_global (bn_msg_t *msg, const char *module, const char *name,
                     const bn_value_t *args, const bn_value_t *kwargs)
{
    assert (msg);
    return s_pack (msg, bn_value_new_global (module, name), args, kwargs);
}

bn_value_t *
bn_apply_decode_result (const bn_bytes_t *bufs, size_t nbufs, char *err,
                        size_t errsize)
{
    return bn_deserialize_object (bufs, nbufs, NULL, err, errsize);
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_pickletest: test helpers for the pickle, serialize and apply Check
    programs: the files captured from the stock IPython Parallel 7.1.0
    serializer (tests/data/pickle) and values to compare with them.
    Included by one test program each, so everything here is static.  */
#ifndef BN_PICKLETEST_H_INCLUDED
#define BN_PICKLETEST_H_INCLUDED

#include <check.h>
#include <czmq.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bn_apply.h"
#include "bn_pickle.h"

#define DATA_DIR BN_SOURCE_DIR "/tests/data/pickle/"

//  The contents of a data file (NUL-terminated, not counted), or NULL.
static inline char *
t_load (const char *name, size_t *size_p)
{
    char path[512];
    snprintf (path, sizeof (path), DATA_DIR "%s", name);
    FILE *file = fopen (path, "rb");
    if (!file)
        return NULL;
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    fseek (file, 0, SEEK_SET);
    char *data = (char *)malloc ((size_t)size + 1);
    ck_assert_ptr_nonnull (data);
    ck_assert_uint_eq (fread (data, 1, (size_t)size, file), (size_t)size);
    data[size] = 0;
    fclose (file);
    if (size_p)
        *size_p = (size_t)size;
    return data;
}

static inline char *
t_must_load (const char *name, size_t *size_p)
{
    char *data = t_load (name, size_p);
    ck_assert_msg (data != NULL, "missing test data %s", name);
    return data;
}

static inline uint32_t
t_u32 (const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

//  A .frames file: count, then size and bytes of each frame.
typedef struct {
    char *data;
    bn_bytes_t frames[32];
    size_t nframes;
} t_frames_t;

static inline void
t_load_frames (const char *name, t_frames_t *out)
{
    char file[128];
    snprintf (file, sizeof (file), "%s.frames", name);
    size_t size;
    out->data = t_must_load (file, &size);
    const unsigned char *p = (const unsigned char *)out->data;
    out->nframes = t_u32 (p);
    ck_assert_uint_le (out->nframes, 32);
    size_t offset = 4;
    for (size_t i = 0; i < out->nframes; i++) {
        size_t length = t_u32 (p + offset);
        out->frames[i].data = p + offset + 4;
        out->frames[i].size = length;
        out->frames[i].frame = NULL;
        offset += 4 + length;
        ck_assert_uint_le (offset, size);
    }
}

//  A zmsg's frames as bn_bytes_t views (the message keeps the bytes).
static inline size_t
t_zmsg_bytes (zmsg_t *msg, bn_bytes_t *out, size_t max)
{
    size_t n = 0;
    for (zframe_t *frame = zmsg_first (msg); frame && n < max;
         frame = zmsg_next (msg)) {
        out[n].data = zframe_data (frame);
        out[n].size = zframe_size (frame);
        out[n].frame = NULL;
        n++;
    }
    return n;
}

static inline void
t_assert_repr (const bn_value_t *value, const char *expected)
{
    ck_assert_ptr_nonnull (value);
    char *repr = bn_value_repr (value);
    ck_assert_ptr_nonnull (repr);
    ck_assert_str_eq (repr, expected);
    free (repr);
}

static inline bn_value_t *
t_decode_file (const char *name, void **data_p, size_t *size_p)
{
    char file[128];
    snprintf (file, sizeof (file), "%s.pickle", name);
    char err[256];
    *data_p = t_must_load (file, size_p);
    bn_value_t *value = bn_pickle_decode (*data_p, *size_p, err, sizeof (err));
    ck_assert_msg (value != NULL, "%s: %s", name, err);
    return value;
}

static inline bn_value_t *
t_list_of (int count, ...)
{
    bn_value_t *list = bn_value_new_list ();
    va_list args;
    va_start (args, count);
    for (int i = 0; i < count; i++)
        ck_assert_int_eq (bn_value_append (list, va_arg (args, bn_value_t *)),
                          0);
    va_end (args);
    return list;
}

static inline bn_value_t *
t_filled_bytes (int byte, size_t size)
{
    char *data = (char *)malloc (size);
    memset (data, byte, size);
    bn_value_t *value = bn_value_new_bytes (data, size);
    free (data);
    return value;
}

//  Assert msg holds the frames of the data file name.
static inline void
t_assert_frames (zmsg_t *msg, const char *name)
{
    ck_assert_ptr_nonnull (msg);
    t_frames_t f;
    t_load_frames (name, &f);
    ck_assert_uint_eq (zmsg_size (msg), f.nframes);
    zframe_t *frame = zmsg_first (msg);
    for (size_t i = 0; i < f.nframes; i++, frame = zmsg_next (msg))
        ck_assert_msg (zframe_size (frame) == f.frames[i].size &&
                           memcmp (zframe_data (frame), f.frames[i].data,
                                   f.frames[i].size) == 0,
                       "%s frame %zu differs", name, i);
    free (f.data);
}

#endif

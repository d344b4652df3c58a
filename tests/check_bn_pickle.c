/*  check_bn_pickle: pickles and apply buffers against bytes captured from
    the stock IPython Parallel 7.1.0 serializer (tests/data/pickle).  */
#include "bn_pickle.h"

#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_DIR BN_SOURCE_DIR "/tests/data/pickle/"

//  The contents of a data file (NUL-terminated, not counted), or NULL.
static char *
s_load (const char *name, size_t *size_p)
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

static char *
s_must_load (const char *name, size_t *size_p)
{
    char *data = s_load (name, size_p);
    ck_assert_msg (data != NULL, "missing test data %s", name);
    return data;
}

static uint32_t
s_u32 (const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

//  A .frames file: count, then size and bytes of each frame.
typedef struct {
    char *data;
    bn_bytes_t frames[32];
    size_t nframes;
} frames_t;

static void
s_load_frames (const char *name, frames_t *out)
{
    char file[128];
    snprintf (file, sizeof (file), "%s.frames", name);
    size_t size;
    out->data = s_must_load (file, &size);
    const unsigned char *p = (const unsigned char *)out->data;
    out->nframes = s_u32 (p);
    ck_assert_uint_le (out->nframes, 32);
    size_t offset = 4;
    for (size_t i = 0; i < out->nframes; i++) {
        size_t length = s_u32 (p + offset);
        out->frames[i].data = p + offset + 4;
        out->frames[i].size = length;
        offset += 4 + length;
        ck_assert_uint_le (offset, size);
    }
}

//  A zmsg's frames as bn_bytes_t views (the message keeps the bytes).
static size_t
s_zmsg_bytes (zmsg_t *msg, bn_bytes_t *out, size_t max)
{
    size_t n = 0;
    for (zframe_t *frame = zmsg_first (msg); frame && n < max;
         frame = zmsg_next (msg)) {
        out[n].data = zframe_data (frame);
        out[n].size = zframe_size (frame);
        n++;
    }
    return n;
}

static void
s_assert_repr (const bn_value_t *value, const char *expected)
{
    ck_assert_ptr_nonnull (value);
    char *repr = bn_value_repr (value);
    ck_assert_ptr_nonnull (repr);
    ck_assert_str_eq (repr, expected);
    free (repr);
}

static bn_value_t *
s_decode_file (const char *name, void **data_p, size_t *size_p)
{
    char file[128];
    snprintf (file, sizeof (file), "%s.pickle", name);
    char err[256];
    *data_p = s_must_load (file, size_p);
    bn_value_t *value = bn_pickle_decode (*data_p, *size_p, err, sizeof (err));
    ck_assert_msg (value != NULL, "%s: %s", name, err);
    return value;
}

static bn_value_t *
s_list_of (int count, ...)
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

static bn_value_t *
s_filled_bytes (int byte, size_t size)
{
    char *data = (char *)malloc (size);
    memset (data, byte, size);
    bn_value_t *value = bn_value_new_bytes (data, size);
    free (data);
    return value;
}

START_TEST (test_usage)
{
    //  A C client asks an engine for echo (1, 'two', flag=True).
    bn_value_t *args =
        s_list_of (2, bn_value_new_int (1), bn_value_new_str ("two"));
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "flag", bn_value_new_bool (true));
    zmsg_t *request = bn_apply_pack_reference ("echo", args, kwargs);
    ck_assert_ptr_nonnull (request);
    ck_assert_uint_eq (zmsg_size (request), 5); //  f, info, 2 args, kwarg

    //  A C engine unpacks it and finds the function by name.
    bn_bytes_t bufs[16];
    size_t nbufs = s_zmsg_bytes (request, bufs, 16);
    bn_apply_t apply;
    char err[256];
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &apply, err, sizeof (err)),
                      0);
    ck_assert_int_eq (apply.kind, BN_APPLY_REFERENCE);
    ck_assert_str_eq (apply.name, "echo");
    ck_assert (bn_value_equal (apply.args, args));
    ck_assert (bn_value_equal (apply.kwargs, kwargs));

    //  It replies with the args; the client decodes the reply buffers.
    zmsg_t *reply = bn_serialize_object (apply.args);
    ck_assert_ptr_nonnull (reply);
    nbufs = s_zmsg_bytes (reply, bufs, 16);
    bn_value_t *result =
        bn_apply_decode_result (bufs, nbufs, err, sizeof (err));
    s_assert_repr (result, "[1, 'two']");

    bn_value_destroy (&result);
    zmsg_destroy (&reply);
    bn_apply_clear (&apply);
    zmsg_destroy (&request);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
}
END_TEST

//  Pickles whose decoded repr must equal Python's repr of the value.
static const char *s_repr_cases[] = {
    "int_2",     "none",      "true",     "float_3_5", "str_hi",
    "ints",      "floats",    "unicode",  "nested",    "info",
    "list_1001", "dict_1000", "shared",   "mixed_p0",  "mixed_p1",
    "mixed_p2",  "mixed_p3",  "mixed_p4", "mixed_p5",  "float_corpus",
    "str_corpus"};

START_TEST (test_decode_corpus)
{
    for (size_t i = 0; i < sizeof (s_repr_cases) / sizeof (s_repr_cases[0]);
         i++) {
        const char *name = s_repr_cases[i];
        void *data;
        size_t size;
        bn_value_t *value = s_decode_file (name, &data, &size);
        char file[128];
        snprintf (file, sizeof (file), "%s.repr", name);
        char *expected = s_must_load (file, NULL);
        char *repr = bn_value_repr (value);
        ck_assert_msg (strcmp (repr, expected) == 0, "%s:\n%s\n!=\n%s", name,
                       repr, expected);
        free (repr);
        free (expected);
        free (data);
        bn_value_destroy (&value);
    }
}
END_TEST

//  Protocol 4 pickles of values without shared objects: encoding what was
//  decoded gives Python's bytes exactly.
static const char *s_exact_cases[] = {
    "int_2",     "none",      "true",         "float_3_5", "str_hi",
    "ints",      "floats",    "unicode",      "info",      "odict",
    "list_1001", "dict_1000", "float_corpus", "str_corpus"};

START_TEST (test_encode_exact)
{
    for (size_t i = 0; i < sizeof (s_exact_cases) / sizeof (s_exact_cases[0]);
         i++) {
        void *data;
        size_t size;
        bn_value_t *value = s_decode_file (s_exact_cases[i], &data, &size);
        size_t encoded_size;
        void *encoded = bn_pickle_encode (value, &encoded_size);
        ck_assert_ptr_nonnull (encoded);
        ck_assert_msg (encoded_size == size &&
                           memcmp (encoded, data, size) == 0,
                       "%s differs from Python's pickle", s_exact_cases[i]);
        free (encoded);
        free (data);
        bn_value_destroy (&value);
    }
}
END_TEST

START_TEST (test_decode_details)
{
    void *data;
    size_t size;
    char err[256];

    //  Ints past 64 bits are refused.
    data = s_must_load ("toobig.pickle", &size);
    ck_assert_ptr_null (bn_pickle_decode (data, size, err, sizeof (err)));
    ck_assert_ptr_nonnull (strstr (err, "64 bits"));
    free (data);

    //  An OrderedDict: REDUCE, then SETITEMS into the object's items.
    bn_value_t *value = s_decode_file ("odict", &data, &size);
    ck_assert (bn_value_object_is (value, "collections", "OrderedDict"));
    ck_assert (bn_value_object_is_reduce (value));
    s_assert_repr (bn_value_object_items (value), "{'a': 1, 'b': [2]}");
    bn_value_destroy (&value);
    free (data);

    //  Memo references are copies that equal the original.
    value = s_decode_file ("shared", &data, &size);
    ck_assert (
        bn_value_equal (bn_value_item (value, 0), bn_value_item (value, 2)));
    ck_assert_ptr_ne (bn_value_item (value, 0), bn_value_item (value, 2));
    bn_value_destroy (&value);
    free (data);

    //  Every protocol decodes the same data to the same values.
    bn_value_t *p4 = s_decode_file ("mixed_p4", &data, &size);
    free (data);
    for (int protocol = 0; protocol <= 5; protocol++) {
        char name[32];
        snprintf (name, sizeof (name), "mixed_p%d", protocol);
        value = s_decode_file (name, &data, &size);
        ck_assert_msg (bn_value_equal (value, p4), "protocol %d", protocol);
        bn_value_destroy (&value);
        free (data);
    }
    //  bytearray is bytes here, frozenset a set.
    ck_assert_int_eq (bn_value_type (bn_value_item (p4, 14)), BN_VALUE_BYTES);
    ck_assert_int_eq (bn_value_type (bn_value_item (p4, 13)), BN_VALUE_SET);
    bn_value_destroy (&p4);

    //  Python 3.11's pickles of 2 and None (doc/wire.md 10.1).
    const unsigned char two[] = {0x80, 0x04, 0x4b, 0x02, 0x2e};
    value = bn_pickle_decode (two, sizeof (two), err, sizeof (err));
    ck_assert_int_eq (bn_value_int (value), 2);
    bn_value_destroy (&value);
    const unsigned char none[] = {0x80, 0x04, 0x4e, 0x2e};
    value = bn_pickle_decode (none, sizeof (none), err, sizeof (err));
    ck_assert_int_eq (bn_value_type (value), BN_VALUE_NONE);
    bn_value_destroy (&value);
}
END_TEST

//  Values built in C, as make.py builds them, pickled to Python's bytes
//  (compared by digest, large.sha256) across frames and batches.
static bn_value_t *
s_large_value (const char *name)
{
    bn_value_t *value = NULL;
    char text[32];
    if (strcmp (name, "strings_20000") == 0) {
        value = bn_value_new_list ();
        for (int i = 0; i < 20000; i++) {
            snprintf (text, sizeof (text), "s%09d", i);
            bn_value_append (value, bn_value_new_str (text));
        }
    } else if (strcmp (name, "bytes_65530_list") == 0)
        value = s_list_of (1, s_filled_bytes ('x', 65530));
    else if (strcmp (name, "bytes_65530_then_ints") == 0)
        value = s_list_of (3, s_filled_bytes ('x', 65530), bn_value_new_int (5),
                           bn_value_new_int (6));
    else if (strcmp (name, "bytes_70000") == 0) {
        unsigned char *data = (unsigned char *)malloc (70000);
        for (int i = 0; i < 70000; i++)
            data[i] = (unsigned char)(i * 7 % 256);
        value = bn_value_new_bytes (data, 70000);
        free (data);
    } else if (strcmp (name, "dict_3000") == 0) {
        value = bn_value_new_dict ();
        for (int i = 0; i < 3000; i++) {
            snprintf (text, sizeof (text), "k%05d", i);
            bn_value_dict_set_str (value, text, bn_value_new_int (i));
        }
    } else if (strcmp (name, "floats_1001") == 0) {
        value = bn_value_new_list ();
        for (int i = 0; i < 1001; i++)
            bn_value_append (value, bn_value_new_float (i / 3.0));
    } else if (strcmp (name, "str_70000") == 0) {
        char *data = (char *)malloc (70000);
        for (int i = 0; i < 70000; i += 2)
            memcpy (data + i, "\xc3\xa9", 2);
        value = bn_value_new_strn (data, 70000);
        free (data);
    }
    return value;
}

START_TEST (test_encode_large)
{
    char *digests = s_must_load ("large.sha256", NULL);
    int checked = 0;
    for (char *line = strtok (digests, "\n"); line;
         line = strtok (NULL, "\n")) {
        char name[64], hex[65];
        ck_assert_int_eq (sscanf (line, "%63s %64s", name, hex), 2);
        bn_value_t *value = s_large_value (name);
        ck_assert_msg (value != NULL, "no C value for %s", name);
        size_t size;
        void *pickle = bn_pickle_encode (value, &size);
        ck_assert_ptr_nonnull (pickle);
        unsigned char digest[crypto_hash_sha256_BYTES];
        crypto_hash_sha256 (digest, pickle, size);
        char got[65];
        for (size_t i = 0; i < sizeof (digest); i++)
            snprintf (got + 2 * i, 3, "%02x", digest[i]);
        ck_assert_msg (strcmp (got, hex) == 0, "%s differs from Python's",
                       name);
        //  And it reads back.
        bn_value_t *back = bn_pickle_decode (pickle, size, NULL, 0);
        ck_assert (bn_value_equal (back, value));
        bn_value_destroy (&back);
        free (pickle);
        bn_value_destroy (&value);
        checked++;
    }
    ck_assert_int_eq (checked, 7);
    free (digests);
}
END_TEST

START_TEST (test_encode_values)
{
    //  Every kind of value survives C -> pickle -> C.
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_int (-7));
    bn_value_t *state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "x", bn_value_new_float (-1.25));
    bn_value_t *object =
        bn_value_new_object (bn_value_new_global ("mod", "Cls"), args, state);
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "k", bn_value_new_str ("v"));
    bn_value_object_swap_kwargs (object, kwargs);
    bn_value_object_swap_items (object, s_list_of (1, bn_value_new_none ()));
    bn_value_t *set = bn_value_new_set ();
    bn_value_append (set, bn_value_new_str ("a"));
    bn_value_append (set, bn_value_new_int (INT64_MIN));
    bn_value_t *value = s_list_of (
        9, bn_value_new_int (INT64_MAX), bn_value_new_int (-129),
        bn_value_new_float (1e-300), set, object,
        bn_value_new_reduce (bn_value_new_global ("decimal", "Decimal"), NULL),
        bn_value_new_global ("builtins", "sum"), s_filled_bytes (0, 300),
        bn_value_new_strn ("\xed\xa0\x80", 3));
    size_t size;
    void *pickle = bn_pickle_encode (value, &size);
    ck_assert_ptr_nonnull (pickle);
    char err[256];
    bn_value_t *back = bn_pickle_decode (pickle, size, err, sizeof (err));
    ck_assert_msg (back != NULL, "%s", err);
    ck_assert (bn_value_equal (back, value));
    free (pickle);
    bn_value_destroy (&back);
    bn_value_destroy (&value);

    //  What Python could not load is refused.
    value = bn_value_new_str ("\xff");
    ck_assert_ptr_null (bn_pickle_encode (value, &size));
    bn_value_destroy (&value);
    value = bn_value_new_dict ();
    bn_value_dict_set (value, bn_value_new_list (), bn_value_new_none ());
    ck_assert_ptr_null (bn_pickle_encode (value, &size));
    bn_value_destroy (&value);
    value = bn_value_new_set ();
    bn_value_append (value, s_list_of (1, bn_value_new_tuple ()));
    ck_assert_ptr_null (bn_pickle_encode (value, &size));
    bn_value_destroy (&value);
}
END_TEST

//  Hostile and broken pickles: each is refused with a reason.
START_TEST (test_decode_errors)
{
    struct {
        const char *data;
        size_t size;
        const char *reason;
    } cases[] = {
        {"", 0, "truncated"},
        {"\x80\x04", 2, "truncated"},
        {"\x80\x06N.", 4, "protocol"},
        {".", 1, "underflow"},
        {"a", 1, "underflow"},
        {"]a.", 3, "underflow"},
        {"(Ne.", 4, "underflow"},
        {"}(Nu.", 5, "odd"},
        {"1", 1, "MARK"},
        {"Nh\x05.", 4, "missing"},
        {"Nr\xff\xff\xff\x7f.", 7, "too large"},
        {"\x80\x05\x97.", 4, "out-of-band"},
        {"NNb.", 4, "BUILD"},
        {"\xff", 1, "unknown opcode"},
        {"K\x01K\x02\x93.", 6, "STACK_GLOBAL"},
        {"\x8c\x01\xff.", 4, "UTF-8"},
        {"\x8d\xff\xff\xff\xff\xff\xff\xff\xff", 9, "truncated"},
        {"\x8b\xff\xff\xff\xff.", 6, "negative"},
        {"\x95\xe8\x03\x00\x00\x00\x00\x00\x00N.", 11, "truncated"},
        {"cbuiltins\nlist\nNR.", 18, "tuple"},
        {"Pabc\n.", 6, "persistent"},
        {"\x82\x01.", 3, "extension"},
        {"I12x\n.", 6, "integer"},
        {"I99999999999999999999\n.", 23, "integer"},
        {"S'abc\n.", 7, "quoted"},
        {"V\\u12\n.", 7, "escape"},
        {"Fnotafloat\n.", 12, "float"},
        {"cmod\n", 5, "truncated"},
        {"]Ne.", 4, "MARK"},
        {"(o.", 3, "without a class"},
        {"N)\x92.", 4, "underflow"},
        {"](N\x90.", 5, "ADDITEMS"},
    };
    char err[256];
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        err[0] = 0;
        bn_value_t *value =
            bn_pickle_decode (cases[i].data, cases[i].size, err, sizeof (err));
        ck_assert_msg (value == NULL, "case %zu decoded", i);
        ck_assert_msg (strstr (err, cases[i].reason) != NULL,
                       "case %zu: '%s' lacks '%s'", i, err, cases[i].reason);
    }
    //  No room for a message is fine too.
    ck_assert_ptr_null (bn_pickle_decode ("a", 1, NULL, 0));
}
END_TEST

START_TEST (test_decode_limits)
{
    char err[256];
    size_t size = 0;
    unsigned char *data = (unsigned char *)malloc (1 << 20);

    //  Nesting: 5000 one-item tuples around each other.
    data[size++] = ')';
    for (int i = 0; i < 5000; i++)
        data[size++] = 0x85;
    data[size++] = '.';
    ck_assert_ptr_null (bn_pickle_decode (data, size, err, sizeof (err)));
    ck_assert_ptr_nonnull (strstr (err, "nested"));

    //  And just under the limit it works.
    size = 0;
    data[size++] = ')';
    for (int i = 1; i < BN_PICKLE_MAX_DEPTH; i++)
        data[size++] = 0x85;
    data[size++] = '.';
    bn_value_t *value = bn_pickle_decode (data, size, err, sizeof (err));
    ck_assert_msg (value != NULL, "%s", err);
    bn_value_destroy (&value);

    //  Nesting by appending lists into lists through the memo.
    size = 0;
    data[size++] = ']';
    for (int i = 0; i < 3000; i++) {
        data[size++] = 0x94; //  MEMOIZE the list on top
        data[size++] = ']';
        data[size++] = 'j'; //  LONG_BINGET it
        data[size++] = (unsigned char)i;
        data[size++] = (unsigned char)(i >> 8);
        data[size++] = 0;
        data[size++] = 0;
        data[size++] = 'a'; //  into the new list
    }
    data[size++] = '.';
    value = bn_pickle_decode (data, size, err, sizeof (err));
    ck_assert_ptr_null (value);
    ck_assert_ptr_nonnull (strstr (err, "nested"));

    //  Copies that double at each step (a billion-laughs pickle).
    size = 0;
    data[size++] = 0x80;
    data[size++] = 4;
    data[size++] = 0x8c;
    data[size++] = 100;
    memset (data + size, 'x', 100);
    size += 100;
    data[size++] = 0x94;
    for (int i = 0; i < 60; i++) {
        data[size++] = 'h';
        data[size++] = (unsigned char)i;
        data[size++] = 'h';
        data[size++] = (unsigned char)i;
        data[size++] = 0x86;
        data[size++] = 0x94;
    }
    data[size++] = '.';
    ck_assert_ptr_null (bn_pickle_decode (data, size, err, sizeof (err)));
    ck_assert_ptr_nonnull (strstr (err, "budget"));

    //  Many marks and a long stack are fine.
    size = 0;
    for (int i = 0; i < 200000; i++)
        data[size++] = '(';
    data[size++] = 'N';
    data[size++] = '.';
    value = bn_pickle_decode (data, size, err, sizeof (err));
    ck_assert_int_eq (bn_value_type (value), BN_VALUE_NONE);
    bn_value_destroy (&value);
    free (data);
}
END_TEST

//  Decode, and if that works print and re-encode, never crash.
static void
s_poke (const void *data, size_t size)
{
    char err[128];
    bn_value_t *value = bn_pickle_decode (data, size, err, sizeof (err));
    if (!value) {
        ck_assert (err[0] != 0);
        return;
    }
    char *repr = bn_value_repr (value);
    ck_assert_ptr_nonnull (repr);
    free (repr);
    size_t encoded_size;
    free (bn_pickle_encode (value, &encoded_size));
    bn_value_destroy (&value);
}

static void
s_fuzz (const unsigned char *data, size_t size, unsigned *seed)
{
    unsigned char *copy = (unsigned char *)malloc (size + 1);
    //  Big inputs get their ends and a sample of the middle.
    size_t step = size > 4096 ? size / 512 : 1;
    for (size_t cut = 0; cut < size;
         cut += (cut < 256 || size - cut < 256) ? 1 : step) {
        //  Truncated, into an exact-size buffer so ASan sees overreads.
        memcpy (copy, data, cut);
        unsigned char *exact = (unsigned char *)malloc (cut ? cut : 1);
        memcpy (exact, data, cut);
        s_poke (exact, cut);
        free (exact);
        //  One byte changed.
        memcpy (copy, data, size);
        copy[cut] ^= 0xff;
        s_poke (copy, size);
        copy[cut] = (unsigned char)rand_r (seed);
        s_poke (copy, size);
    }
    //  A few bytes changed at random places.
    for (int round = 0; round < 200; round++) {
        memcpy (copy, data, size);
        for (int k = 0; k < 4; k++)
            copy[rand_r (seed) % size] = (unsigned char)rand_r (seed);
        s_poke (copy, size);
    }
    free (copy);
}

START_TEST (test_fuzz)
{
    const char *pickles[] = {"nested",   "mixed_p0", "mixed_p1",  "mixed_p2",
                             "mixed_p3", "mixed_p4", "mixed_p5",  "unicode",
                             "info",     "odict",    "shared",    "ints",
                             "floats",   "toobig",   "str_corpus"};
    const char *frames[] = {"apply_function",  "apply_lambda",
                            "apply_reference", "apply_big_arg",
                            "ser_dict_bytes",  "ser_ndarray"};
    unsigned seed = 1;
    for (size_t i = 0; i < sizeof (pickles) / sizeof (pickles[0]); i++) {
        char name[64];
        snprintf (name, sizeof (name), "%s.pickle", pickles[i]);
        size_t size;
        char *data = s_must_load (name, &size);
        s_fuzz ((const unsigned char *)data, size, &seed);
        free (data);
    }
    for (size_t i = 0; i < sizeof (frames) / sizeof (frames[0]); i++) {
        frames_t f;
        s_load_frames (frames[i], &f);
        for (size_t k = 0; k < f.nframes; k++)
            if (f.frames[k].size < 1024)
                s_fuzz ((const unsigned char *)f.frames[k].data,
                        f.frames[k].size, &seed);
        free (f.data);
    }
}
END_TEST

START_TEST (test_fuzz_apply)
{
    //  Whole apply_request buffers with frames dropped, added or broken.
    frames_t f;
    s_load_frames ("apply_reference", &f);
    unsigned seed = 2;
    bn_apply_t apply;
    char err[256];
    for (size_t n = 0; n <= f.nframes; n++) {
        int rc = bn_apply_unpack (f.frames, n, &apply, err, sizeof (err));
        ck_assert_int_eq (rc, n == f.nframes ? 0 : -1);
        bn_apply_clear (&apply);
    }
    bn_bytes_t more[33];
    memcpy (more, f.frames, f.nframes * sizeof (bn_bytes_t));
    more[f.nframes] = f.frames[0];
    ck_assert_int_eq (
        bn_apply_unpack (more, f.nframes + 1, &apply, err, sizeof (err)), -1);
    ck_assert_ptr_nonnull (strstr (err, "left over"));
    for (size_t k = 0; k < f.nframes; k++) {
        size_t size = f.frames[k].size;
        unsigned char *copy = (unsigned char *)malloc (size);
        for (int round = 0; round < 300; round++) {
            memcpy (copy, f.frames[k].data, size);
            copy[rand_r (&seed) % size] = (unsigned char)rand_r (&seed);
            memcpy (more, f.frames, f.nframes * sizeof (bn_bytes_t));
            more[k].data = copy;
            if (bn_apply_unpack (more, f.nframes, &apply, err, sizeof (err)))
                ck_assert (err[0] != 0);
            bn_apply_clear (&apply);
        }
        free (copy);
    }
    free (f.data);
}
END_TEST

START_TEST (test_deserialize)
{
    const char *cases[] = {"ser_int",        "ser_small_bytes", "ser_big_bytes",
                           "ser_list_bytes", "ser_dict_bytes",  "ser_range",
                           "ser_str",        "ser_set_bytes"};
    char err[256];
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        frames_t f;
        s_load_frames (cases[i], &f);
        size_t used = 0;
        bn_value_t *value = bn_deserialize_object (f.frames, f.nframes, &used,
                                                   err, sizeof (err));
        ck_assert_msg (value != NULL, "%s: %s", cases[i], err);
        ck_assert_uint_eq (used, f.nframes);
        char file[64];
        snprintf (file, sizeof (file), "%s.repr", cases[i]);
        char *expected = s_must_load (file, NULL);
        s_assert_repr (value, expected);
        free (expected);
        bn_value_destroy (&value);
        //  Without its out-of-band frames it fails.
        if (f.nframes > 1) {
            ck_assert_ptr_null (bn_deserialize_object (
                f.frames, f.nframes - 1, &used, err, sizeof (err)));
            ck_assert_ptr_nonnull (strstr (err, "buffers"));
        }
        free (f.data);
    }

    //  A numpy array stays canned, with its buffer filled in.
    frames_t f;
    s_load_frames ("ser_ndarray", &f);
    bn_value_t *array =
        bn_deserialize_object (f.frames, f.nframes, NULL, err, sizeof (err));
    ck_assert (bn_value_object_is (array, "ipyparallel.serialize.canning",
                                   "CannedArray"));
    const bn_value_t *state = bn_value_object_state (array);
    s_assert_repr (bn_value_dict_get (state, "shape"), "(300,)");
    s_assert_repr (bn_value_dict_get (state, "dtype"), "'<i8'");
    const bn_value_t *buffer =
        bn_value_item (bn_value_dict_get (state, "buffers"), 0);
    ck_assert_uint_eq (bn_value_bytes_size (buffer), 2400);
    ck_assert_int_eq (
        memcmp (bn_value_bytes_data (buffer), f.frames[1].data, 2400), 0);
    bn_value_destroy (&array);
    free (f.data);

    ck_assert_ptr_null (
        bn_deserialize_object (NULL, 0, NULL, err, sizeof (err)));
}
END_TEST

static void
s_assert_frames (zmsg_t *msg, const char *name)
{
    ck_assert_ptr_nonnull (msg);
    frames_t f;
    s_load_frames (name, &f);
    ck_assert_uint_eq (zmsg_size (msg), f.nframes);
    zframe_t *frame = zmsg_first (msg);
    for (size_t i = 0; i < f.nframes; i++, frame = zmsg_next (msg))
        ck_assert_msg (zframe_size (frame) == f.frames[i].size &&
                           memcmp (zframe_data (frame), f.frames[i].data,
                                   f.frames[i].size) == 0,
                       "%s frame %zu differs", name, i);
    free (f.data);
}

START_TEST (test_serialize)
{
    //  Byte for byte what the stock serialize_object sends.
    bn_value_t *value = bn_value_new_int (5);
    zmsg_t *msg = bn_serialize_object (value);
    s_assert_frames (msg, "ser_int");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_str ("r\xc3\xa9sultat");
    msg = bn_serialize_object (value);
    s_assert_frames (msg, "ser_str");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_list ();
    for (int i = 0; i < 100; i++)
        bn_value_append (value, bn_value_new_int (i));
    msg = bn_serialize_object (value);
    s_assert_frames (msg, "ser_range");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    unsigned char data[2048];
    for (int i = 0; i < 2048; i++)
        data[i] = (unsigned char)i;
    value = bn_value_new_bytes (data, sizeof (data));
    msg = bn_serialize_object (value);
    s_assert_frames (msg, "ser_big_bytes");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_dict ();
    bn_value_dict_set_str (value, "a", s_filled_bytes ('A', 1200));
    bn_value_dict_set_str (value, "b", s_filled_bytes ('B', 1500));
    bn_value_dict_set_str (value, "c", bn_value_new_int (3));
    msg = bn_serialize_object (value);
    s_assert_frames (msg, "ser_dict_bytes");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    bn_value_t *state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "name", bn_value_new_str ("myfunc"));
    bn_value_dict_set_str (state, "buffers", bn_value_new_list ());
    value = bn_value_new_object (
        bn_value_new_global ("ipyparallel.serialize.canning", "Reference"),
        NULL, state);
    msg = bn_serialize_object (value);
    s_assert_frames (msg, "reference_myfunc");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    //  Unpicklable values give NULL.
    value = bn_value_new_str ("\xff");
    ck_assert_ptr_null (bn_serialize_object (value));
    bn_value_destroy (&value);
}
END_TEST

//  Frames banyan makes that the stock Python must accept: make.py checks
//  each file decodes there; this checks the encoder still makes them.
//  BN_PICKLE_WRITE_C=1 rewrites the files instead.
static void
s_check_c_frames (zmsg_t *msg, const char *name)
{
    ck_assert_ptr_nonnull (msg);
    if (getenv ("BN_PICKLE_WRITE_C")) {
        char path[512];
        snprintf (path, sizeof (path), DATA_DIR "%s.frames", name);
        FILE *file = fopen (path, "wb");
        ck_assert_ptr_nonnull (file);
        uint32_t count = (uint32_t)zmsg_size (msg);
        fwrite (&count, 4, 1, file);
        for (zframe_t *frame = zmsg_first (msg); frame;
             frame = zmsg_next (msg)) {
            uint32_t size = (uint32_t)zframe_size (frame);
            fwrite (&size, 4, 1, file);
            fwrite (zframe_data (frame), 1, size, file);
        }
        fclose (file);
    } else
        s_assert_frames (msg, name);
}

START_TEST (test_serialize_for_python)
{
    //  Keys Python cannot sort travel in a CannedObject.
    bn_value_t *value = bn_value_new_dict ();
    bn_value_dict_set (value, bn_value_new_int (1), bn_value_new_str ("one"));
    bn_value_dict_set_str (value, "two", bn_value_new_int (2));
    bn_value_dict_set (value, bn_value_new_none (), s_filled_bytes ('y', 2000));
    zmsg_t *msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_mixed_keys");
    bn_bytes_t bufs[8];
    size_t n = s_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 1);
    char err[256];
    bn_value_t *back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_object_is (back, "ipyparallel.serialize.canning",
                                   "CannedObject"));
    ck_assert (bn_value_equal (
        bn_value_dict_get (bn_value_object_state (back), "obj"), value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    //  Out-of-band frames follow Python's sorted key order.
    value = bn_value_new_dict ();
    bn_value_dict_set_str (value, "b", s_filled_bytes ('B', 1500));
    bn_value_dict_set_str (value, "a", s_filled_bytes ('A', 1200));
    bn_value_dict_set_str (value, "c", bn_value_new_int (3));
    msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_dict_bytes");
    n = s_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 3);
    ck_assert_uint_eq (bufs[1].size, 1200);
    back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = s_list_of (5, s_filled_bytes ('a', 1500), bn_value_new_str ("x"),
                       s_filled_bytes ('b', 1100), s_filled_bytes ('c', 1),
                       bn_value_new_int (7));
    msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_list");
    n = s_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 3);
    back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    bn_value_t *args =
        s_list_of (3, bn_value_new_int (1), bn_value_new_str ("two"),
                   s_list_of (1, bn_value_new_float (3.0)));
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "z", bn_value_new_none ());
    bn_value_dict_set_str (kwargs, "a", s_filled_bytes ('x', 2000));
    msg = bn_apply_pack_reference ("echo", args, kwargs);
    s_check_c_frames (msg, "c_reference");
    //  Which is what Python's pack_apply_message makes.
    s_assert_frames (msg, "apply_reference");
    zmsg_destroy (&msg);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
}
END_TEST

START_TEST (test_apply_unpack)
{
    bn_apply_t apply;
    char err[256];
    frames_t f;

    s_load_frames ("apply_reference", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_REFERENCE);
    ck_assert_str_eq (apply.name, "echo");
    ck_assert_ptr_null (apply.module);
    ck_assert_str_eq (apply.description, "Reference('echo')");
    s_assert_repr (apply.args, "[1, 'two', [3.0]]");
    ck_assert_uint_eq (bn_value_size (apply.kwargs), 2);
    ck_assert_str_eq (bn_value_str (bn_value_dict_key (apply.kwargs, 0)), "a");
    ck_assert_uint_eq (
        bn_value_bytes_size (bn_value_dict_get (apply.kwargs, "a")), 2000);
    ck_assert_int_eq (bn_value_type (bn_value_dict_get (apply.kwargs, "z")),
                      BN_VALUE_NONE);
    bn_apply_clear (&apply);
    bn_apply_clear (&apply);
    free (f.data);

    s_load_frames ("apply_sum", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_GLOBAL);
    ck_assert_str_eq (apply.module, "builtins");
    ck_assert_str_eq (apply.name, "sum");
    ck_assert_str_eq (apply.description, "builtins.sum");
    s_assert_repr (apply.args, "[[1, 2, 3]]");
    s_assert_repr (apply.kwargs, "{}");
    bn_apply_clear (&apply);
    free (f.data);

    s_load_frames ("apply_function", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_CANNED_FUNCTION);
    ck_assert_str_eq (apply.module, "__main__");
    ck_assert_str_eq (apply.name, "f");
    s_assert_repr (apply.args, "[1]");
    s_assert_repr (apply.kwargs, "{'b': 5}");
    //  The bytecode stays an opaque call to code_ctor.
    const bn_value_t *code =
        bn_value_dict_get (bn_value_object_state (apply.f), "code");
    ck_assert (bn_value_object_is (code, "ipyparallel.serialize.codeutil",
                                   "code_ctor"));
    ck_assert (bn_value_object_is_reduce (code));
    bn_apply_clear (&apply);
    free (f.data);

    s_load_frames ("apply_lambda", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_CANNED_FUNCTION);
    ck_assert_str_eq (apply.name, "<lambda>");
    bn_apply_clear (&apply);
    free (f.data);

    //  A function whose code holds an int over 64 bits cannot be read.
    s_load_frames ("apply_bigconst", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), -1);
    ck_assert_ptr_nonnull (strstr (err, "64 bits"));
    ck_assert_ptr_null (apply.f);
    free (f.data);

    s_load_frames ("apply_big_arg", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_str_eq (apply.name, "size");
    ck_assert_uint_eq (bn_value_size (apply.args), 2);
    ck_assert_uint_eq (bn_value_bytes_size (bn_value_item (apply.args, 0)),
                       5000);
    const bn_value_t *k =
        bn_value_dict_get (bn_value_item (apply.args, 1), "k");
    ck_assert_uint_eq (bn_value_bytes_size (k), 3000);
    ck_assert_int_eq (((const unsigned char *)bn_value_bytes_data (k))[2999],
                      2);
    bn_apply_clear (&apply);
    free (f.data);

    s_load_frames ("apply_noargs", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_str_eq (apply.name, "now");
    ck_assert_uint_eq (bn_value_size (apply.args), 0);
    bn_apply_clear (&apply);
    //  Too few buffers.
    ck_assert_int_eq (bn_apply_unpack (f.frames, 1, &apply, err, sizeof (err)),
                      -1);
    free (f.data);

    //  Something that names no function.
    bn_value_t *value = bn_value_new_int (3);
    zmsg_t *msg = bn_serialize_object (value);
    zframe_t *frame = zmsg_first (msg);
    bn_bytes_t bufs[2] = {{zframe_data (frame), zframe_size (frame)}, {0, 0}};
    s_load_frames ("apply_noargs", &f);
    bufs[1] = f.frames[1];
    ck_assert_int_eq (bn_apply_unpack (bufs, 2, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_OTHER);
    ck_assert_str_eq (apply.description, "int");
    bn_apply_clear (&apply);
    free (f.data);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);
}
END_TEST

START_TEST (test_apply_pack)
{
    bn_value_t *args =
        s_list_of (1, s_list_of (3, bn_value_new_int (1), bn_value_new_int (2),
                                 bn_value_new_int (3)));
    zmsg_t *msg = bn_apply_pack_global ("builtins", "sum", args, NULL);
    s_assert_frames (msg, "apply_sum");
    zmsg_destroy (&msg);
    bn_value_destroy (&args);

    msg = bn_apply_pack_reference ("now", NULL, NULL);
    s_assert_frames (msg, "apply_noargs");
    zmsg_destroy (&msg);

    //  Keyword names must be str.
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set (kwargs, bn_value_new_int (1), bn_value_new_int (2));
    ck_assert_ptr_null (bn_apply_pack_reference ("f", NULL, kwargs));
    bn_value_destroy (&kwargs);

    //  Into a bn_msg, and back out of its buffers.
    bn_session_t *session = bn_session_new (NULL, NULL);
    bn_msg_t *request = bn_msg_new (session, "apply_request");
    args = bn_value_new_tuple ();
    bn_value_append (args, s_filled_bytes ('q', 4000));
    kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "n", bn_value_new_int (-5));
    ck_assert_int_eq (bn_apply_add_reference (request, "work", args, kwargs),
                      0);
    bn_bytes_t bufs[16];
    size_t n = bn_bytes_from_msg (request, bufs, 16);
    ck_assert_uint_eq (n, 5); //  f, info, arg pickle + its bytes, kwarg
    bn_apply_t apply;
    char err[256];
    ck_assert_int_eq (bn_apply_unpack (bufs, n, &apply, err, sizeof (err)), 0);
    ck_assert_str_eq (apply.name, "work");
    ck_assert_uint_eq (bn_value_bytes_size (bn_value_item (apply.args, 0)),
                       4000);
    ck_assert_int_eq (bn_value_int (bn_value_dict_get (apply.kwargs, "n")), -5);
    bn_apply_clear (&apply);

    bn_msg_t *reply = bn_msg_new (session, "apply_reply");
    ck_assert_int_eq (bn_serialize_object_add (reply, args), 0);
    ck_assert_int_eq (
        bn_apply_add_global (reply, "builtins", "len", args, NULL), 0);
    n = bn_bytes_from_msg (reply, bufs, 16);
    ck_assert_uint_eq (n, 6);
    bn_value_t *result = bn_apply_decode_result (bufs, n, err, sizeof (err));
    ck_assert (bn_value_equal (result, args));
    bn_value_destroy (&result);

    bn_msg_destroy (&reply);
    bn_msg_destroy (&request);
    bn_session_destroy (&session);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_pickle");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 50);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_decode_corpus);
    tcase_add_test (tc, test_encode_exact);
    tcase_add_test (tc, test_decode_details);
    tcase_add_test (tc, test_encode_large);
    tcase_add_test (tc, test_encode_values);
    tcase_add_test (tc, test_decode_errors);
    tcase_add_test (tc, test_decode_limits);
    tcase_add_test (tc, test_fuzz);
    tcase_add_test (tc, test_fuzz_apply);
    tcase_add_test (tc, test_deserialize);
    tcase_add_test (tc, test_serialize);
    tcase_add_test (tc, test_serialize_for_python);
    tcase_add_test (tc, test_apply_unpack);
    tcase_add_test (tc, test_apply_pack);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

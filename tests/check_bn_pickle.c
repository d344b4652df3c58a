/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_pickle: pickles decoded and encoded against bytes captured
    from Python 3.11 and the stock IPython Parallel 7.1.0 serializer
    (tests/data/pickle), hostile pickles, limits, fuzzing.  */
#include "bn_pickletest.h"

#include <sodium.h>

START_TEST (test_usage)
{
    //  A value a C peer sends, as Python's pickle.dumps writes it, and back.
    bn_value_t *value =
        t_list_of (3, bn_value_new_int (1), bn_value_new_str ("two"),
                   bn_value_new_float (3.5));
    size_t size;
    void *data = bn_pickle_encode (value, &size);
    ck_assert_ptr_nonnull (data);
    ck_assert_uint_eq (((unsigned char *)data)[0], 0x80); //  PROTO 4
    ck_assert_uint_eq (((unsigned char *)data)[1], 4);
    char err[256];
    bn_value_t *back = bn_pickle_decode (data, size, err, sizeof (err));
    ck_assert_msg (back != NULL, "%s", err);
    ck_assert (bn_value_equal (back, value));
    t_assert_repr (back, "[1, 'two', 3.5]");
    bn_value_destroy (&back);
    free (data);
    bn_value_destroy (&value);
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
        bn_value_t *value = t_decode_file (name, &data, &size);
        char file[128];
        snprintf (file, sizeof (file), "%s.repr", name);
        char *expected = t_must_load (file, NULL);
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
        bn_value_t *value = t_decode_file (s_exact_cases[i], &data, &size);
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
    data = t_must_load ("toobig.pickle", &size);
    ck_assert_ptr_null (bn_pickle_decode (data, size, err, sizeof (err)));
    ck_assert_ptr_nonnull (strstr (err, "64 bits"));
    free (data);

    //  An OrderedDict: REDUCE, then SETITEMS into the object's items.
    bn_value_t *value = t_decode_file ("odict", &data, &size);
    ck_assert (bn_value_object_is (value, "collections", "OrderedDict"));
    ck_assert (bn_value_object_is_reduce (value));
    t_assert_repr (bn_value_object_items (value), "{'a': 1, 'b': [2]}");
    bn_value_destroy (&value);
    free (data);

    //  Memo references are copies that equal the original.
    value = t_decode_file ("shared", &data, &size);
    ck_assert (
        bn_value_equal (bn_value_item (value, 0), bn_value_item (value, 2)));
    ck_assert_ptr_ne (bn_value_item (value, 0), bn_value_item (value, 2));
    bn_value_destroy (&value);
    free (data);

    //  Every protocol decodes the same data to the same values.
    bn_value_t *p4 = t_decode_file ("mixed_p4", &data, &size);
    free (data);
    for (int protocol = 0; protocol <= 5; protocol++) {
        char name[32];
        snprintf (name, sizeof (name), "mixed_p%d", protocol);
        value = t_decode_file (name, &data, &size);
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
        value = t_list_of (1, t_filled_bytes ('x', 65530));
    else if (strcmp (name, "bytes_65530_then_ints") == 0)
        value = t_list_of (3, t_filled_bytes ('x', 65530), bn_value_new_int (5),
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
    char *digests = t_must_load ("large.sha256", NULL);
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
    bn_value_object_swap_items (object, t_list_of (1, bn_value_new_none ()));
    bn_value_t *set = bn_value_new_set ();
    bn_value_append (set, bn_value_new_str ("a"));
    bn_value_append (set, bn_value_new_int (INT64_MIN));
    bn_value_t *value = t_list_of (
        9, bn_value_new_int (INT64_MAX), bn_value_new_int (-129),
        bn_value_new_float (1e-300), set, object,
        bn_value_new_reduce (bn_value_new_global ("decimal", "Decimal"), NULL),
        bn_value_new_global ("builtins", "sum"), t_filled_bytes (0, 300),
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
    bn_value_append (value, t_list_of (1, bn_value_new_tuple ()));
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

    //  Nesting by appending lists into lists through the memo (a string
    //  popped first makes the pickle long enough for the copies, so that
    //  the nesting limit stops it).
    size = 0;
    data[size++] = 'X'; //  BINUNICODE
    size_t pad = 256 * 1024;
    for (int i = 0; i < 4; i++)
        data[size++] = (unsigned char)(pad >> (8 * i));
    memset (data + size, 'x', pad);
    size += pad;
    data[size++] = '0'; //  POP
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

//  Values in a tree of tuples.
static size_t
s_values (const bn_value_t *value)
{
    size_t count = 1;
    for (size_t i = 0; i < bn_value_size (value); i++)
        count += s_values (bn_value_item (value, i));
    return count;
}

//  References cannot make a short pickle build much: None, then levels of
//  DUP DUP TUPLE3, a tuple of three copies of the level below, three
//  times its values at each level. A level decodes while its copies fit
//  the budget of the pickle's size and is refused, saying so, past it.
START_TEST (test_copy_budget)
{
    char err[256];
    unsigned char data[128];
    size_t below = 1, largest = 0, copied = 0;
    int refused = 0;
    for (int levels = 1; levels <= 30; levels++) {
        size_t size = 0;
        data[size++] = 'N';
        for (int i = 0; i < levels; i++) {
            data[size++] = '2';
            data[size++] = '2';
            data[size++] = 0x87;
        }
        data[size++] = '.';
        copied += 2 * below * 64;
        below = 3 * below + 1;
        bn_value_t *value = bn_pickle_decode (data, size, err, sizeof (err));
        bool fits =
            copied <= BN_PICKLE_COPY_BUDGET + BN_PICKLE_COPY_PER_BYTE * size;
        ck_assert_msg ((value != NULL) == fits, "%d levels: %s", levels, err);
        if (value) {
            ck_assert_uint_eq (s_values (value), below);
            largest = below;
        } else {
            ck_assert_ptr_nonnull (strstr (err, "memo references copy more"));
            refused++;
        }
        bn_value_destroy (&value);
    }
    //  10 levels, 88,573 values, are the most 32 bytes may build
    ck_assert_uint_eq (largest, 88573);
    ck_assert_int_eq (refused, 20);
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
        char *data = t_must_load (name, &size);
        s_fuzz ((const unsigned char *)data, size, &seed);
        free (data);
    }
    for (size_t i = 0; i < sizeof (frames) / sizeof (frames[0]); i++) {
        t_frames_t f;
        t_load_frames (frames[i], &f);
        for (size_t k = 0; k < f.nframes; k++)
            if (f.frames[k].size < 1024)
                s_fuzz ((const unsigned char *)f.frames[k].data,
                        f.frames[k].size, &seed);
        free (f.data);
    }
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
    tcase_add_test (tc, test_copy_budget);
    tcase_add_test (tc, test_fuzz);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

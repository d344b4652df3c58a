/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_serialize: serialize_object and deserialize_object against
    the frames of the stock IPython Parallel 7.1.0 serializer
    (tests/data/pickle), and frames the stock one must accept.  */
#include "bn_pickletest.h"

START_TEST (test_usage)
{
    //  A list with a big bytes item: the pickle and the bytes out of band.
    bn_value_t *value =
        t_list_of (2, bn_value_new_str ("small"), t_filled_bytes ('x', 5000));
    zmsg_t *msg = bn_serialize_object (value);
    ck_assert_ptr_nonnull (msg);
    ck_assert_uint_eq (zmsg_size (msg), 2);
    ck_assert_uint_eq (zframe_size (zmsg_last (msg)), 5000);
    bn_bytes_t frames[4];
    size_t nframes = t_zmsg_bytes (msg, frames, 4);
    size_t used = 0;
    char err[256];
    bn_value_t *back =
        bn_deserialize_object (frames, nframes, &used, err, sizeof (err));
    ck_assert_msg (back != NULL, "%s", err);
    ck_assert_uint_eq (used, 2);
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);
}
END_TEST

START_TEST (test_deserialize)
{
    const char *cases[] = {"ser_int",        "ser_small_bytes", "ser_big_bytes",
                           "ser_list_bytes", "ser_dict_bytes",  "ser_range",
                           "ser_str",        "ser_set_bytes"};
    char err[256];
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        t_frames_t f;
        t_load_frames (cases[i], &f);
        size_t used = 0;
        bn_value_t *value = bn_deserialize_object (f.frames, f.nframes, &used,
                                                   err, sizeof (err));
        ck_assert_msg (value != NULL, "%s: %s", cases[i], err);
        ck_assert_uint_eq (used, f.nframes);
        char file[64];
        snprintf (file, sizeof (file), "%s.repr", cases[i]);
        char *expected = t_must_load (file, NULL);
        t_assert_repr (value, expected);
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
    t_frames_t f;
    t_load_frames ("ser_ndarray", &f);
    bn_value_t *array =
        bn_deserialize_object (f.frames, f.nframes, NULL, err, sizeof (err));
    ck_assert (bn_value_object_is (array, "ipyparallel.serialize.canning",
                                   "CannedArray"));
    const bn_value_t *state = bn_value_object_state (array);
    t_assert_repr (bn_value_dict_get (state, "shape"), "(300,)");
    t_assert_repr (bn_value_dict_get (state, "dtype"), "'<i8'");
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

START_TEST (test_serialize)
{
    //  Byte for byte what the stock serialize_object sends.
    bn_value_t *value = bn_value_new_int (5);
    zmsg_t *msg = bn_serialize_object (value);
    t_assert_frames (msg, "ser_int");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_str ("r\xc3\xa9sultat");
    msg = bn_serialize_object (value);
    t_assert_frames (msg, "ser_str");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_list ();
    for (int i = 0; i < 100; i++)
        bn_value_append (value, bn_value_new_int (i));
    msg = bn_serialize_object (value);
    t_assert_frames (msg, "ser_range");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    unsigned char data[2048];
    for (int i = 0; i < 2048; i++)
        data[i] = (unsigned char)i;
    value = bn_value_new_bytes (data, sizeof (data));
    msg = bn_serialize_object (value);
    t_assert_frames (msg, "ser_big_bytes");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = bn_value_new_dict ();
    bn_value_dict_set_str (value, "a", t_filled_bytes ('A', 1200));
    bn_value_dict_set_str (value, "b", t_filled_bytes ('B', 1500));
    bn_value_dict_set_str (value, "c", bn_value_new_int (3));
    msg = bn_serialize_object (value);
    t_assert_frames (msg, "ser_dict_bytes");
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    bn_value_t *state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "name", bn_value_new_str ("myfunc"));
    bn_value_dict_set_str (state, "buffers", bn_value_new_list ());
    value = bn_value_new_object (
        bn_value_new_global ("ipyparallel.serialize.canning", "Reference"),
        NULL, state);
    msg = bn_serialize_object (value);
    t_assert_frames (msg, "reference_myfunc");
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
        t_assert_frames (msg, name);
}

START_TEST (test_serialize_for_python)
{
    //  Keys Python cannot sort travel in a CannedObject.
    bn_value_t *value = bn_value_new_dict ();
    bn_value_dict_set (value, bn_value_new_int (1), bn_value_new_str ("one"));
    bn_value_dict_set_str (value, "two", bn_value_new_int (2));
    bn_value_dict_set (value, bn_value_new_none (), t_filled_bytes ('y', 2000));
    zmsg_t *msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_mixed_keys");
    bn_bytes_t bufs[8];
    size_t n = t_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 1);
    char err[256];
    //  and uncan to the dict, as in Python (make.py checks it there)
    bn_value_t *back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    //  Out-of-band frames follow Python's sorted key order.
    value = bn_value_new_dict ();
    bn_value_dict_set_str (value, "b", t_filled_bytes ('B', 1500));
    bn_value_dict_set_str (value, "a", t_filled_bytes ('A', 1200));
    bn_value_dict_set_str (value, "c", bn_value_new_int (3));
    msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_dict_bytes");
    n = t_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 3);
    ck_assert_uint_eq (bufs[1].size, 1200);
    back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    value = t_list_of (5, t_filled_bytes ('a', 1500), bn_value_new_str ("x"),
                       t_filled_bytes ('b', 1100), t_filled_bytes ('c', 1),
                       bn_value_new_int (7));
    msg = bn_serialize_object (value);
    s_check_c_frames (msg, "c_list");
    n = t_zmsg_bytes (msg, bufs, 8);
    ck_assert_uint_eq (n, 3);
    back = bn_deserialize_object (bufs, n, NULL, err, sizeof (err));
    ck_assert (bn_value_equal (back, value));
    bn_value_destroy (&back);
    zmsg_destroy (&msg);
    bn_value_destroy (&value);

    bn_value_t *args =
        t_list_of (3, bn_value_new_int (1), bn_value_new_str ("two"),
                   t_list_of (1, bn_value_new_float (3.0)));
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "z", bn_value_new_none ());
    bn_value_dict_set_str (kwargs, "a", t_filled_bytes ('x', 2000));
    msg = bn_apply_pack_reference ("echo", args, kwargs);
    s_check_c_frames (msg, "c_reference");
    //  Which is what Python's pack_apply_message makes.
    t_assert_frames (msg, "apply_reference");
    zmsg_destroy (&msg);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_serialize");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 50);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_deserialize);
    tcase_add_test (tc, test_serialize);
    tcase_add_test (tc, test_serialize_for_python);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

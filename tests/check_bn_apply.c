/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_apply: apply_request buffers packed and unpacked as IPython
    Parallel 7.1.0 makes and reads them (tests/data/pickle), and broken
    ones refused.  */
#include "bn_pickletest.h"

START_TEST (test_usage)
{
    //  A C client asks an engine for echo (1, 'two', flag=True).
    bn_value_t *args =
        t_list_of (2, bn_value_new_int (1), bn_value_new_str ("two"));
    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "flag", bn_value_new_bool (true));
    zmsg_t *request = bn_apply_pack_reference ("echo", args, kwargs);
    ck_assert_ptr_nonnull (request);
    ck_assert_uint_eq (zmsg_size (request), 5); //  f, info, 2 args, kwarg

    //  A C engine unpacks it and finds the function by name.
    bn_bytes_t bufs[16];
    size_t nbufs = t_zmsg_bytes (request, bufs, 16);
    bn_apply_t apply;
    char err[256];
    ck_assert_int_eq (bn_apply_unpack (bufs, nbufs, &apply, err, sizeof (err)),
                      0);
    ck_assert_int_eq (apply.kind, BN_APPLY_REFERENCE);
    ck_assert_str_eq (apply.name, "echo");
    //  What it calls, from f alone (the hub's history)
    char *function = bn_apply_function (bufs, 1);
    ck_assert_str_eq (function, "echo");
    free (function);
    function = bn_apply_function (bufs + 1, 1); //  the info dict
    ck_assert_str_eq (function, "dict");
    free (function);
    bn_bytes_t junk = {"not a pickle", 12, NULL};
    ck_assert_ptr_null (bn_apply_function (&junk, 1));
    ck_assert (bn_value_equal (apply.args, args));
    ck_assert (bn_value_equal (apply.kwargs, kwargs));

    //  It replies with the args; the client decodes the reply buffers.
    zmsg_t *reply = bn_serialize_object (apply.args);
    ck_assert_ptr_nonnull (reply);
    nbufs = t_zmsg_bytes (reply, bufs, 16);
    bn_value_t *result =
        bn_apply_decode_result (bufs, nbufs, err, sizeof (err));
    t_assert_repr (result, "[1, 'two']");

    bn_value_destroy (&result);
    zmsg_destroy (&reply);
    bn_apply_clear (&apply);
    zmsg_destroy (&request);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
}
END_TEST

START_TEST (test_fuzz_apply)
{
    //  Whole apply_request buffers with frames dropped, added or broken.
    t_frames_t f;
    t_load_frames ("apply_reference", &f);
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

START_TEST (test_apply_unpack)
{
    bn_apply_t apply;
    char err[256];
    t_frames_t f;

    t_load_frames ("apply_reference", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_REFERENCE);
    ck_assert_str_eq (apply.name, "echo");
    ck_assert_ptr_null (apply.module);
    ck_assert_str_eq (apply.description, "Reference('echo')");
    t_assert_repr (apply.args, "[1, 'two', [3.0]]");
    ck_assert_uint_eq (bn_value_size (apply.kwargs), 2);
    ck_assert_str_eq (bn_value_str (bn_value_dict_key (apply.kwargs, 0)), "a");
    ck_assert_uint_eq (
        bn_value_bytes_size (bn_value_dict_get (apply.kwargs, "a")), 2000);
    ck_assert_int_eq (bn_value_type (bn_value_dict_get (apply.kwargs, "z")),
                      BN_VALUE_NONE);
    bn_apply_clear (&apply);
    bn_apply_clear (&apply);
    free (f.data);

    t_load_frames ("apply_sum", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_GLOBAL);
    ck_assert_str_eq (apply.module, "builtins");
    ck_assert_str_eq (apply.name, "sum");
    ck_assert_str_eq (apply.description, "builtins.sum");
    t_assert_repr (apply.args, "[[1, 2, 3]]");
    t_assert_repr (apply.kwargs, "{}");
    bn_apply_clear (&apply);
    free (f.data);

    t_load_frames ("apply_function", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_CANNED_FUNCTION);
    ck_assert_str_eq (apply.module, "__main__");
    ck_assert_str_eq (apply.name, "f");
    t_assert_repr (apply.args, "[1]");
    t_assert_repr (apply.kwargs, "{'b': 5}");
    //  The bytecode stays an opaque call to code_ctor.
    const bn_value_t *code =
        bn_value_dict_get (bn_value_object_state (apply.f), "code");
    ck_assert (bn_value_object_is (code, "ipyparallel.serialize.codeutil",
                                   "code_ctor"));
    ck_assert (bn_value_object_is_reduce (code));
    bn_apply_clear (&apply);
    free (f.data);

    t_load_frames ("apply_lambda", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), 0);
    ck_assert_int_eq (apply.kind, BN_APPLY_CANNED_FUNCTION);
    ck_assert_str_eq (apply.name, "<lambda>");
    bn_apply_clear (&apply);
    free (f.data);

    //  A function whose code holds an int over 64 bits cannot be read.
    t_load_frames ("apply_bigconst", &f);
    ck_assert_int_eq (
        bn_apply_unpack (f.frames, f.nframes, &apply, err, sizeof (err)), -1);
    ck_assert_ptr_nonnull (strstr (err, "64 bits"));
    ck_assert_ptr_null (apply.f);
    free (f.data);

    t_load_frames ("apply_big_arg", &f);
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

    t_load_frames ("apply_noargs", &f);
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
    bn_bytes_t bufs[2] = {{zframe_data (frame), zframe_size (frame), NULL},
                          {0, 0, NULL}};
    t_load_frames ("apply_noargs", &f);
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

//  Unpack the request with memo and without: the same outcome either way.
static int
s_unpack_both (bn_apply_memo_t *memo, zmsg_t *request, size_t drop)
{
    bn_bytes_t bufs[16];
    size_t nbufs = t_zmsg_bytes (request, bufs, 16) - drop;
    bn_apply_t plain, memoed;
    char err[256] = "", memo_err[256] = "";
    int rc = bn_apply_unpack (bufs, nbufs, &plain, err, sizeof err);
    ck_assert_int_eq (bn_apply_unpack_with (memo, bufs, nbufs, &memoed,
                                            memo_err, sizeof memo_err),
                      rc);
    ck_assert_str_eq (memo_err, err);
    ck_assert_int_eq (memoed.kind, plain.kind);
    ck_assert_pstr_eq (memoed.module, plain.module);
    ck_assert_pstr_eq (memoed.name, plain.name);
    ck_assert_pstr_eq (memoed.description, plain.description);
    ck_assert (rc ? !memoed.f : bn_value_equal (memoed.f, plain.f));
    ck_assert (rc ? !memoed.args : bn_value_equal (memoed.args, plain.args));
    ck_assert (rc ? !memoed.kwargs
                  : bn_value_equal (memoed.kwargs, plain.kwargs));
    bn_apply_clear (&plain);
    bn_apply_clear (&memoed);
    return rc;
}

//  A request calling fname (args: n ints from first, and flag=first when
//  flag).
static zmsg_t *
s_request (const char *fname, int n, int first, bool flag)
{
    bn_value_t *args = bn_value_new_list ();
    for (int i = 0; i < n; i++)
        bn_value_append (args, bn_value_new_int (first + i));
    bn_value_t *kwargs = bn_value_new_dict ();
    if (flag)
        bn_value_dict_set_str (kwargs, "flag", bn_value_new_int (first));
    zmsg_t *request =
        strchr (fname, '.')
            ? bn_apply_pack_global ("builtins", "sum", args, kwargs)
            : bn_apply_pack_reference (fname, args, kwargs);
    ck_assert_ptr_nonnull (request);
    bn_value_destroy (&args);
    bn_value_destroy (&kwargs);
    return request;
}

START_TEST (test_apply_memo)
{
    //  An engine's run of requests, each unpacked through the memo the
    //  previous ones left: the same function with other arguments, another
    //  function whose name is as long, another shape of arguments, a
    //  global, broken requests between good ones.
    bn_apply_memo_t *memo = bn_apply_memo_new ();
    ck_assert_ptr_nonnull (memo);
    struct {
        const char *fname;
        int n, first;
        bool flag;
        size_t drop; //  buffers left off the end
        int rc;
    } runs[] = {
        {"echo", 2, 1, true, 0, 0},
        {"echo", 2, 7, true, 0, 0},
        {"echo", 2, 9, true, 0, 0},
        {"ecko", 2, 9, true, 0, 0},
        {"ecko", 3, 1, false, 0, 0},
        {"echo", 3, 4, false, 0, 0},
        {"builtins.sum", 1, 5, false, 0, 0},
        {"echo", 2, 1, true, 1, -1}, //  a kwarg's buffer missing
        {"echo", 2, 1, true, 2, -1}, //  and an arg's
        {"echo", 2, 1, true, 0, 0},
        {"echo", 0, 0, false, 0, 0},
        {"echo", 0, 0, false, 0, 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        zmsg_t *request =
            s_request (runs[i].fname, runs[i].n, runs[i].first, runs[i].flag);
        ck_assert_int_eq (s_unpack_both (memo, request, runs[i].drop),
                          runs[i].rc);
        zmsg_destroy (&request);
    }

    //  The info buffer broken after a good request of the same function.
    zmsg_t *request = s_request ("echo", 1, 1, false);
    zframe_t *info = zmsg_next (zmsg_first (request) ? request : NULL);
    ck_assert_ptr_nonnull (info);
    ck_assert_int_eq (s_unpack_both (memo, request, 0), 0);
    memset (zframe_data (info), 'x', zframe_size (info));
    ck_assert_int_eq (s_unpack_both (memo, request, 0), -1);
    zmsg_destroy (&request);
    request = s_request ("echo", 1, 1, false);
    ck_assert_int_eq (s_unpack_both (memo, request, 0), 0);
    zmsg_destroy (&request);

    bn_apply_memo_destroy (&memo);
    ck_assert_ptr_null (memo);
    bn_apply_memo_destroy (&memo);
}
END_TEST

START_TEST (test_apply_memo_lends)
{
    //  f, known to the memo, is lent to each unpack and stays the memo's
    bn_apply_memo_t *memo = bn_apply_memo_new ();
    ck_assert_ptr_nonnull (memo);
    zmsg_t *request = s_request ("echo", 2, 1, true);
    bn_bytes_t bufs[16];
    size_t nbufs = t_zmsg_bytes (request, bufs, 16);
    char err[256] = "";
    bn_apply_t first, second, third;
    ck_assert_int_eq (
        bn_apply_unpack_with (memo, bufs, nbufs, &first, err, sizeof err), 0);
    ck_assert (!first.borrowed);
    bn_apply_clear (&first);
    ck_assert_int_eq (
        bn_apply_unpack_with (memo, bufs, nbufs, &second, err, sizeof err), 0);
    ck_assert (second.borrowed);
    ck_assert_str_eq (second.name, "echo");
    ck_assert_int_eq (bn_value_size (second.args), 2);
    const bn_value_t *lent = second.f;
    bn_apply_clear (&second);
    ck_assert_int_eq (
        bn_apply_unpack_with (memo, bufs, nbufs, &third, err, sizeof err), 0);
    ck_assert (third.borrowed);
    ck_assert_ptr_eq (third.f, lent);
    ck_assert_str_eq (third.name, "echo");
    bn_apply_clear (&third);
    zmsg_destroy (&request);
    bn_apply_memo_destroy (&memo);
}
END_TEST

START_TEST (test_apply_pack)
{
    bn_value_t *args =
        t_list_of (1, t_list_of (3, bn_value_new_int (1), bn_value_new_int (2),
                                 bn_value_new_int (3)));
    zmsg_t *msg = bn_apply_pack_global ("builtins", "sum", args, NULL);
    t_assert_frames (msg, "apply_sum");
    zmsg_destroy (&msg);
    bn_value_destroy (&args);

    msg = bn_apply_pack_reference ("now", NULL, NULL);
    t_assert_frames (msg, "apply_noargs");
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
    bn_value_append (args, t_filled_bytes ('q', 4000));
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
    Suite *suite = suite_create ("bn_apply");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 50);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_fuzz_apply);
    tcase_add_test (tc, test_apply_unpack);
    tcase_add_test (tc, test_apply_pack);
    tcase_add_test (tc, test_apply_memo);
    tcase_add_test (tc, test_apply_memo_lends);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

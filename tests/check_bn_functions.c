/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_functions: the engine's function table (built-ins, push/pull,
    plugins, unknown functions) and its namespace.  */
#include "bn_functions.h"
#include "bn_namespace.h"

#include <check.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_PLUGIN BN_PLUGIN_DIR "/bn_plugin_example.so"

//  args built from a printf-free list of values (taken).
static bn_value_t *
s_args (int count, ...)
{
    bn_value_t *list = bn_value_new_list ();
    va_list ap;
    va_start (ap, count);
    for (int i = 0; i < count; i++)
        ck_assert_int_eq (bn_value_append (list, va_arg (ap, bn_value_t *)), 0);
    va_end (ap);
    return list;
}

//  Call a Reference-style name; returns the call's rc.
static int
s_call (bn_functions_t *functions, const char *name, bn_value_t *args,
        bn_value_t *kwargs, bn_namespace_t *ns, bn_functions_result_t *result)
{
    return bn_functions_call (functions, NULL, name, args, kwargs, ns, 3,
                              "uuid-3", result);
}

START_TEST (test_usage)
{
    bn_functions_t *functions = bn_functions_new ();
    ck_assert_ptr_nonnull (functions);
    bn_namespace_t *ns = bn_namespace_new ();
    bn_functions_result_t result;

    //  echo gives back its argument
    ck_assert_int_eq (s_call (functions, "echo",
                              s_args (1, bn_value_new_int (5)), NULL, ns,
                              &result),
                      0);
    ck_assert_int_eq (bn_value_int (result.value), 5);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_INT);
    bn_value_destroy (&result.value);

    //  an unknown function is refused with a clear error
    ck_assert_int_eq (bn_functions_call (functions, "__main__", "myfunc",
                                         s_args (0), NULL, ns, 0, "u", &result),
                      -1);
    ck_assert_str_eq (result.ename, "NotImplementedError");
    ck_assert_ptr_nonnull (strstr (result.evalue, "__main__.myfunc"));
    ck_assert_ptr_null (result.value);

    bn_namespace_destroy (&ns);
    bn_functions_destroy (&functions);
    ck_assert_ptr_null (functions);
}
END_TEST

START_TEST (test_builtins)
{
    bn_functions_t *functions = bn_functions_new ();
    bn_functions_result_t result;

    //  echo of several args is their tuple; of none, None
    ck_assert_int_eq (s_call (functions, "echo",
                              s_args (2, bn_value_new_str ("a"),
                                      bn_value_new_bytes ("\0b", 2)),
                              NULL, NULL, &result),
                      0);
    char *repr = bn_value_repr (result.value);
    ck_assert_str_eq (repr, "('a', b'\\x00b')");
    free (repr);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "echo", NULL, NULL, NULL, &result), 0);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_NONE);
    bn_value_destroy (&result.value);

    //  noop ignores its arguments
    ck_assert_int_eq (s_call (functions, "noop",
                              s_args (1, bn_value_new_int (1)), NULL, NULL,
                              &result),
                      0);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_NONE);
    bn_value_destroy (&result.value);

    //  sum of a list, of numbers, with a start, of floats
    bn_value_t *list = bn_value_new_list ();
    for (int i = 1; i <= 4; i++)
        bn_value_append (list, bn_value_new_int (i));
    ck_assert_int_eq (
        s_call (functions, "sum", s_args (1, list), NULL, NULL, &result), 0);
    ck_assert_int_eq (bn_value_int (result.value), 10);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (
        s_call (functions, "sum",
                s_args (3, bn_value_new_int (1), bn_value_new_int (2),
                        bn_value_new_bool (true)),
                NULL, NULL, &result),
        0);
    ck_assert_int_eq (bn_value_int (result.value), 4);
    bn_value_destroy (&result.value);
    list = bn_value_new_tuple ();
    bn_value_append (list, bn_value_new_int (1));
    bn_value_append (list, bn_value_new_float (0.5));
    ck_assert_int_eq (
        bn_functions_call (functions, "builtins", "sum",
                           s_args (2, list, bn_value_new_int (10)), NULL, NULL,
                           0, "u", &result),
        0);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_FLOAT);
    ck_assert (bn_value_float (result.value) == 11.5);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (
        s_call (functions, "sum",
                s_args (2, bn_value_new_int (1), bn_value_new_str ("x")), NULL,
                NULL, &result),
        -1);
    ck_assert_str_eq (result.ename, "TypeError");
    ck_assert_str_eq (result.evalue,
                      "unsupported operand type(s) for +: 'int' and 'str'");
    ck_assert_int_eq (
        s_call (functions, "sum",
                s_args (2, bn_value_new_int (INT64_MAX), bn_value_new_int (1)),
                NULL, NULL, &result),
        -1);
    ck_assert_str_eq (result.ename, "OverflowError");

    //  checksum is the SHA-256 hex digest of bytes or str
    ck_assert_int_eq (s_call (functions, "checksum",
                              s_args (1, bn_value_new_bytes ("abc", 3)), NULL,
                              NULL, &result),
                      0);
    ck_assert_str_eq (bn_value_str (result.value),
                      "ba7816bf8f01cfea414140de5dae2223"
                      "b00361a396177a9cb410ff61f20015ad");
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "checksum",
                              s_args (1, bn_value_new_str ("")), NULL, NULL,
                              &result),
                      0);
    ck_assert_str_eq (bn_value_str (result.value),
                      "e3b0c44298fc1c149afbf4c8996fb924"
                      "27ae41e4649b934ca495991b7852b855");
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "checksum",
                              s_args (1, bn_value_new_int (3)), NULL, NULL,
                              &result),
                      -1);
    ck_assert_str_eq (result.ename, "TypeError");

    //  crc32 is zlib.crc32: zlib.crc32(b"abc") == 891568578, and
    //  zlib.crc32(b"c", zlib.crc32(b"ab")) the same
    ck_assert_int_eq (s_call (functions, "zlib.crc32",
                              s_args (1, bn_value_new_bytes ("abc", 3)), NULL,
                              NULL, &result),
                      0);
    ck_assert_int_eq (bn_value_int (result.value), 891568578);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "crc32",
                              s_args (1, bn_value_new_bytes ("ab", 2)), NULL,
                              NULL, &result),
                      0);
    int64_t ab = bn_value_int (result.value);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (
        s_call (functions, "crc32",
                s_args (2, bn_value_new_str ("c"), bn_value_new_int (ab)), NULL,
                NULL, &result),
        0);
    ck_assert_int_eq (bn_value_int (result.value), 891568578);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (
        s_call (functions, "crc32",
                s_args (2, bn_value_new_bytes ("c", 1), bn_value_new_str ("x")),
                NULL, NULL, &result),
        -1);
    ck_assert_str_eq (result.ename, "TypeError");

    //  len counts code points of a str
    ck_assert_int_eq (
        bn_functions_call (functions, "builtins", "len",
                           s_args (1, bn_value_new_str ("h\xC3\xA9")), NULL,
                           NULL, 0, "u", &result),
        0);
    ck_assert_int_eq (bn_value_int (result.value), 2);
    bn_value_destroy (&result.value);

    //  sleep defers its None result instead of blocking
    int64_t start = zclock_mono ();
    ck_assert_int_eq (bn_functions_call (functions, "time", "sleep",
                                         s_args (1, bn_value_new_float (2.5)),
                                         NULL, NULL, 0, "u", &result),
                      0);
    ck_assert_int_lt (zclock_mono () - start, 100);
    ck_assert (result.defer == 2.5);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_NONE);
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "sleep",
                              s_args (1, bn_value_new_int (-1)), NULL, NULL,
                              &result),
                      -1);
    ck_assert_str_eq (result.ename, "ValueError");
    ck_assert (result.defer == 0);

    //  getpid, hostname
    ck_assert_int_eq (bn_functions_call (functions, "posix", "getpid", NULL,
                                         NULL, NULL, 0, "u", &result),
                      0);
    ck_assert_int_eq (bn_value_int (result.value), getpid ());
    bn_value_destroy (&result.value);
    ck_assert_int_eq (s_call (functions, "hostname", NULL, NULL, NULL, &result),
                      0);
    ck_assert_ptr_nonnull (bn_value_str (result.value));
    bn_value_destroy (&result.value);
    bn_functions_destroy (&functions);
}
END_TEST

START_TEST (test_resolution)
{
    bn_functions_t *functions = bn_functions_new ();
    char found[64];
    //  module.name first, then the bare name for __main__ and builtins
    ck_assert_ptr_nonnull (bn_functions_resolve (functions, "builtins", "sum",
                                                 found, sizeof found));
    ck_assert_str_eq (found, "builtins.sum");
    ck_assert_ptr_nonnull (bn_functions_resolve (functions, "__main__", "echo",
                                                 found, sizeof found));
    ck_assert_str_eq (found, "echo");
    ck_assert_ptr_null (
        bn_functions_resolve (functions, "os.path", "echo", NULL, 0));
    ck_assert_ptr_null (
        bn_functions_resolve (functions, NULL, "nothing", NULL, 0));
    ck_assert_ptr_null (bn_functions_resolve (functions, NULL, "", NULL, 0));
    ck_assert_ptr_nonnull (
        bn_functions_resolve (functions, "ipyparallel.util", "_push", NULL, 0));
    //  a function added later replaces a built-in of the same name
    ck_assert_int_eq (
        bn_functions_add (functions, "echo",
                          bn_functions_lookup (functions, "noop")),
        0);
    ck_assert (bn_functions_lookup (functions, "echo") ==
               bn_functions_lookup (functions, "noop"));
    ck_assert_uint_gt (bn_functions_size (functions), 10);
    bn_functions_destroy (&functions);
}
END_TEST

START_TEST (test_push_pull)
{
    bn_functions_t *functions = bn_functions_new ();
    bn_namespace_t *ns = bn_namespace_new ();
    bn_functions_result_t result;

    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "a", bn_value_new_int (1));
    bn_value_dict_set_str (kwargs, "b", bn_value_new_str ("two"));
    ck_assert_int_eq (bn_functions_call (functions, "ipyparallel.util", "_push",
                                         NULL, kwargs, ns, 0, "u", &result),
                      0);
    ck_assert_int_eq (bn_value_type (result.value), BN_VALUE_NONE);
    bn_value_destroy (&result.value);
    ck_assert_uint_eq (bn_namespace_size (ns), 2);

    //  one name gives its value, a list of names a list
    ck_assert_int_eq (bn_functions_call (functions, "ipyparallel.util", "_pull",
                                         s_args (1, bn_value_new_str ("b")),
                                         NULL, ns, 0, "u", &result),
                      0);
    ck_assert_str_eq (bn_value_str (result.value), "two");
    bn_value_destroy (&result.value);
    bn_value_t *names = bn_value_new_list ();
    bn_value_append (names, bn_value_new_str ("a"));
    bn_value_append (names, bn_value_new_str ("b"));
    ck_assert_int_eq (bn_functions_call (functions, "ipyparallel.util", "_pull",
                                         s_args (1, names), NULL, ns, 0, "u",
                                         &result),
                      0);
    char *repr = bn_value_repr (result.value);
    ck_assert_str_eq (repr, "[1, 'two']");
    free (repr);
    bn_value_destroy (&result.value);

    //  a missing name is a NameError, as in Python
    ck_assert_int_eq (bn_functions_call (functions, "ipyparallel.util", "_pull",
                                         s_args (1, bn_value_new_str ("zz")),
                                         NULL, ns, 0, "u", &result),
                      -1);
    ck_assert_str_eq (result.ename, "NameError");
    ck_assert_str_eq (result.evalue, "name 'zz' is not defined");

    //  a Reference argument is read from the namespace
    bn_value_t *state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "name", bn_value_new_str ("a"));
    bn_value_dict_set_str (state, "buffers", bn_value_new_list ());
    bn_value_t *reference = bn_value_new_object (
        bn_value_new_global ("ipyparallel.serialize.canning", "Reference"),
        NULL, state);
    ck_assert_int_eq (
        s_call (functions, "echo", s_args (1, reference), NULL, ns, &result),
        0);
    ck_assert_int_eq (bn_value_int (result.value), 1);
    bn_value_destroy (&result.value);
    state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "name", bn_value_new_str ("nope"));
    reference = bn_value_new_object (
        bn_value_new_global ("ipyparallel.serialize.canning", "Reference"),
        NULL, state);
    ck_assert_int_eq (
        s_call (functions, "echo", s_args (1, reference), NULL, ns, &result),
        -1);
    ck_assert_str_eq (result.ename, "NameError");

    bn_namespace_destroy (&ns);
    bn_functions_destroy (&functions);
}
END_TEST

START_TEST (test_namespace)
{
    bn_namespace_t *ns = bn_namespace_new ();
    ck_assert_ptr_nonnull (ns);
    ck_assert_ptr_null (bn_namespace_get (ns, "x"));
    ck_assert_int_eq (bn_namespace_set (ns, "x", bn_value_new_int (1)), 0);
    ck_assert_int_eq (bn_namespace_set (ns, "x", bn_value_new_int (2)), 0);
    ck_assert_int_eq (bn_value_int (bn_namespace_get (ns, "x")), 2);
    ck_assert_uint_eq (bn_namespace_size (ns), 1);
    ck_assert_int_eq (bn_namespace_set (ns, "y", bn_value_new_list ()), 0);
    ck_assert_int_eq (bn_namespace_remove (ns, "y"), 0);
    ck_assert_int_eq (bn_namespace_remove (ns, "y"), -1);
    bn_namespace_set (ns, "z", bn_value_new_none ());
    bn_namespace_clear (ns);
    ck_assert_uint_eq (bn_namespace_size (ns), 0);
    ck_assert_ptr_null (bn_namespace_get (ns, "x"));
    bn_namespace_destroy (&ns);
    ck_assert_ptr_null (ns);
    bn_namespace_destroy (&ns);
}
END_TEST

START_TEST (test_plugin)
{
    bn_functions_t *functions = bn_functions_new ();
    bn_namespace_t *ns = bn_namespace_new ();
    bn_functions_result_t result;
    ck_assert_int_eq (bn_functions_load (functions, S_PLUGIN), 0);
    ck_assert_str_eq (bn_functions_error (functions), "");

    ck_assert_int_eq (s_call (functions, "double",
                              s_args (1, bn_value_new_int (21)), NULL, ns,
                              &result),
                      0);
    ck_assert_int_eq (bn_value_int (result.value), 42);
    bn_value_destroy (&result.value);

    bn_value_t *kwargs = bn_value_new_dict ();
    bn_value_dict_set_str (kwargs, "name", bn_value_new_str ("ann"));
    ck_assert_int_eq (s_call (functions, "greet", NULL, kwargs, ns, &result),
                      0);
    ck_assert_str_eq (bn_value_str (result.value), "hello ann from engine 3");
    bn_value_destroy (&result.value);

    //  plugins read and write the namespace
    bn_value_t *list = bn_value_new_list ();
    bn_value_append (list, bn_value_new_int (1));
    bn_value_append (list, bn_value_new_float (2.5));
    bn_namespace_set (ns, "data", list);
    ck_assert_int_eq (s_call (functions, "total",
                              s_args (1, bn_value_new_str ("data")), NULL, ns,
                              &result),
                      0);
    ck_assert (bn_value_float (result.value) == 3.5);
    bn_value_destroy (&result.value);
    ck_assert (bn_value_float (bn_namespace_get (ns, "last_total")) == 3.5);
    ck_assert_int_eq (s_call (functions, "total",
                              s_args (1, bn_value_new_str ("none")), NULL, ns,
                              &result),
                      -1);
    ck_assert_str_eq (result.ename, "NameError");

    //  and may defer their result
    ck_assert_int_eq (
        s_call (functions, "later",
                s_args (2, bn_value_new_str ("x"), bn_value_new_float (0.25)),
                NULL, ns, &result),
        0);
    ck_assert (result.defer == 0.25);
    ck_assert_str_eq (bn_value_str (result.value), "x");
    bn_value_destroy (&result.value);

    //  errors from a plugin function come back as its exception
    ck_assert_int_eq (s_call (functions, "double",
                              s_args (1, bn_value_new_str ("x")), NULL, ns,
                              &result),
                      -1);
    ck_assert_str_eq (result.ename, "TypeError");

    bn_namespace_destroy (&ns);
    bn_functions_destroy (&functions);
}
END_TEST

START_TEST (test_bad_plugins)
{
    bn_functions_t *functions = bn_functions_new ();
    ck_assert_int_eq (bn_functions_load (functions, "/no/such/plugin.so"), -1);
    ck_assert_ptr_nonnull (
        strstr (bn_functions_error (functions), "cannot load"));
    //  a shared object without the table
    ck_assert_int_eq (bn_functions_load (functions, "libc.so.6"), -1);
    ck_assert_ptr_nonnull (
        strstr (bn_functions_error (functions), "exports no 'bn_plugin'"));
    ck_assert_int_eq (
        bn_functions_load_list (functions, S_PLUGIN "::/no/such.so"), -1);
    //  the good plugin before the bad one was loaded
    ck_assert_ptr_nonnull (bn_functions_lookup (functions, "double"));
    bn_functions_destroy (&functions);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_functions");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_builtins);
    tcase_add_test (tc, test_resolution);
    tcase_add_test (tc, test_push_pull);
    tcase_add_test (tc, test_namespace);
    tcase_add_test (tc, test_plugin);
    tcase_add_test (tc, test_bad_plugins);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_value: the value tree, its lookups and Python's repr.  */
#include "bn_value.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Assert the repr of a value and destroy it.
static void
s_assert_repr (bn_value_t *value, const char *expected)
{
    ck_assert_ptr_nonnull (value);
    char *repr = bn_value_repr (value);
    ck_assert_ptr_nonnull (repr);
    ck_assert_str_eq (repr, expected);
    free (repr);
    bn_value_destroy (&value);
}

START_TEST (test_usage)
{
    //  Build what a C engine returns, read it back, print it as Python.
    bn_value_t *result = bn_value_new_list ();
    ck_assert_int_eq (bn_value_append (result, bn_value_new_int (1)), 0);
    ck_assert_int_eq (bn_value_append (result, bn_value_new_str ("hi")), 0);
    ck_assert_int_eq (bn_value_append (result, bn_value_new_bytes ("\0", 1)),
                      0);
    ck_assert_int_eq (bn_value_append (result, bn_value_new_none ()), 0);
    ck_assert_int_eq (bn_value_append (result, bn_value_new_bool (true)), 0);
    ck_assert_int_eq (bn_value_append (result, bn_value_new_float (3.5)), 0);
    bn_value_t *dict = bn_value_new_dict ();
    ck_assert_int_eq (bn_value_dict_set_str (dict, "a", bn_value_new_int (1)),
                      0);
    ck_assert_int_eq (bn_value_append (result, dict), 0);

    ck_assert_int_eq (bn_value_type (result), BN_VALUE_LIST);
    ck_assert_uint_eq (bn_value_size (result), 7);
    ck_assert_int_eq (bn_value_int (bn_value_item (result, 0)), 1);
    ck_assert_str_eq (bn_value_str (bn_value_item (result, 1)), "hi");
    ck_assert_int_eq (
        bn_value_int (bn_value_dict_get (bn_value_item (result, 6), "a")), 1);
    ck_assert_ptr_null (bn_value_item (result, 7));

    char *repr = bn_value_repr (result);
    ck_assert_str_eq (repr, "[1, 'hi', b'\\x00', None, True, 3.5, {'a': 1}]");
    free (repr);

    bn_value_t *copy = bn_value_dup (result);
    ck_assert (bn_value_equal (copy, result));
    bn_value_destroy (&copy);
    bn_value_destroy (&result);
    ck_assert_ptr_null (result);
    bn_value_destroy (&result);
}
END_TEST

START_TEST (test_scalars)
{
    bn_value_t *value = bn_value_new_int (INT64_MIN);
    ck_assert_int_eq (bn_value_int (value), INT64_MIN);
    ck_assert_str_eq (bn_value_type_name (value), "int");
    ck_assert_ptr_null (bn_value_str (value));
    ck_assert_double_eq (bn_value_float (value), (double)INT64_MIN);
    s_assert_repr (value, "-9223372036854775808");

    value = bn_value_new_bool (false);
    ck_assert_str_eq (bn_value_type_name (value), "bool");
    ck_assert_int_eq (bn_value_int (value), 0);
    ck_assert (!bn_value_bool (value));
    s_assert_repr (value, "False");

    value = bn_value_new_none ();
    ck_assert_str_eq (bn_value_type_name (value), "NoneType");
    s_assert_repr (value, "None");

    value = bn_value_new_strn ("a\0b", 3);
    ck_assert_uint_eq (bn_value_str_size (value), 3);
    ck_assert_int_eq (memcmp (bn_value_str (value), "a\0b", 4), 0);
    ck_assert_ptr_null (bn_value_bytes_data (value));
    s_assert_repr (value, "'a\\x00b'");

    value = bn_value_new_bytes (NULL, 0);
    ck_assert_uint_eq (bn_value_bytes_size (value), 0);
    ck_assert_str_eq (bn_value_type_name (value), "bytes");
    s_assert_repr (value, "b''");

    value = bn_value_new_global ("builtins", "sum");
    ck_assert_str_eq (bn_value_global_module (value), "builtins");
    ck_assert_str_eq (bn_value_global_name (value), "sum");
    ck_assert_str_eq (bn_value_type_name (value), "global");
    s_assert_repr (value, "<global builtins.sum>");
}
END_TEST

//  Python 3.11's repr of each double (checked against the interpreter).
START_TEST (test_float_repr)
{
    struct {
        double value;
        const char *repr;
    } cases[] = {{0.1, "0.1"},
                 {3.0, "3.0"},
                 {1e20, "1e+20"},
                 {1e16, "1e+16"},
                 {1e15, "1000000000000000.0"},
                 {123456789012345678.0, "1.2345678901234568e+17"},
                 {0.0001, "0.0001"},
                 {0.00001, "1e-05"},
                 {1.5e-10, "1.5e-10"},
                 {-0.0, "-0.0"},
                 {0.0, "0.0"},
                 {-2.5, "-2.5"},
                 {5e-324, "5e-324"},
                 {1.7976931348623157e308, "1.7976931348623157e+308"},
                 {1.0 / 3, "0.3333333333333333"},
                 {2.0 / 3, "0.6666666666666666"},
                 {100.0, "100.0"},
                 {1e100, "1e+100"},
                 {12345.678, "12345.678"},
                 {INFINITY, "inf"},
                 {-INFINITY, "-inf"},
                 {NAN, "nan"}};
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
        s_assert_repr (bn_value_new_float (cases[i].value), cases[i].repr);
}
END_TEST

START_TEST (test_str_repr)
{
    s_assert_repr (bn_value_new_str ("it's"), "\"it's\"");
    s_assert_repr (bn_value_new_str ("say \"hi\""), "'say \"hi\"'");
    s_assert_repr (bn_value_new_str ("it's \"x\""), "'it\\'s \"x\"'");
    s_assert_repr (bn_value_new_str ("tab\tnl\nret\rbs\\del\x7f"),
                   "'tab\\tnl\\nret\\rbs\\\\del\\x7f'");
    //  Printable non-ASCII stays; the rest is escaped by size.
    s_assert_repr (bn_value_new_str ("h\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
                   "'h\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80'");
    s_assert_repr (bn_value_new_str ("\xc2\x80\xc2\xa0\xc2\xad"),
                   "'\\x80\\xa0\\xad'");
    s_assert_repr (bn_value_new_str ("\xe2\x80\xa8\xef\xbb\xbf"),
                   "'\\u2028\\ufeff'");
    s_assert_repr (bn_value_new_str ("\xf3\xa0\x80\x81"), "'\\U000e0001'");
    //  A lone surrogate, as pickle's surrogatepass writes it.
    s_assert_repr (bn_value_new_str ("\xed\xa0\x80x"), "'\\ud800x'");
    //  Not UTF-8 at all (only C code makes these): bytes shown raw.
    s_assert_repr (bn_value_new_str ("\xff"), "'\\xff'");

    s_assert_repr (bn_value_new_bytes ("it's", 4), "b\"it's\"");
    s_assert_repr (bn_value_new_bytes ("\x00\x7f\x80\xff'\"\\\t", 8),
                   "b'\\x00\\x7f\\x80\\xff\\'\"\\\\\\t'");
}
END_TEST

START_TEST (test_containers)
{
    bn_value_t *tuple = bn_value_new_tuple ();
    ck_assert_str_eq (bn_value_type_name (tuple), "tuple");
    s_assert_repr (bn_value_dup (tuple), "()");
    bn_value_append (tuple, bn_value_new_int (1));
    s_assert_repr (bn_value_dup (tuple), "(1,)");
    bn_value_append (tuple, bn_value_new_str ("x"));
    s_assert_repr (tuple, "(1, 'x')");

    bn_value_t *set = bn_value_new_set ();
    s_assert_repr (bn_value_dup (set), "set()");
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq (bn_value_append (set, bn_value_new_int (2)), 0);
        ck_assert_int_eq (bn_value_append (set, bn_value_new_int (1)), 0);
    }
    ck_assert_uint_eq (bn_value_size (set), 2);
    bn_value_t *one = bn_value_new_int (1);
    ck_assert (bn_value_set_contains (set, one));
    bn_value_destroy (&one);
    s_assert_repr (set, "{2, 1}");

    //  A NULL from a failed constructor makes the call fail cleanly.
    bn_value_t *list = bn_value_new_list ();
    ck_assert_int_eq (bn_value_append (list, NULL), -1);
    bn_value_t *dict = bn_value_new_dict ();
    ck_assert_int_eq (bn_value_dict_set (dict, NULL, bn_value_new_int (1)), -1);
    ck_assert_uint_eq (bn_value_size (list), 0);
    ck_assert_uint_eq (bn_value_size (dict), 0);
    bn_value_destroy (&list);
    bn_value_destroy (&dict);
}
END_TEST

START_TEST (test_dict)
{
    bn_value_t *dict = bn_value_new_dict ();
    ck_assert_int_eq (bn_value_dict_set_str (dict, "b", bn_value_new_int (1)),
                      0);
    ck_assert_int_eq (bn_value_dict_set_str (dict, "a", bn_value_new_int (2)),
                      0);
    //  Replacing keeps the key's place, as Python does.
    ck_assert_int_eq (bn_value_dict_set_str (dict, "b", bn_value_new_int (3)),
                      0);
    ck_assert_uint_eq (bn_value_size (dict), 2);
    ck_assert_str_eq (bn_value_str (bn_value_dict_key (dict, 0)), "b");
    ck_assert_int_eq (bn_value_int (bn_value_dict_value (dict, 0)), 3);
    ck_assert_ptr_null (bn_value_dict_get (dict, "c"));
    ck_assert_ptr_null (bn_value_dict_key (dict, 2));
    //  Keys of other types; 1 and True stay distinct here.
    bn_value_dict_set (dict, bn_value_new_int (1), bn_value_new_str ("int"));
    bn_value_dict_set (dict, bn_value_new_bool (true),
                       bn_value_new_str ("bool"));
    bn_value_t *key = bn_value_new_tuple ();
    bn_value_append (key, bn_value_new_float (0.5));
    bn_value_dict_set (dict, bn_value_dup (key), bn_value_new_none ());
    ck_assert_int_eq (bn_value_type (bn_value_dict_lookup (dict, key)),
                      BN_VALUE_NONE);
    bn_value_destroy (&key);
    s_assert_repr (dict, "{'b': 3, 'a': 2, 1: 'int', True: 'bool', "
                         "(0.5,): None}");

    //  Big dicts are indexed: 20000 keys, each found, replaced in place.
    dict = bn_value_new_dict ();
    char name[32];
    for (int i = 0; i < 20000; i++) {
        snprintf (name, sizeof (name), "key%d", i);
        ck_assert_int_eq (
            bn_value_dict_set_str (dict, name, bn_value_new_int (i)), 0);
    }
    for (int i = 0; i < 20000; i += 7) {
        snprintf (name, sizeof (name), "key%d", i);
        ck_assert_int_eq (
            bn_value_dict_set_str (dict, name, bn_value_new_int (-i)), 0);
    }
    ck_assert_uint_eq (bn_value_size (dict), 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf (name, sizeof (name), "key%d", i);
        bn_value_t *value = bn_value_dict_get (dict, name);
        ck_assert_ptr_nonnull (value);
        ck_assert_int_eq (bn_value_int (value), i % 7 ? i : -i);
    }
    ck_assert_ptr_null (bn_value_dict_get (dict, "key20000"));
    bn_value_t *copy = bn_value_dup (dict);
    ck_assert (bn_value_equal (dict, copy));
    ck_assert_int_eq (bn_value_int (bn_value_dict_get (copy, "key14")), -14);
    bn_value_destroy (&copy);
    bn_value_destroy (&dict);
}
END_TEST

START_TEST (test_equal)
{
    bn_value_t *a = bn_value_new_dict ();
    bn_value_t *b = bn_value_new_dict ();
    for (int i = 0; i < 12; i++) {
        bn_value_dict_set (a, bn_value_new_int (i), bn_value_new_float (i));
        bn_value_dict_set (b, bn_value_new_int (11 - i),
                           bn_value_new_float (11 - i));
    }
    //  Dicts and sets compare regardless of order.
    ck_assert (bn_value_equal (a, b));
    bn_value_dict_set (b, bn_value_new_int (3), bn_value_new_float (NAN));
    ck_assert (!bn_value_equal (a, b));
    bn_value_dict_set (a, bn_value_new_int (3), bn_value_new_float (NAN));
    ck_assert (bn_value_equal (a, b));
    bn_value_destroy (&a);
    bn_value_destroy (&b);

    bn_value_t *one = bn_value_new_int (1);
    bn_value_t *yes = bn_value_new_bool (true);
    bn_value_t *fone = bn_value_new_float (1.0);
    ck_assert (!bn_value_equal (one, yes));
    ck_assert (!bn_value_equal (one, fone));
    ck_assert (bn_value_equal (NULL, NULL));
    ck_assert (!bn_value_equal (one, NULL));
    bn_value_t *zero = bn_value_new_float (0.0);
    bn_value_t *minus_zero = bn_value_new_float (-0.0);
    ck_assert (bn_value_equal (zero, minus_zero));
    bn_value_destroy (&zero);
    bn_value_destroy (&minus_zero);
    bn_value_destroy (&one);
    bn_value_destroy (&yes);
    bn_value_destroy (&fone);

    bn_value_t *s1 = bn_value_new_set ();
    bn_value_t *s2 = bn_value_new_set ();
    for (int i = 0; i < 30; i++) {
        bn_value_append (s1, bn_value_new_str (i % 2 ? "odd" : "even"));
        bn_value_append (s1, bn_value_new_int (i));
        bn_value_append (s2, bn_value_new_int (29 - i));
    }
    bn_value_append (s2, bn_value_new_str ("odd"));
    ck_assert (!bn_value_equal (s1, s2));
    bn_value_append (s2, bn_value_new_str ("even"));
    ck_assert (bn_value_equal (s1, s2));
    ck_assert_uint_eq (bn_value_size (s1), 32);
    bn_value_destroy (&s1);
    bn_value_destroy (&s2);
}
END_TEST

START_TEST (test_object)
{
    bn_value_t *state = bn_value_new_dict ();
    bn_value_dict_set_str (state, "name", bn_value_new_str ("echo"));
    bn_value_dict_set_str (state, "buffers", bn_value_new_list ());
    bn_value_t *object = bn_value_new_object (
        bn_value_new_global ("ipyparallel.serialize.canning", "Reference"),
        NULL, state);
    ck_assert_ptr_nonnull (object);
    ck_assert (bn_value_object_is (object, "ipyparallel.serialize.canning",
                                   "Reference"));
    ck_assert (!bn_value_object_is (object, "ipyparallel.serialize.canning",
                                    "CannedBytes"));
    ck_assert (!bn_value_object_is_reduce (object));
    ck_assert_str_eq (bn_value_type_name (object), "Reference");
    ck_assert_ptr_null (bn_value_object_args (object));
    ck_assert_str_eq (bn_value_str (bn_value_dict_get (
                          bn_value_object_state (object), "name")),
                      "echo");
    bn_value_t *copy = bn_value_dup (object);
    ck_assert (bn_value_equal (copy, object));
    bn_value_t *old = bn_value_object_swap_state (copy, bn_value_new_none ());
    ck_assert (bn_value_equal (old, state));
    bn_value_destroy (&old);
    ck_assert (!bn_value_equal (copy, object));
    bn_value_destroy (&copy);
    s_assert_repr (object, "<ipyparallel.serialize.canning.Reference object>");

    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str ("1.5"));
    object =
        bn_value_new_reduce (bn_value_new_global ("decimal", "Decimal"), args);
    ck_assert (bn_value_object_is_reduce (object));
    ck_assert_uint_eq (bn_value_size (bn_value_object_args (object)), 1);
    bn_value_destroy (&object);
}
END_TEST

START_TEST (test_swap_and_spill)
{
    bn_value_t *spill = bn_value_new_list ();
    bn_value_t *dict = bn_value_new_dict ();
    bn_value_t *key = bn_value_new_str ("k");
    bn_value_t *first = bn_value_new_int (1);
    ck_assert_int_eq (bn_value_dict_set_spill (dict, key, first, spill), 0);
    //  Replacing spills the old value and the surplus key, still valid.
    ck_assert_int_eq (bn_value_dict_set_spill (dict, bn_value_new_str ("k"),
                                               bn_value_new_int (2), spill),
                      0);
    ck_assert_uint_eq (bn_value_size (spill), 2);
    ck_assert_ptr_eq (bn_value_item (spill, 0), first);
    ck_assert_ptr_eq (bn_value_dict_key (dict, 0), key);
    bn_value_t *old = bn_value_dict_swap_value (dict, 0, bn_value_new_none ());
    ck_assert_int_eq (bn_value_int (old), 2);
    bn_value_destroy (&old);

    bn_value_t *set = bn_value_new_set ();
    for (int i = 0; i < 20; i++)
        bn_value_append_spill (set, bn_value_new_int (i % 10), spill);
    ck_assert_uint_eq (bn_value_size (set), 10);
    ck_assert_uint_eq (bn_value_size (spill), 12);
    //  Swapping in a set keeps lookups right.
    old = bn_value_swap_item (set, 3, bn_value_new_str ("three"));
    ck_assert_int_eq (bn_value_int (old), 3);
    bn_value_destroy (&old);
    bn_value_t *probe = bn_value_new_str ("three");
    ck_assert (bn_value_set_contains (set, probe));
    bn_value_destroy (&probe);
    probe = bn_value_new_int (3);
    ck_assert (!bn_value_set_contains (set, probe));
    bn_value_destroy (&probe);

    bn_value_destroy (&set);
    bn_value_destroy (&dict);
    bn_value_destroy (&spill);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_value");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_scalars);
    tcase_add_test (tc, test_float_repr);
    tcase_add_test (tc, test_str_repr);
    tcase_add_test (tc, test_containers);
    tcase_add_test (tc, test_dict);
    tcase_add_test (tc, test_equal);
    tcase_add_test (tc, test_object);
    tcase_add_test (tc, test_swap_and_spill);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

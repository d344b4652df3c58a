/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_rawtext: any bytes as UTF-8 text for banyan's readers, back
    again, and with U+FFFD for everyone else.  */
#include "bn_rawtext.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

START_TEST (test_usage)
{
    //  Latin-1 bytes, a NUL, and a UTF-8 character that stays
    const char raw[] = "caf\xe9 \xff\xfe a\0b caf\xc3\xa9\n";
    size_t size = sizeof raw - 1;
    ck_assert (!bn_rawtext_plain (raw, size));
    size_t len;
    char *text = bn_rawtext_encode (raw, size, &len);
    ck_assert_ptr_nonnull (text);
    //  JSON (jansson, so the hub, nodes and client) takes it
    json_t *string = json_stringn (text, len);
    ck_assert_ptr_nonnull (string);
    char *dumped = json_dumps (string, JSON_ENCODE_ANY);
    json_t *loaded = json_loads (dumped, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull (loaded);
    ck_assert_str_eq (json_string_value (loaded), text);
    //  and it gives the bytes back
    size_t back = bn_rawtext_decode (text, len);
    ck_assert_uint_eq (back, size);
    ck_assert (memcmp (text, raw, size) == 0);
    free (text);
    free (dumped);
    json_decref (string);
    json_decref (loaded);

    //  everyone else reads U+FFFD for what is not text
    char *replaced = bn_rawtext_replace (raw, size, &len);
    ck_assert_str_eq (replaced, "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
                                "a\xef\xbf\xbd"
                                "b caf\xc3\xa9\n");
    free (replaced);
}
END_TEST

START_TEST (test_plain)
{
    //  UTF-8 text is its own encoding, and decodes to itself
    const char *plain = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n";
    ck_assert (bn_rawtext_plain (plain, strlen (plain)));
    size_t len;
    char *text = bn_rawtext_encode (plain, strlen (plain), &len);
    ck_assert_str_eq (text, plain);
    ck_assert_uint_eq (bn_rawtext_decode (text, len), strlen (plain));
    ck_assert_str_eq (text, plain);
    free (text);
    ck_assert (bn_rawtext_plain ("", 0));
}
END_TEST

START_TEST (test_escapes_stay_apart)
{
    //  a real U+10FF41 (what an escape looks like), an escape-looking
    //  sequence cut short, surrogates and overlong forms: all come back
    const char raw[] = "\xf4\x8f\xbd\x81|\xf4\x8f\xbd|\xed\xa0\x80|\xc0\xaf|"
                       "\xf4\x90\x80\x80|\x80";
    size_t size = sizeof raw - 1;
    ck_assert (!bn_rawtext_plain (raw, size));
    size_t len;
    char *text = bn_rawtext_encode (raw, size, &len);
    ck_assert_ptr_nonnull (text);
    json_t *string = json_stringn (text, len);
    ck_assert_ptr_nonnull (string);
    json_decref (string);
    ck_assert_uint_eq (bn_rawtext_decode (text, len), size);
    ck_assert (memcmp (text, raw, size) == 0);
    free (text);
    //  every byte value
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    text = bn_rawtext_encode (all, sizeof all, &len);
    ck_assert_uint_eq (bn_rawtext_decode (text, len), sizeof all);
    ck_assert (memcmp (text, all, sizeof all) == 0);
    free (text);
}
END_TEST

START_TEST (test_char)
{
    ck_assert_int_eq (bn_rawtext_char ("a", 1), 1);
    ck_assert_int_eq (bn_rawtext_char ("\xc3\xa9", 2), 2);
    ck_assert_int_eq (bn_rawtext_char ("\xe2\x82", 2), 0);
    ck_assert_int_eq (bn_rawtext_char ("\xff", 1), -1);
    ck_assert_int_eq (bn_rawtext_char ("\xed\xa0\x80", 3), -1);
}
END_TEST

//  Decode text (size bytes) from a buffer of exactly size + 1 bytes, as a
//  reader holds a string a peer sent; check what comes back.
static void
s_decode (const char *text, size_t size, const char *bytes, size_t expected)
{
    char *buffer = malloc (size + 1);
    ck_assert_ptr_nonnull (buffer);
    memcpy (buffer, text, size);
    ck_assert_uint_eq (bn_rawtext_decode (buffer, size), expected);
    ck_assert (memcmp (buffer, bytes, expected) == 0);
    ck_assert_int_eq (buffer[expected], 0);
    free (buffer);
}

START_TEST (test_decode_not_encoded)
{
    //  text a peer wrote that bn_rawtext_encode did not: escapes cut short
    //  at the end, lead bytes without their escape's continuation, and
    //  characters just outside the escapes stay as they are
    s_decode ("\xf4", 1, "\xf4", 1);
    s_decode ("a\xf4\x8f", 3, "a\xf4\x8f", 3);
    s_decode ("\xf4\x8f\xbf", 3, "\xf4\x8f\xbf", 3);
    s_decode ("\xf4\x8f\xbf\x7f", 4, "\xf4\x8f\xbf\x7f", 4);
    s_decode ("\xf4\x8f\xbb\xbf", 4, "\xf4\x8f\xbb\xbf", 4);
    s_decode ("\xf4\x90\xbf\xbf", 4, "\xf4\x90\xbf\xbf", 4);
    //  an escape among them still decodes, and nothing after it is lost
    s_decode ("\xf4\xf4\x8f\xbf\xbf\xf4", 6, "\xf4\xff\xf4", 3);
    s_decode ("", 0, "", 0);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_rawtext");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_plain);
    tcase_add_test (tc, test_escapes_stay_apart);
    tcase_add_test (tc, test_char);
    tcase_add_test (tc, test_decode_not_encoded);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

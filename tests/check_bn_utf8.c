/*  check_bn_utf8: UTF-8 as pickles carry str: surrogates pass, overlong
    and out-of-range sequences do not.  */
#include "bn_utf8.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

START_TEST (test_usage)
{
    const unsigned char text[] = "h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    size_t size = sizeof text - 1;
    ck_assert (bn_utf8_valid (text, size));
    uint32_t codes[4];
    size_t n = 0;
    for (size_t i = 0, length; i < size; i += length) {
        length = bn_utf8_decode (text + i, size - i, &codes[n++]);
        ck_assert_uint_gt (length, 0);
    }
    ck_assert_uint_eq (n, 4);
    ck_assert_uint_eq (codes[0], 'h');
    ck_assert_uint_eq (codes[1], 0xe9);
    ck_assert_uint_eq (codes[2], 0x20ac);
    ck_assert_uint_eq (codes[3], 0x1f600);
    //  and written back the same
    unsigned char out[16];
    size_t written = 0;
    for (size_t i = 0; i < n; i++)
        written += bn_utf8_put (codes[i], out + written);
    ck_assert_uint_eq (written, size);
    ck_assert (memcmp (out, text, size) == 0);
}
END_TEST

START_TEST (test_edges)
{
    uint32_t code;
    //  a lone surrogate, as surrogatepass writes it
    ck_assert_uint_eq (
        bn_utf8_decode ((const unsigned char *)"\xed\xa0\x80", 3, &code), 3);
    ck_assert_uint_eq (code, 0xd800);
    unsigned char out[4];
    ck_assert_uint_eq (bn_utf8_put (0xd800, out), 3);
    ck_assert (memcmp (out, "\xed\xa0\x80", 3) == 0);
    //  refused: overlong forms, past U+10FFFF, a stray continuation byte,
    //  a cut sequence, a bad continuation
    const char *bad[] = {
        "\xc0\x80",         "\xc1\xbf",         "\xe0\x80\x80",
        "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\x80",
        "\xe2\x82",         "\xe2\x28\xac",     "\xf8\x88\x80\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t size = strlen (bad[i]);
        ck_assert_msg (!bn_utf8_valid ((const unsigned char *)bad[i], size),
                       "case %zu", i);
        ck_assert_uint_eq (
            bn_utf8_decode ((const unsigned char *)bad[i], size, &code), 0);
    }
    ck_assert (bn_utf8_valid ((const unsigned char *)"", 0));
    ck_assert (bn_utf8_valid ((const unsigned char *)"\xf4\x8f\xbf\xbf", 4));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_utf8");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_edges);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

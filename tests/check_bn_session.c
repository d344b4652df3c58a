/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_session: signing, verification, replay rejection, ids.  */
#define _GNU_SOURCE
#include "bn_error.h"
#include "bn_session.h"

#include <check.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *s_key = "e05ab558-73805a94e21c7ce24a0654fe";

static void
s_parts (const char *header, const void *parts[4], size_t sizes[4])
{
    static const char *rest[] = {"{}", "{}", "{\"code\":\"hostname\"}"};
    parts[0] = header;
    sizes[0] = strlen (header);
    for (int i = 1; i < 4; i++) {
        parts[i] = rest[i - 1];
        sizes[i] = strlen (rest[i - 1]);
    }
}

START_TEST (test_usage)
{
    bn_session_t *session = bn_session_new (s_key, NULL);
    ck_assert_ptr_nonnull (session);
    ck_assert (bn_session_signing (session));
    const void *parts[4];
    size_t sizes[4];
    s_parts ("{\"msg_id\":\"x\"}", parts, sizes);
    char hex[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (session, parts, sizes, hex);
    //  the digest Python's hmac.new(key, digestmod=sha256) gives
    ck_assert_str_eq (
        hex,
        "65717fd47f6bd68406fc1cdd38af4d8abf74dfa69b986cd9aafc6c5a1c3129b2");
    ck_assert_int_eq (bn_session_verify (session, hex, 64, parts, sizes, true),
                      0);
    bn_session_destroy (&session);
    ck_assert_ptr_null (session);
    bn_session_destroy (&session);
}
END_TEST

//  Keys of exactly one SHA-256 block and longer (hashed first, RFC 2104)
//  sign as Python's hmac does.
START_TEST (test_long_keys)
{
    struct {
        const char *key;
        const char *digest;
    } cases[] = {
        {"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
         "f0eebc16d897064295701f396e711aed30e8b7fb26e0e78a82361d654868a65f"},
        {"KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK"
         "long key past the SHA-256 block",
         "dd455c2ffe5dc87890ccdd9b1f57db1ed7aed0220407c4cf5d7c8a557eb7093a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_session_t *session = bn_session_new (cases[i].key, NULL);
        const void *parts[4];
        size_t sizes[4];
        s_parts ("{\"msg_id\":\"z\"}", parts, sizes);
        char hex[BN_SIGNATURE_SIZE + 1];
        bn_session_sign (session, parts, sizes, hex);
        ck_assert_str_eq (hex, cases[i].digest);
        bn_session_destroy (&session);
    }
}
END_TEST

START_TEST (test_bad_signatures)
{
    bn_session_t *session = bn_session_new (s_key, NULL);
    const void *parts[4];
    size_t sizes[4];
    s_parts ("{\"msg_id\":\"y\"}", parts, sizes);
    char hex[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (session, parts, sizes, hex);
    ck_assert_int_eq (bn_session_verify (session, "", 0, parts, sizes, true),
                      BN_ESIGNATURE);
    ck_assert_int_eq (bn_session_verify (session, hex, 63, parts, sizes, true),
                      BN_ESIGNATURE);
    char upper[BN_SIGNATURE_SIZE + 1];
    for (int i = 0; i <= BN_SIGNATURE_SIZE; i++)
        upper[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
    ck_assert_int_eq (
        bn_session_verify (session, upper, 64, parts, sizes, true),
        BN_ESIGNATURE);
    bn_session_t *other = bn_session_new ("another key", NULL);
    char theirs[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (other, parts, sizes, theirs);
    ck_assert_int_eq (
        bn_session_verify (session, theirs, 64, parts, sizes, true),
        BN_ESIGNATURE);
    bn_session_destroy (&other);
    bn_session_destroy (&session);
}
END_TEST

START_TEST (test_replay)
{
    bn_session_t *session = bn_session_new (s_key, NULL);
    bn_session_t *sender = bn_session_new (s_key, NULL);
    const void *parts[4];
    size_t sizes[4];
    char header[64];
    char hex[BN_SIGNATURE_SIZE + 1];
    //  many distinct messages pass; each one replayed is refused
    for (int i = 0; i < 3000; i++) {
        snprintf (header, sizeof header, "{\"msg_id\":\"m%d\"}", i);
        s_parts (header, parts, sizes);
        bn_session_sign (sender, parts, sizes, hex);
        ck_assert_int_eq (
            bn_session_verify (session, hex, 64, parts, sizes, true), 0);
        ck_assert_int_eq (
            bn_session_verify (session, hex, 64, parts, sizes, true),
            BN_EREPLAY);
    }
    //  an unrecorded check does not count as seen
    snprintf (header, sizeof header, "{\"msg_id\":\"fresh\"}");
    s_parts (header, parts, sizes);
    bn_session_sign (sender, parts, sizes, hex);
    ck_assert_int_eq (bn_session_verify (session, hex, 64, parts, sizes, false),
                      0);
    ck_assert_int_eq (bn_session_verify (session, hex, 64, parts, sizes, true),
                      0);
    bn_session_destroy (&sender);
    bn_session_destroy (&session);
}
END_TEST

START_TEST (test_history_bounded)
{
    //  the history forgets the oldest digests after a generation turns over
    bn_session_t *session = bn_session_new (s_key, NULL);
    const void *parts[4];
    size_t sizes[4];
    char header[64];
    char hex[BN_SIGNATURE_SIZE + 1];
    char first[BN_SIGNATURE_SIZE + 1];
    for (int i = 0; i < 70000; i++) {
        snprintf (header, sizeof header, "{\"msg_id\":\"h%d\"}", i);
        s_parts (header, parts, sizes);
        bn_session_sign (session, parts, sizes, hex);
        if (i == 0)
            memcpy (first, hex, sizeof first);
        ck_assert_int_eq (
            bn_session_verify (session, hex, 64, parts, sizes, true), 0);
    }
    s_parts ("{\"msg_id\":\"h0\"}", parts, sizes);
    ck_assert_int_eq (
        bn_session_verify (session, first, 64, parts, sizes, true), 0);
    bn_session_destroy (&session);
}
END_TEST

//  Bytes allocated by this process now (0 where the C library cannot say).
static size_t
s_allocated (void)
{
#ifdef __GLIBC__
    struct mallinfo2 info = mallinfo2 ();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

START_TEST (test_reserved_history)
{
    //  digests recorded before the reservation are still refused after it
    bn_session_t *session = bn_session_new (s_key, NULL);
    const void *parts[4];
    size_t sizes[4];
    char header[64];
    char hex[BN_SIGNATURE_SIZE + 1];
    char early[100][BN_SIGNATURE_SIZE + 1];
    for (int i = 0; i < 100; i++) {
        snprintf (header, sizeof header, "{\"msg_id\":\"r%d\"}", i);
        s_parts (header, parts, sizes);
        bn_session_sign (session, parts, sizes, early[i]);
        ck_assert_int_eq (
            bn_session_verify (session, early[i], 64, parts, sizes, true), 0);
    }
    ck_assert_int_eq (bn_session_reserve_history (session), 0);
    ck_assert_int_eq (bn_session_reserve_history (session), 0);
    for (int i = 0; i < 100; i++) {
        snprintf (header, sizeof header, "{\"msg_id\":\"r%d\"}", i);
        s_parts (header, parts, sizes);
        ck_assert_int_eq (
            bn_session_verify (session, early[i], 64, parts, sizes, true),
            BN_EREPLAY);
    }
    //  then it takes as many digests as it keeps, and turns over, without
    //  allocating: its size is what it reserved
    size_t allocated = s_allocated ();
    for (int i = 100; i < 70000; i++) {
        snprintf (header, sizeof header, "{\"msg_id\":\"r%d\"}", i);
        s_parts (header, parts, sizes);
        bn_session_sign (session, parts, sizes, hex);
        ck_assert_int_eq (
            bn_session_verify (session, hex, 64, parts, sizes, true), 0);
        ck_assert_int_eq (
            bn_session_verify (session, hex, 64, parts, sizes, true),
            BN_EREPLAY);
    }
    ck_assert_uint_eq (s_allocated (), allocated);
    //  the oldest are forgotten as before, the latest still refused
    s_parts ("{\"msg_id\":\"r0\"}", parts, sizes);
    ck_assert_int_eq (
        bn_session_verify (session, early[0], 64, parts, sizes, true), 0);
    s_parts (header, parts, sizes);
    ck_assert_int_eq (bn_session_verify (session, hex, 64, parts, sizes, true),
                      BN_EREPLAY);
    bn_session_destroy (&session);
    //  a session that does not sign keeps nothing
    session = bn_session_new ("", NULL);
    ck_assert_int_eq (bn_session_reserve_history (session), 0);
    bn_session_destroy (&session);
}
END_TEST

START_TEST (test_unsigned)
{
    bn_session_t *session = bn_session_new ("", NULL);
    ck_assert (!bn_session_signing (session));
    const void *parts[4];
    size_t sizes[4];
    s_parts ("{}", parts, sizes);
    char hex[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (session, parts, sizes, hex);
    ck_assert_str_eq (hex, "");
    //  empty key: any signature is accepted, as Python does
    ck_assert_int_eq (bn_session_verify (session, "zz", 2, parts, sizes, true),
                      0);
    bn_session_destroy (&session);
}
END_TEST

START_TEST (test_ids)
{
    bn_session_t *session = bn_session_new (s_key, NULL);
    const char *id = bn_session_id (session);
    ck_assert_uint_eq (strlen (id), 33);
    ck_assert_int_eq (id[8], '-');
    char a[BN_MSG_ID_SIZE], b[BN_MSG_ID_SIZE];
    bn_session_msg_id (session, a);
    bn_session_msg_id (session, b);
    ck_assert_str_ne (a, b);
    ck_assert (strncmp (a, id, 33) == 0);
    char date[BN_DATE_SIZE];
    ck_assert_uint_eq (bn_session_date (date), 27);
    ck_assert_int_eq (date[10], 'T');
    ck_assert_int_eq (date[26], 'Z');
    //  the date is now's, in UTC, and later calls never go back
    time_t before = time (NULL);
    char later[BN_DATE_SIZE];
    for (int i = 0; i < 1000; i++) {
        ck_assert_uint_eq (bn_session_date (later), 27);
        ck_assert (strcmp (later, date) >= 0);
        memcpy (date, later, sizeof date);
    }
    struct tm tm = {0};
    ck_assert_ptr_nonnull (strptime (date, "%Y-%m-%dT%H:%M:%S", &tm));
    time_t when = timegm (&tm);
    ck_assert (when >= before - 1 && when <= time (NULL) + 1);
    for (int i = 20; i < 26; i++)
        ck_assert (date[i] >= '0' && date[i] <= '9');
    bn_session_t *named = bn_session_new (s_key, "engine-uuid-1");
    ck_assert_str_eq (bn_session_id (named), "engine-uuid-1");
    bn_session_destroy (&named);
    ck_assert_ptr_null (bn_session_new (s_key, "bad\"id"));
    ck_assert_ptr_null (bn_session_new (s_key, ""));
    bn_session_destroy (&session);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_session");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_long_keys);
    tcase_add_test (tc, test_bad_signatures);
    tcase_add_test (tc, test_replay);
    tcase_add_test (tc, test_history_bounded);
    tcase_add_test (tc, test_reserved_history);
    tcase_add_test (tc, test_unsigned);
    tcase_add_test (tc, test_ids);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

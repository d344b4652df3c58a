/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_large: payloads are never copied, and lengths past 2^31 and
    2^32 bytes survive every step of a push (value, serialize, bn_msg,
    a socket, deserialize, unpack), shown with untouched anonymous
    mappings that cost no memory until written.  */
#include "bn_apply.h"
#include "bn_msg.h"
#include "bn_serialize.h"
#include "bn_session.h"
#include "bn_value.h"

#include <check.h>
#include <czmq.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int s_released; //  calls of s_count_release

static void
s_count_release (void *data, void *hint)
{
    ck_assert_ptr_eq (data, hint);
    s_released++;
}

static void
s_unmap (void *data, void *hint)
{
    munmap (data, (size_t)(uintptr_t)hint);
    s_released++;
}

START_TEST (test_shared_bytes)
{
    static char data[4096];
    s_released = 0;
    bn_value_t *value =
        bn_value_new_bytes_shared (data, sizeof data, s_count_release, data);
    ck_assert_ptr_nonnull (value);
    ck_assert_ptr_eq (bn_value_bytes_data (value), data);
    ck_assert_uint_eq (bn_value_bytes_size (value), sizeof data);
    //  a copy shares the bytes; they go when the last holder lets go
    bn_value_t *copy = bn_value_dup (value);
    ck_assert_ptr_eq (bn_value_bytes_data (copy), data);
    ck_assert (bn_value_equal (copy, value));
    void *hold = bn_value_bytes_hold (value);
    ck_assert_ptr_nonnull (hold);
    bn_value_destroy (&value);
    bn_value_destroy (&copy);
    ck_assert_int_eq (s_released, 0);
    bn_value_bytes_let_go (hold);
    ck_assert_int_eq (s_released, 1);
    bn_value_bytes_let_go (NULL);

    //  bytes the value copied are shared by its copies too
    value = bn_value_new_bytes ("abc", 3);
    copy = bn_value_dup (value);
    ck_assert_ptr_eq (bn_value_bytes_data (copy), bn_value_bytes_data (value));
    bn_value_destroy (&value);
    ck_assert_mem_eq (bn_value_bytes_data (copy), "abc", 4);
    bn_value_destroy (&copy);
    //  only BYTES have bytes to hold
    value = bn_value_new_str ("abc");
    ck_assert_ptr_null (bn_value_bytes_hold (value));
    bn_value_destroy (&value);
}
END_TEST

//  bytes of size in one buffer of a message: serialized, the message's
//  frame is the value's memory; deserialized from the frame, the value's
//  memory is the frame's when the frame is big enough to share.
START_TEST (test_no_copies)
{
    bn_session_t *session = bn_session_new ("", NULL);
    size_t sizes[] = {2000, BN_SERIALIZE_SHARE_THRESHOLD};
    for (size_t k = 0; k < 2; k++) {
        size_t size = sizes[k];
        char *data = malloc (size);
        ck_assert_ptr_nonnull (data);
        memset (data, 'x', size);
        s_released = 0;
        bn_value_t *value =
            bn_value_new_bytes_shared (data, size, s_count_release, data);
        bn_msg_t *msg = bn_msg_new (session, "apply_request");
        ck_assert_int_eq (bn_serialize_object_add (msg, value), 0);
        ck_assert_uint_eq (bn_msg_nbuffers (msg), 2);
        ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (msg, 1)), data);
        bn_value_destroy (&value);
        ck_assert_int_eq (s_released, 0);

        bn_bytes_t bufs[2];
        ck_assert_uint_eq (bn_bytes_from_msg (msg, bufs, 2), 2);
        char err[256];
        bn_value_t *back =
            bn_deserialize_object (bufs, 2, NULL, err, sizeof err);
        ck_assert_ptr_nonnull (back);
        ck_assert_uint_eq (bn_value_bytes_size (back), size);
        if (size >= BN_SERIALIZE_SHARE_THRESHOLD)
            ck_assert_ptr_eq (bn_value_bytes_data (back), data);
        else
            ck_assert_ptr_ne (bn_value_bytes_data (back), data);
        bn_msg_destroy (&msg);
        ck_assert_int_eq (s_released, size < BN_SERIALIZE_SHARE_THRESHOLD);
        ck_assert_mem_eq (bn_value_bytes_data (back), "xxxx", 4);
        bn_value_destroy (&back);
        ck_assert_int_eq (s_released, 1);
        free (data);
    }
    bn_session_destroy (&session);
}
END_TEST

//  A push of `size` bytes (a mapping never written: zeros that cost no
//  memory) as the client makes it, through a socket, unpacked as an
//  engine does: every length is size and the bytes are the mapping's.
static void
s_push_of (size_t size)
{
    char *map =
        mmap (NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne (map, MAP_FAILED);
    s_released = 0;
    bn_value_t *kwargs = bn_value_new_dict ();
    ck_assert_int_eq (bn_value_dict_set_str (
                          kwargs, "x",
                          bn_value_new_bytes_shared (map, size, s_unmap,
                                                     (void *)(uintptr_t)size)),
                      0);
    bn_session_t *session = bn_session_new ("a key", NULL);
    bn_msg_t *msg = bn_msg_new (session, "apply_request");
    ck_assert_int_eq (
        bn_apply_add_global (msg, "ipyparallel.util", "_push", NULL, kwargs),
        0);
    bn_value_destroy (&kwargs);
    //  f, the info dict, kwargs' pickle and the bytes
    ck_assert_uint_eq (bn_msg_nbuffers (msg), 4);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (msg, 3)), size);
    ck_assert_uint_gt (bn_msg_size (msg), size);

    //  an endpoint of each size's own: a closed socket's name is freed
    //  asynchronously
    char endpoint[64];
    snprintf (endpoint, sizeof endpoint, "inproc://check-bn-large-%zu", size);
    zsock_t *out = zsock_new (ZMQ_PAIR);
    zsock_t *in = zsock_new (ZMQ_PAIR);
    ck_assert_ptr_nonnull (out);
    ck_assert_ptr_nonnull (in);
    ck_assert_int_eq (zsock_bind (out, "%s", endpoint), 0);
    ck_assert_int_eq (zsock_connect (in, "%s", endpoint), 0);
    ck_assert_int_eq (bn_msg_send (&msg, zsock_resolve (out), session), 0);
    bn_msg_t *got = bn_msg_recv (zsock_resolve (in));
    ck_assert_ptr_nonnull (got);
    ck_assert_int_eq (bn_msg_verify (got, session, false), 0);
    ck_assert_uint_eq (bn_msg_nbuffers (got), 4);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (got, 3)), size);
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (got, 3)), map);

    bn_bytes_t bufs[4];
    ck_assert_uint_eq (bn_bytes_from_msg (got, bufs, 4), 4);
    bn_apply_t apply;
    char err[256] = "";
    ck_assert_int_eq (bn_apply_unpack (bufs, 4, &apply, err, sizeof err), 0);
    ck_assert_str_eq (apply.name, "_push");
    bn_value_t *x = bn_value_dict_get (apply.kwargs, "x");
    ck_assert_uint_eq (bn_value_bytes_size (x), size);
    ck_assert_ptr_eq (bn_value_bytes_data (x), map);
    bn_msg_destroy (&got);
    ck_assert_int_eq (s_released, 0);
    //  the reply to a pull serializes the engine's value as it came
    bn_msg_t *reply = bn_msg_new (session, "apply_reply");
    ck_assert_int_eq (bn_serialize_object_add (reply, x), 0);
    ck_assert_uint_eq (zmq_msg_size (bn_msg_buffer (reply, 1)), size);
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (reply, 1)), map);
    bn_apply_clear (&apply);
    ck_assert_int_eq (s_released, 0);
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_released, 1);
    zsock_destroy (&in);
    zsock_destroy (&out);
    bn_session_destroy (&session);
}

START_TEST (test_past_2gib)
{
    s_push_of ((1ull << 31) + 1);
}
END_TEST

START_TEST (test_past_4gib)
{
    s_push_of ((1ull << 32) + 4097);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_large");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 50);
    tcase_add_test (tc, test_shared_bytes);
    tcase_add_test (tc, test_no_copies);
    tcase_add_test (tc, test_past_2gib);
    tcase_add_test (tc, test_past_4gib);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

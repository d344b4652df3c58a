/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_copier: a message's large buffers copied into memory of their
    own on the copier's thread: which frames it replaces, the bytes once
    the job is done, and the frames it replaced let go of, whoever lets
    go first.  */
#include <check.h>
#include <czmq.h>
#include <stdatomic.h>
#include <string.h>

#include "bn_copier.h"
#include "bn_msgtypes.h"

//  Buffers freed by libzmq (their free function), across threads
static atomic_int s_freed;

static void
s_free (void *data, void *hint)
{
    (void)hint;
    free (data);
    atomic_fetch_add (&s_freed, 1);
}

//  A message with buffers of sizes[0..count), buffer i filled with 'a' + i,
//  each in memory of the test's own (freed through s_free).
static bn_msg_t *
s_message (const size_t *sizes, size_t count)
{
    bn_msg_t *msg =
        bn_msg_new_parts ((const void *const[4]){"{}", "{}", "{}", "{}"},
                          (const size_t[4]){2, 2, 2, 2});
    ck_assert_ptr_nonnull (msg);
    for (size_t i = 0; i < count; i++) {
        char *data = malloc (sizes[i]);
        ck_assert_ptr_nonnull (data);
        memset (data, 'a' + (int)i, sizes[i]);
        ck_assert_int_eq (
            bn_msg_add_buffer_data (msg, data, sizes[i], s_free, NULL), 0);
    }
    return msg;
}

static void
s_assert_bytes (bn_msg_t *msg, size_t index, size_t size)
{
    zmq_msg_t *frame = bn_msg_buffer (msg, index);
    ck_assert_uint_eq (zmq_msg_size (frame), size);
    char *expected = malloc (size);
    ck_assert_ptr_nonnull (expected);
    memset (expected, 'a' + (int)index, size);
    ck_assert_msg (memcmp (zmq_msg_data (frame), expected, size) == 0,
                   "buffer %zu is not its bytes", index);
    free (expected);
}

//  Buffers of min to max bytes get new memory with the same bytes; the
//  others stay the frames they were.
START_TEST (test_keep)
{
    atomic_store (&s_freed, 0);
    bn_copier_t *copier = bn_copier_new ();
    ck_assert_ptr_nonnull (copier);
    size_t sizes[] = {100, 8192, 100000, 70000};
    bn_msg_t *sent = s_message (sizes, 4);
    bn_msg_t *kept = bn_msg_dup (sent);
    bn_copier_job_t *job = bn_copier_keep (copier, kept, 8192, 65536 * 2);
    ck_assert_ptr_nonnull (job);
    bn_copier_job_wait (job);
    ck_assert (bn_copier_job_done (job));
    ck_assert_uint_eq (bn_msg_nbuffers (kept), 4);
    for (size_t i = 0; i < 4; i++) {
        s_assert_bytes (kept, i, sizes[i]);
        void *was = zmq_msg_data (bn_msg_buffer (sent, i));
        void *now = zmq_msg_data (bn_msg_buffer (kept, i));
        if (i == 0)
            ck_assert_ptr_eq (now, was);
        else
            ck_assert_ptr_ne (now, was);
    }
    //  the copies do not hold the sent buffers; the first is still shared
    bn_msg_destroy (&sent);
    ck_assert_int_eq (atomic_load (&s_freed), 3);
    s_assert_bytes (kept, 2, 100000);
    bn_copier_job_release (&job);
    ck_assert_ptr_null (job);
    bn_msg_destroy (&kept);
    ck_assert_int_eq (atomic_load (&s_freed), 4);
    bn_copier_destroy (&copier);
    ck_assert_ptr_null (copier);
}
END_TEST

//  Nothing in range: no job, the message as it was.
START_TEST (test_nothing_to_copy)
{
    bn_copier_t *copier = bn_copier_new ();
    size_t sizes[] = {100, 200000};
    bn_msg_t *msg = s_message (sizes, 2);
    void *first = zmq_msg_data (bn_msg_buffer (msg, 0));
    ck_assert_ptr_null (bn_copier_keep (copier, msg, 8192, 65536));
    ck_assert_ptr_eq (zmq_msg_data (bn_msg_buffer (msg, 0)), first);
    bn_msg_t *bare = s_message (sizes, 0);
    ck_assert_ptr_null (bn_copier_keep (copier, bare, 0, 65536));
    bn_msg_destroy (&bare);
    bn_msg_destroy (&msg);
    bn_copier_destroy (&copier);
}
END_TEST

//  The same copy on the caller's thread: in-range buffers in new memory
//  with the same bytes at once, the others shared.
START_TEST (test_copy_here)
{
    size_t sizes[] = {100, 9000, 200000};
    bn_msg_t *sent = s_message (sizes, 3);
    bn_msg_t *kept = bn_msg_dup (sent);
    bn_copier_copy (kept, 8192, 65536);
    for (size_t i = 0; i < 3; i++) {
        s_assert_bytes (kept, i, sizes[i]);
        void *was = zmq_msg_data (bn_msg_buffer (sent, i));
        void *now = zmq_msg_data (bn_msg_buffer (kept, i));
        if (i == 1)
            ck_assert_ptr_ne (now, was);
        else
            ck_assert_ptr_eq (now, was);
    }
    bn_msg_destroy (&sent);
    s_assert_bytes (kept, 1, sizes[1]);
    bn_msg_destroy (&kept);
}
END_TEST

//  A message dropped before its copy is done, job not waited for: the
//  copier still lets go of every frame, and destroying it finishes the
//  queue (the leak checkers see the rest).
START_TEST (test_dropped_before_done)
{
    atomic_store (&s_freed, 0);
    bn_copier_t *copier = bn_copier_new ();
    size_t sizes[] = {300000, 300000};
    for (int i = 0; i < 20; i++) {
        bn_msg_t *msg = s_message (sizes, 2);
        bn_copier_job_t *job = bn_copier_keep (copier, msg, 8192, 1000000);
        ck_assert_ptr_nonnull (job);
        bn_msg_destroy (&msg);
        bn_copier_job_release (&job);
    }
    bn_copier_destroy (&copier);
    ck_assert_int_eq (atomic_load (&s_freed), 40);
}
END_TEST

//  Jobs are done in order: the last done means all are, every byte right.
START_TEST (test_many)
{
    bn_copier_t *copier = bn_copier_new ();
    size_t sizes[] = {20000, 40000, 9000};
    bn_msg_t *msgs[50];
    bn_copier_job_t *jobs[50];
    for (int i = 0; i < 50; i++) {
        bn_msg_t *sent = s_message (sizes, 3);
        msgs[i] = bn_msg_dup (sent);
        jobs[i] = bn_copier_keep (copier, msgs[i], 8192, 65536);
        ck_assert_ptr_nonnull (jobs[i]);
        bn_msg_destroy (&sent);
    }
    bn_copier_job_wait (jobs[49]);
    for (int i = 0; i < 50; i++) {
        ck_assert (bn_copier_job_done (jobs[i]));
        for (size_t b = 0; b < 3; b++)
            s_assert_bytes (msgs[i], b, sizes[b]);
        bn_copier_job_release (&jobs[i]);
        bn_msg_destroy (&msgs[i]);
    }
    bn_copier_destroy (&copier);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_copier");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_keep);
    tcase_add_test (tc, test_nothing_to_copy);
    tcase_add_test (tc, test_copy_here);
    tcase_add_test (tc, test_dropped_before_done);
    tcase_add_test (tc, test_many);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

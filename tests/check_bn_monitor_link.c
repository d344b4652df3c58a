/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_monitor_link: monitor calls made in another thread reach the
    target monitor on the loop's thread, messages and buffers intact.  */
#include <check.h>
#include <czmq.h>
#include <string.h>

#include "bn_monitor_link.h"
#include "bn_msgtypes.h"

typedef struct {
    int requests, assigned, replies, iopub;
    char queue[32];
    char engine[64];
    char msg_id[128];
    char assigned_id[128];
    size_t buffer_size;
    char buffer_head[8];
} s_heard_t;

static void
s_request (void *arg, const char *queue, bn_msg_t *request, const char *engine)
{
    s_heard_t *heard = arg;
    heard->requests++;
    snprintf (heard->queue, sizeof heard->queue, "%s", queue);
    snprintf (heard->engine, sizeof heard->engine, "%s", engine ? engine : "");
    snprintf (heard->msg_id, sizeof heard->msg_id, "%s",
              bn_msg_id (request) ? bn_msg_id (request) : "");
    if (bn_msg_nbuffers (request) == 1) {
        zmq_msg_t *buffer = bn_msg_buffer (request, 0);
        heard->buffer_size = zmq_msg_size (buffer);
        memcpy (heard->buffer_head, zmq_msg_data (buffer), 4);
    }
}

static void
s_assigned (void *arg, const char *msg_id, const char *engine)
{
    s_heard_t *heard = arg;
    heard->assigned++;
    snprintf (heard->assigned_id, sizeof heard->assigned_id, "%s>%s", msg_id,
              engine);
}

static void
s_reply (void *arg, const char *queue, bn_msg_t *reply, const char *engine)
{
    s_heard_t *heard = arg;
    if (engine == NULL && streq (queue, BN_MONITOR_QUEUE_BROADCAST) &&
        bn_msg_parent_id (reply))
        heard->replies++;
}

static void
s_iopub (void *arg, bn_msg_t *msg)
{
    s_heard_t *heard = arg;
    if (bn_msg_type (msg) && streq (bn_msg_type (msg), "stream"))
        heard->iopub++;
}

//  The other thread: one call of each kind through the sender.
static void
s_sender (zsock_t *pipe, void *args)
{
    const bn_monitor_t *monitor = args;
    bn_session_t *session = bn_session_new ("key", NULL);
    bn_msg_t *request = bn_msg_new (session, BN_MSG_APPLY_REQUEST);
    char data[5000];
    memset (data, 'x', sizeof data);
    memcpy (data, "head", 4);
    bn_msg_add_buffer (request, data, sizeof data);
    bn_msg_t *reply = bn_msg_new_reply (session, request, BN_MSG_APPLY_REPLY);
    bn_msg_t *output = bn_msg_new_reply (session, request, "stream");
    zsock_signal (pipe, 0);
    monitor->request (monitor->arg, BN_MONITOR_QUEUE_BROADCAST, request,
                      "engine-7");
    monitor->assigned (monitor->arg, bn_msg_id (request), "engine-7");
    monitor->iopub (monitor->arg, output);
    monitor->reply (monitor->arg, BN_MONITOR_QUEUE_BROADCAST, reply, NULL);
    char *command = zstr_recv (pipe);
    free (command);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&output);
    bn_session_destroy (&session);
}

static int
s_check_done (zloop_t *loop, int timer_id, void *arg)
{
    s_heard_t *heard = arg;
    return heard->requests && heard->assigned && heard->replies && heard->iopub
               ? -1
               : 0;
}

static int
s_give_up (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

START_TEST (test_usage)
{
    s_heard_t heard = {0};
    bn_monitor_t target = {.request = s_request,
                           .assigned = s_assigned,
                           .reply = s_reply,
                           .iopub = s_iopub,
                           .arg = &heard};
    bn_monitor_link_t *link = bn_monitor_link_new (&target);
    ck_assert_ptr_nonnull (link);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_monitor_link_attach (link, loop), 0);
    zloop_timer (loop, 10, 0, s_check_done, &heard);
    zloop_timer (loop, 5000, 1, s_give_up, NULL);
    zactor_t *sender =
        zactor_new (s_sender, (void *)bn_monitor_link_sender (link));
    zloop_start (loop);
    ck_assert_int_eq (heard.requests, 1);
    ck_assert_str_eq (heard.queue, BN_MONITOR_QUEUE_BROADCAST);
    ck_assert_str_eq (heard.engine, "engine-7");
    ck_assert_uint_eq (heard.buffer_size, 5000);
    ck_assert (memcmp (heard.buffer_head, "head", 4) == 0);
    ck_assert_int_eq (heard.assigned, 1);
    char expected[160];
    snprintf (expected, sizeof expected, "%s>engine-7", heard.msg_id);
    ck_assert_str_eq (heard.assigned_id, expected);
    ck_assert_int_eq (heard.replies, 1);
    ck_assert_int_eq (heard.iopub, 1);
    json_t *stats = bn_monitor_link_stats (link);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "delivered")),
                      4);
    ck_assert_int_eq (json_integer_value (json_object_get (stats, "dropped")),
                      0);
    json_decref (stats);
    zstr_send (sender, "DONE");
    zactor_destroy (&sender);
    bn_monitor_link_destroy (&link);
    ck_assert_ptr_null (link);
    bn_monitor_link_destroy (&link);
    zloop_destroy (&loop);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_monitor_link");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    suite_add_tcase (suite, tc);
    return suite;
}

int
main (void)
{
    SRunner *runner = srunner_create (s_suite ());
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

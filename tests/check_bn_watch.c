/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_watch: the epoll watch set (bn_watch) in a zloop and alone:
    sockets and descriptors, handlers that stop early, cancelling during a
    batch, many sockets.  */
#include "bn_watch.h"

#include <check.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  What the handlers saw.
typedef struct {
    bn_watch_t *watch;
    int calls;                //  handler calls
    int received;             //  messages or bytes read
    int expected;             //  stop the loop at this many
    zsock_t *sock;            //  socket a handler reads
    int fd;                   //  descriptor a handler reads
    bn_watch_item_t *item;    //  this handler's item
    bn_watch_item_t **victim; //  an item to cancel from the handler
    int victim_fd;            //  and the descriptor to close
} s_state_t;

static int
s_stop_when_done (zloop_t *loop, int timer_id, void *arg)
{
    s_state_t *state = (s_state_t *)arg;
    return state->received >= state->expected ? -1 : 0;
}

static int
s_deadline (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

static void
s_run (zloop_t *loop, s_state_t *state)
{
    int done = zloop_timer (loop, 5, 0, s_stop_when_done, state);
    int deadline = zloop_timer (loop, 5000, 1, s_deadline, NULL);
    zloop_start (loop);
    zloop_timer_end (loop, done);
    zloop_timer_end (loop, deadline);
}

//  Read one message per call, as a handler that stops early.
static void
s_read_one (bn_watch_item_t *item, void *arg)
{
    s_state_t *state = (s_state_t *)arg;
    state->calls++;
    char *text = zstr_recv_nowait (state->sock);
    if (text)
        state->received++;
    free (text);
}

static void
s_read_fd (bn_watch_item_t *item, void *arg)
{
    s_state_t *state = (s_state_t *)arg;
    state->calls++;
    char buffer[64];
    ssize_t got = read (state->fd, buffer, sizeof buffer);
    if (got > 0)
        state->received += (int)got;
    if (state->victim && *state->victim) {
        bn_watch_cancel (state->watch, state->victim);
        close (state->victim_fd);
    }
    //  at end of file, stop watching
    if (got == 0)
        bn_watch_cancel (state->watch, &state->item);
}

START_TEST (test_usage)
{
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    ck_assert_ptr_nonnull (watch);
    ck_assert (bn_watch_loop (watch) == loop);
    zsock_t *in = zsock_new_pair ("@inproc://check-watch-usage");
    zsock_t *out = zsock_new_pair (">inproc://check-watch-usage");
    s_state_t state = {watch, 0, 0, 3, in, -1, NULL, NULL, -1};
    bn_watch_item_t *item = bn_watch_sock (watch, in, s_read_one, &state);
    ck_assert_ptr_nonnull (item);
    ck_assert_uint_eq (bn_watch_size (watch), 1);
    //  three messages, read one per call: the handler is called again
    zstr_send (out, "a");
    zstr_send (out, "b");
    zstr_send (out, "c");
    s_run (loop, &state);
    ck_assert_int_eq (state.received, 3);
    bn_watch_cancel (watch, &item);
    ck_assert_ptr_null (item);
    ck_assert_uint_eq (bn_watch_size (watch), 0);
    bn_watch_cancel (watch, &item);
    zsock_destroy (&out);
    zsock_destroy (&in);
    bn_watch_destroy (&watch);
    ck_assert_ptr_null (watch);
    zloop_destroy (&loop);
}
END_TEST

START_TEST (test_descriptors_and_cancel_in_batch)
{
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    int first[2], second[2];
    ck_assert_int_eq (pipe (first), 0);
    ck_assert_int_eq (pipe (second), 0);
    s_state_t a = {watch, 0, 0, 5, NULL, first[0], NULL, NULL, -1};
    s_state_t b = {watch, 0, 0, 1, NULL, second[0], NULL, NULL, -1};
    a.item = bn_watch_fd (watch, first[0], s_read_fd, &a);
    b.item = bn_watch_fd (watch, second[0], s_read_fd, &b);
    //  both readable in one batch; whichever runs first cancels the other
    a.victim = &b.item;
    a.victim_fd = second[0];
    b.victim = &a.item;
    b.victim_fd = first[0];
    ck_assert_int_eq (write (first[1], "hello", 5), 5);
    ck_assert_int_eq (write (second[1], "x", 1), 1);
    zloop_timer (loop, 300, 1, s_deadline, NULL);
    zloop_start (loop);
    //  exactly one handler ran; the cancelled one never did
    ck_assert_int_eq (a.calls + b.calls, 1);
    ck_assert_uint_eq (bn_watch_size (watch), 1);
    s_state_t *winner = a.calls ? &a : &b;
    bn_watch_cancel (watch, &winner->item);
    close (winner->fd);
    close (first[1]);
    close (second[1]);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

START_TEST (test_end_of_file_cancels_itself)
{
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    int fds[2];
    ck_assert_int_eq (pipe (fds), 0);
    s_state_t state = {watch, 0, 0, 1000, NULL, fds[0], NULL, NULL, -1};
    state.item = bn_watch_fd (watch, fds[0], s_read_fd, &state);
    ck_assert_int_eq (write (fds[1], "abc", 3), 3);
    close (fds[1]);
    zloop_timer (loop, 300, 1, s_deadline, NULL);
    zloop_start (loop);
    ck_assert_int_eq (state.received, 3);
    ck_assert_ptr_null (state.item);
    ck_assert_uint_eq (bn_watch_size (watch), 0);
    //  no busy loop on a descriptor at end of file after it was cancelled
    ck_assert_int_le (state.calls, 3);
    close (fds[0]);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

//  A server that answers later, from a timer (as an engine answers when
//  a command ends): the send takes libzmq's signal of waiting input,
//  which bn_watch_check makes up for.
typedef struct {
    s_state_t *state;
    zmsg_t *pending; //  request read, not answered yet
    bool check;      //  call bn_watch_check after sending
} s_server_t;

static void
s_take_request (bn_watch_item_t *item, void *arg)
{
    s_server_t *server = (s_server_t *)arg;
    server->state->calls++;
    if (server->pending)
        return; //  one at a time, like an engine
    server->pending = zmsg_recv_nowait (server->state->sock);
}

static int
s_answer (zloop_t *loop, int timer_id, void *arg)
{
    s_server_t *server = (s_server_t *)arg;
    if (!server->pending)
        return 0;
    server->state->received++;
    zmsg_send (&server->pending, server->state->sock);
    if (server->check)
        bn_watch_check (server->state->watch, server->state->item);
    return 0;
}

static int
s_client_send (zloop_t *loop, int timer_id, void *arg)
{
    zstr_send ((zsock_t *)arg, "ping");
    return 0;
}

START_TEST (test_input_after_send)
{
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    zsock_t *router = zsock_new_router ("inproc://check-watch-echo");
    zsock_t *client = zsock_new_dealer ("inproc://check-watch-echo");
    s_state_t state = {watch, 0, 0, 50, router, -1, NULL, NULL, -1};
    s_server_t server = {&state, NULL, true};
    state.item = bn_watch_sock (watch, router, s_take_request, &server);
    //  requests keep coming while answers go out from a timer
    zloop_timer (loop, 1, 50, s_client_send, client);
    zloop_timer (loop, 2, 0, s_answer, &server);
    s_run (loop, &state);
    ck_assert_int_eq (state.received, 50);
    int replies = 0;
    zsock_set_rcvtimeo (client, 1000);
    while (replies < 50) {
        char *reply = zstr_recv (client);
        ck_assert_ptr_nonnull (reply);
        free (reply);
        replies++;
    }
    zmsg_destroy (&server.pending);
    bn_watch_cancel (watch, &state.item);
    zsock_destroy (&client);
    zsock_destroy (&router);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

//  A set of its own, run by bn_watch_wait, with libzmq socket handles: a
//  handler that reads one message per call is called again without new
//  input, and input that a send took the signal of is seen after
//  bn_watch_check.
START_TEST (test_alone)
{
    bn_watch_t *watch = bn_watch_new (NULL);
    ck_assert_ptr_nonnull (watch);
    ck_assert_ptr_null (bn_watch_loop (watch));
    zsock_t *router = zsock_new_router ("inproc://check-watch-alone");
    zsock_t *dealer = zsock_new_dealer ("inproc://check-watch-alone");
    s_state_t state = {watch, 0, 0, 3, dealer, -1, NULL, NULL, -1};
    bn_watch_item_t *item =
        bn_watch_socket (watch, zsock_resolve (dealer), s_read_one, &state);
    ck_assert_ptr_nonnull (item);
    //  the router learns the dealer's routing id from its first message
    zstr_send (dealer, "hello");
    zframe_t *id = zframe_recv (router);
    char *hello = zstr_recv (router);
    ck_assert_str_eq (hello, "hello");
    free (hello);
    for (int i = 0; i < 3; i++) {
        zframe_send (&id, router, ZFRAME_MORE | ZFRAME_REUSE);
        zstr_send (router, "m");
    }
    //  one message a call, and never a wait while one is left
    for (int turn = 0; turn < 100 && state.received < 3; turn++)
        ck_assert_int_eq (bn_watch_wait (watch, 5000), 0);
    ck_assert_int_eq (state.received, 3);
    //  input that arrives while the watched socket sends
    zframe_send (&id, router, ZFRAME_MORE | ZFRAME_REUSE);
    zstr_send (router, "late");
    zmq_pollitem_t pollitem = {zsock_resolve (dealer), 0, ZMQ_POLLIN, 0};
    ck_assert_int_eq (zmq_poll (&pollitem, 1, 5000), 1);
    zstr_send (dealer, "out");
    bn_watch_check (watch, item);
    for (int turn = 0; turn < 100 && state.received < 4; turn++)
        ck_assert_int_eq (bn_watch_wait (watch, 5000), 0);
    ck_assert_int_eq (state.received, 4);
    bn_watch_cancel (watch, &item);
    zframe_destroy (&id);
    zsock_destroy (&dealer);
    zsock_destroy (&router);
    bn_watch_destroy (&watch);
}
END_TEST

//  A zloop reader's handler in a set: called with the loop and the
//  socket, once per message, and its -1 ends the loop as in zloop.
typedef struct {
    zloop_t *loop;
    zsock_t *sock;
    int messages;
    bool wrong_args;
} s_zreader_t;

static int
s_zreader (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_zreader_t *state = (s_zreader_t *)arg;
    state->wrong_args |= loop != state->loop || sock != state->sock;
    char *text = zstr_recv (sock);
    state->messages++;
    bool stop = text && streq (text, "stop");
    free (text);
    return stop ? -1 : 0;
}

static int
s_gave_up (zloop_t *loop, int timer_id, void *arg)
{
    *(bool *)arg = true;
    return -1;
}

START_TEST (test_zreader)
{
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    zsock_t *in = zsock_new_pair ("@inproc://check-watch-zreader");
    zsock_t *out = zsock_new_pair (">inproc://check-watch-zreader");
    s_zreader_t state = {loop, in, 0, false};
    bn_watch_item_t *item = bn_watch_zreader (watch, in, s_zreader, &state);
    ck_assert_ptr_nonnull (item);
    bool gave_up = false;
    zloop_timer (loop, 5000, 1, s_gave_up, &gave_up);
    zstr_send (out, "a");
    zstr_send (out, "b");
    zstr_send (out, "stop");
    zloop_start (loop);
    ck_assert (!gave_up);
    ck_assert (!state.wrong_args);
    ck_assert_int_eq (state.messages, 3);
    bn_watch_cancel (watch, &item);
    zsock_destroy (&out);
    zsock_destroy (&in);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

static int s_total; //  messages s_count read

static void
s_count (bn_watch_item_t *item, void *arg)
{
    zsock_t *sock = (zsock_t *)arg;
    char *text;
    while ((text = zstr_recv_nowait (sock))) {
        s_total++;
        free (text);
    }
}

static int
s_stop_at_total (zloop_t *loop, int timer_id, void *arg)
{
    return s_total >= *(int *)arg ? -1 : 0;
}

START_TEST (test_many_sockets)
{
    int count = 500;
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    zsock_t **ins = calloc (count, sizeof *ins);
    zsock_t **outs = calloc (count, sizeof *outs);
    bn_watch_item_t **items = calloc (count, sizeof *items);
    for (int i = 0; i < count; i++) {
        ins[i] = zsock_new (ZMQ_PAIR);
        outs[i] = zsock_new (ZMQ_PAIR);
        ck_assert_int_eq (zsock_bind (ins[i], "inproc://check-watch-%d", i), 0);
        ck_assert_int_eq (zsock_connect (outs[i], "inproc://check-watch-%d", i),
                          0);
        items[i] = bn_watch_sock (watch, ins[i], s_count, ins[i]);
        ck_assert_ptr_nonnull (items[i]);
    }
    for (int i = 0; i < count; i++)
        zstr_send (outs[i], "x");
    s_total = 0;
    int64_t start = zclock_mono ();
    zloop_timer (loop, 1, 0, s_stop_at_total, &count);
    zloop_timer (loop, 5000, 1, s_deadline, NULL);
    zloop_start (loop);
    ck_assert_int_eq (s_total, count);
    ck_assert_int_lt (zclock_mono () - start, 2000);
    for (int i = 0; i < count; i++) {
        bn_watch_cancel (watch, &items[i]);
        zsock_destroy (&ins[i]);
        zsock_destroy (&outs[i]);
    }
    free (ins);
    free (outs);
    free (items);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_watch");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_descriptors_and_cancel_in_batch);
    tcase_add_test (tc, test_end_of_file_cancels_itself);
    tcase_add_test (tc, test_input_after_send);
    tcase_add_test (tc, test_many_sockets);
    tcase_add_test (tc, test_alone);
    tcase_add_test (tc, test_zreader);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

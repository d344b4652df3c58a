/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_heart: the heart monitor against fake engine hearts (a SUB that
    receives pings and a DEALER that echoes them).  */
#include "bn_ctltest.h"
#include "bn_heart.h"

static zsock_t *s_ping, *s_pong; //  the monitor's PUB and ROUTER
static int s_ping_port, s_pong_port;
static bn_heart_t *s_heart;

typedef struct {
    zsock_t *sub;
    zsock_t *dealer;
} s_fake_t;

static s_fake_t s_fake; //  heart of engine "engine-a"

static int s_new_count, s_stopped_count, s_closed_count;
static char s_last_new[64], s_last_stopped[64], s_last_closed[64];

static void
s_on_new (void *arg, const char *heart)
{
    s_new_count++;
    snprintf (s_last_new, sizeof s_last_new, "%s", heart);
}

static void
s_on_stopped (void *arg, const char *heart)
{
    s_stopped_count++;
    snprintf (s_last_stopped, sizeof s_last_stopped, "%s", heart);
}

static void
s_on_closed (void *arg, const char *heart)
{
    s_closed_count++;
    snprintf (s_last_closed, sizeof s_last_closed, "%s", heart);
}

static void
s_fake_open (s_fake_t *fake, const char *uuid)
{
    fake->sub = t_sock (ZMQ_SUB, NULL);
    t_connect (fake->sub, s_ping_port);
    fake->dealer = t_sock (ZMQ_DEALER, uuid);
    t_connect (fake->dealer, s_pong_port);
}

static void
s_fake_close (s_fake_t *fake)
{
    zsock_destroy (&fake->sub);
    zsock_destroy (&fake->dealer);
}

//  Next ping the fake heart receives (bounded), as a string.
static char *
s_fake_ping (s_fake_t *fake)
{
    zpoller_t *poller = zpoller_new (fake->sub, NULL);
    void *which = zpoller_wait (poller, T_TIMEOUT);
    zpoller_destroy (&poller);
    return which ? zstr_recv (fake->sub) : NULL;
}

static void
s_fake_echo (s_fake_t *fake, const char *ping)
{
    zstr_send (fake->dealer, ping);
}

//  The fake heart echoes the next ping it receives.
static void
s_fake_answer (s_fake_t *fake)
{
    char *ping = s_fake_ping (fake);
    ck_assert_ptr_nonnull (ping);
    s_fake_echo (fake, ping);
    zstr_free (&ping);
}

//  Send pings until the fake's subscription works; drain them.
static void
s_fake_subscribed (s_fake_t *fake)
{
    int64_t end = zclock_mono () + T_TIMEOUT;
    zpoller_t *poller = zpoller_new (fake->sub, NULL);
    while (!zpoller_wait (poller, 20)) {
        ck_assert (zclock_mono () < end);
        bn_heart_ping (s_heart);
    }
    zpoller_destroy (&poller);
    char *ping;
    while (zsock_events (fake->sub) & ZMQ_POLLIN) {
        ping = zstr_recv (fake->sub);
        zstr_free (&ping);
    }
}

//  Let the monitor read pongs for a moment.
static void
s_read_pongs (void)
{
    zpoller_t *poller = zpoller_new (s_pong, NULL);
    int64_t end = zclock_mono () + 300;
    while (zclock_mono () < end)
        if (zpoller_wait (poller, 20))
            bn_heart_pong_ready (s_heart);
    zpoller_destroy (&poller);
}

static json_int_t
s_stat (const char *name)
{
    json_t *stats = bn_heart_stats (s_heart);
    json_int_t value = json_integer_value (json_object_get (stats, name));
    json_decref (stats);
    return value;
}

static void
s_setup (void)
{
    s_ping = t_bound (ZMQ_PUB, NULL, &s_ping_port);
    s_pong = t_bound (ZMQ_ROUTER, NULL, &s_pong_port);
    s_heart = bn_heart_new (s_ping, s_pong, 10000, 2);
    ck_assert_ptr_nonnull (s_heart);
    bn_heart_set_handlers (s_heart, s_on_new, s_on_stopped, NULL);
    s_new_count = s_stopped_count = s_closed_count = 0;
    s_fake_open (&s_fake, "engine-a");
    s_fake_subscribed (&s_fake);
}

static void
s_teardown (void)
{
    s_fake_close (&s_fake);
    bn_heart_destroy (&s_heart);
    zsock_destroy (&s_ping);
    zsock_destroy (&s_pong);
}

START_TEST (test_usage)
{
    //  the hub expects a new engine's heart
    ck_assert_int_eq (bn_heart_expect (s_heart, "engine-a"), 0);
    bn_heart_beat (s_heart);
    //  the engine's heart echoes the ping
    s_fake_answer (&s_fake);
    s_read_pongs ();
    //  its first good pong makes it a monitored heart
    ck_assert_int_eq (s_new_count, 1);
    ck_assert_str_eq (s_last_new, "engine-a");
    ck_assert_uint_eq (bn_heart_size (s_heart), 1);
    //  then it goes quiet: two misses are allowed, the third stops it
    bn_heart_beat (s_heart);
    bn_heart_beat (s_heart);
    bn_heart_beat (s_heart);
    ck_assert_int_eq (s_stopped_count, 0);
    bn_heart_beat (s_heart);
    ck_assert_int_eq (s_stopped_count, 1);
    ck_assert_str_eq (s_last_stopped, "engine-a");
    ck_assert_uint_eq (bn_heart_size (s_heart), 0);
}
END_TEST

START_TEST (test_answer_resets_misses)
{
    bn_heart_expect (s_heart, "engine-a");
    for (int beat = 0; beat < 8; beat++) {
        bn_heart_beat (s_heart);
        char *ping = s_fake_ping (&s_fake);
        ck_assert_ptr_nonnull (ping);
        //  answer every other beat: never three misses in a row
        if (beat % 2 == 0)
            s_fake_echo (&s_fake, ping);
        zstr_free (&ping);
        s_read_pongs ();
    }
    ck_assert_int_eq (s_new_count, 1);
    ck_assert_int_eq (s_stopped_count, 0);
    ck_assert_uint_eq (bn_heart_size (s_heart), 1);
}
END_TEST

START_TEST (test_ping_text)
{
    //  pings are Python str(float): the first is "0.0", later ones grow
    bn_heart_ping (s_heart);
    char *ping = s_fake_ping (&s_fake);
    ck_assert_str_eq (ping, "0.0");
    zstr_free (&ping);
    zclock_sleep (30);
    bn_heart_beat (s_heart);
    ping = s_fake_ping (&s_fake);
    char *end;
    double value = strtod (ping, &end);
    ck_assert (*end == 0);
    ck_assert (value > 0.02 && value < 100);
    ck_assert_ptr_nonnull (strchr (ping, '.'));
    zstr_free (&ping);
}
END_TEST

START_TEST (test_late_and_stale)
{
    bn_heart_expect (s_heart, "engine-a");
    bn_heart_beat (s_heart);
    char *first = s_fake_ping (&s_fake);
    bn_heart_beat (s_heart);
    char *second = s_fake_ping (&s_fake);
    bn_heart_beat (s_heart);
    char *third = s_fake_ping (&s_fake);
    //  two pings old: ignored
    s_fake_echo (&s_fake, first);
    s_read_pongs ();
    ck_assert_int_eq (s_stat ("stale_pongs"), 1);
    ck_assert_int_eq (s_new_count, 0);
    //  the previous ping still counts
    s_fake_echo (&s_fake, second);
    s_read_pongs ();
    ck_assert_int_eq (s_stat ("late_pongs"), 1);
    ck_assert_int_eq (s_new_count, 1);
    zstr_free (&first);
    zstr_free (&second);
    zstr_free (&third);
}
END_TEST

START_TEST (test_bad_and_unknown)
{
    bn_heart_expect (s_heart, "engine-a");
    bn_heart_beat (s_heart);
    char *ping = s_fake_ping (&s_fake);
    //  three frames instead of two
    zstr_sendx (s_fake.dealer, ping, "extra", NULL);
    //  a heart nobody expects
    s_fake_t stranger;
    s_fake_open (&stranger, "stranger");
    zstr_send (stranger.dealer, ping);
    s_read_pongs ();
    ck_assert_int_eq (s_stat ("bad_pongs"), 1);
    ck_assert_int_eq (s_stat ("unknown"), 1);
    ck_assert_int_eq (s_new_count, 0);
    //  forgotten before it answers: no callback
    bn_heart_forget (s_heart, "engine-a");
    s_fake_echo (&s_fake, ping);
    s_read_pongs ();
    ck_assert_int_eq (s_new_count, 0);
    ck_assert_int_eq (s_stat ("unknown"), 2);
    s_fake_close (&stranger);
    zstr_free (&ping);
}
END_TEST

//  A zloop reader: the fake heart echoes every ping.
static int
s_loop_echo (zloop_t *loop, zsock_t *sock, void *arg)
{
    char *ping = zstr_recv (sock);
    if (ping && arg)
        s_fake_echo ((s_fake_t *)arg, ping);
    zstr_free (&ping);
    return 0;
}

//  A zloop timer: end the loop when *flag is set or time is up.
static int64_t s_loop_end;

static int
s_loop_check (zloop_t *loop, int timer_id, void *arg)
{
    return *(int *)arg || zclock_mono () > s_loop_end ? -1 : 0;
}

START_TEST (test_extra_ping)
{
    //  a 10 s period, yet an expected heart answers within a second
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_heart_attach (s_heart, loop), 0);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    int64_t start = zclock_mono ();
    bn_heart_expect (s_heart, "engine-a");
    s_loop_end = start + 2000;
    zloop_timer (loop, 10, 0, s_loop_check, &s_new_count);
    zloop_start (loop);
    ck_assert_int_eq (s_new_count, 1);
    ck_assert_int_lt (zclock_mono () - start, 1000);
    ck_assert_int_ge (s_stat ("extra_pings"), 1);
    ck_assert_int_eq (s_stat ("beats"), 0);
    bn_heart_destroy (&s_heart);
    zloop_destroy (&loop);
}
END_TEST

START_TEST (test_stops_in_loop)
{
    //  50 ms beats, two misses allowed: a silent heart stops in ~150 ms
    bn_heart_destroy (&s_heart);
    s_heart = bn_heart_new (s_ping, s_pong, 50, 2);
    bn_heart_set_handlers (s_heart, s_on_new, s_on_stopped, NULL);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_heart_attach (s_heart, loop), 0);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    bn_heart_expect (s_heart, "engine-a");
    s_loop_end = zclock_mono () + 2000;
    int timer = zloop_timer (loop, 10, 0, s_loop_check, &s_new_count);
    zloop_start (loop);
    ck_assert_int_eq (s_new_count, 1);
    ck_assert_int_eq (s_stopped_count, 0);
    zloop_timer_end (loop, timer);
    //  stop echoing
    zloop_reader_end (loop, s_fake.sub);
    zloop_reader (loop, s_fake.sub, s_loop_echo, NULL);
    int64_t start = zclock_mono ();
    s_loop_end = start + 2000;
    zloop_timer (loop, 10, 0, s_loop_check, &s_stopped_count);
    zloop_start (loop);
    ck_assert_int_eq (s_stopped_count, 1);
    ck_assert_int_lt (zclock_mono () - start, 1000);
    bn_heart_destroy (&s_heart);
    zloop_destroy (&loop);
}
END_TEST

//  A zloop timer: end the loop when *arg reaches s_loop_want or time is up.
static int s_loop_want;

static int
s_loop_count (zloop_t *loop, int timer_id, void *arg)
{
    return *(int *)arg >= s_loop_want || zclock_mono () > s_loop_end ? -1 : 0;
}

//  Run loop until *count reaches want, at most 5 s.
static void
s_loop_until (zloop_t *loop, int *count, int want)
{
    s_loop_want = want;
    s_loop_end = zclock_mono () + 5000;
    int timer = zloop_timer (loop, 10, 0, s_loop_count, count);
    zloop_start (loop);
    zloop_timer_end (loop, timer);
}

//  A monitor of sock's handshakes; set it up before sock connects.
static zsock_t *
s_handshake_monitor (zsock_t *sock)
{
    char endpoint[64];
    static int count;
    snprintf (endpoint, sizeof endpoint, "inproc://check-heart-monitor-%d",
              count++);
    ck_assert_int_eq (zmq_socket_monitor (zsock_resolve (sock), endpoint,
                                          ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
                      0);
    zsock_t *monitor = zsock_new (ZMQ_PAIR);
    ck_assert_int_eq (zsock_connect (monitor, "%s", endpoint), 0);
    zsock_set_rcvtimeo (monitor, T_TIMEOUT);
    return monitor;
}

//  Wait until sock, watched by monitor, has finished a handshake.
static void
s_wait_handshake (zsock_t *sock, zsock_t **monitor_p)
{
    zmsg_t *event = zmsg_recv (*monitor_p);
    ck_assert_msg (event != NULL, "no handshake");
    zmsg_destroy (&event);
    zmq_socket_monitor (zsock_resolve (sock), NULL, 0);
    zsock_destroy (monitor_p);
}

START_TEST (test_same_name_again)
{
    //  a heart's connection closes, and the heart connects again under the
    //  same name before its old connection is torn down here (its pipe
    //  waits for a read that finds its end): what it says on the new
    //  connection is heard
    bn_heart_expect (s_heart, "engine-a");
    bn_heart_ping (s_heart);
    s_fake_answer (&s_fake);
    s_read_pongs ();
    ck_assert_int_eq (s_new_count, 1);
    ck_assert_int_eq (s_stat ("pongs"), 1);
    s_fake_close (&s_fake);
    s_fake.sub = t_sock (ZMQ_SUB, NULL);
    t_connect (s_fake.sub, s_ping_port);
    s_fake.dealer = t_sock (ZMQ_DEALER, "engine-a");
    zsock_t *monitor = s_handshake_monitor (s_fake.dealer);
    t_connect (s_fake.dealer, s_pong_port);
    s_wait_handshake (s_fake.dealer, &monitor);
    s_fake_subscribed (&s_fake);
    bn_heart_ping (s_heart);
    s_fake_answer (&s_fake);
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (s_stat ("pongs") < 2 && zclock_mono () < end)
        s_read_pongs ();
    ck_assert_int_eq (s_stat ("pongs"), 2);
    ck_assert_int_eq (s_stat ("bad_pongs"), 0);
    ck_assert_int_eq (s_stat ("unknown"), 0);
}
END_TEST

START_TEST (test_closed)
{
    //  a 10 s period: two hearts answer, one's connection closes and it
    //  is reported at once, the other is not
    bn_heart_set_closed_handler (s_heart, s_on_closed);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_heart_attach (s_heart, loop), 0);
    s_fake_t other;
    s_fake_open (&other, "engine-b");
    s_fake_subscribed (&other);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    zloop_reader (loop, other.sub, s_loop_echo, &other);
    bn_heart_expect (s_heart, "engine-a");
    bn_heart_expect (s_heart, "engine-b");
    s_loop_until (loop, &s_new_count, 2);
    ck_assert_int_eq (s_new_count, 2);
    zloop_reader_end (loop, s_fake.sub);
    int64_t start = zclock_mono ();
    s_fake_close (&s_fake);
    s_loop_until (loop, &s_closed_count, 1);
    ck_assert_int_eq (s_closed_count, 1);
    ck_assert_str_eq (s_last_closed, "engine-a");
    ck_assert_int_lt (zclock_mono () - start, 2000);
    ck_assert_int_eq (s_stat ("beats"), 0);
    ck_assert_int_eq (s_stopped_count, 0);

    //  forgotten and expected again: the same name on a new connection
    //  (maybe the descriptor that closed) is reported when that closes
    bn_heart_forget (s_heart, "engine-a");
    s_fake_open (&s_fake, "engine-a");
    s_fake_subscribed (&s_fake);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    bn_heart_expect (s_heart, "engine-a");
    s_loop_until (loop, &s_new_count, 3);
    ck_assert_int_eq (s_new_count, 3);
    zloop_reader_end (loop, s_fake.sub);
    s_fake_close (&s_fake);
    s_loop_until (loop, &s_closed_count, 2);
    ck_assert_int_eq (s_closed_count, 2);
    ck_assert_str_eq (s_last_closed, "engine-a");
    ck_assert_int_eq (s_stat ("closed"), 2);
    ck_assert_int_eq (s_stat ("hearts"), 2);

    zloop_reader_end (loop, other.sub);
    bn_heart_destroy (&s_heart);
    zloop_destroy (&loop);
    s_fake_close (&other);
    s_fake_open (&s_fake, "engine-a"); //  for the teardown
}
END_TEST

//  A zloop reader: a process's shared pong DEALER echoes every ping for
//  each of the hearts behind it, [heart, ping].
static const char *s_shared_hearts[] = {"engine-s1", "engine-s2", NULL};

static int
s_loop_echo_shared (zloop_t *loop, zsock_t *sock, void *arg)
{
    char *ping = zstr_recv (sock);
    for (int i = 0; ping && arg && s_shared_hearts[i]; i++)
        zstr_sendx ((zsock_t *)arg, s_shared_hearts[i], ping, NULL);
    zstr_free (&ping);
    return 0;
}

START_TEST (test_shared)
{
    //  without bn_heart_set_shared, three frames are a bad pong
    bn_heart_expect (s_heart, "engine-s1");
    bn_heart_beat (s_heart);
    char *ping = s_fake_ping (&s_fake);
    zsock_t *dealer = t_sock (ZMQ_DEALER, "bn-shared p1");
    t_connect (dealer, s_pong_port);
    zstr_sendx (dealer, "engine-s1", ping, NULL);
    s_read_pongs ();
    ck_assert_int_eq (s_stat ("bad_pongs"), 1);
    ck_assert_int_eq (s_new_count, 0);
    zstr_free (&ping);
    zsock_destroy (&dealer);
    bn_heart_forget (s_heart, "engine-s1");

    //  with it, the hearts of one process answer on one connection, each
    //  named after its routing id; the connection closing reports them all,
    //  and not a heart of its own connection
    ck_assert_int_eq (bn_heart_set_shared (s_heart, "bn-shared "), 0);
    bn_heart_set_closed_handler (s_heart, s_on_closed);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_heart_attach (s_heart, loop), 0);
    zsock_t *sub = t_sock (ZMQ_SUB, NULL);
    t_connect (sub, s_ping_port);
    dealer = t_sock (ZMQ_DEALER, "bn-shared p2");
    t_connect (dealer, s_pong_port);
    zloop_reader (loop, sub, s_loop_echo_shared, dealer);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    bn_heart_expect (s_heart, "engine-s1");
    bn_heart_expect (s_heart, "engine-s2");
    bn_heart_expect (s_heart, "engine-a");
    s_loop_until (loop, &s_new_count, 3);
    ck_assert_int_eq (s_new_count, 3);
    ck_assert_str_eq (bn_heart_via (s_heart, "engine-s1"), "bn-shared p2");
    ck_assert_str_eq (bn_heart_via (s_heart, "engine-s2"), "bn-shared p2");
    ck_assert_ptr_null (bn_heart_via (s_heart, "engine-a"));

    //  a routing id without the prefix does not name a heart
    zsock_t *other = t_sock (ZMQ_DEALER, "bn-other p3");
    t_connect (other, s_pong_port);
    zstr_sendx (other, "engine-s1", "0.0", NULL);
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (s_stat ("bad_pongs") < 2 && zclock_mono () < end)
        bn_heart_pong_ready (s_heart);
    ck_assert_int_eq (s_stat ("bad_pongs"), 2);
    zsock_destroy (&other);

    zloop_reader_end (loop, sub);
    zsock_destroy (&sub);
    int64_t start = zclock_mono ();
    zsock_destroy (&dealer);
    s_loop_until (loop, &s_closed_count, 2);
    ck_assert_int_eq (s_closed_count, 2);
    ck_assert_int_lt (zclock_mono () - start, 2000);
    ck_assert_int_eq (s_stat ("closed"), 2);
    //  each reported once, and the heart of its own connection beats on
    bn_heart_forget (s_heart, "engine-s1");
    bn_heart_forget (s_heart, "engine-s2");
    ck_assert_uint_eq (bn_heart_size (s_heart), 1);
    ck_assert_int_eq (s_stopped_count, 0);
    bn_heart_destroy (&s_heart);
    zloop_destroy (&loop);
}
END_TEST

//  A one-shot zloop timer that holds the loop for *arg ms, as the process
//  stopped (SIGSTOP) or starved would.
static int
s_loop_hold (zloop_t *loop, int timer_id, void *arg)
{
    zclock_sleep (*(int *)arg);
    return 0;
}

//  A zloop timer: end the loop when a heart stopped, the beats reached
//  s_loop_want or time is up.
static int
s_loop_beats (zloop_t *loop, int timer_id, void *arg)
{
    return s_stopped_count || s_stat ("beats") >= s_loop_want ||
                   zclock_mono () > s_loop_end
               ? -1
               : 0;
}

START_TEST (test_held_loop)
{
    //  50 ms beats, two misses allowed, and the loop held for 600 ms (12
    //  beats): a heart that answers is not stopped by the beats the loop
    //  missed, whose silence was the loop's own, nor by the 20 after
    bn_heart_destroy (&s_heart);
    s_heart = bn_heart_new (s_ping, s_pong, 50, 2);
    bn_heart_set_handlers (s_heart, s_on_new, s_on_stopped, NULL);
    zloop_t *loop = zloop_new ();
    ck_assert_int_eq (bn_heart_attach (s_heart, loop), 0);
    zloop_reader (loop, s_fake.sub, s_loop_echo, &s_fake);
    bn_heart_expect (s_heart, "engine-a");
    s_loop_until (loop, &s_new_count, 1);
    ck_assert_int_eq (s_new_count, 1);
    for (int round = 0; round < 2; round++) {
        int hold = 600;
        zloop_timer (loop, 1, 1, s_loop_hold, &hold);
        s_loop_want = (int)s_stat ("beats") + 20;
        s_loop_end = zclock_mono () + 10000;
        int timer = zloop_timer (loop, 10, 0, s_loop_beats, NULL);
        zloop_start (loop);
        zloop_timer_end (loop, timer);
        ck_assert_int_eq (s_stopped_count, 0);
        ck_assert_int_ge (s_stat ("beats"), s_loop_want);
    }
    //  silent, it still stops after the hold
    zloop_reader_end (loop, s_fake.sub);
    zloop_reader (loop, s_fake.sub, s_loop_echo, NULL);
    s_loop_end = zclock_mono () + 5000;
    zloop_timer (loop, 10, 0, s_loop_check, &s_stopped_count);
    zloop_start (loop);
    ck_assert_int_eq (s_stopped_count, 1);
    bn_heart_destroy (&s_heart);
    zloop_destroy (&loop);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_heart");
    TCase *tc = tcase_create ("heart");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_answer_resets_misses);
    tcase_add_test (tc, test_ping_text);
    tcase_add_test (tc, test_late_and_stale);
    tcase_add_test (tc, test_bad_and_unknown);
    tcase_add_test (tc, test_extra_ping);
    tcase_add_test (tc, test_stops_in_loop);
    tcase_add_test (tc, test_held_loop);
    tcase_add_test (tc, test_same_name_again);
    tcase_add_test (tc, test_closed);
    tcase_add_test (tc, test_shared);
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

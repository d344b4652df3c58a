/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_holdq: the hold queue for engines not connected yet, driven
    by a fake owner whose engines connect when a test says so.  */
#include "bn_holdq.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S_ENGINES 4
#define S_LOG 64
#define S_WAIT 5000 //  ms any wait of a test may take

//  The owner: engines "e0".."e3", a log of what went and what failed.
typedef struct {
    bn_holdq_t *queue;
    bool connected[S_ENGINES];
    int error; //  what a send to an engine not connected returns
    int sent[S_LOG];
    int sent_to[S_LOG];
    size_t nsent;
    int failed[S_LOG];
    bn_holdq_why_t why[S_LOG];
    int fail_error[S_LOG];
    size_t nfailed;
    //  what the callbacks do besides (re-entrant use)
    const char *remove_on_send; //  engine to remove from inside a send
    const char *hold_on_fail;   //  engine to send a new item on a fail
    const char *remove_on_fail; //  engine to remove from inside a fail
} s_owner_t;

static s_owner_t s_owner;
static int s_freed; //  items the queue destroyed

static int
s_index (const char *engine)
{
    ck_assert (engine[0] == 'e' && engine[1] >= '0' &&
               engine[1] < '0' + S_ENGINES && !engine[2]);
    return engine[1] - '0';
}

static int *
s_item (int value)
{
    int *item = malloc (sizeof *item);
    ck_assert_ptr_nonnull (item);
    *item = value;
    return item;
}

static void
s_item_destroy (void **item_p)
{
    free (*item_p);
    *item_p = NULL;
    s_freed++;
}

//  A negative item is one the owner no longer wants sent.
static int
s_send (void *arg, const char *engine, void *item)
{
    s_owner_t *owner = (s_owner_t *)arg;
    int value = *(int *)item;
    if (owner->remove_on_send && streq (owner->remove_on_send, engine)) {
        owner->remove_on_send = NULL;
        bn_holdq_engine_remove (owner->queue, engine);
        return EHOSTUNREACH;
    }
    if (value < 0)
        return 0;
    if (!owner->connected[s_index (engine)])
        return owner->error;
    ck_assert_uint_lt (owner->nsent, S_LOG);
    owner->sent[owner->nsent] = value;
    owner->sent_to[owner->nsent++] = s_index (engine);
    return 0;
}

static void
s_fail (void *arg, const char *engine, void *item, bn_holdq_why_t why,
        int error)
{
    s_owner_t *owner = (s_owner_t *)arg;
    ck_assert_uint_lt (owner->nfailed, S_LOG);
    owner->failed[owner->nfailed] = *(int *)item;
    owner->why[owner->nfailed] = why;
    owner->fail_error[owner->nfailed++] = error;
    if (owner->hold_on_fail) {
        const char *other = owner->hold_on_fail;
        owner->hold_on_fail = NULL;
        bn_holdq_send (owner->queue, other, s_item (100 + *(int *)item));
    }
    if (owner->remove_on_fail) {
        const char *gone = owner->remove_on_fail;
        owner->remove_on_fail = NULL;
        bn_holdq_engine_remove (owner->queue, gone);
    }
}

static zloop_t *s_loop;

static void
s_setup (void)
{
    memset (&s_owner, 0, sizeof s_owner);
    s_owner.error = EHOSTUNREACH;
    s_freed = 0;
    s_owner.queue = bn_holdq_new (60000, s_send, s_fail, &s_owner);
    ck_assert_ptr_nonnull (s_owner.queue);
    bn_holdq_set_destructor (s_owner.queue, s_item_destroy);
    s_loop = zloop_new ();
    ck_assert_int_eq (bn_holdq_attach (s_owner.queue, s_loop), 0);
}

static void
s_teardown (void)
{
    bn_holdq_destroy (&s_owner.queue);
    zloop_destroy (&s_loop);
}

typedef bool (s_cond_fn) (void);

static int
s_on_check (zloop_t *loop, int timer_id, void *arg)
{
    return ((s_cond_fn *)arg) () ? -1 : 0;
}

static int
s_on_give_up (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

//  Run the loop (and so the queue's retry timer) until cond holds, at
//  most S_WAIT ms; true if it does.
static bool
s_run_until (s_cond_fn *cond)
{
    int check = zloop_timer (s_loop, 1, 0, s_on_check, (void *)cond);
    int give_up = zloop_timer (s_loop, S_WAIT, 1, s_on_give_up, NULL);
    if (!cond ())
        zloop_start (s_loop);
    zloop_timer_end (s_loop, check);
    zloop_timer_end (s_loop, give_up);
    return cond ();
}

static bool
s_two_sent (void)
{
    return s_owner.nsent >= 2;
}

static bool
s_nothing_held (void)
{
    return bn_holdq_size (s_owner.queue, NULL) == 0;
}

START_TEST (test_usage)
{
    //  a relay learns of engine e0 before e0's connection is up
    bn_holdq_t *queue = s_owner.queue;
    ck_assert_int_eq (bn_holdq_engine_add (queue, "e0"), 0);
    ck_assert (bn_holdq_waits (queue, "e0"));
    //  its requests wait, in order
    ck_assert_int_eq (bn_holdq_send (queue, "e0", s_item (1)), 1);
    ck_assert_int_eq (bn_holdq_send (queue, "e0", s_item (2)), 1);
    ck_assert_uint_eq (bn_holdq_size (queue, "e0"), 2);
    ck_assert_uint_eq (bn_holdq_size (queue, NULL), 2);
    bn_holdq_retry (queue);
    ck_assert_uint_eq (s_owner.nsent, 0);
    //  e0 connects: the timer's next retry sends both, in order
    s_owner.connected[0] = true;
    ck_assert (s_run_until (s_two_sent));
    ck_assert_int_eq (s_owner.sent[0], 1);
    ck_assert_int_eq (s_owner.sent[1], 2);
    ck_assert_uint_eq (bn_holdq_size (queue, NULL), 0);
    ck_assert_int_eq (s_freed, 2);
    //  from then on a send goes at once
    ck_assert_int_eq (bn_holdq_send (queue, "e0", s_item (3)), 0);
    ck_assert_uint_eq (s_owner.nsent, 3);
    ck_assert_uint_eq (s_owner.nfailed, 0);
    bn_holdq_engine_remove (queue, "e0");
    ck_assert (!bn_holdq_waits (queue, "e0"));
    bn_holdq_destroy (&s_owner.queue);
    ck_assert_ptr_null (s_owner.queue);
    bn_holdq_destroy (&s_owner.queue);
}
END_TEST

//  What comes for an engine holding items waits behind them, even once
//  the engine could take it: the engine gets its requests in order.
START_TEST (test_order)
{
    bn_holdq_t *queue = s_owner.queue;
    bn_holdq_engine_add (queue, "e0");
    bn_holdq_engine_add (queue, "e1");
    bn_holdq_send (queue, "e0", s_item (1));
    bn_holdq_send (queue, "e1", s_item (10));
    s_owner.connected[0] = true;
    ck_assert_int_eq (bn_holdq_send (queue, "e0", s_item (2)), 1);
    ck_assert_uint_eq (s_owner.nsent, 0);
    bn_holdq_retry (queue);
    ck_assert_uint_eq (s_owner.nsent, 2);
    ck_assert_int_eq (s_owner.sent[0], 1);
    ck_assert_int_eq (s_owner.sent[1], 2);
    //  e1 still waits; an item the owner gave up on is dropped unsent
    ck_assert_uint_eq (bn_holdq_size (queue, "e1"), 1);
    bn_holdq_send (queue, "e1", s_item (-1));
    bn_holdq_send (queue, "e1", s_item (11));
    s_owner.connected[1] = true;
    bn_holdq_retry (queue);
    ck_assert_uint_eq (s_owner.nsent, 4);
    ck_assert_int_eq (s_owner.sent[2], 10);
    ck_assert_int_eq (s_owner.sent[3], 11);
    ck_assert_int_eq (s_owner.sent_to[3], 1);
    ck_assert_int_eq (s_freed, 5);
    ck_assert_uint_eq (s_owner.nfailed, 0);
}
END_TEST

//  An engine that does not connect within its grace: what it holds fails,
//  in order, with the error of the last try.
START_TEST (test_grace_ends)
{
    bn_holdq_t *queue = s_owner.queue;
    bn_holdq_set_grace (queue, 40);
    bn_holdq_engine_add (queue, "e2");
    ck_assert_int_eq (bn_holdq_send (queue, "e2", s_item (1)), 1);
    ck_assert_int_eq (bn_holdq_send (queue, "e2", s_item (2)), 1);
    ck_assert (s_run_until (s_nothing_held));
    ck_assert_uint_eq (s_owner.nfailed, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq (s_owner.failed[i], i + 1);
        ck_assert_int_eq (s_owner.why[i], BN_HOLDQ_EXPIRED);
        ck_assert_int_eq (s_owner.fail_error[i], EHOSTUNREACH);
    }
    ck_assert_int_eq (s_freed, 2);
    //  past the grace, nothing is held: a send that finds no route fails
    ck_assert (!bn_holdq_waits (queue, "e2"));
    ck_assert_int_eq (bn_holdq_send (queue, "e2", s_item (3)), -1);
    ck_assert_int_eq (s_owner.why[2], BN_HOLDQ_EXPIRED);
    //  added again (it registered again): a new grace
    bn_holdq_engine_add (queue, "e2");
    ck_assert (bn_holdq_waits (queue, "e2"));
    ck_assert_int_eq (bn_holdq_send (queue, "e2", s_item (4)), 1);
    ck_assert_uint_eq (s_owner.nsent, 0);
}
END_TEST

//  A removed engine's items fail at once; a send to an engine never added,
//  or one that fails for another reason than "no route yet", is not held.
START_TEST (test_removed_and_errors)
{
    bn_holdq_t *queue = s_owner.queue;
    bn_holdq_engine_add (queue, "e0");
    bn_holdq_send (queue, "e0", s_item (1));
    bn_holdq_send (queue, "e0", s_item (2));
    bn_holdq_engine_remove (queue, "e0");
    ck_assert_uint_eq (s_owner.nfailed, 2);
    ck_assert_int_eq (s_owner.failed[0], 1);
    ck_assert_int_eq (s_owner.failed[1], 2);
    ck_assert_int_eq (s_owner.why[0], BN_HOLDQ_REMOVED);
    ck_assert_int_eq (s_owner.fail_error[0], 0);
    ck_assert_uint_eq (bn_holdq_size (queue, NULL), 0);
    bn_holdq_engine_remove (queue, "e0");

    ck_assert (!bn_holdq_waits (queue, "e3"));
    ck_assert_int_eq (bn_holdq_send (queue, "e3", s_item (3)), -1);
    ck_assert_int_eq (s_owner.why[2], BN_HOLDQ_ERROR);
    ck_assert_int_eq (s_owner.fail_error[2], EHOSTUNREACH);

    bn_holdq_engine_add (queue, "e1");
    s_owner.error = EPROTO;
    ck_assert_int_eq (bn_holdq_send (queue, "e1", s_item (4)), -1);
    ck_assert_int_eq (s_owner.why[3], BN_HOLDQ_ERROR);
    ck_assert_int_eq (s_owner.fail_error[3], EPROTO);
    //  EAGAIN (a pipe not ready) counts as not connected yet
    s_owner.error = EAGAIN;
    ck_assert_int_eq (bn_holdq_send (queue, "e1", s_item (5)), 1);
    ck_assert_int_eq (s_freed, 4);
}
END_TEST

//  At most BN_HOLDQ_MAX items wait for one engine.
START_TEST (test_bounded)
{
    bn_holdq_t *queue = s_owner.queue;
    bn_holdq_engine_add (queue, "e1");
    for (int i = 0; i < BN_HOLDQ_MAX; i++)
        ck_assert_int_eq (bn_holdq_send (queue, "e1", s_item (i)), 1);
    ck_assert_int_eq (bn_holdq_send (queue, "e1", s_item (-5)), -1);
    ck_assert_uint_eq (s_owner.nfailed, 1);
    ck_assert_int_eq (s_owner.why[0], BN_HOLDQ_FULL);
    ck_assert_uint_eq (bn_holdq_size (queue, "e1"), BN_HOLDQ_MAX);
    //  destroying the queue frees what it holds without failing it
    bn_holdq_destroy (&s_owner.queue);
    ck_assert_int_eq (s_freed, BN_HOLDQ_MAX + 1);
    ck_assert_uint_eq (s_owner.nfailed, 1);
}
END_TEST

//  Without a loop to retry them nothing is held: sends that find no route
//  fail at once.
START_TEST (test_no_loop)
{
    bn_holdq_t *queue = bn_holdq_new (60000, s_send, s_fail, &s_owner);
    bn_holdq_set_destructor (queue, s_item_destroy);
    bn_holdq_engine_add (queue, "e0");
    ck_assert (!bn_holdq_waits (queue, "e0"));
    ck_assert_int_eq (bn_holdq_send (queue, "e0", s_item (1)), -1);
    ck_assert_int_eq (s_owner.why[0], BN_HOLDQ_EXPIRED);
    bn_holdq_destroy (&queue);
    ck_assert_int_eq (s_freed, 1);
}
END_TEST

//  The owner's callbacks may hold items and remove engines while a retry
//  pass runs.
START_TEST (test_reentrant)
{
    bn_holdq_t *queue = s_owner.queue;
    bn_holdq_set_grace (queue, 30);
    bn_holdq_engine_add (queue, "e0");
    bn_holdq_engine_add (queue, "e1");
    bn_holdq_engine_add (queue, "e3");
    bn_holdq_send (queue, "e0", s_item (1));
    bn_holdq_send (queue, "e0", s_item (2));
    bn_holdq_send (queue, "e1", s_item (3));
    //  when e0's first item fails, the owner places it on e3 (connected)
    //  and removes e1, whose item fails then
    s_owner.connected[3] = true;
    s_owner.hold_on_fail = "e3";
    s_owner.remove_on_fail = "e1";
    ck_assert (s_run_until (s_nothing_held));
    ck_assert_uint_eq (s_owner.nfailed, 3);
    ck_assert_int_eq (s_owner.failed[0], 1);
    ck_assert_int_eq (s_owner.why[0], BN_HOLDQ_EXPIRED);
    ck_assert_int_eq (s_owner.failed[1], 3);
    ck_assert_int_eq (s_owner.why[1], BN_HOLDQ_REMOVED);
    ck_assert_int_eq (s_owner.failed[2], 2);
    ck_assert_int_eq (s_owner.why[2], BN_HOLDQ_EXPIRED);
    ck_assert_uint_eq (s_owner.nsent, 1);
    ck_assert_int_eq (s_owner.sent[0], 101);
    ck_assert_int_eq (s_owner.sent_to[0], 3);
    ck_assert_int_eq (s_freed, 4);

    //  a send that removes its own engine: the rest of what it held fails
    bn_holdq_set_grace (queue, 60000);
    bn_holdq_engine_add (queue, "e2");
    bn_holdq_send (queue, "e2", s_item (7));
    bn_holdq_send (queue, "e2", s_item (8));
    s_owner.remove_on_send = "e2";
    bn_holdq_retry (queue);
    ck_assert_uint_eq (s_owner.nfailed, 5);
    ck_assert_int_eq (s_owner.failed[3], 7);
    ck_assert_int_eq (s_owner.why[3], BN_HOLDQ_REMOVED);
    ck_assert_int_eq (s_owner.failed[4], 8);
    ck_assert_uint_eq (bn_holdq_size (queue, NULL), 0);
    ck_assert (!bn_holdq_waits (queue, "e2"));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_holdq");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 20);
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_order);
    tcase_add_test (tc, test_grace_ends);
    tcase_add_test (tc, test_removed_and_errors);
    tcase_add_test (tc, test_bounded);
    tcase_add_test (tc, test_no_loop);
    tcase_add_test (tc, test_reentrant);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

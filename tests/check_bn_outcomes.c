/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_outcomes: the memory of finished msg_ids: outcomes and where
    read back, the oldest forgotten past the bound, one added again made
    the newest, removals anywhere (against a plain hash table through
    random steps), and what an outcome costs.  */
#include "bn_outcomes.h"

#include <check.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
s_id (char *buf, size_t size, int n)
{
    snprintf (buf, size, "9c0ab3d1-7e2f-4c55-a1b0-%012d_4242_%d", n, n);
}

START_TEST (test_usage)
{
    bn_outcomes_t *outcomes = bn_outcomes_new (10);
    ck_assert_ptr_nonnull (outcomes);
    static const char engine[] = "engine-a";
    const void *where = NULL;
    ck_assert_int_eq (bn_outcomes_get (outcomes, "a", &where), BN_OUTCOME_NONE);
    ck_assert (!bn_outcomes_remove (outcomes, "a"));
    ck_assert_int_eq (
        bn_outcomes_add (outcomes, "a", BN_OUTCOME_SUCCEEDED, engine), 0);
    ck_assert_int_eq (bn_outcomes_add (outcomes, "b", BN_OUTCOME_FAILED, NULL),
                      0);
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 2);
    ck_assert_int_eq (bn_outcomes_get (outcomes, "a", &where),
                      BN_OUTCOME_SUCCEEDED);
    ck_assert_ptr_eq (where, engine);
    ck_assert_int_eq (bn_outcomes_get (outcomes, "b", &where),
                      BN_OUTCOME_FAILED);
    ck_assert_ptr_null (where);
    ck_assert_int_eq (bn_outcomes_get (outcomes, "c", NULL), BN_OUTCOME_NONE);
    //  a prefix or an extension of a msg_id is another msg_id
    ck_assert_int_eq (bn_outcomes_get (outcomes, "", NULL), BN_OUTCOME_NONE);
    ck_assert_int_eq (bn_outcomes_get (outcomes, "aa", NULL), BN_OUTCOME_NONE);
    //  finished again: the new outcome replaces the old
    ck_assert_int_eq (bn_outcomes_add (outcomes, "a", BN_OUTCOME_FAILED, NULL),
                      0);
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 2);
    ck_assert_int_eq (bn_outcomes_get (outcomes, "a", &where),
                      BN_OUTCOME_FAILED);
    ck_assert_ptr_null (where);
    ck_assert (bn_outcomes_remove (outcomes, "a"));
    ck_assert (!bn_outcomes_remove (outcomes, "a"));
    ck_assert_int_eq (bn_outcomes_get (outcomes, "a", NULL), BN_OUTCOME_NONE);
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 1);
    bn_outcomes_destroy (&outcomes);
    ck_assert_ptr_null (outcomes);
    bn_outcomes_destroy (&outcomes);
}
END_TEST

//  Past the bound the oldest go, in finishing order: one finished again
//  counts from its last finish.
START_TEST (test_bound)
{
    bn_outcomes_t *outcomes = bn_outcomes_new (100);
    char id[64];
    for (int n = 0; n < 100; n++) {
        s_id (id, sizeof id, n);
        ck_assert_int_eq (
            bn_outcomes_add (outcomes, id, BN_OUTCOME_SUCCEEDED, NULL), 0);
    }
    //  0 finishes again: now the newest
    s_id (id, sizeof id, 0);
    ck_assert_int_eq (bn_outcomes_add (outcomes, id, BN_OUTCOME_FAILED, NULL),
                      0);
    for (int n = 100; n < 110; n++) {
        s_id (id, sizeof id, n);
        ck_assert_int_eq (
            bn_outcomes_add (outcomes, id, BN_OUTCOME_SUCCEEDED, NULL), 0);
        ck_assert_uint_eq (bn_outcomes_size (outcomes), 100);
    }
    s_id (id, sizeof id, 0);
    ck_assert_int_eq (bn_outcomes_get (outcomes, id, NULL), BN_OUTCOME_FAILED);
    //  1..10 went: the ten oldest
    for (int n = 1; n < 110; n++) {
        s_id (id, sizeof id, n);
        ck_assert_int_eq (bn_outcomes_get (outcomes, id, NULL),
                          n <= 10 ? BN_OUTCOME_NONE : BN_OUTCOME_SUCCEEDED);
    }
    //  a smaller bound keeps the newest
    bn_outcomes_set_max (outcomes, 5);
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 5);
    for (int n = 0; n < 110; n++) {
        s_id (id, sizeof id, n);
        ck_assert_int_eq (bn_outcomes_get (outcomes, id, NULL),
                          n >= 105 ? BN_OUTCOME_SUCCEEDED : BN_OUTCOME_NONE);
    }
    bn_outcomes_set_max (outcomes, 0);
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 1);
    ck_assert_int_eq (bn_outcomes_get (outcomes, id, NULL),
                      BN_OUTCOME_SUCCEEDED);
    bn_outcomes_destroy (&outcomes);
}
END_TEST

//  Random adds and removals agree with a hash table of strings kept
//  beside them, the bound large enough that nothing is forgotten, then
//  small enough that the ring wraps with holes in it.
START_TEST (test_random)
{
    for (int round = 0; round < 2; round++) {
        size_t max = round == 0 ? 100000 : 700;
        bn_outcomes_t *outcomes = bn_outcomes_new (max);
        zhashx_t *model = zhashx_new ();
        zlistx_t *order = zlistx_new (); //  msg_ids, oldest first
        zlistx_set_destructor (order, (zlistx_destructor_fn *)zstr_free);
        zlistx_set_comparator (order, (zlistx_comparator_fn *)strcmp);
        unsigned seed = 7;
        char id[64];
        for (int step = 0; step < 20000; step++) {
            s_id (id, sizeof id, (int)(rand_r (&seed) % 2000));
            if (rand_r (&seed) % 4 == 0) {
                bool had = zhashx_lookup (model, id) != NULL;
                bool removed = bn_outcomes_remove (outcomes, id);
                ck_assert (!removed || had);
                if (round == 0)
                    ck_assert_int_eq (removed, had);
                if (had) {
                    zhashx_delete (model, id);
                    zlistx_delete (order, zlistx_find (order, id));
                }
            } else {
                bn_outcome_t outcome = rand_r (&seed) % 2 ? BN_OUTCOME_SUCCEEDED
                                                          : BN_OUTCOME_FAILED;
                ck_assert_int_eq (bn_outcomes_add (outcomes, id, outcome, NULL),
                                  0);
                if (zhashx_lookup (model, id))
                    zlistx_delete (order, zlistx_find (order, id));
                zhashx_update (model, id, (void *)(intptr_t)outcome);
                zlistx_add_end (order, strdup (id));
                //  the model forgets at most as much as max asks; holes
                //  in the ring may make the outcomes forget sooner
                while (zlistx_size (order) > max) {
                    char *oldest = zlistx_first (order);
                    zhashx_delete (model, oldest);
                    zlistx_delete (order, zlistx_cursor (order));
                }
            }
            ck_assert_uint_le (bn_outcomes_size (outcomes), max);
        }
        //  every outcome held is the model's; with the large bound every
        //  one of the model's is held
        size_t held = 0;
        for (int n = 0; n < 2000; n++) {
            s_id (id, sizeof id, n);
            bn_outcome_t got = bn_outcomes_get (outcomes, id, NULL);
            bn_outcome_t want =
                (bn_outcome_t)(intptr_t)zhashx_lookup (model, id);
            if (got != BN_OUTCOME_NONE) {
                ck_assert_int_eq (got, want);
                held++;
            } else if (round == 0)
                ck_assert_int_eq (want, BN_OUTCOME_NONE);
        }
        ck_assert_uint_eq (held, bn_outcomes_size (outcomes));
        if (round == 0)
            ck_assert_uint_eq (held, zhashx_size (model));
        zlistx_destroy (&order);
        zhashx_destroy (&model);
        bn_outcomes_destroy (&outcomes);
    }
}
END_TEST

//  A million outcomes take at most 48 bytes each.
START_TEST (test_bytes)
{
    bn_outcomes_t *outcomes = bn_outcomes_new (1000000);
    size_t empty = bn_outcomes_bytes (outcomes);
    ck_assert_uint_lt (empty, 256);
    char id[64];
    for (int n = 0; n < 1000000; n++) {
        s_id (id, sizeof id, n);
        bn_outcomes_add (outcomes, id, BN_OUTCOME_SUCCEEDED, NULL);
    }
    ck_assert_uint_eq (bn_outcomes_size (outcomes), 1000000);
    ck_assert_uint_le (bn_outcomes_bytes (outcomes), 48 * 1000000 + empty);
    s_id (id, sizeof id, 0);
    ck_assert_int_eq (bn_outcomes_get (outcomes, id, NULL),
                      BN_OUTCOME_SUCCEEDED);
    bn_outcomes_destroy (&outcomes);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_outcomes");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_bound);
    tcase_add_test (tc, test_random);
    tcase_add_test (tc, test_bytes);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_heap: the indexed binary heap: items out in order, removed
    or moved from anywhere, and the best item a filter takes.  */
#include "bn_heap.h"

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct {
    int key;      //  smaller first
    int seq;      //  then older first
    size_t place; //  in the heap
} s_item_t;

static bool
s_before (void *arg, const void *a, const void *b)
{
    const s_item_t *x = a, *y = b;
    return x->key != y->key ? x->key < y->key : x->seq < y->seq;
}

static bn_heap_t *
s_heap (void)
{
    bn_heap_t *heap = bn_heap_new (s_before, NULL, offsetof (s_item_t, place));
    ck_assert_ptr_nonnull (heap);
    return heap;
}

static void
s_init (s_item_t *items, size_t count, unsigned *seed)
{
    for (size_t i = 0; i < count; i++)
        items[i] = (s_item_t){.key = (int)(rand_r (seed) % 50),
                              .seq = (int)i,
                              .place = BN_HEAP_NONE};
}

//  Take every item out; assert they come in order and count them.
static size_t
s_drain (bn_heap_t *heap)
{
    size_t count = 0;
    s_item_t *last = NULL, *item;
    while ((item = bn_heap_first (heap))) {
        if (last)
            ck_assert (!s_before (NULL, item, last));
        bn_heap_remove (heap, item);
        ck_assert (!bn_heap_has (heap, item));
        ck_assert_uint_eq (item->place, BN_HEAP_NONE);
        last = item;
        count++;
    }
    return count;
}

START_TEST (test_usage)
{
    bn_heap_t *heap = s_heap ();
    s_item_t a = {3, 0, BN_HEAP_NONE}, b = {1, 1, BN_HEAP_NONE},
             c = {2, 2, BN_HEAP_NONE};
    ck_assert_ptr_null (bn_heap_first (heap));
    ck_assert_int_eq (bn_heap_insert (heap, &a), 0);
    ck_assert_int_eq (bn_heap_insert (heap, &b), 0);
    ck_assert_int_eq (bn_heap_insert (heap, &c), 0);
    ck_assert_uint_eq (bn_heap_size (heap), 3);
    ck_assert_ptr_eq (bn_heap_first (heap), &b);
    //  b's key grows: c comes first
    b.key = 9;
    bn_heap_update (heap, &b);
    ck_assert_ptr_eq (bn_heap_first (heap), &c);
    bn_heap_remove (heap, &c);
    ck_assert_ptr_eq (bn_heap_first (heap), &a);
    ck_assert (!bn_heap_has (heap, &c));
    ck_assert (bn_heap_has (heap, &b));
    ck_assert_uint_eq (s_drain (heap), 2);
    bn_heap_destroy (&heap);
    ck_assert_ptr_null (heap);
}
END_TEST

//  Random inserts, removals and key changes keep the order.
START_TEST (test_random)
{
    enum { N = 500 };
    s_item_t items[N];
    unsigned seed = 7;
    s_init (items, N, &seed);
    bn_heap_t *heap = s_heap ();
    ck_assert_int_eq (bn_heap_reserve (heap, N), 0);
    size_t in = 0;
    for (int round = 0; round < 4000; round++) {
        s_item_t *item = &items[rand_r (&seed) % N];
        int what = rand_r (&seed) % 3;
        if (!bn_heap_has (heap, item)) {
            ck_assert_int_eq (bn_heap_insert (heap, item), 0);
            in++;
        } else if (what == 0) {
            bn_heap_remove (heap, item);
            in--;
        } else {
            item->key = (int)(rand_r (&seed) % 50);
            bn_heap_update (heap, item);
        }
        ck_assert_uint_eq (bn_heap_size (heap), in);
        //  the first is the least of those in
        s_item_t *first = bn_heap_first (heap);
        for (size_t i = 0; first && i < N; i++)
            if (bn_heap_has (heap, &items[i]))
                ck_assert (!s_before (NULL, &items[i], first));
    }
    ck_assert_uint_eq (s_drain (heap), in);
    bn_heap_destroy (&heap);
}
END_TEST

//  Refuses items whose seq is odd, counting what it was asked.
static bool
s_even (void *arg, const void *item)
{
    (*(int *)arg)++;
    return ((const s_item_t *)item)->seq % 2 == 0;
}

static bool
s_none (void *arg, const void *item)
{
    (*(int *)arg)++;
    return false;
}

START_TEST (test_find)
{
    enum { N = 200 };
    s_item_t items[N];
    unsigned seed = 3;
    s_init (items, N, &seed);
    bn_heap_t *heap = s_heap ();
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq (bn_heap_insert (heap, &items[i]), 0);
    //  the best even item, as a scan of all finds it
    s_item_t *best = NULL;
    size_t better = 0; //  odd items before it
    for (size_t i = 0; i < N; i++)
        if (items[i].seq % 2 == 0 &&
            (!best || s_before (NULL, &items[i], best)))
            best = &items[i];
    for (size_t i = 0; i < N; i++)
        if (items[i].seq % 2 && s_before (NULL, &items[i], best))
            better++;
    int asked = 0;
    ck_assert_ptr_eq (bn_heap_find (heap, s_even, &asked), best);
    ck_assert_int_eq (asked, (int)better + 1);
    //  nothing taken: every item asked once
    asked = 0;
    ck_assert_ptr_null (bn_heap_find (heap, s_none, &asked));
    ck_assert_int_eq (asked, N);
    //  the heap is as it was
    ck_assert_uint_eq (s_drain (heap), N);
    asked = 0;
    ck_assert_ptr_null (bn_heap_find (heap, s_even, &asked));
    ck_assert_int_eq (asked, 0);
    bn_heap_destroy (&heap);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_heap");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_random);
    tcase_add_test (tc, test_find);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

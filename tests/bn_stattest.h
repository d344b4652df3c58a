/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_stattest: reading the controller's counters in tests, whether they
    came from its STATS actor command or from a client's bn_stats_request
    (the same object: one object of counters per actor).  */
#ifndef BN_STATTEST_H_INCLUDED
#define BN_STATTEST_H_INCLUDED

#include <check.h>
#include <jansson.h>

//  One counter of an actor, asserted to be there, e.g.
//  t_counter (stats, "mux", "received").
static inline json_int_t
t_counter (json_t *stats, const char *actor, const char *counter)
{
    json_t *value = json_object_get (json_object_get (stats, actor), counter);
    ck_assert_msg (json_is_integer (value), "no counter %s %s", actor, counter);
    return json_integer_value (value);
}

//  Assert stats has the counters of every actor of a controller, and of
//  nothing else, and that its broadcast tree lists nodes nodes.
static inline void
t_assert_actors (json_t *stats, size_t nodes)
{
    static const char *actors[] = {"records", "hub",   "heart", "mux",
                                   "control", "iopub", "task",  "broadcast"};
    size_t count = sizeof actors / sizeof actors[0];
    ck_assert_uint_eq (json_object_size (stats), count);
    for (size_t i = 0; i < count; i++)
        ck_assert_msg (json_is_object (json_object_get (stats, actors[i])),
                       "no counters of %s", actors[i]);
    ck_assert_uint_eq (json_array_size (json_object_get (
                           json_object_get (stats, "broadcast"), "nodes")),
                       nodes);
}

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_floor: floor.ZmqFloor, the bare ZeroMQ round trip to N echo
    sockets that every banyan figure is stated against: one message to
    each at a time (time_echo), M to each in flight (time_many), or the
    payload one way with an empty answer (time_push); and
    floor.ZmqRelayFloor, the same three through a bare relay process, the
    floor of a relay such as the mux.  */
#include "bn_benchfloor.h"
#include "bn_suites.h"

#include <stdlib.h>

//  The payload of time_many, as the many suites' echo
#define S_MANY_BYTES 1000

static int
s_setup (bn_benchcase_t *c, bool echo, bool relay)
{
    int engines = (int)bn_benchcase_long (c, "engines", 1);
    char err[256] = "";
    bn_benchfloor_t *floor =
        bn_benchfloor_new (engines, bn_benchcase_per_process (c, engines), echo,
                           relay, 60, err, sizeof err);
    if (!floor)
        return bn_benchcase_fail (c, "%s", *err ? err : "out of memory");
    c->state = floor;
    return BN_BENCH_OK;
}

int
bn_suite_floor_setup (bn_benchcase_t *c)
{
    return s_setup (c, true, false);
}

int
bn_suite_floor_push_setup (bn_benchcase_t *c)
{
    return s_setup (c, false, false);
}

int
bn_suite_floor_relay_setup (bn_benchcase_t *c)
{
    return s_setup (c, true, true);
}

int
bn_suite_floor_relay_push_setup (bn_benchcase_t *c)
{
    return s_setup (c, false, true);
}

int
bn_suite_floor_run (bn_benchcase_t *c, double *value)
{
    size_t bytes = (size_t)bn_benchcase_long (c, "bytes", 0);
    if (bn_benchfloor_round (c->state, bytes, 1, 60) != 0)
        return bn_benchcase_fail (c, "no echo within 60 s");
    return BN_BENCH_OK;
}

int
bn_suite_floor_many_run (bn_benchcase_t *c, double *value)
{
    int messages = (int)bn_benchcase_long (c, "messages", 1);
    if (messages < 1)
        return bn_benchcase_fail (c, "messages must be 1 or more");
    if (bn_benchfloor_round (c->state, S_MANY_BYTES, messages, 60) != 0)
        return bn_benchcase_fail (c, "no echo within 60 s");
    return BN_BENCH_OK;
}

void
bn_suite_floor_teardown (bn_benchcase_t *c)
{
    bn_benchfloor_t *floor = c->state;
    bn_benchfloor_destroy (&floor);
    c->state = NULL;
}

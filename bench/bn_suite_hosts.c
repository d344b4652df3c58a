/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_hosts: the multi-host suites: a cluster on test hosts
    (network namespaces made by tests/hosts/hosts.sh, a host node and its
    engines on each, bn_benchhosts): the round trip of an echo through the
    tree and through the mux, the payload bytes that cross each host's
    link for one broadcast (tree against mux), registration time, and the
    controller's open files and memory and the host nodes' memory. Where
    hosts cannot be made (not root) every case is skipped, saying why.  */
#include "bn_benchhosts.h"
#include "bn_procinfo.h"
#include "bn_suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Seconds a call may take before the case fails
#define S_CALL_TIMEOUT 120.0
//  Most engines on one host (banyan-engine --count): the large cell is
//  10 hosts x 1,000
#define S_PER_HOST_MAX 1000
//  Engines per host of the payload suite (--quick: S_PAYLOAD_QUICK)
#define S_PAYLOAD_PER_HOST 16
#define S_PAYLOAD_QUICK 2
//  Bytes of the echo, and of the payload suite's broadcast
#define S_ECHO_BYTES 1000
#define S_PAYLOAD_BYTES 1000000

typedef struct {
    bn_benchhosts_t *hosts; //  the case's hosts and cluster
    bn_view_t *view;        //  the view measured
    bn_value_t *args;       //  (payload,)
    int count;              //  hosts
    size_t engines;         //  engines in all
    size_t bytes;           //  payload size
} s_state_t;

//  The case's hosts and engines in all; skips a cell the grid holds but
//  that does not divide or is past S_PER_HOST_MAX engines a host.
static int
s_shape (bn_benchcase_t *c, int *hosts, int *per_host)
{
    *hosts = (int)bn_benchcase_long (c, "hosts", 1);
    *per_host = 0;
    long engines = bn_benchcase_long (c, "engines", 0);
    if (engines == 0)
        *per_host = c->quick ? S_PAYLOAD_QUICK : S_PAYLOAD_PER_HOST;
    else if (*hosts < 1 || engines % *hosts != 0 ||
             engines / *hosts > S_PER_HOST_MAX)
        return bn_benchcase_skip (c,
                                  "%ld engines on %d hosts: not a whole "
                                  "number of at most %d a host",
                                  engines, *hosts, S_PER_HOST_MAX);
    else
        *per_host = (int)(engines / *hosts);
    return BN_BENCH_OK;
}

//  Time to start hosts, host nodes and engines: generous, the machine
//  may be loaded.
static double
s_start_timeout (int hosts, int per_host)
{
    return 120 + hosts * per_host / 50.0;
}

//  Start the case's hosts and make a view of kind with a payload of
//  bytes.
static int
s_setup (bn_benchcase_t *c, bn_view_kind_t kind, size_t bytes)
{
    int hosts, per_host;
    int rc = s_shape (c, &hosts, &per_host);
    if (rc != BN_BENCH_OK)
        return rc;
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    self->count = hosts;
    self->engines = (size_t)hosts * (size_t)per_host;
    self->bytes = bytes;
    self->hosts = bn_benchhosts_new (c, hosts, per_host);
    if (!self->hosts)
        return bn_benchcase_fail (c, "out of memory");
    rc = bn_benchhosts_start (self->hosts, s_start_timeout (hosts, per_host));
    if (rc != BN_BENCH_OK)
        return rc;
    self->view = bn_view_new (bn_benchhosts_client (self->hosts), kind);
    if (!self->view)
        return bn_benchcase_fail (c, "out of memory");
    //  the echo writes nothing: its output, none, comes in the reply
    if (kind == BN_VIEW_BROADCAST &&
        (bn_view_set_coalescing (self->view, true) != 0 ||
         bn_view_set_output_in_reply (self->view, true) != 0))
        return bn_benchcase_fail (c, "broadcast view options");
    char *payload = malloc (bytes ? bytes : 1);
    self->args = bn_value_new_list ();
    if (!payload || !self->args) {
        free (payload);
        return bn_benchcase_fail (c, "out of memory");
    }
    for (size_t i = 0; i < bytes; i++)
        payload[i] = (char)('a' + i % 26);
    bn_value_append (self->args, bn_value_new_bytes (payload, bytes));
    free (payload);
    return BN_BENCH_OK;
}

int
bn_suite_hosts_coalescing_setup (bn_benchcase_t *c)
{
    return s_setup (c, BN_VIEW_BROADCAST, S_ECHO_BYTES);
}

int
bn_suite_hosts_direct_setup (bn_benchcase_t *c)
{
    return s_setup (c, BN_VIEW_DIRECT, S_ECHO_BYTES);
}

//  The payload suite: 'tree' (coalescing broadcast) or 'mux' (direct).
int
bn_suite_hosts_payload_setup (bn_benchcase_t *c)
{
    char view[16] = "";
    bn_benchcase_str (c, "view", view, sizeof view);
    if (strcmp (view, "tree") == 0)
        return s_setup (c, BN_VIEW_BROADCAST, S_PAYLOAD_BYTES);
    if (strcmp (view, "mux") == 0)
        return s_setup (c, BN_VIEW_DIRECT, S_PAYLOAD_BYTES);
    return bn_benchcase_fail (c, "unknown view %s", view);
}

void
bn_suite_hosts_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    bn_view_destroy (&self->view);
    bn_value_destroy (&self->args);
    bn_benchhosts_destroy (&self->hosts);
    free (self);
    c->state = NULL;
}

//  Call function with the payload on every engine and check that every
//  engine answered: echo's result is the payload itself.
static int
s_call (bn_benchcase_t *c, const char *function)
{
    s_state_t *self = c->state;
    bn_result_t *result = NULL;
    int rc = bn_view_apply (self->view, function, self->args, NULL, &result);
    if (rc != 0)
        return bn_benchcase_fail (c, "apply %s: %s", function,
                                  bn_strerror (rc));
    rc = bn_result_get (result, S_CALL_TIMEOUT);
    size_t count = rc == 0 ? bn_result_count (result) : 0;
    if (rc == 0 && count != self->engines)
        rc = bn_benchcase_fail (c, "%zu results from %zu engines", count,
                                self->engines);
    else if (rc != 0) {
        const char *ename = NULL;
        for (size_t i = 0; i < bn_result_count (result) && !ename; i++)
            if (bn_result_status (result, i) != 0)
                ename = bn_result_ename (result, i);
        rc = bn_benchcase_fail (c, "%s%s%s", bn_strerror (rc),
                                ename ? ": " : "", ename ? ename : "");
    } else if (strcmp (function, "echo") == 0)
        for (size_t i = 0; i < count && rc == 0; i++)
            if (bn_value_bytes_size (bn_result_value (result, i)) !=
                self->bytes)
                rc = bn_benchcase_fail (c,
                                        "engine %zu's echo is not the "
                                        "payload",
                                        i);
    bn_result_destroy (&result);
    return rc == 0 ? BN_BENCH_OK : BN_BENCH_FAIL;
}

//  echo(1 kB) there and back on every engine of every host.
int
bn_suite_hosts_echo_run (bn_benchcase_t *c, double *value)
{
    return s_call (c, "echo");
}

//  Bytes into each host for one noop(1 MB) to all its engines: the mean
//  over the hosts of their links' counters.
int
bn_suite_hosts_payload_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    int64_t *before = calloc ((size_t)self->count, sizeof *before);
    if (!before)
        return bn_benchcase_fail (c, "out of memory");
    for (int i = 0; i < self->count; i++)
        before[i] = bn_benchhosts_bytes_in (self->hosts, i);
    int rc = s_call (c, "noop");
    double sum = 0;
    for (int i = 0; i < self->count && rc == BN_BENCH_OK; i++) {
        int64_t after = bn_benchhosts_bytes_in (self->hosts, i);
        if (before[i] < 0 || after < 0)
            rc = bn_benchcase_fail (c, "no byte counter for host h%d", i + 1);
        sum += (double)(after - before[i]);
    }
    free (before);
    *value = sum / self->count;
    return rc;
}

//  Seconds from starting every host's engines (host nodes up) until the
//  client has seen all of them registered; fresh hosts each sample.
int
bn_suite_hosts_registered_run (bn_benchcase_t *c, double *value)
{
    int hosts, per_host;
    int rc = s_shape (c, &hosts, &per_host);
    if (rc != BN_BENCH_OK)
        return rc;
    bn_benchhosts_t *made = bn_benchhosts_new (c, hosts, per_host);
    if (!made)
        return bn_benchcase_fail (c, "out of memory");
    rc = bn_benchhosts_start (made, s_start_timeout (hosts, per_host));
    *value = bn_benchhosts_registration_seconds (made);
    bn_benchhosts_destroy (&made);
    return rc;
}

//  The coalescing echo's cluster, after one echo through each view.
int
bn_suite_hosts_resources_setup (bn_benchcase_t *c)
{
    int rc = s_setup (c, BN_VIEW_BROADCAST, S_ECHO_BYTES);
    if (rc == BN_BENCH_OK)
        rc = s_call (c, "echo");
    if (rc != BN_BENCH_OK)
        return rc;
    s_state_t *self = c->state;
    bn_view_t *direct =
        bn_view_new (bn_benchhosts_client (self->hosts), BN_VIEW_DIRECT);
    bn_view_t *tree = self->view;
    self->view = direct;
    rc = direct ? s_call (c, "echo") : bn_benchcase_fail (c, "out of memory");
    self->view = tree;
    bn_view_destroy (&direct);
    return rc;
}

int
bn_suite_hosts_controller_fds_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    pid_t pid = bn_benchhosts_controller_pid (self->hosts);
    int count = bn_procinfo_fds (pid);
    if (count < 0)
        return bn_benchcase_fail (c, "cannot read /proc/%d/fd", (int)pid);
    *value = count;
    return BN_BENCH_OK;
}

int
bn_suite_hosts_controller_mem_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    *value = bn_procinfo_peak (bn_benchhosts_controller_pid (self->hosts));
    return *value >= 0 ? BN_BENCH_OK
                       : bn_benchcase_fail (c, "no controller process");
}

//  The largest peak resident size among the host nodes.
int
bn_suite_hosts_node_mem_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    *value = -1;
    for (int i = 0; i < self->count; i++) {
        double peak =
            bn_procinfo_peak (bn_benchhosts_node_pid (self->hosts, i));
        if (peak > *value)
            *value = peak;
    }
    return *value >= 0 ? BN_BENCH_OK
                       : bn_benchcase_fail (c, "no host node process");
}

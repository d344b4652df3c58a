/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_cluster: the suites that run against a cluster: the thesis's
    push, echo, many messages and depth (IPython Parallel's asv names),
    the OSU-style point-to-point and collective tests, and peer and mixed
    mode against IPython Parallel's own controller and engines.  */
#include "bn_benchcluster.h"
#include "bn_suites.h"

#include <stdlib.h>
#include <string.h>

//  Seconds a call may take before the case fails
#define S_CALL_TIMEOUT 60.0
//  Outstanding sends of the bandwidth test (OSU's window)
#define S_WINDOW 64

typedef struct {
    bn_benchcluster_t *cluster; //  the case's cluster
    bn_client_t *client;        //  its client (owned by the cluster)
    bn_view_t *view;            //  the view the suite measures
    bn_value_t *args;           //  (payload,) for push and echo
    bn_value_t *no_args;        //  () for the barrier
    bn_value_t *names;          //  "x", the gathered name
    size_t bytes;               //  payload size
    int messages;               //  many: applies per call
    bool pushed;                //  gather: "x" is on the engines
} s_state_t;

//  Wait for result and turn a failure into the case's reason.
static int
s_collect (bn_benchcase_t *c, bn_result_t **result_p)
{
    bn_result_t *result = *result_p;
    int rc = bn_result_get (result, S_CALL_TIMEOUT);
    if (rc != 0) {
        const char *ename = NULL, *evalue = NULL;
        for (size_t i = 0; i < bn_result_count (result); i++)
            if (bn_result_status (result, i) != 0 &&
                bn_result_ename (result, i)) {
                ename = bn_result_ename (result, i);
                evalue = bn_result_evalue (result, i);
                break;
            }
        bn_benchcase_fail (c, "%s%s%s%s%s", bn_strerror (rc), ename ? ": " : "",
                           ename ? ename : "", evalue ? ": " : "",
                           evalue ? evalue : "");
    }
    bn_result_destroy (result_p);
    return rc == 0 ? BN_BENCH_OK : BN_BENCH_FAIL;
}

//  Start the case's cluster and make a view of kind.
static int
s_setup (bn_benchcase_t *c, bn_view_kind_t kind, int coalescing,
         int engines_override)
{
    char stack_name[32] = "banyan";
    bn_benchcase_str (c, "stack", stack_name, sizeof stack_name);
    int stack = bn_benchstack_parse (stack_name);
    if (stack < 0)
        return bn_benchcase_fail (c, "unknown stack %s", stack_name);
    int engines = engines_override > 0
                      ? engines_override
                      : (int)bn_benchcase_long (c, "engines", 1);
    if (stack != BN_BENCHSTACK_BANYAN && engines > 16)
        return bn_benchcase_skip (
            c, "stock engines are started one Python process each: at most "
               "16 here");
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    self->bytes = (size_t)bn_benchcase_long (c, "bytes", 1000);
    self->messages = (int)bn_benchcase_long (c, "messages", 1);
    self->cluster = bn_benchcluster_new (c, (bn_benchstack_t)stack, engines);
    if (!self->cluster)
        return bn_benchcase_fail (c, "out of memory");
    long depth = bn_benchcase_long (c, "depth", -1);
    if (depth >= 0)
        bn_benchcluster_set_depth (self->cluster, (int)depth);
    //  tree.TreeShapes: a shape "dN" (kary:2 of depth N) or "auto", and a
    //  tree mode
    char shape[32] = "", mode[32] = "";
    if (bn_benchcase_str (c, "shape", shape, sizeof shape)) {
        if (strcmp (shape, "auto") == 0)
            bn_benchcluster_set_topology (self->cluster, "auto");
        else if (shape[0] == 'd' && shape[1] >= '0' && shape[1] <= '9')
            bn_benchcluster_set_depth (self->cluster, atoi (shape + 1));
        else
            return bn_benchcase_fail (c, "unknown shape %s", shape);
    }
    if (bn_benchcase_str (c, "tree_mode", mode, sizeof mode))
        bn_benchcluster_set_tree_mode (self->cluster, mode);
    //  curve.*: the same echo with CURVE on the controller's sockets or not
    char curve[8] = "";
    if (bn_benchcase_str (c, "curve", curve, sizeof curve))
        bn_benchcluster_set_curve (self->cluster, strcmp (curve, "on") == 0);
    //  a stock ipengine is a Python process that takes a second or two of
    //  CPU to start and register, and many start at once on a loaded machine
    double start_timeout =
        60 + engines * (stack == BN_BENCHSTACK_BANYAN ? 1 / 8.0 : 4.0);
    if (bn_benchcluster_start (self->cluster, start_timeout) != 0)
        return BN_BENCH_FAIL;
    self->client = bn_benchcluster_client (self->cluster);
    self->view = bn_view_new (self->client, kind);
    if (!self->view)
        return bn_benchcase_fail (c, "out of memory");
    //  The functions measured write nothing: a broadcast asks for its
    //  output in the reply (bn_output), so banyan engines publish no iopub
    //  for it, as banyan px does; stock engines ignore the key.
    if (kind == BN_VIEW_BROADCAST &&
        (bn_view_set_coalescing (self->view, coalescing) != 0 ||
         bn_view_set_output_in_reply (self->view, true) != 0))
        return bn_benchcase_fail (c, "broadcast view options");
    char *payload = calloc (1, self->bytes ? self->bytes : 1);
    self->args = bn_value_new_list ();
    self->no_args = bn_value_new_list ();
    self->names = bn_value_new_str ("x");
    if (!payload || !self->args || !self->no_args || !self->names) {
        free (payload);
        return bn_benchcase_fail (c, "out of memory");
    }
    for (size_t i = 0; i < self->bytes; i++)
        payload[i] = (char)('a' + i % 26);
    bn_value_append (self->args, bn_value_new_bytes (payload, self->bytes));
    free (payload);
    return BN_BENCH_OK;
}

int
bn_suite_direct_setup (bn_benchcase_t *c)
{
    return s_setup (c, BN_VIEW_DIRECT, 0, 0);
}

int
bn_suite_coalescing_setup (bn_benchcase_t *c)
{
    return s_setup (c, BN_VIEW_BROADCAST, 1, 0);
}

int
bn_suite_noncoalescing_setup (bn_benchcase_t *c)
{
    return s_setup (c, BN_VIEW_BROADCAST, 0, 0);
}

//  OSU point to point: one engine, direct; collectives choose by `view`.
int
bn_suite_one_engine_setup (bn_benchcase_t *c)
{
    char view[32] = "";
    if (!bn_benchcase_str (c, "view", view, sizeof view))
        return s_setup (c, BN_VIEW_DIRECT, 0, 1);
    if (strcmp (view, "direct") == 0)
        return s_setup (c, BN_VIEW_DIRECT, 0, 0);
    if (strcmp (view, "tree") == 0)
        return s_setup (c, BN_VIEW_BROADCAST, 1, 0);
    return bn_benchcase_fail (c, "unknown view %s", view);
}

void
bn_suite_cluster_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    bn_view_destroy (&self->view);
    bn_value_destroy (&self->args);
    bn_value_destroy (&self->no_args);
    bn_value_destroy (&self->names);
    bn_benchcluster_destroy (&self->cluster);
    free (self);
    c->state = NULL;
}

static int
s_apply (bn_benchcase_t *c, const char *function, bn_value_t *args)
{
    s_state_t *self = c->state;
    bn_result_t *result = NULL;
    int rc = bn_view_apply (self->view, function, args, NULL, &result);
    if (rc != 0)
        return bn_benchcase_fail (c, "apply %s: %s", function,
                                  bn_strerror (rc));
    return s_collect (c, &result);
}

//  push: a call that consumes B bytes on every engine.
int
bn_suite_push_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    return s_apply (c, bn_benchcluster_noop_fn (self->cluster), self->args);
}

//  echo: B bytes to every engine and back.
int
bn_suite_echo_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    return s_apply (c, bn_benchcluster_echo_fn (self->cluster), self->args);
}

//  Send count applies of function back to back, then wait for them all.
static int
s_back_to_back (bn_benchcase_t *c, const char *function, bn_value_t *args,
                int count)
{
    s_state_t *self = c->state;
    bn_result_t **results = calloc ((size_t)count, sizeof *results);
    if (!results)
        return bn_benchcase_fail (c, "out of memory");
    int rc = BN_BENCH_OK;
    for (int i = 0; i < count && rc == BN_BENCH_OK; i++) {
        int sent =
            bn_view_apply (self->view, function, args, NULL, &results[i]);
        if (sent != 0)
            rc = bn_benchcase_fail (c, "apply %s: %s", function,
                                    bn_strerror (sent));
    }
    for (int i = 0; i < count; i++)
        if (results[i] && rc == BN_BENCH_OK)
            rc = s_collect (c, &results[i]);
        else
            bn_result_destroy (&results[i]);
    free (results);
    return rc;
}

//  many: M echo applies of B bytes back to back, then wait for all.
int
bn_suite_many_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    return s_back_to_back (c, bn_benchcluster_echo_fn (self->cluster),
                           self->args, self->messages);
}

//  OSU bandwidth: a window of consuming calls of B bytes outstanding.
int
bn_suite_window_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    return s_back_to_back (c, bn_benchcluster_noop_fn (self->cluster),
                           self->args, S_WINDOW);
}

//  Pull "x" (B bytes, pushed by the first call) from every engine; the
//  result goes to *kept when it is not NULL.
static int
s_gather (bn_benchcase_t *c, bn_result_t **kept)
{
    s_state_t *self = c->state;
    bn_result_t *result = NULL;
    if (!self->names)
        return bn_benchcase_fail (c, "out of memory");
    if (!self->pushed) {
        bn_value_t *ns = bn_value_new_dict ();
        bn_value_dict_set_str (ns, "x",
                               bn_value_dup (bn_value_item (self->args, 0)));
        int rc = bn_view_push (self->view, ns, &result);
        bn_value_destroy (&ns);
        if (rc != 0)
            return bn_benchcase_fail (c, "push: %s", bn_strerror (rc));
        if (s_collect (c, &result) != BN_BENCH_OK)
            return BN_BENCH_FAIL;
        self->pushed = true;
    }
    int rc = bn_view_pull (self->view, self->names, &result);
    if (rc != 0)
        return bn_benchcase_fail (c, "pull: %s", bn_strerror (rc));
    rc = bn_result_get (result, S_CALL_TIMEOUT);
    if (rc != 0) {
        bn_result_destroy (&result);
        return bn_benchcase_fail (c, "pull: %s", bn_strerror (rc));
    }
    if (kept)
        *kept = result;
    else
        bn_result_destroy (&result);
    return BN_BENCH_OK;
}

//  OSU gather: B bytes from every engine.
int
bn_suite_gather_run (bn_benchcase_t *c, double *value)
{
    return s_gather (c, NULL);
}

//  Gather, then add the engines' bytes element-wise into sum.
static int
s_reduce (bn_benchcase_t *c, unsigned char *sum, size_t size)
{
    bn_result_t *result = NULL;
    if (s_gather (c, &result) != BN_BENCH_OK)
        return BN_BENCH_FAIL;
    memset (sum, 0, size);
    for (size_t i = 0; i < bn_result_count (result); i++) {
        const bn_value_t *got = bn_result_value (result, i);
        const unsigned char *data = bn_value_bytes_data (got);
        size_t n = bn_value_bytes_size (got);
        for (size_t k = 0; data && k < n && k < size; k++)
            sum[k] = (unsigned char)(sum[k] + data[k]);
    }
    bn_result_destroy (&result);
    return BN_BENCH_OK;
}

//  OSU reduce: gather B bytes from every engine, sum them at the client.
int
bn_suite_reduce_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    unsigned char *sum = malloc (self->bytes ? self->bytes : 1);
    if (!sum)
        return bn_benchcase_fail (c, "out of memory");
    int rc = s_reduce (c, sum, self->bytes);
    free (sum);
    return rc;
}

//  OSU allreduce, as a client does it: reduce, then push the sum back.
int
bn_suite_allreduce_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    unsigned char *sum = malloc (self->bytes ? self->bytes : 1);
    if (!sum)
        return bn_benchcase_fail (c, "out of memory");
    int rc = s_reduce (c, sum, self->bytes);
    if (rc == BN_BENCH_OK) {
        bn_value_t *ns = bn_value_new_dict ();
        bn_value_dict_set_str (ns, "y", bn_value_new_bytes (sum, self->bytes));
        bn_result_t *result = NULL;
        int sent = bn_view_push (self->view, ns, &result);
        bn_value_destroy (&ns);
        rc = sent != 0 ? bn_benchcase_fail (c, "push: %s", bn_strerror (sent))
                       : s_collect (c, &result);
    }
    free (sum);
    return rc;
}

//  OSU barrier: an empty call on every engine, and every reply.
int
bn_suite_barrier_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    return s_apply (c, bn_benchcluster_noop_fn (self->cluster), self->no_args);
}

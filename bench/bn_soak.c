/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_soak: a cluster per tree mode, each driven by two threads for the
    soak's duration: one sends rounds of mixed traffic and checks every
    item of every result (a reply or an error, and the right value), the
    other makes trouble: a client that vanishes mid-request (in a thread,
    then as a process killed with SIGKILL), whose requests the hub must
    see through to completion, then an engine that joins, takes traffic,
    and is stopped (SIGTERM) or killed (SIGKILL), in turn, with a request
    running on it. The main thread samples the clusters' processes
    meanwhile.  */
#define _GNU_SOURCE //  pipe2
#include "bn_soak.h"
#include "bn_benchcluster.h"
#include "bn_soakmon.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

//  Seconds a request may take to be answered once the round waits for
//  it (a 10 MB pull on a loaded machine takes well under a second)
#define S_ANSWER_TIMEOUT 120.0
//  Seconds the hub may take to record a request, and a vanished client's
//  request to complete
#define S_HUB_TIMEOUT 60.0
//  Seconds an engine that joined takes traffic before it is killed
#define S_ENGINE_LIFE 10.0
//  Seconds a killed engine's running request sleeps for: it must fail
//  long before that
#define S_DEATH_SLEEP 60.0
//  Pause between rounds, so that the soak shares the machine
#define S_ROUND_PAUSE_MS 100
//  Payload sizes of push and pull, one per round in turn
static const size_t s_sizes[] = {1000, 10000, 100000, 1000000, 10000000};
#define S_SIZES (sizeof s_sizes / sizeof s_sizes[0])
//  Bytes of the echo payload
#define S_ECHO_BYTES 1000
//  Problems kept for the report (the rest are counted)
#define S_PROBLEMS 8
//  Error names counted apart
#define S_ENAMES 16

typedef enum {
    S_DIRECT,
    S_COALESCING,
    S_GROUPED,
    S_REDUCED,
    S_FORWARDED,
    S_TASK,
    S_DEPENDENT,
    S_PUSH,
    S_PULL,
    S_HISTORY,
    S_ENGINE_JOIN,
    S_ENGINE_STOP,
    S_ENGINE_DEATH,
    S_VANISH_THREAD,
    S_VANISH_PROCESS,
    S_KINDS
} s_kind_t;

static const char *s_kind_names[S_KINDS] = {"direct echo",
                                            "bcast coalescing",
                                            "bcast grouped",
                                            "bcast reduced",
                                            "bcast forwarded",
                                            "lb task",
                                            "lb after/follow",
                                            "push",
                                            "pull",
                                            "history query",
                                            "engine join",
                                            "engine stopped",
                                            "engine killed",
                                            "client gone (thr)",
                                            "client gone (proc)"};

typedef struct {
    size_t sent;       //  msg_ids (items) sent, or calls made
    size_t replies;    //  answered with success
    size_t errors;     //  answered with an error
    size_t unanswered; //  not answered in time
    size_t wrong;      //  answered with the wrong value
    size_t refused;    //  not sent: a target had just gone (BN_ENOENGINE)
    size_t failed;     //  not sent for another reason
} s_count_t;

typedef struct _s_mode_t s_mode_t;

struct _bn_soak_t {
    char *bin_dir;      //  the programs
    double duration;    //  seconds of traffic
    double warmup;      //  seconds before the judged figures, or < 0
    int engines;        //  engines per cluster
    bool tree_modes[2]; //  threads, processes
    double max_growth;  //  fraction
    bool keep;          //  keep the folders
    atomic_bool stop;   //  the duration is over
    double start;       //  when the traffic began
    char root[3800];    //  the soak's folder
    s_mode_t *modes[2]; //  the clusters
    char payload[S_ECHO_BYTES];
};

struct _s_mode_t {
    bn_soak_t *soak;
    const char *name; //  tree mode
    bn_benchcase_t c; //  the cluster's case (folder, programs)
    char dir[3900];
    bn_benchcluster_t *cluster;
    bn_client_t *client; //  owned by the cluster
    bn_soakmon_t *mon;
    pid_t pgid;
    int base[64]; //  the engines started with the cluster
    size_t base_count;
    pthread_mutex_t lock; //  what follows, written by both threads
    s_count_t counts[S_KINDS];
    char enames[S_ENAMES][48];
    size_t ecounts[S_ENAMES];
    size_t ename_count;
    char problems[S_PROBLEMS][256];
    size_t problem_count;
    size_t rounds;
    pthread_t traffic, chaos;
    bool running;
    FILE *events; //  log/soak-events.log: what the trouble thread did
};

//  SIGINT or SIGTERM: the soak stops early, reports and ends its clusters
//  (which run in process groups of their own, and would outlive it)
static volatile sig_atomic_t s_interrupted;

static void
s_on_signal (int signal)
{
    s_interrupted = signal;
}

static double
s_now (void)
{
    return zclock_usecs () / 1e6;
}

//  Sleep up to seconds, less if the soak stops.
static void
s_nap (bn_soak_t *soak, double seconds)
{
    double until = s_now () + seconds;
    while (!atomic_load (&soak->stop) && s_now () < until)
        zclock_sleep (50);
}

static void s_problem (s_mode_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Note a problem for the report (the lock held).
static void
s_problem (s_mode_t *self, const char *format, ...)
{
    if (self->problem_count < S_PROBLEMS) {
        va_list args;
        va_start (args, format);
        vsnprintf (self->problems[self->problem_count],
                   sizeof self->problems[0], format, args);
        va_end (args);
    }
    self->problem_count++;
}

static void s_event (s_mode_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Log what the trouble thread does, with the seconds since the start.
static void
s_event (s_mode_t *self, const char *format, ...)
{
    if (!self->events)
        return;
    pthread_mutex_lock (&self->lock);
    fprintf (self->events, "%8.3f ", s_now () - self->soak->start);
    va_list args;
    va_start (args, format);
    vfprintf (self->events, format, args);
    va_end (args);
    fprintf (self->events, "\n");
    fflush (self->events);
    pthread_mutex_unlock (&self->lock);
}

//  Count an error by name (the lock held).
static void
s_ename (s_mode_t *self, const char *ename)
{
    size_t i;
    for (i = 0; i < self->ename_count; i++)
        if (strcmp (self->enames[i], ename) == 0)
            break;
    if (i == self->ename_count) {
        if (i == S_ENAMES)
            i = S_ENAMES - 1, ename = "other";
        else {
            snprintf (self->enames[i], sizeof self->enames[i], "%s", ename);
            self->ename_count++;
        }
    }
    self->ecounts[i]++;
}

//  Count a call that could not be sent.
static void
s_refused (s_mode_t *self, s_kind_t kind, int rc)
{
    pthread_mutex_lock (&self->lock);
    if (rc == BN_ENOENGINE)
        self->counts[kind].refused++;
    else {
        self->counts[kind].failed++;
        s_problem (self, "%s: not sent: %s", s_kind_names[kind],
                   bn_strerror (rc));
    }
    pthread_mutex_unlock (&self->lock);
}

//  Count item index of result (its wait is over): a reply, an error, or
//  nothing (unanswered). Returns its status.
static int
s_count_item (s_mode_t *self, s_kind_t kind, bn_result_t *result, size_t index)
{
    int status = bn_result_status (result, index);
    pthread_mutex_lock (&self->lock);
    s_count_t *count = &self->counts[kind];
    count->sent++;
    if (status == BN_ENOTREADY) {
        count->unanswered++;
        s_problem (self, "%s: %s (engine %d) unanswered after %.0f s",
                   s_kind_names[kind], bn_result_msg_id (result, index),
                   bn_result_engine_id (result, index),
                   bn_result_elapsed (result));
    } else if (status == 0)
        count->replies++;
    else {
        count->errors++;
        const char *ename = bn_result_ename (result, index);
        s_ename (self, ename ? ename : bn_strerror (status));
    }
    pthread_mutex_unlock (&self->lock);
    return status;
}

static void
s_wrong (s_mode_t *self, s_kind_t kind, bn_result_t *result, size_t index,
         const char *what)
{
    pthread_mutex_lock (&self->lock);
    self->counts[kind].wrong++;
    s_problem (self, "%s: %s: %s", s_kind_names[kind],
               bn_result_msg_id (result, index), what);
    pthread_mutex_unlock (&self->lock);
}

//  Wait for result and count its items; echo results are checked against
//  expected (NULL: not checked). Destroys the result.
static void
s_collect (s_mode_t *self, s_kind_t kind, bn_result_t **result_p,
           const bn_value_t *expected)
{
    bn_result_t *result = *result_p;
    if (!result)
        return;
    bn_result_wait (result, S_ANSWER_TIMEOUT);
    for (size_t i = 0; i < bn_result_count (result); i++)
        if (s_count_item (self, kind, result, i) == 0 && expected &&
            !bn_value_equal (bn_result_value (result, i), expected))
            s_wrong (self, kind, result, i, "not the value sent");
    bn_result_destroy (result_p);
}

//  The hub's state of msg_id: 1 complete (or culled once complete), 0
//  pending, -1 unknown to it; *status the item's outcome when complete.
static int
s_hub_state (s_mode_t *self, const char *msg_id, bool known, int *status)
{
    bn_result_t *record = NULL;
    int rc = bn_client_get_result (self->client, msg_id, 10, &record);
    *status = 0;
    if (rc == 0 && record) {
        *status = bn_result_count (record) ? bn_result_status (record, 0) : 0;
        bn_result_destroy (&record);
        return 1;
    }
    bn_result_destroy (&record);
    if (rc == BN_ENOTREADY)
        return 0;
    if (rc == BN_ENOENT)
        //  pending records are never culled: once seen, a missing record
        //  was complete
        return known ? 1 : -1;
    if (rc == BN_ETIMEDOUT)
        return known ? 0 : -1;
    //  a record this library cannot read, or the hub's error about it:
    //  the hub has it, complete
    *status = rc;
    return 1;
}

//  Follow msg_ids, sent by a client that is about to vanish, until the
//  hub has recorded each; then vanish (the caller's vanish ()), then
//  follow them until each completes, counting them under kind.
static void
s_follow_vanished (s_mode_t *self, s_kind_t kind, char **msg_ids, size_t count,
                   void (*vanish) (void *), void *arg)
{
    bool known[16] = {false};
    double deadline = s_now () + S_HUB_TIMEOUT;
    for (size_t i = 0; i < count && i < 16; i++) {
        int status;
        while (!known[i] && s_now () < deadline) {
            known[i] = s_hub_state (self, msg_ids[i], false, &status) >= 0;
            if (!known[i])
                zclock_sleep (50);
        }
    }
    s_event (self, "%s: %zu requests sent, going", s_kind_names[kind], count);
    vanish (arg);
    deadline = s_now () + S_HUB_TIMEOUT;
    for (size_t i = 0; i < count && i < 16; i++) {
        int state = -1, status = 0;
        while (known[i] && s_now () < deadline &&
               (state = s_hub_state (self, msg_ids[i], true, &status)) == 0)
            zclock_sleep (100);
        pthread_mutex_lock (&self->lock);
        s_count_t *counts = &self->counts[kind];
        counts->sent++;
        if (!known[i]) {
            counts->unanswered++;
            s_problem (self, "%s: %s never reached the hub", s_kind_names[kind],
                       msg_ids[i]);
        } else if (state != 1) {
            counts->unanswered++;
            s_problem (self,
                       "%s: %s still pending %.0f s after its client "
                       "went",
                       s_kind_names[kind], msg_ids[i], S_HUB_TIMEOUT);
        } else if (status == 0)
            counts->replies++;
        else {
            counts->errors++;
            s_ename (self, bn_strerror (status));
        }
        pthread_mutex_unlock (&self->lock);
    }
    s_event (self, "%s: its requests followed", s_kind_names[kind]);
}

//  ---------------------------------------------------------------------
//  Traffic

typedef struct {
    bn_view_t *direct, *coalescing, *grouped, *reduced, *forwarded;
    bn_view_t *lb, *lb_dep, *one;
    bn_value_t *echo_args;       //  (1 kB,)
    bn_value_t *echo_value;      //  1 kB
    bn_value_t *sum_args;        //  (1, 2, 3)
    bn_value_t *pushes[S_SIZES]; //  {"x": B bytes}
    bn_value_t *x;               //  "x"
} s_traffic_t;

static int
s_traffic_init (s_mode_t *self, s_traffic_t *t)
{
    bn_client_t *client = self->client;
    t->direct = bn_view_new (client, BN_VIEW_DIRECT);
    t->coalescing = bn_view_new (client, BN_VIEW_BROADCAST);
    t->grouped = bn_view_new (client, BN_VIEW_BROADCAST);
    t->reduced = bn_view_new (client, BN_VIEW_BROADCAST);
    t->forwarded = bn_view_new (client, BN_VIEW_BROADCAST);
    t->lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    t->lb_dep = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    t->one = bn_view_new (client, BN_VIEW_DIRECT);
    t->echo_args = bn_value_new_list ();
    t->echo_value =
        bn_value_new_bytes (self->soak->payload, sizeof self->soak->payload);
    t->sum_args = bn_value_new_list ();
    t->x = bn_value_new_str ("x");
    if (!t->direct || !t->coalescing || !t->grouped || !t->reduced ||
        !t->forwarded || !t->lb || !t->lb_dep || !t->one || !t->echo_args ||
        !t->echo_value || !t->sum_args || !t->x)
        return -1;
    if (bn_view_set_coalescing (t->coalescing, true) ||
        bn_view_set_output_in_reply (t->coalescing, true) ||
        bn_view_set_coalescing (t->grouped, true) ||
        bn_view_set_group (t->grouped, true) ||
        bn_view_set_coalescing (t->reduced, true) ||
        bn_view_set_reduce (t->reduced, "sum") ||
        bn_view_set_coalescing (t->forwarded, false))
        return -1;
    bn_value_append (t->echo_args, bn_value_dup (t->echo_value));
    for (int i = 1; i <= 3; i++)
        bn_value_append (t->sum_args, bn_value_new_int (i));
    char *data = malloc (s_sizes[S_SIZES - 1]);
    if (!data)
        return -1;
    for (size_t i = 0; i < s_sizes[S_SIZES - 1]; i++)
        data[i] = (char)('a' + i % 23);
    for (size_t i = 0; i < S_SIZES; i++) {
        t->pushes[i] = bn_value_new_dict ();
        if (!t->pushes[i] ||
            bn_value_dict_set_str (t->pushes[i], "x",
                                   bn_value_new_bytes (data, s_sizes[i]))) {
            free (data);
            return -1;
        }
    }
    free (data);
    return 0;
}

static void
s_traffic_fini (s_traffic_t *t)
{
    bn_view_destroy (&t->direct);
    bn_view_destroy (&t->coalescing);
    bn_view_destroy (&t->grouped);
    bn_view_destroy (&t->reduced);
    bn_view_destroy (&t->forwarded);
    bn_view_destroy (&t->lb);
    bn_view_destroy (&t->lb_dep);
    bn_view_destroy (&t->one);
    bn_value_destroy (&t->echo_args);
    bn_value_destroy (&t->echo_value);
    bn_value_destroy (&t->sum_args);
    bn_value_destroy (&t->x);
    for (size_t i = 0; i < S_SIZES; i++)
        bn_value_destroy (&t->pushes[i]);
}

//  Send an apply; a refusal is counted and leaves *result_p NULL.
static void
s_apply (s_mode_t *self, s_kind_t kind, bn_view_t *view, const char *function,
         const bn_value_t *args, bn_result_t **result_p)
{
    *result_p = NULL;
    int rc = bn_view_apply (view, function, args, NULL, result_p);
    if (rc != 0) {
        s_refused (self, kind, rc);
        bn_result_destroy (result_p);
    }
}

//  (n,) as a list, for the load-balanced echoes.
static bn_value_t *
s_int_args (int64_t n)
{
    bn_value_t *args = bn_value_new_list ();
    if (args)
        bn_value_append (args, bn_value_new_int (n));
    return args;
}

//  The reduced sum must be 6 for each engine that contributed.
static void
s_collect_reduced (s_mode_t *self, bn_result_t **result_p)
{
    bn_result_t *result = *result_p;
    if (!result)
        return;
    bn_result_wait (result, S_ANSWER_TIMEOUT);
    for (size_t i = 0; i < bn_result_count (result); i++)
        s_count_item (self, S_REDUCED, result, i);
    if (bn_result_ready (result)) {
        const bn_value_t *sum = bn_result_reduced (result);
        size_t contributed =
            bn_idset_count (bn_result_reduced_engines (result));
        if (contributed &&
            (!sum || bn_value_int (sum) != 6 * (int64_t)contributed))
            s_wrong (self, S_REDUCED, result, 0, "wrong reduced sum");
    }
    bn_result_destroy (result_p);
}

//  Push B bytes to one engine, then pull them back.
static void
s_push_pull (s_mode_t *self, s_traffic_t *t, size_t round)
{
    int engine = self->base[round % self->base_count];
    bn_view_set_target_list (t->one, &engine, 1);
    const bn_value_t *ns = t->pushes[round % S_SIZES];
    bn_result_t *result = NULL;
    int rc = bn_view_push (t->one, ns, &result);
    if (rc != 0) {
        s_refused (self, S_PUSH, rc);
        bn_result_destroy (&result);
        return;
    }
    bn_result_wait (result, S_ANSWER_TIMEOUT);
    bool pushed = bn_result_count (result) == 1 &&
                  s_count_item (self, S_PUSH, result, 0) == 0;
    bn_result_destroy (&result);
    if (!pushed)
        return;
    rc = bn_view_pull (t->one, t->x, &result);
    if (rc != 0) {
        s_refused (self, S_PULL, rc);
        bn_result_destroy (&result);
        return;
    }
    s_collect (self, S_PULL, &result, bn_value_dict_get (ns, "x"));
}

//  Every record of the hub, and those completed in the last minute.
static void
s_history (s_mode_t *self)
{
    char **ids = NULL;
    size_t count = 0;
    int rc = bn_client_history (self->client, S_HUB_TIMEOUT, &ids, &count);
    bn_client_free_strv (&ids);
    char query[128], stamp[32];
    time_t since = time (NULL) - 60;
    struct tm tm;
    gmtime_r (&since, &tm);
    strftime (stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf (query, sizeof query, "{\"completed\": {\"$gt\": \"%s\"}}", stamp);
    const char *keys[] = {"msg_id", "completed", "engine_uuid", NULL};
    char *records = NULL;
    int rc2 =
        bn_client_db_query (self->client, query, keys, S_HUB_TIMEOUT, &records);
    bool parsed = true;
    if (rc2 == 0) {
        json_t *list = json_loads (records ? records : "", 0, NULL);
        parsed = json_is_array (list);
        json_decref (list);
    }
    free (records);
    pthread_mutex_lock (&self->lock);
    s_count_t *counts = &self->counts[S_HISTORY];
    int rcs[2] = {rc, rc2};
    for (int i = 0; i < 2; i++) {
        counts->sent++;
        if (rcs[i] == BN_ETIMEDOUT) {
            counts->unanswered++;
            s_problem (self, "history query unanswered in %.0f s",
                       S_HUB_TIMEOUT);
        } else if (rcs[i] == 0)
            counts->replies++;
        else {
            counts->errors++;
            s_ename (self, bn_strerror (rcs[i]));
        }
    }
    if (!parsed) {
        counts->wrong++;
        s_problem (self, "db_query: not a JSON list of records");
    }
    pthread_mutex_unlock (&self->lock);
}

//  One round: every kind at once, then push and pull, then the answers.
static void
s_round (s_mode_t *self, s_traffic_t *t, size_t round)
{
    bn_result_t *direct, *coalescing, *grouped, *reduced, *forwarded;
    bn_result_t *task = NULL, *after = NULL, *follow = NULL;
    s_apply (self, S_DIRECT, t->direct, "echo", t->echo_args, &direct);
    s_apply (self, S_COALESCING, t->coalescing, "echo", t->echo_args,
             &coalescing);
    s_apply (self, S_GROUPED, t->grouped, "echo", t->echo_args, &grouped);
    s_apply (self, S_REDUCED, t->reduced, "sum", t->sum_args, &reduced);
    s_apply (self, S_FORWARDED, t->forwarded, "noop", t->echo_args, &forwarded);
    bn_value_t *args[3];
    for (int i = 0; i < 3; i++)
        args[i] = s_int_args ((int64_t)round * 3 + i);
    s_apply (self, S_TASK, t->lb, "echo", args[0], &task);
    if (task) {
        //  one task after it (on any engine), one where it ran
        if (bn_view_set_after_result (t->lb_dep, task, true, true, false) == 0)
            s_apply (self, S_DEPENDENT, t->lb_dep, "echo", args[1], &after);
        bn_view_set_after (t->lb_dep, NULL, 0, true, true, false);
        if (bn_view_set_follow_result (t->lb_dep, task, true, true, false) == 0)
            s_apply (self, S_DEPENDENT, t->lb_dep, "echo", args[2], &follow);
        bn_view_set_follow (t->lb_dep, NULL, 0, true, true, false);
    }
    s_push_pull (self, t, round);
    if (round % 5 == 0)
        s_history (self);
    s_collect (self, S_DIRECT, &direct, t->echo_value);
    s_collect (self, S_COALESCING, &coalescing, t->echo_value);
    s_collect (self, S_GROUPED, &grouped, t->echo_value);
    s_collect_reduced (self, &reduced);
    s_collect (self, S_FORWARDED, &forwarded, NULL);
    s_collect (self, S_TASK, &task, bn_value_item (args[0], 0));
    s_collect (self, S_DEPENDENT, &after, bn_value_item (args[1], 0));
    s_collect (self, S_DEPENDENT, &follow, bn_value_item (args[2], 0));
    for (int i = 0; i < 3; i++)
        bn_value_destroy (&args[i]);
}

static void *
s_traffic_thread (void *arg)
{
    s_mode_t *self = arg;
    s_traffic_t t = {0};
    if (s_traffic_init (self, &t) != 0) {
        pthread_mutex_lock (&self->lock);
        s_problem (self, "traffic: out of memory");
        pthread_mutex_unlock (&self->lock);
    } else
        for (size_t round = 0; !atomic_load (&self->soak->stop); round++) {
            double began = s_now ();
            s_round (self, &t, round);
            if (s_now () - began > 5)
                s_event (self, "round %zu took %.1f s", round,
                         s_now () - began);
            pthread_mutex_lock (&self->lock);
            self->rounds++;
            pthread_mutex_unlock (&self->lock);
            zclock_sleep (S_ROUND_PAUSE_MS);
        }
    s_traffic_fini (&t);
    return NULL;
}

//  ---------------------------------------------------------------------
//  Trouble

static void
s_vanish_client (void *arg)
{
    bn_client_t **client_p = arg;
    bn_client_destroy (client_p);
}

//  A client in this process sends a load-balanced sleep and a direct echo
//  and is destroyed once the hub has them.
static void
s_vanish_thread (s_mode_t *self)
{
    int error = 0;
    char file[4096];
    snprintf (file, sizeof file, "%s/security/ipcontroller-client.json",
              self->dir);
    bn_client_t *client = bn_client_new (file, S_HUB_TIMEOUT, &error);
    if (!client) {
        s_refused (self, S_VANISH_THREAD, error);
        return;
    }
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *sleep_args = bn_value_new_list ();
    bn_value_append (sleep_args, bn_value_new_float (1.0));
    bn_value_t *echo_args = bn_value_new_list ();
    bn_value_append (
        echo_args,
        bn_value_new_bytes (self->soak->payload, sizeof self->soak->payload));
    bn_result_t *results[2] = {NULL, NULL};
    char *msg_ids[16];
    size_t count = 0;
    if (bn_client_wait_for_engines (client, 1, S_HUB_TIMEOUT) == 0) {
        s_apply (self, S_VANISH_THREAD, lb, "sleep", sleep_args, &results[0]);
        s_apply (self, S_VANISH_THREAD, direct, "echo", echo_args, &results[1]);
    }
    for (int r = 0; r < 2; r++)
        for (size_t i = 0;
             results[r] && i < bn_result_count (results[r]) && count < 16; i++)
            msg_ids[count++] = strdup (bn_result_msg_id (results[r], i));
    bn_view_destroy (&lb);
    bn_view_destroy (&direct);
    s_follow_vanished (self, S_VANISH_THREAD, msg_ids, count, s_vanish_client,
                       &client);
    bn_client_destroy (&client);
    for (int r = 0; r < 2; r++)
        bn_result_destroy (&results[r]);
    for (size_t i = 0; i < count; i++)
        free (msg_ids[i]);
    bn_value_destroy (&sleep_args);
    bn_value_destroy (&echo_args);
}

static void
s_kill_process (void *arg)
{
    pid_t pid = *(pid_t *)arg;
    kill (pid, SIGKILL);
    waitpid (pid, NULL, 0);
}

//  Log file of the processes the soak starts itself.
static void
s_log_actions (s_mode_t *self, posix_spawn_file_actions_t *actions)
{
    char path[4096];
    snprintf (path, sizeof path, "%s/log/soak-children.log", self->dir);
    posix_spawn_file_actions_addopen (actions, 2, path,
                                      O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_addopen (actions, 0, "/dev/null", O_RDONLY, 0);
}

//  A client process (banyan-bench soak --client) sends requests, prints
//  their msg_ids, and is killed with SIGKILL once the hub has them.
static void
s_vanish_process (s_mode_t *self)
{
    char program[4096], file[4096];
    snprintf (program, sizeof program, "%s/banyan-bench", self->soak->bin_dir);
    snprintf (file, sizeof file, "%s/security/ipcontroller-client.json",
              self->dir);
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) != 0) {
        s_refused (self, S_VANISH_PROCESS, BN_ENOMEM);
        return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    posix_spawn_file_actions_adddup2 (&actions, fds[1], 1);
    s_log_actions (self, &actions);
    char *argv[] = {program, "soak", "--client", file, NULL};
    pid_t pid;
    int rc = posix_spawn (&pid, program, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy (&actions);
    close (fds[1]);
    if (rc != 0) {
        close (fds[0]);
        pthread_mutex_lock (&self->lock);
        self->counts[S_VANISH_PROCESS].failed++;
        s_problem (self, "cannot start %s: %s", program, strerror (rc));
        pthread_mutex_unlock (&self->lock);
        return;
    }
    //  Its msg_ids, one a line, until it has sent them all (an empty line)
    char buffer[4096] = "";
    size_t size = 0;
    double deadline = s_now () + S_HUB_TIMEOUT;
    while (size < sizeof buffer - 1 && !strstr (buffer, "\n\n") &&
           s_now () < deadline) {
        struct pollfd item = {.fd = fds[0], .events = POLLIN};
        if (poll (&item, 1, 100) <= 0)
            continue;
        ssize_t got = read (fds[0], buffer + size, sizeof buffer - 1 - size);
        if (got <= 0)
            break;
        size += (size_t)got;
        buffer[size] = 0;
    }
    buffer[size] = 0;
    close (fds[0]);
    char *msg_ids[16];
    size_t count = 0;
    for (char *line = strtok (buffer, "\n"); line && count < 16;
         line = strtok (NULL, "\n"))
        msg_ids[count++] = line;
    if (!count) {
        pthread_mutex_lock (&self->lock);
        self->counts[S_VANISH_PROCESS].failed++;
        s_problem (self, "the client process sent nothing");
        pthread_mutex_unlock (&self->lock);
        s_kill_process (&pid);
        return;
    }
    s_follow_vanished (self, S_VANISH_PROCESS, msg_ids, count, s_kill_process,
                       &pid);
}

//  Start an engine with the cluster's engine file, in the cluster's
//  process group (so that the cluster's end ends it too).
static pid_t
s_start_engine (s_mode_t *self)
{
    char program[4200];
    snprintf (program, sizeof program, "%s/banyan-engine", self->soak->bin_dir);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    s_log_actions (self, &actions);
    posix_spawn_file_actions_adddup2 (&actions, 2, 1);
    posix_spawnattr_t attr;
    posix_spawnattr_init (&attr);
    posix_spawnattr_setpgroup (&attr, self->pgid);
    posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETPGROUP);
    char *argv[] = {program, "--file",
                    (char *)bn_benchcluster_engine_file (self->cluster), NULL};
    pid_t pid;
    int rc = posix_spawn (&pid, program, &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy (&actions);
    posix_spawnattr_destroy (&attr);
    return rc == 0 ? pid : -1;
}

//  An engine joins, takes the traffic for a while, and is stopped with
//  SIGTERM, or killed with SIGKILL, while it runs a request, which must
//  fail.
static void
s_engine_life (s_mode_t *self, int signal)
{
    s_kind_t kind = signal == SIGKILL ? S_ENGINE_DEATH : S_ENGINE_STOP;
    bn_idset_t *before = bn_client_ids (self->client);
    pid_t pid = before ? s_start_engine (self) : -1;
    if (pid < 0) {
        bn_idset_destroy (&before);
        pthread_mutex_lock (&self->lock);
        self->counts[S_ENGINE_JOIN].failed++;
        s_problem (self, "cannot start an engine");
        pthread_mutex_unlock (&self->lock);
        return;
    }
    s_event (self, "engine process %d started", (int)pid);
    int id = -1;
    double deadline = s_now () + S_HUB_TIMEOUT;
    while (id < 0 && s_now () < deadline) {
        bn_idset_t *ids = bn_client_ids (self->client);
        for (int e = ids ? bn_idset_first (ids) : -1; e >= 0 && id < 0;
             e = bn_idset_next (ids, e))
            if (!bn_idset_contains (before, e))
                id = e;
        bn_idset_destroy (&ids);
        if (id < 0)
            zclock_sleep (50);
    }
    bn_idset_destroy (&before);
    pthread_mutex_lock (&self->lock);
    self->counts[S_ENGINE_JOIN].sent++;
    if (id >= 0)
        self->counts[S_ENGINE_JOIN].replies++;
    else {
        self->counts[S_ENGINE_JOIN].unanswered++;
        s_problem (self, "an engine started did not register in %.0f s",
                   S_HUB_TIMEOUT);
    }
    pthread_mutex_unlock (&self->lock);
    if (id < 0) {
        s_kill_process (&pid);
        return;
    }
    s_event (self, "engine process %d registered engine %d", (int)pid, id);
    s_nap (self->soak, S_ENGINE_LIFE);
    bn_view_t *view = bn_view_new (self->client, BN_VIEW_DIRECT);
    bn_value_t *args = bn_value_new_list ();
    bn_value_append (args, bn_value_new_float (S_DEATH_SLEEP));
    bn_result_t *result = NULL;
    if (view && args && bn_view_set_target_list (view, &id, 1) == 0)
        s_apply (self, kind, view, "sleep", args, &result);
    //  killed once the hub has the request, while the engine runs it
    int status = 0;
    deadline = s_now () + S_HUB_TIMEOUT;
    while (result && s_now () < deadline &&
           s_hub_state (self, bn_result_msg_id (result, 0), false, &status) < 0)
        zclock_sleep (50);
    s_event (self, "engine %d: sleep %s sent, hub state %d", id,
             result ? bn_result_msg_id (result, 0) : "(none)",
             result ? s_hub_state (self, bn_result_msg_id (result, 0), false,
                                   &status)
                    : -2);
    zclock_sleep (200);
    kill (pid, signal);
    //  a stopped engine that does not end is killed
    deadline = s_now () + S_HUB_TIMEOUT;
    while (waitpid (pid, NULL, WNOHANG) == 0)
        if (s_now () > deadline) {
            s_event (self, "engine %d did not end on SIGTERM", id);
            s_kill_process (&pid);
            break;
        } else
            zclock_sleep (20);
    s_event (self, "engine %d ended by signal %d", id, signal);
    if (result) {
        bn_result_wait (result, S_ANSWER_TIMEOUT);
        s_event (self, "engine %d: sleep answered: %s after %.1f s", id,
                 bn_strerror (bn_result_status (result, 0)),
                 bn_result_elapsed (result));
        if (s_count_item (self, kind, result, 0) == 0)
            s_wrong (self, kind, result, 0,
                     "an ended engine's sleep succeeded");
        bn_result_destroy (&result);
    }
    bn_value_destroy (&args);
    bn_view_destroy (&view);
}

static void *
s_chaos_thread (void *arg)
{
    s_mode_t *self = arg;
    for (int life = 0; !atomic_load (&self->soak->stop); life++) {
        s_vanish_thread (self);
        if (atomic_load (&self->soak->stop))
            break;
        s_vanish_process (self);
        if (atomic_load (&self->soak->stop))
            break;
        s_engine_life (self, life % 2 ? SIGKILL : SIGTERM);
        s_nap (self->soak, 1);
    }
    return NULL;
}

//  ---------------------------------------------------------------------
//  The soak

bn_soak_t *
bn_soak_new (const char *bin_dir)
{
    bn_soak_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->bin_dir = strdup (bin_dir ? bin_dir : ".");
    if (!self->bin_dir) {
        free (self);
        return NULL;
    }
    self->duration = 600;
    self->warmup = -1;
    self->engines = 4;
    self->tree_modes[0] = self->tree_modes[1] = true;
    self->max_growth = 0.05;
    atomic_init (&self->stop, false);
    for (size_t i = 0; i < sizeof self->payload; i++)
        self->payload[i] = (char)('A' + i % 26);
    return self;
}

static void
s_mode_destroy (s_mode_t **self_p)
{
    s_mode_t *self = *self_p;
    if (!self)
        return;
    bn_benchcluster_destroy (&self->cluster);
    bn_soakmon_destroy (&self->mon);
    if (self->events)
        fclose (self->events);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

void
bn_soak_destroy (bn_soak_t **self_p)
{
    assert (self_p);
    bn_soak_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < 2; i++)
        s_mode_destroy (&self->modes[i]);
    free (self->bin_dir);
    free (self);
    *self_p = NULL;
}

void
bn_soak_set_duration (bn_soak_t *self, double seconds)
{
    self->duration = seconds;
}

void
bn_soak_set_warmup (bn_soak_t *self, double seconds)
{
    self->warmup = seconds;
}

void
bn_soak_set_engines (bn_soak_t *self, int engines)
{
    self->engines = engines > 0 ? engines : 1;
}

int
bn_soak_set_tree_modes (bn_soak_t *self, const char *modes)
{
    bool threads = strcmp (modes, "threads") == 0;
    bool processes = strcmp (modes, "processes") == 0;
    bool both = strcmp (modes, "both") == 0;
    if (!threads && !processes && !both)
        return -1;
    self->tree_modes[0] = threads || both;
    self->tree_modes[1] = processes || both;
    return 0;
}

void
bn_soak_set_max_growth (bn_soak_t *self, double fraction)
{
    self->max_growth = fraction;
}

void
bn_soak_set_keep (bn_soak_t *self, bool keep)
{
    self->keep = keep;
}

//  Start a cluster in tree mode name: kary:2 of depth 1 (a root and two
//  leaves), engines two to a process.
static s_mode_t *
s_mode_start (bn_soak_t *soak, const char *name, FILE *out)
{
    s_mode_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->soak = soak;
    self->name = name;
    pthread_mutex_init (&self->lock, NULL);
    snprintf (self->dir, sizeof self->dir, "%s/%s", soak->root, name);
    mkdir (self->dir, 0700);
    char log[4096];
    snprintf (log, sizeof log, "%s/log", self->dir);
    mkdir (log, 0700);
    snprintf (log, sizeof log, "%s/log/soak-events.log", self->dir);
    self->events = fopen (log, "w");
    self->c.dir = self->dir;
    self->c.bin_dir = soak->bin_dir;
    self->c.per_process = 2;
    self->cluster =
        bn_benchcluster_new (&self->c, BN_BENCHSTACK_BANYAN, soak->engines);
    if (!self->cluster) {
        s_mode_destroy (&self);
        return NULL;
    }
    bn_benchcluster_set_depth (self->cluster, 1);
    bn_benchcluster_set_tree_mode (self->cluster, name);
    if (bn_benchcluster_start (self->cluster, 120 + soak->engines / 4.0) != 0) {
        fprintf (out, "soak: the %s cluster did not start: %s\n", name,
                 self->c.reason);
        s_mode_destroy (&self);
        return NULL;
    }
    self->client = bn_benchcluster_client (self->cluster);
    self->pgid = bn_benchcluster_pgid (self->cluster);
    self->mon = bn_soakmon_new (self->pgid, false);
    bn_idset_t *ids = bn_client_ids (self->client);
    for (int e = ids ? bn_idset_first (ids) : -1;
         e >= 0 && self->base_count < 64; e = bn_idset_next (ids, e))
        self->base[self->base_count++] = e;
    bn_idset_destroy (&ids);
    if (!self->mon || !self->base_count) {
        s_mode_destroy (&self);
        return NULL;
    }
    return self;
}

//  The per-kind table of a cluster, and whether it passed.
static bool
s_mode_report (s_mode_t *self, FILE *out)
{
    pthread_mutex_lock (&self->lock);
    fprintf (out, "\n%s tree mode: %zu rounds\n", self->name, self->rounds);
    fprintf (out, "  %-20s %9s %9s %7s %10s %6s %8s %6s\n", "kind", "sent",
             "replies", "errors", "unanswered", "wrong", "refused", "failed");
    s_count_t total = {0};
    for (int k = 0; k < S_KINDS; k++) {
        s_count_t *n = &self->counts[k];
        fprintf (out, "  %-20s %9zu %9zu %7zu %10zu %6zu %8zu %6zu\n",
                 s_kind_names[k], n->sent, n->replies, n->errors, n->unanswered,
                 n->wrong, n->refused, n->failed);
        total.sent += n->sent;
        total.replies += n->replies;
        total.errors += n->errors;
        total.unanswered += n->unanswered;
        total.wrong += n->wrong;
        total.refused += n->refused;
        total.failed += n->failed;
    }
    fprintf (out, "  %-20s %9zu %9zu %7zu %10zu %6zu %8zu %6zu\n", "total",
             total.sent, total.replies, total.errors, total.unanswered,
             total.wrong, total.refused, total.failed);
    if (self->ename_count) {
        fprintf (out, "  errors:");
        for (size_t i = 0; i < self->ename_count; i++)
            fprintf (out, " %s %zu", self->enames[i], self->ecounts[i]);
        fprintf (out, "\n");
    }
    for (size_t i = 0; i < self->problem_count && i < S_PROBLEMS; i++)
        fprintf (out, "  problem: %s\n", self->problems[i]);
    if (self->problem_count > S_PROBLEMS)
        fprintf (out, "  ... and %zu more problems\n",
                 self->problem_count - S_PROBLEMS);
    bool passed = total.unanswered == 0 && total.wrong == 0 &&
                  total.failed == 0 && self->counts[S_DIRECT].replies > 0 &&
                  self->counts[S_PULL].replies > 0;
    pthread_mutex_unlock (&self->lock);
    return passed;
}

int
bn_soak_run (bn_soak_t *self, FILE *out)
{
    assert (self);
    double warmup = self->warmup >= 0 ? self->warmup : self->duration / 5;
    double interval = self->duration / 400;
    interval = interval < 0.5 ? 0.5 : interval > 10 ? 10 : interval;
    double window = self->duration / 10;
    if (window < 3 * interval)
        window = 3 * interval;
    const char *tmp = getenv ("TMPDIR");
    snprintf (self->root, sizeof self->root, "%s/banyan-soak-XXXXXX",
              tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp (self->root)) {
        fprintf (out, "soak: cannot make a folder in %s: %s\n",
                 tmp && *tmp ? tmp : "/tmp", strerror (errno));
        return -1;
    }
    fprintf (out,
             "soak: %.0f s of mixed traffic, %d engines per cluster, "
             "warm-up %.0f s, samples every %.1f s, in %s\n",
             self->duration, self->engines, warmup, interval, self->root);
    struct sigaction action = {.sa_handler = s_on_signal}, old_int, old_term;
    sigemptyset (&action.sa_mask);
    s_interrupted = 0;
    sigaction (SIGINT, &action, &old_int);
    sigaction (SIGTERM, &action, &old_term);
    static const char *names[2] = {"threads", "processes"};
    size_t started = 0, wanted = 0;
    for (int i = 0; i < 2; i++)
        if (self->tree_modes[i]) {
            wanted++;
            self->modes[i] = s_mode_start (self, names[i], out);
            started += self->modes[i] != NULL;
        }
    if (started < wanted || s_interrupted) {
        fprintf (out, "soak: FAIL (%s; logs in %s)\n",
                 s_interrupted ? "interrupted" : "a cluster did not start",
                 self->root);
        for (int i = 0; i < 2; i++)
            s_mode_destroy (&self->modes[i]);
        sigaction (SIGINT, &old_int, NULL);
        sigaction (SIGTERM, &old_term, NULL);
        return s_interrupted ? 2 : -1;
    }
    bn_soakmon_t *client_mon = bn_soakmon_new (0, true);
    double start = s_now ();
    self->start = start;
    for (int i = 0; i < 2; i++)
        if (self->modes[i]) {
            bn_soakmon_sample (self->modes[i]->mon, 0);
            self->modes[i]->running =
                pthread_create (&self->modes[i]->traffic, NULL,
                                s_traffic_thread, self->modes[i]) == 0 &&
                pthread_create (&self->modes[i]->chaos, NULL, s_chaos_thread,
                                self->modes[i]) == 0;
        }
    double next_progress = start + self->duration / 10;
    while (s_now () - start < self->duration && !s_interrupted) {
        double seconds = s_now () - start;
        for (int i = 0; i < 2; i++)
            if (self->modes[i])
                bn_soakmon_sample (self->modes[i]->mon, seconds);
        if (client_mon)
            bn_soakmon_sample (client_mon, seconds);
        if (s_now () >= next_progress) {
            fprintf (out, "soak: %.0f/%.0f s:", seconds, self->duration);
            for (int i = 0; i < 2; i++)
                if (self->modes[i]) {
                    pthread_mutex_lock (&self->modes[i]->lock);
                    size_t sent = 0, unanswered = 0;
                    for (int k = 0; k < S_KINDS; k++) {
                        sent += self->modes[i]->counts[k].sent;
                        unanswered += self->modes[i]->counts[k].unanswered;
                    }
                    fprintf (out, " %s %zu rounds, %zu sent, %zu unanswered;",
                             names[i], self->modes[i]->rounds, sent,
                             unanswered);
                    pthread_mutex_unlock (&self->modes[i]->lock);
                }
            fprintf (out, "\n");
            fflush (out);
            next_progress += self->duration / 10;
        }
        for (double until = s_now () + interval;
             s_now () < until && !s_interrupted;)
            zclock_sleep (100);
    }
    if (s_interrupted)
        fprintf (out, "soak: interrupted after %.0f s\n", s_now () - start);
    //  The last samples, with the traffic still running
    double seconds = s_now () - start;
    for (int i = 0; i < 2; i++)
        if (self->modes[i])
            bn_soakmon_sample (self->modes[i]->mon, seconds);
    if (client_mon)
        bn_soakmon_sample (client_mon, seconds);
    atomic_store (&self->stop, true);
    for (int i = 0; i < 2; i++)
        if (self->modes[i] && self->modes[i]->running) {
            pthread_join (self->modes[i]->traffic, NULL);
            pthread_join (self->modes[i]->chaos, NULL);
        }
    bool passed = true;
    int grew = 0;
    double rss_growth = 0, fd_growth = 0;
    size_t unanswered = 0, sent = 0;
    for (int i = 0; i < 2; i++) {
        s_mode_t *mode = self->modes[i];
        if (!mode)
            continue;
        passed &= s_mode_report (mode, out);
        for (int k = 0; k < S_KINDS; k++) {
            sent += mode->counts[k].sent;
            unanswered += mode->counts[k].unanswered;
        }
        fprintf (out, "\n");
        grew += bn_soakmon_report (mode->mon, mode->name, warmup, window,
                                   self->max_growth, out);
        char path[4096];
        snprintf (path, sizeof path, "%s/log/soak-samples.csv", mode->dir);
        bn_soakmon_save (mode->mon, path);
        if (bn_soakmon_rss_growth (mode->mon) > rss_growth)
            rss_growth = bn_soakmon_rss_growth (mode->mon);
        if (bn_soakmon_fd_growth (mode->mon) > fd_growth)
            fd_growth = bn_soakmon_fd_growth (mode->mon);
    }
    if (client_mon) {
        fprintf (out, "\n");
        bn_soakmon_report (client_mon, "banyan-bench (the clients)", warmup,
                           window, self->max_growth, out);
    }
    bn_soakmon_destroy (&client_mon);
    passed &= grew == 0;
    fprintf (out,
             "\nsoak: %s: %zu sent, %zu unanswered; largest growth after "
             "warm-up: RSS %+.1f %%, descriptors %+.1f %% (limit %.1f %%)\n",
             s_interrupted ? "INTERRUPTED"
             : passed      ? "PASS"
                           : "FAIL",
             sent, unanswered, rss_growth * 100, fd_growth * 100,
             self->max_growth * 100);
    for (int i = 0; i < 2; i++)
        s_mode_destroy (&self->modes[i]);
    sigaction (SIGINT, &old_int, NULL);
    sigaction (SIGTERM, &old_term, NULL);
    if (passed && !s_interrupted && !self->keep) {
        char command[4200];
        snprintf (command, sizeof command, "rm -rf '%s'", self->root);
        if (system (command) != 0)
            fprintf (out, "soak: could not remove %s\n", self->root);
    } else
        fprintf (out, "soak: logs in %s\n", self->root);
    return s_interrupted ? 2 : passed ? 0 : 1;
}

int
bn_soak_client_main (const char *file)
{
    int error = 0;
    bn_client_t *client = bn_client_new (file, S_HUB_TIMEOUT, &error);
    if (!client) {
        fprintf (stderr, "banyan-bench soak --client: %s\n",
                 bn_strerror (error));
        return 1;
    }
    if (bn_client_wait_for_engines (client, 1, S_HUB_TIMEOUT) != 0) {
        bn_client_destroy (&client);
        return 1;
    }
    bn_view_t *lb = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    bn_view_t *direct = bn_view_new (client, BN_VIEW_DIRECT);
    bn_value_t *sleep_args = bn_value_new_list ();
    bn_value_append (sleep_args, bn_value_new_float (1.0));
    bn_value_t *echo_args = bn_value_new_list ();
    bn_value_append (echo_args, bn_value_new_str ("gone"));
    bn_result_t *results[3] = {NULL, NULL, NULL};
    bn_view_apply (lb, "sleep", sleep_args, NULL, &results[0]);
    bn_view_apply (lb, "sleep", sleep_args, NULL, &results[1]);
    bn_view_apply (direct, "echo", echo_args, NULL, &results[2]);
    for (int r = 0; r < 3; r++)
        for (size_t i = 0; results[r] && i < bn_result_count (results[r]); i++)
            printf ("%s\n", bn_result_msg_id (results[r], i));
    printf ("\n");
    fflush (stdout);
    //  killed here, mid-request
    while (true)
        pause ();
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_task: the task scheduler (doc/wire.md 8), following 7.1.0's
    TaskScheduler (ipyparallel/controller/task_scheduler.py).

    A request is forwarded as the frames it arrived in: the job keeps the
    received bn_msg (buffers shared, signature kept) and sends a copy that
    shares its frames, so a retry can send it again. The header is read
    with the scanner; the metadata is parsed once per task, when it
    arrives. Engine replies are read with the scanner unless they failed.

    Engines available for work (under the high-water mark) are kept in a
    binary heap ordered as the scheme wants them (load then LRU order for
    leastload, LRU order for lru), in an array for the uniform picks, and
    in a Fenwick tree of 1/load weights for weighted: every scheme picks in
    O(log engines). Dependencies live in hash tables: a msg_id queued or
    running is a job, the outcomes of the last finished ones are kept
    compactly (bn_outcomes), and for each unfinished msg_id the jobs
    waiting on it. Jobs whose `after` is met but that found no engine wait
    in submission order and are retried when an engine becomes available.

    An engine registered but not yet connected to the task port (the hub
    registers it when its heart answers): within the connect grace the
    task sent to it waits for it in a bn_holdq, and the engine takes no
    other task until that one went. A task still held when the grace ends
    (or the engine unregisters) never reached an engine, so it is placed
    again as 7.1.0 places a task an engine could not run: with that engine
    on its blacklist, elsewhere, or failed with ImpossibleDependency when
    its targets leave no other engine. An engine that did not connect
    within its grace gets no tasks until it registers again.  */
#include "bn_task.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bn_error.h"
#include "bn_heap.h"
#include "bn_holdq.h"
#include "bn_hosts.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_outcomes.h"
#include "bn_watch.h"
#include "bn_wire.h"

#define S_BATCH 1024            //  messages read per wake-up
#define S_KEY_MAX 256           //  longest engine uuid accepted
#define S_STATUS_MAX 32         //  longest reply status we read
#define S_TRIES 32              //  rejection-sampling tries per random pick
#define S_INTERNAL "banyan-hub" //  client ident of internal submissions
#define S_NONE SIZE_MAX

//  What became of a submitted msg_id.
typedef enum { S_UNKNOWN, S_PENDING, S_SUCCEEDED, S_FAILED } s_state_t;

//  A set of msg_ids and how it is met (ipyparallel.Dependency).
typedef struct {
    char **ids;
    size_t count;
    bool all, success, failure;
} s_dep_t;

typedef struct _s_engine_t s_engine_t;
typedef struct _s_job_t s_job_t;

typedef enum {
    S_JOB_NEW,
    S_JOB_BLOCKED,
    S_JOB_WAITING,
    S_JOB_HELD, //  sent to an engine not connected yet (in the holdq)
    S_JOB_RUNNING
} s_where_t;

struct _s_job_t {
    char *msg_id;   //  Request msg_id (key in jobs)
    bn_msg_t *msg;  //  The request as received, idents [client]
    uint64_t seq;   //  Submission order
    s_dep_t after;  //  Time dependencies
    s_dep_t follow; //  Location dependencies
    char **targets; //  Allowed engine uuids (none: any)
    size_t ntargets;
    char **blacklist; //  Engines that failed this job
    size_t nblack;
    int retries;          //  Retries left
    double timeout;       //  Seconds it may wait in the queue, 0 = forever
    int64_t deadline;     //  When it times out (zclock_mono ms)
    size_t deadline_at;   //  Place in the deadline heap (bn_heap)
    s_where_t where;      //  Blocked on after, waiting for an engine, running
    bool in_graph;        //  Registered under its unfinished dependencies
    bool internal;        //  Submitted by the controller: no client reply
    s_job_t *prev, *next; //  Neighbours in the waiting list
    s_engine_t *engine;   //  Engine running (or holding) it
    void *run_handle;     //  Position in engine->running
    bn_task_t *owner;
};

struct _s_engine_t {
    char *uuid; //  Routing id
    size_t uuid_len;
    const char *name;  //  Interned uuid, outlives the engine
    int eid;           //  Engine id, for error texts
    int load;          //  Tasks outstanding
    int64_t seq;       //  LRU position: smaller is less recently used
    bool closed;       //  Unregistered: no new tasks
    bool unroutable;   //  Not connected to the task port (yet): out of
                       //  the picks until a send or a reply shows it is
    size_t heap_at;    //  Place in the heap (bn_heap)
    size_t avail_at;   //  Index in avail, S_NONE if unavailable
    size_t slot;       //  Fenwick slot (weighted)
    zlistx_t *running; //  s_job_t *, oldest first
    uint64_t mark;     //  Candidate-list dedup epoch
};

typedef struct {
    uint64_t received;      //  Messages read, both sides
    uint64_t submitted;     //  Tasks sent to engines (retries included)
    uint64_t forwarded;     //  Replies sent to clients
    bn_msg_drops_t drops;   //  Dropped: framing, signature, replay, header
    uint64_t bad_metadata;  //  Request metadata of the wrong shape
    uint64_t duplicate_id;  //  Requests reusing a live msg_id
    uint64_t unknown_reply; //  Engine replies to no task it runs
    uint64_t unmet;         //  Engine said dependencies_met false
    uint64_t retried;       //  Failed tasks retried
    uint64_t invalid;       //  InvalidDependency failures
    uint64_t impossible;    //  ImpossibleDependency failures
    uint64_t timed_out;     //  TaskTimeout failures
    uint64_t stranded;      //  Tasks of engines that died
    uint64_t not_connected; //  Engine registered but not on the task port
    bn_msg_undelivered_t undelivered; //  Replies clients did not get
    uint64_t send_failed;             //  Other send errors
    uint64_t paused;                  //  Times the client side was paused
} s_stats_t;

struct _bn_task_t {
    bn_task_scheme_t scheme;
    int hwm;              //  0 = unlimited
    zsock_t *client_side; //  Client ROUTER (borrowed)
    zsock_t *engine_side; //  Engine ROUTER (borrowed)
    void *client_handle;
    void *engine_handle;
    bn_watch_t *sockets;          //  the two, in the loop
    bn_watch_item_t *client_item; //  NULL while clients are not read
    bn_watch_item_t *engine_item;
    bn_session_t *session; //  Signs the replies we make
    bn_monitor_t monitor;
    bool has_monitor;
    zloop_t *loop;
    bool reading; //  Client side registered in the loop
    size_t queue_max;

    zhashx_t *engines;       //  uuid -> s_engine_t
    zhashx_t *names;         //  uuid -> interned copy
    bn_outcomes_t *outcomes; //  The last finished msg_ids (records_max)
    zhashx_t *jobs;          //  msg_id -> s_job_t (queued or running)
    zhashx_t *graph;         //  msg_id -> zlistx of waiting msg_ids
    bn_heap_t *heap;         //  Available engines, best first
    s_engine_t **avail;      //  Available engines, any order
    size_t navail;
    size_t cap;         //  Room in avail
    double *fenwick;    //  1/load weights by slot (weighted)
    s_engine_t **slots; //  Engine of each slot
    size_t nslots;
    size_t slot_cap;
    s_job_t *wait_head; //  After met, no engine yet; by seq
    s_job_t *wait_tail;
    size_t queued;     //  Jobs blocked or waiting
    size_t running;    //  Jobs on engines
    zlist_t *finished; //  msg_ids whose dependents need a look
    bool rescan;       //  An engine became available
    bool settling;     //  Inside s_settle
    uint64_t job_seq;
    int64_t front_seq; //  LRU position given to a new engine
    int64_t back_seq;  //  LRU position given on assignment
    uint64_t epoch;    //  Candidate-list dedup
    uint64_t rand_state;
    bn_heap_t *deadlines; //  Queued jobs with a timeout, earliest first
    int timer;            //  zloop timer for the earliest, -1 if none
    bn_holdq_t *holdq;    //  Tasks for engines not connected yet
    bn_hosts_t *hosts;    //  Host nodes' links (borrowed), or NULL
    size_t held;          //  Jobs in it
    int64_t timer_at;     //  When that timer fires
    s_stats_t stats;
};

//  --------------------------------------------------------------------------
//  Small helpers

int
bn_task_scheme_parse (const char *name)
{
    static const char *names[] = {"leastload", "lru",      "plainrandom",
                                  "twobin",    "weighted", "pure"};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (streq (name, names[i]))
            return (int)i;
    return -1;
}

static uint64_t
s_rand (bn_task_t *self)
{
    //  xorshift64*
    uint64_t x = self->rand_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    self->rand_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

//  Uniform integer in [0, n).
static size_t
s_randint (bn_task_t *self, size_t n)
{
    return (size_t)(s_rand (self) % n);
}

//  Uniform double in [0, 1).
static double
s_random (bn_task_t *self)
{
    return (double)(s_rand (self) >> 11) / 9007199254740992.0;
}

static bool
s_available (bn_task_t *self, s_engine_t *engine)
{
    return !engine->closed && !engine->unroutable &&
           (self->hwm == 0 || engine->load < self->hwm);
}

static double
s_weight (int load)
{
    return 1.0 / (1e-6 + load);
}

static void
s_dep_free (s_dep_t *dep)
{
    for (size_t i = 0; i < dep->count; i++)
        free (dep->ids[i]);
    free (dep->ids);
    dep->ids = NULL;
    dep->count = 0;
}

static void
s_strings_free (char **strings, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free (strings[i]);
    free (strings);
}

static bool
s_strings_have (char **strings, size_t count, const char *s)
{
    for (size_t i = 0; i < count; i++)
        if (streq (strings[i], s))
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Engine sets: heap, uniform array, Fenwick tree

//  True if engine a should be chosen before b (bn_heap_before_fn).
static bool
s_before (void *arg, const void *a, const void *b)
{
    const bn_task_t *self = (const bn_task_t *)arg;
    const s_engine_t *x = (const s_engine_t *)a, *y = (const s_engine_t *)b;
    if (self->scheme == BN_TASK_LEASTLOAD && x->load != y->load)
        return x->load < y->load;
    return x->seq < y->seq;
}

static void
s_fenwick_add (bn_task_t *self, size_t slot, double delta)
{
    for (size_t i = slot + 1; i <= self->slot_cap; i += i & (~i + 1))
        self->fenwick[i - 1] += delta;
}

//  Slot whose cumulative weight first reaches x.
static size_t
s_fenwick_find (bn_task_t *self, double x)
{
    size_t pos = 0;
    size_t step = 1;
    while (step * 2 <= self->slot_cap)
        step *= 2;
    for (; step; step /= 2)
        if (pos + step <= self->slot_cap && self->fenwick[pos + step - 1] < x) {
            pos += step;
            x -= self->fenwick[pos - 1];
        }
    return pos < self->nslots ? pos : self->nslots - 1;
}

static double
s_fenwick_total (bn_task_t *self)
{
    double total = 0;
    for (size_t i = self->slot_cap; i > 0; i -= i & (~i + 1))
        total += self->fenwick[i - 1];
    return total;
}

//  Weight an engine has in the Fenwick tree now.
static double
s_slot_weight (bn_task_t *self, s_engine_t *engine)
{
    return bn_heap_has (self->heap, engine) ? s_weight (engine->load) : 0.0;
}

//  Put engine where its load and availability say (call after a change);
//  old_weight is its weight before the change.
static void
s_engine_update (bn_task_t *self, s_engine_t *engine, double old_weight)
{
    bool available = s_available (self, engine);
    bool listed = bn_heap_has (self->heap, engine);
    if (available && !listed) {
        //  (s_engine_room made room for every engine)
        bn_heap_insert (self->heap, engine);
        engine->avail_at = self->navail;
        self->avail[self->navail++] = engine;
        self->rescan = true;
    } else if (!available && listed) {
        bn_heap_remove (self->heap, engine);
        s_engine_t *last = self->avail[--self->navail];
        self->avail[engine->avail_at] = last;
        last->avail_at = engine->avail_at;
        engine->avail_at = S_NONE;
    } else if (available)
        bn_heap_update (self->heap, engine);
    if (self->scheme == BN_TASK_WEIGHTED) {
        double weight = s_slot_weight (self, engine);
        if (weight != old_weight)
            s_fenwick_add (self, engine->slot, weight - old_weight);
    }
}

//  Make room for one more engine in the sets; -1 if out of memory.
static int
s_engine_room (bn_task_t *self)
{
    size_t count = zhashx_size (self->engines) + 1;
    if (count > self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 16;
        s_engine_t **avail = realloc (self->avail, cap * sizeof *avail);
        if (avail)
            self->avail = avail;
        if (!avail || bn_heap_reserve (self->heap, cap) != 0)
            return -1;
        self->cap = cap;
    }
    if (self->scheme == BN_TASK_WEIGHTED && self->nslots == self->slot_cap) {
        //  rebuild the tree at twice the size
        size_t cap = self->slot_cap ? self->slot_cap * 2 : 16;
        double *tree = calloc (cap, sizeof *tree);
        s_engine_t **slots = calloc (cap, sizeof *slots);
        if (!tree || !slots) {
            free (tree);
            free (slots);
            return -1;
        }
        if (self->nslots)
            memcpy (slots, self->slots, self->nslots * sizeof *slots);
        free (self->fenwick);
        free (self->slots);
        self->fenwick = tree;
        self->slots = slots;
        self->slot_cap = cap;
        for (size_t slot = 0; slot < self->nslots; slot++)
            if (slots[slot])
                s_fenwick_add (self, slot, s_slot_weight (self, slots[slot]));
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Records and dependencies

//  What became of msg_id: pending while it is a job, S_UNKNOWN if it was
//  never submitted here or is forgotten; where it ran (interned, or NULL)
//  in *engine_p if given.
static s_state_t
s_state (bn_task_t *self, const char *msg_id, const char **engine_p)
{
    if (engine_p)
        *engine_p = NULL;
    if (zhashx_lookup (self->jobs, msg_id))
        return S_PENDING;
    const void *where = NULL;
    bn_outcome_t outcome = bn_outcomes_get (self->outcomes, msg_id, &where);
    if (engine_p)
        *engine_p = (const char *)where;
    return outcome == BN_OUTCOME_SUCCEEDED ? S_SUCCEEDED
           : outcome == BN_OUTCOME_FAILED  ? S_FAILED
                                           : S_UNKNOWN;
}

static bool
s_done (bn_task_t *self, const char *msg_id)
{
    s_state_t state = s_state (self, msg_id, NULL);
    return state == S_SUCCEEDED || state == S_FAILED;
}

//  Whether state is one dep counts as met.
static bool
s_meets (s_dep_t *dep, s_state_t state)
{
    return (state == S_SUCCEEDED && dep->success) ||
           (state == S_FAILED && dep->failure);
}

//  Whether msg_id counts toward dep (on engine when given).
static bool
s_counts (bn_task_t *self, s_dep_t *dep, const char *msg_id, const char *engine)
{
    const char *ran = NULL;
    s_state_t state = s_state (self, msg_id, &ran);
    if (engine && ran != engine)
        return false;
    return s_meets (dep, state);
}

//  Dependency.check against all results, or engine's when given.
static bool
s_dep_met (bn_task_t *self, s_dep_t *dep, const char *engine)
{
    if (dep->count == 0)
        return true;
    for (size_t i = 0; i < dep->count; i++) {
        bool counts = s_counts (self, dep, dep->ids[i], engine);
        if (dep->all && !counts)
            return false;
        if (!dep->all && counts)
            return true;
    }
    return dep->all;
}

//  Dependency.unreachable.
static bool
s_dep_unreachable (bn_task_t *self, s_dep_t *dep)
{
    if (dep->count == 0)
        return false;
    for (size_t i = 0; i < dep->count; i++) {
        s_state_t state = s_state (self, dep->ids[i], NULL);
        bool bad = (state == S_SUCCEEDED && !dep->success) ||
                   (state == S_FAILED && !dep->failure);
        if (dep->all && bad)
            return true;
        if (!dep->all && !bad)
            return false;
    }
    return !dep->all;
}

//  A JSON list of ids (or one id) into *ids; -1 if not strings.
static int
s_parse_ids (json_t *value, s_dep_t *dep)
{
    if (!value || json_is_null (value))
        return 0;
    if (json_is_string (value)) {
        dep->ids = malloc (sizeof (char *));
        dep->ids[0] = dep->ids ? strdup (json_string_value (value)) : NULL;
        dep->count = dep->ids && dep->ids[0] ? 1 : 0;
        return 0;
    }
    if (!json_is_array (value))
        return -1;
    size_t size = json_array_size (value);
    if (size == 0)
        return 0;
    dep->ids = calloc (size, sizeof (char *));
    if (!dep->ids)
        return -1;
    zhashx_t *seen = size > 8 ? zhashx_new () : NULL;
    for (size_t i = 0; i < size; i++) {
        json_t *item = json_array_get (value, i);
        if (!json_is_string (item))
            return -1;
        const char *id = json_string_value (item);
        if (seen ? zhashx_lookup (seen, id) != NULL
                 : s_strings_have (dep->ids, dep->count, id))
            continue;
        dep->ids[dep->count] = strdup (id);
        if (!dep->ids[dep->count])
            break;
        if (seen)
            zhashx_insert (seen, dep->ids[dep->count], dep);
        dep->count++;
    }
    zhashx_destroy (&seen);
    return 0;
}

//  A dependency as the view sends it: a list, an id, or
//  {"dependencies", "all", "success", "failure"}. -1 with *why set if bad.
static int
s_parse_dep (json_t *value, s_dep_t *dep, const char **why)
{
    dep->all = true;
    dep->success = true;
    dep->failure = false;
    if (json_is_object (value)) {
        json_t *flag;
        if ((flag = json_object_get (value, "all")))
            dep->all = json_is_true (flag) ||
                       (json_is_integer (flag) && json_integer_value (flag));
        if ((flag = json_object_get (value, "success")))
            dep->success = json_is_true (flag) || (json_is_integer (flag) &&
                                                   json_integer_value (flag));
        if ((flag = json_object_get (value, "failure")))
            dep->failure = json_is_true (flag) || (json_is_integer (flag) &&
                                                   json_integer_value (flag));
        if (!dep->success && !dep->failure) {
            *why = "Must depend on at least one of successes or failures!";
            return -1;
        }
        value = json_object_get (value, "dependencies");
    }
    if (s_parse_ids (value, dep) != 0) {
        *why = "a dependency must be a list of msg_id strings";
        return -1;
    }
    return 0;
}

//  Remove from dep the ids that counts() says are met.
static void
s_dep_reduce (bn_task_t *self, s_dep_t *dep)
{
    size_t kept = 0;
    for (size_t i = 0; i < dep->count; i++) {
        if (s_meets (dep, s_state (self, dep->ids[i], NULL)))
            free (dep->ids[i]);
        else
            dep->ids[kept++] = dep->ids[i];
    }
    dep->count = kept;
}

//  --------------------------------------------------------------------------
//  Jobs

static void
s_job_destroy (s_job_t **job_p)
{
    s_job_t *job = *job_p;
    if (!job)
        return;
    bn_msg_destroy (&job->msg);
    s_dep_free (&job->after);
    s_dep_free (&job->follow);
    s_strings_free (job->targets, job->ntargets);
    s_strings_free (job->blacklist, job->nblack);
    free (job->msg_id);
    free (job);
    *job_p = NULL;
}

//  --------------------------------------------------------------------------
//  Timeouts: one heap of deadlines behind one zloop timer (zloop scans its
//  timers on every wake-up; a timer per queued task would make that a
//  scan of the queue)

//  True if job a is due before b (bn_heap_before_fn).
static bool
s_due_before (void *arg, const void *a, const void *b)
{
    const s_job_t *x = (const s_job_t *)a, *y = (const s_job_t *)b;
    return x->deadline != y->deadline ? x->deadline < y->deadline
                                      : x->seq < y->seq;
}

//  Forget job's deadline (it runs, or it is gone).
static void
s_timer_cancel (bn_task_t *self, s_job_t *job)
{
    if (bn_heap_has (self->deadlines, job))
        bn_heap_remove (self->deadlines, job);
}

static int s_on_deadline (zloop_t *loop, int timer_id, void *arg);

//  Have the zloop timer fire by the earliest deadline.
static void
s_timer_arm (bn_task_t *self)
{
    s_job_t *first = (s_job_t *)bn_heap_first (self->deadlines);
    if (!self->loop || !first)
        return;
    int64_t due = first->deadline;
    if (self->timer >= 0 && self->timer_at <= due)
        return;
    if (self->timer >= 0)
        zloop_timer_end (self->loop, self->timer);
    int64_t delay = due - zclock_mono ();
    self->timer = zloop_timer (self->loop, delay > 1 ? (size_t)delay : 1, 1,
                               s_on_deadline, self);
    self->timer_at = due;
}

//  Give job a deadline timeout seconds from now; -1 if out of memory.
static int
s_timer_start (bn_task_t *self, s_job_t *job)
{
    double ms = job->timeout * 1000.0;
    job->deadline = zclock_mono () + (ms > 1e12 ? (int64_t)1e12 : (int64_t)ms);
    if (bn_heap_insert (self->deadlines, job) != 0)
        return -1;
    s_timer_arm (self);
    return 0;
}

static void
s_wait_unlink (bn_task_t *self, s_job_t *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        self->wait_head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    else
        self->wait_tail = job->prev;
    job->prev = job->next = NULL;
}

//  Insert into the waiting list in submission order.
static void
s_wait_link (bn_task_t *self, s_job_t *job)
{
    s_job_t *after = self->wait_tail;
    while (after && after->seq > job->seq)
        after = after->prev;
    job->prev = after;
    job->next = after ? after->next : self->wait_head;
    if (job->next)
        job->next->prev = job;
    else
        self->wait_tail = job;
    if (after)
        after->next = job;
    else
        self->wait_head = job;
}

static void s_flow (bn_task_t *self);
static int s_on_client (zloop_t *loop, zsock_t *sock, void *arg);

//  Take job out of the queue (blocked or waiting); cancels its timeout.
static void
s_dequeue (bn_task_t *self, s_job_t *job)
{
    if (job->where == S_JOB_WAITING)
        s_wait_unlink (self, job);
    if (job->where == S_JOB_WAITING || job->where == S_JOB_BLOCKED) {
        self->queued--;
        s_flow (self);
    }
    job->where = S_JOB_NEW;
    s_timer_cancel (self, job);
}

//  Forget job (out of every structure) and free it.
static void
s_job_drop (bn_task_t *self, s_job_t *job)
{
    s_dequeue (self, job);
    zhashx_delete (self->jobs, job->msg_id);
    s_job_destroy (&job);
}

static void s_settle (bn_task_t *self);

//  msg_id finished: its dependents get a look.
static void
s_finished (bn_task_t *self, const char *msg_id)
{
    //  the list copies the string (autofree)
    if (zhashx_lookup (self->graph, msg_id))
        zlist_append (self->finished, (void *)msg_id);
}

//  After a send on a socket the scheduler reads: the send may have taken
//  the signal of input that came meanwhile (bn_watch).
static void
s_sent (bn_task_t *self, bn_watch_item_t *item)
{
    if (self->sockets)
        bn_watch_check (self->sockets, item);
}

static void
s_send_client (bn_task_t *self, bn_msg_t **msg_p)
{
    if (bn_msg_send_client (msg_p, self->client_handle, self->session,
                            &self->stats.undelivered, "task") == 0)
        self->stats.forwarded++;
    s_sent (self, self->client_item);
}

//  msg_id finished in state (on engine): it is remembered as the newest
//  outcome, and the oldest past the bound are forgotten.
static void
s_set_record (bn_task_t *self, const char *msg_id, s_state_t state,
              const char *engine)
{
    if (bn_outcomes_add (self->outcomes, msg_id,
                         state == S_SUCCEEDED ? BN_OUTCOME_SUCCEEDED
                                              : BN_OUTCOME_FAILED,
                         engine) != 0)
        bn_log_error ("task: out of memory remembering that %s finished",
                      msg_id);
}

//  Fail a queued job with an error reply the scheduler makes
//  (fail_unreachable): apply_reply, metadata {}, engine_info {}.
static void s_fail (bn_task_t *self, s_job_t *job, const char *ename,
                    const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
s_fail (bn_task_t *self, s_job_t *job, const char *ename, const char *format,
        ...)
{
    char evalue[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, sizeof evalue, format, args);
    va_end (args);
    bn_log_info ("task: %s fails: %s: %s", job->msg_id, ename, evalue);
    bn_msg_t *reply =
        bn_msg_new_reply (self->session, job->msg, BN_MSG_APPLY_REPLY);
    json_t *content = bn_wire_error (ename, evalue, NULL, NULL);
    if (reply && content) {
        bn_msg_set_content (reply, content);
        content = NULL;
        if (self->has_monitor && self->monitor.reply)
            self->monitor.reply (self->monitor.arg, BN_MONITOR_QUEUE_TASK,
                                 reply, NULL);
        if (job->internal)
            bn_msg_destroy (&reply);
        else
            s_send_client (self, &reply);
    } else {
        self->stats.send_failed++;
        bn_log_error ("task: cannot build the %s reply to %s", ename,
                      job->msg_id);
    }
    json_decref (content);
    bn_msg_destroy (&reply);
    s_set_record (self, job->msg_id, S_FAILED, NULL);
    s_finished (self, job->msg_id);
    s_job_drop (self, job);
}

static void
s_fail_impossible (bn_task_t *self, s_job_t *job)
{
    self->stats.impossible++;
    s_fail (self, job, "ImpossibleDependency",
            "task %s can never run: its dependencies, targets or blacklist "
            "exclude every engine",
            job->msg_id);
}

//  --------------------------------------------------------------------------
//  Choosing an engine

static bool
s_blacklisted (s_job_t *job, s_engine_t *engine)
{
    return job->nblack &&
           s_strings_have (job->blacklist, job->nblack, engine->uuid);
}

//  Apply the scheme to candidates (sorted in LRU order).
static s_engine_t *
s_pick_list (bn_task_t *self, s_engine_t **cands, size_t n)
{
    switch (self->scheme) {
    case BN_TASK_LEASTLOAD: {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (cands[i]->load < cands[best]->load)
                best = i;
        return cands[best];
    }
    case BN_TASK_PLAINRANDOM:
        return cands[s_randint (self, n)];
    case BN_TASK_TWOBIN: {
        size_t a = s_randint (self, n), b = s_randint (self, n);
        return cands[a < b ? a : b];
    }
    case BN_TASK_WEIGHTED: {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += s_weight (cands[i]->load);
        double x = s_random (self) * total, y = s_random (self) * total;
        size_t idx = 0, idy = 0;
        double sum = s_weight (cands[0]->load);
        while (sum < x && idx + 1 < n)
            sum += s_weight (cands[++idx]->load);
        sum = s_weight (cands[0]->load);
        while (sum < y && idy + 1 < n)
            sum += s_weight (cands[++idy]->load);
        return s_weight (cands[idy]->load) > s_weight (cands[idx]->load)
                   ? cands[idy]
                   : cands[idx];
    }
    default:
        return cands[0];
    }
}

static int
s_by_seq (const void *a, const void *b)
{
    const s_engine_t *x = *(s_engine_t *const *)a;
    const s_engine_t *y = *(s_engine_t *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

//  True if engine is not on job's blacklist (bn_heap_accept_fn).
static bool
s_not_blacklisted (void *arg, const void *engine)
{
    return !s_blacklisted ((s_job_t *)arg, (s_engine_t *)engine);
}

//  Best available engine not blacklisted for job.
static s_engine_t *
s_heap_pick (bn_task_t *self, s_job_t *job)
{
    if (!job->nblack)
        return (s_engine_t *)bn_heap_first (self->heap);
    return (s_engine_t *)bn_heap_find (self->heap, s_not_blacklisted, job);
}

//  One uniform (or, weighted, 1/load) pick among available engines not
//  blacklisted for job; NULL if rejection sampling gave up.
static s_engine_t *
s_sample (bn_task_t *self, s_job_t *job)
{
    for (int tries = 0; tries < S_TRIES; tries++) {
        s_engine_t *engine;
        if (self->scheme == BN_TASK_WEIGHTED) {
            double x = s_random (self) * s_fenwick_total (self);
            engine = self->slots[s_fenwick_find (self, x)];
            if (!engine || !bn_heap_has (self->heap, engine))
                continue;
        } else
            engine = self->avail[s_randint (self, self->navail)];
        if (!s_blacklisted (job, engine))
            return engine;
    }
    return NULL;
}

//  Pick among every available engine (no targets, no follow).
static s_engine_t *
s_pick_pool (bn_task_t *self, s_job_t *job)
{
    switch (self->scheme) {
    case BN_TASK_PLAINRANDOM:
    case BN_TASK_TWOBIN:
    case BN_TASK_WEIGHTED: {
        s_engine_t *a = s_sample (self, job);
        s_engine_t *b =
            a && self->scheme != BN_TASK_PLAINRANDOM ? s_sample (self, job) : a;
        if (a && b) {
            if (self->scheme == BN_TASK_TWOBIN)
                return b->seq < a->seq ? b : a;
            if (self->scheme == BN_TASK_WEIGHTED)
                return s_weight (b->load) > s_weight (a->load) ? b : a;
            return a;
        }
        //  most engines are blacklisted: filter them all
        s_engine_t **cands = malloc (self->navail * sizeof *cands);
        if (!cands)
            return NULL;
        size_t n = 0;
        for (size_t i = 0; i < self->navail; i++)
            if (!s_blacklisted (job, self->avail[i]))
                cands[n++] = self->avail[i];
        qsort (cands, n, sizeof *cands, s_by_seq);
        s_engine_t *engine = n ? s_pick_list (self, cands, n) : NULL;
        free (cands);
        return engine;
    }
    default:
        return s_heap_pick (self, job);
    }
}

//  Add engine uuid to cands if it may run job now.
static void
s_consider (bn_task_t *self, s_job_t *job, const char *uuid, s_engine_t **cands,
            size_t *n)
{
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine || engine->mark == self->epoch ||
        !bn_heap_has (self->heap, engine))
        return;
    engine->mark = self->epoch;
    if (s_blacklisted (job, engine))
        return;
    if (job->ntargets && !s_strings_have (job->targets, job->ntargets, uuid))
        return;
    if (!s_dep_met (self, &job->follow, engine->name))
        return;
    cands[(*n)++] = engine;
}

//  True if a target of job is a live engine that did not refuse it.
static bool
s_targets_live (bn_task_t *self, s_job_t *job)
{
    for (size_t i = 0; i < job->ntargets; i++) {
        s_engine_t *engine = zhashx_lookup (self->engines, job->targets[i]);
        if (engine && !engine->closed && !s_blacklisted (job, engine))
            return true;
    }
    return false;
}

//  True if job follows tasks that have all finished on engines that are
//  gone: it can never run (7.1.0 would keep it queued for good).
static bool
s_follow_dead (bn_task_t *self, s_job_t *job)
{
    if (!job->follow.count)
        return false;
    for (size_t i = 0; i < job->follow.count; i++) {
        const char *ran = NULL;
        s_state_t state = s_state (self, job->follow.ids[i], &ran);
        if (state == S_UNKNOWN || state == S_PENDING)
            return false;
        if (!s_meets (&job->follow, state) || !ran)
            continue;
        s_engine_t *engine = zhashx_lookup (self->engines, ran);
        if (engine && !engine->closed)
            return false;
    }
    return true;
}

typedef enum { S_RAN, S_QUEUE, S_GONE } s_outcome_t;

static void s_run (bn_task_t *self, s_job_t *job, s_engine_t *engine);

//  maybe_run: run job if an engine may take it. S_GONE when the job was
//  failed as impossible (freed), S_QUEUE when it must wait.
static s_outcome_t
s_maybe_run (bn_task_t *self, s_job_t *job)
{
    if (self->navail == 0)
        return S_QUEUE;
    s_engine_t *engine = NULL;
    if (!job->ntargets && !job->follow.count) {
        engine = s_pick_pool (self, job);
        if (engine) {
            s_run (self, job, engine);
            return S_RAN;
        }
        return S_QUEUE;
    }
    //  candidates: the targets, or where the followed tasks ran
    size_t room = job->ntargets ? job->ntargets : job->follow.count;
    s_engine_t **cands = malloc (room * sizeof *cands);
    if (!cands)
        return S_QUEUE;
    size_t n = 0;
    self->epoch++;
    if (job->ntargets)
        for (size_t i = 0; i < job->ntargets; i++)
            s_consider (self, job, job->targets[i], cands, &n);
    else
        for (size_t i = 0; i < job->follow.count; i++) {
            const char *ran = NULL;
            s_state (self, job->follow.ids[i], &ran);
            if (ran)
                s_consider (self, job, ran, cands, &n);
        }
    if (n) {
        qsort (cands, n, sizeof *cands, s_by_seq);
        engine = s_pick_list (self, cands, n);
    }
    free (cands);
    if (engine) {
        s_run (self, job, engine);
        return S_RAN;
    }
    //  nowhere to run: impossible?
    if (s_follow_dead (self, job)) {
        s_fail_impossible (self, job);
        return S_GONE;
    }
    if (job->follow.all && job->follow.count) {
        const char *dest = NULL;
        for (size_t i = 0; i < job->follow.count; i++) {
            const char *ran = NULL;
            s_state_t state = s_state (self, job->follow.ids[i], &ran);
            if (!ran || !s_meets (&job->follow, state))
                continue;
            if (dest && dest != ran) {
                s_fail_impossible (self, job);
                return S_GONE;
            }
            dest = ran;
        }
    }
    if (job->ntargets) {
        size_t kept = 0;
        bool live = false;
        for (size_t i = 0; i < job->ntargets; i++) {
            if (s_strings_have (job->blacklist, job->nblack, job->targets[i])) {
                free (job->targets[i]);
                continue;
            }
            s_engine_t *target = zhashx_lookup (self->engines, job->targets[i]);
            if (target && !target->closed)
                live = true;
            job->targets[kept++] = job->targets[i];
        }
        job->ntargets = kept;
        if (!kept || !live) {
            s_fail_impossible (self, job);
            return S_GONE;
        }
    }
    return S_QUEUE;
}

//  save_unmet: queue job until its dependencies are met or an engine is
//  free; arms its timeout.
static void
s_save_unmet (bn_task_t *self, s_job_t *job)
{
    bool ready = s_dep_met (self, &job->after, NULL);
    job->where = ready ? S_JOB_WAITING : S_JOB_BLOCKED;
    if (ready)
        s_wait_link (self, job);
    self->queued++;
    if (!job->in_graph) {
        job->in_graph = true;
        s_dep_t *deps[] = {&job->after, &job->follow};
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < deps[d]->count; i++) {
                const char *dep_id = deps[d]->ids[i];
                if (s_done (self, dep_id))
                    continue;
                zlistx_t *waiters = zhashx_lookup (self->graph, dep_id);
                if (!waiters) {
                    waiters = zlistx_new ();
                    if (!waiters)
                        continue;
                    zlistx_set_destructor (waiters,
                                           (zlistx_destructor_fn *)zstr_free);
                    zhashx_insert (self->graph, dep_id, waiters);
                }
                zlistx_add_end (waiters, strdup (job->msg_id));
            }
    }
    s_timer_cancel (self, job);
    if (job->timeout > 0 && self->loop && s_timer_start (self, job) != 0)
        bn_log_error ("task: out of memory arming the timeout of %s",
                      job->msg_id);
    s_flow (self);
}

//  The earliest deadlines passed: fail those tasks with TaskTimeout.
static int
s_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    bn_task_t *self = (bn_task_t *)arg;
    self->timer = -1;
    int64_t now = zclock_mono ();
    s_job_t *job;
    while ((job = (s_job_t *)bn_heap_first (self->deadlines)) &&
           job->deadline <= now) {
        s_timer_cancel (self, job);
        self->stats.timed_out++;
        s_fail (self, job, "TaskTimeout",
                "task %s did not start within its timeout of %g s", job->msg_id,
                job->timeout);
    }
    s_settle (self);
    s_timer_arm (self);
    return 0;
}

//  Take engine out of the picks, or put it back (routable).
static void
s_set_routable (bn_task_t *self, s_engine_t *engine, bool routable)
{
    if (engine->unroutable == !routable)
        return;
    double old_weight = s_slot_weight (self, engine);
    engine->unroutable = !routable;
    s_engine_update (self, engine, old_weight);
    if (routable)
        self->rescan = true;
}

//  job went to engine: it runs there now.
static void
s_started (bn_task_t *self, s_job_t *job, s_engine_t *engine)
{
    self->stats.submitted++;
    double old_weight = s_slot_weight (self, engine);
    engine->load++;
    engine->seq = ++self->back_seq;
    s_engine_update (self, engine, old_weight);
    job->where = S_JOB_RUNNING;
    job->engine = engine;
    job->run_handle = zlistx_add_end (engine->running, job);
    self->running++;
    s_flow (self);
    if (self->has_monitor && self->monitor.assigned)
        self->monitor.assigned (self->monitor.arg, job->msg_id, engine->uuid);
}

//  Send job's request to engine; 0 if it went, else the errno.
static int
s_send_job (bn_task_t *self, s_job_t *job, s_engine_t *engine)
{
    bn_msg_t *copy = bn_msg_dup (job->msg);
    if (!copy || bn_msg_push_ident (copy, engine->uuid, engine->uuid_len) ||
        bn_hosts_wrap (self->hosts, copy)) {
        bn_msg_destroy (&copy);
        return ENOMEM;
    }
    int rc = bn_msg_send_flags (&copy, self->engine_handle, self->session,
                                ZMQ_DONTWAIT);
    int error = errno;
    s_sent (self, self->engine_item);
    return rc != 0 ? error : 0;
}

static void s_unmet (bn_task_t *self, s_job_t *job, s_engine_t *engine);

//  A held job's engine took it (bn_holdq_send_fn).
static int
s_send_held (void *arg, const char *uuid, void *item)
{
    bn_task_t *self = (bn_task_t *)arg;
    s_job_t *job = (s_job_t *)item;
    assert (job->where == S_JOB_HELD);
    int error = s_send_job (self, job, job->engine);
    if (error)
        return error;
    s_engine_t *engine = job->engine;
    self->held--;
    s_set_routable (self, engine, true);
    s_started (self, job, engine);
    s_settle (self);
    return 0;
}

//  No new tasks for engine: a job held for it goes elsewhere, and queued
//  jobs that only it could take are impossible now.
static void
s_close (bn_task_t *self, s_engine_t *engine)
{
    if (engine->closed)
        return;
    double old_weight = s_slot_weight (self, engine);
    engine->closed = true;
    s_engine_update (self, engine, old_weight);
    bn_holdq_engine_remove (self->holdq, engine->uuid);
    s_job_t *job = self->wait_head;
    while (job) {
        s_job_t *next = job->next;
        if ((job->ntargets &&
             s_strings_have (job->targets, job->ntargets, engine->uuid) &&
             !s_targets_live (self, job)) ||
            s_follow_dead (self, job))
            s_fail_impossible (self, job);
        job = next;
    }
    s_settle (self);
}

//  engine is not on the task port past its grace: it is closed to tasks,
//  as one that unregistered, until it registers again.
static void
s_never_connected (bn_task_t *self, s_engine_t *engine, int error)
{
    bn_log_warn ("task: engine %d is not connected to the task port past its "
                 "grace (%s); it gets no tasks until it registers again",
                 engine->eid, zmq_strerror (error));
    s_close (self, engine);
}

//  A held job cannot reach its engine (bn_holdq_fail_fn): it never ran, so
//  it goes elsewhere with that engine on its blacklist.
static void
s_fail_held (void *arg, const char *uuid, void *item, bn_holdq_why_t why,
             int error)
{
    bn_task_t *self = (bn_task_t *)arg;
    s_job_t *job = (s_job_t *)item;
    assert (job->where == S_JOB_HELD);
    s_engine_t *engine = job->engine;
    job->where = S_JOB_NEW;
    job->engine = NULL;
    self->held--;
    s_flow (self);
    if (why == BN_HOLDQ_EXPIRED || (why == BN_HOLDQ_ERROR && error != ENOMEM))
        s_never_connected (self, engine, error);
    s_unmet (self, job, engine);
    s_settle (self);
}

static void
s_run (bn_task_t *self, s_job_t *job, s_engine_t *engine)
{
    s_dequeue (self, job);
    if (bn_holdq_waits (self->holdq, engine->uuid)) {
        //  a young engine: the job may have to wait for its connection
        job->where = S_JOB_HELD;
        job->engine = engine;
        self->held++;
        s_flow (self);
        if (bn_holdq_send (self->holdq, engine->uuid, job) == 1) {
            self->stats.not_connected++;
            bn_log_info ("task: engine %d is not connected to the task port "
                         "yet; %s waits for it",
                         engine->eid, job->msg_id);
            s_set_routable (self, engine, false);
        }
        return;
    }
    int error = s_send_job (self, job, engine);
    if (error == ENOMEM) {
        self->stats.send_failed++;
        bn_log_error ("task: out of memory sending %s", job->msg_id);
        s_save_unmet (self, job);
        return;
    }
    if (error) {
        self->stats.not_connected++;
        if (error == EAGAIN && engine->load > 0) {
            //  connected, but its queue is full: out of the picks until
            //  it answers, and the job goes elsewhere
            s_set_routable (self, engine, false);
            if (s_maybe_run (self, job) == S_QUEUE)
                s_save_unmet (self, job);
        } else {
            s_never_connected (self, engine, error);
            s_unmet (self, job, engine);
        }
        return;
    }
    s_started (self, job, engine);
}

//  A dependency of the jobs waiting on it finished, or the job got a new
//  chance: fail, run or keep it (update_graph for one job).
static void
s_reconsider (bn_task_t *self, s_job_t *job)
{
    if (s_dep_unreachable (self, &job->after) ||
        s_dep_unreachable (self, &job->follow)) {
        s_fail_impossible (self, job);
        return;
    }
    if (!s_dep_met (self, &job->after, NULL))
        return;
    if (job->where == S_JOB_BLOCKED) {
        job->where = S_JOB_WAITING;
        s_wait_link (self, job);
    }
    s_maybe_run (self, job);
}

static int
s_by_job_seq (const void *a, const void *b)
{
    const s_job_t *x = *(s_job_t *const *)a;
    const s_job_t *y = *(s_job_t *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

//  Give dependents of finished tasks, then waiting jobs, their chance,
//  until nothing changes (update_graph).
static void
s_settle (bn_task_t *self)
{
    if (self->settling)
        return;
    self->settling = true;
    while (true) {
        char *dep_id = zlist_pop (self->finished);
        if (dep_id) {
            zlistx_t *waiters = zhashx_lookup (self->graph, dep_id);
            size_t n = waiters ? zlistx_size (waiters) : 0;
            s_job_t **jobs = n ? malloc (n * sizeof *jobs) : NULL;
            size_t count = 0;
            for (char *id = waiters ? zlistx_first (waiters) : NULL; id && jobs;
                 id = zlistx_next (waiters)) {
                s_job_t *job = zhashx_lookup (self->jobs, id);
                if (job && (job->where == S_JOB_BLOCKED ||
                            job->where == S_JOB_WAITING))
                    jobs[count++] = job;
            }
            zhashx_delete (self->graph, dep_id);
            free (dep_id);
            if (count)
                qsort (jobs, count, sizeof *jobs, s_by_job_seq);
            //  reconsidering a job runs, fails or keeps that job only; what
            //  it finishes waits in the finished list. A job waiting on
            //  dep_id in both after and follow is listed twice (adjacent
            //  once sorted): once is enough, and it may be gone after it
            for (size_t i = 0; i < count; i++)
                if (i == 0 || jobs[i] != jobs[i - 1])
                    s_reconsider (self, jobs[i]);
            free (jobs);
            continue;
        }
        if (self->rescan && self->navail && self->wait_head) {
            self->rescan = false;
            s_job_t *job = self->wait_head;
            while (job && self->navail) {
                s_job_t *next = job->next;
                s_maybe_run (self, job);
                job = next;
            }
            continue;
        }
        break;
    }
    self->rescan = false;
    self->settling = false;
}

//  --------------------------------------------------------------------------
//  Requests

//  Read the request metadata into job (parsed once). -1 with ename and
//  evalue set if it has the wrong shape.
static int
s_parse_metadata (bn_task_t *self, s_job_t *job, const char **ename,
                  const char **evalue)
{
    job->after.all = job->follow.all = true;
    job->after.success = job->follow.success = true;
    if (self->scheme == BN_TASK_PURE)
        return 0;
    json_t *md = bn_msg_metadata (job->msg);
    if (!md) {
        *ename = "TypeError";
        *evalue = "request metadata must be a JSON object";
        return -1;
    }
    *ename = "InvalidDependency";
    if (s_parse_dep (json_object_get (md, "after"), &job->after, evalue) ||
        s_parse_dep (json_object_get (md, "follow"), &job->follow, evalue))
        return -1;
    *ename = "TypeError";
    json_t *targets = json_object_get (md, "targets");
    if (targets && !json_is_null (targets)) {
        s_dep_t list = {0};
        if (s_parse_ids (targets, &list) != 0) {
            s_dep_free (&list);
            *evalue = "targets must be a list of engine uuid strings";
            return -1;
        }
        job->targets = list.ids;
        job->ntargets = list.count;
    }
    json_t *retries = json_object_get (md, "retries");
    if (json_is_integer (retries)) {
        json_int_t value = json_integer_value (retries);
        job->retries = value < 0           ? 0
                       : value > INT32_MAX ? INT32_MAX
                                           : (int)value;
    } else if (retries && !json_is_null (retries) &&
               !json_is_boolean (retries)) {
        *evalue = "retries must be an integer";
        return -1;
    }
    json_t *timeout = json_object_get (md, "timeout");
    if (json_is_number (timeout))
        job->timeout = json_number_value (timeout);
    else if (json_is_string (timeout)) {
        char *end;
        job->timeout = strtod (json_string_value (timeout), &end);
        if (*end || end == json_string_value (timeout)) {
            *ename = "ValueError";
            *evalue = "timeout must be a number of seconds";
            return -1;
        }
    } else if (timeout && !json_is_null (timeout) &&
               !json_is_boolean (timeout)) {
        *evalue = "timeout must be a number of seconds";
        return -1;
    }
    if (job->timeout != job->timeout || job->timeout < 0)
        job->timeout = 0;
    return 0;
}

//  True if dep names msg_id itself or an id never submitted here.
static bool
s_dep_invalid (bn_task_t *self, s_dep_t *dep, const char *msg_id)
{
    for (size_t i = 0; i < dep->count; i++)
        if (streq (dep->ids[i], msg_id) ||
            s_state (self, dep->ids[i], NULL) == S_UNKNOWN)
            return true;
    return false;
}

//  dispatch_submission: a new request (already checked).
static void
s_request (bn_task_t *self, bn_msg_t *msg, bool internal)
{
    if (self->has_monitor && self->monitor.request)
        self->monitor.request (self->monitor.arg, BN_MONITOR_QUEUE_TASK, msg,
                               NULL);
    const char *msg_id = bn_msg_id (msg);
    if (zhashx_lookup (self->jobs, msg_id)) {
        self->stats.duplicate_id++;
        bn_log_warn ("task: msg_id %s is already queued or running; dropped",
                     msg_id);
        bn_msg_destroy (&msg);
        return;
    }
    s_job_t *job = calloc (1, sizeof *job);
    if (job)
        job->msg_id = strdup (msg_id);
    if (!job || !job->msg_id) {
        bn_log_error ("task: out of memory queueing %s", msg_id);
        s_job_destroy (&job);
        bn_msg_destroy (&msg);
        return;
    }
    //  submitted again: pending (as a job) until it finishes again
    bn_outcomes_remove (self->outcomes, msg_id);
    job->msg = msg;
    job->owner = self;
    job->deadline_at = BN_HEAP_NONE;
    job->internal = internal;
    job->seq = ++self->job_seq;
    zhashx_insert (self->jobs, job->msg_id, job);

    const char *ename = NULL, *evalue = NULL;
    if (s_parse_metadata (self, job, &ename, &evalue) != 0) {
        self->stats.bad_metadata++;
        s_fail (self, job, ename, "%s", evalue);
        return;
    }
    //  an `after` partly met already shrinks to what is left
    if (job->after.count && job->after.all)
        s_dep_reduce (self, &job->after);
    if (s_dep_met (self, &job->after, NULL))
        s_dep_free (&job->after);
    s_dep_t *deps[] = {&job->after, &job->follow};
    for (size_t d = 0; d < 2; d++) {
        if (!deps[d]->count)
            continue;
        if (s_dep_invalid (self, deps[d], job->msg_id)) {
            self->stats.invalid++;
            s_fail (self, job, "InvalidDependency",
                    "task %s depends on itself or on a msg_id this task "
                    "scheduler never saw",
                    job->msg_id);
            return;
        }
        if (s_dep_unreachable (self, deps[d])) {
            s_fail_impossible (self, job);
            return;
        }
    }
    if (!job->after.count) {
        if (s_maybe_run (self, job) == S_QUEUE)
            s_save_unmet (self, job);
    } else
        s_save_unmet (self, job);
}

//  Flow control: stop reading clients while the tasks held (queued, or
//  on engines and kept for a retry) reach queue_max; read again once
//  they are down to half.
static void
s_flow (bn_task_t *self)
{
    if (!self->loop)
        return;
    size_t held = self->queued + self->held + self->running;
    if (self->reading && held >= self->queue_max) {
        bn_watch_cancel (self->sockets, &self->client_item);
        self->reading = false;
        self->stats.paused++;
        bn_log_info ("task: %zu tasks held; not reading clients", held);
    } else if (!self->reading && held <= self->queue_max / 2 &&
               (self->client_item = bn_watch_zreader (
                    self->sockets, self->client_side, s_on_client, self))) {
        self->reading = true;
        bn_log_info ("task: reading clients again");
    }
}

int
bn_task_client_ready (bn_task_t *self)
{
    assert (self);
    for (int i = 0; i < S_BATCH && (self->reading || !self->loop); i++) {
        bn_msg_t *msg = bn_msg_recv_flags (self->client_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.received++;
        if (bn_msg_nidents (msg) < 1) {
            self->stats.drops.bad_frame++;
            bn_msg_destroy (&msg);
            continue;
        }
        if (bn_msg_check (msg, self->session,
                          BN_MSG_CHECK_REPLAY | BN_MSG_CHECK_HEADER,
                          &self->stats.drops, "task") != 0) {
            bn_msg_destroy (&msg);
            continue;
        }
        s_request (self, msg, false);
        s_settle (self);
        if (!self->loop &&
            self->queued + self->held + self->running >= self->queue_max)
            break;
    }
    return 0;
}

int
bn_task_submit (bn_task_t *self, bn_msg_t **msg_p)
{
    assert (self);
    assert (msg_p);
    bn_msg_t *msg = *msg_p;
    *msg_p = NULL;
    if (!msg || bn_msg_check (msg, self->session, BN_MSG_CHECK_HEADER,
                              &self->stats.drops, "task") != 0) {
        bn_msg_destroy (&msg);
        return -1;
    }
    if (bn_msg_nidents (msg) == 0 &&
        bn_msg_push_ident (msg, S_INTERNAL, strlen (S_INTERNAL)) != 0) {
        bn_msg_destroy (&msg);
        return -1;
    }
    s_request (self, msg, true);
    s_settle (self);
    return 0;
}

//  --------------------------------------------------------------------------
//  Results

//  The engine said no (dependencies_met false) or failed with retries
//  left: try the job elsewhere (handle_unmet_dependency).
static void
s_unmet (bn_task_t *self, s_job_t *job, s_engine_t *engine)
{
    if (!s_strings_have (job->blacklist, job->nblack, engine->uuid)) {
        char **grown =
            realloc (job->blacklist, (job->nblack + 1) * sizeof (char *));
        if (grown) {
            job->blacklist = grown;
            job->blacklist[job->nblack] = strdup (engine->uuid);
            if (job->blacklist[job->nblack])
                job->nblack++;
        }
    }
    bool same = job->ntargets && job->ntargets == job->nblack;
    for (size_t i = 0; same && i < job->ntargets; i++)
        same = s_strings_have (job->blacklist, job->nblack, job->targets[i]);
    if (same) {
        s_fail_impossible (self, job);
        return;
    }
    if (s_maybe_run (self, job) == S_QUEUE)
        s_save_unmet (self, job);
}

//  Whether a failed reply's metadata says dependencies_met false.
static bool
s_unmet_reply (bn_msg_t *msg)
{
    json_t *md = bn_msg_metadata (msg);
    json_t *met = md ? json_object_get (md, "dependencies_met") : NULL;
    return met && !json_is_true (met) &&
           !(json_is_integer (met) && json_integer_value (met));
}

//  A reply to job from its engine (or an EngineError made for it).
static void
s_result (bn_task_t *self, s_job_t *job, bn_msg_t *msg)
{
    s_engine_t *engine = job->engine;
    zlistx_delete (engine->running, job->run_handle);
    job->run_handle = NULL;
    job->engine = NULL;
    job->where = S_JOB_NEW;
    self->running--;
    s_flow (self);
    double old_weight = s_slot_weight (self, engine);
    engine->load--;
    engine->unroutable = false; //  it answered: it is connected
    s_engine_update (self, engine, old_weight);

    char status[S_STATUS_MAX] = "";
    size_t size;
    const void *md = bn_msg_part_data (msg, BN_PART_METADATA, &size);
    if (md)
        bn_jscan_string (md, size, "status", status, sizeof status);
    bool ok = streq (status, BN_STATUS_OK);
    if (!ok && s_unmet_reply (msg)) {
        self->stats.unmet++;
        bn_msg_destroy (&msg);
        s_unmet (self, job, engine);
        return;
    }
    if (!ok && job->retries > 0) {
        job->retries--;
        self->stats.retried++;
        bn_msg_destroy (&msg);
        s_unmet (self, job, engine);
        return;
    }
    if (self->has_monitor && self->monitor.reply)
        self->monitor.reply (self->monitor.arg, BN_MONITOR_QUEUE_TASK, msg,
                             engine->uuid);
    bn_msg_swap_idents (msg);
    if (job->internal)
        bn_msg_destroy (&msg);
    else
        s_send_client (self, &msg);
    s_set_record (self, job->msg_id, ok ? S_SUCCEEDED : S_FAILED, engine->name);
    s_finished (self, job->msg_id);
    zhashx_delete (self->jobs, job->msg_id);
    s_job_destroy (&job);
}

static void
s_engine_reply (bn_task_t *self, bn_msg_t *msg)
{
    if (bn_hosts_unwrap (self->hosts, msg) < 0) {
        self->stats.drops.bad_frame++;
        bn_log_debug ("task: dropped a message through a host link for an "
                      "engine it does not serve");
        bn_msg_destroy (&msg);
        return;
    }
    if (bn_msg_nidents (msg) < 2) {
        self->stats.drops.bad_frame++;
        bn_log_warn ("task: dropped an engine message without two idents");
        bn_msg_destroy (&msg);
        return;
    }
    if (bn_msg_check (msg, self->session,
                      BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_HEADER,
                      &self->stats.drops, "task") != 0) {
        bn_msg_destroy (&msg);
        return;
    }
    const char *parent_id = bn_msg_parent_id (msg);
    s_job_t *job = parent_id ? zhashx_lookup (self->jobs, parent_id) : NULL;
    size_t size;
    const void *ident = bn_msg_ident (msg, 0, &size);
    if (!job || job->where != S_JOB_RUNNING || job->engine->uuid_len != size ||
        memcmp (job->engine->uuid, ident, size) != 0) {
        self->stats.unknown_reply++;
        bn_log_warn ("task: dropped a reply to a task the engine does not "
                     "run (%s)",
                     parent_id ? parent_id : "no parent msg_id");
        bn_msg_destroy (&msg);
        return;
    }
    s_result (self, job, msg);
}

int
bn_task_engine_ready (bn_task_t *self)
{
    assert (self);
    for (int i = 0; i < S_BATCH; i++) {
        bn_msg_t *msg = bn_msg_recv_flags (self->engine_handle, ZMQ_DONTWAIT);
        if (!msg)
            break;
        self->stats.received++;
        s_engine_reply (self, msg);
    }
    s_settle (self);
    return 0;
}

//  --------------------------------------------------------------------------
//  Engines

static void
s_engine_free (s_engine_t **engine_p)
{
    s_engine_t *engine = *engine_p;
    if (!engine)
        return;
    zlistx_destroy (&engine->running);
    free (engine->uuid);
    free (engine);
    *engine_p = NULL;
}

int
bn_task_engine_add (bn_task_t *self, const char *uuid, int eid)
{
    assert (self);
    assert (uuid);
    s_engine_t *old = zhashx_lookup (self->engines, uuid);
    if (old && !old->closed)
        return -1;
    if (old)
        bn_task_engine_remove (self, uuid);
    if (s_engine_room (self) != 0)
        return -1;
    const char *name = zhashx_lookup (self->names, uuid);
    if (!name) {
        char *copy = strdup (uuid);
        if (!copy)
            return -1;
        zhashx_insert (self->names, uuid, copy);
        name = copy;
    }
    s_engine_t *engine = calloc (1, sizeof *engine);
    if (!engine)
        return -1;
    engine->uuid = strdup (uuid);
    engine->uuid_len = strlen (uuid);
    engine->name = name;
    engine->eid = eid;
    engine->running = zlistx_new ();
    engine->heap_at = BN_HEAP_NONE;
    engine->avail_at = S_NONE;
    //  a new engine goes to the head of the line
    engine->seq = --self->front_seq;
    if (!engine->uuid || !engine->running) {
        s_engine_free (&engine);
        return -1;
    }
    if (self->scheme == BN_TASK_WEIGHTED) {
        engine->slot = self->nslots++;
        self->slots[engine->slot] = engine;
    }
    zhashx_insert (self->engines, uuid, engine);
    bn_holdq_engine_add (self->holdq, uuid);
    s_engine_update (self, engine, 0.0);
    self->rescan = true;
    s_settle (self);
    return 0;
}

void
bn_task_engine_close (bn_task_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine || engine->closed)
        return;
    //  replies already waiting still count
    bn_task_engine_ready (self);
    s_close (self, engine);
}

void
bn_task_engine_remove (bn_task_t *self, const char *uuid)
{
    bn_task_engine_lost (self, uuid, NULL);
}

void
bn_task_engine_lost (bn_task_t *self, const char *uuid, const char *why)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine)
        return;
    bn_task_engine_close (self, uuid);
    //  handle_stranded_tasks: an EngineError through the result path, so
    //  retries apply
    s_job_t *job;
    while ((job = (s_job_t *)zlistx_first (engine->running))) {
        self->stats.stranded++;
        bn_msg_t *reply =
            bn_msg_new_reply (self->session, job->msg, BN_MSG_APPLY_REPLY);
        char date[BN_DATE_SIZE];
        bn_session_date (date);
        json_t *md = json_pack ("{s:s, s:s, s:s}", "status", BN_STATUS_ERROR,
                                "engine", engine->uuid, "date", date);
        json_t *content =
            why ? bn_wire_errorf ("EngineError", NULL,
                                  "Engine '%s' lost while running task "
                                  "'%s': %s",
                                  engine->uuid, job->msg_id, why)
                : bn_wire_errorf ("EngineError", NULL,
                                  "Engine '%s' died while running task '%s'",
                                  engine->uuid, job->msg_id);
        if (!reply || !md || !content ||
            bn_msg_push_ident (reply, engine->uuid, engine->uuid_len)) {
            json_decref (md);
            json_decref (content);
            bn_msg_destroy (&reply);
            bn_log_error ("task: out of memory failing %s", job->msg_id);
            //  forget the job rather than loop
            zlistx_delete (engine->running, job->run_handle);
            self->running--;
            zhashx_delete (self->jobs, job->msg_id);
            s_job_destroy (&job);
            continue;
        }
        bn_msg_set_metadata (reply, md);
        bn_msg_set_content (reply, content);
        bn_log_info ("task: engine %d died running %s", engine->eid,
                     job->msg_id);
        s_result (self, job, reply);
    }
    if (self->scheme == BN_TASK_WEIGHTED)
        self->slots[engine->slot] = NULL;
    zhashx_delete (self->engines, uuid);
    s_settle (self);
}

size_t
bn_task_engine_load (bn_task_t *self, const char *uuid)
{
    assert (self);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    return engine ? zlistx_size (engine->running) : 0;
}

json_t *
bn_task_engine_tasks (bn_task_t *self, const char *uuid)
{
    assert (self);
    json_t *ids = json_array ();
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!ids || !engine)
        return ids;
    for (s_job_t *job = zlistx_first (engine->running); job;
         job = zlistx_next (engine->running))
        json_array_append_new (ids, json_string (job->msg_id));
    return ids;
}

size_t
bn_task_unassigned (bn_task_t *self)
{
    assert (self);
    return self->queued + self->held;
}

json_t *
bn_task_unassigned_ids (bn_task_t *self)
{
    assert (self);
    json_t *ids = json_array ();
    size_t count = self->queued + self->held;
    s_job_t **queued = count ? malloc (count * sizeof *queued) : NULL;
    size_t n = 0;
    for (s_job_t *job = zhashx_first (self->jobs); job && queued;
         job = zhashx_next (self->jobs))
        if ((job->where == S_JOB_BLOCKED || job->where == S_JOB_WAITING ||
             job->where == S_JOB_HELD) &&
            n < count)
            queued[n++] = job;
    if (n)
        qsort (queued, n, sizeof *queued, s_by_job_seq);
    for (size_t i = 0; ids && i < n; i++)
        json_array_append_new (ids, json_string (queued[i]->msg_id));
    free (queued);
    return ids;
}

//  --------------------------------------------------------------------------
//  Life cycle

static void
s_engine_destructor (void **item)
{
    s_engine_free ((s_engine_t **)item);
}

static void
s_graph_destructor (void **item)
{
    zlistx_destroy ((zlistx_t **)item);
}

bn_task_t *
bn_task_new (zsock_t *client_side, zsock_t *engine_side, bn_session_t *session,
             bn_task_scheme_t scheme, int hwm)
{
    assert (client_side);
    assert (engine_side);
    assert (session);
    bn_task_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->scheme = scheme;
    self->hwm = scheme == BN_TASK_PURE || hwm < 0 ? 0 : hwm;
    self->client_side = client_side;
    self->engine_side = engine_side;
    self->client_handle = zsock_resolve (client_side);
    self->engine_handle = zsock_resolve (engine_side);
    self->session = session;
    self->queue_max = BN_TASK_QUEUE_MAX;
    self->timer = -1;
    self->rand_state = (uint64_t)zclock_time () * 2654435761u + 1;
    self->engines = zhashx_new ();
    self->names = zhashx_new ();
    self->outcomes = bn_outcomes_new (BN_TASK_RECORDS_MAX);
    self->jobs = zhashx_new ();
    self->graph = zhashx_new ();
    self->finished = zlist_new ();
    self->holdq = bn_holdq_new (0, s_send_held, s_fail_held, self);
    self->heap = bn_heap_new (s_before, self, offsetof (s_engine_t, heap_at));
    self->deadlines =
        bn_heap_new (s_due_before, NULL, offsetof (s_job_t, deadline_at));
    if (!self->engines || !self->names || !self->outcomes || !self->jobs ||
        !self->graph || !self->finished || !self->holdq || !self->heap ||
        !self->deadlines) {
        bn_task_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->engines, s_engine_destructor);
    zhashx_set_destructor (self->names, (zhashx_destructor_fn *)zstr_free);
    zhashx_set_destructor (self->graph, s_graph_destructor);
    //  jobs are keyed by their own msg_id and freed by us
    zhashx_set_key_duplicator (self->jobs, NULL);
    zhashx_set_key_destructor (self->jobs, NULL);
    zlist_autofree (self->finished);
    return self;
}

void
bn_task_destroy (bn_task_t **self_p)
{
    assert (self_p);
    bn_task_t *self = *self_p;
    if (!self)
        return;
    if (self->timer >= 0 && self->loop)
        zloop_timer_end (self->loop, self->timer);
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->client_item);
        bn_watch_cancel (self->sockets, &self->engine_item);
        bn_watch_destroy (&self->sockets);
    }
    bn_holdq_destroy (&self->holdq);
    bn_heap_destroy (&self->deadlines);
    if (self->jobs) {
        s_job_t *job = zhashx_first (self->jobs);
        while (job) {
            s_job_destroy (&job);
            job = zhashx_next (self->jobs);
        }
        zhashx_destroy (&self->jobs);
    }
    zhashx_destroy (&self->engines);
    zhashx_destroy (&self->names);
    bn_outcomes_destroy (&self->outcomes);
    zhashx_destroy (&self->graph);
    zlist_destroy (&self->finished);
    bn_heap_destroy (&self->heap);
    free (self->avail);
    free (self->fenwick);
    free (self->slots);
    free (self);
    *self_p = NULL;
}

static int
s_on_client (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_task_client_ready ((bn_task_t *)arg);
}

static int
s_on_engine (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_task_engine_ready ((bn_task_t *)arg);
}

int
bn_task_attach (bn_task_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    self->loop = loop;
    //  one descriptor in the loop for both sockets (bn_watch)
    self->sockets = bn_watch_new (loop);
    if (!self->sockets ||
        !(self->client_item = bn_watch_zreader (
              self->sockets, self->client_side, s_on_client, self)) ||
        !(self->engine_item = bn_watch_zreader (
              self->sockets, self->engine_side, s_on_engine, self)) ||
        bn_holdq_attach (self->holdq, loop) != 0)
        return -1;
    self->reading = true;
    return 0;
}

void
bn_task_set_hosts (bn_task_t *self, bn_hosts_t *hosts)
{
    assert (self);
    self->hosts = hosts;
}

void
bn_task_set_monitor (bn_task_t *self, const bn_monitor_t *monitor)
{
    assert (self);
    self->has_monitor = monitor != NULL;
    if (monitor)
        self->monitor = *monitor;
}

void
bn_task_set_connect_grace (bn_task_t *self, int msecs)
{
    assert (self);
    bn_holdq_set_grace (self->holdq, msecs);
}

void
bn_task_set_queue_max (bn_task_t *self, size_t queue_max)
{
    assert (self);
    self->queue_max = queue_max ? queue_max : 1;
}

void
bn_task_set_records_max (bn_task_t *self, size_t records_max)
{
    assert (self);
    bn_outcomes_set_max (self->outcomes, records_max);
}

void
bn_task_set_seed (bn_task_t *self, unsigned int seed)
{
    assert (self);
    self->rand_state = (uint64_t)seed * 2654435761u + 1;
}

json_t *
bn_task_stats (bn_task_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    static const char *schemes[] = {"leastload", "lru",      "plainrandom",
                                    "twobin",    "weighted", "pure"};
    return json_pack (
        "{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I}",
        "scheme", schemes[self->scheme], "hwm", self->hwm, "received",
        (json_int_t)s->received, "submitted", (json_int_t)s->submitted,
        "forwarded", (json_int_t)s->forwarded, "bad_frame",
        (json_int_t)s->drops.bad_frame, "bad_signature",
        (json_int_t)s->drops.bad_signature, "replayed",
        (json_int_t)s->drops.replayed, "bad_header",
        (json_int_t)s->drops.bad_header, "bad_metadata",
        (json_int_t)s->bad_metadata, "duplicate_id",
        (json_int_t)s->duplicate_id, "unknown_reply",
        (json_int_t)s->unknown_reply, "unmet", (json_int_t)s->unmet, "retried",
        (json_int_t)s->retried, "invalid", (json_int_t)s->invalid, "impossible",
        (json_int_t)s->impossible, "timed_out", (json_int_t)s->timed_out,
        "stranded", (json_int_t)s->stranded, "not_connected",
        (json_int_t)s->not_connected, "client_gone",
        (json_int_t)s->undelivered.client_gone, "client_full",
        (json_int_t)s->undelivered.client_full, "send_failed",
        (json_int_t)(s->send_failed + s->undelivered.send_failed), "paused",
        (json_int_t)s->paused, "engines",
        (json_int_t)zhashx_size (self->engines), "queued",
        (json_int_t)self->queued, "running", (json_int_t)self->running,
        "records",
        (json_int_t)(zhashx_size (self->jobs) +
                     bn_outcomes_size (self->outcomes)),
        "records_bytes", (json_int_t)bn_outcomes_bytes (self->outcomes));
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan.h: libbanyan, the C client of a banyan or IPython Parallel 7.1
    controller: connect, follow engines, run commands and named functions
    on them through views, and collect their results.

    Build with `pkg-config --cflags --libs libbanyan`.

    Quick start (error checks left out; see examples/bn_example.c):

        int rc;
        bn_client_t *client = bn_client_new (NULL, 10, &rc);
        bn_client_wait_for_engines (client, 4, 30);
        bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
        bn_result_t *result;
        bn_view_execute (view, "hostname", &result);
        if (bn_result_get (result, 10) == 0)
            for (size_t i = 0; i < bn_result_count (result); i++)
                printf ("%d: %s", bn_result_engine_id (result, i),
                        bn_result_stdout (result, i));
        bn_result_destroy (&result);
        bn_view_destroy (&view);
        bn_client_destroy (&client);

    Errors. Functions return 0 or a negative BN_E* code (bn_error.h; text
    from bn_strerror). Constructors return NULL and put the code in their
    `error` argument when it is not NULL. Nothing in the library calls
    abort () on bad input or on anything a peer does.

    Timeouts. Every call that waits takes a timeout in seconds; a negative
    timeout waits without limit (for as long as the controller is there).
    A controller that goes away (its connection drops, or it announces its
    shutdown) fails every outstanding request with BN_ENOCONTROLLER at once,
    so no wait outlives the controller.

    Threads. All functions are thread-safe: a client, its views and its
    results may be used from any number of threads at once; each client
    serialises access to its state with its own mutex, and waits sleep on
    a condition variable, so several threads can wait on different results
    together. Pointers returned by result accessors stay valid until the
    result is destroyed.

    Design: each client owns one background I/O thread, its own libzmq
    context and its own sockets; nothing is global, so several clients in
    one process do not share anything. The library uses czmq only for its
    containers and never starts czmq's global context (zsys_init), so it
    installs no signal handlers and no exit hooks: a program that does not
    otherwise use czmq sees no czmq side effects. The I/O thread reads
    the sockets whenever no thread of the program does, because (1)
    engine (un)registration notifications and output must be consumed
    while the program is busy elsewhere, or the engine list goes stale
    and the subscriber queues grow without bound; (2) a lost controller
    is noticed as it happens (socket monitor and ZMTP heartbeats), not at
    the next wait. One thread at a time uses the sockets: a thread that
    sends while none does signs and sends itself, and a thread that waits
    while none does reads the replies itself, so a program that submits
    and waits in turn wakes no other thread of the client. The I/O thread
    takes the sockets back once nobody has used them for 2 ms; while it
    or another thread holds them, submitted messages are passed to the
    holder over an inproc pipe and waits sleep on the condition variable,
    so any number of threads can wait on results together.

    Lifetimes. Views and results keep their client's memory alive:
    bn_client_destroy disconnects at once (requests still outstanding
    complete with BN_ECLOSED), and the last of the client, its views and
    its results to be destroyed frees it.  */
#ifndef BANYAN_H_INCLUDED
#define BANYAN_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  The three headers installed beside this one are plain C headers.
#ifdef __cplusplus
extern "C" {
#endif

#include "banyan/bn_error.h"
#include "banyan/bn_idset.h"
#include "banyan/bn_value.h"

#define BANYAN_VERSION_MAJOR 0
#define BANYAN_VERSION_MINOR 1
#define BANYAN_VERSION_PATCH 0

typedef struct _bn_client_t bn_client_t;
typedef struct _bn_view_t bn_view_t;
typedef struct _bn_result_t bn_result_t;

//  ---------------------------------------------------------------------
//  Client: one connection to a controller.

//  Connect to a controller. source names its client connection file:
//    NULL       $BANYAN_CONNECTION_INFO, else $IPP_CONNECTION_INFO (each
//               connection JSON or the path of a file), else the default
//               profile (settings profile.name, profile.dir_root,
//               cluster.id, with their BANYAN_* variables);
//    "{...}"    the connection JSON itself;
//    a path     of a connection file, or of a profile folder (its
//               security/ipcontroller-client.json);
//    a name     of a profile (<profile.dir_root>/profile_<name>).
//  Waits up to timeout seconds (0: the client.timeout setting, 10 s) for
//  the file to appear and the controller to answer. Returns NULL on
//  failure with *error (if error is not NULL) set to BN_ENOENT (no file),
//  BN_ECONNFILE (unreadable or wrong kind of file), BN_ETIMEDOUT (no
//  answer), BN_ECONNECT (the controller refused) or BN_ENOMEM.
bn_client_t *bn_client_new (const char *source, double timeout, int *error);

//  Connect from a profile (a name or a folder; NULL: the default) and a
//  cluster id (NULL: the cluster.id setting, "" for none), as
//  bn_client_new does. Returns NULL on failure, with *error set.
bn_client_t *bn_client_new_profile (const char *profile, const char *cluster_id,
                                    double timeout, int *error);

//  Disconnect (outstanding requests complete with BN_ECLOSED) and drop the
//  caller's reference; NULLs *self_p; NULL-safe.
void bn_client_destroy (bn_client_t **self_p);

//  0 while the controller is there; BN_ENOCONTROLLER once it has gone,
//  BN_ECLOSED after bn_client_destroy.
int bn_client_status (bn_client_t *self);

//  The client's session id, as it appears in `header.session`.
const char *bn_client_session (bn_client_t *self);

//  The ids of the registered engines, as a new set for the caller to
//  destroy; NULL if out of memory.
bn_idset_t *bn_client_ids (bn_client_t *self);

//  Number of registered engines.
size_t bn_client_engine_count (bn_client_t *self);

//  Wait until at least count engines are registered. Returns 0,
//  BN_ETIMEDOUT, BN_ENOCONTROLLER or BN_ECLOSED.
int bn_client_wait_for_engines (bn_client_t *self, size_t count,
                                double timeout);

//  Copy the uuid (identity) of engine id into buf (size bytes, 64 are
//  enough). Returns 0, BN_ENOENGINE if no such engine is registered, or
//  BN_EINVAL if buf is too small.
int bn_client_engine_uuid (bn_client_t *self, int id, char *buf, size_t size);

//  One engine's queue as the hub counts it.
typedef struct {
    int engine_id; //  engine id
    int queue;     //  direct requests waiting or running on it
    int completed; //  requests it has completed
    int tasks;     //  load-balanced tasks assigned to it, unfinished
} bn_queue_status_t;

//  Ask the hub for the queue of each engine in targets (NULL: all). On
//  success *status is a malloc'd array of *count entries, ascending by
//  engine id, for the caller to free (), and *unassigned (if not NULL)
//  the load-balanced tasks not yet given to an engine. Returns 0,
//  BN_ENOENGINE, BN_ETIMEDOUT, BN_ENOCONTROLLER, BN_EREMOTE, BN_EPROTO,
//  BN_ECLOSED or BN_ENOMEM.
int bn_client_queue_status (bn_client_t *self, bn_idset_t *targets,
                            double timeout, bn_queue_status_t **status,
                            size_t *count, int *unassigned);

//  The hub's task records (doc/wire.md 5) ----------------------------------

//  The result of msg_id as the hub recorded it, whichever client sent the
//  request (a direct, load-balanced or broadcast request; output included).
//  On success *result_p is a complete result of one item, read with the
//  bn_result_* accessors as the sender's own. Returns 0, BN_ENOTREADY
//  (the request is still pending), BN_ENOENT (the hub has no record of
//  msg_id, or keeps none), BN_ETIMEDOUT, BN_ENOCONTROLLER, BN_EREMOTE,
//  BN_EPICKLE (a value this library cannot decode; the rest is there),
//  BN_ECLOSED or BN_ENOMEM.
int bn_client_get_result (bn_client_t *self, const char *msg_id, double timeout,
                          bn_result_t **result_p);

//  The msg_ids the hub has records of, oldest submission first: on
//  success *msg_ids is a NULL-terminated array (free it with
//  bn_client_free_strv) of *count ids. Returns as bn_client_get_result.
int bn_client_history (bn_client_t *self, double timeout, char ***msg_ids,
                       size_t *count);

//  Query the hub's records with a MongoDB-style query in JSON text
//  (operators $lt $gt $lte $gte $eq $ne $in $nin $all $mod $exists; ISO
//  date strings compare as dates), e.g. {"engine_uuid": "...",
//  "completed": {"$gt": "2026-11-21T14:29:26Z"}}; NULL matches every
//  record. keys (NULL-terminated, or NULL for all) picks the TaskRecord
//  keys returned (msg_id always). On success *records is a malloc'd JSON
//  text of the list of records, for the caller to free. Returns 0,
//  BN_EINVAL (query_json is not a JSON object), BN_EREMOTE (the hub
//  refused the query: see the text in *records if not NULL), BN_ENOENT
//  (the hub keeps no records), BN_ETIMEDOUT, BN_ENOCONTROLLER, BN_ECLOSED
//  or BN_ENOMEM.
int bn_client_db_query (bn_client_t *self, const char *query_json,
                        const char *const *keys, double timeout,
                        char **records);

//  Drop the hub's records of msg_ids (NULL-terminated; NULL: every
//  completed record) and of every completed request of the engines in
//  engines (may be NULL). Returns 0, BN_ENOTREADY (a msg_id is still
//  pending), BN_ENOENGINE (an engine is not registered), BN_ETIMEDOUT,
//  BN_ENOCONTROLLER, BN_EREMOTE, BN_ECLOSED or BN_ENOMEM.
int bn_client_purge (bn_client_t *self, const char *const *msg_ids,
                     bn_idset_t *engines, double timeout);

//  Run the requests msg_ids (NULL-terminated) again through the task
//  scheduler, as the hub recorded them (without their dependencies); on
//  success *new_ids (if not NULL) is a NULL-terminated array of the new
//  msg_ids in the same order (free it with bn_client_free_strv): read
//  their results with bn_client_get_result. Returns 0, BN_ENOENT (a
//  msg_id has no record), BN_ETIMEDOUT, BN_ENOCONTROLLER, BN_EREMOTE,
//  BN_ECLOSED or BN_ENOMEM.
int bn_client_resubmit (bn_client_t *self, const char *const *msg_ids,
                        double timeout, char ***new_ids);

//  Free a NULL-terminated string array and NULL the caller's pointer;
//  NULL-safe.
void bn_client_free_strv (char ***strv_p);

//  The counters every actor of the controller keeps (banyan's
//  bn_stats_request; what `banyan stats` prints). On success *stats is a
//  malloc'd JSON text, for the caller to free, of an object with one
//  object per actor: "records", "hub", "heart", "mux", "control",
//  "iopub", "task" and "broadcast" (its tree's nodes in the list
//  "nodes", the root first; in processes mode with each process's pid,
//  state and restarts). Counters are integers; a few entries are text
//  (a node's name, state and last loss). Returns 0, BN_ENOTSUP (the
//  controller does not serve it: IPython Parallel's ipcontroller, or an
//  older banyan-controller), BN_EREMOTE, BN_EPROTO, BN_ETIMEDOUT,
//  BN_ENOCONTROLLER, BN_ECLOSED or BN_ENOMEM.
int bn_client_stats (bn_client_t *self, double timeout, char **stats);

//  Shut down every engine (through their control channel) and, when hub
//  is true, the controller too; waits for their replies. Returns 0, or
//  the first error (BN_ETIMEDOUT, BN_ENOCONTROLLER, BN_EREMOTE...).
int bn_client_shutdown (bn_client_t *self, bool hub, double timeout);

//  Messages the client received and dropped: bad signature, replayed,
//  malformed, or unexpected.
size_t bn_client_dropped (bn_client_t *self);

//  ---------------------------------------------------------------------
//  Views: how requests reach engines (IPython Parallel's DirectView,
//  BroadcastView, LoadBalancedView).

typedef enum {
    BN_VIEW_DIRECT,       //  one request per target engine, via the mux
    BN_VIEW_BROADCAST,    //  one request to the broadcast scheduler tree
    BN_VIEW_LOAD_BALANCED //  one task, run by one engine the scheduler picks
} bn_view_kind_t;

//  Create a view of kind on client, targeting all engines (the engines
//  registered when each call is made). Returns NULL if out of memory.
bn_view_t *bn_view_new (bn_client_t *client, bn_view_kind_t kind);

//  Destroy a view; NULLs *self_p; NULL-safe.
void bn_view_destroy (bn_view_t **self_p);

//  What kind of view this is.
bn_view_kind_t bn_view_kind (bn_view_t *self);

//  Target the engines in targets (copied; NULL: all engines). A direct or
//  broadcast call fails with BN_ENOENGINE if a target is not registered;
//  a load-balanced call runs on one of them. Returns 0 or BN_ENOMEM.
int bn_view_set_targets (bn_view_t *self, bn_idset_t *targets);

//  Target a list of engine ids, in this order (duplicates allowed, as in
//  IPython Parallel). Returns 0, BN_EINVAL (a negative id) or BN_ENOMEM.
int bn_view_set_target_list (bn_view_t *self, const int *ids, size_t count);

//  Broadcast views: let the scheduler tree merge the replies into one
//  message (IPython Parallel's is_coalescing; default false). Results
//  look the same either way. Returns 0, or BN_EINVAL on other views.
int bn_view_set_coalescing (bn_view_t *self, bool coalescing);

//  Broadcast views: banyan's tree options (request metadata keys a stock
//  IPython Parallel controller ignores; see the README's broadcast tree
//  section). Each setter returns 0, or BN_EINVAL on other views or for a
//  bad argument.

//  What a level of the tree does with its subtree's replies: merge them
//  into one message, or forward each message as it arrives.
typedef enum {
    BN_LEVEL_MERGE,  //  one message per request (and per release)
    BN_LEVEL_FORWARD //  each message from below goes up at once
} bn_level_t;

//  Per-level mode, levels[0] for the root ... levels[depth] for the
//  leaves; a level past the end uses the last entry. count 0 restores the
//  default (every level merges when coalescing, else forwards). E.g.
//  {FORWARD, MERGE}: each leaf merges its engines' replies and the root
//  passes each leaf's batch up as it completes, so results stream in as
//  one message per leaf. At most 16 entries.
int bn_view_set_levels (bn_view_t *self, const bn_level_t *levels,
                        size_t count);

//  When a merging level releases what it holds.
typedef enum {
    BN_RELEASE_ALL,    //  once every reply arrived (the default)
    BN_RELEASE_WINDOW, //  what has arrived, every window_ms
    BN_RELEASE_NONE    //  each reply at once, as a merged message of one
} bn_release_t;

//  Release mode; window_ms (> 0) is used by BN_RELEASE_WINDOW only.
int bn_view_set_release (bn_view_t *self, bn_release_t mode, int window_ms);

//  Merging levels group engines whose replies are identical (status,
//  result bytes, output, error): one entry with an engine set travels up.
//  Results still hold one item per engine; bn_result_group_* show the
//  groups as they came.
int bn_view_set_group (bn_view_t *self, bool group);

//  Reduce apply results at each merging level: "sum", "min", "max", or a
//  plugin's "<plugin>:<name>"; NULL or "" for none. Items of engines that
//  contributed complete with status 0 and no value; the reduced value is
//  bn_result_reduced. An op of other shape is BN_EINVAL.
int bn_view_set_reduce (bn_view_t *self, const char *op);

//  The request's deadline in milliseconds from its arrival at the root
//  (0: the controller's default, controller.tree_deadline). At it a
//  merging node sends what it has; engines still missing fail with
//  EngineError (BN_EENGINEDIED).
int bn_view_set_deadline_ms (bn_view_t *self, int deadline_ms);

//  Ask every node to record when it received the request and sent the
//  reply (bn_result_hop).
int bn_view_set_timestamps (bn_view_t *self, bool timestamps);

//  Ask banyan engines to send no iopub output for the request and to
//  return stdout and stderr inside the reply instead (less traffic: no
//  busy and idle statuses either, and output travels merged and grouped
//  with the results). Stock engines ignore it and publish output as usual;
//  results look the same either way. By default a request of a broadcast
//  or a direct view asks for it when every engine it goes to said at
//  registration that it can (banyan engines behind a banyan controller),
//  and not otherwise; true or false here fixes it either way. A
//  load-balanced view (BN_EINVAL) does not know its engine beforehand.
//  With coalescing and no levels set, the request asks for merging
//  through bn_levels (every level merges) with is_coalescing false: a
//  stock 7.1.0 tree, whose merged reply keeps only the last engine's
//  reply content (and so loses the others' output), then forwards each
//  reply instead, while banyan's tree merges.
int bn_view_set_output_in_reply (bn_view_t *self, bool in_reply);

//  Execute requests: silent (the default, as DirectView.execute) or not
//  (as %px: a Python engine then publishes execute_result and counts the
//  execution). Returns 0.
int bn_view_set_silent (bn_view_t *self, bool silent);

//  Load-balanced views: IPython Parallel's task flags (the request
//  metadata of doc/wire.md 8.2). Each setter returns 0, BN_EINVAL on other
//  views or for a bad argument, or BN_ENOMEM.

//  Run each task only once the given requests have finished: every one
//  of them (all) or any one, counting successes and/or failures (at
//  least one of the two). A task that can never run fails with
//  ImpossibleDependency (BN_EREMOTE); one naming a request the task
//  scheduler never saw fails with InvalidDependency. The msg_ids are
//  copied; count 0 clears. bn_view_set_after_result takes every msg_id of
//  a result (borrowed; NULL clears).
int bn_view_set_after (bn_view_t *self, const char *const *msg_ids,
                       size_t count, bool all, bool success, bool failure);
int bn_view_set_after_result (bn_view_t *self, bn_result_t *result, bool all,
                              bool success, bool failure);

//  Run each task on an engine where the given requests ran (all of them,
//  or any one), as bn_view_set_after.
int bn_view_set_follow (bn_view_t *self, const char *const *msg_ids,
                        size_t count, bool all, bool success, bool failure);
int bn_view_set_follow_result (bn_view_t *self, bn_result_t *result, bool all,
                               bool success, bool failure);

//  Seconds a task may wait for its dependencies and a free engine before
//  it fails with TaskTimeout (BN_EREMOTE); 0, the default, waits forever.
int bn_view_set_timeout (bn_view_t *self, double seconds);

//  Times a failed task is run again on another engine (default 0).
int bn_view_set_retries (bn_view_t *self, int retries);

//  Run code on the targets: a shell command line on banyan engines,
//  Python source on IPython engines (an execute_request). On success
//  *result_p is a new result for the caller to destroy. Returns 0,
//  BN_EINVAL, BN_ENOENGINE (a target is not registered, or no engines),
//  BN_ENOTSUP (the connection lists no port for this kind of view),
//  BN_ENOCONTROLLER, BN_ECLOSED or BN_ENOMEM.
int bn_view_execute (bn_view_t *self, const char *code, bn_result_t **result_p);

//  bn_view_execute with input (input_size bytes, sent once, as a buffer
//  of the request that every engine's copy shares) as the standard input
//  of the command on each banyan engine, as clush forwards its own; an
//  IPython engine ignores it. input_size 0: /dev/null, as
//  bn_view_execute. Returns as bn_view_execute.
int bn_view_execute_input (bn_view_t *self, const char *code, const void *input,
                           size_t input_size, bn_result_t **result_p);

//  Call a function on the targets with positional args (a LIST or TUPLE,
//  or NULL for none) and keyword args (a DICT with STR keys, or NULL);
//  both are borrowed. function is a name: without a dot ("echo") it is
//  sent as IPython Parallel's Reference(name), which a banyan engine
//  looks up in its function table and a Python engine evaluates in its
//  namespace; with dots ("builtins.sum", "math.sqrt") it is a reference
//  to an attribute of a module (a pickle GLOBAL), which a Python engine
//  imports. Arguments are pickled as IPython Parallel does (BYTES larger
//  than 1 KiB travel as separate frames, not copied into the pickle).
//  Returns as bn_view_execute, or BN_EPICKLE if an argument cannot be
//  pickled.
int bn_view_apply (bn_view_t *self, const char *function,
                   const bn_value_t *args, const bn_value_t *kwargs,
                   bn_result_t **result_p);

//  Assign names in the targets' namespaces: ns is a DICT of STR names to
//  values (borrowed). Sent as the IPython Parallel client does, an apply
//  of ipyparallel.util._push, which banyan and Python engines both run.
//  Returns as bn_view_apply.
int bn_view_push (bn_view_t *self, const bn_value_t *ns,
                  bn_result_t **result_p);

//  Fetch values from the targets' namespaces: names is a STR (each
//  engine's result is that value) or a LIST or TUPLE of STR (each result
//  is a LIST of values), borrowed. An apply of ipyparallel.util._pull.
//  Returns as bn_view_apply.
int bn_view_pull (bn_view_t *self, const bn_value_t *names,
                  bn_result_t **result_p);

//  Abort the requests of result (as bn_result_abort), or, when result is
//  NULL, ask the targets (all engines for a load-balanced view without
//  targets) to abort every request of this client still outstanding;
//  waits for their replies. Aborted requests complete with BN_EABORTED.
//  Returns 0, or the first error.
int bn_view_abort (bn_view_t *self, bn_result_t *result, double timeout);

//  Ask the targets (all engines for a load-balanced view without
//  targets) for their kernel_info on the control channel, which an engine
//  answers at once, even while it runs a request. Waits up to timeout for
//  the replies; on success *result_p is a new result with one item per
//  target, whose content (bn_result_content) is the kernel_info_reply, or
//  BN_ENOTREADY for an engine that did not answer in time. A banyan
//  engine's reply says what it is busy with: "bn_running", the request it
//  runs ({"msg_id", "msg_type", "started"} and its "code" or
//  "function"), or null, and "bn_queued", the requests waiting behind it.
//  Returns 0, BN_EINVAL, BN_ENOENGINE, BN_ENOCONTROLLER, BN_ECLOSED or
//  BN_ENOMEM.
int bn_view_kernel_info (bn_view_t *self, double timeout,
                         bn_result_t **result_p);

//  Clear the targets' namespaces; waits for their replies. Returns 0, or
//  the first error.
int bn_view_clear (bn_view_t *self, double timeout);

//  Shut down the target engines; waits for their replies. Returns 0, or
//  the first error.
int bn_view_shutdown (bn_view_t *self, double timeout);

//  ---------------------------------------------------------------------
//  Results: what a call returns (IPython Parallel's AsyncResult). A
//  result holds one item per request: one per target engine for direct
//  and broadcast views, one task for a load-balanced view. An item is
//  complete when its reply arrived and, if it ran, when the engine has
//  reported itself idle for it, so its output is complete too.

//  Destroy a result (a pending request is forgotten, not aborted); NULLs
//  *self_p; NULL-safe.
void bn_result_destroy (bn_result_t **self_p);

//  Number of items.
size_t bn_result_count (bn_result_t *self);

//  Number of complete items (IPython Parallel's progress).
size_t bn_result_progress (bn_result_t *self);

//  True when every item is complete.
bool bn_result_ready (bn_result_t *self);

//  Abort the requests of the result that have not been answered, as
//  IPython Parallel's AsyncResult.abort: each engine with one of them gets
//  an abort_request (on the control channel) naming its own, and every
//  engine those of load-balanced tasks not yet given to one. A request
//  still queued is dropped; one that runs on a banyan engine is ended (its
//  command's process group gets SIGINT, then SIGTERM, then SIGKILL, the
//  engine's engine.abort_grace apart), while a 7.1.0 engine lets it
//  finish. Their items complete with BN_EABORTED as the replies arrive.
//  Waits up to timeout for the engines to acknowledge (not for the
//  aborted replies). Returns 0, or the first error (BN_ETIMEDOUT,
//  BN_ENOCONTROLLER, BN_ECLOSED, BN_ENOMEM...).
int bn_result_abort (bn_result_t *self, double timeout);

//  Wait until every item is complete. Returns 0 (complete, whatever the
//  outcome) or BN_ETIMEDOUT.
int bn_result_wait (bn_result_t *self, double timeout);

//  Wait, then return 0 if every item succeeded, else the error of the
//  first item (in index order) that failed: BN_EREMOTE (the function or
//  command raised; see bn_result_ename), BN_EABORTED, BN_EENGINEDIED (its
//  engine unregistered, or an EngineError reply said it went away),
//  BN_ENOCONTROLLER, BN_ECLOSED, BN_EPICKLE (a result pickle this library
//  cannot read), BN_ENOTSUP (the controller has no scheduler for this
//  kind of view: it answered NotImplementedError itself), BN_EPROTO (a
//  reply without a status); or BN_ETIMEDOUT.
int bn_result_get (bn_result_t *self, double timeout);

//  Partial results: wait for the next item to complete (items are handed
//  out once each, in the order they complete) and return its index;
//  BN_ETIMEDOUT if none completed in time, BN_ENOENT once every item has
//  been handed out.
int bn_result_next (bn_result_t *self, double timeout);

//  Seconds since the request was sent, or from then to the completion of
//  the last item once the result is ready.
double bn_result_elapsed (bn_result_t *self);

//  Per-item accessors. index must be below bn_result_count. Accessors
//  marked (complete) return NULL, -1 or BN_ENOTREADY until the item is
//  complete.

//  The request's msg_id.
const char *bn_result_msg_id (bn_result_t *self, size_t index);

//  Outcome (complete): 0, BN_ENOTREADY while pending, or the item's error
//  as listed for bn_result_get.
int bn_result_status (bn_result_t *self, size_t index);

//  The engine's id, or -1 when not known (a load-balanced task before its
//  reply) (complete, except for direct and broadcast views).
int bn_result_engine_id (bn_result_t *self, size_t index);

//  The engine's uuid, or NULL when not known.
const char *bn_result_engine_uuid (bn_result_t *self, size_t index);

//  Timestamps as ISO-8601 UTC text, as IPython Parallel's metadata:
//  when the client sent the request, when the engine started it, when it
//  completed (the reply's date); NULL when not known (complete).
const char *bn_result_submitted (bn_result_t *self, size_t index);
const char *bn_result_started (bn_result_t *self, size_t index);
const char *bn_result_completed (bn_result_t *self, size_t index);

//  Output the engine wrote to stdout and stderr for this request, "" if
//  none (complete): a banyan engine's bytes as the command wrote them (not
//  always UTF-8), another's text; NUL-terminated, and with _size its
//  length, NULs within included.
const char *bn_result_stdout (bn_result_t *self, size_t index);
const char *bn_result_stderr (bn_result_t *self, size_t index);
size_t bn_result_stdout_size (bn_result_t *self, size_t index);
size_t bn_result_stderr_size (bn_result_t *self, size_t index);

//  The value an apply returned, decoded from its pickle; NULL for
//  execute, for errors, or when the pickle could not be read (complete).
const bn_value_t *bn_result_value (bn_result_t *self, size_t index);

//  The text/plain form of an execute_result (a Python engine evaluating
//  an expression, not silent), or NULL (complete).
const char *bn_result_execute_result (bn_result_t *self, size_t index);

//  An execute's execution_count, or -1 (complete).
int bn_result_execution_count (bn_result_t *self, size_t index);

//  A failed item's exception name ("ZeroDivisionError", "EngineError",
//  "TaskAborted"...), value, and traceback lines joined with newlines;
//  NULL when the item did not fail (complete).
const char *bn_result_ename (bn_result_t *self, size_t index);
const char *bn_result_evalue (bn_result_t *self, size_t index);
const char *bn_result_traceback (bn_result_t *self, size_t index);

//  The reply's content as JSON text (for keys this API does not name), or
//  NULL when no reply arrived (complete).
const char *bn_result_content (bn_result_t *self, size_t index);

//  Broadcast results: how the replies came, beyond the per-item view.

//  Number of reply messages received for this result so far (one per
//  engine without coalescing; one per merged batch with it).
size_t bn_result_messages (bn_result_t *self);

//  Groups of engines with identical replies, as the tree's merging levels
//  formed them (bn_view_set_group), in arrival order; 0 without grouping.
size_t bn_result_group_count (bn_result_t *self);

//  The engines of group (borrowed, valid until the result is destroyed;
//  do not modify), or NULL if there is no such group.
bn_idset_t *bn_result_group_engines (bn_result_t *self, size_t group);

//  The group item index arrived in, or -1 (not grouped, or not yet).
int bn_result_group_of (bn_result_t *self, size_t index);

//  A reduced request's value: the reduction of every contributing
//  engine's result, combined in the client when it came in several
//  messages (sum, min and max; a plugin's partial results are given by
//  bn_result_reduced_part). NULL until the result is ready, when nothing
//  was reduced, or when a plugin's partials cannot be combined here.
const bn_value_t *bn_result_reduced (bn_result_t *self);

//  The reduction's name as the tree reported it ("sum"...), or NULL.
const char *bn_result_reduced_op (bn_result_t *self);

//  Reduced values as they arrived (one per merged message) and their
//  number; NULL past the end.
size_t bn_result_reduced_count (bn_result_t *self);
const bn_value_t *bn_result_reduced_part (bn_result_t *self, size_t part);

//  Engines whose results went into the reduction, and engines that failed
//  (their items hold the errors); borrowed, never NULL.
bn_idset_t *bn_result_reduced_engines (bn_result_t *self);
bn_idset_t *bn_result_reduced_failed (bn_result_t *self);

//  Per-hop timestamps of the message that completed item index
//  (bn_view_set_timestamps): the number of hops, one per node the
//  message passed through or was merged at (a merged message names every
//  node of the subtree that sent it), in the order they sent, the root
//  last (complete).
size_t bn_result_hop_count (bn_result_t *self, size_t index);

//  Hop number hop of item index: the node's routing id, and when it
//  received the request and sent the reply (ISO-8601), each borrowed and
//  NULL if not known; pass NULL for what you do not need. Returns 0, or
//  BN_EINVAL past the last hop, BN_ENOTREADY before completion.
int bn_result_hop (bn_result_t *self, size_t index, size_t hop,
                   const char **node, const char **received, const char **sent);

#ifdef __cplusplus
}
#endif

#endif

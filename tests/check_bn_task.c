/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_task: the task scheduler between a fake client and fake
    engines over tcp, driven by its own zloop in the test process.  */
#include "bn_ctltest.h"
#include "bn_error.h"
#include "bn_task.h"

#define S_ENGINES_MAX 8
#define S_QUIET 150 //  ms we wait to see that nothing arrives

static const char *s_key = "e05ab558-73805a94e21c7ce24a0654fe";

static bn_session_t *s_sched_session;
static bn_session_t *s_client_session;
static zsock_t *s_client_side, *s_engine_side; //  scheduler sockets
static int s_engine_port;
static zsock_t *s_client; //  client DEALER
static struct {
    char uuid[40];
    bn_session_t *session;
    zsock_t *sock; //  ROUTER, routing id uuid
} s_engines[S_ENGINES_MAX];
static size_t s_nengines;
static bn_task_t *s_task;
static zloop_t *s_loop;

//  What the monitor was told.
static struct {
    int requests;
    int assigned;
    int replies;
    int scheduler_replies; //  replies with engine NULL
    char last_engine[64];
} s_seen;

static void
s_on_request (void *arg, const char *queue, bn_msg_t *request,
              const char *engine)
{
    ck_assert_str_eq (queue, BN_MONITOR_QUEUE_TASK);
    ck_assert_ptr_null (engine);
    ck_assert_ptr_nonnull (bn_msg_id (request));
    s_seen.requests++;
}

static void
s_on_assigned (void *arg, const char *msg_id, const char *engine)
{
    s_seen.assigned++;
    snprintf (s_seen.last_engine, sizeof s_seen.last_engine, "%s", engine);
}

static void
s_on_reply (void *arg, const char *queue, bn_msg_t *reply, const char *engine)
{
    ck_assert_ptr_nonnull (bn_msg_parent_id (reply));
    s_seen.replies++;
    if (!engine)
        s_seen.scheduler_replies++;
}

//  Add a fake engine connected to the scheduler and tell the scheduler.
static size_t
s_add_engine (void)
{
    size_t i = s_nengines++;
    ck_assert_uint_lt (i, S_ENGINES_MAX);
    snprintf (s_engines[i].uuid, sizeof s_engines[i].uuid,
              "%08x-0000000000000000000000%02zx", (unsigned)getpid (), i);
    s_engines[i].session = bn_session_new (s_key, s_engines[i].uuid);
    s_engines[i].sock = t_sock (ZMQ_ROUTER, s_engines[i].uuid);
    t_connect (s_engines[i].sock, s_engine_port);
    t_wait_route (s_engine_side, s_engines[i].uuid, s_engines[i].sock);
    ck_assert_int_eq (bn_task_engine_add (s_task, s_engines[i].uuid, (int)i),
                      0);
    return i;
}

static void
s_start (bn_task_scheme_t scheme, int hwm, size_t engines)
{
    memset (&s_seen, 0, sizeof s_seen);
    s_sched_session = bn_session_new (s_key, NULL);
    s_client_session = bn_session_new (s_key, NULL);
    int client_port;
    s_client_side = t_bound (ZMQ_ROUTER, BN_ROUTING_TASK_IN, &client_port);
    zsock_set_router_mandatory (s_client_side, 1);
    s_engine_side = t_bound (ZMQ_ROUTER, BN_ROUTING_TASK_OUT, &s_engine_port);
    zsock_set_router_mandatory (s_engine_side, 1);
    s_task = bn_task_new (s_client_side, s_engine_side, s_sched_session, scheme,
                          hwm);
    ck_assert_ptr_nonnull (s_task);
    bn_task_set_seed (s_task, 42);
    bn_monitor_t monitor = {.request = s_on_request,
                            .assigned = s_on_assigned,
                            .reply = s_on_reply};
    bn_task_set_monitor (s_task, &monitor);
    s_loop = zloop_new ();
    ck_assert_int_eq (bn_task_attach (s_task, s_loop), 0);
    s_client = t_sock (ZMQ_DEALER, NULL);
    t_connect (s_client, client_port);
    for (size_t i = 0; i < engines; i++)
        s_add_engine ();
}

static void
s_teardown (void)
{
    bn_task_destroy (&s_task);
    zloop_destroy (&s_loop);
    for (size_t i = 0; i < s_nengines; i++) {
        zsock_destroy (&s_engines[i].sock);
        bn_session_destroy (&s_engines[i].session);
    }
    s_nengines = 0;
    zsock_destroy (&s_client);
    zsock_destroy (&s_client_side);
    zsock_destroy (&s_engine_side);
    bn_session_destroy (&s_sched_session);
    bn_session_destroy (&s_client_session);
}

static int
s_stop_loop (zloop_t *loop, zsock_t *sock, void *arg)
{
    return -1;
}

static int
s_stop_timer (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

//  Run the scheduler until sock has a message for us, at most ms; true if
//  one is there.
static bool
s_run_until (zsock_t *sock, int ms)
{
    if (zsock_events (sock) & ZMQ_POLLIN)
        return true;
    ck_assert_int_eq (zloop_reader (s_loop, sock, s_stop_loop, NULL), 0);
    int timer = zloop_timer (s_loop, ms, 1, s_stop_timer, NULL);
    zloop_start (s_loop);
    zloop_reader_end (s_loop, sock);
    zloop_timer_end (s_loop, timer);
    return (zsock_events (sock) & ZMQ_POLLIN) != 0;
}

//  Run the scheduler for ms (no socket of ours to wait for).
static void
s_run_for (int ms)
{
    int timer = zloop_timer (s_loop, ms, 1, s_stop_timer, NULL);
    zloop_start (s_loop);
    zloop_timer_end (s_loop, timer);
}

//  The client submits an apply_request with metadata (taken, NULL = {})
//  and one buffer; returns its msg_id (free it).
static char *
s_submit_type (const char *type, json_t *metadata)
{
    bn_msg_t *msg = t_msg (s_client_session, type, NULL, NULL);
    if (metadata)
        bn_msg_set_metadata (msg, metadata);
    bn_msg_add_buffer (msg, "payload", 7);
    char *msg_id = strdup (bn_msg_id (msg));
    t_send (&msg, s_client, s_client_session);
    return msg_id;
}

static char *
s_submit (json_t *metadata)
{
    return s_submit_type (BN_MSG_APPLY_REQUEST, metadata);
}

//  The request engine i was given; NULL if none comes.
static bn_msg_t *
s_take_within (size_t i, int ms)
{
    if (!s_run_until (s_engines[i].sock, ms))
        return NULL;
    bn_msg_t *request = t_recv (s_engines[i].sock);
    ck_assert_ptr_nonnull (request);
    //  ['task_out', client_id, DELIM ...], signed by the client
    ck_assert_uint_eq (bn_msg_nidents (request), 2);
    ck_assert (bn_msg_ident_is (request, 0, BN_ROUTING_TASK_OUT,
                                strlen (BN_ROUTING_TASK_OUT)));
    ck_assert_int_eq (bn_msg_verify (request, s_engines[i].session, false), 0);
    return request;
}

static bn_msg_t *
s_take (size_t i)
{
    bn_msg_t *request = s_take_within (i, T_TIMEOUT);
    ck_assert_msg (request != NULL, "engine %zu got no task", i);
    return request;
}

//  Engine i answers request (destroyed) with status; dependencies_met as
//  given.
static void
s_answer_md (size_t i, bn_msg_t **request_p, const char *status, bool met)
{
    bn_msg_t *request = *request_p;
    bn_msg_t *reply =
        bn_msg_new_reply (s_engines[i].session, request, BN_MSG_APPLY_REPLY);
    json_t *content =
        streq (status, "ok")
            ? json_pack ("{s:s}", "status", "ok")
            : bn_wire_error (met ? "ZeroDivisionError" : "UnmetDependency",
                             "boom", NULL, NULL);
    bn_msg_set_content (reply, content);
    bn_msg_set_metadata (
        reply, json_pack ("{s:s, s:b, s:s, s:s}", "status", status,
                          "dependencies_met", met, "engine", s_engines[i].uuid,
                          "started", "2026-11-24T20:00:00.000000Z"));
    bn_msg_add_buffer (reply, "\x80\x04K\x07.", 5);
    bn_msg_destroy (request_p);
    t_send (&reply, s_engines[i].sock, s_engines[i].session);
}

static void
s_answer (size_t i, bn_msg_t **request_p, const char *status)
{
    s_answer_md (i, request_p, status, true);
}

//  The next reply the client gets; NULL if none within ms.
static bn_msg_t *
s_reply_within (int ms)
{
    if (!s_run_until (s_client, ms))
        return NULL;
    bn_msg_t *reply = t_recv (s_client);
    ck_assert_ptr_nonnull (reply);
    ck_assert_int_eq (bn_msg_verify (reply, s_client_session, true), 0);
    return reply;
}

static bn_msg_t *
s_reply (void)
{
    bn_msg_t *reply = s_reply_within (T_TIMEOUT);
    ck_assert_msg (reply != NULL, "client got no reply");
    return reply;
}

//  Assert reply answers msg_id with an error the scheduler made.
static void
s_assert_scheduler_error (bn_msg_t *reply, const char *msg_id,
                          const char *ename)
{
    ck_assert_str_eq (bn_msg_type (reply), BN_MSG_APPLY_REPLY);
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (t_content_str (reply, "status"), "error");
    ck_assert_str_eq (t_content_str (reply, "ename"), ename);
    json_t *info = json_object_get (bn_msg_content (reply), "engine_info");
    ck_assert (json_is_object (info) && json_object_size (info) == 0);
    ck_assert (
        json_is_array (json_object_get (bn_msg_content (reply), "traceback")));
    ck_assert_uint_eq (json_object_size (bn_msg_metadata (reply)), 0);
    ck_assert_uint_eq (bn_msg_nidents (reply), 0);
}

//  Assert reply is the engine's answer to msg_id from engine i.
static void
s_assert_from (bn_msg_t *reply, const char *msg_id, size_t i,
               const char *status)
{
    ck_assert_str_eq (bn_msg_parent_id (reply), msg_id);
    ck_assert_str_eq (bn_msg_session (reply), s_engines[i].uuid);
    ck_assert_str_eq (t_metadata_str (reply, "status"), status);
    //  the client's DEALER sees [engine uuid, DELIM, ...]
    ck_assert_uint_eq (bn_msg_nidents (reply), 1);
    ck_assert (bn_msg_ident_is (reply, 0, s_engines[i].uuid,
                                strlen (s_engines[i].uuid)));
}

static json_int_t
s_stat (const char *name)
{
    json_t *stats = bn_task_stats (s_task);
    json_int_t value = json_integer_value (json_object_get (stats, name));
    json_decref (stats);
    return value;
}

//  Run the scheduler until counter name reaches at least value (bounded).
static void
s_run_until_stat (const char *name, json_int_t value)
{
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (s_stat (name) < value && zclock_mono () < end)
        s_run_for (5);
    ck_assert_int_ge (s_stat (name), value);
}

//  Index of the engine that has a task waiting, or -1.
static int
s_who_got (bn_msg_t **request_p, int ms)
{
    s_run_for (0);
    int64_t end = zclock_mono () + ms;
    while (true) {
        for (size_t i = 0; i < s_nengines; i++)
            if (zsock_events (s_engines[i].sock) & ZMQ_POLLIN) {
                *request_p = s_take (i);
                return (int)i;
            }
        if (zclock_mono () >= end)
            return -1;
        s_run_for (10);
    }
}

//  --------------------------------------------------------------------------

START_TEST (test_usage)
{
    s_start (BN_TASK_LEASTLOAD, 1, 0);
    //  the hub tells the scheduler about a registered engine
    size_t e = s_add_engine ();

    //  a client submits a task with a buffer
    char *msg_id =
        s_submit (json_pack ("{s:[], s:[], s:n, s:[], s:i}", "after", "follow",
                             "timeout", "targets", "retries", 0));

    //  the engine gets it, frames and signature as the client sent them
    bn_msg_t *request = s_take (e);
    ck_assert_str_eq (bn_msg_id (request), msg_id);
    ck_assert_uint_eq (bn_msg_nbuffers (request), 1);
    ck_assert_uint_eq (bn_task_engine_load (s_task, s_engines[e].uuid), 1);
    json_t *tasks = bn_task_engine_tasks (s_task, s_engines[e].uuid);
    ck_assert_str_eq (json_string_value (json_array_get (tasks, 0)), msg_id);
    json_decref (tasks);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 0);

    //  its reply reaches the client, which sees the engine as sender
    s_answer (e, &request, "ok");
    bn_msg_t *reply = s_reply ();
    s_assert_from (reply, msg_id, e, "ok");
    ck_assert_uint_eq (bn_msg_nbuffers (reply), 1);
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_task_engine_load (s_task, s_engines[e].uuid), 0);

    //  the monitor saw the request, the assignment and the reply
    ck_assert_int_eq (s_seen.requests, 1);
    ck_assert_int_eq (s_seen.assigned, 1);
    ck_assert_str_eq (s_seen.last_engine, s_engines[e].uuid);
    ck_assert_int_eq (s_seen.replies, 1);
    ck_assert_int_eq (s_seen.scheduler_replies, 0);
    free (msg_id);
}
END_TEST

START_TEST (test_scheme_parse)
{
    ck_assert_int_eq (bn_task_scheme_parse ("leastload"), BN_TASK_LEASTLOAD);
    ck_assert_int_eq (bn_task_scheme_parse ("lru"), BN_TASK_LRU);
    ck_assert_int_eq (bn_task_scheme_parse ("plainrandom"),
                      BN_TASK_PLAINRANDOM);
    ck_assert_int_eq (bn_task_scheme_parse ("twobin"), BN_TASK_TWOBIN);
    ck_assert_int_eq (bn_task_scheme_parse ("weighted"), BN_TASK_WEIGHTED);
    ck_assert_int_eq (bn_task_scheme_parse ("pure"), BN_TASK_PURE);
    ck_assert_int_eq (bn_task_scheme_parse ("none"), -1);
    ck_assert_int_eq (bn_task_scheme_parse ("LRU"), -1);
}
END_TEST

//  leastload: the least loaded engine, the least recently used among
//  equals; new engines come first.
START_TEST (test_leastload)
{
    s_start (BN_TASK_LEASTLOAD, 0, 3);
    bn_msg_t *requests[3];
    char *ids[3];
    //  engines were added 0, 1, 2: the newest is at the head of the line
    for (int n = 0; n < 3; n++) {
        ids[n] = s_submit (NULL);
        requests[n] = s_take (2 - n);
    }
    //  each has one task; engine 1 finishes
    s_answer (1, &requests[1], "ok");
    bn_msg_t *reply = s_reply ();
    bn_msg_destroy (&reply);
    //  so it is the least loaded, though it ran most recently
    char *next = s_submit (NULL);
    bn_msg_t *request = s_take (1);
    ck_assert_str_eq (bn_msg_id (request), next);
    bn_msg_destroy (&request);
    //  all at load 1: the least recently used gets the next (engine 2)
    char *last = s_submit (NULL);
    request = s_take (2);
    ck_assert_str_eq (bn_msg_id (request), last);
    bn_msg_destroy (&request);
    bn_msg_destroy (&requests[0]);
    bn_msg_destroy (&requests[2]);
    for (int n = 0; n < 3; n++)
        free (ids[n]);
    free (next);
    free (last);
}
END_TEST

//  lru: the front of the line whatever the loads.
START_TEST (test_lru)
{
    s_start (BN_TASK_LRU, 0, 2);
    int order[] = {1, 0, 1, 0, 1};
    for (size_t n = 0; n < sizeof order / sizeof order[0]; n++) {
        char *id = s_submit (NULL);
        bn_msg_t *request = s_take (order[n]);
        ck_assert_str_eq (bn_msg_id (request), id);
        bn_msg_destroy (&request);
        free (id);
    }
    ck_assert_uint_eq (bn_task_engine_load (s_task, s_engines[1].uuid), 3);
}
END_TEST

//  Random schemes with hwm 1: each free engine gets exactly one task,
//  the rest wait; with hwm 0 every engine gets work.
static void
s_check_random (bn_task_scheme_t scheme)
{
    s_start (scheme, 1, 4);
    int got[4] = {0};
    for (int n = 0; n < 5; n++)
        free (s_submit (NULL));
    for (int n = 0; n < 4; n++) {
        bn_msg_t *request;
        int who = s_who_got (&request, T_TIMEOUT);
        ck_assert_int_ge (who, 0);
        got[who]++;
        bn_msg_destroy (&request);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq (got[i], 1);
    s_run_until_stat ("received", 5);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    ck_assert_int_eq (s_stat ("submitted"), 4);
    s_teardown ();

    s_start (scheme, 0, 4);
    memset (got, 0, sizeof got);
    for (int n = 0; n < 200; n++)
        free (s_submit (NULL));
    for (int n = 0; n < 200; n++) {
        bn_msg_t *request;
        int who = s_who_got (&request, T_TIMEOUT);
        ck_assert_int_ge (who, 0);
        got[who]++;
        bn_msg_destroy (&request);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt (got[i], 0);
}

START_TEST (test_plainrandom)
{
    s_check_random (BN_TASK_PLAINRANDOM);
}
END_TEST

START_TEST (test_twobin)
{
    s_check_random (BN_TASK_TWOBIN);
}
END_TEST

START_TEST (test_weighted)
{
    s_check_random (BN_TASK_WEIGHTED);
    //  1/load weights: idle engines are chosen before loaded ones
    s_teardown ();
    s_start (BN_TASK_WEIGHTED, 0, 2);
    bn_msg_t *request;
    free (s_submit (NULL));
    int first = s_who_got (&request, T_TIMEOUT);
    bn_msg_destroy (&request);
    free (s_submit (NULL));
    int second = s_who_got (&request, T_TIMEOUT);
    bn_msg_destroy (&request);
    ck_assert_int_ne (first, second);
}
END_TEST

//  pure: round robin, no dependencies, no high-water mark.
START_TEST (test_pure)
{
    s_start (BN_TASK_PURE, 1, 2);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (1);
    //  metadata is not read: a dependency on an unknown id does not fail
    char *b = s_submit (json_pack ("{s:[s]}", "after", "nobody"));
    bn_msg_t *rb = s_take (0);
    char *c = s_submit (NULL);
    bn_msg_t *rc = s_take (1);
    ck_assert_str_eq (bn_msg_id (ra), a);
    ck_assert_str_eq (bn_msg_id (rb), b);
    ck_assert_str_eq (bn_msg_id (rc), c);
    bn_msg_destroy (&ra);
    bn_msg_destroy (&rb);
    bn_msg_destroy (&rc);
    free (a);
    free (b);
    free (c);
}
END_TEST

//  hwm: an engine at its high-water mark gets nothing more until a reply
//  brings it under.
START_TEST (test_hwm)
{
    s_start (BN_TASK_LEASTLOAD, 2, 1);
    char *ids[3];
    bn_msg_t *requests[2];
    for (int n = 0; n < 3; n++)
        ids[n] = s_submit (NULL);
    requests[0] = s_take (0);
    requests[1] = s_take (0);
    ck_assert_ptr_null (s_take_within (0, S_QUIET));
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    json_t *queued = bn_task_unassigned_ids (s_task);
    ck_assert_str_eq (json_string_value (json_array_get (queued, 0)), ids[2]);
    json_decref (queued);
    s_answer (0, &requests[0], "ok");
    bn_msg_t *third = s_take (0);
    ck_assert_str_eq (bn_msg_id (third), ids[2]);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 0);
    bn_msg_destroy (&third);
    bn_msg_destroy (&requests[1]);
    for (int n = 0; n < 3; n++)
        free (ids[n]);
}
END_TEST

//  A task submitted with no engine runs when one registers.
START_TEST (test_no_engines)
{
    s_start (BN_TASK_LEASTLOAD, 1, 0);
    char *id = s_submit (NULL);
    s_run_until_stat ("received", 1);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    size_t e = s_add_engine ();
    bn_msg_t *request = s_take (e);
    ck_assert_str_eq (bn_msg_id (request), id);
    bn_msg_destroy (&request);
    free (id);
}
END_TEST

//  after (plain list): runs once the dependency succeeded; a failed one
//  makes it impossible.
START_TEST (test_after)
{
    s_start (BN_TASK_LEASTLOAD, 0, 1);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (0);
    char *b = s_submit (json_pack ("{s:[s]}", "after", a));
    ck_assert_ptr_null (s_take_within (0, S_QUIET));
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    s_answer (0, &ra, "ok");
    bn_msg_t *reply = s_reply ();
    s_assert_from (reply, a, 0, "ok");
    bn_msg_destroy (&reply);
    bn_msg_t *rb = s_take (0);
    ck_assert_str_eq (bn_msg_id (rb), b);

    //  already met at submission: runs at once
    char *c = s_submit (json_pack ("{s:[s]}", "after", a));
    bn_msg_t *rc = s_take (0);
    ck_assert_str_eq (bn_msg_id (rc), c);

    //  b fails: d, after b, can never run
    char *d = s_submit (json_pack ("{s:[s]}", "after", b));
    s_answer (0, &rb, "error");
    reply = s_reply ();
    s_assert_from (reply, b, 0, "error");
    bn_msg_destroy (&reply);
    reply = s_reply ();
    s_assert_scheduler_error (reply, d, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    //  and one submitted after the failure fails at once
    char *e = s_submit (json_pack ("{s:[s]}", "after", b));
    reply = s_reply ();
    s_assert_scheduler_error (reply, e, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stat ("impossible"), 2);
    ck_assert_int_eq (s_seen.scheduler_replies, 2);
    bn_msg_destroy (&rc);
    free (a);
    free (b);
    free (c);
    free (d);
    free (e);
}
END_TEST

//  The dict form: success/failure flags and all=false.
START_TEST (test_after_flags)
{
    s_start (BN_TASK_LEASTLOAD, 0, 1);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (0);
    char *b = s_submit (NULL);
    bn_msg_t *rb = s_take (0);
    //  on failure only
    char *on_fail = s_submit (json_pack ("{s:{s:[s], s:b, s:b, s:b}}", "after",
                                         "dependencies", a, "all", 1, "success",
                                         0, "failure", 1));
    //  on either outcome
    char *either = s_submit (json_pack ("{s:{s:[s], s:b, s:b, s:b}}", "after",
                                        "dependencies", a, "all", 1, "success",
                                        1, "failure", 1));
    //  any of a, b
    char *any = s_submit (json_pack ("{s:{s:[s, s], s:b}}", "after",
                                     "dependencies", a, b, "all", 0));
    ck_assert_ptr_null (s_take_within (0, S_QUIET));
    ck_assert_uint_eq (bn_task_unassigned (s_task), 3);

    //  a succeeds: on_fail is impossible, either and any run
    s_answer (0, &ra, "ok");
    int fails = 0, runs = 0;
    for (int n = 0; n < 2; n++) {
        bn_msg_t *reply = s_reply ();
        if (streq (bn_msg_parent_id (reply), on_fail)) {
            s_assert_scheduler_error (reply, on_fail, "ImpossibleDependency");
            fails++;
        } else
            ck_assert_str_eq (bn_msg_parent_id (reply), a);
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (fails, 1);
    for (int n = 0; n < 2; n++) {
        bn_msg_t *request = s_take (0);
        ck_assert (streq (bn_msg_id (request), either) ||
                   streq (bn_msg_id (request), any));
        runs++;
        bn_msg_destroy (&request);
    }
    ck_assert_int_eq (runs, 2);

    //  the same task in after and follow, which then fails
    char *c = s_submit (NULL);
    bn_msg_t *rc = s_take (0);
    char *both =
        s_submit (json_pack ("{s:[s], s:[s]}", "after", c, "follow", c));
    s_answer (0, &rc, "error");
    bn_msg_t *got = s_reply ();
    s_assert_from (got, c, 0, "error");
    bn_msg_destroy (&got);
    got = s_reply ();
    s_assert_scheduler_error (got, both, "ImpossibleDependency");
    bn_msg_destroy (&got);
    free (c);
    free (both);

    //  a bad form gets a clear error
    char *bad = s_submit (json_pack ("{s:i}", "after", 5));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, bad, "InvalidDependency");
    bn_msg_destroy (&reply);
    char *neither =
        s_submit (json_pack ("{s:{s:[s], s:b, s:b}}", "follow", "dependencies",
                             a, "success", 0, "failure", 0));
    reply = s_reply ();
    s_assert_scheduler_error (reply, neither, "InvalidDependency");
    bn_msg_destroy (&reply);
    bn_msg_destroy (&rb);
    free (a);
    free (b);
    free (on_fail);
    free (either);
    free (any);
    free (bad);
    free (neither);
}
END_TEST

//  Dependencies on ids this scheduler never saw, or on the task itself.
START_TEST (test_invalid)
{
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    char *a = s_submit (json_pack ("{s:[s]}", "after", "mux-msg-id"));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, a, "InvalidDependency");
    bn_msg_destroy (&reply);
    char *b = s_submit (json_pack ("{s:[s]}", "follow", "mux-msg-id"));
    reply = s_reply ();
    s_assert_scheduler_error (reply, b, "InvalidDependency");
    bn_msg_destroy (&reply);

    //  depending on itself
    bn_msg_t *msg =
        t_msg (s_client_session, BN_MSG_EXECUTE_REQUEST, NULL, NULL);
    char *c = strdup (bn_msg_id (msg));
    bn_msg_set_metadata (msg, json_pack ("{s:[s]}", "after", c));
    t_send (&msg, s_client, s_client_session);
    reply = s_reply ();
    //  an apply_reply even for execute_request (doc/wire.md 8.3)
    s_assert_scheduler_error (reply, c, "InvalidDependency");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stat ("invalid"), 3);

    //  bad targets, retries, timeout types
    char *d = s_submit (json_pack ("{s:i}", "targets", 3));
    reply = s_reply ();
    s_assert_scheduler_error (reply, d, "TypeError");
    bn_msg_destroy (&reply);
    char *e = s_submit (json_pack ("{s:s}", "timeout", "soon"));
    reply = s_reply ();
    s_assert_scheduler_error (reply, e, "ValueError");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stat ("bad_metadata"), 2);
    ck_assert_ptr_null (s_take_within (0, S_QUIET));
    free (a);
    free (b);
    free (c);
    free (d);
    free (e);
}
END_TEST

//  follow: where the followed task ran; impossible across engines.
START_TEST (test_follow)
{
    s_start (BN_TASK_LEASTLOAD, 1, 2);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (1);
    char *b = s_submit (NULL);
    bn_msg_t *rb = s_take (0);
    s_answer (1, &ra, "ok");
    s_answer (0, &rb, "ok");
    for (int n = 0; n < 2; n++) {
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
    }
    //  engine 1 ran a; whatever the scheme says, c follows a there
    for (int n = 0; n < 3; n++) {
        char *c = s_submit (json_pack ("{s:[s]}", "follow", a));
        bn_msg_t *rc = s_take (1);
        ck_assert_str_eq (bn_msg_id (rc), c);
        //  busy (hwm 1): the next one following a waits for engine 1
        char *d = s_submit (json_pack ("{s:[s]}", "follow", a));
        ck_assert_ptr_null (s_take_within (0, S_QUIET));
        s_answer (1, &rc, "ok");
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
        bn_msg_t *rd = s_take (1);
        ck_assert_str_eq (bn_msg_id (rd), d);
        s_answer (1, &rd, "ok");
        reply = s_reply ();
        bn_msg_destroy (&reply);
        free (c);
        free (d);
    }
    //  following a (engine 1) and b (engine 0) together cannot be done
    char *e = s_submit (json_pack ("{s:[s, s]}", "follow", a, b));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, e, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    //  the engine a followed task ran on dies: waiting followers of it,
    //  and new ones, can never run
    char *g = s_submit (json_pack ("{s:[s]}", "follow", b));
    bn_msg_t *rg = s_take (0);
    char *h = s_submit (json_pack ("{s:[s]}", "follow", b));
    ck_assert_ptr_null (s_take_within (0, S_QUIET));
    bn_task_engine_remove (s_task, s_engines[0].uuid);
    reply = s_reply ();
    s_assert_scheduler_error (reply, h, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    reply = s_reply ();
    ck_assert_str_eq (bn_msg_parent_id (reply), g);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    bn_msg_destroy (&reply);
    char *k = s_submit (json_pack ("{s:[s]}", "follow", b));
    reply = s_reply ();
    s_assert_scheduler_error (reply, k, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    bn_msg_destroy (&rg);
    free (g);
    free (h);
    free (k);

    //  either of them (all=false) can
    char *f = s_submit (json_pack ("{s:{s:[s, s], s:b}}", "follow",
                                   "dependencies", a, b, "all", 0));
    bn_msg_t *rf;
    ck_assert_int_ge (s_who_got (&rf, T_TIMEOUT), 0);
    ck_assert_str_eq (bn_msg_id (rf), f);
    bn_msg_destroy (&rf);
    free (a);
    free (b);
    free (e);
    free (f);
}
END_TEST

//  targets: only those engines; none alive is impossible.
START_TEST (test_targets)
{
    s_start (BN_TASK_LEASTLOAD, 1, 3);
    for (int n = 0; n < 3; n++) {
        char *id =
            s_submit (json_pack ("{s:[s]}", "targets", s_engines[0].uuid));
        bn_msg_t *request = s_take (0);
        ck_assert_str_eq (bn_msg_id (request), id);
        if (n == 0) {
            //  engine 0 busy: a second one for it waits, others run
            char *waiting =
                s_submit (json_pack ("{s:[s]}", "targets", s_engines[0].uuid));
            char *free_one = s_submit (NULL);
            bn_msg_t *other;
            int who = s_who_got (&other, T_TIMEOUT);
            ck_assert_int_gt (who, 0);
            ck_assert_str_eq (bn_msg_id (other), free_one);
            bn_msg_destroy (&other);
            ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
            s_answer (0, &request, "ok");
            bn_msg_t *reply = s_reply ();
            bn_msg_destroy (&reply);
            request = s_take (0);
            ck_assert_str_eq (bn_msg_id (request), waiting);
            free (waiting);
            free (free_one);
        }
        s_answer (0, &request, "ok");
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
        free (id);
    }
    char *nowhere = s_submit (json_pack ("{s:[s]}", "targets", "no-such-uuid"));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, nowhere, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    free (nowhere);
}
END_TEST

//  timeout: a task still queued after it fails with TaskTimeout; a
//  running one is not touched.
START_TEST (test_timeout)
{
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    char *a = s_submit (json_pack ("{s:f}", "timeout", 0.05));
    bn_msg_t *ra = s_take (0);
    char *b = s_submit (json_pack ("{s:f}", "timeout", 0.05));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, b, "TaskTimeout");
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 0);
    ck_assert_int_eq (s_stat ("timed_out"), 1);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    s_answer (0, &ra, "ok");
    reply = s_reply ();
    s_assert_from (reply, a, 0, "ok");
    bn_msg_destroy (&reply);
    //  several waiting: each fails at its own deadline, earliest first
    char *hold = s_submit (NULL);
    bn_msg_t *rh = s_take (0);
    double timeouts[] = {0.3, 0.1, 0.2};
    char *waiting[3];
    for (int n = 0; n < 3; n++)
        waiting[n] = s_submit (json_pack ("{s:f}", "timeout", timeouts[n]));
    int order[] = {1, 2, 0};
    for (int n = 0; n < 3; n++) {
        reply = s_reply ();
        s_assert_scheduler_error (reply, waiting[order[n]], "TaskTimeout");
        bn_msg_destroy (&reply);
    }
    s_answer (0, &rh, "ok");
    reply = s_reply ();
    s_assert_from (reply, hold, 0, "ok");
    bn_msg_destroy (&reply);
    for (int n = 0; n < 3; n++)
        free (waiting[n]);
    free (hold);

    //  a task that runs before its timeout is not failed later
    char *c = s_submit (json_pack ("{s:f}", "timeout", 0.05));
    bn_msg_t *rc = s_take (0);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    s_answer (0, &rc, "ok");
    reply = s_reply ();
    s_assert_from (reply, c, 0, "ok");
    bn_msg_destroy (&reply);
    free (a);
    free (b);
    free (c);
}
END_TEST

//  retries: a failure is tried again on another engine.
START_TEST (test_retries)
{
    s_start (BN_TASK_LEASTLOAD, 1, 2);
    char *a = s_submit (json_pack ("{s:i}", "retries", 1));
    bn_msg_t *ra = s_take (1);
    s_answer (1, &ra, "error");
    //  the engine that failed it is blacklisted: engine 0 gets it
    ra = s_take (0);
    ck_assert_str_eq (bn_msg_id (ra), a);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    s_answer (0, &ra, "error");
    //  out of retries: the failure reaches the client
    bn_msg_t *reply = s_reply ();
    s_assert_from (reply, a, 0, "error");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stat ("retried"), 1);
    ck_assert_int_eq (s_seen.replies, 1);

    //  no retries: the first failure is the answer
    char *b = s_submit (NULL);
    bn_msg_t *rb;
    int who = s_who_got (&rb, T_TIMEOUT);
    ck_assert_int_ge (who, 0);
    s_answer ((size_t)who, &rb, "error");
    reply = s_reply ();
    s_assert_from (reply, b, (size_t)who, "error");
    bn_msg_destroy (&reply);
    free (a);
    free (b);
}
END_TEST

//  dependencies_met false: blacklisted on that engine, tried elsewhere;
//  impossible once every target refused.
START_TEST (test_unmet)
{
    s_start (BN_TASK_LEASTLOAD, 1, 2);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (1);
    s_answer_md (1, &ra, "error", false);
    ra = s_take (0);
    ck_assert_str_eq (bn_msg_id (ra), a);
    s_answer (0, &ra, "ok");
    bn_msg_t *reply = s_reply ();
    s_assert_from (reply, a, 0, "ok");
    bn_msg_destroy (&reply);
    ck_assert_int_eq (s_stat ("unmet"), 1);

    //  refused by both engines: waits (a new engine might take it)
    char *b = s_submit (NULL);
    bn_msg_t *rb;
    int first = s_who_got (&rb, T_TIMEOUT);
    s_answer_md ((size_t)first, &rb, "error", false);
    rb = s_take (1 - first);
    s_answer_md ((size_t)(1 - first), &rb, "error", false);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    size_t late = s_add_engine ();
    rb = s_take (late);
    ck_assert_str_eq (bn_msg_id (rb), b);
    bn_msg_destroy (&rb);

    //  with targets, once all of them refused it is impossible
    char *c = s_submit (json_pack ("{s:[s]}", "targets", s_engines[0].uuid));
    bn_msg_t *rc = s_take (0);
    s_answer_md (0, &rc, "error", false);
    reply = s_reply ();
    s_assert_scheduler_error (reply, c, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    free (a);
    free (b);
    free (c);
}
END_TEST

//  An engine dies: its running tasks get EngineError (or run elsewhere
//  with retries left); tasks queued for it alone become impossible.
START_TEST (test_engine_death)
{
    s_start (BN_TASK_LEASTLOAD, 1, 2);
    char *a = s_submit (NULL);
    bn_msg_t *ra = s_take (1);
    char *b = s_submit (json_pack ("{s:i}", "retries", 1));
    bn_msg_t *rb = s_take (0);
    char *queued =
        s_submit (json_pack ("{s:[s]}", "targets", s_engines[0].uuid));
    char *anywhere = s_submit (NULL);
    s_run_until_stat ("received", 4);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 2);

    //  unregistered: no new work, but its replies still count
    bn_task_engine_close (s_task, s_engines[1].uuid);
    s_answer (1, &ra, "ok");
    bn_msg_t *reply = s_reply ();
    s_assert_from (reply, a, 1, "ok");
    bn_msg_destroy (&reply);
    ck_assert_ptr_null (s_take_within (1, S_QUIET));

    //  engine 0 dies with b running
    bn_task_engine_remove (s_task, s_engines[0].uuid);
    int impossible = 0;
    for (int n = 0; n < 1; n++) {
        reply = s_reply ();
        s_assert_scheduler_error (reply, queued, "ImpossibleDependency");
        impossible++;
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (impossible, 1);
    ck_assert_int_eq (s_stat ("stranded"), 1);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 2);

    //  a new engine takes b (retried) and the queued task, in order
    size_t e = s_add_engine ();
    bn_msg_destroy (&rb);
    rb = s_take (e);
    ck_assert_str_eq (bn_msg_id (rb), b);
    s_answer (e, &rb, "ok");
    reply = s_reply ();
    s_assert_from (reply, b, e, "ok");
    bn_msg_destroy (&reply);
    bn_msg_t *rq = s_take (e);
    ck_assert_str_eq (bn_msg_id (rq), anywhere);

    //  no retries: the engine's death is the answer
    bn_task_engine_remove (s_task, s_engines[e].uuid);
    reply = s_reply ();
    ck_assert_str_eq (bn_msg_parent_id (reply), anywhere);
    ck_assert_str_eq (t_content_str (reply, "ename"), "EngineError");
    ck_assert_str_eq (t_metadata_str (reply, "engine"), s_engines[e].uuid);
    ck_assert_str_eq (t_metadata_str (reply, "status"), "error");
    ck_assert_uint_eq (bn_msg_nidents (reply), 1);
    ck_assert (bn_msg_ident_is (reply, 0, s_engines[e].uuid,
                                strlen (s_engines[e].uuid)));
    bn_msg_destroy (&reply);
    bn_msg_destroy (&rq);
    free (a);
    free (b);
    free (queued);
    free (anywhere);
}
END_TEST

//  A client that floods the port is read no further past the bound.
START_TEST (test_flood)
{
    s_start (BN_TASK_LEASTLOAD, 1, 0);
    bn_task_set_queue_max (s_task, 10);
    for (int n = 0; n < 50; n++)
        free (s_submit (NULL));
    s_run_until_stat ("paused", 1);
    s_run_for (50);
    ck_assert_uint_le (bn_task_unassigned (s_task), 10);
    ck_assert_int_ge (s_stat ("paused"), 1);
    ck_assert_int_lt (s_stat ("received"), 50);
    //  an engine drains the queue and the rest is read
    size_t e = s_add_engine ();
    for (int n = 0; n < 50; n++) {
        bn_msg_t *request = s_take (e);
        s_answer (e, &request, "ok");
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (s_stat ("received"), 100);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 0);
}
END_TEST

//  Peers' bad messages are dropped and counted.
START_TEST (test_bad_input)
{
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    //  unsigned
    t_send_raw (s_client, "<IDS|MSG>", "", "{}", "{}", "{}", "{}", NULL);
    //  no delimiter
    t_send_raw (s_client, "garbage", NULL);
    s_run_until_stat ("received", 2);
    ck_assert_int_eq (s_stat ("bad_signature") + s_stat ("bad_frame"), 2);
    //  a reply to no task from an engine
    bn_msg_t *stray =
        t_msg (s_engines[0].session, BN_MSG_APPLY_REPLY, NULL, "someone");
    bn_msg_push_ident (stray, BN_ROUTING_TASK_OUT,
                       strlen (BN_ROUTING_TASK_OUT));
    t_send (&stray, s_engines[0].sock, s_engines[0].session);
    s_run_until_stat ("unknown_reply", 1);
    //  metadata that is not an object
    const char *header = "{\"msg_id\": \"md-list\", \"msg_type\": "
                         "\"apply_request\", \"username\": \"u\", "
                         "\"session\": \"s\", \"date\": "
                         "\"2026-11-24T20:00:00.000000Z\", \"version\": "
                         "\"5.3\"}";
    const void *parts[4] = {header, "{}", "[]", "{}"};
    size_t sizes[4] = {strlen (header), 2, 2, 2};
    char sig[BN_SIGNATURE_SIZE + 1];
    bn_session_sign (s_client_session, parts, sizes, sig);
    t_send_raw (s_client, "<IDS|MSG>", sig, header, "{}", "[]", "{}", NULL);
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, "md-list", "TypeError");
    bn_msg_destroy (&reply);
    //  still works
    char *ok = s_submit (NULL);
    bn_msg_t *request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), ok);
    bn_msg_destroy (&request);
    free (ok);
}
END_TEST

//  The hub's resubmission: scheduled like any task, replies not sent to
//  any client but reported to the monitor.
START_TEST (test_submit)
{
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    bn_msg_t *msg = t_msg (s_sched_session, BN_MSG_APPLY_REQUEST, NULL, NULL);
    char *id = strdup (bn_msg_id (msg));
    ck_assert_int_eq (bn_task_submit (s_task, &msg), 0);
    ck_assert_ptr_null (msg);
    bn_msg_t *request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), id);
    s_answer (0, &request, "ok");
    int64_t end = zclock_mono () + T_TIMEOUT;
    while (s_seen.replies < 1 && zclock_mono () < end)
        s_run_for (5);
    ck_assert_int_eq (s_seen.replies, 1);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    ck_assert_int_eq (s_stat ("forwarded"), 0);
    //  later tasks may depend on it
    char *b = s_submit (json_pack ("{s:[s]}", "after", id));
    request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), b);
    bn_msg_destroy (&request);
    free (id);
    free (b);
}
END_TEST

//  A chain of dependent tasks long enough to show no recursion per link.
START_TEST (test_chain)
{
    s_start (BN_TASK_LEASTLOAD, 0, 1);
    char *first = s_submit (NULL);
    bn_msg_t *r0 = s_take (0);
    char *prev = strdup (first);
    for (int n = 0; n < 2000; n++) {
        char *id = s_submit (json_pack ("{s:[s]}", "after", prev));
        free (prev);
        prev = id;
    }
    s_run_until_stat ("received", 2001);
    //  the first fails: the whole chain fails, each link answered
    s_answer (0, &r0, "error");
    for (int n = 0; n < 2001; n++) {
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (s_stat ("impossible"), 2000);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 0);
    free (first);
    free (prev);
}
END_TEST

//  Finished records are bounded: the oldest are forgotten.
START_TEST (test_records_bound)
{
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    bn_task_set_records_max (s_task, 3);
    char *ids[5];
    for (int n = 0; n < 5; n++) {
        ids[n] = s_submit (NULL);
        bn_msg_t *request = s_take (0);
        s_answer (0, &request, "ok");
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
    }
    ck_assert_int_eq (s_stat ("records"), 3);
    char *old = s_submit (json_pack ("{s:[s]}", "after", ids[0]));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, old, "InvalidDependency");
    bn_msg_destroy (&reply);
    char *recent = s_submit (json_pack ("{s:[s]}", "after", ids[4]));
    bn_msg_t *request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), recent);
    bn_msg_destroy (&request);
    for (int n = 0; n < 5; n++)
        free (ids[n]);
    free (old);
    free (recent);
}
END_TEST

//  A thousand finished tasks are remembered in about 40 bytes each (the
//  task stats' records_bytes), and the oldest of them still counts for
//  after and follow as 7.1.0's scheduler counts it: its failure, and the
//  engine it ran on.
START_TEST (test_records_compact)
{
    s_start (BN_TASK_LEASTLOAD, 0, 1);
    char *first = NULL, *second = NULL;
    for (int n = 0; n < 1000; n++) {
        char *id = s_submit (NULL);
        bn_msg_t *request = s_take (0);
        s_answer (0, &request, n == 0 ? "error" : "ok");
        bn_msg_t *reply = s_reply ();
        bn_msg_destroy (&reply);
        if (n == 0)
            first = id;
        else if (n == 1)
            second = id;
        else
            free (id);
    }
    ck_assert_int_eq (s_stat ("records"), 1000);
    ck_assert_int_gt (s_stat ("records_bytes"), 1000 * 32);
    ck_assert_int_le (s_stat ("records_bytes"), 1000 * 48 + 256);
    //  after the first, which failed: impossible; after its failure: runs
    char *after = s_submit (json_pack ("{s:[s]}", "after", first));
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, after, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    char *failed =
        s_submit (json_pack ("{s:{s:[s], s:b, s:b}}", "after", "dependencies",
                             first, "success", 0, "failure", 1));
    bn_msg_t *request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), failed);
    s_answer (0, &request, "ok");
    reply = s_reply ();
    bn_msg_destroy (&reply);
    //  a new engine, the least recently used: the second's follower still
    //  goes where the second ran
    s_add_engine ();
    char *follow = s_submit (json_pack ("{s:[s]}", "follow", second));
    request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), follow);
    bn_msg_destroy (&request);
    free (first);
    free (second);
    free (after);
    free (failed);
    free (follow);
}
END_TEST

//  Engine uuid, registered before, connects to the task port now: the
//  task msg_id, held for it, reaches it.
static void
s_connect_late (const char *uuid, const char *msg_id)
{
    zsock_t *late = t_sock (ZMQ_ROUTER, uuid);
    t_connect (late, s_engine_port);
    ck_assert (s_run_until (late, T_TIMEOUT));
    bn_msg_t *request = t_recv (late);
    ck_assert_ptr_nonnull (request);
    ck_assert_str_eq (bn_msg_id (request), msg_id);
    bn_msg_destroy (&request);
    zsock_destroy (&late);
}

//  An engine registered before its task connection is up: within the
//  connect grace the task waits and reaches it once it connects.
START_TEST (test_not_connected)
{
    s_start (BN_TASK_LEASTLOAD, 1, 0);
    bn_task_set_connect_grace (s_task, 60000);
    const char *uuid = "late-engine-0000000000000000000000";
    ck_assert_int_eq (bn_task_engine_add (s_task, uuid, 9), 0);
    char *id = s_submit (NULL);
    s_run_until_stat ("not_connected", 1);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    s_connect_late (uuid, id);
    free (id);
}
END_TEST

//  An engine that does not connect within the grace: the task held for it
//  never reached an engine, so it runs on one that did; a task only that
//  engine may run fails with ImpossibleDependency, and it gets no more.
START_TEST (test_never_connected)
{
    s_start (BN_TASK_LEASTLOAD, 1, 0);
    bn_task_set_connect_grace (s_task, 50);
    const char *ghost = "ghost-engine-00000000000000000000";
    ck_assert_int_eq (bn_task_engine_add (s_task, ghost, 9), 0);
    char *held = s_submit (NULL);
    s_run_until_stat ("not_connected", 1);
    char *only = s_submit (json_pack ("{s:[s]}", "targets", ghost));
    s_run_until_stat ("received", 2);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 2);
    json_t *ids = bn_task_unassigned_ids (s_task);
    ck_assert_str_eq (json_string_value (json_array_get (ids, 0)), held);
    json_decref (ids);
    //  the grace ends
    bn_msg_t *reply = s_reply ();
    s_assert_scheduler_error (reply, only, "ImpossibleDependency");
    bn_msg_destroy (&reply);
    ck_assert_uint_eq (bn_task_unassigned (s_task), 1);
    //  an engine that is connected takes the held task, and the next one
    s_add_engine ();
    bn_msg_t *request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), held);
    s_answer (0, &request, "ok");
    reply = s_reply ();
    s_assert_from (reply, held, 0, "ok");
    bn_msg_destroy (&reply);
    char *next = s_submit (NULL);
    request = s_take (0);
    ck_assert_str_eq (bn_msg_id (request), next);
    bn_msg_destroy (&request);
    ck_assert_int_eq (s_stat ("impossible"), 1);
    ck_assert_int_eq (s_stat ("not_connected"), 1);
    //  registered again, it has a new grace and takes tasks
    bn_task_set_connect_grace (s_task, 60000);
    bn_task_engine_remove (s_task, ghost);
    ck_assert_int_eq (bn_task_engine_add (s_task, ghost, 9), 0);
    char *again = s_submit (json_pack ("{s:[s]}", "targets", ghost));
    s_run_until_stat ("not_connected", 2);
    s_connect_late (ghost, again);
    free (held);
    free (only);
    free (next);
    free (again);
}
END_TEST

START_TEST (test_host_link)
{
    //  two engines behind a host node's link (doc/hosts.md) and one that
    //  connects straight to the scheduler
    s_start (BN_TASK_LEASTLOAD, 1, 1);
    const char *link = BN_HOST_LINK_PREFIX "h1 0a1b2c3d";
    bn_hosts_t *hosts = bn_hosts_new ();
    bn_task_set_hosts (s_task, hosts);
    ck_assert_int_eq (bn_hosts_link_add (hosts, link), 0);
    zsock_t *host = t_sock (ZMQ_DEALER, link);
    t_connect (host, s_engine_port);
    t_wait_route (s_engine_side, link, host);
    char hosted[2][40];
    bn_session_t *sessions[2];
    for (int i = 0; i < 2; i++) {
        snprintf (hosted[i], sizeof hosted[i],
                  "%08x-1111111111111111111111%02d", (unsigned)getpid (), i);
        sessions[i] = bn_session_new (s_key, hosted[i]);
        ck_assert_int_eq (bn_hosts_route (hosts, hosted[i], link), 0);
        ck_assert_int_eq (bn_task_engine_add (s_task, hosted[i], 10 + i), 0);
    }

    //  three tasks, one an engine (high-water mark 1): two reach the link as
    //  [engine, client, DELIM, ...], the client's signature kept
    char *ids[3];
    for (int i = 0; i < 3; i++)
        ids[i] = s_submit (NULL);
    bn_msg_t *direct = s_take (0);
    bn_msg_t *through[2];
    for (int i = 0; i < 2; i++) {
        ck_assert (s_run_until (host, T_TIMEOUT));
        through[i] = t_recv (host);
        ck_assert_ptr_nonnull (through[i]);
        ck_assert_uint_eq (bn_msg_nidents (through[i]), 2);
    }
    //  one to each engine; the host node sends each engine's reply up as it
    //  came
    int first = -1;
    for (int i = 0; i < 2; i++) {
        int e = bn_msg_ident_is (through[i], 0, hosted[0], strlen (hosted[0]))
                    ? 0
                    : 1;
        ck_assert_int_ne (e, first);
        first = e;
        ck_assert (
            bn_msg_ident_is (through[i], 0, hosted[e], strlen (hosted[e])));
        ck_assert_int_eq (bn_msg_verify (through[i], sessions[e], false), 0);
        bn_msg_t *reply =
            bn_msg_new_reply (sessions[e], through[i], BN_MSG_APPLY_REPLY);
        bn_msg_set_content (reply, json_pack ("{s:s}", "status", "ok"));
        bn_msg_set_metadata (reply, json_pack ("{s:s, s:b, s:s}", "status",
                                               "ok", "dependencies_met", 1,
                                               "engine", hosted[e]));
        bn_msg_destroy (&through[i]);
        t_send (&reply, host, sessions[e]);
    }
    s_answer (0, &direct, "ok");
    zhashx_t *answered = zhashx_new ();
    for (int i = 0; i < 3; i++) {
        bn_msg_t *reply = s_reply ();
        ck_assert_str_eq (t_content_str (reply, "status"), "ok");
        zhashx_insert (answered, bn_msg_parent_id (reply), "");
        bn_msg_destroy (&reply);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull (zhashx_lookup (answered, ids[i]));
    zhashx_destroy (&answered);
    ck_assert_uint_eq (bn_task_engine_load (s_task, hosted[0]), 0);
    ck_assert_uint_eq (bn_task_engine_load (s_task, hosted[1]), 0);

    //  the link cannot answer for the engine of the scheduler
    char *last = s_submit (json_pack ("{s:[s]}", "targets", s_engines[0].uuid));
    bn_msg_t *request = s_take (0);
    bn_msg_t *forged =
        bn_msg_new_reply (s_engines[0].session, request, BN_MSG_APPLY_REPLY);
    bn_msg_set_content (forged, json_pack ("{s:s}", "status", "ok"));
    bn_msg_pop_ident (forged);
    bn_msg_push_ident (forged, s_engines[0].uuid, strlen (s_engines[0].uuid));
    t_send (&forged, host, s_engines[0].session);
    ck_assert_ptr_null (s_reply_within (S_QUIET));
    ck_assert_uint_eq (bn_task_engine_load (s_task, s_engines[0].uuid), 1);
    s_answer (0, &request, "ok");
    bn_msg_t *reply = s_reply ();
    ck_assert_str_eq (bn_msg_parent_id (reply), last);
    bn_msg_destroy (&reply);

    for (int i = 0; i < 3; i++)
        free (ids[i]);
    free (last);
    for (int i = 0; i < 2; i++)
        bn_session_destroy (&sessions[i]);
    bn_task_set_hosts (s_task, NULL);
    zsock_destroy (&host);
    bn_hosts_destroy (&hosts);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_task");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 20);
    tcase_add_checked_fixture (tc, NULL, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_scheme_parse);
    tcase_add_test (tc, test_leastload);
    tcase_add_test (tc, test_lru);
    tcase_add_test (tc, test_plainrandom);
    tcase_add_test (tc, test_twobin);
    tcase_add_test (tc, test_weighted);
    tcase_add_test (tc, test_pure);
    tcase_add_test (tc, test_hwm);
    tcase_add_test (tc, test_no_engines);
    tcase_add_test (tc, test_after);
    tcase_add_test (tc, test_after_flags);
    tcase_add_test (tc, test_invalid);
    tcase_add_test (tc, test_follow);
    tcase_add_test (tc, test_targets);
    tcase_add_test (tc, test_timeout);
    tcase_add_test (tc, test_retries);
    tcase_add_test (tc, test_unmet);
    tcase_add_test (tc, test_engine_death);
    tcase_add_test (tc, test_flood);
    tcase_add_test (tc, test_bad_input);
    tcase_add_test (tc, test_submit);
    tcase_add_test (tc, test_chain);
    tcase_add_test (tc, test_records_bound);
    tcase_add_test (tc, test_records_compact);
    tcase_add_test (tc, test_not_connected);
    tcase_add_test (tc, test_never_connected);
    tcase_add_test (tc, test_host_link);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

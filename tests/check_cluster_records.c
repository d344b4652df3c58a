/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_records: the hub's task records seen through libbanyan,
    with banyan's controller and engines run in this process as actors:
    results of other clients' requests, history, db queries, purge,
    nothing kept of engines that went, resubmit, SQLite records across a
   controller restart, --nodb, and engines keeping their ids across a restart
   with --restore.  */
#include "banyan.h"
#include "bn_config.h"
#include "bn_controller.h"
#include "bn_engine_actor.h"
#include "bn_memtest.h"

#include <check.h>
#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[256];        //  profile folder of the cluster
static char *s_engine_file;    //  its engine connection file
static bn_config_t *s_config;  //  settings shared by the actors
static zactor_t *s_controller; //  the controller
static zactor_t *s_engines;    //  the engines

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/bn-check-cluster-records-XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    s_config = bn_config_new ();
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_period",
                                     "100", BN_CONFIG_CMDLINE),
                      0);
    ck_assert_int_eq (bn_config_set (s_config, "controller.heartbeat_misses",
                                     "50", BN_CONFIG_CMDLINE),
                      0);
}

static void
s_set (const char *name, const char *value)
{
    ck_assert_int_eq (bn_config_set (s_config, name, value, BN_CONFIG_CMDLINE),
                      0);
}

static void
s_start_controller (void)
{
    bn_controller_args_t args = {s_config, s_dir, 0};
    s_controller = zactor_new (bn_controller_actor, &args);
    ck_assert_ptr_nonnull (s_controller);
    ck_assert_int_eq (args.status, 0);
    zstr_send (s_controller, "CONNFILES");
    char *client_file = NULL;
    zstr_free (&s_engine_file);
    zstr_recvx (s_controller, &client_file, &s_engine_file, NULL);
    ck_assert_ptr_nonnull (s_engine_file);
    free (client_file);
}

static void
s_start_engines (int count)
{
    bn_engine_args_t args = {s_engine_file, NULL, s_config, count, -1, s_dir};
    s_engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (s_engines);
    zstr_sendx (s_engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (s_engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
}

static void
s_teardown (void)
{
    zactor_destroy (&s_engines);
    zactor_destroy (&s_controller);
    bn_config_destroy (&s_config);
    zstr_free (&s_engine_file);
    char command[300];
    snprintf (command, sizeof command, "rm -rf '%s'", s_dir);
    ck_assert_int_eq (system (command), 0);
}

static bn_client_t *
s_client (size_t engines)
{
    int rc;
    bn_client_t *client = bn_client_new (s_dir, 10, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, engines, 20), 0);
    return client;
}

//  How many records the hub finds for query.
static size_t
s_count (bn_client_t *client, const char *query)
{
    char *records = NULL;
    ck_assert_int_eq (bn_client_db_query (client, query, NULL, 10, &records),
                      0);
    json_t *list = json_loads (records, 0, NULL);
    free (records);
    ck_assert (json_is_array (list));
    size_t count = json_array_size (list);
    json_decref (list);
    return count;
}

//  The same, asked again until there are want of them or msecs passed.
static size_t
s_count_within (bn_client_t *client, const char *query, size_t want, int msecs)
{
    size_t count;
    for (int64_t end = zclock_mono () + msecs;
         (count = s_count (client, query)) < want && zclock_mono () < end;)
        zclock_sleep (10);
    return count;
}

//  Run a direct request on engine id; returns its msg_id (caller frees).
static char *
s_run (bn_client_t *client, int id, const char *code, const char *echo)
{
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    ck_assert_int_eq (bn_view_set_target_list (view, &id, 1), 0);
    bn_result_t *result;
    if (code)
        ck_assert_int_eq (bn_view_execute (view, code, &result), 0);
    else {
        bn_value_t *args = bn_value_new_tuple ();
        bn_value_append (args, bn_value_new_str (echo));
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        bn_value_destroy (&args);
    }
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    char *msg_id = strdup (bn_result_msg_id (result, 0));
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    return msg_id;
}

START_TEST (test_usage)
{
    s_start_controller ();
    s_start_engines (2);
    bn_client_t *sender = s_client (2);
    char *applied = s_run (sender, 1, NULL, "hello");
    char *executed = s_run (sender, 0, "echo out; echo err >&2", NULL);

    //  another client reads both from the hub
    bn_client_t *reader = s_client (2);
    bn_result_t *result;
    ck_assert_int_eq (bn_client_get_result (reader, applied, 10, &result), 0);
    ck_assert_uint_eq (bn_result_count (result), 1);
    ck_assert_str_eq (bn_result_msg_id (result, 0), applied);
    ck_assert_int_eq (bn_result_status (result, 0), 0);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 1);
    ck_assert_str_eq (bn_value_str (bn_result_value (result, 0)), "hello");
    ck_assert_ptr_nonnull (bn_result_submitted (result, 0));
    ck_assert_ptr_nonnull (bn_result_completed (result, 0));
    bn_result_destroy (&result);
    ck_assert_int_eq (bn_client_get_result (reader, executed, 10, &result), 0);
    ck_assert_int_eq (bn_result_engine_id (result, 0), 0);
    ck_assert_str_eq (bn_result_stdout (result, 0), "out\n");
    ck_assert_str_eq (bn_result_stderr (result, 0), "err\n");
    bn_result_destroy (&result);
    ck_assert_int_eq (bn_client_get_result (reader, "nosuch", 10, &result),
                      BN_ENOENT);
    ck_assert_ptr_null (result);

    char **history = NULL;
    size_t count = 0;
    ck_assert_int_eq (bn_client_history (reader, 10, &history, &count), 0);
    ck_assert_uint_eq (count, 2);
    ck_assert_str_eq (history[0], applied);
    ck_assert_str_eq (history[1], executed);
    bn_client_free_strv (&history);
    ck_assert_ptr_null (history);

    //  db queries
    char uuid[64];
    ck_assert_int_eq (bn_client_engine_uuid (reader, 1, uuid, sizeof uuid), 0);
    char query[256];
    snprintf (query, sizeof query,
              "{\"engine_uuid\": \"%s\", \"completed\": {\"$ne\": null}}",
              uuid);
    const char *keys[] = {"queue", "stdout", NULL};
    char *records = NULL;
    ck_assert_int_eq (bn_client_db_query (reader, query, keys, 10, &records),
                      0);
    json_t *list = json_loads (records, 0, NULL);
    ck_assert_uint_eq (json_array_size (list), 1);
    json_t *record = json_array_get (list, 0);
    ck_assert_str_eq (json_string_value (json_object_get (record, "msg_id")),
                      applied);
    ck_assert_str_eq (json_string_value (json_object_get (record, "queue")),
                      "mux");
    ck_assert_ptr_null (json_object_get (record, "header"));
    json_decref (list);
    free (records);
    ck_assert_int_eq (bn_client_db_query (
                          reader, "{\"submitted\": {\"$gt\": \"2000-01-01\"}}",
                          NULL, 10, &records),
                      0);
    list = json_loads (records, 0, NULL);
    ck_assert_uint_eq (json_array_size (list), 2);
    json_decref (list);
    free (records);
    //  a malformed query gets the hub's reason
    ck_assert_int_eq (bn_client_db_query (reader, "{\"queue\": {\"$like\": 1}}",
                                          NULL, 10, &records),
                      BN_EREMOTE);
    ck_assert_ptr_nonnull (strstr (records, "KeyError"));
    ck_assert_ptr_nonnull (strstr (records, "$like"));
    free (records);
    ck_assert_int_eq (bn_client_db_query (reader, "[1]", NULL, 10, &records),
                      BN_EINVAL);

    //  purge: one record, then a pending one is refused
    const char *one[] = {applied, NULL};
    ck_assert_int_eq (bn_client_purge (reader, one, NULL, 10), 0);
    ck_assert_int_eq (bn_client_get_result (reader, applied, 10, &result),
                      BN_ENOENT);
    bn_view_t *view = bn_view_new (sender, BN_VIEW_DIRECT);
    int zero = 0;
    bn_view_set_target_list (view, &zero, 1);
    bn_result_t *slow;
    ck_assert_int_eq (bn_view_execute (view, "sleep 1", &slow), 0);
    const char *pending[] = {bn_result_msg_id (slow, 0), NULL};
    //  (the request reaches the hub through the mux, not from reader)
    int rc = BN_ENOENT;
    for (int i = 0; i < 200 && rc == BN_ENOENT; i++) {
        rc = bn_client_get_result (reader, pending[0], 10, &result);
        if (rc == BN_ENOENT)
            zclock_sleep (10);
    }
    ck_assert_int_eq (rc, BN_ENOTREADY);
    ck_assert_int_eq (bn_client_purge (reader, pending, NULL, 10),
                      BN_ENOTREADY);
    ck_assert_int_eq (bn_result_get (slow, 20), 0);
    bn_result_destroy (&slow);
    bn_view_destroy (&view);
    //  every completed record
    ck_assert_int_eq (bn_client_purge (reader, NULL, NULL, 10), 0);
    ck_assert_int_eq (bn_client_history (reader, 10, &history, &count), 0);
    ck_assert_uint_eq (count, 0);
    bn_client_free_strv (&history);
    free (applied);
    free (executed);
    bn_client_destroy (&reader);
    bn_client_destroy (&sender);
}
END_TEST

//  The controller's count of engines its records keep state for.
static json_int_t
s_engines_kept (bn_client_t *client)
{
    char *text = NULL;
    ck_assert_int_eq (bn_client_stats (client, 10, &text), 0);
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    json_t *kept =
        json_object_get (json_object_get (stats, "records"), "engines");
    ck_assert (json_is_integer (kept));
    json_int_t count = json_integer_value (kept);
    json_decref (stats);
    return count;
}

//  Engines that come and go leave no state behind in the records, and
//  their records stay.
START_TEST (test_engines_gone)
{
    s_start_controller ();
    s_start_engines (2);
    bn_client_t *client = s_client (2);
    char *first = s_run (client, 0, NULL, "a");
    char *second = s_run (client, 1, NULL, "b");
    ck_assert_int_eq (s_engines_kept (client), 2);
    zactor_destroy (&s_engines);
    int64_t deadline = zclock_mono () + 20000;
    while (bn_client_engine_count (client) > 0 && zclock_mono () < deadline)
        zclock_sleep (20);
    ck_assert_uint_eq (bn_client_engine_count (client), 0);
    while (s_engines_kept (client) > 0 && zclock_mono () < deadline)
        zclock_sleep (20);
    ck_assert_int_eq (s_engines_kept (client), 0);
    bn_result_t *result;
    ck_assert_int_eq (bn_client_get_result (client, second, 10, &result), 0);
    ck_assert_str_eq (bn_value_str (bn_result_value (result, 0)), "b");
    bn_result_destroy (&result);
    free (first);
    free (second);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_broadcast)
{
    s_start_controller ();
    s_start_engines (2);
    bn_client_t *client = s_client (2);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    //  every level forwards: one reply per engine reaches the root
    bn_level_t forward = BN_LEVEL_FORWARD;
    ck_assert_int_eq (bn_view_set_levels (view, &forward, 1), 0);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "echo tree", &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    ck_assert_uint_eq (bn_result_count (result), 2);
    //  the request and each engine's reply are recorded
    char **history = NULL;
    size_t count = 0;
    int rc = 0;
    for (int i = 0; i < 200 && count < 3; i++) {
        bn_client_free_strv (&history);
        rc = bn_client_history (client, 10, &history, &count);
        if (count < 3)
            zclock_sleep (10);
    }
    ck_assert_int_eq (rc, 0);
    ck_assert_uint_eq (count, 3);
    bn_client_free_strv (&history);
    for (size_t i = 0; i < 2; i++) {
        const char *msg_id = bn_result_msg_id (result, i);
        bn_result_t *recorded = NULL;
        ck_assert_int_eq (bn_client_get_result (client, msg_id, 10, &recorded),
                          0);
        ck_assert_int_eq (bn_result_engine_id (recorded, 0),
                          bn_result_engine_id (result, i));
        ck_assert_str_eq (bn_result_stdout (recorded, 0), "tree\n");
        bn_result_destroy (&recorded);
    }
    ck_assert_uint_eq (s_count (client, "{\"queue\": \"broadcast\"}"), 3);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

//  The records keep every engine's reply to a broadcast; what that costs
//  is the replies' bytes, not the buffers libzmq read them with.
START_TEST (test_kept_replies_memory)
{
    enum { ENGINES = 16 };
    //  where the memory is the sanitizer's, the path alone, briefly
    bool measurable = t_memory_measurable ();
    long rounds = measurable ? 300 : 10;
    s_start_controller ();
    s_start_engines (ENGINES);
    bn_client_t *client = s_client (ENGINES);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    //  one record a round, its replies merged into one message
    bn_view_set_coalescing (view, true);
    char text[1001];
    memset (text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str (text));
    char *first = NULL;
    long before = 0;
    for (long round = -20; round < rounds; round++) {
        if (round == 0)
            before = t_status_kb ("VmRSS");
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        ck_assert_int_eq (bn_result_get (result, 20), 0);
        ck_assert_uint_eq (bn_result_count (result), ENGINES);
        if (round == 0)
            first = strdup (bn_result_msg_id (result, 0));
        bn_result_destroy (&result);
    }
    long grown = t_status_kb ("VmRSS") - before;
    //  the first measured round's replies are still kept
    bn_result_t *recorded = NULL;
    ck_assert_int_eq (bn_client_get_result (client, first, 10, &recorded), 0);
    ck_assert_str_eq (bn_value_str (bn_result_value (recorded, 0)), text);
    bn_result_destroy (&recorded);
    //  a kept reply here costs about 2 kB; as views into the batches libzmq
    //  received them in, about 11 kB each
    if (measurable)
        ck_assert_msg (grown * 1024 < 4096L * ENGINES * rounds,
                       "%ld kB more for %ld replies kept", grown,
                       ENGINES * rounds);
    free (first);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

//  A broadcast is in the records while its engines still work on it (the
//  tree's root holds its report a moment, to send it with a quick reply's),
//  and completed once they answered.
START_TEST (test_broadcast_pending)
{
    s_start_controller ();
    s_start_engines (2);
    bn_client_t *client = s_client (2);
    bn_view_t *view = bn_view_new (client, BN_VIEW_BROADCAST);
    bn_result_t *result;
    ck_assert_int_eq (bn_view_execute (view, "sleep 2", &result), 0);
    const char *pending = "{\"queue\": \"broadcast\", \"completed\": null}";
    ck_assert_uint_eq (s_count_within (client, pending, 1, 1500), 1);
    ck_assert (!bn_result_ready (result));
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    //  the request and each engine's (the hub hears of the replies once
    //  the client has them)
    const char *done =
        "{\"queue\": \"broadcast\", \"completed\": {\"$ne\": null}}";
    ck_assert_uint_eq (s_count_within (client, done, 3, 3000), 3);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_resubmit)
{
    s_start_controller ();
    s_start_engines (2);
    bn_client_t *client = s_client (2);
    bn_view_t *view = bn_view_new (client, BN_VIEW_LOAD_BALANCED);
    ck_assert_ptr_nonnull (view);
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str ("again"));
    bn_result_t *result;
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 20), 0);
    const char *old[] = {bn_result_msg_id (result, 0), NULL};
    char **fresh = NULL;
    ck_assert_int_eq (bn_client_resubmit (client, old, 10, &fresh), 0);
    ck_assert_ptr_nonnull (fresh);
    ck_assert_str_ne (fresh[0], old[0]);
    ck_assert_ptr_null (fresh[1]);
    //  its result comes to the hub, not to us: poll
    bn_result_t *again = NULL;
    int rc = BN_ENOTREADY;
    for (int i = 0; i < 200 && rc == BN_ENOTREADY; i++) {
        rc = bn_client_get_result (client, fresh[0], 10, &again);
        if (rc == BN_ENOTREADY)
            zclock_sleep (50);
    }
    ck_assert_int_eq (rc, 0);
    ck_assert_str_eq (bn_value_str (bn_result_value (again, 0)), "again");
    bn_result_destroy (&again);
    const char *unknown[] = {"nosuch", NULL};
    ck_assert_int_eq (bn_client_resubmit (client, unknown, 10, NULL),
                      BN_ENOENT);
    bn_client_free_strv (&fresh);
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

START_TEST (test_sqlite_restart)
{
    char db[300];
    snprintf (db, sizeof db, "sqlite:%s/records.db", s_dir);
    s_set ("controller.db", db);
    s_start_controller ();
    s_start_engines (1);
    bn_client_t *client = s_client (1);
    char *msg_id = s_run (client, 0, "echo kept", NULL);
    bn_client_destroy (&client);
    zactor_destroy (&s_engines);
    zactor_destroy (&s_controller);

    //  a new controller on the same database, no engines
    s_start_controller ();
    client = s_client (0);
    char **history = NULL;
    size_t count = 0;
    ck_assert_int_eq (bn_client_history (client, 10, &history, &count), 0);
    ck_assert_uint_eq (count, 1);
    ck_assert_str_eq (history[0], msg_id);
    bn_client_free_strv (&history);
    bn_result_t *result;
    ck_assert_int_eq (bn_client_get_result (client, msg_id, 10, &result), 0);
    ck_assert_str_eq (bn_result_stdout (result, 0), "kept\n");
    bn_result_destroy (&result);
    bn_client_destroy (&client);
    free (msg_id);
}
END_TEST

START_TEST (test_sqlite_unwritable)
{
    //  a database path under a plain file: the controller says why and
    //  keeps its records in memory
    char path[300], db[320];
    snprintf (path, sizeof path, "%s/plain", s_dir);
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fclose (file);
    snprintf (db, sizeof db, "sqlite:%s/records.db", path);
    s_set ("controller.db", db);
    s_start_controller ();
    zstr_send (s_controller, "STATS");
    char *text = zstr_recv (s_controller);
    json_t *stats = json_loads (text, 0, NULL);
    json_t *records = json_object_get (stats, "records");
    ck_assert_str_eq (json_string_value (json_object_get (records, "storage")),
                      "memory");
    json_decref (stats);
    free (text);
    s_start_engines (1);
    bn_client_t *client = s_client (1);
    char *msg_id = s_run (client, 0, NULL, "still");
    bn_result_t *result;
    ck_assert_int_eq (bn_client_get_result (client, msg_id, 10, &result), 0);
    ck_assert_str_eq (bn_value_str (bn_result_value (result, 0)), "still");
    bn_result_destroy (&result);
    bn_client_destroy (&client);
    free (msg_id);
}
END_TEST

START_TEST (test_nodb)
{
    s_set ("controller.db", "none");
    s_start_controller ();
    s_start_engines (1);
    bn_client_t *client = s_client (1);
    char *msg_id = s_run (client, 0, NULL, "gone");
    bn_result_t *result;
    ck_assert_int_eq (bn_client_get_result (client, msg_id, 10, &result),
                      BN_ENOENT);
    char **history = NULL;
    ck_assert_int_eq (bn_client_history (client, 10, &history, NULL),
                      BN_ENOENT);
    //  queue counts still work
    bn_queue_status_t *queues = NULL;
    size_t n = 0;
    ck_assert_int_eq (
        bn_client_queue_status (client, NULL, 10, &queues, &n, NULL), 0);
    ck_assert_uint_eq (n, 1);
    ck_assert_int_eq (queues[0].completed, 1);
    free (queues);
    bn_client_destroy (&client);
    free (msg_id);
}
END_TEST

START_TEST (test_restore)
{
    s_set ("controller.restore", "true");
    s_start_controller ();
    s_start_engines (3);
    //  an engine that left is not restored
    bn_client_t *client = s_client (3);
    bn_client_destroy (&client);
    //  the hub writes the state file up to 20 ms after the registrations
    //  that a client's connection reply already lists
    char path[300];
    snprintf (path, sizeof path, "%s/log/engines.json", s_dir);
    json_t *state = NULL;
    int64_t until = zclock_mono () + 20000;
    while (zclock_mono () < until) {
        state = json_load_file (path, 0, NULL);
        if (json_object_size (json_object_get (state, "engines")) == 3)
            break;
        json_decref (state);
        state = NULL;
        zclock_sleep (10);
    }
    ck_assert_ptr_nonnull (state);
    ck_assert_uint_eq (json_object_size (json_object_get (state, "engines")),
                       3);
    ck_assert_int_eq (json_integer_value (json_object_get (state, "next_id")),
                      3);
    json_decref (state);
    //  the controller goes; the engines stay and come back to the next
    //  one, on the same ports, under their old ids
    zactor_destroy (&s_controller);
    s_start_controller ();
    client = s_client (3);
    bn_idset_t *ids = bn_client_ids (client);
    char *text = bn_idset_format (ids);
    ck_assert_str_eq (text, "engines[0-2] (3)");
    free (text);
    bn_idset_destroy (&ids);
    //  the engine's heart may be back before its shell socket has
    //  reconnected to the mux: until then a request fails with EngineError
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int two = 2;
    bn_view_set_target_list (view, &two, 1);
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str ("back"));
    int rc = BN_EENGINEDIED;
    for (int i = 0; i < 100 && rc == BN_EENGINEDIED; i++) {
        bn_result_t *result;
        ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
        rc = bn_result_get (result, 20);
        if (rc == 0)
            ck_assert_str_eq (bn_value_str (bn_result_value (result, 0)),
                              "back");
        bn_result_destroy (&result);
        if (rc == BN_EENGINEDIED)
            zclock_sleep (50);
    }
    ck_assert_int_eq (rc, 0);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("cluster_records");
    TCase *tc = tcase_create ("records");
    tcase_set_timeout (tc, 60);
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_engines_gone);
    tcase_add_test (tc, test_broadcast);
    tcase_add_test (tc, test_broadcast_pending);
    tcase_add_test (tc, test_kept_replies_memory);
    tcase_add_test (tc, test_resubmit);
    tcase_add_test (tc, test_sqlite_restart);
    tcase_add_test (tc, test_sqlite_unwritable);
    tcase_add_test (tc, test_nodb);
    tcase_add_test (tc, test_restore);
    suite_add_tcase (suite, tc);
    return suite;
}

int
main (void)
{
    SRunner *runner = srunner_create (s_suite ());
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

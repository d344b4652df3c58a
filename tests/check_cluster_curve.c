/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_curve: a controller with CURVE (controller.curve) and
    banyan engines and the C client, all in this process: the keypair in
    the profile and its public key in the connection files, direct and
    broadcast work with the tree's nodes as threads and as processes, a
    client with a wrong server key or none is refused at once while the
    others are served, the keypair kept across a restart; and every
    listening port taken from controller.ports.  */
#include "bn_clustertest.h"
#include "bn_curve.h"
#include "bn_log.h"
#include "bn_testdir.h"

#include <sys/stat.h>

//  A range no other test binds from, wide enough for two clusters of
//  these tests at once (say two checkouts testing side by side), and above
//  Linux's ephemeral ports (32768-60999), which outgoing connections take.
#define S_LOWEST_PORT 62300
#define S_HIGHEST_PORT 62399

//  The string at key of a JSON file (caller frees), or NULL.
static char *
s_file_string (const char *path, const char *key)
{
    json_t *root = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (root);
    const char *value = json_string_value (json_object_get (root, key));
    char *copy = value ? strdup (value) : NULL;
    json_decref (root);
    return copy;
}

//  The client connection file of a cluster (caller frees).
static char *
s_client_file (t_cluster_t *cluster)
{
    char *path = strdup (cluster->engine_file);
    strcpy (strstr (path, "-engine.json"), "-client.json");
    return path;
}

//  A copy of the client connection file at copy with curve_serverkey set
//  to serverkey (NULL: null).
static void
s_copy_with_key (t_cluster_t *cluster, const char *copy, const char *serverkey)
{
    char *path = s_client_file (cluster);
    json_t *root = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (root);
    json_object_set_new (root, "curve_serverkey",
                         serverkey ? json_string (serverkey) : json_null ());
    ck_assert_int_eq (json_dump_file (root, copy, 0), 0);
    json_decref (root);
    free (path);
}

//  echo(word) through a view of kind on every engine; asserts count
//  answers of word.
static void
s_echo (bn_client_t *client, bn_view_kind_t kind, const char *word,
        size_t count)
{
    bn_view_t *view = bn_view_new (client, kind);
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str (word));
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_apply (view, "echo", args, NULL, &result), 0);
    int rc = bn_result_get (result, 20);
    ck_assert_msg (rc == 0, "echo: %s", bn_strerror (rc));
    ck_assert_uint_eq (bn_result_count (result), count);
    for (size_t i = 0; i < count; i++)
        ck_assert_str_eq (bn_value_str (bn_result_value (result, i)), word);
    bn_result_destroy (&result);
    bn_value_destroy (&args);
    bn_view_destroy (&view);
}

//  The lines of a log file (caller frees), "" if there is none.
static char *
s_log_text (const char *path)
{
    zfile_t *file = zfile_new (NULL, path);
    zchunk_t *chunk =
        file && zfile_input (file) == 0 ? zfile_read (file, 1 << 20, 0) : NULL;
    char *text = chunk ? zchunk_strdup (chunk) : strdup ("");
    zchunk_destroy (&chunk);
    zfile_destroy (&file);
    return text;
}

START_TEST (test_usage)
{
    //  the controller with CURVE, two banyan engines that find its key in
    //  their connection file
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 2, "controller.curve",
                     "true", "controller.depth", "1", NULL);
    //  its keypair in the profile, the public half in both files
    char *cert_path = bn_curve_cert_path (cluster.dir, "");
    char err[256];
    zcert_t *cert = bn_curve_keypair (cert_path, err, sizeof err);
    ck_assert_msg (cert != NULL, "%s", err);
    char *client_file = s_client_file (&cluster);
    char *key = s_file_string (client_file, "curve_serverkey");
    ck_assert_str_eq (key ? key : "null", zcert_public_txt (cert));
    free (key);
    key = s_file_string (cluster.engine_file, "curve_serverkey");
    ck_assert_str_eq (key ? key : "null", zcert_public_txt (cert));
    free (key);
    //  the HMAC key stays on too
    key = s_file_string (client_file, "key");
    ck_assert_uint_gt (strlen (key), 0);
    free (key);
    char secret_path[512];
    snprintf (secret_path, sizeof secret_path, "%s_secret", cert_path);
    struct stat st;
    ck_assert_int_eq (stat (secret_path, &st), 0);
    ck_assert_int_eq (st.st_mode & 0777, 0600);

    //  the client connects with it; direct and broadcast work
    bn_client_t *client = t_cluster_client (&cluster, 2);
    s_echo (client, BN_VIEW_DIRECT, "direct", 2);
    s_echo (client, BN_VIEW_BROADCAST, "broadcast", 2);
    s_echo (client, BN_VIEW_LOAD_BALANCED, "task", 1);

    bn_client_destroy (&client);
    zcert_destroy (&cert);
    free (cert_path);
    free (client_file);
    t_cluster_stop (&cluster);
}
END_TEST

START_TEST (test_wrong_key)
{
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 2, "controller.curve",
                     "true", NULL);
    bn_client_t *good = t_cluster_client (&cluster, 2);
    s_echo (good, BN_VIEW_DIRECT, "before", 2);

    char log_path[300];
    snprintf (log_path, sizeof log_path, "%s/client.log", cluster.dir);
    ck_assert_int_eq (bn_log_set_file (log_path), 0);
    //  another server key: the controller refuses the handshake and the
    //  client says so, long before its timeout
    zcert_t *other = zcert_new ();
    char copy[300];
    snprintf (copy, sizeof copy, "%s/wrong-client.json", cluster.dir);
    s_copy_with_key (&cluster, copy, zcert_public_txt (other));
    //  (a refusal missed fails here, well inside the test's own timeout)
    int rc = 0;
    bn_client_t *bad = bn_client_new (copy, 20, &rc);
    ck_assert_ptr_null (bad);
    ck_assert_msg (rc == BN_ECONNECT, "wrong key: %s, not refused",
                   bn_strerror (rc));
    //  no server key at all
    s_copy_with_key (&cluster, copy, NULL);
    bad = bn_client_new (copy, 20, &rc);
    ck_assert_ptr_null (bad);
    ck_assert_msg (rc == BN_ECONNECT, "no key: %s, not refused",
                   bn_strerror (rc));
    bn_log_set_file (NULL);
    char *log = s_log_text (log_path);
    ck_assert_msg (strstr (log, "the controller refuses the connection's "
                                "security handshake: its key is not the "
                                "connection file's curve_serverkey"),
                   "%s", log);
    ck_assert_msg (strstr (log, "the controller refuses the connection's "
                                "security handshake: it uses CURVE and the "
                                "connection file has no curve_serverkey"),
                   "%s", log);
    free (log);

    //  the good client is still served, and the hub saw one client only
    s_echo (good, BN_VIEW_DIRECT, "after", 2);
    s_echo (good, BN_VIEW_BROADCAST, "after", 2);
    bn_client_destroy (&good);
    zcert_destroy (&other);
    t_cluster_stop (&cluster);
}
END_TEST

//  What engines with the connection file at path answer to WAIT: OK,
//  FAILED or TIMEOUT (caller frees).
static char *
s_engines_wait (t_cluster_t *cluster, const char *path)
{
    bn_engine_args_t args = {path, NULL, cluster->config, 2, -1, cluster->dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &args);
    ck_assert_ptr_nonnull (engines);
    //  a refusal must come long before the registration timeout (60 s)
    zstr_sendx (engines, "WAIT", "20000", NULL);
    char *answer = NULL;
    //  engines refused at once may say STOPPED before the answer
    while (!answer || streq (answer, "STOPPED")) {
        zstr_free (&answer);
        zmsg_t *msg = zmsg_recv (engines);
        ck_assert_ptr_nonnull (msg);
        answer = zmsg_popstr (msg);
        zmsg_destroy (&msg);
    }
    zactor_destroy (&engines);
    return answer;
}

START_TEST (test_engine_wrong_key)
{
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 1, "controller.curve",
                     "true", "engine.registration_timeout", "60", NULL);
    char log_path[300];
    snprintf (log_path, sizeof log_path, "%s/engine.log", cluster.dir);
    ck_assert_int_eq (bn_log_set_file (log_path), 0);
    //  engines with another server key, or none, stop at once, saying why
    json_t *root = json_load_file (cluster.engine_file, 0, NULL);
    zcert_t *other = zcert_new ();
    json_object_set_new (root, "curve_serverkey",
                         json_string (zcert_public_txt (other)));
    char copy[300];
    snprintf (copy, sizeof copy, "%s/wrong-engine.json", cluster.dir);
    ck_assert_int_eq (json_dump_file (root, copy, 0), 0);
    char *answer = s_engines_wait (&cluster, copy);
    ck_assert_str_eq (answer, "FAILED");
    free (answer);
    json_object_set_new (root, "curve_serverkey", json_null ());
    ck_assert_int_eq (json_dump_file (root, copy, 0), 0);
    answer = s_engines_wait (&cluster, copy);
    ck_assert_str_eq (answer, "FAILED");
    free (answer);
    bn_log_set_file (NULL);
    char *log = s_log_text (log_path);
    ck_assert_msg (strstr (log, "the controller refuses the engines' security "
                                "handshake: its key is not the connection "
                                "file's curve_serverkey"),
                   "%s", log);
    ck_assert_msg (strstr (log, "the controller refuses the engines' security "
                                "handshake: it uses CURVE and the connection "
                                "file has no curve_serverkey"),
                   "%s", log);
    free (log);
    //  the engine with the right key still works
    bn_client_t *client = t_cluster_client (&cluster, 1);
    s_echo (client, BN_VIEW_DIRECT, "served", 1);
    bn_client_destroy (&client);
    json_decref (root);
    zcert_destroy (&other);
    t_cluster_stop (&cluster);
}
END_TEST

START_TEST (test_processes)
{
    //  the tree's nodes as banyan-scheduler processes, the root's and the
    //  leaves' tcp ports CURVE servers with the controller's key
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 3, "controller.curve",
                     "true", "controller.tree_mode", "processes",
                     "controller.depth", "1", "controller.scheduler_path",
                     BN_BUILD_DIR "/bin/banyan-scheduler", NULL);
    bn_client_t *client = t_cluster_client (&cluster, 3);
    s_echo (client, BN_VIEW_BROADCAST, "tree", 3);
    s_echo (client, BN_VIEW_DIRECT, "mux", 3);

    //  a client without the key gets nothing from the tree's root either
    char *client_file = s_client_file (&cluster);
    json_t *root = json_load_file (client_file, 0, NULL);
    int bcast_port =
        (int)json_integer_value (json_object_get (root, "broadcast"));
    json_decref (root);
    free (client_file);
    zsock_t *plain = zsock_new (ZMQ_DEALER);
    ck_assert_int_eq (
        zmq_socket_monitor (zsock_resolve (plain), "inproc://check-curve-plain",
                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
        0);
    zsock_t *events = zsock_new_pair (">inproc://check-curve-plain");
    ck_assert_int_eq (zsock_connect (plain, "tcp://127.0.0.1:%d", bcast_port),
                      0);
    zpoller_t *poller = zpoller_new (events, NULL);
    zmsg_t *event = zpoller_wait (poller, 10000) ? zmsg_recv (events) : NULL;
    ck_assert_ptr_nonnull (event);
    uint16_t id = 0;
    memcpy (&id, zframe_data (zmsg_first (event)), sizeof id);
    ck_assert_int_ne (id, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    zmsg_destroy (&event);
    zpoller_destroy (&poller);
    zsock_destroy (&events);
    zsock_destroy (&plain);

    s_echo (client, BN_VIEW_BROADCAST, "still", 3);
    bn_client_destroy (&client);
    t_cluster_stop (&cluster);
}
END_TEST

START_TEST (test_keypair_kept)
{
    //  a restarted controller keeps its keypair, so connection files and
    //  the engines' copies of its key stay good
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 0, "controller.curve",
                     "true", NULL);
    char *first = s_file_string (cluster.engine_file, "curve_serverkey");
    ck_assert_ptr_nonnull (first);
    zactor_destroy (&cluster.controller);
    bn_controller_args_t start = {cluster.config, cluster.dir, 0};
    cluster.controller = zactor_new (bn_controller_actor, &start);
    ck_assert_int_eq (start.status, 0);
    char *second = s_file_string (cluster.engine_file, "curve_serverkey");
    ck_assert_str_eq (second ? second : "null", first);
    free (first);
    free (second);

    //  a secret others may read stops the controller, saying why
    zactor_destroy (&cluster.controller);
    char *cert_path = bn_curve_cert_path (cluster.dir, "");
    char secret_path[512];
    snprintf (secret_path, sizeof secret_path, "%s_secret", cert_path);
    ck_assert_int_eq (chmod (secret_path, 0640), 0);
    char log_path[300];
    snprintf (log_path, sizeof log_path, "%s/controller.log", cluster.dir);
    ck_assert_int_eq (bn_log_set_file (log_path), 0);
    start.status = 0;
    cluster.controller = zactor_new (bn_controller_actor, &start);
    ck_assert_int_eq (start.status, -1);
    bn_log_set_file (NULL);
    char *log = s_log_text (log_path);
    ck_assert_msg (strstr (log, "no CURVE keypair: ") &&
                       strstr (log, "may be read by other users (mode 0640)"),
                   "%s", log);
    free (log);
    free (cert_path);
    t_cluster_stop (&cluster);
}
END_TEST

//  Every port in a connection file, checked to be in the range.
static size_t
s_ports_in_range (const char *path)
{
    json_t *root = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (root);
    size_t count = 0;
    const char *key;
    json_t *value;
    json_object_foreach (root, key, value)
    {
        json_t *ports = json_is_array (value) ? json_incref (value)
                                              : json_pack ("[O]", value);
        size_t i;
        json_t *port;
        json_array_foreach (ports, i, port)
        {
            if (!json_is_integer (port))
                continue;
            json_int_t number = json_integer_value (port);
            ck_assert_msg (number >= S_LOWEST_PORT && number <= S_HIGHEST_PORT,
                           "%s port %lld of %s is not in %d-%d", key,
                           (long long)number, path, S_LOWEST_PORT,
                           S_HIGHEST_PORT);
            count++;
        }
        json_decref (ports);
    }
    json_decref (root);
    return count;
}

START_TEST (test_ports)
{
    char range[32];
    snprintf (range, sizeof range, "%d-%d", S_LOWEST_PORT, S_HIGHEST_PORT);
    //  depth 2: the controller's 12 ports, the root's and four leaves'
    t_cluster_t cluster;
    t_cluster_start (&cluster, "check-cluster-curve", 2, "controller.ports",
                     range, "controller.depth", "2", NULL);
    char *client_file = s_client_file (&cluster);
    ck_assert_uint_eq (s_ports_in_range (client_file), 7);
    ck_assert_uint_eq (s_ports_in_range (cluster.engine_file), 11);
    bn_client_t *client = t_cluster_client (&cluster, 2);
    s_echo (client, BN_VIEW_BROADCAST, "ranged", 2);
    bn_client_destroy (&client);
    free (client_file);
    zactor_destroy (&cluster.engines);
    zactor_destroy (&cluster.controller);

    //  a range smaller than that is refused at the start, saying why
    char log_path[300];
    snprintf (log_path, sizeof log_path, "%s/controller.log", cluster.dir);
    ck_assert_int_eq (bn_log_set_file (log_path), 0);
    snprintf (range, sizeof range, "%d-%d", S_LOWEST_PORT, S_LOWEST_PORT + 15);
    ck_assert_int_eq (bn_config_set (cluster.config, "controller.ports", range,
                                     BN_CONFIG_CMDLINE),
                      0);
    bn_controller_args_t start = {cluster.config, cluster.dir, 0};
    cluster.controller = zactor_new (bn_controller_actor, &start);
    ck_assert_int_eq (start.status, -1);
    bn_log_set_file (NULL);
    char *log = s_log_text (log_path);
    char expected[200];
    snprintf (expected, sizeof expected,
              "controller.ports %s holds 16 ports; this controller listens "
              "on 17 (12 of its own, the broadcast root and 4 leaves)",
              range);
    ck_assert_msg (strstr (log, expected), "%s", log);
    free (log);
    t_cluster_stop (&cluster);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_curve");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_wrong_key);
    tcase_add_test (tc, test_engine_wrong_key);
    tcase_add_test (tc, test_processes);
    tcase_add_test (tc, test_keypair_kept);
    tcase_add_test (tc, test_ports);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

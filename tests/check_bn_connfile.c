/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_connfile: reading stock ipcontroller 7.1.0 connection files,
    writing identical ones, and refusing bad ones without crashing.  */
#include "bn_connfile.h"
#include "bn_testdir.h"

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA BN_SOURCE_DIR "/tests/data/connfile/"

static char s_dir[] = "/tmp/check_bn_connfile.XXXXXX";

static void
s_setup (void)
{
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
    strcpy (s_dir, "/tmp/check_bn_connfile.XXXXXX");
}

//  Whole file as a malloc'd string.
static char *
s_read_file (const char *path)
{
    FILE *file = fopen (path, "rb");
    ck_assert_msg (file != NULL, "cannot open %s", path);
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    rewind (file);
    char *text = malloc ((size_t)size + 1);
    ck_assert_int_eq (fread (text, 1, (size_t)size, file), (size_t)size);
    text[size] = 0;
    fclose (file);
    return text;
}

static void
s_assert_url (bn_connfile_t *file, const char *name, const char *expected)
{
    char *url = bn_connfile_url (file, name);
    ck_assert_ptr_nonnull (url);
    ck_assert_str_eq (url, expected);
    free (url);
}

//  Parse text and expect failure with this message.
static void
s_expect_refused (const char *text, const char *message)
{
    char err[256] = "";
    bn_connfile_t *file = bn_connfile_parse (text, err, sizeof err);
    ck_assert_msg (file == NULL, "accepted: %s", text);
    ck_assert_msg (strstr (err, message), "error '%s' lacks '%s'", err,
                   message);
    //  Without an error buffer, or a tiny one, it fails the same way
    ck_assert_ptr_null (bn_connfile_parse (text, NULL, 0));
    char tiny[4] = "xyz";
    ck_assert_ptr_null (bn_connfile_parse (text, tiny, sizeof tiny));
    ck_assert_int_le (strlen (tiny), 3);
}

START_TEST (test_usage)
{
    //  The controller writes both files; an engine and a client read them
    char *profile = malloc (strlen (s_dir) + 32);
    sprintf (profile, "%s/profile_default", s_dir);
    char *key = bn_connfile_new_key ();

    bn_connfile_t *engine = bn_connfile_new (BN_CONNFILE_ENGINE);
    ck_assert_ptr_nonnull (engine);
    bn_connfile_set_key (engine, key);
    bn_connfile_set_location (engine, "vm");
    const char *names[] = {"registration", "control", "mux",    "task",
                           "iopub",        "hb_ping", "hb_pong"};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq (bn_connfile_set_port (engine, names[i], 40000 + i),
                          0);
    int leaves[] = {41000, 41001};
    ck_assert_int_eq (bn_connfile_set_broadcast (engine, leaves, 2), 0);
    char *engine_path = bn_connfile_path (profile, NULL, BN_CONNFILE_ENGINE);
    ck_assert_int_eq (bn_connfile_save (engine, engine_path), 0);

    bn_connfile_t *client = bn_connfile_new (BN_CONNFILE_CLIENT);
    bn_connfile_set_key (client, key);
    bn_connfile_set_port (client, "registration", 40000);
    bn_connfile_set_port (client, "control", 42001);
    bn_connfile_set_port (client, "mux", 42002);
    bn_connfile_set_port (client, "task", 42003);
    bn_connfile_set_port (client, "iopub", 42004);
    bn_connfile_set_port (client, "notification", 42005);
    int root = 42006;
    bn_connfile_set_broadcast (client, &root, 1);
    char *client_path = bn_connfile_path (profile, NULL, BN_CONNFILE_CLIENT);
    ck_assert_int_eq (bn_connfile_save (client, client_path), 0);
    bn_connfile_destroy (&engine);
    bn_connfile_destroy (&client);
    ck_assert_ptr_null (engine);
    bn_connfile_destroy (&engine);

    char err[256];
    engine = bn_connfile_load (engine_path, err, sizeof err);
    ck_assert_msg (engine != NULL, "%s", err);
    ck_assert_int_eq (bn_connfile_kind (engine), BN_CONNFILE_ENGINE);
    ck_assert_str_eq (bn_connfile_key (engine), key);
    s_assert_url (engine, "mux", "tcp://127.0.0.1:40002");
    //  Engine 3 of a depth-1 tree connects to leaf 3 % 2
    size_t leaf = 3 % bn_connfile_broadcast_count (engine);
    char *url = bn_connfile_broadcast_url (engine, leaf);
    ck_assert_str_eq (url, "tcp://127.0.0.1:41001");
    free (url);

    client = bn_connfile_load (client_path, err, sizeof err);
    ck_assert_msg (client != NULL, "%s", err);
    ck_assert_int_eq (bn_connfile_kind (client), BN_CONNFILE_CLIENT);
    s_assert_url (client, "registration", "tcp://127.0.0.1:40000");
    s_assert_url (client, "notification", "tcp://127.0.0.1:42005");
    ck_assert_str_eq (bn_connfile_task_scheme (client), "leastload");

    bn_connfile_destroy (&engine);
    bn_connfile_destroy (&client);
    free (engine_path);
    free (client_path);
    free (key);
    free (profile);
}
END_TEST

START_TEST (test_stock_client)
{
    char err[256] = "";
    bn_connfile_t *file =
        bn_connfile_load (DATA "ipp710-client.json", err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert_int_eq (bn_connfile_kind (file), BN_CONNFILE_CLIENT);
    ck_assert_str_eq (bn_connfile_interface (file), "tcp://127.0.0.1");
    ck_assert_int_eq (bn_connfile_port (file, "registration"), 42615);
    ck_assert_int_eq (bn_connfile_port (file, "control"), 50027);
    ck_assert_int_eq (bn_connfile_port (file, "mux"), 47997);
    ck_assert_int_eq (bn_connfile_port (file, "task"), 58443);
    ck_assert_int_eq (bn_connfile_port (file, "iopub"), 46367);
    ck_assert_int_eq (bn_connfile_port (file, "notification"), 54239);
    ck_assert_int_eq (bn_connfile_port (file, "hb_ping"), -1);
    ck_assert_int_eq (bn_connfile_port (file, "hb_pong"), -1);
    ck_assert_int_eq (bn_connfile_port (file, "nonsense"), -1);
    ck_assert_uint_eq (bn_connfile_broadcast_count (file), 1);
    ck_assert_int_eq (bn_connfile_broadcast (file, 0), 52017);
    ck_assert_int_eq (bn_connfile_broadcast (file, 1), -1);
    ck_assert_str_eq (bn_connfile_key (file),
                      "f047ae31-4fce8b1135cec10af394a27f");
    ck_assert_str_eq (bn_connfile_signature_scheme (file), "hmac-sha256");
    ck_assert_str_eq (bn_connfile_location (file), "vm");
    ck_assert_str_eq (bn_connfile_ssh (file), "");
    ck_assert_str_eq (bn_connfile_task_scheme (file), "leastload");
    ck_assert_str_eq (bn_connfile_pack (file), "json");
    ck_assert_str_eq (bn_connfile_unpack (file), "json");
    ck_assert_ptr_null (bn_connfile_curve_serverkey (file));
    s_assert_url (file, "mux", "tcp://127.0.0.1:47997");
    char *url = bn_connfile_broadcast_url (file, 0);
    ck_assert_str_eq (url, "tcp://127.0.0.1:52017");
    free (url);
    ck_assert_ptr_null (bn_connfile_broadcast_url (file, 1));
    ck_assert_ptr_null (bn_connfile_url (file, "hb_ping"));
    bn_connfile_destroy (&file);
}
END_TEST

START_TEST (test_stock_engine)
{
    char err[256] = "";
    bn_connfile_t *file =
        bn_connfile_load (DATA "ipp710-engine.json", err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert_int_eq (bn_connfile_kind (file), BN_CONNFILE_ENGINE);
    ck_assert_int_eq (bn_connfile_port (file, "registration"), 42615);
    ck_assert_int_eq (bn_connfile_port (file, "control"), 46023);
    ck_assert_int_eq (bn_connfile_port (file, "mux"), 34621);
    ck_assert_int_eq (bn_connfile_port (file, "task"), 39279);
    ck_assert_int_eq (bn_connfile_port (file, "iopub"), 56579);
    ck_assert_int_eq (bn_connfile_port (file, "hb_ping"), 50633);
    ck_assert_int_eq (bn_connfile_port (file, "hb_pong"), 56013);
    ck_assert_int_eq (bn_connfile_port (file, "notification"), -1);
    ck_assert_uint_eq (bn_connfile_broadcast_count (file), 2);
    ck_assert_int_eq (bn_connfile_broadcast (file, 0), 35163);
    ck_assert_int_eq (bn_connfile_broadcast (file, 1), 59561);
    ck_assert_ptr_null (bn_connfile_task_scheme (file));
    ck_assert_ptr_null (bn_connfile_curve_serverkey (file));
    s_assert_url (file, "hb_ping", "tcp://127.0.0.1:50633");
    bn_connfile_destroy (&file);

    //  Depth 2 with CURVE: four leaves, an empty key and a server key
    file = bn_connfile_load (DATA "ipp710-curve-depth2-engine.json", err,
                             sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert_uint_eq (bn_connfile_broadcast_count (file), 4);
    ck_assert_int_eq (bn_connfile_broadcast (file, 3), 52061);
    ck_assert_str_eq (bn_connfile_key (file), "");
    ck_assert_str_eq (bn_connfile_curve_serverkey (file),
                      "IjblutZn}&4i=.?/FCesfbn2@:7@N0+nj5rP!3Zn");
    bn_connfile_destroy (&file);

    file = bn_connfile_load (DATA "ipp710-curve-depth2-client.json", err,
                             sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert_uint_eq (bn_connfile_broadcast_count (file), 1);
    ck_assert_str_eq (bn_connfile_curve_serverkey (file),
                      "IjblutZn}&4i=.?/FCesfbn2@:7@N0+nj5rP!3Zn");
    bn_connfile_destroy (&file);

    //  an empty server key is no CURVE, as to IPython Parallel's client
    char *text = s_read_file (DATA "ipp710-curve-depth2-client.json");
    char *at = strstr (text, "IjblutZn");
    ck_assert_ptr_nonnull (at);
    memmove (at, at + 40, strlen (at + 40) + 1);
    file = bn_connfile_parse (text, err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert_ptr_null (bn_connfile_curve_serverkey (file));
    bn_connfile_destroy (&file);
    free (text);
}
END_TEST

START_TEST (test_shared_channels)
{
    //  a stock file does not say it; a host node's file does, and reads
    //  back so
    char err[256] = "";
    bn_connfile_t *file =
        bn_connfile_load (DATA "ipp710-engine.json", err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert (!bn_connfile_shared_channels (file));
    bn_connfile_set_shared_channels (file, true);
    char path[512];
    snprintf (path, sizeof path, "%s/shared.json", s_dir);
    ck_assert_int_eq (bn_connfile_save (file, path), 0);
    bn_connfile_destroy (&file);
    json_t *json = json_load_file (path, 0, NULL);
    ck_assert (json_is_true (json_object_get (json, "bn_shared_channels")));
    json_decref (json);
    file = bn_connfile_load (path, err, sizeof err);
    ck_assert_msg (file != NULL, "%s", err);
    ck_assert (bn_connfile_shared_channels (file));
    bn_connfile_destroy (&file);
}
END_TEST

START_TEST (test_same_bytes_as_ipcontroller)
{
    //  Saving what we loaded reproduces ipcontroller's file byte for byte
    const char *names[] = {"ipp710-client.json",
                           "ipp710-engine.json",
                           "ipp710-abc-client.json",
                           "ipp710-abc-engine.json",
                           "ipp710-curve-depth2-client.json",
                           "ipp710-curve-depth2-engine.json"};
    for (int i = 0; i < 6; i++) {
        char source[512], copy[512], err[256];
        snprintf (source, sizeof source, DATA "%s", names[i]);
        snprintf (copy, sizeof copy, "%s/%s", s_dir, names[i]);
        bn_connfile_t *file = bn_connfile_load (source, err, sizeof err);
        ck_assert_msg (file != NULL, "%s", err);
        ck_assert_int_eq (bn_connfile_save (file, copy), 0);
        char *expected = s_read_file (source);
        char *actual = s_read_file (copy);
        ck_assert_str_eq (actual, expected);
        free (expected);
        free (actual);
        bn_connfile_destroy (&file);
    }
}
END_TEST

START_TEST (test_save)
{
    char profile[256];
    snprintf (profile, sizeof profile, "%s/a/profile_x", s_dir);
    char *path = bn_connfile_path (profile, "c7", BN_CONNFILE_CLIENT);
    char expected[512];
    snprintf (expected, sizeof expected,
              "%s/security/ipcontroller-c7-client.json", profile);
    ck_assert_str_eq (path, expected);

    bn_connfile_t *file = bn_connfile_new (BN_CONNFILE_CLIENT);
    //  Unset ports are refused
    ck_assert_int_eq (bn_connfile_save (file, path), -1);
    ck_assert_int_ne (access (path, F_OK), 0);
    const char *names[] = {"registration", "control", "mux",
                           "task",         "iopub",   "notification"};
    for (int i = 0; i < 6; i++)
        bn_connfile_set_port (file, names[i], 1000 + i);
    ck_assert_int_eq (bn_connfile_save (file, path), -1); //  no broadcast
    int root = 2000;
    bn_connfile_set_broadcast (file, &root, 1);
    ck_assert_int_eq (bn_connfile_save (file, path), 0);

    struct stat info;
    ck_assert_int_eq (stat (path, &info), 0);
    ck_assert_int_eq (info.st_mode & 0777, 0600);
    char security[512];
    snprintf (security, sizeof security, "%s/security", profile);
    ck_assert_int_eq (stat (security, &info), 0);
    ck_assert_int_eq (info.st_mode & 0777, 0700);

    //  Replacing a looser existing file leaves a 0600 one, no temporaries
    ck_assert_int_eq (chmod (path, 0644), 0);
    bn_connfile_set_port (file, "mux", 3333);
    ck_assert_int_eq (bn_connfile_save (file, path), 0);
    ck_assert_int_eq (stat (path, &info), 0);
    ck_assert_int_eq (info.st_mode & 0777, 0600);
    DIR *dir = opendir (security);
    int entries = 0;
    for (struct dirent *entry = readdir (dir); entry; entry = readdir (dir))
        if (entry->d_name[0] != '.')
            entries++;
    closedir (dir);
    ck_assert_int_eq (entries, 1);
    bn_connfile_destroy (&file);

    //  The file holds exactly the client keys, in ipcontroller's order
    json_t *json = json_load_file (path, 0, NULL);
    ck_assert_ptr_nonnull (json);
    const char *client_keys[] = {
        "ssh",          "interface", "registration", "control",
        "mux",          "task",      "task_scheme",  "iopub",
        "notification", "broadcast", "key",          "curve_serverkey",
        "location",     "pack",      "unpack",       "signature_scheme"};
    ck_assert_uint_eq (json_object_size (json), 16);
    int index = 0;
    const char *key;
    json_t *value;
    json_object_foreach (json, key, value)
    {
        ck_assert_str_eq (key, client_keys[index++]);
    }
    ck_assert (json_is_null (json_object_get (json, "curve_serverkey")));
    ck_assert_int_eq (json_integer_value (json_object_get (json, "mux")), 3333);
    ck_assert_int_eq (json_integer_value (json_object_get (json, "broadcast")),
                      2000);
    json_decref (json);

    //  A folder that cannot be created is an error, not a crash
    file = bn_connfile_new (BN_CONNFILE_ENGINE);
    const char *engine_ports[] = {"registration", "control", "mux",    "task",
                                  "iopub",        "hb_ping", "hb_pong"};
    for (int i = 0; i < 7; i++)
        bn_connfile_set_port (file, engine_ports[i], 1000 + i);
    bn_connfile_set_broadcast (file, &root, 1);
    ck_assert_int_eq (bn_connfile_save (file, "/proc/nope/x.json"), -1);
    bn_connfile_destroy (&file);
    free (path);

    path = bn_connfile_path ("/p", "", BN_CONNFILE_ENGINE);
    ck_assert_str_eq (path, "/p/security/ipcontroller-engine.json");
    free (path);
    path = bn_connfile_path ("/p", NULL, BN_CONNFILE_CLIENT);
    ck_assert_str_eq (path, "/p/security/ipcontroller-client.json");
    free (path);
}
END_TEST

START_TEST (test_engine_keys)
{
    bn_connfile_t *file = bn_connfile_new (BN_CONNFILE_ENGINE);
    const char *names[] = {"registration", "control", "mux",    "task",
                           "iopub",        "hb_ping", "hb_pong"};
    for (int i = 0; i < 7; i++)
        bn_connfile_set_port (file, names[i], 5000 + i);
    int leaves[] = {6000, 6001, 6002, 6003};
    bn_connfile_set_broadcast (file, leaves, 4);
    bn_connfile_set_curve_serverkey (file, "k");
    bn_connfile_set_curve_serverkey (file, NULL);
    bn_connfile_set_curve_serverkey (file, "Z85key");
    char path[512];
    snprintf (path, sizeof path, "%s/e.json", s_dir);
    ck_assert_int_eq (bn_connfile_save (file, path), 0);
    bn_connfile_destroy (&file);

    json_t *json = json_load_file (path, 0, NULL);
    const char *engine_keys[] = {
        "ssh",      "interface", "registration", "control",
        "mux",      "task",      "iopub",        "hb_ping",
        "hb_pong",  "broadcast", "key",          "curve_serverkey",
        "location", "pack",      "unpack",       "signature_scheme"};
    ck_assert_uint_eq (json_object_size (json), 16);
    int index = 0;
    const char *key;
    json_t *value;
    json_object_foreach (json, key, value)
    {
        ck_assert_str_eq (key, engine_keys[index++]);
    }
    ck_assert_uint_eq (json_array_size (json_object_get (json, "broadcast")),
                       4);
    ck_assert_str_eq (
        json_string_value (json_object_get (json, "curve_serverkey")),
        "Z85key");
    char host[256] = "";
    gethostname (host, sizeof host - 1);
    ck_assert_str_eq (json_string_value (json_object_get (json, "location")),
                      host);
    json_decref (json);
}
END_TEST

START_TEST (test_setters)
{
    bn_connfile_t *client = bn_connfile_new (BN_CONNFILE_CLIENT);
    ck_assert_int_eq (bn_connfile_set_port (client, "hb_ping", 5), -1);
    ck_assert_int_eq (bn_connfile_set_port (client, "bogus", 5), -1);
    ck_assert_int_eq (bn_connfile_set_port (client, "mux", 0), -1);
    ck_assert_int_eq (bn_connfile_set_port (client, "mux", 65536), -1);
    ck_assert_int_eq (bn_connfile_set_port (client, "mux", 65535), 0);
    ck_assert_int_eq (bn_connfile_port (client, "mux"), 65535);
    ck_assert_int_eq (bn_connfile_port (client, "task"), 0);
    ck_assert_ptr_null (bn_connfile_url (client, "task"));
    int two[] = {1, 2};
    ck_assert_int_eq (bn_connfile_set_broadcast (client, two, 2), -1);
    ck_assert_int_eq (bn_connfile_set_broadcast (client, two, 0), -1);
    int bad[] = {70000};
    ck_assert_int_eq (bn_connfile_set_broadcast (client, bad, 1), -1);
    ck_assert_uint_eq (bn_connfile_broadcast_count (client), 0);
    ck_assert_int_eq (bn_connfile_set_task_scheme (client, "pure"), 0);
    ck_assert_str_eq (bn_connfile_task_scheme (client), "pure");
    ck_assert_int_eq (bn_connfile_set_ssh (client, "user@gw"), 0);
    ck_assert_str_eq (bn_connfile_ssh (client), "user@gw");
    ck_assert_int_eq (bn_connfile_set_interface (client, "tcp://10.0.0.1"), 0);
    s_assert_url (client, "mux", "tcp://10.0.0.1:65535");
    ck_assert_int_eq (bn_connfile_set_signature_scheme (client, "hmac-sha256"),
                      0);
    ck_assert_int_eq (bn_connfile_set_pack (client, "json"), 0);
    ck_assert_int_eq (bn_connfile_set_unpack (client, "json"), 0);
    bn_connfile_destroy (&client);

    bn_connfile_t *engine = bn_connfile_new (BN_CONNFILE_ENGINE);
    ck_assert_int_eq (bn_connfile_set_port (engine, "notification", 5), -1);
    ck_assert_int_eq (bn_connfile_set_task_scheme (engine, "pure"), 0);
    ck_assert_ptr_null (bn_connfile_task_scheme (engine));
    ck_assert_int_eq (bn_connfile_set_broadcast (engine, two, 2), 0);
    ck_assert_uint_eq (bn_connfile_broadcast_count (engine), 2);
    bn_connfile_destroy (&engine);
}
END_TEST

START_TEST (test_wildcard_interface)
{
    char text[1024];
#define S_WILDCARD_JSON                                                        \
    "{\"ssh\": \"\", \"interface\": \"%s\", \"registration\": 1, "             \
    "\"control\": 2, \"mux\": 3, \"task\": 4, \"task_scheme\": "               \
    "\"leastload\", \"iopub\": 5, \"notification\": 6, \"broadcast\": 7, "     \
    "\"key\": \"k\", \"curve_serverkey\": null, \"location\": \"%s\", "        \
    "\"pack\": \"json\", \"unpack\": \"json\", \"signature_scheme\": "         \
    "\"hmac-sha256\"}"
    char host[256] = "";
    gethostname (host, sizeof host - 1);
    struct {
        const char *interface, *location, *url;
    } cases[] = {
        {"tcp://*", "far.example.org", "tcp://far.example.org:3"},
        {"tcp://0.0.0.0", "10.1.1.1", "tcp://10.1.1.1:3"},
        {"tcp://*", "", "tcp://127.0.0.1:3"},
        {"tcp://*", host, "tcp://127.0.0.1:3"},
        {"tcp://10.2.2.2", "elsewhere", "tcp://10.2.2.2:3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf (text, sizeof text, S_WILDCARD_JSON, cases[i].interface,
                  cases[i].location);
        char err[256];
        bn_connfile_t *file = bn_connfile_parse (text, err, sizeof err);
        ck_assert_msg (file != NULL, "%s", err);
        s_assert_url (file, "mux", cases[i].url);
        bn_connfile_destroy (&file);
    }
}
END_TEST

START_TEST (test_refused)
{
    //  Start from the stock client file and break it one way at a time
    char *good = s_read_file (DATA "ipp710-client.json");
    json_t *stock = json_loads (good, 0, NULL);
    free (good);
    struct {
        const char *key;
        json_t *value; //  NULL = delete the key
        const char *message;
    } cases[] = {
        {"pack", json_string ("pickle"),
         "pack 'pickle' / unpack 'json' is not supported"},
        {"unpack", json_string ("pickle"), "unpack 'pickle'"},
        {"signature_scheme", json_string ("hmac-md5"),
         "signature_scheme 'hmac-md5' is not supported"},
        {"mux", NULL, "missing key 'mux' (client file)"},
        {"notification", NULL, "missing key 'notification' (client file)"},
        {"task_scheme", NULL, "missing key 'task_scheme'"},
        {"key", NULL, "missing key 'key'"},
        {"ssh", NULL, "missing key 'ssh'"},
        {"broadcast", NULL, "missing key 'broadcast'"},
        {"interface", NULL, "missing key 'interface'"},
        {"mux", json_string ("47997"), "'mux' must be a port number"},
        {"mux", json_integer (0), "'mux' must be a port number"},
        {"mux", json_integer (70000), "'mux' must be a port number"},
        {"mux", json_real (47997.0), "'mux' must be a port number"},
        {"mux", json_null (), "'mux' must be a port number"},
        {"broadcast", json_string ("x"), "'broadcast' must be a port number"},
        {"key", json_integer (5), "'key' must be a string"},
        {"key", json_null (), "'key' must be a string"},
        {"interface", json_true (), "'interface' must be a string"},
        {"interface", json_string ("127.0.0.1"), "is not a URL"},
        {"location", json_integer (1), "'location' must be a string"},
        {"bn_shared_channels", json_string ("yes"),
         "'bn_shared_channels' must be true or false"},
        {"curve_serverkey", json_array (),
         "'curve_serverkey' must be a string"},
        {"curve_serverkey",
         json_string ("IjblutZn}&4i=.?/FCesfbn2@:7@N0+nj5rP!3Z"),
         "'curve_serverkey' is not a CurveZMQ public key"},
        {"curve_serverkey",
         json_string ("IjblutZn}&4i=.?/FCesfbn2@:7@N0+nj5rP!3Z\""),
         "'curve_serverkey' is not a CurveZMQ public key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *copy = json_deep_copy (stock);
        if (cases[i].value)
            json_object_set_new (copy, cases[i].key, cases[i].value);
        else
            json_object_del (copy, cases[i].key);
        char *text = json_dumps (copy, 0);
        s_expect_refused (text, cases[i].message);
        free (text);
        json_decref (copy);
    }
    json_decref (stock);

    //  Engine files have their own required keys
    good = s_read_file (DATA "ipp710-engine.json");
    stock = json_loads (good, 0, NULL);
    free (good);
    struct {
        const char *key;
        json_t *value;
        const char *message;
    } engine_cases[] = {
        {"hb_pong", NULL, "missing key 'hb_pong' (engine file)"},
        {"location", NULL, "missing key 'location'"},
        {"broadcast", json_array (), "'broadcast' must list at least one"},
        {"broadcast", json_pack ("[i, s]", 1, "2"),
         "'broadcast' must be a list of port numbers"},
        {"registration", json_integer (-5), "'registration' must be a port"},
    };
    for (size_t i = 0; i < sizeof engine_cases / sizeof engine_cases[0]; i++) {
        json_t *copy = json_deep_copy (stock);
        if (engine_cases[i].value)
            json_object_set_new (copy, engine_cases[i].key,
                                 engine_cases[i].value);
        else
            json_object_del (copy, engine_cases[i].key);
        char *text = json_dumps (copy, 0);
        s_expect_refused (text, engine_cases[i].message);
        free (text);
        json_decref (copy);
    }
    //  ...and may omit key and ssh, which default to ""
    json_object_del (stock, "key");
    json_object_del (stock, "ssh");
    json_object_set_new (stock, "extra", json_string ("ignored"));
    char *text = json_dumps (stock, 0);
    bn_connfile_t *file = bn_connfile_parse (text, NULL, 0);
    ck_assert_ptr_nonnull (file);
    ck_assert_str_eq (bn_connfile_key (file), "");
    ck_assert_str_eq (bn_connfile_ssh (file), "");
    bn_connfile_destroy (&file);
    free (text);
    json_decref (stock);

    s_expect_refused ("", "not valid JSON");
    s_expect_refused ("{", "not valid JSON");
    s_expect_refused ("{\"a\": }", "not valid JSON");
    s_expect_refused ("[1, 2]", "not a JSON object");
    s_expect_refused ("\"text\"", "not valid JSON");
    s_expect_refused ("{}", "missing key");
    s_expect_refused ("{\"broadcast\": []}", "missing key 'registration'");
}
END_TEST

START_TEST (test_load_errors)
{
    char err[256] = "";
    ck_assert_ptr_null (bn_connfile_load (
        "/nonexistent/ipcontroller-client.json", err, sizeof err));
    ck_assert_str_eq (err, "/nonexistent/ipcontroller-client.json: cannot "
                           "read: No such file or directory");

    char path[512];
    snprintf (path, sizeof path, "%s/half.json", s_dir);
    FILE *half = fopen (path, "w");
    fputs ("{\"ssh\": \"\", \"interface\": ", half);
    fclose (half);
    ck_assert_ptr_null (bn_connfile_load (path, err, sizeof err));
    ck_assert_ptr_nonnull (strstr (err, "half.json: not valid JSON"));
    ck_assert_ptr_nonnull (strstr (err, "line 1"));

    //  A folder is not a connection file
    ck_assert_ptr_null (bn_connfile_load (s_dir, err, sizeof err));
    ck_assert_ptr_null (bn_connfile_load (s_dir, NULL, 0));
}
END_TEST

START_TEST (test_never_crashes)
{
    //  Every prefix and many one-byte corruptions of real files are either
    //  loaded or refused with a message
    const char *names[] = {"ipp710-client.json", "ipp710-engine.json"};
    for (int n = 0; n < 2; n++) {
        char path[512];
        snprintf (path, sizeof path, DATA "%s", names[n]);
        char *text = s_read_file (path);
        size_t length = strlen (text);
        for (size_t cut = 0; cut < length; cut++) {
            char *prefix = strndup (text, cut);
            char err[128] = "";
            bn_connfile_t *file = bn_connfile_parse (prefix, err, sizeof err);
            ck_assert_msg (file == NULL && *err, "prefix %zu", cut);
            free (prefix);
        }
        const char noise[] = "\0\"{}[]:,0-9ax \\\xff";
        for (size_t at = 0; at < length; at++) {
            for (size_t k = 0; k < sizeof noise - 1; k++) {
                char *mutated = strdup (text);
                mutated[at] = noise[k];
                char err[128] = "";
                bn_connfile_t *file =
                    bn_connfile_parse (mutated, err, sizeof err);
                ck_assert (file != NULL || *err);
                bn_connfile_destroy (&file);
                free (mutated);
            }
        }
        free (text);
    }
}
END_TEST

START_TEST (test_new_key)
{
    char *first = bn_connfile_new_key ();
    char *second = bn_connfile_new_key ();
    ck_assert_ptr_nonnull (first);
    ck_assert_uint_eq (strlen (first), 33);
    ck_assert_int_eq (first[8], '-');
    for (int i = 0; i < 33; i++)
        if (i != 8)
            ck_assert_msg (strchr ("0123456789abcdef", first[i]) && first[i],
                           "'%s' is not 8hex-24hex", first);
    ck_assert_str_ne (first, second);
    free (first);
    free (second);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_connfile");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_stock_client);
    tcase_add_test (tc, test_stock_engine);
    tcase_add_test (tc, test_same_bytes_as_ipcontroller);
    tcase_add_test (tc, test_shared_channels);
    tcase_add_test (tc, test_save);
    tcase_add_test (tc, test_engine_keys);
    tcase_add_test (tc, test_setters);
    tcase_add_test (tc, test_wildcard_interface);
    tcase_add_test (tc, test_refused);
    tcase_add_test (tc, test_load_errors);
    tcase_add_test (tc, test_never_crashes);
    tcase_add_test (tc, test_new_key);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_config: settings, their sources and precedence, the config file
    format and the shipped conf/banyan.conf.  */
#include "bn_config.h"
#include "bn_limits.h"
#include "bn_testdir.h"

#include <check.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[] = "/tmp/check_bn_config.XXXXXX";

//  Write text to a file in the test's temporary folder; returns its path.
static const char *
s_write (const char *name, const char *text)
{
    static char path[256];
    snprintf (path, sizeof path, "%s/%s", s_dir, name);
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fputs (text, file);
    fclose (file);
    return path;
}

static void
s_setup (void)
{
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
    strcpy (s_dir, "/tmp/check_bn_config.XXXXXX");
}

//  Load text as a config file and expect it to fail with this message.
static void
s_expect_file_error (const char *text, const char *message)
{
    bn_config_t *config = bn_config_new ();
    const char *path = s_write ("bad.conf", text);
    ck_assert_int_eq (bn_config_load_file (config, path), -1);
    ck_assert_msg (strstr (bn_config_error (config), message),
                   "error '%s' lacks '%s'", bn_config_error (config), message);
    ck_assert_msg (strncmp (bn_config_error (config), path, strlen (path)) == 0,
                   "error '%s' does not name the file",
                   bn_config_error (config));
    //  Nothing from a refused file is applied
    for (int i = 0; i < bn_config_count (); i++)
        ck_assert_str_eq (bn_config_source (config, bn_config_name (i)),
                          "default");
    bn_config_destroy (&config);
}

START_TEST (test_usage)
{
    //  A program layers a config file, the environment and its flags
    bn_config_t *config = bn_config_new ();
    ck_assert_ptr_nonnull (config);
    const char *path = s_write ("banyan.conf", "controller\n"
                                               "    depth = 2\n"
                                               "    ip = 10.0.0.1\n"
                                               "log\n"
                                               "    level = info\n");
    ck_assert_int_eq (bn_config_load_file (config, path), 0);
    char *env[] = {"BANYAN_LOG_LEVEL=debug", "HOME=/nowhere", NULL};
    ck_assert_int_eq (bn_config_load_env (config, env), 0);
    ck_assert_int_eq (
        bn_config_set (config, "engine.count", "8", BN_CONFIG_CMDLINE), 0);

    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 2);
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "10.0.0.1");
    ck_assert_str_eq (bn_config_str (config, "log.level"), "debug");
    ck_assert_int_eq (bn_config_int (config, "engine.count"), 8);
    ck_assert_int_eq (bn_config_msecs (config, "client.timeout"), 10000);

    char expected[300];
    snprintf (expected, sizeof expected, "file %s", path);
    ck_assert_str_eq (bn_config_source (config, "controller.depth"), expected);
    ck_assert_str_eq (bn_config_source (config, "log.level"),
                      "env BANYAN_LOG_LEVEL");
    ck_assert_str_eq (bn_config_source (config, "engine.count"),
                      "command line");
    ck_assert_str_eq (bn_config_source (config, "client.timeout"), "default");
    bn_config_destroy (&config);
    ck_assert_ptr_null (config);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_defaults)
{
    bn_config_t *config = bn_config_new ();
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "127.0.0.1");
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 1);
    ck_assert_str_eq (bn_config_str (config, "controller.scheme"), "leastload");
    ck_assert_int_eq (bn_config_msecs (config, "controller.heartbeat_period"),
                      3000);
    ck_assert_int_eq (bn_config_int (config, "controller.heartbeat_misses"),
                      10);
    ck_assert_int_eq (
        bn_config_msecs (config, "controller.registration_timeout"), 30000);
    ck_assert_int_eq (bn_config_msecs (config, "controller.connect_grace"),
                      3000);
    ck_assert_int_eq (bn_config_msecs (config, "controller.stranded_timeout"),
                      500);
    ck_assert_int_eq (
        bn_config_msecs (config, "controller.node_restart_backoff"), 5000);
    ck_assert_int_eq (bn_config_msecs (config, "controller.db_flush"), 200);
    ck_assert_int_eq (bn_config_msecs (config, "controller.tree_deadline"), 0);
    ck_assert_int_eq (bn_config_int (config, "controller.hwm"), 0);
    ck_assert (!bn_config_bool (config, "controller.reuse_files"));
    ck_assert_str_eq (bn_config_str (config, "cluster.id"), "");
    ck_assert_str_eq (bn_config_str (config, "profile.name"), "default");
    ck_assert_str_eq (bn_config_str (config, "profile.dir_root"), "~/.banyan");
    ck_assert_str_eq (bn_config_str (config, "log.level"), "warn");
    ck_assert_str_eq (bn_config_str (config, "log.file"), "");
    ck_assert_int_eq (bn_config_int (config, "engine.count"), 1);
    ck_assert_int_eq (bn_config_msecs (config, "engine.timeout"), 30000);
    ck_assert_int_eq (bn_config_msecs (config, "engine.registration_timeout"),
                      5000);
    ck_assert_int_eq (bn_config_msecs (config, "engine.request_time_limit"), 0);
    ck_assert_str_eq (bn_config_str (config, "engine.plugins"), "");
    ck_assert_int_eq (bn_config_int (config, "engine.heartbeat_misses"), 50);
    ck_assert_int_eq (bn_config_msecs (config, "client.timeout"), 10000);
    ck_assert_str_eq (bn_config_error (config), "");

    //  The table is complete and self-consistent
    ck_assert_int_ge (bn_config_count (), 20);
    ck_assert_ptr_null (bn_config_name (-1));
    ck_assert_ptr_null (bn_config_name (bn_config_count ()));
    for (int i = 0; i < bn_config_count (); i++) {
        const char *name = bn_config_name (i);
        ck_assert (bn_config_known (name));
        ck_assert_ptr_nonnull (strchr (name, '.'));
        ck_assert_ptr_nonnull (bn_config_doc (name));
        ck_assert_ptr_nonnull (bn_config_default (name));
        ck_assert_str_eq (bn_config_source (config, name), "default");
    }
    ck_assert (!bn_config_known ("controller.nope"));
    ck_assert_ptr_null (bn_config_source (config, "controller.nope"));
    ck_assert_ptr_null (bn_config_default ("nope"));
    ck_assert_int_eq (bn_config_type ("engine.count"), BN_CONFIG_INT);
    ck_assert_int_eq (bn_config_type ("client.timeout"), BN_CONFIG_DURATION);
    ck_assert_int_eq (bn_config_type ("controller.reuse_files"),
                      BN_CONFIG_BOOL);
    ck_assert_int_eq (bn_config_type ("log.level"), BN_CONFIG_STRING);
    bn_config_destroy (&config);
}
END_TEST

//  True if name has the same value in both configurations.
static bool
s_same_value (bn_config_t *a, bn_config_t *b, const char *name)
{
    switch (bn_config_type (name)) {
    case BN_CONFIG_INT:
        return bn_config_int (a, name) == bn_config_int (b, name);
    case BN_CONFIG_DOUBLE:
        return bn_config_double (a, name) == bn_config_double (b, name);
    case BN_CONFIG_BOOL:
        return bn_config_bool (a, name) == bn_config_bool (b, name);
    case BN_CONFIG_STRING:
        return strcmp (bn_config_str (a, name), bn_config_str (b, name)) == 0;
    case BN_CONFIG_DURATION:
        return bn_config_msecs (a, name) == bn_config_msecs (b, name);
    case BN_CONFIG_PORTS: {
        int range_a[2], range_b[2];
        bn_config_ports (a, name, &range_a[0], &range_a[1]);
        bn_config_ports (b, name, &range_b[0], &range_b[1]);
        return range_a[0] == range_b[0] && range_a[1] == range_b[1];
    }
    }
    return false;
}

START_TEST (test_shipped_conf)
{
    //  conf/banyan.conf names every setting with its built-in default
    const char *path = BN_SOURCE_DIR "/conf/banyan.conf";
    bn_config_t *defaults = bn_config_new ();
    bn_config_t *config = bn_config_new ();
    ck_assert_msg (bn_config_load_file (config, path) == 0, "%s",
                   bn_config_error (config));
    char expected[512];
    snprintf (expected, sizeof expected, "file %s", path);
    for (int i = 0; i < bn_config_count (); i++) {
        const char *name = bn_config_name (i);
        ck_assert_msg (strcmp (bn_config_source (config, name), expected) == 0,
                       "%s is missing from conf/banyan.conf", name);
        ck_assert_msg (s_same_value (config, defaults, name),
                       "conf/banyan.conf and the table disagree on %s", name);
    }

    //  ...and czmq's own ZPL reader sees the same values in it
    zconfig_t *tree = zconfig_load (path);
    ck_assert_ptr_nonnull (tree);
    bn_config_t *via_zconfig = bn_config_new ();
    for (int i = 0; i < bn_config_count (); i++) {
        char zpath[128];
        snprintf (zpath, sizeof zpath, "%s", bn_config_name (i));
        *strchr (zpath, '.') = '/';
        const char *value = zconfig_get (tree, zpath, NULL);
        ck_assert_msg (value != NULL, "zconfig cannot find %s", zpath);
        ck_assert_int_eq (bn_config_set (via_zconfig, bn_config_name (i), value,
                                         BN_CONFIG_FILE),
                          0);
        ck_assert (s_same_value (via_zconfig, defaults, bn_config_name (i)));
    }
    zconfig_destroy (&tree);
    bn_config_destroy (&via_zconfig);
    bn_config_destroy (&config);
    bn_config_destroy (&defaults);
}
END_TEST

START_TEST (test_file_format)
{
    bn_config_t *config = bn_config_new ();
    const char *path =
        s_write ("ok.conf", "# a comment\n"
                            "\n"
                            "controller   # trailing comment\n"
                            "    ip = \"10.1.2.3\"   # quoted\n"
                            "        # indented comment\n"
                            "    depth=3\n"
                            "    reuse_files = yes\n"
                            "\n"
                            "cluster\n"
                            "    id = 'my cluster'\n"
                            "engine.plugins = /a/b.so:/c/d.so # one line\n"
                            "engine\n"
                            "    timeout = 2.5\r\n"
                            "log\n"
                            "    file = \"/tmp/x#y.log\"\n"
                            "    level = error   ");
    ck_assert_msg (bn_config_load_file (config, path) == 0, "%s",
                   bn_config_error (config));
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "10.1.2.3");
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 3);
    ck_assert (bn_config_bool (config, "controller.reuse_files"));
    ck_assert_str_eq (bn_config_str (config, "cluster.id"), "my cluster");
    ck_assert_str_eq (bn_config_str (config, "engine.plugins"),
                      "/a/b.so:/c/d.so");
    ck_assert_int_eq (bn_config_msecs (config, "engine.timeout"), 2500);
    ck_assert_str_eq (bn_config_str (config, "log.file"), "/tmp/x#y.log");
    ck_assert_str_eq (bn_config_str (config, "log.level"), "error");
    ck_assert_str_eq (bn_config_source (config, "engine.count"), "default");

    //  An empty file and a missing file
    ck_assert_int_eq (bn_config_load_file (config, s_write ("e.conf", "")), 0);
    ck_assert_int_eq (bn_config_load_file (config, "/nonexistent/b.conf"), -1);
    ck_assert_ptr_nonnull (
        strstr (bn_config_error (config), "/nonexistent/b.conf: cannot read"));
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_file_errors)
{
    s_expect_file_error ("# settings\n"
                         "\n"
                         "controller\n"
                         "    controler.ip = 1.2.3.4\n",
                         "line 4: unknown setting 'controller.controler.ip'");
    s_expect_file_error ("# settings\n"
                         "log.level = info\n"
                         "\n"
                         "controler.ip = 1.2.3.4\n",
                         "line 4: unknown setting 'controler.ip' "
                         "(did you mean 'controller.ip'?)");
    s_expect_file_error ("controller\n    ipp = x\n",
                         "line 2: unknown setting 'controller.ipp' "
                         "(did you mean 'controller.ip'?)");
    s_expect_file_error ("controller\n    depth = two\n",
                         "line 2: controller.depth: 'two' is not an integer");
    s_expect_file_error ("controller\n    depth = 1.5\n",
                         "line 2: controller.depth: '1.5' is not an integer");
    s_expect_file_error ("controller\n    depth = 99\n",
                         "line 2: controller.depth: 99 is out of range 0..6");
    s_expect_file_error ("controller\n    depth =\n",
                         "line 2: controller.depth: '' is not an integer");
    s_expect_file_error ("client\n    timeout = soon\n",
                         "line 2: client.timeout: 'soon' is not a duration");
    s_expect_file_error ("client\n    timeout = -1\n",
                         "client.timeout: '-1' is not a duration");
    s_expect_file_error ("client\n    timeout = 2d\n",
                         "client.timeout: '2d' is not a duration");
    s_expect_file_error ("client\n    timeout = 25h\n",
                         "client.timeout: '25h' is out of range 0..24h");
    s_expect_file_error ("controller\n    reuse_files = maybe\n",
                         "'maybe' is not true or false");
    s_expect_file_error ("log\n    level = loud\n",
                         "line 2: log.level: 'loud' is not one of "
                         "error/warn/info/debug");
    s_expect_file_error ("controllr\n    ip = 1.2.3.4\n",
                         "line 1: unknown section 'controllr'");
    s_expect_file_error ("controller\n    ip\n",
                         "line 2: setting 'controller.ip' needs a value");
    s_expect_file_error ("controller\n\tip = 1.2.3.4\n",
                         "line 2: indent with spaces, not tabs");
    s_expect_file_error ("controller\n   ip = 1.2.3.4\n",
                         "line 2: indent by multiples of 4 spaces");
    s_expect_file_error ("controller\n        ip = 1.2.3.4\n",
                         "line 2: indented more than the line above allows");
    s_expect_file_error ("    ip = 1.2.3.4\n",
                         "line 1: indented more than the line above allows");
    s_expect_file_error ("controller\n    ip = \"1.2.3.4\n",
                         "line 2: missing closing \"");
    s_expect_file_error ("controller\n    ip = \"1.2.3.4\" x\n",
                         "line 2: unexpected 'x' after the value");
    s_expect_file_error ("controller ip 1.2.3.4\n",
                         "line 1: expected '=' after 'controller'");
    //  A file that is not text is refused whole, not read up to a NUL
    bn_config_t *binary = bn_config_new ();
    const char *path = s_write ("binary.conf", "");
    FILE *file = fopen (path, "wb");
    ck_assert_ptr_nonnull (file);
    fwrite ("controller\n    depth = 2\n\0\x01garbage\n", 1, 35, file);
    fclose (file);
    ck_assert_int_eq (bn_config_load_file (binary, path), -1);
    ck_assert_ptr_nonnull (strstr (bn_config_error (binary),
                                   "not a text file (a NUL byte on "
                                   "line 3)"));
    ck_assert_int_eq (bn_config_int (binary, "controller.depth"), 1);
    path = s_write ("latin1.conf", "controller\n    location = caf\xe9\n");
    ck_assert_int_eq (bn_config_load_file (binary, path), -1);
    ck_assert_ptr_nonnull (strstr (bn_config_error (binary),
                                   "not a text file (bytes that are not "
                                   "UTF-8)"));
    bn_config_destroy (&binary);
    s_expect_file_error ("= 4\n", "line 1: invalid syntax '= 4'");
    s_expect_file_error ("controller\n    ip = 1.1.1.1\n    ip = 2.2.2.2\n",
                         "line 3: 'controller.ip' was already set on line 2");
    //  A good line before a bad one is not applied either
    s_expect_file_error ("log\n    level = debug\n    levle = info\n",
                         "line 3: unknown setting 'log.levle'");
}
END_TEST

static void
s_collect (void *arg, const char *variable, const char *nearest)
{
    char *text = arg;
    size_t used = strlen (text);
    snprintf (text + used, 512 - used, "%s%s>%s", used ? " " : "", variable,
              nearest ? nearest : "-");
}

START_TEST (test_unknown_env)
{
    char *env[] = {"BANYAN_CONTROLLER_IP=0.0.0.0",
                   "BANYAN_CONTROLER_DEPTH=3",
                   "BANYAN_DIR=/srv",
                   "BANYAN_CONNECTION_INFO={}",
                   "BANYAN_ENGINE_ID=4",
                   "BANYAN_WHATEVER=1",
                   "PATH=/bin",
                   "BANYAN_CLIENT_TIMEOUT=2",
                   NULL};
    char text[512] = "";
    ck_assert_int_eq (bn_config_unknown_env (env, s_collect, text), 2);
    ck_assert_str_eq (text, "BANYAN_CONTROLER_DEPTH>BANYAN_CONTROLLER_DEPTH "
                            "BANYAN_WHATEVER>-");
}
END_TEST

START_TEST (test_env)
{
    bn_config_t *config = bn_config_new ();
    char *env[] = {"BANYAN_CONTROLLER_IP=0.0.0.0",
                   "BANYAN_CONTROLLER_HEARTBEAT_PERIOD=500",
                   "BANYAN_DIR=/srv/banyan",
                   "BANYAN_PROFILE=bench",
                   "BANYAN_CONTROLLER_REUSE_FILES=1",
                   "BANYAN_CONNECTION_INFO={\"ignored\": true}",
                   "BANYAN_LOG=ignored",
                   "PATH=/bin",
                   "BANYAN_ENGINE_REQUEST_TIME_LIMIT=0.25",
                   NULL};
    ck_assert_int_eq (bn_config_load_env (config, env), 0);
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "0.0.0.0");
    ck_assert_int_eq (bn_config_msecs (config, "controller.heartbeat_period"),
                      500);
    ck_assert_str_eq (bn_config_str (config, "profile.dir_root"),
                      "/srv/banyan");
    ck_assert_str_eq (bn_config_source (config, "profile.dir_root"),
                      "env BANYAN_DIR");
    ck_assert_str_eq (bn_config_str (config, "profile.name"), "bench");
    ck_assert (bn_config_bool (config, "controller.reuse_files"));
    ck_assert_int_eq (bn_config_msecs (config, "engine.request_time_limit"),
                      250);
    ck_assert_str_eq (bn_config_source (config, "controller.ip"),
                      "env BANYAN_CONTROLLER_IP");
    char *dir = bn_config_profile_dir (config, NULL);
    ck_assert_str_eq (dir, "/srv/banyan/profile_bench");
    free (dir);

    //  The full name beats the alias
    char *both[] = {"BANYAN_DIR=/short", "BANYAN_PROFILE_DIR_ROOT=/long", NULL};
    ck_assert_int_eq (bn_config_load_env (config, both), 0);
    ck_assert_str_eq (bn_config_str (config, "profile.dir_root"), "/long");
    ck_assert_str_eq (bn_config_source (config, "profile.dir_root"),
                      "env BANYAN_PROFILE_DIR_ROOT");

    //  A bad value names the variable and applies nothing
    char *bad[] = {"BANYAN_LOG_LEVEL=info", "BANYAN_ENGINE_COUNT=many", NULL};
    ck_assert_int_eq (bn_config_load_env (config, bad), -1);
    ck_assert_str_eq (bn_config_error (config),
                      "env BANYAN_ENGINE_COUNT: engine.count: 'many' is not "
                      "an integer");
    ck_assert_str_eq (bn_config_str (config, "log.level"), "warn");

    //  NULL reads the process environment
    setenv ("BANYAN_CLIENT_TIMEOUT", "3.5", 1);
    setenv ("BANYAN_CLUSTER_ID", "abc", 1);
    ck_assert_int_eq (bn_config_load_env (config, NULL), 0);
    ck_assert_int_eq (bn_config_msecs (config, "client.timeout"), 3500);
    ck_assert_str_eq (bn_config_str (config, "cluster.id"), "abc");
    unsetenv ("BANYAN_CLIENT_TIMEOUT");
    unsetenv ("BANYAN_CLUSTER_ID");
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_precedence)
{
    //  Loaded in the "wrong" order, the higher source still wins
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", "4", BN_CONFIG_CMDLINE), 0);
    char *env[] = {"BANYAN_CONTROLLER_DEPTH=3", "BANYAN_ENGINE_COUNT=6", NULL};
    ck_assert_int_eq (bn_config_load_env (config, env), 0);
    const char *path = s_write ("p.conf", "controller\n"
                                          "    depth = 2\n"
                                          "engine\n"
                                          "    count = 5\n"
                                          "    timeout = 7\n");
    ck_assert_int_eq (bn_config_load_file (config, path), 0);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 4);
    ck_assert_str_eq (bn_config_source (config, "controller.depth"),
                      "command line");
    ck_assert_int_eq (bn_config_int (config, "engine.count"), 6);
    ck_assert_str_eq (bn_config_source (config, "engine.count"),
                      "env BANYAN_ENGINE_COUNT");
    ck_assert_int_eq (bn_config_msecs (config, "engine.timeout"), 7000);

    //  A lower source is still checked
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", "x", BN_CONFIG_FILE), -1);
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", "1", BN_CONFIG_FILE), 0);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 4);

    //  A later command line flag replaces an earlier one
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", "0", BN_CONFIG_CMDLINE), 0);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 0);

    //  The normal order gives the same result
    bn_config_t *ordered = bn_config_new ();
    ck_assert_int_eq (bn_config_load_file (ordered, path), 0);
    ck_assert_int_eq (bn_config_load_env (ordered, env), 0);
    ck_assert_int_eq (
        bn_config_set (ordered, "controller.depth", "0", BN_CONFIG_CMDLINE), 0);
    for (int i = 0; i < bn_config_count (); i++)
        ck_assert (s_same_value (config, ordered, bn_config_name (i)));
    bn_config_destroy (&ordered);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_set)
{
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (
        bn_config_set (config, "controler.ip", "1.2.3.4", BN_CONFIG_CMDLINE),
        -1);
    ck_assert_str_eq (bn_config_error (config),
                      "unknown setting 'controler.ip' (did you mean "
                      "'controller.ip'?)");
    ck_assert_int_eq (bn_config_set (config, "zzz", "1", BN_CONFIG_CMDLINE),
                      -1);
    ck_assert_str_eq (bn_config_error (config), "unknown setting 'zzz'");

    const char *bad_ints[] = {
        "", "x", "1x", "0x10", " 1", "1.0", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++)
        ck_assert_msg (bn_config_set (config, "engine.count", bad_ints[i],
                                      BN_CONFIG_CMDLINE) == -1,
                       "'%s' accepted", bad_ints[i]);
    ck_assert_int_eq (
        bn_config_set (config, "engine.count", "-1", BN_CONFIG_CMDLINE), -1);
    ck_assert_int_eq (bn_config_int (config, "engine.count"), 1);
    ck_assert_str_eq (bn_config_source (config, "engine.count"), "default");

    const char *bad_durations[] = {"", "x", "1.5x", "nan", "inf", "1e999"};
    for (size_t i = 0; i < sizeof bad_durations / sizeof bad_durations[0]; i++)
        ck_assert_msg (bn_config_set (config, "client.timeout",
                                      bad_durations[i],
                                      BN_CONFIG_CMDLINE) == -1,
                       "'%s' accepted", bad_durations[i]);
    //  bare numbers keep the setting's unit, seconds here
    ck_assert_int_eq (
        bn_config_set (config, "client.timeout", "1e1", BN_CONFIG_CMDLINE), 0);
    ck_assert_int_eq (bn_config_msecs (config, "client.timeout"), 10000);
    ck_assert_int_eq (
        bn_config_set (config, "client.timeout", "0.1", BN_CONFIG_CMDLINE), 0);
    ck_assert_int_eq (bn_config_msecs (config, "client.timeout"), 100);

    const char *truths[] = {"true", "TRUE", "yes", "on", "1"};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq (bn_config_set (config, "controller.reuse_files",
                                         "false", BN_CONFIG_CMDLINE),
                          0);
        ck_assert_int_eq (bn_config_set (config, "controller.reuse_files",
                                         truths[i], BN_CONFIG_CMDLINE),
                          0);
        ck_assert (bn_config_bool (config, "controller.reuse_files"));
    }
    const char *lies[] = {"false", "No", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq (bn_config_set (config, "controller.reuse_files",
                                         lies[i], BN_CONFIG_CMDLINE),
                          0);
        ck_assert (!bn_config_bool (config, "controller.reuse_files"));
    }
    ck_assert_int_eq (bn_config_set (config, "controller.reuse_files", "2",
                                     BN_CONFIG_CMDLINE),
                      -1);

    ck_assert_int_eq (
        bn_config_set (config, "controller.scheme", "pure", BN_CONFIG_CMDLINE),
        0);
    ck_assert_int_eq (bn_config_set (config, "controller.scheme", "leastloa",
                                     BN_CONFIG_CMDLINE),
                      -1);
    ck_assert_int_eq (
        bn_config_set (config, "controller.scheme", "", BN_CONFIG_CMDLINE), -1);
    ck_assert_str_eq (bn_config_str (config, "controller.scheme"), "pure");

    //  Sources set through bn_config_set
    ck_assert_int_eq (
        bn_config_set (config, "log.file", "/tmp/l", BN_CONFIG_ENV), 0);
    ck_assert_str_eq (bn_config_source (config, "log.file"),
                      "env BANYAN_LOG_FILE");
    ck_assert_int_eq (
        bn_config_set (config, "cluster.id", "a", BN_CONFIG_DEFAULT), 0);
    ck_assert_str_eq (bn_config_source (config, "cluster.id"), "default");
    bn_config_destroy (&config);
}
END_TEST

//  Durations: the parser, the shortest text, and settings that take them.
//  The deepest tree the settings take is the deepest the topology
//  builds: one limit, BN_TOPOLOGY_MAX_DEPTH.
START_TEST (test_depth_limit)
{
    bn_config_t *config = bn_config_new ();
    char deepest[16], deeper[16], expected[128];
    snprintf (deepest, sizeof deepest, "%d", BN_TOPOLOGY_MAX_DEPTH);
    snprintf (deeper, sizeof deeper, "%d", BN_TOPOLOGY_MAX_DEPTH + 1);
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", deepest, BN_CONFIG_CMDLINE),
        0);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"),
                      BN_TOPOLOGY_MAX_DEPTH);
    ck_assert_int_eq (
        bn_config_set (config, "controller.depth", deeper, BN_CONFIG_CMDLINE),
        -1);
    snprintf (expected, sizeof expected,
              "controller.depth: %d is out of range 0..%d",
              BN_TOPOLOGY_MAX_DEPTH + 1, BN_TOPOLOGY_MAX_DEPTH);
    ck_assert_str_eq (bn_config_error (config), expected);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"),
                      BN_TOPOLOGY_MAX_DEPTH);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_ports)
{
    bn_config_t *config = bn_config_new ();
    int lowest = -1, highest = -1;
    //  empty by default: any port
    ck_assert (
        !bn_config_ports (config, "controller.ports", &lowest, &highest));
    ck_assert_int_eq (lowest, 0);
    ck_assert_int_eq (highest, 0);
    ck_assert_int_eq (bn_config_type ("controller.ports"), BN_CONFIG_PORTS);
    ck_assert_int_eq (bn_config_set (config, "controller.ports", "60000-60099",
                                     BN_CONFIG_CMDLINE),
                      0);
    ck_assert (bn_config_ports (config, "controller.ports", &lowest, &highest));
    ck_assert_int_eq (lowest, 60000);
    ck_assert_int_eq (highest, 60099);
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream (&text, &size);
    bn_config_print (config, stream);
    fclose (stream);
    ck_assert_ptr_nonnull (strstr (text, "controller.ports = 60000-60099 "));
    free (text);
    //  one port is a range too
    ck_assert_int_eq (
        bn_config_set (config, "controller.ports", "7-7", BN_CONFIG_CMDLINE),
        0);
    ck_assert (bn_config_ports (config, "controller.ports", &lowest, &highest));
    ck_assert_int_eq (lowest + highest, 14);

    const char *bad[] = {"60000",        "60000-",  "-60000", "0-10",
                         "10-65536",     "200-100", "1-2-3",  " 1-2",
                         "1 - 2",        "a-b",     "+1-2",   "60000-60099x",
                         "99999999999-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg (bn_config_set (config, "controller.ports", bad[i],
                                      BN_CONFIG_CMDLINE) == -1,
                       "'%s' accepted", bad[i]);
        char expected[128];
        snprintf (expected, sizeof expected,
                  "controller.ports: '%s' is not a port range LO-HI "
                  "(1..65535, LO <= HI; empty for any port)",
                  bad[i]);
        ck_assert_str_eq (bn_config_error (config), expected);
    }
    //  the environment, and back to any port
    char *env[] = {"BANYAN_CONTROLLER_PORTS=5000-5010", NULL};
    bn_config_t *from_env = bn_config_new ();
    ck_assert_int_eq (bn_config_load_env (from_env, env), 0);
    ck_assert (
        bn_config_ports (from_env, "controller.ports", &lowest, &highest));
    ck_assert_int_eq (lowest, 5000);
    ck_assert_int_eq (highest, 5010);
    ck_assert_int_eq (
        bn_config_set (from_env, "controller.ports", "", BN_CONFIG_CMDLINE), 0);
    ck_assert (
        !bn_config_ports (from_env, "controller.ports", &lowest, &highest));
    bn_config_destroy (&from_env);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_durations)
{
    struct {
        const char *text;
        int64_t bare_unit;
        int64_t msecs;
    } good[] = {
        {"3s", 1, 3000},       {"200ms", 1, 200},  {"1.5s", 1, 1500},
        {"2m", 1, 120000},     {"1h", 1, 3600000}, {"250", 1, 250},
        {"250", 1000, 250000}, {"0.5", 1000, 500}, {"0", 1, 0},
        {"0s", 1000, 0},       {"1e3", 1, 1000},   {".5s", 1, 500},
        {"7s  ", 1, 7000},     {"10ms", 1000, 10}, {"0.25m", 1, 15000},
        {"1.001s", 1, 1001},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t msecs = -1;
        ck_assert_msg (bn_config_parse_duration (
                           good[i].text, good[i].bare_unit, &msecs) == 0,
                       "'%s' refused", good[i].text);
        ck_assert_msg (msecs == good[i].msecs, "'%s' read as %lld ms",
                       good[i].text, (long long)msecs);
    }
    const char *bad[] = {"",     "s",     "3x",   "3 s",    "-1s", "+1s",
                         " 3s",  "1.5ms", "3sec", "inf",    "nan", "3s3",
                         "0x10", "1e",    "ms3",  "1.2.3s", "3S",  "1d"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t msecs = 42;
        ck_assert_msg (bn_config_parse_duration (bad[i], 1, &msecs) == -1,
                       "'%s' accepted", bad[i]);
        ck_assert_int_eq (msecs, 42);
    }
    //  a bare number of seconds finer than a millisecond
    int64_t msecs;
    ck_assert_int_eq (bn_config_parse_duration ("0.0001", 1000, &msecs), -1);

    struct {
        int64_t msecs;
        const char *text;
    } shown[] = {{0, "0"},         {3000, "3s"},   {1500, "1.5s"},
                 {250, "250ms"},   {120000, "2m"}, {7200000, "2h"},
                 {1001, "1.001s"}, {90000, "90s"}, {1250, "1.25s"},
                 {1, "1ms"}};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        char text[32];
        ck_assert_str_eq (
            bn_config_format_duration (shown[i].msecs, text, sizeof text),
            shown[i].text);
        int64_t back;
        ck_assert_int_eq (bn_config_parse_duration (text, 1, &back), 0);
        ck_assert_int_eq (back, shown[i].msecs);
    }
    //  past 11 days a decimal of seconds may not read back to the ms
    char long_text[32];
    bn_config_format_duration (8888888888888888, long_text, sizeof long_text);
    ck_assert_int_eq (bn_config_parse_duration (long_text, 1, &msecs), 0);
    ck_assert_int_eq (msecs, 8888888888888888);

    //  as settings: canonical text, clear errors naming key and value
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (bn_config_type ("controller.connect_grace"),
                      BN_CONFIG_DURATION);
    ck_assert_int_eq (bn_config_set (config, "controller.connect_grace",
                                     "1500ms", BN_CONFIG_CMDLINE),
                      0);
    ck_assert_int_eq (bn_config_msecs (config, "controller.connect_grace"),
                      1500);
    ck_assert_int_eq (bn_config_set (config, "controller.connect_grace", "3x",
                                     BN_CONFIG_CMDLINE),
                      -1);
    ck_assert_str_eq (bn_config_error (config),
                      "controller.connect_grace: '3x' is not a duration in "
                      "whole milliseconds (say 3s, 200ms, 1.5s or 2m; a bare "
                      "number is milliseconds)");
    ck_assert_int_eq (bn_config_set (config, "controller.connect_grace", "2h",
                                     BN_CONFIG_CMDLINE),
                      -1);
    ck_assert_str_eq (bn_config_error (config),
                      "controller.connect_grace: '2h' is out of range 0..1h");
    ck_assert_int_eq (bn_config_set (config, "controller.heartbeat_period",
                                     "5ms", BN_CONFIG_CMDLINE),
                      -1);
    ck_assert_str_eq (
        bn_config_error (config),
        "controller.heartbeat_period: '5ms' is out of range 10ms..1h");
    ck_assert_int_eq (
        bn_config_set (config, "engine.timeout", "0.0001", BN_CONFIG_CMDLINE),
        -1);
    ck_assert_ptr_nonnull (
        strstr (bn_config_error (config), "a bare number is seconds"));
    ck_assert_int_eq (bn_config_msecs (config, "controller.connect_grace"),
                      1500);
    char *env[] = {"BANYAN_CONTROLLER_CONNECT_GRACE=250ms",
                   "BANYAN_CONTROLLER_TREE_DEADLINE=2m", NULL};
    ck_assert_int_eq (bn_config_load_env (config, env), 0);
    ck_assert_int_eq (bn_config_msecs (config, "controller.tree_deadline"),
                      120000);
    ck_assert_str_eq (bn_config_source (config, "controller.tree_deadline"),
                      "env BANYAN_CONTROLLER_TREE_DEADLINE");
    //  the command line's value stays
    ck_assert_int_eq (bn_config_msecs (config, "controller.connect_grace"),
                      1500);

    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream (&text, &size);
    bn_config_print (config, stream);
    fclose (stream);
    ck_assert_ptr_nonnull (strstr (text, "controller.connect_grace = 1.5s "));
    ck_assert_ptr_nonnull (strstr (text, "controller.tree_deadline = 2m "));
    ck_assert_ptr_nonnull (strstr (text, "controller.heartbeat_period = 3s "));
    free (text);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_profile_dir)
{
    bn_config_t *config = bn_config_new ();
    setenv ("HOME", "/home/someone", 1);
    char *dir = bn_config_profile_dir (config, NULL);
    ck_assert_str_eq (dir, "/home/someone/.banyan/profile_default");
    free (dir);
    dir = bn_config_profile_dir (config, "bench");
    ck_assert_str_eq (dir, "/home/someone/.banyan/profile_bench");
    free (dir);

    bn_config_set (config, "profile.dir_root", "~", BN_CONFIG_CMDLINE);
    dir = bn_config_profile_dir (config, NULL);
    ck_assert_str_eq (dir, "/home/someone/profile_default");
    free (dir);

    bn_config_set (config, "profile.dir_root", "/srv/b/", BN_CONFIG_CMDLINE);
    bn_config_set (config, "profile.name", "x", BN_CONFIG_CMDLINE);
    dir = bn_config_profile_dir (config, NULL);
    ck_assert_str_eq (dir, "/srv/b/profile_x");
    free (dir);

    //  Only a leading "~" or "~/" is the home folder
    bn_config_set (config, "profile.dir_root", "~other/b", BN_CONFIG_CMDLINE);
    dir = bn_config_profile_dir (config, "y");
    ck_assert_str_eq (dir, "~other/b/profile_y");
    free (dir);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_print)
{
    bn_config_t *config = bn_config_new ();
    const char *path = s_write ("print.conf", "cluster\n    id = c1\n");
    ck_assert_int_eq (bn_config_load_file (config, path), 0);
    char *env[] = {"BANYAN_LOG_LEVEL=info", NULL};
    ck_assert_int_eq (bn_config_load_env (config, env), 0);
    bn_config_set (config, "engine.plugins", "/a b.so", BN_CONFIG_CMDLINE);

    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream (&text, &size);
    bn_config_print (config, stream);
    fclose (stream);

    char expected[512];
    ck_assert_ptr_nonnull (strstr (text, "controller.ip = 127.0.0.1 "));
    ck_assert_ptr_nonnull (strstr (text, "# default\n"));
    snprintf (expected, sizeof expected, "cluster.id = c1 ");
    ck_assert_ptr_nonnull (strstr (text, expected));
    snprintf (expected, sizeof expected, "# file %s\n", path);
    ck_assert_ptr_nonnull (strstr (text, expected));
    ck_assert_ptr_nonnull (strstr (text, "log.level = info "));
    ck_assert_ptr_nonnull (strstr (text, "# env BANYAN_LOG_LEVEL\n"));
    ck_assert_ptr_nonnull (strstr (text, "engine.plugins = \"/a b.so\" "));
    ck_assert_ptr_nonnull (strstr (text, "# command line\n"));
    ck_assert_ptr_nonnull (strstr (text, "log.file = \"\" "));
    int lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq (lines, bn_config_count ());

    //  What print shows loads back as a config file with the same values
    bn_config_t *again = bn_config_new ();
    const char *copy = s_write ("copy.conf", text);
    ck_assert_msg (bn_config_load_file (again, copy) == 0, "%s",
                   bn_config_error (again));
    for (int i = 0; i < bn_config_count (); i++)
        ck_assert (s_same_value (config, again, bn_config_name (i)));
    free (text);
    bn_config_destroy (&again);
    bn_config_destroy (&config);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_config");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_defaults);
    tcase_add_test (tc, test_shipped_conf);
    tcase_add_test (tc, test_file_format);
    tcase_add_test (tc, test_file_errors);
    tcase_add_test (tc, test_env);
    tcase_add_test (tc, test_unknown_env);
    tcase_add_test (tc, test_precedence);
    tcase_add_test (tc, test_set);
    tcase_add_test (tc, test_depth_limit);
    tcase_add_test (tc, test_ports);
    tcase_add_test (tc, test_durations);
    tcase_add_test (tc, test_profile_dir);
    tcase_add_test (tc, test_print);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

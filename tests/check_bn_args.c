/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_args: the daemons' flags, their settings over the config file
    and the environment, and their usage errors.  */
#include "bn_args.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const bn_args_setting_t s_table[] = {
    {"--ip", "controller.ip"},
    {"--depth", "controller.depth"},
    {"--cluster-id", "cluster.id"},
    {"--log-level", "log.level"},
};

#define S_COUNT (sizeof s_table / sizeof s_table[0])

//  Run bn_args_setting over every argument of a NULL-terminated list, as
//  a main does; the first result other than 1.
static int
s_parse (bn_config_t *config, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    for (int i = 0; i < argc; i++) {
        int rc =
            bn_args_setting ("prog", argc, argv, &i, s_table, S_COUNT, config);
        if (rc != 1)
            return rc;
    }
    return 1;
}

//  A config file holding text, at a fresh path; free the path.
static char *
s_config_file (const char *text)
{
    char *path = strdup ("/tmp/check_bn_args.XXXXXX");
    int fd = mkstemp (path);
    ck_assert_int_ge (fd, 0);
    ck_assert_int_eq (write (fd, text, strlen (text)), (int)strlen (text));
    close (fd);
    return path;
}

START_TEST (test_usage)
{
    bn_config_t *config = bn_config_new ();
    char *argv[] = {"--ip", "10.0.0.1", "--depth=3", NULL};
    ck_assert_int_eq (s_parse (config, argv), 1);
    ck_assert_int_eq (bn_args_load ("prog", config, NULL), 0);
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "10.0.0.1");
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 3);
    ck_assert_str_eq (bn_config_source (config, "controller.depth"),
                      "command line");
    bn_config_destroy (&config);
}
END_TEST

//  defaults < config file < environment < flags, whatever the order in
//  which a main applies them
START_TEST (test_precedence)
{
    char *path = s_config_file ("controller\n"
                                "    ip = 10.0.0.2\n"
                                "    depth = 2\n"
                                "    topology = binomial\n"
                                "log\n"
                                "    level = info\n");
    setenv ("BANYAN_CONTROLLER_IP", "10.0.0.3", 1);
    setenv ("BANYAN_CONTROLLER_DEPTH", "4", 1);
    bn_config_t *config = bn_config_new ();
    char *argv[] = {"--depth", "5", NULL};
    ck_assert_int_eq (s_parse (config, argv), 1);
    ck_assert_int_eq (bn_args_load ("prog", config, path), 0);
    ck_assert_int_eq (bn_config_int (config, "controller.depth"), 5);
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "10.0.0.3");
    ck_assert_str_eq (bn_config_str (config, "controller.topology"),
                      "binomial");
    ck_assert_str_eq (bn_config_str (config, "log.level"), "info");
    ck_assert_int_eq (bn_config_int (config, "controller.hwm"), 0);
    bn_config_destroy (&config);
    unlink (path);
    free (path);
}
END_TEST

START_TEST (test_usage_errors)
{
    bn_config_t *config = bn_config_new ();
    char *missing[] = {"--ip", NULL};
    ck_assert_int_eq (s_parse (config, missing), 2);
    char *empty[] = {"--ip=", NULL};
    ck_assert_int_eq (s_parse (config, empty), 2);
    char *bad[] = {"--depth", "deep", NULL};
    ck_assert_int_eq (s_parse (config, bad), 2);
    char *choice[] = {"--log-level", "loud", NULL};
    ck_assert_int_eq (s_parse (config, choice), 2);
    //  not one of the table's: the main's own, or unknown
    char *other[] = {"--profile-dir", "/tmp", NULL};
    ck_assert_int_eq (s_parse (config, other), 0);
    char *prefix[] = {"--ipx=1", NULL};
    ck_assert_int_eq (s_parse (config, prefix), 0);
    ck_assert_str_eq (bn_config_str (config, "controller.ip"), "127.0.0.1");
    //  a setting whose default is empty may be set empty
    char *cluster[] = {"--cluster-id=", NULL};
    ck_assert_int_eq (s_parse (config, cluster), 1);
    ck_assert_str_eq (bn_config_source (config, "cluster.id"), "command line");

    ck_assert_int_eq (bn_args_load ("prog", config, "/nonexistent/x.conf"), 2);
    char *path = s_config_file ("controller\n    depth = many\n");
    ck_assert_int_eq (bn_args_load ("prog", config, path), 2);
    unlink (path);
    free (path);
    setenv ("BANYAN_CONTROLLER_DEPTH", "-1", 1);
    ck_assert_int_eq (bn_args_load ("prog", config, NULL), 2);
    bn_config_destroy (&config);
}
END_TEST

START_TEST (test_flag_value)
{
    char *argv[] = {"prog", "--node=3", "--node", "4", "--nodes", "--node"};
    int argc = 6, i = 1;
    bool missing = false;
    ck_assert_str_eq (bn_args_flag_value (argc, argv, &i, "--node", &missing),
                      "3");
    i = 2;
    ck_assert_str_eq (bn_args_flag_value (argc, argv, &i, "--node", &missing),
                      "4");
    ck_assert_int_eq (i, 3);
    i = 4;
    ck_assert_ptr_null (
        bn_args_flag_value (argc, argv, &i, "--node", &missing));
    ck_assert (!missing);
    i = 5;
    ck_assert_ptr_null (
        bn_args_flag_value (argc, argv, &i, "--node", &missing));
    ck_assert (missing);
    ck_assert_int_eq (bn_args_number ("12", 100), 12);
    ck_assert_int_eq (bn_args_number ("101", 100), -1);
    ck_assert_int_eq (bn_args_number ("1x", 100), -1);
    ck_assert_int_eq (bn_args_number ("-1", 100), -1);
}
END_TEST

int
main (void)
{
    const char *mine[] = {
        "BANYAN_CONTROLLER_IP",       "BANYAN_CONTROLLER_DEPTH",
        "BANYAN_CONTROLLER_TOPOLOGY", "BANYAN_CONTROLLER_HWM",
        "BANYAN_LOG_LEVEL",           "BANYAN_CLUSTER_ID"};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        unsetenv (mine[i]);
    Suite *suite = suite_create ("bn_args");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_precedence);
    tcase_add_test (tc, test_usage_errors);
    tcase_add_test (tc, test_flag_value);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

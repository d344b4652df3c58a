/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_cliopts: command-line parsing shared by the banyan commands,
    and the words-to-values conversion of `banyan apply`.  */
#include "bn_cliopts.h"
#include "bn_clivalue.h"
#include "bn_connfile.h"
#include "bn_serialize.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    long n;
    bool quiet;
} s_args_t;

static int
s_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_args_t *args = data;
    if (opt == 'n')
        return bn_cliopts_int (opts, "-n", arg, 0, 100, &args->n);
    if (opt == 'q') {
        args->quiet = true;
        return 0;
    }
    return -1;
}

static const struct option s_options[] = {{"n", required_argument, NULL, 'n'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {NULL, 0, NULL, 0}};

//  Parse a NULL-terminated argv for a command taking -n and -q.
static int
s_parse (bn_cliopts_t *opts, char **argv, s_args_t *args)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return bn_cliopts_parse (opts, argc, argv, "n:q", s_options, s_option,
                             args);
}

static void
s_setup (void)
{
    //  Nothing from the caller's environment may leak into the tests
    unsetenv ("BANYAN_PROFILE");
    unsetenv ("BANYAN_DIR");
    unsetenv ("BANYAN_CLUSTER_ID");
    unsetenv ("BANYAN_CLIENT_TIMEOUT");
    setenv ("HOME", "/tmp/check_bn_cliopts_home", 1);
}

START_TEST (test_usage)
{
    //  "banyan px -q --profile-dir /tmp/p --cluster-id a hostname"
    bn_cliopts_t *opts =
        bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE);
    ck_assert_ptr_nonnull (opts);
    char *argv[] = {"px",       "-q",           "--profile-dir",
                    "/tmp/p",   "--cluster-id", "a",
                    "hostname", "-l",           NULL};
    s_args_t args = {0};
    int first = s_parse (opts, argv, &args);
    ck_assert_int_eq (first, 6);
    ck_assert (args.quiet);
    ck_assert_str_eq (bn_cliopts_profile_dir (opts), "/tmp/p");
    ck_assert_str_eq (bn_cliopts_cluster_id (opts), "a");
    ck_assert_str_eq (bn_cliopts_client_file (opts),
                      "/tmp/p/security/ipcontroller-a-client.json");
    ck_assert_str_eq (bn_cliopts_selection (opts),
                      " --profile-dir /tmp/p --cluster-id a");
    ck_assert (!bn_cliopts_timeout_given (opts));
    ck_assert (bn_cliopts_timeout (opts) == 10.0);
    bn_cliopts_destroy (&opts);
    ck_assert_ptr_null (opts);
    bn_cliopts_destroy (&opts);
}
END_TEST

START_TEST (test_profiles)
{
    //  Default profile under ~/.banyan
    bn_cliopts_t *opts = bn_cliopts_new ("engines", BN_CLIOPTS_CLUSTER);
    char *plain[] = {"engines", NULL};
    s_args_t args = {0};
    ck_assert_int_eq (s_parse (opts, plain, &args), 1);
    ck_assert_str_eq (bn_cliopts_profile_dir (opts),
                      "/tmp/check_bn_cliopts_home/.banyan/profile_default");
    ck_assert_str_eq (bn_cliopts_selection (opts), "");
    ck_assert (!bn_cliopts_profile_given (opts));
    bn_cliopts_destroy (&opts);

    //  A named profile, and the environment's profile root
    setenv ("BANYAN_DIR", "/srv/banyan", 1);
    opts = bn_cliopts_new ("engines", BN_CLIOPTS_CLUSTER);
    char *named[] = {"engines", "--profile", "big", "--timeout", "2.5", NULL};
    ck_assert_int_eq (s_parse (opts, named, &args), 5);
    ck_assert_str_eq (bn_cliopts_profile_dir (opts), "/srv/banyan/profile_big");
    ck_assert_str_eq (bn_cliopts_selection (opts), " --profile big");
    ck_assert (bn_cliopts_timeout_given (opts));
    ck_assert (bn_cliopts_timeout (opts) == 2.5);
    bn_cliopts_destroy (&opts);

    //  A relative folder is made absolute
    opts = bn_cliopts_new ("engines", BN_CLIOPTS_CLUSTER);
    char *relative[] = {"engines", "--profile-dir", "prof", NULL};
    ck_assert_int_eq (s_parse (opts, relative, &args), 3);
    char expected[4200];
    char cwd[4096];
    ck_assert_ptr_nonnull (getcwd (cwd, sizeof cwd));
    snprintf (expected, sizeof expected, "%s/prof", cwd);
    ck_assert_str_eq (bn_cliopts_profile_dir (opts), expected);
    bn_cliopts_destroy (&opts);
}
END_TEST

START_TEST (test_file)
{
    bn_cliopts_t *opts =
        bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE);
    char *argv[] = {"px", "--file", "/x/client.json", "hostname", NULL};
    s_args_t args = {0};
    ck_assert_int_eq (s_parse (opts, argv, &args), 3);
    ck_assert (bn_cliopts_file_given (opts));
    ck_assert_str_eq (bn_cliopts_client_file (opts), "/x/client.json");
    ck_assert_str_eq (bn_cliopts_selection (opts), " --file /x/client.json");
    bn_cliopts_destroy (&opts);

    //  Commands without a connection file do not take --file
    opts = bn_cliopts_new ("cluster stop", BN_CLIOPTS_CLUSTER);
    char *stop[] = {"cluster stop", "--file", "/x/client.json", NULL};
    ck_assert_int_eq (s_parse (opts, stop, &args), BN_CLIOPTS_USAGE);
    bn_cliopts_destroy (&opts);
}
END_TEST

START_TEST (test_usage_errors)
{
    char *cases[][6] = {
        {"px", "--bogus", NULL},
        {"px", "-x", NULL},
        {"px", "-n", NULL},
        {"px", "--timeout", NULL},
        {"px", "-n", "many", NULL},
        {"px", "-n", "101", NULL},
        {"px", "--timeout", "-1", NULL},
        {"px", "--timeout", "soon", NULL},
        {"px", "--profile", "a/b", NULL},
        {"px", "--profile-dir", "/a", "--file", "/b", NULL},
        {"px", "--log-level", "loud", NULL},
    };
    for (size_t index = 0; index < sizeof cases / sizeof cases[0]; index++) {
        bn_cliopts_t *opts =
            bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE);
        s_args_t args = {0};
        ck_assert_msg (s_parse (opts, cases[index], &args) == BN_CLIOPTS_USAGE,
                       "case %zu (%s) was accepted", index, cases[index][1]);
        bn_cliopts_destroy (&opts);
    }
    //  A bad BANYAN_* value is a usage error too
    setenv ("BANYAN_CLIENT_TIMEOUT", "never", 1);
    bn_cliopts_t *opts = bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER);
    char *plain[] = {"px", "hostname", NULL};
    s_args_t args = {0};
    ck_assert_int_eq (s_parse (opts, plain, &args), BN_CLIOPTS_USAGE);
    bn_cliopts_destroy (&opts);
}
END_TEST

START_TEST (test_help_and_version)
{
    //  Help and version end the command with status 0, before any operand
    //  is looked at
    char *cases[][3] = {
        {"px", "--help", NULL}, {"px", "-h", NULL}, {"px", "--version", NULL}};
    for (size_t index = 0; index < 3; index++) {
        bn_cliopts_t *opts = bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER);
        s_args_t args = {0};
        ck_assert_int_eq (s_parse (opts, cases[index], &args), BN_CLIOPTS_DONE);
        bn_cliopts_destroy (&opts);
    }
}
END_TEST

START_TEST (test_config_file)
{
    char path[] = "/tmp/check_bn_cliopts.XXXXXX";
    int fd = mkstemp (path);
    ck_assert_int_ge (fd, 0);
    const char *text = "client\n    timeout = 7\ncontroller.depth = 3\n";
    ck_assert_int_eq (write (fd, text, strlen (text)), (ssize_t)strlen (text));
    close (fd);
    bn_cliopts_t *opts = bn_cliopts_new ("config", BN_CLIOPTS_CLUSTER);
    char *argv[] = {"config", "--config", path, "show", NULL};
    s_args_t args = {0};
    ck_assert_int_eq (s_parse (opts, argv, &args), 3);
    ck_assert (bn_cliopts_timeout (opts) == 7.0);
    ck_assert_int_eq (
        bn_config_int (bn_cliopts_config (opts), "controller.depth"), 3);
    ck_assert_str_eq (bn_cliopts_config_file (opts), path);
    //  The command line wins over the file
    ck_assert_int_eq (bn_cliopts_set (opts, "--depth", "controller.depth", "2"),
                      0);
    ck_assert_int_eq (
        bn_config_int (bn_cliopts_config (opts), "controller.depth"), 2);
    bn_cliopts_destroy (&opts);

    //  A broken file is a usage error
    FILE *file = fopen (path, "w");
    fputs ("controller.nonsense = 1\n", file);
    fclose (file);
    opts = bn_cliopts_new ("config", BN_CLIOPTS_CLUSTER);
    ck_assert_int_eq (s_parse (opts, argv, &args), BN_CLIOPTS_USAGE);
    bn_cliopts_destroy (&opts);
    unlink (path);
}
END_TEST

START_TEST (test_values)
{
    struct {
        const char *word;
        bn_value_type_t type;
        const char *repr;
    } cases[] = {
        {"42", BN_VALUE_INT, "42"},
        {"-7", BN_VALUE_INT, "-7"},
        {"+3", BN_VALUE_INT, "3"},
        {"3.5", BN_VALUE_FLOAT, "3.5"},
        {"-0.5", BN_VALUE_FLOAT, "-0.5"},
        {"1e3", BN_VALUE_FLOAT, "1000.0"},
        {".5", BN_VALUE_FLOAT, "0.5"},
        {"hello", BN_VALUE_STR, "'hello'"},
        {"nan", BN_VALUE_STR, "'nan'"},
        {"inf", BN_VALUE_STR, "'inf'"},
        {"0x10", BN_VALUE_STR, "'0x10'"},
        {"1e", BN_VALUE_STR, "'1e'"},
        {"", BN_VALUE_STR, "''"},
        {"99999999999999999999", BN_VALUE_STR, "'99999999999999999999'"},
        {"1e999", BN_VALUE_STR, "'1e999'"},
        {"@data", BN_VALUE_OBJECT, NULL},
        {"@@data", BN_VALUE_STR, "'@data'"},
        {"@", BN_VALUE_STR, "'@'"},
    };
    for (size_t index = 0; index < sizeof cases / sizeof cases[0]; index++) {
        bn_value_t *value = bn_clivalue_parse (cases[index].word);
        ck_assert_ptr_nonnull (value);
        ck_assert_msg (bn_value_type (value) == cases[index].type,
                       "'%s' has the wrong type", cases[index].word);
        if (cases[index].repr) {
            char *repr = bn_value_repr (value);
            ck_assert_str_eq (repr, cases[index].repr);
            free (repr);
        } else {
            //  ipyparallel's Reference, naming what follows the @
            const bn_value_t *state = bn_value_object_state (value);
            ck_assert (
                bn_value_object_is (value, BN_SERIALIZE_CANNING, "Reference"));
            ck_assert_str_eq (bn_value_str (bn_value_dict_get (state, "name")),
                              cases[index].word + 1);
        }
        bn_value_destroy (&value);
    }
    char *words[] = {"1", "two", "3.0"};
    bn_value_t *list = bn_clivalue_list (words, 3);
    char *repr = bn_value_repr (list);
    ck_assert_str_eq (repr, "[1, 'two', 3.0]");
    free (repr);
    bn_value_destroy (&list);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_cliopts");
    TCase *tcase = tcase_create ("core");
    tcase_add_checked_fixture (tcase, s_setup, NULL);
    tcase_add_test (tcase, test_usage);
    tcase_add_test (tcase, test_profiles);
    tcase_add_test (tcase, test_file);
    tcase_add_test (tcase, test_usage_errors);
    tcase_add_test (tcase, test_help_and_version);
    tcase_add_test (tcase, test_config_file);
    tcase_add_test (tcase, test_values);
    suite_add_tcase (suite, tcase);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_path: private folders made on demand, and finding a program
    beside the running one or in PATH, the plugins and the annotated
    defaults. The build tree has the installed layout: this test sits in
    <build>/tests as the programs sit in <build>/bin.  */
#include "bn_path.h"
#include "bn_testdir.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[] = "/tmp/check_bn_path.XXXXXX";

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_path.XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

//  The permission bits of path, or -1 if it is not a folder.
static int
s_folder_mode (const char *path)
{
    struct stat st;
    if (stat (path, &st) != 0 || !S_ISDIR (st.st_mode))
        return -1;
    return (int)(st.st_mode & 07777);
}

//  Write an executable (or, with mode 0600, a plain) file at path.
static void
s_touch (const char *path, mode_t mode)
{
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fputs ("#!/bin/sh\n", file);
    fclose (file);
    ck_assert_int_eq (chmod (path, mode), 0);
}

START_TEST (test_usage)
{
    char folder[PATH_MAX];
    snprintf (folder, sizeof folder, "%s/profile/security", s_dir);
    ck_assert_int_eq (bn_path_mkdir (folder), 0);
    ck_assert_int_eq (s_folder_mode (folder), 0700);

    char *program = bn_path_program ("sh");
    ck_assert_ptr_nonnull (program);
    ck_assert_int_eq (program[0], '/');
    ck_assert_int_eq (access (program, X_OK), 0);
    free (program);
}
END_TEST

START_TEST (test_mkdir)
{
    char path[PATH_MAX];
    //  every missing level is new and private; existing ones are kept
    ck_assert_int_eq (chmod (s_dir, 0755), 0);
    snprintf (path, sizeof path, "%s/a/b/c", s_dir);
    ck_assert_int_eq (bn_path_mkdir (path), 0);
    ck_assert_int_eq (s_folder_mode (path), 0700);
    snprintf (path, sizeof path, "%s/a", s_dir);
    ck_assert_int_eq (s_folder_mode (path), 0700);
    ck_assert_int_eq (s_folder_mode (s_dir), 0755);
    //  again, and with a trailing slash: nothing to do
    snprintf (path, sizeof path, "%s/a/b/c/", s_dir);
    ck_assert_int_eq (bn_path_mkdir (path), 0);

    //  the folder of a file, not the file
    snprintf (path, sizeof path, "%s/d/e/file.json", s_dir);
    ck_assert_int_eq (bn_path_mkdir_for (path), 0);
    snprintf (path, sizeof path, "%s/d/e", s_dir);
    ck_assert_int_eq (s_folder_mode (path), 0700);
    snprintf (path, sizeof path, "%s/d/e/file.json", s_dir);
    ck_assert_int_eq (access (path, F_OK), -1);
    ck_assert_int_eq (bn_path_mkdir_for ("file.json"), 0);

    //  a plain file in the way
    snprintf (path, sizeof path, "%s/plain", s_dir);
    s_touch (path, 0600);
    snprintf (path, sizeof path, "%s/plain/sub", s_dir);
    ck_assert_int_eq (bn_path_mkdir (path), -1);
    ck_assert_int_eq (errno, ENOTDIR);
    ck_assert_int_eq (bn_path_mkdir (""), -1);
}
END_TEST

START_TEST (test_program)
{
    //  this test program is beside itself
    char self[PATH_MAX];
    ssize_t size = readlink ("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt (size, 0);
    self[size] = 0;
    char *program = bn_path_program ("check_bn_path");
    ck_assert_ptr_nonnull (program);
    ck_assert_str_eq (program, self);
    free (program);

    //  else the first in PATH that may be run, made absolute
    char bin1[PATH_MAX / 2], bin2[PATH_MAX / 2], path[PATH_MAX];
    snprintf (bin1, sizeof bin1, "%s/bin1", s_dir);
    snprintf (bin2, sizeof bin2, "%s/bin2", s_dir);
    ck_assert_int_eq (bn_path_mkdir (bin1), 0);
    ck_assert_int_eq (bn_path_mkdir (bin2), 0);
    snprintf (path, sizeof path, "%s/bn-tool", bin1);
    s_touch (path, 0600);
    snprintf (path, sizeof path, "%s/bn-tool", bin2);
    s_touch (path, 0700);
    char search[2 * PATH_MAX + 8];
    snprintf (search, sizeof search, "%s::%s", bin1, bin2);
    ck_assert_int_eq (setenv ("PATH", search, 1), 0);
    program = bn_path_program ("bn-tool");
    ck_assert_ptr_nonnull (program);
    ck_assert_str_eq (program, path);
    free (program);

    //  an empty PATH element is the current folder
    ck_assert_int_eq (chdir (bin2), 0);
    ck_assert_int_eq (setenv ("PATH", "/nonexistent:", 1), 0);
    program = bn_path_program ("bn-tool");
    ck_assert_ptr_nonnull (program);
    ck_assert_str_eq (program, path);
    free (program);

    ck_assert_ptr_null (bn_path_program ("bn-no-such-program"));
    ck_assert_int_eq (unsetenv ("PATH"), 0);
    ck_assert_ptr_null (bn_path_program ("bn-tool"));
}
END_TEST

START_TEST (test_installed)
{
    //  the running program's folder, resolved
    char *tests = realpath (BN_BUILD_DIR "/tests", NULL);
    ck_assert_ptr_nonnull (tests);
    char *dir = bn_path_exe_dir ();
    ck_assert_ptr_nonnull (dir);
    ck_assert_str_eq (dir, tests);
    free (dir);

    //  beside it, with the mode asked for
    char *self = bn_path_beside ("check_bn_path", X_OK);
    ck_assert_ptr_nonnull (self);
    char expected[PATH_MAX + 32];
    snprintf (expected, sizeof expected, "%s/check_bn_path", tests);
    ck_assert_str_eq (self, expected);
    free (self);
    ck_assert_ptr_null (bn_path_beside ("no-such-program", F_OK));
    ck_assert_ptr_null (bn_path_beside ("../share/banyan/banyan.conf", X_OK));

    //  a plugin by its bare name, in the plugin folder
    char *plugin = bn_path_plugin ("bn_plugin_example.so");
    char *built = realpath (BN_PLUGIN_DIR "/bn_plugin_example.so", NULL);
    ck_assert_ptr_nonnull (built);
    ck_assert_str_eq (plugin, built);
    free (built);
    free (plugin);
    //  a path as given; a bare name that is not there, left to dlopen
    const char *as_given[] = {"./bn_plugin_example.so",
                              "/opt/x/bn_plugin_example.so", "libm.so.6"};
    for (size_t i = 0; i < 3; i++) {
        plugin = bn_path_plugin (as_given[i]);
        ck_assert_str_eq (plugin, as_given[i]);
        free (plugin);
    }

    //  the annotated defaults, without ".." in their path
    char *defaults = bn_path_defaults ();
    ck_assert_ptr_nonnull (defaults);
    ck_assert_int_eq (access (defaults, R_OK), 0);
    ck_assert (strstr (defaults, "/share/banyan/banyan.conf"));
    ck_assert (!strstr (defaults, "/../"));
    free (defaults);
    free (tests);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_path");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_mkdir);
    tcase_add_test (tc, test_program);
    tcase_add_test (tc, test_installed);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

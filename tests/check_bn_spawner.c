/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_spawner: commands started by the helper process are this
    process's children, in their own group, with their standard
    descriptors and nothing else, their environment, folder and default
    signals; failures are reported, and a helper that is gone leaves the
    caller to spawn.  */
#define _GNU_SOURCE
#include "bn_shell.h"
#include "bn_spawner.h"

#include <check.h>
#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

//  A started command's output and status.
typedef struct {
    char out[4096];
    char err[4096];
    int status; //  waitpid's
} s_ran_t;

//  Read fd to its end into buf.
static void
s_read_all (int fd, char *buf, size_t size)
{
    size_t have = 0;
    ssize_t n;
    while ((n = read (fd, buf + have, size - 1 - have)) > 0 ||
           (n < 0 && errno == EINTR))
        if (n > 0)
            have += (size_t)n;
    buf[have] = '\0';
    close (fd);
}

//  Start command through spawner with input (NULL: /dev/null) and wait for
//  it as its parent; returns its pid (the run asserted to have started).
static pid_t
s_run (bn_spawner_t *spawner, const char *command, const char *cwd,
       char *const envp[], const char *input, s_ran_t *ran)
{
    memset (ran, 0, sizeof *ran);
    int out[2], err[2], in[2] = {-1, -1};
    ck_assert_int_eq (pipe2 (out, O_CLOEXEC), 0);
    ck_assert_int_eq (pipe2 (err, O_CLOEXEC), 0);
    if (input) {
        ck_assert_int_eq (pipe2 (in, O_CLOEXEC), 0);
        ck_assert_int_eq (write (in[1], input, strlen (input)),
                          (ssize_t)strlen (input));
        close (in[1]);
    }
    pid_t pid =
        bn_spawner_spawn (spawner, command, cwd, envp, in[0], out[1], err[1]);
    ck_assert_msg (pid > 0, "'%s' not started: %s", command, strerror (errno));
    if (input)
        close (in[0]);
    close (out[1]);
    close (err[1]);
    s_read_all (out[0], ran->out, sizeof ran->out);
    s_read_all (err[0], ran->err, sizeof ran->err);
    //  the command is this process's child
    ck_assert_int_eq (waitpid (pid, &ran->status, 0), pid);
    return pid;
}

//  Kill the helper and wait until it is gone.
static void
s_kill_helper (bn_spawner_t *spawner)
{
    pid_t helper = bn_spawner_pid (spawner);
    ck_assert_int_eq (kill (helper, SIGKILL), 0);
    ck_assert_int_eq (waitpid (helper, NULL, 0), helper);
}

START_TEST (test_child_of_caller)
{
    //  a descriptor open (and inheritable) when the helper was forked
    int leak[2];
    ck_assert_int_eq (pipe (leak), 0);
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    ck_assert_int_gt (bn_spawner_pid (spawner), 0);
    s_ran_t ran;
    //  (no pipeline, whose pipes the shell would hold while ls looks)
    s_run (spawner, "echo $PPID; ls /proc/$$/fd; echo oops >&2; exit 3", NULL,
           NULL, NULL, &ran);
    char expected[256];
    snprintf (expected, sizeof expected, "%d\n0\n1\n2\n", (int)getpid ());
    ck_assert_str_eq (ran.out, expected);
    ck_assert_str_eq (ran.err, "oops\n");
    ck_assert (WIFEXITED (ran.status));
    ck_assert_int_eq (WEXITSTATUS (ran.status), 3);
    close (leak[0]);
    close (leak[1]);
    bn_spawner_destroy (&spawner);
    ck_assert_ptr_null (spawner);
    bn_spawner_destroy (&spawner);
}
END_TEST

START_TEST (test_input_env_folder)
{
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    char *envp[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
    s_ran_t ran;
    s_run (spawner, "read line; echo \"$line|$FOO|$(pwd)|$HOME\"", "/tmp", envp,
           "hello\n", &ran);
    ck_assert_str_eq (ran.out, "hello|bar baz|/tmp|\n");
    //  with none given: this process's environment and folder
    setenv ("BN_SPAWNER_CHECK", "ours", 1);
    char here[4096];
    ck_assert_ptr_nonnull (getcwd (here, sizeof here));
    s_run (spawner, "echo \"$BN_SPAWNER_CHECK $(pwd)\"; cat", NULL, NULL, NULL,
           &ran);
    char expected[4200];
    snprintf (expected, sizeof expected, "ours %s\n", here);
    ck_assert_str_eq (ran.out, expected);
    unsetenv ("BN_SPAWNER_CHECK");
    bn_spawner_destroy (&spawner);
}
END_TEST

START_TEST (test_group_and_signals)
{
    //  what this process ignores and blocks, its commands do not
    signal (SIGINT, SIG_IGN);
    sigset_t blocked, old;
    sigemptyset (&blocked);
    sigaddset (&blocked, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &blocked, &old);
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    s_ran_t ran;
    s_run (spawner, "kill -INT $$; echo survived", NULL, NULL, NULL, &ran);
    ck_assert_str_eq (ran.out, "");
    ck_assert (WIFSIGNALED (ran.status));
    ck_assert_int_eq (WTERMSIG (ran.status), SIGINT);
    s_run (spawner, "kill -TERM $$; echo survived", NULL, NULL, NULL, &ran);
    ck_assert (WIFSIGNALED (ran.status));
    ck_assert_int_eq (WTERMSIG (ran.status), SIGTERM);
    signal (SIGINT, SIG_DFL);
    pthread_sigmask (SIG_SETMASK, &old, NULL);

    //  its own process group, which a signal to the group reaches
    int out[2];
    ck_assert_int_eq (pipe2 (out, O_CLOEXEC), 0);
    pid_t pid = bn_spawner_spawn (spawner, "sleep 30 & echo $!; wait", NULL,
                                  NULL, -1, out[1], out[1]);
    ck_assert_int_gt (pid, 0);
    close (out[1]);
    ck_assert_int_eq (getpgid (pid), pid);
    FILE *reader = fdopen (out[0], "r");
    int background = 0;
    ck_assert_int_eq (fscanf (reader, "%d", &background), 1);
    ck_assert_int_eq (getpgid (background), pid);
    ck_assert_int_eq (kill (-pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq (waitpid (pid, &status, 0), pid);
    ck_assert (WIFSIGNALED (status));
    fclose (reader);
    bn_spawner_destroy (&spawner);
}
END_TEST

START_TEST (test_failures)
{
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    int out[2];
    ck_assert_int_eq (pipe2 (out, O_CLOEXEC), 0);
    //  a folder that is not there: its errno, and nothing left to reap
    errno = 0;
    pid_t pid = bn_spawner_spawn (spawner, "true", "/no/such/folder", NULL, -1,
                                  out[1], out[1]);
    if (RUNNING_ON_VALGRIND) {
        //  valgrind runs the clone as a fork, whose errno the helper does
        //  not see: the shell it could not start exits 127
        int status = 0;
        ck_assert_int_gt (pid, 0);
        ck_assert_int_eq (waitpid (pid, &status, 0), pid);
        ck_assert_int_eq (WEXITSTATUS (status), 127);
    } else {
        ck_assert_int_eq (pid, -1);
        ck_assert_int_eq (errno, ENOENT);
        //  no child to reap: the helper is the one child left
        ck_assert_int_eq (waitpid (-1, NULL, WNOHANG), 0);
    }

    //  an environment too large for a request: the caller spawns, and the
    //  helper serves the next one
    size_t size = 300 * 1024;
    char *big = malloc (size + 1);
    ck_assert_ptr_nonnull (big);
    memset (big, 'x', size);
    memcpy (big, "BIG=", 4);
    big[size] = '\0';
    char *envp[] = {big, NULL};
    errno = 0;
    ck_assert_int_eq (
        bn_spawner_spawn (spawner, "true", NULL, envp, -1, out[1], out[1]), -1);
    ck_assert_int_eq (errno, ENOTCONN);
    free (big);
    close (out[0]);
    close (out[1]);
    s_ran_t ran;
    s_run (spawner, "echo still", NULL, NULL, NULL, &ran);
    ck_assert_str_eq (ran.out, "still\n");

    //  a helper that is gone: the caller spawns, from then on
    s_kill_helper (spawner);
    ck_assert_int_eq (pipe2 (out, O_CLOEXEC), 0);
    for (int i = 0; i < 2; i++) {
        errno = 0;
        ck_assert_int_eq (
            bn_spawner_spawn (spawner, "true", NULL, NULL, -1, out[1], out[1]),
            -1);
        ck_assert_int_eq (errno, ENOTCONN);
    }
    close (out[0]);
    close (out[1]);
    bn_spawner_destroy (&spawner);
    //  with no spawner at all, too
    errno = 0;
    ck_assert_int_eq (bn_spawner_spawn (NULL, "true", NULL, NULL, -1, 1, 2),
                      -1);
    ck_assert_int_eq (errno, ENOTCONN);
}
END_TEST

//  What a shell's callbacks saw.
typedef struct {
    char out[256];
    int exit_code; //  -1 until it exits
} s_seen_t;

static void
s_output (bn_shell_t *shell, const char *name, const char *text, size_t size,
          void *arg)
{
    s_seen_t *seen = (s_seen_t *)arg;
    strncat (seen->out, text, size);
}

static void
s_exit (bn_shell_t *shell, const bn_shell_status_t *status, void *arg)
{
    ((s_seen_t *)arg)->exit_code = status->exit_code;
}

static int
s_check_done (zloop_t *loop, int timer_id, void *arg)
{
    return ((s_seen_t *)arg)->exit_code >= 0 ? -1 : 0;
}

START_TEST (test_shell_falls_back)
{
    //  the shell of a process whose helper is gone starts its commands
    //  itself
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    s_kill_helper (spawner);
    bn_shell_use_spawner (spawner);
    s_seen_t seen = {"", -1};
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    bn_shell_t *shell = bn_shell_new (watch, "echo fallback; exit 4", NULL,
                                      NULL, 0, s_output, s_exit, &seen);
    ck_assert_ptr_nonnull (shell);
    zloop_timer (loop, 5, 2000, s_check_done, &seen);
    zloop_start (loop);
    ck_assert_str_eq (seen.out, "fallback\n");
    ck_assert_int_eq (seen.exit_code, 4);
    bn_shell_destroy (&shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
    bn_shell_use_spawner (NULL);
    bn_spawner_destroy (&spawner);
}
END_TEST

static void *
s_spawn_many (void *arg)
{
    bn_spawner_t *spawner = (bn_spawner_t *)arg;
    for (int i = 0; i < 20; i++) {
        char command[64], expected[64];
        snprintf (command, sizeof command, "echo %d-%lu", i,
                  (unsigned long)pthread_self ());
        snprintf (expected, sizeof expected, "%d-%lu\n", i,
                  (unsigned long)pthread_self ());
        s_ran_t ran;
        s_run (spawner, command, NULL, NULL, NULL, &ran);
        if (strcmp (ran.out, expected) != 0)
            return (void *)1;
    }
    return NULL;
}

START_TEST (test_threads)
{
    //  requests from several threads, each answered with its own command
    bn_spawner_t *spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (spawner);
    pthread_t threads[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq (
            pthread_create (&threads[i], NULL, s_spawn_many, spawner), 0);
    for (int i = 0; i < 3; i++) {
        void *failed = NULL;
        pthread_join (threads[i], &failed);
        ck_assert_ptr_null (failed);
    }
    bn_spawner_destroy (&spawner);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_spawner");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_child_of_caller);
    tcase_add_test (tc, test_input_env_folder);
    tcase_add_test (tc, test_group_and_signals);
    tcase_add_test (tc, test_failures);
    tcase_add_test (tc, test_shell_falls_back);
    tcase_add_test (tc, test_threads);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

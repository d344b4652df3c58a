/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_shell: asynchronous shell commands with streamed output, exit
    statuses, time limits and signals; every test twice, the commands
    started with posix_spawn and through a spawner (bn_spawner), as
    banyan-engine starts them.  */
#include "bn_rawtext.h"
#include "bn_shell.h"

#include <check.h>
#include <czmq.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  What one command did, as the callbacks saw it.
typedef struct {
    char out[8192];           //  stdout text, concatenated
    char err[8192];           //  stderr text, concatenated
    int nout;                 //  stdout callbacks
    int pieces_split;         //  pieces that end within a character
    bn_shell_status_t status; //  as reported on exit
    int exits;                //  exit callbacks
    int64_t first_output;     //  zclock_mono of the first output
    int64_t exited_at;        //  zclock_mono of the exit
    bn_shell_t *shell;        //  destroyed on exit
} s_run_t;

static void
s_output (bn_shell_t *shell, const char *name, const char *text, size_t size,
          void *arg)
{
    s_run_t *run = (s_run_t *)arg;
    char *dest = strcmp (name, "stdout") == 0 ? run->out : run->err;
    if (strcmp (name, "stdout") == 0)
        run->nout++;
    if (!run->first_output)
        run->first_output = zclock_mono ();
    for (size_t back = 1; back <= 3 && back <= size; back++) {
        unsigned char c = (unsigned char)text[size - back];
        if (c >= 0xC0 && bn_rawtext_char (text + size - back, back) == 0)
            run->pieces_split++;
        if (c < 0x80 || c >= 0xC0)
            break;
    }
    size_t have = strlen (dest);
    ck_assert_uint_lt (have + size, 8192);
    memcpy (dest + have, text, size);
    dest[have + size] = 0;
}

static void
s_exit (bn_shell_t *shell, const bn_shell_status_t *status, void *arg)
{
    s_run_t *run = (s_run_t *)arg;
    run->status = *status;
    run->exits++;
    run->exited_at = zclock_mono ();
    bn_shell_destroy (&run->shell);
}

static int
s_stop_when_done (zloop_t *loop, int timer_id, void *arg)
{
    s_run_t *run = (s_run_t *)arg;
    return run->exits ? -1 : 0;
}

static int
s_deadline (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

//  Run command to completion (bounded by 10 s) and return what happened.
static void
s_run (s_run_t *run, const char *command, const char *cwd, double limit)
{
    memset (run, 0, sizeof *run);
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    run->shell =
        bn_shell_new (watch, command, cwd, NULL, limit, s_output, s_exit, run);
    ck_assert_ptr_nonnull (run->shell);
    zloop_timer (loop, 5, 0, s_stop_when_done, run);
    zloop_timer (loop, 10000, 1, s_deadline, NULL);
    zloop_start (loop);
    bn_shell_destroy (&run->shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
    ck_assert_int_eq (run->exits, 1);
}

START_TEST (test_usage)
{
    s_run_t run;
    s_run (&run, "echo hello; echo oops >&2; exit 3", NULL, 0);
    ck_assert_str_eq (run.out, "hello\n");
    ck_assert_str_eq (run.err, "oops\n");
    ck_assert_int_eq (run.status.exit_code, 3);
    ck_assert_int_eq (run.status.signal, 0);
    ck_assert (!run.status.timed_out);
}
END_TEST

START_TEST (test_output_streams_while_running)
{
    s_run_t run;
    s_run (&run, "for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done", NULL,
           0);
    ck_assert_str_eq (run.out, "line1\nline2\nline3\nline4\nline5\n");
    ck_assert_int_eq (run.status.exit_code, 0);
    //  output arrived in pieces, long before the command ended
    ck_assert_int_ge (run.nout, 3);
    ck_assert_int_ge (run.exited_at - run.first_output, 300);
}
END_TEST

START_TEST (test_large_output_in_order)
{
    s_run_t run;
    //  more than a pipe buffer, checked by its tail
    s_run (&run, "seq 1 200000 | tail -c 60; seq 1 20000 >/dev/null", NULL, 0);
    ck_assert_int_eq (run.status.exit_code, 0);
    ck_assert_ptr_nonnull (strstr (run.out, "199999\n200000\n"));

    memset (&run, 0, sizeof run);
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    run.shell = bn_shell_new (watch, "seq 1 1000", NULL, NULL, 0, s_output,
                              s_exit, &run);
    zloop_timer (loop, 5, 0, s_stop_when_done, &run);
    zloop_timer (loop, 10000, 1, s_deadline, NULL);
    zloop_start (loop);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
    char expected[8192] = "";
    for (int i = 1; i <= 1000; i++)
        sprintf (expected + strlen (expected), "%d\n", i);
    ck_assert_str_eq (run.out, expected);
}
END_TEST

START_TEST (test_exit_codes_and_signals)
{
    s_run_t run;
    s_run (&run, "true", NULL, 0);
    ck_assert_int_eq (run.status.exit_code, 0);
    s_run (&run, "exit 255", NULL, 0);
    ck_assert_int_eq (run.status.exit_code, 255);
    s_run (&run, "kill -TERM $$", NULL, 0);
    ck_assert_int_eq (run.status.exit_code, -1);
    ck_assert_int_eq (run.status.signal, SIGTERM);
    ck_assert (!run.status.timed_out);
    s_run (&run, "no-such-command-xyz", NULL, 0);
    ck_assert_int_eq (run.status.exit_code, 127);
    ck_assert_ptr_nonnull (strstr (run.err, "not found"));
}
END_TEST

START_TEST (test_time_limit_kills_group)
{
    char marker[] = "/tmp/bn-shell-XXXXXX";
    int fd = mkstemp (marker);
    ck_assert_int_ge (fd, 0);
    close (fd);
    unlink (marker);
    s_run_t run;
    char command[256];
    //  the background child must die with the group, before it writes
    snprintf (command, sizeof command,
              "(sleep 1; touch %s) & echo started; sleep 30", marker);
    int64_t start = zclock_mono ();
    s_run (&run, command, NULL, 0.3);
    int64_t took = zclock_mono () - start;
    ck_assert (run.status.timed_out);
    ck_assert_int_eq (run.status.signal, SIGKILL);
    ck_assert_str_eq (run.out, "started\n");
    ck_assert_int_lt (took, 3000);
    zclock_sleep (1500);
    ck_assert_int_ne (access (marker, F_OK), 0);
}
END_TEST

START_TEST (test_working_dir_and_stdin)
{
    s_run_t run;
    s_run (&run, "pwd; cat; echo end", "/tmp", 0);
    //  stdin is /dev/null, so cat ends at once
    ck_assert_str_eq (run.out, "/tmp\nend\n");
    memset (&run, 0, sizeof run);
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    bn_shell_t *shell = bn_shell_new (watch, "true", "/no/such/folder", NULL, 0,
                                      s_output, s_exit, &run);
    ck_assert_ptr_null (shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

START_TEST (test_input)
{
    //  more input than a pipe holds, read at the command's pace
    s_run_t run;
    memset (&run, 0, sizeof run);
    size_t size = 200000;
    char *input = malloc (size);
    ck_assert_ptr_nonnull (input);
    for (size_t i = 0; i < size; i++)
        input[i] = i % 100 == 99 ? '\n' : 'x';
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    run.shell =
        bn_shell_new_input (watch, "sleep 0.1; cat | wc -c; cat | wc -c", NULL,
                            NULL, input, size, 0, s_output, s_exit, &run);
    free (input);
    ck_assert_ptr_nonnull (run.shell);
    zloop_timer (loop, 5, 0, s_stop_when_done, &run);
    zloop_timer (loop, 10000, 1, s_deadline, NULL);
    zloop_start (loop);
    bn_shell_destroy (&run.shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
    ck_assert_int_eq (run.exits, 1);
    //  the first cat reads it all, the second finds its end
    ck_assert_str_eq (run.out, "200000\n0\n");
    ck_assert_int_eq (run.status.exit_code, 0);
}
END_TEST

START_TEST (test_bytes_as_written)
{
    s_run_t run;
    //  a 3-byte character split across two writes, then bytes that are
    //  not UTF-8: no piece splits the character, and every byte comes as
    //  it was written
    s_run (&run, "printf '\\342\\202'; sleep 0.1; printf '\\254 \\377\\376\\n'",
           NULL, 0);
    ck_assert_str_eq (run.out, "\xE2\x82\xAC \xFF\xFE\n");
    ck_assert_int_eq (run.pieces_split, 0);
}
END_TEST

static int
s_send_signal (zloop_t *loop, int timer_id, void *arg)
{
    s_run_t *run = (s_run_t *)arg;
    ck_assert (bn_shell_running (run->shell));
    ck_assert_int_eq (bn_shell_signal (run->shell, SIGINT), 0);
    return 0;
}

START_TEST (test_signal_and_destroy)
{
    s_run_t run;
    memset (&run, 0, sizeof run);
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    run.shell =
        bn_shell_new (watch, "sleep 30", NULL, NULL, 0, s_output, s_exit, &run);
    ck_assert_int_gt (bn_shell_pid (run.shell), 0);
    zloop_timer (loop, 100, 1, s_send_signal, &run);
    zloop_timer (loop, 5, 0, s_stop_when_done, &run);
    zloop_timer (loop, 10000, 1, s_deadline, NULL);
    zloop_start (loop);
    ck_assert_int_eq (run.exits, 1);
    ck_assert_int_eq (run.status.signal, SIGINT);

    //  destroying a running command kills and reaps it
    bn_shell_t *shell =
        bn_shell_new (watch, "sleep 30", NULL, NULL, 0, s_output, s_exit, &run);
    pid_t pid = bn_shell_pid (shell);
    bn_shell_destroy (&shell);
    ck_assert_ptr_null (shell);
    ck_assert_int_ne (kill (pid, 0), 0);
    bn_shell_destroy (&shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
}
END_TEST

static int
s_end (zloop_t *loop, int timer_id, void *arg)
{
    s_run_t *run = (s_run_t *)arg;
    ck_assert_int_eq (bn_shell_end (run->shell, 0.3), 0);
    //  a second call changes nothing
    ck_assert_int_eq (bn_shell_end (run->shell, 0.3), 0);
    return 0;
}

//  Run command, end it after 100 ms with a grace of 0.3 s, and return
//  how long after the end it exited, in ms.
static int64_t
s_run_ended (s_run_t *run, const char *command)
{
    memset (run, 0, sizeof *run);
    zloop_t *loop = zloop_new ();
    bn_watch_t *watch = bn_watch_new (loop);
    run->shell =
        bn_shell_new (watch, command, NULL, NULL, 0, s_output, s_exit, run);
    ck_assert_ptr_nonnull (run->shell);
    zloop_timer (loop, 100, 1, s_end, run);
    zloop_timer (loop, 5, 0, s_stop_when_done, run);
    zloop_timer (loop, 10000, 1, s_deadline, NULL);
    int64_t start = zclock_mono ();
    zloop_start (loop);
    bn_shell_destroy (&run->shell);
    bn_watch_destroy (&watch);
    zloop_destroy (&loop);
    ck_assert_int_eq (run->exits, 1);
    ck_assert (run->status.ended);
    return run->exited_at - start - 100;
}

START_TEST (test_end_escalates)
{
    s_run_t run;
    //  SIGINT is enough for most commands
    int64_t took = s_run_ended (&run, "echo started; sleep 30");
    ck_assert_int_eq (run.status.signal, SIGINT);
    ck_assert_str_eq (run.out, "started\n");
    ck_assert_int_lt (took, 250);
    //  one that ignores SIGINT gets SIGTERM a grace later
    took = s_run_ended (&run, "trap '' INT; sleep 30");
    ck_assert_int_eq (run.status.signal, SIGTERM);
    ck_assert_int_ge (took, 250);
    ck_assert_int_lt (took, 550);
    //  and SIGKILL after another
    took = s_run_ended (&run, "trap '' INT TERM; sleep 30");
    ck_assert_int_eq (run.status.signal, SIGKILL);
    ck_assert_int_ge (took, 550);
    ck_assert_int_lt (took, 2000);

    //  what the shell left behind in its group goes with it
    char marker[] = "/tmp/bn-shell-XXXXXX";
    int fd = mkstemp (marker);
    ck_assert_int_ge (fd, 0);
    close (fd);
    unlink (marker);
    char command[256];
    snprintf (command, sizeof command,
              "(trap '' INT TERM; sleep 1; touch %s) & sleep 30", marker);
    took = s_run_ended (&run, command);
    ck_assert_int_eq (run.status.signal, SIGINT);
    zclock_sleep (1500);
    ck_assert_int_ne (access (marker, F_OK), 0);
}
END_TEST

//  The spawner of the "spawner" case, forked in each test's process (a
//  checked fixture): its commands are that process's children.
static bn_spawner_t *s_spawner;

static void
s_spawner_setup (void)
{
    s_spawner = bn_spawner_new ();
    ck_assert_ptr_nonnull (s_spawner);
    bn_shell_use_spawner (s_spawner);
}

static void
s_spawner_teardown (void)
{
    bn_shell_use_spawner (NULL);
    bn_spawner_destroy (&s_spawner);
}

static void
s_add_tests (TCase *tc)
{
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_output_streams_while_running);
    tcase_add_test (tc, test_large_output_in_order);
    tcase_add_test (tc, test_exit_codes_and_signals);
    tcase_add_test (tc, test_time_limit_kills_group);
    tcase_add_test (tc, test_working_dir_and_stdin);
    tcase_add_test (tc, test_input);
    tcase_add_test (tc, test_bytes_as_written);
    tcase_add_test (tc, test_signal_and_destroy);
    tcase_add_test (tc, test_end_escalates);
}

int
main (void)
{
    Suite *suite = suite_create ("bn_shell");
    TCase *tc = tcase_create ("posix_spawn");
    tcase_set_timeout (tc, 30);
    s_add_tests (tc);
    suite_add_tcase (suite, tc);
    tc = tcase_create ("spawner");
    tcase_set_timeout (tc, 30);
    tcase_add_checked_fixture (tc, s_spawner_setup, s_spawner_teardown);
    s_add_tests (tc);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

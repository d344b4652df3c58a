/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_hostscript: the host script run here, as a host runs it under
    sshd (sh -c SCRIPT banyan-host RANK in a process group of its own, the
    connection info on its standard input), with stand-in engines: it
    starts the host's engines with the info, reports them, reports an
    engine that ends, and ends them all when its input closes or it gets
    SIGTERM, leaving no process and no file behind; with a host node, it
    starts the node and its engines again when the node dies.  */
#define _GNU_SOURCE //  pipe2
#include "../bn_testdir.h"
#include "bn_hostscript.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_INFO "{\"key\": \"0123\", \"interface\": \"tcp://198.18.0.254\"}"

static char s_dir[] = "/tmp/check_bn_hostscript.XXXXXX";
static char s_engine[300]; //  The stand-in engine
static char s_node[300];   //  The stand-in host node

//  The stand-in engine: writes its arguments and the info it was given to
//  <dir>/engine.<pid>, then sleeps until killed; with --id 4 it ends at
//  once with status 7. As a stock engine (--file=F) it writes F's text.
static const char *s_engine_text =
    "#!/bin/sh\n"
    "case \"$*\" in *--file=*) info=$(cat \"${*##*--file=}\");; "
    "*) info=$BANYAN_CONNECTION_INFO;; esac\n"
    "echo \"$info|$*\" > \"${0%/*}/engine.$$\"\n"
    "case \"$*\" in *\"--id 4 \"*) exit 7;; esac\n"
    "exec sleep 300\n";

//  The stand-in host node: writes the info it was given and its arguments
//  to <dir>/node.<pid> and an engine file into its --profile-dir, then
//  sleeps until killed.
static const char *s_node_text =
    "#!/bin/sh\n"
    "d= a=$*\n"
    "while [ $# -gt 0 ]; do case $1 in --profile-dir) d=$2; shift;; esac; "
    "shift; done\n"
    "echo \"$BANYAN_CONNECTION_INFO|$a\" > \"${0%/*}/node.$$\"\n"
    "mkdir -p \"$d/security\" && echo {} > "
    "\"$d/security/ipcontroller-engine.json\"\n"
    "exec sleep 300\n";

static void
s_write_program (char *path, size_t size, const char *name, const char *text)
{
    snprintf (path, size, "%s/%s", s_dir, name);
    FILE *file = fopen (path, "w");
    ck_assert_ptr_nonnull (file);
    fputs (text, file);
    fclose (file);
    chmod (path, 0755);
}

static void
s_setup (void)
{
    strcpy (s_dir, "/tmp/check_bn_hostscript.XXXXXX");
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
    s_write_program (s_engine, sizeof s_engine, "fake-engine", s_engine_text);
    s_write_program (s_node, sizeof s_node, "fake-node", s_node_text);
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
}

typedef struct {
    pid_t pid;  //  The host script, leader of its own group
    int in_fd;  //  Its standard input
    int out_fd; //  Its standard output
    char buffer[8192];
    size_t size;
} s_host_t;

//  Run the host script of plan for rank as sshd would.
static s_host_t
s_run (bn_launch_plan_t *plan, int rank)
{
    char error[256];
    ck_assert_msg (bn_launch_ssh.prepare (plan, error, sizeof error) == 0, "%s",
                   error);
    char *script = bn_hostscript (plan, "$1", BN_LAUNCH_INFO_STDIN);
    ck_assert_ptr_nonnull (script);
    int in[2], out[2];
    ck_assert_int_eq (pipe2 (in, O_CLOEXEC), 0);
    ck_assert_int_eq (pipe2 (out, O_CLOEXEC), 0);
    char rank_text[16];
    snprintf (rank_text, sizeof rank_text, "%d", rank);
    pid_t pid = fork ();
    ck_assert_int_ge (pid, 0);
    if (pid == 0) {
        setsid ();
        dup2 (in[0], STDIN_FILENO);
        dup2 (out[1], STDOUT_FILENO);
        execl ("/bin/sh", "sh", "-c", script, "banyan-host", rank_text,
               (char *)NULL);
        _exit (127);
    }
    close (in[0]);
    close (out[1]);
    free (script);
    s_host_t host = {.pid = pid, .in_fd = in[1], .out_fd = out[0]};
    char line[sizeof S_INFO + 1];
    snprintf (line, sizeof line, "%s\n", S_INFO);
    ck_assert_int_eq (write (host.in_fd, line, strlen (line)),
                      (int)strlen (line));
    return host;
}

//  The host script's next line, within 10 s; NULL at its end.
static char *
s_line (s_host_t *host)
{
    int64_t deadline = zclock_mono () + 10000;
    while (true) {
        char *newline = memchr (host->buffer, '\n', host->size);
        if (newline) {
            size_t length = (size_t)(newline - host->buffer);
            char *line = strndup (host->buffer, length);
            memmove (host->buffer, newline + 1, host->size - length - 1);
            host->size -= length + 1;
            return line;
        }
        int64_t left = deadline - zclock_mono ();
        ck_assert_msg (left > 0, "the host script said nothing for 10 s");
        struct pollfd item = {host->out_fd, POLLIN, 0};
        if (poll (&item, 1, (int)left) <= 0)
            continue;
        ssize_t got = read (host->out_fd, host->buffer + host->size,
                            sizeof host->buffer - host->size - 1);
        if (got <= 0)
            return NULL;
        host->size += (size_t)got;
    }
}

//  The pids of a report's "pids=" list.
static int
s_pids (const char *list, pid_t *pids, int max)
{
    int count = 0;
    const char *c = list;
    while (*c && count < max) {
        pids[count++] = (pid_t)strtol (c, (char **)&c, 10);
        if (*c == ',')
            c++;
    }
    return count;
}

//  What stand-in what ("engine", "node") pid wrote: "<info>|<arguments>".
static char *
s_said (const char *what, pid_t pid)
{
    char path[400];
    snprintf (path, sizeof path, "%s/%s.%d", s_dir, what, (int)pid);
    int64_t deadline = zclock_mono () + 10000;
    while (access (path, R_OK) != 0) {
        ck_assert_msg (zclock_mono () < deadline, "no %s", path);
        zclock_sleep (10);
    }
    char *text = NULL;
    //  Written in one go by echo; read until the line is whole
    while (!text || !strchr (text, '\n')) {
        free (text);
        text = NULL;
        FILE *file = fopen (path, "r");
        size_t size = 0;
        if (file) {
            if (getline (&text, &size, file) < 0) {
                free (text);
                text = NULL;
            }
            fclose (file);
        }
        ck_assert_msg (zclock_mono () < deadline, "%s stays empty", path);
        if (!text || !strchr (text, '\n'))
            zclock_sleep (10);
    }
    text[strcspn (text, "\n")] = 0;
    return text;
}

static char *
s_engine_said (pid_t pid)
{
    return s_said ("engine", pid);
}

//  The host script ends within 10 s with status code, and nothing of its
//  process group is left.
static void
s_expect_exit (s_host_t *host, int code)
{
    int status = 0;
    int64_t deadline = zclock_mono () + 10000;
    pid_t done;
    while ((done = waitpid (host->pid, &status, WNOHANG)) == 0) {
        ck_assert_msg (zclock_mono () < deadline,
                       "the host script runs 10 s after it was told to end");
        zclock_sleep (10);
    }
    ck_assert_int_eq (done, host->pid);
    ck_assert_msg (WIFEXITED (status) && WEXITSTATUS (status) == code,
                   "the host script ended with wait status %d", status);
    while (kill (-host->pid, 0) == 0) {
        ck_assert_msg (zclock_mono () < deadline,
                       "processes of the host script's group are left");
        zclock_sleep (10);
    }
    ck_assert_int_eq (errno, ESRCH);
    close (host->in_fd);
    close (host->out_fd);
}

static void
s_expect_end (s_host_t *host)
{
    s_expect_exit (host, 0);
}

//  Check the report of host rank 1 of 5 engines, 3 a host: engines 3-4,
//  one process each, every engine given the info and its ids.
static void
s_expect_report (s_host_t *host, pid_t *pids)
{
    char *line = s_line (host);
    ck_assert_ptr_nonnull (line);
    bn_hostscript_report_t report;
    char copy[512];
    snprintf (copy, sizeof copy, "%s", line);
    ck_assert_msg (bn_hostscript_parse (copy, &report) == 0, "%s", line);
    char me[256];
    gethostname (me, sizeof me);
    ck_assert_str_eq (report.host, me);
    ck_assert_int_eq (report.rank, 1);
    ck_assert_int_eq (report.pgid, host->pid);
    ck_assert_int_eq (report.first, 3);
    ck_assert_int_eq (report.count, 2);
    ck_assert_int_eq (s_pids (report.pids, pids, 4), 2);
    free (line);
}

START_TEST (test_usage)
{
    //  Host 1 of `-n 5 --hosts a,b -k 1`: engines 3 and 4
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "a");
    zlist_append (hosts, "b");
    bn_launch_plan_t plan = {.profile_dir = s_dir,
                             .cluster_id = "",
                             .n = 5,
                             .per_process = 1,
                             .hosts = hosts,
                             .per_host = 3,
                             .engine = s_engine,
                             .log_level = "warn"};
    s_host_t host = s_run (&plan, 1);
    pid_t pids[4];
    s_expect_report (&host, pids);
    char *said = s_engine_said (pids[0]);
    ck_assert_str_eq (said, S_INFO "|--count 1 --id 3 --log-level warn");
    free (said);

    //  The engine with id 4 ends at once: reported with its status
    char *line = s_line (&host);
    char expected[400], me[256];
    gethostname (me, sizeof me);
    snprintf (expected, sizeof expected, "banyan-exit host=%s pid=%d status=7",
              me, (int)pids[1]);
    ck_assert_str_eq (line, expected);
    free (line);
    ck_assert_int_eq (kill (pids[0], 0), 0);

    //  The session's end: the other engine is ended, and so is the script
    close (host.in_fd);
    host.in_fd = open ("/dev/null", O_RDONLY);
    line = s_line (&host);
    snprintf (expected, sizeof expected,
              "banyan-exit host=%s pid=%d status=143", me, (int)pids[0]);
    ck_assert_str_eq (line, expected);
    free (line);
    ck_assert_ptr_null (s_line (&host));
    s_expect_end (&host);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_sigterm)
{
    //  `cluster stop` over ssh: SIGTERM to the script's process group
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "a");
    zlist_append (hosts, "b");
    bn_launch_plan_t plan = {.profile_dir = s_dir,
                             .cluster_id = "",
                             .n = 5,
                             .hosts = hosts,
                             .per_process = 2,
                             .per_host = 3,
                             .engine = s_engine,
                             .log_level = "info"};
    s_host_t host = s_run (&plan, 1);
    pid_t pids[4];
    char *line = s_line (&host);
    bn_hostscript_report_t report;
    ck_assert_int_eq (bn_hostscript_parse (line, &report), 0);
    ck_assert_int_eq (s_pids (report.pids, pids, 4), 1);
    char *said = s_engine_said (pids[0]);
    ck_assert_str_eq (said, S_INFO "|--count 2 --id 3 --log-level info");
    free (said);
    free (line);
    ck_assert_int_eq (kill (-host.pid, SIGTERM), 0);
    line = s_line (&host);
    ck_assert_ptr_nonnull (strstr (line, "status=143"));
    free (line);
    ck_assert_ptr_null (s_line (&host));
    s_expect_end (&host);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_stock_engines)
{
    //  --engine-cmd: one stock engine a process, each given the info as
    //  a private file, which is gone once they are
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "a");
    bn_launch_plan_t plan = {.profile_dir = s_dir,
                             .cluster_id = "",
                             .n = 2,
                             .hosts = hosts,
                             .engine = s_engine,
                             .engine_cmd = s_engine,
                             .log_level = "warn"};
    s_host_t host = s_run (&plan, 0);
    char *line = s_line (&host);
    bn_hostscript_report_t report;
    ck_assert_int_eq (bn_hostscript_parse (line, &report), 0);
    pid_t pids[4];
    ck_assert_int_eq (s_pids (report.pids, pids, 4), 2);
    char *said = s_engine_said (pids[1]);
    char *bar = strchr (said, '|');
    ck_assert_ptr_nonnull (bar);
    *bar = 0;
    ck_assert_str_eq (said, S_INFO);
    ck_assert_str_eq (bar + 1, strstr (bar + 1, "--file="));
    const char *file = bar + 1 + strlen ("--file=");
    struct stat info;
    ck_assert_int_eq (stat (file, &info), 0);
    char folder[300];
    snprintf (folder, sizeof folder, "%.*s", (int)(strrchr (file, '/') - file),
              file);
    ck_assert_int_eq (stat (folder, &info), 0);
    ck_assert_int_eq (info.st_mode & 0077, 0);
    char *copy = strdup (file);
    free (said);
    free (line);
    close (host.in_fd);
    host.in_fd = open ("/dev/null", O_RDONLY);
    while ((line = s_line (&host)))
        free (line);
    s_expect_end (&host);
    ck_assert_int_eq (access (copy, F_OK), -1);
    ck_assert_int_eq (access (folder, F_OK), -1);
    free (copy);
    zlist_destroy (&hosts);
}
END_TEST

//  The next line is "banyan-exit host=<me> pid=<pid> status=<status>".
static void
s_expect_exit_line (s_host_t *host, pid_t pid, int status)
{
    char *line = s_line (host);
    char expected[400], me[256];
    gethostname (me, sizeof me);
    snprintf (expected, sizeof expected, "banyan-exit host=%s pid=%d status=%d",
              me, (int)pid, status);
    ck_assert_ptr_nonnull (line);
    ck_assert_str_eq (line, expected);
    free (line);
}

//  The next line is a report of engines 0-1 in two processes (pids) behind
//  a host node, the restart'th start again; returns the node's pid.
static pid_t
s_expect_node_report (s_host_t *host, int restart, pid_t *pids)
{
    char *line = s_line (host);
    ck_assert_ptr_nonnull (line);
    bn_hostscript_report_t report;
    char copy[512];
    snprintf (copy, sizeof copy, "%s", line);
    ck_assert_msg (bn_hostscript_parse (copy, &report) == 0, "%s", line);
    ck_assert_int_eq (report.restart, restart);
    ck_assert_int_eq (report.first, 0);
    ck_assert_int_eq (report.count, 2);
    ck_assert_int_eq (s_pids (report.pids, pids, 4), 2);
    ck_assert_int_gt (report.node, 0);
    //  the node has the info and the plan's port range, the engines its
    //  file and their ids only
    char *said = s_said ("node", report.node);
    ck_assert_msg (strncmp (said, S_INFO "|--host --profile-dir ",
                            strlen (S_INFO "|--host --profile-dir ")) == 0 &&
                       strstr (said, " --ports 63700-63799 --log-level warn"),
                   "%s", said);
    free (said);
    for (int index = 0; index < 2; index++) {
        said = s_engine_said (pids[index]);
        char ids[64];
        snprintf (ids, sizeof ids, "--count 1 --id %d --log-level", index);
        ck_assert_msg (*said == '|' && strstr (said, ids), "%s", said);
        free (said);
    }
    free (line);
    return report.node;
}

START_TEST (test_node_restart)
{
    //  --host-node: the node killed, its engines are ended and all start
    //  again with the same ids (the node with the same --ports); killed
    //  again within 10 s, the script gives up, ends the engines and exits
    //  with status 3
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "a");
    bn_launch_plan_t plan = {.profile_dir = s_dir,
                             .cluster_id = "",
                             .n = 2,
                             .per_process = 1,
                             .hosts = hosts,
                             .host_node = true,
                             .ports = "63700-63799",
                             .engine = s_engine,
                             .scheduler = s_node,
                             .log_level = "warn"};
    s_host_t host = s_run (&plan, 0);
    pid_t pids[4], again[4];
    pid_t node = s_expect_node_report (&host, 0, pids);
    ck_assert_int_eq (kill (node, SIGKILL), 0);
    s_expect_exit_line (&host, node, 128 + SIGKILL);
    s_expect_exit_line (&host, pids[0], 128 + SIGTERM);
    s_expect_exit_line (&host, pids[1], 128 + SIGTERM);
    pid_t second = s_expect_node_report (&host, 1, again);
    ck_assert_int_ne (second, node);
    ck_assert_int_ne (again[0], pids[0]);

    ck_assert_int_eq (kill (second, SIGKILL), 0);
    s_expect_exit_line (&host, second, 128 + SIGKILL);
    s_expect_exit_line (&host, again[0], 128 + SIGTERM);
    s_expect_exit_line (&host, again[1], 128 + SIGTERM);
    ck_assert_ptr_null (s_line (&host));
    //  its session ends with it, and with that its input watcher
    close (host.in_fd);
    host.in_fd = open ("/dev/null", O_RDONLY);
    s_expect_exit (&host, 3);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_no_info)
{
    //  A session that brings no connection info starts nothing
    zlist_t *hosts = zlist_new ();
    zlist_append (hosts, "a");
    bn_launch_plan_t plan = {.profile_dir = s_dir,
                             .cluster_id = "",
                             .n = 1,
                             .hosts = hosts,
                             .engine = s_engine,
                             .log_level = "warn"};
    char error[256];
    ck_assert_int_eq (bn_launch_ssh.prepare (&plan, error, sizeof error), 0);
    char *script = bn_hostscript (&plan, "$1", BN_LAUNCH_INFO_STDIN);
    char *command = zsys_sprintf ("sh -c '%s' banyan-host 0 </dev/null "
                                  "2>&1",
                                  script);
    FILE *out = popen (command, "r");
    char text[256] = "";
    ck_assert_ptr_nonnull (fgets (text, sizeof text, out));
    int status = pclose (out);
    char me[256], expected[300];
    gethostname (me, sizeof me);
    snprintf (expected, sizeof expected,
              "banyan-host: no connection info on %s\n", me);
    ck_assert_str_eq (text, expected);
    ck_assert (WIFEXITED (status) && WEXITSTATUS (status) == 3);
    free (command);
    free (script);
    zlist_destroy (&hosts);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_hostscript");
    TCase *tc = tcase_create ("hostscript");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_sigterm);
    tcase_add_test (tc, test_stock_engines);
    tcase_add_test (tc, test_no_info);
    tcase_add_test (tc, test_node_restart);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_treeproc: the process-mode supervisor against a stand-in node
    program (this test binary run with --node): start and port reports,
    the key kept off command lines, a killed node reported to its parent
    and restarted on the same endpoint, no process left behind.  */
#include <check.h>
#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bn_nodelink.h"
#include "bn_treeproc.h"

#define T_TIMEOUT 5000
#define T_KEY "0123456789abcdef-test-key"

static char s_self[PATH_MAX]; //  This program, the stand-in

//  --------------------------------------------------------------------------
//  The stand-in node: binds a ROUTER per --bind, answers READY, then serves
//  the test's commands until its link ends.

static int
s_stand_in (int argc, char **argv)
{
    int fd = -1;
    const char *binds[8];
    size_t nbinds = 0;
    bool exit_early = false, silent = false;
    for (int i = 1; i < argc; i++) {
        if (streq (argv[i], "--control-fd") && i + 1 < argc)
            fd = atoi (argv[++i]);
        else if (streq (argv[i], "--bind") && i + 1 < argc && nbinds < 8)
            binds[nbinds++] = argv[++i];
        else if (streq (argv[i], "--exit-early"))
            exit_early = true;
        else if (streq (argv[i], "--silent"))
            silent = true;
    }
    if (fd < 0 || exit_early)
        return 3;
    zsys_set_linger (0);
    bn_nodelink_t *link = bn_nodelink_new (fd);
    bool eof = false;
    zmsg_t *msg = bn_nodelink_recv (link, T_TIMEOUT, &eof);
    char *command = msg ? zmsg_popstr (msg) : NULL;
    char *key = msg ? zmsg_popstr (msg) : NULL;
    zmsg_destroy (&msg);
    if (!command || !streq (command, "KEY") || !key)
        return 4;
    zstr_free (&command);
    if (silent) {
        //  never ready: wait for the end of the link
        while (!eof) {
            msg = bn_nodelink_recv (link, -1, &eof);
            zmsg_destroy (&msg);
        }
        bn_nodelink_destroy (&link);
        zstr_free (&key);
        return 0;
    }
    zsock_t *socks[8];
    zmsg_t *ready = zmsg_new ();
    zmsg_addstr (ready, "READY");
    for (size_t i = 0; i < nbinds; i++) {
        char *name = strdup (binds[i]);
        char *eq = strchr (name, '=');
        *eq = 0;
        socks[i] = zsock_new (ZMQ_ROUTER);
        if (zsock_bind (socks[i], "%s", eq + 1) < 0)
            return 5;
        char *endpoint = zsock_last_endpoint (socks[i]);
        zmsg_addstr (ready, name);
        zmsg_addstr (ready, endpoint);
        zstr_free (&endpoint);
        free (name);
    }
    bn_nodelink_send (link, &ready);
    while (true) {
        msg = bn_nodelink_recv (link, -1, &eof);
        if (eof)
            break;
        if (!msg)
            continue;
        command = zmsg_popstr (msg);
        if (streq (command, "KEY?"))
            bn_nodelink_sendx (link, "KEY", key, NULL);
        else if (streq (command, "CHILD_LOST")) {
            char *index = zmsg_popstr (msg);
            bn_nodelink_sendx (link, "GOT_CHILD_LOST", index, NULL);
            zstr_free (&index);
        } else
            bn_nodelink_sendx (link, "ECHO", command, NULL);
        zstr_free (&command);
        zmsg_destroy (&msg);
    }
    for (size_t i = 0; i < nbinds; i++)
        zsock_destroy (&socks[i]);
    bn_nodelink_destroy (&link);
    zstr_free (&key);
    return 0;
}

//  --------------------------------------------------------------------------
//  What the supervisor reported, in order, as "<node> <event> <frames...>".

typedef struct {
    zlist_t *events;
    zloop_t *loop;
    const char *wanted; //  Stop the loop at an event starting with this
} t_events_t;

static void
s_handler (void *arg, size_t node, const char *event, zmsg_t *msg)
{
    t_events_t *self = (t_events_t *)arg;
    char text[512];
    int len = snprintf (text, sizeof text, "%zu %s", node, event);
    for (zframe_t *frame = zmsg_first (msg); frame && len < 400;
         frame = zmsg_next (msg))
        len += snprintf (text + len, sizeof text - (size_t)len, " %.*s",
                         (int)zframe_size (frame), zframe_data (frame));
    zlist_append (self->events, text);
}

static int
s_check (zloop_t *loop, int timer_id, void *arg)
{
    t_events_t *self = (t_events_t *)arg;
    for (char *event = (char *)zlist_first (self->events); event;
         event = (char *)zlist_next (self->events))
        if (strncmp (event, self->wanted, strlen (self->wanted)) == 0)
            return -1;
    return 0;
}

static int
s_give_up (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

//  Run the loop until an event starting with wanted arrived (true) or
//  T_TIMEOUT passed (false).
static bool
s_wait_event (t_events_t *self, const char *wanted)
{
    self->wanted = wanted;
    int check = zloop_timer (self->loop, 5, 0, s_check, self);
    int give_up = zloop_timer (self->loop, T_TIMEOUT, 1, s_give_up, self);
    if (s_check (self->loop, 0, self) == 0)
        zloop_start (self->loop);
    zloop_timer_end (self->loop, check);
    zloop_timer_end (self->loop, give_up);
    return s_check (self->loop, 0, self) == -1;
}

static t_events_t *
s_events_new (void)
{
    t_events_t *self = calloc (1, sizeof *self);
    self->events = zlist_new ();
    zlist_autofree (self->events);
    self->loop = zloop_new ();
    return self;
}

static void
s_events_destroy (t_events_t **self_p)
{
    zlist_destroy (&(*self_p)->events);
    zloop_destroy (&(*self_p)->loop);
    free (*self_p);
    *self_p = NULL;
}

//  A tree of three stand-ins: 0 is the root, 1 and 2 its children; each
//  binds "up" on tcp and node 0 also "down" on ipc in the private folder.
static bn_treeproc_t *
s_tree_new (t_events_t *events)
{
    bn_treeproc_t *tree = bn_treeproc_new (s_self, T_KEY, 3, NULL);
    ck_assert_ptr_nonnull (tree);
    const char *args[] = {"--stand-in", NULL};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq (bn_treeproc_set_node (tree, i, i == 0 ? -1 : 0, args),
                          0);
        ck_assert_int_eq (
            bn_treeproc_add_bind (tree, i, "up", "tcp://127.0.0.1:0"), 0);
    }
    char ipc[300];
    snprintf (ipc, sizeof ipc, "ipc://%s/0.ipc", bn_treeproc_dir (tree));
    ck_assert_int_eq (bn_treeproc_add_bind (tree, 0, "down", ipc), 0);
    if (events)
        bn_treeproc_set_handler (tree, s_handler, events);
    return tree;
}

//  True when pid has ended and waits to be reaped.
static bool
s_zombie (pid_t pid)
{
    char path[64], text[256] = "";
    snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return false;
    size_t size = fread (text, 1, sizeof text - 1, file);
    fclose (file);
    text[size] = 0;
    char *close = strrchr (text, ')');
    return close && close[1] == ' ' && close[2] == 'Z';
}

static bool
s_gone (pid_t pid)
{
    return kill (pid, 0) != 0 && errno == ESRCH;
}

START_TEST (test_usage)
{
    t_events_t *events = s_events_new ();
    bn_treeproc_t *tree = s_tree_new (events);
    ck_assert_int_eq (bn_treeproc_start (tree), 0);
    ck_assert_int_eq (bn_treeproc_attach (tree, events->loop), 0);
    //  every node reported the endpoints it bound
    for (size_t i = 0; i < 3; i++) {
        ck_assert (bn_treeproc_ready (tree, i));
        ck_assert_int_gt (bn_treeproc_pid (tree, i), 0);
        const char *up = bn_treeproc_endpoint (tree, i, "up");
        ck_assert_ptr_nonnull (up);
        ck_assert_str_eq (bn_treeproc_endpoint (tree, i, "up"), up);
        ck_assert (strncmp (up, "tcp://127.0.0.1:", 16) == 0);
        ck_assert_int_gt (atoi (up + 16), 0);
    }
    ck_assert_ptr_nonnull (bn_treeproc_endpoint (tree, 0, "down"));
    ck_assert_ptr_null (bn_treeproc_endpoint (tree, 1, "down"));
    //  the key came through the link, and is on no command line
    ck_assert_int_eq (bn_treeproc_sendx (tree, 2, "KEY?", NULL), 0);
    ck_assert (s_wait_event (events, "2 MESSAGE KEY " T_KEY));
    for (size_t i = 0; i < 3; i++) {
        char path[64];
        snprintf (path, sizeof path, "/proc/%d/cmdline",
                  (int)bn_treeproc_pid (tree, i));
        FILE *file = fopen (path, "r");
        ck_assert_ptr_nonnull (file);
        char cmdline[4096];
        size_t size = fread (cmdline, 1, sizeof cmdline - 1, file);
        fclose (file);
        for (size_t c = 0; c < size; c++)
            if (!cmdline[c])
                cmdline[c] = ' ';
        cmdline[size] = 0;
        ck_assert_ptr_nonnull (strstr (cmdline, "--node"));
        ck_assert_ptr_null (strstr (cmdline, T_KEY));
    }
    json_t *stats = bn_treeproc_stats (tree);
    ck_assert_str_eq (json_string_value (json_object_get (stats, "mode")),
                      "processes");
    json_decref (stats);
    pid_t pids[3];
    for (size_t i = 0; i < 3; i++)
        pids[i] = bn_treeproc_pid (tree, i);
    bn_treeproc_destroy (&tree);
    ck_assert_ptr_null (tree);
    for (size_t i = 0; i < 3; i++)
        ck_assert (s_gone (pids[i]));
    s_events_destroy (&events);
}
END_TEST

START_TEST (test_call)
{
    t_events_t *events = s_events_new ();
    bn_treeproc_t *tree = s_tree_new (events);
    ck_assert_int_eq (bn_treeproc_start (tree), 0);
    ck_assert_int_eq (bn_treeproc_attach (tree, events->loop), 0);
    //  the answer ends the call; it is not reported
    zmsg_t *msg = zmsg_new (), *reply = NULL;
    zmsg_addstr (msg, "PING");
    ck_assert_int_eq (
        bn_treeproc_call (tree, 1, &msg, "ECHO", T_TIMEOUT, &reply), 0);
    ck_assert_ptr_nonnull (reply);
    ck_assert (zframe_streq (zmsg_last (reply), "PING"));
    zmsg_destroy (&reply);
    ck_assert_ptr_null (msg);
    //  what comes meanwhile is reported; no answer: -1 after the timeout
    msg = zmsg_new ();
    zmsg_addstr (msg, "CHILD_LOST");
    zmsg_addstr (msg, "7");
    zlist_purge (events->events);
    ck_assert_int_eq (bn_treeproc_call (tree, 0, &msg, "NEVER", 100, NULL), -1);
    ck_assert_str_eq ((char *)zlist_first (events->events),
                      "0 MESSAGE GOT_CHILD_LOST 7");
    ck_assert (bn_treeproc_ready (tree, 0));
    //  a node whose process ended (the loop has not seen it yet): -1,
    //  and the loss is handled as the loop would
    pid_t old = bn_treeproc_pid (tree, 2);
    ck_assert_int_eq (kill (old, SIGKILL), 0);
    int64_t give_up = zclock_mono () + T_TIMEOUT;
    while (!s_zombie (old)) {
        ck_assert (zclock_mono () < give_up);
        zclock_sleep (1);
    }
    zlist_purge (events->events);
    msg = zmsg_new ();
    zmsg_addstr (msg, "PING");
    ck_assert_int_eq (bn_treeproc_call (tree, 2, &msg, "ECHO", T_TIMEOUT, NULL),
                      -1);
    ck_assert_str_eq ((char *)zlist_first (events->events),
                      "2 LOST was killed by signal 9 (Killed)");
    //  restarted at once, and not ready until its READY is read: -1 at once
    ck_assert (!bn_treeproc_ready (tree, 2));
    ck_assert_int_gt (bn_treeproc_pid (tree, 2), 0);
    msg = zmsg_new ();
    zmsg_addstr (msg, "PING");
    ck_assert_int_eq (bn_treeproc_call (tree, 2, &msg, "ECHO", T_TIMEOUT, NULL),
                      -1);
    ck_assert (s_wait_event (events, "2 READY"));
    zmsg_destroy (&msg);
    bn_treeproc_destroy (&tree);
    s_events_destroy (&events);
}
END_TEST

START_TEST (test_killed_node_restarts)
{
    t_events_t *events = s_events_new ();
    bn_treeproc_t *tree = s_tree_new (events);
    ck_assert_int_eq (bn_treeproc_start (tree), 0);
    ck_assert_int_eq (bn_treeproc_attach (tree, events->loop), 0);
    char *up = strdup (bn_treeproc_endpoint (tree, 1, "up"));
    pid_t old = bn_treeproc_pid (tree, 1);
    zlist_purge (events->events);
    ck_assert_int_eq (kill (old, SIGKILL), 0);
    //  reported, its parent told (node 1 is its first child), started
    //  again on the same port
    ck_assert (s_wait_event (events, "1 LOST was killed by signal 9"));
    ck_assert (s_wait_event (events, "0 MESSAGE GOT_CHILD_LOST 0"));
    ck_assert (s_wait_event (events, "1 READY"));
    ck_assert (bn_treeproc_ready (tree, 1));
    ck_assert_int_ne (bn_treeproc_pid (tree, 1), old);
    ck_assert_str_eq (bn_treeproc_endpoint (tree, 1, "up"), up);
    ck_assert (s_gone (old));
    //  the new process got the key and answers
    ck_assert_int_eq (bn_treeproc_sendx (tree, 1, "KEY?", NULL), 0);
    ck_assert (s_wait_event (events, "1 MESSAGE KEY " T_KEY));
    //  the root has no parent to tell; it comes back on its ipc endpoint
    char *down = strdup (bn_treeproc_endpoint (tree, 0, "down"));
    zlist_purge (events->events);
    ck_assert_int_eq (kill (bn_treeproc_pid (tree, 0), SIGKILL), 0);
    ck_assert (s_wait_event (events, "0 READY"));
    ck_assert_str_eq (bn_treeproc_endpoint (tree, 0, "down"), down);
    json_t *stats = bn_treeproc_stats (tree);
    json_t *nodes = json_object_get (stats, "nodes");
    ck_assert_int_eq (json_integer_value (json_object_get (
                          json_array_get (nodes, 1), "restarts")),
                      1);
    json_decref (stats);
    free (up);
    free (down);
    bn_treeproc_destroy (&tree);
    s_events_destroy (&events);
}
END_TEST

START_TEST (test_none_outlives_controller)
{
    //  the "controller" is a child of this test, killed outright; its
    //  nodes become ours (subreaper) and must end by themselves
    ck_assert_int_eq (prctl (PR_SET_CHILD_SUBREAPER, 1), 0);
    int fds[2];
    ck_assert_int_eq (pipe (fds), 0);
    pid_t controller = fork ();
    ck_assert_int_ge (controller, 0);
    if (controller == 0) {
        close (fds[0]);
        bn_treeproc_t *tree = s_tree_new (NULL);
        if (bn_treeproc_start (tree))
            _exit (1);
        pid_t pids[3];
        for (size_t i = 0; i < 3; i++)
            pids[i] = bn_treeproc_pid (tree, i);
        char dir[128] = "";
        snprintf (dir, sizeof dir, "%s", bn_treeproc_dir (tree));
        if (write (fds[1], pids, sizeof pids) != sizeof pids ||
            write (fds[1], dir, sizeof dir) != sizeof dir)
            _exit (1);
        pause ();
        _exit (0);
    }
    close (fds[1]);
    pid_t pids[3];
    char dir[128];
    ck_assert_int_eq (read (fds[0], pids, sizeof pids), sizeof pids);
    ck_assert_int_eq (read (fds[0], dir, sizeof dir), sizeof dir);
    close (fds[0]);
    ck_assert_int_eq (kill (controller, SIGKILL), 0);
    ck_assert_int_eq (waitpid (controller, NULL, 0), controller);
    for (size_t i = 0; i < 3; i++) {
        int64_t give_up = zclock_mono () + T_TIMEOUT;
        pid_t rc;
        while ((rc = waitpid (pids[i], NULL, WNOHANG)) == 0 &&
               zclock_mono () < give_up)
            zclock_sleep (5);
        ck_assert_msg (rc == pids[i],
                       "node %zu (pid %d) outlived its "
                       "controller",
                       i, (int)pids[i]);
    }
    //  a controller killed outright cannot remove its folder
    zdir_t *left = zdir_new (dir, NULL);
    if (left)
        zdir_remove (left, true);
    zdir_destroy (&left);
    rmdir (dir);
}
END_TEST

START_TEST (test_start_failures)
{
    //  a program that does not exist
    bn_treeproc_t *tree =
        bn_treeproc_new ("/nonexistent/banyan-scheduler", T_KEY, 1, NULL);
    ck_assert_ptr_nonnull (tree);
    ck_assert_int_eq (bn_treeproc_start (tree), -1);
    bn_treeproc_destroy (&tree);
    //  a program PATH does not have
    tree = bn_treeproc_new ("banyan-no-such-scheduler", T_KEY, 1, NULL);
    ck_assert_int_eq (bn_treeproc_start (tree), -1);
    json_t *stats = bn_treeproc_stats (tree);
    const char *loss = json_string_value (json_object_get (
        json_array_get (json_object_get (stats, "nodes"), 0), "last_loss"));
    ck_assert_ptr_nonnull (loss);
    ck_assert_ptr_nonnull (
        strstr (loss, "cannot run banyan-no-such-scheduler"));
    json_decref (stats);
    bn_treeproc_destroy (&tree);
    //  a node that exits before it is ready
    tree = bn_treeproc_new (s_self, T_KEY, 2, NULL);
    const char *good[] = {"--stand-in", NULL};
    const char *bad[] = {"--stand-in", "--exit-early", NULL};
    bn_treeproc_set_node (tree, 0, -1, good);
    bn_treeproc_set_node (tree, 1, 0, bad);
    ck_assert_int_eq (bn_treeproc_start (tree), -1);
    ck_assert (!bn_treeproc_ready (tree, 1));
    pid_t root = bn_treeproc_pid (tree, 0);
    bn_treeproc_destroy (&tree);
    ck_assert (root == 0 || s_gone (root));
    //  a node that does not answer in time
    tree = bn_treeproc_new (s_self, T_KEY, 1, NULL);
    const char *silent[] = {"--stand-in", "--silent", NULL};
    bn_treeproc_set_node (tree, 0, -1, silent);
    bn_treeproc_set_start_timeout (tree, 200);
    ck_assert_int_eq (bn_treeproc_start (tree), -1);
    pid_t sleeper = bn_treeproc_pid (tree, 0);
    bn_treeproc_destroy (&tree);
    ck_assert (sleeper == 0 || s_gone (sleeper));
}
END_TEST

START_TEST (test_nodelink)
{
    int ours, theirs;
    ck_assert_int_eq (bn_nodelink_pair (&ours, &theirs), 0);
    bn_nodelink_t *a = bn_nodelink_new (ours);
    bn_nodelink_t *b = bn_nodelink_new (theirs);
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "ENGINE_ADD");
    zmsg_addmem (msg, "a,b:\n\0c", 7);
    zmsg_addmem (msg, "", 0);
    ck_assert_int_eq (bn_nodelink_send (a, &msg), 0);
    ck_assert_ptr_null (msg);
    bool eof = true;
    msg = bn_nodelink_recv (b, T_TIMEOUT, &eof);
    ck_assert (!eof);
    ck_assert_ptr_nonnull (msg);
    ck_assert_int_eq (zmsg_size (msg), 3);
    ck_assert (zframe_streq (zmsg_first (msg), "ENGINE_ADD"));
    zframe_t *frame = zmsg_next (msg);
    ck_assert_int_eq (zframe_size (frame), 7);
    ck_assert_mem_eq (zframe_data (frame), "a,b:\n\0c", 7);
    ck_assert_int_eq (zframe_size (zmsg_next (msg)), 0);
    zmsg_destroy (&msg);
    //  an empty message would look like the end of the link
    msg = zmsg_new ();
    ck_assert_int_eq (bn_nodelink_send (a, &msg), -1);
    //  nothing waiting: no message, no end
    ck_assert_ptr_null (bn_nodelink_recv (b, 0, &eof));
    ck_assert (!eof);
    //  a packet that is not netstrings is dropped and counted
    ck_assert_int_eq (send (bn_nodelink_fd (a), "5:ab,", 5, 0), 5);
    ck_assert_ptr_null (bn_nodelink_recv (b, T_TIMEOUT, &eof));
    ck_assert (!eof);
    ck_assert_int_eq (bn_nodelink_malformed (b), 1);
    //  a peer that fills the socket: sends queue, then flush delivers
    size_t sent = 0;
    while (!bn_nodelink_pending (a)) {
        ck_assert_int_eq (bn_nodelink_sendx (a, "ECHO", "x", NULL), 0);
        sent++;
    }
    ck_assert_int_eq (bn_nodelink_sendx (a, "ECHO", "last", NULL), 0);
    sent++;
    size_t received = 0;
    while (received < sent) {
        bn_nodelink_flush (a);
        msg = bn_nodelink_recv (b, T_TIMEOUT, &eof);
        ck_assert_ptr_nonnull (msg);
        received++;
        if (received == sent)
            ck_assert (zframe_streq (zmsg_last (msg), "last"));
        zmsg_destroy (&msg);
    }
    ck_assert (!bn_nodelink_pending (a));
    //  the peer's end closes: end of link on both directions
    bn_nodelink_destroy (&a);
    ck_assert_ptr_null (bn_nodelink_recv (b, T_TIMEOUT, &eof));
    ck_assert (eof);
    ck_assert_int_eq (bn_nodelink_sendx (b, "ECHO", NULL), -1);
    bn_nodelink_destroy (&b);
}
END_TEST

static Suite *
s_suite (void)
{
    Suite *suite = suite_create ("bn_treeproc");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_call);
    tcase_add_test (tc, test_killed_node_restarts);
    tcase_add_test (tc, test_none_outlives_controller);
    tcase_add_test (tc, test_start_failures);
    tcase_add_test (tc, test_nodelink);
    suite_add_tcase (suite, tc);
    return suite;
}

int
main (int argc, char **argv)
{
    if (argc > 1 && streq (argv[1], "--node"))
        return s_stand_in (argc, argv);
    ssize_t len = readlink ("/proc/self/exe", s_self, sizeof s_self - 1);
    if (len <= 0)
        return 1;
    s_self[len] = 0;
    SRunner *runner = srunner_create (s_suite ());
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? 1 : 0;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_treeproc: start, watch and restart the banyan-scheduler processes of
    the broadcast tree.

    A process is watched through its link alone: its end closes when the
    process ends, however it ends, so the loss is seen at once by the loop
    (no SIGCHLD handler, which a library inside a threaded controller
    cannot own). The supervisor then reaps it with waitpid.  */
#include "bn_treeproc.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bn_log.h"
#include "bn_nodelink.h"

#define S_CONTROL_FD 3        //  The link's fd in the process
#define S_TICK 100            //  ms between supervision ticks
#define S_STOP_WAIT 1000      //  ms processes get to exit on destroy
#define S_REAP_WAIT 1000      //  ms a process whose link ended gets to exit
#define S_STABLE 10000        //  ms up after which a loss restarts at once
#define S_START_TIMEOUT 10000 //  ms to answer READY, by default
#define S_PARENT_MAX 80       //  Longest folder to make the private one in
#define S_EXEC_FAILED 127     //  Exit status of a child that could not exec

typedef enum { S_STOPPED, S_STARTING, S_READY } s_state_t;

typedef struct {
    size_t index;
    int parent;      //  Parent node, -1 for the root
    char **args;     //  NULL-terminated, owned
    zlistx_t *binds; //  "name=endpoint" strings; actual ones once READY
    pid_t pid;       //  0 while not running
    bn_nodelink_t *link;
    s_state_t state;
    int64_t started;    //  zclock_mono at the last start
    int64_t pinged;     //  zclock_mono of the last PING
    int64_t answered;   //  zclock_mono of the last word from it
    int64_t restart_at; //  zclock_mono when a stopped node starts again
    int delay;          //  ms before the next restart
    int restarts;       //  Restarts so far
    char *last_loss;    //  Why the process last ended
    struct _bn_treeproc_t *owner;
} s_node_t;

struct _bn_treeproc_t {
    char *program;
    char *key;
    char *curve;   //  CURVE secret key (Z85) of the nodes, or NULL
    char dir[128]; //  Private folder, "" if not created
    s_node_t *nodes;
    size_t nnodes;
    bn_treeproc_fn *handler;
    void *handler_arg;
    int start_timeout;
    int max_delay;   //  ms, the longest restart delay
    int ping_ms;     //  ms between PINGs of a ready node, 0: none
    int ping_misses; //  periods a node may stay silent
    zloop_t *loop;   //  Set by attach
    int tick;        //  Timer id in loop
    bool stopping;   //  Destroy in progress: no restarts
};

static void s_lost (bn_treeproc_t *self, s_node_t *node, bool restart);

bn_treeproc_t *
bn_treeproc_new (const char *program, const char *key, size_t nnodes,
                 const char *parent)
{
    assert (program);
    assert (key);
    bn_treeproc_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->program = strdup (program);
    self->key = strdup (key);
    self->nnodes = nnodes;
    self->nodes = calloc (nnodes ? nnodes : 1, sizeof (s_node_t));
    self->start_timeout = S_START_TIMEOUT;
    self->max_delay = BN_TREEPROC_RESTART_BACKOFF;
    self->tick = -1;
    bool ok = self->program && self->key && self->nodes;
    for (size_t i = 0; ok && i < nnodes; i++) {
        self->nodes[i].index = i;
        self->nodes[i].parent = -1;
        self->nodes[i].owner = self;
        self->nodes[i].binds = zlistx_new ();
        ok = self->nodes[i].binds != NULL;
        if (ok) {
            zlistx_set_destructor (self->nodes[i].binds,
                                   (czmq_destructor *)zstr_free);
            zlistx_set_duplicator (self->nodes[i].binds,
                                   (czmq_duplicator *)strdup);
        }
    }
    //  an ipc path must fit in sockaddr_un (107 bytes): leave room for
    //  "/tree-XXXXXX/<node>.ipc"
    const char *tmp = getenv ("TMPDIR");
    if (!tmp || !*tmp || strlen (tmp) > S_PARENT_MAX)
        tmp = "/tmp";
    if (parent && strlen (parent) <= S_PARENT_MAX &&
        (mkdir (parent, 0700) == 0 || errno == EEXIST))
        snprintf (self->dir, sizeof self->dir, "%s/tree-XXXXXX", parent);
    else
        snprintf (self->dir, sizeof self->dir, "%s/banyan-tree-XXXXXX", tmp);
    if (ok && !mkdtemp (self->dir)) {
        bn_log_error ("tree: cannot create a folder %s: %s", self->dir,
                      strerror (errno));
        self->dir[0] = 0;
        ok = false;
    }
    if (!ok)
        bn_treeproc_destroy (&self);
    return self;
}

//  Remove the private folder and what the processes left in it.
static void
s_remove_dir (bn_treeproc_t *self)
{
    if (!self->dir[0])
        return;
    DIR *dir = opendir (self->dir);
    struct dirent *entry;
    while (dir && (entry = readdir (dir))) {
        if (streq (entry->d_name, ".") || streq (entry->d_name, ".."))
            continue;
        char path[PATH_MAX];
        snprintf (path, sizeof path, "%s/%s", self->dir, entry->d_name);
        unlink (path);
    }
    if (dir)
        closedir (dir);
    if (rmdir (self->dir) != 0)
        bn_log_warn ("tree: cannot remove %s: %s", self->dir, strerror (errno));
    self->dir[0] = 0;
}

void
bn_treeproc_destroy (bn_treeproc_t **self_p)
{
    assert (self_p);
    bn_treeproc_t *self = *self_p;
    if (!self)
        return;
    self->stopping = true;
    if (self->loop && self->tick >= 0)
        zloop_timer_end (self->loop, self->tick);
    //  closing a link is the process's signal to exit
    for (size_t i = 0; self->nodes && i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        if (node->link && self->loop) {
            zmq_pollitem_t item = {NULL, bn_nodelink_fd (node->link),
                                   ZMQ_POLLIN, 0};
            zloop_poller_end (self->loop, &item);
        }
        bn_nodelink_destroy (&node->link);
    }
    int64_t give_up = zclock_mono () + S_STOP_WAIT;
    for (size_t i = 0; self->nodes && i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        while (node->pid > 0) {
            pid_t rc = waitpid (node->pid, NULL, WNOHANG);
            if (rc == node->pid || (rc < 0 && errno != EINTR))
                node->pid = 0;
            else if (zclock_mono () >= give_up) {
                kill (node->pid, SIGKILL);
                waitpid (node->pid, NULL, 0);
                node->pid = 0;
            } else if (rc == 0)
                zclock_sleep (2);
        }
    }
    for (size_t i = 0; self->nodes && i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        for (char **arg = node->args; arg && *arg; arg++)
            free (*arg);
        free (node->args);
        zlistx_destroy (&node->binds);
        free (node->last_loss);
    }
    s_remove_dir (self);
    free (self->nodes);
    free (self->program);
    if (self->key)
        memset (self->key, 0, strlen (self->key));
    free (self->key);
    if (self->curve)
        memset (self->curve, 0, strlen (self->curve));
    free (self->curve);
    free (self);
    *self_p = NULL;
}

int
bn_treeproc_set_curve (bn_treeproc_t *self, const char *secret)
{
    assert (self);
    assert (secret);
    free (self->curve);
    self->curve = strdup (secret);
    return self->curve ? 0 : -1;
}

const char *
bn_treeproc_dir (bn_treeproc_t *self)
{
    assert (self);
    return self->dir;
}

int
bn_treeproc_set_node (bn_treeproc_t *self, size_t index, int parent,
                      const char **args)
{
    assert (self);
    assert (index < self->nnodes);
    assert (parent < (int)self->nnodes);
    s_node_t *node = &self->nodes[index];
    node->parent = parent;
    size_t count = 0;
    while (args && args[count])
        count++;
    char **copy = calloc (count + 1, sizeof (char *));
    for (size_t i = 0; copy && i < count; i++)
        if (!(copy[i] = strdup (args[i]))) {
            for (size_t j = 0; j < i; j++)
                free (copy[j]);
            free (copy);
            copy = NULL;
        }
    if (!copy)
        return -1;
    for (char **arg = node->args; arg && *arg; arg++)
        free (*arg);
    free (node->args);
    node->args = copy;
    return 0;
}

int
bn_treeproc_add_bind (bn_treeproc_t *self, size_t index, const char *name,
                      const char *endpoint)
{
    assert (self);
    assert (index < self->nnodes);
    assert (name && !strchr (name, '='));
    char *bind = zsys_sprintf ("%s=%s", name, endpoint);
    if (!bind)
        return -1;
    void *handle = zlistx_add_end (self->nodes[index].binds, bind);
    zstr_free (&bind);
    return handle ? 0 : -1;
}

void
bn_treeproc_set_handler (bn_treeproc_t *self, bn_treeproc_fn *handler,
                         void *arg)
{
    assert (self);
    self->handler = handler;
    self->handler_arg = arg;
}

void
bn_treeproc_set_start_timeout (bn_treeproc_t *self, int timeout)
{
    assert (self);
    self->start_timeout = timeout;
}

void
bn_treeproc_set_restart_backoff (bn_treeproc_t *self, int msecs)
{
    assert (self);
    self->max_delay = msecs > 0 ? msecs : 0;
}

static void
s_report (bn_treeproc_t *self, s_node_t *node, const char *event, zmsg_t *msg)
{
    if (self->handler)
        self->handler (self->handler_arg, node->index, event, msg);
}

static int s_on_link (zloop_t *loop, zmq_pollitem_t *item, void *arg);

//  Start node's process: fork, PR_SET_PDEATHSIG, the link on fd 3, exec.
//  Returns 0, or -1 (logged; the node stays stopped).
static int
s_spawn (bn_treeproc_t *self, s_node_t *node)
{
    assert (node->pid == 0 && !node->link);
    int ours, theirs;
    if (bn_nodelink_pair (&ours, &theirs)) {
        bn_log_error ("tree: cannot create a link for node %zu: %s",
                      node->index, strerror (errno));
        return -1;
    }
    //  everything the child needs is built before fork: after it, a
    //  threaded process may only make async-signal-safe calls
    size_t nargs = 0;
    while (node->args && node->args[nargs])
        nargs++;
    size_t nbinds = zlistx_size (node->binds);
    char **argv = calloc (nargs + 2 * nbinds + 6, sizeof (char *));
    char index[32], fd[16];
    snprintf (index, sizeof index, "%zu", node->index);
    snprintf (fd, sizeof fd, "%d", S_CONTROL_FD);
    if (!argv) {
        close (ours);
        close (theirs);
        return -1;
    }
    size_t argc = 0;
    argv[argc++] = self->program;
    argv[argc++] = "--node";
    argv[argc++] = index;
    for (size_t i = 0; i < nargs; i++)
        argv[argc++] = node->args[i];
    for (char *bind = (char *)zlistx_first (node->binds); bind;
         bind = (char *)zlistx_next (node->binds)) {
        argv[argc++] = "--bind";
        argv[argc++] = bind;
    }
    argv[argc++] = "--control-fd";
    argv[argc++] = fd;
    argv[argc] = NULL;
    pid_t controller = getpid ();
    pid_t pid = fork ();
    if (pid == 0) {
        sigset_t none;
        sigemptyset (&none);
        pthread_sigmask (SIG_SETMASK, &none, NULL);
        struct sigaction dfl;
        memset (&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction (SIGPIPE, &dfl, NULL);
        sigaction (SIGINT, &dfl, NULL);
        sigaction (SIGTERM, &dfl, NULL);
        //  the kernel kills it when the controller thread that forked it
        //  ends; the check covers a controller gone before the prctl
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        if (getppid () != controller)
            _exit (126);
        if (theirs == S_CONTROL_FD)
            fcntl (theirs, F_SETFD, 0);
        else if (dup2 (theirs, S_CONTROL_FD) < 0)
            _exit (126);
        execvp (self->program, argv);
        _exit (S_EXEC_FAILED);
    }
    int saved = errno;
    free (argv);
    close (theirs);
    if (pid < 0) {
        close (ours);
        bn_log_error ("tree: cannot start node %zu: %s", node->index,
                      strerror (saved));
        return -1;
    }
    node->pid = pid;
    node->link = bn_nodelink_new (ours);
    node->state = S_STARTING;
    node->started = zclock_mono ();
    if (!node->link ||
        bn_nodelink_sendx (node->link, "KEY", self->key, self->curve, NULL)) {
        bn_log_error ("tree: cannot give node %zu its key", node->index);
        s_lost (self, node, false);
        return -1;
    }
    if (self->loop) {
        zmq_pollitem_t item = {NULL, ours, ZMQ_POLLIN, 0};
        if (zloop_poller (self->loop, &item, s_on_link, node) == 0)
            zloop_poller_set_tolerant (self->loop, &item);
    }
    bn_log_debug ("tree: node %zu started, pid %d", node->index, (int)pid);
    return 0;
}

//  Text for a wait status.
static void
s_describe (int status, bool reaped, char *text, size_t size)
{
    if (!reaped)
        snprintf (text, size, "ended (exit status unknown)");
    else if (WIFSIGNALED (status))
        snprintf (text, size, "was killed by signal %d (%s)", WTERMSIG (status),
                  strsignal (WTERMSIG (status)));
    else if (WIFEXITED (status))
        snprintf (text, size, "exited with status %d", WEXITSTATUS (status));
    else
        snprintf (text, size, "ended");
}

//  Node's process ended (its link did): reap it, log, tell its parent,
//  report LOST and, when restart, start it again now or after a delay.
static void
s_lost (bn_treeproc_t *self, s_node_t *node, bool restart)
{
    if (node->link && self->loop) {
        zmq_pollitem_t item = {NULL, bn_nodelink_fd (node->link), ZMQ_POLLIN,
                               0};
        zloop_poller_end (self->loop, &item);
    }
    bn_nodelink_destroy (&node->link);
    int status = 0;
    bool reaped = false;
    pid_t pid = node->pid;
    int64_t give_up = zclock_mono () + S_REAP_WAIT;
    while (pid > 0) {
        pid_t rc = waitpid (pid, &status, WNOHANG);
        if (rc == pid) {
            reaped = true;
            break;
        }
        if (rc < 0 && errno != EINTR)
            break;
        if (zclock_mono () >= give_up) {
            kill (pid, SIGKILL);
            reaped = waitpid (pid, &status, 0) == pid;
            break;
        }
        zclock_sleep (1);
    }
    node->pid = 0;
    bool was_ready = node->state == S_READY;
    node->state = S_STOPPED;
    char why[256];
    s_describe (status, reaped, why, sizeof why);
    if (reaped && WIFEXITED (status) && WEXITSTATUS (status) == S_EXEC_FAILED)
        snprintf (why + strlen (why), sizeof why - strlen (why),
                  " (cannot run %.60s)", self->program);
    free (node->last_loss);
    node->last_loss = strdup (why);
    int64_t now = zclock_mono ();
    if (now - node->started >= S_STABLE)
        node->delay = 0;
    restart = restart && !self->stopping;
    bn_log_error ("tree: node %zu (pid %d) %s%s", node->index, (int)pid, why,
                  !restart           ? ""
                  : node->delay == 0 ? "; restarting it"
                                     : "; restarting it shortly");
    if (was_ready && node->parent >= 0) {
        //  the parent knows its children by position, in node order
        size_t position = 0;
        for (size_t i = 0; i < node->index; i++)
            if (self->nodes[i].parent == node->parent)
                position++;
        char index[32];
        snprintf (index, sizeof index, "%zu", position);
        bn_treeproc_sendx (self, (size_t)node->parent, "CHILD_LOST", index,
                           NULL);
    }
    zmsg_t *report = zmsg_new ();
    zmsg_addstr (report, why);
    s_report (self, node, "LOST", report);
    zmsg_destroy (&report);
    if (!restart) {
        node->restart_at = INT64_MAX;
        return;
    }
    node->restart_at = now + node->delay;
    node->delay = node->delay ? node->delay * 2 : 100;
    if (node->delay > self->max_delay)
        node->delay = self->max_delay;
    if (node->restart_at <= now) {
        node->restarts++;
        s_spawn (self, node);
    }
}

void
bn_treeproc_set_liveness (bn_treeproc_t *self, int period_ms, int misses)
{
    assert (self);
    self->ping_ms = period_ms > 0 && misses > 0 ? period_ms : 0;
    self->ping_misses = misses;
}

//  Record a READY message's endpoints; -1 if it is malformed.
static int
s_ready (bn_treeproc_t *self, s_node_t *node, zmsg_t *msg)
{
    if (zmsg_size (msg) % 2 != 1)
        return -1;
    zlistx_t *binds = zlistx_new ();
    zlistx_set_destructor (binds, (czmq_destructor *)zstr_free);
    zframe_t *frame = zmsg_first (msg);
    while ((frame = zmsg_next (msg))) {
        char *name = zframe_strdup (frame);
        char *endpoint = zframe_strdup (zmsg_next (msg));
        char *bind = zsys_sprintf ("%s=%s", name, endpoint);
        zstr_free (&name);
        zstr_free (&endpoint);
        zlistx_add_end (binds, bind);
    }
    zlistx_destroy (&node->binds);
    node->binds = binds;
    zlistx_set_duplicator (binds, (czmq_duplicator *)strdup);
    node->state = S_READY;
    if (node->restarts)
        bn_log_info ("tree: node %zu restarted (pid %d)", node->index,
                     (int)node->pid);
    s_report (self, node, "READY", msg);
    return 0;
}

//  Handle one message from node's process.
static void
s_message (bn_treeproc_t *self, s_node_t *node, zmsg_t *msg)
{
    char *command = zmsg_size (msg) ? zframe_strdup (zmsg_first (msg)) : NULL;
    node->answered = zclock_mono ();
    if (command && streq (command, "PONG"))
        ;
    else if (command && streq (command, "READY") && node->state == S_STARTING) {
        if (s_ready (self, node, msg))
            bn_log_warn ("tree: node %zu sent a malformed READY", node->index);
    } else
        s_report (self, node, "MESSAGE", msg);
    zstr_free (&command);
}

//  Read what node's process sent; returns false when its link ended.
static bool
s_read (bn_treeproc_t *self, s_node_t *node)
{
    for (int count = 0; node->link && count < 64; count++) {
        bool eof = false;
        zmsg_t *msg = bn_nodelink_recv (node->link, 0, &eof);
        if (eof)
            return false;
        if (!msg)
            break;
        s_message (self, node, msg);
        zmsg_destroy (&msg);
    }
    return true;
}

static int
s_on_link (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    s_node_t *node = (s_node_t *)arg;
    bn_treeproc_t *self = node->owner;
    if (!s_read (self, node))
        s_lost (self, node, true);
    return 0;
}

//  Ping a ready node every ping_ms; kill one silent for ping_misses
//  periods (its link then ends, and it is lost and restarted).
static void
s_check_alive (bn_treeproc_t *self, s_node_t *node, int64_t now)
{
    int64_t since =
        node->answered > node->started ? node->answered : node->started;
    int64_t bound = (int64_t)self->ping_ms * self->ping_misses;
    if (now - since > bound) {
        bn_log_error ("tree: node %zu (pid %d) has not answered for %.1f s; "
                      "killing it",
                      node->index, (int)node->pid, (now - since) / 1000.0);
        kill (node->pid, SIGKILL);
        node->answered = now;
    } else if (now - node->pinged >= self->ping_ms) {
        node->pinged = now;
        bn_treeproc_sendx (self, node->index, "PING", NULL);
    }
}

//  Restart stopped nodes whose delay passed, kill those that did not
//  answer READY in time, ping ready ones, flush links with queued
//  messages.
static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    bn_treeproc_t *self = (bn_treeproc_t *)arg;
    int64_t now = zclock_mono ();
    for (size_t i = 0; i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        if (node->state == S_STOPPED && node->restart_at <= now) {
            node->restarts++;
            s_spawn (self, node);
        } else if (node->state == S_STARTING &&
                   now - node->started > self->start_timeout) {
            bn_log_error ("tree: node %zu (pid %d) did not start within %d "
                          "ms; killing it",
                          node->index, (int)node->pid, self->start_timeout);
            kill (node->pid, SIGKILL);
            node->started = now;
        } else if (node->state == S_READY && self->ping_ms)
            s_check_alive (self, node, now);
        if (node->link && bn_nodelink_pending (node->link) &&
            bn_nodelink_flush (node->link) < 0)
            s_lost (self, node, true);
    }
    return 0;
}

int
bn_treeproc_start (bn_treeproc_t *self)
{
    assert (self);
    if (strchr (self->program, '/') && access (self->program, X_OK) != 0) {
        bn_log_error ("tree: cannot run %s: %s", self->program,
                      strerror (errno));
        return -1;
    }
    struct pollfd *items = calloc (self->nnodes + 1, sizeof *items);
    bool *started = calloc (self->nnodes + 1, sizeof (bool));
    if (!items || !started) {
        free (items);
        free (started);
        return -1;
    }
    int64_t give_up = zclock_mono () + self->start_timeout;
    int rc = 0;
    while (rc == 0) {
        //  parents first, a level at a time: a child then connects to an
        //  endpoint already bound, instead of retrying a moment later
        for (size_t i = 0; rc == 0 && i < self->nnodes; i++) {
            s_node_t *node = &self->nodes[i];
            if (!started[i] && (node->parent < 0 ||
                                self->nodes[node->parent].state == S_READY)) {
                started[i] = true;
                rc = s_spawn (self, node);
            }
        }
        size_t count = 0, waiting = 0;
        for (size_t i = 0; rc == 0 && i < self->nnodes; i++) {
            s_node_t *node = &self->nodes[i];
            if (node->state != S_READY)
                waiting++;
            if (!started[i])
                continue;
            if (!node->link) {
                rc = -1;
                break;
            }
            items[count].fd = bn_nodelink_fd (node->link);
            items[count].events =
                POLLIN | (bn_nodelink_pending (node->link) ? POLLOUT : 0);
            items[count].revents = 0;
            count++;
        }
        if (rc || waiting == 0)
            break;
        int64_t left = give_up - zclock_mono ();
        if (left <= 0) {
            for (size_t i = 0; i < self->nnodes; i++)
                if (self->nodes[i].state != S_READY)
                    bn_log_error ("tree: node %zu did not start within %d ms",
                                  i, self->start_timeout);
            rc = -1;
            break;
        }
        if (poll (items, count, (int)left) < 0 && errno != EINTR)
            rc = -1;
        for (size_t i = 0, at = 0; rc == 0 && i < self->nnodes; i++) {
            if (!started[i] || !self->nodes[i].link)
                continue;
            s_node_t *node = &self->nodes[i];
            struct pollfd *item = &items[at++];
            if ((item->revents & POLLOUT) && bn_nodelink_flush (node->link) < 0)
                rc = -1;
            else if (item->revents & (POLLIN | POLLHUP | POLLERR) &&
                     !s_read (self, node))
                rc = -1;
            if (rc)
                s_lost (self, node, false);
        }
    }
    free (items);
    free (started);
    return rc;
}

int
bn_treeproc_attach (bn_treeproc_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    assert (!self->loop);
    self->loop = loop;
    self->tick = zloop_timer (loop, S_TICK, 0, s_on_tick, self);
    if (self->tick < 0)
        return -1;
    for (size_t i = 0; i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        if (!node->link)
            continue;
        zmq_pollitem_t item = {NULL, bn_nodelink_fd (node->link), ZMQ_POLLIN,
                               0};
        if (zloop_poller (loop, &item, s_on_link, node))
            return -1;
        zloop_poller_set_tolerant (loop, &item);
    }
    return 0;
}

const char *
bn_treeproc_endpoint (bn_treeproc_t *self, size_t index, const char *name)
{
    assert (self);
    assert (index < self->nnodes);
    s_node_t *node = &self->nodes[index];
    size_t len = strlen (name);
    if (node->state != S_READY)
        return NULL;
    for (char *bind = (char *)zlistx_first (node->binds); bind;
         bind = (char *)zlistx_next (node->binds))
        if (strncmp (bind, name, len) == 0 && bind[len] == '=')
            return bind + len + 1;
    return NULL;
}

pid_t
bn_treeproc_pid (bn_treeproc_t *self, size_t index)
{
    assert (self);
    assert (index < self->nnodes);
    return self->nodes[index].pid;
}

bool
bn_treeproc_ready (bn_treeproc_t *self, size_t index)
{
    assert (self);
    assert (index < self->nnodes);
    return self->nodes[index].state == S_READY;
}

int
bn_treeproc_send (bn_treeproc_t *self, size_t index, zmsg_t **msg_p)
{
    assert (self);
    assert (index < self->nnodes);
    s_node_t *node = &self->nodes[index];
    if (!node->link || node->state == S_STOPPED) {
        zmsg_destroy (msg_p);
        return -1;
    }
    //  a broken link is the loss the poller reports next
    return bn_nodelink_send (node->link, msg_p);
}

int
bn_treeproc_sendx (bn_treeproc_t *self, size_t index, const char *frame, ...)
{
    zmsg_t *msg = zmsg_new ();
    va_list args;
    va_start (args, frame);
    while (msg && frame) {
        zmsg_addstr (msg, frame);
        frame = va_arg (args, const char *);
    }
    va_end (args);
    return bn_treeproc_send (self, index, &msg);
}

int
bn_treeproc_call (bn_treeproc_t *self, size_t index, zmsg_t **msg_p,
                  const char *answer, int timeout, zmsg_t **reply_p)
{
    assert (self);
    assert (index < self->nnodes);
    assert (answer);
    s_node_t *node = &self->nodes[index];
    bool ready = node->state == S_READY;
    if (bn_treeproc_send (self, index, msg_p) != 0) {
        //  a process that ended is handled now, as the loop would
        if (ready && (errno == EPIPE || errno == ECONNRESET))
            s_lost (self, node, true);
        return -1;
    }
    if (!ready)
        return -1;
    int64_t give_up = zclock_mono () + timeout;
    while (node->link) {
        if (bn_nodelink_pending (node->link) &&
            bn_nodelink_flush (node->link) < 0)
            break;
        int64_t left = give_up - zclock_mono ();
        if (left < 0) {
            bn_log_warn ("tree: node %zu did not answer %s within %d ms", index,
                         answer, timeout);
            return -1;
        }
        bool eof = false;
        zmsg_t *msg = bn_nodelink_recv (
            node->link, bn_nodelink_pending (node->link) ? 1 : (int)left, &eof);
        if (eof)
            break;
        if (!msg)
            continue;
        if (zframe_streq (zmsg_first (msg), answer)) {
            if (reply_p)
                *reply_p = msg;
            else
                zmsg_destroy (&msg);
            return 0;
        }
        s_message (self, node, msg);
        zmsg_destroy (&msg);
    }
    if (node->link)
        s_lost (self, node, true);
    return -1;
}

json_t *
bn_treeproc_stats (bn_treeproc_t *self)
{
    assert (self);
    static const char *states[] = {"stopped", "starting", "ready"};
    json_t *nodes = json_array ();
    for (size_t i = 0; nodes && i < self->nnodes; i++) {
        s_node_t *node = &self->nodes[i];
        json_array_append_new (
            nodes, json_pack ("{s:i, s:s, s:i, s:s?}", "pid", (int)node->pid,
                              "state", states[node->state], "restarts",
                              node->restarts, "last_loss", node->last_loss));
    }
    return json_pack ("{s:s, s:o}", "mode", "processes", "nodes", nodes);
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launcher: start and stop clusters of controller and engine processes.

    `cluster start` forks a supervisor that leads the cluster's process
    group (or session, with --daemonize) and is the parent of the
    controller and every engine process. Because it is their parent, it
    learns at once when one of them exits; it logs that, tells the waiting
    `cluster start` through a pipe, tells the controller that the engines
    of an engine process that ended are gone (their requests fail at once,
    not after the heartbeat bound), and takes the whole cluster down when
    the controller goes. It is also a child subreaper, so processes that
    engines started and left behind stay in its tree, where `cluster stop`
    finds them.  */
#define _GNU_SOURCE //  pipe2, close_range
#include "bn_launcher.h"
#include "bn_clusterrec.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_path.h"
#include "bn_proctable.h"
#include "bn_remote.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

//  Seconds the supervisor gives the engines to end (and unregister while
//  the controller is still there), then the controller and whatever is
//  left, before SIGKILL; seconds to wait for SIGKILL to work
#define S_ENGINE_GRACE 4.0
#define S_CONTROLLER_GRACE 3.0
#define S_KILL_WAIT 5.0
//  Seconds `cluster start` gives a failed cluster to end, and a failed
//  remote one (whose hosts end first)
#define S_ABORT_GRACE 3.0
#define S_REMOTE_ABORT_GRACE 30.0
//  Seconds the hosts of a remote launch get to end their engines when the
//  cluster stops, before the launcher's own stop (ssh kill, scancel)
#define S_REMOTE_GRACE 6.0
//  Seconds before the start's deadline by which the hosts that did not
//  report count as failed, so that `cluster start` can name them
#define S_HOST_MARGIN 2.0
//  Milliseconds `cluster add` gives the supervisor to take its request
//  (it looks at least once a second)
#define S_ADD_WAIT_MS 5000

struct _bn_launcher_t {
    char *profile_dir;
    char *cluster_id;
    char *profile;
    int n;
    int per_process;
    bool daemonize;
    double timeout;
    char *controller_path;
    char *engine_path;
    zlist_t *controller_args;
    pid_t supervisor; //  0 until started
    int event_fd;     //  Read end of the supervisor's pipe, or -1
    char line[1024];  //  Partial event line
    size_t line_size;
    char *problem;
    bool engines_started;
    const bn_launch_ops_t *ops; //  The launcher (local unless set)
    bn_launch_plan_t plan;      //  What it starts from
    int engines;                //  Engines started, once started
    int hosts;                  //  Hosts they run on
    zlist_t *warnings;          //  What went wrong but not fatally
};

bn_launcher_t *
bn_launcher_new (const char *profile_dir, const char *cluster_id)
{
    assert (profile_dir);
    bn_launcher_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->profile_dir = strdup (profile_dir);
    self->cluster_id = strdup (cluster_id ? cluster_id : "");
    self->profile = strdup ("");
    self->problem = strdup ("");
    self->controller_args = zlist_new ();
    self->warnings = zlist_new ();
    self->per_process = 1;
    self->timeout = 30;
    self->event_fd = -1;
    self->ops = &bn_launch_local;
    if (!self->profile_dir || !self->cluster_id || !self->profile ||
        !self->problem || !self->controller_args || !self->warnings)
        bn_launcher_destroy (&self);
    else {
        zlist_autofree (self->controller_args);
        zlist_autofree (self->warnings);
    }
    return self;
}

void
bn_launcher_destroy (bn_launcher_t **self_p)
{
    assert (self_p);
    bn_launcher_t *self = *self_p;
    if (self) {
        if (self->event_fd >= 0)
            close (self->event_fd);
        free (self->profile_dir);
        free (self->cluster_id);
        free (self->profile);
        free (self->problem);
        free (self->controller_path);
        free (self->engine_path);
        zlist_destroy (&self->controller_args);
        zlist_destroy (&self->warnings);
        free (self);
        *self_p = NULL;
    }
}

void
bn_launcher_set_profile (bn_launcher_t *self, const char *profile)
{
    assert (self);
    char *copy = strdup (profile ? profile : "");
    if (copy) {
        free (self->profile);
        self->profile = copy;
    }
}

void
bn_launcher_set_engines (bn_launcher_t *self, int n, int per_process)
{
    assert (self);
    assert (n >= 0);
    self->n = n;
    self->per_process = per_process > 0 ? per_process : 1;
}

void
bn_launcher_set_daemonize (bn_launcher_t *self, bool daemonize)
{
    assert (self);
    self->daemonize = daemonize;
}

void
bn_launcher_set_timeout (bn_launcher_t *self, double seconds)
{
    assert (self);
    self->timeout = seconds;
}

int
bn_launcher_set_programs (bn_launcher_t *self, const char *controller,
                          const char *engine)
{
    assert (self);
    char *controller_copy = strdup (controller);
    char *engine_copy = strdup (engine);
    if (!controller_copy || !engine_copy) {
        free (controller_copy);
        free (engine_copy);
        return -1;
    }
    free (self->controller_path);
    free (self->engine_path);
    self->controller_path = controller_copy;
    self->engine_path = engine_copy;
    return 0;
}

int
bn_launcher_add_controller_arg (bn_launcher_t *self, const char *arg)
{
    assert (self);
    return zlist_append (self->controller_args, (void *)arg);
}

void
bn_launcher_set_launch (bn_launcher_t *self, const bn_launch_ops_t *ops,
                        const bn_launch_plan_t *plan)
{
    assert (self);
    assert (ops && plan);
    self->ops = ops;
    self->plan = *plan;
    self->n = plan->n;
    //  On hosts: all of a host's engines in one process unless said
    self->per_process = plan->per_process > 0 ? plan->per_process
                        : plan->engine_cmd    ? 1
                        : ops->remote         ? plan->engines_per_host
                                              : 1;
    if (self->per_process < 1)
        self->per_process = 1;
}

//  The plan of a local launch that nobody set: from the engines, the
//  programs and the engine arguments.
static const bn_launch_plan_t *
s_plan (bn_launcher_t *self)
{
    if (!self->plan.profile_dir) {
        self->plan.profile_dir = self->profile_dir;
        self->plan.cluster_id = self->cluster_id;
        self->plan.n = self->n;
        self->plan.per_process = self->per_process;
        self->plan.engine = self->engine_path;
        self->plan.nhosts = self->n > 0 ? 1 : 0;
        self->plan.engines_per_host = self->n;
    }
    return &self->plan;
}

char **
bn_launcher_controller_argv (bn_launcher_t *self)
{
    assert (self);
    size_t extra = zlist_size (self->controller_args);
    char **argv = calloc (extra + 6, sizeof *argv);
    if (!argv)
        return NULL;
    size_t argc = 0;
    argv[argc++] = self->controller_path;
    argv[argc++] = "--profile-dir";
    argv[argc++] = self->profile_dir;
    if (*self->cluster_id) {
        argv[argc++] = "--cluster-id";
        argv[argc++] = self->cluster_id;
    }
    for (char *arg = zlist_first (self->controller_args); arg;
         arg = zlist_next (self->controller_args))
        argv[argc++] = arg;
    return argv;
}

int
bn_launcher_print (bn_launcher_t *self, FILE *out)
{
    assert (self);
    char **argv = bn_launcher_controller_argv (self);
    int rc = argv ? bn_launch_print (self->ops, s_plan (self), argv, out) : -1;
    free (argv);
    return rc;
}

int
bn_launcher_engines (bn_launcher_t *self)
{
    assert (self);
    return self->engines;
}

int
bn_launcher_hosts (bn_launcher_t *self)
{
    assert (self);
    return self->hosts;
}

zlist_t *
bn_launcher_warnings (bn_launcher_t *self)
{
    assert (self);
    return self->warnings;
}

char *
bn_launcher_log_path (bn_launcher_t *self, const char *part)
{
    assert (self);
    return bn_launcher_log_path_of (self->profile_dir, self->cluster_id, part);
}

char *
bn_launcher_log_path_of (const char *profile_dir, const char *cluster_id,
                         const char *part)
{
    assert (profile_dir);
    bool named = cluster_id && *cluster_id;
    return zsys_sprintf ("%s/log/banyan-%s%s%s.log", profile_dir, part,
                         named ? "-" : "", named ? cluster_id : "");
}

// ---------------------------------------------------------------------------
//  The supervisor: runs in the forked child, never returns.

typedef struct {
    bn_launcher_t *launcher;
    int event_fd; //  Write end of the pipe, -1 once closed
    bn_clusterrec_t *record;
    char *record_path;
    pid_t controller;
    bool controller_failed; //  The controller ended on its own
    char *engine_file;
    int signal_fd;       //  SIGCHLD, SIGTERM, SIGINT and SIGUSR1 (cluster
                         //  add) as they come
    bn_remote_t *remote; //  A remote launch, or NULL
    int engines_log;     //  Its engines' output, or -1
    zsock_t *hub;        //  DEALER to the registration port, once needed
    bn_session_t *session;
    zcert_t *curve_cert; //  When the controller uses CURVE
} s_supervisor_t;

//  Tell the waiting `cluster start`; once it has gone, stop telling.
static void
s_event (s_supervisor_t *self, const char *format, ...)
{
    if (self->event_fd < 0)
        return;
    char line[1024];
    va_list args;
    va_start (args, format);
    int length = vsnprintf (line, sizeof line - 1, format, args);
    va_end (args);
    if (length < 0)
        return;
    if (length > (int)sizeof line - 2)
        length = (int)sizeof line - 2;
    line[length++] = '\n';
    if (write (self->event_fd, line, (size_t)length) != length) {
        close (self->event_fd);
        self->event_fd = -1;
    }
}

//  "banyan-controller (pid 12)" or "banyan-engine (pid 13, engines 0-3)";
//  false for a process that is not one of ours (an adopted orphan).
static bool
s_describe_process (s_supervisor_t *self, pid_t pid, char *text, size_t size)
{
    if (pid == self->controller) {
        snprintf (text, size, "banyan-controller (pid %d)", (int)pid);
        return true;
    }
    size_t procs = bn_clusterrec_engine_procs (self->record);
    for (size_t index = 0; index < procs; index++) {
        pid_t engine;
        int first, count;
        bn_clusterrec_engine_proc (self->record, index, &engine, NULL, &first,
                                   &count);
        if (engine != pid)
            continue;
        if (count == 1)
            snprintf (text, size, "banyan-engine (pid %d, engine %d)", (int)pid,
                      first);
        else
            snprintf (text, size, "banyan-engine (pid %d, engines %d-%d)",
                      (int)pid, first, first + count - 1);
        return true;
    }
    return false;
}

static void
s_on_reap (pid_t pid, int status, void *arg)
{
    s_supervisor_t *self = arg;
    char what[128], how[128];
    if (!s_describe_process (self, pid, what, sizeof what))
        return;
    bn_proctable_describe_status (status, how, sizeof how);
    bn_log_info ("%s %s", what, how);
}

//  The DEALER to the hub's registration port, as an engine's; false
//  (logged) if it cannot be made.
static bool
s_hub_connect (s_supervisor_t *self)
{
    if (self->hub)
        return true;
    char error[512] = "";
    bn_connfile_t *info =
        bn_connfile_load (self->engine_file, error, sizeof error);
    char *url = info ? bn_connfile_url (info, "registration") : NULL;
    const char *serverkey = info ? bn_connfile_curve_serverkey (info) : NULL;
    if (info && !self->session)
        self->session = bn_session_new (bn_connfile_key (info), NULL);
    if (serverkey && !self->curve_cert)
        self->curve_cert = zcert_new ();
    zsock_t *sock = url && self->session && (!serverkey || self->curve_cert)
                        ? zsock_new (ZMQ_DEALER)
                        : NULL;
    if (sock) {
        zsock_set_linger (sock, 1000);
        if ((serverkey &&
             bn_curve_client (sock, self->curve_cert, serverkey) != 0) ||
            zsock_connect (sock, "%s", url) != 0)
            zsock_destroy (&sock);
    }
    if (!sock)
        bn_log_warn ("cannot reach the controller's registration port: %s",
                     *error ? error
                     : url  ? url
                            : "out of memory");
    free (url);
    bn_connfile_destroy (&info);
    self->hub = sock;
    return sock != NULL;
}

//  The engines of a process that ended cannot say goodbye: say it for
//  them (an unregistration_request each, by the ids they asked for), so
//  that the hub fails their requests now rather than after the heartbeat
//  bound. An engine already unregistered is ignored by the hub.
static void
s_unregister_engines (s_supervisor_t *self, pid_t pid)
{
    size_t procs = bn_clusterrec_engine_procs (self->record);
    for (size_t index = 0; index < procs; index++) {
        pid_t engine;
        int first, count;
        bn_clusterrec_engine_proc (self->record, index, &engine, NULL, &first,
                                   &count);
        if (engine != pid || !s_hub_connect (self))
            continue;
        for (int id = first; id < first + count; id++) {
            bn_msg_t *msg =
                bn_msg_new (self->session, BN_MSG_UNREGISTRATION_REQUEST);
            if (msg)
                bn_msg_set_content (msg, json_pack ("{s:i}", "id", id));
            if (!msg || bn_msg_send_flags (&msg, zsock_resolve (self->hub),
                                           self->session, ZMQ_DONTWAIT)) {
                bn_msg_destroy (&msg);
                bn_log_warn ("cannot tell the controller engine %d is gone",
                             id);
            }
        }
    }
}

//  Reap children; returns true if the cluster must come down (the
//  controller ended).
static bool
s_reap (s_supervisor_t *self, bool stopping)
{
    bool down = false;
    int status;
    pid_t pid;
    while ((pid = waitpid (-1, &status, WNOHANG)) > 0) {
        char what[128], how[128];
        if (self->remote &&
            bn_remote_reaped (self->remote, pid, status, stopping))
            continue;
        if (!s_describe_process (self, pid, what, sizeof what))
            continue;
        bn_proctable_describe_status (status, how, sizeof how);
        if (stopping)
            bn_log_info ("%s %s", what, how);
        else {
            bn_log_warn ("%s %s", what, how);
            s_event (self, "exit %s %s", what, how);
            if (pid != self->controller)
                s_unregister_engines (self, pid);
        }
        if (pid == self->controller) {
            self->controller = 0;
            if (!stopping)
                self->controller_failed = true;
            down = true;
        }
    }
    return down;
}

//  Wait up to ms for a signal or a remote launch's output (which is read
//  on the way); returns the signal, or 0.
static int
s_wait (s_supervisor_t *self, int ms)
{
    struct pollfd items[256];
    items[0] = (struct pollfd){self->signal_fd, POLLIN, 0};
    size_t count = 1;
    if (self->remote)
        count += bn_remote_pollfds (self->remote, items + 1, 255);
    if (poll (items, count, ms) <= 0)
        return 0;
    if (self->remote)
        bn_remote_read (self->remote);
    if (!(items[0].revents & POLLIN))
        return 0;
    struct signalfd_siginfo info;
    if (read (self->signal_fd, &info, sizeof info) != sizeof info)
        return 0;
    return (int)info.ssi_signo;
}

//  Open a log file for a child's stdout and stderr.
static int
s_open_log (const char *path, bool truncate)
{
    return open (path,
                 O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
                     (truncate ? O_TRUNC : 0),
                 0644);
}

//  Fork and exec argv with stdin from /dev/null and output to log_fd.
//  Returns the pid, or -1.
static pid_t
s_spawn (s_supervisor_t *self, char **argv, int log_fd)
{
    pid_t pid = fork ();
    if (pid != 0)
        return pid;
    //  The child: undo what the supervisor set for itself
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    signal (SIGPIPE, SIG_DFL);
    signal (SIGHUP, SIG_DFL);
    int null = open ("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2 (null, STDIN_FILENO);
        close (null);
    }
    if (log_fd >= 0) {
        dup2 (log_fd, STDOUT_FILENO);
        dup2 (log_fd, STDERR_FILENO);
    }
    execv (argv[0], argv);
    int error = errno;
    fprintf (stderr, "cannot run %s: %s\n", argv[0], strerror (error));
    s_event (self, "error cannot run %s: %s", argv[0], strerror (error));
    _exit (127);
}

static void
s_save (s_supervisor_t *self)
{
    if (bn_clusterrec_save (self->record, self->record_path) != 0)
        bn_log_error ("cannot write %s: %s", self->record_path,
                      strerror (errno));
}

static unsigned long long
s_starttime (pid_t pid)
{
    bn_procinfo_t info;
    return bn_proctable_stat (pid, &info) == 0 ? info.starttime : 0;
}

static pid_t
s_start_controller (s_supervisor_t *self)
{
    bn_launcher_t *launcher = self->launcher;
    char **argv = bn_launcher_controller_argv (launcher);
    char *log_path = bn_launcher_log_path (launcher, "controller");
    int log_fd = log_path ? s_open_log (log_path, true) : -1;
    if (log_fd < 0)
        bn_log_warn ("cannot open %s: %s", log_path ? log_path : "log",
                     strerror (errno));
    pid_t pid = argv ? s_spawn (self, argv, log_fd) : -1;
    if (log_fd >= 0)
        close (log_fd);
    free (log_path);
    free (argv);
    return pid;
}

//  Start the local engine processes of plan, one a command of the local
//  launcher, their output in the engines log (truncated first, or not).
static int
s_spawn_engines (s_supervisor_t *self, const bn_launch_plan_t *plan,
                 bool truncate)
{
    bn_launcher_t *launcher = self->launcher;
    char *log_path = bn_launcher_log_path (launcher, "engines");
    int log_fd = log_path ? s_open_log (log_path, truncate) : -1;
    if (log_fd < 0)
        bn_log_warn ("cannot open %s: %s", log_path ? log_path : "log",
                     strerror (errno));
    free (log_path);
    zlistx_t *commands = launcher->ops->commands (plan);
    if (!commands) {
        if (log_fd >= 0)
            close (log_fd);
        s_event (self, "error out of memory");
        return -1;
    }
    int rc = 0;
    for (bn_launch_cmd_t *command = zlistx_first (commands); command;
         command = zlistx_next (commands)) {
        pid_t pid = s_spawn (self, command->argv, log_fd);
        if (pid < 0) {
            s_event (self, "error cannot fork: %s", strerror (errno));
            rc = -1;
            break;
        }
        bn_clusterrec_add_engines (self->record, pid, s_starttime (pid),
                                   command->first, command->count);
    }
    zlistx_destroy (&commands);
    if (log_fd >= 0)
        close (log_fd);
    s_save (self);
    return rc;
}

//  Start the cluster's engines.
static int
s_start_engines (s_supervisor_t *self)
{
    bn_launcher_t *launcher = self->launcher;
    int rc = s_spawn_engines (self, s_plan (launcher), true);
    if (rc == 0)
        s_event (self, "engines %zu %d %d",
                 bn_clusterrec_engine_procs (self->record), launcher->n,
                 launcher->n > 0 ? 1 : 0);
    return rc;
}

char *
bn_launcher_add_path (const char *profile_dir, const char *cluster_id)
{
    assert (profile_dir);
    bool named = cluster_id && *cluster_id;
    return zsys_sprintf ("%s/pid/banyan-add%s%s.json", profile_dir,
                         named ? "-" : "", named ? cluster_id : "");
}

//  Start the engines that `cluster add` asks for, if it does: its request
//  file says how many, how many a process and the first id.
static void
s_add_engines (s_supervisor_t *self)
{
    bn_launcher_t *launcher = self->launcher;
    char *path =
        bn_launcher_add_path (launcher->profile_dir, launcher->cluster_id);
    json_t *request = path ? json_load_file (path, 0, NULL) : NULL;
    if (request)
        unlink (path);
    free (path);
    if (!request)
        return;
    int n = 0, per_process = 0, first = -1;
    if (json_unpack (request, "{s:i, s:i, s:i}", "n", &n, "per_process",
                     &per_process, "first", &first) != 0 ||
        n < 1 || per_process < 1 || first < 0)
        bn_log_warn ("ignored a bad request to add engines");
    else {
        bn_log_info ("adding %d engines, %d per process, ids from %d", n,
                     per_process, first);
        bn_launch_plan_t plan = *s_plan (launcher);
        plan.n = n;
        plan.per_process = per_process;
        plan.first_id = first;
        s_spawn_engines (self, &plan, false);
        launcher->n += n;
        bn_clusterrec_set_engines (self->record, launcher->n,
                                   launcher->per_process);
        s_save (self);
    }
    json_decref (request);
}

static void
s_remote_event (void *arg, const char *line)
{
    s_event (arg, "%s", line);
}

static void
s_remote_save (void *arg)
{
    s_save (arg);
}

//  Start the engines on the hosts, giving them the engine connection file
//  as one line of JSON.
static int
s_start_remote (s_supervisor_t *self, double deadline)
{
    bn_launcher_t *launcher = self->launcher;
    json_error_t error;
    json_t *file = json_load_file (self->engine_file, 0, &error);
    char *info = file ? json_dumps (file, JSON_COMPACT) : NULL;
    json_decref (file);
    if (!info) {
        s_event (self, "error cannot read %s: %s", self->engine_file,
                 error.text);
        return -1;
    }
    char *log_path = bn_launcher_log_path (launcher, "engines");
    self->engines_log = log_path ? s_open_log (log_path, true) : -1;
    free (log_path);
    bn_remote_hooks_t hooks = {s_remote_event, s_remote_save, self};
    self->remote = bn_remote_new (launcher->ops, &launcher->plan, self->record,
                                  self->engines_log, hooks);
    int64_t until =
        zclock_mono () +
        (int64_t)((deadline - S_HOST_MARGIN - zclock_usecs () / 1e6) * 1000);
    int rc = self->remote ? bn_remote_start (self->remote, info, until) : -1;
    if (!self->remote)
        s_event (self, "error out of memory");
    free (info);
    return rc;
}

//  Take everything down: the engines first, so that they unregister from
//  a controller that is still there, then the rest of our group and every
//  descendant.
static void
s_teardown (s_supervisor_t *self)
{
    size_t procs = bn_clusterrec_engine_procs (self->record);
    pid_t *engines = calloc (procs + 1, sizeof *engines);
    size_t alive = 0;
    for (size_t index = 0; engines && index < procs; index++) {
        pid_t pid;
        unsigned long long start;
        bn_clusterrec_engine_proc (self->record, index, &pid, &start, NULL,
                                   NULL);
        if (bn_proctable_alive (pid, start))
            engines[alive++] = pid;
    }
    if (alive &&
        bn_proctable_terminate (0, engines, alive, SIGTERM, S_ENGINE_GRACE,
                                S_KILL_WAIT, s_on_reap, self) < 0)
        bn_log_error ("some engine processes would not end");
    free (engines);
    pid_t me = getpid ();
    int rc = bn_proctable_terminate (me, &me, 1, SIGTERM, S_CONTROLLER_GRACE,
                                     S_KILL_WAIT, s_on_reap, self);
    if (rc < 0)
        bn_log_error ("some processes of the cluster would not end");
    else
        bn_log_info ("cluster stopped");
}

static void __attribute__ ((noreturn))
s_supervise (bn_launcher_t *launcher, int event_fd)
{
    if (launcher->daemonize)
        setsid ();
    else
        setpgid (0, 0);
    //  Hold nothing of the caller's open but our pipe: a caller reading our
    //  output to its end must not wait for the cluster to end
    close_range (3, (unsigned)event_fd - 1, 0);
    close_range ((unsigned)event_fd + 1, ~0U, 0);
    sigset_t set;
    sigemptyset (&set);
    sigaddset (&set, SIGCHLD);
    sigaddset (&set, SIGTERM);
    sigaddset (&set, SIGINT);
    sigaddset (&set, SIGUSR1);
    sigprocmask (SIG_BLOCK, &set, NULL);
    //  A gone terminal or `cluster start` must not take the cluster down
    signal (SIGHUP, SIG_IGN);
    signal (SIGPIPE, SIG_IGN);
    prctl (PR_SET_CHILD_SUBREAPER, 1);

    s_supervisor_t self = {
        .launcher = launcher, .event_fd = event_fd, .engines_log = -1};
    self.signal_fd = signalfd (-1, &set, SFD_CLOEXEC);
    bn_log_set_default_ident ("supervisor");
    bn_log_set_level (BN_LOG_INFO);
    char *log_path = bn_launcher_log_path (launcher, "cluster");
    int log_fd = log_path ? s_open_log (log_path, true) : -1;
    free (log_path);
    int null = open ("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2 (null, STDIN_FILENO);
        dup2 (log_fd >= 0 ? log_fd : null, STDOUT_FILENO);
        dup2 (log_fd >= 0 ? log_fd : null, STDERR_FILENO);
        close (null);
    }
    if (log_fd >= 0)
        close (log_fd);

    self.record =
        bn_clusterrec_new (launcher->profile_dir, launcher->cluster_id);
    self.record_path =
        bn_clusterrec_path (launcher->profile_dir, launcher->cluster_id);
    self.engine_file = bn_connfile_path (
        launcher->profile_dir, launcher->cluster_id, BN_CONNFILE_ENGINE);
    if (!self.record || !self.record_path || !self.engine_file) {
        s_event (&self, "error out of memory");
        _exit (1);
    }
    if (self.signal_fd < 0) {
        s_event (&self, "error cannot watch signals: %s", strerror (errno));
        _exit (1);
    }
    const bn_launch_plan_t *plan = s_plan (launcher);
    bool remote = launcher->ops->remote;
    bn_clusterrec_set_launcher (self.record, launcher->ops->name,
                                plan->ssh_cmd ? plan->ssh_cmd : "");
    bn_clusterrec_set_profile (self.record, launcher->profile);
    bn_clusterrec_set_engines (self.record, launcher->n, launcher->per_process);
    bn_clusterrec_set_daemonized (self.record, launcher->daemonize);
    bn_clusterrec_set_supervisor (self.record, getpid (),
                                  s_starttime (getpid ()));
    s_save (&self);
    if (remote)
        bn_log_info ("starting %d engines, %d a host on %d hosts by %s, in %s",
                     launcher->n, plan->engines_per_host, plan->nhosts,
                     launcher->ops->name, launcher->profile_dir);
    else
        bn_log_info ("starting %d engines, %d per process, in %s", launcher->n,
                     launcher->per_process, launcher->profile_dir);

    self.controller = s_start_controller (&self);
    if (self.controller < 0) {
        s_event (&self, "error cannot fork: %s", strerror (errno));
        _exit (1);
    }
    bn_clusterrec_set_controller (self.record, self.controller,
                                  s_starttime (self.controller));
    s_save (&self);
    s_event (&self, "controller %d", (int)self.controller);

    //  Engines need the controller's engine connection file
    bool stopping = false;
    double deadline = zclock_usecs () / 1e6 + launcher->timeout;
    bool engines = launcher->n == 0 && !remote;
    if (engines)
        s_event (&self, "engines 0 0 0");
    while (!stopping && !engines) {
        int sig = s_wait (&self, 20);
        if (sig == SIGTERM || sig == SIGINT)
            stopping = true;
        else if (s_reap (&self, false))
            stopping = true;
        else if (access (self.engine_file, F_OK) == 0) {
            if ((remote ? s_start_remote (&self, deadline)
                        : s_start_engines (&self)) != 0)
                stopping = true;
            engines = true;
        } else if (zclock_usecs () / 1e6 > deadline) {
            bn_log_error ("no %s after %g s", self.engine_file,
                          launcher->timeout);
            s_event (&self, "error the controller wrote no %s within %g s",
                     self.engine_file, launcher->timeout);
            stopping = true;
        }
    }

    while (!stopping) {
        int sig = s_wait (&self, self.remote ? 200 : 1000);
        if (sig == SIGTERM || sig == SIGINT) {
            bn_log_info ("stopping on signal %d", sig);
            stopping = true;
        } else if (s_reap (&self, false)) {
            bn_log_error ("the controller is gone: stopping the cluster");
            stopping = true;
        } else if (self.remote) {
            bn_remote_tick (self.remote);
            if (bn_remote_state (self.remote) < 0)
                stopping = true;
        } else
            //  `cluster add` signals; a lost signal waits for the next tick
            s_add_engines (&self);
    }
    if (self.remote) {
        s_reap (&self, true);
        bn_remote_stop (self.remote, S_REMOTE_GRACE);
    }
    s_reap (&self, true);
    s_teardown (&self);
    s_event (&self, "stopped");
    bn_remote_destroy (&self.remote);
    _exit (self.controller_failed ? 1 : 0);
}

// ---------------------------------------------------------------------------
//  The caller's side

void
bn_launcher_path_error (const char *path, const char *doing, int error,
                        char *text, size_t size)
{
    assert (path && doing && text);
    char *copy = strdup (path);
    for (char *end = copy ? copy + 1 : NULL; end && error == ENOTDIR; end++) {
        if (*end != '/' && *end != 0)
            continue;
        char saved = *end;
        *end = 0;
        struct stat info;
        if (stat (copy, &info) == 0 && !S_ISDIR (info.st_mode)) {
            snprintf (text, size, "cannot %s %s: %s is a file, not a folder",
                      doing, path, copy);
            free (copy);
            return;
        }
        *end = saved;
        if (saved == 0)
            break;
    }
    free (copy);
    snprintf (text, size, "cannot %s %s: %s", doing, path, strerror (error));
}

int
bn_launcher_make_folders (const char *profile_dir, char *error, size_t size)
{
    assert (profile_dir);
    const char *folders[] = {"", "/security", "/pid", "/log"};
    for (size_t index = 0; index < sizeof folders / sizeof folders[0];
         index++) {
        char *path = zsys_sprintf ("%s%s", profile_dir, folders[index]);
        if (!path) {
            snprintf (error, size, "out of memory");
            return -1;
        }
        struct stat info;
        int rc = 0;
        if (stat (path, &info) == 0 && !S_ISDIR (info.st_mode)) {
            snprintf (error, size,
                      "cannot use the profile folder %s: it is a "
                      "file, not a folder",
                      path);
            rc = -1;
        } else if (bn_path_mkdir (path) != 0) {
            bn_launcher_path_error (path, "create the profile folder", errno,
                                    error, size);
            rc = -1;
        } else if (access (path, W_OK | X_OK) != 0) {
            bn_launcher_path_error (path, "write in the profile folder", errno,
                                    error, size);
            rc = -1;
        } else if (index == 1)
            chmod (path, 0700);
        free (path);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int
bn_launcher_start (bn_launcher_t *self)
{
    assert (self);
    assert (self->supervisor == 0);
    assert (self->controller_path && self->engine_path);
    const char *folders[] = {"", "/security", "/pid", "/log"};
    for (size_t index = 0; index < sizeof folders / sizeof folders[0];
         index++) {
        char *path = zsys_sprintf ("%s%s", self->profile_dir, folders[index]);
        if (!path)
            return -1;
        int rc = zsys_dir_create ("%s", path);
        if (index == 1)
            chmod (path, 0700);
        free (path);
        if (rc != 0)
            return -1;
    }
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) != 0)
        return -1;
    fflush (stdout);
    fflush (stderr);
    pid_t pid = fork ();
    if (pid < 0) {
        int error = errno;
        close (fds[0]);
        close (fds[1]);
        errno = error;
        return -1;
    }
    if (pid == 0) {
        close (fds[0]);
        s_supervise (self, fds[1]);
    }
    close (fds[1]);
    //  Set the group from this side too, so that it exists before we
    //  signal it, whichever process runs first
    if (!self->daemonize)
        setpgid (pid, pid);
    fcntl (fds[0], F_SETFL, fcntl (fds[0], F_GETFL) | O_NONBLOCK);
    self->supervisor = pid;
    self->event_fd = fds[0];
    return 0;
}

pid_t
bn_launcher_pgid (bn_launcher_t *self)
{
    assert (self);
    return self->supervisor;
}

static void
s_set_problem (bn_launcher_t *self, const char *text)
{
    char *copy = strdup (text);
    if (copy) {
        free (self->problem);
        self->problem = copy;
    }
}

//  Act on one event line; returns -1 for a problem, 1 when the engines
//  are started, else 0.
static int
s_handle_event (bn_launcher_t *self, const char *line)
{
    if (strncmp (line, "exit ", 5) == 0 || strncmp (line, "error ", 6) == 0) {
        s_set_problem (self, strchr (line, ' ') + 1);
        return -1;
    }
    if (strncmp (line, "engines ", 8) == 0) {
        //  "engines PROCESSES ENGINES HOSTS"
        int procs = 0;
        if (sscanf (line + 8, "%d %d %d", &procs, &self->engines,
                    &self->hosts) != 3) {
            self->engines = self->n;
            self->hosts = self->n > 0;
        }
        self->engines_started = true;
        return 1;
    }
    if (strncmp (line, "warning ", 8) == 0)
        zlist_append (self->warnings, (void *)(line + 8));
    return 0;
}

int
bn_launcher_poll (bn_launcher_t *self, int timeout_ms)
{
    assert (self);
    if (self->event_fd < 0)
        return *self->problem ? -1 : (self->engines_started ? 1 : 0);
    struct pollfd item = {self->event_fd, POLLIN, 0};
    if (poll (&item, 1, timeout_ms) <= 0)
        return self->engines_started ? 1 : 0;
    int result = self->engines_started ? 1 : 0;
    while (true) {
        ssize_t size = read (self->event_fd, self->line + self->line_size,
                             sizeof self->line - 1 - self->line_size);
        if (size < 0 && errno == EINTR)
            continue;
        if (size < 0 && errno == EAGAIN)
            break;
        if (size <= 0) {
            //  The supervisor is gone: a problem unless it said why
            close (self->event_fd);
            self->event_fd = -1;
            if (!*self->problem)
                s_set_problem (self, "the cluster's supervisor ended");
            return -1;
        }
        self->line_size += (size_t)size;
        self->line[self->line_size] = 0;
        char *newline;
        while ((newline = strchr (self->line, '\n'))) {
            *newline = 0;
            int rc = s_handle_event (self, self->line);
            if (rc < 0 || (rc == 1 && result == 0))
                result = rc;
            size_t rest = self->line_size - (size_t)(newline + 1 - self->line);
            memmove (self->line, newline + 1, rest + 1);
            self->line_size = rest;
        }
        if (self->line_size == sizeof self->line - 1)
            self->line_size = 0; //  An overlong line: drop it
        if (result < 0)
            return -1;
    }
    return result;
}

const char *
bn_launcher_problem (bn_launcher_t *self)
{
    assert (self);
    return self->problem;
}

int
bn_launcher_abort (bn_launcher_t *self)
{
    assert (self);
    if (self->supervisor <= 0)
        return 0;
    if (self->ops->remote) {
        //  The supervisor ends what runs on the hosts in order (sessions,
        //  a step, a job), which takes longer; what it could not end, the
        //  launcher's stop ends
        int rc = bn_launcher_stop (self->profile_dir, self->cluster_id,
                                   S_REMOTE_ABORT_GRACE, false, NULL);
        if (rc != BN_LAUNCHER_NO_CLUSTER) {
            waitpid (self->supervisor, NULL, WNOHANG);
            self->supervisor = 0;
            return rc < 0 ? -1 : 0;
        }
    }
    pid_t root = self->supervisor;
    int rc = bn_proctable_terminate (root, &root, 1, SIGTERM, S_ABORT_GRACE,
                                     S_KILL_WAIT, NULL, NULL);
    //  Reap the supervisor, our child
    waitpid (self->supervisor, NULL, WNOHANG);
    bn_launcher_remove_files (self->profile_dir, self->cluster_id, false);
    self->supervisor = 0;
    return rc < 0 ? -1 : 0;
}

int
bn_launcher_add (const char *profile_dir, const char *cluster_id, int n,
                 int per_process, int first, char *error, size_t size)
{
    assert (profile_dir);
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    pid_t supervisor = record ? bn_clusterrec_pgid (record) : 0;
    bool alive =
        record && bn_proctable_alive (supervisor,
                                      bn_clusterrec_supervisor_start (record));
    bn_clusterrec_destroy (&record);
    if (!alive) {
        snprintf (error, size, "the cluster's supervisor is not running");
        return -1;
    }
    path = bn_launcher_add_path (profile_dir, cluster_id);
    char *staged = path ? zsys_sprintf ("%s.new", path) : NULL;
    json_t *request = json_pack ("{s:i, s:i, s:i}", "n", n, "per_process",
                                 per_process, "first", first);
    int rc = -1;
    if (staged && request && json_dump_file (request, staged, 0) == 0 &&
        rename (staged, path) == 0)
        rc = 0;
    else
        snprintf (error, size, "cannot write %s: %s", path ? path : "",
                  strerror (errno));
    json_decref (request);
    free (staged);
    //  Told at once, or on its next tick
    if (rc == 0)
        kill (supervisor, SIGUSR1);
    int64_t until = zclock_mono () + S_ADD_WAIT_MS;
    while (rc == 0 && access (path, F_OK) == 0) {
        if (zclock_mono () > until) {
            unlink (path);
            snprintf (error, size,
                      "the cluster's supervisor (pid %d) did not take the "
                      "request",
                      (int)supervisor);
            rc = -1;
        } else
            zclock_sleep (10);
    }
    free (path);
    return rc;
}

static int
s_unlink (const char *path)
{
    return path && unlink (path) == 0 ? 1 : 0;
}

char *
bn_launcher_batch_path (const char *profile_dir, const char *cluster_id)
{
    bool named = cluster_id && *cluster_id;
    return zsys_sprintf ("%s/pid/banyan-sbatch%s%s.sh", profile_dir,
                         named ? "-" : "", named ? cluster_id : "");
}

int
bn_launcher_remove_files (const char *profile_dir, const char *cluster_id,
                          bool keep_connection_files)
{
    int removed = 0;
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    removed += s_unlink (path);
    free (path);
    path = bn_launcher_batch_path (profile_dir, cluster_id);
    removed += s_unlink (path);
    free (path);
    if (bn_clusterrec_controller_pid (profile_dir, cluster_id) > 0)
        return removed;
    path = bn_clusterrec_controller_pidfile (profile_dir, cluster_id);
    removed += s_unlink (path);
    free (path);
    if (!keep_connection_files) {
        path = bn_connfile_path (profile_dir, cluster_id, BN_CONNFILE_CLIENT);
        removed += s_unlink (path);
        free (path);
        path = bn_connfile_path (profile_dir, cluster_id, BN_CONNFILE_ENGINE);
        removed += s_unlink (path);
        free (path);
    }
    return removed;
}

int
bn_launcher_stop (const char *profile_dir, const char *cluster_id, double grace,
                  bool keep_connection_files, int *count)
{
    assert (profile_dir);
    if (count)
        *count = 0;
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    if (!record)
        return BN_LAUNCHER_NO_CLUSTER;

    //  Only processes that are still the ones recorded (same start time)
    //  are ours; a group id is only used if its leader is ours, because a
    //  stale group id may name someone else's group by now.
    size_t procs = bn_clusterrec_engine_procs (record);
    size_t sessions = bn_clusterrec_sessions (record);
    pid_t *roots = calloc (procs + sessions + 2, sizeof *roots);
    size_t nroots = 0;
    pid_t pgid = 0;
    if (roots) {
        pid_t supervisor = bn_clusterrec_pgid (record);
        if (bn_proctable_alive (supervisor,
                                bn_clusterrec_supervisor_start (record))) {
            roots[nroots++] = supervisor;
            pgid = supervisor;
        }
        pid_t controller = bn_clusterrec_controller (record);
        if (bn_proctable_alive (controller,
                                bn_clusterrec_controller_start (record)))
            roots[nroots++] = controller;
        for (size_t index = 0; index < procs; index++) {
            pid_t pid;
            unsigned long long start;
            bn_clusterrec_engine_proc (record, index, &pid, &start, NULL, NULL);
            if (bn_proctable_alive (pid, start))
                roots[nroots++] = pid;
        }
        for (size_t index = 0; index < sessions; index++) {
            pid_t pid;
            unsigned long long start;
            bn_clusterrec_session (record, index, &pid, &start);
            if (bn_proctable_alive (pid, start))
                roots[nroots++] = pid;
        }
    }
    int rc = BN_LAUNCHER_NOT_RUNNING;
    if (nroots) {
        //  A live supervisor stops the cluster in order; we only watch, and
        //  kill what is left after grace
        int sig = SIGTERM;
        if (pgid > 0 && kill (pgid, SIGTERM) == 0)
            sig = 0;
        int signalled = bn_proctable_terminate (pgid, roots, nroots, sig, grace,
                                                S_KILL_WAIT, NULL, NULL);
        if (signalled < 0)
            rc = -1;
        else {
            rc = BN_LAUNCHER_STOPPED;
            if (count)
                *count = signalled;
        }
    }
    free (roots);
    //  What still runs on the hosts: the supervisor ended it if it could,
    //  and wrote down what it could not
    const bn_launch_ops_t *ops =
        bn_launch_find (bn_clusterrec_launcher (record));
    if (rc != -1 && ops && ops->stop) {
        path = bn_clusterrec_path (profile_dir, cluster_id);
        bn_clusterrec_t *now = path ? bn_clusterrec_load (path) : NULL;
        free (path);
        bn_clusterrec_t *which = now ? now : record;
        if (*bn_clusterrec_job (which) ||
            bn_clusterrec_hosts_in (which, BN_HOST_RUNNING) ||
            bn_clusterrec_hosts_in (which, BN_HOST_LOST)) {
            int told = ops->stop (which, grace, stderr);
            if (told < 0)
                rc = -1;
            else if (told > 0) {
                rc = BN_LAUNCHER_STOPPED;
                if (count)
                    *count += told;
            }
        }
        bn_clusterrec_destroy (&now);
    }
    if (rc != -1)
        bn_launcher_remove_files (profile_dir, cluster_id,
                                  keep_connection_files);
    bn_clusterrec_destroy (&record);
    return rc;
}

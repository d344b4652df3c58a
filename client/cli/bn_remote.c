/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_remote: a remote launch as the cluster's supervisor runs it.  */
#define _GNU_SOURCE //  pipe2
#include "bn_remote.h"
#include "bn_hostscript.h"
#include "bn_launchwatch.h"
#include "bn_log.h"
#include "bn_proctable.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

//  How often the job is looked at while the engines start, and after
#define S_POLL_STARTING_MS 1000
#define S_POLL_RUNNING_MS 5000

//  How long a host's launch process found ended waits for its last words
//  to come through the launch program's standard error
#define S_LAST_WORDS_MS 500

//  Lines of a launch program's standard error kept to explain a host
#define S_SAID 8

//  One launch process: an ssh session, srun, mpiexec or sbatch.
typedef struct {
    bn_launch_cmd_t *cmd; //  What it runs (owned by the list)
    int rank;             //  Its host's rank when it serves one, else -1
    int first_rank;       //  The rank of the first host it serves
    pid_t pid;            //  0 until started
    int in_fd;            //  Its standard input while held open, or -1
    int out_fd;           //  Its standard output until EOF, or -1
    int err_fd;           //  Its standard error until EOF, or -1
    int log_fd;           //  Where its output goes
    char out[4096];       //  Partial lines
    size_t out_size;
    char err[1024];
    size_t err_size;
    char first[512];        //  Its first line on standard error
    char last[512];         //  Its last line on standard error
    char said[S_SAID][512]; //  Its last lines on standard error, a ring
    size_t said_next;
    bn_launchwatch_t *watch; //  Its hosts' launch processes
                             //  (cmd->host_children), or NULL
    int reported;            //  Hosts that reported through it
    int failed;              //  Hosts of it that failed alone
    off_t reports_at;        //  Read so far of its reports file (cmd->reports)
    char reports[4096];      //  and its partial line
    size_t reports_size;
    bool ended;     //  Reaped
    bool accounted; //  Its hosts that never reported were counted
} s_session_t;

struct _bn_remote_t {
    const bn_launch_ops_t *ops;
    const bn_launch_plan_t *plan;
    bn_clusterrec_t *record;
    int log_fd;
    bn_remote_hooks_t hooks;
    zlistx_t *commands;
    s_session_t *sessions;
    size_t nsessions;
    int *host_session; //  Session of each record host, by index
    size_t host_session_size;
    bool *ranks;                //  Hosts that reported, by rank (plan->nhosts)
    bool *failed_ranks;         //  Hosts that failed alone, by rank
    bn_launchwatch_end_t *ends; //  A host's launch process ended, by rank
    int64_t *ended_at;          //  when found (0: not)
    int expected;               //  Hosts that should report
    int reported;               //  Hosts that did
    int failed;                 //  Hosts that never will
    int engines;                //  Engines the hosts started
    int procs;                  //  Processes they started them in
    char failures[1024];        //  "h3: reason; h4: reason"
    int64_t deadline;
    int state; //  0 starting, 1 started, -1 failed
    int64_t next_poll;
    bool job_ended;
    bool stopping;
};

static void
s_event (bn_remote_t *self, const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (line, sizeof line, format, args);
    va_end (args);
    //  One line each
    for (char *c = line; *c; c++)
        if (*c == '\n')
            *c = ' ';
    self->hooks.event (self->hooks.arg, line);
}

static void
s_save (bn_remote_t *self)
{
    self->hooks.save (self->hooks.arg);
}

bn_remote_t *
bn_remote_new (const bn_launch_ops_t *ops, const bn_launch_plan_t *plan,
               bn_clusterrec_t *record, int log_fd, bn_remote_hooks_t hooks)
{
    assert (ops && plan && record && hooks.event && hooks.save);
    bn_remote_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->ops = ops;
    self->plan = plan;
    self->record = record;
    self->log_fd = log_fd;
    self->hooks = hooks;
    return self;
}

void
bn_remote_destroy (bn_remote_t **self_p)
{
    assert (self_p);
    bn_remote_t *self = *self_p;
    if (self) {
        for (size_t index = 0; index < self->nsessions; index++) {
            s_session_t *session = &self->sessions[index];
            if (session->in_fd >= 0)
                close (session->in_fd);
            if (session->out_fd >= 0)
                close (session->out_fd);
            if (session->err_fd >= 0)
                close (session->err_fd);
            bn_launchwatch_destroy (&session->watch);
        }
        free (self->sessions);
        free (self->host_session);
        free (self->ranks);
        free (self->failed_ranks);
        free (self->ends);
        free (self->ended_at);
        zlistx_destroy (&self->commands);
        free (self);
        *self_p = NULL;
    }
}

static void
s_log_line (int fd, const char *label, const char *line)
{
    if (fd < 0)
        return;
    char text[1200];
    int length = snprintf (text, sizeof text, "[%s] %s\n", label, line);
    if (length > (int)sizeof text - 1)
        length = (int)sizeof text - 1;
    if (length > 0 && write (fd, text, (size_t)length) < 0)
        return;
}

// ---------------------------------------------------------------------------
//  Starting

//  Run session's command with its pipes; returns 0 or -1 (errno set).
static int
s_spawn (s_session_t *session, const char *info)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    bool stdin_info = session->cmd->info == BN_LAUNCH_INFO_STDIN;
    if ((stdin_info && pipe2 (in, O_CLOEXEC)) || pipe2 (out, O_CLOEXEC) ||
        pipe2 (err, O_CLOEXEC)) {
        int error = errno;
        for (int index = 0; index < 2; index++) {
            if (in[index] >= 0)
                close (in[index]);
            if (out[index] >= 0)
                close (out[index]);
        }
        errno = error;
        return -1;
    }
    pid_t pid = fork ();
    if (pid == 0) {
        sigset_t none;
        sigemptyset (&none);
        sigprocmask (SIG_SETMASK, &none, NULL);
        signal (SIGPIPE, SIG_DFL);
        signal (SIGHUP, SIG_DFL);
        int null = open ("/dev/null", O_RDONLY);
        dup2 (stdin_info ? in[0] : null, STDIN_FILENO);
        dup2 (out[1], STDOUT_FILENO);
        dup2 (err[1], STDERR_FILENO);
        //  A stock engine would take IPP_CONNECTION_INFO before ours
        unsetenv ("IPP_CONNECTION_INFO");
        if (session->cmd->info == BN_LAUNCH_INFO_ENV)
            setenv ("BANYAN_CONNECTION_INFO", info, 1);
        execvp (session->cmd->argv[0], session->cmd->argv);
        fprintf (stderr, "cannot run %s: %s\n", session->cmd->argv[0],
                 strerror (errno));
        _exit (127);
    }
    int error = errno;
    if (stdin_info)
        close (in[0]);
    close (out[1]);
    close (err[1]);
    if (pid < 0) {
        if (stdin_info)
            close (in[1]);
        close (out[0]);
        close (err[0]);
        errno = error;
        return -1;
    }
    session->pid = pid;
    session->in_fd = stdin_info ? in[1] : -1;
    session->out_fd = out[0];
    session->err_fd = err[0];
    fcntl (out[0], F_SETFL, O_NONBLOCK);
    fcntl (err[0], F_SETFL, O_NONBLOCK);
    if (stdin_info) {
        //  The host script reads its first line; a few kB fit in the pipe
        char *line = zsys_sprintf ("%s\n", info);
        size_t length = line ? strlen (line) : 0;
        size_t done = 0;
        while (line && done < length) {
            ssize_t wrote = write (in[1], line + done, length - done);
            if (wrote < 0 && errno == EINTR)
                continue;
            if (wrote <= 0)
                break; //  It ended already; its exit will say why
            done += (size_t)wrote;
        }
        free (line);
    }
    return 0;
}

static int
s_write_file (const char *path, const char *text)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t length = strlen (text);
    bool ok = write (fd, text, length) == (ssize_t)length;
    return close (fd) == 0 && ok ? 0 : -1;
}

static unsigned long long
s_starttime (pid_t pid)
{
    bn_procinfo_t info;
    return bn_proctable_stat (pid, &info) == 0 ? info.starttime : 0;
}

int
bn_remote_start (bn_remote_t *self, const char *info, int64_t deadline)
{
    assert (self);
    assert (info);
    self->deadline = deadline;
    self->commands = self->ops->commands (self->plan);
    size_t count = self->commands ? zlistx_size (self->commands) : 0;
    self->sessions = calloc (count + 1, sizeof *self->sessions);
    size_t hosts = (size_t)self->plan->nhosts + 1;
    self->ranks = calloc (hosts, sizeof *self->ranks);
    self->failed_ranks = calloc (hosts, sizeof *self->failed_ranks);
    self->ends = calloc (hosts, sizeof *self->ends);
    self->ended_at = calloc (hosts, sizeof *self->ended_at);
    if (!self->commands || !self->sessions || !self->ranks ||
        !self->failed_ranks || !self->ends || !self->ended_at) {
        s_event (self, "error out of memory");
        self->state = -1;
        return -1;
    }
    int rank = 0;
    for (bn_launch_cmd_t *cmd = zlistx_first (self->commands); cmd;
         cmd = zlistx_next (self->commands)) {
        s_session_t *session = &self->sessions[self->nsessions++];
        session->cmd = cmd;
        session->rank = cmd->hosts == 1 ? rank : -1;
        session->first_rank = rank;
        session->in_fd = session->out_fd = session->err_fd = -1;
        //  A job's submission is the cluster's business, not the engines'
        session->log_fd = cmd->hosts ? self->log_fd : STDERR_FILENO;
        rank += cmd->hosts;
        self->expected += cmd->hosts;
        if (cmd->file && s_write_file (cmd->file, cmd->file_text) != 0) {
            s_event (self, "error cannot write %s: %s", cmd->file,
                     strerror (errno));
            self->state = -1;
            return -1;
        }
        if (s_spawn (session, info) != 0) {
            s_event (self, "error cannot run %s: %s", cmd->argv[0],
                     strerror (errno));
            self->state = -1;
            return -1;
        }
        bn_log_info ("%s: started %s (pid %d)", cmd->label, cmd->argv[0],
                     (int)session->pid);
        if (cmd->host_children)
            session->watch = bn_launchwatch_new (session->pid,
                                                 self->plan->hosts, cmd->hosts);
        bn_clusterrec_add_session (self->record, session->pid,
                                   s_starttime (session->pid));
    }
    s_save (self);
    if (count == 0) {
        //  No engines: nothing to wait for
        self->state = 1;
        s_event (self, "engines 0 0 0");
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  Reports

static void
s_fail_hosts (bn_remote_t *self, int hosts, const char *what,
              const char *reason)
{
    self->failed += hosts;
    size_t used = strlen (self->failures);
    snprintf (self->failures + used, sizeof self->failures - used, "%s%s: %s",
              used ? "; " : "", what, reason);
    bn_log_warn ("%s: %s", what, reason);
    s_event (self, "warning %s: %s", what, reason);
}

//  Decide the start once every host has reported or failed, or once too
//  many failed for --min-hosts.
static void
s_check_start (bn_remote_t *self)
{
    if (self->state != 0 || self->expected == 0)
        return;
    int needed =
        self->plan->min_hosts > 0 ? self->plan->min_hosts : self->expected;
    int pending = self->expected - self->reported - self->failed;
    if (self->reported + pending < needed ||
        (pending == 0 && !self->reported)) {
        self->state = -1;
        s_event (self,
                 "error %d of %d host%s failed, and %d must start "
                 "(--min-hosts): %s",
                 self->failed, self->expected, self->expected == 1 ? "" : "s",
                 needed, self->failures);
    } else if (pending == 0) {
        self->state = 1;
        bn_log_info ("%d engines in %d processes on %d hosts", self->engines,
                     self->procs, self->reported);
        s_event (self, "engines %d %d %d", self->procs, self->engines,
                 self->reported);
    }
}

static void
s_note_host (bn_remote_t *self, size_t session_index, int index)
{
    if (index < 0)
        return;
    if ((size_t)index >= self->host_session_size) {
        size_t size = (size_t)index + 16;
        int *grown = realloc (self->host_session, size * sizeof *grown);
        if (!grown)
            return;
        for (size_t at = self->host_session_size; at < size; at++)
            grown[at] = -1;
        self->host_session = grown;
        self->host_session_size = size;
    }
    self->host_session[index] = (int)session_index;
}

static void
s_on_report (bn_remote_t *self, size_t session_index,
             bn_hostscript_report_t *report)
{
    s_session_t *session = &self->sessions[session_index];
    const char *label = session->cmd->label;
    if (report->exit) {
        char how[128];
        if (report->status > 128)
            snprintf (how, sizeof how, "killed by signal %d",
                      report->status - 128);
        else
            snprintf (how, sizeof how, "exited with status %d", report->status);
        if (self->stopping)
            bn_log_info ("process %d on %s %s", report->pid, report->host, how);
        else {
            bn_log_warn ("process %d on %s %s", report->pid, report->host, how);
            s_event (self, "exit engine process %d on %s %s", report->pid,
                     report->host, how);
        }
        return;
    }
    //  A host reached by name keeps that name: ssh reaches it by it again
    bn_clusterrec_host_t host = {
        .name = (char *)(session->cmd->hosts == 1 ? label : report->host),
        .rank = report->rank,
        .pgid = report->pgid,
        .first = report->first,
        .count = report->count,
        .pids = (char *)report->pids,
        .node = report->node,
        .step = (char *)report->step,
        .state = BN_HOST_RUNNING,
        .reason = ""};
    s_note_host (self, session_index,
                 bn_clusterrec_add_host (self->record, &host));
    s_save (self);
    if (report->restart > 0) {
        //  Its host node died and was started again, its engines too: the
        //  record has their new pids; the start counted them already
        bn_log_warn ("%s (%s): host node started again (pid %d, restart "
                     "%d), engines %d-%d in processes %s",
                     host.name, report->host, report->node, report->restart,
                     report->first, report->first + report->count - 1,
                     report->pids);
        return;
    }
    if (report->rank >= 0 && report->rank < self->plan->nhosts &&
        self->failed_ranks[report->rank]) {
        bn_log_warn ("%s (%s): reported, but counted as failed already",
                     host.name, report->host);
        return;
    }
    if (report->rank >= 0 && report->rank < self->plan->nhosts)
        self->ranks[report->rank] = true;
    session->reported++;
    self->reported++;
    self->engines += report->count;
    int procs = *report->pids ? 1 : 0;
    for (const char *c = report->pids; *c; c++)
        procs += *c == ',';
    self->procs += procs;
    if (report->count > 0)
        bn_log_info ("%s (%s): engines %d-%d in processes %s, process group %d",
                     host.name, report->host, report->first,
                     report->first + report->count - 1, report->pids,
                     report->pgid);
    else
        bn_log_info ("%s (%s): no engines", host.name, report->host);
    s_check_start (self);
}

static void
s_on_line (bn_remote_t *self, size_t session_index, char *line)
{
    s_session_t *session = &self->sessions[session_index];
    if (strncmp (line, "banyan-host ", 12) == 0 ||
        strncmp (line, "banyan-exit ", 12) == 0) {
        char copy[4096];
        snprintf (copy, sizeof copy, "%s", line);
        bn_hostscript_report_t report;
        if (bn_hostscript_parse (copy, &report) == 0) {
            s_on_report (self, session_index, &report);
            return;
        }
    }
    if (self->ops->output && session->cmd->hosts == 0 &&
        self->ops->output (self->record, line) == 0) {
        bn_log_info ("%s: %s", session->cmd->label, line);
        s_save (self);
        return;
    }
    s_log_line (session->log_fd, session->cmd->label, line);
}

//  A line a session wrote on its standard error: logged, and kept as its
//  first and last (the start of a long line is enough to name a fault).
static void
s_err_line (s_session_t *session, const char *line)
{
    if (!*session->first)
        snprintf (session->first, sizeof session->first, "%.*s",
                  (int)sizeof session->first - 1, line);
    snprintf (session->last, sizeof session->last, "%.*s",
              (int)sizeof session->last - 1, line);
    snprintf (session->said[session->said_next++ % S_SAID],
              sizeof session->said[0], "%.*s", (int)sizeof session->said[0] - 1,
              line);
    s_log_line (session->log_fd, session->cmd->label, line);
}

//  Read what fd has into buffer, calling on_line for each whole line (or
//  an overlong part). Returns false at EOF or on an error.
static bool
s_read_lines (bn_remote_t *self, size_t session_index, int fd, char *buffer,
              size_t *used, size_t size, bool is_err)
{
    s_session_t *session = &self->sessions[session_index];
    while (true) {
        ssize_t got = read (fd, buffer + *used, size - 1 - *used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN)
            return true;
        if (got <= 0) {
            if (*used) {
                buffer[*used] = 0;
                if (is_err)
                    s_err_line (session, buffer);
                else
                    s_on_line (self, session_index, buffer);
                *used = 0;
            }
            return false;
        }
        *used += (size_t)got;
        buffer[*used] = 0;
        char *start = buffer, *newline;
        while ((newline = strchr (start, '\n')) ||
               (start == buffer && *used == size - 1)) {
            if (newline)
                *newline = 0;
            if (is_err) {
                if (*start)
                    s_err_line (session, start);
            } else
                s_on_line (self, session_index, start);
            if (!newline) {
                start = buffer + *used;
                break;
            }
            start = newline + 1;
        }
        size_t rest = *used - (size_t)(start - buffer);
        memmove (buffer, start, rest);
        *used = rest;
    }
}

//  Read the report lines that session's hosts added to its reports file
//  (a batch job's output: the engines' output is there too, and stays
//  there). A file made anew (shorter than what was read) is read again
//  from its start.
static void
s_read_reports (bn_remote_t *self, size_t index)
{
    s_session_t *session = &self->sessions[index];
    int fd = open (session->cmd->reports, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat info;
    if (fstat (fd, &info) == 0 && info.st_size < session->reports_at) {
        session->reports_at = 0;
        session->reports_size = 0;
    }
    char *buffer = session->reports;
    size_t size = sizeof session->reports;
    ssize_t got;
    while ((got = pread (fd, buffer + session->reports_size,
                         size - 1 - session->reports_size,
                         session->reports_at)) > 0) {
        session->reports_at += got;
        session->reports_size += (size_t)got;
        buffer[session->reports_size] = 0;
        char *start = buffer, *newline;
        while ((newline = strchr (start, '\n'))) {
            *newline = 0;
            bn_hostscript_report_t report;
            if ((strncmp (start, "banyan-host ", 12) == 0 ||
                 strncmp (start, "banyan-exit ", 12) == 0) &&
                bn_hostscript_parse (start, &report) == 0)
                s_on_report (self, index, &report);
            start = newline + 1;
        }
        size_t rest = session->reports_size - (size_t)(start - buffer);
        //  A line too long to be a report: skip it
        if (rest == size - 1)
            rest = 0;
        memmove (buffer, start, rest);
        session->reports_size = rest;
    }
    close (fd);
}

static void
s_read_session (bn_remote_t *self, size_t index)
{
    s_session_t *session = &self->sessions[index];
    if (session->out_fd >= 0 &&
        !s_read_lines (self, index, session->out_fd, session->out,
                       &session->out_size, sizeof session->out, false)) {
        close (session->out_fd);
        session->out_fd = -1;
    }
    if (session->err_fd >= 0 &&
        !s_read_lines (self, index, session->err_fd, session->err,
                       &session->err_size, sizeof session->err, true)) {
        close (session->err_fd);
        session->err_fd = -1;
    }
}

size_t
bn_remote_pollfds (bn_remote_t *self, struct pollfd *items, size_t max)
{
    assert (self);
    size_t count = 0;
    for (size_t index = 0; index < self->nsessions; index++) {
        s_session_t *session = &self->sessions[index];
        if (session->out_fd >= 0 && count < max)
            items[count++] = (struct pollfd){session->out_fd, POLLIN, 0};
        if (session->err_fd >= 0 && count < max)
            items[count++] = (struct pollfd){session->err_fd, POLLIN, 0};
    }
    return count;
}

void
bn_remote_read (bn_remote_t *self)
{
    assert (self);
    for (size_t index = 0; index < self->nsessions; index++)
        s_read_session (self, index);
}

// ---------------------------------------------------------------------------
//  Ends

//  The hosts of session that never reported cannot any more.
static void
s_account (bn_remote_t *self, s_session_t *session, const char *reason)
{
    if (session->accounted)
        return;
    session->accounted = true;
    int missing = session->cmd->hosts - session->reported - session->failed;
    if (missing <= 0)
        return;
    if (session->cmd->hosts == 1) {
        bn_clusterrec_host_t host = {.name = session->cmd->label,
                                     .rank = session->rank,
                                     .pids = "",
                                     .step = "",
                                     .state = BN_HOST_FAILED,
                                     .reason = (char *)reason};
        bn_clusterrec_add_host (self->record, &host);
        s_save (self);
        char what[300];
        snprintf (what, sizeof what, "host %s", session->cmd->label);
        s_fail_hosts (self, 1, what, reason);
    } else {
        //  The hosts that did not report, when --hosts names them by rank
        //  (mpiexec), and what the launch program said first (hydra: why
        //  it could not reach one)
        char names[200] = "";
        size_t used = 0;
        const char *name =
            self->plan->hosts ? zlist_first (self->plan->hosts) : NULL;
        for (int rank = 0; name && rank < self->plan->nhosts; rank++) {
            if (rank >= session->first_rank &&
                rank < session->first_rank + session->cmd->hosts &&
                !self->ranks[rank] && !self->failed_ranks[rank]) {
                bn_clusterrec_host_t host = {.name = (char *)name,
                                             .rank = rank,
                                             .pids = "",
                                             .step = "",
                                             .state = BN_HOST_FAILED,
                                             .reason = (char *)reason};
                bn_clusterrec_add_host (self->record, &host);
                if (used < sizeof names)
                    used += (size_t)snprintf (names + used, sizeof names - used,
                                              "%s%s", used ? "," : "", name);
            }
            name = zlist_next (self->plan->hosts);
        }
        s_save (self);
        char what[300], why[1200];
        snprintf (what, sizeof what, "%s: %d of %d hosts%s%s%s",
                  session->cmd->label, missing, session->cmd->hosts,
                  *names ? " (" : "", names, *names ? ")" : "");
        if (*session->first && strcmp (session->first, reason) != 0)
            snprintf (why, sizeof why, "%s; %s said first: %s", reason,
                      session->cmd->label, session->first);
        else
            snprintf (why, sizeof why, "%s", reason);
        s_fail_hosts (self, missing, what, why);
    }
    s_check_start (self);
}

bool
bn_remote_reaped (bn_remote_t *self, pid_t pid, int status, bool stopping)
{
    assert (self);
    size_t index = 0;
    while (index < self->nsessions && self->sessions[index].pid != pid)
        index++;
    if (index == self->nsessions)
        return false;
    s_session_t *session = &self->sessions[index];
    //  Its last words first: reports, the reason it ended
    if (session->out_fd >= 0)
        fcntl (session->out_fd, F_SETFL, O_NONBLOCK);
    s_read_session (self, index);
    session->ended = true;
    if (session->in_fd >= 0) {
        close (session->in_fd);
        session->in_fd = -1;
    }
    char how[128];
    bn_proctable_describe_status (status, how, sizeof how);
    const char *label = session->cmd->label;
    stopping = stopping || self->stopping;
    char reason[700];
    if (*session->last)
        snprintf (reason, sizeof reason, "%s", session->last);
    else
        snprintf (reason, sizeof reason, "%s %s", session->cmd->argv[0], how);
    if (session->cmd->hosts == 0) {
        //  A job's submission: done once it named the job
        bool submitted = WIFEXITED (status) && WEXITSTATUS (status) == 0 &&
                         *bn_clusterrec_job (self->record);
        if (submitted && self->state == 0) {
            bn_log_info ("%s: job %s submitted", label,
                         bn_clusterrec_job (self->record));
            self->state = 1;
            self->next_poll = zclock_mono () + S_POLL_STARTING_MS;
            s_event (self, "engines 0 %d %d", self->plan->n,
                     self->plan->nhosts);
        } else if (!submitted && self->state == 0) {
            self->state = -1;
            s_event (self, "error %s %s: %s", session->cmd->argv[0], how,
                     reason);
        }
        return true;
    }
    if (stopping)
        bn_log_info ("%s: %s (pid %d) %s", label, session->cmd->argv[0],
                     (int)pid, how);
    else
        bn_log_warn ("%s: %s (pid %d) %s", label, session->cmd->argv[0],
                     (int)pid, how);
    s_account (self, session, reason);
    //  Its hosts: ended if it ended well, else they may still run there;
    //  but srun's or mpiexec's end is their step's or proxies' end
    bool clean = (WIFEXITED (status) && WEXITSTATUS (status) == 0) ||
                 session->cmd->info == BN_LAUNCH_INFO_ENV;
    bool any = false;
    for (size_t host = 0; host < self->host_session_size; host++) {
        if (self->host_session[host] != (int)index)
            continue;
        const bn_clusterrec_host_t *entry =
            bn_clusterrec_host (self->record, host);
        if (!entry || entry->state != BN_HOST_RUNNING)
            continue;
        any = true;
        char lost[1024];
        snprintf (lost, sizeof lost, "%.100s %s: %s", session->cmd->argv[0],
                  how, reason);
        bn_clusterrec_set_host_state (self->record, host,
                                      clean ? BN_HOST_ENDED : BN_HOST_LOST,
                                      clean ? NULL : lost);
    }
    s_save (self);
    if (any && !stopping)
        s_event (self, "exit %s: %s (pid %d) %s", label, session->cmd->argv[0],
                 (int)pid, how);
    return true;
}

//  The name of the host of rank, as --hosts gives it, into name.
static void
s_rank_name (bn_remote_t *self, int rank, char *name, size_t size)
{
    const char *host =
        self->plan->hosts ? zlist_first (self->plan->hosts) : NULL;
    for (int at = 0; host && at < rank; at++)
        host = zlist_next (self->plan->hosts);
    if (host)
        snprintf (name, size, "%s", host);
    else
        snprintf (name, size, "of rank %d", rank);
}

//  What session said last on its standard error about host's launch
//  process comm ("ssh: connect to host ..."), into line: the last line
//  of comm's that names host, else the last line that names it (a
//  wrapper's name is not ssh's), then true; else comm's last line, or "".
static bool
s_said (s_session_t *session, const char *comm, const char *host, char *line,
        size_t size)
{
    *line = 0;
    size_t prefix = strlen (comm);
    const char *naming = NULL;
    for (size_t back = 1; back <= S_SAID && back <= session->said_next;
         back++) {
        const char *said = session->said[(session->said_next - back) % S_SAID];
        bool comms = strncmp (said, comm, prefix) == 0 && said[prefix] == ':';
        bool names = strstr (said, host) != NULL;
        if (comms && names) {
            snprintf (line, size, "%s", said);
            return true;
        }
        if (names && !naming)
            naming = said;
        if (comms && !*line)
            snprintf (line, size, "%s", said);
    }
    if (naming)
        snprintf (line, size, "%s", naming);
    return naming != NULL;
}

//  Host rank of session cannot start: its launch process ended (end),
//  having said line.
static void
s_fail_rank (bn_remote_t *self, size_t index, int rank, const char *name,
             const char *line)
{
    s_session_t *session = &self->sessions[index];
    const bn_launchwatch_end_t *end = &self->ends[rank];
    char how[128], why[1200], what[300];
    if (end->status >= 0)
        bn_proctable_describe_status (end->status, how, sizeof how);
    else
        snprintf (how, sizeof how, "ended");
    if (*line)
        snprintf (why, sizeof why, "%s (%s's %s for it %s)", line,
                  session->cmd->label, end->comm, how);
    else
        snprintf (why, sizeof why, "%s's %s for it (pid %d) %s",
                  session->cmd->label, end->comm, (int)end->pid, how);
    self->failed_ranks[rank] = true;
    session->failed++;
    bn_clusterrec_host_t host = {.name = (char *)name,
                                 .rank = rank,
                                 .pids = "",
                                 .step = "",
                                 .state = BN_HOST_FAILED,
                                 .reason = why};
    bn_clusterrec_add_host (self->record, &host);
    s_save (self);
    snprintf (what, sizeof what, "host %s", name);
    s_fail_hosts (self, 1, what, why);
    s_check_start (self);
}

//  Look at the launch processes of session's hosts: a host whose one
//  ended before it reported has failed, which is said once the launch
//  program passed on its last words (or after S_LAST_WORDS_MS).
static void
s_watch_hosts (bn_remote_t *self, size_t index, int64_t now)
{
    s_session_t *session = &self->sessions[index];
    int first = session->first_rank;
    int last = first + session->cmd->hosts;
    if (last > self->plan->nhosts)
        last = self->plan->nhosts;
    bn_launchwatch_update (session->watch);
    bn_launchwatch_end_t end;
    while (bn_launchwatch_ended (session->watch, &end)) {
        int rank = first + end.rank;
        if (rank < last && !self->ranks[rank] && !self->failed_ranks[rank] &&
            !self->ended_at[rank]) {
            self->ends[rank] = end;
            self->ended_at[rank] = now;
        }
    }
    for (int rank = first; rank < last && self->state == 0; rank++) {
        if (!self->ended_at[rank] || self->ranks[rank] ||
            self->failed_ranks[rank])
            continue;
        char name[256], line[512];
        s_rank_name (self, rank, name, sizeof name);
        if (s_said (session, self->ends[rank].comm, name, line, sizeof line) ||
            now >= self->ended_at[rank] + S_LAST_WORDS_MS)
            s_fail_rank (self, index, rank, name, line);
    }
}

void
bn_remote_tick (bn_remote_t *self)
{
    assert (self);
    int64_t now = zclock_mono ();
    for (size_t index = 0; index < self->nsessions; index++) {
        s_session_t *session = &self->sessions[index];
        if (session->cmd->reports)
            s_read_reports (self, index);
        if (session->watch && self->state == 0 && !session->ended)
            s_watch_hosts (self, index, now);
    }
    if (self->state == 0 && self->deadline && now >= self->deadline) {
        for (size_t index = 0; index < self->nsessions; index++) {
            s_session_t *session = &self->sessions[index];
            if (session->ended || session->accounted ||
                session->reported + session->failed >= session->cmd->hosts)
                continue;
            if (session->cmd->hosts == 0) {
                self->state = -1;
                s_event (self, "error %s did not answer in time",
                         session->cmd->argv[0]);
            } else
                s_account (self, session, "no answer in time");
            if (session->cmd->hosts == 1 || session->reported == 0)
                kill (session->pid, SIGTERM);
        }
    }
    if (self->ops->poll && !self->job_ended &&
        *bn_clusterrec_job (self->record) && now >= self->next_poll) {
        char problem[300];
        int rc = self->ops->poll (self->record, problem, sizeof problem);
        s_save (self);
        //  Often until the job runs and its nodes are known
        bool known = self->state == 1 && *bn_clusterrec_nodes (self->record);
        self->next_poll =
            now + (known ? S_POLL_RUNNING_MS : S_POLL_STARTING_MS);
        if (rc == 1) {
            self->job_ended = true;
            //  Its hosts' engines ended with it
            for (size_t host = 0; host < bn_clusterrec_hosts (self->record);
                 host++)
                if (bn_clusterrec_host (self->record, host)->state ==
                    BN_HOST_RUNNING)
                    bn_clusterrec_set_host_state (self->record, host,
                                                  BN_HOST_ENDED, NULL);
            s_save (self);
            if (self->stopping)
                bn_log_info ("%s", problem);
            else {
                bn_log_warn ("%s", problem);
                s_event (self, "exit %s", problem);
            }
        }
    }
}

int
bn_remote_state (bn_remote_t *self)
{
    assert (self);
    return self->state;
}

static bool
s_running (bn_remote_t *self)
{
    for (size_t index = 0; index < self->nsessions; index++)
        if (self->sessions[index].pid > 0 && !self->sessions[index].ended)
            return true;
    return false;
}

//  True while the cluster's job runs, as the launcher's poll says at most
//  every 500 ms (*next_poll).
static bool
s_job_running (bn_remote_t *self, int64_t *next_poll)
{
    if (!self->ops->poll || self->job_ended ||
        !*bn_clusterrec_job (self->record))
        return false;
    if (zclock_mono () < *next_poll)
        return true;
    *next_poll = zclock_mono () + 500;
    char problem[300];
    if (self->ops->poll (self->record, problem, sizeof problem) == 1) {
        self->job_ended = true;
        bn_log_info ("%s", problem);
    }
    return !self->job_ended;
}

void
bn_remote_stop (bn_remote_t *self, double grace)
{
    assert (self);
    self->stopping = true;
    if (self->ops->end) {
        fflush (stderr);
        self->ops->end (self->record, stderr);
    }
    for (size_t index = 0; index < self->nsessions; index++) {
        s_session_t *session = &self->sessions[index];
        if (session->pid <= 0 || session->ended)
            continue;
        if (session->in_fd >= 0) {
            //  The host script's watcher sees the end of its input
            close (session->in_fd);
            session->in_fd = -1;
        } else if (!self->ops->end)
            kill (session->pid, SIGTERM);
    }
    int64_t deadline = zclock_mono () + (int64_t)(grace * 1000);
    int64_t next_poll = 0;
    while ((s_running (self) || s_job_running (self, &next_poll)) &&
           zclock_mono () < deadline) {
        struct pollfd items[64];
        size_t count = bn_remote_pollfds (self, items, 64);
        if (poll (items, count, 50) > 0)
            bn_remote_read (self);
        for (size_t index = 0; index < self->nsessions; index++) {
            s_session_t *session = &self->sessions[index];
            int status;
            if (session->pid > 0 && !session->ended &&
                waitpid (session->pid, &status, WNOHANG) == session->pid)
                bn_remote_reaped (self, session->pid, status, true);
        }
    }
    bn_remote_read (self);
    bool left = *bn_clusterrec_job (self->record) && !self->job_ended;
    left = left || bn_clusterrec_hosts_in (self->record, BN_HOST_RUNNING) ||
           bn_clusterrec_hosts_in (self->record, BN_HOST_LOST);
    if (self->ops->stop && left) {
        fflush (stderr);
        int told = self->ops->stop (self->record, grace, stderr);
        fflush (stderr);
        if (told < 0)
            bn_log_error ("some engines on the hosts would not end");
        else if (told > 0)
            bn_log_info ("told %d host%s or job%s to end its engines", told,
                         told == 1 ? "" : "s", told == 1 ? "" : "s");
        s_save (self);
    }
}

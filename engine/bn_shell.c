/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_shell: one shell command run asynchronously in a zloop (its pipes and
    exit watched through a bn_watch set).

    The child is started with posix_spawn (no code runs between fork and
    exec in this multi-threaded process), or by the process's spawner
    (bn_spawner) where it has one, in its own process group, so a
    time limit or a signal reaches everything it started. Its exit is
    watched through a pidfd, or where pidfds are missing (old kernels,
    valgrind) through a polling timer that only wakes a pipe; no SIGCHLD
    handler, which would be process-wide.

    Nothing that frees the shell runs in a timer handler: zloop rescans
    its timers, ended ones included, when a timer handler adds a timer.  */
#define _GNU_SOURCE
#include "bn_shell.h"
#include "bn_log.h"
#include "bn_rawtext.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define S_READ_SIZE 65536     //  bytes read per readable event
#define S_DRAIN_LIMIT 1048576 //  bytes read from a pipe after the exit
#define S_WAIT_POLL_MS 20     //  exit polling period without a pidfd

//  The process's spawner (bn_shell_use_spawner), or NULL
static bn_spawner_t *s_spawner;

//  One output pipe and the partial character it carries.
typedef struct {
    int fd;                //  read end, -1 once closed
    const char *name;      //  "stdout" or "stderr"
    bn_watch_item_t *item; //  while watched
    bn_shell_t *shell;     //  owner
    char carry[4];         //  bytes of a character split between reads
    size_t ncarry;         //  bytes in carry
} s_pipe_t;

struct _bn_shell_t {
    zloop_t *loop;             //  runs the timers
    bn_watch_t *watch;         //  watches the pipes and the exit
    pid_t pid;                 //  shell process (and process group)
    int pidfd;                 //  readable when the child exits, or -1
    int notify[2];             //  without a pidfd: pipe the timer writes to
    bn_watch_item_t *pid_item; //  watched pidfd or notify[0]
    int wait_timer;            //  exit polling timer, or -1
    bool notified;             //  the timer saw the exit
    int limit_timer;           //  time limit timer, or -1
    int end_timer;             //  bn_shell_end's SIGTERM and SIGKILL, or -1
    int end_signals;           //  signals bn_shell_end's timer has sent
    s_pipe_t pipes[2];         //  stdout, stderr
    bool running;              //  not yet reaped
    bn_shell_status_t status;  //  how it ended
    bn_shell_output_fn *on_output;
    bn_shell_exit_fn *on_exit;
    void *arg;
};

//  Deliver data (carry first) as the command wrote it, but for a
//  character cut short at the end, kept in the carry unless at_eof, so
//  that no piece splits one.
static void
s_deliver (bn_shell_t *self, s_pipe_t *pipe_, const char *data, size_t size,
           bool at_eof)
{
    size_t total = pipe_->ncarry + size;
    if (total == 0)
        return;
    char *in = (char *)data;
    if (pipe_->ncarry) {
        in = malloc (total);
        if (!in) {
            bn_log_error ("shell: out of memory, %zu bytes of output lost",
                          size);
            pipe_->ncarry = 0;
            return;
        }
        memcpy (in, pipe_->carry, pipe_->ncarry);
        if (size)
            memcpy (in + pipe_->ncarry, data, size);
        pipe_->ncarry = 0;
    }
    //  the start of a character cut short is among the last 3 bytes
    size_t keep = 0;
    for (size_t back = 1; !at_eof && back <= 3 && back <= total; back++) {
        unsigned char c = (unsigned char)in[total - back];
        if (c < 0x80)
            break;
        if (c >= 0xC0) {
            if (bn_rawtext_char (in + total - back, back) == 0)
                keep = back;
            break;
        }
    }
    memcpy (pipe_->carry, in + total - keep, keep);
    pipe_->ncarry = keep;
    if (total > keep)
        self->on_output (self, pipe_->name, in, total - keep, self->arg);
    if (in != data)
        free (in);
}

static void
s_pipe_close (bn_shell_t *self, s_pipe_t *pipe_)
{
    if (pipe_->fd < 0)
        return;
    s_deliver (self, pipe_, NULL, 0, true);
    bn_watch_cancel (self->watch, &pipe_->item);
    close (pipe_->fd);
    pipe_->fd = -1;
}

//  Read what the pipe holds now, up to limit bytes; closes it at EOF.
static void
s_pipe_read (bn_shell_t *self, s_pipe_t *pipe_, size_t limit)
{
    char buffer[S_READ_SIZE];
    size_t got = 0;
    while (pipe_->fd >= 0 && got < limit) {
        ssize_t rc = read (pipe_->fd, buffer, sizeof buffer);
        if (rc > 0) {
            s_deliver (self, pipe_, buffer, rc, false);
            got += rc;
        } else if (rc == 0)
            s_pipe_close (self, pipe_);
        else if (errno == EINTR)
            continue;
        else {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                bn_log_warn ("shell: read from %s: %s", pipe_->name,
                             strerror (errno));
                s_pipe_close (self, pipe_);
            }
            break;
        }
    }
}

static void
s_pipe_event (bn_watch_item_t *item, void *arg)
{
    s_pipe_t *pipe_ = (s_pipe_t *)arg;
    //  One read per event keeps the loop fair to other engines.
    s_pipe_read (pipe_->shell, pipe_, 1);
}

static void
s_unwatch (bn_shell_t *self)
{
    bn_watch_cancel (self->watch, &self->pid_item);
    if (self->pidfd >= 0) {
        close (self->pidfd);
        self->pidfd = -1;
    }
    for (int i = 0; i < 2; i++) {
        if (self->notify[i] >= 0) {
            close (self->notify[i]);
            self->notify[i] = -1;
        }
    }
    if (self->wait_timer >= 0) {
        zloop_timer_end (self->loop, self->wait_timer);
        self->wait_timer = -1;
    }
    if (self->limit_timer >= 0) {
        zloop_timer_end (self->loop, self->limit_timer);
        self->limit_timer = -1;
    }
    if (self->end_timer >= 0) {
        zloop_timer_end (self->loop, self->end_timer);
        self->end_timer = -1;
    }
}

//  Reap the child if it has ended; then deliver the rest of its output
//  (what its own writes left in the pipes) and report the exit.
static void
s_check_exit (bn_shell_t *self)
{
    if (self->status.ended) {
        //  While the shell is a zombie its pid cannot be reused, so its
        //  group is still the command's: end what it left running.
        siginfo_t info;
        memset (&info, 0, sizeof info);
        if (waitid (P_PID, (id_t)self->pid, &info,
                    WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == self->pid)
            kill (-self->pid, SIGKILL);
    }
    int wstatus;
    pid_t rc;
    do
        rc = waitpid (self->pid, &wstatus, WNOHANG);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return;
    self->running = false;
    if (rc < 0) {
        bn_log_warn ("shell: waitpid %d: %s", (int)self->pid, strerror (errno));
        self->status.exit_code = -1;
    } else if (WIFEXITED (wstatus))
        self->status.exit_code = WEXITSTATUS (wstatus);
    else if (WIFSIGNALED (wstatus)) {
        self->status.exit_code = -1;
        self->status.signal = WTERMSIG (wstatus);
    }
    s_unwatch (self);
    //  Background processes it left may hold the pipes open: take what is
    //  there now and stop listening.
    for (int i = 0; i < 2; i++) {
        s_pipe_read (self, &self->pipes[i], S_DRAIN_LIMIT);
        s_pipe_close (self, &self->pipes[i]);
    }
    bn_shell_status_t status = self->status;
    self->on_exit (self, &status, self->arg);
}

static void
s_pidfd_event (bn_watch_item_t *item, void *arg)
{
    s_check_exit ((bn_shell_t *)arg);
}

//  Without a pidfd: look (without reaping) whether the child ended, and
//  if so wake the notify pipe's poller, which does the rest.
static int
s_wait_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_shell_t *self = (bn_shell_t *)arg;
    siginfo_t info;
    memset (&info, 0, sizeof info);
    if (!self->notified &&
        waitid (P_PID, (id_t)self->pid, &info, WEXITED | WNOHANG | WNOWAIT) ==
            0 &&
        info.si_pid == self->pid) {
        self->notified = true;
        if (write (self->notify[1], "x", 1) != 1)
            bn_log_warn ("shell: cannot wake the loop: %s", strerror (errno));
    }
    return 0;
}

static int
s_limit_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_shell_t *self = (bn_shell_t *)arg;
    self->limit_timer = -1;
    if (self->running) {
        self->status.timed_out = true;
        kill (-self->pid, SIGKILL);
    }
    return 0;
}

//  bn_shell_end's escalation: SIGTERM, then SIGKILL.
static int
s_end_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_shell_t *self = (bn_shell_t *)arg;
    if (timer_id != self->end_timer)
        return 0;
    self->end_signals++;
    if (self->end_signals >= 2)
        self->end_timer = -1; //  its last run: zloop ends it
    if (self->running)
        kill (-self->pid, self->end_signals == 1 ? SIGTERM : SIGKILL);
    return 0;
}

static int
s_pidfd_open (pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall (SYS_pidfd_open, pid, 0);
    if (fd >= 0)
        fcntl (fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    errno = ENOSYS;
    return -1;
#endif
}

void
bn_shell_use_spawner (bn_spawner_t *spawner)
{
    s_spawner = spawner;
}

//  Spawn the child with its ends of the pipes and in_fd as its stdin
//  (-1: /dev/null); returns its pid or -1.
static pid_t
s_spawn (const char *command, const char *cwd, char *const envp[], int in_fd,
         int out_fd, int err_fd)
{
    if (s_spawner) {
        pid_t pid = bn_spawner_spawn (s_spawner, command, cwd, envp, in_fd,
                                      out_fd, err_fd);
        if (pid > 0 || errno != ENOTCONN)
            return pid;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    pid_t pid = -1;
    int rc = posix_spawn_file_actions_init (&actions);
    if (rc) {
        errno = rc;
        return -1;
    }
    rc = posix_spawnattr_init (&attr);
    if (rc) {
        posix_spawn_file_actions_destroy (&actions);
        errno = rc;
        return -1;
    }
    sigset_t defaults, empty;
    sigemptyset (&empty);
    sigemptyset (&defaults);
    int reset[] = {SIGINT,  SIGTERM, SIGQUIT, SIGPIPE,
                   SIGCHLD, SIGHUP,  SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset (&defaults, reset[i]);
    rc = in_fd >= 0 ? posix_spawn_file_actions_adddup2 (&actions, in_fd, 0)
                    : posix_spawn_file_actions_addopen (
                          &actions, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2 (&actions, out_fd, 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2 (&actions, err_fd, 2);
    if (!rc && cwd && *cwd)
        rc = posix_spawn_file_actions_addchdir_np (&actions, cwd);
    if (!rc)
        rc = posix_spawnattr_setpgroup (&attr, 0);
    if (!rc)
        rc = posix_spawnattr_setsigdefault (&attr, &defaults);
    if (!rc)
        rc = posix_spawnattr_setsigmask (&attr, &empty);
    if (!rc)
        rc = posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETPGROUP |
                                                  POSIX_SPAWN_SETSIGDEF |
                                                  POSIX_SPAWN_SETSIGMASK);
    if (!rc) {
        char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};
        rc = posix_spawn (&pid, "/bin/sh", &actions, &attr, argv,
                          envp ? envp : environ);
    }
    posix_spawnattr_destroy (&attr);
    posix_spawn_file_actions_destroy (&actions);
    if (rc) {
        errno = rc;
        return -1;
    }
    return pid;
}

bn_shell_t *
bn_shell_new (bn_watch_t *watch, const char *command, const char *cwd,
              char *const envp[], double time_limit,
              bn_shell_output_fn *on_output, bn_shell_exit_fn *on_exit,
              void *arg)
{
    return bn_shell_new_input (watch, command, cwd, envp, NULL, 0, time_limit,
                               on_output, on_exit, arg);
}

//  A file holding input (size bytes), read from its start, for a child's
//  stdin: in memory, so that the child reads it at its pace and nothing
//  here waits for it. Returns the descriptor, or -1 with errno set.
static int
s_input_file (const void *input, size_t size)
{
    int fd = memfd_create ("banyan-stdin", MFD_CLOEXEC);
    const char *cursor = input;
    while (fd >= 0 && size) {
        ssize_t rc = write (fd, cursor, size);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0) {
            int saved = rc < 0 ? errno : EIO;
            close (fd);
            errno = saved;
            return -1;
        }
        cursor += rc;
        size -= (size_t)rc;
    }
    if (fd >= 0 && lseek (fd, 0, SEEK_SET) != 0) {
        int saved = errno;
        close (fd);
        errno = saved;
        return -1;
    }
    return fd;
}

bn_shell_t *
bn_shell_new_input (bn_watch_t *watch, const char *command, const char *cwd,
                    char *const envp[], const void *input, size_t input_size,
                    double time_limit, bn_shell_output_fn *on_output,
                    bn_shell_exit_fn *on_exit, void *arg)
{
    assert (watch);
    assert (command);
    assert (on_output);
    assert (on_exit);
    //  posix_spawn reports a failed chdir too, but not everywhere (not
    //  under valgrind, which runs the child as a fork); check it first.
    if (cwd && *cwd) {
        struct stat info;
        if (stat (cwd, &info))
            return NULL;
        if (!S_ISDIR (info.st_mode)) {
            errno = ENOTDIR;
            return NULL;
        }
        if (access (cwd, X_OK))
            return NULL;
    }
    assert (input || input_size == 0);
    int in_fd = input_size ? s_input_file (input, input_size) : -1;
    if (input_size && in_fd < 0)
        return NULL;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (pipe2 (out_pipe, O_CLOEXEC) || pipe2 (err_pipe, O_CLOEXEC)) {
        int saved = errno;
        for (int i = 0; i < 2; i++) {
            if (out_pipe[i] >= 0)
                close (out_pipe[i]);
        }
        if (in_fd >= 0)
            close (in_fd);
        errno = saved;
        return NULL;
    }
    pid_t pid = s_spawn (command, cwd, envp, in_fd, out_pipe[1], err_pipe[1]);
    int saved = errno;
    if (in_fd >= 0)
        close (in_fd);
    close (out_pipe[1]);
    close (err_pipe[1]);
    bn_shell_t *self = pid > 0 ? calloc (1, sizeof *self) : NULL;
    if (!self) {
        close (out_pipe[0]);
        close (err_pipe[0]);
        if (pid > 0) {
            kill (-pid, SIGKILL);
            waitpid (pid, NULL, 0);
            saved = ENOMEM;
        }
        errno = saved;
        return NULL;
    }
    self->watch = watch;
    self->loop = bn_watch_loop (watch);
    self->pid = pid;
    self->pidfd = -1;
    self->notify[0] = self->notify[1] = -1;
    self->running = true;
    self->status.exit_code = -1;
    self->on_output = on_output;
    self->on_exit = on_exit;
    self->arg = arg;
    self->wait_timer = -1;
    self->limit_timer = -1;
    self->end_timer = -1;
    const char *names[] = {"stdout", "stderr"};
    int fds[] = {out_pipe[0], err_pipe[0]};
    for (int i = 0; i < 2; i++) {
        s_pipe_t *pipe_ = &self->pipes[i];
        pipe_->fd = fds[i];
        pipe_->name = names[i];
        fcntl (pipe_->fd, F_SETFL, fcntl (pipe_->fd, F_GETFL) | O_NONBLOCK);
        pipe_->shell = self;
    }
    self->pidfd = s_pidfd_open (pid);
    if (self->pidfd < 0 && pipe2 (self->notify, O_CLOEXEC | O_NONBLOCK)) {
        saved = errno;
        self->notify[0] = self->notify[1] = -1;
        bn_shell_destroy (&self);
        errno = saved;
        return NULL;
    }
    int exit_fd = self->pidfd >= 0 ? self->pidfd : self->notify[0];
    for (int i = 0; i < 2; i++)
        self->pipes[i].item = bn_watch_fd (watch, self->pipes[i].fd,
                                           s_pipe_event, &self->pipes[i]);
    self->pid_item = bn_watch_fd (watch, exit_fd, s_pidfd_event, self);
    if (!self->pipes[0].item || !self->pipes[1].item || !self->pid_item) {
        saved = errno;
        bn_shell_destroy (&self);
        errno = saved;
        return NULL;
    }
    if (self->pidfd < 0)
        self->wait_timer =
            zloop_timer (self->loop, S_WAIT_POLL_MS, 0, s_wait_timer, self);
    if (time_limit > 0) {
        double ms = time_limit * 1000.0;
        self->limit_timer = zloop_timer (self->loop,
                                         ms < 1     ? 1
                                         : ms > 1e9 ? 1000000000
                                                    : (size_t)ms,
                                         1, s_limit_timer, self);
    }
    return self;
}

void
bn_shell_destroy (bn_shell_t **self_p)
{
    assert (self_p);
    bn_shell_t *self = *self_p;
    if (!self)
        return;
    s_unwatch (self);
    for (int i = 0; i < 2; i++) {
        if (self->pipes[i].fd >= 0) {
            bn_watch_cancel (self->watch, &self->pipes[i].item);
            close (self->pipes[i].fd);
        }
    }
    if (self->running) {
        //  SIGKILL cannot be ignored, so this wait is short.
        kill (-self->pid, SIGKILL);
        while (waitpid (self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    free (self);
    *self_p = NULL;
}

int
bn_shell_signal (bn_shell_t *self, int sig)
{
    assert (self);
    if (!self->running)
        return -1;
    return kill (-self->pid, sig);
}

int
bn_shell_end (bn_shell_t *self, double grace)
{
    assert (self);
    if (!self->running)
        return -1;
    if (self->status.ended)
        return 0;
    self->status.ended = true;
    kill (-self->pid, SIGINT);
    double ms = grace * 1000.0;
    self->end_timer = zloop_timer (self->loop,
                                   ms < 1     ? 1
                                   : ms > 1e9 ? 1000000000
                                              : (size_t)ms,
                                   2, s_end_timer, self);
    return 0;
}

pid_t
bn_shell_pid (bn_shell_t *self)
{
    assert (self);
    return self->pid;
}

bool
bn_shell_running (bn_shell_t *self)
{
    assert (self);
    return self->running;
}

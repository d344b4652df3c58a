/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_spawner: a helper process that starts commands as its parent's
    children.

    A request is one SOCK_SEQPACKET message: a header, then the command,
    the folder (if any) and the environment as NUL-ended strings, with the
    command's standard descriptors attached (SCM_RIGHTS). The helper
    starts it as posix_spawn does, with clone (CLONE_VM | CLONE_VFORK) on a
    stack of its own, and CLONE_PARENT, so the command's parent is the
    caller; the clone sets up the descriptors, the process group and the
    signals and runs /bin/sh, or leaves its errno in the memory it shares
    with the helper, which waits until then. The answer is the pid and
    that errno.  */
#define _GNU_SOURCE
#include "bn_spawner.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define S_MAGIC 0x626e7370u        //  "bnsp"
#define S_MAX_REQUEST (192 * 1024) //  larger requests: the caller spawns
#define S_ANSWER_TIMEOUT_S 10      //  a helper that does not answer
#define S_STACK_SIZE (64 * 1024)   //  the clone's stack
#define S_FLAG_CWD 1u              //  a folder follows the command
#define S_FLAG_INPUT 2u            //  three descriptors, not two

typedef struct {
    uint32_t magic;
    uint32_t flags;
    uint32_t envc;   //  environment strings
    uint32_t length; //  bytes of strings after the header
} s_request_t;

typedef struct {
    int32_t pid;   //  the command, or 0
    int32_t error; //  0 if it runs, else why not
} s_answer_t;

struct _bn_spawner_t {
    pid_t pid;            //  the helper
    int sock;             //  our end of its connection
    pthread_mutex_t lock; //  one request at a time
    bool broken;          //  the helper stopped answering
};

//  The signals a command starts with at their defaults (as bn_shell's
//  posix_spawn sets them); the helper ignores some of them itself.
static const int s_defaults[] = {SIGINT,  SIGTERM, SIGQUIT, SIGPIPE,
                                 SIGCHLD, SIGHUP,  SIGUSR1, SIGUSR2};

//  What the clone is to run, and what it reports.
typedef struct {
    const char *command;
    const char *cwd;
    char **envp;
    int *fds;  //  standard input (-1: /dev/null), output, error
    int error; //  set by the clone if it cannot run the command
} s_clone_t;

//  The clone: become the command, or set errno in the arguments and exit.
//  It shares the helper's memory (CLONE_VM) on a stack of its own, the
//  helper waiting until it runs the command or exits (CLONE_VFORK), so it
//  makes system calls only.
static int
s_become (void *arg)
{
    s_clone_t *clone_ = (s_clone_t *)arg;
    //  the descriptors out of the way of 0, 1 and 2 first, then in place
    int moved[3];
    for (int i = 0; i < 3; i++) {
        moved[i] = clone_->fds[i] < 0
                       ? open ("/dev/null", O_RDONLY | O_CLOEXEC)
                       : fcntl (clone_->fds[i], F_DUPFD_CLOEXEC, 3);
        if (moved[i] < 0)
            goto failed;
    }
    for (int i = 0; i < 3; i++)
        if (dup2 (moved[i], i) < 0)
            goto failed;
    if (setpgid (0, 0) != 0)
        goto failed;
    for (size_t i = 0; i < sizeof s_defaults / sizeof s_defaults[0]; i++)
        signal (s_defaults[i], SIG_DFL);
    if (clone_->cwd && chdir (clone_->cwd) != 0)
        goto failed;
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    char *argv[] = {"/bin/sh", "-c", (char *)clone_->command, NULL};
    execve ("/bin/sh", argv, clone_->envp);
failed:
    clone_->error = errno ? errno : EIO;
    _exit (127);
}

//  In the helper: start the command of a request; its pid (with *error
//  set if it could not run it), or 0 with *error set.
static pid_t
s_start (const char *command, const char *cwd, char **envp, int fds[3],
         void *stack, size_t stack_size, int *error)
{
    s_clone_t clone_ = {command, cwd, envp, fds, 0};
    //  CLONE_PARENT: the caller is the command's parent (it is the
    //  helper's)
    pid_t pid = clone (s_become, (char *)stack + stack_size,
                       CLONE_VM | CLONE_VFORK | CLONE_PARENT, &clone_);
    if (pid < 0) {
        //  a clone that cannot have the caller as parent: the caller
        //  spawns
        *error = errno == EINVAL || errno == ENOSYS || errno == EPERM ? ENOTSUP
                                                                      : errno;
        return 0;
    }
    *error = clone_.error;
    return pid;
}

//  Serve one request in buf (size bytes, fds attached); the answer.
static s_answer_t
s_serve (char *buf, size_t size, int *fds, int nfds, void *stack,
         size_t stack_size)
{
    s_answer_t answer = {0, EINVAL};
    s_request_t request;
    if (size < sizeof request)
        return answer;
    memcpy (&request, buf, sizeof request);
    int expected = request.flags & S_FLAG_INPUT ? 3 : 2;
    if (request.magic != S_MAGIC || request.length != size - sizeof request ||
        nfds != expected || request.envc > request.length)
        return answer;
    //  the strings, each ended within the request
    char *cursor = buf + sizeof request, *end = buf + size;
    size_t count = 1 + (request.flags & S_FLAG_CWD ? 1 : 0) + request.envc;
    char **strings = calloc (count + 1, sizeof *strings);
    if (!strings) {
        answer.error = ENOMEM;
        return answer;
    }
    for (size_t i = 0; i < count; i++) {
        char *nul = memchr (cursor, '\0', (size_t)(end - cursor));
        if (!nul) {
            free (strings);
            return answer;
        }
        strings[i] = cursor;
        cursor = nul + 1;
    }
    const char *cwd = request.flags & S_FLAG_CWD ? strings[1] : NULL;
    char **envp = strings + 1 + (cwd ? 1 : 0);
    int standard[3] = {-1, fds[expected - 2], fds[expected - 1]};
    if (expected == 3)
        standard[0] = fds[0];
    int error = 0;
    pid_t pid =
        s_start (strings[0], cwd, envp, standard, stack, stack_size, &error);
    free (strings);
    answer.pid = pid;
    answer.error = error;
    return answer;
}

static void __attribute__ ((noreturn)) s_helper (int sock, pid_t parent)
{
    //  ends with its parent; signals meant for the parent's group are the
    //  parent's to act on (it closes the connection when it ends)
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != parent)
        _exit (0);
    //  told apart from its parent by name (pgrep, top)
    prctl (PR_SET_NAME, "banyan-spawner");
    for (size_t i = 0; i < sizeof s_defaults / sizeof s_defaults[0]; i++)
        if (s_defaults[i] != SIGCHLD)
            signal (s_defaults[i], SIG_IGN);
    //  none of the parent's descriptors but the standard ones
    if (sock > 3)
        close_range (3, (unsigned)sock - 1, 0);
    close_range ((unsigned)sock + 1, ~0U, 0);
    //  nothing to handle: the clones start with no handler to run
    sigset_t all;
    sigfillset (&all);
    sigprocmask (SIG_SETMASK, &all, NULL);
    char *buf = malloc (S_MAX_REQUEST);
    void *stack = malloc (S_STACK_SIZE);
    if (!buf || !stack)
        _exit (1);
    while (true) {
        union {
            struct cmsghdr header;
            char space[CMSG_SPACE (3 * sizeof (int))];
        } control;
        struct iovec iov = {buf, S_MAX_REQUEST};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.space,
                             .msg_controllen = sizeof control.space};
        ssize_t size = recvmsg (sock, &msg, MSG_CMSG_CLOEXEC);
        if (size < 0 && errno == EINTR)
            continue;
        if (size <= 0)
            _exit (0);
        int fds[3] = {-1, -1, -1}, nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c;
             c = CMSG_NXTHDR (&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                int n = (int)((c->cmsg_len - CMSG_LEN (0)) / sizeof (int));
                for (int i = 0; i < n; i++) {
                    int fd;
                    memcpy (&fd, CMSG_DATA (c) + i * sizeof (int), sizeof fd);
                    if (nfds < 3)
                        fds[nfds++] = fd;
                    else
                        close (fd);
                }
            }
        s_answer_t answer =
            msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)
                ? (s_answer_t){0, E2BIG}
                : s_serve (buf, (size_t)size, fds, nfds, stack, S_STACK_SIZE);
        for (int i = 0; i < nfds; i++)
            close (fds[i]);
        while (send (sock, &answer, sizeof answer, MSG_NOSIGNAL) < 0)
            if (errno != EINTR)
                _exit (0);
    }
}

bn_spawner_t *
bn_spawner_new (void)
{
    bn_spawner_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    int pair[2];
    if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        free (self);
        return NULL;
    }
    pid_t parent = getpid ();
    self->pid = fork ();
    if (self->pid == 0) {
        close (pair[0]);
        s_helper (pair[1], parent);
    }
    int saved = errno;
    close (pair[1]);
    if (self->pid < 0) {
        close (pair[0]);
        free (self);
        errno = saved;
        return NULL;
    }
    self->sock = pair[0];
    //  a helper that cannot answer in time is given up
    struct timeval timeout = {S_ANSWER_TIMEOUT_S, 0};
    setsockopt (self->sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    pthread_mutex_init (&self->lock, NULL);
    return self;
}

void
bn_spawner_destroy (bn_spawner_t **self_p)
{
    assert (self_p);
    bn_spawner_t *self = *self_p;
    if (!self)
        return;
    close (self->sock);
    if (self->broken)
        kill (self->pid, SIGKILL);
    while (waitpid (self->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

pid_t
bn_spawner_pid (bn_spawner_t *self)
{
    assert (self);
    return self->pid;
}

//  The request's header and strings, malloc'd; NULL if too large.
static char *
s_request (const char *command, const char *cwd, char *const envp[], bool input,
           size_t *size)
{
    s_request_t request = {
        S_MAGIC, (cwd ? S_FLAG_CWD : 0u) | (input ? S_FLAG_INPUT : 0u), 0, 0};
    size_t length = strlen (command) + 1 + (cwd ? strlen (cwd) + 1 : 0);
    for (char *const *e = envp; e && *e && length <= S_MAX_REQUEST; e++) {
        length += strlen (*e) + 1;
        request.envc++;
    }
    if (sizeof request + length > S_MAX_REQUEST)
        return NULL;
    request.length = (uint32_t)length;
    char *buf = malloc (sizeof request + length);
    if (!buf)
        return NULL;
    memcpy (buf, &request, sizeof request);
    char *cursor = buf + sizeof request;
    cursor = stpcpy (cursor, command) + 1;
    if (cwd)
        cursor = stpcpy (cursor, cwd) + 1;
    for (uint32_t i = 0; i < request.envc; i++)
        cursor = stpcpy (cursor, envp[i]) + 1;
    *size = sizeof request + length;
    return buf;
}

pid_t
bn_spawner_spawn (bn_spawner_t *self, const char *command, const char *cwd,
                  char *const envp[], int in_fd, int out_fd, int err_fd)
{
    assert (command);
    size_t size = 0;
    char *buf = self ? s_request (command, cwd && *cwd ? cwd : NULL,
                                  envp ? envp : environ, in_fd >= 0, &size)
                     : NULL;
    if (!buf) {
        errno = ENOTCONN;
        return -1;
    }
    int fds[3] = {in_fd, out_fd, err_fd};
    int nfds = in_fd >= 0 ? 3 : 2;
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE (3 * sizeof (int))];
    } control;
    memset (&control, 0, sizeof control);
    struct iovec iov = {buf, size};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.space,
                         .msg_controllen = CMSG_SPACE (nfds * sizeof (int))};
    struct cmsghdr *c = CMSG_FIRSTHDR (&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN (nfds * sizeof (int));
    memcpy (CMSG_DATA (c), in_fd >= 0 ? fds : fds + 1, nfds * sizeof (int));

    s_answer_t answer = {0, ENOTCONN};
    pthread_mutex_lock (&self->lock);
    bool sent = false;
    if (!self->broken) {
        ssize_t rc;
        do
            rc = sendmsg (self->sock, &msg, MSG_NOSIGNAL);
        while (rc < 0 && errno == EINTR);
        sent = rc == (ssize_t)size;
        ssize_t n = -1;
        if (sent)
            do
                n = recv (self->sock, &answer, sizeof answer, 0);
            while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof answer) {
            //  gone, or silent: from now on the caller spawns; a request
            //  the helper may still act on is not sent twice
            self->broken = true;
            answer = (s_answer_t){0, !sent    ? ENOTCONN
                                     : n == 0 ? ECONNABORTED
                                              : ETIMEDOUT};
            kill (self->pid, SIGKILL);
        } else if (answer.error == ENOTSUP && answer.pid == 0) {
            //  it cannot start commands as ours: the caller spawns
            self->broken = true;
            answer.error = ENOTCONN;
        }
    }
    pthread_mutex_unlock (&self->lock);
    free (buf);
    if (answer.error == 0 && answer.pid > 0)
        return answer.pid;
    //  a command that failed to start is our child, and has exited
    if (answer.pid > 0)
        while (waitpid (answer.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    errno = answer.error ? answer.error : EIO;
    return -1;
}

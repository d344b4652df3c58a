/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_px: `banyan px -b COMMAND` on N engines, as a user types it
    (the CLI started, connected, the command run on every engine and the
    output gathered), against its floor, floor.Spawn: the same N commands
    started with posix_spawn and waited for, which is what running them
    costs with no cluster at all, by as many processes as the cluster has
    engine processes, each starting its engines' share. Each command gets B
   bytes on its standard input (px: read once and sent to every engine), or
    /dev/null for 0.  */
#define _GNU_SOURCE //  pipe2
#include "bn_benchcluster.h"
#include "bn_suites.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

//  The command run on every engine, and by the floor
#define S_COMMAND "true"

typedef struct {
    bn_benchcluster_t *cluster; //  px's cluster (NULL for the floor)
    char *banyan;               //  the banyan CLI
    char *input;                //  the bytes for standard input
    size_t input_size;
    int count; //  commands a run (the floor) or engines (px)
    pid_t *pids;
} s_state_t;

//  Start argv with its output thrown away and input (size bytes; none:
//  /dev/null) on its standard input. Returns the pid, or -1 with errno.
static pid_t
s_spawn (char *const argv[], const char *input, size_t size)
{
    int fds[2] = {-1, -1};
    if (size > 0 && pipe2 (fds, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    if (size > 0)
        posix_spawn_file_actions_adddup2 (&actions, fds[0], 0);
    else
        posix_spawn_file_actions_addopen (&actions, 0, "/dev/null", O_RDONLY,
                                          0);
    posix_spawn_file_actions_addopen (&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2 (&actions, 1, 2);
    pid_t pid;
    int rc = posix_spawn (&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy (&actions);
    if (size > 0) {
        close (fds[0]);
        //  the command may not read it: a closed pipe is not a failure
        for (size_t done = 0; rc == 0 && done < size;) {
            ssize_t n = write (fds[1], input + done, size - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                break;
            done += (size_t)n;
        }
        close (fds[1]);
    }
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

//  Wait for pid; its exit status, or -1 if it did not exit.
static int
s_wait (pid_t pid)
{
    int status;
    while (waitpid (pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static int
s_state_new (bn_benchcase_t *c, int count)
{
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    long bytes = bn_benchcase_long (c, "bytes", 0);
    if (count < 1 || bytes < 0)
        return bn_benchcase_fail (c, "engines must be 1 or more, bytes 0 or "
                                     "more");
    self->count = count;
    self->input_size = (size_t)bytes;
    self->input = malloc (self->input_size + 1);
    self->pids = calloc ((size_t)count, sizeof *self->pids);
    if (!self->input || !self->pids)
        return bn_benchcase_fail (c, "out of memory");
    memset (self->input, 'x', self->input_size);
    //  a command that exits without reading its input closes the pipe
    signal (SIGPIPE, SIG_IGN);
    return BN_BENCH_OK;
}

int
bn_suite_spawn_setup (bn_benchcase_t *c)
{
    return s_state_new (c, (int)bn_benchcase_long (c, "engines", 1));
}

//  Start count commands and wait for them: the number that failed, or -1
//  with errno if one could not be started.
static int
s_spawn_all (s_state_t *self, int count)
{
    char *argv[] = {"/bin/sh", "-c", S_COMMAND, NULL};
    int started = 0, failed = 0;
    for (; started < count; started++) {
        self->pids[started] = s_spawn (argv, self->input, self->input_size);
        if (self->pids[started] < 0)
            break;
    }
    int spawn_errno = errno;
    for (int i = 0; i < started; i++)
        if (s_wait (self->pids[i]) != 0)
            failed++;
    errno = spawn_errno;
    return started < count ? -1 : failed;
}

int
bn_suite_spawn_run (bn_benchcase_t *c, double *value)
{
    //  as many spawning processes as the cluster has engine processes,
    //  each starting its engines' share
    s_state_t *self = c->state;
    int per = bn_benchcase_per_process (c, self->count);
    int helpers = (self->count + per - 1) / per;
    pid_t *pids = calloc ((size_t)helpers, sizeof *pids);
    if (!pids)
        return bn_benchcase_fail (c, "out of memory");
    int forked = 0;
    for (; forked < helpers; forked++) {
        int share = forked < helpers - 1 ? per : self->count - per * forked;
        pids[forked] = fork ();
        if (pids[forked] == 0) {
            int failed = s_spawn_all (self, share);
            _exit (failed == 0 ? 0 : failed < 0 ? 2 : 1);
        }
        if (pids[forked] < 0)
            break;
    }
    int fork_errno = errno, failed = 0;
    for (int i = 0; i < forked; i++)
        if (s_wait (pids[i]) != 0)
            failed++;
    free (pids);
    if (forked < helpers)
        return bn_benchcase_fail (c, "fork: %s", strerror (fork_errno));
    if (failed)
        return bn_benchcase_fail (c, "%d of %d spawning processes failed",
                                  failed, helpers);
    return BN_BENCH_OK;
}

int
bn_suite_px_setup (bn_benchcase_t *c)
{
    int engines = (int)bn_benchcase_long (c, "engines", 1);
    int rc = s_state_new (c, engines);
    if (rc != BN_BENCH_OK)
        return rc;
    s_state_t *self = c->state;
    self->banyan = bn_benchcase_program (c, "banyan");
    if (!self->banyan)
        return bn_benchcase_fail (c, "no banyan in %s", c->bin_dir);
    self->cluster = bn_benchcluster_new (c, BN_BENCHSTACK_BANYAN, engines);
    if (!self->cluster)
        return bn_benchcase_fail (c, "out of memory");
    if (bn_benchcluster_start (self->cluster, 60 + engines / 8.0) != 0)
        return BN_BENCH_FAIL;
    return BN_BENCH_OK;
}

int
bn_suite_px_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    char *argv[8] = {self->banyan, "px", "-b", "--file",
                     (char *)bn_benchcluster_client_file (self->cluster)};
    int argc = 5;
    if (self->input_size == 0)
        argv[argc++] = "--no-stdin";
    argv[argc++] = S_COMMAND;
    argv[argc] = NULL;
    pid_t pid = s_spawn (argv, self->input, self->input_size);
    if (pid < 0)
        return bn_benchcase_fail (c, "cannot start %s: %s", self->banyan,
                                  strerror (errno));
    int status = s_wait (pid);
    if (status != 0)
        return bn_benchcase_fail (c, "banyan px exited with status %d", status);
    return BN_BENCH_OK;
}

void
bn_suite_px_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    bn_benchcluster_destroy (&self->cluster);
    free (self->banyan);
    free (self->input);
    free (self->pids);
    free (self);
    c->state = NULL;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_spawner: a small helper process that starts shell commands for this
    one, as this process's own children.

    posix_spawn in a process copies its table of descriptors for the child
    and then closes every one marked close-on-exec, in the kernel, on each
    start: an engine process of 256 engines holds about 2,000 (sockets,
    their signals, connections), so that starting a command costs more in
    those descriptors than in the command. The helper is forked before
    the process opens them, holds none of them, and starts each command
    with clone (CLONE_PARENT): the command is the caller's child, waited
    for and signalled as if the caller had spawned it, and its standard
    descriptors are passed to the helper with the request (SCM_RIGHTS).  */
#ifndef BN_SPAWNER_H_INCLUDED
#define BN_SPAWNER_H_INCLUDED

#include <sys/types.h>

typedef struct _bn_spawner_t bn_spawner_t;

//  Fork the helper (named banyan-spawner, as ps and pgrep show it); NULL
//  (errno set) if it cannot be. Create it early:
//  it keeps a copy of every descriptor open now that is not close-on-exec
//  (closed in each command). The helper ends when the spawner is
//  destroyed or this process ends.
bn_spawner_t *bn_spawner_new (void);

//  Close the helper's connection (it exits) and reap it. NULL-safe;
//  NULLs the caller's reference.
void bn_spawner_destroy (bn_spawner_t **self_p);

//  Start `/bin/sh -c command` as posix_spawn would in this process: in its
//  own process group, with the signals a shell expects at their defaults
//  and none blocked, in folder cwd (NULL: the helper's, which is this
//  process's when it was forked), with environment envp (NULL: environ),
//  in_fd, out_fd and err_fd as its standard input, output and error
//  (in_fd -1: /dev/null), and no other descriptor. Safe from any thread.
//  Returns the pid of the command, a child of this process once the
//  helper saw it run (its exec succeeded); -1 with errno if it could not
//  be started (the helper's reason), or with errno ENOTCONN when the
//  helper is gone or cannot take the request (the caller starts the
//  command itself).
pid_t bn_spawner_spawn (bn_spawner_t *self, const char *command,
                        const char *cwd, char *const envp[], int in_fd,
                        int out_fd, int err_fd);

//  The helper's process id.
pid_t bn_spawner_pid (bn_spawner_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_shell: one shell command run asynchronously in a zloop (through a
    bn_watch set), its output streamed as it arrives, with an optional time
    limit.  */
#ifndef BN_SHELL_H_INCLUDED
#define BN_SHELL_H_INCLUDED

#include "bn_spawner.h"
#include "bn_watch.h"

#include <czmq.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct _bn_shell_t bn_shell_t;

//  How the command ended.
typedef struct {
    int exit_code;  //  exit status if it exited, else -1
    int signal;     //  signal that killed it, else 0
    bool timed_out; //  killed because its time limit passed
    bool ended;     //  ended by bn_shell_end
} bn_shell_status_t;

//  Called with each piece of output, the bytes as the command wrote them
//  (any bytes: bn_rawtext carries them in JSON); a UTF-8 character split
//  between reads is held until complete, so no piece splits one. name
//  is "stdout" or "stderr".
typedef void (bn_shell_output_fn) (bn_shell_t *shell, const char *name,
                                   const char *text, size_t size, void *arg);

//  Called once when the command has ended and its output was delivered.
//  The callback may destroy the shell.
typedef void (bn_shell_exit_fn) (bn_shell_t *shell,
                                 const bn_shell_status_t *status, void *arg);

//  Start `/bin/sh -c command` in its own process group, in folder cwd
//  (NULL: the current one), stdin from /dev/null, environment envp (NULL:
//  this process's), killed with its group after time_limit seconds (0: no
//  limit). Its pipes and exit are watched by watch (and the time limit by
//  watch's loop). Returns NULL (errno set) if the process cannot be
//  started.
bn_shell_t *bn_shell_new (bn_watch_t *watch, const char *command,
                          const char *cwd, char *const envp[],
                          double time_limit, bn_shell_output_fn *on_output,
                          bn_shell_exit_fn *on_exit, void *arg);

//  bn_shell_new with input (input_size bytes; none: /dev/null) as the
//  command's standard input, kept in an anonymous file (memfd) that the
//  command reads at its pace.
bn_shell_t *bn_shell_new_input (bn_watch_t *watch, const char *command,
                                const char *cwd, char *const envp[],
                                const void *input, size_t input_size,
                                double time_limit,
                                bn_shell_output_fn *on_output,
                                bn_shell_exit_fn *on_exit, void *arg);

//  Start every command of this process through spawner (NULL: with
//  posix_spawn, the default), which then must outlive the shells; where it
//  cannot take a command, posix_spawn starts it. Set it before the first
//  shell starts.
void bn_shell_use_spawner (bn_spawner_t *spawner);

//  Stop watching the command; one still running is killed with its
//  process group and reaped. NULL-safe; NULLs the caller's reference.
void bn_shell_destroy (bn_shell_t **self_p);

//  Send a signal to the command's process group; returns -1 if it has
//  already ended or the signal cannot be sent.
int bn_shell_signal (bn_shell_t *self, int sig);

//  End the command as clush and pdsh do: SIGINT to its process group now,
//  SIGTERM after grace seconds, SIGKILL after grace more; whatever of its
//  group is left when the shell has gone is killed too. The exit is
//  reported as usual, with ended set. Returns -1 if it has already ended.
int bn_shell_end (bn_shell_t *self, double grace);

//  Process id of the shell (also its process group id).
pid_t bn_shell_pid (bn_shell_t *self);

//  True while the command has not ended.
bool bn_shell_running (bn_shell_t *self);

#endif

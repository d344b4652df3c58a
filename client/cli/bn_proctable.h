/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_proctable: a snapshot of this host's processes, read from /proc, to
    find every process of a cluster by group and by descent.  */
#ifndef BN_PROCTABLE_H_INCLUDED
#define BN_PROCTABLE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

//  What /proc/<pid>/stat says about one process.
typedef struct {
    pid_t pid;
    pid_t ppid;
    pid_t pgrp;
    pid_t sid;
    char state;                   //  R, S, D, T, Z...
    unsigned long long starttime; //  Clock ticks after boot; tells reused
                                  //  pids apart
    char comm[16];                //  Executable name, truncated by Linux
    int exit_code;                //  A zombie's wait status (to its
                                  //  parent or one allowed to trace it),
                                  //  -1 if the kernel does not say
} bn_procinfo_t;

typedef struct _bn_proctable_t bn_proctable_t;

//  Read one process's facts. Returns 0, or -1 if there is no such process
//  or /proc cannot be read.
int bn_proctable_stat (pid_t pid, bn_procinfo_t *info);

//  True if pid is a live (not zombie) process whose start time is
//  starttime; starttime 0 accepts any start time.
bool bn_proctable_alive (pid_t pid, unsigned long long starttime);

//  What a wait status says: "exited with status 1" or "killed by signal 9
//  (Killed)".
void bn_proctable_describe_status (int status, char *text, size_t size);

//  Take a snapshot of every process. Returns NULL if /proc cannot be read
//  or out of memory.
bn_proctable_t *bn_proctable_new (void);

//  Destroy a snapshot and NULL the caller's reference; NULL-safe.
void bn_proctable_destroy (bn_proctable_t **self_p);

//  Number of processes in the snapshot.
size_t bn_proctable_size (bn_proctable_t *self);

//  Facts about pid, borrowed from the snapshot; NULL if it is not there.
const bn_procinfo_t *bn_proctable_find (bn_proctable_t *self, pid_t pid);

//  Collect the live processes of group pgid (if pgid > 0), the roots
//  (nroots pids) and every descendant of them, except the calling process,
//  into *pids_p (malloc'd, the caller frees). Descendants count because a
//  process may move its children to groups of their own. Returns how many
//  were found, or -1 if out of memory.
int bn_proctable_collect (bn_proctable_t *self, pid_t pgid, const pid_t *roots,
                          size_t nroots, pid_t **pids_p);

//  Called for each child of the calling process reaped while waiting.
typedef void (bn_proctable_reap_fn) (pid_t pid, int status, void *arg);

//  End a tree of processes: send sig (unless 0) to group pgid (if pgid >
//  0), the roots and all their descendants (as bn_proctable_collect finds
//  them, again and again so that late children are caught too), wait up
//  to grace seconds for them to end, then SIGKILL what is left and wait up
//  to kill_wait more seconds. Children of the caller are reaped on the way
//  (reported to on_reap when not NULL). Returns how many processes there
//  were, or -1 if some were still alive at the end.
int bn_proctable_terminate (pid_t pgid, const pid_t *roots, size_t nroots,
                            int sig, double grace, double kill_wait,
                            bn_proctable_reap_fn *on_reap, void *arg);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launchwatch: the processes a launch program runs to start its hosts,
    one a host, in the hosts' order, as MPICH's hydra mpiexec does (`ssh
    HOST hydra_pmi_proxy ...`, or the proxy itself for this host), read
    from /proc: which host each serves, and which of them ended. Such a
    process ending before its host reported means the host cannot start:
    hydra itself waits on, for the proxy that never calls back.  */
#ifndef BN_LAUNCHWATCH_H_INCLUDED
#define BN_LAUNCHWATCH_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct _bn_launchwatch_t bn_launchwatch_t;

//  A launch process that ended.
typedef struct {
    int rank;      //  The host it served
    pid_t pid;     //  Its pid
    char comm[16]; //  Its program's name ("ssh")
    int status;    //  Its wait status, -1 if unknown
} bn_launchwatch_end_t;

//  Watch the children of process pid, which starts count hosts named by
//  hosts (strings, in rank order, borrowed; NULL if unnamed). Returns NULL
//  if out of memory.
bn_launchwatch_t *bn_launchwatch_new (pid_t pid, zlist_t *hosts, int count);

//  Destroy it and NULL the caller's reference; NULL-safe.
void bn_launchwatch_destroy (bn_launchwatch_t **self_p);

//  Look at the children again: new ones, and those that ended (zombies
//  their parent has not reaped, or gone). A child is a host's when one of
//  its arguments is the host's name (or USER@name); once there is a child
//  for every host, those left take the hosts left in the order they were
//  started.
void bn_launchwatch_update (bn_launchwatch_t *self);

//  The next launch process found ended whose host is known, each once;
//  false when there is none (more).
bool bn_launchwatch_ended (bn_launchwatch_t *self, bn_launchwatch_end_t *end);

#endif

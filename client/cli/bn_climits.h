/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_climits: what a local cluster of n engines needs of this host and
    this user (processes and threads, open files, memory), checked against
    the limits before anything is forked, with the --engines-per-process
    that would fit when the one asked for does not.  */
#ifndef BN_CLIMITS_H_INCLUDED
#define BN_CLIMITS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

//  The limits and what is in use; -1 where there is no limit (or it is
//  unknown).
typedef struct {
    long tasks_limit;   //  processes and threads of this user (ulimit -u);
                        //  -1 for root, whom the kernel does not hold to it
    long tasks_used;    //  ... of which running now
    long machine_limit; //  of the whole host (kernel.threads-max, pid_max)
    long machine_used;  //  ... running now
    long files_soft;    //  open files of a process (ulimit -n)
    long files_hard;    //  ... up to which a process may raise it
    long memory;        //  bytes of memory available (MemAvailable)
} bn_climits_t;

//  The limits of this host and user, read from getrlimit and /proc.
void bn_climits_read (bn_climits_t *limits);

//  Open files the controller of n engines needs (about five an engine).
long bn_climits_controller_files (long n);

//  Check a cluster of n engines, per_process of them a process, against
//  limits: the controller's open files, and when the engines run on this
//  host (local) their processes and memory too. Returns 0, or -1 with the
//  limit that stops it, and how to fit (--engines-per-process K, ulimit),
//  in error.
int bn_climits_check (const bn_climits_t *limits, long n, int per_process,
                      bool local, char *error, size_t size);

//  Raise this process's soft limit of open files to files, or as far as
//  the hard limit allows, for the cluster's processes to inherit.
void bn_climits_raise_files (long files);

#endif

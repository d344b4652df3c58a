/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_procinfo: what banyan-bench reads of a process in /proc: a memory
    figure of its status, the largest peak among a parent's children, its
    open descriptors; and resetting its peak.  */
#ifndef BN_PROCINFO_H_INCLUDED
#define BN_PROCINFO_H_INCLUDED

#include <sys/types.h>

//  The kB of field ("VmRSS", "VmHWM") in /proc/PID/status; -1 if the
//  process is gone or has no such field.
long bn_procinfo_status_kb (pid_t pid, const char *field);

//  Peak resident bytes (VmHWM) of pid; -1 if unknown.
double bn_procinfo_peak (pid_t pid);

//  The largest peak resident size (bytes) among the processes running
//  program (a basename) whose parent is parent; -1 if there are none.
double bn_procinfo_largest_child (pid_t parent, const char *program);

//  Set the peak resident size of pid back to its present resident size
//  (/proc/PID/clear_refs), so that VmHWM measures what follows. Returns 0
//  or -1.
int bn_procinfo_reset_peak (pid_t pid);

//  The open descriptors of pid, less the one this call holds when pid is
//  this process; -1 if the process is gone.
int bn_procinfo_fds (pid_t pid);

#endif

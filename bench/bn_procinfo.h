/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_procinfo: what banyan-bench reads of a process in /proc: a memory
    figure of its status and its open descriptors.  */
#ifndef BN_PROCINFO_H_INCLUDED
#define BN_PROCINFO_H_INCLUDED

#include <sys/types.h>

//  The kB of field ("VmRSS", "VmHWM") in /proc/PID/status; -1 if the
//  process is gone or has no such field.
long bn_procinfo_status_kb (pid_t pid, const char *field);

//  Peak resident bytes (VmHWM) of pid; -1 if unknown.
double bn_procinfo_peak (pid_t pid);

//  The open descriptors of pid, less the one this call holds when pid is
//  this process; -1 if the process is gone.
int bn_procinfo_fds (pid_t pid);

#endif

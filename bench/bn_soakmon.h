/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_soakmon: the resident size and open file descriptors of every
    banyan process of a cluster (its process group), sampled from /proc
    over a soak, and whether they grew after warm-up.  */
#ifndef BN_SOAKMON_H_INCLUDED
#define BN_SOAKMON_H_INCLUDED

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct _bn_soakmon_t bn_soakmon_t;

//  A monitor of the processes in group pgid (0: none) whose name starts
//  with "banyan-" (banyan-bench's own forks left out), plus this process
//  when self_too is true (as "client"). Returns NULL if out of memory.
bn_soakmon_t *bn_soakmon_new (pid_t pgid, bool self_too);

//  Destroy the monitor; NULLs *self_p; NULL-safe.
void bn_soakmon_destroy (bn_soakmon_t **self_p);

//  Take one sample of every process at seconds since the soak began.
void bn_soakmon_sample (bn_soakmon_t *self, double seconds);

//  Judge growth: for each process alive from before warm_up until the
//  last sample, the floor (10th percentile) of the RSS and descriptor count
//  of the samples in [warm_up, warm_up + window] against that of the last
//  window seconds.
//  Prints a line per process (start, after warm-up, end, growth) under
//  title, processes that came and went counted in one line, and returns
//  the number of processes whose RSS or descriptors grew by more than
//  max_growth (a fraction; the client's own line is shown, not judged).
int bn_soakmon_report (bn_soakmon_t *self, const char *title, double warm_up,
                       double window, double max_growth, FILE *out);

//  Write every sample to path as CSV (seconds,pid,process,rss_kb,fds).
//  Returns 0, or -1 if the file cannot be written.
int bn_soakmon_save (bn_soakmon_t *self, const char *path);

//  The largest growth (a fraction) of RSS and of descriptors among the
//  judged processes, as the last report measured them.
double bn_soakmon_rss_growth (bn_soakmon_t *self);
double bn_soakmon_fd_growth (bn_soakmon_t *self);

#endif

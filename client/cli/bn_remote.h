/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_remote: the supervisor's side of a remote launch (ssh, slurm,
    mpiexec): it runs the launcher's commands (one ssh session per host,
    one srun or mpiexec for all, or sbatch), hands each the connection
    info, reads the hosts' reports and exits (bn_hostscript), logs their
    output, keeps the cluster record up to date, decides when the start
    is done (every host reported, or enough of them: --min-hosts) and
    ends everything in order when the cluster stops.  */
#ifndef BN_REMOTE_H_INCLUDED
#define BN_REMOTE_H_INCLUDED

#include "bn_clusterrec.h"
#include "bn_launch.h"

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct _bn_remote_t bn_remote_t;

//  What the supervisor hears from a remote launch: a line for the waiting
//  `cluster start` ("warning ...", "engines P E H", "error ...", "exit
//  ..."), and that the record changed and must be saved.
typedef struct {
    void (*event) (void *arg, const char *line);
    void (*save) (void *arg);
    void *arg;
} bn_remote_hooks_t;

//  Create the launch of plan (borrowed, as ops and record) by ops, its
//  output logged to log_fd (the engines' log; kept open by the caller) and
//  to stderr (the cluster's log). Returns NULL if out of memory.
bn_remote_t *bn_remote_new (const bn_launch_ops_t *ops,
                            const bn_launch_plan_t *plan,
                            bn_clusterrec_t *record, int log_fd,
                            bn_remote_hooks_t hooks);

//  Destroy it and NULL the caller's reference; NULL-safe. Ends nothing.
void bn_remote_destroy (bn_remote_t **self_p);

//  Run the commands, giving each the connection info (one line of JSON);
//  hosts that have not reported by deadline (zclock_mono ms) count as
//  failed. Returns 0, or -1 (an error event told why) if none could run.
int bn_remote_start (bn_remote_t *self, const char *info, int64_t deadline);

//  Put the descriptors to watch into items (at most max); returns how many.
size_t bn_remote_pollfds (bn_remote_t *self, struct pollfd *items, size_t max);

//  Read whatever the commands wrote.
void bn_remote_read (bn_remote_t *self);

//  A child of the supervisor ended: true if it was one of the launch's.
bool bn_remote_reaped (bn_remote_t *self, pid_t pid, int status, bool stopping);

//  Check deadlines and the job, as often as the caller likes (each second
//  or so).
void bn_remote_tick (bn_remote_t *self);

//  1 once the start succeeded (the "engines" event was sent), -1 once it
//  failed, else 0.
int bn_remote_state (bn_remote_t *self);

//  Stop in order: close each session's standard input or send SIGTERM,
//  give them grace seconds to end (reading their reports), then the
//  launcher's stop for what still runs on the hosts. The launch processes
//  left here are the caller's to kill.
void bn_remote_stop (bn_remote_t *self, double grace);

#endif

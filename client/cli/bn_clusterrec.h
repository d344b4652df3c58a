/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clusterrec: the record of a cluster started by `banyan cluster start`,
    kept in <profile_dir>/pid/ so that stop, list and clean can find its
    processes later.  */
#ifndef BN_CLUSTERREC_H_INCLUDED
#define BN_CLUSTERREC_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct _bn_clusterrec_t bn_clusterrec_t;

//  How a recorded cluster is doing.
typedef enum {
    BN_CLUSTER_STARTING, //  The supervisor is alive, no controller yet
    BN_CLUSTER_RUNNING,  //  The controller is alive
    BN_CLUSTER_BROKEN,   //  The controller is gone, other processes are not
    BN_CLUSTER_STALE     //  None of its processes is alive
} bn_cluster_state_t;

//  How an engine host of a remote launcher is doing.
typedef enum {
    BN_HOST_RUNNING, //  It reported its engines
    BN_HOST_ENDED,   //  Its engines ended, or were ended
    BN_HOST_LOST,    //  Its session ended without saying so: its engines
                     //  may still run
    BN_HOST_FAILED   //  It never started its engines (unreachable...)
} bn_host_state_t;

//  An engine host, as its report line gave it.
typedef struct {
    char *name;            //  Its host name (or as --hosts named it)
    int rank;              //  Its place among the hosts (-1 if unknown)
    int pgid;              //  Process group of its host script there
    int first;             //  Engine ids first..first+count-1
    int count;             //  Engines it started
    char *pids;            //  Their processes there, "123,124"
    int node;              //  Its host node's pid there, 0 if none
    char *step;            //  Slurm step "JOB.STEP" that runs it, or ""
    bn_host_state_t state; //  How it is doing
    char *reason;          //  Why it failed or was lost, or ""
} bn_clusterrec_host_t;

//  Create a record of a cluster in profile_dir with cluster_id ("" for
//  none), started now. Returns NULL if out of memory.
bn_clusterrec_t *bn_clusterrec_new (const char *profile_dir,
                                    const char *cluster_id);

//  Destroy a record and NULL the caller's reference; NULL-safe.
void bn_clusterrec_destroy (bn_clusterrec_t **self_p);

//  Read a record file. Returns NULL if it does not exist, cannot be read or
//  is not a record.
bn_clusterrec_t *bn_clusterrec_load (const char *path);

//  Write the record to path through a temporary file renamed into place,
//  so that readers never see half a record. Returns 0, or -1 on a write
//  error.
int bn_clusterrec_save (bn_clusterrec_t *self, const char *path);

//  Path "<profile_dir>/pid/banyan-cluster[-<cluster_id>].json", malloc'd;
//  NULL if out of memory.
char *bn_clusterrec_path (const char *profile_dir, const char *cluster_id);

//  Path "<profile_dir>/pid/banyan-controller[-<cluster_id>].pid" of the pid
//  file a controller writes, malloc'd; NULL if out of memory.
char *bn_clusterrec_controller_pidfile (const char *profile_dir,
                                        const char *cluster_id);

//  Process id in a controller pid file if that process is alive and is a
//  banyan controller; 0 if the file is missing, stale or holds something
//  else.
pid_t bn_clusterrec_controller_pid (const char *profile_dir,
                                    const char *cluster_id);

//  Cluster ids of the records in <profile_dir>/pid/, sorted, as a list of
//  strings the caller destroys ("" for the cluster without id). Returns an
//  empty list if there are none, NULL if out of memory.
zlist_t *bn_clusterrec_ids (const char *profile_dir);

//  Setters of what `cluster start` learns as it goes.
void bn_clusterrec_set_profile (bn_clusterrec_t *self, const char *profile);
void bn_clusterrec_set_engines (bn_clusterrec_t *self, int n, int per_process);
void bn_clusterrec_set_daemonized (bn_clusterrec_t *self, bool daemonized);
void bn_clusterrec_set_supervisor (bn_clusterrec_t *self, pid_t pid,
                                   unsigned long long starttime);
void bn_clusterrec_set_controller (bn_clusterrec_t *self, pid_t pid,
                                   unsigned long long starttime);

//  Record an engine process serving engine ids first..first+count-1.
//  Returns 0, or -1 if out of memory.
int bn_clusterrec_add_engines (bn_clusterrec_t *self, pid_t pid,
                               unsigned long long starttime, int first,
                               int count);

//  The launcher ("local" unless set) and the command it runs (ssh's, for
//  `cluster stop` to reach the hosts again; "" for none).
void bn_clusterrec_set_launcher (bn_clusterrec_t *self, const char *launcher,
                                 const char *command);
const char *bn_clusterrec_launcher (bn_clusterrec_t *self);
const char *bn_clusterrec_command (bn_clusterrec_t *self);

//  The Slurm batch job that runs the engines ("" for none), and the nodes
//  Slurm gave it ("h[1-3]", "" until known).
void bn_clusterrec_set_job (bn_clusterrec_t *self, const char *job);
const char *bn_clusterrec_job (bn_clusterrec_t *self);
void bn_clusterrec_set_nodes (bn_clusterrec_t *self, const char *nodes);
const char *bn_clusterrec_nodes (bn_clusterrec_t *self);

//  Record a launch process here (an ssh client, srun, mpiexec), which the
//  supervisor runs. Returns 0, or -1 if out of memory.
int bn_clusterrec_add_session (bn_clusterrec_t *self, pid_t pid,
                               unsigned long long starttime);
size_t bn_clusterrec_sessions (bn_clusterrec_t *self);
//  The index'th launch process; -1 if index is out of range.
int bn_clusterrec_session (bn_clusterrec_t *self, size_t index, pid_t *pid,
                           unsigned long long *starttime);

//  Record an engine host (copied); returns its index, or -1 if out of
//  memory. A host of that name and rank already recorded is replaced.
int bn_clusterrec_add_host (bn_clusterrec_t *self,
                            const bn_clusterrec_host_t *host);
size_t bn_clusterrec_hosts (bn_clusterrec_t *self);
//  The index'th host, borrowed; NULL if index is out of range.
const bn_clusterrec_host_t *bn_clusterrec_host (bn_clusterrec_t *self,
                                                size_t index);
//  Set the index'th host's state and reason (NULL: keep it).
void bn_clusterrec_set_host_state (bn_clusterrec_t *self, size_t index,
                                   bn_host_state_t state, const char *reason);
//  Hosts in state.
size_t bn_clusterrec_hosts_in (bn_clusterrec_t *self, bn_host_state_t state);

//  "running", "ended", "lost" or "failed".
const char *bn_clusterrec_host_state_name (bn_host_state_t state);

//  Getters. The process group of the cluster is the supervisor's pid.
const char *bn_clusterrec_profile_dir (bn_clusterrec_t *self);
const char *bn_clusterrec_cluster_id (bn_clusterrec_t *self);
const char *bn_clusterrec_profile (bn_clusterrec_t *self);
int bn_clusterrec_n (bn_clusterrec_t *self);
int bn_clusterrec_per_process (bn_clusterrec_t *self);
time_t bn_clusterrec_started (bn_clusterrec_t *self);
pid_t bn_clusterrec_pgid (bn_clusterrec_t *self);
unsigned long long bn_clusterrec_supervisor_start (bn_clusterrec_t *self);
pid_t bn_clusterrec_controller (bn_clusterrec_t *self);
unsigned long long bn_clusterrec_controller_start (bn_clusterrec_t *self);

//  Number of engine processes recorded.
size_t bn_clusterrec_engine_procs (bn_clusterrec_t *self);

//  The index'th engine process: its pid, start time and engine ids; any
//  output pointer may be NULL. Returns -1 if index is out of range.
int bn_clusterrec_engine_proc (bn_clusterrec_t *self, size_t index, pid_t *pid,
                               unsigned long long *starttime, int *first,
                               int *count);

//  Pid of the process that runs engine id, or 0 if no recorded process
//  was asked to serve it.
pid_t bn_clusterrec_engine_pid (bn_clusterrec_t *self, int engine_id);

//  The host that runs engine id, of a remote launch, and the pid of its
//  process there (through pid, may be NULL); NULL if no recorded host
//  started it.
const char *bn_clusterrec_engine_host (bn_clusterrec_t *self, int engine_id,
                                       pid_t *pid);

//  Look at the live processes: the state of the cluster, and through
//  live_engine_procs (may be NULL) how many engine processes are alive.
bn_cluster_state_t bn_clusterrec_state (bn_clusterrec_t *self,
                                        size_t *live_engine_procs);

//  "starting", "running", "broken" or "stale".
const char *bn_clusterrec_state_name (bn_cluster_state_t state);

#endif

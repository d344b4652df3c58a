/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launcher: starts a cluster (a controller and engine processes under a
    supervisor, in a process group of their own) and stops one, leaving no
    process behind.  */
#ifndef BN_LAUNCHER_H_INCLUDED
#define BN_LAUNCHER_H_INCLUDED

#include "bn_launch.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct _bn_launcher_t bn_launcher_t;

//  bn_launcher_stop results besides -1.
#define BN_LAUNCHER_STOPPED 0     //  Processes were running and are gone
#define BN_LAUNCHER_NOT_RUNNING 1 //  A record, but nothing ran: files removed
#define BN_LAUNCHER_NO_CLUSTER 2  //  No record of such a cluster

//  Create a launcher for a cluster in profile_dir (absolute) with
//  cluster_id ("" for none). Returns NULL if out of memory.
bn_launcher_t *bn_launcher_new (const char *profile_dir,
                                const char *cluster_id);

//  Destroy a launcher and NULL the caller's reference; NULL-safe. A
//  started cluster keeps running.
void bn_launcher_destroy (bn_launcher_t **self_p);

//  Profile name recorded for `cluster list` ("" when given by folder).
void bn_launcher_set_profile (bn_launcher_t *self, const char *profile);

//  Start n engines, per_process of them in each banyan-engine process.
void bn_launcher_set_engines (bn_launcher_t *self, int n, int per_process);

//  Start the engines with launcher ops from plan (copied; its strings and
//  lists are borrowed until the supervisor has started) instead of as
//  local processes from bn_launcher_set_engines.
void bn_launcher_set_launch (bn_launcher_t *self, const bn_launch_ops_t *ops,
                             const bn_launch_plan_t *plan);

//  The controller's command line, NULL-terminated; the caller frees the
//  array, not the words. NULL if out of memory.
char **bn_launcher_controller_argv (bn_launcher_t *self);

//  Print what bn_launcher_start would run (--dry-run). Returns 0, or -1 if
//  out of memory.
int bn_launcher_print (bn_launcher_t *self, FILE *out);

//  Once bn_launcher_poll said the engines were started: how many were,
//  and on how many hosts (fewer than asked when --min-hosts let hosts
//  fail).
int bn_launcher_engines (bn_launcher_t *self);
int bn_launcher_hosts (bn_launcher_t *self);

//  What went wrong without stopping the start ("host h3: ssh: connect to
//  host h3 port 22: No route to host"), strings the launcher owns.
zlist_t *bn_launcher_warnings (bn_launcher_t *self);

//  Start the cluster in a session of its own instead of a process group
//  of the caller's session.
void bn_launcher_set_daemonize (bn_launcher_t *self, bool daemonize);

//  Seconds the supervisor waits for the controller's engine connection
//  file before it gives up (default 30).
void bn_launcher_set_timeout (bn_launcher_t *self, double seconds);

//  Programs to run (absolute paths). Returns -1 if out of memory.
int bn_launcher_set_programs (bn_launcher_t *self, const char *controller,
                              const char *engine);

//  Append an argument to the controller's command line (after
//  --profile-dir and --cluster-id). Returns -1 if out of memory.
int bn_launcher_add_controller_arg (bn_launcher_t *self, const char *arg);

//  "cannot <doing> <path>: <why>" in text: the parent of path that is a
//  file, not a folder, when error is ENOTDIR, else strerror (error).
void bn_launcher_path_error (const char *path, const char *doing, int error,
                             char *text, size_t size);

//  Path "<profile_dir>/pid/banyan-add[-<cluster_id>].json" of a request
//  to add engines to a running cluster, malloc'd.
char *bn_launcher_add_path (const char *profile_dir, const char *cluster_id);

//  Ask the supervisor of the running local cluster of profile_dir and
//  cluster_id to start n more engines, per_process of them a process,
//  asking for ids first, first + 1, ...; they are its children as the
//  others are, and stop with the cluster. Returns 0 once the supervisor
//  has taken the request (not once they registered), or -1 with why in
//  error.
int bn_launcher_add (const char *profile_dir, const char *cluster_id, int n,
                     int per_process, int first, char *error, size_t size);

//  Make the profile folder and its security, pid and log folders, if they
//  are not there, and check that they can be written in. Returns 0, or -1
//  with the reason, naming the path, in error.
int bn_launcher_make_folders (const char *profile_dir, char *error,
                              size_t size);

//  Create the profile's security, pid and log folders and fork the
//  supervisor, which starts the controller, waits for its engine
//  connection file and starts the engines. Must be called before this
//  process creates any ZeroMQ context. Returns 0, or -1 (errno set) if the
//  supervisor cannot be started.
int bn_launcher_start (bn_launcher_t *self);

//  Process group id of the started cluster (the supervisor's pid), or 0.
pid_t bn_launcher_pgid (bn_launcher_t *self);

//  Wait up to timeout_ms for news from the supervisor. Returns 1 if all
//  engine processes were started, 0 if nothing went wrong (yet), or -1 if
//  a process of the cluster exited or the supervisor failed; then
//  bn_launcher_problem says what happened.
int bn_launcher_poll (bn_launcher_t *self, int timeout_ms);

//  What went wrong, e.g. "banyan-engine (pid 123, engines 8-15) exited
//  with status 1"; "" if nothing did.
const char *bn_launcher_problem (bn_launcher_t *self);

//  Path of the log file of a part of the cluster ("cluster", "controller",
//  "engines"), malloc'd; NULL if out of memory.
char *bn_launcher_log_path (bn_launcher_t *self, const char *part);

//  The same for the cluster of profile_dir and cluster_id.
char *bn_launcher_log_path_of (const char *profile_dir, const char *cluster_id,
                               const char *part);

//  Stop the cluster this launcher started, whether or not its record was
//  written yet, and remove its files. Returns 0, or -1 if a process could
//  not be stopped.
int bn_launcher_abort (bn_launcher_t *self);

//  Stop the recorded cluster of profile_dir and cluster_id: SIGTERM to its
//  process group and every descendant, SIGKILL after grace seconds, then
//  the launcher's stop for what still runs on its hosts (ssh kill of each
//  host's process group, scancel), and
//  remove its record, controller pid file and (unless
//  keep_connection_files) connection files. The number of processes
//  signalled goes to *count (may be NULL). Returns BN_LAUNCHER_STOPPED,
//  BN_LAUNCHER_NOT_RUNNING, BN_LAUNCHER_NO_CLUSTER, or -1 if some process
//  would not end.
int bn_launcher_stop (const char *profile_dir, const char *cluster_id,
                      double grace, bool keep_connection_files, int *count);

//  Path of the batch script the slurm launcher submits,
//  "<profile_dir>/pid/banyan-sbatch[-<cluster_id>].sh", malloc'd; NULL if
//  out of memory.
char *bn_launcher_batch_path (const char *profile_dir, const char *cluster_id);

//  Remove a stale cluster's files: its record, and the controller pid file
//  and connection files unless a controller still runs for that cluster
//  id. Returns the number of files removed.
int bn_launcher_remove_files (const char *profile_dir, const char *cluster_id,
                              bool keep_connection_files);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch: the launchers of `banyan cluster start`, one interface with a
    class per launcher: local (engine processes on this host), ssh (one
    session per host), slurm (one srun step, or an sbatch job) and mpiexec
    (MPICH's hydra). The remote ones run one per-host script
    (bn_hostscript) on every host; the cluster's supervisor (bn_launcher)
    runs the commands a launcher gives and reads what the hosts report.  */
#ifndef BN_LAUNCH_H_INCLUDED
#define BN_LAUNCH_H_INCLUDED

#include "bn_clusterrec.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdio.h>

//  How the controller's engine connection info reaches a command.
typedef enum {
    BN_LAUNCH_INFO_FILE,  //  --file of the profile's engine file (local)
    BN_LAUNCH_INFO_STDIN, //  The first line of its standard input (ssh)
    BN_LAUNCH_INFO_ENV    //  BANYAN_CONNECTION_INFO in its environment
} bn_launch_info_t;

//  What a launcher starts from: the user's options, the programs found,
//  and what prepare works out. Strings and lists are borrowed from the
//  caller and must outlive the launch.
typedef struct {
    const char *profile_dir;    //  Absolute
    const char *cluster_id;     //  "" for none
    int n;                      //  Engines
    int per_process;            //  Engines per banyan-engine process; 0:
                                //  1 here, all of a host's on hosts
    int per_host;               //  --engines-per-host, 0 if not given
    zlist_t *hosts;             //  --hosts (strings), or NULL
    int min_hosts;              //  Hosts that must start, 0: all
    const char *ssh_cmd;        //  ssh program and options (shell words)
    const char *mpiexec_cmd;    //  mpiexec program and options
    const char *remote_prefix;  //  Install prefix on the hosts, or NULL:
                                //  the programs' paths here
    const char *engine_cmd;     //  Stock engine command (ipengine), or NULL
    const char *batch_template; //  --batch-template's text, or NULL
    bool host_node;             //  Start a host node before the engines
    const char *ports;          //  "LO-HI" the host nodes' ports come
                                //  from, or NULL: any
    const char *engine;         //  banyan-engine here (absolute)
    const char *scheduler;      //  banyan-scheduler here (absolute), or
                                //  NULL
    const char *log_level;      //  Of the engines
    zlist_t *engine_args;       //  More arguments of local engines
    int first_id;               //  Id the first local engine asks for (the
                                //  others follow), 0 but for engines added
                                //  to a running cluster
    //  Filled by prepare
    int nhosts;           //  Hosts the engines go to
    int engines_per_host; //  Host r runs engine ids r*K..(r+1)*K-1,
                          //  those below n
    const char *job_id;   //  The Slurm allocation we run in, or NULL
} bn_launch_plan_t;

//  One command a launcher runs to start engines.
typedef struct {
    char **argv;           //  NULL-terminated
    char *label;           //  Where it runs: the host, "srun", "mpiexec"
    bn_launch_info_t info; //  How it gets the connection info
    int first;             //  First engine id it serves (local)
    int count;             //  Engines it runs (local), 0 if unknown
    int hosts;             //  Hosts it starts (0 for a job submission)
    char *file;            //  A file to write before it runs, or NULL
    char *file_text;       //  and its text
    char *script;          //  The host script it runs, or NULL
    char *reports;         //  A file its hosts' report lines go to
                           //  instead of its standard output (a batch
                           //  job's output file), or NULL
    bool host_children;    //  Its children are its hosts' launch
                           //  processes, one a host in rank order
                           //  (hydra's ssh to each): one that ends
                           //  before its host reported, the host failed
} bn_launch_cmd_t;

//  A launcher class.
typedef struct {
    const char *name; //  As --launcher names it
    bool remote;      //  Engines run the host script, not here
    //  Check plan and fill in nhosts, engines_per_host and job_id. Returns
    //  0, or -1 with why in error (a usage error, for the user).
    int (*prepare) (bn_launch_plan_t *plan, char *error, size_t size);
    //  The commands that start the engines: a list of bn_launch_cmd_t the
    //  caller destroys, NULL if out of memory.
    zlistx_t *(*commands) (const bn_launch_plan_t *plan);
    //  A line on a command's standard output that is not a host's report
    //  (sbatch's job id): note it in record. Returns 0, or -1 if the line
    //  means the launch failed. NULL: such lines are logged only.
    int (*output) (bn_clusterrec_t *record, const char *line);
    //  Look at the cluster's job: 0 while it runs or is queued, 1 once it
    //  ended (how, in problem). NULL: nothing to look at.
    int (*poll) (bn_clusterrec_t *record, char *problem, size_t size);
    //  Ask the engines the record says run on the hosts to end, in order,
    //  without waiting (slurm: SIGTERM to the steps by scancel --signal,
    //  as srun would kill them outright). NULL: the supervisor closes each
    //  ssh session's input or sends its launch process SIGTERM.
    void (*end) (bn_clusterrec_t *record, FILE *log);
    //  End what the record says still runs on the hosts (ssh: kill of
    //  each host's process group over ssh; slurm: scancel), within about
    //  grace seconds, logging to log (may be NULL). Returns how many
    //  hosts or jobs were told, or -1 if some would not end. NULL: the
    //  launcher's processes here take their engines with them.
    int (*stop) (bn_clusterrec_t *record, double grace, FILE *log);
} bn_launch_ops_t;

extern const bn_launch_ops_t bn_launch_local;
extern const bn_launch_ops_t bn_launch_ssh;
extern const bn_launch_ops_t bn_launch_slurm;
extern const bn_launch_ops_t bn_launch_mpiexec;

//  The launcher called name, or NULL.
const bn_launch_ops_t *bn_launch_find (const char *name);

//  "local, ssh, slurm, mpiexec"
const char *bn_launch_names (void);

//  A new command with argv words (copied), its label and info. Returns
//  NULL if out of memory.
bn_launch_cmd_t *bn_launch_cmd_new (const char *label, bn_launch_info_t info,
                                    char **argv);

//  Destroy a command and NULL the caller's reference; NULL-safe.
void bn_launch_cmd_destroy (bn_launch_cmd_t **self_p);

//  A list of commands that destroys them. Returns
//  NULL if out of memory.
zlistx_t *bn_launch_cmd_list (void);

//  Split shell words as sh would (single and double quotes, backslashes;
//  no expansions) into a NULL-terminated array the caller frees with
//  bn_launch_words_free. Returns NULL if the text is empty, has an open
//  quote, or out of memory.
char **bn_launch_words (const char *text);

//  Number of words in a NULL-terminated array.
size_t bn_launch_words_size (char **words);

//  Free a word array; NULL-safe.
void bn_launch_words_free (char **words);

//  word as sh reads it back: itself when it holds only safe characters,
//  else single-quoted. Malloc'd, NULL if out of memory.
char *bn_launch_quote (const char *word);

//  Read a host list: "h1,h2,h3", or "@FILE" with one host a line (blank
//  lines and # comments skipped). Returns a list of strings the caller
//  destroys, or NULL with why in error.
zlist_t *bn_launch_hosts (const char *spec, char *error, size_t size);

//  "h1,h2": the first count hosts of plan's --hosts, malloc'd; NULL if
//  out of memory.
char *bn_launch_host_list (const bn_launch_plan_t *plan, int count);

//  Fill nhosts and engines_per_host from n, hosts and per_host, as every
//  remote launcher does once it knows how many hosts it may use (hosts,
//  0 if the plan must say), and check --min-hosts against them. Returns 0,
//  or -1 with why in error.
int bn_launch_spread (bn_launch_plan_t *plan, int hosts, char *error,
                      size_t size);

//  The checks every remote launcher makes: the options of other launchers
//  (--ssh-cmd, --mpiexec-cmd, --batch-template) refused, commands that
//  split into words, no single quote where the host script is single-
//  quoted, options that do not go together. Returns 0, or -1 with why in
//  error.
int bn_launch_check_remote (bn_launch_plan_t *plan, const char *launcher,
                            char *error, size_t size);

//  Print what cluster start would run for plan after controller_argv
//  (--dry-run): a shell script a user can read, every command exactly as
//  it would be run. Returns 0, or -1 if out of memory.
int bn_launch_print (const bn_launch_ops_t *ops, const bn_launch_plan_t *plan,
                     char **controller_argv, FILE *out);

//  Run argv here with stdin from /dev/null and wait up to timeout seconds
//  (then SIGKILL). Its standard output, up to size - 1 bytes, goes to
//  output (may be NULL); its standard error to log (may be NULL).
//  Returns its wait status, or -1 if it could not run or timed out.
int bn_launch_run (char **argv, double timeout, char *output, size_t size,
                   FILE *log);

#endif

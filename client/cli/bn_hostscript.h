/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_hostscript: the script every engine host runs, by sh -c, for the
    remote launchers. It takes the controller's engine connection info from
    BANYAN_CONNECTION_INFO (or the first line of its standard input), starts
    the host's engines (banyan-engine --count, or a stock engine command
    given a private copy of the info as a file), prints one report line,
    and stays as the host's supervisor: a signal, or the end of its
    standard input when the info came on it, ends every engine it started.
    A host node that dies is started again, and the host's engines with it
    (the same ids), unless one started again died within 10 s: then the
    engines are ended and the script exits with status 3.

    What it prints on its standard output (engines' output goes to its
    standard error):
        banyan-host rank=R host=NAME pgid=G first=F count=C pids=P1,P2
                    [node=PID] [step=JOB.STEP] [restart=K]
                                (restart=K: the K'th start again, new pids)
        banyan-exit host=NAME pid=PID status=S     (one per process ended)
    */
#ifndef BN_HOSTSCRIPT_H_INCLUDED
#define BN_HOSTSCRIPT_H_INCLUDED

#include "bn_launch.h"

//  The script for plan; rank is the shell expression of the host's rank
//  ("$1", "$SLURM_PROCID", "$PMI_RANK") and info says where the
//  connection info comes from (BN_LAUNCH_INFO_STDIN or _ENV). It holds no
//  single quote, so that it can be single-quoted whole. Malloc'd; NULL if
//  out of memory.
char *bn_hostscript (const bn_launch_plan_t *plan, const char *rank,
                     bn_launch_info_t info);

//  The program name on the hosts: <remote_prefix>/bin/name, or the local
//  path (here, which names the program on this host) when there is no
//  prefix. Malloc'd; NULL if out of memory.
char *bn_hostscript_program (const bn_launch_plan_t *plan, const char *here,
                             const char *name);

//  What a report line says. Strings point into the parsed copy.
typedef struct {
    bool exit;        //  A banyan-exit line, not a banyan-host one
    int rank;         //  banyan-host
    const char *host; //  Both
    int pgid;         //  banyan-host
    int first;        //  banyan-host
    int count;        //  banyan-host
    const char *pids; //  banyan-host: "P1,P2", maybe ""
    int node;         //  banyan-host: the host node's pid, 0 if none
    const char *step; //  banyan-host: "JOB.STEP" under srun, else ""
    int restart;      //  banyan-host: how many times the host node was
                      //  started again, 0 for the first report
    int pid;          //  banyan-exit
    int status;       //  banyan-exit: the shell's $?, 128+N for signal N
} bn_hostscript_report_t;

//  Parse a report line in place (line is modified). Returns 0, or -1 if
//  it is not a report.
int bn_hostscript_parse (char *line, bn_hostscript_report_t *report);

#endif

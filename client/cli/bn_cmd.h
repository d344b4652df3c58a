/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd: the banyan subcommands, each a function of argc/argv (argv[0]
    names the command) that returns the process exit status.  */
#ifndef BN_CMD_H_INCLUDED
#define BN_CMD_H_INCLUDED

//  Exit statuses shared by the commands, as ipcluster's.
#define BN_EXIT_OK 0
#define BN_EXIT_FAILURE 1
#define BN_EXIT_ALREADY_RUNNING 10
#define BN_EXIT_ALREADY_STOPPED 11
#define BN_EXIT_NO_CLUSTER 12
#define BN_EXIT_INTERRUPTED 130

//  banyan cluster {start|stop|add|list|clean}
int bn_cmd_cluster (int argc, char **argv);

//  banyan engines
int bn_cmd_engines (int argc, char **argv);

//  banyan px
int bn_cmd_px (int argc, char **argv);

//  banyan apply
int bn_cmd_apply (int argc, char **argv);

//  banyan push
int bn_cmd_push (int argc, char **argv);

//  banyan pull
int bn_cmd_pull (int argc, char **argv);

//  banyan status
int bn_cmd_status (int argc, char **argv);

//  banyan history
int bn_cmd_history (int argc, char **argv);

//  banyan result MSG_ID
int bn_cmd_result (int argc, char **argv);

//  banyan purge
int bn_cmd_purge (int argc, char **argv);

//  banyan stats [ACTOR]
int bn_cmd_stats (int argc, char **argv);

//  banyan config show
int bn_cmd_config (int argc, char **argv);

#endif

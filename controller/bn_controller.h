/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_controller: the controller actor: binds every controller socket,
    writes the connection files and pid file, and runs the hub, heart
    monitor, relays and the task and broadcast ports in one zloop.  */
#ifndef BN_CONTROLLER_H_INCLUDED
#define BN_CONTROLLER_H_INCLUDED

#include <czmq.h>

#include "bn_config.h"

//  What bn_controller_actor starts from. The actor reads config and
//  profile_dir only before it signals, i.e. before zactor_new returns.
typedef struct {
    bn_config_t *config;     //  controller.*, cluster.id settings
    const char *profile_dir; //  Gets security/ and pid/ files
    int status;              //  Out: 0 once started, -1 if start-up failed
} bn_controller_args_t;

//  A status value that is neither: set it before zactor_new and, if a
//  signal cut zactor_new's wait short, wait on the actor until it changes.
#define BN_CONTROLLER_STARTING 1

//  Sockets a controller with config needs, its broadcast tree's included
//  (size the process's socket limit with zsys_set_max_sockets before the
//  first socket is created); 0 if the tree's shape is not valid.
size_t bn_controller_sockets (bn_config_t *config);

//  The controller actor (args: bn_controller_args_t *). If start-up fails
//  (a bind, a file) it sets args->status to -1 and ends at once. Commands:
//    $TERM                 stop: remove the files, close everything
//    CONNFILES, ENDPOINTS  reply [client file path, engine file path]
//    PIDFILE               reply [pid file path]
//    STATS                 reply [JSON object of every component's counters]
//  After a hub shutdown_request the actor stops serving, removes its files
//  and sends "SHUTDOWN" on the pipe; then it waits for $TERM.
void bn_controller_actor (zsock_t *pipe, void *args);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine_actor: N logical engines of one process, driven by one
    thread's zloop (a czmq actor).  */
#ifndef BN_ENGINE_ACTOR_H_INCLUDED
#define BN_ENGINE_ACTOR_H_INCLUDED

#include "bn_config.h"

#include <czmq.h>

//  What to start (read during start-up only; the caller may free it once
//  zactor_new returns).
typedef struct {
    const char *connection_file; //  engine connection file path, or NULL
    const char *connection_info; //  its JSON text, used when no path
    bn_config_t *config;         //  engine.* settings; NULL: defaults
    int count;                   //  engines to run; 0: engine.count
    int first_id;                //  id the first asks for (then +1...);
                                 //  -1: let the controller choose
    const char *cwd;             //  folder commands run in; NULL: current
} bn_engine_args_t;

//  Engines of one actor waiting for their registration_reply at once: the
//  rest ask in turn, as these are answered.
#define BN_ENGINE_REGISTERING_MAX 32

//  The actor: zactor_new (bn_engine_actor, &args). Commands (strings):
//    WAIT <ms>  replies "OK" once every engine is registered, "FAILED" if
//               one failed to register, "TIMEOUT" after <ms>
//    IDS        replies the ids of the running engines: "0,1,2"
//    UUIDS      replies every engine's uuid, in start order: "a,b"
//    STATS      replies a JSON object of summed counters
//    STOP       stops every engine (unregistering it), reports STOPPED
//               and waits for $TERM
//    $TERM      stops every engine (unregistering it) and ends
//  It sends "STOPPED" <exit status> when every engine has stopped (by
//  shutdown_request, a gone controller, a failed registration, or a
//  start-up error) or the process was interrupted (SIGINT, SIGTERM); the
//  status is 0, 1 (controller gone, start-up error) or 255 (registration
//  failed), the highest over the engines.
void bn_engine_actor (zsock_t *pipe, void *args);

#endif

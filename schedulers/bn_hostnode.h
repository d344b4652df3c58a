/*  bn_hostnode: a host node (doc/hosts.md), what `banyan-scheduler --host`
    runs on each engine host: towards the engines of its host it is a
    controller (registration, heartbeats, mux, control, task, iopub and a
    broadcast leaf, on ports it writes into a host-local connection file);
    towards the controller it holds one link per channel, whatever the
    number of its engines, and passes their traffic through them.  */
#ifndef BN_HOSTNODE_H_INCLUDED
#define BN_HOSTNODE_H_INCLUDED

#include <czmq.h>

//  What a host node starts from; read (and copied) before the actor
//  signals, i.e. before zactor_new returns.
typedef struct {
    const char *connection_info; //  JSON of the controller's engine
                                 //  connection file
    const char *name;            //  host name for the hub (NULL: this
                                 //  host's, gethostname)
    const char *ip;              //  address the engine-facing ports bind
                                 //  (NULL: 127.0.0.1)
    int ports[2];                //  lowest and highest port they come
                                 //  from (0: any port)
    const char *connfile_path;   //  where the host-local connection file
                                 //  goes once the hub has welcomed us
    int registration_timeout_ms; //  how long the hub has to welcome us
    int connect_grace_ms;        //  how long a request waits for an engine
                                 //  the hub registered to connect
    int hwm;                     //  high-water mark of every socket (0:
                                 //  none)
    const char *reduce_plugins;  //  the broadcast leaf's reductions, paths
                                 //  separated by ':' (NULL: none)
    int status;                  //  Out: 0 started, -1 start-up failed
} bn_hostnode_args_t;

//  Ports a host node listens on for its engines: registration, mux,
//  control, task, iopub, the heartbeat's two and its broadcast leaf's.
#define BN_HOSTNODE_PORTS 8

//  The host node actor (args: bn_hostnode_args_t *). It binds its ports,
//  connects its links and says hello to the hub; start-up fails (status
//  -1) on bad connection info, a port range smaller than BN_HOSTNODE_PORTS
//  or a port it cannot bind. Then, on the pipe,
//  once:
//    READY path        the hub welcomed it; the connection file is written
//    FAILED reason     the hub refused it or did not answer in time; the
//                      actor has ended
//  Commands:
//    LINK              reply [its link id]
//    STATS             reply [JSON object of counters]
//    $TERM             stop (the connection file is removed)
void bn_hostnode_actor (zsock_t *pipe, void *args);

#endif

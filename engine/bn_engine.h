/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_engine: one logical engine: its identity, sockets and the engine side
    of the IPython Parallel protocol (doc/wire.md 3.1, 4, 9), driven by a zloop
    that it shares with the other engines of its process.  */
#ifndef BN_ENGINE_H_INCLUDED
#define BN_ENGINE_H_INCLUDED

#include "bn_apply.h"
#include "bn_connfile.h"
#include "bn_functions.h"
#include "bn_msg.h"
#include "bn_watch.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct _bn_engine_t bn_engine_t;

typedef enum {
    BN_ENGINE_REGISTERING, //  waiting for its registration_reply
    BN_ENGINE_RUNNING,     //  registered, serving requests
    BN_ENGINE_STOPPED      //  shut down, gave up, or failed to register
} bn_engine_state_t;

//  msg_ids named by abort_request are remembered in two generations of at
//  most this many each; the older generation is forgotten when the newer
//  one is full, so ids that never arrive cannot grow the set for ever.
#define BN_ENGINE_ABORTED_MAX 16384

//  Why an engine stopped; the process exit status its main should use.
typedef enum {
    BN_ENGINE_EXIT_OK = 0,              //  shutdown_request or stop
    BN_ENGINE_EXIT_CONTROLLER_GONE = 1, //  no heartbeat for too long
    BN_ENGINE_EXIT_REGISTRATION = 255   //  no or a bad registration_reply
} bn_engine_exit_t;

//  What the engines of one process share (owned by their caller, who
//  keeps it alive longer than the engines).
typedef struct {
    zloop_t *loop;           //  drives every engine
    bn_watch_t *watch;       //  watches their sockets and commands
    bn_connfile_t *connfile; //  controller URLs and key
    zsock_t *iopub;          //  PUB connected to the iopub URL
    zsock_t *registration;   //  DEALER connected to the registration
                             //  URL: carries every engine's
                             //  registration_request and
                             //  unregistration_request (the hub reads
                             //  the uuid or id from the content); the
                             //  owner reads the replies and hands
                             //  each to its engine
    zsock_t *shell;          //  ROUTER shared by the engines for mux, task and
                             //  broadcast behind a host node that offers it
                             //  (bn_shared_channels, doc/wire.md 4.1), NULL:
                             //  each engine has its own; the owner reads it
                             //  and hands each request to the engine named
                             //  after the peer's routing id
    zsock_t *control;        //  ditto for control
    zsock_t *pong;           //  ditto, DEALER to hb_pong: [uuid, ping]
    //  A broadcast connection the engines share (doc/wire.md 4.1) when
    //  banyan's hub offers one: its routing id, named in every
    //  registration_request (NULL: none asked; always NULL with the shared
    //  channels above, which carry broadcast already), and a ROUTER the owner
    //  connects to the port the hub names (broadcast_join), reads, and
    //  hands each request to the engine named after the peer's routing id
    const char *broadcast_via;
    zsock_t *broadcast;              //  NULL until an engine joins it
    bn_watch_item_t *broadcast_item; //  its watch
    int (*broadcast_join) (int port, void *arg); //  0, or -1 (logged)
    void *broadcast_join_arg;
    //  The owner's watches of registration, shell and control (NULL
    //  when not watched): an engine that sends on one of them asks the
    //  watch to look at it, since a send may take its signal of input.
    bn_watch_item_t *registration_item;
    bn_watch_item_t *shell_item;
    bn_watch_item_t *control_item;
    bn_functions_t *functions;   //  what apply_request can call
    bn_apply_memo_t *apply_memo; //  the last apply_request's f and info,
                                 //  decoded (NULL: decode every one)
    const char *cwd;             //  folder commands run in, NULL: current
    double registration_timeout; //  seconds to wait for registration_reply
                                 //  while no engine of the process gets
                                 //  one
    int64_t last_reply;          //  when one last got its registration
                                 //  reply (ms, mono), 0: none yet
    double timeout;              //  seconds without a ping: controller gone
    int heartbeat_misses;        //  missed ping periods: controller gone
    double time_limit;           //  seconds a request may run, 0: no limit
    double abort_grace;          //  seconds between the signals that end
                                 //  an aborted command (SIGINT, SIGTERM,
                                 //  SIGKILL)
    zcert_t *curve_cert;         //  client keys when the file has a CURVE
                                 //  server key, else NULL
    //  Commands running at once over all engines: a command holds three
    //  descriptors, and a process has only so many. 0: no limit; else
    //  waiting must be an empty zlistx. The engines keep the counts.
    int max_commands;
    int commands_running; //  now
    zlistx_t *waiting;    //  bn_engine_t * waiting for a slot, in order
    bool starting;        //  handing out slots (no recursion)
    //  Called when an engine becomes RUNNING or STOPPED.
    void (*on_state) (bn_engine_t *engine, void *arg);
    void *arg;
} bn_engine_env_t;

//  Counters of what an engine received and did with it.
typedef struct {
    uint64_t received;    //  messages read from shell and control
    uint64_t handled;     //  requests answered (any status)
    uint64_t errors;      //  requests answered with status error
    uint64_t aborted;     //  requests answered with status aborted
    bn_msg_drops_t drops; //  Dropped: framing, signature, replay, header
    uint64_t pings;       //  heartbeats echoed
} bn_engine_stats_t;

//  Create an engine with a fresh uuid that will ask for id requested_id
//  (-1: any). Returns NULL if out of memory.
bn_engine_t *bn_engine_new (bn_engine_env_t *env, int requested_id);

//  Destroy an engine: kills a running command, closes its sockets (no
//  unregistration; see bn_engine_stop). NULL-safe.
void bn_engine_destroy (bn_engine_t **self_p);

//  Size the engine's replay history whole now (about 4 MiB), so that its
//  memory stays flat as its traffic fills it. Returns 0, or BN_ENOMEM.
int bn_engine_reserve_history (bn_engine_t *self);

//  Send registration_request: on the shared registration socket, whose
//  owner hands the reply to bn_engine_registration_reply, or (not shared)
//  on a socket of the engine's own. Returns -1 if it cannot be sent.
int bn_engine_start (bn_engine_t *self, bool shared);

//  Handle the reply to the engine's registration_request: the
//  registration_reply makes it RUNNING, or STOPPED when refused. Takes
//  the message. Returns -1 if it was not taken as the reply (a bad
//  signature, another type, the engine is not registering).
int bn_engine_registration_reply (bn_engine_t *self, bn_msg_t **msg_p);

//  Handle a request read from the shared shell or control socket for this
//  engine (its routing frames [peer, uuid, ...] kept for the reply); takes
//  the message, dropped (counted) unless the engine runs and it checks.
void bn_engine_shell_request (bn_engine_t *self, bn_msg_t **msg_p);
void bn_engine_control_request (bn_engine_t *self, bn_msg_t **msg_p);

//  Stop serving: kill a running command, drop queued requests, send
//  unregistration_request when registered, close the sockets (pending
//  replies still go out) and become STOPPED with exit status code. (After
//  a shutdown_request the engine stops by itself, without the
//  unregistration_request: the hub acts on the iopub shutdown_reply.)
void bn_engine_stop (bn_engine_t *self, bn_engine_exit_t code);

//  Echo one heartbeat ping (from the shared SUB) on the pong socket,
//  unless it repeats the ping echoed last.
void bn_engine_ping (bn_engine_t *self, zmq_msg_t *ping);

//  Check registration and heartbeat deadlines at monotonic time now_ms.
void bn_engine_tick (bn_engine_t *self, int64_t now_ms);

bn_engine_state_t bn_engine_state (bn_engine_t *self);

//  Exit status once STOPPED (BN_ENGINE_EXIT_OK before).
bn_engine_exit_t bn_engine_exit_code (bn_engine_t *self);

//  Engine id given by the controller, or -1 before registration.
int bn_engine_id (bn_engine_t *self);

//  The engine's identity (its session id and routing id).
const char *bn_engine_uuid (bn_engine_t *self);

//  Counters since creation.
const bn_engine_stats_t *bn_engine_stats (bn_engine_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_treeproc: the controller's supervisor of the broadcast tree in
    process mode: one banyan-scheduler process per tree node.

    Each process is started as

        <program> --node <index> <the node's args> [--bind NAME=ENDPOINT]...
                  --control-fd 3

    with fd 3 its end of a bn_nodelink socket pair. The session key is the
    first message on the link, ["KEY", key], never on a command line. The
    process binds every --bind endpoint (tcp://ip:0 lets the system pick a
    port) and answers ["READY", NAME, actual endpoint, ...]. After that the
    link carries node actor commands down (ENGINE_ADD, ENGINE_REMOVE,
    CHILD_LOST, STATS...) and whatever the process sends up.

    Supervision: a process whose link ends (it died or exited) is reaped
    and reported (log line, the handler's LOST event), its parent node is
    sent ["CHILD_LOST", "<position>"] (the lost node's position among the
    parent's children, in node order) so requests waiting on it fail at once,
    and it is started again with the endpoints it had bound before (the
    same tcp ports, so engines and clients reconnect by themselves); once
    it answers READY the handler gets READY again, which is where the owner
    re-sends the engine table. A process that keeps dying is restarted
    with a growing delay (up to 5 s); one that does not answer READY within
    the start timeout is killed and treated as dead.

    No process outlives its controller: each one has PR_SET_PDEATHSIG
    (SIGKILL) and exits when its link reaches end-of-file; destroy closes
    the links, waits briefly and kills what is left. (A controller killed
    outright leaves the private folder behind; the controller puts it in
    its profile's pid/ folder, so it goes with the profile.)

    The private folder (bn_treeproc_dir, mode 0700) is where the owner puts
    ipc:// endpoints of the links between nodes; destroy removes it.  */
#ifndef BN_TREEPROC_H_INCLUDED
#define BN_TREEPROC_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <sys/types.h>

typedef struct _bn_treeproc_t bn_treeproc_t;

//  What the supervisor reports about node: event "READY" (msg: the READY
//  message: "READY", NAME, endpoint, ...), "LOST" (msg: one frame saying
//  why) or "MESSAGE" (msg: what the process sent). msg is borrowed.
typedef void (bn_treeproc_fn) (void *arg, size_t node, const char *event,
                               zmsg_t *msg);

//  Create a supervisor of nnodes processes running program (a path, or a
//  name looked up in PATH) that will be given key. Creates the private
//  folder, tree-XXXXXX, in parent (made if missing, mode 0700), or
//  banyan-tree-XXXXXX in $TMPDIR or /tmp when parent is NULL or too long
//  for ipc paths. Returns NULL on failure (logged).
bn_treeproc_t *bn_treeproc_new (const char *program, const char *key,
                                size_t nnodes, const char *parent);

//  Give the nodes the CURVE secret key (Z85) of their tcp ports, after
//  their session key on the control link (never on a command line).
//  Returns -1 if out of memory.
int bn_treeproc_set_curve (bn_treeproc_t *self, const char *secret);

//  Stop every process (close the links, wait up to a second, SIGKILL what
//  is left, reap), remove the private folder, free; NULL-safe.
void bn_treeproc_destroy (bn_treeproc_t **self_p);

//  The private folder for ipc:// endpoints.
const char *bn_treeproc_dir (bn_treeproc_t *self);

//  Set node's parent (-1 for the root) and its args (a NULL-terminated
//  list, copied). Call before bn_treeproc_start. Returns -1 if out of
//  memory.
int bn_treeproc_set_node (bn_treeproc_t *self, size_t node, int parent,
                          const char **args);

//  Ask node to bind endpoint under name. Returns -1 if out of memory.
int bn_treeproc_add_bind (bn_treeproc_t *self, size_t node, const char *name,
                          const char *endpoint);

//  Where events go (called from bn_treeproc_start and from the loop).
void bn_treeproc_set_handler (bn_treeproc_t *self, bn_treeproc_fn *handler,
                              void *arg);

//  Milliseconds a process has to answer READY (default 10000).
void bn_treeproc_set_start_timeout (bn_treeproc_t *self, int timeout);

//  The longest wait before a node that keeps dying is restarted: a node
//  lost within 10 s of its start waits 100 ms, then twice as long each
//  time, up to msecs (controller.node_restart_backoff).
#define BN_TREEPROC_RESTART_BACKOFF 5000
void bn_treeproc_set_restart_backoff (bn_treeproc_t *self, int msecs);

//  Ask each ready process over its link every period_ms whether it
//  answers (PING, PONG); one silent for misses periods (stopped, or stuck)
//  is killed, and so lost and restarted as any that ends. 0 = never (the
//  default).
void bn_treeproc_set_liveness (bn_treeproc_t *self, int period_ms, int misses);

//  Start every process and wait until each has answered READY. Returns 0,
//  or -1 if one could not be started, ended or did not answer in time (the
//  others keep running until destroy).
int bn_treeproc_start (bn_treeproc_t *self);

//  Supervise from loop (reports, CHILD_LOST, restarts). Returns -1 on
//  failure.
int bn_treeproc_attach (bn_treeproc_t *self, zloop_t *loop);

//  The endpoint node bound under name, or NULL before it was READY.
const char *bn_treeproc_endpoint (bn_treeproc_t *self, size_t node,
                                  const char *name);

//  Process id of node, or 0 while it is not running.
pid_t bn_treeproc_pid (bn_treeproc_t *self, size_t node);

//  True when node's process is running and has answered READY.
bool bn_treeproc_ready (bn_treeproc_t *self, size_t node);

//  Send a message (taken) to node's process. Returns -1 if node is not
//  running or its link is broken (the message is dropped).
int bn_treeproc_send (bn_treeproc_t *self, size_t node, zmsg_t **msg_p);

//  Send string frames (ending with NULL) to node; as bn_treeproc_send.
int bn_treeproc_sendx (bn_treeproc_t *self, size_t node, const char *frame,
                       ...);

//  Send a message (taken) to node's ready process and wait until it sends
//  one whose first frame is answer (what it sends meanwhile is reported as
//  usual), at most timeout ms; the answer goes to *reply_p (the caller's
//  to destroy) unless reply_p is NULL. Returns 0 when the answer came, -1
//  when node is not ready (the message is then only queued, as by
//  bn_treeproc_send), its process ended, or the time ran out (logged).
int bn_treeproc_call (bn_treeproc_t *self, size_t node, zmsg_t **msg_p,
                      const char *answer, int timeout, zmsg_t **reply_p);

//  A new JSON object: per node pid, state, restarts and the last loss.
json_t *bn_treeproc_stats (bn_treeproc_t *self);

#endif

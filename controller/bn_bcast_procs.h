/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_procs: the broadcast tree in processes mode: one
    banyan-scheduler process per node of a topology, started and watched by
    a bn_treeproc supervisor. The counterpart of bn_bcast_tree (threads
    mode) for the controller.

    Links: the controller holds the client-facing broadcast port
    (bn_bcast_front) and reaches the root at ipc://<private folder>/root.ipc,
    so that clients keep their connections, and get answers, when the root
    dies; each leaf binds its engine-facing port on tcp://<ip> (the ports
    the connection files give); every inner node binds its down socket on
    ipc://<private folder>/<node>.ipc and its children connect there. ipc
    rather than loopback tcp: no TCP stack per hop, no port to find or to
    win back after a restart (the path is fixed by the node's index), and
    the folder is mode 0700, so only the controller's user reaches it.

    The processes report the ports they bound before start returns, so
    the controller writes its connection files after. A node
    that dies is restarted on the same ports and paths; the engines it
    served reconnect by themselves, and it is told again which engines are
    registered. The controller runs it through bn_bcast_processes
    (bn_bcast_mode).  */
#ifndef BN_BCAST_PROCS_H_INCLUDED
#define BN_BCAST_PROCS_H_INCLUDED

#include "bn_bcast_mode.h"

//  The nodes as banyan-scheduler processes (options->program), started
//  and watched by a bn_treeproc supervisor; the front reports what passes
//  the client port to the records link's target, on the loop's thread
//  (the root process reports nothing). Stats add
//  "mode": "processes" and per node pid, state, restarts and last_loss
//  (a node that does not answer is waited for up to a second).
extern const bn_bcast_mode_t bn_bcast_processes;

#endif

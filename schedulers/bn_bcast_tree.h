/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_bcast_tree: the broadcast tree in threads mode: one bn_bcast_node
    actor per node of a topology, linked over inproc://, inside the
    controller process; the controller runs it through bn_bcast_threads
    (bn_bcast_mode).  */
#ifndef BN_BCAST_TREE_H_INCLUDED
#define BN_BCAST_TREE_H_INCLUDED

#include "bn_bcast_mode.h"

//  Sockets the tree's threads open (a pipe pair and up to two ROUTERs
//  per node), to size the process's socket limit.
#define BN_BCAST_TREE_SOCKETS(nodes) ((size_t)(nodes)*4)

//  The nodes as threads of this process: the root binds the client port
//  and each leaf its engine port on tcp://ip; the links between nodes are
//  inproc:// and trusted; the root reports to the records link from its
//  thread through bn_monitor_link_sender.
extern const bn_bcast_mode_t bn_bcast_threads;

#endif

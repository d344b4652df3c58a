/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_limits: limits that more than one part of banyan enforces, each
    defined once here so that they cannot drift apart.  */
#ifndef BN_LIMITS_H_INCLUDED
#define BN_LIMITS_H_INCLUDED

//  Deepest broadcast tree (levels below the root). The controller.depth
//  setting (file, environment, --depth) refuses more, and so does the
//  topology (bn_topology_new, banyan-scheduler --depth). A deeper tree
//  would not add useful shapes under the cap on tree nodes, and its
//  routing ids must fit BN_TOPOLOGY_ID_MAX.
#define BN_TOPOLOGY_MAX_DEPTH 6

//  Ports the controller binds itself (the hub's query and notification
//  ports, the heartbeat's two, and both sides of the mux, control, iopub
//  and task relays); its broadcast tree binds one more for the root and
//  one a leaf. controller.ports must hold them all: the controller refuses
//  a smaller range, and cluster start before starting it.
#define BN_CONTROLLER_OWN_PORTS 12

#endif

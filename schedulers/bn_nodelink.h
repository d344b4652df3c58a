/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_nodelink: the control link between banyan-controller and one of its
    banyan-scheduler processes: multi-frame messages over an AF_UNIX
    SOCK_SEQPACKET socket pair that the process inherits.

    The link carries what cannot go on a command line (the session key),
    the process's report of the endpoints it bound, and the node actor's
    commands (ENGINE_ADD, ENGINE_REMOVE, CHILD_LOST, STATS) in both
    directions. Its end-of-file is how each side learns the other is gone.

    One packet is one message: each frame as a netstring ("5:hello,"), so a
    packet is printable when its frames are. Sends never block: a packet
    the peer cannot take yet waits in a queue, flushed when the socket is
    writable (bn_nodelink_pending says when to poll for that).  */
#ifndef BN_NODELINK_H_INCLUDED
#define BN_NODELINK_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>

typedef struct _bn_nodelink_t bn_nodelink_t;

//  Largest packet either side sends or accepts.
#define BN_NODELINK_MAX_PACKET 65536

//  Messages queued for a slow peer before sends fail: the link is for
//  control traffic, and a peer this far behind is stuck.
#define BN_NODELINK_MAX_QUEUED 100000

//  Create a connected socket pair: *ours and *theirs get the two ends, both
//  close-on-exec. Returns 0, or -1 with errno set.
int bn_nodelink_pair (int *ours, int *theirs);

//  Wrap fd (taken: destroy closes it) and make it non-blocking. Returns
//  NULL if out of memory (fd is then closed).
bn_nodelink_t *bn_nodelink_new (int fd);

//  Close the link and NULL the reference; NULL-safe.
void bn_nodelink_destroy (bn_nodelink_t **self_p);

//  The socket, for a poller.
int bn_nodelink_fd (bn_nodelink_t *self);

//  Send a message (taken and destroyed). Returns 0 when sent or queued,
//  -1 when the link is broken or the message too large (see errno).
int bn_nodelink_send (bn_nodelink_t *self, zmsg_t **msg_p);

//  Send string frames, the list ending with NULL; as bn_nodelink_send.
int bn_nodelink_sendx (bn_nodelink_t *self, const char *frame, ...);

//  True when messages wait for the socket to become writable.
bool bn_nodelink_pending (bn_nodelink_t *self);

//  Write queued messages until the socket would block. Returns 0, or -1
//  when the link is broken.
int bn_nodelink_flush (bn_nodelink_t *self);

//  Receive one message. With timeout 0 it does not wait; with -1 it waits
//  as long as it takes. Returns the message; NULL with *eof true when the
//  peer closed its end, NULL with *eof false when nothing arrived in time
//  or a packet was malformed (counted in bn_nodelink_malformed).
zmsg_t *bn_nodelink_recv (bn_nodelink_t *self, int timeout, bool *eof);

//  Malformed packets received and dropped.
size_t bn_nodelink_malformed (bn_nodelink_t *self);

#endif

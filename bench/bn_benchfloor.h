/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchfloor: the bare ZeroMQ floor every banyan figure is stated
    against: one ROUTER sends a payload to N DEALER echo sockets in helper
    processes (laid out as engines are: K per process) and collects the N
    replies (the payload echoed, or an empty answer), one at a time or
    many in flight. No JSON, no signing, and no relay, unless asked for
    one: then a helper process passes the messages between the ROUTER and
    the echo sockets, as the controller's mux does.  */
#ifndef BN_BENCHFLOOR_H_INCLUDED
#define BN_BENCHFLOOR_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_benchfloor_t bn_benchfloor_t;

//  Fork the helper processes (engines echo sockets, per_process in each)
//  and bind the ROUTER they connect to; returns when every echo socket
//  has said hello, or NULL with the reason in err after timeout seconds.
//  Each echo socket sends back every message it gets (echo), or answers
//  it with one empty frame (the floor of sending the payload one way).
//  With relay, the echo sockets connect to a relay helper, which passes
//  every frame on as received, both ways (two hops each way, as through a
//  mux). Must be called before this process creates a ZeroMQ context of
//  its own (the helpers are forked).
bn_benchfloor_t *bn_benchfloor_new (int engines, int per_process, bool echo,
                                    bool relay, double timeout, char *err,
                                    size_t errsize);

//  Stop the helpers, wait for them, and NULL *self_p; NULL-safe.
void bn_benchfloor_destroy (bn_benchfloor_t **self_p);

//  One round: messages of size bytes to every echo socket, all sent back
//  to back (messages x engines in flight), and every reply (the message,
//  or the empty answer) back.
//  Returns 0, or -1 if a reply did not come within timeout seconds.
int bn_benchfloor_round (bn_benchfloor_t *self, size_t size, int messages,
                         double timeout);

#endif

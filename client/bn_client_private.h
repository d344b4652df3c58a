/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client_private: what libbanyan's views and hub queries use of the
    client (not installed): its tracker (the lock, the requests waiting
    for replies, the state), its engine table, the session that numbers
    requests, and the way to hand them to the I/O thread. Results and
    items see only the tracker.  */
#ifndef BN_CLIENT_PRIVATE_H_INCLUDED
#define BN_CLIENT_PRIVATE_H_INCLUDED

#include "banyan.h"
#include "bn_engines.h"
#include "bn_iothread.h"
#include "bn_msg.h"
#include "bn_result_private.h"
#include "bn_session.h"
#include "bn_tracker.h"

#include <jansson.h>

//  Take one more reference to the client's memory (a view).
void bn_client_ref (bn_client_t *self);

//  Drop a reference; the last one frees the client. NULLs *self_p.
void bn_client_unref (bn_client_t **self_p);

//  The client's tracker (borrowed: it lives as long as the client).
bn_tracker_t *bn_client_tracker (bn_client_t *self);

//  With the tracker's lock held: the engine table.
bn_engines_t *bn_client_engines (bn_client_t *self);

//  With the tracker's lock held: the session that builds outgoing
//  messages.
bn_session_t *bn_client_tx_session (bn_client_t *self);

//  A result of this client with room for capacity items (bn_result_new
//  on its tracker, holding a reference to it). NULL if out of memory.
bn_result_t *bn_client_result_new (bn_client_t *self, size_t capacity);

//  True if the controller has a port for sock.
bool bn_client_has_port (bn_client_t *self, bn_sock_t sock);

//  Without the lock: hand count messages to the I/O thread to sign and
//  send on sock (bn_iothread_send). Returns 0, BN_ECLOSED or BN_ENOMEM.
int bn_client_send (bn_client_t *self, bn_sock_t sock, bn_msg_t **msgs,
                    size_t count);

//  Without the lock: send one hub query of type with content (taken; a JSON
//  object) and wait for its reply. On 0 or BN_EREMOTE (the reply's
//  status is not ok) *result_p is the complete result of one item, for
//  the caller to destroy; else NULL. Returns 0, BN_EREMOTE, BN_ETIMEDOUT,
//  BN_ENOCONTROLLER, BN_ECLOSED or BN_ENOMEM.
int bn_client_query (bn_client_t *self, const char *type, json_t *content,
                     double timeout, bn_result_t **result_p);

#endif

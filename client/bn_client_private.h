/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client_private: what libbanyan's client, view and result classes
    share inside the library (not installed).  */
#ifndef BN_CLIENT_PRIVATE_H_INCLUDED
#define BN_CLIENT_PRIVATE_H_INCLUDED

#include "banyan.h"
#include "bn_msg.h"
#include "bn_session.h"

#include <jansson.h>

#define BN_UUID_SIZE 64 //  room for an engine uuid and its NUL

//  The client's sockets to the controller that requests are sent on.
typedef enum {
    BN_SOCK_QUERY,     //  hub queries (registration port)
    BN_SOCK_MUX,       //  direct requests
    BN_SOCK_CONTROL,   //  control requests to engines
    BN_SOCK_TASK,      //  load-balanced requests
    BN_SOCK_BROADCAST, //  broadcast requests
    BN_SOCK_COUNT
} bn_sock_t;

//  An engine a request goes to.
typedef struct {
    int id;                  //  engine id
    char uuid[BN_UUID_SIZE]; //  engine identity
} bn_target_t;

//  One request (one msg_id) of a result; owned by its result.
typedef struct _bn_item_t bn_item_t;

//  What an item's request is; decides what its engine's end means.
typedef enum {
    BN_ITEM_SHELL,    //  execute or apply: has output, abort acts on it
    BN_ITEM_CONTROL,  //  abort or clear, to one engine
    BN_ITEM_SHUTDOWN, //  shutdown of one engine: its end is success
    BN_ITEM_QUERY     //  a hub query
} bn_item_kind_t;

//  Client ---------------------------------------------------------------

//  Take one more reference to the client's memory.
void bn_client_ref (bn_client_t *self);

//  Drop a reference; the last one frees the client. NULLs *self_p.
void bn_client_unref (bn_client_t **self_p);

void bn_client_lock (bn_client_t *self);
void bn_client_unlock (bn_client_t *self);

//  With the lock held: sleep until the client's state changes (an item
//  completes, engines come or go, the controller goes) or until deadline
//  (bn_client_deadline; negative: none). Returns 0, or BN_ETIMEDOUT once
//  the deadline has passed.
int bn_client_wait_change (bn_client_t *self, double deadline);

//  Absolute deadline of a timeout in seconds (negative: none, -1).
double bn_client_deadline (double timeout);

//  With the lock held: 0, BN_ENOCONTROLLER or BN_ECLOSED.
int bn_client_state (bn_client_t *self);

//  With the lock held: the session that builds outgoing messages.
bn_session_t *bn_client_tx_session (bn_client_t *self);

//  With the lock held: true if the controller has a port for sock.
bool bn_client_has_port (bn_client_t *self, bn_sock_t sock);

//  With the lock held: resolve engine ids (all registered engines when
//  ids is NULL) into a malloc'd array. Returns 0, BN_ENOENGINE (an id is
//  not registered, or no engines at all) or BN_ENOMEM.
int bn_client_resolve (bn_client_t *self, const int *ids, size_t count,
                       bn_target_t **targets, size_t *ntargets);

//  With the lock held: the id of the engine with this uuid, or -1.
int bn_client_engine_id_of (bn_client_t *self, const char *uuid);

//  With the lock held: route replies and output for item's msg_id to it.
//  Returns 0 or -1 if out of memory.
int bn_client_track (bn_client_t *self, bn_item_t *item);

//  With the lock held: stop routing to item (no-op if not tracked).
void bn_client_untrack (bn_client_t *self, bn_item_t *item);

//  With the lock held: a JSON list of the msg_ids of every shell request
//  still waiting for its reply; NULL if out of memory.
json_t *bn_client_outstanding (bn_client_t *self);

//  Without the lock: hand count messages (ownership taken and the array
//  NULLed; they are destroyed on failure too) to the I/O thread to sign
//  and send on sock.
//  Returns 0, BN_ECLOSED or BN_ENOMEM.
int bn_client_send (bn_client_t *self, bn_sock_t sock, bn_msg_t **msgs,
                    size_t count);

//  Without the lock: send one hub query of type with content (taken; a JSON
//  object) and wait for its reply. On 0 or BN_EREMOTE (the reply's
//  status is not ok) *result_p is the complete result of one item, for
//  the caller to destroy; else NULL. Returns 0, BN_EREMOTE, BN_ETIMEDOUT,
//  BN_ENOCONTROLLER, BN_ECLOSED or BN_ENOMEM.
int bn_client_query (bn_client_t *self, const char *type, json_t *content,
                     double timeout, bn_result_t **result_p);

//  Result (internal) ----------------------------------------------------

//  Create a result on client with room for capacity items; it takes a
//  reference to the client. NULL if out of memory.
bn_result_t *bn_result_new (bn_client_t *client, size_t capacity);

//  With the lock held: add an item of kind for a request sent with
//  msg_id at date, to engine id/uuid (-1/NULL when not known). NULL if
//  out of memory or full.
bn_item_t *bn_result_add (bn_result_t *self, const char *msg_id,
                          const char *date, int engine_id, const char *uuid,
                          bn_item_kind_t kind);

//  The client of the result (borrowed).
bn_client_t *bn_result_client (bn_result_t *self);

//  The item at index.
bn_item_t *bn_result_item (bn_result_t *self, size_t index);

//  The request asked engines for output in the reply (bn_output), so an
//  item whose reply carries none has no iopub output to wait for either.
void bn_result_set_output_in_reply (bn_result_t *self, bool in_reply);
bool bn_result_output_in_reply (bn_result_t *self);

//  With the lock held: one more reply message arrived for the result.
void bn_result_count_message (bn_result_t *self);

//  With the lock held: record a group of engines (taken) that came as
//  one entry; returns its number, or -1 if out of memory.
int bn_result_add_group (bn_result_t *self, bn_idset_t *engines);

//  With the lock held: record a reduced value (taken, may be NULL when
//  it could not be decoded), its op, its contributors and failed
//  engines (borrowed). Returns 0 or -1 if out of memory.
int bn_result_add_reduced (bn_result_t *self, const char *op, bn_value_t *value,
                           bn_idset_t *engines, bn_idset_t *failed);

//  The reply message of a complete hub query item (borrowed), or NULL.
bn_msg_t *bn_result_reply_msg (bn_result_t *self, size_t index);

//  The reply content of a complete item (borrowed), or NULL.
json_t *bn_result_reply (bn_result_t *self, size_t index);

//  Item (with the lock held) --------------------------------------------

//  One engine's reply, as a plain reply message or an entry of a merged,
//  grouped or reduced one carries it.
typedef struct {
    const char *type;      //  apply_reply or execute_reply
    json_t *content;       //  the engine's reply content (borrowed)
    const char *started;   //  when the engine started, or NULL
    const char *completed; //  the reply's date, or NULL
    const char *out;       //  stdout carried in the reply, or NULL
    const char *err;       //  stderr carried in the reply, or NULL
    bool no_output;        //  no iopub output will follow
    bn_value_t *value;     //  decoded apply result (taken), or NULL
    int decode_error;      //  BN_E* when decoding the result failed
    const char *why;       //  its text
    json_t *hops;          //  bn_hops of the message (borrowed), or NULL
    const char *uuid;      //  the replying engine, for an item without one
    int engine_id;         //  its id, or -1
} bn_reply_t;

//  The result the item belongs to.
bn_result_t *bn_item_result (bn_item_t *self);

//  Record one engine's reply. Returns true if the item completed now.
bool bn_item_on_entry (bn_item_t *self, bn_reply_t *reply);

//  The item arrived in group number group.
void bn_item_set_group (bn_item_t *self, int group);

const char *bn_item_msg_id (bn_item_t *self);
const char *bn_item_engine_uuid (bn_item_t *self);
bool bn_item_replied (bn_item_t *self);
bool bn_item_complete (bn_item_t *self);
bn_item_kind_t bn_item_kind (bn_item_t *self);

//  Record the reply msg; value is the decoded result (taken; may be
//  NULL), or decode_error a BN_E* code when decoding failed, with its
//  text in why. engine_id is the replying engine's id when the item did
//  not know it. Returns true if the item completed now.
bool bn_item_on_reply (bn_item_t *self, bn_msg_t *msg, bn_value_t *value,
                       int decode_error, const char *why, int engine_id);

//  Record an iopub message of msg_type with content for this request.
//  Returns true if the item completed now.
bool bn_item_on_iopub (bn_item_t *self, const char *msg_type, json_t *content);

//  The item's engine (id) unregistered: a shell or control request it
//  had not answered fails with EngineError (as the Python client's
//  _handle_stranded_msgs does), an answered one stops waiting for
//  output, a shutdown succeeds. Returns true if the item completed now.
bool bn_item_engine_died (bn_item_t *self, int id);

//  Complete the item with error code and exception name/value (unless it
//  is complete already). Returns true if the item completed now.
bool bn_item_fail (bn_item_t *self, int code, const char *ename,
                   const char *evalue);

#endif

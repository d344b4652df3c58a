/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_item: one request (one msg_id) of a result: what its reply, its
    output and its engine's fate made of it. Internal to libbanyan.

    An item is filled in by the client's I/O thread with the tracker's
    lock held, and never changes once complete, so its readers take the
    lock only to see that it is complete. It knows nothing of the result
    that owns it but the function to call when it completes.  */
#ifndef BN_ITEM_H_INCLUDED
#define BN_ITEM_H_INCLUDED

#include "banyan.h"
#include "bn_msg.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct _bn_item_t bn_item_t;

//  What an item's request is; decides what its engine's end means.
typedef enum {
    BN_ITEM_SHELL,    //  execute or apply: has output, abort acts on it
    BN_ITEM_CONTROL,  //  abort or clear, to one engine
    BN_ITEM_SHUTDOWN, //  shutdown of one engine: its end is success
    BN_ITEM_QUERY     //  a hub query
} bn_item_kind_t;

//  Called once when the item completes, with the owner and the item's
//  index given to bn_item_new.
typedef void (bn_item_done_fn) (bn_result_t *owner, size_t index);

//  One engine's reply, as a plain reply message or an entry of a merged,
//  grouped or reduced one carries it (bn_replies). Everything is
//  borrowed but value.
typedef struct {
    const char *type;      //  apply_reply or execute_reply
    json_t *content;       //  the engine's reply content
    const char *started;   //  when the engine started, or NULL
    const char *completed; //  the reply's date, or NULL
    const char *out;       //  stdout carried in the reply, or NULL
    const char *err;       //  stderr carried in the reply, or NULL
    bool no_output;        //  no iopub output will follow
    bn_value_t *value;     //  decoded apply result (taken), or NULL
    int decode_error;      //  BN_E* when decoding the result failed
    const char *why;       //  its text
    json_t *hops;          //  bn_hops of the message, or NULL
    const char *uuid;      //  the replying engine, for an item without one
    int engine_id;         //  its id, or -1
    bn_msg_t *raw;         //  a hub query's reply message, or NULL
} bn_reply_t;

//  Create an item of kind for the request msg_id sent at date (or NULL),
//  to engine engine_id / uuid (-1 / NULL when not known). output_in_reply
//  says the request asked engines for their output in the reply. done
//  (owner, index) is called when it completes. NULL if out of memory.
bn_item_t *bn_item_new (const char *msg_id, const char *date, int engine_id,
                        const char *uuid, bn_item_kind_t kind,
                        bool output_in_reply, bn_item_done_fn *done,
                        bn_result_t *owner, size_t index);

//  Destroy an item; NULLs the reference; NULL-safe.
void bn_item_destroy (bn_item_t **self_p);

//  Record one engine's reply. Returns true if the item completed now.
bool bn_item_on_entry (bn_item_t *self, bn_reply_t *reply);

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

//  The item arrived in group number group.
void bn_item_set_group (bn_item_t *self, int group);

//  The item's request went to the broadcast scheduler (set once, before
//  it is tracked), whose loss fails it (bn_tracker_broadcast_lost).
void bn_item_set_via_broadcast (bn_item_t *self);
bool bn_item_via_broadcast (bn_item_t *self);

//  Its owner (the result it belongs to).
bn_result_t *bn_item_result (bn_item_t *self);

//  Accessors. The request's own fields (msg_id, submitted, kind) never
//  change; the others are read with the lock held, or once complete.
const char *bn_item_msg_id (bn_item_t *self);
const char *bn_item_submitted (bn_item_t *self);
bn_item_kind_t bn_item_kind (bn_item_t *self);
const char *bn_item_engine_uuid (bn_item_t *self);
int bn_item_engine_id (bn_item_t *self);
bool bn_item_replied (bn_item_t *self);
bool bn_item_complete (bn_item_t *self);
int bn_item_status (bn_item_t *self);
const char *bn_item_started (bn_item_t *self);
const char *bn_item_completed (bn_item_t *self);
json_t *bn_item_content (bn_item_t *self);
const char *bn_item_content_text (bn_item_t *self); //  made once, lock held
const bn_value_t *bn_item_value (bn_item_t *self);
const char *bn_item_execute_result (bn_item_t *self);
int bn_item_execution_count (bn_item_t *self);
const char *bn_item_ename (bn_item_t *self);
const char *bn_item_evalue (bn_item_t *self);
const char *bn_item_traceback (bn_item_t *self);
const char *bn_item_stdout (bn_item_t *self); //  "" when none
const char *bn_item_stderr (bn_item_t *self); //  "" when none
size_t bn_item_stdout_size (bn_item_t *self); //  bytes, NULs included
size_t bn_item_stderr_size (bn_item_t *self);
json_t *bn_item_hops (bn_item_t *self);
int bn_item_group (bn_item_t *self);
bn_msg_t *bn_item_raw (bn_item_t *self);

#endif

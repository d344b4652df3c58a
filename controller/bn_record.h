/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_record: one task record of the hub (doc/wire.md 5.1, 5.2): the request
    and reply as bn_msg_t copies (the relays' frames shared, but for a
    request's buffers of 8 kB to 64 MB: see bn_record_set_request), the iopub
    output published for it, and the 7.1.0 TaskRecord dict built from them
    only when a query asks. bn_records keeps them; a record read back from
    SQLite is a temporary one.  */
#ifndef BN_RECORD_H_INCLUDED
#define BN_RECORD_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <zmq.h>

#include "bn_copier.h"
#include "bn_msg.h"
#include "bn_records_sqlite.h"

typedef struct _bn_record_t bn_record_t;

//  Create an empty record of msg_id. Returns NULL if out of memory.
bn_record_t *bn_record_new (const char *msg_id);

//  Create a temporary record from a row read back from SQLite (sharing the
//  row's messages). Returns NULL if out of memory.
bn_record_t *bn_record_new_row (const bn_records_row_t *row);

//  Create a temporary record of engine uuid's part of original, a
//  broadcast whose replies (bn_record_add_part) include merged ones: the
//  request under msg_id, and once the engine's entry has arrived, a reply
//  rebuilt from it (its status, times, output, error and buffers, shared).
//  NULL if original is no such broadcast, uuid is not one of its targets,
//  original completed without the engine's entry, or out of memory.
bn_record_t *bn_record_new_engine (bn_record_t *original, const char *uuid,
                                   const char *msg_id);

//  Destroy a record; NULL-safe.
void bn_record_destroy (bn_record_t **self_p);

//  Let go of a record bn_records_get gave: a temporary record is
//  destroyed, one its records keep is not. NULLs the reference.
void bn_record_release (bn_record_t **self_p);

//  Make a temporary record one that its records keep (bn_record_release
//  no longer destroys it).
void bn_record_keep (bn_record_t *self);

//  The record's msg_id, owned by the record.
const char *bn_record_msg_id (bn_record_t *self);

//  Store a copy of request (without idents) sent on queue (a static
//  BN_MONITOR_QUEUE_* string) and, unless NULL, the engine it went to.
//  request may be NULL (the queue is still set). The copy shares the
//  frames, except buffers of 8 kB to 64 MB, which it copies: libzmq
//  receives a message of that size into memory of its own, and a record
//  that kept it would have libzmq fault in fresh pages for the next one
//  on the path of every request. The copy is made by copier, on its own
//  thread, unless copier is NULL or cannot take it: then here, after the
//  relay sent. The record's accessors of the request's bytes wait for it.
void bn_record_set_request (bn_record_t *self, const char *queue,
                            bn_msg_t *request, const char *engine_uuid,
                            bn_copier_t *copier);

//  The same for a request another record keeps already (a broadcast's,
//  for one engine's record): the copy shares every frame.
void bn_record_share_request (bn_record_t *self, const char *queue,
                              bn_msg_t *request, const char *engine_uuid);

//  Store a copy of reply (sharing its frames, without idents), received
//  now, from engine_uuid unless NULL. Its buffers are not copied as a
//  request's are: a broadcast's reply holds every engine's, and copying
//  them cost more on the records' thread (a 1 MB echo to 64 engines, 64
//  MB a request) than the fresh pages they saved the I/O threads.
void bn_record_set_reply (bn_record_t *self, bn_msg_t *reply,
                          const char *engine_uuid);

//  Keep a copy (as bn_record_set_reply's) of one reply of a broadcast, merged
//  or one engine's; the result content is then the first failing one's.
//  Only a merged one's buffers count in bn_record_bytes (an engine's own
//  reply counts in its own record). Returns 0, or -1 if out of memory.
int bn_record_add_part (bn_record_t *self, bn_msg_t *reply, bool merged);

//  Whether engine uuid has answered its part of a broadcast in a record of
//  its own, msg_id "<original>_<uuid>".
typedef bool (bn_record_answered_fn) (void *arg, const char *msg_id);

//  Complete a record whose request can no longer be answered (read back
//  from SQLite: the controller that sent it stopped first) with an error
//  reply of its type made by session: ename ControllerGone, evalue why;
//  a broadcast's is a merged reply with an entry for each target that had
//  not answered (in a merged part, or by answered, unless NULL), so that
//  each engine's part says so. Returns 0 (also for a record with a reply
//  or without a request), or -1 if out of memory.
int bn_record_abandon (bn_record_t *self, bn_session_t *session,
                       const char *why, bn_record_answered_fn *answered,
                       void *arg);

//  Note the engine a task was assigned to.
void bn_record_set_engine (bn_record_t *self, const char *engine_uuid);

//  Note that the request was resubmitted as new_id.
void bn_record_set_resubmitted (bn_record_t *self, const char *new_id);

//  Add a copy of an iopub output published for the request. Returns 0,
//  or -1 if out of memory.
int bn_record_add_iopub (bn_record_t *self, bn_msg_t *msg);

//  Buffer bytes of the request and the reply.
uint64_t bn_record_bytes (bn_record_t *self);

//  The request header's date in microseconds since the epoch, or 0.
int64_t bn_record_submitted (bn_record_t *self);

//  True if the record changed since it was last written to SQLite.
bool bn_record_dirty (bn_record_t *self);

//  Write the record as a row to db (within the caller's transaction).
//  Returns 0, or -1 if the database failed.
int bn_record_write (bn_record_t *self, bn_records_sqlite_t *db);

//  Note that the record's last write was committed.
void bn_record_set_written (bn_record_t *self);

//  The record as a 7.1.0 TaskRecord dict without its buffers (dates as ISO
//  strings); borrowed, valid until the record changes or is released.
//  NULL if out of memory.
json_t *bn_record_json (bn_record_t *self);

//  The request's buffers (result false) or the reply's (result true).
size_t bn_record_nbuffers (bn_record_t *self, bool result);
zmq_msg_t *bn_record_buffer (bn_record_t *self, bool result, size_t index);

//  The request as stored (buffers included, no idents); NULL if the record
//  was made by its iopub output alone.
bn_msg_t *bn_record_request (bn_record_t *self);

//  True once the record has its reply.
bool bn_record_completed (bn_record_t *self);

#endif

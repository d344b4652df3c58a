/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_records: the hub's task records (doc/wire.md 5.1, 5.2) and the state of
    every request in flight.

    The schedulers report through bn_records_monitor: each request of the
    mux, task and broadcast queues, its assignment to an engine, its reply,
    and the iopub output published for it. A record keeps the request and
    reply as bn_msg_t copies that share the relays' frames, apart from a
    request's buffers of 8 kB to 64 MB, copied after the relay sent
    (bn_record), and the iopub messages likewise; JSON is parsed only
    when a query reads the record. Storage is in memory with 7.1.0's DictDB
   limits (record_limit, size_limit, culling the oldest tenth of the completed
    records), optionally written through to SQLite (bn_records_sqlite), or
    none (--nodb: requests are still tracked as pending or completed, but
    no record is kept).  */
#ifndef BN_RECORDS_H_INCLUDED
#define BN_RECORDS_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bn_monitor.h"
#include "bn_msg.h"
#include "bn_record.h"

typedef struct _bn_records_t bn_records_t;

//  7.1.0's DictDB defaults.
#define BN_RECORDS_RECORD_LIMIT 1024
#define BN_RECORDS_SIZE_LIMIT (1024ULL * 1024 * 1024)

//  Storage kinds.
typedef enum {
    BN_RECORDS_MEMORY = 0,
    BN_RECORDS_NONE = 1,
} bn_records_kind_t;

//  Create the records in memory with the given limits (0: the defaults).
//  Returns NULL if out of memory.
bn_records_t *bn_records_new (bn_records_kind_t kind, size_t record_limit,
                              uint64_t size_limit);

//  Destroy the records (writing what SQLite has not got yet); NULL-safe.
void bn_records_destroy (bn_records_t **self_p);

//  Write records through to the SQLite database at path (created if
//  missing), loading none into memory: queries read the database. Returns
//  0, or -1 with the reason in err (the records stay in memory only).
int bn_records_open_sqlite (bn_records_t *self, const char *path, char *err,
                            size_t err_size);

//  Write what SQLite has not got yet, in one transaction; the controller
//  calls it on a timer. Returns 0, or -1 if the database failed (it is then
//  closed, the error logged, and records stay in memory).
int bn_records_flush (bn_records_t *self);

//  Cap the SQLite database at pages pages, so that later writes fail as
//  on a full disk (for tests). Returns -1 without a database.
int bn_records_sqlite_limit (bn_records_t *self, int pages);

//  True if records are written to a working SQLite database.
bool bn_records_sqlite_ok (bn_records_t *self);

//  True if records are kept (not --nodb).
bool bn_records_storing (bn_records_t *self);

//  The monitor through which schedulers report to these records (valid as
//  long as the records are).
const bn_monitor_t *bn_records_monitor (bn_records_t *self);

//  The monitor callbacks, callable directly.
void bn_records_request (bn_records_t *self, const char *queue,
                         bn_msg_t *request, const char *engine_uuid);
void bn_records_assigned (bn_records_t *self, const char *msg_id,
                          const char *engine_uuid);
void bn_records_reply (bn_records_t *self, const char *queue, bn_msg_t *reply,
                       const char *engine_uuid);
void bn_records_iopub (bn_records_t *self, bn_msg_t *msg);

//  The hub has unregistered engine uuid: its counts and completed msg_ids
//  are dropped, at once or when the last request pending on it is
//  answered, so that engines coming and going leave nothing behind. A
//  request for it before then (the same uuid registered again) keeps them.
void bn_records_engine_gone (bn_records_t *self, const char *uuid);

//  --------------------------------------------------------------------------
//  Requests in flight

//  True if msg_id was submitted and has no reply yet.
bool bn_records_pending (bn_records_t *self, const char *msg_id);

//  Per engine: pending mux requests, tasks assigned and unfinished, and
//  requests answered (mux and task, not aborted tasks); 0 for an unknown
//  engine. With ids, new JSON arrays of the msg_ids instead (completed
//  keeps the last 1024).
size_t bn_records_queue_count (bn_records_t *self, const char *uuid);
size_t bn_records_tasks_count (bn_records_t *self, const char *uuid);
size_t bn_records_completed_count (bn_records_t *self, const char *uuid);
json_t *bn_records_queue_ids (bn_records_t *self, const char *uuid);
json_t *bn_records_tasks_ids (bn_records_t *self, const char *uuid);
json_t *bn_records_completed_ids (bn_records_t *self, const char *uuid);

//  Tasks submitted and not yet given to an engine.
size_t bn_records_unassigned_count (bn_records_t *self);
json_t *bn_records_unassigned_ids (bn_records_t *self);

//  --------------------------------------------------------------------------
//  Records

//  The record of msg_id, or NULL. For "<original>_<engine uuid>" of a
//  broadcast whose replies were merged, a temporary record of that
//  engine's part, split from them (bn_record_new_engine). Release it with
//  bn_record_release (a record read from SQLite is a temporary copy).
bn_record_t *bn_records_get (bn_records_t *self, const char *msg_id);

//  Call fn for every record in submission order (records without a
//  request last) until fn returns non-zero; returns that value or 0.
//  Without buffers, the records read from SQLite come without their
//  request's and reply's buffers (what fn does not report it need not
//  read).
typedef int (bn_records_each_fn) (void *arg, bn_record_t *record);
int bn_records_each (bn_records_t *self, bool buffers, bn_records_each_fn *fn,
                     void *arg);

//  A new JSON array of the msg_ids of every record with a request, sorted
//  by submission date. NULL if out of memory.
json_t *bn_records_history (bn_records_t *self);

//  Drop a record that is not pending; returns 0, or -1 if unknown.
int bn_records_drop (bn_records_t *self, const char *msg_id);

//  Note that msg_id was resubmitted as new_id.
void bn_records_set_resubmitted (bn_records_t *self, const char *msg_id,
                                 const char *new_id);

//  Number of records in memory and their buffer bytes.
size_t bn_records_size (bn_records_t *self);
uint64_t bn_records_bytes (bn_records_t *self);

//  A new JSON object of counters; NULL if out of memory.
json_t *bn_records_stats (bn_records_t *self);

#endif

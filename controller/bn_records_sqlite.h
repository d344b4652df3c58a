/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_records_sqlite: the hub's task records in an SQLite database, for
    bn_records (one table; every statement prepared once, with bound
    parameters; writes grouped in transactions by the caller).  */
#ifndef BN_RECORDS_SQLITE_H_INCLUDED
#define BN_RECORDS_SQLITE_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <zmq.h>

#include "bn_msg.h"

typedef struct _bn_records_sqlite_t bn_records_sqlite_t;

//  One record as stored. Strings and messages may be NULL. Dates are
//  microseconds since the epoch (0: none). A message's four JSON parts and
//  its buffers are stored; a row read back gets new unsigned messages
//  (bn_msg_new_parts) that live only during the callback.
typedef struct {
    const char *msg_id;
    const char *queue;
    const char *engine_uuid;
    const char *resubmitted;
    int64_t submitted; //  Request header date (for ordering)
    int64_t received;  //  When the hub got the reply
    bn_msg_t *request;
    bn_msg_t *reply;
    const char *io; //  JSON text of the iopub output, or NULL
    //  A broadcast's replies kept beside reply (merged ones, whose entries
    //  are its engines' parts), oldest first, reply not among them; with
    //  has_parts false the record keeps none (its column is NULL).
    bool has_parts;
    bn_msg_t **parts;
    size_t nparts;
} bn_records_row_t;

//  Called with each row read; non-zero stops the iteration.
typedef int (bn_records_row_fn) (void *arg, const bn_records_row_t *row);

//  Open (creating if needed) the database at path. Returns NULL with the
//  reason in err.
bn_records_sqlite_t *bn_records_sqlite_new (const char *path, char *err,
                                            size_t err_size);

//  Close the database; NULL-safe.
void bn_records_sqlite_destroy (bn_records_sqlite_t **self_p);

//  Transactions around puts and drops; 0 or -1 (see bn_records_sqlite_error).
int bn_records_sqlite_begin (bn_records_sqlite_t *self);
int bn_records_sqlite_commit (bn_records_sqlite_t *self);
void bn_records_sqlite_rollback (bn_records_sqlite_t *self);

//  Insert or replace a row; 0 or -1.
int bn_records_sqlite_put (bn_records_sqlite_t *self,
                           const bn_records_row_t *row);

//  Delete the row of msg_id; 0 or -1.
int bn_records_sqlite_drop (bn_records_sqlite_t *self, const char *msg_id);

//  Call fn with the row of msg_id: returns 1 if found, 0 if not, -1 on
//  error.
int bn_records_sqlite_get (bn_records_sqlite_t *self, const char *msg_id,
                           bn_records_row_fn *fn, void *arg);

//  Call fn with every row in submission order (rows without a date last);
//  returns fn's non-zero value, 0, or -1 on error. Without buffers, the
//  request and reply come without their buffers, which are not read.
int bn_records_sqlite_each (bn_records_sqlite_t *self, bool buffers,
                            bn_records_row_fn *fn, void *arg);

//  A new JSON array of the msg_ids of rows with a request, in submission
//  order (without reading the rows' messages); NULL on error.
json_t *bn_records_sqlite_history (bn_records_sqlite_t *self);

//  A new JSON array of the msg_ids of rows with a request and no reply,
//  in submission order; NULL on error.
json_t *bn_records_sqlite_unanswered (bn_records_sqlite_t *self);

//  Cap the database at pages pages (PRAGMA max_page_count), so that
//  writes past it fail as on a full disk (for tests); 0 or -1.
int bn_records_sqlite_max_pages (bn_records_sqlite_t *self, int pages);

//  Lower SQLite's limit on the length of a blob or row to bytes
//  (SQLITE_LIMIT_LENGTH), so that tests store frames in pieces without
//  writing a gigabyte; 0 or -1.
int bn_records_sqlite_max_length (bn_records_sqlite_t *self, int bytes);

//  Text of the last error.
const char *bn_records_sqlite_error (bn_records_sqlite_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_record_queries: the hub's answers to the task record queries
    (doc/wire.md 5): result_request, history_request, db_request,
    purge_request and resubmit_request, read from bn_records. A failed
    query gets an error content in its own reply type, as 7.1.0 answers.  */
#ifndef BN_RECORD_QUERIES_H_INCLUDED
#define BN_RECORD_QUERIES_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

#include "bn_engine_table.h"
#include "bn_msg.h"
#include "bn_records.h"
#include "bn_session.h"

typedef struct _bn_record_queries_t bn_record_queries_t;

//  Sends a request made inside the controller into the task scheduler
//  (taking it); returns 0, or -1 if it was not accepted.
typedef int (bn_hub_submit_fn) (void *arg, bn_msg_t **msg_p);

//  Create the answers from records, replies signed by session, purge's
//  engine ids read in engines (all borrowed). Returns NULL if out of
//  memory.
bn_record_queries_t *bn_record_queries_new (bn_session_t *session,
                                            bn_records_t *records,
                                            bn_engine_table_t *engines);

//  Destroy the answers; NULL-safe.
void bn_record_queries_destroy (bn_record_queries_t **self_p);

//  Set how resubmit_request sends its new tasks (the task scheduler's
//  bn_task_submit); without it resubmit_request gets an error reply.
void bn_record_queries_set_resubmit (bn_record_queries_t *self,
                                     bn_hub_submit_fn *fn, void *arg);

//  True if msg_type is one of the record queries.
bool bn_record_queries_handles (const char *msg_type);

//  The reply to request, a record query (bn_record_queries_handles) with
//  JSON parts; NULL if out of memory.
bn_msg_t *bn_record_queries_answer (bn_record_queries_t *self,
                                    bn_msg_t *request);

//  Queries answered with an error for missing keys or wrong key types, and
//  all the error replies.
uint64_t bn_record_queries_bad_content (bn_record_queries_t *self);
uint64_t bn_record_queries_errors (bn_record_queries_t *self);

#endif

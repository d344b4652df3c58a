/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_record_queries: the hub's answers to the task record queries
    (doc/wire.md 5): result, history, db, purge and resubmit.  */
#include "bn_record_queries.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_query.h"
#include "bn_wire.h"

struct _bn_record_queries_t {
    bn_session_t *session;      //  Signs replies and new msg_ids (borrowed)
    bn_engine_table_t *engines; //  For purge's engine ids (borrowed)
    bn_records_t *records;      //  Borrowed
    bn_hub_submit_fn *submit_fn;
    void *submit_arg;
    uint64_t bad_content; //  Queries with missing keys or wrong key types
    uint64_t errors;      //  Error replies
};

#define S_NODB_TEXT                                                            \
    "NoDB backend doesn't store any data. Start the Controller with a DB "     \
    "backend to enable resubmission / result persistence."

bn_record_queries_t *
bn_record_queries_new (bn_session_t *session, bn_records_t *records,
                       bn_engine_table_t *engines)
{
    assert (session);
    assert (records);
    assert (engines);
    bn_record_queries_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->session = session;
    self->records = records;
    self->engines = engines;
    return self;
}

void
bn_record_queries_destroy (bn_record_queries_t **self_p)
{
    assert (self_p);
    free (*self_p);
    *self_p = NULL;
}

void
bn_record_queries_set_resubmit (bn_record_queries_t *self, bn_hub_submit_fn *fn,
                                void *arg)
{
    assert (self);
    self->submit_fn = fn;
    self->submit_arg = arg;
}

static int
s_strcmp_p (const void *a, const void *b)
{
    return strcmp (*(const char **)a, *(const char **)b);
}

#define S_NODB_TEXT                                                            \
    "NoDB backend doesn't store any data. Start the Controller with a DB "     \
    "backend to enable resubmission / result persistence."

//  The reply msg_type to request with content (taken) and the buffers of
//  buffers (a message whose frames are shared, taken; may be NULL); NULL
//  if out of memory.
static bn_msg_t *
s_reply_buffers (bn_record_queries_t *self, bn_msg_t *request,
                 const char *msg_type, json_t *content, bn_msg_t *buffers)
{
    bn_msg_t *reply = bn_msg_new_reply (self->session, request, msg_type);
    bool ok = reply && content;
    for (size_t i = 0; ok && buffers && i < bn_msg_nbuffers (buffers); i++)
        ok = bn_msg_add_buffer_msg (reply, bn_msg_buffer (buffers, i)) == 0;
    bn_msg_destroy (&buffers);
    if (!ok) {
        json_decref (content);
        bn_msg_destroy (&reply);
        return NULL;
    }
    bn_msg_set_content (reply, content);
    return reply;
}

//  The reply msg_type to request with content (taken); NULL if out of
//  memory.
static bn_msg_t *
s_reply (bn_record_queries_t *self, bn_msg_t *request, const char *msg_type,
         json_t *content)
{
    return s_reply_buffers (self, request, msg_type, content, NULL);
}

//  The reply msg_type with error content: ename and a printf-style evalue
//  (7.1.0 answers failed record queries with their own reply type).
static bn_msg_t *s_reply_error (bn_record_queries_t *self, bn_msg_t *request,
                                const char *msg_type, const char *ename,
                                const char *format, ...)
    __attribute__ ((format (printf, 5, 6)));

static bn_msg_t *
s_reply_error (bn_record_queries_t *self, bn_msg_t *request,
               const char *msg_type, const char *ename, const char *format, ...)
{
    char evalue[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, sizeof evalue, format, args);
    va_end (args);
    bn_log_info ("hub: %s to %s: %s: %s", msg_type, bn_msg_type (request),
                 ename, evalue);
    self->errors++;
    return s_reply (self, request, msg_type,
                    bn_wire_error (ename, evalue, NULL, NULL));
}

//  A holder for reply buffers: an empty message whose buffer frames share
//  the records' frames.
static bn_msg_t *
s_buffer_holder (void)
{
    const void *parts[4] = {NULL, NULL, NULL, NULL};
    size_t sizes[4] = {0, 0, 0, 0};
    return bn_msg_new_parts (parts, sizes);
}

//  Append record's request (result false) or reply buffers to holder.
static size_t
s_add_record_buffers (bn_msg_t *holder, bn_record_t *record, bool result)
{
    size_t n = bn_record_nbuffers (record, result);
    for (size_t i = 0; i < n; i++)
        bn_msg_add_buffer_msg (holder, bn_record_buffer (record, result, i));
    return n;
}

//  A JSON array of unique strings, sorted; NULL if list is not a list of
//  strings.
static json_t *
s_sorted_ids (json_t *list)
{
    if (json_is_string (list))
        return json_pack ("[O]", list);
    if (!json_is_array (list))
        return NULL;
    size_t n = json_array_size (list);
    const char **ids = calloc (n ? n : 1, sizeof (char *));
    if (!ids)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        ids[i] = json_string_value (json_array_get (list, i));
        if (!ids[i]) {
            free (ids);
            return NULL;
        }
    }
    qsort (ids, n, sizeof (char *), s_strcmp_p);
    json_t *sorted = json_array ();
    for (size_t i = 0; sorted && i < n; i++)
        if (i == 0 || strcmp (ids[i], ids[i - 1]) != 0)
            json_array_append_new (sorted, json_string (ids[i]));
    free (ids);
    return sorted;
}

static bn_msg_t *
s_result_request (bn_record_queries_t *self, bn_msg_t *request)
{
    json_t *content = bn_msg_content (request);
    json_t *ids = s_sorted_ids (json_object_get (content, "msg_ids"));
    if (!ids) {
        self->bad_content++;
        return s_reply_error (
            self, request, BN_MSG_RESULT_REPLY, "TypeError",
            "result_request needs 'msg_ids': a list of msg_id "
            "strings");
    }
    bool status_only = json_is_true (json_object_get (content, "status_only"));
    if (!status_only && !bn_records_storing (self->records)) {
        json_decref (ids);
        return s_reply_error (self, request, BN_MSG_RESULT_REPLY, "NoData",
                              "%s", S_NODB_TEXT);
    }
    json_t *pending = json_array (), *completed = json_array ();
    json_t *reply = json_pack ("{s:s, s:O, s:O}", "status", BN_STATUS_OK,
                               "pending", pending, "completed", completed);
    bn_msg_t *holder = s_buffer_holder ();
    size_t index;
    json_t *id_value;
    json_array_foreach (ids, index, id_value)
    {
        const char *msg_id = json_string_value (id_value);
        if (bn_records_pending (self->records, msg_id)) {
            json_array_append (pending, id_value);
            continue;
        }
        bn_record_t *record = bn_records_get (self->records, msg_id);
        if (!record) {
            bn_msg_t *error =
                s_reply_error (self, request, BN_MSG_RESULT_REPLY, "KeyError",
                               "'No such message: %.200s'", msg_id);
            json_decref (reply);
            json_decref (pending);
            json_decref (completed);
            json_decref (ids);
            bn_msg_destroy (&holder);
            return error;
        }
        if (!bn_record_completed (record)) {
            json_array_append (pending, id_value);
            bn_record_release (&record);
            continue;
        }
        json_array_append (completed, id_value);
        if (!status_only) {
            json_t *rec = bn_record_json (record);
            json_t *entry = json_pack (
                "{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:{s:O?, s:O?, s:O?, "
                "s:O?, s:O?}}",
                "header", json_object_get (rec, "header"), "metadata",
                json_object_get (rec, "metadata"), "result_header",
                json_object_get (rec, "result_header"), "result_metadata",
                json_object_get (rec, "result_metadata"), "result_content",
                json_object_get (rec, "result_content"), "received",
                json_object_get (rec, "received"), "io", "execute_input",
                json_object_get (rec, "execute_input"), "execute_result",
                json_object_get (rec, "execute_result"), "error",
                json_object_get (rec, "error"), "stdout",
                json_object_get (rec, "stdout"), "stderr",
                json_object_get (rec, "stderr"));
            //  banyan's: the exact bytes of output that is not text
            //  (bn_rawtext), beside io, which stock clients read
            static const char *exact[] = {"bn_stdout", "bn_stderr"};
            for (int i = 0; entry && i < 2; i++)
                if (json_is_string (json_object_get (rec, exact[i])))
                    json_object_set (entry, exact[i],
                                     json_object_get (rec, exact[i]));
            if (entry)
                json_object_set_new (reply, msg_id, entry);
            if (holder)
                s_add_record_buffers (holder, record, true);
        }
        bn_record_release (&record);
    }
    json_decref (pending);
    json_decref (completed);
    json_decref (ids);
    return s_reply_buffers (self, request, BN_MSG_RESULT_REPLY, reply, holder);
}

static bn_msg_t *
s_history_request (bn_record_queries_t *self, bn_msg_t *request)
{
    if (!bn_records_storing (self->records)) {
        return s_reply_error (self, request, BN_MSG_HISTORY_REPLY, "NoData",
                              "%s", S_NODB_TEXT);
    }
    json_t *history = bn_records_history (self->records);
    if (!history) {
        return s_reply_error (self, request, BN_MSG_HISTORY_REPLY,
                              "MemoryError", "cannot list the history");
    }
    return s_reply (
        self, request, BN_MSG_HISTORY_REPLY,
        json_pack ("{s:s, s:o}", "status", BN_STATUS_OK, "history", history));
}

//  Keys of a TaskRecord, for checking db_request 'keys'.
static const char *s_record_keys[] = {"msg_id",
                                      "header",
                                      "metadata",
                                      "content",
                                      "buffers",
                                      "submitted",
                                      "client_uuid",
                                      "engine_uuid",
                                      "started",
                                      "completed",
                                      "resubmitted",
                                      "received",
                                      "result_header",
                                      "result_metadata",
                                      "result_content",
                                      "result_buffers",
                                      "queue",
                                      "execute_input",
                                      "execute_result",
                                      "error",
                                      "stdout",
                                      "stderr",
                                      "display_data",
                                      "bn_function",
                                      NULL};

typedef struct {
    bn_query_t *query;
    json_t *keys;               //  NULL: whole records
    json_t *records;            //  Reply list
    json_t *buffer_lens;        //  or NULL
    json_t *result_buffer_lens; //  or NULL
    bn_msg_t *holder;
    size_t matched;
} s_db_search_t;

static int
s_db_match (void *arg, bn_record_t *record)
{
    s_db_search_t *search = (s_db_search_t *)arg;
    json_t *rec = bn_record_json (record);
    if (!rec)
        return -1;
    if (!bn_query_match (search->query, rec))
        return 0;
    search->matched++;
    json_t *out;
    if (!search->keys)
        out = json_copy (rec);
    else {
        out = json_pack ("{s:O}", "msg_id", json_object_get (rec, "msg_id"));
        size_t index;
        json_t *key;
        json_array_foreach (search->keys, index, key)
        {
            const char *name = json_string_value (key);
            if (streq (name, "buffers") || streq (name, "result_buffers"))
                continue;
            json_t *value = json_object_get (rec, name);
            json_object_set (out, name, value ? value : json_null ());
        }
    }
    if (!out)
        return -1;
    json_array_append_new (search->records, out);
    if (search->buffer_lens)
        json_array_append_new (search->buffer_lens,
                               json_integer ((json_int_t)s_add_record_buffers (
                                   search->holder, record, false)));
    if (search->result_buffer_lens)
        json_array_append_new (search->result_buffer_lens,
                               json_integer ((json_int_t)s_add_record_buffers (
                                   search->holder, record, true)));
    return 0;
}

static bn_msg_t *
s_db_request (bn_record_queries_t *self, bn_msg_t *request)
{
    if (!bn_records_storing (self->records)) {
        return s_reply_error (self, request, BN_MSG_DB_REPLY, "NoData", "%s",
                              S_NODB_TEXT);
    }
    json_t *content = bn_msg_content (request);
    json_t *keys = json_object_get (content, "keys");
    if (json_is_null (keys))
        keys = NULL;
    //  (a TaskRecord has 23 keys: a longer list only costs time)
    if (keys && (!json_is_array (keys) || json_array_size (keys) > 64)) {
        self->bad_content++;
        return s_reply_error (
            self, request, BN_MSG_DB_REPLY, "TypeError",
            "db_request 'keys' must be null or a list of at most "
            "64 TaskRecord keys");
    }
    size_t index;
    json_t *key;
    json_array_foreach (keys, index, key)
    {
        const char *name = json_string_value (key);
        bool known = false;
        for (int i = 0; name && s_record_keys[i]; i++)
            known |= streq (name, s_record_keys[i]);
        if (!known) {
            self->bad_content++;
            char text[80] = "";
            bn_wire_repr (key, text, sizeof text);
            return s_reply_error (self, request, BN_MSG_DB_REPLY, "KeyError",
                                  "%s is not a TaskRecord key", text);
        }
    }
    char ename[64], evalue[256];
    s_db_search_t search = {0};
    search.query = bn_query_new (json_object_get (content, "query"), ename,
                                 sizeof ename, evalue, sizeof evalue);
    if (!search.query) {
        self->bad_content++;
        return s_reply_error (self, request, BN_MSG_DB_REPLY, ename, "%s",
                              evalue);
    }
    bool with_buffers = false, with_results = false;
    json_array_foreach (keys, index, key)
    {
        with_buffers |= streq (json_string_value (key), "buffers");
        with_results |= streq (json_string_value (key), "result_buffers");
    }
    search.keys = keys;
    search.records = json_array ();
    search.buffer_lens = with_buffers ? json_array () : NULL;
    search.result_buffer_lens = with_results ? json_array () : NULL;
    search.holder = s_buffer_holder ();
    int rc = search.records && search.holder
                 ? bn_records_each (self->records, with_buffers || with_results,
                                    s_db_match, &search)
                 : -1;
    bn_query_destroy (&search.query);
    if (rc != 0) {
        json_decref (search.records);
        json_decref (search.buffer_lens);
        json_decref (search.result_buffer_lens);
        bn_msg_destroy (&search.holder);
        return s_reply_error (self, request, BN_MSG_DB_REPLY, "MemoryError",
                              "the query could not be answered");
    }
    json_t *reply = json_pack (
        "{s:s, s:o, s:o, s:o}", "status", BN_STATUS_OK, "records",
        search.records, "buffer_lens",
        search.buffer_lens ? search.buffer_lens : json_null (),
        "result_buffer_lens",
        search.result_buffer_lens ? search.result_buffer_lens : json_null ());
    return s_reply_buffers (self, request, BN_MSG_DB_REPLY, reply,
                            search.holder);
}

typedef struct {
    const char *engine_uuid; //  Only records of this engine, or NULL
    json_t *ids;             //  Collected msg_ids
} s_purge_t;

static int
s_purge_collect (void *arg, bn_record_t *record)
{
    s_purge_t *purge = (s_purge_t *)arg;
    if (!bn_record_completed (record))
        return 0;
    json_t *rec = bn_record_json (record);
    if (!rec)
        return -1;
    if (purge->engine_uuid) {
        const char *engine =
            json_string_value (json_object_get (rec, "engine_uuid"));
        if (!engine || !streq (engine, purge->engine_uuid))
            return 0;
    }
    json_array_append (purge->ids, json_object_get (rec, "msg_id"));
    return 0;
}

//  Drop the completed records (of engine_uuid if given); 0 or -1.
static int
s_purge_completed (bn_record_queries_t *self, const char *engine_uuid)
{
    s_purge_t purge = {engine_uuid, json_array ()};
    int rc = purge.ids ? bn_records_each (self->records, false, s_purge_collect,
                                          &purge)
                       : -1;
    size_t index;
    json_t *id;
    json_array_foreach (purge.ids, index, id)
    {
        bn_records_drop (self->records, json_string_value (id));
    }
    json_decref (purge.ids);
    return rc;
}

static bn_msg_t *
s_purge_request (bn_record_queries_t *self, bn_msg_t *request)
{
    json_t *content = bn_msg_content (request);
    json_t *ids = json_object_get (content, "msg_ids");
    json_t *engine_ids = json_object_get (content, "engine_ids");
    if (json_is_string (ids) && streq (json_string_value (ids), "all")) {
        if (s_purge_completed (self, NULL) != 0)
            return s_reply_error (self, request, BN_MSG_PURGE_REPLY,
                                  "MemoryError", "cannot purge the records");
        return s_reply (self, request, BN_MSG_PURGE_REPLY,
                        json_pack ("{s:s}", "status", BN_STATUS_OK));
    }
    if ((ids && !json_is_null (ids) && !json_is_array (ids)) ||
        (engine_ids && !json_is_null (engine_ids) &&
         !json_is_array (engine_ids))) {
        self->bad_content++;
        return s_reply_error (
            self, request, BN_MSG_PURGE_REPLY, "TypeError",
            "purge_request needs 'msg_ids': \"all\" or a list, "
            "and 'engine_ids': a list of engine ids");
    }
    size_t index;
    json_t *value;
    json_array_foreach (ids, index, value)
    {
        if (!json_is_string (value)) {
            self->bad_content++;
            return s_reply_error (
                self, request, BN_MSG_PURGE_REPLY, "TypeError",
                "purge_request 'msg_ids' must hold msg_id strings");
        }
        if (bn_records_pending (self->records, json_string_value (value))) {
            return s_reply_error (self, request, BN_MSG_PURGE_REPLY,
                                  "IndexError", "msg pending: '%.200s'",
                                  json_string_value (value));
        }
    }
    json_array_foreach (engine_ids, index, value)
    {
        json_int_t id =
            json_is_integer (value) ? json_integer_value (value) : -1;
        if (id < 0 || id >= INT32_MAX ||
            !bn_engine_table_uuid (self->engines, (int)id, false)) {
            char text[80] = "";
            bn_wire_repr (value, text, sizeof text);
            return s_reply_error (self, request, BN_MSG_PURGE_REPLY,
                                  "IndexError", "No such engine: %s", text);
        }
    }
    json_array_foreach (ids, index, value)
    {
        bn_records_drop (self->records, json_string_value (value));
    }
    json_array_foreach (engine_ids, index, value)
    {
        const char *uuid = bn_engine_table_uuid (
            self->engines, (int)json_integer_value (value), false);
        if (s_purge_completed (self, uuid) != 0) {
            return s_reply_error (self, request, BN_MSG_PURGE_REPLY,
                                  "MemoryError", "cannot purge the records");
        }
    }
    return s_reply (self, request, BN_MSG_PURGE_REPLY,
                    json_pack ("{s:s}", "status", BN_STATUS_OK));
}

static bn_msg_t *
s_resubmit_request (bn_record_queries_t *self, bn_msg_t *request)
{
    json_t *ids = json_object_get (bn_msg_content (request), "msg_ids");
    if (json_is_string (ids))
        ids = json_pack ("[O]", ids);
    else if (json_is_array (ids))
        json_incref (ids);
    else {
        self->bad_content++;
        return s_reply_error (
            self, request, BN_MSG_RESUBMIT_REPLY, "TypeError",
            "resubmit_request needs 'msg_ids': a list of msg_ids");
    }
    if (!bn_records_storing (self->records)) {
        json_decref (ids);
        return s_reply_error (self, request, BN_MSG_RESUBMIT_REPLY, "NoData",
                              "%s", S_NODB_TEXT);
    }
    //  every msg_id must have a record with its request
    char missing[1024] = "";
    size_t nmissing = 0, index;
    json_t *value;
    json_array_foreach (ids, index, value)
    {
        bn_record_t *record =
            json_is_string (value)
                ? bn_records_get (self->records, json_string_value (value))
                : NULL;
        if (!record || !bn_record_request (record)) {
            strncat (missing, nmissing++ ? ", " : "[",
                     sizeof missing - strlen (missing) - 1);
            bn_wire_repr (value, missing, sizeof missing);
        }
        bn_record_release (&record);
    }
    if (nmissing) {
        json_decref (ids);
        strncat (missing, "]", sizeof missing - strlen (missing) - 1);
        return s_reply_error (self, request, BN_MSG_RESUBMIT_REPLY, "KeyError",
                              "'No such msg(s): %s'", missing);
    }
    if (!self->submit_fn) {
        json_decref (ids);
        return s_reply_error (self, request, BN_MSG_RESUBMIT_REPLY,
                              "NotImplementedError",
                              "resubmit needs the task scheduler, which this "
                              "controller does not run");
    }
    json_t *resubmitted = json_object ();
    json_array_foreach (ids, index, value)
    {
        const char *old_id = json_string_value (value);
        bn_record_t *record = bn_records_get (self->records, old_id);
        bn_msg_t *msg = record ? bn_msg_dup (bn_record_request (record)) : NULL;
        bn_record_release (&record);
        //  7.1.0: the old header with a new msg_id and date, the new
        //  header as parent too, metadata {} (dependencies are not kept)
        char fresh_id[BN_MSG_ID_SIZE], date[BN_DATE_SIZE];
        bn_session_msg_id (self->session, fresh_id);
        bn_session_date (date);
        json_t *header = msg ? bn_msg_header (msg) : NULL;
        if (!header ||
            json_object_set_new (header, "msg_id", json_string (fresh_id)) ||
            json_object_set_new (header, "date", json_string (date))) {
            bn_msg_destroy (&msg);
            continue;
        }
        bn_msg_touch (msg, BN_PART_HEADER);
        bn_msg_clear_idents (msg);
        bn_msg_set_part (msg, BN_PART_PARENT, json_deep_copy (header));
        bn_msg_set_metadata (msg, json_object ());
        char *new_id = strdup (bn_msg_id (msg));
        if (!new_id) {
            bn_msg_destroy (&msg);
            continue;
        }
        bn_records_request (self->records, BN_MONITOR_QUEUE_TASK, msg, NULL);
        if (self->submit_fn (self->submit_arg, &msg) == 0) {
            json_object_set_new (resubmitted, old_id, json_string (new_id));
            bn_records_set_resubmitted (self->records, old_id, new_id);
        }
        bn_msg_destroy (&msg);
        free (new_id);
    }
    json_decref (ids);
    return s_reply (self, request, BN_MSG_RESUBMIT_REPLY,
                    json_pack ("{s:s, s:o}", "status", BN_STATUS_OK,
                               "resubmitted", resubmitted));
}

bool
bn_record_queries_handles (const char *msg_type)
{
    assert (msg_type);
    return streq (msg_type, BN_MSG_RESULT_REQUEST) ||
           streq (msg_type, BN_MSG_HISTORY_REQUEST) ||
           streq (msg_type, BN_MSG_DB_REQUEST) ||
           streq (msg_type, BN_MSG_PURGE_REQUEST) ||
           streq (msg_type, BN_MSG_RESUBMIT_REQUEST);
}

bn_msg_t *
bn_record_queries_answer (bn_record_queries_t *self, bn_msg_t *request)
{
    assert (self);
    assert (request);
    const char *type = bn_msg_type (request);
    assert (type && bn_record_queries_handles (type));
    if (streq (type, BN_MSG_RESULT_REQUEST))
        return s_result_request (self, request);
    if (streq (type, BN_MSG_HISTORY_REQUEST))
        return s_history_request (self, request);
    if (streq (type, BN_MSG_DB_REQUEST))
        return s_db_request (self, request);
    if (streq (type, BN_MSG_PURGE_REQUEST))
        return s_purge_request (self, request);
    return s_resubmit_request (self, request);
}

uint64_t
bn_record_queries_bad_content (bn_record_queries_t *self)
{
    assert (self);
    return self->bad_content;
}

uint64_t
bn_record_queries_errors (bn_record_queries_t *self)
{
    assert (self);
    return self->errors;
}

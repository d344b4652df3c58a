/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client_hub: the client's queries of the hub: one request on the
    query socket, its reply the single item of a result: queue status,
    the task records (result, history, db, purge, resubmit) and
    shutdown.  */
#include "bn_client_private.h"
#include "bn_msgtypes.h"
#include "bn_replies.h"

#include <assert.h>
#include <czmq.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  A JSON string member of object, or NULL.
static const char *
s_str (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

int
bn_client_query (bn_client_t *self, const char *type, json_t *content,
                 double timeout, bn_result_t **result_p)
{
    *result_p = NULL;
    bn_tracker_t *tracker = bn_client_tracker (self);
    bn_tracker_lock (tracker);
    int rc = bn_tracker_state (tracker);
    bn_msg_t *msg = NULL;
    bn_result_t *result = NULL;
    if (rc == 0) {
        msg = bn_msg_new (bn_client_tx_session (self), type);
        result = bn_client_result_new (self, 1);
        if (!msg || !result)
            rc = BN_ENOMEM;
    }
    if (rc == 0) {
        json_t *header = bn_msg_header (msg);
        bn_item_t *item =
            bn_result_add (result, bn_msg_id (msg),
                           json_string_value (json_object_get (header, "date")),
                           -1, NULL, BN_ITEM_QUERY);
        if (!item || bn_tracker_track (tracker, item) != 0)
            rc = BN_ENOMEM;
    }
    bn_tracker_unlock (tracker);
    if (rc == 0) {
        bn_msg_set_content (msg, content);
        content = NULL;
        rc = bn_client_send (self, BN_SOCK_QUERY, &msg, 1);
    }
    json_decref (content);
    bn_msg_destroy (&msg);
    if (rc == 0)
        rc = bn_result_get (result, timeout);
    if (rc == 0 || rc == BN_EREMOTE)
        *result_p = result;
    else
        bn_result_destroy (&result);
    return rc;
}

int
bn_client_queue_status (bn_client_t *self, bn_idset_t *targets, double timeout,
                        bn_queue_status_t **status, size_t *count,
                        int *unassigned)
{
    if (!self || !status || !count)
        return BN_EINVAL;
    *status = NULL;
    *count = 0;
    json_t *ids = json_null ();
    if (targets) {
        ids = json_array ();
        for (int id = bn_idset_first (targets); id >= 0;
             id = bn_idset_next (targets, id))
            json_array_append_new (ids, json_integer (id));
    }
    json_t *content = json_pack ("{s:o, s:b}", "targets", ids, "verbose", 0);
    if (!content)
        return BN_ENOMEM;
    bn_result_t *result;
    int rc =
        bn_client_query (self, BN_MSG_QUEUE_REQUEST, content, timeout, &result);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (result, 0);
        if (ename && strcmp (ename, "IndexError") == 0)
            rc = BN_ENOENGINE;
    }
    if (rc != 0) {
        bn_result_destroy (&result);
        return rc;
    }
    json_t *reply = bn_result_reply (result, 0);
    size_t n = json_object_size (reply);
    bn_queue_status_t *out = calloc (n ? n : 1, sizeof *out);
    if (!out) {
        bn_result_destroy (&result);
        return BN_ENOMEM;
    }
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach (reply, key, value)
    {
        if (strcmp (key, "unassigned") == 0) {
            if (unassigned)
                *unassigned = (int)json_integer_value (value);
            continue;
        }
        char *end;
        long id = strtol (key, &end, 10);
        if (*end || !json_is_object (value))
            continue;
        bn_queue_status_t *entry = &out[k++];
        entry->engine_id = (int)id;
        entry->queue =
            (int)json_integer_value (json_object_get (value, "queue"));
        entry->completed =
            (int)json_integer_value (json_object_get (value, "completed"));
        entry->tasks =
            (int)json_integer_value (json_object_get (value, "tasks"));
    }
    //  JSON objects keep insertion order; sort by id for the caller.
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && out[j - 1].engine_id > out[j].engine_id;
             j--) {
            bn_queue_status_t swap = out[j];
            out[j] = out[j - 1];
            out[j - 1] = swap;
        }
    bn_result_destroy (&result);
    *status = out;
    *count = k;
    return 0;
}

//  ---------------------------------------------------------------------
//  The hub's task records

void
bn_client_free_strv (char ***strv_p)
{
    if (!strv_p || !*strv_p)
        return;
    for (char **s = *strv_p; *s; s++)
        free (*s);
    free (*strv_p);
    *strv_p = NULL;
}

//  A NULL-terminated copy of the strings of a JSON array; NULL if out of
//  memory or an item is not a string.
static char **
s_strv (json_t *list, size_t *count)
{
    size_t n = json_array_size (list);
    char **strv = calloc (n + 1, sizeof (char *));
    for (size_t i = 0; strv && i < n; i++) {
        const char *text = json_string_value (json_array_get (list, i));
        if (!text || !(strv[i] = strdup (text))) {
            bn_client_free_strv (&strv);
            return NULL;
        }
    }
    if (count)
        *count = strv ? n : 0;
    return strv;
}

//  A JSON array of a NULL-terminated string array; NULL if out of memory.
static json_t *
s_json_strv (const char *const *strv)
{
    json_t *list = json_array ();
    for (size_t i = 0; list && strv && strv[i]; i++)
        if (json_array_append_new (list, json_string (strv[i])) != 0) {
            json_decref (list);
            return NULL;
        }
    return list;
}

//  A hub query whose error reply's ename is mapped: NoData (no records
//  kept) gives BN_ENOENT, and so does KeyError (no such record) unless
//  index_error is BN_EREMOTE.
static int
s_records_query (bn_client_t *self, const char *type, json_t *content,
                 double timeout, bn_result_t **result_p, int index_error)
{
    if (!content)
        return BN_ENOMEM;
    int rc = bn_client_query (self, type, content, timeout, result_p);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (*result_p, 0);
        if (ename &&
            (strcmp (ename, "NoData") == 0 ||
             (strcmp (ename, "KeyError") == 0 && index_error != BN_EREMOTE)))
            rc = BN_ENOENT;
    }
    return rc;
}

//  A JSON part's text for bn_msg_new_parts: value dumped into *text.
static void
s_part (json_t *value, char **text, const void **data, size_t *size)
{
    *text = json_is_object (value) ? json_dumps (value, JSON_COMPACT) : NULL;
    *data = *text;
    *size = *text ? strlen (*text) : 0;
}

int
bn_client_get_result (bn_client_t *self, const char *msg_id, double timeout,
                      bn_result_t **result_p)
{
    if (!self || !msg_id || !result_p)
        return BN_EINVAL;
    *result_p = NULL;
    bn_result_t *query;
    int rc = s_records_query (
        self, BN_MSG_RESULT_REQUEST,
        json_pack ("{s:[s], s:b}", "msg_ids", msg_id, "status_only", 0),
        timeout, &query, 0);
    if (rc != 0) {
        bn_result_destroy (&query);
        return rc;
    }
    json_t *reply = bn_result_reply (query, 0);
    json_t *entry = json_object_get (reply, msg_id);
    bn_msg_t *raw = bn_result_reply_msg (query, 0);
    if (!json_is_object (entry) || !raw) {
        rc = json_array_size (json_object_get (reply, "pending")) ? BN_ENOTREADY
                                                                  : BN_EPROTO;
        bn_result_destroy (&query);
        return rc;
    }
    //  the reply as the engine sent it: result header, the request's
    //  header as parent, result metadata and content, result buffers
    json_t *header = json_object_get (entry, "header");
    char *texts[4];
    const void *data[4];
    size_t sizes[4];
    s_part (json_object_get (entry, "result_header"), &texts[0], &data[0],
            &sizes[0]);
    s_part (header, &texts[1], &data[1], &sizes[1]);
    s_part (json_object_get (entry, "result_metadata"), &texts[2], &data[2],
            &sizes[2]);
    s_part (json_object_get (entry, "result_content"), &texts[3], &data[3],
            &sizes[3]);
    bn_msg_t *msg =
        texts[0] && texts[3] ? bn_msg_new_parts (data, sizes) : NULL;
    for (int i = 0; i < 4; i++)
        free (texts[i]);
    for (size_t i = 0; msg && i < bn_msg_nbuffers (raw); i++)
        if (bn_msg_add_buffer_msg (msg, bn_msg_buffer (raw, i)) != 0)
            bn_msg_destroy (&msg);
    bn_result_t *result = msg ? bn_client_result_new (self, 1) : NULL;
    if (!result) {
        bn_msg_destroy (&msg);
        bn_result_destroy (&query);
        return msg ? BN_ENOMEM : BN_EPROTO;
    }
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    bn_value_t *value = NULL;
    int error = 0;
    char why[256] = "";
    const char *status = s_str (content, "status");
    if (type && strcmp (type, BN_MSG_APPLY_REPLY) == 0 && status &&
        strcmp (status, BN_STATUS_OK) == 0) {
        size_t used;
        value = bn_replies_decode (msg, 0, SIZE_MAX, &used, &error, why,
                                   sizeof why);
    }
    json_t *io = json_object_get (entry, "io");
    const char *uuid = s_str (bn_msg_metadata (msg), "engine");
    bn_tracker_lock (bn_client_tracker (self));
    int engine_id = bn_engines_id_of (bn_client_engines (self), uuid);
    bn_item_t *item = bn_result_add (result, msg_id, s_str (header, "date"),
                                     engine_id, uuid, BN_ITEM_SHELL);
    if (item) {
        bn_replies_deliver (item, msg, value, error, why, engine_id);
        value = NULL;
        static const char *streams[] = {"stdout", "stderr"};
        //  (banyan's hub adds the exact bytes when the text lost some)
        static const char *exact[] = {"bn_stdout", "bn_stderr"};
        for (int i = 0; i < 2; i++) {
            json_t *text = json_object_get (io, streams[i]);
            json_t *bytes = json_object_get (entry, exact[i]);
            if (json_is_string (text) && json_string_length (text)) {
                json_t *stream =
                    json_pack ("{s:s, s:O}", "name", streams[i], "text", text);
                if (stream && json_is_string (bytes))
                    json_object_set (stream, BN_STREAM_BYTES, bytes);
                bn_item_on_iopub (item, BN_MSG_STREAM, stream);
                json_decref (stream);
            }
        }
        json_t *execute_result = json_object_get (io, "execute_result");
        if (json_is_object (execute_result))
            bn_item_on_iopub (item, BN_MSG_EXECUTE_RESULT, execute_result);
        json_t *idle = json_pack ("{s:s}", "execution_state", "idle");
        bn_item_on_iopub (item, BN_MSG_STATUS, idle);
        json_decref (idle);
    }
    bn_tracker_unlock (bn_client_tracker (self));
    bn_value_destroy (&value);
    bn_msg_destroy (&msg);
    bn_result_destroy (&query);
    if (!item) {
        bn_result_destroy (&result);
        return BN_ENOMEM;
    }
    *result_p = result;
    return error ? BN_EPICKLE : 0;
}

int
bn_client_history (bn_client_t *self, double timeout, char ***msg_ids,
                   size_t *count)
{
    if (!self || !msg_ids)
        return BN_EINVAL;
    *msg_ids = NULL;
    if (count)
        *count = 0;
    bn_result_t *query;
    int rc = s_records_query (self, BN_MSG_HISTORY_REQUEST, json_object (),
                              timeout, &query, 0);
    if (rc == 0) {
        json_t *history =
            json_object_get (bn_result_reply (query, 0), "history");
        *msg_ids = json_is_array (history) ? s_strv (history, count) : NULL;
        if (!*msg_ids)
            rc = json_is_array (history) ? BN_ENOMEM : BN_EPROTO;
    }
    bn_result_destroy (&query);
    return rc;
}

int
bn_client_db_query (bn_client_t *self, const char *query_json,
                    const char *const *keys, double timeout, char **records)
{
    if (!self || !records)
        return BN_EINVAL;
    *records = NULL;
    json_t *query =
        query_json ? json_loads (query_json, 0, NULL) : json_object ();
    if (!json_is_object (query)) {
        json_decref (query);
        return BN_EINVAL;
    }
    json_t *key_list = keys ? s_json_strv (keys) : json_null ();
    json_t *content =
        key_list ? json_pack ("{s:o, s:o}", "query", query, "keys", key_list)
                 : NULL;
    if (!key_list)
        json_decref (query);
    bn_result_t *result;
    int rc = s_records_query (self, BN_MSG_DB_REQUEST, content, timeout,
                              &result, BN_EREMOTE);
    if (rc == 0) {
        json_t *list = json_object_get (bn_result_reply (result, 0), "records");
        *records =
            json_is_array (list) ? json_dumps (list, JSON_COMPACT) : NULL;
        if (!*records)
            rc = json_is_array (list) ? BN_ENOMEM : BN_EPROTO;
    } else if (rc == BN_EREMOTE && result) {
        const char *ename = bn_result_ename (result, 0);
        const char *evalue = bn_result_evalue (result, 0);
        *records = zsys_sprintf ("%s: %s", ename ? ename : "error",
                                 evalue ? evalue : "");
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_purge (bn_client_t *self, const char *const *msg_ids,
                 bn_idset_t *engines, double timeout)
{
    if (!self)
        return BN_EINVAL;
    json_t *ids = msg_ids ? s_json_strv (msg_ids) : json_string ("all");
    json_t *eids = json_array ();
    for (int id = engines ? bn_idset_first (engines) : -1; eids && id >= 0;
         id = bn_idset_next (engines, id))
        json_array_append_new (eids, json_integer (id));
    json_t *content = ids && eids ? json_pack ("{s:o, s:o}", "msg_ids", ids,
                                               "engine_ids", eids)
                                  : NULL;
    if (!content) {
        json_decref (ids);
        json_decref (eids);
        return BN_ENOMEM;
    }
    bn_result_t *result;
    int rc =
        bn_client_query (self, BN_MSG_PURGE_REQUEST, content, timeout, &result);
    if (rc == BN_EREMOTE) {
        const char *ename = bn_result_ename (result, 0);
        const char *evalue = bn_result_evalue (result, 0);
        if (ename && strcmp (ename, "IndexError") == 0)
            rc = evalue && strstr (evalue, "pending") ? BN_ENOTREADY
                                                      : BN_ENOENGINE;
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_resubmit (bn_client_t *self, const char *const *msg_ids,
                    double timeout, char ***new_ids)
{
    if (new_ids)
        *new_ids = NULL;
    if (!self || !msg_ids || !msg_ids[0])
        return BN_EINVAL;
    json_t *ids = s_json_strv (msg_ids);
    bn_result_t *result;
    int rc = s_records_query (self, BN_MSG_RESUBMIT_REQUEST,
                              ids ? json_pack ("{s:o}", "msg_ids", ids) : NULL,
                              timeout, &result, 0);
    if (rc == 0 && new_ids) {
        json_t *map =
            json_object_get (bn_result_reply (result, 0), "resubmitted");
        json_t *list = json_array ();
        for (size_t i = 0; list && msg_ids[i]; i++) {
            json_t *id = json_object_get (map, msg_ids[i]);
            json_array_append (list, json_is_string (id) ? id : json_null ());
        }
        //  a msg_id the scheduler did not take has no new id
        size_t n = json_array_size (list);
        for (size_t i = 0; i < n; i++)
            if (!json_is_string (json_array_get (list, i)))
                rc = BN_EREMOTE;
        *new_ids = rc == 0 && list ? s_strv (list, NULL) : NULL;
        if (rc == 0 && !*new_ids)
            rc = BN_ENOMEM;
        json_decref (list);
    }
    bn_result_destroy (&result);
    return rc;
}

int
bn_client_shutdown (bn_client_t *self, bool hub, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_tracker_deadline (timeout);
    int rc = 0;
    if (bn_client_engine_count (self) > 0) {
        bn_view_t *view = bn_view_new (self, BN_VIEW_DIRECT);
        if (!view)
            return BN_ENOMEM;
        rc = bn_view_shutdown (view, timeout);
        bn_view_destroy (&view);
    }
    if (hub && (rc == 0 || rc == BN_ENOENGINE)) {
        double left = deadline < 0 ? -1 : deadline - zclock_usecs () / 1e6;
        if (deadline >= 0 && left < 0)
            left = 0;
        json_t *content = json_object ();
        if (!content)
            return BN_ENOMEM;
        bn_result_t *result;
        rc = bn_client_query (self, BN_MSG_SHUTDOWN_REQUEST, content, left,
                              &result);
        bn_result_destroy (&result);
        //  Its notification or its exit may overtake the reply.
        if (rc == BN_ENOCONTROLLER)
            rc = 0;
        //  The controller is going: say so now, not when it has gone.
        if (rc == 0) {
            bn_tracker_lock (bn_client_tracker (self));
            bn_tracker_close (bn_client_tracker (self), BN_ENOCONTROLLER);
            bn_tracker_changed (bn_client_tracker (self));
            bn_tracker_unlock (bn_client_tracker (self));
        }
    }
    return rc;
}

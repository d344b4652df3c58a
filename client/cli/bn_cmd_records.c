/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_records: the hub's task records: banyan history (the msg_ids
    the hub remembers), banyan result MSG_ID (one request's result, sent
    by any client) and banyan purge.  */
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_cmd.h"
#include "bn_pxout.h"

#include <czmq.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Parse options that take none of their own; first operand index, or
//  BN_CLIOPTS_DONE / BN_CLIOPTS_USAGE.
static int
s_parse (bn_cliopts_t *opts, int argc, char **argv, int min, int max)
{
    int first = bn_cliopts_parse (opts, argc, argv, "", NULL, NULL, NULL);
    if (first < 0)
        return first;
    int operands = argc - first;
    if (operands < min) {
        bn_cliopts_usage_error (opts, "missing operand");
        return BN_CLIOPTS_USAGE;
    }
    if (operands > max) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'",
                                argv[first + max]);
        return BN_CLIOPTS_USAGE;
    }
    return first;
}

//  Exit status of a failed call, with its message on stderr.
static int
s_failed (const char *command, const char *what, int rc)
{
    fprintf (stderr, "banyan %s: %s: %s\n", command, what, bn_strerror (rc));
    return BN_EXIT_FAILURE;
}

//  The hub answers a history or a records query with a KeyError only when
//  it keeps no records.
static int
s_history_failed (const char *what, int rc)
{
    if (rc != BN_ENOENT)
        return s_failed ("history", what, rc);
    fprintf (stderr,
             "banyan history: the hub keeps no task records (its controller "
             "runs with --nodb or --db none)\n");
    return BN_EXIT_FAILURE;
}

//  The TaskRecord keys history reads.
static const char *s_history_keys[] = {
    "msg_id",    "header",    "metadata",       "content",     "engine_uuid",
    "submitted", "completed", "result_content", "bn_function", NULL};

//  The id of engine uuid among the registered engines, or -1.
static int
s_engine_id (zhashx_t *ids, const char *uuid)
{
    void *found = uuid ? zhashx_lookup (ids, uuid) : NULL;
    return found ? (int)(intptr_t)found - 1 : -1;
}

//  A date as history prints it: "2026-11-28 04:03:20.281", or "-".
static void
s_date (json_t *date, char *buf, size_t size)
{
    const char *text = json_string_value (date);
    if (!text || strlen (text) < 19) {
        snprintf (buf, size, "-");
        return;
    }
    snprintf (buf, size, "%.10s %.12s", text, text + 11);
}

//  One row of the history for record, a new object {msg_id, submitted,
//  completed, engines, status, ran}; NULL if out of memory.
static json_t *
s_history_row (json_t *record, zhashx_t *ids)
{
    json_t *metadata = json_object_get (record, "metadata");
    json_t *header = json_object_get (record, "header");
    bn_idset_t *engines = bn_idset_new ();
    if (!engines)
        return NULL;
    json_t *targets = json_object_get (metadata, "targets");
    size_t index;
    json_t *target;
    bool broadcast = json_is_true (json_object_get (metadata, "is_broadcast"));
    if (broadcast)
        json_array_foreach (targets, index, target)
        {
            json_t *id = json_array_get (target, 1);
            if (json_is_integer (id))
                bn_idset_add (engines, (int)json_integer_value (id));
        }
    else {
        int id = s_engine_id (
            ids, json_string_value (json_object_get (record, "engine_uuid")));
        if (id >= 0)
            bn_idset_add (engines, id);
    }
    char *set = bn_idset_count (engines) ? bn_idset_encode (engines) : NULL;
    bn_idset_destroy (&engines);
    const char *status = json_string_value (
        json_object_get (json_object_get (record, "result_content"), "status"));
    if (!json_is_string (json_object_get (record, "completed")))
        status = "pending";
    const char *type = json_string_value (json_object_get (header, "msg_type"));
    //  what ran: an execute's code, an apply's function (banyan's hub
    //  says which)
    json_t *code =
        json_object_get (json_object_get (record, "content"), "code");
    if (!json_is_string (code))
        code = json_object_get (record, "bn_function");
    char ran[64];
    snprintf (ran, sizeof ran, "%s%s", broadcast ? "broadcast " : "",
              type && streq (type, "execute_request") ? "execute"
              : type && streq (type, "apply_request") ? "apply"
              : type                                  ? type
                                                      : "?");
    json_t *row = json_pack ("{s:O, s:O, s:O, s:s?, s:s?, s:s, s:O?}", "msg_id",
                             json_object_get (record, "msg_id"), "submitted",
                             json_object_get (record, "submitted"), "completed",
                             json_object_get (record, "completed"), "engines",
                             set, "status", status, "kind", ran, "code",
                             json_is_string (code) ? code : NULL);
    free (set);
    return row;
}

//  The rows of records (a JSON list of TaskRecords), oldest first, without
//  the records a broadcast keeps of each engine ("<msg_id>_<uuid>"), which
//  its own row stands for. NULL if out of memory.
static json_t *
s_history_rows (json_t *records, zhashx_t *ids)
{
    zhashx_t *seen = zhashx_new ();
    json_t *rows = json_array ();
    size_t index;
    json_t *record;
    json_array_foreach (records, index, record)
    {
        const char *msg_id =
            json_string_value (json_object_get (record, "msg_id"));
        if (msg_id && seen)
            zhashx_insert (seen, msg_id, (void *)1);
    }
    json_array_foreach (records, index, record)
    {
        const char *msg_id =
            json_string_value (json_object_get (record, "msg_id"));
        const char *uuid =
            json_string_value (json_object_get (record, "engine_uuid"));
        size_t len = msg_id ? strlen (msg_id) : 0;
        size_t ulen = uuid ? strlen (uuid) : 0;
        if (!msg_id || !rows || !seen)
            continue;
        if (uuid && len > ulen + 1 && streq (msg_id + len - ulen, uuid) &&
            msg_id[len - ulen - 1] == '_') {
            char *orig = strndup (msg_id, len - ulen - 1);
            bool part = orig && zhashx_lookup (seen, orig);
            free (orig);
            if (part)
                continue;
        }
        json_t *row = s_history_row (record, ids);
        if (!row || json_array_append_new (rows, row) != 0) {
            json_decref (rows);
            rows = NULL;
        }
    }
    zhashx_destroy (&seen);
    return rows;
}

//  Print rows as a table.
static void
s_history_print (json_t *rows)
{
    int width = 6, ewidth = 7;
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row)
    {
        int len =
            (int)strlen (json_string_value (json_object_get (row, "msg_id")));
        width = len > width ? len : width;
        const char *engines =
            json_string_value (json_object_get (row, "engines"));
        len = engines ? (int)strlen (engines) : 0;
        ewidth = len > ewidth ? len : ewidth;
    }
    printf ("%-*s  %-23s  %-23s  %-*s  %-8s  %s\n", width, "MSG_ID",
            "SUBMITTED", "COMPLETED", ewidth, "ENGINES", "STATUS", "RAN");
    json_array_foreach (rows, index, row)
    {
        char submitted[32], completed[32];
        s_date (json_object_get (row, "submitted"), submitted,
                sizeof submitted);
        s_date (json_object_get (row, "completed"), completed,
                sizeof completed);
        const char *engines =
            json_string_value (json_object_get (row, "engines"));
        const char *status =
            json_string_value (json_object_get (row, "status"));
        const char *code = json_string_value (json_object_get (row, "code"));
        //  what ran, on one line
        char *shown = code ? strdup (code) : NULL;
        for (char *c = shown; c && *c; c++)
            if (*c == '\n' || *c == '\t')
                *c = ' ';
        printf ("%-*s  %-23s  %-23s  %-*s  %-8s  %s%s%s\n", width,
                json_string_value (json_object_get (row, "msg_id")), submitted,
                completed, ewidth, engines ? engines : "-",
                status ? status : "-",
                json_string_value (json_object_get (row, "kind")),
                shown ? ": " : "", shown ? shown : "");
        free (shown);
    }
}

typedef struct {
    bool json; //  --json
    bool ids;  //  --ids
} s_history_t;

static int
s_history_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_history_t *self = data;
    if (opt == 'j')
        self->json = true;
    else if (opt == 'i')
        self->ids = true;
    else
        return -1;
    return 0;
}

int
bn_cmd_history (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "history", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    s_history_t self = {false, false};
    static const struct option options[] = {{"json", no_argument, NULL, 'j'},
                                            {"ids", no_argument, NULL, 'i'},
                                            {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (opts, argc, argv, "", options,
                                  s_history_option, &self);
    if (first >= 0 && first < argc) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'", argv[first]);
        first = BN_CLIOPTS_USAGE;
    }
    if (first >= 0 && self.json && self.ids) {
        bn_cliopts_usage_error (opts, "--json and --ids exclude each other");
        first = BN_CLIOPTS_USAGE;
    }
    if (first < 0) {
        bn_cliopts_destroy (&opts);
        return first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    }
    int status = BN_EXIT_OK;
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (client && self.ids) {
        char **ids = NULL;
        size_t count = 0;
        int rc =
            bn_client_history (client, bn_cliopts_timeout (opts), &ids, &count);
        if (rc == 0)
            for (size_t i = 0; i < count; i++)
                printf ("%s\n", ids[i]);
        else
            status = s_history_failed ("the hub's history", rc);
        bn_client_free_strv (&ids);
    } else if (client) {
        char *text = NULL;
        int rc = bn_client_db_query (client, NULL, s_history_keys,
                                     bn_cliopts_timeout (opts), &text);
        json_t *records = rc == 0 ? json_loads (text, 0, NULL) : NULL;
        //  the engines' ids by uuid (+1, so that none is NULL)
        zhashx_t *ids = zhashx_new ();
        bn_idset_t *registered = bn_client_ids (client);
        int id = registered ? bn_idset_first (registered) : -1;
        for (; ids && id >= 0; id = bn_idset_next (registered, id)) {
            char uuid[64];
            if (bn_client_engine_uuid (client, id, uuid, sizeof uuid) == 0)
                zhashx_insert (ids, uuid, (void *)(intptr_t)(id + 1));
        }
        bn_idset_destroy (&registered);
        json_t *rows = records && ids ? s_history_rows (records, ids) : NULL;
        if (rc != 0)
            status = s_history_failed ("the hub's records", rc);
        else if (!rows)
            status = s_failed ("history", "the hub's records", BN_EPROTO);
        else if (self.json) {
            char *dump = json_dumps (rows, JSON_INDENT (1));
            if (dump)
                printf ("%s\n", dump);
            free (dump);
        } else if (json_array_size (rows))
            s_history_print (rows);
        json_decref (rows);
        json_decref (records);
        zhashx_destroy (&ids);
        free (text);
    }
    bn_client_destroy (&client);
    bn_cliopts_destroy (&opts);
    return status;
}

//  Print one result as result shows it; returns true if it failed.
static bool
s_print_result (bn_result_t *result, int engine)
{
    if (engine < 0)
        engine = bn_result_engine_id (result, 0);
    if (engine >= 0)
        printf ("engine:    %d\n", engine);
    else
        printf ("engine:    %s\n", bn_result_engine_uuid (result, 0)
                                       ? bn_result_engine_uuid (result, 0)
                                       : "-");
    printf ("submitted: %s\n", bn_result_submitted (result, 0)
                                   ? bn_result_submitted (result, 0)
                                   : "-");
    printf ("started:   %s\n", bn_result_started (result, 0)
                                   ? bn_result_started (result, 0)
                                   : "-");
    printf ("completed: %s\n", bn_result_completed (result, 0)
                                   ? bn_result_completed (result, 0)
                                   : "-");
    bool failed = false;
    int item_status = bn_result_status (result, 0);
    if (item_status == 0) {
        printf ("status:    ok\n");
        const bn_value_t *value = bn_result_value (result, 0);
        char *repr = value ? bn_value_repr (value) : NULL;
        if (repr)
            printf ("value:     %s\n", repr);
        free (repr);
        const char *shown = bn_result_execute_result (result, 0);
        if (shown)
            printf ("out:       %s\n", shown);
    } else {
        printf ("status:    %s\n", bn_strerror (item_status));
        const char *ename = bn_result_ename (result, 0);
        if (ename)
            printf ("error:     %s: %s\n", ename,
                    bn_result_evalue (result, 0) ? bn_result_evalue (result, 0)
                                                 : "");
        failed = true;
    }
    const char *out = bn_result_stdout (result, 0);
    const char *err = bn_result_stderr (result, 0);
    size_t out_size = out ? bn_result_stdout_size (result, 0) : 0;
    size_t err_size = err ? bn_result_stderr_size (result, 0) : 0;
    if (out_size) {
        printf ("[stdout]\n");
        bn_pxout_text (stdout, out, out_size);
    }
    if (err_size) {
        printf ("[stderr]\n");
        bn_pxout_text (stdout, err, err_size);
    }
    return failed;
}

//  The targets of msg_id if the hub recorded it as a broadcast: a new
//  JSON list of [uuid, id] sorted by id; NULL otherwise.
static json_t *
s_broadcast_targets (bn_client_t *client, const char *msg_id, double timeout)
{
    json_t *query = json_pack ("{s:s}", "msg_id", msg_id);
    char *query_text = query ? json_dumps (query, JSON_COMPACT) : NULL;
    json_decref (query);
    static const char *keys[] = {"metadata", "engine_uuid", NULL};
    char *text = NULL;
    int rc = query_text
                 ? bn_client_db_query (client, query_text, keys, timeout, &text)
                 : BN_ENOMEM;
    free (query_text);
    json_t *records = rc == 0 ? json_loads (text, 0, NULL) : NULL;
    free (text);
    json_t *metadata =
        json_object_get (json_array_get (records, 0), "metadata");
    json_t *targets = json_object_get (metadata, "targets");
    //  (an engine's part of a broadcast has the broadcast's request)
    const char *uuid = json_string_value (
        json_object_get (json_array_get (records, 0), "engine_uuid"));
    size_t len = strlen (msg_id);
    bool part = uuid && len > strlen (uuid) &&
                streq (msg_id + len - strlen (uuid), uuid);
    json_t *sorted = NULL;
    if (!part && json_is_true (json_object_get (metadata, "is_broadcast")) &&
        json_array_size (targets)) {
        //  insertion by id: engine order, as px prints
        sorted = json_array ();
        size_t index;
        json_t *target;
        json_array_foreach (targets, index, target)
        {
            json_int_t id = json_integer_value (json_array_get (target, 1));
            if (!json_is_string (json_array_get (target, 0)))
                continue;
            size_t at = json_array_size (sorted);
            while (at > 0 && json_integer_value (json_array_get (
                                 json_array_get (sorted, at - 1), 1)) > id)
                at--;
            json_array_insert (sorted, at, target);
        }
    }
    json_decref (records);
    return sorted;
}

int
bn_cmd_result (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "result", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = s_parse (opts, argc, argv, 1, 1);
    if (first < 0) {
        bn_cliopts_destroy (&opts);
        return first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    }
    const char *msg_id = argv[first];
    int status = BN_EXIT_OK;
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (!client) {
        bn_cliopts_destroy (&opts);
        return status;
    }
    double timeout = bn_cliopts_timeout (opts);
    bn_result_t *result = NULL;
    int rc = bn_client_get_result (client, msg_id, timeout, &result);
    json_t *targets = rc == 0 || rc == BN_EPICKLE || rc == BN_ENOTREADY
                          ? s_broadcast_targets (client, msg_id, timeout)
                          : NULL;
    if (targets) {
        //  a broadcast: each engine's part, kept as "<msg_id>_<uuid>"
        size_t index;
        json_t *target;
        json_array_foreach (targets, index, target)
        {
            int engine = (int)json_integer_value (json_array_get (target, 1));
            char *part_id =
                zsys_sprintf ("%s_%s", msg_id,
                              json_string_value (json_array_get (target, 0)));
            bn_result_t *part = NULL;
            int part_rc =
                part_id ? bn_client_get_result (client, part_id, timeout, &part)
                        : BN_ENOMEM;
            if (index)
                printf ("\n");
            if (part_rc == BN_ENOTREADY)
                printf ("engine:    %d\nstatus:    pending\n", engine);
            else if (part_rc != 0 && part_rc != BN_EPICKLE) {
                printf ("engine:    %d\nstatus:    %s\n", engine,
                        bn_strerror (part_rc));
                status = BN_EXIT_FAILURE;
            } else if (s_print_result (part, engine))
                status = BN_EXIT_FAILURE;
            bn_result_destroy (&part);
            zstr_free (&part_id);
        }
        json_decref (targets);
    } else if (rc == BN_ENOTREADY)
        printf ("%s: pending\n", msg_id);
    else if (rc == BN_ENOENT) {
        bn_cliopts_error (opts,
                          "%s: no such msg_id: the hub knows no request "
                          "by it ('banyan history%s' lists those it knows)",
                          msg_id, bn_cliopts_selection (opts));
        status = BN_EXIT_FAILURE;
    } else if (rc != 0 && rc != BN_EPICKLE)
        status = s_failed ("result", msg_id, rc);
    else if (s_print_result (result, -1))
        status = BN_EXIT_FAILURE;
    bn_result_destroy (&result);
    bn_client_destroy (&client);
    bn_cliopts_destroy (&opts);
    return status;
}

static int
s_purge_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    if (opt != 't')
        return -1;
    return bn_cliclient_targets (opts, arg, (bn_idset_t **)data);
}

int
bn_cmd_purge (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "purge", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    bn_idset_t *targets = NULL;
    static const struct option options[] = {
        {"targets", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (opts, argc, argv, "t:", options,
                                  s_purge_option, &targets);
    if (first < 0) {
        bn_idset_destroy (&targets);
        bn_cliopts_destroy (&opts);
        return first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    }
    int status = BN_EXIT_OK;
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (client) {
        //  MSG_IDs, or with neither them nor -t every completed record
        const char **ids = NULL;
        if (first < argc) {
            //  An id the hub does not know is named, not passed over
            ids = calloc ((size_t)(argc - first) + 1, sizeof (char *));
            size_t known = 0;
            for (int i = first; ids && i < argc; i++) {
                bn_result_t *result = NULL;
                int rc = bn_client_get_result (
                    client, argv[i], bn_cliopts_timeout (opts), &result);
                bn_result_destroy (&result);
                if (rc == BN_ENOENT) {
                    bn_cliopts_error (opts,
                                      "%s: no such msg_id: the hub knows no "
                                      "request by it",
                                      argv[i]);
                    status = BN_EXIT_FAILURE;
                } else
                    ids[known++] = argv[i];
            }
            if (ids && !known && !targets) {
                free (ids);
                bn_client_destroy (&client);
                bn_idset_destroy (&targets);
                bn_cliopts_destroy (&opts);
                return status;
            }
        } else if (targets) {
            static const char *none[] = {NULL};
            ids = calloc (1, sizeof none);
        }
        int rc = (first < argc || targets) && !ids
                     ? BN_ENOMEM
                     : bn_client_purge (client, ids, targets,
                                        bn_cliopts_timeout (opts));
        if (rc == BN_ENOTREADY)
            status = s_failed ("purge", "a request is still pending", rc);
        else if (rc != 0)
            status = s_failed ("purge", "the hub's records", rc);
        free (ids);
        bn_client_destroy (&client);
    }
    bn_idset_destroy (&targets);
    bn_cliopts_destroy (&opts);
    return status;
}

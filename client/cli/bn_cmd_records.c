/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_records: the hub's task records: banyan history (the msg_ids
    the hub remembers), banyan result MSG_ID (one request's result, sent
    by any client) and banyan purge.  */
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_cmd.h"

#include <czmq.h>
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

int
bn_cmd_history (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "history", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = s_parse (opts, argc, argv, 0, 0);
    if (first < 0) {
        bn_cliopts_destroy (&opts);
        return first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    }
    int status = BN_EXIT_OK;
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (client) {
        char **ids = NULL;
        size_t count = 0;
        int rc =
            bn_client_history (client, bn_cliopts_timeout (opts), &ids, &count);
        if (rc == 0)
            for (size_t i = 0; i < count; i++)
                printf ("%s\n", ids[i]);
        else
            status = s_failed ("history", "the hub's history", rc);
        bn_client_free_strv (&ids);
        bn_client_destroy (&client);
    }
    bn_cliopts_destroy (&opts);
    return status;
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
    bn_result_t *result = NULL;
    int rc = bn_client_get_result (client, msg_id, bn_cliopts_timeout (opts),
                                   &result);
    if (rc == BN_ENOTREADY)
        printf ("%s: pending\n", msg_id);
    else if (rc == BN_ENOENT) {
        bn_cliopts_error (opts,
                          "%s: no such msg_id: the hub knows no request "
                          "by it ('banyan history%s' lists those it knows)",
                          msg_id, bn_cliopts_selection (opts));
        status = BN_EXIT_FAILURE;
    } else if (rc != 0 && rc != BN_EPICKLE)
        status = s_failed ("result", msg_id, rc);
    else {
        int engine = bn_result_engine_id (result, 0);
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
                        bn_result_evalue (result, 0)
                            ? bn_result_evalue (result, 0)
                            : "");
            status = BN_EXIT_FAILURE;
        }
        const char *out = bn_result_stdout (result, 0);
        const char *err = bn_result_stderr (result, 0);
        if (out && *out)
            printf ("[stdout]\n%s%s", out,
                    out[strlen (out) - 1] == '\n' ? "" : "\n");
        if (err && *err)
            printf ("[stderr]\n%s%s", err,
                    err[strlen (err) - 1] == '\n' ? "" : "\n");
    }
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
            ids = calloc ((size_t)(argc - first) + 1, sizeof (char *));
            for (int i = first; ids && i < argc; i++)
                ids[i - first] = argv[i];
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

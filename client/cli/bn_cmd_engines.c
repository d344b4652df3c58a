/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_engines: banyan engines, the registered engines, and banyan
    status, a summary of a cluster.  */
#include "bn_activity.h"
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_clusterrec.h"
#include "bn_cmd.h"
#include "bn_connfile.h"
#include "bn_proctable.h"

#include <czmq.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  Seconds engines get to say what they run: a live engine answers a
//  control request at once, even while busy.
#define S_ACTIVITY_TIMEOUT 1.0

//  The record of the cluster the options select, if this host started it
//  and the client file is that cluster's; NULL otherwise.
static bn_clusterrec_t *
s_record (bn_cliopts_t *opts)
{
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    const char *cluster_id = bn_cliopts_cluster_id (opts);
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    if (record && bn_cliopts_file_given (opts)) {
        char *own =
            bn_connfile_path (profile_dir, cluster_id, BN_CONNFILE_CLIENT);
        char given_real[PATH_MAX], own_real[PATH_MAX];
        bool same = own && realpath (own, own_real) &&
                    realpath (bn_cliopts_client_file (opts), given_real) &&
                    strcmp (own_real, given_real) == 0;
        free (own);
        if (!same)
            bn_clusterrec_destroy (&record);
    }
    return record;
}

static int
s_targets_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    if (opt != 't')
        return -1;
    return bn_cliclient_targets (opts, arg, (bn_idset_t **)data);
}

int
bn_cmd_engines (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "engines", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    bn_idset_t *targets = NULL;
    static const struct option options[] = {
        {"targets", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (opts, argc, argv, "t:", options,
                                  s_targets_option, &targets);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0 && first < argc) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'", argv[first]);
        first = BN_CLIOPTS_USAGE;
    }
    if (first < 0) {
        bn_idset_destroy (&targets);
        bn_cliopts_destroy (&opts);
        return status;
    }
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (!client) {
        bn_idset_destroy (&targets);
        bn_cliopts_destroy (&opts);
        return status;
    }
    bn_idset_t *ids = bn_client_ids (client);
    bool missing = false;
    if (ids && targets) {
        for (int id = bn_idset_first (ids); id >= 0;
             id = bn_idset_next (ids, id))
            if (!bn_idset_contains (targets, id))
                bn_idset_remove (ids, id);
        missing = bn_idset_count (ids) < bn_idset_count (targets);
    }
    bn_queue_status_t *queues = NULL;
    size_t nqueues = 0;
    if (ids && bn_idset_count (ids) &&
        bn_client_queue_status (client, ids, bn_cliopts_timeout (opts), &queues,
                                &nqueues, NULL) != 0)
        queues = NULL;
    double timeout = bn_cliopts_timeout (opts);
    bn_activity_t *activity =
        ids && bn_idset_count (ids)
            ? bn_activity_new (client, ids,
                               timeout > 0 && timeout < S_ACTIVITY_TIMEOUT
                                   ? timeout
                                   : S_ACTIVITY_TIMEOUT,
                               NULL)
            : NULL;
    bn_clusterrec_t *record = s_record (opts);
    char host[256] = "-";
    if (record)
        gethostname (host, sizeof host);

    printf ("%-5s %-36s %-16s %-8s %-8s %-5s %-8s %s\n", "ID", "UUID", "HOST",
            "PID", "STATE", "QUEUE", "SINCE", "RUNNING");
    for (int id = ids ? bn_idset_first (ids) : -1; id >= 0;
         id = bn_idset_next (ids, id)) {
        char uuid[64] = "-";
        bn_client_engine_uuid (client, id, uuid, sizeof uuid);
        char pid[16] = "-", queue[16] = "-";
        const char *state = "registered";
        pid_t engine_pid = record ? bn_clusterrec_engine_pid (record, id) : 0;
        //  An engine of a remote launch: its host's name and pid there
        pid_t remote_pid = 0;
        const char *remote =
            record ? bn_clusterrec_engine_host (record, id, &remote_pid) : NULL;
        if (remote && remote_pid > 0)
            snprintf (pid, sizeof pid, "%d", (int)remote_pid);
        if (engine_pid > 0) {
            snprintf (pid, sizeof pid, "%d", (int)engine_pid);
            if (!bn_proctable_alive (engine_pid, 0))
                state = "gone";
        }
        char since[32] = "-";
        const char *what = "-";
        if (activity && bn_activity_known (activity, id)) {
            //  what the engine says it runs
            snprintf (queue, sizeof queue, "%d",
                      bn_activity_queued (activity, id));
            if (bn_activity_msg_id (activity, id)) {
                state = "busy";
                what = bn_activity_what (activity, id);
                if (!bn_activity_since (activity, id, since, sizeof since,
                                        NULL))
                    snprintf (since, sizeof since, "-");
            } else
                state = "idle";
        } else
            //  what the hub counts (direct requests and tasks)
            for (size_t index = 0; queues && index < nqueues; index++)
                if (queues[index].engine_id == id) {
                    int waiting = queues[index].queue + queues[index].tasks;
                    snprintf (queue, sizeof queue, "%d",
                              waiting > 0 ? waiting - 1 : 0);
                    if (strcmp (state, "gone") != 0)
                        state = waiting ? "busy" : "idle";
                }
        printf ("%-5d %-36s %-16s %-8s %-8s %-5s %-8s %s\n", id, uuid,
                remote           ? remote
                : engine_pid > 0 ? host
                                 : "-",
                pid, state, queue, since, what);
    }
    if (missing)
        bn_cliclient_report_missing (opts, client, targets);
    else if (!ids || bn_idset_count (ids) == 0)
        bn_cliopts_error (opts, "no engines are registered");
    free (queues);
    bn_activity_destroy (&activity);
    bn_clusterrec_destroy (&record);
    bn_idset_destroy (&ids);
    bn_idset_destroy (&targets);
    bn_client_destroy (&client);
    bn_cliopts_destroy (&opts);
    return missing ? BN_EXIT_FAILURE : BN_EXIT_OK;
}

//  One thing engines run, for status.
typedef struct {
    bn_idset_t *engines; //  that run it
    char since[32];      //  when the first of them began
    double age;          //  and how long ago, in seconds
} s_busy_t;

static void
s_busy_destroy (void **item)
{
    s_busy_t *busy = *item;
    if (busy) {
        bn_idset_destroy (&busy->engines);
        free (busy);
        *item = NULL;
    }
}

//  Print the engines that are busy, grouped by what they run, as their
//  engines say; nothing for engines that do not say (7.1.0's).
static void
s_print_busy (bn_client_t *client, bn_idset_t *ids, double timeout)
{
    bn_activity_t *activity = bn_activity_new (
        client, ids,
        timeout > 0 && timeout < S_ACTIVITY_TIMEOUT ? timeout
                                                    : S_ACTIVITY_TIMEOUT,
        NULL);
    zhashx_t *running = zhashx_new ();
    zlistx_t *order = zlistx_new (); //  what they run, first seen first
    if (!activity || !running || !order) {
        bn_activity_destroy (&activity);
        zhashx_destroy (&running);
        zlistx_destroy (&order);
        return;
    }
    zhashx_set_destructor (running, s_busy_destroy);
    zlistx_set_duplicator (order, (czmq_duplicator *)strdup);
    zlistx_set_destructor (order, (czmq_destructor *)zstr_free);
    size_t idle = 0, silent = 0;
    for (int id = bn_idset_first (ids); id >= 0; id = bn_idset_next (ids, id)) {
        if (!bn_activity_known (activity, id)) {
            silent++;
            continue;
        }
        const char *what = bn_activity_what (activity, id);
        if (!what) {
            idle++;
            continue;
        }
        s_busy_t *busy = zhashx_lookup (running, what);
        if (!busy) {
            busy = calloc (1, sizeof *busy);
            if (!busy || !(busy->engines = bn_idset_new ())) {
                free (busy);
                break;
            }
            busy->age = -1;
            zhashx_insert (running, what, busy);
            zlistx_add_end (order, (void *)what);
        }
        bn_idset_add (busy->engines, id);
        char since[32];
        double age;
        if (bn_activity_since (activity, id, since, sizeof since, &age) &&
            age > busy->age) {
            busy->age = age;
            snprintf (busy->since, sizeof busy->since, "%s", since);
        }
    }
    size_t nbusy = bn_idset_count (ids) - idle - silent;
    if (silent)
        printf ("busy:            %zu engine%s running, %zu idle, %zu not "
                "saying (7.1.0 engines do not tell)\n",
                nbusy, nbusy == 1 ? "" : "s", idle, silent);
    else
        printf ("busy:            %zu engine%s running, %zu idle\n", nbusy,
                nbusy == 1 ? "" : "s", idle);
    for (const char *what = zlistx_first (order); what;
         what = zlistx_next (order)) {
        s_busy_t *busy = zhashx_lookup (running, what);
        char *set = bn_idset_format (busy->engines);
        printf ("                 %s: %s (since %s, %.0f s)\n", set ? set : "?",
                *what ? what : "?", *busy->since ? busy->since : "?",
                busy->age);
        free (set);
    }
    zlistx_destroy (&order);
    zhashx_destroy (&running);
    bn_activity_destroy (&activity);
}

int
bn_cmd_status (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "status", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = bn_cliopts_parse (opts, argc, argv, "", NULL, NULL, NULL);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0 && first < argc) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'", argv[first]);
        first = BN_CLIOPTS_USAGE;
    }
    if (first < 0) {
        bn_cliopts_destroy (&opts);
        return status;
    }
    const char *file = bn_cliopts_client_file (opts);
    printf ("connection file: %s\n", file);
    bn_clusterrec_t *record = s_record (opts);
    if (record) {
        size_t live = 0;
        bn_cluster_state_t state = bn_clusterrec_state (record, &live);
        printf ("cluster:         %s, process group %d, %zu/%zu engine "
                "processes alive, %d engines asked for\n",
                bn_clusterrec_state_name (state),
                (int)bn_clusterrec_pgid (record), live,
                bn_clusterrec_engine_procs (record), bn_clusterrec_n (record));
    } else
        printf ("cluster:         not started by 'banyan cluster start' on "
                "this host\n");
    fflush (stdout);
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (!client) {
        printf ("controller:      unreachable\n");
        bn_clusterrec_destroy (&record);
        bn_cliopts_destroy (&opts);
        return status;
    }
    printf ("controller:      reachable\n");
    bn_idset_t *ids = bn_client_ids (client);
    char *text = ids ? bn_idset_format (ids) : NULL;
    printf ("engines:         %zu registered%s%s\n",
            ids ? bn_idset_count (ids) : 0,
            ids && bn_idset_count (ids) ? ": " : "",
            ids && bn_idset_count (ids) && text ? text : "");
    free (text);
    bn_queue_status_t *queues = NULL;
    size_t nqueues = 0;
    int unassigned = 0;
    int rc =
        ids && bn_idset_count (ids)
            ? bn_client_queue_status (client, NULL, bn_cliopts_timeout (opts),
                                      &queues, &nqueues, &unassigned)
            : 0;
    if (rc == 0) {
        long queued = 0, tasks = 0, completed = 0;
        for (size_t index = 0; index < nqueues; index++) {
            queued += queues[index].queue;
            tasks += queues[index].tasks;
            completed += queues[index].completed;
        }
        printf ("queues:          %ld direct requests waiting or running, "
                "%ld tasks assigned, %d unassigned, %ld completed\n",
                queued, tasks, unassigned, completed);
    } else
        printf ("queues:          unknown (%s)\n", bn_strerror (rc));
    if (ids && bn_idset_count (ids))
        s_print_busy (client, ids, bn_cliopts_timeout (opts));
    free (queues);
    bn_idset_destroy (&ids);
    bn_client_destroy (&client);
    bn_clusterrec_destroy (&record);
    bn_cliopts_destroy (&opts);
    return rc == 0 ? BN_EXIT_OK : BN_EXIT_FAILURE;
}

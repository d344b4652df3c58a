/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cliclient: connecting, calling and collecting for the commands.  */
#include "bn_cliclient.h"
#include "bn_activity.h"
#include "bn_clusterrec.h"
#include "bn_cmd.h"
#include "bn_connfile.h"
#include "bn_interrupt.h"
#include "bn_progress.h"

#include <assert.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  Seconds to wait for abort replies, and then for the aborted requests'
//  replies
#define S_ABORT_TIMEOUT 2.0
#define S_ABORTED_WAIT 0.5
//  Seconds a call waits on a terminal before it looks for earlier work
//  it waits behind, and the time engines get to say what they run
#define S_BEHIND_AFTER 1.0
#define S_BEHIND_TIMEOUT 1.0

char *
bn_cliclient_other_clusters (bn_cliopts_t *opts)
{
    assert (opts);
    if (*bn_cliopts_cluster_id (opts) || bn_cliopts_file_given (opts))
        return NULL;
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    //  Clusters `cluster start` made, and controllers started by hand
    //  (their connection files)
    zlist_t *ids = bn_clusterrec_ids (profile_dir);
    char *folder = zsys_sprintf ("%s/security", profile_dir);
    DIR *dir = ids && folder ? opendir (folder) : NULL;
    free (folder);
    const char *prefix = "ipcontroller-", *suffix = "-client.json";
    struct dirent *entry;
    while (dir && (entry = readdir (dir))) {
        const char *name = entry->d_name;
        size_t length = strlen (name), before = strlen (prefix),
               after = strlen (suffix);
        if (length <= before + after || strncmp (name, prefix, before) != 0 ||
            strcmp (name + length - after, suffix) != 0)
            continue;
        char *id = strndup (name + before, length - before - after);
        bool known = false;
        for (char *other = id ? zlist_first (ids) : NULL; other && !known;
             other = zlist_next (ids))
            known = strcmp (other, id) == 0;
        if (id && !known)
            zlist_append (ids, id);
        free (id);
    }
    if (dir)
        closedir (dir);
    zlist_sort (ids, (zlist_compare_fn *)strcmp);
    char *text = NULL;
    for (char *id = ids ? zlist_first (ids) : NULL; id; id = zlist_next (ids)) {
        if (!*id)
            continue;
        char *longer =
            zsys_sprintf ("%s%s%s", text ? text : "", text ? ", " : "", id);
        free (text);
        text = longer;
        if (!text)
            break;
    }
    zlist_destroy (&ids);
    return text;
}

bool
bn_cliclient_error_other_clusters (bn_cliopts_t *opts)
{
    char *others = bn_cliclient_other_clusters (opts);
    if (!others)
        return false;
    bn_cliopts_error (opts,
                      "no cluster without --cluster-id in %s, which holds "
                      "the clusters %s: say which with --cluster-id",
                      bn_cliopts_profile_dir (opts), others);
    free (others);
    return true;
}

//  The profile folder and cluster id of a client file named as a
//  controller writes it, "<profile>/security/ipcontroller[-ID]-client.json";
//  false for any other name.
static bool
s_profile_of (const char *file, char **profile_p, char **cluster_id_p)
{
    const char *slash = strrchr (file, '/');
    const char *base = slash ? slash + 1 : file;
    const char *prefix = "ipcontroller", *suffix = "-client.json";
    size_t length = strlen (base), before = strlen (prefix),
           after = strlen (suffix);
    size_t folder = slash ? (size_t)(slash - file) : 0;
    if (!slash || folder < 9 || strncmp (slash - 9, "/security", 9) != 0 ||
        length < before + after || strncmp (base, prefix, before) != 0 ||
        strcmp (base + length - after, suffix) != 0 ||
        (length > before + after &&
         (base[before] != '-' || length == before + after + 1)))
        return false;
    *profile_p = strndup (file, folder - 9);
    *cluster_id_p =
        length > before + after
            ? strndup (base + before + 1, length - before - after - 1)
            : strdup ("");
    if (*profile_p && *cluster_id_p)
        return true;
    zstr_free (profile_p);
    zstr_free (cluster_id_p);
    return false;
}

//  The pid the controller pid file of the selected cluster names, if that
//  process has ended, with the pid file's path in *pidfile_p (freed by the
//  caller) and how to name that profile in *selection_p: only for a
//  controller of this host (the profile may be shared with others) and a
//  client file in its profile; else 0.
static pid_t
s_dead_controller (bn_cliopts_t *opts, bn_connfile_t *info, char **pidfile_p,
                   char **selection_p)
{
    char host[256] = "";
    if (gethostname (host, sizeof host - 1) != 0 ||
        strcmp (bn_connfile_location (info), host) != 0)
        return 0;
    char *profile_dir = NULL, *cluster_id = NULL;
    if (!bn_cliopts_file_given (opts)) {
        profile_dir = strdup (bn_cliopts_profile_dir (opts));
        cluster_id = strdup (bn_cliopts_cluster_id (opts));
        *selection_p = strdup (bn_cliopts_selection (opts));
    } else if (s_profile_of (bn_cliopts_client_file (opts), &profile_dir,
                             &cluster_id))
        *selection_p =
            zsys_sprintf (" --profile-dir %s%s%s", profile_dir,
                          *cluster_id ? " --cluster-id " : "", cluster_id);
    char *path =
        profile_dir && cluster_id
            ? bn_clusterrec_controller_pidfile (profile_dir, cluster_id)
            : NULL;
    FILE *file = path ? fopen (path, "r") : NULL;
    long pid = 0;
    if (file) {
        if (fscanf (file, "%ld", &pid) != 1)
            pid = 0;
        fclose (file);
    }
    if (pid <= 0 || pid > INT_MAX || !*selection_p ||
        bn_clusterrec_controller_pid (profile_dir, cluster_id) > 0)
        pid = 0;
    free (profile_dir);
    free (cluster_id);
    if (pid > 0)
        *pidfile_p = path;
    else {
        free (path);
        zstr_free (selection_p);
    }
    return (pid_t)pid;
}

bn_client_t *
bn_cliclient_connect (bn_cliopts_t *opts, int *status)
{
    assert (opts);
    assert (status);
    const char *file = bn_cliopts_client_file (opts);
    //  bn_client_new would wait for the file to appear: a missing one
    //  means there is no cluster, now
    if (access (file, F_OK) != 0) {
        if (!bn_cliclient_error_other_clusters (opts))
            bn_cliopts_error (opts,
                              "no cluster: %s does not exist (start one with "
                              "'banyan cluster start -n N%s')",
                              file, bn_cliopts_selection (opts));
        *status = BN_EXIT_NO_CLUSTER;
        return NULL;
    }
    //  bn_client_new would wait out the timeout for a file it cannot
    //  read: the controller writes it whole, so a bad one stays bad
    char problem[512] = "";
    bn_connfile_t *info = bn_connfile_load (file, problem, sizeof problem);
    if (!info) {
        bn_cliopts_error (opts, "bad connection file %s", problem);
        *status = BN_EXIT_FAILURE;
        return NULL;
    }
    char *pidfile = NULL, *selection = NULL;
    pid_t dead = s_dead_controller (opts, info, &pidfile, &selection);
    bn_connfile_destroy (&info);
    if (dead > 0) {
        bn_cliopts_error (opts,
                          "no cluster: its controller (pid %d in %s) has "
                          "ended (start a new one with 'banyan cluster start "
                          "-n N%s')",
                          (int)dead, pidfile, selection);
        free (pidfile);
        free (selection);
        *status = BN_EXIT_NO_CLUSTER;
        return NULL;
    }
    int error = 0;
    double timeout = bn_cliopts_timeout (opts);
    bn_client_t *client =
        bn_client_new (file, timeout > 0 ? timeout : 0.001, &error);
    if (!client) {
        if (error == BN_ETIMEDOUT || error == BN_ECONNECT) {
            bn_cliopts_error (opts,
                              "no cluster: no controller answers at %s "
                              "(waited %g s)",
                              file, timeout);
            *status = BN_EXIT_NO_CLUSTER;
        } else {
            bn_cliopts_error (opts, "cannot connect with %s: %s", file,
                              bn_strerror (error));
            *status = BN_EXIT_FAILURE;
        }
    }
    return client;
}

int
bn_cliclient_targets (bn_cliopts_t *opts, const char *text,
                      bn_idset_t **targets_p)
{
    assert (opts);
    assert (targets_p);
    bn_idset_t *targets = bn_idset_parse (text);
    if (!targets || bn_idset_count (targets) == 0) {
        bn_cliopts_usage_error (opts,
                                "-t: '%s' is not a set of engine ids such as "
                                "0-7,12",
                                text);
        bn_idset_destroy (&targets);
        return -1;
    }
    bn_idset_destroy (targets_p);
    *targets_p = targets;
    return 0;
}

void
bn_cliclient_report_missing (bn_cliopts_t *opts, bn_client_t *client,
                             bn_idset_t *targets)
{
    assert (opts);
    assert (client);
    bn_idset_t *ids = bn_client_ids (client);
    if (!ids)
        return;
    if (bn_idset_count (ids) == 0)
        bn_cliopts_error (opts, "no engines are registered");
    else if (targets) {
        bn_idset_t *missing = bn_idset_dup (targets);
        for (int id = bn_idset_first (ids); missing && id >= 0;
             id = bn_idset_next (ids, id))
            bn_idset_remove (missing, id);
        char *text = missing ? bn_idset_format (missing) : NULL;
        char *known = bn_idset_format (ids);
        bn_cliopts_error (opts, "not registered: %s (registered: %s)",
                          text ? text : "?", known ? known : "?");
        free (text);
        free (known);
        bn_idset_destroy (&missing);
    } else
        bn_cliopts_error (opts, "no such engine");
    bn_idset_destroy (&ids);
}

int
bn_cliclient_call (bn_cliopts_t *opts, bn_client_t *client, bn_idset_t *targets,
                   bn_cliclient_route_t route, bn_cliclient_call_fn *call,
                   void *data, bn_view_t **view_p, bn_result_t **result_p)
{
    assert (opts);
    assert (client);
    assert (call);
    if (bn_client_engine_count (client) == 0) {
        bn_cliopts_error (opts, "no engines are registered");
        return -1;
    }
    bn_view_kind_t kinds[3] = {BN_VIEW_BROADCAST, BN_VIEW_DIRECT,
                               BN_VIEW_LOAD_BALANCED};
    int rc = BN_ENOMEM;
    int attempt = route == BN_CLICLIENT_BROADCAST ? 0
                  : route == BN_CLICLIENT_DIRECT  ? 1
                                                  : 2;
    int last = route == BN_CLICLIENT_BALANCED ? 3 : 2;
    for (; attempt < last; attempt++) {
        bn_view_t *view = bn_view_new (client, kinds[attempt]);
        if (!view || bn_view_set_targets (view, targets) != 0) {
            bn_view_destroy (&view);
            rc = BN_ENOMEM;
            break;
        }
        rc = call (view, data, result_p);
        if (rc == 0) {
            *view_p = view;
            return 0;
        }
        bn_view_destroy (&view);
        //  A controller without a broadcast scheduler still has the mux
        if (rc != BN_ENOTSUP)
            break;
    }
    if (rc == BN_ENOENGINE)
        bn_cliclient_report_missing (opts, client, targets);
    else if (rc == BN_ENOCONTROLLER)
        bn_cliopts_error (opts, "the controller went away");
    else if (rc == BN_ENOTSUP && route == BN_CLICLIENT_BALANCED)
        bn_cliopts_error (opts, "the controller has no task scheduler");
    else
        bn_cliopts_error (opts, "cannot send the request: %s",
                          bn_strerror (rc));
    return -1;
}

//  Engines of the items still pending, as a new set.
static bn_idset_t *
s_pending (bn_result_t *result)
{
    bn_idset_t *pending = bn_idset_new ();
    size_t count = bn_result_count (result);
    for (size_t index = 0; pending && index < count; index++)
        if (bn_result_status (result, index) == BN_ENOTREADY) {
            int id = bn_result_engine_id (result, index);
            if (id >= 0)
                bn_idset_add (pending, id);
        }
    return pending;
}

//  Say which of the engines result still waits for are busy with
//  earlier work, and with what (as they say it: banyan engines).
static void
s_report_behind (bn_cliopts_t *opts, bn_client_t *client, bn_result_t *result)
{
    bn_idset_t *pending = s_pending (result);
    bn_activity_t *activity =
        pending && bn_idset_count (pending)
            ? bn_activity_new (client, pending, S_BEHIND_TIMEOUT, NULL)
            : NULL;
    zhashx_t *ours = zhashx_new ();
    zhashx_t *behind = zhashx_new (); //  what they run -> engines
    zlistx_t *order = zlistx_new ();  //  what they run, first seen first
    if (!activity || !ours || !behind || !order)
        goto done;
    zhashx_set_destructor (behind, (czmq_destructor *)bn_idset_destroy);
    zlistx_set_duplicator (order, (czmq_duplicator *)strdup);
    zlistx_set_destructor (order, (czmq_destructor *)zstr_free);
    for (size_t index = 0; index < bn_result_count (result); index++)
        zhashx_insert (ours, bn_result_msg_id (result, index), (void *)1);
    for (int id = bn_idset_first (pending); id >= 0;
         id = bn_idset_next (pending, id)) {
        const char *msg_id = bn_activity_msg_id (activity, id);
        if (!msg_id || zhashx_lookup (ours, msg_id))
            continue;
        const char *what = bn_activity_what (activity, id);
        char since[32], key[600];
        if (bn_activity_since (activity, id, since, sizeof since, NULL))
            snprintf (key, sizeof key, "%.500s (since %s)",
                      *what ? what : "a request", since);
        else
            snprintf (key, sizeof key, "%.500s", *what ? what : "a request");
        bn_idset_t *engines = zhashx_lookup (behind, key);
        if (!engines) {
            engines = bn_idset_new ();
            if (!engines || zhashx_insert (behind, key, engines) != 0) {
                bn_idset_destroy (&engines);
                goto done;
            }
            zlistx_add_end (order, key);
        }
        bn_idset_add (engines, id);
    }
    for (const char *key = zlistx_first (order); key;
         key = zlistx_next (order)) {
        char *set = bn_idset_format (zhashx_lookup (behind, key));
        bn_cliopts_error (opts,
                          "%s busy with earlier work: %s; this waits "
                          "behind it",
                          set ? set : "engines", key);
        free (set);
    }
done:
    zlistx_destroy (&order);
    zhashx_destroy (&behind);
    zhashx_destroy (&ours);
    bn_activity_destroy (&activity);
    bn_idset_destroy (&pending);
}

//  Items that completed (or timed out) and wait to be handed over, so
//  that they go out in engine order.
typedef struct {
    size_t index;   //  item
    int id;         //  its engine
    bool timed_out; //  it did not complete in time
} s_ready_t;

typedef struct {
    bn_result_t *result;
    bool *handed;     //  per item: taken already
    s_ready_t *ready; //  taken, not yet handed over
    size_t nready;
    bn_cliclient_item_fn *on_item;
    void *data;
} s_collect_t;

static void
s_take (s_collect_t *self, size_t index, bool timed_out)
{
    if (self->handed[index])
        return;
    self->handed[index] = true;
    s_ready_t *ready = &self->ready[self->nready++];
    ready->index = index;
    ready->id = bn_result_engine_id (self->result, index);
    ready->timed_out = timed_out;
}

static int
s_compare_ready (const void *a, const void *b)
{
    const s_ready_t *left = a, *right = b;
    if (left->id != right->id)
        return (left->id > right->id) - (left->id < right->id);
    return (left->index > right->index) - (left->index < right->index);
}

//  Hand what was taken over, in engine order (as %px prints).
static void
s_flush (s_collect_t *self)
{
    qsort (self->ready, self->nready, sizeof *self->ready, s_compare_ready);
    for (size_t i = 0; i < self->nready; i++)
        self->on_item (self->result, self->ready[i].index,
                       self->ready[i].timed_out, self->data);
    self->nready = 0;
}

int
bn_cliclient_collect (bn_cliopts_t *opts, bn_client_t *client,
                      bn_result_t *result, double timeout,
                      bn_cliclient_item_fn *on_item, void *data)
{
    assert (opts);
    assert (client);
    assert (result);
    assert (on_item);
    bn_interrupt_install ();
    size_t count = bn_result_count (result);
    s_collect_t self = {result,
                        calloc (count + 1, sizeof *self.handed),
                        calloc (count + 1, sizeof *self.ready),
                        0,
                        on_item,
                        data};
    if (!self.handed || !self.ready) {
        free (self.handed);
        free (self.ready);
        bn_cliopts_error (opts, "out of memory");
        return BN_EXIT_FAILURE;
    }
    //  On a terminal what completes is printed as it comes, a batch at a
    //  time (what arrived together: one release of the tree's merging
    //  nodes), each in engine order; otherwise all of it at the end.
    bool stream = isatty (fileno (stdout));
    bn_progress_t *progress = bn_progress_new (stderr, "", 1.0);
    double deadline = timeout >= 0 ? zclock_usecs () / 1e6 + timeout : -1;
    int interrupts = 0;
    int status = BN_EXIT_OK;
    double behind_at =
        isatty (fileno (stderr)) ? zclock_usecs () / 1e6 + S_BEHIND_AFTER : -1;
    while (true) {
        int index = bn_result_next (result, 0.1);
        while (index >= 0) {
            s_take (&self, (size_t)index, false);
            index = bn_result_next (result, 0);
        }
        if (stream && self.nready) {
            if (progress)
                bn_progress_clear (progress);
            s_flush (&self);
        }
        if (index == BN_ENOENT)
            break;
        if (behind_at >= 0 && zclock_usecs () / 1e6 > behind_at) {
            behind_at = -1;
            if (progress)
                bn_progress_clear (progress);
            s_report_behind (opts, client, result);
        }
        if (progress)
            bn_progress_update (progress, bn_result_progress (result), count);
        int now_interrupts = bn_interrupt_count ();
        if (now_interrupts != interrupts) {
            interrupts = now_interrupts;
            if (progress)
                bn_progress_clear (progress);
            bn_idset_t *pending = s_pending (result);
            char *text = pending ? bn_idset_format (pending) : NULL;
            if (interrupts >= 2) {
                bn_cliopts_error (opts, "aborting %s", text ? text : "");
                bn_result_abort (result, S_ABORT_TIMEOUT);
                status = BN_EXIT_INTERRUPTED;
            } else
                bn_cliopts_error (opts,
                                  "still running on %s; press Ctrl-C "
                                  "again to abort",
                                  text ? text : "");
            free (text);
            bn_idset_destroy (&pending);
            if (status != BN_EXIT_OK)
                break;
        }
        if (deadline >= 0 && zclock_usecs () / 1e6 > deadline) {
            if (progress)
                bn_progress_clear (progress);
            //  (a moment for the aborted replies, which carry what the
            //  commands wrote before they were ended)
            if (bn_result_abort (result, S_ABORT_TIMEOUT) == 0)
                bn_result_wait (result, S_ABORTED_WAIT);
            //  Items that completed during the abort still count; the
            //  rest timed out, those the abort ended too
            while ((index = bn_result_next (result, 0)) >= 0)
                s_take (&self, (size_t)index,
                        bn_result_status (result, (size_t)index) ==
                            BN_EABORTED);
            for (size_t item = 0; item < count; item++)
                if (bn_result_status (result, item) == BN_ENOTREADY)
                    s_take (&self, item, true);
            break;
        }
    }
    bn_progress_destroy (&progress);
    s_flush (&self);
    free (self.handed);
    free (self.ready);
    return status;
}

//  The returncode of a banyan engine's execute reply, or 0.
static int
s_returncode (bn_result_t *result, size_t index)
{
    const char *content = bn_result_content (result, index);
    if (!content)
        return 0;
    json_t *root = json_loads (content, 0, NULL);
    json_t *code = root ? json_object_get (root, "returncode") : NULL;
    int returncode =
        json_is_integer (code) ? (int)json_integer_value (code) : 0;
    json_decref (root);
    return returncode;
}

void
bn_cliclient_describe (bn_result_t *result, size_t index, bool timed_out,
                       char *text, size_t size, int *code, bool *failed)
{
    assert (result);
    assert (text);
    *code = 0;
    *failed = false;
    text[0] = 0;
    if (timed_out) {
        snprintf (text, size, "timed out");
        *failed = true;
        return;
    }
    int status = bn_result_status (result, index);
    if (status == 0)
        return;
    const char *ename = bn_result_ename (result, index);
    const char *evalue = bn_result_evalue (result, index);
    if (status == BN_EREMOTE && ename &&
        strcmp (ename, "CalledProcessError") == 0) {
        int returncode = s_returncode (result, index);
        if (returncode > 0) {
            snprintf (text, size, "exited with exit code %d", returncode);
            *code = returncode;
            return;
        }
        if (returncode < 0) {
            snprintf (text, size, "killed by signal %d (%s)", -returncode,
                      strsignal (-returncode));
            *code = 128 - returncode;
            return;
        }
    }
    *failed = true;
    //  The hub's text names the engine and the request, which would keep
    //  each engine in a group of its own under px -b; what comes after
    //  "lost ...: " is why, the same for every engine lost so ("host node
    //  on h3 (198.18.0.3) stopped answering")
    const char *lost = evalue ? strstr (evalue, " lost") : NULL;
    const char *why = lost ? strstr (lost, ": ") : NULL;
    if ((status == BN_EENGINEDIED ||
         (ename && strcmp (ename, "EngineError") == 0)) &&
        why && why[2])
        snprintf (text, size, "EngineError: the engine was lost: %s", why + 2);
    else if (status == BN_EENGINEDIED ||
             (ename && strcmp (ename, "EngineError") == 0))
        snprintf (text, size, "EngineError: the engine died");
    else if (status == BN_EABORTED)
        snprintf (text, size, "aborted");
    else if (ename && evalue && *evalue)
        snprintf (text, size, "%s: %s", ename, evalue);
    else if (ename)
        snprintf (text, size, "%s", ename);
    else
        snprintf (text, size, "%s", bn_strerror (status));
}

char *
bn_cliclient_read_file (const char *path, size_t *size)
{
    assert (path);
    assert (size);
    FILE *file = strcmp (path, "-") == 0 ? stdin : fopen (path, "rb");
    if (!file)
        return NULL;
    size_t alloc = 65536, used = 0;
    char *data = malloc (alloc);
    while (data) {
        size_t got = fread (data + used, 1, alloc - used, file);
        used += got;
        if (used < alloc) {
            if (ferror (file)) {
                free (data);
                data = NULL;
            }
            break;
        }
        char *bigger = realloc (data, alloc * 2);
        if (!bigger) {
            free (data);
            data = NULL;
            errno = ENOMEM;
            break;
        }
        data = bigger;
        alloc *= 2;
    }
    if (file != stdin)
        fclose (file);
    *size = used;
    return data;
}

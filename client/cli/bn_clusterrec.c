/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clusterrec: the record of a started cluster, a small JSON file.  */
#include "bn_clusterrec.h"
#include "bn_proctable.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_VERSION 1
#define S_PREFIX "banyan-cluster"

typedef struct {
    pid_t pid;
    unsigned long long starttime;
    int first; //  First engine id it serves
    int count; //  Engines it runs
} s_engine_proc_t;

typedef struct {
    pid_t pid;
    unsigned long long starttime;
} s_session_t;

struct _bn_clusterrec_t {
    char *profile_dir;
    char *cluster_id;
    char *profile; //  Profile name, or "" when given by folder
    int n;         //  Engines asked for
    int per_process;
    bool daemonized;
    time_t started;
    pid_t supervisor; //  Also the process group id
    unsigned long long supervisor_start;
    pid_t controller;
    unsigned long long controller_start;
    s_engine_proc_t *engines;
    size_t engines_size;
    size_t engines_alloc;
    char *launcher; //  "local", "ssh", "slurm", "mpiexec"
    char *command;  //  The launcher's command (ssh's), or ""
    char *job;      //  Slurm batch job id, or ""
    char *nodes;    //  Its nodes as Slurm names them, or ""
    s_session_t *sessions;
    size_t sessions_size;
    bn_clusterrec_host_t *hosts;
    size_t hosts_size;
};

static const char *s_host_states[] = {"running", "ended", "lost", "failed"};

static void
s_host_free (bn_clusterrec_host_t *host)
{
    free (host->name);
    free (host->pids);
    free (host->step);
    free (host->reason);
}

static void s_replace (char **field, const char *value);

bn_clusterrec_t *
bn_clusterrec_new (const char *profile_dir, const char *cluster_id)
{
    assert (profile_dir);
    bn_clusterrec_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->profile_dir = strdup (profile_dir);
    self->cluster_id = strdup (cluster_id ? cluster_id : "");
    self->profile = strdup ("");
    self->launcher = strdup ("local");
    self->command = strdup ("");
    self->job = strdup ("");
    self->nodes = strdup ("");
    self->per_process = 1;
    self->started = time (NULL);
    if (!self->profile_dir || !self->cluster_id || !self->profile ||
        !self->launcher || !self->command || !self->job || !self->nodes)
        bn_clusterrec_destroy (&self);
    return self;
}

void
bn_clusterrec_destroy (bn_clusterrec_t **self_p)
{
    assert (self_p);
    bn_clusterrec_t *self = *self_p;
    if (self) {
        free (self->profile_dir);
        free (self->cluster_id);
        free (self->profile);
        free (self->engines);
        free (self->launcher);
        free (self->command);
        free (self->job);
        free (self->nodes);
        free (self->sessions);
        for (size_t index = 0; index < self->hosts_size; index++)
            s_host_free (&self->hosts[index]);
        free (self->hosts);
        free (self);
        *self_p = NULL;
    }
}

//  The launcher's part of a record: launcher, command, job, nodes,
//  sessions and hosts. Returns 0, or -1 if it is malformed.
static int
s_load_launch (bn_clusterrec_t *self, json_t *root)
{
    const char *launcher = "local", *command = "", *job = "", *nodes = "";
    json_t *sessions = NULL, *hosts = NULL;
    if (json_unpack (root, "{s?s, s?s, s?s, s?s, s?o, s?o}", "launcher",
                     &launcher, "command", &command, "job", &job, "nodes",
                     &nodes, "sessions", &sessions, "hosts", &hosts) != 0)
        return -1;
    bn_clusterrec_set_launcher (self, launcher, command);
    bn_clusterrec_set_job (self, job);
    bn_clusterrec_set_nodes (self, nodes);
    size_t index;
    json_t *item;
    json_array_foreach (sessions, index, item)
    {
        json_int_t pid = 0, start = 0;
        if (json_unpack (item, "[II]", &pid, &start) != 0 ||
            bn_clusterrec_add_session (self, (pid_t)pid,
                                       (unsigned long long)start) != 0)
            return -1;
    }
    json_array_foreach (hosts, index, item)
    {
        bn_clusterrec_host_t host = {.step = "", .reason = "", .pids = ""};
        const char *state = "running";
        if (json_unpack (item,
                         "{s:s, s:i, s:i, s:i, s:i, s?s, s?i, s?s, s:s, "
                         "s?s}",
                         "name", &host.name, "rank", &host.rank, "pgid",
                         &host.pgid, "first", &host.first, "count", &host.count,
                         "pids", &host.pids, "node", &host.node, "step",
                         &host.step, "state", &state, "reason",
                         &host.reason) != 0)
            return -1;
        host.state = BN_HOST_FAILED + 1;
        for (int known = 0; known <= BN_HOST_FAILED; known++)
            if (strcmp (state, s_host_states[known]) == 0)
                host.state = (bn_host_state_t)known;
        if (host.state > BN_HOST_FAILED ||
            bn_clusterrec_add_host (self, &host) < 0)
            return -1;
    }
    return 0;
}

bn_clusterrec_t *
bn_clusterrec_load (const char *path)
{
    assert (path);
    json_error_t error;
    json_t *root = json_load_file (path, 0, &error);
    if (!root)
        return NULL;
    const char *profile_dir, *cluster_id, *profile = "";
    json_int_t n = 0, per_process = 1, started = 0;
    json_int_t supervisor = 0, controller = 0;
    json_int_t supervisor_start = 0, controller_start = 0;
    int daemonized = 0;
    json_t *engines = NULL;
    int rc = json_unpack_ex (
        root, &error, 0,
        "{s:s, s:s, s?s, s?I, s?I, s?b, s?I, s?I, s?I, s?I, s?I, s?o}",
        "profile_dir", &profile_dir, "cluster_id", &cluster_id, "profile",
        &profile, "n", &n, "engines_per_process", &per_process, "daemonized",
        &daemonized, "started", &started, "pgid", &supervisor,
        "supervisor_start", &supervisor_start, "controller_pid", &controller,
        "controller_start", &controller_start, "engine_procs", &engines);
    bn_clusterrec_t *self =
        rc == 0 ? bn_clusterrec_new (profile_dir, cluster_id) : NULL;
    if (self) {
        bn_clusterrec_set_profile (self, profile);
        bn_clusterrec_set_engines (self, (int)n, (int)per_process);
        self->daemonized = daemonized;
        self->started = (time_t)started;
        self->supervisor = (pid_t)supervisor;
        self->supervisor_start = (unsigned long long)supervisor_start;
        self->controller = (pid_t)controller;
        self->controller_start = (unsigned long long)controller_start;
        size_t index;
        json_t *item;
        json_array_foreach (engines, index, item)
        {
            json_int_t pid = 0, start = 0, first = 0, count = 0;
            if (json_unpack (item, "[IIII]", &pid, &start, &first, &count) !=
                    0 ||
                bn_clusterrec_add_engines (self, (pid_t)pid,
                                           (unsigned long long)start,
                                           (int)first, (int)count) != 0) {
                bn_clusterrec_destroy (&self);
                break;
            }
        }
    }
    if (self && s_load_launch (self, root) != 0)
        bn_clusterrec_destroy (&self);
    json_decref (root);
    return self;
}

int
bn_clusterrec_save (bn_clusterrec_t *self, const char *path)
{
    assert (self);
    assert (path);
    json_t *engines = json_array ();
    for (size_t index = 0; engines && index < self->engines_size; index++) {
        s_engine_proc_t *proc = &self->engines[index];
        json_array_append_new (engines,
                               json_pack ("[IIii]", (json_int_t)proc->pid,
                                          (json_int_t)proc->starttime,
                                          proc->first, proc->count));
    }
    json_t *root = json_pack (
        "{s:i, s:s, s:s, s:s, s:i, s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:o*}",
        "version", S_VERSION, "profile_dir", self->profile_dir, "cluster_id",
        self->cluster_id, "profile", self->profile, "n", self->n,
        "engines_per_process", self->per_process, "daemonized",
        self->daemonized, "started", (json_int_t)self->started, "pgid",
        (json_int_t)self->supervisor, "supervisor_start",
        (json_int_t)self->supervisor_start, "controller_pid",
        (json_int_t)self->controller, "controller_start",
        (json_int_t)self->controller_start, "engine_procs", engines);
    json_t *sessions = json_array ();
    for (size_t index = 0; sessions && index < self->sessions_size; index++)
        json_array_append_new (
            sessions, json_pack ("[II]", (json_int_t)self->sessions[index].pid,
                                 (json_int_t)self->sessions[index].starttime));
    json_t *hosts = json_array ();
    for (size_t index = 0; hosts && index < self->hosts_size; index++) {
        bn_clusterrec_host_t *host = &self->hosts[index];
        json_array_append_new (
            hosts,
            json_pack ("{s:s, s:i, s:i, s:i, s:i, s:s, s:i, s:s, s:s, s:s}",
                       "name", host->name, "rank", host->rank, "pgid",
                       host->pgid, "first", host->first, "count", host->count,
                       "pids", host->pids, "node", host->node, "step",
                       host->step, "state", s_host_states[host->state],
                       "reason", host->reason));
    }
    if (root &&
        (json_object_set_new (root, "launcher", json_string (self->launcher)) ||
         json_object_set_new (root, "command", json_string (self->command)) ||
         json_object_set_new (root, "job", json_string (self->job)) ||
         json_object_set_new (root, "nodes", json_string (self->nodes)) ||
         json_object_set_new (root, "sessions", sessions) ||
         json_object_set_new (root, "hosts", hosts))) {
        json_decref (root);
        return -1;
    }
    if (!root) {
        json_decref (sessions);
        json_decref (hosts);
        return -1;
    }
    char *temp = zsys_sprintf ("%s.%d.tmp", path, (int)getpid ());
    int rc = temp ? json_dump_file (root, temp, JSON_COMPACT) : -1;
    json_decref (root);
    if (rc == 0 && rename (temp, path) != 0)
        rc = -1;
    if (rc != 0 && temp)
        unlink (temp);
    zstr_free (&temp);
    return rc == 0 ? 0 : -1;
}

//  "<profile_dir>/pid/<prefix>[-<cluster_id>]<suffix>"
static char *
s_pid_path (const char *profile_dir, const char *prefix, const char *cluster_id,
            const char *suffix)
{
    assert (profile_dir);
    bool named = cluster_id && *cluster_id;
    return zsys_sprintf ("%s/pid/%s%s%s%s", profile_dir, prefix,
                         named ? "-" : "", named ? cluster_id : "", suffix);
}

char *
bn_clusterrec_path (const char *profile_dir, const char *cluster_id)
{
    return s_pid_path (profile_dir, S_PREFIX, cluster_id, ".json");
}

char *
bn_clusterrec_controller_pidfile (const char *profile_dir,
                                  const char *cluster_id)
{
    return s_pid_path (profile_dir, "banyan-controller", cluster_id, ".pid");
}

pid_t
bn_clusterrec_controller_pid (const char *profile_dir, const char *cluster_id)
{
    char *path = bn_clusterrec_controller_pidfile (profile_dir, cluster_id);
    FILE *file = path ? fopen (path, "r") : NULL;
    zstr_free (&path);
    if (!file)
        return 0;
    long pid = 0;
    if (fscanf (file, "%ld", &pid) != 1)
        pid = 0;
    fclose (file);
    bn_procinfo_t info;
    //  Linux truncates the name to 15 characters: "banyan-controll"
    if (pid <= 0 || !bn_proctable_alive ((pid_t)pid, 0) ||
        bn_proctable_stat ((pid_t)pid, &info) != 0 ||
        strncmp (info.comm, "banyan-control", 14) != 0)
        return 0;
    return (pid_t)pid;
}

static int
s_compare_strings (const char *a, const char *b)
{
    return strcmp (a, b);
}

zlist_t *
bn_clusterrec_ids (const char *profile_dir)
{
    zlist_t *ids = zlist_new ();
    if (!ids)
        return NULL;
    zlist_autofree (ids);
    char *folder = zsys_sprintf ("%s/pid", profile_dir);
    DIR *dir = folder ? opendir (folder) : NULL;
    zstr_free (&folder);
    if (!dir)
        return ids;
    struct dirent *entry;
    size_t prefix = strlen (S_PREFIX);
    while ((entry = readdir (dir))) {
        const char *name = entry->d_name;
        size_t length = strlen (name);
        if (strncmp (name, S_PREFIX, prefix) != 0 || length < prefix + 5 ||
            strcmp (name + length - 5, ".json") != 0)
            continue;
        const char *rest = name + prefix;
        size_t rest_length = length - prefix - 5;
        if (rest_length == 0)
            zlist_append (ids, "");
        else if (rest[0] == '-' && rest_length > 1) {
            char *id = strndup (rest + 1, rest_length - 1);
            if (id) {
                zlist_append (ids, id);
                free (id);
            }
        }
    }
    closedir (dir);
    zlist_sort (ids, (zlist_compare_fn *)s_compare_strings);
    return ids;
}

static void
s_replace (char **field, const char *value)
{
    char *copy = strdup (value ? value : "");
    if (copy) {
        free (*field);
        *field = copy;
    }
}

void
bn_clusterrec_set_profile (bn_clusterrec_t *self, const char *profile)
{
    assert (self);
    s_replace (&self->profile, profile);
}

void
bn_clusterrec_set_engines (bn_clusterrec_t *self, int n, int per_process)
{
    assert (self);
    self->n = n;
    self->per_process = per_process > 0 ? per_process : 1;
}

void
bn_clusterrec_set_daemonized (bn_clusterrec_t *self, bool daemonized)
{
    assert (self);
    self->daemonized = daemonized;
}

void
bn_clusterrec_set_supervisor (bn_clusterrec_t *self, pid_t pid,
                              unsigned long long starttime)
{
    assert (self);
    self->supervisor = pid;
    self->supervisor_start = starttime;
}

void
bn_clusterrec_set_controller (bn_clusterrec_t *self, pid_t pid,
                              unsigned long long starttime)
{
    assert (self);
    self->controller = pid;
    self->controller_start = starttime;
}

int
bn_clusterrec_add_engines (bn_clusterrec_t *self, pid_t pid,
                           unsigned long long starttime, int first, int count)
{
    assert (self);
    if (self->engines_size == self->engines_alloc) {
        size_t alloc = self->engines_alloc ? self->engines_alloc * 2 : 16;
        s_engine_proc_t *engines =
            realloc (self->engines, alloc * sizeof *engines);
        if (!engines)
            return -1;
        self->engines = engines;
        self->engines_alloc = alloc;
    }
    self->engines[self->engines_size++] =
        (s_engine_proc_t){pid, starttime, first, count};
    return 0;
}

void
bn_clusterrec_set_launcher (bn_clusterrec_t *self, const char *launcher,
                            const char *command)
{
    assert (self);
    s_replace (&self->launcher, launcher ? launcher : "local");
    s_replace (&self->command, command);
}

const char *
bn_clusterrec_launcher (bn_clusterrec_t *self)
{
    assert (self);
    return self->launcher;
}

const char *
bn_clusterrec_command (bn_clusterrec_t *self)
{
    assert (self);
    return self->command;
}

void
bn_clusterrec_set_job (bn_clusterrec_t *self, const char *job)
{
    assert (self);
    s_replace (&self->job, job);
}

const char *
bn_clusterrec_job (bn_clusterrec_t *self)
{
    assert (self);
    return self->job;
}

void
bn_clusterrec_set_nodes (bn_clusterrec_t *self, const char *nodes)
{
    assert (self);
    s_replace (&self->nodes, nodes);
}

const char *
bn_clusterrec_nodes (bn_clusterrec_t *self)
{
    assert (self);
    return self->nodes;
}

int
bn_clusterrec_add_session (bn_clusterrec_t *self, pid_t pid,
                           unsigned long long starttime)
{
    assert (self);
    s_session_t *sessions =
        realloc (self->sessions, (self->sessions_size + 1) * sizeof *sessions);
    if (!sessions)
        return -1;
    self->sessions = sessions;
    self->sessions[self->sessions_size++] = (s_session_t){pid, starttime};
    return 0;
}

size_t
bn_clusterrec_sessions (bn_clusterrec_t *self)
{
    assert (self);
    return self->sessions_size;
}

int
bn_clusterrec_session (bn_clusterrec_t *self, size_t index, pid_t *pid,
                       unsigned long long *starttime)
{
    assert (self);
    if (index >= self->sessions_size)
        return -1;
    if (pid)
        *pid = self->sessions[index].pid;
    if (starttime)
        *starttime = self->sessions[index].starttime;
    return 0;
}

int
bn_clusterrec_add_host (bn_clusterrec_t *self, const bn_clusterrec_host_t *host)
{
    assert (self);
    assert (host && host->name);
    bn_clusterrec_host_t copy = *host;
    copy.name = strdup (host->name);
    copy.pids = strdup (host->pids ? host->pids : "");
    copy.step = strdup (host->step ? host->step : "");
    copy.reason = strdup (host->reason ? host->reason : "");
    size_t index = 0;
    while (index < self->hosts_size &&
           !(self->hosts[index].rank == host->rank &&
             strcmp (self->hosts[index].name, host->name) == 0))
        index++;
    bn_clusterrec_host_t *hosts = self->hosts;
    if (index == self->hosts_size)
        hosts = realloc (self->hosts, (self->hosts_size + 1) * sizeof *hosts);
    if (!copy.name || !copy.pids || !copy.step || !copy.reason || !hosts) {
        s_host_free (&copy);
        return -1;
    }
    self->hosts = hosts;
    if (index == self->hosts_size)
        self->hosts_size++;
    else
        s_host_free (&self->hosts[index]);
    self->hosts[index] = copy;
    return (int)index;
}

size_t
bn_clusterrec_hosts (bn_clusterrec_t *self)
{
    assert (self);
    return self->hosts_size;
}

const bn_clusterrec_host_t *
bn_clusterrec_host (bn_clusterrec_t *self, size_t index)
{
    assert (self);
    return index < self->hosts_size ? &self->hosts[index] : NULL;
}

void
bn_clusterrec_set_host_state (bn_clusterrec_t *self, size_t index,
                              bn_host_state_t state, const char *reason)
{
    assert (self);
    if (index >= self->hosts_size)
        return;
    self->hosts[index].state = state;
    if (reason)
        s_replace (&self->hosts[index].reason, reason);
}

size_t
bn_clusterrec_hosts_in (bn_clusterrec_t *self, bn_host_state_t state)
{
    assert (self);
    size_t count = 0;
    for (size_t index = 0; index < self->hosts_size; index++)
        count += self->hosts[index].state == state;
    return count;
}

const char *
bn_clusterrec_host_state_name (bn_host_state_t state)
{
    return state <= BN_HOST_FAILED ? s_host_states[state] : "unknown";
}

const char *
bn_clusterrec_profile_dir (bn_clusterrec_t *self)
{
    assert (self);
    return self->profile_dir;
}

const char *
bn_clusterrec_cluster_id (bn_clusterrec_t *self)
{
    assert (self);
    return self->cluster_id;
}

const char *
bn_clusterrec_profile (bn_clusterrec_t *self)
{
    assert (self);
    return self->profile;
}

int
bn_clusterrec_n (bn_clusterrec_t *self)
{
    assert (self);
    return self->n;
}

int
bn_clusterrec_per_process (bn_clusterrec_t *self)
{
    assert (self);
    return self->per_process;
}

time_t
bn_clusterrec_started (bn_clusterrec_t *self)
{
    assert (self);
    return self->started;
}

pid_t
bn_clusterrec_pgid (bn_clusterrec_t *self)
{
    assert (self);
    return self->supervisor;
}

unsigned long long
bn_clusterrec_supervisor_start (bn_clusterrec_t *self)
{
    assert (self);
    return self->supervisor_start;
}

pid_t
bn_clusterrec_controller (bn_clusterrec_t *self)
{
    assert (self);
    return self->controller;
}

unsigned long long
bn_clusterrec_controller_start (bn_clusterrec_t *self)
{
    assert (self);
    return self->controller_start;
}

size_t
bn_clusterrec_engine_procs (bn_clusterrec_t *self)
{
    assert (self);
    return self->engines_size;
}

int
bn_clusterrec_engine_proc (bn_clusterrec_t *self, size_t index, pid_t *pid,
                           unsigned long long *starttime, int *first,
                           int *count)
{
    assert (self);
    if (index >= self->engines_size)
        return -1;
    s_engine_proc_t *proc = &self->engines[index];
    if (pid)
        *pid = proc->pid;
    if (starttime)
        *starttime = proc->starttime;
    if (first)
        *first = proc->first;
    if (count)
        *count = proc->count;
    return 0;
}

pid_t
bn_clusterrec_engine_pid (bn_clusterrec_t *self, int engine_id)
{
    assert (self);
    for (size_t index = 0; index < self->engines_size; index++) {
        s_engine_proc_t *proc = &self->engines[index];
        if (engine_id >= proc->first && engine_id < proc->first + proc->count)
            return proc->pid;
    }
    return 0;
}

const char *
bn_clusterrec_engine_host (bn_clusterrec_t *self, int engine_id, pid_t *pid)
{
    assert (self);
    for (size_t index = 0; index < self->hosts_size; index++) {
        bn_clusterrec_host_t *host = &self->hosts[index];
        if (host->state == BN_HOST_FAILED || engine_id < host->first ||
            engine_id >= host->first + host->count)
            continue;
        //  Its processes serve per_process engines each, in order
        long place = (engine_id - host->first) / self->per_process;
        const char *at = host->pids;
        while (place-- > 0 && at)
            if ((at = strchr (at, ',')))
                at++;
        if (pid)
            *pid = at && *at ? (pid_t)atol (at) : 0;
        return host->name;
    }
    return NULL;
}

bn_cluster_state_t
bn_clusterrec_state (bn_clusterrec_t *self, size_t *live_engine_procs)
{
    assert (self);
    size_t live = 0;
    for (size_t index = 0; index < self->engines_size; index++)
        if (bn_proctable_alive (self->engines[index].pid,
                                self->engines[index].starttime))
            live++;
    if (live_engine_procs)
        *live_engine_procs = live;
    for (size_t index = 0; index < self->sessions_size; index++)
        if (bn_proctable_alive (self->sessions[index].pid,
                                self->sessions[index].starttime))
            live++;
    if (self->controller &&
        bn_proctable_alive (self->controller, self->controller_start))
        return BN_CLUSTER_RUNNING;
    bool supervisor =
        self->supervisor &&
        bn_proctable_alive (self->supervisor, self->supervisor_start);
    if (supervisor && !self->controller)
        return BN_CLUSTER_STARTING;
    if (live || supervisor)
        return BN_CLUSTER_BROKEN;
    return BN_CLUSTER_STALE;
}

const char *
bn_clusterrec_state_name (bn_cluster_state_t state)
{
    switch (state) {
    case BN_CLUSTER_STARTING:
        return "starting";
    case BN_CLUSTER_RUNNING:
        return "running";
    case BN_CLUSTER_BROKEN:
        return "broken";
    default:
        return "stale";
    }
}

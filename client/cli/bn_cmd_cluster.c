/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_cluster: banyan cluster start, stop, list and clean.  */
#include "bn_cliclient.h"
#include "bn_clihelp.h"
#include "bn_climits.h"
#include "bn_cliopts.h"
#include "bn_clusterrec.h"
#include "bn_cmd.h"
#include "bn_connfile.h"
#include "bn_interrupt.h"
#include "bn_launch.h"
#include "bn_launcher.h"
#include "bn_limits.h"
#include "bn_path.h"
#include "bn_proctable.h"
#include "bn_progress.h"
#include "bn_topology.h"

#include "banyan.h"

#include <assert.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  Seconds to wait for the engines to register unless --timeout says
#define S_START_TIMEOUT 60.0
//  Seconds `cluster stop` waits before SIGKILL unless --timeout says: the
//  supervisor's own stop takes up to 7 s when processes linger
#define S_STOP_GRACE 10.0
//  The same for a remote cluster
#define S_REMOTE_STOP_GRACE 30.0

//  Operands where a command takes none are a usage error.
static int
s_no_operands (bn_cliopts_t *opts, int argc, char **argv, int first)
{
    if (first < argc) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'", argv[first]);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  cluster start

typedef struct {
    long n;
    long per_process; //  -1 if not given
    const char *depth;
    const char *ip;
    bool no_wait;
    bool daemonize;
    bool foreground;
    bool quiet;
    bool dry_run;
    const char *launcher;
    const char *hosts;
    const char *location;
    const char *batch_template;
    bn_launch_plan_t plan;
} s_start_args_t;

enum {
    S_OPT_DEPTH = 1,
    S_OPT_TOPOLOGY,
    S_OPT_TREE_MODE,
    S_OPT_FOLD,
    S_OPT_SCHEME,
    S_OPT_HWM,
    S_OPT_IP,
    S_OPT_PORTS,
    S_OPT_CURVE,
    S_OPT_NO_WAIT,
    S_OPT_DAEMONIZE,
    S_OPT_FOREGROUND,
    S_OPT_LAUNCHER,
    S_OPT_HOSTS,
    S_OPT_PER_HOST,
    S_OPT_MIN_HOSTS,
    S_OPT_SSH_CMD,
    S_OPT_MPIEXEC_CMD,
    S_OPT_REMOTE_PREFIX,
    S_OPT_ENGINE_CMD,
    S_OPT_BATCH_TEMPLATE,
    S_OPT_HOST_NODE,
    S_OPT_LOCATION,
    S_OPT_DRY_RUN,
    S_OPT_DB,
    S_OPT_NODB,
    S_OPT_RESTORE
};

static int
s_start_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_start_args_t *args = data;
    switch (opt) {
    case 'n':
        return bn_cliopts_int (opts, "-n", arg, 0, 1000000, &args->n);
    case 'k':
        return bn_cliopts_int (opts, "--engines-per-process", arg, 1, 1000000,
                               &args->per_process);
    case S_OPT_DEPTH:
        args->depth = arg;
        return bn_cliopts_set (opts, "--depth", "controller.depth", arg);
    case S_OPT_TOPOLOGY:
        return bn_cliopts_set (opts, "--topology", "controller.topology", arg);
    case S_OPT_FOLD:
        return bn_cliopts_set (opts, "--fold", "controller.fold", arg);
    case S_OPT_TREE_MODE:
        return bn_cliopts_set (opts, "--tree-mode", "controller.tree_mode",
                               arg);
    case S_OPT_SCHEME:
        return bn_cliopts_set (opts, "--scheme", "controller.scheme", arg);
    case S_OPT_HWM:
        return bn_cliopts_set (opts, "--hwm", "controller.task_hwm", arg);
    case S_OPT_IP:
        args->ip = arg;
        return bn_cliopts_set (opts, "--ip", "controller.ip", arg);
    case S_OPT_PORTS:
        return bn_cliopts_set (opts, "--ports", "controller.ports", arg);
    case S_OPT_CURVE:
        return bn_cliopts_set (opts, "--curve", "controller.curve", "true");
    case S_OPT_NO_WAIT:
        args->no_wait = true;
        return 0;
    case S_OPT_DAEMONIZE:
        args->daemonize = true;
        return 0;
    case S_OPT_FOREGROUND:
        args->foreground = true;
        return 0;
    case 'q':
        args->quiet = true;
        return 0;
    case S_OPT_LAUNCHER:
        args->launcher = arg;
        return 0;
    case S_OPT_HOSTS:
        args->hosts = arg;
        return 0;
    case S_OPT_PER_HOST: {
        long value;
        int rc = bn_cliopts_int (opts, "--engines-per-host", arg, 1, 1000000,
                                 &value);
        args->plan.per_host = (int)value;
        return rc;
    }
    case S_OPT_MIN_HOSTS: {
        long value;
        int rc = bn_cliopts_int (opts, "--min-hosts", arg, 1, 1000000, &value);
        args->plan.min_hosts = (int)value;
        return rc;
    }
    case S_OPT_SSH_CMD:
        args->plan.ssh_cmd = arg;
        return 0;
    case S_OPT_MPIEXEC_CMD:
        args->plan.mpiexec_cmd = arg;
        return 0;
    case S_OPT_REMOTE_PREFIX:
        args->plan.remote_prefix = arg;
        return 0;
    case S_OPT_ENGINE_CMD:
        args->plan.engine_cmd = arg;
        return 0;
    case S_OPT_BATCH_TEMPLATE:
        args->batch_template = arg;
        return 0;
    case S_OPT_HOST_NODE:
        args->plan.host_node = true;
        return 0;
    case S_OPT_LOCATION:
        args->location = arg;
        return bn_cliopts_set (opts, "--location", "controller.location", arg);
    case S_OPT_DRY_RUN:
        args->dry_run = true;
        return 0;
    case S_OPT_DB:
        return bn_cliopts_set (opts, "--db", "controller.db", arg);
    case S_OPT_NODB:
        return bn_cliopts_set (opts, "--nodb", "controller.db", "none");
    case S_OPT_RESTORE:
        return bn_cliopts_set (opts, "--restore", "controller.restore", "true");
    default:
        return -1;
    }
}

//  True for an address or name that only this host answers on.
static bool
s_loopback (const char *host)
{
    return strncmp (host, "127.", 4) == 0 || strcmp (host, "localhost") == 0 ||
           strcmp (host, "::1") == 0;
}

//  What --launcher and its options ask for, checked and completed in
//  args->plan. Returns 0, or -1 after a usage error.
static int
s_plan (bn_cliopts_t *opts, s_start_args_t *args, const bn_launch_ops_t **ops_p,
        zlist_t **hosts_p)
{
    const char *name = args->launcher ? args->launcher : "local";
    const bn_launch_ops_t *ops = bn_launch_find (name);
    if (!ops) {
        bn_cliopts_usage_error (opts, "--launcher: no launcher '%s' (%s)", name,
                                bn_launch_names ());
        return -1;
    }
    char error[512] = "";
    if (args->hosts) {
        *hosts_p = bn_launch_hosts (args->hosts, error, sizeof error);
        if (!*hosts_p) {
            bn_cliopts_usage_error (opts, "--hosts: %s", error);
            return -1;
        }
    }
    bn_launch_plan_t *plan = &args->plan;
    if (args->batch_template) {
        char *text = NULL;
        FILE *file = fopen (args->batch_template, "r");
        if (file) {
            size_t size = 0;
            if (getdelim (&text, &size, 0, file) < 0) {
                free (text);
                text = NULL;
            }
            fclose (file);
        }
        if (!text) {
            bn_cliopts_usage_error (opts, "--batch-template: cannot read %s",
                                    args->batch_template);
            return -1;
        }
        plan->batch_template = text;
    }
    plan->profile_dir = bn_cliopts_profile_dir (opts);
    plan->cluster_id = bn_cliopts_cluster_id (opts);
    plan->n = (int)args->n;
    plan->per_process =
        args->per_process > 0 ? (int)args->per_process : (ops->remote ? 0 : 1);
    plan->hosts = *hosts_p;
    if (ops->prepare (plan, error, sizeof error) != 0) {
        bn_cliopts_usage_error (opts, "%s", error);
        return -1;
    }
    //  Engines on other hosts cannot reach a loopback address
    const char *ip = bn_config_str (bn_cliopts_config (opts), "controller.ip");
    if (ops->remote && plan->nhosts > 0 && s_loopback (ip)) {
        const char *far = NULL;
        for (char *host = plan->hosts ? zlist_first (plan->hosts) : NULL;
             host && !far; host = zlist_next (plan->hosts))
            if (!s_loopback (host))
                far = host;
        if (far || !plan->hosts) {
            bn_cliopts_usage_error (
                opts,
                "the controller would listen on %s only, which engines on %s "
                "cannot reach: give --ip ADDR (an address of this host that "
                "they reach, or '*')",
                ip, far ? far : "other hosts");
            return -1;
        }
    }
    *ops_p = ops;
    return 0;
}

//  What the controller would refuse, or take its time to refuse, checked
//  before it is started: the broadcast tree's shape and the task records'
//  store. Returns 0, or the exit status after saying why.
static int
s_check_controller (bn_cliopts_t *opts, long n)
{
    bn_config_t *config = bn_cliopts_config (opts);
    const char *spec = bn_config_str (config, "controller.topology");
    char error[PATH_MAX + 256] = "";
    bn_topology_t *topology =
        bn_topology_new (spec, bn_config_int (config, "controller.depth"),
                         (int)n, error, sizeof error);
    if (!topology) {
        bn_cliopts_usage_error (
            opts, "%s: %s",
            streq (bn_config_source (config, "controller.topology"),
                   "command line")
                ? "--topology"
                : "controller.topology",
            error);
        return BN_EXIT_USAGE;
    }
    //  Every port it listens on from controller.ports
    int lowest, highest;
    int leaves = bn_topology_leaves (topology);
    int listening = BN_CONTROLLER_OWN_PORTS + 1 + leaves;
    bn_topology_destroy (&topology);
    if (bn_config_ports (config, "controller.ports", &lowest, &highest) &&
        highest - lowest + 1 < listening) {
        bn_cliopts_usage_error (
            opts,
            "--ports %d-%d holds %d ports; the controller listens on %d (%d "
            "of its own, the broadcast root and %d leaves)",
            lowest, highest, highest - lowest + 1, listening,
            BN_CONTROLLER_OWN_PORTS, leaves);
        return BN_EXIT_USAGE;
    }
    //  The controller keeps its records in memory when it cannot open the
    //  file: a start that asked for a file fails instead
    const char *db = bn_config_str (config, "controller.db");
    if (!streq (db, "memory") && !streq (db, "none") &&
        strncmp (db, "sqlite:", 7) != 0) {
        bn_cliopts_usage_error (
            opts, "--db takes memory, none or sqlite:PATH, not '%s'", db);
        return BN_EXIT_USAGE;
    }
    if (strncmp (db, "sqlite:", 7) != 0)
        return BN_EXIT_OK;
    const char *path = db + 7;
    if (!*path) {
        bn_cliopts_usage_error (opts, "--db sqlite: needs a file path");
        return BN_EXIT_USAGE;
    }
    struct stat info;
    char *folder = strdup (path);
    char *slash = folder ? strrchr (folder, '/') : NULL;
    if (slash == folder)
        slash[1] = 0;
    else if (slash)
        *slash = 0;
    const char *where = slash ? folder : ".";
    int rc = 0;
    if (stat (path, &info) == 0) {
        if (S_ISDIR (info.st_mode)) {
            snprintf (error, sizeof error,
                      "cannot keep task records in %s: it is a folder", path);
            rc = -1;
        } else if (access (path, R_OK | W_OK) != 0) {
            bn_launcher_path_error (path, "keep task records in", errno, error,
                                    sizeof error);
            rc = -1;
        }
    } else if (errno != ENOENT || access (where, W_OK | X_OK) != 0) {
        bn_launcher_path_error (path, "keep task records in", errno, error,
                                sizeof error);
        rc = -1;
    }
    free (folder);
    if (rc != 0)
        bn_cliopts_error (opts, "--db %s: %s", db, error);
    return rc ? BN_EXIT_FAILURE : BN_EXIT_OK;
}

//  Exit status 10 with the reason if a cluster or controller of this
//  profile and cluster id runs; else clear what a dead one left behind.
static int
s_check_not_running (bn_cliopts_t *opts)
{
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    const char *cluster_id = bn_cliopts_cluster_id (opts);
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    bn_cluster_state_t state =
        record ? bn_clusterrec_state (record, NULL) : BN_CLUSTER_STALE;
    pid_t pgid = record ? bn_clusterrec_pgid (record) : 0;
    bn_clusterrec_destroy (&record);
    if (state != BN_CLUSTER_STALE) {
        bn_cliopts_error (opts,
                          "a cluster is already %s in %s%s%s (process "
                          "group %d); stop it with: banyan cluster stop%s",
                          bn_clusterrec_state_name (state), profile_dir,
                          *cluster_id ? " with cluster id " : "", cluster_id,
                          (int)pgid, bn_cliopts_selection (opts));
        return BN_EXIT_ALREADY_RUNNING;
    }
    pid_t controller = bn_clusterrec_controller_pid (profile_dir, cluster_id);
    if (controller > 0) {
        bn_cliopts_error (opts, "a controller (pid %d) already runs in %s%s%s",
                          (int)controller, profile_dir,
                          *cluster_id ? " with cluster id " : "", cluster_id);
        return BN_EXIT_ALREADY_RUNNING;
    }
    //  (a controller that restores its engines reuses the files)
    bn_config_t *config = bn_cliopts_config (opts);
    bool reuse = bn_config_bool (config, "controller.reuse_files") ||
                 bn_config_bool (config, "controller.restore");
    bn_launcher_remove_files (profile_dir, cluster_id, reuse);
    return BN_EXIT_OK;
}

static void
s_print_started (bn_cliopts_t *opts, s_start_args_t *args,
                 const bn_launch_ops_t *ops, bn_launcher_t *launcher,
                 double elapsed)
{
    const char *selection = bn_cliopts_selection (opts);
    zlist_t *warnings = bn_launcher_warnings (launcher);
    for (char *warning = zlist_first (warnings); warning;
         warning = zlist_next (warnings))
        bn_cliopts_error (opts, "warning: %s", warning);
    int n = bn_launcher_engines (launcher);
    int hosts = bn_launcher_hosts (launcher);
    char where[96] = "";
    if (ops->remote)
        snprintf (where, sizeof where, " on %d host%s (%s;", hosts,
                  hosts == 1 ? "" : "s", ops->name);
    else
        snprintf (where, sizeof where, " (");
    if (args->no_wait)
        printf ("Cluster starting: %d engines%s process group %d); they "
                "register in the background.\n",
                n, where, (int)bn_launcher_pgid (launcher));
    else
        printf ("Cluster started: %d engine%s registered in %.2f s%s "
                "process group %d).\n",
                n, n == 1 ? "" : "s", elapsed, where,
                (int)bn_launcher_pgid (launcher));
    printf ("Connection file: %s\n", bn_cliopts_client_file (opts));
    printf ("Use it:   banyan px%s hostname\n", selection);
    printf ("Python:   ipp.Client(\"%s\")\n", bn_cliopts_client_file (opts));
    if (!args->foreground)
        printf ("Stop it:  banyan cluster stop%s\n", selection);
    fflush (stdout);
}

//  What the controller logged as errors, "reason; reason", or NULL: why
//  it would not start, in its own words.
static char *
s_controller_reason (const char *log)
{
    FILE *file = log ? fopen (log, "r") : NULL;
    char *reason = NULL, *line = NULL;
    size_t size = 0;
    ssize_t length;
    while (file && (length = getline (&line, &size, file)) > 0) {
        if (line[length - 1] == '\n')
            line[length - 1] = 0;
        const char *error = strstr (line, "] error: ");
        if (!error)
            continue;
        char *longer = zsys_sprintf ("%s%s%s", reason ? reason : "",
                                     reason ? "; " : "", error + 9);
        free (reason);
        reason = longer;
    }
    free (line);
    if (file)
        fclose (file);
    return reason;
}

//  Explain a failed start, with where to look.
static void
s_print_failure (bn_cliopts_t *opts, bn_launcher_t *launcher,
                 const char *problem)
{
    char *controller_log = bn_launcher_log_path (launcher, "controller");
    char *engines_log = bn_launcher_log_path (launcher, "engines");
    char *cluster_log = bn_launcher_log_path (launcher, "cluster");
    //  The controller that ended says why in its log
    char *reason = strncmp (problem, "banyan-controller ", 18) == 0
                       ? s_controller_reason (controller_log)
                       : NULL;
    if (reason)
        bn_cliopts_error (opts, "%s: %s; the cluster was stopped", problem,
                          reason);
    else
        bn_cliopts_error (opts, "%s; the cluster was stopped", problem);
    free (reason);
    fprintf (stderr, "  logs: %s\n        %s\n        %s\n",
             controller_log ? controller_log : "",
             engines_log ? engines_log : "", cluster_log ? cluster_log : "");
    free (controller_log);
    free (engines_log);
    free (cluster_log);
}

//  Wait until path exists, the supervisor reports a problem, the deadline
//  passes or the user interrupts. Returns 0, or -1 with *problem set.
static int
s_wait_for_file (bn_launcher_t *launcher, const char *path, double deadline,
                 const char **problem)
{
    while (access (path, F_OK) != 0) {
        if (bn_launcher_poll (launcher, 20) < 0) {
            *problem = bn_launcher_problem (launcher);
            return -1;
        }
        if (bn_interrupt_count ()) {
            *problem = "interrupted";
            return -1;
        }
        if (zclock_usecs () / 1e6 > deadline) {
            *problem = "the controller wrote no connection file in time";
            return -1;
        }
    }
    return 0;
}

//  Wait until the supervisor has started every engine process.
static int
s_wait_for_engine_procs (bn_launcher_t *launcher, double deadline,
                         const char **problem)
{
    while (true) {
        int rc = bn_launcher_poll (launcher, 20);
        if (rc > 0)
            return 0;
        if (rc < 0) {
            *problem = bn_launcher_problem (launcher);
            return -1;
        }
        if (bn_interrupt_count ()) {
            *problem = "interrupted";
            return -1;
        }
        if (zclock_usecs () / 1e6 > deadline) {
            *problem = "the engine processes were not started in time";
            return -1;
        }
    }
}

//  Wait until n engines are registered, showing "registered 37/64" on a
//  terminal. Returns 0, or -1 with the reason in problem.
static int
s_wait_for_registration (bn_cliopts_t *opts, bn_launcher_t *launcher, long n,
                         double deadline, char *problem, size_t problem_size)
{
    double left = deadline - zclock_usecs () / 1e6;
    int error = 0;
    bn_client_t *client = bn_client_new (bn_cliopts_client_file (opts),
                                         left > 0.1 ? left : 0.1, &error);
    if (!client) {
        snprintf (problem, problem_size, "cannot connect to the controller: %s",
                  bn_strerror (error));
        return -1;
    }
    bn_progress_t *progress = bn_progress_new (stderr, "registered", 0.0);
    int rc = -1;
    while (true) {
        size_t count = bn_client_engine_count (client);
        if (progress)
            bn_progress_update (progress, count, (size_t)n);
        int wait = bn_client_wait_for_engines (client, (size_t)n, 0.05);
        if (wait == 0) {
            rc = 0;
            break;
        }
        if (wait != BN_ETIMEDOUT) {
            snprintf (problem, problem_size, "the controller went away: %s",
                      bn_strerror (wait));
            break;
        }
        if (bn_launcher_poll (launcher, 0) < 0) {
            snprintf (problem, problem_size, "%s",
                      bn_launcher_problem (launcher));
            break;
        }
        if (bn_interrupt_count ()) {
            snprintf (problem, problem_size, "interrupted");
            break;
        }
        if (zclock_usecs () / 1e6 > deadline) {
            snprintf (problem, problem_size,
                      "only %zu of %ld engines registered in time",
                      bn_client_engine_count (client), n);
            break;
        }
    }
    bn_progress_destroy (&progress);
    bn_client_destroy (&client);
    return rc;
}

//  --foreground: stay until Ctrl-C or the cluster ends, then stop it.
static int
s_foreground (bn_cliopts_t *opts, bn_launcher_t *launcher)
{
    while (!bn_interrupt_count ()) {
        if (bn_launcher_poll (launcher, 200) < 0) {
            bn_cliopts_error (opts, "%s", bn_launcher_problem (launcher));
            bn_launcher_abort (launcher);
            return BN_EXIT_FAILURE;
        }
    }
    fprintf (stderr, "Stopping the cluster...\n");
    int rc = bn_launcher_stop (bn_cliopts_profile_dir (opts),
                               bn_cliopts_cluster_id (opts), S_STOP_GRACE,
                               false, NULL);
    bn_launcher_abort (launcher);
    return rc < 0 ? BN_EXIT_FAILURE : BN_EXIT_OK;
}

static int
s_start (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "cluster start", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    s_start_args_t args = {.n = -1, .per_process = -1};
    const bn_launch_ops_t *ops = NULL;
    zlist_t *hosts = NULL;
    zlist_t *engine_args = NULL;
    char *controller = NULL, *engine = NULL, *scheduler = NULL;
    static const struct option options[] = {
        {"n", required_argument, NULL, 'n'},
        {"engines-per-process", required_argument, NULL, 'k'},
        {"depth", required_argument, NULL, S_OPT_DEPTH},
        {"topology", required_argument, NULL, S_OPT_TOPOLOGY},
        {"tree-mode", required_argument, NULL, S_OPT_TREE_MODE},
        {"fold", required_argument, NULL, S_OPT_FOLD},
        {"scheme", required_argument, NULL, S_OPT_SCHEME},
        {"hwm", required_argument, NULL, S_OPT_HWM},
        {"ip", required_argument, NULL, S_OPT_IP},
        {"ports", required_argument, NULL, S_OPT_PORTS},
        {"curve", no_argument, NULL, S_OPT_CURVE},
        {"no-wait", no_argument, NULL, S_OPT_NO_WAIT},
        {"daemonize", no_argument, NULL, S_OPT_DAEMONIZE},
        {"foreground", no_argument, NULL, S_OPT_FOREGROUND},
        {"quiet", no_argument, NULL, 'q'},
        {"launcher", required_argument, NULL, S_OPT_LAUNCHER},
        {"hosts", required_argument, NULL, S_OPT_HOSTS},
        {"engines-per-host", required_argument, NULL, S_OPT_PER_HOST},
        {"min-hosts", required_argument, NULL, S_OPT_MIN_HOSTS},
        {"ssh-cmd", required_argument, NULL, S_OPT_SSH_CMD},
        {"mpiexec-cmd", required_argument, NULL, S_OPT_MPIEXEC_CMD},
        {"remote-prefix", required_argument, NULL, S_OPT_REMOTE_PREFIX},
        {"engine-cmd", required_argument, NULL, S_OPT_ENGINE_CMD},
        {"batch-template", required_argument, NULL, S_OPT_BATCH_TEMPLATE},
        {"host-node", no_argument, NULL, S_OPT_HOST_NODE},
        {"location", required_argument, NULL, S_OPT_LOCATION},
        {"dry-run", no_argument, NULL, S_OPT_DRY_RUN},
        {"db", required_argument, NULL, S_OPT_DB},
        {"nodb", no_argument, NULL, S_OPT_NODB},
        {"restore", no_argument, NULL, S_OPT_RESTORE},
        {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (opts, argc, argv, "n:k:q", options,
                                  s_start_option, &args);
    int status = BN_EXIT_USAGE;
    if (first == BN_CLIOPTS_DONE)
        status = BN_EXIT_OK;
    if (first < 0 || s_no_operands (opts, argc, argv, first) != 0)
        goto done;
    if (args.n < 0) {
        bn_cliopts_usage_error (opts, "-n N is required");
        goto done;
    }
    if (args.foreground && (args.daemonize || args.no_wait)) {
        bn_cliopts_usage_error (opts, "--foreground excludes --daemonize and "
                                      "--no-wait");
        goto done;
    }
    if (s_plan (opts, &args, &ops, &hosts) != 0)
        goto done;
    status = s_check_controller (opts, args.n);
    if (status != BN_EXIT_OK)
        goto done;
    if (!args.dry_run) {
        //  What stops the cluster half way is found before anything forks
        bn_climits_t limits;
        bn_climits_read (&limits);
        char limit[1024];
        if (bn_climits_check (&limits, args.n, args.plan.per_process,
                              !ops->remote, limit, sizeof limit) != 0) {
            bn_cliopts_error (opts, "%s", limit);
            status = BN_EXIT_FAILURE;
            goto done;
        }
        //  for the controller, which inherits it
        bn_climits_raise_files (bn_climits_controller_files (args.n));
    }
    if (!args.dry_run) {
        status = s_check_not_running (opts);
        if (status != BN_EXIT_OK)
            goto done;
    }

    status = BN_EXIT_FAILURE;
    controller = bn_path_program ("banyan-controller");
    engine = bn_path_program ("banyan-engine");
    scheduler =
        args.plan.host_node ? bn_path_program ("banyan-scheduler") : NULL;
    if (!controller || !engine || (args.plan.host_node && !scheduler)) {
        bn_cliopts_error (opts, "cannot find %s next to banyan or on PATH",
                          !controller ? "banyan-controller"
                          : !engine   ? "banyan-engine"
                                      : "banyan-scheduler");
        goto done;
    }
    bn_config_t *config = bn_cliopts_config (opts);
    bn_launcher_t *launcher = bn_launcher_new (bn_cliopts_profile_dir (opts),
                                               bn_cliopts_cluster_id (opts));
    engine_args = zlist_new ();
    if (!launcher || !engine_args) {
        bn_launcher_destroy (&launcher);
        goto done;
    }
    bn_launcher_set_programs (launcher, controller, engine);
    //  A profile given by folder has no name to show in `cluster list`
    bool by_folder = strstr (bn_cliopts_selection (opts), "--profile-dir");
    bn_launcher_set_profile (
        launcher, by_folder ? "" : bn_config_str (config, "profile.name"));
    bn_launcher_set_engines (launcher, (int)args.n,
                             args.plan.per_process > 0 ? args.plan.per_process
                                                       : 1);
    bn_launcher_set_daemonize (launcher, args.daemonize);
    char depth[16];
    snprintf (depth, sizeof depth, "%d",
              bn_config_int (config, "controller.depth"));
    bn_launcher_add_controller_arg (launcher, "--depth");
    bn_launcher_add_controller_arg (launcher, depth);
    char fold[16];
    snprintf (fold, sizeof fold, "%d",
              bn_config_int (config, "controller.fold"));
    bn_launcher_add_controller_arg (launcher, "--fold");
    bn_launcher_add_controller_arg (launcher, fold);
    //  for the auto topology, which shapes the tree for this many
    char engines[24];
    snprintf (engines, sizeof engines, "%d", (int)args.n);
    bn_launcher_add_controller_arg (launcher, "--engines");
    bn_launcher_add_controller_arg (launcher, engines);
    //  The broadcast tree's shape and mode, from the options or settings
    static const char *tree[][2] = {{"--topology", "controller.topology"},
                                    {"--tree-mode", "controller.tree_mode"},
                                    {"--scheme", "controller.scheme"}};
    for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++)
        if (bn_config_known (tree[i][1])) {
            bn_launcher_add_controller_arg (launcher, tree[i][0]);
            bn_launcher_add_controller_arg (launcher,
                                            bn_config_str (config, tree[i][1]));
        }
    if (*bn_config_str (config, "controller.location")) {
        bn_launcher_add_controller_arg (launcher, "--location");
        bn_launcher_add_controller_arg (
            launcher, bn_config_str (config, "controller.location"));
    }
    char task_hwm[16];
    snprintf (task_hwm, sizeof task_hwm, "%d",
              bn_config_int (config, "controller.task_hwm"));
    bn_launcher_add_controller_arg (launcher, "--hwm");
    bn_launcher_add_controller_arg (launcher, task_hwm);
    bn_launcher_add_controller_arg (launcher, "--ip");
    bn_launcher_add_controller_arg (launcher,
                                    bn_config_str (config, "controller.ip"));
    int lowest, highest;
    char ports[16];
    if (bn_config_ports (config, "controller.ports", &lowest, &highest)) {
        snprintf (ports, sizeof ports, "%d-%d", lowest, highest);
        bn_launcher_add_controller_arg (launcher, "--ports");
        bn_launcher_add_controller_arg (launcher, ports);
        //  and the host nodes, on the firewalled hosts too
        args.plan.ports = ports;
    }
    if (bn_config_bool (config, "controller.curve"))
        bn_launcher_add_controller_arg (launcher, "--curve");
    bn_launcher_add_controller_arg (launcher, "--db");
    bn_launcher_add_controller_arg (launcher,
                                    bn_config_str (config, "controller.db"));
    if (bn_config_bool (config, "controller.restore"))
        bn_launcher_add_controller_arg (launcher, "--restore");
    //  Both programs get what decided this command's settings
    const char *level = bn_config_str (config, "log.level");
    const char *config_file = bn_cliopts_config_file (opts);
    bn_launcher_add_controller_arg (launcher, "--log-level");
    bn_launcher_add_controller_arg (launcher, level);
    zlist_append (engine_args, "--log-level");
    zlist_append (engine_args, (void *)level);
    if (config_file) {
        bn_launcher_add_controller_arg (launcher, "--config");
        bn_launcher_add_controller_arg (launcher, config_file);
        zlist_append (engine_args, "--config");
        zlist_append (engine_args, (void *)config_file);
    }
    args.plan.engine = engine;
    args.plan.scheduler = scheduler;
    args.plan.log_level = level;
    args.plan.engine_args = engine_args;
    bn_launcher_set_launch (launcher, ops, &args.plan);
    double timeout = bn_cliopts_timeout_given (opts) ? bn_cliopts_timeout (opts)
                                                     : S_START_TIMEOUT;
    bn_launcher_set_timeout (launcher, timeout);

    if (args.dry_run) {
        status = bn_launcher_print (launcher, stdout) == 0 ? BN_EXIT_OK
                                                           : BN_EXIT_FAILURE;
        bn_launcher_destroy (&launcher);
        goto done;
    }
    bn_interrupt_install ();
    double start = zclock_usecs () / 1e6;
    double deadline = start + timeout;
    char folders[PATH_MAX + 256] = "";
    if (bn_launcher_make_folders (bn_cliopts_profile_dir (opts), folders,
                                  sizeof folders) != 0) {
        bn_cliopts_error (opts, "%s", folders);
        bn_launcher_destroy (&launcher);
        goto done;
    }
    if (bn_launcher_start (launcher) != 0) {
        bn_cliopts_error (opts, "cannot start the cluster: %s",
                          strerror (errno));
        bn_launcher_destroy (&launcher);
        goto done;
    }
    const char *problem = NULL;
    char reason[1024] = "";
    if (s_wait_for_file (launcher, bn_cliopts_client_file (opts), deadline,
                         &problem) == 0 &&
        s_wait_for_engine_procs (launcher, deadline, &problem) == 0) {
        if (!args.no_wait && s_wait_for_registration (
                                 opts, launcher, bn_launcher_engines (launcher),
                                 deadline, reason, sizeof reason) != 0)
            problem = reason;
    }
    if (problem) {
        if (bn_interrupt_count ()) {
            bn_launcher_abort (launcher);
            status = BN_EXIT_INTERRUPTED;
        } else {
            s_print_failure (opts, launcher, problem);
            bn_launcher_abort (launcher);
        }
    } else {
        if (!args.quiet || args.foreground)
            s_print_started (opts, &args, ops, launcher,
                             zclock_usecs () / 1e6 - start);
        status = args.foreground ? s_foreground (opts, launcher) : BN_EXIT_OK;
    }
    bn_launcher_destroy (&launcher);
done:
    free (controller);
    free (engine);
    free (scheduler);
    zlist_destroy (&hosts);
    zlist_destroy (&engine_args);
    free ((char *)args.plan.batch_template);
    bn_cliopts_destroy (&opts);
    return status;
}

// ---------------------------------------------------------------------------
//  cluster add

typedef struct {
    long n;
    long per_process;
    bool quiet;
} s_add_args_t;

static int
s_add_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_add_args_t *args = data;
    if (opt == 'n')
        return bn_cliopts_int (opts, "-n", arg, 1, 1000000, &args->n);
    if (opt == 'k')
        return bn_cliopts_int (opts, "--engines-per-process", arg, 1, 1000000,
                               &args->per_process);
    if (opt == 'q') {
        args->quiet = true;
        return 0;
    }
    return -1;
}

//  The first id past every engine the cluster started and every engine
//  registered, for added engines to ask for (the hub never gives an id
//  twice).
static int
s_next_id (bn_clusterrec_t *record, bn_client_t *client)
{
    int next = 0;
    size_t procs = bn_clusterrec_engine_procs (record);
    for (size_t index = 0; index < procs; index++) {
        int first, count;
        bn_clusterrec_engine_proc (record, index, NULL, NULL, &first, &count);
        if (first + count > next)
            next = first + count;
    }
    bn_idset_t *ids = bn_client_ids (client);
    for (int id = ids ? bn_idset_first (ids) : -1; id >= 0;
         id = bn_idset_next (ids, id))
        if (id + 1 > next)
            next = id + 1;
    bn_idset_destroy (&ids);
    return next;
}

//  An added engine process that ended, described in text; false if none.
static bool
s_added_ended (bn_cliopts_t *opts, int first, char *text, size_t size)
{
    char *path = bn_clusterrec_path (bn_cliopts_profile_dir (opts),
                                     bn_cliopts_cluster_id (opts));
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    size_t procs = record ? bn_clusterrec_engine_procs (record) : 0;
    bool ended = false;
    for (size_t index = 0; index < procs && !ended; index++) {
        pid_t pid;
        unsigned long long start;
        int from;
        bn_clusterrec_engine_proc (record, index, &pid, &start, &from, NULL);
        if (from >= first && !bn_proctable_alive (pid, start)) {
            snprintf (text, size, "banyan-engine (pid %d) ended", (int)pid);
            ended = true;
        }
    }
    bn_clusterrec_destroy (&record);
    return ended;
}

static int
s_add (int argc, char **argv)
{
    bn_cliopts_t *opts =
        bn_cliopts_new ("cluster add", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    s_add_args_t args = {-1, 1, false};
    static const struct option options[] = {
        {"n", required_argument, NULL, 'n'},
        {"engines-per-process", required_argument, NULL, 'k'},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (opts, argc, argv, "n:k:q", options,
                                  s_add_option, &args);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    bn_clusterrec_t *record = NULL;
    bn_client_t *client = NULL;
    if (first < 0 || s_no_operands (opts, argc, argv, first) != 0)
        goto done;
    if (args.n < 1) {
        bn_cliopts_usage_error (opts, "-n N is required");
        goto done;
    }
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    const char *cluster_id = bn_cliopts_cluster_id (opts);
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    bn_cluster_state_t state =
        record ? bn_clusterrec_state (record, NULL) : BN_CLUSTER_STALE;
    if (state == BN_CLUSTER_STALE || state == BN_CLUSTER_BROKEN) {
        if (!bn_cliclient_error_other_clusters (opts))
            bn_cliopts_error (opts,
                              "no cluster that 'banyan cluster start' "
                              "started is running in %s%s%s",
                              profile_dir,
                              *cluster_id ? " with cluster id " : "",
                              cluster_id);
        status = BN_EXIT_NO_CLUSTER;
        goto done;
    }
    status = BN_EXIT_FAILURE;
    if (strcmp (bn_clusterrec_launcher (record), "local") != 0) {
        bn_cliopts_error (opts,
                          "only a cluster of the local launcher takes more "
                          "engines; this one's is %s",
                          bn_clusterrec_launcher (record));
        goto done;
    }
    //  The controller with them all, and the added processes
    bn_climits_t limits;
    bn_climits_read (&limits);
    char problem[1024];
    if (bn_climits_check (&limits, bn_clusterrec_n (record) + args.n, 1, false,
                          problem, sizeof problem) != 0 ||
        bn_climits_check (&limits, args.n, (int)args.per_process, true, problem,
                          sizeof problem) != 0) {
        bn_cliopts_error (opts, "%s", problem);
        goto done;
    }
    client = bn_cliclient_connect (opts, &status);
    if (!client)
        goto done;
    status = BN_EXIT_FAILURE;
    size_t before = bn_client_engine_count (client);
    int first_id = s_next_id (record, client);
    double start = zclock_usecs () / 1e6;
    if (bn_launcher_add (profile_dir, cluster_id, (int)args.n,
                         (int)args.per_process, first_id, problem,
                         sizeof problem) != 0) {
        bn_cliopts_error (opts, "%s", problem);
        goto done;
    }
    double timeout = bn_cliopts_timeout_given (opts) ? bn_cliopts_timeout (opts)
                                                     : S_START_TIMEOUT;
    bn_interrupt_install ();
    bn_progress_t *progress = bn_progress_new (stderr, "registered", 0.0);
    int rc = BN_ETIMEDOUT;
    while (rc == BN_ETIMEDOUT) {
        if (progress)
            bn_progress_update (progress,
                                bn_client_engine_count (client) - before,
                                (size_t)args.n);
        rc = bn_client_wait_for_engines (client, before + (size_t)args.n, 0.1);
        if (rc != BN_ETIMEDOUT)
            break;
        if (s_added_ended (opts, first_id, problem, sizeof problem) ||
            bn_interrupt_count () || zclock_usecs () / 1e6 - start > timeout)
            break;
    }
    bn_progress_destroy (&progress);
    size_t now = bn_client_engine_count (client);
    if (rc == 0 && args.quiet)
        status = BN_EXIT_OK;
    else if (rc == 0) {
        printf ("Added %ld engine%s (ids from %d) in %.2f s; the cluster has "
                "%zu.\n",
                args.n, args.n == 1 ? "" : "s", first_id,
                zclock_usecs () / 1e6 - start, now);
        status = BN_EXIT_OK;
    } else if (bn_interrupt_count ())
        status = BN_EXIT_INTERRUPTED;
    else {
        char *log =
            bn_launcher_log_path_of (profile_dir, cluster_id, "engines");
        bn_cliopts_error (
            opts,
            "%s: %zu of the %ld engines added registered (see "
            "%s); 'banyan cluster stop%s' stops them with the "
            "cluster",
            rc == BN_ETIMEDOUT
                ? (s_added_ended (opts, first_id, problem, sizeof problem)
                       ? problem
                       : "not in time")
                : bn_strerror (rc),
            now > before ? now - before : 0, args.n,
            log ? log : "the engines log", bn_cliopts_selection (opts));
        free (log);
    }
done:
    bn_client_destroy (&client);
    bn_clusterrec_destroy (&record);
    bn_cliopts_destroy (&opts);
    return status;
}

// ---------------------------------------------------------------------------
//  cluster stop

static int
s_quiet_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    if (opt != 'q')
        return -1;
    *(bool *)data = true;
    return 0;
}

static const struct option s_quiet_options[] = {
    {"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0}};

//  Parse the options of a command that takes only --quiet and the cluster
//  options. On success *opts_p is set; otherwise it stays NULL and the
//  exit status is returned (0 after --help or --version).
static int
s_quiet_command (const char *name, int argc, char **argv, bn_cliopts_t **opts_p,
                 bool *quiet)
{
    bn_cliopts_t *opts =
        bn_cliopts_new (name, BN_CLIOPTS_CLUSTER | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = bn_cliopts_parse (opts, argc, argv, "q", s_quiet_options,
                                  s_quiet_option, quiet);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first < 0 || s_no_operands (opts, argc, argv, first) != 0) {
        bn_cliopts_destroy (&opts);
        return status;
    }
    *opts_p = opts;
    return BN_EXIT_OK;
}

static int
s_stop (int argc, char **argv)
{
    bool quiet = false;
    bn_cliopts_t *opts = NULL;
    int status = s_quiet_command ("cluster stop", argc, argv, &opts, &quiet);
    if (!opts)
        return status;
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    const char *cluster_id = bn_cliopts_cluster_id (opts);
    double grace = bn_cliopts_timeout_given (opts) ? bn_cliopts_timeout (opts)
                                                   : S_STOP_GRACE;
    //  A remote cluster's supervisor ends its hosts first, which may take
    //  a while (an ssh kill, scancel)
    char *path = bn_clusterrec_path (profile_dir, cluster_id);
    bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
    free (path);
    if (record && !bn_cliopts_timeout_given (opts) &&
        strcmp (bn_clusterrec_launcher (record), "local") != 0)
        grace = S_REMOTE_STOP_GRACE;
    bn_clusterrec_destroy (&record);
    bool reuse =
        bn_config_bool (bn_cliopts_config (opts), "controller.reuse_files");
    int count = 0;
    int rc = bn_launcher_stop (profile_dir, cluster_id, grace, reuse, &count);
    const char *which = *cluster_id ? " with cluster id " : "";
    if (rc == BN_LAUNCHER_STOPPED) {
        if (!quiet)
            printf ("Cluster stopped (%d process%s).\n", count,
                    count == 1 ? "" : "es");
        status = BN_EXIT_OK;
    } else if (rc == BN_LAUNCHER_NOT_RUNNING) {
        bn_cliopts_error (opts,
                          "the cluster in %s%s%s was not running; removed "
                          "its stale files",
                          profile_dir, which, cluster_id);
        status = BN_EXIT_ALREADY_STOPPED;
    } else if (rc == BN_LAUNCHER_NO_CLUSTER) {
        pid_t controller =
            bn_clusterrec_controller_pid (profile_dir, cluster_id);
        if (controller > 0)
            bn_cliopts_error (opts,
                              "no cluster was started in %s%s%s, but a "
                              "controller runs there (pid %d): it was not "
                              "started by 'banyan cluster start'",
                              profile_dir, which, cluster_id, (int)controller);
        else if (!bn_cliclient_error_other_clusters (opts))
            bn_cliopts_error (opts, "no cluster is running in %s%s%s",
                              profile_dir, which, cluster_id);
        status = BN_EXIT_ALREADY_STOPPED;
    } else {
        bn_cliopts_error (opts, "some processes of the cluster would not end");
        status = BN_EXIT_FAILURE;
    }
    bn_cliopts_destroy (&opts);
    return status;
}

// ---------------------------------------------------------------------------
//  cluster list

//  Profile folders to look at: the one given, else every profile_* folder
//  under profile.dir_root. A list of strings the caller destroys.
static zlist_t *
s_profile_dirs (bn_cliopts_t *opts)
{
    zlist_t *dirs = zlist_new ();
    if (!dirs)
        return NULL;
    zlist_autofree (dirs);
    if (bn_cliopts_profile_given (opts)) {
        zlist_append (dirs, (void *)bn_cliopts_profile_dir (opts));
        return dirs;
    }
    //  The root is the folder of any profile
    char *some = bn_config_profile_dir (bn_cliopts_config (opts), "x");
    char *slash = some ? strrchr (some, '/') : NULL;
    if (!slash) {
        free (some);
        return dirs;
    }
    *slash = 0;
    DIR *dir = opendir (*some ? some : "/");
    struct dirent *entry;
    while (dir && (entry = readdir (dir)))
        if (strncmp (entry->d_name, "profile_", 8) == 0) {
            char *path = zsys_sprintf ("%s/%s", some, entry->d_name);
            if (path && zsys_file_exists (path))
                zlist_append (dirs, path);
            free (path);
        }
    if (dir)
        closedir (dir);
    free (some);
    zlist_sort (dirs, (zlist_compare_fn *)strcmp);
    return dirs;
}

//  Cluster ids of controller pid files in profile_dir/pid.
static zlist_t *
s_controller_ids (const char *profile_dir)
{
    zlist_t *ids = zlist_new ();
    if (!ids)
        return NULL;
    zlist_autofree (ids);
    char *folder = zsys_sprintf ("%s/pid", profile_dir);
    DIR *dir = folder ? opendir (folder) : NULL;
    free (folder);
    struct dirent *entry;
    const char *prefix = "banyan-controller";
    size_t prefix_size = strlen (prefix);
    while (dir && (entry = readdir (dir))) {
        const char *name = entry->d_name;
        size_t length = strlen (name);
        if (strncmp (name, prefix, prefix_size) != 0 ||
            length < prefix_size + 4 || strcmp (name + length - 4, ".pid") != 0)
            continue;
        if (length == prefix_size + 4)
            zlist_append (ids, "");
        else if (name[prefix_size] == '-' && length > prefix_size + 5) {
            char *id =
                strndup (name + prefix_size + 1, length - prefix_size - 5);
            if (id)
                zlist_append (ids, id);
            free (id);
        }
    }
    if (dir)
        closedir (dir);
    return ids;
}

//  Where a cluster's engines run, for `cluster list`: "-" for a local one;
//  the hosts that run them, those lost or failed, the Slurm job.
static void
s_list_hosts (bn_clusterrec_t *record, char *text, size_t size)
{
    snprintf (text, size, "-");
    if (strcmp (bn_clusterrec_launcher (record), "local") == 0)
        return;
    size_t used = 0;
    text[0] = 0;
    const bn_host_state_t order[] = {BN_HOST_RUNNING, BN_HOST_ENDED,
                                     BN_HOST_LOST, BN_HOST_FAILED};
    //  In rank order, whatever order they reported in
    size_t count = bn_clusterrec_hosts (record);
    size_t *order_of = calloc (count + 1, sizeof *order_of);
    for (size_t index = 0; order_of && index < count; index++) {
        size_t at = index;
        while (at > 0 && bn_clusterrec_host (record, order_of[at - 1])->rank >
                             bn_clusterrec_host (record, index)->rank) {
            order_of[at] = order_of[at - 1];
            at--;
        }
        order_of[at] = index;
    }
    const char *step = "";
    for (size_t which = 0; order_of && which < 4; which++) {
        bool first = true;
        for (size_t place = 0; place < count; place++) {
            const bn_clusterrec_host_t *host =
                bn_clusterrec_host (record, order_of[place]);
            if (host->state != order[which])
                continue;
            if (*host->step)
                step = host->step;
            const char *lead = first ? (used ? " " : "") : ",";
            if (first && order[which] != BN_HOST_RUNNING)
                used += (size_t)snprintf (
                    text + used, used < size ? size - used : 0, "%s%s:", lead,
                    bn_clusterrec_host_state_name (order[which]));
            else
                used += (size_t)snprintf (
                    text + used, used < size ? size - used : 0, "%s", lead);
            used += (size_t)snprintf (
                text + used, used < size ? size - used : 0, "%s", host->name);
            first = false;
        }
    }
    free (order_of);
    const char *job = bn_clusterrec_job (record);
    const char *nodes = bn_clusterrec_nodes (record);
    if (*job)
        used += (size_t)snprintf (text + used, used < size ? size - used : 0,
                                  "%sjob %s%s%s", used ? " " : "", job,
                                  *nodes ? ": " : "", nodes);
    else if (*step)
        used += (size_t)snprintf (text + used, used < size ? size - used : 0,
                                  " (step %s)", step);
    if (!used)
        snprintf (text, size, "-");
}

static void
s_list_profile (const char *profile_dir, bool *any)
{
    zlist_t *ids = bn_clusterrec_ids (profile_dir);
    for (char *id = ids ? zlist_first (ids) : NULL; id; id = zlist_next (ids)) {
        char *path = bn_clusterrec_path (profile_dir, id);
        bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
        free (path);
        if (!record)
            continue;
        size_t live = 0;
        bn_cluster_state_t state = bn_clusterrec_state (record, &live);
        char procs[32], started[32] = "-", hosts[256];
        snprintf (procs, sizeof procs, "%zu/%zu", live,
                  bn_clusterrec_engine_procs (record));
        bool local = strcmp (bn_clusterrec_launcher (record), "local") == 0;
        if (!local)
            snprintf (procs, sizeof procs, "-");
        s_list_hosts (record, hosts, sizeof hosts);
        time_t when = bn_clusterrec_started (record);
        struct tm tm;
        if (when && localtime_r (&when, &tm))
            strftime (started, sizeof started, "%Y-%m-%d %H:%M:%S", &tm);
        const char *profile = bn_clusterrec_profile (record);
        printf ("%-16s %-16s %-8s %7d %9s %7d  %-19s  %-8s %s\n",
                *profile ? profile : profile_dir, *id ? id : "''",
                bn_clusterrec_state_name (state), bn_clusterrec_n (record),
                procs, (int)bn_clusterrec_pgid (record), started,
                bn_clusterrec_launcher (record), hosts);
        *any = true;
        bn_clusterrec_destroy (&record);
    }
    //  Controllers started by hand have a pid file but no record
    zlist_t *controllers = s_controller_ids (profile_dir);
    for (char *id = controllers ? zlist_first (controllers) : NULL; id;
         id = zlist_next (controllers)) {
        char *path = bn_clusterrec_path (profile_dir, id);
        bool recorded = path && access (path, F_OK) == 0;
        free (path);
        if (recorded || bn_clusterrec_controller_pid (profile_dir, id) <= 0)
            continue;
        printf ("%-16s %-16s %-8s %7s %9s %7s  %-19s  %-8s %s\n", profile_dir,
                *id ? id : "''", "running", "-", "-", "-", "-", "-",
                "(controller only)");
        *any = true;
    }
    zlist_destroy (&controllers);
    zlist_destroy (&ids);
}

static int
s_list (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "cluster list", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = bn_cliopts_parse (opts, argc, argv, "", NULL, NULL, NULL);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0 && s_no_operands (opts, argc, argv, first) == 0) {
        zlist_t *dirs = s_profile_dirs (opts);
        printf ("%-16s %-16s %-8s %7s %9s %7s  %-19s  %-8s %s\n", "PROFILE",
                "CLUSTER ID", "STATE", "ENGINES", "PROCESSES", "PGID",
                "STARTED", "LAUNCHER", "HOSTS");
        bool any = false;
        for (char *dir = dirs ? zlist_first (dirs) : NULL; dir;
             dir = zlist_next (dirs))
            s_list_profile (dir, &any);
        zlist_destroy (&dirs);
        status = BN_EXIT_OK;
    }
    bn_cliopts_destroy (&opts);
    return status;
}

// ---------------------------------------------------------------------------
//  cluster clean

static void
s_remove (const char *path, bool quiet, int *removed)
{
    if (path && unlink (path) == 0) {
        (*removed)++;
        if (!quiet)
            printf ("removed %s\n", path);
    }
}

//  Remove every file of a stale cluster id: record, pid file, connection
//  files, logs.
static void
s_clean_id (const char *profile_dir, const char *id, bool quiet, int *removed)
{
    char *paths[9] = {NULL};
    bool named = *id;
    paths[0] = bn_clusterrec_path (profile_dir, id);
    paths[7] = bn_launcher_batch_path (profile_dir, id);
    paths[1] = bn_clusterrec_controller_pidfile (profile_dir, id);
    paths[2] = bn_connfile_path (profile_dir, id, BN_CONNFILE_CLIENT);
    paths[3] = bn_connfile_path (profile_dir, id, BN_CONNFILE_ENGINE);
    const char *logs[] = {"cluster", "controller", "engines"};
    for (int index = 0; index < 3; index++)
        paths[4 + index] =
            zsys_sprintf ("%s/log/banyan-%s%s%s.log", profile_dir, logs[index],
                          named ? "-" : "", named ? id : "");
    for (int index = 0; index < 8; index++) {
        s_remove (paths[index], quiet, removed);
        free (paths[index]);
    }
}

//  Cluster ids of the connection files in profile_dir/security.
static void
s_connfile_ids (const char *profile_dir, zlist_t *ids)
{
    char *folder = zsys_sprintf ("%s/security", profile_dir);
    DIR *dir = folder ? opendir (folder) : NULL;
    free (folder);
    struct dirent *entry;
    const char *suffixes[] = {"-client.json", "-engine.json"};
    while (dir && (entry = readdir (dir))) {
        const char *name = entry->d_name;
        size_t length = strlen (name);
        if (strncmp (name, "ipcontroller", 12) != 0)
            continue;
        for (int index = 0; index < 2; index++) {
            size_t suffix = strlen (suffixes[index]);
            if (length < 12 + suffix ||
                strcmp (name + length - suffix, suffixes[index]) != 0)
                continue;
            if (length == 12 + suffix)
                zlist_append (ids, "");
            else if (name[12] == '-' && length > 13 + suffix) {
                char *id = strndup (name + 13, length - 13 - suffix);
                if (id)
                    zlist_append (ids, id);
                free (id);
            }
        }
    }
    if (dir)
        closedir (dir);
}

static int
s_clean (int argc, char **argv)
{
    bool quiet = false;
    bn_cliopts_t *opts = NULL;
    int status = s_quiet_command ("cluster clean", argc, argv, &opts, &quiet);
    if (!opts)
        return status;
    const char *profile_dir = bn_cliopts_profile_dir (opts);
    //  Every cluster id that left a trace: records, pid files, connection
    //  files
    zlist_t *ids = bn_clusterrec_ids (profile_dir);
    zlist_t *more = s_controller_ids (profile_dir);
    if (ids && more)
        for (char *id = zlist_first (more); id; id = zlist_next (more))
            zlist_append (ids, id);
    if (ids)
        s_connfile_ids (profile_dir, ids);
    zlist_destroy (&more);
    zhashx_t *done = zhashx_new ();
    int removed = 0, running = 0;
    for (char *id = ids ? zlist_first (ids) : NULL; id && done;
         id = zlist_next (ids)) {
        if (zhashx_lookup (done, id))
            continue;
        zhashx_insert (done, id, (void *)1);
        char *path = bn_clusterrec_path (profile_dir, id);
        bn_clusterrec_t *record = path ? bn_clusterrec_load (path) : NULL;
        free (path);
        bool alive = (record &&
                      bn_clusterrec_state (record, NULL) != BN_CLUSTER_STALE) ||
                     bn_clusterrec_controller_pid (profile_dir, id) > 0;
        bn_clusterrec_destroy (&record);
        if (alive)
            running++;
        else
            s_clean_id (profile_dir, id, quiet, &removed);
    }
    zhashx_destroy (&done);
    zlist_destroy (&ids);
    if (!quiet) {
        if (running)
            printf ("left %d running cluster%s alone\n", running,
                    running == 1 ? "" : "s");
        if (!removed)
            printf ("nothing to clean in %s\n", profile_dir);
    }
    bn_cliopts_destroy (&opts);
    return BN_EXIT_OK;
}

// ---------------------------------------------------------------------------

int
bn_cmd_cluster (int argc, char **argv)
{
    assert (argc >= 1);
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (!sub || strcmp (sub, "-h") == 0 || strcmp (sub, "--help") == 0) {
        bn_clihelp_print ("cluster", sub ? stdout : stderr);
        return sub ? BN_EXIT_OK : BN_EXIT_USAGE;
    }
    if (strcmp (sub, "--version") == 0) {
        bn_clihelp_version (stdout);
        return BN_EXIT_OK;
    }
    //  The subcommand's own argv: argv[0] names it
    char *name = zsys_sprintf ("cluster %s", sub);
    argv[1] = name;
    int status;
    if (strcmp (sub, "start") == 0)
        status = s_start (argc - 1, argv + 1);
    else if (strcmp (sub, "stop") == 0)
        status = s_stop (argc - 1, argv + 1);
    else if (strcmp (sub, "add") == 0)
        status = s_add (argc - 1, argv + 1);
    else if (strcmp (sub, "list") == 0)
        status = s_list (argc - 1, argv + 1);
    else if (strcmp (sub, "clean") == 0)
        status = s_clean (argc - 1, argv + 1);
    else {
        fprintf (stderr,
                 "banyan cluster: unknown command '%s'\n"
                 "Try 'banyan cluster --help' for more information.\n",
                 sub);
        status = BN_EXIT_USAGE;
    }
    argv[1] = (char *)sub;
    free (name);
    return status;
}

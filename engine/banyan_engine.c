/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan-engine: run N engines of a banyan or IPython Parallel controller
    in one process (options, settings, logging; the work is in
    bn_engine_actor).  */
#include "bn_args.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_engine_actor.h"
#include "bn_log.h"
#include "bn_malloc.h"
#include "bn_shell.h"
#include "bn_spawner.h"

#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_FILE_WAIT_MS 10000 //  as ipengine's wait_for_url_file
#define S_STOP_WAIT_MS 5000  //  for the engines to unregister on a signal
//  Engines in a process from which commands start from a helper process
//  (bn_spawner): a start through it takes 0.86 ms against posix_spawn's
//  0.20 ms in a small idle process, and saves about 0.17 ms of CPU per
//  start in a process of 256 engines (2,070 descriptors)
#define S_SPAWNER_MIN_COUNT 128

static void
s_usage (FILE *out)
{
    fprintf (
        out,
        "Usage: banyan-engine [OPTIONS]\n"
        "\n"
        "Run engines for a banyan or IPython Parallel controller. Each engine\n"
        "registers, answers heartbeats and serves requests: execute runs the\n"
        "code as a /bin/sh -c command line (its output is streamed to the\n"
        "client), apply runs a named C function (echo, noop, sleep, sum, len,\n"
        "checksum, getpid, hostname, time, or one from a plugin), push and\n"
        "pull keep named values per engine.\n"
        "\n"
        "Where the controller is (the first that is given):\n"
        "  -f, --file PATH         engine connection file "
        "(ipcontroller-engine.json)\n"
        "      --profile-dir DIR   use DIR/security/ipcontroller[-ID]-"
        "engine.json,\n"
        "                          waiting up to 10 s for it to appear\n"
        "      --profile NAME      the same in the profile NAME "
        "(profile.name)\n"
        "      --cluster-id ID     cluster id in the file name (cluster.id)\n"
        "  IPP_CONNECTION_INFO or BANYAN_CONNECTION_INFO: the file's JSON "
        "itself\n"
        "  otherwise the default profile's file\n"
        "\n"
        "Engines:\n"
        "  -n, --count N           engines in this process, one thread "
        "(engine.count)\n"
        "      --id K              ask for id K (with --count: K, K+1, ...)\n"
        "      --plugin PATH.so    load a function plugin; repeatable "
        "(engine.plugins)\n"
        "      --work-dir DIR      folder commands run in (default: current)\n"
        "\n"
        "General:\n"
        "  -c, --config FILE       settings file (ZPL, see conf/banyan.conf)\n"
        "      --log-level LEVEL   error, warn, info or debug (log.level)\n"
        "  -h, --help              show this help and exit\n"
        "  -V, --version           show the version and exit\n"
        "\n"
        "Settings: built-in defaults < --config file < BANYAN_* environment "
        "<\n"
        "options. Engine settings: engine.timeout (time without a "
        "heartbeat\n"
        "before an engine gives up), engine.registration_timeout,\n"
        "engine.request_time_limit (time a request may run; a request's\n"
        "metadata \"time_limit\" may lower it), engine.heartbeat_misses,\n"
        "engine.abort_grace (an aborted command gets SIGINT, then SIGTERM,\n"
        "then SIGKILL, this long apart).\n"
        "Times are durations (30s, 500ms, 2m); a bare number is seconds.\n"
        "\n"
        "A command that fails gets an error reply: CalledProcessError with\n"
        "the exit status in content.returncode (negative: killed by that\n"
        "signal), or TimeoutExpired. Commands see BANYAN_ENGINE_ID and\n"
        "BANYAN_ENGINE_UUID in their environment. In a process of 128 or\n"
        "more engines they are started by a small helper process,\n"
        "banyan-spawner, forked at start, as children of this process\n"
        "(posix_spawn from a process that holds thousands of descriptors\n"
        "copies and closes them all for each command).\n"
        "\n"
        "Exit status: 0 after shutdown or a signal, 1 if the controller is\n"
        "gone or on a start-up error, 2 on a usage error, 255 if "
        "registration\n"
        "failed.\n"
        "\n"
        "Examples:\n"
        "  banyan-engine --file ~/.ipython/profile_default/security/"
        "ipcontroller-engine.json\n"
        "  banyan-engine --profile-dir /tmp/prof --count 64\n"
        "  banyan-engine --profile-dir /tmp/prof --cluster-id abc --id 0 "
        "--count 4\n"
        "  banyan-engine -f engine.json --plugin ./bn_plugin_example.so\n"
        "  BANYAN_ENGINE_REQUEST_TIME_LIMIT=60 banyan-engine -f engine.json\n");
}

//  Room for `count` engines: libzmq's socket limit and open files (about
//  8 per engine, 11 while it runs a command; see bn_engine_actor.c). The
//  engine actor refuses to start when the limit stays too low.
static void
s_raise_limits (int count)
{
    size_t sockets = (size_t)count * 4 + 64;
    if (sockets > 1023)
        zsys_set_max_sockets (sockets);
    rlim_t files = (rlim_t)count * 11 + 256;
    struct rlimit limit;
    if (getrlimit (RLIMIT_NOFILE, &limit) || limit.rlim_cur >= files)
        return;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < files) {
        struct rlimit raised = {files, files};
        if (setrlimit (RLIMIT_NOFILE, &raised) == 0)
            return;
        files = limit.rlim_max;
    }
    limit.rlim_cur = files;
    setrlimit (RLIMIT_NOFILE, &limit);
}

//  Wait up to S_FILE_WAIT_MS for path to exist; 0 if it does.
static int
s_wait_for_file (const char *path)
{
    int64_t until = zclock_mono () + S_FILE_WAIT_MS;
    bool told = false;
    while (access (path, R_OK) != 0) {
        if (zclock_mono () >= until || zsys_interrupted)
            return -1;
        if (!told) {
            bn_log_info ("waiting for %s", path);
            told = true;
        }
        zclock_sleep (100);
    }
    return 0;
}

int
main (int argc, char *argv[])
{
    static const struct option options[] = {
        {"file", required_argument, NULL, 'f'},
        {"profile-dir", required_argument, NULL, 'P'},
        {"profile", required_argument, NULL, 'p'},
        {"cluster-id", required_argument, NULL, 'C'},
        {"count", required_argument, NULL, 'n'},
        {"id", required_argument, NULL, 'i'},
        {"plugin", required_argument, NULL, 'L'},
        {"work-dir", required_argument, NULL, 'w'},
        {"config", required_argument, NULL, 'c'},
        {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *file = NULL, *profile_dir = NULL, *config_file = NULL;
    const char *work_dir = NULL;
    int first_id = -1;
    bn_malloc_setup ();
    bn_config_t *config = bn_config_new ();
    if (!config)
        return 1;
    char *plugins = NULL;
    int status = 0;
    int opt;
    opterr = 0;
    while (status == 0 &&
           (opt = getopt_long (argc, argv, ":f:n:c:hV", options, NULL)) != -1) {
        const char *setting = NULL;
        switch (opt) {
        case 'f':
            file = optarg;
            break;
        case 'P':
            profile_dir = optarg;
            break;
        case 'p':
            setting = "profile.name";
            break;
        case 'C':
            setting = "cluster.id";
            break;
        case 'n':
            if (bn_args_number (optarg, 1000000) < 1)
                status =
                    bn_args_usage_error ("banyan-engine",
                                         "--count needs a number >= 1, not "
                                         "'%s'",
                                         optarg);
            setting = "engine.count";
            break;
        case 'i':
            first_id = bn_args_number (optarg, 1000000);
            if (first_id < 0)
                status = bn_args_usage_error (
                    "banyan-engine", "--id needs a number >= 0, not '%s'",
                    optarg);
            break;
        case 'L': {
            char *joined = plugins ? zsys_sprintf ("%s:%s", plugins, optarg)
                                   : strdup (optarg);
            free (plugins);
            plugins = joined;
            break;
        }
        case 'w':
            work_dir = optarg;
            break;
        case 'c':
            config_file = optarg;
            break;
        case 'l':
            setting = "log.level";
            break;
        case 'h':
            s_usage (stdout);
            bn_config_destroy (&config);
            free (plugins);
            return 0;
        case 'V':
            bn_args_version ("banyan-engine");
            bn_config_destroy (&config);
            free (plugins);
            return 0;
        case ':':
            status = bn_args_usage_error (
                "banyan-engine", "option '%s' needs a value", argv[optind - 1]);
            break;
        default:
            status = bn_args_usage_error (
                "banyan-engine", "unknown option '%s'", argv[optind - 1]);
            break;
        }
        if (status == 0 && setting &&
            bn_config_set (config, setting, optarg, BN_CONFIG_CMDLINE))
            status = bn_args_usage_error ("banyan-engine", "%s",
                                          bn_config_error (config));
    }
    struct stat folder;
    if (status == 0 && work_dir &&
        (stat (work_dir, &folder) || !S_ISDIR (folder.st_mode)))
        status = bn_args_usage_error (
            "banyan-engine", "--work-dir %s is not a folder", work_dir);
    if (status == 0 && optind < argc)
        status = bn_args_usage_error ("banyan-engine",
                                      "unexpected argument '%s'", argv[optind]);
    if (status == 0 && plugins &&
        bn_config_set (config, "engine.plugins", plugins, BN_CONFIG_CMDLINE))
        status = bn_args_usage_error ("banyan-engine", "%s",
                                      bn_config_error (config));
    free (plugins);
    if (status == 0)
        status = bn_args_load ("banyan-engine", config, config_file);
    if (status) {
        bn_config_destroy (&config);
        return status;
    }

    if (bn_args_log (config, "banyan-engine") != 0)
        bn_log_warn ("cannot open log file %s; logging to stderr",
                     bn_config_str (config, "log.file"));

    //  Where the controller is.
    char *path = NULL;
    const char *info = NULL;
    const char *cluster_id = bn_config_str (config, "cluster.id");
    if (file)
        path = strdup (file);
    else if (profile_dir)
        path = bn_connfile_path (profile_dir, cluster_id, BN_CONNFILE_ENGINE);
    else if (strcmp (bn_config_source (config, "profile.name"),
                     "command line") != 0 &&
             ((info = getenv ("IPP_CONNECTION_INFO")) ||
              (info = getenv ("BANYAN_CONNECTION_INFO"))))
        ;
    else {
        char *dir = bn_config_profile_dir (config, NULL);
        path =
            dir ? bn_connfile_path (dir, cluster_id, BN_CONNFILE_ENGINE) : NULL;
        free (dir);
    }
    if (!info && (!path || s_wait_for_file (path))) {
        bn_log_error ("no engine connection file %s", path ? path : "");
        free (path);
        bn_config_destroy (&config);
        return 1;
    }

    int count = bn_config_int (config, "engine.count");
    s_raise_limits (count);
    //  with many engines, commands start from a helper forked before the
    //  engines open their sockets (bn_spawner); with few, posix_spawn here
    //  is quicker (its cost grows with the descriptors it copies)
    bn_spawner_t *spawner =
        count >= S_SPAWNER_MIN_COUNT ? bn_spawner_new () : NULL;
    if (count >= S_SPAWNER_MIN_COUNT && !spawner)
        bn_log_warn ("no spawning helper (%s): commands start with "
                     "posix_spawn",
                     strerror (errno));
    bn_shell_use_spawner (spawner);
    bn_engine_args_t args = {path, info, config, count, first_id, work_dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &args);
    bn_config_destroy (&config);
    free (path);
    if (!engines) {
        bn_shell_use_spawner (NULL);
        bn_spawner_destroy (&spawner);
        return 1;
    }

    //  Wait for the engines to stop, or for a signal (which the actor's
    //  loop sees too: it then unregisters the engines and reports).
    int exit_code = 0;
    int64_t stop_deadline = 0;
    zpoller_t *poller = zpoller_new (engines, NULL);
    //  keep reading the actor after a signal, until it reports STOPPED
    zpoller_set_nonstop (poller, true);
    while (true) {
        void *which = zpoller_wait (poller, 200);
        if (which == engines) {
            zmsg_t *msg = zmsg_recv (engines);
            char *what = msg ? zmsg_popstr (msg) : NULL;
            char *code = msg ? zmsg_popstr (msg) : NULL;
            bool stopped = what && streq (what, "STOPPED");
            if (stopped && code)
                exit_code = atoi (code);
            free (what);
            free (code);
            zmsg_destroy (&msg);
            if (stopped)
                break;
        }
        if (zsys_interrupted) {
            //  the signal may have woken only this thread: tell the engines
            if (!stop_deadline) {
                stop_deadline = zclock_mono () + S_STOP_WAIT_MS;
                zstr_send (engines, "STOP");
            } else if (zclock_mono () >= stop_deadline)
                break;
        }
    }
    zpoller_destroy (&poller);
    zactor_destroy (&engines);
    bn_shell_use_spawner (NULL);
    bn_spawner_destroy (&spawner);
    return exit_code;
}

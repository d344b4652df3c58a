/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan-controller: flags, configuration and logging, then the
    controller actor until a signal or a hub shutdown_request.  */
#include <czmq.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bn_args.h"
#include "bn_config.h"
#include "bn_controller.h"
#include "bn_log.h"
#include "bn_malloc.h"

#define S_NAME "banyan-controller"

//  Flags that set a configuration value.
static const bn_args_setting_t s_flags[] = {
    {"--profile", "profile.name"},
    {"--ip", "controller.ip"},
    {"--ports", "controller.ports"},
    {"--location", "controller.location"},
    {"--cluster-id", "cluster.id"},
    {"--depth", "controller.depth"},
    {"--topology", "controller.topology"},
    {"--engines", "controller.engines"},
    {"--tree-deadline", "controller.tree_deadline"},
    {"--tree-mode", "controller.tree_mode"},
    {"--fold", "controller.fold"},
    {"--ping", "controller.heartbeat_period"},
    {"--heartbeat-misses", "controller.heartbeat_misses"},
    {"--registration-timeout", "controller.registration_timeout"},
    {"--connect-grace", "controller.connect_grace"},
    {"--scheme", "controller.scheme"},
    {"--hwm", "controller.task_hwm"},
    {"--socket-hwm", "controller.hwm"},
    {"--db", "controller.db"},
    {"--log-level", "log.level"},
    {"--log-file", "log.file"},
};

#define S_NFLAGS (sizeof s_flags / sizeof s_flags[0])

static void
s_usage (FILE *file)
{
    fputs (
        "Usage: " S_NAME " [OPTION]...\n"
        "Run a banyan controller: the hub, heartbeat monitor and the relays "
        "that\n"
        "IPython Parallel 7.1 engines and clients (stock or banyan) connect "
        "to.\n"
        "It writes ipcontroller[-ID]-client.json and -engine.json under\n"
        "<profile dir>/security/ and runs until SIGINT, SIGTERM or a "
        "client's\n"
        "shutdown request.\n"
        "\n"
        "Options:\n"
        "  --profile-dir DIR     profile folder (overrides --profile)\n"
        "  --profile NAME        profile folder <BANYAN_DIR or "
        "~/.banyan>/profile_NAME\n"
        "                        (default: default)\n"
        "  --ip ADDR             address to bind every socket to, * for all\n"
        "                        (default: 127.0.0.1)\n"
        "  --ports LO-HI         take every port the controller and its tree "
        "nodes\n"
        "                        listen on from LO..HI (a firewall's range; "
        "default:\n"
        "                        any port)\n"
        "  --curve               CurveZMQ on every socket: the keypair in "
        "<profile\n"
        "                        dir>/security/banyan-controller[-ID].cert "
        "(made\n"
        "                        once, reused), its public key in the "
        "connection\n"
        "                        files as curve_serverkey\n"
        "  --location HOST       name or address engines on other hosts "
        "reach this\n"
        "                        host by when --ip is * (default: the host "
        "name)\n"
        "  --cluster-id ID       name the files ipcontroller-ID-client.json "
        "and\n"
        "                        ipcontroller-ID-engine.json\n"
        "  --depth D             depth of the broadcast tree (default: 1; "
        "kary:2\n"
        "                        gives 2^D engine broadcast ports)\n"
        "  --topology SPEC       shape of the broadcast tree: kary:K, "
        "per-level\n"
        "                        fanouts AxB, binomial or auto "
        "(default: kary:2)\n"
        "  --engines N           engines the cluster is expected to have; "
        "the auto\n"
        "                        topology shapes the tree for them "
        "(default: 0)\n"
        "  --tree-deadline T     default broadcast deadline, 0 = none "
        "(default: 0)\n"
        "  --tree-mode MODE      run the broadcast tree's nodes as "
        "threads of the\n"
        "                        controller or as banyan-scheduler "
        "processes it\n"
        "                        supervises (threads|processes; default: "
        "threads)\n"
        "  --fold N              a tree of threads with at most N leaves runs "
        "in its\n"
        "                        root alone, in the tree's order (0 = never; "
        "default: 8)\n"
        "  --ping T              time between heartbeats (default: 3s)\n"
        "  --heartbeat-misses N  beats an engine may miss in a row before it "
        "is\n"
        "                        unregistered (default: 10)\n"
        "  --registration-timeout T\n"
        "                        time a registering engine has to answer a "
        "ping\n"
        "                        (default: 30s)\n"
        "  --connect-grace T     how long requests for an engine that "
        "registered\n"
        "                        but is not connected yet wait for it "
        "(default: 3s)\n"
        "  --scheme NAME         task scheduler scheme: leastload, lru, "
        "plainrandom,\n"
        "                        twobin, weighted, pure or none (default: "
        "leastload)\n"
        "  --hwm N               tasks the task scheduler gives an engine at "
        "once,\n"
        "                        0 = unlimited (default: 1)\n"
        "  --socket-hwm N        high-water mark of every socket, 0 = "
        "unlimited\n"
        "                        (default: 0)\n"
        "  --db WHERE            task records: memory (default), none, or\n"
        "                        sqlite:PATH (kept across restarts)\n"
        "  --nodb                keep no task records (same as --db none)\n"
        "  --restore             give engines that come back after a restart "
        "their\n"
        "                        old ids (log/engines<ID>.json); implies "
        "--reuse\n"
        "  --reuse               keep the connection files on exit and reuse "
        "their\n"
        "                        ports and key on the next start\n"
        "  --config FILE         read settings from FILE (ZPL, like "
        "conf/banyan.conf)\n"
        "  --log-level LEVEL     error, warn, info or debug (default: warn)\n"
        "  --log-file FILE       append log lines to FILE instead of "
        "stderr\n"
        "  -h, --help            show this help and exit\n"
        "  --version             show the version and exit\n"
        "\n"
        "Settings come from built-in defaults, then the config file, then "
        "BANYAN_*\n"
        "environment variables (BANYAN_CONTROLLER_IP, BANYAN_DIR, "
        "BANYAN_PROFILE...),\n"
        "then these options. --opt=VALUE works as well as --opt VALUE.\n"
        "A time T is a duration such as 3s, 200ms, 1.5s or 2m; a bare number "
        "keeps\n"
        "the old unit: milliseconds for --ping and --tree-deadline, seconds "
        "for\n"
        "--registration-timeout, milliseconds for --connect-grace.\n"
        "\n"
        "Examples:\n"
        "  " S_NAME "\n"
        "      profile 'default': sockets on 127.0.0.1, files in\n"
        "      ~/.banyan/profile_default/security/\n"
        "  " S_NAME " --profile-dir /tmp/prof --cluster-id demo --depth 2\n"
        "      files /tmp/prof/security/ipcontroller-demo-*.json, 4 broadcast "
        "leaves\n"
        "  " S_NAME " --ip '*' --ping 1s --log-level info\n"
        "      reachable from other hosts, 1 s heartbeats, more logging\n"
        "  " S_NAME " --ip '*' --curve --ports 60000-60099\n"
        "      reachable from other hosts through a firewall that opens "
        "60000-60099,\n"
        "      encrypted; stock clients and engines need IPython Parallel "
        "7.1+\n"
        "  ipengine --file ~/.banyan/profile_default/security/"
        "ipcontroller-engine.json\n"
        "      attach a stock IPython Parallel engine\n",
        file);
}

int
main (int argc, char **argv)
{
    bn_malloc_setup ();
    bn_config_t *config = bn_config_new ();
    if (!config) {
        fprintf (stderr, S_NAME ": out of memory\n");
        return 1;
    }
    const char *profile_dir = NULL;
    const char *config_file = NULL;
    bool reuse = false, restore = false, nodb = false, curve = false;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *arg = argv[i];
        bool missing = false;
        const char *value;
        if (streq (arg, "-h") || streq (arg, "--help")) {
            s_usage (stdout);
            bn_config_destroy (&config);
            return 0;
        }
        if (streq (arg, "--version")) {
            bn_args_version (S_NAME);
            bn_config_destroy (&config);
            return 0;
        }
        if (streq (arg, "--reuse"))
            reuse = true;
        else if (streq (arg, "--curve"))
            curve = true;
        else if (streq (arg, "--restore"))
            restore = reuse = true;
        else if (streq (arg, "--nodb"))
            nodb = true;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--profile-dir",
                                              &missing)))
            profile_dir = value;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--config",
                                              &missing)))
            config_file = value;
        else if (missing)
            rc = bn_args_usage_error (S_NAME, "option '%s' needs a value", arg);
        else if ((rc = bn_args_setting (S_NAME, argc, argv, &i, s_flags,
                                        S_NFLAGS, config)) == 1)
            rc = 0;
        else if (rc == 0)
            rc = bn_args_usage_error (S_NAME, "unknown option '%s'", arg);
    }
    if (rc == 0 && profile_dir && !*profile_dir)
        rc = bn_args_usage_error (S_NAME, "%s", "--profile-dir needs a folder");
    if (rc == 0)
        rc = bn_args_load (S_NAME, config, config_file);
    if (rc == 0 && reuse)
        bn_config_set (config, "controller.reuse_files", "true",
                       BN_CONFIG_CMDLINE);
    if (rc == 0 && restore)
        bn_config_set (config, "controller.restore", "true", BN_CONFIG_CMDLINE);
    if (rc == 0 && curve)
        bn_config_set (config, "controller.curve", "true", BN_CONFIG_CMDLINE);
    if (rc == 0 && nodb)
        bn_config_set (config, "controller.db", "none", BN_CONFIG_CMDLINE);
    if (rc == 0 && bn_config_bool (config, "controller.restore"))
        bn_config_set (config, "controller.reuse_files", "true",
                       BN_CONFIG_CMDLINE);
    const char *db = rc == 0 ? bn_config_str (config, "controller.db") : "";
    if (rc == 0 && !streq (db, "memory") && !streq (db, "none") &&
        strncmp (db, "sqlite:", 7) != 0)
        rc = bn_args_usage_error (
            S_NAME, "--db takes memory, none or sqlite:PATH, not '%s'", db);
    else if (rc == 0 && streq (db, "sqlite:"))
        rc = bn_args_usage_error (S_NAME, "%s",
                                  "--db sqlite: needs a file path");
    if (rc != 0) {
        bn_config_destroy (&config);
        return rc;
    }

    if (bn_args_log (config, "controller") != 0) {
        fprintf (stderr, S_NAME ": cannot open log file %s\n",
                 bn_config_str (config, "log.file"));
        bn_config_destroy (&config);
        return 1;
    }
    char *dir = profile_dir ? strdup (profile_dir)
                            : bn_config_profile_dir (config, NULL);
    if (!dir) {
        fprintf (stderr, S_NAME ": cannot find the profile folder "
                                "(is HOME set?)\n");
        bn_config_destroy (&config);
        return 1;
    }

    //  before the first socket and the other context options: czmq makes
    //  the context again with them
    zsys_set_io_threads (
        (size_t)bn_config_int (config, "controller.io_threads"));
    //  a deep broadcast tree needs more sockets than czmq's default 1024
    if (bn_controller_sockets (config) > 1024)
        zsys_set_max_sockets (0);
    bn_controller_args_t args = {
        .config = config, .profile_dir = dir, .status = BN_CONTROLLER_STARTING};
    zactor_t *controller = zactor_new (bn_controller_actor, &args);
    //  a signal may end zactor_new's wait early: start-up is bounded, and
    //  the actor must not be torn down halfway, so wait for it
    while (controller && __atomic_load_n (&args.status, __ATOMIC_ACQUIRE) ==
                             BN_CONTROLLER_STARTING)
        zsock_wait (controller);
    if (!controller || args.status != 0) {
        fprintf (stderr, S_NAME ": could not start (see the log above)\n");
        zactor_destroy (&controller);
        free (dir);
        bn_config_destroy (&config);
        return 1;
    }
    bn_log_info ("controller started (pid %d), profile %s", (int)getpid (),
                 dir);
    zpoller_t *poller = zpoller_new (controller, NULL);
    while (!zsys_interrupted) {
        void *which = zpoller_wait (poller, 1000);
        if (which == controller) {
            char *event = zstr_recv (controller);
            bool shutdown = event && streq (event, "SHUTDOWN");
            free (event);
            if (shutdown) {
                bn_log_info ("controller shut down by a client request");
                break;
            }
        } else if (zpoller_terminated (poller))
            break;
    }
    zpoller_destroy (&poller);
    zactor_destroy (&controller);
    free (dir);
    bn_config_destroy (&config);
    return 0;
}

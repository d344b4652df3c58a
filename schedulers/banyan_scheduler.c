/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan-scheduler: one node of the broadcast tree as its own process
    (options, settings, logging and the wait loop; the node is
    bn_bcast_node_actor). banyan-controller starts one per node in process
    mode (bn_treeproc) and talks to it over --control-fd. With --host it is
    a host node instead (doc/hosts.md; bn_hostnode_actor), which a launcher
    starts on each engine host.  */
#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bn_args.h"
#include "bn_bcast_node.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_hostnode.h"
#include "bn_log.h"
#include "bn_malloc.h"
#include "bn_monitor_link.h"
#include "bn_nodelink.h"
#include "bn_topology.h"

#define S_NAME "banyan-scheduler"
#define S_KEY_WAIT 10000  //  ms the controller has to send the key
#define S_ACTOR_WAIT 5000 //  ms the actor has to answer a query

static volatile sig_atomic_t s_stop = 0;

static void
s_on_signal (int signum)
{
    s_stop = 1;
}

static void
s_usage (FILE *file)
{
    fputs ("Usage: " S_NAME " --node I [OPTION]...\n"
           "  or:  " S_NAME " --host [--file F] [--profile-dir D] "
           "[--host-name NAME]\n"
           "                         [--ip ADDR] [--ports LO-HI] [OPTION]...\n"
           "Run one node of a banyan broadcast tree: it takes broadcast "
           "requests\n"
           "from above (clients at the root, its parent node elsewhere), sends "
           "each\n"
           "child or engine its targets, and merges or forwards the replies "
           "on the\n"
           "way back. banyan-controller starts one per node with "
           "--tree-mode\n"
           "processes; there is rarely a reason to run it by hand.\n"
           "\n"
           "Options:\n"
           "  --node I              this node's index in the tree (0 = root, "
           "then\n"
           "                        breadth-first order)\n"
           "  --topology SPEC       tree shape: kary:K, AxBxC or binomial "
           "(default:\n"
           "                        kary:2)\n"
           "  --depth D             depth of the tree (default: the shape's)\n"
           "  --bind up=ENDPOINT    root: bind the client-facing port here\n"
           "  --connect up=ENDPOINT other nodes: connect to the parent's down\n"
           "                        endpoint\n"
           "  --bind down=ENDPOINT  bind the port children (or, at a leaf, "
           "engines)\n"
           "                        connect to; tcp://IP:0 picks a free port\n"
           "  --hwm N               high-water mark of the node's sockets, 0 = "
           "none\n"
           "                        (controller.hwm)\n"
           "  --deadline T          default request deadline at the root, 0 = "
           "none\n"
           "                        (3s, 250ms...; a bare number is ms;\n"
           "                        controller.tree_deadline)\n"
           "  --connect-grace T     leaf: how long requests wait for an engine "
           "that\n"
           "                        registered but is not connected yet "
           "(default:\n"
           "                        3s; controller.connect_grace)\n"
           "  --monitor ENDPOINT    root: report requests and replies to the "
           "hub's\n"
           "                        records through the controller's link "
           "there\n"
           "  --reduce-plugins PATHS\n"
           "                        reduction plugins to load, ':'-separated "
           "paths\n"
           "                        (controller.reduce_plugins)\n"
           "  --trusted-links       take what other nodes of the tree send "
           "without\n"
           "                        verifying it (links over ipc:// in a "
           "folder only\n"
           "                        the controller's user can reach)\n"
           "  --control-fd FD       run under a controller: the session key "
           "(and the\n"
           "                        CURVE secret key of its tcp ports) arrive "
           "on FD,\n"
           "                        the bound endpoints are reported on "
           "it,\n"
           "                        engine and child events come through it, "
           "and the\n"
           "                        node exits when FD closes (its controller "
           "is gone)\n"
           "\n"
           "Host node (doc/hosts.md):\n"
           "  --host                run as the host node of this host's "
           "engines: they\n"
           "                        register, beat and are served through it, "
           "and it\n"
           "                        is their broadcast leaf; the controller's "
           "engine\n"
           "                        connection info comes from "
           "BANYAN_CONNECTION_INFO\n"
           "                        (its JSON, or a path) or --file\n"
           "  --file F              read the controller's engine connection "
           "file F\n"
           "  --profile-dir D       write the host-local connection file into\n"
           "                        D/security/ (default: the profile's "
           "folder)\n"
           "  --host-name NAME      the name the hub knows this host by "
           "(default: the\n"
           "                        host name)\n"
           "  --ip ADDR             the address engines connect to (default\n"
           "                        127.0.0.1: only this host's)\n"
           "  --ports LO-HI         take each of the 8 ports it listens on "
           "from LO..HI\n"
           "                        (default: controller.ports, any)\n"
           "  Once the hub has accepted it, it writes the host-local file and "
           "prints its\n"
           "  path on standard output; engines of the host use that file.\n"
           "\n"
           "  --log-level LEVEL     error, warn, info or debug (log.level)\n"
           "  --log-file FILE       append log lines to FILE (log.file)\n"
           "  -h, --help            show this help and exit\n"
           "  --version             show the version and exit\n"
           "\n"
           "Without --control-fd the session key is read from the environment\n"
           "variable BANYAN_SESSION_KEY; it is never taken from the command "
           "line.\n"
           "Log lines carry the ident bcast.I.\n"
           "\n"
           "Exit status: 0 when stopped (its controller gone, SIGTERM; a host "
           "node also\n"
           "on SIGINT), 1 on a start-up error (for a host node also: the hub "
           "refused it\n"
           "or did not answer within controller.registration_timeout), 2 on a "
           "usage\n"
           "error.\n",
           file);
}

typedef struct {
    int node;
    const char *topology;
    int depth;
    const char *bind_up;
    const char *connect_up;
    const char *bind_down;
    int control_fd;
    bool trusted;
    const char *monitor;
    bool host;               //  a host node (doc/hosts.md)
    const char *file;        //  host: the controller's engine file
    const char *profile_dir; //  host: where its connection file goes
    const char *host_name;   //  host: its name for the hub
    const char *ip;          //  host: the engines' address
} s_options_t;

//  Parse argv into options and config; returns 0, 1 (help/version shown)
//  or the usage error's exit code.
static int
s_parse (int argc, char **argv, s_options_t *options, bn_config_t *config)
{
    *options = (s_options_t){.node = -1,
                             .topology = "kary:2",
                             .depth = BN_TOPOLOGY_DEPTH_DEFAULT,
                             .control_fd = -1};
    static const bn_args_setting_t settings[] = {
        {"--hwm", "controller.hwm"},
        {"--log-level", "log.level"},
        {"--log-file", "log.file"},
        {"--reduce-plugins", "controller.reduce_plugins"},
        {"--deadline", "controller.tree_deadline"},
        {"--connect-grace", "controller.connect_grace"},
        {"--ports", "controller.ports"},
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool missing = false;
        const char *value;
        if (streq (arg, "-h") || streq (arg, "--help")) {
            s_usage (stdout);
            return 1;
        }
        if (streq (arg, "--trusted-links")) {
            options->trusted = true;
            continue;
        }
        if (streq (arg, "--host")) {
            options->host = true;
            continue;
        }
        if (streq (arg, "--version")) {
            bn_args_version (S_NAME);
            return 1;
        }
        int set =
            bn_args_setting (S_NAME, argc, argv, &i, settings,
                             sizeof settings / sizeof settings[0], config);
        if (set == 1)
            continue;
        if (set != 0)
            return set;
        if ((value = bn_args_flag_value (argc, argv, &i, "--node", &missing))) {
            if ((options->node = bn_args_number (value, INT32_MAX)) < 0)
                return bn_args_usage_error (
                    S_NAME, "--node needs a node index, not '%s'", value);
        } else if ((value = bn_args_flag_value (argc, argv, &i, "--topology",
                                                &missing)))
            options->topology = value;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--monitor",
                                              &missing)))
            options->monitor = value;
        else if ((value =
                      bn_args_flag_value (argc, argv, &i, "--file", &missing)))
            options->file = value;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--profile-dir",
                                              &missing)))
            options->profile_dir = value;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--host-name",
                                              &missing)))
            options->host_name = value;
        else if ((value =
                      bn_args_flag_value (argc, argv, &i, "--ip", &missing)))
            options->ip = value;
        else if ((value = bn_args_flag_value (argc, argv, &i, "--depth",
                                              &missing))) {
            if ((options->depth =
                     bn_args_number (value, BN_TOPOLOGY_MAX_DEPTH)) < 0)
                return bn_args_usage_error (
                    S_NAME, "--depth needs a depth in 0 ... %d, not '%s'",
                    BN_TOPOLOGY_MAX_DEPTH, value);
        } else if ((value = bn_args_flag_value (argc, argv, &i, "--control-fd",
                                                &missing))) {
            if ((options->control_fd = bn_args_number (value, INT32_MAX)) < 0)
                return bn_args_usage_error (
                    S_NAME,
                    "--control-fd needs a descriptor, not "
                    "'%s'",
                    value);
        } else if ((value = bn_args_flag_value (argc, argv, &i, "--bind",
                                                &missing))) {
            if (strncmp (value, "up=", 3) == 0 && value[3])
                options->bind_up = value + 3;
            else if (strncmp (value, "down=", 5) == 0 && value[5])
                options->bind_down = value + 5;
            else
                return bn_args_usage_error (S_NAME,
                                            "--bind takes up=ENDPOINT or "
                                            "down=ENDPOINT, not '%s'",
                                            value);
        } else if ((value = bn_args_flag_value (argc, argv, &i, "--connect",
                                                &missing))) {
            if (strncmp (value, "up=", 3) == 0 && value[3])
                options->connect_up = value + 3;
            else
                return bn_args_usage_error (
                    S_NAME, "--connect takes up=ENDPOINT, not '%s'", value);
        } else if (missing)
            return bn_args_usage_error (S_NAME, "option '%s' needs a value",
                                        arg);
        else
            return bn_args_usage_error (S_NAME, "unknown option '%s'", arg);
    }
    if (options->host) {
        if (options->node >= 0 || options->bind_up || options->bind_down ||
            options->connect_up || options->control_fd >= 0 ||
            options->monitor || options->trusted)
            return bn_args_usage_error (
                S_NAME, "%s",
                "--host takes no --node, --bind, --connect, --control-fd, "
                "--monitor or --trusted-links");
        return 0;
    }
    //  a tree node binds the endpoints it is given
    if (options->file || options->profile_dir || options->host_name ||
        options->ip ||
        streq (bn_config_source (config, "controller.ports"), "command line"))
        return bn_args_usage_error (S_NAME, "%s",
                                    "--file, --profile-dir, --host-name, --ip "
                                    "and --ports go with --host");
    if (options->node < 0)
        return bn_args_usage_error (S_NAME, "%s", "--node is required");
    if (!options->bind_down)
        return bn_args_usage_error (S_NAME, "%s",
                                    "--bind down=ENDPOINT is required");
    if ((options->node == 0) != (options->bind_up != NULL) ||
        (options->node != 0) != (options->connect_up != NULL))
        return bn_args_usage_error (S_NAME, "%s",
                                    "the root (--node 0) takes --bind "
                                    "up=ENDPOINT, other nodes --connect "
                                    "up=ENDPOINT");
    return 0;
}

//  The session key: the first message on the control link, or
//  BANYAN_SESSION_KEY. NULL (logged) if there is none. A CURVE secret key
//  after it on the link goes to *curve.
static char *
s_key (bn_nodelink_t *link, char **curve)
{
    if (!link) {
        const char *key = getenv ("BANYAN_SESSION_KEY");
        if (!key)
            bn_log_error ("no session key: set BANYAN_SESSION_KEY or run "
                          "under a controller (--control-fd)");
        return key ? strdup (key) : NULL;
    }
    bool eof = false;
    zmsg_t *msg = bn_nodelink_recv (link, S_KEY_WAIT, &eof);
    char *command = msg ? zmsg_popstr (msg) : NULL;
    char *key = command && streq (command, "KEY") ? zmsg_popstr (msg) : NULL;
    if (!key)
        bn_log_error ("no session key from the controller");
    *curve = key ? zmsg_popstr (msg) : NULL;
    zstr_free (&command);
    zmsg_destroy (&msg);
    return key;
}

//  Ask the actor something it answers (ENDPOINTS, STATS); NULL if it did
//  not answer in time.
static zmsg_t *
s_ask (zactor_t *actor, const char *command)
{
    zstr_send (actor, command);
    zpoller_t *poller = zpoller_new (actor, NULL);
    zmsg_t *reply =
        zpoller_wait (poller, S_ACTOR_WAIT) ? zmsg_recv (actor) : NULL;
    zpoller_destroy (&poller);
    return reply;
}

//  Tell the controller which endpoints were bound: ["READY", name,
//  endpoint, ...]. Returns -1 if the actor did not say.
static int
s_report_ready (zactor_t *actor, bn_nodelink_t *link,
                const s_options_t *options)
{
    zmsg_t *endpoints = s_ask (actor, "ENDPOINTS");
    char *up = endpoints ? zmsg_popstr (endpoints) : NULL;
    char *down = endpoints ? zmsg_popstr (endpoints) : NULL;
    zmsg_destroy (&endpoints);
    int rc = -1;
    if (up && down) {
        bn_log_info ("serving: up %s, down %s", up, down);
        zmsg_t *ready = zmsg_new ();
        zmsg_addstr (ready, "READY");
        if (options->bind_up) {
            zmsg_addstr (ready, "up");
            zmsg_addstr (ready, up);
        }
        zmsg_addstr (ready, "down");
        zmsg_addstr (ready, down);
        rc = link ? bn_nodelink_send (link, &ready) : 0;
        zmsg_destroy (&ready);
    }
    zstr_free (&up);
    zstr_free (&down);
    return rc;
}

//  One message from the controller: an actor command, or STATS, answered
//  as ["STATS", json].
static void
s_on_command (zactor_t *actor, bn_nodelink_t *link, zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    char *command = zframe_strdup (zmsg_first (msg));
    if (streq (command, "ENGINE_ADD") || streq (command, "ENGINE_ROUTE")) {
        //  ENDPOINTS is answered after ENGINE_ADD is taken (one pipe, in
        //  order): then tell the controller, which waits for it
        zframe_t *second = zmsg_next (msg);
        zframe_t *uuid = second ? zframe_dup (second) : NULL;
        zmsg_send (msg_p, actor);
        zmsg_t *barrier = s_ask (actor, "ENDPOINTS");
        zmsg_destroy (&barrier);
        zmsg_t *added = zmsg_new ();
        zmsg_addstr (added, streq (command, "ENGINE_ADD") ? "ENGINE_ADDED"
                                                          : "ENGINE_ROUTED");
        if (uuid)
            zmsg_append (added, &uuid);
        bn_nodelink_send (link, &added);
        zframe_destroy (&uuid);
    } else if (streq (command, "PING")) {
        //  the controller's liveness check: a stopped or stuck process
        //  does not answer
        zmsg_t *pong = zmsg_new ();
        zmsg_addstr (pong, "PONG");
        bn_nodelink_send (link, &pong);
    } else if (streq (command, "ENGINE_REMOVE") ||
               streq (command, "ENGINE_UNROUTE") ||
               streq (command, "CHILD_LOST"))
        zmsg_send (msg_p, actor);
    else if (streq (command, "STATS")) {
        zmsg_t *reply = s_ask (actor, "STATS");
        if (!reply)
            reply = zmsg_new ();
        zmsg_pushstr (reply, "STATS");
        bn_nodelink_send (link, &reply);
    } else
        bn_log_warn ("unknown command from the controller: %.40s", command);
    zstr_free (&command);
    zmsg_destroy (msg_p);
}

//  Run the node until its controller is gone or a signal; the exit code.
static int
s_run (const s_options_t *options, bn_config_t *config)
{
    char err[256] = "";
    bn_topology_t *topology =
        bn_topology_new (options->topology, options->depth, 0, err, sizeof err);
    if (!topology) {
        bn_log_error ("%s", err);
        return 1;
    }
    if (options->node >= bn_topology_size (topology)) {
        bn_log_error ("node %d is not in %s", options->node,
                      bn_topology_describe (topology));
        bn_topology_destroy (&topology);
        return 1;
    }
    bn_nodelink_t *link =
        options->control_fd >= 0 ? bn_nodelink_new (options->control_fd) : NULL;
    char *curve_secret = NULL;
    char *key = s_key (link, &curve_secret);
    zcert_t *curve =
        curve_secret ? bn_curve_cert_from_secret (curve_secret) : NULL;
    if (curve_secret && !curve) {
        bn_log_error ("the controller's CURVE secret key is not a Z85 key");
        memset (key, 0, strlen (key));
        zstr_free (&key);
    }
    if (curve_secret)
        memset (curve_secret, 0, strlen (curve_secret));
    zstr_free (&curve_secret);
    int node = options->node;
    bn_bcast_node_args_t args = {
        .topology = topology,
        .node = node,
        .key = key,
        .curve = curve,
        .up_endpoint = node == 0 ? options->bind_up : options->connect_up,
        .down_endpoint = options->bind_down,
        .deadline_ms =
            (int)bn_config_msecs (config, "controller.tree_deadline"),
        .connect_grace_ms =
            (int)bn_config_msecs (config, "controller.connect_grace"),
        //  the links between nodes, never the client or engine ports: a
        //  root bound on ipc:// is reached by the controller, which holds
        //  the client port and verifies what comes in there
        .up_trusted =
            options->trusted &&
            (node != 0 || (options->bind_up &&
                           strncmp (options->bind_up, "ipc://", 6) == 0)),
        .down_trusted =
            options->trusted && !bn_topology_is_leaf (topology, node),
        .hwm = bn_config_int (config, "controller.hwm"),
        .status = -1};
    const char *plugins = bn_config_str (config, "controller.reduce_plugins");
    args.reduce_plugins = *plugins ? plugins : NULL;
    //  the root's reports to the hub's records, when the controller asks
    bn_monitor_link_t *monitor =
        options->monitor && options->node == 0
            ? bn_monitor_link_new_remote (options->monitor)
            : NULL;
    if (monitor)
        args.monitor = bn_monitor_link_sender (monitor);
    zactor_t *actor = NULL;
    int rc = 1;
    if (key && (monitor || !options->monitor || options->node != 0) &&
        (actor = zactor_new (bn_bcast_node_actor, &args)) && args.status == 0 &&
        s_report_ready (actor, link, options) == 0)
        rc = 0;
    if (rc == 0) {
        bn_log_info ("node %s of %s started",
                     bn_topology_routing_id (topology, node),
                     bn_topology_describe (topology));
        zmq_pollitem_t items[] = {
            {zsock_resolve (actor), 0, ZMQ_POLLIN, 0},
            {NULL, link ? bn_nodelink_fd (link) : -1, ZMQ_POLLIN, 0}};
        while (!s_stop) {
            if (link && bn_nodelink_pending (link))
                items[1].events = ZMQ_POLLIN | ZMQ_POLLOUT;
            else
                items[1].events = ZMQ_POLLIN;
            if (zmq_poll (items, link ? 2 : 1, 1000) < 0 && errno != EINTR)
                break;
            if (items[0].revents & ZMQ_POLLIN) {
                //  the actor signals when it ends; anything else is an
                //  answer that came after s_ask gave up on it
                zmsg_t *late = zmsg_recv (actor);
                bool ended = !late || zmsg_signal (late) >= 0;
                zmsg_destroy (&late);
                if (ended) {
                    bn_log_error ("the node actor stopped");
                    rc = 1;
                    break;
                }
            }
            if (link && (items[1].revents & ZMQ_POLLOUT) &&
                bn_nodelink_flush (link) < 0)
                break;
            bool eof = false;
            zmsg_t *msg = NULL;
            while (link && (items[1].revents & ZMQ_POLLIN) &&
                   (msg = bn_nodelink_recv (link, 0, &eof)))
                s_on_command (actor, link, &msg);
            if (eof) {
                bn_log_info ("the controller is gone; stopping");
                break;
            }
        }
    } else
        bn_log_error ("node %d could not start", options->node);
    zactor_destroy (&actor);
    bn_monitor_link_destroy (&monitor);
    if (key)
        memset (key, 0, strlen (key));
    zstr_free (&key);
    zcert_destroy (&curve);
    bn_nodelink_destroy (&link);
    bn_topology_destroy (&topology);
    return rc;
}

//  The controller's engine connection info: the file --file names, else
//  BANYAN_CONNECTION_INFO (its JSON, or a path). NULL (logged) if none.
static char *
s_connection_info (const s_options_t *options)
{
    const char *given = getenv ("BANYAN_CONNECTION_INFO");
    const char *path = options->file;
    if (!path && given && *given != '{')
        path = given;
    if (!path && !given) {
        bn_log_error ("no connection info: set BANYAN_CONNECTION_INFO or "
                      "give --file");
        return NULL;
    }
    if (!path)
        return strdup (given);
    zfile_t *file = zfile_new (NULL, path);
    zchunk_t *chunk =
        file && zfile_input (file) == 0 ? zfile_read (file, 1 << 20, 0) : NULL;
    char *text = chunk ? zchunk_strdup (chunk) : NULL;
    if (!text)
        bn_log_error ("cannot read the connection file %s", path);
    zchunk_destroy (&chunk);
    zfile_destroy (&file);
    return text;
}

//  Run as a host node until a signal; the exit code.
static int
s_run_host (const s_options_t *options, bn_config_t *config)
{
    char *info = s_connection_info (options);
    char *dir = options->profile_dir ? strdup (options->profile_dir)
                                     : bn_config_profile_dir (config, NULL);
    char *path =
        dir ? bn_connfile_path (dir, bn_config_str (config, "cluster.id"),
                                BN_CONNFILE_ENGINE)
            : NULL;
    const char *plugins = bn_config_str (config, "controller.reduce_plugins");
    int lowest, highest;
    bn_config_ports (config, "controller.ports", &lowest, &highest);
    bn_hostnode_args_t args = {.connection_info = info,
                               .name = options->host_name,
                               .ip = options->ip,
                               .ports = {lowest, highest},
                               .connfile_path = path,
                               .registration_timeout_ms = (int)bn_config_msecs (
                                   config, "controller.registration_timeout"),
                               .connect_grace_ms = (int)bn_config_msecs (
                                   config, "controller.connect_grace"),
                               .hwm = bn_config_int (config, "controller.hwm"),
                               .reduce_plugins = *plugins ? plugins : NULL,
                               .status = -1};
    zactor_t *actor =
        info && path ? zactor_new (bn_hostnode_actor, &args) : NULL;
    int rc = actor && args.status == 0 ? 0 : 1;
    bool ready = false;
    while (rc == 0 && !s_stop) {
        zmq_pollitem_t item = {zsock_resolve (actor), 0, ZMQ_POLLIN, 0};
        if (zmq_poll (&item, 1, 1000) < 0 && errno != EINTR)
            break;
        if (!(item.revents & ZMQ_POLLIN))
            continue;
        char *event = NULL, *detail = NULL;
        zstr_recvx (actor, &event, &detail, NULL);
        if (event && streq (event, "READY") && detail && !ready) {
            ready = true;
            printf ("%s\n", detail);
            fflush (stdout);
        } else if (event && streq (event, "FAILED")) {
            bn_log_error ("host node: %s", detail ? detail : "failed");
            rc = 1;
        } else if (!event) {
            rc = 1;
        }
        zstr_free (&event);
        zstr_free (&detail);
    }
    if (rc == 0)
        bn_log_info ("host node: stopping");
    zactor_destroy (&actor);
    if (info)
        memset (info, 0, strlen (info));
    free (info);
    free (path);
    free (dir);
    return rc;
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
    s_options_t options = {.node = -1};
    int rc = s_parse (argc, argv, &options, config);
    if (rc == 0)
        rc = bn_args_load (S_NAME, config, NULL);
    if (rc != 0) {
        bn_config_destroy (&config);
        return rc == 1 ? 0 : rc;
    }
    char ident[64];
    if (options.host)
        snprintf (ident, sizeof ident, "host");
    else
        snprintf (ident, sizeof ident, "bcast.%d", options.node);
    if (bn_args_log (config, ident) != 0) {
        fprintf (stderr, S_NAME ": cannot open log file %s\n",
                 bn_config_str (config, "log.file"));
        bn_config_destroy (&config);
        return 1;
    }
    //  a supervised node stops when its controller does, not on the
    //  terminal's Ctrl-C (which reaches the whole process group)
    zsys_handler_set (NULL);
    struct sigaction action;
    memset (&action, 0, sizeof action);
    action.sa_handler = s_on_signal;
    sigaction (SIGTERM, &action, NULL);
    if (options.control_fd >= 0)
        action.sa_handler = SIG_IGN;
    sigaction (SIGINT, &action, NULL);
    rc =
        options.host ? s_run_host (&options, config) : s_run (&options, config);
    bn_config_destroy (&config);
    return rc;
}

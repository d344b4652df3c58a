/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcluster: start, connect to and stop the cluster of a
    benchmark case.  */
#include "bn_benchcluster.h"
#include "bn_benchfmt.h"
#include "bn_clusterrec.h"
#include "bn_launcher.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_SPAWNED 64
#define S_PYTHON "/usr/bin/python3"

struct _bn_benchcluster_t {
    bn_benchcase_t *c;            //  the case (folder, reasons)
    bn_benchstack_t stack;        //  what runs
    int engines;                  //  engines to wait for
    int depth;                    //  controller --depth, or -1
    int per_process;              //  engines per banyan-engine process
    char *tree_mode;              //  controller --tree-mode, or NULL
    bool curve;                   //  controller --curve
    char *topology;               //  controller --topology, or NULL
    bn_launcher_t *launcher;      //  banyan stack
    pid_t spawned[S_MAX_SPAWNED]; //  peer and mixed stacks' processes
    int spawned_count;            //  how many
    pid_t controller;             //  controller pid when spawned
    bn_client_t *client;          //  connected once engines registered
    double start_seconds;         //  launch to all registered
    char client_file[4096];       //  the connection files
    char engine_file[4096];
};

int
bn_benchstack_parse (const char *name)
{
    if (!name || strcmp (name, "banyan") == 0)
        return BN_BENCHSTACK_BANYAN;
    if (strcmp (name, "ipp") == 0)
        return BN_BENCHSTACK_IPP;
    if (strcmp (name, "mixed") == 0)
        return BN_BENCHSTACK_MIXED;
    return -1;
}

bn_benchcluster_t *
bn_benchcluster_new (bn_benchcase_t *c, bn_benchstack_t stack, int engines)
{
    assert (c && c->dir);
    bn_benchcluster_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->c = c;
    self->stack = stack;
    self->engines = engines;
    self->depth = -1;
    self->per_process = bn_benchcase_per_process (c, engines);
    snprintf (self->client_file, sizeof self->client_file,
              "%s/security/ipcontroller-client.json", c->dir);
    snprintf (self->engine_file, sizeof self->engine_file,
              "%s/security/ipcontroller-engine.json", c->dir);
    return self;
}

//  SIGTERM, then SIGKILL after grace seconds, to each spawned process.
static void
s_stop_spawned (bn_benchcluster_t *self, double grace)
{
    for (int i = self->spawned_count - 1; i >= 0; i--)
        kill (self->spawned[i], SIGTERM);
    double deadline = zclock_usecs () / 1e6 + grace;
    for (int i = 0; i < self->spawned_count; i++) {
        int status;
        while (waitpid (self->spawned[i], &status, WNOHANG) == 0) {
            if (zclock_usecs () / 1e6 > deadline) {
                kill (self->spawned[i], SIGKILL);
                waitpid (self->spawned[i], &status, 0);
                break;
            }
            usleep (5000);
        }
    }
    self->spawned_count = 0;
}

void
bn_benchcluster_destroy (bn_benchcluster_t **self_p)
{
    assert (self_p);
    bn_benchcluster_t *self = *self_p;
    if (!self)
        return;
    bn_client_destroy (&self->client);
    if (self->launcher) {
        bn_launcher_stop (self->c->dir, "", 3.0, false, NULL);
        bn_launcher_abort (self->launcher);
        bn_launcher_destroy (&self->launcher);
    }
    s_stop_spawned (self, 3.0);
    free (self->tree_mode);
    free (self->topology);
    free (self);
    *self_p = NULL;
}

void
bn_benchcluster_set_depth (bn_benchcluster_t *self, int depth)
{
    self->depth = depth;
}

void
bn_benchcluster_set_tree_mode (bn_benchcluster_t *self, const char *mode)
{
    free (self->tree_mode);
    self->tree_mode = mode ? strdup (mode) : NULL;
}

void
bn_benchcluster_set_topology (bn_benchcluster_t *self, const char *topology)
{
    free (self->topology);
    self->topology = topology ? strdup (topology) : NULL;
}

void
bn_benchcluster_set_curve (bn_benchcluster_t *self, bool curve)
{
    self->curve = curve;
}

void
bn_benchcluster_set_per_process (bn_benchcluster_t *self, int k)
{
    self->per_process = k > 0 ? k : 1;
}

//  Start argv[0] with its output in <dir>/log/<name>-<n>.log; in this
//  process group, so that the runner can end it with the case. Returns
//  the pid, or -1.
static pid_t
s_spawn (bn_benchcluster_t *self, const char *name, char *const argv[])
{
    if (self->spawned_count >= S_MAX_SPAWNED)
        return -1;
    char path[4096];
    snprintf (path, sizeof path, "%s/log", self->c->dir);
    mkdir (path, 0700);
    snprintf (path, sizeof path, "%s/log/%s-%d.log", self->c->dir, name,
              self->spawned_count);
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open ("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2 (fd, 1);
            dup2 (fd, 2);
        }
        if (null >= 0)
            dup2 (null, 0);
        execv (argv[0], argv);
        _exit (127);
    }
    if (pid > 0)
        self->spawned[self->spawned_count++] = pid;
    return pid;
}

//  Wait for the client connection file (a spawned controller writes it).
static int
s_wait_file (bn_benchcluster_t *self, double deadline)
{
    while (access (self->client_file, F_OK) != 0 ||
           access (self->engine_file, F_OK) != 0) {
        if (self->launcher && bn_launcher_poll (self->launcher, 20) < 0)
            return bn_benchcase_fail (self->c, "%s",
                                      bn_launcher_problem (self->launcher));
        if (!self->launcher)
            usleep (20000);
        if (zclock_usecs () / 1e6 > deadline)
            return bn_benchcase_fail (self->c,
                                      "the controller wrote no connection "
                                      "file in time");
    }
    //  a spawned controller writes the file in more than one step
    if (!self->launcher)
        usleep (100000);
    return 0;
}

static int
s_start_banyan (bn_benchcluster_t *self, double deadline)
{
    char *controller = bn_benchcase_program (self->c, "banyan-controller");
    char *engine = bn_benchcase_program (self->c, "banyan-engine");
    if (!controller || !engine) {
        free (controller);
        free (engine);
        return bn_benchcase_fail (self->c,
                                  "no banyan-controller or "
                                  "banyan-engine in %s",
                                  self->c->bin_dir);
    }
    self->launcher = bn_launcher_new (self->c->dir, "");
    if (!self->launcher) {
        free (controller);
        free (engine);
        return bn_benchcase_fail (self->c, "out of memory");
    }
    bn_launcher_set_programs (self->launcher, controller, engine);
    free (controller);
    free (engine);
    bn_launcher_set_engines (self->launcher, self->engines, self->per_process);
    bn_launcher_add_controller_arg (self->launcher, "--ip");
    bn_launcher_add_controller_arg (self->launcher, "127.0.0.1");
    if (self->depth >= 0) {
        char depth[16];
        snprintf (depth, sizeof depth, "%d", self->depth);
        bn_launcher_add_controller_arg (self->launcher, "--depth");
        bn_launcher_add_controller_arg (self->launcher, depth);
    }
    if (self->tree_mode) {
        bn_launcher_add_controller_arg (self->launcher, "--tree-mode");
        bn_launcher_add_controller_arg (self->launcher, self->tree_mode);
    }
    if (self->curve)
        bn_launcher_add_controller_arg (self->launcher, "--curve");
    if (self->topology) {
        char engines[24];
        snprintf (engines, sizeof engines, "%d", self->engines);
        bn_launcher_add_controller_arg (self->launcher, "--topology");
        bn_launcher_add_controller_arg (self->launcher, self->topology);
        bn_launcher_add_controller_arg (self->launcher, "--engines");
        bn_launcher_add_controller_arg (self->launcher, engines);
    }
    bn_launcher_set_timeout (self->launcher, deadline - zclock_usecs () / 1e6);
    if (bn_launcher_start (self->launcher) != 0)
        return bn_benchcase_fail (self->c, "cannot start the cluster: %s",
                                  strerror (errno));
    if (s_wait_file (self, deadline) != 0)
        return -1;
    while (true) {
        int rc = bn_launcher_poll (self->launcher, 20);
        if (rc > 0)
            break;
        if (rc < 0)
            return bn_benchcase_fail (self->c, "%s",
                                      bn_launcher_problem (self->launcher));
        if (zclock_usecs () / 1e6 > deadline)
            return bn_benchcase_fail (self->c, "the engine processes were "
                                               "not started in time");
    }
    return 0;
}

static int
s_start_spawned (bn_benchcluster_t *self, double deadline)
{
    char profile_arg[4200], file_arg[4200];
    snprintf (profile_arg, sizeof profile_arg, "--profile-dir=%s",
              self->c->dir);
    snprintf (file_arg, sizeof file_arg, "--file=%s", self->engine_file);
    if (self->stack == BN_BENCHSTACK_IPP) {
        char *argv[] = {S_PYTHON,
                        "-m",
                        "ipyparallel.controller",
                        "--ip=127.0.0.1",
                        profile_arg,
                        "--log-level=WARN",
                        NULL};
        self->controller = s_spawn (self, "ipcontroller", argv);
    } else {
        char *controller = bn_benchcase_program (self->c, "banyan-controller");
        if (!controller)
            return bn_benchcase_fail (self->c, "no banyan-controller in %s",
                                      self->c->bin_dir);
        char depth[16];
        snprintf (depth, sizeof depth, "%d", self->depth);
        char dir[4096];
        snprintf (dir, sizeof dir, "%s", self->c->dir);
        char *argv[] = {controller,  "--profile-dir",
                        dir,         "--ip",
                        "127.0.0.1", self->depth >= 0 ? "--depth" : NULL,
                        depth,       NULL};
        self->controller = s_spawn (self, "banyan-controller", argv);
        free (controller);
    }
    if (self->controller < 0)
        return bn_benchcase_fail (self->c, "cannot start the controller");
    if (s_wait_file (self, deadline) != 0)
        return -1;
    for (int i = 0; i < self->engines; i++) {
        char *argv[] = {
            S_PYTHON,           "-m", "ipyparallel.engine", file_arg,
            "--log-level=WARN", NULL};
        if (s_spawn (self, "ipengine", argv) < 0)
            return bn_benchcase_fail (self->c, "cannot start ipengine %d", i);
    }
    return 0;
}

int
bn_benchcluster_start (bn_benchcluster_t *self, double timeout)
{
    assert (self);
    if (self->stack != BN_BENCHSTACK_BANYAN &&
        self->engines + 1 > S_MAX_SPAWNED)
        return bn_benchcase_fail (self->c, "at most %d stock engines",
                                  S_MAX_SPAWNED - 1);
    double start = zclock_usecs () / 1e6;
    double deadline = start + timeout;
    int rc = self->stack == BN_BENCHSTACK_BANYAN
                 ? s_start_banyan (self, deadline)
                 : s_start_spawned (self, deadline);
    if (rc != 0)
        return -1;
    int error = 0;
    self->client = bn_client_new (self->client_file,
                                  deadline - zclock_usecs () / 1e6, &error);
    if (!self->client)
        return bn_benchcase_fail (self->c, "cannot connect: %s",
                                  bn_strerror (error));
    while (true) {
        int wait = bn_client_wait_for_engines (self->client,
                                               (size_t)self->engines, 0.05);
        if (wait == 0)
            break;
        if (wait != BN_ETIMEDOUT)
            return bn_benchcase_fail (self->c, "the controller went away: %s",
                                      bn_strerror (wait));
        if (self->launcher && bn_launcher_poll (self->launcher, 0) < 0)
            return bn_benchcase_fail (self->c, "%s",
                                      bn_launcher_problem (self->launcher));
        if (zclock_usecs () / 1e6 > deadline)
            return bn_benchcase_fail (
                self->c, "only %zu of %d engines registered in %.0f s",
                bn_client_engine_count (self->client), self->engines, timeout);
    }
    self->start_seconds = zclock_usecs () / 1e6 - start;
    return 0;
}

bn_client_t *
bn_benchcluster_client (bn_benchcluster_t *self)
{
    return self->client;
}

double
bn_benchcluster_start_seconds (bn_benchcluster_t *self)
{
    return self->start_seconds;
}

pid_t
bn_benchcluster_controller_pid (bn_benchcluster_t *self)
{
    if (self->controller > 0)
        return self->controller;
    pid_t pid = bn_clusterrec_controller_pid (self->c->dir, "");
    return pid > 0 ? pid : 0;
}

pid_t
bn_benchcluster_pgid (bn_benchcluster_t *self)
{
    return self->launcher ? bn_launcher_pgid (self->launcher) : 0;
}

const char *
bn_benchcluster_client_file (bn_benchcluster_t *self)
{
    return self->client_file;
}

const char *
bn_benchcluster_engine_file (bn_benchcluster_t *self)
{
    return self->engine_file;
}

const char *
bn_benchcluster_echo_fn (bn_benchcluster_t *self)
{
    return self->stack == BN_BENCHSTACK_BANYAN ? "echo" : "copy.copy";
}

const char *
bn_benchcluster_noop_fn (bn_benchcluster_t *self)
{
    return self->stack == BN_BENCHSTACK_BANYAN ? "noop" : "builtins.len";
}

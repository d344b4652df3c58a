/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchhosts: make test hosts with hosts.sh and run a cluster on them
    as a launcher would (doc/hosts.md): the controller on the bridge, a
    host node and its engines on each host.  */
#include "bn_benchhosts.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BN_HOSTS_SCRIPT
#define BN_HOSTS_SCRIPT "tests/hosts/hosts.sh"
#endif
//  Environment variable naming another hosts.sh
#define S_SCRIPT_VAR "BANYAN_HOSTS_SCRIPT"
#define S_OUTPUT_MAX 8192

struct _bn_benchhosts_t {
    bn_benchcase_t *c;      //  the case (folder, programs, reasons)
    int hosts;              //  h1..hN
    int per_host;           //  engines behind each host node
    char script[4096];      //  hosts.sh
    char run[16];           //  HOSTS_RUN, "" until up
    char head[64];          //  the bridge's address
    bool up;                //  hosts.sh up succeeded
    pid_t controller;       //  on head
    pid_t *nodes;           //  host nodes, one per host
    bn_client_t *client;    //  connected to the controller
    double registration;    //  seconds, engines started to registered
    char ctl[4096];         //  the controller's profile folder
    char client_file[4200]; //  its connection files
    char engine_file[4200];
};

bn_benchhosts_t *
bn_benchhosts_new (bn_benchcase_t *c, int hosts, int per_host)
{
    bn_benchhosts_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->c = c;
    self->hosts = hosts;
    self->per_host = per_host;
    self->nodes = calloc ((size_t)(hosts > 0 ? hosts : 1), sizeof (pid_t));
    if (!self->nodes) {
        free (self);
        return NULL;
    }
    const char *script = getenv (S_SCRIPT_VAR);
    snprintf (self->script, sizeof self->script, "%s",
              script && *script ? script : BN_HOSTS_SCRIPT);
    snprintf (self->ctl, sizeof self->ctl, "%s/ctl", c->dir);
    snprintf (self->client_file, sizeof self->client_file,
              "%s/security/ipcontroller-client.json", self->ctl);
    snprintf (self->engine_file, sizeof self->engine_file,
              "%s/security/ipcontroller-engine.json", self->ctl);
    return self;
}

//  Run argv with its standard output in out (at most size - 1 bytes,
//  the rest read and dropped) and its errors in the case's log. Returns
//  its exit status, or -1.
static int
s_run (bn_benchhosts_t *self, char *const argv[], char *out, size_t size)
{
    int fds[2];
    if (pipe (fds) != 0)
        return -1;
    pid_t pid = fork ();
    if (pid == 0) {
        char path[4200];
        snprintf (path, sizeof path, "%s/hosts.log", self->c->dir);
        int log = open (path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2 (fds[1], 1);
        if (log >= 0)
            dup2 (log, 2);
        //  nothing it leaves running may hold the pipe open
        close (fds[0]);
        close (fds[1]);
        if (log > 2)
            close (log);
        execv (argv[0], argv);
        _exit (127);
    }
    close (fds[1]);
    size_t used = 0;
    char buf[1024];
    ssize_t n;
    while (pid > 0 && (n = read (fds[0], buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (ssize_t k = 0; k < n && out && used + 1 < size; k++)
            out[used++] = buf[k];
    }
    close (fds[0]);
    if (out && size)
        out[used] = 0;
    int status;
    if (pid < 0 || waitpid (pid, &status, 0) != pid)
        return -1;
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

//  hosts.sh CMD ARG...: the command's status; its output in out.
static int
s_hosts (bn_benchhosts_t *self, char *out, size_t size, char *const args[])
{
    char *argv[16] = {"/bin/bash", self->script};
    int argc = 2;
    for (int i = 0; args[i] && argc < 15; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    return s_run (self, argv, out, size);
}

//  The value of `export NAME=VALUE` in hosts.sh up's output.
static bool
s_export (const char *output, const char *name, char *value, size_t size)
{
    char key[64];
    snprintf (key, sizeof key, "export %s=", name);
    const char *at = strstr (output, key);
    if (!at)
        return false;
    at += strlen (key);
    size_t len = strcspn (at, "\n");
    snprintf (value, size, "%.*s", (int)len, at);
    return true;
}

//  Start argv on host ("head", or "h1"...) as hosts.sh start does, its
//  output in the run's log/label.log. Returns its pid, or -1.
static pid_t
s_start_on (bn_benchhosts_t *self, const char *host, const char *label,
            char *const argv[])
{
    char *args[16] = {"start", (char *)host, (char *)label};
    int argc = 3;
    for (int i = 0; argv[i] && argc < 15; i++)
        args[argc++] = argv[i];
    args[argc] = NULL;
    char out[64] = "";
    if (s_hosts (self, out, sizeof out, args) != 0)
        return -1;
    long pid = strtol (out, NULL, 10);
    return pid > 0 ? (pid_t)pid : -1;
}

//  Wait for a file to appear, at most until deadline (zclock seconds).
static bool
s_wait_file (const char *path, double deadline)
{
    while (access (path, R_OK) != 0) {
        if (zclock_usecs () / 1e6 > deadline)
            return false;
        usleep (20000);
    }
    return true;
}

//  May this machine make hosts? BN_BENCH_OK, or BN_BENCH_SKIP with
//  hosts_check's reason.
static int
s_check (bn_benchhosts_t *self)
{
    if (access (self->script, R_OK) != 0)
        return bn_benchcase_skip (self->c,
                                  "no test-host script %s (set " S_SCRIPT_VAR
                                  " to tests/hosts/hosts.sh)",
                                  self->script);
    if (geteuid () != 0)
        return bn_benchcase_skip (self->c, "test hosts need root (network "
                                           "namespaces)");
    char *argv[] = {"/bin/bash", "-c",         ". \"$1\" && hosts_check",
                    "bash",      self->script, NULL};
    char out[512] = "";
    int rc = s_run (self, argv, out, sizeof out);
    if (rc == 0)
        return BN_BENCH_OK;
    out[strcspn (out, "\n")] = 0;
    return bn_benchcase_skip (self->c, "%s", *out ? out : "hosts_check failed");
}

int
bn_benchhosts_start (bn_benchhosts_t *self, double timeout)
{
    double deadline = zclock_usecs () / 1e6 + timeout;
    int rc = s_check (self);
    if (rc != BN_BENCH_OK)
        return rc;
    char *controller = bn_benchcase_program (self->c, "banyan-controller");
    char *scheduler = bn_benchcase_program (self->c, "banyan-scheduler");
    char *engine = bn_benchcase_program (self->c, "banyan-engine");
    if (!controller || !scheduler || !engine) {
        free (controller);
        free (scheduler);
        free (engine);
        return bn_benchcase_fail (self->c,
                                  "no banyan-controller, "
                                  "banyan-scheduler or banyan-engine "
                                  "in %s",
                                  self->c->bin_dir);
    }
    //  The run belongs to this process: a case killed at its timeout
    //  leaves its hosts to the next hosts.sh up, which reaps them.
    char owner[32], count[16];
    snprintf (owner, sizeof owner, "%d", (int)getpid ());
    setenv ("HOSTS_OWNER", owner, 1);
    snprintf (count, sizeof count, "%d", self->hosts);
    char *output = malloc (S_OUTPUT_MAX);
    char dir[4096] = "";
    rc = output ? s_hosts (self, output, S_OUTPUT_MAX,
                           (char *[]){"up", count, "--no-ssh", NULL})
                : -1;
    if (rc == 0 && s_export (output, "HOSTS_DIR", dir, sizeof dir) &&
        s_export (output, "HOSTS_RUN", self->run, sizeof self->run) &&
        s_export (output, "HOSTS_HEAD", self->head, sizeof self->head)) {
        setenv ("HOSTS_DIR", dir, 1);
        self->up = true;
    }
    free (output);
    if (!self->up) {
        rc = bn_benchcase_fail (self->c,
                                "hosts.sh up %d failed (see %s/hosts.log)",
                                self->hosts, self->c->dir);
        goto done;
    }
    self->controller =
        s_start_on (self, "head", "ctl",
                    (char *[]){controller, "--profile-dir", self->ctl, "--ip",
                               self->head, NULL});
    if (self->controller < 0 || !s_wait_file (self->engine_file, deadline) ||
        !s_wait_file (self->client_file, deadline)) {
        rc = bn_benchcase_fail (self->c, "the controller wrote no connection "
                                         "files in time");
        goto done;
    }
    //  the controller writes the file in more than one step
    usleep (100000);
    char host[16], label[32], profile[4200], file[4300];
    for (int i = 0; i < self->hosts; i++) {
        snprintf (host, sizeof host, "h%d", i + 1);
        snprintf (label, sizeof label, "node-h%d", i + 1);
        snprintf (profile, sizeof profile, "%s/h%d", self->c->dir, i + 1);
        self->nodes[i] = s_start_on (
            self, host, label,
            (char *[]){scheduler, "--host", "--file", self->engine_file,
                       "--profile-dir", profile, NULL});
        if (self->nodes[i] < 0) {
            rc = bn_benchcase_fail (self->c,
                                    "cannot start the host node "
                                    "of %s",
                                    host);
            goto done;
        }
    }
    for (int i = 0; i < self->hosts; i++) {
        snprintf (file, sizeof file, "%s/h%d/security/ipcontroller-engine.json",
                  self->c->dir, i + 1);
        if (!s_wait_file (file, deadline)) {
            rc = bn_benchcase_fail (self->c,
                                    "the host node of h%d wrote no "
                                    "connection file in time",
                                    i + 1);
            goto done;
        }
    }
    int error = 0;
    self->client = bn_client_new (self->client_file,
                                  deadline - zclock_usecs () / 1e6, &error);
    if (!self->client) {
        rc = bn_benchcase_fail (self->c, "cannot connect: %s",
                                bn_strerror (error));
        goto done;
    }
    //  From here on the engines: all of them start at once, as a
    //  launcher starts them on its hosts.
    double start = zclock_usecs () / 1e6;
    char per_host[16];
    snprintf (per_host, sizeof per_host, "%d", self->per_host);
    for (int i = 0; i < self->hosts; i++) {
        snprintf (host, sizeof host, "h%d", i + 1);
        snprintf (label, sizeof label, "engines-h%d", i + 1);
        snprintf (profile, sizeof profile, "%s/h%d", self->c->dir, i + 1);
        if (s_start_on (self, host, label,
                        (char *[]){engine, "--count", per_host, "--profile-dir",
                                   profile, NULL}) < 0) {
            rc = bn_benchcase_fail (self->c, "cannot start the engines of %s",
                                    host);
            goto done;
        }
    }
    size_t engines = (size_t)self->hosts * (size_t)self->per_host;
    while (true) {
        int wait = bn_client_wait_for_engines (self->client, engines, 0.05);
        if (wait == 0)
            break;
        if (wait != BN_ETIMEDOUT) {
            rc = bn_benchcase_fail (self->c, "the controller went away: %s",
                                    bn_strerror (wait));
            goto done;
        }
        if (zclock_usecs () / 1e6 > deadline) {
            rc = bn_benchcase_fail (
                self->c, "only %zu of %zu engines registered in time",
                bn_client_engine_count (self->client), engines);
            goto done;
        }
    }
    self->registration = zclock_usecs () / 1e6 - start;
    rc = BN_BENCH_OK;
done:
    free (controller);
    free (scheduler);
    free (engine);
    return rc;
}

void
bn_benchhosts_destroy (bn_benchhosts_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    bn_benchhosts_t *self = *self_p;
    bn_client_destroy (&self->client);
    //  down ends every process on the hosts and the controller (by the
    //  pids hosts.sh start recorded), then removes the hosts
    if (self->up)
        s_hosts (self, NULL, 0, (char *[]){"down", NULL});
    free (self->nodes);
    free (self);
    *self_p = NULL;
}

bn_client_t *
bn_benchhosts_client (bn_benchhosts_t *self)
{
    return self->client;
}

double
bn_benchhosts_registration_seconds (bn_benchhosts_t *self)
{
    return self->registration;
}

int64_t
bn_benchhosts_bytes_in (bn_benchhosts_t *self, int i)
{
    char path[256];
    snprintf (path, sizeof path, "/sys/class/net/bnh%sv%d/statistics/tx_bytes",
              self->run, i + 1);
    FILE *file = fopen (path, "r");
    long long bytes = -1;
    if (file && fscanf (file, "%lld", &bytes) != 1)
        bytes = -1;
    if (file)
        fclose (file);
    return bytes;
}

pid_t
bn_benchhosts_controller_pid (bn_benchhosts_t *self)
{
    return self->controller;
}

pid_t
bn_benchhosts_node_pid (bn_benchhosts_t *self, int i)
{
    return i >= 0 && i < self->hosts ? self->nodes[i] : -1;
}

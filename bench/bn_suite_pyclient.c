/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_pyclient: the stock Python client (ipyparallel.Client)
    driving stock engines behind banyan-controller (mixed) or behind
    ipcontroller (ipp): the figure a Python user sees. The client runs in
    a helper process that makes one call per line it reads.  */
#include "bn_benchcluster.h"
#include "bn_suites.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PYTHON "/usr/bin/python3"
#define S_CALL_TIMEOUT_MS 60000

//  argv: connection file, engines, view (direct|coalescing|noncoalescing),
//  bytes
static const char *s_driver =
    "import copy, sys\n"
    "import ipyparallel as ipp\n"
    "rc = ipp.Client(sys.argv[1], timeout=60)\n"
    "rc.wait_for_engines(int(sys.argv[2]), timeout=120)\n"
    "if sys.argv[3] == 'direct':\n"
    "    view = rc[:]\n"
    "else:\n"
    "    view = rc.broadcast_view(is_coalescing=sys.argv[3] == 'coalescing')\n"
    "data = b'x' * int(sys.argv[4])\n"
    "view.apply_sync(copy.copy, data)\n"
    "print('ready', flush=True)\n"
    "for line in sys.stdin:\n"
    "    view.apply_sync(copy.copy, data)\n"
    "    print('ok', flush=True)\n"
    "rc.close()\n";

typedef struct {
    bn_benchcluster_t *cluster; //  stock engines and a controller
    pid_t driver;               //  the Python client process
    int to_driver;              //  its stdin
    int from_driver;            //  its stdout
} s_state_t;

//  Read a line from fd within timeout_ms; returns 0 with the line in buf,
//  or -1.
static int
s_read_line (int fd, char *buf, size_t size, int timeout_ms)
{
    size_t used = 0;
    int64_t start = zclock_mono ();
    while (used + 1 < size) {
        int elapsed = (int)(zclock_mono () - start);
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll (&pfd, 1, timeout_ms - elapsed);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return -1;
        ssize_t n = read (fd, buf + used, 1);
        if (n <= 0)
            return -1;
        if (buf[used] == '\n') {
            buf[used] = 0;
            return 0;
        }
        used++;
    }
    return -1;
}

static int
s_setup (bn_benchcase_t *c, const char *view)
{
    char stack_name[32] = "mixed";
    bn_benchcase_str (c, "stack", stack_name, sizeof stack_name);
    int stack = bn_benchstack_parse (stack_name);
    if (stack != BN_BENCHSTACK_MIXED && stack != BN_BENCHSTACK_IPP)
        return bn_benchcase_fail (c, "the Python client drives stock "
                                     "engines: stack 'mixed' or 'ipp'");
    int engines = (int)bn_benchcase_long (c, "engines", 1);
    if (engines > 16)
        return bn_benchcase_skip (
            c, "stock engines are started one Python process each: at most "
               "16 here");
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    self->to_driver = self->from_driver = -1;
    self->cluster = bn_benchcluster_new (c, (bn_benchstack_t)stack, engines);
    if (!self->cluster)
        return bn_benchcase_fail (c, "out of memory");
    //  The C client is not needed, but waiting with it is the same wait
    if (bn_benchcluster_start (self->cluster, 60 + engines * 4.0) != 0)
        return BN_BENCH_FAIL;
    char file[4096], count[16], bytes[32];
    snprintf (file, sizeof file, "%s/security/ipcontroller-client.json",
              c->dir);
    snprintf (count, sizeof count, "%d", engines);
    snprintf (bytes, sizeof bytes, "%ld", bn_benchcase_long (c, "bytes", 1000));
    int in[2], out[2];
    if (pipe (in) != 0 || pipe (out) != 0)
        return bn_benchcase_fail (c, "pipe: %s", strerror (errno));
    char log[4200];
    snprintf (log, sizeof log, "%s/pyclient.log", c->dir);
    self->driver = fork ();
    if (self->driver == 0) {
        dup2 (in[0], 0);
        dup2 (out[1], 1);
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0)
            dup2 (fd, 2);
        close (in[1]);
        close (out[0]);
        execl (S_PYTHON, S_PYTHON, "-c", s_driver, file, count, view, bytes,
               (char *)NULL);
        _exit (127);
    }
    close (in[0]);
    close (out[1]);
    self->to_driver = in[1];
    self->from_driver = out[0];
    if (self->driver < 0)
        return bn_benchcase_fail (c, "fork: %s", strerror (errno));
    char line[64];
    if (s_read_line (self->from_driver, line, sizeof line, 180000) != 0 ||
        strcmp (line, "ready") != 0)
        return bn_benchcase_fail (c, "the Python client did not start (see "
                                     "its log, pyclient.log)");
    return BN_BENCH_OK;
}

int
bn_suite_pyclient_direct_setup (bn_benchcase_t *c)
{
    return s_setup (c, "direct");
}

int
bn_suite_pyclient_coalescing_setup (bn_benchcase_t *c)
{
    return s_setup (c, "coalescing");
}

int
bn_suite_pyclient_noncoalescing_setup (bn_benchcase_t *c)
{
    return s_setup (c, "noncoalescing");
}

//  One apply_sync of copy.copy(B bytes) on every engine.
int
bn_suite_pyclient_echo_run (bn_benchcase_t *c, double *value)
{
    s_state_t *self = c->state;
    char line[64];
    if (write (self->to_driver, "go\n", 3) != 3 ||
        s_read_line (self->from_driver, line, sizeof line, S_CALL_TIMEOUT_MS) !=
            0 ||
        strcmp (line, "ok") != 0)
        return bn_benchcase_fail (c, "the Python client's call failed");
    return BN_BENCH_OK;
}

void
bn_suite_pyclient_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    if (self->to_driver >= 0)
        close (self->to_driver);
    if (self->driver > 0) {
        //  it ends at EOF; one that does not is killed
        int status;
        for (int i = 0; i < 200; i++) {
            if (waitpid (self->driver, &status, WNOHANG) != 0)
                break;
            usleep (10000);
            if (i == 199) {
                kill (self->driver, SIGKILL);
                waitpid (self->driver, &status, 0);
            }
        }
    }
    if (self->from_driver >= 0)
        close (self->from_driver);
    bn_benchcluster_destroy (&self->cluster);
    free (self);
    c->state = NULL;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchfloor: a ROUTER and DEALER echo helper processes, the bare
    ZeroMQ floor of banyan-bench.  */
#include "bn_benchfloor.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define S_RELAY_ID "relay"

struct _bn_benchfloor_t {
    void *context;   //  this process's ZeroMQ context
    void *router;    //  sends to and hears from every echo socket
    int engines;     //  echo sockets
    bool relay;      //  through the relay helper (the last of helpers)
    int helpers;     //  helper processes
    pid_t *pids;     //  their process ids
    int *pipes;      //  write ends: the endpoint, then EOF to stop
    char *payload;   //  the bytes sent (shared by every message)
    size_t capacity; //  bytes allocated in payload
};

//  Read a line (an endpoint) from fd into endpoint, without its newline,
//  waiting up to timeout_ms for each byte. Returns its length (0: none).
static size_t
s_read_line (int fd, char *endpoint, size_t size, int timeout_ms)
{
    size_t got = 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    while (got < size - 1 && poll (&pfd, 1, timeout_ms) == 1) {
        ssize_t n = read (fd, endpoint + got, 1);
        if (n <= 0 || endpoint[got] == '\n')
            break;
        got++;
    }
    endpoint[got] = 0;
    return got;
}

//  No high-water marks and no linger: the floor never drops or waits.
static void
s_set_unlimited (void *socket)
{
    int zero = 0;
    zmq_setsockopt (socket, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_RCVHWM, &zero, sizeof zero);
}

//  Move every message waiting on from to to, frame by frame, as received
//  (no copy of their bytes).
static void
s_forward (void *from, void *to)
{
    while (true) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, from, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            return;
        }
        if (zmq_msg_send (&frame, to, zmq_msg_more (&frame) ? ZMQ_SNDMORE : 0) <
            0)
            zmq_msg_close (&frame);
    }
}

//  The relay helper, a mux without its hub: a DEALER named S_RELAY_ID
//  connected to the endpoint read from fd, and a ROUTER the echo sockets
//  connect to, whose endpoint it writes to back. Passes [echo socket]
//  [payload] from the one to the other, and the answers back, until fd
//  reaches EOF. Never returns.
static void
s_relay (int fd, int back)
{
    char endpoint[256];
    if (s_read_line (fd, endpoint, sizeof endpoint, 30000) == 0)
        _exit (1);
    void *context = zmq_ctx_new ();
    void *front = context ? zmq_socket (context, ZMQ_DEALER) : NULL;
    void *engines = context ? zmq_socket (context, ZMQ_ROUTER) : NULL;
    if (!front || !engines)
        _exit (1);
    s_set_unlimited (front);
    s_set_unlimited (engines);
    zmq_setsockopt (front, ZMQ_ROUTING_ID, S_RELAY_ID, strlen (S_RELAY_ID));
    char bound[256];
    size_t length = sizeof bound - 1;
    if (zmq_connect (front, endpoint) != 0 ||
        zmq_bind (engines, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt (engines, ZMQ_LAST_ENDPOINT, bound, &length) != 0)
        _exit (1);
    strcat (bound, "\n");
    if (write (back, bound, strlen (bound)) < 0)
        _exit (1);
    close (back);
    zmq_pollitem_t items[3] = {{front, 0, ZMQ_POLLIN, 0},
                               {engines, 0, ZMQ_POLLIN, 0},
                               {NULL, fd, ZMQ_POLLIN, 0}};
    while (zmq_poll (items, 3, -1) >= 0 || errno == EINTR) {
        if (items[2].revents)
            break;
        if (items[0].revents & ZMQ_POLLIN)
            s_forward (front, engines);
        if (items[1].revents & ZMQ_POLLIN)
            s_forward (engines, front);
    }
    zmq_close (front);
    zmq_close (engines);
    zmq_ctx_term (context);
    _exit (0);
}

//  A helper: count DEALER echo sockets named e<first>... connected to the
//  endpoint read from fd; echoes (or answers each message with an empty
//  frame) until fd reaches EOF. Never returns.
static void
s_helper (int fd, int first, int count, bool echo)
{
    char endpoint[256];
    if (s_read_line (fd, endpoint, sizeof endpoint, 30000) == 0)
        _exit (1);
    void *context = zmq_ctx_new ();
    zmq_ctx_set (context, ZMQ_MAX_SOCKETS, count + 64);
    void **sockets = calloc ((size_t)count, sizeof *sockets);
    zmq_pollitem_t *items = calloc ((size_t)count + 1, sizeof *items);
    if (!context || !sockets || !items)
        _exit (1);
    for (int i = 0; i < count; i++) {
        char identity[32];
        snprintf (identity, sizeof identity, "e%d", first + i);
        sockets[i] = zmq_socket (context, ZMQ_DEALER);
        zmq_setsockopt (sockets[i], ZMQ_ROUTING_ID, identity,
                        strlen (identity));
        s_set_unlimited (sockets[i]);
        if (zmq_connect (sockets[i], endpoint) != 0)
            _exit (1);
        zmq_send (sockets[i], "hello", 5, 0);
        items[i].socket = sockets[i];
        items[i].events = ZMQ_POLLIN;
    }
    items[count].fd = fd;
    items[count].events = ZMQ_POLLIN;
    while (zmq_poll (items, count + 1, -1) >= 0 || errno == EINTR) {
        if (items[count].revents)
            break; //  the parent closed the pipe (or wrote more): stop
        for (int i = 0; i < count; i++) {
            if (!(items[i].revents & ZMQ_POLLIN))
                continue;
            while (true) {
                zmq_msg_t frame;
                zmq_msg_init (&frame);
                if (zmq_msg_recv (&frame, sockets[i], ZMQ_DONTWAIT) < 0) {
                    zmq_msg_close (&frame);
                    break;
                }
                int more = zmq_msg_more (&frame);
                if (echo)
                    zmq_msg_send (&frame, sockets[i], more ? ZMQ_SNDMORE : 0);
                else {
                    zmq_msg_close (&frame);
                    if (!more)
                        zmq_send (sockets[i], "", 0, 0);
                }
            }
        }
    }
    for (int i = 0; i < count; i++)
        zmq_close (sockets[i]);
    zmq_ctx_term (context);
    _exit (0);
}

bn_benchfloor_t *
bn_benchfloor_new (int engines, int per_process, bool echo, bool relay,
                   double timeout, char *err, size_t errsize)
{
    assert (engines > 0);
    if (per_process < 1)
        per_process = 1;
    bn_benchfloor_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->engines = engines;
    self->relay = relay;
    int echoers = (engines + per_process - 1) / per_process;
    self->helpers = echoers + (relay ? 1 : 0);
    self->pids = calloc ((size_t)self->helpers, sizeof *self->pids);
    self->pipes = calloc ((size_t)self->helpers, sizeof *self->pipes);
    if (!self->pids || !self->pipes) {
        bn_benchfloor_destroy (&self);
        return NULL;
    }
    //  the read end of the relay's pipe back: its echo sockets' endpoint
    int back = -1;
    for (int h = 0; h < self->helpers; h++) {
        bool is_relay = h == echoers;
        int fds[2], back_fds[2];
        if (pipe (fds) != 0) {
            snprintf (err, errsize, "pipe: %s", strerror (errno));
            bn_benchfloor_destroy (&self);
            return NULL;
        }
        if (is_relay && pipe (back_fds) != 0) {
            snprintf (err, errsize, "pipe: %s", strerror (errno));
            close (fds[0]);
            close (fds[1]);
            bn_benchfloor_destroy (&self);
            return NULL;
        }
        int first = h * per_process;
        int count =
            engines - first < per_process ? engines - first : per_process;
        pid_t pid = fork ();
        if (pid == 0) {
            close (fds[1]);
            for (int i = 0; i < h; i++)
                close (self->pipes[i]);
            if (is_relay) {
                close (back_fds[0]);
                s_relay (fds[0], back_fds[1]);
            }
            s_helper (fds[0], first, count, echo);
        }
        close (fds[0]);
        if (is_relay) {
            close (back_fds[1]);
            back = back_fds[0];
        }
        if (pid < 0) {
            close (fds[1]);
            snprintf (err, errsize, "fork: %s", strerror (errno));
            bn_benchfloor_destroy (&self);
            return NULL;
        }
        self->pids[h] = pid;
        self->pipes[h] = fds[1];
    }
    self->context = zmq_ctx_new ();
    zmq_ctx_set (self->context, ZMQ_MAX_SOCKETS, 1024);
    self->router = zmq_socket (self->context, ZMQ_ROUTER);
    int zero = 0, one = 1;
    zmq_setsockopt (self->router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt (self->router, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (self->router, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt (self->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    char endpoint[256];
    size_t length = sizeof endpoint - 1;
    if (zmq_bind (self->router, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt (self->router, ZMQ_LAST_ENDPOINT, endpoint, &length) !=
            0) {
        snprintf (err, errsize, "cannot bind the floor's ROUTER: %s",
                  zmq_strerror (errno));
        bn_benchfloor_destroy (&self);
        return NULL;
    }
    strcat (endpoint, "\n");
    if (relay) {
        //  the relay connects to the ROUTER, the echo sockets to the relay
        bool told =
            write (self->pipes[echoers], endpoint, strlen (endpoint)) > 0;
        size_t got = told ? s_read_line (back, endpoint, sizeof endpoint - 1,
                                         (int)(timeout * 1000))
                          : 0;
        close (back);
        if (got == 0) {
            snprintf (err, errsize, "the floor's relay did not start");
            bn_benchfloor_destroy (&self);
            return NULL;
        }
        strcat (endpoint, "\n");
    }
    for (int h = 0; h < echoers; h++)
        if (write (self->pipes[h], endpoint, strlen (endpoint)) < 0) {
            snprintf (err, errsize, "a floor helper is gone");
            bn_benchfloor_destroy (&self);
            return NULL;
        }
    //  Every echo socket says hello once connected
    double deadline = zclock_usecs () / 1e6 + timeout;
    for (int hellos = 0; hellos < engines;) {
        zmq_pollitem_t item = {self->router, 0, ZMQ_POLLIN, 0};
        int left = (int)((deadline - zclock_usecs () / 1e6) * 1000);
        if (left <= 0 || zmq_poll (&item, 1, left) <= 0) {
            snprintf (err, errsize,
                      "only %d of %d floor echo sockets connected in %.0f s",
                      hellos, engines, timeout);
            bn_benchfloor_destroy (&self);
            return NULL;
        }
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        while (zmq_msg_recv (&frame, self->router, ZMQ_DONTWAIT) >= 0 &&
               zmq_msg_more (&frame))
            ;
        zmq_msg_close (&frame);
        hellos++;
    }
    return self;
}

void
bn_benchfloor_destroy (bn_benchfloor_t **self_p)
{
    assert (self_p);
    bn_benchfloor_t *self = *self_p;
    if (!self)
        return;
    if (self->router)
        zmq_close (self->router);
    if (self->context)
        zmq_ctx_term (self->context);
    for (int h = 0; h < self->helpers; h++)
        if (self->pipes && self->pipes[h] > 0)
            close (self->pipes[h]);
    for (int h = 0; h < self->helpers; h++) {
        if (!self->pids || self->pids[h] <= 0)
            continue;
        //  They stop at EOF on their pipe; a stuck one is killed
        int status;
        double deadline = zclock_usecs () / 1e6 + 5;
        while (waitpid (self->pids[h], &status, WNOHANG) == 0) {
            if (zclock_usecs () / 1e6 > deadline) {
                kill (self->pids[h], SIGKILL);
                waitpid (self->pids[h], &status, 0);
                break;
            }
            usleep (2000);
        }
    }
    free (self->pids);
    free (self->pipes);
    free (self->payload);
    free (self);
    *self_p = NULL;
}

int
bn_benchfloor_round (bn_benchfloor_t *self, size_t size, int messages,
                     double timeout)
{
    assert (self);
    assert (messages > 0);
    if (size > self->capacity || !self->payload) {
        free (self->payload);
        self->payload = calloc (1, size ? size : 1);
        if (!self->payload)
            return -1;
        self->capacity = size;
    }
    //  One message whose bytes every send shares (zmq_msg_copy); all
    //  messages are sent before any reply is read, so that messages x
    //  engines are in flight at once
    zmq_msg_t payload;
    zmq_msg_init_data (&payload, self->payload, size, NULL, NULL);
    for (int k = 0; k < self->engines * messages; k++) {
        int i = k % self->engines;
        char identity[32];
        int length = snprintf (identity, sizeof identity, "e%d", i);
        zmq_msg_t copy;
        zmq_msg_init (&copy);
        zmq_msg_copy (&copy, &payload);
        if ((self->relay && zmq_send (self->router, S_RELAY_ID,
                                      strlen (S_RELAY_ID), ZMQ_SNDMORE) < 0) ||
            zmq_send (self->router, identity, (size_t)length, ZMQ_SNDMORE) <
                0 ||
            zmq_msg_send (&copy, self->router, 0) < 0) {
            zmq_msg_close (&copy);
            zmq_msg_close (&payload);
            return -1;
        }
    }
    zmq_msg_close (&payload);
    double deadline = zclock_usecs () / 1e6 + timeout;
    for (int replies = 0; replies < self->engines * messages;) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, self->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            zmq_pollitem_t item = {self->router, 0, ZMQ_POLLIN, 0};
            int left = (int)((deadline - zclock_usecs () / 1e6) * 1000);
            if (left <= 0 || zmq_poll (&item, 1, left) <= 0)
                return -1;
            continue;
        }
        if (!zmq_msg_more (&frame))
            replies++;
        zmq_msg_close (&frame);
    }
    return 0;
}

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

struct _bn_benchfloor_t {
    void *context;   //  this process's ZeroMQ context
    void *router;    //  sends to and hears from every echo socket
    int engines;     //  echo sockets
    int helpers;     //  helper processes
    pid_t *pids;     //  their process ids
    int *pipes;      //  write ends: the endpoint, then EOF to stop
    char *payload;   //  the bytes sent (shared by every message)
    size_t capacity; //  bytes allocated in payload
};

//  A helper: count DEALER echo sockets named e<first>... connected to the
//  endpoint read from fd; echoes (or answers each message with an empty
//  frame) until fd reaches EOF. Never returns.
static void
s_helper (int fd, int first, int count, bool echo)
{
    char endpoint[256] = "";
    size_t got = 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    while (got < sizeof endpoint - 1 && poll (&pfd, 1, 30000) == 1) {
        ssize_t n = read (fd, endpoint + got, 1);
        if (n <= 0 || endpoint[got] == '\n')
            break;
        got++;
    }
    endpoint[got] = 0;
    if (got == 0)
        _exit (1);
    void *context = zmq_ctx_new ();
    zmq_ctx_set (context, ZMQ_MAX_SOCKETS, count + 64);
    void **sockets = calloc ((size_t)count, sizeof *sockets);
    zmq_pollitem_t *items = calloc ((size_t)count + 1, sizeof *items);
    if (!context || !sockets || !items)
        _exit (1);
    int zero = 0;
    for (int i = 0; i < count; i++) {
        char identity[32];
        snprintf (identity, sizeof identity, "e%d", first + i);
        sockets[i] = zmq_socket (context, ZMQ_DEALER);
        zmq_setsockopt (sockets[i], ZMQ_ROUTING_ID, identity,
                        strlen (identity));
        zmq_setsockopt (sockets[i], ZMQ_LINGER, &zero, sizeof zero);
        zmq_setsockopt (sockets[i], ZMQ_SNDHWM, &zero, sizeof zero);
        zmq_setsockopt (sockets[i], ZMQ_RCVHWM, &zero, sizeof zero);
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
bn_benchfloor_new (int engines, int per_process, bool echo, double timeout,
                   char *err, size_t errsize)
{
    assert (engines > 0);
    if (per_process < 1)
        per_process = 1;
    bn_benchfloor_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->engines = engines;
    self->helpers = (engines + per_process - 1) / per_process;
    self->pids = calloc ((size_t)self->helpers, sizeof *self->pids);
    self->pipes = calloc ((size_t)self->helpers, sizeof *self->pipes);
    if (!self->pids || !self->pipes) {
        bn_benchfloor_destroy (&self);
        return NULL;
    }
    for (int h = 0; h < self->helpers; h++) {
        int fds[2];
        if (pipe (fds) != 0) {
            snprintf (err, errsize, "pipe: %s", strerror (errno));
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
            s_helper (fds[0], first, count, echo);
        }
        close (fds[0]);
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
    for (int h = 0; h < self->helpers; h++)
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
        if (zmq_send (self->router, identity, (size_t)length, ZMQ_SNDMORE) <
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

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suite_wakeup: floor.Wakeup, what this machine charges for waking a
    thread. Two threads hand a token back and forth over two eventfds,
    each asleep in read(2) until the other writes, as libzmq's signalers
    wake a socket's thread and an I/O thread for a message: a round trip
    is two wake-ups. With cpus='same' both threads run on one CPU, with
    'other' on two (a case that does not apply where the process may use
    only one). A message through the cluster is handed between threads
    several times on its way (the client's, the controllers', the
    engines'), so this is the price of each such hop.  */
#define _GNU_SOURCE //  CPU_*, pthread_setaffinity_np
#include "bn_suites.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h> //  close

typedef struct {
    int to_peer;       //  the measuring thread's token to the peer
    int to_self;       //  the peer's token back
    pthread_t peer;    //  the thread answering
    bool peer_started; //  peer was created
    atomic_bool stop;  //  the peer ends at its next token
    cpu_set_t saved;   //  the measuring thread's CPUs before setup
    bool pinned;       //  saved must be restored
} s_state_t;

//  Move one token through fd: 0, or -1 with errno.
static int
s_give (int fd)
{
    int rc;
    while ((rc = eventfd_write (fd, 1)) != 0 && errno == EINTR)
        ;
    return rc;
}

static int
s_take (int fd)
{
    eventfd_t token;
    int rc;
    while ((rc = eventfd_read (fd, &token)) != 0 && errno == EINTR)
        ;
    return rc;
}

static void *
s_peer (void *arg)
{
    s_state_t *self = arg;
    while (s_take (self->to_peer) == 0 && !atomic_load (&self->stop))
        if (s_give (self->to_self) != 0)
            break;
    return NULL;
}

//  The n-th CPU (from 0) of set, or -1.
static int
s_cpu (const cpu_set_t *set, int n)
{
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET (cpu, set) && n-- == 0)
            return cpu;
    return -1;
}

int
bn_suite_wakeup_setup (bn_benchcase_t *c)
{
    char where[16];
    if (!bn_benchcase_str (c, "cpus", where, sizeof where) ||
        (strcmp (where, "same") != 0 && strcmp (where, "other") != 0))
        return bn_benchcase_fail (c, "cpus is 'same' or 'other'");
    s_state_t *self = calloc (1, sizeof *self);
    if (!self)
        return bn_benchcase_fail (c, "out of memory");
    c->state = self;
    self->to_peer = self->to_self = -1;
    if (sched_getaffinity (0, sizeof self->saved, &self->saved) != 0)
        return bn_benchcase_fail (c, "sched_getaffinity: %s", strerror (errno));
    bool other = strcmp (where, "other") == 0;
    if (other && CPU_COUNT (&self->saved) < 2)
        return bn_benchcase_skip (c, "this process may use one CPU only");
    int mine = s_cpu (&self->saved, 0);
    int theirs = other ? s_cpu (&self->saved, 1) : mine;
    cpu_set_t set;
    CPU_ZERO (&set);
    CPU_SET (mine, &set);
    int rc = pthread_setaffinity_np (pthread_self (), sizeof set, &set);
    if (rc != 0)
        return bn_benchcase_fail (c, "cannot run on CPU %d: %s", mine,
                                  strerror (rc));
    self->pinned = true;
    self->to_peer = eventfd (0, EFD_CLOEXEC);
    self->to_self = eventfd (0, EFD_CLOEXEC);
    if (self->to_peer < 0 || self->to_self < 0)
        return bn_benchcase_fail (c, "eventfd: %s", strerror (errno));
    pthread_attr_t attr;
    pthread_attr_init (&attr);
    CPU_ZERO (&set);
    CPU_SET (theirs, &set);
    rc = pthread_attr_setaffinity_np (&attr, sizeof set, &set);
    if (rc == 0)
        rc = pthread_create (&self->peer, &attr, s_peer, self);
    pthread_attr_destroy (&attr);
    if (rc != 0)
        return bn_benchcase_fail (c, "cannot start a thread on CPU %d: %s",
                                  theirs, strerror (rc));
    self->peer_started = true;
    return BN_BENCH_OK;
}

int
bn_suite_wakeup_run (bn_benchcase_t *c, double *value)
{
    (void)value;
    s_state_t *self = c->state;
    if (s_give (self->to_peer) != 0 || s_take (self->to_self) != 0)
        return bn_benchcase_fail (c, "token lost: %s", strerror (errno));
    return BN_BENCH_OK;
}

void
bn_suite_wakeup_teardown (bn_benchcase_t *c)
{
    s_state_t *self = c->state;
    if (!self)
        return;
    if (self->peer_started) {
        atomic_store (&self->stop, true);
        s_give (self->to_peer);
        pthread_join (self->peer, NULL);
    }
    if (self->to_peer >= 0)
        close (self->to_peer);
    if (self->to_self >= 0)
        close (self->to_self);
    if (self->pinned)
        pthread_setaffinity_np (pthread_self (), sizeof self->saved,
                                &self->saved);
    free (self);
    c->state = NULL;
}

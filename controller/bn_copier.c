/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_copier: large buffers copied into memory of their own on a thread
    of its own.  */
#include "bn_copier.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    zmq_msg_t source; //  The frame replaced, shared until copied
    void *data;       //  The new frame's memory
    size_t size;
} s_item_t;

//  A job lives while its holder, the copier or one of its new frames
//  refers to it; the last of them frees its memory.
struct _bn_copier_job_t {
    atomic_int refs;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool done;
    bn_copier_job_t *next; //  In the copier's queue
    size_t count;
    s_item_t items[];
};

struct _bn_copier_t {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    pthread_t thread;
    bool started;
    bool stopping;
    bn_copier_job_t *head;
    bn_copier_job_t *tail;
};

static void
s_job_unref (bn_copier_job_t *job)
{
    if (atomic_fetch_sub_explicit (&job->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < job->count; i++)
        free (job->items[i].data);
    pthread_mutex_destroy (&job->mutex);
    pthread_cond_destroy (&job->cond);
    free (job);
}

//  libzmq's free function of a new frame, called on whichever thread
//  drops the frame's last reference.
static void
s_frame_free (void *data, void *hint)
{
    (void)data;
    s_job_unref ((bn_copier_job_t *)hint);
}

//  Fault in the pages of [data, data + size) in one call rather than one
//  fault a page as the copy first writes them; where the kernel cannot
//  (before Linux 5.14), the copy faults them in.
static void
s_populate (void *data, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf (_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)data + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)data + size) & ~(page - 1);
    if (end > start)
        madvise ((void *)start, end - start, MADV_POPULATE_WRITE);
#else
    (void)data;
    (void)size;
#endif
}

static void
s_run (bn_copier_job_t *job)
{
    for (size_t i = 0; i < job->count; i++) {
        s_item_t *item = &job->items[i];
        s_populate (item->data, item->size);
        memcpy (item->data, zmq_msg_data (&item->source), item->size);
        zmq_msg_close (&item->source);
    }
    pthread_mutex_lock (&job->mutex);
    job->done = true;
    pthread_cond_broadcast (&job->cond);
    pthread_mutex_unlock (&job->mutex);
    s_job_unref (job);
}

static void *
s_thread (void *arg)
{
    bn_copier_t *self = arg;
    pthread_mutex_lock (&self->mutex);
    while (true) {
        while (!self->head && !self->stopping)
            pthread_cond_wait (&self->cond, &self->mutex);
        bn_copier_job_t *job = self->head;
        if (!job)
            break;
        self->head = job->next;
        if (!self->head)
            self->tail = NULL;
        pthread_mutex_unlock (&self->mutex);
        s_run (job);
        pthread_mutex_lock (&self->mutex);
    }
    pthread_mutex_unlock (&self->mutex);
    return NULL;
}

bn_copier_t *
bn_copier_new (void)
{
    bn_copier_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    pthread_mutex_init (&self->mutex, NULL);
    pthread_cond_init (&self->cond, NULL);
    return self;
}

void
bn_copier_destroy (bn_copier_t **self_p)
{
    assert (self_p);
    bn_copier_t *self = *self_p;
    if (!self)
        return;
    if (self->started) {
        pthread_mutex_lock (&self->mutex);
        self->stopping = true;
        pthread_cond_signal (&self->cond);
        pthread_mutex_unlock (&self->mutex);
        pthread_join (self->thread, NULL);
    }
    pthread_mutex_destroy (&self->mutex);
    pthread_cond_destroy (&self->cond);
    free (self);
    *self_p = NULL;
}

//  Start the thread, with every signal blocked: the process's own
//  threads take them.
static int
s_start (bn_copier_t *self)
{
    if (self->started)
        return 0;
    sigset_t all, old;
    sigfillset (&all);
    pthread_sigmask (SIG_SETMASK, &all, &old);
    int rc = pthread_create (&self->thread, NULL, s_thread, self);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    self->started = true;
    return 0;
}

static bool
s_fits (zmq_msg_t *frame, size_t min, size_t max)
{
    size_t size = zmq_msg_size (frame);
    return size >= min && size <= max;
}

void
bn_copier_copy (bn_msg_t *msg, size_t min, size_t max)
{
    assert (msg);
    for (size_t i = 0; i < bn_msg_nbuffers (msg); i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        size_t size = zmq_msg_size (frame);
        zmq_msg_t own;
        if (!s_fits (frame, min, max) || zmq_msg_init_size (&own, size) != 0)
            continue;
        memcpy (zmq_msg_data (&own), zmq_msg_data (frame), size);
        zmq_msg_move (frame, &own);
        zmq_msg_close (&own);
    }
}

bn_copier_job_t *
bn_copier_keep (bn_copier_t *self, bn_msg_t *msg, size_t min, size_t max)
{
    assert (self);
    assert (msg);
    size_t nbuffers = bn_msg_nbuffers (msg);
    size_t count = 0;
    for (size_t i = 0; i < nbuffers; i++)
        count += s_fits (bn_msg_buffer (msg, i), min, max);
    if (count == 0 || s_start (self) != 0)
        return NULL;
    bn_copier_job_t *job = calloc (1, sizeof *job + count * sizeof (s_item_t));
    if (!job)
        return NULL;
    pthread_mutex_init (&job->mutex, NULL);
    pthread_cond_init (&job->cond, NULL);
    for (size_t i = 0, k = 0; i < nbuffers; i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        if (!s_fits (frame, min, max))
            continue;
        s_item_t *item = &job->items[k];
        item->size = zmq_msg_size (frame);
        item->data = malloc (item->size);
        if (!item->data) {
            for (size_t j = 0; j < k; j++)
                zmq_msg_close (&job->items[j].source);
            job->count = k;
            atomic_store (&job->refs, 1);
            s_job_unref (job);
            return NULL;
        }
        zmq_msg_init (&item->source);
        zmq_msg_copy (&item->source, frame);
        k++;
    }
    job->count = count;
    //  the holder and the copier, then each new frame as it is made
    atomic_store (&job->refs, 2);
    for (size_t i = 0, k = 0; i < nbuffers; i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        if (!s_fits (frame, min, max))
            continue;
        s_item_t *item = &job->items[k++];
        zmq_msg_t own;
        atomic_fetch_add (&job->refs, 1);
        if (zmq_msg_init_data (&own, item->data, item->size, s_frame_free,
                               job) != 0) {
            //  out of memory for libzmq's own record of it: this frame
            //  stays the one received
            atomic_fetch_sub (&job->refs, 1);
            continue;
        }
        zmq_msg_move (frame, &own);
        zmq_msg_close (&own);
    }
    pthread_mutex_lock (&self->mutex);
    if (self->tail)
        self->tail->next = job;
    else
        self->head = job;
    self->tail = job;
    pthread_cond_signal (&self->cond);
    pthread_mutex_unlock (&self->mutex);
    return job;
}

void
bn_copier_job_wait (bn_copier_job_t *job)
{
    assert (job);
    pthread_mutex_lock (&job->mutex);
    while (!job->done)
        pthread_cond_wait (&job->cond, &job->mutex);
    pthread_mutex_unlock (&job->mutex);
}

bool
bn_copier_job_done (bn_copier_job_t *job)
{
    assert (job);
    pthread_mutex_lock (&job->mutex);
    bool done = job->done;
    pthread_mutex_unlock (&job->mutex);
    return done;
}

void
bn_copier_job_release (bn_copier_job_t **job_p)
{
    assert (job_p);
    if (*job_p)
        s_job_unref (*job_p);
    *job_p = NULL;
}

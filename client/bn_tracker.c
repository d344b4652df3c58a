/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_tracker: a client's outstanding requests, its lock and condition,
    and its state.  */
#include "bn_tracker.h"

#include "bn_error.h"

#include <assert.h>
#include <czmq.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct _bn_tracker_t {
    pthread_mutex_t lock;         //  guards the state below
    pthread_cond_t change;        //  broadcast when state changes
    atomic_int refs;              //  client and results holding it
    int state;                    //  0, BN_ENOCONTROLLER or BN_ECLOSED
    zhashx_t *items;              //  msg_id -> bn_item_t * outstanding
    bn_tracker_waiter_fn *waiter; //  what waiters do, NULL: sleep
    void *waiter_arg;
};

bn_tracker_t *
bn_tracker_new (void)
{
    bn_tracker_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->items = zhashx_new ();
    if (!self->items) {
        free (self);
        return NULL;
    }
    //  keyed by each item's own msg_id, which it keeps while tracked
    zhashx_set_key_duplicator (self->items, NULL);
    zhashx_set_key_destructor (self->items, NULL);
    pthread_mutex_init (&self->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init (&attr);
    pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
    pthread_cond_init (&self->change, &attr);
    pthread_condattr_destroy (&attr);
    atomic_init (&self->refs, 1);
    return self;
}

void
bn_tracker_ref (bn_tracker_t *self)
{
    assert (self);
    atomic_fetch_add (&self->refs, 1);
}

void
bn_tracker_unref (bn_tracker_t **self_p)
{
    assert (self_p);
    bn_tracker_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (atomic_fetch_sub (&self->refs, 1) != 1)
        return;
    zhashx_destroy (&self->items);
    pthread_mutex_destroy (&self->lock);
    pthread_cond_destroy (&self->change);
    free (self);
}

void
bn_tracker_lock (bn_tracker_t *self)
{
    pthread_mutex_lock (&self->lock);
}

void
bn_tracker_unlock (bn_tracker_t *self)
{
    pthread_mutex_unlock (&self->lock);
}

double
bn_tracker_deadline (double timeout)
{
    if (timeout < 0)
        return -1;
    return zclock_usecs () / 1e6 + timeout;
}

int
bn_tracker_wait_change (bn_tracker_t *self, double deadline)
{
    if (self->waiter)
        return self->waiter (self->waiter_arg, deadline);
    return bn_tracker_sleep (self, deadline);
}

void
bn_tracker_set_waiter (bn_tracker_t *self, bn_tracker_waiter_fn *fn, void *arg)
{
    self->waiter = fn;
    self->waiter_arg = arg;
}

void
bn_tracker_wait_on (bn_tracker_t *self, pthread_cond_t *cond,
                    const struct timespec *until)
{
    if (until)
        pthread_cond_timedwait (cond, &self->lock, until);
    else
        pthread_cond_wait (cond, &self->lock);
}

int
bn_tracker_sleep (bn_tracker_t *self, double deadline)
{
    if (deadline < 0) {
        pthread_cond_wait (&self->change, &self->lock);
        return 0;
    }
    double now = zclock_usecs () / 1e6;
    if (now >= deadline)
        return BN_ETIMEDOUT;
    //  zclock_usecs is CLOCK_MONOTONIC, as the condition's clock
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait (&self->change, &self->lock, &ts);
    return 0;
}

void
bn_tracker_changed (bn_tracker_t *self)
{
    pthread_cond_broadcast (&self->change);
}

int
bn_tracker_state (bn_tracker_t *self)
{
    return self->state;
}

//  Every outstanding item, as an array for the caller to free.
static bn_item_t **
s_snapshot (bn_tracker_t *self, size_t *count)
{
    *count = zhashx_size (self->items);
    bn_item_t **all = malloc ((*count ? *count : 1) * sizeof *all);
    if (!all)
        return NULL;
    size_t n = 0;
    for (bn_item_t *item = zhashx_first (self->items); item;
         item = zhashx_next (self->items))
        all[n++] = item;
    assert (n == *count);
    return all;
}

void
bn_tracker_close (bn_tracker_t *self, int code)
{
    if (self->state == 0)
        self->state = code;
    size_t count;
    bn_item_t **all = s_snapshot (self, &count);
    if (all) {
        for (size_t i = 0; i < count; i++)
            bn_item_fail (all[i], code,
                          code == BN_ECLOSED ? "ClientClosed"
                                             : "ControllerGone",
                          bn_strerror (code));
        free (all);
    }
    zhashx_purge (self->items);
}

int
bn_tracker_track (bn_tracker_t *self, bn_item_t *item)
{
    return zhashx_insert (self->items, bn_item_msg_id (item), item) == 0 ? 0
                                                                         : -1;
}

void
bn_tracker_untrack (bn_tracker_t *self, bn_item_t *item)
{
    const char *msg_id = bn_item_msg_id (item);
    if (zhashx_lookup (self->items, msg_id) == item)
        zhashx_delete (self->items, msg_id);
}

bn_item_t *
bn_tracker_find (bn_tracker_t *self, const char *msg_id)
{
    return msg_id ? zhashx_lookup (self->items, msg_id) : NULL;
}

bool
bn_tracker_engine_died (bn_tracker_t *self, const char *uuid, int id)
{
    size_t count;
    bn_item_t **all = s_snapshot (self, &count);
    bool changed = false;
    for (size_t i = 0; all && i < count; i++) {
        const char *item_uuid = bn_item_engine_uuid (all[i]);
        if (item_uuid && strcmp (item_uuid, uuid) == 0 &&
            bn_item_engine_died (all[i], id)) {
            bn_tracker_untrack (self, all[i]);
            changed = true;
        }
    }
    free (all);
    return changed;
}

bool
bn_tracker_broadcast_lost (bn_tracker_t *self)
{
    size_t count;
    bn_item_t **all = s_snapshot (self, &count);
    bool changed = false;
    for (size_t i = 0; all && i < count; i++) {
        if (!bn_item_via_broadcast (all[i]) || bn_item_replied (all[i]))
            continue;
        char evalue[600];
        snprintf (evalue, sizeof evalue,
                  "the connection to the broadcast scheduler was lost before "
                  "engine %d replied to '%s'",
                  bn_item_engine_id (all[i]), bn_item_msg_id (all[i]));
        if (bn_item_fail (all[i], BN_EENGINEDIED, "EngineError", evalue)) {
            bn_tracker_untrack (self, all[i]);
            changed = true;
        }
    }
    free (all);
    return changed;
}

json_t *
bn_tracker_outstanding (bn_tracker_t *self)
{
    json_t *ids = json_array ();
    if (!ids)
        return NULL;
    for (bn_item_t *item = zhashx_first (self->items); item;
         item = zhashx_next (self->items))
        if (bn_item_kind (item) == BN_ITEM_SHELL && !bn_item_replied (item))
            json_array_append_new (ids, json_string (bn_item_msg_id (item)));
    return ids;
}

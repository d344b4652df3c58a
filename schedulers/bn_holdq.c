/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_holdq: items held per engine until the engine connects.

    Engines that hold items are chained in arrival order; a retry pass
    walks that chain. The owner's callbacks may hold more items or remove
    engines while a pass runs, so during one an engine is only marked
    removed, and the chain is unlinked and freed once the pass is over.  */
#include "bn_holdq.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct _s_engine_t s_engine_t;

struct _s_engine_t {
    char *uuid;         //  Engine uuid (its routing id)
    int64_t added_at;   //  zclock_mono of its latest add
    zlistx_t *items;    //  Held items, oldest first
    bool removed;       //  Removed during a pass: free after it
    bool chained;       //  In the chain of engines holding items
    s_engine_t *next;   //  Next engine in the chain
    s_engine_t *behind; //  Next removed engine to free after a pass
};

struct _bn_holdq_t {
    int grace;                        //  ms after an add that items wait
    bn_holdq_send_fn *send;           //  The owner's send
    bn_holdq_fail_fn *fail;           //  The owner's answer to a failure
    void *arg;                        //  For both
    zlistx_destructor_fn *destructor; //  Frees an item we are done with
    zhashx_t *engines;                //  uuid -> s_engine_t
    s_engine_t *head, *tail;          //  Chain of engines holding items
    s_engine_t *graveyard;            //  Removed during a pass
    size_t held;                      //  Items held in all
    int passes;                       //  Retry passes running (nested)
    zloop_t *loop;                    //  For the retry timer
    int timer;                        //  Retry timer id, or -1
};

static void
s_engine_free (s_engine_t **engine_p)
{
    s_engine_t *engine = *engine_p;
    if (!engine)
        return;
    zlistx_destroy (&engine->items);
    free (engine->uuid);
    free (engine);
    *engine_p = NULL;
}

bn_holdq_t *
bn_holdq_new (int grace_ms, bn_holdq_send_fn *send, bn_holdq_fail_fn *fail,
              void *arg)
{
    assert (send);
    assert (fail);
    bn_holdq_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->grace = grace_ms > 0 ? grace_ms : 0;
    self->send = send;
    self->fail = fail;
    self->arg = arg;
    self->timer = -1;
    self->engines = zhashx_new ();
    if (!self->engines) {
        free (self);
        return NULL;
    }
    return self;
}

//  Destroy item with the owner's destructor, if any.
static void
s_item_free (bn_holdq_t *self, void *item)
{
    if (self->destructor && item)
        self->destructor (&item);
}

void
bn_holdq_destroy (bn_holdq_t **self_p)
{
    assert (self_p);
    bn_holdq_t *self = *self_p;
    if (!self)
        return;
    assert (self->passes == 0);
    if (self->loop && self->timer != -1)
        zloop_timer_end (self->loop, self->timer);
    s_engine_t *engine = zhashx_first (self->engines);
    while (engine) {
        void *item;
        while ((item = zlistx_detach (engine->items, NULL)))
            s_item_free (self, item);
        s_engine_free (&engine);
        engine = zhashx_next (self->engines);
    }
    zhashx_destroy (&self->engines);
    free (self);
    *self_p = NULL;
}

void
bn_holdq_set_destructor (bn_holdq_t *self, zlistx_destructor_fn *destructor)
{
    assert (self);
    self->destructor = destructor;
}

void
bn_holdq_set_grace (bn_holdq_t *self, int grace_ms)
{
    assert (self);
    self->grace = grace_ms > 0 ? grace_ms : 0;
}

static int s_on_timer (zloop_t *loop, int timer_id, void *arg);

//  Arm the retry timer if it is not. It fires once and is armed again
//  while anything is held: a handler that ended its own timer would have
//  zloop free it under the loop's feet once the loop has stopped and
//  started again (zloop_timer_end removes at once then), as a test's loop
//  does.
static int
s_arm (bn_holdq_t *self)
{
    if (self->timer == -1 && self->loop)
        self->timer =
            zloop_timer (self->loop, BN_HOLDQ_RETRY_MS, 1, s_on_timer, self);
    return self->timer;
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    bn_holdq_t *self = (bn_holdq_t *)arg;
    self->timer = -1;
    bn_holdq_retry (self);
    if (self->head)
        s_arm (self);
    return 0;
}

int
bn_holdq_attach (bn_holdq_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    self->loop = loop;
    if (self->held)
        s_arm (self);
    return self->held && self->timer == -1 ? -1 : 0;
}

int
bn_holdq_engine_add (bn_holdq_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine) {
        engine = calloc (1, sizeof *engine);
        if (!engine)
            return -1;
        engine->uuid = strdup (uuid);
        engine->items = zlistx_new ();
        if (!engine->uuid || !engine->items) {
            s_engine_free (&engine);
            return -1;
        }
        zhashx_insert (self->engines, uuid, engine);
    }
    engine->added_at = zclock_mono ();
    return 0;
}

//  True for the errors of a send to an engine still connecting: no route
//  yet, or a route whose pipe is not ready for writing.
static bool
s_not_yet (int error)
{
    return error == EHOSTUNREACH || error == EAGAIN;
}

//  True while engine may still connect at now (and a timer would retry).
static bool
s_in_grace (bn_holdq_t *self, s_engine_t *engine, int64_t now)
{
    return self->loop && self->grace > 0 && !engine->removed &&
           now - engine->added_at < self->grace;
}

//  Fail item (detached) of engine and destroy it.
static void
s_fail (bn_holdq_t *self, const char *uuid, void *item, bn_holdq_why_t why,
        int error)
{
    self->fail (self->arg, uuid, item, why, error);
    s_item_free (self, item);
}

//  Take the first item engine holds off its list.
static void *
s_take_first (bn_holdq_t *self, s_engine_t *engine)
{
    void *item = zlistx_detach (engine->items, NULL);
    if (item)
        self->held--;
    return item;
}

//  Hold item (taken) behind what engine holds. Returns 1, or -1 when it
//  failed (the bound was reached, or out of memory).
static int
s_hold (bn_holdq_t *self, s_engine_t *engine, void *item)
{
    if (zlistx_size (engine->items) >= BN_HOLDQ_MAX ||
        !zlistx_add_end (engine->items, item)) {
        s_fail (self, engine->uuid, item,
                zlistx_size (engine->items) >= BN_HOLDQ_MAX ? BN_HOLDQ_FULL
                                                            : BN_HOLDQ_ERROR,
                ENOMEM);
        return -1;
    }
    self->held++;
    if (!engine->chained) {
        engine->chained = true;
        engine->next = NULL;
        if (self->tail)
            self->tail->next = engine;
        else
            self->head = engine;
        self->tail = engine;
    }
    s_arm (self);
    return 1;
}

//  Unchain the engines that hold nothing, free the removed ones and stop
//  the timer when nothing is held; only between passes.
static void
s_tidy (bn_holdq_t *self)
{
    assert (self->passes == 0);
    s_engine_t **link = &self->head;
    self->tail = NULL;
    while (*link) {
        s_engine_t *engine = *link;
        if (zlistx_size (engine->items) == 0) {
            *link = engine->next;
            engine->chained = false;
            engine->next = NULL;
        } else {
            self->tail = engine;
            link = &engine->next;
        }
    }
    while (self->graveyard) {
        s_engine_t *engine = self->graveyard;
        self->graveyard = engine->behind;
        s_engine_free (&engine);
    }
    if (!self->head && self->timer != -1) {
        zloop_timer_end (self->loop, self->timer);
        self->timer = -1;
    }
}

void
bn_holdq_engine_remove (bn_holdq_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (!engine)
        return;
    zhashx_delete (self->engines, uuid);
    engine->removed = true;
    void *item;
    while ((item = s_take_first (self, engine)))
        s_fail (self, engine->uuid, item, BN_HOLDQ_REMOVED, 0);
    if (self->passes || engine->chained) {
        //  a pass may be on it: the end of the pass frees it
        engine->behind = self->graveyard;
        self->graveyard = engine;
        if (self->passes == 0)
            s_tidy (self);
    } else
        s_engine_free (&engine);
}

bool
bn_holdq_waits (bn_holdq_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    return engine && (zlistx_size (engine->items) > 0 ||
                      s_in_grace (self, engine, zclock_mono ()));
}

int
bn_holdq_send (bn_holdq_t *self, const char *uuid, void *item)
{
    assert (self);
    assert (uuid);
    assert (item);
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    if (engine && zlistx_size (engine->items) > 0)
        return s_hold (self, engine, item); //  in order, behind the others
    int error = self->send (self->arg, uuid, item);
    if (error == 0) {
        s_item_free (self, item);
        return 0;
    }
    bool not_yet = s_not_yet (error);
    if (engine && not_yet && s_in_grace (self, engine, zclock_mono ()))
        return s_hold (self, engine, item);
    s_fail (self, uuid, item,
            engine && not_yet ? BN_HOLDQ_EXPIRED : BN_HOLDQ_ERROR, error);
    return -1;
}

//  Send what engine holds, in order, until an item cannot go yet; fail
//  what cannot go at all.
static void
s_release (bn_holdq_t *self, s_engine_t *engine, int64_t now)
{
    void *item;
    while (!engine->removed && (item = zlistx_head (engine->items))) {
        int error = self->send (self->arg, engine->uuid, item);
        if (engine->removed)
            break; //  the send removed it, failing what it held
        bool not_yet = s_not_yet (error);
        if (error && not_yet && s_in_grace (self, engine, now))
            break; //  keep it, and what follows it, in order
        item = s_take_first (self, engine);
        if (error)
            s_fail (self, engine->uuid, item,
                    not_yet ? BN_HOLDQ_EXPIRED : BN_HOLDQ_ERROR, error);
        else
            s_item_free (self, item);
    }
}

int
bn_holdq_retry (bn_holdq_t *self)
{
    assert (self);
    int64_t now = zclock_mono ();
    self->passes++;
    //  engines chained during the pass (by the callbacks) are reached too
    for (s_engine_t *engine = self->head; engine; engine = engine->next)
        s_release (self, engine, now);
    if (--self->passes == 0)
        s_tidy (self);
    return 0;
}

size_t
bn_holdq_size (bn_holdq_t *self, const char *uuid)
{
    assert (self);
    if (!uuid)
        return self->held;
    s_engine_t *engine = zhashx_lookup (self->engines, uuid);
    return engine ? zlistx_size (engine->items) : 0;
}

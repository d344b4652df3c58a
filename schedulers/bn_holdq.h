/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_holdq: what a relay or scheduler holds for engines that are
    registered but not yet connected to it.

    The hub registers an engine once its heart answers, which can be before
    the engine's shell, control and task connections have finished their
    handshakes (with a thousand engines registering at once it often is).
    For a connect grace after an engine is added (controller.connect_grace),
    an item its owner cannot send to it yet is held here instead of failing:
    per engine, in the order given, at most BN_HOLDQ_MAX of them. They are
    retried every BN_HOLDQ_RETRY_MS and go, in order, once a send succeeds.
    What is still held when the grace ends or the engine is removed, or
    what comes past the bound, is failed through the owner's callback,
    which answers it (EngineError) or places it elsewhere.

    Without notice of connections from libzmq (ZMQ_ROUTER_NOTIFY is a draft
    API), a successful send is how an engine is seen to have connected.  */
#ifndef BN_HOLDQ_H_INCLUDED
#define BN_HOLDQ_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_holdq_t bn_holdq_t;

//  Most items held for one engine.
#define BN_HOLDQ_MAX 10000

//  Milliseconds between retries of held items.
#define BN_HOLDQ_RETRY_MS 10

//  Why a held item failed.
typedef enum {
    BN_HOLDQ_EXPIRED, //  the engine's grace ended before it connected
    BN_HOLDQ_REMOVED, //  the engine was removed (unregistered)
    BN_HOLDQ_ERROR,   //  a send failed with an error other than "no route
                      //  yet" (or did, past the grace)
    BN_HOLDQ_FULL     //  the engine held BN_HOLDQ_MAX items already
} bn_holdq_why_t;

//  Send item to engine, leaving item itself to the queue (send a copy).
//  Returns 0 when the queue is done with it (it went, or the owner no
//  longer wants it sent), else the errno of the failed send: EHOSTUNREACH
//  or EAGAIN mean "not connected yet" and keep it held within the grace.
typedef int (bn_holdq_send_fn) (void *arg, const char *engine, void *item);

//  item could not go to engine, for why; error is the errno of the last
//  failed send (0 if none was tried). The owner answers it; the queue
//  destroys it afterwards.
typedef void (bn_holdq_fail_fn) (void *arg, const char *engine, void *item,
                                 bn_holdq_why_t why, int error);

//  Create a queue whose engines have grace_ms to connect, sending through
//  send and failing through fail (both called with arg). Returns NULL if
//  out of memory.
bn_holdq_t *bn_holdq_new (int grace_ms, bn_holdq_send_fn *send,
                          bn_holdq_fail_fn *fail, void *arg);

//  Destroy a queue and what it holds (through the destructor, without
//  failing it); NULL-safe.
void bn_holdq_destroy (bn_holdq_t **self_p);

//  How the queue destroys an item it is done with (NULL: it does not).
void bn_holdq_set_destructor (bn_holdq_t *self,
                              zlistx_destructor_fn *destructor);

//  Change the grace of every engine, counted from its bn_holdq_engine_add
//  (0: nothing is held).
void bn_holdq_set_grace (bn_holdq_t *self, int grace_ms);

//  Run the retries on loop's timer. Nothing is held until a queue is
//  attached (nothing would retry it). Returns -1 on failure.
int bn_holdq_attach (bn_holdq_t *self, zloop_t *loop);

//  Start engine's grace (again, if it was added before). Returns -1 if out
//  of memory.
int bn_holdq_engine_add (bn_holdq_t *self, const char *engine);

//  Forget engine, failing what it holds (BN_HOLDQ_REMOVED).
void bn_holdq_engine_remove (bn_holdq_t *self, const char *engine);

//  True if a send to engine must go through bn_holdq_send: it is within
//  its grace, or holds items a new one must queue behind.
bool bn_holdq_waits (bn_holdq_t *self, const char *engine);

//  Send item (taken) to engine now, unless items wait before it; hold it
//  if engine is not connected yet and within its grace; else fail it.
//  Returns 0 if it went (or was not wanted), 1 if it is held, -1 if it
//  failed (the fail callback has run).
int bn_holdq_send (bn_holdq_t *self, const char *engine, void *item);

//  Retry what is held, in order per engine: send what can go, fail what
//  is past its engine's grace. The timer calls it; returns 0.
int bn_holdq_retry (bn_holdq_t *self);

//  Items held for engine, or for every engine when engine is NULL.
size_t bn_holdq_size (bn_holdq_t *self, const char *engine);

#endif

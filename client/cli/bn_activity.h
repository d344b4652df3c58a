/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_activity: what engines are busy with, as they say themselves (a
    kernel_info_request on the control channel, which a banyan engine
    answers at once with the request it runs and the number waiting behind
    it; a 7.1.0 engine says nothing of it), for banyan engines, status and
    a px that waits behind earlier work.  */
#ifndef BN_ACTIVITY_H_INCLUDED
#define BN_ACTIVITY_H_INCLUDED

#include "banyan.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_activity_t bn_activity_t;

//  Ask the engines of ids (NULL: all) what they run, waiting up to timeout
//  seconds for their answers. Returns NULL with *error set (BN_ENOENGINE,
//  BN_ENOCONTROLLER, BN_ENOMEM...) if the question cannot be sent.
bn_activity_t *bn_activity_new (bn_client_t *client, bn_idset_t *ids,
                                double timeout, int *error);

//  Destroy and NULL the reference; NULL-safe.
void bn_activity_destroy (bn_activity_t **self_p);

//  True if engine id answered as a banyan engine does (with what it runs).
bool bn_activity_known (bn_activity_t *self, int id);

//  The msg_id of the request engine id runs, or NULL when it is idle or
//  did not say.
const char *bn_activity_msg_id (bn_activity_t *self, int id);

//  What that request runs, on one line: its command, or "function()"; ""
//  when not known; NULL when idle or not known.
const char *bn_activity_what (bn_activity_t *self, int id);

//  When engine id began it as local time "HH:MM:SS" (or "YYYY-MM-DD
//  HH:MM:SS" when not today) into buf, and its age in seconds into *age
//  (if not NULL); returns buf, or NULL when idle or not known.
const char *bn_activity_since (bn_activity_t *self, int id, char *buf,
                               size_t size, double *age);

//  Shell requests waiting behind the running one on engine id; -1 when
//  not known.
int bn_activity_queued (bn_activity_t *self, int id);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_copier: copies a message's large buffers into memory of their own
    on a thread of its own. The thread that keeps the message gets its new
    frames at once and goes on; the copy, and the fresh pages it faults
    in, fall on the copier's thread. A job says when the bytes are there.  */
#ifndef BN_COPIER_H_INCLUDED
#define BN_COPIER_H_INCLUDED

#include <stddef.h>

#include "bn_msg.h"

typedef struct _bn_copier_t bn_copier_t;
typedef struct _bn_copier_job_t bn_copier_job_t;

//  Create a copier. Its thread starts with the first job. Returns NULL if
//  out of memory.
bn_copier_t *bn_copier_new (void);

//  Destroy a copier after it has done every job given to it.
void bn_copier_destroy (bn_copier_t **self_p);

//  Give msg's buffers of min to max bytes memory of their own: each such
//  frame of msg is replaced now by one over new memory, which the
//  copier's thread fills from the frame it replaced (shared until then).
//  Returns the job, to wait for before the new frames' bytes are read,
//  or NULL when there was nothing to copy or the copier could not take
//  the job (out of memory, no thread): then msg is unchanged.
bn_copier_job_t *bn_copier_keep (bn_copier_t *self, bn_msg_t *msg, size_t min,
                                 size_t max);

//  The same copy made here, on the caller's thread, with nothing to wait
//  for: a buffer libzmq has no memory for stays the frame it was.
void bn_copier_copy (bn_msg_t *msg, size_t min, size_t max);

//  Wait until job's bytes are copied.
void bn_copier_job_wait (bn_copier_job_t *job);

//  True when job's bytes are copied.
bool bn_copier_job_done (bn_copier_job_t *job);

//  Drop the caller's hold on a job. The new frames keep their memory
//  whether or not the job was waited for.
void bn_copier_job_release (bn_copier_job_t **job_p);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_gather: groups engines whose command produced the same output and
    status, for `banyan px -b` (as clush -b gathers nodes).  */
#ifndef BN_GATHER_H_INCLUDED
#define BN_GATHER_H_INCLUDED

#include "bn_idset.h"

#include <stddef.h>
#include <stdio.h>

typedef struct _bn_gather_t bn_gather_t;

//  Create an empty gathering; NULL if out of memory.
bn_gather_t *bn_gather_new (void);

//  Destroy a gathering and NULL the caller's reference; NULL-safe.
void bn_gather_destroy (bn_gather_t **self_p);

//  Add what engine id produced: its stdout, its stderr and a status text
//  ("" for success, else e.g. "exited with exit code 3"). Engines with the
//  same three land in one group; the texts are copied once per group.
//  Returns 0, or -1 if out of memory or id is negative.
int bn_gather_add (bn_gather_t *self, int id, const char *out, size_t out_size,
                   const char *err, size_t err_size, const char *status);

//  Number of groups.
size_t bn_gather_size (bn_gather_t *self);

//  Engines of the index'th group, groups ordered by their smallest engine
//  id; borrowed. NULL if index is out of range.
bn_idset_t *bn_gather_ids (bn_gather_t *self, size_t index);

//  Stdout and status of the index'th group, borrowed; NULL if
//  index is out of range.
const char *bn_gather_out (bn_gather_t *self, size_t index, size_t *size);
const char *bn_gather_status (bn_gather_t *self, size_t index);

//  Write every group as a block: the header with its folded engine set,
//  its stdout, its stderr lines tagged "[stderr] " and, unless quiet or
//  empty, its status tagged "[status] ". Returns 0, or -1 on a write
//  error or if out of memory.
int bn_gather_print (bn_gather_t *self, FILE *file, bool quiet);

#endif

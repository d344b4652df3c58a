/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_progress: a one-line progress indicator ("registered 37/64") shown on
    a terminal only, and only once an operation has lasted a while.  */
#ifndef BN_PROGRESS_H_INCLUDED
#define BN_PROGRESS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct _bn_progress_t bn_progress_t;

//  Create an indicator writing "<label> done/total" to file once delay
//  seconds have passed, if file is a terminal; otherwise it stays silent.
//  Returns NULL if out of memory.
bn_progress_t *bn_progress_new (FILE *file, const char *label, double delay);

//  Clear the line and destroy the indicator, NULLing the caller's
//  reference; NULL-safe.
void bn_progress_destroy (bn_progress_t **self_p);

//  Show the indicator even if the file is not a terminal (for tests).
void bn_progress_set_force (bn_progress_t *self, bool force);

//  Note progress; the line is redrawn when the numbers change.
void bn_progress_update (bn_progress_t *self, size_t done, size_t total);

//  Erase the line if it was drawn, so that other output can follow.
void bn_progress_clear (bn_progress_t *self);

#endif

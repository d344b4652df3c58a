/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_progress: a progress line on a terminal.  */
#include "bn_progress.h"

#include <assert.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct _bn_progress_t {
    FILE *file;
    char *label;
    double start;  //  Monotonic seconds at creation
    double delay;  //  Seconds before the line first appears
    bool terminal; //  file is a terminal (or forced)
    bool drawn;    //  The line is on the screen now
    size_t done;   //  Numbers last drawn
    size_t total;
};

bn_progress_t *
bn_progress_new (FILE *file, const char *label, double delay)
{
    assert (file);
    assert (label);
    bn_progress_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->label = strdup (label);
    if (!self->label) {
        free (self);
        return NULL;
    }
    self->file = file;
    self->start = zclock_usecs () / 1e6;
    self->delay = delay;
    self->terminal = isatty (fileno (file));
    self->done = (size_t)-1;
    return self;
}

void
bn_progress_destroy (bn_progress_t **self_p)
{
    assert (self_p);
    bn_progress_t *self = *self_p;
    if (self) {
        bn_progress_clear (self);
        free (self->label);
        free (self);
        *self_p = NULL;
    }
}

void
bn_progress_set_force (bn_progress_t *self, bool force)
{
    assert (self);
    self->terminal = force || isatty (fileno (self->file));
}

void
bn_progress_update (bn_progress_t *self, size_t done, size_t total)
{
    assert (self);
    if (!self->terminal || zclock_usecs () / 1e6 - self->start < self->delay)
        return;
    if (self->drawn && done == self->done && total == self->total)
        return;
    //  "\r" and erase-to-end-of-line redraw in place
    fprintf (self->file, "\r%s%s%zu/%zu\033[K", self->label,
             *self->label ? " " : "", done, total);
    fflush (self->file);
    self->drawn = true;
    self->done = done;
    self->total = total;
}

void
bn_progress_clear (bn_progress_t *self)
{
    assert (self);
    if (self->drawn) {
        fputs ("\r\033[K", self->file);
        fflush (self->file);
        self->drawn = false;
    }
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcase: one parameter set of a benchmark, as its functions see
    it: parameter values, failure and skip reasons, engines per process.  */
#include "bn_benchcase.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *
bn_benchcase_str (bn_benchcase_t *self, const char *name, char *buf,
                  size_t size)
{
    assert (self);
    for (size_t i = 0; i < self->param_count; i++)
        if (strcmp (self->param_names[i], name) == 0) {
            const char *value = self->param_values[i];
            size_t length = strlen (value);
            if (length >= 2 && (value[0] == '\'' || value[0] == '"')) {
                value++;
                length -= 2;
            }
            if (length >= size)
                length = size - 1;
            memcpy (buf, value, length);
            buf[length] = 0;
            return buf;
        }
    return NULL;
}

long
bn_benchcase_long (bn_benchcase_t *self, const char *name, long fallback)
{
    char buf[64];
    const char *text = bn_benchcase_str (self, name, buf, sizeof buf);
    return text ? strtol (text, NULL, 10) : fallback;
}

int
bn_benchcase_fail (bn_benchcase_t *self, const char *format, ...)
{
    assert (self);
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return BN_BENCH_FAIL;
}

int
bn_benchcase_skip (bn_benchcase_t *self, const char *format, ...)
{
    assert (self);
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return BN_BENCH_SKIP;
}

int
bn_benchcase_per_process (bn_benchcase_t *self, int n)
{
    if (self->per_process > 0)
        return self->per_process < n ? self->per_process : n;
    if (n <= 4)
        return 1;
    return (n + 3) / 4;
}

char *
bn_benchcase_program (bn_benchcase_t *self, const char *name)
{
    char path[4096];
    snprintf (path, sizeof path, "%s/%s", self->bin_dir ? self->bin_dir : ".",
              name);
    if (access (path, X_OK) != 0)
        return NULL;
    return strdup (path);
}

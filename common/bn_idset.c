/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_idset: engine id sets as a sorted array of disjoint, non-touching
    ranges, so "0-4095" costs one entry and lookups are binary searches. */
#include "bn_idset.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int first; //  Lowest id in the range
    int last;  //  Highest id in the range, inclusive
} s_range_t;

struct _bn_idset_t {
    s_range_t *ranges; //  Sorted, disjoint, never adjacent
    size_t count;      //  Ranges in use
    size_t size;       //  Ranges allocated
    size_t total;      //  Ids in the set
};

bn_idset_t *
bn_idset_new (void)
{
    return calloc (1, sizeof (bn_idset_t));
}

void
bn_idset_destroy (bn_idset_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        free ((*self_p)->ranges);
        free (*self_p);
        *self_p = NULL;
    }
}

//  Index of the first range whose last id is >= id, or count if none.
static size_t
s_lower (bn_idset_t *self, long long id)
{
    size_t low = 0, high = self->count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (self->ranges[mid].last < id)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

//  Index of the first range whose first id is > id, or count if none.
static size_t
s_upper (bn_idset_t *self, long long id)
{
    size_t low = 0, high = self->count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (self->ranges[mid].first <= id)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

//  Make room for one more range; returns -1 if out of memory.
static int
s_reserve (bn_idset_t *self)
{
    if (self->count < self->size)
        return 0;
    size_t size = self->size ? self->size * 2 : 8;
    s_range_t *ranges = realloc (self->ranges, size * sizeof (s_range_t));
    if (!ranges)
        return -1;
    self->ranges = ranges;
    self->size = size;
    return 0;
}

static size_t
s_width (s_range_t *range)
{
    return (size_t)((long long)range->last - range->first + 1);
}

int
bn_idset_add_range (bn_idset_t *self, int first, int last)
{
    assert (self);
    if (first < 0 || first > last)
        return -1;
    //  Ranges i..j-1 overlap or touch [first, last] and fold into one
    size_t i = s_lower (self, (long long)first - 1);
    size_t j = s_upper (self, (long long)last + 1);
    if (i == j) {
        if (s_reserve (self))
            return -1;
        memmove (&self->ranges[i + 1], &self->ranges[i],
                 (self->count - i) * sizeof (s_range_t));
        self->ranges[i] = (s_range_t){first, last};
        self->count++;
        self->total += s_width (&self->ranges[i]);
        return 0;
    }
    s_range_t merged = {first, last};
    if (self->ranges[i].first < merged.first)
        merged.first = self->ranges[i].first;
    if (self->ranges[j - 1].last > merged.last)
        merged.last = self->ranges[j - 1].last;
    for (size_t k = i; k < j; k++)
        self->total -= s_width (&self->ranges[k]);
    self->ranges[i] = merged;
    self->total += s_width (&merged);
    memmove (&self->ranges[i + 1], &self->ranges[j],
             (self->count - j) * sizeof (s_range_t));
    self->count -= j - i - 1;
    return 0;
}

int
bn_idset_add (bn_idset_t *self, int id)
{
    return bn_idset_add_range (self, id, id);
}

int
bn_idset_remove (bn_idset_t *self, int id)
{
    assert (self);
    size_t i = s_lower (self, id);
    if (id < 0 || i == self->count || self->ranges[i].first > id)
        return 0;
    s_range_t *range = &self->ranges[i];
    if (range->first == range->last) {
        memmove (range, range + 1, (self->count - i - 1) * sizeof (s_range_t));
        self->count--;
    } else if (id == range->first)
        range->first++;
    else if (id == range->last)
        range->last--;
    else {
        if (s_reserve (self))
            return -1;
        range = &self->ranges[i];
        memmove (range + 1, range, (self->count - i) * sizeof (s_range_t));
        self->count++;
        range[0].last = id - 1;
        range[1].first = id + 1;
    }
    self->total--;
    return 0;
}

void
bn_idset_clear (bn_idset_t *self)
{
    assert (self);
    self->count = 0;
    self->total = 0;
}

bool
bn_idset_contains (bn_idset_t *self, int id)
{
    assert (self);
    size_t i = s_lower (self, id);
    return id >= 0 && i < self->count && self->ranges[i].first <= id;
}

size_t
bn_idset_count (bn_idset_t *self)
{
    assert (self);
    return self->total;
}

int
bn_idset_first (bn_idset_t *self)
{
    assert (self);
    return self->count ? self->ranges[0].first : -1;
}

int
bn_idset_last (bn_idset_t *self)
{
    assert (self);
    return self->count ? self->ranges[self->count - 1].last : -1;
}

int
bn_idset_next (bn_idset_t *self, int prev)
{
    assert (self);
    if (prev == INT_MAX)
        return -1;
    long long id = prev < 0 ? 0 : (long long)prev + 1;
    size_t i = s_lower (self, id);
    if (i == self->count)
        return -1;
    return self->ranges[i].first > id ? self->ranges[i].first : (int)id;
}

//  Read a decimal id at *text; returns it, or -1 if there is no digit or
//  the value exceeds INT_MAX.
static long long
s_parse_id (const char **text)
{
    const char *p = *text;
    if (*p < '0' || *p > '9')
        return -1;
    long long value = 0;
    while (*p >= '0' && *p <= '9') {
        value = value * 10 + (*p++ - '0');
        if (value > INT_MAX)
            return -1;
    }
    *text = p;
    return value;
}

static const char *
s_skip_blanks (const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

//  Parse text, adding to self if self is not NULL; returns -1 on a
//  syntax error or if out of memory.
static int
s_parse (bn_idset_t *self, const char *text)
{
    const char *p = s_skip_blanks (text);
    if (*p == 0)
        return 0;
    while (true) {
        p = s_skip_blanks (p);
        long long first = s_parse_id (&p);
        if (first < 0)
            return -1;
        long long last = first;
        p = s_skip_blanks (p);
        if (*p == '-') {
            p = s_skip_blanks (p + 1);
            last = s_parse_id (&p);
            if (last < first)
                return -1;
            p = s_skip_blanks (p);
        }
        if (self && bn_idset_add_range (self, (int)first, (int)last))
            return -1;
        if (*p == 0)
            return 0;
        if (*p++ != ',')
            return -1;
    }
}

int
bn_idset_add_text (bn_idset_t *self, const char *text)
{
    assert (self);
    assert (text);
    if (s_parse (NULL, text))
        return -1;
    return s_parse (self, text);
}

bn_idset_t *
bn_idset_parse (const char *text)
{
    assert (text);
    bn_idset_t *self = bn_idset_new ();
    if (self && bn_idset_add_text (self, text))
        bn_idset_destroy (&self);
    return self;
}

char *
bn_idset_encode (bn_idset_t *self)
{
    assert (self);
    //  Two ids of at most 10 digits, a dash and a comma per range
    size_t size = self->count * 23 + 1;
    char *text = malloc (size);
    if (!text)
        return NULL;
    char *p = text;
    *p = 0;
    for (size_t i = 0; i < self->count; i++) {
        s_range_t *range = &self->ranges[i];
        const char *comma = i ? "," : "";
        if (range->first == range->last)
            p += sprintf (p, "%s%d", comma, range->first);
        else
            p += sprintf (p, "%s%d-%d", comma, range->first, range->last);
    }
    return text;
}

char *
bn_idset_format (bn_idset_t *self)
{
    assert (self);
    char *folded = bn_idset_encode (self);
    if (!folded)
        return NULL;
    size_t size = strlen (folded) + 40;
    char *text = malloc (size);
    if (text)
        snprintf (text, size, "engines[%s] (%zu)", folded, self->total);
    free (folded);
    return text;
}

bool
bn_idset_equal (bn_idset_t *self, bn_idset_t *other)
{
    assert (self);
    assert (other);
    return self->count == other->count &&
           (self->count == 0 || memcmp (self->ranges, other->ranges,
                                        self->count * sizeof (s_range_t)) == 0);
}

bn_idset_t *
bn_idset_dup (bn_idset_t *self)
{
    assert (self);
    bn_idset_t *copy = bn_idset_new ();
    if (!copy)
        return NULL;
    if (self->count) {
        copy->ranges = malloc (self->count * sizeof (s_range_t));
        if (!copy->ranges) {
            free (copy);
            return NULL;
        }
        memcpy (copy->ranges, self->ranges, self->count * sizeof (s_range_t));
    }
    copy->count = copy->size = self->count;
    copy->total = self->total;
    return copy;
}

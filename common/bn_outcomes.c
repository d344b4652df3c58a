/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_outcomes: a ring of digests and outcomes in finishing order, and a
    linear-probing table of ring positions over it (removal by backward
    shift, so that no tombstones build up).  */
#include "bn_outcomes.h"

#include <assert.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S_DIGEST crypto_shorthash_siphashx24_BYTES //  16
#define S_MIN_CAP 64
//  Ring positions are 32-bit in the table (0 is an empty slot)
#define S_MAX_CAP ((size_t)UINT32_MAX / 4)

typedef struct {
    uint8_t digest[S_DIGEST];
    const void *where;
    uint32_t outcome; //  BN_OUTCOME_NONE: a hole a removal left
} s_entry_t;

struct _bn_outcomes_t {
    size_t max;
    s_entry_t *ring; //  cap entries; used of them from head on, oldest first
    size_t cap;
    size_t head;
    size_t used;     //  Entries from head on, holes included
    size_t size;     //  Outcomes held
    uint32_t *index; //  slots: ring position + 1, or 0
    size_t slots;    //  A power of two, at least twice cap
    uint8_t key[crypto_shorthash_siphashx24_KEYBYTES];
};

static size_t
s_bound (size_t max)
{
    return max == 0 ? 1 : max > S_MAX_CAP ? S_MAX_CAP : max;
}

bn_outcomes_t *
bn_outcomes_new (size_t max)
{
    if (sodium_init () < 0)
        return NULL;
    bn_outcomes_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->max = s_bound (max);
    //  a random key keeps clients from choosing msg_ids that collide
    randombytes_buf (self->key, sizeof self->key);
    return self;
}

void
bn_outcomes_destroy (bn_outcomes_t **self_p)
{
    assert (self_p);
    bn_outcomes_t *self = *self_p;
    if (!self)
        return;
    free (self->ring);
    free (self->index);
    free (self);
    *self_p = NULL;
}

static void
s_digest (bn_outcomes_t *self, const char *msg_id, uint8_t *digest)
{
    crypto_shorthash_siphashx24 (digest, (const unsigned char *)msg_id,
                                 strlen (msg_id), self->key);
}

//  The home slot of digest.
static size_t
s_home (bn_outcomes_t *self, const uint8_t *digest)
{
    uint64_t hash;
    memcpy (&hash, digest, sizeof hash);
    return (size_t)hash & (self->slots - 1);
}

//  The slot holding digest, or the empty slot where it would go.
static size_t
s_find (bn_outcomes_t *self, const uint8_t *digest)
{
    size_t mask = self->slots - 1;
    size_t slot = s_home (self, digest);
    while (self->index[slot] &&
           memcmp (self->ring[self->index[slot] - 1].digest, digest,
                   S_DIGEST) != 0)
        slot = (slot + 1) & mask;
    return slot;
}

//  Empty slot, moving back the entries after it that may take its place.
static void
s_unindex (bn_outcomes_t *self, size_t slot)
{
    size_t mask = self->slots - 1;
    size_t next = slot;
    while (true) {
        self->index[slot] = 0;
        while (true) {
            next = (next + 1) & mask;
            if (!self->index[next])
                return;
            size_t home =
                s_home (self, self->ring[self->index[next] - 1].digest);
            //  it stays if its home lies cyclically in (slot, next]
            bool stays = slot <= next ? slot < home && home <= next
                                      : slot < home || home <= next;
            if (!stays)
                break;
        }
        self->index[slot] = self->index[next];
        slot = next;
    }
}

//  The entry at ring position at leaves the table and becomes a hole.
static void
s_forget (bn_outcomes_t *self, size_t at)
{
    s_entry_t *entry = &self->ring[at];
    if (entry->outcome == BN_OUTCOME_NONE)
        return;
    s_unindex (self, s_find (self, entry->digest));
    entry->outcome = BN_OUTCOME_NONE;
    self->size--;
}

//  Move the held outcomes (the newest cap of them) into a ring of cap
//  entries and index them again. Returns -1 if out of memory (nothing
//  changed then).
static int
s_resize (bn_outcomes_t *self, size_t cap)
{
    size_t slots = 1;
    while (slots < 2 * cap)
        slots *= 2;
    s_entry_t *ring = malloc (cap * sizeof *ring);
    uint32_t *index = calloc (slots, sizeof *index);
    if (!ring || !index) {
        free (ring);
        free (index);
        return -1;
    }
    //  the newest live entries that fit, from the tail back
    size_t kept = 0;
    for (size_t i = self->used; i-- > 0 && kept < cap;) {
        s_entry_t *entry = &self->ring[(self->head + i) % self->cap];
        if (entry->outcome != BN_OUTCOME_NONE)
            ring[cap - 1 - kept++] = *entry;
    }
    memmove (ring, ring + cap - kept, kept * sizeof *ring);
    free (self->ring);
    free (self->index);
    self->ring = ring;
    self->index = index;
    self->cap = cap;
    self->slots = slots;
    self->head = 0;
    self->used = kept;
    self->size = kept;
    for (size_t at = 0; at < kept; at++)
        self->index[s_find (self, ring[at].digest)] = (uint32_t)at + 1;
    return 0;
}

int
bn_outcomes_add (bn_outcomes_t *self, const char *msg_id, bn_outcome_t outcome,
                 const void *where)
{
    assert (self);
    assert (msg_id);
    assert (outcome == BN_OUTCOME_SUCCEEDED || outcome == BN_OUTCOME_FAILED);
    s_entry_t entry = {.where = where, .outcome = outcome};
    s_digest (self, msg_id, entry.digest);
    if (self->slots) {
        size_t slot = s_find (self, entry.digest);
        if (self->index[slot])
            s_forget (self, self->index[slot] - 1);
    }
    if (self->used == self->cap && self->cap < self->max) {
        size_t cap = self->cap ? 2 * self->cap : S_MIN_CAP;
        if (s_resize (self, cap < self->max ? cap : self->max) != 0)
            return -1;
    }
    //  full: the oldest go (the holes with them)
    while (self->used == self->cap || self->size >= self->max) {
        s_forget (self, self->head);
        self->head = (self->head + 1) % self->cap;
        self->used--;
    }
    size_t at = (self->head + self->used) % self->cap;
    self->ring[at] = entry;
    self->index[s_find (self, entry.digest)] = (uint32_t)at + 1;
    self->used++;
    self->size++;
    return 0;
}

bn_outcome_t
bn_outcomes_get (bn_outcomes_t *self, const char *msg_id, const void **where_p)
{
    assert (self);
    assert (msg_id);
    if (!self->size)
        return BN_OUTCOME_NONE;
    uint8_t digest[S_DIGEST];
    s_digest (self, msg_id, digest);
    uint32_t at = self->index[s_find (self, digest)];
    if (!at)
        return BN_OUTCOME_NONE;
    if (where_p)
        *where_p = self->ring[at - 1].where;
    return (bn_outcome_t)self->ring[at - 1].outcome;
}

bool
bn_outcomes_remove (bn_outcomes_t *self, const char *msg_id)
{
    assert (self);
    assert (msg_id);
    if (!self->size)
        return false;
    uint8_t digest[S_DIGEST];
    s_digest (self, msg_id, digest);
    uint32_t at = self->index[s_find (self, digest)];
    if (!at)
        return false;
    s_forget (self, at - 1);
    return true;
}

size_t
bn_outcomes_size (bn_outcomes_t *self)
{
    assert (self);
    return self->size;
}

void
bn_outcomes_set_max (bn_outcomes_t *self, size_t max)
{
    assert (self);
    self->max = s_bound (max);
    if (self->cap > self->max && s_resize (self, self->max) != 0) {
        //  no room to move them: forget the oldest in place
        while (self->size > self->max) {
            s_forget (self, self->head);
            self->head = (self->head + 1) % self->cap;
            self->used--;
        }
    }
}

size_t
bn_outcomes_bytes (bn_outcomes_t *self)
{
    assert (self);
    return sizeof *self + self->cap * sizeof *self->ring +
           self->slots * sizeof *self->index;
}

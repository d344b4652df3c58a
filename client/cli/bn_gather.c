/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_gather: groups of engines with identical output and status.

    Groups are found through a hash of their content, so that adding one
    engine costs one hash of its output and, on a match, one comparison,
    however many engines and groups there are.  */
#include "bn_gather.h"
#include "bn_pxout.h"

#include <assert.h>
#include <czmq.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bn_idset_t *ids;
    char *out;
    size_t out_size;
    char *err;
    size_t err_size;
    char *status;
} s_group_t;

struct _bn_gather_t {
    zhashx_t *index; //  Content digest -> zlistx of s_group_t (usually 1)
    s_group_t **groups;
    size_t size;
    size_t alloc;
    bool sorted; //  groups are in order of their smallest id
};

static void
s_group_destroy (s_group_t **self_p)
{
    s_group_t *self = *self_p;
    if (self) {
        bn_idset_destroy (&self->ids);
        free (self->out);
        free (self->err);
        free (self->status);
        free (self);
        *self_p = NULL;
    }
}

static char *
s_copy (const char *text, size_t size)
{
    char *copy = malloc (size + 1);
    if (copy) {
        if (size)
            memcpy (copy, text, size);
        copy[size] = 0;
    }
    return copy;
}

static void
s_list_destroy (void **item)
{
    zlistx_destroy ((zlistx_t **)item);
}

bn_gather_t *
bn_gather_new (void)
{
    if (sodium_init () < 0)
        return NULL;
    bn_gather_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->index = zhashx_new ();
    if (!self->index) {
        free (self);
        return NULL;
    }
    zhashx_set_destructor (self->index, s_list_destroy);
    self->sorted = true;
    return self;
}

void
bn_gather_destroy (bn_gather_t **self_p)
{
    assert (self_p);
    bn_gather_t *self = *self_p;
    if (self) {
        zhashx_destroy (&self->index);
        for (size_t index = 0; index < self->size; index++)
            s_group_destroy (&self->groups[index]);
        free (self->groups);
        free (self);
        *self_p = NULL;
    }
}

//  Hex digest of the three texts, with their sizes so that the boundary
//  between them counts.
static void
s_digest (const char *out, size_t out_size, const char *err, size_t err_size,
          const char *status, char *hex, size_t hex_size)
{
    crypto_generichash_state state;
    unsigned char digest[16];
    uint64_t sizes[2] = {out_size, err_size};
    crypto_generichash_init (&state, NULL, 0, sizeof digest);
    crypto_generichash_update (&state, (const unsigned char *)sizes,
                               sizeof sizes);
    crypto_generichash_update (&state, (const unsigned char *)out, out_size);
    crypto_generichash_update (&state, (const unsigned char *)err, err_size);
    crypto_generichash_update (&state, (const unsigned char *)status,
                               strlen (status));
    crypto_generichash_final (&state, digest, sizeof digest);
    sodium_bin2hex (hex, hex_size, digest, sizeof digest);
}

static bool
s_group_matches (s_group_t *group, const char *out, size_t out_size,
                 const char *err, size_t err_size, const char *status)
{
    return group->out_size == out_size && group->err_size == err_size &&
           memcmp (group->out, out, out_size) == 0 &&
           memcmp (group->err, err, err_size) == 0 &&
           strcmp (group->status, status) == 0;
}

static s_group_t *
s_group_new (const char *out, size_t out_size, const char *err, size_t err_size,
             const char *status)
{
    s_group_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->ids = bn_idset_new ();
    self->out = s_copy (out, out_size);
    self->out_size = out_size;
    self->err = s_copy (err, err_size);
    self->err_size = err_size;
    self->status = strdup (status);
    if (!self->ids || !self->out || !self->err || !self->status)
        s_group_destroy (&self);
    return self;
}

int
bn_gather_add (bn_gather_t *self, int id, const char *out, size_t out_size,
               const char *err, size_t err_size, const char *status)
{
    assert (self);
    if (id < 0)
        return -1;
    if (!out)
        out_size = 0;
    if (!err)
        err_size = 0;
    out = out ? out : "";
    err = err ? err : "";
    status = status ? status : "";

    char hex[33];
    s_digest (out, out_size, err, err_size, status, hex, sizeof hex);
    zlistx_t *bucket = zhashx_lookup (self->index, hex);
    if (bucket) {
        for (s_group_t *group = zlistx_first (bucket); group;
             group = zlistx_next (bucket))
            if (s_group_matches (group, out, out_size, err, err_size, status)) {
                int first = bn_idset_first (group->ids);
                if (bn_idset_add (group->ids, id) != 0)
                    return -1;
                if (id < first)
                    self->sorted = false;
                return 0;
            }
    }
    if (self->size == self->alloc) {
        size_t alloc = self->alloc ? self->alloc * 2 : 8;
        s_group_t **groups = realloc (self->groups, alloc * sizeof *groups);
        if (!groups)
            return -1;
        self->groups = groups;
        self->alloc = alloc;
    }
    s_group_t *group = s_group_new (out, out_size, err, err_size, status);
    if (!group || bn_idset_add (group->ids, id) != 0) {
        s_group_destroy (&group);
        return -1;
    }
    if (!bucket) {
        bucket = zlistx_new ();
        if (!bucket || zhashx_insert (self->index, hex, bucket) != 0) {
            zlistx_destroy (&bucket);
            s_group_destroy (&group);
            return -1;
        }
    }
    if (!zlistx_add_end (bucket, group)) {
        s_group_destroy (&group);
        return -1;
    }
    if (self->size && id < bn_idset_first (self->groups[self->size - 1]->ids))
        self->sorted = false;
    self->groups[self->size++] = group;
    return 0;
}

static int
s_compare_groups (const void *a, const void *b)
{
    int left = bn_idset_first ((*(s_group_t *const *)a)->ids);
    int right = bn_idset_first ((*(s_group_t *const *)b)->ids);
    return (left > right) - (left < right);
}

static s_group_t *
s_group (bn_gather_t *self, size_t index)
{
    if (!self->sorted) {
        qsort (self->groups, self->size, sizeof *self->groups,
               s_compare_groups);
        self->sorted = true;
    }
    return index < self->size ? self->groups[index] : NULL;
}

size_t
bn_gather_size (bn_gather_t *self)
{
    assert (self);
    return self->size;
}

bn_idset_t *
bn_gather_ids (bn_gather_t *self, size_t index)
{
    assert (self);
    s_group_t *group = s_group (self, index);
    return group ? group->ids : NULL;
}

const char *
bn_gather_out (bn_gather_t *self, size_t index, size_t *size)
{
    assert (self);
    s_group_t *group = s_group (self, index);
    if (size)
        *size = group ? group->out_size : 0;
    return group ? group->out : NULL;
}

const char *
bn_gather_status (bn_gather_t *self, size_t index)
{
    assert (self);
    s_group_t *group = s_group (self, index);
    return group ? group->status : NULL;
}

int
bn_gather_print (bn_gather_t *self, FILE *file, bool quiet)
{
    assert (self);
    assert (file);
    for (size_t index = 0; index < self->size; index++) {
        s_group_t *group = s_group (self, index);
        if (bn_pxout_header (file, group->ids) != 0 ||
            bn_pxout_text (file, group->out, group->out_size) != 0 ||
            bn_pxout_tagged (file, "stderr", group->err, group->err_size) != 0)
            return -1;
        if (!quiet && *group->status &&
            bn_pxout_tagged (file, "status", group->status,
                             strlen (group->status)) != 0)
            return -1;
    }
    return 0;
}

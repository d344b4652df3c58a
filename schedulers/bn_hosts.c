/*  bn_hosts: host node links and the engines behind each.

    Two hashes: link id -> s_link_t (with the set of its engines), and
    engine uuid -> its s_link_t. The relays ask on every message, so both
    directions start with a test of the table's size: a controller without
    host nodes pays one branch per message.  */
#include "bn_hosts.h"

#include <assert.h>
#include <string.h>

#include <czmq.h>

#include "bn_msgtypes.h"

#define S_KEY_MAX 256 //  room for an engine uuid or a link id, NUL included

typedef struct {
    char *id;          //  link id
    zhashx_t *engines; //  uuid -> self, the engines routed through it
    int leaf;          //  the controller's tree leaf its leaf hangs below
    char *leaf_id;     //  its leaf's routing id, or NULL
} s_link_t;

struct _bn_hosts_t {
    zhashx_t *links;  //  link id -> s_link_t
    zhashx_t *routes; //  engine uuid -> s_link_t (borrowed)
    uint64_t stray;   //  messages through a link for an engine it does not
                      //  serve, or through an unknown link
};

static void
s_link_destroy (void **item)
{
    s_link_t *link = (s_link_t *)*item;
    if (!link)
        return;
    zhashx_destroy (&link->engines);
    free (link->id);
    free (link->leaf_id);
    free (link);
    *item = NULL;
}

bn_hosts_t *
bn_hosts_new (void)
{
    bn_hosts_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->links = zhashx_new ();
    self->routes = zhashx_new ();
    if (!self->links || !self->routes) {
        bn_hosts_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->links, s_link_destroy);
    return self;
}

void
bn_hosts_destroy (bn_hosts_t **self_p)
{
    assert (self_p);
    bn_hosts_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->routes);
    zhashx_destroy (&self->links);
    free (self);
    *self_p = NULL;
}

bool
bn_hosts_is_link_id (const void *data, size_t size)
{
    size_t prefix = strlen (BN_HOST_LINK_PREFIX);
    return data && size > prefix && size <= BN_HOSTS_LINK_MAX &&
           memcmp (data, BN_HOST_LINK_PREFIX, prefix) == 0 &&
           !memchr (data, 0, size);
}

int
bn_hosts_link_add (bn_hosts_t *self, const char *link)
{
    assert (self);
    assert (link);
    if (!bn_hosts_is_link_id (link, strlen (link)))
        return -1;
    if (zhashx_lookup (self->links, link))
        return 0;
    s_link_t *entry = calloc (1, sizeof *entry);
    if (!entry)
        return -1;
    entry->id = strdup (link);
    entry->engines = zhashx_new ();
    entry->leaf = -1;
    if (!entry->id || !entry->engines ||
        zhashx_insert (self->links, link, entry) != 0) {
        void *item = entry;
        s_link_destroy (&item);
        return -1;
    }
    return 0;
}

void
bn_hosts_link_remove (bn_hosts_t *self, const char *link)
{
    assert (self);
    assert (link);
    s_link_t *entry = zhashx_lookup (self->links, link);
    if (!entry)
        return;
    for (void *item = zhashx_first (entry->engines); item;
         item = zhashx_next (entry->engines))
        zhashx_delete (self->routes, zhashx_cursor (entry->engines));
    zhashx_delete (self->links, link);
}

bool
bn_hosts_has_link (bn_hosts_t *self, const char *link)
{
    assert (self);
    return link && zhashx_lookup (self->links, link) != NULL;
}

int
bn_hosts_set_leaf (bn_hosts_t *self, const char *link, int leaf,
                   const char *leaf_id)
{
    assert (self);
    assert (link);
    assert (leaf_id);
    s_link_t *entry = zhashx_lookup (self->links, link);
    char *copy = entry ? strdup (leaf_id) : NULL;
    if (!copy)
        return -1;
    free (entry->leaf_id);
    entry->leaf_id = copy;
    entry->leaf = leaf;
    return 0;
}

int
bn_hosts_leaf (bn_hosts_t *self, const char *link, const char **leaf_id)
{
    assert (self);
    s_link_t *entry = link ? zhashx_lookup (self->links, link) : NULL;
    if (!entry || !entry->leaf_id || entry->leaf < 0)
        return -1;
    if (leaf_id)
        *leaf_id = entry->leaf_id;
    return entry->leaf;
}

int
bn_hosts_route (bn_hosts_t *self, const char *uuid, const char *link)
{
    assert (self);
    assert (uuid);
    assert (link);
    s_link_t *entry = zhashx_lookup (self->links, link);
    if (!entry)
        return -1;
    bn_hosts_unroute (self, uuid);
    if (zhashx_insert (entry->engines, uuid, entry) != 0)
        return -1;
    if (zhashx_insert (self->routes, uuid, entry) != 0) {
        zhashx_delete (entry->engines, uuid);
        return -1;
    }
    return 0;
}

void
bn_hosts_unroute (bn_hosts_t *self, const char *uuid)
{
    assert (self);
    assert (uuid);
    s_link_t *entry = zhashx_lookup (self->routes, uuid);
    if (!entry)
        return;
    zhashx_delete (entry->engines, uuid);
    zhashx_delete (self->routes, uuid);
}

const char *
bn_hosts_via (bn_hosts_t *self, const char *uuid)
{
    assert (self);
    s_link_t *entry = uuid ? zhashx_lookup (self->routes, uuid) : NULL;
    return entry ? entry->id : NULL;
}

json_t *
bn_hosts_engines (bn_hosts_t *self, const char *link)
{
    assert (self);
    json_t *uuids = json_array ();
    s_link_t *entry = link ? zhashx_lookup (self->links, link) : NULL;
    if (!uuids || !entry)
        return uuids;
    for (void *item = zhashx_first (entry->engines); item;
         item = zhashx_next (entry->engines))
        json_array_append_new (
            uuids, json_string ((const char *)zhashx_cursor (entry->engines)));
    return uuids;
}

size_t
bn_hosts_links (bn_hosts_t *self)
{
    assert (self);
    return zhashx_size (self->links);
}

size_t
bn_hosts_routes (bn_hosts_t *self)
{
    assert (self);
    return zhashx_size (self->routes);
}

//  Copy ident index of msg into key as a C string; NULL if absent, too long
//  or holding a NUL.
static const char *
s_ident_key (bn_msg_t *msg, size_t index, char *key)
{
    size_t size;
    const void *data = bn_msg_ident (msg, index, &size);
    if (!data || size == 0 || size >= S_KEY_MAX || memchr (data, 0, size))
        return NULL;
    memcpy (key, data, size);
    key[size] = 0;
    return key;
}

int
bn_hosts_wrap (bn_hosts_t *self, bn_msg_t *msg)
{
    assert (msg);
    if (!self || zhashx_size (self->routes) == 0)
        return 0;
    char key[S_KEY_MAX];
    const char *uuid = s_ident_key (msg, 0, key);
    s_link_t *entry = uuid ? zhashx_lookup (self->routes, uuid) : NULL;
    if (!entry)
        return 0;
    return bn_msg_push_ident (msg, entry->id, strlen (entry->id));
}

int
bn_hosts_unwrap (bn_hosts_t *self, bn_msg_t *msg)
{
    assert (msg);
    if (!self || zhashx_size (self->links) == 0)
        return 0;
    size_t size;
    const void *data = bn_msg_ident (msg, 0, &size);
    if (!bn_hosts_is_link_id (data, size))
        return 0;
    char key[S_KEY_MAX];
    s_link_t *entry = zhashx_lookup (self->links, s_ident_key (msg, 0, key));
    bn_msg_pop_ident (msg);
    const char *uuid = entry ? s_ident_key (msg, 0, key) : NULL;
    if (!uuid || zhashx_lookup (self->routes, uuid) != entry) {
        self->stray++;
        return -1;
    }
    return 1;
}

json_t *
bn_hosts_stats (bn_hosts_t *self)
{
    assert (self);
    return json_pack ("{s:I, s:I, s:I}", "links",
                      (json_int_t)zhashx_size (self->links), "engines",
                      (json_int_t)zhashx_size (self->routes), "stray",
                      (json_int_t)self->stray);
}

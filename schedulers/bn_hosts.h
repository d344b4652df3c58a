/*  bn_hosts: the controller's table of host node links and of the engines
    each one serves (doc/hosts.md), which the relays and the task scheduler
    read to put a link's routing frame in front of what they send to a
    hosted engine and to take it off what comes up through a link. An
    engine without an entry connects straight to the controller.  */
#ifndef BN_HOSTS_H_INCLUDED
#define BN_HOSTS_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "bn_msg.h"

typedef struct _bn_hosts_t bn_hosts_t;

//  Longest link id accepted (bytes, without the NUL).
#define BN_HOSTS_LINK_MAX 255

//  Create an empty table; NULL if out of memory.
bn_hosts_t *bn_hosts_new (void);

//  Destroy a table; NULL-safe.
void bn_hosts_destroy (bn_hosts_t **self_p);

//  True if data (size bytes) has the form of a link id: BN_HOST_LINK_PREFIX
//  and at most BN_HOSTS_LINK_MAX bytes without a NUL.
bool bn_hosts_is_link_id (const void *data, size_t size);

//  Add a link (a no-op for a known one). Returns -1 if link is not a link
//  id or out of memory.
int bn_hosts_link_add (bn_hosts_t *self, const char *link);

//  Forget a link and every route through it; no-op for an unknown link.
void bn_hosts_link_remove (bn_hosts_t *self, const char *link);

//  True if link was added and not removed.
bool bn_hosts_has_link (bn_hosts_t *self, const char *link);

//  The host node of link runs the broadcast leaf leaf_id below the
//  controller's tree leaf leaf (doc/hosts.md). Returns -1 if the link is
//  unknown or out of memory.
int bn_hosts_set_leaf (bn_hosts_t *self, const char *link, int leaf,
                       const char *leaf_id);

//  The controller's tree leaf the host node of link hangs below, and
//  (when leaf_id is not NULL) its own leaf's routing id (borrowed); -1 if
//  the link is unknown or has no leaf.
int bn_hosts_leaf (bn_hosts_t *self, const char *link, const char **leaf_id);

//  Engine uuid is reached through link (a known link), replacing any route
//  it had. Returns -1 if the link is unknown or out of memory.
int bn_hosts_route (bn_hosts_t *self, const char *uuid, const char *link);

//  Engine uuid no longer has a route; no-op if it had none.
void bn_hosts_unroute (bn_hosts_t *self, const char *uuid);

//  The link engine uuid is reached through, or NULL (it connects straight
//  to the controller). Borrowed until the route changes.
const char *bn_hosts_via (bn_hosts_t *self, const char *uuid);

//  A new JSON array of the uuids routed through link (empty for an unknown
//  link); NULL if out of memory.
json_t *bn_hosts_engines (bn_hosts_t *self, const char *link);

//  Number of links, and of routed engines.
size_t bn_hosts_links (bn_hosts_t *self);
size_t bn_hosts_routes (bn_hosts_t *self);

//  msg goes to the engine named by its first ident: put that engine's link
//  in front when it has one. Returns 0, or -1 if out of memory.
int bn_hosts_wrap (bn_hosts_t *self, bn_msg_t *msg);

//  msg came from the engine side of a ROUTER: when its first ident is a
//  link, take it off. Returns 0 (no link frame: an engine of the
//  controller), 1 (taken off: the first ident is now an engine that link
//  serves), or -1 (a link frame, but the link is unknown or does not
//  serve the engine named next: the caller drops the message; counted).
int bn_hosts_unwrap (bn_hosts_t *self, bn_msg_t *msg);

//  A new JSON object of the table's counters; NULL if out of memory.
json_t *bn_hosts_stats (bn_hosts_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_group: engine replies grouped by identical outcome, for coalescing
    broadcast nodes (doc/broadcast.md, bn_group).

    Two replies fall in the same group when they have the same status, the
    same number of buffers with the same bytes, the same bn_stdout and
    bn_stderr text (absent counts as empty), and, when status is not "ok",
    the same ename and evalue. A group holds the set of engines that gave
    it (a bn_idset), its buffers once (shared references to the first
    member's frames, taken with zmq_msg_copy: no payload is copied), and
    the first member's reply content (for errors, whose traceback and
    engine_info differ between engines).

    A node adds its engines' replies one by one (bn_group_add_reply), and
    folds in the groups its children sent up (bn_group_add_merged, or
    bn_group_merge between two tables), then writes one merged message:
    bn_group_json gives the `bn_groups` metadata array and
    bn_group_add_buffers appends each group's buffers once, in the same
    order.

    Order: groups are listed by their lowest engine id, so a merged
    message does not depend on the order in which replies arrived.

    Lookups compare a 64-bit hash of the outcome (status, texts, every
    buffer's bytes, read once) and confirm a match byte for byte, so a
    reply costs one pass over its payload plus one comparison with the
    group it joins.  */
#ifndef BN_GROUP_H_INCLUDED
#define BN_GROUP_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

#include "bn_idset.h"
#include "bn_msg.h"

typedef struct _bn_group_t bn_group_t;

//  One outcome to add: an engine's reply or a child's group. Everything is
//  borrowed; the table keeps what it needs (shared frames, its own copies
//  of strings, a reference to content).
typedef struct {
    const char *status;        //  "ok", "error", "aborted"; NULL = "ok"
    const char *ename;         //  error name when status is not "ok"
    const char *evalue;        //  error value when status is not "ok"
    const char *stdout_text;   //  bn_stdout, or NULL
    const char *stderr_text;   //  bn_stderr, or NULL
    json_t *content;           //  reply content kept for errors, or NULL
    zmq_msg_t *const *buffers; //  the reply's buffers (nbuffers pointers)
    size_t nbuffers;
} bn_group_reply_t;

//  Create an empty table; NULL if out of memory.
bn_group_t *bn_group_new (void);

//  Destroy a table, releasing its frames and contents; NULLs the
//  reference; NULL-safe.
void bn_group_destroy (bn_group_t **self_p);

//  Add engine eid's reply. Returns 0, or -1 if eid is negative, already
//  has a reply in the table, or memory runs out (the table is unchanged).
int bn_group_add (bn_group_t *self, int eid, const bn_group_reply_t *reply);

//  Add an outcome shared by a set of engines (a child's group). Returns 0,
//  or -1 if the set is empty, one of its engines already has a reply in
//  the table, or memory runs out (the table is unchanged).
int bn_group_add_set (bn_group_t *self, bn_idset_t *engines,
                      const bn_group_reply_t *reply);

//  Add engine eid's reply message: status, ename and evalue from its
//  content, bn_stdout / bn_stderr from its content, its buffers, and the
//  content itself when status is not "ok". Returns 0, or -1 with a message
//  in err (content not JSON, a duplicate engine, out of memory).
int bn_group_add_reply (bn_group_t *self, int eid, bn_msg_t *reply, char *err,
                        size_t errsize);

//  Add the groups of a child's merged message: metadata `bn_groups` (as
//  bn_group_json writes it) and its buffers, taken in order. Returns 0, or
//  -1 with a message in err if the metadata is malformed (not an array,
//  a bad idset, nbuffers past the message's buffers, buffers left over),
//  an engine is already in the table, or memory runs out; the table is
//  then unchanged.
int bn_group_add_merged (bn_group_t *self, bn_msg_t *merged, char *err,
                         size_t errsize);

//  Fold every group of other into self (engine sets of equal outcomes are
//  joined); other is unchanged. Returns 0, or -1 if an engine is in both
//  tables (self is then unchanged) or memory runs out (self may then hold
//  part of other).
int bn_group_merge (bn_group_t *self, bn_group_t *other);

//  Number of groups.
size_t bn_group_size (bn_group_t *self);

//  Number of engines in all groups.
size_t bn_group_engines_total (bn_group_t *self);

//  True if engine eid has a reply in the table.
bool bn_group_has (bn_group_t *self, int eid);

//  Accessors of group `index` (0 ... size-1, in order of lowest engine
//  id; asserted in range). Pointers are borrowed until the table changes.
bn_idset_t *bn_group_engines (bn_group_t *self, size_t index);
//  Folded engine set text ("0-15,32"), malloc'd; NULL if out of memory.
char *bn_group_engines_text (bn_group_t *self, size_t index);
const char *bn_group_status (bn_group_t *self, size_t index);
const char *bn_group_ename (bn_group_t *self, size_t index);  //  or NULL
const char *bn_group_evalue (bn_group_t *self, size_t index); //  or NULL
const char *bn_group_stdout (bn_group_t *self, size_t index); //  or NULL
const char *bn_group_stderr (bn_group_t *self, size_t index); //  or NULL
json_t *bn_group_content (bn_group_t *self, size_t index);    //  or NULL
size_t bn_group_nbuffers (bn_group_t *self, size_t index);
zmq_msg_t *bn_group_buffer (bn_group_t *self, size_t index, size_t buffer);

//  The `bn_groups` metadata array: [{"engines": "0-15,32", "status",
//  "nbuffers", "content" (status not "ok"), "bn_stdout", "bn_stderr" (when
//  not empty)}], in group order. New reference; NULL if out of memory.
json_t *bn_group_json (bn_group_t *self);

//  Append every group's buffers, once each and in group order, to msg as
//  frames sharing their bytes. Returns 0, or -1 if out of memory.
int bn_group_add_buffers (bn_group_t *self, bn_msg_t *msg);

//  Remove every group.
void bn_group_clear (bn_group_t *self);

#endif

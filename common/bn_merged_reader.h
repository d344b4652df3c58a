/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_merged_reader: reads a merged broadcast reply (its shapes are in
    bn_merged_writer.h) one entry at a time, without a JSON tree of its
    metadata: the targets and bn_replies a node spliced in are walked as
    text, and any other layout (7.1.0's broadcast_targets alone, bn_groups,
    bn_reduced, keys in another order) through one walk of the metadata
    that finds them. Every entry is checked (its engines, status, buffer
    count within the message's buffers, and at the end that the entries
    name all of them), so that what a peer sent wrong is an error, never
    a misread.

        bn_merged_reader_t *reader = bn_merged_reader_new (msg);
        bn_merged_entry_t entry;
        int rc;
        while ((rc = bn_merged_reader_next (reader, &entry)) == 1)
            ... entry.uuid or entry.engines, entry.ok, entry.first ...
        if (rc < 0)
            ... bn_merged_reader_error (reader) ...
        bn_merged_reader_destroy (&reader);

    A reader that can do without a malformed entry (the client, which
    drops it and counts it) calls next again after -2.  */
#ifndef BN_MERGED_READER_H_INCLUDED
#define BN_MERGED_READER_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "bn_idset.h"
#include "bn_jscan.h"
#include "bn_msg.h"

typedef enum {
    BN_MERGED_NONE,    //  not a merged reply: one engine's
    BN_MERGED_TARGETS, //  broadcast_targets (and bn_replies)
    BN_MERGED_GROUPS,  //  bn_groups
    BN_MERGED_REDUCED  //  bn_reduced
} bn_merged_shape_t;

//  Longest engine uuid a reader accepts.
#define BN_MERGED_UUID_MAX 255

//  One entry: an engine (targets) or an engine set (groups, reduced).
//  Pointers are valid until the next call on the reader.
typedef struct {
    const char *uuid;      //  targets: the engine's uuid, else NULL
    int eid;               //  targets: its id; -1 for a bare uuid (7.1.0)
    bn_idset_t *engines;   //  groups, reduced: the engines, else NULL
    bool failure;          //  reduced: an entry of bn_reduced.failed
    const char *status;    //  "ok", "error", "aborted"...
    bool ok;               //  status is "ok"
    bool sized;            //  the entry says how many buffers it has
    size_t first;          //  index of its first buffer in the message
    size_t nbuffers;       //  its buffers (when sized)
    bn_jscan_slice_t text; //  the entry's JSON object, or none (data NULL)
    //  raw JSON values of the entry's keys; data NULL when absent
    bn_jscan_slice_t started, completed, content, out, err;
} bn_merged_entry_t;

typedef struct _bn_merged_reader_t bn_merged_reader_t;

//  The shape of msg's metadata, told from the keys its top-level object
//  holds (a key nested in a value does not count; a walk only when the
//  text does not settle it at a look): what to expect of a reader.
bn_merged_shape_t bn_merged_shape (bn_msg_t *msg);

//  Create a reader of msg (borrowed: it must outlive the reader and not
//  change). NULL if out of memory. A message that is not a merged reply
//  gives a reader whose first next reports the error.
bn_merged_reader_t *bn_merged_reader_new (bn_msg_t *msg);

//  Destroy a reader; NULLs the reference; NULL-safe.
void bn_merged_reader_destroy (bn_merged_reader_t **self_p);

//  The message's shape.
bn_merged_shape_t bn_merged_reader_shape (bn_merged_reader_t *self);

//  Read the next entry into *entry. Returns 1; 0 past the last one (the
//  entries named every buffer); -2 if this entry is malformed but the
//  next can be read (*entry holds what could be read of it: its engines
//  or uuid when they are well-formed, its buffers, clipped to the
//  message's); -1 if the reply is malformed there (further calls return
//  -1). bn_merged_reader_error says how.
int bn_merged_reader_next (bn_merged_reader_t *self, bn_merged_entry_t *entry);

//  Why the last entry (-2) or the reply (-1) was malformed ("" before).
const char *bn_merged_reader_error (bn_merged_reader_t *self);

//  True if the entries are read through the text a merging node spliced
//  in last (no walk of the rest of the metadata); known for sure once
//  they are all read.
bool bn_merged_reader_spliced (bn_merged_reader_t *self);

//  bn_reduced's op, NULL for other shapes (valid while the reader is).
const char *bn_merged_reader_op (bn_merged_reader_t *self);

//  bn_reduced's error (the reduction's own failure) as a new JSON object,
//  or NULL when there is none (or for other shapes).
json_t *bn_merged_reader_reduce_error (bn_merged_reader_t *self);

//  The metadata of a merged reply without the keys of its entries, as a
//  new JSON object (a node builds its own merged reply on it): when
//  spliced (a reader of msg found its lists spliced in last:
//  bn_merged_reader_spliced once it has read them all), only the part
//  before them is parsed; else a copy of the parsed metadata without
//  them. For another message, a copy of its metadata. NULL if it has
//  none or memory runs out.
json_t *bn_merged_base (bn_msg_t *msg, bool spliced);

//  The metadata as text (when spliced, the part before the lists), without
//  its top-level members named in drop (n of them: the entries' keys among
//  them for the base) and without its closing brace (bn_jscan_drop_keys),
//  malloc'd, its bytes in *size; NULL if it is not a JSON object or memory
//  runs out.
char *bn_merged_base_text (bn_msg_t *msg, bool spliced, const char *const *drop,
                           size_t n, size_t *size);

//  The same base's raw values of keys, read without a JSON tree (as
//  bn_jscan_keys: values[k].data NULL when absent). They point into msg's
//  metadata or, when the base is the part before spliced lists, into a
//  closed copy of it that *copy_p then holds (the caller frees it; NULL
//  otherwise). Returns 0, or -1 if the base is not a JSON object.
int bn_merged_base_keys (bn_msg_t *msg, bool spliced, const char *const *keys,
                         size_t n, bn_jscan_slice_t *values, char **copy_p);

//  The number of engines a merged reply answers for (its targets, or the
//  engines of its sets; 0 for a malformed one), or -1 if msg is not a
//  merged reply.
int bn_merged_engines (bn_msg_t *msg);

//  The raw value of a string key of an entry (started, bn_stdout...)
//  unescaped into a new string; NULL if absent, not a string, or out of
//  memory.
char *bn_merged_string (bn_jscan_slice_t value);

//  The raw value of a JSON key of an entry (content) parsed into a new
//  JSON value; NULL if absent or malformed.
json_t *bn_merged_json (bn_jscan_slice_t value);

#endif

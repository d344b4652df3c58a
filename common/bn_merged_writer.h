/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_merged_writer: writes merged broadcast replies, the one message a
    merging node of the broadcast tree sends for the replies of many
    engines (doc/broadcast.md). bn_merged_reader reads them; the metadata
    keys are spelled in bn_msgtypes.h (BN_BCAST_*). A merged reply has one
    of three shapes:

    - targets: broadcast_targets, the [uuid, id] pair of every engine
      (IPython Parallel 7.1.0's format), and beside it bn_replies, one
      entry per engine in the same order:
          {"status", "started", "completed", "nbuffers",
           "content" (when status is not "ok"), "bn_stdout", "bn_stderr"}
      (started and completed null when not known; bn_stdout and bn_stderr
      only when the engine put its output in its reply); the buffers are
      each engine's nbuffers in that order. The writer keeps both lists as
      text and splices them in last, after the other metadata keys
      (`...,"broadcast_targets":[...],"bn_replies":[...]}`), so that a
      parent node and the client read them back without a JSON tree;
    - groups: bn_groups, engines with identical replies as one entry,
          [{"engines": "0-15,32", "status", "nbuffers", "content",
            "bn_stdout", "bn_stderr"}]
      and each group's buffers once, in group order;
    - reduced: bn_reduced,
          {"op", "engines", "failed": [{"engines", "content"}], "error"}
      and the reduced value as the buffers.

    Entries are written as jansson writes compact JSON, so that an entry
    passed through a parent node as text and one it built are alike.  */
#ifndef BN_MERGED_WRITER_H_INCLUDED
#define BN_MERGED_WRITER_H_INCLUDED

#include <jansson.h>
#include <stddef.h>

#include "bn_msg.h"

typedef struct _bn_merged_writer_t bn_merged_writer_t;

//  Create a writer of the targets shape; NULL if out of memory.
bn_merged_writer_t *bn_merged_writer_new (void);

//  Destroy a writer; NULLs the reference; NULL-safe.
void bn_merged_writer_destroy (bn_merged_writer_t **self_p);

//  Add one engine: its target (uuid, eid) and its bn_replies entry, the
//  text (size bytes) of a JSON object as bn_merged_entry writes it or a
//  reader read it. Its buffers are the caller's to append.
void bn_merged_writer_add (bn_merged_writer_t *self, const char *uuid, int eid,
                           const char *entry, size_t size);

//  Number of engines added since the last finish.
size_t bn_merged_writer_count (bn_merged_writer_t *self);

//  Set msg's metadata to base (a JSON object without the keys of the
//  entries; borrowed) as compact JSON with broadcast_targets and
//  bn_replies spliced in last, and start over. Returns 0, or -1 if out of
//  memory (msg is then unchanged).
int bn_merged_writer_finish (bn_merged_writer_t *self, json_t *base,
                             bn_msg_t *msg);

//  The same with base given as text: an object's opening brace and its
//  members (size bytes), without the closing brace.
int bn_merged_writer_finish_text (bn_merged_writer_t *self, const char *base,
                                  size_t size, bn_msg_t *msg);

//  The bn_replies entry of one engine's reply as JSON text, malloc'd
//  (NULL if out of memory): status (NULL: "error"), started and completed
//  (null when NULL), nbuffers, content (borrowed; {} when NULL) when
//  status is not "ok", and bn_stdout / bn_stderr when not NULL.
char *bn_merged_entry (const char *status, const char *started,
                       const char *completed, size_t nbuffers, json_t *content,
                       const char *out, const char *err);

//  A bn_groups entry (new reference; NULL if out of memory): engines (an
//  engine set's text), status, nbuffers, content (borrowed) when not
//  NULL, bn_stdout / bn_stderr when not NULL.
json_t *bn_merged_group (const char *engines, const char *status,
                         size_t nbuffers, json_t *content, const char *out,
                         const char *err);

//  The bn_reduced object of reduction op over the engines (an engine set's
//  text) without failures (new reference; NULL if out of memory).
json_t *bn_merged_reduced (const char *op, const char *engines);

//  Add a failure to bn_reduced: engines (set text) with their error
//  content (borrowed). Returns 0, or -1 if out of memory.
int bn_merged_reduced_fail (json_t *reduced, const char *engines,
                            json_t *content);

//  Set bn_reduced's error, the reduction's own failure (content
//  borrowed). Returns 0, or -1 if out of memory.
int bn_merged_reduced_set_error (json_t *reduced, json_t *content);

#endif

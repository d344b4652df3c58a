/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_pickle: the pickle subset C peers read and write (doc/wire.md 10):
    a decoder for protocols 0 to 5 into a value tree, and a protocol 4
    writer byte for byte as Python's.  */
#ifndef BN_PICKLE_H_INCLUDED
#define BN_PICKLE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "bn_value.h"

//  Limits on what a peer's pickle may make the decoder build.
#define BN_PICKLE_MAX_DEPTH 1000 //  nesting of containers and objects
//  Memo references (BINGET, DUP) are deep copies here, as every reader of
//  the value walks it as a tree: their total size (64 bytes a value, plus
//  its text) may not pass this many bytes plus BN_PICKLE_COPY_PER_BYTE
//  times the pickle's size, about two values a byte, so that what a pickle
//  costs to decode and to use grows with its size, not with its
//  references, past about 250,000 values (a few ms): [[0] * 10] * 5000,
//  55,001 values from 10 kB, fits; 256 bytes of DUPs are refused after
//  16 MiB of copies.
#define BN_PICKLE_COPY_BUDGET (16u * 1024 * 1024)
#define BN_PICKLE_COPY_PER_BYTE 128u

//  Decode a pickle of protocol 0 to 5 into a value tree.  Reads None, bool,
//  int (up to 64 bits), float, str, bytes/bytearray, list, tuple, dict,
//  set/frozenset, globals; an instance (NEWOBJ, NEWOBJ_EX, REDUCE, INST,
//  OBJ, then BUILD, APPENDS, SETITEMS) becomes an OBJECT, except the
//  protocol-2 spellings of bytes, bytearray, set and frozenset, which
//  become BYTES and SET.  Never reads past `size`; on malformed or
//  unsupported input (out-of-band buffers, persistent ids, the extension
//  registry, ints over 64 bits, limits above) returns NULL with a message
//  in err (when err is not NULL).
bn_value_t *bn_pickle_decode (const void *data, size_t size, char *err,
                              size_t errsize);

//  Encode a value as a protocol 4 pickle, byte for byte what Python 3.11's
//  pickle.dumps writes for the same objects (frames, memo, batches), except
//  that Python refers back to an object it meets twice where this writes
//  it twice, writes a set in its own order, and a frozenset as a set.
//  Returns malloc'd bytes and their size, or NULL when out of memory or
//  when Python could not load the result: a str that is not UTF-8, an
//  unhashable dict key or set item (list, dict, set).
void *bn_pickle_encode (const bn_value_t *value, size_t *size_p);

//  The writer bn_pickle_encode uses, for encoders that write values of
//  their own in place of some items (ipyparallel's canning, bn_serialize).
typedef struct _bn_pickle_writer_t bn_pickle_writer_t;

//  What to write in place of an item of a container (key: its dict key,
//  or NULL): a value, or NULL for the item itself.
typedef const bn_value_t *(bn_pickle_item_fn)(void *arg, const bn_value_t *item,
                                              const bn_value_t *key);

//  Create a writer with a pickle begun. Returns NULL if out of memory.
bn_pickle_writer_t *bn_pickle_writer_new (void);

//  Destroy a writer and what it has written; NULL-safe.
void bn_pickle_writer_destroy (bn_pickle_writer_t **self_p);

//  Write value once and then refer back to it by memo, as Python does for
//  an object it meets again (the class and key of each CannedBytes). Two
//  values at most; they must outlive the writer.
void bn_pickle_writer_share (bn_pickle_writer_t *self, const bn_value_t *value);

//  Ask fn what to write for each item of container (borrowed).
void bn_pickle_writer_set_items (bn_pickle_writer_t *self,
                                 const bn_value_t *container,
                                 bn_pickle_item_fn *fn, void *arg);

//  Write the pickle's value.
void bn_pickle_writer_save (bn_pickle_writer_t *self, const bn_value_t *value);

//  End the pickle and give it up: malloc'd bytes and their size, or NULL
//  as bn_pickle_encode returns it.
void *bn_pickle_writer_finish (bn_pickle_writer_t *self, size_t *size_p);

#endif

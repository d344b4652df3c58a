/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_serialize: ipyparallel.serialize's serialize_object and
    deserialize_object (doc/wire.md 10): a value as one pickle plus its big
    bytes out of band, canned as CannedBytes, and back (uncanned).  */
#ifndef BN_SERIALIZE_H_INCLUDED
#define BN_SERIALIZE_H_INCLUDED

#include <czmq.h>
#include <stddef.h>

#include "bn_msg.h"
#include "bn_value.h"

//  A borrowed buffer: one frame of an apply_request or apply_reply. When
//  frame is set (bn_bytes_from_msg), a big bytes value decoded from it
//  shares the frame's bytes instead of copying them.
typedef struct {
    const void *data;
    size_t size;
    zmq_msg_t *frame; //  the frame holding data, or NULL
} bn_bytes_t;

//  The module of ipyparallel's canned classes (CannedBytes, Reference...).
#define BN_SERIALIZE_CANNING "ipyparallel.serialize.canning"

//  ipyparallel's thresholds (jupyter_client.session MAX_BYTES, MAX_ITEMS)
#define BN_SERIALIZE_BUFFER_THRESHOLD 1024 //  bytes over this go out of band
#define BN_SERIALIZE_ITEM_THRESHOLD 64     //  containers below this are canned

//  Bytes decoded from a frame of at least this size share it; smaller
//  ones are copied, as libzmq may receive them into a batch buffer that
//  sharing would keep (8 KiB, ZMQ_IN_BATCH_SIZE).
#define BN_SERIALIZE_SHARE_THRESHOLD 65536

//  ipyparallel.serialize.deserialize_object: decode the pickle in
//  frames[0], put the out-of-band frames that follow into the canned
//  objects' None buffer slots, and uncan: CannedBytes and CannedMemoryView
//  become BYTES and a CannedObject without keys or hook its object (also
//  inside a top-level list, tuple, set or dict), other canned objects
//  (Reference, CannedFunction, CannedArray with its buffers filled in)
//  stay OBJECTs.  Stores the number of frames consumed in *used
//  (when not NULL).  Returns NULL with a message in err on failure.
bn_value_t *bn_deserialize_object (const bn_bytes_t *frames, size_t nframes,
                                   size_t *used, char *err, size_t errsize);

//  ipyparallel.serialize.serialize_object: frames the stock
//  deserialize_object turns back into the equivalent Python value: one
//  pickle, plus one frame per bytes value over 1024 bytes (at the top or
//  directly in a top-level list, tuple or dict of fewer than 64 items),
//  sent as a CannedBytes.  A top-level dict whose keys Python cannot sort
//  (deserialize_object sorts them) is wrapped in a CannedObject, which
//  uncans to the dict.  Returns NULL if the value cannot be pickled (see
//  bn_pickle_encode) or when out of memory.
zmsg_t *bn_serialize_object (const bn_value_t *value);

//  Same, appending the frames to `msg` as buffers, none of them copied:
//  the out-of-band frames share the values' bytes (bn_value_bytes_hold).
//  Returns 0, or -1 (the message may then hold some of them).
int bn_serialize_object_add (bn_msg_t *msg, const bn_value_t *value);

//  Python's order of two dict keys of one kind: str, bytes, or numbers.
int bn_serialize_key_compare (const bn_value_t *a, const bn_value_t *b);

//  Borrowed views of a message's buffers, for the functions above: fills up
//  to `max` entries of `out` and returns the number of buffers.
size_t bn_bytes_from_msg (bn_msg_t *msg, bn_bytes_t *out, size_t max);

#endif

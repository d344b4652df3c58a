/*  bn_pickle: the pickle subset C peers read and write, and IPython
    Parallel's serialize_object / apply buffers on top of it
    (doc/wire.md 10).  */
#ifndef BN_PICKLE_H_INCLUDED
#define BN_PICKLE_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#include "bn_msg.h"
#include "bn_value.h"

//  A borrowed buffer: one frame of an apply_request or apply_reply.
typedef struct {
    const void *data;
    size_t size;
} bn_bytes_t;

//  Limits on what a peer's pickle may make the decoder build.
#define BN_PICKLE_MAX_DEPTH 1000 //  nesting of containers and objects
//  Memo references (BINGET) are deep copies here; their total size may
//  not pass this many bytes plus 16 times the pickle's size.
#define BN_PICKLE_COPY_BUDGET (64u * 1024 * 1024)

//  ipyparallel's thresholds (jupyter_client.session MAX_BYTES, MAX_ITEMS)
#define BN_SERIALIZE_BUFFER_THRESHOLD 1024 //  bytes over this go out of band
#define BN_SERIALIZE_ITEM_THRESHOLD 64     //  containers below this are canned

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

//  ipyparallel.serialize.deserialize_object: decode the pickle in
//  frames[0], put the out-of-band frames that follow into the canned
//  objects' None buffer slots, and uncan: CannedBytes and CannedMemoryView
//  become BYTES (also inside a top-level list, tuple, set or dict), other
//  canned objects (Reference, CannedFunction, CannedArray with its buffers
//  filled in) stay OBJECTs.  Stores the number of frames consumed in *used
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

//  Same, appending the frames to `msg` as buffers (the pickle without a
//  copy).  Returns 0, or -1 (the message may then hold some of them).
int bn_serialize_object_add (bn_msg_t *msg, const bn_value_t *value);

//  How an apply_request names the function to call.
typedef enum {
    BN_APPLY_REFERENCE,       //  ipyparallel Reference('name'): name
    BN_APPLY_GLOBAL,          //  a plain global (builtins.sum): module, name
    BN_APPLY_CANNED_FUNCTION, //  a Python function: module, __name__
    BN_APPLY_OTHER            //  anything else (a partial, a class...)
} bn_apply_kind_t;

//  An unpacked apply_request (fields owned; free with bn_apply_clear).
typedef struct {
    bn_apply_kind_t kind;
    char *module;       //  GLOBAL / CANNED_FUNCTION module, else NULL
    char *name;         //  Reference name, global or function name, or NULL
    char *description;  //  what f is, for messages: "Reference('echo')",
                        //  "builtins.sum", "__main__.f", or its type
    bn_value_t *f;      //  f as decoded and uncanned
    bn_value_t *args;   //  LIST of positional args
    bn_value_t *kwargs; //  DICT of keyword args (str keys)
} bn_apply_t;

//  ipyparallel.serialize.unpack_apply_message: decode the buffers of an
//  apply_request (f's frames, the info pickle, args' frames, kwargs'
//  frames) into `out`.  Returns 0, or -1 with a message in err and `out`
//  cleared.
int bn_apply_unpack (const bn_bytes_t *bufs, size_t nbufs, bn_apply_t *out,
                     char *err, size_t errsize);

//  Free what bn_apply_unpack put in `self` and zero it; safe to repeat.
void bn_apply_clear (bn_apply_t *self);

//  Buffers of an apply_request calling Reference(fname) (what a Python
//  engine evaluates as `fname` in its namespace) with args (a LIST or
//  TUPLE, or NULL) and kwargs (a DICT with str keys, or NULL), as
//  pack_apply_message makes them.  NULL if an argument cannot be pickled.
zmsg_t *bn_apply_pack_reference (const char *fname, const bn_value_t *args,
                                 const bn_value_t *kwargs);

//  Same with f a plain global such as builtins.sum, which a stock Python
//  engine imports and calls.
zmsg_t *bn_apply_pack_global (const char *module, const char *name,
                              const bn_value_t *args, const bn_value_t *kwargs);

//  bn_apply_pack_reference / bn_apply_pack_global appending the buffers to
//  `msg`.  Return 0, or -1 (the message may then hold some of them).
int bn_apply_add_reference (bn_msg_t *msg, const char *fname,
                            const bn_value_t *args, const bn_value_t *kwargs);
int bn_apply_add_global (bn_msg_t *msg, const char *module, const char *name,
                         const bn_value_t *args, const bn_value_t *kwargs);

//  The result carried by an apply_reply's buffers (the first object
//  deserialize_object finds).  NULL with a message in err on failure.
bn_value_t *bn_apply_decode_result (const bn_bytes_t *bufs, size_t nbufs,
                                    char *err, size_t errsize);

//  Borrowed views of a message's buffers, for the functions above: fills up
//  to `max` entries of `out` and returns the number of buffers.
size_t bn_bytes_from_msg (bn_msg_t *msg, bn_bytes_t *out, size_t max);

#endif

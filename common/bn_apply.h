/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_apply: the buffers of an apply_request and its reply as IPython
    Parallel's pack_apply_message and unpack_apply_message make and read
    them (doc/wire.md 10): f, the info pickle, args and kwargs, each
    serialized as bn_serialize does.  */
#ifndef BN_APPLY_H_INCLUDED
#define BN_APPLY_H_INCLUDED

#include <czmq.h>

#include "bn_msg.h"
#include "bn_serialize.h"
#include "bn_value.h"

//  How an apply_request names the function to call.
typedef enum {
    BN_APPLY_REFERENCE,       //  ipyparallel Reference('name'): name
    BN_APPLY_GLOBAL,          //  a plain global (builtins.sum): module, name
    BN_APPLY_CANNED_FUNCTION, //  a Python function: module, __name__
    BN_APPLY_OTHER            //  anything else (a partial, a class...)
} bn_apply_kind_t;

//  An unpacked apply_request (fields owned; free with bn_apply_clear).
//  When a memo that knew f unpacked it, module, name, description and f
//  are the memo's (borrowed): they stay valid until the memo's next unpack
//  or its destruction.
typedef struct {
    bn_apply_kind_t kind;
    char *module;       //  GLOBAL / CANNED_FUNCTION module, else NULL
    char *name;         //  Reference name, global or function name, or NULL
    char *description;  //  what f is, for messages: "Reference('echo')",
                        //  "builtins.sum", "__main__.f", or its type
    bn_value_t *f;      //  f as decoded and uncanned
    bn_value_t *args;   //  LIST of positional args
    bn_value_t *kwargs; //  DICT of keyword args (str keys)
    bool borrowed;      //  f and its names are a memo's
} bn_apply_t;

//  ipyparallel.serialize.unpack_apply_message: decode the buffers of an
//  apply_request (f's frames, the info pickle, args' frames, kwargs'
//  frames) into `out`.  Returns 0, or -1 with a message in err and `out`
//  cleared.
int bn_apply_unpack (const bn_bytes_t *bufs, size_t nbufs, bn_apply_t *out,
                     char *err, size_t errsize);

//  What bn_apply_unpack_with remembers of the last apply_request: the
//  bytes of its f and info buffers and what they decoded to, so that a
//  run of requests calling one function with arguments of one shape
//  decodes only the arguments.
typedef struct _bn_apply_memo_t bn_apply_memo_t;

//  Create an empty memo; NULL if out of memory.
bn_apply_memo_t *bn_apply_memo_new (void);

//  Destroy a memo; NULL-safe.
void bn_apply_memo_destroy (bn_apply_memo_t **self_p);

//  bn_apply_unpack, taking f and info from memo (NULL: none) when their
//  buffers hold the bytes memo last saw, and leaving these in memo
//  otherwise. The result is the same either way, except that f and its
//  names taken from memo are borrowed from it (see bn_apply_t): clear
//  `out` before memo unpacks again.
int bn_apply_unpack_with (bn_apply_memo_t *memo, const bn_bytes_t *bufs,
                          size_t nbufs, bn_apply_t *out, char *err,
                          size_t errsize);

//  What the function of an apply_request's buffers is, decoding f alone:
//  a Reference's name ("echo"), a global's or a function's module.name
//  ("builtins.sum"), else its type; a new string, or NULL if f cannot be
//  read.
char *bn_apply_function (const bn_bytes_t *bufs, size_t nbufs);

//  Free what bn_apply_unpack put in `self` and zero it; safe to repeat.
void bn_apply_clear (bn_apply_t *self);

//  ipyparallel's Reference(fname) as it pickles it (its state: the name
//  and no buffers): an argument that an engine, banyan or Python, replaces
//  by the value fname names in its namespace. NULL if out of memory.
bn_value_t *bn_apply_reference_new (const char *fname);

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

#endif

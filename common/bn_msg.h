/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_msg: one Jupyter wire message (doc/wire.md 1) as libzmq frames: routing
    idents, signature, four JSON parts parsed only on demand, and buffers
    that are moved between sockets without copying.  */
#ifndef BN_MSG_H_INCLUDED
#define BN_MSG_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "bn_session.h"

typedef struct _bn_msg_t bn_msg_t;

//  The four signed JSON parts, in wire order.
typedef enum {
    BN_PART_HEADER = 0,
    BN_PART_PARENT = 1,
    BN_PART_METADATA = 2,
    BN_PART_CONTENT = 3
} bn_part_t;

//  Receive one whole multipart message from a libzmq socket handle (use
//  zsock_resolve on a zsock_t). Never fails on content: a message with no
//  delimiter or too few frames is returned and refused by bn_msg_verify.
//  Returns NULL if nothing could be received (EAGAIN, EINTR, ETERM).
bn_msg_t *bn_msg_recv (void *socket);

//  Same, with flags passed to zmq_msg_recv for the first frame
//  (ZMQ_DONTWAIT).
bn_msg_t *bn_msg_recv_flags (void *socket, int flags);

//  Create a message of msg_type with a fresh header from session, parent
//  `{}`, metadata `{}`, content `{}`, no idents and no buffers. msg_type
//  may be any UTF-8 text (a reply type derived from a peer's is escaped).
//  Returns NULL on allocation failure or when msg_type is not UTF-8.
bn_msg_t *bn_msg_new (bn_session_t *session, const char *msg_type);

//  Create a reply to request: fresh header of msg_type from session, parent
//  = the request's header frame as received (shared, not copied), and the
//  request's idents. Returns NULL on allocation failure.
bn_msg_t *bn_msg_new_reply (bn_session_t *session, bn_msg_t *request,
                            const char *msg_type);

//  Create an unsigned message, no idents or buffers, from the raw bytes of
//  its four JSON parts (a NULL part reads as {}), e.g. as a database kept
//  them. Returns NULL on allocation failure.
bn_msg_t *bn_msg_new_parts (const void *const data[4], const size_t size[4]);

//  Destroy a message and release its frames; NULL-safe.
void bn_msg_destroy (bn_msg_t **self_p);

//  A copy that shares every frame's bytes with the original (libzmq
//  reference counting). Parsed JSON is not copied. NULL on failure.
bn_msg_t *bn_msg_dup (bn_msg_t *self);

//  Check framing (delimiter, signature frame, four JSON parts) and the
//  signature with session (recording it against replays when record).
//  Returns 0, BN_EPROTO, BN_ESIGNATURE or BN_EREPLAY.
int bn_msg_verify (bn_msg_t *self, bn_session_t *session, bool record);

//  True when the message had a delimiter and the five frames after it.
bool bn_msg_well_framed (bn_msg_t *self);

//  Counts, by cause, of the messages a receiver dropped (bn_msg_check).
typedef struct {
    uint64_t bad_frame;     //  no delimiter, too few frames
    uint64_t bad_signature; //  missing or wrong HMAC
    uint64_t replayed;      //  signature seen before
    uint64_t bad_header;    //  header without string msg_id and msg_type
} bn_msg_drops_t;

//  What bn_msg_check checks besides the framing.
#define BN_MSG_CHECK_SIGNATURE 1 //  the signature
#define BN_MSG_CHECK_REPLAY 2    //  the signature, recorded against replays
#define BN_MSG_CHECK_HEADER 4    //  the header's msg_id and msg_type

//  Check a message from a peer before its receiver handles it: framing,
//  and what checks asks for (signatures with session's key). A failure
//  is counted in drops and logged as "<who>: dropped a message: <why>",
//  who being printf-formatted (only then). Returns 0, BN_EPROTO (framing
//  or header), BN_ESIGNATURE or BN_EREPLAY.
int bn_msg_check (bn_msg_t *self, bn_session_t *session, int checks,
                  bn_msg_drops_t *drops, const char *who, ...)
    __attribute__ ((format (printf, 5, 6)));

//  Routing idents (frames before the delimiter).
size_t bn_msg_nidents (bn_msg_t *self);
const void *bn_msg_ident (bn_msg_t *self, size_t index, size_t *size);

//  The address of the peer a received message came from ("198.18.0.3"),
//  as libzmq tells it for TCP connections, into text; "" (and false) when
//  it does not (another transport, a message made here).
bool bn_msg_peer_address (bn_msg_t *self, char *text, size_t size);
bool bn_msg_ident_is (bn_msg_t *self, size_t index, const void *data,
                      size_t size);
//  True if the ident at index starts with the text prefix.
bool bn_msg_ident_prefix (bn_msg_t *self, size_t index, const char *prefix);
//  The ident at index as a malloc'd NUL-terminated string, or NULL.
char *bn_msg_ident_strdup (bn_msg_t *self, size_t index);

//  Put an ident first; returns -1 on allocation failure.
int bn_msg_push_ident (bn_msg_t *self, const void *data, size_t size);
//  Append an ident after the existing ones; -1 on failure.
int bn_msg_append_ident (bn_msg_t *self, const void *data, size_t size);
//  Remove the first ident (no-op without idents).
void bn_msg_pop_ident (bn_msg_t *self);
//  Swap the first two idents (no-op with fewer than two).
void bn_msg_swap_idents (bn_msg_t *self);
//  Drop all idents.
void bn_msg_clear_idents (bn_msg_t *self);
//  Replace idents with shared copies of other's; -1 on failure.
int bn_msg_copy_idents (bn_msg_t *self, bn_msg_t *other);

//  Raw bytes of a JSON part as received or last serialised.
const void *bn_msg_part_data (bn_msg_t *self, bn_part_t part, size_t *size);

//  A JSON part, parsed on first use (borrowed reference, owned by the
//  message). NULL if the part is missing, not JSON, or not an object.
json_t *bn_msg_part (bn_msg_t *self, bn_part_t part);
json_t *bn_msg_header (bn_msg_t *self);
//  True when the part is a JSON object (bn_msg_part would give one),
//  checked without building its tree when it was not parsed yet.
bool bn_msg_part_is_object (bn_msg_t *self, bn_part_t part);
json_t *bn_msg_parent (bn_msg_t *self);
json_t *bn_msg_metadata (bn_msg_t *self);
json_t *bn_msg_content (bn_msg_t *self);

//  Header fields, or NULL when absent or not strings. A part that was not
//  parsed yet is only scanned for the field (no JSON tree is built), so a
//  field can be read from a part whose other values jansson would refuse.
const char *bn_msg_type (bn_msg_t *self);
const char *bn_msg_id (bn_msg_t *self);
const char *bn_msg_session (bn_msg_t *self);
const char *bn_msg_date (bn_msg_t *self);
//  parent_header.msg_id and parent_header.session, or NULL.
const char *bn_msg_parent_id (bn_msg_t *self);
const char *bn_msg_parent_session (bn_msg_t *self);

//  Replace a JSON part (takes ownership of value, which must be an object);
//  it is serialised and the message re-signed when sent.
void bn_msg_set_part (bn_msg_t *self, bn_part_t part, json_t *value);
void bn_msg_set_metadata (bn_msg_t *self, json_t *value);
void bn_msg_set_content (bn_msg_t *self, json_t *value);

//  Replace a JSON part with raw bytes (copied) or with a frame sharing
//  frame's bytes (no copy); the caller vouches that they are a JSON
//  object. The message is re-signed when sent. Returns -1 on failure.
int bn_msg_set_part_raw (bn_msg_t *self, bn_part_t part, const void *data,
                         size_t size);
int bn_msg_set_part_frame (bn_msg_t *self, bn_part_t part, zmq_msg_t *frame);

//  Mark a parsed part as changed in place (after editing the object
//  returned by bn_msg_part); it is re-serialised and re-signed on send.
void bn_msg_touch (bn_msg_t *self, bn_part_t part);

//  Give the message a fresh header (new msg_id and date from session,
//  same other keys) as a relay does when it rewrites a request; msg_id
//  may be given, or NULL for a fresh one. Returns -1 on failure.
int bn_msg_set_msg_id (bn_msg_t *self, const char *msg_id);

//  Buffers (frames after the four JSON parts).
size_t bn_msg_nbuffers (bn_msg_t *self);
zmq_msg_t *bn_msg_buffer (bn_msg_t *self, size_t index);
//  Append a copy of the bytes; -1 on failure.
int bn_msg_add_buffer (bn_msg_t *self, const void *data, size_t size);
//  Append a frame sharing the bytes of frame (no copy); -1 on failure.
int bn_msg_add_buffer_msg (bn_msg_t *self, zmq_msg_t *frame);
//  Append a frame that takes ownership of malloc'd data (freed with free).
int bn_msg_add_buffer_owned (bn_msg_t *self, void *data, size_t size);
//  Append a frame over data without copying it: libzmq calls ffn (data,
//  hint) once when every frame sharing it is closed or sent (on failure,
//  before this returns -1).
int bn_msg_add_buffer_data (bn_msg_t *self, void *data, size_t size,
                            zmq_free_fn *ffn, void *hint);
//  Drop all buffers.
void bn_msg_clear_buffers (bn_msg_t *self);

//  Serialise changed parts, sign them with session (a received message
//  that was not changed keeps its signature and session may be NULL),
//  send every frame on a libzmq socket handle and destroy the message.
//  Returns 0, or -1 if the send failed (the message is destroyed anyway).
int bn_msg_send (bn_msg_t **self_p, void *socket, bn_session_t *session);

//  Same, with extra zmq_msg_send flags (ZMQ_DONTWAIT).
int bn_msg_send_flags (bn_msg_t **self_p, void *socket, bn_session_t *session,
                       int flags);

//  As bn_msg_send_flags, for a message with idents, except that when its
//  first ident cannot go (ROUTER_MANDATORY's EHOSTUNREACH, EAGAIN) nothing
//  went and the message is left to the caller (*self_p kept, -1, errno
//  set), who can still answer it.
int bn_msg_send_routed (bn_msg_t **self_p, void *socket, bn_session_t *session,
                        int flags);

//  Counts, by cause, of the replies a scheduler could not give its
//  clients (bn_msg_send_client).
typedef struct {
    uint64_t client_gone; //  the client is no longer connected
    uint64_t client_full; //  its queue is full (controller.client_hwm)
    uint64_t send_failed; //  any other send error
    bool full;            //  dropped for a full queue, none sent since
} bn_msg_undelivered_t;

//  Send a reply to a client on a ROUTER without blocking (bn_msg_send_flags
//  with ZMQ_DONTWAIT). A reply that cannot go is counted in undelivered
//  and logged as "<who>: ...": a client that does not read its replies
//  once, until a reply reaches a client again. Returns 0 when sent, else
//  -1; the message is destroyed either way.
int bn_msg_send_client (bn_msg_t **self_p, void *socket, bn_session_t *session,
                        bn_msg_undelivered_t *undelivered, const char *who);

//  Total bytes on the wire (idents, delimiter, signature, parts, buffers).
size_t bn_msg_size (bn_msg_t *self);

//  Print the message's frames to stderr, for debugging.
void bn_msg_print (bn_msg_t *self);

#endif

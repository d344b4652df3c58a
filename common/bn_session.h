/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_session: a Jupyter session: identity, message ids, HMAC-SHA256
    signing and verification with replay rejection (doc/wire.md 1.2, 1.5).  */
#ifndef BN_SESSION_H_INCLUDED
#define BN_SESSION_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _bn_session_t bn_session_t;

#define BN_SIGNATURE_SIZE 64 //  hex characters of an hmac-sha256 digest
#define BN_DATE_SIZE 32      //  room for an ISO-8601 date and its NUL
#define BN_MSG_ID_SIZE 96    //  room for any message id this session makes

//  Create a session signing with key (its UTF-8 bytes; "" or NULL turns
//  signing off); id is the session id, or NULL for a fresh `8hex-24hex`.
//  Returns NULL if the id is not printable ASCII.
bn_session_t *bn_session_new (const char *key, const char *id);

//  Destroy a session; NULL-safe.
void bn_session_destroy (bn_session_t **self_p);

//  The session id, as it appears in `header.session`.
const char *bn_session_id (bn_session_t *self);

//  The user name, already escaped for a JSON string.
const char *bn_session_username_json (bn_session_t *self);

//  True when messages are signed (the key is not empty).
bool bn_session_signing (bn_session_t *self);

//  Write a fresh message id `<session>_<pid>_<counter>` into buf (at least
//  BN_MSG_ID_SIZE bytes); returns its length.
size_t bn_session_msg_id (bn_session_t *self, char *buf);

//  Write the current UTC time as `YYYY-MM-DDTHH:MM:SS.ffffffZ` into buf
//  (at least BN_DATE_SIZE bytes); returns its length.
size_t bn_session_date (char *buf);

//  Compute the lower-case hex signature of the four JSON parts into hex
//  (BN_SIGNATURE_SIZE + 1 bytes). With signing off, writes "".
void bn_session_sign (bn_session_t *self, const void *const parts[4],
                      const size_t sizes[4], char *hex);

//  Check a received signature over the four JSON parts, in constant time;
//  when record is true a good signature is remembered and a later message
//  with the same signature is refused. Returns 0, BN_ESIGNATURE (bad,
//  missing, malformed) or BN_EREPLAY. With signing off, returns 0.
int bn_session_verify (bn_session_t *self, const void *sig, size_t sig_size,
                       const void *const parts[4], const size_t sizes[4],
                       bool record);

//  Size the replay history for the most digests it keeps (two tables of
//  65,536 digests, about 4 MiB), its pages written now:
//  a receiver that lives long then keeps a flat size, where the tables
//  otherwise double with its traffic until they are full. Returns 0, or
//  BN_ENOMEM (the history is then as it was). With signing off, nothing is
//  kept: returns 0.
int bn_session_reserve_history (bn_session_t *self);

//  Generate a fresh `8hex-24hex` id (as Python's new_id) into buf (34 bytes).
void bn_session_new_id (char *buf);

#endif

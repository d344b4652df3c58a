/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_wire: the wire codec as a peer's frames reach it (bn_msg_recv):
    the search for the delimiter, the split into idents, signature, the
    four JSON parts and buffers, the HMAC check with replay refusal, and
    the header fields read without building a tree. The input is a frame
    list (bn_fuzz.h) sent over an inproc pair.

    Checked: the split is the one doc/wire.md 1.1 describes; a signature is
    accepted exactly when it is the HMAC libsodium computes (a second
    implementation) and only once when recorded; the header fields agree
    with jansson's reading of the header; and a framed message sent on
    unchanged goes out as the very frames that came in, while anything
    banyan sends verifies.  */
#include "bn_error.h"
#include "bn_fuzz.h"
#include "bn_jscan.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_session.h"

#include <sodium.h>

#define S_KEY "fuzz-e05ab558-73805a94e21c7ce24a0654fe"

static void *s_ctx;
static void *s_in_tx, *s_in_rx;   //  the peer's frames into bn_msg_recv
static void *s_out_tx, *s_out_rx; //  what bn_msg_send sends, read raw
static bn_session_t *s_session;   //  signs with S_KEY, never records
static bn_session_t *s_long;      //  a key longer than a SHA-256 block
static bn_session_t *s_unsigned;  //  signing off

static void
s_pair (const char *endpoint, void **tx, void **rx)
{
    *rx = zmq_socket (s_ctx, ZMQ_PAIR);
    *tx = zmq_socket (s_ctx, ZMQ_PAIR);
    int hwm = 0;
    BN_FUZZ_CHECK (*rx && *tx);
    zmq_setsockopt (*rx, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (*tx, ZMQ_SNDHWM, &hwm, sizeof hwm);
    BN_FUZZ_CHECK (zmq_bind (*rx, endpoint) == 0);
    BN_FUZZ_CHECK (zmq_connect (*tx, endpoint) == 0);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
    BN_FUZZ_CHECK (sodium_init () >= 0);
    s_ctx = zmq_ctx_new ();
    BN_FUZZ_CHECK (s_ctx);
    s_pair ("inproc://fuzz-wire-in", &s_in_tx, &s_in_rx);
    s_pair ("inproc://fuzz-wire-out", &s_out_tx, &s_out_rx);
    s_session = bn_session_new (S_KEY, "fuzz-session");
    char long_key[200];
    memset (long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    s_long = bn_session_new (long_key, "fuzz-long");
    s_unsigned = bn_session_new ("", "fuzz-unsigned");
    BN_FUZZ_CHECK (s_session && s_long && s_unsigned);
    return 0;
}

static void
s_send_frames (void *socket, const uint8_t *const *data, const size_t *size,
               size_t count)
{
    for (size_t i = 0; i < count; i++)
        BN_FUZZ_CHECK (zmq_send (socket, data[i], size[i],
                                 i + 1 < count ? ZMQ_SNDMORE : 0) >= 0);
}

//  The hex HMAC-SHA256 of the four parts with key, from libsodium.
static void
s_hmac (const char *key, const uint8_t *const parts[4], const size_t sizes[4],
        char hex[BN_SIGNATURE_SIZE + 1])
{
    crypto_auth_hmacsha256_state state;
    crypto_auth_hmacsha256_init (&state, (const unsigned char *)key,
                                 strlen (key));
    for (int i = 0; i < 4; i++)
        crypto_auth_hmacsha256_update (&state, parts[i], sizes[i]);
    unsigned char digest[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_final (&state, digest);
    sodium_bin2hex (hex, BN_SIGNATURE_SIZE + 1, digest, sizeof digest);
}

//  A string field of a JSON object as jansson reads it, or NULL.
static const char *
s_json_field (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

//  Nesting depth of a JSON value.
static int
s_depth (json_t *value)
{
    int deepest = 0;
    if (json_is_object (value)) {
        const char *key;
        json_t *item;
        json_object_foreach (value, key, item)
        {
            int d = s_depth (item);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    if (json_is_array (value)) {
        size_t index;
        json_t *item;
        json_array_foreach (value, index, item)
        {
            int d = s_depth (item);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    return 0;
}

//  The header fields bn_msg reads without a tree agree with jansson
//  wherever jansson reads the part as an object (the scanner checks less,
//  so it may read a part jansson refuses) and its nesting is within the
//  scanner's limit. Parts with a NUL byte are left out: jansson 2.14 skips
//  one after a number, where Python and the scanner refuse the part.
static void
s_check_fields (bn_msg_t *msg, const uint8_t *header, size_t header_size,
                const uint8_t *parent, size_t parent_size)
{
    if (memchr (header, 0, header_size) || memchr (parent, 0, parent_size))
        return;
    const char *type = bn_msg_type (msg);
    const char *id = bn_msg_id (msg);
    const char *session = bn_msg_session (msg);
    const char *parent_id = bn_msg_parent_id (msg);
    json_t *tree = json_loadb ((const char *)header, header_size, 0, NULL);
    if (json_is_object (tree) && s_depth (tree) <= 512) {
        const char *want[3] = {s_json_field (tree, "msg_type"),
                               s_json_field (tree, "msg_id"),
                               s_json_field (tree, "session")};
        const char *got[3] = {type, id, session};
        for (int i = 0; i < 3; i++) {
            BN_FUZZ_CHECK ((want[i] == NULL) == (got[i] == NULL));
            BN_FUZZ_CHECK (!want[i] || strcmp (want[i], got[i]) == 0);
        }
    }
    json_decref (tree);
    tree = json_loadb ((const char *)parent, parent_size, 0, NULL);
    if (json_is_object (tree) && s_depth (tree) <= 512) {
        const char *want = s_json_field (tree, "msg_id");
        BN_FUZZ_CHECK ((want == NULL) == (parent_id == NULL));
        BN_FUZZ_CHECK (!want || strcmp (want, parent_id) == 0);
    }
    json_decref (tree);
    //  once parsed, the fields come from the tree: the same answers
    if (bn_msg_header (msg)) {
        const char *after = bn_msg_type (msg);
        BN_FUZZ_CHECK ((after == NULL) == (type == NULL));
        BN_FUZZ_CHECK (!after || strcmp (after, type) == 0);
    }
}

//  Read one whole message from s_out_rx as raw frames into a zmsg-like
//  array; returns the number of frames (at most max, the rest dropped).
static size_t
s_recv_raw (zmq_msg_t *frames, size_t max)
{
    size_t count = 0;
    int more = 1;
    while (more) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        BN_FUZZ_CHECK (zmq_msg_recv (&frame, s_out_rx, 0) >= 0);
        more = zmq_msg_more (&frame);
        if (count < max)
            zmq_msg_move (&frames[count++], &frame);
        zmq_msg_close (&frame);
    }
    return count;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    bn_fuzz_frames_t in;
    bn_fuzz_frames (data, size, &in);
    if (in.count == 0)
        return 0;

    //  where doc/wire.md 1.1 splits these frames
    size_t delim = in.count;
    for (size_t i = 0; i < in.count && delim == in.count; i++)
        if (in.size[i] == BN_DELIM_SIZE &&
            memcmp (in.data[i], BN_DELIM, BN_DELIM_SIZE) == 0)
            delim = i;
    bool framed = delim < in.count && in.count - delim - 1 >= 5;

    s_send_frames (s_in_tx, in.data, in.size, in.count);
    bn_msg_t *msg = bn_msg_recv (s_in_rx);
    BN_FUZZ_CHECK (msg);
    BN_FUZZ_CHECK (bn_msg_well_framed (msg) == framed);
    BN_FUZZ_CHECK (bn_msg_nidents (msg) == delim);
    for (size_t i = 0; i < delim; i++)
        BN_FUZZ_CHECK (bn_msg_ident_is (msg, i, in.data[i], in.size[i]));
    if (!framed) {
        BN_FUZZ_CHECK (bn_msg_verify (msg, s_session, false) == BN_EPROTO);
        BN_FUZZ_CHECK (bn_msg_verify (msg, s_unsigned, false) == BN_EPROTO);
    } else {
        const uint8_t *sig = in.data[delim + 1];
        size_t sig_size = in.size[delim + 1];
        const uint8_t *const *parts = &in.data[delim + 2];
        const size_t *sizes = &in.size[delim + 2];
        for (int i = 0; i < 4; i++) {
            size_t got;
            const void *bytes = bn_msg_part_data (msg, (bn_part_t)i, &got);
            BN_FUZZ_CHECK (got == sizes[i] &&
                           memcmp (bytes, parts[i], got) == 0);
        }
        BN_FUZZ_CHECK (bn_msg_nbuffers (msg) == in.count - delim - 6);
        size_t total = BN_DELIM_SIZE;
        for (size_t i = 0; i < in.count; i++)
            total += i == delim ? 0 : in.size[i];
        BN_FUZZ_CHECK (bn_msg_size (msg) == total);

        //  the signature: accepted exactly when it is the HMAC, recorded
        //  once; with signing off anything is accepted
        char hex[BN_SIGNATURE_SIZE + 1];
        s_hmac (S_KEY, parts, sizes, hex);
        bool good = sig_size == BN_SIGNATURE_SIZE &&
                    memcmp (sig, hex, BN_SIGNATURE_SIZE) == 0;
        int rc = bn_msg_verify (msg, s_session, false);
        BN_FUZZ_CHECK (rc == (good ? 0 : BN_ESIGNATURE));
        BN_FUZZ_CHECK (bn_msg_verify (msg, s_unsigned, true) == 0);
        bn_session_t *fresh = bn_session_new (S_KEY, NULL);
        BN_FUZZ_CHECK (fresh);
        BN_FUZZ_CHECK (bn_msg_verify (msg, fresh, true) == rc);
        BN_FUZZ_CHECK (bn_msg_verify (msg, fresh, true) ==
                       (good ? BN_EREPLAY : BN_ESIGNATURE));
        bn_session_destroy (&fresh);

        //  bn_session signs as libsodium does, with a short and a long key
        const void *vparts[4] = {parts[0], parts[1], parts[2], parts[3]};
        char mine[BN_SIGNATURE_SIZE + 1];
        bn_session_sign (s_session, vparts, sizes, mine);
        BN_FUZZ_CHECK (strcmp (mine, hex) == 0);
        char long_key[200];
        memset (long_key, 'k', sizeof long_key - 1);
        long_key[sizeof long_key - 1] = 0;
        s_hmac (long_key, parts, sizes, hex);
        bn_session_sign (s_long, vparts, sizes, mine);
        BN_FUZZ_CHECK (strcmp (mine, hex) == 0);

        s_check_fields (msg, parts[0], sizes[0], parts[1], sizes[1]);

        //  a reply's parent is the request's header as it came
        bn_msg_t *reply = bn_msg_new_reply (s_session, msg, "fuzz_reply");
        BN_FUZZ_CHECK (reply);
        size_t got;
        const void *bytes = bn_msg_part_data (reply, BN_PART_PARENT, &got);
        if (sizes[0])
            BN_FUZZ_CHECK (got == sizes[0] &&
                           memcmp (bytes, parts[0], got) == 0);
        else
            BN_FUZZ_CHECK (got == 2 && memcmp (bytes, "{}", 2) == 0);
        BN_FUZZ_CHECK (bn_msg_nidents (reply) == delim);
        bn_msg_destroy (&reply);
    }

    //  sent on unchanged (a copy, as a relay sends): a framed message goes
    //  out as the frames that came in, keeping its signature
    bn_msg_t *copy = bn_msg_dup (msg);
    BN_FUZZ_CHECK (copy);
    BN_FUZZ_CHECK (bn_msg_send (&copy, s_out_tx, s_session) == 0);
    zmq_msg_t out[BN_FUZZ_MAX_FRAMES + 8];
    for (size_t i = 0; i < BN_FUZZ_MAX_FRAMES + 8; i++)
        zmq_msg_init (&out[i]);
    size_t nout = s_recv_raw (out, BN_FUZZ_MAX_FRAMES + 8);
    if (framed) {
        BN_FUZZ_CHECK (nout == in.count);
        for (size_t i = 0; i < nout; i++)
            BN_FUZZ_CHECK (
                zmq_msg_size (&out[i]) == in.size[i] &&
                memcmp (zmq_msg_data (&out[i]), in.data[i], in.size[i]) == 0);
    }
    for (size_t i = 0; i < BN_FUZZ_MAX_FRAMES + 8; i++)
        zmq_msg_close (&out[i]);

    //  whatever banyan sends after changing a message verifies: the
    //  metadata replaced, the message re-signed
    bn_msg_set_metadata (msg, json_pack ("{s:s}", "fuzz", "changed"));
    BN_FUZZ_CHECK (bn_msg_send (&msg, s_out_tx, s_session) == 0);
    for (size_t i = 0; i < BN_FUZZ_MAX_FRAMES + 8; i++)
        zmq_msg_init (&out[i]);
    nout = s_recv_raw (out, BN_FUZZ_MAX_FRAMES + 8);
    BN_FUZZ_CHECK (nout >= 6);
    const uint8_t *data_out[BN_FUZZ_MAX_FRAMES + 8];
    size_t size_out[BN_FUZZ_MAX_FRAMES + 8];
    for (size_t i = 0; i < nout; i++) {
        data_out[i] = zmq_msg_data (&out[i]);
        size_out[i] = zmq_msg_size (&out[i]);
    }
    s_send_frames (s_in_tx, data_out, size_out, nout);
    bn_msg_t *back = bn_msg_recv (s_in_rx);
    BN_FUZZ_CHECK (back && bn_msg_well_framed (back));
    BN_FUZZ_CHECK (bn_msg_verify (back, s_session, false) == 0);
    BN_FUZZ_CHECK (bn_msg_nidents (back) == delim);
    bn_msg_destroy (&back);
    for (size_t i = 0; i < BN_FUZZ_MAX_FRAMES + 8; i++)
        zmq_msg_close (&out[i]);
    return 0;
}

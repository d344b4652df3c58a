/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_session: a Jupyter session: identity, message ids, HMAC-SHA256
    signing and verification with replay rejection.

    HMAC-SHA256 is computed with libcrypto's SHA-256, which uses the CPU's
    SHA extensions (SHA-NI) where it has them; libsodium's is portable C
    and took 4-5 times as long per message here (1.5 us against 0.33 us
    for a 470-byte message). The HMAC is built from two SHA256_CTX states
    precomputed from the key (inner and outer pad), copied by value per
    message: the EVP interface would allocate twice per message to copy a
    context, and this is the hottest function of every relay.  */
#include "bn_session.h"
#include "bn_error.h"
#include "bn_text.h"

//  SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP,
//  which cannot copy a context without allocating (see above).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <assert.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

//  Replay history: two generations of open-addressed digest sets. A digest
//  is looked up in both; when the current one holds BN_HISTORY/2 digests it
//  becomes the previous one and the old previous one is forgotten. So
//  between BN_HISTORY/2 and BN_HISTORY of the most recent digests are kept,
//  as Python's 65536-entry history with culling does. Tables start small and
//  grow, so that a process with many logical engines stays small; a
//  long-lived receiver reserves them whole (bn_session_reserve_history).
#define BN_HISTORY 65536
#define BN_DIGEST 32

typedef struct {
    uint8_t *digests; //  slots * BN_DIGEST bytes
    uint8_t *used;    //  slots flags
    size_t slots;     //  capacity, a power of two
    size_t count;     //  entries in this generation
} s_generation_t;

struct _bn_session_t {
    char id[64];           //  session id
    char *username_json;   //  escaped user name
    bool signing;          //  key is not empty
    SHA256_CTX inner;      //  after the key's inner pad
    SHA256_CTX outer;      //  after the key's outer pad
    uint64_t counter;      //  next message id counter
    int pid;               //  process id in message ids
    s_generation_t gen[2]; //  replay history
    int current;           //  index of the current generation
};

static void
s_generation_clear (s_generation_t *gen)
{
    if (gen->used)
        memset (gen->used, 0, gen->slots);
    gen->count = 0;
}

static bool
s_generation_has (s_generation_t *gen, const uint8_t *digest)
{
    if (!gen->used)
        return false;
    uint64_t hash;
    memcpy (&hash, digest, sizeof hash);
    for (size_t i = 0; i < gen->slots; i++) {
        size_t slot = (hash + i) & (gen->slots - 1);
        if (!gen->used[slot])
            return false;
        if (memcmp (gen->digests + slot * BN_DIGEST, digest, BN_DIGEST) == 0)
            return true;
    }
    return false;
}

static void
s_generation_insert (s_generation_t *gen, const uint8_t *digest)
{
    uint64_t hash;
    memcpy (&hash, digest, sizeof hash);
    for (size_t i = 0; i < gen->slots; i++) {
        size_t slot = (hash + i) & (gen->slots - 1);
        if (!gen->used[slot]) {
            gen->used[slot] = 1;
            memcpy (gen->digests + slot * BN_DIGEST, digest, BN_DIGEST);
            gen->count++;
            return;
        }
    }
}

//  Move the generation to a table of slots slots, its pages written now.
//  Returns 0, or -1 if out of memory (the table is left as it was).
static int
s_generation_resize (s_generation_t *gen, size_t slots)
{
    s_generation_t bigger = {malloc (slots * BN_DIGEST), malloc (slots), slots,
                             0};
    if (!bigger.digests || !bigger.used) {
        free (bigger.digests);
        free (bigger.used);
        return -1;
    }
    memset (bigger.digests, 0, slots * BN_DIGEST);
    memset (bigger.used, 0, slots);
    for (size_t slot = 0; slot < gen->slots; slot++)
        if (gen->used[slot])
            s_generation_insert (&bigger, gen->digests + slot * BN_DIGEST);
    free (gen->digests);
    free (gen->used);
    *gen = bigger;
    return 0;
}

//  Add a digest, growing the table to keep it at most half full; on
//  allocation failure the digest is not remembered.
static void
s_generation_add (s_generation_t *gen, const uint8_t *digest)
{
    if (gen->count * 2 >= gen->slots &&
        s_generation_resize (gen, gen->slots ? gen->slots * 2 : 64) != 0)
        return;
    s_generation_insert (gen, digest);
}

int
bn_session_reserve_history (bn_session_t *self)
{
    assert (self);
    if (!self->signing)
        return 0;
    //  A generation holds fewer than BN_HISTORY/2 digests when one is
    //  added, so BN_HISTORY slots keep it at most half full
    for (int i = 0; i < 2; i++)
        if (self->gen[i].slots < BN_HISTORY &&
            s_generation_resize (&self->gen[i], BN_HISTORY) != 0)
            return BN_ENOMEM;
    return 0;
}

void
bn_session_new_id (char *buf)
{
    uint8_t raw[16];
    randombytes_buf (raw, sizeof raw);
    char hex[33];
    sodium_bin2hex (hex, sizeof hex, raw, sizeof raw);
    memcpy (buf, hex, 8);
    buf[8] = '-';
    memcpy (buf + 9, hex + 8, 24);
    buf[33] = 0;
}

//  Precompute the HMAC states of key (RFC 2104): a key longer than the
//  SHA-256 block is hashed first.
static void
s_hmac_init (bn_session_t *self, const uint8_t *key, size_t size)
{
    uint8_t block[SHA256_CBLOCK] = {0};
    if (size > sizeof block)
        SHA256 (key, size, block);
    else
        memcpy (block, key, size);
    uint8_t pad[SHA256_CBLOCK];
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = block[i] ^ 0x36;
    SHA256_Init (&self->inner);
    SHA256_Update (&self->inner, pad, sizeof pad);
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = block[i] ^ 0x5c;
    SHA256_Init (&self->outer);
    SHA256_Update (&self->outer, pad, sizeof pad);
    OPENSSL_cleanse (block, sizeof block);
    OPENSSL_cleanse (pad, sizeof pad);
}

bn_session_t *
bn_session_new (const char *key, const char *id)
{
    if (sodium_init () < 0)
        return NULL;
    if (id) {
        size_t len = strlen (id);
        if (len == 0 || len >= 64)
            return NULL;
        for (size_t i = 0; i < len; i++)
            if (id[i] < 0x20 || id[i] > 0x7e || id[i] == '"' || id[i] == '\\')
                return NULL;
    }
    bn_session_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    if (id)
        snprintf (self->id, sizeof self->id, "%s", id);
    else
        bn_session_new_id (self->id);

    const char *user = getenv ("USER");
    if (!user || !*user)
        user = "username";
    json_t *name = json_string (user);
    if (!name)
        name = json_string ("username");
    char *quoted = json_dumps (name, JSON_ENCODE_ANY);
    json_decref (name);
    if (quoted) {
        //  strip the quotes jansson adds
        size_t len = strlen (quoted);
        memmove (quoted, quoted + 1, len - 2);
        quoted[len - 2] = 0;
    }
    self->username_json = quoted;
    self->signing = key && *key;
    if (self->signing)
        s_hmac_init (self, (const uint8_t *)key, strlen (key));
    self->pid = (int)getpid ();
    if (!self->username_json) {
        bn_session_destroy (&self);
        return NULL;
    }
    return self;
}

void
bn_session_destroy (bn_session_t **self_p)
{
    assert (self_p);
    bn_session_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < 2; i++) {
        free (self->gen[i].digests);
        free (self->gen[i].used);
    }
    free (self->username_json);
    OPENSSL_cleanse (&self->inner, sizeof self->inner);
    OPENSSL_cleanse (&self->outer, sizeof self->outer);
    free (self);
    *self_p = NULL;
}

const char *
bn_session_id (bn_session_t *self)
{
    assert (self);
    return self->id;
}

const char *
bn_session_username_json (bn_session_t *self)
{
    assert (self);
    return self->username_json;
}

bool
bn_session_signing (bn_session_t *self)
{
    assert (self);
    return self->signing;
}

size_t
bn_session_msg_id (bn_session_t *self, char *buf)
{
    assert (self);
    //  "<session id>_<pid>_<counter>"
    bn_text_t id;
    bn_text_init (&id, buf, BN_MSG_ID_SIZE);
    bn_text_str (&id, self->id);
    bn_text_add (&id, "_", 1);
    bn_text_uint (&id, (unsigned long long)self->pid);
    bn_text_add (&id, "_", 1);
    bn_text_uint (&id, (unsigned long long)self->counter++);
    long len = bn_text_end (&id);
    return len < 0 ? 0 : (size_t)len;
}

size_t
bn_session_date (char *buf)
{
    //  Every message has a date: the text up to the seconds is kept per
    //  thread and rebuilt once a second, the microseconds written by hand.
    static _Thread_local time_t last_sec = -1;
    static _Thread_local char prefix[32];
    static _Thread_local size_t prefix_len;
    struct timeval tv;
    gettimeofday (&tv, NULL);
    if (tv.tv_sec != last_sec) {
        struct tm tm;
        gmtime_r (&tv.tv_sec, &tm);
        int len =
            snprintf (prefix, sizeof prefix, "%04d-%02d-%02dT%02d:%02d:%02d.",
                      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                      tm.tm_min, tm.tm_sec);
        if (len < 0 || (size_t)len + 8 > BN_DATE_SIZE)
            return (size_t)snprintf (buf, BN_DATE_SIZE, "%.*s%06ldZ",
                                     (int)(BN_DATE_SIZE - 9), prefix,
                                     (long)tv.tv_usec);
        prefix_len = (size_t)len;
        last_sec = tv.tv_sec;
    }
    memcpy (buf, prefix, prefix_len);
    long usec = (long)tv.tv_usec;
    for (int i = 5; i >= 0; i--) {
        buf[prefix_len + (size_t)i] = (char)('0' + usec % 10);
        usec /= 10;
    }
    buf[prefix_len + 6] = 'Z';
    buf[prefix_len + 7] = 0;
    return prefix_len + 7;
}

static void
s_digest (bn_session_t *self, const void *const parts[4], const size_t sizes[4],
          uint8_t *digest)
{
    SHA256_CTX state = self->inner;
    for (int i = 0; i < 4; i++)
        SHA256_Update (&state, parts[i], sizes[i]);
    uint8_t inner[BN_DIGEST];
    SHA256_Final (inner, &state);
    state = self->outer;
    SHA256_Update (&state, inner, sizeof inner);
    SHA256_Final (digest, &state);
}

void
bn_session_sign (bn_session_t *self, const void *const parts[4],
                 const size_t sizes[4], char *hex)
{
    assert (self);
    if (!self->signing) {
        hex[0] = 0;
        return;
    }
    uint8_t digest[BN_DIGEST];
    s_digest (self, parts, sizes, digest);
    sodium_bin2hex (hex, BN_SIGNATURE_SIZE + 1, digest, sizeof digest);
}

int
bn_session_verify (bn_session_t *self, const void *sig, size_t sig_size,
                   const void *const parts[4], const size_t sizes[4],
                   bool record)
{
    assert (self);
    if (!self->signing)
        return 0;
    if (sig_size != BN_SIGNATURE_SIZE)
        return BN_ESIGNATURE;
    uint8_t digest[BN_DIGEST];
    s_digest (self, parts, sizes, digest);
    char hex[BN_SIGNATURE_SIZE + 1];
    sodium_bin2hex (hex, sizeof hex, digest, sizeof digest);
    if (sodium_memcmp (hex, sig, BN_SIGNATURE_SIZE) != 0)
        return BN_ESIGNATURE;
    if (!record)
        return 0;
    if (s_generation_has (&self->gen[0], digest) ||
        s_generation_has (&self->gen[1], digest))
        return BN_EREPLAY;
    s_generation_t *gen = &self->gen[self->current];
    if (gen->count >= BN_HISTORY / 2) {
        self->current ^= 1;
        gen = &self->gen[self->current];
        s_generation_clear (gen);
    }
    s_generation_add (gen, digest);
    return 0;
}

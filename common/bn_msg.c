/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_msg: one Jupyter wire message as libzmq frames, JSON parsed on
    demand, buffers moved without copying.  */
#include "bn_msg.h"
#include "bn_error.h"
#include "bn_jdump.h"
#include "bn_jscan.h"
#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_text.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BN_INLINE_IDENTS 4
#define BN_FIELD_MAX 256 //  header strings read without jansson

//  Header fields a relay or a client reads, scanned from the raw part on
//  first use.
typedef enum {
    S_FIELD_MSG_ID,
    S_FIELD_MSG_TYPE,
    S_FIELD_SESSION,
    S_FIELD_DATE,
    S_FIELD_PARENT_ID,
    S_FIELD_PARENT_SESSION,
    S_FIELDS
} s_field_id_t;

//  The values found share one buffer, each after the last, so that the
//  whole stays a small allocation (malloc serves one of 1 kB or more from
//  its large bins, after merging every free chunk of its fast bins): a
//  value that no longer fits is read by jansson, as a long one is.
#define S_FIELDS_TEXT 512

typedef struct {
    bool tried[S_FIELDS];     //  a scan was attempted
    int length[S_FIELDS];     //  bn_jscan_string's answer
    short offset[S_FIELDS];   //  where the value found is in text
    short used;               //  bytes of text taken
    char text[S_FIELDS_TEXT]; //  the values found, each with its NUL
} s_fields_t;

//  A header's text: its values between these pieces, in this order
//  (msg_id, msg_type, username, session, date).
static const char *const s_header_pieces[] = {
    "{\"msg_id\":\"",     "\",\"msg_type\":\"",
    "\",\"username\":\"", "\",\"session\":\"",
    "\",\"date\":\"",     "\",\"version\":\"" BN_PROTOCOL_VERSION "\"}"};

struct _bn_msg_t {
    zmq_msg_t *idents; //  routing frames (inline or heap)
    size_t nidents;    //  idents in use
    size_t idents_cap; //  idents allocated
    zmq_msg_t idents_inline[BN_INLINE_IDENTS]; //  storage for few idents
    zmq_msg_t sig;                             //  signature frame
    zmq_msg_t parts[4]; //  header, parent, metadata, content
    json_t *json[4];    //  parsed parts, or NULL
    bool tried[4];      //  a parse was attempted
    bool dirty[4];      //  json[i] differs from parts[i]
    bool framed;        //  delimiter and five frames were present
    bool signed_ok;     //  sig matches parts as they are now
    zmq_msg_t *buffers; //  buffer frames
    size_t nbuffers;    //  buffers in use
    size_t buffers_cap; //  buffers allocated
    s_fields_t *fields; //  scanned header fields, or NULL
};

static bn_msg_t *
s_msg_alloc (void)
{
    bn_msg_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->idents = self->idents_inline;
    self->idents_cap = BN_INLINE_IDENTS;
    zmq_msg_init (&self->sig);
    for (int i = 0; i < 4; i++)
        zmq_msg_init (&self->parts[i]);
    return self;
}

static int
s_reserve (zmq_msg_t **array, size_t *cap, size_t need, bool is_inline)
{
    if (need <= *cap)
        return 0;
    size_t newcap = *cap ? *cap * 2 : 4;
    while (newcap < need)
        newcap *= 2;
    zmq_msg_t *bigger;
    if (is_inline) {
        bigger = malloc (newcap * sizeof *bigger);
        if (bigger)
            memcpy (bigger, *array, *cap * sizeof *bigger);
    } else
        bigger = realloc (*array, newcap * sizeof *bigger);
    if (!bigger)
        return -1;
    *array = bigger;
    *cap = newcap;
    return 0;
}

static int
s_ident_reserve (bn_msg_t *self, size_t need)
{
    return s_reserve (&self->idents, &self->idents_cap, need,
                      self->idents == self->idents_inline);
}

static int
s_buffer_reserve (bn_msg_t *self, size_t need)
{
    return s_reserve (&self->buffers, &self->buffers_cap, need, false);
}

static int
s_set_bytes (zmq_msg_t *frame, const void *data, size_t size)
{
    zmq_msg_close (frame);
    if (zmq_msg_init_size (frame, size) != 0) {
        zmq_msg_init (frame);
        return -1;
    }
    if (size)
        memcpy (zmq_msg_data (frame), data, size);
    return 0;
}

static void
s_free_data (void *data, void *hint)
{
    free (data);
}

bn_msg_t *
bn_msg_recv_flags (void *socket, int flags)
{
    assert (socket);
    bn_msg_t *self = s_msg_alloc ();
    if (!self)
        return NULL;
    //  Frames after the delimiter: 0 = sig, 1..4 = parts, 5.. = buffers
    long after = -1;
    bool more = true;
    bool first = true;
    while (more) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, socket, first ? flags : 0) < 0) {
            zmq_msg_close (&frame);
            if (first) {
                bn_msg_destroy (&self);
                return NULL;
            }
            if (errno == EINTR)
                continue;
            bn_msg_destroy (&self);
            return NULL;
        }
        first = false;
        more = zmq_msg_more (&frame);
        zmq_msg_t *slot = NULL;
        if (after < 0) {
            if (zmq_msg_size (&frame) == BN_DELIM_SIZE &&
                memcmp (zmq_msg_data (&frame), BN_DELIM, BN_DELIM_SIZE) == 0) {
                zmq_msg_close (&frame);
                after = 0;
                continue;
            }
            if (s_ident_reserve (self, self->nidents + 1) == 0) {
                slot = &self->idents[self->nidents++];
                zmq_msg_init (slot);
            }
        } else if (after == 0)
            slot = &self->sig;
        else if (after <= 4)
            slot = &self->parts[after - 1];
        else if (s_buffer_reserve (self, self->nbuffers + 1) == 0) {
            slot = &self->buffers[self->nbuffers++];
            zmq_msg_init (slot);
        }
        if (after >= 0)
            after++;
        if (slot)
            zmq_msg_move (slot, &frame);
        zmq_msg_close (&frame);
    }
    self->framed = after >= 5;
    self->signed_ok = self->framed;
    return self;
}

bn_msg_t *
bn_msg_recv (void *socket)
{
    return bn_msg_recv_flags (socket, 0);
}

//  True if text goes into a JSON string as it is (no quote, backslash,
//  control or non-ASCII character).
static bool
s_json_plain (const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c < 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
            return false;
    return true;
}

//  text escaped for the inside of a JSON string (malloc'd), or NULL if it
//  is not UTF-8.
static char *
s_json_escape (const char *text)
{
    json_t *string = json_string (text);
    char *quoted = string ? json_dumps (string, JSON_ENCODE_ANY) : NULL;
    json_decref (string);
    if (!quoted)
        return NULL;
    size_t len = strlen (quoted);
    memmove (quoted, quoted + 1, len - 2);
    quoted[len - 2] = 0;
    return quoted;
}

//  Build a fresh header frame of msg_type (and msg_id if given).
static int
s_build_header (bn_msg_t *self, bn_session_t *session, const char *msg_type,
                const char *msg_id)
{
    char id[BN_MSG_ID_SIZE];
    if (!msg_id) {
        bn_session_msg_id (session, id);
        msg_id = id;
    }
    //  a reply type derived from a peer's msg_type may need escaping
    char *escaped = NULL;
    if (!s_json_plain (msg_type)) {
        escaped = s_json_escape (msg_type);
        if (!escaped)
            return -1;
        msg_type = escaped;
    }
    char date[BN_DATE_SIZE];
    bn_session_date (date);
    const char *values[5] = {msg_id, msg_type,
                             bn_session_username_json (session),
                             bn_session_id (session), date};
    size_t need = 1;
    for (int i = 0; i < 6; i++)
        need += strlen (s_header_pieces[i]) + (i < 5 ? strlen (values[i]) : 0);
    char stack[512];
    char *text = need <= sizeof stack ? stack : malloc (need);
    long len = -1;
    if (text) {
        bn_text_t header;
        bn_text_init (&header, text, need);
        for (int i = 0; i < 6; i++) {
            bn_text_str (&header, s_header_pieces[i]);
            if (i < 5)
                bn_text_str (&header, values[i]);
        }
        len = bn_text_end (&header);
    }
    int rc = len >= 0
                 ? s_set_bytes (&self->parts[BN_PART_HEADER], text, (size_t)len)
                 : -1;
    if (text != stack)
        free (text);
    free (escaped);
    if (rc != 0)
        return -1;
    if (self->json[BN_PART_HEADER]) {
        json_decref (self->json[BN_PART_HEADER]);
        self->json[BN_PART_HEADER] = NULL;
    }
    self->tried[BN_PART_HEADER] = false;
    self->dirty[BN_PART_HEADER] = false;
    free (self->fields);
    self->fields = NULL;
    self->signed_ok = false;
    return 0;
}

bn_msg_t *
bn_msg_new (bn_session_t *session, const char *msg_type)
{
    assert (session);
    assert (msg_type);
    bn_msg_t *self = s_msg_alloc ();
    if (!self)
        return NULL;
    self->framed = true;
    if (s_build_header (self, session, msg_type, NULL) != 0) {
        bn_msg_destroy (&self);
        return NULL;
    }
    for (int i = 1; i < 4; i++)
        if (s_set_bytes (&self->parts[i], "{}", 2) != 0) {
            bn_msg_destroy (&self);
            return NULL;
        }
    return self;
}

//  Serialise parts changed since they were parsed.
static int
s_flush (bn_msg_t *self)
{
    for (int i = 0; i < 4; i++) {
        if (!self->dirty[i])
            continue;
        size_t size;
        char *text = bn_jdump (self->json[i], &size);
        if (!text)
            return -1;
        zmq_msg_close (&self->parts[i]);
        if (zmq_msg_init_data (&self->parts[i], text, size, s_free_data,
                               NULL) != 0) {
            free (text);
            zmq_msg_init (&self->parts[i]);
            return -1;
        }
        self->dirty[i] = false;
        self->signed_ok = false;
        //  fields scanned from the text before it changed
        if (i == BN_PART_HEADER || i == BN_PART_PARENT) {
            free (self->fields);
            self->fields = NULL;
        }
    }
    return 0;
}

bn_msg_t *
bn_msg_new_reply (bn_session_t *session, bn_msg_t *request,
                  const char *msg_type)
{
    assert (request);
    bn_msg_t *self = bn_msg_new (session, msg_type);
    if (!self)
        return NULL;
    if (s_flush (request) != 0 ||
        zmq_msg_copy (&self->parts[BN_PART_PARENT],
                      &request->parts[BN_PART_HEADER]) != 0 ||
        bn_msg_copy_idents (self, request) != 0) {
        bn_msg_destroy (&self);
        return NULL;
    }
    free (self->fields);
    self->fields = NULL;
    //  a request with no header at all still gets a JSON object as parent
    if (zmq_msg_size (&self->parts[BN_PART_PARENT]) == 0)
        s_set_bytes (&self->parts[BN_PART_PARENT], "{}", 2);
    return self;
}

bn_msg_t *
bn_msg_new_parts (const void *const data[4], const size_t size[4])
{
    bn_msg_t *self = s_msg_alloc ();
    if (!self)
        return NULL;
    self->framed = true;
    for (int i = 0; i < 4; i++)
        if (s_set_bytes (&self->parts[i], data[i] ? data[i] : "{}",
                         data[i] ? size[i] : 2) != 0) {
            bn_msg_destroy (&self);
            return NULL;
        }
    return self;
}

void
bn_msg_destroy (bn_msg_t **self_p)
{
    assert (self_p);
    bn_msg_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->nidents; i++)
        zmq_msg_close (&self->idents[i]);
    if (self->idents != self->idents_inline)
        free (self->idents);
    zmq_msg_close (&self->sig);
    for (int i = 0; i < 4; i++) {
        zmq_msg_close (&self->parts[i]);
        if (self->json[i])
            json_decref (self->json[i]);
    }
    for (size_t i = 0; i < self->nbuffers; i++)
        zmq_msg_close (&self->buffers[i]);
    free (self->buffers);
    free (self->fields);
    free (self);
    *self_p = NULL;
}

bn_msg_t *
bn_msg_dup (bn_msg_t *self)
{
    assert (self);
    if (s_flush (self) != 0)
        return NULL;
    bn_msg_t *copy = s_msg_alloc ();
    if (!copy)
        return NULL;
    copy->framed = self->framed;
    copy->signed_ok = self->signed_ok;
    //  the header fields read so far, which the copy's reader reads again
    if (self->fields && (copy->fields = malloc (sizeof *copy->fields)))
        memcpy (copy->fields, self->fields, sizeof *copy->fields);
    int rc = bn_msg_copy_idents (copy, self);
    rc |= zmq_msg_copy (&copy->sig, &self->sig);
    for (int i = 0; i < 4; i++)
        rc |= zmq_msg_copy (&copy->parts[i], &self->parts[i]);
    if (rc == 0 && s_buffer_reserve (copy, self->nbuffers) == 0)
        for (size_t i = 0; i < self->nbuffers; i++) {
            zmq_msg_init (&copy->buffers[i]);
            copy->nbuffers++;
            rc |= zmq_msg_copy (&copy->buffers[i], &self->buffers[i]);
        }
    else
        rc = -1;
    if (rc != 0)
        bn_msg_destroy (&copy);
    return copy;
}

bool
bn_msg_well_framed (bn_msg_t *self)
{
    assert (self);
    return self->framed;
}

int
bn_msg_verify (bn_msg_t *self, bn_session_t *session, bool record)
{
    assert (self);
    assert (session);
    if (!self->framed)
        return BN_EPROTO;
    const void *parts[4];
    size_t sizes[4];
    for (int i = 0; i < 4; i++) {
        parts[i] = zmq_msg_data (&self->parts[i]);
        sizes[i] = zmq_msg_size (&self->parts[i]);
    }
    return bn_session_verify (session, zmq_msg_data (&self->sig),
                              zmq_msg_size (&self->sig), parts, sizes, record);
}

int
bn_msg_check (bn_msg_t *self, bn_session_t *session, int checks,
              bn_msg_drops_t *drops, const char *who, ...)
{
    assert (self);
    assert (drops);
    int rc = 0;
    const char *why = NULL;
    if (checks & (BN_MSG_CHECK_SIGNATURE | BN_MSG_CHECK_REPLAY))
        rc = bn_msg_verify (self, session, checks & BN_MSG_CHECK_REPLAY);
    else if (!self->framed)
        rc = BN_EPROTO;
    if (rc == BN_EPROTO)
        drops->bad_frame++;
    else if (rc == BN_EREPLAY)
        drops->replayed++;
    else if (rc != 0)
        drops->bad_signature++;
    else if ((checks & BN_MSG_CHECK_HEADER) &&
             (!bn_msg_id (self) || !bn_msg_type (self))) {
        drops->bad_header++;
        rc = BN_EPROTO;
        why = "no msg_id or msg_type in its header";
    }
    if (rc != 0) {
        char name[64];
        va_list args;
        va_start (args, who);
        vsnprintf (name, sizeof name, who, args);
        va_end (args);
        bn_log_warn ("%s: dropped a message: %s", name,
                     why ? why : bn_strerror (rc));
    }
    return rc;
}

size_t
bn_msg_nidents (bn_msg_t *self)
{
    assert (self);
    return self->nidents;
}

const void *
bn_msg_ident (bn_msg_t *self, size_t index, size_t *size)
{
    assert (self);
    if (index >= self->nidents) {
        if (size)
            *size = 0;
        return NULL;
    }
    if (size)
        *size = zmq_msg_size (&self->idents[index]);
    return zmq_msg_data (&self->idents[index]);
}

bool
bn_msg_peer_address (bn_msg_t *self, char *text, size_t size)
{
    assert (self);
    assert (text && size);
    //  Each frame received keeps its connection's properties
    zmq_msg_t *frames[] = {self->nidents ? &self->idents[0] : NULL, &self->sig,
                           &self->parts[BN_PART_HEADER]};
    for (size_t index = 0; index < sizeof frames / sizeof frames[0]; index++) {
        const char *address =
            frames[index] ? zmq_msg_gets (frames[index], "Peer-Address") : NULL;
        if (address && *address) {
            snprintf (text, size, "%s", address);
            return true;
        }
    }
    *text = 0;
    return false;
}

bool
bn_msg_ident_is (bn_msg_t *self, size_t index, const void *data, size_t size)
{
    size_t have;
    const void *ident = bn_msg_ident (self, index, &have);
    return ident && have == size && memcmp (ident, data, size) == 0;
}

bool
bn_msg_ident_prefix (bn_msg_t *self, size_t index, const char *prefix)
{
    size_t have;
    const void *ident = bn_msg_ident (self, index, &have);
    size_t size = strlen (prefix);
    return ident && have >= size && memcmp (ident, prefix, size) == 0;
}

char *
bn_msg_ident_strdup (bn_msg_t *self, size_t index)
{
    size_t size;
    const void *ident = bn_msg_ident (self, index, &size);
    if (!ident)
        return NULL;
    char *text = malloc (size + 1);
    if (text) {
        memcpy (text, ident, size);
        text[size] = 0;
    }
    return text;
}

int
bn_msg_push_ident (bn_msg_t *self, const void *data, size_t size)
{
    assert (self);
    if (s_ident_reserve (self, self->nidents + 1) != 0)
        return -1;
    memmove (&self->idents[1], &self->idents[0],
             self->nidents * sizeof (zmq_msg_t));
    zmq_msg_init (&self->idents[0]);
    self->nidents++;
    if (s_set_bytes (&self->idents[0], data, size) != 0) {
        bn_msg_pop_ident (self);
        return -1;
    }
    return 0;
}

int
bn_msg_append_ident (bn_msg_t *self, const void *data, size_t size)
{
    assert (self);
    if (s_ident_reserve (self, self->nidents + 1) != 0)
        return -1;
    zmq_msg_t *slot = &self->idents[self->nidents];
    zmq_msg_init (slot);
    if (s_set_bytes (slot, data, size) != 0)
        return -1;
    self->nidents++;
    return 0;
}

void
bn_msg_pop_ident (bn_msg_t *self)
{
    assert (self);
    if (self->nidents == 0)
        return;
    zmq_msg_close (&self->idents[0]);
    self->nidents--;
    memmove (&self->idents[0], &self->idents[1],
             self->nidents * sizeof (zmq_msg_t));
}

void
bn_msg_swap_idents (bn_msg_t *self)
{
    assert (self);
    if (self->nidents < 2)
        return;
    zmq_msg_t first;
    memcpy (&first, &self->idents[0], sizeof first);
    memcpy (&self->idents[0], &self->idents[1], sizeof first);
    memcpy (&self->idents[1], &first, sizeof first);
}

void
bn_msg_clear_idents (bn_msg_t *self)
{
    assert (self);
    for (size_t i = 0; i < self->nidents; i++)
        zmq_msg_close (&self->idents[i]);
    self->nidents = 0;
}

int
bn_msg_copy_idents (bn_msg_t *self, bn_msg_t *other)
{
    assert (self);
    assert (other);
    bn_msg_clear_idents (self);
    if (s_ident_reserve (self, other->nidents) != 0)
        return -1;
    for (size_t i = 0; i < other->nidents; i++) {
        zmq_msg_init (&self->idents[i]);
        self->nidents++;
        if (zmq_msg_copy (&self->idents[i], &other->idents[i]) != 0)
            return -1;
    }
    return 0;
}

const void *
bn_msg_part_data (bn_msg_t *self, bn_part_t part, size_t *size)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    if (self->dirty[part])
        s_flush (self);
    *size = zmq_msg_size (&self->parts[part]);
    return zmq_msg_data (&self->parts[part]);
}

json_t *
bn_msg_part (bn_msg_t *self, bn_part_t part)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    if (!self->tried[part]) {
        self->tried[part] = true;
        size_t size = zmq_msg_size (&self->parts[part]);
        if (size > 0) {
            json_error_t error;
            json_t *value =
                json_loadb (zmq_msg_data (&self->parts[part]), size, 0, &error);
            if (value && !json_is_object (value)) {
                json_decref (value);
                value = NULL;
            }
            self->json[part] = value;
        }
    }
    return self->json[part];
}

bool
bn_msg_part_is_object (bn_msg_t *self, bn_part_t part)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    if (self->tried[part] || self->dirty[part])
        return self->json[part] != NULL;
    return bn_jscan_valid_object (zmq_msg_data (&self->parts[part]),
                                  zmq_msg_size (&self->parts[part]));
}

json_t *
bn_msg_header (bn_msg_t *self)
{
    return bn_msg_part (self, BN_PART_HEADER);
}

json_t *
bn_msg_parent (bn_msg_t *self)
{
    return bn_msg_part (self, BN_PART_PARENT);
}

json_t *
bn_msg_metadata (bn_msg_t *self)
{
    return bn_msg_part (self, BN_PART_METADATA);
}

json_t *
bn_msg_content (bn_msg_t *self)
{
    return bn_msg_part (self, BN_PART_CONTENT);
}

//  Scan every field of part (the header's or the parent's) in one walk of
//  its text into fields, each as bn_jscan_string finds it.
static void
s_fields_scan (bn_msg_t *self, s_fields_t *fields, bn_part_t part)
{
    static const char *const header_keys[] = {"msg_id", "msg_type", "session",
                                              "date"};
    static const s_field_id_t header_ids[] = {S_FIELD_MSG_ID, S_FIELD_MSG_TYPE,
                                              S_FIELD_SESSION, S_FIELD_DATE};
    static const char *const parent_keys[] = {"msg_id", "session"};
    static const s_field_id_t parent_ids[] = {S_FIELD_PARENT_ID,
                                              S_FIELD_PARENT_SESSION};
    bool header = part == BN_PART_HEADER;
    const char *const *keys = header ? header_keys : parent_keys;
    const s_field_id_t *ids = header ? header_ids : parent_ids;
    size_t n = header ? 4 : 2;
    bn_jscan_slice_t values[4];
    bool object =
        bn_jscan_keys (zmq_msg_data (&self->parts[part]),
                       zmq_msg_size (&self->parts[part]), keys, n, values) == 0;
    for (size_t k = 0; k < n; k++) {
        s_field_id_t id = ids[k];
        size_t room = S_FIELDS_TEXT - (size_t)fields->used;
        fields->tried[id] = true;
        fields->offset[id] = fields->used;
        fields->length[id] =
            !object ? -1
            : room == 0
                ? -2
                : bn_jscan_unescape (values[k], fields->text + fields->used,
                                     room < BN_FIELD_MAX ? room : BN_FIELD_MAX);
        if (fields->length[id] >= 0)
            fields->used += (short)(fields->length[id] + 1);
    }
}

//  A string field of a part: from the parsed part when there is one (it
//  may have been changed), else scanned from the raw bytes without
//  building a JSON tree, which is all a relay needs.
static const char *
s_field (bn_msg_t *self, bn_part_t part, s_field_id_t id, const char *key)
{
    if (self->json[part] || self->dirty[part])
        return json_string_value (json_object_get (self->json[part], key));
    if (self->tried[part])
        return NULL; //  parsed, and not a JSON object
    if (!self->fields) {
        self->fields = malloc (sizeof *self->fields);
        if (!self->fields)
            return NULL;
        memset (self->fields->tried, 0, sizeof self->fields->tried);
        self->fields->used = 0;
    }
    s_fields_t *fields = self->fields;
    if (!fields->tried[id])
        s_fields_scan (self, fields, part);
    if (fields->length[id] == -2) {
        //  longer than the scan buffer: let jansson read it
        json_t *object = bn_msg_part (self, part);
        return json_string_value (json_object_get (object, key));
    }
    return fields->length[id] >= 0 ? fields->text + fields->offset[id] : NULL;
}

const char *
bn_msg_type (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_HEADER, S_FIELD_MSG_TYPE, "msg_type");
}

const char *
bn_msg_id (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_HEADER, S_FIELD_MSG_ID, "msg_id");
}

const char *
bn_msg_session (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_HEADER, S_FIELD_SESSION, "session");
}

const char *
bn_msg_date (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_HEADER, S_FIELD_DATE, "date");
}

const char *
bn_msg_parent_id (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_PARENT, S_FIELD_PARENT_ID, "msg_id");
}

const char *
bn_msg_parent_session (bn_msg_t *self)
{
    assert (self);
    return s_field (self, BN_PART_PARENT, S_FIELD_PARENT_SESSION, "session");
}

void
bn_msg_set_part (bn_msg_t *self, bn_part_t part, json_t *value)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    assert (json_is_object (value));
    if (self->json[part])
        json_decref (self->json[part]);
    self->json[part] = value;
    self->tried[part] = true;
    self->dirty[part] = true;
    self->signed_ok = false;
}

void
bn_msg_set_metadata (bn_msg_t *self, json_t *value)
{
    bn_msg_set_part (self, BN_PART_METADATA, value);
}

void
bn_msg_set_content (bn_msg_t *self, json_t *value)
{
    bn_msg_set_part (self, BN_PART_CONTENT, value);
}

//  Forget what was parsed or scanned of part, which has new bytes.
static void
s_part_replaced (bn_msg_t *self, bn_part_t part)
{
    if (self->json[part])
        json_decref (self->json[part]);
    self->json[part] = NULL;
    self->tried[part] = false;
    self->dirty[part] = false;
    if (part == BN_PART_HEADER || part == BN_PART_PARENT) {
        free (self->fields);
        self->fields = NULL;
    }
    self->signed_ok = false;
}

int
bn_msg_set_part_raw (bn_msg_t *self, bn_part_t part, const void *data,
                     size_t size)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    s_part_replaced (self, part);
    return s_set_bytes (&self->parts[part], data, size);
}

int
bn_msg_set_part_frame (bn_msg_t *self, bn_part_t part, zmq_msg_t *frame)
{
    assert (self);
    assert (part <= BN_PART_CONTENT);
    assert (frame);
    s_part_replaced (self, part);
    return zmq_msg_copy (&self->parts[part], frame);
}

void
bn_msg_touch (bn_msg_t *self, bn_part_t part)
{
    assert (self);
    assert (self->json[part]);
    self->dirty[part] = true;
    self->signed_ok = false;
}

int
bn_msg_set_msg_id (bn_msg_t *self, const char *msg_id)
{
    assert (self);
    json_t *header = bn_msg_header (self);
    if (!header)
        return -1;
    if (json_object_set_new (header, "msg_id", json_string (msg_id)) != 0)
        return -1;
    bn_msg_touch (self, BN_PART_HEADER);
    return 0;
}

size_t
bn_msg_nbuffers (bn_msg_t *self)
{
    assert (self);
    return self->nbuffers;
}

zmq_msg_t *
bn_msg_buffer (bn_msg_t *self, size_t index)
{
    assert (self);
    return index < self->nbuffers ? &self->buffers[index] : NULL;
}

int
bn_msg_add_buffer (bn_msg_t *self, const void *data, size_t size)
{
    assert (self);
    if (s_buffer_reserve (self, self->nbuffers + 1) != 0)
        return -1;
    zmq_msg_t *slot = &self->buffers[self->nbuffers];
    zmq_msg_init (slot);
    if (s_set_bytes (slot, data, size) != 0)
        return -1;
    self->nbuffers++;
    return 0;
}

int
bn_msg_add_buffer_msg (bn_msg_t *self, zmq_msg_t *frame)
{
    assert (self);
    if (s_buffer_reserve (self, self->nbuffers + 1) != 0)
        return -1;
    zmq_msg_t *slot = &self->buffers[self->nbuffers];
    zmq_msg_init (slot);
    if (zmq_msg_copy (slot, frame) != 0) {
        zmq_msg_close (slot);
        return -1;
    }
    self->nbuffers++;
    return 0;
}

int
bn_msg_add_buffer_owned (bn_msg_t *self, void *data, size_t size)
{
    assert (self);
    if (s_buffer_reserve (self, self->nbuffers + 1) != 0) {
        free (data);
        return -1;
    }
    zmq_msg_t *slot = &self->buffers[self->nbuffers];
    if (zmq_msg_init_data (slot, data, size, s_free_data, NULL) != 0) {
        free (data);
        return -1;
    }
    self->nbuffers++;
    return 0;
}

int
bn_msg_add_buffer_data (bn_msg_t *self, void *data, size_t size,
                        zmq_free_fn *ffn, void *hint)
{
    assert (self);
    assert (ffn);
    if (s_buffer_reserve (self, self->nbuffers + 1) != 0) {
        ffn (data, hint);
        return -1;
    }
    zmq_msg_t *slot = &self->buffers[self->nbuffers];
    if (zmq_msg_init_data (slot, data, size, ffn, hint) != 0) {
        ffn (data, hint);
        return -1;
    }
    self->nbuffers++;
    return 0;
}

void
bn_msg_clear_buffers (bn_msg_t *self)
{
    assert (self);
    for (size_t i = 0; i < self->nbuffers; i++)
        zmq_msg_close (&self->buffers[i]);
    self->nbuffers = 0;
}

static int
s_send_frame (zmq_msg_t *frame, void *socket, int flags)
{
    while (zmq_msg_send (frame, socket, flags) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

//  Send *self_p; with keep, a message none of whose frames went is left to
//  the caller.
static int
s_send (bn_msg_t **self_p, void *socket, bn_session_t *session, int flags,
        bool keep)
{
    assert (self_p);
    assert (socket);
    bn_msg_t *self = *self_p;
    assert (self);
    int rc = s_flush (self);
    if (rc == 0 && !self->signed_ok) {
        assert (session);
        const void *parts[4];
        size_t sizes[4];
        for (int i = 0; i < 4; i++) {
            parts[i] = zmq_msg_data (&self->parts[i]);
            sizes[i] = zmq_msg_size (&self->parts[i]);
        }
        char hex[BN_SIGNATURE_SIZE + 1];
        bn_session_sign (session, parts, sizes, hex);
        rc = s_set_bytes (&self->sig, hex, strlen (hex));
        self->signed_ok = true;
    }
    if (rc == 0) {
        for (size_t i = 0; i < self->nidents && rc == 0; i++) {
            rc = s_send_frame (&self->idents[i], socket,
                               ZMQ_SNDMORE | (i == 0 ? flags : 0));
            //  the first frame did not go: nothing did
            if (rc != 0 && i == 0 && keep)
                return -1;
        }
        if (rc == 0) {
            zmq_msg_t delim;
            zmq_msg_init_size (&delim, BN_DELIM_SIZE);
            memcpy (zmq_msg_data (&delim), BN_DELIM, BN_DELIM_SIZE);
            rc = s_send_frame (&delim, socket,
                               ZMQ_SNDMORE | (self->nidents == 0 ? flags : 0));
            zmq_msg_close (&delim);
        }
        if (rc == 0)
            rc = s_send_frame (&self->sig, socket, ZMQ_SNDMORE);
        for (int i = 0; i < 4 && rc == 0; i++)
            rc = s_send_frame (&self->parts[i], socket,
                               i < 3 || self->nbuffers ? ZMQ_SNDMORE : 0);
        for (size_t i = 0; i < self->nbuffers && rc == 0; i++)
            rc = s_send_frame (&self->buffers[i], socket,
                               i + 1 < self->nbuffers ? ZMQ_SNDMORE : 0);
    }
    int error = errno; //  what failed, for the caller, past the clean-up
    bn_msg_destroy (self_p);
    errno = error;
    return rc;
}

int
bn_msg_send_flags (bn_msg_t **self_p, void *socket, bn_session_t *session,
                   int flags)
{
    return s_send (self_p, socket, session, flags, false);
}

int
bn_msg_send_client (bn_msg_t **self_p, void *socket, bn_session_t *session,
                    bn_msg_undelivered_t *undelivered, const char *who)
{
    if (bn_msg_send_flags (self_p, socket, session, ZMQ_DONTWAIT) == 0) {
        undelivered->full = false;
        return 0;
    }
    if (errno == EHOSTUNREACH) {
        undelivered->client_gone++;
        bn_log_debug ("%s: client gone, reply dropped", who);
    } else if (errno == EAGAIN) {
        //  said once, until a reply goes out again
        undelivered->client_full++;
        if (!undelivered->full)
            bn_log_warn ("%s: a client does not read its replies; dropping "
                         "them (controller.client_hwm)",
                         who);
        undelivered->full = true;
    } else {
        undelivered->send_failed++;
        bn_log_warn ("%s: reply to client failed: %s", who,
                     zmq_strerror (errno));
    }
    return -1;
}

int
bn_msg_send_routed (bn_msg_t **self_p, void *socket, bn_session_t *session,
                    int flags)
{
    assert (self_p && *self_p);
    assert (bn_msg_nidents (*self_p) > 0);
    return s_send (self_p, socket, session, flags, true);
}

int
bn_msg_send (bn_msg_t **self_p, void *socket, bn_session_t *session)
{
    return bn_msg_send_flags (self_p, socket, session, 0);
}

size_t
bn_msg_size (bn_msg_t *self)
{
    assert (self);
    s_flush (self);
    size_t size = BN_DELIM_SIZE + zmq_msg_size (&self->sig);
    for (size_t i = 0; i < self->nidents; i++)
        size += zmq_msg_size (&self->idents[i]);
    for (int i = 0; i < 4; i++)
        size += zmq_msg_size (&self->parts[i]);
    for (size_t i = 0; i < self->nbuffers; i++)
        size += zmq_msg_size (&self->buffers[i]);
    return size;
}

static void
s_print_frame (const char *label, zmq_msg_t *frame)
{
    size_t size = zmq_msg_size (frame);
    const unsigned char *data = zmq_msg_data (frame);
    fprintf (stderr, "  %-9s [%zu] ", label, size);
    size_t shown = size < 200 ? size : 200;
    for (size_t i = 0; i < shown; i++)
        fputc (data[i] >= 0x20 && data[i] < 0x7f ? data[i] : '.', stderr);
    fprintf (stderr, "%s\n", shown < size ? "..." : "");
}

void
bn_msg_print (bn_msg_t *self)
{
    assert (self);
    s_flush (self);
    fprintf (stderr, "bn_msg (%s)\n", self->framed ? "framed" : "unframed");
    for (size_t i = 0; i < self->nidents; i++)
        s_print_frame ("ident", &self->idents[i]);
    s_print_frame ("signature", &self->sig);
    const char *names[] = {"header", "parent", "metadata", "content"};
    for (int i = 0; i < 4; i++)
        s_print_frame (names[i], &self->parts[i]);
    for (size_t i = 0; i < self->nbuffers; i++)
        s_print_frame ("buffer", &self->buffers[i]);
}

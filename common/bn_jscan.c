/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_jscan: read fields of a JSON object, and the elements of an array,
    without building a tree.  */
#include "bn_jscan.h"
#include "bn_utf8.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define S_MAX_DEPTH 512

//  Bytes that stand for themselves inside a JSON string: everything but
//  control characters, the quote and the backslash.
static const bool s_plain[256] = {
    [0x20 ... 0x21] = true, [0x23 ... 0x5B] = true, [0x5D ... 0xFF] = true};

typedef struct {
    const unsigned char *p;   //  next byte
    const unsigned char *end; //  one past the last byte
} s_scan_t;

static void
s_skip_ws (s_scan_t *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int
s_hex4 (const unsigned char *p, uint32_t *value)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *value = v;
    return 0;
}

//  Append a code point as UTF-8 to out at *len (when out is not NULL),
//  tracking overflow in *full.
static void
s_put_utf8 (uint32_t cp, char *out, size_t outsize, size_t *len, bool *full)
{
    unsigned char buf[4];
    size_t n;
    if (cp < 0x80) {
        buf[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        buf[0] = (unsigned char)(0xC0 | (cp >> 6));
        buf[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        buf[0] = (unsigned char)(0xE0 | (cp >> 12));
        buf[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        buf[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        buf[0] = (unsigned char)(0xF0 | (cp >> 18));
        buf[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        buf[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        buf[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (!out)
        return;
    if (*len + n >= outsize) {
        *full = true;
        return;
    }
    memcpy (out + *len, buf, n);
    *len += n;
}

//  Read a string at s->p (which is at its opening quote), unescaping into
//  out when out is not NULL. Returns 0, or -1 if malformed.
static int
s_string (s_scan_t *s, char *out, size_t outsize, size_t *len, bool *full)
{
    s->p++;
    *len = 0;
    *full = false;
    while (s->p < s->end) {
        //  a run of plain bytes, the common case, is moved in one piece
        const unsigned char *run = s->p;
        while (s->p < s->end && s_plain[*s->p])
            s->p++;
        size_t n = (size_t)(s->p - run);
        if (out && n > 0) {
            if (*len + n >= outsize)
                *full = true;
            else {
                memcpy (out + *len, run, n);
                *len += n;
            }
        }
        if (s->p >= s->end)
            break;
        unsigned char c = *s->p++;
        if (c == '"') {
            if (out && !*full)
                out[*len] = 0;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (s->p >= s->end)
            return -1;
        c = *s->p++;
        uint32_t cp;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            cp = c;
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'n':
            cp = '\n';
            break;
        case 'r':
            cp = '\r';
            break;
        case 't':
            cp = '\t';
            break;
        case 'u':
            if (s->end - s->p < 4 || s_hex4 (s->p, &cp) != 0)
                return -1;
            s->p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t low;
                if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
                    s_hex4 (s->p + 2, &low) != 0 || low < 0xDC00 ||
                    low > 0xDFFF)
                    return -1;
                s->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF)
                return -1;
            if (cp == 0)
                return -1; //  a NUL cannot live in a C string
            break;
        default:
            return -1;
        }
        s_put_utf8 (cp, out, outsize, len, full);
    }
    return -1;
}

//  Skip one value of any kind. Returns 0, or -1 if malformed.
static int
s_skip_value (s_scan_t *s)
{
    int depth = 0;
    do {
        s_skip_ws (s);
        if (s->p >= s->end)
            return -1;
        unsigned char c = *s->p;
        size_t len;
        bool full;
        if (c == '"') {
            if (s_string (s, NULL, 0, &len, &full) != 0)
                return -1;
        } else if (c == '{' || c == '[') {
            if (++depth > S_MAX_DEPTH)
                return -1;
            s->p++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return -1;
            depth--;
            s->p++;
        } else if (c == ',' || c == ':') {
            if (depth == 0)
                return -1;
            s->p++;
        } else {
            //  number or literal: a run of its characters
            const unsigned char *start = s->p;
            while (s->p < s->end &&
                   ((*s->p >= '0' && *s->p <= '9') ||
                    (*s->p >= 'a' && *s->p <= 'z') || *s->p == '-' ||
                    *s->p == '+' || *s->p == '.' || *s->p == 'E'))
                s->p++;
            if (s->p == start)
                return -1;
        }
    } while (depth > 0);
    return 0;
}

//  Walk the object at s->p (after blanks) up to and past its closing
//  brace, keeping the raw values of the n keys. Returns 0, or -2 if it is
//  not a well-formed object.
static int
s_object (s_scan_t *s, const char *const *keys, size_t n,
          bn_jscan_slice_t *values)
{
    assert (n <= BN_JSCAN_KEYS_MAX);
    size_t lens[BN_JSCAN_KEYS_MAX];
    for (size_t k = 0; k < n; k++) {
        values[k] = (bn_jscan_slice_t){NULL, 0};
        lens[k] = strlen (keys[k]);
    }
    s_skip_ws (s);
    if (s->p >= s->end || *s->p != '{')
        return -2;
    s->p++;
    s_skip_ws (s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    while (true) {
        s_skip_ws (s);
        if (s->p >= s->end || *s->p != '"')
            return -2;
        char name[64];
        size_t len;
        bool full;
        if (s_string (s, name, sizeof name, &len, &full) != 0)
            return -2;
        s_skip_ws (s);
        if (s->p >= s->end || *s->p != ':')
            return -2;
        s->p++;
        s_skip_ws (s);
        const unsigned char *start = s->p;
        if (s_skip_value (s) != 0)
            return -2;
        for (size_t k = 0; k < n && !full; k++)
            if (lens[k] == len && memcmp (name, keys[k], len) == 0)
                values[k] = (bn_jscan_slice_t){(const char *)start,
                                               (size_t)(s->p - start)};
        s_skip_ws (s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return 0;
        }
        return -2;
    }
}

int
bn_jscan_object (const void *text, size_t size, const char *const *keys,
                 size_t n, bn_jscan_slice_t *values, size_t *used)
{
    s_scan_t scan = {text, (const unsigned char *)text + size};
    int rc = s_object (&scan, keys, n, values);
    if (used)
        *used = (size_t)(scan.p - (const unsigned char *)text);
    return rc;
}

//  A string at s->p, checked as jansson reads it: escapes, no control
//  characters, UTF-8 without surrogates. Returns 0, or -1.
static int
s_strict_string (s_scan_t *s)
{
    const unsigned char *start = s->p + 1;
    size_t len;
    bool full;
    if (s_string (s, NULL, 0, &len, &full) != 0)
        return -1;
    const unsigned char *end = s->p - 1;
    for (const unsigned char *p = start; p < end;) {
        uint32_t code = *p;
        size_t length =
            code < 0x80 ? 1 : bn_utf8_decode (p, (size_t)(end - p), &code);
        if (!length || (code >= 0xD800 && code <= 0xDFFF))
            return -1;
        p += length;
    }
    return 0;
}

static bool
s_digit (s_scan_t *s)
{
    return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

//  A number, true, false or null at s->p. Returns 0, or -1.
static int
s_strict_scalar (s_scan_t *s)
{
    static const char *const literals[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen (literals[i]);
        if ((size_t)(s->end - s->p) >= len &&
            memcmp (s->p, literals[i], len) == 0) {
            s->p += len;
            return 0;
        }
    }
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (s_digit (s))
        while (s_digit (s))
            s->p++;
    else
        return -1;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!s_digit (s))
            return -1;
        while (s_digit (s))
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!s_digit (s))
            return -1;
        while (s_digit (s))
            s->p++;
    }
    return 0;
}

bool
bn_jscan_valid_object (const void *text, size_t size)
{
    s_scan_t s = {text, (const unsigned char *)text + size};
    char open[S_MAX_DEPTH]; //  the containers we are in, '{' or '['
    int depth = 0;
    s_skip_ws (&s);
    if (s.p >= s.end || *s.p != '{')
        return false;
    //  want_key: the next thing is an object's key (or its end)
    bool want_key = false;
    while (true) {
        s_skip_ws (&s);
        if (s.p >= s.end)
            return false;
        if (want_key) {
            if (*s.p != '"' || s_strict_string (&s) != 0)
                return false;
            s_skip_ws (&s);
            if (s.p >= s.end || *s.p != ':')
                return false;
            s.p++;
            want_key = false;
            continue;
        }
        //  a value
        unsigned char c = *s.p;
        if (c == '{' || c == '[') {
            if (depth == S_MAX_DEPTH)
                return false;
            open[depth++] = (char)c;
            s.p++;
            s_skip_ws (&s);
            if (s.p < s.end && *s.p == (c == '{' ? '}' : ']')) {
                s.p++;
                depth--;
            } else {
                want_key = c == '{';
                continue;
            }
        } else if (c == '"') {
            if (s_strict_string (&s) != 0)
                return false;
        } else if (s_strict_scalar (&s) != 0)
            return false;
        //  after a value: a comma, or the ends of containers
        while (true) {
            s_skip_ws (&s);
            if (depth == 0) {
                s_skip_ws (&s);
                return s.p == s.end;
            }
            if (s.p >= s.end)
                return false;
            char close = open[depth - 1] == '{' ? '}' : ']';
            if (*s.p == close) {
                s.p++;
                depth--;
                continue;
            }
            if (*s.p != ',')
                return false;
            s.p++;
            want_key = open[depth - 1] == '{';
            break;
        }
    }
}

long
bn_jscan_drop_keys (const void *text, size_t size, const char *const *drop,
                    size_t n, char *out)
{
    s_scan_t s = {text, (const unsigned char *)text + size};
    s_skip_ws (&s);
    if (s.p >= s.end || *s.p != '{')
        return -1;
    s.p++;
    size_t len = 0;
    out[len++] = '{';
    s_skip_ws (&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        s_skip_ws (&s);
        return s.p == s.end ? (long)len : -1;
    }
    while (true) {
        s_skip_ws (&s);
        if (s.p >= s.end || *s.p != '"')
            return -1;
        const unsigned char *member = s.p;
        char name[64];
        size_t name_len;
        bool full;
        if (s_string (&s, name, sizeof name, &name_len, &full) != 0)
            return -1;
        s_skip_ws (&s);
        if (s.p >= s.end || *s.p != ':')
            return -1;
        s.p++;
        s_skip_ws (&s);
        if (s_skip_value (&s) != 0)
            return -1;
        bool dropped = false;
        for (size_t k = 0; k < n && !full && !dropped; k++)
            dropped = strlen (drop[k]) == name_len &&
                      memcmp (drop[k], name, name_len) == 0;
        if (!dropped) {
            if (len > 1)
                out[len++] = ',';
            memcpy (out + len, member, (size_t)(s.p - member));
            len += (size_t)(s.p - member);
        }
        s_skip_ws (&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            continue;
        }
        if (s.p < s.end && *s.p == '}') {
            s.p++;
            s_skip_ws (&s);
            return s.p == s.end ? (long)len : -1;
        }
        return -1;
    }
}

int
bn_jscan_keys (const void *text, size_t size, const char *const *keys, size_t n,
               bn_jscan_slice_t *values)
{
    s_scan_t scan = {text, (const unsigned char *)text + size};
    if (s_object (&scan, keys, n, values) != 0)
        return -2;
    s_skip_ws (&scan);
    return scan.p == scan.end ? 0 : -2;
}

int
bn_jscan_value (const void *text, size_t size, const char *key,
                const char **value, size_t *value_len)
{
    bn_jscan_slice_t found;
    if (bn_jscan_keys (text, size, &key, 1, &found) != 0)
        return -2;
    if (!found.data)
        return -1;
    *value = found.data;
    *value_len = found.size;
    return 0;
}

//  Past an array element at s->p: its comma, or the closing ']' left for
//  the next call. Returns 1 with *at moved, or -1 if neither follows.
static int
s_after_element (s_scan_t *s, const char **at)
{
    s_skip_ws (s);
    if (s->p < s->end && *s->p == ',')
        s->p++;
    else if (s->p >= s->end || *s->p != ']')
        return -1;
    *at = (const char *)s->p;
    return 1;
}

int
bn_jscan_next (const char **at, const char *end, bn_jscan_slice_t *element)
{
    s_scan_t scan = {(const unsigned char *)*at, (const unsigned char *)end};
    s_skip_ws (&scan);
    if (scan.p < scan.end && *scan.p == ']') {
        *at = (const char *)scan.p + 1;
        return 0;
    }
    const unsigned char *start = scan.p;
    if (s_skip_value (&scan) != 0)
        return -1;
    element->data = (const char *)start;
    element->size = (size_t)(scan.p - start);
    return s_after_element (&scan, at);
}

int
bn_jscan_next_object (const char **at, const char *end, const char *const *keys,
                      size_t n, bn_jscan_slice_t *values,
                      bn_jscan_slice_t *element)
{
    s_scan_t scan = {(const unsigned char *)*at, (const unsigned char *)end};
    s_skip_ws (&scan);
    if (scan.p < scan.end && *scan.p == ']') {
        *at = (const char *)scan.p + 1;
        return 0;
    }
    const unsigned char *start = scan.p;
    if (s_object (&scan, keys, n, values) != 0)
        return -1;
    element->data = (const char *)start;
    element->size = (size_t)(scan.p - start);
    return s_after_element (&scan, at);
}

int
bn_jscan_unescape (bn_jscan_slice_t value, char *out, size_t outsize)
{
    if (!value.data || value.size < 2 || *value.data != '"')
        return -1;
    s_scan_t s = {(const unsigned char *)value.data,
                  (const unsigned char *)value.data + value.size};
    size_t len;
    bool full;
    if (s_string (&s, out, outsize, &len, &full) != 0 || s.p != s.end)
        return -1;
    return full ? -2 : (int)len;
}

int
bn_jscan_string (const void *text, size_t size, const char *key, char *out,
                 size_t outsize)
{
    bn_jscan_slice_t value;
    if (bn_jscan_value (text, size, key, &value.data, &value.size) != 0)
        return -1;
    int len = bn_jscan_unescape (value, out, outsize);
    return len == -2 ? -2 : len < 0 ? -1 : len;
}

int
bn_jscan_array_size (const void *text, size_t size, const char *key)
{
    const char *value;
    size_t value_len;
    if (bn_jscan_value (text, size, key, &value, &value_len) != 0 ||
        *value != '[')
        return -1;
    const char *at = value + 1;
    bn_jscan_slice_t element;
    int count = 0, rc;
    while ((rc = bn_jscan_next (&at, value + value_len, &element)) == 1)
        count++;
    return rc == 0 ? count : -1;
}

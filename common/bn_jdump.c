/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_jdump: compact JSON text of a jansson tree, as json_dumps writes
    it.  */
#include "bn_jdump.h"
#include "bn_utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  jansson's own limit on nesting when it dumps
#define S_MAX_DEPTH 2048

//  ASCII written as it is inside a string: all but control characters,
//  the quote and the backslash (jansson escapes nothing else by default).
static const bool s_plain[128] = {
    [0x20 ... 0x21] = true, [0x23 ... 0x5B] = true, [0x5D ... 0x7F] = true};

typedef struct {
    char *data;      //  the text so far
    size_t size;     //  bytes used
    size_t capacity; //  bytes allocated
    bool failed;     //  out of memory, or a value jansson would refuse
} s_buf_t;

static bool
s_room (s_buf_t *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->size + n + 1 <= b->capacity)
        return true;
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->size + n + 1)
        capacity *= 2;
    char *bigger = realloc (b->data, capacity);
    if (!bigger) {
        b->failed = true;
        return false;
    }
    b->data = bigger;
    b->capacity = capacity;
    return true;
}

static void
s_put (s_buf_t *b, const void *data, size_t n)
{
    if (n && s_room (b, n)) {
        memcpy (b->data + b->size, data, n);
        b->size += n;
    }
}

static void
s_putc (s_buf_t *b, char c)
{
    if (s_room (b, 1))
        b->data[b->size++] = c;
}

//  A string, escaped as jansson escapes it; what is not UTF-8 as jansson
//  takes it (no surrogates) fails the dump, as it fails jansson's.
static void
s_string (s_buf_t *b, const char *text, size_t size)
{
    const unsigned char *p = (const unsigned char *)text;
    const unsigned char *end = p + size;
    s_putc (b, '"');
    const unsigned char *run = p;
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80 && s_plain[c]) {
            p++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t code;
            size_t n = bn_utf8_decode (p, (size_t)(end - p), &code);
            if (n == 0 || (code >= 0xD800 && code <= 0xDFFF)) {
                b->failed = true;
                return;
            }
            p += n;
            continue;
        }
        s_put (b, run, (size_t)(p - run));
        char escape[8] = {'\\', 0};
        size_t n = 2;
        switch (c) {
        case '"':
        case '\\':
            escape[1] = (char)c;
            break;
        case '\b':
            escape[1] = 'b';
            break;
        case '\f':
            escape[1] = 'f';
            break;
        case '\n':
            escape[1] = 'n';
            break;
        case '\r':
            escape[1] = 'r';
            break;
        case '\t':
            escape[1] = 't';
            break;
        default:
            memcpy (escape, "\\u00", 4);
            escape[4] = "0123456789ABCDEF"[c >> 4];
            escape[5] = "0123456789ABCDEF"[c & 15];
            n = 6;
        }
        s_put (b, escape, n);
        run = ++p;
    }
    s_put (b, run, (size_t)(p - run));
    s_putc (b, '"');
}

static void
s_integer (s_buf_t *b, json_int_t value)
{
    char digits[24];
    size_t at = sizeof digits;
    //  the magnitude as unsigned, so that the most negative value works
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value
                                             : (unsigned long long)value;
    do {
        digits[--at] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        digits[--at] = '-';
    s_put (b, digits + at, sizeof digits - at);
}

static void
s_value (s_buf_t *b, const json_t *json, int depth)
{
    if (b->failed)
        return;
    if (depth > S_MAX_DEPTH) {
        b->failed = true;
        return;
    }
    switch (json_typeof (json)) {
    case JSON_OBJECT: {
        s_putc (b, '{');
        const char *key;
        size_t key_len;
        json_t *value;
        bool first = true;
        json_object_keylen_foreach ((json_t *)json, key, key_len, value)
        {
            if (!first)
                s_putc (b, ',');
            first = false;
            s_string (b, key, key_len);
            s_putc (b, ':');
            s_value (b, value, depth + 1);
        }
        s_putc (b, '}');
        break;
    }
    case JSON_ARRAY: {
        s_putc (b, '[');
        for (size_t i = 0; i < json_array_size (json); i++) {
            if (i)
                s_putc (b, ',');
            s_value (b, json_array_get (json, i), depth + 1);
        }
        s_putc (b, ']');
        break;
    }
    case JSON_STRING:
        s_string (b, json_string_value (json), json_string_length (json));
        break;
    case JSON_INTEGER:
        s_integer (b, json_integer_value (json));
        break;
    case JSON_REAL: {
        //  rare in messages: jansson's own formatting of reals
        char *text = json_dumps (json, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text)
            b->failed = true;
        else
            s_put (b, text, strlen (text));
        free (text);
        break;
    }
    case JSON_TRUE:
        s_put (b, "true", 4);
        break;
    case JSON_FALSE:
        s_put (b, "false", 5);
        break;
    case JSON_NULL:
        s_put (b, "null", 4);
        break;
    }
}

char *
bn_jdump (const json_t *json, size_t *size)
{
    if (!json)
        return NULL;
    s_buf_t b = {NULL, 0, 0, false};
    s_value (&b, json, 0);
    if (!b.failed && !s_room (&b, 0))
        b.failed = true;
    if (b.failed) {
        free (b.data);
        return NULL;
    }
    b.data[b.size] = 0;
    if (size)
        *size = b.size;
    return b.data;
}

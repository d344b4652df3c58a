/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_rawtext: any bytes as UTF-8 text, and back.  */
#include "bn_rawtext.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
bn_rawtext_char (const void *p, size_t size)
{
    assert (p && size);
    const unsigned char *data = p;
    unsigned char c = data[0];
    int length;
    unsigned char low = 0x80, high = 0xBF;
    if (c < 0x80)
        return 1;
    else if (c >= 0xC2 && c <= 0xDF)
        length = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        length = 3;
        if (c == 0xE0)
            low = 0xA0;
        else if (c == 0xED)
            high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        length = 4;
        if (c == 0xF0)
            low = 0x90;
        else if (c == 0xF4)
            high = 0x8F;
    } else
        return -1;
    for (int i = 1; i < length; i++) {
        if ((size_t)i >= size)
            return 0;
        unsigned char next = data[i];
        if (i == 1 ? (next < low || next > high) : (next < 0x80 || next > 0xBF))
            return -1;
    }
    return length;
}

//  True if the complete character at p (length bytes) is one of the
//  escapes, U+10FF00..U+10FFFF: F4 8F BC..BF 80..BF.
static bool
s_escape_range (const unsigned char *p, int length)
{
    return length == 4 && p[0] == 0xF4 && p[1] == 0x8F && p[2] >= 0xBC;
}

//  Length of the character at p if it stays as it is in both forms, else
//  -1 (a byte of no character, a NUL, an escape's first byte).
static int
s_plain_char (const unsigned char *p, size_t size)
{
    if (*p == 0)
        return -1;
    int length = bn_rawtext_char (p, size);
    if (length <= 0 || s_escape_range (p, length))
        return -1;
    return length;
}

bool
bn_rawtext_plain (const void *data, size_t size)
{
    assert (data || size == 0);
    const unsigned char *p = data;
    size_t pos = 0;
    while (pos < size) {
        //  ASCII runs are most of it
        if (p[pos] && p[pos] < 0x80) {
            pos++;
            continue;
        }
        int length = s_plain_char (p + pos, size - pos);
        if (length < 0)
            return false;
        pos += (size_t)length;
    }
    return true;
}

//  data with each byte that is not part of a plain character written by
//  put (at most width bytes each; it returns the bytes it wrote); NULL if
//  out of memory.
static char *
s_rewrite (const void *data, size_t size, size_t *len_p, size_t width,
           size_t (*put) (unsigned char byte, unsigned char *out))
{
    const unsigned char *p = data;
    unsigned char *out = malloc (size * width + 1);
    if (!out)
        return NULL;
    size_t pos = 0, len = 0;
    while (pos < size) {
        int length = s_plain_char (p + pos, size - pos);
        if (length > 0) {
            memcpy (out + len, p + pos, (size_t)length);
            len += (size_t)length;
            pos += (size_t)length;
        } else {
            len += put (p[pos], out + len);
            pos++;
        }
    }
    out[len] = 0;
    if (len_p)
        *len_p = len;
    return (char *)out;
}

//  U+10FF00 + byte.
static size_t
s_put_escape (unsigned char byte, unsigned char *out)
{
    out[0] = 0xF4;
    out[1] = 0x8F;
    out[2] = (unsigned char)(0xBC | (byte >> 6));
    out[3] = (unsigned char)(0x80 | (byte & 0x3F));
    return 4;
}

//  U+FFFD.
static size_t
s_put_replacement (unsigned char byte, unsigned char *out)
{
    (void)byte;
    memcpy (out, "\xEF\xBF\xBD", 3);
    return 3;
}

char *
bn_rawtext_encode (const void *data, size_t size, size_t *len_p)
{
    assert (data || size == 0);
    return s_rewrite (data, size, len_p, 4, s_put_escape);
}

char *
bn_rawtext_replace (const void *data, size_t size, size_t *len_p)
{
    assert (data || size == 0);
    return s_rewrite (data, size, len_p, 3, s_put_replacement);
}

size_t
bn_rawtext_decode (char *text, size_t size)
{
    assert (text);
    unsigned char *p = (unsigned char *)text;
    unsigned char *hit = memchr (p, 0xF4, size);
    if (!hit) {
        text[size] = 0;
        return size;
    }
    size_t in = (size_t)(hit - p), out = in;
    while (in < size) {
        if (p[in] == 0xF4 && in + 3 < size && p[in + 1] == 0x8F &&
            p[in + 2] >= 0xBC && p[in + 2] <= 0xBF && p[in + 3] >= 0x80 &&
            p[in + 3] <= 0xBF) {
            p[out++] =
                (unsigned char)(((p[in + 2] & 0x03) << 6) | (p[in + 3] & 0x3F));
            in += 4;
        } else
            p[out++] = p[in++];
    }
    text[out] = 0;
    return out;
}

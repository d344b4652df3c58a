/*  bn_utf8: UTF-8 with surrogates, as pickles carry str.  */
#include "bn_utf8.h"

#include <assert.h>

size_t
bn_utf8_decode (const unsigned char *p, size_t size, uint32_t *code_p)
{
    unsigned char c = p[0];
    size_t length;
    uint32_t code;
    if (c < 0x80) {
        *code_p = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        length = 2;
        code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        length = 3;
        code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        length = 4;
        code = c & 0x07;
    } else
        return 0;
    if (size < length)
        return 0;
    for (size_t i = 1; i < length; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        code = (code << 6) | (p[i] & 0x3f);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
        code > 0x10ffff)
        return 0;
    *code_p = code;
    return length;
}

bool
bn_utf8_valid (const unsigned char *p, size_t size)
{
    assert (p || size == 0);
    size_t i = 0;
    while (i < size) {
        uint32_t code;
        size_t length =
            p[i] < 0x80 ? 1 : bn_utf8_decode (p + i, size - i, &code);
        if (!length)
            return false;
        i += length;
    }
    return true;
}

size_t
bn_utf8_put (uint32_t code, unsigned char *out)
{
    if (code < 0x80) {
        out[0] = (unsigned char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (unsigned char)(0xc0 | (code >> 6));
        out[1] = (unsigned char)(0x80 | (code & 0x3f));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (code >> 12));
        out[1] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (code & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (code >> 18));
    out[1] = (unsigned char)(0x80 | ((code >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (code & 0x3f));
    return 4;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_text: text written piece by piece into a buffer of a known size, for
    the fixed shapes of the message path (a header, a message id, an ok
    reply's metadata), where snprintf's reading of its format costs more
    than the copies themselves.  */
#ifndef BN_TEXT_H_INCLUDED
#define BN_TEXT_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    char *data;  //  the buffer
    size_t size; //  its bytes, the NUL included
    size_t len;  //  bytes written
    bool full;   //  something did not fit
} bn_text_t;

//  Start writing into data (size bytes, at least 1).
static inline void
bn_text_init (bn_text_t *self, char *data, size_t size)
{
    self->data = data;
    self->size = size;
    self->len = 0;
    self->full = size == 0;
}

//  Append size bytes of data.
static inline void
bn_text_add (bn_text_t *self, const char *data, size_t size)
{
    if (self->full || size >= self->size - self->len) {
        self->full = true;
        return;
    }
    memcpy (self->data + self->len, data, size);
    self->len += size;
}

//  Append a NUL-terminated string.
static inline void
bn_text_str (bn_text_t *self, const char *text)
{
    bn_text_add (self, text, strlen (text));
}

//  Append value in decimal.
static inline void
bn_text_uint (bn_text_t *self, unsigned long long value)
{
    char digits[24];
    size_t n = sizeof digits;
    do {
        digits[--n] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    bn_text_add (self, digits + n, sizeof digits - n);
}

//  Append value in decimal, with its sign.
static inline void
bn_text_int (bn_text_t *self, long long value)
{
    if (value < 0) {
        bn_text_add (self, "-", 1);
        bn_text_uint (self, 0ULL - (unsigned long long)value);
    } else
        bn_text_uint (self, (unsigned long long)value);
}

//  End the text with its NUL: its length, or -1 if it did not fit.
static inline long
bn_text_end (bn_text_t *self)
{
    if (self->full)
        return -1;
    self->data[self->len] = 0;
    return (long)self->len;
}

#endif

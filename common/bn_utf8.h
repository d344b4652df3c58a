/*  bn_utf8: UTF-8 as Python's decoder with surrogatepass reads it, the way
    pickles carry str: what the pickle codec checks and writes, and what a
    value's repr walks.  */
#ifndef BN_UTF8_H_INCLUDED
#define BN_UTF8_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Decode the sequence at p (size bytes left) into *code_p; returns its
//  length, or 0 if it is not UTF-8 (surrogates allowed).
size_t bn_utf8_decode (const unsigned char *p, size_t size, uint32_t *code_p);

//  True if the size bytes at p are UTF-8 (surrogates allowed).
bool bn_utf8_valid (const unsigned char *p, size_t size);

//  Write code point code as UTF-8 (surrogates too) to out (4 bytes of
//  room); returns the bytes written.
size_t bn_utf8_put (uint32_t code, unsigned char *out);

#endif

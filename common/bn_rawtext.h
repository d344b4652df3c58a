/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_rawtext: what a command wrote, any bytes, carried in JSON strings.

    JSON text is UTF-8, and jansson (so banyan's hub, nodes and client)
    refuses a NUL in it; a command may write anything. Banyan's engines
    write its output two ways:
    - for every reader (a stream message's text, the hub's records): each
      byte that is not part of a UTF-8 character, and each NUL, becomes
      U+FFFD, as Python's errors="replace" does (bn_rawtext_replace);
    - for banyan's readers (bn_stdout and bn_stderr of a reply, a stream
      message's bn_text): each such byte b, and each byte of a character
      U+10FF00..U+10FFFF (private use, so that those stay apart), becomes
      the character U+10FF00 + b (bn_rawtext_encode), which
      bn_rawtext_decode turns back into the bytes. Text that is UTF-8
      without NUL or those characters is the same either way, so the
      common case costs one scan.  */
#ifndef BN_RAWTEXT_H_INCLUDED
#define BN_RAWTEXT_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

//  Length of the UTF-8 character at p (size bytes left, at least 1): n > 0
//  for a complete one, 0 for the start of one cut short by the end, -1
//  for a byte that starts none (surrogates and overlong forms are none).
int bn_rawtext_char (const void *p, size_t size);

//  True if the size bytes at data read the same encoded, replaced and
//  raw: UTF-8 without NUL and without U+10FF00..U+10FFFF.
bool bn_rawtext_plain (const void *data, size_t size);

//  data (size bytes) encoded as banyan's readers take it: a new
//  NUL-terminated string of *len_p bytes, for the caller to free; NULL if
//  out of memory.
char *bn_rawtext_encode (const void *data, size_t size, size_t *len_p);

//  data (size bytes) with U+FFFD for each byte that is not part of a
//  character and for each NUL: a new NUL-terminated string of *len_p
//  bytes; NULL if out of memory.
char *bn_rawtext_replace (const void *data, size_t size, size_t *len_p);

//  Turn encoded text (size bytes) back into its bytes, in place (never
//  longer); returns their number and writes a NUL after them. Text that
//  was not encoded by bn_rawtext_encode is left as it is but for its
//  U+10FF00..U+10FFFF characters.
size_t bn_rawtext_decode (char *text, size_t size);

#endif

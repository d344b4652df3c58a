/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_jscan: read fields of a JSON object, and the elements of an array,
    without building a tree: for relays that need a header's msg_id and
    nothing else, and for readers of long lists (merged broadcast
    replies) that need a few fields of each entry.  */
#ifndef BN_JSCAN_H_INCLUDED
#define BN_JSCAN_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

//  Find the string value of the top-level key in the JSON object text
//  (size bytes, not NUL-terminated); the last one wins when a key repeats,
//  as in Python's json. The unescaped value is written NUL-terminated into
//  out (outsize bytes). Returns its length; -1 if the key is absent, its
//  value is not a string, or the text is not a well-formed object; -2 if
//  the value does not fit in out. Nested values are checked for structure
//  only (balanced, strings closed, no control characters in strings), not
//  for UTF-8 or number syntax.
int bn_jscan_string (const void *text, size_t size, const char *key, char *out,
                     size_t outsize);

//  The number of elements of the array value of the top-level key in the
//  JSON object text (size bytes), without building a tree; the last one
//  wins when a key repeats. -1 if the key is absent, its value is not an
//  array, or the text is not a well-formed object (checked as above).
int bn_jscan_array_size (const void *text, size_t size, const char *key);

//  The raw JSON text of the value of the top-level key in the JSON object
//  text (size bytes): 0 with *value and *value_len set (the last one wins
//  when a key repeats); -1 if the key is absent; -2 if the text is not a
//  well-formed object (checked as above), so that -1 also says the text is
//  an object.
int bn_jscan_value (const void *text, size_t size, const char *key,
                    const char **value, size_t *value_len);

//  A value's raw JSON text inside a larger text.
typedef struct {
    const char *data; //  its first byte; NULL when there is no value
    size_t size;      //  its bytes
} bn_jscan_slice_t;

//  Most keys bn_jscan_object looks for in one walk.
#define BN_JSCAN_KEYS_MAX 16

//  Walk one JSON object at the start of text (size bytes; blanks before
//  it are skipped, text may go on after it) and stop past its closing
//  brace: values[k] is the raw value of the top-level key keys[k] (the
//  last one wins when a key repeats; data NULL when absent), *used (when
//  not NULL) the bytes walked. n is at most BN_JSCAN_KEYS_MAX. Returns 0,
//  or -2 if the object is not well-formed (checked as above).
int bn_jscan_object (const void *text, size_t size, const char *const *keys,
                     size_t n, bn_jscan_slice_t *values, size_t *used);

//  The same for a whole text: the object, with nothing but blanks after
//  it. Returns 0, or -2 if the text is not that (as bn_jscan_value).
int bn_jscan_keys (const void *text, size_t size, const char *const *keys,
                   size_t n, bn_jscan_slice_t *values);

//  The next element of a JSON array, walking its text up to end: *at is
//  just past the opening '[' or where the previous call left it. Returns
//  1 with the element's raw text in *element and *at past it and its
//  comma; 0 at the closing ']' (*at then past it); -1 if the array is not
//  well-formed there. A comma before the ']' is not refused.
int bn_jscan_next (const char **at, const char *end, bn_jscan_slice_t *element);

//  The same for an array of objects, walking the next one once: its raw
//  text in *element, and in values[k] the raw value of its top-level key
//  keys[k] (as bn_jscan_object). Returns 1, 0 at the closing ']', -1 if
//  the element is not a well-formed object or the array not well-formed
//  there.
int bn_jscan_next_object (const char **at, const char *end,
                          const char *const *keys, size_t n,
                          bn_jscan_slice_t *values, bn_jscan_slice_t *element);

//  Copy the JSON object text (size bytes) into out (size bytes of room)
//  without its top-level members named in drop (n of them) and without
//  its closing brace: "{", then the members kept as they were, separated
//  by commas. Returns the bytes written, or -1 if text is not a
//  well-formed object (checked as bn_jscan_object).
long bn_jscan_drop_keys (const void *text, size_t size, const char *const *drop,
                         size_t n, char *out);

//  True if text (size bytes) is one JSON object and nothing but blanks
//  after it, by JSON's whole grammar as jansson reads it: strings of
//  UTF-8 without surrogates and without NUL, numbers, true, false and
//  null, at most 512 levels deep. No tree is built.
bool bn_jscan_valid_object (const void *text, size_t size);

//  Unescape the raw text of a JSON string value (quotes included) into
//  out (outsize bytes, NUL-terminated). Returns its length; -1 if value is
//  not a well-formed string (or holds a NUL); -2 if it does not fit.
int bn_jscan_unescape (bn_jscan_slice_t value, char *out, size_t outsize);

#endif

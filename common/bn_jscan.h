/*  bn_jscan: read one top-level string field of a JSON object without
    building a tree, for relays that need a header's msg_id and nothing
    else.  */
#ifndef BN_JSCAN_H_INCLUDED
#define BN_JSCAN_H_INCLUDED

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

#endif

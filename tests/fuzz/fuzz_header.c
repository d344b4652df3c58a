/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_header: the scanner that reads header and metadata fields without
    building a JSON tree (bn_jscan), on which every relay, the engine, the
    records and the merged reply codec decide. The input is one JSON part
    (an object, or a list as merged replies carry). jansson is the second
    parser: wherever it reads the part (within the scanner's nesting
    limit), the scanner must find the same keys with the same values, one
    key at a time or many in one walk, strings unescaped alike, and the
    same elements of arrays walked one by one; a part the scanner calls
    malformed must be one jansson refuses.  */
#include "bn_fuzz.h"
#include "bn_jscan.h"

#include <jansson.h>

#define S_SCAN_DEPTH 512 //  bn_jscan's nesting limit below the top object

//  Keys banyan's peers read with the scanner, and a few more.
static const char *s_keys[] = {"msg_id",
                               "msg_type",
                               "session",
                               "date",
                               "username",
                               "version",
                               "status",
                               "engine",
                               "started",
                               "after",
                               "follow",
                               "original_msg_id",
                               "targets",
                               "bn_stdout",
                               "bn_stderr",
                               "bn_groups",
                               "broadcast_targets",
                               "bn_reduced",
                               "bn_levels",
                               "is_broadcast",
                               "is_coalescing",
                               "dependencies_met",
                               "",
                               "a"};

static int
s_depth (json_t *value)
{
    int deepest = 0;
    size_t index;
    const char *key;
    json_t *item;
    if (json_is_object (value)) {
        json_object_foreach (value, key, item)
        {
            int d = s_depth (item);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_array (value)) {
        json_array_foreach (value, index, item)
        {
            int d = s_depth (item);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

//  The scanner's answers for key agree with jansson's object.
static void
s_check_key (const uint8_t *data, size_t size, json_t *object, const char *key)
{
    json_t *want = json_object_get (object, key);
    const char *value;
    size_t value_len;
    int rc = bn_jscan_value (data, size, key, &value, &value_len);
    BN_FUZZ_CHECK (rc == (want ? 0 : -1));
    if (want) {
        //  the raw value text is the whole value, as jansson reads it
        BN_FUZZ_CHECK (value >= (const char *)data &&
                       value + value_len <= (const char *)data + size);
        json_t *got = json_loadb (value, value_len, JSON_DECODE_ANY, NULL);
        BN_FUZZ_CHECK (got && json_equal (got, want));
        json_decref (got);
    }

    //  strings unescaped to the same bytes; too long for the buffer is -2
    char out[256], small[8];
    int len = bn_jscan_string (data, size, key, out, sizeof out);
    int len_small = bn_jscan_string (data, size, key, small, sizeof small);
    if (!json_is_string (want)) {
        BN_FUZZ_CHECK (len == -1 && len_small == -1);
    } else {
        size_t n = json_string_length (want);
        BN_FUZZ_CHECK (len == (n < sizeof out ? (int)n : -2));
        BN_FUZZ_CHECK (len_small == (n < sizeof small ? (int)n : -2));
        if (len >= 0)
            BN_FUZZ_CHECK (memcmp (out, json_string_value (want), n + 1) == 0);
    }

    int count = bn_jscan_array_size (data, size, key);
    BN_FUZZ_CHECK (count ==
                   (json_is_array (want) ? (int)json_array_size (want) : -1));
}

//  A slice the scanner found holds jansson's value (absent when jansson
//  has none), and a string one unescapes to jansson's string.
static void
s_check_slice (bn_jscan_slice_t slice, json_t *want)
{
    BN_FUZZ_CHECK ((slice.data == NULL) == (want == NULL));
    if (!want)
        return;
    json_t *got = json_loadb (slice.data, slice.size, JSON_DECODE_ANY, NULL);
    BN_FUZZ_CHECK (got && json_equal (got, want));
    json_decref (got);
    char out[256];
    int len = bn_jscan_unescape (slice, out, sizeof out);
    if (!json_is_string (want)) {
        BN_FUZZ_CHECK (len == -1);
        return;
    }
    size_t n = json_string_length (want);
    BN_FUZZ_CHECK (len == (n < sizeof out ? (int)n : -2));
    if (len >= 0)
        BN_FUZZ_CHECK (memcmp (out, json_string_value (want), n + 1) == 0);
}

//  One walk for many keys (bn_jscan_object) finds what jansson finds, and
//  stops past the object, where only blanks follow.
static void
s_check_object (const uint8_t *data, size_t size, json_t *object)
{
    for (size_t first = 0; first < sizeof s_keys / sizeof s_keys[0];
         first += BN_JSCAN_KEYS_MAX) {
        size_t n = sizeof s_keys / sizeof s_keys[0] - first;
        n = n < BN_JSCAN_KEYS_MAX ? n : BN_JSCAN_KEYS_MAX;
        bn_jscan_slice_t values[BN_JSCAN_KEYS_MAX];
        size_t used = 0;
        BN_FUZZ_CHECK (bn_jscan_object (data, size, s_keys + first, n, values,
                                        &used) == 0);
        BN_FUZZ_CHECK (used > 0 && used <= size && data[used - 1] == '}');
        for (size_t i = used; i < size; i++)
            BN_FUZZ_CHECK (strchr (" \t\r\n", data[i]));
        for (size_t k = 0; k < n; k++)
            s_check_slice (values[k],
                           json_object_get (object, s_keys[first + k]));
    }
}

//  An array's text (from its '[') walked element by element gives
//  jansson's elements; walked as objects when they all are, the keys
//  found in each are jansson's.
static void
s_check_array (const char *text, size_t size, json_t *array)
{
    BN_FUZZ_CHECK (size > 0 && *text == '[');
    const char *at = text + 1, *end = text + size;
    size_t count = json_array_size (array);
    bool objects = true;
    for (size_t i = 0; i <= count; i++) {
        bn_jscan_slice_t element;
        int rc = bn_jscan_next (&at, end, &element);
        BN_FUZZ_CHECK (rc == (i < count ? 1 : 0));
        if (i < count) {
            s_check_slice (element, json_array_get (array, i));
            objects = objects && json_is_object (json_array_get (array, i));
        }
    }
    BN_FUZZ_CHECK (at == end);
    if (!objects)
        return;
    at = text + 1;
    for (size_t i = 0; i <= count; i++) {
        bn_jscan_slice_t element, values[BN_JSCAN_KEYS_MAX];
        int rc = bn_jscan_next_object (&at, end, s_keys, BN_JSCAN_KEYS_MAX,
                                       values, &element);
        BN_FUZZ_CHECK (rc == (i < count ? 1 : 0));
        if (i == count)
            break;
        json_t *item = json_array_get (array, i);
        s_check_slice (element, item);
        for (size_t k = 0; k < BN_JSCAN_KEYS_MAX; k++)
            s_check_slice (values[k], json_object_get (item, s_keys[k]));
    }
    BN_FUZZ_CHECK (at == end);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    //  jansson (2.14) skips a NUL byte after a number, where Python and the
    //  scanner refuse the part
    if (memchr (data, 0, size)) {
        const char *value;
        size_t value_len;
        BN_FUZZ_CHECK (
            bn_jscan_value (data, size, "msg_id", &value, &value_len) == -2);
        return 0;
    }
    json_t *object = json_loadb ((const char *)data, size, 0, NULL);
    bool comparable =
        json_is_object (object) && s_depth (object) <= S_SCAN_DEPTH + 1;
    const char *value;
    size_t value_len;
    int rc = bn_jscan_value (data, size, "msg_id", &value, &value_len);
    if (comparable) {
        for (size_t i = 0; i < sizeof s_keys / sizeof s_keys[0]; i++)
            s_check_key (data, size, object, s_keys[i]);
        //  and every key the part has (the scanner matches keys of up to
        //  63 bytes, longer than any it is asked for)
        const char *key;
        json_t *item;
        json_object_foreach (object, key, item)
        {
            if (strlen (key) < 64)
                s_check_key (data, size, object, key);
            if (json_is_array (item) && strlen (key) < 64 &&
                bn_jscan_value (data, size, key, &value, &value_len) == 0)
                s_check_array (value, value_len, item);
        }
        s_check_object (data, size, object);
    } else if (json_is_object (object)) {
        BN_FUZZ_CHECK (rc == -2); //  too deep for the scanner
    } else if (json_is_array (object) && s_depth (object) <= S_SCAN_DEPTH + 1) {
        //  a list, as merged replies carry: walked from its '['
        size_t skip = strspn ((const char *)data, " \t\r\n");
        size_t end = size;
        while (end > skip && strchr (" \t\r\n", data[end - 1]))
            end--;
        s_check_array ((const char *)data + skip, end - skip, object);
    } else {
        //  not an object: the scanner reads nothing from it, or it is one
        //  only the scanner's looser checks of nested values let through
        char out[64];
        if (rc == -2)
            BN_FUZZ_CHECK (
                bn_jscan_string (data, size, "msg_id", out, sizeof out) == -1 &&
                bn_jscan_array_size (data, size, "msg_id") == -1);
    }
    json_decref (object);
    return 0;
}

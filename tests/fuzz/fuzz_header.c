/*  fuzz_header: the scanner that reads header and metadata fields without
    building a JSON tree (bn_jscan), on which every relay, the engine and
    the records decide. The input is one JSON part. jansson is the second
    parser: wherever it reads the part as an object (within the scanner's
    nesting limit), the scanner must find the same keys with the same
    values, strings unescaped alike and arrays of the same length; a part
    the scanner calls malformed must be one jansson refuses.  */
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
        }
    } else if (json_is_object (object)) {
        BN_FUZZ_CHECK (rc == -2); //  too deep for the scanner
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

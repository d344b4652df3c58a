/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_pickle: the pickle subset C peers read and write.  */
#include "bn_pickle.h"
#include "bn_error.h"
#include "bn_utf8.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Opcodes, named as in Lib/pickletools.py
enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_POP = '0',
    OP_POP_MARK = '1',
    OP_DUP = '2',
    OP_FLOAT = 'F',
    OP_INT = 'I',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_LONG = 'L',
    OP_BININT2 = 'M',
    OP_NONE = 'N',
    OP_PERSID = 'P',
    OP_BINPERSID = 'Q',
    OP_REDUCE = 'R',
    OP_STRING = 'S',
    OP_BINSTRING = 'T',
    OP_SHORT_BINSTRING = 'U',
    OP_UNICODE = 'V',
    OP_BINUNICODE = 'X',
    OP_APPEND = 'a',
    OP_BUILD = 'b',
    OP_GLOBAL = 'c',
    OP_DICT = 'd',
    OP_EMPTY_DICT = '}',
    OP_APPENDS = 'e',
    OP_GET = 'g',
    OP_BINGET = 'h',
    OP_INST = 'i',
    OP_LONG_BINGET = 'j',
    OP_LIST = 'l',
    OP_EMPTY_LIST = ']',
    OP_OBJ = 'o',
    OP_PUT = 'p',
    OP_BINPUT = 'q',
    OP_LONG_BINPUT = 'r',
    OP_SETITEM = 's',
    OP_TUPLE = 't',
    OP_EMPTY_TUPLE = ')',
    OP_SETITEMS = 'u',
    OP_BINFLOAT = 'G',
    OP_BINBYTES = 'B',
    OP_SHORT_BINBYTES = 'C',
    OP_PROTO = 0x80,
    OP_NEWOBJ = 0x81,
    OP_EXT1 = 0x82,
    OP_EXT2 = 0x83,
    OP_EXT4 = 0x84,
    OP_TUPLE1 = 0x85,
    OP_TUPLE2 = 0x86,
    OP_TUPLE3 = 0x87,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_LONG4 = 0x8b,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE8 = 0x8d,
    OP_BINBYTES8 = 0x8e,
    OP_EMPTY_SET = 0x8f,
    OP_ADDITEMS = 0x90,
    OP_FROZENSET = 0x91,
    OP_NEWOBJ_EX = 0x92,
    OP_STACK_GLOBAL = 0x93,
    OP_MEMOIZE = 0x94,
    OP_FRAME = 0x95,
    OP_BYTEARRAY8 = 0x96,
    OP_NEXT_BUFFER = 0x97,
    OP_READONLY_BUFFER = 0x98
};

#define S_FRAME_HEADER 9     //  FRAME opcode and 8-byte length
#define S_FRAME_MIN 4        //  smaller frames are not written
#define S_FRAME_TARGET 65536 //  frames end after passing this size
#define S_BATCH 1000         //  items per APPENDS/SETITEMS/ADDITEMS
#define S_NODE_COST 64       //  memory a copied value costs beyond data
#define S_HIGHEST_PROTOCOL 5

static uint64_t
s_le (const unsigned char *p, size_t n)
{
    uint64_t value = 0;
    for (size_t i = 0; i < n; i++)
        value |= (uint64_t)p[i] << (8 * i);
    return value;
}

//  A little-endian two's complement integer of n bytes, if it fits int64.
static bool
s_long_le (const unsigned char *p, size_t n, int64_t *value_p)
{
    if (n == 0) {
        *value_p = 0;
        return true;
    }
    bool negative = (p[n - 1] & 0x80) != 0;
    //  Bytes beyond the eighth must only repeat the sign.
    for (size_t i = 8; i < n; i++)
        if (p[i] != (negative ? 0xff : 0x00))
            return false;
    if (n > 8 && ((p[7] & 0x80) != 0) != negative)
        return false;
    size_t used = n < 8 ? n : 8;
    uint64_t bits = s_le (p, used);
    if (negative && used < 8)
        bits |= ~(uint64_t)0 << (8 * used);
    *value_p = (int64_t)bits;
    return true;
}

//  --------------------------------------------------------------------
//  Reader

//  What a reader holds in itself before it takes memory from the heap: a
//  reply's pickle (a list of a few values) fits, and is read without one
//  allocation of the reader's own.
#define S_INLINE_STACK 32
#define S_INLINE_MARKS 8
#define S_INLINE_MEMO 32

typedef struct {
    const unsigned char *start;
    const unsigned char *p;
    const unsigned char *end;
    size_t op_offset;   //  where the current opcode starts
    bn_value_t **stack; //  owned values
    uint32_t *depths;   //  nesting depth of each stack value
    size_t size;
    size_t cap;
    size_t *marks; //  stack sizes at each MARK
    size_t nmarks;
    size_t marks_cap;
    bn_value_t **memo; //  borrowed: on the stack, inside it, or in spill
    size_t memo_cap;
    size_t memo_count;
    size_t memo_limit;
    bn_value_t *spill; //  values dropped while the memo may point at them
    size_t budget;     //  bytes memo copies may still use
    char *err;
    size_t errsize;
    bool failed;
    bn_value_t *stack_inline[S_INLINE_STACK];
    uint32_t depths_inline[S_INLINE_STACK];
    size_t marks_inline[S_INLINE_MARKS];
    bn_value_t *memo_inline[S_INLINE_MEMO];
} s_reader_t;

//  Grow array, of cap elements of elsize bytes, to newcap elements. An
//  array still in the reader's inline storage is copied to the heap.
//  Returns the grown array, or NULL with array unchanged.
static void *
s_grow (void *array, const void *inline_array, size_t cap, size_t newcap,
        size_t elsize)
{
    if (array != inline_array)
        return realloc (array, newcap * elsize);
    void *grown = malloc (newcap * elsize);
    if (grown)
        memcpy (grown, array, cap * elsize);
    return grown;
}

static void
s_release (void *array, const void *inline_array)
{
    if (array != inline_array)
        free (array);
}

static int s_fail (s_reader_t *r, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static int
s_fail (s_reader_t *r, const char *format, ...)
{
    if (!r->failed && r->err && r->errsize) {
        char text[200];
        va_list args;
        va_start (args, format);
        vsnprintf (text, sizeof (text), format, args);
        va_end (args);
        snprintf (r->err, r->errsize, "pickle offset %zu: %s", r->op_offset,
                  text);
    }
    r->failed = true;
    return -1;
}

static int
s_need (s_reader_t *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return s_fail (r, "truncated");
    return 0;
}

//  A line of text (protocol 0 arguments) without its newline.
static int
s_readline (s_reader_t *r, const char **line_p, size_t *size_p)
{
    const unsigned char *nl =
        (const unsigned char *)memchr (r->p, '\n', (size_t)(r->end - r->p));
    if (!nl)
        return s_fail (r, "truncated line");
    *line_p = (const char *)r->p;
    *size_p = (size_t)(nl - r->p);
    r->p = nl + 1;
    return 0;
}

static size_t
s_fence (const s_reader_t *r)
{
    return r->nmarks ? r->marks[r->nmarks - 1] : 0;
}

static int
s_push (s_reader_t *r, bn_value_t *value, uint32_t depth)
{
    if (!value)
        return s_fail (r, "out of memory");
    if (depth > BN_PICKLE_MAX_DEPTH) {
        bn_value_destroy (&value);
        return s_fail (r, "nested deeper than %d", BN_PICKLE_MAX_DEPTH);
    }
    if (r->size == r->cap) {
        size_t cap = 2 * r->cap;
        bn_value_t **stack = (bn_value_t **)s_grow (
            r->stack, r->stack_inline, r->cap, cap, sizeof (bn_value_t *));
        if (stack)
            r->stack = stack;
        uint32_t *depths = (uint32_t *)s_grow (r->depths, r->depths_inline,
                                               r->cap, cap, sizeof (uint32_t));
        if (depths)
            r->depths = depths;
        if (!stack || !depths) {
            bn_value_destroy (&value);
            return s_fail (r, "out of memory");
        }
        r->cap = cap;
    }
    r->stack[r->size] = value;
    r->depths[r->size] = depth;
    r->size++;
    return 0;
}

//  Take the top value off the stack (not below the last MARK).
static bn_value_t *
s_pop (s_reader_t *r, uint32_t *depth_p)
{
    if (r->size <= s_fence (r)) {
        s_fail (r, "stack underflow");
        return NULL;
    }
    r->size--;
    if (depth_p)
        *depth_p = r->depths[r->size];
    bn_value_t *value = r->stack[r->size];
    r->stack[r->size] = NULL;
    return value;
}

//  The stack index of the top value (not below the last MARK), or -1.
static int
s_top (s_reader_t *r, size_t *index_p)
{
    if (r->size <= s_fence (r))
        return s_fail (r, "stack underflow");
    *index_p = r->size - 1;
    return 0;
}

//  Drop a value the memo may still refer to.
static int
s_drop (s_reader_t *r, bn_value_t *value)
{
    if (value && bn_value_append (r->spill, value))
        return s_fail (r, "out of memory");
    return 0;
}

static int
s_pop_mark (s_reader_t *r, size_t *mark_p)
{
    if (r->nmarks == 0)
        return s_fail (r, "MARK missing");
    *mark_p = r->marks[--r->nmarks];
    return 0;
}

static int
s_check_depth (s_reader_t *r, uint32_t depth)
{
    if (depth > BN_PICKLE_MAX_DEPTH)
        return s_fail (r, "nested deeper than %d", BN_PICKLE_MAX_DEPTH);
    return 0;
}

//  Move the values above stack index `from` into a LIST, TUPLE or SET,
//  raising *depth_p to cover them.
static int
s_move_items (s_reader_t *r, size_t from, bn_value_t *container,
              uint32_t *depth_p)
{
    for (size_t i = from; i < r->size; i++) {
        bn_value_t *item = r->stack[i];
        r->stack[i] = NULL;
        if (r->depths[i] + 1 > *depth_p)
            *depth_p = r->depths[i] + 1;
        if (bn_value_append_spill (container, item, r->spill))
            return s_fail (r, "out of memory");
    }
    r->size = from;
    return s_check_depth (r, *depth_p);
}

//  Move key/value pairs above stack index `from` into a DICT.
static int
s_move_pairs (s_reader_t *r, size_t from, bn_value_t *dict, uint32_t *depth_p)
{
    if ((r->size - from) % 2)
        return s_fail (r, "odd number of items for a dict");
    for (size_t i = from; i < r->size; i += 2) {
        bn_value_t *key = r->stack[i];
        bn_value_t *value = r->stack[i + 1];
        r->stack[i] = r->stack[i + 1] = NULL;
        uint32_t depth =
            r->depths[i] > r->depths[i + 1] ? r->depths[i] : r->depths[i + 1];
        if (depth + 1 > *depth_p)
            *depth_p = depth + 1;
        if (bn_value_dict_set_spill (dict, key, value, r->spill))
            return s_fail (r, "out of memory");
    }
    r->size = from;
    return s_check_depth (r, *depth_p);
}

//  Collect the values above the last MARK into a new container and push it.
static int
s_load_marked (s_reader_t *r, bn_value_t *container)
{
    size_t mark = 0;
    uint32_t depth = 1;
    if (!container)
        return s_fail (r, "out of memory");
    if (s_pop_mark (r, &mark) ||
        (bn_value_type (container) == BN_VALUE_DICT
             ? s_move_pairs (r, mark, container, &depth)
             : s_move_items (r, mark, container, &depth))) {
        bn_value_destroy (&container);
        return -1;
    }
    return s_push (r, container, depth);
}

//  A tuple of the top n values.
static int
s_load_tuple_n (s_reader_t *r, size_t n)
{
    if (r->size < s_fence (r) + n)
        return s_fail (r, "stack underflow");
    bn_value_t *tuple = bn_value_new_tuple ();
    uint32_t depth = 1;
    if (!tuple)
        return s_fail (r, "out of memory");
    if (s_move_items (r, r->size - n, tuple, &depth)) {
        bn_value_destroy (&tuple);
        return -1;
    }
    return s_push (r, tuple, depth);
}

//  Add items (APPENDS) or pairs (SETITEMS) above `from` to the target at
//  stack index `target`: a list or dict, or the items of an object.
static int
s_extend (s_reader_t *r, size_t target, size_t from, bool pairs)
{
    bn_value_t *container = r->stack[target];
    bool object = bn_value_type (container) == BN_VALUE_OBJECT;
    //  An object gets items only when some come.
    if (object && from == r->size)
        return 0;
    if (object) {
        bn_value_t *items = bn_value_object_items (container);
        if (!items) {
            items = pairs ? bn_value_new_dict () : bn_value_new_list ();
            if (!items)
                return s_fail (r, "out of memory");
            bn_value_object_swap_items (container, items);
        }
        container = items;
    }
    bn_value_type_t type = bn_value_type (container);
    if (pairs ? type != BN_VALUE_DICT : type != BN_VALUE_LIST)
        return s_fail (r, "%s on a %s", pairs ? "SETITEMS" : "APPENDS",
                       bn_value_type_name (container));
    uint32_t depth = 0;
    if (pairs ? s_move_pairs (r, from, container, &depth)
              : s_move_items (r, from, container, &depth))
        return -1;
    if (object)
        depth++;
    if (depth > r->depths[target])
        r->depths[target] = depth;
    return s_check_depth (r, r->depths[target]);
}

//  Size and depth of a value, giving up once the size passes `limit`.
static int
s_measure (const bn_value_t *value, size_t limit, size_t *cost_p,
           uint32_t *depth_p)
{
    *cost_p +=
        S_NODE_COST + bn_value_str_size (value) + bn_value_bytes_size (value);
    if (*cost_p > limit)
        return -1;
    uint32_t depth = 0;
    const bn_value_t *parts[5] = {NULL};
    size_t nparts = 0;
    bn_value_type_t type = bn_value_type (value);
    if (type == BN_VALUE_OBJECT) {
        parts[0] = bn_value_object_class (value);
        parts[1] = bn_value_object_args (value);
        parts[2] = bn_value_object_state (value);
        parts[3] = bn_value_object_items (value);
        parts[4] = bn_value_object_kwargs (value);
        nparts = 5;
    }
    for (size_t i = 0; i < nparts; i++) {
        uint32_t d = 0;
        if (parts[i] && s_measure (parts[i], limit, cost_p, &d))
            return -1;
        if (d > depth)
            depth = d;
    }
    size_t size = bn_value_size (value);
    for (size_t i = 0; i < size; i++) {
        uint32_t d = 0;
        if (type == BN_VALUE_DICT) {
            uint32_t k = 0;
            if (s_measure (bn_value_dict_key (value, i), limit, cost_p, &k) ||
                s_measure (bn_value_dict_value (value, i), limit, cost_p, &d))
                return -1;
            if (k > d)
                d = k;
        } else if (s_measure (bn_value_item (value, i), limit, cost_p, &d))
            return -1;
        if (d > depth)
            depth = d;
    }
    *depth_p = depth + 1;
    return 0;
}

//  What memo copies may cost in a pickle of `size` bytes.
static size_t
s_copy_budget (size_t size)
{
    size_t budget = BN_PICKLE_COPY_BUDGET;
    return size > (SIZE_MAX - budget) / BN_PICKLE_COPY_PER_BYTE
               ? SIZE_MAX
               : budget + BN_PICKLE_COPY_PER_BYTE * size;
}

//  Push a copy of `value` (the memo's or the top's), charged to the budget.
static int
s_push_copy (s_reader_t *r, const bn_value_t *value)
{
    size_t cost = 0;
    uint32_t depth = 0;
    if (s_measure (value, r->budget, &cost, &depth))
        return s_fail (r,
                       "memo references copy more than the budget of a "
                       "%zu-byte pickle, %zu bytes",
                       (size_t)(r->end - r->start),
                       s_copy_budget ((size_t)(r->end - r->start)));
    r->budget -= cost;
    return s_push (r, bn_value_dup (value), depth);
}

static int
s_memo_put (s_reader_t *r, size_t index)
{
    size_t top = 0;
    if (s_top (r, &top))
        return -1;
    if (index >= r->memo_limit)
        return s_fail (r, "memo index %zu too large", index);
    if (index >= r->memo_cap) {
        size_t cap = 2 * r->memo_cap;
        while (cap <= index)
            cap *= 2;
        if (cap > r->memo_limit)
            cap = r->memo_limit;
        bn_value_t **memo = (bn_value_t **)s_grow (
            r->memo, r->memo_inline, r->memo_cap, cap, sizeof (bn_value_t *));
        if (!memo)
            return s_fail (r, "out of memory");
        memset (memo + r->memo_cap, 0,
                (cap - r->memo_cap) * sizeof (bn_value_t *));
        r->memo = memo;
        r->memo_cap = cap;
    }
    if (!r->memo[index])
        r->memo_count++;
    r->memo[index] = r->stack[top];
    return 0;
}

static int
s_memo_get (s_reader_t *r, size_t index)
{
    if (index >= r->memo_cap || !r->memo[index])
        return s_fail (r, "memo entry %zu missing", index);
    return s_push_copy (r, r->memo[index]);
}

//  Parse a decimal text integer (protocol 0 INT, LONG, PUT, GET).
static bool
s_parse_int (const char *text, size_t size, int64_t *value_p)
{
    char buffer[32];
    if (size == 0 || size >= sizeof (buffer))
        return false;
    memcpy (buffer, text, size);
    buffer[size] = 0;
    size_t i = buffer[0] == '-' || buffer[0] == '+' ? 1 : 0;
    if (buffer[i] == 0)
        return false;
    for (; buffer[i]; i++)
        if (buffer[i] < '0' || buffer[i] > '9')
            return false;
    errno = 0;
    char *end;
    long long value = strtoll (buffer, &end, 10);
    if (errno || *end)
        return false;
    *value_p = value;
    return true;
}

static int
s_line_index (s_reader_t *r, size_t *index_p)
{
    const char *line = NULL;
    size_t size = 0;
    int64_t value;
    if (s_readline (r, &line, &size))
        return -1;
    if (!s_parse_int (line, size, &value) || value < 0)
        return s_fail (r, "bad memo index");
    *index_p = (size_t)value;
    return 0;
}

//  A str from UTF-8 bytes, or an error if they are not UTF-8.
static int
s_push_str (s_reader_t *r, const unsigned char *data, size_t size)
{
    if (!bn_utf8_valid (data, size))
        return s_fail (r, "str is not UTF-8");
    return s_push (r, bn_value_new_strn ((const char *)data, size), 1);
}

//  A protocol 0/1 8-bit string: str when it is UTF-8, else bytes.
static int
s_push_string8 (s_reader_t *r, const unsigned char *data, size_t size)
{
    if (bn_utf8_valid (data, size))
        return s_push_str (r, data, size);
    return s_push (r, bn_value_new_bytes (data, size), 1);
}

//  Python 2 string literal escapes (STRING's argument).
static int
s_load_string (s_reader_t *r)
{
    const char *line = NULL;
    size_t size = 0;
    if (s_readline (r, &line, &size))
        return -1;
    if (size < 2 || (line[0] != '\'' && line[0] != '"') ||
        line[size - 1] != line[0])
        return s_fail (r, "STRING not quoted");
    const unsigned char *p = (const unsigned char *)line + 1;
    const unsigned char *end = (const unsigned char *)line + size - 1;
    unsigned char *out = (unsigned char *)malloc (size);
    if (!out)
        return s_fail (r, "out of memory");
    size_t n = 0;
    while (p < end) {
        if (*p != '\\' || p + 1 == end) {
            out[n++] = *p++;
            continue;
        }
        p++;
        unsigned char c = *p++;
        switch (c) {
        case 'n':
            out[n++] = '\n';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 'a':
            out[n++] = '\a';
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'v':
            out[n++] = '\v';
            break;
        case '\n':
            break;
        case 'x':
            if (end - p >= 2 && isxdigit (p[0]) && isxdigit (p[1])) {
                char hex[3] = {(char)p[0], (char)p[1], 0};
                out[n++] = (unsigned char)strtol (hex, NULL, 16);
                p += 2;
            } else {
                free (out);
                return s_fail (r, "bad \\x escape in STRING");
            }
            break;
        default:
            if (c >= '0' && c <= '7') {
                unsigned value = c - '0';
                for (int k = 0; k < 2 && p < end && *p >= '0' && *p <= '7'; k++)
                    value = value * 8 + (unsigned)(*p++ - '0');
                out[n++] = (unsigned char)value;
            } else {
                out[n++] = '\\';
                out[n++] = c;
            }
        }
    }
    int rc = s_push_string8 (r, out, n);
    free (out);
    return rc;
}

//  Python's raw-unicode-escape (UNICODE's argument): Latin-1 bytes plus
//  \uXXXX and \UXXXXXXXX.
static int
s_load_unicode (s_reader_t *r)
{
    const char *line = NULL;
    size_t size = 0;
    if (s_readline (r, &line, &size))
        return -1;
    //  Each byte makes at most two of UTF-8; escapes shrink.
    unsigned char *out = (unsigned char *)malloc (2 * size + 1);
    if (!out)
        return s_fail (r, "out of memory");
    const unsigned char *p = (const unsigned char *)line;
    const unsigned char *end = p + size;
    size_t n = 0;
    while (p < end) {
        size_t digits = 0;
        if (*p == '\\' && end - p >= 2 && (p[1] == 'u' || p[1] == 'U')) {
            //  Only an odd run of backslashes escapes, as in Python.
            size_t at = (size_t)(p - (const unsigned char *)line);
            size_t run = 1;
            while (run <= at && line[at - run] == '\\')
                run++;
            if (run % 2)
                digits = p[1] == 'u' ? 4 : 8;
        }
        if (!digits) {
            n += bn_utf8_put (*p++, out + n);
            continue;
        }
        if ((size_t)(end - p) < 2 + digits) {
            free (out);
            return s_fail (r, "truncated \\u escape in UNICODE");
        }
        uint32_t code = 0;
        for (size_t k = 0; k < digits; k++) {
            unsigned char c = p[2 + k];
            if (!isxdigit (c)) {
                free (out);
                return s_fail (r, "bad \\u escape in UNICODE");
            }
            code = code * 16 +
                   (uint32_t)(isdigit (c) ? c - '0' : (tolower (c) - 'a' + 10));
        }
        if (code > 0x10ffff) {
            free (out);
            return s_fail (r, "bad code point in UNICODE");
        }
        n += bn_utf8_put (code, out + n);
        p += 2 + digits;
    }
    int rc = s_push (r, bn_value_new_strn ((const char *)out, n), 1);
    free (out);
    return rc;
}

//  Python 3 names for what protocols 0-2 call by their Python 2 names.
static const char *
s_fix_module (const char *module)
{
    if (strcmp (module, "__builtin__") == 0)
        return "builtins";
    if (strcmp (module, "copy_reg") == 0)
        return "copyreg";
    return module;
}

static int
s_push_global (s_reader_t *r, const char *module, size_t module_size,
               const char *name, size_t name_size)
{
    if (!bn_utf8_valid ((const unsigned char *)module, module_size) ||
        !bn_utf8_valid ((const unsigned char *)name, name_size) ||
        memchr (module, 0, module_size) || memchr (name, 0, name_size) ||
        module_size == 0 || name_size == 0)
        return s_fail (r, "bad global name");
    char *m = strndup (module, module_size);
    char *n = strndup (name, name_size);
    bn_value_t *global =
        m && n ? bn_value_new_global (s_fix_module (m), n) : NULL;
    free (m);
    free (n);
    return s_push (r, global, 1);
}

//  The module and name lines of GLOBAL and INST.
static int
s_read_global (s_reader_t *r)
{
    const char *module = NULL, *name = NULL;
    size_t module_size = 0, name_size = 0;
    if (s_readline (r, &module, &module_size) ||
        s_readline (r, &name, &name_size))
        return -1;
    return s_push_global (r, module, module_size, name, name_size);
}

static bool
s_global_is (const bn_value_t *value, const char *module, const char *name)
{
    return bn_value_type (value) == BN_VALUE_GLOBAL &&
           strcmp (bn_value_global_module (value), module) == 0 &&
           strcmp (bn_value_global_name (value), name) == 0;
}

//  Latin-1 text (as a str) back to bytes, or NULL if a code point > 0xff.
static bn_value_t *
s_latin1_bytes (const bn_value_t *text)
{
    const unsigned char *p = (const unsigned char *)bn_value_str (text);
    size_t size = bn_value_str_size (text);
    unsigned char *out = (unsigned char *)malloc (size + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < size;) {
        if (p[i] < 0x80)
            out[n++] = p[i++];
        else if ((p[i] == 0xc2 || p[i] == 0xc3) && i + 1 < size) {
            out[n++] =
                (unsigned char)(((p[i] & 0x03) << 6) | (p[i + 1] & 0x3f));
            i += 2;
        } else {
            free (out);
            return NULL;
        }
    }
    bn_value_t *bytes = bn_value_new_bytes (out, n);
    free (out);
    return bytes;
}

//  Protocol 0-3 spell bytes, bytearray, set and frozenset as calls
//  (_codecs.encode (text, 'latin1'), builtins.set ([items])); give those
//  their plain value.  Returns the value, or NULL to keep the call.
static bn_value_t *
s_reduce_known (s_reader_t *r, bn_value_t *callable, bn_value_t *args)
{
    if (bn_value_type (callable) != BN_VALUE_GLOBAL)
        return NULL;
    size_t nargs = bn_value_size (args);
    bn_value_t *first = bn_value_item (args, 0);
    if (s_global_is (callable, "_codecs", "encode") && nargs == 2 &&
        bn_value_type (first) == BN_VALUE_STR) {
        const char *encoding = bn_value_str (bn_value_item (args, 1));
        if (encoding && (strcmp (encoding, "latin1") == 0 ||
                         strcmp (encoding, "latin-1") == 0))
            return s_latin1_bytes (first);
        return NULL;
    }
    bool bytes = s_global_is (callable, "builtins", "bytes") ||
                 s_global_is (callable, "builtins", "bytearray");
    if (bytes && nargs == 0)
        return bn_value_new_bytes ("", 0);
    if (bytes && nargs == 1 && bn_value_type (first) == BN_VALUE_BYTES)
        return bn_value_swap_item (args, 0, bn_value_new_none ());
    bool set = s_global_is (callable, "builtins", "set") ||
               s_global_is (callable, "builtins", "frozenset");
    if (set && nargs == 0)
        return bn_value_new_set ();
    if (set && nargs == 1 &&
        (bn_value_type (first) == BN_VALUE_LIST ||
         bn_value_type (first) == BN_VALUE_TUPLE)) {
        bn_value_t *result = bn_value_new_set ();
        if (!result)
            return NULL;
        size_t size = bn_value_size (first);
        for (size_t i = 0; i < size; i++) {
            bn_value_t *item =
                bn_value_swap_item (first, i, bn_value_new_none ());
            if (bn_value_append_spill (result, item, r->spill)) {
                bn_value_destroy (&result);
                return NULL;
            }
        }
        return result;
    }
    return NULL;
}

//  REDUCE, NEWOBJ, NEWOBJ_EX, INST and OBJ: an OBJECT from class and args.
static int
s_push_object (s_reader_t *r, bn_value_t *cls, bn_value_t *args,
               bn_value_t *kwargs, bool reduce, uint32_t depth)
{
    if (bn_value_type (args) != BN_VALUE_TUPLE ||
        (kwargs && bn_value_type (kwargs) != BN_VALUE_DICT)) {
        s_drop (r, cls);
        s_drop (r, args);
        s_drop (r, kwargs);
        return s_fail (r, "%s",
                       kwargs ? "NEWOBJ_EX wants a tuple and a dict"
                              : "args must be a tuple");
    }
    if (reduce) {
        bn_value_t *known = s_reduce_known (r, cls, args);
        if (known) {
            int dropped = s_drop (r, cls);
            if (s_drop (r, args) || dropped) {
                bn_value_destroy (&known);
                return -1;
            }
            return s_push (r, known, depth);
        }
    }
    //  () is kept as NULL, as bn_value_new_object takes it.
    if (bn_value_size (args) == 0) {
        if (s_drop (r, args)) {
            s_drop (r, cls);
            s_drop (r, kwargs);
            return -1;
        }
        args = NULL;
    }
    if (kwargs && bn_value_size (kwargs) == 0) {
        if (s_drop (r, kwargs)) {
            s_drop (r, cls);
            s_drop (r, args);
            return -1;
        }
        kwargs = NULL;
    }
    bn_value_t *object = reduce ? bn_value_new_reduce (cls, args)
                                : bn_value_new_object (cls, args, NULL);
    if (object && kwargs)
        bn_value_object_swap_kwargs (object, kwargs);
    else
        bn_value_destroy (&kwargs);
    return s_push (r, object, depth);
}

static uint32_t
s_max (uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

static int
s_load_reduce (s_reader_t *r, int op)
{
    uint32_t dc = 0, da = 0, dk = 0;
    bn_value_t *kwargs = op == OP_NEWOBJ_EX ? s_pop (r, &dk) : NULL;
    if (op == OP_NEWOBJ_EX && !kwargs)
        return -1;
    bn_value_t *args = s_pop (r, &da);
    bn_value_t *cls = args ? s_pop (r, &dc) : NULL;
    if (!cls) {
        s_drop (r, args);
        s_drop (r, kwargs);
        return -1;
    }
    return s_push_object (r, cls, args, kwargs, op == OP_REDUCE,
                          1 + s_max (s_max (dc, da), dk));
}

//  INST and OBJ: class then args collected since the last MARK.
static int
s_load_inst (s_reader_t *r, int op)
{
    size_t mark = 0;
    if (op == OP_INST && s_read_global (r))
        return -1;
    bn_value_t *cls = NULL;
    uint32_t depth = 1;
    if (op == OP_INST) {
        cls = s_pop (r, &depth);
        if (!cls)
            return -1;
    }
    if (s_pop_mark (r, &mark)) {
        bn_value_destroy (&cls);
        return -1;
    }
    if (op == OP_OBJ) {
        if (r->size <= mark)
            return s_fail (r, "OBJ without a class");
        cls = r->stack[mark];
        depth = r->depths[mark];
        r->stack[mark] = NULL;
        mark++;
    }
    bn_value_t *args = bn_value_new_tuple ();
    uint32_t args_depth = 1;
    if (!args || s_move_items (r, mark, args, &args_depth)) {
        bn_value_destroy (&args);
        s_drop (r, cls);
        return s_fail (r, "out of memory");
    }
    if (op == OP_OBJ)
        r->size--;
    return s_push_object (r, cls, args, NULL, true,
                          1 + s_max (depth, args_depth));
}

static int
s_load_binary_str (s_reader_t *r, int op, size_t length_bytes)
{
    if (s_need (r, length_bytes))
        return -1;
    uint64_t size = s_le (r->p, length_bytes);
    if (op == OP_BINSTRING && (size & 0x80000000u))
        return s_fail (r, "negative length");
    r->p += length_bytes;
    if (s_need (r, size))
        return -1;
    const unsigned char *data = r->p;
    r->p += size;
    switch (op) {
    case OP_SHORT_BINUNICODE:
    case OP_BINUNICODE:
    case OP_BINUNICODE8:
        return s_push_str (r, data, size);
    case OP_BINSTRING:
    case OP_SHORT_BINSTRING:
        return s_push_string8 (r, data, size);
    default:
        return s_push (r, bn_value_new_bytes (data, size), 1);
    }
}

static int
s_load_long (s_reader_t *r, size_t length_bytes)
{
    if (s_need (r, length_bytes))
        return -1;
    uint64_t size = s_le (r->p, length_bytes);
    if (length_bytes == 4 && (size & 0x80000000u))
        return s_fail (r, "negative length");
    r->p += length_bytes;
    if (s_need (r, size))
        return -1;
    int64_t value;
    if (!s_long_le (r->p, size, &value))
        return s_fail (r, "int does not fit 64 bits");
    r->p += size;
    return s_push (r, bn_value_new_int (value), 1);
}

//  Protocol 0 INT and LONG: decimal text; INT "00"/"01" are False/True.
static int
s_load_text_int (s_reader_t *r, int op)
{
    const char *line = NULL;
    size_t size = 0;
    int64_t value;
    if (s_readline (r, &line, &size))
        return -1;
    if (op == OP_INT && size == 2 && line[0] == '0' && line[1] <= '1' &&
        line[1] >= '0')
        return s_push (r, bn_value_new_bool (line[1] == '1'), 1);
    if (op == OP_LONG && size > 0 && line[size - 1] == 'L')
        size--;
    if (!s_parse_int (line, size, &value))
        return s_fail (r, "bad or too large integer");
    return s_push (r, bn_value_new_int (value), 1);
}

static int
s_load_text_float (s_reader_t *r)
{
    const char *line = NULL;
    size_t size = 0;
    char buffer[512];
    if (s_readline (r, &line, &size))
        return -1;
    if (size == 0 || size >= sizeof (buffer))
        return s_fail (r, "bad float");
    memcpy (buffer, line, size);
    buffer[size] = 0;
    char *end;
    double value = strtod (buffer, &end);
    if (*end)
        return s_fail (r, "bad float");
    return s_push (r, bn_value_new_float (value), 1);
}

static int
s_load_binfloat (s_reader_t *r)
{
    if (s_need (r, 8))
        return -1;
    uint64_t bits = 0;
    for (size_t i = 0; i < 8; i++)
        bits = (bits << 8) | r->p[i];
    r->p += 8;
    double value;
    memcpy (&value, &bits, sizeof (value));
    return s_push (r, bn_value_new_float (value), 1);
}

static int
s_load_stack_global (s_reader_t *r)
{
    bn_value_t *name = s_pop (r, NULL);
    bn_value_t *module = name ? s_pop (r, NULL) : NULL;
    int rc = -1;
    if (module && (bn_value_type (module) != BN_VALUE_STR ||
                   bn_value_type (name) != BN_VALUE_STR))
        s_fail (r, "STACK_GLOBAL wants two str");
    else if (module)
        rc =
            s_push_global (r, bn_value_str (module), bn_value_str_size (module),
                           bn_value_str (name), bn_value_str_size (name));
    int dropped = s_drop (r, module);
    if (s_drop (r, name) || dropped)
        rc = -1;
    return rc;
}

static int
s_load_build (s_reader_t *r)
{
    uint32_t depth;
    size_t top = 0;
    bn_value_t *state = s_pop (r, &depth);
    if (!state)
        return -1;
    if (s_top (r, &top)) {
        s_drop (r, state);
        return -1;
    }
    bn_value_t *object = r->stack[top];
    if (bn_value_type (object) != BN_VALUE_OBJECT) {
        s_drop (r, state);
        return s_fail (r, "BUILD on a %s", bn_value_type_name (object));
    }
    if (s_drop (r, bn_value_object_swap_state (object, state)))
        return -1;
    if (depth + 1 > r->depths[top])
        r->depths[top] = depth + 1;
    return s_check_depth (r, r->depths[top]);
}

//  APPEND and SETITEM: one item or pair on top of the stack.
static int
s_load_append (s_reader_t *r, bool pair)
{
    size_t n = pair ? 2 : 1;
    if (r->size < s_fence (r) + n || r->size < n + 1)
        return s_fail (r, "stack underflow");
    return s_extend (r, r->size - n - 1, r->size - n, pair);
}

//  APPENDS, SETITEMS and ADDITEMS: items since the last MARK.
static int
s_load_appends (s_reader_t *r, int op)
{
    size_t mark = 0;
    if (s_pop_mark (r, &mark))
        return -1;
    if (mark == 0)
        return s_fail (r, "stack underflow");
    if (op != OP_ADDITEMS)
        return s_extend (r, mark - 1, mark, op == OP_SETITEMS);
    bn_value_t *set = r->stack[mark - 1];
    if (bn_value_type (set) != BN_VALUE_SET)
        return s_fail (r, "ADDITEMS on a %s", bn_value_type_name (set));
    uint32_t depth = r->depths[mark - 1];
    if (s_move_items (r, mark, set, &depth))
        return -1;
    r->depths[mark - 1] = depth;
    return 0;
}

static int
s_load_pop (s_reader_t *r)
{
    //  As CPython: a MARK on top of the stack is popped first.
    if (r->nmarks && r->marks[r->nmarks - 1] == r->size) {
        r->nmarks--;
        return 0;
    }
    bn_value_t *value = s_pop (r, NULL);
    return value ? s_drop (r, value) : -1;
}

static int
s_load_pop_mark (s_reader_t *r)
{
    size_t mark = 0;
    if (s_pop_mark (r, &mark))
        return -1;
    while (r->size > mark) {
        r->size--;
        bn_value_t *value = r->stack[r->size];
        r->stack[r->size] = NULL;
        if (s_drop (r, value))
            return -1;
    }
    return 0;
}

static int
s_load_mark (s_reader_t *r)
{
    if (r->nmarks == r->marks_cap) {
        size_t cap = 2 * r->marks_cap;
        size_t *marks = (size_t *)s_grow (r->marks, r->marks_inline,
                                          r->marks_cap, cap, sizeof (size_t));
        if (!marks)
            return s_fail (r, "out of memory");
        r->marks = marks;
        r->marks_cap = cap;
    }
    r->marks[r->nmarks++] = r->size;
    return 0;
}

//  One opcode; 1 at STOP (result left on the stack), 0 to go on, -1.
static int
s_step (s_reader_t *r)
{
    r->op_offset = (size_t)(r->p - r->start);
    if (s_need (r, 1))
        return -1;
    int op = *r->p++;
    size_t top = 0;
    switch (op) {
    case OP_PROTO:
        if (s_need (r, 1))
            return -1;
        if (*r->p > S_HIGHEST_PROTOCOL)
            return s_fail (r, "unsupported protocol %d", *r->p);
        r->p++;
        return 0;
    case OP_FRAME: {
        //  Frames only group reads; the content is parsed as it comes.
        if (s_need (r, 8))
            return -1;
        uint64_t size = s_le (r->p, 8);
        r->p += 8;
        return s_need (r, size);
    }
    case OP_STOP:
        if (s_top (r, &top))
            return -1;
        return 1;
    case OP_MARK:
        return s_load_mark (r);
    case OP_POP:
        return s_load_pop (r);
    case OP_POP_MARK:
        return s_load_pop_mark (r);
    case OP_DUP:
        if (s_top (r, &top))
            return -1;
        return s_push_copy (r, r->stack[top]);
    case OP_NONE:
        return s_push (r, bn_value_new_none (), 1);
    case OP_NEWTRUE:
    case OP_NEWFALSE:
        return s_push (r, bn_value_new_bool (op == OP_NEWTRUE), 1);
    case OP_BININT:
        if (s_need (r, 4))
            return -1;
        r->p += 4;
        return s_push (r, bn_value_new_int ((int32_t)s_le (r->p - 4, 4)), 1);
    case OP_BININT1:
        if (s_need (r, 1))
            return -1;
        r->p += 1;
        return s_push (r, bn_value_new_int (r->p[-1]), 1);
    case OP_BININT2:
        if (s_need (r, 2))
            return -1;
        r->p += 2;
        return s_push (r, bn_value_new_int ((int64_t)s_le (r->p - 2, 2)), 1);
    case OP_LONG1:
        return s_load_long (r, 1);
    case OP_LONG4:
        return s_load_long (r, 4);
    case OP_INT:
    case OP_LONG:
        return s_load_text_int (r, op);
    case OP_FLOAT:
        return s_load_text_float (r);
    case OP_BINFLOAT:
        return s_load_binfloat (r);
    case OP_SHORT_BINUNICODE:
    case OP_SHORT_BINBYTES:
    case OP_SHORT_BINSTRING:
        return s_load_binary_str (r, op, 1);
    case OP_BINUNICODE:
    case OP_BINBYTES:
    case OP_BINSTRING:
        return s_load_binary_str (r, op, 4);
    case OP_BINUNICODE8:
    case OP_BINBYTES8:
    case OP_BYTEARRAY8:
        return s_load_binary_str (r, op, 8);
    case OP_STRING:
        return s_load_string (r);
    case OP_UNICODE:
        return s_load_unicode (r);
    case OP_EMPTY_LIST:
        return s_push (r, bn_value_new_list (), 1);
    case OP_EMPTY_TUPLE:
        return s_push (r, bn_value_new_tuple (), 1);
    case OP_EMPTY_DICT:
        return s_push (r, bn_value_new_dict (), 1);
    case OP_EMPTY_SET:
        return s_push (r, bn_value_new_set (), 1);
    case OP_LIST:
        return s_load_marked (r, bn_value_new_list ());
    case OP_TUPLE:
        return s_load_marked (r, bn_value_new_tuple ());
    case OP_DICT:
        return s_load_marked (r, bn_value_new_dict ());
    case OP_FROZENSET:
        return s_load_marked (r, bn_value_new_set ());
    case OP_TUPLE1:
    case OP_TUPLE2:
    case OP_TUPLE3:
        return s_load_tuple_n (r, (size_t)(op - OP_TUPLE1 + 1));
    case OP_APPEND:
        return s_load_append (r, false);
    case OP_SETITEM:
        return s_load_append (r, true);
    case OP_APPENDS:
    case OP_SETITEMS:
    case OP_ADDITEMS:
        return s_load_appends (r, op);
    case OP_MEMOIZE:
        return s_memo_put (r, r->memo_count);
    case OP_BINPUT:
        if (s_need (r, 1))
            return -1;
        r->p++;
        return s_memo_put (r, r->p[-1]);
    case OP_LONG_BINPUT:
        if (s_need (r, 4))
            return -1;
        r->p += 4;
        return s_memo_put (r, (size_t)s_le (r->p - 4, 4));
    case OP_PUT: {
        size_t index;
        return s_line_index (r, &index) ? -1 : s_memo_put (r, index);
    }
    case OP_BINGET:
        if (s_need (r, 1))
            return -1;
        r->p++;
        return s_memo_get (r, r->p[-1]);
    case OP_LONG_BINGET:
        if (s_need (r, 4))
            return -1;
        r->p += 4;
        return s_memo_get (r, (size_t)s_le (r->p - 4, 4));
    case OP_GET: {
        size_t index;
        return s_line_index (r, &index) ? -1 : s_memo_get (r, index);
    }
    case OP_GLOBAL:
        return s_read_global (r);
    case OP_STACK_GLOBAL:
        return s_load_stack_global (r);
    case OP_REDUCE:
    case OP_NEWOBJ:
    case OP_NEWOBJ_EX:
        return s_load_reduce (r, op);
    case OP_INST:
    case OP_OBJ:
        return s_load_inst (r, op);
    case OP_BUILD:
        return s_load_build (r);
    case OP_READONLY_BUFFER:
        return s_top (r, &top);
    case OP_NEXT_BUFFER:
        return s_fail (r, "out-of-band buffers (NEXT_BUFFER) not supported");
    case OP_PERSID:
    case OP_BINPERSID:
        return s_fail (r, "persistent ids not supported");
    case OP_EXT1:
    case OP_EXT2:
    case OP_EXT4:
        return s_fail (r, "extension registry not supported");
    default:
        return s_fail (r, "unknown opcode 0x%02x", op);
    }
}

bn_value_t *
bn_pickle_decode (const void *data, size_t size, char *err, size_t errsize)
{
    assert (data || size == 0);
    s_reader_t reader = {0};
    s_reader_t *r = &reader;
    r->start = r->p = (const unsigned char *)(data ? data : "");
    r->end = r->p + size;
    r->err = err;
    r->errsize = errsize;
    r->stack = r->stack_inline;
    r->depths = r->depths_inline;
    r->cap = S_INLINE_STACK;
    r->marks = r->marks_inline;
    r->marks_cap = S_INLINE_MARKS;
    r->memo = r->memo_inline;
    r->memo_cap = S_INLINE_MEMO;
    //  Python's memo indices count memoized objects, each at least one
    //  byte of pickle, so larger ones are hostile.
    r->memo_limit = size + 256;
    r->budget = s_copy_budget (size);
    if (err && errsize)
        err[0] = 0;
    r->spill = bn_value_new_list ();
    bn_value_t *result = NULL;
    if (!r->spill)
        s_fail (r, "out of memory");
    else {
        int rc;
        while ((rc = s_step (r)) == 0)
            ;
        if (rc == 1) {
            result = r->stack[r->size - 1];
            r->stack[r->size - 1] = NULL;
        }
    }
    for (size_t i = 0; i < r->size; i++)
        bn_value_destroy (&r->stack[i]);
    s_release (r->stack, r->stack_inline);
    s_release (r->depths, r->depths_inline);
    s_release (r->marks, r->marks_inline);
    s_release (r->memo, r->memo_inline);
    bn_value_destroy (&r->spill);
    return result;
}

//  --------------------------------------------------------------------
//  Writer

struct _bn_pickle_writer_t {
    unsigned char *data;
    size_t size;
    size_t cap;
    size_t frame_start; //  SIZE_MAX when no frame is open
    bool framing;
    bool failed;
    size_t memo; //  memo entries written
    //  The container whose items item_fn may write otherwise
    const bn_value_t *item_parent;
    bn_pickle_item_fn *item_fn;
    void *item_arg;
    //  Values written once and then referred to by memo index
    const bn_value_t *shared[2];
    size_t shared_memo[2];
};

typedef struct _bn_pickle_writer_t s_writer_t;

static void s_save (s_writer_t *w, const bn_value_t *value);

static void
s_reserve (s_writer_t *w, size_t n)
{
    if (w->failed || w->cap - w->size >= n)
        return;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->size < n) {
        if (cap > SIZE_MAX / 2) {
            w->failed = true;
            return;
        }
        cap *= 2;
    }
    unsigned char *data = (unsigned char *)realloc (w->data, cap);
    if (!data) {
        w->failed = true;
        return;
    }
    w->data = data;
    w->cap = cap;
}

static void
s_write (s_writer_t *w, const void *data, size_t n)
{
    if (w->framing && w->frame_start == SIZE_MAX) {
        s_reserve (w, S_FRAME_HEADER);
        if (w->failed)
            return;
        w->frame_start = w->size;
        w->size += S_FRAME_HEADER;
    }
    s_reserve (w, n);
    if (w->failed || n == 0)
        return;
    memcpy (w->data + w->size, data, n);
    w->size += n;
}

static void
s_write_op (s_writer_t *w, int op)
{
    unsigned char byte = (unsigned char)op;
    s_write (w, &byte, 1);
}

static void
s_put_le (unsigned char *out, uint64_t value, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(value >> (8 * i));
}

//  Close the open frame: write its header, or drop it if tiny.
static void
s_commit_frame (s_writer_t *w)
{
    if (!w->framing || w->frame_start == SIZE_MAX || w->failed)
        return;
    size_t length = w->size - w->frame_start - S_FRAME_HEADER;
    unsigned char *header = w->data + w->frame_start;
    if (length >= S_FRAME_MIN) {
        header[0] = OP_FRAME;
        s_put_le (header + 1, length, 8);
    } else {
        memmove (header, header + S_FRAME_HEADER, length);
        w->size -= S_FRAME_HEADER;
    }
    w->frame_start = SIZE_MAX;
}

//  Python checks before saving each object whether the frame is full.
static void
s_boundary (s_writer_t *w)
{
    if (w->framing && w->frame_start != SIZE_MAX && !w->failed &&
        w->size - w->frame_start - S_FRAME_HEADER >= S_FRAME_TARGET)
        s_commit_frame (w);
}

//  Opcode header and payload; a payload of a frame's size goes unframed.
static void
s_write_payload (s_writer_t *w, const unsigned char *header, size_t hsize,
                 const void *data, size_t size)
{
    if (size >= S_FRAME_TARGET) {
        s_commit_frame (w);
        bool framing = w->framing;
        w->framing = false;
        s_write (w, header, hsize);
        s_write (w, data, size);
        w->framing = framing;
    } else {
        s_write (w, header, hsize);
        s_write (w, data, size);
    }
}

static void
s_memoize (s_writer_t *w, const bn_value_t *value)
{
    for (size_t i = 0; i < 2; i++)
        if (value && w->shared[i] == value)
            w->shared_memo[i] = w->memo;
    s_write_op (w, OP_MEMOIZE);
    w->memo++;
}

static void
s_save_sized (s_writer_t *w, const bn_value_t *value, bool str,
              const void *data, size_t size)
{
    unsigned char header[9];
    size_t hsize;
    if (size <= 0xff) {
        header[0] = str ? OP_SHORT_BINUNICODE : OP_SHORT_BINBYTES;
        header[1] = (unsigned char)size;
        hsize = 2;
    } else if (size <= 0xffffffffu) {
        header[0] = str ? OP_BINUNICODE : OP_BINBYTES;
        s_put_le (header + 1, size, 4);
        hsize = 5;
    } else {
        header[0] = str ? OP_BINUNICODE8 : OP_BINBYTES8;
        s_put_le (header + 1, size, 8);
        hsize = 9;
    }
    s_write_payload (w, header, hsize, data, size);
    s_memoize (w, value);
}

static void
s_save_cstr (s_writer_t *w, const char *text)
{
    s_boundary (w);
    if (!bn_utf8_valid ((const unsigned char *)text, strlen (text)))
        w->failed = true;
    s_save_sized (w, NULL, true, text, strlen (text));
}

static void
s_save_int (s_writer_t *w, int64_t value)
{
    unsigned char out[11];
    if (value >= 0 && value <= 0xff) {
        out[0] = OP_BININT1;
        out[1] = (unsigned char)value;
        s_write (w, out, 2);
    } else if (value >= 0 && value <= 0xffff) {
        out[0] = OP_BININT2;
        s_put_le (out + 1, (uint64_t)value, 2);
        s_write (w, out, 3);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        out[0] = OP_BININT;
        s_put_le (out + 1, (uint64_t)value, 4);
        s_write (w, out, 5);
    } else {
        //  Python's LONG1: the fewest bytes of two's complement.
        uint64_t bits = (uint64_t)value;
        uint64_t magnitude = value < 0 ? ~bits + 1 : bits;
        size_t nbits = 64 - (size_t)__builtin_clzll (magnitude);
        size_t n = nbits / 8 + 1;
        unsigned char bytes[9];
        s_put_le (bytes, bits, 8);
        bytes[8] = value < 0 ? 0xff : 0x00;
        if (value < 0 && n > 1 && bytes[n - 1] == 0xff && (bytes[n - 2] & 0x80))
            n--;
        out[0] = OP_LONG1;
        out[1] = (unsigned char)n;
        memcpy (out + 2, bytes, n);
        s_write (w, out, 2 + n);
    }
}

static void
s_save_float (s_writer_t *w, double value)
{
    uint64_t bits;
    memcpy (&bits, &value, sizeof (bits));
    unsigned char out[9];
    out[0] = OP_BINFLOAT;
    for (size_t i = 0; i < 8; i++)
        out[1 + i] = (unsigned char)(bits >> (56 - 8 * i));
    s_write (w, out, 9);
}

//  Lists, dicts and sets Python can hash as dict keys and set items.
static bool
s_hashable (const bn_value_t *value)
{
    bn_value_type_t type = bn_value_type (value);
    if (type == BN_VALUE_LIST || type == BN_VALUE_DICT || type == BN_VALUE_SET)
        return false;
    if (type == BN_VALUE_TUPLE) {
        size_t size = bn_value_size (value);
        for (size_t i = 0; i < size; i++)
            if (!s_hashable (bn_value_item (value, i)))
                return false;
    }
    return true;
}

//  An item of a container: what the writer's item_fn says for the
//  container it was given, else the item itself.
static void
s_save_item (s_writer_t *w, const bn_value_t *parent, const bn_value_t *item,
             const bn_value_t *key)
{
    const bn_value_t *instead = w->item_fn && parent == w->item_parent
                                    ? w->item_fn (w->item_arg, item, key)
                                    : NULL;
    s_save (w, instead ? instead : item);
}

//  Items in batches as Python's batch_list_exact, or batch_list for an
//  object's items (`iterated`), which writes a last lone item with APPEND.
static void
s_save_list_items (s_writer_t *w, const bn_value_t *list, bool iterated)
{
    size_t size = bn_value_size (list);
    if (size == 0)
        return;
    if (size == 1) {
        s_save_item (w, list, bn_value_item (list, 0), NULL);
        s_write_op (w, OP_APPEND);
        return;
    }
    size_t done = 0;
    while (done < size) {
        if (iterated && size - done == 1) {
            s_save_item (w, list, bn_value_item (list, done++), NULL);
            s_write_op (w, OP_APPEND);
            break;
        }
        s_write_op (w, OP_MARK);
        for (size_t n = 0; n < S_BATCH && done < size; n++, done++)
            s_save_item (w, list, bn_value_item (list, done), NULL);
        s_write_op (w, OP_APPENDS);
    }
}

//  Pairs in batches as Python's batch_dict_exact, which ends with an empty
//  batch when the size is a multiple of the batch, or batch_dict.
static void
s_save_dict_items (s_writer_t *w, const bn_value_t *dict, bool iterated)
{
    size_t size = bn_value_size (dict);
    for (size_t i = 0; i < size; i++)
        if (!s_hashable (bn_value_dict_key (dict, i)))
            w->failed = true;
    if (size == 0 || w->failed)
        return;
    if (size == 1) {
        s_save (w, bn_value_dict_key (dict, 0));
        s_save_item (w, dict, bn_value_dict_value (dict, 0),
                     bn_value_dict_key (dict, 0));
        s_write_op (w, OP_SETITEM);
        return;
    }
    size_t done = 0;
    size_t n;
    do {
        if (iterated && size - done == 1) {
            s_save (w, bn_value_dict_key (dict, done));
            s_save (w, bn_value_dict_value (dict, done));
            s_write_op (w, OP_SETITEM);
            break;
        }
        if (iterated && done == size)
            break;
        s_write_op (w, OP_MARK);
        for (n = 0; n < S_BATCH && done < size; n++, done++) {
            s_save (w, bn_value_dict_key (dict, done));
            s_save_item (w, dict, bn_value_dict_value (dict, done),
                         bn_value_dict_key (dict, done));
        }
        s_write_op (w, OP_SETITEMS);
    } while (n == S_BATCH);
}

static void
s_save_set (s_writer_t *w, const bn_value_t *set)
{
    s_write_op (w, OP_EMPTY_SET);
    s_memoize (w, set);
    size_t size = bn_value_size (set);
    for (size_t i = 0; i < size; i++)
        if (!s_hashable (bn_value_item (set, i)))
            w->failed = true;
    if (size == 0 || w->failed)
        return;
    size_t done = 0;
    size_t n;
    do {
        s_write_op (w, OP_MARK);
        for (n = 0; n < S_BATCH && done < size; n++, done++)
            s_save (w, bn_value_item (set, done));
        s_write_op (w, OP_ADDITEMS);
    } while (n == S_BATCH);
}

static void
s_save_tuple (s_writer_t *w, const bn_value_t *tuple)
{
    size_t size = bn_value_size (tuple);
    if (size == 0) {
        s_write_op (w, OP_EMPTY_TUPLE);
        return;
    }
    if (size > 3)
        s_write_op (w, OP_MARK);
    for (size_t i = 0; i < size; i++)
        s_save_item (w, tuple, bn_value_item (tuple, i), NULL);
    s_write_op (w, size > 3 ? OP_TUPLE : OP_TUPLE1 + (int)size - 1);
    s_memoize (w, tuple);
}

static void
s_save_object (s_writer_t *w, const bn_value_t *object)
{
    const bn_value_t *args = bn_value_object_args (object);
    const bn_value_t *items = bn_value_object_items (object);
    const bn_value_t *kwargs = bn_value_object_kwargs (object);
    const bn_value_t *state = bn_value_object_state (object);
    s_save (w, bn_value_object_class (object));
    if (args)
        s_save (w, args);
    else {
        s_boundary (w);
        s_write_op (w, OP_EMPTY_TUPLE);
    }
    if (kwargs && !bn_value_object_is_reduce (object))
        s_save (w, kwargs);
    s_write_op (w, bn_value_object_is_reduce (object) ? OP_REDUCE
                   : kwargs                           ? OP_NEWOBJ_EX
                                                      : OP_NEWOBJ);
    s_memoize (w, object);
    if (items && bn_value_type (items) == BN_VALUE_LIST)
        s_save_list_items (w, items, true);
    else if (items && bn_value_type (items) == BN_VALUE_DICT)
        s_save_dict_items (w, items, true);
    if (state) {
        s_save (w, state);
        s_write_op (w, OP_BUILD);
    }
}

static void
s_save (s_writer_t *w, const bn_value_t *value)
{
    s_boundary (w);
    if (w->failed)
        return;
    for (size_t i = 0; i < 2; i++) {
        if (value == w->shared[i] && w->shared_memo[i] != SIZE_MAX) {
            size_t index = w->shared_memo[i];
            unsigned char out[5];
            if (index < 256) {
                out[0] = OP_BINGET;
                out[1] = (unsigned char)index;
                s_write (w, out, 2);
            } else {
                out[0] = OP_LONG_BINGET;
                s_put_le (out + 1, index, 4);
                s_write (w, out, 5);
            }
            return;
        }
    }
    switch (bn_value_type (value)) {
    case BN_VALUE_NONE:
        s_write_op (w, OP_NONE);
        break;
    case BN_VALUE_BOOL:
        s_write_op (w, bn_value_bool (value) ? OP_NEWTRUE : OP_NEWFALSE);
        break;
    case BN_VALUE_INT:
        s_save_int (w, bn_value_int (value));
        break;
    case BN_VALUE_FLOAT:
        s_save_float (w, bn_value_float (value));
        break;
    case BN_VALUE_STR:
        if (!bn_utf8_valid ((const unsigned char *)bn_value_str (value),
                            bn_value_str_size (value)))
            w->failed = true;
        s_save_sized (w, value, true, bn_value_str (value),
                      bn_value_str_size (value));
        break;
    case BN_VALUE_BYTES:
        s_save_sized (w, value, false, bn_value_bytes_data (value),
                      bn_value_bytes_size (value));
        break;
    case BN_VALUE_LIST:
        s_write_op (w, OP_EMPTY_LIST);
        s_memoize (w, value);
        s_save_list_items (w, value, false);
        break;
    case BN_VALUE_TUPLE:
        s_save_tuple (w, value);
        break;
    case BN_VALUE_DICT:
        s_write_op (w, OP_EMPTY_DICT);
        s_memoize (w, value);
        s_save_dict_items (w, value, false);
        break;
    case BN_VALUE_SET:
        s_save_set (w, value);
        break;
    case BN_VALUE_GLOBAL:
        s_save_cstr (w, bn_value_global_module (value));
        s_save_cstr (w, bn_value_global_name (value));
        s_write_op (w, OP_STACK_GLOBAL);
        s_memoize (w, value);
        break;
    case BN_VALUE_OBJECT:
        s_save_object (w, value);
        break;
    }
}

static void
s_writer_init (s_writer_t *w)
{
    memset (w, 0, sizeof (*w));
    w->frame_start = SIZE_MAX;
    w->shared_memo[0] = w->shared_memo[1] = SIZE_MAX;
    unsigned char proto[2] = {OP_PROTO, 4};
    s_write (w, proto, 2);
    w->framing = true;
}

//  STOP, last frame; returns the pickle (the writer gives it up) or NULL.
static void *
s_writer_finish (s_writer_t *w, size_t *size_p)
{
    s_write_op (w, OP_STOP);
    s_commit_frame (w);
    if (w->failed) {
        free (w->data);
        w->data = NULL;
        return NULL;
    }
    void *data = w->data;
    *size_p = w->size;
    w->data = NULL;
    return data;
}

void *
bn_pickle_encode (const bn_value_t *value, size_t *size_p)
{
    assert (value);
    assert (size_p);
    s_writer_t writer;
    s_writer_init (&writer);
    s_save (&writer, value);
    return s_writer_finish (&writer, size_p);
}

bn_pickle_writer_t *
bn_pickle_writer_new (void)
{
    bn_pickle_writer_t *self = malloc (sizeof *self);
    if (self)
        s_writer_init (self);
    return self;
}

void
bn_pickle_writer_destroy (bn_pickle_writer_t **self_p)
{
    assert (self_p);
    bn_pickle_writer_t *self = *self_p;
    if (self) {
        free (self->data);
        free (self);
        *self_p = NULL;
    }
}

void
bn_pickle_writer_share (bn_pickle_writer_t *self, const bn_value_t *value)
{
    assert (self);
    assert (value);
    size_t i = self->shared[0] ? 1 : 0;
    assert (!self->shared[i]);
    self->shared[i] = value;
}

void
bn_pickle_writer_set_items (bn_pickle_writer_t *self,
                            const bn_value_t *container, bn_pickle_item_fn *fn,
                            void *arg)
{
    assert (self);
    self->item_parent = container;
    self->item_fn = fn;
    self->item_arg = arg;
}

void
bn_pickle_writer_save (bn_pickle_writer_t *self, const bn_value_t *value)
{
    assert (self);
    assert (value);
    s_save (self, value);
}

void *
bn_pickle_writer_finish (bn_pickle_writer_t *self, size_t *size_p)
{
    assert (self);
    assert (size_p);
    return s_writer_finish (self, size_p);
}

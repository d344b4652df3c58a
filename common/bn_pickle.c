/*  bn_pickle: the pickle subset C peers read and write, and IPython
    Parallel's serialize_object / apply buffers on top of it.  */
#include "bn_pickle.h"
#include "bn_error.h"

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

#define S_CANNING "ipyparallel.serialize.canning"
#define S_FRAME_HEADER 9     //  FRAME opcode and 8-byte length
#define S_FRAME_MIN 4        //  smaller frames are not written
#define S_FRAME_TARGET 65536 //  frames end after passing this size
#define S_BATCH 1000         //  items per APPENDS/SETITEMS/ADDITEMS
#define S_NODE_COST 64       //  memory a copied value costs beyond data
#define S_HIGHEST_PROTOCOL 5

//  Check UTF-8 as Python's decoder with surrogatepass accepts it.
static bool
s_utf8_valid (const unsigned char *p, size_t size)
{
    size_t i = 0;
    while (i < size) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t length;
        uint32_t code;
        if (c >= 0xc2 && c <= 0xdf) {
            length = 2;
            code = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            length = 3;
            code = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            length = 4;
            code = c & 0x07;
        } else
            return false;
        if (size - i < length)
            return false;
        for (size_t k = 1; k < length; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            code = (code << 6) | (p[i + k] & 0x3f);
        }
        if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
            code > 0x10ffff)
            return false;
        i += length;
    }
    return true;
}

//  Append code point `code` as UTF-8 (surrogates too) to out; returns bytes.
static size_t
s_utf8_put (uint32_t code, unsigned char *out)
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

static bool
s_is_canned (const bn_value_t *value)
{
    if (bn_value_type (value) != BN_VALUE_OBJECT)
        return false;
    const bn_value_t *cls = bn_value_object_class (value);
    return bn_value_type (cls) == BN_VALUE_GLOBAL &&
           strcmp (bn_value_global_module (cls), S_CANNING) == 0;
}

//  The `buffers` list in a canned object's state, or NULL.
static bn_value_t *
s_canned_buffers (const bn_value_t *value)
{
    if (!s_is_canned (value))
        return NULL;
    const bn_value_t *state = bn_value_object_state (value);
    if (!state || bn_value_type (state) != BN_VALUE_DICT)
        return NULL;
    bn_value_t *buffers = bn_value_dict_get (state, "buffers");
    if (!buffers || bn_value_type (buffers) != BN_VALUE_LIST)
        return NULL;
    return buffers;
}

//  --------------------------------------------------------------------
//  Reader

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
} s_reader_t;

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
        size_t cap = r->cap ? 2 * r->cap : 32;
        bn_value_t **stack =
            (bn_value_t **)realloc (r->stack, cap * sizeof (bn_value_t *));
        if (stack)
            r->stack = stack;
        uint32_t *depths =
            (uint32_t *)realloc (r->depths, cap * sizeof (uint32_t));
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

//  Push a copy of `value` (the memo's or the top's), charged to the budget.
static int
s_push_copy (s_reader_t *r, const bn_value_t *value)
{
    size_t cost = 0;
    uint32_t depth = 0;
    if (s_measure (value, r->budget, &cost, &depth))
        return s_fail (r, "memo references copy more than the budget");
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
        size_t cap = r->memo_cap ? 2 * r->memo_cap : 64;
        while (cap <= index)
            cap *= 2;
        if (cap > r->memo_limit)
            cap = r->memo_limit;
        bn_value_t **memo =
            (bn_value_t **)realloc (r->memo, cap * sizeof (bn_value_t *));
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
    if (!s_utf8_valid (data, size))
        return s_fail (r, "str is not UTF-8");
    return s_push (r, bn_value_new_strn ((const char *)data, size), 1);
}

//  A protocol 0/1 8-bit string: str when it is UTF-8, else bytes.
static int
s_push_string8 (s_reader_t *r, const unsigned char *data, size_t size)
{
    if (s_utf8_valid (data, size))
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
            n += s_utf8_put (*p++, out + n);
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
        n += s_utf8_put (code, out + n);
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
    if (!s_utf8_valid ((const unsigned char *)module, module_size) ||
        !s_utf8_valid ((const unsigned char *)name, name_size) ||
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
        size_t cap = r->marks_cap ? 2 * r->marks_cap : 16;
        size_t *marks = (size_t *)realloc (r->marks, cap * sizeof (size_t));
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
    //  Python's memo indices count memoized objects, each at least one
    //  byte of pickle, so larger ones are hostile.
    r->memo_limit = size + 256;
    r->budget = BN_PICKLE_COPY_BUDGET;
    r->budget +=
        size > (SIZE_MAX - r->budget) / 16 ? SIZE_MAX - r->budget : 16 * size;
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
    free (r->stack);
    free (r->depths);
    free (r->marks);
    free (r->memo);
    bn_value_destroy (&r->spill);
    return result;
}

//  --------------------------------------------------------------------
//  Writer

typedef struct {
    const bn_value_t *value; //  bytes sent out of band
    const bn_value_t *key;   //  their dict key, for Python's sorted order
} s_oob_t;

typedef struct {
    unsigned char *data;
    size_t size;
    size_t cap;
    size_t frame_start; //  SIZE_MAX when no frame is open
    bool framing;
    bool failed;
    size_t memo;               //  memo entries written
    const bn_value_t *extract; //  the top value, when its big bytes items
                               //  go out of band
    s_oob_t *oob;
    size_t noob;
    size_t oob_cap;
    //  Values written once and then referred to by memo index, as Python
    //  does for the class and key it meets again in each CannedBytes.
    const bn_value_t *shared[2];
    size_t shared_memo[2];
    bn_value_t *canned; //  the CannedBytes written for out-of-band bytes
} s_writer_t;

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
    if (!s_utf8_valid ((const unsigned char *)text, strlen (text)))
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

//  What ipyparallel pickles for bytes sent out of band: CannedBytes with
//  state {'buffers': [None]}.
static void
s_save_canned_bytes (s_writer_t *w)
{
    if (!w->canned) {
        bn_value_t *cls = bn_value_new_global (S_CANNING, "CannedBytes");
        bn_value_t *key = bn_value_new_str ("buffers");
        bn_value_t *buffers = bn_value_new_list ();
        bn_value_t *state = bn_value_new_dict ();
        if (!cls || !key || !buffers || !state ||
            bn_value_append (buffers, bn_value_new_none ())) {
            bn_value_destroy (&cls);
            bn_value_destroy (&key);
            bn_value_destroy (&buffers);
            bn_value_destroy (&state);
            w->failed = true;
            return;
        }
        w->shared[0] = cls;
        w->shared[1] = key;
        if (bn_value_dict_set (state, key, buffers)) {
            bn_value_destroy (&cls);
            bn_value_destroy (&state);
            w->failed = true;
            return;
        }
        w->canned = bn_value_new_object (cls, NULL, state);
        if (!w->canned) {
            w->failed = true;
            return;
        }
    }
    s_save (w, w->canned);
}

//  An item of the top value; when serializing, its big bytes go out of
//  band.

static void
s_save_item (s_writer_t *w, const bn_value_t *parent, const bn_value_t *item,
             const bn_value_t *key)
{
    if (w->extract == parent && bn_value_type (item) == BN_VALUE_BYTES &&
        bn_value_bytes_size (item) > BN_SERIALIZE_BUFFER_THRESHOLD) {
        if (w->noob == w->oob_cap) {
            size_t cap = w->oob_cap ? 2 * w->oob_cap : 8;
            s_oob_t *oob = (s_oob_t *)realloc (w->oob, cap * sizeof (s_oob_t));
            if (!oob) {
                w->failed = true;
                return;
            }
            w->oob = oob;
            w->oob_cap = cap;
        }
        w->oob[w->noob].value = item;
        w->oob[w->noob].key = key;
        w->noob++;
        s_save_canned_bytes (w);
    } else
        s_save (w, item);
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
        if (!s_utf8_valid ((const unsigned char *)bn_value_str (value),
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
    bn_value_destroy (&w->canned);
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
    void *data = s_writer_finish (&writer, size_p);
    free (writer.oob);
    return data;
}

//  --------------------------------------------------------------------
//  serialize_object, deserialize_object and apply buffers

typedef struct {
    void *data;
    size_t size;
    bool owned; //  a malloc'd pickle, else bytes borrowed from a value
} s_frame_t;

typedef struct {
    s_frame_t *frames;
    size_t size;
    size_t cap;
} s_frames_t;

static int
s_frames_add (s_frames_t *self, void *data, size_t size, bool owned)
{
    if (self->size == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 8;
        s_frame_t *frames =
            (s_frame_t *)realloc (self->frames, cap * sizeof (s_frame_t));
        if (!frames) {
            if (owned)
                free (data);
            return -1;
        }
        self->frames = frames;
        self->cap = cap;
    }
    self->frames[self->size].data = data;
    self->frames[self->size].size = size;
    self->frames[self->size].owned = owned;
    self->size++;
    return 0;
}

//  Move all frames of `from` to the end of `self`.
static int
s_frames_move (s_frames_t *self, s_frames_t *from)
{
    for (size_t i = 0; i < from->size; i++) {
        s_frame_t *frame = &from->frames[i];
        bool owned = frame->owned;
        frame->owned = false;
        if (s_frames_add (self, frame->data, frame->size, owned))
            return -1;
    }
    return 0;
}

static void
s_frames_clear (s_frames_t *self)
{
    for (size_t i = 0; i < self->size; i++)
        if (self->frames[i].owned)
            free (self->frames[i].data);
    free (self->frames);
    memset (self, 0, sizeof (*self));
}

static zmsg_t *
s_frames_to_zmsg (s_frames_t *self)
{
    zmsg_t *msg = zmsg_new ();
    for (size_t i = 0; msg && i < self->size; i++)
        if (zmsg_addmem (msg, self->frames[i].data, self->frames[i].size))
            zmsg_destroy (&msg);
    s_frames_clear (self);
    return msg;
}

static int
s_frames_to_msg (s_frames_t *self, bn_msg_t *msg)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < self->size; i++) {
        s_frame_t *frame = &self->frames[i];
        if (frame->owned) {
            //  The message takes the pickle, even when it fails.
            frame->owned = false;
            rc = bn_msg_add_buffer_owned (msg, frame->data, frame->size);
        } else
            rc = bn_msg_add_buffer (msg, frame->data, frame->size);
    }
    s_frames_clear (self);
    return rc;
}

//  Python's order of two dict keys of one kind (see s_keys_sortable).
static int
s_key_compare (const bn_value_t *a, const bn_value_t *b)
{
    bn_value_type_t ta = bn_value_type (a);
    bn_value_type_t tb = bn_value_type (b);
    if ((ta == BN_VALUE_STR || ta == BN_VALUE_BYTES) && ta == tb) {
        //  UTF-8 byte order is code point order.
        bool str = ta == BN_VALUE_STR;
        const void *pa =
            str ? (const void *)bn_value_str (a) : bn_value_bytes_data (a);
        const void *pb =
            str ? (const void *)bn_value_str (b) : bn_value_bytes_data (b);
        size_t sa = str ? bn_value_str_size (a) : bn_value_bytes_size (a);
        size_t sb = str ? bn_value_str_size (b) : bn_value_bytes_size (b);
        int cmp = memcmp (pa, pb, sa < sb ? sa : sb);
        if (cmp)
            return cmp;
        return sa < sb ? -1 : sa > sb;
    }
    if (ta != BN_VALUE_FLOAT && tb != BN_VALUE_FLOAT) {
        int64_t ia = bn_value_int (a), ib = bn_value_int (b);
        return ia < ib ? -1 : ia > ib;
    }
    double da = bn_value_float (a), db = bn_value_float (b);
    return da < db ? -1 : da > db;
}

//  Whether Python's sorted() accepts these dict keys: all str, all bytes
//  or all numbers (and bools), or fewer than two.
static bool
s_keys_sortable (const bn_value_t *dict)
{
    size_t size = bn_value_size (dict);
    int kind = -1;
    for (size_t i = 0; i < size && size > 1; i++) {
        bn_value_type_t type = bn_value_type (bn_value_dict_key (dict, i));
        int k = type == BN_VALUE_STR     ? 0
                : type == BN_VALUE_BYTES ? 1
                : type == BN_VALUE_INT || type == BN_VALUE_BOOL ||
                        type == BN_VALUE_FLOAT
                    ? 2
                    : 3;
        if (k == 3 || (kind >= 0 && k != kind))
            return false;
        kind = k;
    }
    return true;
}

//  A dict whose keys Python cannot sort (deserialize_object sorts a
//  top-level dict's keys) travels in a CannedObject that uncans to it.
static void
s_save_wrapped (s_writer_t *w, const bn_value_t *dict)
{
    bn_value_t *cls = bn_value_new_global (S_CANNING, "CannedObject");
    if (!cls) {
        w->failed = true;
        return;
    }
    s_boundary (w);
    s_save (w, cls);
    s_boundary (w);
    s_write_op (w, OP_EMPTY_TUPLE);
    s_write_op (w, OP_NEWOBJ);
    s_memoize (w, NULL);
    s_boundary (w);
    s_write_op (w, OP_EMPTY_DICT);
    s_memoize (w, NULL);
    s_write_op (w, OP_MARK);
    s_save_cstr (w, "keys");
    s_boundary (w);
    s_write_op (w, OP_EMPTY_LIST);
    s_memoize (w, NULL);
    s_save_cstr (w, "obj");
    s_save (w, dict);
    s_save_cstr (w, "hook");
    s_boundary (w);
    s_write_op (w, OP_NONE);
    s_save_cstr (w, "buffers");
    s_boundary (w);
    s_write_op (w, OP_EMPTY_LIST);
    s_memoize (w, NULL);
    s_write_op (w, OP_SETITEMS);
    s_write_op (w, OP_BUILD);
    bn_value_destroy (&cls);
}

//  serialize_object: the pickle, then bytes sent out of band.
static int
s_serialize (const bn_value_t *value, s_frames_t *frames)
{
    assert (value);
    s_writer_t w;
    s_writer_init (&w);
    bn_value_type_t type = bn_value_type (value);
    size_t size = bn_value_size (value);
    if (type == BN_VALUE_BYTES &&
        bn_value_bytes_size (value) > BN_SERIALIZE_BUFFER_THRESHOLD) {
        w.oob = (s_oob_t *)calloc (1, sizeof (s_oob_t));
        if (w.oob) {
            w.oob[0].value = value;
            w.noob = w.oob_cap = 1;
        } else
            w.failed = true;
        s_save_canned_bytes (&w);
    } else if ((type == BN_VALUE_LIST || type == BN_VALUE_TUPLE ||
                type == BN_VALUE_DICT) &&
               size < BN_SERIALIZE_ITEM_THRESHOLD) {
        if (type == BN_VALUE_DICT && !s_keys_sortable (value))
            s_save_wrapped (&w, value);
        else {
            w.extract = value;
            s_save (&w, value);
        }
    } else
        s_save (&w, value);

    size_t pickle_size;
    void *pickle = s_writer_finish (&w, &pickle_size);
    //  The stock deserializer fills None slots in sorted key order.
    for (size_t i = 1; type == BN_VALUE_DICT && i < w.noob; i++) {
        s_oob_t entry = w.oob[i];
        size_t j = i;
        for (; j > 0 && s_key_compare (w.oob[j - 1].key, entry.key) > 0; j--)
            w.oob[j] = w.oob[j - 1];
        w.oob[j] = entry;
    }
    int rc = pickle ? s_frames_add (frames, pickle, pickle_size, true) : -1;
    for (size_t i = 0; rc == 0 && i < w.noob; i++)
        rc = s_frames_add (frames, (void *)bn_value_bytes_data (w.oob[i].value),
                           bn_value_bytes_size (w.oob[i].value), false);
    free (w.oob);
    return rc;
}

zmsg_t *
bn_serialize_object (const bn_value_t *value)
{
    s_frames_t frames = {0};
    if (s_serialize (value, &frames)) {
        s_frames_clear (&frames);
        return NULL;
    }
    return s_frames_to_zmsg (&frames);
}

int
bn_serialize_object_add (bn_msg_t *msg, const bn_value_t *value)
{
    assert (msg);
    s_frames_t frames = {0};
    if (s_serialize (value, &frames)) {
        s_frames_clear (&frames);
        return -1;
    }
    return s_frames_to_msg (&frames, msg);
}

//  _restore_buffers: fill a canned object's None buffers from the frames.
static int
s_restore (bn_value_t *value, const bn_bytes_t *frames, size_t nframes,
           size_t *next, char *err, size_t errsize)
{
    bn_value_t *buffers = s_canned_buffers (value);
    size_t size = buffers ? bn_value_size (buffers) : 0;
    for (size_t i = 0; i < size; i++) {
        if (bn_value_type (bn_value_item (buffers, i)) != BN_VALUE_NONE)
            continue;
        if (*next >= nframes) {
            bn_error_set (err, errsize,
                          "canned object wants more buffers than were sent");
            return -1;
        }
        const bn_bytes_t *frame = &frames[(*next)++];
        bn_value_t *data = bn_value_new_bytes (frame->data, frame->size);
        if (!data) {
            bn_error_set (err, errsize, "out of memory");
            return -1;
        }
        bn_value_t *old = bn_value_swap_item (buffers, i, data);
        bn_value_destroy (&old);
    }
    return 0;
}

//  uncan: a CannedBytes or CannedMemoryView gives its bytes (returned, for
//  the caller to put in its place); a dict's values are uncanned in place.
static bn_value_t *
s_uncan (bn_value_t *value)
{
    if (bn_value_type (value) == BN_VALUE_DICT) {
        size_t size = bn_value_size (value);
        for (size_t i = 0; i < size; i++) {
            bn_value_t *replacement = s_uncan (bn_value_dict_value (value, i));
            if (replacement) {
                bn_value_t *old =
                    bn_value_dict_swap_value (value, i, replacement);
                bn_value_destroy (&old);
            }
        }
        return NULL;
    }
    if (!bn_value_object_is (value, S_CANNING, "CannedBytes") &&
        !bn_value_object_is (value, S_CANNING, "CannedMemoryView"))
        return NULL;
    bn_value_t *buffers = s_canned_buffers (value);
    if (!buffers || bn_value_size (buffers) < 1 ||
        bn_value_type (bn_value_item (buffers, 0)) != BN_VALUE_BYTES)
        return NULL;
    return bn_value_swap_item (buffers, 0, bn_value_new_none ());
}

//  Uncan the items of a top-level list, tuple or set.
static int
s_uncan_items (bn_value_t **value_p)
{
    bn_value_t *value = *value_p;
    size_t size = bn_value_size (value);
    bool changed = false;
    for (size_t i = 0; i < size; i++) {
        bn_value_t *replacement = s_uncan (bn_value_item (value, i));
        if (replacement) {
            bn_value_t *old = bn_value_swap_item (value, i, replacement);
            bn_value_destroy (&old);
            changed = true;
        }
    }
    if (!changed || bn_value_type (value) != BN_VALUE_SET)
        return 0;
    //  Bytes that were distinct objects may now be equal items.
    bn_value_t *set = bn_value_new_set ();
    if (!set)
        return -1;
    for (size_t i = 0; i < size; i++)
        if (bn_value_append (
                set, bn_value_swap_item (value, i, bn_value_new_none ()))) {
            bn_value_destroy (&set);
            return -1;
        }
    bn_value_destroy (value_p);
    *value_p = set;
    return 0;
}

bn_value_t *
bn_deserialize_object (const bn_bytes_t *frames, size_t nframes, size_t *used,
                       char *err, size_t errsize)
{
    assert (frames || nframes == 0);
    if (nframes == 0) {
        bn_error_set (err, errsize, "no buffers to deserialize");
        return NULL;
    }
    bn_value_t *value =
        bn_pickle_decode (frames[0].data, frames[0].size, err, errsize);
    if (!value)
        return NULL;
    size_t next = 1;
    int rc = 0;
    bn_value_type_t type = bn_value_type (value);
    size_t size = bn_value_size (value);
    if ((type == BN_VALUE_LIST || type == BN_VALUE_TUPLE ||
         type == BN_VALUE_SET) &&
        size < BN_SERIALIZE_ITEM_THRESHOLD) {
        for (size_t i = 0; rc == 0 && i < size; i++)
            rc = s_restore (bn_value_item (value, i), frames, nframes, &next,
                            err, errsize);
        if (rc == 0 && s_uncan_items (&value)) {
            bn_error_set (err, errsize, "out of memory");
            rc = -1;
        }
    } else if (type == BN_VALUE_DICT && size < BN_SERIALIZE_ITEM_THRESHOLD) {
        size_t order[BN_SERIALIZE_ITEM_THRESHOLD];
        bool sortable = s_keys_sortable (value);
        for (size_t i = 0; i < size; i++) {
            size_t j = i;
            for (; sortable && j > 0 &&
                   s_key_compare (bn_value_dict_key (value, order[j - 1]),
                                  bn_value_dict_key (value, i)) > 0;
                 j--)
                order[j] = order[j - 1];
            order[j] = i;
        }
        for (size_t i = 0; rc == 0 && i < size; i++)
            rc = s_restore (bn_value_dict_value (value, order[i]), frames,
                            nframes, &next, err, errsize);
        if (rc == 0)
            s_uncan (value);
    } else {
        rc = s_restore (value, frames, nframes, &next, err, errsize);
        bn_value_t *replacement = rc == 0 ? s_uncan (value) : NULL;
        if (replacement) {
            bn_value_destroy (&value);
            value = replacement;
        }
    }
    if (rc) {
        bn_value_destroy (&value);
        return NULL;
    }
    if (used)
        *used = next;
    return value;
}

static char *s_strdup_printf (const char *format, ...)
    __attribute__ ((format (printf, 1, 2)));

static char *
s_strdup_printf (const char *format, ...)
{
    va_list args;
    va_start (args, format);
    int size = vsnprintf (NULL, 0, format, args);
    va_end (args);
    if (size < 0)
        return NULL;
    char *text = (char *)malloc ((size_t)size + 1);
    if (!text)
        return NULL;
    va_start (args, format);
    vsnprintf (text, (size_t)size + 1, format, args);
    va_end (args);
    return text;
}

//  Which function f names: a Reference, a global or a canned function.
static int
s_classify (bn_apply_t *self)
{
    const bn_value_t *f = self->f;
    const bn_value_t *state = bn_value_object_state (f);
    if (bn_value_type (f) == BN_VALUE_GLOBAL) {
        self->kind = BN_APPLY_GLOBAL;
        self->module = strdup (bn_value_global_module (f));
        self->name = strdup (bn_value_global_name (f));
        self->description = s_strdup_printf (
            "%s.%s", bn_value_global_module (f), bn_value_global_name (f));
    } else if (state && bn_value_object_is (f, S_CANNING, "Reference") &&
               bn_value_str (bn_value_dict_get (state, "name"))) {
        const char *name = bn_value_str (bn_value_dict_get (state, "name"));
        self->kind = BN_APPLY_REFERENCE;
        self->name = strdup (name);
        self->description = s_strdup_printf ("Reference('%s')", name);
    } else if (state && bn_value_object_is (f, S_CANNING, "CannedFunction") &&
               bn_value_str (bn_value_dict_get (state, "module")) &&
               bn_value_str (bn_value_dict_get (state, "__name__"))) {
        const char *module = bn_value_str (bn_value_dict_get (state, "module"));
        const char *name = bn_value_str (bn_value_dict_get (state, "__name__"));
        self->kind = BN_APPLY_CANNED_FUNCTION;
        self->module = strdup (module);
        self->name = strdup (name);
        self->description = s_strdup_printf ("%s.%s", module, name);
    } else {
        const bn_value_t *cls = bn_value_object_class (f);
        self->kind = BN_APPLY_OTHER;
        if (cls && bn_value_type (cls) == BN_VALUE_GLOBAL)
            self->description =
                s_strdup_printf ("%s.%s object", bn_value_global_module (cls),
                                 bn_value_global_name (cls));
        else
            self->description = strdup (bn_value_type_name (f));
        return self->description ? 0 : -1;
    }
    bool complete = self->name && self->description &&
                    (self->kind == BN_APPLY_REFERENCE || self->module);
    return complete ? 0 : -1;
}

//  Info keys as ints of a sane size; -1 if missing or not so.
static int64_t
s_info_count (const bn_value_t *info, const char *key)
{
    const bn_value_t *value = bn_value_dict_get (info, key);
    if (!value || bn_value_type (value) != BN_VALUE_INT ||
        bn_value_int (value) < 0)
        return -1;
    return bn_value_int (value);
}

int
bn_apply_unpack (const bn_bytes_t *bufs, size_t nbufs, bn_apply_t *out,
                 char *err, size_t errsize)
{
    assert (bufs || nbufs == 0);
    assert (out);
    memset (out, 0, sizeof (*out));
    char reason[256] = "";
    bn_value_t *info = NULL;
    size_t used = 0;
    if (nbufs < 2) {
        bn_error_set (err, errsize,
                      "apply_request has %zu buffers, wants 2 or more", nbufs);
        return -1;
    }
    out->f =
        bn_deserialize_object (bufs, nbufs, &used, reason, sizeof (reason));
    if (!out->f) {
        bn_error_set (err, errsize, "f: %s", reason);
        goto failed;
    }
    if (s_classify (out)) {
        bn_error_set (err, errsize, "out of memory");
        goto failed;
    }
    if (used >= nbufs) {
        bn_error_set (err, errsize, "no info buffer after f");
        goto failed;
    }
    info = bn_pickle_decode (bufs[used].data, bufs[used].size, reason,
                             sizeof (reason));
    used++;
    if (!info) {
        bn_error_set (err, errsize, "info: %s", reason);
        goto failed;
    }
    int64_t nargs = s_info_count (info, "nargs");
    int64_t narg_bufs = s_info_count (info, "narg_bufs");
    const bn_value_t *kw_keys = bn_value_dict_get (info, "kw_keys");
    size_t nkw = kw_keys ? bn_value_size (kw_keys) : 0;
    bool keys_ok = kw_keys && bn_value_type (kw_keys) == BN_VALUE_LIST;
    for (size_t i = 0; keys_ok && i < nkw; i++)
        keys_ok = bn_value_type (bn_value_item (kw_keys, i)) == BN_VALUE_STR;
    if (nargs < 0 || narg_bufs < 0 || !keys_ok) {
        bn_error_set (err, errsize,
                      "info is not {'nargs', 'narg_bufs', "
                      "'kw_keys'}");
        goto failed;
    }
    //  Every arg takes at least one buffer.
    if ((uint64_t)narg_bufs > nbufs - used || nargs > narg_bufs) {
        bn_error_set (err, errsize,
                      "info claims %" PRId64 " args in %" PRId64
                      " buffers, %zu left",
                      nargs, narg_bufs, nbufs - used);
        goto failed;
    }
    out->args = bn_value_new_list ();
    out->kwargs = bn_value_new_dict ();
    if (!out->args || !out->kwargs) {
        bn_error_set (err, errsize, "out of memory");
        goto failed;
    }
    const bn_bytes_t *arg_bufs = bufs + used;
    size_t offset = 0;
    for (int64_t i = 0; i < nargs; i++) {
        size_t taken = 0;
        bn_value_t *arg = bn_deserialize_object (
            arg_bufs + offset, (size_t)narg_bufs - offset, &taken, reason,
            sizeof (reason));
        if (!arg) {
            bn_error_set (err, errsize, "arg %" PRId64 ": %s", i, reason);
            goto failed;
        }
        offset += taken;
        if (bn_value_append (out->args, arg)) {
            bn_error_set (err, errsize, "out of memory");
            goto failed;
        }
    }
    if (offset != (size_t)narg_bufs) {
        bn_error_set (err, errsize, "%zu arg buffers left over",
                      (size_t)narg_bufs - offset);
        goto failed;
    }
    const bn_bytes_t *kw_bufs = arg_bufs + narg_bufs;
    size_t nkw_bufs = nbufs - used - (size_t)narg_bufs;
    offset = 0;
    for (size_t i = 0; i < nkw; i++) {
        const bn_value_t *key = bn_value_item (kw_keys, i);
        size_t taken = 0;
        bn_value_t *value =
            bn_deserialize_object (kw_bufs + offset, nkw_bufs - offset, &taken,
                                   reason, sizeof (reason));
        if (!value) {
            bn_error_set (err, errsize, "kwarg %s: %s", bn_value_str (key),
                          reason);
            goto failed;
        }
        offset += taken;
        if (bn_value_dict_set (out->kwargs, bn_value_dup (key), value)) {
            bn_error_set (err, errsize, "out of memory");
            goto failed;
        }
    }
    if (offset != nkw_bufs) {
        bn_error_set (err, errsize, "%zu kwarg buffers left over",
                      nkw_bufs - offset);
        goto failed;
    }
    bn_value_destroy (&info);
    return 0;

failed:
    bn_value_destroy (&info);
    bn_apply_clear (out);
    return -1;
}

void
bn_apply_clear (bn_apply_t *self)
{
    assert (self);
    free (self->module);
    free (self->name);
    free (self->description);
    bn_value_destroy (&self->f);
    bn_value_destroy (&self->args);
    bn_value_destroy (&self->kwargs);
    memset (self, 0, sizeof (*self));
}

//  pack_apply_message: f's frames, info, args' frames, kwargs' frames.
static int
s_pack_apply (const bn_value_t *f, const bn_value_t *args,
              const bn_value_t *kwargs, s_frames_t *frames)
{
    assert (!args || bn_value_type (args) == BN_VALUE_LIST ||
            bn_value_type (args) == BN_VALUE_TUPLE);
    assert (!kwargs || bn_value_type (kwargs) == BN_VALUE_DICT);
    s_frames_t arg_frames = {0};
    s_frames_t kw_frames = {0};
    size_t nargs = args ? bn_value_size (args) : 0;
    size_t nkw = kwargs ? bn_value_size (kwargs) : 0;
    size_t *order = (size_t *)malloc ((nkw + 1) * sizeof (size_t));
    bn_value_t *info = bn_value_new_dict ();
    bn_value_t *kw_keys = bn_value_new_list ();
    int rc = -1;
    if (!order || !info || !kw_keys || !f || s_serialize (f, frames))
        goto done;
    for (size_t i = 0; i < nargs; i++)
        if (s_serialize (bn_value_item (args, i), &arg_frames))
            goto done;
    //  Keyword names are str, sent in sorted order.
    for (size_t i = 0; i < nkw; i++) {
        const bn_value_t *key = bn_value_dict_key (kwargs, i);
        if (bn_value_type (key) != BN_VALUE_STR)
            goto done;
        size_t j = i;
        for (; j > 0 && s_key_compare (bn_value_dict_key (kwargs, order[j - 1]),
                                       key) > 0;
             j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (size_t i = 0; i < nkw; i++) {
        if (bn_value_append (
                kw_keys, bn_value_dup (bn_value_dict_key (kwargs, order[i]))) ||
            s_serialize (bn_value_dict_value (kwargs, order[i]), &kw_frames))
            goto done;
    }
    if (bn_value_dict_set_str (info, "nargs",
                               bn_value_new_int ((int64_t)nargs)) ||
        bn_value_dict_set_str (info, "narg_bufs",
                               bn_value_new_int ((int64_t)arg_frames.size)))
        goto done;
    int set = bn_value_dict_set_str (info, "kw_keys", kw_keys);
    kw_keys = NULL;
    size_t size;
    void *pickle = set == 0 ? bn_pickle_encode (info, &size) : NULL;
    if (pickle && s_frames_add (frames, pickle, size, true) == 0 &&
        s_frames_move (frames, &arg_frames) == 0 &&
        s_frames_move (frames, &kw_frames) == 0)
        rc = 0;

done:
    s_frames_clear (&arg_frames);
    s_frames_clear (&kw_frames);
    bn_value_destroy (&info);
    bn_value_destroy (&kw_keys);
    free (order);
    return rc;
}

//  Reference(fname) as ipyparallel pickles it: state name, buffers.
static bn_value_t *
s_new_reference (const char *fname)
{
    assert (fname);
    bn_value_t *state = bn_value_new_dict ();
    if (!state ||
        bn_value_dict_set_str (state, "name", bn_value_new_str (fname)) ||
        bn_value_dict_set_str (state, "buffers", bn_value_new_list ())) {
        bn_value_destroy (&state);
        return NULL;
    }
    bn_value_t *cls = bn_value_new_global (S_CANNING, "Reference");
    if (!cls) {
        bn_value_destroy (&state);
        return NULL;
    }
    return bn_value_new_object (cls, NULL, state);
}

static zmsg_t *
s_pack_to_zmsg (bn_value_t *f, const bn_value_t *args, const bn_value_t *kwargs)
{
    s_frames_t frames = {0};
    zmsg_t *msg = NULL;
    if (s_pack_apply (f, args, kwargs, &frames) == 0)
        msg = s_frames_to_zmsg (&frames);
    s_frames_clear (&frames);
    bn_value_destroy (&f);
    return msg;
}

static int
s_pack_to_msg (bn_msg_t *msg, bn_value_t *f, const bn_value_t *args,
               const bn_value_t *kwargs)
{
    assert (msg);
    s_frames_t frames = {0};
    int rc = s_pack_apply (f, args, kwargs, &frames);
    if (rc == 0)
        rc = s_frames_to_msg (&frames, msg);
    s_frames_clear (&frames);
    bn_value_destroy (&f);
    return rc;
}

zmsg_t *
bn_apply_pack_reference (const char *fname, const bn_value_t *args,
                         const bn_value_t *kwargs)
{
    return s_pack_to_zmsg (s_new_reference (fname), args, kwargs);
}

zmsg_t *
bn_apply_pack_global (const char *module, const char *name,
                      const bn_value_t *args, const bn_value_t *kwargs)
{
    return s_pack_to_zmsg (bn_value_new_global (module, name), args, kwargs);
}

int
bn_apply_add_reference (bn_msg_t *msg, const char *fname,
                        const bn_value_t *args, const bn_value_t *kwargs)
{
    return s_pack_to_msg (msg, s_new_reference (fname), args, kwargs);
}

int
bn_apply_add_global (bn_msg_t *msg, const char *module, const char *name,
                     const bn_value_t *args, const bn_value_t *kwargs)
{
    return s_pack_to_msg (msg, bn_value_new_global (module, name), args,
                          kwargs);
}

bn_value_t *
bn_apply_decode_result (const bn_bytes_t *bufs, size_t nbufs, char *err,
                        size_t errsize)
{
    return bn_deserialize_object (bufs, nbufs, NULL, err, errsize);
}

size_t
bn_bytes_from_msg (bn_msg_t *msg, bn_bytes_t *out, size_t max)
{
    assert (msg);
    assert (out || max == 0);
    size_t n = bn_msg_nbuffers (msg);
    for (size_t i = 0; i < n && i < max; i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        out[i].data = zmq_msg_data (frame);
        out[i].size = zmq_msg_size (frame);
    }
    return n;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_query: Mongo-style query terms compiled to an array and matched
    against TaskRecord objects.  */
#include "bn_query.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    S_LT,
    S_GT,
    S_LTE,
    S_GTE,
    S_EQ,
    S_NE,
    S_IN,
    S_NIN,
    S_ALL,
    S_MOD,
    S_EXISTS
} s_op_t;

static const struct {
    const char *name;
    s_op_t op;
} s_ops[] = {
    {"$lt", S_LT},   {"$gt", S_GT},   {"$lte", S_LTE},       {"$gte", S_GTE},
    {"$eq", S_EQ},   {"$ne", S_NE},   {"$in", S_IN},         {"$nin", S_NIN},
    {"$all", S_ALL}, {"$mod", S_MOD}, {"$exists", S_EXISTS},
};

typedef struct {
    const char *key; //  Record key (borrowed from the query)
    s_op_t op;
    json_t *arg; //  Operand (borrowed from the query)
} s_term_t;

struct _bn_query_t {
    json_t *query; //  Our reference: terms borrow from it
    s_term_t *terms;
    size_t nterms;
};

void
bn_query_destroy (bn_query_t **self_p)
{
    assert (self_p);
    bn_query_t *self = *self_p;
    if (!self)
        return;
    json_decref (self->query);
    free (self->terms);
    free (self);
    *self_p = NULL;
}

static bn_query_t *s_fail (bn_query_t **self_p, char *ename, size_t ename_size,
                           char *evalue, size_t evalue_size, const char *name,
                           const char *format, ...)
    __attribute__ ((format (printf, 7, 8)));

static bn_query_t *
s_fail (bn_query_t **self_p, char *ename, size_t ename_size, char *evalue,
        size_t evalue_size, const char *name, const char *format, ...)
{
    snprintf (ename, ename_size, "%s", name);
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, evalue_size, format, args);
    va_end (args);
    bn_query_destroy (self_p);
    return NULL;
}

//  Check an operand's shape for op; returns the error text or NULL.
static const char *
s_check_arg (s_op_t op, json_t *arg)
{
    switch (op) {
    case S_IN:
    case S_NIN:
    case S_ALL:
        if (!json_is_array (arg))
            return "needs a list";
        if (json_array_size (arg) > BN_QUERY_MAX_LIST)
            return "has too many items";
        return NULL;
    case S_MOD:
        if (!json_is_array (arg) || json_array_size (arg) != 2 ||
            !json_is_number (json_array_get (arg, 0)) ||
            !json_is_number (json_array_get (arg, 1)))
            return "needs [divisor, remainder]";
        if (json_number_value (json_array_get (arg, 0)) == 0)
            return "needs a divisor that is not zero";
        return NULL;
    default:
        return NULL;
    }
}

bn_query_t *
bn_query_new (json_t *query, char *ename, size_t ename_size, char *evalue,
              size_t evalue_size)
{
    bn_query_t *self = calloc (1, sizeof *self);
    if (!self)
        return s_fail (&self, ename, ename_size, evalue, evalue_size,
                       "MemoryError", "out of memory");
    if (!query || json_is_null (query))
        return self;
    if (!json_is_object (query))
        return s_fail (&self, ename, ename_size, evalue, evalue_size,
                       "TypeError", "the query must be a dict");
    self->query = json_incref (query);
    //  count terms first so that one allocation holds them
    size_t count = 0;
    const char *key;
    json_t *value;
    json_object_foreach (query, key, value)
    {
        count += json_is_object (value) ? json_object_size (value) : 1;
        if (count > BN_QUERY_MAX_TERMS)
            return s_fail (&self, ename, ename_size, evalue, evalue_size,
                           "ValueError", "the query has more than %d terms",
                           BN_QUERY_MAX_TERMS);
    }
    self->terms = calloc (count ? count : 1, sizeof (s_term_t));
    if (!self->terms)
        return s_fail (&self, ename, ename_size, evalue, evalue_size,
                       "MemoryError", "out of memory");
    json_object_foreach (query, key, value)
    {
        if (!json_is_object (value)) {
            self->terms[self->nterms++] = (s_term_t){key, S_EQ, value};
            continue;
        }
        const char *opname;
        json_t *arg;
        json_object_foreach (value, opname, arg)
        {
            size_t i;
            for (i = 0; i < sizeof s_ops / sizeof s_ops[0]; i++)
                if (strcmp (opname, s_ops[i].name) == 0)
                    break;
            if (i == sizeof s_ops / sizeof s_ops[0])
                return s_fail (&self, ename, ename_size, evalue, evalue_size,
                               "KeyError",
                               "unknown query operator '%.64s' (for '%.64s')",
                               opname, key);
            const char *problem = s_check_arg (s_ops[i].op, arg);
            if (problem)
                return s_fail (&self, ename, ename_size, evalue, evalue_size,
                               "TypeError", "%.64s %s", opname, problem);
            self->terms[self->nterms++] = (s_term_t){key, s_ops[i].op, arg};
        }
    }
    return self;
}

//  --------------------------------------------------------------------------
//  Dates

static int
s_digits (const char **p, int n, int *value)
{
    *value = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        *value = *value * 10 + (c - '0');
    }
    *p += n;
    return 0;
}

//  Days since 1970-01-01 of a proleptic Gregorian date.
static int64_t
s_days (int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int
bn_query_parse_date (const char *text, int64_t *usec)
{
    if (!text)
        return -1;
    const char *p = text;
    int y, mo, d, h, mi, s;
    if (s_digits (&p, 4, &y) || *p++ != '-' || s_digits (&p, 2, &mo) ||
        *p++ != '-' || s_digits (&p, 2, &d) || (*p != 'T' && *p != ' '))
        return -1;
    p++;
    if (s_digits (&p, 2, &h) || *p++ != ':' || s_digits (&p, 2, &mi) ||
        *p++ != ':' || s_digits (&p, 2, &s))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -1;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n < 6) {
                frac = frac * 10 + (*p - '0');
                n++;
            }
            p++;
        }
        if (n == 0)
            return -1;
        while (n++ < 6)
            frac *= 10;
    }
    int64_t offset = 0;
    if (*p == 'Z')
        p++;
    else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh, om;
        if (s_digits (&p, 2, &oh))
            return -1;
        if (*p == ':')
            p++;
        if (s_digits (&p, 2, &om))
            return -1;
        offset = sign * (oh * 3600 + om * 60);
    }
    if (*p)
        return -1;
    int64_t secs = s_days (y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
    *usec = secs * 1000000 + frac;
    return 0;
}

void
bn_query_format_date (int64_t usec, char *buf)
{
    int64_t secs = usec / 1000000, frac = usec % 1000000;
    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    //  civil_from_days (Howard Hinnant's algorithm)
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp + (mp < 10 ? 3 : -9);
    y += m <= 2;
    char text[96];
    snprintf (text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", (int)y,
              (int)m, (int)d, (int)(rem / 3600), (int)(rem / 60 % 60),
              (int)(rem % 60), (int)frac);
    size_t len = strlen (text);
    if (len > 31)
        len = 31;
    memcpy (buf, text, len);
    buf[len] = 0;
}

//  --------------------------------------------------------------------------
//  Matching

//  Compare a and b: -1, 0 or 1 in *order; false if they do not order
//  (different kinds, null, containers).
static bool
s_order (json_t *a, json_t *b, int *order)
{
    if (json_is_string (a) && json_is_string (b)) {
        int64_t ta, tb;
        if (bn_query_parse_date (json_string_value (a), &ta) == 0 &&
            bn_query_parse_date (json_string_value (b), &tb) == 0) {
            *order = ta < tb ? -1 : ta > tb;
            return true;
        }
        int c = strcmp (json_string_value (a), json_string_value (b));
        *order = c < 0 ? -1 : c > 0;
        return true;
    }
    bool na = json_is_number (a) || json_is_boolean (a);
    bool nb = json_is_number (b) || json_is_boolean (b);
    if (na && nb) {
        double x =
            json_is_boolean (a) ? json_is_true (a) : json_number_value (a);
        double y =
            json_is_boolean (b) ? json_is_true (b) : json_number_value (b);
        if (json_is_integer (a) && json_is_integer (b)) {
            json_int_t i = json_integer_value (a), j = json_integer_value (b);
            *order = i < j ? -1 : i > j;
        } else
            *order = x < y ? -1 : x > y;
        return true;
    }
    return false;
}

static bool
s_equal (json_t *a, json_t *b)
{
    if (!a)
        a = json_null ();
    if (!b)
        b = json_null ();
    int order;
    if ((json_is_string (a) && json_is_string (b)) ||
        ((json_is_number (a) || json_is_boolean (a)) &&
         (json_is_number (b) || json_is_boolean (b))))
        return s_order (a, b, &order) && order == 0;
    return json_equal (a, b);
}

static bool
s_in (json_t *value, json_t *list)
{
    size_t index;
    json_t *item;
    json_array_foreach (list, index, item)
    {
        if (s_equal (value, item))
            return true;
    }
    return false;
}

static bool
s_truthy (json_t *v)
{
    if (!v || json_is_null (v) || json_is_false (v))
        return false;
    if (json_is_integer (v))
        return json_integer_value (v) != 0;
    if (json_is_real (v))
        return json_real_value (v) != 0;
    if (json_is_string (v))
        return json_string_length (v) != 0;
    if (json_is_array (v))
        return json_array_size (v) != 0;
    if (json_is_object (v))
        return json_object_size (v) != 0;
    return true;
}

static bool
s_mod (json_t *value, json_t *arg)
{
    if (!json_is_number (value))
        return false;
    json_t *div = json_array_get (arg, 0), *rem = json_array_get (arg, 1);
    if (json_is_integer (value) && json_is_integer (div)) {
        json_int_t a = json_integer_value (value), d = json_integer_value (div);
        json_int_t r = d == -1 ? 0 : a % d;
        //  Python's modulo takes the divisor's sign
        if (r != 0 && ((r < 0) != (d < 0)))
            r += d;
        return json_is_integer (rem) ? r == json_integer_value (rem)
                                     : (double)r == json_number_value (rem);
    }
    double a = json_number_value (value), d = json_number_value (div);
    double r = fmod (a, d);
    if (r != 0 && ((r < 0) != (d < 0)))
        r += d;
    return r == json_number_value (rem);
}

static bool
s_term (s_term_t *term, json_t *value)
{
    int order;
    switch (term->op) {
    case S_LT:
        return s_order (value, term->arg, &order) && order < 0;
    case S_GT:
        return s_order (value, term->arg, &order) && order > 0;
    case S_LTE:
        return s_order (value, term->arg, &order) && order <= 0;
    case S_GTE:
        return s_order (value, term->arg, &order) && order >= 0;
    case S_EQ:
        return s_equal (value, term->arg);
    case S_NE:
        return !s_equal (value, term->arg);
    case S_IN:
        return s_in (value ? value : json_null (), term->arg);
    case S_NIN:
        return !s_in (value ? value : json_null (), term->arg);
    case S_ALL: {
        size_t index;
        json_t *item;
        if (json_array_size (term->arg) == 0)
            return false;
        json_array_foreach (term->arg, index, item)
        {
            bool found = json_is_array (value) ? s_in (item, value)
                                               : s_equal (value, item);
            if (!found)
                return false;
        }
        return true;
    }
    case S_MOD:
        return s_mod (value, term->arg);
    case S_EXISTS: {
        bool present = value && !json_is_null (value);
        return present == s_truthy (term->arg);
    }
    }
    return false;
}

bool
bn_query_match (bn_query_t *self, json_t *record)
{
    assert (self);
    for (size_t i = 0; i < self->nterms; i++) {
        s_term_t *term = &self->terms[i];
        if (!s_term (term, json_object_get (record, term->key)))
            return false;
    }
    return true;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_query: the hub's db_request queries (bn_query), Mongo-style
    operators a client sends, matched against TaskRecords. The input is a
    JSON array: the query, then records (a seed pairs a captured query
    with captured records).

    A refused query names a Python exception and says why. A compiled one
    is checked against each record and against the record made of its own
    plain values, through relations that hold whatever the operands: $ne
    and $nin are the negations of $eq and $in, a one-item $in is $eq, the
    four orderings are consistent with each other and with $eq, and each
    ISO date in the input formats and parses back to itself.  */
#include "bn_fuzz.h"
#include "bn_query.h"

#include <jansson.h>

//  Match record with the one-term query {key: {op: arg}}.
static bool
s_term (const char *key, const char *op, json_t *arg, json_t *record)
{
    json_t *query = json_pack ("{s:{s:O}}", key, op, arg);
    BN_FUZZ_CHECK (query);
    char ename[64] = "", evalue[256] = "";
    bn_query_t *compiled =
        bn_query_new (query, ename, sizeof ename, evalue, sizeof evalue);
    json_decref (query);
    BN_FUZZ_CHECK (compiled);
    bool match = bn_query_match (compiled, record);
    bn_query_destroy (&compiled);
    return match;
}

//  The relations between operators, for the value record[key] against
//  operand arg.
static void
s_check_relations (const char *key, json_t *arg, json_t *record)
{
    bool eq = s_term (key, "$eq", arg, record);
    BN_FUZZ_CHECK (s_term (key, "$ne", arg, record) == !eq);
    json_t *list = json_pack ("[O]", arg);
    BN_FUZZ_CHECK (s_term (key, "$in", list, record) == eq);
    BN_FUZZ_CHECK (s_term (key, "$nin", list, record) == !eq);
    json_decref (list);

    bool lt = s_term (key, "$lt", arg, record);
    bool gt = s_term (key, "$gt", arg, record);
    bool lte = s_term (key, "$lte", arg, record);
    bool gte = s_term (key, "$gte", arg, record);
    BN_FUZZ_CHECK (!(lt && gt) && !(lt && gte) && !(gt && lte));
    if (lt || gt || lte || gte) {
        //  the two order: exactly one of <, ==, > holds
        BN_FUZZ_CHECK (lte == !gt && gte == !lt);
        BN_FUZZ_CHECK (lte == (lt || eq) && gte == (gt || eq));
    } else
        BN_FUZZ_CHECK (!eq || json_is_null (arg) ||
                       !(json_is_string (arg) || json_is_number (arg) ||
                         json_is_boolean (arg)));
}

//  Every string in value that is an ISO date formats and parses back to
//  the same instant, and its formatted text is a fixed point.
static void
s_check_dates (json_t *value, int depth)
{
    if (depth > 32)
        return;
    if (json_is_string (value)) {
        int64_t usec;
        if (bn_query_parse_date (json_string_value (value), &usec) != 0)
            return;
        char text[32], again_text[32];
        bn_query_format_date (usec, text);
        int64_t again;
        if (usec >= -62135596800000000LL && usec < 253402300800000000LL) {
            //  years 1 to 9999, which the format has four digits for
            BN_FUZZ_CHECK (bn_query_parse_date (text, &again) == 0);
            BN_FUZZ_CHECK (again == usec);
            bn_query_format_date (again, again_text);
            BN_FUZZ_CHECK (strcmp (text, again_text) == 0);
        }
        return;
    }
    size_t index;
    const char *key;
    json_t *item;
    if (json_is_array (value))
        json_array_foreach (value, index, item)
        {
            s_check_dates (item, depth + 1);
        }
    else if (json_is_object (value))
        json_object_foreach (value, key, item)
        {
            s_check_dates (item, depth + 1);
        }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    json_t *input = json_loadb ((const char *)data, size, 0, NULL);
    if (!input)
        return 0;
    json_t *query = json_is_array (input) ? json_array_get (input, 0) : input;
    char ename[64] = "", evalue[256] = "";
    bn_query_t *compiled =
        bn_query_new (query, ename, sizeof ename, evalue, sizeof evalue);
    if (!compiled) {
        BN_FUZZ_CHECK (strcmp (ename, "TypeError") == 0 ||
                       strcmp (ename, "KeyError") == 0 ||
                       strcmp (ename, "ValueError") == 0);
        BN_FUZZ_CHECK (evalue[0] != 0);
        json_decref (input);
        return 0;
    }
    s_check_dates (input, 0);

    //  the record of the query's plain values matches its plain terms
    json_t *own = json_object ();
    json_t *plain = json_object ();
    const char *key;
    json_t *term;
    json_object_foreach (query, key, term)
    {
        if (!json_is_object (term)) {
            json_object_set (own, key, term);
            json_object_set (plain, key, term);
        }
    }
    bn_query_t *plain_query =
        bn_query_new (plain, ename, sizeof ename, evalue, sizeof evalue);
    BN_FUZZ_CHECK (plain_query && bn_query_match (plain_query, own));
    bn_query_destroy (&plain_query);
    json_decref (plain);

    //  each record, and the query's own one, against each operand
    size_t count = json_is_array (input) ? json_array_size (input) : 1;
    for (size_t i = 0; i < count && i < 16; i++) {
        json_t *record = i ? json_array_get (input, i) : own;
        bool match = bn_query_match (compiled, record);
        //  a query matches when each of its terms does
        bool all = true;
        json_object_foreach (query, key, term)
        {
            if (!json_is_object (term)) {
                all = all && s_term (key, "$eq", term, record);
                s_check_relations (key, term, record);
                continue;
            }
            const char *op;
            json_t *arg;
            json_object_foreach (term, op, arg)
            {
                all = all && s_term (key, op, arg, record);
                s_check_relations (key, arg, record);
            }
        }
        BN_FUZZ_CHECK (match == all);
    }
    json_decref (own);
    bn_query_destroy (&compiled);
    json_decref (input);
    return 0;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_query: the Mongo-style queries of the hub's db_request (doc/wire.md 5),
    compiled once and matched against TaskRecords (JSON objects).

    A query maps top-level record keys to a plain value (equality) or to an
    object of operators: $lt $gt $lte $gte $eq $ne $in $nin $all $mod
    $exists. Strings that are ISO-8601 dates compare as dates (a record's
    dates are ISO strings too). $gt means greater than (7.1.0's DictDB
    inverted it). $all follows MongoDB: a list value must hold every listed
    item, a scalar value must equal each of them. Ordering a string against
    a number, or anything against null, does not match.  */
#ifndef BN_QUERY_H_INCLUDED
#define BN_QUERY_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct _bn_query_t bn_query_t;

//  Limits that keep a hostile query's cost bounded.
#define BN_QUERY_MAX_TERMS 256  //  keys plus operators
#define BN_QUERY_MAX_LIST 65536 //  items of one $in / $nin / $all list

//  Compile query (borrowed; NULL or {} match every record). On a malformed
//  query returns NULL and writes a Python exception name (TypeError,
//  KeyError, ValueError) into ename and its text into evalue.
bn_query_t *bn_query_new (json_t *query, char *ename, size_t ename_size,
                          char *evalue, size_t evalue_size);

//  Destroy a query; NULL-safe.
void bn_query_destroy (bn_query_t **self_p);

//  True if record (a JSON object; a missing key reads as null) matches.
bool bn_query_match (bn_query_t *self, json_t *record);

//  Parse an ISO-8601 date ("2026-11-21T14:29:26.444445Z", zone Z, +HH:MM
//  or none meaning UTC) into microseconds since the epoch. Returns 0, or
//  -1 if text is not such a date.
int bn_query_parse_date (const char *text, int64_t *usec);

//  Format microseconds since the epoch as "YYYY-MM-DDTHH:MM:SS.ffffffZ"
//  into buf (at least 32 bytes).
void bn_query_format_date (int64_t usec, char *buf);

#endif

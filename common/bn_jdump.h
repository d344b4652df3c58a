/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_jdump: a JSON tree as compact text, byte for byte what jansson's
    json_dumps (JSON_COMPACT | JSON_ENCODE_ANY) writes, in a fraction of
    its instructions: runs of plain bytes are copied in one piece and
    integers are written without printf. Every message part a process
    sends goes through it.  */
#ifndef BN_JDUMP_H_INCLUDED
#define BN_JDUMP_H_INCLUDED

#include <jansson.h>
#include <stddef.h>

//  The text of json (malloc'd, NUL-terminated; its length in *size when
//  size is not NULL), or NULL where jansson's json_dumps would fail (a
//  string that is not UTF-8 or holds a surrogate), for nesting deeper
//  than 2,048 levels, or with no memory.
char *bn_jdump (const json_t *json, size_t *size);

#endif

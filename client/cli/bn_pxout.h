/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_pxout: how `banyan px` writes engine output: lines prefixed per
    engine, as IPython's %px does, and the headers of gathered blocks, as
    clush -b does.  */
#ifndef BN_PXOUT_H_INCLUDED
#define BN_PXOUT_H_INCLUDED

#include "bn_idset.h"

#include <stddef.h>
#include <stdio.h>

//  Write each line of text as "[<kind>:<id>] <line>" ("[stdout:3] hello");
//  a last line without a newline gets one. Returns 0, or -1 on a write
//  error.
int bn_pxout_prefixed (FILE *file, const char *kind, int id, const char *text,
                       size_t size);

//  Write each line of text as "[<kind>] <line>"; a last line without a
//  newline gets one. Returns 0, or -1 on a write error.
int bn_pxout_tagged (FILE *file, const char *kind, const char *text,
                     size_t size);

//  Write text as it is, with a newline added if it lacks a final one.
//  Returns 0, or -1 on a write error.
int bn_pxout_text (FILE *file, const char *text, size_t size);

//  Write the header of a gathered block:
//      ---------------
//      engines[0-3] (4)
//      ---------------
//  Returns 0, or -1 on a write error or if out of memory.
int bn_pxout_header (FILE *file, bn_idset_t *ids);

#endif

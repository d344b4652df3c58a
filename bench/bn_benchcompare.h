/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcompare: asv's `compare` and `continuous` over two result
    files: a table of before, after and ratio per benchmark and parameter
    set, marked + (worse), - (better), ! (newly failing), x (not
    comparable: the benchmark's version differs); a change counts
    only when it passes the factor and is significant (Mann-Whitney U on
    the samples, or 99 % intervals that do not overlap).  */
#ifndef BN_BENCHCOMPARE_H_INCLUDED
#define BN_BENCHCOMPARE_H_INCLUDED

#include "bn_benchresults.h"

#include <stdbool.h>
#include <stdio.h>

//  Counts of what a comparison found.
typedef struct {
    size_t worse;    //  + rows
    size_t better;   //  - rows
    size_t failing;  //  ! rows
    size_t compared; //  rows printed or considered
} bn_benchcompare_counts_t;

//  Find the result file of commit (a hash or its prefix; or the path of a
//  file) under results_dir, on machine (NULL: any, if only one has it).
//  Returns the loaded results, or NULL with the reason in err.
bn_benchresults_t *bn_benchcompare_find (const char *results_dir,
                                         const char *machine,
                                         const char *commit, char *err,
                                         size_t errsize);

//  Print the comparison of before and after to out, using the units in
//  units (benchmarks.json's object, may be NULL). Changes smaller than
//  factor are not marked; only_changed leaves out unmarked rows.
void bn_benchcompare_print (bn_benchresults_t *before, bn_benchresults_t *after,
                            json_t *units, double factor, bool only_changed,
                            FILE *out, bn_benchcompare_counts_t *counts);

#endif

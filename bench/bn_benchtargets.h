/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchtargets: the performance targets banyan states in its README,
    each a set of benchmark cells and a bound on their ratio to a
    yardstick measured in the same run (the floor, the same cell on
    another stack, or the payload's size), checked against a machine's
    results and written as the README's table.  */
#ifndef BN_BENCHTARGETS_H_INCLUDED
#define BN_BENCHTARGETS_H_INCLUDED

#include "bn_benchresults.h"

#include <jansson.h>
#include <stddef.h>

//  What a target's cells are measured against.
typedef enum {
    BN_BENCHTARGET_FLOOR,  //  the floor the benchmark is stated against
    BN_BENCHTARGET_STACK,  //  the same cell with the parameter in versus
    BN_BENCHTARGET_BYTES,  //  the cell's bytes parameter (copies held)
    BN_BENCHTARGET_AT_MOST //  none: the bound is in the benchmark's unit
} bn_benchtarget_kind_t;

typedef struct {
    const char *text;       //  the target, as the README states it
    const char *benchmarks; //  benchmark names, separated by spaces
    const char *cells;      //  every parameter's values, as
                            //  "engines=16,64 bytes=1000"
    bn_benchtarget_kind_t kind;
    const char *versus; //  STACK: the parameter and value compared with,
                        //  as "stack='ipp'"; FLOOR: another floor than
                        //  the benchmark's own, by name, or NULL
    double bound;       //  the ratio every cell must stay within (AT_MOST:
                        //  the value, in the benchmark's unit)
} bn_benchtarget_t;

//  banyan's targets (count of them).
const bn_benchtarget_t *bn_benchtargets_builtin (size_t *count);

//  The targets (count of them) as a markdown table (target, measured,
//  met) from the result files of one machine (results, oldest first;
//  benchmarks: benchmarks.json's object): each cell from the newest file
//  that holds it and its yardstick. A target is met when every cell was
//  measured and is within its bound. Returns a malloc'd text, or NULL
//  with the reason in err.
char *bn_benchtargets_table (const bn_benchtarget_t *targets, size_t count,
                             json_t *benchmarks, bn_benchresults_t **results,
                             size_t results_count, char *err, size_t errsize);

//  Put text in the file at path between the lines holding
//  BN_BENCHTARGETS_BEGIN and BN_BENCHTARGETS_END, in place of what lies
//  there. Returns 0, or -1 with the reason in err (the file unchanged).
int bn_benchtargets_splice (const char *path, const char *text, char *err,
                            size_t errsize);

#define BN_BENCHTARGETS_BEGIN "<!-- targets: banyan-bench publish --readme -->"
#define BN_BENCHTARGETS_END "<!-- /targets -->"

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcase: the case a benchmark's functions receive for one
    parameter set, and what they read and record in it.  */
#ifndef BN_BENCHCASE_H_INCLUDED
#define BN_BENCHCASE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "bn_benchdef.h"

//  Parameter values are kept as asv keeps them, Python repr() text:
//  numbers plain, strings quoted ('direct').
struct _bn_benchcase_t {
    const bn_benchdef_t *def;                      //  the benchmark
    size_t param_count;                            //  its parameters
    const char *param_names[BN_BENCH_MAX_PARAMS];  //  their names
    const char *param_values[BN_BENCH_MAX_PARAMS]; //  this case's values
    bool quick;                                    //  --quick run
    int per_process;                               //  engines per process
                                                   //  (0: automatic)
    const char *dir;     //  a fresh folder for this case (a profile)
    const char *bin_dir; //  where banyan-controller and banyan-engine are
    void *state;         //  the suite's own, from setup
    char reason[512];    //  why the case failed or was skipped
};

//  Value of parameter name as text with any quotes removed, or NULL if
//  the benchmark has no such parameter.
const char *bn_benchcase_str (bn_benchcase_t *self, const char *name, char *buf,
                              size_t size);

//  Value of a numeric parameter, or fallback if there is none.
long bn_benchcase_long (bn_benchcase_t *self, const char *name, long fallback);

//  Record why the case failed; returns BN_BENCH_FAIL.
int bn_benchcase_fail (bn_benchcase_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Record why the case does not apply; returns BN_BENCH_SKIP.
int bn_benchcase_skip (bn_benchcase_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Engines per process for n engines: the case's setting, else n up to 4
//  engines, else n spread over 4 processes (as `cluster start -k`).
int bn_benchcase_per_process (bn_benchcase_t *self, int n);

//  The full path of a program next to the runner (malloc'd), or NULL.
char *bn_benchcase_program (bn_benchcase_t *self, const char *name);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchresults: one run's results in asv's file format (version 2):
    results/<machine>/<commit[:8]>-<env>.json with result_columns,
    params and samples per benchmark, results/<machine>/machine.json and
    results/benchmarks.json, so that asv's own tools read them.  */
#ifndef BN_BENCHRESULTS_H_INCLUDED
#define BN_BENCHRESULTS_H_INCLUDED

#include "bn_benchdef.h"
#include "bn_benchstats.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct _bn_benchresults_t bn_benchresults_t;

//  Outcome of one parameter set.
typedef enum {
    BN_BENCHRESULT_OK,      //  a value
    BN_BENCHRESULT_FAILED,  //  null in the file
    BN_BENCHRESULT_SKIPPED, //  NaN in the file
    BN_BENCHRESULT_MISSING  //  no such benchmark or case in the file
} bn_benchresult_t;

//  What this machine is: asv's machine fields (arch, cpu, machine,
//  num_cpu, os, ram in bytes), as text as asv writes them, under the given
//  machine name (NULL: the host name).
json_t *bn_benchresults_machine_info (const char *machine);

//  Empty results for commit (full hash) in environment env on machine
//  (a machine_info object, borrowed), dated date_ms (the commit's date).
bn_benchresults_t *bn_benchresults_new (json_t *machine, const char *commit,
                                        const char *env, double date_ms);

//  Read a result file; NULL with the reason in err if it cannot be read
//  or is not version 2.
bn_benchresults_t *bn_benchresults_load (const char *path, char *err,
                                         size_t errsize);

//  Destroy; NULLs *self_p; NULL-safe.
void bn_benchresults_destroy (bn_benchresults_t **self_p);

//  Takes, or leaves to be destroyed, results read from a file; non-zero
//  stops the reading.
typedef int (bn_benchresults_fn) (void *arg, bn_benchresults_t **results_p);

//  Call fn with each result file of the machine folder dir that loads
//  (not machine.json; only names starting with prefix, unless NULL).
//  Returns fn's non-zero value, or 0.
int bn_benchresults_each (const char *dir, const char *prefix,
                          bn_benchresults_fn *fn, void *arg);

//  Write <dir>/<machine>/<commit[:8]>-<env>.json and machine.json.
//  Returns 0, or -1 with the reason in err.
int bn_benchresults_save (bn_benchresults_t *self, const char *dir, char *err,
                          size_t errsize);

//  The file name a result of commit and env takes under its machine.
void bn_benchresults_filename (const char *commit, const char *env, char *buf,
                               size_t size);

//  Start a benchmark's row: params is its grid as asv's list of lists of
//  repr texts (borrowed), cases the number of parameter sets.
void bn_benchresults_begin (bn_benchresults_t *self, const char *name,
                            json_t *params, const char *version,
                            double started_at_ms);

//  Record case index of benchmark name: status, and for OK the samples
//  (count of them), number of calls per sample and repeat.
void bn_benchresults_set_case (bn_benchresults_t *self, const char *name,
                               size_t index, bn_benchresult_t status,
                               const double *samples, size_t count, int number);

//  Set the benchmark's duration in seconds.
void bn_benchresults_set_duration (bn_benchresults_t *self, const char *name,
                                   double seconds);

//  Case index of benchmark name: its status, and when OK its value, stats
//  and samples (a copy the caller frees; NULL with count 0).
bn_benchresult_t bn_benchresults_case (bn_benchresults_t *self,
                                       const char *name, size_t index,
                                       double *value, bn_benchstats_t *stats,
                                       double **samples, size_t *count);

//  The index of the case of name whose params (repr texts, one per
//  parameter) are values; -1 if none.
long bn_benchresults_find (bn_benchresults_t *self, const char *name,
                           const char **values, size_t count);

//  When the row of benchmark name was started (ms since the epoch); NAN
//  if these results have none.
double bn_benchresults_started (bn_benchresults_t *self, const char *name);

//  The ratio of value, case values (repr texts, in the order of its
//  param_names) of benchmark name, to the floor the benchmark is stated
//  against in benchmarks (benchmarks.json's object), or to the floor
//  benchmark floor_name unless NULL (at the same parameters), as measured
//  in the same results and run: NAN if it is stated against none, that
//  floor has no value here, or its row was started after the benchmark's
//  (a later run measured the floor again, not the benchmark).
double bn_benchresults_floor_ratio (bn_benchresults_t *self, json_t *benchmarks,
                                    const char *name, const char **values,
                                    double value, const char *floor_name);

//  The benchmark's params list of lists, or NULL (borrowed).
json_t *bn_benchresults_params (bn_benchresults_t *self, const char *name);

//  The version the benchmark had when these results were made, or NULL.
const char *bn_benchresults_row_version (bn_benchresults_t *self,
                                         const char *name);

//  The results object (name to row), borrowed.
json_t *bn_benchresults_rows (bn_benchresults_t *self);

const char *bn_benchresults_commit (bn_benchresults_t *self);
const char *bn_benchresults_env (bn_benchresults_t *self);
const char *bn_benchresults_machine (bn_benchresults_t *self);
double bn_benchresults_date (bn_benchresults_t *self);

//  Write <dir>/benchmarks.json describing the benchmarks in defs (count
//  of them), merged into what the file holds. Each declares its whole
//  grid: the table's, the values it ran with (grids[i], borrowed; may be
//  NULL) and those the file held for the same version, so that asv reads
//  the results of every run whatever grid it had. Returns 0 or -1.
int bn_benchresults_save_benchmarks (const char *dir,
                                     const bn_benchdef_t *const *defs,
                                     json_t *const *grids, size_t count,
                                     char *err, size_t errsize);

//  The version asv keeps for a benchmark, as text in buf: its definition's
//  version, else a hash of its name, parameter names, unit and description
//  (not of the grid a run used: asv drops the results whose version is not
//  benchmarks.json's).
void bn_benchresults_version (const bn_benchdef_t *def, char *buf, size_t size);

//  JSON text with NaN written as asv (Python) writes it; malloc'd.
char *bn_benchresults_dumps (json_t *root, size_t flags);

//  Parse JSON text that may hold NaN tokens (read back as the string
//  "NaN"); NULL with the reason in err.
json_t *bn_benchresults_loads (const char *text, char *err, size_t errsize);

//  Read a whole file into a malloc'd string; NULL if it cannot be read.
char *bn_benchresults_slurp (const char *path);

#endif

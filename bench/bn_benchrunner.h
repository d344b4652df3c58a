/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchrunner: runs the benchmarks of a table as asv does: one
    process per parameter set (bounded by its timeout, so a case that
    hangs is killed and reported failed), warm-up, repeat and number,
    the floors first, a progress line on a terminal, results printed
    `12.3±0.4ms` with `× floor`, and saved as asv result files.  */
#ifndef BN_BENCHRUNNER_H_INCLUDED
#define BN_BENCHRUNNER_H_INCLUDED

#include "bn_benchcase.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct _bn_benchrunner_t bn_benchrunner_t;

//  A runner over table (count entries, kept by reference). Returns NULL
//  if out of memory.
bn_benchrunner_t *bn_benchrunner_new (const bn_benchdef_t *table, size_t count);

//  Destroy; NULLs *self_p; NULL-safe.
void bn_benchrunner_destroy (bn_benchrunner_t **self_p);

//  Options (each as the command's option of the same name).
void bn_benchrunner_set_quick (bn_benchrunner_t *self, bool quick);
//  Returns -1 if regex does not compile.
int bn_benchrunner_add_regex (bn_benchrunner_t *self, const char *regex);
void bn_benchrunner_set_machine (bn_benchrunner_t *self, const char *machine);
void bn_benchrunner_set_results (bn_benchrunner_t *self, const char *dir);
//  Values (comma-separated; words that are not numbers become quoted
//  strings) to use for every benchmark's parameter name instead of its
//  own; returns -1 if the list is empty.
int bn_benchrunner_set_param (bn_benchrunner_t *self, const char *name,
                              const char *list);
//  A comma-separated list of engine counts; returns -1 if malformed.
int bn_benchrunner_set_engines (bn_benchrunner_t *self, const char *list);
void bn_benchrunner_set_per_process (bn_benchrunner_t *self, int k);
void bn_benchrunner_set_bin_dir (bn_benchrunner_t *self, const char *dir);
void bn_benchrunner_set_commit (bn_benchrunner_t *self, const char *commit,
                                double date_ms);
void bn_benchrunner_set_env (bn_benchrunner_t *self, const char *env);
void bn_benchrunner_set_show_stderr (bn_benchrunner_t *self, bool show);
void bn_benchrunner_set_osu_full (bn_benchrunner_t *self, bool full);
//  Run the selection this many times over (1 by default), one whole pass
//  after the other, so that a case and its floor are measured in every
//  pass: each case's figure is over the samples of all passes, and the
//  machine's slower and faster minutes fall on both sides alike.
void bn_benchrunner_set_rounds (bn_benchrunner_t *self, int rounds);

//  Whether benchmark def is selected by the regexes (all if none).
bool bn_benchrunner_selected (bn_benchrunner_t *self, const bn_benchdef_t *def);

//  The parameter grid def runs with under this runner's options: asv's
//  list of lists of repr texts; a new reference.
json_t *bn_benchrunner_grid (bn_benchrunner_t *self, const bn_benchdef_t *def);

//  Run the selected benchmarks and save the results. Returns 0 if every
//  case ran (or was skipped), 1 if any failed, -1 if the results could
//  not be saved or nothing was selected, -2 if SIGINT or SIGTERM stopped
//  the run (the case running is ended, what ran before is saved).
int bn_benchrunner_run (bn_benchrunner_t *self);

//  Print the selected benchmarks, one per line with their parameters.
void bn_benchrunner_list (bn_benchrunner_t *self, FILE *out);

//  The path of the result file the last run wrote ("" before).
const char *bn_benchrunner_result_path (bn_benchrunner_t *self);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchstats: the statistics banyan-bench reports and compares with:
    median, quartiles, a 99 % interval for the median, and the
    Mann-Whitney U test between two sets of samples.  */
#ifndef BN_BENCHSTATS_H_INCLUDED
#define BN_BENCHSTATS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

//  What a set of samples is summarised as (asv's stats_* columns).
typedef struct {
    double median; //  the result
    double q_25;   //  lower quartile
    double q_75;   //  upper quartile
    double ci_a;   //  99 % interval of the median, lower end
    double ci_b;   //  ... upper end
    double min;    //  smallest sample
    double max;    //  largest sample
    size_t count;  //  number of samples
} bn_benchstats_t;

//  Quantile q (0..1) of count samples, linearly interpolated between the
//  order statistics (numpy's default); the samples are not modified.
//  Returns NAN when count is 0.
double bn_benchstats_quantile (const double *samples, size_t count, double q);

//  Summarise count samples into *stats. Returns 0, or -1 if count is 0.
int bn_benchstats_compute (bn_benchstats_t *stats, const double *samples,
                           size_t count);

//  Half the interquartile range, the spread asv prints after the ±.
double bn_benchstats_err (const bn_benchstats_t *stats);

//  Mann-Whitney U of sample set a against b: U of a (the number of pairs
//  in which a's sample is the larger, ties counting one half).
double bn_benchstats_mwu_u (const double *a, size_t na, const double *b,
                            size_t nb);

//  Two-sided p-value of U for sizes na and nb: exact (the distribution of
//  U counted without ties) when na * nb <= 400, else the normal
//  approximation with continuity and tie corrections. Returns NAN if a
//  set is empty.
double bn_benchstats_mwu_p (const double *a, size_t na, const double *b,
                            size_t nb);

//  The largest u with two-sided exact P(U <= u) <= alpha for sizes na and
//  nb (the critical value printed in Mann-Whitney tables), or -1 if none.
int bn_benchstats_mwu_critical (size_t na, size_t nb, double alpha);

//  True when the two sets differ significantly: Mann-Whitney U at
//  p < 0.01 when both have at least 4 samples, or their 99 % intervals do
//  not overlap.
bool bn_benchstats_differ (const double *a, size_t na, const double *b,
                           size_t nb);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchstats: median, quartiles, intervals and Mann-Whitney U for
    banyan-bench.  */
#include "bn_benchstats.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
s_compare (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double *
s_sorted (const double *samples, size_t count)
{
    double *sorted = malloc ((count ? count : 1) * sizeof *sorted);
    if (!sorted)
        return NULL;
    memcpy (sorted, samples, count * sizeof *sorted);
    qsort (sorted, count, sizeof *sorted, s_compare);
    return sorted;
}

static double
s_quantile_sorted (const double *sorted, size_t count, double q)
{
    if (count == 0)
        return NAN;
    double position = q * (double)(count - 1);
    size_t low = (size_t)floor (position);
    size_t high = low + 1 < count ? low + 1 : low;
    double fraction = position - (double)low;
    return sorted[low] + (sorted[high] - sorted[low]) * fraction;
}

double
bn_benchstats_quantile (const double *samples, size_t count, double q)
{
    if (count == 0)
        return NAN;
    double *sorted = s_sorted (samples, count);
    if (!sorted)
        return NAN;
    double value = s_quantile_sorted (sorted, count, q);
    free (sorted);
    return value;
}

//  P(X <= k) for X ~ Binomial(n, 1/2).
static double
s_binomial_cdf (size_t n, size_t k)
{
    double total = 0, term = pow (0.5, (double)n); //  C(n, 0) / 2^n
    for (size_t i = 0; i <= k && i <= n; i++) {
        total += term;
        term = term * (double)(n - i) / (double)(i + 1);
    }
    return total;
}

int
bn_benchstats_compute (bn_benchstats_t *stats, const double *samples,
                       size_t count)
{
    assert (stats);
    memset (stats, 0, sizeof *stats);
    if (count == 0)
        return -1;
    double *sorted = s_sorted (samples, count);
    if (!sorted)
        return -1;
    stats->count = count;
    stats->median = s_quantile_sorted (sorted, count, 0.5);
    stats->q_25 = s_quantile_sorted (sorted, count, 0.25);
    stats->q_75 = s_quantile_sorted (sorted, count, 0.75);
    stats->min = sorted[0];
    stats->max = sorted[count - 1];
    //  Distribution-free interval of the median: the order statistics
    //  x(k) and x(n-k+1) with P(Binomial(n, 1/2) < k) <= 0.005 on each
    //  side; too few samples for that give the full range.
    size_t k = 0;
    while (k + 1 <= count / 2 && s_binomial_cdf (count, k) <= 0.005)
        k++;
    stats->ci_a = k > 0 ? sorted[k - 1] : sorted[0];
    stats->ci_b = k > 0 ? sorted[count - k] : sorted[count - 1];
    free (sorted);
    return 0;
}

double
bn_benchstats_err (const bn_benchstats_t *stats)
{
    assert (stats);
    return (stats->q_75 - stats->q_25) / 2;
}

double
bn_benchstats_mwu_u (const double *a, size_t na, const double *b, size_t nb)
{
    double u = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            u += a[i] > b[j] ? 1.0 : a[i] == b[j] ? 0.5 : 0.0;
    return u;
}

//  Number of arrangements of sizes m and n with U = u, for every u: the
//  recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u), in one table
//  of (n + 1) rows per m. Returns a malloc'd array of m*n+1 counts.
static double *
s_mwu_counts (size_t m, size_t n)
{
    size_t umax = m * n;
    //  table[j][u] for the current i: counts for sizes (i, j)
    double *table = calloc ((n + 1) * (umax + 1), sizeof *table);
    double *next = calloc ((n + 1) * (umax + 1), sizeof *next);
    if (!table || !next) {
        free (table);
        free (next);
        return NULL;
    }
    for (size_t j = 0; j <= n; j++)
        table[j * (umax + 1)] = 1; //  i = 0: only U = 0
    for (size_t i = 1; i <= m; i++) {
        memset (next, 0, (n + 1) * (umax + 1) * sizeof *next);
        next[0] = 1; //  j = 0: only U = 0
        for (size_t j = 1; j <= n; j++)
            for (size_t u = 0; u <= i * j; u++) {
                double count = next[(j - 1) * (umax + 1) + u];
                if (u >= j)
                    count += table[j * (umax + 1) + u - j];
                next[j * (umax + 1) + u] = count;
            }
        double *swap = table;
        table = next;
        next = swap;
    }
    double *counts = malloc ((umax + 1) * sizeof *counts);
    if (counts)
        memcpy (counts, table + n * (umax + 1), (umax + 1) * sizeof *counts);
    free (table);
    free (next);
    return counts;
}

//  Two-sided exact P for the smaller of U and m*n - U.
static double
s_mwu_exact_p (size_t m, size_t n, double u)
{
    double *counts = s_mwu_counts (m, n);
    if (!counts)
        return NAN;
    double umin = fmin (u, (double)(m * n) - u);
    double tail = 0, total = 0;
    for (size_t k = 0; k <= m * n; k++) {
        total += counts[k];
        if ((double)k <= umin + 1e-9)
            tail += counts[k];
    }
    free (counts);
    double p = 2 * tail / total;
    return p > 1 ? 1 : p;
}

double
bn_benchstats_mwu_p (const double *a, size_t na, const double *b, size_t nb)
{
    if (na == 0 || nb == 0)
        return NAN;
    double u = bn_benchstats_mwu_u (a, na, b, nb);
    if (na * nb <= 400)
        return s_mwu_exact_p (na, nb, u);
    //  Normal approximation; ties shrink the variance.
    size_t n = na + nb;
    double *all = malloc (n * sizeof *all);
    if (!all)
        return NAN;
    memcpy (all, a, na * sizeof *all);
    memcpy (all + na, b, nb * sizeof *all);
    qsort (all, n, sizeof *all, s_compare);
    double ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && all[j] == all[i])
            j++;
        double t = (double)(j - i);
        ties += t * t * t - t;
        i = j;
    }
    free (all);
    double mean = (double)na * (double)nb / 2;
    double variance = (double)na * (double)nb / 12 *
                      ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
    if (variance <= 0)
        return 1;
    double z = (fabs (u - mean) - 0.5) / sqrt (variance);
    if (z < 0)
        z = 0;
    double p = erfc (z / sqrt (2));
    return p > 1 ? 1 : p;
}

int
bn_benchstats_mwu_critical (size_t na, size_t nb, double alpha)
{
    double *counts = s_mwu_counts (na, nb);
    if (!counts)
        return -1;
    double total = 0;
    for (size_t k = 0; k <= na * nb; k++)
        total += counts[k];
    int critical = -1;
    double tail = 0;
    for (size_t k = 0; k <= na * nb / 2; k++) {
        tail += counts[k];
        if (2 * tail / total > alpha)
            break;
        critical = (int)k;
    }
    free (counts);
    return critical;
}

bool
bn_benchstats_differ (const double *a, size_t na, const double *b, size_t nb)
{
    if (na == 0 || nb == 0)
        return false;
    if (na >= 4 && nb >= 4 && bn_benchstats_mwu_p (a, na, b, nb) < 0.01)
        return true;
    bn_benchstats_t sa, sb;
    if (bn_benchstats_compute (&sa, a, na) != 0 ||
        bn_benchstats_compute (&sb, b, nb) != 0)
        return false;
    return sa.ci_b < sb.ci_a || sb.ci_b < sa.ci_a;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchcompare: compare two result files as asv compare does.  */
#include "bn_benchcompare.h"
#include "bn_benchfmt.h"
#include "bn_benchstats.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool
s_is_file (const char *path)
{
    struct stat st;
    return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

//  Results of one commit met so far, the first kept.
typedef struct {
    const char *commit;
    bn_benchresults_t *found;
    size_t matches;
} s_find_t;

static int
s_match (void *arg, bn_benchresults_t **results_p)
{
    s_find_t *find = (s_find_t *)arg;
    const char *commit = bn_benchresults_commit (*results_p);
    if (strncmp (commit, find->commit, strlen (find->commit)) == 0 &&
        find->matches++ == 0) {
        find->found = *results_p;
        *results_p = NULL;
    }
    return 0;
}

bn_benchresults_t *
bn_benchcompare_find (const char *results_dir, const char *machine,
                      const char *commit, char *err, size_t errsize)
{
    if (s_is_file (commit))
        return bn_benchresults_load (commit, err, errsize);
    DIR *top = opendir (results_dir);
    if (!top) {
        snprintf (err, errsize, "no results in %s", results_dir);
        return NULL;
    }
    s_find_t find = {commit, NULL, 0};
    struct dirent *entry;
    while ((entry = readdir (top))) {
        if (entry->d_name[0] == '.' ||
            (machine && strcmp (entry->d_name, machine) != 0))
            continue;
        char path[4096], prefix[9];
        snprintf (path, sizeof path, "%s/%s", results_dir, entry->d_name);
        //  names start with the commit's first 8 characters
        snprintf (prefix, sizeof prefix, "%s", commit);
        bn_benchresults_each (path, prefix, s_match, &find);
    }
    closedir (top);
    if (find.matches > 1) {
        snprintf (err, errsize,
                  "%zu result files match %s: name the machine "
                  "(--machine) or the file",
                  find.matches, commit);
        bn_benchresults_destroy (&find.found);
    } else if (!find.found)
        snprintf (err, errsize, "no results for commit %s in %s", commit,
                  results_dir);
    return find.found;
}

//  The params text of case index: "(1000, 'direct')", "" when none.
static void
s_params_text (json_t *params, size_t index, char *buf, size_t size)
{
    size_t count = json_array_size (params);
    const char *values[8];
    for (size_t p = count; p-- > 0;) {
        json_t *list = json_array_get (params, p);
        size_t n = json_array_size (list);
        values[p < 8 ? p : 7] =
            n ? json_string_value (json_array_get (list, index % n)) : "";
        index /= n ? n : 1;
    }
    buf[0] = 0;
    size_t used = 0;
    for (size_t p = 0; p < count && p < 8 && used < size; p++)
        used += (size_t)snprintf (buf + used, size - used, "%s%s",
                                  p ? ", " : "(", values[p]);
    if (count && used < size)
        snprintf (buf + used, size - used, ")");
}

//  Print text right-aligned in width columns (UTF-8 aware: ± and μ are
//  one column each).
static void
s_right (FILE *out, const char *text, size_t width)
{
    size_t columns = 0;
    for (const char *c = text; *c; c++)
        if (((unsigned char)*c & 0xC0) != 0x80)
            columns++;
    for (size_t i = columns; i < width; i++)
        fputc (' ', out);
    fputs (text, out);
}

static size_t
s_cases (json_t *params)
{
    size_t cases = 1;
    size_t i;
    json_t *list;
    json_array_foreach (params, i, list) cases *= json_array_size (list);
    return cases;
}

void
bn_benchcompare_print (bn_benchresults_t *before, bn_benchresults_t *after,
                       json_t *units, double factor, bool only_changed,
                       FILE *out, bn_benchcompare_counts_t *counts)
{
    memset (counts, 0, sizeof *counts);
    fprintf (out, "       before           after         ratio\n");
    fprintf (out, "     [%.8s]       [%.8s]\n", bn_benchresults_commit (before),
             bn_benchresults_commit (after));
    //  names in sorted order, every name of either file
    json_t *names = json_object ();
    const char *name;
    json_t *row;
    json_object_foreach (bn_benchresults_rows (before), name, row)
        json_object_set_new (names, name, json_true ());
    json_object_foreach (bn_benchresults_rows (after), name, row)
        json_object_set_new (names, name, json_true ());
    size_t total = json_object_size (names);
    const char **sorted = calloc (total ? total : 1, sizeof *sorted);
    size_t n = 0;
    json_object_foreach (names, name, row) sorted[n++] = name;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp (sorted[j - 1], sorted[j]) > 0;
             j--) {
            const char *swap = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = swap;
        }
    for (size_t k = 0; k < n; k++) {
        name = sorted[k];
        //  the cases of either file, as asv compares them
        json_t *params =
            json_deep_copy (bn_benchresults_params (after, name)
                                ?: bn_benchresults_params (before, name));
        json_t *older = bn_benchresults_params (before, name);
        if (json_array_size (older) == json_array_size (params))
            for (size_t p = 0; p < json_array_size (params); p++) {
                size_t i;
                json_t *value;
                json_array_foreach (json_array_get (older, p), i, value)
                {
                    bn_benchdef_grid_add (json_array_get (params, p),
                                          json_string_value (value));
                }
            }
        const char *unit = json_string_value (
            json_object_get (json_object_get (units, name), "unit"));
        if (!unit)
            unit = "seconds";
        for (size_t c = 0; c < s_cases (params); c++) {
            char text[512];
            s_params_text (params, c, text, sizeof text);
            //  the same parameter set in the other file
            size_t count = json_array_size (params);
            const char *values[8];
            size_t index = c;
            for (size_t p = count; p-- > 0 && p < 8;) {
                json_t *list = json_array_get (params, p);
                size_t size = json_array_size (list);
                values[p] =
                    json_string_value (json_array_get (list, index % size));
                index /= size;
            }
            long ia = bn_benchresults_find (before, name, values, count);
            long ib = bn_benchresults_find (after, name, values, count);
            if (ia < 0 && ib < 0)
                continue; //  a mix of the two grids neither ran
            double va = NAN, vb = NAN;
            bn_benchstats_t sa, sb;
            double *xa = NULL, *xb = NULL;
            size_t na = 0, nb = 0;
            bn_benchresult_t ra =
                ia < 0 ? BN_BENCHRESULT_MISSING
                       : bn_benchresults_case (before, name, (size_t)ia, &va,
                                               &sa, &xa, &na);
            bn_benchresult_t rb =
                ib < 0 ? BN_BENCHRESULT_MISSING
                       : bn_benchresults_case (after, name, (size_t)ib, &vb,
                                               &sb, &xb, &nb);
            char mark = ' ';
            char ratio[32] = "n/a";
            bool a_ok = ra == BN_BENCHRESULT_OK, b_ok = rb == BN_BENCHRESULT_OK;
            if (a_ok && b_ok && va > 0)
                snprintf (ratio, sizeof ratio, "%6.2f", vb / va);
            const char *version_a = bn_benchresults_row_version (before, name);
            const char *version_b = bn_benchresults_row_version (after, name);
            if (ra == BN_BENCHRESULT_MISSING || rb == BN_BENCHRESULT_MISSING)
                mark = ' ';
            else if (version_a && version_b && strcmp (version_a, version_b))
                mark = 'x'; //  the benchmark changed in between
            else if (a_ok && rb == BN_BENCHRESULT_FAILED) {
                mark = '!';
                counts->failing++;
            } else if (ra == BN_BENCHRESULT_FAILED && b_ok)
                mark = '*';
            else if (a_ok && b_ok) {
                bool stats = na > 1 && nb > 1;
                bool differ = !stats || bn_benchstats_differ (xa, na, xb, nb);
                if (vb * factor < va && differ) {
                    mark = '-';
                    counts->better++;
                } else if (va * factor < vb && differ) {
                    mark = '+';
                    counts->worse++;
                } else if (vb * factor < va || va * factor < vb) {
                    char plain[32];
                    snprintf (plain, sizeof plain, "~%.2f", vb / va);
                    snprintf (ratio, sizeof ratio, "%6s", plain);
                }
            }
            counts->compared++;
            free (xa);
            free (xb);
            if (only_changed && (mark == ' ' || mark == '*' || mark == 'x'))
                continue;
            char before_text[64] = "failed", after_text[64] = "failed";
            if (a_ok)
                bn_benchfmt_value (va, na > 1 ? (sa.q_75 - sa.q_25) / 2 : -1,
                                   unit, before_text, sizeof before_text);
            else if (ra == BN_BENCHRESULT_SKIPPED)
                snprintf (before_text, sizeof before_text, "n/a");
            else if (ra == BN_BENCHRESULT_MISSING)
                snprintf (before_text, sizeof before_text, "-");
            if (b_ok)
                bn_benchfmt_value (vb, nb > 1 ? (sb.q_75 - sb.q_25) / 2 : -1,
                                   unit, after_text, sizeof after_text);
            else if (rb == BN_BENCHRESULT_SKIPPED)
                snprintf (after_text, sizeof after_text, "n/a");
            else if (rb == BN_BENCHRESULT_MISSING)
                snprintf (after_text, sizeof after_text, "-");
            fprintf (out, "%c ", mark);
            s_right (out, before_text, 16);
            fputc (' ', out);
            s_right (out, after_text, 16);
            fprintf (out, " %8s  %s%s\n", ratio, name, text);
        }
        json_decref (params);
    }
    free (sorted);
    json_decref (names);
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchtargets: the README's performance targets, checked against a
    machine's results.  */
#define _GNU_SOURCE //  open_memstream
#include "bn_benchtargets.h"
#include "bn_benchdef.h"
#include "bn_benchfmt.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_MAX_PARAMS 8
#define S_MAX_VALUES 32
#define S_MAX_COMMITS 8
//  a target with more cells than this is summed up by its worst cell
#define S_MAX_LISTED 6

//  Cells stated against two yardsticks: the one-hop floor and the relay's
#define S_ECHO "echo.CoalescingBroadcast.time_echo"
#define S_ECHO_GRID "engines=16,64,256,1024 bytes=1000"
#define S_MANY                                                                 \
    "many.CoalescingBroadcast.time_many "                                      \
    "many.NonCoalescingBroadcast.time_many "                                   \
    "many.DirectViewBroadcast.time_many"
#define S_MANY_GRID "engines=128 messages=20"
#define S_MUX_PUSH "push.DirectViewBroadcast.time_push"
#define S_MUX_PUSH_GRID "engines=1 bytes=1000000"

static const bn_benchtarget_t s_builtin[] = {
    {"1 kB coalescing echo through the tree (C client, banyan engines, a "
     "broadcast view's defaults) ≤ 2× the floor at 16, 64, 256 and 1,024 "
     "engines",
     S_ECHO, S_ECHO_GRID, BN_BENCHTARGET_FLOOR, NULL, 2.0},
    {"the same ≤ 2× a bare ZeroMQ relay (the controller's own floor: two "
     "hops each way, as the client, the controller and the engines make)",
     S_ECHO, S_ECHO_GRID, BN_BENCHTARGET_FLOOR, BN_BENCH_FLOOR_RELAY_ECHO, 2.0},
    {"the same at one engine ≤ 4× the floor", S_ECHO, "engines=1 bytes=1000",
     BN_BENCHTARGET_FLOOR, NULL, 4.0},
    {"20 × 1 kB in flight to 128 engines ≤ 2× the floor keeping as many in "
     "flight",
     S_MANY, S_MANY_GRID, BN_BENCHTARGET_FLOOR, NULL, 2.0},
    {"the same ≤ 2× a bare ZeroMQ relay keeping as many in flight", S_MANY,
     S_MANY_GRID, BN_BENCHTARGET_FLOOR, BN_BENCH_FLOOR_RELAY_MANY, 2.0},
    {"1 MB broadcast to 64 engines ≤ 1.5× the floor sending it to 64 DEALERs",
     "push.CoalescingBroadcast.time_push", "engines=64 bytes=1000000",
     BN_BENCHTARGET_FLOOR, NULL, 1.5},
    {"1 MB push through the mux to one engine ≤ 1.3× the floor", S_MUX_PUSH,
     S_MUX_PUSH_GRID, BN_BENCHTARGET_FLOOR, NULL, 1.3},
    {"the same ≤ 1.3× a bare ZeroMQ relay (the mux's own floor: two hops "
     "each way, as the mux makes)",
     S_MUX_PUSH, S_MUX_PUSH_GRID, BN_BENCHTARGET_FLOOR,
     BN_BENCH_FLOOR_RELAY_PUSH, 1.3},
    {"stock Python client and stock engines: banyan-controller ≤ 1.05× "
     "ipcontroller in every cell (direct, coalescing, non-coalescing; 1 kB, "
     "100 kB, 1 MB; 1, 2, 16 engines)",
     "pyclient.DirectViewBroadcast.time_echo "
     "pyclient.CoalescingBroadcast.time_echo "
     "pyclient.NonCoalescingBroadcast.time_echo",
     "stack='mixed' engines=1,2,16 bytes=1000,100000,1000000",
     BN_BENCHTARGET_STACK, "stack='ipp'", 1.05},
    {"C client and stock engines: banyan-controller ≤ 1.05× ipcontroller in "
     "every cell (the same grid)",
     "peer.DirectViewBroadcast.time_echo peer.CoalescingBroadcast.time_echo "
     "peer.NonCoalescingBroadcast.time_echo",
     "stack='mixed' engines=1,2,16 bytes=1000,100000,1000000",
     BN_BENCHTARGET_STACK, "stack='ipp'", 1.05},
    {"`banyan px -b true` to 1,024 engines ≤ 1.2× posix_spawn of as many "
     "`true`",
     "px.Gather.time_px", "engines=1024 bytes=0", BN_BENCHTARGET_FLOOR, NULL,
     1.2},
    {"a 3 GiB push to an engine and broadcast to 4 engines from the C client: "
     "no process on the path holds more than about one copy (peak RSS ≤ 1.25× "
     "the payload)",
     "large.Memory.peakmem_process",
     "view='direct','tree','tree_processes' bytes=3221225472 "
     "process='client','controller','node','engine1','engine2','engine3',"
     "'engine4'",
     BN_BENCHTARGET_BYTES, NULL, 1.25},
    {"1,024 banyan engines registered in under 2 s",
     "startup.Registration.track_registered", "engines=1024",
     BN_BENCHTARGET_AT_MOST, NULL, 2.0},
    {"one engine of a `--count 1024` process under 2 MB of RSS",
     "memory.Engine.track_bytes_per_engine", "count=1024",
     BN_BENCHTARGET_AT_MOST, NULL, 2e6},
};

const bn_benchtarget_t *
bn_benchtargets_builtin (size_t *count)
{
    *count = sizeof s_builtin / sizeof s_builtin[0];
    return s_builtin;
}

//  A target's grid for one benchmark: each parameter's values, in the
//  order of the benchmark's param_names.
typedef struct {
    size_t params;
    const char *names[S_MAX_PARAMS];
    char *values[S_MAX_PARAMS][S_MAX_VALUES];
    size_t counts[S_MAX_PARAMS];
    char *buf; //  the spec, cut into the values
} s_grid_t;

static void
s_grid_free (s_grid_t *grid)
{
    free (grid->buf);
    grid->buf = NULL;
}

//  Read spec ("engines=16,64 bytes=1000") against the parameter names of
//  the benchmark (json array); 0, or -1 with the reason in err.
static int
s_grid_read (s_grid_t *grid, json_t *names, const char *spec, char *err,
             size_t errsize)
{
    memset (grid, 0, sizeof *grid);
    grid->params = json_array_size (names);
    if (grid->params == 0 || grid->params > S_MAX_PARAMS) {
        snprintf (err, errsize, "%zu parameters", grid->params);
        return -1;
    }
    for (size_t p = 0; p < grid->params; p++)
        grid->names[p] = json_string_value (json_array_get (names, p));
    grid->buf = strdup (spec);
    if (!grid->buf) {
        snprintf (err, errsize, "out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *word = strtok_r (grid->buf, " ", &save); word;
         word = strtok_r (NULL, " ", &save)) {
        char *equals = strchr (word, '=');
        if (!equals) {
            snprintf (err, errsize, "'%s' is not NAME=VALUES", word);
            return -1;
        }
        *equals = '\0';
        size_t p = 0;
        while (p < grid->params && strcmp (grid->names[p], word) != 0)
            p++;
        if (p == grid->params) {
            snprintf (err, errsize, "no parameter %s", word);
            return -1;
        }
        char *inner = NULL;
        for (char *value = strtok_r (equals + 1, ",", &inner); value;
             value = strtok_r (NULL, ",", &inner)) {
            if (grid->counts[p] == S_MAX_VALUES) {
                snprintf (err, errsize, "too many values of %s", word);
                return -1;
            }
            grid->values[p][grid->counts[p]++] = value;
        }
    }
    for (size_t p = 0; p < grid->params; p++)
        if (grid->counts[p] == 0) {
            snprintf (err, errsize, "no values of %s", grid->names[p]);
            return -1;
        }
    return 0;
}

//  What was found for one target.
typedef struct {
    size_t cells;    //  cells the target has
    size_t measured; //  of them, measured beside their yardstick
    size_t within;   //  of those, within the bound
    double worst;    //  the largest ratio
    char worst_label[160];
    char worst_value[32];
    FILE *list; //  "label: ratio (value)" of every measured cell
    const char *commits[S_MAX_COMMITS];
    size_t commit_count;
} s_found_t;

//  A parameter's value as a reader writes it: a repr text unquoted.
static void
s_plain (const char *value, char *buf, size_t size)
{
    size_t length = strlen (value);
    if (length >= 2 && value[0] == '\'' && value[length - 1] == '\'')
        snprintf (buf, size, "%.*s", (int)(length - 2), value + 1);
    else
        snprintf (buf, size, "%s", value);
}

//  The label of a cell: its benchmark's class where the target has
//  several, and the parameters that take more than one value.
static void
s_label (const char *name, bool several, s_grid_t *grid, const char **values,
         char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    if (several) {
        const char *dot = strchr (name, '.');
        const char *end = dot ? strchr (dot + 1, '.') : NULL;
        if (dot && end)
            used += (size_t)snprintf (buf, size, "%.*s", (int)(end - dot - 1),
                                      dot + 1);
    }
    for (size_t p = 0; p < grid->params && used < size; p++) {
        if (grid->counts[p] < 2)
            continue;
        char plain[64];
        s_plain (values[p], plain, sizeof plain);
        used += (size_t)snprintf (buf + used, size - used, "%s%s=%s",
                                  used ? ", " : "", grid->names[p], plain);
    }
}

//  The yardstick's ratio of a cell in results, or NAN if the cell or its
//  yardstick was not measured there; *skipped when the run found the cell
//  does not apply (n/a: a tree node of a view without one).
static double
s_ratio (const bn_benchtarget_t *target, json_t *benchmarks,
         bn_benchresults_t *results, const char *name, s_grid_t *grid,
         const char **values, double *value, bool *skipped)
{
    long index = bn_benchresults_find (results, name, values, grid->params);
    bn_benchresult_t status =
        index < 0 ? BN_BENCHRESULT_MISSING
                  : bn_benchresults_case (results, name, (size_t)index, value,
                                          NULL, NULL, NULL);
    *skipped = status == BN_BENCHRESULT_SKIPPED;
    if (status != BN_BENCHRESULT_OK)
        return NAN;
    if (target->kind == BN_BENCHTARGET_AT_MOST)
        return *value;
    if (target->kind == BN_BENCHTARGET_FLOOR)
        return bn_benchresults_floor_ratio (results, benchmarks, name, values,
                                            *value, target->versus);
    if (target->kind == BN_BENCHTARGET_BYTES) {
        for (size_t p = 0; p < grid->params; p++)
            if (strcmp (grid->names[p], "bytes") == 0) {
                double bytes = strtod (values[p], NULL);
                return bytes > 0 ? *value / bytes : NAN;
            }
        return NAN;
    }
    //  the same cell with versus's value of its parameter
    const char *other[S_MAX_PARAMS];
    const char *equals = strchr (target->versus, '=');
    if (!equals)
        return NAN;
    size_t length = (size_t)(equals - target->versus);
    for (size_t p = 0; p < grid->params; p++)
        other[p] = strlen (grid->names[p]) == length &&
                           strncmp (grid->names[p], target->versus, length) == 0
                       ? equals + 1
                       : values[p];
    index = bn_benchresults_find (results, name, other, grid->params);
    double yardstick;
    if (index < 0 ||
        bn_benchresults_case (results, name, (size_t)index, &yardstick, NULL,
                              NULL, NULL) != BN_BENCHRESULT_OK ||
        yardstick <= 0)
        return NAN;
    return *value / yardstick;
}

static void
s_note_commit (s_found_t *found, const char *commit)
{
    for (size_t i = 0; i < found->commit_count; i++)
        if (strcmp (found->commits[i], commit) == 0)
            return;
    if (found->commit_count < S_MAX_COMMITS)
        found->commits[found->commit_count++] = commit;
}

//  Look up every cell of one benchmark of target.
static int
s_find (const bn_benchtarget_t *target, json_t *benchmarks,
        bn_benchresults_t **results, size_t results_count, const char *name,
        bool several, s_found_t *found, char *err, size_t errsize)
{
    json_t *entry = json_object_get (benchmarks, name);
    //  a benchmark no run has declared yet: its parameters as the target
    //  names them, no cell measured
    json_t *names = json_incref (json_object_get (entry, "param_names"));
    if (!names) {
        names = json_array ();
        char *spec = strdup (target->cells), *save = NULL;
        for (char *word = spec ? strtok_r (spec, " ", &save) : NULL; word;
             word = strtok_r (NULL, " ", &save))
            json_array_append_new (names,
                                   json_stringn (word, strcspn (word, "=")));
        free (spec);
    }
    s_grid_t grid;
    if (s_grid_read (&grid, names, target->cells, err, errsize) != 0) {
        char reason[256];
        snprintf (reason, sizeof reason, "%s", err);
        snprintf (err, errsize, "target '%s', %s: %s", target->text, name,
                  reason);
        s_grid_free (&grid);
        json_decref (names);
        return -1;
    }
    const char *unit = json_string_value (json_object_get (entry, "unit"));
    size_t cells = 1;
    for (size_t p = 0; p < grid.params; p++)
        cells *= grid.counts[p];
    for (size_t cell = 0; cell < cells; cell++) {
        const char *values[S_MAX_PARAMS];
        size_t rest = cell;
        for (size_t p = grid.params; p-- > 0;) {
            values[p] = grid.values[p][rest % grid.counts[p]];
            rest /= grid.counts[p];
        }
        found->cells++;
        //  the newest file with the cell beside its yardstick; a cell the
        //  newest run holding it found not to apply is not one
        double ratio = NAN, value = 0;
        bn_benchresults_t *source = NULL;
        bool skipped = false;
        for (size_t r = results_count; r-- > 0 && !source && !skipped;) {
            ratio = s_ratio (target, benchmarks, results[r], name, &grid,
                             values, &value, &skipped);
            if (!isnan (ratio))
                source = results[r];
        }
        if (skipped)
            found->cells--;
        if (!source)
            continue;
        s_note_commit (found, bn_benchresults_commit (source));
        found->measured++;
        if (ratio <= target->bound)
            found->within++;
        char label[160], text[32];
        s_label (name, several, &grid, values, label, sizeof label);
        bn_benchfmt_value (value, -1, unit ? unit : "seconds", text,
                           sizeof text);
        if (target->kind == BN_BENCHTARGET_AT_MOST)
            fprintf (found->list, "%s%s%s%s", found->measured > 1 ? "; " : "",
                     label, *label ? ": " : "", text);
        else
            fprintf (found->list, "%s%s%s%.2f× (%s)",
                     found->measured > 1 ? "; " : "", label, *label ? ": " : "",
                     ratio, text);
        if (found->measured == 1 || ratio > found->worst) {
            found->worst = ratio;
            snprintf (found->worst_label, sizeof found->worst_label, "%s",
                      label);
            snprintf (found->worst_value, sizeof found->worst_value, "%s",
                      text);
        }
    }
    s_grid_free (&grid);
    json_decref (names);
    return 0;
}

//  One target's row.
static int
s_row (FILE *out, const bn_benchtarget_t *target, json_t *benchmarks,
       bn_benchresults_t **results, size_t results_count, char *err,
       size_t errsize)
{
    s_found_t found = {.cells = 0};
    char *listed = NULL;
    size_t listed_size = 0;
    found.list = open_memstream (&listed, &listed_size);
    char *names = strdup (target->benchmarks);
    if (!found.list || !names) {
        snprintf (err, errsize, "out of memory");
        if (found.list)
            fclose (found.list);
        free (listed);
        free (names);
        return -1;
    }
    int rc = 0;
    bool several = strchr (target->benchmarks, ' ') != NULL;
    char *save = NULL;
    for (char *name = strtok_r (names, " ", &save); name && rc == 0;
         name = strtok_r (NULL, " ", &save))
        rc = s_find (target, benchmarks, results, results_count, name, several,
                     &found, err, errsize);
    fclose (found.list);
    if (rc == 0) {
        fprintf (out, "| %s | ", target->text);
        if (found.measured == 0)
            fprintf (out, "not measured");
        else if (found.measured <= S_MAX_LISTED)
            fprintf (out, "%s", listed);
        else
            fprintf (out, "%zu of %zu within %.2f×; the worst %.2f× (%s%s%s)",
                     found.within, found.measured, target->bound, found.worst,
                     found.worst_label, *found.worst_label ? ", " : "",
                     found.worst_value);
        if (found.measured > 0 && found.measured < found.cells)
            fprintf (out, "; %zu of %zu cells not measured",
                     found.cells - found.measured, found.cells);
        if (found.commit_count) {
            fprintf (out, " [");
            for (size_t i = 0; i < found.commit_count; i++)
                fprintf (out, "%s%.8s", i ? ", " : "", found.commits[i]);
            fprintf (out, "]");
        }
        const char *met = found.within < found.measured  ? "no"
                          : found.measured < found.cells ? "not measured"
                                                         : "yes";
        fprintf (out, " | %s |\n", met);
    }
    free (listed);
    free (names);
    return rc;
}

char *
bn_benchtargets_table (const bn_benchtarget_t *targets, size_t count,
                       json_t *benchmarks, bn_benchresults_t **results,
                       size_t results_count, char *err, size_t errsize)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    if (!out) {
        snprintf (err, errsize, "out of memory");
        return NULL;
    }
    fprintf (out,
             "| target | measured [commit] | met |\n| --- | --- | --- |\n");
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++)
        rc = s_row (out, &targets[i], benchmarks, results, results_count, err,
                    errsize);
    fclose (out);
    if (rc != 0) {
        free (text);
        return NULL;
    }
    return text;
}

//  The offset of the line holding marker in text at or after from, or -1.
static long
s_marker_line (const char *text, const char *marker, size_t from)
{
    const char *found = strstr (text + from, marker);
    if (!found)
        return -1;
    const char *line = found;
    while (line > text && line[-1] != '\n')
        line--;
    return line - text;
}

int
bn_benchtargets_splice (const char *path, const char *text, char *err,
                        size_t errsize)
{
    char *old = bn_benchresults_slurp (path);
    if (!old) {
        snprintf (err, errsize, "cannot read %s: %s", path, strerror (errno));
        return -1;
    }
    long begin = s_marker_line (old, BN_BENCHTARGETS_BEGIN, 0);
    const char *after_begin = begin < 0 ? NULL : strchr (old + begin, '\n');
    long end = after_begin ? s_marker_line (old, BN_BENCHTARGETS_END,
                                            (size_t)(after_begin + 1 - old))
                           : -1;
    if (end < 0) {
        snprintf (err, errsize,
                  "%s has no lines %s and %s to put the targets between", path,
                  BN_BENCHTARGETS_BEGIN, BN_BENCHTARGETS_END);
        free (old);
        return -1;
    }
    //  written beside it, then renamed over it
    char temp[4096];
    snprintf (temp, sizeof temp, "%s.XXXXXX", path);
    int fd = mkstemp (temp);
    FILE *out = fd >= 0 ? fdopen (fd, "w") : NULL;
    if (!out) {
        snprintf (err, errsize, "cannot write beside %s: %s", path,
                  strerror (errno));
        if (fd >= 0) {
            close (fd);
            unlink (temp);
        }
        free (old);
        return -1;
    }
    struct stat info;
    if (stat (path, &info) == 0)
        fchmod (fd, info.st_mode & 07777);
    size_t head = (size_t)(after_begin + 1 - old);
    bool failed = fwrite (old, 1, head, out) != head || fputs (text, out) < 0;
    size_t length = strlen (text);
    if (length && text[length - 1] != '\n')
        failed = failed || fputc ('\n', out) == EOF;
    failed = failed || fputs (old + end, out) < 0;
    failed = fclose (out) != 0 || failed;
    if (failed || rename (temp, path) != 0) {
        snprintf (err, errsize, "cannot write %s: %s", path, strerror (errno));
        unlink (temp);
        free (old);
        return -1;
    }
    free (old);
    return 0;
}

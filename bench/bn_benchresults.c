/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchresults: asv's result files, written and read.  */
#define _GNU_SOURCE
#include "bn_benchresults.h"

#include <assert.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

//  asv's columns, in its order
static const char *s_columns[] = {
    "result",     "params",        "version",       "started_at",
    "duration",   "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
    "stats_q_75", "stats_number",  "stats_repeat",  "samples",
    "profile"};
#define S_COLUMNS (sizeof s_columns / sizeof s_columns[0])
enum {
    S_RESULT,
    S_PARAMS,
    S_VERSION,
    S_STARTED_AT,
    S_DURATION,
    S_CI_A,
    S_CI_B,
    S_Q_25,
    S_Q_75,
    S_NUMBER,
    S_REPEAT,
    S_SAMPLES,
    S_PROFILE
};

struct _bn_benchresults_t {
    json_t *root;      //  the file's object
    json_t *columns;   //  name -> array of S_COLUMNS values, while building
    json_t *durations; //  name -> seconds
    char *machine;     //  machine name
};

//  5 significant digits, as asv truncates stats before saving.
static json_t *
s_real (double value)
{
    if (isnan (value))
        return json_string ("NaN");
    if (value == 0 || isinf (value))
        return json_real (value);
    char text[32];
    snprintf (text, sizeof text, "%.5g", value);
    return json_real (strtod (text, NULL));
}

char *
bn_benchresults_slurp (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        return NULL;
    size_t size = 0, capacity = 65536;
    char *text = malloc (capacity + 1);
    size_t n;
    while (text && (n = fread (text + size, 1, capacity - size, file)) > 0) {
        size += n;
        if (size == capacity) {
            capacity *= 2;
            char *bigger = realloc (text, capacity + 1);
            if (!bigger) {
                free (text);
                text = NULL;
            }
            text = bigger;
        }
    }
    fclose (file);
    if (text)
        text[size] = 0;
    return text;
}

char *
bn_benchresults_dumps (json_t *root, size_t flags)
{
    char *text = json_dumps (root, flags);
    if (!text)
        return NULL;
    //  "NaN" is only ever the marker (params are quoted reprs: "'x'")
    char *out = text, *in = text;
    while (*in) {
        if (strncmp (in, "\"NaN\"", 5) == 0) {
            memcpy (out, "NaN", 3);
            out += 3;
            in += 5;
        } else
            *out++ = *in++;
    }
    *out = 0;
    return text;
}

json_t *
bn_benchresults_loads (const char *text, char *err, size_t errsize)
{
    size_t length = strlen (text);
    char *copy = malloc (length * 5 / 3 + 16);
    if (!copy)
        return NULL;
    char *out = copy;
    bool in_string = false;
    for (const char *in = text; *in; in++) {
        if (in_string) {
            if (*in == '\\' && in[1]) {
                *out++ = *in++;
            } else if (*in == '"')
                in_string = false;
            *out++ = *in;
        } else if (*in == '"') {
            in_string = true;
            *out++ = *in;
        } else if (strncmp (in, "NaN", 3) == 0) {
            memcpy (out, "\"NaN\"", 5);
            out += 5;
            in += 2;
        } else
            *out++ = *in;
    }
    *out = 0;
    json_error_t error;
    json_t *root = json_loads (copy, 0, &error);
    free (copy);
    if (!root && err)
        snprintf (err, errsize, "line %d: %s", error.line, error.text);
    return root;
}

static int
s_write (const char *path, json_t *root, size_t flags, char *err,
         size_t errsize)
{
    char *text = bn_benchresults_dumps (root, flags);
    FILE *file = text ? fopen (path, "w") : NULL;
    if (!file || fputs (text, file) < 0 || fclose (file) != 0) {
        snprintf (err, errsize, "cannot write %s: %s", path, strerror (errno));
        free (text);
        return -1;
    }
    free (text);
    return 0;
}

json_t *
bn_benchresults_machine_info (const char *machine)
{
    struct utsname names;
    uname (&names);
    char cpu[256] = "";
    FILE *file = fopen ("/proc/cpuinfo", "r");
    char line[512];
    while (file && fgets (line, sizeof line, file))
        if (strncmp (line, "model name", 10) == 0) {
            char *colon = strchr (line, ':');
            if (colon) {
                snprintf (cpu, sizeof cpu, "%s", colon + 2);
                cpu[strcspn (cpu, "\n")] = 0;
            }
            break;
        }
    if (file)
        fclose (file);
    long pages = sysconf (_SC_PHYS_PAGES), page = sysconf (_SC_PAGE_SIZE);
    char ram[32], os[512], cpus[16];
    snprintf (ram, sizeof ram, "%lld", (long long)pages * page);
    snprintf (os, sizeof os, "%s %s", names.sysname, names.release);
    snprintf (cpus, sizeof cpus, "%ld", sysconf (_SC_NPROCESSORS_ONLN));
    return json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "arch", names.machine,
                      "cpu", cpu, "machine", machine ? machine : names.nodename,
                      "num_cpu", cpus, "os", os, "ram", ram);
}

bn_benchresults_t *
bn_benchresults_new (json_t *machine, const char *commit, const char *env,
                     double date_ms)
{
    bn_benchresults_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    json_t *params = json_deep_copy (machine);
    json_object_set_new (params, "python", json_string (""));
    self->root = json_pack (
        "{s:s, s:s, s:I, s:o, s:s, s:{}, s:{}, s:[], s:{}, s:{}, s:i}",
        "commit_hash", commit, "env_name", env, "date", (json_int_t)date_ms,
        "params", params, "python", "", "requirements", "env_vars",
        "result_columns", "results", "durations", "version", 2);
    for (size_t i = 0; self->root && i < S_COLUMNS; i++)
        json_array_append_new (json_object_get (self->root, "result_columns"),
                               json_string (s_columns[i]));
    self->columns = json_object ();
    self->durations = json_object ();
    self->machine =
        strdup (json_string_value (json_object_get (machine, "machine")) ?: "");
    if (!self->root || !self->columns || !self->machine)
        bn_benchresults_destroy (&self);
    return self;
}

void
bn_benchresults_destroy (bn_benchresults_t **self_p)
{
    assert (self_p);
    bn_benchresults_t *self = *self_p;
    if (!self)
        return;
    json_decref (self->root);
    json_decref (self->columns);
    json_decref (self->durations);
    free (self->machine);
    free (self);
    *self_p = NULL;
}

int
bn_benchresults_each (const char *dir, const char *prefix,
                      bn_benchresults_fn *fn, void *arg)
{
    assert (dir);
    assert (fn);
    DIR *folder = opendir (dir);
    struct dirent *file;
    int rc = 0;
    while (rc == 0 && folder && (file = readdir (folder))) {
        size_t length = strlen (file->d_name);
        if (length < 6 || strcmp (file->d_name + length - 5, ".json") ||
            strcmp (file->d_name, "machine.json") == 0 ||
            (prefix && strncmp (file->d_name, prefix, strlen (prefix))))
            continue;
        char full[8192], why[256];
        snprintf (full, sizeof full, "%s/%s", dir, file->d_name);
        bn_benchresults_t *results =
            bn_benchresults_load (full, why, sizeof why);
        if (results) {
            rc = fn (arg, &results);
            bn_benchresults_destroy (&results);
        }
    }
    if (folder)
        closedir (folder);
    return rc;
}

//  Turn a loaded row (columns named by result_columns) into our full
//  S_COLUMNS layout.
static json_t *
s_row_columns (json_t *names, json_t *row)
{
    json_t *full = json_array ();
    for (size_t c = 0; c < S_COLUMNS; c++) {
        json_t *value = json_null ();
        size_t i;
        json_t *name;
        json_array_foreach (names, i, name)
        {
            if (strcmp (json_string_value (name) ?: "", s_columns[c]) == 0 &&
                i < json_array_size (row)) {
                value = json_incref (json_array_get (row, i));
                break;
            }
        }
        json_array_append_new (full, value);
    }
    return full;
}

bn_benchresults_t *
bn_benchresults_load (const char *path, char *err, size_t errsize)
{
    char *text = bn_benchresults_slurp (path);
    if (!text) {
        snprintf (err, errsize, "cannot read %s: %s", path, strerror (errno));
        return NULL;
    }
    char why[256] = "";
    json_t *root = bn_benchresults_loads (text, why, sizeof why);
    free (text);
    if (!root) {
        snprintf (err, errsize, "%s: %s", path, why);
        return NULL;
    }
    json_t *results = json_object_get (root, "results");
    json_t *names = json_object_get (root, "result_columns");
    if (json_integer_value (json_object_get (root, "version")) != 2 ||
        !json_is_object (results) || !json_is_array (names) ||
        !json_is_string (json_object_get (root, "commit_hash"))) {
        snprintf (err, errsize, "%s: not an asv result file of version 2",
                  path);
        json_decref (root);
        return NULL;
    }
    bn_benchresults_t *self = calloc (1, sizeof *self);
    if (!self) {
        json_decref (root);
        return NULL;
    }
    self->root = root;
    self->columns = json_object ();
    self->durations = json_object ();
    json_t *params = json_object_get (root, "params");
    self->machine =
        strdup (json_string_value (json_object_get (params, "machine")) ?: "");
    const char *name;
    json_t *row;
    json_object_foreach (results, name, row)
        json_object_set_new (self->columns, name, s_row_columns (names, row));
    return self;
}

void
bn_benchresults_filename (const char *commit, const char *env, char *buf,
                          size_t size)
{
    snprintf (buf, size, "%.8s-%s.json", commit, env);
}

int
bn_benchresults_save (bn_benchresults_t *self, const char *dir, char *err,
                      size_t errsize)
{
    assert (self);
    //  Rows: our columns with all-null lists made null and trailing
    //  nulls dropped, as asv saves them
    json_t *results = json_object ();
    const char *name;
    json_t *columns;
    json_object_foreach (self->columns, name, columns)
    {
        json_t *row = json_array ();
        for (size_t c = 0; c < S_COLUMNS; c++) {
            json_t *value = json_array_get (columns, c);
            if (c == S_DURATION && json_object_get (self->durations, name))
                value = json_object_get (self->durations, name);
            bool all_null = json_is_array (value) && c != S_PARAMS;
            size_t i;
            json_t *item;
            json_array_foreach (value, i, item) if (!json_is_null (item))
                all_null = false;
            json_array_append (row, !value || all_null ? json_null () : value);
        }
        while (json_array_size (row) &&
               json_is_null (json_array_get (row, json_array_size (row) - 1)))
            json_array_remove (row, json_array_size (row) - 1);
        json_object_set_new (results, name, row);
    }
    json_object_set_new (self->root, "results", results);

    char path[4096];
    snprintf (path, sizeof path, "%s/%s", dir, self->machine);
    if (zsys_dir_create ("%s", path) != 0) {
        snprintf (err, errsize, "cannot create %s: %s", path, strerror (errno));
        return -1;
    }
    json_t *machine = json_deep_copy (json_object_get (self->root, "params"));
    json_object_del (machine, "python");
    json_object_set_new (machine, "version", json_integer (1));
    snprintf (path, sizeof path, "%s/%s/machine.json", dir, self->machine);
    int rc =
        s_write (path, machine, JSON_INDENT (4) | JSON_SORT_KEYS, err, errsize);
    json_decref (machine);
    if (rc != 0)
        return -1;
    char file[256];
    bn_benchresults_filename (bn_benchresults_commit (self),
                              bn_benchresults_env (self), file, sizeof file);
    snprintf (path, sizeof path, "%s/%s/%s", dir, self->machine, file);
    return s_write (path, self->root, JSON_COMPACT, err, errsize);
}

void
bn_benchresults_begin (bn_benchresults_t *self, const char *name,
                       json_t *params, const char *version,
                       double started_at_ms)
{
    size_t cases = 1;
    size_t i;
    json_t *values;
    json_array_foreach (params, i, values) cases *= json_array_size (values);
    json_t *columns = json_array ();
    for (size_t c = 0; c < S_COLUMNS; c++) {
        json_t *value = json_null ();
        if (c == S_PARAMS)
            value = json_deep_copy (params);
        else if (c == S_VERSION)
            value = json_string (version);
        else if (c == S_STARTED_AT)
            value = json_integer ((json_int_t)started_at_ms);
        else if (c != S_DURATION && c != S_PROFILE) {
            value = json_array ();
            for (size_t k = 0; k < cases; k++)
                json_array_append_new (value, json_null ());
        }
        json_array_append_new (columns, value);
    }
    json_object_set_new (self->columns, name, columns);
}

void
bn_benchresults_set_case (bn_benchresults_t *self, const char *name,
                          size_t index, bn_benchresult_t status,
                          const double *samples, size_t count, int number)
{
    json_t *columns = json_object_get (self->columns, name);
    assert (columns);
    if (status == BN_BENCHRESULT_SKIPPED) {
        json_array_set_new (json_array_get (columns, S_RESULT), index,
                            json_string ("NaN"));
        return;
    }
    bn_benchstats_t stats;
    if (status != BN_BENCHRESULT_OK ||
        bn_benchstats_compute (&stats, samples, count) != 0)
        return; //  failed: nulls
    json_array_set_new (json_array_get (columns, S_RESULT), index,
                        json_real (stats.median));
    json_array_set_new (json_array_get (columns, S_CI_A), index,
                        s_real (stats.ci_a));
    json_array_set_new (json_array_get (columns, S_CI_B), index,
                        s_real (stats.ci_b));
    json_array_set_new (json_array_get (columns, S_Q_25), index,
                        s_real (stats.q_25));
    json_array_set_new (json_array_get (columns, S_Q_75), index,
                        s_real (stats.q_75));
    json_array_set_new (json_array_get (columns, S_NUMBER), index,
                        json_integer (number));
    json_array_set_new (json_array_get (columns, S_REPEAT), index,
                        json_integer ((json_int_t)count));
    json_t *list = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (list, json_real (samples[i]));
    json_array_set_new (json_array_get (columns, S_SAMPLES), index, list);
}

void
bn_benchresults_set_duration (bn_benchresults_t *self, const char *name,
                              double seconds)
{
    json_object_set_new (self->durations, name, s_real (seconds));
}

static double
s_number (json_t *value)
{
    return json_is_number (value) ? json_number_value (value) : NAN;
}

bn_benchresult_t
bn_benchresults_case (bn_benchresults_t *self, const char *name, size_t index,
                      double *value, bn_benchstats_t *stats, double **samples,
                      size_t *count)
{
    json_t *columns = json_object_get (self->columns, name);
    json_t *results = json_array_get (columns, S_RESULT);
    if (!columns)
        return BN_BENCHRESULT_MISSING;
    //  a non-parametrised benchmark may keep a bare value
    json_t *result = json_is_array (results) ? json_array_get (results, index)
                     : index == 0            ? results
                                             : NULL;
    if (!result && json_is_array (results))
        return BN_BENCHRESULT_MISSING;
    if (json_is_string (result))
        return BN_BENCHRESULT_SKIPPED;
    if (!json_is_number (result))
        return BN_BENCHRESULT_FAILED;
    if (value)
        *value = json_number_value (result);
    json_t *list = json_array_get (json_array_get (columns, S_SAMPLES), index);
    if (stats) {
        memset (stats, 0, sizeof *stats);
        stats->median = json_number_value (result);
        stats->ci_a =
            s_number (json_array_get (json_array_get (columns, S_CI_A), index));
        stats->ci_b =
            s_number (json_array_get (json_array_get (columns, S_CI_B), index));
        stats->q_25 =
            s_number (json_array_get (json_array_get (columns, S_Q_25), index));
        stats->q_75 =
            s_number (json_array_get (json_array_get (columns, S_Q_75), index));
        stats->count = json_array_size (list);
        stats->min = stats->max = stats->median;
    }
    if (samples && count) {
        *count = json_array_size (list);
        *samples = *count ? malloc (*count * sizeof **samples) : NULL;
        if (!*samples)
            *count = 0;
        for (size_t i = 0; i < *count; i++) {
            (*samples)[i] = s_number (json_array_get (list, i));
            if (stats && i == 0)
                stats->min = stats->max = (*samples)[0];
            if (stats && (*samples)[i] < stats->min)
                stats->min = (*samples)[i];
            if (stats && (*samples)[i] > stats->max)
                stats->max = (*samples)[i];
        }
    }
    return BN_BENCHRESULT_OK;
}

long
bn_benchresults_find (bn_benchresults_t *self, const char *name,
                      const char **values, size_t count)
{
    json_t *params = bn_benchresults_params (self, name);
    if (!params || json_array_size (params) != count)
        return -1;
    //  cartesian product order, the last parameter varying fastest
    long index = 0;
    for (size_t p = 0; p < count; p++) {
        json_t *list = json_array_get (params, p);
        long found = -1;
        for (size_t i = 0; i < json_array_size (list); i++)
            if (strcmp (json_string_value (json_array_get (list, i)) ?: "",
                        values[p]) == 0)
                found = (long)i;
        if (found < 0)
            return -1;
        index = index * (long)json_array_size (list) + found;
    }
    return index;
}

double
bn_benchresults_floor_ratio (bn_benchresults_t *self, json_t *benchmarks,
                             const char *name, const char **values,
                             double value, const char *floor_name)
{
    json_t *entry = json_object_get (benchmarks, name);
    json_t *names = json_object_get (entry, "param_names");
    const char *spec =
        json_string_value (json_object_get (entry, "banyan_floor"));
    if (!spec)
        return NAN;
    //  benchmarks.json files older than the pipelined floor name none
    if (!floor_name)
        floor_name = json_string_value (
            json_object_get (entry, "banyan_floor_benchmark"));
    if (!floor_name)
        floor_name = BN_BENCH_FLOOR_NAME;
    char buf[128];
    snprintf (buf, sizeof buf, "%s", spec);
    const char *parts[2] = {NULL, NULL};
    char *save;
    char *word = strtok_r (buf, " ", &save);
    for (int i = 0; i < 2 && word; i++, word = strtok_r (NULL, " ", &save)) {
        parts[i] = word;
        size_t p;
        json_t *param;
        json_array_foreach (
            names, p, param) if (strcmp (json_string_value (param), word) == 0)
            parts[i] = values[p];
    }
    if (!parts[1])
        return NAN;
    //  a floor measured again after the benchmark is of another run
    if (bn_benchresults_started (self, floor_name) >
        bn_benchresults_started (self, name))
        return NAN;
    long index = bn_benchresults_find (self, floor_name, parts, 2);
    double floor;
    if (index < 0 ||
        bn_benchresults_case (self, floor_name, (size_t)index, &floor, NULL,
                              NULL, NULL) != BN_BENCHRESULT_OK ||
        floor <= 0)
        return NAN;
    return value / floor;
}

double
bn_benchresults_started (bn_benchresults_t *self, const char *name)
{
    json_t *value =
        json_array_get (json_object_get (self->columns, name), S_STARTED_AT);
    return json_is_number (value) ? json_number_value (value) : NAN;
}

json_t *
bn_benchresults_params (bn_benchresults_t *self, const char *name)
{
    return json_array_get (json_object_get (self->columns, name), S_PARAMS);
}

const char *
bn_benchresults_row_version (bn_benchresults_t *self, const char *name)
{
    return json_string_value (
        json_array_get (json_object_get (self->columns, name), S_VERSION));
}

json_t *
bn_benchresults_rows (bn_benchresults_t *self)
{
    return self->columns;
}

const char *
bn_benchresults_commit (bn_benchresults_t *self)
{
    return json_string_value (json_object_get (self->root, "commit_hash"));
}

const char *
bn_benchresults_env (bn_benchresults_t *self)
{
    return json_string_value (json_object_get (self->root, "env_name"));
}

const char *
bn_benchresults_machine (bn_benchresults_t *self)
{
    return self->machine;
}

double
bn_benchresults_date (bn_benchresults_t *self)
{
    return s_number (json_object_get (self->root, "date"));
}

//  A short stable version: FNV-1a of the benchmark's definition, in hex.
void
bn_benchresults_version (const bn_benchdef_t *def, char *buf, size_t size)
{
    if (def->version) {
        snprintf (buf, size, "%s", def->version);
        return;
    }
    uint64_t hash = 14695981039346656037ULL;
    const char *parts[] = {def->name, def->param_names ? def->param_names : "",
                           bn_benchdef_unit (def),
                           def->description ? def->description : ""};
    for (size_t p = 0; p < 4; p++) {
        for (const char *c = parts[p]; *c; c++)
            hash = (hash ^ (unsigned char)*c) * 1099511628211ULL;
        hash = (hash ^ 0xff) * 1099511628211ULL; //  parts apart
    }
    snprintf (buf, size, "%016llx", (unsigned long long)hash);
}

//  Add every value of grid to the lists of whole (same parameters).
static void
s_grid_union (json_t *whole, json_t *grid)
{
    if (!json_is_array (grid) ||
        json_array_size (grid) != json_array_size (whole))
        return;
    size_t p;
    json_t *values;
    json_array_foreach (grid, p, values)
    {
        size_t i;
        json_t *value;
        json_array_foreach (values, i, value)
        {
            if (json_is_string (value))
                bn_benchdef_grid_add (json_array_get (whole, p),
                                      json_string_value (value));
        }
    }
}

int
bn_benchresults_save_benchmarks (const char *dir,
                                 const bn_benchdef_t *const *defs,
                                 json_t *const *grids, size_t count, char *err,
                                 size_t errsize)
{
    char path[4096];
    if (zsys_dir_create ("%s", dir) != 0) {
        snprintf (err, errsize, "cannot create %s: %s", dir, strerror (errno));
        return -1;
    }
    snprintf (path, sizeof path, "%s/benchmarks.json", dir);
    char *text = bn_benchresults_slurp (path);
    json_t *root = text ? json_loads (text, 0, NULL) : NULL;
    free (text);
    if (!json_is_object (root)) {
        json_decref (root);
        root = json_object ();
    }
    for (size_t i = 0; i < count; i++) {
        const bn_benchdef_t *def = defs[i];
        json_t *names = json_array ();
        char buf[256];
        snprintf (buf, sizeof buf, "%s", def->param_names);
        for (char *word = strtok (buf, " "); word; word = strtok (NULL, " "))
            json_array_append_new (names, json_string (word));
        char version[64];
        bn_benchresults_version (def, version, sizeof version);
        json_t *grid = bn_benchdef_grid (def, false);
        json_t *quick = bn_benchdef_grid (def, true);
        s_grid_union (grid, quick);
        json_decref (quick);
        s_grid_union (grid, grids ? grids[i] : NULL);
        json_t *old = json_object_get (root, def->name);
        if (strcmp (json_string_value (json_object_get (old, "version")) ?: "",
                    version) == 0)
            s_grid_union (grid, json_object_get (old, "params"));
        bn_benchkind_t kind = bn_benchdef_kind (def);
        const char *type = kind == BN_BENCH_TIME    ? "time"
                           : kind == BN_BENCH_TRACK ? "track"
                                                    : "peakmemory";
        json_t *entry = json_pack (
            "{s:s, s:s, s:o, s:o, s:i, s:i, s:i, s:i, s:f, s:f, s:s, s:s, "
            "s:s, s:f}",
            "code", def->description ? def->description : def->name, "name",
            def->name, "param_names", names, "params", grid, "number",
            def->number, "repeat", def->repeat, "min_run_count", 2, "rounds", 1,
            "sample_time", 0.01, "timeout",
            def->timeout > 0 ? def->timeout : 120.0, "type", type, "unit",
            bn_benchdef_unit (def), "version", version, "warmup_time", -1.0);
        if (def->floor) {
            json_object_set_new (entry, "banyan_floor",
                                 json_string (def->floor));
            json_object_set_new (entry, "banyan_floor_benchmark",
                                 json_string (bn_benchdef_floor (def)));
        }
        json_object_set_new (root, def->name, entry);
    }
    json_object_set_new (root, "version", json_integer (2));
    int rc =
        s_write (path, root, JSON_INDENT (4) | JSON_SORT_KEYS, err, errsize);
    json_decref (root);
    return rc;
}

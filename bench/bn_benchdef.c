/*  bn_benchdef: what a benchmark's name says, and the case's accessors
    that suites use.  */
#include "bn_benchdef.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bn_benchkind_t
bn_benchdef_kind (const bn_benchdef_t *def)
{
    const char *last = strrchr (def->name, '.');
    last = last ? last + 1 : def->name;
    if (strncmp (last, "track_", 6) == 0)
        return BN_BENCH_TRACK;
    if (strncmp (last, "peakmem_", 8) == 0)
        return BN_BENCH_PEAKMEM;
    return BN_BENCH_TIME;
}

const char *
bn_benchdef_unit (const bn_benchdef_t *def)
{
    if (def->unit)
        return def->unit;
    return bn_benchdef_kind (def) == BN_BENCH_PEAKMEM ? "bytes" : "seconds";
}

json_t *
bn_benchdef_grid (const bn_benchdef_t *def, bool quick)
{
    char names[256], values[1024];
    snprintf (names, sizeof names, "%s",
              def->param_names ? def->param_names : "");
    const char *text =
        quick && def->quick_params ? def->quick_params : def->params;
    snprintf (values, sizeof values, "%s", text ? text : "");
    json_t *grid = json_array ();
    char *save_name, *save_group;
    char *group = strtok_r (values, "|", &save_group);
    for (char *name = strtok_r (names, " ", &save_name); name;
         name = strtok_r (NULL, " ", &save_name)) {
        json_t *list = json_array ();
        char *save;
        for (char *word = group ? strtok_r (group, " ", &save) : NULL; word;
             word = strtok_r (NULL, " ", &save))
            json_array_append_new (list, json_string (word));
        json_array_append_new (grid, list);
        group = strtok_r (NULL, "|", &save_group);
    }
    return grid;
}

void
bn_benchdef_grid_add (json_t *values, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach (values, i, item)
    {
        if (strcmp (json_string_value (item), value) == 0)
            return;
    }
    char *end;
    double number = strtod (value, &end);
    size_t at = json_array_size (values);
    if (*value && !*end)
        json_array_foreach (values, i, item)
        {
            const char *other = json_string_value (item);
            double than = strtod (other, &end);
            if (*other && !*end && than > number) {
                at = i;
                break;
            }
        }
    json_array_insert_new (values, at, json_string (value));
}

const char *
bn_benchcase_str (bn_benchcase_t *self, const char *name, char *buf,
                  size_t size)
{
    assert (self);
    for (size_t i = 0; i < self->param_count; i++)
        if (strcmp (self->param_names[i], name) == 0) {
            const char *value = self->param_values[i];
            size_t length = strlen (value);
            if (length >= 2 && (value[0] == '\'' || value[0] == '"')) {
                value++;
                length -= 2;
            }
            if (length >= size)
                length = size - 1;
            memcpy (buf, value, length);
            buf[length] = 0;
            return buf;
        }
    return NULL;
}

long
bn_benchcase_long (bn_benchcase_t *self, const char *name, long fallback)
{
    char buf[64];
    const char *text = bn_benchcase_str (self, name, buf, sizeof buf);
    return text ? strtol (text, NULL, 10) : fallback;
}

int
bn_benchcase_fail (bn_benchcase_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return BN_BENCH_FAIL;
}

int
bn_benchcase_skip (bn_benchcase_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return BN_BENCH_SKIP;
}

int
bn_benchcase_per_process (bn_benchcase_t *self, int n)
{
    if (self->per_process > 0)
        return self->per_process < n ? self->per_process : n;
    if (n <= 4)
        return 1;
    return (n + 3) / 4;
}

char *
bn_benchcase_program (bn_benchcase_t *self, const char *name)
{
    char path[4096];
    snprintf (path, sizeof path, "%s/%s", self->bin_dir ? self->bin_dir : ".",
              name);
    if (access (path, X_OK) != 0)
        return NULL;
    return strdup (path);
}

//  Digits after the point for three significant digits of value.
static int
s_decimals (double value)
{
    double magnitude = fabs (value);
    if (magnitude >= 100 || magnitude == 0)
        return 0;
    if (magnitude >= 10)
        return 1;
    return 2;
}

void
bn_benchfmt_value (double value, double err, const char *unit, char *buf,
                   size_t size)
{
    const char *suffix = "";
    double scale = 1;
    if (isnan (value)) {
        snprintf (buf, size, "n/a");
        return;
    }
    if (strcmp (unit, "seconds") == 0) {
        static const struct {
            double scale;
            const char *suffix;
        } units[] = {{1e-9, "ns"}, {1e-6, "μs"}, {1e-3, "ms"}, {1, "s"}};
        scale = 1e-9;
        suffix = "ns";
        for (size_t i = 0; i < 4; i++)
            if (fabs (value) >= units[i].scale * 0.9995) {
                scale = units[i].scale;
                suffix = units[i].suffix;
            }
    } else if (strcmp (unit, "bytes") == 0) {
        static const char *prefixes[] = {"", "k", "M", "G", "T"};
        for (size_t i = 0; i < 5; i++)
            if (fabs (value) >= pow (1000, (double)i) * 0.9995) {
                scale = pow (1000, (double)i);
                suffix = prefixes[i];
            }
    } else
        suffix = unit;
    double scaled = value / scale;
    int decimals = s_decimals (scaled);
    bool spaced = strcmp (unit, "seconds") != 0 && strcmp (unit, "bytes") != 0;
    if (err >= 0)
        snprintf (buf, size, "%.*f±%.*f%s%s", decimals, scaled, decimals,
                  err / scale, spaced ? " " : "", suffix);
    else
        snprintf (buf, size, "%.*f%s%s", decimals, scaled, spaced ? " " : "",
                  suffix);
}

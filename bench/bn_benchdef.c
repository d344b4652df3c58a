/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchdef: what a benchmark's definition says: its kind, unit, floor
    and parameter grid.  */
#include "bn_benchdef.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const char *
bn_benchdef_floor (const bn_benchdef_t *def)
{
    if (!def->floor)
        return NULL;
    return def->floor_bench ? def->floor_bench : BN_BENCH_FLOOR_NAME;
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

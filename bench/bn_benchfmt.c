/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchfmt: figures printed as asv prints them.  */
#include "bn_benchfmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

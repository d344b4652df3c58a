/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchpublish: the static site of banyan-bench's results, with
    plots drawn by gnuplot.  */
#define _GNU_SOURCE
#include "bn_benchpublish.h"
#include "bn_benchdef.h"
#include "bn_benchfmt.h"
#include "bn_benchresults.h"
#include "bn_benchtargets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_MAX_SERIES 12
#define S_MAX_PARAMS 8

typedef struct {
    char *name;                  //  machine name
    json_t *info;                //  machine.json
    bn_benchresults_t **results; //  its result files, oldest commit first
    size_t count;                //  how many
} s_machine_t;

typedef struct {
    const char *html_dir;  //  where the site goes
    json_t *benchmarks;    //  benchmarks.json
    s_machine_t *machines; //  every machine with results
    size_t machine_count;  //  how many
    FILE *script;          //  the gnuplot script being written
    FILE *table;           //  table.md
    size_t plots;          //  plots in the script
} s_site_t;

static void
s_html_escape (FILE *out, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++)
        switch (*c) {
        case '&':
            fputs ("&amp;", out);
            break;
        case '<':
            fputs ("&lt;", out);
            break;
        case '>':
            fputs ("&gt;", out);
            break;
        case '"':
            fputs ("&quot;", out);
            break;
        case '\'':
            fputs ("&#39;", out);
            break;
        default:
            fputc (*c, out);
        }
}

//  A gnuplot double-quoted string.
static void
s_gp_string (FILE *out, const char *text)
{
    fputc ('"', out);
    for (const char *c = text ? text : ""; *c; c++) {
        if (*c == '"' || *c == '\\')
            fputc ('\\', out);
        fputc (*c, out);
    }
    fputc ('"', out);
}

static int
s_compare_results (const void *a, const void *b)
{
    bn_benchresults_t *x = *(bn_benchresults_t *const *)a;
    bn_benchresults_t *y = *(bn_benchresults_t *const *)b;
    double dx = bn_benchresults_date (x), dy = bn_benchresults_date (y);
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return strcmp (bn_benchresults_commit (x), bn_benchresults_commit (y));
}

//  Keep results in the machine's list (bn_benchresults_fn).
static int
s_add_results (void *arg, bn_benchresults_t **results_p)
{
    s_machine_t *machine = (s_machine_t *)arg;
    bn_benchresults_t **more =
        realloc (machine->results, (machine->count + 1) * sizeof *more);
    if (!more)
        return -1;
    machine->results = more;
    machine->results[machine->count++] = *results_p;
    *results_p = NULL;
    return 0;
}

static int
s_load_machines (s_site_t *site, const char *results_dir, char *err,
                 size_t errsize)
{
    DIR *top = opendir (results_dir);
    if (!top) {
        snprintf (err, errsize, "cannot read %s: %s", results_dir,
                  strerror (errno));
        return -1;
    }
    struct dirent *entry;
    while ((entry = readdir (top))) {
        char path[4096];
        snprintf (path, sizeof path, "%s/%s/machine.json", results_dir,
                  entry->d_name);
        if (entry->d_name[0] == '.' || access (path, R_OK) != 0)
            continue;
        s_machine_t *grown =
            realloc (site->machines, (site->machine_count + 1) * sizeof *grown);
        if (!grown)
            break;
        site->machines = grown;
        s_machine_t *machine = &site->machines[site->machine_count++];
        memset (machine, 0, sizeof *machine);
        machine->name = strdup (entry->d_name);
        machine->info = json_load_file (path, 0, NULL);
        snprintf (path, sizeof path, "%s/%s", results_dir, entry->d_name);
        bn_benchresults_each (path, NULL, s_add_results, machine);
        qsort (machine->results, machine->count, sizeof *machine->results,
               s_compare_results);
    }
    closedir (top);
    return 0;
}

//  Repr texts of case index of params (last parameter fastest).
static void
s_case_values (json_t *params, size_t index, const char **values)
{
    for (size_t p = json_array_size (params); p-- > 0;) {
        json_t *list = json_array_get (params, p);
        size_t size = json_array_size (list);
        values[p] = json_string_value (json_array_get (list, index % size));
        index /= size ? size : 1;
    }
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

static bool
s_numeric (const char *text)
{
    char *end;
    strtod (text, &end);
    return *text && !*end;
}

//  The latest result file of machine holding benchmark name, or NULL.
static bn_benchresults_t *
s_latest (s_machine_t *machine, const char *name)
{
    for (size_t i = machine->count; i-- > 0;)
        if (bn_benchresults_params (machine->results[i], name))
            return machine->results[i];
    return NULL;
}

//  Plot of the latest results of name on machine across its parameters:
//  x the engines (else bytes, else the first parameter that varies), a
//  line per combination of the others.
static void
s_plot_params (s_site_t *site, s_machine_t *machine, const char *name,
               const char *svg, const char *unit)
{
    bn_benchresults_t *results = s_latest (machine, name);
    json_t *params = results ? bn_benchresults_params (results, name) : NULL;
    json_t *names = json_object_get (json_object_get (site->benchmarks, name),
                                     "param_names");
    size_t count = json_array_size (params);
    size_t x = 0;
    bool chosen = false;
    const char *preferred[] = {"engines", "count", "bytes", "depth"};
    for (size_t k = 0; k < 4 && !chosen; k++)
        for (size_t p = 0; p < count; p++)
            if (strcmp (json_string_value (json_array_get (names, p)) ?: "",
                        preferred[k]) == 0 &&
                json_array_size (json_array_get (params, p)) > 1) {
                x = p;
                chosen = true;
            }
    for (size_t p = 0; p < count && !chosen; p++)
        if (json_array_size (json_array_get (params, p)) > 1) {
            x = p;
            chosen = true;
        }
    char data[4096];
    snprintf (data, sizeof data, "%s/data/%s.%s.params.dat", site->html_dir,
              name, machine->name);
    FILE *file = fopen (data, "w");
    if (!file)
        return;
    bool numeric = true;
    json_t *xs = json_array_get (params, x);
    size_t i;
    json_t *value;
    json_array_foreach (xs, i,
                        value) if (!s_numeric (json_string_value (value)))
        numeric = false;
    //  one block per combination of the other parameters
    size_t cases = count ? s_cases (params) : 1;
    size_t xcount = count ? json_array_size (xs) : 1;
    size_t series = 0, points = 0;
    double ymin = INFINITY, ymax = 0, xmin = INFINITY, xmax = 0;
    char *titles[S_MAX_SERIES] = {NULL};
    for (size_t c = 0; c < cases && series < S_MAX_SERIES; c++) {
        const char *values[S_MAX_PARAMS];
        s_case_values (params, c, values);
        //  a series starts at its first x value
        if (count &&
            strcmp (values[x], json_string_value (json_array_get (xs, 0))) != 0)
            continue;
        char title[512] = "";
        size_t used = 0;
        for (size_t p = 0; p < count && used < sizeof title; p++)
            if (p != x)
                used += (size_t)snprintf (
                    title + used, sizeof title - used, "%s%s=%s",
                    used ? ", " : "",
                    json_string_value (json_array_get (names, p)), values[p]);
        titles[series] = strdup (*title ? title : name);
        fprintf (file, "# %s\n", title);
        for (size_t k = 0; k < xcount; k++) {
            const char *these[S_MAX_PARAMS];
            memcpy (these, values, sizeof these);
            if (count)
                these[x] = json_string_value (json_array_get (xs, k));
            long index =
                count ? bn_benchresults_find (results, name, these, count) : 0;
            double y;
            bn_benchstats_t stats;
            if (index < 0 ||
                bn_benchresults_case (results, name, (size_t)index, &y, &stats,
                                      NULL, NULL) != BN_BENCHRESULT_OK)
                continue;
            double low = isnan (stats.q_25) ? y : stats.q_25;
            double high = isnan (stats.q_75) ? y : stats.q_75;
            fprintf (file, "%s %.9g %.9g %.9g\n", count ? these[x] : "0", y,
                     low, high);
            points++;
            ymin = fmin (ymin, y);
            ymax = fmax (ymax, y);
            if (numeric && count) {
                xmin = fmin (xmin, atof (these[x]));
                xmax = fmax (xmax, atof (these[x]));
            }
        }
        fprintf (file, "\n\n");
        series++;
    }
    fclose (file);
    FILE *gp = site->script;
    fprintf (gp, "reset\nset output ");
    s_gp_string (gp, svg);
    fprintf (gp, "\nset title ");
    s_gp_string (gp, name);
    fprintf (gp, " noenhanced\nset grid\nset key left top noenhanced\n"
                 "set format y \"%%g\"\n");
    fprintf (gp, "set ylabel ");
    s_gp_string (gp, unit);
    fprintf (gp, "\nset xlabel ");
    s_gp_string (gp,
                 count ? json_string_value (json_array_get (names, x)) : "");
    fprintf (gp, " noenhanced\n");
    if (points == 0) {
        fprintf (gp, "set xrange [0:1]\nset yrange [0:1]\n"
                     "set label \"no results\" at graph 0.5,0.5 center\n"
                     "plot -1 notitle\n");
    } else {
        if (numeric && xmin > 0 && xmax / xmin >= 8)
            fprintf (gp, "set logscale x 2\n");
        if (numeric)
            fprintf (gp, "set format x \"%%.0f\"\n");
        if (ymin > 0 && ymax / ymin > 30)
            fprintf (gp, "set logscale y\n");
        fprintf (gp, "set offsets graph 0.02, graph 0.02, graph 0.05, "
                     "graph 0.05\nplot ");
        for (size_t s = 0; s < series; s++) {
            fprintf (gp, "%s", s ? ", " : "");
            s_gp_string (gp, data);
            fprintf (gp, " index %zu using %s with yerrorlines title ", s,
                     numeric ? "1:2:3:4" : "0:2:3:4:xtic(1)");
            s_gp_string (gp, titles[s]);
        }
        fprintf (gp, "\n");
    }
    for (size_t s = 0; s < series; s++)
        free (titles[s]);
    site->plots++;
}

//  Plot of name's results on machine across commits, a line per
//  parameter set (the first few).
static void
s_plot_commits (s_site_t *site, s_machine_t *machine, const char *name,
                const char *svg, const char *unit)
{
    char data[4096];
    snprintf (data, sizeof data, "%s/data/%s.%s.commits.dat", site->html_dir,
              name, machine->name);
    FILE *file = fopen (data, "w");
    if (!file)
        return;
    bn_benchresults_t *latest = s_latest (machine, name);
    json_t *params = latest ? bn_benchresults_params (latest, name) : NULL;
    size_t count = json_array_size (params);
    size_t cases = params ? s_cases (params) : 0;
    size_t series = 0, points = 0;
    double ymin = INFINITY, ymax = 0;
    char *titles[S_MAX_SERIES] = {NULL};
    for (size_t c = 0; c < cases && series < S_MAX_SERIES; c++) {
        const char *values[S_MAX_PARAMS];
        s_case_values (params, c, values);
        char title[512] = "";
        size_t used = 0;
        for (size_t p = 0; p < count && used < sizeof title; p++)
            used += (size_t)snprintf (title + used, sizeof title - used, "%s%s",
                                      p ? ", " : "", values[p]);
        size_t here = 0;
        for (size_t r = 0; r < machine->count; r++) {
            long index =
                bn_benchresults_find (machine->results[r], name, values, count);
            double y;
            if (index < 0 || bn_benchresults_case (
                                 machine->results[r], name, (size_t)index, &y,
                                 NULL, NULL, NULL) != BN_BENCHRESULT_OK)
                continue;
            fprintf (file, "%zu %.9g\n", r, y);
            here++;
            ymin = fmin (ymin, y);
            ymax = fmax (ymax, y);
        }
        if (here == 0)
            continue;
        fprintf (file, "\n\n");
        titles[series++] = strdup (*title ? title : name);
        points += here;
    }
    fclose (file);
    FILE *gp = site->script;
    fprintf (gp, "reset\nset output ");
    s_gp_string (gp, svg);
    fprintf (gp, "\nset title ");
    s_gp_string (gp, name);
    fprintf (gp, " noenhanced\nset grid\nset key outside right noenhanced\n"
                 "set format y \"%%g\"\nset ylabel ");
    s_gp_string (gp, unit);
    fprintf (gp, "\nset xlabel \"commit\"\nset xtics rotate by -30 (");
    for (size_t r = 0; r < machine->count; r++) {
        char label[16];
        snprintf (label, sizeof label, "%.8s",
                  bn_benchresults_commit (machine->results[r]));
        fprintf (gp, "%s", r ? ", " : "");
        s_gp_string (gp, label);
        fprintf (gp, " %zu", r);
    }
    fprintf (gp, ")\nset xrange [-0.5:%zu.5]\n",
             machine->count ? machine->count - 1 : 0);
    if (points == 0)
        fprintf (gp, "set yrange [0:1]\nset label \"no results\" at graph "
                     "0.5,0.5 center\nplot -1 notitle\n");
    else {
        if (ymin > 0 && ymax / ymin > 30)
            fprintf (gp, "set logscale y\n");
        fprintf (gp, "plot ");
        for (size_t s = 0; s < series; s++) {
            fprintf (gp, "%s", s ? ", " : "");
            s_gp_string (gp, data);
            fprintf (gp, " index %zu using 1:2 with linespoints title ", s);
            s_gp_string (gp, titles[s]);
        }
        fprintf (gp, "\n");
    }
    for (size_t s = 0; s < series; s++)
        free (titles[s]);
    site->plots++;
}

static const char *s_style =
    "<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;"
    "padding:.2em .6em;text-align:left}td.n{text-align:right}"
    "img.plot{max-width:48em;display:block;margin:1em 0}"
    ".thumb img.plot{max-width:30em}</style>\n";

//  Marks the page once loaded: how many plots it has and how many loaded,
//  so that a headless browser can tell.
static const char *s_loaded_script =
    "<script>window.addEventListener('load',function(){"
    "var p=document.querySelectorAll('img.plot'),n=0;"
    "for(var i=0;i<p.length;i++)if(p[i].complete&&p[i].naturalWidth>0)n++;"
    "document.body.setAttribute('data-plots',p.length);"
    "document.body.setAttribute('data-plots-loaded',n);});</script>\n";

static void
s_page_head (FILE *out, const char *title)
{
    fprintf (out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                  "<meta charset=\"utf-8\">\n<title>");
    s_html_escape (out, title);
    fprintf (out, "</title>\n%s%s</head>\n<body>\n", s_style, s_loaded_script);
}

static void
s_machine_line (FILE *out, s_machine_t *machine, bool markdown)
{
    json_t *info = machine->info;
    double ram =
        atof (json_string_value (json_object_get (info, "ram")) ?: "0");
    fprintf (out, "%s%s%s: %s, %s CPUs, %.1f GiB RAM, %s%s",
             markdown ? "Machine `" : "", machine->name, markdown ? "`" : "",
             json_string_value (json_object_get (info, "cpu")) ?: "?",
             json_string_value (json_object_get (info, "num_cpu")) ?: "?",
             ram / 1024 / 1024 / 1024,
             json_string_value (json_object_get (info, "os")) ?: "?",
             markdown ? "\n" : "");
}

//  The benchmark's page, and its rows in table.md.
static void
s_benchmark_page (s_site_t *site, const char *name, json_t *entry)
{
    char path[4096];
    snprintf (path, sizeof path, "%s/%s.html", site->html_dir, name);
    FILE *out = fopen (path, "w");
    if (!out)
        return;
    const char *unit = json_string_value (json_object_get (entry, "unit"));
    if (!unit)
        unit = "seconds";
    json_t *names = json_object_get (entry, "param_names");
    s_page_head (out, name);
    fprintf (out, "<p><a href=\"index.html\">all benchmarks</a></p>\n<h1>");
    s_html_escape (out, name);
    fprintf (out, "</h1>\n<p>");
    s_html_escape (out, json_string_value (json_object_get (entry, "code")));
    fprintf (out, "</p>\n");
    for (size_t m = 0; m < site->machine_count; m++) {
        s_machine_t *machine = &site->machines[m];
        bn_benchresults_t *results = s_latest (machine, name);
        if (!results)
            continue;
        fprintf (out, "<h2>");
        s_machine_line (out, machine, false);
        fprintf (out, "</h2>\n");
        char svg[4096], file[1024];
        snprintf (file, sizeof file, "plots/%s.%s.params.svg", name,
                  machine->name);
        snprintf (svg, sizeof svg, "%s/%s", site->html_dir, file);
        s_plot_params (site, machine, name, svg, unit);
        fprintf (out,
                 "<h3>Across parameters (commit %.8s)</h3>\n"
                 "<img class=\"plot\" src=\"%s\" alt=\"%s across "
                 "parameters\">\n",
                 bn_benchresults_commit (results), file, name);
        snprintf (file, sizeof file, "plots/%s.%s.commits.svg", name,
                  machine->name);
        snprintf (svg, sizeof svg, "%s/%s", site->html_dir, file);
        s_plot_commits (site, machine, name, svg, unit);
        fprintf (out,
                 "<h3>Across commits</h3>\n<img class=\"plot\" "
                 "src=\"%s\" alt=\"%s across commits\">\n",
                 file, name);
        //  the latest figures
        fprintf (out, "<table>\n<tr>");
        size_t p;
        json_t *param;
        json_array_foreach (names, p, param)
        {
            fprintf (out, "<th>");
            s_html_escape (out, json_string_value (param));
            fprintf (out, "</th>");
        }
        fprintf (out, "<th>result</th><th>× floor</th><th>samples</th>"
                      "</tr>\n");
        json_t *params = bn_benchresults_params (results, name);
        for (size_t c = 0; c < s_cases (params); c++) {
            const char *values[S_MAX_PARAMS];
            s_case_values (params, c, values);
            double value;
            bn_benchstats_t stats;
            double *samples = NULL;
            size_t count = 0;
            bn_benchresult_t status = bn_benchresults_case (
                results, name, c, &value, &stats, &samples, &count);
            char text[64] = "failed", ratio_text[32] = "";
            if (status == BN_BENCHRESULT_OK) {
                bn_benchfmt_value (
                    value, count > 1 ? (stats.q_75 - stats.q_25) / 2 : -1, unit,
                    text, sizeof text);
                double ratio = bn_benchresults_floor_ratio (
                    results, site->benchmarks, name, values, value, NULL);
                if (!isnan (ratio))
                    snprintf (ratio_text, sizeof ratio_text, "%.2f×", ratio);
            } else if (status == BN_BENCHRESULT_SKIPPED)
                snprintf (text, sizeof text, "n/a");
            free (samples);
            fprintf (out, "<tr>");
            for (size_t k = 0; k < json_array_size (params); k++) {
                fprintf (out, "<td>");
                s_html_escape (out, values[k]);
                fprintf (out, "</td>");
            }
            fprintf (out,
                     "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
                     "<td class=\"n\">%zu</td></tr>\n",
                     text, ratio_text, count);
            //  table.md: results worth stating (not skipped ones)
            if (status == BN_BENCHRESULT_SKIPPED ||
                strncmp (name, "floor.", 6) == 0)
                continue;
            fprintf (site->table, "| %s | ", name);
            for (size_t k = 0; k < json_array_size (params); k++)
                fprintf (site->table, "%s%s=%s", k ? ", " : "",
                         json_string_value (json_array_get (names, k)),
                         values[k]);
            fprintf (site->table, " | %s | %s | %.8s |\n", text, ratio_text,
                     bn_benchresults_commit (results));
        }
        fprintf (out, "</table>\n");
    }
    fprintf (out, "</body>\n</html>\n");
    fclose (out);
}

static int
s_run_gnuplot (const char *script, const char *log, char *err, size_t errsize)
{
    const char *program = getenv ("BANYAN_GNUPLOT");
    if (!program || !*program)
        program = "gnuplot";
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2 (fd, 1);
            dup2 (fd, 2);
        }
        execlp (program, program, script, (char *)NULL);
        _exit (127);
    }
    int status = 0;
    if (pid < 0 || waitpid (pid, &status, 0) < 0) {
        snprintf (err, errsize, "cannot run %s: %s", program, strerror (errno));
        return -1;
    }
    if (WIFEXITED (status) && WEXITSTATUS (status) == 127) {
        snprintf (err, errsize,
                  "%s not found: install gnuplot (Debian: "
                  "gnuplot-nox)",
                  program);
        return -1;
    }
    if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        snprintf (err, errsize, "%s failed; see %s", program, log);
        return -1;
    }
    return 0;
}

//  The markdown page at path: a heading and what the table is, then
//  table.md as written at table_path. Returns 0 or -1.
static int
s_write_page (const char *path, const char *table_path, const char *results_dir,
              char *err, size_t errsize)
{
    char *table = bn_benchresults_slurp (table_path);
    FILE *out = table ? fopen (path, "w") : NULL;
    if (!out) {
        snprintf (err, errsize, "cannot write %s: %s", path, strerror (errno));
        free (table);
        return -1;
    }
    fprintf (out,
             "# Performance\n\n"
             "Written by `banyan-bench publish --markdown` from the results "
             "in `%s`:\nthe latest figure of every benchmark and parameter "
             "set on each machine\n(the median, ± half the interquartile "
             "range), the commit it was measured\nat, and, for the "
             "benchmarks stated against it, its ratio to the bare\nZeroMQ "
             "floor last measured at that size (`floor.ZmqFloor`, a libzmq "
             "ROUTER\nsending the same payload to as many DEALER echo "
             "sockets in helper\nprocesses; for the `many` benchmarks, the "
             "same number of messages in\nflight to each; for `push`, the "
             "payload one way and an empty answer\nback). Floors measured in "
             "other runs "
             "make those ratios rough: compare\nfigures of one run, or use "
             "`banyan-bench compare`. Where the time of a round\ntrip goes, "
             "per process, thread and function: "
             "[profile.md](profile.md).\n\n",
             results_dir);
    int rc = fputs (table, out) < 0 ? -1 : 0;
    if (fclose (out) != 0 || rc != 0) {
        snprintf (err, errsize, "cannot write %s: %s", path, strerror (errno));
        rc = -1;
    }
    free (table);
    return rc;
}

//  The targets' table of the named machine (NULL: the only one) in the
//  readme at path. Returns 0 or -1.
static int
s_write_targets (s_site_t *site, const char *path, const char *name,
                 const char *results_dir, char *err, size_t errsize)
{
    s_machine_t *machine = NULL;
    for (size_t m = 0; m < site->machine_count; m++)
        if (site->machines[m].count &&
            (!name || strcmp (site->machines[m].name, name) == 0)) {
            if (machine) {
                snprintf (err, errsize,
                          "%s holds results of several machines: name one "
                          "with --machine",
                          results_dir);
                return -1;
            }
            machine = &site->machines[m];
        }
    if (!machine) {
        snprintf (err, errsize, "%s holds no results%s%s", results_dir,
                  name ? " of machine " : "", name ? name : "");
        return -1;
    }
    size_t count;
    const bn_benchtarget_t *targets = bn_benchtargets_builtin (&count);
    char *table =
        bn_benchtargets_table (targets, count, site->benchmarks,
                               machine->results, machine->count, err, errsize);
    if (!table)
        return -1;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    if (!out) {
        free (table);
        snprintf (err, errsize, "out of memory");
        return -1;
    }
    s_machine_line (out, machine, true);
    fprintf (out,
             "\nEach cell is the newest figure in `%s` that was measured "
             "in one run beside its yardstick (`banyan-bench publish "
             "--readme`):\n\n%s",
             results_dir, table);
    fclose (out);
    free (table);
    int rc = bn_benchtargets_splice (path, text, err, errsize);
    free (text);
    return rc;
}

int
bn_benchpublish_run (const char *results_dir, const char *html_dir,
                     const char *markdown, const char *readme,
                     const char *machine_name, char *err, size_t errsize)
{
    s_site_t site = {.html_dir = html_dir};
    char path[4096];
    snprintf (path, sizeof path, "%s/benchmarks.json", results_dir);
    json_error_t error;
    site.benchmarks = json_load_file (path, 0, &error);
    if (!json_is_object (site.benchmarks)) {
        snprintf (err, errsize, "cannot read %s: %s", path, error.text);
        json_decref (site.benchmarks);
        return -1;
    }
    int rc = -1;
    if (s_load_machines (&site, results_dir, err, errsize) != 0)
        goto done;
    const char *subdirs[] = {"", "/plots", "/data"};
    for (size_t i = 0; i < 3; i++) {
        snprintf (path, sizeof path, "%s%s", html_dir, subdirs[i]);
        if (mkdir (path, 0755) != 0 && errno != EEXIST) {
            snprintf (err, errsize, "cannot create %s: %s", path,
                      strerror (errno));
            goto done;
        }
    }
    char script_path[4096], table_path[4096];
    snprintf (script_path, sizeof script_path, "%s/data/plots.gp", html_dir);
    snprintf (table_path, sizeof table_path, "%s/table.md", html_dir);
    site.script = fopen (script_path, "w");
    site.table = fopen (table_path, "w");
    if (!site.script || !site.table) {
        snprintf (err, errsize, "cannot write in %s: %s", html_dir,
                  strerror (errno));
        goto done;
    }
    fprintf (site.script, "set terminal svg size 760,440 dynamic "
                          "font \"sans,11\" background \"#ffffff\"\n"
                          "set encoding utf8\n");
    //  table.md: what was run where
    for (size_t m = 0; m < site.machine_count; m++) {
        s_machine_t *machine = &site.machines[m];
        s_machine_line (site.table, machine, true);
        if (machine->count)
            fprintf (
                site.table, "(latest commit %.8s, environment %s)\n",
                bn_benchresults_commit (machine->results[machine->count - 1]),
                bn_benchresults_env (machine->results[machine->count - 1]));
    }
    fprintf (site.table,
             "\n| benchmark | parameters | result | × floor | commit |\n"
             "| --- | --- | ---: | ---: | --- |\n");
    //  names sorted
    size_t total = json_object_size (site.benchmarks);
    const char **names = calloc (total ? total : 1, sizeof *names);
    size_t n = 0;
    const char *name;
    json_t *entry;
    json_object_foreach (site.benchmarks, name,
                         entry) if (json_is_object (entry)) names[n++] = name;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp (names[j - 1], names[j]) > 0; j--) {
            const char *swap = names[j];
            names[j] = names[j - 1];
            names[j - 1] = swap;
        }
    FILE *index = NULL;
    snprintf (path, sizeof path, "%s/index.html", html_dir);
    index = fopen (path, "w");
    if (!index) {
        snprintf (err, errsize, "cannot write %s: %s", path, strerror (errno));
        free (names);
        goto done;
    }
    s_page_head (index, "banyan benchmarks");
    fprintf (index, "<h1>banyan benchmarks</h1>\n<ul>\n");
    for (size_t m = 0; m < site.machine_count; m++) {
        fprintf (index, "<li>");
        s_machine_line (index, &site.machines[m], false);
        fprintf (index, ": %zu result file%s</li>\n", site.machines[m].count,
                 site.machines[m].count == 1 ? "" : "s");
    }
    fprintf (index, "</ul>\n<table>\n<tr><th>benchmark</th>"
                    "<th>parameters</th><th>what it measures</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        entry = json_object_get (site.benchmarks, names[i]);
        fprintf (index, "<tr><td><a href=\"%s.html\">", names[i]);
        s_html_escape (index, names[i]);
        fprintf (index, "</a></td><td>");
        size_t p;
        json_t *param;
        json_array_foreach (json_object_get (entry, "param_names"), p, param)
        {
            fprintf (index, "%s", p ? ", " : "");
            s_html_escape (index, json_string_value (param));
        }
        fprintf (index, "</td><td>");
        s_html_escape (index,
                       json_string_value (json_object_get (entry, "code")));
        fprintf (index, "</td></tr>\n");
        s_benchmark_page (&site, names[i], entry);
    }
    fprintf (index, "</table>\n<h2>Plots</h2>\n<div class=\"thumb\">\n");
    for (size_t i = 0; i < n; i++)
        for (size_t m = 0; m < site.machine_count; m++)
            if (s_latest (&site.machines[m], names[i]))
                fprintf (index,
                         "<a href=\"%s.html\"><img class=\"plot\" "
                         "src=\"plots/%s.%s.params.svg\" alt=\"%s\"></a>\n",
                         names[i], names[i], site.machines[m].name, names[i]);
    fprintf (index, "</div>\n</body>\n</html>\n");
    fclose (index);
    free (names);
    fclose (site.script);
    site.script = NULL;
    fclose (site.table);
    site.table = NULL;
    if (markdown &&
        s_write_page (markdown, table_path, results_dir, err, errsize) != 0)
        goto done;
    if (readme && s_write_targets (&site, readme, machine_name, results_dir,
                                   err, errsize) != 0)
        goto done;
    snprintf (path, sizeof path, "%s/data/gnuplot.log", html_dir);
    rc = site.plots ? s_run_gnuplot (script_path, path, err, errsize) : 0;
done:
    if (site.script)
        fclose (site.script);
    if (site.table)
        fclose (site.table);
    for (size_t m = 0; m < site.machine_count; m++) {
        for (size_t r = 0; r < site.machines[m].count; r++)
            bn_benchresults_destroy (&site.machines[m].results[r]);
        free (site.machines[m].results);
        free (site.machines[m].name);
        json_decref (site.machines[m].info);
    }
    free (site.machines);
    json_decref (site.benchmarks);
    return rc;
}

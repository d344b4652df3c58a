/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan-bench: an asv-like benchmark runner for banyan: run, list,
    compare, continuous and publish.  */
#include "bn_benchcommit.h"
#include "bn_benchcompare.h"
#include "bn_benchpublish.h"
#include "bn_benchresults.h"
#include "bn_benchrunner.h"
#include "bn_benchtargets.h"
#include "bn_config.h"
#include "bn_path.h"
#include "bn_soak.h"
#include "bn_suites.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BN_BUILD_TYPE
#define BN_BUILD_TYPE "unknown"
#endif

#define S_EXIT_OK 0
#define S_EXIT_FAILED 1 //  run: a case failed; continuous: a regression
#define S_EXIT_USAGE 2
#define S_EXIT_ERROR 3 //  results could not be read or written
#define S_EXIT_INTERRUPTED 130

static void
s_usage (FILE *out)
{
    fprintf (
        out,
        "Usage: banyan-bench run [--quick] [-b REGEX]... [--machine NAME]\n"
        "                        [--results DIR] [--engines LIST] [-k N]\n"
        "                        [-p NAME=LIST]...\n"
        "                        [--rounds N] [--commit HASH] [--env NAME]\n"
        "                        [-e] [-f]\n"
        "       banyan-bench list [-b REGEX]... [--quick] [--engines LIST]\n"
        "       banyan-bench compare A B [--factor F] [--only-changed]\n"
        "                        [--results DIR] [--machine NAME]\n"
        "       banyan-bench continuous BASE HEAD [--factor F]\n"
        "                        [--results DIR] [--machine NAME] [run's "
        "options]\n"
        "       banyan-bench publish [--results DIR] [--html DIR]\n"
        "                        [--markdown FILE] [--readme FILE]\n"
        "                        [--machine NAME]\n"
        "       banyan-bench soak [--duration D] [--warmup D] [--engines N]\n"
        "                        [--tree-mode MODE] [--max-growth PCT] "
        "[--keep]\n"
        "Benchmark banyan the way asv does: suites with parameter grids, one\n"
        "process per parameter set, results as asv's files.\n\n"
        "  run         run the benchmarks (all, or those whose name matches a\n"
        "              -b regex) and save "
        "results/<machine>/<commit>-<env>.json\n"
        "  list        print the benchmarks and their parameters\n"
        "  compare     before, after and ratio of two commits' results;\n"
        "              + worse, - better, ! newly failing, x the\n"
        "              benchmark changed in between (not comparable)\n"
        "  continuous  compare BASE with HEAD, showing changes only; exit 1\n"
        "              on a significant regression (Mann-Whitney U on the\n"
        "              samples, or 99%% intervals that do not overlap);\n"
        "              HEAD's results are run first when they are missing\n"
        "              and this build is HEAD (with run's options)\n"
        "  publish     write a static site (index, a page per benchmark,\n"
        "              plots drawn with gnuplot) and table.md, and with\n"
        "              --markdown the same table as a page of its own;\n"
        "              with --readme the targets' table in that file\n"
        "  soak        mixed traffic for a duration (direct, broadcast\n"
        "              coalescing, grouped, reduced and forwarded,\n"
        "              load-balanced tasks with dependencies, push and pull\n"
        "              of 1 kB-10 MB, history queries) while engines join\n"
        "              and die and clients vanish mid-request, on a cluster\n"
        "              per tree mode; every msg_id must be answered and no\n"
        "              banyan process's RSS or descriptors may grow after\n"
        "              warm-up\n\n"
        "  -q, --quick         one sample of one call per case, small grids\n"
        "  -b, --bench REGEX   benchmarks whose name matches (repeatable)\n"
        "      --machine NAME  machine name in the results (host name)\n"
        "      --results DIR   results folder (results)\n"
        "      --engines LIST  engine counts to use, as 1,16,64\n"
        "  -p, --param NAME=LIST\n"
        "                      values of parameter NAME to use, as\n"
        "                      bytes=1000,1000000 or view=tree\n"
        "  -k, --engines-per-process N\n"
        "                      engines per banyan-engine process (N up to 4\n"
        "                      engines, else the engines over 4 processes)\n"
        "      --rounds N      run the selection N times over, one whole\n"
        "                      pass after another, each case's figure over\n"
        "                      the samples of every pass (1): a case and its\n"
        "                      floor share the machine's slow and fast spells\n"
        "      --commit HASH   the commit measured (this build's source)\n"
        "      --env NAME      environment name (banyan-<build type>)\n"
        "  -e, --show-stderr   print why failed cases failed, with their log\n"
        "  -f, --full          OSU tables with min, max and iterations\n"
        "      --factor F      ratio a change must pass to be marked (1.1)\n"
        "      --only-changed  compare: leave out unmarked rows\n"
        "      --html DIR      site folder (html)\n"
        "      --markdown FILE publish: write the table as a markdown\n"
        "                      page, such as doc/performance.md\n"
        "      --readme FILE   publish: put the performance targets, each\n"
        "                      met or not by the results, in FILE between\n"
        "                      its lines " BN_BENCHTARGETS_BEGIN "\n"
        "                      and " BN_BENCHTARGETS_END "\n"
        "  -h, --help          show this help and exit\n"
        "      --version       show the version and exit\n\n"
        "soak's options:\n"
        "      --duration D    how long the traffic runs (10m; 90s, 1h)\n"
        "      --warmup D      time before the growth baseline (a fifth of\n"
        "                      the duration)\n"
        "      --engines N     engines per cluster (4)\n"
        "      --tree-mode MODE\n"
        "                      threads, processes or both (both: a cluster\n"
        "                      of each at once)\n"
        "      --max-growth PCT\n"
        "                      RSS and descriptor growth allowed after\n"
        "                      warm-up, in percent (5)\n"
        "      --keep          keep the clusters' folder (logs) on success\n\n"
        "Exit status: 0 ok; 1 a case failed (run), a regression\n"
        "(continuous) or the soak failed; 2 usage error; 3 results could not\n"
        "be read or written, or a soak's cluster did not start; 130\n"
        "interrupted.\n\n"
        "Examples:\n"
        "  banyan-bench run --quick -b '^echo\\.DirectView'\n"
        "  banyan-bench run -b '^echo\\.Coalescing' --engines 1,16,1024 "
        "-p bytes=1000\n"
        "  banyan-bench run -b '^osu\\.Latency' -f\n"
        "  banyan-bench compare 1a2b3c4d 5e6f7a8b --only-changed\n"
        "  banyan-bench continuous main HEAD\n"
        "  banyan-bench publish --html site --markdown doc/performance.md\n"
        "                       --readme README.md --machine vm-2core\n"
        "  nice banyan-bench soak --duration 1h\n");
}

typedef struct {
    bool quick;
    const char *regexes[16];
    size_t regex_count;
    const char *machine;
    const char *results;
    const char *engines;
    const char *params[16];
    size_t param_count;
    int per_process;
    int rounds;
    const char *commit;
    const char *env;
    bool show_stderr;
    bool full;
    double factor;
    bool only_changed;
    const char *html;
    const char *markdown;
    const char *readme;
} s_options_t;

enum {
    S_OPT_MACHINE = 256,
    S_OPT_RESULTS,
    S_OPT_ENGINES,
    S_OPT_COMMIT,
    S_OPT_ENV,
    S_OPT_FACTOR,
    S_OPT_ONLY_CHANGED,
    S_OPT_HTML,
    S_OPT_MARKDOWN,
    S_OPT_README,
    S_OPT_ROUNDS,
    S_OPT_VERSION
};

//  Parse options after the command; returns the index of the first
//  operand, -1 on a usage error, -2 after --help or --version.
static int
s_parse (int argc, char **argv, s_options_t *options)
{
    static const struct option longopts[] = {
        {"quick", no_argument, NULL, 'q'},
        {"bench", required_argument, NULL, 'b'},
        {"machine", required_argument, NULL, S_OPT_MACHINE},
        {"results", required_argument, NULL, S_OPT_RESULTS},
        {"engines", required_argument, NULL, S_OPT_ENGINES},
        {"engines-per-process", required_argument, NULL, 'k'},
        {"param", required_argument, NULL, 'p'},
        {"commit", required_argument, NULL, S_OPT_COMMIT},
        {"env", required_argument, NULL, S_OPT_ENV},
        {"show-stderr", no_argument, NULL, 'e'},
        {"full", no_argument, NULL, 'f'},
        {"factor", required_argument, NULL, S_OPT_FACTOR},
        {"only-changed", no_argument, NULL, S_OPT_ONLY_CHANGED},
        {"html", required_argument, NULL, S_OPT_HTML},
        {"markdown", required_argument, NULL, S_OPT_MARKDOWN},
        {"readme", required_argument, NULL, S_OPT_README},
        {"rounds", required_argument, NULL, S_OPT_ROUNDS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, S_OPT_VERSION},
        {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long (argc, argv, "qb:k:p:efh", longopts, NULL)) !=
           -1) {
        char *end;
        switch (opt) {
        case 'q':
            options->quick = true;
            break;
        case 'b':
            if (options->regex_count == 16)
                return -1;
            options->regexes[options->regex_count++] = optarg;
            break;
        case S_OPT_MACHINE:
            options->machine = optarg;
            break;
        case S_OPT_RESULTS:
            options->results = optarg;
            break;
        case S_OPT_ENGINES:
            options->engines = optarg;
            break;
        case 'p':
            if (options->param_count == 16 || !strchr (optarg, '=')) {
                fprintf (stderr, "banyan-bench: -p takes NAME=LIST\n");
                return -1;
            }
            options->params[options->param_count++] = optarg;
            break;
        case 'k':
            options->per_process = (int)strtol (optarg, &end, 10);
            if (*end || options->per_process < 1) {
                fprintf (stderr, "banyan-bench: bad -k %s\n", optarg);
                return -1;
            }
            break;
        case S_OPT_COMMIT:
            options->commit = optarg;
            break;
        case S_OPT_ENV:
            options->env = optarg;
            break;
        case 'e':
            options->show_stderr = true;
            break;
        case 'f':
            options->full = true;
            break;
        case S_OPT_FACTOR:
            options->factor = strtod (optarg, &end);
            if (*end || options->factor < 1) {
                fprintf (stderr, "banyan-bench: --factor must be a number "
                                 "of at least 1\n");
                return -1;
            }
            break;
        case S_OPT_ONLY_CHANGED:
            options->only_changed = true;
            break;
        case S_OPT_HTML:
            options->html = optarg;
            break;
        case S_OPT_MARKDOWN:
            options->markdown = optarg;
            break;
        case S_OPT_README:
            options->readme = optarg;
            break;
        case S_OPT_ROUNDS:
            options->rounds = (int)strtol (optarg, &end, 10);
            if (*end || options->rounds < 1 || options->rounds > 1000) {
                fprintf (stderr, "banyan-bench: --rounds takes 1 to 1000\n");
                return -1;
            }
            break;
        case 'h':
            s_usage (stdout);
            return -2;
        case S_OPT_VERSION:
            printf ("banyan-bench %s\n", BANYAN_VERSION);
            return -2;
        default:
            return -1;
        }
    }
    return optind;
}

//  Run a command and read its first line of output; NULL if it fails.
static char *
s_command_line (const char *command)
{
    FILE *pipe = popen (command, "r");
    if (!pipe)
        return NULL;
    char line[256] = "";
    char *got = fgets (line, sizeof line, pipe);
    int status = pclose (pipe);
    if (!got || status != 0)
        return NULL;
    line[strcspn (line, "\n")] = 0;
    return *line ? strdup (line) : NULL;
}

//  True if text can go between single quotes on a shell command line.
static bool
s_quotable (const char *text)
{
    return !strpbrk (text, "'\\\"$`;&|<> ");
}

static int
s_run (bn_benchrunner_t *runner, s_options_t *options)
{
    //  This build's commit, else --commit's, dated by the repository of
    //  the current folder when it knows it
    const char *commit = *BN_BENCH_COMMIT ? BN_BENCH_COMMIT : NULL;
    double date_ms = BN_BENCH_COMMIT_DATE * 1000.0;
    if (options->commit) {
        commit = options->commit;
        date_ms = 0;
        if (s_quotable (commit)) {
            char command[512];
            snprintf (command, sizeof command,
                      "git log -1 --format=%%ct '%s' 2>/dev/null", commit);
            char *date = s_command_line (command);
            if (date)
                date_ms = atof (date) * 1000;
            free (date);
        }
    }
    bn_benchrunner_set_commit (
        runner, commit ? commit : "0000000000000000000000000000000000000000",
        date_ms);
    char env[64];
    snprintf (env, sizeof env, "banyan-%s", BN_BUILD_TYPE);
    for (char *c = env; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    bn_benchrunner_set_env (runner, options->env ? options->env : env);
    bn_benchrunner_set_show_stderr (runner, options->show_stderr);
    bn_benchrunner_set_osu_full (runner, options->full);
    bn_benchrunner_set_per_process (runner, options->per_process);
    bn_benchrunner_set_rounds (runner, options->rounds);
    char *bin_dir = bn_path_exe_dir ();
    if (bin_dir)
        bn_benchrunner_set_bin_dir (runner, bin_dir);
    free (bin_dir);
    int rc = bn_benchrunner_run (runner);
    if (rc >= 0)
        fprintf (stderr, "results: %s\n", bn_benchrunner_result_path (runner));
    if (rc == -2)
        return S_EXIT_INTERRUPTED;
    return rc < 0 ? S_EXIT_ERROR : rc > 0 ? S_EXIT_FAILED : S_EXIT_OK;
}

//  The commit a name (a branch, a tag, HEAD, a hash) stands for in the
//  repository of the current folder, malloc'd; the name itself when git
//  does not know it or it names a file.
static char *
s_resolve (const char *name)
{
    if (access (name, F_OK) == 0 || !s_quotable (name))
        return strdup (name);
    char command[512];
    snprintf (command, sizeof command,
              "git rev-parse --verify --quiet '%s^{commit}' 2>/dev/null", name);
    char *hash = s_command_line (command);
    return hash ? hash : strdup (name);
}

static int
s_compare (bn_benchrunner_t *runner, s_options_t *options, const char *a_name,
           const char *b_name, bool continuous)
{
    char err[512] = "";
    char *a = s_resolve (a_name), *b = s_resolve (b_name);
    bn_benchresults_t *before = bn_benchcompare_find (
        options->results, options->machine, a, err, sizeof err);
    bn_benchresults_t *after =
        before ? bn_benchcompare_find (options->results, options->machine, b,
                                       err, sizeof err)
               : NULL;
    //  continuous, as asv's: HEAD's results are made by running this
    //  build when this build is HEAD
    if (continuous && before && !after && !options->commit &&
        strcmp (BN_BENCH_COMMIT, b) == 0) {
        fprintf (stderr, "banyan-bench: no results for %.8s: running them\n",
                 b);
        int rc = s_run (runner, options);
        if (rc == S_EXIT_OK || rc == S_EXIT_FAILED)
            after = bn_benchcompare_find (options->results, options->machine, b,
                                          err, sizeof err);
    }
    free (a);
    free (b);
    if (!before || !after) {
        fprintf (stderr, "banyan-bench: %s\n", err);
        if (continuous)
            fprintf (stderr, "banyan-bench: run `banyan-bench run` on each "
                             "commit first\n");
        bn_benchresults_destroy (&before);
        return S_EXIT_ERROR;
    }
    char path[4096];
    snprintf (path, sizeof path, "%s/benchmarks.json", options->results);
    json_t *units = json_load_file (path, 0, NULL);
    bn_benchcompare_counts_t counts;
    bn_benchcompare_print (before, after, units, options->factor,
                           options->only_changed || continuous, stdout,
                           &counts);
    json_decref (units);
    bn_benchresults_destroy (&before);
    bn_benchresults_destroy (&after);
    if (!continuous)
        return S_EXIT_OK;
    if (counts.worse || counts.failing) {
        printf ("\nSOME BENCHMARKS HAVE CHANGED SIGNIFICANTLY.\n"
                "PERFORMANCE DECREASED: %zu worse, %zu newly failing.\n",
                counts.worse, counts.failing);
        return S_EXIT_FAILED;
    }
    if (counts.better)
        printf ("\nSOME BENCHMARKS HAVE CHANGED SIGNIFICANTLY.\n"
                "PERFORMANCE INCREASED: %zu better.\n",
                counts.better);
    else
        printf ("\nBENCHMARKS NOT SIGNIFICANTLY CHANGED.\n");
    return S_EXIT_OK;
}

//  banyan-bench soak [options]; with --client FILE, the client process
//  the soak starts and kills.
static int
s_soak (int argc, char **argv)
{
    enum {
        S_SOAK_DURATION = 256,
        S_SOAK_WARMUP,
        S_SOAK_ENGINES,
        S_SOAK_TREE_MODE,
        S_SOAK_MAX_GROWTH,
        S_SOAK_KEEP,
        S_SOAK_CLIENT
    };
    static const struct option longopts[] = {
        {"duration", required_argument, NULL, S_SOAK_DURATION},
        {"warmup", required_argument, NULL, S_SOAK_WARMUP},
        {"engines", required_argument, NULL, S_SOAK_ENGINES},
        {"tree-mode", required_argument, NULL, S_SOAK_TREE_MODE},
        {"max-growth", required_argument, NULL, S_SOAK_MAX_GROWTH},
        {"keep", no_argument, NULL, S_SOAK_KEEP},
        {"client", required_argument, NULL, S_SOAK_CLIENT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char *bin_dir = bn_path_exe_dir ();
    bn_soak_t *soak = bn_soak_new (bin_dir);
    free (bin_dir);
    if (!soak)
        return S_EXIT_ERROR;
    const char *client = NULL;
    int status = S_EXIT_OK, opt;
    optind = 1;
    while (status == S_EXIT_OK &&
           (opt = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        int64_t msecs;
        char *end;
        switch (opt) {
        case S_SOAK_DURATION:
        case S_SOAK_WARMUP:
            if (bn_config_parse_duration (optarg, 1000, &msecs) != 0 ||
                (opt == S_SOAK_DURATION && msecs <= 0)) {
                fprintf (stderr,
                         "banyan-bench: --%s takes a duration, as 90s, "
                         "10m or 1h\n",
                         opt == S_SOAK_DURATION ? "duration" : "warmup");
                status = S_EXIT_USAGE;
            } else if (opt == S_SOAK_DURATION)
                bn_soak_set_duration (soak, msecs / 1000.0);
            else
                bn_soak_set_warmup (soak, msecs / 1000.0);
            break;
        case S_SOAK_ENGINES: {
            long engines = strtol (optarg, &end, 10);
            if (*end || engines < 1 || engines > 64) {
                fprintf (stderr, "banyan-bench: --engines takes a count "
                                 "from 1 to 64\n");
                status = S_EXIT_USAGE;
            } else
                bn_soak_set_engines (soak, (int)engines);
            break;
        }
        case S_SOAK_TREE_MODE:
            if (bn_soak_set_tree_modes (soak, optarg) != 0) {
                fprintf (stderr, "banyan-bench: --tree-mode takes threads, "
                                 "processes or both\n");
                status = S_EXIT_USAGE;
            }
            break;
        case S_SOAK_MAX_GROWTH: {
            double percent = strtod (optarg, &end);
            if (*end || percent < 0) {
                fprintf (stderr, "banyan-bench: --max-growth takes a "
                                 "percentage\n");
                status = S_EXIT_USAGE;
            } else
                bn_soak_set_max_growth (soak, percent / 100);
            break;
        }
        case S_SOAK_KEEP:
            bn_soak_set_keep (soak, true);
            break;
        case S_SOAK_CLIENT:
            client = optarg;
            break;
        case 'h':
            s_usage (stdout);
            bn_soak_destroy (&soak);
            return S_EXIT_OK;
        default:
            status = S_EXIT_USAGE;
        }
    }
    if (status == S_EXIT_OK && optind < argc) {
        fprintf (stderr, "banyan-bench: soak takes no operands\n");
        status = S_EXIT_USAGE;
    }
    if (status == S_EXIT_USAGE)
        fprintf (stderr, "Try 'banyan-bench --help'.\n");
    else if (client)
        status = bn_soak_client_main (client);
    else {
        int rc = bn_soak_run (soak, stdout);
        status = rc < 0    ? S_EXIT_ERROR
                 : rc == 2 ? S_EXIT_INTERRUPTED
                 : rc > 0  ? S_EXIT_FAILED
                           : S_EXIT_OK;
    }
    bn_soak_destroy (&soak);
    return status;
}

int
main (int argc, char **argv)
{
    if (argc < 2) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp (command, "-h") == 0 || strcmp (command, "--help") == 0) {
        s_usage (stdout);
        return S_EXIT_OK;
    }
    if (strcmp (command, "--version") == 0) {
        printf ("banyan-bench %s\n", BANYAN_VERSION);
        return S_EXIT_OK;
    }
    if (strcmp (command, "soak") == 0)
        return s_soak (argc - 1, argv + 1);
    s_options_t options = {.results = "results", .html = "html", .factor = 1.1};
    int first = s_parse (argc - 1, argv + 1, &options);
    if (first == -2)
        return S_EXIT_OK;
    if (first < 0) {
        fprintf (stderr, "Try 'banyan-bench --help'.\n");
        return S_EXIT_USAGE;
    }
    int operands = argc - 1 - first;
    char **operand = argv + 1 + first;
    size_t count;
    const bn_benchdef_t *table = bn_suites_table (&count);
    bool comparing =
        strcmp (command, "compare") == 0 || strcmp (command, "continuous") == 0;
    if (strcmp (command, "run") == 0 || strcmp (command, "list") == 0 ||
        comparing) {
        if (operands != (comparing ? 2 : 0)) {
            fprintf (stderr, "banyan-bench: %s takes %s\n", command,
                     comparing ? "two commits" : "no operands");
            return S_EXIT_USAGE;
        }
        bn_benchrunner_t *runner = bn_benchrunner_new (table, count);
        if (!runner)
            return S_EXIT_ERROR;
        int status = S_EXIT_OK;
        bn_benchrunner_set_quick (runner, options.quick);
        bn_benchrunner_set_results (runner, options.results);
        bn_benchrunner_set_machine (runner, options.machine);
        for (size_t i = 0; i < options.regex_count; i++)
            if (bn_benchrunner_add_regex (runner, options.regexes[i]) != 0) {
                fprintf (stderr, "banyan-bench: bad regex %s\n",
                         options.regexes[i]);
                status = S_EXIT_USAGE;
            }
        if (options.engines &&
            bn_benchrunner_set_engines (runner, options.engines) != 0) {
            fprintf (stderr, "banyan-bench: --engines takes counts as "
                             "1,16,64\n");
            status = S_EXIT_USAGE;
        }
        for (size_t i = 0; i < options.param_count; i++) {
            char name[64];
            const char *equals = strchr (options.params[i], '=');
            snprintf (name, sizeof name, "%.*s",
                      (int)(equals - options.params[i]), options.params[i]);
            if (bn_benchrunner_set_param (runner, name, equals + 1) != 0) {
                fprintf (stderr, "banyan-bench: bad -p %s\n",
                         options.params[i]);
                status = S_EXIT_USAGE;
            }
        }
        if (status == S_EXIT_OK) {
            if (comparing)
                status = s_compare (runner, &options, operand[0], operand[1],
                                    strcmp (command, "continuous") == 0);
            else if (strcmp (command, "list") == 0)
                bn_benchrunner_list (runner, stdout);
            else
                status = s_run (runner, &options);
        }
        bn_benchrunner_destroy (&runner);
        return status;
    }
    if (strcmp (command, "publish") == 0) {
        if (operands != 0) {
            fprintf (stderr, "banyan-bench: publish takes no operands\n");
            return S_EXIT_USAGE;
        }
        char err[512] = "";
        if (bn_benchpublish_run (options.results, options.html,
                                 options.markdown, options.readme,
                                 options.machine, err, sizeof err) != 0) {
            fprintf (stderr, "banyan-bench: %s\n", err);
            return S_EXIT_ERROR;
        }
        printf ("site: %s/index.html\ntable: %s/table.md\n", options.html,
                options.html);
        if (options.markdown)
            printf ("page: %s\n", options.markdown);
        if (options.readme)
            printf ("targets: %s\n", options.readme);
        return S_EXIT_OK;
    }
    fprintf (stderr,
             "banyan-bench: unknown command %s; try 'banyan-bench "
             "--help'\n",
             command);
    return S_EXIT_USAGE;
}

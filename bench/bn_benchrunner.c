/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchrunner: one process per parameter set, samples over a pipe,
    results printed and saved as asv's.  */
#define _GNU_SOURCE
#include "bn_benchrunner.h"
#include "bn_benchfmt.h"
#include "bn_benchresults.h"
#include "bn_benchstats.h"
#include "bn_launcher.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_MAX_REGEXES 16
#define S_DEFAULT_REPEAT 10
#define S_DEFAULT_TIMEOUT 120.0
#define S_SAMPLE_TIME 0.01 //  seconds a time_ sample aims for (asv's)
#define S_MAX_NUMBER 1000
#define S_WARMUP_TIME 0.1 //  seconds of untimed calls first (by default)

struct _bn_benchrunner_t {
    const bn_benchdef_t *table;     //  the benchmarks
    size_t count;                   //  how many
    bool quick;                     //  --quick
    regex_t regexes[S_MAX_REGEXES]; //  -b
    size_t regex_count;             //  how many
    char *machine;                  //  --machine (NULL: host name)
    char *results_dir;              //  --results
    char *bin_dir;                  //  where the programs are
    char *commit;                   //  the commit measured
    double date_ms;                 //  its date
    char *env;                      //  environment name
    json_t *overrides;              //  --param NAME=LIST: name -> values
    int per_process;                //  engines per process (0: auto)
    bool show_stderr;               //  print why cases failed
    bool osu_full;                  //  -f: OSU min, max, iterations
    int rounds;                     //  --rounds: passes over the selection
    FILE *out;                      //  where results go
    bool tty;                       //  out is a terminal
    bn_benchresults_t *results;     //  this run's
    json_t *floor_needed;           //  "<floor> E B": floor cases needed
    size_t cases_total, cases_done; //  for the progress line
    char result_path[4096];         //  the file written
};

//  Set by SIGINT or SIGTERM: the case running is ended, the run stops
static volatile sig_atomic_t s_interrupted;

static void
s_on_signal (int signum)
{
    s_interrupted = 1;
}

typedef struct {
    bn_benchresult_t status; //  outcome
    double *samples;         //  malloc'd
    size_t count;            //  samples
    int number;              //  calls per sample
    char reason[512];        //  why it failed or was skipped
    int passes;              //  passes pooled in (s_pool)
} s_outcome_t;

//  Pool outcome, one pass's, into pool (the passes before it), taking its
//  samples: a case that failed in any pass has failed; else the samples of
//  every pass together.
static void
s_pool (s_outcome_t *pool, s_outcome_t *outcome)
{
    if (pool->passes++ == 0) {
        *pool = *outcome;
        pool->passes = 1;
        outcome->samples = NULL;
        return;
    }
    if (pool->status == BN_BENCHRESULT_FAILED) {
        free (outcome->samples);
        outcome->samples = NULL;
        return;
    }
    if (outcome->status != BN_BENCHRESULT_OK) {
        int passes = pool->passes;
        free (pool->samples);
        *pool = *outcome;
        pool->passes = passes;
        outcome->samples = NULL;
        return;
    }
    double *more = realloc (pool->samples, (pool->count + outcome->count) *
                                               sizeof *pool->samples);
    if (more) {
        memcpy (more + pool->count, outcome->samples,
                outcome->count * sizeof *more);
        pool->samples = more;
        pool->count += outcome->count;
    }
    pool->number = outcome->number;
    free (outcome->samples);
    outcome->samples = NULL;
}

bn_benchrunner_t *
bn_benchrunner_new (const bn_benchdef_t *table, size_t count)
{
    bn_benchrunner_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->table = table;
    self->count = count;
    self->results_dir = strdup ("results");
    self->bin_dir = strdup (".");
    self->commit = strdup ("0000000000000000000000000000000000000000");
    self->env = strdup ("banyan");
    self->rounds = 1;
    self->out = stdout;
    self->tty = isatty (fileno (stdout));
    self->floor_needed = json_object ();
    self->overrides = json_object ();
    return self;
}

void
bn_benchrunner_destroy (bn_benchrunner_t **self_p)
{
    assert (self_p);
    bn_benchrunner_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->regex_count; i++)
        regfree (&self->regexes[i]);
    free (self->machine);
    free (self->results_dir);
    free (self->bin_dir);
    free (self->commit);
    free (self->env);
    json_decref (self->overrides);
    json_decref (self->floor_needed);
    bn_benchresults_destroy (&self->results);
    free (self);
    *self_p = NULL;
}

static void
s_replace (char **field, const char *value)
{
    free (*field);
    *field = value ? strdup (value) : NULL;
}

void
bn_benchrunner_set_quick (bn_benchrunner_t *self, bool quick)
{
    self->quick = quick;
}

int
bn_benchrunner_add_regex (bn_benchrunner_t *self, const char *regex)
{
    if (self->regex_count >= S_MAX_REGEXES ||
        regcomp (&self->regexes[self->regex_count], regex,
                 REG_EXTENDED | REG_NOSUB) != 0)
        return -1;
    self->regex_count++;
    return 0;
}

void
bn_benchrunner_set_machine (bn_benchrunner_t *self, const char *machine)
{
    s_replace (&self->machine, machine);
}

void
bn_benchrunner_set_results (bn_benchrunner_t *self, const char *dir)
{
    s_replace (&self->results_dir, dir);
}

int
bn_benchrunner_set_param (bn_benchrunner_t *self, const char *name,
                          const char *list)
{
    json_t *values = json_array ();
    char buf[1024];
    snprintf (buf, sizeof buf, "%s", list);
    for (char *word = strtok (buf, ","); word; word = strtok (NULL, ",")) {
        while (*word == ' ')
            word++;
        if (!*word)
            continue;
        //  numbers as they are, anything else as a Python string repr
        char *end;
        strtod (word, &end);
        char text[256];
        if (*end == 0 || word[0] == '\'')
            snprintf (text, sizeof text, "%s", word);
        else
            snprintf (text, sizeof text, "'%s'", word);
        json_array_append_new (values, json_string (text));
    }
    if (json_array_size (values) == 0 || !*name) {
        json_decref (values);
        return -1;
    }
    json_object_set_new (self->overrides, name, values);
    return 0;
}

int
bn_benchrunner_set_engines (bn_benchrunner_t *self, const char *list)
{
    char buf[1024];
    snprintf (buf, sizeof buf, "%s", list);
    for (char *word = strtok (buf, ", "); word; word = strtok (NULL, ", ")) {
        char *end;
        long n = strtol (word, &end, 10);
        if (*end || n < 1 || n > 100000)
            return -1;
    }
    return bn_benchrunner_set_param (self, "engines", list);
}

void
bn_benchrunner_set_per_process (bn_benchrunner_t *self, int k)
{
    self->per_process = k;
}

void
bn_benchrunner_set_bin_dir (bn_benchrunner_t *self, const char *dir)
{
    s_replace (&self->bin_dir, dir);
}

void
bn_benchrunner_set_commit (bn_benchrunner_t *self, const char *commit,
                           double date_ms)
{
    s_replace (&self->commit, commit);
    self->date_ms = date_ms;
}

void
bn_benchrunner_set_env (bn_benchrunner_t *self, const char *env)
{
    s_replace (&self->env, env);
}

void
bn_benchrunner_set_show_stderr (bn_benchrunner_t *self, bool show)
{
    self->show_stderr = show;
}

void
bn_benchrunner_set_osu_full (bn_benchrunner_t *self, bool full)
{
    self->osu_full = full;
}

void
bn_benchrunner_set_rounds (bn_benchrunner_t *self, int rounds)
{
    assert (self);
    self->rounds = rounds > 0 ? rounds : 1;
}

const char *
bn_benchrunner_result_path (bn_benchrunner_t *self)
{
    return self->result_path;
}

bool
bn_benchrunner_selected (bn_benchrunner_t *self, const bn_benchdef_t *def)
{
    if (self->regex_count == 0)
        return true;
    for (size_t i = 0; i < self->regex_count; i++)
        if (regexec (&self->regexes[i], def->name, 0, NULL, 0) == 0)
            return true;
    return false;
}

//  The names of def's parameters, split into words.
static size_t
s_param_names (const bn_benchdef_t *def, char *buf, size_t size,
               const char **names)
{
    snprintf (buf, size, "%s", def->param_names ? def->param_names : "");
    size_t count = 0;
    char *save;
    for (char *word = strtok_r (buf, " ", &save);
         word && count < BN_BENCH_MAX_PARAMS;
         word = strtok_r (NULL, " ", &save))
        names[count++] = word;
    return count;
}

json_t *
bn_benchrunner_grid (bn_benchrunner_t *self, const bn_benchdef_t *def)
{
    char namebuf[256];
    const char *names[BN_BENCH_MAX_PARAMS];
    size_t count = s_param_names (def, namebuf, sizeof namebuf, names);
    json_t *grid = bn_benchdef_grid (def, self->quick);
    for (size_t p = 0; p < count && p < json_array_size (grid); p++) {
        json_t *override = json_object_get (self->overrides, names[p]);
        if (override)
            json_array_set_new (grid, p, json_deep_copy (override));
    }
    return grid;
}

static size_t
s_cases (json_t *grid)
{
    size_t cases = 1;
    size_t i;
    json_t *values;
    json_array_foreach (grid, i, values) cases *= json_array_size (values);
    return cases;
}

//  The repr texts of case index of grid (last parameter fastest).
static void
s_case_values (json_t *grid, size_t index, const char **values)
{
    for (size_t p = json_array_size (grid); p-- > 0;) {
        json_t *list = json_array_get (grid, p);
        size_t size = json_array_size (list);
        values[p] = json_string_value (json_array_get (list, index % size));
        index /= size;
    }
}

//  The index of the case to run jth: in grid order (the last parameter
//  fastest), except that a benchmark whose first parameter is "stack"
//  runs each cell's stacks one after the other, so that the stacks it
//  compares meet the machine in the same state rather than minutes apart.
static size_t
s_run_order (json_t *grid, const char **names, size_t count, size_t j)
{
    size_t stacks = json_array_size (json_array_get (grid, 0));
    if (count < 2 || strcmp (names[0], "stack") != 0 || stacks < 2)
        return j;
    size_t cells = s_cases (grid) / stacks;
    return (j % stacks) * cells + j / stacks;
}

//  The floor's two parameter values for a case of def, as "E B"; false if
//  def is not stated against a floor.
static bool
s_floor_key (const bn_benchdef_t *def, const char **names, const char **values,
             size_t count, char *key, size_t size)
{
    if (!def->floor)
        return false;
    char buf[128];
    snprintf (buf, sizeof buf, "%s", def->floor);
    char *save;
    const char *parts[2] = {NULL, NULL};
    char *word = strtok_r (buf, " ", &save);
    for (int i = 0; i < 2 && word; i++, word = strtok_r (NULL, " ", &save)) {
        parts[i] = word;
        for (size_t p = 0; p < count; p++)
            if (strcmp (names[p], word) == 0)
                parts[i] = values[p];
    }
    if (!parts[0] || !parts[1])
        return false;
    snprintf (key, size, "%s %s", parts[0], parts[1]);
    return true;
}

static int
s_remove_one (const char *path, const struct stat *st, int flag,
              struct FTW *ftw)
{
    return remove (path);
}

// ---------------------------------------------------------------------------
//  The case process

static void
s_send (int fd, const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start (args, format);
    int length = vsnprintf (line, sizeof line - 1, format, args);
    va_end (args);
    if (length < 0)
        return;
    if ((size_t)length > sizeof line - 2)
        length = sizeof line - 2;
    //  one line per record: newlines in reasons become spaces
    for (int i = 0; i < length; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[length++] = '\n';
    if (write (fd, line, (size_t)length) < 0)
        _exit (3);
}

//  Run case c: setup, warm-up, samples, teardown, each record a line on
//  fd. Never returns.
static void
s_case_process (bn_benchcase_t *c, int fd, int repeat, int warmup, int number)
{
    const bn_benchdef_t *def = c->def;
    int rc = def->setup ? def->setup (c) : BN_BENCH_OK;
    if (rc == BN_BENCH_OK) {
        double value = 0;
        //  warm-up: a count, or (warmup 0) calls for S_WARMUP_TIME
        double warm_until = zclock_usecs () / 1e6 + S_WARMUP_TIME;
        for (int i = 0; rc == BN_BENCH_OK; i++) {
            if (warmup > 0 ? i >= warmup
                           : warmup < 0 ||
                                 (i > 0 && zclock_usecs () / 1e6 > warm_until))
                break;
            rc = def->run (c, &value);
        }
        bn_benchkind_t kind = bn_benchdef_kind (def);
        if (kind == BN_BENCH_TIME && number == 0 && rc == BN_BENCH_OK) {
            //  asv's automatic number: enough calls for a 10 ms sample
            double start = zclock_usecs () / 1e6;
            rc = def->run (c, &value);
            double once = zclock_usecs () / 1e6 - start;
            //  a call under the clock's microsecond reads as 0
            number = once > 0 ? (int)ceil (S_SAMPLE_TIME / once) : S_MAX_NUMBER;
            if (number > S_MAX_NUMBER)
                number = S_MAX_NUMBER;
            if (number < 1)
                number = 1;
        }
        if (number < 1)
            number = 1;
        s_send (fd, "N %d", kind == BN_BENCH_TIME ? number : 1);
        for (int r = 0; r < repeat && rc == BN_BENCH_OK; r++) {
            if (kind == BN_BENCH_TIME) {
                double start = zclock_usecs () / 1e6;
                for (int i = 0; i < number && rc == BN_BENCH_OK; i++)
                    rc = def->run (c, &value);
                value = (zclock_usecs () / 1e6 - start) / number;
            } else
                rc = def->run (c, &value);
            if (rc == BN_BENCH_OK)
                s_send (fd, "S %.17g", value);
        }
    }
    if (rc == BN_BENCH_FAIL)
        s_send (fd, "F %s", *c->reason ? c->reason : "failed");
    else if (rc == BN_BENCH_SKIP)
        s_send (fd, "K %s", c->reason);
    if (def->teardown)
        def->teardown (c);
    s_send (fd, "D");
    _exit (0);
}

//  Run one case in a process of its own, bounded by the timeout.
static void
s_run_case (bn_benchrunner_t *self, const bn_benchdef_t *def,
            const char **values, size_t count, s_outcome_t *outcome)
{
    memset (outcome, 0, sizeof *outcome);
    outcome->status = BN_BENCHRESULT_FAILED;
    const char *tmp = getenv ("TMPDIR");
    char template[4096];
    snprintf (template, sizeof template, "%s/banyan-bench-XXXXXX",
              tmp && *tmp ? tmp : "/tmp");
    char *made = mkdtemp (template);
    if (!made) {
        snprintf (outcome->reason, sizeof outcome->reason,
                  "cannot create a folder: %s", strerror (errno));
        return;
    }
    int fds[2];
    if (pipe (fds) != 0) {
        snprintf (outcome->reason, sizeof outcome->reason, "pipe: %s",
                  strerror (errno));
        rmdir (made);
        return;
    }
    bn_benchcase_t c = {.def = def,
                        .quick = self->quick,
                        .per_process = self->per_process,
                        .dir = made,
                        .bin_dir = self->bin_dir};
    char namebuf[256];
    c.param_count = s_param_names (def, namebuf, sizeof namebuf, c.param_names);
    for (size_t p = 0; p < count && p < BN_BENCH_MAX_PARAMS; p++)
        c.param_values[p] = values[p];
    int repeat = def->repeat > 0 ? def->repeat : S_DEFAULT_REPEAT;
    int warmup = def->warmup;
    int number = def->number;
    if (self->quick) {
        repeat = 1;
        warmup = -1;
        number = 1;
    }
    double timeout = def->timeout > 0 ? def->timeout : S_DEFAULT_TIMEOUT;
    fflush (NULL);
    pid_t pid = fork ();
    if (pid == 0) {
        setpgid (0, 0);
        close (fds[0]);
        signal (SIGPIPE, SIG_DFL);
        signal (SIGINT, SIG_DFL);
        signal (SIGTERM, SIG_DFL);
        char log[4200];
        snprintf (log, sizeof log, "%s/case.log", made);
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open ("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2 (null, 0);
            dup2 (null, 1);
        }
        if (fd >= 0)
            dup2 (fd, 2);
        s_case_process (&c, fds[1], repeat, warmup, number);
    }
    close (fds[1]);
    if (pid < 0) {
        close (fds[0]);
        snprintf (outcome->reason, sizeof outcome->reason, "fork: %s",
                  strerror (errno));
        nftw (made, s_remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return;
    }
    setpgid (pid, pid);
    double deadline = zclock_usecs () / 1e6 + timeout;
    char buffer[8192];
    size_t used = 0;
    bool done = false, timed_out = false, failed = false, skipped = false;
    bool interrupted = false;
    size_t capacity = 16;
    outcome->samples = malloc (capacity * sizeof *outcome->samples);
    while (!done) {
        int left = (int)((deadline - zclock_usecs () / 1e6) * 1000);
        if (left <= 0) {
            timed_out = true;
            break;
        }
        if (s_interrupted) {
            interrupted = true;
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int ready = poll (&pfd, 1, left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;
        ssize_t n = read (fds[0], buffer + used, sizeof buffer - 1 - used);
        if (n <= 0)
            break; //  the case process ended
        used += (size_t)n;
        buffer[used] = 0;
        char *line = buffer, *end;
        while ((end = strchr (line, '\n'))) {
            *end = 0;
            if (line[0] == 'S' && outcome->samples) {
                if (outcome->count == capacity) {
                    capacity *= 2;
                    double *bigger =
                        realloc (outcome->samples, capacity * sizeof *bigger);
                    if (bigger)
                        outcome->samples = bigger;
                }
                if (outcome->count < capacity)
                    outcome->samples[outcome->count++] =
                        strtod (line + 2, NULL);
            } else if (line[0] == 'N')
                outcome->number = atoi (line + 2);
            else if (line[0] == 'F') {
                failed = true;
                snprintf (outcome->reason, sizeof outcome->reason, "%s",
                          line + 2);
            } else if (line[0] == 'K') {
                skipped = true;
                snprintf (outcome->reason, sizeof outcome->reason, "%s",
                          line + 2);
            } else if (line[0] == 'D')
                done = true;
            line = end + 1;
        }
        used = strlen (line);
        memmove (buffer, line, used + 1);
    }
    close (fds[0]);
    if (!done) {
        //  wait a moment for a case that is ending; kill one that hangs
        int status;
        double grace =
            zclock_usecs () / 1e6 + (timed_out || interrupted ? 0 : 2);
        while (waitpid (pid, &status, WNOHANG) == 0 &&
               zclock_usecs () / 1e6 < grace)
            usleep (10000);
    }
    kill (-pid, SIGKILL);
    int status;
    waitpid (pid, &status, 0);
    //  whatever the case started outside its process group (a cluster)
    bn_launcher_stop (made, "", 2.0, false, NULL);
    if (timed_out)
        snprintf (outcome->reason, sizeof outcome->reason,
                  "timed out after %.0f s", timeout);
    else if (interrupted)
        snprintf (outcome->reason, sizeof outcome->reason, "interrupted");
    else if (!done && !failed)
        snprintf (outcome->reason, sizeof outcome->reason,
                  "the case process ended without a result (status %d)",
                  status);
    if (done && skipped)
        outcome->status = BN_BENCHRESULT_SKIPPED;
    else if (done && !failed && outcome->count > 0)
        outcome->status = BN_BENCHRESULT_OK;
    if (self->show_stderr && outcome->status == BN_BENCHRESULT_FAILED) {
        char log[4200];
        snprintf (log, sizeof log, "%s/case.log", made);
        char *text = bn_benchresults_slurp (log);
        if (text && *text)
            fprintf (self->out, "%s", text);
        free (text);
    }
    nftw (made, s_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

// ---------------------------------------------------------------------------
//  Printing

static void
s_params_text (const char **values, size_t count, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    if (count == 0)
        return;
    used += (size_t)snprintf (buf, size, " (");
    for (size_t p = 0; p < count && used < size; p++)
        used += (size_t)snprintf (buf + used, size - used, "%s%s",
                                  p ? ", " : "", values[p]);
    if (used < size)
        snprintf (buf + used, size - used, ")");
}

static void
s_progress (bn_benchrunner_t *self, const char *name, const char *params)
{
    if (!self->tty)
        return;
    int percent = self->cases_total
                      ? (int)(100 * self->cases_done / self->cases_total)
                      : 0;
    fprintf (self->out, "\r\033[K[%3d%%] %s%s", percent, name, params);
    fflush (self->out);
}

static void
s_print_outcome (bn_benchrunner_t *self, const bn_benchdef_t *def,
                 const char *params, s_outcome_t *outcome, const char *floor)
{
    if (self->tty)
        fprintf (self->out, "\r\033[K");
    char value[64] = "failed";
    if (outcome->status == BN_BENCHRESULT_SKIPPED)
        snprintf (value, sizeof value, "n/a");
    else if (outcome->status == BN_BENCHRESULT_OK) {
        bn_benchstats_t stats;
        bn_benchstats_compute (&stats, outcome->samples, outcome->count);
        bn_benchfmt_value (stats.median,
                           outcome->count > 1 ? bn_benchstats_err (&stats) : -1,
                           bn_benchdef_unit (def), value, sizeof value);
    }
    fprintf (self->out, "%s%s  %s%s\n", def->name, params, value,
             floor ? floor : "");
    if (outcome->status != BN_BENCHRESULT_OK && *outcome->reason &&
        (self->show_stderr || outcome->status == BN_BENCHRESULT_SKIPPED))
        fprintf (self->out, "    %s\n", outcome->reason);
    fflush (self->out);
}

//  "  4.4× floor" for a case stated against floor (case key), when that
//  has a figure.
static void
s_floor_ratio (bn_benchrunner_t *self, const char *floor_name, const char *key,
               s_outcome_t *outcome, char *buf, size_t size)
{
    buf[0] = 0;
    if (outcome->status != BN_BENCHRESULT_OK)
        return;
    char copy[128];
    snprintf (copy, sizeof copy, "%s", key);
    char *space = strchr (copy, ' ');
    if (!space)
        return;
    *space = 0;
    const char *values[2] = {copy, space + 1};
    long index = bn_benchresults_find (self->results, floor_name, values, 2);
    double floor;
    if (index < 0 ||
        bn_benchresults_case (self->results, floor_name, (size_t)index, &floor,
                              NULL, NULL, NULL) != BN_BENCHRESULT_OK ||
        floor <= 0)
        return;
    bn_benchstats_t stats;
    bn_benchstats_compute (&stats, outcome->samples, outcome->count);
    snprintf (buf, size, "  %.2f× floor", stats.median / floor);
}

// ---------------------------------------------------------------------------
//  OSU tables

static void
s_print_osu (bn_benchrunner_t *self, const bn_benchdef_t *def, json_t *grid)
{
    char namebuf[256];
    const char *names[BN_BENCH_MAX_PARAMS];
    size_t count = s_param_names (def, namebuf, sizeof namebuf, names);
    size_t size_param = count;
    for (size_t p = 0; p < count; p++)
        if (strcmp (names[p], "bytes") == 0)
            size_param = p;
    bool bandwidth = strstr (def->osu, "Bandwidth") != NULL;
    bool one_way = strcmp (def->osu, "Latency") == 0;
    size_t cases = s_cases (grid);
    //  one table per combination of the other parameters
    size_t sizes = size_param < count
                       ? json_array_size (json_array_get (grid, size_param))
                       : 1;
    const char *values[BN_BENCH_MAX_PARAMS];
    for (size_t first = 0; first < cases; first++) {
        s_case_values (grid, first, values);
        if (size_param < count &&
            strcmp (values[size_param],
                    json_string_value (json_array_get (
                        json_array_get (grid, size_param), 0))) != 0)
            continue;
        fprintf (self->out, "\n# OSU banyan %s Test (%s", def->osu, def->name);
        for (size_t p = 0; p < count; p++)
            if (p != size_param)
                fprintf (self->out, ", %s %s", names[p], values[p]);
        fprintf (self->out, ")\n");
        const char *what = bandwidth ? "Bandwidth (MB/s)" : "Avg Latency(us)";
        fprintf (self->out, "# %-10s %18s", "Size", what);
        if (self->osu_full && !bandwidth)
            fprintf (self->out, " %18s %18s %12s", "Min Latency(us)",
                     "Max Latency(us)", "Iterations");
        fprintf (self->out, "\n");
        for (size_t s = 0; s < sizes; s++) {
            //  the case with this size and the other values of first
            const char *these[BN_BENCH_MAX_PARAMS];
            memcpy (these, values, sizeof these);
            if (size_param < count)
                these[size_param] = json_string_value (
                    json_array_get (json_array_get (grid, size_param), s));
            long index =
                bn_benchresults_find (self->results, def->name, these, count);
            bn_benchstats_t stats;
            double *samples = NULL;
            size_t n = 0;
            if (index < 0 || bn_benchresults_case (
                                 self->results, def->name, (size_t)index, NULL,
                                 &stats, &samples, &n) != BN_BENCHRESULT_OK) {
                fprintf (self->out, "%-12s %18s\n",
                         size_param < count ? these[size_param] : "0",
                         "failed");
                continue;
            }
            double bytes = size_param < count ? atof (these[size_param]) : 0;
            double scale = one_way ? 0.5e6 : 1e6;
            int number = 1;
            json_t *row = json_object_get (bn_benchresults_rows (self->results),
                                           def->name);
            json_t *numbers = json_array_get (row, 9);
            if (json_is_integer (json_array_get (numbers, (size_t)index)))
                number = (int)json_integer_value (
                    json_array_get (numbers, (size_t)index));
            if (bandwidth)
                fprintf (self->out, "%-12.0f %18.2f\n", bytes,
                         bytes * 64 / stats.median / 1e6);
            else {
                fprintf (self->out, "%-12.0f %18.2f", bytes,
                         stats.median * scale);
                if (self->osu_full)
                    fprintf (self->out, " %18.2f %18.2f %12zu",
                             stats.min * scale, stats.max * scale,
                             n * (size_t)number);
                fprintf (self->out, "\n");
            }
            free (samples);
        }
    }
}

// ---------------------------------------------------------------------------
//  A run

//  Case index of name in this run as previous had it (same parameter
//  values), or skipped.
static void
s_keep_case (bn_benchrunner_t *self, bn_benchresults_t *previous,
             const char *name, const char **values, size_t index)
{
    double *samples = NULL;
    size_t count = 0;
    long old = previous ? bn_benchresults_find (previous, name, values, 2) : -1;
    bn_benchresult_t status =
        old < 0 ? BN_BENCHRESULT_SKIPPED
                : bn_benchresults_case (previous, name, (size_t)old, NULL, NULL,
                                        &samples, &count);
    if (status == BN_BENCHRESULT_MISSING ||
        (status == BN_BENCHRESULT_OK && count == 0))
        status = BN_BENCHRESULT_SKIPPED;
    json_t *row = previous
                      ? json_object_get (bn_benchresults_rows (previous), name)
                      : NULL;
    json_t *number = json_array_get (json_array_get (row, 9), (size_t)old);
    bn_benchresults_set_case (
        self->results, name, index, status, samples, count,
        json_is_integer (number) ? (int)json_integer_value (number) : 1);
    free (samples);
}

//  Whether some benchmark of the table is stated against def.
static bool
s_is_floor (bn_benchrunner_t *self, const bn_benchdef_t *def)
{
    for (size_t i = 0; i < self->count; i++) {
        const char *floor = bn_benchdef_floor (&self->table[i]);
        if (floor && strcmp (floor, def->name) == 0)
            return true;
    }
    return false;
}

//  One pass over benchmark def's cases (round counts from 0), pooled into
//  pooled (one per case) and recorded; printed in the last pass. Returns 1
//  if a case has failed, else 0.
static int
s_pass (bn_benchrunner_t *self, const bn_benchdef_t *def, json_t *grid,
        bn_benchresults_t *previous, s_outcome_t *pooled, double *duration,
        int round)
{
    int status = 0;
    bool last = round == self->rounds - 1;
    bool floor_only =
        s_is_floor (self, def) && !bn_benchrunner_selected (self, def);
    const char *floor = bn_benchdef_floor (def);
    if (round == 0) {
        char version[64];
        bn_benchresults_version (def, version, sizeof version);
        struct timeval now;
        gettimeofday (&now, NULL);
        bn_benchresults_begin (self->results, def->name, grid, version,
                               (double)now.tv_sec * 1000 +
                                   (double)now.tv_usec / 1000);
    }
    double started = zclock_usecs () / 1e6;
    char namebuf[256];
    const char *names[BN_BENCH_MAX_PARAMS];
    size_t count = s_param_names (def, namebuf, sizeof namebuf, names);
    size_t cases = s_cases (grid);
    for (size_t j = 0; j < cases && !s_interrupted; j++) {
        size_t k = s_run_order (grid, names, count, j);
        const char *values[BN_BENCH_MAX_PARAMS];
        s_case_values (grid, k, values);
        char params[512];
        s_params_text (values, count, params, sizeof params);
        if (floor_only) {
            char key[256];
            snprintf (key, sizeof key, "%s %s %s", def->name, values[0],
                      values[1]);
            if (!json_object_get (self->floor_needed, key)) {
                //  not asked for: as an earlier run left it, or skipped;
                //  not printed
                if (round == 0)
                    s_keep_case (self, previous, def->name, values, k);
                self->cases_done++;
                continue;
            }
        }
        s_progress (self, def->name, params);
        s_outcome_t outcome;
        s_run_case (self, def, values, count, &outcome);
        self->cases_done++;
        s_outcome_t *pool = &pooled[k];
        s_pool (pool, &outcome);
        bn_benchresults_set_case (self->results, def->name, k, pool->status,
                                  pool->samples, pool->count, pool->number);
        if (last) {
            char key[128], ratio[64] = "";
            if (s_floor_key (def, names, values, count, key, sizeof key))
                s_floor_ratio (self, floor, key, pool, ratio, sizeof ratio);
            s_print_outcome (self, def, params, pool, ratio);
        }
        if (pool->status == BN_BENCHRESULT_FAILED)
            status = 1;
    }
    *duration += zclock_usecs () / 1e6 - started;
    bn_benchresults_set_duration (self->results, def->name, *duration);
    return status;
}

int
bn_benchrunner_run (bn_benchrunner_t *self)
{
    //  What runs, with which grid: the floors first, each one's grid grown
    //  by the cases the others are stated against; a floor not selected
    //  runs only those
    size_t total = 0;
    const bn_benchdef_t **defs = calloc (self->count + 1, sizeof *defs);
    json_t **grids = calloc (self->count + 1, sizeof *grids);
    if (!defs || !grids) {
        free (defs);
        free (grids);
        return -1;
    }
    json_object_clear (self->floor_needed);
    for (size_t i = 0; i < self->count; i++) {
        const bn_benchdef_t *def = &self->table[i];
        if (!s_is_floor (self, def))
            continue;
        json_t *grid = bn_benchrunner_grid (self, def);
        if (!bn_benchrunner_selected (self, def)) {
            json_array_clear (json_array_get (grid, 0));
            json_array_clear (json_array_get (grid, 1));
        }
        defs[total] = def;
        grids[total] = grid;
        total++;
    }
    size_t floors = total;
    for (size_t i = 0; i < self->count; i++) {
        const bn_benchdef_t *def = &self->table[i];
        if (s_is_floor (self, def) || !bn_benchrunner_selected (self, def))
            continue;
        json_t *grid = bn_benchrunner_grid (self, def);
        char namebuf[256];
        const char *names[BN_BENCH_MAX_PARAMS];
        size_t count = s_param_names (def, namebuf, sizeof namebuf, names);
        const char *values[BN_BENCH_MAX_PARAMS];
        const char *floor = bn_benchdef_floor (def);
        json_t *floor_grid = NULL;
        for (size_t f = 0; floor && f < floors; f++)
            if (strcmp (defs[f]->name, floor) == 0)
                floor_grid = grids[f];
        for (size_t k = 0; floor_grid && k < s_cases (grid); k++) {
            s_case_values (grid, k, values);
            char key[128], needed[256];
            if (s_floor_key (def, names, values, count, key, sizeof key)) {
                snprintf (needed, sizeof needed, "%s %s", floor, key);
                json_object_set_new (self->floor_needed, needed, json_true ());
                char *space = strchr (key, ' ');
                *space = 0;
                bn_benchdef_grid_add (json_array_get (floor_grid, 0), key);
                bn_benchdef_grid_add (json_array_get (floor_grid, 1),
                                      space + 1);
            }
        }
        defs[total] = def;
        grids[total] = grid;
        total++;
    }
    //  Results: this commit's file, merged into when it exists
    json_t *machine = bn_benchresults_machine_info (self->machine);
    char file[256], path[4096], err[512] = "";
    bn_benchresults_filename (self->commit, self->env, file, sizeof file);
    snprintf (path, sizeof path, "%s/%s/%s", self->results_dir,
              json_string_value (json_object_get (machine, "machine")), file);
    //  A floor's earlier cases of this commit are kept: its row grows by
    //  what this run needs. A floor with nothing to run is left out.
    bn_benchresults_t *previous =
        access (path, F_OK) == 0 ? bn_benchresults_load (path, err, sizeof err)
                                 : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < total; i++) {
        if (i < floors && s_cases (grids[i]) == 0) {
            json_decref (grids[i]);
            continue;
        }
        json_t *earlier =
            previous && i < floors && !bn_benchrunner_selected (self, defs[i])
                ? bn_benchresults_params (previous, defs[i]->name)
                : NULL;
        if (json_array_size (earlier) == 2)
            for (size_t p = 0; p < 2; p++) {
                size_t v;
                json_t *value;
                json_array_foreach (json_array_get (earlier, p), v, value)
                    bn_benchdef_grid_add (json_array_get (grids[i], p),
                                          json_string_value (value));
            }
        defs[kept] = defs[i];
        grids[kept] = grids[i];
        kept++;
    }
    total = kept;
    if (total == 0) {
        fprintf (stderr, "banyan-bench: no benchmark matches\n");
        free (defs);
        free (grids);
        json_decref (machine);
        bn_benchresults_destroy (&previous);
        return -1;
    }
    bn_benchresults_destroy (&self->results);
    if (access (path, F_OK) == 0)
        self->results = bn_benchresults_load (path, err, sizeof err);
    if (!self->results)
        self->results = bn_benchresults_new (machine, self->commit, self->env,
                                             self->date_ms);
    snprintf (self->result_path, sizeof self->result_path, "%s", path);
    self->cases_total = 0;
    self->cases_done = 0;
    for (size_t i = 0; i < total; i++)
        self->cases_total += s_cases (grids[i]);

    self->cases_total *= (size_t)self->rounds;
    //  each case's passes so far, per benchmark; its time so far
    s_outcome_t **pooled = calloc (total, sizeof *pooled);
    double *durations = calloc (total, sizeof *durations);
    bool allocated = pooled && durations;
    for (size_t i = 0; allocated && i < total; i++)
        allocated = (pooled[i] = calloc (s_cases (grids[i]) + 1,
                                         sizeof **pooled)) != NULL;
    if (!allocated)
        fprintf (stderr, "banyan-bench: out of memory\n");

    int status = allocated ? 0 : -1;
    s_interrupted = 0;
    struct sigaction action = {.sa_handler = s_on_signal}, old_int, old_term;
    sigemptyset (&action.sa_mask);
    sigaction (SIGINT, &action, &old_int);
    sigaction (SIGTERM, &action, &old_term);
    for (int round = 0; round < self->rounds && status >= 0 && !s_interrupted;
         round++) {
        for (size_t i = 0; i < total && !s_interrupted; i++) {
            if (s_pass (self, defs[i], grids[i], previous, pooled[i],
                        &durations[i], round) != 0)
                status = 1;
            //  saved after every benchmark: an interrupted run keeps them
            if (bn_benchresults_save (self->results, self->results_dir, err,
                                      sizeof err) != 0 ||
                bn_benchresults_save_benchmarks (self->results_dir, &defs[i],
                                                 &grids[i], 1, err,
                                                 sizeof err) != 0) {
                fprintf (stderr, "banyan-bench: %s\n", err);
                status = -1;
                break;
            }
        }
    }
    for (size_t i = 0; pooled && i < total; i++) {
        for (size_t k = 0; pooled[i] && k < s_cases (grids[i]); k++)
            free (pooled[i][k].samples);
        free (pooled[i]);
    }
    free (pooled);
    free (durations);
    sigaction (SIGINT, &old_int, NULL);
    sigaction (SIGTERM, &old_term, NULL);
    if (self->tty)
        fprintf (self->out, "\r\033[K");
    if (s_interrupted && status >= 0)
        status = -2;
    for (size_t i = 0; status >= 0 && i < total; i++)
        if (defs[i]->osu)
            s_print_osu (self, defs[i], grids[i]);
    for (size_t i = 0; i < total; i++)
        json_decref (grids[i]);
    json_decref (machine);
    bn_benchresults_destroy (&previous);
    free (defs);
    free (grids);
    return status;
}

void
bn_benchrunner_list (bn_benchrunner_t *self, FILE *out)
{
    for (size_t i = 0; i < self->count; i++) {
        const bn_benchdef_t *def = &self->table[i];
        if (!bn_benchrunner_selected (self, def))
            continue;
        json_t *grid = bn_benchrunner_grid (self, def);
        fprintf (out, "%s", def->name);
        if (def->param_names && *def->param_names) {
            char namebuf[256];
            const char *names[BN_BENCH_MAX_PARAMS];
            size_t count = s_param_names (def, namebuf, sizeof namebuf, names);
            fprintf (out, " (");
            for (size_t p = 0; p < count; p++) {
                json_t *values = json_array_get (grid, p);
                fprintf (out, "%s%s=", p ? "; " : "", names[p]);
                size_t v;
                json_t *value;
                json_array_foreach (values, v, value) fprintf (
                    out, "%s%s", v ? "," : "", json_string_value (value));
            }
            fprintf (out, ")");
        }
        fprintf (out, "  [%zu case%s]\n", s_cases (grid),
                 s_cases (grid) == 1 ? "" : "s");
        if (def->description)
            fprintf (out, "    %s\n", def->description);
        json_decref (grid);
    }
}

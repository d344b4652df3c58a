/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_config: one static table of settings; values layered by source.

    The file reader implements ZPL (the grammar of czmq's zconfig) itself
    rather than calling zconfig_load: zconfig reports syntax errors only to
    stdout and keeps no line numbers, and a user who mistypes a setting
    needs to be told which line to fix.  */
#include "bn_config.h"
#include "bn_limits.h"
#include "bn_utf8.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct {
    const char *name; //  Dotted name, section.key
    bn_config_type_t type;
    const char *fallback; //  Built-in default, as text
    double min;           //  Lowest value allowed (int, double)
    double max;           //  Highest value allowed (int, double)
    const char *choices;  //  "a|b|c" allowed strings, or NULL for any
    const char *alias;    //  Short environment variable, or NULL
    double unit;          //  Duration: ms in a bare number (1 or 1000)
    const char *doc;      //  One line for humans
} s_setting_t;

#define S_NUM(min, max) min, max, NULL, NULL, 0
#define S_STR(choices, alias) 0, 0, choices, alias, 0
#define S_BOOL 0, 0, NULL, NULL, 0
#define S_PORTS 1, 65535, NULL, NULL, 0
//  A duration whose bare numbers are in unit ms, from min to max ms
#define S_DUR(unit, min, max) min, max, NULL, NULL, unit
#define S_MS 1
#define S_SEC 1000
#define S_HOUR 3600000.0
#define S_DAY (24 * S_HOUR)

static const s_setting_t s_settings[] = {
    {"controller.ip", BN_CONFIG_STRING, "127.0.0.1", S_STR (NULL, NULL),
     "IP address the controller binds to (* or 0.0.0.0 for every "
     "interface)"},
    {"controller.location", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "host name or address that engines on other hosts reach the "
     "controller by when it binds * (empty: this host's name)"},
    {"controller.depth", BN_CONFIG_INT, "1", S_NUM (0, BN_TOPOLOGY_MAX_DEPTH),
     "depth of the broadcast scheduler tree (2^depth leaf schedulers)"},
    {"controller.topology", BN_CONFIG_STRING, "kary:2", S_STR (NULL, NULL),
     "shape of the broadcast tree: kary:K, per-level fanouts AxB, binomial "
     "or auto (with controller.depth)"},
    {"controller.engines", BN_CONFIG_INT, "0", S_NUM (0, INT_MAX),
     "number of engines the cluster is expected to have: the auto topology "
     "shapes the tree for it (0 = unknown)"},
    {"controller.tree_deadline", BN_CONFIG_DURATION, "0",
     S_DUR (S_MS, 0, INT_MAX),
     "default deadline of a broadcast request (0 = none; a bare number is "
     "ms): engines that have not answered by then fail with EngineError"},
    {"controller.fold", BN_CONFIG_INT, "8", S_NUM (0, INT_MAX),
     "a tree of threads with at most this many leaves runs in its root "
     "alone, which serves every leaf's port and orders the results as the "
     "tree does (0 = never)"},
    {"controller.tree_mode", BN_CONFIG_STRING, "threads",
     S_STR ("threads|processes", NULL),
     "how the broadcast tree's nodes run: threads of the controller or one "
     "banyan-scheduler process each"},
    {"controller.scheduler_path", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "banyan-scheduler program for tree_mode processes (empty: the one "
     "beside banyan-controller, else found in PATH)"},
    {"controller.scheme", BN_CONFIG_STRING, "leastload",
     S_STR ("leastload|pure|lru|plainrandom|twobin|weighted|none", NULL),
     "task (load-balanced) scheduler scheme"},
    {"controller.task_hwm", BN_CONFIG_INT, "1", S_NUM (0, INT_MAX),
     "tasks the task scheduler gives an engine at once (0 = unlimited)"},
    {"controller.heartbeat_period", BN_CONFIG_DURATION, "3s",
     S_DUR (S_MS, 10, S_HOUR),
     "time between heartbeat pings to engines (a bare number is ms)"},
    {"controller.heartbeat_misses", BN_CONFIG_INT, "10", S_NUM (1, 1000000),
     "heartbeats an engine may miss in a row before it is declared dead"},
    {"controller.registration_timeout", BN_CONFIG_DURATION, "30s",
     S_DUR (S_SEC, 1, S_DAY),
     "time an engine has to complete its registration (a bare number is "
     "seconds)"},
    {"controller.connect_grace", BN_CONFIG_DURATION, "3s",
     S_DUR (S_MS, 0, S_HOUR),
     "how long requests for an engine that registered but is not connected "
     "yet wait for its connection before they fail (a bare number is ms)"},
    {"controller.stranded_timeout", BN_CONFIG_DURATION, "500ms",
     S_DUR (S_MS, 0, S_HOUR),
     "how long requests pending on an engine that unregistered wait for its "
     "replies before they fail with EngineError (a bare number is ms)"},
    {"controller.node_restart_backoff", BN_CONFIG_DURATION, "5s",
     S_DUR (S_MS, 100, S_HOUR),
     "longest wait before a tree node process that keeps dying is started "
     "again (tree_mode processes; a bare number is ms)"},
    {"controller.db_flush", BN_CONFIG_DURATION, "200ms",
     S_DUR (S_MS, 1, S_HOUR),
     "time between writes of task records to an sqlite db (a bare number "
     "is ms)"},
    {"controller.io_threads", BN_CONFIG_INT, "2", S_NUM (1, 64),
     "ZeroMQ I/O threads of the controller: they move every byte between "
     "its sockets and the network, one connection each"},
    {"controller.hwm", BN_CONFIG_INT, "0", S_NUM (0, INT_MAX),
     "high-water mark of every controller socket (0 = unlimited)"},
    {"controller.client_hwm", BN_CONFIG_INT, "10000", S_NUM (0, INT_MAX),
     "replies the controller queues for one client that does not read "
     "them; past it they are dropped and counted, the hub's records keep "
     "them (0 = unlimited)"},
    {"controller.curve", BN_CONFIG_BOOL, "false", S_BOOL,
     "CurveZMQ on every controller socket: its keypair in the profile's "
     "security folder, its public key in the connection files "
     "(curve_serverkey)"},
    {"controller.ports", BN_CONFIG_PORTS, "", S_PORTS,
     "range LO-HI every port the controller, its tree nodes and host nodes "
     "(banyan-scheduler --host) listen on comes from (empty: any port)"},
    {"controller.reuse_files", BN_CONFIG_BOOL, "false", S_BOOL,
     "keep connection files (ports and key) on exit and reuse them"},
    {"controller.reduce_plugins", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "colon-separated paths of .so reduction plugins every broadcast tree "
     "node loads (bn_reduce \"<plugin>:<name>\")"},
    {"controller.db", BN_CONFIG_STRING, "memory", S_STR (NULL, NULL),
     "where the hub keeps task records: memory, none, or sqlite:<path>"},
    {"controller.record_limit", BN_CONFIG_INT, "1024", S_NUM (1, INT_MAX),
     "task records kept in memory before the oldest tenth is culled"},
    {"controller.restore", BN_CONFIG_BOOL, "false", S_BOOL,
     "restore the engine table of log/engines<cluster id>.json (implies "
     "reuse_files)"},
    {"cluster.id", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "cluster id; names connection files ipcontroller-<id>-client.json"},
    {"profile.name", BN_CONFIG_STRING, "default",
     S_STR (NULL, "BANYAN_PROFILE"),
     "profile to use: its folder is <dir_root>/profile_<name>"},
    {"profile.dir_root", BN_CONFIG_STRING, "~/.banyan",
     S_STR (NULL, "BANYAN_DIR"), "folder holding the profile_<name> folders"},
    {"log.level", BN_CONFIG_STRING, "warn",
     S_STR ("error|warn|info|debug", NULL),
     "least severe messages to log: error, warn, info or debug"},
    {"log.file", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "file to append log lines to (empty = stderr)"},
    {"engine.count", BN_CONFIG_INT, "1", S_NUM (0, 1000000),
     "engines to start"},
    {"engine.timeout", BN_CONFIG_DURATION, "30s", S_DUR (S_SEC, 0, 365 * S_DAY),
     "time an engine waits for a gone controller before it exits (a bare "
     "number is seconds)"},
    {"engine.registration_timeout", BN_CONFIG_DURATION, "5s",
     S_DUR (S_SEC, 1, S_DAY),
     "time an engine waits for its registration reply (a bare number is "
     "seconds)"},
    {"engine.request_time_limit", BN_CONFIG_DURATION, "0",
     S_DUR (S_SEC, 0, 365 * S_DAY),
     "time one execute or apply request may run (0 = no limit; a bare "
     "number is seconds)"},
    {"engine.abort_grace", BN_CONFIG_DURATION, "1s", S_DUR (S_SEC, 0, S_DAY),
     "time between the signals that end an aborted command: SIGINT, then "
     "SIGTERM, then SIGKILL (a bare number is seconds)"},
    {"engine.plugins", BN_CONFIG_STRING, "", S_STR (NULL, NULL),
     "colon-separated paths of .so function plugins each engine loads"},
    {"engine.share_broadcast", BN_CONFIG_BOOL, "true", S_BOOL,
     "the engines of one process ask banyan-controller for one broadcast "
     "connection between them, not one each"},
    {"engine.heartbeat_misses", BN_CONFIG_INT, "50", S_NUM (1, 1000000),
     "controller pings an engine may miss before it counts the controller "
     "as gone"},
    {"client.timeout", BN_CONFIG_DURATION, "10s", S_DUR (S_SEC, 0, S_DAY),
     "time a client waits for the connection file and the controller (a "
     "bare number is seconds)"},
};

#define S_COUNT ((int)(sizeof s_settings / sizeof s_settings[0]))

typedef struct {
    char *text; //  Value in canonical text form
    union {
        int i;
        double d;
        bool b;
        int64_t ms;
        int range[2]; //  Ports: lowest and highest, 0 0 when unset
    } as;
    bn_config_source_t source;
    char *origin; //  "file <path>", "env BANYAN_X"; NULL = from source
} s_value_t;

struct _bn_config_t {
    s_value_t values[S_COUNT]; //  One per s_settings entry
    char error[512];           //  Last error text
};

//  A value read and checked but not yet applied.
typedef struct {
    char *text;
    int line;  //  Where a config file set it (0 elsewhere)
    char *var; //  Environment variable that set it
} s_staged_t;

static void s_error (bn_config_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static void
s_error (bn_config_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->error, sizeof self->error, format, args);
    va_end (args);
}

static int
s_index (const char *name)
{
    for (int i = 0; i < S_COUNT; i++)
        if (strcmp (s_settings[i].name, name) == 0)
            return i;
    return -1;
}

int
bn_config_parse_duration (const char *text, int64_t bare_unit_ms,
                          int64_t *msecs)
{
    assert (text);
    assert (msecs);
    //  digits [. digits] [e [sign] digits], as a plain decimal number
    const char *p = text;
    if (!isdigit ((unsigned char)*p) && !(*p == '.' && isdigit (p[1])))
        return -1;
    while (isdigit ((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        while (isdigit ((unsigned char)*p))
            p++;
    }
    if ((*p == 'e' || *p == 'E') &&
        (isdigit ((unsigned char)p[1]) ||
         ((p[1] == '+' || p[1] == '-') && isdigit ((unsigned char)p[2])))) {
        p += 2;
        while (isdigit ((unsigned char)*p))
            p++;
    }
    double number = strtod (text, NULL);
    static const struct {
        const char *name;
        double ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    double unit = (double)bare_unit_ms;
    size_t length = 0;
    while (isalpha ((unsigned char)p[length]))
        length++;
    if (length) {
        size_t u;
        for (u = 0; u < sizeof units / sizeof units[0]; u++)
            if (strlen (units[u].name) == length &&
                strncmp (p, units[u].name, length) == 0)
                break;
        if (u == sizeof units / sizeof units[0])
            return -1;
        unit = units[u].ms;
        p += length;
    }
    while (isspace ((unsigned char)*p))
        p++;
    double ms = number * unit;
    if (*p || !isfinite (ms) || ms > 9e18 || fabs (ms - round (ms)) > 1e-6)
        return -1;
    *msecs = (int64_t)llround (ms);
    return 0;
}

char *
bn_config_format_duration (int64_t msecs, char *buffer, size_t size)
{
    assert (buffer);
    long long ms = (long long)msecs;
    if (ms == 0)
        snprintf (buffer, size, "0");
    else if (ms % 3600000 == 0)
        snprintf (buffer, size, "%lldh", ms / 3600000);
    else if (ms % 60000 == 0)
        snprintf (buffer, size, "%lldm", ms / 60000);
    else if (ms % 1000 == 0)
        snprintf (buffer, size, "%llds", ms / 1000);
    else if (ms > 1000 && ms < 1000000000) {
        //  seconds with the fraction's trailing zeros dropped: 1.5s (past
        //  11 days such a decimal may not read back to the millisecond)
        snprintf (buffer, size, "%lld.%03llds", ms / 1000, ms % 1000);
        char *end = buffer + strlen (buffer) - 1; //  at the 's'
        while (end[-1] == '0')
            end--;
        memcpy (end, "s", 2);
    } else
        snprintf (buffer, size, "%lldms", ms);
    return buffer;
}

//  Check text against a setting and put its canonical form and parsed
//  value in *value; returns -1 with the reason in self->error.
static int
s_convert (bn_config_t *self, const s_setting_t *setting, const char *text,
           s_value_t *value)
{
    char canonical[64];
    const char *result = canonical;
    char *end;
    switch (setting->type) {
    case BN_CONFIG_INT: {
        errno = 0;
        long number = strtol (text, &end, 10);
        while (isspace ((unsigned char)*end))
            end++;
        if (end == text || *end || errno || isspace ((unsigned char)*text)) {
            s_error (self, "%s: '%s' is not an integer", setting->name, text);
            return -1;
        }
        if (number < setting->min || number > setting->max) {
            s_error (self, "%s: %s is out of range %.0f..%.0f", setting->name,
                     text, setting->min, setting->max);
            return -1;
        }
        value->as.i = (int)number;
        snprintf (canonical, sizeof canonical, "%d", value->as.i);
        break;
    }
    case BN_CONFIG_DOUBLE: {
        errno = 0;
        double number = strtod (text, &end);
        while (isspace ((unsigned char)*end))
            end++;
        if (end == text || *end || errno || !isfinite (number) ||
            isspace ((unsigned char)*text)) {
            s_error (self, "%s: '%s' is not a number", setting->name, text);
            return -1;
        }
        if (number < setting->min || number > setting->max) {
            s_error (self, "%s: %s is out of range %g..%g", setting->name, text,
                     setting->min, setting->max);
            return -1;
        }
        value->as.d = number;
        snprintf (canonical, sizeof canonical, "%.15g", number);
        if (strtod (canonical, NULL) != number)
            snprintf (canonical, sizeof canonical, "%.17g", number);
        break;
    }
    case BN_CONFIG_DURATION: {
        int64_t ms;
        if (bn_config_parse_duration (text, (int64_t)setting->unit, &ms)) {
            s_error (self,
                     "%s: '%s' is not a duration in whole milliseconds "
                     "(say 3s, 200ms, 1.5s or 2m; a bare number is %s)",
                     setting->name, text,
                     setting->unit == S_SEC ? "seconds" : "milliseconds");
            return -1;
        }
        if (ms < setting->min || ms > setting->max) {
            char low[32], high[32];
            s_error (self, "%s: '%s' is out of range %s..%s", setting->name,
                     text,
                     bn_config_format_duration ((int64_t)setting->min, low,
                                                sizeof low),
                     bn_config_format_duration ((int64_t)setting->max, high,
                                                sizeof high));
            return -1;
        }
        value->as.ms = ms;
        bn_config_format_duration (ms, canonical, sizeof canonical);
        break;
    }
    case BN_CONFIG_BOOL:
        if (strcasecmp (text, "true") == 0 || strcasecmp (text, "yes") == 0 ||
            strcasecmp (text, "on") == 0 || strcmp (text, "1") == 0)
            value->as.b = true;
        else if (strcasecmp (text, "false") == 0 ||
                 strcasecmp (text, "no") == 0 ||
                 strcasecmp (text, "off") == 0 || strcmp (text, "0") == 0)
            value->as.b = false;
        else {
            s_error (self, "%s: '%s' is not true or false", setting->name,
                     text);
            return -1;
        }
        result = value->as.b ? "true" : "false";
        break;
    case BN_CONFIG_PORTS:
        if (bn_config_parse_ports (text, value->as.range) ||
            (value->as.range[0] && (value->as.range[0] < setting->min ||
                                    value->as.range[1] > setting->max))) {
            s_error (self,
                     "%s: '%s' is not a port range LO-HI (%.0f..%.0f, LO <= "
                     "HI; empty for any port)",
                     setting->name, text, setting->min, setting->max);
            return -1;
        }
        if (value->as.range[0])
            snprintf (canonical, sizeof canonical, "%d-%d", value->as.range[0],
                      value->as.range[1]);
        else
            canonical[0] = 0;
        break;
    case BN_CONFIG_STRING:
        if (setting->choices) {
            const char *choice = setting->choices;
            size_t length = strlen (text);
            bool found = false;
            while (*choice && !found) {
                size_t span = strcspn (choice, "|");
                found = span == length && strncmp (choice, text, span) == 0;
                choice += span + (choice[span] == '|');
            }
            if (!found) {
                char list[256];
                snprintf (list, sizeof list, "%s", setting->choices);
                for (char *bar = strchr (list, '|'); bar;
                     bar = strchr (bar, '|'))
                    *bar = '/';
                s_error (self, "%s: '%s' is not one of %s", setting->name, text,
                         list);
                return -1;
            }
        }
        result = text;
        break;
    }
    value->text = strdup (result);
    if (!value->text) {
        s_error (self, "out of memory");
        return -1;
    }
    return 0;
}

//  Replace the value of setting index with text from source; text must
//  already be valid. Returns -1 if out of memory.
static int
s_apply (bn_config_t *self, int index, const char *text,
         bn_config_source_t source, const char *origin)
{
    s_value_t fresh = {.source = source};
    if (s_convert (self, &s_settings[index], text, &fresh))
        return -1;
    if (origin && !(fresh.origin = strdup (origin))) {
        free (fresh.text);
        s_error (self, "out of memory");
        return -1;
    }
    s_value_t *value = &self->values[index];
    free (value->text);
    free (value->origin);
    *value = fresh;
    return 0;
}

bn_config_t *
bn_config_new (void)
{
    bn_config_t *self = calloc (1, sizeof (bn_config_t));
    if (!self)
        return NULL;
    for (int i = 0; i < S_COUNT; i++) {
        if (s_apply (self, i, s_settings[i].fallback, BN_CONFIG_DEFAULT,
                     NULL)) {
            bn_config_destroy (&self);
            return NULL;
        }
    }
    return self;
}

void
bn_config_destroy (bn_config_t **self_p)
{
    assert (self_p);
    bn_config_t *self = *self_p;
    if (self) {
        for (int i = 0; i < S_COUNT; i++) {
            free (self->values[i].text);
            free (self->values[i].origin);
        }
        free (self);
        *self_p = NULL;
    }
}

static void
s_staged_free (s_staged_t *staged)
{
    for (int i = 0; i < S_COUNT; i++) {
        free (staged[i].text);
        free (staged[i].var);
    }
}

//  Apply every staged value whose source is not outranked.
static int
s_apply_staged (bn_config_t *self, s_staged_t *staged,
                bn_config_source_t source, const char *path)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (!staged[i].text || self->values[i].source > source)
            continue;
        char origin[PATH_MAX + 64];
        if (source == BN_CONFIG_FILE)
            snprintf (origin, sizeof origin, "file %s", path);
        else
            snprintf (origin, sizeof origin, "env %s", staged[i].var);
        if (s_apply (self, i, staged[i].text, source, origin))
            return -1;
    }
    return 0;
}

//  Edit distance, to suggest the setting a typo was meant to be.
static size_t
s_distance (const char *a, const char *b)
{
    size_t lb = strlen (b);
    if (lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1]; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

//  " (did you mean 'x'?)" for the nearest known name, or "".
static void
s_suggest (const char *name, char *buffer, size_t size)
{
    const char *nearest = NULL;
    size_t best = 3;
    for (int i = 0; i < S_COUNT; i++) {
        size_t distance = s_distance (name, s_settings[i].name);
        if (distance < best) {
            best = distance;
            nearest = s_settings[i].name;
        }
    }
    if (nearest)
        snprintf (buffer, size, " (did you mean '%s'?)", nearest);
    else
        buffer[0] = 0;
}

//  True if some setting's name starts with "prefix.".
static bool
s_is_section (const char *prefix)
{
    size_t length = strlen (prefix);
    for (int i = 0; i < S_COUNT; i++)
        if (strncmp (s_settings[i].name, prefix, length) == 0 &&
            s_settings[i].name[length] == '.')
            return true;
    return false;
}

static bool
s_is_namechar (char c)
{
    return isalnum ((unsigned char)c) || (c && strchr ("$-_@.&+/", c));
}

//  Read a whole file into a malloc'd string, its length in *length; NULL
//  with errno set.
static char *
s_slurp (const char *path, size_t *length)
{
    FILE *file = fopen (path, "r");
    if (!file)
        return NULL;
    size_t size = 0, used = 0;
    char *data = NULL;
    while (true) {
        if (used + 4096 + 1 > size) {
            if (size > 4 * 1024 * 1024) {
                errno = EFBIG;
                break;
            }
            size = size ? size * 2 : 8192;
            char *bigger = realloc (data, size);
            if (!bigger)
                break;
            data = bigger;
        }
        size_t got = fread (data + used, 1, size - used - 1, file);
        used += got;
        if (got == 0) {
            if (ferror (file))
                break;
            fclose (file);
            data[used] = 0;
            *length = used;
            return data;
        }
    }
    int saved = errno;
    fclose (file);
    free (data);
    errno = saved;
    return NULL;
}

#define S_DEPTH 8 //  Deeper ZPL nesting than any setting name needs

//  Parse one ZPL line into staged values; returns -1 with self->error set.
//  path[] holds the names of the enclosing sections, *depth of them.
static int
s_parse_line (bn_config_t *self, char *line, int lineno, char **path,
              int *depth, s_staged_t *staged)
{
    size_t length = strlen (line);
    while (length && isspace ((unsigned char)line[length - 1]))
        line[--length] = 0;
    char *p = line;
    while (*p == ' ')
        p++;
    if (*p == 0 || *p == '#')
        return 0;
    if (*p == '\t') {
        s_error (self, "line %d: indent with spaces, not tabs", lineno);
        return -1;
    }
    int indent = (int)(p - line);
    if (indent % 4) {
        s_error (self, "line %d: indent by multiples of 4 spaces", lineno);
        return -1;
    }
    int level = indent / 4;
    if (level > *depth || level >= S_DEPTH) {
        s_error (self, "line %d: indented more than the line above allows",
                 lineno);
        return -1;
    }
    char *name = p;
    while (s_is_namechar (*p))
        p++;
    if (p == name) {
        s_error (self, "line %d: invalid syntax '%s'", lineno, p);
        return -1;
    }
    char *name_end = p;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *value = NULL;
    if (*p == '=') {
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '"' || *p == '\'') {
            char *close = strchr (p + 1, *p);
            if (!close) {
                s_error (self, "line %d: missing closing %c", lineno, *p);
                return -1;
            }
            *close = 0;
            value = p + 1;
            p = close + 1;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p && *p != '#') {
                s_error (self, "line %d: unexpected '%s' after the value",
                         lineno, p);
                return -1;
            }
        } else {
            char *comment = strchr (p, '#');
            if (comment) {
                *comment = 0;
                char *end = comment;
                while (end > p && isspace ((unsigned char)end[-1]))
                    *--end = 0;
            }
            value = p;
        }
    } else if (*p && *p != '#') {
        s_error (self, "line %d: expected '=' after '%.*s'", lineno,
                 (int)(name_end - name), name);
        return -1;
    }
    *name_end = 0;

    //  The setting name is the dotted path down to this line
    char full[256] = "";
    for (int i = 0; i < level; i++) {
        strncat (full, path[i], sizeof full - strlen (full) - 1);
        strncat (full, ".", sizeof full - strlen (full) - 1);
    }
    strncat (full, name, sizeof full - strlen (full) - 1);
    path[level] = name;
    *depth = level + 1;

    int index = s_index (full);
    if (!value) {
        if (index >= 0) {
            s_error (self, "line %d: setting '%s' needs a value ('%s = ...')",
                     lineno, full, name);
            return -1;
        }
        if (!s_is_section (full)) {
            s_error (self, "line %d: unknown section '%s'", lineno, full);
            return -1;
        }
        return 0;
    }
    if (index < 0) {
        char hint[128];
        s_suggest (full, hint, sizeof hint);
        s_error (self, "line %d: unknown setting '%s'%s", lineno, full, hint);
        return -1;
    }
    if (staged[index].text) {
        s_error (self, "line %d: '%s' was already set on line %d", lineno, full,
                 staged[index].line);
        return -1;
    }
    s_value_t check = {0};
    if (s_convert (self, &s_settings[index], value, &check)) {
        char reason[sizeof self->error];
        snprintf (reason, sizeof reason, "%s", self->error);
        s_error (self, "line %d: %s", lineno, reason);
        return -1;
    }
    staged[index].text = check.text;
    staged[index].line = lineno;
    return 0;
}

int
bn_config_load_file (bn_config_t *self, const char *path)
{
    assert (self);
    assert (path);
    size_t length = 0;
    char *data = s_slurp (path, &length);
    if (!data) {
        s_error (self, "%s: cannot read: %s", path, strerror (errno));
        return -1;
    }
    //  A file that is not text (a binary, a compressed file) is refused
    //  whole, rather than read up to its first NUL or bad line
    const char *nul = memchr (data, 0, length);
    if (nul || !bn_utf8_valid ((const unsigned char *)data, length)) {
        size_t line = 1;
        for (const char *at = data; at < data + length && (!nul || at < nul);
             at++)
            line += *at == '\n';
        if (nul)
            s_error (self, "%s: not a text file (a NUL byte on line %zu)", path,
                     line);
        else
            s_error (self, "%s: not a text file (bytes that are not UTF-8)",
                     path);
        free (data);
        return -1;
    }
    s_staged_t staged[S_COUNT] = {{0}};
    char *names[S_DEPTH];
    int depth = 0, lineno = 0, rc = 0;
    char *line = data;
    while (line && *line) {
        char *newline = strchr (line, '\n');
        if (newline)
            *newline = 0;
        lineno++;
        if (s_parse_line (self, line, lineno, names, &depth, staged)) {
            char reason[sizeof self->error];
            snprintf (reason, sizeof reason, "%s", self->error);
            s_error (self, "%s: %s", path, reason);
            rc = -1;
            break;
        }
        line = newline ? newline + 1 : NULL;
    }
    if (rc == 0)
        rc = s_apply_staged (self, staged, BN_CONFIG_FILE, path);
    s_staged_free (staged);
    free (data);
    return rc;
}

//  Environment variable name of a setting: BANYAN_ + upper snake case.
static void
s_env_name (const char *name, char *buffer, size_t size)
{
    snprintf (buffer, size, "BANYAN_%s", name);
    for (char *p = buffer; *p; p++)
        *p = *p == '.' ? '_' : (char)toupper ((unsigned char)*p);
}

//  Value of variable in env, or in the real environment if env is NULL.
static const char *
s_lookup_env (char **env, const char *variable)
{
    if (!env)
        return getenv (variable);
    size_t length = strlen (variable);
    for (char **entry = env; *entry; entry++)
        if (strncmp (*entry, variable, length) == 0 && (*entry)[length] == '=')
            return *entry + length + 1;
    return NULL;
}

int
bn_config_load_env (bn_config_t *self, char **env)
{
    assert (self);
    s_staged_t staged[S_COUNT] = {{0}};
    int rc = 0;
    for (int i = 0; i < S_COUNT && rc == 0; i++) {
        char variable[128];
        s_env_name (s_settings[i].name, variable, sizeof variable);
        const char *text = s_lookup_env (env, variable);
        if (!text && s_settings[i].alias) {
            snprintf (variable, sizeof variable, "%s", s_settings[i].alias);
            text = s_lookup_env (env, variable);
        }
        if (!text)
            continue;
        s_value_t check = {0};
        if (s_convert (self, &s_settings[i], text, &check)) {
            char reason[sizeof self->error];
            snprintf (reason, sizeof reason, "%s", self->error);
            s_error (self, "env %s: %s", variable, reason);
            rc = -1;
        } else {
            staged[i].text = check.text;
            staged[i].var = strdup (variable);
            if (!staged[i].var) {
                s_error (self, "out of memory");
                rc = -1;
            }
        }
    }
    if (rc == 0)
        rc = s_apply_staged (self, staged, BN_CONFIG_ENV, NULL);
    s_staged_free (staged);
    return rc;
}

//  BANYAN_* variables that are not settings but are banyan's: the
//  connection info a host passes on, what engines tell their commands,
//  a host node's key
static const char *s_other_vars[] = {"BANYAN_CONNECTION_INFO",
                                     "BANYAN_ENGINE_ID", "BANYAN_ENGINE_UUID",
                                     "BANYAN_SESSION_KEY", "BANYAN_GNUPLOT"};

extern char **environ;

int
bn_config_unknown_env (char **env, bn_config_env_fn *fn, void *arg)
{
    assert (fn);
    int count = 0;
    for (char **entry = env ? env : environ; entry && *entry; entry++) {
        const char *equals = strchr (*entry, '=');
        size_t length = equals ? (size_t)(equals - *entry) : strlen (*entry);
        char variable[128];
        if (strncmp (*entry, "BANYAN_", 7) != 0 || length >= sizeof variable)
            continue;
        memcpy (variable, *entry, length);
        variable[length] = 0;
        bool known = false;
        const char *nearest = NULL;
        size_t best = 3;
        for (size_t i = 0;
             !known && i < sizeof s_other_vars / sizeof s_other_vars[0]; i++)
            known = strcmp (variable, s_other_vars[i]) == 0;
        for (int i = 0; !known && i < S_COUNT; i++) {
            char name[128];
            s_env_name (s_settings[i].name, name, sizeof name);
            known = strcmp (variable, name) == 0 ||
                    (s_settings[i].alias &&
                     strcmp (variable, s_settings[i].alias) == 0);
            size_t distance = s_distance (variable, name);
            if (distance < best) {
                best = distance;
                nearest = s_settings[i].name;
            }
        }
        if (known)
            continue;
        char suggestion[128] = "";
        if (nearest)
            s_env_name (nearest, suggestion, sizeof suggestion);
        fn (arg, variable, nearest ? suggestion : NULL);
        count++;
    }
    return count;
}

int
bn_config_set (bn_config_t *self, const char *name, const char *value,
               bn_config_source_t source)
{
    assert (self);
    assert (name);
    assert (value);
    int index = s_index (name);
    if (index < 0) {
        char hint[128];
        s_suggest (name, hint, sizeof hint);
        s_error (self, "unknown setting '%s'%s", name, hint);
        return -1;
    }
    s_value_t check = {0};
    if (s_convert (self, &s_settings[index], value, &check))
        return -1;
    free (check.text);
    if (self->values[index].source > source)
        return 0;
    char origin[160] = "";
    if (source == BN_CONFIG_ENV) {
        char variable[128];
        s_env_name (name, variable, sizeof variable);
        snprintf (origin, sizeof origin, "env %s", variable);
    }
    return s_apply (self, index, value, source, *origin ? origin : NULL);
}

//  The value of a setting the caller promises exists with this type.
static s_value_t *
s_value (bn_config_t *self, const char *name, bn_config_type_t type)
{
    assert (self);
    assert (name);
    int index = s_index (name);
    assert (index >= 0);
    assert (s_settings[index].type == type);
    return &self->values[index];
}

int
bn_config_int (bn_config_t *self, const char *name)
{
    return s_value (self, name, BN_CONFIG_INT)->as.i;
}

double
bn_config_double (bn_config_t *self, const char *name)
{
    return s_value (self, name, BN_CONFIG_DOUBLE)->as.d;
}

const char *
bn_config_str (bn_config_t *self, const char *name)
{
    return s_value (self, name, BN_CONFIG_STRING)->text;
}

bool
bn_config_bool (bn_config_t *self, const char *name)
{
    return s_value (self, name, BN_CONFIG_BOOL)->as.b;
}

int64_t
bn_config_msecs (bn_config_t *self, const char *name)
{
    return s_value (self, name, BN_CONFIG_DURATION)->as.ms;
}

bool
bn_config_ports (bn_config_t *self, const char *name, int *lowest, int *highest)
{
    assert (lowest);
    assert (highest);
    const int *range = s_value (self, name, BN_CONFIG_PORTS)->as.range;
    *lowest = range[0];
    *highest = range[1];
    return range[0] > 0;
}

int
bn_config_parse_ports (const char *text, int range[2])
{
    assert (text);
    range[0] = range[1] = 0;
    if (!*text)
        return 0;
    const char *p = text;
    long bounds[2];
    for (int i = 0; i < 2; i++) {
        if (!isdigit ((unsigned char)*p))
            return -1;
        char *end;
        errno = 0;
        bounds[i] = strtol (p, &end, 10);
        if (errno || bounds[i] < 1 || bounds[i] > 65535)
            return -1;
        p = end;
        if (i == 0 && *p++ != '-')
            return -1;
    }
    if (*p || bounds[0] > bounds[1])
        return -1;
    range[0] = (int)bounds[0];
    range[1] = (int)bounds[1];
    return 0;
}

//  Text naming where the value at index came from.
static const char *
s_source_text (bn_config_t *self, int index)
{
    s_value_t *value = &self->values[index];
    if (value->origin)
        return value->origin;
    switch (value->source) {
    case BN_CONFIG_DEFAULT:
        return "default";
    case BN_CONFIG_FILE:
        return "file";
    case BN_CONFIG_ENV:
        return "env";
    case BN_CONFIG_CMDLINE:
        return "command line";
    }
    return "?";
}

const char *
bn_config_source (bn_config_t *self, const char *name)
{
    assert (self);
    assert (name);
    int index = s_index (name);
    return index < 0 ? NULL : s_source_text (self, index);
}

const char *
bn_config_error (bn_config_t *self)
{
    assert (self);
    return self->error;
}

//  The quote a string value is printed in so that the file reader reads
//  it back (and spaces show): none when it needs none, else one it does
//  not contain; a value that holds both is printed bare, which reads back
//  unless it is also empty, has a '#' or blanks at its ends, or starts
//  with a quote (none of which a config file can give it).
static char
s_quote_for (const char *text)
{
    size_t length = strlen (text);
    if (length && !strpbrk (text, " \t#") && *text != '"' && *text != '\'' &&
        !isspace ((unsigned char)text[length - 1]))
        return 0;
    return !strchr (text, '"') ? '"' : !strchr (text, '\'') ? '\'' : 0;
}

void
bn_config_print (bn_config_t *self, FILE *file)
{
    assert (self);
    assert (file);
    for (int i = 0; i < S_COUNT; i++) {
        const char *text = self->values[i].text;
        int width = fprintf (file, "%s = ", s_settings[i].name);
        char quote =
            s_settings[i].type == BN_CONFIG_STRING ? s_quote_for (text) : 0;
        if (quote)
            width += fprintf (file, "%c%s%c", quote, text, quote);
        else
            width += fprintf (file, "%s", text);
        fprintf (file, "%*s# %s\n", width < 44 ? 44 - width : 1, "",
                 s_source_text (self, i));
    }
}

char *
bn_config_profile_dir (bn_config_t *self, const char *profile_name)
{
    assert (self);
    const char *root = bn_config_str (self, "profile.dir_root");
    const char *name =
        profile_name ? profile_name : bn_config_str (self, "profile.name");
    const char *home = "";
    if (root[0] == '~' && (root[1] == '/' || root[1] == 0)) {
        home = getenv ("HOME");
        if (!home || !*home) {
            struct passwd *entry = getpwuid (getuid ());
            home = entry ? entry->pw_dir : NULL;
        }
        if (!home)
            return NULL;
        root++;
    }
    //  "/srv/banyan/" and "/srv/banyan" name the same folder
    int length = (int)strlen (root);
    while (length > 1 && root[length - 1] == '/')
        length--;
    size_t size = strlen (home) + length + strlen (name) + 16;
    char *dir = malloc (size);
    if (dir)
        snprintf (dir, size, "%s%.*s/profile_%s", home, length, root, name);
    return dir;
}

bool
bn_config_known (const char *name)
{
    assert (name);
    return s_index (name) >= 0;
}

int
bn_config_count (void)
{
    return S_COUNT;
}

const char *
bn_config_name (int index)
{
    return index >= 0 && index < S_COUNT ? s_settings[index].name : NULL;
}

bn_config_type_t
bn_config_type (const char *name)
{
    int index = s_index (name);
    assert (index >= 0);
    return s_settings[index].type;
}

const char *
bn_config_default (const char *name)
{
    int index = s_index (name);
    return index < 0 ? NULL : s_settings[index].fallback;
}

const char *
bn_config_doc (const char *name)
{
    int index = s_index (name);
    return index < 0 ? NULL : s_settings[index].doc;
}

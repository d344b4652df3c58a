/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cliopts: options common to every banyan command.  */
#include "bn_cliopts.h"
#include "bn_clihelp.h"
#include "bn_connfile.h"
#include "bn_log.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  Ids of the common long options, above any character a command uses
enum {
    S_OPT_PROFILE = 1000,
    S_OPT_PROFILE_DIR,
    S_OPT_FILE,
    S_OPT_CLUSTER_ID,
    S_OPT_CONFIG,
    S_OPT_TIMEOUT,
    S_OPT_LOG_LEVEL,
    S_OPT_VERSION
};

static const struct option s_cluster_options[] = {
    {"profile", required_argument, NULL, S_OPT_PROFILE},
    {"profile-dir", required_argument, NULL, S_OPT_PROFILE_DIR},
    {"cluster-id", required_argument, NULL, S_OPT_CLUSTER_ID},
    {"config", required_argument, NULL, S_OPT_CONFIG},
    {"timeout", required_argument, NULL, S_OPT_TIMEOUT},
    {"log-level", required_argument, NULL, S_OPT_LOG_LEVEL},
};

static const struct option s_file_option = {"file", required_argument, NULL,
                                            S_OPT_FILE};

static const struct option s_always_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, S_OPT_VERSION},
};

struct _bn_cliopts_t {
    char *command;
    int flags;
    bn_config_t *config;
    char *profile_dir;        //  Absolute
    char *profile_dir_option; //  --profile-dir as given, or NULL
    char *client_file;
    char *file_option; //  --file as given, or NULL
    char *config_file; //  --config, or NULL
    char *loaded_file; //  The config file loaded, or NULL
    bool profile_given;
    bool timeout_given;
    double timeout;
    char *selection;
};

bn_cliopts_t *
bn_cliopts_new (const char *command, int flags)
{
    assert (command);
    bn_cliopts_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->command = strdup (command);
    self->config = bn_config_new ();
    self->flags = flags;
    if (!self->command || !self->config)
        bn_cliopts_destroy (&self);
    return self;
}

void
bn_cliopts_destroy (bn_cliopts_t **self_p)
{
    assert (self_p);
    bn_cliopts_t *self = *self_p;
    if (self) {
        free (self->command);
        bn_config_destroy (&self->config);
        free (self->profile_dir);
        free (self->profile_dir_option);
        free (self->client_file);
        free (self->file_option);
        free (self->config_file);
        free (self->loaded_file);
        free (self->selection);
        free (self);
        *self_p = NULL;
    }
}

static void
s_vmessage (bn_cliopts_t *self, const char *format, va_list args)
{
    fflush (stdout);
    fprintf (stderr, "banyan%s%s: ", *self->command ? " " : "", self->command);
    vfprintf (stderr, format, args);
    fputc ('\n', stderr);
}

void
bn_cliopts_usage_error (bn_cliopts_t *self, const char *format, ...)
{
    assert (self);
    va_list args;
    va_start (args, format);
    s_vmessage (self, format, args);
    va_end (args);
    fprintf (stderr, "Try 'banyan%s%s --help' for more information.\n",
             *self->command ? " " : "", self->command);
}

void
bn_cliopts_error (bn_cliopts_t *self, const char *format, ...)
{
    assert (self);
    va_list args;
    va_start (args, format);
    s_vmessage (self, format, args);
    va_end (args);
}

int
bn_cliopts_int (bn_cliopts_t *self, const char *name, const char *text,
                long min, long max, long *value)
{
    assert (self);
    assert (text);
    char *end;
    errno = 0;
    long number = strtol (text, &end, 10);
    if (errno || end == text || *end || number < min || number > max) {
        if (max == LONG_MAX)
            bn_cliopts_usage_error (self, "%s: '%s' is not an integer >= %ld",
                                    name, text, min);
        else
            bn_cliopts_usage_error (self,
                                    "%s: '%s' is not an integer in %ld..%ld",
                                    name, text, min, max);
        return -1;
    }
    *value = number;
    return 0;
}

int
bn_cliopts_seconds (bn_cliopts_t *self, const char *name, const char *text,
                    double *value)
{
    assert (self);
    assert (text);
    int64_t msecs;
    if (bn_config_parse_duration (text, 1000, &msecs) != 0) {
        bn_cliopts_usage_error (self,
                                "%s: '%s' is not a duration (say 10s or "
                                "500ms; a bare number is seconds)",
                                name, text);
        return -1;
    }
    *value = msecs / 1000.0;
    return 0;
}

int
bn_cliopts_set (bn_cliopts_t *self, const char *option, const char *name,
                const char *value)
{
    assert (self);
    if (bn_config_set (self->config, name, value, BN_CONFIG_CMDLINE) != 0) {
        bn_cliopts_usage_error (self, "%s: %s", option,
                                bn_config_error (self->config));
        return -1;
    }
    return 0;
}

static int
s_replace (char **field, const char *value)
{
    char *copy = strdup (value);
    if (!copy)
        return -1;
    free (*field);
    *field = copy;
    return 0;
}

//  A path made absolute against the current folder, malloc'd.
static char *
s_absolute (const char *path)
{
    if (path[0] == '/')
        return strdup (path);
    char cwd[PATH_MAX];
    if (!getcwd (cwd, sizeof cwd))
        return strdup (path);
    if (strcmp (path, ".") == 0)
        return strdup (cwd);
    if (strncmp (path, "./", 2) == 0)
        path += 2;
    return zsys_sprintf ("%s/%s", cwd, path);
}

static int
s_common_option (bn_cliopts_t *self, int opt, const char *arg)
{
    switch (opt) {
    case S_OPT_PROFILE:
        if (!*arg || strchr (arg, '/')) {
            bn_cliopts_usage_error (self,
                                    "--profile: '%s' is not a profile "
                                    "name (use --profile-dir for a "
                                    "folder)",
                                    arg);
            return -1;
        }
        self->profile_given = true;
        return bn_cliopts_set (self, "--profile", "profile.name", arg);
    case S_OPT_PROFILE_DIR:
        if (!*arg) {
            bn_cliopts_usage_error (self, "--profile-dir: empty folder name");
            return -1;
        }
        self->profile_given = true;
        return s_replace (&self->profile_dir_option, arg);
    case S_OPT_FILE:
        if (!*arg) {
            bn_cliopts_usage_error (self, "--file: empty file name");
            return -1;
        }
        return s_replace (&self->file_option, arg);
    case S_OPT_CLUSTER_ID:
        if (strchr (arg, '/')) {
            bn_cliopts_usage_error (self, "--cluster-id: '%s' holds a '/'",
                                    arg);
            return -1;
        }
        return bn_cliopts_set (self, "--cluster-id", "cluster.id", arg);
    case S_OPT_CONFIG:
        return s_replace (&self->config_file, arg);
    case S_OPT_TIMEOUT:
        self->timeout_given = true;
        if (bn_cliopts_seconds (self, "--timeout", arg, &self->timeout) != 0)
            return -1;
        return bn_cliopts_set (self, "--timeout", "client.timeout", arg);
    case S_OPT_LOG_LEVEL:
        return bn_cliopts_set (self, "--log-level", "log.level", arg);
    default:
        assert (false);
        return -1;
    }
}

static void
s_unknown_variable (void *arg, const char *variable, const char *nearest)
{
    bn_cliopts_t *self = arg;
    if (nearest)
        bn_cliopts_error (self,
                          "warning: %s is not a banyan setting (did you mean "
                          "%s?); ignored",
                          variable, nearest);
    else
        bn_cliopts_error (self,
                          "warning: %s is not a banyan setting; ignored "
                          "('banyan config show' lists them)",
                          variable);
}

//  Load environment and config file, and work out the profile folder, the
//  client file and the hint that selects the same cluster again.
static int
s_finish (bn_cliopts_t *self)
{
    bn_config_unknown_env (NULL, s_unknown_variable, self);
    if (bn_config_load_env (self->config, NULL) != 0) {
        bn_cliopts_usage_error (self, "%s", bn_config_error (self->config));
        return -1;
    }
    if (self->profile_dir_option)
        self->profile_dir = s_absolute (self->profile_dir_option);
    else {
        char *dir = bn_config_profile_dir (self->config, NULL);
        if (dir) {
            self->profile_dir = s_absolute (dir);
            free (dir);
        }
    }
    if (!self->profile_dir) {
        bn_cliopts_error (self, "cannot work out the profile folder "
                                "(is HOME set?)");
        return -1;
    }
    struct stat info;
    if (stat (self->profile_dir, &info) == 0 && !S_ISDIR (info.st_mode)) {
        bn_cliopts_error (self,
                          "cannot use the profile folder %s: it is a file, "
                          "not a folder",
                          self->profile_dir);
        return -1;
    }
    char *config_file =
        self->config_file ? strdup (self->config_file)
                          : zsys_sprintf ("%s/banyan.conf", self->profile_dir);
    if (config_file && (self->config_file || access (config_file, F_OK) == 0)) {
        if (bn_config_load_file (self->config, config_file) != 0) {
            bn_cliopts_usage_error (self, "%s", bn_config_error (self->config));
            free (config_file);
            return -1;
        }
        self->loaded_file = s_absolute (config_file);
    }
    free (config_file);
    int level = bn_log_level_parse (bn_config_str (self->config, "log.level"));
    if (level >= 0)
        bn_log_set_level ((bn_log_level_t)level);

    const char *cluster_id = bn_cliopts_cluster_id (self);
    self->client_file = self->file_option
                            ? s_absolute (self->file_option)
                            : bn_connfile_path (self->profile_dir, cluster_id,
                                                BN_CONNFILE_CLIENT);
    if (!self->timeout_given)
        self->timeout =
            bn_config_msecs (self->config, "client.timeout") / 1000.0;

    const char *profile = bn_config_str (self->config, "profile.name");
    char *selection;
    if (self->file_option)
        selection = zsys_sprintf (" --file %s", self->client_file);
    else if (self->profile_dir_option)
        selection = zsys_sprintf (" --profile-dir %s", self->profile_dir);
    else if (strcmp (profile, "default") != 0)
        selection = zsys_sprintf (" --profile %s", profile);
    else
        selection = strdup ("");
    if (selection && *cluster_id && !self->file_option) {
        char *longer =
            zsys_sprintf ("%s --cluster-id %s", selection, cluster_id);
        free (selection);
        selection = longer;
    }
    self->selection = selection;
    return self->client_file && self->selection ? 0 : -1;
}

int
bn_cliopts_parse (bn_cliopts_t *self, int argc, char **argv,
                  const char *shortopts, const struct option *longopts,
                  bn_cliopts_fn *fn, void *data)
{
    assert (self);
    size_t own = 0;
    while (longopts && longopts[own].name)
        own++;
    size_t total = own +
                   sizeof s_cluster_options / sizeof s_cluster_options[0] + 1 +
                   sizeof s_always_options / sizeof s_always_options[0] + 1;
    struct option *options = calloc (total, sizeof *options);
    //  "+": stop at the first operand; ":": report a missing argument
    char *optstring =
        zsys_sprintf ("%s:%sh", self->flags & BN_CLIOPTS_PERMUTE ? "" : "+",
                      shortopts ? shortopts : "");
    if (!options || !optstring) {
        free (options);
        free (optstring);
        return BN_CLIOPTS_USAGE;
    }
    size_t count = 0;
    for (size_t index = 0; index < own; index++)
        options[count++] = longopts[index];
    if (self->flags & BN_CLIOPTS_CLUSTER)
        for (size_t index = 0;
             index < sizeof s_cluster_options / sizeof s_cluster_options[0];
             index++)
            options[count++] = s_cluster_options[index];
    if (self->flags & BN_CLIOPTS_FILE)
        options[count++] = s_file_option;
    for (size_t index = 0;
         index < sizeof s_always_options / sizeof s_always_options[0]; index++)
        options[count++] = s_always_options[index];

    int result = 0;
    opterr = 0;
    optind = 0; //  GNU getopt: start afresh
    int opt;
    while (result == 0 &&
           (opt = getopt_long (argc, argv, optstring, options, NULL)) != -1) {
        const char *word = argv[optind - 1];
        if (opt == 'h') {
            bn_clihelp_print (self->command, stdout);
            result = BN_CLIOPTS_DONE;
        } else if (opt == S_OPT_VERSION) {
            bn_clihelp_version (stdout);
            result = BN_CLIOPTS_DONE;
        } else if (opt == '?') {
            if (optopt)
                bn_cliopts_usage_error (self, "invalid option -- '%c'", optopt);
            else
                bn_cliopts_usage_error (self, "unrecognized option '%s'", word);
            result = BN_CLIOPTS_USAGE;
        } else if (opt == ':') {
            if (optopt && optopt < 256)
                bn_cliopts_usage_error (
                    self, "option requires an argument -- '%c'", optopt);
            else
                bn_cliopts_usage_error (
                    self, "option '%s' requires an argument", word);
            result = BN_CLIOPTS_USAGE;
        } else if (opt >= S_OPT_PROFILE && opt <= S_OPT_LOG_LEVEL) {
            if (s_common_option (self, opt, optarg) != 0)
                result = BN_CLIOPTS_USAGE;
        } else if (!fn || fn (self, opt, optarg, data) != 0)
            result = BN_CLIOPTS_USAGE;
    }
    free (options);
    free (optstring);
    if (result != 0)
        return result;
    if (self->file_option && self->profile_dir_option) {
        bn_cliopts_usage_error (self, "--file and --profile-dir exclude each "
                                      "other");
        return BN_CLIOPTS_USAGE;
    }
    if (s_finish (self) != 0)
        return BN_CLIOPTS_USAGE;
    return optind;
}

bn_config_t *
bn_cliopts_config (bn_cliopts_t *self)
{
    assert (self);
    return self->config;
}

const char *
bn_cliopts_profile_dir (bn_cliopts_t *self)
{
    assert (self);
    return self->profile_dir;
}

const char *
bn_cliopts_cluster_id (bn_cliopts_t *self)
{
    assert (self);
    return bn_config_str (self->config, "cluster.id");
}

const char *
bn_cliopts_client_file (bn_cliopts_t *self)
{
    assert (self);
    return self->client_file;
}

bool
bn_cliopts_file_given (bn_cliopts_t *self)
{
    assert (self);
    return self->file_option != NULL;
}

bool
bn_cliopts_profile_given (bn_cliopts_t *self)
{
    assert (self);
    return self->profile_given;
}

const char *
bn_cliopts_config_file (bn_cliopts_t *self)
{
    assert (self);
    return self->loaded_file;
}

double
bn_cliopts_timeout (bn_cliopts_t *self)
{
    assert (self);
    return self->timeout;
}

bool
bn_cliopts_timeout_given (bn_cliopts_t *self)
{
    assert (self);
    return self->timeout_given;
}

const char *
bn_cliopts_selection (bn_cliopts_t *self)
{
    assert (self);
    return self->selection ? self->selection : "";
}

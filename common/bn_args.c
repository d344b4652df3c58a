/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_args: command-line pieces the daemons' mains share.  */
#include "bn_args.h"
#include "bn_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
bn_args_usage_error (const char *program, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    fprintf (stderr, "%s: ", program);
    vfprintf (stderr, format, args);
    va_end (args);
    fprintf (stderr, "\nTry '%s --help' for more information.\n", program);
    return 2;
}

const char *
bn_args_flag_value (int argc, char **argv, int *index, const char *flag,
                    bool *missing)
{
    const char *arg = argv[*index];
    size_t len = strlen (flag);
    if (strncmp (arg, flag, len) != 0)
        return NULL;
    if (arg[len] == '=')
        return arg + len + 1;
    if (arg[len] != 0)
        return NULL;
    if (*index + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*index];
}

int
bn_args_number (const char *text, int max)
{
    char *end;
    errno = 0;
    long value = strtol (text, &end, 10);
    if (errno || end == text || *end || value < 0 || value > max)
        return -1;
    return (int)value;
}

int
bn_args_setting (const char *program, int argc, char **argv, int *index,
                 const bn_args_setting_t *table, size_t count,
                 bn_config_t *config)
{
    bool missing = false;
    for (size_t i = 0; i < count; i++) {
        const char *value =
            bn_args_flag_value (argc, argv, index, table[i].flag, &missing);
        if (missing ||
            (value && !*value && *bn_config_default (table[i].setting)))
            return bn_args_usage_error (program, "option '%s' needs a value",
                                        table[i].flag);
        if (value && bn_config_set (config, table[i].setting, value,
                                    BN_CONFIG_CMDLINE) != 0)
            return bn_args_usage_error (program, "%s",
                                        bn_config_error (config));
        if (value)
            return 1;
    }
    return 0;
}

int
bn_args_load (const char *program, bn_config_t *config, const char *config_file)
{
    if ((config_file && bn_config_load_file (config, config_file) != 0) ||
        bn_config_load_env (config, NULL) != 0)
        return bn_args_usage_error (program, "%s", bn_config_error (config));
    return 0;
}

void
bn_args_version (const char *program)
{
    printf ("%s %s (IPython Parallel 7.1.0 wire protocol)\n", program,
            BANYAN_VERSION);
}

int
bn_args_log (bn_config_t *config, const char *ident)
{
    bn_log_set_default_ident (ident);
    int level = bn_log_level_parse (bn_config_str (config, "log.level"));
    if (level >= 0)
        bn_log_set_level ((bn_log_level_t)level);
    const char *file = bn_config_str (config, "log.file");
    return *file ? bn_log_set_file (file) : 0;
}

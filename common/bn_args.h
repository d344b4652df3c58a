/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_args: the command-line handling the daemons' mains share
    (banyan-controller, banyan-scheduler, banyan-engine): usage errors,
    flag values, the settings flags set over the built-in defaults, the
    config file and the environment (bn_config ranks them), and logging
    as the settings say.  */
#ifndef BN_ARGS_H_INCLUDED
#define BN_ARGS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "bn_config.h"

//  Print "program: message" and a pointer to --help on stderr; returns
//  the usage-error exit status, 2.
int bn_args_usage_error (const char *program, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  The value of flag when argv[*index] is "--flag=value" or "--flag value"
//  (then *index moves past the value); NULL when argv[*index] is not flag,
//  or when its value is missing (then *missing is set).
const char *bn_args_flag_value (int argc, char **argv, int *index,
                                const char *flag, bool *missing);

//  A whole number from 0 to max written in text; -1 if text is not one.
int bn_args_number (const char *text, int max);

//  A flag whose value is a setting, as --ip sets controller.ip.
typedef struct {
    const char *flag;    //  "--ip"
    const char *setting; //  "controller.ip"
} bn_args_setting_t;

//  When argv[*index] is one of the count flags of table, set its setting
//  in config as from the command line and move *index past the value.
//  Returns 1 when it set one, 0 when argv[*index] is none of them, or the
//  usage error's exit status, 2 (printed for program), when the value is
//  missing or bad. An empty value is missing unless the setting's
//  built-in default is empty too (cluster.id, log.file).
int bn_args_setting (const char *program, int argc, char **argv, int *index,
                     const bn_args_setting_t *table, size_t count,
                     bn_config_t *config);

//  Load what ranks below the command line into config: config_file
//  (unless NULL), then the BANYAN_* environment. Returns 0, or the usage
//  error's exit status (printed for program).
int bn_args_load (const char *program, bn_config_t *config,
                  const char *config_file);

//  Print "program <version> (IPython Parallel 7.1.0 wire protocol)".
void bn_args_version (const char *program);

//  Log as config says (log.level, log.file), lines tagged ident. Returns
//  0, or -1 when the log file cannot be opened (lines go to stderr).
int bn_args_log (bn_config_t *config, const char *ident);

#endif

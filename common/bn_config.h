/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_config: banyan settings from defaults, config file, BANYAN_* environment
    and command line, each value remembering where it came from.  */
#ifndef BN_CONFIG_H_INCLUDED
#define BN_CONFIG_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct _bn_config_t bn_config_t;

//  Where a value came from, in increasing precedence: a value from one
//  source never replaces a value from a later one, whatever the order of
//  the calls that load them.
typedef enum {
    BN_CONFIG_DEFAULT = 0,
    BN_CONFIG_FILE = 1,
    BN_CONFIG_ENV = 2,
    BN_CONFIG_CMDLINE = 3
} bn_config_source_t;

typedef enum {
    BN_CONFIG_INT,
    BN_CONFIG_DOUBLE,
    BN_CONFIG_STRING,
    BN_CONFIG_BOOL,
    BN_CONFIG_DURATION, //  "3s", "200ms", "1.5s", "2m", "1h"; a bare number
                        //  is in the setting's own unit (ms or s)
    BN_CONFIG_PORTS     //  a range of TCP ports "LO-HI", or "" for any
} bn_config_type_t;

//  Create a configuration holding the built-in defaults; NULL if out of
//  memory.
bn_config_t *bn_config_new (void);

//  Destroy a configuration and NULL the caller's reference; NULL-safe.
void bn_config_destroy (bn_config_t **self_p);

//  Load a config file in ZPL, the format czmq's zconfig reads:
//      controller
//          ip = 127.0.0.1      # comment
//  (a setting may also be written on one line as "controller.ip = ...").
//  Returns 0, or -1 if the file cannot be read, is not text (a NUL byte,
//  bytes that are not UTF-8), is not valid ZPL, names an
//  unknown setting or holds a bad value; bn_config_error then names the
//  file, line and problem, and no value from the file is applied.
int bn_config_load_file (bn_config_t *self, const char *path);

//  Apply BANYAN_* variables from env (a NULL-terminated "NAME=value" array
//  like environ), or from the process environment when env is NULL.
//  controller.ip is read from BANYAN_CONTROLLER_IP; a few settings also
//  have a short alias (BANYAN_DIR for profile.dir_root, BANYAN_PROFILE for
//  profile.name) which the full name overrides. Unknown BANYAN_* variables
//  are ignored. Returns 0, or -1 on a bad value, and then applies nothing.
int bn_config_load_env (bn_config_t *self, char **env);

//  Called with a BANYAN_* variable that is neither a setting nor one that
//  banyan's programs read otherwise, and the setting's variable it is
//  nearest to (a typo), or NULL.
typedef void (bn_config_env_fn) (void *arg, const char *variable,
                                 const char *nearest);

//  Call fn for each unknown BANYAN_* variable of env (as
//  bn_config_load_env's), or of the process environment when env is NULL.
//  Returns how many there are.
int bn_config_unknown_env (char **env, bn_config_env_fn *fn, void *arg);

//  Set a setting from its text form, e.g. ("engine.count", "4",
//  BN_CONFIG_CMDLINE) for a command-line flag. Returns 0, or -1 if the
//  name is unknown or the value does not fit its type or range (see
//  bn_config_error). A value from a lower-precedence source than the
//  current one is validated but not applied.
int bn_config_set (bn_config_t *self, const char *name, const char *value,
                   bn_config_source_t source);

//  Value of an integer setting; the name must be a known int setting.
int bn_config_int (bn_config_t *self, const char *name);

//  Value of a double setting; the name must be a known double setting.
double bn_config_double (bn_config_t *self, const char *name);

//  Value of a string setting, owned by the configuration and valid until
//  the setting changes; the name must be a known string setting.
const char *bn_config_str (bn_config_t *self, const char *name);

//  Value of a bool setting; the name must be a known bool setting.
bool bn_config_bool (bn_config_t *self, const char *name);

//  Value of a duration setting in milliseconds; the name must be a known
//  duration setting.
int64_t bn_config_msecs (bn_config_t *self, const char *name);

//  Value of a port range setting: true with its bounds in *lowest and
//  *highest, or false (both 0) when it is empty; the name must be a known
//  port range setting.
bool bn_config_ports (bn_config_t *self, const char *name, int *lowest,
                      int *highest);

//  Read a port range "LO-HI" (1 <= LO <= HI <= 65535) into range, or ""
//  as {0, 0}. Returns -1 if text is neither.
int bn_config_parse_ports (const char *text, int range[2]);

//  Read a duration: a non-negative number with a unit, ms, s, m or h
//  ("3s", "200ms", "1.5s", "2m"), or without one in bare_unit_ms
//  milliseconds (1 or 1000 for the settings that took plain numbers).
//  Returns 0 with the whole number of milliseconds in *msecs, or -1 if
//  text is not a duration or not a whole number of milliseconds.
int bn_config_parse_duration (const char *text, int64_t bare_unit_ms,
                              int64_t *msecs);

//  Write msecs as the shortest duration text that reads back the same
//  ("3s", "1.5s", "250ms", "2m", "0"); returns buffer.
char *bn_config_format_duration (int64_t msecs, char *buffer, size_t size);

//  Where the current value came from: "default", "file <path>",
//  "env BANYAN_X" or "command line"; NULL if the name is unknown.
const char *bn_config_source (bn_config_t *self, const char *name);

//  Text of the last error, or "" if there was none.
const char *bn_config_error (bn_config_t *self);

//  Print every setting with its effective value and source, one a line.
void bn_config_print (bn_config_t *self, FILE *file);

//  Profile directory "<profile.dir_root>/profile_<name>" with a leading
//  "~" expanded from $HOME, malloc'd for the caller to free; name NULL
//  means profile.name. Returns NULL if out of memory or "~" cannot be
//  expanded.
char *bn_config_profile_dir (bn_config_t *self, const char *profile_name);

//  True if name is a known setting.
bool bn_config_known (const char *name);

//  Number of known settings; with bn_config_name they list the table.
int bn_config_count (void);

//  Name of the index'th known setting (0 <= index < bn_config_count),
//  or NULL if out of range.
const char *bn_config_name (int index);

//  Type of a known setting; the name must be known.
bn_config_type_t bn_config_type (const char *name);

//  Built-in default of a known setting in its text form; NULL if unknown.
const char *bn_config_default (const char *name);

//  One-line description of a known setting; NULL if unknown.
const char *bn_config_doc (const char *name);

#endif

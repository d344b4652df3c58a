/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cliopts: command-line parsing shared by every banyan command: the
    options that find a cluster (--profile, --profile-dir, --file,
    --cluster-id), --config, --timeout, --log-level, --help and --version,
    usage errors, and the configuration they select.  */
#ifndef BN_CLIOPTS_H_INCLUDED
#define BN_CLIOPTS_H_INCLUDED

#include "bn_config.h"

#include <getopt.h>
#include <stdbool.h>

typedef struct _bn_cliopts_t bn_cliopts_t;

//  What a command takes besides its own options.
#define BN_CLIOPTS_CLUSTER 1 //  --profile, --profile-dir, --cluster-id...
#define BN_CLIOPTS_FILE 2    //  --file CLIENT_JSON
#define BN_CLIOPTS_PERMUTE                                                     \
    4 //  Options may follow operands (not for
      //  commands whose operands may start with
      //  '-', such as px's command and apply's
      //  arguments)

//  bn_cliopts_parse results other than an operand index.
#define BN_CLIOPTS_DONE (-1)  //  --help or --version was printed: exit 0
#define BN_CLIOPTS_USAGE (-2) //  A usage error was printed: exit 2

//  Exit status of a usage error.
#define BN_EXIT_USAGE 2

//  Handles one of the command's own options (opt as getopt_long returns
//  it, arg its argument or NULL). Returns 0, or -1 after reporting the
//  problem with bn_cliopts_usage_error.
typedef int (bn_cliopts_fn) (bn_cliopts_t *self, int opt, const char *arg,
                             void *data);

//  Create a parser for command ("px", "cluster start") taking flags.
//  Returns NULL if out of memory.
bn_cliopts_t *bn_cliopts_new (const char *command, int flags);

//  Destroy a parser and NULL the caller's reference; NULL-safe.
void bn_cliopts_destroy (bn_cliopts_t **self_p);

//  Parse argv[1..argc-1]: options stop at the first operand (so that a
//  command's own options, "px ls -l", stay its own), unless the command
//  was created with BN_CLIOPTS_PERMUTE; then operands are moved to the
//  end of argv, as GNU getopt does. shortopts and
//  longopts (terminated by a zeroed entry, may be NULL) are the command's
//  own options, passed to fn. Then load the configuration: environment,
//  config file, and the profile it all selects. Returns the index of the
//  first operand, BN_CLIOPTS_DONE or BN_CLIOPTS_USAGE.
int bn_cliopts_parse (bn_cliopts_t *self, int argc, char **argv,
                      const char *shortopts, const struct option *longopts,
                      bn_cliopts_fn *fn, void *data);

//  Print "banyan <command>: <message>" and the hint to --help to stderr.
void bn_cliopts_usage_error (bn_cliopts_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Print "banyan <command>: <message>" to stderr.
void bn_cliopts_error (bn_cliopts_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  Parse text as an integer in min..max for option name; returns 0, or -1
//  after a usage error.
int bn_cliopts_int (bn_cliopts_t *self, const char *name, const char *text,
                    long min, long max, long *value);

//  Parse text as a duration ("10s", "500ms", "1.5s"; a bare number is
//  seconds) into seconds for option name; returns 0, or
//  -1 after a usage error.
int bn_cliopts_seconds (bn_cliopts_t *self, const char *name, const char *text,
                        double *value);

//  Set a setting from the command line, e.g. ("controller.depth", "2").
//  Returns 0, or -1 after a usage error naming option.
int bn_cliopts_set (bn_cliopts_t *self, const char *option, const char *name,
                    const char *value);

//  The effective configuration, owned by the parser.
bn_config_t *bn_cliopts_config (bn_cliopts_t *self);

//  Absolute profile folder: --profile-dir, or the configured profile's.
const char *bn_cliopts_profile_dir (bn_cliopts_t *self);

//  Cluster id ("" for none).
const char *bn_cliopts_cluster_id (bn_cliopts_t *self);

//  Client connection file: --file, or the profile's for the cluster id.
const char *bn_cliopts_client_file (bn_cliopts_t *self);

//  True if --file was given.
bool bn_cliopts_file_given (bn_cliopts_t *self);

//  True if --profile or --profile-dir was given.
bool bn_cliopts_profile_given (bn_cliopts_t *self);

//  The config file that was loaded (--config, or the profile's
//  banyan.conf), or NULL if none was.
const char *bn_cliopts_config_file (bn_cliopts_t *self);

//  Seconds to wait: --timeout, else client.timeout.
double bn_cliopts_timeout (bn_cliopts_t *self);

//  True if --timeout was given.
bool bn_cliopts_timeout_given (bn_cliopts_t *self);

//  Options that select the same cluster again, for hints printed to the
//  user: "" or e.g. " --profile-dir /tmp/p --cluster-id a".
const char *bn_cliopts_selection (bn_cliopts_t *self);

#endif

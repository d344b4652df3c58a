/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  banyan: the command-line tool; finds the subcommand and runs it.  */
#include "bn_clihelp.h"
#include "bn_cliopts.h"
#include "bn_cmd.h"
#include "bn_log.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run) (int argc, char **argv);
} s_command_t;

static const s_command_t s_commands[] = {
    {"cluster", bn_cmd_cluster}, {"engines", bn_cmd_engines},
    {"px", bn_cmd_px},           {"apply", bn_cmd_apply},
    {"push", bn_cmd_push},       {"pull", bn_cmd_pull},
    {"status", bn_cmd_status},   {"config", bn_cmd_config},
    {"history", bn_cmd_history}, {"result", bn_cmd_result},
    {"purge", bn_cmd_purge},     {"stats", bn_cmd_stats},
};

int
main (int argc, char **argv)
{
    bn_log_set_default_ident ("banyan");
    const char *name = argc > 1 ? argv[1] : NULL;
    if (!name) {
        bn_clihelp_print (NULL, stderr);
        return BN_EXIT_USAGE;
    }
    if (strcmp (name, "-h") == 0 || strcmp (name, "--help") == 0 ||
        strcmp (name, "help") == 0) {
        //  "banyan help px" is "banyan px --help"
        if (argc > 2 && bn_clihelp_print (argv[2], stdout) == 0)
            return BN_EXIT_OK;
        bn_clihelp_print (NULL, stdout);
        return BN_EXIT_OK;
    }
    if (strcmp (name, "--version") == 0) {
        bn_clihelp_version (stdout);
        return BN_EXIT_OK;
    }
    for (size_t index = 0; index < sizeof s_commands / sizeof s_commands[0];
         index++)
        if (strcmp (name, s_commands[index].name) == 0)
            return s_commands[index].run (argc - 1, argv + 1);
    fprintf (stderr,
             "banyan: unknown command '%s'\n"
             "Try 'banyan --help' for more information.\n",
             name);
    return BN_EXIT_USAGE;
}

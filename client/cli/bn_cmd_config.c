/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_config: banyan config show.  */
#include "bn_clihelp.h"
#include "bn_cliopts.h"
#include "bn_cmd.h"
#include "bn_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
bn_cmd_config (int argc, char **argv)
{
    bn_cliopts_t *opts =
        bn_cliopts_new ("config", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    int first = bn_cliopts_parse (opts, argc, argv, "", NULL, NULL, NULL);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0) {
        if (first >= argc)
            bn_cliopts_usage_error (opts, "missing command: 'show'");
        else if (strcmp (argv[first], "show") != 0)
            bn_cliopts_usage_error (opts, "unknown command '%s'", argv[first]);
        else if (first + 1 < argc)
            bn_cliopts_usage_error (opts, "unexpected argument '%s'",
                                    argv[first + 1]);
        else {
            printf ("# profile folder: %s\n", bn_cliopts_profile_dir (opts));
            printf ("# connection file: %s\n", bn_cliopts_client_file (opts));
            char *defaults = bn_path_defaults ();
            if (defaults)
                printf ("# every setting, annotated: %s\n", defaults);
            free (defaults);
            bn_config_print (bn_cliopts_config (opts), stdout);
            status = BN_EXIT_OK;
        }
    }
    bn_cliopts_destroy (&opts);
    return status;
}

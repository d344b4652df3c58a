/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_stats: banyan stats [ACTOR], the counters every actor of the
    controller keeps, as a table or as JSON.  */
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_clistats.h"
#include "bn_cmd.h"

#include <stdio.h>
#include <stdlib.h>

static int
s_stats_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    if (opt != 'j')
        return -1;
    *(bool *)data = true;
    return 0;
}

int
bn_cmd_stats (int argc, char **argv)
{
    bn_cliopts_t *opts = bn_cliopts_new (
        "stats", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | BN_CLIOPTS_PERMUTE);
    if (!opts)
        return BN_EXIT_FAILURE;
    bool json = false;
    static const struct option options[] = {{"json", no_argument, NULL, 'j'},
                                            {NULL, 0, NULL, 0}};
    int first =
        bn_cliopts_parse (opts, argc, argv, "", options, s_stats_option, &json);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0 && argc - first > 1) {
        bn_cliopts_usage_error (opts, "unexpected argument '%s'",
                                argv[first + 1]);
        first = BN_CLIOPTS_USAGE;
    }
    if (first < 0) {
        bn_cliopts_destroy (&opts);
        return status;
    }
    const char *actor = first < argc ? argv[first] : NULL;
    bn_client_t *client = bn_cliclient_connect (opts, &status);
    if (!client) {
        bn_cliopts_destroy (&opts);
        return status;
    }
    char *text = NULL;
    int rc = bn_client_stats (client, bn_cliopts_timeout (opts), &text);
    bn_client_destroy (&client);
    bn_clistats_t *stats = rc == 0 ? bn_clistats_new (text) : NULL;
    free (text);
    if (rc == BN_ENOTSUP)
        bn_cliopts_error (opts, "not supported by this controller (only "
                                "banyan-controller tells its counters)");
    else if (rc != 0)
        bn_cliopts_error (opts, "the controller's counters: %s",
                          bn_strerror (rc));
    else if (!stats)
        bn_cliopts_error (opts, "the controller's counters: %s",
                          bn_strerror (BN_EPROTO));
    else if (actor && bn_clistats_select (stats, actor) != 0) {
        char *names = bn_clistats_actors (stats);
        bn_cliopts_error (opts, "no actor '%s' (actors: %s)", actor,
                          names ? names : "?");
        free (names);
        bn_clistats_destroy (&stats);
    }
    if (stats && json)
        status = bn_clistats_print_json (stats, stdout) == 0 ? BN_EXIT_OK
                                                             : BN_EXIT_FAILURE;
    else if (stats) {
        bn_clistats_print (stats, stdout);
        status = BN_EXIT_OK;
    } else
        status = BN_EXIT_FAILURE;
    bn_clistats_destroy (&stats);
    bn_cliopts_destroy (&opts);
    return status;
}

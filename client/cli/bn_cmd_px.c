/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_px: banyan px, a shell command on engines.

    By default the command goes through the broadcast tree as one request:
    merged at every level with a release window of S_WINDOW_MS, with the
    engines' output in their replies (bn_output), and with -b grouped at
    the tree's nodes, so that identical outputs travel up as one entry. --direct
    sends one request per engine through the mux instead. What is printed
    is the same either way. --balanced runs the command once, as a task
    the task scheduler gives to whichever engine is free. A controller
    without a broadcast scheduler (it answers NotImplementedError) gets
    the command again through the mux.  */
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_cmd.h"
#include "bn_gather.h"
#include "bn_pxout.h"

#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_WINDOW_MS 200 //  release window of the tree's merging nodes

typedef struct {
    bn_cliopts_t *opts;
    bn_idset_t *targets;
    bool gather;
    bool max_status;
    bool quiet;
    bool no_stdin; //  --no-stdin
    bn_cliclient_route_t route;
    bn_idset_t *unsupported; //  engines the broadcast port refused
    bn_gather_t *gathered;
    int largest; //  Largest exit status of the command
    bool failed; //  Some engine did not run it to its end
    double timeout;
} s_px_t;

enum { S_OPT_BROADCAST = 1, S_OPT_DIRECT, S_OPT_BALANCED, S_OPT_NO_STDIN };

static int
s_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_px_t *self = data;
    switch (opt) {
    case 't':
        return bn_cliclient_targets (opts, arg, &self->targets);
    case 'b':
        self->gather = true;
        return 0;
    case 'S':
        self->max_status = true;
        return 0;
    case 'q':
        self->quiet = true;
        return 0;
    case S_OPT_BROADCAST:
        self->route = BN_CLICLIENT_BROADCAST;
        return 0;
    case S_OPT_DIRECT:
        self->route = BN_CLICLIENT_DIRECT;
        return 0;
    case S_OPT_BALANCED:
        self->route = BN_CLICLIENT_BALANCED;
        return 0;
    case S_OPT_NO_STDIN:
        self->no_stdin = true;
        return 0;
    default:
        return -1;
    }
}

typedef struct {
    const char *command;
    bool group;
    const char *input; //  px's standard input for every engine's command
    size_t input_size;
} s_call_t;

static int
s_execute (bn_view_t *view, void *data, bn_result_t **result_p)
{
    s_call_t *call = data;
    if (bn_view_kind (view) == BN_VIEW_BROADCAST) {
        //  Every level merges; is_coalescing stays false, so that a
        //  stock 7.1.0 tree (which ignores bn_levels) forwards each
        //  engine's reply with its output instead of keeping only the
        //  last engine's content.
        bn_level_t merge = BN_LEVEL_MERGE;
        int rc = bn_view_set_levels (view, &merge, 1);
        if (rc == 0)
            rc = bn_view_set_output_in_reply (view, true);
        //  What has arrived goes up every window: engines that finished
        //  are printed while slow ones run, and Ctrl-C and --timeout
        //  name only the engines still running.
        if (rc == 0)
            rc = bn_view_set_release (view, BN_RELEASE_WINDOW, S_WINDOW_MS);
        if (rc == 0)
            rc = bn_view_set_group (view, call->group);
        if (rc != 0)
            return rc;
    }
    return bn_view_execute_input (view, call->command, call->input,
                                  call->input_size, result_p);
}

static void
s_on_item (bn_result_t *result, size_t index, bool timed_out, void *data)
{
    s_px_t *self = data;
    if (!timed_out && self->unsupported &&
        bn_result_status (result, index) == BN_ENOTSUP) {
        //  Run again through the mux once the others are printed
        bn_idset_add (self->unsupported, bn_result_engine_id (result, index));
        return;
    }
    char status[512];
    int code;
    bool failed;
    bn_cliclient_describe (result, index, timed_out, status, sizeof status,
                           &code, &failed);
    if (code > self->largest)
        self->largest = code;
    if (failed)
        self->failed = true;
    int id = bn_result_engine_id (result, index);
    //  (what a command that timed out wrote before the abort ended it)
    //  (the bytes as the command wrote them, NULs and all)
    const char *out = bn_result_stdout (result, index);
    const char *err = bn_result_stderr (result, index);
    size_t out_size = out ? bn_result_stdout_size (result, index) : 0;
    size_t err_size = err ? bn_result_stderr_size (result, index) : 0;
    out = out ? out : "";
    err = err ? err : "";
    if (self->gather) {
        if (bn_gather_add (self->gathered, id, out, out_size, err, err_size,
                           status) != 0)
            bn_cliopts_error (self->opts, "out of memory");
        return;
    }
    bn_pxout_prefixed (stdout, "stdout", id, out, out_size);
    fflush (stdout);
    bn_pxout_prefixed (stderr, "stderr", id, err, err_size);
    if (*status && !self->quiet)
        bn_pxout_prefixed (stderr, "status", id, status, strlen (status));
}

int
bn_cmd_px (int argc, char **argv)
{
    s_px_t self = {NULL};
    self.opts = bn_cliopts_new ("px", BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE);
    if (!self.opts)
        return BN_EXIT_FAILURE;
    static const struct option options[] = {
        {"targets", required_argument, NULL, 't'},
        {"gather", no_argument, NULL, 'b'},
        {"max-status", no_argument, NULL, 'S'},
        {"quiet", no_argument, NULL, 'q'},
        {"broadcast", no_argument, NULL, S_OPT_BROADCAST},
        {"direct", no_argument, NULL, S_OPT_DIRECT},
        {"balanced", no_argument, NULL, S_OPT_BALANCED},
        {"no-stdin", no_argument, NULL, S_OPT_NO_STDIN},
        {NULL, 0, NULL, 0}};
    self.route = BN_CLICLIENT_BROADCAST;
    int first = bn_cliopts_parse (self.opts, argc, argv, "t:bSq", options,
                                  s_option, &self);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first >= 0 && first >= argc) {
        bn_cliopts_usage_error (self.opts, "missing command to run");
        first = BN_CLIOPTS_USAGE;
    }
    if (first < 0)
        goto done;

    //  The command's words, joined as pdsh and clush do
    size_t length = 0;
    for (int index = first; index < argc; index++)
        length += strlen (argv[index]) + 1;
    char *command = calloc (1, length + 1);
    status = BN_EXIT_FAILURE;
    if (!command)
        goto done;
    for (int index = first; index < argc; index++) {
        if (index > first)
            strcat (command, " ");
        strcat (command, argv[index]);
    }
    //  Standard input that is open and not a terminal goes to every
    //  engine's command, as clush forwards it: read to its end first
    s_call_t call = {command, self.gather, NULL, 0};
    char *input = NULL;
    struct stat info;
    if (!self.no_stdin && fstat (STDIN_FILENO, &info) == 0 &&
        !isatty (STDIN_FILENO)) {
        input = bn_cliclient_read_file ("-", &call.input_size);
        if (!input) {
            bn_cliopts_error (self.opts,
                              "cannot read standard input: %s "
                              "(--no-stdin leaves it alone)",
                              strerror (errno));
            free (command);
            goto done;
        }
        call.input = input;
    }
    bn_client_t *client = bn_cliclient_connect (self.opts, &status);
    bn_view_t *view = NULL;
    bn_result_t *result = NULL;
    if (self.route == BN_CLICLIENT_BROADCAST)
        self.unsupported = bn_idset_new ();
    if (client &&
        bn_cliclient_call (self.opts, client, self.targets, self.route,
                           s_execute, &call, &view, &result) == 0) {
        if (self.gather)
            self.gathered = bn_gather_new ();
        double timeout = bn_cliopts_timeout_given (self.opts)
                             ? bn_cliopts_timeout (self.opts)
                             : -1;
        status = bn_cliclient_collect (self.opts, client, result, timeout,
                                       s_on_item, &self);
        if (status == BN_EXIT_OK && self.unsupported &&
            bn_idset_count (self.unsupported)) {
            bn_idset_t *again = self.unsupported;
            self.unsupported = NULL;
            bn_result_destroy (&result);
            bn_view_destroy (&view);
            if (bn_cliclient_call (self.opts, client, again,
                                   BN_CLICLIENT_DIRECT, s_execute, &call, &view,
                                   &result) == 0)
                status = bn_cliclient_collect (self.opts, client, result,
                                               timeout, s_on_item, &self);
            else
                status = BN_EXIT_FAILURE;
            bn_idset_destroy (&again);
        }
        if (status == BN_EXIT_OK) {
            if (self.gathered)
                bn_gather_print (self.gathered, stdout, self.quiet);
            if (self.max_status)
                status = self.failed ? 255 : self.largest;
            else
                status = self.failed ? BN_EXIT_FAILURE : BN_EXIT_OK;
        } else if (status != BN_EXIT_INTERRUPTED)
            status = BN_EXIT_FAILURE;
    }
    fflush (stdout);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    bn_gather_destroy (&self.gathered);
    bn_idset_destroy (&self.unsupported);
    free (command);
    free (input);
done:
    bn_idset_destroy (&self.targets);
    bn_cliopts_destroy (&self.opts);
    return status;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cmd_apply: banyan apply, push and pull: named functions and values
    on engines, results printed as Python reprs.  */
#include "bn_cliclient.h"
#include "bn_cliopts.h"
#include "bn_clivalue.h"
#include "bn_cmd.h"
#include "bn_gather.h"
#include "bn_pxout.h"

#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bn_cliopts_t *opts;
    bn_idset_t *targets;
    bool gather;
    bool quiet;
    bn_cliclient_route_t route;
    bool show_values; //  Print each engine's value (not for push)
    bn_gather_t *gathered;
    bool failed;
    size_t done; //  Items that succeeded
    //  The call
    const char *function;
    bn_value_t *args; //  apply: positional args; push: the namespace;
                      //  pull: the name
} s_apply_t;

enum { S_OPT_BROADCAST = 1, S_OPT_BALANCED };

static int
s_option (bn_cliopts_t *opts, int opt, const char *arg, void *data)
{
    s_apply_t *self = data;
    switch (opt) {
    case 't':
        return bn_cliclient_targets (opts, arg, &self->targets);
    case 'b':
        self->gather = true;
        return 0;
    case 'q':
        self->quiet = true;
        return 0;
    case S_OPT_BROADCAST:
    case S_OPT_BALANCED: {
        bn_cliclient_route_t route = opt == S_OPT_BROADCAST
                                         ? BN_CLICLIENT_BROADCAST
                                         : BN_CLICLIENT_BALANCED;
        if (self->route != BN_CLICLIENT_DIRECT && self->route != route) {
            bn_cliopts_usage_error (opts, "--broadcast and --balanced "
                                          "exclude each other");
            return -1;
        }
        self->route = route;
        return 0;
    }
    default:
        return -1;
    }
}

static int
s_apply (bn_view_t *view, void *data, bn_result_t **result_p)
{
    s_apply_t *self = data;
    return bn_view_apply (view, self->function, self->args, NULL, result_p);
}

static int
s_push (bn_view_t *view, void *data, bn_result_t **result_p)
{
    s_apply_t *self = data;
    return bn_view_push (view, self->args, result_p);
}

static int
s_pull (bn_view_t *view, void *data, bn_result_t **result_p)
{
    s_apply_t *self = data;
    return bn_view_pull (view, self->args, result_p);
}

static void
s_on_item (bn_result_t *result, size_t index, bool timed_out, void *data)
{
    s_apply_t *self = data;
    char status[512];
    int code;
    bool failed;
    bn_cliclient_describe (result, index, timed_out, status, sizeof status,
                           &code, &failed);
    if (*status)
        self->failed = true;
    else
        self->done++;
    int id = bn_result_engine_id (result, index);
    char *repr = NULL;
    if (self->show_values && !*status) {
        const bn_value_t *value = bn_result_value (result, index);
        repr = value ? bn_value_repr (value)
                     : strdup ("<a value this client cannot decode>");
    }
    const char *out = bn_result_stdout (result, index);
    size_t out_size = out ? bn_result_stdout_size (result, index) : 0;
    out = out ? out : "";
    if (self->gather) {
        //  A value is what groups engines; its text ends the block
        size_t repr_size = repr ? strlen (repr) + 1 : 0;
        char *text = malloc (out_size + repr_size + 1);
        if (text) {
            memcpy (text, out, out_size);
            if (repr)
                memcpy (text + out_size, repr, repr_size - 1);
            if (repr)
                text[out_size + repr_size - 1] = '\n';
        }
        if (!text || bn_gather_add (self->gathered, id, text,
                                    out_size + repr_size, "", 0, status) != 0)
            bn_cliopts_error (self->opts, "out of memory");
        free (text);
    } else {
        bn_pxout_prefixed (stdout, "stdout", id, out, out_size);
        if (repr) {
            char prefix[32];
            snprintf (prefix, sizeof prefix, "[%d] ", id);
            printf ("%s%s\n", prefix, repr);
        }
        fflush (stdout);
        if (*status && !self->quiet)
            bn_pxout_prefixed (stderr, "status", id, status, strlen (status));
    }
    free (repr);
}

//  Parse options, let prepare check the operands and build the call's
//  arguments (it returns an exit status, 0 to go on), connect, call,
//  collect, print.
static int
s_run (int argc, char **argv, const char *command, int flags, bool takes_gather,
       int (*prepare) (s_apply_t *self, int argc, char **argv),
       bn_cliclient_call_fn *call, bool show_values)
{
    s_apply_t self = {NULL};
    self.show_values = show_values;
    self.opts =
        bn_cliopts_new (command, BN_CLIOPTS_CLUSTER | BN_CLIOPTS_FILE | flags);
    if (!self.opts)
        return BN_EXIT_FAILURE;
    static const struct option options[] = {
        {"targets", required_argument, NULL, 't'},
        {"gather", no_argument, NULL, 'b'},
        {"quiet", no_argument, NULL, 'q'},
        {"broadcast", no_argument, NULL, S_OPT_BROADCAST},
        {"balanced", no_argument, NULL, S_OPT_BALANCED},
        {NULL, 0, NULL, 0}};
    static const struct option push_options[] = {
        {"targets", required_argument, NULL, 't'},
        {"quiet", no_argument, NULL, 'q'},
        {"broadcast", no_argument, NULL, S_OPT_BROADCAST},
        {NULL, 0, NULL, 0}};
    int first = bn_cliopts_parse (
        self.opts, argc, argv, takes_gather ? "t:bq" : "t:q",
        takes_gather ? options : push_options, s_option, &self);
    int status = first == BN_CLIOPTS_DONE ? BN_EXIT_OK : BN_EXIT_USAGE;
    if (first < 0)
        goto done;
    if (self.route == BN_CLICLIENT_BALANCED && !streq (command, "apply")) {
        bn_cliopts_usage_error (self.opts, "--balanced is for apply only");
        status = BN_EXIT_USAGE;
        goto done;
    }
    status = prepare (&self, argc - first, argv + first);
    if (status != BN_EXIT_OK)
        goto done;
    status = BN_EXIT_FAILURE;
    bn_client_t *client = bn_cliclient_connect (self.opts, &status);
    bn_view_t *view = NULL;
    bn_result_t *result = NULL;
    if (client &&
        bn_cliclient_call (self.opts, client, self.targets, self.route, call,
                           &self, &view, &result) == 0) {
        if (self.gather)
            self.gathered = bn_gather_new ();
        double timeout = bn_cliopts_timeout_given (self.opts)
                             ? bn_cliopts_timeout (self.opts)
                             : -1;
        status = bn_cliclient_collect (self.opts, client, result, timeout,
                                       s_on_item, &self);
        if (status == BN_EXIT_OK) {
            if (self.gathered)
                bn_gather_print (self.gathered, stdout, self.quiet);
            status = self.failed ? BN_EXIT_FAILURE : BN_EXIT_OK;
        }
    }
    if (status == BN_EXIT_OK && !show_values && !self.quiet) {
        bn_idset_t *ids = bn_idset_new ();
        size_t count = result ? bn_result_count (result) : 0;
        for (size_t index = 0; ids && index < count; index++)
            if (bn_result_status (result, index) == 0)
                bn_idset_add (ids, bn_result_engine_id (result, index));
        char *text = ids ? bn_idset_format (ids) : NULL;
        printf ("pushed to %s\n", text ? text : "engines");
        free (text);
        bn_idset_destroy (&ids);
    }
    fflush (stdout);
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&client);
    bn_gather_destroy (&self.gathered);
done:
    bn_value_destroy (&self.args);
    bn_idset_destroy (&self.targets);
    bn_cliopts_destroy (&self.opts);
    return status;
}

static int
s_prepare_apply (s_apply_t *self, int argc, char **argv)
{
    if (argc < 1) {
        bn_cliopts_usage_error (self->opts, "missing function name");
        return BN_EXIT_USAGE;
    }
    self->function = argv[0];
    self->args = bn_clivalue_list (argv + 1, argc - 1);
    return self->args ? BN_EXIT_OK : BN_EXIT_FAILURE;
}

static void
s_free (void *data, void *hint)
{
    free (data);
}

static int
s_prepare_push (s_apply_t *self, int argc, char **argv)
{
    if (argc < 2) {
        bn_cliopts_usage_error (self->opts, "needs NAME and FILE");
        return BN_EXIT_USAGE;
    }
    if (argc > 2) {
        bn_cliopts_usage_error (self->opts, "unexpected argument '%s'",
                                argv[2]);
        return BN_EXIT_USAGE;
    }
    size_t size = 0;
    char *data = bn_cliclient_read_file (argv[1], &size);
    if (!data) {
        bn_cliopts_error (self->opts, "cannot read %s: %s", argv[1],
                          strerror (errno));
        return BN_EXIT_FAILURE;
    }
    self->args = bn_value_new_dict ();
    //  the file's bytes are sent as read, never copied
    bn_value_t *bytes = bn_value_new_bytes_shared (data, size, s_free, NULL);
    if (!bytes)
        free (data);
    if (!self->args || !bytes ||
        bn_value_dict_set_str (self->args, argv[0], bytes) != 0) {
        if (!self->args)
            bn_value_destroy (&bytes);
        bn_value_destroy (&self->args);
        return BN_EXIT_FAILURE;
    }
    return 0;
}

static int
s_prepare_pull (s_apply_t *self, int argc, char **argv)
{
    if (argc < 1) {
        bn_cliopts_usage_error (self->opts, "missing NAME");
        return BN_EXIT_USAGE;
    }
    if (argc > 1) {
        bn_cliopts_usage_error (self->opts, "unexpected argument '%s'",
                                argv[1]);
        return BN_EXIT_USAGE;
    }
    self->args = bn_value_new_str (argv[0]);
    return self->args ? BN_EXIT_OK : BN_EXIT_FAILURE;
}

int
bn_cmd_apply (int argc, char **argv)
{
    //  Arguments of the function may start with '-': options come first
    return s_run (argc, argv, "apply", 0, true, s_prepare_apply, s_apply, true);
}

int
bn_cmd_push (int argc, char **argv)
{
    return s_run (argc, argv, "push", BN_CLIOPTS_PERMUTE, false, s_prepare_push,
                  s_push, false);
}

int
bn_cmd_pull (int argc, char **argv)
{
    return s_run (argc, argv, "pull", BN_CLIOPTS_PERMUTE, true, s_prepare_pull,
                  s_pull, true);
}

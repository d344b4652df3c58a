/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_example: connect to a banyan cluster, run `hostname` on every engine
    and call the engines' `echo` function, printing what each returns.

    Build it outside the banyan tree with
        cc -o bn_example bn_example.c $(pkg-config --cflags --libs libbanyan)
    Run it as
        bn_example [PROFILE | PROFILE_DIR | CONNECTION_FILE] [ENGINES]
    (no argument: $BANYAN_CONNECTION_INFO, else the default profile).  */
#include <banyan.h>

#include <stdio.h>
#include <stdlib.h>

//  Print each engine's outcome; returns the number of engines that failed.
static int
s_report (bn_result_t *result, const char *what)
{
    int failed = 0;
    for (size_t i = 0; i < bn_result_count (result); i++) {
        int id = bn_result_engine_id (result, i);
        int status = bn_result_status (result, i);
        if (status != 0) {
            failed++;
            printf ("[%d] %s failed: %s", id, what, bn_strerror (status));
            if (bn_result_ename (result, i))
                printf (" (%s: %s)", bn_result_ename (result, i),
                        bn_result_evalue (result, i));
            printf ("\n");
            continue;
        }
        const bn_value_t *value = bn_result_value (result, i);
        if (value) {
            char *repr = bn_value_repr (value);
            printf ("[%d] %s -> %s\n", id, what, repr ? repr : "?");
            free (repr);
        } else
            printf ("[%d] %s", id, bn_result_stdout (result, i));
    }
    return failed;
}

int
main (int argc, char *argv[])
{
    const char *source = argc > 1 ? argv[1] : NULL;
    size_t engines = argc > 2 ? (size_t)atoi (argv[2]) : 1;
    double timeout = 30;

    int rc;
    bn_client_t *client = bn_client_new (source, 10, &rc);
    if (!client) {
        fprintf (stderr, "bn_example: cannot connect: %s\n", bn_strerror (rc));
        return 1;
    }
    rc = bn_client_wait_for_engines (client, engines, timeout);
    if (rc != 0) {
        fprintf (stderr, "bn_example: waiting for %zu engines: %s\n", engines,
                 bn_strerror (rc));
        bn_client_destroy (&client);
        return 1;
    }
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);
    int failed = 0;

    //  A shell command on every engine; its output arrives per engine.
    bn_result_t *result = NULL;
    rc = bn_view_execute (view, "hostname", &result);
    if (rc == 0)
        rc = bn_result_wait (result, timeout);
    if (rc == 0)
        failed += s_report (result, "hostname");
    else
        fprintf (stderr, "bn_example: hostname: %s\n", bn_strerror (rc));
    bn_result_destroy (&result);

    //  A named function with one argument: echo returns it unchanged.
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_append (args, bn_value_new_str ("hello from libbanyan"));
    rc = bn_view_apply (view, "echo", args, NULL, &result);
    bn_value_destroy (&args);
    if (rc == 0)
        rc = bn_result_wait (result, timeout);
    if (rc == 0) {
        failed += s_report (result, "echo");
        printf ("echo took %.3f ms\n", bn_result_elapsed (result) * 1000);
    } else
        fprintf (stderr, "bn_example: echo: %s\n", bn_strerror (rc));
    bn_result_destroy (&result);

    bn_view_destroy (&view);
    bn_client_destroy (&client);
    return rc == 0 && failed == 0 ? 0 : 1;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_cliclient: what the commands that talk to a cluster share: connect
    (exit status 12 when there is no cluster), parse -t, start a call on a
    view, collect its results with progress, Ctrl-C handling and a
    deadline, and describe how each engine fared.  */
#ifndef BN_CLICLIENT_H_INCLUDED
#define BN_CLICLIENT_H_INCLUDED

#include "banyan.h"
#include "bn_cliopts.h"

#include <stdbool.h>
#include <stddef.h>

//  Connect to the controller the options select. On failure prints why
//  and sets *status: 12 when there is no connection file, the controller
//  its pid file names has ended (one of this host), or no controller
//  answers in time; else 1 (a connection file that cannot be read, at
//  once). Returns NULL on failure.
bn_client_t *bn_cliclient_connect (bn_cliopts_t *opts, int *status);

//  The ids of the clusters of the selected profile, "a, b", when the
//  options name no cluster id (and no --file); NULL if there are none
//  (or out of memory). The caller frees it.
char *bn_cliclient_other_clusters (bn_cliopts_t *opts);

//  If there are such clusters, print that the options must say which
//  (--cluster-id) and return true; else false, nothing printed.
bool bn_cliclient_error_other_clusters (bn_cliopts_t *opts);

//  Say which of targets are not registered (and which are), or that no
//  engines are.
void bn_cliclient_report_missing (bn_cliopts_t *opts, bn_client_t *client,
                                  bn_idset_t *targets);

//  Parse -t text into a new set. Returns 0, or -1 after a usage error.
int bn_cliclient_targets (bn_cliopts_t *opts, const char *text,
                          bn_idset_t **targets_p);

//  Starts a call on view; returns 0 or a BN_E* code, as bn_view_apply.
typedef int (bn_cliclient_call_fn) (bn_view_t *view, void *data,
                                    bn_result_t **result_p);

//  How a command reaches its engines.
typedef enum {
    BN_CLICLIENT_DIRECT,    //  one request per engine through the mux
    BN_CLICLIENT_BROADCAST, //  one request through the broadcast tree
    BN_CLICLIENT_BALANCED   //  one task, run by whichever engine is free
} bn_cliclient_route_t;

//  Make a view of targets (NULL: all engines; a direct view, a broadcast
//  view unless the controller has no broadcast scheduler, or a
//  load-balanced view running once on one of the targets) and start call
//  on it. Returns 0 with *view_p and *result_p set, or -1 after printing
//  why (no engines, unknown targets...).
int bn_cliclient_call (bn_cliopts_t *opts, bn_client_t *client,
                       bn_idset_t *targets, bn_cliclient_route_t route,
                       bn_cliclient_call_fn *call, void *data,
                       bn_view_t **view_p, bn_result_t **result_p);

//  Called with each item of a result as it completes, or when it did not
//  complete in time (then timed_out is true).
typedef void (bn_cliclient_item_fn) (bn_result_t *result, size_t index,
                                     bool timed_out, void *data);

//  Wait for every item of result (a call on client), handing each to
//  on_item as it completes. On a terminal, shows "12/16" after a second
//  and says which engines are busy with earlier work that this call waits
//  behind. timeout < 0 waits without limit; items still pending then are
//  handed over as timed out (and aborted). The first Ctrl-C prints the
//  engines still running; the second aborts them and returns 130.
//  Returns 0, or 130.
int bn_cliclient_collect (bn_cliopts_t *opts, bn_client_t *client,
                          bn_result_t *result, double timeout,
                          bn_cliclient_item_fn *on_item, void *data);

//  How an item ended, for people and for exit statuses: text is "" on
//  success, else e.g. "exited with exit code 3", "killed by signal 9
//  (Killed)", "EngineError: engine 3 died"; *code is the exit status of a
//  shell command (128 + n for signal n), 0 otherwise; *failed is true when
//  the request did not run to its end (an error other than a command's
//  exit status, an abort, a dead engine, a timeout).
void bn_cliclient_describe (bn_result_t *result, size_t index, bool timed_out,
                            char *text, size_t size, int *code, bool *failed);

//  Read a whole file, or stdin for "-", into a new buffer of *size bytes
//  (with room for one more). Returns NULL with errno set.
char *bn_cliclient_read_file (const char *path, size_t *size);

#endif

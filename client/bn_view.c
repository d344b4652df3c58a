/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_view: how requests reach engines (direct, broadcast, load-balanced)
    and the calls made through them: execute, apply, push, pull, abort,
    clear, shutdown.  */
#include "bn_apply.h"
#include "bn_client_private.h"
#include "bn_log.h"
#include "bn_msgtypes.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_LEVELS 16 //  bn_levels entries
#define S_MAX_OP 128    //  bytes of a reduction name and its NUL

//  A task dependency (ipyparallel.Dependency).
typedef struct {
    char **ids;   //  msg_ids
    size_t count; //  entries in ids
    bool all;     //  all of them, or any one
    bool success; //  successes count
    bool failure; //  failures count
} s_dep_t;

struct _bn_view_t {
    bn_client_t *client;   //  reference held
    bn_tracker_t *tracker; //  the client's: its lock guards the settings
    bn_view_kind_t kind;   //  direct, broadcast or load-balanced
    int *targets;          //  engine ids, or NULL for all engines
    size_t ntargets;       //  entries in targets
    bool coalescing;       //  broadcast: merge replies in the tree
    bool silent;           //  execute_request silent flag
    //  Broadcast tree options (doc/broadcast.md's bn_* request metadata)
    bn_level_t levels[S_MAX_LEVELS]; //  per-level mode
    size_t nlevels;                  //  0: the tree's default
    bn_release_t release;            //  when merging levels release
    int window_ms;                   //  BN_RELEASE_WINDOW period
    bool group;                      //  group identical replies
    char reduce[S_MAX_OP];           //  reduction, "" for none
    int deadline_ms;                 //  0: the controller's default
    bool timestamps;                 //  per-hop timestamps
    int output_in_reply;             //  bn_output: "reply": 1, 0, or S_AUTO
    //  Load-balanced task flags (doc/wire.md 8.2)
    s_dep_t after;  //  time dependency
    s_dep_t follow; //  location dependency
    double timeout; //  seconds, 0: none
    int retries;    //  retries of a failed task
};

static void
s_dep_clear (s_dep_t *dep)
{
    for (size_t i = 0; i < dep->count; i++)
        free (dep->ids[i]);
    free (dep->ids);
    dep->ids = NULL;
    dep->count = 0;
}

//  The function an apply calls and its arguments.
typedef struct {
    const char *module;       //  module of a GLOBAL, or NULL: Reference
    const char *name;         //  function name (or Reference name)
    const bn_value_t *args;   //  LIST or TUPLE, or NULL
    const bn_value_t *kwargs; //  DICT, or NULL
} s_apply_t;

//  Output in the reply when every engine a request goes to honours it
#define S_AUTO -1

bn_view_t *
bn_view_new (bn_client_t *client, bn_view_kind_t kind)
{
    if (!client || kind < BN_VIEW_DIRECT || kind > BN_VIEW_LOAD_BALANCED)
        return NULL;
    bn_view_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->client = client;
    self->tracker = bn_client_tracker (client);
    self->kind = kind;
    self->silent = true;
    self->output_in_reply = S_AUTO;
    bn_client_ref (client);
    return self;
}

void
bn_view_destroy (bn_view_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    bn_view_t *self = *self_p;
    *self_p = NULL;
    bn_client_unref (&self->client);
    free (self->targets);
    s_dep_clear (&self->after);
    s_dep_clear (&self->follow);
    free (self);
}

bn_view_kind_t
bn_view_kind (bn_view_t *self)
{
    assert (self);
    return self->kind;
}

//  Replace the target list (NULL: all engines); the client lock guards
//  the view's settings, so that calls in other threads see whole lists.
static void
s_set_targets (bn_view_t *self, int *ids, size_t count)
{
    bn_tracker_lock (self->tracker);
    free (self->targets);
    self->targets = ids;
    self->ntargets = count;
    bn_tracker_unlock (self->tracker);
}

int
bn_view_set_targets (bn_view_t *self, bn_idset_t *targets)
{
    if (!self)
        return BN_EINVAL;
    if (!targets) {
        s_set_targets (self, NULL, 0);
        return 0;
    }
    size_t count = bn_idset_count (targets);
    int *ids = malloc ((count ? count : 1) * sizeof *ids);
    if (!ids)
        return BN_ENOMEM;
    size_t k = 0;
    for (int id = bn_idset_first (targets); id >= 0 && k < count;
         id = bn_idset_next (targets, id))
        ids[k++] = id;
    s_set_targets (self, ids, k);
    return 0;
}

int
bn_view_set_target_list (bn_view_t *self, const int *ids, size_t count)
{
    if (!self || (count && !ids))
        return BN_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (ids[i] < 0)
            return BN_EINVAL;
    int *copy = malloc ((count ? count : 1) * sizeof *copy);
    if (!copy)
        return BN_ENOMEM;
    if (count)
        memcpy (copy, ids, count * sizeof *ids);
    s_set_targets (self, copy, count);
    return 0;
}

int
bn_view_set_coalescing (bn_view_t *self, bool coalescing)
{
    if (!self || self->kind != BN_VIEW_BROADCAST)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->coalescing = coalescing;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_levels (bn_view_t *self, const bn_level_t *levels, size_t count)
{
    if (!self || self->kind != BN_VIEW_BROADCAST || count > S_MAX_LEVELS ||
        (count && !levels))
        return BN_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (levels[i] != BN_LEVEL_MERGE && levels[i] != BN_LEVEL_FORWARD)
            return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    if (count)
        memcpy (self->levels, levels, count * sizeof *levels);
    self->nlevels = count;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_release (bn_view_t *self, bn_release_t mode, int window_ms)
{
    if (!self || self->kind != BN_VIEW_BROADCAST ||
        (mode != BN_RELEASE_ALL && mode != BN_RELEASE_WINDOW &&
         mode != BN_RELEASE_NONE) ||
        (mode == BN_RELEASE_WINDOW && window_ms <= 0))
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->release = mode;
    self->window_ms = mode == BN_RELEASE_WINDOW ? window_ms : 0;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_group (bn_view_t *self, bool group)
{
    if (!self || self->kind != BN_VIEW_BROADCAST)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->group = group;
    bn_tracker_unlock (self->tracker);
    return 0;
}

//  "sum", "min", "max" or "<plugin>:<name>", both parts printable ASCII
//  without spaces or colons.
static bool
s_valid_op (const char *op)
{
    if (strcmp (op, "sum") == 0 || strcmp (op, "min") == 0 ||
        strcmp (op, "max") == 0)
        return true;
    const char *colon = strchr (op, ':');
    if (!colon || colon == op || colon[1] == 0 || strlen (op) >= S_MAX_OP)
        return false;
    for (const char *c = op; *c; c++)
        if ((*c <= ' ' || *c > '~' || *c == ':') && c != colon)
            return false;
    return true;
}

int
bn_view_set_reduce (bn_view_t *self, const char *op)
{
    if (!self || self->kind != BN_VIEW_BROADCAST ||
        (op && *op && !s_valid_op (op)))
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    snprintf (self->reduce, sizeof self->reduce, "%s", op ? op : "");
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_deadline_ms (bn_view_t *self, int deadline_ms)
{
    if (!self || self->kind != BN_VIEW_BROADCAST || deadline_ms < 0)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->deadline_ms = deadline_ms;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_timestamps (bn_view_t *self, bool timestamps)
{
    if (!self || self->kind != BN_VIEW_BROADCAST)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->timestamps = timestamps;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_output_in_reply (bn_view_t *self, bool in_reply)
{
    if (!self || self->kind == BN_VIEW_LOAD_BALANCED)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->output_in_reply = in_reply ? 1 : 0;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_silent (bn_view_t *self, bool silent)
{
    if (!self)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->silent = silent;
    bn_tracker_unlock (self->tracker);
    return 0;
}

//  Replace dep (after or follow) with a copy of msg_ids.
static int
s_set_dep (bn_view_t *self, s_dep_t *dep, const char *const *msg_ids,
           size_t count, bool all, bool success, bool failure)
{
    if (!self || self->kind != BN_VIEW_LOAD_BALANCED || (count && !msg_ids) ||
        !(success || failure))
        return BN_EINVAL;
    s_dep_t next = {NULL, 0, all, success, failure};
    if (count && !(next.ids = calloc (count, sizeof (char *))))
        return BN_ENOMEM;
    for (; next.count < count; next.count++) {
        if (!msg_ids[next.count]) {
            s_dep_clear (&next);
            return BN_EINVAL;
        }
        if (!(next.ids[next.count] = strdup (msg_ids[next.count]))) {
            s_dep_clear (&next);
            return BN_ENOMEM;
        }
    }
    bn_tracker_lock (self->tracker);
    s_dep_t old = *dep;
    *dep = next;
    bn_tracker_unlock (self->tracker);
    s_dep_clear (&old);
    return 0;
}

//  The msg_ids of result's items (a new array of borrowed strings).
static int
s_result_ids (bn_result_t *result, const char ***ids_p, size_t *count_p)
{
    *ids_p = NULL;
    *count_p = result ? bn_result_count (result) : 0;
    if (!*count_p)
        return 0;
    const char **ids = calloc (*count_p, sizeof *ids);
    if (!ids)
        return BN_ENOMEM;
    for (size_t i = 0; i < *count_p; i++)
        ids[i] = bn_result_msg_id (result, i);
    *ids_p = ids;
    return 0;
}

int
bn_view_set_after (bn_view_t *self, const char *const *msg_ids, size_t count,
                   bool all, bool success, bool failure)
{
    return s_set_dep (self, self ? &self->after : NULL, msg_ids, count, all,
                      success, failure);
}

int
bn_view_set_follow (bn_view_t *self, const char *const *msg_ids, size_t count,
                    bool all, bool success, bool failure)
{
    return s_set_dep (self, self ? &self->follow : NULL, msg_ids, count, all,
                      success, failure);
}

int
bn_view_set_after_result (bn_view_t *self, bn_result_t *result, bool all,
                          bool success, bool failure)
{
    const char **ids;
    size_t count;
    int rc = s_result_ids (result, &ids, &count);
    if (rc == 0)
        rc = bn_view_set_after (self, ids, count, all, success, failure);
    free (ids);
    return rc;
}

int
bn_view_set_follow_result (bn_view_t *self, bn_result_t *result, bool all,
                           bool success, bool failure)
{
    const char **ids;
    size_t count;
    int rc = s_result_ids (result, &ids, &count);
    if (rc == 0)
        rc = bn_view_set_follow (self, ids, count, all, success, failure);
    free (ids);
    return rc;
}

int
bn_view_set_timeout (bn_view_t *self, double seconds)
{
    if (!self || self->kind != BN_VIEW_LOAD_BALANCED || !(seconds >= 0) ||
        seconds > 1e9)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->timeout = seconds;
    bn_tracker_unlock (self->tracker);
    return 0;
}

int
bn_view_set_retries (bn_view_t *self, int retries)
{
    if (!self || self->kind != BN_VIEW_LOAD_BALANCED || retries < 0)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    self->retries = retries;
    bn_tracker_unlock (self->tracker);
    return 0;
}

static bn_sock_t
s_socket_of (bn_view_kind_t kind)
{
    return kind == BN_VIEW_DIRECT      ? BN_SOCK_MUX
           : kind == BN_VIEW_BROADCAST ? BN_SOCK_BROADCAST
                                       : BN_SOCK_TASK;
}

//  Fill msg's buffers with an apply of apply's function.
static int
s_pack (bn_msg_t *msg, const s_apply_t *apply)
{
    int rc = apply->module
                 ? bn_apply_add_global (msg, apply->module, apply->name,
                                        apply->args, apply->kwargs)
                 : bn_apply_add_reference (msg, apply->name, apply->args,
                                           apply->kwargs);
    return rc == 0 ? 0 : BN_EPICKLE;
}

//  Request metadata of a broadcast view: the stock keys, and banyan's
//  tree options only when they differ from the defaults, so that a
//  plain broadcast request is exactly what the Python client sends.
static json_t *
s_broadcast_metadata (bn_view_t *self, json_t *targets, bool in_reply)
{
    //  Output in the reply with coalescing: a stock 7.1.0 tree would keep
    //  only the last engine's reply content, and with it the others'
    //  output. Asked as "merge at every level" with is_coalescing off, a
    //  stock tree forwards each reply and banyan's tree merges.
    bool merge_by_levels = in_reply && self->coalescing && !self->nlevels;
    json_t *metadata =
        json_pack ("{s:o, s:b, s:b}", "targets", targets, BN_MD_IS_BROADCAST, 1,
                   BN_MD_IS_COALESCING, self->coalescing && !merge_by_levels);
    if (!metadata)
        return NULL;
    int rc = 0;
    if (merge_by_levels)
        rc |= json_object_set_new (metadata, BN_BCAST_LEVELS,
                                   json_pack ("[s]", "merge"));
    if (self->nlevels) {
        json_t *levels = json_array ();
        for (size_t i = 0; levels && i < self->nlevels; i++)
            json_array_append_new (
                levels,
                json_string (self->levels[i] == BN_LEVEL_MERGE ? "merge"
                                                               : "forward"));
        rc |= json_object_set_new (metadata, BN_BCAST_LEVELS, levels);
    }
    if (self->release != BN_RELEASE_ALL)
        rc |= json_object_set_new (
            metadata, BN_BCAST_RELEASE,
            json_string (self->release == BN_RELEASE_WINDOW ? "window"
                                                            : "none"));
    if (self->release == BN_RELEASE_WINDOW)
        rc |= json_object_set_new (metadata, BN_BCAST_WINDOW,
                                   json_integer (self->window_ms));
    if (self->group)
        rc |= json_object_set_new (metadata, BN_BCAST_GROUP, json_true ());
    if (self->reduce[0])
        rc |= json_object_set_new (metadata, BN_BCAST_REDUCE,
                                   json_string (self->reduce));
    if (self->deadline_ms > 0)
        rc |= json_object_set_new (metadata, BN_BCAST_DEADLINE,
                                   json_integer (self->deadline_ms));
    if (self->timestamps)
        rc |= json_object_set_new (metadata, BN_BCAST_TIMESTAMPS, json_true ());
    if (in_reply)
        rc |= json_object_set_new (metadata, BN_BCAST_OUTPUT,
                                   json_string ("reply"));
    if (rc != 0)
        json_decref (metadata);
    return rc == 0 ? metadata : NULL;
}

//  A dependency as Dependency.as_dict() renders it.
static json_t *
s_dep_json (s_dep_t *dep)
{
    json_t *ids = json_array ();
    for (size_t i = 0; ids && i < dep->count; i++)
        json_array_append_new (ids, json_string (dep->ids[i]));
    if (!dep->count)
        return ids;
    return json_pack ("{s:o, s:b, s:b, s:b}", "dependencies", ids, "all",
                      dep->all, "success", dep->success, "failure",
                      dep->failure);
}

//  Request metadata of a broadcast or load-balanced view.
static json_t *
s_metadata (bn_view_t *self, bn_target_t *targets, size_t ntargets,
            bool in_reply)
{
    json_t *list = json_array ();
    if (!list)
        return NULL;
    for (size_t i = 0; i < ntargets; i++)
        json_array_append_new (
            list, self->kind == BN_VIEW_BROADCAST
                      ? json_pack ("[si]", targets[i].uuid, targets[i].id)
                      : json_string (targets[i].uuid));
    if (self->kind == BN_VIEW_BROADCAST)
        return s_broadcast_metadata (self, list, in_reply);
    return json_pack ("{s:o, s:o, s:f, s:o, s:i}", "after",
                      s_dep_json (&self->after), "follow",
                      s_dep_json (&self->follow), "timeout", self->timeout,
                      "targets", list, "retries", self->retries);
}

//  Build the messages of a shell request of type with content (taken)
//  and, for an apply, buffers; register their items in a new result and
//  hand the messages to the I/O thread.
static int
s_submit (bn_view_t *self, const char *type, json_t *content,
          const s_apply_t *apply, const void *input, size_t input_size,
          bn_result_t **result_p)
{
    bn_client_t *client = self->client;
    bn_sock_t sock = s_socket_of (self->kind);
    *result_p = NULL;
    bn_msg_t *first = NULL;
    bn_tracker_lock (bn_client_tracker (client));
    int rc = bn_tracker_state (bn_client_tracker (client));
    if (rc == 0 && !bn_client_has_port (client, sock))
        rc = BN_ENOTSUP;
    if (rc == 0 && !(first = bn_msg_new (bn_client_tx_session (client), type)))
        rc = BN_ENOMEM;
    bn_tracker_unlock (bn_client_tracker (client));
    //  Pickling may be long: done without the lock, once for every target
    if (rc == 0 && apply)
        rc = s_pack (first, apply);
    //  one copy of the input, whose frame every message shares
    if (rc == 0 && input_size &&
        bn_msg_add_buffer (first, input, input_size) != 0)
        rc = BN_ENOMEM;

    bn_target_t *targets = NULL;
    size_t ntargets = 0;
    bn_msg_t **msgs = NULL;
    size_t nmsgs = 0;
    bn_result_t *result = NULL;
    bn_tracker_lock (bn_client_tracker (client));
    if (rc == 0)
        rc = bn_tracker_state (bn_client_tracker (client));
    if (rc == 0) {
        bool all = !self->targets;
        if (self->kind == BN_VIEW_LOAD_BALANCED && all)
            rc = 0;
        else
            rc = bn_engines_resolve (bn_client_engines (client), self->targets,
                                     self->ntargets, &targets, &ntargets);
    }
    //  by default output comes in the reply where every engine can put
    //  it there (banyan engines), and by iopub where one cannot
    bool in_reply = self->output_in_reply == 1;
    if (self->output_in_reply == S_AUTO &&
        self->kind != BN_VIEW_LOAD_BALANCED) {
        in_reply = ntargets > 0;
        for (size_t i = 0; i < ntargets; i++)
            in_reply &= (targets[i].features & BN_ENGINE_OUTPUT_IN_REPLY) != 0;
    }
    size_t nitems = self->kind == BN_VIEW_LOAD_BALANCED ? 1 : ntargets;
    nmsgs = self->kind == BN_VIEW_DIRECT ? ntargets : 1;
    if (rc == 0) {
        msgs = calloc (nmsgs, sizeof *msgs);
        result = bn_client_result_new (client, nitems);
        if (!msgs || !result)
            rc = BN_ENOMEM;
        else if (self->kind != BN_VIEW_LOAD_BALANCED)
            bn_result_set_output_in_reply (result, in_reply);
    }
    for (size_t i = 0; rc == 0 && i < nmsgs; i++) {
        bn_msg_t *msg = first;
        if (i > 0) {
            msg = bn_msg_new (bn_client_tx_session (client), type);
            for (size_t b = 0; msg && b < bn_msg_nbuffers (first); b++)
                if (bn_msg_add_buffer_msg (msg, bn_msg_buffer (first, b)))
                    bn_msg_destroy (&msg);
            if (!msg) {
                rc = BN_ENOMEM;
                break;
            }
        }
        msgs[i] = msg;
        bn_msg_set_content (msg, json_incref (content));
        json_t *metadata = NULL;
        if (self->kind == BN_VIEW_DIRECT) {
            if (bn_msg_push_ident (msg, targets[i].uuid,
                                   strlen (targets[i].uuid)) != 0)
                rc = BN_ENOMEM;
            else if ((input_size || in_reply) && !(metadata = json_object ()))
                rc = BN_ENOMEM;
            else if (in_reply && json_object_set_new (metadata, BN_BCAST_OUTPUT,
                                                      json_string ("reply")))
                rc = BN_ENOMEM;
        } else if (!(metadata = s_metadata (self, targets, ntargets, in_reply)))
            rc = BN_ENOMEM;
        if (metadata && input_size &&
            json_object_set_new (metadata, BN_EXEC_STDIN, json_true ()) != 0)
            rc = BN_ENOMEM;
        if (metadata)
            bn_msg_set_metadata (msg, metadata);
    }
    if (msgs && msgs[0] == first)
        first = NULL;
    //  Items are tracked before anything is sent, so no reply can come
    //  first.
    for (size_t i = 0; rc == 0 && i < nitems; i++) {
        bn_msg_t *msg = msgs[self->kind == BN_VIEW_DIRECT ? i : 0];
        const char *msg_id = bn_msg_id (msg);
        const char *date = bn_msg_date (msg);
        char sub_id[512];
        if (self->kind == BN_VIEW_BROADCAST) {
            //  The tree gives each engine's copy this msg_id (doc/wire.md 7.3)
            snprintf (sub_id, sizeof sub_id, "%s_%s", msg_id, targets[i].uuid);
            msg_id = sub_id;
        }
        bn_item_t *item =
            self->kind == BN_VIEW_LOAD_BALANCED
                ? bn_result_add (result, msg_id, date, -1, NULL, BN_ITEM_SHELL)
                : bn_result_add (result, msg_id, date, targets[i].id,
                                 targets[i].uuid, BN_ITEM_SHELL);
        if (item && self->kind == BN_VIEW_BROADCAST)
            bn_item_set_via_broadcast (item);
        if (!item || bn_tracker_track (bn_client_tracker (client), item) != 0)
            rc = BN_ENOMEM;
    }
    bn_tracker_unlock (bn_client_tracker (client));
    json_decref (content);
    free (targets);
    bn_msg_destroy (&first);
    if (rc == 0)
        rc = bn_client_send (client, sock, msgs, nmsgs);
    else if (msgs)
        for (size_t i = 0; i < nmsgs; i++)
            bn_msg_destroy (&msgs[i]);
    free (msgs);
    if (rc != 0) {
        bn_result_destroy (&result);
        return rc;
    }
    *result_p = result;
    return 0;
}

int
bn_view_execute (bn_view_t *self, const char *code, bn_result_t **result_p)
{
    return bn_view_execute_input (self, code, NULL, 0, result_p);
}

int
bn_view_execute_input (bn_view_t *self, const char *code, const void *input,
                       size_t input_size, bn_result_t **result_p)
{
    if (!self || !code || !result_p || (!input && input_size))
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    bool silent = self->silent;
    bn_tracker_unlock (self->tracker);
    json_t *content = json_pack ("{s:s, s:b, s:{}}", "code", code, "silent",
                                 silent, "user_expressions");
    if (!content) {
        //  json_pack refuses text that is not UTF-8
        *result_p = NULL;
        return BN_EINVAL;
    }
    return s_submit (self, BN_MSG_EXECUTE_REQUEST, content, NULL, input,
                     input_size, result_p);
}

static bool
s_valid_args (const bn_value_t *args, const bn_value_t *kwargs)
{
    if (args && bn_value_type (args) != BN_VALUE_LIST &&
        bn_value_type (args) != BN_VALUE_TUPLE)
        return false;
    if (kwargs) {
        if (bn_value_type (kwargs) != BN_VALUE_DICT)
            return false;
        for (size_t i = 0; i < bn_value_size (kwargs); i++)
            if (bn_value_type (bn_value_dict_key (kwargs, i)) != BN_VALUE_STR)
                return false;
    }
    return true;
}

static int
s_apply (bn_view_t *self, const s_apply_t *apply, bn_result_t **result_p)
{
    json_t *content = json_object ();
    if (!content)
        return BN_ENOMEM;
    return s_submit (self, BN_MSG_APPLY_REQUEST, content, apply, NULL, 0,
                     result_p);
}

int
bn_view_apply (bn_view_t *self, const char *function, const bn_value_t *args,
               const bn_value_t *kwargs, bn_result_t **result_p)
{
    if (result_p)
        *result_p = NULL;
    if (!self || !function || !*function || !result_p ||
        !s_valid_args (args, kwargs))
        return BN_EINVAL;
    const char *dot = strrchr (function, '.');
    if (!dot) {
        s_apply_t apply = {NULL, function, args, kwargs};
        return s_apply (self, &apply, result_p);
    }
    if (dot == function || dot[1] == 0)
        return BN_EINVAL;
    char *module = strndup (function, (size_t)(dot - function));
    if (!module)
        return BN_ENOMEM;
    s_apply_t apply = {module, dot + 1, args, kwargs};
    int rc = s_apply (self, &apply, result_p);
    free (module);
    return rc;
}

int
bn_view_push (bn_view_t *self, const bn_value_t *ns, bn_result_t **result_p)
{
    if (result_p)
        *result_p = NULL;
    if (!self || !ns || !result_p || bn_value_type (ns) != BN_VALUE_DICT ||
        !s_valid_args (NULL, ns))
        return BN_EINVAL;
    s_apply_t apply = {"ipyparallel.util", "_push", NULL, ns};
    return s_apply (self, &apply, result_p);
}

int
bn_view_pull (bn_view_t *self, const bn_value_t *names, bn_result_t **result_p)
{
    if (result_p)
        *result_p = NULL;
    if (!self || !names || !result_p)
        return BN_EINVAL;
    bn_value_type_t type = bn_value_type (names);
    if (type == BN_VALUE_LIST || type == BN_VALUE_TUPLE) {
        for (size_t i = 0; i < bn_value_size (names); i++)
            if (bn_value_type (bn_value_item (names, i)) != BN_VALUE_STR)
                return BN_EINVAL;
    } else if (type != BN_VALUE_STR)
        return BN_EINVAL;
    bn_value_t *args = bn_value_new_tuple ();
    bn_value_t *copy = bn_value_dup (names);
    if (!args || !copy || bn_value_append (args, copy) != 0) {
        bn_value_destroy (&args);
        return BN_ENOMEM;
    }
    s_apply_t apply = {"ipyparallel.util", "_pull", args, NULL};
    int rc = s_apply (self, &apply, result_p);
    bn_value_destroy (&args);
    return rc;
}

//  Send a control request of type to each of ntargets targets, with
//  contents[i] (taken; every one of them, also on failure) to targets[i],
//  and wait for the replies. Returns 0 or the first error. With result_p,
//  waits for them all (up to timeout) and gives the result instead:
//  returns 0, or an error sending.
static int
s_control_to (bn_client_t *client, const char *type, bn_target_t *targets,
              json_t **contents, size_t ntargets, bn_item_kind_t kind,
              double timeout, bn_result_t **result_p)
{
    bn_msg_t **msgs = calloc (ntargets ? ntargets : 1, sizeof *msgs);
    bn_result_t *result = bn_client_result_new (client, ntargets);
    bn_tracker_lock (bn_client_tracker (client));
    int rc = bn_tracker_state (bn_client_tracker (client));
    if (rc == 0 && (!msgs || !result))
        rc = BN_ENOMEM;
    for (size_t i = 0; rc == 0 && i < ntargets; i++) {
        bn_msg_t *msg = bn_msg_new (bn_client_tx_session (client), type);
        msgs[i] = msg;
        if (!msg || bn_msg_push_ident (msg, targets[i].uuid,
                                       strlen (targets[i].uuid)) != 0) {
            rc = BN_ENOMEM;
            break;
        }
        bn_msg_set_content (msg, contents[i]);
        contents[i] = NULL;
        bn_item_t *item =
            bn_result_add (result, bn_msg_id (msg), bn_msg_date (msg),
                           targets[i].id, targets[i].uuid, kind);
        if (!item || bn_tracker_track (bn_client_tracker (client), item) != 0)
            rc = BN_ENOMEM;
    }
    bn_tracker_unlock (bn_client_tracker (client));
    for (size_t i = 0; i < ntargets; i++)
        json_decref (contents[i]);
    if (rc == 0)
        rc = bn_client_send (client, BN_SOCK_CONTROL, msgs, ntargets);
    else if (msgs)
        for (size_t i = 0; i < ntargets; i++)
            bn_msg_destroy (&msgs[i]);
    free (msgs);
    if (rc == 0 && result_p) {
        bn_result_wait (result, timeout);
        *result_p = result;
        return 0;
    }
    if (rc == 0)
        rc = bn_result_get (result, timeout);
    bn_result_destroy (&result);
    return rc;
}

//  Send a control request of type with content (taken) to each target
//  (all engines for a load-balanced view without targets) and wait for
//  the replies. Returns 0 or the first error.
static int
s_control (bn_view_t *self, const char *type, json_t *content,
           bn_item_kind_t kind, double timeout, bn_result_t **result_p)
{
    bn_client_t *client = self->client;
    bn_target_t *targets = NULL;
    size_t ntargets = 0;
    bn_tracker_lock (bn_client_tracker (client));
    int rc = bn_tracker_state (bn_client_tracker (client));
    if (rc == 0)
        rc = bn_engines_resolve (bn_client_engines (client), self->targets,
                                 self->ntargets, &targets, &ntargets);
    bn_tracker_unlock (bn_client_tracker (client));
    json_t **contents =
        rc == 0 ? calloc (ntargets + 1, sizeof *contents) : NULL;
    if (rc == 0 && !contents)
        rc = BN_ENOMEM;
    if (rc == 0) {
        for (size_t i = 0; i < ntargets; i++)
            contents[i] = json_incref (content);
        rc = s_control_to (client, type, targets, contents, ntargets, kind,
                           timeout, result_p);
    }
    json_decref (content);
    free (contents);
    free (targets);
    return rc;
}

int
bn_result_abort (bn_result_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    bn_client_t *client = bn_result_client (self);
    if (!client)
        return BN_EINVAL;
    bn_target_t *targets = NULL;
    size_t ntargets = 0;
    json_t **contents = NULL;
    json_t *anywhere = json_array (); //  ids of items without an engine
    bn_tracker_lock (bn_client_tracker (client));
    int rc = bn_tracker_state (bn_client_tracker (client));
    if (rc == 0)
        rc = bn_engines_resolve (bn_client_engines (client), NULL, 0, &targets,
                                 &ntargets);
    if (rc == BN_ENOENGINE)
        rc = 0; //  nobody is left to abort anything
    if (rc == 0) {
        contents = calloc (ntargets + 1, sizeof *contents);
        if (!contents || !anywhere)
            rc = BN_ENOMEM;
    }
    //  Each engine hears only of its own requests, so that a broadcast
    //  to N engines sends N short aborts, not N lists of N ids.
    size_t count = bn_result_count (self);
    for (size_t index = 0; rc == 0 && index < count; index++) {
        bn_item_t *item = bn_result_item (self, index);
        if (bn_item_replied (item) || bn_item_kind (item) != BN_ITEM_SHELL)
            continue;
        json_t *id = json_string (bn_item_msg_id (item));
        const char *uuid = bn_item_engine_uuid (item);
        json_t *list = anywhere;
        for (size_t t = 0; uuid && t < ntargets; t++)
            if (streq (targets[t].uuid, uuid)) {
                if (!contents[t])
                    contents[t] = json_array ();
                list = contents[t];
                break;
            }
        if (!id || !list || json_array_append_new (list, id) != 0)
            rc = BN_ENOMEM;
    }
    bn_tracker_unlock (bn_client_tracker (client));
    size_t used = 0;
    for (size_t t = 0; rc == 0 && t < ntargets; t++) {
        json_t *ids = contents[t] ? contents[t] : json_array ();
        contents[t] = NULL;
        if (ids && json_array_extend (ids, anywhere) == 0 &&
            json_array_size (ids) > 0) {
            targets[used] = targets[t];
            contents[used] = json_pack ("{s:o}", "msg_ids", ids);
            if (!contents[used++])
                rc = BN_ENOMEM;
        } else if (!ids)
            rc = BN_ENOMEM;
        else
            json_decref (ids);
    }
    json_decref (anywhere);
    if (rc == 0 && used)
        rc = s_control_to (client, BN_MSG_ABORT_REQUEST, targets, contents,
                           used, BN_ITEM_CONTROL, timeout, NULL);
    else
        for (size_t t = 0; contents && t < ntargets; t++)
            json_decref (contents[t]);
    free (contents);
    free (targets);
    return rc;
}

int
bn_view_abort (bn_view_t *self, bn_result_t *result, double timeout)
{
    if (!self)
        return BN_EINVAL;
    if (result)
        return bn_result_abort (result, timeout);
    bn_tracker_lock (self->tracker);
    json_t *ids = bn_tracker_outstanding (self->tracker);
    bn_tracker_unlock (self->tracker);
    json_t *content = ids ? json_pack ("{s:o}", "msg_ids", ids) : NULL;
    if (!content)
        return BN_ENOMEM;
    return s_control (self, BN_MSG_ABORT_REQUEST, content, BN_ITEM_CONTROL,
                      timeout, NULL);
}

int
bn_view_kernel_info (bn_view_t *self, double timeout, bn_result_t **result_p)
{
    if (result_p)
        *result_p = NULL;
    if (!self || !result_p)
        return BN_EINVAL;
    json_t *content = json_object ();
    if (!content)
        return BN_ENOMEM;
    return s_control (self, BN_MSG_KERNEL_INFO_REQUEST, content,
                      BN_ITEM_CONTROL, timeout, result_p);
}

int
bn_view_clear (bn_view_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    json_t *content = json_object ();
    if (!content)
        return BN_ENOMEM;
    return s_control (self, BN_MSG_CLEAR_REQUEST, content, BN_ITEM_CONTROL,
                      timeout, NULL);
}

int
bn_view_shutdown (bn_view_t *self, double timeout)
{
    if (!self)
        return BN_EINVAL;
    json_t *content = json_pack ("{s:b}", "restart", 0);
    if (!content)
        return BN_ENOMEM;
    return s_control (self, BN_MSG_SHUTDOWN_REQUEST, content, BN_ITEM_SHUTDOWN,
                      timeout, NULL);
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_activity: what engines are busy with, from their kernel_info_reply.  */
#define _GNU_SOURCE
#include "bn_activity.h"

#include <assert.h>
#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  One engine's answer.
typedef struct {
    int id;          //  engine id
    bool known;      //  it answered with bn_running
    char *msg_id;    //  the request it runs, or NULL
    char *what;      //  its command or function, one line
    time_t started;  //  when it began (UTC seconds), or 0
    double fraction; //  sub-second part of started
    int queued;      //  waiting behind it, or -1
} s_engine_t;

struct _bn_activity_t {
    s_engine_t *engines; //  sorted by id
    size_t count;
};

//  Text on one line: control characters become spaces, newlines "; ".
static char *
s_one_line (const char *text)
{
    size_t length = strlen (text);
    char *line = malloc (2 * length + 1);
    if (!line)
        return NULL;
    size_t out = 0;
    for (size_t in = 0; in < length; in++) {
        unsigned char c = (unsigned char)text[in];
        if (c == '\n') {
            if (in + 1 < length) {
                line[out++] = ';';
                line[out++] = ' ';
            }
        } else
            line[out++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    line[out] = 0;
    return line;
}

//  Parse an ISO-8601 UTC date ("2026-11-25T11:26:12.155712Z"); 0 on
//  failure.
static time_t
s_parse_date (const char *text, double *fraction)
{
    struct tm tm;
    memset (&tm, 0, sizeof tm);
    const char *rest = text ? strptime (text, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest)
        return 0;
    *fraction = *rest == '.' ? strtod (rest, NULL) : 0;
    return timegm (&tm);
}

static void
s_read (s_engine_t *engine, const char *content)
{
    engine->queued = -1;
    json_t *root = content ? json_loads (content, 0, NULL) : NULL;
    json_t *running = json_object_get (root, "bn_running");
    json_t *queued = json_object_get (root, "bn_queued");
    if (running && json_is_integer (queued)) {
        engine->known = true;
        engine->queued = (int)json_integer_value (queued);
    }
    if (json_is_object (running)) {
        const char *msg_id =
            json_string_value (json_object_get (running, "msg_id"));
        const char *code =
            json_string_value (json_object_get (running, "code"));
        const char *function =
            json_string_value (json_object_get (running, "function"));
        engine->msg_id = msg_id ? strdup (msg_id) : NULL;
        if (code)
            engine->what = s_one_line (code);
        else if (function)
            engine->what = zsys_sprintf ("%s()", function);
        else
            engine->what = strdup ("");
        engine->started = s_parse_date (
            json_string_value (json_object_get (running, "started")),
            &engine->fraction);
    }
    json_decref (root);
}

static int
s_compare (const void *a, const void *b)
{
    int left = ((const s_engine_t *)a)->id;
    int right = ((const s_engine_t *)b)->id;
    return (left > right) - (left < right);
}

bn_activity_t *
bn_activity_new (bn_client_t *client, bn_idset_t *ids, double timeout,
                 int *error)
{
    assert (client);
    int rc = BN_ENOMEM;
    bn_activity_t *self = calloc (1, sizeof *self);
    bn_view_t *view = self ? bn_view_new (client, BN_VIEW_DIRECT) : NULL;
    bn_result_t *result = NULL;
    if (view) {
        rc = bn_view_set_targets (view, ids);
        if (rc == 0)
            rc = bn_view_kernel_info (view, timeout, &result);
    }
    size_t count = result ? bn_result_count (result) : 0;
    if (rc == 0) {
        self->engines = calloc (count + 1, sizeof *self->engines);
        if (!self->engines)
            rc = BN_ENOMEM;
    }
    for (size_t index = 0; rc == 0 && index < count; index++) {
        s_engine_t *engine = &self->engines[index];
        engine->id = bn_result_engine_id (result, index);
        engine->queued = -1;
        if (bn_result_status (result, index) == 0)
            s_read (engine, bn_result_content (result, index));
    }
    if (rc == 0) {
        self->count = count;
        qsort (self->engines, count, sizeof *self->engines, s_compare);
    }
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    if (rc != 0)
        bn_activity_destroy (&self);
    if (error)
        *error = rc;
    return self;
}

void
bn_activity_destroy (bn_activity_t **self_p)
{
    assert (self_p);
    bn_activity_t *self = *self_p;
    if (self) {
        for (size_t index = 0; index < self->count; index++) {
            free (self->engines[index].msg_id);
            free (self->engines[index].what);
        }
        free (self->engines);
        free (self);
        *self_p = NULL;
    }
}

static s_engine_t *
s_find (bn_activity_t *self, int id)
{
    s_engine_t key = {.id = id};
    return bsearch (&key, self->engines, self->count, sizeof *self->engines,
                    s_compare);
}

bool
bn_activity_known (bn_activity_t *self, int id)
{
    assert (self);
    s_engine_t *engine = s_find (self, id);
    return engine && engine->known;
}

const char *
bn_activity_msg_id (bn_activity_t *self, int id)
{
    assert (self);
    s_engine_t *engine = s_find (self, id);
    return engine ? engine->msg_id : NULL;
}

const char *
bn_activity_what (bn_activity_t *self, int id)
{
    assert (self);
    s_engine_t *engine = s_find (self, id);
    return engine && engine->msg_id ? engine->what : NULL;
}

const char *
bn_activity_since (bn_activity_t *self, int id, char *buf, size_t size,
                   double *age)
{
    assert (self);
    assert (buf);
    s_engine_t *engine = s_find (self, id);
    if (!engine || !engine->msg_id || !engine->started)
        return NULL;
    time_t now = time (NULL);
    struct tm then, today;
    localtime_r (&engine->started, &then);
    localtime_r (&now, &today);
    bool same_day =
        then.tm_year == today.tm_year && then.tm_yday == today.tm_yday;
    strftime (buf, size, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &then);
    if (age) {
        double elapsed = zclock_time () / 1000.0 -
                         ((double)engine->started + engine->fraction);
        *age = elapsed > 0 ? elapsed : 0;
    }
    return buf;
}

int
bn_activity_queued (bn_activity_t *self, int id)
{
    assert (self);
    s_engine_t *engine = s_find (self, id);
    return engine ? engine->queued : -1;
}

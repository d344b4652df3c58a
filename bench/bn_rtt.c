/*  bn-rtt: round-trip latency of one apply through a controller's mux, and
    the bare ZeroMQ floor for the same topology and frames.  */
#include "bn_log.h"
#include "bn_msg.h"
#include "bn_msgtypes.h"
#include "bn_pickle.h"
#include "bn_value.h"

#include <czmq.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int iterations; //  timed round trips
    int warmup;     //  untimed round trips first
    size_t size;    //  bytes in the argument buffer
} s_options_t;

static int
s_compare (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void
s_report (const char *label, double *samples, int count)
{
    qsort (samples, (size_t)count, sizeof *samples, s_compare);
    double sum = 0;
    for (int i = 0; i < count; i++)
        sum += samples[i];
    printf ("%-28s n=%d  median %.1f us  p10 %.1f us  p90 %.1f us  "
            "mean %.1f us\n",
            label, count, samples[count / 2], samples[count / 10],
            samples[count * 9 / 10], sum / count);
}

//  Bare ZeroMQ: a relay thread swapping the first two frames between two
//  ROUTERs, and an echo engine ROUTER that sends every frame back.
static void
s_relay_actor (zsock_t *pipe, void *args)
{
    int *ports = args;
    zsock_t *front = zsock_new (ZMQ_ROUTER);
    zsock_t *back = zsock_new (ZMQ_ROUTER);
    zsock_set_identity (back, "mux_out");
    ports[0] = zsock_bind (front, "tcp://127.0.0.1:*");
    ports[1] = zsock_bind (back, "tcp://127.0.0.1:*");
    zsock_signal (pipe, 0);
    zpoller_t *poller = zpoller_new (pipe, front, back, NULL);
    while (true) {
        zsock_t *which = zpoller_wait (poller, -1);
        if (which == pipe || !which)
            break;
        zsock_t *out = which == front ? back : front;
        zmq_msg_t first, second, frame;
        zmq_msg_init (&first);
        zmq_msg_init (&second);
        zmq_msg_recv (&first, zsock_resolve (which), 0);
        zmq_msg_recv (&second, zsock_resolve (which), 0);
        int more = zmq_msg_more (&second);
        zmq_msg_send (&second, zsock_resolve (out), ZMQ_SNDMORE);
        zmq_msg_send (&first, zsock_resolve (out), more ? ZMQ_SNDMORE : 0);
        while (more) {
            zmq_msg_init (&frame);
            zmq_msg_recv (&frame, zsock_resolve (which), 0);
            more = zmq_msg_more (&frame);
            zmq_msg_send (&frame, zsock_resolve (out), more ? ZMQ_SNDMORE : 0);
        }
    }
    zpoller_destroy (&poller);
    zsock_destroy (&front);
    zsock_destroy (&back);
}

static void
s_echo_actor (zsock_t *pipe, void *args)
{
    const char *endpoint = args;
    zsock_t *shell = zsock_new (ZMQ_ROUTER);
    zsock_set_identity (shell, "engine-0");
    zsock_connect (shell, "%s", endpoint);
    zsock_signal (pipe, 0);
    zpoller_t *poller = zpoller_new (pipe, shell, NULL);
    while (zpoller_wait (poller, -1) == shell) {
        int more = 1;
        while (more) {
            zmq_msg_t frame;
            zmq_msg_init (&frame);
            zmq_msg_recv (&frame, zsock_resolve (shell), 0);
            more = zmq_msg_more (&frame);
            zmq_msg_send (&frame, zsock_resolve (shell),
                          more ? ZMQ_SNDMORE : 0);
        }
    }
    zpoller_destroy (&poller);
    zsock_destroy (&shell);
}

static int
s_floor (s_options_t *options)
{
    int ports[2];
    zactor_t *relay = zactor_new (s_relay_actor, ports);
    if (ports[0] < 0 || ports[1] < 0) {
        fprintf (stderr, "bn-rtt: cannot bind the relay\n");
        return 1;
    }
    char front[64], back[64];
    snprintf (front, sizeof front, "tcp://127.0.0.1:%d", ports[0]);
    snprintf (back, sizeof back, "tcp://127.0.0.1:%d", ports[1]);
    zactor_t *echo = zactor_new (s_echo_actor, back);
    zsock_t *client = zsock_new_dealer (front);
    //  the relay drops messages until the echo engine has connected: probe
    zsock_set_rcvtimeo (client, 200);
    for (int tries = 0; tries < 50; tries++) {
        zstr_sendm (client, "engine-0");
        zstr_send (client, "probe");
        zmsg_t *reply = zmsg_recv (client);
        if (reply) {
            zmsg_destroy (&reply);
            break;
        }
    }
    zsock_set_rcvtimeo (client, -1);

    char *payload = calloc (1, options->size ? options->size : 1);
    double *samples = calloc ((size_t)options->iterations, sizeof *samples);
    const char *header = "{\"msg_id\":\"00000000-0000000000000000_1_1\","
                         "\"msg_type\":\"apply_request\",\"username\":\"u\","
                         "\"session\":\"00000000-0000000000000000\",\"date\":"
                         "\"2026-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}";
    for (int i = -options->warmup; i < options->iterations; i++) {
        int64_t start = zclock_usecs ();
        zmsg_t *msg = zmsg_new ();
        zmsg_addstr (msg, "engine-0");
        zmsg_addstr (msg, BN_DELIM);
        zmsg_addstr (msg, "0123456789abcdef0123456789abcdef"
                          "0123456789abcdef0123456789abcdef");
        zmsg_addstr (msg, header);
        zmsg_addstr (msg, "{}");
        zmsg_addstr (msg, "{}");
        zmsg_addstr (msg, "{}");
        zmsg_addmem (msg, payload, options->size);
        zmsg_send (&msg, client);
        msg = zmsg_recv (client);
        zmsg_destroy (&msg);
        if (i >= 0)
            samples[i] = (double)(zclock_usecs () - start);
    }
    s_report ("bare zmq relay round trip", samples, options->iterations);
    free (samples);
    free (payload);
    zsock_destroy (&client);
    zactor_destroy (&echo);
    zactor_destroy (&relay);
    return 0;
}

//  The first registered engine's uuid, from a connection_request.
static char *
s_first_engine (zsock_t *query, bn_session_t *session, const char *want_id)
{
    bn_msg_t *request = bn_msg_new (session, BN_MSG_CONNECTION_REQUEST);
    bn_msg_send (&request, zsock_resolve (query), session);
    zsock_set_rcvtimeo (query, 5000);
    bn_msg_t *reply = bn_msg_recv (zsock_resolve (query));
    if (!reply)
        return NULL;
    json_t *engines = json_object_get (bn_msg_content (reply), "engines");
    const char *key;
    json_t *uuid;
    char *found = NULL;
    json_object_foreach (engines, key, uuid)
    {
        if (!found && (!want_id || strcmp (key, want_id) == 0))
            found = strdup (json_string_value (uuid));
    }
    bn_msg_destroy (&reply);
    return found;
}

static int
s_mux (s_options_t *options, const char *path, const char *engine_id,
       bool stock)
{
    char *text = NULL;
    zfile_t *file = zfile_new (NULL, path);
    if (file && zfile_input (file) == 0) {
        zchunk_t *chunk = zfile_read (file, zfile_cursize (file), 0);
        text = strndup ((char *)zchunk_data (chunk), zchunk_size (chunk));
        zchunk_destroy (&chunk);
    }
    zfile_destroy (&file);
    json_t *info = text ? json_loads (text, 0, NULL) : NULL;
    free (text);
    if (!info) {
        fprintf (stderr, "bn-rtt: cannot read %s\n", path);
        return 1;
    }
    const char *interface =
        json_string_value (json_object_get (info, "interface"));
    int registration =
        (int)json_integer_value (json_object_get (info, "registration"));
    int mux_port = (int)json_integer_value (json_object_get (info, "mux"));
    bn_session_t *session = bn_session_new (
        json_string_value (json_object_get (info, "key")), NULL);
    zsock_t *query = zsock_new_dealer (NULL);
    zsock_connect (query, "%s:%d", interface, registration);
    zsock_t *mux = zsock_new_dealer (NULL);
    zsock_connect (mux, "%s:%d", interface, mux_port);
    zsock_set_rcvtimeo (mux, 10000);
    json_decref (info);

    char *uuid = s_first_engine (query, session, engine_id);
    if (!uuid) {
        fprintf (stderr, "bn-rtt: no engine registered\n");
        return 1;
    }
    char *payload = calloc (1, options->size ? options->size : 1);
    double *samples = calloc ((size_t)options->iterations, sizeof *samples);
    int failures = 0;
    for (int i = -options->warmup; i < options->iterations; i++) {
        int64_t start = zclock_usecs ();
        bn_value_t *args = bn_value_new_list ();
        bn_value_append (args, bn_value_new_bytes (payload, options->size));
        zmsg_t *frames =
            stock ? bn_apply_pack_global ("builtins", "len", args, NULL)
                  : bn_apply_pack_reference ("echo", args, NULL);
        bn_value_destroy (&args);
        bn_msg_t *request = bn_msg_new (session, BN_MSG_APPLY_REQUEST);
        bn_msg_push_ident (request, uuid, strlen (uuid));
        zframe_t *frame;
        while ((frame = zmsg_pop (frames))) {
            bn_msg_add_buffer (request, zframe_data (frame),
                               zframe_size (frame));
            zframe_destroy (&frame);
        }
        zmsg_destroy (&frames);
        bn_msg_send (&request, zsock_resolve (mux), session);
        bn_msg_t *reply = bn_msg_recv (zsock_resolve (mux));
        if (!reply) {
            fprintf (stderr, "bn-rtt: no reply within 10 s\n");
            return 1;
        }
        const char *status = json_string_value (
            json_object_get (bn_msg_content (reply), "status"));
        if (bn_msg_verify (reply, session, true) != 0 || !status ||
            strcmp (status, "ok") != 0)
            failures++;
        bn_msg_destroy (&reply);
        if (i >= 0)
            samples[i] = (double)(zclock_usecs () - start);
    }
    char label[64];
    snprintf (label, sizeof label, "apply via mux (%s engine)",
              stock ? "stock" : "banyan");
    s_report (label, samples, options->iterations);
    if (failures)
        printf ("%d replies were not ok\n", failures);
    free (samples);
    free (payload);
    free (uuid);
    zsock_destroy (&mux);
    zsock_destroy (&query);
    bn_session_destroy (&session);
    return failures ? 1 : 0;
}

static void
s_usage (FILE *out)
{
    fprintf (out,
             "Usage: bn-rtt floor [OPTIONS]\n"
             "       bn-rtt mux --file CLIENT_JSON [--engine ID] [--stock] "
             "[OPTIONS]\n"
             "Round-trip latency of one apply through a controller's mux,\n"
             "or through a bare ZeroMQ relay of the same shape (floor).\n\n"
             "  -n, --iterations N  timed round trips (1000)\n"
             "  -w, --warmup N      untimed round trips first (200)\n"
             "  -s, --size BYTES    argument size (8)\n"
             "  -f, --file PATH     client connection file\n"
             "  -e, --engine ID     engine id to use (first registered)\n"
             "      --stock         the engine is a stock ipengine "
             "(applies builtins.len)\n\n"
             "Examples:\n"
             "  bn-rtt floor -n 5000\n"
             "  bn-rtt mux -f ~/.banyan/profile_default/security/"
             "ipcontroller-client.json\n");
}

int
main (int argc, char **argv)
{
    s_options_t options = {1000, 200, 8};
    const char *file = NULL, *engine = NULL;
    bool stock = false;
    static struct option longopts[] = {
        {"iterations", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"size", required_argument, NULL, 's'},
        {"file", required_argument, NULL, 'f'},
        {"engine", required_argument, NULL, 'e'},
        {"stock", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long (argc, argv, "n:w:s:f:e:h", longopts, NULL)) !=
           -1) {
        switch (opt) {
        case 'n':
            options.iterations = atoi (optarg);
            break;
        case 'w':
            options.warmup = atoi (optarg);
            break;
        case 's':
            options.size = (size_t)atol (optarg);
            break;
        case 'f':
            file = optarg;
            break;
        case 'e':
            engine = optarg;
            break;
        case 'S':
            stock = true;
            break;
        case 'h':
            s_usage (stdout);
            return 0;
        default:
            s_usage (stderr);
            return 2;
        }
    }
    if (optind >= argc || options.iterations < 1) {
        s_usage (stderr);
        return 2;
    }
    zsys_init ();
    if (strcmp (argv[optind], "floor") == 0)
        return s_floor (&options);
    if (strcmp (argv[optind], "mux") == 0 && file)
        return s_mux (&options, file, engine, stock);
    s_usage (stderr);
    return 2;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_wire: small shared pieces of the IPython Parallel protocol.  */
#include "bn_wire.h"

#include "bn_msgtypes.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *
bn_wire_error (const char *ename, const char *evalue, json_t *engine_info,
               json_t *traceback)
{
    if (!traceback) {
        char line[1024];
        snprintf (line, sizeof line, "%s: %s", ename, evalue);
        traceback = json_pack ("[s]", line);
    }
    if (!engine_info)
        engine_info = json_object ();
    return json_pack ("{s:s, s:s, s:s, s:o, s:o}", "status", "error", "ename",
                      ename, "evalue", evalue, "traceback", traceback,
                      "engine_info", engine_info);
}

json_t *
bn_wire_errorf (const char *ename, json_t *engine_info, const char *format, ...)
{
    char evalue[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (evalue, sizeof evalue, format, args);
    va_end (args);
    return bn_wire_error (ename, evalue, engine_info, NULL);
}

int
bn_wire_mark_broadcast (json_t *metadata, const char *original, bool coalescing)
{
    int rc = json_object_set_new (metadata, BN_MD_IS_BROADCAST, json_true ());
    rc |= json_object_set_new (metadata, BN_MD_IS_COALESCING,
                               json_boolean (coalescing));
    rc |= json_object_set_new (metadata, BN_MD_ORIGINAL_MSG_ID,
                               json_string (original));
    return rc ? -1 : 0;
}

int
bn_wire_reply_type (const char *request_type, char *buf, size_t size)
{
    size_t len = strlen (request_type);
    const char *suffix = "_request";
    size_t slen = strlen (suffix);
    int written;
    if (len >= slen && strcmp (request_type + len - slen, suffix) == 0)
        written =
            snprintf (buf, size, "%.*s_reply", (int)(len - slen), request_type);
    else
        written = snprintf (buf, size, "%s_reply", request_type);
    return written < 0 || (size_t)written >= size ? -1 : 0;
}

int
bn_wire_url (const char *interface, int port, char *buf, size_t size)
{
    int written = snprintf (buf, size, "%s:%d", interface, port);
    return written < 0 || (size_t)written >= size ? -1 : 0;
}

int
bn_wire_endpoint_port (const char *endpoint)
{
    const char *colon = endpoint ? strrchr (endpoint, ':') : NULL;
    if (!colon || !colon[1])
        return -1;
    char *end;
    long port = strtol (colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535)
        return -1;
    return (int)port;
}

int
bn_wire_bind (zsock_t *sock, const char *endpoint, int wait_ms)
{
    if (bn_wire_endpoint_port (endpoint) <= 0)
        wait_ms = 0;
    int64_t give_up = zclock_mono () + wait_ms;
    while (zsock_bind (sock, "%s", endpoint) < 0) {
        if (errno != EADDRINUSE || zclock_mono () >= give_up)
            return -1;
        zclock_sleep (20);
    }
    return 0;
}

int
bn_wire_tcp_bind_endpoint (char *buf, size_t size, const char *ip, int port,
                           int lowest, int highest)
{
    assert (buf);
    assert (ip);
    bool ranged = lowest > 0 && highest >= lowest;
    if (port > 0 && ranged && (port < lowest || port > highest))
        port = 0;
    int length;
    if (port > 0)
        length = snprintf (buf, size, "tcp://%s:%d", ip, port);
    else if (ranged)
        length = snprintf (buf, size, "tcp://%s:*[%d-%d]", ip, lowest, highest);
    else
        //  port 0 lets the system pick: czmq's own search for "*" tries
        //  every port from 49152 up, which is slow with many sockets
        length = snprintf (buf, size, "tcp://%s:0", ip);
    return length < 0 || (size_t)length >= size ? -1 : 0;
}

void
bn_wire_repr (json_t *value, char *buf, size_t size)
{
    size_t len = strlen (buf);
    if (len >= size)
        return;
    if (json_is_string (value))
        snprintf (buf + len, size - len, "'%s'", json_string_value (value));
    else if (json_is_integer (value))
        snprintf (buf + len, size - len, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (value));
    else if (json_is_true (value))
        snprintf (buf + len, size - len, "True");
    else if (json_is_false (value))
        snprintf (buf + len, size - len, "False");
    else if (json_is_null (value))
        snprintf (buf + len, size - len, "None");
    else {
        char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf (buf + len, size - len, "%s", text ? text : "?");
        free (text);
    }
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_wire: small pieces of the IPython Parallel protocol that several
    processes build: error content (wrap_exception), reply type names,
    endpoint strings.  */
#ifndef BN_WIRE_H_INCLUDED
#define BN_WIRE_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

//  Milliseconds a bind keeps trying a port held by a process still
//  closing (a port reused from the last run's connection files).
#define BN_WIRE_REBIND_WAIT 2000

//  Reply content as IPython Parallel's wrap_exception makes it:
//  {"status": "error", "ename", "evalue", "traceback": [...],
//  "engine_info": {...}}. engine_info is taken (NULL gives {}); traceback
//  is one line "ename: evalue" unless tb (taken) is given. Returns NULL on
//  allocation failure.
json_t *bn_wire_error (const char *ename, const char *evalue,
                       json_t *engine_info, json_t *traceback);

//  Same, with a printf-style evalue.
json_t *bn_wire_errorf (const char *ename, json_t *engine_info,
                        const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

//  Mark metadata as a reply to the broadcast whose msg_id is original:
//  is_broadcast true, is_coalescing, original_msg_id. Returns -1 on
//  allocation failure.
int bn_wire_mark_broadcast (json_t *metadata, const char *original,
                            bool coalescing);

//  The reply type of a request type: "apply_request" gives "apply_reply";
//  a type not ending in "_request" gets "_reply" appended. Writes into buf
//  (size bytes); returns -1 if it does not fit.
int bn_wire_reply_type (const char *request_type, char *buf, size_t size);

//  "tcp://127.0.0.1" + 5555 gives "tcp://127.0.0.1:5555" in buf; -1 if it
//  does not fit.
int bn_wire_url (const char *interface, int port, char *buf, size_t size);

//  Append Python's repr of a JSON value to the string in buf (size bytes,
//  truncated to fit): 'text', 42, True, False, None; other values as
//  compact JSON. For error texts worded as 7.1.0 words them.
void bn_wire_repr (json_t *value, char *buf, size_t size);

//  The port a bound endpoint ends with ("tcp://127.0.0.1:41235" gives
//  41235), or -1.
int bn_wire_endpoint_port (const char *endpoint);

//  Bind sock to endpoint, trying again for up to wait_ms while the
//  address is in use (a fixed port only: a port picked from a range or by
//  the system is not waited for). Returns 0, or -1 with errno set.
int bn_wire_bind (zsock_t *sock, const char *endpoint, int wait_ms);

//  The endpoint to bind a TCP socket to on ip, in buf: port when it is
//  > 0 and within the range, else a free port of lowest..highest when a
//  range is given (lowest > 0: czmq's "tcp://IP:*[LO-HI]"), else a port
//  the system picks. Returns -1 if it does not fit.
int bn_wire_tcp_bind_endpoint (char *buf, size_t size, const char *ip, int port,
                               int lowest, int highest);

#endif

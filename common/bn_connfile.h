/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_connfile: IPython Parallel 7.1.0 connection files (doc/wire.md 2),
    read by engines and clients and written by the controller.  */
#ifndef BN_CONNFILE_H_INCLUDED
#define BN_CONNFILE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

typedef struct _bn_connfile_t bn_connfile_t;

typedef enum {
    BN_CONNFILE_CLIENT, //  ipcontroller-client.json
    BN_CONNFILE_ENGINE  //  ipcontroller-engine.json
} bn_connfile_kind_t;

//  Create an empty connection file of this kind for the controller to
//  fill: interface tcp://127.0.0.1, this host as location, json packing,
//  hmac-sha256, ssh "", task_scheme leastload, empty key, no CURVE key,
//  every port 0 (unset). Returns NULL if out of memory.
bn_connfile_t *bn_connfile_new (bn_connfile_kind_t kind);

//  Destroy a connection file and NULL the caller's reference; NULL-safe.
void bn_connfile_destroy (bn_connfile_t **self_p);

//  Read and check a connection file; its kind is taken from its keys (an
//  engine file has hb_ping, hb_pong and a broadcast list). Returns NULL if
//  the file cannot be read, is not JSON, lacks a key its kind requires,
//  has a value of the wrong type, or uses a pack/unpack other than json or
//  a signature_scheme other than hmac-sha256; the reason goes to err
//  (errsize bytes, may be NULL).
bn_connfile_t *bn_connfile_load (const char *path, char *err, size_t errsize);

//  As bn_connfile_load, from JSON text (e.g. $IPP_CONNECTION_INFO).
bn_connfile_t *bn_connfile_parse (const char *json_text, char *err,
                                  size_t errsize);

//  Write every key of this kind as IPython Parallel does, with mode 0600,
//  through a temporary file renamed into place, creating missing parent
//  folders with mode 0700. Returns 0, or -1 (logged) if a port is unset,
//  a required string is missing, or the file cannot be written.
int bn_connfile_save (bn_connfile_t *self, const char *path);

//  Path "<profile_dir>/security/ipcontroller[-<cluster_id>]-<kind>.json",
//  malloc'd for the caller to free; cluster_id NULL or "" means none.
//  Returns NULL if out of memory.
char *bn_connfile_path (const char *profile_dir, const char *cluster_id,
                        bn_connfile_kind_t kind);

//  New session key, 8 hex digits, "-", 24 hex digits, from libsodium's
//  randombytes, malloc'd; NULL if out of memory.
char *bn_connfile_new_key (void);

//  Which kind of file this is.
bn_connfile_kind_t bn_connfile_kind (bn_connfile_t *self);

//  Port by key name ("registration", "control", "mux", "task", "iopub",
//  "hb_ping", "hb_pong", "notification"), or -1 if the name is unknown or
//  not part of this kind of file, 0 if unset.
int bn_connfile_port (bn_connfile_t *self, const char *name);

//  URL of a port by key name, e.g. "tcp://127.0.0.1:42249", malloc'd.
//  A wildcard interface (tcp://* or tcp://0.0.0.0) becomes location, or
//  127.0.0.1 when location is empty or this host, as the Python peers do.
//  Returns NULL if the port is unknown or unset, or out of memory.
char *bn_connfile_url (bn_connfile_t *self, const char *name);

//  Number of broadcast ports: 2^depth in an engine file, 1 in a client one.
size_t bn_connfile_broadcast_count (bn_connfile_t *self);

//  The index'th broadcast port, or -1 if index is out of range.
int bn_connfile_broadcast (bn_connfile_t *self, size_t index);

//  URL of the index'th broadcast port, malloc'd; NULL if index is out of
//  range or out of memory.
char *bn_connfile_broadcast_url (bn_connfile_t *self, size_t index);

//  String values, owned by the connection file. curve_serverkey is NULL
//  when the file holds null; task_scheme is NULL in an engine file.
const char *bn_connfile_interface (bn_connfile_t *self);
const char *bn_connfile_key (bn_connfile_t *self);
const char *bn_connfile_signature_scheme (bn_connfile_t *self);
const char *bn_connfile_location (bn_connfile_t *self);
const char *bn_connfile_ssh (bn_connfile_t *self);
const char *bn_connfile_task_scheme (bn_connfile_t *self);
const char *bn_connfile_pack (bn_connfile_t *self);
const char *bn_connfile_unpack (bn_connfile_t *self);
const char *bn_connfile_curve_serverkey (bn_connfile_t *self);

//  banyan's key of a host node's engine file (doc/wire.md 4.1): true when
//  the engines of one process may share one connection per channel, the
//  engine named by a frame after the shared socket's routing id. A stock
//  hub never writes it and a stock engine ignores it.
#define BN_CONNFILE_SHARED_CHANNELS "bn_shared_channels"
bool bn_connfile_shared_channels (bn_connfile_t *self);
void bn_connfile_set_shared_channels (bn_connfile_t *self, bool shared);

//  Set a port by key name; returns -1 if the name is not part of this kind
//  of file or the port is outside 1..65535.
int bn_connfile_set_port (bn_connfile_t *self, const char *name, int port);

//  Set the broadcast ports (a client file takes exactly one); returns -1
//  if count does not fit the kind, a port is outside 1..65535, or out of
//  memory.
int bn_connfile_set_broadcast (bn_connfile_t *self, const int *ports,
                               size_t count);

//  String setters copy their argument; each returns -1 if out of memory.
//  curve_serverkey NULL writes null; task_scheme is ignored by engine
//  files.
int bn_connfile_set_interface (bn_connfile_t *self, const char *interface);
int bn_connfile_set_key (bn_connfile_t *self, const char *key);
int bn_connfile_set_signature_scheme (bn_connfile_t *self, const char *scheme);
int bn_connfile_set_location (bn_connfile_t *self, const char *location);
int bn_connfile_set_ssh (bn_connfile_t *self, const char *ssh);
int bn_connfile_set_task_scheme (bn_connfile_t *self, const char *scheme);
int bn_connfile_set_pack (bn_connfile_t *self, const char *pack);
int bn_connfile_set_unpack (bn_connfile_t *self, const char *unpack);
int bn_connfile_set_curve_serverkey (bn_connfile_t *self,
                                     const char *serverkey);

#endif

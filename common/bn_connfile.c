/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_connfile: the JSON connection files ipcontroller writes and ipengine
    and the Python Client read, checked key by key so a bad file is an
    error message, never a crash.  */
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_error.h"
#include "bn_log.h"
#include "bn_path.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  Ports by key name, in the order IPython Parallel writes them
typedef enum {
    S_REGISTRATION,
    S_CONTROL,
    S_MUX,
    S_TASK,
    S_IOPUB,
    S_HB_PING,
    S_HB_PONG,
    S_NOTIFICATION,
    S_PORTS
} s_port_t;

static const char *s_port_names[S_PORTS] = {
    "registration", "control", "mux",     "task",
    "iopub",        "hb_ping", "hb_pong", "notification"};

struct _bn_connfile_t {
    bn_connfile_kind_t kind;
    int ports[S_PORTS];     //  0 = unset
    int *broadcast;         //  Broadcast ports
    size_t broadcast_count; //  2^depth (engine) or 1 (client)
    char *interface;        //  "tcp://127.0.0.1"
    char *key;              //  HMAC key, "" = no signing
    char *signature_scheme; //  Always hmac-sha256 once checked
    char *location;         //  Controller's host name
    char *ssh;              //  ssh server for tunnels, "" = none
    char *task_scheme;      //  Client files only
    char *pack;             //  Always json once checked
    char *unpack;           //  Always json once checked
    char *curve_serverkey;  //  Z85 public key, or NULL
    bool shared_channels;   //  a host node's: bn_shared_channels
};

//  True if the port key belongs in this kind of file.
static bool
s_port_in_kind (s_port_t port, bn_connfile_kind_t kind)
{
    if (port == S_HB_PING || port == S_HB_PONG)
        return kind == BN_CONNFILE_ENGINE;
    if (port == S_NOTIFICATION)
        return kind == BN_CONNFILE_CLIENT;
    return true;
}

static int
s_port_index (const char *name)
{
    for (int i = 0; i < S_PORTS; i++)
        if (strcmp (s_port_names[i], name) == 0)
            return i;
    return -1;
}

//  Replace *field with a copy of value (NULL allowed); -1 if out of memory.
static int
s_set_string (char **field, const char *value)
{
    char *copy = NULL;
    if (value && !(copy = strdup (value)))
        return -1;
    free (*field);
    *field = copy;
    return 0;
}

bn_connfile_t *
bn_connfile_new (bn_connfile_kind_t kind)
{
    assert (kind == BN_CONNFILE_CLIENT || kind == BN_CONNFILE_ENGINE);
    bn_connfile_t *self = calloc (1, sizeof (bn_connfile_t));
    if (!self)
        return NULL;
    self->kind = kind;
    char host[256] = "";
    if (gethostname (host, sizeof host - 1))
        host[0] = 0;
    if (s_set_string (&self->interface, "tcp://127.0.0.1") ||
        s_set_string (&self->key, "") ||
        s_set_string (&self->signature_scheme, "hmac-sha256") ||
        s_set_string (&self->location, host) || s_set_string (&self->ssh, "") ||
        s_set_string (&self->pack, "json") ||
        s_set_string (&self->unpack, "json") ||
        (kind == BN_CONNFILE_CLIENT &&
         s_set_string (&self->task_scheme, "leastload")))
        bn_connfile_destroy (&self);
    return self;
}

void
bn_connfile_destroy (bn_connfile_t **self_p)
{
    assert (self_p);
    bn_connfile_t *self = *self_p;
    if (self) {
        free (self->broadcast);
        free (self->interface);
        free (self->key);
        free (self->signature_scheme);
        free (self->location);
        free (self->ssh);
        free (self->task_scheme);
        free (self->pack);
        free (self->unpack);
        free (self->curve_serverkey);
        free (self);
        *self_p = NULL;
    }
}

//  Read a port number from a JSON value; -1 if it is not one.
static int
s_json_port (json_t *value)
{
    if (!json_is_integer (value))
        return -1;
    json_int_t port = json_integer_value (value);
    return port >= 1 && port <= 65535 ? (int)port : -1;
}

//  Copy a string key into *field. A missing key is an error if required,
//  else leaves fallback; null is accepted when nullable. Returns -1 with
//  the reason in err.
static int
s_read_string (json_t *root, const char *name, bool required, bool nullable,
               const char *fallback, char **field, char *err, size_t errsize)
{
    json_t *value = json_object_get (root, name);
    const char *text = fallback;
    if (!value) {
        if (required) {
            bn_error_set (err, errsize, "missing key '%s'", name);
            return -1;
        }
    } else if (json_is_string (value))
        text = json_string_value (value);
    else if (json_is_null (value) && nullable)
        text = fallback;
    else {
        bn_error_set (err, errsize, "'%s' must be a string", name);
        return -1;
    }
    if (s_set_string (field, text)) {
        bn_error_set (err, errsize, "out of memory");
        return -1;
    }
    return 0;
}

//  Check a parsed document and copy it into self; -1 with err set.
static int
s_read (bn_connfile_t *self, json_t *root, char *err, size_t errsize)
{
    if (!json_is_object (root)) {
        bn_error_set (err, errsize, "not a JSON object");
        return -1;
    }
    json_t *broadcast = json_object_get (root, "broadcast");
    bool engine = json_object_get (root, "hb_ping") ||
                  json_object_get (root, "hb_pong") ||
                  json_is_array (broadcast);
    self->kind = engine ? BN_CONNFILE_ENGINE : BN_CONNFILE_CLIENT;
    const char *kind_name = engine ? "engine" : "client";

    for (int i = 0; i < S_PORTS; i++) {
        if (!s_port_in_kind (i, self->kind))
            continue;
        json_t *value = json_object_get (root, s_port_names[i]);
        if (!value) {
            bn_error_set (err, errsize, "missing key '%s' (%s file)",
                          s_port_names[i], kind_name);
            return -1;
        }
        self->ports[i] = s_json_port (value);
        if (self->ports[i] < 0) {
            bn_error_set (err, errsize, "'%s' must be a port number (1-65535)",
                          s_port_names[i]);
            return -1;
        }
    }

    if (!broadcast) {
        bn_error_set (err, errsize, "missing key 'broadcast' (%s file)",
                      kind_name);
        return -1;
    }
    size_t count = engine ? json_array_size (broadcast) : 1;
    if (count == 0) {
        bn_error_set (err, errsize, "'broadcast' must list at least one port");
        return -1;
    }
    self->broadcast = calloc (count, sizeof (int));
    if (!self->broadcast) {
        bn_error_set (err, errsize, "out of memory");
        return -1;
    }
    self->broadcast_count = count;
    for (size_t i = 0; i < count; i++) {
        json_t *value = engine ? json_array_get (broadcast, i) : broadcast;
        self->broadcast[i] = s_json_port (value);
        if (self->broadcast[i] < 0) {
            bn_error_set (err, errsize,
                          engine
                              ? "'broadcast' must be a list of port numbers"
                              : "'broadcast' must be a port number (1-65535)");
            return -1;
        }
    }

    //  Which keys each peer insists on (doc/wire.md 2)
    if (s_read_string (root, "interface", true, false, NULL, &self->interface,
                       err, errsize) ||
        s_read_string (root, "signature_scheme", true, false, NULL,
                       &self->signature_scheme, err, errsize) ||
        s_read_string (root, "pack", true, false, NULL, &self->pack, err,
                       errsize) ||
        s_read_string (root, "unpack", true, false, NULL, &self->unpack, err,
                       errsize) ||
        s_read_string (root, "key", !engine, false, "", &self->key, err,
                       errsize) ||
        s_read_string (root, "ssh", !engine, true, "", &self->ssh, err,
                       errsize) ||
        s_read_string (root, "location", engine, true, "", &self->location, err,
                       errsize) ||
        s_read_string (root, "curve_serverkey", false, true, NULL,
                       &self->curve_serverkey, err, errsize))
        return -1;
    //  banyan's key: the engines of one process may share their channels
    json_t *shared = json_object_get (root, BN_CONNFILE_SHARED_CHANNELS);
    if (shared && !json_is_boolean (shared)) {
        bn_error_set (err, errsize,
                      "'" BN_CONNFILE_SHARED_CHANNELS
                      "' must be true or false");
        return -1;
    }
    self->shared_channels = json_is_true (shared);
    if (!engine && s_read_string (root, "task_scheme", true, false, NULL,
                                  &self->task_scheme, err, errsize))
        return -1;

    //  "" means no CURVE, as to IPython Parallel
    if (self->curve_serverkey && !*self->curve_serverkey) {
        free (self->curve_serverkey);
        self->curve_serverkey = NULL;
    }
    if (self->curve_serverkey && !bn_curve_key_valid (self->curve_serverkey)) {
        bn_error_set (err, errsize,
                      "'curve_serverkey' is not a CurveZMQ public key (40 "
                      "characters of Z85)");
        return -1;
    }
    if (!strstr (self->interface, "://")) {
        bn_error_set (err, errsize,
                      "interface '%s' is not a URL like tcp://127.0.0.1",
                      self->interface);
        return -1;
    }
    if (strcmp (self->pack, "json") || strcmp (self->unpack, "json")) {
        bn_error_set (err, errsize,
                      "pack '%s' / unpack '%s' is not supported: banyan speaks "
                      "only json",
                      self->pack, self->unpack);
        return -1;
    }
    if (strcmp (self->signature_scheme, "hmac-sha256")) {
        bn_error_set (
            err, errsize,
            "signature_scheme '%s' is not supported: banyan speaks only "
            "hmac-sha256",
            self->signature_scheme);
        return -1;
    }
    return 0;
}

//  Build a connection file from a parsed document, prefixing errors.
static bn_connfile_t *
s_from_json (json_t *root, const char *origin, char *err, size_t errsize)
{
    bn_connfile_t *self = calloc (1, sizeof (bn_connfile_t));
    if (!self) {
        bn_error_set (err, errsize, "%s: out of memory", origin);
        return NULL;
    }
    char reason[256] = "";
    if (s_read (self, root, reason, sizeof reason)) {
        bn_error_set (err, errsize, "%s: %s", origin, reason);
        bn_connfile_destroy (&self);
    }
    return self;
}

bn_connfile_t *
bn_connfile_parse (const char *json_text, char *err, size_t errsize)
{
    assert (json_text);
    json_error_t error;
    json_t *root = json_loads (json_text, 0, &error);
    if (!root) {
        bn_error_set (
            err, errsize,
            "connection info: not valid JSON: %s (line %d, column %d)",
            error.text, error.line, error.column);
        return NULL;
    }
    bn_connfile_t *self = s_from_json (root, "connection info", err, errsize);
    json_decref (root);
    return self;
}

bn_connfile_t *
bn_connfile_load (const char *path, char *err, size_t errsize)
{
    assert (path);
    //  Tell "missing" from "garbled", since clients retry on the former
    if (access (path, R_OK)) {
        bn_error_set (err, errsize, "%s: cannot read: %s", path,
                      strerror (errno));
        return NULL;
    }
    json_error_t error;
    json_t *root = json_load_file (path, 0, &error);
    if (!root) {
        bn_error_set (err, errsize,
                      "%s: not valid JSON: %s (line %d, column %d)", path,
                      error.text, error.line, error.column);
        return NULL;
    }
    bn_connfile_t *self = s_from_json (root, path, err, errsize);
    json_decref (root);
    return self;
}

//  The document IPython Parallel writes for this kind, in its key order.
static json_t *
s_to_json (bn_connfile_t *self)
{
    bool engine = self->kind == BN_CONNFILE_ENGINE;
    json_t *broadcast = NULL;
    if (engine) {
        broadcast = json_array ();
        for (size_t i = 0; broadcast && i < self->broadcast_count; i++) {
            json_t *port = json_integer (self->broadcast[i]);
            if (json_array_append_new (broadcast, port)) {
                json_decref (broadcast);
                broadcast = NULL;
            }
        }
    } else
        broadcast = json_integer (self->broadcast[0]);
    if (!broadcast)
        return NULL;
    json_t *curve = self->curve_serverkey ? json_string (self->curve_serverkey)
                                          : json_null ();
    json_t *root;
    if (engine)
        root = json_pack (
            "{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:s, s:o, "
            "s:s, s:s, s:s, s:s}",
            "ssh", self->ssh, "interface", self->interface, "registration",
            self->ports[S_REGISTRATION], "control", self->ports[S_CONTROL],
            "mux", self->ports[S_MUX], "task", self->ports[S_TASK], "iopub",
            self->ports[S_IOPUB], "hb_ping", self->ports[S_HB_PING], "hb_pong",
            self->ports[S_HB_PONG], "broadcast", broadcast, "key", self->key,
            "curve_serverkey", curve, "location", self->location, "pack",
            self->pack, "unpack", self->unpack, "signature_scheme",
            self->signature_scheme);
    else
        root = json_pack (
            "{s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:i, s:i, s:o, s:s, s:o, "
            "s:s, s:s, s:s, s:s}",
            "ssh", self->ssh, "interface", self->interface, "registration",
            self->ports[S_REGISTRATION], "control", self->ports[S_CONTROL],
            "mux", self->ports[S_MUX], "task", self->ports[S_TASK],
            "task_scheme", self->task_scheme, "iopub", self->ports[S_IOPUB],
            "notification", self->ports[S_NOTIFICATION], "broadcast", broadcast,
            "key", self->key, "curve_serverkey", curve, "location",
            self->location, "pack", self->pack, "unpack", self->unpack,
            "signature_scheme", self->signature_scheme);
    //  only a host node's file says it (a stock reader ignores the key)
    if (root && self->shared_channels &&
        json_object_set_new (root, BN_CONNFILE_SHARED_CHANNELS, json_true ())) {
        json_decref (root);
        root = NULL;
    }
    return root;
}

int
bn_connfile_save (bn_connfile_t *self, const char *path)
{
    assert (self);
    assert (path);
    for (int i = 0; i < S_PORTS; i++)
        if (s_port_in_kind (i, self->kind) && self->ports[i] == 0) {
            bn_log_error ("connection file %s: port '%s' is not set", path,
                          s_port_names[i]);
            return -1;
        }
    if (self->broadcast_count == 0) {
        bn_log_error ("connection file %s: no broadcast port", path);
        return -1;
    }
    json_t *root = s_to_json (self);
    char *text = root ? json_dumps (root, JSON_INDENT (2)) : NULL;
    json_decref (root);
    if (!text) {
        bn_log_error ("connection file %s: out of memory", path);
        return -1;
    }
    char tmp[PATH_MAX];
    int fd = -1;
    if (snprintf (tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        errno = ENAMETOOLONG;
    else if (bn_path_mkdir_for (path) == 0)
        fd = mkstemp (tmp);
    if (fd < 0) {
        bn_log_error ("cannot write connection file %s: %s", path,
                      strerror (errno));
        free (text);
        return -1;
    }
    size_t length = strlen (text), done = 0;
    int rc = fchmod (fd, 0600);
    while (rc == 0 && done < length) {
        ssize_t wrote = write (fd, text + done, length - done);
        if (wrote < 0 && errno != EINTR)
            rc = -1;
        else if (wrote > 0)
            done += (size_t)wrote;
    }
    if (rc == 0)
        rc = fsync (fd);
    if (close (fd) && rc == 0)
        rc = -1;
    if (rc == 0)
        rc = rename (tmp, path);
    if (rc) {
        bn_log_error ("cannot write connection file %s: %s", path,
                      strerror (errno));
        unlink (tmp);
    }
    free (text);
    return rc;
}

char *
bn_connfile_path (const char *profile_dir, const char *cluster_id,
                  bn_connfile_kind_t kind)
{
    assert (profile_dir);
    bool named = cluster_id && *cluster_id;
    size_t size = strlen (profile_dir) + (named ? strlen (cluster_id) : 0) + 64;
    char *path = malloc (size);
    if (path)
        snprintf (path, size, "%s/security/ipcontroller%s%s-%s.json",
                  profile_dir, named ? "-" : "", named ? cluster_id : "",
                  kind == BN_CONNFILE_ENGINE ? "engine" : "client");
    return path;
}

char *
bn_connfile_new_key (void)
{
    if (sodium_init () < 0)
        return NULL;
    unsigned char bytes[16];
    randombytes_buf (bytes, sizeof bytes);
    char hex[33];
    sodium_bin2hex (hex, sizeof hex, bytes, sizeof bytes);
    char *key = malloc (34);
    if (key)
        snprintf (key, 34, "%.8s-%s", hex, hex + 8);
    sodium_memzero (bytes, sizeof bytes);
    sodium_memzero (hex, sizeof hex);
    return key;
}

bn_connfile_kind_t
bn_connfile_kind (bn_connfile_t *self)
{
    assert (self);
    return self->kind;
}

int
bn_connfile_port (bn_connfile_t *self, const char *name)
{
    assert (self);
    assert (name);
    int index = s_port_index (name);
    if (index < 0 || !s_port_in_kind (index, self->kind))
        return -1;
    return self->ports[index];
}

//  interface + ":" + port, with a wildcard host made reachable.
static char *
s_url (bn_connfile_t *self, int port)
{
    const char *interface = self->interface;
    char rewritten[512];
    const char *sep = strstr (interface, "://");
    const char *host = sep ? sep + 3 : interface;
    if (strcmp (host, "*") == 0 || strcmp (host, "0.0.0.0") == 0) {
        char me[256] = "";
        if (gethostname (me, sizeof me - 1))
            me[0] = 0;
        bool local = !*self->location || strcmp (self->location, me) == 0;
        snprintf (rewritten, sizeof rewritten, "%.*s%s",
                  (int)(host - interface), interface,
                  local ? "127.0.0.1" : self->location);
        interface = rewritten;
    }
    size_t size = strlen (interface) + 8;
    char *url = malloc (size);
    if (url)
        snprintf (url, size, "%s:%d", interface, port);
    return url;
}

char *
bn_connfile_url (bn_connfile_t *self, const char *name)
{
    int port = bn_connfile_port (self, name);
    return port > 0 ? s_url (self, port) : NULL;
}

size_t
bn_connfile_broadcast_count (bn_connfile_t *self)
{
    assert (self);
    return self->broadcast_count;
}

int
bn_connfile_broadcast (bn_connfile_t *self, size_t index)
{
    assert (self);
    return index < self->broadcast_count ? self->broadcast[index] : -1;
}

char *
bn_connfile_broadcast_url (bn_connfile_t *self, size_t index)
{
    int port = bn_connfile_broadcast (self, index);
    return port > 0 ? s_url (self, port) : NULL;
}

const char *
bn_connfile_interface (bn_connfile_t *self)
{
    assert (self);
    return self->interface;
}

const char *
bn_connfile_key (bn_connfile_t *self)
{
    assert (self);
    return self->key;
}

const char *
bn_connfile_signature_scheme (bn_connfile_t *self)
{
    assert (self);
    return self->signature_scheme;
}

const char *
bn_connfile_location (bn_connfile_t *self)
{
    assert (self);
    return self->location;
}

const char *
bn_connfile_ssh (bn_connfile_t *self)
{
    assert (self);
    return self->ssh;
}

const char *
bn_connfile_task_scheme (bn_connfile_t *self)
{
    assert (self);
    return self->task_scheme;
}

const char *
bn_connfile_pack (bn_connfile_t *self)
{
    assert (self);
    return self->pack;
}

const char *
bn_connfile_unpack (bn_connfile_t *self)
{
    assert (self);
    return self->unpack;
}

const char *
bn_connfile_curve_serverkey (bn_connfile_t *self)
{
    assert (self);
    return self->curve_serverkey;
}

bool
bn_connfile_shared_channels (bn_connfile_t *self)
{
    assert (self);
    return self->shared_channels;
}

void
bn_connfile_set_shared_channels (bn_connfile_t *self, bool shared)
{
    assert (self);
    self->shared_channels = shared;
}

int
bn_connfile_set_port (bn_connfile_t *self, const char *name, int port)
{
    assert (self);
    assert (name);
    int index = s_port_index (name);
    if (index < 0 || !s_port_in_kind (index, self->kind) || port < 1 ||
        port > 65535)
        return -1;
    self->ports[index] = port;
    return 0;
}

int
bn_connfile_set_broadcast (bn_connfile_t *self, const int *ports, size_t count)
{
    assert (self);
    assert (ports || count == 0);
    if (count == 0 || (self->kind == BN_CONNFILE_CLIENT && count != 1))
        return -1;
    for (size_t i = 0; i < count; i++)
        if (ports[i] < 1 || ports[i] > 65535)
            return -1;
    int *copy = malloc (count * sizeof (int));
    if (!copy)
        return -1;
    memcpy (copy, ports, count * sizeof (int));
    free (self->broadcast);
    self->broadcast = copy;
    self->broadcast_count = count;
    return 0;
}

int
bn_connfile_set_interface (bn_connfile_t *self, const char *interface)
{
    assert (self);
    assert (interface);
    return s_set_string (&self->interface, interface);
}

int
bn_connfile_set_key (bn_connfile_t *self, const char *key)
{
    assert (self);
    assert (key);
    return s_set_string (&self->key, key);
}

int
bn_connfile_set_signature_scheme (bn_connfile_t *self, const char *scheme)
{
    assert (self);
    assert (scheme);
    return s_set_string (&self->signature_scheme, scheme);
}

int
bn_connfile_set_location (bn_connfile_t *self, const char *location)
{
    assert (self);
    assert (location);
    return s_set_string (&self->location, location);
}

int
bn_connfile_set_ssh (bn_connfile_t *self, const char *ssh)
{
    assert (self);
    assert (ssh);
    return s_set_string (&self->ssh, ssh);
}

int
bn_connfile_set_task_scheme (bn_connfile_t *self, const char *scheme)
{
    assert (self);
    assert (scheme);
    if (self->kind == BN_CONNFILE_ENGINE)
        return 0;
    return s_set_string (&self->task_scheme, scheme);
}

int
bn_connfile_set_pack (bn_connfile_t *self, const char *pack)
{
    assert (self);
    assert (pack);
    return s_set_string (&self->pack, pack);
}

int
bn_connfile_set_unpack (bn_connfile_t *self, const char *unpack)
{
    assert (self);
    assert (unpack);
    return s_set_string (&self->unpack, unpack);
}

int
bn_connfile_set_curve_serverkey (bn_connfile_t *self, const char *serverkey)
{
    assert (self);
    return s_set_string (&self->curve_serverkey, serverkey);
}

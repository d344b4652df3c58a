/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client: one connection to a controller, its life cycle: connecting
    (connection file, sockets, the connection_request handshake), the
    engine table it starts from, the I/O thread it then hands its sockets
    to (bn_iothread), and closing. The hub's queries are in
    bn_client_hub.c, reply decoding in bn_replies.c.

    Locking: the tracker's lock guards everything the threads share but
    the sockets, which only the I/O thread touches once it has started.  */
#include "bn_client_private.h"
#include "bn_config.h"
#include "bn_connfile.h"
#include "bn_curve.h"
#include "bn_log.h"
#include "bn_msgtypes.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define S_HEARTBEAT_MS 2000  //  ZMTP ping interval (query, broadcast)
#define S_HEARTBEAT_TTL 6000 //  no traffic this long: the peer is gone

struct _bn_client_t {
    atomic_int refs;              //  the client and its views
    bn_tracker_t *tracker;        //  requests waiting, the lock, the state
    bn_engines_t *engines;        //  the engine table (lock)
    bn_session_t *tx;             //  numbers outgoing messages (lock)
    char session_id[40];          //  our header.session
    bool has_port[BN_SOCK_COUNT]; //  the controller has this socket
    atomic_size_t dropped;        //  messages dropped
    bn_iothread_args_t io;        //  sockets, until the thread has them
    bn_iothread_t *iothread;      //  the I/O thread, once connected
};

static void
s_drop (bn_client_t *self, const char *why)
{
    atomic_fetch_add (&self->dropped, 1);
    bn_log_debug ("client: dropped a message: %s", why);
}

//  -------------------------------------------------------------------
//  Lifetime

void
bn_client_ref (bn_client_t *self)
{
    assert (self);
    atomic_fetch_add (&self->refs, 1);
}

static void
s_free (bn_client_t *self)
{
    bn_iothread_destroy (&self->iothread);
    if (self->io.context) {
        //  Sockets left over when the connection never completed
        for (int i = 0; i < BN_SOCK_COUNT; i++)
            if (self->io.sockets[i])
                zmq_close (self->io.sockets[i]);
        void *others[] = {self->io.iopub, self->io.notification,
                          self->io.monitor, self->io.bcast_monitor};
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
            if (others[i])
                zmq_close (others[i]);
        zmq_ctx_term (self->io.context);
    }
    bn_session_destroy (&self->io.rx);
    bn_session_destroy (&self->tx);
    bn_engines_destroy (&self->engines);
    bn_tracker_unref (&self->tracker);
    free (self);
}

void
bn_client_unref (bn_client_t **self_p)
{
    assert (self_p);
    bn_client_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (atomic_fetch_sub (&self->refs, 1) == 1)
        s_free (self);
}

bn_tracker_t *
bn_client_tracker (bn_client_t *self)
{
    assert (self);
    return self->tracker;
}

bn_engines_t *
bn_client_engines (bn_client_t *self)
{
    assert (self);
    return self->engines;
}

bn_session_t *
bn_client_tx_session (bn_client_t *self)
{
    assert (self);
    return self->tx;
}

bn_result_t *
bn_client_result_new (bn_client_t *self, size_t capacity)
{
    assert (self);
    bn_result_t *result = bn_result_new (self->tracker, capacity);
    if (result) {
        bn_client_ref (self);
        bn_result_set_client (result, self, bn_client_unref);
    }
    return result;
}

bool
bn_client_has_port (bn_client_t *self, bn_sock_t sock)
{
    assert (sock < BN_SOCK_COUNT);
    return self->has_port[sock];
}

int
bn_client_send (bn_client_t *self, bn_sock_t sock, bn_msg_t **msgs,
                size_t count)
{
    assert (self);
    assert (self->iothread);
    return bn_iothread_send (self->iothread, sock, msgs, count);
}

//  -------------------------------------------------------------------
//  Connecting

static const char *s_port_names[BN_SOCK_COUNT] = {
    "registration", "mux", "control", "task", "broadcast"};

//  A socket of type, a CURVE client of curve_server with our keys in cert
//  when the controller uses CURVE; NULL on failure.
static void *
s_socket (bn_client_t *self, int type, const char *curve_server, zcert_t *cert)
{
    void *socket = zmq_socket (self->io.context, type);
    if (!socket)
        return NULL;
    int zero = 0;
    zmq_setsockopt (socket, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt (socket, ZMQ_LINGER, &zero, sizeof zero);
    if (curve_server && bn_curve_client (socket, cert, curve_server)) {
        zmq_close (socket);
        return NULL;
    }
    return socket;
}

static int
s_connect (void *socket, const char *url)
{
    if (zmq_connect (socket, url) != 0) {
        bn_log_warn ("client: cannot connect to %s: %s", url,
                     zmq_strerror (errno));
        return -1;
    }
    return 0;
}

//  Create the sockets and connect them: subscribers first, so that they
//  are subscribed by the time the first request could produce output.
static int
s_open_sockets (bn_client_t *self, bn_connfile_t *cf)
{
    const char *server = bn_connfile_curve_serverkey (cf);
    //  our own keys only encrypt: the controller takes any
    zcert_t *cert = server ? zcert_new () : NULL;
    if (server && !cert) {
        bn_log_warn ("client: this libzmq cannot make CURVE keys");
        return BN_ECONNECT;
    }
    char *url = bn_connfile_url (cf, "iopub");
    char *notify = bn_connfile_url (cf, "notification");
    int rc = 0;
    if (!url || !notify)
        rc = BN_ECONNFILE;
    if (rc == 0) {
        self->io.iopub = s_socket (self, ZMQ_SUB, server, cert);
        self->io.notification = s_socket (self, ZMQ_SUB, server, cert);
        if (!self->io.iopub || !self->io.notification)
            rc = BN_ENOMEM;
    }
    if (rc == 0) {
        zmq_setsockopt (self->io.iopub, ZMQ_SUBSCRIBE, "", 0);
        zmq_setsockopt (self->io.notification, ZMQ_SUBSCRIBE, "", 0);
        if (s_connect (self->io.iopub, url) ||
            s_connect (self->io.notification, notify))
            rc = BN_ECONNFILE;
    }
    free (url);
    free (notify);
    for (int i = BN_SOCK_COUNT - 1; rc == 0 && i >= 0; i--) {
        url = i == BN_SOCK_BROADCAST ? bn_connfile_broadcast_url (cf, 0)
                                     : bn_connfile_url (cf, s_port_names[i]);
        if (!url) {
            if (i == BN_SOCK_QUERY || i == BN_SOCK_MUX || i == BN_SOCK_CONTROL)
                rc = BN_ECONNFILE;
            continue;
        }
        self->io.sockets[i] = s_socket (self, ZMQ_DEALER, server, cert);
        if (!self->io.sockets[i])
            rc = BN_ENOMEM;
        else if (i == BN_SOCK_QUERY) {
            //  A controller that vanishes without closing its connections
            //  (host down, network cut) is noticed by the ZMTP heartbeat;
            //  one that exits is noticed at once. Either way the monitor
            //  reports the disconnection.
            int ivl = S_HEARTBEAT_MS, ttl = S_HEARTBEAT_TTL;
            zmq_setsockopt (self->io.sockets[i], ZMQ_HEARTBEAT_IVL, &ivl,
                            sizeof ivl);
            zmq_setsockopt (self->io.sockets[i], ZMQ_HEARTBEAT_TIMEOUT, &ttl,
                            sizeof ttl);
            char endpoint[64];
            snprintf (endpoint, sizeof endpoint, "inproc://bn-client-mon-%p",
                      (void *)self);
            self->io.monitor = zmq_socket (self->io.context, ZMQ_PAIR);
            if (!self->io.monitor ||
                zmq_socket_monitor (self->io.sockets[i], endpoint,
                                    ZMQ_EVENT_DISCONNECTED |
                                        BN_CURVE_HANDSHAKE_EVENTS) != 0 ||
                zmq_connect (self->io.monitor, endpoint) != 0)
                rc = BN_ENOMEM;
        } else if (i == BN_SOCK_BROADCAST) {
            //  The broadcast scheduler can end or stop on its own (a tree
            //  node process): what was sent to it then fails instead of
            //  waiting for ever, whether it stops answering before or after
            //  the connection's handshake.
            int ivl = S_HEARTBEAT_MS, ttl = S_HEARTBEAT_TTL;
            zmq_setsockopt (self->io.sockets[i], ZMQ_HEARTBEAT_IVL, &ivl,
                            sizeof ivl);
            zmq_setsockopt (self->io.sockets[i], ZMQ_HEARTBEAT_TIMEOUT, &ttl,
                            sizeof ttl);
            zmq_setsockopt (self->io.sockets[i], ZMQ_HANDSHAKE_IVL, &ttl,
                            sizeof ttl);
            char endpoint[64];
            snprintf (endpoint, sizeof endpoint, "inproc://bn-client-bmon-%p",
                      (void *)self);
            self->io.bcast_monitor = zmq_socket (self->io.context, ZMQ_PAIR);
            if (!self->io.bcast_monitor ||
                zmq_socket_monitor (self->io.sockets[i], endpoint,
                                    ZMQ_EVENT_DISCONNECTED) != 0 ||
                zmq_connect (self->io.bcast_monitor, endpoint) != 0)
                rc = BN_ENOMEM;
        }
        if (rc == 0 && s_connect (self->io.sockets[i], url) != 0)
            rc = BN_ECONNFILE;
        if (rc == 0)
            self->has_port[i] = true;
        free (url);
    }
    zcert_destroy (&cert);
    return rc;
}

//  connection_request on the query socket, before the I/O thread runs.
//  A controller that refuses the security handshake again and again is
//  one whose key (or lack of one) this connection file does not match.
static int
s_handshake (bn_client_t *self, double deadline, bool curve)
{
    bn_msg_t *request = bn_msg_new (self->tx, BN_MSG_CONNECTION_REQUEST);
    if (!request)
        return BN_ENOMEM;
    char msg_id[BN_MSG_ID_SIZE];
    snprintf (msg_id, sizeof msg_id, "%s", bn_msg_id (request));
    void *query = self->io.sockets[BN_SOCK_QUERY];
    if (bn_msg_send (&request, query, self->tx) != 0)
        return BN_ECONNECT;
    int refusals = 0;
    while (true) {
        double left = deadline < 0 ? -1 : deadline - zclock_usecs () / 1e6;
        if (deadline >= 0 && left <= 0)
            return BN_ETIMEDOUT;
        zmq_pollitem_t items[] = {{query, 0, ZMQ_POLLIN, 0},
                                  {self->io.monitor, 0, ZMQ_POLLIN, 0}};
        int rc = zmq_poll (items, 2, left < 0 ? -1 : (long)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR)
            return BN_ECONNECT;
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN) &&
            bn_curve_refused (&refusals,
                              bn_iothread_monitor_event (self->io.monitor))) {
            bn_log_warn ("client: the controller refuses the connection's "
                         "security handshake: %s",
                         bn_curve_refusal (curve));
            return BN_ECONNECT;
        }
        if (rc <= 0 || !(items[0].revents & ZMQ_POLLIN))
            continue;
        bn_msg_t *reply = bn_msg_recv_flags (query, ZMQ_DONTWAIT);
        if (!reply)
            continue;
        int verify = bn_msg_verify (reply, self->io.rx, true);
        const char *parent = bn_msg_parent_id (reply);
        if (verify != 0 || !parent || strcmp (parent, msg_id) != 0) {
            s_drop (self, verify ? bn_strerror (verify) : "stray reply");
            bn_msg_destroy (&reply);
            if (verify == BN_ESIGNATURE) {
                bn_log_warn ("client: the controller's replies are not "
                             "signed with this connection file's key");
                return BN_ECONNECT;
            }
            continue;
        }
        json_t *content = bn_msg_content (reply);
        const char *status =
            json_string_value (json_object_get (content, "status"));
        json_t *engines = json_object_get (content, "engines");
        //  (a banyan controller's: what each engine understands)
        json_t *features = json_object_get (content, BN_REG_FEATURES);
        rc = 0;
        if (!status || strcmp (status, BN_STATUS_OK) != 0) {
            bn_log_warn ("client: the controller refused the connection: %s",
                         json_string_value (json_object_get (content, "evalue"))
                             ?: "?");
            rc = BN_ECONNECT;
        } else {
            const char *key;
            json_t *uuid;
            json_object_foreach (engines, key, uuid)
            {
                char *end;
                long id = strtol (key, &end, 10);
                if (*end || id < 0 || id > INT32_MAX ||
                    bn_engines_add (self->engines, (int)id,
                                    json_string_value (uuid)))
                    bn_log_warn ("client: ignored engine '%s' in the "
                                 "connection reply",
                                 key);
                else
                    bn_engines_set_features (self->engines, (int)id,
                                             json_object_get (features, key));
            }
        }
        bn_msg_destroy (&reply);
        return rc;
    }
}

static bn_client_t *
s_client_new (bn_connfile_t *cf, double deadline, int *error)
{
    int rc = 0;
    bn_client_t *self = calloc (1, sizeof *self);
    if (!self) {
        *error = BN_ENOMEM;
        return NULL;
    }
    atomic_init (&self->refs, 1);
    atomic_init (&self->dropped, 0);
    bn_session_new_id (self->session_id);
    const char *key = bn_connfile_key (cf);
    self->tx = bn_session_new (key, self->session_id);
    self->io.rx = bn_session_new (key, self->session_id);
    self->tracker = bn_tracker_new ();
    self->engines = bn_engines_new ();
    self->io.context = zmq_ctx_new ();
    if (!self->tx || !self->io.rx || !self->tracker || !self->engines ||
        !self->io.context)
        rc = BN_ENOMEM;
    if (rc == 0)
        rc = s_open_sockets (self, cf);
    if (rc == 0)
        rc = s_handshake (self, deadline,
                          bn_connfile_curve_serverkey (cf) != NULL);
    if (rc == 0) {
        self->io.session_id = self->session_id;
        self->io.tracker = self->tracker;
        self->io.engines = self->engines;
        self->io.dropped = &self->dropped;
        self->iothread = bn_iothread_new (&self->io);
        if (!self->iothread)
            rc = BN_ENOMEM;
    }
    if (rc != 0) {
        *error = rc;
        s_free (self);
        return NULL;
    }
    return self;
}

//  Read a client connection file, waiting until deadline for it to
//  appear and to be complete (a Python controller writes it in place).
static bn_connfile_t *
s_load_file (const char *path, double deadline, int *error)
{
    char err[256] = "";
    bool seen = false;
    while (true) {
        if (access (path, F_OK) == 0) {
            seen = true;
            bn_connfile_t *cf = bn_connfile_load (path, err, sizeof err);
            if (cf)
                return cf;
        }
        if (deadline >= 0 && zclock_usecs () / 1e6 >= deadline)
            break;
        usleep (50 * 1000);
    }
    if (seen) {
        bn_log_warn ("client: bad connection file %s: %s", path, err);
        *error = BN_ECONNFILE;
    } else {
        bn_log_info ("client: no connection file %s", path);
        *error = BN_ENOENT;
    }
    return NULL;
}

static bn_client_t *
s_new_from (bn_connfile_t *cf, const char *where, double deadline, int *error)
{
    if (bn_connfile_kind (cf) != BN_CONNFILE_CLIENT) {
        bn_log_warn ("client: %s is an engine connection file, not the "
                     "client one",
                     where);
        bn_connfile_destroy (&cf);
        *error = BN_ECONNFILE;
        return NULL;
    }
    bn_client_t *self = s_client_new (cf, deadline, error);
    bn_connfile_destroy (&cf);
    return self;
}

static double
s_default_timeout (double timeout)
{
    if (timeout != 0)
        return timeout;
    bn_config_t *config = bn_config_new ();
    if (config) {
        bn_config_load_env (config, NULL);
        timeout = bn_config_msecs (config, "client.timeout") / 1000.0;
        bn_config_destroy (&config);
    }
    return timeout > 0 ? timeout : 10;
}

//  JSON text or a path, from an environment variable.
static bn_client_t *
s_new_from_text (const char *text, const char *where, double deadline,
                 int *error)
{
    bn_connfile_t *cf;
    char err[256] = "";
    if (text[0] == '{') {
        cf = bn_connfile_parse (text, err, sizeof err);
        if (!cf) {
            bn_log_warn ("client: bad connection info in %s: %s", where, err);
            *error = BN_ECONNFILE;
            return NULL;
        }
    } else {
        cf = s_load_file (text, deadline, error);
        if (!cf)
            return NULL;
    }
    return s_new_from (cf, where, deadline, error);
}

//  Connect from the client file of the profile folder dir.
static bn_client_t *
s_new_in_dir (const char *dir, const char *cluster_id, double deadline,
              int *error)
{
    char *path = bn_connfile_path (dir, cluster_id, BN_CONNFILE_CLIENT);
    if (!path) {
        *error = BN_ENOMEM;
        return NULL;
    }
    bn_connfile_t *cf = s_load_file (path, deadline, error);
    bn_client_t *self = cf ? s_new_from (cf, path, deadline, error) : NULL;
    free (path);
    return self;
}

bn_client_t *
bn_client_new_profile (const char *profile, const char *cluster_id,
                       double timeout, int *error)
{
    int dummy;
    if (!error)
        error = &dummy;
    *error = 0;
    double deadline = bn_tracker_deadline (s_default_timeout (timeout));
    bn_config_t *config = bn_config_new ();
    if (!config) {
        *error = BN_ENOMEM;
        return NULL;
    }
    bn_config_load_env (config, NULL);
    char *dir = profile && strchr (profile, '/')
                    ? strdup (profile)
                    : bn_config_profile_dir (config, profile);
    char *cid =
        strdup (cluster_id ? cluster_id : bn_config_str (config, "cluster.id"));
    bn_config_destroy (&config);
    bn_client_t *self = NULL;
    if (dir && cid)
        self = s_new_in_dir (dir, cid, deadline, error);
    else
        *error = BN_ENOMEM;
    free (dir);
    free (cid);
    return self;
}

bn_client_t *
bn_client_new (const char *source, double timeout, int *error)
{
    int dummy;
    if (!error)
        error = &dummy;
    *error = 0;
    timeout = s_default_timeout (timeout);
    double deadline = bn_tracker_deadline (timeout);
    if (!source) {
        const char *text = getenv ("BANYAN_CONNECTION_INFO");
        if (text && *text)
            return s_new_from_text (text, "BANYAN_CONNECTION_INFO", deadline,
                                    error);
        //  IPython Parallel 8 hands engines their (engine) connection
        //  info in IPP_CONNECTION_INFO: only a client one is used here.
        text = getenv ("IPP_CONNECTION_INFO");
        if (text && text[0] == '{') {
            bn_connfile_t *cf = bn_connfile_parse (text, NULL, 0);
            if (cf && bn_connfile_kind (cf) == BN_CONNFILE_CLIENT)
                return s_new_from (cf, "IPP_CONNECTION_INFO", deadline, error);
            bn_connfile_destroy (&cf);
        } else if (text && *text)
            return s_new_from_text (text, "IPP_CONNECTION_INFO", deadline,
                                    error);
        return bn_client_new_profile (NULL, NULL, timeout, error);
    }
    if (source[0] == '{')
        return s_new_from_text (source, "the connection JSON", deadline, error);
    struct stat st;
    bool exists = stat (source, &st) == 0;
    if (exists && S_ISDIR (st.st_mode)) {
        bn_config_t *config = bn_config_new ();
        if (!config) {
            *error = BN_ENOMEM;
            return NULL;
        }
        bn_config_load_env (config, NULL);
        bn_client_t *self = s_new_in_dir (
            source, bn_config_str (config, "cluster.id"), deadline, error);
        bn_config_destroy (&config);
        return self;
    }
    size_t len = strlen (source);
    if (exists || strchr (source, '/') ||
        (len > 5 && strcmp (source + len - 5, ".json") == 0))
        return s_new_from_text (source, source, deadline, error);
    return bn_client_new_profile (source, NULL, timeout, error);
}

void
bn_client_destroy (bn_client_t **self_p)
{
    assert (self_p);
    bn_client_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    bn_tracker_lock (self->tracker);
    bn_tracker_close (self->tracker, BN_ECLOSED);
    bn_tracker_changed (self->tracker);
    bn_tracker_unlock (self->tracker);
    //  what was handed to the thread before is sent (or lingers) first;
    //  views that outlive the client find it stopped
    bn_iothread_stop (self->iothread);
    zmq_ctx_term (self->io.context);
    self->io.context = NULL;
    bn_client_unref (&self);
}

//  -------------------------------------------------------------------
//  Public queries

int
bn_client_status (bn_client_t *self)
{
    if (!self)
        return BN_EINVAL;
    bn_tracker_lock (self->tracker);
    int state = bn_tracker_state (self->tracker);
    bn_tracker_unlock (self->tracker);
    return state;
}

const char *
bn_client_session (bn_client_t *self)
{
    return self ? self->session_id : NULL;
}

bn_idset_t *
bn_client_ids (bn_client_t *self)
{
    if (!self)
        return NULL;
    bn_tracker_lock (self->tracker);
    bn_idset_t *ids = bn_engines_ids (self->engines);
    bn_tracker_unlock (self->tracker);
    return ids;
}

size_t
bn_client_engine_count (bn_client_t *self)
{
    if (!self)
        return 0;
    bn_tracker_lock (self->tracker);
    size_t count = bn_engines_count (self->engines);
    bn_tracker_unlock (self->tracker);
    return count;
}

int
bn_client_wait_for_engines (bn_client_t *self, size_t count, double timeout)
{
    if (!self)
        return BN_EINVAL;
    double deadline = bn_tracker_deadline (timeout);
    int rc = 0;
    bn_tracker_lock (self->tracker);
    while (bn_engines_count (self->engines) < count) {
        rc = bn_tracker_state (self->tracker);
        if (rc == 0)
            rc = bn_tracker_wait_change (self->tracker, deadline);
        if (rc != 0)
            break;
    }
    bn_tracker_unlock (self->tracker);
    return rc;
}

int
bn_client_engine_uuid (bn_client_t *self, int id, char *buf, size_t size)
{
    if (!self || !buf)
        return BN_EINVAL;
    int rc = BN_ENOENGINE;
    bn_tracker_lock (self->tracker);
    const char *uuid = bn_engines_uuid (self->engines, id);
    if (uuid) {
        size_t len = strlen (uuid);
        if (len < size) {
            memcpy (buf, uuid, len + 1);
            rc = 0;
        } else
            rc = BN_EINVAL;
    }
    bn_tracker_unlock (self->tracker);
    return rc;
}

size_t
bn_client_dropped (bn_client_t *self)
{
    return self ? atomic_load (&self->dropped) : 0;
}

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_curve: the controller's CurveZMQ keypair in the profile, and CURVE
    servers and clients.  */
#include "bn_curve.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bn_error.h"
#include "bn_path.h"

//  Closed handshakes in a row that mean a refused key
#define S_REFUSALS 3

char *
bn_curve_cert_path (const char *profile_dir, const char *cluster_id)
{
    assert (profile_dir);
    bool named = cluster_id && *cluster_id;
    return zsys_sprintf ("%s/security/banyan-controller%s%s.cert", profile_dir,
                         named ? "-" : "", named ? cluster_id : "");
}

bool
bn_curve_key_valid (const char *text)
{
    uint8_t key[32];
    return text && strlen (text) == BN_CURVE_KEY_TEXT &&
           zmq_z85_decode (key, text) != NULL;
}

zcert_t *
bn_curve_cert_from_secret (const char *secret)
{
    uint8_t public_key[32], secret_key[32];
    char public_text[BN_CURVE_KEY_TEXT + 1];
    if (!bn_curve_key_valid (secret) ||
        zmq_curve_public (public_text, secret) != 0 ||
        !zmq_z85_decode (public_key, public_text) ||
        !zmq_z85_decode (secret_key, secret))
        return NULL;
    zcert_t *cert = zcert_new_from (public_key, secret_key);
    memset (secret_key, 0, sizeof secret_key);
    return cert;
}

//  Write one half of cert to path through a file only we may read, put in
//  place at once so that a reader never sees half a file. Returns -1 with
//  errno set.
static int
s_save (zcert_t *cert, const char *path, bool secret)
{
    char tmp[PATH_MAX];
    if (snprintf (tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    //  mkstemp makes it 0600, which zconfig_save's fopen keeps
    int fd = mkstemp (tmp);
    if (fd < 0)
        return -1;
    close (fd);
    int rc =
        secret ? zcert_save_secret (cert, tmp) : zcert_save_public (cert, tmp);
    //  the public half is for anyone who may connect
    if (rc == 0 && !secret)
        rc = chmod (tmp, 0644);
    if (rc == 0)
        rc = rename (tmp, path);
    if (rc != 0) {
        int error = errno ? errno : EIO;
        unlink (tmp);
        errno = error;
        return -1;
    }
    return 0;
}

//  The keypair saved at path, or NULL with the reason in err.
static zcert_t *
s_load (const char *path, const char *secret_path, char *err, size_t errsize)
{
    struct stat info;
    if (stat (secret_path, &info) != 0) {
        bn_error_set (err, errsize, "cannot read %s: %s", secret_path,
                      strerror (errno));
        return NULL;
    }
    if (info.st_uid != geteuid () || (info.st_mode & 077)) {
        bn_error_set (err, errsize,
                      "%s may be read by other users (mode %04o): make it "
                      "mode 0600, or remove it and %s for a new keypair",
                      secret_path, (unsigned)(info.st_mode & 07777), path);
        return NULL;
    }
    //  zcert_load reads <path>_secret when it is there
    zcert_t *cert = zcert_load (path);
    char derived[BN_CURVE_KEY_TEXT + 1] = "";
    const char *secret = cert ? zcert_secret_txt (cert) : NULL;
    if (!cert || !bn_curve_key_valid (secret) ||
        zmq_curve_public (derived, secret) != 0 ||
        strcmp (derived, zcert_public_txt (cert)) != 0) {
        bn_error_set (err, errsize,
                      "%s does not hold a CURVE keypair: remove it and %s "
                      "for a new one",
                      secret_path, path);
        zcert_destroy (&cert);
    }
    return cert;
}

zcert_t *
bn_curve_keypair (const char *path, char *err, size_t errsize)
{
    assert (path);
    char *secret_path = zsys_sprintf ("%s_secret", path);
    if (!secret_path) {
        bn_error_set (err, errsize, "out of memory");
        return NULL;
    }
    zcert_t *cert = NULL;
    if (access (secret_path, F_OK) == 0)
        cert = s_load (path, secret_path, err, errsize);
    else if (errno != ENOENT)
        bn_error_set (err, errsize, "cannot read %s: %s", secret_path,
                      strerror (errno));
    else {
        cert = zcert_new ();
        if (!cert)
            bn_error_set (err, errsize, "cannot make a CURVE keypair");
        else if (bn_path_mkdir_for (path) != 0 ||
                 s_save (cert, path, false) != 0 ||
                 s_save (cert, secret_path, true) != 0) {
            bn_error_set (err, errsize, "cannot save a CURVE keypair as %s: %s",
                          path, strerror (errno));
            zcert_destroy (&cert);
        }
    }
    zstr_free (&secret_path);
    return cert;
}

bool
bn_curve_refused (int *refusals, int event)
{
    assert (refusals);
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
        *refusals = 0;
    else if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                      ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
        *refusals = S_REFUSALS;
    else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        *refusals += 1;
    return *refusals >= S_REFUSALS;
}

const char *
bn_curve_refusal (bool curve)
{
    return curve ? "its key is not the connection file's curve_serverkey (a "
                   "stale file?)"
                 : "it uses CURVE and the connection file has no "
                   "curve_serverkey";
}

int
bn_curve_server (void *socket, zcert_t *cert)
{
    assert (socket);
    assert (cert);
    void *handle = zsock_resolve (socket);
    int on = 1;
    //  libzmq's own calls: czmq's setters assert where libzmq refuses
    if (zmq_setsockopt (handle, ZMQ_CURVE_SERVER, &on, sizeof on) != 0 ||
        zmq_setsockopt (handle, ZMQ_CURVE_SECRETKEY, zcert_secret_key (cert),
                        32) != 0)
        return -1;
    return 0;
}

int
bn_curve_client (void *socket, zcert_t *cert, const char *serverkey)
{
    assert (socket);
    assert (cert);
    if (!bn_curve_key_valid (serverkey))
        return -1;
    void *handle = zsock_resolve (socket);
    if (zmq_setsockopt (handle, ZMQ_CURVE_SERVERKEY, serverkey,
                        BN_CURVE_KEY_TEXT) != 0 ||
        zmq_setsockopt (handle, ZMQ_CURVE_PUBLICKEY, zcert_public_key (cert),
                        32) != 0 ||
        zmq_setsockopt (handle, ZMQ_CURVE_SECRETKEY, zcert_secret_key (cert),
                        32) != 0)
        return -1;
    return 0;
}

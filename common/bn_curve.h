/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_curve: CurveZMQ on the links that leave a host: the controller's
    keypair, kept in the profile's security folder as czmq certificate
    files, and the set-up of a socket as a CURVE server (the controller,
    its tree nodes) or client (engines, clients, host nodes).

    Only the server is authenticated, as IPython Parallel 7.1.0 does it: a
    client makes a keypair of its own for the encryption, the server takes
    any client key, and a peer proves it belongs to the cluster with the
    connection file's HMAC key, which stays on with CURVE (links inside a
    host carry no CURVE, and the key is what guards them).  */
#ifndef BN_CURVE_H_INCLUDED
#define BN_CURVE_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

//  Characters of a Z85 CurveZMQ key (32 bytes).
#define BN_CURVE_KEY_TEXT 40

//  The controller's certificate file in a profile:
//  <profile_dir>/security/banyan-controller[-<cluster_id>].cert; its
//  secret half is the same path with "_secret" (zcert_save's names).
//  Malloc'd; NULL if out of memory.
char *bn_curve_cert_path (const char *profile_dir, const char *cluster_id);

//  The keypair of the certificate at path: the one saved there, else a new
//  one saved there (the folder made 0700, the secret file 0600). NULL with
//  the reason in err when the files cannot be read or written, do not hold
//  a keypair, or the secret file may be read by other users.
zcert_t *bn_curve_keypair (const char *path, char *err, size_t errsize);

//  True if text is a Z85 CurveZMQ key (40 characters of the Z85 alphabet).
bool bn_curve_key_valid (const char *text);

//  A certificate from a Z85 secret key, its public key derived from it;
//  NULL if secret is not a Z85 key.
zcert_t *bn_curve_cert_from_secret (const char *secret);

//  Make socket (a zsock_t or a bare libzmq socket) a CURVE server with
//  cert's keys; before it binds. Returns -1 if libzmq refuses the keys
//  (built without CURVE).
int bn_curve_server (void *socket, zcert_t *cert);

//  Make socket a CURVE client of the server whose public key is serverkey
//  (Z85), with cert's keys for the encryption; before it connects.
//  Returns -1 if serverkey is not a Z85 key or libzmq refuses the keys.
int bn_curve_client (void *socket, zcert_t *cert, const char *serverkey);

//  The monitor events (zmq_socket_monitor) a peer watches to tell a server
//  that refuses its security handshake from one that is not up yet.
#define BN_CURVE_HANDSHAKE_EVENTS                                              \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |                                    \
     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |   \
     ZMQ_EVENT_HANDSHAKE_SUCCEEDED)

//  Count a monitor event of a socket connecting to a server in *refusals
//  (0 at first). True once the server has refused enough handshakes that
//  this peer's key, or its lack of one, is wrong: at once for a broken
//  protocol (a mechanism other than the server's, after which libzmq does
//  not try again), after three closed handshakes (one may be a server
//  that was closing; libzmq tries again every 100 ms). A handshake that
//  succeeds starts the count again.
bool bn_curve_refused (int *refusals, int event);

//  Why a server refuses a peer's handshakes, in words, for a connection
//  file with a curve_serverkey (curve) or without one.
const char *bn_curve_refusal (bool curve);

#endif

/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_curve: the controller's keypair in a profile (made once, kept
    private, reused, refused when others may read it or it is damaged), and
    CURVE servers and clients: a client with the server's key is served,
    one with another key gets nothing.  */
#include "bn_curve.h"
#include "bn_testdir.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[] = "/tmp/check_bn_curve.XXXXXX";

static void
s_setup (void)
{
    ck_assert_ptr_nonnull (mkdtemp (s_dir));
}

static void
s_teardown (void)
{
    t_rmtree (s_dir);
    strcpy (s_dir, "/tmp/check_bn_curve.XXXXXX");
}

static int
s_mode (const char *path)
{
    struct stat st;
    ck_assert_int_eq (stat (path, &st), 0);
    return (int)(st.st_mode & 07777);
}

//  A ROUTER that is a CURVE server with cert, on a loopback port.
static zsock_t *
s_server (zcert_t *cert, int *port)
{
    zsock_t *server = zsock_new (ZMQ_ROUTER);
    ck_assert_int_eq (bn_curve_server (server, cert), 0);
    *port = zsock_bind (server, "tcp://127.0.0.1:*");
    ck_assert_int_gt (*port, 0);
    return server;
}

//  A DEALER that is a CURVE client of serverkey, connected to port.
static zsock_t *
s_client (const char *serverkey, int port)
{
    zsock_t *client = zsock_new (ZMQ_DEALER);
    zcert_t *mine = zcert_new ();
    ck_assert_int_eq (bn_curve_client (client, mine, serverkey), 0);
    zcert_destroy (&mine);
    ck_assert_int_eq (zsock_connect (client, "tcp://127.0.0.1:%d", port), 0);
    return client;
}

//  The payload of the next message on server within 5 s, or NULL.
static char *
s_receive (zsock_t *server)
{
    zpoller_t *poller = zpoller_new (server, NULL);
    zmsg_t *msg = zpoller_wait (poller, 5000) ? zmsg_recv (server) : NULL;
    zpoller_destroy (&poller);
    char *body = NULL;
    if (msg) {
        zframe_destroy (&(zframe_t *){zmsg_pop (msg)});
        body = zmsg_popstr (msg);
    }
    zmsg_destroy (&msg);
    return body;
}

START_TEST (test_usage)
{
    //  the controller's keypair: made on first use, the secret half 0600
    //  in a 0700 folder
    char *path = bn_curve_cert_path (s_dir, "demo");
    char expected[PATH_MAX];
    snprintf (expected, sizeof expected,
              "%s/security/banyan-controller-demo.cert", s_dir);
    ck_assert_str_eq (path, expected);
    char err[256] = "";
    zcert_t *cert = bn_curve_keypair (path, err, sizeof err);
    ck_assert_msg (cert != NULL, "%s", err);
    char secret_path[PATH_MAX + 8];
    snprintf (secret_path, sizeof secret_path, "%s_secret", path);
    ck_assert_int_eq (s_mode (secret_path), 0600);
    ck_assert_int_eq (s_mode (path), 0644);
    char folder[PATH_MAX];
    snprintf (folder, sizeof folder, "%s/security", s_dir);
    ck_assert_int_eq (s_mode (folder), 0700);

    //  a later start reuses it
    zcert_t *again = bn_curve_keypair (path, err, sizeof err);
    ck_assert_msg (again != NULL, "%s", err);
    ck_assert_str_eq (zcert_public_txt (again), zcert_public_txt (cert));
    ck_assert_str_eq (zcert_secret_txt (again), zcert_secret_txt (cert));
    zcert_destroy (&again);

    //  a server with it serves a client that has its public key
    int port;
    zsock_t *server = s_server (cert, &port);
    zsock_t *client = s_client (zcert_public_txt (cert), port);
    zstr_send (client, "hello");
    char *body = s_receive (server);
    ck_assert_str_eq (body ? body : "(nothing)", "hello");
    zstr_free (&body);

    zsock_destroy (&client);
    zsock_destroy (&server);
    zcert_destroy (&cert);
    free (path);
}
END_TEST

START_TEST (test_wrong_serverkey)
{
    zcert_t *cert = zcert_new ();
    zcert_t *other = zcert_new ();
    int port;
    zsock_t *server = s_server (cert, &port);
    //  a client with another server key: its handshake fails, again and
    //  again, and the server never sees what it sends
    zsock_t *bad = s_client (zcert_public_txt (other), port);
    ck_assert_int_eq (zmq_socket_monitor (zsock_resolve (bad),
                                          "inproc://check-bn-curve-bad",
                                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                              ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
                      0);
    zsock_t *events = zsock_new_pair (">inproc://check-bn-curve-bad");
    zstr_send (bad, "intruder");
    zpoller_t *poller = zpoller_new (events, NULL);
    zmsg_t *event = zpoller_wait (poller, 5000) ? zmsg_recv (events) : NULL;
    zpoller_destroy (&poller);
    ck_assert_ptr_nonnull (event);
    uint16_t id = 0;
    memcpy (&id, zframe_data (zmsg_first (event)), sizeof id);
    ck_assert_int_eq (id, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    zmsg_destroy (&event);

    //  a client with the right key is served meanwhile, and only it
    zsock_t *good = s_client (zcert_public_txt (cert), port);
    zstr_send (good, "member");
    char *body = s_receive (server);
    ck_assert_str_eq (body ? body : "(nothing)", "member");
    zstr_free (&body);
    ck_assert_int_eq (zsock_events (server) & ZMQ_POLLIN, 0);

    zsock_destroy (&events);
    zsock_destroy (&good);
    zsock_destroy (&bad);
    zsock_destroy (&server);
    zcert_destroy (&other);
    zcert_destroy (&cert);
}
END_TEST

START_TEST (test_keys)
{
    zcert_t *cert = zcert_new ();
    ck_assert (bn_curve_key_valid (zcert_public_txt (cert)));
    ck_assert (!bn_curve_key_valid (NULL));
    ck_assert (!bn_curve_key_valid (""));
    ck_assert (!bn_curve_key_valid ("too short"));
    //  40 characters, but '"' is not in Z85's alphabet
    char bad[BN_CURVE_KEY_TEXT + 1];
    memset (bad, '"', BN_CURVE_KEY_TEXT);
    bad[BN_CURVE_KEY_TEXT] = 0;
    ck_assert (!bn_curve_key_valid (bad));

    //  a certificate from the secret half alone has the same public key
    zcert_t *copy = bn_curve_cert_from_secret (zcert_secret_txt (cert));
    ck_assert_ptr_nonnull (copy);
    ck_assert_str_eq (zcert_public_txt (copy), zcert_public_txt (cert));
    zcert_destroy (&copy);
    ck_assert_ptr_null (bn_curve_cert_from_secret (bad));
    ck_assert_ptr_null (bn_curve_cert_from_secret ("x"));

    //  a bad server key is refused, not a crash
    zsock_t *client = zsock_new (ZMQ_DEALER);
    ck_assert_int_eq (bn_curve_client (client, cert, bad), -1);
    ck_assert_int_eq (bn_curve_client (client, cert, "short"), -1);
    zsock_destroy (&client);
    zcert_destroy (&cert);
}
END_TEST

START_TEST (test_refused)
{
    //  closed handshakes: the third in a row is a refusal; one that
    //  succeeds starts the count again
    int refusals = 0;
    ck_assert (
        !bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    ck_assert (!bn_curve_refused (&refusals, ZMQ_EVENT_DISCONNECTED));
    ck_assert (
        !bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    ck_assert (!bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_SUCCEEDED));
    ck_assert (
        !bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    ck_assert (
        !bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    ck_assert (
        bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    //  a broken protocol (another mechanism) at once
    refusals = 0;
    ck_assert (
        bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL));
    refusals = 0;
    ck_assert (bn_curve_refused (&refusals, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH));
    ck_assert (strstr (bn_curve_refusal (true), "curve_serverkey"));
    ck_assert (strstr (bn_curve_refusal (false), "no curve_serverkey"));
}
END_TEST

START_TEST (test_keypair_refused)
{
    char *path = bn_curve_cert_path (s_dir, NULL);
    char expected[PATH_MAX];
    snprintf (expected, sizeof expected, "%s/security/banyan-controller.cert",
              s_dir);
    ck_assert_str_eq (path, expected);
    char err[512] = "";
    zcert_t *cert = bn_curve_keypair (path, err, sizeof err);
    ck_assert_ptr_nonnull (cert);
    zcert_destroy (&cert);
    char secret_path[PATH_MAX + 8];
    snprintf (secret_path, sizeof secret_path, "%s_secret", path);

    //  a secret others may read is not used
    ck_assert_int_eq (chmod (secret_path, 0644), 0);
    cert = bn_curve_keypair (path, err, sizeof err);
    ck_assert_ptr_null (cert);
    ck_assert_msg (strstr (err, "may be read by other users (mode 0644)") &&
                       strstr (err, secret_path),
                   "%s", err);

    //  nor one that is damaged
    ck_assert_int_eq (chmod (secret_path, 0600), 0);
    FILE *file = fopen (secret_path, "w");
    ck_assert_ptr_nonnull (file);
    fputs ("curve\n    public-key = \"abc\"\n    secret-key = \"def\"\n", file);
    fclose (file);
    cert = bn_curve_keypair (path, err, sizeof err);
    ck_assert_ptr_null (cert);
    ck_assert_msg (strstr (err, "does not hold a CURVE keypair"), "%s", err);

    //  a folder that cannot be made (root may write anywhere but /proc)
    char *inside = bn_curve_cert_path ("/proc/check_bn_curve", NULL);
    cert = bn_curve_keypair (inside, err, sizeof err);
    ck_assert_ptr_null (cert);
    ck_assert_msg (strstr (err, "cannot save a CURVE keypair as "
                                "/proc/check_bn_curve/security/"),
                   "%s", err);
    free (inside);
    free (path);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_curve");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_wrong_serverkey);
    tcase_add_test (tc, test_keys);
    tcase_add_test (tc, test_refused);
    tcase_add_test (tc, test_keypair_refused);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

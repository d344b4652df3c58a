/*  check_bn_hosts: the controller's table of host node links, and the
    routing frame it puts in front of, and takes off, engine messages.  */
#include <check.h>
#include <czmq.h>
#include <string.h>

#include "bn_hosts.h"
#include "bn_msgtypes.h"
#include "bn_session.h"

#define S_LINK BN_HOST_LINK_PREFIX "h1 0a1b2c3d"
#define S_OTHER BN_HOST_LINK_PREFIX "h2 99887766"
#define S_ENGINE "1e38875f-68ce0b6f9accadab8cc143d0"
#define S_DIRECT "7b0c1d2e-3f405162738495a6b7c8d9e0"

//  A message from the engine side of a ROUTER: idents, then a body.
static bn_msg_t *
s_msg (const char *first, const char *second)
{
    bn_session_t *session = bn_session_new ("", NULL);
    bn_msg_t *msg = bn_msg_new (session, BN_MSG_APPLY_REPLY);
    bn_session_destroy (&session);
    ck_assert_ptr_nonnull (msg);
    if (second)
        ck_assert_int_eq (bn_msg_push_ident (msg, second, strlen (second)), 0);
    ck_assert_int_eq (bn_msg_push_ident (msg, first, strlen (first)), 0);
    return msg;
}

static json_int_t
s_stat (bn_hosts_t *hosts, const char *name)
{
    json_t *stats = bn_hosts_stats (hosts);
    json_int_t value = json_integer_value (json_object_get (stats, name));
    json_decref (stats);
    return value;
}

START_TEST (test_usage)
{
    bn_hosts_t *hosts = bn_hosts_new ();
    ck_assert_ptr_nonnull (hosts);

    //  the hub adds a host node's link and an engine registered through it
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_LINK), 0);
    ck_assert_int_eq (bn_hosts_route (hosts, S_ENGINE, S_LINK), 0);
    ck_assert_str_eq (bn_hosts_via (hosts, S_ENGINE), S_LINK);
    ck_assert_ptr_null (bn_hosts_via (hosts, S_DIRECT));

    //  a relay sending to the engine puts the link in front
    bn_msg_t *msg = s_msg (S_ENGINE, "client");
    ck_assert_int_eq (bn_hosts_wrap (hosts, msg), 0);
    ck_assert_uint_eq (bn_msg_nidents (msg), 3);
    ck_assert (bn_msg_ident_is (msg, 0, S_LINK, strlen (S_LINK)));
    ck_assert (bn_msg_ident_is (msg, 1, S_ENGINE, strlen (S_ENGINE)));

    //  and takes it off the engine's reply coming up through the link
    ck_assert_int_eq (bn_hosts_unwrap (hosts, msg), 1);
    ck_assert_uint_eq (bn_msg_nidents (msg), 2);
    ck_assert (bn_msg_ident_is (msg, 0, S_ENGINE, strlen (S_ENGINE)));
    bn_msg_destroy (&msg);

    //  an engine of the controller is left alone both ways
    msg = s_msg (S_DIRECT, "client");
    ck_assert_int_eq (bn_hosts_wrap (hosts, msg), 0);
    ck_assert_uint_eq (bn_msg_nidents (msg), 2);
    ck_assert_int_eq (bn_hosts_unwrap (hosts, msg), 0);
    ck_assert_uint_eq (bn_msg_nidents (msg), 2);
    bn_msg_destroy (&msg);

    bn_hosts_destroy (&hosts);
    ck_assert_ptr_null (hosts);
    bn_hosts_destroy (&hosts);
}
END_TEST

START_TEST (test_link_ids)
{
    ck_assert (bn_hosts_is_link_id (S_LINK, strlen (S_LINK)));
    ck_assert (!bn_hosts_is_link_id (S_ENGINE, strlen (S_ENGINE)));
    ck_assert (!bn_hosts_is_link_id (BN_HOST_LINK_PREFIX,
                                     strlen (BN_HOST_LINK_PREFIX)));
    ck_assert (!bn_hosts_is_link_id ("bn-host a\0b", 11));
    ck_assert (!bn_hosts_is_link_id (NULL, 0));
    char longer[BN_HOSTS_LINK_MAX + 2];
    memset (longer, 'x', sizeof longer - 1);
    memcpy (longer, BN_HOST_LINK_PREFIX, strlen (BN_HOST_LINK_PREFIX));
    longer[sizeof longer - 1] = 0;
    ck_assert (!bn_hosts_is_link_id (longer, strlen (longer)));
    ck_assert (bn_hosts_is_link_id (longer, strlen (longer) - 1));

    bn_hosts_t *hosts = bn_hosts_new ();
    //  only link ids are links; an engine uuid is refused
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_ENGINE), -1);
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_LINK), 0);
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_LINK), 0);
    ck_assert_uint_eq (bn_hosts_links (hosts), 1);
    //  no route through a link the table does not know
    ck_assert_int_eq (bn_hosts_route (hosts, S_ENGINE, S_OTHER), -1);
    ck_assert_uint_eq (bn_hosts_routes (hosts), 0);
    bn_hosts_destroy (&hosts);
}
END_TEST

START_TEST (test_stray)
{
    bn_hosts_t *hosts = bn_hosts_new ();
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_LINK), 0);
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_OTHER), 0);
    ck_assert_int_eq (bn_hosts_route (hosts, S_ENGINE, S_LINK), 0);

    //  another link speaking for the engine, an unknown link, a direct
    //  engine's name through a link, and a link with nothing after it
    const char *unknown = BN_HOST_LINK_PREFIX "h3 00000000";
    const char *cases[][2] = {{S_OTHER, S_ENGINE},
                              {unknown, S_ENGINE},
                              {S_LINK, S_DIRECT},
                              {S_LINK, NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_msg_t *msg = s_msg (cases[i][0], cases[i][1]);
        ck_assert_int_eq (bn_hosts_unwrap (hosts, msg), -1);
        bn_msg_destroy (&msg);
    }
    ck_assert_int_eq (s_stat (hosts, "stray"), 4);
    bn_hosts_destroy (&hosts);
}
END_TEST

START_TEST (test_routes)
{
    bn_hosts_t *hosts = bn_hosts_new ();
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_LINK), 0);
    ck_assert_int_eq (bn_hosts_link_add (hosts, S_OTHER), 0);
    ck_assert_int_eq (bn_hosts_route (hosts, S_ENGINE, S_LINK), 0);
    ck_assert_int_eq (bn_hosts_route (hosts, S_DIRECT, S_LINK), 0);
    json_t *engines = bn_hosts_engines (hosts, S_LINK);
    ck_assert_uint_eq (json_array_size (engines), 2);
    json_decref (engines);

    //  an engine that registers again through another host moves
    ck_assert_int_eq (bn_hosts_route (hosts, S_DIRECT, S_OTHER), 0);
    ck_assert_str_eq (bn_hosts_via (hosts, S_DIRECT), S_OTHER);
    engines = bn_hosts_engines (hosts, S_LINK);
    ck_assert_uint_eq (json_array_size (engines), 1);
    ck_assert_str_eq (json_string_value (json_array_get (engines, 0)),
                      S_ENGINE);
    json_decref (engines);

    //  where a link's host node hangs in the broadcast tree
    const char *leaf_id = NULL;
    ck_assert_int_eq (bn_hosts_leaf (hosts, S_LINK, &leaf_id), -1);
    ck_assert_int_eq (bn_hosts_set_leaf (hosts, S_LINK, 1, "sub_scheduler_h1"),
                      0);
    ck_assert_int_eq (bn_hosts_leaf (hosts, S_LINK, &leaf_id), 1);
    ck_assert_str_eq (leaf_id, "sub_scheduler_h1");
    ck_assert_int_eq (bn_hosts_leaf (hosts, NULL, NULL), -1);
    ck_assert_int_eq (bn_hosts_set_leaf (hosts, "bn-host x 1", 0, "s"), -1);

    //  an engine unrouted connects straight to the controller
    bn_hosts_unroute (hosts, S_DIRECT);
    ck_assert_ptr_null (bn_hosts_via (hosts, S_DIRECT));
    bn_hosts_unroute (hosts, S_DIRECT);

    //  a link removed takes its routes with it
    bn_hosts_link_remove (hosts, S_LINK);
    ck_assert (!bn_hosts_has_link (hosts, S_LINK));
    ck_assert_ptr_null (bn_hosts_via (hosts, S_ENGINE));
    ck_assert_uint_eq (bn_hosts_routes (hosts), 0);
    ck_assert_uint_eq (bn_hosts_links (hosts), 1);
    engines = bn_hosts_engines (hosts, S_LINK);
    ck_assert_uint_eq (json_array_size (engines), 0);
    json_decref (engines);
    bn_hosts_link_remove (hosts, S_LINK);

    //  with no links left, nothing is taken off
    bn_hosts_link_remove (hosts, S_OTHER);
    bn_msg_t *msg = s_msg (S_LINK, S_ENGINE);
    ck_assert_int_eq (bn_hosts_unwrap (hosts, msg), 0);
    ck_assert_uint_eq (bn_msg_nidents (msg), 2);
    bn_msg_destroy (&msg);
    //  and no table at all is no host node
    msg = s_msg (S_ENGINE, NULL);
    ck_assert_int_eq (bn_hosts_wrap (NULL, msg), 0);
    ck_assert_int_eq (bn_hosts_unwrap (NULL, msg), 0);
    ck_assert_uint_eq (bn_msg_nidents (msg), 1);
    bn_msg_destroy (&msg);
    bn_hosts_destroy (&hosts);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_hosts");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_link_ids);
    tcase_add_test (tc, test_stray);
    tcase_add_test (tc, test_routes);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? 1 : 0;
}

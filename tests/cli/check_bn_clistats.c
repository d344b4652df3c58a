/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_clistats: the controller's counters as banyan stats prints
    them: rows, the tree's nodes as actors, nested counters, selection,
    the table and the JSON.  */
#include "bn_clistats.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Counters of the shape the controller sends, trimmed.
static const char *s_sample =
    "{\"records\": {\"storage\": \"memory\", \"records\": 3,"
    "               \"link\": {\"delivered\": 6, \"dropped\": 0}},"
    " \"mux\": {\"received\": 16, \"forwarded\": 16},"
    " \"broadcast\": {\"mode\": \"processes\", \"requests\": 0,"
    "   \"nodes\": [{\"pid\": 101, \"state\": \"ready\", \"last_loss\": null,"
    "                \"received\": 3},"
    "               {\"pid\": 102, \"state\": \"ready\", \"received\": 3,"
    "                \"hops\": [1, 2.5, \"x\"], \"none\": []}]}}";

//  What print writes, as a new string.
static char *
s_printed (bn_clistats_t *stats, bool json)
{
    char *text = NULL;
    size_t size = 0;
    FILE *file = open_memstream (&text, &size);
    ck_assert_ptr_nonnull (file);
    if (json)
        ck_assert_int_eq (bn_clistats_print_json (stats, file), 0);
    else
        bn_clistats_print (stats, file);
    fclose (file);
    return text;
}

START_TEST (test_usage)
{
    bn_clistats_t *stats = bn_clistats_new (s_sample);
    ck_assert_ptr_nonnull (stats);
    //  actors in the controller's order, each list item an actor of its own
    //  after its parent's counters, nested counters dotted
    static const char *rows[][3] = {
        {"records", "storage", "memory"},   {"records", "records", "3"},
        {"records", "link.delivered", "6"}, {"records", "link.dropped", "0"},
        {"mux", "received", "16"},          {"mux", "forwarded", "16"},
        {"broadcast", "mode", "processes"}, {"broadcast", "requests", "0"},
        {"broadcast.0", "pid", "101"},      {"broadcast.0", "state", "ready"},
        {"broadcast.0", "last_loss", "-"},  {"broadcast.0", "received", "3"},
        {"broadcast.1", "pid", "102"},      {"broadcast.1", "state", "ready"},
        {"broadcast.1", "received", "3"},   {"broadcast.1", "hops", "1,2.5,x"},
        {"broadcast.1", "none", "-"},
    };
    size_t expected = sizeof rows / sizeof rows[0];
    ck_assert_uint_eq (bn_clistats_size (stats), expected);
    for (size_t i = 0; i < expected; i++) {
        ck_assert_str_eq (bn_clistats_actor (stats, i), rows[i][0]);
        ck_assert_str_eq (bn_clistats_counter (stats, i), rows[i][1]);
        ck_assert_str_eq (bn_clistats_value (stats, i), rows[i][2]);
    }
    char *names = bn_clistats_actors (stats);
    ck_assert_str_eq (names,
                      "records, mux, broadcast, broadcast.0, broadcast.1");
    free (names);

    //  the table: columns as wide as their longest entry
    char *table = s_printed (stats, false);
    const char *head = "ACTOR        COUNTER         VALUE\n"
                       "records      storage         memory\n"
                       "records      records         3\n"
                       "records      link.delivered  6\n";
    ck_assert_msg (strncmp (table, head, strlen (head)) == 0, "%s", table);
    ck_assert (strstr (table, "\nbroadcast.1  received        3\n"));
    free (table);
    bn_clistats_destroy (&stats);
    ck_assert_ptr_null (stats);
    bn_clistats_destroy (&stats);
}
END_TEST

START_TEST (test_select)
{
    bn_clistats_t *stats = bn_clistats_new (s_sample);
    //  an unknown actor, or a prefix that is not a whole name: nothing
    //  changes
    ck_assert_int_eq (bn_clistats_select (stats, "nope"), -1);
    ck_assert_int_eq (bn_clistats_select (stats, "broad"), -1);
    ck_assert_uint_eq (bn_clistats_size (stats), 17);
    //  an actor keeps its parts
    ck_assert_int_eq (bn_clistats_select (stats, "broadcast"), 0);
    ck_assert_uint_eq (bn_clistats_size (stats), 11);
    ck_assert_str_eq (bn_clistats_actor (stats, 0), "broadcast");
    ck_assert_str_eq (bn_clistats_actor (stats, 10), "broadcast.1");
    //  a part alone; its JSON is its own object
    ck_assert_int_eq (bn_clistats_select (stats, "broadcast.0"), 0);
    ck_assert_uint_eq (bn_clistats_size (stats), 4);
    char *text = s_printed (stats, true);
    json_t *printed = json_loads (text, 0, NULL);
    ck_assert (json_is_object (printed));
    ck_assert_int_eq (json_integer_value (json_object_get (printed, "pid")),
                      101);
    ck_assert_uint_eq (json_object_size (printed), 4);
    json_decref (printed);
    free (text);
    bn_clistats_destroy (&stats);

    //  unselected, the JSON is every actor's, as the controller sent it
    stats = bn_clistats_new (s_sample);
    text = s_printed (stats, true);
    printed = json_loads (text, 0, NULL);
    json_t *sample = json_loads (s_sample, 0, NULL);
    ck_assert (json_equal (printed, sample));
    json_decref (printed);
    json_decref (sample);
    free (text);
    bn_clistats_destroy (&stats);
}
END_TEST

START_TEST (test_bad_input)
{
    //  not an object of objects
    const char *bad[] = {"",
                         "[1, 2]",
                         "42",
                         "{\"hub\": 3}",
                         "{\"hub\": {\"x\": 1}, \"mux\": [1]}",
                         "{\"a\": "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg (bn_clistats_new (bad[i]) == NULL, "accepted %s", bad[i]);
    //  no actors: an empty table
    bn_clistats_t *stats = bn_clistats_new ("{}");
    ck_assert_ptr_nonnull (stats);
    ck_assert_uint_eq (bn_clistats_size (stats), 0);
    char *table = s_printed (stats, false);
    ck_assert_str_eq (table, "ACTOR  COUNTER  VALUE\n");
    free (table);
    bn_clistats_destroy (&stats);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_clistats");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_select);
    tcase_add_test (tc, test_bad_input);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed == 0 ? 0 : 1;
}

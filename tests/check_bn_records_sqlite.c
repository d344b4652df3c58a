/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_records_sqlite: rows written and read back as they were,
    frames too long for one row kept in pieces, and the pieces going with
    their row.  */
#include <check.h>
#include <czmq.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include "bn_msgtypes.h"
#include "bn_records_sqlite.h"

static bn_session_t *s_session;
static char s_path[64];

static void
s_setup (void)
{
    s_session = bn_session_new ("key", NULL);
    ck_assert_ptr_nonnull (s_session);
    snprintf (s_path, sizeof s_path, "/tmp/check_bn_records_sqlite.XXXXXX");
    int fd = mkstemp (s_path);
    ck_assert_int_ge (fd, 0);
    close (fd);
    unlink (s_path);
}

static void
s_teardown (void)
{
    bn_session_destroy (&s_session);
    unlink (s_path);
}

//  A buffer of size bytes, each byte from its offset and seed, so that a
//  piece read back in the wrong place or order shows.
static void
s_add_buffer (bn_msg_t *msg, size_t size, unsigned seed)
{
    unsigned char *data = malloc (size ? size : 1);
    ck_assert_ptr_nonnull (data);
    for (size_t i = 0; i < size; i++)
        data[i] = (unsigned char)((i * 31 + seed) ^ (i >> 8));
    ck_assert_int_eq (bn_msg_add_buffer (msg, data, size), 0);
    free (data);
}

//  A message of type with buffers of the sizes given (count of them).
static bn_msg_t *
s_msg (const char *type, const size_t *sizes, size_t count, unsigned seed)
{
    bn_msg_t *msg = bn_msg_new (s_session, type);
    ck_assert_ptr_nonnull (msg);
    bn_msg_set_content (msg, json_pack ("{s:i}", "seed", (int)seed));
    for (size_t i = 0; i < count; i++)
        s_add_buffer (msg, sizes[i], seed + (unsigned)i);
    return msg;
}

//  True if a and b have the same content and the same buffers, or are
//  both NULL.
static bool
s_same (bn_msg_t *a, bn_msg_t *b)
{
    if (!a || !b)
        return a == b;
    if (bn_msg_nbuffers (a) != bn_msg_nbuffers (b) ||
        !json_equal (bn_msg_content (a), bn_msg_content (b)))
        return false;
    for (size_t i = 0; i < bn_msg_nbuffers (a); i++) {
        zmq_msg_t *x = bn_msg_buffer (a, i), *y = bn_msg_buffer (b, i);
        if (zmq_msg_size (x) != zmq_msg_size (y) ||
            memcmp (zmq_msg_data (x), zmq_msg_data (y), zmq_msg_size (x)) != 0)
            return false;
    }
    return true;
}

typedef struct {
    const bn_records_row_t *expected;
    int rows;
} s_check_t;

static int
s_check_row (void *arg, const bn_records_row_t *row)
{
    s_check_t *check = arg;
    const bn_records_row_t *expected = check->expected;
    ck_assert_str_eq (row->msg_id, expected->msg_id);
    ck_assert (s_same (row->request, expected->request));
    ck_assert (s_same (row->reply, expected->reply));
    ck_assert_uint_eq (row->nparts, expected->nparts);
    for (size_t p = 0; p < row->nparts; p++)
        ck_assert (s_same (row->parts[p], expected->parts[p]));
    check->rows++;
    return 0;
}

//  Rows of the pieces table for msg_id, read by SQLite itself.
static int
s_pieces (const char *msg_id)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq (sqlite3_open_v2 (s_path, &db, SQLITE_OPEN_READONLY, NULL),
                      SQLITE_OK);
    sqlite3_stmt *stmt = NULL;
    ck_assert_int_eq (sqlite3_prepare_v2 (
                          db,
                          "SELECT count(*) FROM banyan_pieces WHERE msg_id = ?",
                          -1, &stmt, NULL),
                      SQLITE_OK);
    sqlite3_bind_text (stmt, 1, msg_id, -1, SQLITE_STATIC);
    ck_assert_int_eq (sqlite3_step (stmt), SQLITE_ROW);
    int count = sqlite3_column_int (stmt, 0);
    sqlite3_finalize (stmt);
    sqlite3_close (db);
    return count;
}

static void
s_put (bn_records_sqlite_t *db, const bn_records_row_t *row)
{
    ck_assert_int_eq (bn_records_sqlite_begin (db), 0);
    ck_assert_msg (bn_records_sqlite_put (db, row) == 0, "%s",
                   bn_records_sqlite_error (db));
    ck_assert_int_eq (bn_records_sqlite_commit (db), 0);
}

START_TEST (test_small_inline)
{
    char err[256];
    bn_records_sqlite_t *db = bn_records_sqlite_new (s_path, err, sizeof err);
    ck_assert_msg (db != NULL, "%s", err);
    size_t sizes[] = {0, 100, 5000};
    bn_msg_t *request = s_msg (BN_MSG_APPLY_REQUEST, sizes, 3, 1);
    bn_msg_t *reply = s_msg (BN_MSG_APPLY_REPLY, sizes + 1, 1, 7);
    bn_records_row_t row = {
        .msg_id = "small", .queue = "mux", .request = request, .reply = reply};
    s_put (db, &row);
    s_check_t check = {.expected = &row};
    ck_assert_int_eq (bn_records_sqlite_get (db, "small", s_check_row, &check),
                      1);
    ck_assert_int_eq (check.rows, 1);
    ck_assert_int_eq (s_pieces ("small"), 0);
    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    bn_records_sqlite_destroy (&db);
}
END_TEST

//  SQLite's length limit lowered to 64 KiB stands for its gigabyte: a
//  message whose buffers are longer than a row may be is stored in
//  pieces and read back whole; before, the write failed (SQLITE_TOOBIG)
//  and bn_records gave up the database.
START_TEST (test_pieces)
{
    char err[256];
    bn_records_sqlite_t *db = bn_records_sqlite_new (s_path, err, sizeof err);
    ck_assert_msg (db != NULL, "%s", err);
    ck_assert_int_eq (bn_records_sqlite_max_length (db, 64 << 10), 0);
    size_t request_sizes[] = {10, 300000, 0, 70000};
    size_t reply_sizes[] = {200000};
    size_t part_sizes[] = {150000, 5};
    bn_msg_t *request = s_msg (BN_MSG_APPLY_REQUEST, request_sizes, 4, 3);
    bn_msg_t *reply = s_msg (BN_MSG_APPLY_REPLY, reply_sizes, 1, 11);
    bn_msg_t *parts[] = {s_msg (BN_MSG_APPLY_REPLY, part_sizes, 2, 17),
                         s_msg (BN_MSG_APPLY_REPLY, NULL, 0, 23)};
    bn_records_row_t row = {.msg_id = "big",
                            .queue = "broadcast",
                            .request = request,
                            .reply = reply,
                            .has_parts = true,
                            .parts = parts,
                            .nparts = 2};
    s_put (db, &row);
    //  (380,040 + 200,008 + 150,000-odd bytes in pieces of under 64 KiB)
    int pieces = s_pieces ("big");
    ck_assert_int_ge (pieces, 12);
    s_check_t check = {.expected = &row};
    ck_assert_int_eq (bn_records_sqlite_get (db, "big", s_check_row, &check),
                      1);
    ck_assert_int_eq (check.rows, 1);

    //  written again (its reply came): the old pieces are replaced, not
    //  added to
    s_put (db, &row);
    ck_assert_int_eq (s_pieces ("big"), pieces);
    ck_assert_int_eq (bn_records_sqlite_each (db, true, s_check_row, &check),
                      0);
    ck_assert_int_eq (check.rows, 2);
    //  read for a query that reports no buffers: none read, the rest whole
    bn_msg_t *bare_request = s_msg (BN_MSG_APPLY_REQUEST, NULL, 0, 3);
    bn_msg_t *bare_reply = s_msg (BN_MSG_APPLY_REPLY, NULL, 0, 11);
    bn_records_row_t bare = row;
    bare.request = bare_request;
    bare.reply = bare_reply;
    s_check_t bare_check = {.expected = &bare};
    ck_assert_int_eq (
        bn_records_sqlite_each (db, false, s_check_row, &bare_check), 0);
    ck_assert_int_eq (bare_check.rows, 1);
    bn_msg_destroy (&bare_request);
    bn_msg_destroy (&bare_reply);

    //  a database opened again reads them the same
    bn_records_sqlite_destroy (&db);
    db = bn_records_sqlite_new (s_path, err, sizeof err);
    ck_assert_msg (db != NULL, "%s", err);
    ck_assert_int_eq (bn_records_sqlite_get (db, "big", s_check_row, &check),
                      1);
    ck_assert_int_eq (check.rows, 3);

    //  the row dropped takes its pieces with it
    ck_assert_int_eq (bn_records_sqlite_begin (db), 0);
    ck_assert_int_eq (bn_records_sqlite_drop (db, "big"), 0);
    ck_assert_int_eq (bn_records_sqlite_commit (db), 0);
    ck_assert_int_eq (s_pieces ("big"), 0);
    ck_assert_int_eq (bn_records_sqlite_get (db, "big", s_check_row, &check),
                      0);

    bn_msg_destroy (&request);
    bn_msg_destroy (&reply);
    bn_msg_destroy (&parts[0]);
    bn_msg_destroy (&parts[1]);
    bn_records_sqlite_destroy (&db);
}
END_TEST

//  A piece missing from the file (another program changed it): the
//  message comes back without its buffers, and nothing is read out of
//  bounds.
START_TEST (test_piece_missing)
{
    char err[256];
    bn_records_sqlite_t *db = bn_records_sqlite_new (s_path, err, sizeof err);
    ck_assert_msg (db != NULL, "%s", err);
    ck_assert_int_eq (bn_records_sqlite_max_length (db, 64 << 10), 0);
    size_t sizes[] = {200000};
    bn_msg_t *request = s_msg (BN_MSG_APPLY_REQUEST, sizes, 1, 5);
    bn_records_row_t row = {.msg_id = "cut", .request = request};
    s_put (db, &row);
    sqlite3 *raw = NULL;
    ck_assert_int_eq (sqlite3_open (s_path, &raw), SQLITE_OK);
    ck_assert_int_eq (sqlite3_exec (raw,
                                    "DELETE FROM banyan_pieces WHERE piece = 1",
                                    NULL, NULL, NULL),
                      SQLITE_OK);
    sqlite3_close (raw);
    bn_msg_t *empty = s_msg (BN_MSG_APPLY_REQUEST, NULL, 0, 5);
    bn_records_row_t expected = {.msg_id = "cut", .request = empty};
    s_check_t check = {.expected = &expected};
    ck_assert_int_eq (bn_records_sqlite_get (db, "cut", s_check_row, &check),
                      1);
    ck_assert_int_eq (check.rows, 1);
    bn_msg_destroy (&empty);
    bn_msg_destroy (&request);
    bn_records_sqlite_destroy (&db);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_records_sqlite");
    TCase *tc = tcase_create ("core");
    tcase_add_checked_fixture (tc, s_setup, s_teardown);
    tcase_set_timeout (tc, 30);
    tcase_add_test (tc, test_small_inline);
    tcase_add_test (tc, test_pieces);
    tcase_add_test (tc, test_piece_missing);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

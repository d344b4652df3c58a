/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_records_sqlite: one table of task records, written with prepared
    statements and bound parameters only. A message is stored as its four
    JSON parts (BLOBs, NULL header = no message) and its buffers packed in
    one BLOB as (8-byte little-endian length, bytes)...; a broadcast's
    other replies (parts) in one BLOB, each as its frame count (8 bytes,
    little-endian) and its frames so packed: header, parent, metadata,
    content, buffers. A packed column of more than S_INLINE_MAX bytes is
    kept in pieces of at most S_PIECE_MAX bytes in banyan_pieces instead,
    the column holding its length (an INTEGER): the frames are written
    into the pieces where they lie, not copied into one blob first, and
    no blob comes near SQLite's length limit (1,000,000,000 bytes).  */
#include "bn_records_sqlite.h"

#include "bn_log.h"

#include <assert.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_INLINE_MAX (1 << 20) //  Bytes of frames packed into the row itself
#define S_PIECE_MAX (64 << 20) //  Bytes of frames in one row of banyan_pieces
#define S_ROW_SPARE 4096       //  Bytes of a row that are not its blob

#define S_COLUMNS                                                              \
    "msg_id, queue, engine_uuid, resubmitted, submitted, received, header, "   \
    "parent, metadata, content, buffers, result_header, result_parent, "       \
    "result_metadata, result_content, result_buffers, io, parts"

enum {
    S_COL_MSG_ID,
    S_COL_QUEUE,
    S_COL_ENGINE,
    S_COL_RESUBMITTED,
    S_COL_SUBMITTED,
    S_COL_RECEIVED,
    S_COL_REQUEST, //  4 parts, then buffers
    S_COL_REPLY = S_COL_REQUEST + 5,
    S_COL_IO = S_COL_REPLY + 5,
    S_COL_PARTS,
    S_NCOLS
};

struct _bn_records_sqlite_t {
    sqlite3 *db;
    sqlite3_stmt *put;
    sqlite3_stmt *get;
    sqlite3_stmt *each;
    sqlite3_stmt *drop;
    sqlite3_stmt *history;
    sqlite3_stmt *unanswered;
    sqlite3_stmt *begin;
    sqlite3_stmt *commit;
    sqlite3_stmt *rollback;
    sqlite3_stmt *piece_put;
    sqlite3_stmt *piece_get;
    sqlite3_stmt *piece_drop;
    bool in_transaction;
    char error[256];
};

static void
s_error (bn_records_sqlite_t *self, const char *what)
{
    snprintf (self->error, sizeof self->error, "%s: %s", what,
              self->db ? sqlite3_errmsg (self->db) : "cannot open");
}

void
bn_records_sqlite_destroy (bn_records_sqlite_t **self_p)
{
    assert (self_p);
    bn_records_sqlite_t *self = *self_p;
    if (!self)
        return;
    sqlite3_stmt *all[] = {self->put,       self->get,       self->each,
                           self->drop,      self->history,   self->unanswered,
                           self->begin,     self->commit,    self->rollback,
                           self->piece_put, self->piece_get, self->piece_drop};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sqlite3_finalize (all[i]);
    if (sqlite3_close (self->db) != SQLITE_OK)
        bn_log_error ("records: cannot close SQLite: %s",
                      sqlite3_errmsg (self->db));
    free (self);
    *self_p = NULL;
}

static int
s_prepare (bn_records_sqlite_t *self, sqlite3_stmt **stmt, const char *sql)
{
    if (sqlite3_prepare_v2 (self->db, sql, -1, stmt, NULL) != SQLITE_OK) {
        s_error (self, "prepare");
        return -1;
    }
    return 0;
}

bn_records_sqlite_t *
bn_records_sqlite_new (const char *path, char *err, size_t err_size)
{
    assert (path);
    bn_records_sqlite_t *self = calloc (1, sizeof *self);
    if (!self) {
        snprintf (err, err_size, "out of memory");
        return NULL;
    }
    //  records hold what clients sent: a new file is readable by its
    //  owner only, as the connection files are (SQLite gives its journal
    //  the database's mode)
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close (fd);
    int rc = sqlite3_open_v2 (path, &self->db,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        snprintf (err, err_size, "cannot open %s: %s", path,
                  self->db ? sqlite3_errmsg (self->db) : sqlite3_errstr (rc));
        bn_records_sqlite_destroy (&self);
        return NULL;
    }
    sqlite3_busy_timeout (self->db, 1000);
    char *message = NULL;
    rc = sqlite3_exec (
        self->db,
        "PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS banyan_records ("
        " msg_id TEXT PRIMARY KEY, queue TEXT, engine_uuid TEXT,"
        " resubmitted TEXT, submitted INTEGER, received INTEGER,"
        " header BLOB, parent BLOB, metadata BLOB, content BLOB, buffers BLOB,"
        " result_header BLOB, result_parent BLOB, result_metadata BLOB,"
        " result_content BLOB, result_buffers BLOB, io TEXT, parts BLOB);"
        "CREATE INDEX IF NOT EXISTS banyan_records_submitted"
        " ON banyan_records (submitted);"
        "CREATE TABLE IF NOT EXISTS banyan_pieces ("
        " msg_id TEXT, col INTEGER, piece INTEGER, data BLOB,"
        " UNIQUE (msg_id, col, piece));",
        NULL, NULL, &message);
    if (rc != SQLITE_OK) {
        snprintf (err, err_size, "cannot use %s: %s", path,
                  message ? message : sqlite3_errstr (rc));
        sqlite3_free (message);
        bn_records_sqlite_destroy (&self);
        return NULL;
    }
    //  a file of a banyan that kept no parts gets their column
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2 (self->db, "SELECT parts FROM banyan_records", -1,
                            &probe, NULL) != SQLITE_OK)
        rc = sqlite3_exec (self->db,
                           "ALTER TABLE banyan_records ADD COLUMN parts BLOB",
                           NULL, NULL, &message);
    sqlite3_finalize (probe);
    if (rc != SQLITE_OK) {
        snprintf (err, err_size, "cannot use %s: %s", path,
                  message ? message : sqlite3_errstr (rc));
        sqlite3_free (message);
        bn_records_sqlite_destroy (&self);
        return NULL;
    }
    if (sqlite3_db_readonly (self->db, "main") == 1) {
        snprintf (err, err_size, "cannot write %s: read-only", path);
        bn_records_sqlite_destroy (&self);
        return NULL;
    }
    if (s_prepare (self, &self->put,
                   "INSERT OR REPLACE INTO banyan_records (" S_COLUMNS
                   ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") ||
        s_prepare (self, &self->get,
                   "SELECT " S_COLUMNS
                   " FROM banyan_records WHERE msg_id = ?") ||
        s_prepare (self, &self->each,
                   "SELECT " S_COLUMNS " FROM banyan_records ORDER BY"
                   " submitted IS NULL OR submitted = 0, submitted, rowid") ||
        s_prepare (self, &self->drop,
                   "DELETE FROM banyan_records WHERE msg_id = ?") ||
        s_prepare (self, &self->history,
                   "SELECT msg_id FROM banyan_records WHERE header IS NOT NULL"
                   " ORDER BY submitted IS NULL OR submitted = 0, submitted,"
                   " rowid") ||
        s_prepare (self, &self->unanswered,
                   "SELECT msg_id FROM banyan_records WHERE header IS NOT NULL"
                   " AND result_header IS NULL ORDER BY submitted, rowid") ||
        s_prepare (self, &self->begin, "BEGIN IMMEDIATE") ||
        s_prepare (self, &self->commit, "COMMIT") ||
        s_prepare (self, &self->rollback, "ROLLBACK") ||
        s_prepare (self, &self->piece_put,
                   "INSERT INTO banyan_pieces (msg_id, col, piece, data)"
                   " VALUES (?,?,?,?)") ||
        s_prepare (self, &self->piece_get,
                   "SELECT data FROM banyan_pieces WHERE msg_id = ? AND col = ?"
                   " ORDER BY piece") ||
        s_prepare (self, &self->piece_drop,
                   "DELETE FROM banyan_pieces WHERE msg_id = ?")) {
        snprintf (err, err_size, "cannot use %s: %s", path, self->error);
        bn_records_sqlite_destroy (&self);
        return NULL;
    }
    return self;
}

const char *
bn_records_sqlite_error (bn_records_sqlite_t *self)
{
    return self ? self->error : "closed";
}

static int
s_step_done (bn_records_sqlite_t *self, sqlite3_stmt *stmt, const char *what)
{
    int rc = sqlite3_step (stmt);
    sqlite3_reset (stmt);
    if (rc != SQLITE_DONE) {
        s_error (self, what);
        return -1;
    }
    return 0;
}

int
bn_records_sqlite_begin (bn_records_sqlite_t *self)
{
    assert (self);
    if (s_step_done (self, self->begin, "BEGIN") != 0)
        return -1;
    self->in_transaction = true;
    return 0;
}

int
bn_records_sqlite_commit (bn_records_sqlite_t *self)
{
    assert (self);
    int rc = s_step_done (self, self->commit, "COMMIT");
    if (rc == 0)
        self->in_transaction = false;
    return rc;
}

void
bn_records_sqlite_rollback (bn_records_sqlite_t *self)
{
    if (!self || !self->in_transaction)
        return;
    sqlite3_step (self->rollback);
    sqlite3_reset (self->rollback);
    self->in_transaction = false;
}

static int
s_bind_text (sqlite3_stmt *stmt, int col, const char *text)
{
    return text ? sqlite3_bind_text (stmt, col + 1, text, -1, SQLITE_STATIC)
                : sqlite3_bind_null (stmt, col + 1);
}

static void
s_put_len (unsigned char *at, uint64_t len)
{
    for (int b = 0; b < 8; b++)
        at[b] = (unsigned char)(len >> (8 * b));
}

static uint64_t
s_get_len (const unsigned char *at)
{
    uint64_t len = 0;
    for (int b = 0; b < 8; b++)
        len |= (uint64_t)at[b] << (8 * b);
    return len;
}

//  A packed column being written: into blob when it is kept in the row,
//  else straight into its pieces in banyan_pieces.
typedef struct {
    bn_records_sqlite_t *self;
    const char *msg_id;
    int col;
    uint64_t total;       //  Bytes of the packed column
    uint64_t at;          //  Bytes written so far
    unsigned char *blob;  //  The whole column, when inline
    sqlite3_blob *piece;  //  The piece being written, when in pieces
    uint64_t piece_start; //  Its first byte's offset in the column
    uint64_t piece_end;   //  Its end's
    int pieces;           //  Pieces begun
    int rc;
} s_writer_t;

//  Bytes a blob of the database may hold, from SQLite's length limit.
static uint64_t
s_length_limit (bn_records_sqlite_t *self)
{
    int limit = sqlite3_limit (self->db, SQLITE_LIMIT_LENGTH, -1);
    return limit > S_ROW_SPARE ? (uint64_t)(limit - S_ROW_SPARE) : 1;
}

static int
s_writer_start (s_writer_t *w, bn_records_sqlite_t *self, const char *msg_id,
                int col, uint64_t total)
{
    *w = (s_writer_t){
        .self = self, .msg_id = msg_id, .col = col, .total = total};
    uint64_t limit = s_length_limit (self);
    if (total <= S_INLINE_MAX && total <= limit / 4) {
        w->blob = malloc (total ? total : 1);
        w->rc = w->blob ? 0 : -1;
    }
    return w->rc;
}

//  Begin the next piece: a row of zeroes as long as the piece, then
//  opened for writing.
static int
s_writer_next_piece (s_writer_t *w)
{
    bn_records_sqlite_t *self = w->self;
    if (w->piece)
        sqlite3_blob_close (w->piece);
    w->piece = NULL;
    uint64_t limit = s_length_limit (self);
    uint64_t size = w->total - w->at;
    if (size > S_PIECE_MAX)
        size = S_PIECE_MAX;
    if (size > limit)
        size = limit;
    sqlite3_stmt *stmt = self->piece_put;
    int rc = sqlite3_bind_text (stmt, 1, w->msg_id, -1, SQLITE_STATIC);
    rc = rc ? rc : sqlite3_bind_int (stmt, 2, w->col);
    rc = rc ? rc : sqlite3_bind_int (stmt, 3, w->pieces);
    rc = rc ? rc : sqlite3_bind_zeroblob64 (stmt, 4, size);
    rc = rc ? rc : sqlite3_step (stmt);
    sqlite3_reset (stmt);
    sqlite3_clear_bindings (stmt);
    if (rc != SQLITE_DONE ||
        sqlite3_blob_open (self->db, "main", "banyan_pieces", "data",
                           sqlite3_last_insert_rowid (self->db), 1,
                           &w->piece) != SQLITE_OK) {
        s_error (self, "write pieces");
        return -1;
    }
    w->pieces++;
    w->piece_start = w->at;
    w->piece_end = w->at + size;
    return 0;
}

static void
s_write (s_writer_t *w, const void *data, uint64_t len)
{
    const unsigned char *bytes = data;
    if (w->rc == 0 && w->blob && len) {
        memcpy (w->blob + w->at, bytes, len);
        w->at += len;
        return;
    }
    while (w->rc == 0 && len) {
        if ((!w->piece || w->at == w->piece_end) &&
            s_writer_next_piece (w) != 0) {
            w->rc = -1;
            break;
        }
        uint64_t n = w->piece_end - w->at;
        if (n > len)
            n = len;
        if (sqlite3_blob_write (w->piece, bytes, (int)n,
                                (int)(w->at - w->piece_start)) != SQLITE_OK) {
            s_error (w->self, "write pieces");
            w->rc = -1;
            break;
        }
        w->at += n;
        bytes += n;
        len -= n;
    }
}

//  Write a packed frame: its length, then its bytes.
static void
s_write_frame (s_writer_t *w, const void *data, uint64_t len)
{
    unsigned char head[8];
    s_put_len (head, len);
    s_write (w, head, 8);
    s_write (w, data, len);
}

//  Bind the column written: its blob, or its length when in pieces. The
//  blob stays the caller's (s_writer_end) until the statement is stepped.
static int
s_writer_bind (s_writer_t *w, sqlite3_stmt *stmt)
{
    if (w->piece)
        sqlite3_blob_close (w->piece);
    w->piece = NULL;
    if (w->rc != 0 || w->at != w->total)
        return -1;
    int rc = w->blob ? sqlite3_bind_blob64 (stmt, w->col + 1, w->blob, w->total,
                                            SQLITE_STATIC)
                     : sqlite3_bind_int64 (stmt, w->col + 1,
                                           (sqlite3_int64)w->total);
    return rc == SQLITE_OK ? 0 : -1;
}

static void
s_writer_end (s_writer_t *w)
{
    if (w->piece)
        sqlite3_blob_close (w->piece);
    w->piece = NULL;
    free (w->blob);
    w->blob = NULL;
}

//  Bind a message's parts and packed buffers from column first on.
static int
s_bind_msg (bn_records_sqlite_t *self, sqlite3_stmt *stmt, const char *msg_id,
            int first, bn_msg_t *msg, s_writer_t *w)
{
    *w = (s_writer_t){0};
    if (!msg) {
        for (int i = 0; i < 5; i++)
            if (sqlite3_bind_null (stmt, first + i + 1) != SQLITE_OK)
                return -1;
        return 0;
    }
    for (int part = 0; part < 4; part++) {
        size_t size;
        const void *data = bn_msg_part_data (msg, (bn_part_t)part, &size);
        if (sqlite3_bind_blob64 (stmt, first + part + 1, size ? data : "", size,
                                 SQLITE_STATIC) != SQLITE_OK)
            return -1;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < bn_msg_nbuffers (msg); i++)
        total += 8 + zmq_msg_size (bn_msg_buffer (msg, i));
    if (s_writer_start (w, self, msg_id, first + 4, total) != 0)
        return -1;
    for (size_t i = 0; i < bn_msg_nbuffers (msg); i++) {
        zmq_msg_t *frame = bn_msg_buffer (msg, i);
        s_write_frame (w, zmq_msg_data (frame), zmq_msg_size (frame));
    }
    return s_writer_bind (w, stmt);
}

//  Bind a row's parts, packed, or NULL.
static int
s_bind_parts (bn_records_sqlite_t *self, sqlite3_stmt *stmt,
              const bn_records_row_t *row, s_writer_t *w)
{
    *w = (s_writer_t){0};
    if (!row->has_parts)
        return sqlite3_bind_null (stmt, S_COL_PARTS + 1) == SQLITE_OK ? 0 : -1;
    uint64_t total = 0;
    for (size_t p = 0; p < row->nparts; p++) {
        bn_msg_t *msg = row->parts[p];
        total += 8;
        for (int part = 0; part < 4; part++) {
            size_t size;
            bn_msg_part_data (msg, (bn_part_t)part, &size);
            total += 8 + size;
        }
        for (size_t i = 0; i < bn_msg_nbuffers (msg); i++)
            total += 8 + zmq_msg_size (bn_msg_buffer (msg, i));
    }
    if (s_writer_start (w, self, row->msg_id, S_COL_PARTS, total) != 0)
        return -1;
    for (size_t p = 0; p < row->nparts; p++) {
        bn_msg_t *msg = row->parts[p];
        unsigned char head[8];
        s_put_len (head, 4 + bn_msg_nbuffers (msg));
        s_write (w, head, 8);
        for (int part = 0; part < 4; part++) {
            size_t size;
            const void *data = bn_msg_part_data (msg, (bn_part_t)part, &size);
            s_write_frame (w, data, size);
        }
        for (size_t i = 0; i < bn_msg_nbuffers (msg); i++) {
            zmq_msg_t *frame = bn_msg_buffer (msg, i);
            s_write_frame (w, zmq_msg_data (frame), zmq_msg_size (frame));
        }
    }
    return s_writer_bind (w, stmt);
}

int
bn_records_sqlite_put (bn_records_sqlite_t *self, const bn_records_row_t *row)
{
    assert (self);
    assert (row && row->msg_id);
    sqlite3_stmt *stmt = self->put;
    s_writer_t request = {0}, reply = {0}, parts = {0};
    int rc = -1;
    //  the row's pieces are written again with it
    if (sqlite3_bind_text (self->piece_drop, 1, row->msg_id, -1,
                           SQLITE_STATIC) != SQLITE_OK ||
        s_step_done (self, self->piece_drop, "delete pieces") != 0) {
        sqlite3_clear_bindings (self->piece_drop);
        return -1;
    }
    sqlite3_clear_bindings (self->piece_drop);
    if (s_bind_text (stmt, S_COL_MSG_ID, row->msg_id) == SQLITE_OK &&
        s_bind_text (stmt, S_COL_QUEUE, row->queue) == SQLITE_OK &&
        s_bind_text (stmt, S_COL_ENGINE, row->engine_uuid) == SQLITE_OK &&
        s_bind_text (stmt, S_COL_RESUBMITTED, row->resubmitted) == SQLITE_OK &&
        sqlite3_bind_int64 (stmt, S_COL_SUBMITTED + 1, row->submitted) ==
            SQLITE_OK &&
        sqlite3_bind_int64 (stmt, S_COL_RECEIVED + 1, row->received) ==
            SQLITE_OK &&
        s_bind_msg (self, stmt, row->msg_id, S_COL_REQUEST, row->request,
                    &request) == 0 &&
        s_bind_msg (self, stmt, row->msg_id, S_COL_REPLY, row->reply, &reply) ==
            0 &&
        s_bind_text (stmt, S_COL_IO, row->io) == SQLITE_OK &&
        s_bind_parts (self, stmt, row, &parts) == 0)
        rc = s_step_done (self, stmt, "write");
    else if (request.rc == 0 && reply.rc == 0 && parts.rc == 0)
        s_error (self, "bind");
    sqlite3_clear_bindings (stmt);
    s_writer_end (&request);
    s_writer_end (&reply);
    s_writer_end (&parts);
    return rc;
}

int
bn_records_sqlite_drop (bn_records_sqlite_t *self, const char *msg_id)
{
    assert (self);
    if (sqlite3_bind_text (self->drop, 1, msg_id, -1, SQLITE_STATIC) !=
        SQLITE_OK) {
        s_error (self, "bind");
        return -1;
    }
    int rc = s_step_done (self, self->drop, "delete");
    sqlite3_clear_bindings (self->drop);
    if (rc == 0 && (sqlite3_bind_text (self->piece_drop, 1, msg_id, -1,
                                       SQLITE_STATIC) != SQLITE_OK ||
                    s_step_done (self, self->piece_drop, "delete pieces") != 0))
        rc = -1;
    sqlite3_clear_bindings (self->piece_drop);
    return rc;
}

//  The packed frames of column col: its blob, or its pieces read into
//  *owned (the caller frees it). NULL with *total 0 when there are none,
//  or when the pieces are not all there.
static const unsigned char *
s_column_packed (bn_records_sqlite_t *self, sqlite3_stmt *stmt, int col,
                 size_t *total, unsigned char **owned)
{
    *owned = NULL;
    *total = 0;
    if (sqlite3_column_type (stmt, col) != SQLITE_INTEGER) {
        *total = (size_t)sqlite3_column_bytes (stmt, col);
        return sqlite3_column_blob (stmt, col);
    }
    sqlite3_int64 length = sqlite3_column_int64 (stmt, col);
    const char *msg_id = (const char *)sqlite3_column_text (stmt, S_COL_MSG_ID);
    unsigned char *blob = length > 0 && (uint64_t)length <= SIZE_MAX
                              ? malloc ((size_t)length)
                              : NULL;
    sqlite3_stmt *get = self->piece_get;
    size_t at = 0;
    int rc = blob && msg_id
                 ? sqlite3_bind_text (get, 1, msg_id, -1, SQLITE_TRANSIENT)
                 : SQLITE_ERROR;
    rc = rc ? rc : sqlite3_bind_int (get, 2, col);
    while (rc == SQLITE_OK && (rc = sqlite3_step (get)) == SQLITE_ROW) {
        size_t size = (size_t)sqlite3_column_bytes (get, 0);
        if (size > (size_t)length - at)
            break;
        if (size)
            memcpy (blob + at, sqlite3_column_blob (get, 0), size);
        at += size;
        rc = SQLITE_OK;
    }
    sqlite3_reset (get);
    sqlite3_clear_bindings (get);
    if (rc != SQLITE_DONE || at != (size_t)length) {
        bn_log_error ("records: the stored frames of %s are incomplete "
                      "(%zu of %lld bytes)",
                      msg_id ? msg_id : "?", at, (long long)length);
        free (blob);
        return NULL;
    }
    *owned = blob;
    *total = at;
    return blob;
}

//  A message from its stored columns, or NULL when it has none; without
//  buffers, its buffers are not read.
static bn_msg_t *
s_column_msg (bn_records_sqlite_t *self, sqlite3_stmt *stmt, int first,
              bool buffers)
{
    if (sqlite3_column_type (stmt, first) == SQLITE_NULL)
        return NULL;
    const void *data[4];
    size_t size[4];
    for (int part = 0; part < 4; part++) {
        data[part] = sqlite3_column_blob (stmt, first + part);
        size[part] = (size_t)sqlite3_column_bytes (stmt, first + part);
        if (!data[part] || size[part] == 0) {
            data[part] = "{}";
            size[part] = 2;
        }
    }
    bn_msg_t *msg = bn_msg_new_parts (data, size);
    if (!buffers)
        return msg;
    unsigned char *owned;
    size_t total;
    const unsigned char *blob =
        s_column_packed (self, stmt, first + 4, &total, &owned);
    size_t at = 0;
    while (msg && blob && at + 8 <= total) {
        uint64_t len = s_get_len (blob + at);
        at += 8;
        if (len > total - at || bn_msg_add_buffer (msg, blob + at, len) != 0)
            break;
        at += len;
    }
    free (owned);
    return msg;
}

//  The next packed frame of blob (total bytes) at *at: its bytes and
//  length; false if what is left is not a whole frame.
static bool
s_unpack (const unsigned char *blob, size_t total, size_t *at,
          const void **data, size_t *len)
{
    if (total - *at < 8)
        return false;
    uint64_t size = s_get_len (blob + *at);
    if (size > total - *at - 8)
        return false;
    *data = blob + *at + 8;
    *len = (size_t)size;
    *at += 8 + (size_t)size;
    return true;
}

//  The messages packed in the parts column into a new array (*count of
//  them), as far as they are well-formed; NULL when there are none.
static bn_msg_t **
s_column_parts (bn_records_sqlite_t *self, sqlite3_stmt *stmt, size_t *count)
{
    *count = 0;
    unsigned char *owned;
    size_t total;
    const unsigned char *blob =
        s_column_packed (self, stmt, S_COL_PARTS, &total, &owned);
    size_t at = 0, max = 0;
    bn_msg_t **parts = NULL;
    while (blob && total - at >= 8) {
        uint64_t nframes = s_get_len (blob + at);
        at += 8;
        //  (each frame takes 8 bytes at least)
        if (nframes < 4 || nframes > (total - at) / 8)
            break;
        const void *data[4];
        size_t size[4];
        bool whole = true;
        for (int part = 0; part < 4 && whole; part++) {
            whole = s_unpack (blob, total, &at, &data[part], &size[part]);
            if (whole && size[part] == 0) {
                data[part] = "{}";
                size[part] = 2;
            }
        }
        if (!whole)
            break;
        if (*count == max) {
            max = max ? 2 * max : 4;
            bn_msg_t **more = realloc (parts, max * sizeof *parts);
            if (!more)
                break;
            parts = more;
        }
        bn_msg_t *msg = bn_msg_new_parts (data, size);
        for (uint64_t i = 4; msg && i < nframes; i++) {
            const void *bytes;
            size_t len;
            if (!s_unpack (blob, total, &at, &bytes, &len) ||
                bn_msg_add_buffer (msg, bytes, len) != 0)
                bn_msg_destroy (&msg);
        }
        if (!msg)
            break;
        parts[(*count)++] = msg;
    }
    free (owned);
    return parts;
}

static const char *
s_column_text (sqlite3_stmt *stmt, int col)
{
    return (const char *)sqlite3_column_text (stmt, col);
}

//  Call fn with the current row of stmt.
static int
s_row (bn_records_sqlite_t *self, sqlite3_stmt *stmt, bool buffers,
       bn_records_row_fn *fn, void *arg)
{
    bn_records_row_t row = {
        .msg_id = s_column_text (stmt, S_COL_MSG_ID),
        .queue = s_column_text (stmt, S_COL_QUEUE),
        .engine_uuid = s_column_text (stmt, S_COL_ENGINE),
        .resubmitted = s_column_text (stmt, S_COL_RESUBMITTED),
        .submitted = sqlite3_column_int64 (stmt, S_COL_SUBMITTED),
        .received = sqlite3_column_int64 (stmt, S_COL_RECEIVED),
        .request = s_column_msg (self, stmt, S_COL_REQUEST, buffers),
        .reply = s_column_msg (self, stmt, S_COL_REPLY, buffers),
        .io = s_column_text (stmt, S_COL_IO),
        .has_parts = sqlite3_column_type (stmt, S_COL_PARTS) != SQLITE_NULL,
    };
    row.parts = s_column_parts (self, stmt, &row.nparts);
    int rc = row.msg_id ? fn (arg, &row) : 0;
    bn_msg_destroy (&row.request);
    bn_msg_destroy (&row.reply);
    for (size_t i = 0; i < row.nparts; i++)
        bn_msg_destroy (&row.parts[i]);
    free (row.parts);
    return rc;
}

int
bn_records_sqlite_get (bn_records_sqlite_t *self, const char *msg_id,
                       bn_records_row_fn *fn, void *arg)
{
    assert (self);
    sqlite3_stmt *stmt = self->get;
    if (sqlite3_bind_text (stmt, 1, msg_id, -1, SQLITE_STATIC) != SQLITE_OK) {
        s_error (self, "bind");
        return -1;
    }
    int found = 0;
    int rc = sqlite3_step (stmt);
    if (rc == SQLITE_ROW) {
        s_row (self, stmt, true, fn, arg);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        s_error (self, "read");
        found = -1;
    }
    sqlite3_reset (stmt);
    sqlite3_clear_bindings (stmt);
    return found;
}

int
bn_records_sqlite_each (bn_records_sqlite_t *self, bool buffers,
                        bn_records_row_fn *fn, void *arg)
{
    assert (self);
    sqlite3_stmt *stmt = self->each;
    int result = 0, rc;
    while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
        if ((result = s_row (self, stmt, buffers, fn, arg)) != 0)
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        s_error (self, "read");
        result = -1;
    }
    sqlite3_reset (stmt);
    return result;
}

//  The first column of every row of stmt as a new JSON array of strings;
//  NULL on error.
static json_t *
s_ids (bn_records_sqlite_t *self, sqlite3_stmt *stmt)
{
    json_t *ids = json_array ();
    int rc = SQLITE_DONE;
    while (ids && (rc = sqlite3_step (stmt)) == SQLITE_ROW)
        json_array_append_new (ids, json_string (s_column_text (stmt, 0)));
    if (ids && rc != SQLITE_DONE) {
        s_error (self, "read");
        json_decref (ids);
        ids = NULL;
    }
    sqlite3_reset (stmt);
    return ids;
}

json_t *
bn_records_sqlite_history (bn_records_sqlite_t *self)
{
    assert (self);
    return s_ids (self, self->history);
}

json_t *
bn_records_sqlite_unanswered (bn_records_sqlite_t *self)
{
    assert (self);
    return s_ids (self, self->unanswered);
}

int
bn_records_sqlite_max_length (bn_records_sqlite_t *self, int bytes)
{
    assert (self);
    sqlite3_limit (self->db, SQLITE_LIMIT_LENGTH, bytes);
    return sqlite3_limit (self->db, SQLITE_LIMIT_LENGTH, -1) == bytes ? 0 : -1;
}

int
bn_records_sqlite_max_pages (bn_records_sqlite_t *self, int pages)
{
    assert (self);
    char sql[64];
    snprintf (sql, sizeof sql, "PRAGMA max_page_count = %d", pages);
    return sqlite3_exec (self->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

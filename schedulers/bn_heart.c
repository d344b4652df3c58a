/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_heart: heart monitor, one PUB for pings and one ROUTER for pongs.

    Pings and pongs are raw frames, not Jupyter messages: the ping is the
    ASCII str() of a float (seconds of monitor lifetime) and an engine's
    heart echoes it as [uuid, ping]. A pong matching the current or the
    previous ping counts; anything else is counted and ignored. With
    bn_heart_set_shared, a pong may also come as [via, uuid, ping] from a
    DEALER that the hearts of one process share (its routing id via starts
    with the prefix given): the heart is uuid, and via is its connection.

    Closed connections: a new heart's pong connection is remembered by its
    descriptor (ZMQ_SRCFD), and a socket monitor on the pong ROUTER reports
    descriptors whose connection closed; a closing is read before a new
    heart's descriptor is noted, as the descriptor may be one that closed
    and was given to another connection. The hearts sharing one connection
    are all reported when it closes.  */
#include "bn_heart.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bn_log.h"
#include "bn_watch.h"

#define S_BATCH 4096  //  pongs read per wake-up before polling again
#define S_KEY_MAX 256 //  longest heart id accepted
#define S_PING_MAX 40 //  room for the text of a double

typedef struct {
    int misses;     //  Beats missed in a row
    bool responded; //  Answered since the last beat
    int fd;         //  Descriptor of its pong connection, -1 if unknown
    char *via;      //  Routing id of the connection it shares, or NULL
} s_heart_t;

typedef struct {
    uint64_t beats;       //  Regular beats
    uint64_t extra_pings; //  Pings sent again for expected hearts
    uint64_t pongs;       //  Good pongs
    uint64_t late_pongs;  //  Pongs to the previous ping
    uint64_t stale_pongs; //  Pongs to older pings
    uint64_t bad_pongs;   //  Pongs not made of two frames / bad ids
    uint64_t unknown;     //  Pongs from hearts neither expected nor known
    uint64_t new_hearts;  //  Expected hearts that answered
    uint64_t stopped;     //  Hearts declared stopped
    uint64_t closed;      //  Hearts whose pong connection closed
} s_stats_t;

struct _bn_heart_t {
    zsock_t *ping;       //  PUB (borrowed)
    zsock_t *pong;       //  ROUTER (borrowed)
    bn_watch_t *sockets; //  pong and monitor, in the loop
    bn_watch_item_t *pong_item;
    bn_watch_item_t *monitor_item;
    int period_ms;            //  Time between beats
    int max_misses;           //  Misses allowed in a row
    zhashx_t *hearts;         //  uuid -> s_heart_t, monitored
    zhashx_t *expected;       //  uuid -> self, waiting for a first pong
    char current[S_PING_MAX]; //  Text of the last ping sent
    size_t current_size;
    char last[S_PING_MAX]; //  Text of the ping before it
    size_t last_size;
    int64_t started_us; //  Monotonic start, for the lifetime
    zloop_t *loop;      //  Loop we beat in, once attached
    int64_t beat_ms;    //  When the loop's last beat was (zclock_mono), or 0
    bool unjudged;      //  That beat did not count misses
    int fast_timer;     //  Extra ping timer id, or -1
    int64_t fast_due;   //  When it fires (zclock_mono)
    bn_heart_fn *on_new;
    bn_heart_fn *on_stopped;
    bn_heart_fn *on_closed;
    bn_heart_fn *on_unknown;
    void *arg;
    zsock_t *monitor; //  PAIR: the pong socket's connections closing
    char *monitor_endpoint;
    zhashx_t *by_fd; //  descriptor text -> s_conn_t, the monitored hearts
                     //  on it
    char *shared;    //  routing id prefix of shared pong sockets, or NULL
    s_stats_t stats;
};

static void
s_free_item (void **item)
{
    free (*item);
    *item = NULL;
}

static void
s_heart_free (void **item)
{
    s_heart_t *heart = (s_heart_t *)*item;
    if (heart)
        free (heart->via);
    free (heart);
    *item = NULL;
}

//  A pong connection: the hearts noted on its descriptor.
typedef struct {
    char *via;     //  the shared connection's routing id, or NULL
    zhashx_t *ids; //  heart id -> self, as a set
} s_conn_t;

static void
s_conn_free (void **item)
{
    s_conn_t *conn = (s_conn_t *)*item;
    if (conn) {
        zhashx_destroy (&conn->ids);
        free (conn->via);
    }
    free (conn);
    *item = NULL;
}

//  Python's str(float): the shortest text that reads back as value, with
//  ".0" for whole numbers.
static size_t
s_float_text (double value, char *buf, size_t size)
{
    int len = 0;
    for (int precision = 1; precision <= 17; precision++) {
        len = snprintf (buf, size, "%.*g", precision, value);
        if (strtod (buf, NULL) == value)
            break;
    }
    if (!strpbrk (buf, ".eEn") && (size_t)len + 2 < size) {
        memcpy (buf + len, ".0", 3);
        len += 2;
    }
    return (size_t)len;
}

bn_heart_t *
bn_heart_new (zsock_t *ping, zsock_t *pong, int period_ms, int max_misses)
{
    assert (ping);
    assert (pong);
    assert (period_ms > 0);
    bn_heart_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->ping = ping;
    self->pong = pong;
    //  a heart that connects again under its name takes the name over at
    //  once, even while its old connection's pipe is still being torn
    //  down; libzmq would otherwise keep the new pipe aside and read its
    //  next pong as a name, and the heart would never be heard again
    zsock_set_router_handover (pong, 1);
    self->period_ms = period_ms;
    self->max_misses = max_misses;
    self->fast_timer = -1;
    self->started_us = zclock_usecs ();
    self->hearts = zhashx_new ();
    self->expected = zhashx_new ();
    if (!self->hearts || !self->expected) {
        bn_heart_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->hearts, s_heart_free);
    self->current_size = s_float_text (0.0, self->current, S_PING_MAX);
    memcpy (self->last, self->current, self->current_size + 1);
    self->last_size = self->current_size;
    return self;
}

void
bn_heart_destroy (bn_heart_t **self_p)
{
    assert (self_p);
    bn_heart_t *self = *self_p;
    if (!self)
        return;
    if (self->loop && self->fast_timer >= 0)
        zloop_timer_end (self->loop, self->fast_timer);
    if (self->sockets) {
        bn_watch_cancel (self->sockets, &self->pong_item);
        bn_watch_cancel (self->sockets, &self->monitor_item);
        bn_watch_destroy (&self->sockets);
    }
    if (self->monitor) {
        zmq_socket_monitor (zsock_resolve (self->pong), NULL, 0);
        zsock_destroy (&self->monitor);
    }
    free (self->monitor_endpoint);
    zhashx_destroy (&self->by_fd);
    zhashx_destroy (&self->hearts);
    zhashx_destroy (&self->expected);
    free (self->shared);
    free (self);
    *self_p = NULL;
}

void
bn_heart_set_handlers (bn_heart_t *self, bn_heart_fn *on_new,
                       bn_heart_fn *on_stopped, void *arg)
{
    assert (self);
    self->on_new = on_new;
    self->on_stopped = on_stopped;
    self->arg = arg;
}

void
bn_heart_set_closed_handler (bn_heart_t *self, bn_heart_fn *on_closed)
{
    assert (self);
    assert (!self->loop);
    self->on_closed = on_closed;
}

static void
s_fd_key (int fd, char key[16])
{
    snprintf (key, 16, "%d", fd);
}

//  Heart key no longer has a known pong connection.
static void
s_fd_forget (bn_heart_t *self, const char *key, s_heart_t *heart)
{
    if (!self->by_fd || heart->fd < 0)
        return;
    char fd[16];
    s_fd_key (heart->fd, fd);
    s_conn_t *conn = (s_conn_t *)zhashx_lookup (self->by_fd, fd);
    if (conn) {
        zhashx_delete (conn->ids, key);
        if (zhashx_size (conn->ids) == 0)
            zhashx_delete (self->by_fd, fd);
    }
    heart->fd = -1;
}

//  Heart key's pongs come on connection fd (through via, or its own when
//  NULL). The hearts noted on fd through another connection are stale
//  (that connection closed and fd was given to this one): they are
//  forgotten there first.
static void
s_fd_note (bn_heart_t *self, const char *key, s_heart_t *heart, int fd)
{
    char text[16];
    s_fd_key (fd, text);
    s_conn_t *conn = (s_conn_t *)zhashx_lookup (self->by_fd, text);
    bool same =
        conn && conn->via && heart->via && streq (conn->via, heart->via);
    if (conn && !same) {
        for (void *item = zhashx_first (conn->ids); item;
             item = zhashx_next (conn->ids)) {
            s_heart_t *stale = zhashx_lookup (
                self->hearts, (const char *)zhashx_cursor (conn->ids));
            if (stale)
                stale->fd = -1;
        }
        zhashx_delete (self->by_fd, text);
        conn = NULL;
    }
    if (!conn) {
        conn = calloc (1, sizeof *conn);
        if (conn) {
            conn->ids = zhashx_new ();
            conn->via = heart->via ? strdup (heart->via) : NULL;
        }
        if (!conn || !conn->ids || (heart->via && !conn->via) ||
            zhashx_insert (self->by_fd, text, conn) != 0) {
            s_conn_free ((void **)&conn);
            return;
        }
    }
    if (zhashx_insert (conn->ids, key, self) == 0)
        heart->fd = fd;
}

//  Read the pong socket's connection events: the heart of a connection
//  that closed is reported.
static void
s_read_monitor (bn_heart_t *self)
{
    void *handle = zsock_resolve (self->monitor);
    while (true) {
        zmq_msg_t event, address;
        zmq_msg_init (&event);
        zmq_msg_init (&address);
        if (zmq_msg_recv (&event, handle, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&event);
            zmq_msg_close (&address);
            return;
        }
        if (zmq_msg_more (&event))
            zmq_msg_recv (&address, handle, 0);
        uint16_t kind = 0;
        uint32_t value = 0;
        if (zmq_msg_size (&event) >= 6) {
            memcpy (&kind, zmq_msg_data (&event), 2);
            memcpy (&value, (char *)zmq_msg_data (&event) + 2, 4);
        }
        zmq_msg_close (&event);
        zmq_msg_close (&address);
        if (kind != ZMQ_EVENT_DISCONNECTED)
            continue;
        char fd[16];
        s_fd_key ((int)value, fd);
        s_conn_t *conn = (s_conn_t *)zhashx_lookup (self->by_fd, fd);
        //  every heart on it, taken first: the handler forgets them
        zlistx_t *keys = conn ? zhashx_keys (conn->ids) : NULL;
        if (!keys)
            continue;
        zhashx_delete (self->by_fd, fd);
        for (const char *key = zlistx_first (keys); key;
             key = zlistx_next (keys)) {
            s_heart_t *heart = zhashx_lookup (self->hearts, key);
            if (!heart || heart->fd != (int)value)
                continue;
            heart->fd = -1;
            self->stats.closed++;
            bn_log_info ("heart: %s's connection closed", key);
            if (self->on_closed)
                self->on_closed (self->arg, key);
        }
        zlistx_destroy (&keys);
    }
}

static int
s_on_monitor (zloop_t *loop, zsock_t *sock, void *arg)
{
    s_read_monitor ((bn_heart_t *)arg);
    return 0;
}

//  Watch the pong socket's connections close.
static int
s_watch (bn_heart_t *self)
{
    self->by_fd = zhashx_new ();
    self->monitor_endpoint =
        zsys_sprintf ("inproc://bn-heart-monitor-%p", (void *)self);
    self->monitor = zsock_new (ZMQ_PAIR);
    if (!self->by_fd || !self->monitor_endpoint || !self->monitor)
        return -1;
    zhashx_set_destructor (self->by_fd, s_conn_free);
    if (zmq_socket_monitor (zsock_resolve (self->pong), self->monitor_endpoint,
                            ZMQ_EVENT_DISCONNECTED) != 0) {
        zsock_destroy (&self->monitor);
        return -1;
    }
    if (zsock_connect (self->monitor, "%s", self->monitor_endpoint) != 0 ||
        !(self->monitor_item = bn_watch_zreader (self->sockets, self->monitor,
                                                 s_on_monitor, self)))
        return -1;
    return 0;
}

int
bn_heart_set_shared (bn_heart_t *self, const char *prefix)
{
    assert (self);
    assert (prefix && *prefix);
    free (self->shared);
    self->shared = strdup (prefix);
    return self->shared ? 0 : -1;
}

const char *
bn_heart_via (bn_heart_t *self, const char *heart)
{
    assert (self);
    assert (heart);
    s_heart_t *known = zhashx_lookup (self->hearts, heart);
    return known ? known->via : NULL;
}

void
bn_heart_set_unknown_handler (bn_heart_t *self, bn_heart_fn *on_unknown)
{
    assert (self);
    self->on_unknown = on_unknown;
}

static void s_beat (bn_heart_t *self, bool judge);

//  The loop's beat. One that comes more than two periods after the last
//  (this process was stopped, SIGSTOP, or starved) does not count misses:
//  the hearts were silent because nobody listened, and their pongs may not
//  even be read yet; it sends a fresh ping, which the next beat judges.
//  Never two beats in a row go unjudged, so that a starved process still
//  finds stopped hearts. A beat less than half a period after the last is
//  the loop catching up with those it could not fire, and is left out.
static int
s_on_beat (zloop_t *loop, int timer_id, void *arg)
{
    bn_heart_t *self = (bn_heart_t *)arg;
    int64_t now = zclock_mono ();
    int64_t since = self->beat_ms ? now - self->beat_ms : self->period_ms;
    if (since < self->period_ms / 2)
        return 0;
    self->beat_ms = now;
    bool judge = since <= 2 * (int64_t)self->period_ms || self->unjudged;
    if (!judge)
        bn_log_info ("heart: a beat %" PRId64 " ms late: misses not counted",
                     since - self->period_ms);
    self->unjudged = !judge;
    s_beat (self, judge);
    return 0;
}

static int
s_on_pong (zloop_t *loop, zsock_t *sock, void *arg)
{
    return bn_heart_pong_ready ((bn_heart_t *)arg);
}

int
bn_heart_attach (bn_heart_t *self, zloop_t *loop)
{
    assert (self);
    assert (loop);
    self->loop = loop;
    //  one descriptor in the loop for the heart's sockets (bn_watch); the
    //  heart only reads them
    self->sockets = bn_watch_new (loop);
    if (!self->sockets || !(self->pong_item = bn_watch_zreader (
                                self->sockets, self->pong, s_on_pong, self)))
        return -1;
    if (self->on_closed && s_watch (self) != 0)
        return -1;
    if (zloop_timer (loop, (size_t)self->period_ms, 0, s_on_beat, self) < 0)
        return -1;
    return 0;
}

static int s_on_fast (zloop_t *loop, int timer_id, void *arg);

//  (Re)arm the extra ping timer to fire after delay ms.
static void
s_arm_fast (bn_heart_t *self, int delay)
{
    if (!self->loop)
        return;
    if (self->fast_timer >= 0)
        zloop_timer_end (self->loop, self->fast_timer);
    self->fast_due = zclock_mono () + delay;
    self->fast_timer =
        zloop_timer (self->loop, (size_t)delay, 1, s_on_fast, self);
}

static int
s_on_fast (zloop_t *loop, int timer_id, void *arg)
{
    bn_heart_t *self = (bn_heart_t *)arg;
    self->fast_timer = -1;
    if (zhashx_size (self->expected) == 0)
        return 0;
    self->stats.extra_pings++;
    bn_heart_ping (self);
    //  a stock engine connects its heart only after starting its kernel,
    //  some 100 ms to 1 s after the reply: keep pinging until it answers
    if (BN_HEART_EXTRA_PING < self->period_ms)
        s_arm_fast (self, BN_HEART_EXTRA_PING);
    return 0;
}

int
bn_heart_expect (bn_heart_t *self, const char *heart)
{
    assert (self);
    assert (heart);
    if (zhashx_insert (self->expected, heart, self) != 0 &&
        !zhashx_lookup (self->expected, heart))
        return -1;
    if (self->fast_timer < 0 ||
        self->fast_due > zclock_mono () + BN_HEART_FAST_PING)
        s_arm_fast (self, BN_HEART_FAST_PING);
    return 0;
}

void
bn_heart_forget (bn_heart_t *self, const char *heart)
{
    assert (self);
    assert (heart);
    zhashx_delete (self->expected, heart);
    s_heart_t *known = zhashx_lookup (self->hearts, heart);
    if (known)
        s_fd_forget (self, heart, known);
    zhashx_delete (self->hearts, heart);
}

static void
s_send_ping (bn_heart_t *self)
{
    zmq_msg_t frame;
    if (zmq_msg_init_size (&frame, self->current_size) != 0)
        return;
    memcpy (zmq_msg_data (&frame), self->current, self->current_size);
    if (zmq_msg_send (&frame, zsock_resolve (self->ping), ZMQ_DONTWAIT) < 0) {
        bn_log_warn ("heart: ping not sent: %s", zmq_strerror (errno));
        zmq_msg_close (&frame);
    }
}

void
bn_heart_ping (bn_heart_t *self)
{
    assert (self);
    s_send_ping (self);
}

void
bn_heart_beat (bn_heart_t *self)
{
    assert (self);
    s_beat (self, true);
}

//  A beat: count the misses of the hearts that did not answer (when judge),
//  report those stopped, send a new ping.
static void
s_beat (bn_heart_t *self, bool judge)
{
    self->stats.beats++;
    zlistx_t *stopped = zlistx_new ();
    assert (stopped);
    zlistx_set_destructor (stopped, s_free_item);
    s_heart_t *heart = zhashx_first (self->hearts);
    while (heart) {
        if (heart->responded)
            heart->misses = 0;
        else if (judge && ++heart->misses > self->max_misses)
            zlistx_add_end (
                stopped, strdup ((const char *)zhashx_cursor (self->hearts)));
        else if (judge)
            bn_log_info ("heart: %s missed %d beat(s)",
                         (const char *)zhashx_cursor (self->hearts),
                         heart->misses);
        heart->responded = false;
        heart = zhashx_next (self->hearts);
    }
    const char *uuid = zlistx_first (stopped);
    while (uuid) {
        s_heart_t *gone = zhashx_lookup (self->hearts, uuid);
        if (gone) {
            s_fd_forget (self, uuid, gone);
            zhashx_delete (self->hearts, uuid);
            self->stats.stopped++;
            bn_log_warn ("heart: %s stopped (more than %d missed beats)", uuid,
                         self->max_misses);
            if (self->on_stopped)
                self->on_stopped (self->arg, uuid);
        }
        uuid = zlistx_next (stopped);
    }
    zlistx_destroy (&stopped);

    memcpy (self->last, self->current, self->current_size + 1);
    self->last_size = self->current_size;
    double lifetime = (double)(zclock_usecs () - self->started_us) / 1e6;
    self->current_size = s_float_text (lifetime, self->current, S_PING_MAX);
    s_send_ping (self);
}

//  Copy a frame into key (S_KEY_MAX bytes) as a string; false if it is
//  empty, too long or holds a NUL.
static bool
s_frame_key (zmq_msg_t *frame, char *key)
{
    size_t size = zmq_msg_size (frame);
    const void *data = zmq_msg_data (frame);
    if (size == 0 || size >= S_KEY_MAX || memchr (data, 0, size))
        return false;
    memcpy (key, data, size);
    key[size] = 0;
    return true;
}

//  A pong of heart id to ping, through the shared connection via (NULL:
//  the heart's own).
static void
s_pong (bn_heart_t *self, zmq_msg_t *id, zmq_msg_t *ping, const char *via)
{
    char key[S_KEY_MAX];
    if (!s_frame_key (id, key)) {
        self->stats.bad_pongs++;
        return;
    }
    size_t ping_size = zmq_msg_size (ping);
    const void *ping_data = zmq_msg_data (ping);
    if (ping_size == self->current_size &&
        memcmp (ping_data, self->current, ping_size) == 0)
        self->stats.pongs++;
    else if (ping_size == self->last_size &&
             memcmp (ping_data, self->last, ping_size) == 0) {
        self->stats.late_pongs++;
        bn_log_debug ("heart: %s answered the previous ping", key);
    } else {
        self->stats.stale_pongs++;
        bn_log_debug ("heart: %s answered an old ping", key);
        return;
    }
    s_heart_t *heart = zhashx_lookup (self->hearts, key);
    if (heart) {
        heart->responded = true;
        return;
    }
    if (!zhashx_lookup (self->expected, key)) {
        self->stats.unknown++;
        if (self->on_unknown)
            self->on_unknown (self->arg, key);
        return;
    }
    heart = calloc (1, sizeof *heart);
    if (!heart)
        return;
    heart->responded = true;
    heart->fd = -1;
    heart->via = via ? strdup (via) : NULL;
    if (via && !heart->via) {
        free (heart);
        return;
    }
    zhashx_delete (self->expected, key);
    zhashx_insert (self->hearts, key, heart);
    self->stats.new_hearts++;
    if (self->monitor) {
        //  a closing reported before this pong came is about another
        //  connection that had the descriptor: take it first
        s_read_monitor (self);
        int fd = zmq_msg_get (ping, ZMQ_SRCFD);
        if (fd >= 0 && zhashx_lookup (self->hearts, key) == heart)
            s_fd_note (self, key, heart, fd);
    }
    if (self->on_new)
        self->on_new (self->arg, key);
}

int
bn_heart_pong_ready (bn_heart_t *self)
{
    assert (self);
    void *handle = zsock_resolve (self->pong);
    for (int i = 0; i < S_BATCH; i++) {
        zmq_msg_t frames[3];
        for (int f = 0; f < 3; f++)
            zmq_msg_init (&frames[f]);
        if (zmq_msg_recv (&frames[0], handle, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frames[0]);
            break;
        }
        int count = 1;
        bool more = zmq_msg_more (&frames[0]);
        while (more) {
            zmq_msg_t frame;
            zmq_msg_init (&frame);
            if (zmq_msg_recv (&frame, handle, 0) < 0) {
                zmq_msg_close (&frame);
                break;
            }
            more = zmq_msg_more (&frame);
            if (count < 3)
                zmq_msg_move (&frames[count], &frame);
            count++;
            zmq_msg_close (&frame);
        }
        char via[S_KEY_MAX];
        if (count == 2)
            s_pong (self, &frames[0], &frames[1], NULL);
        else if (count == 3 && self->shared && s_frame_key (&frames[0], via) &&
                 strncmp (via, self->shared, strlen (self->shared)) == 0)
            s_pong (self, &frames[1], &frames[2], via);
        else
            self->stats.bad_pongs++;
        for (int f = 0; f < 3; f++)
            zmq_msg_close (&frames[f]);
    }
    return 0;
}

int
bn_heart_max_misses (bn_heart_t *self)
{
    assert (self);
    return self->max_misses;
}

size_t
bn_heart_size (bn_heart_t *self)
{
    assert (self);
    return zhashx_size (self->hearts);
}

json_t *
bn_heart_stats (bn_heart_t *self)
{
    assert (self);
    s_stats_t *s = &self->stats;
    return json_pack (
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "beats",
        (json_int_t)s->beats, "extra_pings", (json_int_t)s->extra_pings,
        "pongs", (json_int_t)s->pongs, "late_pongs", (json_int_t)s->late_pongs,
        "stale_pongs", (json_int_t)s->stale_pongs, "bad_pongs",
        (json_int_t)s->bad_pongs, "unknown", (json_int_t)s->unknown,
        "new_hearts", (json_int_t)s->new_hearts, "stopped",
        (json_int_t)s->stopped, "closed", (json_int_t)s->closed, "hearts",
        (json_int_t)zhashx_size (self->hearts), "expected",
        (json_int_t)zhashx_size (self->expected));
}

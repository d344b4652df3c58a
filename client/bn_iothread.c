/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_iothread: the thread that owns a client's sockets, and lends them.

    User threads build messages with the tracker's lock held (the tx
    session numbers them), then sign and send them with the sockets'
    session (same key and id), whose replay history only the sockets'
    holder touches.

    One thread at a time holds the sockets: the I/O thread, or a user
    thread. A user thread that sends while nobody holds them takes them
    and sends itself; one that waits for a reply while nobody holds them
    reads the sockets itself (bn_tracker_wait_change). A round trip then
    wakes no other thread of the client. While another thread holds them,
    sends go over the inproc pipe, which every holder watches, and waiters
    sleep on the tracker's condition. The I/O thread takes the sockets
    back once nobody has held them for S_IDLE_US, and lets them go when a
    user thread waits for them.  */
#define _GNU_SOURCE //  memmem
#include "bn_iothread.h"

#include "bn_log.h"
#include "bn_msgtypes.h"
#include "bn_replies.h"
#include "bn_watch.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define S_BATCH 256     //  messages read from one socket per turn
#define S_LINGER_MS 250 //  how long unsent messages may delay destroy
//  How long news of an end waits for what may still be on its way: the
//  loss of the broadcast scheduler's connection for news of the
//  controller's end (when the controller dies both connections drop, and
//  its requests should say so, not that engines died), and an engine's
//  unregistration for its replies (an engine that shuts down answers
//  first, but the answer comes on another connection than the news).
#define S_GRACE_MS 200
//  How long the sockets stay unheld before the thread takes them back (a
//  user thread that sends and waits in turn keeps them meanwhile), and
//  how often the thread looks while a user thread holds them.
#define S_IDLE_US 2000
#define S_LOOK_US 20000

//  Who holds the sockets (the tracker's lock guards it).
typedef enum {
    S_NOBODY, //  free to take
    S_THREAD, //  the I/O thread
    S_READER, //  a user thread waiting for replies, reading them itself
    S_SENDER  //  a user thread sending
} s_holder_t;

enum { S_CMD_SEND, S_CMD_STOP };

//  What the thread watches beside the request sockets (bn_sock_t).
enum {
    S_IOPUB = BN_SOCK_COUNT,
    S_NOTIFY,
    S_MONITOR,
    S_BCAST_MONITOR,
    S_PIPE,
    S_SOURCES
};

//  A watched socket and what it is.
typedef struct {
    bn_iothread_t *self;
    int kind;              //  a bn_sock_t or one of the above
    void *socket;          //  the socket, NULL if the client has none
    bn_watch_item_t *item; //  its watch
} s_source_t;

//  What user threads pass to the thread over the pipe.
typedef struct {
    int op;          //  S_CMD_SEND or S_CMD_STOP
    bn_sock_t sock;  //  socket to send on
    size_t count;    //  messages
    bn_msg_t **msgs; //  malloc'd array of messages, owned by the command
} s_cmd_t;

struct _bn_iothread_t {
    bn_iothread_args_t args;   //  sockets, session, tracker, engines
    size_t session_len;        //  strlen of args.session_id
    void *pipe_back;           //  PAIR the thread reads commands from
    void *pipe;                //  PAIR user threads write commands to
    pthread_mutex_t pipe_lock; //  guards pipe and pipe_closed
    bool pipe_closed;          //  no more commands can be sent
    pthread_t thread;          //  the thread
    bn_watch_t *watch;         //  the thread's sockets
    s_source_t sources[S_SOURCES];
    bool changed;       //  the tracker changed in this turn
    bool stop;          //  STOP was read
    int64_t bcast_lost; //  when the broadcast connection dropped
    int *gone;          //  engines unregistered, not yet settled
    size_t ngone;
    size_t gone_max;
    int64_t gone_since; //  when the first of them was
    //  the tracker's lock guards these
    s_holder_t holder;   //  who holds the sockets
    int64_t freed_at;    //  when they were let go (zclock_usecs)
    int wanted;          //  user threads waiting while the thread holds
    int inside;          //  user threads in s_wait
    bool asked_to_stop;  //  bn_iothread_stop was called
    bool exiting;        //  the thread is leaving (the waiter is unset)
    pthread_cond_t wake; //  wakes the thread
};

static void
s_drop (bn_iothread_t *self, const char *why)
{
    atomic_fetch_add (self->args.dropped, 1);
    bn_log_debug ("client: dropped a message: %s", why);
}

//  bn_replies_drop_fn: count and log what bn_replies dropped.
static void
s_dropped (void *arg, const char *why)
{
    s_drop ((bn_iothread_t *)arg, why);
}

//  The reply types a request socket gets.
static bool
s_is_reply_for (bn_sock_t sock, const char *type)
{
    if (sock == BN_SOCK_MUX || sock == BN_SOCK_TASK ||
        sock == BN_SOCK_BROADCAST)
        return strcmp (type, BN_MSG_APPLY_REPLY) == 0 ||
               strcmp (type, BN_MSG_EXECUTE_REPLY) == 0;
    return true;
}

static bool
s_on_reply (bn_iothread_t *self, bn_msg_t *msg, bn_sock_t sock)
{
    int rc = bn_msg_verify (msg, self->args.rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    const char *type = bn_msg_type (msg);
    if (type && !s_is_reply_for (sock, type)) {
        s_drop (self, type);
        return false;
    }
    return bn_replies_on_reply (self->args.tracker, self->args.engines, msg,
                                sock == BN_SOCK_BROADCAST, s_dropped, self);
}

static bool
s_on_iopub (bn_iothread_t *self, bn_msg_t *msg)
{
    //  Most output belongs to other clients: a cheap look for our session
    //  id in the parent header before the signature check and parsing.
    size_t size = 0;
    const void *parent = bn_msg_part_data (msg, BN_PART_PARENT, &size);
    if (!parent ||
        !memmem (parent, size, self->args.session_id, self->session_len))
        return false;
    int rc = bn_msg_verify (msg, self->args.rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    //  the parent's fields are scanned, not parsed: a broadcast's engines
    //  each send two statuses per request
    const char *session = bn_msg_parent_session (msg);
    const char *msg_id = bn_msg_parent_id (msg);
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    if (!session || strcmp (session, self->args.session_id) != 0 || !msg_id ||
        !type || !content)
        return false;
    bn_tracker_t *tracker = self->args.tracker;
    bool changed = false;
    bn_tracker_lock (tracker);
    bn_item_t *item = bn_tracker_find (tracker, msg_id);
    if (item && bn_item_on_iopub (item, type, content)) {
        bn_tracker_untrack (tracker, item);
        changed = true;
    }
    bn_tracker_unlock (tracker);
    return changed;
}

//  Settle the engines unregistered so far: the requests still waiting on
//  them fail (call with the tracker locked).
static bool
s_settle_gone (bn_iothread_t *self)
{
    bool changed = false;
    for (size_t i = 0; i < self->ngone; i++) {
        char *gone = bn_engines_remove (self->args.engines, self->gone[i]);
        if (gone) {
            bn_tracker_engine_died (self->args.tracker, gone, self->gone[i]);
            changed = true;
        }
        free (gone);
    }
    self->ngone = 0;
    self->gone_since = 0;
    return changed;
}

//  An engine unregistered: settled after the grace, or at once if the
//  list cannot grow.
static void
s_engine_gone (bn_iothread_t *self, int eid)
{
    if (self->ngone == self->gone_max) {
        size_t max = self->gone_max ? self->gone_max * 2 : 16;
        int *grown = realloc (self->gone, max * sizeof *grown);
        if (!grown) {
            bn_log_warn ("client: out of memory for an engine's end");
            self->changed |= s_settle_gone (self);
            return;
        }
        self->gone = grown;
        self->gone_max = max;
    }
    if (!self->ngone)
        self->gone_since = zclock_mono ();
    self->gone[self->ngone++] = eid;
}

static bool
s_on_notification (bn_iothread_t *self, bn_msg_t *msg)
{
    int rc = bn_msg_verify (msg, self->args.rx, true);
    if (rc != 0) {
        s_drop (self, bn_strerror (rc));
        return false;
    }
    const char *type = bn_msg_type (msg);
    json_t *content = bn_msg_content (msg);
    if (!type || !content) {
        s_drop (self, "notification without type or content");
        return false;
    }
    json_t *id = json_object_get (content, "id");
    const char *uuid = json_string_value (json_object_get (content, "uuid"));
    bn_tracker_t *tracker = self->args.tracker;
    bool changed = false;
    bn_tracker_lock (tracker);
    if (strcmp (type, BN_MSG_REGISTRATION_NOTIFICATION) == 0) {
        //  an engine back under an id that unregistered comes after it
        changed |= s_settle_gone (self);
        if (json_is_integer (id) &&
            bn_engines_add (self->args.engines, (int)json_integer_value (id),
                            uuid) == 0) {
            bn_engines_set_features (
                self->args.engines, (int)json_integer_value (id),
                json_object_get (content, BN_REG_FEATURES));
            changed = true;
        } else
            s_drop (self, "bad registration_notification");
    } else if (strcmp (type, BN_MSG_UNREGISTRATION_NOTIFICATION) == 0) {
        int eid = json_is_integer (id) ? (int)json_integer_value (id) : -1;
        if (json_is_string (id))
            eid = atoi (json_string_value (id));
        s_engine_gone (self, eid);
    } else if (strcmp (type, BN_MSG_SHUTDOWN_NOTIFICATION) == 0) {
        bn_log_info ("client: the controller is shutting down");
        bn_tracker_close (tracker, BN_ENOCONTROLLER);
        changed = true;
    } else
        s_drop (self, type);
    bn_tracker_unlock (tracker);
    return changed;
}

uint16_t
bn_iothread_monitor_event (void *monitor)
{
    assert (monitor);
    zmq_msg_t frame;
    zmq_msg_init (&frame);
    uint16_t event = 0;
    bool first = true;
    while (zmq_msg_recv (&frame, monitor, ZMQ_DONTWAIT) >= 0) {
        if (first && zmq_msg_size (&frame) >= sizeof event)
            memcpy (&event, zmq_msg_data (&frame), sizeof event);
        first = false;
        if (!zmq_msg_more (&frame))
            break;
    }
    zmq_msg_close (&frame);
    return event;
}

//  The broadcast scheduler's connection dropped: what was sent there gets
//  no reply (the connection comes back by itself for later requests).
//  Whether a monitor's events, read to the last, tell of a disconnection.
static bool
s_disconnected (void *monitor)
{
    bool disconnected = false;
    uint16_t event;
    while ((event = bn_iothread_monitor_event (monitor)) != 0)
        disconnected |= event == ZMQ_EVENT_DISCONNECTED;
    return disconnected;
}

//  The broadcast scheduler's connection dropped: noted, and settled after
//  the grace (s_settle_broadcast) unless the controller's end came first.
static void
s_on_bcast_monitor (bn_iothread_t *self)
{
    if (s_disconnected (self->args.bcast_monitor) && !self->bcast_lost)
        self->bcast_lost = zclock_mono ();
}

//  The time left of a grace that began at since (0: none), -1 if none.
static int
s_grace_left (int64_t since)
{
    if (!since)
        return -1;
    int64_t left = since + S_GRACE_MS - zclock_mono ();
    return left > 0 ? (int)left : 0;
}

//  The time left until the next grace ends, -1 if none runs.
static int
s_grace (bn_iothread_t *self)
{
    int bcast = s_grace_left (self->bcast_lost);
    int gone = s_grace_left (self->gone_since);
    return bcast < 0 ? gone : gone < 0 || bcast < gone ? bcast : gone;
}

static bool
s_settle_broadcast (bn_iothread_t *self)
{
    self->bcast_lost = 0;
    bn_log_info ("client: lost the connection to the broadcast scheduler");
    bn_tracker_lock (self->args.tracker);
    bool changed = bn_tracker_broadcast_lost (self->args.tracker);
    bn_tracker_unlock (self->args.tracker);
    return changed;
}

static bool
s_on_monitor (bn_iothread_t *self)
{
    if (!s_disconnected (self->args.monitor))
        return false;
    self->bcast_lost = 0;
    bn_log_info ("client: lost the connection to the controller");
    bn_tracker_lock (self->args.tracker);
    bn_tracker_close (self->args.tracker, BN_ENOCONTROLLER);
    bn_tracker_unlock (self->args.tracker);
    return true;
}

//  With the sockets held: sign and send count messages on sock (the
//  messages are destroyed, the array is not).
static void
s_send (bn_iothread_t *self, bn_sock_t sock, bn_msg_t **msgs, size_t count)
{
    void *socket = self->args.sockets[sock];
    for (size_t i = 0; i < count; i++) {
        if (!socket) {
            bn_msg_destroy (&msgs[i]);
            continue;
        }
        if (bn_msg_send_flags (&msgs[i], socket, self->args.rx, ZMQ_DONTWAIT) !=
            0)
            bn_log_warn ("client: cannot send a request: %s",
                         zmq_strerror (errno));
    }
    //  sending may have taken the signal of a reply that came meanwhile
    bn_watch_check (self->watch, self->sources[sock].item);
}

//  With the sockets held: run commands from the pipe; returns true on
//  STOP.
static bool
s_on_pipe (bn_iothread_t *self)
{
    s_cmd_t cmd;
    while (zmq_recv (self->pipe_back, &cmd, sizeof cmd, ZMQ_DONTWAIT) ==
           sizeof cmd) {
        if (cmd.op == S_CMD_STOP)
            return true;
        s_send (self, cmd.sock, cmd.msgs, cmd.count);
        free (cmd.msgs);
    }
    return false;
}

static void
s_close_socket (void **socket_p, int linger)
{
    if (!*socket_p)
        return;
    zmq_setsockopt (*socket_p, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close (*socket_p);
    *socket_p = NULL;
}

//  Read what a socket holds, up to a batch; false when it held more.
static bool
s_read (bn_iothread_t *self, s_source_t *source)
{
    for (int k = 0; k < S_BATCH; k++) {
        bn_msg_t *msg = bn_msg_recv_flags (source->socket, ZMQ_DONTWAIT);
        if (!msg)
            return true;
        if (source->kind == S_IOPUB)
            self->changed |= s_on_iopub (self, msg);
        else if (source->kind == S_NOTIFY)
            self->changed |= s_on_notification (self, msg);
        else
            self->changed |= s_on_reply (self, msg, (bn_sock_t)source->kind);
        bn_msg_destroy (&msg);
    }
    return false;
}

//  Replies are read before notifications and connection events, so that
//  a reply that arrived together with the news of its engine's (or the
//  controller's) end still counts.
static void
s_read_replies (bn_iothread_t *self)
{
    for (int kind = 0; kind < BN_SOCK_COUNT; kind++) {
        s_source_t *source = &self->sources[kind];
        if (source->item && !s_read (self, source))
            bn_watch_again (self->watch, source->item);
    }
}

//  bn_watch_fn: a socket of the thread has input (a reader's handler:
//  it reads until the socket is empty, or asks to be called again).
static void
s_on_ready (bn_watch_item_t *item, void *arg)
{
    s_source_t *source = arg;
    bn_iothread_t *self = source->self;
    if (source->kind == S_PIPE)
        self->stop |= s_on_pipe (self);
    else if (source->kind == S_MONITOR) {
        s_read_replies (self);
        self->changed |= s_on_monitor (self);
    } else if (source->kind == S_BCAST_MONITOR)
        s_on_bcast_monitor (self);
    else {
        if (source->kind == S_NOTIFY)
            s_read_replies (self);
        if (!s_read (self, source))
            bn_watch_again (self->watch, item);
    }
}

static void
s_unwatch (bn_iothread_t *self)
{
    if (!self->watch)
        return;
    for (int i = 0; i < S_SOURCES; i++)
        bn_watch_cancel (self->watch, &self->sources[i].item);
    bn_watch_destroy (&self->watch);
}

//  With the sockets held: wait up to timeout ms (-1: no limit) for them,
//  and handle what came. Returns -1 if the sockets cannot be waited on.
//  A wake-up costs for the sockets that have input, not for each of the
//  dozen the client holds (as zmq_poll does).
static int
s_turn (bn_iothread_t *self, int timeout)
{
    int grace = s_grace (self);
    if (grace >= 0 && (timeout < 0 || grace < timeout))
        timeout = grace;
    if (bn_watch_wait (self->watch, timeout) != 0) {
        bn_log_error ("client: cannot wait for its sockets: %s",
                      strerror (errno));
        return -1;
    }
    if (s_grace_left (self->bcast_lost) == 0)
        self->changed |= s_settle_broadcast (self);
    if (s_grace_left (self->gone_since) == 0) {
        s_read_replies (self);
        bn_tracker_lock (self->args.tracker);
        self->changed |= s_settle_gone (self);
        bn_tracker_unlock (self->args.tracker);
    }
    if (self->changed) {
        bn_tracker_lock (self->args.tracker);
        bn_tracker_changed (self->args.tracker);
        bn_tracker_unlock (self->args.tracker);
        self->changed = false;
    }
    return 0;
}

//  With the tracker's lock held: sleep on the thread's condition for up
//  to usecs.
static void
s_doze (bn_iothread_t *self, int64_t usecs)
{
    //  zclock_usecs is CLOCK_MONOTONIC, as the condition's clock
    int64_t until = zclock_usecs () + usecs;
    struct timespec ts = {(time_t)(until / 1000000),
                          (long)(until % 1000000) * 1000};
    bn_tracker_wait_on (self->args.tracker, &self->wake, &ts);
}

//  With the tracker's lock held: let the sockets go; user threads that
//  slept while another held them look again.
static void
s_let_go (bn_iothread_t *self)
{
    self->holder = S_NOBODY;
    self->freed_at = zclock_usecs ();
    bn_tracker_changed (self->args.tracker);
    if (self->asked_to_stop)
        pthread_cond_broadcast (&self->wake);
}

//  With the tracker's lock held: the thread takes the sockets once they
//  have been free for S_IDLE_US, or as soon as they are free when asked
//  to stop.
static void
s_take_back (bn_iothread_t *self)
{
    while (true) {
        if (self->holder != S_NOBODY)
            s_doze (self, S_LOOK_US);
        else if (self->asked_to_stop || self->stop)
            break;
        else {
            int64_t left = self->freed_at + S_IDLE_US - zclock_usecs ();
            if (left <= 0)
                break;
            s_doze (self, left);
        }
    }
    self->holder = S_THREAD;
}

//  bn_tracker_waiter_fn: a user thread waits for replies, reading them
//  itself if nobody holds the sockets.
static int
s_wait (void *arg, double deadline)
{
    bn_iothread_t *self = arg;
    bn_tracker_t *tracker = self->args.tracker;
    double left = deadline < 0 ? -1 : deadline - zclock_usecs () / 1e6;
    int rc = 0;
    self->inside++;
    if (self->holder != S_NOBODY || self->stop || self->asked_to_stop) {
        bool from_thread = self->holder == S_THREAD;
        if (from_thread)
            self->wanted++;
        rc = bn_tracker_sleep (tracker, deadline);
        if (from_thread)
            self->wanted--;
    } else {
        int timeout = deadline < 0 ? -1
                      : left <= 0  ? 0
                                   : (int)(left * 1000 + 0.999);
        self->holder = S_READER;
        bn_tracker_unlock (tracker);
        //  sockets that cannot be waited on end the client's reading, as
        //  in the thread
        bool failed = s_turn (self, timeout) != 0;
        bn_tracker_lock (tracker);
        self->stop |= failed;
        s_let_go (self);
        if (deadline >= 0 && left <= 0)
            rc = BN_ETIMEDOUT;
    }
    self->inside--;
    if (self->exiting)
        pthread_cond_broadcast (&self->wake);
    return rc;
}

static void *
s_run (void *arg)
{
    bn_iothread_t *self = arg;
    bn_tracker_t *tracker = self->args.tracker;
    bn_log_set_ident ("client");
    bn_tracker_lock (tracker);
    while (!self->stop) {
        s_take_back (self);
        while (!self->stop && self->wanted == 0) {
            bn_tracker_unlock (tracker);
            int rc = s_turn (self, -1);
            bn_tracker_lock (tracker);
            if (rc != 0)
                self->stop = true;
        }
        if (!self->stop)
            s_let_go (self);
    }
    //  The thread holds the sockets for good: user threads sleep on the
    //  tracker's condition from now on, once those inside s_wait are out.
    self->exiting = true;
    bn_tracker_set_waiter (tracker, NULL, NULL);
    bn_tracker_changed (tracker);
    while (self->inside > 0)
        bn_tracker_wait_on (tracker, &self->wake, NULL);
    int linger =
        bn_tracker_state (tracker) == BN_ENOCONTROLLER ? 0 : S_LINGER_MS;
    bn_tracker_unlock (tracker);
    s_unwatch (self);
    for (int i = 0; i < BN_SOCK_COUNT; i++)
        s_close_socket (&self->args.sockets[i], linger);
    s_close_socket (&self->args.iopub, 0);
    s_close_socket (&self->args.notification, 0);
    s_close_socket (&self->args.monitor, 0);
    s_close_socket (&self->args.bcast_monitor, 0);
    s_close_socket (&self->pipe_back, 0);
    return NULL;
}

//  The inproc pipe between user threads and the thread.
static int
s_open_pipe (bn_iothread_t *self)
{
    char endpoint[64];
    snprintf (endpoint, sizeof endpoint, "inproc://bn-client-pipe-%p",
              (void *)self);
    self->pipe_back = zmq_socket (self->args.context, ZMQ_PAIR);
    self->pipe = zmq_socket (self->args.context, ZMQ_PAIR);
    if (!self->pipe_back || !self->pipe)
        return -1;
    int zero = 0;
    zmq_setsockopt (self->pipe, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt (self->pipe_back, ZMQ_RCVHWM, &zero, sizeof zero);
    if (zmq_bind (self->pipe_back, endpoint) != 0 ||
        zmq_connect (self->pipe, endpoint) != 0)
        return -1;
    return 0;
}

//  The thread's sockets in its watch set (made here, used only by the
//  thread once it runs).
static int
s_watch (bn_iothread_t *self)
{
    self->watch = bn_watch_new (NULL);
    if (!self->watch)
        return -1;
    for (int i = 0; i < BN_SOCK_COUNT; i++)
        self->sources[i].socket = self->args.sockets[i];
    self->sources[S_IOPUB].socket = self->args.iopub;
    self->sources[S_NOTIFY].socket = self->args.notification;
    self->sources[S_MONITOR].socket = self->args.monitor;
    self->sources[S_BCAST_MONITOR].socket = self->args.bcast_monitor;
    self->sources[S_PIPE].socket = self->pipe_back;
    for (int i = 0; i < S_SOURCES; i++) {
        s_source_t *source = &self->sources[i];
        source->self = self;
        source->kind = i;
        if (source->socket &&
            !(source->item = bn_watch_reader (self->watch, source->socket,
                                              s_on_ready, source)))
            return -1;
    }
    return 0;
}

bn_iothread_t *
bn_iothread_new (bn_iothread_args_t *args)
{
    assert (args);
    assert (args->context && args->rx && args->tracker && args->engines);
    assert (args->session_id && args->dropped);
    bn_iothread_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->args = *args;
    self->session_len = strlen (args->session_id);
    pthread_mutex_init (&self->pipe_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init (&attr);
    pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
    pthread_cond_init (&self->wake, &attr);
    pthread_condattr_destroy (&attr);
    if (s_open_pipe (self) != 0 || s_watch (self) != 0 ||
        pthread_create (&self->thread, NULL, s_run, self) != 0) {
        s_unwatch (self);
        s_close_socket (&self->pipe, 0);
        s_close_socket (&self->pipe_back, 0);
        pthread_cond_destroy (&self->wake);
        pthread_mutex_destroy (&self->pipe_lock);
        free (self);
        return NULL;
    }
    bn_tracker_lock (args->tracker);
    bn_tracker_set_waiter (args->tracker, s_wait, self);
    bn_tracker_unlock (args->tracker);
    //  the thread has them now
    memset (args->sockets, 0, sizeof args->sockets);
    args->iopub = args->notification = args->monitor = NULL;
    args->bcast_monitor = NULL;
    args->rx = NULL;
    return self;
}

void
bn_iothread_stop (bn_iothread_t *self)
{
    assert (self);
    pthread_mutex_lock (&self->pipe_lock);
    bool running = !self->pipe_closed;
    if (running) {
        s_cmd_t stop = {S_CMD_STOP, 0, 0, NULL};
        zmq_send (self->pipe, &stop, sizeof stop, 0);
        self->pipe_closed = true;
    }
    pthread_mutex_unlock (&self->pipe_lock);
    if (!running)
        return;
    bn_tracker_lock (self->args.tracker);
    self->asked_to_stop = true;
    pthread_cond_broadcast (&self->wake);
    bn_tracker_unlock (self->args.tracker);
    //  No command can follow the STOP (pipe_closed is set with it), and
    //  the thread runs every command before it, so none is lost.
    pthread_join (self->thread, NULL);
    pthread_mutex_lock (&self->pipe_lock);
    s_close_socket (&self->pipe, 0);
    pthread_mutex_unlock (&self->pipe_lock);
}

void
bn_iothread_destroy (bn_iothread_t **self_p)
{
    assert (self_p);
    bn_iothread_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    bn_iothread_stop (self);
    bn_session_destroy (&self->args.rx);
    pthread_cond_destroy (&self->wake);
    pthread_mutex_destroy (&self->pipe_lock);
    free (self->gone);
    free (self);
}

//  With the sockets free: take them and send count messages on sock
//  (destroyed, the array NULLed), after what the pipe holds. Returns 0 or
//  BN_ECLOSED (messages not destroyed); false if the sockets were held.
static bool
s_send_direct (bn_iothread_t *self, bn_sock_t sock, bn_msg_t **msgs,
               size_t count, int *rc)
{
    bn_tracker_t *tracker = self->args.tracker;
    bn_tracker_lock (tracker);
    //  another user thread sending is quick: wait for it, so that the
    //  pipe is not left with nobody to read it
    while (self->holder == S_SENDER)
        bn_tracker_sleep (tracker, -1);
    bool direct = self->holder == S_NOBODY && !self->stop;
    if (direct)
        self->holder = S_SENDER;
    bn_tracker_unlock (tracker);
    if (!direct)
        return false;
    pthread_mutex_lock (&self->pipe_lock);
    *rc = self->pipe_closed ? BN_ECLOSED : 0;
    if (*rc == 0) {
        //  what this thread or another handed over before goes first
        self->stop |= s_on_pipe (self);
        s_send (self, sock, msgs, count);
        memset (msgs, 0, count * sizeof *msgs);
    }
    pthread_mutex_unlock (&self->pipe_lock);
    bn_tracker_lock (tracker);
    s_let_go (self);
    bn_tracker_unlock (tracker);
    return true;
}

int
bn_iothread_send (bn_iothread_t *self, bn_sock_t sock, bn_msg_t **msgs,
                  size_t count)
{
    assert (self);
    assert (sock < BN_SOCK_COUNT);
    int rc = 0;
    if (s_send_direct (self, sock, msgs, count, &rc) && rc == 0)
        return 0;
    s_cmd_t cmd = {S_CMD_SEND, sock, count, NULL};
    cmd.msgs = malloc (count * sizeof *cmd.msgs);
    rc = cmd.msgs ? 0 : BN_ENOMEM;
    if (cmd.msgs)
        memcpy (cmd.msgs, msgs, count * sizeof *msgs);
    if (rc == 0) {
        pthread_mutex_lock (&self->pipe_lock);
        if (self->pipe_closed)
            rc = BN_ECLOSED;
        else if (zmq_send (self->pipe, &cmd, sizeof cmd, 0) != sizeof cmd)
            rc = BN_EIO;
        pthread_mutex_unlock (&self->pipe_lock);
    }
    if (rc != 0) {
        for (size_t i = 0; i < count; i++)
            bn_msg_destroy (&msgs[i]);
        free (cmd.msgs);
    } else
        memset (msgs, 0, count * sizeof *msgs);
    return rc;
}

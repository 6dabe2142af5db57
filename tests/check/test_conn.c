/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transport on a socketpair, without elements: what it delivers, and
 * in which order, when the peer goes away; what each sender puts on the
 * wire, with which fds, and at what cost.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* memfd_create */
#endif
#include <gst/check/gstcheck.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushareconn.h"
#include "gpushareproto.h"
#include "stackdepth.h"
#include "gpushare-check-util.h"

typedef struct
{
  GArray *types;                /* GpuShareMsgType delivered, in order */
  gboolean closed;
  gint closed_code;
  gint closed_at;               /* messages delivered before the close */
} Seen;

static void
on_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  Seen *seen = user_data;
  guint32 type = msg->type;

  gpushare_close_fds (fds, n_fds);
  g_array_append_val (seen->types, type);
}

static void
on_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  Seen *seen = user_data;

  seen->closed = TRUE;
  seen->closed_code = error ? error->code : -1;
  seen->closed_at = seen->types->len;
}

/* writes one whole message to a raw socket */
static void
write_msg (gint fd, GpuShareMsgType type)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *b = g_byte_array_new ();

  msg->type = type;
  if (type == GPUSHARE_MSG_GOODBYE)
    msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  fail_unless (gpushare_msg_build (msg, 0, b));
  fail_unless_equals_int (write (fd, b->data, b->len), b->len);
  g_byte_array_unref (b);
  g_free (msg);
}

static void
iterate_until_closed (GMainContext * context, Seen * seen)
{
  gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  while (!seen->closed && g_get_monotonic_time () < deadline)
    g_main_context_iteration (context, FALSE);
  fail_unless (seen->closed, "the connection never reported its end");
}

/* A peer that says goodbye and hangs up while we send to it: the send
 * fails (EPIPE) before our reader ran, and the goodbye must still be
 * delivered, before the hang-up.  It used to be lost: the failed send
 * failed the connection at once. */
GST_START_TEST (test_goodbye_before_hangup_wins_over_send_error)
{
  GMainContext *context = g_main_context_new ();
  GpuShareMsg *frame = g_new0 (GpuShareMsg, 1);
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *conn;
  gint sv[2];

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
  conn = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
  gpushare_conn_start (conn);

  write_msg (sv[1], GPUSHARE_MSG_GOODBYE);
  close (sv[1]);

  /* the context has not run: nothing was read yet */
  frame->type = GPUSHARE_MSG_EOS;
  fail_if (gpushare_conn_send (conn, frame, NULL, 0, NULL),
      "a send to a peer that hung up succeeded");
  fail_if (seen.closed, "the close was reported from the sending thread");

  iterate_until_closed (context, &seen);
  fail_unless_equals_int (seen.types->len, 1);
  fail_unless_equals_int (g_array_index (seen.types, guint32, 0),
      GPUSHARE_MSG_GOODBYE);
  fail_unless_equals_int (seen.closed_at, 1);
  fail_unless_equals_int (seen.closed_code, GPUSHARE_CONN_ERROR_HANGUP);
  /* nothing more goes out once the peer is gone */
  fail_if (gpushare_conn_send (conn, frame, NULL, 0, NULL));

  gpushare_conn_close (conn);
  gpushare_conn_unref (conn);
  g_array_unref (seen.types);
  g_free (frame);
  g_main_context_unref (context);
}

GST_END_TEST;

/* counts the polls of the context it is set on: each is one wake-up */
static guint n_polls;

static gint
counting_poll (GPollFD * fds, guint n_fds, gint timeout)
{
  n_polls++;
  return g_poll (fds, n_fds, timeout);
}

/* Many connections with the same heartbeat interval, started at different
 * times: their timers come due together, so that the thread that iterates
 * them wakes a few times an interval, not a few times for each of them.
 * Each wake-up polls every socket of the context: a control thread with
 * 256 connections that woke for each timer (4 an interval each) spent
 * most of its time in poll (). */
#define HB_CONNS 16
#define HB_INTERVAL_MS 400
GST_START_TEST (test_heartbeats_wake_together)
{
  GMainContext *context = g_main_context_new ();
  GpuShareConn *conns[HB_CONNS], *peers[HB_CONNS];
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  gint64 end;
  guint i, ticks;

  g_main_context_set_poll_func (context, counting_poll);
  for (i = 0; i < HB_CONNS; i++) {
    gint sv[2];

    fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
    fail_unless (fcntl (sv[1], F_SETFL, O_NONBLOCK) == 0);
    conns[i] = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
    peers[i] = gpushare_conn_new (sv[1], context, on_message, on_closed, &seen);
    gpushare_conn_start (conns[i]);
    gpushare_conn_start (peers[i]);
    /* both ends ping: a PING received is a wake-up too */
    gpushare_conn_set_heartbeat (conns[i], HB_INTERVAL_MS);
    gpushare_conn_set_heartbeat (peers[i], HB_INTERVAL_MS);
    /* spread over a tick: separate timers would each wake the context */
    g_usleep (HB_INTERVAL_MS / 4 * 1000 / HB_CONNS);
  }
  n_polls = 0;
  end = g_get_monotonic_time () + 5 * HB_INTERVAL_MS * 1000;
  while (g_get_monotonic_time () < end)
    g_main_context_iteration (context, TRUE);
  ticks = 5 * 4;
  GST_INFO ("%u wake-ups over %u heartbeat ticks of %u connections",
      n_polls, ticks, 2 * HB_CONNS);
  /* a tick, the PINGs it sent arriving, a spare: 3 wake-ups a tick at
   * most; a timer each made 2 x HB_CONNS a tick */
  fail_unless (n_polls <= 3 * ticks + 2, "%u wake-ups over %u heartbeat "
      "ticks of %u connections: the timers do not come due together",
      n_polls, ticks, 2 * HB_CONNS);
  fail_if (seen.closed, "a connection with a live peer timed out");

  for (i = 0; i < HB_CONNS; i++) {
    gpushare_conn_close (conns[i]);
    gpushare_conn_close (peers[i]);
    gpushare_conn_unref (conns[i]);
    gpushare_conn_unref (peers[i]);
  }
  g_array_unref (seen.types);
  g_main_context_unref (context);
}

GST_END_TEST;

/* the sources named so attached to context: every source id given out
 * so far is looked up (ids are never reused while a source lives) */
static guint
count_sources (GMainContext * context, const gchar * name)
{
  GSource *probe = g_idle_source_new ();
  guint id, last, n = 0;

  last = g_source_attach (probe, context);
  g_source_destroy (probe);
  g_source_unref (probe);
  for (id = 1; id < last; id++) {
    GSource *source = g_main_context_find_source_by_id (context, id);

    if (source && g_strcmp0 (g_source_get_name (source), name) == 0)
      n++;
  }
  return n;
}

/* The heartbeats of a context's connections are one timer, however many
 * they are: a source each made the thread that iterates them prepare and
 * check every one at each of its wake-ups (a producer of 64 streams with
 * 4 consumers each had 256, and its control thread spent a fifth of the
 * producer's CPU a frame on them).  That timer still times out a silent
 * peer, and only it; another context has a timer of its own; the last
 * connection to go takes its context's timer along. */
#define ONE_TIMER_CONNS 32

GST_START_TEST (test_heartbeats_one_timer)
{
  GMainContext *context = g_main_context_new ();
  GMainContext *other = g_main_context_new ();
  GpuShareConn *conns[ONE_TIMER_CONNS], *peers[ONE_TIMER_CONNS];
  GpuShareConn *deaf, *elsewhere;
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  Seen seen_deaf = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  Seen seen_else = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  gint sv[2], silent_fd, else_fd;
  gint64 end;
  guint i;

  for (i = 0; i < ONE_TIMER_CONNS; i++) {
    fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
            SOCK_NONBLOCK, 0, sv) == 0);
    conns[i] = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
    peers[i] = gpushare_conn_new (sv[1], context, on_message, on_closed, &seen);
    gpushare_conn_start (conns[i]);
    gpushare_conn_start (peers[i]);
    gpushare_conn_set_heartbeat (conns[i], 200);
    gpushare_conn_set_heartbeat (peers[i], 200);
  }
  /* a peer that never says anything: a raw socket nobody writes to */
  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
          SOCK_NONBLOCK, 0, sv) == 0);
  silent_fd = sv[1];
  deaf = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen_deaf);
  gpushare_conn_start (deaf);
  gpushare_conn_set_heartbeat (deaf, 200);
  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
          SOCK_NONBLOCK, 0, sv) == 0);
  else_fd = sv[1];
  elsewhere = gpushare_conn_new (sv[0], other, on_message, on_closed,
      &seen_else);
  gpushare_conn_start (elsewhere);
  gpushare_conn_set_heartbeat (elsewhere, 200);

  fail_unless_equals_int (count_sources (context, "gpushare-heartbeat"), 1);
  fail_unless_equals_int (count_sources (other, "gpushare-heartbeat"), 1);

  /* 3 silent intervals and a tick make a timeout: 1.5 s is plenty */
  end = g_get_monotonic_time () + 1500 * 1000;
  while (g_get_monotonic_time () < end)
    g_main_context_iteration (context, TRUE);
  fail_unless (seen_deaf.closed, "a silent peer was never timed out");
  fail_unless_equals_int (seen_deaf.closed_code, GPUSHARE_CONN_ERROR_TIMEOUT);
  fail_if (seen.closed, "a connection with a live peer timed out");
  fail_unless_equals_int (count_sources (context, "gpushare-heartbeat"), 1);

  for (i = 0; i < ONE_TIMER_CONNS; i++) {
    gpushare_conn_close (conns[i]);
    gpushare_conn_close (peers[i]);
    gpushare_conn_unref (conns[i]);
    gpushare_conn_unref (peers[i]);
  }
  gpushare_conn_close (deaf);
  gpushare_conn_unref (deaf);
  fail_unless_equals_int (count_sources (context, "gpushare-heartbeat"), 0);
  fail_unless_equals_int (count_sources (other, "gpushare-heartbeat"), 1);
  gpushare_conn_close (elsewhere);
  gpushare_conn_unref (elsewhere);
  fail_unless_equals_int (count_sources (other, "gpushare-heartbeat"), 0);

  close (silent_fd);
  close (else_fd);
  g_array_unref (seen.types);
  g_array_unref (seen_deaf.types);
  g_array_unref (seen_else.types);
  g_main_context_unref (context);
  g_main_context_unref (other);
}

GST_END_TEST;

typedef struct
{
  GMainContext *context;
  gint stop;
} Iterating;

static gpointer
iterate_thread (gpointer data)
{
  Iterating *it = data;

  g_main_context_push_thread_default (it->context);
  while (!g_atomic_int_get (&it->stop)) {
    g_main_context_iteration (it->context, FALSE);
    g_usleep (1000);
  }
  g_main_context_pop_thread_default (it->context);
  return NULL;
}

/* one side busy for busy_ms without iterating its context, in steps of
 * 50 ms, with or without gpushare_conn_pulse () between them; TRUE when
 * the other side, iterated all along, kept the connection */
#define PULSE_INTERVAL_MS 300
static gboolean
survives_busy_peer (gboolean pulse, guint busy_ms)
{
  GMainContext *busy_ctx = g_main_context_new ();
  Iterating it = { g_main_context_new (), 0 };
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  Seen busy_seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *watcher, *busy;
  GThread *thread;
  gboolean survived;
  gint sv[2];
  guint t;

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  watcher = gpushare_conn_new (sv[0], it.context, on_message, on_closed, &seen);
  busy = gpushare_conn_new (sv[1], busy_ctx, on_message, on_closed, &busy_seen);
  gpushare_conn_start (watcher);
  gpushare_conn_start (busy);
  gpushare_conn_set_heartbeat (watcher, PULSE_INTERVAL_MS);
  gpushare_conn_set_heartbeat (busy, PULSE_INTERVAL_MS);
  thread = g_thread_new ("watcher", iterate_thread, &it);
  for (t = 0; t < busy_ms; t += 50) {
    g_usleep (50 * 1000);
    if (pulse)
      gpushare_conn_pulse ();
  }
  g_atomic_int_set (&it.stop, 1);
  g_thread_join (thread);
  survived = !seen.closed;

  gpushare_conn_close (watcher);
  gpushare_conn_close (busy);
  gpushare_conn_unref (watcher);
  gpushare_conn_unref (busy);
  g_array_unref (seen.types);
  g_array_unref (busy_seen.types);
  g_main_context_unref (it.context);
  g_main_context_unref (busy_ctx);
  return survived;
}

/* A control thread that maps or exports GPU slots for many consumers in a
 * row does not iterate its connections meanwhile: without a PING from it
 * for three intervals its peers take it for hung and drop it.  With
 * gpushare_conn_pulse () between the pieces of work, they do not. */
GST_START_TEST (test_pulse_keeps_a_busy_peer)
{
  /* the watcher gives up after 3 intervals of silence (900 ms) */
  fail_if (survives_busy_peer (FALSE, 2000),
      "a peer silent for 2 s was not taken for hung: the test cannot fail");
  fail_unless (survives_busy_peer (TRUE, 2000),
      "a busy peer that pulsed was dropped");
}

GST_END_TEST;

/* Without a reader there is nobody to deliver anything: a failed send
 * fails the connection at once. */
GST_START_TEST (test_send_error_without_reader_fails_at_once)
{
  GMainContext *context = g_main_context_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *conn;
  gint sv[2];

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
  conn = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
  close (sv[1]);

  msg->type = GPUSHARE_MSG_EOS;
  fail_if (gpushare_conn_send (conn, msg, NULL, 0, NULL));
  fail_unless (gpushare_conn_is_closed (conn));
  iterate_until_closed (context, &seen);
  fail_unless_equals_int (seen.types->len, 0);
  fail_unless_equals_int (seen.closed_code, GPUSHARE_CONN_ERROR_HANGUP);

  gpushare_conn_unref (conn);
  g_array_unref (seen.types);
  g_free (msg);
  g_main_context_unref (context);
}

GST_END_TEST;

/* A peer that never reads: what waits for it is bounded.  The socket
 * takes what its buffers hold, then at most GPUSHARE_CONN_MAX_QUEUED bytes
 * wait in the connection; the message past that fails it as OVERFLOW (the
 * producer drops such a consumer as `slow`, a consumer loses such a
 * producer), and nothing more is queued. */
GST_START_TEST (test_send_queue_bounded)
{
  GMainContext *context = g_main_context_new ();
  GpuShareEvent *ev = g_new0 (GpuShareEvent, 1);
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *conn;
  gsize sent = 0, per_msg = GPUSHARE_HEADER_SIZE + 8 + 8000, wired;
  socklen_t len = sizeof (gint);
  gint sv[2], sndbuf = 0, rcvbuf = 0;
  guint n;

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
  fail_unless (getsockopt (sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) == 0);
  fail_unless (getsockopt (sv[1], SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len) == 0);
  conn = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
  gpushare_conn_start (conn);
  ev->kind = GPUSHARE_EVENT_CUSTOM;
  ev->text_len = 7999;
  memset (ev->text, 'x', ev->text_len);
  for (n = 0; n < 100000 && gpushare_conn_send_event (conn, ev); n++) {
    sent += per_msg;
    g_main_context_iteration (context, FALSE);
  }
  fail_unless (gpushare_conn_is_closed (conn), "a peer that never reads "
      "was sent %" G_GSIZE_FORMAT " bytes", sent);
  iterate_until_closed (context, &seen);
  fail_unless_equals_int (seen.closed_code, GPUSHARE_CONN_ERROR_OVERFLOW);
  /* the socket's buffers and the bound, give or take a message: the
   * connection did queue up to its bound, and no further */
  wired = (gsize) sndbuf + (gsize) rcvbuf;
  fail_unless (sent >= GPUSHARE_CONN_MAX_QUEUED - per_msg, "failed after "
      "%" G_GSIZE_FORMAT " bytes", sent);
  fail_unless (sent <= GPUSHARE_CONN_MAX_QUEUED + wired + per_msg,
      "%" G_GSIZE_FORMAT " bytes taken for a peer that never reads", sent);
  fail_if (gpushare_conn_send_event (conn, ev));

  gpushare_conn_unref (conn);
  close (sv[1]);
  g_array_unref (seen.types);
  g_free (ev);
  g_main_context_unref (context);
}

GST_END_TEST;

/* ---- one sender per message type ---- */

typedef struct
{
  GMainContext *context;
  GpuShareConn *conn;
  gint peer;                    /* the raw end */
  Seen seen;
} Pair;

static void
pair_open (Pair * p)
{
  gint sv[2];

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  p->context = g_main_context_new ();
  p->seen.types = g_array_new (FALSE, FALSE, sizeof (guint32));
  p->conn = gpushare_conn_new (sv[0], p->context, on_message, on_closed,
      &p->seen);
  p->peer = sv[1];
}

static void
pair_close (Pair * p)
{
  gpushare_conn_close (p->conn);
  gpushare_conn_unref (p->conn);
  close (p->peer);
  g_array_unref (p->seen.types);
  g_main_context_unref (p->context);
}

/* reads exactly len bytes from the raw end, and the fds that came with
 * them (up to GPUSHARE_MAX_FDS, into fds, *n_fds of them) */
static guint8 *
read_exactly (gint fd, gsize len, gint * fds, guint * n_fds)
{
  guint8 *buf = g_malloc (len);
  gsize got = 0;

  *n_fds = 0;
  while (got < len) {
    union
    {
      struct cmsghdr hdr;
      gchar buf[CMSG_SPACE (sizeof (gint) * GPUSHARE_MAX_FDS)];
    }
    cmsg;
    struct iovec iov = { buf + got, len - got };
    struct msghdr mh = { 0, };
    struct cmsghdr *c;
    gssize n;

    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cmsg.buf;
    mh.msg_controllen = sizeof (cmsg.buf);
    n = recvmsg (fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    fail_unless (n > 0, "%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
        " bytes came", got, len);
    fail_if (mh.msg_flags & MSG_CTRUNC);
    for (c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c)) {
      guint k = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);

      fail_unless (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS);
      fail_unless (*n_fds + k <= GPUSHARE_MAX_FDS);
      memcpy (fds + *n_fds, CMSG_DATA (c), k * sizeof (gint));
      *n_fds += k;
    }
    got += n;
  }
  return buf;
}

/* the raw end got exactly what gpushare_msg_build () makes of msg, and
 * nothing more */
static void
expect_bytes (Pair * p, const GpuShareMsg * msg, guint32 n_fds, gint * fds,
    guint * got_fds)
{
  GByteArray *want = g_byte_array_new ();
  gint ignored[GPUSHARE_MAX_FDS];
  guint8 *got, extra;
  guint n = 0;

  fail_unless (gpushare_msg_build (msg, n_fds, want));
  got = read_exactly (p->peer, want->len, fds ? fds : ignored, &n);
  fail_unless (memcmp (got, want->data, want->len) == 0, "%s: other bytes",
      gpushare_msg_type_to_string (msg->type));
  fail_unless (recv (p->peer, &extra, 1, MSG_DONTWAIT) < 0
      && errno == EAGAIN, "more bytes than the message");
  if (got_fds)
    *got_fds = n;
  else
    fail_unless_equals_int (n, 0);
  g_free (got);
  g_byte_array_unref (want);
}

static void
fill_layout (GpuShareLayout * l)
{
  l->epoch = 4;
  l->frame_size = 460800;
  l->slot_size = 462848;
  l->n_slots = 3;
  l->n_planes = 2;
  l->offsets[1] = 307200;
  l->strides[0] = 640;
  l->strides[1] = 640;
  fail_unless (gpushare_layout_set_caps (l, "video/x-raw, format=(string)NV12,"
          " width=(int)640, height=(int)480"));
}

GST_START_TEST (test_send_each_type)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  Pair p;

  pair_open (&p);

  msg->type = GPUSHARE_MSG_FRAME;
  msg->u.frame.epoch = 4;
  msg->u.frame.slot = 2;
  msg->u.frame.generation = 9;
  msg->u.frame.sequence = 1234;
  msg->u.frame.pts = 40000000;
  msg->u.frame.dts = G_MAXUINT64;
  msg->u.frame.duration = 33333333;
  msg->u.frame.offset = 17;
  msg->u.frame.offset_end = 18;
  msg->u.frame.buffer_flags = 0x2000;
  msg->u.frame.flags = GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME;
  fail_unless (gpushare_conn_send_frame (p.conn, &msg->u.frame));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_RELEASE;
  msg->u.release.epoch = 4;
  msg->u.release.slot = 2;
  msg->u.release.generation = 9;
  msg->u.release.sequence = 1234;
  fail_unless (gpushare_conn_send_release (p.conn, &msg->u.release));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_MAPPED;
  msg->u.mapped.epoch = 4;
  fail_unless (gpushare_conn_send_mapped (p.conn, GPUSHARE_MSG_MAPPED, 4));
  expect_bytes (&p, msg, 0, NULL, NULL);
  msg->type = GPUSHARE_MSG_UNMAPPED;
  msg->u.mapped.epoch = 3;
  fail_unless (gpushare_conn_send_mapped (p.conn, GPUSHARE_MSG_UNMAPPED, 3));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_EOS;
  msg->u.eos.last_sequence = 1234;
  fail_unless (gpushare_conn_send_eos (p.conn, 1234));
  expect_bytes (&p, msg, 0, NULL, NULL);

  /* a GOODBYE of minor 2, then one with the held frames of minor 3 */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_GOODBYE;
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  fail_unless (gpushare_conn_send_goodbye (p.conn, GPUSHARE_ERR_SHUTDOWN, 0,
          0));
  expect_bytes (&p, msg, 0, NULL, NULL);
  msg->u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
  msg->u.goodbye.last_sequence = 1233;
  fail_unless (gpushare_conn_send_goodbye (p.conn, GPUSHARE_ERR_SHUTDOWN,
          GPUSHARE_GOODBYE_FLAG_HELD, 1233));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_CAPS;
  msg->u.caps.flags = GPUSHARE_STREAM_FLAG_LIVE;
  msg->u.caps.latency = 20000000;
  fill_layout (&msg->u.caps.layout);
  fail_unless (gpushare_conn_send_caps (p.conn, &msg->u.caps));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ANNOUNCE;
  msg->u.announce.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.announce.schema_minor = GPUSHARE_VERSION_MINOR;
  msg->u.announce.mem_types = GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM;
  msg->u.announce.device.sync_modes = GPUSHARE_SYNC_HOST;
  memset (msg->u.announce.device.uuid, 0x42, 16);
  msg->u.announce.pid = 100;
  msg->u.announce.uid = 1000;
  msg->u.announce.instance = G_GUINT64_CONSTANT (0xfeedfacecafebeef);
  msg->u.announce.latency = G_MAXUINT64;
  fill_layout (&msg->u.announce.layout);
  msg->u.announce.name_len = 12;
  memcpy (msg->u.announce.name, "gpusharesink", 12);
  fail_unless (gpushare_conn_send_announce (p.conn, &msg->u.announce));
  expect_bytes (&p, msg, 0, NULL, NULL);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ACCEPT;
  msg->u.accept.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.accept.schema_minor = GPUSHARE_VERSION_MINOR;
  msg->u.accept.mem_type = GPUSHARE_MEM_CUDA_VMM;
  msg->u.accept.sync_mode = GPUSHARE_SYNC_HOST;
  msg->u.accept.pid = 101;
  msg->u.accept.instance = G_GUINT64_CONSTANT (0xfeedfacecafebeef);
  msg->u.accept.name_len = 11;
  memcpy (msg->u.accept.name, "gpusharesrc", 11);
  msg->u.accept.reason_len = 13;
  memcpy (msg->u.accept.reason, "system memory", 13);
  fail_unless (gpushare_conn_send_accept (p.conn, &msg->u.accept));
  expect_bytes (&p, msg, 0, NULL, NULL);

  /* the existing ERROR sender, on its builder now */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ERROR;
  msg->u.error.code = GPUSHARE_ERR_UNSUPPORTED;
  memcpy (msg->u.error.text, "no fit\xc3\xa9", 8);
  msg->u.error.text_len = 8;
  fail_unless (gpushare_conn_send_error (p.conn, GPUSHARE_ERR_UNSUPPORTED,
          "no fit\xc3\xa9"));
  expect_bytes (&p, msg, 0, NULL, NULL);
  /* cut to the cap on a character boundary */
  {
    gchar *text = g_strnfill (GPUSHARE_MAX_TEXT_LEN + 10, 'a');

    memcpy (text + GPUSHARE_MAX_TEXT_LEN - 1, "\xc3\xa9", 2);
    memcpy (msg->u.error.text, text, GPUSHARE_MAX_TEXT_LEN - 1);
    msg->u.error.text_len = GPUSHARE_MAX_TEXT_LEN - 1;
    fail_unless (gpushare_conn_send_error (p.conn, GPUSHARE_ERR_UNSUPPORTED,
            text));
    expect_bytes (&p, msg, 0, NULL, NULL);
    g_free (text);
  }

  pair_close (&p);
  g_free (msg);
}

GST_END_TEST;

static gboolean
fd_is_open (gint fd)
{
  return fcntl (fd, F_GETFD) >= 0 || errno != EBADF;
}

static void
same_file (gint a, gint b)
{
  struct stat sa, sb;

  fail_unless (fstat (a, &sa) == 0 && fstat (b, &sb) == 0);
  fail_unless (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

/* SLOTS: its fds travel with it, in order, and are the sender's to close
 * once sent, or at once when the message is refused */
GST_START_TEST (test_send_slots_fds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[3], keep[3], got[GPUSHARE_MAX_FDS];
  guint i, n_got;
  Pair p;

  pair_open (&p);
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = 4;
  msg->u.slots.slot_size = 462848;
  msg->u.slots.n_slots = 3;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  for (i = 0; i < 3; i++) {
    gchar name[16];

    g_snprintf (name, sizeof (name), "slot%u", i);
    fds[i] = memfd_create (name, MFD_CLOEXEC);
    fail_unless (fds[i] >= 0);
    /* ours, to recognise the files on the other end */
    keep[i] = dup (fds[i]);
  }
  fail_unless (gpushare_conn_send_slots (p.conn, &msg->u.slots, fds, 3));
  /* sent at once on an idle socket, and so closed */
  for (i = 0; i < 3; i++)
    fail_if (fd_is_open (fds[i]), "fd %u still open after the send", i);
  expect_bytes (&p, msg, 3, got, &n_got);
  fail_unless_equals_int (n_got, 3);
  for (i = 0; i < 3; i++) {
    same_file (got[i], keep[i]);
    close (got[i]);
  }

  /* refused (one fd short of a slot each): nothing sent, fds closed */
  for (i = 0; i < 2; i++)
    fds[i] = dup (keep[i]);
  fail_if (gpushare_conn_send_slots (p.conn, &msg->u.slots, fds, 2));
  for (i = 0; i < 2; i++)
    fail_if (fd_is_open (fds[i]));
  fail_unless (recv (p.peer, got, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);
  /* a refused message does not end the connection */
  fail_if (gpushare_conn_is_closed (p.conn));
  fail_unless (gpushare_conn_send_eos (p.conn, 5));
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_EOS;
  msg->u.eos.last_sequence = 5;
  expect_bytes (&p, msg, 0, NULL, NULL);

  /* MAPPED's sender sends MAPPED or UNMAPPED only */
  fail_if (gpushare_conn_send_mapped (p.conn, GPUSHARE_MSG_FRAME, 4));
  fail_unless (recv (p.peer, got, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);

  for (i = 0; i < 3; i++)
    close (keep[i]);
  pair_close (&p);
  g_free (msg);
}

GST_END_TEST;

/* A receiver that has no descriptor left for the fds that come (its
 * RLIMIT_NOFILE): the kernel installs what it can and truncates the rest
 * (MSG_CTRUNC), as it does for a peer that sends more than the message's
 * room.  That was "control data truncated (too many descriptors)", the
 * peer blamed (a consumer posted "The producer sent an invalid message");
 * it is GPUSHARE_CONN_ERROR_NO_FDS, with the count and the limit. */
GST_START_TEST (test_receiver_out_of_fds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GMainContext *context = g_main_context_new ();
  GpuShareConn *sender;
  struct rlimit saved, low;
  guint64 limit;
  guint open_fds, i;
  gint fds[3];
  Pair p = { 0, };

  /* memcheck keeps the real limit and shows the program one of its own:
   * the kernel would install every fd */
  if (g_getenv ("GPUSHARE_UNDER_VALGRIND")) {
    g_print ("test_receiver_out_of_fds: skipped under valgrind, which "
        "virtualises RLIMIT_NOFILE\n");
    g_main_context_unref (context);
    g_free (msg);
    return;
  }
  pair_open (&p);
  sender = gpushare_conn_new (dup (p.peer), context, NULL, NULL, NULL);
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = 1;
  msg->u.slots.slot_size = 4096;
  msg->u.slots.n_slots = 3;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  for (i = 0; i < 3; i++) {
    fds[i] = memfd_create ("slot", MFD_CLOEXEC);
    fail_unless (fds[i] >= 0);
  }
  fail_unless (gpushare_conn_send_slots (sender, &msg->u.slots, fds, 3));

  /* room for one of the three */
  fail_unless (gpushare_fd_usage (&open_fds, &limit));
  fail_unless (getrlimit (RLIMIT_NOFILE, &saved) == 0);
  low = saved;
  low.rlim_cur = open_fds + 1;
  fail_unless (setrlimit (RLIMIT_NOFILE, &low) == 0);
  gpushare_conn_start (p.conn);
  iterate_until_closed (p.context, &p.seen);
  fail_unless (setrlimit (RLIMIT_NOFILE, &saved) == 0);
  fail_unless_equals_int (p.seen.closed_code, GPUSHARE_CONN_ERROR_NO_FDS);
  fail_unless_equals_int (p.seen.types->len, 0);

  gpushare_conn_close (sender);
  gpushare_conn_unref (sender);
  g_main_context_unref (context);
  pair_close (&p);
  g_free (msg);
}

GST_END_TEST;

/* Every sender fails on a connection that is over, closing the fds it
 * was given. */
GST_START_TEST (test_send_after_close)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fd;
  Pair p;

  pair_open (&p);
  gpushare_conn_close (p.conn);
  fail_if (gpushare_conn_send_frame (p.conn, &msg->u.frame));
  fail_if (gpushare_conn_send_release (p.conn, &msg->u.release));
  fail_if (gpushare_conn_send_mapped (p.conn, GPUSHARE_MSG_MAPPED, 1));
  fail_if (gpushare_conn_send_eos (p.conn, 1));
  fail_if (gpushare_conn_send_goodbye (p.conn, GPUSHARE_ERR_SHUTDOWN, 0, 0));
  fill_layout (&msg->u.caps.layout);
  fail_if (gpushare_conn_send_caps (p.conn, &msg->u.caps));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.n_slots = 1;
  msg->u.slots.slot_size = 4096;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  fd = memfd_create ("slot", MFD_CLOEXEC);
  fail_unless (fd >= 0);
  fail_if (gpushare_conn_send_slots (p.conn, &msg->u.slots, &fd, 1));
  fail_if (fd_is_open (fd));
  fail_if (gpushare_conn_send_error (p.conn, GPUSHARE_ERR_SHUTDOWN, "bye"));
  pair_close (&p);
  g_free (msg);
}

GST_END_TEST;

typedef struct
{
  GpuShareConn *conn;
  GpuShareFrame *frame;
} FrameSend;

static void
send_frame_new (gpointer data)
{
  FrameSend *s = data;

  fail_unless (gpushare_conn_send_frame (s->conn, s->frame));
}

/* how a FRAME went out before gpushare_conn_send_frame () */
static void
send_frame_through_msg (gpointer data)
{
  FrameSend *s = data;
  GpuShareMsg msg = { 0, };

  msg.type = GPUSHARE_MSG_FRAME;
  msg.u.frame = *s->frame;
  fail_unless (gpushare_conn_send (s->conn, &msg, NULL, 0, NULL));
}

/* A FRAME costs what it is: sending one takes a fraction of the stack a
 * GpuShareMsg takes, which filling one took before. */
GST_START_TEST (test_send_frame_stack)
{
  GpuShareFrame *frame = g_new0 (GpuShareFrame, 1);
  FrameSend s;
  gsize old_depth, new_depth;
  guint8 *drain;
  guint n;
  gint fds[GPUSHARE_MAX_FDS];
  Pair p;

  pair_open (&p);
  s.conn = p.conn;
  s.frame = frame;
  frame->epoch = 1;
  frame->slot = 1;
  frame->generation = 1;
  frame->sequence = 1;
  if (!stack_depth_sees (sizeof (GpuShareMsg))) {
    /* locals live off the stack here (a sanitizer's fake stacks): the
     * measure cannot tell */
    pair_close (&p);
    g_free (frame);
    return;
  }
  /* first calls bind their symbols, on a stack of their own */
  send_frame_new (&s);
  send_frame_through_msg (&s);
  old_depth = stack_depth (send_frame_through_msg, &s);
  new_depth = stack_depth (send_frame_new, &s);
  fail_unless (old_depth >= sizeof (GpuShareMsg), "%" G_GSIZE_FORMAT,
      old_depth);
  fail_unless (new_depth < sizeof (GpuShareMsg) / 4, "sending a FRAME took %"
      G_GSIZE_FORMAT " bytes of stack", new_depth);
  /* four frames went out, all whole */
  drain = read_exactly (p.peer, 4 * (GPUSHARE_HEADER_SIZE + 72), fds, &n);
  fail_unless_equals_int (n, 0);
  g_free (drain);

  pair_close (&p);
  g_free (frame);
}

GST_END_TEST;

/* A producer that does not accept (stopped, or its loop stuck) with its
 * listen backlog full: connecting must not block (it used to, for ever,
 * in gpusharesrc's control thread and in gpushare-inspect), but fail as
 * "nobody listens yet", to be tried again; once there is room, it works,
 * and the socket is blocking as before. */
GST_START_TEST (test_connect_backlog_full)
{
  gchar *dir = make_tmpdir ("gpushare-conn-XXXXXX");
  gchar *path = g_build_filename (dir, "busy.sock", NULL);
  GError *error = NULL;
  gint held[16], listen_fd, fd, other;
  guint n_held, i;

  listen_fd = listen_full_backlog (path, held, G_N_ELEMENTS (held), &n_held);
  fd = gpushare_connect_path (path, &error);
  fail_unless (fd < 0);
  fail_unless (g_error_matches (error, GPUSHARE_CONN_ERROR,
          GPUSHARE_CONN_ERROR_HANGUP), "%s", error->message);
  fail_unless (strstr (error->message, "backlog") != NULL, "%s",
      error->message);
  g_clear_error (&error);

  /* the producer takes one: there is room again */
  other = accept (listen_fd, NULL, NULL);
  fail_unless (other >= 0);
  fd = gpushare_connect_path (path, &error);
  fail_unless (fd >= 0, "%s", error ? error->message : "");
  fail_if (fcntl (fd, F_GETFL) & O_NONBLOCK);

  close (fd);
  close (other);
  for (i = 0; i < n_held; i++)
    close (held[i]);
  close (listen_fd);
  remove_tree (dir);
  g_free (path);
  g_free (dir);
}

GST_END_TEST;

static Suite *
gpushare_conn_suite (void)
{
  Suite *s = suite_create ("gpushare_conn");
  TCase *tc = tcase_create ("conn");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_goodbye_before_hangup_wins_over_send_error);
  tcase_add_test (tc, test_send_error_without_reader_fails_at_once);
  tcase_add_test (tc, test_send_queue_bounded);
  tcase_add_test (tc, test_send_each_type);
  tcase_add_test (tc, test_send_slots_fds);
  tcase_add_test (tc, test_send_after_close);
  tcase_add_test (tc, test_send_frame_stack);
  tcase_add_test (tc, test_connect_backlog_full);
  tcase_add_test (tc, test_receiver_out_of_fds);
  tcase_add_test (tc, test_heartbeats_wake_together);
  tcase_add_test (tc, test_heartbeats_one_timer);
  tcase_add_test (tc, test_pulse_keeps_a_busy_peer);
  return s;
}

GST_CHECK_MAIN (gpushare_conn);

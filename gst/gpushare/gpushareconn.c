/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpushareconn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (gpushare_conn_debug);
#define GST_CAT_DEFAULT gpushare_conn_debug

G_DEFINE_QUARK (gpushare - conn - error - quark, gpushare_conn_error);

#define IN_CAP (GPUSHARE_HEADER_SIZE + GPUSHARE_MAX_PAYLOAD)
#define IN_FD_CAP GPUSHARE_CONN_MAX_HELD_FDS
/* reads per dispatch, so one busy peer cannot starve the others */
#define MAX_READS_PER_DISPATCH 32

typedef struct
{
  guint64 pos;                  /* stream offset of the message's first byte */
  guint n_fds;
  gint fds[GPUSHARE_MAX_FDS];
} OutFds;

struct _GpuShareConn
{
  gint ref_count;
  GMainContext *context;
  GpuShareConnMessageFunc message_func;
  GpuShareConnClosedFunc closed_func;
  gpointer user_data;

  GMutex lock;
  gint fd;
  gboolean failed;
  gboolean closed;
  gboolean out_dead;            /* the peer hung up: nothing more to send */
  GError *error;
  GSource *in_source;
  GSource *out_source;
  GSource *fail_source;
  /* the peer's read side is gone: unless the reader meets its end first,
   * the connection fails when this fires */
  GSource *hangup_source;
  GpuShareConnLingerFunc linger_func;
  gpointer linger_data;

  /* heartbeat, under lock; times are g_get_monotonic_time () */
  guint heartbeat_ms;           /* 0: off */
  gboolean heartbeat_on;        /* in the registry, its context's timer
                                 * ticking for it */
  gint64 heartbeat_since;       /* silence counts from here at the earliest */
  gint64 last_received;
  gboolean got_message;         /* a whole message came: the peer speaks
                                 * gpushare */
  gint64 last_sent;
  gint64 last_heard;            /* gpushare_conn_note_heard () */
  gboolean peer_without_ping;   /* its headers say minor 0 */
  gboolean deliver_pings;       /* message_func gets PINGs too */

  /* send side, under lock */
  GByteArray *out;
  guint64 out_base;
  GQueue out_fds;

  /* read side, context thread only */
  guint8 *in;
  gsize in_len;
  gint in_fds[IN_FD_CAP];
  guint n_in_fds;
  /* while n_in_fds: the end, in in, of the bytes the last of them came
   * with.  A message's fds come with its first byte, so a message that
   * starts before it must claim them; one that starts at or past it, or
   * the last that can start before it, leaves them a peer's to hold */
  gsize in_fds_end;
  GpuShareMsg *msg;
};

static void
ensure_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_conn_debug, "gpushareconn", 0,
        "gpushare transport");
    g_once_init_leave (&once, 1);
  }
}

GpuShareConn *
gpushare_conn_new (gint fd, GMainContext * context,
    GpuShareConnMessageFunc message_func, GpuShareConnClosedFunc closed_func,
    gpointer user_data)
{
  GpuShareConn *conn = g_new0 (GpuShareConn, 1);

  ensure_debug ();
  conn->ref_count = 1;
  conn->fd = fd;
  conn->context = g_main_context_ref (context);
  conn->message_func = message_func;
  conn->closed_func = closed_func;
  conn->user_data = user_data;
  g_mutex_init (&conn->lock);
  conn->out = g_byte_array_new ();
  g_queue_init (&conn->out_fds);
  conn->in = g_malloc (IN_CAP);
  conn->msg = g_new0 (GpuShareMsg, 1);
  conn->last_received = conn->last_sent = g_get_monotonic_time ();
  g_unix_set_fd_nonblocking (fd, TRUE, NULL);
  return conn;
}

GpuShareConn *
gpushare_conn_ref (GpuShareConn * conn)
{
  g_atomic_int_inc (&conn->ref_count);
  return conn;
}

static void
free_out_fds (gpointer data)
{
  OutFds *b = data;

  gpushare_close_fds (b->fds, b->n_fds);
  g_free (b);
}

/* Every connection with a heartbeat in this process, for
 * gpushare_conn_pulse () and for the heartbeat timers: one a context,
 * which looks at each of that context's connections at its tick (a
 * source a connection would make the context prepare and check hundreds
 * of sources at each of its wake-ups, with 64 streams x 4 consumers).
 * A connection leaves the registry when its heartbeat stops
 * (close_locked (), which its last unref runs too), taking pulse_lock
 * under its own lock; nothing takes a connection's lock under
 * pulse_lock. */
static GMutex pulse_lock;
static GPtrArray *pulse_conns;
static GPtrArray *heartbeat_timers;     /* HeartbeatSource, one a context */

static GSource *heartbeat_source_new (GMainContext * context, guint tick_ms);
static void heartbeat_source_tick_at_most (GSource * source, guint tick_ms);

/* pulse_lock held: the timer of that context, or NULL */
static GSource *
heartbeat_timer_of (GMainContext * context)
{
  guint i;

  for (i = 0; heartbeat_timers && i < heartbeat_timers->len; i++) {
    GSource *timer = g_ptr_array_index (heartbeat_timers, i);

    if (g_source_get_context (timer) == context)
      return timer;
  }
  return NULL;
}

static void
pulse_register (GpuShareConn * conn, guint tick_ms)
{
  GSource *timer;

  g_mutex_lock (&pulse_lock);
  if (!pulse_conns)
    pulse_conns = g_ptr_array_new ();
  g_ptr_array_add (pulse_conns, conn);
  if ((timer = heartbeat_timer_of (conn->context))) {
    heartbeat_source_tick_at_most (timer, tick_ms);
  } else {
    if (!heartbeat_timers)
      heartbeat_timers = g_ptr_array_new ();
    timer = heartbeat_source_new (conn->context, tick_ms);
    g_ptr_array_add (heartbeat_timers, timer);
  }
  g_mutex_unlock (&pulse_lock);
  /* its next wake-up may be due sooner now */
  g_main_context_wakeup (conn->context);
}

static void
pulse_unregister (GpuShareConn * conn)
{
  GSource *timer = NULL;
  guint i;

  g_mutex_lock (&pulse_lock);
  if (pulse_conns)
    g_ptr_array_remove_fast (pulse_conns, conn);
  /* the context's last connection with a heartbeat takes its timer */
  for (i = 0; pulse_conns && i < pulse_conns->len; i++) {
    GpuShareConn *other = g_ptr_array_index (pulse_conns, i);

    if (other->context == conn->context)
      break;
  }
  if (!pulse_conns || i == pulse_conns->len) {
    timer = heartbeat_timer_of (conn->context);
    if (timer)
      g_ptr_array_remove_fast (heartbeat_timers, timer);
  }
  g_mutex_unlock (&pulse_lock);
  if (timer) {
    g_source_destroy (timer);
    g_source_unref (timer);
  }
}

/* a reference, unless its last one is being let go (its unref waits for
 * pulse_lock to take it out of the registry) */
static gboolean
ref_unless_gone (GpuShareConn * conn)
{
  gint r = g_atomic_int_get (&conn->ref_count);

  while (r > 0) {
    if (g_atomic_int_compare_and_exchange (&conn->ref_count, r, r + 1))
      return TRUE;
    r = g_atomic_int_get (&conn->ref_count);
  }
  return FALSE;
}

/* pulse_lock held: a reference to each connection of the registry whose
 * context is context (NULL: any), but those whose last reference is being
 * let go; NULL where there is none */
static GPtrArray *
pulse_live_locked (GMainContext * context)
{
  GPtrArray *live = NULL;
  guint i;

  for (i = 0; pulse_conns && i < pulse_conns->len; i++) {
    GpuShareConn *conn = g_ptr_array_index (pulse_conns, i);

    if ((context && conn->context != context) || !ref_unless_gone (conn))
      continue;
    if (!live)
      live = g_ptr_array_new ();
    g_ptr_array_add (live, conn);
  }
  return live;
}

static gboolean send_ping (GpuShareConn * conn);

void
gpushare_conn_pulse (void)
{
  GPtrArray *live;
  gint64 now = g_get_monotonic_time ();
  guint i;

  g_mutex_lock (&pulse_lock);
  live = pulse_live_locked (NULL);
  g_mutex_unlock (&pulse_lock);

  for (i = 0; live && i < live->len; i++) {
    GpuShareConn *conn = g_ptr_array_index (live, i);
    gboolean ping;

    g_mutex_lock (&conn->lock);
    /* half an interval: the next pulse may be some time away */
    ping = !conn->closed && !conn->failed && !conn->out_dead
        && conn->heartbeat_ms > 0 && conn->out->len == 0
        && now - MAX (conn->last_sent, conn->last_heard) >=
        (gint64) conn->heartbeat_ms * 500;
    g_mutex_unlock (&conn->lock);
    if (ping) {
      GST_LOG ("sending PING between long work");
      send_ping (conn);
    }
    gpushare_conn_unref (conn);
  }
  if (live)
    g_ptr_array_unref (live);
}

/* Long device work in this process (gpushare_conn_busy_begin ()): how
 * many pieces go on, since when, and whether the thread that pulses for
 * them runs.  It ends once they have: the next piece starts another. */
static GMutex busy_lock;
static GCond busy_cond;
static guint busy_count;
static gint64 busy_since;
static gboolean busy_pulsing;

static gpointer
busy_pulse_thread (gpointer data)
{
  g_mutex_lock (&busy_lock);
  while (busy_count > 0) {
    if (g_get_monotonic_time () - busy_since >=
        (gint64) GPUSHARE_CONN_BUSY_MAX_MS * 1000) {
      /* no piece ended for that long: a hang, which the peers may see;
       * asleep until a piece ends */
      g_cond_wait (&busy_cond, &busy_lock);
      continue;
    }
    g_mutex_unlock (&busy_lock);
    gpushare_conn_pulse ();
    g_mutex_lock (&busy_lock);
    if (busy_count > 0)
      g_cond_wait_until (&busy_cond, &busy_lock, g_get_monotonic_time () +
          GPUSHARE_CONN_BUSY_PULSE_MS * 1000);
  }
  busy_pulsing = FALSE;
  g_mutex_unlock (&busy_lock);
  return NULL;
}

void
gpushare_conn_busy_begin (void)
{
  gboolean start = FALSE;
  GThread *thread;

  g_mutex_lock (&busy_lock);
  if (busy_count++ == 0)
    busy_since = g_get_monotonic_time ();
  if (!busy_pulsing)
    start = busy_pulsing = TRUE;
  g_mutex_unlock (&busy_lock);
  if (!start)
    return;
  thread = g_thread_try_new ("gpushare-pulse", busy_pulse_thread, NULL, NULL);
  if (thread) {
    g_thread_unref (thread);
  } else {
    /* the work goes on unpulsed, as the caller's own pulses allow */
    GST_WARNING ("no thread to keep the peers posted during device work");
    g_mutex_lock (&busy_lock);
    busy_pulsing = FALSE;
    g_mutex_unlock (&busy_lock);
  }
}

void
gpushare_conn_busy_end (void)
{
  g_mutex_lock (&busy_lock);
  if (busy_count > 0) {
    /* the work moves: the time without progress counts from here */
    busy_count--;
    busy_since = g_get_monotonic_time ();
    g_cond_signal (&busy_cond);
  }
  g_mutex_unlock (&busy_lock);
}

/* lock held: the heartbeat's timer gone, and the connection out of the
 * registry of gpushare_conn_pulse () */
static void
stop_heartbeat_locked (GpuShareConn * conn)
{
  if (!conn->heartbeat_on)
    return;
  conn->heartbeat_on = FALSE;
  pulse_unregister (conn);
}

/* lock held; releases the socket, the sources and every fd we hold */
static void
close_locked (GpuShareConn * conn)
{
  if (conn->in_source) {
    g_source_destroy (conn->in_source);
    g_source_unref (conn->in_source);
    conn->in_source = NULL;
  }
  if (conn->out_source) {
    g_source_destroy (conn->out_source);
    g_source_unref (conn->out_source);
    conn->out_source = NULL;
  }
  stop_heartbeat_locked (conn);
  if (conn->fd >= 0) {
    /* what it did not read stays in its socket after ours is closed,
     * descriptors included: the owner watches a duplicate until it is
     * drained */
    if (conn->linger_func && gpushare_socket_unread (conn->fd) > 0) {
      gint d = fcntl (conn->fd, F_DUPFD_CLOEXEC, 3);

      shutdown (conn->fd, SHUT_RDWR);
      if (d >= 0)
        conn->linger_func (d, conn->linger_data);
    }
    close (conn->fd);
    conn->fd = -1;
  }
  g_queue_clear_full (&conn->out_fds, free_out_fds);
  g_byte_array_set_size (conn->out, 0);
  gpushare_close_fds (conn->in_fds, conn->n_in_fds);
  conn->n_in_fds = 0;
  conn->in_len = 0;
}

void
gpushare_conn_unref (GpuShareConn * conn)
{
  if (!g_atomic_int_dec_and_test (&conn->ref_count))
    return;
  g_mutex_lock (&conn->lock);
  close_locked (conn);
  if (conn->fail_source) {
    g_source_destroy (conn->fail_source);
    g_source_unref (conn->fail_source);
  }
  if (conn->hangup_source) {
    g_source_destroy (conn->hangup_source);
    g_source_unref (conn->hangup_source);
  }
  g_mutex_unlock (&conn->lock);
  g_clear_error (&conn->error);
  g_byte_array_unref (conn->out);
  g_free (conn->in);
  g_free (conn->msg);
  g_main_context_unref (conn->context);
  g_mutex_clear (&conn->lock);
  g_free (conn);
}

static gboolean
fail_dispatch (gpointer user_data)
{
  GpuShareConn *conn = user_data;
  gboolean notify;
  GError *error;

  g_mutex_lock (&conn->lock);
  notify = !conn->closed;
  close_locked (conn);
  conn->closed = TRUE;
  g_clear_pointer (&conn->fail_source, g_source_unref);
  error = g_error_copy (conn->error);
  g_mutex_unlock (&conn->lock);

  if (notify && conn->closed_func)
    conn->closed_func (conn, error, conn->user_data);
  g_error_free (error);
  return G_SOURCE_REMOVE;
}

static gboolean flush_locked (GpuShareConn * conn, GError ** error);

/* lock held.  When the peer broke the protocol, tell it why before the
 * socket goes: one best-effort, non-blocking attempt, so that a peer that
 * does not read cannot stall us. */
static void
parting_error_locked (GpuShareConn * conn, const GError * error)
{
  GpuShareErrorCode code;
  const gchar *text;
  GError *ignored = NULL;

  if (conn->fd < 0 || error->domain != GPUSHARE_CONN_ERROR)
    return;
  switch (error->code) {
    case GPUSHARE_CONN_ERROR_VERSION:
      code = GPUSHARE_ERR_VERSION;
      text = "unsupported protocol version";
      break;
    case GPUSHARE_CONN_ERROR_PROTOCOL:
    case GPUSHARE_CONN_ERROR_FDS:
      code = GPUSHARE_ERR_PROTOCOL;
      text = "malformed message";
      break;
    case GPUSHARE_CONN_ERROR_TIMEOUT:
      code = GPUSHARE_ERR_TIMEOUT;
      text = "no heartbeat";
      break;
    default:
      return;
  }
  if (conn->out->len + GPUSHARE_HEADER_SIZE + GPUSHARE_MAX_PAYLOAD >
      GPUSHARE_CONN_MAX_QUEUED
      || !gpushare_msg_build_error (code, text, strlen (text), conn->out))
    return;
  if (!flush_locked (conn, &ignored))
    g_clear_error (&ignored);
}

/* lock held */
static void
fail_locked (GpuShareConn * conn, GError * error)
{
  if (conn->failed || conn->closed) {
    g_error_free (error);
    return;
  }
  GST_DEBUG ("connection failed: %s", error->message);
  conn->failed = TRUE;
  conn->error = error;
  /* wake a reader blocked elsewhere; the fd itself is closed from the
   * context thread, so that it cannot be reused under a running recvmsg */
  if (conn->fd >= 0)
    shutdown (conn->fd, SHUT_RDWR);
  conn->fail_source = g_idle_source_new ();
  g_source_set_priority (conn->fail_source, G_PRIORITY_HIGH);
  g_source_set_callback (conn->fail_source, fail_dispatch,
      gpushare_conn_ref (conn), (GDestroyNotify) gpushare_conn_unref);
  g_source_attach (conn->fail_source, conn->context);
}

static gboolean
hangup_dispatch (gpointer user_data)
{
  GpuShareConn *conn = user_data;

  g_mutex_lock (&conn->lock);
  g_clear_pointer (&conn->hangup_source, g_source_unref);
  fail_locked (conn, g_error_new (GPUSHARE_CONN_ERROR,
          GPUSHARE_CONN_ERROR_HANGUP, "the peer stopped reading and did not "
          "hang up within %u ms", GPUSHARE_CONN_HANGUP_GRACE_MS));
  g_mutex_unlock (&conn->lock);
  return G_SOURCE_REMOVE;
}

/* lock held.  A send failed.  A peer that hung up may have said goodbye
 * (or ERROR) in bytes we have not read yet: while a reader runs, stop
 * sending and let it deliver them; it reports the hang-up itself when it
 * meets the end of the stream, within GPUSHARE_CONN_HANGUP_GRACE_MS, or
 * the connection fails then (a peer that only shut its reading side and
 * went on writing, PINGs say, was kept without end, nothing sent to it:
 * a producer that waited for it to map a new ring waited for ever).
 * Anything else fails the connection at once. */
static void
send_failed_locked (GpuShareConn * conn, GError * error)
{
  if (error->domain == GPUSHARE_CONN_ERROR
      && error->code == GPUSHARE_CONN_ERROR_HANGUP && conn->in_source
      && !conn->failed && !conn->closed) {
    GST_DEBUG ("peer hung up; reading what it sent before");
    conn->out_dead = TRUE;
    g_queue_clear_full (&conn->out_fds, free_out_fds);
    conn->out_base += conn->out->len;
    g_byte_array_set_size (conn->out, 0);
    g_error_free (error);
    if (!conn->hangup_source) {
      conn->hangup_source =
          g_timeout_source_new (GPUSHARE_CONN_HANGUP_GRACE_MS);
      g_source_set_callback (conn->hangup_source, hangup_dispatch,
          gpushare_conn_ref (conn), (GDestroyNotify) gpushare_conn_unref);
      g_source_attach (conn->hangup_source, conn->context);
    }
    return;
  }
  fail_locked (conn, error);
}

void
gpushare_conn_fail (GpuShareConn * conn, const GError * error)
{
  g_mutex_lock (&conn->lock);
  fail_locked (conn, g_error_copy (error));
  g_mutex_unlock (&conn->lock);
}

void
gpushare_conn_close (GpuShareConn * conn)
{
  g_mutex_lock (&conn->lock);
  conn->closed = TRUE;
  close_locked (conn);
  if (conn->fail_source) {
    g_source_destroy (conn->fail_source);
    g_clear_pointer (&conn->fail_source, g_source_unref);
  }
  if (conn->hangup_source) {
    g_source_destroy (conn->hangup_source);
    g_clear_pointer (&conn->hangup_source, g_source_unref);
  }
  g_mutex_unlock (&conn->lock);
}

gboolean
gpushare_conn_is_closed (GpuShareConn * conn)
{
  gboolean ret;

  g_mutex_lock (&conn->lock);
  ret = conn->closed || conn->failed;
  g_mutex_unlock (&conn->lock);
  return ret;
}

void
gpushare_conn_set_linger_func (GpuShareConn * conn,
    GpuShareConnLingerFunc func, gpointer user_data)
{
  g_mutex_lock (&conn->lock);
  conn->linger_func = func;
  conn->linger_data = user_data;
  g_mutex_unlock (&conn->lock);
}

gsize
gpushare_socket_unread (gint fd)
{
  gint unread = 0;

  /* what the peer holds of ours, charged to our socket until it reads it,
   * or closes its own (which drops it) */
  if (ioctl (fd, SIOCOUTQ, &unread) != 0 || unread < 0)
    return 0;
  return (gsize) unread;
}

gboolean
gpushare_conn_peer_closed (GpuShareConn * conn)
{
  struct pollfd pfd = { 0, };
  gboolean ret;

  g_mutex_lock (&conn->lock);
  ret = conn->closed || conn->failed || conn->fd < 0;
  if (!ret) {
    pfd.fd = conn->fd;
    pfd.events = POLLRDHUP;
    ret = poll (&pfd, 1, 0) == 1
        && (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL));
  }
  g_mutex_unlock (&conn->lock);
  return ret;
}

/* lock held.  Sends what the socket takes now.  Each sendmsg() carries at
 * most one message's fds, attached to that message's first byte, so the
 * peer can tell which message they belong to. */
static gboolean
flush_locked (GpuShareConn * conn, GError ** error)
{
  while (conn->out->len > 0) {
    OutFds *b = g_queue_peek_head (&conn->out_fds);
    gsize chunk = conn->out->len;
    union
    {
      struct cmsghdr hdr;
      gchar buf[CMSG_SPACE (sizeof (gint) * GPUSHARE_MAX_FDS)];
    }
    cmsg;
    struct iovec iov;
    struct msghdr mh;
    gboolean with_fds = FALSE;
    gssize n;

    memset (&mh, 0, sizeof (mh));
    if (b && b->pos == conn->out_base) {
      OutFds *next = g_queue_peek_nth (&conn->out_fds, 1);
      struct cmsghdr *c;

      if (next)
        chunk = next->pos - conn->out_base;
      memset (&cmsg, 0, sizeof (cmsg));
      mh.msg_control = cmsg.buf;
      mh.msg_controllen = CMSG_SPACE (sizeof (gint) * b->n_fds);
      c = CMSG_FIRSTHDR (&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN (sizeof (gint) * b->n_fds);
      memcpy (CMSG_DATA (c), b->fds, sizeof (gint) * b->n_fds);
      with_fds = TRUE;
    } else if (b) {
      chunk = b->pos - conn->out_base;
    }
    iov.iov_base = conn->out->data;
    iov.iov_len = chunk;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;

    n = sendmsg (conn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      int err = errno;

      if (err == EINTR)
        continue;
      if (err == EAGAIN || err == EWOULDBLOCK)
        return TRUE;
      g_set_error (error, GPUSHARE_CONN_ERROR,
          (err == EPIPE || err == ECONNRESET) ? GPUSHARE_CONN_ERROR_HANGUP :
          GPUSHARE_CONN_ERROR_IO, "send failed: %s", g_strerror (err));
      return FALSE;
    }
    if (n > 0)
      conn->last_sent = g_get_monotonic_time ();
    /* the kernel took the fds with the first byte: ours are done */
    if (with_fds)
      free_out_fds (g_queue_pop_head (&conn->out_fds));
    g_byte_array_remove_range (conn->out, 0, n);
    conn->out_base += n;
  }
  return TRUE;
}

static gboolean
out_dispatch (gint fd, GIOCondition cond, gpointer user_data)
{
  GpuShareConn *conn = user_data;
  GError *error = NULL;
  gboolean ret = G_SOURCE_CONTINUE;

  g_mutex_lock (&conn->lock);
  if (conn->closed || conn->failed || conn->out_dead) {
    ret = G_SOURCE_REMOVE;
  } else if (!flush_locked (conn, &error)) {
    send_failed_locked (conn, error);
    ret = G_SOURCE_REMOVE;
  } else if (conn->out->len == 0) {
    ret = G_SOURCE_REMOVE;
  }
  if (ret == G_SOURCE_REMOVE && conn->out_source) {
    g_source_unref (conn->out_source);
    conn->out_source = NULL;
  }
  g_mutex_unlock (&conn->lock);
  return ret;
}

/* Appends one message to the send queue (whole, or nothing), from
 * whatever body build () encodes */
typedef gboolean (*BuildFunc) (gconstpointer body, guint32 n_fds,
    GByteArray * out);

/* Queues what build () makes of body.  Takes ownership of fds (closed
 * once sent, or on failure). */
static gboolean
send_built (GpuShareConn * conn, GpuShareMsgType type, BuildFunc build,
    gconstpointer body, gint * fds, guint n_fds, GError ** error)
{
  guint64 pos;
  GError *err = NULL;

  g_return_val_if_fail (n_fds <= GPUSHARE_MAX_FDS, FALSE);

  g_mutex_lock (&conn->lock);
  if (conn->closed || conn->failed || conn->out_dead) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_CLOSED,
        "connection is closed");
    goto failed;
  }
  pos = conn->out_base + conn->out->len;
  if (!build (body, n_fds, conn->out)) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PROTOCOL,
        "%s message breaks a protocol limit",
        gpushare_msg_type_to_string (type));
    goto failed;
  }
  if (conn->out->len > GPUSHARE_CONN_MAX_QUEUED) {
    fail_locked (conn, g_error_new (GPUSHARE_CONN_ERROR,
            GPUSHARE_CONN_ERROR_OVERFLOW,
            "peer does not read: %u bytes queued", conn->out->len));
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_OVERFLOW,
        "peer does not read");
    goto failed;
  }
  if (n_fds > 0) {
    OutFds *b = g_new0 (OutFds, 1);

    b->pos = pos;
    b->n_fds = n_fds;
    memcpy (b->fds, fds, n_fds * sizeof (gint));
    g_queue_push_tail (&conn->out_fds, b);
  }

  if (!conn->out_source) {
    if (!flush_locked (conn, &err)) {
      g_propagate_error (error, g_error_copy (err));
      send_failed_locked (conn, err);
      g_mutex_unlock (&conn->lock);
      return FALSE;
    }
    if (conn->out->len > 0) {
      conn->out_source = g_unix_fd_source_new (conn->fd, G_IO_OUT);
      g_source_set_callback (conn->out_source, G_SOURCE_FUNC (out_dispatch),
          gpushare_conn_ref (conn), (GDestroyNotify) gpushare_conn_unref);
      g_source_attach (conn->out_source, conn->context);
    }
  }
  g_mutex_unlock (&conn->lock);
  return TRUE;

failed:
  g_mutex_unlock (&conn->lock);
  gpushare_close_fds (fds, n_fds);
  return FALSE;
}

/* The bodies of the small messages, and one adapter per builder.  The
 * adapters of types without fds see n_fds 0: only SLOTS and LANE pass
 * any. */

typedef struct
{
  GpuShareMsgType type;
  guint64 epoch;
} MappedBody;

typedef struct
{
  guint32 code;
  const gchar *text;
  guint32 text_len;
} ErrorBody;

static gboolean
build_msg (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build (body, n_fds, out);
}

static gboolean
build_announce (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_announce (body, out);
}

static gboolean
build_accept (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_accept (body, out);
}

static gboolean
build_slots (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_slots (body, n_fds, out);
}

static gboolean
build_mapped (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  const MappedBody *m = body;

  return gpushare_msg_build_mapped (m->type, m->epoch, out);
}

static gboolean
build_frame (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_frame (body, out);
}

static gboolean
build_event (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_event (body, out);
}

static gboolean
build_meta (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_meta (body, out);
}

static gboolean
build_observe (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_observe (body, out);
}

static gboolean
build_status (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_status (body, out);
}

static gboolean
build_notice (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_notice (body, out);
}

static gboolean
build_lane (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_lane (body, out);
}

static gboolean
build_release (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_release (body, out);
}

static gboolean
build_caps (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_caps (body, out);
}

static gboolean
build_eos (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  const GpuShareEos *e = body;

  return gpushare_msg_build_eos (e->last_sequence, out);
}

static gboolean
build_goodbye (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_goodbye (body, out);
}

static gboolean
build_error (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  const ErrorBody *e = body;

  return gpushare_msg_build_error (e->code, e->text, e->text_len, out);
}

static gboolean
build_ping (gconstpointer body, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_ping (out);
}

gboolean
gpushare_conn_send (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, GError ** error)
{
  return send_built (conn, msg->type, build_msg, msg, fds, n_fds, error);
}

gboolean
gpushare_conn_send_announce (GpuShareConn * conn, const GpuShareAnnounce * a)
{
  return send_built (conn, GPUSHARE_MSG_ANNOUNCE, build_announce, a, NULL, 0,
      NULL);
}

gboolean
gpushare_conn_send_accept (GpuShareConn * conn, const GpuShareAccept * a)
{
  return send_built (conn, GPUSHARE_MSG_ACCEPT, build_accept, a, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_slots (GpuShareConn * conn, const GpuShareSlots * s,
    gint * fds, guint n_fds)
{
  return send_built (conn, GPUSHARE_MSG_SLOTS, build_slots, s, fds, n_fds,
      NULL);
}

gboolean
gpushare_conn_send_mapped (GpuShareConn * conn, GpuShareMsgType type,
    guint64 epoch)
{
  MappedBody m = { type, epoch };

  return send_built (conn, type, build_mapped, &m, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_lane (GpuShareConn * conn, const GpuShareLaneInfo * lane,
    gint fd)
{
  return send_built (conn, GPUSHARE_MSG_LANE, build_lane, lane, &fd, 1, NULL);
}

gboolean
gpushare_conn_send_frame (GpuShareConn * conn, const GpuShareFrame * frame)
{
  return send_built (conn, GPUSHARE_MSG_FRAME, build_frame, frame, NULL, 0,
      NULL);
}

gboolean
gpushare_conn_send_event (GpuShareConn * conn, const GpuShareEvent * event)
{
  return send_built (conn, GPUSHARE_MSG_EVENT, build_event, event, NULL, 0,
      NULL);
}

gboolean
gpushare_conn_send_meta (GpuShareConn * conn, const GpuShareMeta * meta)
{
  return send_built (conn, GPUSHARE_MSG_META, build_meta, meta, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_observe (GpuShareConn * conn,
    const GpuShareObserve * observe)
{
  return send_built (conn, GPUSHARE_MSG_OBSERVE, build_observe, observe,
      NULL, 0, NULL);
}

gboolean
gpushare_conn_send_status (GpuShareConn * conn, const GpuShareStatus * status)
{
  return send_built (conn, GPUSHARE_MSG_STATUS, build_status, status, NULL,
      0, NULL);
}

gboolean
gpushare_conn_send_notice (GpuShareConn * conn, const GpuShareNotice * notice)
{
  return send_built (conn, GPUSHARE_MSG_NOTICE, build_notice, notice, NULL,
      0, NULL);
}

gboolean
gpushare_conn_send_release (GpuShareConn * conn,
    const GpuShareRelease * release)
{
  return send_built (conn, GPUSHARE_MSG_RELEASE, build_release, release,
      NULL, 0, NULL);
}

gboolean
gpushare_conn_send_caps (GpuShareConn * conn, const GpuShareCaps * caps)
{
  return send_built (conn, GPUSHARE_MSG_CAPS, build_caps, caps, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_eos (GpuShareConn * conn, guint64 last_sequence)
{
  GpuShareEos e = { last_sequence };

  return send_built (conn, GPUSHARE_MSG_EOS, build_eos, &e, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_goodbye (GpuShareConn * conn, guint32 reason,
    guint32 flags, guint64 last_sequence)
{
  GpuShareGoodbye g = { reason, flags, last_sequence };

  return send_built (conn, GPUSHARE_MSG_GOODBYE, build_goodbye, &g, NULL, 0,
      NULL);
}

static gboolean
send_ping (GpuShareConn * conn)
{
  return send_built (conn, GPUSHARE_MSG_PING, build_ping, NULL, NULL, 0, NULL);
}

gboolean
gpushare_conn_send_ping (GpuShareConn * conn)
{
  return send_ping (conn);
}

gint64
gpushare_conn_last_received (GpuShareConn * conn)
{
  gint64 t;

  g_mutex_lock (&conn->lock);
  t = conn->last_received;
  g_mutex_unlock (&conn->lock);
  return t;
}

void
gpushare_conn_note_alive (GpuShareConn * conn)
{
  g_mutex_lock (&conn->lock);
  conn->last_received = g_get_monotonic_time ();
  g_mutex_unlock (&conn->lock);
}

void
gpushare_conn_note_heard (GpuShareConn * conn, gint64 since_us)
{
  g_mutex_lock (&conn->lock);
  conn->last_heard = MAX (conn->last_heard, since_us);
  g_mutex_unlock (&conn->lock);
}

void
gpushare_conn_deliver_pings (GpuShareConn * conn)
{
  conn->deliver_pings = TRUE;
}

gboolean
gpushare_conn_send_error (GpuShareConn * conn, GpuShareErrorCode code,
    const gchar * text)
{
  ErrorBody e = { code, text, 0 };

  e.text_len = gpushare_utf8_prefix (text, GPUSHARE_MAX_TEXT_LEN);
  return send_built (conn, GPUSHARE_MSG_ERROR, build_error, &e, NULL, 0, NULL);
}

gboolean
gpushare_conn_flush (GpuShareConn * conn, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  for (;;) {
    GError *error = NULL;
    struct pollfd pfd;
    gint64 left;

    g_mutex_lock (&conn->lock);
    if (conn->closed || conn->failed || conn->out_dead) {
      g_mutex_unlock (&conn->lock);
      return FALSE;
    }
    if (!flush_locked (conn, &error)) {
      send_failed_locked (conn, error);
      g_mutex_unlock (&conn->lock);
      return FALSE;
    }
    if (conn->out->len == 0) {
      g_mutex_unlock (&conn->lock);
      return TRUE;
    }
    pfd.fd = conn->fd;
    pfd.events = POLLOUT;
    g_mutex_unlock (&conn->lock);

    left = deadline - g_get_monotonic_time ();
    if (left <= 0)
      return FALSE;
    poll (&pfd, 1, (gint) MAX (1, left / 1000));
  }
}

gboolean
gpushare_socket_get_peer (gint fd, pid_t * pid, uid_t * uid, gid_t * gid)
{
  struct ucred cred;
  socklen_t len = sizeof (cred);

  if (fd < 0 || getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
    return FALSE;
  if (pid)
    *pid = cred.pid;
  if (uid)
    *uid = cred.uid;
  if (gid)
    *gid = cred.gid;
  return TRUE;
}

gboolean
gpushare_conn_get_peer (GpuShareConn * conn, pid_t * pid, uid_t * uid,
    gid_t * gid)
{
  gboolean ret;

  g_mutex_lock (&conn->lock);
  ret = gpushare_socket_get_peer (conn->fd, pid, uid, gid);
  g_mutex_unlock (&conn->lock);
  return ret;
}

/* Reads once.  Returns FALSE with error on failure or hang-up. */
static void
set_no_fds_error (GError ** error, guint n_got)
{
  guint64 limit;
  guint open_fds;

  gpushare_fd_usage (&open_fds, &limit);
  g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_NO_FDS,
      "this process could not take the descriptors it was sent (%u came): "
      "it has %u open of its limit of %" G_GUINT64_FORMAT " (RLIMIT_NOFILE: "
      "ulimit -n, systemd's LimitNOFILE=)", n_got, open_fds, limit);
}

static gboolean
read_some (GpuShareConn * conn, gboolean * again, GError ** error)
{
  union
  {
    struct cmsghdr hdr;
    gchar buf[CMSG_SPACE (sizeof (gint) * GPUSHARE_MAX_FDS)];
  }
  cmsg;
  struct iovec iov;
  struct msghdr mh;
  struct cmsghdr *c;
  gssize n;
  gint got[GPUSHARE_MAX_FDS];
  guint n_got = 0, i;
  gboolean ok = TRUE, too_many = FALSE;

  *again = FALSE;
  memset (&mh, 0, sizeof (mh));
  iov.iov_base = conn->in + conn->in_len;
  iov.iov_len = IN_CAP - conn->in_len;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cmsg.buf;
  mh.msg_controllen = sizeof (cmsg.buf);

  do {
    n = recvmsg (conn->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);

  if (n < 0) {
    int err = errno;

    if (err == EAGAIN || err == EWOULDBLOCK)
      return TRUE;
    g_set_error (error, GPUSHARE_CONN_ERROR,
        err == ECONNRESET ? GPUSHARE_CONN_ERROR_HANGUP :
        GPUSHARE_CONN_ERROR_IO, "receive failed: %s", g_strerror (err));
    return FALSE;
  }

  /* collect every fd first, so that each error path below closes all */
  for (c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c)) {
    gsize count;

    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);
    for (i = 0; i < count; i++) {
      gint fd;

      memcpy (&fd, CMSG_DATA (c) + i * sizeof (gint), sizeof (gint));
      /* the control buffer is rounded up and may hold a few more than the
       * cap: those are an error too, and must not leak */
      if (n_got < GPUSHARE_MAX_FDS) {
        got[n_got++] = fd;
      } else {
        close (fd);
        too_many = TRUE;
      }
    }
  }

  if ((mh.msg_flags & MSG_CTRUNC) && !too_many && n_got < GPUSHARE_MAX_FDS) {
    /* room for every fd the message may carry, fewer came: the kernel
     * could not install the rest (EMFILE, ENFILE), not a peer that sent
     * too many */
    set_no_fds_error (error, n_got);
    ok = FALSE;
  } else if ((mh.msg_flags & MSG_CTRUNC) || too_many) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_FDS,
        "control data truncated (too many descriptors)");
    ok = FALSE;
  } else if (conn->n_in_fds + n_got > IN_FD_CAP) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_FDS,
        "too many descriptors ahead of their messages");
    ok = FALSE;
  }
  if (!ok) {
    gpushare_close_fds (got, n_got);
    return FALSE;
  }
  memcpy (conn->in_fds + conn->n_in_fds, got, n_got * sizeof (gint));
  conn->n_in_fds += n_got;
  if (n_got > 0)
    conn->in_fds_end = conn->in_len + n;

  if (n == 0) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_HANGUP,
        "peer closed the connection");
    return FALSE;
  }
  conn->in_len += n;
  *again = conn->in_len < IN_CAP;
  g_mutex_lock (&conn->lock);
  conn->last_received = g_get_monotonic_time ();
  g_mutex_unlock (&conn->lock);
  return TRUE;
}

static GpuShareConnError
parse_error_code (GpuShareParseResult res)
{
  switch (res) {
    case GPUSHARE_PARSE_BAD_VERSION:
      return GPUSHARE_CONN_ERROR_VERSION;
    case GPUSHARE_PARSE_BAD_FD_COUNT:
      return GPUSHARE_CONN_ERROR_FDS;
    default:
      return GPUSHARE_CONN_ERROR_PROTOCOL;
  }
}

/* Hands every complete message to message_func.  FALSE with error when the
 * stream is broken. */
static gboolean
process_input (GpuShareConn * conn, GError ** error)
{
  for (;;) {
    GpuShareHeader hdr;
    GpuShareParseResult res;
    gint fds[GPUSHARE_MAX_FDS];
    gsize total;

    res = gpushare_header_parse (conn->in, conn->in_len, &hdr);
    if (res == GPUSHARE_PARSE_NEED_MORE)
      break;
    if (res == GPUSHARE_PARSE_BAD_MAGIC && !conn->got_message) {
      g_set_error (error, GPUSHARE_CONN_ERROR,
          GPUSHARE_CONN_ERROR_NOT_GPUSHARE, "the peer is not gpushare: "
          "its first bytes are not a gpushare message");
      return FALSE;
    }
    if (res != GPUSHARE_PARSE_OK) {
      g_set_error (error, GPUSHARE_CONN_ERROR, parse_error_code (res),
          "bad message header: %s", gpushare_parse_result_to_string (res));
      return FALSE;
    }
    total = GPUSHARE_HEADER_SIZE + hdr.payload_len;
    if (conn->n_in_fds > hdr.n_fds && total >= conn->in_fds_end) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_FDS,
          "descriptors arrived without a message that claims them");
      return FALSE;
    }
    if (conn->in_len < total)
      break;
    if (hdr.version_minor < GPUSHARE_MINOR_PING && !conn->peer_without_ping) {
      GST_DEBUG ("peer speaks minor version %u: no heartbeat expected",
          hdr.version_minor);
      g_mutex_lock (&conn->lock);
      conn->peer_without_ping = TRUE;
      g_mutex_unlock (&conn->lock);
    }
    /* a message's fds come with its first byte: by now they are here */
    if (hdr.n_fds > conn->n_in_fds) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_FDS,
          "%s message claims more descriptors than were sent",
          gpushare_msg_type_to_string (hdr.type));
      return FALSE;
    }

    memcpy (fds, conn->in_fds, hdr.n_fds * sizeof (gint));
    conn->n_in_fds -= hdr.n_fds;
    memmove (conn->in_fds, conn->in_fds + hdr.n_fds,
        conn->n_in_fds * sizeof (gint));

    res = gpushare_msg_parse (&hdr, conn->in + GPUSHARE_HEADER_SIZE,
        hdr.payload_len, conn->msg);
    memmove (conn->in, conn->in + total, conn->in_len - total);
    conn->in_len -= total;
    if (conn->n_in_fds > 0)
      conn->in_fds_end -= total;

    if (res == GPUSHARE_PARSE_UNKNOWN_TYPE) {
      /* forward compatibility: skip it, and whatever it carried */
      GST_LOG ("ignoring message of unknown type %u", hdr.type);
      gpushare_close_fds (fds, hdr.n_fds);
      continue;
    }
    if (res != GPUSHARE_PARSE_OK) {
      gpushare_close_fds (fds, hdr.n_fds);
      g_set_error (error, GPUSHARE_CONN_ERROR, parse_error_code (res),
          "bad %s message: %s", gpushare_msg_type_to_string (hdr.type),
          gpushare_parse_result_to_string (res));
      return FALSE;
    }

    conn->got_message = TRUE;
    GST_LOG ("received %s", gpushare_msg_type_to_string (hdr.type));
    /* a heartbeat: its bytes were the point, already counted */
    if (conn->msg->type == GPUSHARE_MSG_PING && !conn->deliver_pings)
      continue;
    conn->message_func (conn, conn->msg, fds, hdr.n_fds, conn->user_data);
    if (gpushare_conn_is_closed (conn))
      return TRUE;
  }

  if (conn->in_len == 0 && conn->n_in_fds > 0) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_FDS,
        "descriptors arrived without a message that claims them");
    return FALSE;
  }
  return TRUE;
}

static gboolean
in_dispatch (gint fd, GIOCondition cond, gpointer user_data)
{
  GpuShareConn *conn = user_data;
  GError *error = NULL;
  gboolean again = TRUE;
  guint i;

  for (i = 0; i < MAX_READS_PER_DISPATCH && again; i++) {
    gboolean ok;

    if (gpushare_conn_is_closed (conn))
      return G_SOURCE_REMOVE;
    ok = read_some (conn, &again, &error);
    /* deliver what arrived before a hang-up (EOS, then close) */
    if (!process_input (conn, ok ? &error : NULL) || !ok) {
      if (!error)
        error = g_error_new (GPUSHARE_CONN_ERROR,
            GPUSHARE_CONN_ERROR_HANGUP, "peer closed the connection");
      g_mutex_lock (&conn->lock);
      if (!conn->failed && !conn->closed)
        parting_error_locked (conn, error);
      fail_locked (conn, error);
      g_mutex_unlock (&conn->lock);
      return G_SOURCE_REMOVE;
    }
  }
  return gpushare_conn_is_closed (conn) ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

void
gpushare_conn_start (GpuShareConn * conn)
{
  g_mutex_lock (&conn->lock);
  if (!conn->in_source && conn->fd >= 0 && !conn->closed && !conn->failed) {
    conn->in_source = g_unix_fd_source_new (conn->fd,
        G_IO_IN | G_IO_HUP | G_IO_ERR);
    g_source_set_callback (conn->in_source, G_SOURCE_FUNC (in_dispatch),
        gpushare_conn_ref (conn), (GDestroyNotify) gpushare_conn_unref);
    /* nothing iterates the context from in_dispatch (); a source that may
     * not recurse has its fd taken out of the context's poll and put back
     * around each dispatch, and each of those wakes the context again */
    g_source_set_can_recurse (conn->in_source, TRUE);
    g_source_attach (conn->in_source, conn->context);
  }
  g_mutex_unlock (&conn->lock);
}

/* lock held: bytes wait on the socket that in_dispatch has not read yet
 * (it may run right after us in this very iteration) */
static gboolean
input_pending_locked (GpuShareConn * conn)
{
  struct pollfd pfd;

  if (conn->fd < 0)
    return FALSE;
  pfd.fd = conn->fd;
  pfd.events = POLLIN;
  pfd.revents = 0;
  return poll (&pfd, 1, 0) > 0;
}

gboolean
gpushare_conn_input_pending (GpuShareConn * conn)
{
  gboolean pending;

  g_mutex_lock (&conn->lock);
  pending = input_pending_locked (conn);
  g_mutex_unlock (&conn->lock);
  return pending;
}

/* at its context's heartbeat tick */
static gboolean
heartbeat_dispatch (GpuShareConn * conn)
{
  gint64 now = g_get_monotonic_time ();
  gint64 interval, silent;
  gboolean ping = FALSE;

  g_mutex_lock (&conn->lock);
  if (conn->closed || conn->failed || conn->heartbeat_ms == 0) {
    g_mutex_unlock (&conn->lock);
    return G_SOURCE_CONTINUE;
  }
  interval = (gint64) conn->heartbeat_ms * 1000;
  silent = now - MAX (conn->last_received, conn->heartbeat_since);
  if (!conn->peer_without_ping
      && silent >= GPUSHARE_CONN_HEARTBEAT_MISSES * interval
      && !input_pending_locked (conn)) {
    GError *error = g_error_new (GPUSHARE_CONN_ERROR,
        GPUSHARE_CONN_ERROR_TIMEOUT, "nothing received for %" G_GINT64_FORMAT
        " ms (heartbeat interval %u ms)", silent / 1000, conn->heartbeat_ms);

    parting_error_locked (conn, error);
    fail_locked (conn, error);
    g_mutex_unlock (&conn->lock);
    return G_SOURCE_CONTINUE;
  }
  /* queued bytes are not moving: a PING behind them would not either */
  ping = !conn->out_dead && conn->out->len == 0
      && now - MAX (conn->last_sent, conn->last_heard) >= interval;
  g_mutex_unlock (&conn->lock);

  if (ping) {
    GST_LOG ("sending PING");
    send_ping (conn);
  }
  return G_SOURCE_CONTINUE;
}

/* The heartbeat's timer of a context: a tick every tick_ms, the shortest
 * of its connections', on instants that are multiples of tick_ms on the
 * monotonic clock, so that the timers of every process with the same
 * interval come due together too.  At each tick it looks at every
 * connection of its context (heartbeat_dispatch ()).  Its due time is
 * kept from prepare () rather than with g_source_set_ready_time (), which
 * signals the context's wake-up fd each time it is called; tick_us and
 * due are under pulse_lock (a connection that joins may shorten the
 * tick). */
typedef struct
{
  GSource source;
  gint64 tick_us;
  gint64 due;
} HeartbeatSource;

static gint64
next_tick (gint64 now, gint64 tick_us)
{
  return (now / tick_us + 1) * tick_us;
}

static gboolean
heartbeat_source_prepare (GSource * source, gint * timeout)
{
  HeartbeatSource *hb = (HeartbeatSource *) source;
  gint64 now = g_source_get_time (source), due;

  g_mutex_lock (&pulse_lock);
  due = hb->due;
  g_mutex_unlock (&pulse_lock);
  if (now >= due) {
    *timeout = 0;
    return TRUE;
  }
  /* rounded up: never a wake-up before it is due */
  *timeout = (gint) MIN ((due - now + 999) / 1000, G_MAXINT);
  return FALSE;
}

static gboolean
heartbeat_source_check (GSource * source)
{
  HeartbeatSource *hb = (HeartbeatSource *) source;
  gint64 due;

  g_mutex_lock (&pulse_lock);
  due = hb->due;
  g_mutex_unlock (&pulse_lock);
  return g_source_get_time (source) >= due;
}

static gboolean heartbeat_dispatch (GpuShareConn * conn);

static gboolean
heartbeat_source_dispatch (GSource * source, GSourceFunc callback,
    gpointer user_data)
{
  HeartbeatSource *hb = (HeartbeatSource *) source;
  GPtrArray *live;
  guint i;

  g_mutex_lock (&pulse_lock);
  hb->due = next_tick (g_source_get_time (source), hb->tick_us);
  live = pulse_live_locked (g_source_get_context (source));
  g_mutex_unlock (&pulse_lock);
  for (i = 0; live && i < live->len; i++) {
    GpuShareConn *conn = g_ptr_array_index (live, i);

    heartbeat_dispatch (conn);
    gpushare_conn_unref (conn);
  }
  if (live)
    g_ptr_array_unref (live);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs heartbeat_source_funcs = {
  heartbeat_source_prepare,
  heartbeat_source_check,
  heartbeat_source_dispatch,
  NULL, NULL, NULL
};

/* pulse_lock held; attached to context */
static GSource *
heartbeat_source_new (GMainContext * context, guint tick_ms)
{
  GSource *source = g_source_new (&heartbeat_source_funcs,
      sizeof (HeartbeatSource));
  HeartbeatSource *hb = (HeartbeatSource *) source;

  g_source_set_name (source, "gpushare-heartbeat");
  hb->tick_us = G_GINT64_CONSTANT (1000) * tick_ms;
  hb->due = next_tick (g_get_monotonic_time (), hb->tick_us);
  g_source_attach (source, context);
  return source;
}

/* pulse_lock held */
static void
heartbeat_source_tick_at_most (GSource * source, guint tick_ms)
{
  HeartbeatSource *hb = (HeartbeatSource *) source;
  gint64 tick_us = G_GINT64_CONSTANT (1000) * tick_ms;

  if (tick_us >= hb->tick_us)
    return;
  hb->tick_us = tick_us;
  hb->due = MIN (hb->due, next_tick (g_get_monotonic_time (), tick_us));
}

void
gpushare_conn_set_heartbeat (GpuShareConn * conn, guint interval_ms)
{
  g_mutex_lock (&conn->lock);
  stop_heartbeat_locked (conn);
  conn->heartbeat_ms = interval_ms;
  conn->heartbeat_since = g_get_monotonic_time ();
  if (interval_ms > 0 && conn->fd >= 0 && !conn->closed && !conn->failed) {
    /* a few looks per interval: a PING leaves within 1.25 intervals of
     * the last byte sent, and a silent peer is caught within 3.25 */
    conn->heartbeat_on = TRUE;
    pulse_register (conn, MAX (interval_ms / 4, 1));
  }
  g_mutex_unlock (&conn->lock);
}


static gboolean
fill_addr (const gchar * path, struct sockaddr_un *addr, GError ** error)
{
  memset (addr, 0, sizeof (*addr));
  addr->sun_family = AF_UNIX;
  if (!path || !*path) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
        "no socket path set");
    return FALSE;
  }
  if (strlen (path) >= sizeof (addr->sun_path)) {
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
        "socket path is longer than %" G_GSIZE_FORMAT " bytes",
        sizeof (addr->sun_path) - 1);
    return FALSE;
  }
  strcpy (addr->sun_path, path);
  return TRUE;
}

G_STATIC_ASSERT (sizeof (((struct sockaddr_un *) 0)->sun_path) ==
    GPUSHARE_SOCKET_PATH_MAX);

gint
gpushare_connect_path (const gchar * path, GError ** error)
{
  struct sockaddr_un addr;
  gint fd, ret;

  if (!fill_addr (path, &addr, error))
    return -1;
  /* non-blocking for the connect: a producer that does not accept (stopped,
   * or its loop stuck) with its listen backlog full would block a
   * blocking connect () for as long as it stays so; a Unix socket fails
   * with EAGAIN instead, and the caller tries again */
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int err = errno;

    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_IO,
        "socket: %s", g_strerror (err));
    return -1;
  }
  do {
    ret = connect (fd, (struct sockaddr *) &addr, sizeof (addr));
  } while (ret < 0 && errno == EINTR);
  if (ret < 0) {
    int err = errno;
    struct stat st;

    close (fd);
    if (err == EAGAIN) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_HANGUP,
          "the producer at %s accepts no connection: its listen backlog is "
          "full", path);
      return -1;
    }
    /* a file that is no socket refuses as a socket nobody listens on
     * does: no producer will ever come there */
    if (err == ECONNREFUSED && stat (path, &st) == 0 && !S_ISSOCK (st.st_mode)) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
          "%s is a %s, not a socket", path, S_ISDIR (st.st_mode) ?
          "directory" : S_ISREG (st.st_mode) ? "regular file" :
          "file of another kind");
      return -1;
    }
    g_set_error (error, GPUSHARE_CONN_ERROR,
        (err == ENOENT || err == ECONNREFUSED) ? GPUSHARE_CONN_ERROR_HANGUP :
        (err == EACCES || err == EPERM) ? GPUSHARE_CONN_ERROR_PERMISSION :
        GPUSHARE_CONN_ERROR_IO, "cannot connect to %s: %s", path,
        g_strerror (err));
    return -1;
  }
  /* blocking again, as the connection expects */
  if (fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK) < 0) {
    int err = errno;

    close (fd);
    g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_IO,
        "fcntl: %s", g_strerror (err));
    return -1;
  }
  return fd;
}

gint
gpushare_listen_path (const gchar * path, guint mode, GError ** error)
{
  struct sockaddr_un addr;
  struct stat st;
  gint fd;

  if (!fill_addr (path, &addr, error))
    return -1;

  if (lstat (path, &st) == 0) {
    gint probe;

    if (S_ISLNK (st.st_mode)) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
          "%s is a symbolic link: refusing it", path);
      return -1;
    }
    if (!S_ISSOCK (st.st_mode)) {
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
          "%s exists and is not a socket", path);
      return -1;
    }
    /* a socket file: replace it only if nobody listens on it */
    probe = gpushare_connect_path (path, NULL);
    if (probe >= 0) {
      close (probe);
      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_IN_USE,
          "another producer listens on %s", path);
      return -1;
    }
    if (unlink (path) < 0 && errno != ENOENT) {
      int err = errno;

      g_set_error (error, GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_PATH,
          "cannot remove stale socket %s: %s", path, g_strerror (err));
      return -1;
    }
  }

  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    goto failed;
  if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0)
    goto failed;
  /* Before listen() every connect() is refused, so the mode is in place
   * before anyone can get in. */
  if (chmod (path, mode) < 0)
    goto failed_unlink;
  if (listen (fd, 64) < 0)
    goto failed_unlink;
  return fd;

failed_unlink:
  {
    int err = errno;

    unlink (path);
    errno = err;
  }
failed:
  {
    int err = errno;

    if (fd >= 0)
      close (fd);
    g_set_error (error, GPUSHARE_CONN_ERROR,
        err == EADDRINUSE ? GPUSHARE_CONN_ERROR_IN_USE :
        GPUSHARE_CONN_ERROR_IO, "cannot listen on %s: %s", path,
        g_strerror (err));
    return -1;
  }
}

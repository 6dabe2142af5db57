/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Element tests: gpusharesink and gpusharesrc in this one process, with real
 * pipelines on both ends, a GstHarness for the sink alone, and raw sockets
 * that play a hostile consumer or a hostile producer.
 *
 * Every test runs in its own forked process (gst-check's default).  The
 * fixture first runs one complete producer/consumer exchange, so that what
 * GStreamer and GLib open lazily and keep for the process lifetime is open
 * before the open-fd baseline is taken; the teardown then demands that the
 * process holds exactly as many descriptors as before, as libwayland's test
 * runner does.  Since producer and consumer both live in this process, a
 * descriptor either of them forgets to close shows up in that count.
 *
 * Raw peers never block without a timeout: every read polls first.  Hostile
 * bytes start from gpushare_msg_build () output (so that everything but the
 * one field under test is valid) and are patched at the header offsets that
 * GpuShareHeader freezes.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <gst/check/gstcheck.h>
#include <gmodule.h>
#include <gst/check/gstharness.h>
#include <gst/app/app.h>
#include <gst/video/video.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare-check-util.h"
#include "gpushareconn.h"
#include "gpushareproto.h"
#include "gpushareretain.h"

/* Linux 5.1; older C library headers lack it */
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define CAPS_STR "video/x-raw,format=NV12,width=64,height=48,framerate=30/1"
/* live producers run fast so that waiting for "a few more frames" is short */
#define LIVE_CAPS_STR \
  "video/x-raw,format=NV12,width=64,height=48,framerate=200/1"
#define FRAME_SIZE (64 * 48 * 3 / 2)
/* what the tests wait for when something is expected to happen */
#define TIMEOUT_MS 5000
/* the most SCM_RIGHTS descriptors Linux passes in one message */
#define KERNEL_MAX_FDS 253

static gchar *tmpdir;
static guint fd_baseline;

/* ------------------------------------------------------------------------ */
/* Descriptors */

static gint
make_memfd (gsize size, gboolean seal)
{
  gint fd = memfd_create ("test-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  fail_unless (fd >= 0, "memfd_create: %s", g_strerror (errno));
  fail_unless (ftruncate (fd, size) == 0);
  /* as gpusharesink seals its slots: nobody writes them after this */
  if (seal)
    fail_unless (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
            F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) == 0);
  return fd;
}

static gchar *
socket_path (const gchar * name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* ------------------------------------------------------------------------ */
/* Pipelines */

static GstElement *launch (const gchar * format, ...) G_GNUC_PRINTF (1, 2);

static GstElement *
launch (const gchar * format, ...)
{
  GError *error = NULL;
  GstElement *pipeline;
  gchar *desc;
  va_list args;

  va_start (args, format);
  desc = g_strdup_vprintf (format, args);
  va_end (args);
  pipeline = gst_parse_launch (desc, &error);
  fail_unless (pipeline != NULL && error == NULL, "cannot launch '%s': %s",
      desc, error ? error->message : "?");
  g_free (desc);
  return pipeline;
}

/* the bin keeps the element alive: the pointer returned is borrowed */
static GstElement *
child (GstElement * bin, const gchar * name)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (bin), name);

  fail_unless (e != NULL, "no element %s", name);
  gst_object_unref (e);
  return e;
}

static GstMessage *
pop_message (GstElement * pipeline, GstMessageType types, gint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus,
      (GstClockTime) timeout_ms * GST_MSECOND, types);

  gst_object_unref (bus);
  return msg;
}

static void
assert_error (GstElement * pipeline, GQuark domain, gint code)
{
  GstMessage *msg = pop_message (pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
  GError *error = NULL;
  gchar *debug = NULL;

  fail_unless (msg != NULL, "no ERROR posted (expected %s %d)",
      g_quark_to_string (domain), code);
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (error->domain == domain && error->code == code,
      "expected ERROR %s %d, got %s %d: %s (%s)", g_quark_to_string (domain),
      code, g_quark_to_string (error->domain), error->code, error->message,
      debug ? debug : "");
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
}

static void
assert_no_error (GstElement * pipeline)
{
  GstMessage *msg = pop_message (pipeline, GST_MESSAGE_ERROR, 0);

  if (msg) {
    GError *error = NULL;
    gchar *debug = NULL;

    gst_message_parse_error (msg, &error, &debug);
    fail ("unexpected ERROR from %s: %s (%s)", GST_OBJECT_NAME (msg->src),
        error->message, debug ? debug : "");
  }
}

static GstStructure *
get_stats (GstElement * element)
{
  GstStructure *s = NULL;

  g_object_get (element, "stats", &s, NULL);
  fail_unless (s != NULL);
  return s;
}

static guint64
stat_u64 (GstElement * element, const gchar * field)
{
  GstStructure *s = get_stats (element);
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, s);
  gst_structure_free (s);
  return v;
}

static guint
stat_uint (GstElement * element, const gchar * field)
{
  GstStructure *s = get_stats (element);
  guint v = 0;

  fail_unless (gst_structure_get_uint (s, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, s);
  gst_structure_free (s);
  return v;
}

/* Where there is no NVIDIA driver, system memory is used and both ends
 * say why: the consumer names its own missing driver, the producer says
 * it offers no GPU memory and why.  Where a driver is present this test
 * does not judge the reason (the gpu suite does). */
static void
check_transport_reason (GstElement * src, GstElement * sink)
{
  GModule *cuda = g_module_open ("libcuda.so.1", G_MODULE_BIND_LAZY);
  GstStructure *s;
  const gchar *reason;

  if (cuda) {
    g_module_close (cuda);
    return;
  }
  s = get_stats (src);
  fail_unless_equals_string (gst_structure_get_string (s, "memory-type"),
      "system");
  reason = gst_structure_get_string (s, "memory-reason");
  fail_unless (reason && strstr (reason, "libcuda.so.1"),
      "the consumer does not say why it uses system memory: %s", reason);
  gst_structure_free (s);
  s = get_stats (sink);
  reason = gst_structure_get_string (s, "gpu-memory");
  fail_unless (reason && strstr (reason, "libcuda.so.1"),
      "the producer does not say why it offers no GPU memory: %s", reason);
  gst_structure_free (s);
}

/* slots go back when a RELEASE crosses the socket: poll for it */
static guint
wait_stat_uint (GstElement * element, const gchar * field, guint value)
{
  gint64 deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000;
  guint v;

  while ((v = stat_uint (element, field)) != value
      && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  return v;
}

static guint64
wait_stat_u64_at_least (GstElement * element, const gchar * field,
    guint64 value)
{
  gint64 deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000;
  guint64 v;

  while ((v = stat_u64 (element, field)) < value
      && g_get_monotonic_time () < deadline)
    g_usleep (2000);
  return v;
}

static guint
client_stat_uint (GstElement * sink, guint index, const gchar * field)
{
  GstStructure *s = get_stats (sink);
  const GValue *list = gst_structure_get_value (s, "clients");
  const GstStructure *c;
  guint v = 0;

  fail_unless (list != NULL && GST_VALUE_HOLDS_ARRAY (list));
  fail_unless (index < gst_value_array_get_size (list));
  c = gst_value_get_structure (gst_value_array_get_value (list, index));
  fail_unless (gst_structure_get_uint (c, field, &v));
  gst_structure_free (s);
  return v;
}

static guint
num_clients (GstElement * sink)
{
  guint n = 0;

  g_object_get (sink, "num-clients", &n, NULL);
  return n;
}

/* ------------------------------------------------------------------------ */
/* A real consumer: gpusharesrc ! fakesink */

typedef struct
{
  GstElement *pipeline;
  GstElement *src;
  gint frames;                  /* atomic */
  GAsyncQueue *buffers;         /* NULL: buffers are dropped at once */
} Consumer;

static void
consumer_handoff (GstElement * fakesink, GstBuffer * buf, GstPad * pad,
    gpointer user_data)
{
  Consumer *c = user_data;

  if (c->buffers)
    g_async_queue_push (c->buffers, gst_buffer_ref (buf));
  /* without a queue the slot goes back to the producer once fakesink
   * lets go of the buffer */
  g_atomic_int_inc (&c->frames);
}

static Consumer *
consumer_new (const gchar * path, gboolean keep_buffers)
{
  Consumer *c = g_new0 (Consumer, 1);

  /* fakesink without last-sample keeps no buffer of its own (appsink would
   * keep its preroll buffer and the last sample it handed out), so the
   * slots held are exactly those the test holds */
  c->pipeline = launch ("gpusharesrc name=src connection-timeout=%d ! "
      "fakesink name=out sync=false enable-last-sample=false "
      "signal-handoffs=true", TIMEOUT_MS);
  c->src = child (c->pipeline, "src");
  g_object_set (c->src, "socket-path", path, NULL);
  g_signal_connect (child (c->pipeline, "out"), "handoff",
      G_CALLBACK (consumer_handoff), c);
  if (keep_buffers)
    c->buffers = g_async_queue_new_full ((GDestroyNotify) gst_buffer_unref);
  return c;
}

static void
consumer_start (Consumer * c)
{
  fail_if (gst_element_set_state (c->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
}

static gboolean
consumer_wait (Consumer * c, gint n)
{
  gint64 deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000;

  while (g_atomic_int_get (&c->frames) < n) {
    if (g_get_monotonic_time () > deadline)
      return FALSE;
    g_usleep (1000);
  }
  return TRUE;
}

static void
assert_consumer_alive (Consumer * c)
{
  gint before = g_atomic_int_get (&c->frames);

  fail_unless (consumer_wait (c, before + 5),
      "the consumer stopped receiving frames (%d)", before);
  assert_no_error (c->pipeline);
}

static void
consumer_free (Consumer * c)
{
  fail_unless_equals_int (gst_element_set_state (c->pipeline,
          GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (c->pipeline);
  if (c->buffers)
    g_async_queue_unref (c->buffers);
  g_free (c);
}

/* ------------------------------------------------------------------------ */
/* A live producer: videotestsrc is-live=true ! gpusharesink */

static GstElement *
producer_new (const gchar * path, GstElement ** sink)
{
  GstElement *p = launch ("videotestsrc is-live=true ! " LIVE_CAPS_STR
      " ! gpusharesink name=sink");

  *sink = child (p, "sink");
  g_object_set (*sink, "socket-path", path, NULL);
  return p;
}

/* PLAYING, and one frame rendered: the ring and the layout exist, so a
 * consumer that connects now gets its ANNOUNCE at once */
static void
producer_start (GstElement * producer, GstElement * sink)
{
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", 1) >= 1,
      "the producer renders nothing");
}

/* ------------------------------------------------------------------------ */
/* client-connected / client-removed, emitted from the sink's thread */

typedef struct
{
  GMutex lock;
  GCond cond;
  guint connected;
  GPtrArray *removed;           /* reason nicks, interned */
  GPtrArray *removed_ids;       /* GUINT_TO_POINTER (id) */
} ClientLog;

static const gchar *
reason_nick (GstElement * sink, gint reason)
{
  GSignalQuery query;
  GEnumClass *klass;
  GEnumValue *value;
  const gchar *nick;

  g_signal_query (g_signal_lookup ("client-removed", G_OBJECT_TYPE (sink)),
      &query);
  fail_unless_equals_int (query.n_params, 2);
  klass = g_type_class_ref (query.param_types[1] &
      ~G_SIGNAL_TYPE_STATIC_SCOPE);
  fail_unless (G_IS_ENUM_CLASS (klass));
  value = g_enum_get_value (klass, reason);
  nick = value ? g_intern_string (value->value_nick) : "?";
  g_type_class_unref (klass);
  return nick;
}

static void
on_client_connected (GstElement * sink, guint id, ClientLog * log)
{
  g_mutex_lock (&log->lock);
  log->connected++;
  g_cond_broadcast (&log->cond);
  g_mutex_unlock (&log->lock);
}

static void
on_client_removed (GstElement * sink, guint id, gint reason, ClientLog * log)
{
  const gchar *nick = reason_nick (sink, reason);

  g_mutex_lock (&log->lock);
  g_ptr_array_add (log->removed, (gpointer) nick);
  g_ptr_array_add (log->removed_ids, GUINT_TO_POINTER (id));
  g_cond_broadcast (&log->cond);
  g_mutex_unlock (&log->lock);
}

static void
client_log_init (ClientLog * log, GstElement * sink)
{
  g_mutex_init (&log->lock);
  g_cond_init (&log->cond);
  log->connected = 0;
  log->removed = g_ptr_array_new ();
  log->removed_ids = g_ptr_array_new ();
  g_signal_connect (sink, "client-connected",
      G_CALLBACK (on_client_connected), log);
  g_signal_connect (sink, "client-removed", G_CALLBACK (on_client_removed),
      log);
}

/* after the sink stopped: it emits client-removed (shutdown) on the way */
static void
client_log_clear (ClientLog * log, GstElement * sink)
{
  g_signal_handlers_disconnect_by_data (sink, log);
  g_ptr_array_unref (log->removed);
  g_ptr_array_unref (log->removed_ids);
  g_mutex_clear (&log->lock);
  g_cond_clear (&log->cond);
}

static gboolean
client_log_wait (ClientLog * log, gboolean removed, guint n)
{
  gint64 deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000;
  gboolean ok = TRUE;

  g_mutex_lock (&log->lock);
  while ((removed ? log->removed->len : log->connected) < n && ok)
    ok = g_cond_wait_until (&log->cond, &log->lock, deadline);
  ok = (removed ? log->removed->len : log->connected) >= n;
  g_mutex_unlock (&log->lock);
  return ok;
}

static const gchar *
client_log_removed_nick (ClientLog * log, guint index)
{
  const gchar *nick;

  g_mutex_lock (&log->lock);
  fail_unless (index < log->removed->len);
  nick = g_ptr_array_index (log->removed, index);
  g_mutex_unlock (&log->lock);
  return nick;
}

static guint
client_log_n_removed (ClientLog * log)
{
  guint n;

  g_mutex_lock (&log->lock);
  n = log->removed->len;
  g_mutex_unlock (&log->lock);
  return n;
}

/* ------------------------------------------------------------------------ */
/* Raw peers */

typedef struct
{
  gint fd;
  GByteArray *in;
  GArray *fds;                  /* received, not yet claimed by a message */
  gboolean eof;
} RawPeer;

typedef enum
{
  RAW_MSG,
  RAW_EOF,
  RAW_TIMEOUT,
  RAW_GARBAGE,
} RawResult;

static const gchar *
raw_result_to_string (RawResult r)
{
  switch (r) {
    case RAW_MSG:
      return "a message";
    case RAW_EOF:
      return "end of stream";
    case RAW_TIMEOUT:
      return "timeout";
    case RAW_GARBAGE:
      return "undecodable bytes";
  }
  return "?";
}

static void
raw_init (RawPeer * p, gint fd)
{
  p->fd = fd;
  p->in = g_byte_array_new ();
  p->fds = g_array_new (FALSE, FALSE, sizeof (gint));
  p->eof = FALSE;
}

static void
raw_clear (RawPeer * p)
{
  guint i;

  for (i = 0; i < p->fds->len; i++)
    close (g_array_index (p->fds, gint, i));
  g_array_unref (p->fds);
  g_byte_array_unref (p->in);
  if (p->fd >= 0)
    close (p->fd);
  p->fd = -1;
}

static gint
raw_connect (const gchar * path)
{
  GError *error = NULL;
  gint fd = gpushare_connect_path (path, &error);

  fail_unless (fd >= 0, "cannot connect: %s", error ? error->message : "?");
  return fd;
}

/* One recvmsg within timeout_ms; FALSE on timeout. */
static gboolean
raw_fill (RawPeer * p, gint timeout_ms)
{
  union
  {
    struct cmsghdr hdr;
    gchar buf[CMSG_SPACE (sizeof (gint) * KERNEL_MAX_FDS)];
  } cmsg;
  guint8 buf[4096];
  struct pollfd pfd = {.fd = p->fd,.events = POLLIN };
  struct iovec iov = {.iov_base = buf,.iov_len = sizeof (buf) };
  struct msghdr mh;
  struct cmsghdr *c;
  gssize n;
  gint r;

  do
    r = poll (&pfd, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  if (r == 0)
    return FALSE;
  fail_unless (r > 0, "poll: %s", g_strerror (errno));

  memset (&mh, 0, sizeof (mh));
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cmsg.buf;
  mh.msg_controllen = sizeof (cmsg.buf);
  do
    n = recvmsg (p->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    int err = errno;

    /* a Unix socket closed with our bytes unread in it reads as a reset,
     * after everything it had sent us */
    fail_unless (err == ECONNRESET || err == EAGAIN, "recvmsg: %s",
        g_strerror (err));
    if (err == ECONNRESET)
      p->eof = TRUE;
    return TRUE;
  }
  for (c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c)) {
    guint k, count;

    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);
    for (k = 0; k < count; k++) {
      gint fd;

      memcpy (&fd, CMSG_DATA (c) + k * sizeof (gint), sizeof (gint));
      g_array_append_val (p->fds, fd);
    }
  }
  if (n == 0)
    p->eof = TRUE;
  else
    g_byte_array_append (p->in, buf, n);
  return TRUE;
}

/* The next message.  Its descriptors go to fds (room for GPUSHARE_MAX_FDS)
 * or, with fds NULL, are closed. */
static RawResult
raw_recv (RawPeer * p, GpuShareMsg * msg, gint * fds, guint * n_fds,
    gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  if (n_fds)
    *n_fds = 0;
  for (;;) {
    GpuShareHeader hdr;
    GpuShareParseResult res;
    gint64 left;

    res = gpushare_header_parse (p->in->data, p->in->len, &hdr);
    if (res == GPUSHARE_PARSE_OK
        && p->in->len >= GPUSHARE_HEADER_SIZE + hdr.payload_len) {
      gsize total = GPUSHARE_HEADER_SIZE + hdr.payload_len;
      guint i;

      res = gpushare_msg_parse (&hdr, p->in->data + GPUSHARE_HEADER_SIZE,
          hdr.payload_len, msg);
      g_byte_array_remove_range (p->in, 0, total);
      if (res != GPUSHARE_PARSE_OK || hdr.n_fds > p->fds->len)
        return RAW_GARBAGE;
      for (i = 0; i < hdr.n_fds; i++) {
        gint fd = g_array_index (p->fds, gint, i);

        if (fds)
          fds[i] = fd;
        else
          close (fd);
      }
      g_array_remove_range (p->fds, 0, hdr.n_fds);
      if (n_fds)
        *n_fds = hdr.n_fds;
      return RAW_MSG;
    }
    if (res != GPUSHARE_PARSE_OK && res != GPUSHARE_PARSE_NEED_MORE)
      return RAW_GARBAGE;
    if (p->eof)
      return p->in->len == 0 ? RAW_EOF : RAW_GARBAGE;
    left = (deadline - g_get_monotonic_time ()) / 1000;
    if (left <= 0 || !raw_fill (p, (gint) left))
      return RAW_TIMEOUT;
  }
}

/* Skips other messages (closing their fds), but never an ERROR. */
static void
raw_expect (RawPeer * p, GpuShareMsgType type, GpuShareMsg * msg,
    gint * fds, guint * n_fds)
{
  for (;;) {
    RawResult r = raw_recv (p, msg, fds, n_fds, TIMEOUT_MS);

    fail_unless (r == RAW_MSG, "waiting for %s, got %s",
        gpushare_msg_type_to_string (type), raw_result_to_string (r));
    if (msg->type == type)
      return;
    fail_if (msg->type == GPUSHARE_MSG_ERROR, "waiting for %s, got ERROR "
        "%s: %s", gpushare_msg_type_to_string (type),
        gpushare_error_code_to_string (msg->u.error.code),
        msg->u.error.text);
    if (fds && n_fds)
      gpushare_close_fds (fds, *n_fds);
  }
}

/* Reads to the end of the stream, which must come within the timeout;
 * returns the codes of the ERROR messages seen on the way, and counts the
 * PINGs in n_pings (if not NULL). */
static GArray *
raw_drain_pings (RawPeer * p, guint * n_pings)
{
  GArray *codes = g_array_new (FALSE, FALSE, sizeof (guint32));
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  RawResult r;

  if (n_pings)
    *n_pings = 0;
  while ((r = raw_recv (p, msg, NULL, NULL, TIMEOUT_MS)) == RAW_MSG) {
    if (msg->type == GPUSHARE_MSG_ERROR)
      g_array_append_val (codes, msg->u.error.code);
    else if (msg->type == GPUSHARE_MSG_PING && n_pings)
      (*n_pings)++;
  }
  fail_unless (r == RAW_EOF, "the peer did not hang up: %s",
      raw_result_to_string (r));
  g_free (msg);
  return codes;
}

static GArray *
raw_drain (RawPeer * p)
{
  return raw_drain_pings (p, NULL);
}

static gboolean
raw_send (gint fd, const guint8 * data, gsize len, const gint * fds,
    guint n_fds)
{
  union
  {
    struct cmsghdr hdr;
    gchar buf[CMSG_SPACE (sizeof (gint) * KERNEL_MAX_FDS)];
  } cmsg;
  gsize done = 0;

  g_assert (n_fds <= KERNEL_MAX_FDS);
  while (done < len) {
    struct iovec iov;
    struct msghdr mh;
    gssize n;

    memset (&mh, 0, sizeof (mh));
    iov.iov_base = (gpointer) (data + done);
    iov.iov_len = len - done;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    /* descriptors ride with the message's first byte, as gpushareconn.c
     * sends them */
    if (done == 0 && n_fds > 0) {
      struct cmsghdr *c;

      memset (&cmsg, 0, sizeof (cmsg));
      mh.msg_control = cmsg.buf;
      mh.msg_controllen = CMSG_SPACE (sizeof (gint) * n_fds);
      c = CMSG_FIRSTHDR (&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN (sizeof (gint) * n_fds);
      memcpy (CMSG_DATA (c), fds, sizeof (gint) * n_fds);
    }
    n = sendmsg (fd, &mh, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    /* the peer may rightly have dropped us already */
    if (n <= 0)
      return FALSE;
    done += n;
  }
  return TRUE;
}

static GByteArray *
build (const GpuShareMsg * msg, guint n_fds)
{
  GByteArray *b = g_byte_array_new ();

  fail_unless (gpushare_msg_build (msg, n_fds, b), "cannot build %s",
      gpushare_msg_type_to_string (msg->type));
  return b;
}

static gboolean
raw_send_bytes (RawPeer * p, GByteArray * b, const gint * fds, guint n_fds)
{
  gboolean ok = raw_send (p->fd, b->data, b->len, fds, n_fds);

  g_byte_array_unref (b);
  return ok;
}

static gboolean
raw_send_msg (RawPeer * p, const GpuShareMsg * msg, const gint * fds,
    guint n_fds)
{
  return raw_send_bytes (p, build (msg, n_fds), fds, n_fds);
}

static void
patch16 (GByteArray * b, gsize offset, guint16 v)
{
  v = GUINT16_TO_LE (v);
  memcpy (b->data + offset, &v, sizeof (v));
}

static void
patch32 (GByteArray * b, gsize offset, guint32 v)
{
  v = GUINT32_TO_LE (v);
  memcpy (b->data + offset, &v, sizeof (v));
}

#define HDR_OFF(field) ((gsize) G_STRUCT_OFFSET (GpuShareHeader, field))

/* A header of any type (the builder refuses unknown ones) and a payload
 * of counting bytes. */
static GByteArray *
raw_message (guint16 type, guint32 payload_len, guint32 n_fds)
{
  GByteArray *b = g_byte_array_new ();
  guint i;

  g_byte_array_set_size (b, GPUSHARE_HEADER_SIZE + payload_len);
  memset (b->data, 0, b->len);
  patch32 (b, HDR_OFF (magic), GPUSHARE_MAGIC);
  patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR);
  patch16 (b, HDR_OFF (version_minor), GPUSHARE_VERSION_MINOR);
  patch16 (b, HDR_OFF (type), type);
  patch32 (b, HDR_OFF (payload_len), payload_len);
  patch32 (b, HDR_OFF (n_fds), n_fds);
  for (i = 0; i < payload_len; i++)
    b->data[GPUSHARE_HEADER_SIZE + i] = i & 0xff;
  return b;
}

static GByteArray *
random_bytes (guint n)
{
  GRand *rand = g_rand_new_with_seed (0x6770u);
  GByteArray *b = g_byte_array_sized_new (n);
  guint i;

  for (i = 0; i < n; i++) {
    guint8 v = g_rand_int_range (rand, 0, 256);

    g_byte_array_append (b, &v, 1);
  }
  /* never the magic by chance: "GPSH" starts with 'G' */
  if (b->data[0] == 'G')
    b->data[0] = 0;
  g_rand_free (rand);
  return b;
}

/* a layout of format at w x h in n_slots slots of slot_size, GStreamer's
 * default strides */
static void
make_layout_of (GpuShareLayout * l, const gchar * format, guint w, guint h,
    guint n_slots, guint64 slot_size)
{
  GstVideoInfo vi;
  GstCaps *caps;
  gchar *str;
  guint i;

  fail_unless (gst_video_info_set_format (&vi,
          gst_video_format_from_string (format), w, h));
  GST_VIDEO_INFO_FPS_N (&vi) = 30;
  GST_VIDEO_INFO_FPS_D (&vi) = 1;
  caps = gst_video_info_to_caps (&vi);
  str = gst_caps_to_string (caps);
  memset (l, 0, sizeof (*l));
  l->epoch = 1;
  l->frame_size = GST_VIDEO_INFO_SIZE (&vi);
  l->slot_size = slot_size;
  l->n_slots = n_slots;
  l->n_planes = GST_VIDEO_INFO_N_PLANES (&vi);
  for (i = 0; i < l->n_planes; i++) {
    l->offsets[i] = GST_VIDEO_INFO_PLANE_OFFSET (&vi, i);
    l->strides[i] = GST_VIDEO_INFO_PLANE_STRIDE (&vi, i);
  }
  fail_unless (gpushare_layout_set_caps (l, str));
  g_free (str);
  gst_caps_unref (caps);
}

static void
make_layout (GpuShareLayout * l, guint n_slots, guint64 slot_size)
{
  make_layout_of (l, "NV12", 64, 48, n_slots, slot_size);
}

static void
make_announce (GpuShareMsg * m, guint n_slots, guint64 slot_size)
{
  GpuShareAnnounce *a = &m->u.announce;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_ANNOUNCE;
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  a->mem_types = GPUSHARE_MEM_SYSTEM;
  a->pid = getpid ();
  a->uid = getuid ();
  a->instance = 0x1234;
  a->latency = GST_CLOCK_TIME_NONE;
  make_layout (&a->layout, n_slots, slot_size);
  a->name_len = strlen ("raw-producer");
  memcpy (a->name, "raw-producer", a->name_len);
}

static void
make_accept (GpuShareMsg * m, guint64 instance)
{
  GpuShareAccept *a = &m->u.accept;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_ACCEPT;
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  a->mem_type = GPUSHARE_MEM_SYSTEM;
  a->pid = getpid ();
  a->instance = instance;
  a->name_len = strlen ("raw-consumer");
  memcpy (a->name, "raw-consumer", a->name_len);
}

static void
make_simple (GpuShareMsg * m, GpuShareMsgType type)
{
  memset (m, 0, sizeof (*m));
  m->type = type;
  if (type == GPUSHARE_MSG_GOODBYE)
    m->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
}

static void
make_frame (GpuShareMsg * m, guint64 epoch, guint32 slot, guint32 generation,
    guint64 sequence)
{
  GpuShareFrame *f = &m->u.frame;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_FRAME;
  f->epoch = epoch;
  f->slot = slot;
  f->generation = generation;
  f->sequence = sequence;
  f->pts = sequence * (GST_SECOND / 30);
  f->dts = GST_CLOCK_TIME_NONE;
  f->duration = GST_SECOND / 30;
  f->offset = GST_BUFFER_OFFSET_NONE;
  f->offset_end = GST_BUFFER_OFFSET_NONE;
}

/* ------------------------------------------------------------------------ */
/* A producer with a hostile consumer beside a well-behaved one */

typedef struct
{
  gchar *path;
  GstElement *producer;
  GstElement *sink;
  ClientLog log;
  Consumer *consumer;
} Scene;

static void
scene_start (Scene * s, gboolean with_consumer)
{
  memset (s, 0, sizeof (*s));
  s->path = socket_path ("scene.sock");
  s->producer = producer_new (s->path, &s->sink);
  client_log_init (&s->log, s->sink);
  producer_start (s->producer, s->sink);
  if (with_consumer) {
    s->consumer = consumer_new (s->path, FALSE);
    consumer_start (s->consumer);
    fail_unless (consumer_wait (s->consumer, 3), "the consumer gets nothing");
    fail_unless (client_log_wait (&s->log, FALSE, 1));
  }
}

static void
scene_stop (Scene * s)
{
  if (s->consumer)
    consumer_free (s->consumer);
  fail_unless_equals_int (gst_element_set_state (s->producer,
          GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  client_log_clear (&s->log, s->sink);
  gst_object_unref (s->producer);
  g_free (s->path);
}

/* connects, and reads the ANNOUNCE every consumer gets first */
static void
scene_raw_client (Scene * s, RawPeer * p, GpuShareAnnounce * announce)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

  raw_init (p, raw_connect (s->path));
  raw_expect (p, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
  if (announce)
    *announce = msg->u.announce;
  g_free (msg);
}

/* ------------------------------------------------------------------------ */
/* Fixture */

static void
warm_up (void)
{
  gchar *path = socket_path ("warm-up.sock");
  GstElement *producer, *sink;
  GstMessage *msg;
  Consumer *c;

  producer = launch ("videotestsrc num-buffers=3 ! " CAPS_STR
      " ! gpusharesink name=sink wait-for-connection=true");
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  msg = pop_message (c->pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "the warm-up exchange failed");
  gst_message_unref (msg);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

static void
setup (void)
{
  tmpdir = make_tmpdir ("gpushare-elements-XXXXXX");
  warm_up ();
  fd_baseline = count_fds_settled ();
}

static void
teardown (void)
{
  guint n = wait_fd_count (fd_baseline, TIMEOUT_MS);

  remove_tree (tmpdir);
  g_clear_pointer (&tmpdir, g_free);
  fail_unless_equals_int (n, fd_baseline);
}

/* ------------------------------------------------------------------------ */
/* 1. What gst-inspect shows */

static void
check_properties (const gchar * factory_name, const gchar * const *names,
    const gchar * const *read_only)
{
  GstElementFactory *factory = gst_element_factory_find (factory_name);
  GstElement *e;
  GParamSpec **specs;
  guint n_specs, i;

  fail_unless (factory != NULL, "no %s in the registry", factory_name);
  for (i = 0; i < 4; i++) {
    const gchar *keys[] = { GST_ELEMENT_METADATA_LONGNAME,
      GST_ELEMENT_METADATA_KLASS, GST_ELEMENT_METADATA_DESCRIPTION,
      GST_ELEMENT_METADATA_AUTHOR
    };
    const gchar *v = gst_element_factory_get_metadata (factory, keys[i]);

    fail_unless (v && *v, "%s has no %s", factory_name, keys[i]);
  }
  fail_unless_equals_int (gst_element_factory_get_num_pad_templates
      (factory), 1);

  e = gst_element_factory_create (factory, NULL);
  fail_unless (e != NULL);

  for (i = 0; names[i]; i++) {
    GParamSpec *pspec =
        g_object_class_find_property (G_OBJECT_GET_CLASS (e), names[i]);
    const gchar *blurb;
    gboolean ro = g_strv_contains (read_only, names[i]);
    GValue v = G_VALUE_INIT;

    fail_unless (pspec != NULL, "%s has no property %s", factory_name,
        names[i]);
    blurb = g_param_spec_get_blurb (pspec);
    fail_unless (blurb && *blurb, "%s::%s has no blurb", factory_name,
        names[i]);
    fail_unless (g_param_spec_get_nick (pspec) != NULL);
    fail_unless (pspec->flags & G_PARAM_READABLE);
    if (ro) {
      fail_if (pspec->flags & G_PARAM_WRITABLE, "%s::%s is writable",
          factory_name, names[i]);
    } else {
      fail_unless (pspec->flags & G_PARAM_WRITABLE);
      /* a setting says when it may change (GST_PARAM_MUTABLE_*) */
      fail_unless (pspec->flags & (GST_PARAM_MUTABLE_READY |
              GST_PARAM_MUTABLE_PAUSED | GST_PARAM_MUTABLE_PLAYING),
          "%s::%s does not say when it may change", factory_name, names[i]);
    }
    /* reading works in NULL state and gives a value of the declared type */
    g_value_init (&v, pspec->value_type);
    g_object_get_property (G_OBJECT (e), names[i], &v);
    if (g_str_equal (names[i], "stats")) {
      fail_unless (gst_value_get_structure (&v) != NULL);
    }
    g_value_unset (&v);
  }

  /* and nothing undocumented: every property the element adds is listed */
  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n_specs);
  for (i = 0; i < n_specs; i++) {
    if (specs[i]->owner_type != G_OBJECT_TYPE (e))
      continue;
    fail_unless (g_strv_contains (names, specs[i]->name),
        "%s::%s is not in the list this test knows", factory_name,
        specs[i]->name);
  }
  g_free (specs);
  gst_object_unref (e);
  gst_object_unref (factory);
}

static void
check_enum_nicks (GType type, const gchar * const *nicks)
{
  GEnumClass *klass = g_type_class_ref (type);
  guint i;

  fail_unless (G_IS_ENUM_CLASS (klass));
  for (i = 0; nicks[i]; i++)
    fail_unless (g_enum_get_value_by_nick (klass, nicks[i]) != NULL,
        "%s has no value %s", g_type_name (type), nicks[i]);
  g_type_class_unref (klass);
}

GST_START_TEST (test_inspect)
{
  static const gchar *const sink_props[] = { "socket-path",
    "wait-for-connection", "ring-size", "policy", "socket-mode",
    "max-clients", "handshake-timeout", "lease-timeout", "max-pending", "allowed-uids",
    "allowed-gids",
    "cuda-device-id", "heartbeat-interval",
    "num-clients", "stats", NULL
  };
  static const gchar *const sink_ro[] = { "num-clients", "stats", NULL };
  static const gchar *const src_props[] = { "socket-path",
    "connection-timeout", "is-live", "producer-lost", "transport",
    "sync-mode",
    "cuda-device-id", "heartbeat-interval", "allowed-producer-uids",
    "max-in-place", "stats", NULL
  };
  static const gchar *const src_ro[] = { "stats", NULL };
  static const gchar *const reasons[] = { "goodbye", "hangup", "protocol",
    "version", "not-authorized", "unsupported", "slow", "too-many-clients",
    "peer-error", "resource", "shutdown", "timeout", NULL
  };
  static const gchar *const policies[] = { "auto", "lossless", "leaky",
    NULL
  };
  GstElement *sink = gst_element_factory_make ("gpusharesink", NULL);
  GParamSpec *pspec;
  GSignalQuery query;
  guint mode = 0;

  check_properties ("gpusharesink", sink_props, sink_ro);
  check_properties ("gpusharesrc", src_props, src_ro);

  /* the socket is private to its owner unless asked otherwise */
  fail_unless (sink != NULL);
  g_object_get (sink, "socket-mode", &mode, NULL);
  fail_unless_equals_int (mode, 0600);
  fail_unless_equals_int (num_clients (sink), 0);

  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (sink), "policy");
  check_enum_nicks (pspec->value_type, policies);

  g_signal_query (g_signal_lookup ("client-connected", G_OBJECT_TYPE (sink)),
      &query);
  fail_unless (query.signal_id != 0, "no client-connected signal");
  fail_unless_equals_int (query.n_params, 1);
  fail_unless (query.param_types[0] == G_TYPE_UINT);
  g_signal_query (g_signal_lookup ("client-removed", G_OBJECT_TYPE (sink)),
      &query);
  fail_unless (query.signal_id != 0, "no client-removed signal");
  fail_unless_equals_int (query.n_params, 2);
  fail_unless (query.param_types[0] == G_TYPE_UINT);
  fail_unless (G_TYPE_IS_ENUM (query.param_types[1] &
          ~G_SIGNAL_TYPE_STATIC_SCOPE));
  check_enum_nicks (query.param_types[1] & ~G_SIGNAL_TYPE_STATIC_SCOPE,
      reasons);
  gst_object_unref (sink);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2. The sink alone, in a harness: its pool writes into the slots */

GST_START_TEST (test_sink_harness_pool)
{
  gchar *path = socket_path ("harness.sock");
  GstElement *sink = gst_element_factory_make ("gpusharesink", NULL);
  GstCaps *caps = gst_caps_from_string (CAPS_STR);
  GstBufferPool *pool = NULL;
  GstHarness *h;
  GstQuery *query;
  GstBuffer *buf;
  guint size = 0, min = 0, max = 0, i;

  fail_unless (sink != NULL);
  gst_object_ref_sink (sink);
  g_object_set (sink, "socket-path", path, "ring-size", 4, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_play (h);
  gst_harness_set_src_caps (h, gst_caps_ref (caps));

  query = gst_query_new_allocation (caps, TRUE);
  fail_unless (gst_pad_peer_query (h->srcpad, query),
      "the sink did not answer the ALLOCATION query");
  fail_unless (gst_query_get_n_allocation_pools (query) > 0,
      "the sink offers no pool");
  gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  fail_unless (pool != NULL);
  fail_unless (size >= FRAME_SIZE);
  fail_unless (gst_query_find_allocation_meta (query,
          GST_VIDEO_META_API_TYPE, NULL));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  /* pool buffers are slots: written in place, no copy at render */
  for (i = 0; i < 3; i++) {
    GstMapInfo map;

    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf,
            NULL), GST_FLOW_OK);
    fail_unless (gst_buffer_get_video_meta (buf) != NULL);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
    memset (map.data, 0x10 + i, map.size);
    gst_buffer_unmap (buf, &map);
    GST_BUFFER_PTS (buf) = i * (GST_SECOND / 30);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), 3);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), 0);

  /* plain buffers are copied into a slot */
  for (i = 0; i < 2; i++) {
    buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);
    gst_buffer_memset (buf, 0, 0x80 + i, FRAME_SIZE);
    GST_BUFFER_PTS (buf) = (3 + i) * (GST_SECOND / 30);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), 3);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), 2);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 5);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-dropped"), 0);
  /* nobody holds a frame: every slot is free again */
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 4);

  /* a slot that upstream takes and drops unrendered comes back */
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 3);
  gst_buffer_unref (buf);
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 4);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 5);

  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_query_unref (query);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
  gst_object_unref (sink);
  /* the sink removes its own socket file when it stops */
  fail_if (g_file_test (path, G_FILE_TEST_EXISTS));
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. Producer and consumer in this process: the same bytes arrive */

#define N_EXCHANGE 16
#define N_HELD 3
#define EXCHANGE_RING 8

typedef struct
{
  GMutex lock;
  GPtrArray *frames;            /* GBytes, as they reached the sink */
} Captured;

static GstPadProbeReturn
capture_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Captured *cap = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gpointer data = NULL;
  gsize size = 0;

  gst_buffer_extract_dup (buf, 0, FRAME_SIZE, &data, &size);
  g_mutex_lock (&cap->lock);
  g_ptr_array_add (cap->frames, g_bytes_new_take (data, size));
  g_mutex_unlock (&cap->lock);
  return GST_PAD_PROBE_OK;
}

/* is the mapping that holds addr writable?  /proc/self/maps knows */
static gboolean
mapping_is_writable (gconstpointer addr)
{
  gchar *maps = NULL;
  gchar **lines;
  gboolean found = FALSE, writable = TRUE;
  guint i;

  fail_unless (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  lines = g_strsplit (maps, "\n", -1);
  for (i = 0; lines[i] && !found; i++) {
    guint64 start, end;
    gchar perms[5] = { 0, };

    if (sscanf (lines[i], "%" G_GINT64_MODIFIER "x-%" G_GINT64_MODIFIER
            "x %4s", &start, &end, perms) != 3)
      continue;
    if ((guint64) (guintptr) addr >= start && (guint64) (guintptr) addr < end) {
      found = TRUE;
      writable = perms[1] == 'w';
    }
  }
  g_strfreev (lines);
  g_free (maps);
  fail_unless (found, "no mapping holds %p", addr);
  return writable;
}

/* the src reads its frames in their slots: system memory (on a GPU host
 * auto takes GPU memory, and each frame is then downloaded) */
static gboolean
src_in_place (GstElement * src)
{
  GstStructure *s = get_stats (src);
  gboolean in_place = g_strcmp0 (gst_structure_get_string (s, "memory-type"),
      "system") == 0;

  gst_structure_free (s);
  return in_place;
}

/* in_place: the frame is read in its slot (system memory); otherwise (a
 * GPU transport downloads it) the buffer is the consumer's own copy */
static void
check_consumer_buffer (GstBuffer * buf, GBytes * expected, GstClockTime pts,
    gboolean in_place)
{
  GstMemory *mem;
  GstMapInfo map, wmap;
  GstVideoMeta *meta;
  GstBuffer *copy;
  gsize size;
  const guint8 *want = g_bytes_get_data (expected, &size);

  fail_unless_equals_int (size, FRAME_SIZE);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), pts);
  fail_unless_equals_int (gst_buffer_n_memory (buf), 1);

  meta = gst_buffer_get_video_meta (buf);
  fail_unless (meta != NULL, "no GstVideoMeta on a consumer buffer");
  fail_unless_equals_int (meta->format, GST_VIDEO_FORMAT_NV12);
  fail_unless_equals_int (meta->width, 64);
  fail_unless_equals_int (meta->height, 48);
  fail_unless_equals_int (meta->n_planes, 2);
  fail_unless_equals_int (meta->stride[0], 64);
  fail_unless_equals_int (meta->offset[1], 64 * 48);

  mem = gst_buffer_peek_memory (buf, 0);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless (map.size >= FRAME_SIZE);
  fail_unless (memcmp (map.data, want, FRAME_SIZE) == 0,
      "the consumer got other bytes than the producer sent");
  if (!in_place) {
    gst_memory_unmap (mem, &map);
    return;
  }
  fail_unless (GST_MEMORY_FLAG_IS_SET (mem, GST_MEMORY_FLAG_READONLY),
      "consumer memory is not marked read-only");
  /* the mapping itself is read-only, not just the flag on it */
  fail_if (mapping_is_writable (map.data),
      "the consumer's mapping of a slot is writable");
  /* write access to the slot is refused outright... */
  fail_if (gst_memory_map (mem, &wmap, GST_MAP_WRITE),
      "write map of a consumer slot succeeded");
  /* ...and a writable buffer around it gets a private copy */
  copy = gst_buffer_copy (buf);
  if (gst_buffer_map (copy, &wmap, GST_MAP_WRITE)) {
    fail_if (wmap.data == map.data, "write map handed out the slot itself");
    wmap.data[0] ^= 0xff;
    gst_buffer_unmap (copy, &wmap);
  }
  gst_buffer_unref (copy);
  fail_unless (memcmp (map.data, want, FRAME_SIZE) == 0,
      "writing a copy changed the slot");
  gst_memory_unmap (mem, &map);
}

static void
run_exchange (gboolean use_appsrc)
{
  gchar *path = socket_path ("exchange.sock");
  GstElement *producer, *sink, *appsrc = NULL;
  GstBuffer *held[N_HELD];
  GstMessage *msg;
  GstPad *pad;
  Captured cap;
  Consumer *c;
  gboolean in_place = TRUE;
  guint i;

  if (use_appsrc) {
    GstCaps *caps = gst_caps_from_string (CAPS_STR);

    producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
    appsrc = child (producer, "in");
    g_object_set (appsrc, "caps", caps, NULL);
    gst_caps_unref (caps);
  } else {
    /* snow: every frame differs, so a mix-up of slots cannot go unseen */
    producer = launch ("videotestsrc pattern=snow num-buffers=%d ! " CAPS_STR
        " ! gpusharesink name=sink", N_EXCHANGE);
  }
  sink = child (producer, "sink");
  /* the consumer must see every frame to compare them all */
  g_object_set (sink, "socket-path", path, "wait-for-connection", TRUE,
      "ring-size", EXCHANGE_RING, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");

  g_mutex_init (&cap.lock);
  cap.frames = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, capture_probe, &cap,
      NULL);
  gst_object_unref (pad);

  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  /* every frame in place, however many wait in the test's queue (past
   * max-in-place frames are copies: test_filesink_small_frames) */
  g_object_set (c->src, "max-in-place", EXCHANGE_RING, NULL);
  consumer_start (c);

  if (use_appsrc) {
    for (i = 0; i < N_EXCHANGE; i++) {
      GstBuffer *buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);
      GstMapInfo map;
      guint j;

      fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
      for (j = 0; j < FRAME_SIZE; j++)
        map.data[j] = (i * 31 + j * 7 + (j >> 8)) & 0xff;
      gst_buffer_unmap (buf, &map);
      GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 30);
      GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
      fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (appsrc),
              buf), GST_FLOW_OK);
    }
    gst_app_src_end_of_stream (GST_APP_SRC (appsrc));
  }

  for (i = 0; i < N_EXCHANGE; i++) {
    GstBuffer *buf = g_async_queue_timeout_pop (c->buffers,
        TIMEOUT_MS * 1000);
    GBytes *expected;

    fail_unless (buf != NULL, "frame %u never arrived", i);
    if (i == 0)
      in_place = src_in_place (c->src);
    g_mutex_lock (&cap.lock);
    /* a frame reaches the consumer only after it passed the probe */
    fail_unless (i < cap.frames->len);
    expected = g_bytes_ref (g_ptr_array_index (cap.frames, i));
    g_mutex_unlock (&cap.lock);
    check_consumer_buffer (buf, expected,
        gst_util_uint64_scale (i, GST_SECOND, 30), in_place);
    g_bytes_unref (expected);
    if (i < N_HELD)
      held[i] = buf;
    else
      gst_buffer_unref (buf);
  }
  msg = pop_message (c->pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "the consumer did not reach EOS");
  gst_message_unref (msg);

  if (in_place) {
    /* the buffers still held keep exactly their slots... */
    fail_unless_equals_int (wait_stat_uint (sink, "free-slots",
            EXCHANGE_RING - N_HELD), EXCHANGE_RING - N_HELD);
    fail_unless_equals_int (client_stat_uint (sink, 0, "slots-held"),
        N_HELD);
  }
  /* ...and dropping them gives every slot back to the producer; copies
   * (GPU memory downloaded) held none */
  for (i = 0; i < N_HELD; i++)
    gst_buffer_unref (held[i]);
  fail_unless_equals_int (wait_stat_uint (sink, "free-slots",
          EXCHANGE_RING), EXCHANGE_RING);
  fail_unless_equals_int (client_stat_uint (sink, 0, "slots-held"), 0);

  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), N_EXCHANGE);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-dropped"), 0);
  if (!in_place) {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-to-gpu"), N_EXCHANGE);
  } else if (use_appsrc) {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), N_EXCHANGE);
  } else {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"),
        N_EXCHANGE);
  }
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-received"),
      N_EXCHANGE);
  check_transport_reason (c->src, sink);

  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_ptr_array_unref (cap.frames);
  g_mutex_clear (&cap.lock);
  g_free (path);
}

/* Nothing in our logs is a capability: no fd number, no pointer-like
 * hex (handles, device pointers).  Every gpushare category at its most
 * verbose, through a whole exchange. */
typedef struct
{
  GMutex lock;
  GRegex *bad;
  guint n_lines;
  gchar *first_bad;
} LogScan;

static void
log_scan_func (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  LogScan *scan = user_data;
  const gchar *text;

  if (!g_str_has_prefix (gst_debug_category_get_name (category), "gpushare"))
    return;
  text = gst_debug_message_get (message);
  g_mutex_lock (&scan->lock);
  scan->n_lines++;
  if (!scan->first_bad && text && g_regex_match (scan->bad, text, 0, NULL))
    scan->first_bad = g_strdup_printf ("%s: %s", function, text);
  g_mutex_unlock (&scan->lock);
}

static void run_exchange (gboolean use_appsrc);

GST_START_TEST (test_logs_carry_no_handles)
{
  LogScan scan = { 0, };

  g_mutex_init (&scan.lock);
  scan.bad = g_regex_new ("\\bfds?\\s*[=:#]?\\s*[0-9]|0x[0-9a-fA-F]{6,}",
      0, 0, NULL);
  gst_debug_add_log_function (log_scan_func, &scan, NULL);
  gst_debug_set_threshold_from_string ("gpushare*:9", FALSE);
  run_exchange (FALSE);
  gst_debug_set_threshold_from_string ("gpushare*:3", TRUE);
  gst_debug_remove_log_function (log_scan_func);
  fail_unless (scan.n_lines > 100, "only %u log lines were seen",
      scan.n_lines);
  fail_unless (scan.first_bad == NULL, "a log line carries a number that "
      "looks like an fd or a handle: %s", scan.first_bad);
  g_regex_unref (scan.bad);
  g_mutex_clear (&scan.lock);
}

GST_END_TEST;

GST_START_TEST (test_exchange_copied)
{
  run_exchange (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_exchange_in_place)
{
  run_exchange (FALSE);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 4. A consumer that sends garbage is dropped, alone */

typedef enum
{
  GARBAGE_RANDOM,
  GARBAGE_MAGIC,
  GARBAGE_VERSION,
  GARBAGE_TOO_LARGE,
  GARBAGE_FRAME,
  GARBAGE_UNMAPPED,
  N_GARBAGE
} Garbage;

static const struct
{
  const gchar *name;
  const gchar *reason;
  guint32 code;                 /* of an ERROR, if one comes */
  gboolean error_required;
} garbage_cases[N_GARBAGE] = {
  {"random bytes", "protocol", GPUSHARE_ERR_PROTOCOL, FALSE},
  {"a wrong magic", "protocol", GPUSHARE_ERR_PROTOCOL, FALSE},
  {"a wrong major version", "version", GPUSHARE_ERR_VERSION, FALSE},
  {"a payload_len over the cap", "protocol", GPUSHARE_ERR_PROTOCOL, FALSE},
  /* decoded, then refused by the element: it says why */
  {"a FRAME, which only producers send", "protocol", GPUSHARE_ERR_PROTOCOL,
      TRUE},
  {"an UNMAPPED before any SLOTS", "protocol", GPUSHARE_ERR_PROTOCOL, TRUE},
};

static GByteArray *
garbage_bytes (Garbage which, guint64 instance)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *b = NULL;

  switch (which) {
    case GARBAGE_RANDOM:
      b = random_bytes (256);
      break;
    case GARBAGE_MAGIC:
      make_accept (msg, instance);
      b = build (msg, 0);
      patch32 (b, HDR_OFF (magic), 0xdeadbeef);
      break;
    case GARBAGE_VERSION:
      make_accept (msg, instance);
      b = build (msg, 0);
      patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR + 1);
      break;
    case GARBAGE_TOO_LARGE:
      /* the header alone: the cap is checked before any payload is read */
      make_simple (msg, GPUSHARE_MSG_GOODBYE);
      b = build (msg, 0);
      patch32 (b, HDR_OFF (payload_len), GPUSHARE_MAX_PAYLOAD + 1);
      g_byte_array_set_size (b, GPUSHARE_HEADER_SIZE);
      break;
    case GARBAGE_FRAME:
      make_frame (msg, 1, 0, 1, 1);
      b = build (msg, 0);
      break;
    case GARBAGE_UNMAPPED:
      make_simple (msg, GPUSHARE_MSG_UNMAPPED);
      b = build (msg, 0);
      break;
    default:
      g_assert_not_reached ();
  }
  g_free (msg);
  return b;
}

GST_START_TEST (test_consumer_garbage)
{
  Garbage which = __i__;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  RawPeer raw;
  GArray *codes;
  Scene s;
  guint i;

  GST_INFO ("consumer sends %s", garbage_cases[which].name);
  scene_start (&s, TRUE);
  scene_raw_client (&s, &raw, announce);
  fail_unless_equals_int (num_clients (s.sink), 2);

  raw_send_bytes (&raw, garbage_bytes (which, announce->instance), NULL, 0);
  codes = raw_drain (&raw);
  for (i = 0; i < codes->len; i++)
    fail_unless_equals_int (g_array_index (codes, guint32, i),
        garbage_cases[which].code);
  if (garbage_cases[which].error_required)
    fail_unless (codes->len == 1, "no ERROR before the hang-up");
  g_array_unref (codes);

  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0),
      garbage_cases[which].reason);
  fail_unless_equals_int (num_clients (s.sink), 1);

  /* the blast radius is that client: the other one goes on */
  assert_consumer_alive (s.consumer);
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* A consumer that connects and never answers is dropped when its
 * handshake step is overdue, with ERROR TIMEOUT; the others go on. */
/* A consumer that holds its frames while a lossless producer waits for a
 * slot loses its lease: it is dropped (reason "lease"), the slots it held
 * are quarantined, never written again, and the ring is replaced; the next
 * consumer streams from the new ring. */
GST_START_TEST (test_lease_quarantine)
{
  gchar *path = socket_path ("lease");
  GstElement *producer, *sink;
  Consumer *steady, *stuck[2], *next;
  guint64 replaced;
  ClientLog log;
  GstMessage *msg;
  GPtrArray *held = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GPtrArray *before = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  GstBuffer *buf;
  guint i, k;

  producer = launch ("videotestsrc pattern=snow ! " CAPS_STR
      " ! gpusharesink name=sink");
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, "wait-for-connection", TRUE,
      "ring-size", 4, "lease-timeout", 1000, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");
  client_log_init (&log, sink);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);

  /* a healthy consumer streams through it all */
  steady = consumer_new (path, FALSE);
  consumer_start (steady);
  fail_unless (consumer_wait (steady, 5));
  /* two that keep every frame: they hold the same slots.  Only a consumer
   * that reads in place holds a slot for as long as it keeps the buffer: a
   * GPU consumer copies each frame out and gives the slot back at once (on
   * a GPU machine auto would pick it; gpu_drills covers GPU leases) */
  for (k = 0; k < 2; k++) {
    stuck[k] = consumer_new (path, TRUE);
    gst_util_set_object_arg (G_OBJECT (stuck[k]->src), "transport", "system");
    /* every frame in place: past max-in-place (by default half the ring)
     * a consumer copies its frames and holds nobody up */
    g_object_set (stuck[k]->src, "max-in-place", 4, NULL);
    consumer_start (stuck[k]);
  }
  fail_unless (client_log_wait (&log, TRUE, 2), "the leases never expired");
  for (k = 0; k < 2; k++)
    fail_unless_equals_string (client_log_removed_nick (&log, k), "lease");
  fail_unless (stat_u64 (sink, "slots-quarantined") >= 1);

  for (k = 0; k < 2; k++) {
    /* each dropped consumer is told why */
    msg = pop_message (stuck[k]->pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
    fail_unless (msg != NULL, "a dropped consumer posted no error");
    gst_message_unref (msg);
    /* what it holds, as it was when it was dropped */
    while ((buf = g_async_queue_try_pop (stuck[k]->buffers))) {
      GstMapInfo map;

      fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
      g_ptr_array_add (before, g_bytes_new (map.data, map.size));
      gst_buffer_unmap (buf, &map);
      g_ptr_array_add (held, buf);
    }
  }
  fail_unless (held->len >= 2);

  /* the producer goes on with a new ring for the next consumer */
  next = consumer_new (path, FALSE);
  consumer_start (next);
  fail_unless (consumer_wait (next, 40), "the next consumer got no frames");
  /* one ring replaced if both were dropped at once, two if the second
   * took the new ring's slots before its own lease expired; a slot both
   * held counts once */
  replaced = stat_u64 (sink, "rings-replaced");
  fail_unless (replaced == 1 || replaced == 2, "%" G_GUINT64_FORMAT
      " rings replaced", replaced);
  fail_unless (stat_u64 (sink, "slots-quarantined") <= 4 * replaced,
      "%" G_GUINT64_FORMAT " slots quarantined in %" G_GUINT64_FORMAT
      " rings of 4", stat_u64 (sink, "slots-quarantined"), replaced);
  assert_consumer_alive (steady);
  fail_unless_equals_int (client_log_n_removed (&log), 2);
  assert_no_error (producer);
  assert_no_error (next->pipeline);

  /* 40 snow frames later, the quarantined slots are unchanged */
  for (i = 0; i < held->len; i++) {
    GstMapInfo map;
    GBytes *now;

    fail_unless (gst_buffer_map (g_ptr_array_index (held, i), &map,
            GST_MAP_READ));
    now = g_bytes_new (map.data, map.size);
    gst_buffer_unmap (g_ptr_array_index (held, i), &map);
    fail_unless (g_bytes_equal (now, g_ptr_array_index (before, i)),
        "held frame %u was overwritten", i);
    g_bytes_unref (now);
  }

  g_ptr_array_unref (held);
  g_ptr_array_unref (before);
  consumer_free (next);
  consumer_free (stuck[0]);
  consumer_free (stuck[1]);
  consumer_free (steady);
  /* the sink's thread emits client-removed: stop it before the log goes */
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_handshake_timeout)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  RawPeer raw;
  GArray *codes;
  gint64 t0, elapsed;
  Scene s;

  scene_start (&s, TRUE);
  g_object_set (s.sink, "handshake-timeout", 300, NULL);
  t0 = g_get_monotonic_time ();
  scene_raw_client (&s, &raw, announce);
  fail_unless_equals_int (num_clients (s.sink), 2);
  /* no ACCEPT: wait for what the producer does about it */
  codes = raw_drain (&raw);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TIMEOUT);
  fail_unless (elapsed >= 250 && elapsed < 3000, "dropped after %"
      G_GINT64_FORMAT " ms, not after about 300", elapsed);
  g_array_unref (codes);

  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "timeout");
  fail_unless_equals_int (num_clients (s.sink), 1);
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* Heartbeat, producer side: a consumer that connects, reads ANNOUNCE and
 * then sends nothing at all, not even PING, is dropped as "timeout" after
 * 3 heartbeat intervals (handshake-timeout 0 leaves the heartbeat alone to
 * catch it); it got PINGs meanwhile, and the real consumer streams on. */
GST_START_TEST (test_heartbeat_silent_consumer)
{
  RawPeer raw;
  GArray *codes;
  gint64 t0, elapsed;
  guint n_pings;
  Scene s;

  scene_start (&s, TRUE);
  g_object_set (s.sink, "heartbeat-interval", 100, "handshake-timeout", 0,
      NULL);
  t0 = g_get_monotonic_time ();
  scene_raw_client (&s, &raw, NULL);
  fail_unless_equals_int (num_clients (s.sink), 2);
  codes = raw_drain_pings (&raw, &n_pings);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TIMEOUT);
  fail_unless (elapsed >= 250 && elapsed < 1500, "dropped after %"
      G_GINT64_FORMAT " ms, not after about 300", elapsed);
  fail_unless (n_pings >= 1, "the producer sent no PING on an idle link");
  g_array_unref (codes);

  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "timeout");
  fail_unless_equals_int (num_clients (s.sink), 1);
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
}

GST_END_TEST;

/* A consumer that never finishes its handshake but answers with PINGs is
 * alive: with handshake-timeout 0 nothing drops it, here for 1 s (10
 * heartbeat intervals). */
GST_START_TEST (test_heartbeat_pings_keep_alive)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  RawPeer raw;
  gint64 end;
  Scene s;

  scene_start (&s, TRUE);
  g_object_set (s.sink, "heartbeat-interval", 100, "handshake-timeout", 0,
      NULL);
  scene_raw_client (&s, &raw, NULL);
  make_simple (msg, GPUSHARE_MSG_PING);
  end = g_get_monotonic_time () + 1000 * 1000;
  while (g_get_monotonic_time () < end) {
    fail_unless (raw_send_msg (&raw, msg, NULL, 0), "the producer hung up");
    /* read what came (PINGs), so the socket never fills */
    while (raw_recv (&raw, msg, NULL, NULL, 0) == RAW_MSG)
      fail_if (msg->type == GPUSHARE_MSG_ERROR, "ERROR %s: %s",
          gpushare_error_code_to_string (msg->u.error.code),
          msg->u.error.text);
    make_simple (msg, GPUSHARE_MSG_PING);
    g_usleep (50 * 1000);
  }
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_consumer_alive (s.consumer);

  /* and once it goes, it is for the reason it went */
  raw_clear (&raw);
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "hangup");
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* A flood of connections that never finish their handshake: beyond
 * max-pending they are refused at once; a real consumer keeps streaming,
 * and once the pending ones time out a new one gets in. */
GST_START_TEST (test_max_pending)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  RawPeer raw[3];
  GArray *codes;
  Scene s;
  guint i;

  scene_start (&s, TRUE);
  g_object_set (s.sink, "max-pending", 2, "handshake-timeout", 500, NULL);
  for (i = 0; i < 2; i++)
    scene_raw_client (&s, &raw[i], announce);
  fail_unless_equals_int (num_clients (s.sink), 3);
  /* the third pending one: one ERROR TOO_MANY_CLIENTS, then the end */
  raw_init (&raw[2], raw_connect (s.path));
  codes = raw_drain (&raw[2]);
  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TOO_MANY_CLIENTS);
  g_array_unref (codes);
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0),
      "too-many-clients");
  assert_consumer_alive (s.consumer);

  /* the two time out; then there is room again */
  fail_unless (client_log_wait (&s.log, TRUE, 3));
  raw_clear (&raw[2]);
  scene_raw_client (&s, &raw[2], announce);
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_no_error (s.producer);

  for (i = 0; i < 3; i++)
    raw_clear (&raw[i]);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* An unknown major version is refused at the handshake with a clear error:
 * the transport answers ERROR VERSION before it hangs up (docs/protocol.md,
 * "Versioning"). */
GST_START_TEST (test_sink_answers_version)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  RawPeer raw;
  GArray *codes;
  Scene s;

  scene_start (&s, FALSE);
  scene_raw_client (&s, &raw, announce);
  raw_send_bytes (&raw, garbage_bytes (GARBAGE_VERSION, announce->instance),
      NULL, 0);
  codes = raw_drain (&raw);
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "version");
  fail_unless (codes->len == 1,
      "the consumer got no ERROR VERSION, only the hang-up");
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_VERSION);
  g_array_unref (codes);
  raw_clear (&raw);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 5. Descriptors from a consumer: none are allowed, all are closed */

typedef enum
{
  FDS_UNDECLARED,               /* fds beside a message whose header says 0 */
  FDS_FORBIDDEN_TYPE,           /* an ACCEPT whose header declares fds */
  FDS_ON_SLOTS,                 /* a well-formed SLOTS, from a consumer */
  FDS_LYING_COUNT,              /* header n_fds 4, one fd sent */
  FDS_OVER_CAP,                 /* 100 fds: the receiver's cmsg truncates */
  N_FDS_CASES
} FdsCase;

static const gchar *const fds_case_names[N_FDS_CASES] = {
  "undeclared fds", "fds on an ACCEPT", "a SLOTS with fds",
  "a lying fd count", "more fds than the cap",
};

GST_START_TEST (test_consumer_fds)
{
  FdsCase which = __i__;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[KERNEL_MAX_FDS];
  guint n_fds = 0, mid, i;
  GByteArray *b = NULL;
  gint pipe_fds[2];
  RawPeer raw;
  Scene s;

  GST_INFO ("consumer sends %s", fds_case_names[which]);
  scene_start (&s, FALSE);
  /* the producer and its ring exist: from here the count must not move */
  mid = count_fds ();
  scene_raw_client (&s, &raw, announce);

  /* every fd we send is a write end of this pipe: once each copy is
   * closed, wherever it went, the read end hangs up */
  fail_unless (pipe2 (pipe_fds, O_CLOEXEC) == 0);
  switch (which) {
    case FDS_UNDECLARED:
      make_accept (msg, announce->instance);
      b = build (msg, 0);
      n_fds = 2;
      break;
    case FDS_FORBIDDEN_TYPE:
      make_accept (msg, announce->instance);
      b = build (msg, 0);
      patch32 (b, HDR_OFF (n_fds), 2);
      n_fds = 2;
      break;
    case FDS_ON_SLOTS:
      msg->type = GPUSHARE_MSG_SLOTS;
      msg->u.slots.epoch = 1;
      msg->u.slots.slot_size = 4096;
      msg->u.slots.n_slots = 2;
      msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
      b = build (msg, 2);
      n_fds = 2;
      break;
    case FDS_LYING_COUNT:
      msg->type = GPUSHARE_MSG_SLOTS;
      msg->u.slots.epoch = 1;
      msg->u.slots.slot_size = 4096;
      msg->u.slots.n_slots = 4;
      msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
      b = build (msg, 4);
      n_fds = 1;
      break;
    case FDS_OVER_CAP:
      /* an unknown type declaring exactly the cap: without the MSG_CTRUNC
       * check the producer would take the first 64, close them as the
       * fds of an ignored message and keep the client */
      b = raw_message (200, 8, GPUSHARE_MAX_FDS);
      n_fds = 100;
      break;
    default:
      g_assert_not_reached ();
  }
  for (i = 0; i < n_fds; i++) {
    fds[i] = fcntl (pipe_fds[1], F_DUPFD_CLOEXEC, 3);
    fail_unless (fds[i] >= 0);
  }
  close (pipe_fds[1]);
  raw_send_bytes (&raw, b, fds, n_fds);
  gpushare_close_fds (fds, n_fds);

  g_array_unref (raw_drain (&raw));
  fail_unless (client_log_wait (&s.log, TRUE, 1), "the client was not "
      "dropped");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");
  fail_unless_equals_int (num_clients (s.sink), 0);
  fail_unless (wait_pipe_hangup (pipe_fds[0], TIMEOUT_MS),
      "the producer kept a descriptor it received");
  close (pipe_fds[0]);
  raw_clear (&raw);
  fail_unless_equals_int (wait_fd_count (mid, TIMEOUT_MS), mid);
  assert_no_error (s.producer);

  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 6. Unknown message types are skipped, with whatever they carry */

GST_START_TEST (test_consumer_unknown_type)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  gint pipe_fds[2], two[2];
  guint n_fds = 0, i;
  guint64 epoch;
  RawPeer raw;
  Scene s;

  scene_start (&s, FALSE);
  scene_raw_client (&s, &raw, announce);
  epoch = announce->layout.epoch;

  /* a newer minor's message, before and in the middle of the handshake */
  fail_unless (raw_send_bytes (&raw, raw_message (200, 40, 0), NULL, 0));
  fail_unless (pipe2 (pipe_fds, O_CLOEXEC) == 0);
  two[0] = pipe_fds[1];
  two[1] = fcntl (pipe_fds[1], F_DUPFD_CLOEXEC, 3);
  fail_unless (raw_send_bytes (&raw, raw_message (201, 16, 2), two, 2));
  gpushare_close_fds (two, 2);

  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  fail_unless_equals_int (n_fds, announce->layout.n_slots);
  for (i = 0; i < n_fds; i++) {
    struct stat st;
    gint seals = fcntl (fds[i], F_GET_SEALS);

    /* what a consumer relies on to map without fear of SIGBUS */
    fail_unless (fstat (fds[i], &st) == 0 && S_ISREG (st.st_mode));
    fail_unless_equals_uint64 (st.st_size, msg->u.slots.slot_size);
    fail_unless (seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
        (F_SEAL_SHRINK | F_SEAL_GROW), "slot %u is not sealed", i);
  }
  gpushare_close_fds (fds, n_fds);

  make_simple (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = epoch;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fail_unless (client_log_wait (&s.log, FALSE, 1), "no client-connected");

  /* frames flow, and go back */
  for (i = 0; i < 3; i++) {
    GpuShareFrame f;

    raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
    f = msg->u.frame;
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_RELEASE;
    msg->u.release.epoch = f.epoch;
    msg->u.release.slot = f.slot;
    msg->u.release.generation = f.generation;
    msg->u.release.sequence = f.sequence;
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    fail_unless (raw_send_bytes (&raw, raw_message (202, 0, 0), NULL, 0));
  }
  /* minor 2's UNMAPPED of its epoch, from a consumer of system memory:
   * nothing to let go of, and no harm */
  make_simple (msg, GPUSHARE_MSG_UNMAPPED);
  msg->u.mapped.epoch = epoch;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  fail_unless_equals_int (num_clients (s.sink), 1);
  fail_unless (wait_pipe_hangup (pipe_fds[0], TIMEOUT_MS),
      "the fds of an ignored message were kept");
  close (pipe_fds[0]);

  make_simple (msg, GPUSHARE_MSG_GOODBYE);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "goodbye");
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 7. Another uid is refused */

#define FOREIGN_UID 65534

typedef struct
{
  gint stage;
  gint connect_errno;           /* 0: connected */
  gint n_fds;                   /* descriptors received */
  gint eof;
  guint32 len;                  /* bytes received, which follow */
} UidReport;

enum
{
  UID_OK,
  UID_NO_GO,
  UID_NO_SETUID,
  UID_NO_DIR,
};

/* a whole message at the start of buf?  (payload_len, little-endian, at
 * byte 12 of the frozen header) */
static gboolean
first_message_in (const guint8 * buf, guint32 len)
{
  guint32 payload;

  if (len < GPUSHARE_HEADER_SIZE)
    return FALSE;
  payload = buf[12] | (buf[13] << 8) | (buf[14] << 16) | ((guint32) buf[15]
      << 24);
  return len - GPUSHARE_HEADER_SIZE >= payload;
}

/* In a forked child, system calls only: receives from s into buf until
 * the peer hangs up (*eof) or, once a whole first message is in, stays
 * quiet for 500 ms; the fds that come with it are closed and counted into
 * *n_fds (if not NULL). */
static void
child_receive (gint s, guint8 * buf, gsize cap, guint32 * len, gint * n_fds,
    gint * eof)
{
  union
  {
    struct cmsghdr hdr;
    gchar b[CMSG_SPACE (sizeof (gint) * KERNEL_MAX_FDS)];
  } cmsg;
  struct pollfd pfd;

  while (*len < cap) {
    struct iovec iov;
    struct msghdr mh;
    struct cmsghdr *c;
    gssize n;

    pfd.fd = s;
    pfd.events = POLLIN;
    /* once a whole first message is here, a refused peer sees the end of
     * the stream at once; an admitted one waits for nothing more */
    if (poll (&pfd, 1, first_message_in (buf, *len) ? 500 : TIMEOUT_MS) != 1)
      break;
    memset (&mh, 0, sizeof (mh));
    iov.iov_base = buf + *len;
    iov.iov_len = cap - *len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cmsg.b;
    mh.msg_controllen = sizeof (cmsg.b);
    n = recvmsg (s, &mh, MSG_CMSG_CLOEXEC);
    for (c = CMSG_FIRSTHDR (&mh); n >= 0 && c; c = CMSG_NXTHDR (&mh, c)) {
      guint k, count;

      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        continue;
      count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);
      for (k = 0; k < count; k++) {
        gint fd;

        memcpy (&fd, CMSG_DATA (c) + k * sizeof (gint), sizeof (gint));
        close (fd);
        if (n_fds)
          (*n_fds)++;
      }
    }
    if (n <= 0) {
      *eof = 1;
      break;
    }
    *len += n;
  }
}

/* Runs in a child forked from a threaded process: system calls only, no
 * allocation, no locks. */
static void G_GNUC_NORETURN
foreign_uid_child (const struct sockaddr_un *addr, const gchar * dir,
    gint go_fd, gint report_fd)
{
  static guint8 buf[65536];
  UidReport r;
  struct pollfd pfd;
  gchar go;
  gint s;

  memset (&r, 0, sizeof (r));
  pfd.fd = go_fd;
  pfd.events = POLLIN;
  if (poll (&pfd, 1, 20000) != 1 || read (go_fd, &go, 1) != 1) {
    r.stage = UID_NO_GO;
    goto report;
  }
  if (setgroups (0, NULL) < 0 || setgid (FOREIGN_UID) < 0
      || setuid (FOREIGN_UID) < 0 || getuid () != FOREIGN_UID) {
    r.stage = UID_NO_SETUID;
    goto report;
  }
  if (access (dir, X_OK) < 0) {
    r.stage = UID_NO_DIR;
    goto report;
  }
  s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect (s, (const struct sockaddr *) addr,
          sizeof (*addr)) < 0) {
    r.connect_errno = errno;
    goto report;
  }
  child_receive (s, buf, sizeof (buf), &r.len, &r.n_fds, &r.eof);

report:
  if (write (report_fd, &r, sizeof (r)) == sizeof (r) && r.len > 0)
    while (write (report_fd, buf, r.len) < 0 && errno == EINTR);
  _exit (0);
}

/* Reads what a forked child writes to fd until it exits, and reaps it:
 * its report of report_size bytes into report, then the bytes it received
 * into bytes.  Closes fd. */
static void
read_child_report (gint fd, pid_t pid, gpointer report, gsize report_size,
    GByteArray * bytes)
{
  guint8 chunk[4096];

  g_byte_array_set_size (bytes, 0);
  for (;;) {
    struct pollfd pfd = {.fd = fd,.events = POLLIN };
    gssize n;

    fail_unless (poll (&pfd, 1, 3 * TIMEOUT_MS) == 1, "the child hangs");
    n = read (fd, chunk, sizeof (chunk));
    if (n < 0 && errno == EINTR)
      continue;
    fail_unless (n >= 0);
    if (n == 0)
      break;
    g_byte_array_append (bytes, chunk, n);
  }
  close (fd);
  reap_clean_exit (pid);
  fail_unless (bytes->len >= report_size);
  memcpy (report, bytes->data, report_size);
  g_byte_array_remove_range (bytes, 0, report_size);
}

/* Forks the child before the producer starts, then lets it connect. */
static gboolean
run_foreign_client (guint mode, const gchar * allow_prop,
    const gchar * allow_value, UidReport * report, GByteArray * bytes,
    ClientLog * log_out_removed, const gchar ** nick)
{
  gchar *path = socket_path ("uid.sock");
  struct sockaddr_un addr;
  GstElement *producer, *sink;
  gint go[2], rep[2];
  ClientLog log;
  gboolean usable;
  pid_t pid;

  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fail_unless (pipe2 (go, O_CLOEXEC) == 0 && pipe2 (rep, O_CLOEXEC) == 0);

  pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    close (go[1]);
    close (rep[0]);
    foreign_uid_child (&addr, tmpdir, go[0], rep[1]);
  }
  close (go[0]);
  close (rep[1]);

  producer = producer_new (path, &sink);
  g_object_set (sink, "socket-mode", mode, NULL);
  if (allow_prop)
    gst_util_set_object_arg (G_OBJECT (sink), allow_prop, allow_value);
  client_log_init (&log, sink);
  producer_start (producer, sink);
  fail_unless (write (go[1], "g", 1) == 1);
  close (go[1]);

  read_child_report (rep[0], pid, report, sizeof (*report), bytes);
  fail_unless_equals_int (bytes->len, report->len);
  usable = report->stage == UID_OK;

  *nick = NULL;
  if (usable && report->connect_errno == 0) {
    fail_unless (client_log_wait (&log, TRUE, 1),
        "no client-removed for the refused client");
    *nick = client_log_removed_nick (&log, 0);
    /* a refused peer never became a client: it has no id */
    if (g_str_equal (*nick, "not-authorized"))
      fail_unless_equals_int (GPOINTER_TO_UINT (g_ptr_array_index
              (log.removed_ids, 0)), 0);
  }
  /* nobody else was ever let in */
  fail_unless_equals_int (log.connected, 0);
  fail_unless_equals_int (num_clients (sink), 0);
  assert_no_error (producer);
  gst_element_set_state (producer, GST_STATE_NULL);
  if (usable && report->connect_errno != 0)
    fail_unless_equals_int (client_log_n_removed (&log), 0);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
  return usable;
}

static void
assert_refused (UidReport * report, GByteArray * bytes, GpuShareMsg * msg,
    const gchar * nick)
{
  GpuShareHeader hdr;

  fail_unless_equals_int (report->connect_errno, 0);
  fail_unless_equals_int (report->n_fds, 0);
  fail_unless (report->eof, "the refused client was not hung up on");
  fail_unless_equals_string (nick, "not-authorized");
  /* exactly one message: ERROR NOT_AUTHORIZED */
  fail_unless_equals_int (gpushare_header_parse (bytes->data, bytes->len,
          &hdr), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ERROR);
  fail_unless_equals_int (hdr.n_fds, 0);
  fail_unless_equals_int (bytes->len, GPUSHARE_HEADER_SIZE + hdr.payload_len);
  fail_unless_equals_int (gpushare_msg_parse (&hdr,
          bytes->data + GPUSHARE_HEADER_SIZE, hdr.payload_len, msg),
      GPUSHARE_PARSE_OK);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_NOT_AUTHORIZED);
}

GST_START_TEST (test_foreign_uid_refused)
{
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  const gchar *nick = NULL;
  UidReport report;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_refused: needs root to run a client "
        "as uid %d\n", FOREIGN_UID);
    goto done;
  }
  /* the directory must not be what keeps the other uid out */
  fail_unless (chmod (tmpdir, 0755) == 0);

  /* owner-only socket: the kernel refuses the connect itself */
  if (!run_foreign_client (0600, NULL, NULL, &report, bytes, NULL, &nick)) {
    g_print ("SKIP test_foreign_uid_refused: cannot act as uid %d here "
        "(stage %d)\n", FOREIGN_UID, report.stage);
    goto done;
  }
  fail_unless_equals_int (report.connect_errno, EACCES);

  /* world-writable socket: SO_PEERCRED refuses it, before anything leaves */
  fail_unless (run_foreign_client (0666, NULL, NULL, &report, bytes, NULL,
          &nick));
  assert_refused (&report, bytes, msg, nick);
  /* a gid that is not the peer's lets nobody in */
  fail_unless (run_foreign_client (0666, "allowed-gids", "<12345>", &report,
          bytes, NULL, &nick));
  assert_refused (&report, bytes, msg, nick);

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* allowed-uids and allowed-gids let another uid in: it gets the ANNOUNCE,
 * and still no descriptor before it accepts */
GST_START_TEST (test_foreign_uid_allowed)
{
  static const gchar *const allow[][2] = {
    {"allowed-uids", "<65534>"},
    {"allowed-uids", "<1, 65534, 7>"},
    {"allowed-gids", "<65534>"},
  };
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareHeader hdr;
  const gchar *nick = NULL;
  UidReport report;
  guint i;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_allowed: needs root to run a client "
        "as uid %d\n", FOREIGN_UID);
    goto done;
  }
  fail_unless (chmod (tmpdir, 0755) == 0);
  for (i = 0; i < G_N_ELEMENTS (allow); i++) {
    if (!run_foreign_client (0666, allow[i][0], allow[i][1], &report, bytes,
            NULL, &nick)) {
      g_print ("SKIP test_foreign_uid_allowed: cannot act as uid %d here "
          "(stage %d)\n", FOREIGN_UID, report.stage);
      goto done;
    }
    fail_unless_equals_int (report.connect_errno, 0);
    fail_unless_equals_int (report.n_fds, 0);
    /* it let the handshake time out and left: not a refusal */
    fail_unless_equals_string (nick, "hangup");
    fail_unless_equals_int (gpushare_header_parse (bytes->data, bytes->len,
            &hdr), GPUSHARE_PARSE_OK);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ANNOUNCE);
    fail_unless_equals_int (gpushare_msg_parse (&hdr,
            bytes->data + GPUSHARE_HEADER_SIZE, hdr.payload_len, msg),
        GPUSHARE_PARSE_OK);
  }

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;


/* ------------------------------------------------------------------------ */
/* 8. What may be at the socket path */

static void
assert_sink_refuses (const gchar * path)
{
  GstElement *sink;
  GstElement *p = producer_new (path, &sink);

  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  assert_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ_WRITE);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

/* Several producers for several tenants: each its own socket and its own
 * allocation (no slot in common: the memfds a consumer of one gets are
 * none of the other's), and one producer going away leaves the other's
 * consumers streaming. */
GST_START_TEST (test_tenants)
{
  gchar *path[2] = { socket_path ("tenant-a.sock"),
    socket_path ("tenant-b.sock")
  };
  GstElement *producer[2], *sink[2];
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GArray *seen[2];
  gint fds[GPUSHARE_MAX_FDS];
  Consumer *c[2];
  guint k, i, j, n_fds;

  for (k = 0; k < 2; k++) {
    producer[k] = producer_new (path[k], &sink[k]);
    producer_start (producer[k], sink[k]);
  }
  /* what a consumer of each tenant is given: the slots' memfds */
  for (k = 0; k < 2; k++) {
    GpuShareAnnounce announce;
    RawPeer raw;

    seen[k] = g_array_new (FALSE, FALSE, sizeof (guint64));
    raw_init (&raw, raw_connect (path[k]));
    raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
    announce = msg->u.announce;
    make_accept (msg, announce.instance);
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    n_fds = 0;
    raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
    fail_unless_equals_int (n_fds, announce.layout.n_slots);
    for (i = 0; i < n_fds; i++) {
      struct stat st;
      guint64 id;

      fail_unless (fstat (fds[i], &st) == 0);
      id = ((guint64) st.st_dev << 40) ^ (guint64) st.st_ino;
      g_array_append_val (seen[k], id);
    }
    gpushare_close_fds (fds, n_fds);
    raw_clear (&raw);
  }
  for (i = 0; i < seen[0]->len; i++)
    for (j = 0; j < seen[1]->len; j++)
      fail_if (g_array_index (seen[0], guint64, i) ==
          g_array_index (seen[1], guint64, j), "tenants share slot memory");

  /* each tenant's consumer streams; one producer stops, the other's
   * consumer streams on */
  for (k = 0; k < 2; k++) {
    c[k] = consumer_new (path[k], FALSE);
    consumer_start (c[k]);
    fail_unless (consumer_wait (c[k], 3), "tenant %u's consumer gets "
        "nothing", k);
  }
  fail_unless_equals_int (gst_element_set_state (producer[1],
          GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  assert_consumer_alive (c[0]);
  assert_no_error (producer[0]);

  for (k = 0; k < 2; k++) {
    consumer_free (c[k]);
    fail_unless_equals_int (gst_element_set_state (producer[k],
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (producer[k]);
    g_array_unref (seen[k]);
    g_free (path[k]);
  }
  g_free (msg);
}

GST_END_TEST;

/* Slots a consumer cannot write.  Guards the bug where consumers got
 * writable memfds (O_RDWR, no write seal): one admitted through
 * allowed-uids scribbled over the frames another consumer received, and
 * kept its writable mapping after its GOODBYE. */

#define N_RO_FRAMES 60

/* a pattern that is the same in every frame (SMPTE bars carry noise) */
#define RO_PATTERN "checkers-4"

/* The checksum of every frame of RO_PATTERN, from a pipeline of its own:
 * not from the producer's slots, which are what is under test. */
static gchar *
pattern_checksum (void)
{
  GstElement *p = launch ("videotestsrc num-buffers=1 pattern=" RO_PATTERN
      " ! " LIVE_CAPS_STR " ! appsink name=out");
  GstSample *sample;
  GstMapInfo map;
  gchar *sum;

  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (child (p, "out")),
      TIMEOUT_MS * GST_MSECOND);
  fail_unless (sample != NULL);
  fail_unless (gst_buffer_map (gst_sample_get_buffer (sample), &map,
          GST_MAP_READ));
  fail_unless (map.size >= FRAME_SIZE);
  sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data,
      FRAME_SIZE);
  gst_buffer_unmap (gst_sample_get_buffer (sample), &map);
  gst_sample_unref (sample);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (p);
  return sum;
}

/* Every way the holder of a slot fd might write the slot.  Each one that
 * works is named in how; the writable mappings it got go to maps. */
static void
try_to_write_slot (gint fd, gsize size, guint slot, GString * how,
    GPtrArray * maps)
{
  static const guint8 junk[16] = { 0x5a, 0x5a, 0x5a, 0x5a, };
  gchar *proc = g_strdup_printf ("/proc/self/fd/%d", fd);
  gpointer p;
  gint rw;

  if (pwrite (fd, junk, sizeof (junk), 0) >= 0)
    g_string_append_printf (how, " slot %u: pwrite;", slot);
  p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) {
    g_string_append_printf (how, " slot %u: a writable shared map;", slot);
    g_ptr_array_add (maps, p);
  }
  /* reading is what a consumer is for */
  p = mmap (NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  fail_if (p == MAP_FAILED, "slot %u cannot be mapped for reading: %s",
      slot, g_strerror (errno));
  if (mprotect (p, size, PROT_READ | PROT_WRITE) == 0) {
    g_string_append_printf (how, " slot %u: mprotect of a read-only map;",
        slot);
    g_ptr_array_add (maps, p);
  } else {
    munmap (p, size);
  }
  if (ftruncate (fd, 0) == 0 || ftruncate (fd, size * 2) == 0)
    g_string_append_printf (how, " slot %u: ftruncate;", slot);

  /* the file may be opened again for writing through /proc: whatever the
   * fd's own mode, the memory itself must refuse writers */
  rw = open (proc, O_RDWR | O_CLOEXEC);
  if (rw >= 0) {
    if (pwrite (rw, junk, sizeof (junk), 0) >= 0)
      g_string_append_printf (how, " slot %u: pwrite after an O_RDWR "
          "reopen;", slot);
    p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
    if (p != MAP_FAILED) {
      g_string_append_printf (how, " slot %u: a writable shared map after "
          "an O_RDWR reopen;", slot);
      g_ptr_array_add (maps, p);
    }
    if (fallocate (rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
            size) == 0)
      g_string_append_printf (how, " slot %u: a hole punched after an "
          "O_RDWR reopen;", slot);
    if (ftruncate (rw, 0) == 0)
      g_string_append_printf (how, " slot %u: ftruncate after an O_RDWR "
          "reopen;", slot);
    close (rw);
  }
  g_free (proc);
}

GST_START_TEST (test_slots_read_only)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GPtrArray *maps = g_ptr_array_new ();
  GString *how = g_string_new (NULL);
  gint fds[GPUSHARE_MAX_FDS];
  gchar *want = pattern_checksum ();
  GValue item = G_VALUE_INIT;
  GstIterator *it;
  guint n_fds = 0, n_bad = 0, i, k;
  guint64 rendered;
  gsize slot_size;
  Consumer *c;
  RawPeer raw;
  Scene s;

  scene_start (&s, FALSE);
  it = gst_bin_iterate_sources (GST_BIN (s.producer));
  fail_unless_equals_int (gst_iterator_next (it, &item), GST_ITERATOR_OK);
  gst_util_set_object_arg (g_value_get_object (&item), "pattern", RO_PATTERN);
  g_value_unset (&item);
  gst_iterator_free (it);
  /* frames made before the change are out of the way once a few more
   * were rendered: a consumer gets only frames rendered after it joined */
  rendered = stat_u64 (s.sink, "frames-rendered");
  fail_unless (wait_stat_u64_at_least (s.sink, "frames-rendered",
          rendered + 3) >= rendered + 3);
  /* a reader that keeps each frame a while, as a slow viewer does */
  c = consumer_new (s.path, TRUE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 1), "the consumer gets nothing");

  /* a consumer that takes the slots and tries to write them */
  scene_raw_client (&s, &raw, announce);
  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  fail_unless_equals_int (msg->u.slots.mem_type, GPUSHARE_MEM_SYSTEM);
  fail_unless_equals_int (n_fds, announce->layout.n_slots);
  slot_size = msg->u.slots.slot_size;
  for (i = 0; i < n_fds; i++)
    try_to_write_slot (fds[i], slot_size, i, how, maps);

  /* while anything writable is scribbled on, the reader beside it must
   * get exactly what the producer wrote */
  for (i = 0; i < N_RO_FRAMES; i++) {
    GstBuffer *buf;
    GstMapInfo map;
    gchar *sum;

    buf = g_async_queue_timeout_pop (c->buffers, TIMEOUT_MS * 1000);
    fail_unless (buf != NULL, "frame %u never arrived", i);
    /* the reader holds this frame: nobody may change it now */
    for (k = 0; k < maps->len; k++)
      memset (g_ptr_array_index (maps, k), 0x5a, slot_size);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    fail_unless (map.size >= FRAME_SIZE);
    sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data,
        FRAME_SIZE);
    if (!g_str_equal (sum, want))
      n_bad++;
    g_free (sum);
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  for (k = 0; k < maps->len; k++)
    munmap (g_ptr_array_index (maps, k), slot_size);
  gpushare_close_fds (fds, n_fds);
  raw_clear (&raw);

  fail_unless (how->len == 0 && n_bad == 0, "a consumer could write the "
      "slots:%s and %u of %u frames another consumer got differ from what "
      "the producer wrote", how->str, n_bad, N_RO_FRAMES);
  assert_no_error (c->pipeline);
  assert_no_error (s.producer);

  consumer_free (c);
  scene_stop (&s);
  g_free (want);
  g_ptr_array_unref (maps);
  g_string_free (how, TRUE);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

GST_START_TEST (test_path_symlink)
{
  gchar *link = socket_path ("link.sock");
  gchar *nowhere = socket_path ("nowhere.sock");
  gchar *file = socket_path ("precious");
  gchar *contents = NULL;
  struct stat st;

  /* a dangling link: binding through it would create its target */
  fail_unless (symlink (nowhere, link) == 0);
  assert_sink_refuses (link);
  fail_if (g_file_test (nowhere, G_FILE_TEST_EXISTS),
      "the sink created a socket through a symlink");
  fail_unless (lstat (link, &st) == 0 && S_ISLNK (st.st_mode));
  unlink (link);

  /* a link to a file: neither is touched */
  fail_unless (g_file_set_contents (file, "precious", -1, NULL));
  fail_unless (symlink (file, link) == 0);
  assert_sink_refuses (link);
  fail_unless (lstat (link, &st) == 0 && S_ISLNK (st.st_mode));
  fail_unless (g_file_get_contents (file, &contents, NULL, NULL));
  fail_unless_equals_string (contents, "precious");

  g_free (contents);
  g_free (file);
  g_free (nowhere);
  g_free (link);
}

GST_END_TEST;

GST_START_TEST (test_path_regular_file)
{
  gchar *path = socket_path ("file.sock");
  gchar *contents = NULL;

  fail_unless (g_file_set_contents (path, "precious", -1, NULL));
  assert_sink_refuses (path);
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
  fail_unless_equals_string (contents, "precious");
  g_free (contents);
  g_free (path);
}

GST_END_TEST;

static gchar *
path_of_length (gsize len)
{
  GString *s = g_string_new (tmpdir);

  g_string_append_c (s, '/');
  fail_unless (s->len < len, "the temporary directory is too deep");
  while (s->len < len)
    g_string_append_c (s, 'p');
  return g_string_free (s, FALSE);
}

GST_START_TEST (test_path_too_long)
{
  /* sun_path holds 108 bytes with the NUL: 107 fit, 108 do not */
  gchar *too_long = path_of_length (108);
  gchar *longest = path_of_length (107);
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GstElement *producer, *sink;
  RawPeer raw;

  assert_sink_refuses (too_long);
  /* and no cut-off name was bound instead */
  fail_if (g_file_test (longest, G_FILE_TEST_EXISTS));

  producer = producer_new (longest, &sink);
  producer_start (producer, sink);
  raw_init (&raw, raw_connect (longest));
  {
    GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

    raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
    g_free (msg);
  }
  raw_clear (&raw);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (announce);
  g_free (longest);
  g_free (too_long);
}

GST_END_TEST;

GST_START_TEST (test_path_stale_socket)
{
  gchar *path = socket_path ("stale.sock");
  struct sockaddr_un addr;
  GstElement *producer, *sink;
  Consumer *c;
  struct stat st;
  gint fd;

  /* what a producer that crashed leaves behind */
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  fail_unless (fd >= 0);
  fail_unless (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (fd, 1) == 0);
  close (fd);
  fail_unless (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode));

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 3), "no frames through a replaced socket");
  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_path_in_use)
{
  Consumer *other;
  struct stat st;
  Scene s;

  scene_start (&s, TRUE);
  /* a second producer on a path where a live one listens is refused */
  assert_sink_refuses (s.path);
  /* and left the first one's socket in place */
  fail_unless (lstat (s.path, &st) == 0 && S_ISSOCK (st.st_mode));
  assert_consumer_alive (s.consumer);
  other = consumer_new (s.path, FALSE);
  consumer_start (other);
  fail_unless (consumer_wait (other, 3),
      "the first producer no longer takes consumers");
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_no_error (s.producer);
  consumer_free (other);
  scene_stop (&s);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 9. A hostile producer: the consumer errors out, cleanly */

typedef enum
{
  HP_GARBAGE,
  HP_HEADER_VERSION,
  HP_SCHEMA_VERSION,
  HP_SLOTS_PIPE,
  HP_SLOTS_UNSEALED,
  HP_SLOTS_WRONG_SIZE,
  HP_SLOTS_WRITABLE,
  HP_FRAME_STALE_GENERATION,
  HP_FRAME_BAD_SLOT,
  N_HP
} HostileProducer;

#define HP_N_SLOTS 2
#define HP_SLOT_SIZE 8192

static const struct
{
  const gchar *name;
  GQuark (*domain) (void);
  gint code;
} hp_cases[N_HP] = {
  {"garbage bytes", gst_stream_error_quark, GST_STREAM_ERROR_DECODE},
  {"an ANNOUNCE with a header of major version 2", gst_core_error_quark,
      GST_CORE_ERROR_NEGOTIATION},
  {"an ANNOUNCE of schema major version 2", gst_core_error_quark,
      GST_CORE_ERROR_NEGOTIATION},
  {"SLOTS that are pipes", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS that are unsealed memfds", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS of the wrong size", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS that are memfds without a write seal", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"a FRAME with a stale generation", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
  {"a FRAME for a slot out of range", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
};

static gint
raw_listen (const gchar * path)
{
  struct sockaddr_un addr;
  gint fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  fail_unless (fd >= 0);
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fail_unless (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (fd, 4) == 0);
  return fd;
}

static gint
raw_accept (gint listen_fd)
{
  struct pollfd pfd = {.fd = listen_fd,.events = POLLIN };
  gint fd;

  fail_unless (poll (&pfd, 1, TIMEOUT_MS) == 1, "the consumer never "
      "connected");
  fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
  fail_unless (fd >= 0);
  return fd;
}

/* a raw producer's side of the handshake, up to the consumer's ACCEPT */
static void
raw_announce (RawPeer * p, GpuShareMsg * msg)
{
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  fail_unless (raw_send_msg (p, msg, NULL, 0));
  raw_expect (p, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
  fail_unless_equals_int (msg->u.accept.mem_type, GPUSHARE_MEM_SYSTEM);
  fail_unless_equals_uint64 (msg->u.accept.instance, 0x1234);
}

static void
raw_send_slots (RawPeer * p, GpuShareMsg * msg, gint * fds, guint64 epoch)
{
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = epoch;
  msg->u.slots.slot_size = HP_SLOT_SIZE;
  msg->u.slots.n_slots = HP_N_SLOTS;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  fail_unless (raw_send_msg (p, msg, fds, HP_N_SLOTS));
  gpushare_close_fds (fds, HP_N_SLOTS);
}

static GstElement *
hostile_consumer_start (const gchar * path, gint * listen_fd, RawPeer * raw)
{
  GstElement *p;

  *listen_fd = raw_listen (path);
  /* no last-sample: a consumed frame goes back to the producer at once */
  p = launch ("gpusharesrc name=src connection-timeout=%d ! fakesink "
      "sync=false enable-last-sample=false", TIMEOUT_MS);
  g_object_set (child (p, "src"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  raw_init (raw, raw_accept (*listen_fd));
  return p;
}

/* undoes hostile_consumer_start (): the consumer stops cleanly */
static void
hostile_consumer_stop (GstElement * pipeline, gint listen_fd, RawPeer * raw,
    const gchar * path)
{
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
  raw_clear (raw);
  close (listen_fd);
  unlink (path);
}

GST_START_TEST (test_hostile_producer)
{
  HostileProducer which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  gint fds[HP_N_SLOTS], pipe_fds[2] = { -1, -1 };
  guint before_slots = 0, i;
  GstElement *pipeline;
  GByteArray *b;
  gint listen_fd;
  RawPeer raw;

  GST_INFO ("producer sends %s", hp_cases[which].name);
  pipeline = hostile_consumer_start (path, &listen_fd, &raw);

  switch (which) {
    case HP_GARBAGE:
      raw_send_bytes (&raw, random_bytes (256), NULL, 0);
      break;
    case HP_HEADER_VERSION:
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      b = build (msg, 0);
      patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR + 1);
      raw_send_bytes (&raw, b, NULL, 0);
      break;
    case HP_SCHEMA_VERSION:
      /* the payload's own major, at offset 0 of the ANNOUNCE payload */
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      b = build (msg, 0);
      patch16 (b, GPUSHARE_HEADER_SIZE, GPUSHARE_VERSION_MAJOR + 1);
      raw_send_bytes (&raw, b, NULL, 0);
      break;
    case HP_SLOTS_PIPE:
    case HP_SLOTS_UNSEALED:
    case HP_SLOTS_WRONG_SIZE:
    case HP_SLOTS_WRITABLE:
      raw_announce (&raw, msg);
      before_slots = count_fds ();
      for (i = 0; i < HP_N_SLOTS; i++) {
        if (which == HP_SLOTS_PIPE) {
          if (i == 0)
            fail_unless (pipe2 (pipe_fds, O_CLOEXEC) == 0);
          fds[i] = fcntl (pipe_fds[1], F_DUPFD_CLOEXEC, 3);
        } else if (which == HP_SLOTS_UNSEALED) {
          fds[i] = make_memfd (HP_SLOT_SIZE, FALSE);
        } else if (which == HP_SLOTS_WRITABLE) {
          /* no shrinking, no growing, but writable by every holder: what
           * producers once sent */
          fds[i] = make_memfd (HP_SLOT_SIZE, FALSE);
          fail_unless (fcntl (fds[i], F_ADD_SEALS, F_SEAL_SHRINK |
                  F_SEAL_GROW | F_SEAL_SEAL) == 0);
        } else {
          fds[i] = make_memfd (HP_SLOT_SIZE / 2, TRUE);
        }
      }
      if (pipe_fds[1] >= 0) {
        close (pipe_fds[1]);
        before_slots++;         /* the read end we keep */
      }
      raw_send_slots (&raw, msg, fds, 1);
      if (which == HP_SLOTS_WRITABLE) {
        /* the consumer says why before it gives up, and maps nothing */
        fail_unless_equals_int (raw_recv (&raw, msg, NULL, NULL, TIMEOUT_MS),
            RAW_MSG);
        fail_unless (msg->type == GPUSHARE_MSG_ERROR, "the consumer took "
            "writable slots: it answered %s",
            gpushare_msg_type_to_string (msg->type));
        fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_RESOURCE);
      }
      break;
    case HP_FRAME_STALE_GENERATION:
    case HP_FRAME_BAD_SLOT:
      raw_announce (&raw, msg);
      before_slots = count_fds ();
      for (i = 0; i < HP_N_SLOTS; i++)
        fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
      raw_send_slots (&raw, msg, fds, 1);
      raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
      fail_unless_equals_uint64 (msg->u.mapped.epoch, 1);
      /* one good frame, and its release, so the next one is judged on
       * its own fault */
      make_frame (msg, 1, 0, 1, 1);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
      fail_unless_equals_int (msg->u.release.slot, 0);
      fail_unless_equals_int (msg->u.release.generation, 1);
      if (which == HP_FRAME_STALE_GENERATION)
        make_frame (msg, 1, 0, 1, 2);
      else
        make_frame (msg, 1, HP_N_SLOTS, 1, 2);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      /* the consumer says why before it gives up */
      raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
      fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_PROTOCOL);
      break;
    default:
      g_assert_not_reached ();
  }

  assert_error (pipeline, hp_cases[which].domain (), hp_cases[which].code);
  if (pipe_fds[0] >= 0) {
    fail_unless (wait_pipe_hangup (pipe_fds[0], TIMEOUT_MS),
        "the consumer kept a descriptor it refused");
    close (pipe_fds[0]);
    before_slots--;
  }
  /* every received fd is closed already, mapped or refused */
  if (before_slots)
    fail_unless_equals_int (wait_fd_count (before_slots, TIMEOUT_MS),
        before_slots);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* The consumer side of the same promise: a producer that speaks another
 * major version is told so with ERROR VERSION. */
GST_START_TEST (test_src_answers_version)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  GstElement *pipeline;
  GByteArray *b;
  GArray *codes;
  gint listen_fd;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  b = build (msg, 0);
  patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR + 1);
  raw_send_bytes (&raw, b, NULL, 0);
  assert_error (pipeline, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  codes = raw_drain (&raw);
  fail_unless (codes->len == 1,
      "the producer got no ERROR VERSION, only the hang-up");
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_VERSION);
  g_array_unref (codes);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  raw_clear (&raw);
  close (listen_fd);
  unlink (path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* Heartbeat, consumer side: a producer that sends ANNOUNCE, reads the
 * ACCEPT and then hangs (socket open, nothing sent) is lost after 3
 * heartbeat intervals: producer-lost=error posts an ERROR, eos ends the
 * stream; the consumer PINGed it meanwhile and says why it leaves. */
GST_START_TEST (test_heartbeat_silent_producer)
{
  gboolean eos = (__i__ == 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("silent.sock");
  GstElement *pipeline;
  GstMessage *m;
  GArray *codes;
  gint64 t0, elapsed;
  guint n_pings;
  gint listen_fd;
  RawPeer raw;

  listen_fd = raw_listen (path);
  pipeline = launch ("gpusharesrc name=src connection-timeout=%d "
      "heartbeat-interval=100 producer-lost=%s ! fakesink sync=false",
      TIMEOUT_MS, eos ? "eos" : "error");
  g_object_set (child (pipeline, "src"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  raw_init (&raw, raw_accept (listen_fd));
  raw_announce (&raw, msg);
  t0 = g_get_monotonic_time ();

  m = pop_message (pipeline, GST_MESSAGE_ERROR | GST_MESSAGE_EOS,
      TIMEOUT_MS);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless (m != NULL, "the consumer never noticed the silence");
  if (eos) {
    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_EOS);
  } else {
    GError *error = NULL;

    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_ERROR);
    gst_message_parse_error (m, &error, NULL);
    fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_READ), "%s", error->message);
    g_error_free (error);
  }
  gst_message_unref (m);
  fail_unless (elapsed >= 250 && elapsed < 1500, "lost after %"
      G_GINT64_FORMAT " ms, not after about 300", elapsed);

  codes = raw_drain_pings (&raw, &n_pings);
  fail_unless (n_pings >= 1, "the consumer sent no PING on an idle link");
  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TIMEOUT);
  g_array_unref (codes);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 10. Start and stop, again and again */

#define N_CYCLES 200

/* NULL <-> PLAYING cycles of the producer with consumers joining and
 * leaving: one consumer every cycle, a second one every other cycle, the
 * two leaving in either order; no error, a clean goodbye each, no fd
 * left.  50 cycles under valgrind, which is some 20 times slower. */
GST_START_TEST (test_cycles)
{
  gchar *path = socket_path ("cycles.sock");
  GstElement *producer, *sink;
  guint after_first = 0, connected = 0, removed = 0, n_cycles, i, k;
  ClientLog log;
  Consumer *c[2];

  n_cycles = g_getenv ("GPUSHARE_UNDER_VALGRIND") ? 50 : N_CYCLES;
  producer = producer_new (path, &sink);
  client_log_init (&log, sink);
  c[0] = consumer_new (path, FALSE);
  c[1] = consumer_new (path, FALSE);
  for (i = 0; i < n_cycles; i++) {
    guint n = i % 2 ? 2 : 1;
    gint frames[2];

    producer_start (producer, sink);
    for (k = 0; k < n; k++) {
      frames[k] = g_atomic_int_get (&c[k]->frames);
      consumer_start (c[k]);
    }
    for (k = 0; k < n; k++)
      fail_unless (consumer_wait (c[k], frames[k] + 1), "cycle %u: no frame "
          "for consumer %u", i, k);
    connected += n;
    fail_unless (client_log_wait (&log, FALSE, connected));
    /* the consumers leave first, in either order: a clean goodbye each,
     * no error anywhere */
    for (k = 0; k < n; k++) {
      Consumer *leaving = c[i % 4 == 3 ? n - 1 - k : k];

      fail_unless_equals_int (gst_element_set_state (leaving->pipeline,
              GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
      removed++;
      fail_unless (client_log_wait (&log, TRUE, removed), "cycle %u: the "
          "consumer's leaving went unseen", i);
      fail_unless_equals_string (client_log_removed_nick (&log, removed - 1),
          "goodbye");
    }
    fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
    assert_no_error (producer);
    for (k = 0; k < 2; k++)
      assert_no_error (c[k]->pipeline);
    fail_if (g_file_test (path, G_FILE_TEST_EXISTS));
    /* from the second cycle on, both consumers have run once */
    if (i == 1)
      after_first = count_fds_settled ();
    else if (i > 1)
      fail_unless_equals_int (wait_fd_count (after_first, TIMEOUT_MS),
          after_first);
  }
  fail_unless_equals_int (client_log_n_removed (&log), removed);
  consumer_free (c[0]);
  consumer_free (c[1]);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* kB of resident memory of this process; 0 under valgrind or
 * AddressSanitizer, which keep freed memory for themselves and so grow
 * whatever the program does */
static guint
rss_kb (void)
{
  gchar *status = NULL, *line;
  guint kb = 0;

#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer keeps freed memory in quarantine, as valgrind does */
  return 0;
#endif
  if (g_getenv ("GPUSHARE_UNDER_VALGRIND"))
    return 0;
  fail_unless (g_file_get_contents ("/proc/self/status", &status, NULL,
          NULL));
  line = strstr (status, "VmRSS:");
  fail_unless (line != NULL);
  kb = strtoul (line + 6, NULL, 10);
  g_free (status);
  return kb;
}

/* A listener that takes a connection into its backlog and closes without
 * a word (a producer on its way out: its listening socket outlives its
 * connections for a moment) is as good as nobody listening: the consumer
 * tries again within connection-timeout, streams from the producer that
 * comes next, and counts no reconnect. */
GST_START_TEST (test_silent_hangup_before_announce)
{
  gchar *path = socket_path ("silent.sock");
  gint lfd = raw_listen (path);
  GstElement *producer, *sink;
  struct pollfd pfd = {.fd = lfd,.events = POLLIN };
  Consumer *c;

  c = consumer_new (path, FALSE);
  consumer_start (c);
  /* twice: once accepted and closed, once left in the backlog */
  close (raw_accept (lfd));
  /* the second attempt waits in the backlog when the listener closes */
  fail_unless (poll (&pfd, 1, TIMEOUT_MS) == 1, "the consumer did not try "
      "again after the first hang-up");
  close (lfd);
  unlink (path);

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  fail_unless (consumer_wait (c, 3), "no frame from the next producer");
  fail_unless_equals_int (stat_uint (c->src, "reconnects"), 0);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* A refusal ends the stream whatever producer-lost says: a consumer told
 * TOO_MANY_CLIENTS posts that error and does not connect again (the
 * producer's hang-up after its ERROR is no lost producer). */
GST_START_TEST (test_refused_no_reconnect)
{
  gchar *path = socket_path ("refused.sock");
  GstElement *producer, *sink;
  GstMessage *msg;
  GError *err = NULL;
  Consumer *c_in, *c_out;

  producer = producer_new (path, &sink);
  g_object_set (sink, "max-clients", 1, NULL);
  producer_start (producer, sink);
  c_in = consumer_new (path, FALSE);
  consumer_start (c_in);
  fail_unless (consumer_wait (c_in, 2));

  c_out = consumer_new (path, FALSE);
  gst_util_set_object_arg (G_OBJECT (c_out->src), "producer-lost",
      "reconnect");
  consumer_start (c_out);
  msg = pop_message (c_out->pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL, "the refused consumer posted no error");
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_BUSY), "%s", err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  /* give a reconnect loop the time to show */
  g_usleep (300 * 1000);
  fail_unless_equals_int (stat_uint (c_out->src, "reconnects"), 0);
  fail_unless_equals_int (num_clients (sink), 1);
  assert_consumer_alive (c_in);
  consumer_free (c_out);
  consumer_free (c_in);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* A paused consumer under a leaky producer keeps the frames it was sent
 * (its share of the ring): it holds nobody up, so it keeps its lease, and
 * streams on when it plays again. */
GST_START_TEST (test_paused_consumer_keeps_lease)
{
  gchar *path = socket_path ("paused.sock");
  GstElement *producer, *sink;
  ClientLog log;
  Consumer *c;
  gint frames;

  producer = producer_new (path, &sink);
  g_object_set (sink, "lease-timeout", 200, NULL);
  client_log_init (&log, sink);
  producer_start (producer, sink);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 3));
  fail_if (gst_element_set_state (c->pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE);
  /* five leases long */
  g_usleep (1000 * 1000);
  fail_unless (stat_uint (c->src, "reconnects") == 0);
  fail_unless_equals_int (client_log_n_removed (&log), 0);
  frames = g_atomic_int_get (&c->frames);
  consumer_start (c);
  fail_unless (consumer_wait (c, frames + 3), "no frame after the pause");
  fail_unless_equals_int (client_log_n_removed (&log), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "slots-quarantined"), 0);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* lets the first buffer through, drops the others */
static GstPadProbeReturn
pass_first_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  return g_atomic_int_add ((gint *) user_data, 1) == 0 ? GST_PAD_PROBE_OK :
      GST_PAD_PROBE_DROP;
}

/* A buffer the application keeps after its gpusharesrc stopped (an appsink
 * sample kept once the pipeline is in NULL) still reads its slot in place.
 * Guards the bug where the consumer's GOODBYE gave such a slot back and the
 * producer wrote it again under the application (the sample changed in 20
 * of 20 looks over 2 s): the GOODBYE now says which slots live buffers
 * still read, and the producer quarantines exactly those.  Case 1: a
 * consumer that keeps nothing leaves at no cost (no quarantine, no new
 * ring), though frames are on their way to it and in its queue as it
 * leaves. */
GST_START_TEST (test_held_after_src_stops)
{
  gboolean keep = __i__ == 0;
  gchar *path = socket_path ("held.sock");
  GstElement *producer, *sink;
  GstSample *sample = NULL;
  GstMapInfo map;
  GBytes *copy = NULL;
  Consumer *keeper, *next;
  ClientLog log;
  guint i;

  /* live and leaky: the producer writes on whatever its consumers do;
   * snow: a slot written again changes its bytes */
  producer = launch ("videotestsrc is-live=true pattern=snow ! "
      LIVE_CAPS_STR " ! gpusharesink name=sink");
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, "ring-size", 4, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "leaky");
  client_log_init (&log, sink);
  producer_start (producer, sink);

  /* system memory: only a consumer that reads in place holds a slot for as
   * long as it keeps the buffer (a GPU consumer copies every frame out) */
  if (keep) {
    GstElement *consumer;
    GstBuffer *buf;
    GstPad *pad;
    gint n = 0;

    /* the first frame reaches appsink, the others are dropped on the way:
     * the kept sample is the only buffer left as the src stops */
    consumer = launch ("gpusharesrc name=src transport=system "
        "connection-timeout=%d ! appsink name=out sync=false", TIMEOUT_MS);
    g_object_set (child (consumer, "src"), "socket-path", path, NULL);
    pad = gst_element_get_static_pad (child (consumer, "out"), "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, pass_first_buffer, &n,
        NULL);
    gst_object_unref (pad);
    fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (child (consumer,
                "out")), TIMEOUT_MS * GST_MSECOND);
    fail_unless (sample != NULL, "the consumer got no frame");
    buf = gst_sample_get_buffer (sample);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    copy = g_bytes_new (map.data, map.size);
    gst_buffer_unmap (buf, &map);
    /* frames flow on into the src (and are dropped) as it stops */
    while (g_atomic_int_get (&n) < 10)
      g_usleep (1000);
    fail_unless_equals_int (gst_element_set_state (consumer,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (consumer);
  } else {
    Consumer *c = consumer_new (path, FALSE);

    gst_util_set_object_arg (G_OBJECT (c->src), "transport", "system");
    consumer_start (c);
    fail_unless (consumer_wait (c, 10), "the consumer gets nothing");
    consumer_free (c);
  }
  fail_unless (client_log_wait (&log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&log, 0), "goodbye");

  /* a consumer that keeps its frames: the producer writes every slot of
   * its ring of 4, any slot given back included */
  keeper = consumer_new (path, TRUE);
  gst_util_set_object_arg (G_OBJECT (keeper->src), "transport", "system");
  consumer_start (keeper);
  fail_unless (consumer_wait (keeper, 3), "the keeper gets nothing");
  /* 20 looks over 2 s while the producer writes on */
  for (i = 0; i < 20 && keep; i++) {
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GBytes *now;

    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    now = g_bytes_new (map.data, map.size);
    gst_buffer_unmap (buf, &map);
    fail_unless (g_bytes_equal (now, copy), "the kept sample changed after "
        "its src stopped (look %u)", i);
    g_bytes_unref (now);
    g_usleep (100 * 1000);
  }
  if (!keep)
    g_usleep (500 * 1000);
  fail_unless (stat_u64 (sink, "frames-rendered") > 100);
  /* exactly the kept sample's slot: not the frames that were on their way
   * to the consumer as it left, nor those it had not pushed yet */
  fail_unless_equals_uint64 (stat_u64 (sink, "slots-quarantined"),
      keep ? 1 : 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "rings-replaced"), keep ? 1 : 0);

  /* the producer streams on to the next consumer */
  next = consumer_new (path, FALSE);
  consumer_start (next);
  fail_unless (consumer_wait (next, 20), "the next consumer gets nothing");
  assert_no_error (next->pipeline);
  assert_no_error (producer);
  if (keep) {
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GBytes *now;

    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    now = g_bytes_new (map.data, map.size);
    gst_buffer_unmap (buf, &map);
    fail_unless (g_bytes_equal (now, copy), "the kept sample changed");
    g_bytes_unref (now);
    g_bytes_unref (copy);
    gst_sample_unref (sample);
  }

  consumer_free (next);
  consumer_free (keeper);
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

#define SMALL_CAPS_STR \
  "video/x-raw,format=I420,width=64,height=48,framerate=30/1"
#define SMALL_FRAME_SIZE (64 * 48 * 3 / 2)
#define N_FILE_FRAMES 100

/* gpusharesrc ! filesink with small frames from a non-live producer, every
 * setting at its default.  filesink keeps its buffers until it has 64 KiB
 * to write (14 frames of 4608 bytes, more than the ring of 8): it once held
 * every slot, the producer waited for one, and after 5 s the lease dropped
 * the consumer as if it were stuck.  The src now wraps at most half the
 * ring in place and copies the frames past that: every frame reaches the
 * file, byte for byte as a pipeline without gpushare writes it. */
GST_START_TEST (test_filesink_small_frames)
{
  gchar *path = socket_path ("file.sock");
  gchar *out = g_build_filename (tmpdir, "out.yuv", NULL);
  gchar *ref = g_build_filename (tmpdir, "ref.yuv", NULL);
  GstElement *direct, *producer, *sink, *consumer, *src;
  gchar *got = NULL, *want = NULL;
  gsize got_len = 0, want_len = 0;
  GstMessage *msg;

  /* what the file must hold: ball moves, so every frame differs */
  direct = launch ("videotestsrc num-buffers=%d pattern=ball ! "
      SMALL_CAPS_STR " ! filesink location=\"%s\"", N_FILE_FRAMES, ref);
  fail_if (gst_element_set_state (direct, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  msg = pop_message (direct, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  fail_unless_equals_int (gst_element_set_state (direct, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (direct);

  /* the consumer must see every frame: the producer waits for it */
  producer = launch ("videotestsrc num-buffers=%d pattern=ball ! "
      SMALL_CAPS_STR " ! gpusharesink name=sink wait-for-connection=true",
      N_FILE_FRAMES);
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, NULL);
  /* system memory: a GPU consumer copies every frame out anyway */
  consumer = launch ("gpusharesrc name=src transport=system "
      "connection-timeout=%d ! filesink location=\"%s\"", TIMEOUT_MS, out);
  src = child (consumer, "src");
  g_object_set (src, "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);

  /* a lease would expire after 5 s: wait longer than that */
  msg = pop_message (consumer, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      3 * TIMEOUT_MS);
  fail_unless (msg != NULL, "the consumer never reached EOS");
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *error = NULL;
    gchar *debug = NULL;

    gst_message_parse_error (msg, &error, &debug);
    fail ("gpusharesrc ! filesink failed: %s (%s)", error->message,
        debug ? debug : "");
  }
  gst_message_unref (msg);
  /* the frames past the bound were copied, their slots given back */
  fail_unless (stat_u64 (src, "frames-copied") > 0);
  fail_unless (stat_u64 (src, "frames-copied") < N_FILE_FRAMES);
  fail_unless_equals_uint64 (stat_u64 (sink, "slots-quarantined"), 0);
  fail_unless_equals_int (gst_element_set_state (consumer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  msg = pop_message (producer, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);

  fail_unless (g_file_get_contents (out, &got, &got_len, NULL));
  fail_unless (g_file_get_contents (ref, &want, &want_len, NULL));
  fail_unless_equals_int (want_len, N_FILE_FRAMES * SMALL_FRAME_SIZE);
  fail_unless_equals_int (got_len, want_len);
  fail_unless (memcmp (got, want, want_len) == 0,
      "the file differs from what the producer was given");

  g_free (got);
  g_free (want);
  gst_object_unref (consumer);
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (producer);
  g_free (ref);
  g_free (out);
  g_free (path);
}

GST_END_TEST;

/* Buffers of a ring the producer replaced take none of its slots: they do
 * not count against max-in-place in the new ring.  A consumer that keeps
 * every buffer, one at most in place, holds the first frame of each ring in
 * place and copies the others.  Guards a bound counted across rings, which
 * left a consumer that kept a buffer of the old ring with fewer in place
 * in the new one (and a stuck consumer there out of the lease's reach). */
GST_START_TEST (test_in_place_per_ring)
{
  GpuShareAnnounce announce;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0, n_in_place = 0, n = 0;
  GpuShareFrame f;
  GstBuffer *buf;
  RawPeer raw;
  Consumer *c;
  gint frames;
  Scene s;

  scene_start (&s, FALSE);
  c = consumer_new (s.path, TRUE);
  gst_util_set_object_arg (G_OBJECT (c->src), "transport", "system");
  g_object_set (c->src, "max-in-place", 1, NULL);
  consumer_start (c);
  fail_unless (consumer_wait (c, 3), "the consumer gets nothing");

  /* a consumer that breaks the protocol while it holds frames: their slots
   * are quarantined and the ring is replaced */
  scene_raw_client (&s, &raw, &announce);
  make_accept (msg, announce.instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  gpushare_close_fds (fds, n_fds);
  make_simple (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = announce.layout.epoch;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
  f = msg->u.frame;
  make_simple (msg, GPUSHARE_MSG_RELEASE);
  msg->u.release.epoch = f.epoch;
  msg->u.release.slot = f.slot;
  msg->u.release.generation = f.generation + 1;
  msg->u.release.sequence = f.sequence;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");
  fail_unless (wait_stat_u64_at_least (s.sink, "rings-replaced", 1) >= 1);

  /* frames of the new ring */
  frames = g_atomic_int_get (&c->frames);
  fail_unless (consumer_wait (c, frames + 5), "nothing from the new ring");
  fail_unless_equals_uint64 (stat_u64 (s.sink, "rings-replaced"), 1);
  /* in place: the read-only slot itself; a copy is the consumer's own */
  while ((buf = g_async_queue_try_pop (c->buffers))) {
    if (GST_MEMORY_FLAG_IS_SET (gst_buffer_peek_memory (buf, 0),
            GST_MEMORY_FLAG_READONLY))
      n_in_place++;
    n++;
    gst_buffer_unref (buf);
  }
  fail_unless (n >= 8);
  fail_unless_equals_int (n_in_place, 2);
  fail_unless (stat_u64 (c->src, "frames-copied") >= n - 2);
  assert_no_error (c->pipeline);

  raw_clear (&raw);
  consumer_free (c);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* A consumer that really stops reading (its pipeline paused: the src's
 * thread waits in the sink's preroll, and the frames the producer sends
 * queue up in the src) still loses its lease under a lossless producer,
 * however few buffers it wraps in place, and the error it gets says which
 * frame was held how long, and the usual cause. */
GST_START_TEST (test_stopped_reading_loses_lease)
{
  gchar *path = socket_path ("stopped.sock");
  GstElement *producer, *sink;
  GError *error = NULL;
  gchar *debug = NULL;
  ClientLog log;
  GstMessage *msg;
  Consumer *c;

  producer = launch ("videotestsrc ! " CAPS_STR " ! gpusharesink name=sink");
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, "wait-for-connection", TRUE,
      "lease-timeout", 500, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");
  client_log_init (&log, sink);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 3));
  fail_if (gst_element_set_state (c->pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE);

  fail_unless (client_log_wait (&log, TRUE, 1), "the lease never expired");
  fail_unless_equals_string (client_log_removed_nick (&log, 0), "lease");
  fail_unless (stat_u64 (sink, "slots-quarantined") >= 1);

  /* let go, it delivers what it had, then says why it was dropped */
  consumer_start (c);
  msg = pop_message (c->pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL, "the dropped consumer posted no error");
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (debug && strstr (debug, "slot lease expired: frame ")
      && strstr (debug, " was held for ")
      && strstr (debug, "while the producer waited")
      && strstr (debug, "downstream"), "unclear lease error: %s (%s)",
      error->message, debug ? debug : "");
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);

  consumer_free (c);
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

#define N_LONG_CYCLES 1000
#define N_RESTARTS 100

/* A consumer connects to a live producer and leaves, 1000 times; then the
 * producer restarts 100 times under a consumer that reconnects each time.
 * Neither leaves a descriptor, a client place or host memory behind. */
GST_START_TEST (test_long_cycles)
{
  gchar *path = socket_path ("long.sock");
  GstElement *producer, *sink;
  guint fds = 0, rss = 0, i;
  Consumer *c;

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  c = consumer_new (path, FALSE);
  for (i = 0; i < N_LONG_CYCLES; i++) {
    gint frames = g_atomic_int_get (&c->frames);

    consumer_start (c);
    fail_unless (consumer_wait (c, frames + 1), "cycle %u: no frame", i);
    fail_unless_equals_int (gst_element_set_state (c->pipeline,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    if (i == 49) {
      fds = count_fds_settled ();
      rss = rss_kb ();
    }
  }
  fail_unless_equals_int (wait_fd_count (fds, TIMEOUT_MS), fds);
  /* a leak of one small allocation per cycle would show as 950 of them */
  fail_unless (rss_kb () < rss + 2048, "resident memory grew from %u kB to "
      "%u kB over %u cycles", rss, rss_kb (), N_LONG_CYCLES - 50);
  fail_unless_equals_int (num_clients (sink), 0);
  fail_unless (stat_uint (sink, "free-slots") >= 7);
  assert_no_error (producer);
  consumer_free (c);

  /* the producer restarts; the consumer goes on with each new one */
  c = consumer_new (path, FALSE);
  g_object_set (c->src, "producer-lost", 2 /* reconnect */ , NULL);
  consumer_start (c);
  for (i = 0; i < N_RESTARTS; i++) {
    gint frames = g_atomic_int_get (&c->frames);

    fail_unless (consumer_wait (c, frames + 1), "restart %u: no frame", i);
    /* the baseline after half of them, while frames flow, as at the end:
     * on a GPU host the CUDA driver's own descriptors (contexts come and go
     * with the elements here, as no one else holds one) settle only after
     * a number of restarts, and the consumer's context exists only while
     * it is connected; a descriptor lost per restart still shows over the
     * other half */
    if (i == N_RESTARTS / 2) {
      fds = count_fds_settled ();
      rss = rss_kb ();
    }
    fail_unless_equals_int (gst_element_set_state (producer,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    producer_start (producer, sink);
  }
  fail_unless (consumer_wait (c, g_atomic_int_get (&c->frames) + 1));
  fail_unless_equals_uint64 (stat_uint (c->src, "reconnects"), N_RESTARTS);
  fail_unless_equals_int (wait_fd_count (fds, TIMEOUT_MS), fds);
  fail_unless (rss_kb () < rss + 2048, "resident memory grew from %u kB to "
      "%u kB over %u restarts", rss, rss_kb (), N_RESTARTS / 2);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 13. A hostile producer's layouts: checked against the format and the
 * mapped ring before any buffer points into a slot */

typedef enum
{
  HL_STRIDE_SHORT,
  HL_STRIDE_ODD_YUY2,
  HL_UV_STRIDE_SHORT,
  HL_MEMORY_FEATURE,
  HL_CAPS_SLOT_SIZE,
  HL_CAPS_N_SLOTS,
  N_HL
} HostileLayout;

static const struct
{
  const gchar *name;
  const gchar *says;            /* what the ERROR to the producer names */
} hl_cases[N_HL] = {
  /* crashed the consumer's process in videoconvert (SIGSEGV) */
  {"an ARGB64 plane 32767 wide with stride 1 at the end of the slot",
      "plane 0: stride 1 is shorter than a row"},
  {"YUY2 at width 5 with 10-byte rows", "plane 0: stride 10 is shorter"},
  {"NV12 whose chroma rows are one byte short", "plane 1: stride 63"},
  {"caps that name a memory feature", "memory feature"},
  /* was accepted: criticals, empty buffers, slots never released */
  {"a CAPS that keeps the epoch but needs larger slots", "slot-size"},
  {"a CAPS that keeps the epoch but changes the slot count", "n-slots"},
};

GST_START_TEST (test_hostile_layout)
{
  HostileLayout which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  GpuShareLayout *l = &msg->u.announce.layout;
  gint fds[HP_N_SLOTS];
  GstElement *pipeline;
  gint listen_fd;
  RawPeer raw;
  guint i;

  GST_INFO ("producer sends %s", hl_cases[which].name);
  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);

  switch (which) {
    case HL_STRIDE_SHORT:
      /* two rows of 262136 bytes claimed inside one 8 KiB frame */
      make_layout_of (l, "ARGB64", 32767, 2, HP_N_SLOTS, HP_SLOT_SIZE);
      l->frame_size = HP_SLOT_SIZE;
      l->offsets[0] = HP_SLOT_SIZE - 2;
      l->strides[0] = 1;
      break;
    case HL_STRIDE_ODD_YUY2:
      make_layout_of (l, "YUY2", 5, 4, HP_N_SLOTS, HP_SLOT_SIZE);
      l->strides[0] = 10;
      break;
    case HL_UV_STRIDE_SHORT:
      make_layout_of (l, "NV12", 64, 48, HP_N_SLOTS, HP_SLOT_SIZE);
      l->strides[1] = 63;
      break;
    case HL_MEMORY_FEATURE:
      make_layout_of (l, "NV12", 64, 48, HP_N_SLOTS, HP_SLOT_SIZE);
      fail_unless (gpushare_layout_set_caps (l, "video/x-raw(memory:"
              "CUDAMemory), format=NV12, width=64, height=48, "
              "framerate=30/1"));
      break;
    case HL_CAPS_SLOT_SIZE:
    case HL_CAPS_N_SLOTS:
      break;
    default:
      g_assert_not_reached ();
  }
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));

  if (which == HL_CAPS_SLOT_SIZE || which == HL_CAPS_N_SLOTS) {
    raw_expect (&raw, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
    for (i = 0; i < HP_N_SLOTS; i++)
      fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
    raw_send_slots (&raw, msg, fds, 1);
    raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
    /* the ring stays epoch 1, of two 8 KiB slots */
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_CAPS;
    msg->u.caps.latency = GST_CLOCK_TIME_NONE;
    if (which == HL_CAPS_SLOT_SIZE) {
      make_layout_of (&msg->u.caps.layout, "NV12", 256, 192, HP_N_SLOTS,
          128 * 1024);
    } else {
      make_layout_of (&msg->u.caps.layout, "NV12", 64, 48, HP_N_SLOTS,
          HP_SLOT_SIZE);
      msg->u.caps.layout.n_slots = HP_N_SLOTS + 2;
    }
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    /* a frame in the claimed layout, which would be wrapped past the slot */
    make_frame (msg, 1, 0, 1, 1);
    raw_send_msg (&raw, msg, NULL, 0);
  }

  /* the consumer says why, naming the field, before it gives up */
  raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_PROTOCOL);
  fail_unless (strstr (msg->u.error.text, hl_cases[which].says) != NULL,
      "'%s' does not say '%s'", msg->u.error.text, hl_cases[which].says);
  assert_error (pipeline, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* After its EOS, the consumer gives back the frames of a producer that goes
 * on (a flush on its side) unread, instead of calling them "before the
 * slots were mapped" and failing. */
GST_START_TEST (test_frame_after_eos)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  gint fds[HP_N_SLOTS];
  GstElement *pipeline;
  GstMessage *eos;
  gint listen_fd;
  RawPeer raw;
  guint i;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  raw_announce (&raw, msg);
  for (i = 0; i < HP_N_SLOTS; i++)
    fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
  raw_send_slots (&raw, msg, fds, 1);
  raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);

  make_simple (msg, GPUSHARE_MSG_EOS);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  eos = pop_message (pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (eos && GST_MESSAGE_TYPE (eos) == GST_MESSAGE_EOS);
  gst_message_unref (eos);

  /* two more frames: each comes back at once, unread */
  for (i = 0; i < 2; i++) {
    make_frame (msg, 1, 1 - i, 1 + i, 2 + i);
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
    fail_unless_equals_int (msg->u.release.slot, 1 - i);
    fail_unless_equals_int (msg->u.release.generation, 1 + i);
    fail_unless_equals_uint64 (msg->u.release.sequence, 2 + i);
  }
  /* a new ring after the end (a caps change, a quarantine for another
   * consumer): followed, mapped, and its frames come back unread too */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_CAPS;
  msg->u.caps.latency = GST_CLOCK_TIME_NONE;
  make_layout (&msg->u.caps.layout, HP_N_SLOTS, HP_SLOT_SIZE);
  msg->u.caps.layout.epoch = 2;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  for (i = 0; i < HP_N_SLOTS; i++)
    fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
  raw_send_slots (&raw, msg, fds, 2);
  raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
  fail_unless_equals_uint64 (msg->u.mapped.epoch, 2);
  make_frame (msg, 2, 0, 1, 4);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  fail_unless_equals_uint64 (msg->u.release.epoch, 2);
  fail_unless_equals_uint64 (msg->u.release.sequence, 4);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A copied frame of packed 4:2:2 at an odd width keeps the last chroma
 * sample of every row (gst_video_frame_copy () dropped it: YUY2 rows of 5
 * pixels are 3 macropixels, 12 bytes, of which it copied 10).  Case 0
 * through system memory; case 1 as auto takes it, which on a GPU host is
 * an upload into a GPU slot and a download out of it, plane by plane (the
 * same rows were cut short there). */
GST_START_TEST (test_copy_odd_yuy2)
{
  gboolean force_system = __i__ == 0;
  gboolean in_place;
  gchar *path = socket_path ("yuy2.sock");
  GstElement *producer, *appsrc;
  GstVideoInfo info;
  GstVideoFrame in, out;
  GstBuffer *buf, *got;
  GstMapInfo map;
  GstCaps *caps;
  Consumer *c;
  guint j, r;

  fail_unless (gst_video_info_set_format (&info, GST_VIDEO_FORMAT_YUY2, 5,
          4));
  GST_VIDEO_INFO_FPS_N (&info) = 30;
  GST_VIDEO_INFO_FPS_D (&info) = 1;
  caps = gst_video_info_to_caps (&info);
  producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
  appsrc = child (producer, "in");
  g_object_set (appsrc, "caps", caps, NULL);
  gst_caps_unref (caps);
  g_object_set (child (producer, "sink"), "socket-path", path,
      "wait-for-connection", TRUE, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  if (force_system)
    gst_util_set_object_arg (G_OBJECT (c->src), "transport", "system");
  consumer_start (c);

  /* appsrc's buffer is not one of the sink's slots: it is copied in */
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (j = 0; j < map.size; j++)
    map.data[j] = 1 + j % 251;
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = 0;
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  fail_unless (gst_video_frame_map (&in, &info, buf, GST_MAP_READ));
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (appsrc),
          gst_buffer_ref (buf)), GST_FLOW_OK);

  got = g_async_queue_timeout_pop (c->buffers, TIMEOUT_MS * 1000);
  fail_unless (got != NULL, "the frame never arrived");
  in_place = src_in_place (c->src);
  GST_INFO ("YUY2 frame through %s memory", in_place ? "system" : "GPU");
  fail_unless (gst_video_frame_map (&out, &info, got, GST_MAP_READ));
  for (r = 0; r < 4; r++)
    fail_unless (memcmp ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&in, 0) +
            r * GST_VIDEO_FRAME_PLANE_STRIDE (&in, 0),
            (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&out, 0) +
            r * GST_VIDEO_FRAME_PLANE_STRIDE (&out, 0), 12) == 0,
        "row %u of the YUY2 frame differs", r);
  gst_video_frame_unmap (&out);
  gst_video_frame_unmap (&in);
  gst_buffer_unref (got);
  gst_buffer_unref (buf);
  fail_unless_equals_uint64 (stat_u64 (child (producer, "sink"),
          in_place ? "frames-copied" : "frames-to-gpu"), 1);

  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* A consumer whose connection drops while its process lives on (its src
 * lost a producer it thought hung, and connects again; or it closed the
 * socket) may still read the slots it held in place: they are
 * quarantined, as for a GOODBYE that says HELD, never written again.  The
 * hang-up alone used to give them back, and the producer wrote them under
 * the buffers still reading them. */
GST_START_TEST (test_hangup_of_live_consumer)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0, slot, k;
  GValue item = G_VALUE_INIT;
  guint8 *kept, *copy;
  guint64 rendered;
  GstIterator *it;
  gsize slot_size;
  RawPeer raw;
  Scene s;
  gint pidfd = gpushare_pidfd_open (getpid ());

  /* the producer tells a live process from an ended one by its pidfd */
  if (pidfd < 0) {
    g_print ("SKIP test_hangup_of_live_consumer: no pidfd here (%s; "
        "valgrind has none)\n", g_strerror (errno));
    g_free (msg);
    g_free (announce);
    return;
  }
  close (pidfd);
  scene_start (&s, FALSE);
  /* snow: a slot written again cannot keep its bytes */
  it = gst_bin_iterate_sources (GST_BIN (s.producer));
  fail_unless_equals_int (gst_iterator_next (it, &item), GST_ITERATOR_OK);
  gst_util_set_object_arg (g_value_get_object (&item), "pattern", "snow");
  g_value_unset (&item);
  gst_iterator_free (it);

  scene_raw_client (&s, &raw, announce);
  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  fail_unless_equals_int (msg->u.slots.mem_type, GPUSHARE_MEM_SYSTEM);
  slot_size = msg->u.slots.slot_size;
  make_simple (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = announce->layout.epoch;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
  slot = msg->u.frame.slot;
  fail_unless (slot < n_fds);
  kept = mmap (NULL, slot_size, PROT_READ, MAP_SHARED, fds[slot], 0);
  fail_unless (kept != MAP_FAILED);
  gpushare_close_fds (fds, n_fds);
  copy = g_memdup2 (kept, FRAME_SIZE);

  /* the frame stays held: the socket goes, the process stays */
  raw_clear (&raw);
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "hangup");
  fail_unless (stat_u64 (s.sink, "slots-quarantined") >= 1,
      "the slots of a consumer that lives on were given back");
  /* every slot of the ring written a few times over meanwhile */
  rendered = stat_u64 (s.sink, "frames-rendered");
  for (k = 0; k < 5; k++) {
    fail_unless (wait_stat_u64_at_least (s.sink, "frames-rendered",
            rendered + 8 * (k + 1)) >= rendered + 8 * (k + 1));
    fail_unless (memcmp (kept, copy, FRAME_SIZE) == 0,
        "the held frame changed after its consumer hung up (look %u)", k);
  }
  assert_no_error (s.producer);

  munmap (kept, slot_size);
  g_free (copy);
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* A format whose rows a stride does not describe (tiled) cannot be
 * shared: the sink says so at negotiation, instead of announcing a layout
 * every consumer refuses. */
GST_START_TEST (test_sink_refuses_tiled)
{
  gchar *path = socket_path ("tiled.sock");
  GstElement *producer, *appsrc;
  GstCaps *caps;

  producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
  appsrc = child (producer, "in");
  caps = gst_caps_from_string ("video/x-raw,format=NV12_4L4,width=64,"
      "height=48,framerate=30/1");
  g_object_set (appsrc, "caps", caps, NULL);
  gst_caps_unref (caps);
  g_object_set (child (producer, "sink"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  gst_app_src_push_buffer (GST_APP_SRC (appsrc),
      gst_buffer_new_allocate (NULL, 64 * 48 * 3 / 2, NULL));
  assert_error (producer, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 14. Who the producer is: in a directory anyone may write to, another uid
 * binds the socket path first.  The consumer reads SO_PEERCRED before a
 * byte and takes frames only from its own uid, root or
 * allowed-producer-uids. */

typedef struct
{
  gint stage;
  gint err;                     /* errno of the failing step */
  gint accepted;                /* a consumer connected */
  gint eof;                     /* and hung up */
  guint32 len;                  /* bytes it sent, which follow */
} ProducerReport;

/* Runs in a child forked from a threaded process: system calls only. */
static void G_GNUC_NORETURN
foreign_producer_child (const struct sockaddr_un *addr,
    const guint8 * announce, gsize announce_len, gint ready_fd,
    gint report_fd)
{
  static guint8 buf[65536];
  ProducerReport r;
  struct pollfd pfd;
  gint l, c = -1;

  memset (&r, 0, sizeof (r));
  if (setgroups (0, NULL) < 0 || setgid (FOREIGN_UID) < 0
      || setuid (FOREIGN_UID) < 0 || getuid () != FOREIGN_UID) {
    r.stage = UID_NO_SETUID;
    goto report;
  }
  l = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind (l, (const struct sockaddr *) addr, sizeof (*addr)) < 0
      || listen (l, 4) < 0) {
    r.stage = UID_NO_DIR;
    r.err = errno;
    goto report;
  }
  if (write (ready_fd, "r", 1) != 1)
    goto report;
  pfd.fd = l;
  pfd.events = POLLIN;
  if (poll (&pfd, 1, TIMEOUT_MS) != 1)
    goto report;
  c = accept4 (l, NULL, NULL, SOCK_CLOEXEC);
  if (c < 0)
    goto report;
  r.accepted = 1;
  /* a hostile producer speaks first: a well-formed ANNOUNCE */
  if (send (c, announce, announce_len, MSG_NOSIGNAL) < 0)
    r.err = errno;
  child_receive (c, buf, sizeof (buf), &r.len, NULL, &r.eof);

report:
  if (write (report_fd, &r, sizeof (r)) == sizeof (r) && r.len > 0)
    while (write (report_fd, buf, r.len) < 0 && errno == EINTR);
  _exit (0);
}

/* Starts a consumer against a producer of another uid in a sticky,
 * world-writable directory; FALSE (a SKIP) where that cannot be done. */
static gboolean
run_foreign_producer (const gchar * allow, ProducerReport * report,
    GByteArray * bytes, GstElement ** pipeline_out)
{
  gchar *dir = g_build_filename (tmpdir, "shared", NULL);
  gchar *path = g_build_filename (dir, "cam.sock", NULL);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  struct sockaddr_un addr;
  GstElement *pipeline = NULL;
  GByteArray *announce;
  gint ready[2], rep[2];
  gboolean usable = FALSE;
  gchar r;
  pid_t pid;

  fail_unless (chmod (tmpdir, 0755) == 0);
  fail_unless (mkdir (dir, 0777) == 0 && chmod (dir, 01777) == 0);
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  announce = build (msg, 0);
  fail_unless (pipe2 (ready, O_CLOEXEC) == 0 && pipe2 (rep, O_CLOEXEC) == 0);

  pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    close (ready[0]);
    close (rep[0]);
    foreign_producer_child (&addr, announce->data, announce->len, ready[1],
        rep[1]);
  }
  close (ready[1]);
  close (rep[1]);

  if (read (ready[0], &r, 1) == 1) {
    usable = TRUE;
    pipeline = launch ("gpusharesrc name=src connection-timeout=%d ! "
        "fakesink sync=false", TIMEOUT_MS);
    g_object_set (child (pipeline, "src"), "socket-path", path, NULL);
    if (allow)
      gst_util_set_object_arg (G_OBJECT (child (pipeline, "src")),
          "allowed-producer-uids", allow);
    fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
  }
  close (ready[0]);

  read_child_report (rep[0], pid, report, sizeof (*report), bytes);
  fail_unless_equals_int (bytes->len, report->len);
  if (!usable)
    g_print ("SKIP foreign producer: cannot act as uid %d here (stage %d: "
        "%s)\n", FOREIGN_UID, report->stage, g_strerror (report->err));

  *pipeline_out = pipeline;
  unlink (path);
  rmdir (dir);
  g_byte_array_unref (announce);
  g_free (msg);
  g_free (path);
  g_free (dir);
  return usable;
}

GST_START_TEST (test_foreign_producer)
{
  gboolean allowed = __i__ == 1;
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GstElement *pipeline = NULL;
  ProducerReport report;
  GpuShareHeader hdr;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_producer: needs root to run a producer as "
        "uid %d\n", FOREIGN_UID);
    goto done;
  }
  if (!run_foreign_producer (allowed ? "<1, 65534>" : NULL, &report, bytes,
          &pipeline))
    goto done;
  fail_unless (report.accepted, "the consumer never connected");

  if (!allowed) {
    /* refused before a byte was read: not one byte back, hung up on */
    assert_error (pipeline, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_NOT_AUTHORIZED);
    fail_unless_equals_int (report.len, 0);
    fail_unless (report.eof, "the foreign producer was not hung up on");
  } else {
    /* trusted: the handshake goes on, the consumer ACCEPTs */
    fail_unless (bytes->len > 0, "the consumer answered nothing");
    fail_unless_equals_int (gpushare_header_parse (bytes->data, bytes->len,
            &hdr), GPUSHARE_PARSE_OK);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ACCEPT);
  }
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);

done:
  if (pipeline)
    gst_object_unref (pipeline);
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

static Suite *
gpushare_elements_suite (void)
{
  Suite *s = suite_create ("gpushare_elements");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_inspect);
  tcase_add_test (tc, test_silent_hangup_before_announce);
  tcase_add_test (tc, test_refused_no_reconnect);
  tcase_add_test (tc, test_paused_consumer_keeps_lease);
  tcase_add_loop_test (tc, test_held_after_src_stops, 0, 2);
  tcase_add_test (tc, test_filesink_small_frames);
  tcase_add_test (tc, test_in_place_per_ring);
  tcase_add_test (tc, test_stopped_reading_loses_lease);
  tcase_add_test (tc, test_sink_harness_pool);
  tcase_add_test (tc, test_exchange_copied);
  tcase_add_test (tc, test_exchange_in_place);
  tcase_add_test (tc, test_logs_carry_no_handles);
  tcase_add_loop_test (tc, test_consumer_garbage, 0, N_GARBAGE);
  tcase_add_test (tc, test_sink_answers_version);
  tcase_add_test (tc, test_handshake_timeout);
  tcase_add_test (tc, test_lease_quarantine);
  tcase_add_test (tc, test_max_pending);
  tcase_add_test (tc, test_heartbeat_silent_consumer);
  tcase_add_test (tc, test_heartbeat_pings_keep_alive);
  tcase_add_loop_test (tc, test_consumer_fds, 0, N_FDS_CASES);
  tcase_add_test (tc, test_consumer_unknown_type);
  tcase_add_test (tc, test_foreign_uid_refused);
  tcase_add_test (tc, test_foreign_uid_allowed);
  tcase_add_test (tc, test_tenants);
  tcase_add_test (tc, test_slots_read_only);
  tcase_add_test (tc, test_path_symlink);
  tcase_add_test (tc, test_path_regular_file);
  tcase_add_test (tc, test_path_too_long);
  tcase_add_test (tc, test_path_stale_socket);
  tcase_add_test (tc, test_path_in_use);
  tcase_add_loop_test (tc, test_hostile_producer, 0, N_HP);
  tcase_add_test (tc, test_src_answers_version);
  tcase_add_loop_test (tc, test_heartbeat_silent_producer, 0, 2);
  tcase_add_test (tc, test_cycles);
  tcase_add_test (tc, test_long_cycles);
  tcase_add_loop_test (tc, test_hostile_layout, 0, N_HL);
  tcase_add_test (tc, test_frame_after_eos);
  tcase_add_test (tc, test_hangup_of_live_consumer);
  tcase_add_test (tc, test_sink_refuses_tiled);
  tcase_add_loop_test (tc, test_copy_odd_yuy2, 0, 2);
  tcase_add_loop_test (tc, test_foreign_producer, 0, 2);
  return s;
}

GST_CHECK_MAIN (gpushare_elements);

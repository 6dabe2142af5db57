/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness of the element tests (test_transfer, test_sink_protocol,
 * test_src_protocol, test_access, test_slots, test_lifecycle): gpusharesink
 * and gpusharesrc in the test's own process, with real pipelines on both
 * ends, and raw sockets that play a hostile consumer or a hostile producer.
 *
 * The fixture first runs one complete producer/consumer exchange, so that
 * what GStreamer and GLib open lazily and keep for the process lifetime is
 * open before the open-fd baseline is taken; the teardown then demands
 * that the process holds exactly as many descriptors as before, as
 * libwayland's test runner does.  Since producer and consumer both live in
 * this process, a descriptor either of them forgets to close shows up in
 * that count.
 *
 * Raw peers never block without a timeout: every read polls first.
 * Hostile bytes start from gpushare_msg_build () output (so that
 * everything but the one field under test is valid) and are patched at the
 * header offsets that GpuShareHeader freezes.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpushare-check-elements.h"

gint
gpushare_check_timeout_ms (void)
{
  static gint timeout;

  if (!timeout)
    timeout = g_getenv ("GPUSHARE_UNDER_VALGRIND") ? 20000 : 5000;
  return timeout;
}

#include <gst/video/video.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpushareconn.h"

/* Linux 5.1; older C library headers lack it */
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

gchar *tmpdir;
guint fd_baseline;

/* ------------------------------------------------------------------------ */
/* Descriptors and paths */

gint
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

gchar *
socket_path (const gchar * name)
{
  return g_build_filename (tmpdir, name, NULL);
}

guint
count_memfd_maps (const gchar * name)
{
  gchar *contents = NULL, *needle = g_strdup_printf ("/memfd:%s ", name);
  gchar **lines, **l;
  guint n = 0;

  fail_unless (g_file_get_contents ("/proc/self/maps", &contents, NULL, NULL));
  lines = g_strsplit (contents, "\n", -1);
  for (l = lines; *l; l++)
    if (strstr (*l, needle))
      n++;
  g_strfreev (lines);
  g_free (contents);
  g_free (needle);
  return n;
}

guint
wait_memfd_maps (const gchar * name, guint expected, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000ll;
  guint n;

  while ((n = count_memfd_maps (name)) != expected
      && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  return n;
}

/* ------------------------------------------------------------------------ */
/* Pipelines */

GstElement *
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
GstElement *
child (GstElement * bin, const gchar * name)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (bin), name);

  fail_unless (e != NULL, "no element %s", name);
  gst_object_unref (e);
  return e;
}

GstMessage *
pop_message (GstElement * pipeline, GstMessageType types, gint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus,
      (GstClockTime) timeout_ms * GST_MSECOND, types);

  gst_object_unref (bus);
  return msg;
}

GstStructure *
next_element_message (GstElement * pipeline, const gchar * name,
    gint timeout_ms)
{
  gint64 until = g_get_monotonic_time () + timeout_ms * 1000ll;
  GstStructure *found = NULL;

  while (!found && g_get_monotonic_time () < until) {
    GstMessage *msg = pop_message (pipeline, GST_MESSAGE_ELEMENT, 100);
    const GstStructure *s = msg ? gst_message_get_structure (msg) : NULL;

    if (s && gst_structure_has_name (s, name))
      found = gst_structure_copy (s);
    if (msg)
      gst_message_unref (msg);
  }
  return found;
}

void
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

void
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

void
expect_drop_warning (GstElement * producer, const gchar * reason,
    const gchar * setting)
{
  gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  gboolean found = FALSE;

  while (!found && g_get_monotonic_time () < until) {
    GstMessage *msg = pop_message (producer, GST_MESSAGE_WARNING, 100);
    const GstStructure *d = NULL;
    GError *error = NULL;

    if (!msg)
      continue;
    gst_message_parse_warning (msg, &error, NULL);
    gst_message_parse_warning_details (msg, &d);
    if (d && !g_strcmp0 (gst_structure_get_string (d, "reason"), reason)) {
      fail_unless_equals_string (gst_structure_get_string (d, "setting"),
          setting);
      /* the text says whom and why */
      fail_unless (g_str_has_prefix (error->message, "Dropped consumer "),
          "%s", error->message);
      fail_unless (strstr (error->message, reason) != NULL, "%s",
          error->message);
      found = TRUE;
    }
    g_clear_error (&error);
    gst_message_unref (msg);
  }
  fail_unless (found, "no WARNING for the consumer dropped as %s", reason);
}

GstStructure *
get_stats (GstElement * element)
{
  GstStructure *s = NULL;

  g_object_get (element, "stats", &s, NULL);
  fail_unless (s != NULL);
  return s;
}

guint64
stat_u64 (GstElement * element, const gchar * field)
{
  GstStructure *s = get_stats (element);
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, s);
  gst_structure_free (s);
  return v;
}

guint
stat_uint (GstElement * element, const gchar * field)
{
  GstStructure *s = get_stats (element);
  guint v = 0;

  fail_unless (gst_structure_get_uint (s, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, s);
  gst_structure_free (s);
  return v;
}

/* slots go back when a RELEASE crosses the socket: poll for it */
guint
wait_stat_uint (GstElement * element, const gchar * field, guint value)
{
  gint64 deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000;
  guint v;

  while ((v = stat_uint (element, field)) != value
      && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  return v;
}

guint64
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

guint
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

guint64
client_stat_u64 (GstElement * sink, guint index, const gchar * field)
{
  GstStructure *s = get_stats (sink);
  const GValue *list = gst_structure_get_value (s, "clients");
  guint64 v = G_MAXUINT64;

  fail_unless (list != NULL && index < gst_value_array_get_size (list));
  fail_unless (gst_structure_get_uint64 (gst_value_get_structure
          (gst_value_array_get_value (list, index)), field, &v));
  gst_structure_free (s);
  return v;
}

guint
num_clients (GstElement * sink)
{
  guint n = 0;

  g_object_get (sink, "num-clients", &n, NULL);
  return n;
}

/* ------------------------------------------------------------------------ */
/* A real consumer: gpusharesrc ! fakesink */

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

Consumer *
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

void
consumer_start (Consumer * c)
{
  fail_if (gst_element_set_state (c->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
}

gboolean
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

void
assert_consumer_alive (Consumer * c)
{
  gint before = g_atomic_int_get (&c->frames);

  fail_unless (consumer_wait (c, before + 5),
      "the consumer stopped receiving frames (%d)", before);
  assert_no_error (c->pipeline);
}

void
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

GstElement *
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
void
producer_start (GstElement * producer, GstElement * sink)
{
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", 1) >= 1,
      "the producer renders nothing");
}

/* ------------------------------------------------------------------------ */
/* client-connected / client-removed, emitted from the sink's thread */

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
  klass = g_type_class_ref (query.param_types[1] & ~G_SIGNAL_TYPE_STATIC_SCOPE);
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

void
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
void
client_log_clear (ClientLog * log, GstElement * sink)
{
  g_signal_handlers_disconnect_by_data (sink, log);
  g_ptr_array_unref (log->removed);
  g_ptr_array_unref (log->removed_ids);
  g_mutex_clear (&log->lock);
  g_cond_clear (&log->cond);
}

gboolean
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

const gchar *
client_log_removed_nick (ClientLog * log, guint index)
{
  const gchar *nick;

  g_mutex_lock (&log->lock);
  fail_unless (index < log->removed->len);
  nick = g_ptr_array_index (log->removed, index);
  g_mutex_unlock (&log->lock);
  return nick;
}

guint
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

void
raw_init (RawPeer * p, gint fd)
{
  p->fd = fd;
  p->in = g_byte_array_new ();
  p->fds = g_array_new (FALSE, FALSE, sizeof (gint));
  p->eof = FALSE;
}

void
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

gint
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
  }
  cmsg;
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
RawResult
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
void
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
        gpushare_error_code_to_string (msg->u.error.code), msg->u.error.text);
    if (fds && n_fds)
      gpushare_close_fds (fds, *n_fds);
  }
}

/* Reads to the end of the stream, which must come within the timeout;
 * returns the codes of the ERROR messages seen on the way, and counts the
 * PINGs in n_pings (if not NULL). */
GArray *
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

GArray *
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
  }
  cmsg;
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

GByteArray *
build (const GpuShareMsg * msg, guint n_fds)
{
  GByteArray *b = g_byte_array_new ();

  fail_unless (gpushare_msg_build (msg, n_fds, b), "cannot build %s",
      gpushare_msg_type_to_string (msg->type));
  return b;
}

gboolean
raw_send_bytes (RawPeer * p, GByteArray * b, const gint * fds, guint n_fds)
{
  gboolean ok = raw_send (p->fd, b->data, b->len, fds, n_fds);

  g_byte_array_unref (b);
  return ok;
}

gboolean
raw_send_msg (RawPeer * p, const GpuShareMsg * msg, const gint * fds,
    guint n_fds)
{
  return raw_send_bytes (p, build (msg, n_fds), fds, n_fds);
}

gboolean
raw_send_mapped (RawPeer * p, GpuShareMsg * msg, guint64 epoch)
{
  make_simple (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = epoch;
  return raw_send_msg (p, msg, NULL, 0);
}

/* a raw producer: its listening socket at path, then the consumer that
 * connects to it */
gint
raw_listen (const gchar * path)
{
  return listen_unix (path, 4);
}

gint
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

/* ------------------------------------------------------------------------ */
/* Messages, well-formed or not */

void
patch16 (GByteArray * b, gsize offset, guint16 v)
{
  v = GUINT16_TO_LE (v);
  memcpy (b->data + offset, &v, sizeof (v));
}

void
patch32 (GByteArray * b, gsize offset, guint32 v)
{
  v = GUINT32_TO_LE (v);
  memcpy (b->data + offset, &v, sizeof (v));
}

/* A header of any type (the builder refuses unknown ones) and a payload
 * of counting bytes. */
GByteArray *
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

GByteArray *
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
void
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

void
make_layout (GpuShareLayout * l, guint n_slots, guint64 slot_size)
{
  make_layout_of (l, "NV12", 64, 48, n_slots, slot_size);
}

void
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

void
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

void
make_simple (GpuShareMsg * m, GpuShareMsgType type)
{
  memset (m, 0, sizeof (*m));
  m->type = type;
  if (type == GPUSHARE_MSG_GOODBYE)
    m->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
}

void
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

void
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

void
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
void
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

/* one complete producer/consumer exchange */
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

void
elements_setup (void)
{
  tmpdir = make_tmpdir ("gpushare-elements-XXXXXX");
  warm_up ();
  fd_baseline = count_fds_settled ();
}

void
elements_teardown (void)
{
  guint n = wait_fd_count (fd_baseline, TIMEOUT_MS);

  remove_tree (tmpdir);
  g_clear_pointer (&tmpdir, g_free);
  fail_unless_equals_int (n, fd_baseline);
}

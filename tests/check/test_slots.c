/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds which slot, and for how long: a consumer that holds its frames
 * while a lossless producer waits loses its lease and its slots are
 * quarantined, a paused one that holds nobody up keeps it, a buffer that
 * outlives its src or its connection keeps its frame, and a src wraps at
 * most max-in-place frames of a ring in place and copies the others.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <gst/check/gstcheck.h>
#include <gst/app/app.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare-check-elements.h"
#include "gpushareconn.h"
#include "gpushareretain.h"

/* ------------------------------------------------------------------------ */
/* 1. Leases: a consumer that holds a lossless producer up loses its slots,
 * one that holds nobody up keeps them */

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
  expect_drop_warning (producer, "lease", "lease-timeout");
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
  GstStructure *st;
  Consumer *c;
  guint slots = 0;

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
  /* and on the producer's bus: gpushare-quarantine, after the consumer's
   * gpushare-client-connected */
  st = next_element_message (producer, "gpushare-quarantine", TIMEOUT_MS);
  fail_unless (st != NULL, "no gpushare-quarantine message");
  fail_unless_equals_string (gst_structure_get_string (st, "reason"), "lease");
  fail_unless (gst_structure_get_uint (st, "slots", &slots) && slots >= 1);
  gst_structure_free (st);

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

/* ------------------------------------------------------------------------ */
/* 2. Frames that outlive their src or their connection */

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

/* A consumer whose connection drops while its process lives on (its src
 * lost a producer it thought hung, and connects again; or it closed the
 * socket) may still read the slots it held in place: they are
 * quarantined, as for a GOODBYE that says HELD, never written again.  The
 * hang-up alone used to give them back, and the producer wrote them under
 * the buffers still reading them. */
/* TRUE where the producer can tell a live process from an ended one (by
 * its pidfd); otherwise one SKIP line for test */
static gboolean
have_pidfd (const gchar * test)
{
  gint pidfd = gpushare_pidfd_open (getpid ());

  if (pidfd < 0) {
    g_print ("SKIP %s: no pidfd here (%s; valgrind has none)\n", test,
        g_strerror (errno));
    return FALSE;
  }
  close (pidfd);
  return TRUE;
}

/* a producer of snow: a slot written again cannot keep its bytes */
static void
snow_scene_start (Scene * s)
{
  GValue item = G_VALUE_INIT;
  GstIterator *it;

  scene_start (s, FALSE);
  it = gst_bin_iterate_sources (GST_BIN (s->producer));
  fail_unless_equals_int (gst_iterator_next (it, &item), GST_ITERATOR_OK);
  gst_util_set_object_arg (g_value_get_object (&item), "pattern", "snow");
  g_value_unset (&item);
  gst_iterator_free (it);
}

/* The raw consumer raw, its ANNOUNCE read, maps the slot of its first
 * frame and keeps it, and closes its socket while this process lives on:
 * the producer must quarantine what it held, and the frame's bytes stay
 * what they were while the producer writes its ring five times over */
static void
hold_frame_and_hang_up (Scene * s, RawPeer * raw,
    const GpuShareAnnounce * announce, const gchar * why)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0, slot, k;
  guint8 *kept, *copy;
  guint64 rendered;
  gsize slot_size;

  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (raw, msg, NULL, 0));
  raw_expect (raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  fail_unless_equals_int (msg->u.slots.mem_type, GPUSHARE_MEM_SYSTEM);
  slot_size = msg->u.slots.slot_size;
  fail_unless (raw_send_mapped (raw, msg, announce->layout.epoch));
  raw_expect (raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
  slot = msg->u.frame.slot;
  fail_unless (slot < n_fds);
  kept = mmap (NULL, slot_size, PROT_READ, MAP_SHARED, fds[slot], 0);
  fail_unless (kept != MAP_FAILED);
  gpushare_close_fds (fds, n_fds);
  copy = g_memdup2 (kept, FRAME_SIZE);

  /* the frame stays held: the socket goes, the mapping stays */
  raw_clear (raw);
  fail_unless (client_log_wait (&s->log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s->log, 0), "hangup");
  fail_unless (stat_u64 (s->sink, "slots-quarantined") >= 1,
      "the slots of a consumer whose %s were given back", why);
  /* every slot of the ring written a few times over meanwhile */
  rendered = stat_u64 (s->sink, "frames-rendered");
  for (k = 0; k < 5; k++) {
    fail_unless (wait_stat_u64_at_least (s->sink, "frames-rendered",
            rendered + 8 * (k + 1)) >= rendered + 8 * (k + 1));
    fail_unless (memcmp (kept, copy, FRAME_SIZE) == 0,
        "the held frame changed after its consumer hung up (%s; look %u)",
        why, k);
  }
  assert_no_error (s->producer);
  munmap (kept, slot_size);
  g_free (copy);
  g_free (msg);
}

GST_START_TEST (test_hangup_of_live_consumer)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  RawPeer raw;
  Scene s;

  if (!have_pidfd ("test_hangup_of_live_consumer")) {
    g_free (announce);
    return;
  }
  snow_scene_start (&s);
  scene_raw_client (&s, &raw, announce);
  hold_frame_and_hang_up (&s, &raw, announce, "process lives on");
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* a child process connects to path, hands the socket to us over sp[1]
 * and waits there until we close sp[0]; then it exits.  Its pid */
static pid_t
connect_in_child (const gchar * path, const gint * pair)
{
  gint sp = pair[1];
  pid_t pid = fork ();

  fail_unless (pid >= 0);
  if (pid == 0) {
    struct sockaddr_un addr = { 0, };
    union
    {
      struct cmsghdr align;
      gchar buf[CMSG_SPACE (sizeof (gint))];
    }
    control;
    struct msghdr mh = { 0, };
    struct iovec iov;
    struct cmsghdr *cm;
    gchar byte = 0;
    gint fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    close (pair[0]);
    addr.sun_family = AF_UNIX;
    g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
    if (fd < 0 || connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0)
      _exit (1);
    iov.iov_base = &byte;
    iov.iov_len = 1;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    memset (&control, 0, sizeof (control));
    mh.msg_control = control.buf;
    mh.msg_controllen = sizeof (control.buf);
    cm = CMSG_FIRSTHDR (&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN (sizeof (gint));
    memcpy (CMSG_DATA (cm), &fd, sizeof (gint));
    if (sendmsg (sp, &mh, 0) != 1)
      _exit (2);
    /* until the parent closes its end */
    while (read (sp, &byte, 1) > 0);
    _exit (0);
  }
  return pid;
}

/* the fd that came over sp with one byte */
static gint
receive_fd (gint sp)
{
  union
  {
    struct cmsghdr align;
    gchar buf[CMSG_SPACE (sizeof (gint))];
  }
  control;
  struct msghdr mh = { 0, };
  struct iovec iov;
  struct cmsghdr *cm;
  gchar byte;
  gint fd = -1;

  iov.iov_base = &byte;
  iov.iov_len = 1;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.buf;
  mh.msg_controllen = sizeof (control.buf);
  fail_unless_equals_int (recvmsg (sp, &mh, MSG_CMSG_CLOEXEC), 1);
  cm = CMSG_FIRSTHDR (&mh);
  fail_unless (cm != NULL && cm->cmsg_type == SCM_RIGHTS);
  memcpy (&fd, CMSG_DATA (cm), sizeof (gint));
  return fd;
}

/* The process that connected a consumer hands its connection to another
 * (as a fork leaves it to the child) and exits; the other maps a slot and
 * closes the socket while it lives on.  The producer must not take the end
 * of the process that connected for the end of the mappings: the slots are
 * quarantined and the frame stays.  Before, the pidfd of the connecting
 * process said it ended, and the slots went back and were written again
 * under the process that still mapped them. */
GST_START_TEST (test_connection_outlives_its_process)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint sp[2], status = -1;
  RawPeer raw;
  pid_t pid;
  Scene s;

  if (!have_pidfd ("test_connection_outlives_its_process")) {
    g_free (msg);
    g_free (announce);
    return;
  }
  snow_scene_start (&s);
  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
  pid = connect_in_child (s.path, sp);
  close (sp[1]);
  raw_init (&raw, receive_fd (sp[0]));
  /* accepted: the producer watches the child from now on */
  raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
  *announce = msg->u.announce;
  close (sp[0]);
  fail_unless_equals_int (waitpid (pid, &status, 0), pid);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  hold_frame_and_hang_up (&s, &raw, announce, "connecting process ended, "
      "its connection held by another");
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. Frames in place and copies */

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
  msg = pop_message (direct, GST_MESSAGE_EOS | GST_MESSAGE_ERROR, TIMEOUT_MS);
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
  msg = pop_message (producer, GST_MESSAGE_EOS | GST_MESSAGE_ERROR, TIMEOUT_MS);
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

/* io-mode on system memory: copy copies every frame out of its slot,
 * import (and auto) push every frame in place, and both say so in the
 * stats (io, io-reason, frames-in-place, frames-copied) and in the
 * gpushare-output element message */
#define N_IO_FRAMES 20

static void
check_io_mode (const gchar * mode, gboolean in_place)
{
  gchar *path = socket_path ("io.sock");
  GstElement *producer, *sink, *consumer, *src;
  GstStructure *stats;
  gchar *io = NULL, *reason = NULL;
  const gchar *msg_io = NULL;
  gchar *msg_io_copy = NULL;
  GstMessage *msg;

  producer = launch ("videotestsrc num-buffers=%d pattern=ball ! "
      SMALL_CAPS_STR " ! gpusharesink name=sink wait-for-connection=true",
      N_IO_FRAMES);
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, NULL);
  consumer = launch ("gpusharesrc name=src transport=system io-mode=%s "
      "connection-timeout=%d ! fakesink sync=false", mode, TIMEOUT_MS);
  src = child (consumer, "src");
  g_object_set (src, "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  while ((msg = pop_message (consumer, GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
              GST_MESSAGE_ELEMENT, TIMEOUT_MS))) {
    const GstStructure *st = gst_message_get_structure (msg);

    fail_if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR, "io-mode=%s: an "
        "error", mode);
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
      gst_message_unref (msg);
      break;
    }
    if (st && gst_structure_has_name (st, "gpushare-output")
        && (msg_io = gst_structure_get_string (st, "io"))) {
      g_free (msg_io_copy);
      msg_io_copy = g_strdup (msg_io);
    }
    gst_message_unref (msg);
  }
  stats = get_stats (src);
  io = g_strdup (gst_structure_get_string (stats, "io"));
  reason = g_strdup (gst_structure_get_string (stats, "io-reason"));
  gst_structure_free (stats);
  if (in_place) {
    fail_unless_equals_uint64 (stat_u64 (src, "frames-in-place"), N_IO_FRAMES);
    fail_unless_equals_uint64 (stat_u64 (src, "frames-copied"), 0);
    fail_unless_equals_string (io, "in-place");
    fail_unless_equals_string (reason, "");
    fail_unless_equals_string (msg_io_copy, "in-place");
  } else {
    fail_unless_equals_uint64 (stat_u64 (src, "frames-in-place"), 0);
    fail_unless_equals_uint64 (stat_u64 (src, "frames-copied"), N_IO_FRAMES);
    fail_unless_equals_string (io, "copy");
    fail_unless_equals_string (reason, "io-mode=copy");
    fail_unless_equals_string (msg_io_copy, "copy");
  }
  g_free (io);
  g_free (reason);
  g_free (msg_io_copy);
  fail_unless_equals_int (gst_element_set_state (consumer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (consumer);
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (producer);
  g_free (path);
}

GST_START_TEST (test_io_mode)
{
  check_io_mode ("copy", FALSE);
  check_io_mode ("import", TRUE);
  check_io_mode ("auto", TRUE);
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
  fail_unless (raw_send_mapped (&raw, msg, announce.layout.epoch));
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

static Suite *
gpushare_slots_suite (void)
{
  Suite *s = suite_create ("gpushare_slots");
  TCase *tc_leases = tcase_create ("leases");
  TCase *tc_held = tcase_create ("held");
  TCase *tc_in_place = tcase_create ("in-place");

  suite_add_tcase (s, tc_leases);
  tcase_add_checked_fixture (tc_leases, elements_setup, elements_teardown);
  tcase_add_test (tc_leases, test_lease_quarantine);
  tcase_add_test (tc_leases, test_stopped_reading_loses_lease);
  tcase_add_test (tc_leases, test_paused_consumer_keeps_lease);
  suite_add_tcase (s, tc_held);
  tcase_add_checked_fixture (tc_held, elements_setup, elements_teardown);
  tcase_add_loop_test (tc_held, test_held_after_src_stops, 0, 2);
  tcase_add_test (tc_held, test_hangup_of_live_consumer);
  tcase_add_test (tc_held, test_connection_outlives_its_process);
  suite_add_tcase (s, tc_in_place);
  tcase_add_checked_fixture (tc_in_place, elements_setup, elements_teardown);
  tcase_add_test (tc_in_place, test_filesink_small_frames);
  tcase_add_test (tc_in_place, test_in_place_per_ring);
  tcase_add_test (tc_in_place, test_io_mode);
  return s;
}

GST_CHECK_MAIN (gpushare_slots);

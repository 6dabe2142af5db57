/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpusharesink against consumers that break the protocol: raw sockets that
 * send garbage, stall or flood the handshake, pass descriptors or speak
 * message types of a newer minor version.  Each is dropped alone, for its
 * reason, with every descriptor it sent closed, while a well-behaved
 * consumer beside it streams on.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare-check-elements.h"
#include "gpushareserver.h"
#include "gpushareconn.h"
#include "gpushareframemeta.h"
#include "gpusharelane.h"

/* ------------------------------------------------------------------------ */
/* 1. A consumer that sends garbage is dropped, alone */

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
  /* dropped, not refused at the door: the producer warns */
  if (!strcmp (garbage_cases[which].reason, "protocol"))
    expect_drop_warning (s.producer, "protocol", "none");

  /* the blast radius is that client: the other one goes on */
  assert_consumer_alive (s.consumer);
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  assert_no_error (s.producer);

  raw_clear (&raw);
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
/* 2. A consumer that stalls or floods the handshake */

/* A consumer that connects and never answers is dropped when its
 * handshake step is overdue, with ERROR TIMEOUT; the others go on. */
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
  expect_drop_warning (s.producer, "timeout", "handshake-timeout");
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* A consumer that never says MAPPED: PINGs every 50 ms (or, without
 * pings, nothing) until the producer sends an ERROR, 10 s at most; TRUE
 * where that ERROR is TIMEOUT for the handshake.  Descriptors that come
 * meanwhile are closed. */
static gboolean
wait_handshake_timeout (RawPeer * raw, GpuShareMsg * msg, gboolean pings)
{
  gint64 t0 = g_get_monotonic_time ();
  RawResult r;

  while (g_get_monotonic_time () - t0 < 10 * G_USEC_PER_SEC) {
    if (pings) {
      make_simple (msg, GPUSHARE_MSG_PING);
      if (!raw_send_msg (raw, msg, NULL, 0))
        return FALSE;
    }
    r = raw_recv (raw, msg, NULL, NULL, 50);
    if (r == RAW_MSG && msg->type == GPUSHARE_MSG_ERROR)
      return msg->u.error.code == GPUSHARE_ERR_TIMEOUT
          && strstr (msg->u.error.text, "handshake") != NULL;
    if (r != RAW_MSG && r != RAW_TIMEOUT)
      return FALSE;
  }
  return FALSE;
}

/* A consumer that has its SLOTS and does not say MAPPED: silent, it goes
 * when the step is overdue, as in every step; heard from (its process
 * pulses while it maps, which takes seconds on a GPU that many processes
 * start on at once), it may map for GPUSHARE_SERVER_MAP_TIMEOUTS steps,
 * not longer, then goes with ERROR TIMEOUT too.  The real consumer streams
 * on. */
GST_START_TEST (test_map_timeout)
{
  gboolean pings = __i__ == 1;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;
  gint64 t0, elapsed, bound;
  gboolean dropped;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  /* no heartbeat: the handshake's deadline alone judges */
  g_object_set (s.sink, "handshake-timeout", 200, "heartbeat-interval", 0,
      NULL);
  scene_raw_client (&s, &raw, announce);
  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  do {
    gpushare_close_fds (fds, n_fds);
    n_fds = 0;
    fail_unless_equals_int (raw_recv (&raw, msg, fds, &n_fds, TIMEOUT_MS),
        RAW_MSG);
  } while (msg->type != GPUSHARE_MSG_SLOTS);
  gpushare_close_fds (fds, n_fds);
  t0 = g_get_monotonic_time ();
  /* no MAPPED: PINGs every 50 ms, or nothing, until the producer gives up */
  dropped = wait_handshake_timeout (&raw, msg, pings);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless (dropped, "not dropped with ERROR TIMEOUT for its handshake "
      "within 10 s");
  bound = pings ? GPUSHARE_SERVER_MAP_TIMEOUTS * 200 : 200;
  fail_unless (elapsed >= bound - 50 && elapsed < bound + 1500, "dropped "
      "after %" G_GINT64_FORMAT " ms, not after about %" G_GINT64_FORMAT,
      elapsed, bound);
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "timeout");
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* The rest of a raw consumer's handshake, after the ANNOUNCE of the
 * producer instance: ACCEPT, SLOTS (its descriptors closed: nothing is
 * mapped) and MAPPED */
static void
raw_stream (RawPeer * raw, guint64 instance)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;

  make_accept (msg, instance);
  fail_unless (raw_send_msg (raw, msg, NULL, 0));
  raw_expect (raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  gpushare_close_fds (fds, n_fds);
  /* the SLOTS' epoch: the ring may have been replaced since the ANNOUNCE
   * (a consumer before this one left slots quarantined), and the producer
   * waits for the MAPPED of the ring it sent */
  fail_unless (raw_send_mapped (raw, msg, msg->u.slots.epoch));
  g_free (msg);
}

/* appsrc ! gpusharesink: one frame of w x h pushed; TRUE once the
 * producer took it (appsrc's queue empty) within timeout_ms */
static gboolean
push_taken (GstElement * appsrc, guint w, guint h, guint n, gint timeout_ms)
{
  GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format",
      G_TYPE_STRING, "NV12", "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
  gint64 until = g_get_monotonic_time () + timeout_ms * (gint64) 1000;
  GstFlowReturn ret;
  GstBuffer *buf;
  guint64 level;

  g_object_set (appsrc, "caps", caps, NULL);
  gst_caps_unref (caps);
  buf = gst_buffer_new_allocate (NULL, w * h * 3 / 2, NULL);
  gst_buffer_memset (buf, 0, n, w * h * 3 / 2);
  GST_BUFFER_PTS (buf) = n * (GST_SECOND / 30);
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  g_signal_emit_by_name (appsrc, "push-buffer", buf, &ret);
  gst_buffer_unref (buf);
  fail_unless_equals_int (ret, GST_FLOW_OK);
  for (;;) {
    g_object_get (appsrc, "current-level-buffers", &level, NULL);
    if (level == 0)
      return TRUE;
    if (g_get_monotonic_time () > until)
      return FALSE;
    g_usleep (1000);
  }
}

/* A lossless producer waits for its consumers to map the ring a caps
 * change made, one handshake-timeout at most: a consumer that says
 * nothing but PING then, however long, holds it up no longer than a
 * silent one, and goes with ERROR TIMEOUT.  (It may take up to
 * GPUSHARE_SERVER_MAP_TIMEOUTS steps to map only where nobody waits for
 * it: test_map_timeout.) */
GST_START_TEST (test_remap_holds_lossless_once)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("remap.sock");
  GstElement *producer, *sink, *appsrc;
  gint64 t0, elapsed;
  gboolean dropped, taken;
  ClientLog log;
  RawPeer raw;

  producer = launch ("appsrc name=in format=time is-live=true ! "
      "gpusharesink name=sink policy=lossless handshake-timeout=500 "
      "heartbeat-interval=0");
  sink = child (producer, "sink");
  appsrc = child (producer, "in");
  g_object_set (sink, "socket-path", path, NULL);
  client_log_init (&log, sink);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_unless (push_taken (appsrc, 64, 48, 0, TIMEOUT_MS));

  /* a consumer that streams */
  raw_init (&raw, raw_connect (path));
  raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
  raw_stream (&raw, msg->u.announce.instance);
  fail_unless (client_log_wait (&log, FALSE, 1), "no client-connected");
  fail_unless (push_taken (appsrc, 64, 48, 1, TIMEOUT_MS));
  raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);

  /* a larger frame: a new ring, which the consumer never says it mapped;
   * it PINGs every 50 ms meanwhile.  Whether appsrc has handed the frame
   * to the sink yet says nothing (the sink holds it in its render, with
   * appsrc's queue empty): the time until frame 3 is taken, below, says
   * how long the producer was held */
  t0 = g_get_monotonic_time ();
  push_taken (appsrc, 96, 64, 2, 0);
  dropped = wait_handshake_timeout (&raw, msg, TRUE);
  /* the producer took the frame once the consumer was gone */
  taken = push_taken (appsrc, 96, 64, 3, TIMEOUT_MS);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless (dropped, "not dropped with ERROR TIMEOUT for its handshake");
  fail_unless (taken, "the producer takes no frame");
  /* one step, and the one stretch of a step whose reply waits unread (a
   * PING may be waiting when the deadline comes): 1.5 s at most, where
   * twelve steps were 6 s */
  fail_unless (elapsed >= 450 && elapsed < 500 + 1000 + 1000, "the "
      "lossless producer was held up %" G_GINT64_FORMAT " ms, not about 500",
      elapsed);
  fail_unless (client_log_wait (&log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&log, 0), "timeout");

  raw_clear (&raw);
  fail_unless_equals_int (gst_element_set_state (producer, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A producer that cannot export its slots to a consumer (here: out of file
 * descriptors) refuses it with ERROR RESOURCE, and says so: the consumer
 * is removed for "resource", where it used to be "unsupported", which
 * sent users looking at their memory settings.  The other consumer
 * streams on. */
GST_START_TEST (test_export_failure_is_resource)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  struct rlimit old, low;
  GArray *codes;
  RawPeer raw;
  Scene s;
  gint lowest;

  scene_start (&s, TRUE);
  scene_raw_client (&s, &raw, announce);

  /* the producer runs in this process: no descriptor number is left for
   * it to export a slot with (the limit bounds new numbers only) */
  lowest = fcntl (0, F_DUPFD_CLOEXEC, 0);
  fail_unless (lowest >= 0);
  close (lowest);
  fail_unless (getrlimit (RLIMIT_NOFILE, &old) == 0);
  low = old;
  low.rlim_cur = lowest;
  fail_unless (setrlimit (RLIMIT_NOFILE, &low) == 0);
  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  codes = raw_drain (&raw);
  fail_unless (setrlimit (RLIMIT_NOFILE, &old) == 0);

  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_RESOURCE);
  g_array_unref (codes);
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "resource");
  fail_unless_equals_int (num_clients (s.sink), 1);
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (msg);
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
  expect_drop_warning (s.producer, "timeout", "heartbeat-interval");
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
          gpushare_error_code_to_string (msg->u.error.code), msg->u.error.text);
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

/* ------------------------------------------------------------------------ */
/* 3. Descriptors from a consumer: none are allowed, all are closed */

typedef enum
{
  FDS_UNDECLARED,               /* fds beside a message whose header says 0 */
  FDS_FORBIDDEN_TYPE,           /* an ACCEPT whose header declares fds */
  FDS_ON_SLOTS,                 /* a well-formed SLOTS, from a consumer */
  FDS_LYING_COUNT,              /* header n_fds 4, one fd sent */
  FDS_OVER_CAP,                 /* 100 fds: the receiver's cmsg truncates */
  FDS_SPLIT,                    /* beside a PING and the first byte of the
                                 * next one, whose rest comes later */
  FDS_HELD_BACK,                /* beside the header of a message that says
                                 * 0, its body never sent */
  N_FDS_CASES
} FdsCase;

static const gchar *const fds_case_names[N_FDS_CASES] = {
  "undeclared fds", "fds on an ACCEPT", "a SLOTS with fds",
  "a lying fd count", "more fds than the cap",
  "fds beside a PING and the start of the next",
  "fds beside a header whose body is held back",
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
    case FDS_SPLIT:{
      /* without the check they stayed in the producer for as long as the
       * consumer kept a message unfinished, the next PING's first byte
       * sent with the rest of the one before */
      GByteArray *ping;

      make_simple (msg, GPUSHARE_MSG_PING);
      ping = build (msg, 0);
      b = g_byte_array_new ();
      g_byte_array_append (b, ping->data, ping->len);
      g_byte_array_append (b, ping->data, 1);
      g_byte_array_unref (ping);
      n_fds = 2;
      break;
    }
    case FDS_HELD_BACK:
      b = raw_message (200, 4096, 0);
      g_byte_array_set_size (b, GPUSHARE_HEADER_SIZE);
      n_fds = 2;
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
  if (which == FDS_SPLIT) {
    GByteArray *rest;

    /* the rest of that PING and the first byte of a third: the producer
     * never again has nothing left to read */
    make_simple (msg, GPUSHARE_MSG_PING);
    rest = build (msg, 0);
    g_byte_array_append (rest, rest->data, 1);
    g_byte_array_remove_index (rest, 0);
    raw_send_bytes (&raw, rest, NULL, 0);
  }

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
/* 4. Unknown message types are skipped, with whatever they carry */

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
  /* the slots, then the ring's side memory (minor 10), sealed the same */
  fail_unless (msg->u.slots.side_pages > 0);
  fail_unless_equals_int (n_fds, announce->layout.n_slots + 1);
  for (i = 0; i < n_fds; i++) {
    struct stat st;
    gint seals = fcntl (fds[i], F_GET_SEALS);

    /* what a consumer relies on to map without fear of SIGBUS */
    fail_unless (fstat (fds[i], &st) == 0 && S_ISREG (st.st_mode));
    fail_unless_equals_uint64 (st.st_size, i < announce->layout.n_slots ?
        msg->u.slots.slot_size : (guint64) announce->layout.n_slots *
        msg->u.slots.side_pages * GPUSHARE_SIDE_PAGE);
    fail_unless (seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
        (F_SEAL_SHRINK | F_SEAL_GROW), "slot %u is not sealed", i);
  }
  gpushare_close_fds (fds, n_fds);

  fail_unless (raw_send_mapped (&raw, msg, epoch));
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

/* META goes to consumers of minor 4 and later, before each FRAME whose
 * buffer has metas, with that FRAME's sequence; a consumer of minor 3
 * never gets one (it would take it for an unknown type, but need not) */
static GstPadProbeReturn
add_roi_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));

  gst_buffer_add_video_region_of_interest_meta (buf, "face", 1, 2, 3, 4);
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_meta_by_minor)
{
  guint minor = __i__ ? GPUSHARE_VERSION_MINOR : 3;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0, i;
  GstPad *pad;
  RawPeer raw;
  Scene s;

  scene_start (&s, FALSE);
  pad = gst_element_get_static_pad (s.sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, add_roi_probe, NULL, NULL);
  gst_object_unref (pad);
  scene_raw_client (&s, &raw, announce);
  make_accept (msg, announce->instance);
  msg->u.accept.schema_minor = minor;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  gpushare_close_fds (fds, n_fds);
  fail_unless (raw_send_mapped (&raw, msg, announce->layout.epoch));

  for (i = 0; i < 3; i++) {
    guint64 meta_seq = 0;
    GpuShareFrame f;

    if (minor >= 4) {
      raw_expect (&raw, GPUSHARE_MSG_META, msg, NULL, NULL);
      meta_seq = msg->u.meta.sequence;
      fail_unless_equals_int (msg->u.meta.n_entries, 1);
      fail_unless (gpushare_frame_meta_check_meta (&msg->u.meta, NULL));
    }
    /* minor 3: the FRAME comes with nothing before it */
    raw_expect (&raw, GPUSHARE_MSG_FRAME, msg, NULL, NULL);
    f = msg->u.frame;
    if (minor >= 4)
      fail_unless_equals_uint64 (meta_seq, f.sequence);
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_RELEASE;
    msg->u.release.epoch = f.epoch;
    msg->u.release.slot = f.slot;
    msg->u.release.generation = f.generation;
    msg->u.release.sequence = f.sequence;
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  }
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  assert_no_error (s.producer);
  raw_clear (&raw);
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* An observer (OBSERVE instead of ACCEPT) beside a streaming consumer:
 * it gets STATUS with the producer's stats and settings, is neither
 * listed among the consumers nor counted in num-clients, and neither its
 * coming nor its going is a client-connected or client-removed, nor is a
 * fifth observer's refusal.  An OBSERVE with an interval out of range
 * drops that connection alone. */
GST_START_TEST (test_observer)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GstStructure *st;
  const GValue *clients;
  RawPeer raw, bad, more[4];
  gint num = -1;
  guint observers = 0, i;
  Scene s;

  scene_start (&s, TRUE);
  scene_raw_client (&s, &raw, NULL);
  msg->type = GPUSHARE_MSG_OBSERVE;
  msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.observe.schema_minor = GPUSHARE_VERSION_MINOR;
  msg->u.observe.interval_ms = GPUSHARE_MIN_OBSERVE_INTERVAL;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_STATUS, msg, NULL, NULL);
  st = gst_structure_from_string (msg->u.status.text, NULL);
  fail_unless (st != NULL, "a status that does not parse");
  fail_unless (gst_structure_has_name (st, "application/x-gpushare-status"));
  fail_unless (gst_structure_get_int (st, "num-clients", &num));
  fail_unless_equals_int (num, 1);
  fail_unless (gst_structure_get_uint (st, "observers", &observers));
  fail_unless_equals_int (observers, 1);
  fail_unless (gst_structure_get_string (st, "policy") != NULL);
  clients = gst_structure_get_value (st, "clients");
  fail_unless_equals_int (gst_value_array_get_size (clients), 1);
  gst_structure_free (st);
  /* and again, every interval */
  raw_expect (&raw, GPUSHARE_MSG_STATUS, msg, NULL, NULL);
  g_object_get (s.sink, "num-clients", &num, NULL);
  fail_unless_equals_int (num, 1);

  /* four observers at most: a fifth is told so, and is no consumer
   * removed */
  for (i = 0; i < G_N_ELEMENTS (more); i++) {
    scene_raw_client (&s, &more[i], NULL);
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_OBSERVE;
    msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
    msg->u.observe.interval_ms = 1000;
    fail_unless (raw_send_msg (&more[i], msg, NULL, 0));
    if (i < G_N_ELEMENTS (more) - 1) {
      raw_expect (&more[i], GPUSHARE_MSG_STATUS, msg, NULL, NULL);
    } else {
      GArray *codes = raw_drain (&more[i]);

      fail_unless_equals_int (codes->len, 1);
      fail_unless_equals_int (g_array_index (codes, guint32, 0),
          GPUSHARE_ERR_TOO_MANY_CLIENTS);
      g_array_unref (codes);
    }
  }
  for (i = 0; i < G_N_ELEMENTS (more); i++)
    raw_clear (&more[i]);
  g_usleep (200 * 1000);
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);

  /* hostile: an interval out of range */
  scene_raw_client (&s, &bad, NULL);
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_OBSERVE;
  msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.observe.interval_ms = 1000;
  {
    GByteArray *b = build (msg, 0);

    /* interval_ms, as the codec would never write it */
    patch32 (b, GPUSHARE_HEADER_SIZE + 4, 1);
    fail_unless (raw_send_bytes (&bad, b, NULL, 0));
  }
  g_array_unref (raw_drain (&bad));
  raw_clear (&bad);
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");

  make_simple (msg, GPUSHARE_MSG_GOODBYE);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_clear (&raw);
  g_usleep (200 * 1000);
  /* the observer's goodbye removed no consumer */
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  fail_unless (consumer_wait (s.consumer, 10), "the consumer was disturbed");
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* A raw consumer through its handshake: it maps nothing, holds what the
 * producer sends it, and its process (this one) lives on */
static void
raw_streaming_consumer (Scene * s, RawPeer * raw)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);

  scene_raw_client (s, raw, announce);
  raw_stream (raw, announce->instance);
  g_free (announce);
}

/* A consumer that streams, then shuts its socket's reading side and goes
 * on writing (a PING every 300 ms, so that its heartbeat holds): every
 * send of the producer's fails, and the producer kept it without end,
 * nothing sent to it, waiting for it (a lossless producer that made a new
 * ring waited for its MAPPED for ever).  It is dropped as "hangup" within
 * GPUSHARE_CONN_HANGUP_GRACE_MS of the first failed send now; the real
 * consumer streams on. */
GST_START_TEST (test_consumer_stops_reading)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint64 until;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  raw_streaming_consumer (&s, &raw);
  fail_unless (client_log_wait (&s.log, FALSE, 2));
  fail_unless (shutdown (raw.fd, SHUT_RD) == 0);
  until = g_get_monotonic_time () + 3 * (GPUSHARE_CONN_HANGUP_GRACE_MS +
      300) * 1000ll;
  while (client_log_n_removed (&s.log) == 0 && g_get_monotonic_time () < until) {
    make_simple (msg, GPUSHARE_MSG_PING);
    raw_send_msg (&raw, msg, NULL, 0);
    g_usleep (300 * 1000);
  }
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "hangup");
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);
  raw_clear (&raw);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* A consumer that streams, then sends OBSERVE, is dropped (OBSERVE is an
 * answer to ANNOUNCE only), and its going is a consumer's: client-removed
 * with reason protocol, num-clients one less.  Before, the OBSERVE marked
 * it an observer on its way out: applications kept a ghost consumer. */
GST_START_TEST (test_consumer_observes_late)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint num = -1;
  RawPeer raw;
  Scene s;

  scene_start (&s, FALSE);
  raw_streaming_consumer (&s, &raw);
  fail_unless (client_log_wait (&s.log, FALSE, 1));
  g_object_get (s.sink, "num-clients", &num, NULL);
  fail_unless_equals_int (num, 1);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_OBSERVE;
  msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.observe.schema_minor = GPUSHARE_VERSION_MINOR;
  msg->u.observe.interval_ms = 1000;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fail_unless (client_log_wait (&s.log, TRUE, 1),
      "the consumer went without client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");
  g_object_get (s.sink, "num-clients", &num, NULL);
  fail_unless_equals_int (num, 0);
  raw_clear (&raw);
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* test_hangups_at_once's other process: n raw consumers that stream; it
 * says so on ready, closes them all once go says so, then lives on until
 * it is killed */
static void
hangups_child (const gchar * path, guint n, gint ready, gint go)
{
  RawPeer *raw = g_new0 (RawPeer, n);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint8 byte = 0;
  guint i;

  for (i = 0; i < n; i++) {
    raw_init (&raw[i], raw_connect (path));
    if (raw_recv (&raw[i], msg, NULL, NULL, TIMEOUT_MS) != RAW_MSG
        || msg->type != GPUSHARE_MSG_ANNOUNCE)
      _exit (3);
    raw_stream (&raw[i], msg->u.announce.instance);
  }
  if (write (ready, &byte, 1) != 1 || read (go, &byte, 1) != 1)
    _exit (4);
  for (i = 0; i < n; i++)
    raw_clear (&raw[i]);
  for (;;)
    pause ();
}

/* Consumers whose sockets close while their process lives on are given a
 * moment for their pidfd to say they exited (docs/design.md, "Quarantine")
 * without holding up the producer's control thread: 40 of them, of
 * another process, hanging up at once, a consumer that connects right
 * after is answered at once, and the real consumer streams on.  The wait
 * used to be a poll () on that thread, 100 ms each: 4 s here, during
 * which nobody was admitted, no RELEASE read and no PING sent. */
GST_START_TEST (test_hangups_at_once)
{
  const guint n = 40;
  gint ready[2], go[2];
  guint8 byte = 0;
  RawPeer late;
  gint64 start, took;
  pid_t kid;
  guint i;
  Scene s;

  /* scene_start (), with room for them all; a ring that does not grow
   * (raw consumers do not map a new one) and no heartbeat (they do not
   * answer PINGs) */
  memset (&s, 0, sizeof (s));
  s.path = socket_path ("scene.sock");
  s.producer = producer_new (s.path, &s.sink);
  g_object_set (s.sink, "max-clients", 64, "max-pending", 64, "ring-size", 64,
      "heartbeat-interval", 0, NULL);
  client_log_init (&s.log, s.sink);
  producer_start (s.producer, s.sink);
  s.consumer = consumer_new (s.path, FALSE);
  consumer_start (s.consumer);
  fail_unless (consumer_wait (s.consumer, 3), "the consumer gets nothing");
  fail_unless (pipe (ready) == 0 && pipe (go) == 0);
  kid = fork ();
  fail_if (kid < 0);
  if (kid == 0)
    hangups_child (s.path, n, ready[1], go[0]);
  fail_unless (read (ready[0], &byte, 1) == 1);
  fail_unless (client_log_wait (&s.log, FALSE, n + 1),
      "%u consumers connected, %u removed", s.log.connected,
      client_log_n_removed (&s.log));
  fail_unless (write (go[1], &byte, 1) == 1);
  start = g_get_monotonic_time ();
  scene_raw_client (&s, &late, NULL);
  took = g_get_monotonic_time () - start;
  fail_unless (took < 1000 * 1000, "a new consumer waited %" G_GINT64_FORMAT
      " ms for its ANNOUNCE", took / 1000);
  raw_clear (&late);
  /* every one of them goes, as a hang-up, its slots quarantined */
  fail_unless (client_log_wait (&s.log, TRUE, n));
  for (i = 0; i < n; i++)
    fail_unless_equals_string (client_log_removed_nick (&s.log, i), "hangup");
  fail_unless (consumer_wait (s.consumer, 10), "the consumer was disturbed");
  assert_no_error (s.producer);
  kill_and_reap (kid);
  for (i = 0; i < 2; i++) {
    close (ready[i]);
    close (go[i]);
  }
  scene_stop (&s);
}

GST_END_TEST;

/* scene_start () without a consumer and without a heartbeat: the raw
 * consumers answer no PING, and a slow build (the sanitizers) takes
 * seconds over the rings replaced */
static void
scene_start_quiet (Scene * s)
{
  memset (s, 0, sizeof (*s));
  s->path = socket_path ("scene.sock");
  s->producer = producer_new (s->path, &s->sink);
  g_object_set (s->sink, "heartbeat-interval", 0, NULL);
  client_log_init (&s->log, s->sink);
  producer_start (s->producer, s->sink);
}

/* A streaming raw consumer reads up to its first FRAME (mapping the SLOTS
 * of a ring the last one left quarantined, as a consumer does), then says
 * GOODBYE with that frame still read (a quarantine).  0, or the step that
 * failed: 1 a receive, 2 its MAPPED, 3 the GOODBYE */
static gint
stream_then_goodbye_held (RawPeer * raw, GpuShareMsg * msg)
{
  GpuShareFrame f;

  for (;;) {
    gint fds[GPUSHARE_MAX_FDS];
    guint n_fds = 0;

    if (raw_recv (raw, msg, fds, &n_fds, TIMEOUT_MS) != RAW_MSG)
      return 1;
    if (msg->type == GPUSHARE_MSG_FRAME)
      break;
    gpushare_close_fds (fds, n_fds);
    if (msg->type == GPUSHARE_MSG_SLOTS
        && !raw_send_mapped (raw, msg, msg->u.slots.epoch))
      return 2;
  }
  f = msg->u.frame;
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_GOODBYE;
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  msg->u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
  msg->u.goodbye.last_sequence = f.sequence;
  return raw_send_msg (raw, msg, NULL, 0) ? 0 : 3;
}

/* A process whose consumers leave slots quarantined again and again (a
 * GOODBYE that says its buffers still read the slots it holds, then a new
 * connection, and again) costs a new ring each time: after 4 within 10 s
 * it is refused, with the reason, for the rest of that time.  Before,
 * nothing limited it (60 in 8 s pinned 79 MiB at VGA). */
GST_START_TEST (test_quarantine_burst_refused)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  RawPeer raw;
  GArray *codes;
  guint i, n_errors;
  Scene s;

  scene_start_quiet (&s);
  for (i = 0; i < 4; i++) {
    raw_streaming_consumer (&s, &raw);
    fail_unless_equals_int (stream_then_goodbye_held (&raw, msg), 0);
    raw_clear (&raw);
    fail_unless (client_log_wait (&s.log, TRUE, i + 1));
  }
  raw_init (&raw, raw_connect (s.path));
  codes = raw_drain (&raw);
  n_errors = codes->len;
  fail_unless_equals_int (n_errors, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TOO_MANY_CLIENTS);
  g_array_unref (codes);
  raw_clear (&raw);
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* The same bound, for a process that opened its connections first (the
 * burst was judged only as a process connected): 8 consumers of this
 * process stream, then each in turn says GOODBYE with its frame still
 * read.  After the 4th quarantine counted its other consumers are refused
 * at once (TOO_MANY_CLIENTS), not one more ring for each.  Before, each of
 * the 8 replaced the ring. */
GST_START_TEST (test_quarantine_burst_opened_before)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  RawPeer raw[8];
  GstStructure *st;
  guint64 replaced = 0;
  guint i, held = 0;
  Scene s;

  /* scene_start_quiet (), with a ring that does not grow as they come
   * (raw consumers do not map a new one while they wait) */
  memset (&s, 0, sizeof (s));
  s.path = socket_path ("scene.sock");
  s.producer = producer_new (s.path, &s.sink);
  g_object_set (s.sink, "heartbeat-interval", 0, "ring-size", 32, NULL);
  client_log_init (&s.log, s.sink);
  producer_start (s.producer, s.sink);
  for (i = 0; i < 8; i++)
    raw_streaming_consumer (&s, &raw[i]);
  fail_unless (client_log_wait (&s.log, FALSE, 8), "%u consumers connected, "
      "%u removed (first: %s)", s.log.connected, client_log_n_removed (&s.log),
      client_log_n_removed (&s.log) ? client_log_removed_nick (&s.log, 0) :
      "none");
  /* each goes before the next one says its GOODBYE: as a goodbye, or
   * refused already (a FRAME queued before its refusal may still be read
   * and its GOODBYE sent: the producer no longer reads it) */
  for (i = 0; i < 8; i++) {
    stream_then_goodbye_held (&raw[i], msg);
    fail_unless (client_log_wait (&s.log, TRUE, i + 1));
  }
  /* goodbyes, then refusals.  A goodbye whose frame lay in a ring already
   * replaced costs no new ring and is not counted: more than the burst may
   * go as goodbyes, never a goodbye after a refusal */
  for (i = 0; i < 8; i++) {
    const gchar *nick = client_log_removed_nick (&s.log, i);

    if (g_str_equal (nick, "goodbye")) {
      fail_unless_equals_int (held, i);
      held++;
    } else {
      fail_unless_equals_string (nick, "too-many-clients");
    }
    raw_clear (&raw[i]);
  }
  fail_unless (held >= GPUSHARE_SERVER_QUARANTINE_BURST && held < 8,
      "%u goodbyes", held);
  g_object_get (s.sink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "rings-replaced", &replaced);
  gst_structure_free (st);
  fail_unless (replaced <= GPUSHARE_SERVER_QUARANTINE_BURST + 1,
      "%" G_GUINT64_FORMAT " rings replaced", replaced);
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
}

GST_END_TEST;

/* a forked child of test_unread_descriptors: for each byte on go, one
 * connection: its first message read (2 back on done when it is a
 * refusal), then ACCEPT and GOODBYE at once, and nothing more read, the
 * socket kept open: its SLOTS' descriptors stay in it (0 back on done) */
static void
unread_child (const gchar * path, gint go, gint done)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint8 byte;

  while (read (go, &byte, 1) == 1) {
    RawPeer *raw = g_new0 (RawPeer, 1);
    guint8 how = 3;

    raw_init (raw, raw_connect (path));
    if (raw_recv (raw, msg, NULL, NULL, TIMEOUT_MS) == RAW_MSG) {
      if (msg->type == GPUSHARE_MSG_ERROR)
        how = msg->u.error.code == GPUSHARE_ERR_TOO_MANY_CLIENTS ? 2 : 4;
      else if (msg->type == GPUSHARE_MSG_ANNOUNCE) {
        GByteArray *both;

        make_accept (msg, msg->u.announce.instance);
        both = build (msg, 0);
        make_simple (msg, GPUSHARE_MSG_GOODBYE);
        {
          GByteArray *bye = build (msg, 0);

          g_byte_array_append (both, bye->data, bye->len);
          g_byte_array_unref (bye);
        }
        how = raw_send_bytes (raw, both, NULL, 0) ? 0 : 5;
      }
    }
    /* never read again, never closed: the RawPeer is left as it is */
    if (write (done, &how, 1) != 1)
      _exit (6);
  }
  _exit (0);
}

/* A consumer that sends ACCEPT and GOODBYE at once and never reads its
 * socket, kept open, leaves the SLOTS' descriptors in it: the kernel counts
 * them against the producer's uid until they are read or the socket
 * closed, and enough such connections (29 at a limit of 256 descriptors)
 * had every send of descriptors fail, to every consumer.  The connections
 * of a uid that closed with bytes of ours unread count now: past
 * GPUSHARE_SERVER_MAX_LINGERING, a new one of that uid is refused
 * (TOO_MANY_CLIENTS) until one is drained; once the process that holds
 * them is gone, that uid is admitted again, and the real consumer
 * streams on throughout. */
GST_START_TEST (test_unread_descriptors)
{
  guint i, taken = 0, refused = 0, n = GPUSHARE_SERVER_MAX_LINGERING + 2;
  gint go[2], done[2];
  RawPeer late;
  pid_t kid;
  Scene s;

  fail_unless (pipe (go) == 0 && pipe (done) == 0);
  scene_start (&s, TRUE);
  kid = fork ();
  fail_if (kid < 0);
  if (kid == 0)
    unread_child (s.path, go[0], done[1]);
  for (i = 0; i < n; i++) {
    guint8 how = 99;

    fail_unless (write (go[1], &how, 1) == 1);
    fail_unless (read (done[0], &how, 1) == 1);
    fail_unless (how == 0 || how == 2, "connection %u: step %u", i, how);
    if (how == 0) {
      taken++;
      /* its GOODBYE seen, its socket closed here */
      fail_unless (client_log_wait (&s.log, TRUE, taken));
    } else {
      refused++;
    }
  }
  fail_unless_equals_int (taken, GPUSHARE_SERVER_MAX_LINGERING);
  fail_unless_equals_int (refused, n - GPUSHARE_SERVER_MAX_LINGERING);
  assert_consumer_alive (s.consumer);
  /* the process that held them is gone: admitted again */
  kill_and_reap (kid);
  scene_raw_client (&s, &late, NULL);
  raw_clear (&late);
  assert_no_error (s.producer);
  for (i = 0; i < 2; i++) {
    close (go[i]);
    close (done[i]);
  }
  scene_stop (&s);
}

GST_END_TEST;

/* a forked child of test_quarantine_burst_of_a_uid: one consumer that
 * streams, then says GOODBYE with its slots still read (a quarantine);
 * exits 2 when refused, 0 when it streamed */
static void
quarantine_child (const gchar * path)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;
  gint step;
  RawPeer raw;

  raw_init (&raw, raw_connect (path));
  if (raw_recv (&raw, msg, fds, &n_fds, TIMEOUT_MS) != RAW_MSG)
    _exit (3);
  if (msg->type == GPUSHARE_MSG_ERROR)
    _exit (msg->u.error.code == GPUSHARE_ERR_TOO_MANY_CLIENTS ? 2 : 4);
  if (msg->type != GPUSHARE_MSG_ANNOUNCE)
    _exit (5);
  raw_stream (&raw, msg->u.announce.instance);
  step = stream_then_goodbye_held (&raw, msg);
  _exit (step ? 5 + step : 0);
}

/* The bound of test_quarantine_burst_refused is a process's: a process
 * that forks a child for each quarantine is a new pid each time, and
 * replaced the ring as often as it liked.  The processes of one uid are
 * bounded too: 20 children one after the other, each a new pid, each
 * leaves its slots quarantined; the 17th (GPUSHARE_SERVER_QUARANTINE_BURST_UID
 * + 1) and those after it are refused with TOO_MANY_CLIENTS. */
GST_START_TEST (test_quarantine_burst_of_a_uid)
{
  guint i, streamed = 0, refused = 0, n = 20;
  Scene s;

  scene_start_quiet (&s);
  for (i = 0; i < n; i++) {
    pid_t pid = fork ();
    gint status = 0;

    fail_if (pid < 0);
    if (pid == 0)
      quarantine_child (s.path);
    fail_unless (waitpid (pid, &status, 0) == pid);
    fail_unless (WIFEXITED (status), "child %u did not exit", i);
    if (WEXITSTATUS (status) == 0) {
      streamed++;
      /* its going is seen before the next one comes */
      fail_unless (client_log_wait (&s.log, TRUE, streamed));
    } else {
      fail_unless_equals_int (WEXITSTATUS (status), 2);
      refused++;
    }
  }
  fail_unless_equals_int (streamed, GPUSHARE_SERVER_QUARANTINE_BURST_UID);
  fail_unless_equals_int (refused, n - GPUSHARE_SERVER_QUARANTINE_BURST_UID);
  assert_no_error (s.producer);
  scene_stop (&s);
}

GST_END_TEST;

/* a forked child of test_gone_holders_of_a_uid: one consumer of the
 * host-test memory (whose rings retire here, as legacy CUDA IPC's do)
 * that maps its ring and hangs up without a word, then lives on until it
 * is killed.  Says on done how it went: 0 it took the ring, 2 refused
 * with RESOURCE, others a step that failed */
static void
gone_holder_child (const gchar * path, gint done)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;
  guint8 how = 3;
  RawPeer raw;

  raw_init (&raw, raw_connect (path));
  if (raw_recv (&raw, msg, NULL, NULL, TIMEOUT_MS) == RAW_MSG
      && msg->type == GPUSHARE_MSG_ANNOUNCE) {
    make_accept (msg, msg->u.announce.instance);
    msg->u.accept.mem_type = GPUSHARE_MEM_HOST_TEST;
    how = 4;
    if (raw_send_msg (&raw, msg, NULL, 0)) {
      RawResult r;

      while ((r = raw_recv (&raw, msg, fds, &n_fds, TIMEOUT_MS)) == RAW_MSG
          && msg->type != GPUSHARE_MSG_SLOTS && msg->type != GPUSHARE_MSG_ERROR)
        gpushare_close_fds (fds, n_fds);
      if (r == RAW_MSG && msg->type == GPUSHARE_MSG_ERROR)
        how = msg->u.error.code == GPUSHARE_ERR_RESOURCE ? 2 : 5;
      else if (r == RAW_MSG) {
        gpushare_close_fds (fds, n_fds);
        how = raw_send_mapped (&raw, msg, msg->u.slots.epoch) ? 0 : 6;
      }
    }
  }
  /* hangs up without a word */
  raw_clear (&raw);
  if (write (done, &how, 1) != 1)
    _exit (7);
  for (;;)
    pause ();
}

/* A process that forks children that each take the ring of a retired
 * kind (legacy CUDA IPC's; here the test build's host-test memory, whose
 * rings retire likewise) and hang up without a word while they live: the
 * producer keeps a pidfd of each, to free the ring once they exit, and
 * kept them without end.  The 17th child of the uid
 * (GPUSHARE_SERVER_MAX_GONE_HOLDERS + 1) and those after it are refused
 * with RESOURCE, the producer's descriptors grow by one a child at most;
 * once children exit, another child takes the ring again; the real
 * consumer streams on. */
GST_START_TEST (test_gone_holders_of_a_uid)
{
  guint i, taken = 0, refused = 0, n = 20, fds = 0;
  pid_t kids[21];
  gint done[2];
  Scene s;

  fail_unless (pipe (done) == 0);
  scene_start (&s, TRUE);
  for (i = 0; i < n + 1; i++) {
    guint8 how = 99;

    if (i == n) {
      /* four of them exit: four pidfds fewer, room for one more */
      for (guint k = 0; k < 4; k++) {
        kill_and_reap (kids[k]);
        kids[k] = 0;
      }
    }
    kids[i] = fork ();
    fail_if (kids[i] < 0);
    if (kids[i] == 0)
      gone_holder_child (s.path, done[1]);
    fail_unless (read (done[0], &how, 1) == 1);
    fail_unless (how == 0 || how == 2, "child %u: step %u failed", i, how);
    fail_if (how == 2 && i == n, "refused after four children exited");
    taken += how == 0;
    refused += how == 2;
    /* its going (its hang-up, or its refusal) is seen before the next
     * one comes */
    fail_unless (client_log_wait (&s.log, TRUE, i + 1));
    fail_unless_equals_string (client_log_removed_nick (&s.log, i),
        how == 0 ? "hangup" : "resource");
    /* the ring was made for the first one: counted from there */
    if (i == 0)
      fds = count_fds_settled ();
  }
  fail_unless_equals_int (taken, GPUSHARE_SERVER_MAX_GONE_HOLDERS + 1);
  fail_unless_equals_int (refused, n - GPUSHARE_SERVER_MAX_GONE_HOLDERS);
  /* the pidfds of 16 children at most (one of them the first's) */
  fail_unless (count_fds_settled () < fds + GPUSHARE_SERVER_MAX_GONE_HOLDERS,
      "%u descriptors open, %u after the first child", count_fds (), fds);
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);
  for (i = 0; i < n + 1; i++)
    if (kids[i] > 0) {
      kill_and_reap (kids[i]);
    }
  close (done[0]);
  close (done[1]);
  scene_stop (&s);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 5. The frame lane (minor 7), from a raw consumer: what a consumer that
 * asks for one gets, and one that writes its lane's tail as it likes or
 * leaves the lane full, dropped alone */

/* the name the sink gives its lanes' memfds (gpusharelane.c) */
#define LANE_MEMFD_NAME "gpushare-lane"

/* CAPS that raw_accept_with () took after the LANE: each has its MARK in
 * the lane */
static guint accept_caps_after_lane;

/* Sends ACCEPT of schema minor with flags, and reads every message up to
 * SLOTS (whose fds it closes), a PING aside: LANE may come before SLOTS,
 * and CAPS (the producer's caps or liveness may change at any frame, as
 * its pipeline starts), nothing else may.  The LANE's one fd goes to
 * *lane_fd (-1: no LANE), what it says to *info.  Returns the SLOTS'
 * epoch. */
static guint64
raw_accept_with (RawPeer * raw, const GpuShareAnnounce * announce,
    guint minor, guint32 flags, gint * lane_fd, GpuShareLaneInfo * info)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;
  guint64 epoch;

  *lane_fd = -1;
  accept_caps_after_lane = 0;
  make_accept (msg, announce->instance);
  msg->u.accept.schema_minor = minor;
  msg->u.accept.flags = flags;
  fail_unless (raw_send_msg (raw, msg, NULL, 0));
  for (;;) {
    fail_unless_equals_int (raw_recv (raw, msg, fds, &n_fds, TIMEOUT_MS),
        RAW_MSG);
    if (msg->type == GPUSHARE_MSG_SLOTS)
      break;
    if (msg->type == GPUSHARE_MSG_PING)
      continue;
    if (msg->type == GPUSHARE_MSG_CAPS) {
      accept_caps_after_lane += *lane_fd >= 0;
      continue;
    }
    fail_unless (msg->type == GPUSHARE_MSG_LANE, "%s between ACCEPT and "
        "SLOTS", gpushare_msg_type_to_string (msg->type));
    fail_unless (*lane_fd < 0, "a second LANE");
    fail_unless_equals_int (n_fds, 1);
    *lane_fd = fds[0];
    *info = msg->u.lane;
  }
  gpushare_close_fds (fds, n_fds);
  epoch = msg->u.slots.epoch;
  fail_unless (raw_send_mapped (raw, msg, epoch));
  g_free (msg);
  return epoch;
}

/* The producer's control thread held up past a consumer's handshake
 * deadline (device work for another consumer, a busy host) while that
 * consumer's ACCEPT waited on the socket, unread: the step was on time,
 * and the consumer gets its slots and streams.  Before, it was dropped
 * first ("handshake timed out in state announced", as one consumer was
 * while 80 processes started on one GPU).  The control thread sleeps
 * 800 ms at its housekeeping (GPUSHARE_TEST_SLOW_AT), the deadline 300 ms
 * after ANNOUNCE, the ACCEPT sent at 350. */
GST_START_TEST (test_handshake_reply_unread)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareLaneInfo info;
  gint lane_fd;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  g_object_set (s.sink, "handshake-timeout", 300, NULL);
  scene_raw_client (&s, &raw, announce);
  g_setenv ("GPUSHARE_TEST_SLOW_AT", "sink:housekeeping:800", TRUE);
  g_usleep (350 * 1000);
  g_unsetenv ("GPUSHARE_TEST_SLOW_AT");
  raw_accept_with (&raw, announce, GPUSHARE_VERSION_MINOR,
      GPUSHARE_ACCEPT_FLAG_LANE, &lane_fd, &info);
  fail_unless (lane_fd >= 0, "no LANE before SLOTS");
  close (lane_fd);
  fail_unless (client_log_wait (&s.log, FALSE, 2), "no client-connected");
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);

  raw_clear (&raw);
  scene_stop (&s);
  g_free (announce);
}

GST_END_TEST;

/* what a consumer maps without fear: a memfd of the size LANE says,
 * sealed against shrinking, growing and further seals, and writable (the
 * consumer writes its tail in it) */
static void
assert_lane_fd (gint fd, const GpuShareLaneInfo * info)
{
  gchar *link = g_strdup_printf ("/proc/self/fd/%d", fd);
  gchar *target = g_file_read_link (link, NULL);
  gint seals = fcntl (fd, F_GET_SEALS);
  struct stat st;

  fail_unless_equals_int (info->n_entries, GPUSHARE_LANE_ENTRIES);
  fail_unless_equals_int (info->entry_size, GPUSHARE_LANE_ENTRY_SIZE);
  fail_unless_equals_uint64 (info->size,
      gpushare_lane_size (GPUSHARE_LANE_ENTRIES));
  fail_unless (target && g_str_has_prefix (target, "/memfd:"),
      "the lane is %s, no memfd", target);
  fail_unless (fstat (fd, &st) == 0 && S_ISREG (st.st_mode));
  fail_unless_equals_uint64 (st.st_size, info->size);
  fail_unless (seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW |
              F_SEAL_SEAL)) == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
      "the lane's seals are %#x", seals);
  fail_unless ((seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) == 0,
      "the consumer cannot write its tail: seals %#x", seals);
  g_free (target);
  g_free (link);
}

/* the next entry of the lane, within timeout_ms, asleep on its bell
 * meanwhile as the src's streaming thread sleeps (so the producer's
 * doorbell is exercised too) */
static GpuShareLaneResult
lane_wait_pop (GpuShareLane * lane, GpuShareLaneEntry * e, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000ll;

  for (;;) {
    guint32 bell = gpushare_lane_bell (lane);
    GpuShareLaneResult res = gpushare_lane_pop (lane, e, NULL);
    gint64 left = deadline - g_get_monotonic_time ();

    if (res != GPUSHARE_LANE_EMPTY || left <= 0)
      return res;
    gpushare_lane_sleep (lane, bell, left);
  }
}

static void
send_release (RawPeer * raw, const GpuShareFrame * f)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

  msg->type = GPUSHARE_MSG_RELEASE;
  msg->u.release.epoch = f->epoch;
  msg->u.release.slot = f->slot;
  msg->u.release.generation = f->generation;
  msg->u.release.sequence = f->sequence;
  fail_unless (raw_send_msg (raw, msg, NULL, 0));
  g_free (msg);
}

static gboolean
is_ordered (GpuShareMsgType type)
{
  return type == GPUSHARE_MSG_CAPS || type == GPUSHARE_MSG_META
      || type == GPUSHARE_MSG_EVENT || type == GPUSHARE_MSG_EOS;
}

/* A consumer that asks for a lane (ACCEPT flag LANE, minor 7) gets LANE
 * and its sealed memfd before SLOTS, and from its MAPPED on reads every
 * frame there: never a FRAME on the socket, and a MARK (1, 2, ...) in the
 * lane where each ordered message of the socket takes its place, here the
 * META before its frame.  Its RELEASEs on the socket give the slots back:
 * it streams on.  One that does not ask, or asks at minor 6, gets no LANE
 * and its FRAMEs on the socket. */
GST_START_TEST (test_lane_raw_consumer)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareLaneInfo info;
  GpuShareLane *lane;
  GError *error = NULL;
  guint64 epoch, marks = 0, n_ordered = 0, last_seq = 0;
  GpuShareMsgType at_mark = 0;  /* the message of the last MARK */
  guint64 meta_seq = 0;
  gboolean after_mark = FALSE;
  guint frames = 0, k;
  gint lane_fd;
  GstPad *pad;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  pad = gst_element_get_static_pad (s.sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, add_roi_probe, NULL, NULL);
  gst_object_unref (pad);
  scene_raw_client (&s, &raw, announce);
  epoch = raw_accept_with (&raw, announce, GPUSHARE_VERSION_MINOR,
      GPUSHARE_ACCEPT_FLAG_LANE, &lane_fd, &info);
  fail_unless (lane_fd >= 0, "no LANE before SLOTS");
  /* their MARKs come first in the lane */
  n_ordered = accept_caps_after_lane;
  assert_lane_fd (lane_fd, &info);
  lane = gpushare_lane_open (lane_fd, &info, &error);
  fail_unless (lane != NULL, "%s", error ? error->message : "?");
  fail_unless (client_log_wait (&s.log, FALSE, 2), "no client-connected");

  while (frames < 3) {
    GpuShareLaneEntry e;
    GpuShareLaneResult res = lane_wait_pop (lane, &e, TIMEOUT_MS);
    gint64 now = g_get_monotonic_time ();

    fail_unless (res == GPUSHARE_LANE_OK, "lane: %s",
        gpushare_lane_result_to_string (res));
    if (e.kind == GPUSHARE_LANE_ENTRY_MARK) {
      fail_unless_equals_uint64 (e.mark, marks + 1);
      marks = e.mark;
      /* its message is the marks-th ordered one of the socket, sent
       * before the MARK was written */
      while (n_ordered < marks) {
        fail_unless_equals_int (raw_recv (&raw, msg, NULL, NULL, TIMEOUT_MS),
            RAW_MSG);
        fail_if (msg->type == GPUSHARE_MSG_FRAME, "a FRAME on the socket "
            "of a consumer that reads a lane");
        fail_if (msg->type == GPUSHARE_MSG_ERROR, "ERROR %s",
            msg->u.error.text);
        if (!is_ordered (msg->type))
          continue;
        n_ordered++;
        at_mark = msg->type;
        if (msg->type == GPUSHARE_MSG_META) {
          meta_seq = msg->u.meta.sequence;
          fail_unless_equals_int (msg->u.meta.n_entries, 1);
          fail_unless (gpushare_frame_meta_check_meta (&msg->u.meta, NULL));
        }
      }
      after_mark = TRUE;
      continue;
    }
    fail_unless_equals_int (e.kind, GPUSHARE_LANE_ENTRY_FRAME);
    /* right after the MARK of its META */
    fail_unless (after_mark && at_mark == GPUSHARE_MSG_META,
        "frame %" G_GUINT64_FORMAT " without the MARK of its META before it",
        e.frame.sequence);
    fail_unless_equals_uint64 (meta_seq, e.frame.sequence);
    fail_unless (e.frame.sequence > last_seq);
    fail_unless_equals_uint64 (e.frame.epoch, epoch);
    fail_unless (e.frame.slot < announce->layout.n_slots);
    fail_unless (e.written_us > 0 && (gint64) e.written_us <= now,
        "written at %" G_GUINT64_FORMAT ", now %" G_GINT64_FORMAT,
        e.written_us, now);
    last_seq = e.frame.sequence;
    after_mark = FALSE;
    send_release (&raw, &e.frame);
    frames++;
  }
  /* nothing on the socket was a FRAME */
  while (raw_recv (&raw, msg, NULL, NULL, 50) == RAW_MSG)
    fail_if (msg->type == GPUSHARE_MSG_FRAME || msg->type ==
        GPUSHARE_MSG_ERROR, "%s on the socket",
        gpushare_msg_type_to_string (msg->type));
  fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_consumer_alive (s.consumer);
  gpushare_lane_free (lane);
  raw_clear (&raw);
  fail_unless (client_log_wait (&s.log, TRUE, 1));
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "hangup");

  /* no flag; the flag at minor 6: the socket, as before */
  for (k = 0; k < 2; k++) {
    scene_raw_client (&s, &raw, announce);
    epoch = raw_accept_with (&raw, announce, k ? 6 : GPUSHARE_VERSION_MINOR,
        k ? GPUSHARE_ACCEPT_FLAG_LANE : 0, &lane_fd, &info);
    fail_unless (lane_fd < 0, "a LANE for a consumer %s",
        k ? "of minor 6" : "that did not ask");
    for (;;) {
      fail_unless_equals_int (raw_recv (&raw, msg, NULL, NULL, TIMEOUT_MS),
          RAW_MSG);
      fail_if (msg->type == GPUSHARE_MSG_LANE, "a LANE after SLOTS");
      fail_if (msg->type == GPUSHARE_MSG_ERROR, "ERROR %s: %s",
          gpushare_error_code_to_string (msg->u.error.code), msg->u.error.text);
      /* the ring the first one left quarantined is replaced meanwhile:
       * the new one's SLOTS are mapped, as a consumer does */
      if (msg->type == GPUSHARE_MSG_SLOTS) {
        epoch = msg->u.slots.epoch;
        fail_unless (raw_send_mapped (&raw, msg, epoch));
      }
      if (msg->type == GPUSHARE_MSG_FRAME)
        break;
    }
    fail_unless_equals_uint64 (msg->u.frame.epoch, epoch);
    send_release (&raw, &msg->u.frame);
    raw_clear (&raw);
    fail_unless (client_log_wait (&s.log, TRUE, 2 + k));
    fail_unless_equals_string (client_log_removed_nick (&s.log, 1 + k),
        "hangup");
  }
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);
  scene_stop (&s);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* A raw consumer's lane, mapped by hand: it reads the entries and writes
 * the words of the header as it likes, as a hostile consumer may */
typedef struct
{
  guint8 *base;
  gsize size;
  guint32 n_entries;
  guint64 read;                 /* entries peeked so far */
} RawLane;

static void
raw_lane_map (RawLane * l, gint fd, const GpuShareLaneInfo * info)
{
  l->size = info->size;
  l->n_entries = info->n_entries;
  l->read = 0;
  l->base = mmap (NULL, l->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  fail_unless (l->base != MAP_FAILED, "mmap: %s", g_strerror (errno));
  close (fd);
}

static void
raw_lane_unmap (RawLane * l)
{
  munmap (l->base, l->size);
  l->base = NULL;
}

static guint64
raw_lane_head (RawLane * l)
{
  return __atomic_load_n ((guint64 *) (l->base + GPUSHARE_LANE_HEAD_OFFSET),
      __ATOMIC_ACQUIRE);
}

static void
raw_lane_set_tail (RawLane * l, guint64 tail)
{
  __atomic_store_n ((guint64 *) (l->base + GPUSHARE_LANE_TAIL_OFFSET), tail,
      __ATOMIC_RELEASE);
}

/* the entry at position index, which must be in its place */
static void
raw_lane_entry (RawLane * l, guint64 index, GpuShareLaneEntry * e)
{
  const guint8 *p = l->base + GPUSHARE_LANE_HEADER_SIZE +
      (index % l->n_entries) * GPUSHARE_LANE_ENTRY_SIZE;

  fail_unless_equals_int (gpushare_lane_entry_parse (p, e), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (e->index, index);
}

/* Follows the lane without moving its tail: every new entry is read in
 * place, each FRAME given back on the socket at once; the socket is read
 * too (ERROR codes into codes).  Until the producer drops it, or
 * timeout_ms.  TRUE: dropped (it hung up). */
static gboolean
raw_lane_follow (RawLane * l, RawPeer * raw, GArray * codes, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000ll;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gboolean gone = FALSE;

  while (!gone && g_get_monotonic_time () < deadline) {
    guint64 head = raw_lane_head (l);
    RawResult r;

    fail_unless (head - l->read <= l->n_entries, "head %" G_GUINT64_FORMAT
        " with %" G_GUINT64_FORMAT " entries read: the producer wrote over "
        "unread entries", head, l->read);
    for (; l->read < head; l->read++) {
      GpuShareLaneEntry e;

      raw_lane_entry (l, l->read, &e);
      if (e.kind == GPUSHARE_LANE_ENTRY_FRAME)
        send_release (raw, &e.frame);
    }
    /* what came meanwhile, within a millisecond (nothing waits less) */
    while ((r = raw_recv (raw, msg, NULL, NULL, 1)) == RAW_MSG) {
      fail_if (msg->type == GPUSHARE_MSG_FRAME, "a FRAME on the socket");
      if (msg->type == GPUSHARE_MSG_ERROR)
        g_array_append_val (codes, msg->u.error.code);
    }
    gone = r == RAW_EOF;
  }
  g_free (msg);
  return gone;
}

/* A raw consumer asks for a lane, maps it by hand and streams, then writes
 * a tail no reader can have: past the head (head + 5), or G_MAXUINT64.
 * The producer finds it at its next entry for it and drops it for
 * "protocol", telling it so (docs/security.md, promise 1); the real
 * consumer streams on, nothing else is removed, and the lane is unmapped
 * with the client. */
GST_START_TEST (test_lane_garbage_tail)
{
  gboolean max = __i__ == 1;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GArray *codes = g_array_new (FALSE, FALSE, sizeof (guint32));
  GpuShareLaneInfo info;
  GpuShareLaneEntry e;
  guint64 tail;
  gint lane_fd;
  RawLane l;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  /* the sink's lane of the real consumer, and the real consumer's */
  fail_unless_equals_int (count_memfd_maps (LANE_MEMFD_NAME), 2);
  scene_raw_client (&s, &raw, announce);
  raw_accept_with (&raw, announce, GPUSHARE_VERSION_MINOR,
      GPUSHARE_ACCEPT_FLAG_LANE, &lane_fd, &info);
  fail_unless (lane_fd >= 0, "no LANE");
  raw_lane_map (&l, lane_fd, &info);
  fail_unless (client_log_wait (&s.log, FALSE, 2));

  /* it streams: a frame read (tail moved by the book) and given back */
  do {
    fail_if (raw_lane_follow (&l, &raw, codes, 10), "dropped while good");
    fail_unless_equals_int (codes->len, 0);
    raw_lane_entry (&l, l.read - 1, &e);
  } while (l.read == 0 || e.kind != GPUSHARE_LANE_ENTRY_FRAME);
  raw_lane_set_tail (&l, l.read);
  fail_if (raw_lane_follow (&l, &raw, codes, 50), "dropped while good");

  tail = max ? G_MAXUINT64 : raw_lane_head (&l) + 5;
  GST_INFO ("the consumer writes tail %" G_GUINT64_FORMAT, tail);
  raw_lane_set_tail (&l, tail);
  fail_unless (raw_lane_follow (&l, &raw, codes, TIMEOUT_MS),
      "tail %" G_GUINT64_FORMAT ": the consumer was not dropped (%"
      G_GUINT64_FORMAT " entries written since)", tail,
      raw_lane_head (&l) - l.read);
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");
  fail_unless_equals_int (num_clients (s.sink), 1);

  assert_consumer_alive (s.consumer);
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  assert_no_error (s.producer);
  raw_lane_unmap (&l);
  raw_clear (&raw);
  /* the dropped consumer's lane went with it */
  fail_unless_equals_int (wait_memfd_maps (LANE_MEMFD_NAME, 2, TIMEOUT_MS), 2);
  scene_stop (&s);
  fail_unless_equals_int (count_memfd_maps (LANE_MEMFD_NAME), 0);
  /* and it was told why, as for any protocol error (last: the rest holds
   * either way) */
  fail_unless (codes->len == 1, "the consumer dropped for its tail was not "
      "told why: %u ERRORs before the hang-up", codes->len);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_PROTOCOL);
  g_array_unref (codes);
  g_free (announce);
}

GST_END_TEST;

/* a release written into the raw lane by hand, as a consumer's thread
 * that frees a buffer does (docs/protocol.md, "Frame lane") */
static void
raw_lane_release (RawLane * l, guint64 * rhead, const GpuShareRelease * r)
{
  guint8 *p = l->base + GPUSHARE_LANE_HEADER_SIZE +
      (gsize) l->n_entries * GPUSHARE_LANE_ENTRY_SIZE +
      (*rhead % l->n_entries) * GPUSHARE_LANE_RELEASE_SIZE;

  gpushare_lane_release_build (*rhead, r, p);
  (*rhead)++;
  __atomic_store_n ((guint64 *) (l->base + GPUSHARE_LANE_RHEAD_OFFSET),
      *rhead, __ATOMIC_RELEASE);
}

/* frames-released of every consumer of the sink, summed */
static guint64
frames_released (GstElement * sink)
{
  GstStructure *st;
  const GValue *clients;
  guint64 sum = 0, v;
  guint i;

  g_object_get (sink, "stats", &st, NULL);
  clients = gst_structure_get_value (st, "clients");
  for (i = 0; clients && i < gst_value_array_get_size (clients); i++)
    if (gst_structure_get_uint64 (gst_value_get_structure
            (gst_value_array_get_value (clients, i)), "frames-released", &v))
      sum += v;
  gst_structure_free (st);
  return sum;
}

typedef enum
{
  LR_GOOD,                      /* every frame given back through the lane */
  LR_RHEAD_AHEAD,               /* an rhead far past what it wrote */
  LR_NOT_HELD,                  /* a release of a slot it does not hold */
  LR_STALE_FLOOD,               /* releases of an earlier ring, without end */
  N_LR
} LaneRelease;

/* A raw consumer gives its frames back through the lane's releases and
 * moves its tail, never a RELEASE on the socket: a lossless producer
 * streams on past its ring (the releases are read when it needs a slot),
 * and counts them.  An rhead that cannot be, a release of a slot it
 * does not hold, or releases of an earlier ring written as fast as the
 * producer reads them (more releases than frames it was sent, which
 * held the producer's lock for as long as they came) drops it for
 * "protocol", told so, as a bad RELEASE message does; the real consumer
 * streams on. */
GST_START_TEST (test_lane_releases)
{
  LaneRelease which = __i__;
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GArray *codes = g_array_new (FALSE, FALSE, sizeof (guint32));
  guint64 rhead = 0, frames = 0;
  gint64 deadline, quiet_until;
  GpuShareLaneInfo info;
  gboolean gone = FALSE;
  guint n_pings = 0;
  gint lane_fd;
  RawLane l;
  RawPeer raw;
  Scene s;

  scene_start (&s, TRUE);
  scene_raw_client (&s, &raw, announce);
  raw_accept_with (&raw, announce, GPUSHARE_VERSION_MINOR,
      GPUSHARE_ACCEPT_FLAG_LANE, &lane_fd, &info);
  fail_unless (lane_fd >= 0, "no LANE");
  raw_lane_map (&l, lane_fd, &info);
  fail_unless (client_log_wait (&s.log, FALSE, 2));

  /* three times the ring (8 slots), each frame given back in the lane;
   * and, for LR_GOOD, for longer than the heartbeat's three intervals
   * of 1 s without a byte on the socket: its releases say it lives */
  deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  quiet_until = g_get_monotonic_time () + (which == LR_GOOD ? 4000000 : 0);
  while (!gone && (frames < 24 || g_get_monotonic_time () < quiet_until)
      && g_get_monotonic_time () < MAX (deadline, quiet_until)) {
    guint64 head = raw_lane_head (&l);
    RawResult r;

    for (; l.read < head; l.read++) {
      GpuShareLaneEntry e;
      GpuShareRelease rel;

      raw_lane_entry (&l, l.read, &e);
      if (e.kind != GPUSHARE_LANE_ENTRY_FRAME)
        continue;
      rel.epoch = e.frame.epoch;
      rel.slot = e.frame.slot;
      rel.generation = e.frame.generation;
      rel.sequence = e.frame.sequence;
      raw_lane_release (&l, &rhead, &rel);
      frames++;
    }
    raw_lane_set_tail (&l, l.read);
    while ((r = raw_recv (&raw, msg, NULL, NULL, 1)) == RAW_MSG) {
      fail_if (msg->type == GPUSHARE_MSG_FRAME, "a FRAME on the socket");
      if (msg->type == GPUSHARE_MSG_ERROR)
        g_array_append_val (codes, msg->u.error.code);
      n_pings += msg->type == GPUSHARE_MSG_PING;
    }
    gone = r == RAW_EOF;
  }
  fail_if (gone, "dropped while it gave every frame back (%s)",
      client_log_n_removed (&s.log) ? client_log_removed_nick (&s.log, 0) :
      "not removed yet");
  fail_unless (frames >= 24, "%" G_GUINT64_FORMAT " frames: the producer "
      "did not read the releases in the lane", frames);
  /* the producer counts them (its stats read the lane first) */
  fail_unless (frames_released (s.sink) >= 24, "%" G_GUINT64_FORMAT
      " releases counted", frames_released (s.sink));

  if (which == LR_GOOD) {
    gint64 stall_until = g_get_monotonic_time () + 2000000;
    RawResult r = RAW_TIMEOUT;

    /* what it read of the lane the producer counts as heard: no PING on
     * a socket that carries nothing else, four heartbeat intervals long
     * (one at most, before the first entries read are seen) */
    fail_unless (n_pings <= 1, "%u PINGs while the consumer read every "
        "frame from its lane", n_pings);
    /* one that stops reading hears PINGs again, within an interval and a
     * quarter, and is not dropped before three */
    n_pings = 0;
    while (g_get_monotonic_time () < stall_until
        && (r = raw_recv (&raw, msg, NULL, NULL, 10)) != RAW_EOF)
      n_pings += r == RAW_MSG && msg->type == GPUSHARE_MSG_PING;
    fail_if (r == RAW_EOF, "dropped 2 s after it stopped reading");
    fail_unless (n_pings >= 1, "no PING in 2 s once the consumer stopped "
        "reading its lane");
    fail_unless_equals_int (client_log_n_removed (&s.log), 0);
  } else {
    if (which == LR_RHEAD_AHEAD) {
      __atomic_store_n ((guint64 *) (l.base + GPUSHARE_LANE_RHEAD_OFFSET),
          rhead + 10 * l.n_entries, __ATOMIC_RELEASE);
    } else if (which == LR_NOT_HELD) {
      GpuShareRelease bad = { 1, 0, 0x7fffffff, 1 };

      raw_lane_release (&l, &rhead, &bad);
    }
    deadline = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
    while (!gone && g_get_monotonic_time () < deadline) {
      RawResult r;

      /* as many as the release ring has room for, again and again: of
       * the ring before the first (epoch 0), which is let go as stale */
      while (which == LR_STALE_FLOOD && rhead - __atomic_load_n ((guint64 *)
              (l.base + GPUSHARE_LANE_RTAIL_OFFSET), __ATOMIC_ACQUIRE) <
          l.n_entries) {
        GpuShareRelease stale = { 0, 0, 1, 1 };

        raw_lane_release (&l, &rhead, &stale);
      }

      while ((r = raw_recv (&raw, msg, NULL, NULL,
                  which == LR_STALE_FLOOD ? 1 : 5)) == RAW_MSG)
        if (msg->type == GPUSHARE_MSG_ERROR)
          g_array_append_val (codes, msg->u.error.code);
      gone = r == RAW_EOF;
    }
    fail_unless (gone, "case %d: the consumer was not dropped", which);
    fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
    fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "protocol");
    fail_unless_equals_int (codes->len, 1);
    fail_unless_equals_int (g_array_index (codes, guint32, 0),
        GPUSHARE_ERR_PROTOCOL);
    fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  }
  assert_consumer_alive (s.consumer);
  assert_no_error (s.producer);
  raw_lane_unmap (&l);
  raw_clear (&raw);
  scene_stop (&s);
  g_array_unref (codes);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

/* A raw consumer that reads its lane in place but never moves its tail,
 * and gives every frame back on the socket at once, of a lossless
 * producer: once all 256 entries are unread, the producer writes no
 * further one over them but drops the consumer as "slow"; the real
 * consumer streams on. */
GST_START_TEST (test_lane_left_full)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GArray *codes = g_array_new (FALSE, FALSE, sizeof (guint32));
  GpuShareLaneInfo info;
  gint lane_fd;
  RawLane l;
  RawPeer raw;
  Scene s;
  guint i;

  /* scene_start (), with a lossless producer */
  memset (&s, 0, sizeof (s));
  s.path = socket_path ("scene.sock");
  s.producer = producer_new (s.path, &s.sink);
  gst_util_set_object_arg (G_OBJECT (s.sink), "policy", "lossless");
  client_log_init (&s.log, s.sink);
  producer_start (s.producer, s.sink);
  s.consumer = consumer_new (s.path, FALSE);
  consumer_start (s.consumer);
  fail_unless (consumer_wait (s.consumer, 3), "the consumer gets nothing");
  fail_unless (client_log_wait (&s.log, FALSE, 1));

  scene_raw_client (&s, &raw, announce);
  raw_accept_with (&raw, announce, GPUSHARE_VERSION_MINOR,
      GPUSHARE_ACCEPT_FLAG_LANE, &lane_fd, &info);
  fail_unless (lane_fd >= 0, "no LANE");
  raw_lane_map (&l, lane_fd, &info);
  fail_unless (client_log_wait (&s.log, FALSE, 2));

  /* 256 entries at 200 frames a second */
  fail_unless (raw_lane_follow (&l, &raw, codes, 4 * TIMEOUT_MS),
      "not dropped with %" G_GUINT64_FORMAT " entries unread", l.read);
  fail_unless (client_log_wait (&s.log, TRUE, 1), "no client-removed");
  fail_unless_equals_string (client_log_removed_nick (&s.log, 0), "slow");
  /* the lane was full, and nothing was written over it */
  fail_unless_equals_uint64 (l.read, info.n_entries);
  fail_unless_equals_uint64 (raw_lane_head (&l), info.n_entries);
  for (i = 0; i < info.n_entries; i++) {
    GpuShareLaneEntry e;

    raw_lane_entry (&l, i, &e);
  }
  fail_unless_equals_int (num_clients (s.sink), 1);
  assert_consumer_alive (s.consumer);
  fail_unless_equals_int (client_log_n_removed (&s.log), 1);
  assert_no_error (s.producer);

  raw_lane_unmap (&l);
  raw_clear (&raw);
  scene_stop (&s);
  g_array_unref (codes);
  g_free (announce);
}

GST_END_TEST;

static Suite *
gpushare_sink_protocol_suite (void)
{
  Suite *s = suite_create ("gpushare_sink_protocol");
  TCase *tc_garbage = tcase_create ("garbage");
  TCase *tc_handshake = tcase_create ("handshake");
  TCase *tc_descriptors = tcase_create ("descriptors");
  TCase *tc_unknown_types = tcase_create ("unknown-types");
  TCase *tc_lane = tcase_create ("lane");

  suite_add_tcase (s, tc_garbage);
  tcase_add_checked_fixture (tc_garbage, elements_setup, elements_teardown);
  tcase_add_loop_test (tc_garbage, test_consumer_garbage, 0, N_GARBAGE);
  tcase_add_test (tc_garbage, test_sink_answers_version);
  suite_add_tcase (s, tc_handshake);
  tcase_add_checked_fixture (tc_handshake, elements_setup, elements_teardown);
  tcase_add_test (tc_handshake, test_handshake_timeout);
  tcase_add_loop_test (tc_handshake, test_map_timeout, 0, 2);
  tcase_add_test (tc_handshake, test_remap_holds_lossless_once);
  tcase_add_test (tc_handshake, test_handshake_reply_unread);
  tcase_add_test (tc_handshake, test_max_pending);
  tcase_add_test (tc_handshake, test_export_failure_is_resource);
  tcase_add_test (tc_handshake, test_heartbeat_silent_consumer);
  tcase_add_test (tc_handshake, test_heartbeat_pings_keep_alive);
  tcase_add_test (tc_handshake, test_consumer_stops_reading);
  tcase_add_test (tc_handshake, test_gone_holders_of_a_uid);
  suite_add_tcase (s, tc_descriptors);
  tcase_add_checked_fixture (tc_descriptors, elements_setup, elements_teardown);
  tcase_add_loop_test (tc_descriptors, test_consumer_fds, 0, N_FDS_CASES);
  suite_add_tcase (s, tc_unknown_types);
  tcase_add_checked_fixture (tc_unknown_types, elements_setup,
      elements_teardown);
  tcase_add_test (tc_unknown_types, test_consumer_unknown_type);
  tcase_add_loop_test (tc_unknown_types, test_meta_by_minor, 0, 2);
  tcase_add_test (tc_handshake, test_observer);
  tcase_add_test (tc_handshake, test_consumer_observes_late);
  tcase_add_test (tc_handshake, test_hangups_at_once);
  tcase_add_test (tc_handshake, test_quarantine_burst_refused);
  tcase_add_test (tc_handshake, test_quarantine_burst_of_a_uid);
  tcase_add_test (tc_handshake, test_quarantine_burst_opened_before);
  tcase_add_test (tc_handshake, test_unread_descriptors);
  /* raw consumers that follow a live producer's lane in real time: too
   * slow under valgrind (the AddressSanitizer lane checks their memory) */
  if (!g_getenv ("GPUSHARE_UNDER_VALGRIND"))
    suite_add_tcase (s, tc_lane);
  tcase_add_checked_fixture (tc_lane, elements_setup, elements_teardown);
  tcase_add_test (tc_lane, test_lane_raw_consumer);
  tcase_add_loop_test (tc_lane, test_lane_garbage_tail, 0, 2);
  tcase_add_test (tc_lane, test_lane_left_full);
  tcase_add_loop_test (tc_lane, test_lane_releases, 0, N_LR);
  return s;
}

/* the test plugin's host-test rings retire (test_gone_holders_of_a_uid):
 * set before anything loads the plugin */
static void __attribute__((constructor))
    host_test_retires (void)
{
  g_setenv ("GPUSHARE_TEST_HOST_RETIRE", "1", TRUE);
}

GST_CHECK_MAIN (gpushare_sink_protocol);

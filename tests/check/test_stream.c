/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a frame carries besides its pixels, and what a consumer learns of
 * the stream: every buffer flag (GstVideoBufferFlags included), the
 * frames it missed, each gap marked DISCONT and counted in the src's
 * stats, and timestamps a synchronising sink can play from, for a consumer
 * that joins late and for one whose producer restarts; a producer that
 * waits for its consumers rather than throw a file away; and errors that
 * say what to change.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#include <gst/check/gstcheck.h>
#include <gst/app/app.h>
#include <glib/gstdio.h>
#include <gst/video/video.h>

#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#if HAVE_GST_ANALYTICS
#include <gst/analytics/analytics.h>
#endif

#include "gpushare-analytics-util.h"
#include "gpushare-check-elements.h"
#include "gpushareframemeta.h"
#include "gpusharefd.h"
#include "gpusharering.h"
#include "gpusharetiming.h"

/* a producer appsrc ! gpusharesink; the sink in *sink, the appsrc in *src */
static GstElement *
appsrc_producer (const gchar * path, const gchar * policy, guint ring,
    GstElement ** sink, GstElement ** src)
{
  GstElement *producer = launch ("appsrc name=in format=time ! "
      "gpusharesink name=sink");
  GstCaps *caps = gst_caps_from_string (CAPS_STR);

  *sink = child (producer, "sink");
  *src = child (producer, "in");
  g_object_set (*src, "caps", caps, NULL);
  gst_caps_unref (caps);
  g_object_set (*sink, "socket-path", path, "wait-for-connection", TRUE,
      "ring-size", ring, NULL);
  gst_util_set_object_arg (G_OBJECT (*sink), "policy", policy);
  return producer;
}

/* frame i of a stream: size bytes of fill + i, the PTS of frame i at 30
 * frames a second, offset i */
static GstBuffer *
numbered_frame_sized (guint i, guint fill, gsize size)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, size, NULL);

  gst_buffer_memset (buf, 0, fill + i, size);
  GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 30);
  GST_BUFFER_OFFSET (buf) = i;
  return buf;
}

/* the same, of FRAME_SIZE bytes (CAPS_STR) */
static GstBuffer *
numbered_frame (guint i, guint fill)
{
  return numbered_frame_sized (i, fill, FRAME_SIZE);
}

static void
push_frame (GstElement * src, guint i, guint32 flags)
{
  GstBuffer *buf = numbered_frame (i, 0x10);

  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  GST_BUFFER_OFFSET_END (buf) = i + 1;
  GST_MINI_OBJECT_FLAGS (buf) |= flags;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), buf),
      GST_FLOW_OK);
}

static GstBuffer *
next_buffer (Consumer * c, guint i)
{
  GstBuffer *buf = g_async_queue_timeout_pop (c->buffers, TIMEOUT_MS * 1000);

  fail_unless (buf != NULL, "frame %u never arrived", i);
  return buf;
}

/* a lossless appsrc producer and a consumer that drops its buffers, n
 * frames through them */
static Consumer *
streaming_pair (const gchar * path, guint n, GstElement ** producer,
    GstElement ** sink, GstElement ** src)
{
  Consumer *c;
  guint i;

  *producer = appsrc_producer (path, "lossless", 8, sink, src);
  fail_if (gst_element_set_state (*producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  for (i = 0; i < n; i++)
    push_frame (*src, i, 0);
  fail_unless (consumer_wait (c, n));
  return c;
}

/* ------------------------------------------------------------------------ */
/* 1. Buffer flags: all of them, the video ones above bit 20 included */

static const guint32 frame_flags[] = {
  GST_VIDEO_BUFFER_FLAG_INTERLACED | GST_VIDEO_BUFFER_FLAG_TFF,
  GST_VIDEO_BUFFER_FLAG_INTERLACED | GST_VIDEO_BUFFER_FLAG_RFF |
      GST_VIDEO_BUFFER_FLAG_ONEFIELD,
  GST_BUFFER_FLAG_MARKER | GST_BUFFER_FLAG_DELTA_UNIT |
      GST_BUFFER_FLAG_DROPPABLE | GST_BUFFER_FLAG_HEADER,
  GST_VIDEO_BUFFER_FLAG_FIRST_IN_BUNDLE |
      GST_VIDEO_BUFFER_FLAG_MULTIPLE_VIEW | GST_BUFFER_FLAG_CORRUPTED,
  GST_BUFFER_FLAG_RESYNC | GST_BUFFER_FLAG_NON_DROPPABLE |
      GST_BUFFER_FLAG_SYNC_AFTER | GST_BUFFER_FLAG_LIVE,
  0,
};

GST_START_TEST (test_video_flags)
{
  gchar *path = socket_path ("flags");
  GstElement *producer, *sink, *src;
  Consumer *c;
  guint i;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  consumer_start (c);
  for (i = 0; i < G_N_ELEMENTS (frame_flags); i++)
    push_frame (src, i, frame_flags[i]);
  for (i = 0; i < G_N_ELEMENTS (frame_flags); i++) {
    GstBuffer *buf = next_buffer (c, i);
    /* DISCONT: GstBaseSrc marks its first buffer so; TAG_MEMORY: set on
     * the consumer's own buffer as its memory is added */
    guint32 got = GST_MINI_OBJECT_FLAGS (buf) & ~(GST_BUFFER_FLAG_DISCONT |
        GST_BUFFER_FLAG_TAG_MEMORY);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    fail_unless (got == frame_flags[i], "frame %u: flags 0x%08x sent, 0x%08x "
        "received", i, frame_flags[i], got);
    gst_buffer_unref (buf);
  }
  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2. Frames missed: a leaky producer skips a consumer that holds its share
 * of the ring; the consumer's next buffer is DISCONT and its stats count
 * the frames it never got */

#define LEAKY_RING 4
#define LEAKY_SHARE (LEAKY_RING - 1)

/* the GAP events gpusharesrc pushed: timestamp, duration pairs */
static GstPadProbeReturn
gap_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstEvent *e = GST_PAD_PROBE_INFO_EVENT (info);
  GstClockTime ts, duration;

  if (GST_EVENT_TYPE (e) == GST_EVENT_GAP) {
    gst_event_parse_gap (e, &ts, &duration);
    g_array_append_val ((GArray *) data, ts);
    g_array_append_val ((GArray *) data, duration);
  }
  return GST_PAD_PROBE_OK;
}

/* Holds the src's buffers back until unblock (): the frame being pushed
 * and those queued behind it keep their slots, as in a consumer whose
 * pipeline stopped taking buffers.  (A consumer that only keeps buffers
 * does not hold its share: it copies what its share cannot take.) */
/* an appsrc producer of policy with a ring of ring slots (0: auto),
 * playing, and a consumer that keeps its buffers, started */
static Consumer *
start_pair (const gchar * path, const gchar * policy, guint ring,
    GstElement ** producer, GstElement ** sink, GstElement ** src)
{
  Consumer *c;

  *producer = appsrc_producer (path, policy, ring, sink, src);
  fail_if (gst_element_set_state (*producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  consumer_start (c);
  return c;
}

/* a producer and its consumer, both without an error, stopped */
static void
end_pair (GstElement * producer, Consumer * c)
{
  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
}

static GstPadProbeReturn
block_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  return GST_PAD_PROBE_OK;
}

static gulong
block_buffers (GstElement * src)
{
  GstPad *pad = gst_element_get_static_pad (src, "src");
  gulong id = gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK |
      GST_PAD_PROBE_TYPE_BUFFER, block_probe, NULL, NULL);

  gst_object_unref (pad);
  return id;
}

static void
unblock (GstElement * src, gulong id)
{
  GstPad *pad = gst_element_get_static_pad (src, "src");

  gst_pad_remove_probe (pad, id);
  gst_object_unref (pad);
}

/* a boolean of element's stats, or of the first consumer's in a sink's */
static gboolean
stat_bool (GstElement * element, gboolean of_client, const gchar * field)
{
  GstStructure *s = get_stats (element);
  const GstStructure *st = s;
  gboolean v = FALSE;

  if (of_client) {
    const GValue *list = gst_structure_get_value (s, "clients");

    fail_unless (list != NULL && gst_value_array_get_size (list) > 0);
    st = gst_value_get_structure (gst_value_array_get_value (list, 0));
  }
  fail_unless (gst_structure_get_boolean (st, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

/* the first consumer's field of the sink's stats, once it is value (it
 * may not have connected yet) */
static guint
wait_client_stat (GstElement * sink, const gchar * field, guint value)
{
  gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  guint v = G_MAXUINT;

  while (g_get_monotonic_time () < until) {
    if (num_clients (sink) > 0) {
      v = strcmp (field, "stalled") == 0 ? (guint) stat_bool (sink, TRUE,
          field) : client_stat_uint (sink, 0, field);
      if (v == value)
        break;
    }
    g_usleep (10000);
  }
  return v;
}

GST_START_TEST (test_frames_missed)
{
  gchar *path = socket_path ("missed");
  GstElement *producer, *sink, *src;
  GArray *gaps = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  Consumer *c;
  GstPad *pad;
  gulong block;
  guint i, n = 0;

  producer = appsrc_producer (path, "leaky", LEAKY_RING, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  pad = gst_element_get_static_pad (c->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, gap_probe,
      gaps, NULL);
  gst_object_unref (pad);
  consumer_start (c);

  /* the consumer's pipeline takes nothing: frames 0-2 fill its share */
  block = block_buffers (c->src);
  for (i = 0; i < LEAKY_SHARE; i++)
    push_frame (src, n++, 0);
  fail_unless_equals_int (wait_client_stat (sink, "slots-held",
          LEAKY_SHARE), LEAKY_SHARE);
  fail_unless_equals_int (client_stat_uint (sink, 0, "share"), LEAKY_SHARE);
  /* frames 3 and 4 go to nobody */
  push_frame (src, n++, 0);
  push_frame (src, n++, 0);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", n) >= n);
  unblock (c->src, block);
  for (i = 0; i < LEAKY_SHARE; i++) {
    GstBuffer *buf = next_buffer (c, i);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    fail_unless (i == 0 || !GST_BUFFER_FLAG_IS_SET (buf,
            GST_BUFFER_FLAG_DISCONT), "frame %u is DISCONT", i);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_int (wait_stat_uint (sink, "free-slots", LEAKY_RING),
      LEAKY_RING);

  /* frame 5 comes after a gap of two, frame 6 right after it */
  push_frame (src, n++, 0);
  push_frame (src, n++, 0);
  for (i = 5; i < n; i++) {
    GstBuffer *buf = next_buffer (c, i);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    fail_unless (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT) ==
        (i == 5), "frame %u: DISCONT %s", i, i == 5 ? "missing" :
        "where nothing was missed");
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-missed"), 2);
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-received"), 5);
  /* and a GAP event over the time of frames 3 and 4, from the end of
   * frame 2 to frame 5 */
  fail_unless_equals_int (gaps->len, 2);
  fail_unless_equals_uint64 (g_array_index (gaps, GstClockTime, 0),
      gst_util_uint64_scale (2, GST_SECOND, 30) + GST_SECOND / 30);
  fail_unless_equals_uint64 (g_array_index (gaps, GstClockTime, 0) +
      g_array_index (gaps, GstClockTime, 1),
      gst_util_uint64_scale (5, GST_SECOND, 30));

  /* at the end: it holds its share again, the last two frames go to
   * nobody, then the end of the stream says how many there were.  Its
   * slots are all back first, or one of the three could be skipped */
  fail_unless_equals_int (wait_stat_uint (sink, "free-slots", LEAKY_RING),
      LEAKY_RING);
  block = block_buffers (c->src);
  for (i = 0; i < LEAKY_SHARE; i++)
    push_frame (src, n++, 0);
  fail_unless_equals_int (wait_client_stat (sink, "slots-held",
          LEAKY_SHARE), LEAKY_SHARE);
  push_frame (src, n++, 0);
  push_frame (src, n++, 0);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", n) >= n);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  unblock (c->src, block);
  for (i = 0; i < LEAKY_SHARE; i++)
    gst_buffer_unref (next_buffer (c, n - 2 - LEAKY_SHARE + i));
  /* counted once the stream reached its end here: frames still in the
   * frame lane are not missed */
  fail_unless (wait_stat_u64_at_least (c->src, "frames-missed", 4) == 4,
      "the two frames at the end were not counted");

  end_pair (producer, c);
  g_array_unref (gaps);
  g_free (path);
}

GST_END_TEST;

/* A consumer whose pipeline keeps every buffer it gets (a queue, an
 * appsink nobody pulls from) keeps share - 1 of them in place, whatever
 * max-in-place says, and copies the rest: it never holds its whole share,
 * so it is never skipped (the bug: four live consumers whose sinks kept
 * their last buffer each held the one slot of their share, and got no
 * frame again). */
GST_START_TEST (test_share_in_place)
{
  gchar *path = socket_path ("share");
  GstElement *producer, *sink, *src;
  GstBuffer *held[6];
  Consumer *c;
  guint i;

  producer = appsrc_producer (path, "leaky", LEAKY_RING, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  /* before it starts: every frame in place, as far as its share lets */
  g_object_set (c->src, "max-in-place", LEAKY_RING, NULL);
  consumer_start (c);
  for (i = 0; i < G_N_ELEMENTS (held); i++) {
    push_frame (src, i, 0);
    held[i] = next_buffer (c, i);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (held[i]), i);
    /* a copied frame's RELEASE reaches the producer before the next
     * frame: sent while it is on its way, the next frame would find the
     * consumer holding its whole share for a moment, and be skipped */
    fail_unless_equals_int (wait_client_stat (sink, "slots-held",
            MIN (i + 1, LEAKY_SHARE - 1)), MIN (i + 1, LEAKY_SHARE - 1));
  }
  fail_unless_equals_int (client_stat_uint (sink, 0, "share"), LEAKY_SHARE);
  fail_unless_equals_int (wait_client_stat (sink, "slots-held",
          LEAKY_SHARE - 1), LEAKY_SHARE - 1);
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-in-place"),
      LEAKY_SHARE - 1);
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-copied"),
      G_N_ELEMENTS (held) - (LEAKY_SHARE - 1));
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-missed"), 0);
  for (i = 0; i < G_N_ELEMENTS (held); i++)
    gst_buffer_unref (held[i]);

  end_pair (producer, c);
  g_free (path);
}

GST_END_TEST;

static guint n_ready (GstElement * sink);

/* a consumer's streaming thread held at its first buffer until opened */
typedef struct
{
  GMutex lock;
  GCond cond;
  gboolean open;
} Gate;

static GstPadProbeReturn
gate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Gate *g = data;

  g_mutex_lock (&g->lock);
  while (!g->open)
    g_cond_wait (&g->cond, &g->lock);
  g_mutex_unlock (&g->lock);
  return GST_PAD_PROBE_OK;
}

/* A consumer that is slow for its first frames (its process still
 * starting the other streams it reads: 16 streams x 4 consumers on this
 * machine lost one of frames 3 to 7 in a third of them) and holds its
 * share of a live leaky ring gets the next frames all the same while the
 * ring has free slots that neither the producer nor the other consumers'
 * shares can want (frames-lent), and misses none of them. */
GST_START_TEST (test_share_lent_at_start)
{
  gchar *path = socket_path ("lent");
  GstElement *producer, *sink, *src;
  Consumer *slow, *fast[3];
  Gate gate = { 0, };
  gboolean slow_host;
  gint64 start;
  GstPad *pad;
  guint i, n;

  /* 16 slots, 4 consumers: a share of 3 each */
  producer = appsrc_producer (path, "leaky", 16, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  slow = consumer_new (path, FALSE);
  g_mutex_init (&gate.lock);
  g_cond_init (&gate.cond);
  pad = gst_element_get_static_pad (slow->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, gate_probe, &gate, NULL);
  gst_object_unref (pad);
  consumer_start (slow);
  for (i = 0; i < 500 && num_clients (sink) < 1; i++)
    g_usleep (10000);
  for (i = 0; i < 3; i++) {
    fast[i] = consumer_new (path, FALSE);
    consumer_start (fast[i]);
  }
  for (i = 0; i < 500 && n_ready (sink) < 4; i++)
    g_usleep (10000);
  fail_unless_equals_int (n_ready (sink), 4);
  /* frame 0 stops in the slow one's probe, 1 and 2 wait in its lane: its
   * share; 3 and 4 are lent (12 and 11 free slots, 3 x 3 for the others'
   * shares and 1 for the producer); the others take every frame */
  start = g_get_monotonic_time ();
  for (n = 0; n < 5; n++) {
    push_frame (src, n, 0);
    for (i = 0; i < 3; i++) {
      gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;

      while (g_atomic_int_get (&fast[i]->frames) < (gint) n + 1
          && g_get_monotonic_time () < until)
        g_usleep (1000);
      fail_unless_equals_int (g_atomic_int_get (&fast[i]->frames), n + 1);
    }
  }
  fail_unless_equals_int (client_stat_uint (sink, 0, "share"), 3);
  /* all within the grace, unless this machine is far too slow (a
   * sanitizer, a loaded host): then there is nothing to check */
  slow_host = g_get_monotonic_time () - start >
      GPUSHARE_RING_START_GRACE_MS * 1000 / 2;
  if (slow_host)
    g_print ("test_share_lent_at_start: 5 frames took over %u ms here: "
        "nothing to check\n", GPUSHARE_RING_START_GRACE_MS / 2);
  else {
    fail_unless_equals_uint64 (client_stat_u64 (sink, 0, "frames-lent"), 2);
    fail_unless_equals_uint64 (client_stat_u64 (sink, 0, "frames-dropped"), 0);
  }
  g_mutex_lock (&gate.lock);
  gate.open = TRUE;
  g_cond_broadcast (&gate.cond);
  g_mutex_unlock (&gate.lock);
  for (i = 0; i < 500 && g_atomic_int_get (&slow->frames) < 5; i++)
    g_usleep (10000);
  if (!slow_host) {
    fail_unless_equals_int (g_atomic_int_get (&slow->frames), 5);
    fail_unless_equals_uint64 (stat_u64 (slow->src, "frames-missed"), 0);
  }

  for (i = 0; i < 3; i++)
    consumer_free (fast[i]);
  end_pair (producer, slow);
  g_mutex_clear (&gate.lock);
  g_cond_clear (&gate.cond);
  g_free (path);
}

GST_END_TEST;

/* keeps the newest `keep` buffers c got, as an appsink with max-buffers
 * and drop=true does: older ones are let go as new ones come */
static void
keep_newest (Consumer * c, GQueue * window, guint keep)
{
  GstBuffer *buf;

  while ((buf = g_async_queue_try_pop (c->buffers))) {
    g_queue_push_tail (window, buf);
    while (g_queue_get_length (window) > keep)
      gst_buffer_unref (g_queue_pop_head (window));
  }
}

/* frames 1/30 s apart, each held for a moment by the sink's clock */
static void
feed (GstElement * src, guint * n, guint count, Consumer * c, GQueue * window,
    guint keep)
{
  guint i;

  for (i = 0; i < count; i++) {
    push_frame (src, (*n)++, 0);
    g_usleep (20000);
    keep_newest (c, window, keep);
  }
}

/* A consumer's share shrinks as consumers join while its pipeline keeps
 * more than the new share in place, the newest frame among them (an
 * appsink that keeps its 4 newest, from a share of 5): it is told its new
 * share with the next frame, copies what does not fit, and keeps
 * receiving every frame; the regression: it was skipped for good, since
 * its pipeline lets go of old frames only when new ones come (seen on the
 * GPU with GStreamer 1.26, whose consumers keep GPU frames in place). */
GST_START_TEST (test_share_shrinks)
{
  gchar *path = socket_path ("shrink");
  GstElement *producer, *sink, *src;
  GQueue window = G_QUEUE_INIT;
  Consumer *a, *others[3];
  guint i, n = 0;
  guint64 missed;

  /* a ring of auto size: 16 slots for 3 consumers, a share of 5 each,
   * and of 3 once a fourth joins */
  a = start_pair (path, "leaky", 0, &producer, &sink, &src);
  for (i = 0; i < 500 && num_clients (sink) < 1; i++)
    g_usleep (10000);
  for (i = 0; i < 2; i++) {
    others[i] = consumer_new (path, FALSE);
    consumer_start (others[i]);
  }
  /* until the ring grew and the consumers mapped it */
  for (i = 0; i < 100 && (client_stat_uint (sink, 0, "share") != 5
          || stat_uint (sink, "ring-slots") != 16); i++)
    feed (src, &n, 1, a, &window, 4);
  fail_unless_equals_int (stat_uint (sink, "ring-slots"), 16);
  feed (src, &n, 10, a, &window, 4);
  fail_unless_equals_int (client_stat_uint (sink, 0, "share"), 5);
  /* 4 in place at most (its share less one); as a copy takes the place
   * of one of them when a frame comes past that, 3 at times */
  fail_unless (client_stat_uint (sink, 0, "slots-held") >= 3
      && client_stat_uint (sink, 0, "slots-held") <= 4);
  missed = stat_u64 (a->src, "frames-missed");

  /* the fourth: no new ring (16 slots serve 5), the share is 3 */
  others[2] = consumer_new (path, FALSE);
  consumer_start (others[2]);
  for (i = 0; i < 500 && num_clients (sink) < 4; i++)
    g_usleep (10000);
  fail_unless_equals_int (num_clients (sink), 4);
  feed (src, &n, 30, a, &window, 4);
  fail_unless_equals_int (stat_uint (sink, "ring-slots"), 16);
  fail_unless_equals_int (client_stat_uint (sink, 0, "share"), 3);
  fail_unless (client_stat_uint (sink, 0, "slots-held") <= 2,
      "it holds %u slots in place, its share is 3",
      client_stat_uint (sink, 0, "slots-held"));
  fail_unless_equals_uint64 (stat_u64 (a->src, "frames-missed"), missed);
  fail_unless (!stat_bool (a->src, FALSE, "stalled"));

  while (!g_queue_is_empty (&window))
    gst_buffer_unref (g_queue_pop_head (&window));
  for (i = 0; i < 3; i++)
    consumer_free (others[i]);
  end_pair (producer, a);
  g_free (path);
}

GST_END_TEST;

/* the next WARNING on pipeline's bus within timeout_ms, its details
 * structure (a copy) in *details; NULL for none */
static GError *
next_warning (GstElement * pipeline, gint timeout_ms, GstStructure ** details)
{
  GstMessage *msg = pop_message (pipeline, GST_MESSAGE_WARNING, timeout_ms);
  const GstStructure *d = NULL;
  GError *error = NULL;

  if (!msg)
    return NULL;
  gst_message_parse_warning (msg, &error, NULL);
  gst_message_parse_warning_details (msg, &d);
  *details = d ? gst_structure_copy (d) : NULL;
  gst_message_unref (msg);
  return error;
}

/* A consumer skipped for GPUSHARE_STALL_NOTICE_MS (its pipeline took no
 * buffer, it holds its whole share) is said to be stalled, once, on both
 * sides: a WARNING with the consumer, its share and what it holds, and
 * the stats; frames-missed counts the frames skipped so far.  Frames
 * again end it. */
GST_START_TEST (test_stalled_consumer_said)
{
  gchar *path = socket_path ("stalled");
  GstElement *producer, *sink, *src;
  GstStructure *details = NULL;
  GError *warning;
  Consumer *c;
  gulong block;
  guint i, n = 0, u;
  guint64 skipped = 0;
  gint64 until;

  c = start_pair (path, "leaky", LEAKY_RING, &producer, &sink, &src);
  block = block_buffers (c->src);
  for (i = 0; i < LEAKY_SHARE; i++)
    push_frame (src, n++, 0);
  fail_unless_equals_int (wait_client_stat (sink, "slots-held",
          LEAKY_SHARE), LEAKY_SHARE);
  /* frames at 30 fps, skipped, until the producer says so */
  until = g_get_monotonic_time () + (GPUSHARE_STALL_NOTICE_MS +
      TIMEOUT_MS) * 1000ll;
  warning = NULL;
  while (!warning && g_get_monotonic_time () < until) {
    push_frame (src, n++, 0);
    warning = next_warning (producer, 33, &details);
  }
  fail_unless (warning != NULL, "the producer never said it");
  fail_unless (g_error_matches (warning, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_BUSY), "%s", warning->message);
  g_clear_error (&warning);
  fail_unless (details != NULL);
  fail_unless (gst_structure_get_uint (details, "share", &u));
  fail_unless_equals_int (u, LEAKY_SHARE);
  fail_unless (gst_structure_get_uint (details, "slots-held", &u));
  fail_unless_equals_int (u, LEAKY_SHARE);
  fail_unless (gst_structure_get_uint (details, "consumers", &u));
  fail_unless_equals_int (u, 1);
  fail_unless (gst_structure_get_uint64 (details, "frames-skipped", &skipped));
  fail_unless (skipped >= 30, "%" G_GUINT64_FORMAT " skipped in 2 s", skipped);
  fail_unless (gst_structure_get_uint (details, "skipped-ms", &u));
  fail_unless (u >= GPUSHARE_STALL_NOTICE_MS);
  g_clear_pointer (&details, gst_structure_free);
  fail_unless (stat_bool (sink, TRUE, "stalled"));

  /* the consumer says so too, with the same figures, and counts the
   * frames it missed though none came after them */
  warning = next_warning (c->pipeline, TIMEOUT_MS, &details);
  fail_unless (warning != NULL, "the consumer never said it");
  g_clear_error (&warning);
  fail_unless (gst_structure_get_uint (details, "share", &u));
  fail_unless_equals_int (u, LEAKY_SHARE);
  fail_unless (gst_structure_get_uint (details, "slots-held", &u));
  fail_unless_equals_int (u, LEAKY_SHARE);
  g_clear_pointer (&details, gst_structure_free);
  fail_unless (stat_bool (c->src, FALSE, "stalled"));
  fail_unless_equals_int (stat_uint (c->src, "share"), LEAKY_SHARE);
  fail_unless (stat_u64 (c->src, "frames-missed") >= skipped);

  /* once per stall */
  for (i = 0; i < 10; i++)
    push_frame (src, n++, 0);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", n) >= n);
  fail_unless (next_warning (producer, 200, &details) == NULL);
  fail_unless (next_warning (c->pipeline, 200, &details) == NULL);

  /* it takes buffers again: frames reach it, and the stall is over */
  unblock (c->src, block);
  for (i = 0; i < LEAKY_SHARE; i++)
    gst_buffer_unref (next_buffer (c, i));
  fail_unless_equals_int (wait_stat_uint (sink, "free-slots", LEAKY_RING),
      LEAKY_RING);
  push_frame (src, n++, 0);
  gst_buffer_unref (next_buffer (c, n - 1));
  fail_unless_equals_int (wait_client_stat (sink, "stalled", FALSE), FALSE);
  fail_unless (!stat_bool (c->src, FALSE, "stalled"));
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-missed"),
      n - 1 - LEAKY_SHARE);

  end_pair (producer, c);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2b. Metadata: the metas a frame carries reach the consumer's buffer */

static const guint8 caption_bytes[] = { 0xfc, 0x94, 0x20, 0xfc, 0x94, 0xae };

/* a meta that no other process could read: no serialize function */
static GType
local_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        gst_meta_api_type_register ("GpuShareTestLocalMetaAPI", tags));
  return type;
}

static gboolean
local_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  return TRUE;
}

static const GstMetaInfo *
local_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (local_meta_api_get_type (),
        "GpuShareTestLocalMeta", sizeof (GstMeta), local_meta_init, NULL,
        NULL);

    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

static GstBuffer *
buffer_with_metas (guint i)
{
  GstBuffer *buf = numbered_frame (i, 0x40);
  GstBuffer *other = gst_buffer_new ();
  GstVideoRegionOfInterestMeta *roi;
  GstCaps *ref = gst_caps_new_empty_simple ("timestamp/x-ntp");
  GstCustomMeta *custom;

  roi = gst_buffer_add_video_region_of_interest_meta (buf, "face", 3, 4, 20,
      10);
  roi->id = 7;
  roi->parent_id = 2;
  gst_video_region_of_interest_meta_add_param (roi,
      gst_structure_new ("detection", "label", G_TYPE_STRING, "face",
          "confidence", G_TYPE_DOUBLE, 0.75, NULL));
  gst_buffer_add_reference_timestamp_meta (buf, ref, 1234567890 + i, 33);
  gst_caps_unref (ref);
  gst_buffer_add_video_time_code_meta_full (buf, 30, 1, NULL,
      GST_VIDEO_TIME_CODE_FLAGS_NONE, 10, 20, 30, i, 0);
  gst_buffer_add_video_caption_meta (buf, GST_VIDEO_CAPTION_TYPE_CEA608_RAW,
      caption_bytes, sizeof (caption_bytes));
  gst_buffer_add_video_afd_meta (buf, 0, GST_VIDEO_AFD_SPEC_ATSC_A53,
      GST_VIDEO_AFD_16_9_TOP_ALIGNED);
  gst_buffer_add_video_bar_meta (buf, 0, TRUE, 40, 1040);
  custom = gst_buffer_add_custom_meta (buf, "gpushare-test-tracker");
  gst_structure_set (gst_custom_meta_get_structure (custom), "track-id",
      G_TYPE_UINT, 100 + i, "class", G_TYPE_STRING, "car", NULL);
  /* not to travel, nor counted: a reference that keeps a buffer of this
   * process alive as long as this one (imagefreeze's output from 1.26
   * on); the consumer's frame is kept by its slot */
  gst_buffer_add_parent_buffer_meta (buf, other);
  gst_buffer_unref (other);
  /* cannot travel, counted: a meta of this process alone, with no way to
   * be written down */
  gst_buffer_add_meta (buf, local_meta_get_info (), NULL);
  return buf;
}

static void
check_metas (GstBuffer * buf, guint i)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_get_video_region_of_interest_meta (buf);
  GstCaps *ref = gst_caps_new_empty_simple ("timestamp/x-ntp");
  GstReferenceTimestampMeta *ts =
      gst_buffer_get_reference_timestamp_meta (buf, ref);
  GstVideoTimeCodeMeta *tc = gst_buffer_get_video_time_code_meta (buf);
  GstVideoCaptionMeta *cc = gst_buffer_get_video_caption_meta (buf);
  GstVideoAFDMeta *afd = gst_buffer_get_video_afd_meta (buf);
  GstVideoBarMeta *bar = gst_buffer_get_video_bar_meta (buf);
  GstCustomMeta *custom = gst_buffer_get_custom_meta (buf,
      "gpushare-test-tracker");
  GstStructure *param;
  guint u = 0;

  gst_caps_unref (ref);
  fail_unless (roi != NULL, "frame %u: no region of interest", i);
  fail_unless_equals_string (g_quark_to_string (roi->roi_type), "face");
  fail_unless_equals_int (roi->id, 7);
  fail_unless_equals_int (roi->parent_id, 2);
  fail_unless (roi->x == 3 && roi->y == 4 && roi->w == 20 && roi->h == 10);
  param = gst_video_region_of_interest_meta_get_param (roi, "detection");
  fail_unless (param != NULL, "frame %u: the region lost its parameter", i);
  fail_unless_equals_string (gst_structure_get_string (param, "label"), "face");
  fail_unless (ts != NULL, "frame %u: no reference timestamp", i);
  fail_unless_equals_uint64 (ts->timestamp, 1234567890 + i);
  fail_unless_equals_uint64 (ts->duration, 33);
  fail_unless (tc != NULL, "frame %u: no time code", i);
  fail_unless (tc->tc.hours == 10 && tc->tc.minutes == 20
      && tc->tc.seconds == 30 && tc->tc.frames == i);
  fail_unless_equals_int (tc->tc.config.fps_n, 30);
  fail_unless (cc != NULL, "frame %u: no caption", i);
  fail_unless_equals_int (cc->caption_type, GST_VIDEO_CAPTION_TYPE_CEA608_RAW);
  fail_unless (cc->size == sizeof (caption_bytes)
      && memcmp (cc->data, caption_bytes, cc->size) == 0);
  fail_unless (afd != NULL, "frame %u: no AFD", i);
  fail_unless_equals_int (afd->afd, GST_VIDEO_AFD_16_9_TOP_ALIGNED);
  fail_unless_equals_int (afd->spec, GST_VIDEO_AFD_SPEC_ATSC_A53);
  fail_unless (bar != NULL, "frame %u: no bar data", i);
  fail_unless (bar->is_letterbox && bar->bar_data1 == 40
      && bar->bar_data2 == 1040);
  fail_unless (custom != NULL, "frame %u: no custom meta", i);
  fail_unless (gst_structure_get_uint (gst_custom_meta_get_structure (custom),
          "track-id", &u));
  fail_unless_equals_int (u, 100 + i);
  /* the parent buffer meta stayed in the producer's process */
  fail_unless (gst_buffer_get_parent_buffer_meta (buf) == NULL);
}

#define META_FRAMES 4
#define METAS_PER_FRAME 7

/* A producer process's pipeline and a consumer's, META_FRAMES frames made
 * by make () pushed from one to the other; the consumer takes its frames
 * from a frame lane or (lane FALSE) from the socket */
typedef struct
{
  gchar *path;
  GstElement *producer;
  GstElement *sink;
  Consumer *c;
} MetaStream;

/* the producer playing, with meta-slot-size (-1: its default), and the
 * consumer made, to be set and started; returns the producer's appsrc */
static GstElement *
meta_stream_open (MetaStream * ms, const gchar * name, gint64 meta_slot_size)
{
  GstElement *src;

  ms->path = socket_path (name);
  ms->producer = appsrc_producer (ms->path, "lossless", 8, &ms->sink, &src);
  if (meta_slot_size != -1)
    g_object_set (ms->sink, "meta-slot-size", meta_slot_size, NULL);
  fail_if (gst_element_set_state (ms->producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  ms->c = consumer_new (ms->path, TRUE);
  return src;
}

static void
meta_stream_start (MetaStream * ms, const gchar * name, gboolean lane,
    GstBuffer * (*make) (guint))
{
  GstElement *src = meta_stream_open (ms, name, -1);
  guint i;

  g_object_set (ms->c->src, "frame-lane", lane, NULL);
  consumer_start (ms->c);
  for (i = 0; i < META_FRAMES; i++)
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src),
            make (i)), GST_FLOW_OK);
}

/* neither side posted an error; both stopped */
static void
meta_stream_stop (MetaStream * ms)
{
  assert_no_error (ms->producer);
  assert_no_error (ms->c->pipeline);
  consumer_free (ms->c);
  gst_element_set_state (ms->producer, GST_STATE_NULL);
  gst_object_unref (ms->producer);
  g_free (ms->path);
}

/* a stage's figures in s (its -p50 and -p99): FALSE where s has none */
static gboolean
get_stage (const GstStructure * s, const gchar * stage, guint * p50,
    guint * p99)
{
  gchar *f50 = g_strconcat (stage, "-p50", NULL);
  gchar *f99 = g_strconcat (stage, "-p99", NULL);
  gboolean ok = gst_structure_get_uint (s, f50, p50)
      && gst_structure_get_uint (s, f99, p99);

  g_free (f50);
  g_free (f99);
  return ok;
}

/* el's stats: the stage part (metas-us) is a part of the stage whole
 * (publish-us, handoff-us), frame by frame, so neither of its figures is
 * above the whole's; with metas (timed), it took some time */
static void
assert_stage_within (GstElement * el, const gchar * part, const gchar * whole,
    gboolean timed)
{
  GstStructure *s = get_stats (el);
  guint part50, part99, whole50, whole99;

  fail_unless (get_stage (s, part, &part50, &part99)
      && get_stage (s, whole, &whole50, &whole99), "%" GST_PTR_FORMAT, s);
  fail_unless (part50 <= whole50 && part99 <= whole99 && part50 <= part99,
      "%s %u/%u us, %s %u/%u us", part, part50, part99, whole, whole50,
      whole99);
  if (timed)
    fail_unless (part99 > 0, "%s: no time for the metas: %" GST_PTR_FORMAT,
        part, s);
  gst_structure_free (s);
}

GST_START_TEST (test_metas_travel)
{
  const gchar *tags[] = { NULL };
  MetaStream ms;
  Consumer *c;
  GstElement *sink;
  guint i;

  gst_meta_register_custom ("gpushare-test-tracker", tags, NULL, NULL, NULL);
  meta_stream_start (&ms, "metas", TRUE, buffer_with_metas);
  c = ms.c;
  sink = ms.sink;
  for (i = 0; i < META_FRAMES; i++) {
    GstBuffer *buf = next_buffer (c, i);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    check_metas (buf, i);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "metas-sent"),
      META_FRAMES * METAS_PER_FRAME);
  fail_unless_equals_uint64 (stat_u64 (sink, "metas-not-carried"), META_FRAMES);
  fail_unless_equals_uint64 (stat_u64 (c->src, "metas-received"),
      META_FRAMES * METAS_PER_FRAME);
  /* beside their frames in the lane (minor 9), no META */
  fail_unless_equals_uint64 (stat_u64 (c->src, "metas-in-lane"), META_FRAMES);
  fail_unless_equals_uint64 (stat_u64 (c->src, "metas-dropped"), 0);
  /* the time they took, each side's, within its stage */
  assert_stage_within (sink, "metas-us", "publish-us", TRUE);
  assert_stage_within (c->src, "metas-us", "handoff-us", TRUE);
  meta_stream_stop (&ms);
}

GST_END_TEST;

/* META_FRAMES frames made by make () from a producer to a consumer: each
 * one's metas, as describe () gives them, at the far end those of the
 * frame want () makes (a description that holds must_hold, so that there
 * is something to compare), every frame's metas received and none
 * dropped, neither side in error; with a frame lane (lane) beside the
 * frame in its meta region, without it as a META */
static void
assert_metas_arrive (const gchar * name, GstBuffer * (*make) (guint),
    GstBuffer * (*want_make) (guint), gchar * (*describe) (GstBuffer *),
    const gchar * must_hold, guint per_frame, guint64 not_carried,
    gboolean lane)
{
  MetaStream ms;
  guint i;

  meta_stream_start (&ms, name, lane, make);
  for (i = 0; i < META_FRAMES; i++) {
    GstBuffer *buf = next_buffer (ms.c, i), *want = want_make (i);
    gchar *got_text = describe (buf);
    gchar *want_text = describe (want);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    fail_unless (strstr (want_text, must_hold) != NULL);
    fail_unless_equals_string (got_text, want_text);
    g_free (got_text);
    g_free (want_text);
    gst_buffer_unref (want);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-sent"),
      META_FRAMES * per_frame);
  fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-not-carried"),
      not_carried);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-received"),
      META_FRAMES * per_frame);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-dropped"), 0);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-in-lane"),
      lane ? META_FRAMES : 0);
  meta_stream_stop (&ms);
}

/* the same, each frame's metas equal at the far end */
static void
assert_metas_travel (const gchar * name, GstBuffer * (*make) (guint),
    gchar * (*describe) (GstBuffer *), const gchar * must_hold,
    guint per_frame, guint64 not_carried, gboolean lane)
{
  assert_metas_arrive (name, make, make, describe, must_hold, per_frame,
      not_carried, lane);
}

/* Metas larger than a META (12 KiB) travel beside their frame in the
 * lane's meta region (since minor 9): four custom metas of about 3.9 KiB
 * each a frame; to a consumer without a lane they cannot go, and the
 * producer counts them */
#define BIG_METAS 4

static GstBuffer *
buffer_with_big_metas (guint i)
{
  const gchar *tags[] = { NULL };
  GstBuffer *buf = numbered_frame (i, 0x30);
  guint m;

  if (!gst_meta_get_info ("gpushare-test-big"))
    gst_meta_register_custom ("gpushare-test-big", tags, NULL, NULL, NULL);
  for (m = 0; m < BIG_METAS; m++) {
    GstCustomMeta *custom = gst_buffer_add_custom_meta (buf,
        "gpushare-test-big");
    gchar *text = g_strnfill (3900, 'a' + (i + m) % 26);

    gst_structure_set (gst_custom_meta_get_structure (custom), "n",
        G_TYPE_UINT, m, "text", G_TYPE_STRING, text, NULL);
    g_free (text);
  }
  return buf;
}

static gboolean
describe_big_one (GstBuffer * buf, GstMeta ** meta, gpointer user_data)
{
  GString *s = user_data;

  if (gst_meta_info_is_custom ((*meta)->info)) {
    gchar *text = gst_structure_to_string (gst_custom_meta_get_structure (
            (GstCustomMeta *) * meta));

    g_string_append_printf (s, "%s: %s\n", g_type_name ((*meta)->info->api),
        text);
    g_free (text);
  }
  return TRUE;
}

/* what describe_one () appends to a GString of each meta of buf */
static gchar *
describe_each (GstBuffer * buf, GstBufferForeachMetaFunc describe_one)
{
  GString *s = g_string_new (NULL);

  gst_buffer_foreach_meta (buf, describe_one, s);
  return g_string_free (s, FALSE);
}

static gchar *
describe_big_metas (GstBuffer * buf)
{
  return describe_each (buf, describe_big_one);
}

GST_START_TEST (test_lane_metas_large)
{
  MetaStream ms;
  guint i;

  assert_metas_travel ("big-metas-lane", buffer_with_big_metas,
      describe_big_metas, "n=(uint)3", BIG_METAS, 0, TRUE);

  /* without a lane: the frames go with the metas that fit a META (three
   * of the four), the last one counted */
  meta_stream_start (&ms, "big-metas", FALSE, buffer_with_big_metas);
  for (i = 0; i < META_FRAMES; i++) {
    GstBuffer *buf = next_buffer (ms.c, i);
    gchar *text = describe_big_metas (buf);

    fail_unless (strstr (text, "n=(uint)2") && !strstr (text, "n=(uint)3"),
        "frame %u: %.200s", i, text);
    g_free (text);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-not-carried"),
      META_FRAMES);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-received"),
      META_FRAMES * (BIG_METAS - 1));
  meta_stream_stop (&ms);
}

GST_END_TEST;

/* A value that the consumer would refuse as a violation of the protocol
 * is never sent, so that one meta cannot end the stream: a region of
 * interest whose type is not UTF-8 (a GQuark takes any bytes) is left out
 * and counted, and the frame goes with its other metas */
static GstBuffer *
buffer_with_rois (guint i, gboolean unsendable)
{
  GstBuffer *buf = numbered_frame (i, 0x50);

  gst_buffer_add_video_region_of_interest_meta (buf, "face", i, 2, 3, 4);
  if (unsendable)
    gst_buffer_add_video_region_of_interest_meta (buf, "pl\xc3\x28te", 5, 6,
        7, 8);
  gst_buffer_add_video_region_of_interest_meta (buf, "plate", 9, 10, 11, 12);
  return buf;
}

static GstBuffer *
buffer_with_unsendable_roi (guint i)
{
  return buffer_with_rois (i, TRUE);
}

static GstBuffer *
buffer_with_sendable_rois (guint i)
{
  return buffer_with_rois (i, FALSE);
}

static gboolean
describe_roi (GstBuffer * buf, GstMeta ** meta, gpointer user_data)
{
  if ((*meta)->info->api == GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE) {
    GstVideoRegionOfInterestMeta *r = (GstVideoRegionOfInterestMeta *) * meta;

    g_string_append_printf (user_data, "roi %s %u %u %u %u\n",
        g_quark_to_string (r->roi_type), r->x, r->y, r->w, r->h);
  }
  return TRUE;
}

static gchar *
describe_rois (GstBuffer * buf)
{
  return describe_each (buf, describe_roi);
}

GST_START_TEST (test_unsendable_meta_left_out)
{
  gboolean lane;

  for (lane = FALSE; lane <= TRUE; lane++)
    assert_metas_arrive (lane ? "unsendable-lane" : "unsendable",
        buffer_with_unsendable_roi, buffer_with_sendable_rois, describe_rois,
        "roi plate", 2, META_FRAMES, lane);
}

GST_END_TEST;

#if HAVE_GST_ANALYTICS
/* 2c. Inference results: GstAnalyticsRelationMeta, every mtd type gpushare
 * carries and the relations between them, equal by GStreamer's accessors
 * on the consumer's side, a segmentation mtd (1.26) with its mask, a
 * tensor mtd (1.28) */

#define ANALYTICS_FRAMES META_FRAMES
#define ANALYTICS_DETECTIONS 12

static GstBuffer *
buffer_with_analytics (guint i)
{
  GstBuffer *buf = numbered_frame (i, 0x20);
  GstAnalyticsRelationMeta *rmeta;
  guint d;

  rmeta = gst_buffer_add_analytics_relation_meta (buf);
  for (d = 0; d < ANALYTICS_DETECTIONS; d++) {
    GstAnalyticsODMtd od;
    GstAnalyticsClsMtd cls;
    GstAnalyticsTrackingMtd trk;
    gfloat levels[2] = { 0.75f - d / 100.0f, 0.25f };
    GQuark classes[2] = { g_quark_from_string ("sedan"),
      g_quark_from_string (d % 2 ? "truck" : "van")
    };

#if GST_CHECK_VERSION(1, 26, 0)
    fail_unless (gst_analytics_relation_meta_add_oriented_od_mtd (rmeta,
            g_quark_from_string (d % 3 ? "car" : "person"), 10 * d + i,
            -5 + (gint) d, 30, 20, 0.125f * d, 0.5f + d / 64.0f, &od));
#else
    fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
            g_quark_from_string (d % 3 ? "car" : "person"), 10 * d + i,
            -5 + (gint) d, 30, 20, 0.5f + d / 64.0f, &od));
#endif
    fail_unless (gst_analytics_relation_meta_add_cls_mtd (rmeta, 2, levels,
            classes, &cls));
    fail_unless (gst_analytics_relation_meta_add_tracking_mtd (rmeta,
            1000 + d, i * GST_MSECOND, &trk));
    fail_unless (gst_analytics_tracking_mtd_update_last_seen (&trk,
            (i + 1) * 2 * GST_MSECOND));
    if (d % 5 == 0)
      fail_unless (gst_analytics_tracking_mtd_set_lost (&trk));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_CONTAIN, od.id, cls.id));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_IS_PART_OF, cls.id, od.id));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_RELATE_TO, trk.id, od.id));
  }
#if GST_CHECK_VERSION(1, 26, 0)
  {
    /* its mask, a buffer of its own (the mtd takes it): 15x8 GRAY8 in
     * rows of 20 bytes, the last 5 of each not part of it (a width that
     * is no multiple of 4: GStreamer's own stride would be 16) */
    GstBuffer *mask = gst_buffer_new_allocate (NULL, 20 * 8, NULL);
    gsize offset[GST_VIDEO_MAX_PLANES] = { 0, };
    gint stride[GST_VIDEO_MAX_PLANES] = { 20, };
    GstAnalyticsSegmentationMtd seg;
    guint regions[2] = { 1, 2 };
    GstMapInfo map;

    fail_unless (gst_buffer_map (mask, &map, GST_MAP_WRITE));
    for (d = 0; d < map.size; d++)
      map.data[d] = d % 20 >= 15 ? 0xee : (d + i) % 3 ? 1 : 2;
    gst_buffer_unmap (mask, &map);
    gst_buffer_add_video_meta_full (mask, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_FORMAT_GRAY8, 15, 8, 1, offset, stride);
    fail_unless (gst_analytics_relation_meta_add_segmentation_mtd (rmeta,
            mask, GST_SEGMENTATION_TYPE_SEMANTIC, 2, regions, 4 + i, 2, 15, 8,
            &seg));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_RELATE_TO, seg.id, 0));
  }
#endif
#if GST_CHECK_VERSION(1, 28, 0)
  {
    /* a tensor mtd (1.28): the first detection's embedding, FLOAT32 1x4 */
    GstAnalyticsTensorMtd emb;
    gsize dims[2] = { 1, 4 };
    gfloat v[4] = { (gfloat) i, i + 0.5f, -1.0f, 0.25f };

    fail_unless (gst_analytics_relation_meta_add_tensor_mtd_simple (rmeta,
            g_quark_from_string ("embedding"), GST_TENSOR_DATA_TYPE_FLOAT32,
            gst_buffer_new_memdup (v, sizeof (v)),
            GST_TENSOR_DIM_ORDER_ROW_MAJOR, 2, dims, &emb));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_RELATE_TO, emb.id, 0));
  }
#endif
  return buf;
}

GST_START_TEST (test_analytics_travel)
{
  /* 12 detections: od, cls and trk each, 3 relations each; a
   * segmentation mtd with its mask (1.26) and a tensor mtd (1.28), each
   * related to the first detection */
  gboolean lane;

  /* beside the frame in the lane, and as a META to a consumer without */
  for (lane = FALSE; lane <= TRUE; lane++)
    assert_metas_travel (lane ? "analytics-lane" : "analytics",
        buffer_with_analytics, gpushare_test_analytics_describe, "rel ", 1,
        0, lane);
}

GST_END_TEST;

/* Values that the consumer would refuse as a violation of the protocol
 * are never sent: a detection whose confidence is not a number, a class
 * whose level is infinite, a label that is not UTF-8 (a model's output and
 * a GQuark take them) are each left out with their relations and counted,
 * and the rest of the analytics meta goes (before, the consumer ended the
 * stream with PROTOCOL); from 1.26 a tensor meta whose tensor has an order
 * GStreamer has not is left out too */
static GstBuffer *
buffer_with_results (guint i, gboolean unsendable)
{
  GstBuffer *buf = numbered_frame (i, 0x60);
  GstAnalyticsRelationMeta *rmeta;
  GstAnalyticsODMtd car, person, bad;
  GstAnalyticsClsMtd cls;
  gfloat level = INFINITY;
  GQuark sedan = g_quark_from_string ("sedan");

  rmeta = gst_buffer_add_analytics_relation_meta (buf);
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
          g_quark_from_string ("car"), i, 2, 30, 20, 0.5f, &car));
  if (unsendable) {
    fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
            g_quark_from_string ("car"), 40, 2, 30, 20, NAN, &bad));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_CONTAIN, bad.id, car.id));
    fail_unless (gst_analytics_relation_meta_add_cls_mtd (rmeta, 1, &level,
            &sedan, &cls));
    fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_IS_PART_OF, cls.id, car.id));
    fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
            g_quark_from_string ("b\xc3\x28s"), 80, 2, 30, 20, 0.75f, &bad));
  }
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
          g_quark_from_string ("person"), 120, 2, 10, 30, 0.875f, &person));
  fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
          GST_ANALYTICS_REL_TYPE_RELATE_TO, person.id, car.id));
#if GST_CHECK_VERSION(1, 26, 0)
  if (unsendable) {
    GstTensorMeta *tm = gst_buffer_add_tensor_meta (buf);
    GstTensor **tensors = g_new (GstTensor *, 1);
    gsize dims[2] = { 1, 4 };

    tensors[0] = gst_tensor_new_simple (g_quark_from_string ("scores"),
        GST_TENSOR_DATA_TYPE_FLOAT32, gst_buffer_new_allocate (NULL, 16, NULL),
        GST_TENSOR_DIM_ORDER_ROW_MAJOR, 2, dims);
    fail_unless (tensors[0] != NULL);
    tensors[0]->dims_order = 7;
    gst_tensor_meta_set (tm, 1, tensors);
  }
#endif
  return buf;
}

static GstBuffer *
buffer_with_unsendable_results (guint i)
{
  return buffer_with_results (i, TRUE);
}

static GstBuffer *
buffer_with_sendable_results (guint i)
{
  return buffer_with_results (i, FALSE);
}

GST_START_TEST (test_unsendable_results_left_out)
{
  /* three mtds a frame, and from 1.26 the tensor meta */
  guint64 left_out = GST_CHECK_VERSION (1, 26, 0) ? 4 : 3;
  gboolean lane;

  for (lane = FALSE; lane <= TRUE; lane++)
    assert_metas_arrive (lane ? "unsendable-results-lane" :
        "unsendable-results", buffer_with_unsendable_results,
        buffer_with_sendable_results, gpushare_test_analytics_describe,
        "rel ", 1, META_FRAMES * left_out, lane);
}

GST_END_TEST;

/* An analytics meta past the limits (more relations than
 * GPUSHARE_META_MAX_RELATIONS) is not carried, and counted once, not also
 * for the mtds of it that were left out (from 1.26 the tensor meta beside
 * it counts) */
static GstBuffer *
buffer_with_many_results (guint i)
{
  GstBuffer *buf = buffer_with_results (i, TRUE);
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  guint a, b, n;

  gpushare_test_analytics_detect (buf, i, 40);
  n = gst_analytics_relation_get_length (rmeta);
  for (a = 0; a < n; a++)
    for (b = 0; b < n; b++)
      if (a != b)
        gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_RELATE_TO, a, b);
  fail_unless (n * (n - 1) > GPUSHARE_META_MAX_RELATIONS + 4 * n);
  return buf;
}

static GstBuffer *
buffer_without_results (guint i)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);

  GST_BUFFER_OFFSET (buf) = i;
  return buf;
}

GST_START_TEST (test_results_not_carried_once)
{
  assert_metas_arrive ("results-not-carried", buffer_with_many_results,
      buffer_without_results, gpushare_test_analytics_describe, "", 0,
      META_FRAMES * (GST_CHECK_VERSION (1, 26, 0) ? 2 : 1), FALSE);
}

GST_END_TEST;
#endif

/* A producer's custom meta names become types in the consumer's process:
 * a name GObject would refuse, or one of a type that exists, is dropped,
 * never registered (a critical would be fatal here), and a kind this
 * version does not know is skipped */
static void
put_entry_str (GByteArray * b, const gchar * s)
{
  guint32 len = GUINT32_TO_LE (strlen (s));

  g_byte_array_append (b, (const guint8 *) &len, 4);
  g_byte_array_append (b, (const guint8 *) s, strlen (s));
}

static void
add_entry (GpuShareFrameMetas * m, guint16 kind, GByteArray * body)
{
  guint16 k = GUINT16_TO_LE (kind), zero = 0;
  guint32 len = GUINT32_TO_LE (body->len);

  memcpy (m->data + m->data_len, &k, 2);
  memcpy (m->data + m->data_len + 2, &zero, 2);
  memcpy (m->data + m->data_len + 4, &len, 4);
  memcpy (m->data + m->data_len + 8, body->data, body->len);
  m->data_len += 8 + body->len;
  m->n_entries++;
  g_byte_array_set_size (body, 0);
}

GST_START_TEST (test_hostile_meta_names)
{
  /* and names of the CamelCase GObject libraries give their types, not
   * registered yet in this process (GSubprocess: a meta of that name
   * broke GIO here for good) */
  static const gchar *const names[] = { "bad name!", "GstBuffer", "x",
    "9lives", "GSubprocess", "MyCustomMeta", "gpushare-test-remote",
  };
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  GstBuffer *buf = gst_buffer_new ();
  guint i, dropped = 0;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    put_entry_str (body, names[i]);
    put_entry_str (body, "s, track=(int)3");
    add_entry (m, GPUSHARE_META_CUSTOM, body);
  }
  g_byte_array_append (body, (const guint8 *) "future", 6);
  add_entry (m, 0x4242, body);
  fail_unless (gpushare_frame_meta_check (m, NULL));
  /* the one good name, registered here on the way */
  fail_unless_equals_int (gpushare_frame_meta_apply (m, buf, &dropped), 1);
  fail_unless_equals_int (dropped, 7);
  fail_unless (gst_buffer_get_custom_meta (buf, "gpushare-test-remote"));
  fail_unless (g_type_from_name ("GSubprocess") == 0, "GSubprocess taken");
  fail_unless (g_type_from_name ("MyCustomMeta") == 0);
  gst_buffer_unref (buf);
  g_byte_array_unref (body);
  g_free (m);
}

GST_END_TEST;

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* 2e. Payloads in the side memory: a 1024x512 mask (512 KiB, past the
 * 256 KiB a frame's metas may take inline) goes beside its frame in the
 * side memory of its slot, written once, and the consumer reads it in
 * place: the mask it gets holds the slot, so that the producer, writing
 * the frames after it through every other slot, never reuses it under the
 * mask */
#define SIDE_MASK_W 1024
#define SIDE_MASK_H 512
#define SIDE_FRAMES 24

static GstBuffer *
buffer_with_mask (guint i)
{
  GstBuffer *buf = numbered_frame (i, 0x40);

  fail_unless (gpushare_test_analytics_segment (buf, i, SIDE_MASK_W,
          SIDE_MASK_H, FALSE));
  return buf;
}

/* the mask of buf's segmentation mtd, a reference; NULL: none */
static GstBuffer *
mask_of (GstBuffer * buf)
{
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  GstAnalyticsSegmentationMtd seg;
  gpointer state = NULL;
  gint x, y;
  guint w, h;

  if (!rmeta || !gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_segmentation_mtd_get_mtd_type (), &seg))
    return NULL;
  return gst_analytics_segmentation_mtd_get_mask (&seg, &x, &y, &w, &h);
}

static void
assert_mask_of (GstBuffer * mask, guint i)
{
  GstBuffer *want = buffer_with_mask (i), *want_mask = mask_of (want);
  gchar *got_text = gpushare_test_mask_digest (mask);
  gchar *want_text = gpushare_test_mask_digest (want_mask);

  fail_unless (got_text != NULL && want_text != NULL);
  fail_unless_equals_string (got_text, want_text);
  g_free (got_text);
  g_free (want_text);
  gst_buffer_unref (want_mask);
  gst_buffer_unref (want);
}

GST_START_TEST (test_masks_in_side_memory)
{
  gint64 sizes[2] = { (gint64) SIDE_MASK_W * SIDE_MASK_H, 0 };
  guint run;

  for (run = 0; run < 2; run++) {
    gboolean side = sizes[run] > 0;
    guint i, n = side ? SIDE_FRAMES : 4;
    MetaStream ms;
    GstElement *src = meta_stream_open (&ms, side ? "side-masks" :
        "no-side-masks", sizes[run]);
    GstBuffer *held = NULL;
    Consumer *c = ms.c;

    consumer_start (c);
    /* one at a time, so that the consumer holds frames in place (a
     * downstream that holds more than max-in-place gets copies) */
    for (i = 0; i < n; i++) {
      GstBuffer *buf, *mask;

      fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src),
              buffer_with_mask (i)), GST_FLOW_OK);
      buf = next_buffer (c, i);
      mask = mask_of (buf);

      fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
      if (!side) {
        /* nowhere to go: the frame comes without it */
        fail_if (mask, "frame %u: a mask without side memory", i);
        gst_buffer_unref (buf);
        continue;
      }
      fail_unless (mask != NULL, "frame %u: no mask", i);
      assert_mask_of (mask, i);
      /* read in place: the side memory, mapped read-only */
      fail_unless (GST_MEMORY_IS_READONLY (gst_buffer_peek_memory (mask, 0)));
      gst_buffer_unref (buf);
      /* frame 0's mask outlives its frame */
      if (i == 0)
        held = mask;
      else
        gst_buffer_unref (mask);
    }
    if (side) {
      /* 23 frames later, through the 7 other slots: still frame 0's */
      assert_mask_of (held, 0);
      gst_buffer_unref (held);
      fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-not-carried"), 0);
      fail_unless_equals_uint64 (stat_u64 (c->src, "metas-received"), n);
    } else {
      fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-not-carried"), n);
    }
    fail_unless_equals_uint64 (stat_u64 (c->src, "metas-dropped"), 0);
    meta_stream_stop (&ms);
  }
}

GST_END_TEST;

/* Two 512 KiB masks on a frame whose side memory takes one: the second
 * fits nowhere (inline a frame's metas take at most 256 KiB), and is left
 * out alone, counted; the detections and the first mask go (before, the
 * whole analytics meta was left out) */
static GstBuffer *
buffer_with_masks (guint i, guint n_masks)
{
  GstBuffer *buf = numbered_frame (i, 0x70);
  guint m;

  gpushare_test_analytics_detect (buf, i, 4);
  for (m = 0; m < n_masks; m++)
    fail_unless (gpushare_test_analytics_segment (buf, i + m, SIDE_MASK_W,
            SIDE_MASK_H, FALSE));
  return buf;
}

GST_START_TEST (test_mask_past_the_side_memory)
{
  MetaStream ms;
  GstElement *src = meta_stream_open (&ms, "side-full",
      (gint64) SIDE_MASK_W * SIDE_MASK_H);
  guint i;

  consumer_start (ms.c);
  for (i = 0; i < 4; i++) {
    GstBuffer *buf, *want = buffer_with_masks (i, 1);
    gchar *got_text, *want_text = gpushare_test_analytics_describe (want);

    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src),
            buffer_with_masks (i, 2)), GST_FLOW_OK);
    buf = next_buffer (ms.c, i);
    got_text = gpushare_test_analytics_describe (buf);
    fail_unless (strstr (want_text, " seg ") != NULL);
    fail_unless_equals_string (got_text, want_text);
    g_free (got_text);
    g_free (want_text);
    gst_buffer_unref (want);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (stat_u64 (ms.sink, "metas-not-carried"), 4);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-received"), 4);
  fail_unless_equals_uint64 (stat_u64 (ms.c->src, "metas-dropped"), 0);
  meta_stream_stop (&ms);
}

GST_END_TEST;

/* A frame the consumer copies (downstream holds max-in-place already)
 * gives its slot back at once: its mask is copied too, not kept in place */
GST_START_TEST (test_masks_copied_with_their_frame)
{
  MetaStream ms;
  GstElement *src = meta_stream_open (&ms, "side-masks-copied",
      (gint64) SIDE_MASK_W * SIDE_MASK_H);
  GstBuffer *bufs[2], *masks[2];
  Consumer *c = ms.c;
  guint i;

  g_object_set (c->src, "max-in-place", 1, NULL);
  consumer_start (c);
  for (i = 0; i < 2; i++) {
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src),
            buffer_with_mask (i)), GST_FLOW_OK);
    bufs[i] = next_buffer (c, i);
    masks[i] = mask_of (bufs[i]);
    fail_unless (masks[i] != NULL);
    assert_mask_of (masks[i], i);
  }
  /* the first in place, the second (one held already) a copy */
  fail_unless (GST_MEMORY_IS_READONLY (gst_buffer_peek_memory (masks[0], 0)));
  fail_if (GST_MEMORY_IS_READONLY (gst_buffer_peek_memory (masks[1], 0)));
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-copied"), 1);
  for (i = 0; i < 2; i++) {
    gst_buffer_unref (masks[i]);
    gst_buffer_unref (bufs[i]);
  }
  meta_stream_stop (&ms);
}

GST_END_TEST;
#endif

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* 2d. Raw model outputs: GstTensorMeta, its tensors inline (system
 * memory, small), equal on the consumer's side */
static GstBuffer *
buffer_with_tensors (guint i)
{
  GstBuffer *buf = numbered_frame (i, 0x60);
  GstTensorMeta *tm;
  GstTensor **ts = g_new0 (GstTensor *, 3);
  gsize dims_a[3] = { 1, 4, 3 }, dims_b[1] = { 5 }, dims_c[2] = { 3, 3 };
  /* four floats of padding past the twelve the dims make, as an
   * allocator that rounds its memory up leaves: not sent */
  gfloat scores[16] = { 0, };
  guint8 labels[5], nibbles[5];
  guint k;

  for (k = 0; k < 16; k++)
    scores[k] = i + k / 16.0f;
  for (k = 0; k < 5; k++) {
    labels[k] = i * 7 + k;
    nibbles[k] = 0x10 * k + i;
  }
  /* made by hand: gst_tensor_new_simple () wants the exact size */
  ts[0] = gst_tensor_alloc (3);
  ts[0]->id = g_quark_from_string ("scores");
  ts[0]->layout = GST_TENSOR_LAYOUT_CONTIGUOUS;
  ts[0]->data_type = GST_TENSOR_DATA_TYPE_FLOAT32;
  ts[0]->data = gst_buffer_new_memdup (scores, sizeof (scores));
  ts[0]->dims_order = GST_TENSOR_DIM_ORDER_ROW_MAJOR;
  for (k = 0; k < 3; k++)
    ts[0]->dims[k] = dims_a[k];
  ts[1] = gst_tensor_new_simple (g_quark_from_string ("labels"),
      GST_TENSOR_DATA_TYPE_UINT8, gst_buffer_new_memdup (labels,
          sizeof (labels)), GST_TENSOR_DIM_ORDER_COL_MAJOR, 1, dims_b);
  /* 9 elements of 4 bits: 5 bytes */
  ts[2] = gst_tensor_new_simple (g_quark_from_string ("packed"),
      GST_TENSOR_DATA_TYPE_INT4, gst_buffer_new_memdup (nibbles,
          sizeof (nibbles)), GST_TENSOR_DIM_ORDER_ROW_MAJOR, 2, dims_c);
  tm = gst_buffer_add_tensor_meta (buf);
  gst_tensor_meta_set (tm, 3, ts);
  return buf;
}

/* the bytes a tensor's dims and data type make */
static gsize
tensor_data_bytes (const GstTensor * t)
{
  static const guint8 bits[] = { 4, 8, 16, 32, 64, 4, 8, 16, 32, 64, 16, 32,
    64, 16
  };
  gsize d, n = 1;

  for (d = 0; d < t->num_dims; d++)
    n *= t->dims[d];
  return (n * bits[t->data_type] + 7) / 8;
}

static gchar *
describe_tensors (GstBuffer * buf)
{
  GstTensorMeta *tm = gst_buffer_get_tensor_meta (buf);
  GString *s = g_string_new (NULL);
  gsize i, d;

  for (i = 0; tm && i < tm->num_tensors; i++) {
    const GstTensor *t = gst_tensor_meta_get (tm, i);
    GstMapInfo map;

    g_string_append_printf (s, "%s layout %d type %d order %d dims",
        g_quark_to_string (t->id), t->layout, t->data_type, t->dims_order);
    for (d = 0; d < t->num_dims; d++)
      g_string_append_printf (s, " %" G_GSIZE_FORMAT, t->dims[d]);
    fail_unless (gst_buffer_map (t->data, &map, GST_MAP_READ));
    fail_unless (map.size >= tensor_data_bytes (t));
    g_string_append (s, " data");
    /* what the dims and the type make, padding left out */
    for (d = 0; d < tensor_data_bytes (t); d++)
      g_string_append_printf (s, " %02x", map.data[d]);
    gst_buffer_unmap (t->data, &map);
    g_string_append (s, "\n");
  }
  return g_string_free (s, FALSE);
}

GST_START_TEST (test_tensors_travel)
{
  gboolean lane;

  for (lane = FALSE; lane <= TRUE; lane++)
    assert_metas_travel (lane ? "tensors-lane" : "tensors",
        buffer_with_tensors, describe_tensors,
        "packed layout 0 type 0 order 0 dims 3 3", 1, 0, lane);
}

GST_END_TEST;
#endif

/* Analytics entries from a hostile producer: every count, index, length
 * and float is checked before anything is added, and the whole META is
 * refused with the field named; an mtd of a type this version does not
 * know is left out with its relations, and counted */
static void
put_u32_le (GByteArray * b, guint32 v)
{
  v = GUINT32_TO_LE (v);
  g_byte_array_append (b, (const guint8 *) &v, 4);
}

static void
put_f32_le (GByteArray * b, gfloat f)
{
  guint32 v;

  memcpy (&v, &f, 4);
  put_u32_le (b, v);
}

/* an od mtd: its type name, length and body */
static void
put_od (GByteArray * b, const gchar * label, gfloat conf)
{
  GByteArray *body = g_byte_array_new ();
  guint i;

  put_entry_str (body, label);
  for (i = 0; i < 4; i++)
    put_u32_le (body, 10 + i);
  put_f32_le (body, conf);
  put_f32_le (body, 0);
  put_entry_str (b, "object-detection");
  put_u32_le (b, body->len);
  g_byte_array_append (b, body->data, body->len);
  g_byte_array_unref (body);
}

/* a segmentation mtd: n_regions ids, a mask of format and size whose
 * data says len bytes and has as many */
static void
put_seg (GByteArray * b, guint32 n_regions, guint32 format, guint32 width,
    guint32 height, guint32 len)
{
  GByteArray *body = g_byte_array_new ();
  guint i;

  for (i = 0; i < 4; i++)
    put_u32_le (body, 8 * i);
  put_u32_le (body, n_regions);
  for (i = 0; i < n_regions; i++)
    put_u32_le (body, i + 1);
  put_u32_le (body, format);
  put_u32_le (body, width);
  put_u32_le (body, height);
  put_u32_le (body, len);
  for (i = 0; i < len; i++)
    g_byte_array_append (body, (const guint8 *) "\1", 1);
  put_entry_str (b, "segmentation");
  put_u32_le (b, body->len);
  g_byte_array_append (b, body->data, body->len);
  g_byte_array_unref (body);
}

/* a tensor's fields (a tensor meta's, or a tensor mtd's body): id,
 * contiguous, type, order, nd dims of dim each (at most 9 written), its
 * data inline: len bytes said, data's written (NULL: at most 64 zeros) */
static void
put_tensor_fields (GByteArray * b, const gchar * id, guint32 type,
    guint32 order, guint32 nd, guint64 dim, const guint8 * data, guint32 len)
{
  guint8 zero[64] = { 0, };
  guint d;

  put_entry_str (b, id);
  put_u32_le (b, 0);
  put_u32_le (b, type);
  put_u32_le (b, order);
  put_u32_le (b, nd);
  for (d = 0; d < nd && d < 9; d++) {
    guint64 v = GUINT64_TO_LE (dim);

    g_byte_array_append (b, (const guint8 *) &v, 8);
  }
  put_u32_le (b, len);
  if (data)
    g_byte_array_append (b, data, len);
  else
    g_byte_array_append (b, zero, MIN (len, sizeof (zero)));
}

/* a frame's metas of one entry of kind: whether the consumer's check
 * takes them */
static gboolean
entry_ok (guint16 kind, GByteArray * body, gchar ** why)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  gboolean ok;

  add_entry (m, kind, body);
  ok = gpushare_frame_meta_check (m, why);
  g_free (m);
  return ok;
}

/* the check refuses an entry of kind, and says field */
static void
assert_entry_refused (guint16 kind, GByteArray * body, const gchar * field)
{
  gchar *why = NULL;

  fail_if (entry_ok (kind, body, &why), "%s: taken", field);
  fail_unless (why && strstr (why, field), "%s: refused for '%s'", field, why);
  g_free (why);
}

/* one analytics entry: n mtds as made by mtds (), then the relations */
static gboolean
analytics_entry_ok (GByteArray * body, gchar ** why)
{
  return entry_ok (GPUSHARE_META_ANALYTICS, body, why);
}

static void
assert_refused (GByteArray * body, const gchar * field)
{
  assert_entry_refused (GPUSHARE_META_ANALYTICS, body, field);
}

/* kind 8: the bytes of gst_meta_serialize (), name_len and name as given
 * (name_len G_MAXUINT32: strlen (name)), total as given (0: the bytes
 * written), then a payload */
static void
put_serialized (GByteArray * b, guint32 total, guint32 name_len,
    const gchar * name, const guint8 * payload, gsize n)
{
  guint start = b->len;
  guint8 version = 0;

  put_u32_le (b, 0);
  put_u32_le (b, name_len == G_MAXUINT32 ? strlen (name) : name_len);
  g_byte_array_append (b, (const guint8 *) name, strlen (name) + 1);
  g_byte_array_append (b, &version, 1);
  if (n)
    g_byte_array_append (b, payload, n);
  total = total ? total : b->len - start;
  total = GUINT32_TO_LE (total);
  memcpy (b->data + start, &total, 4);
}

static void
assert_serialized_refused (GByteArray * body, const gchar * field)
{
  assert_entry_refused (GPUSHARE_META_SERIALIZED, body, field);
}

#if GST_CHECK_VERSION(1, 24, 0)
/* a meta of an application's that serializes: one 64-bit value */
typedef struct
{
  GstMeta meta;
  guint64 value;
} SerialMeta;

static GType
serial_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        gst_meta_api_type_register ("GpuShareTestSerialMetaAPI", tags));
  return type;
}

static gboolean
serial_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  ((SerialMeta *) meta)->value = 0;
  return TRUE;
}

static gboolean
serial_meta_serialize (const GstMeta * meta, GstByteArrayInterface * data,
    guint8 * version)
{
  guint64 v = GUINT64_TO_LE (((const SerialMeta *) meta)->value);

  return gst_byte_array_interface_append_data (data, (const guint8 *) &v, 8);
}

static GstMeta *
serial_meta_deserialize (const GstMetaInfo * info, GstBuffer * buffer,
    const guint8 * data, gsize size, guint8 version)
{
  SerialMeta *m;

  if (size != 8 || version != 0)
    return NULL;
  m = (SerialMeta *) gst_buffer_add_meta (buffer, info, NULL);
  m->value = GST_READ_UINT64_LE (data);
  return (GstMeta *) m;
}

static const GstMetaInfo *
serial_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    GstMetaInfo *mi = gst_meta_info_new (serial_meta_api_get_type (),
        "GpuShareTestSerialMeta", sizeof (SerialMeta));

    mi->init_func = serial_meta_init;
    mi->serialize_func = serial_meta_serialize;
    mi->deserialize_func = serial_meta_deserialize;
    g_once_init_leave ((GstMetaInfo **) & info,
        (GstMetaInfo *) gst_meta_info_register (mi));
  }
  return info;
}
#endif

/* Kind 8 is handed to GStreamer's gst_meta_deserialize (), which adds the
 * name's length to 10 in 32 bits (a length near 2^32 had it read 4 GiB
 * past the entry: a crash), and to the deserializers of GStreamer's own
 * metas, which trust their bytes (a reference timestamp of
 * GST_CLOCK_TIME_NONE, a video meta of a format GStreamer has not: a
 * CRITICAL, then a crash).  The consumer reads the header itself, and
 * refuses the metas that have a kind of their own or are never carried;
 * an application's serializable meta goes across as it was. */
GST_START_TEST (test_hostile_serialized)
{
  GByteArray *b = g_byte_array_new ();
  const guint8 ts[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0, 0, 0, 0, 0, 0, 0, 0, 't', '/', 'x', 0
  };
  const guint8 vmeta[36] = { 0, 0, 0, 0, 0x0f, 0x27 };

  /* a sound header of a meta this process does not know: taken (and
   * dropped when added) */
  put_serialized (b, 0, G_MAXUINT32, "GpuShareTestNoSuchMeta", NULL, 0);
  fail_unless (entry_ok (GPUSHARE_META_SERIALIZED, b, NULL));
  /* shorter than a header, a name's length that wraps, a total other
   * than the entry's, a name without its NUL, not printable, empty */
  put_u32_le (b, 8);
  put_u32_le (b, 0xfffffffe);
  assert_serialized_refused (b, "serialized meta header");
  put_serialized (b, 0, 0xfffffffe, "GpuShareTestNoSuchMeta", NULL, 0);
  assert_serialized_refused (b, "serialized meta header");
  put_serialized (b, 1000, G_MAXUINT32, "GpuShareTestNoSuchMeta", NULL, 0);
  assert_serialized_refused (b, "serialized meta header");
  put_serialized (b, 0, 4, "GpuShareTestNoSuchMeta", NULL, 0);
  assert_serialized_refused (b, "serialized meta header");
  put_serialized (b, 0, G_MAXUINT32, "GpuShare\x01Meta", NULL, 0);
  assert_serialized_refused (b, "serialized meta name");
  put_serialized (b, 0, 0, "", NULL, 0);
  assert_serialized_refused (b, "serialized meta header");
  /* GStreamer's own, which have a kind of their own or never travel */
  put_serialized (b, 0, G_MAXUINT32, "GstReferenceTimestampMeta", ts,
      sizeof (ts));
  assert_serialized_refused (b, "serialized meta of a kind of its own");
  put_serialized (b, 0, G_MAXUINT32, "GstVideoMeta", vmeta, sizeof (vmeta));
  assert_serialized_refused (b, "serialized meta of a kind of its own");
  {
    const gchar *tags[] = { NULL };

    gst_meta_register_custom ("gpushare-test-serialized-custom", tags, NULL,
        NULL, NULL);
  }
  put_serialized (b, 0, G_MAXUINT32, "gpushare-test-serialized-custom",
      NULL, 0);
  assert_serialized_refused (b, "serialized meta of a kind of its own");
#if GST_CHECK_VERSION(1, 24, 0)
  {
    /* an application's meta: made again at the far end, equal */
    GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
    GstBuffer *src = gst_buffer_new (), *dst = gst_buffer_new ();
    SerialMeta *sm = (SerialMeta *) gst_buffer_add_meta (src,
        serial_meta_get_info (), NULL);
    GByteArray *bytes = g_byte_array_new ();
    guint dropped = 0;

    sm->value = G_GUINT64_CONSTANT (0x0123456789abcdef);
    fail_unless (gst_meta_serialize_simple ((GstMeta *) sm, bytes));
    g_byte_array_append (b, bytes->data, bytes->len);
    add_entry (m, GPUSHARE_META_SERIALIZED, b);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    fail_unless_equals_int (gpushare_frame_meta_apply (m, dst, &dropped), 1);
    fail_unless_equals_int (dropped, 0);
    sm = (SerialMeta *) gst_buffer_get_meta (dst, serial_meta_api_get_type ());
    fail_unless (sm != NULL);
    fail_unless_equals_uint64 (sm->value, G_GUINT64_CONSTANT
        (0x0123456789abcdef));
    g_byte_array_unref (bytes);
    gst_buffer_unref (src);
    gst_buffer_unref (dst);
    g_free (m);
  }
#endif
  g_byte_array_unref (b);
}

GST_END_TEST;


GST_START_TEST (test_hostile_analytics)
{
  GByteArray *b = g_byte_array_new ();

  /* a sound entry: two detections, one relation */
  put_u32_le (b, 2);
  put_od (b, "car", 0.5f);
  put_od (b, "person", 0.25f);
  put_u32_le (b, 1);
  put_u32_le (b, 0);
  put_u32_le (b, 1);
  put_u32_le (b, 4);
  fail_unless (analytics_entry_ok (b, NULL));
  /* more mtds than GPUSHARE_META_MAX_MTDS */
  put_u32_le (b, GPUSHARE_META_MAX_MTDS + 1);
  assert_refused (b, "analytics mtd count");
  /* a count past the payload */
  put_u32_le (b, 3);
  put_od (b, "car", 0.5f);
  assert_refused (b, "analytics mtd");
  /* an mtd longer than what is left */
  put_u32_le (b, 1);
  put_entry_str (b, "object-detection");
  put_u32_le (b, 1000);
  assert_refused (b, "analytics mtd length");
  /* NaN and infinite confidences */
  put_u32_le (b, 1);
  put_od (b, "car", NAN);
  put_u32_le (b, 0);
  assert_refused (b, "object detection confidence");
  put_u32_le (b, 1);
  put_od (b, "car", INFINITY);
  put_u32_le (b, 0);
  assert_refused (b, "object detection confidence");
  /* a relation to an mtd past the count, and types GStreamer has not */
  put_u32_le (b, 1);
  put_od (b, "car", 0.5f);
  put_u32_le (b, 1);
  put_u32_le (b, 0);
  put_u32_le (b, 1);
  put_u32_le (b, 4);
  assert_refused (b, "analytics relation");
  put_u32_le (b, 2);
  put_od (b, "car", 0.5f);
  put_od (b, "car", 0.5f);
  put_u32_le (b, 1);
  put_u32_le (b, 0);
  put_u32_le (b, 1);
  put_u32_le (b, 1);
  assert_refused (b, "analytics relation");
  /* more relations than GPUSHARE_META_MAX_RELATIONS */
  put_u32_le (b, 0);
  put_u32_le (b, GPUSHARE_META_MAX_RELATIONS + 1);
  assert_refused (b, "analytics relation count");
  /* classes past GPUSHARE_META_MAX_CLASSES, a tracking mtd lost twice */
  put_u32_le (b, 1);
  put_entry_str (b, "classification");
  put_u32_le (b, 4);
  put_u32_le (b, GPUSHARE_META_MAX_CLASSES + 1);
  put_u32_le (b, 0);
  assert_refused (b, "classification count");
  /* segmentation: a sound one, then a mask whose bytes are not what its
   * size and format make, a format that is not GRAY8 or GRAY16, an empty
   * mask, more regions than GPUSHARE_META_MAX_REGIONS */
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_GRAY16_LE, 4, 3, 24);
  put_u32_le (b, 0);
  fail_unless (analytics_entry_ok (b, NULL));
  g_byte_array_set_size (b, 0);
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_GRAY8, 4, 3, 11);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation mask size");
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_GRAY16_LE, 4, 3, 12);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation mask size");
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_I420, 4, 3, 12);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation mask format");
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_GRAY8, 0, 3, 0);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation mask size");
  /* a size whose bytes wrap in 64 bits to what came: 4294836226 x
   * 2147549185 x 2 = 2^64 + 4 (a stride of -262140 on the mask's video
   * meta, its rows far past its 4 bytes) */
  put_u32_le (b, 1);
  put_seg (b, 2, GST_VIDEO_FORMAT_GRAY16_LE, 4294836226u, 2147549185u, 4);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation mask size");
  put_u32_le (b, 1);
  put_seg (b, GPUSHARE_META_MAX_REGIONS + 1, GST_VIDEO_FORMAT_GRAY8, 1, 1, 1);
  put_u32_le (b, 0);
  assert_refused (b, "segmentation region count");
  {
    GByteArray *t = g_byte_array_new ();
    guint64 v = 0;
    guint i;

    for (i = 0; i < 3; i++)
      g_byte_array_append (t, (const guint8 *) &v, 8);
    put_u32_le (t, 2);
    put_u32_le (b, 1);
    put_entry_str (b, "object-tracking");
    put_u32_le (b, t->len);
    g_byte_array_append (b, t->data, t->len);
    put_u32_le (b, 0);
    g_byte_array_unref (t);
    assert_refused (b, "tracking lost");
  }
  /* a label that is not UTF-8 */
  put_u32_le (b, 1);
  put_od (b, "car\xff", 0.5f);
  put_u32_le (b, 0);
  assert_refused (b, "object detection type");

  g_byte_array_unref (b);
  b = g_byte_array_new ();
  {
    /* tensors: a data length the dims and the type do not make (with a
     * dynamic first dim, less than the others make), dims whose product
     * overflows, types and layouts GStreamer has not, too many dims or
     * tensors */
    GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
    static const struct
    {
      guint32 type, order, nd;
      guint64 dim;
      guint32 len;
      const gchar *field;
      gboolean dynamic;
    } bad[] = {
      {11, 0, 2, 3, 35, "tensor data"}, /* float32 3x3: 36 bytes */
      {0, 0, 2, 3, 4, "tensor data"},   /* int4 3x3: 5 bytes */
      {6, 0, 2, G_GUINT64_CONSTANT (1) << 33, 0, "tensor dims"},
      {14, 0, 1, 1, 1, "tensor data type"},
      {6, 2, 1, 1, 1, "tensor layout"},
      {6, 0, 9, 1, 1, "tensor dims count"},
      {6, 0, 0, 1, 0, "tensor dims count"},
      /* float32 0 x 1000: at least 4000 bytes */
      {11, 0, 2, 1000, 8, "tensor data", TRUE},
      {11, 0, 2, 1000, 0, "tensor data", TRUE},
    };
    guint i;

    for (i = 0; i < G_N_ELEMENTS (bad); i++) {
      GByteArray *t = g_byte_array_new ();
      gchar *why = NULL;

      put_tensor_fields (t, "t", bad[i].type, bad[i].order, bad[i].nd,
          bad[i].dim, NULL, bad[i].len);
      /* the first dim, after the id "t" and 4 fields */
      if (bad[i].dynamic)
        memset (t->data + 4 + 1 + 16, 0, 8);
      m->n_entries = m->data_len = 0;
      put_u32_le (b, 1);
      g_byte_array_append (b, t->data, t->len);
      add_entry (m, GPUSHARE_META_TENSORS, b);
      fail_if (gpushare_frame_meta_check (m, &why), "tensor case %u taken", i);
      fail_unless (why && strstr (why, bad[i].field), "tensor case %u: '%s'",
          i, why);
      g_free (why);
      /* the same as a tensor mtd (1.28) of an analytics entry, which every
       * consumer checks, whatever GStreamer it has */
      put_u32_le (b, 1);
      put_entry_str (b, "tensor");
      put_u32_le (b, t->len);
      g_byte_array_append (b, t->data, t->len);
      put_u32_le (b, 0);
      assert_refused (b, bad[i].field);
      g_byte_array_unref (t);
    }
    m->n_entries = m->data_len = 0;
    put_u32_le (b, GPUSHARE_META_MAX_TENSORS + 1);
    add_entry (m, GPUSHARE_META_TENSORS, b);
    fail_if (gpushare_frame_meta_check (m, NULL));
    /* and sound ones: int4 3x3 in 5 bytes; int8 0 x 3 in 6 */
    m->n_entries = m->data_len = 0;
    put_u32_le (b, 1);
    put_tensor_fields (b, "t", 0, 0, 2, 3, (const guint8 *) "\1\2\3\4\5", 5);
    add_entry (m, GPUSHARE_META_TENSORS, b);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    m->n_entries = m->data_len = 0;
    put_u32_le (b, 1);
    put_tensor_fields (b, "t", 1, 0, 2, 3, (const guint8 *) "\1\2\3\4\5\6", 6);
    memset (b->data + 4 + 4 + 1 + 16, 0, 8);
    add_entry (m, GPUSHARE_META_TENSORS, b);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    g_free (m);
  }

#if HAVE_GST_ANALYTICS
  {
    /* an mtd type of a newer producer between two detections: left out
     * with its relation, counted; the others keep theirs */
    GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
    GstBuffer *buf = gst_buffer_new ();
    GstAnalyticsRelationMeta *rmeta;
    GstAnalyticsODMtd od;
    guint dropped = 0;

    put_u32_le (b, 3);
    put_od (b, "car", 0.5f);
    put_entry_str (b, "depth-estimation");
    put_u32_le (b, 4);
    put_u32_le (b, 7);
    put_od (b, "person", 0.25f);
    put_u32_le (b, 2);
    put_u32_le (b, 0);
    put_u32_le (b, 1);
    put_u32_le (b, 4);
    put_u32_le (b, 0);
    put_u32_le (b, 2);
    put_u32_le (b, 8);
    add_entry (m, GPUSHARE_META_ANALYTICS, b);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    fail_unless_equals_int (gpushare_frame_meta_apply (m, buf, &dropped), 1);
    fail_unless_equals_int (dropped, 1);
    rmeta = gst_buffer_get_analytics_relation_meta (buf);
    fail_unless (rmeta != NULL);
    fail_unless_equals_int (gst_analytics_relation_get_length (rmeta), 2);
    fail_unless (gst_analytics_relation_meta_get_od_mtd (rmeta, 1, &od));
    fail_unless_equals_string (g_quark_to_string
        (gst_analytics_od_mtd_get_obj_type (&od)), "person");
    fail_unless_equals_int (gst_analytics_relation_meta_get_relation (rmeta,
            0, 1), GST_ANALYTICS_REL_TYPE_RELATE_TO);
    gst_buffer_unref (buf);
    g_free (m);
  }
  {
    /* a tensor mtd (FLOAT32 2x2, 16 bytes) between two detections, related
     * to both: added with its relations from GStreamer 1.28 on; before,
     * left out with them and counted, the detections kept */
    GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
    GstBuffer *buf = gst_buffer_new ();
    GByteArray *t = g_byte_array_new ();
    static const gfloat v[4] = { 1.0f, -2.5f, 0.125f, 3.0f };
    GstAnalyticsRelationMeta *rmeta;
    guint dropped = 0;

    /* FLOAT32 (11) */
    put_tensor_fields (t, "embedding", 11, 0, 2, 2, (const guint8 *) v,
        sizeof (v));
    put_u32_le (b, 3);
    put_od (b, "car", 0.5f);
    put_entry_str (b, "tensor");
    put_u32_le (b, t->len);
    g_byte_array_append (b, t->data, t->len);
    put_od (b, "person", 0.25f);
    /* the tensor RELATE_TO each detection, the first CONTAIN the second */
    put_u32_le (b, 3);
    put_u32_le (b, 1);
    put_u32_le (b, 0);
    put_u32_le (b, 8);
    put_u32_le (b, 1);
    put_u32_le (b, 2);
    put_u32_le (b, 8);
    put_u32_le (b, 0);
    put_u32_le (b, 2);
    put_u32_le (b, 4);
    add_entry (m, GPUSHARE_META_ANALYTICS, b);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    fail_unless_equals_int (gpushare_frame_meta_apply (m, buf, &dropped), 1);
    rmeta = gst_buffer_get_analytics_relation_meta (buf);
    fail_unless (rmeta != NULL);
#if GST_CHECK_VERSION(1, 28, 0)
    {
      GstAnalyticsTensorMtd emb;
      const GstTensor *tensor;
      GstMapInfo map;

      fail_unless_equals_int (dropped, 0);
      fail_unless_equals_int (gst_analytics_relation_get_length (rmeta), 3);
      fail_unless (gst_analytics_relation_meta_get_tensor_mtd (rmeta, 1, &emb));
      tensor = gst_analytics_tensor_mtd_get_tensor (&emb);
      fail_unless_equals_string (g_quark_to_string (tensor->id), "embedding");
      fail_unless_equals_int (tensor->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
      fail_unless_equals_int (tensor->num_dims, 2);
      fail_unless (tensor->dims[0] == 2 && tensor->dims[1] == 2);
      fail_unless (gst_buffer_map (tensor->data, &map, GST_MAP_READ));
      fail_unless_equals_int (map.size, sizeof (v));
      fail_unless (memcmp (map.data, v, sizeof (v)) == 0);
      gst_buffer_unmap (tensor->data, &map);
      fail_unless_equals_int (gst_analytics_relation_meta_get_relation (rmeta,
              1, 0), GST_ANALYTICS_REL_TYPE_RELATE_TO);
      fail_unless_equals_int (gst_analytics_relation_meta_get_relation (rmeta,
              1, 2), GST_ANALYTICS_REL_TYPE_RELATE_TO);
      fail_unless_equals_int (gst_analytics_relation_meta_get_relation (rmeta,
              0, 2), GST_ANALYTICS_REL_TYPE_CONTAIN);
    }
#else
    fail_unless_equals_int (dropped, 1);
    fail_unless_equals_int (gst_analytics_relation_get_length (rmeta), 2);
    fail_unless_equals_int (gst_analytics_relation_meta_get_relation (rmeta,
            0, 1), GST_ANALYTICS_REL_TYPE_CONTAIN);
#endif
    g_byte_array_unref (t);
    gst_buffer_unref (buf);
    g_free (m);
  }
#endif
  g_byte_array_unref (b);
}

GST_END_TEST;

/* a segmentation mtd whose width x height GRAY8 mask lies in the side
 * memory, at for len bytes; or (device) in GPU memory past the frame, at
 * for len bytes there, its copy in the side memory at host_at */
static void
put_seg_payload (GByteArray * b, guint32 width, guint32 height,
    gboolean device, guint64 at, guint64 len, guint64 host_at)
{
  GByteArray *body = g_byte_array_new ();
  guint i;

  for (i = 0; i < 4; i++)
    put_u32_le (body, 8 * i);
  put_u32_le (body, 0);
  put_u32_le (body, GST_VIDEO_FORMAT_GRAY8);
  put_u32_le (body, width);
  put_u32_le (body, height);
  put_u32_le (body, device ? GPUSHARE_META_IN_DEVICE : GPUSHARE_META_IN_SIDE);
  for (i = 0; i < (device ? 3u : 2u); i++) {
    guint64 v = GUINT64_TO_LE (i == 2 ? host_at : i ? len : at);

    g_byte_array_append (body, (const guint8 *) &v, 8);
  }
  put_entry_str (b, "segmentation");
  put_u32_le (b, body->len);
  g_byte_array_append (b, body->data, body->len);
  g_byte_array_unref (body);
}

/* metas of one analytics entry with that mask */
static GpuShareFrameMetas *
seg_payload_metas (guint32 width, guint32 height, gboolean device,
    guint64 at, guint64 len, guint64 host_at)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *b = g_byte_array_new ();

  put_u32_le (b, 1);
  put_seg_payload (b, width, height, device, at, len, host_at);
  put_u32_le (b, 0);
  add_entry (m, GPUSHARE_META_ANALYTICS, b);
  g_byte_array_unref (b);
  return m;
}

/* one analytics entry with a mask in the side memory of a slot of
 * side_size bytes (0: none), or (device) past the frame in a GPU slot
 * with device_size bytes of room (0: none, or read in system memory):
 * refused, saying field, or (field NULL) taken */
static void
assert_payload (guint32 width, guint32 height, gboolean device, guint64 at,
    guint64 len, guint64 host_at, gsize side_size, gsize device_size,
    const gchar * field)
{
  GpuShareFrameMetas *m = seg_payload_metas (width, height, device, at, len,
      host_at);
  gchar *why = NULL;
  gboolean ok;

  ok = gpushare_frame_meta_check_side (m, side_size, device_size, &why);
  if (field)
    fail_unless (!ok && why && strstr (why, field), "%ux%u at %"
        G_GUINT64_FORMAT " for %" G_GUINT64_FORMAT " (copy at %"
        G_GUINT64_FORMAT ") in %" G_GSIZE_FORMAT " / %" G_GSIZE_FORMAT
        ": %s", width, height, at, len, host_at, side_size, device_size,
        ok ? "taken" : why);
  else
    fail_unless (ok, "refused: %s", why);
  g_free (why);
  g_free (m);
}

static void
assert_side_mask (guint32 width, guint32 height, guint64 at, guint64 len,
    gsize side_size, const gchar * field)
{
  assert_payload (width, height, FALSE, at, len, 0, side_size, 0, field);
}

static void
assert_device_mask (guint64 at, guint64 len, guint64 host_at,
    gsize side_size, gsize device_size, const gchar * field)
{
  assert_payload (64, 32, TRUE, at, len, host_at, side_size, device_size,
      field);
}

/* A payload said to lie in the side memory (docs/protocol.md, "Side
 * memory") is input from the peer like the rest: inside the region of
 * the frame's slot, as long as its size and format make, and only where
 * there is side memory at all; otherwise the META is refused (PROTOCOL) */
GST_START_TEST (test_hostile_side_payloads)
{
  /* sound: at the start, at the end */
  assert_side_mask (64, 32, 0, 2048, 4096, NULL);
  assert_side_mask (64, 32, 2048, 2048, 4096, NULL);
  /* no side memory */
  assert_side_mask (64, 32, 0, 2048, 0, "segmentation mask");
  /* past its end, by a byte; an offset past it; offsets and lengths
   * that would wrap */
  assert_side_mask (64, 32, 2049, 2048, 4096, "segmentation mask");
  assert_side_mask (64, 32, 8192, 2048, 4096, "segmentation mask");
  assert_side_mask (64, 32, G_MAXUINT64 - 100, 2048, 4096, "segmentation mask");
  assert_side_mask (64, 32, 0, G_MAXUINT64, 4096, "segmentation mask");
  /* empty, and not what the mask's size makes */
  assert_side_mask (64, 32, 0, 0, 4096, "segmentation mask");
  assert_side_mask (64, 32, 0, 2047, 4096, "segmentation mask size");
  assert_side_mask (64, 32, 0, 4096, 4096, "segmentation mask size");
  /* a length past what a payload may say (4 GiB) */
  assert_side_mask (65536, 65536, 0, G_GUINT64_CONSTANT (1) << 32,
      G_MAXSIZE, "segmentation mask");
}

GST_END_TEST;

/* n masks of 64 x 32 (2048 bytes) in one analytics entry, the k-th in
 * the side memory at ats[k] (or, device, in GPU memory there) */
static GpuShareFrameMetas *
seg_payloads_metas (guint n, const guint64 * ats, gboolean device)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *b = g_byte_array_new ();
  guint k;

  put_u32_le (b, n);
  for (k = 0; k < n; k++)
    put_seg_payload (b, 64, 32, device, ats[k], 2048, G_MAXUINT64);
  put_u32_le (b, 0);
  add_entry (m, GPUSHARE_META_ANALYTICS, b);
  g_byte_array_unref (b);
  return m;
}

/* Payloads each lie in a place of their own: a frame's payloads in the
 * side memory (or in GPU memory) are no larger than it together.  Masks
 * that each said all of the region (a thousand to a META) were each
 * copied where the frame was not held, gigabytes a frame; refused now,
 * in one entry or across two */
GST_START_TEST (test_payloads_overlap)
{
  const guint64 apart[] = { 0, 2048 }, same[] = { 0, 0, 0 }, one[] = { 0 };
  GpuShareFrameMetas *m, *two;
  gchar *why = NULL;

  /* side by side: taken; over each other: refused */
  m = seg_payloads_metas (2, apart, FALSE);
  fail_unless (gpushare_frame_meta_check_side (m, 4096, 0, NULL));
  g_free (m);
  m = seg_payloads_metas (3, same, FALSE);
  fail_if (gpushare_frame_meta_check_side (m, 4096, 0, &why));
  fail_unless (why && strstr (why, "segmentation mask"), "%s", why);
  g_clear_pointer (&why, g_free);
  g_free (m);
  /* in GPU memory the same, against its room */
  m = seg_payloads_metas (2, apart, TRUE);
  fail_unless (gpushare_frame_meta_check_side (m, 0, 4096, NULL));
  g_free (m);
  m = seg_payloads_metas (3, same, TRUE);
  fail_if (gpushare_frame_meta_check_side (m, 0, 4096, &why));
  fail_unless (why && strstr (why, "segmentation mask"), "%s", why);
  g_clear_pointer (&why, g_free);
  g_free (m);
  /* across two entries of the frame: 2048 + 2048 of 2048 */
  m = seg_payloads_metas (1, one, FALSE);
  two = gpushare_frame_metas_new (2 * m->data_len);
  memcpy (two->data, m->data, m->data_len);
  memcpy (two->data + m->data_len, m->data, m->data_len);
  two->data_len = 2 * m->data_len;
  two->n_entries = 2;
  fail_unless (gpushare_frame_meta_check_side (m, 2048, 0, NULL));
  fail_if (gpushare_frame_meta_check_side (two, 2048, 0, NULL));
  g_free (two);
  g_free (m);
}

GST_END_TEST;

/* A payload said to lie in GPU memory past the frame (since minor 11):
 * inside the room of the GPU slot where the consumer reads GPU memory, its
 * copy (if any) inside the side memory's region, as long as the mask's
 * size makes; one that only GPU memory holds is no error to a consumer of
 * system memory (the mask is left out there, test_device_payloads_read) */
GST_START_TEST (test_hostile_device_payloads)
{
  const guint64 none = G_MAXUINT64;

  /* sound: in GPU memory, at the start and the end of the room; with a
   * copy; read in system memory, with a copy or without */
  assert_device_mask (0, 2048, none, 0, 4096, NULL);
  assert_device_mask (2048, 2048, none, 0, 4096, NULL);
  assert_device_mask (256, 2048, 1024, 4096, 4096, NULL);
  assert_device_mask (256, 2048, 2048, 4096, 0, NULL);
  assert_device_mask (G_MAXUINT64 - 100, 2048, none, 0, 0, NULL);
  /* past the room's end, by a byte; an offset past it; wrapping */
  assert_device_mask (2049, 2048, none, 0, 4096, "segmentation mask");
  assert_device_mask (8192, 2048, none, 0, 4096, "segmentation mask");
  assert_device_mask (G_MAXUINT64 - 100, 2048, none, 0, 4096,
      "segmentation mask");
  /* a copy outside the side memory, or where there is none */
  assert_device_mask (0, 2048, 2049, 4096, 4096, "segmentation mask");
  assert_device_mask (0, 2048, 0, 0, 4096, "segmentation mask");
  assert_device_mask (0, 2048, G_MAXUINT64 - 1, 4096, 4096,
      "segmentation mask");
  /* empty, too long, not what the mask's size makes */
  assert_device_mask (0, 0, none, 0, 4096, "segmentation mask");
  assert_device_mask (0, G_GUINT64_CONSTANT (1) << 32, none, 0, G_MAXSIZE,
      "segmentation mask");
  assert_device_mask (0, 2047, none, 0, 4096, "segmentation mask size");
}

GST_END_TEST;

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* A consumer of system memory reads a mask in GPU memory from its copy in
 * the side memory, and, where there is none, leaves the mtd out and counts
 * it: the frame and its other metas go on */
GST_START_TEST (test_device_payloads_read)
{
  guint8 region[4096];
  GpuShareMetaSide side = { region, sizeof (region), 0, };
  GstAnalyticsRelationMeta *rmeta;
  GpuShareFrameMetas *m;
  GstBuffer *buf, *mask;
  GstAnalyticsMtd mtd;
  GstMapInfo map;
  guint dropped = 0, w, h;
  gint x, y;
  guint i;

  for (i = 0; i < sizeof (region); i++)
    region[i] = (guint8) (i * 7);
  /* with a copy at 1024: those bytes, as the mask */
  m = seg_payload_metas (64, 32, TRUE, 512, 2048, 1024);
  fail_unless (gpushare_frame_meta_check_side (m, sizeof (region), 0, NULL));
  buf = gst_buffer_new ();
  fail_unless_equals_int (gpushare_frame_meta_apply_side (m, buf, &side,
          &dropped), 1);
  fail_unless_equals_int (dropped, 0);
  rmeta = gst_buffer_get_analytics_relation_meta (buf);
  fail_unless (gst_analytics_relation_meta_get_mtd (rmeta, 0,
          gst_analytics_segmentation_mtd_get_mtd_type (), &mtd));
  mask = gst_analytics_segmentation_mtd_get_mask (&mtd, &x, &y, &w, &h);
  fail_unless (gst_buffer_map (mask, &map, GST_MAP_READ));
  fail_unless_equals_int (map.size, 2048);
  fail_unless (memcmp (map.data, region + 1024, 2048) == 0);
  gst_buffer_unmap (mask, &map);
  gst_buffer_unref (mask);
  gst_buffer_unref (buf);
  g_free (m);

  /* in GPU memory alone: the mtd is left out, counted */
  m = seg_payload_metas (64, 32, TRUE, 512, 2048, G_MAXUINT64);
  fail_unless (gpushare_frame_meta_check_side (m, sizeof (region), 0, NULL));
  buf = gst_buffer_new ();
  dropped = 0;
  gpushare_frame_meta_apply_side (m, buf, &side, &dropped);
  rmeta = gst_buffer_get_analytics_relation_meta (buf);
  fail_unless (!rmeta || gst_analytics_relation_get_length (rmeta) == 0);
  fail_unless (dropped > 0);
  gst_buffer_unref (buf);
  g_free (m);
}

GST_END_TEST;
#endif

typedef struct
{
  const gchar *name;
  gint *go;
  gboolean added;
} CustomRace;

/* one source's apply of a custom meta of name, once *go says so */
static gpointer
custom_race (gpointer data)
{
  CustomRace *c = data;
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  GstBuffer *buf = gst_buffer_new ();
  guint dropped = 0;

  put_entry_str (body, c->name);
  put_entry_str (body, "s, track=(int)3");
  add_entry (m, GPUSHARE_META_CUSTOM, body);
  while (!g_atomic_int_get (c->go));
  c->added = gpushare_frame_meta_apply (m, buf, &dropped) == 1
      && gst_buffer_get_custom_meta (buf, c->name) != NULL;
  gst_buffer_unref (buf);
  g_byte_array_unref (body);
  g_free (m);
  return NULL;
}

/* Two sources of one process that meet a new custom meta name at the same
 * moment: both found it free, both registered it, the second a CRITICAL
 * (fatal here), and its meta dropped (72 of 200 rounds before the fix).
 * Each gets its meta, 16 names, started together. */
GST_START_TEST (test_custom_meta_race)
{
  guint i, k;

  for (i = 0; i < 16; i++) {
    gchar *name = g_strdup_printf ("gpushare-race-%u", i);
    CustomRace c[2] = { {name, NULL, FALSE}, {name, NULL, FALSE}
    };
    GThread *t[2];
    gint go = 0;

    for (k = 0; k < 2; k++) {
      c[k].go = &go;
      t[k] = g_thread_new ("race", custom_race, &c[k]);
    }
    g_usleep (2000);
    g_atomic_int_set (&go, 1);
    for (k = 0; k < 2; k++) {
      g_thread_join (t[k]);
      fail_unless (c[k].added, "%s: the meta of source %u dropped", name, k);
    }
    g_free (name);
  }
}

GST_END_TEST;

/* Custom metas a producer makes a consumer register live as long as the
 * process: at most GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS names are
 * registered, the entries of any more are dropped and counted (a test of
 * its own, forked: registrations are the process's) */
GST_START_TEST (test_custom_meta_registrations_bounded)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  guint i, added = 0, dropped = 0, n = GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS
      + 8;

  for (i = 0; i < n; i++) {
    GstBuffer *buf = gst_buffer_new ();
    gchar *name = g_strdup_printf ("gpushare-bound-%u", i);
    guint d = 0;

    m->n_entries = m->data_len = 0;
    put_entry_str (body, name);
    put_entry_str (body, "s, track=(int)3");
    add_entry (m, GPUSHARE_META_CUSTOM, body);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    added += gpushare_frame_meta_apply (m, buf, &d);
    dropped += d;
    gst_buffer_unref (buf);
    g_free (name);
  }
  /* the fixture registered none of its own in this process */
  fail_unless_equals_int (added, GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS);
  fail_unless_equals_int (dropped, n - added);
  g_byte_array_unref (body);
  g_free (m);
}

GST_END_TEST;

#if HAVE_GST_ANALYTICS
/* Labels a producer makes quarks of in a consumer's process live as long
 * as the process: at most GPUSHARE_META_MAX_PEER_QUARKS new ones, the
 * detections with labels past that are left out and counted (forked, as
 * every test: the count is the process's) */
GST_START_TEST (test_peer_quarks_bounded)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  guint per = 100, frames = GPUSHARE_META_MAX_PEER_QUARKS / per + 2;
  guint f, i, label = 0, dropped = 0, kept = 0;

  for (f = 0; f < frames; f++) {
    GstBuffer *buf = gst_buffer_new ();
    GstAnalyticsRelationMeta *rmeta;
    guint d = 0;

    m->n_entries = m->data_len = 0;
    put_u32_le (body, per);
    for (i = 0; i < per; i++) {
      gchar *name = g_strdup_printf ("gpushare-label-%u", label++);

      put_od (body, name, 0.5f);
      g_free (name);
    }
    put_u32_le (body, 0);
    add_entry (m, GPUSHARE_META_ANALYTICS, body);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    fail_unless_equals_int (gpushare_frame_meta_apply (m, buf, &d), 1);
    dropped += d;
    rmeta = gst_buffer_get_analytics_relation_meta (buf);
    kept += gst_analytics_relation_get_length (rmeta);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_int (kept, GPUSHARE_META_MAX_PEER_QUARKS);
  fail_unless_equals_int (dropped, frames * per - kept);
  /* a label the process has already still goes */
  fail_unless (g_quark_try_string ("gpushare-label-0") != 0);
  g_byte_array_unref (body);
  g_free (m);
}

GST_END_TEST;
#endif

/* A region of interest's type is a quark too, for the life of the
 * consumer's process: a producer that gave every frame's region a type of
 * its own grew the process's quark table without end (the analytics
 * labels had their bound, GPUSHARE_META_MAX_PEER_QUARKS, the ROI types
 * none).  Past the bound a region of a new type is dropped and counted; a
 * type the process has goes on. */
GST_START_TEST (test_peer_roi_types_bounded)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  guint n = GPUSHARE_META_MAX_PEER_QUARKS + 8;
  guint f, i, kept = 0, dropped = 0;

  for (f = 0; f <= n; f++) {
    GstBuffer *buf = gst_buffer_new ();
    gchar *type = f < n ? g_strdup_printf ("gpushare-roi-type-%u", f) :
        g_strdup ("gpushare-roi-type-0");
    guint d = 0;

    m->n_entries = m->data_len = 0;
    for (i = 0; i < 6; i++)
      put_u32_le (body, i == 1 ? G_MAXUINT32 : 10);
    put_entry_str (body, type);
    put_u32_le (body, 0);
    add_entry (m, GPUSHARE_META_ROI, body);
    fail_unless (gpushare_frame_meta_check (m, NULL));
    kept += gpushare_frame_meta_apply (m, buf, &d);
    dropped += d;
    if (f == n)
      fail_unless (gst_buffer_get_video_region_of_interest_meta (buf) != NULL,
          "a type the process has was dropped");
    gst_buffer_unref (buf);
    g_free (type);
  }
  fail_unless_equals_int (kept, GPUSHARE_META_MAX_PEER_QUARKS + 1);
  fail_unless_equals_int (dropped, n - GPUSHARE_META_MAX_PEER_QUARKS);
  g_byte_array_unref (body);
  g_free (m);
}

GST_END_TEST;

/* A producer that names its custom meta after one of GStreamer's, which
 * GStreamer registers only when first used, must not take that name for
 * the whole consumer process: before, the ROI meta's names made the next
 * gst_buffer_add_video_region_of_interest_meta () dereference NULL, AFD
 * and bar metas aborted, and every other element of the process that adds
 * such a meta later crashed too.  Run where none of them was used yet (a
 * test of its own, forked). */
GST_START_TEST (test_meta_names_of_gstreamer)
{
  static const gchar *const names[] = {
    "GstVideoRegionOfInterestMeta", "GstVideoRegionOfInterestMetaAPI",
    "GstVideoAFDMeta", "GstVideoAFDMetaAPI", "GstVideoBarMeta",
    "GstVideoBarMetaAPI", "GstVideoCaptionMeta", "GstVideoCaptionMetaAPI",
    "GstVideoTimeCodeMeta", "GstVideoTimeCodeMetaAPI",
    "GstReferenceTimestampMeta", "GstReferenceTimestampMetaAPI",
    /* GStreamer's namespace, for metas of its libraries this process
     * has not loaded yet */
    "GstAnalyticsRelationMeta", "GstFutureMeta",
  };
  GpuShareFrameMetas *m = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  GByteArray *body = g_byte_array_new ();
  GstBuffer *buf = gst_buffer_new ();
  GstVideoTimeCode *tc;
  guint i, dropped = 0;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    put_entry_str (body, names[i]);
    put_entry_str (body, "s, track=(int)3");
    add_entry (m, GPUSHARE_META_CUSTOM, body);
  }
  fail_unless (gpushare_frame_meta_check (m, NULL));
  fail_unless_equals_int (gpushare_frame_meta_apply (m, buf, &dropped), 0);
  fail_unless_equals_int (dropped, G_N_ELEMENTS (names));
  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    const GstMetaInfo *info = gst_meta_get_info (names[i]);

    fail_unless (info == NULL || !gst_meta_info_is_custom (info),
        "%s is a custom meta now", names[i]);
  }
  /* and GStreamer's own metas work */
  fail_unless (gst_buffer_add_video_region_of_interest_meta (buf, "face",
          1, 2, 3, 4) != NULL);
  fail_unless (gst_buffer_add_video_afd_meta (buf, 0,
          GST_VIDEO_AFD_SPEC_ATSC_A53, GST_VIDEO_AFD_4_3_FULL_16_9_FULL) !=
      NULL);
  fail_unless (gst_buffer_add_video_bar_meta (buf, 0, TRUE, 1, 2) != NULL);
  fail_unless (gst_buffer_add_video_caption_meta (buf,
          GST_VIDEO_CAPTION_TYPE_CEA708_CDP, (const guint8 *) "ab", 2) != NULL);
  tc = gst_video_time_code_new (30, 1, NULL, 0, 1, 2, 3, 4, 0);
  fail_unless (gst_buffer_add_video_time_code_meta (buf, tc) != NULL);
  gst_video_time_code_free (tc);
  gst_buffer_unref (buf);
  g_byte_array_unref (body);
  g_free (m);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2c. Events: tags and custom events in their place among the frames, and
 * the sticky ones for a consumer that joins later */

typedef struct
{
  GstElement *pipeline;
  GMutex lock;
  GPtrArray *seen;              /* "buffer:N", "tag:TITLE", "custom:NAME",
                                 * "sticky:NAME"; with stream: also
                                 * "stream-start:ID/GROUP", "caps",
                                 * "segment" */
  gboolean stream;
} EventLog;

static GstPadProbeReturn
event_log_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  EventLog *log = data;
  gchar *what = NULL;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    what = g_strdup_printf ("buffer:%" G_GUINT64_FORMAT,
        GST_BUFFER_OFFSET (GST_PAD_PROBE_INFO_BUFFER (info)));
  } else {
    GstEvent *e = GST_PAD_PROBE_INFO_EVENT (info);
    gchar *title = NULL;
    GstTagList *tags;

    switch (GST_EVENT_TYPE (e)) {
      case GST_EVENT_TAG:
        gst_event_parse_tag (e, &tags);
        if (gst_tag_list_get_string (tags, GST_TAG_TITLE, &title))
          what = g_strdup_printf ("tag:%s", title);
        g_free (title);
        break;
      case GST_EVENT_CUSTOM_DOWNSTREAM:
        what = g_strdup_printf ("custom:%s",
            gst_structure_get_name (gst_event_get_structure (e)));
        break;
      case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
        what = g_strdup_printf ("sticky:%s",
            gst_structure_get_name (gst_event_get_structure (e)));
        break;
      case GST_EVENT_STREAM_START:
        if (log->stream) {
          const gchar *id = NULL;
          guint group = 0;

          gst_event_parse_stream_start (e, &id);
          gst_event_parse_group_id (e, &group);
          what = g_strdup_printf ("stream-start:%s/%u", id, group);
        }
        break;
      case GST_EVENT_CAPS:
      case GST_EVENT_SEGMENT:
        if (log->stream)
          what = g_strdup (GST_EVENT_TYPE_NAME (e));
        break;
      default:
        break;
    }
  }
  if (what) {
    g_mutex_lock (&log->lock);
    g_ptr_array_add (log->seen, what);
    g_mutex_unlock (&log->lock);
  }
  return GST_PAD_PROBE_OK;
}

static EventLog *
event_log_consumer_full (const gchar * path, gboolean stream,
    const gchar * src_props)
{
  EventLog *log = g_new0 (EventLog, 1);
  GstPad *pad;

  log->stream = stream;
  log->pipeline = launch ("gpusharesrc name=src connection-timeout=%d %s ! "
      "fakesink name=out sync=false", TIMEOUT_MS, src_props);
  g_object_set (child (log->pipeline, "src"), "socket-path", path, NULL);
  g_mutex_init (&log->lock);
  log->seen = g_ptr_array_new_with_free_func (g_free);
  pad = gst_element_get_static_pad (child (log->pipeline, "out"), "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, event_log_probe, log, NULL);
  gst_object_unref (pad);
  fail_if (gst_element_set_state (log->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  return log;
}

static EventLog *
event_log_consumer (const gchar * path)
{
  return event_log_consumer_full (path, FALSE, "");
}

/* waits until the log has n entries, at most TIMEOUT_MS */
static guint
event_log_wait (EventLog * log, guint n)
{
  gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  guint have = 0;

  while (g_get_monotonic_time () < until) {
    g_mutex_lock (&log->lock);
    have = log->seen->len;
    g_mutex_unlock (&log->lock);
    if (have >= n)
      break;
    g_usleep (5000);
  }
  return have;
}

/* waits for n entries; they are then compared with want */
static void
event_log_expect (EventLog * log, const gchar * const *want, guint n)
{
  guint i;

  event_log_wait (log, n);
  g_mutex_lock (&log->lock);
  for (i = 0; i < MIN (n, log->seen->len); i++)
    fail_unless_equals_string (g_ptr_array_index (log->seen, i), want[i]);
  fail_unless_equals_int (log->seen->len, n);
  g_mutex_unlock (&log->lock);
}

static void
event_log_free (EventLog * log)
{
  gst_element_set_state (log->pipeline, GST_STATE_NULL);
  gst_object_unref (log->pipeline);
  g_ptr_array_unref (log->seen);
  g_mutex_clear (&log->lock);
  g_free (log);
}

static void
send_tag (GstElement * src, const gchar * title)
{
  fail_unless (gst_element_send_event (src,
          gst_event_new_tag (gst_tag_list_new (GST_TAG_TITLE, title, NULL))));
}

static void
send_custom (GstElement * src, GstEventType type, const gchar * name)
{
  fail_unless (gst_element_send_event (src, gst_event_new_custom (type,
              gst_structure_new (name, "n", G_TYPE_INT, 1, NULL))));
}

/* consumers of the sink whose slots are mapped */
static guint
n_ready (GstElement * sink)
{
  GstStructure *st = get_stats (sink);
  const GValue *clients = gst_structure_get_value (st, "clients");
  guint i, n = 0;

  for (i = 0; clients && i < gst_value_array_get_size (clients); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (clients, i));

    n += g_strcmp0 (gst_structure_get_string (c, "state"), "ready") == 0;
  }
  gst_structure_free (st);
  return n;
}

GST_START_TEST (test_events_travel)
{
  static const gchar *const want_a[] = { "buffer:0", "tag:first", "buffer:1",
    "custom:marker", "buffer:2", "sticky:zone", "buffer:3",
  };
  static const gchar *const want_b[] = { "tag:first", "sticky:zone",
    "buffer:4",
  };
  gchar *path = socket_path ("events");
  GstElement *producer, *sink, *src;
  EventLog *a, *b;
  guint i;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  a = event_log_consumer (path);
  push_frame (src, 0, 0);
  send_tag (src, "first");
  push_frame (src, 1, 0);
  send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM, "marker");
  push_frame (src, 2, 0);
  send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, "zone");
  push_frame (src, 3, 0);
  event_log_expect (a, want_a, G_N_ELEMENTS (want_a));
  /* the stream-start, the tag, the custom and the sticky event */
  fail_unless_equals_uint64 (stat_u64 (sink, "events-sent"), 4);

  /* one that joins now gets the sticky ones before its first frame */
  b = event_log_consumer (path);
  for (i = 0; i < 500 && n_ready (sink) < 2; i++)
    g_usleep (10 * 1000);
  fail_unless_equals_int (n_ready (sink), 2);
  push_frame (src, 4, 0);
  event_log_expect (b, want_b, G_N_ELEMENTS (want_b));
  /* the stream-start too */
  fail_unless_equals_uint64 (stat_u64 (child (b->pipeline, "src"),
          "events-received"), 3);

  assert_no_error (producer);
  assert_no_error (a->pipeline);
  assert_no_error (b->pipeline);
  event_log_free (b);
  event_log_free (a);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* Element names go in ANNOUNCE and ACCEPT, cut to 128 bytes where longer,
 * on a character boundary: the peer's codec refuses a field that is not
 * UTF-8.  A producer and a consumer named "a" and 64 "é" (129 bytes) each
 * stream, and each is known by its name's first 127 bytes (before, the
 * producer's ANNOUNCE was never sent, nor the consumer's ACCEPT) */
GST_START_TEST (test_long_names_cut_whole)
{
  gchar *path = socket_path ("long-names");
  GString *name = g_string_new ("a");
  GstElement *producer, *consumer, *sink, *src, *in, *out;
  GstCaps *caps = gst_caps_from_string (CAPS_STR);
  GstStructure *s;
  gchar *cut;
  guint i;

  for (i = 0; i < 64; i++)
    g_string_append (name, "\xc3\xa9");
  cut = g_strndup (name->str, 127);
  producer = gst_pipeline_new (NULL);
  in = gst_element_factory_make ("appsrc", NULL);
  sink = gst_element_factory_make ("gpusharesink", name->str);
  gst_bin_add_many (GST_BIN (producer), in, sink, NULL);
  fail_unless (gst_element_link (in, sink));
  g_object_set (in, "format", GST_FORMAT_TIME, "caps", caps, NULL);
  g_object_set (sink, "socket-path", path, "wait-for-connection", TRUE, NULL);
  consumer = gst_pipeline_new (NULL);
  src = gst_element_factory_make ("gpusharesrc", name->str);
  out = gst_element_factory_make ("fakesink", NULL);
  gst_bin_add_many (GST_BIN (consumer), src, out, NULL);
  fail_unless (gst_element_link (src, out));
  g_object_set (src, "socket-path", path, "connection-timeout", TIMEOUT_MS,
      NULL);
  g_object_set (out, "sync", FALSE, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < 3; i++)
    push_frame (in, i, 0);
  fail_unless (wait_stat_u64_at_least (src, "frames-received", 3) >= 3);
  s = get_stats (src);
  fail_unless_equals_string (gst_structure_get_string (s, "producer-name"),
      cut);
  gst_structure_free (s);
  assert_no_error (producer);
  assert_no_error (consumer);
  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (consumer);
  gst_object_unref (producer);
  gst_caps_unref (caps);
  g_string_free (name, TRUE);
  g_free (cut);
  g_free (path);
}

GST_END_TEST;

/* Caps that the consumers' parser would refuse are never announced: caps
 * with a text field past the 4096 bytes of the protocol's caps, a field
 * name that is not UTF-8, or a structure in a field (which the consumers'
 * check of a peer's text does not take) go as the picture's caps alone
 * (gst_video_info_to_caps ()), and the stream plays; before, the first
 * two were never announced (the consumer waited) and the third ended the
 * stream at every consumer */
GST_START_TEST (test_caps_consumers_refuse)
{
  guint k;

  for (k = 0; k < 3; k++) {
    gchar *path = socket_path ("odd-caps");
    GstElement *producer, *sink, *src;
    GstCaps *caps = gst_caps_from_string (CAPS_STR), *got;
    GstStructure *st;
    Consumer *c;
    GstPad *pad;
    guint i;

    if (k == 0) {
      gchar *note = g_strnfill (5000, 'x');

      gst_caps_set_simple (caps, "note", G_TYPE_STRING, note, NULL);
      g_free (note);
    } else if (k == 1) {
      gst_caps_set_simple (caps, "caf\xe9", G_TYPE_INT, 1, NULL);
    } else {
      GstStructure *inner = gst_structure_new ("zone", "a", G_TYPE_INT, 1,
          NULL);

      gst_caps_set_simple (caps, "zone", GST_TYPE_STRUCTURE, inner, NULL);
      gst_structure_free (inner);
    }
    producer = appsrc_producer (path, "lossless", 8, &sink, &src);
    g_object_set (src, "caps", caps, NULL);
    fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    c = consumer_new (path, FALSE);
    consumer_start (c);
    for (i = 0; i < 3; i++)
      push_frame (src, i, 0);
    fail_unless (consumer_wait (c, 3), "caps %u: no frames", k);
    pad = gst_element_get_static_pad (c->src, "src");
    got = gst_pad_get_current_caps (pad);
    fail_unless (got != NULL);
    st = gst_caps_get_structure (got, 0);
    fail_unless_equals_string (gst_structure_get_string (st, "format"), "NV12");
    fail_unless (gst_structure_has_field (st, "width"));
    fail_if (gst_structure_has_field (st, "note")
        || gst_structure_has_field (st, "zone")
        || gst_structure_has_field (st, "caf\xe9"), "caps %u: the odd field "
        "came", k);
    assert_no_error (producer);
    assert_no_error (c->pipeline);
    gst_caps_unref (got);
    gst_object_unref (pad);
    consumer_free (c);
    gst_element_set_state (producer, GST_STATE_NULL);
    gst_object_unref (producer);
    gst_caps_unref (caps);
    g_free (path);
  }
}

GST_END_TEST;

/* Events right after a caps change that makes a new ring (a decoder that
 * changes resolution, then its tags) reach a consumer whose slots are
 * mapped again, in their place: one of GPU memory (here the test build's
 * host-test memory, exported by the control thread, as GPU slots are)
 * took them for a protocol error before, its ring not yet mapped, and
 * left the stream */
static void
push_sized_frame (GstElement * src, guint i, guint width, guint height)
{
  GstBuffer *buf = numbered_frame_sized (i, 0x10,
      (gsize) width * height * 3 / 2);

  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), buf),
      GST_FLOW_OK);
}

GST_START_TEST (test_events_across_a_new_ring)
{
  static const gchar *const want[] = { "buffer:0", "tag:second", "buffer:1",
    "custom:marker", "buffer:2", "tag:third", "buffer:3",
  };
  static const gchar *const transports[] = { "host-test", "system" };
  guint t;

  for (t = 0; t < G_N_ELEMENTS (transports); t++) {
    gchar *path = socket_path (transports[t]);
    gchar *props = g_strdup_printf ("transport=%s", transports[t]);
    GstElement *producer, *sink, *src;
    GstCaps *caps;
    EventLog *a;

    producer = appsrc_producer (path, "lossless", 8, &sink, &src);
    fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    a = event_log_consumer_full (path, FALSE, props);
    push_frame (src, 0, 0);
    event_log_wait (a, 1);
    /* each a ring of larger slots */
    caps = gst_caps_from_string ("video/x-raw,format=NV12,width=128,"
        "height=96,framerate=30/1");
    g_object_set (src, "caps", caps, NULL);
    gst_caps_unref (caps);
    send_tag (src, "second");
    push_sized_frame (src, 1, 128, 96);
    send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM, "marker");
    push_sized_frame (src, 2, 128, 96);
    caps = gst_caps_from_string ("video/x-raw,format=NV12,width=256,"
        "height=192,framerate=30/1");
    g_object_set (src, "caps", caps, NULL);
    gst_caps_unref (caps);
    send_tag (src, "third");
    push_sized_frame (src, 3, 256, 192);
    event_log_expect (a, want, G_N_ELEMENTS (want));
    fail_unless_equals_uint64 (stat_u64 (child (a->pipeline, "src"),
            "epoch"), 3);
    assert_no_error (producer);
    assert_no_error (a->pipeline);
    event_log_free (a);
    gst_element_set_state (producer, GST_STATE_NULL);
    gst_object_unref (producer);
    g_free (props);
    g_free (path);
  }
}

GST_END_TEST;

/* A ring of GPU memory made after the caps shrank (a consumer of GPU
 * memory that joins then) has slots as large as the ring's system slots,
 * not as the frame of the moment: caps that grow again within them make
 * no new ring, and the frame must fit.  Here the test build's host-test
 * memory, whose rings are made as GPU rings are; before, the consumer
 * refused the caps that grew (its slots too small) and left the stream */
static void
set_caps_str (GstElement * src, const gchar * text)
{
  GstCaps *caps = gst_caps_from_string (text);

  g_object_set (src, "caps", caps, NULL);
  gst_caps_unref (caps);
}

GST_START_TEST (test_gpu_ring_after_caps_shrank)
{
  gchar *path = socket_path ("shrank");
  GstElement *producer, *sink, *src;
  GstStructure *st;
  Consumer *a, *b;
  guint i;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  set_caps_str (src, "video/x-raw,format=NV12,width=256,height=192,"
      "framerate=30/1");
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  a = consumer_new (path, FALSE);
  consumer_start (a);
  push_sized_frame (src, 0, 256, 192);
  fail_unless (consumer_wait (a, 1));
  /* smaller: the same ring */
  set_caps_str (src, CAPS_STR);
  push_frame (src, 1, 0);
  fail_unless (consumer_wait (a, 2));
  b = consumer_new (path, FALSE);
  gst_util_set_object_arg (G_OBJECT (b->src), "transport", "host-test");
  consumer_start (b);
  for (i = 0; i < 500 && n_ready (sink) < 2; i++)
    g_usleep (10 * 1000);
  fail_unless_equals_int (n_ready (sink), 2);
  push_frame (src, 2, 0);
  fail_unless (consumer_wait (b, 1));
  /* larger again, within the ring's slots */
  set_caps_str (src, "video/x-raw,format=NV12,width=128,height=96,"
      "framerate=30/1");
  push_sized_frame (src, 3, 128, 96);
  push_sized_frame (src, 4, 128, 96);
  fail_unless (consumer_wait (b, 3), "the consumer of host-test memory "
      "stopped at the caps that grew");
  fail_unless (consumer_wait (a, 5));
  fail_unless_equals_uint64 (stat_u64 (b->src, "epoch"), 1);
  st = get_stats (b->src);
  fail_unless_equals_string (gst_structure_get_string (st, "memory-type"),
      "host-test");
  gst_structure_free (st);
  assert_no_error (producer);
  assert_no_error (a->pipeline);
  assert_no_error (b->pipeline);
  consumer_free (b);
  consumer_free (a);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* Both ways a frame reaches the streaming thread, side by side from one
 * producer: through the frame lane (the default: the streaming thread
 * reads it, and waits at each MARK for the ordered message it stands
 * for) and as FRAME messages read by the control thread (frame-lane=false).
 * The same buffers and events come in the same order, and each src says
 * which way it took. */
GST_START_TEST (test_frame_lane)
{
  static const gchar *const want[] = { "buffer:0", "tag:first", "buffer:1",
    "custom:marker", "custom:marker", "buffer:2", "sticky:zone", "buffer:3",
    "buffer:4", "buffer:5",
  };
  gchar *path = socket_path ("lane");
  GstElement *producer, *sink, *src;
  EventLog *logs[2];
  guint i;

  producer = appsrc_producer (path, "lossless", 4, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  logs[0] = event_log_consumer_full (path, FALSE, "");
  logs[1] = event_log_consumer_full (path, FALSE, "frame-lane=false");
  for (i = 0; i < 500 && n_ready (sink) < 2; i++)
    g_usleep (10 * 1000);
  fail_unless_equals_int (n_ready (sink), 2);
  push_frame (src, 0, 0);
  send_tag (src, "first");
  push_frame (src, 1, 0);
  send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM, "marker");
  send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM, "marker");
  push_frame (src, 2, 0);
  send_custom (src, GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, "zone");
  /* more frames than the ring has slots: the lane's entries go round */
  for (i = 3; i < 6; i++)
    push_frame (src, i, 0);
  for (i = 0; i < 2; i++) {
    GstElement *s = child (logs[i]->pipeline, "src");
    GstStructure *st;
    gboolean lane = !i;

    event_log_expect (logs[i], want, G_N_ELEMENTS (want));
    g_object_get (s, "stats", &st, NULL);
    fail_unless (gst_structure_get_boolean (st, "frame-lane", &lane));
    fail_unless (lane == (i == 0), "consumer %u: frame-lane %d", i, lane);
    gst_structure_free (st);
    fail_unless_equals_uint64 (stat_u64 (s, "frames-received"), 6);
    fail_unless_equals_uint64 (stat_u64 (s, "frames-missed"), 0);
    assert_no_error (logs[i]->pipeline);
  }
  assert_no_error (producer);
  event_log_free (logs[1]);
  event_log_free (logs[0]);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* waits until entry want is in the log after entry from, at most
 * TIMEOUT_MS; its index */
static guint
event_log_find (EventLog * log, guint from, const gchar * want)
{
  gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  guint i;

  for (;;) {
    g_mutex_lock (&log->lock);
    for (i = from; i < log->seen->len; i++)
      if (g_str_equal (g_ptr_array_index (log->seen, i), want))
        break;
    from = i;
    g_mutex_unlock (&log->lock);
    if (i < log->seen->len)
      return i;
    fail_unless (g_get_monotonic_time () < until, "no %s in the log", want);
    g_usleep (5000);
  }
}

/* the producer's stream-start as the consumer's log writes it */
static gchar *
producer_stream_start (GstElement * sink)
{
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstEvent *e = gst_pad_get_sticky_event (pad, GST_EVENT_STREAM_START, 0);
  const gchar *id = NULL;
  guint group = 0;
  gchar *what;

  fail_unless (e != NULL);
  gst_event_parse_stream_start (e, &id);
  fail_unless (gst_event_parse_group_id (e, &group));
  what = g_strdup_printf ("stream-start:%s/%u", id, group);
  gst_event_unref (e);
  gst_object_unref (pad);
  return what;
}

/* From entry *at of the log: the stream-start want, then caps (or before
 * it, with caps_before: those of the first stream), then a
 * segment, then buffer:0, with nothing but events in between; *at is
 * moved past that buffer */
static void
assert_stream_starts (EventLog * log, guint * at, const gchar * want,
    gboolean caps_before)
{
  guint i, start = G_MAXUINT, caps = G_MAXUINT, segment = G_MAXUINT;

  g_mutex_lock (&log->lock);
  for (i = *at; i < log->seen->len; i++) {
    const gchar *e = g_ptr_array_index (log->seen, i);

    if (g_str_has_prefix (e, "buffer:")) {
      fail_unless_equals_string (e, "buffer:0");
      break;
    }
    if (g_str_has_prefix (e, "stream-start:"))
      start = i;
    else if (!strcmp (e, "caps") && (caps_before || start != G_MAXUINT))
      caps = i;
    else if (!strcmp (e, "segment") && caps != G_MAXUINT && start != G_MAXUINT)
      segment = i;
  }
  fail_unless (i < log->seen->len, "no first frame");
  fail_unless (start != G_MAXUINT, "no stream-start before the frame");
  fail_unless_equals_string (g_ptr_array_index (log->seen, start), want);
  fail_unless (caps != G_MAXUINT, "no caps after the stream-start");
  fail_unless (segment != G_MAXUINT, "no segment after the caps");
  *at = i + 1;
  g_mutex_unlock (&log->lock);
}

/* The producer's stream-start (its stream id and group id) reaches the
 * consumer's pipeline: a consumer that joins after it was sent gets it
 * before its first frame, followed by caps and a segment; the stream of a
 * restarted producer starts again, with its own id */
GST_START_TEST (test_stream_start_travels)
{
  gchar *path = socket_path ("streamstart");
  GstElement *producer, *sink, *src;
  gchar *ours, *theirs;
  EventLog *log;
  guint at = 0;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  log = event_log_consumer_full (path, TRUE, "producer-lost=reconnect");
  push_frame (src, 0, 0);
  push_frame (src, 1, 0);
  event_log_find (log, 0, "buffer:1");
  ours = producer_stream_start (sink);
  assert_stream_starts (log, &at, ours, TRUE);
  fail_unless (stat_u64 (child (log->pipeline, "src"), "events-received")
      >= 1);

  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  push_frame (src, 0, 0);
  /* buffer:1 of the first producer, then the second's stream */
  at = event_log_find (log, at, "buffer:1") + 1;
  event_log_find (log, at, "buffer:0");
  theirs = producer_stream_start (sink);
  fail_if (g_str_equal (ours, theirs));
  assert_stream_starts (log, &at, theirs, FALSE);

  assert_no_error (log->pipeline);
  event_log_free (log);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (ours);
  g_free (theirs);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. Timestamps: a consumer that joins a stream under way, and one whose
 * producer restarts at 0, play on in a synchronising sink */

/* gpusharesrc ! fakesink sync=true: the running time of every buffer the
 * sink rendered, from the segment it had */
typedef struct
{
  GstElement *pipeline;
  GstElement *src;
  GMutex lock;
  GstSegment segment;
  GArray *running;              /* GstClockTime, per rendered buffer */
  GArray *pts;
} SyncConsumer;

static GstPadProbeReturn
segment_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  SyncConsumer *c = data;
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    g_mutex_lock (&c->lock);
    gst_event_copy_segment (event, &c->segment);
    g_mutex_unlock (&c->lock);
  }
  return GST_PAD_PROBE_OK;
}

static void
sync_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, gpointer data)
{
  SyncConsumer *c = data;
  GstClockTime pts = GST_BUFFER_PTS (buf), rt;

  g_mutex_lock (&c->lock);
  rt = gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, pts);
  g_array_append_val (c->running, rt);
  g_array_append_val (c->pts, pts);
  g_mutex_unlock (&c->lock);
}

static SyncConsumer *
sync_consumer_new (const gchar * path, const gchar * extra)
{
  SyncConsumer *c = g_new0 (SyncConsumer, 1);
  GstElement *sink;
  GstPad *pad;

  c->pipeline = launch ("gpusharesrc name=src connection-timeout=%d %s ! "
      "fakesink name=out sync=true max-lateness=20000000 "
      "enable-last-sample=false signal-handoffs=true", TIMEOUT_MS, extra);
  c->src = child (c->pipeline, "src");
  g_object_set (c->src, "socket-path", path, NULL);
  g_mutex_init (&c->lock);
  gst_segment_init (&c->segment, GST_FORMAT_TIME);
  c->running = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  c->pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  sink = child (c->pipeline, "out");
  g_signal_connect (sink, "handoff", G_CALLBACK (sync_handoff), c);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, segment_probe,
      c, NULL);
  gst_object_unref (pad);
  fail_if (gst_element_set_state (c->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  return c;
}

/* waits up to ms for n rendered buffers; how many there are */
static guint
sync_consumer_wait (SyncConsumer * c, guint n, gint ms)
{
  gint64 until = g_get_monotonic_time () + ms * 1000;
  guint have;

  for (;;) {
    g_mutex_lock (&c->lock);
    have = c->running->len;
    g_mutex_unlock (&c->lock);
    if (have >= n || g_get_monotonic_time () > until)
      return have;
    g_usleep (5000);
  }
}

static void
sync_consumer_free (SyncConsumer * c)
{
  gst_element_set_state (c->pipeline, GST_STATE_NULL);
  gst_object_unref (c->pipeline);
  g_array_unref (c->running);
  g_array_unref (c->pts);
  g_mutex_clear (&c->lock);
  g_free (c);
}

/* frames first .. first + n - 1 at 30/s of stream time */
static void
push_frames (GstElement * src, guint first, guint n)
{
  guint i;

  for (i = first; i < first + n; i++)
    push_frame (src, i, 0);
}

#define LATE_FIRST 300          /* 10 s into the producer's stream */
#define LATE_FRAMES 6

/* A consumer whose first frame is 10 s into the producer's stream (it
 * joined late) renders at once, in real time: its segment starts at that
 * frame.  Before, the segment started at 0 and fakesink sync=true waited
 * 10 s for the first frame. */
GST_START_TEST (test_late_consumer_plays)
{
  gchar *path = socket_path ("late");
  GstElement *producer, *sink, *src;
  SyncConsumer *c;
  gint64 t0, took;
  guint i, got;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = sync_consumer_new (path, "");
  t0 = g_get_monotonic_time ();
  push_frames (src, LATE_FIRST, LATE_FRAMES);
  got = sync_consumer_wait (c, LATE_FRAMES, 3000);
  took = (g_get_monotonic_time () - t0) / 1000;
  fail_unless_equals_int (got, LATE_FRAMES);
  /* six frames at 30/s: 0.2 s, not 10 */
  fail_unless (took < 3000, "%u frames took %" G_GINT64_FORMAT " ms", got,
      took);
  g_mutex_lock (&c->lock);
  fail_unless_equals_uint64 (c->segment.start,
      gst_util_uint64_scale (LATE_FIRST, GST_SECOND, 30));
  /* the producer's stream time is kept */
  fail_unless_equals_uint64 (c->segment.time, c->segment.start);
  for (i = 0; i < got; i++) {
    GstClockTime want = gst_util_uint64_scale (i, GST_SECOND, 30);

    fail_unless_equals_uint64 (g_array_index (c->pts, GstClockTime, i),
        gst_util_uint64_scale (LATE_FIRST + i, GST_SECOND, 30));
    fail_unless (g_array_index (c->running, GstClockTime, i) >= want &&
        g_array_index (c->running, GstClockTime, i) < want + GST_SECOND,
        "frame %u at running time %" GST_TIME_FORMAT, i,
        GST_TIME_ARGS (g_array_index (c->running, GstClockTime, i)));
  }
  g_mutex_unlock (&c->lock);
  assert_no_error (c->pipeline);
  sync_consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* how early each buffer reached a synchronising sink: its running time
 * less the clock's, once the pipeline plays */
typedef struct
{
  GMutex lock;
  GArray *early;                /* gint64 ns, per buffer while playing */
  GArray *at;                   /* gint64 monotonic us, when it came */
} Earliness;

static GstPadProbeReturn
earliness_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Earliness *e = data;
  GstElement *sink = gst_pad_get_parent_element (pad);
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  GstClock *clock = gst_element_get_clock (sink);
  const GstSegment *segment;

  if (ev && clock && GST_STATE (sink) == GST_STATE_PLAYING) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
    GstClockTime now = gst_clock_get_time (clock) -
        gst_element_get_base_time (sink);
    gint64 early, at = g_get_monotonic_time ();

    gst_event_parse_segment (ev, &segment);
    early = (gint64) gst_segment_to_running_time (segment, GST_FORMAT_TIME,
        GST_BUFFER_PTS (buf)) - (gint64) now;
    g_mutex_lock (&e->lock);
    g_array_append_val (e->early, early);
    g_array_append_val (e->at, at);
    g_mutex_unlock (&e->lock);
  }
  if (clock)
    gst_object_unref (clock);
  if (ev)
    gst_event_unref (ev);
  gst_object_unref (sink);
  return GST_PAD_PROBE_OK;
}

/* A consumer that is not live (the default) of a live producer, whose
 * pipeline stays prerolled for a while before it plays (its other sources
 * still starting, a pipeline paused by the application): frames go on
 * coming meanwhile.  Once it plays, every frame reaches its synchronising
 * sink when it is due, not ahead by the time it spent prerolled: the
 * regression, in a pipeline of 16 such branches, made some sinks hold each
 * frame for most of a frame's time, so that the frames waiting in the
 * consumer held its whole share and a leaky producer skipped every third
 * (live-consumers.sh's K-streams row, appsinks). */
GST_START_TEST (test_prerolled_consumer_keeps_pace)
{
  gchar *path = socket_path ("prerolled");
  GstElement *producer, *consumer;
  Earliness e;
  GstPad *pad;
  gint64 played, worst = G_MININT64;
  guint i, late_ones = 0;

  producer = launch ("videotestsrc is-live=true ! video/x-raw,format=NV12,"
      "width=64,height=48,framerate=30/1 ! gpusharesink name=sink");
  g_object_set (child (producer, "sink"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  consumer = launch ("gpusharesrc name=src connection-timeout=%d ! "
      "fakesink name=out sync=true", TIMEOUT_MS);
  g_object_set (child (consumer, "src"), "socket-path", path, NULL);
  g_mutex_init (&e.lock);
  e.early = g_array_new (FALSE, FALSE, sizeof (gint64));
  e.at = g_array_new (FALSE, FALSE, sizeof (gint64));
  pad = gst_element_get_static_pad (child (consumer, "out"), "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, earliness_probe, &e, NULL);
  gst_object_unref (pad);

  /* prerolled on the first frame, 0.6 s, then playing */
  gst_element_set_state (consumer, GST_STATE_PAUSED);
  fail_unless_equals_int (gst_element_get_state (consumer, NULL, NULL,
          TIMEOUT_MS * GST_MSECOND), GST_STATE_CHANGE_SUCCESS);
  g_usleep (600 * 1000);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  played = g_get_monotonic_time ();
  g_usleep (1500 * 1000);

  /* the frames of its last half second: due when they came (a frame's
   * time at most: a busy machine may be a little late) */
  g_mutex_lock (&e.lock);
  for (i = 0; i < e.early->len; i++) {
    gint64 early = g_array_index (e.early, gint64, i);

    if (g_array_index (e.at, gint64, i) < played + 1000 * 1000)
      continue;
    late_ones++;
    worst = MAX (worst, early);
  }
  g_mutex_unlock (&e.lock);
  /* 15 frames at 30/s, none skipped: at least 12 of them */
  fail_unless (late_ones >= 12, "%u frames in the last 0.5 s", late_ones);
  fail_unless (worst < (gint64) (GST_SECOND / 30), "frames reached the "
      "sink up to %" G_GINT64_FORMAT " ms before they were due", worst /
      1000000);
  assert_no_error (consumer);
  assert_no_error (producer);

  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_object_unref (consumer);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_array_unref (e.early);
  g_array_unref (e.at);
  g_mutex_clear (&e.lock);
  g_free (path);
}

GST_END_TEST;

#define RESTART_FRAMES 8

/* The producer stops mid-stream and another starts on the same socket,
 * its timestamps from 0 again.  A consumer with producer-lost=reconnect
 * and a synchronising sink with max-lateness 20 ms renders every frame of
 * both, in increasing running time.  Before, the second producer's frames
 * came with only DISCONT, running time went back to 0, and the sink threw
 * them away as late. */
GST_START_TEST (test_reconnect_plays_on)
{
  gchar *path = socket_path ("restart");
  GstElement *producer, *sink, *src;
  SyncConsumer *c;
  guint i, got;

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = sync_consumer_new (path, "producer-lost=reconnect");
  push_frames (src, 0, RESTART_FRAMES);
  fail_unless_equals_int (sync_consumer_wait (c, RESTART_FRAMES, 3000),
      RESTART_FRAMES);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  /* some time passes before the new producer is there */
  g_usleep (300 * 1000);

  producer = appsrc_producer (path, "lossless", 8, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  push_frames (src, 0, RESTART_FRAMES);
  got = sync_consumer_wait (c, 2 * RESTART_FRAMES, 4000);
  fail_unless_equals_int (got, 2 * RESTART_FRAMES);
  fail_unless_equals_uint64 (stat_uint (c->src, "reconnects"), 1);
  g_mutex_lock (&c->lock);
  for (i = 1; i < got; i++)
    fail_unless (g_array_index (c->running, GstClockTime, i) >
        g_array_index (c->running, GstClockTime, i - 1),
        "frame %u: running time %" GST_TIME_FORMAT " after %" GST_TIME_FORMAT,
        i, GST_TIME_ARGS (g_array_index (c->running, GstClockTime, i)),
        GST_TIME_ARGS (g_array_index (c->running, GstClockTime, i - 1)));
  /* the new producer's own timestamps, from 0 */
  fail_unless_equals_uint64 (g_array_index (c->pts, GstClockTime,
          RESTART_FRAMES), 0);
  g_mutex_unlock (&c->lock);
  assert_no_error (c->pipeline);
  sync_consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 4. Producer defaults: a non-live producer waits for its consumers */

#define IDLE_FRAMES 30

/* Nobody connected: a file is held, not thrown away (nor run through at
 * full speed, a core busy); a live source is not held, its frames with
 * nobody to take them are dropped */
GST_START_TEST (test_idle_producer_waits)
{
  gchar *path = socket_path ("idle");
  gchar *live_path = socket_path ("idle-live");
  GstElement *producer, *sink, *live, *live_sink;
  Consumer *c;
  guint i;

  producer = launch ("videotestsrc pattern=snow num-buffers=%d ! " CAPS_STR
      " ! gpusharesink name=sink", IDLE_FRAMES);
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");
  live = launch ("videotestsrc is-live=true ! " LIVE_CAPS_STR
      " ! gpusharesink name=sink");
  live_sink = child (live, "sink");
  g_object_set (live_sink, "socket-path", live_path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (live, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  g_usleep (500 * 1000);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 0);
  fail_unless (wait_stat_u64_at_least (live_sink, "frames-rendered", 3) >= 3,
      "the live producer was held");

  /* the consumer that comes gets the file from its first frame */
  c = consumer_new (path, TRUE);
  consumer_start (c);
  for (i = 0; i < IDLE_FRAMES; i++) {
    GstBuffer *buf = next_buffer (c, i);

    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
    gst_buffer_unref (buf);
  }
  assert_no_error (producer);
  assert_no_error (live);
  consumer_free (c);
  gst_element_set_state (live, GST_STATE_NULL);
  gst_object_unref (live);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (live_path);
  g_free (path);
}

GST_END_TEST;

/* the voluntary context switches of this process's threads named comm:
 * how often they went to sleep, so how often they were woken */
static guint64
thread_wakeups (const gchar * comm)
{
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *tid;
  guint64 n = 0;

  fail_unless (dir != NULL);
  while ((tid = g_dir_read_name (dir))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
    gchar *name = NULL, *status = NULL, *at;

    if (g_file_get_contents (path, &name, NULL, NULL)
        && g_str_equal (g_strstrip (name), comm)) {
      g_free (path);
      path = g_strdup_printf ("/proc/self/task/%s/status", tid);
      if (g_file_get_contents (path, &status, NULL, NULL)
          && (at = strstr (status, "voluntary_ctxt_switches:")))
        n += g_ascii_strtoull (at + strlen ("voluntary_ctxt_switches:"),
            NULL, 10);
    }
    g_free (status);
    g_free (name);
    g_free (path);
  }
  g_dir_close (dir);
  return n;
}

#define IDLE_WINDOW_S 3

/* A producer that only streams, to a consumer that keeps up, wakes its
 * control thread a few times a second (housekeeping once, the heartbeats
 * both ways: 18 times in 3 s here): each frame goes through the lane, and
 * nothing is due.  It woke 20 times a second more (73 in 3 s) to look at
 * handshake deadlines nobody had: with 64 streams on a host, 1,280
 * wake-ups a second for nothing. */
GST_START_TEST (test_control_thread_sleeps)
{
  gchar *path = socket_path ("sleeps");
  GstElement *producer, *sink;
  guint64 before, after, frames;
  Consumer *c;

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 20), "the consumer gets no frames");
  frames = stat_u64 (sink, "frames-rendered");
  before = thread_wakeups ("gpushare");
  g_usleep (IDLE_WINDOW_S * G_USEC_PER_SEC);
  after = thread_wakeups ("gpushare");
  fail_unless (stat_u64 (sink, "frames-rendered") > frames + 100,
      "the stream did not go on");
  fail_unless (after - before <= IDLE_WINDOW_S * 8, "the producer's control "
      "thread woke %" G_GUINT64_FORMAT " times in %d s of streaming",
      after - before, IDLE_WINDOW_S);
  assert_consumer_alive (c);
  assert_no_error (producer);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

#define N_CONSUMERS 3
#define GATHER_FRAMES 20

/* min-consumers=3: three consumers started one after the other each get
 * every frame from the first.  With one (wait-for-connection), those that
 * came later missed the first frames. */
GST_START_TEST (test_min_consumers)
{
  gchar *path = socket_path ("gather");
  GstElement *producer, *sink;
  Consumer *c[N_CONSUMERS];
  guint i, k;

  producer = launch ("videotestsrc pattern=snow num-buffers=%d ! " CAPS_STR
      " ! gpusharesink name=sink", GATHER_FRAMES);
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, "min-consumers", N_CONSUMERS,
      "ring-size", 4, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  for (k = 0; k < N_CONSUMERS; k++) {
    c[k] = consumer_new (path, TRUE);
    consumer_start (c[k]);
    /* the first ones are streaming-ready well before the next comes */
    g_usleep (200 * 1000);
    if (k + 1 < N_CONSUMERS)
      fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 0);
  }
  for (k = 0; k < N_CONSUMERS; k++) {
    for (i = 0; i < GATHER_FRAMES; i++) {
      GstBuffer *buf = next_buffer (c[k], i);

      fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), i);
      gst_buffer_unref (buf);
    }
  }
  for (k = 0; k < N_CONSUMERS; k++) {
    assert_no_error (c[k]->pipeline);
    consumer_free (c[k]);
  }
  assert_no_error (producer);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

#define LIVE_GATHERED 4

/* A live camera that waits for its 4 consumers (wait-for-connection,
 * min-consumers=4), ring of auto size, policy auto (leaky): each of them
 * gets every frame from the first.  The ring was made for 8 slots, too
 * few for 4 shares of 3, and grew once the 4 were there: every consumer
 * mapped the new ring while the next frames went by, and missed them
 * (frame 2, all four, in the bench's 2 streams x 4 consumers).  It grows
 * before the first frame now. */
GST_START_TEST (test_live_min_consumers_whole)
{
  gchar *path = socket_path ("gather-live");
  GstElement *producer, *sink;
  Consumer *c[LIVE_GATHERED];
  GstMessage *msg;
  guint k;

  /* 30 frames a second: a consumer slowed down by a sanitizer still keeps
   * up; the frames lost to the ring's growth were those right after it,
   * at any rate */
  producer = launch ("videotestsrc is-live=true num-buffers=%d ! " CAPS_STR
      " ! gpusharesink name=sink", GATHER_FRAMES);
  sink = child (producer, "sink");
  g_object_set (sink, "socket-path", path, "min-consumers", LIVE_GATHERED,
      "wait-for-connection", TRUE, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  /* consumers that drop each frame at once: none holds its share, so a
   * frame one of them misses was skipped while it mapped a new ring */
  for (k = 0; k < LIVE_GATHERED; k++) {
    c[k] = consumer_new (path, FALSE);
    consumer_start (c[k]);
  }
  for (k = 0; k < LIVE_GATHERED; k++) {
    msg = pop_message (c[k]->pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
        TIMEOUT_MS);
    fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
        "consumer %u did not reach the end", k);
    gst_message_unref (msg);
    fail_unless_equals_uint64 (stat_u64 (c[k]->src, "frames-received"),
        GATHER_FRAMES);
    fail_unless_equals_uint64 (stat_u64 (c[k]->src, "frames-missed"), 0);
  }
  /* grown before the first frame went: 3 slots each, and one */
  fail_unless (stat_uint (sink, "ring-slots") >= 3 * LIVE_GATHERED + 1);
  for (k = 0; k < LIVE_GATHERED; k++) {
    assert_no_error (c[k]->pipeline);
    consumer_free (c[k]);
  }
  assert_no_error (producer);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 5. Errors that say what to change */

/* descriptors that fill the numbers below the limit fd_limit_set () set */
static GArray *fd_fillers;

/* this process may open @spare more descriptors than it has open; the
 * limit it had, to put back with fd_limit_restore () */
static struct rlimit
fd_limit_set (guint spare)
{
  struct rlimit saved, low;
  guint64 limit;
  guint open_fds;
  gint fd;

  fail_unless (gpushare_fd_usage (&open_fds, &limit));
  fail_unless (getrlimit (RLIMIT_NOFILE, &saved) == 0);
  low = saved;
  low.rlim_cur = open_fds + spare;
  fail_unless (setrlimit (RLIMIT_NOFILE, &low) == 0);
  /* the limit bounds fd numbers: numbers closed below it (a thread or a
   * context gone before) would still be handed out; they are taken */
  fd_fillers = g_array_new (FALSE, FALSE, sizeof (gint));
  while ((fd = open ("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
    g_array_append_val (fd_fillers, fd);
  while (spare > 0 && fd_fillers->len > 0) {
    close (g_array_index (fd_fillers, gint, fd_fillers->len - 1));
    g_array_set_size (fd_fillers, fd_fillers->len - 1);
    spare--;
  }
  return saved;
}

static void
fd_limit_restore (const struct rlimit *saved)
{
  guint i;

  fail_unless (setrlimit (RLIMIT_NOFILE, saved) == 0);
  for (i = 0; i < fd_fillers->len; i++)
    close (g_array_index (fd_fillers, gint, i));
  g_clear_pointer (&fd_fillers, g_array_unref);
}

/* A consumer started in a process with no descriptor left: GLib aborted
 * the process (it cannot make the control thread's GMainContext without
 * one); the src posts RESOURCE / NO_SPACE_LEFT with the count and the
 * limit, and its process goes on. */
GST_START_TEST (test_src_out_of_fds)
{
  gchar *path = socket_path ("nofds");
  struct rlimit saved;
  GError *error = NULL;
  gchar *debug = NULL;
  GstElement *c;
  GstMessage *msg;

  c = launch ("gpusharesrc name=src connection-timeout=2000 ! fakesink");
  g_object_set (child (c, "src"), "socket-path", path, NULL);
  saved = fd_limit_set (0);
  gst_element_set_state (c, GST_STATE_PLAYING);
  fd_limit_restore (&saved);
  msg = pop_message (c, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL, "no error");
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NO_SPACE_LEFT), "%s", error->message);
  fail_unless (strstr (error->message, "out of file descriptors") != NULL,
      "%s", error->message);
  fail_unless (strstr (debug, "RLIMIT_NOFILE") != NULL, "%s", debug);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
  gst_element_set_state (c, GST_STATE_NULL);
  gst_object_unref (c);
  g_free (path);
}

GST_END_TEST;

/* A producer with no descriptor left for a consumer that connects: its
 * accept4 () failed (EMFILE), the connection stayed in the backlog, the
 * listening socket polled readable and the control thread spun on it
 * while the consumer waited for an answer.  It takes the connection on a
 * spare descriptor and refuses it with ERROR RESOURCE saying why; the
 * stream goes on, and a consumer that comes once there is room plays. */
GST_START_TEST (test_producer_out_of_fds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("nofds-producer");
  struct sockaddr_un addr = { AF_UNIX };
  GstElement *producer, *sink;
  struct rlimit saved;
  RawPeer raw;
  Consumer *c;
  gint fd;

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  fail_unless (fd >= 0);
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  saved = fd_limit_set (0);
  fail_unless (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  raw_init (&raw, fd);
  raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
  fd_limit_restore (&saved);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_RESOURCE);
  fail_unless (g_strstr_len (msg->u.error.text, msg->u.error.text_len,
          "out of file descriptors") != NULL);
  raw_clear (&raw);

  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 5), "the producer did not go on");
  assert_no_error (producer);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;


/* A socket-path that is a regular file or a directory: no producer will
 * ever listen there.  The consumer says so at once, not after its whole
 * connection-timeout as a refused connection. */
GST_START_TEST (test_path_not_a_socket)
{
  gchar *path = __i__ == 2 ? g_strnfill (108, 'x') :
      socket_path (__i__ ? "a-directory" : "a-file");
  GError *error = NULL;
  gchar *debug = NULL;
  GstElement *c;
  GstMessage *msg;
  gint64 t0;

  /* 2: a path too long for a Unix socket's address (108 bytes with its
   * NUL): it was called "not a socket" */
  if (__i__ == 2)
    path[0] = '/';
  else if (__i__)
    fail_unless (g_mkdir (path, 0700) == 0);
  else
    fail_unless (g_file_set_contents (path, "not a socket", -1, NULL));
  c = launch ("gpusharesrc name=src connection-timeout=10000 ! fakesink");
  g_object_set (child (c, "src"), "socket-path", path, NULL);
  t0 = g_get_monotonic_time ();
  gst_element_set_state (c, GST_STATE_PLAYING);
  msg = pop_message (c, GST_MESSAGE_ERROR, 3000);
  fail_unless (msg != NULL, "no error within 3 s");
  fail_unless ((g_get_monotonic_time () - t0) / 1000 < 3000);
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ), "%s", error->message);
  fail_unless (strstr (error->message, __i__ == 2 ? "too long" :
          "not a socket") != NULL, "%s", error->message);
  fail_unless (strstr (debug, __i__ == 2 ? "longer than 107 bytes" : __i__ ?
          "is a directory" : "is a regular file") != NULL, "%s", debug);
  /* posted with the place that found it, not the src's create () */
  fail_unless (strstr (debug, "gpushareclient.c") != NULL
      && strstr (debug, "try_connect") != NULL, "%s", debug);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
  gst_element_set_state (c, GST_STATE_NULL);
  gst_object_unref (c);
  if (__i__ == 1)
    g_rmdir (path);
  else if (__i__ == 0)
    g_unlink (path);
  g_free (path);
}

GST_END_TEST;

/* Downstream takes none of the producer's caps: the error says so, with
 * both sides' caps, not GStreamer's "Internal data stream error" */
GST_START_TEST (test_not_negotiated_says_caps)
{
  gchar *path = socket_path ("caps");
  GstElement *producer, *sink, *src, *c;
  GError *error = NULL;
  gchar *debug = NULL;
  GstMessage *msg;

  producer = appsrc_producer (path, "lossless", 4, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = launch ("gpusharesrc name=src connection-timeout=%d ! "
      "video/x-raw,format=I420 ! fakesink", TIMEOUT_MS);
  g_object_set (child (c, "src"), "socket-path", path, NULL);
  gst_element_set_state (c, GST_STATE_PLAYING);
  push_frame (src, 0, 0);
  msg = pop_message (c, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL, "no error");
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (g_error_matches (error, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", error->message);
  fail_unless (strstr (error->message, "does not accept the producer's caps")
      != NULL, "%s", error->message);
  fail_unless (strstr (debug, "format=(string)NV12") != NULL
      && strstr (debug, "format=(string)I420") != NULL, "%s", debug);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
  gst_element_set_state (c, GST_STATE_NULL);
  gst_object_unref (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* the first caps feature other than system memory that gpusharesrc's
 * template has (memory:CUDAMemory where GStreamer's CUDA library is), or
 * NULL */
static gchar *
src_device_feature (void)
{
  GstElementFactory *f = gst_element_factory_find ("gpusharesrc");
  const GList *l;
  gchar *feature = NULL;

  for (l = f ? gst_element_factory_get_static_pad_templates (f) : NULL;
      l && !feature; l = l->next) {
    GstStaticPadTemplate *t = l->data;
    GstCaps *caps = gst_static_caps_get (&t->static_caps);
    guint i;

    for (i = 0; i < gst_caps_get_size (caps) && !feature; i++) {
      GstCapsFeatures *cf = gst_caps_get_features (caps, i);

      if (cf && gst_caps_features_get_size (cf) == 1
          && !gst_caps_features_is_equal (cf,
              GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
        feature = g_strdup (gst_caps_features_get_nth (cf, 0));
    }
    gst_caps_unref (caps);
  }
  gst_clear_object (&f);
  return feature;
}

/* Downstream takes GPU memory alone and the frames come in system memory
 * (here: no GPU, no driver): the error says why they do, the src's
 * memory-reason, rather than only that the caps differ */
GST_START_TEST (test_gpu_caps_in_system_memory_says_why)
{
  gchar *path = socket_path ("gpucaps");
  gchar *feature = src_device_feature ();
  GstElement *producer, *sink, *src, *c;
  GstStructure *stats;
  GError *error = NULL;
  gchar *debug = NULL, *reason = NULL, *type = NULL;
  GstMessage *msg;

  if (!feature) {
    g_print ("test_gpu_caps_in_system_memory_says_why: gpusharesrc offers "
        "no GPU memory in this build: nothing to check\n");
    g_free (path);
    return;
  }
  producer = appsrc_producer (path, "lossless", 4, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = launch ("gpusharesrc name=src connection-timeout=%d ! "
      "video/x-raw(%s) ! fakesink", TIMEOUT_MS, feature);
  g_object_set (child (c, "src"), "socket-path", path, NULL);
  gst_element_set_state (c, GST_STATE_PLAYING);
  push_frame (src, 0, 0);
  msg = pop_message (c, GST_MESSAGE_ERROR, TIMEOUT_MS);
  stats = get_stats (child (c, "src"));
  gst_structure_get (stats, "memory-type", G_TYPE_STRING, &type,
      "memory-reason", G_TYPE_STRING, &reason, NULL);
  gst_structure_free (stats);
  if (g_strcmp0 (type, "system") != 0) {
    /* a GPU here: the frames came in its memory, the caps were fine */
    g_print ("test_gpu_caps_in_system_memory_says_why: frames in %s memory "
        "on this machine: nothing to check\n", type);
  } else {
    fail_unless (msg != NULL, "no error");
    gst_message_parse_error (msg, &error, &debug);
    fail_unless (g_error_matches (error, GST_CORE_ERROR,
            GST_CORE_ERROR_NEGOTIATION), "%s", error->message);
    fail_unless (strstr (error->message, "Downstream takes GPU memory only, "
            "but the frames come in system memory: ") != NULL, "%s",
        error->message);
    /* and why, as the stats say it ("system memory: " and why) */
    fail_unless (reason && g_str_has_prefix (reason, "system memory: ")
        && strstr (error->message, reason + strlen ("system memory: "))
        != NULL, "%s / %s", error->message, reason);
    fail_unless (strstr (debug, feature) != NULL, "%s", debug);
  }
  g_clear_error (&error);
  g_free (debug);
  g_free (reason);
  g_free (type);
  g_free (feature);
  if (msg)
    gst_message_unref (msg);
  gst_element_set_state (c, GST_STATE_NULL);
  gst_object_unref (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* Connects, refusals, removals, a lost producer and a reconnect reach the
 * bus of each side, with who the peer is; the src's stats name its
 * producer */
GST_START_TEST (test_bus_messages)
{
  gchar *path = socket_path ("bus");
  GstElement *producer, *sink;
  Consumer *a, *b;
  GstStructure *s;
  gint pid = 0;
  guint u = 0;

  producer = producer_new (path, &sink);
  g_object_set (sink, "max-clients", 1, NULL);
  producer_start (producer, sink);
  a = consumer_new (path, FALSE);
  gst_util_set_object_arg (G_OBJECT (a->src), "producer-lost", "reconnect");
  consumer_start (a);
  fail_unless (consumer_wait (a, 2));

  s = next_element_message (producer, "gpushare-client-connected", TIMEOUT_MS);
  fail_unless (s != NULL, "the sink posted no gpushare-client-connected");
  fail_unless (gst_structure_get_int (s, "pid", &pid) && pid == getpid ());
  fail_unless (gst_structure_get_uint (s, "uid", &u) && u == getuid ());
  fail_unless_equals_string (gst_structure_get_string (s, "name"), "src");
  gst_structure_free (s);
  s = next_element_message (a->pipeline, "gpushare-producer-connected",
      TIMEOUT_MS);
  fail_unless (s != NULL, "the src posted no gpushare-producer-connected");
  fail_unless (gst_structure_get_int (s, "pid", &pid) && pid == getpid ());
  fail_unless_equals_string (gst_structure_get_string (s, "name"), "sink");
  gst_structure_free (s);
  s = get_stats (a->src);
  fail_unless (gst_structure_get_int (s, "producer-pid", &pid)
      && pid == getpid ());
  fail_unless_equals_string (gst_structure_get_string (s, "producer-name"),
      "sink");
  gst_structure_free (s);

  /* one consumer too many: refused, and said on the sink's bus */
  b = consumer_new (path, FALSE);
  consumer_start (b);
  s = next_element_message (producer, "gpushare-client-removed", TIMEOUT_MS);
  fail_unless (s != NULL, "the sink posted no gpushare-client-removed");
  fail_unless_equals_string (gst_structure_get_string (s, "reason"),
      "too-many-clients");
  fail_unless (strstr (gst_structure_get_string (s, "detail"),
          "max-clients 1") != NULL);
  fail_unless (gst_structure_get_int (s, "pid", &pid) && pid == getpid ());
  gst_structure_free (s);
  consumer_free (b);

  /* the producer goes, another comes: lost, then connected again */
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  s = next_element_message (a->pipeline, "gpushare-producer-lost", TIMEOUT_MS);
  fail_unless (s != NULL, "the src posted no gpushare-producer-lost");
  fail_unless_equals_string (gst_structure_get_string (s, "action"),
      "reconnect");
  gst_structure_free (s);
  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  s = next_element_message (a->pipeline, "gpushare-producer-connected",
      TIMEOUT_MS);
  fail_unless (s != NULL, "no gpushare-producer-connected after reconnect");
  fail_unless (gst_structure_get_uint (s, "reconnects", &u) && u == 1);
  gst_structure_free (s);

  /* the consumer leaves: removed, reason goodbye */
  consumer_free (a);
  s = next_element_message (producer, "gpushare-client-removed", TIMEOUT_MS);
  fail_unless (s != NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "reason"), "goodbye");
  fail_unless_equals_string (gst_structure_get_string (s, "name"), "src");
  gst_structure_free (s);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 6. Where a frame's time goes: percentiles of each stage */

GST_START_TEST (test_timing_percentiles)
{
  GpuShareTiming t;
  guint p50, p99, i;

  gpushare_timing_init (&t);
  gpushare_timing_get (&t, &p50, &p99);
  fail_unless (p50 == 0 && p99 == 0);
  /* 1 .. 100, in any order: nearest rank */
  for (i = 0; i < 100; i++)
    gpushare_timing_add (&t, 1 + (i * 37) % 100);
  gpushare_timing_get (&t, &p50, &p99);
  fail_unless_equals_int (p50, 50);
  fail_unless_equals_int (p99, 99);
  /* the last GPUSHARE_TIMING_SAMPLES only: 1000 old samples of 7, then a
   * full window of 3 */
  for (i = 0; i < 1000; i++)
    gpushare_timing_add (&t, 7);
  for (i = 0; i < GPUSHARE_TIMING_SAMPLES; i++)
    gpushare_timing_add (&t, 3);
  gpushare_timing_get (&t, &p50, &p99);
  fail_unless (p50 == 3 && p99 == 3);
  /* out of range */
  gpushare_timing_reset (&t);
  gpushare_timing_add (&t, -5);
  gpushare_timing_add (&t, G_GINT64_CONSTANT (1) << 40);
  gpushare_timing_get (&t, &p50, &p99);
  fail_unless (p50 == 0 && p99 == G_MAXUINT32);
  gpushare_timing_clear (&t);
}

GST_END_TEST;

/* the stats say where the time went, stage by stage */
GST_START_TEST (test_stage_timings)
{
  static const gchar *const sink_fields[] = { "slot-wait-us", "write-us",
    "publish-us", "metas-us", "device-wait-us",
  };
  gchar *path = socket_path ("timing");
  GstElement *producer, *sink, *src;
  GstStructure *s;
  Consumer *c;
  guint i, p50, p99;
  guint64 spun;

  c = streaming_pair (path, 20, &producer, &sink, &src);
  s = get_stats (sink);
  for (i = 0; i < G_N_ELEMENTS (sink_fields); i++)
    fail_unless (get_stage (s, sink_fields[i], &p50, &p99) && p99 >= p50,
        "%s: %" GST_PTR_FORMAT, sink_fields[i], s);
  /* a frame is copied into its slot: that takes some time */
  fail_unless (gst_structure_get_uint (s, "write-us-p99", &p99) && p99 > 0);
  /* in system memory the host never waits for a device, nor spins */
  fail_unless (gst_structure_get_uint (s, "device-wait-us-p99", &p99)
      && p99 == 0);
  fail_unless (gst_structure_get_uint64 (s, "device-wait-spin-us", &spun)
      && spun == 0);
  gst_structure_free (s);
  s = get_stats (c->src);
  fail_unless (get_stage (s, "handoff-us", &p50, &p99) && p99 >= p50
      && p99 > 0, "%" GST_PTR_FORMAT, s);
  gst_structure_free (s);
  /* frames without metas: the metas' part of each stage is there */
  assert_stage_within (sink, "metas-us", "publish-us", FALSE);
  assert_stage_within (c->src, "metas-us", "handoff-us", FALSE);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* docs/stats.md lists every stats field, no more, no fewer */

/* the field names of the table under the heading that starts with
 * heading, in docs/stats.md: every `name` of a row's first cell */
static GPtrArray *
documented_fields (const gchar * doc, const gchar * heading)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  gchar **lines = g_strsplit (doc, "\n", -1);
  gboolean in = FALSE;
  guint i;

  for (i = 0; lines[i]; i++) {
    const gchar *l = lines[i];

    if (g_str_has_prefix (l, "#")) {
      in = g_str_has_prefix (l, heading);
      continue;
    }
    if (in && g_str_has_prefix (l, "| `")) {
      gchar **cells = g_strsplit (l, "|", 3);
      gchar **ticks = g_strsplit (cells[1], "`", -1);
      guint j;

      /* `a`, `b`: the odd pieces are the names */
      for (j = 1; ticks[j]; j += 2)
        g_ptr_array_add (names, g_strdup (ticks[j]));
      g_strfreev (ticks);
      g_strfreev (cells);
    }
  }
  g_strfreev (lines);
  fail_if (names->len == 0, "no table under '%s'", heading);
  return names;
}

static gboolean
add_field_name (GQuark field, const GValue * value, gpointer data)
{
  g_ptr_array_add (data, g_strdup (g_quark_to_string (field)));
  return TRUE;
}

static gboolean
has_name (GPtrArray * names, const gchar * name)
{
  guint i;

  for (i = 0; i < names->len; i++)
    if (g_str_equal (g_ptr_array_index (names, i), name))
      return TRUE;
  return FALSE;
}

static void
assert_documented (const GstStructure * st, const gchar * doc,
    const gchar * heading)
{
  GPtrArray *want = documented_fields (doc, heading);
  GPtrArray *have = g_ptr_array_new_with_free_func (g_free);
  guint i;

  gst_structure_foreach (st, add_field_name, have);
  for (i = 0; i < have->len; i++)
    fail_unless (has_name (want, g_ptr_array_index (have, i)),
        "%s: field %s is not in docs/stats.md", heading,
        (gchar *) g_ptr_array_index (have, i));
  for (i = 0; i < want->len; i++)
    fail_unless (has_name (have, g_ptr_array_index (want, i)),
        "%s: docs/stats.md lists %s, which the stats do not have", heading,
        (gchar *) g_ptr_array_index (want, i));
  g_ptr_array_unref (want);
  g_ptr_array_unref (have);
}

GST_START_TEST (test_stats_documented)
{
  gchar *path = socket_path ("stats");
  gchar *file = g_build_filename (g_getenv ("GPUSHARE_SOURCE_ROOT"), "docs",
      "stats.md", NULL);
  GstElement *producer, *sink, *src;
  GstStructure *st;
  const GValue *clients;
  gchar *doc = NULL;
  Consumer *c;

  fail_unless (g_file_get_contents (file, &doc, NULL, NULL), "no %s", file);
  c = streaming_pair (path, 3, &producer, &sink, &src);

  st = get_stats (sink);
  assert_documented (st, doc, "## gpusharesink");
  clients = gst_structure_get_value (st, "clients");
  fail_unless_equals_int (gst_value_array_get_size (clients), 1);
  assert_documented (gst_value_get_structure (gst_value_array_get_value
          (clients, 0)), doc, "### Each consumer");
  gst_structure_free (st);
  st = get_stats (c->src);
  assert_documented (st, doc, "## gpusharesrc");
  gst_structure_free (st);

  assert_no_error (producer);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (doc);
  g_free (file);
  g_free (path);
}

GST_END_TEST;

static Suite *
gpushare_stream_suite (void)
{
  Suite *s = suite_create ("gpushare_stream");
  TCase *tc_frame = tcase_create ("frame");
  TCase *tc_time = tcase_create ("time");
  TCase *tc_defaults = tcase_create ("defaults");
  TCase *tc_errors = tcase_create ("errors");
  TCase *tc_timing = tcase_create ("timing");

  suite_add_tcase (s, tc_frame);
  tcase_add_checked_fixture (tc_frame, elements_setup, elements_teardown);
  tcase_add_test (tc_frame, test_video_flags);
  tcase_add_test (tc_frame, test_frames_missed);
  tcase_add_test (tc_frame, test_stalled_consumer_said);
  tcase_add_test (tc_frame, test_share_lent_at_start);
  tcase_add_test (tc_frame, test_share_in_place);
  tcase_add_test (tc_frame, test_share_shrinks);
  tcase_add_test (tc_frame, test_metas_travel);
  tcase_add_test (tc_frame, test_lane_metas_large);
  tcase_add_test (tc_frame, test_unsendable_meta_left_out);
  tcase_add_test (tc_frame, test_hostile_analytics);
  tcase_add_test (tc_frame, test_hostile_serialized);
  /* GLib keeps the old array of quarks each time it grows it (lookups
   * without a lock): the test's thousands of new quarks leave arrays that
   * LeakSanitizer reports, and it aborts the sanitizer lane on them */
#if !defined(__SANITIZE_ADDRESS__)
  tcase_add_test (tc_frame, test_peer_roi_types_bounded);
#endif
#if HAVE_GST_ANALYTICS
  tcase_add_test (tc_frame, test_analytics_travel);
  tcase_add_test (tc_frame, test_unsendable_results_left_out);
  tcase_add_test (tc_frame, test_results_not_carried_once);
  tcase_add_test (tc_frame, test_peer_quarks_bounded);
#endif
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
  tcase_add_test (tc_frame, test_tensors_travel);
  tcase_add_test (tc_frame, test_masks_in_side_memory);
  tcase_add_test (tc_frame, test_mask_past_the_side_memory);
  tcase_add_test (tc_frame, test_masks_copied_with_their_frame);
#endif
  tcase_add_test (tc_frame, test_hostile_side_payloads);
  tcase_add_test (tc_frame, test_hostile_device_payloads);
  tcase_add_test (tc_frame, test_payloads_overlap);
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
  tcase_add_test (tc_frame, test_device_payloads_read);
#endif
  tcase_add_test (tc_frame, test_hostile_meta_names);
  tcase_add_test (tc_frame, test_custom_meta_registrations_bounded);
  tcase_add_test (tc_frame, test_custom_meta_race);
  tcase_add_test (tc_frame, test_meta_names_of_gstreamer);
  tcase_add_test (tc_frame, test_events_travel);
  tcase_add_test (tc_frame, test_events_across_a_new_ring);
  tcase_add_test (tc_frame, test_gpu_ring_after_caps_shrank);
  tcase_add_test (tc_frame, test_long_names_cut_whole);
  tcase_add_test (tc_frame, test_caps_consumers_refuse);
  tcase_add_test (tc_frame, test_frame_lane);
  tcase_add_test (tc_frame, test_stream_start_travels);
  suite_add_tcase (s, tc_time);
  tcase_add_checked_fixture (tc_time, elements_setup, elements_teardown);
  tcase_add_test (tc_time, test_late_consumer_plays);
  tcase_add_test (tc_time, test_prerolled_consumer_keeps_pace);
  tcase_add_test (tc_time, test_reconnect_plays_on);
  suite_add_tcase (s, tc_defaults);
  tcase_add_checked_fixture (tc_defaults, elements_setup, elements_teardown);
  tcase_add_test (tc_defaults, test_idle_producer_waits);
  tcase_add_test (tc_defaults, test_min_consumers);
  tcase_add_test (tc_defaults, test_live_min_consumers_whole);
  suite_add_tcase (s, tc_errors);
  tcase_add_checked_fixture (tc_errors, elements_setup, elements_teardown);
  tcase_add_loop_test (tc_errors, test_path_not_a_socket, 0, 3);
  tcase_add_test (tc_errors, test_not_negotiated_says_caps);
  tcase_add_test (tc_errors, test_gpu_caps_in_system_memory_says_why);
  tcase_add_test (tc_errors, test_bus_messages);
  tcase_add_test (tc_errors, test_src_out_of_fds);
  tcase_add_test (tc_errors, test_producer_out_of_fds);
  suite_add_tcase (s, tc_timing);
  tcase_add_checked_fixture (tc_timing, elements_setup, elements_teardown);
  tcase_add_test (tc_timing, test_timing_percentiles);
  tcase_add_test (tc_timing, test_stage_timings);
  tcase_add_test (tc_timing, test_stats_documented);
  tcase_add_test (tc_timing, test_control_thread_sleeps);
  return s;
}

GST_CHECK_MAIN (gpushare_stream);

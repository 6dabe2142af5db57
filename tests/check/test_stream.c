/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a frame carries besides its pixels, and what a consumer learns of
 * the stream: every buffer flag (GstVideoBufferFlags included), and the
 * frames it missed, each gap marked DISCONT and counted in the src's
 * stats.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#include <gst/check/gstcheck.h>
#include <gst/app/app.h>
#include <gst/video/video.h>

#include "gpushare-check-elements.h"

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

static void
push_frame (GstElement * src, guint i, guint32 flags)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);

  gst_buffer_memset (buf, 0, 0x10 + i, FRAME_SIZE);
  GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 30);
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  GST_BUFFER_OFFSET (buf) = i;
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

GST_START_TEST (test_frames_missed)
{
  gchar *path = socket_path ("missed");
  GstElement *producer, *sink, *src;
  GstBuffer *held[LEAKY_SHARE];
  Consumer *c;
  guint i, n = 0;

  producer = appsrc_producer (path, "leaky", LEAKY_RING, &sink, &src);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  /* every frame it holds stays in its slot */
  g_object_set (c->src, "max-in-place", LEAKY_RING, NULL);
  consumer_start (c);

  /* the consumer holds its share: frames 0-2 */
  for (i = 0; i < LEAKY_SHARE; i++)
    push_frame (src, n++, 0);
  fail_unless (consumer_wait (c, LEAKY_SHARE));
  for (i = 0; i < LEAKY_SHARE; i++) {
    held[i] = next_buffer (c, i);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (held[i]), i);
    fail_unless (i == 0 || !GST_BUFFER_FLAG_IS_SET (held[i],
            GST_BUFFER_FLAG_DISCONT), "frame %u is DISCONT", i);
  }
  fail_unless_equals_int (client_stat_uint (sink, 0, "slots-held"),
      LEAKY_SHARE);
  /* frames 3 and 4 go to nobody */
  push_frame (src, n++, 0);
  push_frame (src, n++, 0);
  fail_unless (wait_stat_u64_at_least (sink, "frames-rendered", n) >= n);
  for (i = 0; i < LEAKY_SHARE; i++)
    gst_buffer_unref (held[i]);
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

  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

static Suite *
gpushare_stream_suite (void)
{
  Suite *s = suite_create ("gpushare_stream");
  TCase *tc_frame = tcase_create ("frame");

  suite_add_tcase (s, tc_frame);
  tcase_add_checked_fixture (tc_frame, elements_setup, elements_teardown);
  tcase_add_test (tc_frame, test_video_flags);
  tcase_add_test (tc_frame, test_frames_missed);
  return s;
}

GST_CHECK_MAIN (gpushare_stream);

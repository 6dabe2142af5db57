/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-test-peer: one side of a stream, producer or consumer, in a
 * process of its own, for the end-to-end tests (tests/check/test_e2e.c)
 * and the GPU scripts (tests/gpu/).
 *
 *   gpushare-test-peer producer --socket PATH [options]
 *   gpushare-test-peer consumer --socket PATH [options]
 *   gpushare-test-peer relay --socket PATH --to PATH2 [options]
 *
 * Both sides print one line per frame with its offset, timestamps, flags
 * and a checksum of the visible pixels (computed on the producer in a probe
 * in front of gpusharesink, on the consumer on what gpusharesrc pushed),
 * so that any two runs can be compared line by line.  The options the
 * tests need to provoke what they check (dying at a frame or at a step of
 * the handshake, holding frames, pacing, waiting for consumers, a GPU on
 * either side) live here, not in the demo (examples/gpushare-demo.c).
 *
 * A relay is the middle of a chain: a consumer of PATH and a producer at
 * PATH2 in one process (gpusharesrc ! gpusharesink).  With --analytics
 * (GStreamer's analytics library, 1.24+) the producer attaches a
 * detector's results to every frame, the relay a tracker's, and every
 * side prints a digest of each frame's analytics meta beside its sum.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/app/app.h>
#include <gst/video/video.h>

#include "gpushare-analytics-util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct
{
  gchar *socket;
  gint frames;
  gint width, height;
  gchar *format;
  gint width2, height2;
  gint caps_change_at;
  gchar *source;
  gchar *policy;
  gint ring_size;
  gint lease_ms;                /* producer: lease-timeout, -1: default */
  gboolean live;
  gboolean wait;
  gint die_after;
  gint hold_ms;
  gint hold_frames;
  gint timeout_ms;
  gint pause_ms;
  gint wait_clients;
  gint drain_ms;
  gchar *out;
  gchar *transport;             /* consumer: gpusharesrc transport */
  gchar *sync;                  /* consumer: gpusharesrc sync-mode */
  gboolean gpu_input;           /* producer: cudaupload before the sink */
  gboolean gpu_output;          /* consumer: CUDA memory, then cudadownload */
  gchar *decode;                /* consumer: decode this file in-process */
  gchar *producer_lost;         /* consumer: gpusharesrc producer-lost */
  gchar *die_at;                /* GPUSHARE_TEST_DIE_AT for this process */
  gint cuda_device;             /* both: the GPU of this side, -1: default */
  gchar **set;                  /* both: PROPERTY=VALUE of this side's element */
  gboolean analytics;           /* all: attach and print inference results */
  gchar *mask;                  /* producer: WxH, a segmentation mask too */
  guint mask_w, mask_h;
  gint tensor;                  /* producer: a tensor of that many scores */
  gchar *payload_memory;        /* producer: the masks' and the tensor's
                                 * memory, "system" or "cuda" */
  gchar *to;                    /* relay: the socket it produces at */
} Options;

static Options opt = {
  .frames = 100,
  .width = 1920,
  .height = 1080,
  .caps_change_at = -1,
  .ring_size = 8,
  .lease_ms = -1,
  .die_after = -1,
  .timeout_ms = 10000,
  .cuda_device = -1,
};

static FILE *out;
static gint n_frames;

/* --set PROPERTY=VALUE, as gst-launch-1.0 sets them */
static void
set_properties (GstElement * element)
{
  gchar **p;

  for (p = opt.set; p && *p; p++) {
    gchar **kv = g_strsplit (*p, "=", 2);

    if (kv[0] && kv[1])
      gst_util_set_object_arg (G_OBJECT (element), kv[0], kv[1]);
    g_strfreev (kv);
  }
}

/* consumer: buffers that reached appsink, in stream order with the events */
static gint n_pushed;

/* 64-bit FNV-1a over the visible bytes of every plane, row by row: equal
 * pictures give equal sums whatever the strides */
static guint64
frame_checksum (GstBuffer * buf, GstVideoInfo * info)
{
  GstVideoFrame frame;
  guint64 h = G_GUINT64_CONSTANT (14695981039346656037);
  guint p;

  if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ))
    return 0;
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    const guint8 *data = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    guint rows, row_bytes, y, x;

    gst_video_format_info_component (info->finfo, p, comp);
    rows = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, comp[0]);
    row_bytes = GST_VIDEO_FRAME_COMP_WIDTH (&frame, comp[0]) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, comp[0]);
    for (y = 0; y < rows; y++) {
      const guint8 *row = data + (gsize) y * stride;

      for (x = 0; x + 8 <= row_bytes; x += 8) {
        guint64 w;

        memcpy (&w, row + x, 8);
        h = (h ^ w) * G_GUINT64_CONSTANT (1099511628211);
      }
      for (; x < row_bytes; x++)
        h = (h ^ row[x]) * G_GUINT64_CONSTANT (1099511628211);
    }
  }
  gst_video_frame_unmap (&frame);
  return h;
}

/* --analytics: " analytics=<digest> (<mtds> lines)" of the frame's
 * analytics meta, or "" (static: one thread prints) */
static const gchar *
analytics_digest (GstBuffer * buf)
{
  static gchar text[96];

  text[0] = 0;
#if HAVE_GST_ANALYTICS
  if (opt.analytics) {
    gchar *d = gpushare_test_analytics_describe (buf);
    guint lines = 0;
    gchar *p;

    for (p = d; *p; p++)
      lines += *p == '\n';
    g_snprintf (text, sizeof (text), " analytics=%08x lines=%u payloads=%s",
        g_str_hash (d), lines, gpushare_test_payload_memory (buf));
    g_free (d);
  }
#endif
  return text;
}

static void
print_frame (const gchar * tag, GstBuffer * buf, GstCaps * caps)
{
  GstVideoInfo info;
  GstClockTime pts = GST_BUFFER_PTS (buf), dts = GST_BUFFER_DTS (buf);

  if (!caps || !gst_video_info_from_caps (&info, caps))
    return;
  fprintf (out, "%s offset=%" G_GUINT64_FORMAT " offset_end=%" G_GUINT64_FORMAT
      " pts=%" G_GINT64_FORMAT " dts=%" G_GINT64_FORMAT " duration=%"
      G_GINT64_FORMAT " flags=0x%x size=%dx%d sum=%016" G_GINT64_MODIFIER "x%s"
      "\n",
      tag, GST_BUFFER_OFFSET (buf), GST_BUFFER_OFFSET_END (buf),
      GST_CLOCK_TIME_IS_VALID (pts) ? (gint64) pts : -1,
      GST_CLOCK_TIME_IS_VALID (dts) ? (gint64) dts : -1,
      GST_BUFFER_DURATION_IS_VALID (buf) ? (gint64) GST_BUFFER_DURATION (buf) :
      -1, GST_BUFFER_FLAGS (buf) & (GST_BUFFER_FLAG_DISCONT |
          GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER),
      GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info),
      frame_checksum (buf, &info), analytics_digest (buf));
  fflush (out);
}

/* ------------------------------------------------------------------------ */
/* producer */

static gboolean
cuda_payloads (void)
{
  return g_strcmp0 (opt.payload_memory, "cuda") == 0;
}

static GstPadProbeReturn
producer_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);

#if HAVE_GST_ANALYTICS
  if (opt.analytics) {
    /* a detector's results (a relay: a tracker's, on the detector's,
     * which it prints first); the frame's memory is shared, not copied */
    if (opt.to)
      print_frame ("in", buf, caps);
    buf = gst_buffer_make_writable (buf);
    if (opt.to)
      gpushare_test_analytics_track (buf);
    else
      gpushare_test_analytics_detect (buf, n_frames, 8 + n_frames % 5);
    if (!opt.to && opt.mask_w && !gpushare_test_analytics_segment (buf,
            n_frames, opt.mask_w, opt.mask_h, cuda_payloads ()))
      g_printerr ("no mask made for frame %u\n", n_frames);
    if (!opt.to && opt.tensor > 0 && !gpushare_test_tensor_attach (buf,
            n_frames, opt.tensor, cuda_payloads ()))
      g_printerr ("no tensor made for frame %u\n", n_frames);
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
#endif

  print_frame ("sent", buf, caps);
  gst_clear_caps (&caps);
  n_frames++;
  if (opt.die_after >= 0 && n_frames > opt.die_after) {
    fprintf (out, "dying\n");
    fflush (out);
    raise (SIGKILL);
  }
  return GST_PAD_PROBE_OK;
}

/* a consumer left or was dropped: the reason's nick, for the tests */
static void
on_client_removed (GstElement * sink, guint id, gint reason, gpointer data)
{
  GType type = g_type_from_name ("GstGpuShareClientRemoveReason");
  GEnumClass *klass = type ? g_type_class_ref (type) : NULL;
  GEnumValue *v = klass ? g_enum_get_value (klass, reason) : NULL;

  fprintf (out, "client-removed id=%u reason=%s\n", id,
      v ? v->value_nick : "?");
  fflush (out);
  if (klass)
    g_type_class_unref (klass);
}

/* the caps and the stats as the sink sees them, so that a test can compare
 * them with what each consumer printed.  The EOS stats are taken before
 * the sink passes the EOS on, while every consumer is still listed. */
static GstPadProbeReturn
producer_event_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  GstElement *sink = data;

  if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gchar *str;

    gst_event_parse_caps (ev, &caps);
    str = gst_caps_to_string (caps);
    fprintf (out, "caps frames=%d %s\n", n_frames, str);
    fflush (out);
    g_free (str);
  } else if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS) {
    GstStructure *stats;
    gchar *str;

    g_object_get (sink, "stats", &stats, NULL);
    str = gst_structure_to_string (stats);
    fprintf (out, "stats-eos %s\n", str);
    fflush (out);
    g_free (str);
    gst_structure_free (stats);
  }
  return GST_PAD_PROBE_OK;
}

static guint
n_ready_clients (GstElement * sink)
{
  GstStructure *stats;
  const GValue *clients;
  guint i, n = 0;

  g_object_get (sink, "stats", &stats, NULL);
  clients = gst_structure_get_value (stats, "clients");
  for (i = 0; clients && i < gst_value_array_get_size (clients); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (clients, i));
    const gchar *state = gst_structure_get_string (c, "state");

    if (state && g_str_equal (state, "ready"))
      n++;
  }
  gst_structure_free (stats);
  return n;
}

/* --wait-clients: hold the first buffer until that many consumers finished
 * their handshake.  Only buffers wait: the caps event must pass, since the
 * handshake announces the caps.  wait-for-connection alone lets the stream
 * go as soon as the first consumer is ready. */
static GstPadProbeReturn
wait_clients_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstElement *sink = data;
  gint64 deadline = g_get_monotonic_time () +
      (gint64) MAX (opt.timeout_ms, 1) * 1000;

  while (n_ready_clients (sink) < (guint) opt.wait_clients) {
    if (g_get_monotonic_time () > deadline) {
      fprintf (out, "error wait-clients timeout\n");
      fflush (out);
      break;
    }
    g_usleep (5000);
  }
  return GST_PAD_PROBE_REMOVE;
}

/* --drain-ms: after the stream, give the consumers time to leave, so that
 * the final stats show what the sink got back from them */
static void
drain_clients (GstElement * sink)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) opt.drain_ms * 1000;
  guint n;

  for (;;) {
    g_object_get (sink, "num-clients", &n, NULL);
    if (n == 0 || g_get_monotonic_time () > deadline)
      break;
    g_usleep (5000);
  }
}

static GstCaps *
make_caps (gint w, gint h)
{
  return gst_caps_new_simple ("video/x-raw",
      "format", G_TYPE_STRING, opt.format ? opt.format : "NV12",
      "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
}

/* deterministic content that differs per frame and per pixel */
static GstBuffer *
make_frame (GstVideoInfo * info, gint i)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, info->size, NULL);
  GstMapInfo map;
  gsize k;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (k = 0; k < map.size; k++)
    map.data[k] = (guint8) ((k * 7 + (k >> 11) * 3 + i * 13) & 0xff);
  gst_buffer_unmap (buf, &map);
  return buf;
}

static gpointer
feed_appsrc (gpointer data)
{
  GstAppSrc *src = data;
  GstClockTime dur = GST_SECOND / 30;
  GstVideoInfo info;
  GstCaps *caps = make_caps (opt.width, opt.height);
  gint i;

  gst_video_info_from_caps (&info, caps);
  gst_app_src_set_caps (src, caps);
  gst_caps_unref (caps);
  for (i = 0; i < opt.frames; i++) {
    GstBuffer *buf;

    if (i == opt.caps_change_at) {
      caps = make_caps (opt.width2, opt.height2);
      gst_video_info_from_caps (&info, caps);
      /* the frame is ready before the caps go out, so that it follows them
       * at once, as it would from a real source: nothing here gives the
       * consumers time to take in the new caps */
      buf = make_frame (&info, i);
      gst_app_src_set_caps (src, caps);
      gst_caps_unref (caps);
    } else {
      buf = make_frame (&info, i);
    }
    GST_BUFFER_PTS (buf) = i * dur + 5 * GST_MSECOND;
    /* distinct DTS, like a stream with B-frames */
    GST_BUFFER_DTS (buf) = i * dur;
    GST_BUFFER_DURATION (buf) = dur;
    GST_BUFFER_OFFSET (buf) = i;
    GST_BUFFER_OFFSET_END (buf) = i + 1;
    if (i == 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    if (i % 10 != 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
    if (gst_app_src_push_buffer (src, buf) != GST_FLOW_OK)
      break;
    if (opt.pause_ms)
      g_usleep (opt.pause_ms * 1000);
  }
  gst_app_src_end_of_stream (src);
  return NULL;
}

/* an error posted while the consumer stops, which the bus, flushing by
 * then, would drop: a line each */
static GstBusSyncReply
stop_error (GstBus * bus, GstMessage * msg, gpointer data)
{
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    fprintf (out, "stop-error domain=%s code=%d message=%s\n",
        g_quark_to_string (err->domain), err->code, err->message);
    g_error_free (err);
  }
  return GST_BUS_PASS;
}

static gboolean
bus_done (GstElement * pipeline, const gchar * role, gint timeout_ms, gint * rc)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  gboolean done = FALSE;

  while (!done) {
    GstMessage *msg = gst_bus_timed_pop (bus, timeout_ms > 0 ?
        (GstClockTime) timeout_ms * GST_MSECOND : GST_CLOCK_TIME_NONE);

    if (!msg) {
      fprintf (out, "error timeout\n");
      *rc = 3;
      break;
    }
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_EOS:
        fprintf (out, "eos\n");
        done = TRUE;
        break;
      case GST_MESSAGE_ERROR:{
        GError *err = NULL;
        gchar *dbg = NULL;

        gst_message_parse_error (msg, &err, &dbg);
        /* one line per error, whatever the debug text holds */
        if (dbg)
          g_strdelimit (dbg, "\n", ' ');
        fprintf (out, "error domain=%s code=%d message=%s debug=%s\n",
            g_quark_to_string (err->domain), err->code, err->message,
            dbg ? dbg : "");
        g_error_free (err);
        g_free (dbg);
        *rc = 2;
        done = TRUE;
        break;
      }
      case GST_MESSAGE_ELEMENT:{
        const GstStructure *s = gst_message_get_structure (msg);

        if (gst_structure_has_name (s, "gpushare-transport"))
          fprintf (out, "transport memory-type=%s reason=%s\n",
              gst_structure_get_string (s, "memory-type"),
              gst_structure_get_string (s, "reason"));
        break;
      }
      default:
        break;
    }
    fflush (out);
    gst_message_unref (msg);
  }
  gst_object_unref (bus);
  return *rc == 0;
}

/* --cuda-device: the GPU of the named element, if it is in the pipeline */
static void
set_cuda_device (GstElement * pipeline, const gchar * name)
{
  GstElement *e;

  if (opt.cuda_device < 0)
    return;
  e = gst_bin_get_by_name (GST_BIN (pipeline), name);
  if (e) {
    g_object_set (e, "cuda-device-id", opt.cuda_device, NULL);
    gst_object_unref (e);
  }
}

static gint
run_producer (void)
{
  GstElement *pipeline, *sink;
  GstPad *pad;
  GThread *feeder = NULL;
  GstStructure *stats;
  gchar *desc, *str;
  gint rc = 0;

  if (opt.source && g_str_has_prefix (opt.source, "file:"))
    /* an H.264 clip decoded on the GPU: CUDA memory into the sink */
    desc = g_strdup_printf ("filesrc location=\"%s\" ! qtdemux ! h264parse ! "
        "nvh264dec ! gpusharesink name=sink", opt.source + 5);
  else if (opt.source && g_str_equal (opt.source, "videotestsrc"))
    desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball "
        "is-live=%d ! video/x-raw,format=%s,width=%d,height=%d,"
        "framerate=30/1 ! %s gpusharesink name=sink", opt.frames, opt.live,
        opt.format ? opt.format : "NV12", opt.width, opt.height,
        opt.gpu_input ? "cudaupload name=up ! video/x-raw(memory:CUDAMemory) !"
        : "");
  else if (opt.to)
    /* a relay: a consumer of --socket, a producer at --to */
    desc = g_strdup_printf ("gpusharesrc name=in socket-path=\"%s\" "
        "connection-timeout=%d ! gpusharesink name=sink", opt.socket,
        opt.timeout_ms);
  else
    desc = g_strdup_printf ("appsrc name=src format=time is-live=%d "
        "max-bytes=0 max-buffers=4 block=true ! gpusharesink name=sink",
        opt.live);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (sink, "socket-path", opt.to ? opt.to : opt.socket,
      "ring-size", opt.ring_size, "wait-for-connection", opt.wait, NULL);
  set_cuda_device (pipeline, "sink");
  set_cuda_device (pipeline, "up");
  if (opt.policy)
    gst_util_set_object_arg (G_OBJECT (sink), "policy", opt.policy);
  if (opt.lease_ms >= 0)
    g_object_set (sink, "lease-timeout", (guint) opt.lease_ms, NULL);
  set_properties (sink);
  g_signal_connect (sink, "client-removed", G_CALLBACK (on_client_removed),
      NULL);
  pad = gst_element_get_static_pad (sink, "sink");
  if (opt.wait_clients > 0)
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK |
        GST_PAD_PROBE_TYPE_BUFFER, wait_clients_probe, sink, NULL);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, producer_probe, NULL,
      NULL);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      producer_event_probe, sink, NULL);
  gst_object_unref (pad);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    bus_done (pipeline, "producer", 1000, &rc);
    rc = rc ? rc : 2;
  } else {
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");

    if (src) {
      feeder = g_thread_new ("feeder", feed_appsrc, src);
      gst_object_unref (src);
    }
    bus_done (pipeline, "producer", 0, &rc);
  }
  if (opt.drain_ms > 0)
    drain_clients (sink);

  g_object_get (sink, "stats", &stats, NULL);
  str = gst_structure_to_string (stats);
  fprintf (out, "stats %s\n", str);
  g_free (str);
  gst_structure_free (stats);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  if (feeder)
    g_thread_join (feeder);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* consumer */

/* counts the buffers on the streaming thread: the frames pulled so far
 * (n_frames) lag behind by what appsink has queued, so they cannot say
 * before which frame the caps changed */
static GstPadProbeReturn
consumer_caps_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstEvent *ev;

  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_BUFFER) {
    n_pushed++;
    return GST_PAD_PROBE_OK;
  }
  ev = GST_PAD_PROBE_INFO_EVENT (info);
  if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gchar *str;

    gst_event_parse_caps (ev, &caps);
    str = gst_caps_to_string (caps);
    fprintf (out, "caps frames=%d %s\n", n_pushed, str);
    fflush (out);
    g_free (str);
  }
  return GST_PAD_PROBE_OK;
}

static gint
run_consumer (void)
{
  GstElement *pipeline, *src, *sink;
  GstPad *pad;
  GQueue held = G_QUEUE_INIT;
  GstClockTime max_late = 0;
  gint rc = 0;

  if (opt.decode) {
    /* the reference: the same clip decoded in this one process */
    gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! qtdemux ! "
        "h264parse ! nvh264dec ! cudadownload ! appsink name=sink "
        "sync=false", opt.decode);

    pipeline = gst_parse_launch (desc, NULL);
    g_free (desc);
  } else {
    pipeline = gst_parse_launch (opt.gpu_output ? "gpusharesrc name=src ! "
        "video/x-raw(memory:CUDAMemory) ! cudadownload name=down ! "
        "appsink name=sink "
        "sync=false max-buffers=2" : "gpusharesrc name=src ! appsink "
        "name=sink sync=false max-buffers=2", NULL);
  }
  if (!pipeline) {
    g_printerr ("consumer: cannot build the pipeline\n");
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  if (!src)
    src = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (!opt.decode && opt.transport)
    gst_util_set_object_arg (G_OBJECT (src), "transport", opt.transport);
  if (!opt.decode && opt.producer_lost)
    gst_util_set_object_arg (G_OBJECT (src), "producer-lost",
        opt.producer_lost);
  if (!opt.decode && opt.sync)
    gst_util_set_object_arg (G_OBJECT (src), "sync-mode", opt.sync);
  if (!opt.decode) {
    set_cuda_device (pipeline, "src");
    set_cuda_device (pipeline, "down");
    set_properties (src);
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (!opt.decode)
    g_object_set (src, "socket-path", opt.socket, "connection-timeout",
        opt.timeout_ms, "is-live", opt.live, NULL);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM |
      GST_PAD_PROBE_TYPE_BUFFER, consumer_caps_probe, NULL, NULL);
  gst_object_unref (pad);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        opt.timeout_ms > 0 ? (GstClockTime) opt.timeout_ms * GST_MSECOND :
        GST_CLOCK_TIME_NONE);
    GstBuffer *buf;

    if (!sample)
      break;
    buf = gst_sample_get_buffer (sample);
    if (opt.live) {
      GstClock *clock = gst_element_get_clock (pipeline);

      if (clock) {
        GstClockTime now = gst_clock_get_time (clock) -
            gst_element_get_base_time (pipeline);

        if (GST_BUFFER_PTS_IS_VALID (buf) && now > GST_BUFFER_PTS (buf))
          max_late = MAX (max_late, now - GST_BUFFER_PTS (buf));
        gst_object_unref (clock);
      }
    }
    print_frame ("recv", buf, gst_sample_get_caps (sample));
    n_frames++;
    if (opt.hold_frames > 0) {
      g_queue_push_tail (&held, gst_sample_ref (sample));
      if (g_queue_get_length (&held) > (guint) opt.hold_frames)
        gst_sample_unref (g_queue_pop_head (&held));
    }
    gst_sample_unref (sample);
    if (opt.die_after >= 0 && n_frames >= opt.die_after) {
      fprintf (out, "dying\n");
      fflush (out);
      raise (SIGKILL);
    }
    if (opt.hold_ms)
      g_usleep (opt.hold_ms * 1000);
  }
  g_queue_clear_full (&held, (GDestroyNotify) gst_sample_unref);
  if (opt.live)
    fprintf (out, "live max-late-ns=%" G_GUINT64_FORMAT "\n", max_late);
  bus_done (pipeline, "consumer", 2000, &rc);
  {
    GstStructure *stats;
    gchar *str;

    if (!opt.decode) {
      g_object_get (src, "stats", &stats, NULL);
      str = gst_structure_to_string (stats);
      fprintf (out, "stats %s\n", str);
      g_free (str);
      gst_structure_free (stats);
    }
  }
  {
    GstBus *bus = gst_element_get_bus (pipeline);

    gst_bus_set_sync_handler (bus, stop_error, NULL, NULL);
    gst_object_unref (bus);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return rc;
}

int
main (int argc, char **argv)
{
  const gchar *role = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
  GOptionEntry entries[] = {
    {"socket", 0, 0, G_OPTION_ARG_FILENAME, &opt.socket, "Socket path", NULL},
    {"frames", 0, 0, G_OPTION_ARG_INT, &opt.frames, "Frames to send", NULL},
    {"width", 0, 0, G_OPTION_ARG_INT, &opt.width, "Width", NULL},
    {"height", 0, 0, G_OPTION_ARG_INT, &opt.height, "Height", NULL},
    {"format", 0, 0, G_OPTION_ARG_STRING, &opt.format, "Video format", NULL},
    {"caps-change-at", 0, 0, G_OPTION_ARG_INT, &opt.caps_change_at,
        "Frame at which the caps change", NULL},
    {"width2", 0, 0, G_OPTION_ARG_INT, &opt.width2, "Width after", NULL},
    {"height2", 0, 0, G_OPTION_ARG_INT, &opt.height2, "Height after", NULL},
    {"source", 0, 0, G_OPTION_ARG_STRING, &opt.source,
        "appsrc (default) or videotestsrc", NULL},
    {"policy", 0, 0, G_OPTION_ARG_STRING, &opt.policy, "Sink policy", NULL},
    {"ring-size", 0, 0, G_OPTION_ARG_INT, &opt.ring_size, "Ring size", NULL},
    {"lease-ms", 0, 0, G_OPTION_ARG_INT, &opt.lease_ms,
        "Producer: lease-timeout of the sink in ms", NULL},
    {"live", 0, 0, G_OPTION_ARG_NONE, &opt.live, "Live", NULL},
    {"wait", 0, 0, G_OPTION_ARG_NONE, &opt.wait, "wait-for-connection",
        NULL},
    {"die-after", 0, 0, G_OPTION_ARG_INT, &opt.die_after,
        "SIGKILL itself after this many frames", NULL},
    {"hold-ms", 0, 0, G_OPTION_ARG_INT, &opt.hold_ms,
        "Consumer: sleep per frame", NULL},
    {"hold-frames", 0, 0, G_OPTION_ARG_INT, &opt.hold_frames,
        "Consumer: keep this many frames referenced", NULL},
    {"pause-ms", 0, 0, G_OPTION_ARG_INT, &opt.pause_ms,
        "Producer: sleep between frames", NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &opt.timeout_ms,
        "Consumer: connection and frame timeout in ms; producer: the most "
          "--wait-clients waits", NULL},
    {"wait-clients", 0, 0, G_OPTION_ARG_INT, &opt.wait_clients,
        "Producer: hold the first frame until N consumers are ready", NULL},
    {"drain-ms", 0, 0, G_OPTION_ARG_INT, &opt.drain_ms,
        "Producer: after the stream, wait up to this long for the consumers "
          "to leave before printing the stats", NULL},
    {"transport", 0, 0, G_OPTION_ARG_STRING, &opt.transport,
        "Consumer: auto, system or cuda", NULL},
    {"sync", 0, 0, G_OPTION_ARG_STRING, &opt.sync,
        "Consumer: auto, host, semaphore or event", NULL},
    {"gpu-input", 0, 0, G_OPTION_ARG_NONE, &opt.gpu_input,
        "Producer: upload to CUDA memory before gpusharesink", NULL},
    {"die-at", 0, 0, G_OPTION_ARG_STRING, &opt.die_at,
        "Test only: crash (SIGKILL) at side:step[:n] of the protocol (the "
          "test build's plugin only)", NULL},
    {"producer-lost", 0, 0, G_OPTION_ARG_STRING, &opt.producer_lost,
        "Consumer: error, eos or reconnect", NULL},
    {"decode", 0, 0, G_OPTION_ARG_FILENAME, &opt.decode,
        "Consumer: decode this H.264 clip in this process instead", NULL},
    {"gpu-output", 0, 0, G_OPTION_ARG_NONE, &opt.gpu_output,
        "Consumer: take CUDA memory from gpusharesrc, then download", NULL},
    {"cuda-device", 0, 0, G_OPTION_ARG_INT, &opt.cuda_device,
        "Both: the GPU of this side (gpusharesink or gpusharesrc, "
          "cudaupload, cudadownload)", NULL},
    {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt.set,
          "Both: PROPERTY=VALUE of gpusharesink or gpusharesrc (repeatable)",
        NULL},
    {"out", 0, 0, G_OPTION_ARG_FILENAME, &opt.out,
        "Write the report here instead of stdout", NULL},
    {"analytics", 0, 0, G_OPTION_ARG_NONE, &opt.analytics,
        "Attach a detector's (relay: a tracker's) results and print a digest "
          "of each frame's (GStreamer 1.24+ with its analytics library)", NULL},
    {"mask", 0, 0, G_OPTION_ARG_STRING, &opt.mask,
        "Producer, with --analytics: a segmentation mask of WxH pixels "
          "too (GStreamer 1.26+)", NULL},
    {"tensor", 0, 0, G_OPTION_ARG_INT, &opt.tensor,
        "Producer, with --analytics: a tensor meta of N scores too "
          "(GStreamer 1.26+)", "N"},
    {"payload-memory", 0, 0, G_OPTION_ARG_STRING, &opt.payload_memory,
        "Producer: the masks and the tensor in system (default) or cuda "
          "memory (GStreamer's CUDA library)", NULL},
    {"to", 0, 0, G_OPTION_ARG_FILENAME, &opt.to,
        "Relay: the socket to produce at", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("producer|consumer|relay");
  GError *error = NULL;
  gint rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 64;
  }
  g_option_context_free (ctx);
  if (opt.die_at)
    g_setenv ("GPUSHARE_TEST_DIE_AT", opt.die_at, TRUE);
  out = opt.out ? fopen (opt.out, "w") : stdout;
  if (!out)
    return 64;
#ifdef GPUSHARE_BUILD_PLUGIN_DIR
  /* run from the build tree without installing: find the fresh plugin */
  if (!gst_registry_check_feature_version (gst_registry_get (),
          "gpusharesink", 1, 0, 0))
    gst_registry_scan_path (gst_registry_get (), GPUSHARE_BUILD_PLUGIN_DIR);
#endif

#if !HAVE_GST_ANALYTICS
  if (opt.analytics) {
    g_print ("SKIP: built without GStreamer's analytics library (1.24+)\n");
    return 77;
  }
#endif
  if (opt.mask && (sscanf (opt.mask, "%ux%u", &opt.mask_w, &opt.mask_h) != 2
          || opt.mask_w == 0 || opt.mask_h == 0 || !opt.analytics)) {
    g_printerr ("--mask WxH, with --analytics\n");
    return 64;
  }
#if !HAVE_GST_CUDA_TEST
  if (cuda_payloads ()) {
    g_print ("SKIP: built without GStreamer's CUDA library\n");
    return 77;
  }
#endif
#if !GST_CHECK_VERSION(1, 26, 0)
  if (opt.mask || opt.tensor) {
    g_print ("SKIP: GStreamer %d.%d has no segmentation mtd (1.26+)\n",
        GST_VERSION_MAJOR, GST_VERSION_MINOR);
    return 77;
  }
#endif
  if ((g_str_equal (role, "producer") && opt.socket && !opt.to)
      || (g_str_equal (role, "relay") && opt.socket && opt.to))
    rc = run_producer ();
  else if (g_str_equal (role, "consumer") && (opt.socket || opt.decode))
    rc = run_consumer ();
  else {
    g_printerr ("usage: %s producer|consumer|relay --socket PATH ...\n",
        argv[0]);
    rc = 64;
  }
  if (out != stdout)
    fclose (out);
  gst_deinit ();
  return rc;
}

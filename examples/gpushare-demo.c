/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-demo: a producer and a consumer in two processes.
 *
 *   gpushare-demo                     run both, print what happened
 *   gpushare-demo producer [options]  one side only
 *   gpushare-demo consumer [options]
 *
 * Both sides print one line per frame with its offset, timestamps, flags
 * and a checksum of the visible pixels (computed on the producer in a probe
 * in front of gpusharesink, on the consumer on what gpusharesrc pushed),
 * so that any two runs can be compared line by line.  Without arguments
 * the program runs itself twice, as producer and consumer, and compares.
 *
 * The tests drive a peer of their own with many more options
 * (tests/peer/gpushare-test-peer.c); this one stays small enough to read.
 */

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/app.h>
#include <gst/video/video.h>

#include <stdio.h>
#include <string.h>

typedef struct
{
  gchar *socket;
  gint frames;
  gint width, height;
  gchar *format;
  gchar *policy;                /* producer: gpusharesink policy */
  gboolean live;
  gboolean wait;
  gboolean gpu_input;           /* producer: cudaupload before the sink */
  gchar *transport;             /* consumer: gpusharesrc transport */
  gint timeout_ms;
  gchar *out;
} Options;

static Options opt = {
  .frames = 100,
  .width = 1920,
  .height = 1080,
  .timeout_ms = 10000,
};

static FILE *out;

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

static void
print_frame (const gchar * tag, GstBuffer * buf, GstCaps * caps)
{
  GstVideoInfo info;
  GstClockTime pts = GST_BUFFER_PTS (buf), dts = GST_BUFFER_DTS (buf);

  if (!caps || !gst_video_info_from_caps (&info, caps))
    return;
  fprintf (out, "%s offset=%" G_GUINT64_FORMAT " offset_end=%" G_GUINT64_FORMAT
      " pts=%" G_GINT64_FORMAT " dts=%" G_GINT64_FORMAT " duration=%"
      G_GINT64_FORMAT " flags=0x%x size=%dx%d sum=%016" G_GINT64_MODIFIER "x\n",
      tag, GST_BUFFER_OFFSET (buf), GST_BUFFER_OFFSET_END (buf),
      GST_CLOCK_TIME_IS_VALID (pts) ? (gint64) pts : -1,
      GST_CLOCK_TIME_IS_VALID (dts) ? (gint64) dts : -1,
      GST_BUFFER_DURATION_IS_VALID (buf) ? (gint64) GST_BUFFER_DURATION (buf) :
      -1, GST_BUFFER_FLAGS (buf) & (GST_BUFFER_FLAG_DISCONT |
          GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER),
      GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info),
      frame_checksum (buf, &info));
  fflush (out);
}

/* Waits for the end of the stream: TRUE on EOS, FALSE on an error or when
 * nothing came for timeout_ms (0: no limit).  The src's
 * gpushare-transport message says which memory it reads and why. */
static gboolean
bus_done (GstElement * pipeline, gint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  gboolean done = FALSE, ok = FALSE;

  while (!done) {
    GstMessage *msg = gst_bus_timed_pop (bus, timeout_ms > 0 ?
        (GstClockTime) timeout_ms * GST_MSECOND : GST_CLOCK_TIME_NONE);

    if (!msg) {
      fprintf (out, "error timeout\n");
      break;
    }
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_EOS:
        fprintf (out, "eos\n");
        done = ok = TRUE;
        break;
      case GST_MESSAGE_ERROR:{
        GError *err = NULL;
        gchar *dbg = NULL;

        gst_message_parse_error (msg, &err, &dbg);
        /* one line per error, whatever the debug text holds */
        if (dbg)
          g_strdelimit (dbg, "\n", ' ');
        fprintf (out, "error %s (%s)\n", err->message, dbg ? dbg : "");
        g_error_free (err);
        g_free (dbg);
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
  return ok;
}

/* ------------------------------------------------------------------------ */
/* producer */

static GstPadProbeReturn
producer_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);

  print_frame ("sent", GST_PAD_PROBE_INFO_BUFFER (info), caps);
  gst_clear_caps (&caps);
  return GST_PAD_PROBE_OK;
}

static gint
run_producer (void)
{
  GstElement *pipeline, *sink;
  GstStructure *stats;
  GstPad *pad;
  gchar *desc, *str;
  GError *error = NULL;
  gint rc = 0;

  /* a moving ball: every frame differs, so a mix-up cannot go unseen */
  desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball "
      "is-live=%d ! video/x-raw,format=%s,width=%d,height=%d,"
      "framerate=30/1 ! %s gpusharesink name=sink", opt.frames, opt.live,
      opt.format ? opt.format : "NV12", opt.width, opt.height,
      opt.gpu_input ? "cudaupload ! video/x-raw(memory:CUDAMemory) !" : "");
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_printerr ("producer: %s\n", error ? error->message : "no pipeline");
    g_clear_error (&error);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (sink, "socket-path", opt.socket, "wait-for-connection",
      opt.wait, NULL);
  if (opt.policy)
    gst_util_set_object_arg (G_OBJECT (sink), "policy", opt.policy);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, producer_probe, NULL,
      NULL);
  gst_object_unref (pad);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    bus_done (pipeline, 1000);
    rc = 2;
  } else if (!bus_done (pipeline, 0)) {
    rc = 2;
  }

  g_object_get (sink, "stats", &stats, NULL);
  str = gst_structure_to_string (stats);
  fprintf (out, "stats %s\n", str);
  g_free (str);
  gst_structure_free (stats);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* consumer */

static gint
run_consumer (void)
{
  GstElement *pipeline, *src, *sink;
  GstStructure *stats;
  gchar *str;
  gint rc = 0;

  pipeline = gst_parse_launch ("gpusharesrc name=src ! appsink name=sink "
      "sync=false max-buffers=2", NULL);
  if (!pipeline) {
    g_printerr ("consumer: cannot build the pipeline\n");
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (src, "socket-path", opt.socket, "connection-timeout",
      opt.timeout_ms, "is-live", opt.live, NULL);
  if (opt.transport)
    gst_util_set_object_arg (G_OBJECT (src), "transport", opt.transport);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        opt.timeout_ms > 0 ? (GstClockTime) opt.timeout_ms * GST_MSECOND :
        GST_CLOCK_TIME_NONE);

    if (!sample)
      break;
    print_frame ("recv", gst_sample_get_buffer (sample),
        gst_sample_get_caps (sample));
    gst_sample_unref (sample);
  }
  if (!bus_done (pipeline, 2000))
    rc = 2;

  g_object_get (src, "stats", &stats, NULL);
  str = gst_structure_to_string (stats);
  fprintf (out, "stats %s\n", str);
  g_free (str);
  gst_structure_free (stats);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* both, in two processes */

static gchar **
read_lines (const gchar * path, const gchar * prefix, guint * n)
{
  gchar *text = NULL;
  gchar **lines, **l;
  GPtrArray *keep = g_ptr_array_new ();

  g_file_get_contents (path, &text, NULL, NULL);
  lines = g_strsplit (text ? text : "", "\n", -1);
  for (l = lines; *l; l++)
    if (g_str_has_prefix (*l, prefix))
      g_ptr_array_add (keep, g_strdup (*l + strlen (prefix)));
  g_ptr_array_add (keep, NULL);
  g_strfreev (lines);
  g_free (text);
  *n = keep->len - 1;
  return (gchar **) g_ptr_array_free (keep, FALSE);
}

static gint
run_both (const gchar * self_path)
{
  gchar *dir = g_dir_make_tmp ("gpushare-demo-XXXXXX", NULL);
  gchar *sock = g_build_filename (dir, "demo.sock", NULL);
  gchar *plog = g_build_filename (dir, "producer.log", NULL);
  gchar *clog = g_build_filename (dir, "consumer.log", NULL);
  gchar *frames = g_strdup_printf ("%d", opt.frames);
  gchar *w = g_strdup_printf ("%d", opt.width);
  gchar *h = g_strdup_printf ("%d", opt.height);
  const gchar *pargv[] = { self_path, "producer", "--socket", sock,
    "--frames", frames, "--width", w, "--height", h, "--wait",
    "--out", plog, NULL
  };
  const gchar *cargv[] = { self_path, "consumer", "--socket", sock,
    "--out", clog, NULL
  };
  GSubprocess *producer, *consumer;
  gchar **sent, **recv, *transport = NULL;
  guint n_sent, n_recv, n_transport, i, matched = 0;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok;

  g_print ("gpushare demo: %d frames of %dx%d NV12, producer and consumer in "
      "two processes\n", opt.frames, opt.width, opt.height);
  consumer = g_subprocess_newv (cargv, G_SUBPROCESS_FLAGS_NONE, NULL);
  producer = g_subprocess_newv (pargv, G_SUBPROCESS_FLAGS_NONE, NULL);
  g_subprocess_wait (producer, NULL, NULL);
  g_subprocess_wait (consumer, NULL, NULL);

  sent = read_lines (plog, "sent ", &n_sent);
  recv = read_lines (clog, "recv ", &n_recv);
  {
    gchar **t = read_lines (clog, "transport ", &n_transport);

    transport = g_strdup (n_transport ? t[0] : "none reported");
    g_strfreev (t);
  }
  for (i = 0; i < MIN (n_sent, n_recv); i++)
    if (g_str_equal (sent[i], recv[i]))
      matched++;
  ok = g_subprocess_get_exit_status (producer) == 0
      && g_subprocess_get_exit_status (consumer) == 0
      && n_sent == (guint) opt.frames && n_recv == n_sent && matched == n_sent;

  g_print ("transport:       %s\n", transport);
  g_print ("frames sent:     %u\n", n_sent);
  g_print ("frames received: %u\n", n_recv);
  g_print ("frames matched:  %u (checksum of every plane, timestamps, "
      "offsets, flags)\n", matched);
  g_print ("wall time:       %.2f s\n", (g_get_monotonic_time () - t0) / 1e6);
  g_print ("result:          %s\n", ok ? "every frame matched" : "MISMATCH");

  g_strfreev (sent);
  g_strfreev (recv);
  g_free (transport);
  g_object_unref (producer);
  g_object_unref (consumer);
  g_unlink (plog);
  g_unlink (clog);
  g_rmdir (dir);
  g_free (plog);
  g_free (clog);
  g_free (sock);
  g_free (dir);
  g_free (frames);
  g_free (w);
  g_free (h);
  return ok ? 0 : 1;
}

int
main (int argc, char **argv)
{
  const gchar *role = argc > 1 && argv[1][0] != '-' ? argv[1] : "both";
  GOptionEntry entries[] = {
    {"socket", 0, 0, G_OPTION_ARG_FILENAME, &opt.socket, "Socket path", NULL},
    {"frames", 0, 0, G_OPTION_ARG_INT, &opt.frames, "Frames to send", NULL},
    {"width", 0, 0, G_OPTION_ARG_INT, &opt.width, "Width", NULL},
    {"height", 0, 0, G_OPTION_ARG_INT, &opt.height, "Height", NULL},
    {"format", 0, 0, G_OPTION_ARG_STRING, &opt.format,
        "Producer: video format (NV12)", NULL},
    {"policy", 0, 0, G_OPTION_ARG_STRING, &opt.policy,
        "Producer: auto, lossless or leaky", NULL},
    {"live", 0, 0, G_OPTION_ARG_NONE, &opt.live, "Live", NULL},
    {"wait", 0, 0, G_OPTION_ARG_NONE, &opt.wait,
        "Producer: wait for a consumer before the first frame", NULL},
    {"gpu-input", 0, 0, G_OPTION_ARG_NONE, &opt.gpu_input,
        "Producer: upload to CUDA memory before gpusharesink", NULL},
    {"transport", 0, 0, G_OPTION_ARG_STRING, &opt.transport,
        "Consumer: auto, system or cuda", NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &opt.timeout_ms,
        "Consumer: connection and frame timeout in ms", NULL},
    {"out", 0, 0, G_OPTION_ARG_FILENAME, &opt.out,
        "Write the report here instead of stdout", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("[producer|consumer]");
  GError *error = NULL;
  gint rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 64;
  }
  g_option_context_free (ctx);
  out = opt.out ? fopen (opt.out, "w") : stdout;
  if (!out)
    return 64;
#ifdef GPUSHARE_BUILD_PLUGIN_DIR
  /* run from the build tree without installing: find the fresh plugin */
  if (!gst_registry_check_feature_version (gst_registry_get (),
          "gpusharesink", 1, 0, 0))
    gst_registry_scan_path (gst_registry_get (), GPUSHARE_BUILD_PLUGIN_DIR);
#endif

  if (g_str_equal (role, "producer") && opt.socket)
    rc = run_producer ();
  else if (g_str_equal (role, "consumer") && opt.socket)
    rc = run_consumer ();
  else if (g_str_equal (role, "both")) {
    gchar *exe = g_file_read_link ("/proc/self/exe", NULL);

    rc = run_both (exe ? exe : argv[0]);
    g_free (exe);
  } else {
    g_printerr ("usage: %s [producer|consumer] --socket PATH ...\n", argv[0]);
    rc = 64;
  }
  if (out != stdout)
    fclose (out);
  gst_deinit ();
  return rc;
}

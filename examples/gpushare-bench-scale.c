/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-bench --streams K[,K...] --consumers M: many cameras, many
 * consumers.  K streams, each a live source at --fps (30; 0: as fast as
 * possible) sent through a transport, each read by M consumers:
 *
 *   per-process  K producer processes, one stream each, and K x M consumer
 *                processes, one stream each;
 *   shared       one producer process with the K streams, and M consumer
 *                processes that each read all K.
 *
 * The floor is the same sources into fakesink, in K processes or in one.
 *
 * Every frame carries its number (GST_BUFFER_OFFSET, which gpushare
 * carries; shm rows count arrivals), so each consumer's frames delivered
 * and lost are exact counts.  Each process stamps CLOCK_MONOTONIC per
 * frame (producer: the sink pad of "in<N>", consumer: the src pad of
 * "out<N>") and measures its own CPU time (getrusage) from the moment all
 * its streams are past the warm-up (--warmup, 2 s of frames) to its last
 * frame: CPU per frame is that time over the frames it handled meanwhile,
 * summed over the processes of a side.  Latency is over the frames after
 * the warm-up too.  The threads and descriptors of each process are read
 * when its warm-up ends; its GPU memory is the most nvidia-smi lists for
 * it, read every 2 s while the row runs.
 *
 * Consumers of gpushare rows start first and wait for their producer
 * (connection-timeout); each sink holds its stream until its M consumers
 * have mapped the ring (wait-for-connection, min-consumers).  Other
 * transports' producers start first and hold their first frame until
 * every consumer process has said it is playing, as gpushare-bench's
 * gated rows do.  A process that fails on its own while the producers
 * run ends the row at once (child_failed ()).
 */

#include <glib/gstdio.h>
#include <gst/gst.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare-bench.h"

/* ------------------------------------------------------------------------ */
/* the modes */

/* Templates of one stream.  @N@ is the stream's number (names in@N@,
 * out@N@), @SCAPS@ its caps (@CUDACAPS@ in GPU memory), @LIVE@ true
 * unless --fps 0, @M@ the consumers
 * a stream has, @CTO@ a consumer's connection-timeout (ms); the rest as
 * in gpushare-bench.c (expand ()). */
#define SCALE_SOURCE "videotestsrc num-buffers=1 pattern=smpte ! @SCAPS@ ! " \
  "imagefreeze is-live=@LIVE@ num-buffers=@FRAMES@ ! @SCAPS@"
/* imagefreeze takes its frame rate from downstream (25/1 where nothing
 * says): the caps after it say the rate, @CUDACAPS@ in GPU memory */
#define SCALE_CUDA_SOURCE "videotestsrc num-buffers=1 pattern=smpte ! " \
  "@SCAPS@ ! cudaupload ! video/x-raw(memory:CUDAMemory) ! " \
  "imagefreeze is-live=@LIVE@ num-buffers=@FRAMES@ ! @CUDACAPS@"
/* the defaults otherwise: policy auto (leaky for a live source) */
#define SCALE_GPUSHARE_SINK "gpusharesink name=in@N@ socket-path=@SOCKET@ " \
  "wait-for-connection=true min-consumers=@M@ sync=false"
#define SCALE_GPUSHARE_SRC(opts) "gpusharesrc name=out@N@ " \
  "socket-path=@SOCKET@ connection-timeout=@CTO@ " opts
#define SCALE_FAKESINK "fakesink sync=false enable-last-sample=false"

typedef struct
{
  const gchar *name;
  const gchar *what;
  /* elements that must exist, separated by spaces */
  const gchar *needs;
  const gchar *producer;
  /* NULL: the floor, one side */
  const gchar *consumer;
  FrameKey key;
  gboolean gpu;
  /* the sink holds each stream until its consumers are there: they start
   * first; otherwise the producers start first and are gated */
  gboolean sink_waits;
} ScaleMode;

static const ScaleMode scale_modes[] = {
  {"one-process", "the sources into fakesink: the floor", "imagefreeze",
        SCALE_SOURCE " ! " SCALE_FAKESINK " name=in@N@", NULL, KEY_OFFSET,
      FALSE, FALSE},
  {"gpushare-sysmem", "gpusharesink / gpusharesrc, system memory",
        "imagefreeze gpusharesink gpusharesrc",
        SCALE_SOURCE " ! " SCALE_GPUSHARE_SINK,
        SCALE_GPUSHARE_SRC ("transport=system") " ! " SCALE_FAKESINK,
      KEY_OFFSET, FALSE, TRUE},
  {"shm", "shmsink / shmsrc", "imagefreeze shmsink shmsrc",
        SCALE_SOURCE " ! shmsink name=in@N@ socket-path=@SOCKET@ "
        "wait-for-connection=true shm-size=@SHMSIZE@ sync=false",
      "shmsrc name=out@N@ socket-path=@SOCKET@ is-live=true ! @SCAPS@ ! "
        SCALE_FAKESINK, KEY_ORDER, FALSE, FALSE},
  {"one-process-cuda", "the sources in GPU memory into fakesink",
        "imagefreeze cudaupload",
        SCALE_CUDA_SOURCE " ! " SCALE_FAKESINK " name=in@N@", NULL,
      KEY_OFFSET, TRUE, FALSE},
  {"gpushare-cuda", "gpushare, GPU slots read in place (import)",
        "imagefreeze cudaupload gpusharesink gpusharesrc",
        SCALE_CUDA_SOURCE " ! " SCALE_GPUSHARE_SINK,
        SCALE_GPUSHARE_SRC ("transport=cuda") " ! "
        "video/x-raw(memory:CUDAMemory) ! " SCALE_FAKESINK, KEY_OFFSET, TRUE,
      TRUE},
  {"gpushare-cuda-copy", "gpushare, each frame copied out of its GPU slot",
        "imagefreeze cudaupload gpusharesink gpusharesrc",
        SCALE_CUDA_SOURCE " ! " SCALE_GPUSHARE_SINK,
        SCALE_GPUSHARE_SRC ("transport=cuda io-mode=copy") " ! "
        "video/x-raw(memory:CUDAMemory) ! " SCALE_FAKESINK, KEY_OFFSET, TRUE,
      TRUE},
  {"cudaipc", "cudaipcsink / cudaipcsrc (1.24+), import",
        "imagefreeze cudaupload cudaipcsink cudaipcsrc",
        SCALE_CUDA_SOURCE " ! cudaipcsink name=in@N@ address=@SOCKET@ "
        "sync=false",
        "cudaipcsrc name=out@N@ address=@SOCKET@ io-mode=import ! "
        "video/x-raw(memory:CUDAMemory) ! " SCALE_FAKESINK, KEY_ORDER, TRUE,
      FALSE},
};

static const ScaleMode *
scale_find (const gchar * name)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (scale_modes); i++)
    if (g_str_equal (scale_modes[i].name, name))
      return &scale_modes[i];
  return NULL;
}

static gchar *
scale_missing (const ScaleMode * mode)
{
  if (mode->gpu && gpu_count () < 1)
    return g_strdup ("needs a GPU");
  return missing_elements (mode->needs);
}

gboolean
scale_list (void)
{
  guint i;

  g_print ("\nWith --streams (K streams, --consumers M of each):\n");
  for (i = 0; i < G_N_ELEMENTS (scale_modes); i++) {
    g_print ("%s: %s\n  producer: %s\n", scale_modes[i].name,
        scale_modes[i].what, scale_modes[i].producer);
    if (scale_modes[i].consumer)
      g_print ("  consumer: %s\n", scale_modes[i].consumer);
  }
  return TRUE;
}

static gchar *
socket_of (const gchar * dir, gint stream)
{
  gchar *name = g_strdup_printf ("s%d.sock", stream);
  gchar *path = g_build_filename (dir, name, NULL);

  g_free (name);
  return path;
}

/* one stream's branch of a side */
static gchar *
branch (const ScaleMode * mode, gboolean consumer, const gchar * dir,
    gint stream)
{
  GString *s = g_string_new (consumer ? mode->consumer : mode->producer);
  gchar *caps = g_strdup_printf ("video/x-raw,format=NV12,width=%d,"
      "height=%d,framerate=%d/1", opt.width, opt.height,
      opt.fps > 0 ? opt.fps : 30);
  gchar *cuda_caps = g_strdup_printf ("video/x-raw(memory:CUDAMemory),"
      "format=NV12,width=%d,height=%d,framerate=%d/1", opt.width, opt.height,
      opt.fps > 0 ? opt.fps : 30);
  gchar *num = g_strdup_printf ("%d", stream);
  gchar *m = g_strdup_printf ("%d", opt.consumers);
  gchar *cto = g_strdup_printf ("%d", opt.timeout_s * 1000);
  gchar *sock = socket_of (dir, stream);
  gchar *out;

  g_string_replace (s, "@SCAPS@", caps, 0);
  g_string_replace (s, "@CUDACAPS@", cuda_caps, 0);
  g_string_replace (s, "@N@", num, 0);
  g_string_replace (s, "@M@", m, 0);
  g_string_replace (s, "@CTO@", cto, 0);
  g_string_replace (s, "@LIVE@", opt.fps > 0 ? "true" : "false", 0);
  g_free (opt.socket);
  opt.socket = sock;
  out = expand (s->str, opt.width, opt.height);
  g_string_free (s, TRUE);
  g_free (caps);
  g_free (cuda_caps);
  g_free (num);
  g_free (m);
  g_free (cto);
  return out;
}

/* ------------------------------------------------------------------------ */
/* one side: a process with opt.count streams from opt.first */

/* frame numbers kept: a live source that falls behind skips numbers, and
 * imagefreeze's num-buffers counts the frames it pushed */
#define N_KEYS (2 * opt.frames)

typedef struct _ScaleSide ScaleSide;

typedef struct
{
  ScaleSide *side;
  gint stream;
  gint n;                       /* frames seen, atomic */
  gint bad;
  gboolean ended;               /* its last frame seen */
  gint64 *t;                    /* per frame number, 0: not seen */
  gboolean gated;
  GstClockTime phase;           /* --phase spread: its frames this late */
} Branch;

struct _ScaleSide
{
  GstElement *pipeline;
  FrameKey key;
  gboolean consumer;
  Branch *b;
  gint n_b;
  gint total;                   /* atomic: frames of every branch */
  gint warm_total;              /* total at which the CPU window opens */
  gint ended;                   /* atomic: branches past their last frame */
  gint64 cpu_a, cpu_b;
  gint frames_a, frames_b;
  gint threads;                 /* when the warm-up ended, all streaming */
  gint fds;
  GMutex lock;
};

static gint
fds_of_self (void)
{
  GDir *dir = g_dir_open ("/proc/self/fd", 0, NULL);
  gint n = 0;

  if (!dir)
    return -1;
  while (g_dir_read_name (dir))
    n++;
  g_dir_close (dir);
  /* less the one this count has open */
  return n - 1;
}

static gint
threads_of_self (void)
{
  gchar *status = NULL, *at;
  gint n = -1;

  if (g_file_get_contents ("/proc/self/status", &status, NULL, NULL)
      && (at = strstr (status, "\nThreads:")))
    n = atoi (at + strlen ("\nThreads:"));
  g_free (status);
  return n;
}

/* what the parent reads (read_child ()), into report (its --verbose
 * stats lines kept), and written to --stamps */
static void
write_report (ScaleSide * s, GString * report, const gchar * errmsg,
    gint threads)
{
  gchar **lines = g_strsplit (report->str, "\n", -1), **l;
  GString *out = g_string_new (NULL);
  gint i, k, cpu_frames;
  gint64 cpu;

  for (l = lines; *l; l++)
    if (g_str_has_prefix (*l, "stats "))
      g_string_append_printf (out, "%s\n", *l);
  g_strfreev (lines);
  g_mutex_lock (&s->lock);
  cpu = s->cpu_b ? s->cpu_b - s->cpu_a : cpu_ns () - s->cpu_a;
  cpu_frames = (s->cpu_b ? s->frames_b : g_atomic_int_get (&s->total))
      - s->frames_a;
  g_mutex_unlock (&s->lock);
  g_string_append_printf (out, "threads %d\nfds %d\n", threads >= 0 ?
      threads : s->threads, s->fds ? s->fds : fds_of_self ());
  if (s->cpu_a && cpu_frames > 0)
    g_string_append_printf (out, "cpu %" G_GINT64_FORMAT " %d\n", cpu,
        cpu_frames);
  for (i = 0; s->b && i < s->n_b; i++) {
    g_string_append_printf (out, "stream %d %d %d\n", s->b[i].stream,
        s->b[i].n, s->b[i].bad);
    for (k = 0; s->b[i].t && k < N_KEYS; k++)
      if (s->b[i].t[k])
        g_string_append_printf (out, "t %d %d %" G_GINT64_FORMAT "\n",
            s->b[i].stream, k, s->b[i].t[k]);
  }
  if (errmsg) {
    gchar *e = g_strdup (errmsg);

    g_strdelimit (e, "\n", ' ');
    g_string_append_printf (out, "error %s\n", e);
    g_free (e);
  }
  g_string_assign (report, out->str);
  g_string_free (out, TRUE);
  g_file_set_contents (opt.stamps, report->str, report->len, NULL);
}

static GstPadProbeReturn
scale_gate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  gint64 until = g_get_monotonic_time () + (gint64) opt.timeout_s *
      G_USEC_PER_SEC;

  while (!g_file_test (opt.go, G_FILE_TEST_EXISTS)
      && g_get_monotonic_time () < until)
    g_usleep (1000);
  return GST_PAD_PROBE_REMOVE;
}

/* --phase spread: at its first frame once the pipeline plays (it gives
 * every element its base time again as it gets there), the live source
 * upstream of pad moves its clock waits, so its later frames come data's
 * nanoseconds later than the other streams' (imagefreeze reads its base
 * time at each wait; the frames' timestamps stay as they were) */
static GstPadProbeReturn
scale_phase_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Branch *b = data;
  GstElement *pipeline = b->side->pipeline;
  GstClockTime shift = b->phase;
  GstPad *at;

  if (GST_STATE (pipeline) != GST_STATE_PLAYING
      || GST_STATE_PENDING (pipeline) != GST_STATE_VOID_PENDING)
    return GST_PAD_PROBE_OK;
  at = gst_object_ref (pad);

  while (at) {
    GstPad *peer = gst_pad_get_peer (at);
    GstElement *up = peer ? gst_pad_get_parent_element (peer) : NULL;
    GstElementFactory *f = up ? gst_element_get_factory (up) : NULL;

    gst_object_unref (at);
    gst_clear_object (&peer);
    at = NULL;
    if (!up)
      break;
    if (f && g_str_equal (GST_OBJECT_NAME (f), "imagefreeze"))
      gst_element_set_base_time (up, gst_element_get_base_time (up) + shift);
    else
      at = gst_element_get_static_pad (up, "sink");
    gst_object_unref (up);
  }
  return GST_PAD_PROBE_REMOVE;
}

static GstPadProbeReturn
scale_stamp_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Branch *b = data;
  ScaleSide *s = b->side;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 t = now_ns ();
  guint64 k = b->n;
  gint total;

  if (s->key == KEY_OFFSET && GST_BUFFER_OFFSET_IS_VALID (buf))
    k = GST_BUFFER_OFFSET (buf);
  if (k < (guint64) N_KEYS && b->t[k] == 0)
    b->t[k] = t;
  else
    b->bad++;
  g_atomic_int_inc (&b->n);
  total = g_atomic_int_add (&s->total, 1) + 1;
  if (total == s->warm_total) {
    g_mutex_lock (&s->lock);
    s->cpu_a = cpu_ns ();
    s->frames_a = total;
    s->threads = threads_of_self ();
    s->fds = fds_of_self ();
    g_mutex_unlock (&s->lock);
  }
  /* the end: a frame numbered frames - 1 is not the last one where the
   * source skipped frames (their numbers go on past it), so where numbers
   * travel a consumer ends at EOS, and where they do not (shmsrc, no EOS
   * either) at its frames-th frame */
  if (!b->ended && (s->key == KEY_ORDER ? b->n == opt.frames :
          !s->consumer && k == (guint64) opt.frames - 1)) {
    b->ended = TRUE;
    if (g_atomic_int_add (&s->ended, 1) + 1 == s->n_b) {
      g_mutex_lock (&s->lock);
      s->cpu_b = cpu_ns ();
      s->frames_b = g_atomic_int_get (&s->total);
      g_mutex_unlock (&s->lock);
      /* a consumer ends itself (shmsrc sends no EOS); a producer ends at
       * EOS, once its sinks sent it on, and writes its report now: shmsink
       * can abort when its clients leave first ("had_client") */
      if (s->consumer) {
        gst_element_post_message (s->pipeline,
            gst_message_new_application (GST_OBJECT (s->pipeline),
                gst_structure_new_empty ("bench-done")));
      } else {
        GString *report = g_string_new (NULL);

        write_report (s, report, NULL, -1);
        g_string_free (report, TRUE);
      }
    }
  }
  return GST_PAD_PROBE_OK;
}

gint
scale_run_side (const gchar * role)
{
  const ScaleMode *mode = opt.mode ? scale_find (opt.mode) : NULL;
  gboolean consumer = g_str_equal (role, "scale-consumer");
  GString *desc = g_string_new (NULL), *report = g_string_new (NULL);
  gchar *dir = NULL, *errmsg = NULL;
  GError *error = NULL;
  ScaleSide s = { 0, };
  GstBus *bus = NULL;
  gint64 last_progress;
  gint last_total = -1, i, rc = 0, threads = -1;

  if (!mode || !opt.stamps || !opt.socket || opt.count < 1
      || (consumer && !mode->consumer)) {
    g_printerr ("bench %s: no such mode, or no --stamps, --socket, "
        "--count\n", role);
    return 64;
  }
  g_mutex_init (&s.lock);
  dir = g_strdup (opt.socket);
  for (i = 0; i < opt.count; i++) {
    gchar *b = branch (mode, consumer, dir, opt.first + i);

    g_string_append_printf (desc, "%s%s", i ? "  " : "", b);
    g_free (b);
  }
  s.pipeline = gst_parse_launch (desc->str, &error);
  if (!s.pipeline || error) {
    errmsg = g_strdup_printf ("pipeline: %s", error ? error->message : "?");
    g_clear_error (&error);
    rc = 2;
    goto done;
  }
  s.key = mode->key;
  s.consumer = consumer;
  s.n_b = opt.count;
  s.b = g_new0 (Branch, opt.count);
  /* the CPU window opens once every stream is past the warm-up */
  s.warm_total = opt.count * MIN (opt.frames / 2,
      MAX (opt.fps, 30) * opt.warmup_s);
  s.warm_total = MAX (s.warm_total, 1);
  for (i = 0; i < opt.count; i++) {
    gchar *name = g_strdup_printf ("%s%d", consumer ? "out" : "in",
        opt.first + i);
    GstElement *el = gst_bin_get_by_name (GST_BIN (s.pipeline), name);
    GstPad *pad = el ? gst_element_get_static_pad (el,
        consumer ? "src" : "sink") : NULL;

    g_free (name);
    s.b[i].side = &s;
    s.b[i].stream = opt.first + i;
    s.b[i].t = g_new0 (gint64, N_KEYS);
    if (!pad) {
      gst_clear_object (&el);
      errmsg = g_strdup ("no element to stamp");
      rc = 2;
      goto done;
    }
    if (!consumer && opt.go)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, scale_gate_probe,
          NULL, NULL);
    if (!consumer && opt.spread > 0 && opt.fps > 0) {
      s.b[i].phase = gst_util_uint64_scale ((opt.first + i) % opt.spread,
          GST_SECOND, (guint64) opt.fps * opt.spread);
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, scale_phase_probe,
          &s.b[i], NULL);
    }
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, scale_stamp_probe,
        &s.b[i], NULL);
    gst_object_unref (pad);
    gst_object_unref (el);
  }

  bus = gst_element_get_bus (s.pipeline);
  gst_element_set_state (s.pipeline, GST_STATE_PLAYING);
  if (consumer && opt.ready) {
    /* started (a src connects in start ()), and time to be registered */
    g_usleep (500 * 1000);
    g_file_set_contents (opt.ready, "ready\n", -1, NULL);
  }
  last_progress = g_get_monotonic_time ();
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop (bus, 200 * GST_MSECOND);
    gboolean stop = FALSE;

    if (!msg) {
      gint total = g_atomic_int_get (&s.total);

      if (total != last_total) {
        last_total = total;
        last_progress = g_get_monotonic_time ();
      } else if (g_get_monotonic_time () - last_progress >
          (gint64) opt.timeout_s * G_USEC_PER_SEC) {
        /* a stream that lost its last frames ends here; one that never
         * started is an error */
        if (total == 0)
          errmsg = g_strdup ("no frame at all");
        break;
      }
      continue;
    }
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_APPLICATION:
      case GST_MESSAGE_EOS:
        stop = TRUE;
        break;
      case GST_MESSAGE_ERROR:
        /* a consumer whose streams ended does not mind producers leaving */
        if (!(consumer && g_atomic_int_get (&s.ended) == s.n_b)) {
          gst_message_parse_error (msg, &error, NULL);
          errmsg = g_strdup_printf ("%s: %s", GST_OBJECT_NAME (msg->src),
              error->message);
          g_clear_error (&error);
          rc = 2;
        }
        stop = TRUE;
        break;
      default:
        break;
    }
    gst_message_unref (msg);
    if (stop)
      break;
  }
  g_mutex_lock (&s.lock);
  /* ended without every last frame: the window closes now */
  if (!s.cpu_b) {
    s.cpu_b = cpu_ns ();
    s.frames_b = g_atomic_int_get (&s.total);
  }
  g_mutex_unlock (&s.lock);
  threads = s.threads ? s.threads : threads_of_self ();
  /* --verbose: the elements' own figures */
  for (i = 0; opt.verbose && i < s.n_b; i++) {
    gchar *name = g_strdup_printf ("%s%d", consumer ? "out" : "in",
        s.b[i].stream);
    GstElement *el = gst_bin_get_by_name (GST_BIN (s.pipeline), name);
    GstStructure *stats = NULL;

    if (el && g_object_class_find_property (G_OBJECT_GET_CLASS (el), "stats"))
      g_object_get (el, "stats", &stats, NULL);
    if (stats) {
      gchar *str = gst_structure_to_string (stats);

      g_string_append_printf (report, "stats %d %s\n", s.b[i].stream, str);
      g_free (str);
      gst_structure_free (stats);
    }
    gst_clear_object (&el);
    g_free (name);
  }

done:
  write_report (&s, report, errmsg, threads);
  /* before the teardown: shmsink can abort in it ("had_client") */
  if (!g_file_set_contents (opt.stamps, report->str, report->len, &error)) {
    g_printerr ("bench %s: %s\n", role, error->message);
    g_clear_error (&error);
    rc = rc ? rc : 2;
  }
  /* a consumer leaves once every producer is done (--end exists):
   * shmsink aborts on buffers of clients that left first ("had_client") */
  if (consumer && opt.end) {
    gint64 until = g_get_monotonic_time () + (gint64) opt.timeout_s *
        G_USEC_PER_SEC;

    while (!g_file_test (opt.end, G_FILE_TEST_EXISTS)
        && g_get_monotonic_time () < until)
      g_usleep (10000);
  }
  if (s.pipeline)
    gst_element_set_state (s.pipeline, GST_STATE_NULL);
  for (i = 0; s.b && i < s.n_b; i++)
    g_free (s.b[i].t);
  g_free (s.b);
  g_string_free (report, TRUE);
  g_string_free (desc, TRUE);
  g_free (errmsg);
  g_free (dir);
  gst_clear_object (&bus);
  gst_clear_object (&s.pipeline);
  g_mutex_clear (&s.lock);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* the parent */

/* --verbose: when each stream's frames reach its producer's transport,
 * against stream 0's: per stream, the median over the frames after the
 * warm-up of the difference modulo a frame period; printed as the
 * shortest window of the period that holds them all (aligned: about 0;
 * --phase spread: (K - 1) / K of the period) */
static void
print_phases (GHashTable * sent, gint k, gint warm)
{
  gint64 period = GST_SECOND / opt.fps;
  gint64 *p0 = g_hash_table_lookup (sent, GINT_TO_POINTER (0));
  GArray *at = g_array_new (FALSE, FALSE, sizeof (gint64));
  gint64 zero = 0, gap = 0;
  gint j, f;

  g_array_append_val (at, zero);
  for (j = 1; p0 && j < k; j++) {
    gint64 *p = g_hash_table_lookup (sent, GINT_TO_POINTER (j));
    GArray *d = g_array_new (FALSE, FALSE, sizeof (gint64));

    for (f = warm; p && f < N_KEYS; f++) {
      if (p[f] && p0[f]) {
        gint64 x = ((p[f] - p0[f]) % period + period) % period;

        g_array_append_val (d, x);
      }
    }
    if (d->len) {
      g_array_sort (d, cmp_gint64);
      g_array_append_val (at, g_array_index (d, gint64, d->len / 2));
    }
    g_array_unref (d);
  }
  g_array_sort (at, cmp_gint64);
  /* the window is the period less the widest gap between neighbours */
  for (j = 0; j < (gint) at->len; j++) {
    gint64 next = j + 1 < (gint) at->len ? g_array_index (at, gint64, j + 1)
        : g_array_index (at, gint64, 0) + period;

    gap = MAX (gap, next - g_array_index (at, gint64, j));
  }
  if (at->len > 1)
    g_print ("  phases: the frames of %u streams reach their producer's "
        "transport within %.1f ms of each frame period of %.1f ms "
        "(medians against stream 0's)\n", at->len, (period - gap) / 1e6,
        period / 1e6);
  g_array_unref (at);
}



typedef struct
{
  GSubprocess *p;
  gchar *stamps;
  gchar *ready;
  gboolean consumer;
  gboolean stopped;             /* still running at the deadline */
  gboolean failed;              /* failed on its own while the row ran */
  gboolean read;                /* its report read (child_failed ()) */
  gint first, count, index;
  gdouble mem_mib;              /* the most device memory seen, MiB */
  gboolean killed;              /* stopped by the bench (a signal of ours) */
} Child;

typedef struct
{
  const ScaleMode *mode;
  gboolean shared;
  gint k, m, width, height;
  gchar *failed;
  /* consumers: frames delivered of those sent, and the most one consumer
   * of one stream lost */
  gint64 delivered, expected;
  gint lost_worst;
  gdouble p50_us, p99_us;
  gdouble cpu_producer_us, cpu_consumer_us;
  gdouble fps;                  /* all streams together, consumer 0 of each */
  gint threads_producer, threads_consumer;
  gint fds_producer, fds_consumer;      /* the most a process had */
  gdouble mem_producer, mem_consumer;   /* MiB a process, mean; -1: none */
  gboolean mps;                 /* run under the MPS daemon of --mps */
} ScaleRow;

/* the mode's name in a table, " +MPS" after it for a row under MPS */
static gchar *
scale_label (const ScaleRow * r)
{
  return g_strdup_printf ("%s%s", r->mode->name, r->mps ? " +MPS" : "");
}

/* the curve of --plot a row is drawn on: mode, topology, size, MPS */
static gchar *
scale_series (const ScaleRow * r)
{
  return g_strdup_printf ("%s %s %dx%d%s", r->mode->name,
      r->mode->consumer ? (r->shared ? "shared" : "per-process") : "",
      r->width, r->height, r->mps ? " +MPS" : "");
}

static GSubprocess *
scale_spawn (const gchar * self, const ScaleRow * row, const gchar * dir,
    Child * c, const gchar * go, const gchar * end)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  GSubprocessLauncher *launcher;
  GSubprocess *p;

  g_ptr_array_add (argv, g_strdup (self));
  g_ptr_array_add (argv, g_strdup (c->consumer ? "scale-consumer" :
          "scale-producer"));
  g_ptr_array_add (argv, g_strdup_printf ("--mode=%s", row->mode->name));
  g_ptr_array_add (argv, g_strdup_printf ("--socket=%s", dir));
  g_ptr_array_add (argv, g_strdup_printf ("--stamps=%s", c->stamps));
  g_ptr_array_add (argv, g_strdup_printf ("--frames=%d", opt.frames));
  g_ptr_array_add (argv, g_strdup_printf ("--ring=%d", opt.ring));
  g_ptr_array_add (argv, g_strdup_printf ("--timeout=%d", opt.timeout_s));
  g_ptr_array_add (argv, g_strdup_printf ("--width=%d", row->width));
  g_ptr_array_add (argv, g_strdup_printf ("--height=%d", row->height));
  g_ptr_array_add (argv, g_strdup_printf ("--fps=%d", opt.fps));
  g_ptr_array_add (argv, g_strdup_printf ("--warmup=%d", opt.warmup_s));
  if (opt.phase && g_str_equal (opt.phase, "spread"))
    g_ptr_array_add (argv, g_strdup_printf ("--spread=%d", row->k));
  g_ptr_array_add (argv, g_strdup_printf ("--consumers=%d", row->m));
  g_ptr_array_add (argv, g_strdup_printf ("--first=%d", c->first));
  g_ptr_array_add (argv, g_strdup_printf ("--count=%d", c->count));
  if (c->ready)
    g_ptr_array_add (argv, g_strdup_printf ("--ready=%s", c->ready));
  if (c->consumer && end)
    g_ptr_array_add (argv, g_strdup_printf ("--end=%s", end));
  if (go)
    g_ptr_array_add (argv, g_strdup_printf ("--go=%s", go));
  if (opt.verbose)
    g_ptr_array_add (argv, g_strdup ("--verbose"));
  g_ptr_array_add (argv, NULL);
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  /* the daemon's folders, to the children of MPS rows only */
  if (row->mps)
    mps_set_env (launcher);
  p = g_subprocess_launcher_spawnv (launcher,
      (const gchar * const *) argv->pdata, NULL);
  g_object_unref (launcher);
  g_ptr_array_unref (argv);
  return p;
}

/* what one child wrote */
typedef struct
{
  gint threads, fds;
  gint64 cpu_ns;
  gint cpu_frames;
  gchar *error;
  /* stream -> gint64[opt.frames] */
  GHashTable *t;
} ChildResult;

static void
read_child (const gchar * path, ChildResult * r)
{
  gchar *text = NULL, **lines, **l;

  r->threads = r->fds = -1;
  r->t = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  if (!g_file_get_contents (path, &text, NULL, NULL)) {
    r->error = g_strdup ("wrote no report");
    return;
  }
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l; l++) {
    gint a, b;
    gint64 v;

    if (sscanf (*l, "t %d %d %" G_GINT64_FORMAT, &a, &b, &v) == 3) {
      gint64 *t = g_hash_table_lookup (r->t, GINT_TO_POINTER (a));

      if (!t) {
        t = g_new0 (gint64, N_KEYS);
        g_hash_table_insert (r->t, GINT_TO_POINTER (a), t);
      }
      if (b >= 0 && b < N_KEYS)
        t[b] = v;
    } else if (sscanf (*l, "threads %d", &a) == 1) {
      r->threads = a;
    } else if (sscanf (*l, "fds %d", &a) == 1) {
      r->fds = a;
    } else if (sscanf (*l, "cpu %" G_GINT64_FORMAT " %d", &v, &a) == 2) {
      r->cpu_ns = v;
      r->cpu_frames = a;
    } else if (g_str_has_prefix (*l, "stats ") && opt.verbose) {
      g_print ("  %s\n", *l);
    } else if (g_str_has_prefix (*l, "error ") && !r->error) {
      r->error = g_strdup (*l + 6);
    }
  }
  g_strfreev (lines);
  g_free (text);
}

static void
child_result_clear (ChildResult * r)
{
  g_clear_pointer (&r->t, g_hash_table_unref);
  g_clear_pointer (&r->error, g_free);
}

/* how often the children's device memory is read while a row runs */
#define SAMPLE_EVERY_US (2 * G_USEC_PER_SEC)

/* device memory of the children: each one's largest figure so far.  A
 * process makes its context some time after it starts (seconds when a
 * hundred processes start at once), so one sample would catch some of
 * them before or while they make it */
static void
scale_sample_memory (Child * children, gint n)
{
  const gchar *argv[] = { "nvidia-smi",
    "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits",
    NULL
  };
  gchar *out = NULL, **lines, **l;
  gint status = 0, i;

  if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
      || !g_spawn_check_wait_status (status, NULL)) {
    g_free (out);
    return;
  }
  lines = g_strsplit (out, "\n", -1);
  for (l = lines; *l; l++) {
    gchar **f = g_strsplit (*l, ",", 2);

    if (g_strv_length (f) == 2) {
      g_strstrip (f[0]);
      for (i = 0; i < n; i++) {
        const gchar *pid = children[i].p ?
            g_subprocess_get_identifier (children[i].p) : NULL;
        gchar *end = NULL;
        gdouble mib;

        if (!pid || !g_str_equal (pid, f[0]))
          continue;
        /* "[N/A]" where the driver does not know (yet): not a zero */
        g_strstrip (f[1]);
        mib = g_ascii_strtod (f[1], &end);
        if (end == f[1] || *end)
          continue;
        children[i].mem_mib = MAX (children[i].mem_mib, mib);
      }
    }
    g_strfreev (f);
  }
  g_strfreev (lines);
  g_free (out);
}

/* MiB a process, the mean of the producers' and of the consumers' largest
 * figures (those seen at all) */
static void
scale_memory_means (ScaleRow * row, const Child * children, gint n)
{
  gdouble sum[2] = { 0, 0 };
  gint count[2] = { 0, 0 }, i;

  for (i = 0; i < n; i++) {
    if (children[i].mem_mib <= 0)
      continue;
    sum[children[i].consumer] += children[i].mem_mib;
    count[children[i].consumer]++;
  }
  row->mem_producer = count[0] ? sum[0] / count[0] : 0;
  row->mem_consumer = count[1] ? sum[1] / count[1] : 0;
}

/* a process that failed on its own while the row runs, as the row's
 * verdict reads it (read_child ()): one that ended without a report, or
 * whose report (written before it waits for the end of the row) has an
 * error.  The row has failed then, and the others would only run into
 * the deadline (a producer short of a consumer waits for it).  The first
 * such process, -1 for none */
static gint
child_failed (Child * children, gint n)
{
  gint i;

  for (i = 0; i < n; i++) {
    Child *ch = &children[i];
    gboolean ended;
    gchar *text = NULL;

    if (!ch->p || ch->read)
      continue;
    /* before the report: one written as it exits is read below */
    ended = !running (ch->p);
    if (g_file_get_contents (ch->stamps, &text, NULL, NULL)) {
      ch->read = TRUE;
      ch->failed = g_str_has_prefix (text, "error ")
          || strstr (text, "\nerror ") != NULL;
      g_free (text);
    } else if (ended) {
      ch->read = ch->failed = TRUE;
    }
    if (ch->failed)
      return i;
  }
  return -1;
}

/* " (ended by signal N, its name)" for a child that a signal ended, but
 * not one of ours (the bench stops the processes that failed, and those
 * still running at the deadline); NULL otherwise */
static gchar *
child_signal (Child * ch)
{
  gint sig;

  if (!ch->p || ch->killed || !g_subprocess_get_if_signaled (ch->p))
    return NULL;
  sig = g_subprocess_get_term_sig (ch->p);
  return g_strdup_printf (" (ended by signal %d, %s%s)", sig, g_strsignal (sig),
      sig == SIGABRT ? ": an abort, an assertion in GStreamer's element" : "");
}

static gboolean
any_running (Child * children, gint n)
{
  gint i;

  for (i = 0; i < n; i++)
    if (running (children[i].p))
      return TRUE;
  return FALSE;
}

static gboolean
all_running (Child * children, gint n)
{
  gint i;

  for (i = 0; i < n; i++)
    if (!running (children[i].p))
      return FALSE;
  return TRUE;
}

static gboolean
all_ready (Child * children, gint n)
{
  gint i;

  for (i = 0; i < n; i++)
    if (children[i].ready && !g_file_test (children[i].ready,
            G_FILE_TEST_EXISTS) && running (children[i].p))
      return FALSE;
  return TRUE;
}

static void
scale_run_row (const gchar * self, ScaleRow * row)
{
  const ScaleMode *mode = row->mode;
  gboolean two = mode->consumer != NULL;
  gint n_prod = row->shared ? 1 : row->k;
  gint n_cons = two ? (row->shared ? row->m : row->k * row->m) : 0;
  gint n = n_prod + n_cons, i, j, warm;
  gint64 deadline, first = 0, end = 0, cpu[2] = { 0, 0 };
  gint cpu_frames[2] = { 0, 0 }, n_lat = 0, delivered0 = 0;
  Child *c = g_new0 (Child, n);
  ChildResult *res = g_new0 (ChildResult, n);
  GHashTable *sent = g_hash_table_new (NULL, NULL);
  gchar *dir, *go = NULL, *end_file = NULL;
  GError *error = NULL;
  GArray *lat = g_array_new (FALSE, FALSE, sizeof (gint64));
  gboolean ended = FALSE, gave_up = FALSE;
  guint polls = 0;
  gchar *first_error = NULL;
  GString *who = NULL;

  row->p50_us = row->p99_us = row->cpu_producer_us = row->cpu_consumer_us =
      row->fps = -1;
  row->mem_producer = row->mem_consumer = -1;
  dir = g_dir_make_tmp ("gpushare-scale-XXXXXX", &error);
  if (!dir) {
    row->failed = g_strdup (error->message);
    g_clear_error (&error);
    goto out;
  }
  for (i = 0; i < n; i++) {
    Child *ch = &c[i];

    ch->consumer = i >= n_prod;
    if (!ch->consumer) {
      ch->first = row->shared ? 0 : i;
      ch->count = row->shared ? row->k : 1;
    } else if (row->shared) {
      ch->first = 0;
      ch->count = row->k;
      ch->index = i - n_prod;
    } else {
      ch->first = (i - n_prod) / row->m;
      ch->count = 1;
      ch->index = (i - n_prod) % row->m;
    }
    ch->stamps = g_strdup_printf ("%s/%s%d.txt", dir, ch->consumer ? "c" : "p",
        i);
    if (ch->consumer && !mode->sink_waits)
      ch->ready = g_strdup_printf ("%s/ready%d", dir, i);
  }
  if (two && !mode->sink_waits)
    go = g_build_filename (dir, "go", NULL);
  if (two)
    end_file = g_build_filename (dir, "end", NULL);

  /* a run lasts the frames at the rate, and the start of every process */
  deadline = g_get_monotonic_time () + (gint64) (opt.timeout_s +
      (opt.fps > 0 ? opt.frames / opt.fps : 0) + n / 4) * G_USEC_PER_SEC;
  if (mode->sink_waits) {
    for (i = n_prod; i < n; i++)
      c[i].p = scale_spawn (self, row, dir, &c[i], NULL, end_file);
    for (i = 0; i < n_prod; i++)
      c[i].p = scale_spawn (self, row, dir, &c[i], NULL, end_file);
  } else {
    for (i = 0; i < n_prod; i++)
      c[i].p = scale_spawn (self, row, dir, &c[i], go, end_file);
    /* shmsrc does not wait for its socket to appear */
    for (i = 0; i < n_prod && two; i++) {
      for (j = 0; j < c[i].count; j++) {
        gchar *sock = socket_of (dir, c[i].first + j);

        while (running (c[i].p) && !g_file_test (sock, G_FILE_TEST_EXISTS)
            && g_get_monotonic_time () < deadline && !interrupted)
          g_usleep (2000);
        g_free (sock);
      }
    }
    for (i = n_prod; i < n; i++)
      c[i].p = scale_spawn (self, row, dir, &c[i], NULL, end_file);
    while (two && !all_ready (c, n) && g_get_monotonic_time () < deadline
        && !interrupted && !gave_up) {
      g_usleep (5000);
      if (++polls % 100 == 0)
        gave_up = child_failed (c, n) >= 0;
    }
    if (go && !gave_up)
      g_file_set_contents (go, "go\n", -1, NULL);
  }
  {
    gint64 sample_at = g_get_monotonic_time () + SAMPLE_EVERY_US;

    while (any_running (c, n) && g_get_monotonic_time () < deadline
        && !interrupted && !gave_up) {
      if (two && !ended && !any_running (c, n_prod)) {
        g_file_set_contents (end_file, "end\n", -1, NULL);
        ended = TRUE;
      }
      /* once the producers are done, the consumers' ends are theirs */
      if (!ended && ++polls % 25 == 0)
        gave_up = child_failed (c, n) >= 0;
      /* only while every producer runs: one that has left leaves its
       * rings to the consumers that still map them, and nvidia-smi then
       * counts them to those consumers until they let go (a ring of 64
       * streams: some 1 GiB a consumer for the moment of the teardown) */
      if (mode->gpu && g_get_monotonic_time () > sample_at
          && all_running (c, n_prod)) {
        scale_sample_memory (c, n);
        sample_at = g_get_monotonic_time () + SAMPLE_EVERY_US;
      }
      g_usleep (20000);
    }
  }
  if (mode->gpu)
    scale_memory_means (row, c, n);
  if (any_running (c, n)) {
    /* which ones, and whether they were done with their frames (their
     * report is written before the teardown) */
    for (i = 0; i < n; i++) {
      if (!running (c[i].p))
        continue;
      c[i].killed = TRUE;
      if (c[i].failed) {
        g_subprocess_force_exit (c[i].p);
        continue;
      }
      if (!who)
        who = g_string_new (NULL);
      if (who->len < 200)
        g_string_append_printf (who, "%s%s %d%s", who->len ? ", " : "",
            c[i].consumer ? "consumer" : "producer", i,
            g_file_test (c[i].stamps, G_FILE_TEST_EXISTS) ?
            " (its frames done)" : "");
      c[i].stopped = TRUE;
      g_subprocess_force_exit (c[i].p);
    }
  }
  for (i = 0; i < n; i++) {
    if (c[i].p)
      g_subprocess_wait (c[i].p, NULL, NULL);
    read_child (c[i].stamps, &res[i]);
    if (!c[i].p && !first_error)
      first_error = g_strdup ("could not start a process");
    /* the first process that failed on its own, before the others were
     * stopped: the cause (GPU memory, fds, a limit) of a row that then
     * ran into the deadline waiting for it */
    if (res[i].error && !first_error && (!c[i].stopped || c[i].failed)) {
      gchar *how = child_signal (&c[i]);

      first_error = g_strdup_printf ("%s %d: %s%s", c[i].consumer ?
          "consumer" : "producer", i, res[i].error, how ? how : "");
      g_free (how);
    }
  }
  if (interrupted)
    row->failed = g_strdup_printf ("interrupted by signal %d",
        (gint) interrupted);
  else if (first_error && who && gave_up)
    row->failed = g_strdup_printf ("%s; the others stopped then: %s",
        first_error, who->str);
  else if (first_error && who)
    row->failed = g_strdup_printf ("%s; then the deadline, still running: "
        "%s", first_error, who->str);
  else if (who)
    row->failed = g_strdup_printf ("timeout, still running: %s", who->str);
  else
    row->failed = g_steal_pointer (&first_error);
  g_free (first_error);
  if (who)
    g_string_free (who, TRUE);

  /* the producers' stamps, stream -> times */
  for (i = 0; i < n_prod; i++) {
    GHashTableIter it;
    gpointer key, value;

    g_hash_table_iter_init (&it, res[i].t);
    while (g_hash_table_iter_next (&it, &key, &value))
      g_hash_table_insert (sent, key, value);
  }
  warm = MIN (opt.frames / 2, MAX (opt.fps, 30) * opt.warmup_s);
  if (opt.verbose && opt.fps > 0 && row->k > 1)
    print_phases (sent, row->k, warm);
  row->delivered = row->expected = 0;
  row->lost_worst = 0;
  row->threads_producer = row->threads_consumer = 0;
  row->fds_producer = row->fds_consumer = 0;
  for (i = 0; i < n; i++) {
    gint *thr = c[i].consumer ? &row->threads_consumer : &row->threads_producer;

    *thr = MAX (*thr, res[i].threads);
    if (c[i].consumer)
      row->fds_consumer = MAX (row->fds_consumer, res[i].fds);
    else
      row->fds_producer = MAX (row->fds_producer, res[i].fds);
    cpu[c[i].consumer] += res[i].cpu_ns;
    cpu_frames[c[i].consumer] += res[i].cpu_frames;
  }
  for (i = n_prod; i < n; i++) {
    for (j = c[i].first; j < c[i].first + c[i].count; j++) {
      gint64 *t = g_hash_table_lookup (res[i].t, GINT_TO_POINTER (j));
      gint64 *p = g_hash_table_lookup (sent, GINT_TO_POINTER (j));
      gint got = 0, n_sent = 0, f;

      /* what the producer sent (a live source that fell behind skips
       * frames before the transport sees them), and of that, what this
       * consumer got: by number, or by count where numbers do not travel */
      for (f = 0; p && f < N_KEYS; f++)
        n_sent += p[f] != 0;
      for (f = 0; t && f < N_KEYS; f++) {
        if (!t[f])
          continue;
        got += mode->key == KEY_ORDER || (p && p[f]);
        if (p && p[f] && f >= warm) {
          gint64 d = t[f] - p[f];

          g_array_append_val (lat, d);
        }
        if (c[i].index == 0) {
          first = first ? MIN (first, t[f]) : t[f];
          end = MAX (end, t[f]);
          delivered0++;
        }
      }
      got = MIN (got, n_sent);
      if (opt.verbose && got < n_sent) {
        GString *miss = g_string_new (NULL);

        for (f = 0; mode->key == KEY_OFFSET && f < N_KEYS
            && miss->len < 200; f++)
          if (p && p[f] && (!t || !t[f]))
            g_string_append_printf (miss, " %d", f);
        g_print ("  stream %d, consumer %d lost %d of %d:%s\n", j,
            c[i].index, n_sent - got, n_sent, miss->str);
        g_string_free (miss, TRUE);
      }
      row->delivered += got;
      row->expected += n_sent;
      row->lost_worst = MAX (row->lost_worst, n_sent - got);
    }
  }
  /* the floor: the producers' own frames */
  if (!two) {
    for (i = 0; i < n_prod; i++) {
      GHashTableIter it;
      gpointer key, value;

      g_hash_table_iter_init (&it, res[i].t);
      while (g_hash_table_iter_next (&it, &key, &value)) {
        gint64 *t = value;
        gint f;

        for (f = 0; f < N_KEYS; f++) {
          if (!t[f])
            continue;
          first = first ? MIN (first, t[f]) : t[f];
          end = MAX (end, t[f]);
          delivered0++;
        }
      }
    }
  }
  n_lat = lat->len;
  if (n_lat > 0) {
    g_array_sort (lat, cmp_gint64);
    row->p50_us = g_array_index (lat, gint64, percentile_index (n_lat,
            50)) / 1e3;
    row->p99_us = g_array_index (lat, gint64, percentile_index (n_lat,
            99)) / 1e3;
  }
  if (end > first && delivered0 > row->k)
    row->fps = (delivered0 - row->k) * 1e9 / (end - first);
  if (cpu_frames[0] > 0)
    row->cpu_producer_us = cpu[0] / 1e3 / cpu_frames[0];
  if (cpu_frames[1] > 0)
    row->cpu_consumer_us = cpu[1] / 1e3 / cpu_frames[1];

  for (i = 0; i < n; i++) {
    child_result_clear (&res[i]);
    g_unlink (c[i].stamps);
    if (c[i].ready)
      g_unlink (c[i].ready);
    g_free (c[i].stamps);
    g_free (c[i].ready);
    g_clear_object (&c[i].p);
  }
  if (go)
    g_unlink (go);
  if (end_file)
    g_unlink (end_file);
  for (i = 0; i < row->k; i++) {
    gchar *sock = socket_of (dir, i);

    g_unlink (sock);
    g_free (sock);
  }
  g_rmdir (dir);
out:
  g_array_unref (lat);
  g_hash_table_unref (sent);
  g_free (res);
  g_free (c);
  g_free (go);
  g_free (end_file);
  g_free (dir);
}

/* ------------------------------------------------------------------------ */
/* the table */

static gchar *
num (gdouble v)
{
  return v < 0 ? g_strdup ("-") : g_strdup_printf ("%.0f", v);
}

static void
print_scale_row (const ScaleRow * r)
{
  gchar *size = g_strdup_printf ("%dx%d", r->width, r->height);
  gchar *km = r->mode->consumer ? g_strdup_printf ("%dx%d", r->k, r->m) :
      g_strdup_printf ("%d", r->k);
  gchar *got = r->mode->consumer ? g_strdup_printf ("%" G_GINT64_FORMAT
      " / %" G_GINT64_FORMAT, r->delivered, r->expected) : g_strdup ("-");
  gchar *lost = r->mode->consumer ? g_strdup_printf ("%" G_GINT64_FORMAT
      " (%d)", r->expected - r->delivered, r->lost_worst) : g_strdup ("-");
  gchar *fps = num (r->fps), *p50 = num (r->p50_us);
  gchar *p99 = num (r->p99_us);
  gchar *cp = num (r->cpu_producer_us);
  gchar *cc = num (r->cpu_consumer_us);
  gchar *thr = r->mode->consumer ? g_strdup_printf ("%d / %d",
      r->threads_producer, r->threads_consumer) :
      g_strdup_printf ("%d", r->threads_producer);
  gchar *fds = r->mode->consumer ? g_strdup_printf ("%d / %d",
      r->fds_producer, r->fds_consumer) :
      g_strdup_printf ("%d", r->fds_producer);
  gchar *mem = r->mem_producer < 0 ? g_strdup ("") :
      g_strdup_printf ("%.0f / %.0f", r->mem_producer, r->mem_consumer);
  const gchar *topo = r->shared ? "shared" : "per-process";
  gchar *label = scale_label (r);

  if (r->failed) {
    if (opt.markdown)
      g_print ("| %s | %s | %s | %s | failed: %s | | | | | | | | | |\n",
          label, topo, size, km, r->failed);
    else
      g_print ("%-20s %-11s %-10s %-6s failed: %s\n", label, topo, size, km,
          r->failed);
  } else if (opt.markdown) {
    g_print ("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
        "%s | %s |\n", label, topo, size, km, got, lost, fps, p50, p99, cp, cc,
        thr, fds, mem);
  } else {
    g_print ("%-20s %-11s %-10s %-6s %15s %10s %7s %7s %7s %8s %8s %9s "
        "%11s %s\n", label, topo, size, km, got, lost, fps, p50, p99, cp, cc,
        thr, fds, mem);
  }
  g_free (label);
  g_free (size);
  g_free (km);
  g_free (got);
  g_free (lost);
  g_free (fps);
  g_free (p50);
  g_free (p99);
  g_free (cp);
  g_free (cc);
  g_free (thr);
  g_free (fds);
  g_free (mem);
}

static void
print_scale_header (void)
{
  if (opt.markdown) {
    g_print ("| mode | topology | size | K x M | frames delivered | lost "
        "(worst consumer) | fps, all streams | latency p50 (us) | "
        "latency p99 (us) | producer CPU (us/frame) | consumer CPU "
        "(us/frame) | threads a process (producer / consumer) | file "
        "descriptors a process (producer / consumer) | GPU MiB a process "
        "(producer / consumer) |\n");
    g_print ("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "---:|\n");
  } else {
    g_print ("%-20s %-11s %-10s %-6s %15s %10s %7s %7s %7s %8s %8s %9s "
        "%11s %s\n", "mode", "topology", "size", "KxM", "delivered",
        "lost(max)", "fps", "p50 us", "p99 us", "prod us/f", "cons us/f",
        "threads", "fds", "GPU MiB");
  }
}

/* --plot: the rows against K with gnuplot, one panel a figure */
static gboolean
scale_plot (const ScaleRow * rows, gint n, const gchar * svg)
{
  gchar *dir = g_dir_make_tmp ("gpushare-plot-XXXXXX", NULL);
  GString *data = g_string_new (NULL), *script = g_string_new (NULL);
  GPtrArray *series = g_ptr_array_new_with_free_func (g_free);
  const gchar *panels[][2] = {
    {"fps, all streams", "7"}, {"latency p50 (us)", "8"},
    {"latency p99 (us)", "9"}, {"producer CPU (us/frame)", "10"},
    {"consumer CPU (us/frame)", "11"}, {"frames lost", "6"},
  };
  gchar *dat, *gp, *argv[3] = { (gchar *) "gnuplot", NULL, NULL };
  gint i, p, status = 0;
  gboolean ok;
  GError *error = NULL;

  if (!dir)
    return FALSE;
  /* one block a series (mode, topology, size, M), K ascending */
  for (i = 0; i < n; i++) {
    const ScaleRow *r = &rows[i];
    gchar *name = scale_series (r);
    gint s;

    for (s = 0; s < (gint) series->len; s++)
      if (g_str_equal (g_ptr_array_index (series, s), name))
        break;
    if (s == (gint) series->len)
      g_ptr_array_add (series, name);
    else
      g_free (name);
  }
  for (p = 0; p < (gint) series->len; p++) {
    const gchar *name = g_ptr_array_index (series, p);

    g_string_append_printf (data, "# %s\n", name);
    for (i = 0; i < n; i++) {
      const ScaleRow *r = &rows[i];
      gchar *rn = scale_series (r);
      gchar b[6][G_ASCII_DTOSTR_BUF_SIZE];

      if (g_str_equal (rn, name) && !r->failed)
        g_string_append_printf (data, "%d %d %d %d %d %" G_GINT64_FORMAT
            " %s %s %s %s %s\n", r->k, r->m, r->width, r->height,
            r->threads_consumer, r->expected - r->delivered,
            g_ascii_dtostr (b[0], sizeof (b[0]), r->fps),
            g_ascii_dtostr (b[1], sizeof (b[1]), r->p50_us),
            g_ascii_dtostr (b[2], sizeof (b[2]), r->p99_us),
            g_ascii_dtostr (b[3], sizeof (b[3]), r->cpu_producer_us),
            g_ascii_dtostr (b[4], sizeof (b[4]), r->cpu_consumer_us));
      g_free (rn);
    }
    g_string_append (data, "\n\n");
  }
  dat = g_build_filename (dir, "rows.dat", NULL);
  gp = g_build_filename (dir, "rows.gp", NULL);
  g_string_append_printf (script, "set terminal svg size 1200,1000 dynamic "
      "font 'sans,11'\nset output '%s'\nset datafile missing '-1'\n"
      "set key top left font ',9'\nset grid\nset xlabel 'streams (K)'\n"
      "set logscale x 2\nset offsets graph 0.04, graph 0.04, graph 0.05, "
      "0\nset pointsize 1.5\nset multiplot layout 3,2 title 'gpushare-bench "
      "--streams, %d consumers a stream, %d fps'\n", svg, opt.consumers,
      opt.fps);
  for (p = 0; p < (gint) G_N_ELEMENTS (panels); p++) {
    /* latencies on a log scale: a mode milliseconds behind would flatten
     * the others' microseconds */
    g_string_append_printf (script, "set title '%s'\n%s\nplot ",
        panels[p][0], p == 1 || p == 2 ? "set logscale y" : "unset logscale y");
    for (i = 0; i < (gint) series->len; i++)
      g_string_append_printf (script, "%s'%s' index %d using 1:%s with "
          "linespoints title '%s'", i ? ", " : "", dat, i, panels[p][1],
          (const gchar *) g_ptr_array_index (series, i));
    g_string_append (script, "\n");
  }
  g_string_append (script, "unset multiplot\n");
  ok = g_file_set_contents (dat, data->str, -1, &error)
      && g_file_set_contents (gp, script->str, -1, &error);
  argv[1] = gp;
  /* its warnings on panels without points (the floor has no latency) are
   * not ours to print */
  ok = ok && g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH |
      G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, &error)
      && g_spawn_check_wait_status (status, &error);
  if (!ok)
    g_printerr ("--plot: %s (gnuplot draws the picture: apt-get install "
        "gnuplot-nox)\n", error ? error->message : "gnuplot failed");
  g_clear_error (&error);
  g_unlink (dat);
  g_unlink (gp);
  g_rmdir (dir);
  g_free (dat);
  g_free (gp);
  g_free (dir);
  g_ptr_array_unref (series);
  g_string_free (data, TRUE);
  g_string_free (script, TRUE);
  return ok;
}

/* a number as print_scale_row () wrote it; "-" (none) is -1 */
static gdouble
scale_cell_num (const gchar * cell)
{
  return g_str_equal (cell, "-") ? -1 : g_ascii_strtod (cell, NULL);
}

/* one row of a --markdown table back into r; FALSE for any other line and
 * for rows that failed (they have nothing to draw) */
static gboolean
scale_parse_row (const gchar * line, ScaleRow * r)
{
  gchar **cells;
  gboolean ok = FALSE;
  gint64 delivered, expected;

  if (!g_str_has_prefix (line, "| "))
    return FALSE;
  cells = g_strsplit (line + 1, "|", -1);
  for (gint i = 0; cells[i]; i++)
    g_strstrip (cells[i]);
  memset (r, 0, sizeof (*r));
  /* a row under MPS: its mode's name, then " +MPS" */
  if (cells[0] && g_str_has_suffix (cells[0], " +MPS")) {
    cells[0][strlen (cells[0]) - strlen (" +MPS")] = '\0';
    r->mps = TRUE;
  }
  if (g_strv_length (cells) >= 14 && (r->mode = scale_find (cells[0]))
      && !g_str_has_prefix (cells[4], "failed")
      && sscanf (cells[2], "%dx%d", &r->width, &r->height) == 2) {
    r->shared = g_str_equal (cells[1], "shared");
    if (r->mode->consumer) {
      ok = sscanf (cells[3], "%dx%d", &r->k, &r->m) == 2
          && sscanf (cells[4], "%" G_GINT64_FORMAT " / %" G_GINT64_FORMAT,
          &delivered, &expected) == 2;
      r->delivered = delivered;
      r->expected = expected;
    } else {
      ok = sscanf (cells[3], "%d", &r->k) == 1;
    }
    r->fps = scale_cell_num (cells[6]);
    r->p50_us = scale_cell_num (cells[7]);
    r->p99_us = scale_cell_num (cells[8]);
    r->cpu_producer_us = scale_cell_num (cells[9]);
    r->cpu_consumer_us = scale_cell_num (cells[10]);
  }
  g_strfreev (cells);
  return ok;
}

/* --plot-from: the picture of runs made where gnuplot is not (a GPU
 * machine), from the tables they printed */
gint
scale_replot (void)
{
  gchar **files = g_strsplit (opt.plot_from, ",", -1);
  GArray *rows = g_array_new (FALSE, TRUE, sizeof (ScaleRow));
  gint i, rc = 0;

  if (!opt.plot) {
    g_printerr ("--plot-from needs --plot FILE.svg\n");
    rc = 64;
  }
  for (i = 0; files[i] && !rc; i++) {
    gchar *text = NULL, **lines;
    GError *error = NULL;

    if (!g_file_get_contents (files[i], &text, NULL, &error)) {
      g_printerr ("--plot-from: %s\n", error->message);
      g_clear_error (&error);
      rc = 66;
      break;
    }
    lines = g_strsplit (text, "\n", -1);
    for (gint l = 0; lines[l]; l++) {
      ScaleRow r;

      if (scale_parse_row (lines[l], &r))
        g_array_append_val (rows, r);
    }
    g_strfreev (lines);
    g_free (text);
  }
  if (!rc && rows->len == 0) {
    g_printerr ("--plot-from: no rows of gpushare-bench --streams "
        "--markdown in %s\n", opt.plot_from);
    rc = 65;
  }
  if (!rc && !scale_plot ((ScaleRow *) rows->data, rows->len, opt.plot))
    rc = 1;
  if (!rc)
    g_print ("%u rows drawn into %s\n", rows->len, opt.plot);
  g_array_unref (rows);
  g_strfreev (files);
  return rc;
}

gint
scale_run_parent (const gchar * self)
{
  gchar **ks = g_strsplit (opt.streams, ",", -1);
  gchar **sizes = g_strsplit (opt.sizes ? opt.sizes : "1080p", ",", -1);
  gchar **names = g_strsplit (opt.modes ? opt.modes :
      "one-process,gpushare-sysmem,shm,one-process-cuda,gpushare-cuda,"
      "gpushare-cuda-copy,cudaipc", ",", -1);
  const gchar *topo = opt.topology ? opt.topology : "both";
  gboolean per = !g_str_equal (topo, "shared");
  gboolean shared = !g_str_equal (topo, "per-process");
  GArray *rows = g_array_new (FALSE, TRUE, sizeof (ScaleRow));
  struct sigaction sa, old_int, old_term, old_hup;
  gint i, j, s, t, failed = 0, rc = 0;

  if (!g_str_equal (topo, "both") && !g_str_equal (topo, "per-process")
      && !g_str_equal (topo, "shared")) {
    g_printerr ("--topology is per-process, shared or both\n");
    rc = 64;
    goto out;
  }
  if (opt.phase && !g_str_equal (opt.phase, "aligned")
      && !g_str_equal (opt.phase, "spread")) {
    g_printerr ("--phase is aligned or spread, not '%s'\n", opt.phase);
    rc = 64;
    goto out;
  }
  if (opt.consumers < 1 || opt.fps < 0 || opt.warmup_s < 0) {
    g_printerr ("--consumers must be at least 1, --fps and --warmup at "
        "least 0\n");
    rc = 64;
    goto out;
  }
  for (j = 0; names[j]; j++)
    if (!scale_find (names[j])) {
      g_printerr ("no mode '%s' with --streams (--list shows them)\n",
          names[j]);
      rc = 64;
      goto out;
    }
  for (i = 0; ks[i]; i++)
    if (atoi (ks[i]) < 1) {
      g_printerr ("--streams takes counts of at least 1: '%s'\n", ks[i]);
      rc = 64;
      goto out;
    }

  if (opt.mps)
    mps_prepare ();
  /* from here on, an MPS daemon of ours is stopped on every way out */
  memset (&sa, 0, sizeof (sa));
  sa.sa_handler = on_signal;
  sigaction (SIGINT, &sa, &old_int);
  sigaction (SIGTERM, &sa, &old_term);
  sigaction (SIGHUP, &sa, &old_hup);

  g_print ("gpushare-bench --streams %s --consumers %d --topology %s, %d "
      "frames a stream %s%d fps%s, warm-up %d s, %ld CPUs\n", opt.streams,
      opt.consumers, topo, opt.frames, opt.fps ? "at " : "as fast as "
      "possible (", opt.fps ? opt.fps : 0, opt.fps && opt.phase
      && g_str_equal (opt.phase, "spread") ? ", phases spread" : "",
      opt.warmup_s, sysconf (_SC_NPROCESSORS_ONLN));
  print_scale_header ();
  for (s = 0; sizes[s]; s++) {
    gint w, h;

    if (!parse_size (sizes[s], &w, &h)) {
      g_printerr ("bad size '%s'\n", sizes[s]);
      rc = 64;
      break;
    }
    for (j = 0; names[j] && !interrupted; j++) {
      const ScaleMode *mode = scale_find (names[j]);
      gchar *why = scale_missing (mode);
      /* --mps: each row of a GPU mode once more, under MPS */
      gint passes = opt.mps && mode->gpu ? 2 : 1, u;

      for (t = 0; t < 2 && !interrupted; t++) {
        /* the floor has no consumers: one topology is its two */
        if ((t == 0 && !per) || (t == 1 && !shared)
            || (t == 1 && !mode->consumer && per))
          continue;
        if (why) {
          g_print ("%-20s %-11s skipped: %s\n", mode->name, t == 1 ?
              "shared" : "per-process", why);
          continue;
        }
        for (i = 0; ks[i] && !interrupted; i++) {
          for (u = 0; u < passes && !interrupted; u++) {
            ScaleRow r = { 0, };
            gchar *no_mps = NULL;

            r.mode = mode;
            r.shared = t == 1;
            r.k = atoi (ks[i]);
            r.m = mode->consumer ? opt.consumers : 0;
            r.width = w;
            r.height = h;
            r.mps = u == 1;
            if (r.mps && mps_why_not ()) {
              if (i == 0)
                g_print ("%-20s %-11s skipped: MPS: %s\n", mode->name,
                    r.shared ? "shared" : "per-process", mps_why_not ());
              continue;
            }
            /* a daemon a row: no row's clients outlive it */
            if (r.mps && !mps_start (&no_mps)) {
              r.failed = g_strdup_printf ("MPS: %s", no_mps);
              g_free (no_mps);
            } else {
              scale_run_row (self, &r);
            }
            if (r.mps)
              mps_stop ();
            failed += r.failed != NULL;
            print_scale_row (&r);
            g_array_append_val (rows, r);
          }
        }
      }
      g_free (why);
    }
  }
  g_print ("\nK x M: streams x consumers of each.  Delivered: frames the "
      "consumers got of those sent (every consumer of every stream); lost: "
      "the difference, and the most one consumer of one stream lost.  fps: "
      "the first consumer of each stream, all streams together.  Latency "
      "and CPU over the frames after the warm-up; CPU per frame a side is "
      "its processes' CPU time over the frames they handled.\n");
  if (opt.mps)
    g_print ("+MPS: the row again under an MPS daemon that gpushare-bench "
        "started before it and stopped after it (private "
        "CUDA_MPS_PIPE_DIRECTORY)%s%s.\n", mps_why_not ()? "; not here: " :
        "", mps_why_not ()? mps_why_not () : "");
  if (opt.plot && rows->len > 0
      && !scale_plot ((ScaleRow *) rows->data, rows->len, opt.plot))
    rc = 1;
  if (opt.mps)
    mps_cleanup ();
  sigaction (SIGINT, &old_int, NULL);
  sigaction (SIGTERM, &old_term, NULL);
  sigaction (SIGHUP, &old_hup, NULL);
  if (!rc && (failed || interrupted))
    rc = 1;

out:
  for (i = 0; i < (gint) rows->len; i++)
    g_free (g_array_index (rows, ScaleRow, i).failed);
  g_array_unref (rows);
  g_strfreev (ks);
  g_strfreev (sizes);
  g_strfreev (names);
  return rc;
}

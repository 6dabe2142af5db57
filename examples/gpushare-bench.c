/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-bench: throughput, handoff latency and CPU cost of moving raw
 * video frames from one process to another, gpushare beside the transport
 * GStreamer 1.22 already has (shmsink / shmsrc).  It prints figures; it is
 * not a test.
 *
 *   gpushare-bench [--sizes 1080p,4k] [--frames 600] [--repeat 3]
 *                  [--modes a,b,...] [--ring 8] [--timeout 10]
 *                  [--markdown] [--verbose]
 *   gpushare-bench --list
 *   gpushare-bench producer|consumer|single --mode M ...  (one side only)
 *
 * Every mode is a row of modes[] below: a producer pipeline and a consumer
 * pipeline, run in two processes that this program spawns from itself, or
 * one pipeline in one process for the ceiling.  The producer makes one
 * frame and repeats it (videotestsrc num-buffers=1 ! imagefreeze), so the
 * source costs next to nothing per frame and what is measured is the
 * handoff.
 *
 * Each side stamps CLOCK_MONOTONIC in a pad probe: the producer on the sink
 * pad of the element named "in" (the first element of the transport), the
 * consumer on the src pad of the element named "out" (the last).  A frame
 * is keyed by GST_BUFFER_OFFSET, which imagefreeze and videotestsrc set and
 * gpushare carries; a transport that loses the offset (shmsrc) is keyed by
 * arrival order, the same thing for a lossless transport.  Each child keeps
 * its stamps in memory and writes them to a file when it is done; the
 * parent joins them.
 *
 * Process start-up (plugin loading, connecting, allocating the ring, CUDA
 * init) is left out by measuring between the first and the last frame
 * only: the throughput is (frames - 1) / (last - first) on the consumer's
 * stamps, the CPU time per frame is each process's getrusage () at its
 * last frame minus that at its first, divided by (frames - 1).
 *
 * Each figure is the median of --repeat runs, taken in rounds over the
 * whole table.  A mode whose elements are not installed is printed as
 * skipped.  docs/benchmarks.md has results and what they mean.
 */

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* the modes */

/* Pipeline templates.  @CAPS@ is the raw caps of the frame
 * (video/x-raw,format=NV12,width=..,height=..,framerate=30/1), @FRAMES@
 * the frame count, @SOCKET@ a fresh socket path in a private folder,
 * @RING@ the ring depth, @SHMSIZE@ a shmsink area that holds @RING@ frames.
 * Every sink runs with sync=false: the frames carry 30 fps timestamps, and
 * the point is to go as fast as the transport allows. */

/* One frame, repeated.  imagefreeze passes the sink's ALLOCATION answer up,
 * so videotestsrc draws its one frame into the sink's memory: gpusharesink
 * then copies it from that slot into a fresh slot for every frame (a slot
 * carries one frame at a time), while shmsink sends the very same block
 * again and again without copying anything. */
#define SOURCE "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "imagefreeze num-buffers=@FRAMES@"
/* The same with identity drop-allocation=true in front of imagefreeze: the
 * frame is in ordinary memory and either sink copies every frame once into
 * shared memory, which is what a producer outside the sink's pool costs. */
#define SOURCE_NOPOOL "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "identity drop-allocation=true ! imagefreeze num-buffers=@FRAMES@"
/* A source that writes every frame into the sink's memory (videotestsrc
 * copies its cached solid-colour picture into each buffer): the sink copies
 * nothing, the copy is the source's. */
#define SOURCE_INPLACE "videotestsrc num-buffers=@FRAMES@ " \
  "pattern=solid-color ! @CAPS@"
#define CUDA_SOURCE "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "cudaupload ! imagefreeze num-buffers=@FRAMES@"

#define GPUSHARE_SINK "gpusharesink name=in socket-path=@SOCKET@ " \
  "policy=lossless wait-for-connection=true ring-size=@RING@ sync=false"
/* transport=system: with a GPU on the host, transport=auto could carry even
 * system-memory input in GPU slots; these rows measure system memory */
#define GPUSHARE_SRC "gpusharesrc name=out socket-path=@SOCKET@ " \
  "transport=system"
/* GPU rows force the transport, so that a fallback fails the row instead
 * of measuring something else, and keep the frames in GPU memory */
#define GPUSHARE_SRC_CUDA(sync) "gpusharesrc name=out socket-path=@SOCKET@ " \
  "transport=cuda sync-mode=" sync " ! video/x-raw(memory:CUDAMemory)"
#define SHM_SINK_OPTS "socket-path=@SOCKET@ wait-for-connection=true " \
  "shm-size=@SHMSIZE@ sync=false"
#define SHM_SINK "shmsink name=in " SHM_SINK_OPTS
/* shmsrc carries no caps: give them, as a gpusharesrc consumer gets them
 * from the handshake */
#define SHM_SRC_OPTS "socket-path=@SOCKET@ is-live=false ! @CAPS@"
#define SHM_SRC "shmsrc name=out " SHM_SRC_OPTS
#define FAKESINK "fakesink sync=false"

typedef enum
{
  KEY_OFFSET,                   /* GST_BUFFER_OFFSET travels with the frame */
  KEY_ORDER,                    /* it does not: the n-th frame is frame n */
} FrameKey;

typedef struct
{
  const gchar *name;
  const gchar *what;
  /* elements that must exist, separated by spaces */
  const gchar *needs;
  /* if set, the sink template of that element must take these caps: a
   * transport that cannot carry them yet is skipped, not failed */
  const gchar *caps_factory;
  const gchar *caps;
  /* the producer names the element to stamp in front of "in", the
   * consumer the element to stamp behind "out" */
  const gchar *producer;
  /* NULL: one process, the "in" stamps alone */
  const gchar *consumer;
  FrameKey key;
} BenchMode;

/* New rows (CUDA with and without MPS, other transports) go here.  A mode
 * whose elements are missing is skipped, so rows for the GPU machine can
 * stay in the table everywhere. */
static const BenchMode modes[] = {
  {"one-process", "source ! fakesink in one process: the ceiling",
        "imagefreeze", NULL, NULL,
      SOURCE " ! " FAKESINK " name=in", NULL, KEY_OFFSET},
  {"gpushare-sysmem", "gpusharesink / gpusharesrc, memfd slots, lossless",
        "imagefreeze gpusharesink gpusharesrc", NULL, NULL,
      SOURCE " ! " GPUSHARE_SINK, GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET},
  {"shm", "shmsink / shmsrc, GStreamer 1.22's own",
        "imagefreeze shmsink shmsrc", NULL, NULL,
      SOURCE " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER},
  {"gpushare-sysmem-nopool", "gpushare-sysmem, the sink copies every frame",
        "imagefreeze identity gpusharesink gpusharesrc", NULL, NULL,
        SOURCE_NOPOOL " ! " GPUSHARE_SINK,
      GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET},
  {"shm-nopool", "shm, the sink copies every frame",
        "imagefreeze identity shmsink shmsrc", NULL, NULL,
      SOURCE_NOPOOL " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER},
  {"gpushare-sysmem-inplace", "the source writes every frame into a slot",
        "gpusharesink gpusharesrc", NULL, NULL,
        SOURCE_INPLACE " ! " GPUSHARE_SINK,
      GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET},
  {"shm-inplace", "the source writes every frame into shmsink's area",
        "shmsink shmsrc", NULL, NULL,
      SOURCE_INPLACE " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER},
  {"one-process-inplace", "the source writes every frame, one process",
        "videotestsrc", NULL, NULL,
      SOURCE_INPLACE " ! " FAKESINK " name=in", NULL, KEY_OFFSET},
  /* The frame starts and ends in GPU memory.  Run these on the GPU machine
   * with and without MPS (the header says whether an MPS daemon runs). */
#define CUDA_ROW(name, sync, what) \
  {name, what, "imagefreeze cudaupload gpusharesink gpusharesrc", \
        "gpusharesink", "video/x-raw(memory:CUDAMemory)", \
        CUDA_SOURCE " ! " GPUSHARE_SINK, \
      GPUSHARE_SRC_CUDA (sync) " ! " FAKESINK, KEY_OFFSET}
  CUDA_ROW ("gpushare-cuda", "auto", "gpushare, CUDA VMM slots"),
  CUDA_ROW ("gpushare-cuda-host", "host",
      "gpushare, CUDA slots, each side syncs its stream"),
  CUDA_ROW ("gpushare-cuda-semaphore", "semaphore",
      "gpushare, CUDA slots, semaphore words in GPU memory"),
  CUDA_ROW ("gpushare-cuda-event", "event",
      "gpushare, CUDA slots, CUDA IPC events"),
#undef CUDA_ROW
  {"cuda-shm", "cudadownload ! shmsink / shmsrc ! cudaupload",
        "imagefreeze cudaupload cudadownload shmsink shmsrc", NULL, NULL,
        CUDA_SOURCE " ! cudadownload name=in ! shmsink " SHM_SINK_OPTS,
      "shmsrc " SHM_SRC_OPTS " ! cudaupload name=out ! " FAKESINK, KEY_ORDER},
};

/* ------------------------------------------------------------------------ */
/* options */

typedef struct
{
  /* parent */
  gchar *sizes;
  gchar *modes;
  gboolean markdown;
  gboolean verbose;
  gboolean list;
  /* both */
  gint frames;
  gint ring;
  gint repeat;
  gint timeout_s;
  /* children */
  gchar *mode;
  gchar *socket;
  gchar *stamps;
  gint width, height;
} Options;

static Options opt = {
  .frames = 600,
  .ring = 8,
  .repeat = 3,
  .timeout_s = 10,
  .width = 1920,
  .height = 1080,
};

static const BenchMode *
find_mode (const gchar * name)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (modes); i++)
    if (g_str_equal (modes[i].name, name))
      return &modes[i];
  return NULL;
}

static gsize
frame_size (gint w, gint h)
{
  GstVideoInfo info;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, w, h);
  return GST_VIDEO_INFO_SIZE (&info);
}

static gchar *
expand (const gchar * tmpl, gint w, gint h)
{
  GString *s = g_string_new (tmpl);
  gsize page = sysconf (_SC_PAGESIZE);
  gsize slot = (frame_size (w, h) + page - 1) / page * page;
  gchar *caps = g_strdup_printf ("video/x-raw,format=NV12,width=%d,"
      "height=%d,framerate=30/1", w, h);
  gchar *frames = g_strdup_printf ("%d", opt.frames);
  gchar *ring = g_strdup_printf ("%d", opt.ring);
  /* shmsink's area is one block per frame in flight, with a little room
   * for its first-fit allocator */
  gchar *shmsize = g_strdup_printf ("%" G_GSIZE_FORMAT,
      slot * opt.ring + 2 * 1024 * 1024);

  g_string_replace (s, "@CAPS@", caps, 0);
  g_string_replace (s, "@FRAMES@", frames, 0);
  g_string_replace (s, "@RING@", ring, 0);
  g_string_replace (s, "@SHMSIZE@", shmsize, 0);
  g_string_replace (s, "@SOCKET@", opt.socket ? opt.socket : "none", 0);
  g_free (caps);
  g_free (frames);
  g_free (ring);
  g_free (shmsize);
  return g_string_free (s, FALSE);
}

static gint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* user + system time of every thread of this process */
static gint64
cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ((gint64) ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
      ((gint64) ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* ------------------------------------------------------------------------ */
/* one side: producer, consumer, or single */

typedef struct
{
  GstElement *pipeline;
  FrameKey key;
  gboolean post_done;
  gint64 *stamps;               /* per frame, 0: not seen */
  gint n;                       /* frames seen */
  gint bad_keys;
  gint64 cpu_first, cpu_last;
} Side;

static GstPadProbeReturn
stamp_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Side *s = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 t = now_ns ();
  guint64 k = s->n;

  if (s->key == KEY_OFFSET && GST_BUFFER_OFFSET_IS_VALID (buf))
    k = GST_BUFFER_OFFSET (buf);
  if (k < (guint64) opt.frames && s->stamps[k] == 0)
    s->stamps[k] = t;
  else
    s->bad_keys++;
  if (s->n == 0)
    s->cpu_first = cpu_ns ();
  /* read by the main thread to see progress */
  g_atomic_int_inc (&s->n);
  if (s->n == opt.frames) {
    s->cpu_last = cpu_ns ();
    /* shmsrc sends no EOS: the consumer ends itself at the last frame */
    if (s->post_done)
      gst_element_post_message (s->pipeline,
          gst_message_new_application (GST_OBJECT (s->pipeline),
              gst_structure_new_empty ("bench-done")));
  }
  return GST_PAD_PROBE_OK;
}

static gint
run_side (const gchar * role)
{
  const BenchMode *mode = opt.mode ? find_mode (opt.mode) : NULL;
  gboolean consumer = g_str_equal (role, "consumer");
  Side s = { 0, };
  GstElement *el = NULL;
  GstPad *pad = NULL;
  GstBus *bus = NULL;
  GError *error = NULL;
  GString *report = g_string_new (NULL);
  gchar *desc, *errmsg = NULL;
  gint64 last_progress;
  gint last_n = -1, i, rc = 0;

  if (!mode || !opt.stamps || (consumer && !mode->consumer)) {
    g_printerr ("bench %s: no such mode or no --stamps\n", role);
    return 64;
  }
  desc = expand (consumer ? mode->consumer : mode->producer, opt.width,
      opt.height);
  s.pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!s.pipeline || error) {
    errmsg = g_strdup_printf ("pipeline: %s", error ? error->message : "?");
    g_clear_error (&error);
    rc = 2;
    goto done;
  }
  s.key = mode->key;
  s.post_done = consumer;
  s.stamps = g_new0 (gint64, opt.frames);
  el = gst_bin_get_by_name (GST_BIN (s.pipeline), consumer ? "out" : "in");
  pad = el ? gst_element_get_static_pad (el, consumer ? "src" : "sink") : NULL;
  if (!pad) {
    errmsg = g_strdup ("no element to stamp");
    rc = 2;
    goto done;
  }
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, stamp_probe, &s, NULL);

  bus = gst_element_get_bus (s.pipeline);
  gst_element_set_state (s.pipeline, GST_STATE_PLAYING);
  last_progress = g_get_monotonic_time ();
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop (bus, 200 * GST_MSECOND);
    gboolean stop = FALSE;

    if (!msg) {
      gint n = g_atomic_int_get (&s.n);

      if (n != last_n) {
        last_n = n;
        last_progress = g_get_monotonic_time ();
      } else if (g_get_monotonic_time () - last_progress >
          (gint64) opt.timeout_s * G_USEC_PER_SEC) {
        errmsg = g_strdup_printf ("stalled after %d frames", n);
        rc = 3;
        break;
      }
      continue;
    }
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_EOS:
      case GST_MESSAGE_APPLICATION:
        stop = TRUE;
        break;
      case GST_MESSAGE_ERROR:
        /* a consumer that has every frame does not mind its producer
         * leaving first */
        if (!(consumer && g_atomic_int_get (&s.n) >= opt.frames)) {
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

  /* the sink's own figures (gpusharesink: frames copied, in place) */
  if (!consumer && g_object_class_find_property (G_OBJECT_GET_CLASS (el),
          "stats")) {
    GstStructure *stats = NULL;

    g_object_get (el, "stats", &stats, NULL);
    if (stats) {
      gchar *str = gst_structure_to_string (stats);

      g_string_append_printf (report, "stats %s\n", str);
      g_free (str);
      gst_structure_free (stats);
    }
  }
  gst_element_set_state (s.pipeline, GST_STATE_NULL);

done:
  g_string_append_printf (report, "frames %d\nbad-keys %d\n", s.n,
      s.bad_keys);
  if (s.n >= opt.frames)
    g_string_append_printf (report, "cpu %" G_GINT64_FORMAT " %"
        G_GINT64_FORMAT "\n", s.cpu_first, s.cpu_last);
  for (i = 0; s.stamps && i < opt.frames; i++)
    if (s.stamps[i])
      g_string_append_printf (report, "t %d %" G_GINT64_FORMAT "\n", i,
          s.stamps[i]);
  if (errmsg) {
    g_strdelimit (errmsg, "\n", ' ');
    g_string_append_printf (report, "error %s\n", errmsg);
  }
  if (!g_file_set_contents (opt.stamps, report->str, report->len, &error)) {
    g_printerr ("bench %s: %s\n", role, error->message);
    g_clear_error (&error);
    rc = rc ? rc : 2;
  }
  g_string_free (report, TRUE);
  g_free (errmsg);
  g_free (s.stamps);
  gst_clear_object (&pad);
  gst_clear_object (&el);
  gst_clear_object (&bus);
  gst_clear_object (&s.pipeline);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* the parent */

typedef struct
{
  gint n;
  gint bad_keys;
  gboolean have_cpu;
  gint64 cpu_first, cpu_last;
  gint64 *t;
  gchar *error;
  gchar *stats;
} SideResult;

typedef struct
{
  const BenchMode *mode;
  gint width, height;
  gchar *skipped;               /* not run, and why */
  gchar *failed;                /* run, and what went wrong */
  gint runs, runs_ok;           /* --repeat */
  gdouble *v;                   /* each figure of each good run */
  gdouble fps;
  gdouble p50_us, p99_us;       /* < 0: no latency (one process) */
  gdouble cpu_producer_us, cpu_consumer_us;     /* per frame, < 0: none */
  gchar *stats;
} Row;

static void
side_result_clear (SideResult * r)
{
  g_free (r->t);
  g_free (r->error);
  g_free (r->stats);
}

static void
read_side (const gchar * path, SideResult * r)
{
  gchar *text = NULL, **lines, **l;

  r->t = g_new0 (gint64, opt.frames);
  if (!g_file_get_contents (path, &text, NULL, NULL)) {
    r->error = g_strdup ("no report");
    return;
  }
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l; l++) {
    gint k;
    gint64 t;

    if (sscanf (*l, "t %d %" G_GINT64_FORMAT, &k, &t) == 2) {
      if (k >= 0 && k < opt.frames)
        r->t[k] = t;
    } else if (g_str_has_prefix (*l, "frames ")) {
      r->n = atoi (*l + 7);
    } else if (g_str_has_prefix (*l, "bad-keys ")) {
      r->bad_keys = atoi (*l + 9);
    } else if (sscanf (*l, "cpu %" G_GINT64_FORMAT " %" G_GINT64_FORMAT,
            &r->cpu_first, &r->cpu_last) == 2) {
      r->have_cpu = TRUE;
    } else if (g_str_has_prefix (*l, "error ")) {
      g_free (r->error);
      r->error = g_strdup (*l + 6);
    } else if (g_str_has_prefix (*l, "stats ")) {
      g_free (r->stats);
      r->stats = g_strdup (*l + 6);
    }
  }
  g_strfreev (lines);
  g_free (text);
}

static gchar *
missing_requirement (const BenchMode * mode)
{
  gchar **names = g_strsplit (mode->needs, " ", -1), **n;
  gchar *why = NULL;

  for (n = names; *n && !why; n++) {
    GstElementFactory *f;

    if (!**n)
      continue;
    f = gst_element_factory_find (*n);
    if (!f)
      why = g_strdup_printf ("%s not available", *n);
    gst_clear_object (&f);
  }
  g_strfreev (names);
  if (!why && mode->caps_factory) {
    GstElementFactory *f = gst_element_factory_find (mode->caps_factory);
    GstCaps *want = gst_caps_from_string (mode->caps);
    const GList *t;
    gboolean ok = FALSE;

    for (t = f ? gst_element_factory_get_static_pad_templates (f) : NULL;
        t; t = t->next) {
      GstStaticPadTemplate *tmpl = t->data;
      GstCaps *caps;

      if (tmpl->direction != GST_PAD_SINK)
        continue;
      caps = gst_static_pad_template_get_caps (tmpl);
      ok |= gst_caps_can_intersect (caps, want);
      gst_caps_unref (caps);
    }
    if (!ok)
      why = g_strdup_printf ("%s does not take %s", mode->caps_factory,
          mode->caps);
    gst_caps_unref (want);
    gst_clear_object (&f);
  }
  return why;
}

static GSubprocess *
spawn (const gchar * self, const gchar * role, const BenchMode * mode,
    const gchar * sock, const gchar * stamps, gint w, gint h, GError ** error)
{
  gchar *frames = g_strdup_printf ("%d", opt.frames);
  gchar *ring = g_strdup_printf ("%d", opt.ring);
  gchar *timeout = g_strdup_printf ("%d", opt.timeout_s);
  gchar *ws = g_strdup_printf ("%d", w);
  gchar *hs = g_strdup_printf ("%d", h);
  const gchar *argv[] = { self, role, "--mode", mode->name, "--socket", sock,
    "--stamps", stamps, "--frames", frames, "--ring", ring, "--timeout",
    timeout, "--width", ws, "--height", hs, NULL
  };
  GSubprocess *p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_NONE, error);

  g_free (frames);
  g_free (ring);
  g_free (timeout);
  g_free (ws);
  g_free (hs);
  return p;
}

/* GSubprocess reaps its child from GLib's worker thread, so the identifier
 * going NULL says it is gone without a main loop here */
static gboolean
running (GSubprocess * p)
{
  return p && g_subprocess_get_identifier (p) != NULL;
}

static gint
percentile_index (gint n, gint q)
{
  /* nearest rank */
  gint i = (n * q + 99) / 100 - 1;

  return CLAMP (i, 0, n - 1);
}

static gint
cmp_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

static void
run_row (const gchar * self, Row * row)
{
  const BenchMode *mode = row->mode;
  gboolean two = mode->consumer != NULL;
  gchar *dir, *sock, *pfile, *cfile;
  GSubprocess *prod = NULL, *cons = NULL;
  SideResult pr = { 0, }, cr = { 0, };
  SideResult *last;
  GError *error = NULL;
  gint64 deadline, first = 0, end = 0;
  gint64 *lat;
  gint i, n_lat = 0, n_seen = 0;

  row->p50_us = row->p99_us = -1;
  row->cpu_producer_us = row->cpu_consumer_us = -1;
  row->skipped = missing_requirement (mode);
  if (row->skipped)
    return;

  dir = g_dir_make_tmp ("gpushare-bench-XXXXXX", &error);
  if (!dir) {
    row->failed = g_strdup (error->message);
    g_clear_error (&error);
    return;
  }
  sock = g_build_filename (dir, "bench.sock", NULL);
  pfile = g_build_filename (dir, "producer.txt", NULL);
  cfile = g_build_filename (dir, "consumer.txt", NULL);
  deadline = g_get_monotonic_time () + (gint64) opt.timeout_s *
      G_USEC_PER_SEC;

  /* producer first: shmsrc does not wait for its socket to appear */
  prod = spawn (self, two ? "producer" : "single", mode, sock, pfile,
      row->width, row->height, &error);
  if (prod && two) {
    while (running (prod) && !g_file_test (sock, G_FILE_TEST_EXISTS)
        && g_get_monotonic_time () < deadline)
      g_usleep (2000);
    if (g_file_test (sock, G_FILE_TEST_EXISTS))
      cons = spawn (self, "consumer", mode, sock, cfile, row->width,
          row->height, &error);
  }
  while ((running (prod) || running (cons))
      && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  if (running (prod) || running (cons)) {
    row->failed = g_strdup_printf ("timeout after %d s, %s%s%s still "
        "running", opt.timeout_s, running (prod) ? "producer" : "",
        running (prod) && running (cons) ? " and " : "",
        running (cons) ? "consumer" : "");
    if (prod)
      g_subprocess_force_exit (prod);
    if (cons)
      g_subprocess_force_exit (cons);
  }
  if (prod)
    g_subprocess_wait (prod, NULL, NULL);
  if (cons)
    g_subprocess_wait (cons, NULL, NULL);

  read_side (pfile, &pr);
  if (two)
    read_side (cfile, &cr);
  last = two ? &cr : &pr;
  row->stats = g_strdup (pr.stats);

  if (!row->failed && error)
    row->failed = g_strdup (error->message);
  if (!row->failed && (pr.error || (two && cr.error)))
    row->failed = g_strdup_printf ("%s%s", pr.error ? "producer: " :
        "consumer: ", pr.error ? pr.error : cr.error);
  if (!row->failed && (prod == NULL || (two && cons == NULL)))
    row->failed = g_strdup ("could not start");
  if (!row->failed && (pr.bad_keys || cr.bad_keys))
    row->failed = g_strdup_printf ("%d frames with a bad offset",
        pr.bad_keys + cr.bad_keys);
  if (!row->failed && last->n != opt.frames)
    row->failed = g_strdup_printf ("%d of %d frames arrived", last->n,
        opt.frames);

  /* throughput between the last side's first and last frame */
  for (i = 0; i < opt.frames; i++) {
    if (!last->t[i])
      continue;
    first = first ? MIN (first, last->t[i]) : last->t[i];
    end = MAX (end, last->t[i]);
    n_seen++;
  }
  if (n_seen > 1 && end > first)
    row->fps = (n_seen - 1) * 1e9 / (end - first);

  if (two) {
    lat = g_new (gint64, opt.frames);
    for (i = 0; i < opt.frames; i++)
      if (pr.t[i] && cr.t[i])
        lat[n_lat++] = cr.t[i] - pr.t[i];
    if (n_lat > 0) {
      qsort (lat, n_lat, sizeof (gint64), cmp_gint64);
      row->p50_us = lat[percentile_index (n_lat, 50)] / 1e3;
      row->p99_us = lat[percentile_index (n_lat, 99)] / 1e3;
    }
    g_free (lat);
  }
  if (opt.frames > 1 && pr.have_cpu)
    row->cpu_producer_us = (pr.cpu_last - pr.cpu_first) / 1e3 /
        (opt.frames - 1);
  if (opt.frames > 1 && two && cr.have_cpu)
    row->cpu_consumer_us = (cr.cpu_last - cr.cpu_first) / 1e3 /
        (opt.frames - 1);

  side_result_clear (&pr);
  side_result_clear (&cr);
  g_clear_error (&error);
  g_clear_object (&prod);
  g_clear_object (&cons);
  g_unlink (pfile);
  g_unlink (cfile);
  g_unlink (sock);
  g_rmdir (dir);
  g_free (pfile);
  g_free (cfile);
  g_free (sock);
  g_free (dir);
}

static gint
cmp_gdouble (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

static gdouble
median (gdouble * v, gint n)
{
  qsort (v, n, sizeof (gdouble), cmp_gdouble);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------------ */
/* host facts */

static gchar *
first_line_with (const gchar * path, const gchar * key)
{
  gchar *text = NULL, **lines, **l, *ret = NULL;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return NULL;
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l && !ret; l++)
    if (g_str_has_prefix (*l, key)) {
      const gchar *v = strchr (*l, key[strlen (key) - 1] == '=' ? '=' : ':');

      ret = g_strstrip (g_strdup (v ? v + 1 : *l));
    }
  g_strfreev (lines);
  g_free (text);
  if (ret && ret[0] == '"') {
    gchar *u = g_shell_unquote (ret, NULL);

    if (u) {
      g_free (ret);
      ret = u;
    }
  }
  return ret;
}

static gboolean
mps_running (void)
{
  GDir *d = g_dir_open ("/proc", 0, NULL);
  const gchar *name;
  gboolean found = FALSE;

  while (d && !found && (name = g_dir_read_name (d))) {
    gchar *path, *comm = NULL;

    if (!g_ascii_isdigit (name[0]))
      continue;
    path = g_build_filename ("/proc", name, "comm", NULL);
    if (g_file_get_contents (path, &comm, NULL, NULL))
      found = g_str_has_prefix (comm, "nvidia-cuda-mps");
    g_free (comm);
    g_free (path);
  }
  if (d)
    g_dir_close (d);
  return found;
}

/* what one host memcpy of a frame costs here, for scale: every row copies
 * the frame once (the source or the sink does) or not at all.  The median
 * of single copies between two warm buffers, so a best case. */
static gdouble
memcpy_us (gsize size)
{
  guint8 *a = g_malloc (size), *b = g_malloc (size);
  gdouble t[31];
  guint i;

  memset (a, 1, size);
  memset (b, 2, size);
  for (i = 0; i < 3; i++)
    memcpy (b, a, size);
  for (i = 0; i < G_N_ELEMENTS (t); i++) {
    gint64 t0 = now_ns ();

    a[i] = (guint8) i;
    memcpy (b, a, size);
    t[i] = (now_ns () - t0) / 1e3;
  }
  /* keep the copies */
  if (b[size / 2] == 42)
    g_printerr (" ");
  g_free (a);
  g_free (b);
  return median (t, G_N_ELEMENTS (t));
}

static void
print_host (gint n_sizes, gint * ws, gint * hs)
{
  gchar *os = first_line_with ("/etc/os-release", "PRETTY_NAME=");
  gchar *cpu = first_line_with ("/proc/cpuinfo", "model name");
  gchar *kernel = NULL, *smi, *gst = gst_version_string ();
  const gchar *p = opt.markdown ? "- " : "";
  gint i;

  g_file_get_contents ("/proc/sys/kernel/osrelease", &kernel, NULL, NULL);
  if (kernel)
    g_strstrip (kernel);
  g_print ("%shost: %s, kernel %s, %u CPUs: %s\n", p, os ? os : "?",
      kernel ? kernel : "?", g_get_num_processors (), cpu ? cpu : "?");
  g_print ("%s%s\n", p, gst);
  smi = g_find_program_in_path ("nvidia-smi");
  if (smi) {
    gchar *out = NULL;

    g_spawn_command_line_sync ("nvidia-smi --query-gpu=name,driver_version "
        "--format=csv,noheader", &out, NULL, NULL, NULL);
    g_print ("%sGPU: %s\n", p, out ? g_strstrip (out) : "nvidia-smi failed");
    g_print ("%sCUDA MPS: %s\n", p, mps_running ()? "running" : "not running");
    g_free (out);
  } else {
    g_print ("%sGPU: none (no nvidia-smi)\n", p);
  }
  for (i = 0; i < n_sizes; i++) {
    gsize size = frame_size (ws[i], hs[i]);
    gdouble us = memcpy_us (size);

    g_print ("%shost memcpy of one %dx%d NV12 frame (%" G_GSIZE_FORMAT
        " bytes): %.0f us (%.1f GB/s)\n", p, ws[i], hs[i], size, us,
        size / us / 1e3);
  }
  g_print ("%s%d frames per run, %d runs per row (medians), ring of %d\n", p,
      opt.frames, opt.repeat, opt.ring);
  g_free (os);
  g_free (cpu);
  g_free (kernel);
  g_free (smi);
  g_free (gst);
}

/* ------------------------------------------------------------------------ */
/* the table */

static gchar *
fmt_num (gdouble v)
{
  return v < 0 ? g_strdup ("-") : g_strdup_printf ("%.0f", v);
}

static void
print_header (void)
{
  if (opt.markdown) {
    g_print ("\n| mode | size | runs ok | fps | latency p50 (us) | "
        "latency p99 (us) | producer CPU (us/frame) | "
        "consumer CPU (us/frame) | notes |\n");
    g_print ("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  } else {
    g_print ("\n%-23s %-10s %5s %9s %9s %9s %10s %10s\n", "mode", "size",
        "runs", "fps", "p50 us", "p99 us", "prod us/f", "cons us/f");
  }
}

static void
print_row (const Row * r)
{
  gchar *size = g_strdup_printf ("%dx%d", r->width, r->height);
  gchar *runs = g_strdup_printf ("%d/%d", r->runs_ok, r->runs);
  gchar *fps, *p50, *p99, *cp, *cc, *note = NULL;

  if (r->skipped) {
    if (opt.markdown)
      g_print ("| %s | %s | | | | | | | skipped: %s |\n", r->mode->name,
          size, r->skipped);
    else
      g_print ("%-23s %-10s skipped: %s\n", r->mode->name, size, r->skipped);
    g_free (size);
    g_free (runs);
    return;
  }
  if (r->failed)
    note = g_strdup_printf ("%d of %d runs failed, last: %s",
        r->runs - r->runs_ok, r->runs, r->failed);
  fps = fmt_num (r->runs_ok && r->fps > 0 ? r->fps : -1);
  p50 = fmt_num (r->runs_ok ? r->p50_us : -1);
  p99 = fmt_num (r->runs_ok ? r->p99_us : -1);
  cp = fmt_num (r->runs_ok ? r->cpu_producer_us : -1);
  cc = fmt_num (r->runs_ok ? r->cpu_consumer_us : -1);
  if (opt.markdown)
    g_print ("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        r->mode->name, size, runs, fps, p50, p99, cp, cc, note ? note : "");
  else
    g_print ("%-23s %-10s %5s %9s %9s %9s %10s %10s%s%s\n", r->mode->name,
        size, runs, fps, p50, p99, cp, cc, note ? "  " : "", note ? note : "");
  if (opt.verbose && r->stats)
    g_print ("    producer stats: %s\n", r->stats);
  g_free (size);
  g_free (runs);
  g_free (fps);
  g_free (p50);
  g_free (p99);
  g_free (cp);
  g_free (cc);
  g_free (note);
}

/* --repeat: every figure is the median of the runs that completed.  Two
 * processes on a small machine make single runs noisy, so the repeats go
 * round the whole table rather than row by row: a slow spell of the host
 * then weighs on every row alike.  A transport that hangs now and then
 * (shmsink / shmsrc does) still gets its figures, with its failures
 * counted beside them. */
static void
add_run (Row * row, Row * one)
{
  gint n = row->runs_ok;

  if (one->skipped) {
    row->skipped = one->skipped;
    return;
  }
  row->runs++;
  if (one->stats) {
    g_free (row->stats);
    row->stats = one->stats;
  }
  if (one->failed) {
    g_free (row->failed);
    row->failed = one->failed;
    return;
  }
  if (!row->v)
    row->v = g_new0 (gdouble, 5 * opt.repeat);
  row->v[0 * opt.repeat + n] = one->fps;
  row->v[1 * opt.repeat + n] = one->p50_us;
  row->v[2 * opt.repeat + n] = one->p99_us;
  row->v[3 * opt.repeat + n] = one->cpu_producer_us;
  row->v[4 * opt.repeat + n] = one->cpu_consumer_us;
  row->runs_ok++;
}

static void
finish_row (Row * row)
{
  gint n = row->runs_ok;

  if (n == 0)
    return;
  row->fps = median (row->v, n);
  row->p50_us = median (row->v + opt.repeat, n);
  row->p99_us = median (row->v + 2 * opt.repeat, n);
  row->cpu_producer_us = median (row->v + 3 * opt.repeat, n);
  row->cpu_consumer_us = median (row->v + 4 * opt.repeat, n);
}

static gboolean
parse_size (const gchar * s, gint * w, gint * h)
{
  if (!g_ascii_strcasecmp (s, "1080p")) {
    *w = 1920;
    *h = 1080;
  } else if (!g_ascii_strcasecmp (s, "4k") || !g_ascii_strcasecmp (s,
          "2160p")) {
    *w = 3840;
    *h = 2160;
  } else if (!g_ascii_strcasecmp (s, "720p")) {
    *w = 1280;
    *h = 720;
  } else if (sscanf (s, "%dx%d", w, h) != 2 || *w <= 0 || *h <= 0) {
    return FALSE;
  }
  return TRUE;
}

static gint
run_parent (const gchar * self)
{
  gchar **sizes = g_strsplit (opt.sizes ? opt.sizes : "1080p,4k", ",", -1);
  gchar **names = g_strsplit (opt.modes, ",", -1);
  gint n_sizes = g_strv_length (sizes), n_rows, i, j, k, r, failed = 0;
  Row *rows;
  gint *ws = g_new0 (gint, n_sizes), *hs = g_new0 (gint, n_sizes);

  for (i = 0; i < n_sizes; i++)
    if (!parse_size (sizes[i], &ws[i], &hs[i])) {
      g_printerr ("bad size '%s' (1080p, 4k, 720p or WxH)\n", sizes[i]);
      return 64;
    }
  for (j = 0; names[j]; j++)
    if (!find_mode (names[j])) {
      g_printerr ("no mode '%s' (--list shows them)\n", names[j]);
      return 64;
    }

  n_rows = g_strv_length (names) * n_sizes;
  rows = g_new0 (Row, n_rows);
  for (j = 0; names[j]; j++)
    for (i = 0; i < n_sizes; i++) {
      Row *row = &rows[j * n_sizes + i];

      row->mode = find_mode (names[j]);
      row->width = ws[i];
      row->height = hs[i];
    }

  print_host (n_sizes, ws, hs);
  /* the rounds report progress on stderr: keep stdout in order */
  fflush (stdout);
  for (r = 0; r < opt.repeat; r++) {
    g_printerr ("gpushare-bench: round %d of %d\n", r + 1, opt.repeat);
    for (k = 0; k < n_rows; k++) {
      Row one = { 0, };

      if (rows[k].skipped)
        continue;
      one.mode = rows[k].mode;
      one.width = rows[k].width;
      one.height = rows[k].height;
      run_row (self, &one);
      add_run (&rows[k], &one);
    }
  }
  print_header ();
  for (k = 0; k < n_rows; k++) {
    finish_row (&rows[k]);
    print_row (&rows[k]);
    failed += rows[k].runs_ok == 0 && !rows[k].skipped;
    g_free (rows[k].skipped);
    g_free (rows[k].failed);
    g_free (rows[k].stats);
    g_free (rows[k].v);
  }
  g_free (rows);
  g_strfreev (sizes);
  g_strfreev (names);
  g_free (ws);
  g_free (hs);
  return failed ? 1 : 0;
}

int
main (int argc, char **argv)
{
  const gchar *role = argc > 1 && argv[1][0] != '-' ? argv[1] : "parent";
  GOptionEntry entries[] = {
    {"sizes", 0, 0, G_OPTION_ARG_STRING, &opt.sizes,
        "Frame sizes, comma separated: 1080p, 4k, 720p or WxH "
          "(default 1080p,4k)", "LIST"},
    {"frames", 0, 0, G_OPTION_ARG_INT, &opt.frames,
        "Frames per run (default 600)", "N"},
    {"modes", 0, 0, G_OPTION_ARG_STRING, &opt.modes,
        "Modes to run, comma separated (default: all)", "LIST"},
    {"ring", 0, 0, G_OPTION_ARG_INT, &opt.ring,
        "Frames in flight: gpusharesink ring-size, shmsink area (default 8)",
        "N"},
    {"repeat", 0, 0, G_OPTION_ARG_INT, &opt.repeat,
        "Runs per row; each figure is their median (default 3)", "N"},
    {"markdown", 0, 0, G_OPTION_ARG_NONE, &opt.markdown,
        "Print the table as Markdown", NULL},
    {"verbose", 0, 0, G_OPTION_ARG_NONE, &opt.verbose,
        "Print the producer's stats under each row", NULL},
    {"list", 0, 0, G_OPTION_ARG_NONE, &opt.list,
        "List the modes and their pipelines", NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &opt.timeout_s,
        "Seconds one run may take (default 10)", "S"},
    {"mode", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt.mode,
        "Child: the mode", NULL},
    {"socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.socket,
        "Child: socket path", NULL},
    {"stamps", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.stamps,
        "Child: where to write the stamps", NULL},
    {"width", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.width,
        "Child: width", NULL},
    {"height", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.height,
        "Child: height", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- gpushare benchmark");
  GError *error = NULL;
  gint rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 64;
  }
  g_option_context_free (ctx);
  if (opt.frames < 2 || opt.ring < 1 || opt.repeat < 1 || opt.timeout_s < 1) {
    g_printerr ("--frames must be at least 2, --ring, --repeat and --timeout "
        "at least 1\n");
    return 64;
  }
  if (!opt.modes) {
    GString *all = g_string_new (NULL);
    guint i;

    for (i = 0; i < G_N_ELEMENTS (modes); i++)
      g_string_append_printf (all, "%s%s", i ? "," : "", modes[i].name);
    opt.modes = g_string_free (all, FALSE);
  }
#ifdef GPUSHARE_BUILD_PLUGIN_DIR
  /* run from the build tree without installing: find the fresh plugin */
  if (!gst_registry_check_feature_version (gst_registry_get (),
          "gpusharesink", 1, 0, 0))
    gst_registry_scan_path (gst_registry_get (), GPUSHARE_BUILD_PLUGIN_DIR);
#endif

  if (opt.list) {
    guint i;

    for (i = 0; i < G_N_ELEMENTS (modes); i++) {
      g_print ("%s: %s\n  producer: %s\n", modes[i].name, modes[i].what,
          modes[i].producer);
      if (modes[i].consumer)
        g_print ("  consumer: %s\n", modes[i].consumer);
    }
    rc = 0;
  } else if (g_str_equal (role, "producer") || g_str_equal (role, "consumer")
      || g_str_equal (role, "single")) {
    rc = run_side (role);
  } else if (g_str_equal (role, "parent")) {
    gchar *exe = g_file_read_link ("/proc/self/exe", NULL);

    rc = run_parent (exe ? exe : argv[0]);
    g_free (exe);
  } else {
    g_printerr ("usage: %s [--sizes LIST] [--frames N] [--modes LIST] "
        "[--markdown]\n", argv[0]);
    rc = 64;
  }
  gst_deinit ();
  return rc;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Legacy CUDA IPC rings of earlier epochs are freed as soon as no process
 * may still have them open, and no more than a bounded number wait.
 *
 *   producer  videotestsrc is-live=true pattern=ball ! capsfilter name=cf
 *             (NV12, 320x240 growing to 5120x2880, 60/1) ! gpusharesink
 *             policy=lossless lease-timeout=300
 *   consumers gpusharesrc transport=cuda-legacy !
 *             video/x-raw(memory:CUDAMemory) ! fakesink, one process each
 *
 * A. Caps changes: 8 changes of size under one streaming consumer S, each
 *    to a larger frame (the sink makes a new ring only for larger slots).
 *    After each, the ring of the old epoch is freed once S closed it
 *    (UNMAPPED): legacy-rings-retained back to 0, and S streams on.
 * B. Quarantine and exit: a consumer V1 is SIGSTOPped; it loses its lease,
 *    the ring is replaced, and the old ring stays (retained 1) while V1's
 *    process lives, for a whole second.  Once V1 is SIGKILLed its process's
 *    exit frees it (retained 0).  The producer's own device memory
 *    (nvidia-smi, per process) is one ring larger while V1 is stopped and
 *    back to its figure before V1 once V1 is gone.
 * C. The bound: V2 .. V5 stopped in turn leave 4 rings retained; V6
 *    stopped makes the producer replace the ring again, which it must
 *    refuse: S is dropped with an error that names the rings still open.
 *    Once V2 .. V6 are killed, nothing is retained, a new consumer
 *    streams through a new legacy ring, and the producer's device memory
 *    is back to its figure before V1.
 *
 * fork() happens before any CUDA call: the parent never touches CUDA.
 * Prints one SKIP line and exits 77 where no usable GPU, no legacy IPC or
 * one of the elements is missing.
 */

#include <gst/gst.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gpusharecuda.h"
#include "gpu-test-util.h"

#define START_TIMEOUT_MS 20000
#define REPLY_TIMEOUT_MS 10000
#define FRAME_TIMEOUT_MS 10000
#define WAIT_MS 5000
#define LEASE_MS 300
#define MAX_RETAINED 4          /* MAX_RETIRED_LEGACY of the sink */
#define N_VICTIMS 6
#define ALARM_S 240
#define CAPS_FMT "video/x-raw,format=NV12,width=%u,height=%u,framerate=60/1"

/* each larger than the one before: every change needs a new ring */
static const guint sizes[][2] = {
  {320, 240}, {640, 480}, {1280, 720}, {1920, 1080}, {2560, 1440},
  {3200, 1800}, {3840, 2160}, {4096, 2304}, {5120, 2880},
};

#define CAPS_CHANGES (G_N_ELEMENTS (sizes) - 1)
/* a tight NV12 frame of the last size */
#define RING_FRAME_BYTES (5120 * 2880 * 3 / 2)

enum
{
  CTL_READY = 'R',
  CTL_SAMPLE = 'S',             /* -> producer; reply 's' */
  CTL_CAPS = 'C',               /* -> producer; reply 'c': epoch changed */
  CTL_FRAMES = 'N',             /* -> consumer; reply 'n' or 'x' (error) */
  CTL_END = 'E',
};

/* ------------------------------------------------------------------------ */
/* producer */

typedef struct
{
  guint retained;
  guint clients;
  guint64 replaced;
  guint64 free_kib;
} Sample;

static guint64
pack_sample (GstElement * sink, CUcontext ctx)
{
  guint retained = gpu_test_stat_uint (sink, "legacy-rings-retained");
  guint clients = gpu_test_num_clients (sink);
  guint64 replaced = gpu_test_stat_u64 (sink, "rings-replaced");
  guint64 free_kib = gpu_test_device_free (ctx) / 1024;

  return (guint64) MIN (retained, 255) | (guint64) MIN (clients, 255) << 8
      | (replaced & 0xffff) << 16 | (free_kib & 0xffffffff) << 32;
}

static gint
producer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GError *error = NULL;
  GstElement *pipeline, *sink, *cf;
  CUcontext ctx = NULL;
  gboolean bus_ok = TRUE;
  guint size = 0;
  gchar *desc, *c;
  GstBus *bus;
  GpuTestCtl m;

  if (!gpu_test_hold_primary (&ctx, &error)) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  c = g_strdup_printf (CAPS_FMT, sizes[0][0], sizes[0][1]);
  desc = g_strdup_printf ("videotestsrc is-live=true pattern=ball ! "
      "capsfilter name=cf caps=\"%s\" ! gpusharesink name=sink "
      "socket-path=\"%s\" policy=lossless lease-timeout=%u", c, path, LEASE_MS);
  g_free (c);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  cf = gst_bin_get_by_name (GST_BIN (pipeline), "cf");
  bus = gst_element_get_bus (pipeline);
  if (!gpu_test_producer_play (pipeline, sink, bus, START_TIMEOUT_MS)
      || !gpu_test_ctl_send (ctl, CTL_READY, 0))
    return 1;

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    gint r = poll (&pfd, 1, 50);

    bus_ok = gpu_test_drain_bus ("producer", bus) && bus_ok;
    if (r <= 0)
      continue;
    if (!gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS) || m.cmd == CTL_END)
      break;
    if (m.cmd == CTL_SAMPLE) {
      gpu_test_ctl_send (ctl, 's', pack_sample (sink, ctx));
    } else if (m.cmd == CTL_CAPS) {
      guint64 epoch = gpu_test_stat_u64 (sink, "epoch");
      gint64 end = g_get_monotonic_time () + WAIT_MS * 1000;
      GstCaps *caps;

      size = MIN (size + 1, G_N_ELEMENTS (sizes) - 1);
      c = g_strdup_printf (CAPS_FMT, sizes[size][0], sizes[size][1]);
      caps = gst_caps_from_string (c);
      g_free (c);
      g_object_set (cf, "caps", caps, NULL);
      gst_caps_unref (caps);
      while (gpu_test_stat_u64 (sink, "epoch") == epoch
          && g_get_monotonic_time () < end)
        g_usleep (5000);
      gpu_test_ctl_send (ctl, 'c', gpu_test_stat_u64 (sink, "epoch") != epoch);
    }
  }
  g_print ("producer: frames rendered %" G_GUINT64_FORMAT ", rings replaced "
      "%" G_GUINT64_FORMAT "; %s\n",
      gpu_test_stat_u64 (sink, "frames-rendered"),
      gpu_test_stat_u64 (sink, "rings-replaced"),
      bus_ok ? "no error posted: PASS" : "errors posted: FAIL");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (cf);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  gpu_test_release_primary ();
  close (ctl);
  return bus_ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* consumer */

static gint frames;

static GstPadProbeReturn
count_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  g_atomic_int_inc (&frames);
  return GST_PAD_PROBE_OK;
}

/* streams until told to end; answers how many frames it got, or that it
 * failed (value 1: with the error of the retained rings) */
static gint
consumer (gint ctl, const gchar * path, const gchar * name)
{
  GError *error = NULL;
  GstElement *pipeline, *sink;
  gboolean failed = FALSE, named = FALSE;
  GstMessage *msg;
  gchar *desc;
  GstBus *bus;
  GstPad *pad;
  GpuTestCtl m;

  desc = g_strdup_printf ("gpusharesrc socket-path=\"%s\" "
      "transport=cuda-legacy connection-timeout=5000 ! "
      "video/x-raw(memory:CUDAMemory) ! fakesink name=sink sync=false "
      "enable-last-sample=false", path);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("%s: %s\n", name, error->message);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, NULL, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_pipeline_set_auto_flush_bus (GST_PIPELINE (pipeline), FALSE);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    gint r = poll (&pfd, 1, 50);

    while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR))) {
      GError *err = NULL;
      gchar *debug = NULL;

      gst_message_parse_error (msg, &err, &debug);
      if (!failed) {
        g_print ("%s: error: %s (%s)\n", name, err->message,
            debug ? debug : "");
        named = (debug && strstr (debug, "cuda-legacy rings of earlier"))
            || strstr (err->message, "cuda-legacy rings of earlier");
      }
      failed = TRUE;
      g_clear_error (&err);
      g_free (debug);
      gst_message_unref (msg);
    }
    if (r <= 0)
      continue;
    if (!gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS) || m.cmd == CTL_END)
      break;
    if (m.cmd == CTL_FRAMES)
      gpu_test_ctl_send (ctl, failed ? 'x' : 'n', failed ? (guint64) named :
          (guint64) g_atomic_int_get (&frames));
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  close (ctl);
  return failed ? 3 : 0;
}

/* ------------------------------------------------------------------------ */
/* the parent: no CUDA here */

typedef struct
{
  pid_t pid;
  gint ctl;
  const gchar *name;
  const gchar *path;
} Child;

static gint
consumer_child (gint ctl, gpointer data)
{
  Child *c = data;

  return consumer (ctl, c->path, c->name);
}

static gboolean
start_consumer (Child * c, const gchar * path, const gchar * name)
{
  GpuTestRole role = { NULL, consumer_child, c, ALARM_S };

  c->name = name;
  c->path = path;
  c->pid = gpu_test_spawn (&role, -1, &c->ctl, NULL);
  return c->pid > 0;
}

/* frames the consumer got; -1 when it failed (*named: with the error of
 * the retained rings), -2 when it does not answer */
static gint64
consumer_frames (Child * c, gboolean * named)
{
  GpuTestCtl m;

  if (!gpu_test_ctl_send (c->ctl, CTL_FRAMES, 0)
      || !gpu_test_ctl_recv (c->ctl, &m, REPLY_TIMEOUT_MS))
    return -2;
  if (m.cmd == 'x') {
    if (named)
      *named = m.value == 1;
    return -1;
  }
  return (gint64) m.value;
}

/* the consumer got more than after frames within timeout_ms */
static gboolean
consumer_streams (Child * c, gint64 after, gint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000;
  gint64 n;

  do {
    n = consumer_frames (c, NULL);
    if (n > after)
      return TRUE;
    if (n < 0)
      return FALSE;
    g_usleep (20000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

static gboolean
end_consumer (Child * c)
{
  gpu_test_ctl_send (c->ctl, CTL_END, 0);
  close (c->ctl);
  return gpu_test_reap (c->pid, c->name);
}

static void
kill_consumer (Child * c)
{
  gpu_test_kill (c->pid);
  close (c->ctl);
}

static gboolean
sample (gint pctl, Sample * s)
{
  GpuTestCtl m;

  if (!gpu_test_ctl_send (pctl, CTL_SAMPLE, 0)
      || !gpu_test_ctl_expect (pctl, 's', &m.value, REPLY_TIMEOUT_MS))
    return FALSE;
  s->retained = m.value & 0xff;
  s->clients = (m.value >> 8) & 0xff;
  s->replaced = (m.value >> 16) & 0xffff;
  s->free_kib = m.value >> 32;
  return TRUE;
}

/* samples until retained is want (and, when replaced_after is not
 * G_MAXUINT64, rings-replaced went past it) */
static gboolean
wait_for (gint pctl, guint want, guint64 replaced_after, Sample * s)
{
  gint64 end = g_get_monotonic_time () + WAIT_MS * 1000;

  do {
    if (!sample (pctl, s))
      return FALSE;
    if (s->retained == want && (replaced_after == G_MAXUINT64
            || s->replaced > replaced_after))
      return TRUE;
    g_usleep (20000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

static gboolean
check (gboolean ok, const gchar * what)
{
  g_print ("%s: %s\n", what, ok ? "PASS" : "FAIL");
  return ok;
}

static pid_t producer_pid;

/* each process's device memory, as nvidia-smi sees it, printed; the
 * producer's in MiB, or -1 where nvidia-smi is missing.  The producer's
 * own figure is what a retained ring shows in: the whole device's free
 * memory also moves with the consumers' contexts and buffer pools. */
static gint64
producer_used (const gchar * when)
{
  gchar *out = NULL;
  gint64 used = -1;

  if (g_spawn_command_line_sync ("nvidia-smi --query-compute-apps="
          "pid,used_memory --format=csv,noheader,nounits", &out, NULL, NULL,
          NULL) && out) {
    gchar **lines = g_strsplit (g_strstrip (out), "\n", -1);
    gchar *joined = g_strjoinv ("; ", lines);
    guint i;

    for (i = 0; lines[i]; i++) {
      gint pid = 0;
      gint64 mib = 0;

      if (sscanf (lines[i], "%d, %" G_GINT64_FORMAT, &pid, &mib) == 2
          && pid == (gint) producer_pid)
        used = mib;
    }
    g_print ("  %s: device memory per process (pid, MiB): %s\n", when, joined);
    g_free (joined);
    g_strfreev (lines);
  }
  g_free (out);
  return used;
}

/* the producer's device memory back to what it was */
static gboolean
producer_mem_same (gint64 before, gint64 after, const gchar * what)
{
  if (before < 0 || after < 0) {
    g_print ("%s: no per-process figures (nvidia-smi): not measured\n", what);
    return TRUE;
  }
  g_print ("%s: producer's device memory %" G_GINT64_FORMAT " -> %"
      G_GINT64_FORMAT " MiB: %s\n", what, before, after,
      after <= before + 2 ? "PASS" : "FAIL");
  return after <= before + 2;
}

/* one stopped consumer: lease lost, ring replaced, its ring retained */
static gboolean
stop_victim (Child * v, gint pctl, guint want_retained)
{
  Sample s;
  gboolean ok;

  if (!sample (pctl, &s))
    return FALSE;
  ok = consumer_streams (v, 0, FRAME_TIMEOUT_MS);
  kill (v->pid, SIGSTOP);
  g_print ("  %s is pid %d\n", v->name, (gint) v->pid);
  ok = ok && wait_for (pctl, want_retained, s.replaced, &s);
  g_print ("  %s stopped: rings replaced %" G_GUINT64_FORMAT ", legacy rings "
      "retained %u (want %u), consumers %u: %s\n", v->name, s.replaced,
      s.retained, want_retained, s.clients, ok ? "PASS" : "FAIL");
  return ok;
}

static gboolean
run (gint pctl, const gchar * path)
{
  static const gchar *names[N_VICTIMS] = { "V1", "V2", "V3", "V4", "V5",
    "V6"
  };
  Child s, s2, v[N_VICTIMS];
  Sample a, b;
  gint64 used0, used;
  gboolean ok = TRUE, named = FALSE;
  gint64 n;
  guint i, changed = 0, freed = 0;

  /* A: caps changes */
  if (!start_consumer (&s, path, "S") || !consumer_streams (&s, 0,
          FRAME_TIMEOUT_MS) || !sample (pctl, &a)) {
    g_print ("S did not stream: FAIL\n");
    return FALSE;
  }
  for (i = 0; i < CAPS_CHANGES; i++) {
    GpuTestCtl m;

    n = consumer_frames (&s, NULL);
    if (gpu_test_ctl_send (pctl, CTL_CAPS, 0)
        && gpu_test_ctl_expect (pctl, 'c', &m.value, REPLY_TIMEOUT_MS)
        && m.value)
      changed++;
    if (consumer_streams (&s, n, FRAME_TIMEOUT_MS)
        && wait_for (pctl, 0, G_MAXUINT64, &b))
      freed++;
  }
  g_print ("A: %u of %u caps changes made a new epoch; after %u S streamed "
      "on and the old ring was freed\n", changed, (guint) CAPS_CHANGES, freed);
  ok = check (changed == CAPS_CHANGES && freed == CAPS_CHANGES,
      "A: every caps change") && ok;

  /* B: quarantine, then the process's exit */
  if (!sample (pctl, &a))
    return FALSE;
  g_print ("  S is pid %d\n", (gint) s.pid);
  used0 = producer_used ("B, before V1");
  if (!start_consumer (&v[0], path, names[0]) || !stop_victim (&v[0], pctl, 1))
    return FALSE;
  g_usleep (1000 * 1000);
  ok = check (sample (pctl, &b) && b.retained == 1, "B: the ring V1 may "
      "still read is retained a second later") && ok;
  used = producer_used ("B, V1 stopped");
  /* a ring of the last size is 8 slots (the sink's default ring-size) of
   * at least a tight frame each: more than half of that must show */
  if (used0 >= 0)
    ok = check (used >= used0 + (gint64) (8 * RING_FRAME_BYTES / 2 / (1 <<
                20)), "B: the producer holds one more ring of 8 frames")
        && ok;
  kill_consumer (&v[0]);
  ok = check (wait_for (pctl, 0, G_MAXUINT64, &b), "B: V1 killed: its ring "
      "freed") && ok;

  ok = check (consumer_streams (&s, consumer_frames (&s, NULL),
          FRAME_TIMEOUT_MS), "B: S streams on") && ok;
  ok = producer_mem_same (used0, producer_used ("B, V1 killed"),
      "B: before V1 and after it") && ok;

  /* C: the bound */
  for (i = 1; i < N_VICTIMS - 1; i++) {
    if (!start_consumer (&v[i], path, names[i])
        || !stop_victim (&v[i], pctl, i))
      return FALSE;
    producer_used ("C");
  }
  ok = check (consumer_streams (&s, consumer_frames (&s, NULL),
          FRAME_TIMEOUT_MS), "C: 4 rings retained, S streams on") && ok;
  if (!start_consumer (&v[i], path, names[i])
      || !consumer_streams (&v[i], 0, FRAME_TIMEOUT_MS))
    return FALSE;
  kill (v[i].pid, SIGSTOP);
  {
    gint64 end = g_get_monotonic_time () + WAIT_MS * 1000;

    while ((n = consumer_frames (&s, &named)) >= 0
        && g_get_monotonic_time () < end)
      g_usleep (20000);
  }
  ok = check (n == -1 && named && sample (pctl, &b) && b.retained ==
      MAX_RETAINED, "C: V6 stopped: no 5th ring, S dropped with an error "
      "naming the rings still open, 4 retained") && ok;
  for (i = 1; i < N_VICTIMS; i++)
    kill_consumer (&v[i]);
  kill_consumer (&s);
  ok = check (wait_for (pctl, 0, G_MAXUINT64, &b), "C: V2 .. V6 killed: "
      "nothing retained") && ok;
  ok = check (start_consumer (&s2, path, "S2") && consumer_streams (&s2, 0,
          FRAME_TIMEOUT_MS), "C: a new consumer streams through a new "
      "legacy ring") && ok;
  ok = producer_mem_same (used0, producer_used ("C, S2 streaming"),
      "C: one ring again, as before V1") && ok;
  ok = end_consumer (&s2) && ok;
  return ok;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  gchar *dir, *path;
  GpuTestRole producer_role = { "producer", producer, NULL, ALARM_S };
  pid_t ppid;
  gint pctl;
  gboolean ok;

  setvbuf (stdout, NULL, _IOLBF, 0);
  if (gpu_test_probe_in_child (GPU_TEST_NEED_ELEMENTS))
    return GPU_TEST_SKIP;
  dir = g_dir_make_tmp ("gpushare-legacy-XXXXXX", &error);
  if (!dir) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  path = g_build_filename (dir, "sock", NULL);
  producer_role.data = path;
  ppid = gpu_test_spawn (&producer_role, -1, &pctl, &error);
  if (ppid < 0) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  producer_pid = ppid;
  g_print ("the producer is pid %d\n", (gint) ppid);
  alarm (ALARM_S);
  ok = gpu_test_ctl_expect (pctl, CTL_READY, NULL, START_TIMEOUT_MS);
  if (!ok)
    g_print ("the producer did not start: FAIL\n");
  ok = ok && run (pctl, path);
  gpu_test_ctl_send (pctl, CTL_END, 0);
  close (pctl);
  ok = gpu_test_reap (ppid, "producer") && ok;
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s\n", ok ? "PASS: every check passed" : "FAIL: see above");
  return ok ? 0 : 1;
}

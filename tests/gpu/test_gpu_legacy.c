/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Legacy CUDA IPC rings of earlier epochs are freed as soon as no process
 * may still have them open, and no more than a bounded number wait.
 *
 *   producer  videotestsrc is-live=true pattern=ball ! capsfilter name=cf
 *             (NV12 1920x1080 or 1280x720, 60/1) ! gpusharesink
 *             policy=lossless lease-timeout=300
 *   consumers gpusharesrc transport=cuda-legacy !
 *             video/x-raw(memory:CUDAMemory) ! fakesink, one process each
 *
 * A. Caps changes: 8 changes of size under one streaming consumer S.  After
 *    each, the ring of the old epoch is freed once S closed it (UNMAPPED):
 *    legacy-rings-retained back to 0, S still streaming, and device free
 *    memory the same after the 8 (same processes, same size) as before.
 * B. Quarantine and exit: a consumer V1 is SIGSTOPped; it loses its lease,
 *    the ring is replaced, and the old ring stays (retained 1) while V1's
 *    process lives, for a whole second.  Once V1 is SIGKILLed its process's
 *    exit frees it (retained 0), and device free memory is back where it
 *    was with the same processes (producer and S) before V1 came.
 * C. The bound: V2 .. V5 stopped in turn leave 4 rings retained; V6
 *    stopped makes the producer replace the ring again, which it must
 *    refuse: S is dropped with an error that names the rings still open.
 *    Once V2 .. V6 are killed, nothing is retained, and a new consumer
 *    streams through a new legacy ring.
 *
 * fork() happens before any CUDA call: the parent never touches CUDA.
 * Prints one SKIP line and exits 77 where no usable GPU, no legacy IPC or
 * one of the elements is missing.
 */

#include <gst/gst.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
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
#define CAPS_CHANGES 8
#define ALARM_S 240
#define CAPS_1080 "video/x-raw,format=NV12,width=1920,height=1080," \
  "framerate=60/1"
#define CAPS_720 "video/x-raw,format=NV12,width=1280,height=720," \
  "framerate=60/1"

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
producer (gint ctl, const gchar * path)
{
  GError *error = NULL;
  GstElement *pipeline, *sink, *cf;
  CUcontext ctx = NULL;
  gboolean bus_ok = TRUE, big = TRUE;
  gchar *desc;
  GstBus *bus;
  GpuTestCtl m;

  if (!gpu_test_hold_primary (&ctx, &error)) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  desc = g_strdup_printf ("videotestsrc is-live=true pattern=ball ! "
      "capsfilter name=cf caps=\"" CAPS_1080 "\" ! gpusharesink name=sink "
      "socket-path=\"%s\" policy=lossless lease-timeout=%u", path, LEASE_MS);
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

      big = !big;
      caps = gst_caps_from_string (big ? CAPS_1080 : CAPS_720);
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
        named = (debug && strstr (debug, "legacy IPC rings"))
            || strstr (err->message, "legacy IPC rings");
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
} Child;

static gboolean
start_consumer (Child * c, const gchar * path, const gchar * name)
{
  gint sv[2];

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return FALSE;
  c->name = name;
  c->pid = fork ();
  if (c->pid == 0) {
    close (sv[1]);
    gpu_test_run_child (ALARM_S);
    gpu_test_child_exit (consumer (sv[0], path, name));
  }
  close (sv[0]);
  c->ctl = sv[1];
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
  gint status;

  kill (c->pid, SIGKILL);
  waitpid (c->pid, &status, 0);
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

static gboolean
mem_same (const Sample * a, const Sample * b, const gchar * what)
{
  gint64 d = (gint64) b->free_kib - (gint64) a->free_kib;
  gboolean ok = d >= -(GPU_TEST_MEM_SLACK / 1024);

  g_print ("%s: device free %.1f -> %.1f MiB: %s\n", what,
      a->free_kib / 1024.0, b->free_kib / 1024.0, ok ? "PASS" : "FAIL");
  return ok;
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
      "on and the old ring was freed\n", changed, CAPS_CHANGES, freed);
  ok = check (changed == CAPS_CHANGES && freed == CAPS_CHANGES,
      "A: every caps change") && ok;
  ok = sample (pctl, &b) && mem_same (&a, &b, "A: producer and S, before "
      "and after the caps changes") && ok;

  /* B: quarantine, then the process's exit */
  if (!sample (pctl, &a))
    return FALSE;
  if (!start_consumer (&v[0], path, names[0]) || !stop_victim (&v[0], pctl,
          1))
    return FALSE;
  g_usleep (1000 * 1000);
  ok = check (sample (pctl, &b) && b.retained == 1, "B: the ring V1 may "
      "still read is retained a second later") && ok;
  kill_consumer (&v[0]);
  ok = check (wait_for (pctl, 0, G_MAXUINT64, &b), "B: V1 killed: its ring "
      "freed") && ok;
  ok = check (consumer_streams (&s, consumer_frames (&s, NULL),
          FRAME_TIMEOUT_MS), "B: S streams on") && ok;
  ok = mem_same (&a, &b, "B: producer and S, before V1 and after it") && ok;

  /* C: the bound */
  for (i = 1; i < N_VICTIMS - 1; i++)
    if (!start_consumer (&v[i], path, names[i])
        || !stop_victim (&v[i], pctl, i))
      return FALSE;
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
  ok = end_consumer (&s2) && ok;
  return ok;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  gchar *dir, *path;
  pid_t ppid;
  gint sv[2];
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
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    g_print ("FAIL: socketpair: %s\n", g_strerror (errno));
    return 1;
  }
  ppid = fork ();
  if (ppid == 0) {
    close (sv[1]);
    gpu_test_run_child (ALARM_S);
    gpu_test_child_exit (producer (sv[0], path));
  }
  close (sv[0]);
  alarm (ALARM_S);
  ok = gpu_test_ctl_expect (sv[1], CTL_READY, NULL, START_TIMEOUT_MS);
  if (!ok)
    g_print ("the producer did not start: FAIL\n");
  ok = ok && run (sv[1], path);
  gpu_test_ctl_send (sv[1], CTL_END, 0);
  close (sv[1]);
  ok = gpu_test_reap (ppid, "producer") && ok;
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s\n", ok ? "PASS: every check passed" : "FAIL: see above");
  return ok ? 0 : 1;
}

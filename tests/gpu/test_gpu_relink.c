/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpusharesrc chooses its output memory again when downstream changes its
 * mind in mid-stream (a RECONFIGURE), as happens when an application
 * relinks it from a CUDA element to a system-memory one:
 *
 *   producer  videotestsrc is-live=true pattern=ball !
 *             video/x-raw,format=NV12,width=1920,height=1080,framerate=60/1
 *             ! gpusharesink socket-path=DIR/sock
 *   consumer  gpusharesrc transport=cuda ! capsfilter name=cf ! fakesink
 *
 * The capsfilter's caps go from video/x-raw(memory:CUDAMemory) to
 * video/x-raw and back, twice, while frames flow; each change sends a
 * RECONFIGURE upstream as a relink does.  In each phase the consumer must
 * get PHASE_BUFFERS buffers in the memory asked for: CUDA memory under the
 * CUDA caps, and system memory of the tight NV12 size (3110400 bytes)
 * under the system caps.  After the first buffer of the new memory, none
 * of the old may follow; the src's "output-memory" stat must agree; and no
 * error may be posted (before the fix, the src offered its old CUDA caps
 * again and the pipeline failed as not-negotiated).
 *
 * Prints one SKIP line and exits 77 where no usable GPU, VMM export or
 * one of the elements is missing.
 */

#include <gst/gst.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gpu-test-util.h"

#define START_TIMEOUT_MS 20000
#define PHASE_TIMEOUT_MS 5000
#define CONNECTION_TIMEOUT_MS 5000
#define PHASE_BUFFERS 30
#define TIGHT_NV12_1080P (1920 * 1080 * 3 / 2)
#define CONSUMER_ALARM_S 120
#define PRODUCER_ALARM_S 150
#define CUDA_MEMORY_TYPE "gst.cuda.memory"

enum
{
  CTL_READY = 'R',              /* producer -> consumer: frames flow */
  CTL_END = 'E',                /* consumer -> producer: stop */
};

/* ------------------------------------------------------------------------ */
/* producer */

static gint
producer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GstElement *pipeline, *sink;
  gboolean bus_ok = TRUE;
  GstBus *bus;
  GpuTestCtl m;

  pipeline = gpu_test_producer_pipeline (path, 60, &sink);
  if (!pipeline)
    return 1;
  bus = gst_element_get_bus (pipeline);
  if (!gpu_test_producer_play (pipeline, sink, bus, START_TIMEOUT_MS)
      || !gpu_test_ctl_send (ctl, CTL_READY, 0))
    return 1;
  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    gint r = poll (&pfd, 1, 100);

    bus_ok = gpu_test_drain_bus ("producer", bus) && bus_ok;
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue;
    /* the end, or the consumer went away: either way the test is over */
    gpu_test_ctl_recv (ctl, &m, 0);
    break;
  }
  g_print ("producer: frames rendered %" G_GUINT64_FORMAT ", to GPU %"
      G_GUINT64_FORMAT "; %s\n", gpu_test_stat_u64 (sink, "frames-rendered"),
      gpu_test_stat_u64 (sink, "frames-to-gpu"),
      bus_ok ? "no error posted: PASS" : "errors posted: FAIL");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  close (ctl);
  return bus_ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* consumer */

typedef struct
{
  GMutex lock;
  GCond cond;
  gboolean want_cuda;
  guint wanted;                 /* buffers in the memory asked for */
  guint stale;                  /* old memory after the first new one */
  guint bad_caps;               /* caps feature and memory disagree */
  guint bad_size;               /* system buffers not tightly packed */
} Counts;

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Counts *c = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstCapsFeatures *f = caps ? gst_caps_get_features (caps, 0) : NULL;
  gboolean cuda = gst_buffer_n_memory (buf) > 0
      && gst_memory_is_type (gst_buffer_peek_memory (buf, 0),
      CUDA_MEMORY_TYPE);
  gboolean caps_cuda = f && gst_caps_features_contains (f, "memory:CUDAMemory");

  g_mutex_lock (&c->lock);
  if (cuda != caps_cuda)
    c->bad_caps++;
  if (!cuda && gst_buffer_get_size (buf) != TIGHT_NV12_1080P)
    c->bad_size++;
  if (cuda == c->want_cuda)
    c->wanted++;
  else if (c->wanted > 0)
    c->stale++;
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
  gst_clear_caps (&caps);
  return GST_PAD_PROBE_OK;
}

/* one phase: the capsfilter's caps set, PHASE_BUFFERS buffers in that
 * memory awaited */
static gboolean
run_phase (GstElement * src, GstElement * cf, GstBus * bus, Counts * c,
    gboolean cuda, guint n)
{
  gint64 end = g_get_monotonic_time () + PHASE_TIMEOUT_MS * 1000;
  const gchar *want = cuda ? "video/x-raw(memory:CUDAMemory)" : "video/x-raw";
  GstCaps *caps = gst_caps_from_string (want);
  guint wanted, stale, bad_caps, bad_size, vmm = 0;
  gchar *out, *other = NULL;
  gboolean ok, bus_ok;

  g_mutex_lock (&c->lock);
  c->want_cuda = cuda;
  c->wanted = c->stale = c->bad_caps = c->bad_size = 0;
  g_mutex_unlock (&c->lock);
  g_object_set (cf, "caps", caps, NULL);
  gst_caps_unref (caps);

  g_mutex_lock (&c->lock);
  while (c->wanted < PHASE_BUFFERS)
    if (!g_cond_wait_until (&c->cond, &c->lock, end))
      break;
  wanted = c->wanted;
  stale = c->stale;
  bad_caps = c->bad_caps;
  bad_size = c->bad_size;
  g_mutex_unlock (&c->lock);

  out = gpu_test_stat_string (src, "output-memory");
  bus_ok = gpu_test_drain_consumer_bus (bus, &vmm, &other, TRUE);
  ok = wanted >= PHASE_BUFFERS && stale == 0 && bad_caps == 0
      && bad_size == 0 && bus_ok
      && strcmp (out, cuda ? "CUDAMemory" : "system") == 0;
  g_print ("consumer: phase %u, capsfilter %s: %u buffers in %s memory, "
      "%u of the old memory after them, %u with caps that disagree, %u "
      "system buffers not of %u bytes, output-memory %s, %s: %s\n", n, want,
      wanted, cuda ? "CUDA" : "system", stale, bad_caps, bad_size,
      TIGHT_NV12_1080P, out, bus_ok ? "no error" : "an error posted",
      ok ? "PASS" : "FAIL");
  g_free (out);
  g_free (other);
  return ok;
}

static gint
consumer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GError *error = NULL;
  GstElement *pipeline, *src, *cf, *sink;
  gboolean ok = TRUE;
  gchar *desc, *mem;
  Counts c;
  GstBus *bus;
  GstPad *pad;
  guint i;

  memset (&c, 0, sizeof (c));
  g_mutex_init (&c.lock);
  g_cond_init (&c.cond);
  c.want_cuda = TRUE;
  if (!gpu_test_ctl_expect (ctl, CTL_READY, NULL, START_TIMEOUT_MS)) {
    g_print ("consumer: the producer did not start\n");
    return 1;
  }
  desc = g_strdup_printf ("gpusharesrc name=src socket-path=\"%s\" "
      "connection-timeout=%u transport=cuda ! "
      "capsfilter name=cf caps=video/x-raw(memory:CUDAMemory) ! "
      "fakesink name=sink sync=false enable-last-sample=false", path,
      CONNECTION_TIMEOUT_MS);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("consumer: %s\n", error->message);
    g_clear_error (&error);
    return 1;
  }
  gst_pipeline_set_auto_flush_bus (GST_PIPELINE (pipeline), FALSE);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  cf = gst_bin_get_by_name (GST_BIN (pipeline), "cf");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &c, NULL);
  gst_object_unref (pad);
  bus = gst_element_get_bus (pipeline);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    g_print ("consumer: the pipeline did not start\n");
    ok = FALSE;
  }
  /* CUDA, system, CUDA, system, CUDA */
  for (i = 0; ok && i < 5; i++)
    ok = run_phase (src, cf, bus, &c, i % 2 == 0, i + 1);
  mem = gpu_test_stat_string (src, "memory-type");
  g_print ("consumer: transport %s: %s\n", mem,
      strcmp (mem, "cuda-vmm") == 0 ? "PASS" : "FAIL");
  ok = ok && strcmp (mem, "cuda-vmm") == 0;
  g_free (mem);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gpu_test_ctl_send (ctl, CTL_END, 0);
  close (ctl);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (cf);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return ok ? 0 : 1;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  gchar *dir, *path;
  GpuTestRole producer_role = { "producer", producer, NULL, PRODUCER_ALARM_S };
  GpuTestRole consumer_role = { "consumer", consumer, NULL, CONSUMER_ALARM_S };
  gboolean ok;

  setvbuf (stdout, NULL, _IOLBF, 0);
  if (gpu_test_probe_in_child (GPU_TEST_NEED_VMM_FD | GPU_TEST_NEED_ELEMENTS))
    return GPU_TEST_SKIP;

  dir = g_dir_make_tmp ("gpushare-relink-XXXXXX", &error);
  if (!dir) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  path = g_build_filename (dir, "sock", NULL);
  producer_role.data = path;
  consumer_role.data = path;
  ok = gpu_test_run_pair (&producer_role, &consumer_role,
      GPU_TEST_PAIR_REAP_CONSUMER_FIRST, &error);
  if (error) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s\n", ok ? "PASS: every check passed" : "FAIL: see above");
  return ok ? 0 : 1;
}

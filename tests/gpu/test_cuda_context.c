/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA context is shared with the neighbouring CUDA elements through
 * GStreamer's context query, on both sides:
 *
 *   filesrc ! qtdemux ! h264parse ! nvh264dec ! gpusharesink
 *   gpusharesrc ! video/x-raw(memory:CUDAMemory) ! cudadownload ! fakesink
 *
 * Once a decoded frame has gone through, the "gst.cuda.context" context
 * that gpusharesink answers is the very GstCudaContext object nvh264dec
 * answers, and gpusharesrc's is cudadownload's: one CUDA context per GPU
 * and process, not one per element.  And that context is the device's
 * primary context, the one gpushare's rings and views work in: the
 * elements did not make one of their own (cuCtxCreate) beside it.
 *
 * usage: test_cuda_context CLIP.  Prints one SKIP line and exits 77 where
 * there is no GPU or no nvh264dec.
 */

#include "config.h"

#include <stdio.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/gst.h>

#include "gpusharecuda.h"
#include "gpusharecudaloader.h"
#include "gpusharegstcuda.h"
#include "gpu-test-util.h"

#define SKIP 77
#define TIMEOUT_S 30

static gint frames;

static GstPadProbeReturn
count_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  g_atomic_int_inc (&frames);
  return GST_PAD_PROBE_OK;
}

/* the GstCudaContext wraps GPU 0's primary context */
static gboolean
is_primary (const gchar * who, GObject * ctx)
{
  const GpuShareCudaApi *cu;
  CUcontext primary = NULL;
  CUdevice dev;
  gboolean ok;

  if (!ctx || !gpushare_cuda_load (NULL) || !gpushare_gst_cuda_load (NULL)) {
    g_print ("%s: no CUDA context to look at: FAIL\n", who);
    return FALSE;
  }
  cu = gpushare_cuda ();
  if (cu->cuDeviceGet (&dev, 0) != CUDA_SUCCESS
      || cu->cuDevicePrimaryCtxRetain (&primary, dev) != CUDA_SUCCESS) {
    g_print ("%s: no primary context: FAIL\n", who);
    return FALSE;
  }
  ok = gpushare_gst_cuda_context_get_handle (GST_OBJECT (ctx)) == primary;
  cu->cuDevicePrimaryCtxRelease (dev);
  g_print ("%s: the shared CUDA context is the device's primary context, "
      "as gpushare's own: %s\n", who, ok ? "PASS" : "FAIL");
  return ok;
}

/* the GstCudaContext a pad answers for "gst.cuda.context", or NULL */
static GObject *
context_of (GstElement * bin, const gchar * name, const gchar * pad_name)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (bin), name);
  GstPad *pad = e ? gst_element_get_static_pad (e, pad_name) : NULL;
  GstQuery *q = gst_query_new_context ("gst.cuda.context");
  GObject *obj = NULL;
  GstContext *ctx = NULL;

  if (pad && gst_pad_query (pad, q)) {
    gst_query_parse_context (q, &ctx);
    if (ctx) {
      const GValue *v = gst_structure_get_value (gst_context_get_structure
          (ctx), "gst.cuda.context");

      if (v && G_VALUE_HOLDS_OBJECT (v))
        obj = g_value_dup_object (v);
    }
  }
  gst_query_unref (q);
  gst_clear_object (&pad);
  gst_clear_object (&e);
  return obj;
}

static gboolean
check (const gchar * what, GObject * a, GObject * b)
{
  gboolean ok = a && a == b;

  g_print ("%s: %s (%s)\n", what, ok ? "PASS" : "FAIL", !a || !b ?
      "a context is missing" : a == b ? "the same GstCudaContext" :
      "two different contexts");
  return ok;
}

int
main (int argc, char **argv)
{
  GstElement *consumer, *producer;
  GObject *dec, *sink, *src, *down;
  GError *error = NULL;
  GstElement *fakesink;
  GstPad *pad;
  gchar *sock, *desc, *dir;
  gint64 deadline;
  gint failures = 0;

  if (argc < 2) {
    g_printerr ("usage: %s CLIP\n", argv[0]);
    return 64;
  }
  if (gpu_test_probe_in_child (GPU_TEST_NEED_GPU) != 0)
    return SKIP;
  gst_init (&argc, &argv);
  if (!gst_registry_check_feature_version (gst_registry_get (), "nvh264dec",
          1, 0, 0) || !gst_registry_check_feature_version (gst_registry_get (),
          "cudadownload", 1, 0, 0)) {
    g_print ("SKIP: nvh264dec or cudadownload is missing\n");
    return SKIP;
  }

  dir = g_dir_make_tmp ("gpushare-ctx-XXXXXX", NULL);
  sock = g_build_filename (dir, "ctx.sock", NULL);
  consumer = gst_parse_launch ("gpusharesrc name=src transport=cuda ! "
      "video/x-raw(memory:CUDAMemory) ! cudadownload name=down ! "
      "fakesink name=out sync=false", &error);
  g_assert_no_error (error);
  {
    GstElement *e = gst_bin_get_by_name (GST_BIN (consumer), "src");

    g_object_set (e, "socket-path", sock, "connection-timeout",
        TIMEOUT_S * 1000, NULL);
    gst_object_unref (e);
  }
  desc = g_strdup_printf ("filesrc location=\"%s\" ! qtdemux ! h264parse ! "
      "nvh264dec name=dec ! gpusharesink name=sink wait-for-connection=true "
      "socket-path=\"%s\"", argv[1], sock);
  producer = gst_parse_launch (desc, &error);
  g_assert_no_error (error);
  g_free (desc);

  fakesink = gst_bin_get_by_name (GST_BIN (consumer), "out");
  pad = gst_element_get_static_pad (fakesink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, NULL, NULL);
  gst_object_unref (pad);
  gst_object_unref (fakesink);

  gst_element_set_state (consumer, GST_STATE_PLAYING);
  gst_element_set_state (producer, GST_STATE_PLAYING);
  deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
  while (g_atomic_int_get (&frames) < 5 && g_get_monotonic_time () < deadline)
    g_usleep (10000);
  if (g_atomic_int_get (&frames) < 5) {
    g_print ("FAIL: no decoded frame reached the consumer\n");
    failures++;
  } else {
    dec = context_of (producer, "dec", "src");
    sink = context_of (producer, "sink", "sink");
    src = context_of (consumer, "src", "src");
    down = context_of (consumer, "down", "sink");
    failures += !check ("producer: gpusharesink shares nvh264dec's CUDA "
        "context", dec, sink);
    failures += !check ("consumer: gpusharesrc shares cudadownload's CUDA "
        "context", down, src);
    failures += !is_primary ("producer", sink);
    failures += !is_primary ("consumer", src);
    g_clear_object (&dec);
    g_clear_object (&sink);
    g_clear_object (&src);
    g_clear_object (&down);
  }

  gst_element_set_state (producer, GST_STATE_NULL);
  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_object_unref (producer);
  gst_object_unref (consumer);
  g_unlink (sock);
  g_rmdir (dir);
  g_free (sock);
  g_free (dir);
  g_print ("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}

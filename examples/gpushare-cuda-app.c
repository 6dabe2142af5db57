/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-cuda-app: an application that reads gpushare's GPU frames in
 * place, with no copy, on any GStreamer version (1.22 included, whose CUDA
 * memory cannot wrap device memory): the route of gst/gpushare/
 * gpusharemeta.h.
 *
 *   gpusharesrc socket-path=SOCKET transport=cuda !
 *       video/x-raw(memory:GpuShareCUDA) ! appsink
 *
 * Each buffer carries a GstGpuShareCudaMeta: the device address of the
 * producer's slot in this process and the frame's layout in it.  For each
 * frame this program reads the frame where it is, on the GPU of the meta,
 * with the CUDA driver API: it copies the first and last row of every
 * plane to the host (a real application would launch its kernel on the
 * planes instead), waits for that copy, and only then drops the buffer,
 * which gives the slot back to the producer.
 *
 *   gpushare-cuda-app SOCKET [--frames N] [--timeout MS] [--expect Y,U,V]
 *
 * Waits for the producer as long as --timeout says (gpusharesrc's
 * connection-timeout, 10000 ms by default), then prints one line per frame
 * (its timestamp and the mean of the rows read) and a last line with the
 * count.  With --expect, every byte read must be within 2 of the value
 * given for its plane (Y, then the interleaved U and V of NV12, or U and V
 * of I420): the test of this route feeds it a white picture.
 *
 * Exits with 0 when it read every frame asked for (--frames), or the whole
 * stream and at least one frame; otherwise with 1 and the reason on
 * stderr: no producer, a producer that cannot give GPU memory here, a
 * stream that ended early, a CUDA call that failed, bytes that differ
 * from --expect.  64: wrong usage.
 */

#include <gst/gst.h>
#include <gst/video/video.h>
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* installed with the plugin: pkg-config --cflags gpushare-1.0 */
#include <gst/gpushare/gpusharemeta.h>

static gboolean
cuda_ok (CUresult r, const gchar * what)
{
  const char *name = NULL;

  if (r == CUDA_SUCCESS)
    return TRUE;
  cuGetErrorName (r, &name);
  g_printerr ("%s failed: %s\n", what, name ? name : "?");
  return FALSE;
}

/* the visible bytes of a row of plane p */
static guint
row_bytes (const GstGpuShareCudaMeta * m, guint p)
{
  const GstVideoFormatInfo *finfo = gst_video_format_get_info (m->format);
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  guint i, w = 0;

  gst_video_format_info_component (finfo, p, comp);
  for (i = 0; i < GST_VIDEO_MAX_COMPONENTS && comp[i] >= 0; i++) {
    guint cw = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH (finfo, comp[i], m->width);

    w = MAX (w, cw * GST_VIDEO_FORMAT_INFO_PSTRIDE (finfo, comp[i]));
  }
  return w;
}

static guint
plane_rows (const GstGpuShareCudaMeta * m, guint p)
{
  const GstVideoFormatInfo *finfo = gst_video_format_get_info (m->format);
  gint comp[GST_VIDEO_MAX_COMPONENTS];

  gst_video_format_info_component (finfo, p, comp);
  return GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT (finfo, comp[0], m->height);
}

/* reads the first and last row of every plane of the frame, on the GPU;
 * checks them against expect (NULL: no check); their mean in *mean */
static gboolean
read_frame (const GstGpuShareCudaMeta * m, CUstream stream,
    const gint * expect, gdouble * mean, guint * bad)
{
  guint8 *host = NULL;
  guint64 sum = 0, n = 0;
  gboolean ok = TRUE;
  guint p, r, x;

  for (p = 0; ok && p < m->n_planes; p++) {
    guint bytes = row_bytes (m, p), rows = plane_rows (m, p);
    guint which[2] = { 0, rows - 1 };

    host = g_realloc (host, bytes);
    for (r = 0; ok && r < 2; r++) {
      CUdeviceptr row = (CUdeviceptr) (m->device_ptr + m->offset[p] +
          (guint64) which[r] * m->stride[p]);

      ok = cuda_ok (cuMemcpyDtoHAsync (host, row, bytes, stream),
          "cuMemcpyDtoHAsync")
          && cuda_ok (cuStreamSynchronize (stream), "cuStreamSynchronize");
      for (x = 0; ok && x < bytes; x++) {
        gint want = expect ? expect[MIN (p == 0 ? 0 : (m->n_planes == 2 ?
                    1 + x % 2 : p), 2)] : -1;

        sum += host[x];
        n++;
        if (want >= 0 && ABS ((gint) host[x] - want) > 2)
          (*bad)++;
      }
    }
  }
  g_free (host);
  *mean = n ? (gdouble) sum / n : 0;
  return ok;
}

/* the CUDA of the slot's GPU, started at the first frame: the primary
 * context, the one gpushare maps the slots in */
static gboolean
cuda_start (gint device, CUdevice * dev, CUcontext * ctx, CUstream * stream)
{
  return cuda_ok (cuInit (0), "cuInit")
      && cuda_ok (cuDeviceGet (dev, device), "cuDeviceGet")
      && cuda_ok (cuDevicePrimaryCtxRetain (ctx, *dev),
      "cuDevicePrimaryCtxRetain")
      && cuda_ok (cuCtxSetCurrent (*ctx), "cuCtxSetCurrent")
      && cuda_ok (cuStreamCreate (stream, CU_STREAM_NON_BLOCKING),
      "cuStreamCreate");
}

int
main (int argc, char **argv)
{
  gint frames = 0, timeout = 10000, expect[3] = { -1, -1, -1 };
  gchar *expect_str = NULL, *desc, *failure = NULL;
  GOptionEntry entries[] = {
    {"frames", 0, 0, G_OPTION_ARG_INT, &frames, "Stop after N frames", "N"},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &timeout,
          "How long to wait for the producer (gpusharesrc's connection-timeout)",
        "MS"},
    {"expect", 0, 0, G_OPTION_ARG_STRING, &expect_str,
        "The value every byte of each plane must have", "Y,U,V"},
    {NULL}
  };
  GOptionContext *octx = g_option_context_new ("SOCKET");
  GError *error = NULL;
  GstElement *pipeline, *sink;
  GstBus *bus;
  CUcontext cu_ctx = NULL;
  CUstream stream = NULL;
  CUdevice dev = 0;
  gint device = -1, n = 0;
  guint bad = 0;

  g_option_context_add_main_entries (octx, entries, NULL);
  g_option_context_add_group (octx, gst_init_get_option_group ());
  if (!g_option_context_parse (octx, &argc, &argv, &error) || argc != 2
      || frames < 0 || timeout < 0) {
    g_printerr ("%s\n", error ? error->message : "usage: gpushare-cuda-app "
        "SOCKET [--frames N] [--timeout MS] [--expect Y,U,V]");
    return 64;
  }
  g_option_context_free (octx);
  if (expect_str
      && sscanf (expect_str, "%d,%d,%d", &expect[0], &expect[1],
          &expect[2]) != 3) {
    g_printerr ("--expect takes three values: Y,U,V\n");
    return 64;
  }

  desc = g_strdup_printf ("gpusharesrc socket-path=\"%s\" transport=cuda "
      "connection-timeout=%d ! video/x-raw(memory:%s) ! "
      "appsink name=sink sync=false max-buffers=2", argv[1], timeout,
      "GpuShareCUDA");
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_printerr ("%s\n", error->message);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  while (!failure && (frames == 0 || n < frames)) {
    GstSample *sample = NULL;
    GstGpuShareCudaMeta *m;
    GstMessage *msg;
    GstBuffer *buf;
    gdouble mean = 0;
    gboolean eos;

    /* short pulls: the bus is looked at in between (an error there is the
     * reason: no producer, no GPU memory here) */
    g_signal_emit_by_name (sink, "try-pull-sample", GST_SECOND / 10, &sample);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (msg) {
      GError *err = NULL;
      gchar *debug = NULL, *why;

      /* the message, and why: the debug text after its location line */
      gst_message_parse_error (msg, &err, &debug);
      why = debug ? strchr (debug, '\n') : NULL;
      failure = why ? g_strdup_printf ("%s: %s", err->message, why + 1) :
          g_strdup (err->message);
      g_error_free (err);
      g_free (debug);
      gst_message_unref (msg);
    }
    if (failure || !sample) {
      g_object_get (sink, "eos", &eos, NULL);
      if (!failure && eos) {
        if (frames)
          failure = g_strdup_printf ("the stream ended after %d of %d "
              "frames", n, frames);
        else if (n == 0)
          failure = g_strdup ("the stream ended before any frame");
        break;
      }
      if (sample)
        gst_sample_unref (sample);
      continue;
    }
    buf = gst_sample_get_buffer (sample);
    m = gst_buffer_get_gpu_share_cuda_meta (buf);
    if (!m)
      failure = g_strdup ("a buffer without GstGpuShareCudaMeta");
    else if (m->device != device && cu_ctx)
      failure = g_strdup ("the frames moved to another GPU");
    else if (m->device != device) {
      device = m->device;
      if (!cuda_start (device, &dev, &cu_ctx, &stream))
        failure = g_strdup ("CUDA could not start on the frames' GPU");
    }
    /* read where it is; the copy is waited for before the buffer goes */
    if (!failure && !read_frame (m, stream, expect_str ? expect : NULL, &mean,
            &bad))
      failure = g_strdup ("a frame could not be read");
    if (!failure)
      g_print ("frame %d pts=%" GST_TIME_FORMAT " %ux%u %s, rows read on GPU "
          "%d: mean %.1f\n", n++, GST_TIME_ARGS (GST_BUFFER_PTS (buf)),
          m->width, m->height, gst_video_format_to_string (m->format),
          m->device, mean);
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  if (stream)
    cuStreamDestroy (stream);
  if (cu_ctx)
    cuDevicePrimaryCtxRelease (dev);
  if (!failure && bad)
    failure = g_strdup_printf ("%u bytes read differ from --expect", bad);
  g_print ("%d frames read in place\n", n);
  g_free (expect_str);
  if (failure) {
    g_printerr ("error: %s\n", failure);
    g_free (failure);
    return 1;
  }
  return 0;
}

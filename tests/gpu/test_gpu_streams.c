/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GStreamer 1.24 and later: CUDA memory ordered on a stream, and GPU slots
 * handed downstream in place.
 *
 *   producer  appsrc (CUDA memory that carries a GstCudaStream) !
 *             gpusharesink policy=lossless
 *   consumer  gpusharesrc transport=cuda io-mode=copy ! video/x-raw ! appsink
 *   consumer  gpusharesrc transport=cuda io-mode=import !
 *             video/x-raw(memory:CUDAMemory) ! appsink
 *
 * The producer writes each frame as a 1.24 element does: on its own CUDA
 * stream (in the device's primary context, which gpushare's ring uses
 * too), without waiting, and pushes the memory with the NEED_SYNC flag
 * set.  Its stream is busy: the fill is queued behind a kernel that spins
 * for SPIN_MS (spin.cu).
 * gpusharesink must wait for that stream before it reads the frame: a
 * reader that does not (a GST_MAP_CUDA map does not wait) copies the frame
 * before it is written, which every frame here would show.  Frame i is
 * filled with the byte value(i) in every plane.
 *
 * Case 1, io-mode=copy: every frame arrives, in order, with its value in
 * every byte, and the stats say frames-copied = FRAMES.
 * Case 2, io-mode=import: every buffer is read-only CUDA memory; every frame
 * arrives with its value; the stats say io=in-place and frames-in-place +
 * frames-copied = FRAMES with frames-in-place > 0; and the first HELD
 * buffers, kept unread until every other frame went through the 8-slot
 * ring, still hold their own frames when read at the end (their slots
 * were not given back to the producer while held), and the producer could
 * go on meanwhile.
 *
 * Each case runs with sync-mode=host and semaphore (import also with
 * event); copy also with sync-mode=auto, where the consumer must pick
 * semaphore words and say why (a consumer that copies every frame).
 * With semaphore and event sync the sink must not wait on the host at
 * all: its copy waits for upstream's stream on the device, and
 * upstream's stream waits for the copy; the producer checks that the
 * sink's write-us-p50 stays under half the spin, and that most frames
 * reached the sink while their stream was still busy (a pad probe asks
 * the stream), without which nothing here would be tested.  With host
 * sync the sink waits for the copy before it sends the frame: the
 * consumer's check of every value is what fails if it does not.
 *
 * Skips with one line where there is no GPU, no nvcodec, or GStreamer's
 * CUDA library is 1.22's (no streams, no wrapped memory).
 */

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gmodule.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gpu-test-util.h"
#include "gpusharecudaloader.h"
#include "gpusharegstcuda.h"
#include "spin-ptx.h"

#define FRAMES 40
#define HELD 2
#define WIDTH 1920
#define HEIGHT 1080
/* how long each frame's stream is busy before its fill */
#define SPIN_MS 20
#define TIMEOUT_MS 60000
#define CHILD_ALARM_S 180
/* GST_CUDA_MEMORY_TRANSFER_NEED_SYNC of 1.24 */
#define NEED_SYNC (GST_MEMORY_FLAG_LAST << 2)

static guint8
value (guint i)
{
  return (guint8) (17 + 29 * i);
}

/* 1.24's calls a producer element makes, opened here */
typedef gpointer (*StreamNewFunc) (GstObject * ctx);
typedef CUstream (*StreamGetHandleFunc) (gpointer stream);
typedef void (*StreamUnrefFunc) (gpointer stream);
typedef GstMemory *(*AllocWrappedFunc) (GstAllocator * allocator,
    GstObject * context, gpointer stream, const GstVideoInfo * info,
    CUdeviceptr dev_ptr, gpointer user_data, GDestroyNotify notify);

typedef struct
{
  StreamNewFunc stream_new;
  StreamGetHandleFunc stream_get_handle;
  StreamUnrefFunc stream_unref;
  AllocWrappedFunc alloc_wrapped;
} Api124;

static gboolean
open_api (Api124 * api)
{
  GModule *m = g_module_open (GPUSHARE_GST_CUDA_LIBNAME,
      G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);

  return m
      && g_module_symbol (m, "gst_cuda_stream_new",
      (gpointer *) & api->stream_new)
      && g_module_symbol (m, "gst_cuda_stream_get_handle",
      (gpointer *) & api->stream_get_handle)
      && g_module_symbol (m, "gst_cuda_stream_unref",
      (gpointer *) & api->stream_unref)
      && g_module_symbol (m, "gst_cuda_allocator_alloc_wrapped",
      (gpointer *) & api->alloc_wrapped);
}

/* ------------------------------------------------------------------------ */
/* probe */

static gint
probe (gint sock, gpointer data)
{
  GError *error = NULL;
  const gchar *nv[] = { "cudadownload", "appsrc", "appsink" };

  gst_init (NULL, NULL);
  if (!gpushare_cuda_load (&error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    return GPU_TEST_SKIP;
  }
  if (!gpushare_gst_cuda_load (&error)) {
    g_print ("SKIP: %s\n", error->message);
    return GPU_TEST_SKIP;
  }
  if (gpushare_gst_cuda_abi () != GPUSHARE_GST_CUDA_ABI_1_24) {
    g_print ("SKIP: GStreamer's CUDA library is 1.22's: no streams, no "
        "wrapped memory\n");
    return GPU_TEST_SKIP;
  }
  if (!gpu_test_have_elements (nv, G_N_ELEMENTS (nv)))
    return GPU_TEST_SKIP;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* producer */

typedef struct
{
  const gchar *path;
  const gchar *io_mode;
  const gchar *sync_mode;
} Args;

typedef struct
{
  GstObject *ctx;
  CUstream stream;
  CUdeviceptr ptr;
} Frame;

/* A frame's memory is freed at the end, after its stream was synchronised:
 * a synchronisation when each buffer goes, on the sink's streaming thread,
 * would wait for the frames queued after it too, and hide whether the
 * sink itself waited on the host. */
static GMutex done_lock;
static GSList *done_frames;

static void
frame_done (gpointer data)
{
  g_mutex_lock (&done_lock);
  done_frames = g_slist_prepend (done_frames, data);
  g_mutex_unlock (&done_lock);
}

/* frames that reached the sink while their stream was still busy: the
 * premise of the checks on the sink's waits */
typedef struct
{
  CUcontext ctx;
  CUstream stream;
  guint busy;
} BusyProbe;

static GstPadProbeReturn
busy_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  BusyProbe *b = data;
  const GpuShareCudaApi *cu = gpushare_cuda ();

  cu->cuCtxPushCurrent (b->ctx);
  if (cu->cuStreamQuery (b->stream) == CUDA_ERROR_NOT_READY)
    b->busy++;
  gpushare_cuda_pop ();
  return GST_PAD_PROBE_OK;
}

/* the stream synchronised */
static void
frame_free (gpointer data)
{
  Frame *f = data;
  const GpuShareCudaApi *cu = gpushare_cuda ();

  cu->cuCtxPushCurrent (gpushare_gst_cuda_context_get_handle (f->ctx));
  cu->cuMemFree (f->ptr);
  gpushare_cuda_pop ();
  gst_object_unref (f->ctx);
  g_free (f);
}

static gint
producer (gint ctl, gpointer data)
{
  Args *a = data;
  const GpuShareCudaApi *cu;
  GError *error = NULL;
  GstElement *pipeline, *src;
  GstObject *ctx;
  GstVideoInfo info;
  GstMessage *msg;
  CUmodule module = NULL;
  CUfunction spin = NULL;
  CUcontext handle, primary;
  CUdevice dev;
  gpointer stream;
  CUstream sh;
  Api124 api;
  gchar *desc;
  GstBus *bus;
  gboolean ok = TRUE;
  BusyProbe busy = { NULL, };
  guint i;

  if (!gpushare_cuda_load (&error) || !gpushare_gst_cuda_load (&error)
      || !open_api (&api)) {
    g_print ("producer: %s\n", error ? error->message : "no 1.24 calls");
    return 1;
  }
  cu = gpushare_cuda ();
  /* the device's primary context, as gpushare's own ring: one context in
   * the process, so that nothing but the stream orders the work (a copy
   * between two contexts may be ordered by the driver) */
  if (cu->cuDeviceGet (&dev, 0) != CUDA_SUCCESS
      || cu->cuDevicePrimaryCtxRetain (&primary, dev) != CUDA_SUCCESS) {
    g_print ("producer: no primary context\n");
    return 1;
  }
  ctx = gpushare_gst_cuda_context_new_wrapped (primary, dev);
  stream = ctx ? api.stream_new (ctx) : NULL;
  if (!stream) {
    g_print ("producer: no CUDA context or stream\n");
    return 1;
  }
  sh = api.stream_get_handle (stream);
  handle = gpushare_gst_cuda_context_get_handle (ctx);
  cu->cuCtxPushCurrent (handle);
  if (cu->cuModuleLoadData (&module, spin_ptx) != CUDA_SUCCESS
      || cu->cuModuleGetFunction (&spin, module, "gpushare_spin") !=
      CUDA_SUCCESS) {
    g_print ("producer: cannot load the spin kernel\n");
    return 1;
  }
  gpushare_cuda_pop ();

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, WIDTH, HEIGHT);
  /* two frames queued at most: each frame's work is queued on the stream
   * just before the frame reaches the sink */
  desc = g_strdup_printf ("appsrc name=src format=time max-buffers=2 "
      "block=true "
      "caps=\"video/x-raw(memory:CUDAMemory),format=NV12,width=%u,"
      "height=%u,framerate=30/1\" ! gpusharesink name=sink "
      "socket-path=\"%s\" "
      "wait-for-connection=true policy=lossless ring-size=8", WIDTH, HEIGHT,
      a->path);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  bus = gst_element_get_bus (pipeline);
  busy.ctx = handle;
  busy.stream = sh;
  {
    GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    GstPad *pad = gst_element_get_static_pad (sink, "sink");

    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, busy_probe, &busy, NULL);
    gst_object_unref (pad);
    gst_object_unref (sink);
  }
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  gpu_test_ctl_send (ctl, 'R', 0);

  for (i = 0; i < FRAMES && ok; i++) {
    Frame *f = g_new0 (Frame, 1);
    GstFlowReturn ret;
    GstMemory *mem;
    GstBuffer *buf;

    f->ctx = gst_object_ref (ctx);
    f->stream = sh;
    cu->cuCtxPushCurrent (handle);
    ok = cu->cuMemAlloc (&f->ptr, GST_VIDEO_INFO_SIZE (&info)) == CUDA_SUCCESS;
    /* a stale value first, then, SPIN_MS of work later, the frame's own:
     * as a decoder that has not finished */
    if (ok)
      ok = cu->cuMemsetD8Async (f->ptr, 0, GST_VIDEO_INFO_SIZE (&info),
          sh) == CUDA_SUCCESS && cu->cuStreamSynchronize (sh) == CUDA_SUCCESS;
    if (ok) {
      guint64 ns = SPIN_MS * G_GUINT64_CONSTANT (1000000);
      gpointer args[] = { &ns };

      ok = cu->cuLaunchKernel (spin, 1, 1, 1, 1, 1, 1, 0, sh, args, NULL) ==
          CUDA_SUCCESS;
    }
    if (ok)
      ok = cu->cuMemsetD8Async (f->ptr, value (i),
          GST_VIDEO_INFO_SIZE (&info), sh) == CUDA_SUCCESS;
    gpushare_cuda_pop ();
    if (!ok) {
      g_print ("producer: a CUDA call failed at frame %u\n", i);
      frame_free (f);
      break;
    }
    mem = api.alloc_wrapped (NULL, ctx, stream, &info, f->ptr, f, frame_done);
    GST_MINI_OBJECT_FLAG_SET (mem, NEED_SYNC);
    buf = gst_buffer_new ();
    gst_buffer_append_memory (buf, mem);
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_FORMAT_NV12, WIDTH, HEIGHT, 2, info.offset, info.stride);
    GST_BUFFER_PTS (buf) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
    g_signal_emit_by_name (src, "push-buffer", buf, &ret);
    gst_buffer_unref (buf);
    ok = ret == GST_FLOW_OK;
  }
  {
    GstFlowReturn ret;

    g_signal_emit_by_name (src, "end-of-stream", &ret);
  }
  msg = gst_bus_timed_pop_filtered (bus, TIMEOUT_MS * GST_MSECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!msg) {
    g_print ("producer: no EOS within %u ms\n", TIMEOUT_MS);
    ok = FALSE;
  } else if (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_EOS) {
    gpu_test_print_error_message ("producer", msg);
    ok = FALSE;
  }
  gst_clear_message (&msg);
  /* the consumer says when it has checked the frames it held */
  gpu_test_ctl_expect (ctl, 'E', NULL, TIMEOUT_MS);
  {
    GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    guint write_us = gpu_test_stat_uint (sink, "write-us-p50");
    guint publish_us = gpu_test_stat_uint (sink, "publish-us-p50");
    guint wait_us = gpu_test_stat_uint (sink, "slot-wait-us-p50");
    guint device_p50 = gpu_test_stat_uint (sink, "device-wait-us-p50");
    guint device_p99 = gpu_test_stat_uint (sink, "device-wait-us-p99");
    guint64 spun = gpu_test_stat_u64 (sink, "device-wait-spin-us");
    gboolean device_only = strcmp (a->sync_mode, "host") != 0;

    /* the sink orders the copy after upstream's stream, and upstream's
     * next work after the copy, on the device: it returns upstream's
     * buffer at once.  Only a consumer that reads on the host's word
     * makes it wait for the copy, and then before the frame is sent */
    g_print ("producer (%s sync): %u of %u frames reached the sink with "
        "their stream busy; sink slot wait p50 %u us, write p50 %u us, "
        "publish p50 %u us (upstream's stream busy for %u ms per frame)\n",
        a->sync_mode, busy.busy, FRAMES, wait_us, write_us, publish_us,
        SPIN_MS);
    /* with host sync the sink waits for each busy frame's copy before it
     * sends it, and the next frame may come after its stream finished:
     * about half of them are busy (19 of 40 on the H200), enough for the
     * consumer's check of every value to see a frame sent too early */
    if (busy.busy < (device_only ? FRAMES / 2 : FRAMES / 4)) {
      g_print ("producer: too few frames reached the sink before their "
          "stream finished: the sink's waits are not tested\n");
      ok = FALSE;
    }
    /* the stats say what the host waited for the device, and how much
     * of it spun: nothing with device sync, a busy stream's work (over
     * SPIN_MS / 2 for some frame) with host sync, the spin bounded by
     * its 200 us a wait, two waits a frame at most */
    g_print ("producer (%s sync): device wait p50 %u us, p99 %u us, %"
        G_GUINT64_FORMAT " us spent spinning\n", a->sync_mode, device_p50,
        device_p99, spun);
    if (device_only ? device_p99 >= SPIN_MS * 1000 / 2
        : device_p99 < SPIN_MS * 1000 / 2 || spun == 0
        || spun > (guint64) FRAMES * 450) {
      g_print ("producer: the device-wait stats do not say what the host "
          "waited for\n");
      ok = FALSE;
    }
    if (device_only && write_us >= SPIN_MS * 1000 / 2) {
      g_print ("producer: the sink waited on the host for upstream's "
          "stream, with %s sync\n", a->sync_mode);
      ok = FALSE;
    }
    gst_object_unref (sink);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (pipeline);
  /* the last reference to the stream destroys it: synchronise first */
  cu->cuCtxPushCurrent (handle);
  cu->cuStreamSynchronize (sh);
  cu->cuModuleUnload (module);
  gpushare_cuda_pop ();
  g_slist_free_full (g_steal_pointer (&done_frames), frame_free);
  api.stream_unref (stream);
  gst_object_unref (ctx);
  cu->cuDevicePrimaryCtxRelease (dev);
  g_print ("producer: %u frames pushed, each written on its stream behind "
      "%u ms of work: %s\n", i, SPIN_MS, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* consumer */

/* every visible byte of the frame is v: how many are not */
static guint
check_frame (GstBuffer * buf, GstCaps * caps, guint8 v)
{
  GstVideoFrame frame;
  GstVideoInfo info;
  guint bad = 0, p, x, y;

  if (!gst_video_info_from_caps (&info, caps)
      || !gst_video_frame_map (&frame, &info, buf, GST_MAP_READ))
    return G_MAXUINT;
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    guint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    guint w = GST_VIDEO_FRAME_COMP_WIDTH (&frame, p) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, p);
    guint h = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, p);

    for (y = 0; y < h; y++)
      for (x = 0; x < w; x++)
        bad += d[(gsize) y * stride + x] != v;
  }
  gst_video_frame_unmap (&frame);
  return bad;
}

static gint
consumer (gint ctl, gpointer data)
{
  Args *a = data;
  gboolean import = strcmp (a->io_mode, "import") == 0;
  GError *error = NULL;
  GstElement *pipeline, *src, *sink;
  GstBuffer *held[HELD] = { NULL, };
  GstCaps *held_caps = NULL;
  guint n = 0, wrong = 0, not_cuda = 0, writable = 0, i;
  guint64 in_place, copied;
  gchar *desc, *io, *sync, *reason;
  gboolean ok;

  if (!gpu_test_ctl_expect (ctl, 'R', NULL, TIMEOUT_MS))
    return 1;
  desc = g_strdup_printf ("gpusharesrc name=src socket-path=\"%s\" "
      "transport=cuda sync-mode=%s io-mode=%s max-in-place=6 ! %s ! "
      "appsink name=sink sync=false", a->path, a->sync_mode, a->io_mode,
      import ? "video/x-raw(memory:CUDAMemory)" : "video/x-raw");
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("consumer: %s\n", error->message);
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (;;) {
    GstSample *sample = NULL;
    GstBuffer *buf;
    GstMemory *mem;

    g_signal_emit_by_name (sink, "try-pull-sample",
        (guint64) TIMEOUT_MS * GST_MSECOND, &sample);
    if (!sample)
      break;
    buf = gst_sample_get_buffer (sample);
    mem = gst_buffer_peek_memory (buf, 0);
    if (import) {
      not_cuda += !gpushare_gst_cuda_is_cuda_memory (mem);
      writable += !GST_MEMORY_IS_READONLY (mem);
    }
    if (import && n < HELD) {
      /* kept unread: read only once every other frame went through */
      held[n] = gst_buffer_ref (buf);
      gst_caps_replace (&held_caps, gst_sample_get_caps (sample));
    } else if (check_frame (buf, gst_sample_get_caps (sample), value (n))) {
      if (wrong++ < 3)
        g_print ("consumer: frame %u is not all %u\n", n, value (n));
    }
    n++;
    gst_sample_unref (sample);
  }
  for (i = 0; i < HELD; i++) {
    if (!held[i])
      continue;
    if (check_frame (held[i], held_caps, value (i))) {
      g_print ("consumer: held frame %u changed while it was held\n", i);
      wrong++;
    }
    gst_buffer_unref (held[i]);
  }
  gst_clear_caps (&held_caps);
  in_place = gpu_test_stat_u64 (src, "frames-in-place");
  copied = gpu_test_stat_u64 (src, "frames-copied");
  io = gpu_test_stat_string (src, "io");
  sync = gpu_test_stat_string (src, "sync-mode");
  reason = gpu_test_stat_string (src, "memory-reason");
  gpu_test_ctl_send (ctl, 'E', 0);
  gst_element_set_state (pipeline, GST_STATE_NULL);

  if (import)
    ok = n == FRAMES && wrong == 0 && not_cuda == 0 && writable == 0
        && in_place > 0 && in_place + copied == FRAMES
        && strcmp (io, "in-place") == 0;
  else
    ok = n == FRAMES && wrong == 0 && copied == FRAMES && in_place == 0
        && strcmp (io, "copy") == 0;
  /* sync-mode=auto where the consumer copies: semaphore words, with or
   * without MPS, and the reason says why */
  if (strcmp (a->sync_mode, "auto") == 0) {
    gboolean semaphore = strcmp (sync, "semaphore") == 0
        && (strstr (reason, "(auto: no MPS, io-mode=copy)")
        || strstr (reason, "(auto: MPS is on)"));

    g_print ("consumer, io-mode=%s sync-mode=auto: sync-mode %s, reason "
        "\"%s\": %s\n", a->io_mode, sync, reason, semaphore ? "PASS" : "FAIL");
    ok = ok && semaphore;
  }
  g_print ("consumer, io-mode=%s: %u/%u frames, %u not all their value, "
      "%u not CUDA memory, %u writable; io=%s, frames-in-place %"
      G_GUINT64_FORMAT ", frames-copied %" G_GUINT64_FORMAT "%s: %s\n",
      a->io_mode, n, FRAMES, wrong, not_cuda, writable, io, in_place, copied,
      import ? "; the first two frames read after the others went through "
      "the ring" : "", ok ? "PASS" : "FAIL");
  g_free (io);
  g_free (sync);
  g_free (reason);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return ok ? 0 : 1;
}

int
main (int argc, char **argv)
{
  /* io-mode, sync-mode */
  const gchar *modes[][2] = { {"copy", "host"}, {"import", "host"},
  {"copy", "semaphore"}, {"import", "semaphore"}, {"import", "event"},
  {"copy", "auto"}
  };
  GError *error = NULL;
  gboolean ok = TRUE;
  gchar *dir;
  gint rc;
  guint m;

  setvbuf (stdout, NULL, _IOLBF, 0);
  rc = gpu_test_probe_with (probe);
  if (rc != 0)
    return rc;
  dir = g_dir_make_tmp ("gpushare-streams-XXXXXX", &error);
  if (!dir) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gchar *path = g_strdup_printf ("%s/%s-%s.sock", dir, modes[m][0],
        modes[m][1]);
    Args args = { path, modes[m][0], modes[m][1] };
    GpuTestRole p = { "producer", producer, &args, CHILD_ALARM_S };
    GpuTestRole c = { "consumer", consumer, &args, CHILD_ALARM_S };

    if (!gpu_test_run_pair (&p, &c, 0, &error)) {
      if (error)
        g_print ("FAIL: %s\n", error->message);
      g_clear_error (&error);
      ok = FALSE;
    }
    g_unlink (path);
    g_free (path);
  }
  g_rmdir (dir);
  g_free (dir);
  g_print ("%s\n", ok ? "PASS: every check passed" : "FAIL: see above");
  return ok ? 0 : 1;
}

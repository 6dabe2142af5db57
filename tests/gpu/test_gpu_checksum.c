/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frames checked where they are, in GPU memory, on both sides of a
 * gpusharesink -> gpusharesrc transfer between two real processes.
 *
 *   producer: videotestsrc pattern=ball ! NV12 ! cudaupload
 *             ! gpusharesink policy=lossless      (probe on its sink pad)
 *   consumer: gpusharesrc transport=cuda sync-mode=MODE
 *             ! video/x-raw(memory:CUDAMemory) ! fakesink   (probe)
 *
 * Each probe runs the kernel of checksum.cu on every plane of every frame,
 * in place (a GPUSHARE_MAP_CUDA map, no copy, no download), and writes
 * "frame OFFSET SUM0 SUM1" to a file.  The parent, which never touches
 * CUDA, then wants every frame on both sides, in the same order, with the
 * same checksums; and consecutive producer frames must differ (the ball
 * moves), so that a stale frame, a torn one, a frame from the wrong slot or
 * rows out of place all show.  The first frame of each side is also
 * downloaded once and summed on the CPU, to check the kernel itself.
 *
 * The kernel runs in the CUDA context the memory belongs to (in GStreamer
 * 1.22 each GstCudaContext is its own cuCtxCreate context; with unified
 * addressing copies cross contexts, kernels are not promised to), on a
 * non-blocking stream of ours, so that it waits for nothing the elements
 * did not wait for themselves.
 *
 * 1080p and 4K NV12 in each sync mode (host, semaphore, event).  Prints
 * one PASS or FAIL line per case; one SKIP line and exit 77 without a GPU
 * or without GStreamer's nvcodec plugin.  fork() happens before any CUDA
 * call: fork after cuInit is unsupported.
 *
 * usage: test_gpu_checksum [FRAMES]
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpusharecuda.h"
#include "gpusharecudaring.h"
#include "gpusharegstcuda.h"
#include "gpu-test-util.h"
/* checksum_ptx[]: checksum.cu as PTX, NUL-terminated (bin2c) */
#include "checksum-ptx.h"

#define SKIP 77
#define DEFAULT_FRAMES 200
#define KERNEL_NAME "gpushare_checksum"
/* threads a block (a multiple of 32, see checksum.cu) and the most blocks:
 * the kernel loops over what a grid does not cover */
#define BLOCK_SIZE 256
#define MAX_BLOCKS 1024
/* a case takes seconds; six stuck ones must still fit meson's 600 s */
#define BUS_TIMEOUT (60 * GST_SECOND)
#define CASE_TIMEOUT_S 90
/* once one side failed, how long the other may take to notice */
#define PEER_GRACE_S 20

typedef struct
{
  const gchar *name;
  guint width;
  guint height;
} Size;

static const Size sizes[] = {
  {"1080p NV12", 1920, 1080},
  {"4K NV12", 3840, 2160},
};

static const struct
{
  const gchar *name;
  GpuShareSyncMode bit;
} modes[] = {
  {"host", GPUSHARE_SYNC_HOST},
  {"semaphore", GPUSHARE_SYNC_SEMAPHORE},
  {"event", GPUSHARE_SYNC_EVENT},
};

/* ------------------------------------------------------------------------ */
/* the checksum on the CPU: the same function as checksum.cu */

static guint64
mix64 (guint64 z)
{
  z += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static guint64
cpu_checksum (const guint8 * plane, gsize pitch, guint row_bytes, guint rows)
{
  guint64 words_per_row = (row_bytes + 3) / 4, sum = 0;
  guint y, x, b;

  for (y = 0; y < rows; y++) {
    const guint8 *row = plane + (gsize) y * pitch;

    for (x = 0; x < row_bytes; x += 4) {
      guint64 k = (guint64) y * words_per_row + x / 4;
      guint32 w = 0;

      for (b = 0; b < 4 && x + b < row_bytes; b++)
        w |= (guint32) row[x + b] << (8 * b);
      sum += mix64 ((k << 32) | w);
    }
  }
  return sum;
}

/* the visible bytes of a row of @plane, and its rows */
static void
plane_geometry (const GstVideoFrame * frame, guint plane, guint * row_bytes,
    guint * rows)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;
  guint c;

  for (c = 0; c < GST_VIDEO_FORMAT_INFO_N_COMPONENTS (finfo); c++) {
    if (GST_VIDEO_FORMAT_INFO_PLANE (finfo, c) == plane) {
      *row_bytes = GST_VIDEO_FRAME_COMP_WIDTH (frame, c) *
          GST_VIDEO_FRAME_COMP_PSTRIDE (frame, c);
      *rows = GST_VIDEO_FRAME_COMP_HEIGHT (frame, c);
      return;
    }
  }
  *row_bytes = 0;
  *rows = 0;
}

/* ------------------------------------------------------------------------ */
/* the checksum on the GPU, from a pad probe */

/* the kernel, loaded in one CUDA context */
typedef struct
{
  GstObject *gst_ctx;           /* a ref: keeps the CUcontext alive */
  CUcontext ctx;
  CUmodule module;
  CUfunction fn;
  CUstream stream;
  CUdeviceptr sums;             /* GST_VIDEO_MAX_PLANES 64-bit sums */
} Kernel;

typedef struct
{
  FILE *out;
  GstCaps *caps;                /* what info was made from */
  GstVideoInfo info;
  GPtrArray *kernels;           /* Kernel *, one per context seen */
  guint frames;
  gboolean cpu_checked;
  gboolean failed;
} Checker;

static void
kernel_free (gpointer data)
{
  Kernel *k = data;
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUcontext dummy;

  if (k->ctx && cu->cuCtxPushCurrent (k->ctx) == CUDA_SUCCESS) {
    if (k->stream)
      cu->cuStreamSynchronize (k->stream);
    if (k->sums)
      cu->cuMemFree (k->sums);
    if (k->stream)
      cu->cuStreamDestroy (k->stream);
    if (k->module)
      cu->cuModuleUnload (k->module);
    cu->cuCtxPopCurrent (&dummy);
  }
  gst_clear_object (&k->gst_ctx);
  g_free (k);
}

static Kernel *
get_kernel (Checker * c, GstObject * gst_ctx, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUcontext ctx = gpushare_gst_cuda_context_get_handle (gst_ctx);
  CUcontext dummy;
  Kernel *k;
  gboolean ok;
  guint i;

  for (i = 0; i < c->kernels->len; i++) {
    k = g_ptr_array_index (c->kernels, i);
    if (k->ctx == ctx)
      return k;
  }
  if (!ctx) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "the CUDA memory's context has no CUcontext");
    return NULL;
  }
  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (ctx), "cuCtxPushCurrent",
          error))
    return NULL;

  k = g_new0 (Kernel, 1);
  k->gst_ctx = gst_object_ref (gst_ctx);
  k->ctx = ctx;
  /* the driver JIT-compiles the PTX for this GPU; the result is cached */
  ok = gpushare_cuda_check (cu->cuModuleLoadData (&k->module, checksum_ptx),
      "cuModuleLoadData", error)
      && gpushare_cuda_check (cu->cuModuleGetFunction (&k->fn, k->module,
          KERNEL_NAME), "cuModuleGetFunction", error)
      && gpushare_cuda_check (cu->cuStreamCreate (&k->stream,
          CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)
      && gpushare_cuda_check (cu->cuMemAlloc (&k->sums,
          sizeof (guint64) * GST_VIDEO_MAX_PLANES), "cuMemAlloc", error);
  cu->cuCtxPopCurrent (&dummy);
  if (!ok) {
    kernel_free (k);
    return NULL;
  }
  g_ptr_array_add (c->kernels, k);
  return k;
}

/* one kernel launch a plane, then one copy of the sums back */
static gboolean
gpu_checksums (Kernel * k, GstVideoFrame * frame, guint64 * sums,
    GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  guint n = GST_VIDEO_FRAME_N_PLANES (frame), p;
  CUcontext dummy;
  gboolean ok;

  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (k->ctx),
          "cuCtxPushCurrent", error))
    return FALSE;
  ok = gpushare_cuda_check (cu->cuMemsetD32Async (k->sums, 0,
          2 * GST_VIDEO_MAX_PLANES, k->stream), "cuMemsetD32Async", error);
  for (p = 0; ok && p < n; p++) {
    CUdeviceptr plane =
        (CUdeviceptr) (guintptr) GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    guint64 pitch = (guint64) GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
    CUdeviceptr sum = k->sums + p * sizeof (guint64);
    guint row_bytes, rows;
    guint64 words;
    guint blocks;
    void *args[5];

    plane_geometry (frame, p, &row_bytes, &rows);
    words = (guint64) (row_bytes + 3) / 4 * rows;
    blocks = (guint) MIN ((words + BLOCK_SIZE - 1) / BLOCK_SIZE, MAX_BLOCKS);
    args[0] = &plane;
    args[1] = &pitch;
    args[2] = &row_bytes;
    args[3] = &rows;
    args[4] = &sum;
    ok = gpushare_cuda_check (cu->cuLaunchKernel (k->fn, MAX (blocks, 1), 1,
            1, BLOCK_SIZE, 1, 1, 0, k->stream, args, NULL), "cuLaunchKernel",
        error);
  }
  ok = ok && gpushare_cuda_check (cu->cuMemcpyDtoHAsync (sums, k->sums,
          n * sizeof (guint64), k->stream), "cuMemcpyDtoHAsync", error)
      && gpushare_cuda_check (cu->cuStreamSynchronize (k->stream),
      "cuStreamSynchronize", error);
  cu->cuCtxPopCurrent (&dummy);
  return ok;
}

/* the kernel checked once against the CPU, on a downloaded copy */
static gboolean
cpu_check (Checker * c, GstBuffer * buf, const guint64 * sums, GError ** error)
{
  GstVideoFrame frame;
  guint p;

  if (!gst_video_frame_map (&frame, &c->info, buf, GST_MAP_READ)) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "cannot map the frame for the CPU");
    return FALSE;
  }
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    guint row_bytes, rows;
    guint64 want;

    plane_geometry (&frame, p, &row_bytes, &rows);
    want = cpu_checksum (GST_VIDEO_FRAME_PLANE_DATA (&frame, p),
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p), row_bytes, rows);
    if (want != sums[p]) {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "plane %u: the GPU checksum is %016" G_GINT64_MODIFIER "x, the "
          "CPU's %016" G_GINT64_MODIFIER "x", p, sums[p], want);
      gst_video_frame_unmap (&frame);
      return FALSE;
    }
  }
  gst_video_frame_unmap (&frame);
  return TRUE;
}

static gboolean
checksum_buffer (Checker * c, GstPad * pad, GstBuffer * buf, guint64 * sums,
    guint * n_planes, GError ** error)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstObject *gst_ctx = NULL;
  GstVideoFrame frame;
  Kernel *k;
  gboolean ok;

  if (caps && (!c->caps || !gst_caps_is_equal (caps, c->caps))) {
    if (!gst_video_info_from_caps (&c->info, caps)) {
      gst_caps_unref (caps);
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "caps that are no raw video");
      return FALSE;
    }
    gst_caps_replace (&c->caps, caps);
  }
  if (caps)
    gst_caps_unref (caps);
  if (!c->caps) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "a buffer before caps");
    return FALSE;
  }
  if (gst_buffer_n_memory (buf) == 1)
    gst_ctx = gpushare_gst_cuda_memory_get_context (gst_buffer_peek_memory
        (buf, 0));
  if (!gst_ctx) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "the buffer is not one GstCudaMemory");
    return FALSE;
  }
  if (!(k = get_kernel (c, gst_ctx, error)))
    return FALSE;
  /* in place: plane data are CUdeviceptrs, strides the pitch; 1.24+:
   * after the writer's stream finished */
  gpushare_gst_cuda_memory_sync (gst_buffer_peek_memory (buf, 0));
  if (!gst_video_frame_map (&frame, &c->info, buf,
          GST_MAP_READ | GPUSHARE_MAP_CUDA)) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "cannot map the frame's CUDA memory");
    return FALSE;
  }
  *n_planes = GST_VIDEO_FRAME_N_PLANES (&frame);
  ok = gpu_checksums (k, &frame, sums, error);
  gst_video_frame_unmap (&frame);
  if (ok && !c->cpu_checked) {
    ok = cpu_check (c, buf, sums, error);
    c->cpu_checked = ok;
    if (ok)
      fprintf (c->out, "cpu-check ok\n");
  }
  return ok;
}

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Checker *c = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  guint64 sums[GST_VIDEO_MAX_PLANES];
  GError *error = NULL;
  guint n = 0, p;

  if (c->failed)
    return GST_PAD_PROBE_OK;
  if (!checksum_buffer (c, pad, buf, sums, &n, &error)) {
    fprintf (c->out, "error at frame %u: %s\n", c->frames, error->message);
    g_clear_error (&error);
    c->failed = TRUE;
    return GST_PAD_PROBE_OK;
  }
  fprintf (c->out, "frame %" G_GUINT64_FORMAT, GST_BUFFER_OFFSET (buf));
  for (p = 0; p < n; p++)
    fprintf (c->out, " %016" G_GINT64_MODIFIER "x", sums[p]);
  fputc ('\n', c->out);
  c->frames++;
  return GST_PAD_PROBE_OK;
}

/* ------------------------------------------------------------------------ */
/* one side, in its own process */

static void
write_stats (FILE * out, GstElement * src)
{
  GstStructure *s = NULL;
  const gchar *mem, *sync, *output, *reason;

  g_object_get (src, "stats", &s, NULL);
  if (!s) {
    fprintf (out, "stats none\n");
    return;
  }
  mem = gst_structure_get_string (s, "memory-type");
  sync = gst_structure_get_string (s, "sync-mode");
  output = gst_structure_get_string (s, "output-memory");
  reason = gst_structure_get_string (s, "memory-reason");
  fprintf (out, "stats %s %s %s\nreason %s\n", mem ? mem : "?",
      sync ? sync : "?", output ? output : "?", reason ? reason : "?");
  gst_structure_free (s);
}

/* runs @launch until EOS; the element named "checked" has the probe and,
 * with @stats, the one named "src" is asked for its stats */
static gint
run_side (const gchar * launch, const gchar * out_path, gboolean stats)
{
  GError *error = NULL;
  GstElement *pipeline, *checked, *src;
  GstMessage *msg;
  GstPad *pad;
  GstBus *bus;
  Checker c = { 0, };
  gint rc = 1;

  if (!(c.out = fopen (out_path, "w")))
    return 1;
  /* what was written survives a kill after the time limit */
  setvbuf (c.out, NULL, _IOLBF, 0);
  gst_init (NULL, NULL);
  if (!gpushare_cuda_load (&error) || !gpushare_gst_cuda_load (&error)) {
    fprintf (c.out, "error: %s\n", error->message);
    g_clear_error (&error);
    fclose (c.out);
    return 1;
  }
  c.kernels = g_ptr_array_new_with_free_func (kernel_free);
  pipeline = gst_parse_launch (launch, &error);
  if (error) {
    /* a pipeline may come back with a recoverable error: refused too */
    fprintf (c.out, "error: %s\n", error->message);
    g_clear_error (&error);
    gst_clear_object (&pipeline);
    goto done;
  }
  checked = gst_bin_get_by_name (GST_BIN (pipeline), "checked");
  pad = gst_element_get_static_pad (checked, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &c, NULL);
  gst_object_unref (pad);
  gst_object_unref (checked);

  bus = gst_element_get_bus (pipeline);
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE)
    fprintf (c.out, "error: the pipeline does not start\n");
  msg = gst_bus_timed_pop_filtered (bus, BUS_TIMEOUT,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!msg) {
    fprintf (c.out, "error: no EOS after %" GST_TIME_FORMAT "\n",
        GST_TIME_ARGS (BUS_TIMEOUT));
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *debug = NULL;

    gst_message_parse_error (msg, &error, &debug);
    fprintf (c.out, "error from %s: %s (%s)\n", GST_MESSAGE_SRC_NAME (msg),
        error->message, debug ? debug : "");
    g_clear_error (&error);
    g_free (debug);
  } else {
    rc = c.failed || c.frames == 0;
  }
  g_clear_pointer (&msg, gst_message_unref);
  gst_object_unref (bus);
  if (stats && (src = gst_bin_get_by_name (GST_BIN (pipeline), "src"))) {
    write_stats (c.out, src);
    gst_object_unref (src);
  }
  /* stops the streaming threads first: the probe is done with the kernels,
   * whose contexts our refs keep alive until they are freed */
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);

done:
  g_ptr_array_unref (c.kernels);
  gst_clear_caps (&c.caps);
  fclose (c.out);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* the parent: no CUDA here */

/* in a child: SKIP (printed) or 0 with the usable sync modes written to
 * @fd */
static gint
probe_child (gint fd, gpointer data)
{
  GpuShareCudaApi *cu;
  GpuShareCudaCaps caps;
  GError *error = NULL;
  const gchar *factories[] = { "gpusharesink", "gpusharesrc" };
  GstPluginFeature *f;
  CUcontext ctx, dummy;
  CUmodule module;
  CUfunction fn;
  CUdevice dev;
  CUresult res;
  guint32 modes_mask;
  guint i;

  if (!gpushare_cuda_probe (0, &caps, &error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    g_clear_error (&error);
    return SKIP;
  }
  if (!caps.vmm || !caps.posix_fd) {
    g_print ("SKIP: %s cannot export VMM memory as file descriptors\n",
        caps.name);
    return SKIP;
  }
  gst_init (NULL, NULL);
  for (i = 0; i < G_N_ELEMENTS (factories); i++) {
    if (!(f = GST_PLUGIN_FEATURE (gst_element_factory_find (factories[i])))) {
      g_print ("FAIL: %s not found (GST_PLUGIN_PATH_1_0=%s)\n", factories[i],
          g_getenv ("GST_PLUGIN_PATH_1_0"));
      return 1;
    }
    gst_object_unref (f);
  }
  if (!(f = GST_PLUGIN_FEATURE (gst_element_factory_find ("cudaupload")))) {
    g_print ("SKIP: GStreamer's nvcodec plugin (cudaupload) is missing\n");
    return SKIP;
  }
  gst_object_unref (f);
  if (!gpushare_gst_cuda_load (&error)) {
    g_print ("SKIP: %s\n", error->message);
    g_clear_error (&error);
    return SKIP;
  }

  /* the PTX must JIT on this GPU and driver: say so once, here */
  cu = gpushare_cuda ();
  if (cu->cuDeviceGet (&dev, 0) != CUDA_SUCCESS
      || cu->cuDevicePrimaryCtxRetain (&ctx, dev) != CUDA_SUCCESS) {
    g_print ("FAIL: cannot retain the primary context\n");
    return 1;
  }
  cu->cuCtxPushCurrent (ctx);
  res = cu->cuModuleLoadData (&module, checksum_ptx);
  if (res == CUDA_SUCCESS) {
    res = cu->cuModuleGetFunction (&fn, module, KERNEL_NAME);
    cu->cuModuleUnload (module);
  }
  cu->cuCtxPopCurrent (&dummy);
  cu->cuDevicePrimaryCtxRelease (dev);
  if (res != CUDA_SUCCESS) {
    g_print ("FAIL: the checksum kernel does not load: %s\n",
        gpushare_cuda_result_to_string (res));
    return 1;
  }

  modes_mask = gpushare_cuda_sync_modes (&caps);
  g_print ("device: %s, driver %d, compute mode %d; checksum kernel JIT "
      "from PTX ok\n", caps.name, caps.driver_version, caps.compute_mode);
  if (write (fd, &modes_mask, sizeof (modes_mask)) != sizeof (modes_mask))
    return 1;
  return 0;
}

/* one side of a case, in its child */
typedef struct
{
  const gchar *launch;
  const gchar *out_path;
  gboolean stats;
} Side;

static gint
side_child (gint sock, gpointer data)
{
  const Side *side = data;

  return run_side (side->launch, side->out_path, side->stats);
}

static gchar *
status_to_string (gint status, gboolean killed)
{
  if (killed)
    return g_strdup ("killed after the time limit");
  if (WIFEXITED (status))
    return g_strdup_printf ("exit %d", WEXITSTATUS (status));
  if (WIFSIGNALED (status))
    return g_strdup_printf ("signal %d", WTERMSIG (status));
  return g_strdup ("?");
}

static gboolean
status_ok (gint status, gboolean killed)
{
  return !killed && WIFEXITED (status) && WEXITSTATUS (status) == 0;
}

/* waits for both, with a time limit; a side that outlives it is killed */
static void
wait_both (pid_t pid[2], gint status[2], gboolean killed[2])
{
  gint64 deadline = g_get_monotonic_time () + CASE_TIMEOUT_S * G_USEC_PER_SEC;
  gboolean done[2] = { FALSE, FALSE };
  guint i;

  while (!done[0] || !done[1]) {
    for (i = 0; i < 2; i++) {
      if (done[i] || waitpid (pid[i], &status[i], WNOHANG) != pid[i])
        continue;
      done[i] = TRUE;
      if (!status_ok (status[i], FALSE))
        deadline = MIN (deadline,
            g_get_monotonic_time () + PEER_GRACE_S * G_USEC_PER_SEC);
    }
    if (done[0] && done[1])
      break;
    if (g_get_monotonic_time () > deadline) {
      for (i = 0; i < 2; i++) {
        if (done[i])
          continue;
        kill (pid[i], SIGKILL);
        waitpid (pid[i], &status[i], 0);
        killed[i] = TRUE;
        done[i] = TRUE;
      }
      break;
    }
    g_usleep (20 * 1000);
  }
}

typedef struct
{
  GPtrArray *frames;            /* "OFFSET SUM0 SUM1" */
  GPtrArray *errors;
  gchar *stats;
  gchar *reason;
  gboolean cpu_ok;
} SideLog;

static void
side_log_read (SideLog * log, const gchar * path)
{
  gchar *text = NULL, **lines, **l;

  log->frames = g_ptr_array_new_with_free_func (g_free);
  log->errors = g_ptr_array_new_with_free_func (g_free);
  if (!g_file_get_contents (path, &text, NULL, NULL)) {
    g_ptr_array_add (log->errors, g_strdup ("no log written"));
    return;
  }
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l; l++) {
    if (g_str_has_prefix (*l, "frame "))
      g_ptr_array_add (log->frames, g_strdup (*l + 6));
    else if (g_str_has_prefix (*l, "error"))
      g_ptr_array_add (log->errors, g_strdup (*l));
    else if (g_str_has_prefix (*l, "stats "))
      log->stats = g_strdup (*l + 6);
    else if (g_str_has_prefix (*l, "reason "))
      log->reason = g_strdup (*l + 7);
    else if (!strcmp (*l, "cpu-check ok"))
      log->cpu_ok = TRUE;
  }
  g_strfreev (lines);
  g_free (text);
}

static void
side_log_clear (SideLog * log)
{
  g_ptr_array_unref (log->frames);
  g_ptr_array_unref (log->errors);
  g_free (log->stats);
  g_free (log->reason);
}

/* the checksums of a frame line, without its offset */
static const gchar *
sums_of (const gchar * line)
{
  const gchar *s = strchr (line, ' ');

  return s ? s : "";
}

static gboolean
run_case (const gchar * dir, guint index, const Size * size,
    const gchar * mode, guint frames)
{
  gchar *sock = g_strdup_printf ("%s/c%u.sock", dir, index);
  gchar *plog_path = g_strdup_printf ("%s/c%u-producer.log", dir, index);
  gchar *clog_path = g_strdup_printf ("%s/c%u-consumer.log", dir, index);
  gchar *desc = g_strdup_printf ("%s, sync-mode=%s", size->name, mode);
  gchar *want_stats = g_strdup_printf ("cuda-vmm %s CUDAMemory", mode);
  gchar *plaunch, *claunch, *pst, *cst;
  SideLog plog = { 0, }, clog = { 0, };
  Side pside = { NULL, plog_path, FALSE }, cside = { NULL, clog_path, TRUE };
  GpuTestRole producer = { NULL, side_child, &pside, 0 };
  GpuTestRole consumer = { NULL, side_child, &cside, 0 };
  pid_t pid[2];
  gint status[2] = { 0, 0 };
  gboolean killed[2] = { FALSE, FALSE };
  guint n, i, repeats = 0, first_diff = G_MAXUINT, n_diff = 0;
  gboolean pass;

  plaunch = g_strdup_printf ("videotestsrc num-buffers=%u pattern=ball ! "
      "video/x-raw,format=NV12,width=%u,height=%u,framerate=30/1 ! "
      "cudaupload ! video/x-raw(memory:CUDAMemory) ! "
      "gpusharesink name=checked socket-path=\"%s\" "
      "wait-for-connection=true policy=lossless sync=false",
      frames, size->width, size->height, sock);
  claunch = g_strdup_printf ("gpusharesrc name=src socket-path=\"%s\" "
      "transport=cuda sync-mode=%s connection-timeout=60000 ! "
      "video/x-raw(memory:CUDAMemory) ! fakesink name=checked sync=false",
      sock, mode);
  pside.launch = plaunch;
  cside.launch = claunch;

  /* index 0: producer, 1: consumer; the consumer waits for the socket */
  pid[1] = gpu_test_fork (&consumer, -1, -1);
  pid[0] = gpu_test_fork (&producer, -1, -1);
  wait_both (pid, status, killed);

  side_log_read (&plog, plog_path);
  side_log_read (&clog, clog_path);
  n = MIN (plog.frames->len, clog.frames->len);
  for (i = 0; i < n; i++) {
    if (strcmp (g_ptr_array_index (plog.frames, i),
            g_ptr_array_index (clog.frames, i))) {
      n_diff++;
      first_diff = MIN (first_diff, i);
    }
  }
  /* the ball moves every frame: equal neighbours mean a stale frame */
  for (i = 1; i < plog.frames->len; i++)
    if (!strcmp (sums_of (g_ptr_array_index (plog.frames, i)),
            sums_of (g_ptr_array_index (plog.frames, i - 1))))
      repeats++;

  pass = status_ok (status[0], killed[0]) && status_ok (status[1], killed[1])
      && plog.errors->len == 0 && clog.errors->len == 0
      && plog.frames->len == frames && clog.frames->len == frames
      && n_diff == 0 && repeats == 0 && plog.cpu_ok && clog.cpu_ok
      && !g_strcmp0 (clog.stats, want_stats);

  pst = status_to_string (status[0], killed[0]);
  cst = status_to_string (status[1], killed[1]);
  if (pass) {
    g_print ("PASS %s: %u/%u frames, same order, same GPU checksums on both "
        "sides, %u repeated; kernel = CPU on frame 0; %s (%s)\n", desc,
        clog.frames->len, plog.frames->len, repeats, clog.stats,
        clog.reason ? clog.reason : "");
  } else {
    g_print ("FAIL %s: producer %u frames (%s), consumer %u (%s), want %u; "
        "%u differ", desc, plog.frames->len, pst, clog.frames->len, cst,
        frames, n_diff);
    if (n_diff)
      g_print (" (first at #%u: producer \"%s\", consumer \"%s\")",
          first_diff, (gchar *) g_ptr_array_index (plog.frames, first_diff),
          (gchar *) g_ptr_array_index (clog.frames, first_diff));
    g_print ("; %u repeated producer frames; CPU check %s/%s; stats \"%s\", "
        "want \"%s\"\n", repeats, plog.cpu_ok ? "ok" : "missing",
        clog.cpu_ok ? "ok" : "missing", clog.stats ? clog.stats : "none",
        want_stats);
    for (i = 0; i < MIN (plog.errors->len, 3); i++)
      g_print ("  producer: %s\n", (gchar *) g_ptr_array_index (plog.errors,
              i));
    for (i = 0; i < MIN (clog.errors->len, 3); i++)
      g_print ("  consumer: %s\n", (gchar *) g_ptr_array_index (clog.errors,
              i));
  }

  side_log_clear (&plog);
  side_log_clear (&clog);
  g_unlink (plog_path);
  g_unlink (clog_path);
  g_unlink (sock);
  g_free (pst);
  g_free (cst);
  g_free (plaunch);
  g_free (claunch);
  g_free (want_stats);
  g_free (desc);
  g_free (clog_path);
  g_free (plog_path);
  g_free (sock);
  return pass;
}

int
main (int argc, char **argv)
{
  guint frames = DEFAULT_FRAMES, failures = 0, ran = 0, index = 0, s, m;
  guint32 modes_mask = 0;
  gint status = 0, fds[2], rc;
  GpuTestRole probe = { NULL, probe_child, NULL, 0 };
  gchar *dir;

  if (argc > 1 && (frames = (guint) g_ascii_strtoull (argv[1], NULL, 10)) < 2) {
    g_printerr ("usage: %s [FRAMES >= 2]\n", argv[0]);
    return 2;
  }
#ifdef GPUSHARE_BUILD_PLUGIN_DIR
  /* run by hand: the plugin just built, as meson's test env says */
  g_setenv ("GST_PLUGIN_PATH_1_0", GPUSHARE_BUILD_PLUGIN_DIR, FALSE);
#endif

  /* gst_init is left to the children too: a registry rescan in this
   * process could load the nvcodec plugin, which initialises CUDA */
  if (pipe (fds) < 0)
    return 1;
  /* a few bytes: the child does not wait for us to read them */
  rc = gpu_test_wait_child (&probe, fds[1], fds[0], &status);
  close (fds[1]);
  if (rc == SKIP) {
    close (fds[0]);
    return SKIP;
  }
  if (rc != 0
      || read (fds[0], &modes_mask, sizeof (modes_mask)) !=
      sizeof (modes_mask)) {
    gchar *st = status_to_string (status, FALSE);

    g_print ("FAIL: the GPU probe process failed (%s)\n", st);
    g_free (st);
    close (fds[0]);
    return 1;
  }
  close (fds[0]);

  dir = g_dir_make_tmp ("gpushare-cksum-XXXXXX", NULL);
  if (!dir)
    return 1;
  for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
    for (m = 0; m < G_N_ELEMENTS (modes); m++, index++) {
      if (!(modes_mask & modes[m].bit)) {
        g_print ("N/A %s, sync-mode=%s: the GPU does not support it\n",
            sizes[s].name, modes[m].name);
        continue;
      }
      ran++;
      if (!run_case (dir, index, &sizes[s], modes[m].name, frames))
        failures++;
    }
  }
  g_rmdir (dir);
  g_free (dir);

  if (ran == 0) {
    g_print ("SKIP: the GPU supports none of the sync modes\n");
    return SKIP;
  }
  g_print ("%u of %u cases passed\n", ran - failures, ran);
  return failures ? 1 : 0;
}

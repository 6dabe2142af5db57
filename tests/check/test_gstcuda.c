/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The run-time binding to GStreamer's libgstcuda (gpusharegstcuda.[ch]).
 *
 * On a host without a GPU (CI): the library loads, every wrapper that would
 * need the driver answers NULL/FALSE without crashing or hanging (libgstcuda
 * 1.22 asserts when its loader did not run, and hangs on the second call
 * after a failed cuInit), plain memory is no CUDA memory, and the context
 * sharing calls (set_context, context query) work against the real library
 * with a GstCudaContext object made without a driver.  On a host with a GPU
 * the same binary also checks what the header promises about 1.22: a pool
 * that needs caps, adds GstVideoMeta with one pitch for every plane, and maps
 * with GPUSHARE_MAP_CUDA to a device pointer.
 *
 * Exits 77 (skip) when libgstcuda-1.0.so.0 is not installed.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gmodule.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <string.h>

#include "gpusharegstcuda.h"
#include "gpusharecudaloader.h"
#include "gpusharecudatransfer.h"
#include "gpusharecudaslotpool.h"

#define SKIP_EXIT_CODE 77

/* Whether the driver loads and cuInit finds a device.  Asked in each test,
 * never in main (): check forks a child per test, and a process must not
 * fork after cuInit. */
static gboolean
have_gpu (void)
{
  GError *err = NULL;

  if (gpushare_cuda_load (&err))
    return TRUE;
  GST_INFO ("no GPU: %s", err->message);
  g_clear_error (&err);
  return FALSE;
}

/* a GstCudaContext made without a driver: no CUcontext behind it, but a real
 * instance of the library's type, enough for everything that only passes it
 * around */
static GstObject *
fake_cuda_context (guint device_id)
{
  GType type = gpushare_gst_cuda_context_get_type ();
  GstObject *ctx;

  fail_unless (type != G_TYPE_INVALID);
  ctx = g_object_new (type, "cuda-device-id", device_id, NULL);
  return gst_object_ref_sink (ctx);
}

GST_START_TEST (test_constants)
{
  /* gstmemory.h: GST_MAP_FLAG_LAST = 1 << 16; gstcudamemory.h (1.22):
   * GST_MAP_CUDA = GST_MAP_FLAG_LAST << 1; the 1.22.0 binary tests 0x20000 */
  fail_unless_equals_int (GST_MAP_FLAG_LAST, 1 << 16);
  fail_unless_equals_int (GPUSHARE_MAP_CUDA, 0x20000);
  fail_unless_equals_string (GPUSHARE_CAPS_FEATURE_MEMORY_CUDA,
      "memory:CUDAMemory");
  fail_unless_equals_string (GPUSHARE_CUDA_CONTEXT_TYPE, "gst.cuda.context");
  fail_unless_equals_string (GPUSHARE_CUDA_MEMORY_TYPE_NAME, "gst.cuda.memory");
}

GST_END_TEST;

GST_START_TEST (test_load)
{
  GError *err = NULL;
  GObjectClass *klass;
  GParamSpec *pspec;
  GType type;

  fail_unless (gpushare_gst_cuda_load (&err));
  fail_unless (err == NULL);
  /* once per process: a second call answers the same */
  fail_unless (gpushare_gst_cuda_load (NULL));
  fail_unless (gpushare_gst_cuda_is_loaded ());

  type = gpushare_gst_cuda_context_get_type ();
  fail_unless (g_type_is_a (type, GST_TYPE_OBJECT));
  fail_unless_equals_string (g_type_name (type), "GstCudaContext");

  /* the property the wrappers read, as the library defines it */
  klass = g_type_class_ref (type);
  pspec = g_object_class_find_property (klass, "cuda-device-id");
  fail_unless (pspec != NULL);
  fail_unless (G_PARAM_SPEC_VALUE_TYPE (pspec) == G_TYPE_UINT);
  g_type_class_unref (klass);
}

GST_END_TEST;

GST_START_TEST (test_no_gpu)
{
  GstElement *bin;
  GstObject *ctx = NULL;
  guint i;

  if (have_gpu ()) {
    GST_INFO ("a GPU is present: the no-GPU answers are not checked");
    return;
  }

  /* twice each: libgstcuda 1.22 hangs on the second call after a failed
   * cuInit, so the guard must keep us out of it every time */
  for (i = 0; i < 2; i++) {
    fail_unless (gpushare_gst_cuda_context_new (0) == NULL);
    fail_unless (gpushare_gst_cuda_context_new (-1) == NULL);
  }

  bin = gst_bin_new ("cuda-user");
  for (i = 0; i < 2; i++) {
    fail_if (gpushare_gst_cuda_ensure_element_context (bin, -1, &ctx));
    fail_unless (ctx == NULL);
  }
  gst_object_unref (bin);
}

GST_END_TEST;

GST_START_TEST (test_not_cuda)
{
  GstMemory *mem;
  GstElement *bin;
  GstObject *not_ctx;
  GstQuery *query;

  mem = gst_allocator_alloc (NULL, 4096, NULL);
  fail_unless (mem != NULL);
  fail_if (gpushare_gst_cuda_is_cuda_memory (mem));
  fail_unless (gpushare_gst_cuda_memory_get_context (mem) == NULL);
  gst_memory_unref (mem);
  fail_if (gpushare_gst_cuda_is_cuda_memory (NULL));

  /* a GstObject that is no GstCudaContext is refused, not passed on */
  bin = gst_bin_new ("not-cuda");
  not_ctx = GST_OBJECT (bin);
  fail_if (gpushare_gst_cuda_is_cuda_context (not_ctx));
  fail_if (gpushare_gst_cuda_is_cuda_context (NULL));
  fail_unless (gpushare_gst_cuda_context_get_handle (not_ctx) == NULL);
  fail_unless_equals_int (gpushare_gst_cuda_context_get_device_id (not_ctx),
      -1);
  fail_unless (gpushare_gst_cuda_buffer_pool_new (not_ctx) == NULL);
  fail_unless (gpushare_gst_cuda_buffer_pool_new (NULL) == NULL);

  query = gst_query_new_context (GPUSHARE_CUDA_CONTEXT_TYPE);
  fail_if (gpushare_gst_cuda_handle_context_query (bin, query, NULL));
  fail_if (gpushare_gst_cuda_handle_context_query (bin, query, not_ctx));
  gst_query_unref (query);
  gst_object_unref (bin);
}

GST_END_TEST;

GST_START_TEST (test_context_sharing)
{
  GstObject *ctx, *got = NULL, *other = NULL;
  GstElement *elem;
  GstQuery *query;
  GstContext *context = NULL, *foreign;
  const GstStructure *s;
  GstObject *in_structure = NULL;
  guint device_id = 0;
  GstBufferPool *pool;

  ctx = fake_cuda_context (3);
  fail_unless (gpushare_gst_cuda_is_cuda_context (ctx));
  fail_unless_equals_int (gpushare_gst_cuda_context_get_device_id (ctx), 3);
  /* made without a driver: no CUcontext */
  fail_unless (gpushare_gst_cuda_context_get_handle (ctx) == NULL);

  elem = gst_bin_new ("cuda-peer");

  /* a query of another type is not ours */
  query = gst_query_new_context ("gst.gl.GLDisplay");
  fail_if (gpushare_gst_cuda_handle_context_query (elem, query, ctx));
  gst_query_unref (query);

  /* answer a context query as nvcodec elements expect it */
  query = gst_query_new_context (GPUSHARE_CUDA_CONTEXT_TYPE);
  fail_unless (gpushare_gst_cuda_handle_context_query (elem, query, ctx));
  gst_query_parse_context (query, &context);
  fail_unless (context != NULL);
  fail_unless_equals_string (gst_context_get_context_type (context),
      GPUSHARE_CUDA_CONTEXT_TYPE);
  fail_unless (gst_context_is_persistent (context));
  s = gst_context_get_structure (context);
  fail_unless (gst_structure_get (s, GPUSHARE_CUDA_CONTEXT_TYPE,
          gpushare_gst_cuda_context_get_type (), &in_structure,
          "cuda-device-id", G_TYPE_UINT, &device_id, NULL));
  fail_unless (in_structure == ctx);
  fail_unless_equals_int (device_id, 3);
  gst_object_unref (in_structure);
  gst_context_ref (context);
  gst_query_unref (query);

  /* take it in set_context: any device, then the right and a wrong one */
  fail_unless (gpushare_gst_cuda_handle_set_context (elem, context, -1, &got));
  fail_unless (got == ctx);
  /* already holding one: kept, not replaced */
  fail_unless (gpushare_gst_cuda_handle_set_context (elem, context, 7, &got));
  fail_unless (got == ctx);
  gst_clear_object (&got);
  fail_unless (gpushare_gst_cuda_handle_set_context (elem, context, 3, &got));
  fail_unless (got == ctx);
  gst_clear_object (&got);
  fail_if (gpushare_gst_cuda_handle_set_context (elem, context, 1, &other));
  fail_unless (other == NULL);
  fail_if (gpushare_gst_cuda_handle_set_context (elem, NULL, -1, &other));

  foreign = gst_context_new ("gst.gl.GLDisplay", TRUE);
  fail_if (gpushare_gst_cuda_handle_set_context (elem, foreign, -1, &other));
  fail_unless (other == NULL);
  gst_context_unref (foreign);
  gst_context_unref (context);

  /* a context already held needs no driver and no query */
  got = gst_object_ref (ctx);
  fail_unless (gpushare_gst_cuda_ensure_element_context (elem, -1, &got));
  fail_unless (got == ctx);
  gst_clear_object (&got);

  /* the pool: created without touching the driver (set_config would), with
   * the allocator registered for its set_config, and announcing video meta */
  pool = gpushare_gst_cuda_buffer_pool_new (ctx);
  fail_unless (GST_IS_BUFFER_POOL (pool));
  fail_unless (gst_buffer_pool_has_option (pool,
          GST_BUFFER_POOL_OPTION_VIDEO_META));
  {
    GstAllocator *allocator =
        gst_allocator_find (GPUSHARE_CUDA_MEMORY_TYPE_NAME);

    fail_unless (allocator != NULL);
    gst_object_unref (allocator);
  }
  gst_object_unref (pool);

  gst_object_unref (elem);
  ASSERT_OBJECT_REFCOUNT (ctx, "cuda context", 1);
  gst_object_unref (ctx);
}

GST_END_TEST;

/* what the header says about 1.22's memory, checked on a GPU */
GST_START_TEST (test_gpu_memory)
{
  GstObject *ctx, *found = NULL;
  GstElement *pipeline;
  GstBufferPool *pool;
  GstStructure *config;
  GstCaps *caps;
  GstBuffer *buf = NULL;
  GstVideoMeta *meta;
  GstMemory *mem;
  GstMapInfo map;
  GstVideoInfo info;
  GstVideoFrame frame;
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUcontext handle, popped;
  CUdevice dev;
  CUcontext primary;
  GstObject *wrapped;
  guint mem_type = 0;
  guint width = 70, height = 46;

  if (!have_gpu ()) {
    GST_INFO ("no GPU: memory checks skipped");
    return;
  }

  ctx = gpushare_gst_cuda_context_new (0);
  fail_unless (ctx != NULL);
  handle = gpushare_gst_cuda_context_get_handle (ctx);
  fail_unless (handle != NULL);
  fail_unless_equals_int (gpushare_gst_cuda_context_get_device_id (ctx), 0);

  /* ensure_element_context creates one when no neighbour has it */
  pipeline = gst_pipeline_new ("p");
  fail_unless (gpushare_gst_cuda_ensure_element_context (pipeline, 0, &found));
  fail_unless (gpushare_gst_cuda_is_cuda_context (found));
  gst_object_unref (found);
  gst_object_unref (pipeline);

  /* a context wrapped around our own primary context */
  fail_unless_equals_int (cu->cuDeviceGet (&dev, 0), CUDA_SUCCESS);
  fail_unless_equals_int (cu->cuDevicePrimaryCtxRetain (&primary, dev),
      CUDA_SUCCESS);
  wrapped = gpushare_gst_cuda_context_new_wrapped (primary, dev);
  fail_unless (wrapped != NULL);
  fail_unless (gpushare_gst_cuda_context_get_handle (wrapped) == primary);
  gst_object_unref (wrapped);
  cu->cuDevicePrimaryCtxRelease (dev);

  pool = gpushare_gst_cuda_buffer_pool_new (ctx);
  fail_unless (pool != NULL);

  /* no caps in the config: refused */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, NULL, 4096, 1, 0);
  fail_if (gst_buffer_pool_set_config (pool, config));

  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "NV12",
      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
  gst_caps_set_features (caps, 0,
      gst_caps_features_new (GPUSHARE_CAPS_FEATURE_MEMORY_CUDA, NULL));
  fail_unless (gst_video_info_from_caps (&info, caps));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, info.size, 1, 0);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);

  fail_unless_equals_int (gst_buffer_n_memory (buf), 1);
  mem = gst_buffer_peek_memory (buf, 0);
  fail_unless (gpushare_gst_cuda_is_cuda_memory (mem));
  fail_unless (gpushare_gst_cuda_memory_get_context (mem) == ctx);

  /* GstVideoMeta: one pitch for both NV12 planes, planes pitch * rows apart */
  meta = gst_buffer_get_video_meta (buf);
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_planes, 2);
  fail_unless (meta->stride[0] >= (gint) width);
  fail_unless_equals_int (meta->stride[1], meta->stride[0]);
  fail_unless_equals_int (meta->offset[0], 0);
  fail_unless_equals_uint64 (meta->offset[1],
      (guint64) meta->stride[0] * height);
  GST_INFO ("NV12 %ux%u: pitch %d, offsets %" G_GSIZE_FORMAT " %"
      G_GSIZE_FORMAT, width, height, meta->stride[0], meta->offset[0],
      meta->offset[1]);

  /* map with GPUSHARE_MAP_CUDA: map.data is a device pointer */
  fail_unless (gst_memory_map (mem, &map, GST_MAP_WRITE | GPUSHARE_MAP_CUDA));
  fail_unless (map.data != NULL);
  fail_unless (map.size >= (gsize) meta->stride[0] * (height + height / 2));
  fail_unless_equals_int (cu->cuCtxPushCurrent (handle), CUDA_SUCCESS);
  fail_unless_equals_int (cu->cuPointerGetAttribute (&mem_type,
          CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr) map.data),
      CUDA_SUCCESS);
  fail_unless_equals_int (mem_type, CU_MEMORYTYPE_DEVICE);
  fail_unless_equals_int (cu->cuMemsetD8Async ((CUdeviceptr) map.data, 0x5a,
          map.size, NULL), CUDA_SUCCESS);
  fail_unless_equals_int (cu->cuCtxSynchronize (), CUDA_SUCCESS);
  cu->cuCtxPopCurrent (&popped);
  gst_memory_unmap (mem, &map);

  /* the CPU map downloads what the device write left: the visible bytes of
   * each row (a row's padding up to the pitch is not copied) */
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless_equals_int (map.data[0], 0x5a);
  fail_unless_equals_int (map.data[meta->offset[1] +
          (gsize) meta->stride[1] * (height / 2 - 1) + width - 1], 0x5a);
  gst_memory_unmap (mem, &map);

  /* gst_video_frame_map with the CUDA flag: plane pointers are device
   * pointers at the meta's offsets, strides are the pitch */
  fail_unless (gst_video_frame_map (&frame, &info, buf,
          GST_MAP_READ | GPUSHARE_MAP_CUDA));
  fail_unless_equals_int (GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 1),
      meta->stride[0]);
  fail_unless_equals_uint64 ((guint64) (guintptr)
      GST_VIDEO_FRAME_PLANE_DATA (&frame, 1) -
      (guint64) (guintptr) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
      meta->offset[1]);
  gst_video_frame_unmap (&frame);

  gst_buffer_unref (buf);
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  gst_caps_unref (caps);
  gst_object_unref (ctx);
}

GST_END_TEST;

/* does the library on this host order its memory on streams (1.24+) */
static gboolean
library_has_streams (void)
{
  GModule *module = g_module_open (GPUSHARE_GST_CUDA_LIBNAME,
      G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
  gpointer fn = NULL;
  gboolean has;

  if (!module)
    return FALSE;
  has = g_module_symbol (module, "gst_cuda_memory_get_stream", &fn) && fn;
  g_module_close (module);
  return has;
}

static gboolean
caps_have_gpu_memory (GstCaps * caps)
{
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++)
    if (gst_caps_features_contains (gst_caps_get_features (caps, i),
            GPUSHARE_CAPS_FEATURE_MEMORY_CUDA))
      return TRUE;
  return FALSE;
}

/* every GStreamer version: the elements' pads take and give CUDA memory */
GST_START_TEST (test_template_has_gpu)
{
  GstCaps *caps;

  gpushare_cuda_xfer_register ();
  caps = gpushare_xfer_template_caps ();
  fail_unless (caps_have_gpu_memory (caps), "%" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* the calls of the version loaded: 1.22's without the stream calls, 1.24's
 * with them (CUDA memory ordered on a stream, waited on before reading) */
GST_START_TEST (test_abi_loaded)
{
  guint major, minor, micro, nano;

  gst_version (&major, &minor, &micro, &nano);
  fail_unless (gpushare_gst_cuda_load (NULL));
  if (library_has_streams ()) {
    fail_unless (minor >= 24, "stream calls in GStreamer 1.%u", minor);
    fail_unless_equals_int (gpushare_gst_cuda_abi (),
        GPUSHARE_GST_CUDA_ABI_1_24);
  } else {
    fail_unless (minor < 24, "no stream calls in GStreamer 1.%u", minor);
    fail_unless_equals_int (gpushare_gst_cuda_abi (),
        GPUSHARE_GST_CUDA_ABI_1_22);
  }
  /* plain memory: nothing to wait on, nothing to crash on */
  {
    GstMemory *mem = gst_allocator_alloc (NULL, 64, NULL);

    gpushare_gst_cuda_memory_sync (mem);
    gpushare_gst_cuda_memory_sync (NULL);
    gst_memory_unref (mem);
  }
}

GST_END_TEST;

/* The pool of GPU slots the sink offers upstream (1.24+): of GStreamer's
 * own CUDA pool type with the shared context in its public field, which is
 * what nvh264dec, cudaupload and cudaconvert check before they take a
 * downstream pool; configurable without a driver; its acquire asks the
 * sink first and, without a slot and without a driver, fails cleanly.
 * On 1.22 there is none. */
static GstFlowReturn acquire_result;
static guint acquired, released, flushed, destroyed;

static GstFlowReturn
fake_acquire (gpointer user_data, GpuShareXferRing ** ring, guint * slot,
    gpointer * tag)
{
  acquired++;
  return acquire_result;
}

static void
fake_release (gpointer user_data, gpointer tag)
{
  released++;
}

static void
fake_flush (gpointer user_data, gboolean flushing)
{
  flushed += flushing;
}

static void
fake_destroy (gpointer user_data)
{
  destroyed++;
}

GST_START_TEST (test_slot_pool)
{
  GpuShareSlotPoolFuncs funcs = {
    .acquire = fake_acquire,
    .release = fake_release,
    .flush = fake_flush,
    .tag_quark = g_quark_from_static_string ("test-slot-tag"),
    .destroy = fake_destroy,
  };
  GstObject *ctx = fake_cuda_context (0);
  GstBufferPool *pool;
  GstStructure *config;
  GstBuffer *buf = NULL;
  GstCaps *caps;

  fail_unless (gpushare_gst_cuda_load (NULL));
  pool = gpushare_cuda_slot_pool_new (ctx, &funcs);
  if (gpushare_gst_cuda_abi () != GPUSHARE_GST_CUDA_ABI_1_24) {
    fail_unless (pool == NULL, "a pool of slots on GStreamer 1.22");
    gst_object_unref (ctx);
    return;
  }
  fail_unless (pool != NULL);
  fail_unless (G_TYPE_CHECK_INSTANCE_TYPE (pool,
          gpushare_gst_cuda_buffer_pool_get_type ()));
  fail_unless (gpushare_gst_cuda_buffer_pool_get_context (pool) == ctx);

  caps = gst_caps_from_string ("video/x-raw(memory:CUDAMemory),"
      "format=NV12,width=64,height=48,framerate=30/1");
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 48 * 3 / 2, 0, 0);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_has_option (pool,
          GST_BUFFER_POOL_OPTION_VIDEO_META));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  /* nothing allocated ahead: the ring is the pool */
  fail_unless_equals_int (acquired, 0);

  acquire_result = GST_FLOW_FLUSHING;
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_FLUSHING);
  /* no slot, and no driver to make CUDA memory of its own: an error, no
   * crash */
  acquire_result = GST_FLOW_CUSTOM_SUCCESS;
  if (!have_gpu ())
    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf,
            NULL), GST_FLOW_ERROR);
  fail_unless (acquired >= 1);
  fail_unless_equals_int (released, 0);

  gst_buffer_pool_set_flushing (pool, TRUE);
  fail_unless_equals_int (flushed, 1);
  gst_buffer_pool_set_flushing (pool, FALSE);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  fail_unless_equals_int (destroyed, 1);
  gst_caps_unref (caps);
  /* the pool held a reference of its own, dropped at dispose */
  ASSERT_OBJECT_REFCOUNT (ctx, "context", 1);
  gst_object_unref (ctx);
}

GST_END_TEST;

/* which calls a version gets, and why not */
GST_START_TEST (test_abi_for)
{
  static const struct
  {
    guint major, minor;
    gboolean streams;
    GpuShareGstCudaAbi abi;
    const gchar *why;
  } cases[] = {
    {1, 20, FALSE, GPUSHARE_GST_CUDA_ABI_NONE, "1.22 or later"},
    {1, 22, FALSE, GPUSHARE_GST_CUDA_ABI_1_22, NULL},
    {1, 23, FALSE, GPUSHARE_GST_CUDA_ABI_1_22, NULL},
    {1, 22, TRUE, GPUSHARE_GST_CUDA_ABI_NONE, "mixed"},
    {1, 24, FALSE, GPUSHARE_GST_CUDA_ABI_NONE, "mixed"},
    {1, 24, TRUE, GPUSHARE_GST_CUDA_ABI_1_24, NULL},
    {1, 26, TRUE, GPUSHARE_GST_CUDA_ABI_1_24, NULL},
    /* newer than any run on a GPU: used, its layouts checked at load */
    {1, 28, TRUE, GPUSHARE_GST_CUDA_ABI_1_24, NULL},
    {1, 30, TRUE, GPUSHARE_GST_CUDA_ABI_1_24, NULL},
    {1, 28, FALSE, GPUSHARE_GST_CUDA_ABI_NONE, "mixed"},
    {2, 0, TRUE, GPUSHARE_GST_CUDA_ABI_NONE, "1.22 or later"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *why = NULL;
    GpuShareGstCudaAbi abi = gpushare_gst_cuda_abi_for (cases[i].major,
        cases[i].minor, cases[i].streams, &why);

    fail_unless_equals_int (abi, cases[i].abi);
    if (cases[i].why)
      fail_unless (why && strstr (why, cases[i].why), "case %u: %s", i,
          why ? why : "no reason");
    else
      fail_unless (why == NULL, "case %u: %s", i, why);
    g_free (why);
  }
}

GST_END_TEST;

/* The struct heads the binding reads, checked against the running library
 * (the pool's at load: the library loaded, so it passed; here again) and
 * against layouts that differ, which the checks must refuse */
typedef struct
{
  GstBufferPool parent;
  gpointer added;               /* a field before the context */
  GstObject *context;
} MovedPool;

typedef GstBufferPoolClass MovedPoolClass;
GType moved_pool_get_type (void);
G_DEFINE_TYPE (MovedPool, moved_pool, GST_TYPE_BUFFER_POOL);

static void
moved_pool_class_init (MovedPoolClass * klass)
{
}

static void
moved_pool_init (MovedPool * self)
{
}

typedef struct
{
  GstMemory mem;
  GstObject *context;
  GstVideoInfo info;
} KnownMemory;

typedef struct
{
  GstMemory mem;
  gpointer added;
  GstObject *context;
  GstVideoInfo info;
} MovedMemory;

GST_START_TEST (test_layouts)
{
  GstObject *ctx;
  GstBufferPool *pool;
  MovedPool *moved;
  KnownMemory known;
  MovedMemory moved_mem;
  GstVideoInfo info;
  gchar *why = NULL;

  memset (&known, 0, sizeof (known));
  memset (&moved_mem, 0, sizeof (moved_mem));
  fail_unless (gpushare_gst_cuda_load (NULL));
  ctx = fake_cuda_context (0);

  pool = gpushare_gst_cuda_buffer_pool_new (ctx);
  fail_unless (pool != NULL);
  fail_unless (gpushare_gst_cuda_pool_layout_ok (pool, ctx, &why), "%s", why);
  gst_object_unref (pool);

  moved = g_object_new (moved_pool_get_type (), NULL);
  moved->context = ctx;
  fail_if (gpushare_gst_cuda_pool_layout_ok (GST_BUFFER_POOL (moved), ctx,
          &why));
  fail_unless (why && strstr (why, "does not hold it"), "%s", why);
  g_clear_pointer (&why, g_free);
  moved->context = NULL;
  gst_object_unref (moved);

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, 64, 48);
  known.context = ctx;
  known.info = info;
  fail_unless (gpushare_gst_cuda_memory_layout_ok ((GstMemory *) & known,
          ctx, &info, &why), "%s", why);
  moved_mem.context = ctx;
  moved_mem.info = info;
  fail_if (gpushare_gst_cuda_memory_layout_ok ((GstMemory *) & moved_mem,
          ctx, &info, &why));
  fail_unless (why && strstr (why, "context"), "%s", why);
  g_clear_pointer (&why, g_free);
  /* the context in place, but not the video info */
  known.info.stride[0] = 4096;
  fail_if (gpushare_gst_cuda_memory_layout_ok ((GstMemory *) & known,
          ctx, &info, &why));
  fail_unless (why && strstr (why, "GstVideoInfo"), "%s", why);
  g_clear_pointer (&why, g_free);

  gst_object_unref (ctx);
}

GST_END_TEST;

static Suite *
gstcuda_suite (void)
{
  Suite *s = suite_create ("gpusharegstcuda");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_constants);
  tcase_add_test (tc, test_load);
  tcase_add_test (tc, test_template_has_gpu);
  tcase_add_test (tc, test_abi_loaded);
  tcase_add_test (tc, test_abi_for);
  tcase_add_test (tc, test_layouts);
  tcase_add_test (tc, test_slot_pool);
  tcase_add_test (tc, test_no_gpu);
  tcase_add_test (tc, test_not_cuda);
  tcase_add_test (tc, test_context_sharing);
  tcase_add_test (tc, test_gpu_memory);
  return s;
}

int
main (int argc, char **argv)
{
  GError *err = NULL;
  Suite *s;

  gst_check_init (&argc, &argv);

  if (!gpushare_gst_cuda_load (&err)) {
    printf ("SKIP: %s\n", err->message);
    g_clear_error (&err);
    return SKIP_EXIT_CODE;
  }
  s = gstcuda_suite ();
  return gst_check_run_suite (s, "gpusharegstcuda", __FILE__);
}

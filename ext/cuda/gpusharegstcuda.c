/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libgstcuda-1.0.so.0 opened at run time; see gpusharegstcuda.h for what was
 * checked against GStreamer 1.22 and why each wrapper does what it does.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gpusharegstcuda.h"
#include "gpusharecudaloader.h"

#include <gmodule.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gpushare_gst_cuda_debug);
#define GST_CAT_DEFAULT gpushare_gst_cuda_debug

/* The 1.22 prototypes (gstcudaloader.h, gstcudacontext.h, gstcudautils.h,
 * gstcudamemory.h, gstcudabufferpool.h), with GstCudaContext * spelled
 * GstObject *: a GstCudaContext is a GstObject, so the ABI is the same. */
typedef gboolean (*LoadLibraryFunc) (void);
typedef GType (*ContextGetTypeFunc) (void);
typedef GstObject *(*ContextNewFunc) (guint device_id);
typedef GstObject *(*ContextNewWrappedFunc) (CUcontext handler,
    CUdevice device);
typedef gpointer (*ContextGetHandleFunc) (GstObject * ctx);
typedef gboolean (*EnsureElementContextFunc) (GstElement * element,
    gint device_id, GstObject ** cuda_ctx);
typedef gboolean (*HandleSetContextFunc) (GstElement * element,
    GstContext * context, gint device_id, GstObject ** cuda_ctx);
typedef gboolean (*HandleContextQueryFunc) (GstElement * element,
    GstQuery * query, GstObject * cuda_ctx);
typedef void (*MemoryInitOnceFunc) (void);
typedef gboolean (*IsCudaMemoryFunc) (GstMemory * mem);
typedef GstBufferPool *(*BufferPoolNewFunc) (GstObject * context);
typedef GstContext *(*ContextNewCudaContextFunc) (GstObject * cuda_ctx);
/* 1.24 and later (gstcudamemory.h); a GstCudaStream * is a gpointer here */
typedef void (*MemorySyncFunc) (GstMemory * mem);
typedef gpointer (*MemoryGetStreamFunc) (GstMemory * mem);
typedef CUstream (*StreamGetHandleFunc) (gpointer stream);
typedef GstMemory *(*AllocWrappedFunc) (GstAllocator * allocator,
    GstObject * context, gpointer stream, const GstVideoInfo * info,
    CUdeviceptr dev_ptr, gpointer user_data, GDestroyNotify notify);
/* gst_cuda_allocator_alloc () as 1.24 declares it (1.22's has no stream) */
typedef GstMemory *(*Alloc124Func) (GstAllocator * allocator,
    GstObject * context, gpointer stream, const GstVideoInfo * info);
typedef GType (*BufferPoolGetTypeFunc) (void);

#define GPUSHARE_GST_CUDA_FUNCS(X) \
  X (gst_cuda_load_library, LoadLibraryFunc) \
  X (gst_cuda_context_get_type, ContextGetTypeFunc) \
  X (gst_cuda_context_new, ContextNewFunc) \
  X (gst_cuda_context_new_wrapped, ContextNewWrappedFunc) \
  X (gst_cuda_context_get_handle, ContextGetHandleFunc) \
  X (gst_cuda_ensure_element_context, EnsureElementContextFunc) \
  X (gst_cuda_handle_set_context, HandleSetContextFunc) \
  X (gst_cuda_handle_context_query, HandleContextQueryFunc) \
  X (gst_cuda_memory_init_once, MemoryInitOnceFunc) \
  X (gst_is_cuda_memory, IsCudaMemoryFunc) \
  X (gst_cuda_buffer_pool_new, BufferPoolNewFunc) \
  X (gst_context_new_cuda_context, ContextNewCudaContextFunc)

typedef struct
{
#define GPUSHARE_GST_CUDA_DECL(name, type) type name;
  GPUSHARE_GST_CUDA_FUNCS (GPUSHARE_GST_CUDA_DECL)
#undef GPUSHARE_GST_CUDA_DECL
      /* NULL with the 1.22 calls */
      struct
  {
    MemorySyncFunc gst_cuda_memory_sync;
    MemoryGetStreamFunc gst_cuda_memory_get_stream;
    StreamGetHandleFunc gst_cuda_stream_get_handle;
    AllocWrappedFunc gst_cuda_allocator_alloc_wrapped;
    Alloc124Func gst_cuda_allocator_alloc;
    BufferPoolGetTypeFunc gst_cuda_buffer_pool_get_type;
  } streams;
} GpuShareGstCudaApi;

/* The public head of GstCudaMemory, unchanged from 1.22 to 1.26:
 * { GstMemory mem; GstCudaContext *context; GstVideoInfo info; ... }. */
typedef struct
{
  GstMemory mem;
  GstObject *context;
  GstVideoInfo info;
} GpuShareGstCudaMemoryHead;

/* The public head of GstCudaBufferPool, unchanged from 1.22 to 1.26:
 * { GstBufferPool parent; GstCudaContext *context; priv; }.  The nvcodec
 * elements take a downstream pool only when it is of this type and its
 * context is theirs. */
typedef struct
{
  GstBufferPool parent;
  GstObject *context;
  gpointer priv;
} GpuShareGstCudaBufferPoolHead;

static GpuShareGstCudaApi api;
static GpuShareGstCudaAbi abi;
static gboolean loaded;
static GError *load_error;
/* set when a GstCudaMemory of the running library was found laid out
 * otherwise than the head above: CUDA memory is then left alone */
static gint memory_layout_unknown;

gboolean
gpushare_gst_cuda_pool_layout_ok (GstBufferPool * pool, GstObject * cuda_ctx,
    gchar ** why_not)
{
  GTypeQuery q;

  if (!GST_IS_BUFFER_POOL (pool)) {
    *why_not = g_strdup ("GstCudaBufferPool is no GstBufferPool");
    return FALSE;
  }
  g_type_query (G_OBJECT_TYPE (pool), &q);
  if (q.instance_size < sizeof (GpuShareGstCudaBufferPoolHead)) {
    *why_not = g_strdup_printf ("a %s is %u bytes, smaller than the %u "
        "bytes of the layout known", q.type_name, q.instance_size,
        (guint) sizeof (GpuShareGstCudaBufferPoolHead));
    return FALSE;
  }
  if (((GpuShareGstCudaBufferPoolHead *) pool)->context != cuda_ctx) {
    *why_not = g_strdup_printf ("a %s made for a context does not hold it "
        "right after its GstBufferPool", q.type_name);
    return FALSE;
  }
  return TRUE;
}

gboolean
gpushare_gst_cuda_memory_layout_ok (GstMemory * mem, GstObject * cuda_ctx,
    const GstVideoInfo * info, gchar ** why_not)
{
  const GpuShareGstCudaMemoryHead *head = (GpuShareGstCudaMemoryHead *) mem;

  if (head->context != cuda_ctx) {
    *why_not = g_strdup ("a GstCudaMemory does not hold its context right "
        "after its GstMemory");
    return FALSE;
  }
  if (GST_VIDEO_INFO_FORMAT (&head->info) != GST_VIDEO_INFO_FORMAT (info)
      || GST_VIDEO_INFO_WIDTH (&head->info) != GST_VIDEO_INFO_WIDTH (info)
      || GST_VIDEO_INFO_HEIGHT (&head->info) != GST_VIDEO_INFO_HEIGHT (info)
      || GST_VIDEO_INFO_PLANE_STRIDE (&head->info, 0) !=
      GST_VIDEO_INFO_PLANE_STRIDE (info, 0)) {
    *why_not = g_strdup ("a GstCudaMemory does not hold its GstVideoInfo "
        "after its context");
    return FALSE;
  }
  return TRUE;
}

/* The head of GstCudaBufferPool, checked against the running library at
 * load, without a driver: a pool made for a context (a GstCudaContext
 * object, which needs no driver to exist) must hold it where the head
 * says.  GstCudaMemory's head is checked on the first memory this binding
 * wraps (gpushare_gst_cuda_memory_wrap), which needs a GPU. */
static gboolean
check_pool_layout (gchar ** why_not)
{
  GType ctx_type = api.gst_cuda_context_get_type ();
  GstObject *ctx;
  GstBufferPool *pool;
  gboolean ok;

  if (!g_type_is_a (ctx_type, GST_TYPE_OBJECT)) {
    *why_not = g_strdup ("GstCudaContext is no GstObject");
    return FALSE;
  }
  ctx = g_object_new (ctx_type, "cuda-device-id", 0, NULL);
  gst_object_ref_sink (ctx);
  pool = api.gst_cuda_buffer_pool_new (ctx);
  if (!pool) {
    *why_not = g_strdup ("gst_cuda_buffer_pool_new () made no pool");
    ok = FALSE;
  } else {
    ok = gpushare_gst_cuda_pool_layout_ok (pool, ctx, why_not);
    gst_object_unref (pool);
  }
  gst_object_unref (ctx);
  return ok;
}

GpuShareGstCudaAbi
gpushare_gst_cuda_abi_for (guint major, guint minor, gboolean has_streams,
    gchar ** why_not)
{
  if (major != 1 || minor < 22) {
    *why_not = g_strdup ("GStreamer 1.22 or later is needed");
    return GPUSHARE_GST_CUDA_ABI_NONE;
  }
  if (minor <= 23) {
    if (!has_streams)
      return GPUSHARE_GST_CUDA_ABI_1_22;
    *why_not = g_strdup ("the library has the stream calls of 1.24, the "
        "core is older: mixed versions");
    return GPUSHARE_GST_CUDA_ABI_NONE;
  }
  if (!has_streams) {
    *why_not = g_strdup ("the library lacks the stream calls of 1.24 "
        "(gst_cuda_memory_sync, gst_cuda_memory_get_stream, "
        "gst_cuda_allocator_alloc_wrapped): mixed versions");
    return GPUSHARE_GST_CUDA_ABI_NONE;
  }
  return GPUSHARE_GST_CUDA_ABI_1_24;
}

GpuShareGstCudaAbi
gpushare_gst_cuda_abi (void)
{
  return loaded ? abi : GPUSHARE_GST_CUDA_ABI_NONE;
}

static gboolean
load_once (GError ** error)
{
  GModule *module;
  struct
  {
    const gchar *name;
    gpointer *fn;
  } stream_syms[] = {
    {"gst_cuda_memory_sync", (gpointer *) & api.streams.gst_cuda_memory_sync},
    {"gst_cuda_memory_get_stream",
        (gpointer *) & api.streams.gst_cuda_memory_get_stream},
    {"gst_cuda_stream_get_handle",
        (gpointer *) & api.streams.gst_cuda_stream_get_handle},
    {"gst_cuda_allocator_alloc_wrapped",
        (gpointer *) & api.streams.gst_cuda_allocator_alloc_wrapped},
    {"gst_cuda_allocator_alloc",
        (gpointer *) & api.streams.gst_cuda_allocator_alloc},
    {"gst_cuda_buffer_pool_get_type",
        (gpointer *) & api.streams.gst_cuda_buffer_pool_get_type},
  };
  gboolean has_streams = TRUE;
  guint major, minor, micro, nano, i;
  gchar *why_not = NULL;

  GST_DEBUG_CATEGORY_INIT (gpushare_gst_cuda_debug, "gpusharegstcuda", 0,
      "gpushare: GStreamer's libgstcuda, loaded at run time");

  module = g_module_open (GPUSHARE_GST_CUDA_LIBNAME,
      G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
  if (!module) {
    GST_INFO ("cannot open %s: %s", GPUSHARE_GST_CUDA_LIBNAME,
        g_module_error ());
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "%s not found: install gst-plugins-bad 1.22",
        GPUSHARE_GST_CUDA_LIBNAME);
    return FALSE;
  }
#define GPUSHARE_GST_CUDA_LOAD(name, type) \
  if (!g_module_symbol (module, #name, (gpointer *) & api.name) \
      || !api.name) { \
    g_set_error (error, GPUSHARE_CUDA_ERROR, \
        GPUSHARE_CUDA_ERROR_UNSUPPORTED, \
        "%s has no %s: gst-plugins-bad 1.22 or later is needed", \
        GPUSHARE_GST_CUDA_LIBNAME, #name); \
    memset (&api, 0, sizeof (api)); \
    g_module_close (module); \
    return FALSE; \
  }
  GPUSHARE_GST_CUDA_FUNCS (GPUSHARE_GST_CUDA_LOAD)
#undef GPUSHARE_GST_CUDA_LOAD
      /* From 1.24 on a GstCudaMemory is ordered on a CUDA stream: a decoder
       * pushes it before its stream finished writing it, and whoever reads it
       * must wait on that stream first (gst_cuda_memory_sync ()).  Reading
       * without waiting gave frames a decoder had not finished (on the H200
       * with 1.26: 2 to 4 frames of 300 differed).  So the calls of the
       * version actually loaded are used, and a version this binding was not
       * made for is not used at all. */
      for (i = 0; i < G_N_ELEMENTS (stream_syms); i++) {
    gpointer fn = NULL;

    if (g_module_symbol (module, stream_syms[i].name, &fn) && fn)
      *stream_syms[i].fn = fn;
    else
      has_streams = FALSE;
  }
  gst_version (&major, &minor, &micro, &nano);
  abi = gpushare_gst_cuda_abi_for (major, minor, has_streams, &why_not);
  if (abi != GPUSHARE_GST_CUDA_ABI_NONE && !check_pool_layout (&why_not)) {
    gchar *known = why_not;

    why_not = g_strdup_printf ("its layout is not one gpushare knows (%s)",
        known);
    g_free (known);
    abi = GPUSHARE_GST_CUDA_ABI_NONE;
  }
  if (abi == GPUSHARE_GST_CUDA_ABI_NONE) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "%s of GStreamer %u.%u not used: %s; CUDA memory is neither taken "
        "from nor given to neighbouring elements (they download and upload "
        "themselves)", GPUSHARE_GST_CUDA_LIBNAME, major, minor, why_not);
    GST_WARNING ("%s", (*error)->message);
    g_free (why_not);
    memset (&api, 0, sizeof (api));
    g_module_close (module);
    return FALSE;
  }
  if (abi == GPUSHARE_GST_CUDA_ABI_1_22)
    memset (&api.streams, 0, sizeof (api.streams));

  /* the module is never closed: the table and the GTypes registered by the
   * library live as long as the process */
  GST_INFO ("%s loaded, with the calls of GStreamer %s (GStreamer %u.%u.%u)",
      GPUSHARE_GST_CUDA_LIBNAME, abi == GPUSHARE_GST_CUDA_ABI_1_22 ?
      "1.22" : "1.24 and later", major, minor, micro);
  if (minor > GPUSHARE_GST_CUDA_NEWEST_MINOR)
    GST_INFO ("GStreamer %u.%u is newer than the versions gpushare was run "
        "with (1.22 to 1.%u): the layouts it reads were checked against "
        "this library", major, minor, GPUSHARE_GST_CUDA_NEWEST_MINOR);
  return TRUE;
}

gboolean
gpushare_gst_cuda_load (GError ** error)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    loaded = load_once (&load_error);
    g_once_init_leave (&once, 1);
  }
  if (!loaded && error)
    *error = g_error_copy (load_error);
  return loaded;
}

gboolean
gpushare_gst_cuda_is_loaded (void)
{
  return loaded;
}

/* TRUE when libgstcuda may call the driver: our own loader ran cuInit
 * successfully (libgstcuda 1.22 breaks when its cuInit fails: a g_critical,
 * then a hang on the next call), and gst_cuda_load_library () filled
 * libgstcuda's function table (its calls assert on it otherwise).  Decided
 * once per process. */
static gboolean
driver_usable (void)
{
  static gsize once = 0;
  static gboolean usable;

  if (!loaded)
    return FALSE;

  if (g_once_init_enter (&once)) {
    GError *err = NULL;

    if (!gpushare_cuda_load (&err)) {
      GST_INFO ("no CUDA context through %s: %s", GPUSHARE_GST_CUDA_LIBNAME,
          err->message);
      g_clear_error (&err);
      usable = FALSE;
    } else if (!api.gst_cuda_load_library ()) {
      GST_WARNING ("gst_cuda_load_library () failed although the driver "
          "loaded");
      usable = FALSE;
    } else {
      usable = TRUE;
    }
    g_once_init_leave (&once, 1);
  }
  return usable;
}

gboolean
gpushare_gst_cuda_ensure_element_context (GstElement * element,
    gint device_id, GstObject ** cuda_ctx)
{
  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  g_return_val_if_fail (cuda_ctx != NULL, FALSE);

  if (*cuda_ctx)
    return TRUE;
  /* without a driver no neighbour can hold a context either, and the
   * library would create one (and crash) after its queries */
  if (!driver_usable ())
    return FALSE;
  return api.gst_cuda_ensure_element_context (element, device_id, cuda_ctx);
}

gboolean
gpushare_gst_cuda_handle_set_context (GstElement * element,
    GstContext * context, gint device_id, GstObject ** cuda_ctx)
{
  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  g_return_val_if_fail (cuda_ctx != NULL, FALSE);

  if (!loaded || !context)
    return FALSE;
  /* no driver call: it reads the GstContext's structure only */
  return api.gst_cuda_handle_set_context (element, context, device_id,
      cuda_ctx);
}

gboolean
gpushare_gst_cuda_handle_context_query (GstElement * element,
    GstQuery * query, GstObject * cuda_ctx)
{
  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  g_return_val_if_fail (GST_IS_QUERY (query), FALSE);

  if (!loaded || !cuda_ctx || GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT)
    return FALSE;
  /* the library g_return_val_if_fail()s on anything but a GstCudaContext */
  if (!gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return FALSE;
  return api.gst_cuda_handle_context_query (element, query, cuda_ctx);
}

GstObject *
gpushare_gst_cuda_context_new (gint device_id)
{
  if (!driver_usable ())
    return NULL;
  return api.gst_cuda_context_new (device_id < 0 ? 0 : (guint) device_id);
}

GstObject *
gpushare_gst_cuda_context_new_wrapped (CUcontext handle, CUdevice device)
{
  g_return_val_if_fail (handle != NULL, NULL);
  g_return_val_if_fail (device >= 0, NULL);

  if (!driver_usable ())
    return NULL;
  return api.gst_cuda_context_new_wrapped (handle, device);
}

CUcontext
gpushare_gst_cuda_context_get_handle (GstObject * cuda_ctx)
{
  if (!gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return NULL;
  return (CUcontext) api.gst_cuda_context_get_handle (cuda_ctx);
}

gint
gpushare_gst_cuda_context_get_device_id (GstObject * cuda_ctx)
{
  guint device_id = 0;

  if (!gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return -1;
  g_object_get (cuda_ctx, "cuda-device-id", &device_id, NULL);
  return device_id > G_MAXINT ? -1 : (gint) device_id;
}

GType
gpushare_gst_cuda_context_get_type (void)
{
  if (!loaded)
    return G_TYPE_INVALID;
  return api.gst_cuda_context_get_type ();
}

gboolean
gpushare_gst_cuda_is_cuda_context (GstObject * obj)
{
  if (!loaded || !obj)
    return FALSE;
  return G_TYPE_CHECK_INSTANCE_TYPE (obj, api.gst_cuda_context_get_type ());
}

gboolean
gpushare_gst_cuda_is_cuda_memory (GstMemory * mem)
{
  if (!loaded || !mem)
    return FALSE;
  return api.gst_is_cuda_memory (mem);
}

GstObject *
gpushare_gst_cuda_memory_get_context (GstMemory * mem)
{
  GstObject *ctx;

  if (!gpushare_gst_cuda_is_cuda_memory (mem)
      || g_atomic_int_get (&memory_layout_unknown))
    return NULL;
  ctx = ((GpuShareGstCudaMemoryHead *) mem)->context;
  /* a sanity check on the layout assumption, cheap enough to keep */
  if (!gpushare_gst_cuda_is_cuda_context (ctx)) {
    GST_ERROR ("a CUDA memory whose context field is no GstCudaContext: "
        "unexpected GstCudaMemory layout");
    return NULL;
  }
  return ctx;
}

GstBufferPool *
gpushare_gst_cuda_buffer_pool_new (GstObject * cuda_ctx)
{
  if (!gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return NULL;
  /* registers the "gst.cuda.memory" allocator that the 1.22 pool's
   * set_config looks up; the nvcodec plugin does this at its init, but
   * nvcodec need not be loaded in this process */
  api.gst_cuda_memory_init_once ();
  return api.gst_cuda_buffer_pool_new (cuda_ctx);
}

void
gpushare_gst_cuda_memory_sync (GstMemory * mem)
{
  /* 1.22: memory is complete when it is pushed */
  if (!gpushare_gst_cuda_is_cuda_memory (mem)
      || !api.streams.gst_cuda_memory_sync)
    return;
  api.streams.gst_cuda_memory_sync (mem);
}

CUstream
gpushare_gst_cuda_memory_stream (GstMemory * mem, CUcontext ctx,
    const gchar ** why_not)
{
  GstObject *mem_ctx;
  gpointer stream;

  if (!api.streams.gst_cuda_memory_get_stream
      || !api.streams.gst_cuda_stream_get_handle) {
    *why_not = "GStreamer 1.22's CUDA memory has no stream";
    return NULL;
  }
  if (!(mem_ctx = gpushare_gst_cuda_memory_get_context (mem))
      || gpushare_gst_cuda_context_get_handle (mem_ctx) != ctx) {
    *why_not = "the memory is of another CUDA context";
    return NULL;
  }
  if (!(stream = api.streams.gst_cuda_memory_get_stream (mem))) {
    *why_not = "the memory has no stream (complete when pushed)";
    return NULL;
  }
  return api.streams.gst_cuda_stream_get_handle (stream);
}

/* the caller's notify, called when the memory it was given goes: not
 * when a memory made and found unusable is dropped here */
typedef struct
{
  gpointer user_data;
  GDestroyNotify notify;
  gboolean given;
} WrapNotify;

static void
wrap_notify (gpointer data)
{
  WrapNotify *w = data;

  if (w->given)
    w->notify (w->user_data);
  g_free (w);
}

GstMemory *
gpushare_gst_cuda_memory_wrap (GstObject * cuda_ctx, gpointer stream,
    const GstVideoInfo * info, CUdeviceptr ptr, gpointer user_data,
    GDestroyNotify notify)
{
  /* read and set by every streaming thread that wraps: atomic */
  static gint memory_layout_checked;
  WrapNotify *w;
  GstMemory *mem;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (ptr != 0, NULL);
  g_return_val_if_fail (notify != NULL, NULL);

  if (!api.streams.gst_cuda_allocator_alloc_wrapped
      || !gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return NULL;
  if (g_atomic_int_get (&memory_layout_unknown))
    return NULL;
  /* the default allocator, which the call takes when given none */
  api.gst_cuda_memory_init_once ();
  w = g_new (WrapNotify, 1);
  w->user_data = user_data;
  w->notify = notify;
  w->given = TRUE;
  mem = api.streams.gst_cuda_allocator_alloc_wrapped (NULL, cuda_ctx, stream,
      info, ptr, w, wrap_notify);
  if (!mem) {
    g_free (w);
    return NULL;
  }
  if (!g_atomic_int_get (&memory_layout_checked)) {
    gchar *why_not = NULL;

    /* once: the first memory shows whether the head read from every CUDA
     * memory is the running library's */
    if (!gpushare_gst_cuda_memory_layout_ok (mem, cuda_ctx, info, &why_not)) {
      GST_WARNING ("%s: the layout of its CUDA memory is not one gpushare "
          "knows (%s); CUDA memory is neither taken from nor given to "
          "neighbouring elements", GPUSHARE_GST_CUDA_LIBNAME, why_not);
      g_free (why_not);
      g_atomic_int_set (&memory_layout_unknown, 1);
      /* NULL to the caller, whose notify is not called: it frees its own */
      w->given = FALSE;
      gst_memory_unref (mem);
      return NULL;
    }
    g_atomic_int_set (&memory_layout_checked, 1);
  }
  return mem;
}

GstMemory *
gpushare_gst_cuda_memory_alloc (GstObject * cuda_ctx, gpointer stream,
    const GstVideoInfo * info)
{
  g_return_val_if_fail (info != NULL, NULL);

  if (!api.streams.gst_cuda_allocator_alloc
      || !gpushare_gst_cuda_is_cuda_context (cuda_ctx) || !driver_usable ())
    return NULL;
  api.gst_cuda_memory_init_once ();
  return api.streams.gst_cuda_allocator_alloc (NULL, cuda_ctx, stream, info);
}

const GstVideoInfo *
gpushare_gst_cuda_memory_get_info (GstMemory * mem)
{
  if (!gpushare_gst_cuda_memory_get_context (mem))
    return NULL;
  return &((GpuShareGstCudaMemoryHead *) mem)->info;
}

GType
gpushare_gst_cuda_buffer_pool_get_type (void)
{
  if (!api.streams.gst_cuda_buffer_pool_get_type)
    return G_TYPE_INVALID;
  return api.streams.gst_cuda_buffer_pool_get_type ();
}

GstObject *
gpushare_gst_cuda_buffer_pool_get_context (GstBufferPool * pool)
{
  GType type = gpushare_gst_cuda_buffer_pool_get_type ();

  if (type == G_TYPE_INVALID || !G_TYPE_CHECK_INSTANCE_TYPE (pool, type))
    return NULL;
  return ((GpuShareGstCudaBufferPoolHead *) pool)->context;
}

void
gpushare_gst_cuda_buffer_pool_set_context (GstBufferPool * pool,
    GstObject * cuda_ctx)
{
  GpuShareGstCudaBufferPoolHead *head = (GpuShareGstCudaBufferPoolHead *) pool;
  GType type = gpushare_gst_cuda_buffer_pool_get_type ();

  g_return_if_fail (type != G_TYPE_INVALID
      && G_TYPE_CHECK_INSTANCE_TYPE (pool, type));
  g_return_if_fail (gpushare_gst_cuda_is_cuda_context (cuda_ctx));
  gst_object_replace (&head->context, cuda_ctx);
}

GstContext *
gpushare_gst_cuda_context_to_gst_context (GstObject * cuda_ctx)
{
  if (!gpushare_gst_cuda_is_cuda_context (cuda_ctx))
    return NULL;
  return api.gst_context_new_cuda_context (cuda_ctx);
}

gboolean
gpushare_gst_cuda_layout_wrappable (const GstVideoInfo * info,
    gsize max_size, const gchar ** why_not)
{
  gint pitch = GST_VIDEO_INFO_PLANE_STRIDE (info, 0);
  guint i;

  for (i = 1; i < GST_VIDEO_INFO_N_PLANES (info); i++) {
    if (GST_VIDEO_INFO_PLANE_STRIDE (info, i) != pitch) {
      *why_not = "the planes have different strides, which GStreamer's "
          "CUDA memory cannot describe";
      return FALSE;
    }
  }
  if (pitch <= 0 || GST_VIDEO_INFO_SIZE (info) % pitch != 0) {
    *why_not = "the frame's size is no whole number of rows of its pitch";
    return FALSE;
  }
  if (GST_VIDEO_INFO_SIZE (info) > max_size) {
    *why_not = "the frame does not fit a slot";
    return FALSE;
  }
  return TRUE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GStreamer's own CUDA library (libgstcuda-1.0.so.0 from gst-plugins-bad),
 * opened at run time.
 *
 * What for: to take and give `video/x-raw(memory:CUDAMemory)` buffers and to
 * share a GstCudaContext with nvh264dec, cudaupload, cudadownload (nvcodec).
 * Why at run time: the -dev package of gst-plugins-bad pulls in 169 packages
 * on Debian 12, and the plugin must load, and run on system memory, where
 * gst-plugins-bad is not installed.  So no bad header is included: the few
 * functions below are declared here with the exact 1.22 prototypes, and a
 * GstCudaContext is handled as a GstObject *.
 *
 * Checked against GStreamer 1.22 (gst-plugins-bad/gst-libs/gst/cuda/
 * gstcudacontext.[ch], gstcudautils.[ch], gstcudamemory.[ch],
 * gstcudabufferpool.[ch], gstcudaloader.[ch]) and against the Debian 12
 * binary libgstcuda-1.0.so.0.2200.0 (exported symbols, strings and code):
 *
 * - GST_MAP_CUDA is (GST_MAP_FLAG_LAST << 1) = 1 << 17 = 0x20000.
 * - GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY is "memory:CUDAMemory",
 *   GST_CUDA_CONTEXT_TYPE is "gst.cuda.context", the context's device
 *   property is "cuda-device-id" (guint, construct-only), and the GstContext
 *   structure holds the context under the field "gst.cuda.context" and the
 *   device under "cuda-device-id" (G_TYPE_UINT).
 * - libgstcuda loads libcuda itself, lazily, in gst_cuda_load_library ().
 *   gst_cuda_context_new (), gst_cuda_context_new_wrapped () and
 *   gst_cuda_ensure_element_context () do NOT call it: without it their
 *   first driver call hits g_assert (gst_cuda_vtable.CuInit != NULL) and
 *   aborts.  Worse, when cuInit fails inside libgstcuda 1.22, it passes 0 to
 *   g_once_init_leave (): a g_critical, and the next call blocks forever.
 *   So the wrappers that can reach the driver first check that our own
 *   loader (gpushare_cuda_load, which runs cuInit) succeeds, then call
 *   gst_cuda_load_library (); only then do they call libgstcuda.
 * - A GstCudaMemory (1.22) is one cuMemAllocPitch allocation holding every
 *   plane, in a GstCudaContext made with cuCtxCreate (its own CUcontext, not
 *   the primary one).  gst_memory_map (mem, &map, GST_MAP_READ |
 *   GST_MAP_CUDA) returns the CUdeviceptr of the allocation in map.data
 *   (cast it: (CUdeviceptr) map.data) and map.size = pitch * rows; if a CPU
 *   write is pending it is uploaded first (a synchronous cuMemcpy2D).
 *   GST_MAP_WRITE | GST_MAP_CUDA marks the staging copy stale, so a later CPU
 *   map downloads again.  A map without GST_MAP_CUDA gives a host staging
 *   copy, downloaded once and then cached; only the visible bytes of each
 *   row are copied, not the padding up to the pitch (seen on the H200).
 * - Plane layout: every plane has the same pitch (stride[i] = pitch, e.g. for
 *   NV12 and I420 too) and plane i starts at offset[i] = pitch * rows of the
 *   planes before it; this is not the default GstVideoInfo layout (on the
 *   H200: I420 1920x1080 has pitch 2048 for all three planes, offsets 0,
 *   2211840, 3317760; NV12 70x46 pitch 512, offsets 0, 23552).  It is
 *   held in the memory's own GstVideoInfo (GstCudaMemory.info), and
 *   GstCudaBufferPool copies it into a GstVideoMeta that it adds to every
 *   buffer, unconditionally.  So map the buffer with gst_video_frame_map
 *   (&frame, &info, buf, GST_MAP_READ | GST_MAP_CUDA) (GstVideoMeta is used
 *   when present): GST_VIDEO_FRAME_PLANE_DATA (&frame, i) is the plane's
 *   CUdeviceptr and GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i) its pitch, which
 *   is what cuMemcpy2DAsync needs (this is exactly what 1.22's own
 *   gst_cuda_buffer_copy does).  A CUDA memory without a GstVideoMeta did not
 *   come from the pool: refuse it rather than guess its layout.
 * - GstCudaBufferPool (1.22) needs gst_cuda_memory_init_once () to have run
 *   (its set_config looks the allocator up with gst_allocator_find
 *   ("gst.cuda.memory") and fails with "CudaAllocator is unavailable"
 *   otherwise; the nvcodec plugin calls it at plugin init, we call it in
 *   gpushare_gst_cuda_buffer_pool_new ()).  Its config must carry caps
 *   (gst_buffer_pool_config_set_params with video caps): it fails with "no
 *   caps in config" otherwise, and it rewrites the size to the pitched one.
 *   It announces GST_BUFFER_POOL_OPTION_VIDEO_META and adds a GstVideoMeta to
 *   every buffer whether or not the option is set.  Each buffer holds one
 *   GstCudaMemory.
 * - 1.22 has no CUDA stream in its memory: nvcodec elements synchronise
 *   before they push, and they read with synchronous copies.  So an element
 *   that writes into a GstCudaMemory with cuMemcpy2DAsync must synchronise its
 *   stream before the buffer leaves it; one that reads from one may copy
 *   on its own stream.  The memory belongs to its GstCudaContext's CUcontext
 *   (gpushare_gst_cuda_memory_get_context, then _context_get_handle), but
 *   with unified addressing a copy from it with our primary context current
 *   (cuMemcpyDtoDAsync, cuMemcpy2DAsync on our own stream) worked on the
 *   H200, same device.  To keep one context in the pipeline instead, answer
 *   the neighbours' context query with a context wrapped around our primary
 *   context (gpushare_gst_cuda_context_new_wrapped).
 * - The same prototypes hold in 1.24 and later under the same soname; we call
 *   neither gst_cuda_allocator_alloc (its signature changed in 1.24) nor
 *   anything that depends on allocator struct sizes.
 *
 * What changed in 1.24 (checked against gst-plugins-bad 1.24 and 1.26,
 * gstcudamemory.cpp, and the Debian 13 binary of 1.26.2):
 * - A GstCudaMemory may carry a GstCudaStream.  Whoever writes it on that
 *   stream (nvh264dec, cudaupload, cudaconvert) does not wait for the work
 *   to finish: it sets the memory flag GST_CUDA_MEMORY_TRANSFER_NEED_SYNC
 *   and pushes.  A map with GST_MAP_CUDA does NOT wait; a CPU map does.  A
 *   reader on a device pointer must call gst_cuda_memory_sync () first
 *   (it synchronises the memory's stream when the flag is set, and clears
 *   it): gpushare_gst_cuda_memory_sync ().
 * - Memory without a stream (a pool whose config names none, as ours) is
 *   complete when it is pushed: its writer synchronised.
 * - gst_cuda_allocator_alloc_wrapped () (new in 1.24) makes a GstCudaMemory
 *   around a device pointer the caller owns; with a notify, the pointer is
 *   not freed, notify is called when the memory is: the import path of
 *   gpusharesrc.  The memory's GstVideoInfo must describe the real layout;
 *   its pitch is stride[0] and its row count size / stride[0].
 * Which calls are used is decided once, at load, from the core's version
 *   and the symbols the library has (gpushare_gst_cuda_abi_for ()): 1.22
 *   and 1.23 without the stream calls, 1.24 and later with them; a mix is
 *   not used, with the reason.  The two struct heads read
 *   (GstCudaBufferPool's, GstCudaMemory's) are checked against the running
 *   library: the pool's at load (a pool made for a context must hold it
 *   there), the memory's on the first memory wrapped; a library whose
 *   layout differs is not used, and the warning says so.  Versions after
 *   GPUSHARE_GST_CUDA_NEWEST_MINOR, the newest run on a GPU, are used
 *   after those checks, with a note in the log.
 *
 * Every wrapper returns FALSE, NULL or -1 when the library is not loaded.
 * Call gpushare_gst_cuda_load () first (once per process is enough).
 */

#ifndef __GPUSHARE_GST_CUDA_H__
#define __GPUSHARE_GST_CUDA_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include "gpusharecudadriver.h"

G_BEGIN_DECLS

/* GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY of 1.22 */
#define GPUSHARE_CAPS_FEATURE_MEMORY_CUDA "memory:CUDAMemory"
/* GST_MAP_CUDA of 1.22: map.data is then a CUdeviceptr */
#define GPUSHARE_MAP_CUDA (GST_MAP_FLAG_LAST << 1)
/* GST_CUDA_CONTEXT_TYPE of 1.22: the GstContext type and structure field */
#define GPUSHARE_CUDA_CONTEXT_TYPE "gst.cuda.context"
/* GST_CUDA_MEMORY_TYPE_NAME of 1.22: the allocator's memory type */
#define GPUSHARE_CUDA_MEMORY_TYPE_NAME "gst.cuda.memory"
/* the soname we open */
#define GPUSHARE_GST_CUDA_LIBNAME "libgstcuda-1.0.so.0"

/* the newest minor version of GStreamer 1.x this binding was run with on a
 * GPU; newer ones are used once their layouts checked out */
#define GPUSHARE_GST_CUDA_NEWEST_MINOR 28

typedef enum
{
  GPUSHARE_GST_CUDA_ABI_NONE = 0,       /* not loaded, or not usable */
  GPUSHARE_GST_CUDA_ABI_1_22,   /* memory is complete when pushed */
  GPUSHARE_GST_CUDA_ABI_1_24,   /* memory ordered on a stream; wrapping */
} GpuShareGstCudaAbi;

/* Which calls suit a libgstcuda of GStreamer major.minor that has (or not)
 * the stream calls of 1.24.  NONE, with why_not (free it), for versions
 * before 1.22 and mixed versions. */
GpuShareGstCudaAbi gpushare_gst_cuda_abi_for (guint major, guint minor,
    gboolean has_streams, gchar ** why_not);
/* Whether @pool, made by the running library for @cuda_ctx, is laid out
 * as the GstCudaBufferPool head this binding reads and writes; FALSE with
 * why_not (free it).  Checked once at load. */
gboolean gpushare_gst_cuda_pool_layout_ok (GstBufferPool * pool,
    GstObject * cuda_ctx, gchar ** why_not);
/* Whether @mem, a CUDA memory of @cuda_ctx laid out as @info, holds them
 * where the GstCudaMemory head this binding reads says; FALSE with
 * why_not (free it).  Checked on the first memory wrapped. */
gboolean gpushare_gst_cuda_memory_layout_ok (GstMemory * mem,
    GstObject * cuda_ctx, const GstVideoInfo * info, gchar ** why_not);
/* the calls in use, once loaded */
GpuShareGstCudaAbi gpushare_gst_cuda_abi (void);

/* Opens libgstcuda-1.0.so.0 once per process and resolves the functions
 * below.  FALSE with a reason (not installed, a function missing).  It does
 * not need a GPU or the NVIDIA driver: the wrappers that do check for them
 * themselves. */
gboolean gpushare_gst_cuda_load (GError ** error);
/* TRUE once gpushare_gst_cuda_load () succeeded */
gboolean gpushare_gst_cuda_is_loaded (void);

/* gst_cuda_ensure_element_context (): looks for a context downstream,
 * upstream, then with a need-context message; creates one for @device_id
 * (-1: any, that is device 0) when none is found and posts have-context.
 * The element's set_context vfunc must call
 * gpushare_gst_cuda_handle_set_context () on the very same @cuda_ctx
 * location: the neighbours' answer reaches it that way.  FALSE (and nothing
 * created) without a usable driver. */
gboolean gpushare_gst_cuda_ensure_element_context (GstElement * element,
    gint device_id, GstObject ** cuda_ctx);
/* gst_cuda_handle_set_context (): for the set_context vfunc; takes the
 * context from a "gst.cuda.context" GstContext (transfer full into
 * @cuda_ctx) when @cuda_ctx is still NULL and the device matches (-1: any).
 * TRUE when @cuda_ctx holds a context afterwards. */
gboolean gpushare_gst_cuda_handle_set_context (GstElement * element,
    GstContext * context, gint device_id, GstObject ** cuda_ctx);
/* gst_cuda_handle_context_query (): answers a "gst.cuda.context" context
 * query with @cuda_ctx (transfer none, may be NULL: then FALSE). */
gboolean gpushare_gst_cuda_handle_context_query (GstElement * element,
    GstQuery * query, GstObject * cuda_ctx);

/* gst_cuda_context_new (): a new context (its own CUcontext, made with
 * cuCtxCreate) on @device_id (< 0: device 0); NULL without a usable driver
 * or device.  Transfer full. */
GstObject *gpushare_gst_cuda_context_new (gint device_id);
/* gst_cuda_context_new_wrapped (): a context around an existing @handle
 * (e.g. our retained primary context) of @device; the caller keeps @handle
 * alive as long as the returned object lives.  Transfer full. */
GstObject *gpushare_gst_cuda_context_new_wrapped (CUcontext handle,
    CUdevice device);
/* gst_context_new_cuda_context (): a "gst.cuda.context" GstContext that
 * holds @cuda_ctx, for a have-context message.  Transfer full. */
GstContext *gpushare_gst_cuda_context_to_gst_context (GstObject * cuda_ctx);
/* gst_cuda_context_get_handle (): the CUcontext, owned by @cuda_ctx */
CUcontext gpushare_gst_cuda_context_get_handle (GstObject * cuda_ctx);
/* the "cuda-device-id" property; -1 when @cuda_ctx is no GstCudaContext */
gint gpushare_gst_cuda_context_get_device_id (GstObject * cuda_ctx);
/* G_TYPE_CHECK_INSTANCE_TYPE against gst_cuda_context_get_type () */
gboolean gpushare_gst_cuda_is_cuda_context (GstObject * obj);
/* gst_cuda_context_get_type (); G_TYPE_INVALID when not loaded */
GType gpushare_gst_cuda_context_get_type (void);

/* gst_is_cuda_memory (): allocated by a GstCudaAllocator */
gboolean gpushare_gst_cuda_is_cuda_memory (GstMemory * mem);
/* the GstCudaContext a CUDA memory belongs to (GstCudaMemory.context, a
 * public field at the same place since 1.22); transfer none; NULL when @mem
 * is no CUDA memory */
GstObject *gpushare_gst_cuda_memory_get_context (GstMemory * mem);

/* gst_cuda_buffer_pool_new (), after gst_cuda_memory_init_once (); see the
 * notes above for its config.  Transfer full. */
GstBufferPool *gpushare_gst_cuda_buffer_pool_new (GstObject * cuda_ctx);

/* gst_cuda_memory_sync () (1.24+): waits until the memory's stream has
 * finished writing it; nothing on 1.22, where memory is complete when
 * pushed, and for memory that is no CUDA memory.  Call it before reading
 * through a GPUSHARE_MAP_CUDA map. */
void gpushare_gst_cuda_memory_sync (GstMemory * mem);

/* The CUDA stream a 1.24+ memory is ordered on (gst_cuda_memory_get_stream
 * (), gst_cuda_stream_get_handle ()), when its context's handle is @ctx:
 * a reader in @ctx may then order its work after the writer's with an
 * event instead of waiting on the host, and order the writer's next use
 * after its own.  NULL: 1.22, no stream (the memory is complete when
 * pushed), or another context (an event of ours cannot be recorded on its
 * stream), with the reason in @why_not. */
CUstream gpushare_gst_cuda_memory_stream (GstMemory * mem, CUcontext ctx,
    const gchar ** why_not);

/* gst_cuda_allocator_alloc_wrapped () (1.24+): a CUDA memory of @cuda_ctx
 * around @ptr, laid out as @info (one pitch, stride[0], for every plane),
 * ordered on @stream (a GstCudaStream, or NULL: complete when handed out).
 * @ptr is not freed: @notify (@user_data) is called when the memory is.
 * NULL (and @notify never called) on 1.22, when @cuda_ctx is no
 * GstCudaContext, or when the library's memory is laid out otherwise than
 * gpushare knows.  Transfer full. */
GstMemory *gpushare_gst_cuda_memory_wrap (GstObject * cuda_ctx,
    gpointer stream, const GstVideoInfo * info, CUdeviceptr ptr,
    gpointer user_data, GDestroyNotify notify);
/* GStreamer's CUDA memory describes a frame by one pitch, stride[0], for
 * every plane and size / pitch rows: whether @info is such a layout, of at
 * most @max_size bytes; FALSE with a static reason in *why_not */
gboolean gpushare_gst_cuda_layout_wrappable (const GstVideoInfo * info,
    gsize max_size, const gchar ** why_not);
/* gst_cuda_allocator_alloc () with 1.24's prototype: a pitched CUDA memory
 * of @cuda_ctx for @info; NULL on 1.22 (whose prototype differs) or
 * without a driver.  Its layout: gpushare_gst_cuda_memory_get_info (). */
GstMemory *gpushare_gst_cuda_memory_alloc (GstObject * cuda_ctx,
    gpointer stream, const GstVideoInfo * info);
/* GstCudaMemory.info: the memory's own layout; NULL for other memory */
const GstVideoInfo *gpushare_gst_cuda_memory_get_info (GstMemory * mem);

/* gst_cuda_buffer_pool_get_type (); G_TYPE_INVALID on 1.22 (the pool of
 * slots that derives from it is 1.24+ only) or when not loaded */
GType gpushare_gst_cuda_buffer_pool_get_type (void);
/* GstCudaBufferPool.context of a pool of that type (NULL otherwise), and
 * setting it (a reference is taken; the pool's dispose drops it) */
GstObject *gpushare_gst_cuda_buffer_pool_get_context (GstBufferPool * pool);
void gpushare_gst_cuda_buffer_pool_set_context (GstBufferPool * pool,
    GstObject * cuda_ctx);

G_END_DECLS

#endif /* __GPUSHARE_GST_CUDA_H__ */

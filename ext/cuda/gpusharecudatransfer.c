/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GPU transfer (gpusharexfer.h) over CUDA: rings and views of
 * gpusharecudaring.h, the device probe of gpusharecuda.h and GStreamer's
 * CUDA library (gpusharegstcuda.h).  Registered by the plugin at load.
 */

#include "gpusharecudatransfer.h"

#include <string.h>

#include "gpusharecudaloader.h"

#include "gpusharecuda.h"
#include "gpusharecudaring.h"
#include "gpusharegstcuda.h"
#include "gpusharecudaslotpool.h"
#include "gpusharecudapolicy.h"

GST_DEBUG_CATEGORY_STATIC (gpushare_xfer_cuda_debug);
#define GST_CAT_DEFAULT gpushare_xfer_cuda_debug

#define CUDA_RING(r) ((GpuShareCudaRing *) (r))
#define CUDA_VIEW(v) ((GpuShareCudaView *) (v))

static gboolean
cuda_probe (gint device, GpuShareGpuInfo * info, GError ** error)
{
  GpuShareCudaCaps caps;

  if (!gpushare_cuda_probe (device, &caps, error))
    return FALSE;
  info->device = device;
  g_strlcpy (info->name, caps.name, sizeof (info->name));
  memcpy (info->uuid, caps.uuid, 16);
  info->vmm = caps.vmm;
  info->posix_fd = caps.posix_fd;
  info->unified_addressing = caps.unified_addressing;
  info->fabric = caps.fabric;
  info->mps = caps.mps;
  info->compute_mode = caps.compute_mode;
  info->device_caps = (caps.posix_fd ? GPUSHARE_DEVICE_CAP_VMM_FD : 0) |
      (caps.fabric ? GPUSHARE_DEVICE_CAP_FABRIC : 0) |
      (caps.ipc_event ? GPUSHARE_DEVICE_CAP_IPC_EVENT : 0) |
      (caps.mem_ops_64 ? GPUSHARE_DEVICE_CAP_MEM_OPS : 0) |
      (caps.unified_addressing ? GPUSHARE_DEVICE_CAP_LEGACY_IPC : 0) |
      (caps.mig ? GPUSHARE_DEVICE_CAP_MIG : 0);
  info->sync_modes = gpushare_cuda_sync_modes (&caps);
  return TRUE;
}

static void
cuda_peer (gint reader, const guint8 uuid[16], GpuSharePeerInfo * peer)
{
  GError *error = NULL;

  peer->owner = gpushare_cuda_find_device (uuid);
  peer->visible = peer->owner >= 0;
  if (!peer->visible)
    return;
  peer->reachable = gpushare_cuda_peer_probe (reader, peer->owner,
      &peer->atomics, &peer->rank, &error);
  if (!peer->reachable) {
    peer->error = g_strdup (error->message);
    g_clear_error (&error);
  }
}

static gboolean
cuda_library_ok (void)
{
  return gpushare_gst_cuda_load (NULL);
}

#define SHARED_MAX_DEVICES 64

/* One CUDA context per process: the device's primary context, which
 * gpushare's rings and views work in, wrapped as a GstCudaContext for the
 * neighbouring CUDA elements (nvh264dec, cudaupload, cudadownload,
 * cudaconvert), instead of the context of its own that GStreamer's library
 * would make (cuCtxCreate: several hundred MiB of device memory more).
 * Made once per device and kept, with its retain of the primary context,
 * for the process's life. */
static GstObject *
shared_context (gint device)
{
  static GMutex lock;
  static GstObject *contexts[SHARED_MAX_DEVICES];
  GstObject *ctx = NULL;
  GError *error = NULL;
  CUcontext handle;
  CUdevice dev;

  if (device < 0)
    device = 0;
  if (device >= SHARED_MAX_DEVICES || !gpushare_cuda_load (NULL)
      || !gpushare_gst_cuda_load (NULL))
    return NULL;
  g_mutex_lock (&lock);
  if (!contexts[device]
      && gpushare_cuda ()->cuDeviceGet (&dev, device) == CUDA_SUCCESS
      && gpushare_cuda_primary_retain (device, &handle, &error)) {
    contexts[device] = gpushare_gst_cuda_context_new_wrapped (handle, dev);
    if (!contexts[device])
      gpushare_cuda ()->cuDevicePrimaryCtxRelease (dev);
    else
      GST_INFO ("GPU %d: the primary context, shared with GStreamer's CUDA "
          "elements", device);
  }
  if (contexts[device])
    ctx = gst_object_ref (contexts[device]);
  g_mutex_unlock (&lock);
  if (error) {
    GST_WARNING ("GPU %d: no CUDA context for GStreamer's elements: %s",
        device, error->message);
    g_error_free (error);
  }
  return ctx;
}

/* a neighbour's context, as gst_cuda_ensure_element_context () finds one:
 * a context query to the peers of every pad, then a need-context message
 * (the application or the bin may answer it with set_context, which puts
 * the context into *ctx) */
typedef struct
{
  GstQuery *query;
  gint device;
  GstObject **ctx;
} NeighbourQuery;

static gboolean
query_peer (GstElement * element, GstPad * pad, gpointer data)
{
  NeighbourQuery *q = data;
  GstContext *context = NULL;

  if (gst_pad_peer_query (pad, q->query)) {
    gst_query_parse_context (q->query, &context);
    if (context)
      gpushare_gst_cuda_handle_set_context (element, context, q->device,
          q->ctx);
  }
  /* on to the next pad while none was found */
  return *q->ctx == NULL;
}

static gboolean
neighbour_context (GstElement * element, gint device, GstObject ** ctx)
{
  NeighbourQuery q = { gst_query_new_context (GPUSHARE_CUDA_CONTEXT_TYPE),
    device, ctx
  };

  gst_element_foreach_pad (element, query_peer, &q);
  gst_query_unref (q.query);
  if (!*ctx)
    gst_element_post_message (element, gst_message_new_need_context
        (GST_OBJECT (element), GPUSHARE_CUDA_CONTEXT_TYPE));
  return *ctx != NULL;
}

static gboolean
cuda_context_ensure (GstElement * element, gint device, GstObject ** ctx)
{
  GstContext *context;

  /* without GStreamer's CUDA library we work in the primary context */
  if (*ctx || !gpushare_gst_cuda_load (NULL))
    return *ctx != NULL;
  /* a context a neighbour or the application already has (it may be
   * ours, from the other element of this process) */
  if (neighbour_context (element, device, ctx))
    return TRUE;
  *ctx = shared_context (device);
  if (!*ctx)
    return FALSE;
  /* for the neighbours that start after us, and the bin */
  context = gpushare_gst_cuda_context_to_gst_context (*ctx);
  gst_element_set_context (element, context);
  gst_element_post_message (element, gst_message_new_have_context
      (GST_OBJECT (element), context));
  return TRUE;
}

static gboolean
cuda_context_set (GstElement * element, GstContext * context, gint device,
    GstObject ** ctx)
{
  return gpushare_gst_cuda_load (NULL)
      && gpushare_gst_cuda_handle_set_context (element, context, device, ctx);
}

static gboolean
cuda_context_query (GstElement * element, GstQuery * query, gint device,
    GstObject ** ctx)
{
  const gchar *type = NULL;
  GstObject *shared;
  gboolean ok;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT
      || !gst_query_parse_context_type (query, &type)
      || g_strcmp0 (type, GPUSHARE_CUDA_CONTEXT_TYPE) != 0)
    return FALSE;
  if (*ctx)
    return gpushare_gst_cuda_handle_context_query (element, query, *ctx);
  /* a neighbour starting before us asks: it gets the primary context, so
   * that the process keeps one.  Not stored: the query may come from any
   * thread; the element finds it again from that neighbour when it
   * starts */
  shared = shared_context (device);
  ok = shared && gpushare_gst_cuda_handle_context_query (element, query,
      shared);
  gst_clear_object (&shared);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* Producer */

static GpuShareXferRing *
cuda_ring_new (gint device, GpuShareMemType type, guint64 epoch,
    guint n_slots, gsize frame_size, GError ** error)
{
  GpuShareCudaRing *ring;
  /* the allocation granularity of this very device */
  gsize slot_size = gpushare_cuda_vmm_slot_size (device, frame_size);

  /* the primary context: the IPC events and semaphore blocks live there,
   * and an event is recorded only on a stream of its own context; copies
   * from neighbours' CUDA memory work across contexts of one device */
  ring = gpushare_cuda_ring_new (device, NULL, type, epoch, n_slots,
      slot_size, error);
  return (GpuShareXferRing *) ring;
}

static void
cuda_ring_free (GpuShareXferRing * ring)
{
  gpushare_cuda_ring_free (CUDA_RING (ring));
}

static gboolean
cuda_add_consumer (GpuShareXferRing * ring, guint index,
    GpuShareSyncMode mode, guint minor, GError ** error)
{
  GError *why = NULL;

  if (!gpushare_cuda_ring_add_consumer (CUDA_RING (ring), index, mode, error))
    return FALSE;
  /* a consumer that knows them reads its ready words on the host; without
   * them it waits on the device, as before minor 12 */
  if (mode == GPUSHARE_SYNC_SEMAPHORE && minor >= GPUSHARE_MINOR_HOST_WORDS
      && !gpushare_cuda_ring_add_words (CUDA_RING (ring), index, &why)) {
    GST_WARNING ("consumer %u waits on the device for its frames: no ready "
        "words in host memory: %s", index, why->message);
    g_clear_error (&why);
  }
  return TRUE;
}

static void
cuda_remove_consumer (GpuShareXferRing * ring, guint index)
{
  gpushare_cuda_ring_remove_consumer (CUDA_RING (ring), index);
}

static gboolean
cuda_export (GpuShareXferRing * ring, guint index, GpuShareSlots * slots,
    gint * fds, guint * n_fds, GError ** error)
{
  if (!gpushare_cuda_ring_export (CUDA_RING (ring), index, slots, fds, error))
    return FALSE;
  *n_fds = gpushare_slots_n_fds (slots);
  return TRUE;
}

static void
planes_from_info (GpuSharePlanes * p, const GstVideoInfo * info,
    gboolean device, guintptr base)
{
  guint i;

  memset (p, 0, sizeof (*p));
  p->device = device;
  p->base = base;
  for (i = 0; i < GST_VIDEO_INFO_N_PLANES (info); i++) {
    p->offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (info, i);
    p->stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (info, i);
  }
}

/* the memory is the slot itself */
static gboolean
cuda_holds (GpuShareXferRing * ring, guint slot, GstMemory * mem)
{
  GstMapInfo map;
  gboolean same;

  if (!ring->device_ptr[slot] || !gpushare_gst_cuda_is_cuda_memory (mem)
      || !gst_memory_map (mem, &map, GST_MAP_READ | GPUSHARE_MAP_CUDA))
    return FALSE;
  same = (guintptr) map.data == ring->device_ptr[slot];
  gst_memory_unmap (mem, &map);
  return same;
}

static gboolean
cuda_prepare (GpuShareXferRing * ring, guint slot, GError ** error)
{
  return gpushare_cuda_ring_prepare (CUDA_RING (ring), slot, error);
}

static gboolean
cuda_settle (GpuShareXferRing * ring, guint slot, GError ** error)
{
  return gpushare_cuda_ring_settle (CUDA_RING (ring), slot, error);
}

/* the stream upstream wrote mem on, for our work to wait on, on the
 * device; NULL: the host waits */
static CUstream
upstream_stream (GpuShareCudaRing * ring, GstMemory * mem)
{
  const gchar *how = "ordered on its stream, on the device";
  CUstream stream = gpushare_gst_cuda_memory_stream (mem,
      gpushare_cuda_ring_context (ring), &how);

  if (gpushare_cuda_ring_note_upstream (ring, how))
    GST_INFO ("upstream's CUDA memory: %s%s", stream ? "" : "waited for on "
        "the host: ", how);
  return stream;
}

/* mem is CUDA memory of the context ctx */
static gboolean
memory_of_context (GstMemory * mem, CUcontext ctx)
{
  GstObject *mem_ctx = gpushare_gst_cuda_is_cuda_memory (mem) ?
      gpushare_gst_cuda_memory_get_context (mem) : NULL;

  return mem_ctx && gpushare_gst_cuda_context_get_handle (mem_ctx) == ctx;
}

/* Writes the frame into the CUDA slot: from upstream's GPU memory (one
 * copy on the device), from the system-memory slot it is already in, or
 * from upstream's system memory (one upload). */
static gboolean
cuda_write (GpuShareXferRing * ring, guint slot, const GstVideoInfo * info,
    GstBuffer * buf, GpuShareXferRing * staged, GError ** error)
{
  GpuShareCudaRing *cring = CUDA_RING (ring);
  GpuSharePlanes src, dst;
  GstVideoMeta *meta = gst_buffer_get_video_meta (buf);
  GstVideoFrame frame;
  GstMemory *mem = NULL;
  GstMapInfo map;
  gboolean ok, mapped_frame = FALSE;
  CUstream upstream = NULL;
  guint i;

  if (gst_buffer_n_memory (buf) == 1
      && gpushare_gst_cuda_is_cuda_memory (gst_buffer_peek_memory (buf, 0))
      && cuda_holds (ring, slot, gst_buffer_peek_memory (buf, 0))) {
    /* upstream wrote the slot itself (a buffer of the pool of slots), after
     * prepare () saw its readers gone: what we signal waits for upstream's
     * stream on the device, or, without one, on the host */
    mem = gst_buffer_peek_memory (buf, 0);
    upstream = upstream_stream (CUDA_RING (ring), mem);
    if (!upstream)
      gpushare_gst_cuda_memory_sync (mem);
    return gpushare_cuda_ring_written (cring, slot, upstream, error);
  }
  if (!gpushare_cuda_ring_begin (cring, slot, error))
    return FALSE;
  planes_from_info (&dst, info, TRUE, 0);
  if (gst_buffer_n_memory (buf) > 0
      && gpushare_gst_cuda_is_cuda_memory (gst_buffer_peek_memory (buf, 0))) {
    if (!meta) {
      /* CUDA memory is pitched: without its meta its layout is unknown */
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "CUDA memory without a GstVideoMeta");
      return FALSE;
    }
    mem = gst_buffer_peek_memory (buf, 0);
    /* 1.24+: upstream's stream may still be writing it, and a map with
     * GST_MAP_CUDA does not wait: our copy waits for that stream on the
     * device, or, without one we may wait on, we wait on the host */
    upstream = upstream_stream (CUDA_RING (ring), mem);
    if (!upstream)
      gpushare_gst_cuda_memory_sync (mem);
    if (!gst_memory_map (mem, &map, GST_MAP_READ | GPUSHARE_MAP_CUDA)) {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "could not map upstream's CUDA memory");
      return FALSE;
    }
    planes_from_info (&src, info, TRUE, (guintptr) map.data);
    for (i = 0; i < meta->n_planes; i++) {
      src.offset[i] = meta->offset[i];
      src.stride[i] = meta->stride[i];
    }
  } else if (staged && staged->data[slot]) {
    planes_from_info (&src, info, FALSE, (guintptr) staged->data[slot]);
  } else {
    if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ)) {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "could not map the frame");
      return FALSE;
    }
    mapped_frame = TRUE;
    planes_from_info (&src, info, FALSE, 0);
    for (i = 0; i < GST_VIDEO_FRAME_N_PLANES (&frame); i++) {
      src.offset[i] = (gsize) GST_VIDEO_FRAME_PLANE_DATA (&frame, i);
      src.stride[i] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i);
    }
  }
  /* from upstream's device memory: its buffer kept until the copy is
   * done rather than waited for on the host */
  ok = gpushare_cuda_ring_copy_in (cring, slot, info, &src, &dst, upstream,
      mem ? buf : NULL, mem && memory_of_context (mem,
          gpushare_cuda_ring_context (cring)), error);
  if (mem)
    gst_memory_unmap (mem, &map);
  if (mapped_frame)
    gst_video_frame_unmap (&frame);
  return ok;
}

/* a payload of the frame's metas in upstream's CUDA memory (one memory),
 * copied past the frame on the device, ordered as the frame's copy is */
static gboolean
cuda_write_region (GpuShareXferRing * ring, guint slot, gsize offset,
    GstBuffer * src, gsize src_offset, gsize src_stride, gsize row_bytes,
    guint rows, GError ** error)
{
  GstMemory *mem = gst_buffer_n_memory (src) == 1 ?
      gst_buffer_peek_memory (src, 0) : NULL;
  CUstream upstream;
  GstMapInfo map;
  gboolean ok;

  if (!mem || !gpushare_gst_cuda_is_cuda_memory (mem)) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "a payload in GPU memory other than one CUDA memory");
    return FALSE;
  }
  upstream = upstream_stream (CUDA_RING (ring), mem);
  if (!upstream)
    gpushare_gst_cuda_memory_sync (mem);
  if (!gst_memory_map (mem, &map, GST_MAP_READ | GPUSHARE_MAP_CUDA)) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "could not map a payload's CUDA memory");
    return FALSE;
  }
  if (src_offset > map.size || (rows > 0 && ((guint64) src_stride * (rows - 1)
              + row_bytes > map.size - src_offset))) {
    gst_memory_unmap (mem, &map);
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "a payload larger than its CUDA memory");
    return FALSE;
  }
  ok = gpushare_cuda_ring_copy_region (CUDA_RING (ring), slot, offset,
      (CUdeviceptr) map.data + src_offset, src_stride, row_bytes, rows,
      upstream, error);
  gst_memory_unmap (mem, &map);
  return ok;
}

static void
cuda_take_waits (GpuShareXferRing * ring, guint64 * wait_us, guint64 * spin_us)
{
  gpushare_cuda_ring_take_waits (CUDA_RING (ring), wait_us, spin_us);
}

static gboolean
cuda_needs_settle (GpuShareXferRing * ring, guint slot, guint64 holders)
{
  return gpushare_cuda_ring_needs_settle (CUDA_RING (ring), slot, holders);
}

static gboolean
cuda_publish (GpuShareXferRing * ring, guint slot, guint64 holders,
    guint64 sequence, GError ** error)
{
  return gpushare_cuda_ring_publish (CUDA_RING (ring), slot,
      holders, sequence, error);
}

static guint64
cuda_overdue (GpuShareXferRing * ring, gint64 now, gint64 limit_us,
    guint64 * sequences)
{
  return gpushare_cuda_ring_overdue (CUDA_RING (ring), now, limit_us,
      sequences);
}

/* ------------------------------------------------------------------------ */
/* Consumer */

static GpuShareXferView *
cuda_view_new (gint device, const GpuShareSlots * slots, gint * fds,
    GError ** error)
{
  /* the primary context, as the producer's ring */
  return (GpuShareXferView *) gpushare_cuda_view_new (device, NULL, slots,
      fds, error);
}

static void
cuda_view_free (GpuShareXferView * view)
{
  gpushare_cuda_view_free (CUDA_VIEW (view));
}

/* One copy out of the GPU slot, on the device into a buffer of a CUDA pool
 * or downloaded into system memory; done is signalled once it is made. */
static gboolean
cuda_read (GpuShareXferView * view, guint slot, guint64 sequence,
    const GstVideoInfo * slot_info, const GstVideoInfo * dst_info,
    GstBuffer * dst, gboolean dst_device, GError ** error)
{
  GpuSharePlanes src, out;
  GstVideoFrame frame;
  gboolean ok, own;
  guint i;

  /* 1.24+: a buffer of a pool with a stream may still be read there */
  if (dst_device)
    for (i = 0; i < gst_buffer_n_memory (dst); i++)
      gpushare_gst_cuda_memory_sync (gst_buffer_peek_memory (dst, i));
  if (!gst_video_frame_map (&frame, dst_info, dst, GST_MAP_WRITE |
          (dst_device ? GPUSHARE_MAP_CUDA : 0))) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "could not map the output buffer");
    return FALSE;
  }
  memset (&src, 0, sizeof (src));
  memset (&out, 0, sizeof (out));
  src.device = TRUE;
  out.device = dst_device;
  for (i = 0; i < GST_VIDEO_INFO_N_PLANES (dst_info); i++) {
    src.offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (slot_info, i);
    src.stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (slot_info, i);
    out.offset[i] = (gsize) GST_VIDEO_FRAME_PLANE_DATA (&frame, i);
    out.stride[i] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i);
  }
  own = dst_device && gst_buffer_n_memory (dst) > 0;
  for (i = 0; own && i < gst_buffer_n_memory (dst); i++)
    own = memory_of_context (gst_buffer_peek_memory (dst, i),
        gpushare_cuda_view_context (CUDA_VIEW (view)));
  ok = gpushare_cuda_view_read (CUDA_VIEW (view), slot, sequence,
      dst_info, &src, &out, own, error);
  gst_video_frame_unmap (&frame);
  return ok;
}

static gboolean
cuda_skip (GpuShareXferView * view, guint slot, guint64 sequence,
    GError ** error)
{
  return gpushare_cuda_view_skip (CUDA_VIEW (view), slot, sequence, error);
}

static gboolean
cuda_wait_ready (GpuShareXferView * view, guint slot, guint64 sequence,
    GError ** error)
{
  return gpushare_cuda_view_wait_ready (CUDA_VIEW (view), slot,
      sequence, error);
}

static gboolean
cuda_done (GpuShareXferView * view, guint slot, guint64 sequence,
    GError ** error)
{
  return gpushare_cuda_view_done (CUDA_VIEW (view), slot, sequence, error);
}

static void
cuda_cancel (GpuShareXferView * view, gboolean cancel)
{
  gpushare_cuda_view_cancel (CUDA_VIEW (view), cancel);
}

static gboolean
cuda_can_import (const GstVideoInfo * info, gsize slot_size,
    const gchar ** why_not)
{
  if (!gpushare_gst_cuda_load (NULL)) {
    *why_not = "GStreamer's CUDA library is not usable here";
    return FALSE;
  }
  if (gpushare_gst_cuda_abi () != GPUSHARE_GST_CUDA_ABI_1_24) {
    *why_not = "GStreamer 1.22's CUDA library cannot wrap device memory "
        "(1.24 and later can)";
    return FALSE;
  }
  /* a slot laid out otherwise than GStreamer's CUDA memory can say is
   * copied */
  return !info || gpushare_gst_cuda_layout_wrappable (info, slot_size, why_not);
}

/* Downstream dropped its last reference, but may have queued reads of the
 * slot on a stream of its own that have not run yet (1.24+ elements do not
 * wait for their work before they drop their input): everything queued in
 * the memory's context is waited for before the producer may write the
 * slot again.  The elements of this process share that context
 * (gpusharesrc answers their context queries with it). */
static void
cuda_quiesce (GstObject * ctx)
{
  CUcontext handle = gpushare_gst_cuda_context_get_handle (ctx);

  if (handle && gpushare_cuda ()->cuCtxPushCurrent (handle) == CUDA_SUCCESS) {
    gpushare_cuda ()->cuCtxSynchronize ();
    gpushare_cuda_pop ();
  }
}

static GstMemory *
cuda_import (GpuShareXferView * view, guint slot, gsize offset,
    const GstVideoInfo * slot_info, GstObject * ctx, gpointer user_data,
    GDestroyNotify notify, GError ** error)
{
  GstMemory *mem = gpushare_gst_cuda_memory_wrap (ctx, NULL, slot_info,
      (CUdeviceptr) view->device_ptr[slot] + offset, user_data, notify);

  if (!mem) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "GStreamer's CUDA library did not wrap the slot");
    return NULL;
  }
  /* a writer downstream gets a copy, never the producer's slot */
  GST_MINI_OBJECT_FLAG_SET (mem, GST_MEMORY_FLAG_READONLY);
  return mem;
}

/* a new CUDA memory of ctx (pitched by GStreamer's allocator), the
 * slot's packed rows from offset on copied into it on the device */
static GstMemory *
cuda_copy_region (GpuShareXferView * view, guint slot, gsize offset,
    GstVideoInfo * info, GstObject * ctx, GError ** error)
{
  GstMemory *mem = gpushare_gst_cuda_memory_alloc (ctx, NULL, info);
  const GstVideoInfo *have = mem ? gpushare_gst_cuda_memory_get_info (mem) :
      NULL;
  GstMapInfo map;
  gboolean ok;

  if (!have || !gst_memory_map (mem, &map, GST_MAP_WRITE | GPUSHARE_MAP_CUDA)) {
    if (mem)
      gst_memory_unref (mem);
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "no CUDA memory for a payload of %" G_GSIZE_FORMAT " bytes",
        GST_VIDEO_INFO_SIZE (info));
    return NULL;
  }
  ok = gpushare_cuda_view_copy_region (CUDA_VIEW (view), slot, offset,
      (CUdeviceptr) map.data, GST_VIDEO_INFO_PLANE_STRIDE (have, 0),
      GST_VIDEO_INFO_PLANE_STRIDE (info, 0), GST_VIDEO_INFO_HEIGHT (info),
      error);
  gst_memory_unmap (mem, &map);
  if (!ok) {
    gst_memory_unref (mem);
    return NULL;
  }
  *info = *have;
  return mem;
}

static const GpuShareXferProducer cuda_producer = {
  .ring_new = cuda_ring_new,
  .ring_free = cuda_ring_free,
  .add_consumer = cuda_add_consumer,
  .remove_consumer = cuda_remove_consumer,
  .export_slots = cuda_export,
  .write = cuda_write,
  .publish = cuda_publish,
  .overdue = cuda_overdue,
  .prepare = cuda_prepare,
  .settle = cuda_settle,
  .needs_settle = cuda_needs_settle,
  .holds = cuda_holds,
  .take_waits = cuda_take_waits,
  .write_region = cuda_write_region,
};

static const GpuShareXferConsumer cuda_consumer = {
  .view_new = cuda_view_new,
  .view_free = cuda_view_free,
  .read = cuda_read,
  .skip = cuda_skip,
  .wait_ready = cuda_wait_ready,
  .done = cuda_done,
  .cancel = cuda_cancel,
};

static const GpuShareXferGst cuda_gst = {
  .caps_feature = "memory:CUDAMemory",
  .library_ok = cuda_library_ok,
  .context_ensure = cuda_context_ensure,
  .context_set = cuda_context_set,
  .context_query = cuda_context_query,
  .is_memory = gpushare_gst_cuda_is_cuda_memory,
  .pool_new = gpushare_gst_cuda_buffer_pool_new,
  .slot_pool_new = gpushare_cuda_slot_pool_new,
  .can_import = cuda_can_import,
  .import = cuda_import,
  .copy_region = cuda_copy_region,
  .quiesce = cuda_quiesce,
};

static const GpuShareXfer cuda_xfer = {
  /* its negotiation, built in every build */
  .policy = &gpushare_cuda_policy,
  .probe = cuda_probe,
  .peer = cuda_peer,
  .producer = &cuda_producer,
  .consumer = &cuda_consumer,
  .gst = &cuda_gst,
};

void
gpushare_cuda_xfer_register (void)
{
  GST_DEBUG_CATEGORY_INIT (gpushare_xfer_cuda_debug, "gpusharecudatransfer", 0,
      "gpushare: the GPU transfer");
  gpushare_xfer_register (&cuda_xfer);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A GstCudaBufferPool subtype whose buffers are GPU slots; see
 * gpusharecudaslotpool.h.
 */

#include "gpusharecudaslotpool.h"

#include <gst/video/video.h>
#include <string.h>

#include "gpusharegstcuda.h"

GST_DEBUG_CATEGORY_STATIC (slot_pool_debug);
#define GST_CAT_DEFAULT slot_pool_debug

/* ours, after the parent's instance */
typedef struct
{
  GpuShareSlotPoolFuncs funcs;
  GstVideoInfo info;
  GType stream_type;            /* of the config's "cuda-stream" */
  gpointer stream;              /* a GstCudaStream, or NULL */
} SlotPool;

static gsize data_offset;
static GstBufferPoolClass *buffer_pool_class;   /* GstBufferPool's own */

#define SLOT_POOL(obj) ((SlotPool *) ((guint8 *) (obj) + data_offset))

static void
clear_stream (SlotPool * p)
{
  if (p->stream)
    g_boxed_free (p->stream_type, p->stream);
  p->stream = NULL;
}

static const gchar **
slot_pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META, NULL };
  return options;
}

static gboolean
slot_pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  SlotPool *p = SLOT_POOL (pool);
  GstCaps *caps = NULL;
  guint size, min, max;
  const GValue *v;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || !caps || !gst_video_info_from_caps (&p->info, caps))
    return FALSE;
  /* upstream's stream, as 1.24's pool keeps it */
  clear_stream (p);
  v = gst_structure_get_value (config, "cuda-stream");
  if (v && G_VALUE_HOLDS_BOXED (v) && g_value_get_boxed (v)) {
    p->stream_type = G_VALUE_TYPE (v);
    p->stream = g_value_dup_boxed (v);
  }
  /* nothing made ahead: the ring is the pool */
  gst_buffer_pool_config_set_params (config, caps,
      GST_VIDEO_INFO_SIZE (&p->info), 0, max);
  return buffer_pool_class->set_config (pool, config);
}

static gboolean
slot_pool_start (GstBufferPool * pool)
{
  return buffer_pool_class->start (pool);
}

static gboolean
slot_pool_stop (GstBufferPool * pool)
{
  return buffer_pool_class->stop (pool);
}

static GstFlowReturn
slot_pool_alloc_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  /* never asked: min is 0 and acquire does not chain up */
  return GST_FLOW_ERROR;
}

/* a slot's memory, made by acquire_buffer: its last reference gives the
 * slot back */
typedef struct
{
  GstBufferPool *pool;          /* a reference: funcs live while we do */
  GpuShareXferRing *ring;       /* a reference */
  gpointer tag;                 /* ours */
} SlotMemory;

static void
slot_memory_free (gpointer data)
{
  SlotMemory *sm = data;
  SlotPool *p = SLOT_POOL (sm->pool);

  /* GStreamer's allocator has waited for the memory's stream (upstream's
   * pending writes, NEED_SYNC) before it calls this */
  if (p->funcs.release)
    p->funcs.release (p->funcs.user_data, sm->tag);
  if (p->funcs.tag_free)
    p->funcs.tag_free (sm->tag);
  gpushare_xfer_ring_unref (sm->ring);
  gst_object_unref (sm->pool);
  g_free (sm);
}

static GstFlowReturn
slot_pool_acquire_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  SlotPool *p = SLOT_POOL (pool);
  GstObject *ctx = gpushare_gst_cuda_buffer_pool_get_context (pool);
  const GstVideoInfo *layout = &p->info;
  GpuShareXferRing *ring = NULL;
  gpointer tag = NULL;
  GstMemory *mem = NULL;
  const gchar *why = NULL;
  GstFlowReturn ret;
  GstBuffer *buf;
  guint slot = 0;

  /* GstBufferPool checks this in its own acquire, which this replaces */
  if (GST_BUFFER_POOL_IS_FLUSHING (pool))
    return GST_FLOW_FLUSHING;
  /* a layout GStreamer's CUDA memory cannot describe (the frame would be
   * copied wrongly from the slot, to system memory say): no slot at all */
  if (!gpushare_gst_cuda_layout_wrappable (&p->info, G_MAXSIZE, &why))
    ret = GST_FLOW_CUSTOM_SUCCESS;
  else
    ret = p->funcs.acquire (p->funcs.user_data, &ring, &slot, &tag);
  if (ret == GST_FLOW_OK
      && !gpushare_gst_cuda_layout_wrappable (&p->info, ring->slot_size,
          &why)) {
    GST_INFO_OBJECT (pool, "%s: upstream writes memory of the pool's own", why);
    if (p->funcs.release)
      p->funcs.release (p->funcs.user_data, tag);
    if (p->funcs.tag_free)
      p->funcs.tag_free (tag);
    gpushare_xfer_ring_unref (ring);
    ring = NULL;
    tag = NULL;
    ret = GST_FLOW_CUSTOM_SUCCESS;
  }
  if (ret == GST_FLOW_OK) {
    SlotMemory *sm = g_new0 (SlotMemory, 1);

    sm->pool = gst_object_ref (pool);
    sm->ring = ring;
    sm->tag = tag;
    mem = gpushare_gst_cuda_memory_wrap (ctx, p->stream, &p->info,
        (CUdeviceptr) ring->device_ptr[slot], sm, slot_memory_free);
    if (mem) {
      /* the buffer's own copy, for render */
      tag = p->funcs.tag_copy ? p->funcs.tag_copy (sm->tag) : NULL;
    } else {
      slot_memory_free (sm);
      tag = NULL;
    }
  } else if (ret != GST_FLOW_CUSTOM_SUCCESS) {
    return ret;
  }
  if (!mem) {
    /* no slot now: CUDA memory of our own, copied at render */
    mem = gpushare_gst_cuda_memory_alloc (ctx, p->stream, &p->info);
    layout = mem ? gpushare_gst_cuda_memory_get_info (mem) : NULL;
    if (!mem || !layout) {
      if (mem)
        gst_memory_unref (mem);
      GST_WARNING_OBJECT (pool, "no CUDA memory for a buffer");
      return GST_FLOW_ERROR;
    }
  }
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (&p->info), GST_VIDEO_INFO_WIDTH (&p->info),
      GST_VIDEO_INFO_HEIGHT (&p->info), GST_VIDEO_INFO_N_PLANES (&p->info),
      (gsize *) layout->offset, (gint *) layout->stride);
  if (tag)
    gst_mini_object_set_qdata (GST_MINI_OBJECT (buf), p->funcs.tag_quark, tag,
        p->funcs.tag_free);
  *buffer = buf;
  return GST_FLOW_OK;
}

static void
slot_pool_release_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  /* slots are never pooled: the ring is the pool.  The slot goes back when
   * its memory is freed (slot_memory_free ()), which may be later: a copy
   * of the buffer may still hold it */
  gst_buffer_unref (buffer);
}

static void
slot_pool_flush_start (GstBufferPool * pool)
{
  SlotPool *p = SLOT_POOL (pool);

  if (p->funcs.flush)
    p->funcs.flush (p->funcs.user_data, TRUE);
}

static void
slot_pool_flush_stop (GstBufferPool * pool)
{
  SlotPool *p = SLOT_POOL (pool);

  if (p->funcs.flush)
    p->funcs.flush (p->funcs.user_data, FALSE);
}

static GObjectClass *parent_object_class;

static void
slot_pool_finalize (GObject * object)
{
  SlotPool *p = SLOT_POOL (object);

  clear_stream (p);
  if (p->funcs.destroy)
    p->funcs.destroy (p->funcs.user_data);
  parent_object_class->finalize (object);
}

static void
slot_pool_class_init (gpointer klass, gpointer data)
{
  GstBufferPoolClass *pool_class = klass;

  parent_object_class = g_type_class_peek_parent (klass);
  buffer_pool_class = g_type_class_peek (GST_TYPE_BUFFER_POOL);
  G_OBJECT_CLASS (klass)->finalize = slot_pool_finalize;
  pool_class->get_options = slot_pool_get_options;
  pool_class->set_config = slot_pool_set_config;
  pool_class->start = slot_pool_start;
  pool_class->stop = slot_pool_stop;
  pool_class->alloc_buffer = slot_pool_alloc_buffer;
  pool_class->acquire_buffer = slot_pool_acquire_buffer;
  pool_class->release_buffer = slot_pool_release_buffer;
  pool_class->flush_start = slot_pool_flush_start;
  pool_class->flush_stop = slot_pool_flush_stop;
}

static GType
slot_pool_get_type (void)
{
  static gsize type = 0;

  if (g_once_init_enter (&type)) {
    GType parent = gpushare_gst_cuda_buffer_pool_get_type ();
    GType t = G_TYPE_INVALID;
    GTypeQuery q;

    GST_DEBUG_CATEGORY_INIT (slot_pool_debug, "gpusharecudaslotpool", 0,
        "gpushare: GPU slots as a CUDA pool");
    if (parent != G_TYPE_INVALID) {
      g_type_query (parent, &q);
      if (q.type != 0) {
        GTypeInfo info = { 0, };

        data_offset = GST_ROUND_UP_16 (q.instance_size);
        info.class_size = q.class_size;
        info.class_init = slot_pool_class_init;
        info.instance_size = data_offset + sizeof (SlotPool);
        t = g_type_register_static (parent, "GpuShareCudaSlotPool", &info, 0);
      }
    }
    g_once_init_leave (&type, t);
  }
  return type;
}

GstBufferPool *
gpushare_cuda_slot_pool_new (GstObject * ctx,
    const GpuShareSlotPoolFuncs * funcs)
{
  GType type;
  GstBufferPool *pool;

  if (gpushare_gst_cuda_abi () != GPUSHARE_GST_CUDA_ABI_1_24
      || !gpushare_gst_cuda_is_cuda_context (ctx))
    return NULL;
  type = slot_pool_get_type ();
  if (type == G_TYPE_INVALID)
    return NULL;
  pool = g_object_new (type, NULL);
  gst_object_ref_sink (pool);
  gpushare_gst_cuda_buffer_pool_set_context (pool, ctx);
  SLOT_POOL (pool)->funcs = *funcs;
  return pool;
}

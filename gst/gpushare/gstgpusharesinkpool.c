/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpusharesink's buffer pool: buffers that are slots of the ring, so that
 * upstream writes straight into shared memory.  A slot it hands out is
 * tagged (gst_gpu_share_sink_pool_buffer_tag ()); render sends that slot
 * as it is, with no copy, when it is still the one the pool handed out.
 * Where no slot is free (leaky, or upstream holds them all) it hands out
 * a plain buffer, copied in at render.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpusharesinkpool.h"

struct _GstGpuShareSinkPool
{
  GstBufferPool parent;
  GstGpuShareSinkPoolOwner owner;
  GpuShareServer *server;
  GstVideoInfo vinfo;
  gint flushing;                /* atomic */
};

G_DEFINE_TYPE (GstGpuShareSinkPool, gst_gpu_share_sink_pool,
    GST_TYPE_BUFFER_POOL);

/* not from the pool's class_init: render asks every buffer for its tag,
 * also where upstream never took a pool of ours */
static GQuark
slot_tag_quark (void)
{
  static GQuark quark;

  if (G_UNLIKELY (quark == 0))
    quark = g_quark_from_static_string ("gpushare-slot-tag");
  return quark;
}

static gpointer
slot_tag_copy (gpointer data)
{
  GpuShareServerTag *tag = g_memdup2 (data, sizeof (GpuShareServerTag));

  gpushare_xfer_ring_ref (tag->ring);
  return tag;
}

static void
slot_tag_free (gpointer data)
{
  GpuShareServerTag *tag = data;

  gpushare_xfer_ring_unref (tag->ring);
  g_free (tag);
}

const GpuShareServerTag *
gst_gpu_share_sink_pool_buffer_tag (GstBuffer * buf)
{
  return gst_mini_object_get_qdata (GST_MINI_OBJECT (buf), slot_tag_quark ());
}

static gboolean
pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  GstCaps *caps = NULL;

  if (!gst_buffer_pool_config_get_params (config, &caps, NULL, NULL, NULL)
      || !caps || !gst_video_info_from_caps (&self->vinfo, caps))
    return FALSE;
  return GST_BUFFER_POOL_CLASS (gst_gpu_share_sink_pool_parent_class)
      ->set_config (pool, config);
}

static const gchar **
pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META, NULL };
  return options;
}

static GstFlowReturn
pool_acquire_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  GstVideoInfo *vi = &self->vinfo;
  GpuShareServerTag t;
  gboolean current, leaky;
  GstBuffer *buf;

  current = self->owner.state (self->owner.owner, vi, &leaky);
  if (current && gpushare_server_pool_acquire (self->server, leaky,
          &self->flushing, &t)) {
    GpuShareServerTag *tag = g_memdup2 (&t, sizeof (t));

    buf = gst_buffer_new_wrapped_full (0, t.ring->data[t.slot],
        t.ring->slot_size, 0, GST_VIDEO_INFO_SIZE (vi),
        gpushare_xfer_ring_ref (t.ring),
        (GDestroyNotify) gpushare_xfer_ring_unref);
    gst_mini_object_set_qdata (GST_MINI_OBJECT (buf), slot_tag_quark (), tag,
        slot_tag_free);
  } else if (g_atomic_int_get (&self->flushing)) {
    return GST_FLOW_FLUSHING;
  } else {
    /* no slot to hand out: a plain buffer, copied in at render */
    buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (vi), NULL);
  }
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
      GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), vi->offset,
      vi->stride);
  *buffer = buf;
  return GST_FLOW_OK;
}

static void
pool_release_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  const GpuShareServerTag *tag = gst_gpu_share_sink_pool_buffer_tag (buffer);

  /* a slot that never reached render (upstream dropped it) goes back */
  if (tag)
    gpushare_server_pool_release (self->server, tag);
  /* slots are never pooled: the ring is the pool */
  gst_buffer_unref (buffer);
}

static void
pool_flush_start (GstBufferPool * pool)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;

  g_atomic_int_set (&self->flushing, 1);
  gpushare_server_wake (self->server);
}

static void
pool_flush_stop (GstBufferPool * pool)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;

  g_atomic_int_set (&self->flushing, 0);
}

static void
pool_finalize (GObject * object)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) object;

  gst_object_unref (self->owner.owner);
  gpushare_server_unref (self->server);
  G_OBJECT_CLASS (gst_gpu_share_sink_pool_parent_class)->finalize (object);
}

static void
gst_gpu_share_sink_pool_class_init (GstGpuShareSinkPoolClass * klass)
{
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = pool_finalize;
  pool_class->set_config = pool_set_config;
  pool_class->get_options = pool_get_options;
  pool_class->acquire_buffer = pool_acquire_buffer;
  pool_class->release_buffer = pool_release_buffer;
  pool_class->flush_start = pool_flush_start;
  pool_class->flush_stop = pool_flush_stop;
}

static void
gst_gpu_share_sink_pool_init (GstGpuShareSinkPool * self)
{
}

GstBufferPool *
gst_gpu_share_sink_pool_new (const GstGpuShareSinkPoolOwner * owner,
    GpuShareServer * server)
{
  GstGpuShareSinkPool *pool = g_object_new (GST_TYPE_GPU_SHARE_SINK_POOL,
      NULL);

  gst_object_ref_sink (pool);
  pool->owner = *owner;
  gst_object_ref (owner->owner);
  pool->server = gpushare_server_ref (server);
  return GST_BUFFER_POOL (pool);
}

/* ------------------------------------------------------------------------ */
/* GPU slots: a pool of GStreamer's GPU library's own type (the nvcodec
 * elements take no other), made by the GPU transfer; the sink only says
 * which slot upstream may write */

typedef struct
{
  GstGpuShareSinkPoolOwner owner;
  GpuShareServer *server;
  GstVideoInfo vinfo;
  gint flushing;                /* atomic */
} GpuSlotSource;

static GstFlowReturn
gpu_slot_acquire (gpointer user_data, GpuShareXferRing ** ring, guint * slot,
    gpointer * tag)
{
  GpuSlotSource *src = user_data;
  GpuShareServerTag t;
  GError *error = NULL;
  GstFlowReturn ret;
  gboolean leaky;

  if (g_atomic_int_get (&src->flushing))
    return GST_FLOW_FLUSHING;
  if (!src->owner.state (src->owner.owner, &src->vinfo, &leaky))
    return GST_FLOW_CUSTOM_SUCCESS;
  ret = gpushare_server_pool_acquire_gpu (src->server, leaky, &src->flushing,
      &t, &error);
  if (ret == GST_FLOW_ERROR) {
    /* upstream's buffer is copied at render instead */
    GST_WARNING_OBJECT (src->owner.owner, "no GPU slot for upstream: %s",
        error->message);
    g_clear_error (&error);
    return GST_FLOW_CUSTOM_SUCCESS;
  }
  if (ret != GST_FLOW_OK)
    return ret;
  *ring = gpushare_xfer_ring_ref (t.ring);
  *slot = t.slot;
  *tag = g_memdup2 (&t, sizeof (t));
  return GST_FLOW_OK;
}

static void
gpu_slot_release (gpointer user_data, gpointer tag)
{
  GpuSlotSource *src = user_data;

  gpushare_server_pool_release (src->server, tag);
}

static void
gpu_slot_flush (gpointer user_data, gboolean flushing)
{
  GpuSlotSource *src = user_data;

  g_atomic_int_set (&src->flushing, flushing);
  if (flushing)
    gpushare_server_wake (src->server);
}

static void
gpu_slot_source_free (gpointer user_data)
{
  GpuSlotSource *src = user_data;

  gst_object_unref (src->owner.owner);
  gpushare_server_unref (src->server);
  g_free (src);
}

GstBufferPool *
gst_gpu_share_sink_gpu_pool_new (const GstGpuShareSinkPoolOwner * owner,
    GpuShareServer * server, GstObject * gpu_ctx, const GstVideoInfo * vinfo)
{
  GpuSlotSource *src = g_new0 (GpuSlotSource, 1);
  GpuShareSlotPoolFuncs funcs = {
    .acquire = gpu_slot_acquire,
    .release = gpu_slot_release,
    .flush = gpu_slot_flush,
    .tag_quark = slot_tag_quark (),
    .tag_copy = slot_tag_copy,
    .tag_free = slot_tag_free,
    .user_data = src,
    .destroy = gpu_slot_source_free,
  };
  GstBufferPool *pool;

  src->owner = *owner;
  gst_object_ref (owner->owner);
  src->server = gpushare_server_ref (server);
  src->vinfo = *vinfo;
  pool = gpushare_xfer_gpu_slot_pool_new (gpu_ctx, &funcs);
  if (!pool)
    gpu_slot_source_free (src);
  return pool;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpusharesink's buffer pool: its slots, handed to upstream to write in.
 */

#ifndef __GST_GPU_SHARE_SINK_POOL_H__
#define __GST_GPU_SHARE_SINK_POOL_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include "gpushareserver.h"

G_BEGIN_DECLS

#define GST_TYPE_GPU_SHARE_SINK_POOL (gst_gpu_share_sink_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuShareSinkPool, gst_gpu_share_sink_pool, GST,
    GPU_SHARE_SINK_POOL, GstBufferPool);

/* What both pools ask their owner, the sink, before they hand out a slot:
 * are buffers of vinfo those of the current caps, and is the policy leaky
 * now.  The pools hold a reference on owner. */
typedef struct
{
  GstElement *owner;
  gboolean (*state) (GstElement * owner, const GstVideoInfo * vinfo,
      gboolean * leaky);
} GstGpuShareSinkPoolOwner;

/* transfer full; it holds a reference on the owner and server */
GstBufferPool *gst_gpu_share_sink_pool_new (const GstGpuShareSinkPoolOwner *
    owner, GpuShareServer * server);
/* the slot a buffer of the pool is, or NULL */
const GpuShareServerTag *gst_gpu_share_sink_pool_buffer_tag (GstBuffer * buf);

/* A pool of GStreamer's GPU library's own type whose buffers are GPU slots
 * (GStreamer 1.24+), for upstream that offers GPU memory: no copy in the
 * sink when upstream takes it.  NULL where it cannot be made. */
GstBufferPool *gst_gpu_share_sink_gpu_pool_new (const GstGpuShareSinkPoolOwner
    * owner, GpuShareServer * server, GstObject * gpu_ctx,
    const GstVideoInfo * vinfo);

G_END_DECLS

#endif /* __GST_GPU_SHARE_SINK_POOL_H__ */

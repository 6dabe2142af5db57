/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The application's zero-copy route to GPU frames, on every GStreamer
 * version (1.22 included, whose CUDA memory cannot wrap device memory).
 *
 * An application that names the caps feature "memory:GpuShareCUDA" after
 * gpusharesrc (an appsink with caps video/x-raw(memory:GpuShareCUDA),...)
 * receives buffers whose memory cannot be mapped on the host but that
 * carry a GstGpuShareCudaMeta: the device address of the producer's slot,
 * as mapped in this process, and the frame's layout in it.  The frame is
 * ready when the buffer arrives.  The slot is the producer's and read-only:
 * read it, do not write it.  It goes back to the producer when the last
 * reference to the buffer goes: finish the GPU work that reads it (e.g.
 * cuStreamSynchronize on the stream that read it) before dropping the
 * buffer.  Every frame comes this way, whatever max-in-place says (there
 * is nothing to copy it into): a buffer held is a slot the producer cannot
 * write, and one held longer than the producer's lease-timeout while it
 * waits for a slot gets this consumer dropped.
 *
 * This header is all an application needs: it links neither the plugin
 * nor GStreamer's CUDA library.  Example: examples/gpushare-cuda-app.c.
 */

#ifndef __GPUSHARE_META_H__
#define __GPUSHARE_META_H__

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/* the caps feature of the route */
#define GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA "memory:GpuShareCUDA"
/* the name of the meta's API type, registered by the plugin */
#define GPUSHARE_CUDA_META_API_NAME "GstGpuShareCudaMetaAPI"

typedef struct
{
  GstMeta meta;
  /* the slot's first byte, a CUdeviceptr valid in this process */
  guint64 device_ptr;
  /* the CUDA ordinal (in this process) of the GPU the slot is on */
  gint device;
  /* the frame in the slot: plane i starts at device_ptr + offset[i], rows
   * stride[i] bytes apart */
  GstVideoFormat format;
  guint width, height;
  guint n_planes;
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
} GstGpuShareCudaMeta;

/* the meta of a buffer of the route, or NULL; usable without linking the
 * plugin (the API type is looked up by name) */
static inline GstGpuShareCudaMeta *
gst_buffer_get_gpu_share_cuda_meta (GstBuffer * buf)
{
  GType api = g_type_from_name (GPUSHARE_CUDA_META_API_NAME);

  return api ? (GstGpuShareCudaMeta *) gst_buffer_get_meta (buf, api) : NULL;
}

#ifdef GPUSHARE_PLUGIN_INTERNAL
/* the plugin's side */
GType gpushare_slot_meta_api_get_type (void);
const GstMetaInfo *gpushare_slot_meta_get_info (void);
GstGpuShareCudaMeta *gpushare_buffer_add_slot_meta (GstBuffer * buf,
    guint64 device_ptr, gint device, const GstVideoInfo * info);
/* a memory of size bytes that cannot be mapped on the host (it stands for
 * device memory); notify (user_data) when it is freed */
GstMemory *gpushare_slot_memory_new (gsize size, gpointer user_data,
    GDestroyNotify notify);
#endif

G_END_DECLS

#endif /* __GPUSHARE_META_H__ */

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
 * nor GStreamer's CUDA library.  Installed with the plugin:
 *   #include <gst/gpushare/gpusharemeta.h>
 * with the flags of `pkg-config --cflags gpushare-1.0`.  Example:
 * examples/gpushare-cuda-app.c.
 *
 * What is stable: the caps feature's and the API type's names, and the
 * fields of GstGpuShareCudaMeta up to and including stride, at their
 * offsets, with their meaning.  Fields are only ever added at the end of
 * the structure, each with a new GPUSHARE_CUDA_META_VERSION; a plugin
 * older than the header an application was built with fills fewer, and
 * says how many bytes it filled in size: read a newer field only where
 * GPUSHARE_CUDA_META_HAS () says it is there.
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
/* the layout this header describes */
#define GPUSHARE_CUDA_META_VERSION 1

typedef struct
{
  GstMeta meta;
  /* the layout the plugin filled in (GPUSHARE_CUDA_META_VERSION of its
   * header), and its size in bytes, GstMeta included */
  guint32 version;
  guint32 size;
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
  /* fields of later versions come here */
} GstGpuShareCudaMeta;

/* TRUE when the plugin that made meta filled field (a field of
 * GstGpuShareCudaMeta) */
#define GPUSHARE_CUDA_META_HAS(meta, field) \
  (G_STRUCT_OFFSET (GstGpuShareCudaMeta, field) + \
   sizeof (((GstGpuShareCudaMeta *) 0)->field) <= (meta)->size)

/* the meta of a buffer of the route, or NULL; usable without linking the
 * plugin (the API type is looked up by name) */
static inline GstGpuShareCudaMeta *
gst_buffer_get_gpu_share_cuda_meta (GstBuffer * buf)
{
  GType api = g_type_from_name (GPUSHARE_CUDA_META_API_NAME);

  return api ? (GstGpuShareCudaMeta *) gst_buffer_get_meta (buf, api) : NULL;
}


G_END_DECLS

#endif /* __GPUSHARE_META_H__ */

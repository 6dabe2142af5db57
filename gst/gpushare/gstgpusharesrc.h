/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GPU_SHARE_SRC_H__
#define __GST_GPU_SHARE_SRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

/* the producer's events held back until the first segment is out, at
 * most; the oldest go first (docs/security.md, "Bounds") */
#define GST_GPU_SHARE_SRC_MAX_EARLY_EVENTS 64
/* the most wake-ahead may be, in microseconds: a frame's poll is at most
 * twice that (docs/security.md, "Bounds") */
#define GST_GPU_SHARE_SRC_MAX_WAKE_AHEAD 1000

#define GST_TYPE_GPU_SHARE_SRC (gst_gpu_share_src_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuShareSrc, gst_gpu_share_src, GST, GPU_SHARE_SRC,
    GstPushSrc);

GST_ELEMENT_REGISTER_DECLARE (gpusharesrc);

/**
 * GstGpuShareTransport:
 * @GST_GPU_SHARE_TRANSPORT_AUTO: GPU memory when both ends are on the same
 *   GPU, system memory otherwise
 * @GST_GPU_SHARE_TRANSPORT_SYSTEM: system memory only
 *
 * The memory a consumer asks for.  Beside these two, each memory transfer
 * the plugin registered adds its own values: with CUDA, "cuda" (2, CUDA
 * VMM memory, or an error), "cuda-legacy" (3, legacy CUDA IPC memory
 * handles, or an error) and "cuda-fabric" (4, CUDA fabric handles, which
 * need an IMEX channel, or an error).
 */
typedef enum
{
  GST_GPU_SHARE_TRANSPORT_AUTO = 0,
  GST_GPU_SHARE_TRANSPORT_SYSTEM = 1,
} GstGpuShareTransport;

#define GST_TYPE_GPU_SHARE_TRANSPORT (gst_gpu_share_transport_get_type ())
GType gst_gpu_share_transport_get_type (void);

/**
 * GstGpuShareSync:
 * @GST_GPU_SHARE_SYNC_AUTO: the fastest mode both ends support
 * @GST_GPU_SHARE_SYNC_HOST: each side synchronises its CUDA stream
 * @GST_GPU_SHARE_SYNC_SEMAPHORE: 64-bit words in shared GPU memory
 * @GST_GPU_SHARE_SYNC_EVENT: CUDA IPC events (needs a shared /dev/shm)
 */
typedef enum
{
  GST_GPU_SHARE_SYNC_AUTO = 0,
  GST_GPU_SHARE_SYNC_HOST = 1,
  GST_GPU_SHARE_SYNC_SEMAPHORE = 2,
  GST_GPU_SHARE_SYNC_EVENT = 4,
} GstGpuShareSync;

#define GST_TYPE_GPU_SHARE_SYNC (gst_gpu_share_sync_get_type ())
GType gst_gpu_share_sync_get_type (void);

/**
 * GstGpuShareProducerLost:
 * @GST_GPU_SHARE_PRODUCER_LOST_ERROR: post an error
 * @GST_GPU_SHARE_PRODUCER_LOST_EOS: end the stream
 * @GST_GPU_SHARE_PRODUCER_LOST_RECONNECT: connect again, with back-off,
 *   within connection-timeout, and go on with the next producer
 */
typedef enum
{
  GST_GPU_SHARE_PRODUCER_LOST_ERROR = 0,
  GST_GPU_SHARE_PRODUCER_LOST_EOS = 1,
  GST_GPU_SHARE_PRODUCER_LOST_RECONNECT = 2,
} GstGpuShareProducerLost;

#define GST_TYPE_GPU_SHARE_PRODUCER_LOST \
  (gst_gpu_share_producer_lost_get_type ())
GType gst_gpu_share_producer_lost_get_type (void);

/**
 * GstGpuShareIoMode:
 * @GST_GPU_SHARE_IO_AUTO: in place where the memory and GStreamer allow it
 *   (system memory always; GPU memory from GStreamer 1.24 on), a copy
 *   otherwise, with the reason in the stats
 * @GST_GPU_SHARE_IO_COPY: every frame is copied out of its slot, which goes
 *   back to the producer at once
 * @GST_GPU_SHARE_IO_IMPORT: in place or not at all: an error where the
 *   output memory cannot point into the slot
 *
 * How the frames pushed reach downstream.  In place, the buffer is the
 * producer's slot (read-only): no copy, and the slot goes back when the last
 * reference to the buffer goes, at most #GstGpuShareSrc:max-in-place of
 * them at once (past that a frame is copied).
 */
typedef enum
{
  GST_GPU_SHARE_IO_AUTO = 0,
  GST_GPU_SHARE_IO_COPY = 1,
  GST_GPU_SHARE_IO_IMPORT = 2,
} GstGpuShareIoMode;

#define GST_TYPE_GPU_SHARE_IO_MODE (gst_gpu_share_io_mode_get_type ())
GType gst_gpu_share_io_mode_get_type (void);

G_END_DECLS

#endif /* __GST_GPU_SHARE_SRC_H__ */

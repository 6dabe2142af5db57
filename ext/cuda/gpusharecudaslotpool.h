/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A buffer pool whose buffers are GPU slots, of GStreamer's own CUDA pool
 * type (GStreamer 1.24 and later).
 *
 * Why a subtype of GstCudaBufferPool: the nvcodec elements (nvh264dec,
 * cudaupload, cudaconvert) take a downstream pool only when
 * GST_IS_CUDA_BUFFER_POOL () holds and its public `context` field is their
 * own context.  The type is registered at run time, as a subtype of the
 * loaded library's, sized from g_type_query (); the parent's public head
 * ({ GstBufferPool parent; GstCudaContext *context; priv; }, unchanged from
 * 1.22 to 1.26) is the only layout relied on.  Nothing of the parent's own
 * allocation runs: set_config, start, stop, acquire and release are the
 * subtype's (set_config and start/stop chain up to GstBufferPool itself),
 * so the parent's allocator stays unmade and its dispose only drops the
 * context.
 *
 * acquire_buffer asks the owner (GpuShareSlotPoolFuncs) for a slot whose
 * readers are gone and wraps it, writable, as a GstCudaMemory of the
 * pool's context laid out as the caps (one pitch for every plane), on the
 * CUDA stream that upstream put in the config (1.24's "cuda-stream"
 * field), so that upstream's NEED_SYNC is honoured at render.  Without a
 * slot (no GPU consumer yet, or none free) it hands out CUDA memory of its
 * own, which render copies as any other.
 */

#ifndef __GPUSHARE_CUDA_SLOT_POOL_H__
#define __GPUSHARE_CUDA_SLOT_POOL_H__

#include <gst/gst.h>
#include "gpusharexfer.h"

G_BEGIN_DECLS

/* NULL on GStreamer 1.22 or without its CUDA library.  Transfer full. */
GstBufferPool *gpushare_cuda_slot_pool_new (GstObject * ctx,
    const GpuShareSlotPoolFuncs * funcs);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_SLOT_POOL_H__ */

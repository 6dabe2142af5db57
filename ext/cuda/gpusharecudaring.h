/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moving frames through CUDA VMM slots, with ready/done synchronisation.
 *
 * Producer (GpuShareCudaRing): the VMM slots of one ring, a non-blocking
 * stream, and per consumer the objects of its synchronisation mode:
 *
 *   host       the producer synchronises its stream before it sends FRAME;
 *              the consumer synchronises its own before it sends RELEASE.
 *   semaphore  one block of 64-bit words per consumer in shared VMM memory:
 *              ready[slot] written by the producer's stream after the frame,
 *              done[slot] written by the consumer's stream after its last
 *              read.  Both values are the frame's sequence number.
 *   event      CUDA IPC events owned by the producer: ready[slot] shared by
 *              every event consumer, done[slot] one set per consumer.
 *
 * Before a slot is written again, the producer's stream waits (on the GPU)
 * for the done signal of every consumer that held the slot's last frame.  A
 * consumer that goes away gets its words forced, so that no stream waits
 * forever on it.
 *
 * Consumer (GpuShareCudaView): the imported slots, mapped read-only, the
 * consumer's synchronisation objects and its stream.  Reading a frame
 * waits for ready, copies the planes out (to device or host memory),
 * signals done and synchronises the stream: GStreamer 1.22's CUDA memory
 * carries no stream, so what we hand downstream must be complete.
 *
 * Nothing here logs a handle, a device pointer or an fd.
 */

#ifndef __GPUSHARE_CUDA_RING_H__
#define __GPUSHARE_CUDA_RING_H__

#include <gst/video/video.h>
#include "gpushareproto.h"
#include "gpusharenegotiate.h"
#include "gpusharecuda.h"
#include "gpusharexfer.h"

G_BEGIN_DECLS

/* where a frame's planes are: base plus per-plane offsets and strides */
typedef struct
{
  gboolean device;              /* CUdeviceptr, else host pointer */
  guintptr base;
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
} GpuSharePlanes;

/* the sync modes this device supports, GpuShareSyncMode mask.  Picking
 * one of them and naming it needs no CUDA: gpusharenegotiate.h */
guint32 gpushare_cuda_sync_modes (const GpuShareCudaCaps * caps);

/* A ring starts with the GpuShareXferRing the transfer interface sees
 * (slot_size and device_ptr[] filled here, the rest by
 * gpushare_xfer_ring_new ()): one object per ring, beside its VMM
 * allocation or its legacy or fabric memory */
typedef struct _GpuShareCudaRing GpuShareCudaRing;

/* ctx: the context for the stream and the copies (a GstCudaContext's,
 * shared with upstream), or NULL for the device's primary context */
/* mem_type: CUDA_VMM (fds), CUDA_LEGACY (cuMemAlloc + cuIpcGetMemHandle)
 * or CUDA_FABRIC (VMM with fabric handles: needs an IMEX channel) */
GpuShareCudaRing *gpushare_cuda_ring_new (gint device, CUcontext ctx,
    GpuShareMemType mem_type, guint64 epoch, guint n_slots, gsize slot_size,
    GError ** error);
void gpushare_cuda_ring_free (GpuShareCudaRing * ring);
guint64 gpushare_cuda_ring_epoch (GpuShareCudaRing * ring);
gsize gpushare_cuda_ring_slot_size (GpuShareCudaRing * ring);
/* the context of its stream and copies */
CUcontext gpushare_cuda_ring_context (GpuShareCudaRing * ring);
/* how upstream's CUDA memory is waited for now (a static string): TRUE
 * when it is not how it was last time */
gboolean gpushare_cuda_ring_note_upstream (GpuShareCudaRing * ring,
    const gchar * how);
/* the slot's device address in this process */
CUdeviceptr gpushare_cuda_ring_slot_ptr (GpuShareCudaRing * ring, guint slot);
/* queues the wait for the slot's last readers' done signals; once
 * gpushare_cuda_ring_settle () returned, anyone (upstream, writing in
 * place) may write the slot */
gboolean gpushare_cuda_ring_prepare (GpuShareCudaRing * ring, guint slot,
    GError ** error);
/* waits on the host for what prepare or copy_in queued for the slot, at
 * most 10 s (then an error).  Call it without any lock that removing a
 * consumer takes: a consumer that never signals done is released by
 * forcing its words, which ends the wait */
gboolean gpushare_cuda_ring_settle (GpuShareCudaRing * ring, guint slot,
    GError ** error);

/* consumer holder index (the ring's bit); creates its sync objects */
gboolean gpushare_cuda_ring_add_consumer (GpuShareCudaRing * ring,
    guint index, GpuShareSyncMode mode, GError ** error);
/* a semaphore consumer of minor 12 or later: its ready words in host
 * memory too (gpusharecudasync.h), exported with its block.  FALSE with
 * error where the device cannot write host memory: the consumer then
 * waits on the device alone */
gboolean gpushare_cuda_ring_add_words (GpuShareCudaRing * ring, guint index,
    GError ** error);
/* forgets a consumer: forces its words, drops its events */
void gpushare_cuda_ring_remove_consumer (GpuShareCudaRing * ring,
    guint index);
/* fills a SLOTS message and its fds (n_slots + n_sync_fds of them, to be
 * closed by the caller once sent) for one consumer */
gboolean gpushare_cuda_ring_export (GpuShareCudaRing * ring, guint index,
    GpuShareSlots * slots, gint * fds, GError ** error);

/* a frame: begin (waits for the slot's last readers), copy, publish */
gboolean gpushare_cuda_ring_begin (GpuShareCudaRing * ring, guint slot,
    GError ** error);
/* copies src into the slot on the ring's stream; once
 * gpushare_cuda_ring_settle () returned, the copy is done, and src's owner
 * may write it again and host consumers may read the slot.  With
 * upstream, the stream src was written on (ring's context): the copy
 * waits for it on the device, and upstream's next work waits for the copy
 * there, so that src's owner needs no host wait at all.  Without
 * upstream, hold (upstream's buffer of src in device memory, or NULL) is
 * kept until the copy is done on the device, which spares the host that
 * wait as well: only host-sync readers then need a settle.  own_context:
 * src is device memory of the ring's context, which the copy kernel may
 * read (memory of another context is copied by cuMemcpy2DAsync) */
gboolean gpushare_cuda_ring_copy_in (GpuShareCudaRing * ring, guint slot,
    const GstVideoInfo * info, const GpuSharePlanes * src,
    const GpuSharePlanes * slot_layout, CUstream upstream, GstBuffer * hold,
    gboolean own_context, GError ** error);
/* after the slot's write, before its publish: rows rows of row_bytes,
 * src_pitch apart from src (device memory) on, copied packed to offset of
 * the slot on the ring's stream; with upstream (the stream src was
 * written on) ordered with it on the device both ways, else the slot
 * needs a settle before src may go */
gboolean gpushare_cuda_ring_copy_region (GpuShareCudaRing * ring, guint slot,
    gsize offset, CUdeviceptr src, gsize src_pitch, gsize row_bytes,
    guint rows, CUstream upstream, GError ** error);
/* upstream wrote the slot itself, on its stream (ring's context): what
 * the ring signals next waits for that on the device.  upstream NULL: the
 * host already waited for upstream's write, and nobody needs a settle */
gboolean gpushare_cuda_ring_written (GpuShareCudaRing * ring, guint slot,
    CUstream upstream, GError ** error);
/* must the host wait for the slot (gpushare_cuda_ring_settle ()): holders
 * 0, before the writer returns upstream's buffer (not when copy_in or
 * written ordered upstream's stream); else before the frame goes to
 * holders (when one of them synchronises on the host) */
gboolean gpushare_cuda_ring_needs_settle (GpuShareCudaRing * ring,
    guint slot, guint64 holders);
/* the time the host spent in settle since the last call, in
 * microseconds, and the part of it spent spinning (CPU burnt) */
void gpushare_cuda_ring_take_waits (GpuShareCudaRing * ring,
    guint64 * wait_us, guint64 * spin_us);
/* signals ready to the holders (after settle, for host-mode holders) */
gboolean gpushare_cuda_ring_publish (GpuShareCudaRing * ring, guint slot,
    guint64 holders, guint64 sequence, GError ** error);

/* The semaphore consumers on whose done signal of a frame the stream has
 * waited for longer than limit_us at now (monotonic), as holder bits;
 * sequences[index] says the frame of each (64 entries).  Their words are
 * forced: the stream and what is ordered after it go on, and the caller
 * removes them.  (An IPC event cannot be forced, nor told apart from the
 * waits queued behind it: event consumers are not judged.) */
guint64 gpushare_cuda_ring_overdue (GpuShareCudaRing * ring, gint64 now,
    gint64 limit_us, guint64 * sequences);

/* A view starts with the GpuShareXferView the transfer interface sees,
 * as a ring does */
typedef struct _GpuShareCudaView GpuShareCudaView;

/* takes every fd (closed on every path); legacy and fabric slots come as
 * handles in slots, VMM slots as the first n_slots fds */
GpuShareCudaView *gpushare_cuda_view_new (gint device, CUcontext ctx,
    const GpuShareSlots * slots, gint * fds, GError ** error);
void gpushare_cuda_view_free (GpuShareCudaView * view);
/* waits for ready, copies the frame out, signals done, synchronises;
 * own_context: dst is device memory of the view's context (the copy
 * kernel may write it) */
gboolean gpushare_cuda_view_read (GpuShareCudaView * view, guint slot,
    guint64 sequence, const GstVideoInfo * info,
    const GpuSharePlanes * slot_layout, const GpuSharePlanes * dst,
    gboolean own_context, GError ** error);
CUcontext gpushare_cuda_view_context (GpuShareCudaView * view);
/* rows rows of row_bytes, packed from offset of the slot on, copied to
 * dst (device memory), dst_pitch apart; done when it returns (the frame
 * was read: ready was waited for) */
gboolean gpushare_cuda_view_copy_region (GpuShareCudaView * view, guint slot,
    gsize offset, CUdeviceptr dst, gsize dst_pitch, gsize row_bytes,
    guint rows, GError ** error);
/* a frame that will not be read: done is signalled all the same */
gboolean gpushare_cuda_view_skip (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error);
/* Read in place (import): the slot's device address in this process, and
 * the two halves of a read: wait_ready returns once the frame may be read
 * (ready waited for on the host), done signals that it was, once every
 * reader finished */
CUdeviceptr gpushare_cuda_view_slot_ptr (GpuShareCudaView * view, guint slot);
gboolean gpushare_cuda_view_wait_ready (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error);
gboolean gpushare_cuda_view_done (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error);
/* how long a read waits for the producer's signal of a frame, and for
 * the copy after it (10 s unless set): past it the read fails with
 * GPUSHARE_CUDA_ERROR_TIMEOUT and the view reads nothing more */
void gpushare_cuda_view_set_wait (GpuShareCudaView * view, gint64 wait_us);
/* while cancel is TRUE, a read's wait for the producer's signal ends (and
 * one that begins fails) with GPUSHARE_CUDA_ERROR_CANCELLED */
void gpushare_cuda_view_cancel (GpuShareCudaView * view, gboolean cancel);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_RING_H__ */

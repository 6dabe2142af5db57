/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer interface: the one way the producer and consumer cores (and
 * the elements above them) reach memory.
 *
 *   elements -> server / client -> transfer (this file) -> transfers
 *
 * A transfer moves frames through memory of its own kinds, each a
 * GpuShareMemType bit.  Each registers itself at plugin load
 * (gpushare_xfer_register ()): system memory (sealed memfds,
 * gpusharexfersys.c, always there) and, in a build with CUDA, GPU memory
 * (CUDA VMM, legacy IPC or fabric, ext/cuda/gpusharecudatransfer.c).
 * Which kind a consumer uses is decided per consumer at the handshake, by
 * the negotiation asking each transfer's policy (gpusharenegotiate.h); the
 * code above only names a GpuShareMemType.
 *
 * Producer: a ring of one memory type and epoch (gpushare_xfer_ring_new),
 * consumers added and removed by their holder index, exported once per
 * consumer as a SLOTS body and its fds, then per frame: write (waits for
 * the slot's last readers, copies the frame in) and publish (signals ready
 * to the frame's holders).  Consumer: a view of an exported ring, whose
 * slots are read (copied out, ready waited for, done signalled) or, where
 * the memory allows it, wrapped in place as a read-only GstMemory.
 *
 * Rings and views are reference counted: buffers that point into a slot
 * hold a reference, so memory of a replaced ring stays mapped until the
 * last of them is gone.  Each ring has its own lock around its device
 * work, so that the callers never do device work under their own locks.
 *
 * Device transfers also carry what the elements need of GStreamer's
 * library for their memory (shared contexts, the memory type, buffer
 * pools: GpuShareXferGst), so that no element calls into ext/ directly.
 */

#ifndef __GPUSHARE_XFER_H__
#define __GPUSHARE_XFER_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include "gpushareproto.h"
#include "gpusharenegotiate.h"

G_BEGIN_DECLS

#define GPUSHARE_XFER_ERROR (gpushare_xfer_error_quark ())
GQuark gpushare_xfer_error_quark (void);

typedef enum
{
  GPUSHARE_XFER_ERROR_UNSUPPORTED,      /* no such transfer here */
  GPUSHARE_XFER_ERROR_RESOURCE,         /* allocation, export, import */
  GPUSHARE_XFER_ERROR_COPY,             /* a frame could not be moved */
} GpuShareXferError;

typedef struct _GpuShareXfer GpuShareXfer;
typedef struct _GpuShareXferRing GpuShareXferRing;
typedef struct _GpuShareXferView GpuShareXferView;

/* What a GPU of this process can do, as the handshake needs it */
typedef struct
{
  gint device;
  gchar name[128];
  guint8 uuid[16];
  guint32 mem_types;            /* GPU GpuShareMemType a producer offers:
                                 * gpusharenegotiate.h says, not the probe */
  guint32 device_caps;          /* GPUSHARE_DEVICE_CAP_* */
  guint32 sync_modes;           /* GpuShareSyncMode mask */
  gint compute_mode;
  gboolean vmm;                 /* virtual memory management */
  gboolean posix_fd;            /* VMM memory as file descriptors */
  gboolean unified_addressing;
  gboolean fabric;
  gboolean mps;
} GpuShareGpuInfo;

/* Can this process read, over peer access, memory of the GPU with that
 * UUID?  Filled by gpushare_xfer_gpu_peer () */
typedef struct
{
  gboolean visible;             /* the GPU is one of ours */
  gint owner;                   /* its ordinal here */
  gboolean reachable;           /* peer access works */
  gboolean atomics;
  gint rank;
  gchar *error;                 /* why not, when not reachable */
} GpuSharePeerInfo;

struct _GpuShareXferRing
{
  const GpuShareXfer *xfer;
  gint ref_count;
  GMutex lock;                  /* the ring's device work */
  GpuShareMemType mem_type;
  gint device;
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* where the producer writes a slot, NULL if not host-visible */
  gpointer data[GPUSHARE_MAX_SLOTS];
  /* the slot's device address in this process, 0 if not device memory */
  guintptr device_ptr[GPUSHARE_MAX_SLOTS];
};

/* What a pool of slots (gpushare_xfer_gpu_slot_pool_new ()) asks its
 * owner, the sink */
typedef struct
{
  /* a slot for upstream to write, readers gone (see
   * gpushare_xfer_ring_prepare ()): GST_FLOW_OK with *ring (a reference),
   * *slot and *tag (the owner's, put on the buffer); GST_FLOW_FLUSHING;
   * or GST_FLOW_CUSTOM_SUCCESS for none now: the pool hands out memory of
   * its own, copied at render */
  GstFlowReturn (*acquire) (gpointer user_data, GpuShareXferRing ** ring,
      guint * slot, gpointer * tag);
  /* the memory of a slot is freed, rendered or not (upstream's stream
   * waited for) */
  void (*release) (gpointer user_data, gpointer tag);
  /* the pool starts or stops flushing: a waiting acquire returns */
  void (*flush) (gpointer user_data, gboolean flushing);
  /* the buffers' qdata key for the tag, a copy of a tag and its free
   * function: the buffer carries one copy, the slot's memory another, and
   * the slot goes back (release) when that memory is freed, not when the
   * buffer comes back: a copy of the buffer may share it */
  GQuark tag_quark;
  gpointer (*tag_copy) (gpointer tag);
  GDestroyNotify tag_free;
  gpointer user_data;
  GDestroyNotify destroy;
} GpuShareSlotPoolFuncs;

struct _GpuShareXferView
{
  const GpuShareXfer *xfer;
  gint ref_count;
  GpuShareMemType mem_type;
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* where the consumer reads a slot, NULL if not host-visible */
  gconstpointer data[GPUSHARE_MAX_SLOTS];
  /* the slot's device address in this process, 0 if not device memory */
  guintptr device_ptr[GPUSHARE_MAX_SLOTS];
  gint device;                  /* the CUDA ordinal it is read on */
  /* the slots' read-only fds in this process, kept for memory that
   * carries its fd downstream (n_fds 0: none; closed with the view, or
   * by gpushare_xfer_view_drop_fds ()); fd_memories: memories made on
   * them (atomic) */
  guint n_fds;
  gint fds[GPUSHARE_MAX_SLOTS];
  gint fd_memories;
  /* reads in place whose ready word was seen on the host (no wait on the
   * device), and the microseconds spent looking for it (atomic; taken by
   * gpushare_xfer_view_take_ready ()) */
  guint64 ready_on_host;
  guint64 ready_spin_us;
};

/* The producer's half of a transfer: a ring of its memory */
typedef struct
{
  GpuShareXferRing *(*ring_new) (gint device, GpuShareMemType type,
      guint64 epoch, guint n_slots, gsize frame_size, GError ** error);
  void (*ring_free) (GpuShareXferRing * ring);
  gboolean (*add_consumer) (GpuShareXferRing * ring, guint index,
      GpuShareSyncMode mode, guint minor, GError ** error);
  void (*remove_consumer) (GpuShareXferRing * ring, guint index);
  gboolean (*export_slots) (GpuShareXferRing * ring, guint index,
      GpuShareSlots * slots, gint * fds, guint * n_fds, GError ** error);
  gboolean (*write) (GpuShareXferRing * ring, guint slot,
      const GstVideoInfo * info, GstBuffer * buf, GpuShareXferRing * staged,
      GError ** error);
  gboolean (*publish) (GpuShareXferRing * ring, guint slot, guint64 holders,
      guint64 sequence, GError ** error);
  /* the slot may be written by anyone: its last readers are gone (NULL:
   * nothing to wait for) */
  gboolean (*prepare) (GpuShareXferRing * ring, guint slot, GError ** error);
  /* after write or prepare, without the ring's lock: waits on the host for
   * the device work they queued (NULL: none) */
  gboolean (*settle) (GpuShareXferRing * ring, guint slot, GError ** error);
  /* with the ring's lock: must settle wait, with holders 0 after write
   * (upstream gets its buffer back), else before the frame goes to those
   * holders (NULL: always after write and prepare, never before publish).
   * A write may order upstream's stream after its copy on the device;
   * then only holders that synchronise on the host need the wait */
  gboolean (*needs_settle) (GpuShareXferRing * ring, guint slot,
      guint64 holders);
  /* queues the copy of rows rows of row_bytes, src_stride apart from
   * src_offset on in src's device memory, packed to offset of slot, after
   * the slot's write and before its publish (NULL: the memory takes
   * none) */
  gboolean (*write_region) (GpuShareXferRing * ring, guint slot,
      gsize offset, GstBuffer * src, gsize src_offset, gsize src_stride,
      gsize row_bytes, guint rows, GError ** error);
  /* mem is the slot itself (NULL: compare host addresses) */
  gboolean (*holds) (GpuShareXferRing * ring, guint slot, GstMemory * mem);
  /* the host's time in settle since the last call, and the part of it
   * spent spinning, in microseconds (NULL: no host waits) */
  void (*take_waits) (GpuShareXferRing * ring, guint64 * wait_us,
      guint64 * spin_us);
  /* with the ring's lock: the consumers (holder bits) whose done signal
   * of a frame the ring's device work has waited for longer than limit_us
   * at now, each one's frame in sequences (64 entries); the ring waits
   * no longer for those it can let go of (NULL: no waits on the device) */
  guint64 (*overdue) (GpuShareXferRing * ring, gint64 now, gint64 limit_us,
      guint64 * sequences);
} GpuShareXferProducer;

/* The consumer's half: a view of an exported ring */
typedef struct
{
  /* takes every fd (closed on every path) */
  GpuShareXferView *(*view_new) (gint device, const GpuShareSlots * slots,
      gint * fds, GError ** error);
  void (*view_free) (GpuShareXferView * view);
  gboolean (*read) (GpuShareXferView * view, guint slot, guint64 sequence,
      const GstVideoInfo * slot_info, const GstVideoInfo * dst_info,
      GstBuffer * dst, gboolean dst_device, GError ** error);
  gboolean (*skip) (GpuShareXferView * view, guint slot, guint64 sequence,
      GError ** error);
  /* a read in place, in two halves: ready waited for on the host, then,
   * once the frame was read, done signalled (NULL: nothing to do) */
  gboolean (*wait_ready) (GpuShareXferView * view, guint slot,
      guint64 sequence, GError ** error);
  gboolean (*done) (GpuShareXferView * view, guint slot, guint64 sequence,
      GError ** error);
  /* ends the waits for the producer that reads are in, and fails those
   * that begin, until called with FALSE (NULL: reads never wait for the
   * producer) */
  void (*cancel) (GpuShareXferView * view, gboolean cancel);
} GpuShareXferConsumer;

/* What the elements need of GStreamer's own library for a device memory
 * (contexts, the memory type, buffer pools), so that no element calls
 * into ext/ directly.  Device transfers only. */
typedef struct
{
  /* the caps feature of that memory, e.g. "memory:CUDAMemory" */
  const gchar *caps_feature;
  /* the library is there, and of a version these hooks are right for */
  gboolean (*library_ok) (void);
  gboolean (*context_ensure) (GstElement * element, gint device,
      GstObject ** ctx);
  gboolean (*context_set) (GstElement * element, GstContext * context,
      gint device, GstObject ** ctx);
  gboolean (*context_query) (GstElement * element, GstQuery * query,
      gint device, GstObject ** ctx);
  gboolean (*is_memory) (GstMemory * mem);
  GstBufferPool *(*pool_new) (GstObject * ctx);
  /* a pool of the library's own type whose buffers are slots */
  GstBufferPool *(*slot_pool_new) (GstObject * ctx,
      const GpuShareSlotPoolFuncs * funcs);
  /* the library can wrap device memory, and, given info, a frame laid
   * out so in a slot of slot_size (NULL: never; FALSE with a borrowed
   * reason) */
  gboolean (*can_import) (const GstVideoInfo * info, gsize slot_size,
      const gchar ** why_not);
  /* a memory of the library (of ctx) wrapping the slot from offset on,
   * laid out as slot_info, ready already, that calls notify (user_data)
   * when freed; see gpushare_xfer_view_import () */
  GstMemory *(*import) (GpuShareXferView * view, guint slot, gsize offset,
      const GstVideoInfo * slot_info, GstObject * ctx, gpointer user_data,
      GDestroyNotify notify, GError ** error);
  /* a new memory of the library (of ctx), what the slot holds from
   * offset on (laid out as info, rows of its stride) copied into it on the
   * device, done when it returns; info then says the memory's own layout
   * (NULL: never) */
  GstMemory *(*copy_region) (GpuShareXferView * view, guint slot,
      gsize offset, GstVideoInfo * info, GstObject * ctx, GError ** error);
  /* waits for the work queued in ctx, before a slot read in place goes
   * back (NULL: nothing to wait for) */
  void (*quiesce) (GstObject * ctx);
} GpuShareXferGst;

/* A transfer: the memory kinds it serves and how a consumer picks among
 * them (policy, read by the negotiation), the device it runs on (device
 * transfers), and its three tables.  Registered once, at plugin load,
 * before the elements (gpushare_xfer_register ()). */
struct _GpuShareXfer
{
  const GpuShareMemPolicy *policy;

  /* the device: device transfers only */
  gboolean (*probe) (gint device, GpuShareGpuInfo * info, GError ** error);
  void (*peer) (gint reader, const guint8 uuid[16], GpuSharePeerInfo * peer);

  const GpuShareXferProducer *producer;
  const GpuShareXferConsumer *consumer;
  const GpuShareXferGst *gst;   /* NULL: GStreamer's system memory */
};

/* the system-memory transfer (gpusharexfersys.c), always registered,
 * last in preference; its tables serve a transfer of host memory */
extern const GpuShareXfer gpushare_xfer_system;
extern const GpuShareXferProducer gpushare_xfer_system_producer;
extern const GpuShareXferConsumer gpushare_xfer_system_consumer;

/* The registry.  A transfer registers itself once, at plugin load, before
 * the elements (their pad templates and gpusharesrc's transport values
 * are read from it); registering one twice does nothing.  Its memory
 * kinds must be bits no other transfer serves, its transport values
 * values no other kind uses.  Preference is the order of registration,
 * the system transfer last. */
void gpushare_xfer_register (const GpuShareXfer * xfer);
/* the transfer that moves type, or NULL */
const GpuShareXfer *gpushare_xfer_for (GpuShareMemType type);
/* the kind of a registered transfer of that type, or NULL */
const GpuShareMemKind *gpushare_xfer_kind (GpuShareMemType type);
/* the registered transfers' policies in preference order, NULL-ended:
 * what the negotiation takes */
const GpuShareMemPolicy *const *gpushare_xfer_policies (void);
/* whether the registered kind of type has every one of flags
 * (GpuShareMemKindFlags) */
gboolean gpushare_xfer_kind_has (GpuShareMemType type, guint flags);
/* the first registered device transfer (one with a probe), or NULL */
const GpuShareXfer *gpushare_xfer_gpu (void);
/* its GStreamer memory's caps feature ("memory:CUDAMemory"), or NULL */
const gchar *gpushare_xfer_gpu_caps_feature (void);
/* rounds size up to a multiple of align (a power of two or not) */
gsize gpushare_round_up (gsize size, gsize align);

/* the device, through the GPU transfer: FALSE with a reason when there is
 * none or it cannot share */
gboolean gpushare_xfer_gpu_probe (gint device, GpuShareGpuInfo * info,
    GError ** error);
void gpushare_xfer_gpu_peer (gint reader, const guint8 uuid[16],
    GpuSharePeerInfo * peer);
void gpushare_peer_info_clear (GpuSharePeerInfo * peer);
/* a probed GPU as the negotiation takes it (gpusharenegotiate.h);
 * why_not is borrowed */
void gpushare_xfer_gpu_describe (const GpuShareGpuInfo * info,
    gboolean usable, const gchar * why_not, GpuShareGpu * gpu);

/* GStreamer's GPU library through the GPU transfer; each is FALSE / NULL
 * without one */
gboolean gpushare_xfer_gpu_context_ensure (GstElement * element, gint device,
    GstObject ** ctx);
gboolean gpushare_xfer_gpu_context_set (GstElement * element,
    GstContext * context, gint device, GstObject ** ctx);
/* answers a neighbour's context query: with *ctx, or, when the element has
 * none yet, with this process's shared context of device (not stored in
 * *ctx: the query may come from any thread) */
gboolean gpushare_xfer_gpu_context_query (GstElement * element,
    GstQuery * query, gint device, GstObject ** ctx);
gboolean gpushare_xfer_gpu_is_memory (GstMemory * mem);
GstBufferPool *gpushare_xfer_gpu_pool_new (GstObject * ctx);
/* A buffer pool of GStreamer's GPU library's own pool type (the nvcodec
 * elements take no other), of context ctx, whose buffers are slots handed
 * out by funcs->acquire (GStreamer 1.24+): upstream writes the frame
 * straight into shared memory.  NULL where it cannot be made (1.22). */
GstBufferPool *gpushare_xfer_gpu_slot_pool_new (GstObject * ctx,
    const GpuShareSlotPoolFuncs * funcs);
/* the raw video the elements' pads take: GPU memory too where a GPU
 * transfer is registered (the plugin does so before its elements) and
 * GStreamer's library for that memory is one it can use */
GstCaps *gpushare_xfer_template_caps (void);

/* consumer: adds what the reads in place of view counted since the last
 * call (ready words seen on the host, the time spent looking) */
void gpushare_xfer_view_take_ready (GpuShareXferView * view,
    guint64 * on_host, guint64 * spin_us);

/* producer */
GpuShareXferRing *gpushare_xfer_ring_new (GpuShareMemType type, gint device,
    guint64 epoch, guint n_slots, gsize frame_size, GError ** error);
GpuShareXferRing *gpushare_xfer_ring_ref (GpuShareXferRing * ring);
void gpushare_xfer_ring_unref (GpuShareXferRing * ring);
/* minor: the protocol minor the consumer speaks (what its SLOTS may
 * carry) */
gboolean gpushare_xfer_ring_add_consumer (GpuShareXferRing * ring,
    guint index, GpuShareSyncMode mode, guint minor, GError ** error);
void gpushare_xfer_ring_remove_consumer (GpuShareXferRing * ring,
    guint index);
/* the consumers whose done signal is overdue, see
 * GpuShareXferProducer.overdue (0 where the memory has none) */
guint64 gpushare_xfer_ring_overdue (GpuShareXferRing * ring, gint64 now,
    gint64 limit_us, guint64 * sequences);
/* fills slots and fds (*n_fds of them, the caller's) for one consumer */
gboolean gpushare_xfer_ring_export (GpuShareXferRing * ring, guint index,
    GpuShareSlots * slots, gint * fds, guint * n_fds, GError ** error);
/* writes buf (of info) into slot; staged: a host-visible ring whose same
 * slot holds the frame already, or NULL */
gboolean gpushare_xfer_ring_write (GpuShareXferRing * ring, guint slot,
    const GstVideoInfo * info, GstBuffer * buf, GpuShareXferRing * staged,
    GError ** error);
gboolean gpushare_xfer_ring_publish (GpuShareXferRing * ring, guint slot,
    guint64 holders, guint64 sequence, GError ** error);
/* after write, before publish: rows rows of row_bytes, src_stride apart
 * from src_offset on in src (device memory of the ring's transfer),
 * copied packed to offset of slot (beyond the frame: a payload of its
 * metas); src may go when it returns */
gboolean gpushare_xfer_ring_write_region (GpuShareXferRing * ring, guint slot,
    gsize offset, GstBuffer * src, gsize src_offset, gsize src_stride,
    gsize row_bytes, guint rows, GError ** error);
/* mem is the slot itself: upstream wrote it in place */
gboolean gpushare_xfer_ring_holds (GpuShareXferRing * ring, guint slot,
    GstMemory * mem);
/* adds the host's waits for the ring's device work since the last call
 * (microseconds: all of it, and the part spent spinning) */
void gpushare_xfer_ring_take_waits (GpuShareXferRing * ring,
    guint64 * wait_us, guint64 * spin_us);
/* waits until the slot's last readers are gone, so that it may be handed
 * to upstream to write in place */
gboolean gpushare_xfer_ring_prepare (GpuShareXferRing * ring, guint slot,
    GError ** error);

/* consumer: takes every fd (closed on every path) */
GpuShareXferView *gpushare_xfer_view_new (gint device,
    const GpuShareSlots * slots, gint * fds, GError ** error);
GpuShareXferView *gpushare_xfer_view_ref (GpuShareXferView * view);
void gpushare_xfer_view_unref (GpuShareXferView * view);
/* a read-only memory of size bytes wrapping the slot in place, that holds
 * a reference on the view and calls notify (user_data) when freed; NULL
 * when this memory cannot be wrapped */
GstMemory *gpushare_xfer_view_wrap (GpuShareXferView * view, guint slot,
    gsize size, gpointer user_data, GDestroyNotify notify);
/* the same as a GstFdMemory of fd_allocator (a GstFdAllocator) on the
 * slot's fd, for elements that pass fds on (unixfdsink): mapped anew by
 * each memory, so only where downstream asks for fds; NULL when the view
 * kept no fd */
GstMemory *gpushare_xfer_view_wrap_fd (GpuShareXferView * view, guint slot,
    gsize size, GstAllocator * fd_allocator, gpointer user_data,
    GDestroyNotify notify);
/* nobody downstream takes fds: the view's are closed, unless a memory was
 * made on them (then they stay until the view goes).  Not concurrently
 * with gpushare_xfer_view_wrap_fd () */
void gpushare_xfer_view_drop_fds (GpuShareXferView * view);
/* Whether GPU slots can be handed downstream in place: GStreamer's GPU
 * library of this process can wrap device memory (1.24 and later).  FALSE
 * with a borrowed reason otherwise. */
gboolean gpushare_xfer_gpu_can_import (const gchar ** why_not);
/* A read-only GPU memory of GStreamer's library (a memory of ctx, the
 * element's GstCudaContext) that is the slot itself, laid out as
 * slot_info: zero copies.  Ready has been waited for when it returns.
 * When the memory is freed, whatever this process still has queued on the
 * GPU in ctx is waited for (a reader downstream may have queued work on it
 * and dropped the buffer), done is signalled, the view's reference dropped
 * and notify (user_data) called.  NULL, with error, when it cannot be
 * made. */
GstMemory *gpushare_xfer_view_import (GpuShareXferView * view, guint slot,
    guint64 sequence, const GstVideoInfo * slot_info, GstObject * ctx,
    gpointer user_data, GDestroyNotify notify, GError ** error);
/* What a frame's slot holds from offset on (a payload of its metas in
 * GPU memory, past the frame), laid out as info (rows of its stride), as
 * a read-only GPU memory of GStreamer's library (of ctx): the slot
 * itself, ready waited for already (the frame was read), which when
 * freed waits for what this process queued in ctx and calls notify
 * (user_data), nothing else; or, copy, a copy made on the device.  NULL,
 * with error, when it cannot be made. */
GstMemory *gpushare_xfer_view_import_region (GpuShareXferView * view,
    guint slot, gsize offset, const GstVideoInfo * info, GstObject * ctx,
    gpointer user_data, GDestroyNotify notify, GError ** error);
/* (info: in, the region's layout; out, the copy's) */
GstMemory *gpushare_xfer_view_copy_region (GpuShareXferView * view,
    guint slot, gsize offset, GstVideoInfo * info, GstObject * ctx,
    GError ** error);
/* The application's route (gpusharemeta.h): a memory of size bytes
 * that stands for the GPU slot (no host address), with a
 * GstGpuShareCudaMeta to add from view->device_ptr[slot].  Ready has been
 * waited for when it returns; when it is freed, done is signalled (the
 * application finished reading), the view's reference dropped and notify
 * (user_data) called.  NULL, with error, where the slot is not device
 * memory. */
GstMemory *gpushare_xfer_view_import_slot (GpuShareXferView * view,
    guint slot, guint64 sequence, gsize size, gpointer user_data,
    GDestroyNotify notify, GError ** error);
/* copies the frame of slot (laid out as slot_info) into dst (as dst_info,
 * device memory when dst_device) */
gboolean gpushare_xfer_view_read (GpuShareXferView * view, guint slot,
    guint64 sequence, const GstVideoInfo * slot_info,
    const GstVideoInfo * dst_info, GstBuffer * dst, gboolean dst_device,
    GError ** error);
/* a frame that will not be read: its slot is signalled done all the same */
gboolean gpushare_xfer_view_skip (GpuShareXferView * view, guint slot,
    guint64 sequence, GError ** error);
/* a flush: the reads of view that wait for the producer's signal return
 * (failing), and so do those that begin, until cancel is FALSE again */
void gpushare_xfer_view_cancel (GpuShareXferView * view, gboolean cancel);

/* the fds a SLOTS body comes with (the codec checked the count) */
guint gpushare_slots_n_fds (const GpuShareSlots * slots);

G_END_DECLS

#endif /* __GPUSHARE_XFER_H__ */

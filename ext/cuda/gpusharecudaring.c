/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frames through CUDA VMM slots: the producer's ring and the consumer's
 * view, with the three synchronisation modes.  See gpusharecudaring.h.
 */

#include "gpusharecudaring.h"
#include "gpusharetest.h"
#include "gpusharecudasync.h"
#include "gpusharevideo.h"
#include "gpusharecudacopy-fatbin.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (gpushare_xfer_debug);
#define GST_CAT_DEFAULT gpushare_xfer_debug

#define MAX_HOLDERS 64

static void
ensure_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_xfer_debug, "gpusharecudaring", 0,
        "gpushare CUDA frame transfer");
    g_once_init_leave (&once, 1);
  }
}

guint32
gpushare_cuda_sync_modes (const GpuShareCudaCaps * caps)
{
  guint32 modes = GPUSHARE_SYNC_HOST;

  if (caps->mem_ops_64 && caps->vmm && caps->posix_fd)
    modes |= GPUSHARE_SYNC_SEMAPHORE;
  if (caps->ipc_event)
    modes |= GPUSHARE_SYNC_EVENT;
  return modes;
}

/* ------------------------------------------------------------------------ */
/* Contexts and copies */

/* ctx NULL: retain the primary context of device into *owned */
static gboolean
context_init (gint device, CUcontext ctx, CUcontext * out, gboolean * owned,
    GError ** error)
{
  if (!gpushare_cuda_load (error))
    return FALSE;
  *owned = FALSE;
  if (ctx) {
    *out = ctx;
    return TRUE;
  }
  if (!gpushare_cuda_primary_retain (device, out, error))
    return FALSE;
  *owned = TRUE;
  return TRUE;
}

static void
context_clear (gint device, gboolean owned)
{
  if (owned)
    gpushare_cuda_primary_release (device);
}

/* How long a host wait spins before it sleeps.  A device copy of a frame
 * takes some microseconds, and the shortest sleep costs the timer slack on
 * top (50 us by default): sleeping at once made the paced handoff several
 * times longer than the work it waited for. */
#define SPIN_US 200

/* How long a consumer's wait on its view's stream spins before it
 * sleeps: for the frame's ready signal, then for its own copy of the
 * frame, which shares the GPU's time slices with the producer's work and
 * takes about a millisecond at 4K at full speed.  Sleeps of doubling
 * length after SPIN_US overshot that by up to a third, and a paced copy
 * by 20 us; cuStreamSynchronize (), which these waits replace, spun all
 * along, so this costs no more CPU than it did. */
#define VIEW_SPIN_US 5000

/* Polls an event (stream NULL) or a stream until it is no longer busy or
 * the deadline passes: spins for spin_us, then sleeps, doubling up to
 * 1 ms.  The context is current.  Never cuEventSynchronize () or
 * cuStreamSynchronize (): a consumer that never signals done would hold
 * the caller for ever, beyond any flush or state change. */
static CUresult
poll_done_or_cancel (CUevent event, CUstream stream, gint64 deadline,
    gint64 spin_us, const gint * cancel, gint64 * spun_us)
{
  gint64 start = g_get_monotonic_time (), spin_until = start + spin_us;
  gint64 now = start;
  gulong sleep_us = 20;
  CUresult r;

  for (;;) {
    r = event ? gpushare_cuda ()->cuEventQuery (event) :
        gpushare_cuda ()->cuStreamQuery (stream);
    if (r != CUDA_ERROR_NOT_READY)
      break;
    now = g_get_monotonic_time ();
    if (now >= deadline || (cancel && g_atomic_int_get (cancel)))
      break;
    if (now < spin_until)
      continue;
    g_usleep (sleep_us);
    sleep_us = MIN (sleep_us * 2, 1000);
  }
  if (spun_us)
    *spun_us = MIN (now, spin_until) - start;
  return r;
}

static CUresult
poll_done (CUevent event, CUstream stream, gint64 deadline, gint64 * spun_us)
{
  return poll_done_or_cancel (event, stream, deadline, SPIN_US, NULL, spun_us);
}

static gboolean
push (CUcontext ctx, GError ** error)
{
  return gpushare_cuda_check (gpushare_cuda ()->cuCtxPushCurrent (ctx),
      "cuCtxPushCurrent", error);
}


/* the bytes of each row of plane p and its rows, as copied between src
 * and dst */
static gboolean
plane_rows (const GstVideoInfo * info, guint p, const GpuSharePlanes * src,
    const GpuSharePlanes * dst, guint64 * row_bytes, guint * rows,
    GError ** error)
{
  /* the rows of the format, not of the first component: packed 4:2:2 at
   * odd widths ends with a whole macropixel */
  if (!gpushare_video_plane_geometry (info, p, row_bytes, rows)) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "the rows of format %s cannot be copied plane by plane",
        GST_VIDEO_INFO_NAME (info));
    return FALSE;
  }
  *row_bytes = MIN (*row_bytes, (guint64) MIN (src->stride[p], dst->stride[p]));
  return TRUE;
}

/* The copy kernel (gpusharecudacopy.cu) of a context: NULL function when
 * it did not load, and copies go through cuMemcpy2DAsync */
typedef struct
{
  CUmodule module;
  CUfunction rows16;
} CopyKernel;

#define COPY_BLOCK_X 128
#define COPY_BLOCK_Y 2

/* context pushed */
static void
copy_kernel_load (CopyKernel * k)
{
  static gsize told;
  CUresult r;

  r = gpushare_cuda ()->cuModuleLoadData (&k->module,
      gpushare_cuda_copy_fatbin);
  if (r == CUDA_SUCCESS)
    r = gpushare_cuda ()->cuModuleGetFunction (&k->rows16, k->module,
        "gpushare_copy_rows_16");
  if (r == CUDA_SUCCESS)
    return;
  if (k->module)
    gpushare_cuda ()->cuModuleUnload (k->module);
  k->module = NULL;
  k->rows16 = NULL;
  if (g_once_init_enter (&told)) {
    GST_INFO ("frames are copied by cuMemcpy2DAsync: the copy kernel did "
        "not load (%s)", gpushare_cuda_result_to_string (r));
    g_once_init_leave (&told, 1);
  }
}

/* context pushed */
static void
copy_kernel_unload (CopyKernel * k)
{
  if (k->module)
    gpushare_cuda ()->cuModuleUnload (k->module);
  k->module = NULL;
  k->rows16 = NULL;
}

/* one 2D copy in device memory of the kernel's context by the kernel:
 * FALSE (nothing enqueued, *res untouched) where it does not apply */
static gboolean
copy_rows_by_kernel (const CopyKernel * k, CUstream stream,
    const CUDA_MEMCPY2D * m, CUresult * res)
{
  unsigned long long src_pitch = m->srcPitch, dst_pitch = m->dstPitch;
  CUdeviceptr src = m->srcDevice, dst = m->dstDevice;
  unsigned int words, rows;
  void *args[6];

  if (!k || !k->rows16 || m->srcMemoryType != CU_MEMORYTYPE_DEVICE
      || m->dstMemoryType != CU_MEMORYTYPE_DEVICE
      || ((src | dst | src_pitch | dst_pitch | m->WidthInBytes) & 15) != 0
      || m->WidthInBytes == 0 || m->WidthInBytes / 16 > G_MAXUINT - COPY_BLOCK_X
      || m->Height == 0 || m->Height > 65535u * COPY_BLOCK_Y)
    return FALSE;
  words = (unsigned int) (m->WidthInBytes / 16);
  rows = (unsigned int) m->Height;
  args[0] = &src;
  args[1] = &src_pitch;
  args[2] = &dst;
  args[3] = &dst_pitch;
  args[4] = &words;
  args[5] = &rows;
  *res = gpushare_cuda ()->cuLaunchKernel (k->rows16,
      (words + COPY_BLOCK_X - 1) / COPY_BLOCK_X,
      (rows + COPY_BLOCK_Y - 1) / COPY_BLOCK_Y, 1, COPY_BLOCK_X, COPY_BLOCK_Y,
      1, 0, stream, args, NULL);
  return TRUE;
}

/* enqueues one 2D copy per plane on stream, or one for planes that follow
 * each other with the same rows on both sides (NV12 in a layout without
 * padding between its planes): every call is some microseconds of the
 * host's.  With k, copies between device memory of k's context whose
 * rows are of 16-byte words go through the copy kernel: twice as fast as
 * cuMemcpy2DAsync between pitched device memory on an H200. */
static gboolean
copy_planes (CUstream stream, const CopyKernel * k, const GstVideoInfo * info,
    const GpuSharePlanes * src, const GpuSharePlanes * dst, GError ** error)
{
  guint p, n = GST_VIDEO_INFO_N_PLANES (info);

  for (p = 0; p < n; p++) {
    CUDA_MEMCPY2D m;
    CUresult r;
    guint64 row_bytes, next_bytes;
    guint rows, next_rows, first = p;

    if (!plane_rows (info, p, src, dst, &row_bytes, &rows, error))
      return FALSE;
    while (p + 1 < n && src->stride[p + 1] == src->stride[first]
        && dst->stride[p + 1] == dst->stride[first]
        && src->offset[p + 1] == src->offset[first] +
        (gsize) rows * src->stride[first]
        && dst->offset[p + 1] == dst->offset[first] +
        (gsize) rows * dst->stride[first]
        && plane_rows (info, p + 1, src, dst, &next_bytes, &next_rows, NULL)
        && next_bytes == row_bytes) {
      rows += next_rows;
      p++;
    }
    memset (&m, 0, sizeof (m));
    if (src->device) {
      m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      m.srcDevice = (CUdeviceptr) (src->base + src->offset[first]);
    } else {
      m.srcMemoryType = CU_MEMORYTYPE_HOST;
      m.srcHost = (const void *) (src->base + src->offset[first]);
    }
    m.srcPitch = src->stride[first];
    if (dst->device) {
      m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      m.dstDevice = (CUdeviceptr) (dst->base + dst->offset[first]);
    } else {
      m.dstMemoryType = CU_MEMORYTYPE_HOST;
      m.dstHost = (void *) (dst->base + dst->offset[first]);
    }
    m.dstPitch = dst->stride[first];
    m.WidthInBytes = row_bytes;
    m.Height = rows;
    if (copy_rows_by_kernel (k, stream, &m, &r)) {
      if (!gpushare_cuda_check (r, "cuLaunchKernel", error))
        return FALSE;
    } else if (!gpushare_cuda_check (gpushare_cuda ()->cuMemcpy2DAsync (&m,
                stream), "cuMemcpy2DAsync", error)) {
      return FALSE;
    }
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Slot memory that travels as handles: legacy CUDA IPC and fabric */

typedef struct
{
  GpuShareMemType type;
  guint n;
  gsize size;
  CUdeviceptr ptrs[GPUSHARE_MAX_SLOTS];
  CUmemGenericAllocationHandle handles[GPUSHARE_MAX_SLOTS];
  gboolean created[GPUSHARE_MAX_SLOTS];
  gboolean opened[GPUSHARE_MAX_SLOTS];  /* legacy, consumer side */
} HandleMem;

/* context pushed; undoes slot i, whichever side made it */
static void
handle_mem_clear_slot (HandleMem * m, guint i)
{
  GpuShareCudaApi *cu = gpushare_cuda ();

  if (m->type == GPUSHARE_MEM_CUDA_LEGACY) {
    if (m->opened[i])
      cu->cuIpcCloseMemHandle (m->ptrs[i]);
    else if (m->ptrs[i])
      cu->cuMemFree (m->ptrs[i]);
  } else {
    gpushare_cuda_unmap_handle (m->ptrs[i], m->size);
    if (m->created[i])
      cu->cuMemRelease (m->handles[i]);
  }
  m->ptrs[i] = 0;
  m->opened[i] = m->created[i] = FALSE;
}

static void
handle_mem_free (HandleMem * m, CUcontext ctx)
{
  guint i;

  if (!m)
    return;
  if (push (ctx, NULL)) {
    gpushare_cuda ()->cuCtxSynchronize ();
    for (i = 0; i < m->n; i++)
      handle_mem_clear_slot (m, i);
    gpushare_cuda_pop ();
  }
  g_free (m);
}

/* producer: n slots of legacy (cuMemAlloc) or fabric (VMM, fabric handle
 * type) memory; handles are exported for every consumer from these */
static HandleMem *
handle_mem_new (GpuShareMemType type, gint device, CUcontext ctx, guint n,
    gsize size, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  HandleMem *m = g_new0 (HandleMem, 1);
  guint i;

  m->type = type;
  m->n = n;
  m->size = size;
  if (!push (ctx, error)) {
    g_free (m);
    return NULL;
  }
  for (i = 0; i < n; i++) {
    if (type == GPUSHARE_MEM_CUDA_LEGACY) {
      if (!gpushare_cuda_check (cu->cuMemAlloc (&m->ptrs[i], size),
              "cuMemAlloc", error))
        goto failed;
    } else {
      CUmemAllocationProp prop;

      memset (&prop, 0, sizeof (prop));
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = device;
      prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
      if (!gpushare_cuda_check (cu->cuMemCreate (&m->handles[i], size, &prop,
                  0), "cuMemCreate (fabric handle type)", error))
        goto failed;
      m->created[i] = TRUE;
      if (!gpushare_cuda_map_handle (m->handles[i], size, device,
              CU_MEM_ACCESS_FLAGS_PROT_READWRITE, &m->ptrs[i], error))
        goto failed;
    }
  }
  gpushare_cuda_pop ();
  return m;

failed:
  gpushare_cuda_pop ();
  handle_mem_free (m, ctx);
  return NULL;
}

/* producer: the handle of slot i, into 64 bytes */
static gboolean
handle_mem_export (HandleMem * m, CUcontext ctx, guint i, guint8 * out,
    GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  gboolean ok;

  G_STATIC_ASSERT (sizeof (CUipcMemHandle) == GPUSHARE_HANDLE_SIZE);
  G_STATIC_ASSERT (sizeof (CUmemFabricHandle) == GPUSHARE_HANDLE_SIZE);
  if (!push (ctx, error))
    return FALSE;
  if (m->type == GPUSHARE_MEM_CUDA_LEGACY) {
    CUipcMemHandle h;

    ok = gpushare_cuda_check (cu->cuIpcGetMemHandle (&h, m->ptrs[i]),
        "cuIpcGetMemHandle", error);
    if (ok)
      memcpy (out, &h, sizeof (h));
  } else {
    CUmemFabricHandle h;

    ok = gpushare_cuda_check (cu->cuMemExportToShareableHandle (&h,
            m->handles[i], CU_MEM_HANDLE_TYPE_FABRIC, 0),
        "cuMemExportToShareableHandle (fabric: needs an IMEX channel)", error);
    if (ok)
      memcpy (out, &h, sizeof (h));
  }
  gpushare_cuda_pop ();
  return ok;
}

/* consumer: opens or imports and maps every slot from its handle */
static HandleMem *
handle_mem_import (GpuShareMemType type, gint device, CUcontext ctx,
    guint n, gsize size, const guint8 (*handles)[GPUSHARE_HANDLE_SIZE],
    GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  HandleMem *m = g_new0 (HandleMem, 1);
  guint i;

  m->type = type;
  m->n = n;
  m->size = size;
  if (!push (ctx, error)) {
    g_free (m);
    return NULL;
  }
  for (i = 0; i < n; i++) {
    if (type == GPUSHARE_MEM_CUDA_LEGACY) {
      CUipcMemHandle h;
      CUdeviceptr base = 0;
      size_t have = 0;

      memcpy (&h, handles[i], sizeof (h));
      if (!gpushare_cuda_check (cu->cuIpcOpenMemHandle (&m->ptrs[i], h,
                  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle",
              error))
        goto failed;
      m->opened[i] = TRUE;
      /* the allocation is mapped whole, whatever size SLOTS says: a slot
       * (and the room past its frame) is read up to that size, so it must
       * be there */
      if (!gpushare_cuda_check (cu->cuMemGetAddressRange (&base, &have,
                  m->ptrs[i]), "cuMemGetAddressRange", error))
        goto failed;
      if (base != m->ptrs[i] || have < size) {
        g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
            "slot %u is an allocation of %" G_GSIZE_FORMAT " bytes, not "
            "the %" G_GSIZE_FORMAT " the producer says", i, (gsize) have, size);
        goto failed;
      }
    } else {
      CUmemFabricHandle h;

      memcpy (&h, handles[i], sizeof (h));
      if (!gpushare_cuda_check (cu->cuMemImportFromShareableHandle
              (&m->handles[i], &h, CU_MEM_HANDLE_TYPE_FABRIC),
              "cuMemImportFromShareableHandle (fabric)", error))
        goto failed;
      m->created[i] = TRUE;
      if (!gpushare_cuda_map_handle (m->handles[i], size, device,
              CU_MEM_ACCESS_FLAGS_PROT_READ, &m->ptrs[i], error))
        goto failed;
    }
  }
  gpushare_cuda_pop ();
  return m;

failed:
  gpushare_cuda_pop ();
  handle_mem_free (m, ctx);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Producer */

typedef struct
{
  gboolean present;
  GpuShareSyncMode mode;
  GpuShareCudaSem *sem;
  GpuShareCudaWords *words;     /* its ready words in host memory, or
                                 * NULL (a consumer before minor 12) */
  GpuShareCudaEvents *done;
  /* semaphore: the oldest wait of the ring's stream on its done word not
   * known to be over (gpushare_cuda_ring_begin ()): the slot, the frame
   * and since when, for gpushare_cuda_ring_overdue () */
  gboolean waited;
  guint wait_slot;
  guint64 wait_sequence;
  gint64 wait_since;
} Consumer;

/* a slot's last write, as the host sees it */
typedef enum
{
  /* our copy, queued: the writer settles before upstream's buffer goes */
  SLOT_WRITE_PENDING,
  /* ordered on the device with upstream's stream: nothing waited for it
   * on the host, host-sync readers need a settle before they read */
  SLOT_WRITE_ORDERED,
  /* upstream wrote the slot itself and the host waited for it */
  SLOT_WRITE_COMPLETE,
  /* our copy from upstream's device memory, queued, upstream's buffer
   * kept until the device is done with it: host-sync readers need a
   * settle, upstream does not */
  SLOT_WRITE_HELD,
} SlotWrite;

/* upstream's buffer a queued copy reads, and the slot it is copied into:
 * that slot's settled event, recorded after the copy, says when it is
 * done (recorded again later on the same stream, it only says so later) */
typedef struct
{
  GstBuffer *buf;
  guint slot;
} Held;

/* upstream's buffers kept for their copies at most: beyond, the writer
 * waits for its copy on the host.  A pool upstream (a decoder's) lends
 * that many buffers more while frames flow, and the ring gives them back
 * at its next write or when it goes */
#define MAX_HELD 2

struct _GpuShareCudaRing
{
  /* what the transfer interface sees of it */
  GpuShareXferRing parent;
  gint device;
  CUcontext ctx;
  gboolean owns_ctx;
  CUstream stream;
  CopyKernel copy;
  GpuShareMemType mem_type;
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  CUdeviceptr ptrs[GPUSHARE_MAX_SLOTS];
  GpuShareCudaAlloc *alloc;     /* VMM */
  HandleMem *hmem;              /* legacy, fabric */
  GpuShareCudaEvents *ready;    /* one per slot, for event consumers */
  /* one per slot: recorded after the work a writer of the slot waits for
   * (readers gone, the copy in), waited for without any lock held */
  CUevent settled[GPUSHARE_MAX_SLOTS];
  Consumer consumers[MAX_HOLDERS];
  /* who read each slot's last frame, and which frame */
  guint64 last_holders[GPUSHARE_MAX_SLOTS];
  guint64 last_sequence[GPUSHARE_MAX_SLOTS];
  /* recorded on upstream's stream, for ours to wait on */
  CUevent upstream_written;
  /* how the slot's last write was ordered, for whom the host must wait */
  SlotWrite written[GPUSHARE_MAX_SLOTS];
  /* upstream's buffers queued copies still read (SLOT_WRITE_HELD), the
   * oldest first: let go in that order once their slots' settled events
   * complete; at most MAX_HELD */
  GQueue held;
  /* the host's waits for the device (settle), in microseconds: all of
   * them, and the part spent spinning; taken by the writer */
  guint64 wait_us;
  guint64 spin_us;
  /* how upstream's last CUDA memory was waited for: logged when it
   * changes */
  const gchar *upstream_wait;
};

GpuShareCudaRing *
gpushare_cuda_ring_new (gint device, CUcontext ctx, GpuShareMemType mem_type,
    guint64 epoch, guint n_slots, gsize slot_size, GError ** error)
{
  GpuShareCudaRing *ring;
  guint i;

  ensure_debug ();
  ring = g_new0 (GpuShareCudaRing, 1);
  ring->device = device;
  ring->mem_type = mem_type;
  ring->epoch = epoch;
  ring->n_slots = n_slots;
  ring->slot_size = slot_size;
  if (!context_init (device, ctx, &ring->ctx, &ring->owns_ctx, error)) {
    g_free (ring);
    return NULL;
  }
  if (mem_type == GPUSHARE_MEM_CUDA_VMM) {
    ring->alloc =
        gpushare_cuda_alloc_new (device, epoch, n_slots, slot_size, error);
    if (!ring->alloc)
      goto failed;
    for (i = 0; i < n_slots; i++)
      ring->ptrs[i] = (CUdeviceptr) (guintptr) ring->alloc->data[i];
  } else {
    ring->hmem = handle_mem_new (mem_type, device, ring->ctx, n_slots,
        slot_size, error);
    if (!ring->hmem)
      goto failed;
    memcpy (ring->ptrs, ring->hmem->ptrs, sizeof (ring->ptrs));
  }
  if (!push (ring->ctx, error))
    goto failed;
  /* non-blocking: never serialised behind the legacy default stream */
  if (!gpushare_cuda_check (gpushare_cuda ()->cuStreamCreate (&ring->stream,
              CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)) {
    gpushare_cuda_pop ();
    goto failed;
  }
  if (!gpushare_cuda_check (gpushare_cuda ()->cuEventCreate
          (&ring->upstream_written, CU_EVENT_DISABLE_TIMING),
          "cuEventCreate", error)) {
    gpushare_cuda_pop ();
    goto failed;
  }
  for (i = 0; i < n_slots; i++) {
    if (!gpushare_cuda_check (gpushare_cuda ()->cuEventCreate
            (&ring->settled[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate",
            error)) {
      gpushare_cuda_pop ();
      goto failed;
    }
  }
  copy_kernel_load (&ring->copy);
  gpushare_cuda_pop ();
  ring->parent.slot_size = slot_size;
  for (i = 0; i < n_slots; i++)
    ring->parent.device_ptr[i] = ring->ptrs[i];
  GST_DEBUG ("ring of %u CUDA slots, epoch %" G_GUINT64_FORMAT, n_slots, epoch);
  return ring;

failed:
  gpushare_cuda_ring_free (ring);
  return NULL;
}

/* lets the stream finish what it has, for at most timeout_us: a wait on a
 * consumer that will never signal is what would keep it longer.  FALSE
 * where work is still queued; a context that cannot be made current any
 * more runs no work of its stream either: nothing is left to wait for */
static gboolean
drain (GpuShareCudaRing * ring, gint64 timeout_us)
{
  gint64 deadline = g_get_monotonic_time () + timeout_us;
  gboolean drained;

  if (!ring->stream || !push (ring->ctx, NULL))
    return TRUE;
  drained = poll_done (NULL, ring->stream, deadline, NULL) !=
      CUDA_ERROR_NOT_READY;
  gpushare_cuda_pop ();
  return drained;
}

/* how long the removal of a consumer waits for the ring's stream to pass
 * its waits on that consumer's words, forced */
#define CLEAR_DRAIN_US (2 * G_USEC_PER_SEC)

static void
consumer_clear (GpuShareCudaRing * ring, Consumer * c)
{
  GError *error = NULL;

  if (c->sem) {
    /* release our stream if it waits on this consumer's done words, then
     * let that wait finish before the memory goes; never for ever: the
     * stream may wait on another consumer's signal first */
    if (!gpushare_cuda_sem_force (c->sem, &error)) {
      GST_WARNING ("could not release the semaphores: %s", error->message);
      g_clear_error (&error);
    }
    if (drain (ring, CLEAR_DRAIN_US)) {
      gpushare_cuda_sem_free (c->sem);
      /* after the drain: no write to it is queued now */
      gpushare_cuda_words_free (c->words);
    } else {
      /* a wait on its words may still be queued behind another's: they
       * stay mapped rather than be read from freed memory */
      GST_WARNING ("the ring's stream waits on another consumer: a "
          "removed consumer's semaphore block is left mapped");
    }
  }
  if (c->done)
    gpushare_cuda_events_free (c->done);
  memset (c, 0, sizeof (*c));
}

/* how long a ring that is freed waits for its stream at most, once its
 * consumers' words are forced */
#define RING_DRAIN_US (2 * G_USEC_PER_SEC)

void
gpushare_cuda_ring_free (GpuShareCudaRing * ring)
{
  gboolean drained;
  guint i;

  if (!ring)
    return;
  /* frames already published complete before any word is forced, so a
   * consumer still reading this ring never sees a half-written frame */
  drain (ring, G_USEC_PER_SEC);
  for (i = 0; i < MAX_HOLDERS; i++)
    if (ring->consumers[i].present)
      consumer_clear (ring, &ring->consumers[i]);
  /* never for ever: an event consumer's done event may never complete */
  drained = drain (ring, RING_DRAIN_US);
  if (ring->stream && push (ring->ctx, NULL)) {
    /* with work still queued, the driver lets the stream go once done */
    gpushare_cuda ()->cuStreamDestroy (ring->stream);
    if (drained) {
      copy_kernel_unload (&ring->copy);
      for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
        if (ring->settled[i])
          gpushare_cuda ()->cuEventDestroy (ring->settled[i]);
      if (ring->upstream_written)
        gpushare_cuda ()->cuEventDestroy (ring->upstream_written);
    }
    gpushare_cuda_pop ();
  }
  if (!drained) {
    /* what the stream still waits to write stays: the slots, upstream's
     * buffers, the events; a fault in this context would end every
     * element of the process */
    GST_WARNING ("the ring's stream still waits on a consumer: its %u "
        "slots are left mapped", ring->n_slots);
    g_free (ring);
    return;
  }
  /* after the synchronise: no copy reads upstream's buffers now */
  while (!g_queue_is_empty (&ring->held)) {
    Held *h = g_queue_pop_head (&ring->held);

    gst_buffer_unref (h->buf);
    g_free (h);
  }
  if (ring->ready)
    gpushare_cuda_events_free (ring->ready);
  if (ring->alloc)
    gpushare_cuda_alloc_unref (ring->alloc);
  handle_mem_free (ring->hmem, ring->ctx);
  context_clear (ring->device, ring->owns_ctx);
  g_free (ring);
}

guint64
gpushare_cuda_ring_epoch (GpuShareCudaRing * ring)
{
  return ring->epoch;
}

gsize
gpushare_cuda_ring_slot_size (GpuShareCudaRing * ring)
{
  return ring->slot_size;
}

gboolean
gpushare_cuda_ring_add_consumer (GpuShareCudaRing * ring, guint index,
    GpuShareSyncMode mode, GError ** error)
{
  Consumer *c;
  guint n = ring->n_slots;

  g_return_val_if_fail (index < MAX_HOLDERS, FALSE);
  c = &ring->consumers[index];
  if (c->present)
    consumer_clear (ring, c);
  c->mode = mode;
  switch (mode) {
    case GPUSHARE_SYNC_HOST:
      break;
    case GPUSHARE_SYNC_SEMAPHORE:
      c->sem = gpushare_cuda_sem_new (ring->device, n, error);
      if (!c->sem)
        return FALSE;
      break;
    case GPUSHARE_SYNC_EVENT:
      if (!ring->ready) {
        ring->ready = gpushare_cuda_events_new (ring->device, n, error);
        if (!ring->ready)
          return FALSE;
      }
      c->done = gpushare_cuda_events_new (ring->device, n, error);
      if (!c->done)
        return FALSE;
      break;
    default:
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
          "unknown synchronisation mode");
      return FALSE;
  }
  c->present = TRUE;
  return TRUE;
}

gboolean
gpushare_cuda_ring_add_words (GpuShareCudaRing * ring, guint index,
    GError ** error)
{
  Consumer *c;

  g_return_val_if_fail (index < MAX_HOLDERS, FALSE);
  c = &ring->consumers[index];
  g_return_val_if_fail (c->present && c->mode == GPUSHARE_SYNC_SEMAPHORE,
      FALSE);
  if (!c->words)
    c->words = gpushare_cuda_words_new (ring->device, ring->n_slots, error);
  return c->words != NULL;
}

void
gpushare_cuda_ring_remove_consumer (GpuShareCudaRing * ring, guint index)
{
  guint i;

  if (index >= MAX_HOLDERS || !ring->consumers[index].present)
    return;
  consumer_clear (ring, &ring->consumers[index]);
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    ring->last_holders[i] &= ~(G_GUINT64_CONSTANT (1) << index);
}

gboolean
gpushare_cuda_ring_export (GpuShareCudaRing * ring, guint index,
    GpuShareSlots * slots, gint * fds, GError ** error)
{
  Consumer *c = &ring->consumers[index];
  guint n = ring->n_slots, i, n_fds = 0, h = 0;

  g_return_val_if_fail (index < MAX_HOLDERS && c->present, FALSE);
  memset (slots, 0, sizeof (*slots));
  slots->epoch = ring->epoch;
  slots->slot_size = ring->slot_size;
  slots->n_slots = n;
  slots->mem_type = ring->mem_type;
  slots->sync_mode = c->mode;

  if (ring->alloc) {
    for (i = 0; i < n; i++, n_fds++) {
      fds[i] = gpushare_cuda_alloc_export (ring->alloc, i, error);
      if (fds[i] < 0)
        goto failed;
    }
  } else {
    /* legacy and fabric memory travel as handles, not fds */
    for (h = 0; h < n; h++)
      if (!handle_mem_export (ring->hmem, ring->ctx, h, slots->handles[h],
              error))
        goto failed;
  }
  if (c->mode == GPUSHARE_SYNC_SEMAPHORE) {
    fds[n_fds] = gpushare_cuda_sem_export (c->sem, error);
    if (fds[n_fds] < 0)
      goto failed;
    n_fds++;
    slots->n_sync_fds = 1;
    slots->sync_size = gpushare_cuda_sem_size (c->sem);
    if (c->words) {
      fds[n_fds] = gpushare_cuda_words_export (c->words, error);
      if (fds[n_fds] < 0)
        goto failed;
      n_fds++;
      slots->n_sync_fds = 2;
    }
  } else if (c->mode == GPUSHARE_SYNC_EVENT) {
    if (!gpushare_cuda_events_export (ring->ready, slots->handles[h], error)
        || !gpushare_cuda_events_export (c->done, slots->handles[h + n], error))
      goto failed;
    h += 2 * n;
  }
  slots->n_handles = h;
  return TRUE;

failed:
  gpushare_close_fds (fds, n_fds);
  return FALSE;
}

gboolean
gpushare_cuda_ring_begin (GpuShareCudaRing * ring, guint slot, GError ** error)
{
  guint64 holders = ring->last_holders[slot];
  gboolean ok = TRUE;
  guint i;

  if (!holders)
    return TRUE;
  if (!push (ring->ctx, error))
    return FALSE;
  for (i = 0; ok && i < MAX_HOLDERS; i++) {
    Consumer *c = &ring->consumers[i];

    if (!(holders & (G_GUINT64_CONSTANT (1) << i)) || !c->present)
      continue;
    if (c->mode == GPUSHARE_SYNC_SEMAPHORE) {
      ok = gpushare_cuda_sem_wait (ring->stream,
          gpushare_cuda_sem_done (c->sem, slot), ring->last_sequence[slot],
          error);
      /* an earlier wait still pending comes first in the stream: that
       * one is watched */
      if (ok && !c->waited) {
        c->waited = TRUE;
        c->wait_slot = slot;
        c->wait_sequence = ring->last_sequence[slot];
        c->wait_since = g_get_monotonic_time ();
      }
    } else if (c->mode == GPUSHARE_SYNC_EVENT) {
      ok = gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitEvent
          (ring->stream, gpushare_cuda_events_get (c->done, slot), 0),
          "cuStreamWaitEvent", error);
    }
  }
  /* the waits are over once this completes, whatever write of the slot
   * follows (or fails before it records the event again) */
  ok = ok && gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->settled[slot], ring->stream), "cuEventRecord", error);
  gpushare_cuda_pop ();
  ring->last_holders[slot] = 0;
  return ok;
}

/* how long the check of one consumer's done word watches it: a wait on a
 * word that is there already, on a GPU that other processes' work may
 * hold for a time slice or two */
#define OVERDUE_CHECK_MS 200

guint64
gpushare_cuda_ring_overdue (GpuShareCudaRing * ring, gint64 now,
    gint64 limit_us, guint64 * sequences)
{
  GError *error = NULL;
  guint64 overdue = 0;
  guint i;

  if (!push (ring->ctx, NULL))
    return 0;
  for (i = 0; i < MAX_HOLDERS; i++) {
    Consumer *c = &ring->consumers[i];
    gboolean late = FALSE;

    if (!c->present || !c->waited)
      continue;
    /* recorded after the wait (again after any later one of the slot,
     * which comes after it in the stream) */
    if (gpushare_cuda ()->cuEventQuery (ring->settled[c->wait_slot]) !=
        CUDA_ERROR_NOT_READY) {
      c->waited = FALSE;
      continue;
    }
    if (now - c->wait_since < limit_us)
      continue;
    /* the stream may wait on another consumer first: this one's word is
     * watched on its own, and forced when late */
    if (!gpushare_cuda_sem_check_done (c->sem, c->wait_slot,
            c->wait_sequence, OVERDUE_CHECK_MS, &late, &error)) {
      GST_WARNING ("consumer %u's done signal could not be checked: %s", i,
          error->message);
      g_clear_error (&error);
      continue;
    }
    if (late) {
      overdue |= G_GUINT64_CONSTANT (1) << i;
      sequences[i] = c->wait_sequence;
    } else {
      /* its word is there: the next wait on it is watched */
      c->waited = FALSE;
    }
  }
  gpushare_cuda_pop ();
  return overdue;
}

CUcontext
gpushare_cuda_ring_context (GpuShareCudaRing * ring)
{
  return ring->ctx;
}

gboolean
gpushare_cuda_ring_note_upstream (GpuShareCudaRing * ring, const gchar * how)
{
  if (how == ring->upstream_wait)
    return FALSE;
  ring->upstream_wait = how;
  return TRUE;
}

CUdeviceptr
gpushare_cuda_ring_slot_ptr (GpuShareCudaRing * ring, guint slot)
{
  g_return_val_if_fail (slot < ring->n_slots, 0);
  return ring->ptrs[slot];
}

gboolean
gpushare_cuda_ring_prepare (GpuShareCudaRing * ring, guint slot,
    GError ** error)
{
  gboolean ok;

  if (!gpushare_cuda_ring_begin (ring, slot, error))
    return FALSE;
  if (!push (ring->ctx, error))
    return FALSE;
  ok = gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->settled[slot], ring->stream), "cuEventRecord", error);
  gpushare_cuda_pop ();
  return ok;
}

/* how long a writer waits for a slot's readers and its copy, at most */
#define SETTLE_TIMEOUT_US (10 * G_USEC_PER_SEC)

gboolean
gpushare_cuda_ring_settle (GpuShareCudaRing * ring, guint slot, GError ** error)
{
  gint64 start = g_get_monotonic_time (), spun = 0;
  gint64 deadline = start + SETTLE_TIMEOUT_US;
  CUresult r;

  if (slot >= ring->n_slots) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "no slot %u in a ring of %u", slot, ring->n_slots);
    return FALSE;
  }
  if (!push (ring->ctx, error))
    return FALSE;
  /* a consumer that never signals done is removed meanwhile (its words
   * forced) and the wait ends, or this gives up with an error */
  r = poll_done (ring->settled[slot], NULL, deadline, &spun);
  gpushare_cuda_pop ();
  __atomic_fetch_add (&ring->wait_us, (guint64) (g_get_monotonic_time () -
          start), __ATOMIC_RELAXED);
  __atomic_fetch_add (&ring->spin_us, (guint64) spun, __ATOMIC_RELAXED);
  if (r == CUDA_ERROR_NOT_READY) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "slot %u: a consumer's done signal or the copy did not come within "
        "%d s", slot, (gint) (SETTLE_TIMEOUT_US / G_USEC_PER_SEC));
    return FALSE;
  }
  return gpushare_cuda_check (r, "cuEventQuery", error);
}

/* context pushed: our stream goes on once upstream's work queued so far
 * is done */
static gboolean
wait_upstream (GpuShareCudaRing * ring, CUstream upstream, GError ** error)
{
  return gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->upstream_written, upstream), "cuEventRecord", error)
      && gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitEvent
      (ring->stream, ring->upstream_written, 0), "cuStreamWaitEvent", error);
}

/* context pushed, ring's lock held: upstream's buffers whose copies are
 * done go back, in the order of their copies (one stream: they complete
 * in that order) */
static void
let_go_of_held (GpuShareCudaRing * ring)
{
  Held *h;

  while ((h = g_queue_peek_head (&ring->held))
      && gpushare_cuda ()->cuEventQuery (ring->settled[h->slot])
      != CUDA_ERROR_NOT_READY) {
    g_queue_pop_head (&ring->held);
    gst_buffer_unref (h->buf);
    g_free (h);
  }
}

/* ring's lock held: keeps buf until slot's settled event, recorded after
 * buf's copy, completes.  FALSE (nothing kept) when MAX_HELD are kept
 * already: the writer then waits on the host, without the lock, as for a
 * copy with nothing to hold */
static gboolean
hold_until_done (GpuShareCudaRing * ring, guint slot, GstBuffer * buf)
{
  Held *h;

  if (g_queue_get_length (&ring->held) >= MAX_HELD)
    return FALSE;
  h = g_new0 (Held, 1);
  h->buf = gst_buffer_ref (buf);
  h->slot = slot;
  g_queue_push_tail (&ring->held, h);
  return TRUE;
}

gboolean
gpushare_cuda_ring_copy_in (GpuShareCudaRing * ring, guint slot,
    const GstVideoInfo * info, const GpuSharePlanes * src,
    const GpuSharePlanes * slot_layout, CUstream upstream, GstBuffer * hold,
    gboolean own_context, GError ** error)
{
  GpuSharePlanes dst = *slot_layout;
  gboolean ok = TRUE;

  dst.device = TRUE;
  dst.base = (guintptr) ring->ptrs[slot];
  if (!push (ring->ctx, error))
    return FALSE;
  let_go_of_held (ring);
  if (upstream)
    ok = wait_upstream (ring, upstream, error);
  ok = ok && copy_planes (ring->stream, own_context ? &ring->copy : NULL,
      info, src, &dst, error);
  /* a copy from device memory (or pinned host memory) has not read it
   * when the call returns: gpushare_cuda_ring_settle () waits for it, or
   * upstream's stream does, which is all upstream's next write needs */
  ok = ok && gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->settled[slot], ring->stream), "cuEventRecord", error);
  if (ok && upstream)
    ok = gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitEvent
        (upstream, ring->settled[slot], 0), "cuStreamWaitEvent", error);
  if (ok && upstream)
    ring->written[slot] = SLOT_WRITE_ORDERED;
  else if (ok && hold && hold_until_done (ring, slot, hold))
    /* until the copy is done upstream's buffer stays ours, and the host
     * need not wait for it */
    ring->written[slot] = SLOT_WRITE_HELD;
  else
    ring->written[slot] = SLOT_WRITE_PENDING;
  gpushare_cuda_pop ();
  return ok;
}

/* context pushed: rows rows of row_bytes from src (src_pitch apart) to
 * dst (dst_pitch apart), device to device, on stream */
static gboolean
copy_rows (CUstream stream, CUdeviceptr dst, gsize dst_pitch, CUdeviceptr src,
    gsize src_pitch, gsize row_bytes, guint rows, GError ** error)
{
  CUDA_MEMCPY2D m;

  if (rows == 1 || (src_pitch == row_bytes && dst_pitch == row_bytes))
    return gpushare_cuda_check (gpushare_cuda ()->cuMemcpyDtoDAsync (dst, src,
            row_bytes * rows, stream), "cuMemcpyDtoDAsync", error);
  memset (&m, 0, sizeof (m));
  m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  m.srcDevice = src;
  m.srcPitch = src_pitch;
  m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  m.dstDevice = dst;
  m.dstPitch = dst_pitch;
  m.WidthInBytes = row_bytes;
  m.Height = rows;
  return gpushare_cuda_check (gpushare_cuda ()->cuMemcpy2DAsync (&m, stream),
      "cuMemcpy2DAsync", error);
}

gboolean
gpushare_cuda_ring_copy_region (GpuShareCudaRing * ring, guint slot,
    gsize offset, CUdeviceptr src, gsize src_pitch, gsize row_bytes,
    guint rows, CUstream upstream, GError ** error)
{
  gboolean ok = TRUE;

  g_return_val_if_fail (slot < ring->n_slots, FALSE);
  if (offset > ring->slot_size
      || (guint64) row_bytes * rows > ring->slot_size - offset) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "a payload of %" G_GUINT64_FORMAT " bytes at %" G_GSIZE_FORMAT
        " does not fit a slot", (guint64) row_bytes * rows, offset);
    return FALSE;
  }
  if (!push (ring->ctx, error))
    return FALSE;
  if (upstream)
    ok = wait_upstream (ring, upstream, error);
  ok = ok && copy_rows (ring->stream, ring->ptrs[slot] + offset, row_bytes,
      src, src_pitch, row_bytes, rows, error)
      && gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->settled[slot], ring->stream), "cuEventRecord", error);
  if (ok && upstream)
    ok = gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitEvent
        (upstream, ring->settled[slot], 0), "cuStreamWaitEvent", error);
  /* how the host must wait now: for this copy too where nothing on the
   * device orders it with its source's writer */
  if (!ok || !upstream)
    ring->written[slot] = SLOT_WRITE_PENDING;
  else if (ring->written[slot] == SLOT_WRITE_COMPLETE)
    ring->written[slot] = SLOT_WRITE_ORDERED;
  gpushare_cuda_pop ();
  return ok;
}

gboolean
gpushare_cuda_ring_written (GpuShareCudaRing * ring, guint slot,
    CUstream upstream, GError ** error)
{
  gboolean ok;

  if (!upstream) {
    /* the host waited for upstream's write: nothing of it is left */
    ring->written[slot] = SLOT_WRITE_COMPLETE;
    return TRUE;
  }
  if (!push (ring->ctx, error))
    return FALSE;
  let_go_of_held (ring);
  ok = wait_upstream (ring, upstream, error)
      && gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
      (ring->settled[slot], ring->stream), "cuEventRecord", error);
  ring->written[slot] = ok ? SLOT_WRITE_ORDERED : SLOT_WRITE_PENDING;
  gpushare_cuda_pop ();
  return ok;
}

gboolean
gpushare_cuda_ring_needs_settle (GpuShareCudaRing * ring, guint slot,
    guint64 holders)
{
  guint i;

  if (!holders)
    return ring->written[slot] == SLOT_WRITE_PENDING;
  if (ring->written[slot] != SLOT_WRITE_ORDERED
      && ring->written[slot] != SLOT_WRITE_HELD)
    return FALSE;
  for (i = 0; i < MAX_HOLDERS; i++)
    if ((holders & (G_GUINT64_CONSTANT (1) << i))
        && ring->consumers[i].present
        && ring->consumers[i].mode == GPUSHARE_SYNC_HOST)
      return TRUE;
  return FALSE;
}

void
gpushare_cuda_ring_take_waits (GpuShareCudaRing * ring, guint64 * wait_us,
    guint64 * spin_us)
{
  *wait_us = __atomic_exchange_n (&ring->wait_us, 0, __ATOMIC_RELAXED);
  *spin_us = __atomic_exchange_n (&ring->spin_us, 0, __ATOMIC_RELAXED);
}

gboolean
gpushare_cuda_ring_publish (GpuShareCudaRing * ring, guint slot,
    guint64 holders, guint64 sequence, GError ** error)
{
  gboolean ok = TRUE, event = FALSE;
  guint64 device = 0;
  guint i;

  /* the holders that wait on the device: they hold the slot until its
   * done signal (host consumers synchronise before they release) */
  for (i = 0; i < MAX_HOLDERS; i++)
    if ((holders & (G_GUINT64_CONSTANT (1) << i))
        && ring->consumers[i].present
        && ring->consumers[i].mode != GPUSHARE_SYNC_HOST)
      device |= G_GUINT64_CONSTANT (1) << i;
  if (!device && g_queue_is_empty (&ring->held)) {
    /* host readers alone and none of upstream's buffers to give back: the
     * frame goes out with no call to the driver.  (A held buffer is let go
     * only on its event: a settle seen by the writer may be another
     * thread's, of a pool slot, older than the buffer's copy.) */
    ring->last_sequence[slot] = sequence;
    return TRUE;
  }
  if (!push (ring->ctx, error))
    return FALSE;
  /* host consumers read once the copy is in: the writer settled the slot
   * (gpushare_cuda_ring_settle ()) before it publishes, without a lock */
  for (i = 0; ok && i < MAX_HOLDERS; i++) {
    Consumer *c = &ring->consumers[i];

    if (!(holders & (G_GUINT64_CONSTANT (1) << i)) || !c->present)
      continue;
    /* the test build's producer that announces frames it never signals */
    if (c->mode != GPUSHARE_SYNC_HOST && gpushare_test_fails ("sink", "ready"))
      continue;
    if (c->mode == GPUSHARE_SYNC_SEMAPHORE) {
      ok = gpushare_cuda_sem_signal (ring->stream,
          gpushare_cuda_sem_ready (c->sem, slot), sequence, error);
      /* the same value where the consumer looks first, on the host */
      if (ok && c->words)
        ok = gpushare_cuda_words_signal (c->words, ring->stream, slot,
            sequence, error);
    } else if (c->mode == GPUSHARE_SYNC_EVENT) {
      event = TRUE;
    }
  }
  /* the consumer's wait was enqueued before it released the slot's last
   * frame, so re-recording here cannot move a wait that is pending */
  if (ok && event)
    ok = gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
        (gpushare_cuda_events_get (ring->ready, slot), ring->stream),
        "cuEventRecord", error);
  /* after the signals: what upstream gets back is not on the way */
  let_go_of_held (ring);
  gpushare_cuda_pop ();
  ring->last_holders[slot] |= device;
  ring->last_sequence[slot] = sequence;
  return ok;
}

/* ------------------------------------------------------------------------ */
/* Consumer */

struct _GpuShareCudaView
{
  /* what the transfer interface sees of it */
  GpuShareXferView parent;
  gint device;
  CUcontext ctx;
  gboolean owns_ctx;
  CUstream stream;
  CopyKernel copy;
  GpuShareSyncMode mode;
  guint n_slots;
  CUdeviceptr ptrs[GPUSHARE_MAX_SLOTS];
  GpuShareCudaImport *import;   /* VMM */
  HandleMem *hmem;              /* legacy, fabric */
  GpuShareCudaSem *sem;
  GpuShareCudaWords *words;     /* the block's ready words on the host */
  /* the sequence last counted in ready_on_host, a slot: a frame whose
   * read in place failed and that is copied then is counted once */
  guint64 counted[GPUSHARE_MAX_SLOTS];
  GpuShareCudaEvents *ready;
  GpuShareCudaEvents *done;
  /* how long a wait for the producer may take (VIEW_WAIT_US), and set
   * while a flush ends such waits (atomic) */
  gint64 wait_us;
  gint cancelled;
  /* a wait did not end: the stream still waits for the producer, nothing
   * more is queued on it, and what it may still touch is never freed */
  gboolean stuck;
};

/* How long a consumer waits for a frame its producer announced: the
 * frame's ready signal and the copy after it.  A producer that announced a
 * frame and never signals it (killed between its FRAME and its write on
 * the device, or one that means harm) costs its consumer this, then an
 * error, never a thread held for ever */
#define VIEW_WAIT_US (10 * G_USEC_PER_SEC)

/* How long a read in place looks for its frame's ready word on the host
 * before it waits on the device: a frame's copy takes some microseconds
 * (a 4K one about 8 on an H200), the round trip of a wait on the device
 * more (docs/design.md, "Ready words on the host") */
#define READY_SPIN_US 50

GpuShareCudaView *
gpushare_cuda_view_new (gint device, CUcontext ctx,
    const GpuShareSlots * slots, gint * fds, GError ** error)
{
  GpuShareCudaView *view;
  guint n = slots->n_slots, i;
  gboolean vmm = slots->mem_type == GPUSHARE_MEM_CUDA_VMM;
  guint n_slot_fds = vmm ? n : 0;
  guint h = vmm ? 0 : n;        /* first event handle */
  gint sync_fd = slots->n_sync_fds ? fds[n_slot_fds] : -1;
  gint words_fd = slots->n_sync_fds > 1 ? fds[n_slot_fds + 1] : -1;

  ensure_debug ();
  view = g_new0 (GpuShareCudaView, 1);
  view->device = device;
  view->mode = slots->sync_mode;
  view->n_slots = n;
  view->wait_us = VIEW_WAIT_US;
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    view->counted[i] = G_MAXUINT64;
  if (!context_init (device, ctx, &view->ctx, &view->owns_ctx, error)) {
    gpushare_close_fds (fds, n_slot_fds + slots->n_sync_fds);
    g_free (view);
    return NULL;
  }
  if (vmm) {
    /* takes the slot fds */
    view->import =
        gpushare_cuda_import_new (device, slots->epoch, n, slots->slot_size,
        fds, error);
    if (view->import)
      for (i = 0; i < n; i++)
        view->ptrs[i] = (CUdeviceptr) (guintptr) view->import->data[i];
  } else {
    view->hmem = handle_mem_import (slots->mem_type, device, view->ctx, n,
        slots->slot_size, (const guint8 (*)[GPUSHARE_HANDLE_SIZE])
        slots->handles, error);
    if (view->hmem)
      memcpy (view->ptrs, view->hmem->ptrs, sizeof (view->ptrs));
  }
  if (!view->import && !view->hmem) {
    if (sync_fd >= 0)
      close (sync_fd);
    if (words_fd >= 0)
      close (words_fd);
    goto failed;
  }
  switch (view->mode) {
    case GPUSHARE_SYNC_SEMAPHORE:
      /* takes the words' fd: a page that is not what it must be is a
       * producer's fault, and the ring is not read at all */
      if (words_fd >= 0
          && !(view->words = gpushare_cuda_words_open (words_fd, n, error))) {
        close (sync_fd);
        goto failed;
      }
      /* takes the block's fd */
      view->sem = gpushare_cuda_sem_import (device, sync_fd, n, error);
      if (!view->sem)
        goto failed;
      if (slots->sync_size != gpushare_cuda_sem_size (view->sem)) {
        g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
            "the semaphore block has an unexpected size");
        goto failed;
      }
      break;
    case GPUSHARE_SYNC_EVENT:
      view->ready = gpushare_cuda_events_import (device, slots->handles[h], n,
          error);
      if (!view->ready)
        goto failed;
      view->done = gpushare_cuda_events_import (device,
          slots->handles[h + n], n, error);
      if (!view->done)
        goto failed;
      break;
    default:
      break;
  }
  if (!push (view->ctx, error))
    goto failed;
  if (!gpushare_cuda_check (gpushare_cuda ()->cuStreamCreate (&view->stream,
              CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)) {
    gpushare_cuda_pop ();
    goto failed;
  }
  copy_kernel_load (&view->copy);
  gpushare_cuda_pop ();
  view->parent.device = device;
  for (i = 0; i < n; i++)
    view->parent.device_ptr[i] = view->ptrs[i];
  GST_DEBUG ("mapped %u CUDA slots, epoch %" G_GUINT64_FORMAT ", %s "
      "synchronisation", n, slots->epoch,
      gpushare_sync_mode_to_string (view->mode));
  return view;

failed:
  gpushare_cuda_view_free (view);
  return NULL;
}

/* how long a view that is freed waits for its stream to drain */
#define VIEW_DRAIN_US (G_USEC_PER_SEC)

void
gpushare_cuda_view_free (GpuShareCudaView * view)
{
  gboolean drained = TRUE;

  if (!view)
    return;
  /* a stream that waits for a producer that is gone must not wait forever:
   * force the words, then let the stream drain, for a time */
  if (view->sem)
    gpushare_cuda_sem_force (view->sem, NULL);
  if (view->stream && push (view->ctx, NULL)) {
    drained = poll_done (NULL, view->stream, g_get_monotonic_time () +
        VIEW_DRAIN_US, NULL) != CUDA_ERROR_NOT_READY;
    /* with work still queued, the driver lets the stream go once it is
     * done */
    gpushare_cuda ()->cuStreamDestroy (view->stream);
    if (drained)
      copy_kernel_unload (&view->copy);
    gpushare_cuda_pop ();
  }
  if (!drained) {
    /* still waiting for the producer's signal (an IPC event cannot be
     * forced): the memory its wait and the writes after it name stays
     * mapped until the process exits, rather than faulting the context
     * of every element of this process */
    GST_WARNING ("the consumer's stream still waits for its producer: %u "
        "slots and their signals are left mapped", view->n_slots);
    gpushare_cuda_words_free (view->words);
    g_free (view);
    return;
  }
  if (view->sem)
    gpushare_cuda_sem_free (view->sem);
  gpushare_cuda_words_free (view->words);
  if (view->ready)
    gpushare_cuda_events_free (view->ready);
  if (view->done)
    gpushare_cuda_events_free (view->done);
  if (view->import)
    gpushare_cuda_import_unref (view->import);
  handle_mem_free (view->hmem, view->ctx);
  context_clear (view->device, view->owns_ctx);
  g_free (view);
}

void
gpushare_cuda_view_set_wait (GpuShareCudaView * view, gint64 wait_us)
{
  g_return_if_fail (view != NULL && wait_us > 0);
  view->wait_us = wait_us;
}

void
gpushare_cuda_view_cancel (GpuShareCudaView * view, gboolean cancel)
{
  g_return_if_fail (view != NULL);
  g_atomic_int_set (&view->cancelled, cancel);
}

/* nothing is queued behind a wait that did not end */
static gboolean
view_usable (GpuShareCudaView * view, GError ** error)
{
  if (!view->stuck)
    return TRUE;
  g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_TIMEOUT,
      "an earlier frame's ready signal never came from the producer: no "
      "more frames are read from these slots");
  return FALSE;
}

/* Context pushed: nothing is left on the stream before a copy into the
 * caller's memory is queued (a skipped frame's wait, or one a flush let
 * go, may be) */
static gboolean view_sync (GpuShareCudaView * view, guint slot,
    gboolean wait, GError ** error);

static gboolean
view_idle (GpuShareCudaView * view, guint slot, GError ** error)
{
  CUresult r = gpushare_cuda ()->cuStreamQuery (view->stream);

  if (r == CUDA_ERROR_NOT_READY)
    return view_sync (view, slot, TRUE, error);
  return gpushare_cuda_check (r, "cuStreamQuery", error);
}

/* Context pushed: waits on the host for what the view's stream has queued,
 * at most view->wait_us; a wait for the producer's signal (wait TRUE)
 * also ends when the view is cancelled.  Never cuStreamSynchronize (): a
 * producer that announced slot and never signals it would hold the
 * streaming thread for ever, beyond any flush or state change. */
static gboolean
view_sync (GpuShareCudaView * view, guint slot, gboolean wait, GError ** error)
{
  gint64 deadline = g_get_monotonic_time () + view->wait_us;
  CUresult r;

  r = poll_done_or_cancel (NULL, view->stream, deadline,
      VIEW_SPIN_US, wait ? &view->cancelled : NULL, NULL);
  if (r != CUDA_ERROR_NOT_READY)
    return gpushare_cuda_check (r, "cuStreamQuery", error);
  if (wait && g_atomic_int_get (&view->cancelled)) {
    /* a frame's wait that was let go: the stream goes on waiting, and
     * whatever is queued next comes after it */
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CANCELLED,
        "the wait for slot %u was ended (flushing)", slot);
    return FALSE;
  }
  view->stuck = TRUE;
  g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_TIMEOUT,
      "slot %u: the producer's ready signal (or the device's copy) did not "
      "come within %" G_GINT64_FORMAT " ms", slot, view->wait_us / 1000);
  return FALSE;
}

/* the frame's ready word seen on the host.  A frame that is read is
 * looked for READY_SPIN_US at most and counted for the stats, once; one
 * that is skipped is looked at once, with no spin and no count: nothing
 * waits for it */
static gboolean
ready_on_host (GpuShareCudaView * view, guint slot, guint64 sequence,
    gboolean read)
{
  gint64 spun = 0;
  gboolean seen;

  if (!view->words)
    return FALSE;
  seen = gpushare_cuda_words_wait (view->words, slot, sequence,
      read ? g_get_monotonic_time () + READY_SPIN_US : 0, &spun);
  if (spun)
    __atomic_add_fetch (&view->parent.ready_spin_us, (guint64) spun,
        __ATOMIC_RELAXED);
  if (seen && read && view->counted[slot] != sequence) {
    view->counted[slot] = sequence;
    __atomic_add_fetch (&view->parent.ready_on_host, 1, __ATOMIC_RELAXED);
  }
  return seen;
}

static gboolean
view_wait_device (GpuShareCudaView * view, guint slot, guint64 sequence,
    GError ** error)
{
  if (view->mode == GPUSHARE_SYNC_SEMAPHORE)
    return gpushare_cuda_sem_wait (view->stream,
        gpushare_cuda_sem_ready (view->sem, slot), sequence, error);
  if (view->mode == GPUSHARE_SYNC_EVENT)
    return gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitEvent
        (view->stream, gpushare_cuda_events_get (view->ready, slot), 0),
        "cuStreamWaitEvent", error);
  return TRUE;
}

/* the stream waits for the frame, unless its word was seen on the host */
static gboolean
view_wait_ready (GpuShareCudaView * view, guint slot, guint64 sequence,
    gboolean read, GError ** error)
{
  return ready_on_host (view, slot, sequence, read)
      || view_wait_device (view, slot, sequence, error);
}

static gboolean
view_signal_done (GpuShareCudaView * view, guint slot, guint64 sequence,
    GError ** error)
{
  /* the test build's consumer whose GPU work never signals done */
  if (gpushare_test_fails ("src", "done"))
    return TRUE;
  if (view->mode == GPUSHARE_SYNC_SEMAPHORE)
    return gpushare_cuda_sem_signal (view->stream,
        gpushare_cuda_sem_done (view->sem, slot), sequence, error);
  if (view->mode == GPUSHARE_SYNC_EVENT)
    return gpushare_cuda_check (gpushare_cuda ()->cuEventRecord
        (gpushare_cuda_events_get (view->done, slot), view->stream),
        "cuEventRecord", error);
  return TRUE;
}

gboolean
gpushare_cuda_view_read (GpuShareCudaView * view, guint slot,
    guint64 sequence, const GstVideoInfo * info,
    const GpuSharePlanes * slot_layout, const GpuSharePlanes * dst,
    gboolean own_context, GError ** error)
{
  GpuSharePlanes src = *slot_layout;
  gboolean ok;

  g_return_val_if_fail (slot < view->n_slots, FALSE);
  src.device = TRUE;
  src.base = (guintptr) view->ptrs[slot];
  if (!view_usable (view, error) || !push (view->ctx, error))
    return FALSE;
  /* the frame is there before its copy into dst is queued: a copy left
   * behind a wait that never ends would write dst once it is someone
   * else's */
  ok = ready_on_host (view, slot, sequence, TRUE) ?
      view_idle (view, slot, error) :
      (view_wait_device (view, slot, sequence, error)
      && view_sync (view, slot, TRUE, error));
  ok = ok && copy_planes (view->stream, own_context ? &view->copy : NULL, info,
      &src, dst, error)
      && view_signal_done (view, slot, sequence, error)
      && view_sync (view, slot, FALSE, error);
  gpushare_cuda_pop ();
  return ok;
}

gboolean
gpushare_cuda_view_skip (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error)
{
  gboolean ok;

  if (view->mode == GPUSHARE_SYNC_HOST)
    return TRUE;
  if (!view_usable (view, error) || !push (view->ctx, error))
    return FALSE;
  ok = view_wait_ready (view, slot, sequence, FALSE, error)
      && view_signal_done (view, slot, sequence, error);
  gpushare_cuda_pop ();
  return ok;
}

CUcontext
gpushare_cuda_view_context (GpuShareCudaView * view)
{
  return view->ctx;
}

gboolean
gpushare_cuda_view_copy_region (GpuShareCudaView * view, guint slot,
    gsize offset, CUdeviceptr dst, gsize dst_pitch, gsize row_bytes,
    guint rows, GError ** error)
{
  gboolean ok;

  g_return_val_if_fail (slot < view->n_slots, FALSE);
  if (!view_usable (view, error) || !push (view->ctx, error))
    return FALSE;
  ok = view_idle (view, slot, error)
      && copy_rows (view->stream, dst, dst_pitch, view->ptrs[slot] + offset,
      row_bytes, row_bytes, rows, error)
      && view_sync (view, slot, FALSE, error);
  gpushare_cuda_pop ();
  return ok;
}

CUdeviceptr
gpushare_cuda_view_slot_ptr (GpuShareCudaView * view, guint slot)
{
  g_return_val_if_fail (slot < view->n_slots, 0);
  return view->ptrs[slot];
}

gboolean
gpushare_cuda_view_wait_ready (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error)
{
  gboolean ok;

  if (view->mode == GPUSHARE_SYNC_HOST)
    return TRUE;
  /* no call to the driver, no round trip through the GPU when the frame
   * is in already */
  if (ready_on_host (view, slot, sequence, TRUE))
    return TRUE;
  if (!view_usable (view, error) || !push (view->ctx, error))
    return FALSE;
  ok = view_wait_device (view, slot, sequence, error)
      && view_sync (view, slot, TRUE, error);
  gpushare_cuda_pop ();
  return ok;
}

gboolean
gpushare_cuda_view_done (GpuShareCudaView * view, guint slot,
    guint64 sequence, GError ** error)
{
  gboolean ok;

  /* host mode: the RELEASE that follows says it */
  if (view->mode == GPUSHARE_SYNC_HOST)
    return TRUE;
  if (!push (view->ctx, error))
    return FALSE;
  ok = view_signal_done (view, slot, sequence, error);
  gpushare_cuda_pop ();
  return ok;
}

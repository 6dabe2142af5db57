/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer interface (gpusharexfer.h): the registry of transfers, and
 * the dispatch to them.
 */

#include "gpusharexfer.h"

#include <gst/allocators/allocators.h>

#include "gpusharemetapriv.h"
#include "gpusharetest.h"

#include <string.h>

#include "gpusharefd.h"

G_DEFINE_QUARK (gpushare - xfer - error - quark, gpushare_xfer_error);

/* the registered transfers in order of preference, the system transfer
 * last; written under the lock, read without it: an entry is set before
 * the count that shows it */
#define MAX_XFERS 8
static GMutex registry_lock;
static const GpuShareXfer *registry[MAX_XFERS + 1];
static const GpuShareMemPolicy *policies[MAX_XFERS + 2];
static gint n_registered;

/* One error domain per layer: what a backend or the CUDA layer reports
 * reaches the cores as GPUSHARE_XFER_ERROR, with its message. */
static gboolean
own_error (GError ** error, GpuShareXferError code)
{
  if (error && *error && (*error)->domain != GPUSHARE_XFER_ERROR) {
    GError *lower = *error;

    *error = g_error_new_literal (GPUSHARE_XFER_ERROR, code, lower->message);
    g_error_free (lower);
  }
  return FALSE;
}

gsize
gpushare_round_up (gsize size, gsize align)
{
  if (size == 0)
    size = 1;
  return (size + align - 1) / align * align;
}

/* lock held: does xfer clash with a registered one (a type or a transport
 * value served twice)? */
static gboolean
clashes (const GpuShareXfer * xfer)
{
  guint32 types = gpushare_negotiate_mem_types (policies);
  guint i, j, k;

  for (i = 0; i < xfer->policy->n_kinds; i++) {
    const GpuShareMemKind *kind = &xfer->policy->kinds[i];

    /* the codec counts a SLOTS body's fds: it must agree */
    if ((kind->type & types) || kind->transport == GPUSHARE_TRANSPORT_AUTO
        || !(kind->flags & GPUSHARE_KIND_HANDLES) !=
        !(kind->type & GPUSHARE_MEM_HANDLE_MASK))
      return TRUE;
    for (j = 0; policies[j]; j++)
      for (k = 0; k < policies[j]->n_kinds; k++)
        if (policies[j]->kinds[k].transport == kind->transport)
          return TRUE;
  }
  return FALSE;
}

void
gpushare_xfer_register (const GpuShareXfer * xfer)
{
  gint i, n;

  g_return_if_fail (xfer != NULL && xfer->policy != NULL);
  g_return_if_fail (xfer->producer != NULL && xfer->consumer != NULL);

  g_mutex_lock (&registry_lock);
  n = g_atomic_int_get (&n_registered);
  for (i = 0; i < n; i++)
    if (registry[i] == xfer)
      goto done;
  if (n == MAX_XFERS || clashes (xfer)) {
    g_critical ("transfer %s not registered: %s", xfer->policy->name,
        n == MAX_XFERS ? "too many transfers" :
        "one of its memory types or transport values is taken, or its "
        "handles are not the codec's");
    goto done;
  }
  registry[n] = xfer;
  policies[n] = xfer->policy;
  /* the system transfer stays last */
  policies[n + 1] = gpushare_xfer_system.policy;
  g_atomic_int_set (&n_registered, n + 1);
done:
  g_mutex_unlock (&registry_lock);
}

const GpuShareMemPolicy *const *
gpushare_xfer_policies (void)
{
  /* with none registered, policies[0] is still NULL: the system's */
  if (!g_atomic_int_get (&n_registered)) {
    static const GpuShareMemPolicy *system_only[2];

    system_only[0] = gpushare_xfer_system.policy;
    return system_only;
  }
  return policies;
}

const GpuShareXfer *
gpushare_xfer_for (GpuShareMemType type)
{
  gint i, n = g_atomic_int_get (&n_registered);

  if (type == GPUSHARE_MEM_SYSTEM)
    return &gpushare_xfer_system;
  for (i = 0; type && i < n; i++) {
    const GpuShareMemPolicy *p = registry[i]->policy;
    guint k;

    for (k = 0; k < p->n_kinds; k++)
      if (p->kinds[k].type == type)
        return registry[i];
  }
  return NULL;
}

const GpuShareMemKind *
gpushare_xfer_kind (GpuShareMemType type)
{
  const GpuShareXfer *xfer = gpushare_xfer_for (type);
  guint k;

  for (k = 0; xfer && k < xfer->policy->n_kinds; k++)
    if (xfer->policy->kinds[k].type == type)
      return &xfer->policy->kinds[k];
  return NULL;
}

gboolean
gpushare_xfer_kind_has (GpuShareMemType type, guint flags)
{
  const GpuShareMemKind *kind = gpushare_xfer_kind (type);

  return kind && (kind->flags & flags) == flags;
}

const GpuShareXfer *
gpushare_xfer_gpu (void)
{
  gint i, n = g_atomic_int_get (&n_registered);

  for (i = 0; i < n; i++)
    if (registry[i]->probe)
      return registry[i];
  return NULL;
}

GstCaps *
gpushare_xfer_template_caps (void)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();
  GstCaps *caps = gst_caps_from_string (GST_VIDEO_CAPS_MAKE
      (GST_VIDEO_FORMATS_ALL));

  if (gpu && gpu->gst && gpu->gst->library_ok && gpu->gst->library_ok ()) {
    GstCaps *device = gst_caps_from_string (GST_VIDEO_CAPS_MAKE
        (GST_VIDEO_FORMATS_ALL));

    gst_caps_set_features_simple (device,
        gst_caps_features_new (gpu->gst->caps_feature, NULL));
    caps = gst_caps_merge (device, caps);
  }
  return caps;
}

const gchar *
gpushare_xfer_gpu_caps_feature (void)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return gpu && gpu->gst ? gpu->gst->caps_feature : NULL;
}

guint
gpushare_slots_n_fds (const GpuShareSlots * s)
{
  return gpushare_slots_fd_count (s);
}

/* ------------------------------------------------------------------------ */
/* The device and GStreamer's GPU library, through the GPU transfer */

gboolean
gpushare_xfer_gpu_probe (gint device, GpuShareGpuInfo * info, GError ** error)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  memset (info, 0, sizeof (*info));
  if (!gpu || !gpu->probe) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "built without CUDA");
    return FALSE;
  }
  return gpu->probe (device, info, error);
}

void
gpushare_xfer_gpu_peer (gint reader, const guint8 uuid[16],
    GpuSharePeerInfo * peer)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  memset (peer, 0, sizeof (*peer));
  peer->owner = -1;
  if (gpu && gpu->peer)
    gpu->peer (reader, uuid, peer);
}

void
gpushare_peer_info_clear (GpuSharePeerInfo * peer)
{
  g_clear_pointer (&peer->error, g_free);
}

void
gpushare_xfer_gpu_describe (const GpuShareGpuInfo * info, gboolean usable,
    const gchar * why_not, GpuShareGpu * gpu)
{
  memset (gpu, 0, sizeof (*gpu));
  gpu->usable = usable;
  gpu->why_not = why_not;
  memcpy (gpu->uuid, info->uuid, 16);
  gpu->posix_fd = info->posix_fd;
  gpu->unified_addressing = info->unified_addressing;
  gpu->fabric = info->fabric;
  gpu->mps = info->mps;
  gpu->sync_modes = info->sync_modes;
  gpu->device = info->device;
}

gboolean
gpushare_xfer_gpu_context_ensure (GstElement * element, gint device,
    GstObject ** ctx)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return gpu && gpu->gst && gpu->gst->context_ensure
      && gpu->gst->context_ensure (element, device, ctx);
}

gboolean
gpushare_xfer_gpu_context_set (GstElement * element, GstContext * context,
    gint device, GstObject ** ctx)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return gpu && gpu->gst && gpu->gst->context_set
      && gpu->gst->context_set (element, context, device, ctx);
}

gboolean
gpushare_xfer_gpu_context_query (GstElement * element, GstQuery * query,
    gint device, GstObject ** ctx)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return gpu && gpu->gst && gpu->gst->context_query
      && gpu->gst->context_query (element, query, device, ctx);
}

gboolean
gpushare_xfer_gpu_is_memory (GstMemory * mem)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return mem && gpu && gpu->gst && gpu->gst->is_memory
      && gpu->gst->is_memory (mem);
}

GstBufferPool *
gpushare_xfer_gpu_pool_new (GstObject * ctx)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  return ctx && gpu && gpu->gst
      && gpu->gst->pool_new ? gpu->gst->pool_new (ctx) : NULL;
}

GstBufferPool *
gpushare_xfer_gpu_slot_pool_new (GstObject * ctx,
    const GpuShareSlotPoolFuncs * funcs)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();

  g_return_val_if_fail (funcs != NULL && funcs->acquire != NULL, NULL);
  return ctx && gpu && gpu->gst
      && gpu->gst->slot_pool_new ? gpu->gst->slot_pool_new (ctx, funcs)
      : NULL;
}

/* ------------------------------------------------------------------------ */
/* Producer */

GpuShareXferRing *
gpushare_xfer_ring_new (GpuShareMemType type, gint device, guint64 epoch,
    guint n_slots, gsize frame_size, GError ** error)
{
  const GpuShareXfer *xfer = gpushare_xfer_for (type);
  GpuShareXferRing *ring;

  g_return_val_if_fail (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS, NULL);
  if (!xfer) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "no transfer for %s memory in this build",
        gpushare_mem_type_to_string (type));
    return NULL;
  }
  ring =
      xfer->producer->ring_new (device, type, epoch, n_slots, frame_size,
      error);
  if (!ring) {
    own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
    return NULL;
  }
  ring->xfer = xfer;
  ring->ref_count = 1;
  g_mutex_init (&ring->lock);
  ring->mem_type = type;
  ring->device = device;
  ring->epoch = epoch;
  ring->n_slots = n_slots;
  return ring;
}

GpuShareXferRing *
gpushare_xfer_ring_ref (GpuShareXferRing * ring)
{
  g_atomic_int_inc (&ring->ref_count);
  return ring;
}

void
gpushare_xfer_ring_unref (GpuShareXferRing * ring)
{
  if (!g_atomic_int_dec_and_test (&ring->ref_count))
    return;
  g_mutex_clear (&ring->lock);
  ring->xfer->producer->ring_free (ring);
}

void
gpushare_xfer_view_take_ready (GpuShareXferView * view, guint64 * on_host,
    guint64 * spin_us)
{
  *on_host += __atomic_exchange_n (&view->ready_on_host, 0, __ATOMIC_RELAXED);
  *spin_us += __atomic_exchange_n (&view->ready_spin_us, 0, __ATOMIC_RELAXED);
}

gboolean
gpushare_xfer_ring_add_consumer (GpuShareXferRing * ring, guint index,
    GpuShareSyncMode mode, guint minor, GError ** error)
{
  gboolean ok = TRUE;

  if (!ring->xfer->producer->add_consumer)
    return TRUE;
  g_mutex_lock (&ring->lock);
  ok = ring->xfer->producer->add_consumer (ring, index, mode, minor, error);
  g_mutex_unlock (&ring->lock);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
}

void
gpushare_xfer_ring_remove_consumer (GpuShareXferRing * ring, guint index)
{
  if (!ring->xfer->producer->remove_consumer)
    return;
  g_mutex_lock (&ring->lock);
  ring->xfer->producer->remove_consumer (ring, index);
  g_mutex_unlock (&ring->lock);
}

guint64
gpushare_xfer_ring_overdue (GpuShareXferRing * ring, gint64 now,
    gint64 limit_us, guint64 * sequences)
{
  guint64 overdue;

  if (!ring->xfer->producer->overdue)
    return 0;
  g_mutex_lock (&ring->lock);
  overdue = ring->xfer->producer->overdue (ring, now, limit_us, sequences);
  g_mutex_unlock (&ring->lock);
  return overdue;
}

gboolean
gpushare_xfer_ring_export (GpuShareXferRing * ring, guint index,
    GpuShareSlots * slots, gint * fds, guint * n_fds, GError ** error)
{
  gboolean ok;

  *n_fds = 0;
  g_mutex_lock (&ring->lock);
  ok = ring->xfer->producer->export_slots (ring, index, slots, fds, n_fds,
      error);
  g_mutex_unlock (&ring->lock);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
}

/* ring's lock held, after a write into slot: the host must wait for it
 * (settle) before the writer's buffer goes back upstream */
static gboolean
written_needs_settle (GpuShareXferRing * ring, guint slot)
{
  const GpuShareXferProducer *p = ring->xfer->producer;

  return p->settle && (!p->needs_settle || p->needs_settle (ring, slot, 0));
}

gboolean
gpushare_xfer_ring_write (GpuShareXferRing * ring, guint slot,
    const GstVideoInfo * info, GstBuffer * buf, GpuShareXferRing * staged,
    GError ** error)
{
  gboolean ok, settle;

  g_return_val_if_fail (slot < ring->n_slots, FALSE);
  g_mutex_lock (&ring->lock);
  ok = ring->xfer->producer->write (ring, slot, info, buf, staged, error);
  settle = ok && written_needs_settle (ring, slot);
  g_mutex_unlock (&ring->lock);
  /* without the lock: a consumer that never says done is released by
   * removing it, which takes the lock */
  if (settle)
    ok = ring->xfer->producer->settle (ring, slot, error);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_COPY);
}

gboolean
gpushare_xfer_ring_write_region (GpuShareXferRing * ring, guint slot,
    gsize offset, GstBuffer * src, gsize src_offset, gsize src_stride,
    gsize row_bytes, guint rows, GError ** error)
{
  const GpuShareXferProducer *p = ring->xfer->producer;
  gboolean ok, settle;

  g_return_val_if_fail (slot < ring->n_slots, FALSE);
  if (!p->write_region || offset > ring->slot_size
      || (guint64) row_bytes * rows > ring->slot_size - offset) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s slots take no payload of %" G_GUINT64_FORMAT " bytes at %"
        G_GSIZE_FORMAT, gpushare_mem_type_to_string (ring->mem_type),
        (guint64) row_bytes * rows, offset);
    return FALSE;
  }
  g_mutex_lock (&ring->lock);
  ok = p->write_region (ring, slot, offset, src, src_offset, src_stride,
      row_bytes, rows, error);
  /* src may go once this returns: a copy not ordered with its writer's
   * stream is waited for here */
  settle = ok && written_needs_settle (ring, slot);
  g_mutex_unlock (&ring->lock);
  if (settle)
    ok = p->settle (ring, slot, error);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_COPY);
}

gboolean
gpushare_xfer_ring_holds (GpuShareXferRing * ring, guint slot, GstMemory * mem)
{
  GstMapInfo map;
  gboolean same;

  g_return_val_if_fail (slot < ring->n_slots, FALSE);
  if (ring->xfer->producer->holds)
    return ring->xfer->producer->holds (ring, slot, mem);
  if (!ring->data[slot] || !gst_memory_map (mem, &map, GST_MAP_READ))
    return FALSE;
  same = map.data == ring->data[slot];
  gst_memory_unmap (mem, &map);
  return same;
}

void
gpushare_xfer_ring_take_waits (GpuShareXferRing * ring, guint64 * wait_us,
    guint64 * spin_us)
{
  guint64 w = 0, s = 0;

  if (ring->xfer->producer->take_waits)
    ring->xfer->producer->take_waits (ring, &w, &s);
  *wait_us += w;
  *spin_us += s;
}

gboolean
gpushare_xfer_ring_prepare (GpuShareXferRing * ring, guint slot,
    GError ** error)
{
  gboolean ok = TRUE;

  g_return_val_if_fail (slot < ring->n_slots, FALSE);
  if (!ring->xfer->producer->prepare)
    return TRUE;
  g_mutex_lock (&ring->lock);
  ok = ring->xfer->producer->prepare (ring, slot, error);
  g_mutex_unlock (&ring->lock);
  if (ok && ring->xfer->producer->settle)
    ok = ring->xfer->producer->settle (ring, slot, error);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
}

gboolean
gpushare_xfer_ring_publish (GpuShareXferRing * ring, guint slot,
    guint64 holders, guint64 sequence, GError ** error)
{
  gboolean ok = TRUE, settle;

  if (!ring->xfer->producer->publish)
    return TRUE;
  g_mutex_lock (&ring->lock);
  settle = ring->xfer->producer->needs_settle
      && ring->xfer->producer->needs_settle (ring, slot, holders);
  g_mutex_unlock (&ring->lock);
  /* the write left its copy to the device, and a holder reads once told:
   * the host waits for it, without the lock, as after a write */
  if (settle)
    ok = ring->xfer->producer->settle (ring, slot, error);
  g_mutex_lock (&ring->lock);
  ok = ok
      && ring->xfer->producer->publish (ring, slot, holders, sequence, error);
  g_mutex_unlock (&ring->lock);
  return ok || own_error (error, GPUSHARE_XFER_ERROR_COPY);
}

/* ------------------------------------------------------------------------ */
/* Consumer */

GpuShareXferView *
gpushare_xfer_view_new (gint device, const GpuShareSlots * slots, gint * fds,
    GError ** error)
{
  const GpuShareXfer *xfer = gpushare_xfer_for (slots->mem_type);
  GpuShareXferView *view;

  if (!xfer) {
    gpushare_close_fds (fds, gpushare_slots_n_fds (slots));
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s slots sent to a consumer that cannot map them",
        gpushare_mem_type_to_string (slots->mem_type));
    return NULL;
  }
  view = xfer->consumer->view_new (device, slots, fds, error);
  if (!view) {
    own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
    return NULL;
  }
  view->xfer = xfer;
  view->ref_count = 1;
  view->mem_type = slots->mem_type;
  view->epoch = slots->epoch;
  view->n_slots = slots->n_slots;
  view->slot_size = slots->slot_size;
  return view;
}

GpuShareXferView *
gpushare_xfer_view_ref (GpuShareXferView * view)
{
  g_atomic_int_inc (&view->ref_count);
  return view;
}

void
gpushare_xfer_view_unref (GpuShareXferView * view)
{
  if (g_atomic_int_dec_and_test (&view->ref_count))
    view->xfer->consumer->view_free (view);
}

typedef struct
{
  GpuShareXferView *view;
  gpointer user_data;
  GDestroyNotify notify;
} WrapData;

static void
wrap_data_free (gpointer data)
{
  WrapData *w = data;

  if (w->notify)
    w->notify (w->user_data);
  gpushare_xfer_view_unref (w->view);
  g_free (w);
}

/* what a memory wrapping a slot holds: the view, and who to tell */
static WrapData *
wrap_data_new (GpuShareXferView * view, gpointer user_data,
    GDestroyNotify notify)
{
  WrapData *w = g_new0 (WrapData, 1);

  w->view = gpushare_xfer_view_ref (view);
  w->user_data = user_data;
  w->notify = notify;
  return w;
}

GstMemory *
gpushare_xfer_view_wrap (GpuShareXferView * view, guint slot, gsize size,
    gpointer user_data, GDestroyNotify notify)
{
  WrapData *w;

  g_return_val_if_fail (slot < view->n_slots && size <= view->slot_size, NULL);
  if (!view->data[slot])
    return NULL;
  w = wrap_data_new (view, user_data, notify);
  /* read-only: a writer downstream gets a copy, never the slot */
  return gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY,
      (gpointer) view->data[slot], view->slot_size, 0, size, w, wrap_data_free);
}

static G_DEFINE_QUARK (gpushare - wrap - data, wrap_data);

GstMemory *
gpushare_xfer_view_wrap_fd (GpuShareXferView * view, guint slot, gsize size,
    GstAllocator * fd_allocator, gpointer user_data, GDestroyNotify notify)
{
  GstMemory *mem;

  g_return_val_if_fail (slot < view->n_slots && size <= view->slot_size, NULL);
  if (slot >= view->n_fds || view->fds[slot] < 0)
    return NULL;
  g_atomic_int_inc (&view->fd_memories);
  /* the fd stays the view's: the memory holds the view */
  mem = gst_fd_allocator_alloc (fd_allocator, view->fds[slot],
      view->slot_size, GST_FD_MEMORY_FLAG_DONT_CLOSE);
  if (!mem)
    return NULL;
  gst_memory_resize (mem, 0, size);
  /* read-only: a writer downstream gets a copy, never the slot (and the
   * fd is, so no writable mapping could be made of it anyway) */
  GST_MINI_OBJECT_FLAG_SET (mem, GST_MEMORY_FLAG_READONLY);
  /* run as the memory goes, before its mapping does: the last reader
   * is done by then */
  gst_mini_object_set_qdata (GST_MINI_OBJECT (mem), wrap_data_quark (),
      wrap_data_new (view, user_data, notify), wrap_data_free);
  return mem;
}

void
gpushare_xfer_view_drop_fds (GpuShareXferView * view)
{
  if (view->n_fds == 0 || g_atomic_int_get (&view->fd_memories) > 0)
    return;
  gpushare_close_fds (view->fds, view->n_fds);
  view->n_fds = 0;
}

gboolean
gpushare_xfer_gpu_can_import (const gchar ** why_not)
{
  const GpuShareXfer *gpu = gpushare_xfer_gpu ();
  const gchar *why = "this build has no GPU transfer";
  gboolean ok = FALSE;

  if (gpu && gpu->gst && gpu->gst->can_import)
    ok = gpu->gst->can_import (NULL, 0, &why);
  if (!ok && why_not)
    *why_not = why;
  return ok;
}

/* A slot read in place, by buffers downstream or by the application:
 * ready was waited for when it was made; when the memory that stands for
 * it is freed, the work queued in ctx (if any) is waited for, done
 * signalled, the view's reference dropped and notify called.  Or (read
 * FALSE) a payload past a frame that is read already, whose read holds
 * the slot: no ready, no done */
typedef struct
{
  GpuShareXferView *view;
  guint slot;
  guint64 sequence;
  gboolean read;
  GstObject *ctx;               /* a reference, or NULL */
  gpointer user_data;
  GDestroyNotify notify;
} SlotImport;

static void
slot_import_free (gpointer data)
{
  SlotImport *imp = data;
  GpuShareXferView *view = imp->view;
  GError *error = NULL;

  /* a reader downstream may have queued reads of the slot and dropped the
   * buffer before they ran */
  if (imp->ctx && view->xfer->gst && view->xfer->gst->quiesce)
    view->xfer->gst->quiesce (imp->ctx);
  if (imp->read && view->xfer->consumer->done
      && !view->xfer->consumer->done (view, imp->slot, imp->sequence, &error)) {
    /* the lease takes the slot back from a consumer that never says done */
    GST_WARNING ("slot %u: done not signalled: %s", imp->slot, error->message);
    g_clear_error (&error);
  }
  if (imp->notify)
    imp->notify (imp->user_data);
  gst_clear_object (&imp->ctx);
  gpushare_xfer_view_unref (view);
  g_free (imp);
}

/* ready waited for (read), then the record of the read; NULL with
 * error */
static SlotImport *
slot_import_new (GpuShareXferView * view, guint slot, guint64 sequence,
    gboolean read, GstObject * ctx, gpointer user_data, GDestroyNotify notify,
    GError ** error)
{
  SlotImport *imp;

  /* mappings of a retired kind are given back at the consumer's goodbye,
   * so that the producer can free retired rings: never held in place */
  if (gpushare_xfer_kind_has (view->mem_type, GPUSHARE_KIND_RETIRE)) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s slots are copied, not handed out in place",
        gpushare_mem_type_to_string (view->mem_type));
    return NULL;
  }
  if (!view->device_ptr[slot]) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s memory is not GPU memory",
        gpushare_mem_type_to_string (view->mem_type));
    return NULL;
  }
  if (read && view->xfer->consumer->wait_ready
      && !view->xfer->consumer->wait_ready (view, slot, sequence, error)) {
    own_error (error, GPUSHARE_XFER_ERROR_COPY);
    return NULL;
  }
  imp = g_new0 (SlotImport, 1);
  imp->view = gpushare_xfer_view_ref (view);
  imp->slot = slot;
  imp->sequence = sequence;
  imp->read = read;
  imp->ctx = ctx ? gst_object_ref (ctx) : NULL;
  imp->user_data = user_data;
  imp->notify = notify;
  return imp;
}

GstMemory *
gpushare_xfer_view_import (GpuShareXferView * view, guint slot,
    guint64 sequence, const GstVideoInfo * slot_info, GstObject * ctx,
    gpointer user_data, GDestroyNotify notify, GError ** error)
{
  const GpuShareXferGst *lib = view->xfer->gst;
  const gchar *why = NULL;
  SlotImport *imp;
  GstMemory *mem;

  g_return_val_if_fail (slot < view->n_slots, NULL);
  g_return_val_if_fail (GST_IS_OBJECT (ctx), NULL);
  if (!lib || !lib->import || !lib->can_import
      || !lib->can_import (slot_info, view->slot_size, &why)) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s memory cannot be handed out in place as GPU memory%s%s",
        gpushare_mem_type_to_string (view->mem_type), why ? ": " : "",
        why ? why : "");
    return NULL;
  }
  imp = slot_import_new (view, slot, sequence, TRUE, ctx, user_data, notify,
      error);
  if (!imp)
    return NULL;
  if (gpushare_test_fails ("src", "wrap")) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
        "the slot could not be wrapped as GStreamer memory (test)");
    mem = NULL;
  } else {
    mem = lib->import (view, slot, 0, slot_info, ctx, imp, slot_import_free,
        error);
  }
  if (!mem) {
    /* nobody read it: done all the same, and the frame stays the
     * caller's */
    imp->notify = NULL;
    slot_import_free (imp);
    own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
  }
  return mem;
}

/* the region lies in the slot, and the library can hand it out */
static gboolean
region_ok (GpuShareXferView * view, guint slot, gsize offset,
    const GstVideoInfo * info, GError ** error)
{
  const GpuShareXferGst *lib = view->xfer->gst;
  const gchar *why = NULL;

  if (!lib || !view->device_ptr[slot] || offset > view->slot_size
      || !lib->can_import || !lib->can_import (info, view->slot_size - offset,
          &why)) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s memory: no GPU memory of %" G_GSIZE_FORMAT " bytes at %"
        G_GSIZE_FORMAT " of a slot can be handed out%s%s",
        gpushare_mem_type_to_string (view->mem_type),
        GST_VIDEO_INFO_SIZE (info), offset, why ? ": " : "", why ? why : "");
    return FALSE;
  }
  return TRUE;
}

GstMemory *
gpushare_xfer_view_import_region (GpuShareXferView * view, guint slot,
    gsize offset, const GstVideoInfo * info, GstObject * ctx,
    gpointer user_data, GDestroyNotify notify, GError ** error)
{
  SlotImport *imp;
  GstMemory *mem;

  g_return_val_if_fail (slot < view->n_slots, NULL);
  g_return_val_if_fail (GST_IS_OBJECT (ctx), NULL);
  if (!region_ok (view, slot, offset, info, error))
    return NULL;
  if (!view->xfer->gst->import) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s slots are not handed out in place",
        gpushare_mem_type_to_string (view->mem_type));
    return NULL;
  }
  /* the frame's read holds the slot: no ready to wait for, no done */
  imp = slot_import_new (view, slot, 0, FALSE, ctx, user_data, notify, error);
  if (!imp)
    return NULL;
  mem = view->xfer->gst->import (view, slot, offset, info, ctx, imp,
      slot_import_free, error);
  if (!mem) {
    imp->notify = NULL;
    slot_import_free (imp);
    own_error (error, GPUSHARE_XFER_ERROR_RESOURCE);
  }
  return mem;
}

GstMemory *
gpushare_xfer_view_copy_region (GpuShareXferView * view, guint slot,
    gsize offset, GstVideoInfo * info, GstObject * ctx, GError ** error)
{
  GstMemory *mem;

  g_return_val_if_fail (slot < view->n_slots, NULL);
  g_return_val_if_fail (GST_IS_OBJECT (ctx), NULL);
  if (!region_ok (view, slot, offset, info, error))
    return NULL;
  if (!view->xfer->gst->copy_region) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_UNSUPPORTED,
        "%s memory cannot be copied on the device",
        gpushare_mem_type_to_string (view->mem_type));
    return NULL;
  }
  mem = view->xfer->gst->copy_region (view, slot, offset, info, ctx, error);
  if (!mem)
    own_error (error, GPUSHARE_XFER_ERROR_COPY);
  return mem;
}

GstMemory *
gpushare_xfer_view_import_slot (GpuShareXferView * view, guint slot,
    guint64 sequence, gsize size, gpointer user_data, GDestroyNotify notify,
    GError ** error)
{
  SlotImport *imp;

  g_return_val_if_fail (slot < view->n_slots, NULL);
  imp = slot_import_new (view, slot, sequence, TRUE, NULL, user_data, notify,
      error);
  if (!imp)
    return NULL;
  return gpushare_slot_memory_new (size, imp, slot_import_free);
}

gboolean
gpushare_xfer_view_read (GpuShareXferView * view, guint slot,
    guint64 sequence, const GstVideoInfo * slot_info,
    const GstVideoInfo * dst_info, GstBuffer * dst, gboolean dst_device,
    GError ** error)
{
  g_return_val_if_fail (slot < view->n_slots, FALSE);
  return view->xfer->consumer->read (view, slot, sequence, slot_info, dst_info,
      dst, dst_device, error) || own_error (error, GPUSHARE_XFER_ERROR_COPY);
}

gboolean
gpushare_xfer_view_skip (GpuShareXferView * view, guint slot,
    guint64 sequence, GError ** error)
{
  g_return_val_if_fail (slot < view->n_slots, FALSE);
  return !view->xfer->consumer->skip
      || view->xfer->consumer->skip (view, slot, sequence, error)
      || own_error (error, GPUSHARE_XFER_ERROR_COPY);
}

void
gpushare_xfer_view_cancel (GpuShareXferView * view, gboolean cancel)
{
  if (view->xfer->consumer->cancel)
    view->xfer->consumer->cancel (view, cancel);
}

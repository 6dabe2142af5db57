/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The system-memory transfer (gpusharexfer.h): one sealed memfd per slot,
 * always there.
 *
 * The producer seals every slot against shrinking and growing before it is
 * ever exported, and the consumer refuses an fd whose seals or size are not
 * what it was told: a mapping of a sealed memfd cannot be truncated under
 * the reader, so no SIGBUS is possible.
 *
 * Consumers cannot write a slot.  Once the producer holds its own writable
 * mapping, the slot is sealed F_SEAL_FUTURE_WRITE (Linux 5.1): from then on
 * the kernel refuses every new way in for writing, to anyone, the producer
 * included: write (), a writable shared mapping, mprotect () of a read-only
 * one, a hole punched, through any file of that memfd.  The producer's
 * mapping made before the seal is the only writer left.  The consumer
 * checks the seal, and that the kernel refuses it a writable mapping,
 * before it maps a slot read-only.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpusharexfer.h"

#include "gpusharefd.h"
#include "gpusharevideo.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct
{
  GpuShareXferRing parent;
  gint fds[GPUSHARE_MAX_SLOTS];
} SysRing;

static void
sys_ring_free (GpuShareXferRing * ring)
{
  SysRing *self = (SysRing *) ring;
  guint i;

  for (i = 0; i < ring->n_slots; i++) {
    if (ring->data[i])
      munmap (ring->data[i], ring->slot_size);
    ring->data[i] = NULL;
  }
  gpushare_close_fds (self->fds, ring->n_slots);
  g_free (self);
}

static GpuShareXferRing *
sys_ring_new (gint device, GpuShareMemType type, guint64 epoch,
    guint n_slots, gsize frame_size, GError ** error)
{
  SysRing *self = g_new0 (SysRing, 1);
  GpuShareXferRing *ring = &self->parent;
  guint i;

  ring->n_slots = n_slots;
  ring->slot_size = gpushare_round_up (frame_size,
      (gsize) sysconf (_SC_PAGESIZE));
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    self->fds[i] = -1;
  for (i = 0; i < n_slots; i++) {
    self->fds[i] = gpushare_memfd_new ("gpushare-slot", ring->slot_size, TRUE,
        TRUE, &ring->data[i], "slot", GPUSHARE_XFER_ERROR,
        GPUSHARE_XFER_ERROR_RESOURCE, error);
    if (self->fds[i] < 0) {
      sys_ring_free (ring);
      return NULL;
    }
  }
  return ring;
}

static gboolean
sys_export (GpuShareXferRing * ring, guint index, GpuShareSlots * slots,
    gint * fds, guint * n_fds, GError ** error)
{
  guint i;

  for (i = 0; i < ring->n_slots; i++) {
    /* opened anew, read-only (gpushare_memfd_reopen_read_only ()) */
    fds[i] = gpushare_memfd_reopen_read_only (((SysRing *) ring)->fds[i],
        "slot", GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE, error);
    if (fds[i] < 0) {
      gpushare_close_fds (fds, i);
      return FALSE;
    }
  }
  memset (slots, 0, sizeof (*slots));
  slots->epoch = ring->epoch;
  slots->slot_size = ring->slot_size;
  slots->n_slots = ring->n_slots;
  slots->mem_type = ring->mem_type;
  *n_fds = ring->n_slots;
  return TRUE;
}

static gboolean
sys_write (GpuShareXferRing * ring, guint slot, const GstVideoInfo * info,
    GstBuffer * buf, GpuShareXferRing * staged, GError ** error)
{
  GstBuffer *dest = gst_buffer_new_wrapped_full (0, ring->data[slot],
      ring->slot_size, 0, GST_VIDEO_INFO_SIZE (info), NULL, NULL);
  GstVideoFrame in, out;
  gboolean ret = FALSE;

  if (gst_video_frame_map (&in, info, buf, GST_MAP_READ)) {
    if (gst_video_frame_map (&out, info, dest, GST_MAP_WRITE)) {
      /* not gst_video_frame_copy (): it drops the last chroma sample of
       * odd-width packed 4:2:2 rows */
      ret = gpushare_video_frame_copy (&out, &in);
      gst_video_frame_unmap (&out);
    }
    gst_video_frame_unmap (&in);
  }
  gst_buffer_unref (dest);
  if (!ret)
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_COPY,
        "could not copy the frame into a slot");
  return ret;
}

static void
sys_view_free (GpuShareXferView * view)
{
  guint i;

  for (i = 0; i < view->n_slots; i++) {
    if (view->data[i])
      munmap ((gpointer) view->data[i], view->slot_size);
    view->data[i] = NULL;
  }
  gpushare_close_fds (view->fds, view->n_fds);
  g_free (view);
}

static GpuShareXferView *
sys_view_new (gint device, const GpuShareSlots * s, gint * fds, GError ** error)
{
  GpuShareXferView *view = g_new0 (GpuShareXferView, 1);
  guint i;

  /* sys_view_free () unmaps these */
  view->n_slots = s->n_slots;
  view->slot_size = s->slot_size;
  for (i = 0; i < s->n_slots; i++) {
    gboolean allocated;
    gpointer data;

    /* allocated: every page of the slot exists already (a slot of ours,
     * see sys_ring_new ()), so that mapping it in full takes no memory */
    if (!gpushare_memfd_check_read_only (fds[i], s->slot_size, &allocated,
            "slot", GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE, error))
      goto failed;
    /* Mapped in full now, at the handshake, not by faults on the first
     * frames read, where the producer allocated every page: a read fault
     * on a hole of a memory file allocates a page, and a producer's sparse
     * slot (up to GPUSHARE_MAX_SLOT_SIZE each) must not make us allocate
     * what it did not.  The seals keep allocated pages there: no hole can
     * be punched into the slot after this. */
    data = mmap (NULL, s->slot_size, PROT_READ,
        MAP_SHARED | (allocated ? MAP_POPULATE : 0), fds[i], 0);
    if (data == MAP_FAILED) {
      int err = errno;

      g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
          "could not map a slot: %s", g_strerror (err));
      goto failed;
    }
    view->data[i] = data;
  }
  /* the mappings keep the memory alive; the fds (read-only, checked) are
   * kept for memory that carries them downstream */
  memcpy (view->fds, fds, s->n_slots * sizeof (gint));
  view->n_fds = s->n_slots;
  return view;

failed:
  gpushare_close_fds (fds, s->n_slots);
  sys_view_free (view);
  return NULL;
}

static gboolean
sys_read (GpuShareXferView * view, guint slot, guint64 sequence,
    const GstVideoInfo * slot_info, const GstVideoInfo * dst_info,
    GstBuffer * dst, gboolean dst_device, GError ** error)
{
  gsize size = GST_VIDEO_INFO_SIZE (slot_info);

  /* the same bytes, the same layout: the caller gives dst the slot's */
  if (dst_device || size > view->slot_size
      || gst_buffer_fill (dst, 0, view->data[slot], size) != size) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_COPY,
        "could not copy the frame out of its slot");
    return FALSE;
  }
  return TRUE;
}

const GpuShareXferProducer gpushare_xfer_system_producer = {
  .ring_new = sys_ring_new,
  .ring_free = sys_ring_free,
  .export_slots = sys_export,
  .write = sys_write,
};

const GpuShareXferConsumer gpushare_xfer_system_consumer = {
  .view_new = sys_view_new,
  .view_free = sys_view_free,
  .read = sys_read,
};

static const GpuShareMemKind system_kinds[] = {
  {GPUSHARE_MEM_SYSTEM, "system", GPUSHARE_TRANSPORT_SYSTEM,
      "System memory only", 0},
};

static const GpuShareMemPolicy system_policy = {
  .name = "system",
  .kinds = system_kinds,
  .n_kinds = G_N_ELEMENTS (system_kinds),
};

const GpuShareXfer gpushare_xfer_system = {
  .policy = &system_policy,
  .producer = &gpushare_xfer_system_producer,
  .consumer = &gpushare_xfer_system_consumer,
};

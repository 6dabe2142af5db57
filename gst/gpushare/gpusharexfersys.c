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

/* Linux 5.1; older C library headers lack it */
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* either one keeps a consumer from writing; F_SEAL_WRITE would keep the
 * producer out too (it needs no writable mapping to exist), so ours carry
 * F_SEAL_FUTURE_WRITE */
#define WRITE_SEALS (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)

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
  int err;

  ring->n_slots = n_slots;
  ring->slot_size = gpushare_round_up (frame_size,
      (gsize) sysconf (_SC_PAGESIZE));
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    self->fds[i] = -1;
  for (i = 0; i < n_slots; i++) {
    gint fd = memfd_create ("gpushare-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    gpointer data;

    if (fd < 0)
      goto failed;
    self->fds[i] = fd;
    if (ftruncate (fd, ring->slot_size) < 0)
      goto failed;
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
      goto failed;
    /* MAP_POPULATE: every page of the slot is allocated and mapped now,
     * while the caps are set, and not one page fault at a time while the
     * first frames are written (thousands of faults for one 4K frame) */
    data = mmap (NULL, ring->slot_size, PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED)
      goto failed;
    ring->data[i] = data;
    /* Only now, with the producer's writable mapping in place: the seal
     * refuses every later way in for writing, ours included.  Then
     * F_SEAL_SEAL: nobody may lift or add seals later.  A kernel that
     * does not know the seal refuses it (EINVAL): never a writable ring. */
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0)
      goto no_write_seal;
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
      goto failed;
  }
  return ring;

failed:
  err = errno;
  g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
      "could not allocate a %" G_GSIZE_FORMAT "-byte memfd slot: %s",
      ring->slot_size, g_strerror (err));
  sys_ring_free (ring);
  return NULL;
no_write_seal:
  err = errno;
  g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
      "could not seal a memfd slot against consumers' writes "
      "(F_SEAL_FUTURE_WRITE needs Linux 5.1 or later): %s", g_strerror (err));
  sys_ring_free (ring);
  return NULL;
}

/* A consumer gets the slot opened anew, read-only: write (), ftruncate ()
 * and writable mappings of its file fail before any seal is consulted, and
 * the write-capable file stays with the producer.  This is
 * the second line, not the first: memfds are mode 0777, so whoever holds
 * any fd of one can open it again read-write through /proc/<pid>/fd, and
 * only the seal stops that one.  So where /proc cannot be read (a sandbox
 * without it), a duplicate of our fd goes, as sealed as the reopened one
 * would be. */
static gint
export_slot (SysRing * self, guint slot, GError ** error)
{
  gchar path[64];
  gint fd;

  g_snprintf (path, sizeof (path), "/proc/self/fd/%d", self->fds[slot]);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fd = fcntl (self->fds[slot], F_DUPFD_CLOEXEC, 3);
  if (fd < 0) {
    int err = errno;

    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
        "could not duplicate a slot descriptor: %s", g_strerror (err));
  }
  return fd;
}

static gboolean
sys_export (GpuShareXferRing * ring, guint index, GpuShareSlots * slots,
    gint * fds, guint * n_fds, GError ** error)
{
  guint i;

  for (i = 0; i < ring->n_slots; i++) {
    fds[i] = export_slot ((SysRing *) ring, i, error);
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

/* *allocated: every page of the slot exists already (a slot of ours, see
 * sys_ring_new ()), so that mapping it in full takes no memory */
static gboolean
check_fd (gint fd, gsize slot_size, gboolean * allocated, GError ** error)
{
  struct stat st;
  gpointer probe;
  gint seals;
  const gchar *why = NULL;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
    why = "slot descriptor is not a regular memory file";
    goto refused;
  }
  seals = fcntl (fd, F_GET_SEALS);
  if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS) {
    why = "slot is not sealed against shrinking and growing";
    goto refused;
  }
  /* a slot this consumer could write, any other consumer could too: what
   * they read would be whatever the last of them wrote */
  if (!(seals & WRITE_SEALS)) {
    why = "slot is writable: not sealed against writes "
        "(F_SEAL_FUTURE_WRITE)";
    goto refused;
  }
  /* sealed: the size (and the pages allocated: no hole can be punched
   * after the write seal) looked at now are those for the mapping's
   * lifetime; looked at before the seals, they could change in between */
  if (fstat (fd, &st) < 0) {
    why = "slot descriptor cannot be looked at";
    goto refused;
  }
  *allocated = (guint64) st.st_blocks * 512 >= (guint64) st.st_size;
  if ((guint64) st.st_size != (guint64) slot_size) {
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
        "slot is %" G_GUINT64_FORMAT " bytes, announced %" G_GSIZE_FORMAT,
        (guint64) st.st_size, slot_size);
    return FALSE;
  }
  /* the seals say so; the kernel must agree.  Mapping touches no page:
   * this costs an address range for a moment, nothing more. */
  probe = mmap (NULL, slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (probe != MAP_FAILED) {
    munmap (probe, slot_size);
    why = "slot is writable: the kernel let this consumer map it for "
        "writing";
    goto refused;
  }
  return TRUE;

refused:
  g_set_error_literal (error, GPUSHARE_XFER_ERROR,
      GPUSHARE_XFER_ERROR_RESOURCE, why);
  return FALSE;
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

    if (!check_fd (fds[i], s->slot_size, &allocated, error))
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

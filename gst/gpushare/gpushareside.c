/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Side memory.  See gpushareside.h.
 */

#include "gpushareside.h"

#include "gpusharefd.h"
#include "gpushareproto.h"

#include <errno.h>
#include <gio/gio.h>
#include <sys/mman.h>
#include <unistd.h>

struct _GpuShareSide
{
  gint ref_count;
  gint fd;                      /* producer: the writable file; -1 */
  guint8 *data;
  gsize size;
  guint n_slots;
  guint32 slot_pages;
};

static gsize
region_bytes (guint32 slot_pages)
{
  return (gsize) slot_pages *GPUSHARE_SIDE_PAGE;
}

/* the side memory of n_slots regions of slot_pages pages at data; fd: the
 * producer's writable file, or -1 */
static GpuShareSide *
side_wrap (gint fd, gpointer data, guint n_slots, guint32 slot_pages)
{
  GpuShareSide *self = g_new0 (GpuShareSide, 1);

  self->ref_count = 1;
  self->fd = fd;
  self->data = data;
  self->size = n_slots * region_bytes (slot_pages);
  self->n_slots = n_slots;
  self->slot_pages = slot_pages;
  return self;
}

GpuShareSide *
gpushare_side_new (guint n_slots, guint32 slot_pages, GError ** error)
{
  gpointer data;
  gint fd;

  g_return_val_if_fail (n_slots > 0 && n_slots <= GPUSHARE_MAX_SLOTS, NULL);
  g_return_val_if_fail (slot_pages > 0
      && slot_pages <= GPUSHARE_MAX_SIDE_PAGES, NULL);

  /* not populated: a page takes memory once a payload is written there */
  fd = gpushare_memfd_new ("gpushare-side", n_slots * region_bytes
      (slot_pages), FALSE, TRUE, &data, "side memory", G_IO_ERROR,
      G_IO_ERROR_FAILED, error);
  return fd < 0 ? NULL : side_wrap (fd, data, n_slots, slot_pages);
}

GpuShareSide *
gpushare_side_view_new (gint fd, guint n_slots, guint32 slot_pages,
    GError ** error)
{
  gsize size;
  gpointer data;

  if (n_slots == 0 || n_slots > GPUSHARE_MAX_SLOTS || slot_pages == 0
      || slot_pages > GPUSHARE_MAX_SIDE_PAGES) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "side memory of %u slots of %u pages", n_slots, slot_pages);
    close (fd);
    return NULL;
  }
  size = n_slots * region_bytes (slot_pages);
  if (!gpushare_memfd_check_read_only (fd, size, NULL, "side memory",
          G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED, error)) {
    close (fd);
    return NULL;
  }
  /* not populated: only what the producer wrote is read, and a read
   * fault on a hole of a memory file would allocate a page of its */
  data = mmap (NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  close (fd);
  if (data == MAP_FAILED) {
    int err = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (err),
        "could not map the side memory: %s", g_strerror (err));
    return NULL;
  }
  return side_wrap (-1, data, n_slots, slot_pages);
}

GpuShareSide *
gpushare_side_ref (GpuShareSide * side)
{
  g_atomic_int_inc (&side->ref_count);
  return side;
}

void
gpushare_side_unref (GpuShareSide * side)
{
  if (!side || !g_atomic_int_dec_and_test (&side->ref_count))
    return;
  munmap (side->data, side->size);
  if (side->fd >= 0)
    close (side->fd);
  g_free (side);
}

guint8 *
gpushare_side_region (GpuShareSide * side, guint slot)
{
  g_return_val_if_fail (slot < side->n_slots, NULL);
  return side->data + slot * region_bytes (side->slot_pages);
}

gsize
gpushare_side_region_size (GpuShareSide * side)
{
  return region_bytes (side->slot_pages);
}

guint32
gpushare_side_pages (GpuShareSide * side)
{
  return side->slot_pages;
}

gint
gpushare_side_export (GpuShareSide * side, GError ** error)
{
  g_return_val_if_fail (side->fd >= 0, -1);
  return gpushare_memfd_reopen_read_only (side->fd, "side memory",
      G_IO_ERROR, G_IO_ERROR_FAILED, error);
}

guint32
gpushare_side_pages_for (gint64 setting, guint width, guint height)
{
  guint64 bytes = setting < 0 ? (guint64) width * height * 2 :
      (guint64) setting;

  bytes = (bytes + GPUSHARE_SIDE_PAGE - 1) / GPUSHARE_SIDE_PAGE;
  return (guint32) MIN (bytes, GPUSHARE_MAX_SIDE_PAGES);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharebackend.h"

#include <unistd.h>

G_DEFINE_QUARK (gpushare - backend - error - quark, gpushare_backend_error);

const GpuShareBackend *
gpushare_backend_get (GpuShareMemType type)
{
  switch (type) {
    case GPUSHARE_MEM_SYSTEM:
      return &gpushare_sysmem_backend;
    default:
      return NULL;
  }
}

gsize
gpushare_round_up (gsize size, gsize align)
{
  if (size == 0)
    size = 1;
  return (size + align - 1) / align * align;
}

gsize
gpushare_backend_slot_size (const GpuShareBackend * backend, gsize frame_size)
{
  if (backend->slot_size)
    return backend->slot_size (0, frame_size);
  return gpushare_round_up (frame_size, (gsize) sysconf (_SC_PAGESIZE));
}

GpuShareAllocation *
gpushare_allocation_new (const GpuShareBackend * backend, guint64 epoch,
    guint n_slots, gsize slot_size, GError ** error)
{
  return gpushare_allocation_new_on_device (backend, 0, epoch, n_slots,
      slot_size, error);
}

GpuShareAllocation *
gpushare_allocation_new_on_device (const GpuShareBackend * backend,
    gint device, guint64 epoch, guint n_slots, gsize slot_size, GError ** error)
{
  GpuShareAllocation *alloc;
  guint i;

  g_return_val_if_fail (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS, NULL);

  alloc = g_new0 (GpuShareAllocation, 1);
  alloc->ref_count = 1;
  alloc->backend = backend;
  alloc->device = device;
  alloc->epoch = epoch;
  alloc->n_slots = n_slots;
  alloc->slot_size = slot_size;
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    alloc->fds[i] = -1;

  if (!backend->alloc (alloc, error)) {
    g_free (alloc);
    return NULL;
  }
  return alloc;
}

GpuShareAllocation *
gpushare_allocation_ref (GpuShareAllocation * alloc)
{
  g_atomic_int_inc (&alloc->ref_count);
  return alloc;
}

void
gpushare_allocation_unref (GpuShareAllocation * alloc)
{
  if (!g_atomic_int_dec_and_test (&alloc->ref_count))
    return;
  alloc->backend->free (alloc);
  g_free (alloc);
}

gint
gpushare_allocation_export (GpuShareAllocation * alloc, guint slot,
    GError ** error)
{
  g_return_val_if_fail (slot < alloc->n_slots, -1);
  return alloc->backend->export_slot (alloc, slot, error);
}

GpuShareImport *
gpushare_import_new (const GpuShareBackend * backend, guint64 epoch,
    guint n_slots, gsize slot_size, gint * fds, GError ** error)
{
  return gpushare_import_new_on_device (backend, 0, epoch, n_slots, slot_size,
      fds, error);
}

GpuShareImport *
gpushare_import_new_on_device (const GpuShareBackend * backend, gint device,
    guint64 epoch, guint n_slots, gsize slot_size, gint * fds, GError ** error)
{
  GpuShareImport *import;

  if (n_slots < 1 || n_slots > GPUSHARE_MAX_SLOTS) {
    gpushare_close_fds (fds, MIN (n_slots, GPUSHARE_MAX_SLOTS));
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE, "bad slot count %u", n_slots);
    return NULL;
  }

  import = g_new0 (GpuShareImport, 1);
  import->ref_count = 1;
  import->backend = backend;
  import->device = device;
  import->epoch = epoch;
  import->n_slots = n_slots;
  import->slot_size = slot_size;

  if (!backend->import (import, fds, error)) {
    g_free (import);
    return NULL;
  }
  return import;
}

GpuShareImport *
gpushare_import_ref (GpuShareImport * import)
{
  g_atomic_int_inc (&import->ref_count);
  return import;
}

void
gpushare_import_unref (GpuShareImport * import)
{
  if (!g_atomic_int_dec_and_test (&import->ref_count))
    return;
  import->backend->unimport (import);
  g_free (import);
}

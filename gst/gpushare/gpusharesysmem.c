/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * System-memory backend: one sealed memfd per slot.
 *
 * The producer seals every slot against shrinking and growing before it is
 * ever exported, and the consumer refuses an fd whose seals or size are not
 * what it was told: a mapping of a sealed memfd cannot be truncated under
 * the reader, so no SIGBUS is possible.  Consumers map read-only.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpusharebackend.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static void
sysmem_free (GpuShareAllocation * alloc)
{
  guint i;

  for (i = 0; i < alloc->n_slots; i++) {
    if (alloc->data[i])
      munmap (alloc->data[i], alloc->slot_size);
    alloc->data[i] = NULL;
  }
  gpushare_close_fds (alloc->fds, alloc->n_slots);
}

static gboolean
sysmem_alloc (GpuShareAllocation * alloc, GError ** error)
{
  guint i;

  for (i = 0; i < alloc->n_slots; i++) {
    gint fd = memfd_create ("gpushare-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    gpointer data;

    if (fd < 0)
      goto failed;
    alloc->fds[i] = fd;
    if (ftruncate (fd, alloc->slot_size) < 0)
      goto failed;
    /* F_SEAL_SEAL too: nobody may lift the other seals later */
    if (fcntl (fd, F_ADD_SEALS, REQUIRED_SEALS) < 0)
      goto failed;
    data = mmap (NULL, alloc->slot_size, PROT_READ | PROT_WRITE, MAP_SHARED,
        fd, 0);
    if (data == MAP_FAILED)
      goto failed;
    alloc->data[i] = data;
  }
  return TRUE;

failed:
  {
    int err = errno;

    sysmem_free (alloc);
    g_set_error (error, GPUSHARE_BACKEND_ERROR, GPUSHARE_BACKEND_ERROR_ALLOC,
        "could not allocate a %" G_GSIZE_FORMAT "-byte memfd slot: %s",
        alloc->slot_size, g_strerror (err));
    return FALSE;
  }
}

static gint
sysmem_export_slot (GpuShareAllocation * alloc, guint slot, GError ** error)
{
  gint fd = fcntl (alloc->fds[slot], F_DUPFD_CLOEXEC, 3);

  if (fd < 0) {
    int err = errno;

    g_set_error (error, GPUSHARE_BACKEND_ERROR, GPUSHARE_BACKEND_ERROR_EXPORT,
        "could not duplicate a slot descriptor: %s", g_strerror (err));
  }
  return fd;
}

static void
sysmem_unimport (GpuShareImport * import)
{
  guint i;

  for (i = 0; i < import->n_slots; i++) {
    if (import->data[i])
      munmap ((gpointer) import->data[i], import->slot_size);
    import->data[i] = NULL;
  }
}

static gboolean
check_fd (gint fd, gsize slot_size, GError ** error)
{
  struct stat st;
  gint seals;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE,
        "slot descriptor is not a regular memory file");
    return FALSE;
  }
  seals = fcntl (fd, F_GET_SEALS);
  if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS) {
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE,
        "slot is not sealed against shrinking and growing");
    return FALSE;
  }
  /* sealed: the size checked now is the size for the mapping's lifetime */
  if ((guint64) st.st_size != (guint64) slot_size) {
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE,
        "slot is %" G_GUINT64_FORMAT " bytes, announced %" G_GSIZE_FORMAT,
        (guint64) st.st_size, slot_size);
    return FALSE;
  }
  return TRUE;
}

static gboolean
sysmem_import (GpuShareImport * import, gint * fds, GError ** error)
{
  guint i;

  for (i = 0; i < import->n_slots; i++) {
    gpointer data;

    if (!check_fd (fds[i], import->slot_size, error))
      goto failed;
    data = mmap (NULL, import->slot_size, PROT_READ, MAP_SHARED, fds[i], 0);
    if (data == MAP_FAILED) {
      int err = errno;

      g_set_error (error, GPUSHARE_BACKEND_ERROR,
          GPUSHARE_BACKEND_ERROR_BAD_HANDLE, "could not map a slot: %s",
          g_strerror (err));
      goto failed;
    }
    import->data[i] = data;
  }
  /* the mappings keep the memory alive: the fds are done with */
  gpushare_close_fds (fds, import->n_slots);
  return TRUE;

failed:
  gpushare_close_fds (fds, import->n_slots);
  sysmem_unimport (import);
  return FALSE;
}

const GpuShareBackend gpushare_sysmem_backend = {
  .name = "system-memory",
  .mem_type = GPUSHARE_MEM_SYSTEM,
  .alloc = sysmem_alloc,
  .export_slot = sysmem_export_slot,
  .free = sysmem_free,
  .import = sysmem_import,
  .unimport = sysmem_unimport,
};

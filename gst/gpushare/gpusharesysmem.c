/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * System-memory backend: one sealed memfd per slot.
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

#include "gpusharebackend.h"

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
  int err;

  for (i = 0; i < alloc->n_slots; i++) {
    gint fd = memfd_create ("gpushare-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    gpointer data;

    if (fd < 0)
      goto failed;
    alloc->fds[i] = fd;
    if (ftruncate (fd, alloc->slot_size) < 0)
      goto failed;
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
      goto failed;
    data = mmap (NULL, alloc->slot_size, PROT_READ | PROT_WRITE, MAP_SHARED,
        fd, 0);
    if (data == MAP_FAILED)
      goto failed;
    alloc->data[i] = data;
    /* Only now, with the producer's writable mapping in place: the seal
     * refuses every later way in for writing, ours included.  Then
     * F_SEAL_SEAL: nobody may lift or add seals later.  A kernel that
     * does not know the seal refuses it (EINVAL): never a writable ring. */
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0)
      goto no_write_seal;
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
      goto failed;
  }
  return TRUE;

failed:
  err = errno;
  sysmem_free (alloc);
  g_set_error (error, GPUSHARE_BACKEND_ERROR, GPUSHARE_BACKEND_ERROR_ALLOC,
      "could not allocate a %" G_GSIZE_FORMAT "-byte memfd slot: %s",
      alloc->slot_size, g_strerror (err));
  return FALSE;

no_write_seal:
  err = errno;
  sysmem_free (alloc);
  g_set_error (error, GPUSHARE_BACKEND_ERROR, GPUSHARE_BACKEND_ERROR_ALLOC,
      "could not seal a memfd slot against consumers' writes "
      "(F_SEAL_FUTURE_WRITE needs Linux 5.1 or later): %s", g_strerror (err));
  return FALSE;
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
sysmem_export_slot (GpuShareAllocation * alloc, guint slot, GError ** error)
{
  gchar path[64];
  gint fd;

  g_snprintf (path, sizeof (path), "/proc/self/fd/%d", alloc->fds[slot]);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fd = fcntl (alloc->fds[slot], F_DUPFD_CLOEXEC, 3);
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
  gpointer probe;
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
  /* a slot this consumer could write, any other consumer could too: what
   * they read would be whatever the last of them wrote */
  if (!(seals & WRITE_SEALS)) {
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE,
        "slot is writable: not sealed against writes (F_SEAL_FUTURE_WRITE)");
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
  /* the seals say so; the kernel must agree.  Mapping touches no page:
   * this costs an address range for a moment, nothing more. */
  probe = mmap (NULL, slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (probe != MAP_FAILED) {
    munmap (probe, slot_size);
    g_set_error (error, GPUSHARE_BACKEND_ERROR,
        GPUSHARE_BACKEND_ERROR_BAD_HANDLE,
        "slot is writable: the kernel let this consumer map it for writing");
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

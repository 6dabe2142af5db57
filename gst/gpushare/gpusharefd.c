/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File descriptor helpers.  See gpusharefd.h.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpusharefd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

void
gpushare_close_fds (gint * fds, guint n_fds)
{
  guint i;

  for (i = 0; i < n_fds; i++) {
    if (fds[i] >= 0)
      close (fds[i]);
    fds[i] = -1;
  }
}

gboolean
gpushare_fd_usage (guint * open_fds, guint64 * limit)
{
  GError *error = NULL;
  GDir *dir = g_dir_open ("/proc/self/fd", 0, &error);
  struct rlimit rl;

  *open_fds = 0;
  *limit = getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
      ? (guint64) rl.rlim_cur : 0;
  if (!dir) {
    /* no descriptor left to list them with: all of them; no /proc (a
     * sandbox): not known, 0 */
    if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_MFILE)
        || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NFILE))
      *open_fds = (guint) MIN (*limit, G_MAXUINT);
    g_error_free (error);
    return FALSE;
  }
  while (g_dir_read_name (dir))
    (*open_fds)++;
  g_dir_close (dir);
  /* the listing's own */
  (*open_fds)--;
  return TRUE;
}

gboolean
gpushare_fd_headroom (guint need, GError ** error)
{
  guint64 limit;
  guint open_fds;

  gpushare_fd_usage (&open_fds, &limit);
  if (limit == 0 || (guint64) open_fds + need <= limit)
    return TRUE;
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_MFILE, "%u descriptors "
      "open of this process's limit of %" G_GUINT64_FORMAT " (RLIMIT_NOFILE), "
      "%u needed", open_fds, limit, need);
  return FALSE;
}

gint
gpushare_memfd_new (const gchar * name, gsize size, gboolean populate,
    gboolean read_only, gpointer * data, const gchar * what, GQuark domain,
    gint code, GError ** error)
{
  gint fd = memfd_create (name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

  *data = MAP_FAILED;
  if (fd < 0 || ftruncate (fd, size) < 0
      || fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
    goto failed;
  /* MAP_POPULATE: every page allocated and mapped now, not one page
   * fault at a time as it is first written (thousands for a 4K frame) */
  *data = mmap (NULL, size, PROT_READ | PROT_WRITE,
      MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
  if (*data == MAP_FAILED)
    goto failed;
  /* Only now, with our writable mapping in place: the seal refuses every
   * later way in for writing, ours included.  Then F_SEAL_SEAL: nobody
   * may lift or add seals later.  A kernel that does not know the seal
   * refuses it (EINVAL): never a writable memory file. */
  if (read_only && fcntl (fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0) {
    err = errno;
    g_set_error (error, domain, code, "could not seal a memfd %s against "
        "consumers' writes (F_SEAL_FUTURE_WRITE needs Linux 5.1 or later): "
        "%s", what, g_strerror (err));
    goto out;
  }
  if (read_only && fcntl (fd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
    goto failed;
  return fd;

failed:
  err = errno;
  g_set_error (error, domain, code, "could not allocate a %" G_GSIZE_FORMAT
      "-byte memfd %s: %s", size, what, g_strerror (err));
out:
  if (*data != MAP_FAILED)
    munmap (*data, size);
  *data = NULL;
  if (fd >= 0)
    close (fd);
  return -1;
}

/* A consumer gets the memory file opened anew, read-only: write (),
 * ftruncate () and writable mappings of its file fail before any seal is
 * consulted, and the write-capable file stays with the producer.  This is
 * the second line, not the first: memfds are mode 0777, so whoever holds
 * any fd of one can open it again read-write through /proc/<pid>/fd, and
 * only the seal stops that one.  So where /proc cannot be read (a sandbox
 * without it), a duplicate of our fd goes, as sealed as the reopened one
 * would be. */
gint
gpushare_memfd_reopen_read_only (gint fd, const gchar * what, GQuark domain,
    gint code, GError ** error)
{
  gchar path[64];
  gint out;

  g_snprintf (path, sizeof (path), "/proc/self/fd/%d", fd);
  out = open (path, O_RDONLY | O_CLOEXEC);
  if (out < 0)
    out = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (out < 0) {
    int err = errno;

    g_set_error (error, domain, code, "could not duplicate a %s descriptor: "
        "%s", what, g_strerror (err));
  }
  return out;
}

gboolean
gpushare_memfd_check_read_only (gint fd, gsize size, gboolean * allocated,
    const gchar * what, GQuark domain, gint code, GError ** error)
{
  struct stat st;
  gpointer probe;
  gint seals;
  const gchar *why = NULL;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
    why = "descriptor is not a regular memory file";
    goto refused;
  }
  seals = fcntl (fd, F_GET_SEALS);
  if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS) {
    why = "is not sealed against shrinking and growing";
    goto refused;
  }
  /* memory this consumer could write, any other consumer could too: what
   * they read would be whatever the last of them wrote */
  if (!(seals & WRITE_SEALS)) {
    why = "is writable: not sealed against writes (F_SEAL_FUTURE_WRITE)";
    goto refused;
  }
  /* sealed: the size (and the pages allocated: no hole can be punched
   * after the write seal) looked at now are those for the mapping's
   * lifetime; looked at before the seals, they could change in between */
  if (fstat (fd, &st) < 0) {
    why = "descriptor cannot be looked at";
    goto refused;
  }
  if (allocated)
    *allocated = (guint64) st.st_blocks * 512 >= (guint64) st.st_size;
  if ((guint64) st.st_size != (guint64) size) {
    g_set_error (error, domain, code, "%s is %" G_GUINT64_FORMAT " bytes, "
        "announced %" G_GSIZE_FORMAT, what, (guint64) st.st_size, size);
    return FALSE;
  }
  /* the seals say so; the kernel must agree.  Mapping touches no page:
   * this costs an address range for a moment, nothing more. */
  probe = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (probe != MAP_FAILED) {
    munmap (probe, size);
    why = "is writable: the kernel let this consumer map it for writing";
    goto refused;
  }
  return TRUE;

refused:
  g_set_error (error, domain, code, "%s %s", what, why);
  return FALSE;
}

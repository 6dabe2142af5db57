/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File descriptor helpers.  See gpusharefd.h.
 */

#include "gpusharefd.h"

#include <sys/resource.h>
#include <unistd.h>

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

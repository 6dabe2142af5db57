/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File descriptor helpers.  See gpusharefd.h.
 */

#include "gpusharefd.h"

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File descriptor helpers, for the transport and for memory code alike,
 * so that memory code needs no socket header.
 */

#ifndef __GPUSHARE_FD_H__
#define __GPUSHARE_FD_H__

#include <glib.h>

G_BEGIN_DECLS

/* closes every fd of the array that is >= 0 and sets it to -1 */
void gpushare_close_fds (gint * fds, guint n_fds);
/* the descriptors this process has open, and its limit (RLIMIT_NOFILE; 0:
 * none), for the text of an error that running out of them caused; FALSE
 * where they could not be counted: *open_fds is then the limit where none
 * was left to list them with, 0 where /proc cannot be read */
gboolean gpushare_fd_usage (guint * open_fds, guint64 * limit);
/* FALSE, with a G_FILE_ERROR_MFILE that says how many are open of how
 * many, where fewer than need descriptors are left to this process: GLib
 * aborts the process where it cannot make a GMainContext's wake-up */
gboolean gpushare_fd_headroom (guint need, GError ** error);

G_END_DECLS

#endif /* __GPUSHARE_FD_H__ */

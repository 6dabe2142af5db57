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

/* Memory files shared read-only: errors in the domain and code given.
 * A producer's memfd of size bytes, sealed against shrinking and growing,
 * and its writable shared mapping (*data; populate: every page allocated
 * now).  With read_only, sealed against every later way in for writing
 * too, the mapping made before the seal being the only writer left.  -1
 * with error (what: the memory's name for it) */
gint gpushare_memfd_new (const gchar * name, gsize size, gboolean populate,
    gboolean read_only, gpointer * data, const gchar * what, GQuark domain,
    gint code, GError ** error);
/* the same memfd opened anew, read-only, for a consumer (a duplicate where
 * /proc cannot be read, as sealed); -1 with error */
gint gpushare_memfd_reopen_read_only (gint fd, const gchar * what,
    GQuark domain, gint code, GError ** error);
/* Consumer: fd is a memfd of exactly size bytes, sealed against
 * shrinking, growing and writes, that the kernel refuses to map writable.
 * *allocated: every page of it exists already.  FALSE with error (its
 * text: what, then why) */
gboolean gpushare_memfd_check_read_only (gint fd, gsize size,
    gboolean * allocated, const gchar * what, GQuark domain, gint code,
    GError ** error);

G_END_DECLS

#endif /* __GPUSHARE_FD_H__ */

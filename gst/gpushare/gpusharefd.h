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

G_END_DECLS

#endif /* __GPUSHARE_FD_H__ */

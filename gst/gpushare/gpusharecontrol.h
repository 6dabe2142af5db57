/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One control thread per process, shared by every producer and consumer
 * core in it.  Each core keeps a GMainContext of its own, as before; the
 * thread iterates all of them with one poll ().
 */

#ifndef __GPUSHARE_CONTROL_H__
#define __GPUSHARE_CONTROL_H__

#include <glib.h>

G_BEGIN_DECLS

/* the thread's name, as /proc/PID/task/TID/comm shows it */
#define GPUSHARE_CONTROL_THREAD_NAME "gpushare"

/* hands context to the process's control thread (started by the first
 * one); nobody else may iterate it until gpushare_control_detach () */
void gpushare_control_attach (GMainContext * context);

/* takes context back: once this returns, the control thread iterates it
 * no more and runs none of its callbacks (from the control thread itself,
 * one of another context's callbacks may detach it too).  The last one
 * detached stops the thread. */
void gpushare_control_detach (GMainContext * context);

/* how many contexts the control thread iterates now; tests */
guint gpushare_control_n_contexts (void);

G_END_DECLS

#endif /* __GPUSHARE_CONTROL_H__ */

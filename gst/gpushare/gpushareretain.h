/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory other processes may still have open, kept until they let go.
 *
 * A legacy CUDA IPC allocation may not be freed while another process
 * still has it open (cuIpcOpenMemHandle): the driver leaves that case
 * undefined.  The producer keeps the rings of earlier epochs until every
 * process it sent them to has let go, which it learns in one of three
 * ways: the consumer says so (UNMAPPED, or a GOODBYE, sent after it closed
 * its mappings), or the consumer's process has exited (a pidfd of the pid
 * its socket's SO_PEERCRED named becomes readable).
 *
 * GpuShareHolders: the processes one allocation was handed to, each with
 * the connections (ids) it came through.
 * GpuShareRetained: allocations of earlier epochs, each with its holders,
 * freed as soon as it has none; at most max of them (the caller refuses to
 * make more until one is freed), all freed by gpushare_retained_free ().
 *
 * Not thread-safe: the caller locks.
 */

#ifndef __GPUSHARE_RETAIN_H__
#define __GPUSHARE_RETAIN_H__

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef struct _GpuShareHolders GpuShareHolders;
typedef struct _GpuShareRetained GpuShareRetained;

GpuShareHolders *gpushare_holders_new (void);
/* closes every pidfd */
void gpushare_holders_free (GpuShareHolders * h);
/* process pid has the allocation now, through connection id.  Its exit
 * is watched through one pidfd per process where the kernel gives one
 * (pid > 0, Linux 5.3); where it does not, only gpushare_holders_release ()
 * of each of its connections lets go of it. */
void gpushare_holders_add (GpuShareHolders * h, guint id, pid_t pid);
/* connection id let go (the process does once all its connections
 * did): TRUE when it was a holder */
gboolean gpushare_holders_release (GpuShareHolders * h, guint id);
/* forgets the processes that exited; the number of processes left */
guint gpushare_holders_reap (GpuShareHolders * h);
guint gpushare_holders_count (const GpuShareHolders * h);
/* processes without a pidfd: only their word lets go of them */
guint gpushare_holders_unwatched (const GpuShareHolders * h);

GpuShareRetained *gpushare_retained_new (guint max, GDestroyNotify free_func);
/* frees every allocation, held or not (the owner stops) */
void gpushare_retained_free (GpuShareRetained * r);
/* reaps, then TRUE when one more allocation may be retained */
gboolean gpushare_retained_has_room (GpuShareRetained * r);
/* takes resource and holders: freed now when nobody holds it, kept
 * otherwise (past max too: the caller asks has_room () first) */
void gpushare_retained_add (GpuShareRetained * r, guint64 epoch,
    gpointer resource, GpuShareHolders * holders);
/* id let go of the allocation of epoch, or of every one when epoch is
 * G_MAXUINT64; frees what nobody holds any more.  The number freed. */
guint gpushare_retained_release (GpuShareRetained * r, guint id,
    guint64 epoch);
/* forgets exited holders and frees what nobody holds: the number freed */
guint gpushare_retained_reap (GpuShareRetained * r);
guint gpushare_retained_count (const GpuShareRetained * r);

G_END_DECLS

#endif /* __GPUSHARE_RETAIN_H__ */

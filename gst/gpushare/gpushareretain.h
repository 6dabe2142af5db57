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
 * handed back as soon as it has none (gpushare_retained_take_freed (): the
 * caller frees them outside its lock); at most max of them (the caller
 * refuses to make more until one is freed), all freed by
 * gpushare_retained_free ().
 *
 * Not thread-safe: the caller locks.
 */

#ifndef __GPUSHARE_RETAIN_H__
#define __GPUSHARE_RETAIN_H__

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* connections of one process remembered after they hung up without a
 * word, at most; the oldest is forgotten */
#define GPUSHARE_RETAIN_MAX_IDS 64

typedef struct _GpuShareHolders GpuShareHolders;
typedef struct _GpuShareRetained GpuShareRetained;

/* a pidfd (CLOEXEC) of process pid, or -1 (errno ESRCH: it is gone) */
gint gpushare_pidfd_open (pid_t pid);

GpuShareHolders *gpushare_holders_new (void);
/* closes every pidfd */
void gpushare_holders_free (GpuShareHolders * h);
/* process pid has the allocation now, through connection id.  Its exit
 * is watched through a duplicate of pidfd (the caller keeps its own,
 * opened when the process connected, so that a pid used again by then is
 * not mistaken for it); with pidfd -1 only gpushare_holders_release () of
 * each of its connections lets go of it.  A process that has exited
 * already holds nothing. */
void gpushare_holders_add (GpuShareHolders * h, guint id, pid_t pid,
    uid_t uid, gint pidfd);
/* connection id let go (the process does once all its connections
 * did): TRUE when it was a holder */
gboolean gpushare_holders_release (GpuShareHolders * h, guint id);
/* forgets the processes that exited; the number of processes left */
guint gpushare_holders_reap (GpuShareHolders * h);
guint gpushare_holders_count (const GpuShareHolders * h);
/* processes without a pidfd: only their word lets go of them */
guint gpushare_holders_unwatched (const GpuShareHolders * h);
/* TRUE when process pid holds it (it may reconnect as often as it likes:
 * it is one process) */
gboolean gpushare_holders_has_pid (const GpuShareHolders * h, pid_t pid);
/* the caller's word on a connection: still connected */
typedef gboolean (*GpuShareHoldersLiveFunc) (guint id, gpointer user_data);
/* processes of uid that hold it through no connection live () calls
 * connected: they hung up without a word and live on (each watched
 * through a pidfd of the caller's, or never let go of without one) */
guint gpushare_holders_count_gone (const GpuShareHolders * h, uid_t uid,
    GpuShareHoldersLiveFunc live, gpointer user_data);

GpuShareRetained *gpushare_retained_new (guint max, GDestroyNotify free_func);
/* frees every allocation, held or not (the owner stops) */
void gpushare_retained_free (GpuShareRetained * r);
/* reaps, then TRUE when one more allocation may be retained */
gboolean gpushare_retained_has_room (GpuShareRetained * r);
/* takes resource and holders: handed back now when nobody holds it, kept
 * otherwise (past max too: the caller asks has_room () first) */
void gpushare_retained_add (GpuShareRetained * r, guint64 epoch,
    gpointer resource, GpuShareHolders * holders);
/* id let go of the allocation of epoch, or of every one when epoch is
 * G_MAXUINT64; hands back what nobody holds any more: the number. */
guint gpushare_retained_release (GpuShareRetained * r, guint id,
    guint64 epoch);
/* forgets exited holders and hands back what nobody holds: the number */
guint gpushare_retained_reap (GpuShareRetained * r);
/* what was handed back since the last call, in an array that frees it
 * when unreffed; NULL when nothing was */
GPtrArray *gpushare_retained_take_freed (GpuShareRetained * r);
guint gpushare_retained_count (const GpuShareRetained * r);

G_END_DECLS

#endif /* __GPUSHARE_RETAIN_H__ */

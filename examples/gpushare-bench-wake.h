/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How late a sleeping process runs again once another one wakes it, on
 * this host: the floor under the tail of any handoff that wakes its
 * consumer (gpushare-bench prints it above its paced rows;
 * gpushare-wake-bench prints it alone).
 */

#ifndef __GPUSHARE_BENCH_WAKE_H__
#define __GPUSHARE_BENCH_WAKE_H__

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  GPUSHARE_WAKE_FUTEX,          /* a futex word in shared memory: the lane's bell */
  GPUSHARE_WAKE_EVENTFD,        /* an eventfd the child polls: a socket's path */
  GPUSHARE_WAKE_SLEEP,          /* no child: a sleep of pace_us, how late it ends */
} GpuShareWakeMeans;

/* A child process, asleep, is woken n times by means, one every pace_us
 * (each time once it sleeps again).  late: n values, the microseconds
 * from each wake to the child running, sorted.  FALSE, and late
 * untouched, where no shared memory, eventfd or child could be had. */
gboolean gpushare_wake_probe (GpuShareWakeMeans means, guint n, guint pace_us,
    gint64 * late);

/* What waking costs the waker: m child processes, asleep, woken n times,
 * one every pace_us, each on a futex word of its own with a wake each
 * (one_word FALSE: a frame lane's bell a consumer), or all on one word
 * with one wake for all (one_word TRUE); m = 0: the sleeps alone.
 * *cpu_us: the waker's CPU time a round, its sleep included.  FALSE where
 * no shared memory or child could be had. */
gboolean gpushare_wake_cost (guint m, gboolean one_word, guint n,
    guint pace_us, gdouble * cpu_us);

G_END_DECLS

#endif /* __GPUSHARE_BENCH_WAKE_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a frame's time goes: the durations of one stage of the handoff
 * (the sink's wait for a slot, its write, its publish; the src's handoff
 * from the control thread to the buffer it pushes), over the last
 * GPUSHARE_TIMING_SAMPLES frames, as p50 and p99 in microseconds for the
 * stats.  Thread-safe; adding a sample takes a lock and no allocation.
 */

#ifndef __GPUSHARE_TIMING_H__
#define __GPUSHARE_TIMING_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GPUSHARE_TIMING_SAMPLES 256

typedef struct
{
  GMutex lock;
  guint32 us[GPUSHARE_TIMING_SAMPLES];
  guint n;                      /* samples held, up to the size */
  guint next;                   /* where the next goes */
} GpuShareTiming;

void gpushare_timing_init (GpuShareTiming * t);
void gpushare_timing_clear (GpuShareTiming * t);
/* forgets every sample */
void gpushare_timing_reset (GpuShareTiming * t);
/* a duration in microseconds (negative ones count as 0, larger ones than
 * G_MAXUINT32 as G_MAXUINT32) */
void gpushare_timing_add (GpuShareTiming * t, gint64 us);
/* the median and the 99th percentile of the samples held, 0 without any */
void gpushare_timing_get (GpuShareTiming * t, guint * p50, guint * p99);
/* sets name-p50 and name-p99 (guint, microseconds) in s */
void gpushare_timing_set_fields (GpuShareTiming * t, GstStructure * s,
    const gchar * name);

/* A poll of a word in shared memory: one step's hint to the CPU (no
 * system call), and how often the poll lets other threads of its CPU run
 * (sched_yield ()) */
static inline void
gpushare_cpu_relax (void)
{
#if defined (__x86_64__) || defined (__i386__)
  __builtin_ia32_pause ();
#elif defined (__aarch64__)
  __asm__ __volatile__ ("yield");
#endif
}

#define GPUSHARE_POLL_YIELD_US 20

G_END_DECLS

#endif /* __GPUSHARE_TIMING_H__ */

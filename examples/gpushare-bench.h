/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two parts of gpushare-bench share: the options, the clocks, the
 * children, the statistics.  gpushare-bench.c runs one producer and one
 * consumer per row; gpushare-bench-scale.c runs K streams and M consumers
 * of each (--streams).
 */

#ifndef __GPUSHARE_BENCH_H__
#define __GPUSHARE_BENCH_H__

#include <gio/gio.h>
#include <gst/gst.h>
#include <signal.h>

G_BEGIN_DECLS

typedef enum
{
  KEY_OFFSET,                   /* GST_BUFFER_OFFSET travels with the frame */
  KEY_ORDER,                    /* it does not: the n-th frame is frame n */
} FrameKey;

typedef struct
{
  /* parent */
  gchar *sizes;
  gchar *modes;
  gboolean markdown;
  gboolean verbose;
  gboolean list;
  gboolean mps;
  gboolean targets;
  gint max_time_s;
  /* many streams (gpushare-bench-scale.c) */
  gchar *streams;
  gint consumers;
  gchar *topology;
  gint fps;
  gint warmup_s;
  gchar *phase;                 /* --phase: aligned (NULL) or spread */
  gchar *plot;
  gchar *plot_from;
  /* both */
  gint frames;
  gint ring;
  gint repeat;
  gint pace_us;
  gint analytics;                /* --analytics: detections a frame */
  gboolean mask;                /* --mask: and a mask as large as the frame */
  gint timeout_s;
  /* children */
  gchar *mode;
  gchar *socket;
  gchar *stamps;
  gchar *hold;
  gint width, height;
  gint first, count, index;
  gint spread;                  /* phases over this many streams (0: aligned) */
  gchar *go;
  gchar *ready;
  gchar *end;
} Options;

extern Options opt;
/* SIGINT, SIGTERM or SIGHUP caught by the parent (on_signal ()) */
extern volatile sig_atomic_t interrupted;
void on_signal (int sig);

gint64 now_ns (void);
/* user + system time of every thread of this process */
gint64 cpu_ns (void);
/* GPUs nvidia-smi lists; 0 without one */
gint gpu_count (void);
/* the first of needs (element names, separated by spaces) that is not
 * installed, in words; NULL where all are */
gchar *missing_elements (const gchar * needs);
/* --mps: one MPS daemon of our own (gpushare-bench.c).  prepare once,
 * before the first row: why_not then says why MPS rows cannot run here
 * (NULL: they can); start before the rows, stop after them, cleanup at
 * the end; set_env gives a child the daemon's folders */
void mps_prepare (void);
const gchar *mps_why_not (void);
gboolean mps_start (gchar ** why);
void mps_stop (void);
void mps_cleanup (void);
void mps_set_env (GSubprocessLauncher * l);
gboolean running (GSubprocess * p);
gboolean wait_exit (GSubprocess * p, gint64 timeout_us);
gint percentile_index (gint n, gint q);
gint cmp_gint64 (gconstpointer a, gconstpointer b);
gdouble median (gdouble * v, gint n);
/* the templates' @CAPS@ @FRAMES@ @RING@ @SHMSIZE@ @SOCKET@ for w x h */
gchar *expand (const gchar * tmpl, gint w, gint h);
gboolean parse_size (const gchar * s, gint * w, gint * h);

/* gpushare-bench-scale.c */
gboolean scale_list (void);
gint scale_run_parent (const gchar * self);
gint scale_replot (void);
gint scale_run_side (const gchar * role);

G_END_DECLS

#endif /* __GPUSHARE_BENCH_H__ */

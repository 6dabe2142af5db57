/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharetiming.h"

#include <stdlib.h>
#include <string.h>

void
gpushare_timing_init (GpuShareTiming * t)
{
  memset (t, 0, sizeof (*t));
  g_mutex_init (&t->lock);
}

void
gpushare_timing_clear (GpuShareTiming * t)
{
  g_mutex_clear (&t->lock);
}

void
gpushare_timing_reset (GpuShareTiming * t)
{
  g_mutex_lock (&t->lock);
  t->n = t->next = 0;
  g_mutex_unlock (&t->lock);
}

void
gpushare_timing_add (GpuShareTiming * t, gint64 us)
{
  guint32 v = us < 0 ? 0 : us > G_MAXUINT32 ? G_MAXUINT32 : (guint32) us;

  g_mutex_lock (&t->lock);
  t->us[t->next] = v;
  t->next = (t->next + 1) % GPUSHARE_TIMING_SAMPLES;
  if (t->n < GPUSHARE_TIMING_SAMPLES)
    t->n++;
  g_mutex_unlock (&t->lock);
}

static gint
cmp_u32 (gconstpointer a, gconstpointer b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;

  return x < y ? -1 : x > y;
}

void
gpushare_timing_get (GpuShareTiming * t, guint * p50, guint * p99)
{
  guint32 sorted[GPUSHARE_TIMING_SAMPLES];
  guint n;

  g_mutex_lock (&t->lock);
  n = t->n;
  memcpy (sorted, t->us, n * sizeof (guint32));
  g_mutex_unlock (&t->lock);
  if (n == 0) {
    *p50 = *p99 = 0;
    return;
  }
  qsort (sorted, n, sizeof (guint32), cmp_u32);
  /* nearest rank */
  *p50 = sorted[(n * 50 + 99) / 100 - 1];
  *p99 = sorted[(n * 99 + 99) / 100 - 1];
}

void
gpushare_timing_set_fields (GpuShareTiming * t, GstStructure * s,
    const gchar * name)
{
  gchar *f50 = g_strconcat (name, "-p50", NULL);
  gchar *f99 = g_strconcat (name, "-p99", NULL);
  guint p50, p99;

  gpushare_timing_get (t, &p50, &p99);
  gst_structure_set (s, f50, G_TYPE_UINT, p50, f99, G_TYPE_UINT, p99, NULL);
  g_free (f50);
  g_free (f99);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How long a sleeping process takes to run again once another one wakes
 * it, on this host: the floor under the tail of a paced handoff, which
 * wakes the consumer once a frame (docs/benchmarks.md).  A parent process
 * wakes a child every PACE_US microseconds, by the two means gpushare
 * uses: a futex word in shared memory (the frame lane's bell) and an
 * eventfd the child polls (a socket's wake-up is the same path); and,
 * for comparison, how late a sleep of PACE_US itself ends.  Then what
 * the waking costs the waker, in CPU a round: four sleepers woken on a
 * word each with a wake each (four consumers' lane bells), against the
 * four on one word woken by one call.  It needs no GPU and prints
 * figures; it is not a test.
 *
 *   gpushare-wake-bench [WAKES] [PACE_US]
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <glib.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpushare-bench-wake.h"

/* v sorted */
static void
report (const gchar * what, const gint64 * v, guint n)
{
  g_print ("| %s | %u | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %"
      G_GINT64_FORMAT " | %" G_GINT64_FORMAT " |\n", what, n, v[n / 2],
      v[n * 9 / 10], v[n * 99 / 100], v[n - 1]);
}

static void
run (GpuShareWakeMeans means, guint n, guint pace_us)
{
  gint64 *late = g_new (gint64, n);

  if (!gpushare_wake_probe (means, n, pace_us, late))
    g_error ("no child process to wake");
  report (means == GPUSHARE_WAKE_FUTEX ? "futex wake of a sleeping process" :
      means == GPUSHARE_WAKE_EVENTFD ? "eventfd written, a process in poll ()" :
      "a sleep's end, after its time", late, n);
  g_free (late);
}

static void
cost (const gchar * what, guint m, gboolean one_word, guint n, guint pace_us)
{
  gdouble us = 0;

  if (!gpushare_wake_cost (m, one_word, n, pace_us, &us))
    g_error ("no child process to wake");
  g_print ("| %s | %.1f |\n", what, us);
}

int
main (int argc, char **argv)
{
  guint n = argc > 1 ? (guint) atoi (argv[1]) : 2000;
  guint pace = argc > 2 ? (guint) atoi (argv[2]) : 1000;

  if (n < 10)
    n = 2000;
  if (pace == 0)
    pace = 1000;
  g_print ("%u wake-ups, one every %u us, %ld CPUs\n\n", n, pace,
      sysconf (_SC_NPROCESSORS_ONLN));
  g_print ("| what (us late) | n | p50 | p90 | p99 | max |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  run (GPUSHARE_WAKE_FUTEX, n, pace);
  run (GPUSHARE_WAKE_EVENTFD, n, pace);
  run (GPUSHARE_WAKE_SLEEP, n, pace);
  g_print ("\n| the waker's CPU (us a round, its sleep of %u us included) | "
      "us |\n|---|---:|\n", pace);
  cost ("its sleep alone", 0, FALSE, n, pace);
  cost ("1 sleeper, its word and one wake", 1, FALSE, n, pace);
  cost ("4 sleepers, a word and a wake each", 4, FALSE, n, pace);
  cost ("4 sleepers on one word, one wake for all", 4, TRUE, n, pace);
  return 0;
}

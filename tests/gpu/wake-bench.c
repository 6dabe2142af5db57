/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How long a sleeping process takes to run again once another one wakes
 * it, on this host: the floor under the tail of a paced handoff, which
 * wakes the consumer once a frame (docs/benchmarks.md).  A parent process
 * wakes a child every PACE_US microseconds, by the two means gpushare
 * uses: a futex word in shared memory (the frame lane's bell) and an
 * eventfd the child polls (a socket's wake-up is the same path); and,
 * for comparison, how late a sleep of PACE_US itself ends.  It needs no
 * GPU and prints figures; it is not a test.
 *
 *   gpushare-wake-bench [WAKES] [PACE_US]
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <glib.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

typedef struct
{
  gint word;                    /* futex */
  gint64 stamp;                 /* monotonic, us: when the parent woke */
  gint done;
  guint n;
  gint64 late[];                /* the child's results */
} Shared;

static void
futex (gint * word, gint op, gint val)
{
  syscall (SYS_futex, word, op, val, NULL, NULL, 0);
}

static gint
cmp_i64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

static void
report (const gchar * what, gint64 * v, guint n)
{
  qsort (v, n, sizeof (gint64), cmp_i64);
  g_print ("| %s | %u | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %"
      G_GINT64_FORMAT " | %" G_GINT64_FORMAT " |\n", what, n, v[n / 2],
      v[n * 9 / 10], v[n * 99 / 100], v[n - 1]);
}

/* means: 0 futex, 1 eventfd */
static void
run (guint means, guint n, guint pace_us)
{
  gsize size = sizeof (Shared) + n * sizeof (gint64);
  Shared *sh = mmap (NULL, size, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  gint efd = eventfd (0, EFD_CLOEXEC);
  pid_t pid;
  guint i;

  g_assert (sh != MAP_FAILED && efd >= 0);
  memset (sh, 0, size);
  pid = fork ();
  g_assert (pid >= 0);
  if (pid == 0) {
    for (i = 0; i < n; i++) {
      if (means == 0) {
        while (g_atomic_int_get (&sh->word) == (gint) i)
          futex (&sh->word, FUTEX_WAIT, (gint) i);
      } else {
        struct pollfd p = { efd, POLLIN, 0 };
        guint64 v;

        while (poll (&p, 1, -1) < 0 && errno == EINTR);
        if (read (efd, &v, sizeof (v)) != sizeof (v))
          _exit (1);
      }
      sh->late[i] = g_get_monotonic_time () - sh->stamp;
      g_atomic_int_set (&sh->done, (gint) i + 1);
    }
    _exit (0);
  }
  for (i = 0; i < n; i++) {
    g_usleep (pace_us);
    /* the child is asleep again */
    while (g_atomic_int_get (&sh->done) != (gint) i)
      g_usleep (10);
    sh->stamp = g_get_monotonic_time ();
    if (means == 0) {
      g_atomic_int_set (&sh->word, (gint) i + 1);
      futex (&sh->word, FUTEX_WAKE, 1);
    } else {
      guint64 one = 1;

      if (write (efd, &one, sizeof (one)) != sizeof (one))
        g_error ("eventfd write failed");
    }
  }
  waitpid (pid, NULL, 0);
  report (means == 0 ? "futex wake of a sleeping process" :
      "eventfd written, a process in poll ()", sh->late, n);
  close (efd);
  munmap (sh, size);
}

int
main (int argc, char **argv)
{
  guint n = argc > 1 ? (guint) atoi (argv[1]) : 2000;
  guint pace = argc > 2 ? (guint) atoi (argv[2]) : 1000, i;
  gint64 *late;

  if (n < 10)
    n = 2000;
  if (pace == 0)
    pace = 1000;
  g_print ("%u wake-ups, one every %u us, %ld CPUs\n\n", n, pace,
      sysconf (_SC_NPROCESSORS_ONLN));
  g_print ("| what (us late) | n | p50 | p90 | p99 | max |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  run (0, n, pace);
  run (1, n, pace);
  late = g_new (gint64, n);
  for (i = 0; i < n; i++) {
    gint64 t = g_get_monotonic_time ();

    g_usleep (pace);
    late[i] = g_get_monotonic_time () - t - pace;
  }
  report ("a sleep's end, after its time", late, n);
  g_free (late);
  return 0;
}

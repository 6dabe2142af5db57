/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wake-up probe of gpushare-bench and gpushare-wake-bench: a parent
 * wakes a child every pace_us; the child writes down how late it ran.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define _GNU_SOURCE             /* RUSAGE_THREAD */

#include "gpushare-bench-wake.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

typedef struct
{
  gint word;                    /* futex */
  gint64 stamp;                 /* monotonic, us: when the parent woke */
  gint done;
  gint64 late[];                /* the child's results */
} Shared;

static void
futex (gint * word, gint op, gint val)
{
  syscall (SYS_futex, word, op, val, NULL, NULL, 0);
}

/* in a child: gone with its parent, even one killed (then the child
 * would sleep on its word for ever) */
static void
die_with (pid_t parent)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () != parent)
    _exit (1);
}

static gint
cmp_i64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

gboolean
gpushare_wake_probe (GpuShareWakeMeans means, guint n, guint pace_us,
    gint64 * late)
{
  gsize size = sizeof (Shared) + n * sizeof (gint64);
  Shared *sh = mmap (NULL, size, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  gint efd = eventfd (0, EFD_CLOEXEC);
  gboolean ok = FALSE;
  gint status = 0;
  pid_t pid = -1, parent;
  guint i;

  if (sh == MAP_FAILED || n == 0)
    goto out;
  if (means == GPUSHARE_WAKE_SLEEP) {
    for (i = 0; i < n; i++) {
      gint64 t = g_get_monotonic_time ();

      g_usleep (pace_us);
      sh->late[i] = g_get_monotonic_time () - t - pace_us;
    }
    ok = TRUE;
    goto out;
  }
  if (efd < 0)
    goto out;
  memset (sh, 0, size);
  parent = getpid ();
  pid = fork ();
  if (pid < 0)
    goto out;
  if (pid == 0) {
    die_with (parent);
    for (i = 0; i < n; i++) {
      if (means == GPUSHARE_WAKE_FUTEX) {
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
  for (i = 0; i < n && pid > 0; i++) {
    g_usleep (pace_us);
    /* the child is asleep again, or gone */
    while (g_atomic_int_get (&sh->done) != (gint) i && pid > 0) {
      if (waitpid (pid, &status, WNOHANG) == pid)
        pid = 0;
      g_usleep (10);
    }
    if (pid == 0)
      break;
    sh->stamp = g_get_monotonic_time ();
    if (means == GPUSHARE_WAKE_FUTEX) {
      g_atomic_int_set (&sh->word, (gint) i + 1);
      futex (&sh->word, FUTEX_WAKE, 1);
    } else {
      guint64 one = 1;

      if (write (efd, &one, sizeof (one)) != sizeof (one))
        break;
    }
  }
  if (pid > 0) {
    if (i < n)
      kill (pid, SIGKILL);
    ok = waitpid (pid, &status, 0) == pid && i == n && WIFEXITED (status)
        && WEXITSTATUS (status) == 0;
  }
out:
  if (ok) {
    memcpy (late, sh->late, n * sizeof (gint64));
    qsort (late, n, sizeof (gint64), cmp_i64);
  }
  if (efd >= 0)
    close (efd);
  if (sh != MAP_FAILED)
    munmap (sh, size);
  return ok;
}

/* the calling thread's CPU time, us */
static gdouble
thread_cpu_us (void)
{
  struct rusage r;

  if (getrusage (RUSAGE_THREAD, &r) < 0)
    return 0;
  return r.ru_utime.tv_sec * 1e6 + r.ru_utime.tv_usec +
      r.ru_stime.tv_sec * 1e6 + r.ru_stime.tv_usec;
}

/* a word a cache line */
#define WORD_STRIDE 16

/* child c's word among w's: the first for all with one_word */
static gint *
child_word (gint * w, gboolean one_word, guint c)
{
  return &w[one_word ? 0 : c * WORD_STRIDE];
}

gboolean
gpushare_wake_cost (guint m, gboolean one_word, guint n, guint pace_us,
    gdouble * cpu_us)
{
  gsize size = (m + 1) * WORD_STRIDE * sizeof (gint);
  gint *w = mmap (NULL, size, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t *pids = g_new0 (pid_t, MAX (m, 1));
  gboolean ok = w != MAP_FAILED && n > 0;
  pid_t parent = getpid ();
  gdouble t0;
  guint c, i;

  for (c = 0; ok && c < m; c++) {
    pids[c] = fork ();
    if (pids[c] < 0) {
      ok = FALSE;
      break;
    }
    if (pids[c] == 0) {
      gint *word = child_word (w, one_word, c);
      gint seen = 0, v;

      die_with (parent);
      /* until the parent writes -1 */
      while ((v = g_atomic_int_get (word)) >= 0) {
        if (v == seen)
          futex (word, FUTEX_WAIT, seen);
        else
          seen = v;
      }
      _exit (0);
    }
  }
  if (ok) {
    /* every child asleep on its word before the first round */
    g_usleep (100000);
    t0 = thread_cpu_us ();
    for (i = 1; i <= n; i++) {
      g_usleep (pace_us);
      if (m > 0 && one_word) {
        g_atomic_int_set (&w[0], (gint) i);
        futex (&w[0], FUTEX_WAKE, G_MAXINT);
      } else {
        for (c = 0; c < m; c++) {
          g_atomic_int_set (child_word (w, FALSE, c), (gint) i);
          futex (child_word (w, FALSE, c), FUTEX_WAKE, 1);
        }
      }
    }
    *cpu_us = (thread_cpu_us () - t0) / n;
  }
  for (c = 0; w != MAP_FAILED && c < m; c++) {
    g_atomic_int_set (child_word (w, one_word, c), -1);
    futex (child_word (w, one_word, c), FUTEX_WAKE, G_MAXINT);
  }
  for (c = 0; c < m; c++)
    if (pids[c] > 0)
      waitpid (pids[c], NULL, 0);
  g_free (pids);
  if (w != MAP_FAILED)
    munmap (w, size);
  return ok;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory kept for processes that may still have it open: GpuShareHolders
 * and GpuShareRetained, with real child processes and real pidfds.  An
 * allocation goes as soon as nobody can hold it: every connection let go
 * (UNMAPPED, GOODBYE), or every process exited; never before.  The bound
 * holds, and no pidfd is left open.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpushare-check-util.h"
#include "gpushareretain.h"

/* what the free function saw */
static gint freed[16];

static void
free_marker (gpointer p)
{
  freed[GPOINTER_TO_INT (p)]++;
}

static void
reset (void)
{
  memset (freed, 0, sizeof (freed));
}

/* frees what the list handed back, as its owner does outside its lock;
 * the number freed */
static guint
collect (GpuShareRetained * r)
{
  GPtrArray *a = gpushare_retained_take_freed (r);
  guint n = a ? a->len : 0;

  if (a)
    g_ptr_array_unref (a);
  return n;
}

static gboolean
have_pidfd (void)
{
  gint fd = gpushare_pidfd_open (getpid ());

  if (fd >= 0) {
    close (fd);
    return TRUE;
  }
  return FALSE;
}

/* adds pid as its owner does: with a pidfd opened when it connected, kept
 * by the owner (here: closed at once, the holder has its own) */
static void
add_uid (GpuShareHolders * h, guint id, pid_t pid, uid_t uid)
{
  gint pidfd = gpushare_pidfd_open (pid);

  gpushare_holders_add (h, id, pid, uid, pidfd);
  if (pidfd >= 0)
    close (pidfd);
}

static void
add (GpuShareHolders * h, guint id, pid_t pid)
{
  gint pidfd = gpushare_pidfd_open (pid);

  gpushare_holders_add (h, id, pid, 1000, pidfd);
  if (pidfd >= 0)
    close (pidfd);
}

/* every connection of every process must let go */
GST_START_TEST (test_release_by_connection)
{
  GpuShareRetained *r = gpushare_retained_new (4, free_marker);
  GpuShareHolders *h = gpushare_holders_new ();
  gint fds = count_fds ();

  reset ();
  /* pid 0: a process the kernel would not name (another pid namespace) */
  add (h, 1, 0);
  add (h, 2, 0);
  add (h, 3, getpid ());
  add (h, 3, getpid ());        /* once */
  fail_unless_equals_int (gpushare_holders_count (h), 2);
  fail_unless_equals_int (gpushare_holders_unwatched (h), have_pidfd ()? 1 : 2);
  gpushare_retained_add (r, 5, GINT_TO_POINTER (1), h);
  fail_unless_equals_int (gpushare_retained_count (r), 1);

  /* another epoch's word changes nothing; an unknown id neither */
  fail_unless_equals_int (gpushare_retained_release (r, 1, 4), 0);
  fail_unless_equals_int (gpushare_retained_release (r, 9, 5), 0);
  fail_unless_equals_int (gpushare_retained_release (r, 1, 5), 0);
  fail_unless_equals_int (gpushare_retained_release (r, 3, 5), 0);
  fail_unless_equals_int (gpushare_retained_reap (r), 0);
  fail_unless_equals_int (freed[1], 0);
  fail_unless_equals_int (collect (r), 0);
  /* the last connection: handed back, and freed once, by its owner */
  fail_unless_equals_int (gpushare_retained_release (r, 2, G_MAXUINT64), 1);
  fail_unless_equals_int (freed[1], 0);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[1], 1);
  fail_unless_equals_int (gpushare_retained_count (r), 0);
  fail_unless_equals_int (gpushare_retained_release (r, 2, 5), 0);
  fail_unless_equals_int (freed[1], 1);

  gpushare_retained_free (r);
  fail_unless_equals_int (count_fds (), fds);
}

GST_END_TEST;

/* a process that exits lets go of everything, whatever it said */
GST_START_TEST (test_release_by_exit)
{
  GpuShareRetained *r;
  GpuShareHolders *h;
  pid_t a, b;
  gint fds;

  if (!have_pidfd ()) {
    GST_INFO ("no pidfd_open on this kernel: nothing to test");
    return;
  }
  fds = count_fds ();
  reset ();
  a = spawn_idle_child ();
  b = spawn_idle_child ();
  r = gpushare_retained_new (4, free_marker);
  h = gpushare_holders_new ();
  add (h, 10, a);
  add (h, 11, a);
  add (h, 12, b);
  fail_unless_equals_int (gpushare_holders_unwatched (h), 0);
  /* one pidfd per process */
  fail_unless_equals_int (count_fds (), fds + 2);
  gpushare_retained_add (r, 1, GINT_TO_POINTER (2), h);

  /* alive and silent: kept, however often it is asked */
  fail_unless_equals_int (gpushare_retained_reap (r), 0);
  fail_unless_equals_int (gpushare_retained_reap (r), 0);

  kill_and_reap (a);
  fail_unless_equals_int (gpushare_retained_reap (r), 0);
  fail_unless_equals_int (freed[2], 0);
  fail_unless_equals_int (count_fds (), fds + 1);
  /* a stopped process is alive too */
  fail_unless_equals_int (kill (b, SIGSTOP), 0);
  fail_unless_equals_int (gpushare_retained_reap (r), 0);
  kill_and_reap (b);
  fail_unless_equals_int (gpushare_retained_reap (r), 1);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[2], 1);
  fail_unless_equals_int (gpushare_retained_count (r), 0);
  fail_unless_equals_int (count_fds (), fds);

  /* a process that is already gone when it is added */
  a = spawn_idle_child ();
  h = gpushare_holders_new ();
  add (h, 13, a);
  kill_and_reap (a);
  gpushare_retained_add (r, 2, GINT_TO_POINTER (3), h);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[3], 1);
  fail_unless_equals_int (count_fds (), fds);

  /* added after its process exited (the owner's pidfd is from before):
   * it holds nothing */
  a = spawn_idle_child ();
  {
    gint pidfd = gpushare_pidfd_open (a);

    kill_and_reap (a);
    h = gpushare_holders_new ();
    gpushare_holders_add (h, 14, a, 1000, pidfd);
    fail_unless_equals_int (gpushare_holders_count (h), 0);
    gpushare_holders_free (h);
    close (pidfd);
  }

  /* a process that exited, and another one that got its pid: the new one
   * is a holder of its own (simulated with our own pid for the new one,
   * the dead child's pidfd for the old one) */
  a = spawn_idle_child ();
  {
    gint dead = gpushare_pidfd_open (a);
    gint me = gpushare_pidfd_open (getpid ());

    h = gpushare_holders_new ();
    gpushare_holders_add (h, 15, a, 1000, dead);
    kill_and_reap (a);
    fail_unless_equals_int (gpushare_holders_reap (h), 0);
    gpushare_holders_add (h, 16, getpid (), 1000, me);
    fail_unless_equals_int (gpushare_holders_count (h), 1);
    fail_unless_equals_int (gpushare_holders_reap (h), 1);
    gpushare_holders_free (h);
    close (dead);
    close (me);
  }
  fail_unless_equals_int (count_fds (), fds);
  gpushare_retained_free (r);
}

GST_END_TEST;

/* at most max allocations wait; freeing one makes room */
GST_START_TEST (test_bound)
{
  GpuShareRetained *r = gpushare_retained_new (2, free_marker);
  GpuShareHolders *h;
  gint fds = count_fds ();
  guint i;

  reset ();
  fail_unless (gpushare_retained_has_room (r));
  for (i = 0; i < 2; i++) {
    h = gpushare_holders_new ();
    add (h, 20 + i, 0);
    gpushare_retained_add (r, i, GINT_TO_POINTER (4 + i), h);
  }
  fail_if (gpushare_retained_has_room (r));
  fail_unless_equals_int (gpushare_retained_count (r), 2);
  /* nobody holds this one: it never waits */
  gpushare_retained_add (r, 9, GINT_TO_POINTER (6), NULL);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[6], 1);
  fail_unless_equals_int (gpushare_retained_count (r), 2);

  fail_unless_equals_int (gpushare_retained_release (r, 21, 1), 1);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[5], 1);
  fail_unless (gpushare_retained_has_room (r));

  /* the owner stops: everything goes, held or not */
  gpushare_retained_free (r);
  fail_unless_equals_int (freed[4], 1);
  fail_unless_equals_int (count_fds (), fds);
}

GST_END_TEST;

/* a process that reconnects forever costs a bounded list */
GST_START_TEST (test_ids_per_process_bounded)
{
  GpuShareRetained *r = gpushare_retained_new (1, free_marker);
  GpuShareHolders *h = gpushare_holders_new ();
  guint i;

  reset ();
  for (i = 0; i < 1000; i++)
    add (h, 100 + i, 0);
  fail_unless_equals_int (gpushare_holders_count (h), 1);
  gpushare_retained_add (r, 1, GINT_TO_POINTER (7), h);
  /* the oldest were forgotten: the newest 64 are what keeps it */
  fail_unless_equals_int (gpushare_retained_release (r, 100, 1), 0);
  for (i = 1000 - 64; i < 999; i++)
    fail_unless_equals_int (gpushare_retained_release (r, 100 + i, 1), 0);
  fail_unless_equals_int (freed[7], 0);
  fail_unless_equals_int (gpushare_retained_release (r, 100 + 999, 1), 1);
  fail_unless_equals_int (collect (r), 1);
  fail_unless_equals_int (freed[7], 1);
  gpushare_retained_free (r);
}

GST_END_TEST;

/* connections 1000 and up are connected */
static gboolean
live_from_1000 (guint id, gpointer user_data)
{
  return id >= 1000;
}

/* processes that hold it through no live connection, counted by uid: one
 * that reconnected (a live connection beside the ones that hung up) is
 * not gone; one that exited is no holder; its pid is known while it
 * holds */
GST_START_TEST (test_gone_by_uid)
{
  GpuShareHolders *h = gpushare_holders_new ();
  gint fds = count_fds ();
  pid_t kids[3];
  guint i;

  for (i = 0; i < 3; i++)
    kids[i] = spawn_idle_child ();
  /* uid 1000: kids 0 and 1 hung up (ids 1, 2); kid 2 hung up (3) and
   * came back (1003); uid 1001: this process, hung up (4) */
  add_uid (h, 1, kids[0], 1000);
  add_uid (h, 2, kids[1], 1000);
  add_uid (h, 3, kids[2], 1000);
  add_uid (h, 1003, kids[2], 1000);
  add_uid (h, 4, getpid (), 1001);
  fail_unless_equals_int (gpushare_holders_count (h), 4);
  fail_unless_equals_int (gpushare_holders_count_gone (h, 1000,
          live_from_1000, NULL), 2);
  fail_unless_equals_int (gpushare_holders_count_gone (h, 1001,
          live_from_1000, NULL), 1);
  fail_unless_equals_int (gpushare_holders_count_gone (h, 1002,
          live_from_1000, NULL), 0);
  fail_unless (gpushare_holders_has_pid (h, kids[1]));
  fail_if (gpushare_holders_has_pid (h, 0));

  /* kid 1 exits: reaped, no longer counted, its pidfd closed (where the
   * kernel gives pidfds: not under valgrind, which knows no pidfd_open;
   * there only its word lets go of it) */
  kill_and_reap (kids[1]);
  if (have_pidfd ()) {
    fail_unless_equals_int (gpushare_holders_reap (h), 3);
    fail_unless_equals_int (gpushare_holders_count_gone (h, 1000,
            live_from_1000, NULL), 1);
    fail_if (gpushare_holders_has_pid (h, kids[1]));
  } else {
    fail_unless (gpushare_holders_release (h, 2));
  }
  /* kid 0's word */
  fail_unless (gpushare_holders_release (h, 1));
  fail_unless_equals_int (gpushare_holders_count_gone (h, 1000,
          live_from_1000, NULL), 0);

  kill_and_reap (kids[0]);
  kill_and_reap (kids[2]);
  gpushare_holders_free (h);
  fail_unless_equals_int (count_fds (), fds);
}

GST_END_TEST;

static Suite *
gpushareretain_suite (void)
{
  Suite *s = suite_create ("gpushareretain");
  TCase *tc = tcase_create ("retain");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_release_by_connection);
  tcase_add_test (tc, test_release_by_exit);
  tcase_add_test (tc, test_bound);
  tcase_add_test (tc, test_ids_per_process_bounded);
  tcase_add_test (tc, test_gone_by_uid);
  return s;
}

GST_CHECK_MAIN (gpushareretain);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process's one control thread (gpusharecontrol.c): every context
 * attached is run by one thread, a detached one runs no callback after the
 * detach returns (nor is one running), a callback may detach another
 * context, attaches and detaches race from many threads, and a child of
 * fork () runs its own thread.
 */

#include <gst/check/gstcheck.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpusharecontrol.h"
#include "gpushare-check-util.h"

typedef struct
{
  GMainContext *context;
  gint calls;                   /* atomic */
  gint inside;                  /* atomic: a callback runs */
  guint sleep_us;
} Counter;

static gboolean
count (gpointer data)
{
  Counter *c = data;

  g_atomic_int_set (&c->inside, 1);
  if (c->sleep_us)
    g_usleep (c->sleep_us);
  g_atomic_int_inc (&c->calls);
  g_atomic_int_set (&c->inside, 0);
  return G_SOURCE_CONTINUE;
}

static Counter *
counter_new (guint interval_ms, guint sleep_us)
{
  Counter *c = g_new0 (Counter, 1);
  GSource *source = interval_ms ? g_timeout_source_new (interval_ms) :
      g_idle_source_new ();

  c->context = g_main_context_new ();
  c->sleep_us = sleep_us;
  g_source_set_callback (source, count, c, NULL);
  g_source_attach (source, c->context);
  g_source_unref (source);
  return c;
}

static void
counter_free (Counter * c)
{
  g_main_context_unref (c->context);
  g_free (c);
}

static void
wait_calls (Counter * c, gint n)
{
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  while (g_atomic_int_get (&c->calls) < n) {
    fail_unless (g_get_monotonic_time () < end, "a context attached is not "
        "run: %d calls of %d", g_atomic_int_get (&c->calls), n);
    g_usleep (1000);
  }
}

#define N_CONTEXTS 16

GST_START_TEST (test_one_thread)
{
  Counter *c[N_CONTEXTS];
  guint i;

  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 0);
  for (i = 0; i < N_CONTEXTS; i++) {
    c[i] = counter_new (1, 0);
    gpushare_control_attach (c[i]->context);
  }
  for (i = 0; i < N_CONTEXTS; i++)
    wait_calls (c[i], 5);
  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 1);
  fail_unless_equals_int (gpushare_control_n_contexts (), N_CONTEXTS);
  for (i = 0; i < N_CONTEXTS; i++) {
    gpushare_control_detach (c[i]->context);
    counter_free (c[i]);
  }
  /* the last detach joined it */
  fail_unless_equals_int (gpushare_control_n_contexts (), 0);
  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 0);
}

GST_END_TEST;

/* a busy context (its callback always ready, 200 us each) detached while
 * another one keeps the thread alive: after the detach, no call is running
 * and none comes */
GST_START_TEST (test_detach_stops_callbacks)
{
  Counter *keep = counter_new (5, 0);
  guint round;

  gpushare_control_attach (keep->context);
  for (round = 0; round < 50; round++) {
    Counter *busy = counter_new (0, 200);
    gint calls;

    gpushare_control_attach (busy->context);
    wait_calls (busy, 1 + round % 3);
    gpushare_control_detach (busy->context);
    fail_unless (g_atomic_int_get (&busy->inside) == 0, "a callback still "
        "runs after the detach (round %u)", round);
    calls = g_atomic_int_get (&busy->calls);
    g_usleep (2000);
    fail_unless_equals_int (g_atomic_int_get (&busy->calls), calls);
    counter_free (busy);
  }
  gpushare_control_detach (keep->context);
  counter_free (keep);
  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 0);
}

GST_END_TEST;

typedef struct
{
  Counter *victim;
  gint done;                    /* atomic */
} Detacher;

static gboolean
detach_victim (gpointer data)
{
  Detacher *d = data;

  /* run by the control thread: no wait there, and no deadlock */
  gpushare_control_detach (d->victim->context);
  g_atomic_int_set (&d->done, 1);
  return G_SOURCE_REMOVE;
}

/* a callback of one context detaches another: it returns at once, and the
 * other runs no more */
GST_START_TEST (test_detach_from_callback)
{
  Counter *keep = counter_new (5, 0);
  Counter *victim = counter_new (1, 0);
  Detacher d = { victim, 0 };
  GMainContext *context = g_main_context_new ();
  GSource *source;
  gint calls;

  gpushare_control_attach (keep->context);
  gpushare_control_attach (victim->context);
  gpushare_control_attach (context);
  wait_calls (victim, 3);
  source = g_timeout_source_new (2);
  g_source_set_callback (source, detach_victim, &d, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  while (!g_atomic_int_get (&d.done))
    g_usleep (1000);
  calls = g_atomic_int_get (&victim->calls);
  g_usleep (20000);
  fail_unless_equals_int (g_atomic_int_get (&victim->calls), calls);
  fail_unless_equals_int (gpushare_control_n_contexts (), 2);
  counter_free (victim);
  gpushare_control_detach (context);
  g_main_context_unref (context);
  gpushare_control_detach (keep->context);
  counter_free (keep);
  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 0);
}

GST_END_TEST;

/* the last context detached by a callback of its own thread: the thread
 * ends by itself, and the next attach starts another */
static gboolean
detach_self (gpointer data)
{
  Detacher *d = data;

  gpushare_control_detach (d->victim->context);
  g_atomic_int_set (&d->done, 1);
  return G_SOURCE_REMOVE;
}

GST_START_TEST (test_last_detach_from_thread)
{
  Counter *c = counter_new (0, 0);
  Detacher d = { c, 0 };
  GSource *source = g_timeout_source_new (1);
  gint64 end = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  g_source_set_callback (source, detach_self, &d, NULL);
  g_source_attach (source, c->context);
  g_source_unref (source);
  gpushare_control_attach (c->context);
  while (!g_atomic_int_get (&d.done))
    g_usleep (1000);
  while (count_threads (GPUSHARE_CONTROL_THREAD_NAME) > 0) {
    fail_unless (g_get_monotonic_time () < end, "the thread did not end");
    g_usleep (1000);
  }
  fail_unless_equals_int (gpushare_control_n_contexts (), 0);
  counter_free (c);

  c = counter_new (1, 0);
  gpushare_control_attach (c->context);
  wait_calls (c, 3);
  gpushare_control_detach (c->context);
  counter_free (c);
}

GST_END_TEST;

#define N_RACERS 4
#define N_ROUNDS 100

static gpointer
racer (gpointer data)
{
  guint i;

  for (i = 0; i < N_ROUNDS; i++) {
    Counter *c = counter_new (i % 2, 0);

    gpushare_control_attach (c->context);
    if (i % 3 == 0)
      wait_calls (c, 1);
    gpushare_control_detach (c->context);
    fail_unless (g_atomic_int_get (&c->inside) == 0);
    counter_free (c);
  }
  return NULL;
}

/* attaches and detaches from several threads at once, the thread started
 * and stopped under them */
GST_START_TEST (test_attach_detach_race)
{
  GThread *t[N_RACERS];
  guint i;

  for (i = 0; i < N_RACERS; i++)
    t[i] = g_thread_new ("racer", racer, NULL);
  for (i = 0; i < N_RACERS; i++)
    g_thread_join (t[i]);
  fail_unless_equals_int (gpushare_control_n_contexts (), 0);
  fail_unless_equals_int (count_threads (GPUSHARE_CONTROL_THREAD_NAME), 0);
}

GST_END_TEST;

/* a child of fork () has no control thread of its parent's: it starts its
 * own for the contexts it attaches */
GST_START_TEST (test_fork_child)
{
  Counter *c = counter_new (1, 0);
  pid_t pid;
  gint status;

  gpushare_control_attach (c->context);
  wait_calls (c, 2);
  pid = fork ();
  fail_if (pid < 0);
  if (pid == 0) {
    Counter *mine = counter_new (1, 0);
    gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    gpushare_control_attach (mine->context);
    while (g_atomic_int_get (&mine->calls) < 3 && g_get_monotonic_time () < end)
      g_usleep (1000);
    _exit (g_atomic_int_get (&mine->calls) >= 3
        && count_threads (GPUSHARE_CONTROL_THREAD_NAME) == 1 ? 0 : 1);
  }
  fail_unless (waitpid (pid, &status, 0) == pid);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0,
      "the child's context was not run");
  gpushare_control_detach (c->context);
  counter_free (c);
}

GST_END_TEST;

static Suite *
control_suite (void)
{
  Suite *s = suite_create ("gpusharecontrol");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_one_thread);
  tcase_add_test (tc, test_detach_stops_callbacks);
  tcase_add_test (tc, test_detach_from_callback);
  tcase_add_test (tc, test_last_detach_from_thread);
  tcase_add_test (tc, test_attach_detach_race);
  tcase_add_test (tc, test_fork_child);
  return s;
}

GST_CHECK_MAIN (control);

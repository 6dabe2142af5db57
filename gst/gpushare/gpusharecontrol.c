/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One control thread per process.  A producer or consumer core keeps its
 * sources in a GMainContext of its own (they come and go with it, as
 * when it had a thread of its own), and hands the context to this thread,
 * which iterates every context it holds with one poll () and dispatches
 * them one after the other: a process that runs 64 gpusharesrc has one
 * control thread, not 64 (docs/design.md, "Threads").
 *
 * The thread acquires each context from attach to detach, so nobody else
 * iterates it meanwhile.  gpushare_control_detach () returns once the
 * thread has let the context go: it runs none of its callbacks after
 * that, and none is running; the guarantee that a join of a thread of its
 * own gave.  The last context detached stops the thread; the next attach
 * starts another.
 */

#include "gpusharecontrol.h"

#include <pthread.h>

typedef struct
{
  GMainContext *context;
  gboolean acquired;            /* by the control thread */
  gboolean gone;                /* detached: the thread lets it go */
  gboolean waited;              /* a detach waits for released (and frees) */
  gboolean released;
  /* one iteration, control thread only */
  gint max_priority;
  guint first_fd;
  guint n_fds;
} Entry;

typedef struct
{
  GThread *thread;
  GMainContext *home;           /* no sources: its wake-up pokes the thread */
  GPtrArray *entries;           /* Entry, under lock */
  guint n_live;                 /* entries not gone */
  gboolean quit;                /* no entry left: the thread returns */
  gboolean frees_itself;        /* stopped from its own thread: no join */
} Loop;

/* the state of every loop, and which one takes new contexts */
static GMutex lock;
static GCond cond;
static Loop *current;
/* the loop whose thread this is */
static GPrivate in_loop;

static void
loop_free (Loop * loop)
{
  g_ptr_array_unref (loop->entries);
  g_main_context_unref (loop->home);
  g_free (loop);
}

/* lock held: contexts detached go, contexts attached are taken up */
static void
settle_entries (Loop * loop)
{
  guint i = 0;

  while (i < loop->entries->len) {
    Entry *e = g_ptr_array_index (loop->entries, i);

    if (!e->gone) {
      if (!e->acquired)
        e->acquired = g_main_context_acquire (e->context);
      if (!e->acquired)
        g_critical ("gpushare: a GMainContext handed to the control thread "
            "is iterated elsewhere");
      i++;
      continue;
    }
    g_ptr_array_remove_index_fast (loop->entries, i);
    if (e->acquired)
      g_main_context_release (e->context);
    g_main_context_unref (e->context);
    e->context = NULL;
    if (e->waited) {
      e->released = TRUE;
      g_cond_broadcast (&cond);
    } else {
      g_free (e);
    }
  }
}

/* prepares and queries context into *fds (grown as needed); returns the
 * poll timeout it asks for (ms, -1: none) */
static gint
prepare (Entry * e, GPollFD ** fds, guint * n_fds, guint * cap)
{
  gint timeout = -1;
  gint n;

  if (g_main_context_prepare (e->context, &e->max_priority))
    timeout = 0;
  e->first_fd = *n_fds;
  for (;;) {
    gint t = -1;

    n = g_main_context_query (e->context, e->max_priority, &t,
        *fds + *n_fds, *cap - *n_fds);
    if ((guint) n <= *cap - *n_fds) {
      if (timeout != 0)
        timeout = t;
      break;
    }
    *cap = MAX (*cap * 2, *n_fds + n);
    *fds = g_renew (GPollFD, *fds, *cap);
  }
  e->n_fds = n;
  *n_fds += n;
  return timeout;
}

static gpointer
loop_thread (gpointer data)
{
  Loop *loop = data;
  Entry home = { loop->home, };
  GPtrArray *work = g_ptr_array_new ();
  guint cap = 16;
  GPollFD *fds = g_new (GPollFD, cap);
  gboolean frees_itself;

  g_private_set (&in_loop, loop);
  home.acquired = g_main_context_acquire (loop->home);

  g_mutex_lock (&lock);
  for (;;) {
    guint i, n_fds = 0;
    gint timeout;

    settle_entries (loop);
    if (loop->quit && loop->entries->len == 0)
      break;
    /* the entries stay ours until settle_entries () frees them: only
     * this thread does, so the pointers hold without the lock */
    g_ptr_array_set_size (work, 0);
    for (i = 0; i < loop->entries->len; i++)
      g_ptr_array_add (work, g_ptr_array_index (loop->entries, i));
    g_mutex_unlock (&lock);

    timeout = prepare (&home, &fds, &n_fds, &cap);
    for (i = 0; i < work->len; i++) {
      gint t = prepare (g_ptr_array_index (work, i), &fds, &n_fds, &cap);

      if (t >= 0 && (timeout < 0 || t < timeout))
        timeout = t;
    }

    g_poll (fds, n_fds, timeout);

    g_main_context_check (loop->home, home.max_priority, fds + home.first_fd,
        home.n_fds);
    for (i = 0; i < work->len; i++) {
      Entry *e = g_ptr_array_index (work, i);
      gboolean gone;

      if (!g_main_context_check (e->context, e->max_priority,
              fds + e->first_fd, e->n_fds))
        continue;
      /* one of the callbacks before may have detached it */
      g_mutex_lock (&lock);
      gone = e->gone;
      g_mutex_unlock (&lock);
      if (gone)
        continue;
      g_main_context_push_thread_default (e->context);
      g_main_context_dispatch (e->context);
      g_main_context_pop_thread_default (e->context);
    }
    g_mutex_lock (&lock);
  }
  frees_itself = loop->frees_itself;
  g_mutex_unlock (&lock);

  if (home.acquired)
    g_main_context_release (loop->home);
  g_ptr_array_unref (work);
  g_free (fds);
  g_private_set (&in_loop, NULL);
  if (frees_itself) {
    g_thread_unref (loop->thread);
    loop_free (loop);
  }
  return NULL;
}

/* a child of fork () has none of its parent's threads: it starts its own */
static void
atfork_prepare (void)
{
  g_mutex_lock (&lock);
}

static void
atfork_parent (void)
{
  g_mutex_unlock (&lock);
}

static void
atfork_child (void)
{
  current = NULL;
  g_mutex_unlock (&lock);
}

void
gpushare_control_attach (GMainContext * context)
{
  static gsize once = 0;
  Entry *e = g_new0 (Entry, 1);

  g_return_if_fail (context != NULL);
  if (g_once_init_enter (&once)) {
    pthread_atfork (atfork_prepare, atfork_parent, atfork_child);
    g_once_init_leave (&once, 1);
  }
  e->context = g_main_context_ref (context);
  g_mutex_lock (&lock);
  if (!current) {
    current = g_new0 (Loop, 1);
    current->home = g_main_context_new ();
    current->entries = g_ptr_array_new ();
    current->thread = g_thread_new (GPUSHARE_CONTROL_THREAD_NAME, loop_thread,
        current);
  }
  g_ptr_array_add (current->entries, e);
  current->n_live++;
  g_main_context_wakeup (current->home);
  g_mutex_unlock (&lock);
}

void
gpushare_control_detach (GMainContext * context)
{
  Loop *loop;
  Entry *e = NULL;
  gboolean in_thread;
  guint i;

  g_return_if_fail (context != NULL);
  g_mutex_lock (&lock);
  loop = current;
  for (i = 0; loop && i < loop->entries->len && !e; i++) {
    Entry *c = g_ptr_array_index (loop->entries, i);

    if (c->context == context && !c->gone)
      e = c;
  }
  if (!e) {
    g_mutex_unlock (&lock);
    g_critical ("gpushare: detaching a context the control thread does not "
        "hold");
    return;
  }
  in_thread = g_private_get (&in_loop) == loop;
  e->gone = TRUE;
  e->waited = !in_thread;
  loop->n_live--;
  g_main_context_wakeup (loop->home);

  if (loop->n_live == 0) {
    /* the last one: the thread stops, and the next attach starts another */
    current = NULL;
    loop->quit = TRUE;
    if (in_thread) {
      loop->frees_itself = TRUE;
      g_mutex_unlock (&lock);
      return;
    }
    g_mutex_unlock (&lock);
    g_thread_join (loop->thread);
    loop_free (loop);
    g_free (e);
    return;
  }
  if (in_thread) {
    g_mutex_unlock (&lock);
    return;
  }
  while (!e->released)
    g_cond_wait (&cond, &lock);
  g_mutex_unlock (&lock);
  g_free (e);
}

guint
gpushare_control_n_contexts (void)
{
  guint n;

  g_mutex_lock (&lock);
  n = current ? current->n_live : 0;
  g_mutex_unlock (&lock);
  return n;
}

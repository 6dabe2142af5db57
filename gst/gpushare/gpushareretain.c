/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory other processes may still have open: see gpushareretain.h.
 */

#include "gpushareretain.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <sys/syscall.h>

/* One process: the connections (ids) it was handed the allocation on,
 * and a pidfd watching its exit.  Connections that hung up without a word
 * stay until the process exits; past GPUSHARE_RETAIN_MAX_IDS the oldest is forgotten, so a
 * process that reconnects forever costs bounded memory (it can only have
 * freed under it what it mapped itself). */

typedef struct
{
  pid_t pid;                    /* 0: not known */
  uid_t uid;
  gint pidfd;                   /* -1: not watched */
  GArray *ids;                  /* guint */
} Holder;

struct _GpuShareHolders
{
  GArray *holders;
};

typedef struct
{
  guint64 epoch;
  gpointer resource;
  GpuShareHolders *holders;
} Retained;

struct _GpuShareRetained
{
  guint max;
  GDestroyNotify free_func;
  GQueue items;                 /* Retained, oldest first */
  GPtrArray *freed;             /* handed back, not yet taken */
};

gint
gpushare_pidfd_open (pid_t pid)
{
#ifdef SYS_pidfd_open
  if (pid > 0)
    return (gint) syscall (SYS_pidfd_open, pid, 0);
#endif
  errno = ENOSYS;
  return -1;
}

/* TRUE once the process of a pidfd has exited */
static gboolean
pidfd_exited (gint pidfd)
{
  struct pollfd pfd = { pidfd, POLLIN, 0 };
  gint r;

  do
    r = poll (&pfd, 1, 0);
  while (r < 0 && errno == EINTR);
  return r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR));
}

static void
holder_clear (Holder * h)
{
  if (h->pidfd >= 0)
    close (h->pidfd);
  h->pidfd = -1;
  g_clear_pointer (&h->ids, g_array_unref);
}

GpuShareHolders *
gpushare_holders_new (void)
{
  GpuShareHolders *h = g_new0 (GpuShareHolders, 1);

  h->holders = g_array_new (FALSE, FALSE, sizeof (Holder));
  g_array_set_clear_func (h->holders, (GDestroyNotify) holder_clear);
  return h;
}

void
gpushare_holders_free (GpuShareHolders * h)
{
  if (!h)
    return;
  g_array_unref (h->holders);
  g_free (h);
}

void
gpushare_holders_add (GpuShareHolders * h, guint id, pid_t pid, uid_t uid,
    gint pidfd)
{
  Holder *x = NULL;
  guint i;

  if (pidfd >= 0 && pidfd_exited (pidfd))
    return;
  if (pid < 0)
    pid = 0;
  /* a process of that pid that exited is not this one */
  gpushare_holders_reap (h);
  for (i = 0; i < h->holders->len && !x; i++)
    if (g_array_index (h->holders, Holder, i).pid == pid)
      x = &g_array_index (h->holders, Holder, i);
  if (!x) {
    Holder n;

    n.pid = pid;
    n.uid = uid;
    n.pidfd = pidfd >= 0 ? fcntl (pidfd, F_DUPFD_CLOEXEC, 3) : -1;
    n.ids = g_array_new (FALSE, FALSE, sizeof (guint));
    g_array_append_val (h->holders, n);
    x = &g_array_index (h->holders, Holder, h->holders->len - 1);
  }
  for (i = 0; i < x->ids->len; i++)
    if (g_array_index (x->ids, guint, i) == id)
      return;
  if (x->ids->len >= GPUSHARE_RETAIN_MAX_IDS)
    g_array_remove_index (x->ids, 0);
  g_array_append_val (x->ids, id);
}

gboolean
gpushare_holders_release (GpuShareHolders * h, guint id)
{
  guint i, j;

  for (i = 0; i < h->holders->len; i++) {
    Holder *x = &g_array_index (h->holders, Holder, i);

    for (j = 0; j < x->ids->len; j++) {
      if (g_array_index (x->ids, guint, j) == id) {
        g_array_remove_index_fast (x->ids, j);
        if (x->ids->len == 0)
          g_array_remove_index_fast (h->holders, i);
        return TRUE;
      }
    }
  }
  return FALSE;
}

guint
gpushare_holders_reap (GpuShareHolders * h)
{
  guint i = 0;

  while (i < h->holders->len) {
    Holder *x = &g_array_index (h->holders, Holder, i);

    if (x->pidfd >= 0 && pidfd_exited (x->pidfd))
      g_array_remove_index_fast (h->holders, i);
    else
      i++;
  }
  return h->holders->len;
}

guint
gpushare_holders_count (const GpuShareHolders * h)
{
  return h->holders->len;
}

guint
gpushare_holders_unwatched (const GpuShareHolders * h)
{
  guint i, n = 0;

  for (i = 0; i < h->holders->len; i++)
    n += g_array_index (h->holders, Holder, i).pidfd < 0;
  return n;
}

gboolean
gpushare_holders_has_pid (const GpuShareHolders * h, pid_t pid)
{
  guint i;

  for (i = 0; pid > 0 && i < h->holders->len; i++)
    if (g_array_index (h->holders, Holder, i).pid == pid)
      return TRUE;
  return FALSE;
}

guint
gpushare_holders_count_gone (const GpuShareHolders * h, uid_t uid,
    GpuShareHoldersLiveFunc live, gpointer user_data)
{
  guint i, j, n = 0;

  for (i = 0; i < h->holders->len; i++) {
    const Holder *x = &g_array_index (h->holders, Holder, i);
    gboolean connected = FALSE;

    if (x->uid != uid)
      continue;
    for (j = 0; j < x->ids->len && !connected; j++)
      connected = live (g_array_index (x->ids, guint, j), user_data);
    n += !connected;
  }
  return n;
}

GpuShareRetained *
gpushare_retained_new (guint max, GDestroyNotify free_func)
{
  GpuShareRetained *r = g_new0 (GpuShareRetained, 1);

  r->max = max;
  r->free_func = free_func;
  g_queue_init (&r->items);
  r->freed = g_ptr_array_new_with_free_func (free_func);
  return r;
}

/* hands the resource back to be freed outside the caller's lock */
static void
retained_free_item (GpuShareRetained * r, Retained * x)
{
  g_ptr_array_add (r->freed, x->resource);
  gpushare_holders_free (x->holders);
  g_free (x);
}

void
gpushare_retained_free (GpuShareRetained * r)
{
  Retained *x;

  if (!r)
    return;
  while ((x = g_queue_pop_head (&r->items)))
    retained_free_item (r, x);
  g_ptr_array_unref (r->freed);
  g_free (r);
}

GPtrArray *
gpushare_retained_take_freed (GpuShareRetained * r)
{
  GPtrArray *a;

  if (!r || r->freed->len == 0)
    return NULL;
  a = r->freed;
  r->freed = g_ptr_array_new_with_free_func (r->free_func);
  return a;
}

/* hands back every item nobody holds: the number */
static guint
free_unheld (GpuShareRetained * r)
{
  GList *l = r->items.head;
  guint n = 0;

  while (l) {
    GList *next = l->next;
    Retained *x = l->data;

    if (gpushare_holders_count (x->holders) == 0) {
      g_queue_delete_link (&r->items, l);
      retained_free_item (r, x);
      n++;
    }
    l = next;
  }
  return n;
}

gboolean
gpushare_retained_has_room (GpuShareRetained * r)
{
  gpushare_retained_reap (r);
  return r->items.length < r->max;
}

void
gpushare_retained_add (GpuShareRetained * r, guint64 epoch,
    gpointer resource, GpuShareHolders * holders)
{
  Retained *x = g_new0 (Retained, 1);

  x->epoch = epoch;
  x->resource = resource;
  x->holders = holders ? holders : gpushare_holders_new ();
  gpushare_holders_reap (x->holders);
  g_queue_push_tail (&r->items, x);
  free_unheld (r);
}

guint
gpushare_retained_release (GpuShareRetained * r, guint id, guint64 epoch)
{
  GList *l;

  for (l = r->items.head; l; l = l->next) {
    Retained *x = l->data;

    if (epoch == G_MAXUINT64 || x->epoch == epoch)
      gpushare_holders_release (x->holders, id);
  }
  return free_unheld (r);
}

guint
gpushare_retained_reap (GpuShareRetained * r)
{
  GList *l;

  for (l = r->items.head; l; l = l->next)
    gpushare_holders_reap (((Retained *) l->data)->holders);
  return free_unheld (r);
}

guint
gpushare_retained_count (const GpuShareRetained * r)
{
  return r->items.length;
}

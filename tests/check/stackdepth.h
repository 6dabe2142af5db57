/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How much stack a call takes: it runs on a thread whose stack is a
 * painted buffer, and the deepest byte no longer painted tells, counted
 * from where the call starts.  What the thread's start wrote below that
 * is painted again first; what is left of the thread's own needs is
 * measured once with nothing to run and taken off.
 *
 * Used to show that a message is encoded and sent from its small body
 * alone: a GpuShareMsg (over 12 KiB) anywhere on the way shows up here.
 * Under a sanitizer that moves locals off the stack nothing shows up: a
 * test first checks that a GpuShareMsg on the stack is seen
 * (stack_depth_sees ()), and asserts nothing where it is not.  Under
 * valgrind, which counts reading a dead thread's stack as an error, it is
 * not even tried.
 */

#ifndef __GPUSHARE_STACK_DEPTH_H__
#define __GPUSHARE_STACK_DEPTH_H__

#include <gst/check/gstcheck.h>
#include <pthread.h>
#include <string.h>

#define STACK_DEPTH_SIZE (512 * 1024)
#define STACK_DEPTH_PAINT 0xa7

typedef void (*StackDepthFunc) (gpointer data);

/* room left above the repainted part for the frames of this header's
 * own calls (the thread function's, memset's) */
#define STACK_DEPTH_MARGIN 256

typedef struct
{
  StackDepthFunc func;
  gpointer data;
  guint8 *stack;                /* the lowest address */
  guint8 *here;                 /* func's frames start below this */
} StackDepthRun;

static inline void *
stack_depth_thread (void *arg)
{
  StackDepthRun *run = arg;
  volatile guint8 here = 0;

  /* the thread's start may have gone deeper than func will (with glibc
   * 2.41 it writes 6 KiB down): paint everything below this frame (but
   * for the margin memset's own frame needs) again, and count from here */
  run->here = (guint8 *) & here;
  memset (run->stack, STACK_DEPTH_PAINT, (gsize) (run->here - run->stack) -
      STACK_DEPTH_MARGIN);
  if (run->func)
    run->func (run->data);
  return (gpointer) (gsize) here;
}

/* bytes between the top of the thread's stack and the deepest one
 * written, thread overhead included */
static inline gsize
stack_depth_raw (StackDepthFunc func, gpointer data)
{
  StackDepthRun run = { func, data, NULL, NULL };
  pthread_attr_t attr;
  pthread_t thread;
  guint8 *stack;
  gsize i;

  stack = g_aligned_alloc (STACK_DEPTH_SIZE, 1, 4096);
  memset (stack, STACK_DEPTH_PAINT, STACK_DEPTH_SIZE);
  run.stack = stack;
  fail_unless (pthread_attr_init (&attr) == 0);
  fail_unless (pthread_attr_setstack (&attr, stack, STACK_DEPTH_SIZE) == 0);
  fail_unless (pthread_create (&thread, &attr, stack_depth_thread,
          &run) == 0);
  fail_unless (pthread_join (thread, NULL) == 0);
  pthread_attr_destroy (&attr);
  /* the stack grows down: the lowest written byte is the deepest */
  for (i = 0; i < STACK_DEPTH_SIZE && stack[i] == STACK_DEPTH_PAINT; i++);
  g_aligned_free (stack);
  return stack + i < run.here ? (gsize) (run.here - (stack + i)) : 0;
}

/* bytes of stack func (data) takes, beyond what an empty thread takes.
 * Call func once beforehand: lazy symbol binding on a first call takes
 * stack of its own. */
static inline gsize
stack_depth (StackDepthFunc func, gpointer data)
{
  gsize empty = stack_depth_raw (NULL, NULL);
  gsize used = stack_depth_raw (func, data);

  return used > empty ? used - empty : 0;
}

/* would a GpuShareMsg-sized local on the way be seen at all */
static inline void
stack_depth_big_local (gpointer data)
{
  volatile guint8 big[16 * 1024];

  memset ((guint8 *) big, 0, sizeof (big));
  *(guint8 *) data = big[sizeof (big) - 1];
}

static inline gboolean
stack_depth_sees (gsize size)
{
  guint8 sink;

  if (g_getenv ("GPUSHARE_UNDER_VALGRIND"))
    return FALSE;
  stack_depth_big_local (&sink);
  return stack_depth (stack_depth_big_local, &sink) >= size;
}

#endif /* __GPUSHARE_STACK_DEPTH_H__ */

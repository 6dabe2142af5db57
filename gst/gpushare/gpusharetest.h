/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test-only crash points.
 *
 * With GPUSHARE_TEST_DIE_AT="<side>:<step>[:<n>]" in its environment, a
 * process kills itself with SIGKILL, as a crash would, the n-th time
 * (default: the first) it reaches that step of the protocol: sink
 * announce, export, ready, frame; src accept, map, ready, frame.  The
 * crash drills of the test suite use it to kill either side at every step.
 * Unset, a step costs one comparison.
 *
 * Only the test build has them: the copy of the plugin in tests/plugin and
 * the test programs are compiled with GPUSHARE_TEST_HOOKS.  Without it a
 * step compiles to nothing, so that the installed plugin neither reads the
 * variable nor can be made to die by it.
 */

#ifndef __GPUSHARE_TEST_H__
#define __GPUSHARE_TEST_H__

#include <glib.h>

G_BEGIN_DECLS

/* With GPUSHARE_TEST_SLOW_AT="<side>:<step>:<ms>", the thread that
 * reaches that step (src premap: the control thread, before it maps a
 * ring; sink preexport: the control thread, before it exports the slots
 * to a consumer, the server's lock held; sink housekeeping: the control
 * thread, before it judges the deadlines) sleeps ms each time (read at
 * each step): long device work, a thread held up, for the tests of what
 * the process's connections hear and what it makes of the replies that
 * waited meanwhile. */
/* With GPUSHARE_TEST_FAIL_AT="<side>:<step>[:<n>]", the first n times
 * (default: every time) that step is reached it fails as the resource
 * behind it would (src gpu-context: GStreamer's CUDA context cannot be
 * made; src wrap: a slot read in place cannot be wrapped as GStreamer
 * memory, and the frame is copied instead; sink ready: a frame goes to
 * the consumers that synchronise on the device without its ready signal;
 * src done: a frame read from GPU memory is never signalled done, though
 * it is released).  Read at each step. */
#ifdef GPUSHARE_TEST_HOOKS
void gpushare_test_point (const gchar * side, const gchar * step);
void gpushare_test_slow (const gchar * side, const gchar * step);
gboolean gpushare_test_fails (const gchar * side, const gchar * step);
#else
#define gpushare_test_point(side, step) \
  G_STMT_START { (void) (side); (void) (step); } G_STMT_END
#define gpushare_test_slow(side, step) \
  G_STMT_START { (void) (side); (void) (step); } G_STMT_END
#define gpushare_test_fails(side, step) FALSE
#endif

G_END_DECLS

#endif /* __GPUSHARE_TEST_H__ */

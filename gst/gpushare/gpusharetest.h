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
 */

#ifndef __GPUSHARE_TEST_H__
#define __GPUSHARE_TEST_H__

#include <glib.h>

G_BEGIN_DECLS

void gpushare_test_point (const gchar * side, const gchar * step);

G_END_DECLS

#endif /* __GPUSHARE_TEST_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers the gpu suite's C programs share: the GPU probe, fd
 * counting, whole messages and fds over a socketpair (one byte of payload
 * carries the fd count), a monotonic clock.
 */

#ifndef __GPU_TEST_UTIL_H__
#define __GPU_TEST_UTIL_H__

#include <glib.h>

G_BEGIN_DECLS

#define GPU_TEST_SKIP 77

typedef enum
{
  GPU_TEST_NEED_GPU = 0,
  GPU_TEST_NEED_VMM_FD = 1 << 0,        /* VMM memory exported as fds */
  GPU_TEST_NEED_MEM_OPS = 1 << 1,       /* 64-bit stream memory operations */
} GpuTestNeeds;

/* Probes GPU 0 in a forked child, so that this process has not touched
 * CUDA when it forks children of its own: 0 when it has what needs asks
 * for, GPU_TEST_SKIP otherwise (the child printed the one SKIP line). */
gint gpu_test_probe_in_child (GpuTestNeeds needs);

/* the most fds one gpu_test_send_fds () carries */
#define GPU_TEST_MAX_FDS 65

/* entries in /proc/self/fd, -1 if it cannot be read */
gint gpu_test_count_fds (void);
/* 1 <= n <= GPU_TEST_MAX_FDS; the caller keeps its fds */
gboolean gpu_test_send_fds (gint sock, const gint * fds, guint n);
/* exactly n fds (CLOEXEC), or FALSE with every fd received closed */
gboolean gpu_test_recv_fds (gint sock, gint * fds, guint n);
/* all of len bytes, or FALSE on error or hang-up */
gboolean gpu_test_write_all (gint sock, gconstpointer buf, gsize len);
/* all of len bytes, or FALSE on error, hang-up or timeout (timeout_ms < 0:
 * none) */
gboolean gpu_test_read_all (gint sock, gpointer buf, gsize len,
    gint timeout_ms);
/* CLOCK_MONOTONIC in ns */
guint64 gpu_test_now_ns (void);

G_END_DECLS

#endif /* __GPU_TEST_UTIL_H__ */

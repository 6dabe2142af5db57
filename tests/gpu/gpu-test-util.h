/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers the gpu suite's C programs share: the GPU probe, fd
 * counting, whole messages and fds over a socketpair (one byte of payload
 * carries the fd count), a monotonic clock; the children every program
 * runs its sides in (one, a producer and consumer pair, or one driven
 * over a socketpair); and for the multi-process element tests: control
 * messages between the processes, the device's primary context held for a
 * child's whole run, device memory samples, the elements' stats and buses.
 */

#ifndef __GPU_TEST_UTIL_H__
#define __GPU_TEST_UTIL_H__

#include <glib.h>
#include <sys/types.h>
#include <gst/gst.h>

#include <gst/video/video.h>

#include "gpusharecuda.h"
#include "gpusharecudaring.h"

G_BEGIN_DECLS

#define GPU_TEST_SKIP 77

typedef enum
{
  GPU_TEST_NEED_GPU = 0,
  GPU_TEST_NEED_VMM_FD = 1 << 0,        /* VMM memory exported as fds */
  GPU_TEST_NEED_MEM_OPS = 1 << 1,       /* 64-bit stream memory operations */
  /* videotestsrc, fakesink, gpusharesink and gpusharesrc */
  GPU_TEST_NEED_ELEMENTS = 1 << 2,
} GpuTestNeeds;

/* Probes GPU 0 in a forked child, so that this process has not touched
 * CUDA when it forks children of its own: 0 when it has what needs asks
 * for, GPU_TEST_SKIP otherwise (the child printed the one SKIP line). */
gint gpu_test_probe_in_child (GpuTestNeeds needs);

/* the planes of a frame of info in device memory at base */
/* the views that are not NULL freed, then consumers 0 .. n_consumers - 1
 * of ring removed and the ring freed (ring may be NULL) */
void gpu_test_ring_free (GpuShareCudaRing * ring, GpuShareCudaView ** views,
    guint n_views, guint n_consumers);

void gpu_test_planes (GpuSharePlanes * p, const GstVideoInfo * info,
    CUdeviceptr base);

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

/* the fd count once it held still for a few samples: a closing thread or
 * socket may still be on its way out */
gint gpu_test_settled_fds (void);

/* a small fixed-size control message over a socketpair between the
 * processes of a test */
typedef struct
{
  guint8 cmd;
  guint8 reserved[7];
  guint64 value;
} GpuTestCtl;

gboolean gpu_test_ctl_send (gint sock, guint8 cmd, guint64 value);
/* FALSE on hang-up, error or timeout (timeout_ms < 0: none) */
gboolean gpu_test_ctl_recv (gint sock, GpuTestCtl * m, gint timeout_ms);
/* as gpu_test_ctl_recv (), and FALSE on another command than cmd */
gboolean gpu_test_ctl_expect (gint sock, guint8 cmd, guint64 * value,
    gint timeout_ms);

/* in a child: flushes stdout and stderr and leaves with rc */
G_GNUC_NORETURN void gpu_test_child_exit (gint rc);
/* in a child, after the fork: arms alarm_s (a hang is a failure, not a
 * stuck test), starts GStreamer, makes warnings fatal and
 * prints a backtrace when it crashes */
void gpu_test_run_child (guint alarm_s);
/* waits for a child: TRUE when it exited with 0, its fate printed
 * otherwise (who NULL: nothing printed) */
gboolean gpu_test_reap (pid_t pid, const gchar * who);
/* SIGKILL, then reaped: TRUE when the signal is what ended it; FALSE
 * without a signal for a pid <= 0 */
gboolean gpu_test_kill (pid_t pid);
/* a decimal environment variable (0 .. 100000), fallback otherwise */
guint gpu_test_env_uint (const gchar * name, guint fallback);

/* ------------------------------------------------------------------------ */
/* Children.  A process that has initialised CUDA must not fork (the
 * driver does not survive in the child), so the parent of a multi-process
 * gpu test stays without CUDA: each probe and each side of the test runs
 * in a child of its own, forked before any CUDA call. */

/* What a child runs: sock is its end of a socketpair or pipe (-1: none);
 * what it returns is the child's exit code. */
typedef gint (*GpuTestChildFunc) (gint sock, gpointer data);

typedef struct
{
  /* who, in the line gpu_test_run_pair () has gpu_test_reap () print
   * when the child did not exit with 0; NULL: nothing printed */
  const gchar *name;
  GpuTestChildFunc func;
  gpointer data;
  /* > 0: gpu_test_run_child (alarm_s) in the child before func; 0: func
   * alone, in the state the parent forked in */
  guint alarm_s;
} GpuTestRole;

/* Forks a child that closes close_fd (>= 0: an fd of the parent's it must
 * not hold, such as the parent's end of its socketpair), runs role with
 * sock and leaves with what func returned (gpu_test_child_exit ()).  stdio
 * is flushed before the fork: what it held would be written twice.  The
 * pid, or -1 when fork failed. */
pid_t gpu_test_fork (const GpuTestRole * role, gint sock, gint close_fd);
/* gpu_test_fork (), then waits for the child: its exit code, or -1 when
 * it could not be forked or did not exit (a signal: *status, when not
 * NULL, gets what waitpid () said; it is left alone when fork failed) */
gint gpu_test_wait_child (const GpuTestRole * role, gint sock,
    gint close_fd, gint * status);
/* A probe of the test's own in a child (it may print more, or answer
 * more than go or skip): its exit code; one that crashed is a skip, said
 * in the one SKIP line. */
gint gpu_test_probe_with (GpuTestChildFunc func);

/* One child driven by the parent: role runs on one end of a new
 * socketpair (the child also closes close_fd when >= 0) and the parent
 * gets the other end in *ctl.  The pid, or -1 with *ctl -1 and error
 * saying "socketpair: ..." or "fork: ...". */
pid_t gpu_test_spawn (const GpuTestRole * role, gint close_fd, gint * ctl,
    GError ** error);

/* the orders decide only which child starts a moment earlier and in which
 * order the fates of failed ones are printed */
typedef enum
{
  GPU_TEST_PAIR_FORK_CONSUMER_FIRST = 1 << 0,
  GPU_TEST_PAIR_REAP_CONSUMER_FIRST = 1 << 1,
} GpuTestPairFlags;

/* The producer and the consumer (NULL: the producer alone) in two
 * children joined by a socketpair, the producer on its first end, each
 * closing the other's; forked producer first, reaped producer first,
 * unless flags say otherwise.  TRUE when both exited with 0.  FALSE with
 * error set when the socketpair could not be made (nothing forked); a
 * child that could not be forked is one that failed. */
gboolean gpu_test_run_pair (const GpuTestRole * producer,
    const GpuTestRole * consumer, GpuTestPairFlags flags, GError ** error);

/* ------------------------------------------------------------------------ */

/* Device free memory may shrink by this much between two samples: what
 * the driver keeps on its own */
#define GPU_TEST_MEM_SLACK (2 * 1024 * 1024)

gdouble gpu_test_mib (gsize bytes);
/* in a child: loads our copy of the driver table and retains the primary
 * context of GPU 0, for the process's whole run */
gboolean gpu_test_hold_primary (CUcontext * ctx, GError ** error);
void gpu_test_release_primary (void);
/* free memory of the whole device (cuMemGetInfo); 0 when the call failed */
gsize gpu_test_device_free (CUcontext ctx);
/* after did not lose more than GPU_TEST_MEM_SLACK against before */
gboolean gpu_test_mem_ok (gsize before, gsize after);
/* one line, ending in PASS or FAIL as gpu_test_mem_ok () says */
void gpu_test_print_mem (const gchar * who, gsize before, gsize after);

/* one line: the device's name, driver and what the sync modes need */
void gpu_test_print_device (const GpuShareCudaCaps * caps);
/* TRUE when every element is there; the one SKIP line printed otherwise */
gboolean gpu_test_have_elements (const gchar * const *names, guint n);
/* a field of an element's "stats" structure ("?" or 0 when missing) */
gchar *gpu_test_stat_string (GstElement * e, const gchar * field);
guint64 gpu_test_stat_u64 (GstElement * e, const gchar * field);
guint gpu_test_stat_uint (GstElement * e, const gchar * field);
/* videotestsrc is-live=true pattern=ball ! NV12 1920x1080 at fps !
 * gpusharesink socket-path=path; *sink gets a reference to the sink.  NULL,
 * with why printed, when it cannot be made */
GstElement *gpu_test_producer_pipeline (const gchar * path, guint fps,
    GstElement ** sink);
/* gpusharesrc socket-path=path connection-timeout=connection_timeout_ms
 * transport=cuda ! video/x-raw(memory:CUDAMemory) ! fakesink sync=false
 * enable-last-sample=false; probe
 * sees every buffer at the fakesink; the bus keeps what the pipeline posts
 * on its way to NULL (no auto-flush); *src: the src (the pipeline's
 * reference).  NULL, with why printed, when they do not link */
GstElement *gpu_test_consumer_pipeline (const gchar * path,
    guint connection_timeout_ms, GstPadProbeCallback probe,
    gpointer user_data, GstElement ** src);
/* a producer's pipeline to PLAYING, then its gpusharesink's first frame
 * rendered within timeout_ms: FALSE (and why printed) otherwise */
gboolean gpu_test_producer_play (GstElement * pipeline, GstElement * sink,
    GstBus * bus, gint timeout_ms);
/* num-clients of a gpusharesink */
guint gpu_test_num_clients (GstElement * sink);
void gpu_test_print_error_message (const gchar * who, GstMessage * msg);
/* pops every message: FALSE when one was an error (printed) */
gboolean gpu_test_drain_bus (const gchar * who, GstBus * bus);
/* the same for a gpusharesrc's pipeline, which also counts the src's
 * gpushare-transport messages: in *vmm those of cuda-vmm, the first other
 * one in *other (when other is not NULL and *other is still NULL) */
gboolean gpu_test_drain_consumer_bus (GstBus * bus, guint * vmm,
    gchar ** other, gboolean print);

G_END_DECLS

#endif /* __GPU_TEST_UTIL_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CUDA fault injection: every VMM, stream, event and IPC call that
 * gpushare makes is made to fail in turn (the 1st, 2nd, 3rd, 5th, 8th and
 * 13th call of each, as long as the life cycle below makes that many), in
 * a child process of its own, through the shims of gpusharecudafault.c.
 *
 * The life cycle, in one process on GPU 0: a VMM ring of 4 slots with a
 * semaphore consumer, a host consumer and an event consumer; the first two
 * exported, imported and mapped (real fds), one frame copied in, published
 * and read by both, the slot taken again; everything freed; then a legacy
 * IPC ring created and exported.  A step that fails stops the rest of the
 * cycle, which then unwinds.
 *
 * Each injected failure must come back as a GError of the CUDA domain that
 * names the CUDA error, and leave nothing behind: the process's fds and the
 * device's free memory as they were before the cycle.  A failure that no
 * step reports is printed as "absorbed" (the call's result was not needed
 * or was retried) and is not counted as a failure.
 *
 * Prints one SKIP line and exits 77 where no GPU is present.
 */

#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpusharecuda.h"
#include "gpusharecudaring.h"
#include "gpu-test-util.h"

#define SKIP 77
#define N_SLOTS 4
#define RC_NOT_FIRED 0
#define RC_CLEAN 10
#define RC_ABSORBED 11
#define RC_BAD 1

static const gint attempts[] = { 1, 2, 3, 5, 8, 13 };

static GstVideoInfo info;
static gsize slot_size;

/* the life cycle; FALSE with error at the first step that fails, after
 * unwinding everything */
static gboolean
cycle (CUdeviceptr src_buf, CUdeviceptr dst_buf, GError ** error)
{
  static const GpuShareSyncMode modes[2] = { GPUSHARE_SYNC_SEMAPHORE,
    GPUSHARE_SYNC_HOST
  };
  GpuShareCudaRing *ring, *legacy = NULL;
  GpuShareCudaView *view[2] = { NULL, NULL };
  GpuShareSlots slots;
  GpuSharePlanes src, dst, layout;
  gint fds[N_SLOTS + 1];
  gboolean ok;
  guint i;

  gpu_test_planes (&src, &info, src_buf);
  gpu_test_planes (&dst, &info, dst_buf);
  gpu_test_planes (&layout, &info, 0);
  ring = gpushare_cuda_ring_new (0, NULL, GPUSHARE_MEM_CUDA_VMM, 1, N_SLOTS,
      slot_size, error);
  ok = ring != NULL;
  for (i = 0; ok && i < 2; i++)
    ok = gpushare_cuda_ring_add_consumer (ring, i, modes[i], error);
  ok = ok && gpushare_cuda_ring_add_consumer (ring, 2, GPUSHARE_SYNC_EVENT,
      error);
  for (i = 0; ok && i < 2; i++) {
    ok = gpushare_cuda_ring_export (ring, i, &slots, fds, error);
    if (ok) {
      view[i] = gpushare_cuda_view_new (0, NULL, &slots, fds, error);
      ok = view[i] != NULL;
    }
  }
  /* the event consumer: exported only (its handles open in another
   * process alone) */
  if (ok && (ok = gpushare_cuda_ring_export (ring, 2, &slots, fds, error)))
    gpushare_close_fds (fds, N_SLOTS);
  ok = ok && gpushare_cuda_ring_begin (ring, 0, error)
      && gpushare_cuda_ring_copy_in (ring, 0, &info, &src, &layout, NULL, NULL,
      TRUE, error)
      && gpushare_cuda_ring_settle (ring, 0, error)
      && gpushare_cuda_ring_publish (ring, 0, 0x3, 1, error);
  for (i = 0; ok && i < 2; i++)
    ok = gpushare_cuda_view_read (view[i], 0, 1, &info, &layout, &dst, TRUE,
        error);
  ok = ok && gpushare_cuda_ring_begin (ring, 0, error);

  gpu_test_ring_free (ring, view, 2, 3);
  if (!ok)
    return FALSE;

  legacy = gpushare_cuda_ring_new (0, NULL, GPUSHARE_MEM_CUDA_LEGACY, 2,
      N_SLOTS, slot_size, error);
  ok = legacy != NULL
      && gpushare_cuda_ring_add_consumer (legacy, 0, GPUSHARE_SYNC_HOST, error)
      && gpushare_cuda_ring_export (legacy, 0, &slots, fds, error);
  if (legacy)
    gpushare_cuda_ring_free (legacy);
  return ok;
}

static gsize
free_bytes (void)
{
  size_t f = 0, t = 0;

  gpushare_cuda ()->cuCtxSynchronize ();
  gpushare_cuda ()->cuMemGetInfo (&f, &t);
  return f;
}

/* one child: the cycle once to warm up, then with the n-th call of name
 * failing */
static gint
child (const gchar * name, gint n)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  CUcontext ctx;
  CUdeviceptr src_buf = 0, dst_buf = 0;
  gsize free0, free1;
  gint fds0, fds1, fired;
  gboolean ok, classified;

  /* a cycle that hangs is a failure too */
  alarm (60);
  g_setenv ("GPUSHARE_TEST_CUDA_FAIL", "armed-later", TRUE);
  if (!gpushare_cuda_load (&error)
      || !gpushare_cuda_primary_push (0, &ctx, &error)) {
    g_print ("  %s #%d: setup failed: %s\n", name, n, error->message);
    return RC_BAD;
  }
  cu = gpushare_cuda ();
  /* ours, made before anything is armed: the cycle's copies read and
   * write them */
  cu->cuMemAlloc (&src_buf, GST_VIDEO_INFO_SIZE (&info));
  cu->cuMemAlloc (&dst_buf, GST_VIDEO_INFO_SIZE (&info));
  if (!cycle (src_buf, dst_buf, &error)) {
    g_print ("  %s #%d: the cycle fails without a fault: %s\n", name, n,
        error->message);
    return RC_BAD;
  }
  fds0 = gpu_test_count_fds ();
  free0 = free_bytes ();

  gpushare_cuda_fault_arm (name, n);
  ok = cycle (src_buf, dst_buf, &error);
  fired = gpushare_cuda_fault_fired ();
  gpushare_cuda_fault_arm (NULL, 0);

  fds1 = gpu_test_count_fds ();
  free1 = free_bytes ();
  if (!fired)
    return RC_NOT_FIRED;
  classified = error && error->domain == GPUSHARE_CUDA_ERROR
      && strstr (error->message, "CUDA_ERROR_OUT_OF_MEMORY") != NULL;
  g_print ("  %s #%d: %s; fds %d -> %d, device free %" G_GSIZE_FORMAT
      " -> %" G_GSIZE_FORMAT " MiB", name, n, ok ? "absorbed (no step "
      "failed)" : error->message, fds0, fds1, free0 >> 20, free1 >> 20);
  if (fds1 != fds0 || free1 + (2 << 20) < free0) {
    g_print (": FAIL (left something behind)\n");
    return RC_BAD;
  }
  if (!ok) {
    g_print (": %s\n", classified ? "PASS" : "FAIL (not a classified CUDA "
        "error)");
    return classified ? RC_CLEAN : RC_BAD;
  }
  g_print (": absorbed\n");
  return RC_ABSORBED;
}

/* which call of which entry point a child makes fail */
typedef struct
{
  const gchar *name;
  gint n;
} Fault;

static gint
child_main (gint sock, gpointer data)
{
  const Fault *fault = data;

  return child (fault->name, fault->n);
}

int
main (int argc, char **argv)
{
  guint f, a;
  gint status = 0, failures = 0, clean = 0, absorbed = 0;

  gst_init (&argc, &argv);
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, 1920, 1080);
  slot_size = gpushare_round_up (GST_VIDEO_INFO_SIZE (&info), 2 << 20);

  /* this process stays without CUDA for its forks */
  if (gpu_test_probe_in_child (GPU_TEST_NEED_VMM_FD |
          GPU_TEST_NEED_MEM_OPS) != 0)
    return SKIP;

  for (f = 0; gpushare_cuda_fault_names[f]; f++) {
    const gchar *name = gpushare_cuda_fault_names[f];

    for (a = 0; a < G_N_ELEMENTS (attempts); a++) {
      Fault fault = { name, attempts[a] };
      GpuTestRole role = { NULL, child_main, &fault, 0 };
      gint rc;

      rc = gpu_test_wait_child (&role, -1, -1, &status);
      if (rc == RC_NOT_FIRED)
        break;
      if (rc == RC_CLEAN)
        clean++;
      else if (rc == RC_ABSORBED)
        absorbed++;
      else {
        if (rc == -1)
          g_print ("  %s #%d: FAIL (the child died: signal %d)\n", name,
              attempts[a], WIFSIGNALED (status) ? WTERMSIG (status) : 0);
        failures++;
      }
    }
    if (a == 0)
      g_print ("  %s: not called in the cycle\n", name);
  }
  g_print ("%s: %d injected failures unwound cleanly, %d absorbed, %d "
      "failed\n", failures ? "FAIL" : "PASS", clean, absorbed, failures);
  return failures ? 1 : 0;
}

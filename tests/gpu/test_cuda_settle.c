/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When the host must wait for a slot's write (gpushare_cuda_ring_settle),
 * for each way the write was made, on GPU 0 in one process: a ring of 4
 * VMM slots with a host-sync consumer (holder bit 0) and a semaphore
 * consumer (holder bit 1), and a stream of our own as upstream's.
 *
 *  - our copy with no upstream stream: the writer settles before it
 *    returns upstream's buffer, and no reader needs another;
 *  - our copy ordered on upstream's stream: the writer does not wait,
 *    host-sync readers need a settle first, semaphore readers do not;
 *  - upstream wrote the slot itself on its stream: the same;
 *  - upstream wrote the slot itself and the host waited for it (no
 *    stream): nobody waits again, whatever the slot's previous write was;
 *  - our copy with no upstream stream, upstream's buffer held: the writer
 *    does not wait, host-sync readers need a settle, semaphore readers do
 *    not, and the buffer goes back once the copy is done, at the next
 *    write (its ref count says so).
 *
 * Prints one SKIP line and exits 77 where no GPU is present.
 */

#include "config.h"

#include <string.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpusharecuda.h"
#include "gpusharecudaring.h"
#include "gpu-test-util.h"

#define N_SLOTS 4
#define HOST_READER 0x1
#define SEM_READER 0x2

static GstVideoInfo info;
static gint failures;

/* the three answers of needs_settle for the slot against what is wanted */
static void
expect (GpuShareCudaRing * ring, guint slot, const gchar * what,
    gboolean writer, gboolean host_reader, gboolean sem_reader)
{
  gboolean w = gpushare_cuda_ring_needs_settle (ring, slot, 0);
  gboolean h = gpushare_cuda_ring_needs_settle (ring, slot, HOST_READER);
  gboolean s = gpushare_cuda_ring_needs_settle (ring, slot, SEM_READER);
  gboolean ok = w == writer && h == host_reader && s == sem_reader;

  g_print ("%s %s: settle by the writer %s, before a host-sync reader %s, "
      "before a semaphore reader %s\n", ok ? "PASS" : "FAIL", what,
      w ? "yes" : "no", h ? "yes" : "no", s ? "yes" : "no");
  if (!ok) {
    g_print ("  wanted: %s, %s, %s\n", writer ? "yes" : "no",
        host_reader ? "yes" : "no", sem_reader ? "yes" : "no");
    failures++;
  }
}

static gboolean
run (GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GpuShareCudaRing *ring = NULL;
  GpuSharePlanes src, layout;
  CUcontext ctx;
  CUdeviceptr src_buf = 0;
  CUstream upstream = NULL;
  GstBuffer *hold;
  gsize slot_size;
  gboolean ok, held;

  slot_size = gpushare_round_up (GST_VIDEO_INFO_SIZE (&info), 2 << 20);
  if (!gpushare_cuda_primary_push (0, &ctx, error))
    return FALSE;
  ok = gpushare_cuda_check (cu->cuMemAlloc (&src_buf,
          GST_VIDEO_INFO_SIZE (&info)), "cuMemAlloc", error)
      && gpushare_cuda_check (cu->cuStreamCreate (&upstream,
          CU_STREAM_NON_BLOCKING), "cuStreamCreate", error);
  if (ok) {
    ring = gpushare_cuda_ring_new (0, ctx, GPUSHARE_MEM_CUDA_VMM, 1, N_SLOTS,
        slot_size, error);
    ok = ring != NULL
        && gpushare_cuda_ring_add_consumer (ring, 0, GPUSHARE_SYNC_HOST, error)
        && gpushare_cuda_ring_add_consumer (ring, 1, GPUSHARE_SYNC_SEMAPHORE,
        error);
  }
  gpu_test_planes (&src, &info, src_buf);
  gpu_test_planes (&layout, &info, 0);

  /* slot 0: our copy, nothing to order it with */
  ok = ok && gpushare_cuda_ring_begin (ring, 0, error)
      && gpushare_cuda_ring_copy_in (ring, 0, &info, &src, &layout, NULL,
      NULL, TRUE, error);
  if (ok)
    expect (ring, 0, "copy, no upstream stream", TRUE, FALSE, FALSE);
  ok = ok && gpushare_cuda_ring_settle (ring, 0, error);

  /* slot 1: our copy ordered on upstream's stream */
  ok = ok && gpushare_cuda_ring_begin (ring, 1, error)
      && gpushare_cuda_ring_copy_in (ring, 1, &info, &src, &layout, upstream,
      NULL, TRUE, error);
  if (ok)
    expect (ring, 1, "copy ordered on upstream's stream", FALSE, TRUE, FALSE);

  /* slot 1 again: upstream wrote it itself, and the host waited for that,
   * after a write that was ordered on the device */
  ok = ok && gpushare_cuda_ring_settle (ring, 1, error)
      && gpushare_cuda_ring_prepare (ring, 1, error)
      && gpushare_cuda_check (cu->cuStreamSynchronize (upstream),
      "cuStreamSynchronize", error)
      && gpushare_cuda_ring_written (ring, 1, NULL, error);
  if (ok)
    expect (ring, 1, "written by upstream, waited for on the host (after "
        "an ordered copy)", FALSE, FALSE, FALSE);

  /* slot 2: upstream wrote it itself, on its stream */
  ok = ok && gpushare_cuda_ring_prepare (ring, 2, error)
      && gpushare_cuda_ring_settle (ring, 2, error)
      && gpushare_cuda_ring_written (ring, 2, upstream, error);
  if (ok)
    expect (ring, 2, "written by upstream on its stream", FALSE, TRUE, FALSE);

  /* slot 0 again: written by upstream and waited for, after our copy */
  ok = ok && gpushare_cuda_ring_prepare (ring, 0, error)
      && gpushare_cuda_ring_settle (ring, 0, error)
      && gpushare_cuda_ring_written (ring, 0, NULL, error);
  if (ok)
    expect (ring, 0, "written by upstream, waited for on the host (after "
        "our copy)", FALSE, FALSE, FALSE);

  /* slot 3: our copy, upstream's buffer held instead of a host wait */
  hold = gst_buffer_new ();
  ok = ok && gpushare_cuda_ring_begin (ring, 3, error)
      && gpushare_cuda_ring_copy_in (ring, 3, &info, &src, &layout, NULL,
      hold, TRUE, error);
  if (ok) {
    expect (ring, 3, "copy, upstream's buffer held", FALSE, TRUE, FALSE);
    held = GST_MINI_OBJECT_REFCOUNT_VALUE (hold) == 2;
    g_print ("%s the copy holds upstream's buffer\n", held ? "PASS" : "FAIL");
    failures += !held;
  }
  /* the copy done (and all before slot 2's settled), a later write lets
   * go of it */
  ok = ok && gpushare_cuda_ring_settle (ring, 3, error)
      && gpushare_cuda_ring_begin (ring, 2, error)
      && gpushare_cuda_ring_copy_in (ring, 2, &info, &src, &layout, NULL,
      NULL, TRUE, error) && gpushare_cuda_ring_settle (ring, 2, error)
      && gpushare_cuda_ring_begin (ring, 2, error)
      && gpushare_cuda_ring_copy_in (ring, 2, &info, &src, &layout, NULL,
      NULL, TRUE, error) && gpushare_cuda_ring_settle (ring, 2, error);
  if (ok) {
    held = GST_MINI_OBJECT_REFCOUNT_VALUE (hold) != 1;
    g_print ("%s upstream's buffer goes back once its copy is done\n",
        held ? "FAIL" : "PASS");
    failures += held;
  }
  gst_buffer_unref (hold);

  ok = ok && gpushare_cuda_check (cu->cuCtxSynchronize (),
      "cuCtxSynchronize", error);
  gpu_test_ring_free (ring, NULL, 0, 2);
  if (upstream)
    cu->cuStreamDestroy (upstream);
  if (src_buf)
    cu->cuMemFree (src_buf);
  gpushare_cuda_pop ();
  gpushare_cuda_primary_release (0);
  return ok;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;

  gst_init (&argc, &argv);
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, 1920, 1080);
  if (gpu_test_probe_in_child (GPU_TEST_NEED_VMM_FD |
          GPU_TEST_NEED_MEM_OPS) != 0)
    return GPU_TEST_SKIP;
  if (!gpushare_cuda_load (&error) || !run (&error)) {
    g_print ("FAIL: %s\n", error->message);
    g_clear_error (&error);
    return 1;
  }
  g_print ("%s: %d case(s) failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

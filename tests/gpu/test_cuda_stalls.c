/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A producer that announces a frame and never signals it ready (killed
 * between its FRAME and its write on the device, or one that means harm),
 * on GPU 0 in one process: a VMM ring of 4 slots with three semaphore
 * consumers, each mapped by a view of its own (real fds): one reads its
 * ready words on the host (protocol minor 12 on), two wait on the device.
 * Nothing is ever published to the first two.
 *
 *  - a read in place (wait_ready) and a copy (read) of a frame never
 *    signalled fail after the view's wait (0.5 s here), with
 *    GPUSHARE_CUDA_ERROR_TIMEOUT, and later reads of that view fail at
 *    once;
 *  - the copy into the consumer's buffer was never queued behind the wait:
 *    once the views are freed (their words forced, their streams drained)
 *    the buffer still holds what it held;
 *  - a wait that a flush cancels (gpushare_cuda_view_cancel ()) returns at
 *    once with GPUSHARE_CUDA_ERROR_CANCELLED, and once the flush is over
 *    the view reads the frame the producer then publishes;
 *  - freeing a view whose stream waits for ever returns in the time of
 *    its forced words, and the context still works after all of it.
 *
 * And a consumer that never signals done (it releases its frames, but its
 * GPU work on them never ends, or it means harm): a second ring of two
 * semaphore consumers, frame 1 of slot 0 read by both and signalled done
 * by one; slot 0 written again, ordered on upstream's stream.  The ring
 * names the other consumer, and no other, once its wait is older than the
 * limit (gpushare_cuda_ring_overdue (), what gpusharesink's housekeeping
 * asks past lease-timeout), and upstream's stream then goes on.
 *
 * Before these waits had a limit, the first case held its thread for
 * ever, and upstream's stream in the last waited for ever.  Prints one
 * SKIP line and exits 77 where no GPU is present.
 */

#include "config.h"

#include <string.h>
#include <unistd.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpusharecuda.h"
#include "gpusharecudaring.h"
#include "gpu-test-util.h"

#define N_SLOTS 4
#define WAIT_US (500 * 1000)
#define PATTERN 0xab

static GstVideoInfo info;
static gint failures;

static void
check (gboolean ok, const gchar * what)
{
  g_print ("%s %s\n", ok ? "PASS" : "FAIL", what);
  failures += !ok;
}

static gdouble
seconds_since (guint64 t0)
{
  return (gpu_test_now_ns () - t0) / 1e9;
}

/* a failure of the code wanted, within [lo, hi] s of t0 */
static void
check_failure (gboolean ok, GError ** error, gint code, guint64 t0,
    gdouble lo, gdouble hi, const gchar * what)
{
  gdouble s = seconds_since (t0);
  gboolean good = !ok && *error && (*error)->domain == GPUSHARE_CUDA_ERROR
      && (*error)->code == code && s >= lo && s <= hi;
  gchar *line = g_strdup_printf ("%s: %s after %.2f s (%s)", what,
      ok ? "returned TRUE" : "failed", s, *error ? (*error)->message :
      "no error");

  check (good, line);
  g_free (line);
  g_clear_error (error);
}

typedef struct
{
  GpuShareCudaView *view;
  guint64 after_ms;
} Cancel;

static gpointer
cancel_later (gpointer data)
{
  Cancel *c = data;

  g_usleep (c->after_ms * 1000);
  gpushare_cuda_view_cancel (c->view, TRUE);
  return NULL;
}

static GpuShareCudaView *
map (GpuShareCudaRing * ring, guint index, GError ** error)
{
  GpuShareSlots slots;
  gint fds[N_SLOTS + 2];

  if (!gpushare_cuda_ring_export (ring, index, &slots, fds, error))
    return NULL;
  return gpushare_cuda_view_new (0, NULL, &slots, fds, error);
}

/* on a stream of our own: never the context's whole work, which waits
 * on the stuck views' streams too */
static gboolean
fill (CUstream st, CUdeviceptr p, guint8 value, gsize size, GError ** error)
{
  return gpushare_cuda_check (gpushare_cuda ()->cuMemsetD8Async (p, value,
          size, st), "cuMemsetD8Async", error)
      && gpushare_cuda_check (gpushare_cuda ()->cuStreamSynchronize (st),
      "cuStreamSynchronize", error);
}

/* a view whose stream waits for ever is freed in the time of its forced
 * words, not for ever */
static void
free_stuck (GpuShareCudaView ** view, guint i)
{
  gchar *what = g_strdup_printf ("view %u, stuck, freed", i);
  guint64 t0 = gpu_test_now_ns ();

  gpushare_cuda_view_free (view[i]);
  view[i] = NULL;
  check (seconds_since (t0) < 3.0, what);
  g_free (what);
}

static gboolean
dst_untouched (CUstream st, CUdeviceptr dst, gsize size)
{
  guint8 *host = g_malloc (size);
  gboolean same = TRUE;
  gsize i;

  if (gpushare_cuda ()->cuMemcpyDtoHAsync (host, dst, size, st) !=
      CUDA_SUCCESS || gpushare_cuda ()->cuStreamSynchronize (st) !=
      CUDA_SUCCESS)
    same = FALSE;
  for (i = 0; same && i < size; i++)
    same = host[i] == PATTERN;
  g_free (host);
  return same;
}

/* the producer's side: a consumer whose done signal never comes */
static gboolean
run_done_overdue (CUdeviceptr src_buf, GError ** error)
{
  GpuShareCudaRing *ring;
  GpuShareCudaView *view[2] = { NULL, NULL };
  GpuSharePlanes src, dst, layout;
  CUdeviceptr dst_buf = 0;
  CUstream upstream = NULL;
  guint64 seq[64] = { 0, }, late;
  gsize size = GST_VIDEO_INFO_SIZE (&info);
  gboolean ok;
  CUresult r = CUDA_ERROR_NOT_READY;
  guint64 t0;
  guint i;

  ring = gpushare_cuda_ring_new (0, NULL, GPUSHARE_MEM_CUDA_VMM, 2, N_SLOTS,
      gpushare_round_up (size, 2 << 20), error);
  ok = ring != NULL
      && gpushare_cuda_check (gpushare_cuda ()->cuMemAlloc (&dst_buf, size),
      "cuMemAlloc", error)
      && gpushare_cuda_check (gpushare_cuda ()->cuStreamCreate (&upstream,
          CU_STREAM_NON_BLOCKING), "cuStreamCreate", error);
  for (i = 0; ok && i < 2; i++)
    ok = gpushare_cuda_ring_add_consumer (ring, i, GPUSHARE_SYNC_SEMAPHORE,
        error);
  for (i = 0; ok && i < 2; i++) {
    view[i] = map (ring, i, error);
    ok = view[i] != NULL;
  }
  gpu_test_planes (&src, &info, src_buf);
  gpu_test_planes (&dst, &info, dst_buf);
  gpu_test_planes (&layout, &info, 0);
  /* frame 1 in slot 0 to both; consumer 1 reads it and says done, 0 does
   * not */
  ok = ok && gpushare_cuda_ring_begin (ring, 0, error)
      && gpushare_cuda_ring_copy_in (ring, 0, &info, &src, &layout, NULL, NULL,
      TRUE, error)
      && gpushare_cuda_ring_settle (ring, 0, error)
      && gpushare_cuda_ring_publish (ring, 0, 0x3, 1, error)
      && gpushare_cuda_view_read (view[1], 0, 1, &info, &layout, &dst, TRUE,
      error);
  /* slot 0 again, upstream's stream ordered after the copy */
  ok = ok && gpushare_cuda_ring_begin (ring, 0, error)
      && gpushare_cuda_ring_copy_in (ring, 0, &info, &src, &layout, upstream,
      NULL, TRUE, error);
  if (!ok)
    goto done;
  late = gpushare_cuda_ring_overdue (ring, g_get_monotonic_time (),
      300 * 1000, seq);
  check (late == 0, "no consumer is late before the limit");
  g_usleep (400 * 1000);
  late = gpushare_cuda_ring_overdue (ring, g_get_monotonic_time (),
      300 * 1000, seq);
  {
    gchar *what = g_strdup_printf ("past the limit the consumer that never "
        "signalled done is named, alone, with its frame (holders 0x%"
        G_GINT64_MODIFIER "x, frame %" G_GUINT64_FORMAT ")", late, seq[0]);

    check (late == 0x1 && seq[0] == 1, what);
    g_free (what);
  }
  t0 = gpu_test_now_ns ();
  while (seconds_since (t0) < 3.0
      && (r = gpushare_cuda ()->cuStreamQuery (upstream)) ==
      CUDA_ERROR_NOT_READY)
    g_usleep (1000);
  check (r == CUDA_SUCCESS, "upstream's stream goes on once it is named");

done:
  gpu_test_ring_free (ring, view, 2, 2);
  if (upstream)
    gpushare_cuda ()->cuStreamDestroy (upstream);
  if (dst_buf)
    gpushare_cuda ()->cuMemFree (dst_buf);
  return ok;
}

static gboolean
run (GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GpuShareCudaRing *ring = NULL;
  GpuShareCudaView *view[3] = { NULL, NULL, NULL };
  GpuSharePlanes src, dst, layout;
  CUcontext ctx;
  CUdeviceptr src_buf = 0, dst_buf = 0;
  CUstream st = NULL;
  gsize size = GST_VIDEO_INFO_SIZE (&info), slot_size;
  GThread *thread;
  Cancel c;
  guint64 t0;
  gboolean ok, r;
  guint i;

  slot_size = gpushare_round_up (size, 2 << 20);
  if (!gpushare_cuda_primary_push (0, &ctx, error))
    return FALSE;
  ok = gpushare_cuda_check (cu->cuStreamCreate (&st, CU_STREAM_NON_BLOCKING),
      "cuStreamCreate", error)
      && gpushare_cuda_check (cu->cuMemAlloc (&src_buf, size), "cuMemAlloc",
      error)
      && gpushare_cuda_check (cu->cuMemAlloc (&dst_buf, size), "cuMemAlloc",
      error)
      && fill (st, src_buf, 0x11, size, error)
      && fill (st, dst_buf, PATTERN, size, error);
  if (ok) {
    ring = gpushare_cuda_ring_new (0, ctx, GPUSHARE_MEM_CUDA_VMM, 1, N_SLOTS,
        slot_size, error);
    ok = ring != NULL;
  }
  for (i = 0; ok && i < 3; i++)
    ok = gpushare_cuda_ring_add_consumer (ring, i, GPUSHARE_SYNC_SEMAPHORE,
        error);
  ok = ok && gpushare_cuda_ring_add_words (ring, 0, error);
  for (i = 0; ok && i < 3; i++) {
    view[i] = map (ring, i, error);
    ok = view[i] != NULL;
    if (ok)
      gpushare_cuda_view_set_wait (view[i], WAIT_US);
  }
  gpu_test_planes (&src, &info, src_buf);
  gpu_test_planes (&dst, &info, dst_buf);
  gpu_test_planes (&layout, &info, 0);
  if (!ok)
    goto done;

  /* the producer announced frame 1 in slot 0 and never signals it.  Each
   * stuck view goes before the next case: freeing memory or a module may
   * wait for the whole context, another view's stuck stream with it */
  t0 = gpu_test_now_ns ();
  r = gpushare_cuda_view_wait_ready (view[0], 0, 1, error);
  check_failure (r, error, GPUSHARE_CUDA_ERROR_TIMEOUT, t0, 0.45, 3.0,
      "read in place, ready words on the host, never signalled");
  t0 = gpu_test_now_ns ();
  r = gpushare_cuda_view_read (view[0], 1, 2, &info, &layout, &dst, TRUE,
      error);
  check_failure (r, error, GPUSHARE_CUDA_ERROR_TIMEOUT, t0, 0.0, 0.2,
      "the next read of that view");
  free_stuck (view, 0);

  t0 = gpu_test_now_ns ();
  r = gpushare_cuda_view_read (view[1], 0, 1, &info, &layout, &dst, TRUE,
      error);
  check_failure (r, error, GPUSHARE_CUDA_ERROR_TIMEOUT, t0, 0.45, 3.0,
      "copy, ready waited for on the device, never signalled");
  free_stuck (view, 1);
  /* its words forced, its stream drained: a copy queued behind the wait
   * would have written dst by now */
  check (dst_untouched (st, dst_buf, size),
      "no copy was left behind the wait that never ended");

  /* a flush ends a wait, and the view reads on after it */
  gpushare_cuda_view_set_wait (view[2], 30 * G_USEC_PER_SEC);
  c.view = view[2];
  c.after_ms = 300;
  thread = g_thread_new ("cancel", cancel_later, &c);
  t0 = gpu_test_now_ns ();
  r = gpushare_cuda_view_wait_ready (view[2], 0, 1, error);
  g_thread_join (thread);
  check_failure (r, error, GPUSHARE_CUDA_ERROR_CANCELLED, t0, 0.25, 2.0,
      "a wait that a flush cancels");
  t0 = gpu_test_now_ns ();
  r = gpushare_cuda_view_wait_ready (view[2], 0, 1, error);
  check_failure (r, error, GPUSHARE_CUDA_ERROR_CANCELLED, t0, 0.0, 0.2,
      "a wait that begins while flushing");
  gpushare_cuda_view_cancel (view[2], FALSE);
  ok = gpushare_cuda_ring_begin (ring, 0, error)
      && gpushare_cuda_ring_copy_in (ring, 0, &info, &src, &layout, NULL, NULL,
      TRUE, error)
      && gpushare_cuda_ring_settle (ring, 0, error)
      && gpushare_cuda_ring_publish (ring, 0, 0x4, 1, error);
  if (ok) {
    r = gpushare_cuda_view_read (view[2], 0, 1, &info, &layout, &dst, TRUE,
        error);
    check (r, "after the flush, the frame then published is read");
    g_clear_error (error);
  }
  ok = ok && gpushare_cuda_check (cu->cuCtxSynchronize (),
      "cuCtxSynchronize", error);
  ok = ok && run_done_overdue (src_buf, error);

done:
  gpu_test_ring_free (ring, view, 3, 3);
  /* the context is whole after all of it */
  ok = ok && gpushare_cuda_check (cu->cuCtxSynchronize (),
      "cuCtxSynchronize", error);
  if (st)
    cu->cuStreamDestroy (st);
  if (src_buf)
    cu->cuMemFree (src_buf);
  if (dst_buf)
    cu->cuMemFree (dst_buf);
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
  /* a wait without a limit is a failure too */
  alarm (60);
  if (!gpushare_cuda_load (&error) || !run (&error)) {
    g_print ("FAIL: %s\n", error->message);
    g_clear_error (&error);
    return 1;
  }
  g_print ("%s: %d case(s) failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

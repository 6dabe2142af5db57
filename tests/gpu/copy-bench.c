/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How long one frame's copy between device memory takes on this GPU: the
 * host's time to enqueue it and the time until it is done, for
 * cuMemcpy2DAsync, the plugin's copy kernel (ext/cuda/gpusharecudacopy.cu,
 * from the fat binary the plugin embeds) and a 1D cuMemcpyDtoDAsync of as
 * many bytes, from pitched memory (rows 512-byte aligned, as
 * cuMemAllocPitch gives GStreamer's CUDA pools) into a tight layout in cuMemAlloc and in VMM memory (as
 * the plugin's slots).  Then the host's time for each driver call of a
 * frame's handoff, called back to back and called after a sleep of
 * PACE_US (as a paced or live stream calls them: the calls of a thread
 * that has just woken up cost more).  It prints figures; it is not a test.
 *
 *   gpushare-copy-bench [ITERATIONS [PACE_US]]
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "gpusharecuda.h"
#include "gpusharecudaloader.h"
#include "gpusharecudacopy-fatbin.h"

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

static gdouble
median (GArray * v)
{
  g_array_sort (v, cmp_double);
  return g_array_index (v, gdouble, v->len / 2);
}

#define CHECK(call) G_STMT_START { CUresult r_ = (call); \
  if (r_ != CUDA_SUCCESS) { \
    g_printerr ("%s: %s\n", #call, gpushare_cuda_result_to_string (r_)); \
    exit (1); } } G_STMT_END

static CUdeviceptr
vmm_alloc (GpuShareCudaApi * cu, gsize size)
{
  CUmemAllocationProp p;
  CUmemGenericAllocationHandle h;
  CUmemAccessDesc a;
  CUdeviceptr ptr;
  size_t g;

  memset (&p, 0, sizeof (p));
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CHECK (cu->cuMemGetAllocationGranularity (&g, &p,
          CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size = (size + g - 1) / g * g;
  CHECK (cu->cuMemCreate (&h, size, &p, 0));
  CHECK (cu->cuMemAddressReserve (&ptr, size, 0, 0, 0));
  CHECK (cu->cuMemMap (ptr, size, 0, h, 0));
  a.location = p.location;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK (cu->cuMemSetAccess (ptr, size, &a, 1));
  return ptr;
}

enum
{ CALL_LAUNCH, CALL_RECORD, CALL_QUERY_DONE, CALL_WRITE_VALUE,
  CALL_WAIT_VALUE, CALL_STREAM_SYNC, CALL_PUSH_POP, N_CALLS
};

/* the host's time of each call of a 1080p frame's handoff, p50 and p99,
 * the calls back to back (pace_us 0) or after a sleep each time */
static void
calls (GpuShareCudaApi * cu, CUcontext ctx, CUstream stream, CUfunction fn,
    guint n, guint pace_us)
{
  static const gchar *const names[N_CALLS] = {
    "cuLaunchKernel (the copy kernel, 1080p NV12)",
    "cuEventRecord", "cuEventQuery, the work done",
    "cuStreamWriteValue64", "cuStreamWaitValue64, the value there",
    "cuStreamSynchronize, the work done", "cuCtxPushCurrent + cuCtxPopCurrent"
  };
  gsize w = 1920, rows = 1080 * 3 / 2, pitch = 2048;
  unsigned long long sp = pitch, dp = w;
  unsigned int words = w / 16, r = rows;
  CUdeviceptr src, dst, word;
  GArray *t[N_CALLS];
  CUcontext popped;
  CUevent ev;
  guint i, c;

  CHECK (cu->cuMemAlloc (&src, pitch * rows));
  CHECK (cu->cuMemAlloc (&dst, w * rows));
  CHECK (cu->cuMemAlloc (&word, 8));
  CHECK (cu->cuEventCreate (&ev, CU_EVENT_DISABLE_TIMING));
  for (c = 0; c < N_CALLS; c++)
    t[c] = g_array_sized_new (FALSE, FALSE, sizeof (gdouble), n);
  for (i = 0; i < n; i++) {
    void *args[] = { &src, &sp, &dst, &dp, &words, &r };
    gint64 t0, t1;
    gdouble d;

    for (c = 0; c < N_CALLS; c++) {
      if (pace_us)
        g_usleep (pace_us);
      t0 = g_get_monotonic_time ();
      switch (c) {
        case CALL_LAUNCH:
          CHECK (cu->cuLaunchKernel (fn, (words + 127) / 128, (r + 1) / 2,
                  1, 128, 2, 1, 0, stream, args, NULL));
          break;
        case CALL_RECORD:
          CHECK (cu->cuEventRecord (ev, stream));
          break;
        case CALL_QUERY_DONE:
          CHECK (cu->cuEventQuery (ev));
          break;
        case CALL_WRITE_VALUE:
          CHECK (cu->cuStreamWriteValue64 (stream, word, i + 1, 0));
          break;
        case CALL_WAIT_VALUE:
          CHECK (cu->cuStreamWaitValue64 (stream, word, i + 1,
                  CU_STREAM_WAIT_VALUE_GEQ));
          break;
        case CALL_STREAM_SYNC:
          CHECK (cu->cuStreamSynchronize (stream));
          break;
        case CALL_PUSH_POP:
          CHECK (cu->cuCtxPushCurrent (ctx));
          CHECK (cu->cuCtxPopCurrent (&popped));
          break;
      }
      t1 = g_get_monotonic_time ();
      d = t1 - t0;
      g_array_append_val (t[c], d);
      /* each call starts from an idle stream */
      CHECK (cu->cuStreamSynchronize (stream));
    }
  }
  g_print ("\n| call, %s | host us p50 | p99 |\n|---|---:|---:|\n",
      pace_us ? "each after a sleep" : "back to back");
  for (c = 0; c < N_CALLS; c++) {
    gdouble p50 = median (t[c]);

    g_print ("| %s | %.0f | %.0f |\n", names[c], p50,
        g_array_index (t[c], gdouble, t[c]->len * 99 / 100));
    g_array_free (t[c], TRUE);
  }
  if (pace_us)
    g_print ("(after a sleep of %u us before each call)\n", pace_us);
  CHECK (cu->cuEventDestroy (ev));
  CHECK (cu->cuMemFree (src));
  CHECK (cu->cuMemFree (dst));
  CHECK (cu->cuMemFree (word));
}

int
main (int argc, char **argv)
{
  static const guint sizes[2][2] = { {1920, 1080}, {3840, 2160} };
  static const gchar *const ops[3] = { "cuMemcpy2DAsync",
    "copy kernel (128x2 threads a block)",
    "cuMemcpyDtoDAsync, 1D, as many bytes"
  };
  guint n = argc > 1 ? (guint) atoi (argv[1]) : 300, si, dk, op, i;
  guint pace = argc > 2 ? (guint) atoi (argv[2]) : 1000;
  GpuShareCudaApi *cu;
  GError *error = NULL;
  CUcontext ctx;
  CUstream stream;
  CUevent ev;
  CUmodule module;
  CUfunction fn;
  gint64 t;

  if (n == 0)
    n = 300;
  if (!gpushare_cuda_load (&error) || !gpushare_cuda_primary_push (0, &ctx,
          &error)) {
    g_print ("no GPU here: %s\n", error->message);
    return 0;
  }
  cu = gpushare_cuda ();
  CHECK (cu->cuStreamCreate (&stream, CU_STREAM_NON_BLOCKING));
  CHECK (cu->cuEventCreate (&ev, CU_EVENT_DISABLE_TIMING));
  t = g_get_monotonic_time ();
  CHECK (cu->cuModuleLoadData (&module, gpushare_cuda_copy_fatbin));
  CHECK (cu->cuModuleGetFunction (&fn, module, "gpushare_copy_rows_16"));
  g_print ("copy kernel's module loaded in %" G_GINT64_FORMAT " us\n",
      g_get_monotonic_time () - t);
  g_print
      ("| frame (NV12) | into | copy | enqueued, p50 (us) | done, p50 (us) |\n"
      "|---|---|---|---:|---:|\n");
  for (si = 0; si < 2; si++) {
    gsize w = sizes[si][0], rows = sizes[si][1] * 3 / 2, pitch;
    CUdeviceptr src, dst_plain, dst_vmm;

    pitch = (w + 511) & ~(gsize) 511;
    CHECK (cu->cuMemAlloc (&src, pitch * rows));
    CHECK (cu->cuMemAlloc (&dst_plain, w * rows));
    dst_vmm = vmm_alloc (cu, w * rows);
    for (dk = 0; dk < 2; dk++) {
      CUdeviceptr dst = dk ? dst_vmm : dst_plain;

      for (op = 0; op < 3; op++) {
        GArray *enq = g_array_sized_new (FALSE, FALSE, sizeof (gdouble), n);
        GArray *done = g_array_sized_new (FALSE, FALSE, sizeof (gdouble), n);

        for (i = 0; i < n; i++) {
          gint64 t0 = g_get_monotonic_time (), t1, t2;
          gdouble d;

          if (op == 0) {
            CUDA_MEMCPY2D m;

            memset (&m, 0, sizeof (m));
            m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            m.srcDevice = src;
            m.srcPitch = pitch;
            m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            m.dstDevice = dst;
            m.dstPitch = w;
            m.WidthInBytes = w;
            m.Height = rows;
            CHECK (cu->cuMemcpy2DAsync (&m, stream));
          } else if (op == 1) {
            unsigned long long sp = pitch, dp = w;
            unsigned int words = w / 16, r = rows;
            void *args[] = { &src, &sp, &dst, &dp, &words, &r };

            CHECK (cu->cuLaunchKernel (fn, (words + 127) / 128, (r + 1) / 2,
                    1, 128, 2, 1, 0, stream, args, NULL));
          } else {
            CHECK (cu->cuMemcpyDtoDAsync (dst, src, w * rows, stream));
          }
          t1 = g_get_monotonic_time ();
          CHECK (cu->cuEventRecord (ev, stream));
          while (cu->cuEventQuery (ev) == CUDA_ERROR_NOT_READY);
          t2 = g_get_monotonic_time ();
          d = t1 - t0;
          g_array_append_val (enq, d);
          d = t2 - t0;
          g_array_append_val (done, d);
        }
        g_print ("| %ux%u | %s | %s | %.0f | %.0f |\n", sizes[si][0],
            sizes[si][1], dk ? "VMM memory" : "cuMemAlloc", ops[op],
            median (enq), median (done));
        g_array_free (enq, TRUE);
        g_array_free (done, TRUE);
      }
    }
    CHECK (cu->cuMemFree (src));
    CHECK (cu->cuMemFree (dst_plain));
  }
  calls (cu, ctx, stream, fn, n, 0);
  calls (cu, ctx, stream, fn, n, pace ? pace : 1000);
  CHECK (cu->cuModuleUnload (module));
  return 0;
}

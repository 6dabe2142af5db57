/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Semaphore words and IPC events between two real processes on a real GPU.
 *
 *   1  semaphore words: a 4-slot ring of 4 MiB frames, 2000 frames paced by
 *      a message per frame, then 2000 with the consumer's waits enqueued
 *      before the producer fills anything; the consumer copies every frame
 *      on its GPU stream, samples each copy and checks every 16th (and the
 *      last) in full: a torn or stale frame fails.  Then round-trip latency
 *      over a 1-slot block, consumer waits enqueued ahead and per frame.
 *   2  the same ring and round trip with CUDA IPC events, all created by
 *      the producer (ready and done), the consumer records into done.
 *   3  force: a stream blocked on a word that is never written is released
 *      by gpushare_cuda_sem_force within 1 s (a: one process, device memory
 *      back where it was after free; b: imported block, producer died;
 *      c: 16 blocked streams, more than the default 8 hardware queues
 *      (CUDA_DEVICE_MAX_CONNECTIONS), so the force stream shares a queue
 *      with a blocked one: reported, not counted, it is why gpushare keeps
 *      its streams few; d: the same with 32 queues, counted).
 *   4  1000 create / export / import / free cycles of a semaphore block: no
 *      growth of fds or device memory on either side.
 *
 * fork() happens before any CUDA call: the parent never touches CUDA and
 * forks a producer and a consumer (or one process) per case, each under
 * an alarm so that a hang is a failure, not a stuck test.
 * Prints one SKIP line and exits 77 where no usable GPU is present.
 */

#include <gst/gst.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpusharecuda.h"
#include "gpusharecudasync.h"
#include "gpu-test-util.h"

#define SKIP 77
#define DEVICE 0
#define N_SLOTS 4
#define ITERATIONS 2000         /* a multiple of N_SLOTS */
#define FULL_CHECK_EVERY 16
#define N_SAMPLES 4
#define LAT_ITERATIONS 2000
#define LAT_WARMUP 100
#define CYCLES 1000
#define MANY_STREAMS 16
#define SYNC_TIMEOUT_MS 10000   /* work that must finish */
#define RELEASE_TIMEOUT_MS 1000 /* a forced stream must be free within */
#define BLOCKED_CHECK_US 50000  /* how long a wait must stay blocked */
#define CASE_ALARM_S 120
#define MEM_SLACK (1024 * 1024) /* a leaked block is 2 MiB */

G_STATIC_ASSERT (ITERATIONS % N_SLOTS == 0);

typedef gint (*RoleFunc) (gint sock);

/* one per frame or per round trip, over the socketpair */
typedef struct
{
  guint32 slot;
  guint32 reserved;
  guint64 value;
} Msg;

/* ------------------------------------------------------------------------ */
/* plumbing */

static gboolean
ck (CUresult res, const gchar * what)
{
  if (res == CUDA_SUCCESS)
    return TRUE;
  g_printerr ("    %s failed: %s\n", what,
      gpushare_cuda_result_to_string (res));
  return FALSE;
}

/* prints and clears *error; FALSE, for "ok = gerr (...)" */
static gboolean
gerr (const gchar * who, GError ** error)
{
  g_printerr ("    %s: %s\n", who, *error ? (*error)->message : "failed");
  g_clear_error (error);
  return FALSE;
}

/* the same, as a process exit code */
static gint
gfail (const gchar * who, GError ** error)
{
  gerr (who, error);
  return 1;
}

static gboolean
send_byte (gint sock, guint8 b)
{
  return gpu_test_write_all (sock, &b, 1);
}

static gboolean
recv_byte (gint sock, guint8 expect)
{
  guint8 b = 0;

  if (!gpu_test_read_all (sock, &b, 1, -1)) {
    g_printerr ("    peer hung up\n");
    return FALSE;
  }
  return b == expect;
}

static gboolean
send_msg (gint sock, guint slot, guint64 value)
{
  Msg m = { slot, 0, value };

  return gpu_test_write_all (sock, &m, sizeof (m));
}

static gboolean
recv_msg (gint sock, guint slot, guint64 value)
{
  Msg m;

  if (!gpu_test_read_all (sock, &m, sizeof (m), -1)) {
    g_printerr ("    peer hung up\n");
    return FALSE;
  }
  if (m.slot != slot || m.value != value) {
    g_printerr ("    expected slot %u value %" G_GUINT64_FORMAT ", got slot %u "
        "value %" G_GUINT64_FORMAT "\n", slot, value, m.slot, m.value);
    return FALSE;
  }
  return TRUE;
}

static gsize
device_free_mem (void)
{
  size_t free_mem = 0, total = 0;

  gpushare_cuda ()->cuMemGetInfo (&free_mem, &total);
  return free_mem;
}

/* loads the driver and makes the device's primary context current for the
 * whole process, as the elements hold theirs: each new or import then only
 * retains it instead of creating it anew */
static gboolean
hold_ctx (void)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  CUcontext ctx;
  CUdevice dev;

  if (!gpushare_cuda_load (&error))
    return gerr ("cuda", &error);
  cu = gpushare_cuda ();
  return ck (cu->cuDeviceGet (&dev, DEVICE), "cuDeviceGet")
      && ck (cu->cuDevicePrimaryCtxRetain (&ctx, dev),
      "cuDevicePrimaryCtxRetain")
      && ck (cu->cuCtxSetCurrent (ctx), "cuCtxSetCurrent");
}

static gboolean
new_stream (CUstream * stream)
{
  return ck (gpushare_cuda ()->cuStreamCreate (stream,
          CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

/* Polls instead of cuStreamSynchronize, so that a stream that never drains
 * is a failure, not a hang.  CUDA_ERROR_NOT_READY after the timeout. */
static CUresult
stream_wait (CUstream stream, guint timeout_ms, guint64 * took_ns)
{
  guint64 t0 = gpu_test_now_ns ();
  guint64 deadline = t0 + (guint64) timeout_ms * 1000000;
  CUresult res;

  for (;;) {
    res = gpushare_cuda ()->cuStreamQuery (stream);
    if (res != CUDA_ERROR_NOT_READY || gpu_test_now_ns () >= deadline)
      break;
    g_usleep (20);
  }
  if (took_ns)
    *took_ns = gpu_test_now_ns () - t0;
  return res;
}

static gboolean
stream_done (CUstream stream, const gchar * who)
{
  CUresult res = stream_wait (stream, SYNC_TIMEOUT_MS, NULL);

  if (res == CUDA_ERROR_NOT_READY) {
    g_printerr ("    %s: stream did not drain within %d ms (a wait that was "
        "never released)\n", who, SYNC_TIMEOUT_MS);
    return FALSE;
  }
  return ck (res, who);
}

/* reads one 64-bit word through a private stream */
static gboolean
read_word (CUdeviceptr word, guint64 * value)
{
  CUstream s = NULL;
  gboolean ok;

  if (!new_stream (&s))
    return FALSE;
  ok = ck (gpushare_cuda ()->cuMemcpyDtoHAsync (value, word, sizeof (*value),
          s), "cuMemcpyDtoHAsync") && stream_done (s, "read word");
  gpushare_cuda ()->cuStreamDestroy (s);
  return ok;
}

static gint
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

static void
print_latency (const gchar * name, guint64 * ns, guint n, gboolean pass)
{
  qsort (ns, n, sizeof (guint64), (GCompareFunc) cmp_u64);
  g_print ("  %s: %u round trips, p50 %.1f us, p99 %.1f us, max %.1f us: "
      "%s\n", name, n, ns[n / 2] / 1000.0, ns[(gsize) n * 99 / 100] / 1000.0,
      ns[n - 1] / 1000.0, pass ? "PASS" : "FAIL");
}

static gsize
frame_slot_size (void)
{
  /* a 1080p NV12 frame: 4 MiB slots on the H200 */
  return gpushare_cuda_vmm_slot_size (0, 1920 * 1080 * 3 / 2);
}

static CUdeviceptr
dptr (gconstpointer p)
{
  return (CUdeviceptr) (uintptr_t) p;
}

/* ------------------------------------------------------------------------ */
/* the consumer half of a ring, shared by semaphores and events */

typedef enum
{
  SYNC_SEM,
  SYNC_EVENT,
} SyncKind;

typedef struct
{
  SyncKind kind;
  GpuShareCudaImport *import;
  GpuShareCudaSem *sem;
  GpuShareCudaEvents *ev;       /* ready 0 .. N_SLOTS - 1, then done */
  gsize slot_size;
  CUstream stream;
  CUdeviceptr copy[N_SLOTS];
  guint32 *samples;             /* pinned, ITERATIONS * N_SAMPLES */
  guint32 *full;                /* pinned, one slot */
} RingConsumer;

static gboolean
ring_consumer_init (RingConsumer * rc, SyncKind kind)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  void *host = NULL;
  guint i;

  memset (rc, 0, sizeof (*rc));
  rc->kind = kind;
  rc->slot_size = frame_slot_size ();
  if (!new_stream (&rc->stream))
    return FALSE;
  for (i = 0; i < N_SLOTS; i++)
    if (!ck (cu->cuMemAlloc (&rc->copy[i], rc->slot_size), "cuMemAlloc"))
      return FALSE;
  if (!ck (cu->cuMemAllocHost (&host,
              sizeof (guint32) * ITERATIONS * N_SAMPLES), "cuMemAllocHost"))
    return FALSE;
  rc->samples = host;
  if (!ck (cu->cuMemAllocHost (&host, rc->slot_size), "cuMemAllocHost"))
    return FALSE;
  rc->full = host;
  return TRUE;
}

static void
ring_consumer_clear (RingConsumer * rc)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  guint i;

  /* release our stream if it still waits on a word, then drain it */
  if (rc->sem)
    gpushare_cuda_sem_force (rc->sem, NULL);
  if (rc->stream) {
    stream_wait (rc->stream, SYNC_TIMEOUT_MS, NULL);
    cu->cuStreamDestroy (rc->stream);
  }
  for (i = 0; i < N_SLOTS; i++)
    if (rc->copy[i])
      cu->cuMemFree (rc->copy[i]);
  if (rc->samples)
    cu->cuMemFreeHost (rc->samples);
  if (rc->full)
    cu->cuMemFreeHost (rc->full);
  gpushare_cuda_sem_free (rc->sem);
  gpushare_cuda_events_free (rc->ev);
  if (rc->import)
    gpushare_cuda_import_unref (rc->import);
  memset (rc, 0, sizeof (*rc));
}

/* One round of ITERATIONS frames, values base + 1 .. base + ITERATIONS.
 * paced: a message per frame tells the value; otherwise the consumer derives
 * it and enqueues its waits ahead of the producer, which starts on "G". */
static gboolean
ring_consumer_round (RingConsumer * rc, gint sock, const gchar * name,
    guint64 base, gboolean paced)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  gsize off[N_SAMPLES];
  guint64 t0 = 0, t1, first_bad = 0;
  guint bad_samples = 0, full_checks = 0, i, j;
  gsize bad_words = 0, k;
  guint32 got_bad = 0;
  gboolean go_sent = FALSE, ok = TRUE, pass;

  off[0] = 0;
  off[1] = rc->slot_size / 3 / 4 * 4;
  off[2] = rc->slot_size * 2 / 3 / 4 * 4;
  off[3] = rc->slot_size - 4;
  if (paced) {
    ok = send_byte (sock, 'G');
    go_sent = TRUE;
    t0 = gpu_test_now_ns ();
  }

  for (i = 1; ok && i <= ITERATIONS; i++) {
    guint64 v = base + i;
    guint s = v % N_SLOTS;
    CUdeviceptr slot = dptr (rc->import->data[s]);

    if (paced && !recv_msg (sock, s, v)) {
      ok = FALSE;
      break;
    }
    if (rc->kind == SYNC_SEM)
      ok = gpushare_cuda_sem_wait (rc->stream,
          gpushare_cuda_sem_ready (rc->sem, s), v, &error);
    else
      ok = ck (cu->cuStreamWaitEvent (rc->stream,
              gpushare_cuda_events_get (rc->ev, s), 0), "cuStreamWaitEvent");
    ok = ok && ck (cu->cuMemcpyDtoDAsync (rc->copy[s], slot, rc->slot_size,
            rc->stream), "cuMemcpyDtoDAsync");
    for (j = 0; ok && j < N_SAMPLES; j++)
      ok = ck (cu->cuMemcpyDtoHAsync (&rc->samples[(i - 1) * N_SAMPLES + j],
              rc->copy[s] + off[j], 4, rc->stream), "cuMemcpyDtoHAsync");
    if (!ok)
      break;
    if (rc->kind == SYNC_SEM) {
      ok = gpushare_cuda_sem_signal (rc->stream,
          gpushare_cuda_sem_done (rc->sem, s), v, &error);
    } else {
      /* the producer waits on done only after this message: a wait binds
       * to the newest record (trap 2) */
      ok = ck (cu->cuEventRecord (gpushare_cuda_events_get (rc->ev,
                  N_SLOTS + s), rc->stream), "cuEventRecord")
          && send_msg (sock, s, v);
    }
    if (!ok)
      break;

    if (i % FULL_CHECK_EVERY == 0 || i == ITERATIONS) {
      if (!go_sent) {
        /* FULL_CHECK_EVERY - 1 waits are in the stream before the producer
         * fills anything: they must really block on the GPU */
        ok = send_byte (sock, 'G');
        go_sent = TRUE;
        t0 = gpu_test_now_ns ();
      }
      ok = ok && ck (cu->cuMemcpyDtoHAsync (rc->full, rc->copy[s],
              rc->slot_size, rc->stream), "cuMemcpyDtoHAsync")
          && stream_done (rc->stream, name);
      if (!ok)
        break;
      full_checks++;
      for (k = 0; k < rc->slot_size / 4; k++) {
        if (rc->full[k] != (guint32) v) {
          if (bad_words == 0) {
            first_bad = v;
            got_bad = rc->full[k];
          }
          bad_words++;
        }
      }
    }
  }
  ok = ok && stream_done (rc->stream, name);
  t1 = gpu_test_now_ns ();
  if (error)
    gerr (name, &error);

  for (i = 1; ok && i <= ITERATIONS; i++)
    for (j = 0; j < N_SAMPLES; j++)
      if (rc->samples[(i - 1) * N_SAMPLES + j] != (guint32) (base + i)) {
        if (bad_samples == 0 && bad_words == 0) {
          first_bad = base + i;
          got_bad = rc->samples[(i - 1) * N_SAMPLES + j];
        }
        bad_samples++;
      }

  pass = ok && bad_samples == 0 && bad_words == 0;
  g_print ("  %s: %d frames of %" G_GSIZE_FORMAT " MiB through %d slots, "
      "%u samples, %u full checks: %u bad samples, %" G_GSIZE_FORMAT
      " bad words; %.1f ms (%.0f frames/s): %s\n", name, ITERATIONS,
      rc->slot_size >> 20, N_SLOTS, ITERATIONS * N_SAMPLES, full_checks,
      bad_samples, bad_words, (t1 - t0) / 1e6,
      ITERATIONS / ((t1 - t0) / 1e9), pass ? "PASS" : "FAIL");
  if (bad_samples || bad_words)
    g_print ("    first bad frame %" G_GUINT64_FORMAT " read %u (stale or "
        "torn)\n", first_bad, got_bad);
  if (!ok)
    g_print ("    %s did not complete\n", name);
  /* the verdict ends the round for the producer */
  send_byte (sock, pass ? 1 : 0);
  return pass;
}

/* ------------------------------------------------------------------------ */
/* case 1: semaphore words */

/* the producer half of a semaphore ring round */
static gboolean
sem_producer_round (GpuShareCudaAlloc * alloc, GpuShareCudaSem * sem,
    CUstream ps, gint sock, guint64 base, gboolean paced)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  gboolean ok;
  guint i;

  if (!recv_byte (sock, 'G'))
    return FALSE;
  for (i = 1; i <= ITERATIONS; i++) {
    guint64 v = base + i;
    guint s = v % N_SLOTS;

    /* the slot's previous frame was v - N_SLOTS: reuse it only once the
     * consumer is done with that one (trap 2) */
    ok = (v <= N_SLOTS || gpushare_cuda_sem_wait (ps,
            gpushare_cuda_sem_done (sem, s), v - N_SLOTS, &error))
        && ck (cu->cuMemsetD32Async (dptr (alloc->data[s]), (guint32) v,
            alloc->slot_size / 4, ps), "cuMemsetD32Async")
        && gpushare_cuda_sem_signal (ps, gpushare_cuda_sem_ready (sem, s), v,
        &error) && (!paced || send_msg (sock, s, v));
    if (!ok)
      return error ? gerr ("producer", &error) : FALSE;
  }
  /* the last frame of each slot consumed */
  for (i = ITERATIONS - N_SLOTS + 1; i <= ITERATIONS; i++)
    if (!gpushare_cuda_sem_wait (ps, gpushare_cuda_sem_done (sem,
                (base + i) % N_SLOTS), base + i, &error))
      return gerr ("producer", &error);
  if (!stream_done (ps, "producer"))
    return FALSE;
  return recv_byte (sock, 1);
}

/* 1-slot round trips: ready from the producer, the consumer's stream waits
 * and writes done, the producer's stream waits on done, the producer's host
 * waits on its stream */
static gboolean
sem_producer_latency (GpuShareCudaSem * lat, CUstream ps, gint sock,
    guint64 base, gboolean paced, const gchar * name)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  guint64 *ns = g_new (guint64, LAT_ITERATIONS);
  gboolean ok = TRUE;
  guint j;

  ok = recv_byte (sock, 'G');
  for (j = 1; ok && j <= LAT_WARMUP + LAT_ITERATIONS; j++) {
    guint64 v = base + j, t0 = gpu_test_now_ns ();

    ok = gpushare_cuda_sem_signal (ps, gpushare_cuda_sem_ready (lat, 0), v,
        &error) && (!paced || send_msg (sock, 0, v))
        && gpushare_cuda_sem_wait (ps, gpushare_cuda_sem_done (lat, 0), v,
        &error) && ck (cu->cuStreamSynchronize (ps), "cuStreamSynchronize");
    if (ok && j > LAT_WARMUP)
      ns[j - LAT_WARMUP - 1] = gpu_test_now_ns () - t0;
  }
  if (error)
    gerr ("producer", &error);
  ok = ok && recv_byte (sock, 1);
  if (ok)
    print_latency (name, ns, LAT_ITERATIONS, TRUE);
  else
    g_print ("  %s: FAIL\n", name);
  g_free (ns);
  return ok;
}

static gboolean
sem_consumer_latency (GpuShareCudaSem * lat, CUstream cs, gint sock,
    guint64 base, gboolean paced, const gchar * name)
{
  GError *error = NULL;
  gboolean ok = TRUE;
  guint j;

  if (paced)
    ok = send_byte (sock, 'G');
  for (j = 1; ok && j <= LAT_WARMUP + LAT_ITERATIONS; j++) {
    guint64 v = base + j;

    ok = (!paced || recv_msg (sock, 0, v))
        && gpushare_cuda_sem_wait (cs, gpushare_cuda_sem_ready (lat, 0), v,
        &error)
        && gpushare_cuda_sem_signal (cs, gpushare_cuda_sem_done (lat, 0), v,
        &error);
    /* ahead: 32 waits are queued before the producer starts */
    if (ok && !paced && j == 32)
      ok = send_byte (sock, 'G');
  }
  if (error)
    gerr (name, &error);
  ok = ok && stream_done (cs, name);
  send_byte (sock, ok ? 1 : 0);
  return ok;
}

static gint
sem_producer (gint sock)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  GpuShareCudaAlloc *alloc = NULL;
  GpuShareCudaSem *sem = NULL, *lat = NULL;
  CUstream ps = NULL;
  gint fds[N_SLOTS + 1], fd = -1;
  gboolean ok = FALSE;
  guint i;

  if (!hold_ctx ())
    return 1;
  cu = gpushare_cuda ();
  alloc = gpushare_cuda_alloc_new (0, 1, N_SLOTS, frame_slot_size (), &error);
  if (!alloc || !(sem = gpushare_cuda_sem_new (DEVICE, N_SLOTS, &error))) {
    gerr ("producer", &error);
    goto out;
  }
  if (!new_stream (&ps))
    goto out;
  for (i = 0; i <= N_SLOTS; i++)
    fds[i] = -1;
  for (i = 0; i < N_SLOTS && !error; i++)
    fds[i] = gpushare_cuda_alloc_export (alloc, i, &error);
  if (!error)
    fds[N_SLOTS] = gpushare_cuda_sem_export (sem, &error);
  if (error) {
    gerr ("producer", &error);
    for (i = 0; i <= N_SLOTS; i++)
      if (fds[i] >= 0)
        close (fds[i]);
    goto out;
  }
  ok = gpu_test_send_fds (sock, fds, N_SLOTS + 1);
  /* an exported fd left open keeps GPU memory alive (trap 4) */
  for (i = 0; i <= N_SLOTS; i++)
    close (fds[i]);
  ok = ok && recv_byte (sock, 'M')
      && sem_producer_round (alloc, sem, ps, sock, 0, TRUE)
      && sem_producer_round (alloc, sem, ps, sock, ITERATIONS, FALSE);
  if (!ok)
    goto out;

  if (!(lat = gpushare_cuda_sem_new (DEVICE, 1, &error))
      || (fd = gpushare_cuda_sem_export (lat, &error)) < 0) {
    ok = gerr ("producer", &error);
    goto out;
  }
  ok = gpu_test_send_fds (sock, &fd, 1);
  close (fd);
  ok = ok && recv_byte (sock, 'M')
      && sem_producer_latency (lat, ps, sock, 0, FALSE,
      "1c sem round trip, consumer waits enqueued ahead")
      && sem_producer_latency (lat, ps, sock,
      LAT_WARMUP + LAT_ITERATIONS, TRUE,
      "1d sem round trip, consumer waits enqueued per frame");

out:
  /* teardown as the elements do it: release whatever might still wait,
   * then free */
  if (sem && !gpushare_cuda_sem_force (sem, &error))
    ok = gerr ("producer: force", &error);
  if (lat && !gpushare_cuda_sem_force (lat, &error))
    ok = gerr ("producer: force", &error);
  if (ps) {
    stream_wait (ps, SYNC_TIMEOUT_MS, NULL);
    cu->cuStreamDestroy (ps);
  }
  gpushare_cuda_sem_free (lat);
  gpushare_cuda_sem_free (sem);
  if (alloc)
    gpushare_cuda_alloc_unref (alloc);
  return ok ? 0 : 1;
}

static gint
sem_consumer (gint sock)
{
  GError *error = NULL;
  RingConsumer rc;
  GpuShareCudaSem *lat = NULL;
  gint fds[N_SLOTS + 1], fd;
  gboolean ok = FALSE;

  if (!hold_ctx () || !ring_consumer_init (&rc, SYNC_SEM))
    return 1;
  if (!gpu_test_recv_fds (sock, fds, N_SLOTS + 1))
    goto out;
  /* both imports close their fds whatever happens */
  rc.sem = gpushare_cuda_sem_import (DEVICE, fds[N_SLOTS], N_SLOTS, &error);
  if (rc.sem)
    rc.import = gpushare_cuda_import_new (0, 1, N_SLOTS,
        rc.slot_size, fds, &error);
  else
    gpushare_close_fds (fds, N_SLOTS);
  if (!rc.sem || !rc.import) {
    gerr ("consumer: import", &error);
    goto out;
  }
  ok = send_byte (sock, 'M')
      && ring_consumer_round (&rc, sock, "1a sem ring, paced by messages", 0,
      TRUE)
      && ring_consumer_round (&rc, sock,
      "1b sem ring, consumer waits enqueued ahead", ITERATIONS, FALSE);
  if (!ok)
    goto out;

  if (!gpu_test_recv_fds (sock, &fd, 1)
      || !(lat = gpushare_cuda_sem_import (DEVICE, fd, 1, &error))) {
    ok = gerr ("consumer: import", &error);
    goto out;
  }
  ok = send_byte (sock, 'M')
      && sem_consumer_latency (lat, rc.stream, sock, 0, FALSE, "1c")
      && sem_consumer_latency (lat, rc.stream, sock,
      LAT_WARMUP + LAT_ITERATIONS, TRUE, "1d");

out:
  if (lat) {
    gpushare_cuda_sem_force (lat, NULL);
    /* nothing of ours may wait on it when it goes */
    stream_wait (rc.stream, SYNC_TIMEOUT_MS, NULL);
    gpushare_cuda_sem_free (lat);
  }
  ring_consumer_clear (&rc);
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* case 2: IPC events */

#define EV_READY(ev, s) gpushare_cuda_events_get (ev, s)
#define EV_DONE(ev, s) gpushare_cuda_events_get (ev, N_SLOTS + (s))

static gboolean
event_producer_ring (GpuShareCudaAlloc * alloc, GpuShareCudaEvents * ev,
    CUstream ps, gint sock)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  gboolean ok = TRUE;
  guint i;

  if (!recv_byte (sock, 'G'))
    return FALSE;
  for (i = 1; ok && i <= ITERATIONS; i++) {
    guint64 v = i;
    guint s = v % N_SLOTS;

    /* wait for the slot's previous frame only once the consumer said it
     * recorded done for it: a wait binds to the newest record (trap 2) */
    if (v > N_SLOTS)
      ok = recv_msg (sock, s, v - N_SLOTS)
          && ck (cu->cuStreamWaitEvent (ps, EV_DONE (ev, s), 0),
          "cuStreamWaitEvent");
    ok = ok && ck (cu->cuMemsetD32Async (dptr (alloc->data[s]), (guint32) v,
            alloc->slot_size / 4, ps), "cuMemsetD32Async")
        && ck (cu->cuEventRecord (EV_READY (ev, s), ps), "cuEventRecord")
        && send_msg (sock, s, v);
  }
  for (i = ITERATIONS - N_SLOTS + 1; ok && i <= ITERATIONS; i++)
    ok = recv_msg (sock, i % N_SLOTS, i)
        && ck (cu->cuStreamWaitEvent (ps, EV_DONE (ev, i % N_SLOTS), 0),
        "cuStreamWaitEvent");
  return ok && stream_done (ps, "producer") && recv_byte (sock, 1);
}

static gboolean
event_producer_latency (GpuShareCudaEvents * ev, CUstream ps, gint sock,
    const gchar * name)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  guint64 *ns = g_new (guint64, LAT_ITERATIONS);
  gboolean ok;
  guint j;

  ok = recv_byte (sock, 'G');
  for (j = 1; ok && j <= LAT_WARMUP + LAT_ITERATIONS; j++) {
    guint64 t0 = gpu_test_now_ns ();

    ok = ck (cu->cuEventRecord (EV_READY (ev, 0), ps), "cuEventRecord")
        && send_msg (sock, 0, j) && recv_msg (sock, 0, j)
        && ck (cu->cuStreamWaitEvent (ps, EV_DONE (ev, 0), 0),
        "cuStreamWaitEvent")
        && ck (cu->cuStreamSynchronize (ps), "cuStreamSynchronize");
    if (ok && j > LAT_WARMUP)
      ns[j - LAT_WARMUP - 1] = gpu_test_now_ns () - t0;
  }
  ok = ok && recv_byte (sock, 1);
  if (ok)
    print_latency (name, ns, LAT_ITERATIONS, TRUE);
  else
    g_print ("  %s: FAIL\n", name);
  g_free (ns);
  return ok;
}

static gboolean
event_consumer_latency (GpuShareCudaEvents * ev, CUstream cs, gint sock)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  gboolean ok;
  guint j;

  ok = send_byte (sock, 'G');
  for (j = 1; ok && j <= LAT_WARMUP + LAT_ITERATIONS; j++)
    ok = recv_msg (sock, 0, j)
        && ck (cu->cuStreamWaitEvent (cs, EV_READY (ev, 0), 0),
        "cuStreamWaitEvent")
        && ck (cu->cuEventRecord (EV_DONE (ev, 0), cs), "cuEventRecord")
        && send_msg (sock, 0, j);
  ok = ok && stream_done (cs, "2b");
  send_byte (sock, ok ? 1 : 0);
  return ok;
}

static gint
event_producer (gint sock)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  GpuShareCudaAlloc *alloc = NULL;
  GpuShareCudaEvents *ev = NULL;
  guint8 handles[2 * N_SLOTS * GPUSHARE_CUDA_EVENT_HANDLE_SIZE];
  CUstream ps = NULL;
  gint fds[N_SLOTS];
  gboolean ok = FALSE;
  guint i;

  if (!hold_ctx ())
    return 1;
  cu = gpushare_cuda ();
  alloc = gpushare_cuda_alloc_new (0, 1, N_SLOTS, frame_slot_size (), &error);
  /* the producer owns ready and done events alike (trap 3) */
  if (!alloc || !(ev = gpushare_cuda_events_new (DEVICE, 2 * N_SLOTS, &error))
      || !gpushare_cuda_events_export (ev, handles, &error)) {
    gerr ("producer", &error);
    goto out;
  }
  if (!new_stream (&ps))
    goto out;
  for (i = 0; i < N_SLOTS; i++)
    fds[i] = -1;
  for (i = 0; i < N_SLOTS && !error; i++)
    fds[i] = gpushare_cuda_alloc_export (alloc, i, &error);
  if (error) {
    gerr ("producer", &error);
    for (i = 0; i < N_SLOTS; i++)
      if (fds[i] >= 0)
        close (fds[i]);
    goto out;
  }
  ok = gpu_test_send_fds (sock, fds, N_SLOTS);
  for (i = 0; i < N_SLOTS; i++)
    close (fds[i]);
  ok = ok && gpu_test_write_all (sock, handles, sizeof (handles))
      && recv_byte (sock, 'M')
      && event_producer_ring (alloc, ev, ps, sock)
      && event_producer_latency (ev, ps, sock, "2b event round trip");

out:
  if (ps) {
    stream_wait (ps, SYNC_TIMEOUT_MS, NULL);
    cu->cuStreamDestroy (ps);
  }
  /* the consumer answered its verdict: it records into our events no
   * more, so they can go */
  gpushare_cuda_events_free (ev);
  if (alloc)
    gpushare_cuda_alloc_unref (alloc);
  return ok ? 0 : 1;
}

static gint
event_consumer (gint sock)
{
  GError *error = NULL;
  RingConsumer rc;
  guint8 handles[2 * N_SLOTS * GPUSHARE_CUDA_EVENT_HANDLE_SIZE];
  gint fds[N_SLOTS];
  gboolean ok = FALSE;

  if (!hold_ctx () || !ring_consumer_init (&rc, SYNC_EVENT))
    return 1;
  if (!gpu_test_recv_fds (sock, fds, N_SLOTS))
    goto out;
  rc.import = gpushare_cuda_import_new (0, 1, N_SLOTS,
      rc.slot_size, fds, &error);
  if (!rc.import || !gpu_test_read_all (sock, handles, sizeof (handles), -1)
      || !(rc.ev = gpushare_cuda_events_import (DEVICE, handles, 2 * N_SLOTS,
              &error))) {
    gerr ("consumer: import", &error);
    goto out;
  }
  ok = send_byte (sock, 'M')
      && ring_consumer_round (&rc, sock, "2a event ring, paced by messages",
      0, TRUE)
      && event_consumer_latency (rc.ev, rc.stream, sock);

out:
  ring_consumer_clear (&rc);
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* case 3: force */

/* stream s must still be blocked after a while: else the test proves
 * nothing */
static gboolean
is_blocked (CUstream s)
{
  CUresult res = gpushare_cuda ()->cuStreamQuery (s);

  if (res == CUDA_ERROR_NOT_READY)
    return TRUE;
  if (res == CUDA_SUCCESS)
    g_printerr ("    a wait on a word never written did not block\n");
  else
    ck (res, "cuStreamQuery");
  return FALSE;
}

static gint
force_single (gint sock)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  GpuShareCudaSem *sem;
  CUstream ws = NULL;
  guint64 force_ns = 0, release_ns = 0, word = 0;
  gsize free0, free1;
  CUresult res;
  gboolean ok;

  if (!hold_ctx () || !new_stream (&ws))
    return 1;
  cu = gpushare_cuda ();
  /* once through, so that what the driver allocates lazily on first use
   * is in the baseline */
  sem = gpushare_cuda_sem_new (DEVICE, N_SLOTS, &error);
  if (!sem || !gpushare_cuda_sem_force (sem, &error)
      || !read_word (gpushare_cuda_sem_ready (sem, 2), &word))
    return gfail ("3a", &error);
  gpushare_cuda_sem_free (sem);
  word = 0;
  free0 = device_free_mem ();

  sem = gpushare_cuda_sem_new (DEVICE, N_SLOTS, &error);
  if (!sem || !gpushare_cuda_sem_wait (ws, gpushare_cuda_sem_ready (sem, 2),
          1, &error))
    return gfail ("3a", &error);
  g_usleep (BLOCKED_CHECK_US);
  if (!is_blocked (ws))
    return 1;

  {
    guint64 t0 = gpu_test_now_ns ();

    ok = gpushare_cuda_sem_force (sem, &error);
    force_ns = gpu_test_now_ns () - t0;
  }
  if (!ok)
    return gfail ("3a: force", &error);
  res = stream_wait (ws, RELEASE_TIMEOUT_MS, &release_ns);
  if (res != CUDA_SUCCESS) {
    g_print ("  3a force, one process: the blocked stream was %s: FAIL\n",
        res == CUDA_ERROR_NOT_READY ? "not released within 1 s" :
        gpushare_cuda_result_to_string (res));
    return 1;
  }
  /* the word holds the forced value, and a later wait passes at once */
  ok = read_word (gpushare_cuda_sem_ready (sem, 2), &word)
      && word == GPUSHARE_CUDA_SEM_FORCED
      && gpushare_cuda_sem_wait (ws, gpushare_cuda_sem_done (sem, 0),
      GPUSHARE_CUDA_SEM_MAX_VALUE, &error)
      && stream_wait (ws, RELEASE_TIMEOUT_MS, NULL) == CUDA_SUCCESS;
  if (error)
    gerr ("3a", &error);
  cu->cuStreamDestroy (ws);
  gpushare_cuda_sem_free (sem);
  free1 = device_free_mem ();
  ok = ok && free1 + MEM_SLACK >= free0;
  g_print ("  3a force, one process: force took %.1f us, blocked stream "
      "released after %.1f us (limit 1 s), word forced %s; device free "
      "memory %" G_GSIZE_FORMAT " MiB before, %" G_GSIZE_FORMAT
      " MiB after free: %s\n", force_ns / 1000.0, (force_ns + release_ns) /
      1000.0, word == GPUSHARE_CUDA_SEM_FORCED ? "yes" : "NO", free0 >> 20,
      free1 >> 20, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

/* connections: NULL for the driver's default (8), or the value to set
 * before cuInit */
static gint
force_many (const gchar * connections)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  GpuShareCudaSem *sem;
  CUstream ws[MANY_STREAMS];
  guint64 t0, took;
  guint i, released = 0;
  gboolean ok;
  const gchar *conn;

  /* this process has not loaded CUDA yet: the setting still counts */
  if (connections)
    g_setenv ("CUDA_DEVICE_MAX_CONNECTIONS", connections, TRUE);
  conn = g_getenv ("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!hold_ctx ())
    return 1;
  cu = gpushare_cuda ();
  sem = gpushare_cuda_sem_new (DEVICE, MANY_STREAMS / 2, &error);
  if (!sem)
    return gfail ("3c/d", &error);
  for (i = 0; i < MANY_STREAMS; i++) {
    CUdeviceptr w = i % 2 ? gpushare_cuda_sem_done (sem, i / 2) :
        gpushare_cuda_sem_ready (sem, i / 2);

    if (!new_stream (&ws[i]) || !gpushare_cuda_sem_wait (ws[i], w, 1, &error))
      return gfail ("3c/d", &error);
  }
  g_usleep (BLOCKED_CHECK_US);
  for (i = 0; i < MANY_STREAMS; i++)
    if (!is_blocked (ws[i]))
      return 1;

  t0 = gpu_test_now_ns ();
  ok = gpushare_cuda_sem_force (sem, &error);
  if (!ok)
    gerr ("3c/d: force", &error);
  for (i = 0; ok && i < MANY_STREAMS; i++) {
    guint64 left = RELEASE_TIMEOUT_MS * G_GUINT64_CONSTANT (1000000);
    guint64 spent = gpu_test_now_ns () - t0;

    if (stream_wait (ws[i], spent < left ? (left - spent) / 1000000 : 0,
            NULL) == CUDA_SUCCESS)
      released++;
  }
  took = gpu_test_now_ns () - t0;
  g_print ("  3%c force, %d streams blocked on %d words "
      "(CUDA_DEVICE_MAX_CONNECTIONS=%s): force %s, %u released after "
      "%.1f us (limit 1 s): %s\n", connections ? 'd' : 'c', MANY_STREAMS,
      MANY_STREAMS, conn ? conn : "unset, 8", ok ? "completed" : "TIMED OUT",
      released, took / 1000.0, released == MANY_STREAMS ? "PASS" : "FAIL");
  if (released != MANY_STREAMS) {
    g_print ("    the force stream likely shares a hardware queue with a "
        "blocked stream\n");
    /* freeing now could wait forever: leave it to process exit */
    return 1;
  }
  for (i = 0; i < MANY_STREAMS; i++)
    cu->cuStreamDestroy (ws[i]);
  gpushare_cuda_sem_free (sem);
  return 0;
}

static gint
force_many_default (gint sock)
{
  return force_many (NULL);
}

static gint
force_many_32 (gint sock)
{
  return force_many ("32");
}

/* the producer vanishes without freeing anything */
static gint
death_producer (gint sock)
{
  GError *error = NULL;
  GpuShareCudaSem *sem;
  gint fd;

  if (!hold_ctx ())
    return 1;
  sem = gpushare_cuda_sem_new (DEVICE, 2, &error);
  if (!sem || (fd = gpushare_cuda_sem_export (sem, &error)) < 0)
    return gfail ("producer", &error);
  if (!gpu_test_send_fds (sock, &fd, 1))
    return 1;
  close (fd);
  if (!recv_byte (sock, 'W'))
    return 1;
  /* peer death: no force, no free, no goodbye */
  gpu_test_child_exit (0);
}

static gint
death_consumer (gint sock)
{
  GError *error = NULL;
  GpuShareCudaSem *sem;
  CUstream cs = NULL;
  guint64 t0, force_ns, release_ns = 0, word = 0;
  guint8 b;
  gint fd;
  CUresult res;
  gboolean ok;

  if (!hold_ctx () || !new_stream (&cs) || !gpu_test_recv_fds (sock, &fd, 1))
    return 1;
  sem = gpushare_cuda_sem_import (DEVICE, fd, 2, &error);
  if (!sem || !gpushare_cuda_sem_wait (cs, gpushare_cuda_sem_ready (sem, 1),
          5, &error))
    return gfail ("3b", &error);
  g_usleep (BLOCKED_CHECK_US);
  if (!is_blocked (cs) || !send_byte (sock, 'W'))
    return 1;
  /* the socket hangs up: the peer is gone */
  if (read (sock, &b, 1) != 0) {
    g_printerr ("    3b: expected a hang-up\n");
    return 1;
  }
  g_usleep (100000);

  t0 = gpu_test_now_ns ();
  ok = gpushare_cuda_sem_force (sem, &error);
  force_ns = gpu_test_now_ns () - t0;
  if (!ok)
    return gfail ("3b: force", &error);
  res = stream_wait (cs, RELEASE_TIMEOUT_MS, &release_ns);
  /* the import keeps the memory alive after its exporter died */
  ok = res == CUDA_SUCCESS
      && read_word (gpushare_cuda_sem_ready (sem, 1), &word)
      && word == GPUSHARE_CUDA_SEM_FORCED;
  g_print ("  3b force, imported block, producer died: force took %.1f us, "
      "blocked stream %s after %.1f us (limit 1 s), word forced %s: %s\n",
      force_ns / 1000.0, res == CUDA_SUCCESS ? "released" : "NOT released",
      (force_ns + release_ns) / 1000.0,
      word == GPUSHARE_CUDA_SEM_FORCED ? "yes" : "NO", ok ? "PASS" : "FAIL");
  if (res != CUDA_SUCCESS)
    return 1;
  gpushare_cuda ()->cuStreamDestroy (cs);
  gpushare_cuda_sem_free (sem);
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* case 4: create / export / import / free cycles */

static void
print_cycles (const gchar * side, const gchar * what, guint64 * ns,
    gint fds0, gint fds1, gsize mem0, gsize mem1, gboolean pass)
{
  qsort (ns, CYCLES, sizeof (guint64), (GCompareFunc) cmp_u64);
  g_print ("  4 %s: %d cycles, %s p50 %.1f us p99 %.1f us; fds %d -> %d, "
      "device free memory %" G_GSIZE_FORMAT " -> %" G_GSIZE_FORMAT " MiB: "
      "%s\n", side, CYCLES, what, ns[CYCLES / 2] / 1000.0,
      ns[CYCLES * 99 / 100] / 1000.0, fds0, fds1, mem0 >> 20, mem1 >> 20,
      pass ? "PASS" : "FAIL");
}

static gint
cycle_producer (gint sock)
{
  GError *error = NULL;
  guint64 *ns = g_new0 (guint64, CYCLES);
  gint fds0 = 0, fds1 = 0, c;
  gsize mem0 = 0, mem1 = 0;
  gboolean ok = TRUE, pass;

  if (!hold_ctx ())
    return 1;
  for (c = 0; ok && c < CYCLES; c++) {
    guint64 t0 = gpu_test_now_ns (), word = 0;
    GpuShareCudaSem *sem = gpushare_cuda_sem_new (DEVICE, N_SLOTS, &error);
    gint fd = sem ? gpushare_cuda_sem_export (sem, &error) : -1;

    ns[c] = gpu_test_now_ns () - t0;
    if (fd < 0) {
      ok = gerr ("producer", &error);
      gpushare_cuda_sem_free (sem);
      break;
    }
    ok = gpu_test_send_fds (sock, &fd, 1);
    close (fd);
    /* the consumer wrote done[c % N_SLOTS] = c + 1 through its mapping */
    ok = ok && recv_byte (sock, 1)
        && read_word (gpushare_cuda_sem_done (sem, c % N_SLOTS), &word);
    if (ok && word != (guint64) c + 1) {
      g_printerr ("    cycle %d: done word reads %" G_GUINT64_FORMAT "\n", c,
          word);
      ok = FALSE;
    }
    if (!gpushare_cuda_sem_force (sem, &error))
      ok = gerr ("producer: force", &error);
    gpushare_cuda_sem_free (sem);
    if (c == 0) {
      fds0 = gpu_test_count_fds ();
      mem0 = device_free_mem ();
    }
  }
  fds1 = gpu_test_count_fds ();
  mem1 = device_free_mem ();
  pass = ok && fds1 <= fds0 && mem1 + MEM_SLACK >= mem0;
  print_cycles ("producer", "new + export", ns, fds0, fds1, mem0, mem1, pass);
  g_free (ns);
  return pass ? 0 : 1;
}

static gint
cycle_consumer (gint sock)
{
  GError *error = NULL;
  guint64 *ns = g_new0 (guint64, CYCLES);
  CUstream cs = NULL;
  gint fds0 = 0, fds1 = 0, c;
  gsize mem0 = 0, mem1 = 0;
  gboolean ok = TRUE, pass;

  if (!hold_ctx () || !new_stream (&cs))
    return 1;
  for (c = 0; ok && c < CYCLES; c++) {
    GpuShareCudaSem *sem;
    guint64 t0;
    gint fd;

    if (!gpu_test_recv_fds (sock, &fd, 1)) {
      ok = FALSE;
      break;
    }
    t0 = gpu_test_now_ns ();
    sem = gpushare_cuda_sem_import (DEVICE, fd, N_SLOTS, &error);
    ns[c] = gpu_test_now_ns () - t0;
    if (!sem) {
      ok = gerr ("consumer: import", &error);
      break;
    }
    /* read-write: the consumer writes its done words */
    ok = gpushare_cuda_sem_signal (cs, gpushare_cuda_sem_done (sem,
            c % N_SLOTS), (guint64) c + 1, &error)
        && stream_done (cs, "consumer");
    if (error)
      gerr ("consumer", &error);
    gpushare_cuda_sem_free (sem);
    if (c == 0) {
      fds0 = gpu_test_count_fds ();
      mem0 = device_free_mem ();
    } else if (c == CYCLES - 1) {
      fds1 = gpu_test_count_fds ();
      mem1 = device_free_mem ();
    }
    ok = send_byte (sock, ok ? 1 : 0) && ok;
  }
  gpushare_cuda ()->cuStreamDestroy (cs);
  pass = ok && fds1 <= fds0 && mem1 + MEM_SLACK >= mem0;
  print_cycles ("consumer", "import", ns, fds0, fds1, mem0, mem1, pass);
  g_free (ns);
  return pass ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* the parent: never touches CUDA */

/* a case's side in its child: data points to its RoleFunc */
static gint
run_role (gint sock, gpointer data)
{
  const RoleFunc *func = data;

  return (*func) (sock);
}

static gboolean
run_case (const gchar * name, RoleFunc producer, RoleFunc consumer)
{
  /* a hang is a failure, not a stuck test: SIGALRM kills the child.
   * GStreamer is started and warnings are fatal here already: in the
   * child gpu_test_run_child () adds only the alarm */
  GpuTestRole p = { consumer ? "producer" : "process", run_role, &producer,
    CASE_ALARM_S
  };
  GpuTestRole c = { "consumer", run_role, &consumer, CASE_ALARM_S };
  GError *error = NULL;
  gboolean ok;

  g_print ("case %s\n", name);
  fflush (stdout);
  ok = gpu_test_run_pair (&p, consumer ? &c : NULL, 0, &error);
  if (error) {
    g_clear_error (&error);
    return FALSE;
  }
  g_print ("case %s: %s\n", name, ok ? "PASS" : "FAIL");
  fflush (stdout);
  return ok;
}

/* 0: all cases can run, 1: no IPC events, SKIP: nothing can run */
static gint
probe (gint sock, gpointer data)
{
  GError *error = NULL;
  GpuShareCudaCaps caps;
  const gchar *mps = g_getenv ("CUDA_MPS_PIPE_DIRECTORY");

  if (!gpushare_cuda_probe (DEVICE, &caps, &error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    return SKIP;
  }
  if (!caps.vmm || !caps.posix_fd || !caps.mem_ops_64) {
    g_print ("SKIP: no usable GPU: %s has no %s\n", caps.name,
        !caps.vmm ? "VMM" : !caps.posix_fd ? "POSIX-fd VMM export" :
        "64-bit stream memory operations");
    return SKIP;
  }
  g_print ("device: %s, driver %d, vmm=%d posix-fd=%d ipc-event=%d "
      "mem-ops-64=%d compute-mode=%d; CUDA_MPS_PIPE_DIRECTORY=%s "
      "(run once with and once without MPS)\n", caps.name,
      caps.driver_version, caps.vmm, caps.posix_fd, caps.ipc_event,
      caps.mem_ops_64, caps.compute_mode, mps ? mps : "unset");
  return caps.ipc_event ? 0 : 1;
}

int
main (int argc, char **argv)
{
  gint have = 0, failed = 0;

  setvbuf (stdout, NULL, _IOLBF, 0);
  gst_init (&argc, &argv);
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);

  /* probe in a child: this process must not have touched CUDA when it
   * forks the cases */
  have = gpu_test_probe_with (probe);
  if (have == SKIP)
    return SKIP;

  failed += !run_case ("1 semaphore words: ring and round trip",
      sem_producer, sem_consumer);
  if (have == 0)
    failed += !run_case ("2 IPC events: ring and round trip",
        event_producer, event_consumer);
  else
    g_print ("case 2 IPC events: SKIP (the device has no IPC events)\n");
  failed += !run_case ("3a force, one process", force_single, NULL);
  failed += !run_case ("3b force, imported block, producer died",
      death_producer, death_consumer);
  /* a finding, not a check: with more blocked streams than hardware
   * queues, the force stream can queue behind a blocked one.  gpushare
   * keeps one stream per ring or view and one transient force stream, far
   * below the 8 queues of the default; 3d checks force itself */
  if (!run_case ("3c force, 16 blocked streams, default connections",
          force_many_default, NULL))
    g_print ("case 3c: not counted (more blocked streams than hardware "
        "queues; gpushare uses at most 2 streams per ring or view)\n");
  failed += !run_case ("3d force, 16 blocked streams, 32 connections",
      force_many_32, NULL);
  failed += !run_case ("4 create / export / import / free cycles",
      cycle_producer, cycle_consumer);

  g_print ("%s: %d case(s) failed\n", failed ? "FAIL" : "PASS", failed);
  return failed ? 1 : 0;
}

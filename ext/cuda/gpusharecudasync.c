/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-slot synchronisation objects of the CUDA transport: semaphore words
 * in a small shared VMM block, and CUDA IPC events.  See the header for the
 * protocol, the frozen block layout and why the forced value is G_MAXINT64.
 *
 * The semaphore block is allocated like a frame slot (cuMemCreate, POSIX-fd
 * handle, one granularity unit), but the consumer maps it read-write: it
 * must write its done words.  That is why it is a separate allocation from
 * the read-only frame slots.
 *
 * Nothing here calls cuCtxSynchronize or touches the legacy default stream:
 * a stream blocked on a word that is never written would make either wait
 * forever.  Never log a handle, a device pointer, an fd or handle bytes.
 */

#include "gpusharecudasync.h"
#include "gpusharecuda.h"
#include "gpusharefd.h"
#include "gpushareproto.h"
#include "gpusharetiming.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (gpushare_cuda_sync_debug);
#define GST_CAT_DEFAULT gpushare_cuda_sync_debug

/* the wire carries exactly these bytes */
G_STATIC_ASSERT (sizeof (CUipcEventHandle) == GPUSHARE_CUDA_EVENT_HANDLE_SIZE);
G_STATIC_ASSERT (GPUSHARE_CUDA_SEM_WORD_SIZE == sizeof (guint64));

/* far more than a ring needs; bounds what a peer's message can ask for */
#define MAX_EVENTS 1024

struct _GpuShareCudaSem
{
  gint device;
  guint n_slots;
  gsize size;
  gboolean imported;
  CUcontext ctx;
  CUmemGenericAllocationHandle handle;
  gboolean have_handle;
  CUdeviceptr ptr;
  /* a wait of ours on a word did not end, even forced: the block stays
   * mapped rather than be read by it once freed */
  gboolean pinned;
};

struct _GpuShareCudaWords
{
  guint n_slots;
  gint fd;                      /* producer: the memfd; consumer: -1 */
  volatile guint64 *words;      /* the page, mapped */
  gint device;                  /* producer: registered there */
  CUcontext ctx;
  gboolean registered;
  CUdeviceptr dptr;             /* producer: the page for the device */
};

G_STATIC_ASSERT (GPUSHARE_HOST_WORDS_SIZE / GPUSHARE_CUDA_SEM_WORD_SIZE >=
    GPUSHARE_MAX_SLOTS);

struct _GpuShareCudaEvents
{
  gint device;
  guint n;
  gboolean imported;
  CUcontext ctx;
  CUevent *events;
};

static void
ensure_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_cuda_sync_debug, "gpusharecudasync", 0,
        "gpushare CUDA semaphores and IPC events");
    g_once_init_leave (&once, 1);
  }
}


static gboolean
device_attr (gint device, CUdevice_attribute a, const gchar * what,
    GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUdevice dev;
  gint v = 0;

  if (!gpushare_cuda_check (cu->cuDeviceGet (&dev, device), "cuDeviceGet",
          error))
    return FALSE;
  if (cu->cuDeviceGetAttribute (&v, a, dev) != CUDA_SUCCESS || v == 0) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "CUDA device %d has no %s", device, what);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* semaphore words */

static gboolean
sem_device_ok (gint device, GError ** error)
{
  return device_attr (device,
      CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
      "virtual memory management", error)
      && device_attr (device,
      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
      "VMM export as a POSIX file descriptor", error)
      && device_attr (device,
      CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
      "64-bit stream memory operations", error);
}

static void
sem_prop (gint device, CUmemAllocationProp * prop)
{
  memset (prop, 0, sizeof (*prop));
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = device;
  prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

/* Both sides compute the size on their own from the same device's
 * granularity; a mismatch makes the importer's cuMemMap fail. */
static gboolean
sem_alloc_size (gint device, guint n_slots, gsize * size, GError ** error)
{
  CUmemAllocationProp prop;
  size_t gran = 0;
  gsize need = GPUSHARE_CUDA_SEM_DONE_OFFSET +
      (gsize) n_slots * GPUSHARE_CUDA_SEM_WORD_SIZE;

  sem_prop (device, &prop);
  if (!gpushare_cuda_check (gpushare_cuda ()->cuMemGetAllocationGranularity
          (&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity", error))
    return FALSE;
  if (gran == 0)
    gran = 2 * 1024 * 1024;
  *size = (need + gran - 1) / gran * gran;
  return TRUE;
}

/* common start of new and import: checks, retains and pushes the primary
 * context.  NULL with error set, or a block whose context is current. */
static GpuShareCudaSem *
sem_start (gint device, guint n_slots, gboolean imported, GError ** error)
{
  GpuShareCudaSem *sem;

  ensure_debug ();
  if (n_slots == 0 || n_slots > GPUSHARE_CUDA_SEM_MAX_SLOTS) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "%u semaphore slots asked for, 1 .. %u supported", n_slots,
        (guint) GPUSHARE_CUDA_SEM_MAX_SLOTS);
    return NULL;
  }
  if (!gpushare_cuda_load (error) || !sem_device_ok (device, error))
    return NULL;

  sem = g_new0 (GpuShareCudaSem, 1);
  sem->device = device;
  sem->n_slots = n_slots;
  sem->imported = imported;
  if (!gpushare_cuda_primary_push (device, &sem->ctx, error)) {
    g_free (sem);
    return NULL;
  }
  if (!sem_alloc_size (device, n_slots, &sem->size, error)) {
    gpushare_cuda_pop ();
    gpushare_cuda_primary_release (device);
    g_free (sem);
    return NULL;
  }
  return sem;
}

/* context current: map read-write on both sides (the consumer writes its
 * done words) */
static gboolean
sem_map (GpuShareCudaSem * sem, GError ** error)
{
  return gpushare_cuda_map_handle (sem->handle, sem->size, sem->device,
      CU_MEM_ACCESS_FLAGS_PROT_READWRITE, &sem->ptr, error);
}

/* context current: zero the whole block from a private stream */
static gboolean
sem_zero (GpuShareCudaSem * sem, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUstream stream = NULL;
  gboolean ok;

  if (!gpushare_cuda_check (cu->cuStreamCreate (&stream,
              CU_STREAM_NON_BLOCKING), "cuStreamCreate", error))
    return FALSE;
  ok = gpushare_cuda_check (cu->cuMemsetD32Async (sem->ptr, 0,
          sem->size / 4, stream), "cuMemsetD32Async", error)
      && gpushare_cuda_check (cu->cuStreamSynchronize (stream),
      "cuStreamSynchronize", error);
  cu->cuStreamDestroy (stream);
  return ok;
}

/* context current: undoes whatever exists, in reverse order */
static void
sem_unmap (GpuShareCudaSem * sem)
{
  gpushare_cuda_unmap_handle (sem->ptr, sem->size);
  if (sem->have_handle)
    gpushare_cuda ()->cuMemRelease (sem->handle);
  sem->ptr = 0;
  sem->have_handle = FALSE;
}

GpuShareCudaSem *
gpushare_cuda_sem_new (gint device, guint n_slots, GError ** error)
{
  GpuShareCudaSem *sem;
  CUmemAllocationProp prop;

  sem = sem_start (device, n_slots, FALSE, error);
  if (!sem)
    return NULL;

  sem_prop (device, &prop);
  if (!gpushare_cuda_check (gpushare_cuda ()->cuMemCreate (&sem->handle,
              sem->size, &prop, 0), "cuMemCreate", error))
    goto failed;
  sem->have_handle = TRUE;
  /* cuMemCreate does not promise zeroed memory, and a stale word would
   * satisfy a wait that must block */
  if (!sem_map (sem, error) || !sem_zero (sem, error))
    goto failed;
  gpushare_cuda_pop ();
  GST_DEBUG ("semaphore block of %u slots (%" G_GSIZE_FORMAT " bytes) "
      "created on device %d", n_slots, sem->size, device);
  return sem;

failed:
  sem_unmap (sem);
  gpushare_cuda_pop ();
  gpushare_cuda_primary_release (device);
  g_free (sem);
  return NULL;
}

gint
gpushare_cuda_sem_export (GpuShareCudaSem * sem, GError ** error)
{
  int fd = -1;
  CUresult res;

  g_return_val_if_fail (sem != NULL, -1);
  g_return_val_if_fail (!sem->imported, -1);

  res = gpushare_cuda ()->cuMemExportToShareableHandle (&fd, sem->handle,
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (!gpushare_cuda_check (res, "cuMemExportToShareableHandle", error))
    return -1;
  /* the driver does not promise CLOEXEC: our fds never leak into exec */
  if (fcntl (fd, F_SETFD, FD_CLOEXEC) < 0) {
    close (fd);
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "cannot mark the exported semaphore block close-on-exec");
    return -1;
  }
  return fd;
}

GpuShareCudaSem *
gpushare_cuda_sem_import (gint device, gint fd, guint n_slots, GError ** error)
{
  GpuShareCudaSem *sem;
  CUresult res;

  if (fd < 0) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "no file descriptor for the semaphore block");
    return NULL;
  }
  sem = sem_start (device, n_slots, TRUE, error);
  if (!sem) {
    close (fd);
    return NULL;
  }

  res = gpushare_cuda ()->cuMemImportFromShareableHandle (&sem->handle,
      (void *) (uintptr_t) fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  /* import a received fd once, then let it go: an open exported fd keeps
   * the memory alive */
  close (fd);
  if (!gpushare_cuda_check (res, "cuMemImportFromShareableHandle", error))
    goto failed;
  sem->have_handle = TRUE;
  if (!sem_map (sem, error))
    goto failed;
  gpushare_cuda_pop ();
  GST_DEBUG ("semaphore block of %u slots imported on device %d", n_slots,
      device);
  return sem;

failed:
  sem_unmap (sem);
  gpushare_cuda_pop ();
  gpushare_cuda_primary_release (device);
  g_free (sem);
  return NULL;
}

void
gpushare_cuda_sem_free (GpuShareCudaSem * sem)
{
  GpuShareCudaApi *cu;

  if (!sem)
    return;
  cu = gpushare_cuda ();
  /* No synchronisation here on purpose: a stream still blocked on a word
   * would make it wait forever.  The caller forced the block first if
   * anything could still wait on it. */
  if (sem->pinned) {
    GST_WARNING ("a semaphore block of %u slots is left mapped: a wait on "
        "it never ended", sem->n_slots);
  } else if (cu->cuCtxPushCurrent (sem->ctx) == CUDA_SUCCESS) {
    sem_unmap (sem);
    gpushare_cuda_pop ();
  } else {
    GST_ERROR ("cannot make device %d current: semaphore block leaked",
        sem->device);
  }
  gpushare_cuda_primary_release (sem->device);
  GST_DEBUG ("semaphore block of %u slots %s", sem->n_slots,
      sem->imported ? "unimported" : "freed");
  g_free (sem);
}

gsize
gpushare_cuda_sem_size (GpuShareCudaSem * sem)
{
  g_return_val_if_fail (sem != NULL, 0);

  return sem->size;
}

guint
gpushare_cuda_sem_n_slots (GpuShareCudaSem * sem)
{
  g_return_val_if_fail (sem != NULL, 0);

  return sem->n_slots;
}

CUdeviceptr
gpushare_cuda_sem_ready (GpuShareCudaSem * sem, guint slot)
{
  g_return_val_if_fail (sem != NULL, 0);
  g_return_val_if_fail (slot < sem->n_slots, 0);

  return sem->ptr + (CUdeviceptr) slot *GPUSHARE_CUDA_SEM_WORD_SIZE;
}

CUdeviceptr
gpushare_cuda_sem_done (GpuShareCudaSem * sem, guint slot)
{
  g_return_val_if_fail (sem != NULL, 0);
  g_return_val_if_fail (slot < sem->n_slots, 0);

  return sem->ptr + GPUSHARE_CUDA_SEM_DONE_OFFSET +
      (CUdeviceptr) slot *GPUSHARE_CUDA_SEM_WORD_SIZE;
}

/* a value can come from a peer's message: an error, not a critical */
static gboolean
check_value (guint64 value, GError ** error)
{
  if (value <= GPUSHARE_CUDA_SEM_MAX_VALUE)
    return TRUE;
  g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
      "semaphore value out of range (more than 2^63 - 1)");
  return FALSE;
}

gboolean
gpushare_cuda_sem_signal (CUstream stream, CUdeviceptr word, guint64 value,
    GError ** error)
{
  g_return_val_if_fail (stream != NULL && stream != CU_STREAM_LEGACY, FALSE);
  g_return_val_if_fail (word != 0, FALSE);

  if (!check_value (value, error))
    return FALSE;
  /* the default flags keep the memory barrier: what the stream wrote before
   * (the frame, or the consumer's copy of it) is visible before the word */
  return gpushare_cuda_check (gpushare_cuda ()->cuStreamWriteValue64 (stream,
          word, value, CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue64",
      error);
}

gboolean
gpushare_cuda_sem_wait (CUstream stream, CUdeviceptr word, guint64 value,
    GError ** error)
{
  g_return_val_if_fail (stream != NULL && stream != CU_STREAM_LEGACY, FALSE);
  g_return_val_if_fail (word != 0, FALSE);

  if (!check_value (value, error))
    return FALSE;
  /* both writers are on this GPU: no CU_STREAM_WAIT_VALUE_FLUSH needed */
  return gpushare_cuda_check (gpushare_cuda ()->cuStreamWaitValue64 (stream,
          word, value, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue64", error);
}

/* context pushed: polls stream until it is idle or deadline passes;
 * CUDA_ERROR_NOT_READY for the latter */
static CUresult
poll_stream (CUstream stream, gint64 deadline)
{
  gulong pause_us = 10;
  CUresult r;

  while ((r = gpushare_cuda ()->cuStreamQuery (stream)) ==
      CUDA_ERROR_NOT_READY && g_get_monotonic_time () < deadline) {
    g_usleep (pause_us);
    pause_us = MIN (pause_us * 2, 1000);
  }
  return r;
}

gboolean
gpushare_cuda_sem_force_timeout (GpuShareCudaSem * sem, guint timeout_ms,
    GError ** error)
{
  GpuShareCudaApi *cu;
  CUstream stream = NULL;
  CUresult res;
  gboolean ok = TRUE;
  guint i;

  g_return_val_if_fail (sem != NULL, FALSE);

  cu = gpushare_cuda ();
  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (sem->ctx),
          "cuCtxPushCurrent", error))
    return FALSE;
  /* A private non-blocking stream: the legacy default stream would queue
   * behind every blocking stream, and a blocked stream never drains. */
  if (!gpushare_cuda_check (cu->cuStreamCreate (&stream,
              CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)) {
    gpushare_cuda_pop ();
    return FALSE;
  }
  for (i = 0; ok && i < sem->n_slots; i++) {
    ok = gpushare_cuda_check (cu->cuStreamWriteValue64 (stream,
            gpushare_cuda_sem_ready (sem, i), GPUSHARE_CUDA_SEM_FORCED,
            CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue64", error)
        && gpushare_cuda_check (cu->cuStreamWriteValue64 (stream,
            gpushare_cuda_sem_done (sem, i), GPUSHARE_CUDA_SEM_FORCED,
            CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue64", error);
  }

  /* wait for our own stream only, by polling: never cuStreamSynchronize on
   * something that might not come back, never cuCtxSynchronize */
  if (ok) {
    res = poll_stream (stream, g_get_monotonic_time () +
        (gint64) timeout_ms * 1000);
    if (res != CUDA_ERROR_NOT_READY) {
      ok = gpushare_cuda_check (res, "cuStreamQuery", error);
    } else {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "forcing the semaphore words did not complete within %u ms",
          timeout_ms);
      ok = FALSE;
    }
  }
  /* with work still pending, the driver releases the stream once it is
   * done */
  cu->cuStreamDestroy (stream);
  gpushare_cuda_pop ();

  if (ok)
    GST_DEBUG ("forced the words of %u semaphore slots", sem->n_slots);
  else
    GST_WARNING ("could not force the words of %u semaphore slots",
        sem->n_slots);
  return ok;
}

gboolean
gpushare_cuda_sem_force (GpuShareCudaSem * sem, GError ** error)
{
  return gpushare_cuda_sem_force_timeout (sem,
      GPUSHARE_CUDA_SEM_FORCE_TIMEOUT_MS, error);
}

gboolean
gpushare_cuda_sem_check_done (GpuShareCudaSem * sem, guint slot,
    guint64 value, guint timeout_ms, gboolean * late, GError ** error)
{
  GpuShareCudaApi *cu;
  CUstream stream = NULL;
  CUresult r;
  gboolean ok;

  g_return_val_if_fail (sem != NULL && slot < sem->n_slots, FALSE);

  *late = FALSE;
  if (!check_value (value, error))
    return FALSE;
  cu = gpushare_cuda ();
  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (sem->ctx),
          "cuCtxPushCurrent", error))
    return FALSE;
  /* a wait of our own on the word, never a read of it: the host cannot
   * read device memory but through a copy that another stream's wait may
   * hold up */
  ok = gpushare_cuda_check (cu->cuStreamCreate (&stream,
          CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)
      && gpushare_cuda_sem_wait (stream, gpushare_cuda_sem_done (sem, slot),
      value, error);
  if (ok) {
    r = poll_stream (stream, g_get_monotonic_time () +
        (gint64) timeout_ms * 1000);
    if (r == CUDA_ERROR_NOT_READY) {
      *late = TRUE;
      ok = gpushare_cuda_sem_force (sem, error);
      /* the forced word ends our wait too, before the block may go; a
       * peer that wrote its word back at once may keep it: the block then
       * stays */
      if (poll_stream (stream, g_get_monotonic_time () +
              (gint64) GPUSHARE_CUDA_SEM_FORCE_TIMEOUT_MS * 1000) ==
          CUDA_ERROR_NOT_READY)
        sem->pinned = TRUE;
    } else {
      ok = gpushare_cuda_check (r, "cuStreamQuery", error);
    }
  }
  if (stream)
    cu->cuStreamDestroy (stream);
  gpushare_cuda_pop ();
  return ok;
}

/* ------------------------------------------------------------------------ */
/* ready words in host memory */

static gboolean
words_slots_ok (guint n_slots, GError ** error)
{
  if (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS)
    return TRUE;
  g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
      "%u ready words asked for, 1 .. %u supported", n_slots,
      (guint) GPUSHARE_MAX_SLOTS);
  return FALSE;
}

GpuShareCudaWords *
gpushare_cuda_words_new (gint device, guint n_slots, GError ** error)
{
  GpuShareCudaApi *cu;
  GpuShareCudaWords *w;
  gpointer data = NULL;
  CUresult res;

  ensure_debug ();
  if (!words_slots_ok (n_slots, error) || !gpushare_cuda_load (error)
      || !device_attr (device,
          CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
          "64-bit stream memory operations", error))
    return NULL;
  cu = gpushare_cuda ();
  w = g_new0 (GpuShareCudaWords, 1);
  w->n_slots = n_slots;
  w->device = device;
  /* sealed against every later writer: the mapping made here, which the
   * device writes through, is the only one */
  w->fd = gpushare_memfd_new ("gpushare-ready-words", GPUSHARE_HOST_WORDS_SIZE,
      TRUE, TRUE, &data, "the ready words", GPUSHARE_CUDA_ERROR,
      GPUSHARE_CUDA_ERROR_CALL, error);
  if (w->fd < 0) {
    g_free (w);
    return NULL;
  }
  w->words = data;
  if (!gpushare_cuda_primary_push (device, &w->ctx, error)) {
    w->ctx = NULL;
    gpushare_cuda_words_free (w);
    return NULL;
  }
  /* portable: the page is the device's for every context of this
   * process, not only the primary one it is registered in (a ring may be
   * made in another: gpushare_cuda_ring_new () takes one) */
  res = cu->cuMemHostRegister (data, GPUSHARE_HOST_WORDS_SIZE,
      CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  w->registered = res == CUDA_SUCCESS;
  if (w->registered)
    res = cu->cuMemHostGetDevicePointer (&w->dptr, data, 0);
  gpushare_cuda_pop ();
  if (res != CUDA_SUCCESS) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "host memory cannot be written from a stream of device %d: %s",
        device, gpushare_cuda_result_to_string (res));
    gpushare_cuda_words_free (w);
    return NULL;
  }
  GST_DEBUG ("ready words of %u slots in host memory, device %d", n_slots,
      device);
  return w;
}

gint
gpushare_cuda_words_export (GpuShareCudaWords * words, GError ** error)
{
  g_return_val_if_fail (words != NULL && words->fd >= 0, -1);

  return gpushare_memfd_reopen_read_only (words->fd, "the ready words",
      GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL, error);
}

gboolean
gpushare_cuda_words_signal (GpuShareCudaWords * words, CUstream stream,
    guint slot, guint64 value, GError ** error)
{
  g_return_val_if_fail (words != NULL && words->dptr != 0, FALSE);
  g_return_val_if_fail (slot < words->n_slots, FALSE);

  return gpushare_cuda_sem_signal (stream,
      words->dptr + (CUdeviceptr) slot * GPUSHARE_CUDA_SEM_WORD_SIZE, value,
      error);
}

GpuShareCudaWords *
gpushare_cuda_words_open (gint fd, guint n_slots, GError ** error)
{
  GpuShareCudaWords *w;
  gpointer data;

  ensure_debug ();
  if (!words_slots_ok (n_slots, error)
      || !gpushare_memfd_check_read_only (fd, GPUSHARE_HOST_WORDS_SIZE, NULL,
          "the ready words", GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          error)) {
    if (fd >= 0)
      close (fd);
    return NULL;
  }
  data = mmap (NULL, GPUSHARE_HOST_WORDS_SIZE, PROT_READ, MAP_SHARED, fd, 0);
  close (fd);
  if (data == MAP_FAILED) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "the ready words cannot be mapped: %s", g_strerror (errno));
    return NULL;
  }
  w = g_new0 (GpuShareCudaWords, 1);
  w->n_slots = n_slots;
  w->fd = -1;
  w->words = data;
  return w;
}

gboolean
gpushare_cuda_words_wait (GpuShareCudaWords * words, guint slot,
    guint64 value, gint64 until_us, gint64 * spun_us)
{
  gint64 start = 0, now, yield_at = 0;
  guint64 w;

  g_return_val_if_fail (words != NULL && slot < words->n_slots, FALSE);

  *spun_us = 0;
  /* a value the device refuses (gpushare_cuda_sem_wait ()) is not seen
   * here either: the device wait then says what is wrong with it */
  if (value > GPUSHARE_CUDA_SEM_MAX_VALUE)
    return FALSE;
  for (;; gpushare_cpu_relax ()) {
    /* acquire: the frame the device wrote before the word is there for
     * what this process queues once it saw the word */
    w = __atomic_load_n (&words->words[slot], __ATOMIC_ACQUIRE);
    /* the device's comparison: cyclic, as cuStreamWaitValue64 GEQ */
    if ((gint64) (w - value) >= 0)
      break;
    now = g_get_monotonic_time ();
    if (!start)
      start = yield_at = now;
    if (now >= until_us) {
      *spun_us = now - start;
      return FALSE;
    }
    /* the producer's thread, woken on this CPU, runs now rather than
     * after our time slice */
    if (now - yield_at >= GPUSHARE_POLL_YIELD_US) {
      sched_yield ();
      yield_at = now;
    }
  }
  if (start)
    *spun_us = g_get_monotonic_time () - start;
  return TRUE;
}

void
gpushare_cuda_words_free (GpuShareCudaWords * words)
{
  if (!words)
    return;
  if (words->registered) {
    if (gpushare_cuda ()->cuCtxPushCurrent (words->ctx) == CUDA_SUCCESS) {
      gpushare_cuda ()->cuMemHostUnregister ((gpointer) words->words);
      gpushare_cuda_pop ();
    } else {
      GST_ERROR ("cannot make device %d current: ready words left "
          "registered", words->device);
    }
  }
  if (words->ctx)
    gpushare_cuda_primary_release (words->device);
  if (words->words)
    munmap ((gpointer) words->words, GPUSHARE_HOST_WORDS_SIZE);
  if (words->fd >= 0)
    close (words->fd);
  g_free (words);
}

/* ------------------------------------------------------------------------ */
/* IPC events */

static GpuShareCudaEvents *
events_start (gint device, guint n, gboolean imported, GError ** error)
{
  GpuShareCudaEvents *ev;

  ensure_debug ();
  if (n == 0 || n > MAX_EVENTS) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "%u IPC events asked for, 1 .. %u supported", n, (guint) MAX_EVENTS);
    return NULL;
  }
  if (!gpushare_cuda_load (error)
      || !device_attr (device, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED,
          "IPC event support", error))
    return NULL;

  ev = g_new0 (GpuShareCudaEvents, 1);
  ev->device = device;
  ev->n = n;
  ev->imported = imported;
  ev->events = g_new0 (CUevent, n);
  if (!gpushare_cuda_primary_push (device, &ev->ctx, error)) {
    g_free (ev->events);
    g_free (ev);
    return NULL;
  }
  return ev;
}

/* context current */
static void
events_destroy (GpuShareCudaEvents * ev)
{
  guint i;

  for (i = 0; i < ev->n; i++) {
    if (ev->events[i])
      gpushare_cuda ()->cuEventDestroy (ev->events[i]);
    ev->events[i] = NULL;
  }
}

GpuShareCudaEvents *
gpushare_cuda_events_new (gint device, guint n, GError ** error)
{
  GpuShareCudaEvents *ev;
  guint i;

  ev = events_start (device, n, FALSE, error);
  if (!ev)
    return NULL;
  for (i = 0; i < n; i++) {
    /* without timing an event is a plain fence, and interprocess events
     * must not time */
    if (!gpushare_cuda_check (gpushare_cuda ()->cuEventCreate (&ev->events[i],
                CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
            "cuEventCreate", error)) {
      ev->events[i] = NULL;
      goto failed;
    }
  }
  gpushare_cuda_pop ();
  GST_DEBUG ("%u IPC events created on device %d", n, device);
  return ev;

failed:
  events_destroy (ev);
  gpushare_cuda_pop ();
  gpushare_cuda_primary_release (device);
  g_free (ev->events);
  g_free (ev);
  return NULL;
}

gboolean
gpushare_cuda_events_export (GpuShareCudaEvents * ev, guint8 * handles,
    GError ** error)
{
  GpuShareCudaApi *cu;
  CUipcEventHandle h;
  gboolean ok = TRUE;
  guint i;

  g_return_val_if_fail (ev != NULL, FALSE);
  g_return_val_if_fail (!ev->imported, FALSE);
  g_return_val_if_fail (handles != NULL, FALSE);

  cu = gpushare_cuda ();
  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (ev->ctx),
          "cuCtxPushCurrent", error))
    return FALSE;
  for (i = 0; ok && i < ev->n; i++) {
    ok = gpushare_cuda_check (cu->cuIpcGetEventHandle (&h, ev->events[i]),
        "cuIpcGetEventHandle", error);
    if (ok)
      memcpy (handles + (gsize) i * GPUSHARE_CUDA_EVENT_HANDLE_SIZE, &h,
          GPUSHARE_CUDA_EVENT_HANDLE_SIZE);
  }
  gpushare_cuda_pop ();
  memset (&h, 0, sizeof (h));
  if (!ok)
    memset (handles, 0, (gsize) ev->n * GPUSHARE_CUDA_EVENT_HANDLE_SIZE);
  return ok;
}

GpuShareCudaEvents *
gpushare_cuda_events_import (gint device, const guint8 * handles, guint n,
    GError ** error)
{
  GpuShareCudaEvents *ev;
  CUipcEventHandle h;
  guint i;

  g_return_val_if_fail (handles != NULL, NULL);

  ev = events_start (device, n, TRUE, error);
  if (!ev)
    return NULL;
  for (i = 0; i < n; i++) {
    CUresult r;

    memcpy (&h, handles + (gsize) i * GPUSHARE_CUDA_EVENT_HANDLE_SIZE,
        GPUSHARE_CUDA_EVENT_HANDLE_SIZE);
    r = gpushare_cuda ()->cuIpcOpenEventHandle (&ev->events[i], h);
    if (r != CUDA_SUCCESS) {
      ev->events[i] = NULL;
      /* the two processes do not share /dev/shm, where the driver keeps
       * an IPC event's shared state: seen with a private /dev/shm (its
       * own mount or IPC namespace), as each container has */
      if (r == CUDA_ERROR_MAP_FAILED)
        g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
            "cuIpcOpenEventHandle failed: %s: CUDA IPC events need the "
            "producer's /dev/shm, and this process has another one (a "
            "container of its own, or another IPC or mount namespace); "
            "sync-mode=semaphore or host needs nothing shared but the "
            "socket", gpushare_cuda_result_to_string (r));
      else
        gpushare_cuda_check (r, "cuIpcOpenEventHandle", error);
      GST_WARNING ("cannot open IPC event %u of %u", i, n);
      goto failed;
    }
  }
  memset (&h, 0, sizeof (h));
  gpushare_cuda_pop ();
  GST_DEBUG ("%u IPC events opened on device %d", n, device);
  return ev;

failed:
  memset (&h, 0, sizeof (h));
  events_destroy (ev);
  gpushare_cuda_pop ();
  gpushare_cuda_primary_release (device);
  g_free (ev->events);
  g_free (ev);
  return NULL;
}

void
gpushare_cuda_events_free (GpuShareCudaEvents * ev)
{
  GpuShareCudaApi *cu;

  if (!ev)
    return;
  cu = gpushare_cuda ();
  /* an event destroyed while a record is pending is released by the driver
   * once the record completes: no synchronisation needed */
  if (cu->cuCtxPushCurrent (ev->ctx) == CUDA_SUCCESS) {
    events_destroy (ev);
    gpushare_cuda_pop ();
  } else {
    GST_ERROR ("cannot make device %d current: %u IPC events leaked",
        ev->device, ev->n);
  }
  gpushare_cuda_primary_release (ev->device);
  GST_DEBUG ("%u IPC events %s", ev->n, ev->imported ? "closed" : "freed");
  g_free (ev->events);
  g_free (ev);
}

guint
gpushare_cuda_events_count (GpuShareCudaEvents * ev)
{
  g_return_val_if_fail (ev != NULL, 0);

  return ev->n;
}

CUevent
gpushare_cuda_events_get (GpuShareCudaEvents * ev, guint i)
{
  g_return_val_if_fail (ev != NULL, NULL);
  g_return_val_if_fail (i < ev->n, NULL);

  return ev->events[i];
}

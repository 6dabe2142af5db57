/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CUDA VMM slots.
 *
 * Producer: per slot one cuMemCreate allocation with the POSIX-fd handle
 * type, sized to the allocation granularity, mapped read-write into the
 * producer's address space.  Each consumer connection gets a fresh fd per
 * slot from cuMemExportToShareableHandle.
 *
 * Consumer: per slot cuMemImportFromShareableHandle once, the fd closed
 * right after (an open exported fd keeps GPU memory alive), then reserve,
 * map and cuMemSetAccess read-only (measured to work on the H200: a
 * consumer cannot write the producer's frames).  Every import is released
 * exactly once: unmap, free the range, cuMemRelease.
 *
 * Never log a handle, a device pointer or an fd: slot indices only.
 */

#include "gpusharecuda.h"
#include "gpusharenegotiate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (gpushare_cuda_debug);
#define GST_CAT_DEFAULT gpushare_cuda_debug

typedef struct
{
  CUcontext ctx;
  CUmemGenericAllocationHandle handles[GPUSHARE_MAX_SLOTS];
  CUdeviceptr ptrs[GPUSHARE_MAX_SLOTS];
  gboolean created[GPUSHARE_MAX_SLOTS];
  /* producer: each slot's fd from its first export, or -1.  Every
   * consumer is sent a duplicate: one driver call per slot and ring,
   * however many consumers map it (under many processes starting on one
   * GPU a single export can take seconds).  Open for the life of the
   * allocation, which it keeps alive no longer than the producer does */
  gint exported[GPUSHARE_MAX_SLOTS];
  GMutex export_lock;
} VmmPriv;

static void
ensure_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_cuda_debug, "gpusharecuda", 0,
        "gpushare CUDA backend");
    g_once_init_leave (&once, 1);
  }
}

gchar *
gpushare_cuda_uuid_to_string (const guint8 u[16])
{
  /* one spelling for both: negotiation reasons quote it without CUDA */
  return gpushare_gpu_uuid_to_string (u);
}

static gint
attr (CUdevice dev, CUdevice_attribute a)
{
  gint v = 0;

  if (gpushare_cuda ()->cuDeviceGetAttribute (&v, a, dev) != CUDA_SUCCESS)
    return 0;
  return v;
}

gboolean
gpushare_cuda_probe (gint device, GpuShareCudaCaps * caps, GError ** error)
{
  GpuShareCudaApi *cu;
  CUdevice dev;
  CUuuid uuid;
  gint count = 0;
  CUmemAllocationProp prop;
  size_t gran = 0;

  memset (caps, 0, sizeof (*caps));
  ensure_debug ();
  if (!gpushare_cuda_load (error))
    return FALSE;
  cu = gpushare_cuda ();
  if (!gpushare_cuda_check (cu->cuDeviceGetCount (&count), "cuDeviceGetCount",
          error))
    return FALSE;
  if (device < 0 || device >= count) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "no CUDA device %d (this host has %d)", device, count);
    return FALSE;
  }
  if (!gpushare_cuda_check (cu->cuDeviceGet (&dev, device), "cuDeviceGet",
          error))
    return FALSE;

  caps->device = device;
  cu->cuDriverGetVersion (&caps->driver_version);
  cu->cuDeviceGetName (caps->name, sizeof (caps->name) - 1, dev);
  if (cu->cuDeviceGetUuid (&uuid, dev) == CUDA_SUCCESS)
    memcpy (caps->uuid, uuid.bytes, 16);
  caps->vmm = attr (dev,
      CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  caps->posix_fd = attr (dev,
      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
  caps->fabric = attr (dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED);
  caps->ipc_event = attr (dev, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
  caps->unified_addressing = attr (dev, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  caps->mem_ops_64 = attr (dev,
      CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
  caps->compute_mode = attr (dev, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  /* CUDA 12.4: a driver without it answers an error, read as "no MPS" */
  caps->mps = attr (dev, CU_DEVICE_ATTRIBUTE_MPS_ENABLED);
  /* a MIG compute instance is visible only through its MIG- prefixed UUID
   * in CUDA_VISIBLE_DEVICES; the driver API has no attribute for it */
  caps->mig = g_str_has_prefix (g_getenv ("CUDA_VISIBLE_DEVICES") ?
      g_getenv ("CUDA_VISIBLE_DEVICES") : "", "MIG-");

  if (caps->vmm) {
    memset (&prop, 0, sizeof (prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (cu->cuMemGetAllocationGranularity (&gran, &prop,
            CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS)
      caps->granularity = gran;
  }
  return TRUE;
}

gint
gpushare_cuda_find_device (const guint8 want[16])
{
  GpuShareCudaApi *cu;
  gint count = 0, i;

  if (!gpushare_cuda_load (NULL))
    return -1;
  cu = gpushare_cuda ();
  if (cu->cuDeviceGetCount (&count) != CUDA_SUCCESS)
    return -1;
  for (i = 0; i < count; i++) {
    CUdevice dev;
    CUuuid uuid;

    if (cu->cuDeviceGet (&dev, i) == CUDA_SUCCESS
        && cu->cuDeviceGetUuid (&uuid, dev) == CUDA_SUCCESS
        && memcmp (uuid.bytes, want, 16) == 0)
      return i;
  }
  return -1;
}

gboolean
gpushare_cuda_peer_probe (gint reader, gint owner, gboolean * atomics,
    gint * rank, GError ** error)
{
  GpuShareCudaApi *cu;
  CUdevice r, o;
  gint can = 0, v = 0;

  *atomics = FALSE;
  *rank = 0;
  if (!gpushare_cuda_load (error))
    return FALSE;
  cu = gpushare_cuda ();
  if (!gpushare_cuda_check (cu->cuDeviceGet (&r, reader), "cuDeviceGet",
          error) || !gpushare_cuda_check (cu->cuDeviceGet (&o, owner),
          "cuDeviceGet", error))
    return FALSE;
  if (!gpushare_cuda_check (cu->cuDeviceCanAccessPeer (&can, r, o),
          "cuDeviceCanAccessPeer", error))
    return FALSE;
  if (!can) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "GPU %d cannot access the memory of GPU %d (no peer access between "
        "them)", reader, owner);
    return FALSE;
  }
  /* srcDevice accesses dstDevice's memory */
  if (cu->cuDeviceGetP2PAttribute (&v,
          CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, r, o)
      == CUDA_SUCCESS)
    *atomics = v != 0;
  if (cu->cuDeviceGetP2PAttribute (&v,
          CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, r, o) == CUDA_SUCCESS)
    *rank = v;
  return TRUE;
}

gsize
gpushare_cuda_vmm_slot_size (gint device, gsize frame_size)
{
  GpuShareCudaCaps caps;

  if (!gpushare_cuda_probe (device, &caps, NULL) || caps.granularity == 0)
    return gpushare_round_up (frame_size, 2 * 1024 * 1024);
  return gpushare_round_up (frame_size, caps.granularity);
}

const gchar *
gpushare_cuda_context_hint (CUresult res)
{
  /* both measured with gpushare-bench --streams --topology per-process
   * on an 80 GB H100 (docs/benchmarks.md) */
  switch ((gint) res) {
    case CUDA_ERROR_MPS_MAX_CLIENTS_REACHED:
      return "the GPU's MPS server takes no more client processes (48 on "
          "an H100): read several streams in one process, or run these "
          "processes without MPS";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "the GPU has no room left for this process's CUDA context: "
          "free GPU memory, or, where many processes share the GPU (each "
          "has a context of its own, and past about 100 of them the driver "
          "refuses more whatever memory is free), set "
          "CUDA_DEVICE_MAX_CONNECTIONS=2 in their environment, or read "
          "several streams in one process";
    default:
      return NULL;
  }
}

gboolean
gpushare_cuda_primary_retain (gint device, CUcontext * ctx, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  unsigned int flags = 0;
  int active = 1;
  CUdevice dev;
  CUcontext dummy;
  CUresult res;
  const gchar *hint;

  ensure_debug ();
  if (!gpushare_cuda_check (cu->cuDeviceGet (&dev, device), "cuDeviceGet",
          error))
    return FALSE;
  /* inactive: the retain below makes it, and its limits are ours to set */
  if (cu->cuDevicePrimaryCtxGetState (dev, &flags, &active) != CUDA_SUCCESS)
    active = 1;
  res = cu->cuDevicePrimaryCtxRetain (ctx, dev);
  if (res != CUDA_SUCCESS && (hint = gpushare_cuda_context_hint (res))) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "cuDevicePrimaryCtxRetain failed: %s: %s",
        gpushare_cuda_result_to_string (res), hint);
    return FALSE;
  }
  if (!gpushare_cuda_check (res, "cuDevicePrimaryCtxRetain", error))
    return FALSE;
  if (!active && cu->cuCtxPushCurrent (*ctx) == CUDA_SUCCESS) {
    /* a request the driver may round; a failure only costs memory */
    if (cu->cuCtxSetLimit (CU_LIMIT_STACK_SIZE, GPUSHARE_CUDA_STACK_BYTES)
        != CUDA_SUCCESS)
      GST_INFO ("GPU %d: the context keeps the driver's stack size", device);
    cu->cuCtxPopCurrent (&dummy);
  }
  return TRUE;
}

gboolean
gpushare_cuda_primary_push (gint device, CUcontext * ctx, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();

  if (!gpushare_cuda_primary_retain (device, ctx, error))
    return FALSE;
  if (!gpushare_cuda_check (cu->cuCtxPushCurrent (*ctx), "cuCtxPushCurrent",
          error)) {
    gpushare_cuda_primary_release (device);
    *ctx = NULL;
    return FALSE;
  }
  return TRUE;
}

void
gpushare_cuda_pop (void)
{
  CUcontext dummy;

  gpushare_cuda ()->cuCtxPopCurrent (&dummy);
}

void
gpushare_cuda_primary_release (gint device)
{
  CUdevice dev;

  if (gpushare_cuda ()->cuDeviceGet (&dev, device) == CUDA_SUCCESS)
    gpushare_cuda ()->cuDevicePrimaryCtxRelease (dev);
}

gboolean
gpushare_cuda_map_handle (CUmemGenericAllocationHandle handle, gsize size,
    gint device, CUmemAccess_flags flags, CUdeviceptr * ptr, GError ** error)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUmemAccessDesc access;
  CUdeviceptr p = 0;

  *ptr = 0;
  if (!gpushare_cuda_check (cu->cuMemAddressReserve (&p, size, 0, 0, 0),
          "cuMemAddressReserve", error))
    return FALSE;
  if (!gpushare_cuda_check (cu->cuMemMap (p, size, 0, handle, 0), "cuMemMap",
          error)) {
    cu->cuMemAddressFree (p, size);
    return FALSE;
  }
  memset (&access, 0, sizeof (access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = flags;
  /* mappings start inaccessible: without this every access faults */
  if (!gpushare_cuda_check (cu->cuMemSetAccess (p, size, &access, 1),
          "cuMemSetAccess", error)) {
    gpushare_cuda_unmap_handle (p, size);
    return FALSE;
  }
  *ptr = p;
  return TRUE;
}

void
gpushare_cuda_unmap_handle (CUdeviceptr ptr, gsize size)
{
  if (!ptr)
    return;
  gpushare_cuda ()->cuMemUnmap (ptr, size);
  gpushare_cuda ()->cuMemAddressFree (ptr, size);
}

/* context pushed.  Undoes whatever of slot i exists, in reverse order. */
static void
unmap_slot (VmmPriv * priv, guint i, gsize size)
{
  gpushare_cuda_unmap_handle (priv->ptrs[i], size);
  if (priv->created[i])
    gpushare_cuda ()->cuMemRelease (priv->handles[i]);
  priv->ptrs[i] = 0;
  priv->created[i] = FALSE;
}

static void
vmm_free (GpuShareCudaAlloc * alloc)
{
  VmmPriv *priv = alloc->priv;
  CUcontext ctx;
  guint i;

  if (!priv)
    return;
  for (i = 0; i < alloc->n_slots; i++)
    if (priv->exported[i] >= 0)
      close (priv->exported[i]);
  g_mutex_clear (&priv->export_lock);
  if (gpushare_cuda ()->cuCtxPushCurrent (priv->ctx) == CUDA_SUCCESS) {
    /* nothing of ours may still be running against these slots */
    gpushare_cuda ()->cuCtxSynchronize ();
    for (i = 0; i < alloc->n_slots; i++)
      unmap_slot (priv, i, alloc->slot_size);
    gpushare_cuda ()->cuCtxPopCurrent (&ctx);
  }
  gpushare_cuda_primary_release (alloc->device);
  g_free (priv);
  alloc->priv = NULL;
}

static gboolean
vmm_alloc (GpuShareCudaAlloc * alloc, GError ** error)
{
  GpuShareCudaApi *cu;
  VmmPriv *priv;
  CUmemAllocationProp prop;
  guint i;

  ensure_debug ();
  if (!gpushare_cuda_load (error))
    return FALSE;
  cu = gpushare_cuda ();
  priv = g_new0 (VmmPriv, 1);
  if (!gpushare_cuda_primary_push (alloc->device, &priv->ctx, error)) {
    g_free (priv);
    return FALSE;
  }
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    priv->exported[i] = -1;
  g_mutex_init (&priv->export_lock);
  alloc->priv = priv;

  memset (&prop, 0, sizeof (prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = alloc->device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

  for (i = 0; i < alloc->n_slots; i++) {
    if (!gpushare_cuda_check (cu->cuMemCreate (&priv->handles[i],
                alloc->slot_size, &prop, 0), "cuMemCreate", error))
      goto failed;
    priv->created[i] = TRUE;
    if (!gpushare_cuda_map_handle (priv->handles[i], alloc->slot_size,
            alloc->device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, &priv->ptrs[i],
            error))
      goto failed;
    alloc->data[i] = (gpointer) (uintptr_t) priv->ptrs[i];
  }
  gpushare_cuda_pop ();
  GST_DEBUG ("allocated %u VMM slots of %" G_GSIZE_FORMAT " bytes on device "
      "%d", alloc->n_slots, alloc->slot_size, alloc->device);
  return TRUE;

failed:
  gpushare_cuda_pop ();
  vmm_free (alloc);
  return FALSE;
}

static gint
vmm_export_slot (GpuShareCudaAlloc * alloc, guint slot, GError ** error)
{
  VmmPriv *priv = alloc->priv;
  int fd, err;
  CUresult res;

  g_mutex_lock (&priv->export_lock);
  if (priv->exported[slot] < 0) {
    res = gpushare_cuda ()->cuMemExportToShareableHandle (&fd,
        priv->handles[slot], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (!gpushare_cuda_check (res, "cuMemExportToShareableHandle", error)) {
      g_mutex_unlock (&priv->export_lock);
      return -1;
    }
    /* the driver does not promise CLOEXEC: our fds never leak into exec */
    fcntl (fd, F_SETFD, FD_CLOEXEC);
    priv->exported[slot] = fd;
  }
  /* the importer's fd refers to the same export, as the driver's own
   * samples send one fd to every process */
  fd = fcntl (priv->exported[slot], F_DUPFD_CLOEXEC, 0);
  err = errno;
  g_mutex_unlock (&priv->export_lock);
  if (fd < 0)
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
        "cannot duplicate the export of slot %u: %s", slot, g_strerror (err));
  return fd;
}

static void
vmm_unimport (GpuShareCudaImport * import)
{
  VmmPriv *priv = import->priv;
  CUcontext ctx;
  guint i;

  if (!priv)
    return;
  if (gpushare_cuda ()->cuCtxPushCurrent (priv->ctx) == CUDA_SUCCESS) {
    gpushare_cuda ()->cuCtxSynchronize ();
    for (i = 0; i < import->n_slots; i++)
      unmap_slot (priv, i, import->slot_size);
    gpushare_cuda ()->cuCtxPopCurrent (&ctx);
  }
  gpushare_cuda_primary_release (import->device);
  g_free (priv);
  import->priv = NULL;
}

static gboolean
vmm_import (GpuShareCudaImport * import, gint * fds, GError ** error)
{
  GpuShareCudaApi *cu;
  VmmPriv *priv;
  guint i;

  ensure_debug ();
  if (!gpushare_cuda_load (error)) {
    gpushare_close_fds (fds, import->n_slots);
    return FALSE;
  }
  cu = gpushare_cuda ();
  priv = g_new0 (VmmPriv, 1);
  if (!gpushare_cuda_primary_push (import->device, &priv->ctx, error)) {
    gpushare_close_fds (fds, import->n_slots);
    g_free (priv);
    return FALSE;
  }
  import->priv = priv;

  for (i = 0; i < import->n_slots; i++) {
    CUresult res = cu->cuMemImportFromShareableHandle (&priv->handles[i],
        (void *) (uintptr_t) fds[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);

    /* import each received fd once, then let it go */
    close (fds[i]);
    fds[i] = -1;
    if (!gpushare_cuda_check (res, "cuMemImportFromShareableHandle", error))
      goto failed;
    priv->created[i] = TRUE;
    if (!gpushare_cuda_map_handle (priv->handles[i], import->slot_size,
            import->device, CU_MEM_ACCESS_FLAGS_PROT_READ, &priv->ptrs[i],
            error))
      goto failed;
    import->data[i] = (gconstpointer) (uintptr_t) priv->ptrs[i];
  }
  gpushare_cuda_pop ();
  return TRUE;

failed:
  gpushare_close_fds (fds, import->n_slots);
  gpushare_cuda_pop ();
  vmm_unimport (import);
  return FALSE;
}

CUcontext
gpushare_cuda_alloc_context (GpuShareCudaAlloc * alloc)
{
  return alloc->priv ? ((VmmPriv *) alloc->priv)->ctx : NULL;
}

CUcontext
gpushare_cuda_import_context (GpuShareCudaImport * import)
{
  return import->priv ? ((VmmPriv *) import->priv)->ctx : NULL;
}

GpuShareCudaAlloc *
gpushare_cuda_alloc_new (gint device, guint64 epoch, guint n_slots,
    gsize slot_size, GError ** error)
{
  GpuShareCudaAlloc *alloc;

  g_return_val_if_fail (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS, NULL);
  alloc = g_new0 (GpuShareCudaAlloc, 1);
  alloc->ref_count = 1;
  alloc->device = device;
  alloc->epoch = epoch;
  alloc->n_slots = n_slots;
  alloc->slot_size = slot_size;
  if (!vmm_alloc (alloc, error)) {
    g_free (alloc);
    return NULL;
  }
  return alloc;
}

GpuShareCudaAlloc *
gpushare_cuda_alloc_ref (GpuShareCudaAlloc * alloc)
{
  g_atomic_int_inc (&alloc->ref_count);
  return alloc;
}

void
gpushare_cuda_alloc_unref (GpuShareCudaAlloc * alloc)
{
  if (!g_atomic_int_dec_and_test (&alloc->ref_count))
    return;
  vmm_free (alloc);
  g_free (alloc);
}

gint
gpushare_cuda_alloc_export (GpuShareCudaAlloc * alloc, guint slot,
    GError ** error)
{
  g_return_val_if_fail (slot < alloc->n_slots, -1);
  return vmm_export_slot (alloc, slot, error);
}

GpuShareCudaImport *
gpushare_cuda_import_new (gint device, guint64 epoch, guint n_slots,
    gsize slot_size, gint * fds, GError ** error)
{
  GpuShareCudaImport *import;

  if (n_slots < 1 || n_slots > GPUSHARE_MAX_SLOTS) {
    gpushare_close_fds (fds, MIN (n_slots, GPUSHARE_MAX_SLOTS));
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_UNSUPPORTED,
        "bad slot count %u", n_slots);
    return NULL;
  }
  import = g_new0 (GpuShareCudaImport, 1);
  import->ref_count = 1;
  import->device = device;
  import->epoch = epoch;
  import->n_slots = n_slots;
  import->slot_size = slot_size;
  if (!vmm_import (import, fds, error)) {
    g_free (import);
    return NULL;
  }
  return import;
}

GpuShareCudaImport *
gpushare_cuda_import_ref (GpuShareCudaImport * import)
{
  g_atomic_int_inc (&import->ref_count);
  return import;
}

void
gpushare_cuda_import_unref (GpuShareCudaImport * import)
{
  if (!g_atomic_int_dec_and_test (&import->ref_count))
    return;
  vmm_unimport (import);
  g_free (import);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA memory backends: VMM allocations exported as POSIX file
 * descriptors (the default), and the capability probe that the handshake
 * announces so that a consumer decides before it imports anything.
 */

#ifndef __GPUSHARE_CUDA_H__
#define __GPUSHARE_CUDA_H__

#include <glib.h>
#include "gpusharebackend.h"
#include "gpusharecudaloader.h"

G_BEGIN_DECLS

typedef struct
{
  gint device;
  gchar name[128];
  guint8 uuid[16];
  gint driver_version;
  gboolean vmm;                 /* virtual memory management */
  gboolean posix_fd;            /* VMM export as POSIX fd */
  gboolean fabric;              /* VMM export as fabric handle */
  gboolean ipc_event;
  gboolean unified_addressing;  /* needed by legacy cuIpc* memory */
  gboolean mem_ops_64;          /* cuStreamWriteValue64 / WaitValue64 */
  gint compute_mode;            /* CUcomputemode */
  gboolean mig;                 /* a MIG instance (from its UUID) */
  gboolean mps;                 /* this process's contexts go through MPS */
  gsize granularity;            /* minimum VMM granularity, pinned device */
} GpuShareCudaCaps;

/* FALSE with a reason when there is no driver, no such device, ... */
gboolean gpushare_cuda_probe (gint device, GpuShareCudaCaps * caps,
    GError ** error);
/* the ordinal of the device with this UUID among the devices this
 * process sees (CUDA_VISIBLE_DEVICES applies), or -1 */
gint gpushare_cuda_find_device (const guint8 uuid[16]);

/* Can GPU reader map memory that lives on GPU owner and read it in place
 * (peer access: NVLink or PCIe)?  FALSE with the reason otherwise.  On
 * TRUE, *atomics says whether the link carries native atomics and *rank
 * is the driver's relative performance rank of the link (0 is best). */
gboolean gpushare_cuda_peer_probe (gint reader, gint owner,
    gboolean * atomics, gint * rank, GError ** error);

/* "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints it */
gchar *gpushare_cuda_uuid_to_string (const guint8 uuid[16]);

/* retains the primary context of device and makes it current; undo with
 * gpushare_cuda_pop () and gpushare_cuda_primary_release () */
gboolean gpushare_cuda_primary_push (gint device, CUcontext * ctx,
    GError ** error);
void gpushare_cuda_pop (void);
void gpushare_cuda_primary_release (gint device);

/* context current.  Reserves an address range of size bytes, maps handle
 * into it and gives device the access flags.  On failure nothing is left
 * behind and *ptr is 0.  gpushare_cuda_unmap_handle () undoes it (a ptr
 * of 0 is a no-op); releasing the handle is the caller's. */
gboolean gpushare_cuda_map_handle (CUmemGenericAllocationHandle handle,
    gsize size, gint device, CUmemAccess_flags flags, CUdeviceptr * ptr,
    GError ** error);
void gpushare_cuda_unmap_handle (CUdeviceptr ptr, gsize size);

extern const GpuShareBackend gpushare_cuda_vmm_backend;

/* the CUDA context of an allocation or import (primary context, retained) */
CUcontext gpushare_cuda_allocation_context (GpuShareAllocation * alloc);
CUcontext gpushare_cuda_import_context (GpuShareImport * import);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_H__ */

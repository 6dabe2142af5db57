/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CUDA memory: VMM allocations exported as POSIX file descriptors (the
 * producer's GpuShareCudaAlloc) and imported from them (the consumer's
 * GpuShareCudaImport), and the capability probe that the handshake
 * announces so that a consumer decides before it imports anything.
 *
 * Both are reference counted: a ring replaced by a caps change stays
 * mapped until the last buffer that points into it is gone.
 */

#ifndef __GPUSHARE_CUDA_H__
#define __GPUSHARE_CUDA_H__

#include <glib.h>
#include "gpusharefd.h"
#include "gpusharexfer.h"
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

/* The stack size a primary context that gpushare makes (the first
 * retain in the process) starts with: none.  The driver's default, 1 KiB
 * a thread for every thread the GPU can hold, reserves 264 MiB of device
 * memory a process on an H100 that gpushare's own work does not need;
 * the driver grows it at the launch of a kernel that needs more, where
 * it knows the kernel's need (not for recursion: docs/design.md).  A
 * context that exists already keeps its owner's limits. */
#define GPUSHARE_CUDA_STACK_BYTES 0

/* what a context the driver refused (res from cuDevicePrimaryCtxRetain)
 * means for the user, where it is one of the limits many processes on
 * one GPU meet; NULL for other errors */
const gchar *gpushare_cuda_context_hint (CUresult res);

/* retains the primary context of device (cuDevicePrimaryCtxRetain); one
 * this call makes starts with GPUSHARE_CUDA_STACK_BYTES of stack a
 * thread.  Undo with gpushare_cuda_primary_release (). */
gboolean gpushare_cuda_primary_retain (gint device, CUcontext * ctx,
    GError ** error);
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

typedef struct
{
  gint ref_count;
  gint device;                  /* its CUDA ordinal */
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* the slots' device addresses in this process */
  gpointer data[GPUSHARE_MAX_SLOTS];
  gpointer priv;
} GpuShareCudaAlloc;

typedef struct
{
  gint ref_count;
  gint device;
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* the slots' device addresses in this process, mapped read-only */
  gconstpointer data[GPUSHARE_MAX_SLOTS];
  gpointer priv;
} GpuShareCudaImport;

/* the slot size a frame of frame_size bytes needs on device: a multiple
 * of its allocation granularity */
gsize gpushare_cuda_vmm_slot_size (gint device, gsize frame_size);

GpuShareCudaAlloc *gpushare_cuda_alloc_new (gint device, guint64 epoch,
    guint n_slots, gsize slot_size, GError ** error);
GpuShareCudaAlloc *gpushare_cuda_alloc_ref (GpuShareCudaAlloc * alloc);
void gpushare_cuda_alloc_unref (GpuShareCudaAlloc * alloc);
/* a new fd, CLOEXEC, owned by the caller, or -1 */
gint gpushare_cuda_alloc_export (GpuShareCudaAlloc * alloc, guint slot,
    GError ** error);

/* takes ownership of the n_slots fds, closes them on every path */
GpuShareCudaImport *gpushare_cuda_import_new (gint device, guint64 epoch,
    guint n_slots, gsize slot_size, gint * fds, GError ** error);
GpuShareCudaImport *gpushare_cuda_import_ref (GpuShareCudaImport * import);
void gpushare_cuda_import_unref (GpuShareCudaImport * import);

/* the CUDA context of an allocation or import (primary context, retained) */
CUcontext gpushare_cuda_alloc_context (GpuShareCudaAlloc * alloc);
CUcontext gpushare_cuda_import_context (GpuShareCudaImport * import);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA transfer's part in the negotiation.  See gpusharecudapolicy.h.
 */

#include "gpusharecudapolicy.h"

static const GpuShareMemKind cuda_kinds[] = {
  /* every kind: an exported allocation maps read-write in any process
   * that asks (CUDA has no read-only export), legacy IPC memory always */
  {GPUSHARE_MEM_CUDA_VMM, "cuda", GPUSHARE_CUDA_TRANSPORT_VMM,
      "CUDA VMM memory, or an error", GPUSHARE_KIND_WRITABLE},
  /* cuIpcOpenMemHandle's memory may not be freed while another process
   * has it open */
  {GPUSHARE_MEM_CUDA_LEGACY, "cuda-legacy", GPUSHARE_CUDA_TRANSPORT_LEGACY,
        "Legacy CUDA IPC memory handles, or an error",
      GPUSHARE_KIND_HANDLES | GPUSHARE_KIND_RETIRE | GPUSHARE_KIND_WRITABLE},
  {GPUSHARE_MEM_CUDA_FABRIC, "cuda-fabric", GPUSHARE_CUDA_TRANSPORT_FABRIC,
        "CUDA fabric handles (needs an IMEX channel), or an error",
      GPUSHARE_KIND_HANDLES | GPUSHARE_KIND_WRITABLE},
};

static guint32
cuda_offer (const GpuShareGpu * gpu)
{
  if (!gpu)
    return 0;
  return (gpu->posix_fd ? GPUSHARE_MEM_CUDA_VMM : 0) |
      (gpu->unified_addressing ? GPUSHARE_MEM_CUDA_LEGACY : 0) |
      (gpu->fabric ? GPUSHARE_MEM_CUDA_FABRIC : 0);
}

/* *note says why legacy memory was taken, and what it costs, or why
 * nothing was.  Fabric memory is only ever taken when asked for. */
static GpuShareMemType
cuda_pick (guint32 offered, const GpuShareGpu * gpu, gint transport,
    const gchar ** note)
{
  gboolean vmm = (offered & GPUSHARE_MEM_CUDA_VMM) && gpu->posix_fd;
  gboolean legacy = (offered & GPUSHARE_MEM_CUDA_LEGACY)
      && gpu->unified_addressing && !gpu->no_ipc_handles;
  gboolean fabric = (offered & GPUSHARE_MEM_CUDA_FABRIC) && gpu->fabric;

  *note = NULL;
  switch (transport) {
    case GPUSHARE_TRANSPORT_AUTO:
      if (vmm)
        return GPUSHARE_MEM_CUDA_VMM;
      /* cuIpcOpenMemHandle has no read-only mode: say so wherever it
       * is chosen */
      if (legacy) {
        *note = "legacy CUDA IPC, because VMM file descriptors are not "
            "possible between these ends; legacy IPC memory cannot be "
            "mapped read-only: this consumer could write the producer's "
            "slots";
        return GPUSHARE_MEM_CUDA_LEGACY;
      }
      *note = gpu->no_ipc_handles && (offered & GPUSHARE_MEM_CUDA_LEGACY)
          ? gpu->no_ipc_handles : "neither VMM nor legacy CUDA IPC is "
          "possible between these ends";
      return 0;
    case GPUSHARE_CUDA_TRANSPORT_VMM:
      if (!vmm)
        *note = "VMM file descriptors are not possible between these ends";
      return vmm ? GPUSHARE_MEM_CUDA_VMM : 0;
    case GPUSHARE_CUDA_TRANSPORT_LEGACY:
      *note = legacy ? "legacy CUDA IPC as asked for; legacy IPC memory "
          "cannot be mapped read-only: this consumer could write the "
          "producer's slots" :
          gpu->no_ipc_handles ? gpu->no_ipc_handles :
          "legacy CUDA IPC is not possible between these ends";
      return legacy ? GPUSHARE_MEM_CUDA_LEGACY : 0;
    case GPUSHARE_CUDA_TRANSPORT_FABRIC:
      if (!fabric)
        *note = "the GPUs do not support fabric handles";
      return fabric ? GPUSHARE_MEM_CUDA_FABRIC : 0;
    default:
      return 0;
  }
}

const GpuShareMemPolicy gpushare_cuda_policy = {
  .name = "cuda",
  .kinds = cuda_kinds,
  .n_kinds = G_N_ELEMENTS (cuda_kinds),
  .offer = cuda_offer,
  .pick = cuda_pick,
};

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA driver API, opened at run time.
 *
 * libcuda.so.1 is loaded with GModule and every entry point is taken with
 * cuGetProcAddress for one fixed API version, so the plugin links against
 * no CUDA library, loads on hosts without the driver, and gets the entry
 * point whose signature gpusharecudadriver.h declares (that version's).
 * GStreamer 1.22's libgstcuda loader exposes none of the VMM, IPC, event or
 * stream memory calls, which is why this table exists.
 *
 * Every CUDA call in gpushare goes through gpushare_cuda(): a test build can
 * swap single entries (fault injection) without touching the driver.
 */

#ifndef __GPUSHARE_CUDA_LOADER_H__
#define __GPUSHARE_CUDA_LOADER_H__

#include <glib.h>
#include "gpusharecudadriver.h"

G_BEGIN_DECLS

/* the API version whose signatures we ask for: stable since CUDA 12.0 for
 * every call below */
#define GPUSHARE_CUDA_API_VERSION 12000

#define GPUSHARE_CUDA_FUNCS(X) \
  X (cuInit) \
  X (cuDriverGetVersion) \
  X (cuGetErrorName) \
  X (cuGetErrorString) \
  X (cuDeviceGet) \
  X (cuDeviceGetCount) \
  X (cuDeviceGetAttribute) \
  X (cuDeviceGetName) \
  X (cuDeviceGetUuid) \
  X (cuDeviceCanAccessPeer) \
  X (cuDeviceGetP2PAttribute) \
  X (cuDevicePrimaryCtxRetain) \
  X (cuDevicePrimaryCtxRelease) \
  X (cuDevicePrimaryCtxGetState) \
  X (cuCtxPushCurrent) \
  X (cuCtxPopCurrent) \
  X (cuCtxSetCurrent) \
  X (cuCtxSynchronize) \
  X (cuCtxSetLimit) \
  X (cuCtxGetLimit) \
  X (cuMemGetInfo) \
  X (cuMemGetAddressRange) \
  X (cuMemAlloc) \
  X (cuMemFree) \
  X (cuMemAllocHost) \
  X (cuMemFreeHost) \
  X (cuMemHostRegister) \
  X (cuMemHostUnregister) \
  X (cuMemHostGetDevicePointer) \
  X (cuMemGetAllocationGranularity) \
  X (cuMemCreate) \
  X (cuMemRelease) \
  X (cuMemExportToShareableHandle) \
  X (cuMemImportFromShareableHandle) \
  X (cuMemAddressReserve) \
  X (cuMemAddressFree) \
  X (cuMemMap) \
  X (cuMemUnmap) \
  X (cuMemSetAccess) \
  X (cuMemcpy2DAsync) \
  X (cuMemcpyDtoHAsync) \
  X (cuMemcpyDtoDAsync) \
  X (cuMemsetD8Async) \
  X (cuMemsetD32Async) \
  X (cuPointerGetAttribute) \
  X (cuStreamCreate) \
  X (cuStreamDestroy) \
  X (cuStreamSynchronize) \
  X (cuStreamQuery) \
  X (cuStreamWaitEvent) \
  X (cuStreamWriteValue64) \
  X (cuStreamWaitValue64) \
  X (cuEventCreate) \
  X (cuEventDestroy) \
  X (cuEventRecord) \
  X (cuEventSynchronize) \
  X (cuEventQuery) \
  X (cuIpcGetEventHandle) \
  X (cuIpcOpenEventHandle) \
  X (cuIpcGetMemHandle) \
  X (cuIpcOpenMemHandle) \
  X (cuIpcCloseMemHandle) \
  X (cuModuleLoadData) \
  X (cuModuleUnload) \
  X (cuModuleGetFunction) \
  X (cuLaunchKernel) \
  X (cuLaunchHostFunc)

typedef struct
{
#define GPUSHARE_CUDA_DECL(name) __typeof__ (&name) name;
  GPUSHARE_CUDA_FUNCS (GPUSHARE_CUDA_DECL)
#undef GPUSHARE_CUDA_DECL
} GpuShareCudaApi;

/* Loads the driver once per process.  FALSE with a reason (no driver, too
 * old, cuInit failed) that callers show to the user. */
gboolean gpushare_cuda_load (GError ** error);
/* The table: only valid after gpushare_cuda_load () returned TRUE. */
GpuShareCudaApi *gpushare_cuda (void);
/* "CUDA_ERROR_X: text" for logs and errors; never a handle or pointer */
const gchar *gpushare_cuda_result_to_string (CUresult res);

#define GPUSHARE_CUDA_ERROR (gpushare_cuda_error_quark ())
GQuark gpushare_cuda_error_quark (void);

typedef enum
{
  GPUSHARE_CUDA_ERROR_NO_DRIVER,
  GPUSHARE_CUDA_ERROR_INIT,
  GPUSHARE_CUDA_ERROR_CALL,
  GPUSHARE_CUDA_ERROR_UNSUPPORTED,
  /* a wait for a peer's signal did not end in its time limit */
  GPUSHARE_CUDA_ERROR_TIMEOUT,
  /* a wait was ended by its caller (gpushare_cuda_view_cancel ()) */
  GPUSHARE_CUDA_ERROR_CANCELLED,
} GpuShareCudaError;

#ifdef GPUSHARE_TEST_HOOKS
/* Test build only (gpusharecudafault.c): with GPUSHARE_TEST_CUDA_FAIL set
 * at load, shims in front of the VMM, stream, event and IPC entry points;
 * "NAME:N" makes the N-th call of NAME fail with CUDA_ERROR_OUT_OF_MEMORY.
 * With GPUSHARE_TEST_CUDA_LATE_US=N, every copy (cuMemcpy2DAsync) and
 * kernel (cuLaunchKernel) enqueued runs N microseconds late: a host
 * function that sleeps goes on its stream first, so that work completes
 * well after the call returned, as on a busy GPU.
 * arm () (re)sets the call to fail and the counts, fired () says how many
 * calls were made to fail.  The names the shims cover, NULL-terminated: */
extern const gchar *const gpushare_cuda_fault_names[];
void gpushare_cuda_fault_install (GpuShareCudaApi * api);
void gpushare_cuda_fault_arm (const gchar * name, gint n);
gint gpushare_cuda_fault_fired (void);
#else
/* the installed plugin: the table keeps the driver's own entry points,
 * whatever the environment says */
#define gpushare_cuda_fault_install(api) \
  G_STMT_START { (void) (api); } G_STMT_END
#endif

/* sets error from a failed call */
gboolean gpushare_cuda_check (CUresult res, const gchar * what,
    GError ** error);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_LOADER_H__ */

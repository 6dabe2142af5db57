/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test-only fault injection at the CUDA call table, compiled only into the
 * test build (GPUSHARE_TEST_HOOKS): the installed plugin has no shims.
 *
 * With GPUSHARE_TEST_CUDA_FAIL set when the driver is loaded, the entry
 * points below go through a shim that can make one call fail with
 * CUDA_ERROR_OUT_OF_MEMORY: "NAME:N" fails the N-th call of NAME in this
 * process (cuMemMap:3), any other value only installs the shims, for a
 * test that arms them later (gpushare_cuda_fault_arm ()).  Without the
 * variable nothing here runs and the table holds the driver's own entry
 * points.
 *
 * GPUSHARE_TEST_CUDA_LATE_US=N installs them too, and delays every copy
 * and kernel by N microseconds on its stream (gpusharecudaloader.h).
 */

#include "gpusharecudaloader.h"

/* the installed plugin must not carry the shims (gpusharecudaloader.h) */
#ifndef GPUSHARE_TEST_HOOKS
#error "gpusharecudafault.c belongs to the test build (GPUSHARE_TEST_HOOKS)"
#endif

#include <stdlib.h>
#include <string.h>

static gchar *fail_name;
static gint fail_at;
static gint calls;
static gint fired;
static GMutex lock;

static gboolean
fault_hit (const gchar * name)
{
  gboolean hit = FALSE;

  g_mutex_lock (&lock);
  if (fail_name && strcmp (name, fail_name) == 0 && ++calls == fail_at) {
    hit = TRUE;
    fired++;
  }
  g_mutex_unlock (&lock);
  return hit;
}

/* GPUSHARE_TEST_CUDA_LATE_US: work enqueued behind a sleeping host
 * function, which the driver runs on a thread of its own */
static gulong late_us;
static CUresult (*launch_host_func) (CUstream st, CUhostFn fn, void *data);

static void
late_sleep (void *user_data)
{
  g_usleep (late_us);
}

static CUresult
late (CUstream st)
{
  if (!late_us)
    return CUDA_SUCCESS;
  return launch_host_func (st, late_sleep, NULL);
}

#define SHIM(name, params, args) \
  static __typeof__ (&name) real_##name; \
  static CUresult \
  shim_##name params \
  { \
    if (fault_hit (#name)) \
      return CUDA_ERROR_OUT_OF_MEMORY; \
    return real_##name args; \
  }

/* the same, after the stream st was made to wait */
#define SHIM_LATE(name, params, args) \
  static __typeof__ (&name) real_##name; \
  static CUresult \
  shim_##name params \
  { \
    CUresult res; \
    if (fault_hit (#name)) \
      return CUDA_ERROR_OUT_OF_MEMORY; \
    if ((res = late (st)) != CUDA_SUCCESS) \
      return res; \
    return real_##name args; \
  }

/* *INDENT-OFF* */
SHIM (cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d), (c, d))
SHIM (cuMemAlloc, (CUdeviceptr * p, size_t s), (p, s))
SHIM (cuMemCreate, (CUmemGenericAllocationHandle * h, size_t s,
    const CUmemAllocationProp * prop, unsigned long long f), (h, s, prop, f))
SHIM (cuMemExportToShareableHandle, (void *sh, CUmemGenericAllocationHandle h,
    CUmemAllocationHandleType t, unsigned long long f), (sh, h, t, f))
SHIM (cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle * h,
    void *os, CUmemAllocationHandleType t), (h, os, t))
SHIM (cuMemAddressReserve, (CUdeviceptr * p, size_t s, size_t a,
    CUdeviceptr addr, unsigned long long f), (p, s, a, addr, f))
SHIM (cuMemMap, (CUdeviceptr p, size_t s, size_t o,
    CUmemGenericAllocationHandle h, unsigned long long f), (p, s, o, h, f))
SHIM (cuMemSetAccess, (CUdeviceptr p, size_t s, const CUmemAccessDesc * d,
    size_t n), (p, s, d, n))
SHIM (cuMemsetD8Async, (CUdeviceptr p, unsigned char v, size_t n,
    CUstream st), (p, v, n, st))
SHIM_LATE (cuMemcpy2DAsync, (const CUDA_MEMCPY2D * m, CUstream st), (m, st))
SHIM (cuModuleLoadData, (CUmodule * m, const void *image), (m, image))
SHIM (cuMemHostRegister, (void *p, size_t s, unsigned int f), (p, s, f))
SHIM_LATE (cuLaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy,
    unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
    unsigned int shared, CUstream st, void **params, void **extra),
    (f, gx, gy, gz, bx, by, bz, shared, st, params, extra))
SHIM (cuStreamCreate, (CUstream * st, unsigned int f), (st, f))
SHIM (cuStreamSynchronize, (CUstream st), (st))
SHIM (cuStreamWriteValue64, (CUstream st, CUdeviceptr p, cuuint64_t v,
    unsigned int f), (st, p, v, f))
SHIM (cuStreamWaitValue64, (CUstream st, CUdeviceptr p, cuuint64_t v,
    unsigned int f), (st, p, v, f))
SHIM (cuEventCreate, (CUevent * e, unsigned int f), (e, f))
SHIM (cuEventRecord, (CUevent e, CUstream st), (e, st))
SHIM (cuEventSynchronize, (CUevent e), (e))
SHIM (cuIpcGetEventHandle, (CUipcEventHandle * h, CUevent e), (h, e))
SHIM (cuIpcOpenEventHandle, (CUevent * e, CUipcEventHandle h), (e, h))
SHIM (cuIpcGetMemHandle, (CUipcMemHandle * h, CUdeviceptr p), (h, p))
SHIM (cuIpcOpenMemHandle, (CUdeviceptr * p, CUipcMemHandle h,
    unsigned int f), (p, h, f))
/* *INDENT-ON* */

#define GPUSHARE_CUDA_FAULT_FUNCS(X) \
  X (cuDevicePrimaryCtxRetain) X (cuMemAlloc) \
  X (cuMemCreate) X (cuMemExportToShareableHandle) \
  X (cuMemImportFromShareableHandle) X (cuMemAddressReserve) X (cuMemMap) \
  X (cuMemSetAccess) X (cuMemsetD8Async) X (cuMemcpy2DAsync) \
  X (cuModuleLoadData) X (cuLaunchKernel) X (cuMemHostRegister) \
  X (cuStreamCreate) X (cuStreamSynchronize) X (cuStreamWriteValue64) \
  X (cuStreamWaitValue64) X (cuEventCreate) X (cuEventRecord) \
  X (cuEventSynchronize) \
  X (cuIpcGetEventHandle) X (cuIpcOpenEventHandle) X (cuIpcGetMemHandle) \
  X (cuIpcOpenMemHandle)

const gchar *const gpushare_cuda_fault_names[] = {
#define GPUSHARE_CUDA_FAULT_NAME(name) #name,
  GPUSHARE_CUDA_FAULT_FUNCS (GPUSHARE_CUDA_FAULT_NAME)
#undef GPUSHARE_CUDA_FAULT_NAME
  NULL
};

void
gpushare_cuda_fault_arm (const gchar * name, gint n)
{
  g_mutex_lock (&lock);
  g_free (fail_name);
  fail_name = g_strdup (name);
  fail_at = n;
  calls = 0;
  fired = 0;
  g_mutex_unlock (&lock);
}

gint
gpushare_cuda_fault_fired (void)
{
  gint n;

  g_mutex_lock (&lock);
  n = fired;
  g_mutex_unlock (&lock);
  return n;
}

void
gpushare_cuda_fault_install (GpuShareCudaApi * api)
{
  const gchar *spec = g_getenv ("GPUSHARE_TEST_CUDA_FAIL");
  const gchar *late_spec = g_getenv ("GPUSHARE_TEST_CUDA_LATE_US");
  gchar **parts;

  if (late_spec && *late_spec) {
    late_us = strtoul (late_spec, NULL, 10);
    launch_host_func = api->cuLaunchHostFunc;
  }
  if ((!spec || !*spec) && !late_us)
    return;
#define GPUSHARE_CUDA_FAULT_WRAP(name) \
  real_##name = api->name; \
  api->name = shim_##name;
  GPUSHARE_CUDA_FAULT_FUNCS (GPUSHARE_CUDA_FAULT_WRAP)
#undef GPUSHARE_CUDA_FAULT_WRAP
      if (!spec || !*spec)
    return;
  parts = g_strsplit (spec, ":", 2);
  if (parts[0] && parts[1])
    gpushare_cuda_fault_arm (parts[0], MAX (1, atoi (parts[1])));
  g_strfreev (parts);
}

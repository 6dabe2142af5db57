/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharecudaloader.h"

#include <stdlib.h>
#include <unistd.h>
#include <gmodule.h>

G_DEFINE_QUARK (gpushare - cuda - error - quark, gpushare_cuda_error);

static GpuShareCudaApi api;
static gboolean loaded;
static GError *load_error;

typedef CUresult (*GetProcAddressFunc) (const char *symbol, void **pfn,
    int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult * status);

/* In a PID namespace of its own whose /proc is still the parent's (a
 * container made without mounting /proc), cuInit fails with
 * CUDA_ERROR_OPERATING_SYSTEM: /proc/self then names another pid than
 * getpid () does. */
static const gchar *
proc_hint (void)
{
  gchar *self = g_file_read_link ("/proc/self", NULL);
  gboolean foreign = self && strtol (self, NULL, 10) != (long) getpid ();

  g_free (self);
  return foreign ? " (this process is in a PID namespace whose /proc was "
      "not mounted for it: /proc/self is not this process; CUDA needs the "
      "/proc of its own PID namespace, as container runtimes mount it)" : "";
}

static gboolean
load_once (GError ** error)
{
  GModule *module;
  GetProcAddressFunc get_proc = NULL;
  int version = 0;
  CUresult res;

  module = g_module_open ("libcuda.so.1", G_MODULE_BIND_LAZY);
  if (!module) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_NO_DRIVER,
        "the NVIDIA driver library libcuda.so.1 is not installed");
    return FALSE;
  }
  if (!g_module_symbol (module, "cuGetProcAddress_v2", (gpointer *) & get_proc)
      || !get_proc) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_NO_DRIVER,
        "the NVIDIA driver is older than CUDA 12 (no cuGetProcAddress_v2)");
    g_module_close (module);
    return FALSE;
  }
#define GPUSHARE_CUDA_LOAD(name) \
  { \
    CUdriverProcAddressQueryResult status = 0; \
    if (get_proc (#name, (void **) &api.name, GPUSHARE_CUDA_API_VERSION, \
            CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS \
        || status != CU_GET_PROC_ADDRESS_SUCCESS || !api.name) { \
      g_set_error (error, GPUSHARE_CUDA_ERROR, \
          GPUSHARE_CUDA_ERROR_NO_DRIVER, \
          "the NVIDIA driver has no %s", #name); \
      g_module_close (module); \
      return FALSE; \
    } \
  }
  GPUSHARE_CUDA_FUNCS (GPUSHARE_CUDA_LOAD)
#undef GPUSHARE_CUDA_LOAD
      res = api.cuInit (0);
  if (res != CUDA_SUCCESS) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_INIT,
        "cuInit failed: %s%s", gpushare_cuda_result_to_string (res),
        proc_hint ());
    /* the module stays open: the table points into it */
    return FALSE;
  }
  api.cuDriverGetVersion (&version);
  if (version < GPUSHARE_CUDA_API_VERSION) {
    g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_NO_DRIVER,
        "the NVIDIA driver supports CUDA %d.%d, 12.0 is needed",
        version / 1000, version % 1000 / 10);
    return FALSE;
  }
  gpushare_cuda_fault_install (&api);
  /* the module is never closed: the table is for the process lifetime */
  return TRUE;
}

gboolean
gpushare_cuda_load (GError ** error)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    loaded = load_once (&load_error);
    g_once_init_leave (&once, 1);
  }
  if (!loaded && error)
    *error = g_error_copy (load_error);
  return loaded;
}

GpuShareCudaApi *
gpushare_cuda (void)
{
  return &api;
}

const gchar *
gpushare_cuda_result_to_string (CUresult res)
{
  static const gchar *unknown = "unknown CUDA error";
  const char *name = NULL;

  if (!loaded && !api.cuGetErrorName)
    return unknown;
  if (api.cuGetErrorName (res, &name) != CUDA_SUCCESS || !name)
    return unknown;
  return name;
}

gboolean
gpushare_cuda_check (CUresult res, const gchar * what, GError ** error)
{
  if (res == CUDA_SUCCESS)
    return TRUE;
  g_set_error (error, GPUSHARE_CUDA_ERROR,
      res == CUDA_ERROR_NOT_SUPPORTED ? GPUSHARE_CUDA_ERROR_UNSUPPORTED :
      GPUSHARE_CUDA_ERROR_CALL, "%s failed: %s", what,
      gpushare_cuda_result_to_string (res));
  return FALSE;
}

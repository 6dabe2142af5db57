/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The device memory a process pays for the CUDA context gpushare makes.
 *
 * A primary context starts with the driver's stack of 1 KiB a thread for
 * every thread the GPU can hold, a reservation of a few hundred MiB
 * (264 MiB on an H100) that gpushare's own work does not need.  Where gpushare
 * makes the context (the first retain in the process), it starts with
 * GPUSHARE_CUDA_STACK_BYTES instead; where the application made it first,
 * gpushare leaves its limits alone.  Two children, each a fresh process:
 *
 *   ours: gpushare_cuda_primary_retain () makes the context; its stack is
 *         below the driver's default, and giving it the default back takes
 *         at least MIN_SAVED_MIB more device memory (what gpushare saved);
 *   app:  the application retains the context and sets 2 KiB first; after
 *         gpushare's retain the stack is still the application's.
 *
 * fork() happens before any CUDA call.  Prints one SKIP line and exits 77
 * where no GPU is present.
 */

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib.h>

#include "gpusharecuda.h"
#include "gpusharecudaloader.h"
#include "gpu-test-util.h"

/* the driver's stack size of a new context (CUDA 12 and 13) */
#define DRIVER_STACK 1024
#define APP_STACK 2048
#define MIN_SAVED_MIB 64

static gboolean
stack_of (CUcontext ctx, gsize * stack)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  CUcontext dummy;
  gboolean ok;

  if (cu->cuCtxPushCurrent (ctx) != CUDA_SUCCESS)
    return FALSE;
  ok = cu->cuCtxGetLimit (stack, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS;
  cu->cuCtxPopCurrent (&dummy);
  return ok;
}

static gsize
free_mib (void)
{
  size_t free = 0, total = 0;

  gpushare_cuda ()->cuMemGetInfo (&free, &total);
  return free >> 20;
}

static gint
ours (void)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  CUcontext ctx, dummy;
  gsize stack = 0, restored = 0, before, after;

  if (!gpushare_cuda_primary_retain (0, &ctx, &error)) {
    g_print ("ours: %s: FAIL\n", error->message);
    g_clear_error (&error);
    return 1;
  }
  if (!stack_of (ctx, &stack) || cu->cuCtxPushCurrent (ctx) != CUDA_SUCCESS) {
    g_print ("ours: cannot read the context's stack size: FAIL\n");
    return 1;
  }
  before = free_mib ();
  if (cu->cuCtxSetLimit (CU_LIMIT_STACK_SIZE, DRIVER_STACK) != CUDA_SUCCESS
      || cu->cuCtxGetLimit (&restored, CU_LIMIT_STACK_SIZE) != CUDA_SUCCESS) {
    g_print ("ours: cannot give the context the driver's stack: FAIL\n");
    return 1;
  }
  after = free_mib ();
  cu->cuCtxPopCurrent (&dummy);
  gpushare_cuda_primary_release (0);
  g_print ("ours: a context gpushare made has %" G_GSIZE_FORMAT " bytes of "
      "stack a thread (the driver's default: %" G_GSIZE_FORMAT "); the "
      "default takes %" G_GSIZE_FORMAT " MiB more device memory: %s\n",
      stack, restored, before > after ? before - after : 0,
      stack < DRIVER_STACK && restored >= DRIVER_STACK
      && before >= after + MIN_SAVED_MIB ? "PASS" : "FAIL");
  return stack < DRIVER_STACK && restored >= DRIVER_STACK
      && before >= after + MIN_SAVED_MIB ? 0 : 1;
}

static gint
app (void)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  CUcontext app_ctx, ctx, dummy;
  gsize set = 0, stack = 0;
  CUdevice dev;

  if (cu->cuDeviceGet (&dev, 0) != CUDA_SUCCESS
      || cu->cuDevicePrimaryCtxRetain (&app_ctx, dev) != CUDA_SUCCESS
      || cu->cuCtxPushCurrent (app_ctx) != CUDA_SUCCESS) {
    g_print ("app: no primary context: FAIL\n");
    return 1;
  }
  cu->cuCtxSetLimit (CU_LIMIT_STACK_SIZE, APP_STACK);
  cu->cuCtxGetLimit (&set, CU_LIMIT_STACK_SIZE);
  cu->cuCtxPopCurrent (&dummy);
  if (!gpushare_cuda_primary_retain (0, &ctx, &error)) {
    g_print ("app: %s: FAIL\n", error->message);
    g_clear_error (&error);
    return 1;
  }
  if (ctx != app_ctx || !stack_of (ctx, &stack)) {
    g_print ("app: gpushare's retain gave another context: FAIL\n");
    return 1;
  }
  gpushare_cuda_primary_release (0);
  cu->cuDevicePrimaryCtxRelease (dev);
  g_print ("app: the application's context keeps its stack of %"
      G_GSIZE_FORMAT " bytes after gpushare's retain (%" G_GSIZE_FORMAT
      "): %s\n", set, stack, set >= APP_STACK && stack == set ? "PASS" :
      "FAIL");
  return set >= APP_STACK && stack == set ? 0 : 1;
}

static gint
in_child (gint (*fn) (void))
{
  gint status = 0;
  pid_t pid = fork ();

  if (pid == 0) {
    GError *error = NULL;

    if (!gpushare_cuda_load (&error)) {
      g_print ("cannot load CUDA: %s: FAIL\n", error->message);
      _exit (1);
    }
    fflush (stdout);
    _exit (fn ());
  }
  if (pid < 0 || waitpid (pid, &status, 0) != pid)
    return 1;
  return WIFEXITED (status) ? WEXITSTATUS (status) : 1;
}

int
main (int argc, char **argv)
{
  gint skip = gpu_test_probe_in_child (GPU_TEST_NEED_GPU);
  gint failures;

  if (skip)
    return skip;
  failures = (in_child (ours) != 0) + (in_child (app) != 0);
  g_print ("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}

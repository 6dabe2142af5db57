/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA VMM backend between two real processes on a real GPU.
 *
 * The producer allocates a ring of slots sized for 1080p and 4K NV12
 * frames, fills every slot with a pattern, exports each slot as an fd and
 * sends them over a Unix socketpair (SCM_RIGHTS).  The consumer imports
 * and maps read-only (cuMemSetAccess PROT_READ) and checks the pattern.
 * 1000 export/import/release cycles at 1080p and 100 at 4K must leave
 * device memory and fd counts where the first cycle left them.  Each slot
 * is exported by the driver once: every later cycle's fds are duplicates
 * of the first (a driver export armed to fail after the first cycle must
 * never fire), and they import and read as the first did.
 *
 * fork() happens before any CUDA call: fork after cuInit is unsupported.
 * Prints one SKIP line and exits 77 where no GPU is present.
 */

#include <gst/gst.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include "gpusharecuda.h"
#include "gpu-test-util.h"

#define SKIP 77
#define N_SLOTS 4
#define CYCLES 1000

static guint8
pattern (gsize frame, guint slot)
{
  return (guint8) (0x11 * (slot + 1) + frame / (1024 * 1024));
}

/* ------------------------------------------------------------------------ */

static gint
producer (gint sock, gsize frame_size, gint cycles)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  GError *error = NULL;
  GpuShareCudaAlloc *alloc;
  gsize slot_size = gpushare_cuda_vmm_slot_size (0, frame_size);
  gint c;
  guint i;
  guint8 ok = 0;

  alloc = gpushare_cuda_alloc_new (0, 1, N_SLOTS, slot_size, &error);
  if (!alloc) {
    g_printerr ("producer: %s\n", error->message);
    return 1;
  }
  cu->cuCtxPushCurrent (gpushare_cuda_alloc_context (alloc));
  for (i = 0; i < N_SLOTS; i++)
    cu->cuMemsetD8Async ((CUdeviceptr) (uintptr_t) alloc->data[i],
        pattern (frame_size, i), slot_size, NULL);
  cu->cuCtxSynchronize ();
  {
    CUcontext dummy;
    cu->cuCtxPopCurrent (&dummy);
  }

  for (c = 0; c < cycles; c++) {
    gint fds[N_SLOTS];

    for (i = 0; i < N_SLOTS; i++) {
      fds[i] = gpushare_cuda_alloc_export (alloc, i, &error);
      if (fds[i] < 0) {
        g_printerr ("producer: %s\n", error->message);
        return 1;
      }
    }
    if (!gpu_test_send_fds (sock, fds, N_SLOTS))
      return 1;
    /* an exported fd left open keeps GPU memory alive: close ours */
    gpushare_close_fds (fds, N_SLOTS);
    /* from here on a driver export is a failure */
    if (c == 0)
      gpushare_cuda_fault_arm ("cuMemExportToShareableHandle", 1);
    if (read (sock, &ok, 1) != 1 || ok != 1)
      break;
  }
  if (gpushare_cuda_fault_fired ()) {
    g_printerr ("producer: a slot was exported by the driver again\n");
    ok = 0;
  }
  gpushare_cuda_fault_arm (NULL, 0);
  gpushare_cuda_alloc_unref (alloc);
  return ok == 1 ? 0 : 1;
}

static gint
consumer (gint sock, gsize frame_size, gint cycles)
{
  GpuShareCudaApi *cu;
  GError *error = NULL;
  GpuShareCudaCaps caps;
  gsize slot_size = gpushare_cuda_vmm_slot_size (0, frame_size);
  size_t free0 = 0, free1 = 0, total = 0;
  gint fds0 = 0, fds1, c, failures = 0;
  CUcontext dummy, held = NULL;
  CUdevice dev;

  if (!gpushare_cuda_probe (0, &caps, &error)) {
    g_printerr ("consumer: %s\n", error->message);
    return 1;
  }
  cu = gpushare_cuda ();
  /* like gpusharesrc, hold the device's context for the whole run: each
   * import then only maps, instead of creating the context anew */
  if (cu->cuDeviceGet (&dev, 0) != CUDA_SUCCESS
      || cu->cuDevicePrimaryCtxRetain (&held, dev) != CUDA_SUCCESS) {
    g_printerr ("consumer: cannot retain the primary context\n");
    return 1;
  }

  for (c = 0; c < cycles; c++) {
    gint fds[N_SLOTS];
    GpuShareCudaImport *import;
    guint8 ok = 1;
    guint i;

    if (!gpu_test_recv_fds (sock, fds, N_SLOTS))
      return 1;
    import = gpushare_cuda_import_new (0, 1, N_SLOTS, slot_size, fds, &error);
    if (!import) {
      g_printerr ("consumer: import failed: %s\n", error->message);
      return 1;
    }
    if (c == 0 || c == cycles - 1) {
      cu->cuCtxPushCurrent (gpushare_cuda_import_context (import));
      for (i = 0; i < N_SLOTS; i++) {
        guint8 head[4096], tail[4096];
        CUdeviceptr p = (CUdeviceptr) (uintptr_t) import->data[i];
        guint k;

        cu->cuMemcpyDtoHAsync (head, p, sizeof (head), NULL);
        cu->cuMemcpyDtoHAsync (tail, p + frame_size - sizeof (tail),
            sizeof (tail), NULL);
        cu->cuCtxSynchronize ();
        for (k = 0; k < sizeof (head); k++)
          if (head[k] != pattern (frame_size, i)
              || tail[k] != pattern (frame_size, i))
            ok = 0;
      }
      cu->cuCtxPopCurrent (&dummy);
      if (!ok)
        failures++;
      if (c == 0) {
        /* the first import set everything up: measure from here */
        cu->cuCtxPushCurrent (gpushare_cuda_import_context (import));
        cu->cuMemGetInfo (&free0, &total);
        cu->cuCtxPopCurrent (&dummy);
        fds0 = gpu_test_count_fds ();
      }
    }
    if (c == cycles - 1) {
      cu->cuCtxPushCurrent (gpushare_cuda_import_context (import));
      cu->cuMemGetInfo (&free1, &total);
      cu->cuCtxPopCurrent (&dummy);
    }
    gpushare_cuda_import_unref (import);
    if (write (sock, &ok, 1) != 1)
      return 1;
  }

  fds1 = gpu_test_count_fds ();
  cu->cuDevicePrimaryCtxRelease (dev);
  g_print ("device: %s, driver %d, vmm=%d posix-fd=%d fabric=%d ipc-event=%d "
      "mem-ops-64=%d compute-mode=%d granularity=%" G_GSIZE_FORMAT "\n",
      caps.name, caps.driver_version, caps.vmm, caps.posix_fd, caps.fabric,
      caps.ipc_event, caps.mem_ops_64, caps.compute_mode, caps.granularity);
  g_print ("frame %" G_GSIZE_FORMAT " B -> slot %" G_GSIZE_FORMAT " B; %d "
      "import cycles of %d slots, read-only mappings, pattern failures %d\n",
      frame_size, slot_size, cycles, N_SLOTS, failures);
  g_print ("device free memory after first import %zu MiB, after last %zu "
      "MiB; fds %d -> %d\n", free0 >> 20, free1 >> 20, fds0, fds1);
  if (failures)
    return 1;
  if (fds1 > fds0) {
    g_printerr ("fds grew from %d to %d\n", fds0, fds1);
    return 1;
  }
  /* the same slots mapped again: device memory must not have grown */
  if (free1 + 2 * 1024 * 1024 < free0) {
    g_printerr ("device memory grew by %zu bytes\n", free0 - free1);
    return 1;
  }
  return 0;
}

/* what both sides of a run are given */
typedef struct
{
  gsize frame_size;
  gint cycles;
} Run;

static gint
producer_child (gint sock, gpointer data)
{
  const Run *r = data;

  /* the fault shims in place, armed once the first cycle is sent */
  g_setenv ("GPUSHARE_TEST_CUDA_FAIL", "armed-later", TRUE);
  return gpushare_cuda_load (NULL) ? producer (sock, r->frame_size,
      r->cycles) : 1;
}

static gint
consumer_child (gint sock, gpointer data)
{
  const Run *r = data;

  return consumer (sock, r->frame_size, r->cycles);
}

static gint
run (gsize frame_size, gint cycles)
{
  Run r = { frame_size, cycles };
  GpuTestRole p = { NULL, producer_child, &r, 0 };
  GpuTestRole c = { NULL, consumer_child, &r, 0 };

  /* both ends are children: this process never touches CUDA, so it can
   * fork again for the next size */
  return !gpu_test_run_pair (&p, &c, GPU_TEST_PAIR_FORK_CONSUMER_FIRST, NULL);
}

int
main (int argc, char **argv)
{
  gint rc;

  gst_init (&argc, &argv);
  /* probe in a child: this process must not have touched CUDA when it
   * forks its producer and consumer */
  if (gpu_test_probe_in_child (GPU_TEST_NEED_VMM_FD) != 0)
    return SKIP;

  /* 1080p NV12 and 4K NV12, as in the field notes */
  rc = run (1920 * 1080 * 3 / 2, CYCLES);
  g_print ("1080p NV12: %s\n", rc ? "FAIL" : "ok");
  if (rc == 0) {
    rc = run (3840 * 2160 * 3 / 2, 100);
    g_print ("4K NV12: %s\n", rc ? "FAIL" : "ok");
  }
  return rc;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the memory and synchronisation negotiation: every branch
 * of the consumer's choice with its reason, word for word (the elements
 * report these texts and the docs quote them), and the producer's offer
 * and its check of an ACCEPT.  No GPU needed: the GPUs are plain values.
 */

#include <gst/check/gstcheck.h>
#include <string.h>

#include "gpusharenegotiate.h"
#include "gpusharecudapolicy.h"
#include "gpusharexfer.h"
#include "gstgpusharesrc.h"

#define GPUSHARE_TRANSPORT_CUDA GPUSHARE_CUDA_TRANSPORT_VMM
#define GPUSHARE_TRANSPORT_CUDA_LEGACY GPUSHARE_CUDA_TRANSPORT_LEGACY
#define GPUSHARE_TRANSPORT_CUDA_FABRIC GPUSHARE_CUDA_TRANSPORT_FABRIC

/* the requests are the elements' property values, number for number */
G_STATIC_ASSERT ((gint) GPUSHARE_TRANSPORT_AUTO ==
    (gint) GST_GPU_SHARE_TRANSPORT_AUTO);
G_STATIC_ASSERT ((gint) GPUSHARE_TRANSPORT_SYSTEM ==
    (gint) GST_GPU_SHARE_TRANSPORT_SYSTEM);
G_STATIC_ASSERT ((gint) GPUSHARE_SYNC_REQUEST_AUTO ==
    (gint) GST_GPU_SHARE_SYNC_AUTO);
G_STATIC_ASSERT ((gint) GPUSHARE_SYNC_REQUEST_HOST ==
    (gint) GST_GPU_SHARE_SYNC_HOST);
G_STATIC_ASSERT ((gint) GPUSHARE_SYNC_REQUEST_SEMAPHORE ==
    (gint) GST_GPU_SHARE_SYNC_SEMAPHORE);
G_STATIC_ASSERT ((gint) GPUSHARE_SYNC_REQUEST_EVENT ==
    (gint) GST_GPU_SHARE_SYNC_EVENT);

#define ALL_SYNC (GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_SEMAPHORE | \
    GPUSHARE_SYNC_EVENT)
#define ALL_GPU_MEM (GPUSHARE_MEM_CUDA_VMM | GPUSHARE_MEM_CUDA_LEGACY | \
    GPUSHARE_MEM_CUDA_FABRIC)

/* the UUIDs as gpushare_gpu_uuid_to_string () spells them */
#define UUID_HERE "GPU-11111111-1111-1111-1111-111111111111"
#define UUID_THERE "GPU-22222222-2222-2222-2222-222222222222"

#define LEGACY_NOTE "legacy CUDA IPC, because VMM file descriptors are not " \
  "possible between these ends; legacy IPC memory cannot be mapped " \
  "read-only: this consumer could write the producer's slots"
#define LEGACY_ASKED_NOTE "legacy CUDA IPC as asked for; legacy IPC memory " \
  "cannot be mapped read-only: this consumer could write the producer's " \
  "slots"
#define NEITHER "neither VMM nor legacy CUDA IPC is possible between these " \
  "ends"
#define NO_VMM "VMM file descriptors are not possible between these ends"
#define NO_LEGACY "legacy CUDA IPC is not possible between these ends"
#define NO_FABRIC "the GPUs do not support fabric handles"
#define NO_COMMON "no synchronisation mode in common"
#define ASKED_BUT "GPU memory was asked for but is not possible: "
#define NOT_VISIBLE "the producer's GPU (" UUID_THERE ") is not visible " \
  "to this consumer (another host's GPU, or hidden by CUDA_VISIBLE_DEVICES)"
#define NO_EVENT_ACROSS "event synchronisation is not possible across GPUs " \
  "(an event can only be recorded on its own GPU's streams)"

/* a producer on the GPU "here" (uuid bytes 0x11) or "there" (0x22) */
static void
make_announce (GpuShareAnnounce * a, guint32 mem_types, guint8 uuid,
    guint32 sync_modes)
{
  memset (a, 0, sizeof (*a));
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  a->mem_types = mem_types;
  memset (a->device.uuid, uuid, 16);
  a->device.sync_modes = sync_modes;
}

/* a consumer GPU "here" that can do everything, device 0, no MPS */
static void
make_gpu (GpuShareGpu * g)
{
  memset (g, 0, sizeof (*g));
  g->usable = TRUE;
  memset (g->uuid, 0x11, 16);
  g->posix_fd = TRUE;
  g->unified_addressing = TRUE;
  g->fabric = TRUE;
  g->sync_modes = ALL_SYNC;
  g->device = 0;
}

/* the policies as a build with CUDA registers them: CUDA, then system
 * memory */
static const GpuShareMemPolicy *const *
policies (void)
{
  static const GpuShareMemPolicy *p[3];

  p[0] = &gpushare_cuda_policy;
  p[1] = gpushare_xfer_system.policy;
  return p;
}

/* runs the negotiation and checks all of its result */
static void
check_negotiation (const GpuShareAnnounce * a, const GpuShareGpu * gpu,
    const GpuSharePeerProbe * peer, gint transport,
    GpuShareSyncRequest sync, gboolean ok, guint32 mem_type,
    guint32 sync_mode, gint peer_device, const gchar * reason)
{
  GpuShareNegotiation n;

  memset (&n, 0xa5, sizeof (n));
  fail_unless_equals_int (gpushare_negotiate_consumer (a, gpu, peer,
          transport, sync, policies (), &n), ok);
  fail_unless_equals_int (n.ok, ok);
  fail_unless_equals_int (n.mem_type, mem_type);
  fail_unless_equals_int (n.sync_mode, sync_mode);
  fail_unless_equals_int (n.peer_device, peer_device);
  fail_unless (n.reason != NULL);
  fail_unless_equals_string (n.reason, reason);
  gpushare_negotiation_clear (&n);
  fail_unless (n.reason == NULL);
  fail_unless_equals_int (n.peer_device, -1);
}

GST_START_TEST (test_transport_system)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_SYSTEM,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: system memory was asked for (transport=system)");
  /* a forced sync mode means nothing for system memory */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_SYSTEM,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: system memory was asked for (transport=system)");
  /* the GPU is not even looked at */
  check_negotiation (&a, NULL, NULL, GPUSHARE_TRANSPORT_SYSTEM,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: system memory was asked for (transport=system)");
  /* a producer without system memory cannot serve transport=system */
  make_announce (&a, ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_SYSTEM,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "system memory was asked for (transport=system)");
}

GST_END_TEST;

GST_START_TEST (test_no_gpu_here)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  make_gpu (&gpu);
  gpu.usable = FALSE;
  gpu.why_not = "no usable GPU here: no CUDA driver";
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: no usable GPU here: no CUDA driver");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "no usable GPU here: no CUDA driver");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_HOST, FALSE, 0, 0, -1,
      ASKED_BUT "no usable GPU here: no CUDA driver");
  gpu.why_not = "built without CUDA";
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: built without CUDA");
  /* no reason given, or no GPU at all */
  gpu.why_not = NULL;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: GPU memory is not possible here");
  check_negotiation (&a, NULL, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: GPU memory is not possible here");
  check_negotiation (&a, NULL, NULL, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "GPU memory is not possible here");
  /* this end's reason comes first, even when the producer has no GPU
   * memory either */
  make_announce (&a, GPUSHARE_MEM_SYSTEM, 0, 0);
  gpu.why_not = "this GPU cannot import VMM memory from file descriptors";
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: this GPU cannot import VMM memory from file "
      "descriptors");
}

GST_END_TEST;

GST_START_TEST (test_producer_no_gpu_memory)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM, 0, 0);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: the producer offers no GPU memory");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "the producer offers no GPU memory");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "the producer offers no GPU memory");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "the producer offers no GPU memory");
  /* withheld from this consumer alone (gpu-uids, gpu-gids): the reason
   * says so, and where to look */
  a.flags |= GPUSHARE_ANNOUNCE_FLAG_WITHHELD;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " GPUSHARE_NEGOTIATE_WITHHELD);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT GPUSHARE_NEGOTIATE_WITHHELD);
  fail_unless (strstr (GPUSHARE_NEGOTIATE_WITHHELD, "gpu-uids") != NULL);
  /* this end's own reason still first */
  check_negotiation (&a, NULL, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: GPU memory is not possible here");
  /* a memory type of a newer version counts as GPU memory: nothing this
   * consumer knows of it fits */
  make_announce (&a, GPUSHARE_MEM_SYSTEM | 0x10, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NEITHER);
}

GST_END_TEST;

GST_START_TEST (test_transport_auto)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  /* VMM first, even where legacy and fabric memory are offered too */
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  /* legacy, with what it costs, where VMM cannot work */
  gpu.posix_fd = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-legacy): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS); " LEGACY_NOTE);
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_LEGACY, 0x11,
      ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-legacy): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS); " LEGACY_NOTE);
  /* neither: system memory; fabric memory is never taken unasked */
  gpu.unified_addressing = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NEITHER);
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_FABRIC, 0x11,
      ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NEITHER);
}

GST_END_TEST;

GST_START_TEST (test_transport_cuda)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  /* never falls back, neither to legacy memory nor to system memory */
  gpu.posix_fd = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_VMM);
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_LEGACY, 0x11,
      ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_VMM);
}

GST_END_TEST;

GST_START_TEST (test_transport_cuda_legacy)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-legacy): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS); " LEGACY_ASKED_NOTE);
  gpu.unified_addressing = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_LEGACY);
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0x11,
      ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_LEGACY);
}

GST_END_TEST;

GST_START_TEST (test_transport_cuda_fabric)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_FABRIC,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-fabric): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  gpu.fabric = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_FABRIC);
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0x11,
      ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_FABRIC);
}

GST_END_TEST;

GST_START_TEST (test_transport_unknown)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  /* a value no property takes: nothing picked, no note, and no fallback
   * either since it is not auto */
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, (GpuShareTransport) 5,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "GPU memory is not possible here");
}

GST_END_TEST;

GST_START_TEST (test_producer_no_system_memory)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_CUDA_VMM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  /* auto cannot fall back */
  gpu.posix_fd = FALSE;
  gpu.unified_addressing = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NEITHER);
  make_gpu (&gpu);
  gpu.usable = FALSE;
  gpu.why_not = "no usable GPU here: no CUDA driver";
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "no usable GPU here: no CUDA driver");
  make_gpu (&gpu);
  gpu.sync_modes = GPUSHARE_SYNC_EVENT;
  a.device.sync_modes = GPUSHARE_SYNC_HOST;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_COMMON);
}

GST_END_TEST;

GST_START_TEST (test_sync_auto)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0x11,
      ALL_SYNC);
  /* without MPS host synchronisation hands frames over fastest */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  /* under MPS semaphore words */
  gpu.mps = TRUE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", semaphore synchronisation (auto: MPS is on)");
  /* a consumer that copies every frame (io-mode=copy) without MPS:
   * semaphore words, so that neither process waits on the host for the
   * other's copy and the GPU's time slices each take several copies */
  gpu.mps = FALSE;
  gpu.copies = TRUE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", semaphore synchronisation (auto: no MPS, io-mode=copy)");
  /* a forced mode stays as asked */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_HOST, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation");
  /* without semaphore words in common it is host, and the reason does not
   * name io-mode=copy */
  a.device.sync_modes = GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_EVENT;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  gpu.copies = FALSE;
  gpu.mps = TRUE;
  /* the common modes only: the producer's offer ... */
  a.device.sync_modes = GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_EVENT;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: MPS is on)");
  /* ... and this GPU's */
  a.device.sync_modes = ALL_SYNC;
  gpu.sync_modes = GPUSHARE_SYNC_SEMAPHORE | GPUSHARE_SYNC_EVENT;
  gpu.mps = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", semaphore synchronisation (auto: no MPS)");
  gpu.sync_modes = GPUSHARE_SYNC_EVENT;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_EVENT, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", event synchronisation (auto: no MPS)");
}

GST_END_TEST;

GST_START_TEST (test_sync_forced)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0x11,
      ALL_SYNC);
  /* a forced mode says nothing of MPS */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_EVENT, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", event synchronisation");
  gpu.mps = TRUE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_HOST, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation");
  gpu.mps = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", semaphore synchronisation");
  /* with a note after it */
  gpu.posix_fd = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NEITHER);
  a.mem_types |= GPUSHARE_MEM_CUDA_LEGACY;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_HOST, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-legacy): both ends on "
      UUID_HERE ", host synchronisation; " LEGACY_NOTE);
  /* a forced mode that one end lacks */
  make_gpu (&gpu);
  gpu.sync_modes = GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_SEMAPHORE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_EVENT, FALSE, 0, 0, -1, ASKED_BUT NO_COMMON);
  make_gpu (&gpu);
  a.device.sync_modes = GPUSHARE_SYNC_HOST;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  /* the memory type's reason wins over the sync mode's */
  gpu.posix_fd = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, FALSE, 0, 0, -1, ASKED_BUT NO_VMM);
}

GST_END_TEST;

GST_START_TEST (test_no_common_sync)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0x11,
      GPUSHARE_SYNC_EVENT);
  gpu.sync_modes = GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_SEMAPHORE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  gpu.mps = TRUE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_COMMON);
  /* a GPU that reports no mode at all */
  gpu.sync_modes = 0;
  a.device.sync_modes = ALL_SYNC;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
}

GST_END_TEST;

GST_START_TEST (test_peer_not_visible)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;
  GpuSharePeerProbe peer = { 0, };

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x22, ALL_SYNC);
  peer.visible = FALSE;
  peer.owner = -1;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NOT_VISIBLE);
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NOT_VISIBLE);
  /* the visibility wins over a forced event */
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NOT_VISIBLE);
  /* an ordinal without the flag, or the flag without an ordinal */
  peer.owner = 1;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NOT_VISIBLE);
  peer.visible = TRUE;
  peer.owner = -1;
  peer.peer_ok = TRUE;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NOT_VISIBLE);
  /* not probed at all */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: the producer is on another GPU (" UUID_THERE "): peer "
      "access was not probed");
}

GST_END_TEST;

GST_START_TEST (test_peer_probe_fails)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;
  GpuSharePeerProbe peer = { 0, };

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x22, ALL_SYNC);
  peer.visible = TRUE;
  peer.owner = 1;
  peer.peer_ok = FALSE;
  peer.error = "device 0 cannot access the memory of device 1";
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: the producer is on another GPU (" UUID_THERE "): "
      "device 0 cannot access the memory of device 1");
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1,
      ASKED_BUT "the producer is on another GPU (" UUID_THERE "): "
      "device 0 cannot access the memory of device 1");
  /* its reason wins over a forced event too */
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: the producer is on another GPU (" UUID_THERE "): "
      "device 0 cannot access the memory of device 1");
  peer.error = NULL;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: the producer is on another GPU (" UUID_THERE "): "
      "peer access is not possible");
}

GST_END_TEST;

GST_START_TEST (test_peer_ok)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;
  GpuSharePeerProbe peer = { 0, };

  make_gpu (&gpu);
  gpu.device = 2;
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x22, ALL_SYNC);
  peer.visible = TRUE;
  peer.owner = 1;
  peer.peer_ok = TRUE;
  peer.atomics = TRUE;
  peer.rank = 0;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, 1, "GPU memory (cuda-vmm): producer on "
      UUID_THERE " (device 1 here), read over peer access by device 2 (link "
      "rank 0, native atomics), host synchronisation (auto: no MPS)");
  peer.atomics = FALSE;
  peer.rank = 3;
  gpu.mps = TRUE;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_SEMAPHORE, 1, "GPU memory (cuda-legacy): producer on "
      UUID_THERE " (device 1 here), read over peer access by device 2 (link "
      "rank 3), semaphore synchronisation (auto: MPS is on); "
      LEGACY_ASKED_NOTE);
  gpu.mps = FALSE;
  /* events are taken out of the common modes ... */
  a.device.sync_modes = GPUSHARE_SYNC_SEMAPHORE | GPUSHARE_SYNC_EVENT;
  gpu.sync_modes = GPUSHARE_SYNC_EVENT | GPUSHARE_SYNC_SEMAPHORE;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, 1, "GPU memory (cuda-vmm): producer on "
      UUID_THERE " (device 1 here), read over peer access by device 2 (link "
      "rank 3), semaphore synchronisation (auto: no MPS)");
  /* ... so that events alone leave none */
  a.device.sync_modes = GPUSHARE_SYNC_EVENT;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  /* forcing events says why they cannot work across GPUs */
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_EVENT_ACROSS);
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_EVENT, FALSE, 0, 0, -1, ASKED_BUT NO_EVENT_ACROSS);
  a.device.sync_modes = ALL_SYNC;
  gpu.sync_modes = ALL_SYNC;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_EVENT_ACROSS);
  /* ... but only where both ends had events: otherwise they were never in
   * common */
  gpu.sync_modes = GPUSHARE_SYNC_HOST;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NO_COMMON);
  /* another mode forced across GPUs */
  gpu.sync_modes = ALL_SYNC;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, 1, "GPU memory (cuda-vmm): producer on "
      UUID_THERE " (device 1 here), read over peer access by device 2 (link "
      "rank 3), semaphore synchronisation");
  /* the peer GPU does not stay once the memory type fails */
  gpu.fabric = FALSE;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_CUDA_FABRIC,
      GPUSHARE_SYNC_REQUEST_AUTO, FALSE, 0, 0, -1, ASKED_BUT NO_FABRIC);
  gpu.posix_fd = FALSE;
  gpu.unified_addressing = FALSE;
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " NEITHER);
  /* a probe handed in for the same GPU is not read */
  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  check_negotiation (&a, &gpu, &peer, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_EVENT, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", event synchronisation");
}

GST_END_TEST;

GST_START_TEST (test_other_pid_namespace)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  /* the producer's pid is 0 here: no CUDA IPC handle opens */
  make_gpu (&gpu);
  gpu.no_ipc_handles = GPUSHARE_NEGOTIATE_OTHER_PID_NS;
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x11, ALL_SYNC);
  /* VMM memory is taken as before, with host or semaphore sync */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS)");
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_SEMAPHORE, TRUE, GPUSHARE_MEM_CUDA_VMM,
      GPUSHARE_SYNC_SEMAPHORE, -1, "GPU memory (cuda-vmm): both ends on "
      UUID_HERE ", semaphore synchronisation");
  /* IPC events asked for: refused, saying why */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA,
      GPUSHARE_SYNC_REQUEST_EVENT, FALSE, 0, 0, -1,
      ASKED_BUT GPUSHARE_NEGOTIATE_OTHER_PID_NS);
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_EVENT, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " GPUSHARE_NEGOTIATE_OTHER_PID_NS);
  /* legacy memory asked for: refused, saying why */
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_CUDA_LEGACY,
      GPUSHARE_SYNC_REQUEST_HOST, FALSE, 0, 0, -1,
      ASKED_BUT GPUSHARE_NEGOTIATE_OTHER_PID_NS);
  /* where VMM is not possible, auto does not take legacy memory */
  gpu.posix_fd = FALSE;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_SYSTEM, 0, -1,
      "system memory: " GPUSHARE_NEGOTIATE_OTHER_PID_NS);
  /* the same producer seen from its own PID namespace: legacy memory */
  gpu.no_ipc_handles = NULL;
  check_negotiation (&a, &gpu, NULL, GPUSHARE_TRANSPORT_AUTO,
      GPUSHARE_SYNC_REQUEST_AUTO, TRUE, GPUSHARE_MEM_CUDA_LEGACY,
      GPUSHARE_SYNC_HOST, -1, "GPU memory (cuda-legacy): both ends on "
      UUID_HERE ", host synchronisation (auto: no MPS); " LEGACY_NOTE);
}

GST_END_TEST;

GST_START_TEST (test_needs_peer_probe)
{
  GpuShareAnnounce a;
  GpuShareGpu gpu;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM, 0x22, ALL_SYNC);
  fail_unless (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_AUTO));
  fail_unless (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_CUDA_FABRIC));
  fail_if (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_SYSTEM));
  fail_if (gpushare_negotiate_needs_peer_probe (&a, NULL,
          GPUSHARE_TRANSPORT_AUTO));
  gpu.usable = FALSE;
  fail_if (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_AUTO));
  make_gpu (&gpu);
  a.mem_types = GPUSHARE_MEM_SYSTEM;
  fail_if (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_AUTO));
  make_announce (&a, GPUSHARE_MEM_CUDA_VMM, 0x11, ALL_SYNC);
  fail_if (gpushare_negotiate_needs_peer_probe (&a, &gpu,
          GPUSHARE_TRANSPORT_CUDA));
}

GST_END_TEST;

/* A host-memory transfer beside CUDA's (as the test build registers one,
 * tests/xfer): offered with or without a GPU, taken only when asked for
 * and then with no synchronisation and no fallback, never by auto; the
 * producer accepts it without a sync mode only when offered */
GST_START_TEST (test_host_transfer)
{
  static const GpuShareMemKind host_kind = { GPUSHARE_MEM_HOST_TEST,
    "host-test", 100, "test", 0
  };
  static const GpuShareMemPolicy host_policy = { "host-test", &host_kind, 1,
    NULL, NULL
  };
  const GpuShareMemPolicy *p[] = { &gpushare_cuda_policy, &host_policy,
    gpushare_xfer_system.policy, NULL
  };
  GpuShareAccept acc = { 0, };
  GpuShareAnnounce a;
  GpuShareGpu gpu;
  GpuShareNegotiation n;

  make_gpu (&gpu);
  make_announce (&a, GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM |
      GPUSHARE_MEM_HOST_TEST, 0x11, ALL_SYNC);
  fail_unless (gpushare_negotiate_consumer (&a, &gpu, NULL, 100,
          GPUSHARE_SYNC_REQUEST_AUTO, p, &n));
  fail_unless_equals_int (n.mem_type, GPUSHARE_MEM_HOST_TEST);
  fail_unless_equals_int (n.sync_mode, 0);
  fail_unless_equals_string (n.reason,
      "host-test memory as asked for (transport=host-test)");
  gpushare_negotiation_clear (&n);
  /* without a GPU all the same */
  fail_unless (gpushare_negotiate_consumer (&a, NULL, NULL, 100,
          GPUSHARE_SYNC_REQUEST_AUTO, p, &n));
  fail_unless_equals_int (n.mem_type, GPUSHARE_MEM_HOST_TEST);
  gpushare_negotiation_clear (&n);
  /* auto: the GPU, as before */
  fail_unless (gpushare_negotiate_consumer (&a, &gpu, NULL,
          GPUSHARE_TRANSPORT_AUTO, GPUSHARE_SYNC_REQUEST_AUTO, p, &n));
  fail_unless_equals_int (n.mem_type, GPUSHARE_MEM_CUDA_VMM);
  gpushare_negotiation_clear (&n);
  /* not offered: refused, system memory is no fallback for a transport
   * asked for */
  a.mem_types = GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM;
  fail_if (gpushare_negotiate_consumer (&a, &gpu, NULL, 100,
          GPUSHARE_SYNC_REQUEST_AUTO, p, &n));
  fail_unless_equals_int (n.mem_type, 0);
  fail_unless_equals_string (n.reason, "host-test memory was asked for but "
      "is not possible: the producer does not offer it");
  gpushare_negotiation_clear (&n);
  /* withheld from this consumer */
  a.flags |= GPUSHARE_ANNOUNCE_FLAG_WITHHELD;
  fail_if (gpushare_negotiate_consumer (&a, &gpu, NULL, 100,
          GPUSHARE_SYNC_REQUEST_AUTO, p, &n));
  fail_unless_equals_string (n.reason, "host-test memory was asked for but "
      "is not possible: " GPUSHARE_NEGOTIATE_WITHHELD);
  gpushare_negotiation_clear (&n);

  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (NULL, p),
      GPUSHARE_MEM_HOST_TEST);
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu, p),
      ALL_GPU_MEM | GPUSHARE_MEM_HOST_TEST);
  fail_unless_equals_int (gpushare_negotiate_mem_types (p),
      GPUSHARE_MEM_SYSTEM | ALL_GPU_MEM | GPUSHARE_MEM_HOST_TEST);

  acc.mem_type = GPUSHARE_MEM_HOST_TEST;
  fail_unless (gpushare_negotiate_check_accept (&acc, GPUSHARE_MEM_SYSTEM |
          GPUSHARE_MEM_HOST_TEST, 0, NULL));
  fail_if (gpushare_negotiate_check_accept (&acc, GPUSHARE_MEM_SYSTEM |
          ALL_GPU_MEM, ALL_SYNC, NULL));
}

GST_END_TEST;

/* The registry this process starts with holds the system transfer alone;
 * a transfer registered comes before it, once, found by its memory type,
 * with its kinds' flags */
GST_START_TEST (test_registry)
{
  static const GpuShareMemKind kind = { GPUSHARE_MEM_HOST_TEST, "host-test",
    100, "test", GPUSHARE_KIND_RETIRE
  };
  static const GpuShareMemPolicy policy = { "host-test", &kind, 1, NULL,
    NULL
  };
  static const GpuShareXfer xfer = { &policy, NULL, NULL,
    &gpushare_xfer_system_producer, &gpushare_xfer_system_consumer, NULL
  };
  const GpuShareMemPolicy *const *p = gpushare_xfer_policies ();

  fail_unless (p[0] == gpushare_xfer_system.policy && p[1] == NULL);
  fail_unless (gpushare_xfer_for (GPUSHARE_MEM_SYSTEM) ==
      &gpushare_xfer_system);
  fail_unless (gpushare_xfer_for (GPUSHARE_MEM_HOST_TEST) == NULL);
  fail_unless (gpushare_xfer_for (GPUSHARE_MEM_CUDA_VMM) == NULL);
  fail_unless (gpushare_xfer_gpu () == NULL);

  gpushare_xfer_register (&xfer);
  gpushare_xfer_register (&xfer);
  p = gpushare_xfer_policies ();
  fail_unless (p[0] == &policy && p[1] == gpushare_xfer_system.policy
      && p[2] == NULL);
  fail_unless (gpushare_xfer_for (GPUSHARE_MEM_HOST_TEST) == &xfer);
  fail_unless (gpushare_xfer_kind (GPUSHARE_MEM_HOST_TEST) == &kind);
  fail_unless (gpushare_xfer_kind_has (GPUSHARE_MEM_HOST_TEST,
          GPUSHARE_KIND_RETIRE));
  fail_if (gpushare_xfer_kind_has (GPUSHARE_MEM_SYSTEM, GPUSHARE_KIND_RETIRE));
  fail_unless (gpushare_xfer_kind (GPUSHARE_MEM_SYSTEM)->transport ==
      GPUSHARE_TRANSPORT_SYSTEM);
  /* a device transfer is one with a probe: this is none */
  fail_unless (gpushare_xfer_gpu () == NULL);
}

GST_END_TEST;

GST_START_TEST (test_producer_mem_types)
{
  GpuShareGpu gpu;

  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (NULL,
          policies ()), 0);
  make_gpu (&gpu);
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), ALL_GPU_MEM);
  gpu.usable = FALSE;
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), 0);
  make_gpu (&gpu);
  gpu.unified_addressing = FALSE;
  gpu.fabric = FALSE;
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), GPUSHARE_MEM_CUDA_VMM);
  gpu.posix_fd = FALSE;
  gpu.unified_addressing = TRUE;
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), GPUSHARE_MEM_CUDA_LEGACY);
  gpu.unified_addressing = FALSE;
  gpu.fabric = TRUE;
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), GPUSHARE_MEM_CUDA_FABRIC);
  gpu.fabric = FALSE;
  fail_unless_equals_int (gpushare_negotiate_producer_mem_types (&gpu,
          policies ()), 0);
  /* every GPU kind can be written by a consumer that maps it, system
   * memory cannot */
  fail_unless_equals_int (gpushare_negotiate_mem_types_with (policies (),
          GPUSHARE_KIND_WRITABLE), ALL_GPU_MEM);
  fail_unless_equals_int (gpushare_negotiate_mem_types_with (policies (),
          GPUSHARE_KIND_WRITABLE | GPUSHARE_KIND_RETIRE),
      GPUSHARE_MEM_CUDA_LEGACY);
  fail_unless_equals_int (gpushare_negotiate_mem_types_with (NULL,
          GPUSHARE_KIND_WRITABLE), 0);
}

GST_END_TEST;

static gboolean
accept_ok (guint32 mem_type, guint32 sync_mode, guint32 offered_mem,
    guint32 offered_sync)
{
  GpuShareAccept acc = { 0, };
  const gchar *why = "untouched";
  gboolean ok;

  acc.mem_type = mem_type;
  acc.sync_mode = sync_mode;
  ok = gpushare_negotiate_check_accept (&acc, offered_mem, offered_sync, &why);
  if (ok)
    fail_unless (why == NULL);
  else
    fail_unless_equals_string (why, "the chosen memory type or "
        "synchronisation was not offered");
  /* the answer does not depend on being asked why */
  fail_unless_equals_int (gpushare_negotiate_check_accept (&acc, offered_mem,
          offered_sync, NULL), ok);
  return ok;
}

GST_START_TEST (test_check_accept)
{
  guint32 offer = GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM |
      GPUSHARE_MEM_CUDA_LEGACY;

  /* system memory always, whatever was offered */
  fail_unless (accept_ok (GPUSHARE_MEM_SYSTEM, 0, offer, ALL_SYNC));
  fail_unless (accept_ok (GPUSHARE_MEM_SYSTEM, 0, GPUSHARE_MEM_SYSTEM, 0));
  fail_unless (accept_ok (GPUSHARE_MEM_SYSTEM, 0, 0, 0));
  /* a GPU type offered, with an offered mode */
  fail_unless (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, offer,
          ALL_SYNC));
  fail_unless (accept_ok (GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_SYNC_EVENT,
          offer, GPUSHARE_SYNC_EVENT));
  /* the offer without system memory's bit is the same offer */
  fail_unless (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE,
          GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE));
  /* a type not offered */
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_SYNC_HOST, offer,
          ALL_SYNC));
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST,
          GPUSHARE_MEM_SYSTEM, ALL_SYNC));
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, 0, ALL_SYNC));
  /* a mode not offered, or none */
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_EVENT, offer,
          GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_SEMAPHORE));
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_VMM, 0, offer, ALL_SYNC));
  fail_if (accept_ok (GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, offer, 0));
  /* no memory type at all */
  fail_if (accept_ok (0, GPUSHARE_SYNC_HOST, offer, ALL_SYNC));
}

GST_END_TEST;

GST_START_TEST (test_sync_mode_pick)
{
  guint32 m;

  fail_unless_equals_int (gpushare_cuda_sync_mode_pick (0, FALSE, FALSE), 0);
  fail_unless_equals_int (gpushare_cuda_sync_mode_pick (0, TRUE, FALSE), 0);
  fail_unless_equals_int (gpushare_cuda_sync_mode_pick (0, FALSE, TRUE), 0);
  for (m = 1; m <= ALL_SYNC; m++) {
    /* without MPS: host, semaphore, event, in that order */
    GpuShareSyncMode plain = (m & GPUSHARE_SYNC_HOST) ? GPUSHARE_SYNC_HOST :
        (m & GPUSHARE_SYNC_SEMAPHORE) ? GPUSHARE_SYNC_SEMAPHORE :
        GPUSHARE_SYNC_EVENT;
    /* under MPS, or where the consumer copies, semaphore words first */
    GpuShareSyncMode mps = (m & GPUSHARE_SYNC_SEMAPHORE) ?
        GPUSHARE_SYNC_SEMAPHORE : plain;

    fail_unless_equals_int (gpushare_cuda_sync_mode_pick (m, FALSE, FALSE),
        plain);
    fail_unless_equals_int (gpushare_cuda_sync_mode_pick (m, TRUE, FALSE), mps);
    fail_unless_equals_int (gpushare_cuda_sync_mode_pick (m, FALSE, TRUE), mps);
    fail_unless_equals_int (gpushare_cuda_sync_mode_pick (m, TRUE, TRUE), mps);
  }
  /* unknown bits are not modes */
  fail_unless_equals_int (gpushare_cuda_sync_mode_pick (0x8, TRUE, TRUE), 0);

  fail_unless_equals_string (gpushare_sync_mode_to_string
      (GPUSHARE_SYNC_HOST), "host");
  fail_unless_equals_string (gpushare_sync_mode_to_string
      (GPUSHARE_SYNC_SEMAPHORE), "semaphore");
  fail_unless_equals_string (gpushare_sync_mode_to_string
      (GPUSHARE_SYNC_EVENT), "event");
  fail_unless_equals_string (gpushare_sync_mode_to_string (0), "none");
  fail_unless_equals_string (gpushare_sync_mode_to_string
      ((GpuShareSyncMode) 3), "none");
}

GST_END_TEST;

GST_START_TEST (test_uuid_to_string)
{
  static const guint8 u[16] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
  };
  gchar *s = gpushare_gpu_uuid_to_string (u);

  fail_unless_equals_string (s, "GPU-00010203-0405-0607-0809-0abbccddeeff");
  g_free (s);
}

GST_END_TEST;

static Suite *
gpusharenegotiate_suite (void)
{
  Suite *s = suite_create ("gpusharenegotiate");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_transport_system);
  tcase_add_test (tc, test_no_gpu_here);
  tcase_add_test (tc, test_producer_no_gpu_memory);
  tcase_add_test (tc, test_transport_auto);
  tcase_add_test (tc, test_transport_cuda);
  tcase_add_test (tc, test_transport_cuda_legacy);
  tcase_add_test (tc, test_transport_cuda_fabric);
  tcase_add_test (tc, test_transport_unknown);
  tcase_add_test (tc, test_producer_no_system_memory);
  tcase_add_test (tc, test_sync_auto);
  tcase_add_test (tc, test_sync_forced);
  tcase_add_test (tc, test_no_common_sync);
  tcase_add_test (tc, test_peer_not_visible);
  tcase_add_test (tc, test_peer_probe_fails);
  tcase_add_test (tc, test_peer_ok);
  tcase_add_test (tc, test_needs_peer_probe);
  tcase_add_test (tc, test_other_pid_namespace);
  tcase_add_test (tc, test_producer_mem_types);
  tcase_add_test (tc, test_host_transfer);
  tcase_add_test (tc, test_registry);
  tcase_add_test (tc, test_check_accept);
  tcase_add_test (tc, test_sync_mode_pick);
  tcase_add_test (tc, test_uuid_to_string);
  return s;
}

GST_CHECK_MAIN (gpusharenegotiate);

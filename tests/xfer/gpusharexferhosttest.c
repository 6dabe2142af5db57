/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The test build's second host-memory transfer.  See
 * gpusharexferhosttest.h.
 */

#include "gpusharexferhosttest.h"

/* its rings retired as legacy CUDA IPC's are where the process that loads
 * the plugin has GPUSHARE_TEST_HOST_RETIRE set (when it registers); it is
 * withheld as GPU memory is from the consumers a producer does not trust
 * with it where GPUSHARE_TEST_HOST_WRITABLE is */
static GpuShareMemKind host_test_kinds[] = {
  {GPUSHARE_MEM_HOST_TEST, "host-test", GPUSHARE_HOST_TEST_TRANSPORT,
      "Host memory of the test transfer (test builds only), or an error", 0},
};

/* offered always, taken only when asked for (no offer, no pick) */
static const GpuShareMemPolicy host_test_policy = {
  .name = "host-test",
  .kinds = host_test_kinds,
  .n_kinds = G_N_ELEMENTS (host_test_kinds),
};

static const GpuShareXfer host_test_xfer = {
  .policy = &host_test_policy,
  .producer = &gpushare_xfer_system_producer,
  .consumer = &gpushare_xfer_system_consumer,
};

void
gpushare_host_test_xfer_register (void)
{
  if (g_getenv ("GPUSHARE_TEST_HOST_RETIRE"))
    host_test_kinds[0].flags |= GPUSHARE_KIND_RETIRE;
  if (g_getenv ("GPUSHARE_TEST_HOST_WRITABLE"))
    host_test_kinds[0].flags |= GPUSHARE_KIND_WRITABLE;
  gpushare_xfer_register (&host_test_xfer);
}

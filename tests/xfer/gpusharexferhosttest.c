/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The test build's second host-memory transfer.  See
 * gpusharexferhosttest.h.
 */

#include "gpusharexferhosttest.h"

#include <stdio.h>

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

/* Where the process that loads the plugin has GPUSHARE_TEST_HOST_STALL
 * set (to a file's path), every read out of a slot (io-mode=copy) waits,
 * as a read of a GPU frame whose producer never signals it does, until
 * its view is cancelled (then it fails) or for STALL_LIMIT_S (then it
 * reads).  Each such wait appends "stall epoch=E slot=S" to that file
 * as it begins. */
#define STALL_LIMIT_S 30

static const gchar *stall;
static GMutex stall_lock;
static GCond stall_cond;
static GHashTable *stall_cancelled;     /* GpuShareXferView, under stall_lock */

static gboolean
host_test_read (GpuShareXferView * view, guint slot, guint64 sequence,
    const GstVideoInfo * slot_info, const GstVideoInfo * dst_info,
    GstBuffer * dst, gboolean dst_device, GError ** error)
{
  if (stall) {
    gint64 end = g_get_monotonic_time () + STALL_LIMIT_S * G_TIME_SPAN_SECOND;
    gboolean cancelled;
    FILE *f = fopen (stall, "a");

    if (f) {
      fprintf (f, "stall epoch=%" G_GUINT64_FORMAT " slot=%u\n", view->epoch,
          slot);
      fclose (f);
    }
    g_mutex_lock (&stall_lock);
    while (!(cancelled = g_hash_table_contains (stall_cancelled, view))
        && g_cond_wait_until (&stall_cond, &stall_lock, end));
    g_mutex_unlock (&stall_lock);
    if (cancelled) {
      g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_COPY,
          "the read of slot %u was cancelled", slot);
      return FALSE;
    }
  }
  return gpushare_xfer_system_consumer.read (view, slot, sequence, slot_info,
      dst_info, dst, dst_device, error);
}

static void
host_test_cancel (GpuShareXferView * view, gboolean cancel)
{
  g_mutex_lock (&stall_lock);
  if (cancel)
    g_hash_table_add (stall_cancelled, view);
  else
    g_hash_table_remove (stall_cancelled, view);
  g_cond_broadcast (&stall_cond);
  g_mutex_unlock (&stall_lock);
}

static void
host_test_view_free (GpuShareXferView * view)
{
  host_test_cancel (view, FALSE);
  gpushare_xfer_system_consumer.view_free (view);
}

static GpuShareXferConsumer host_test_consumer;

static const GpuShareXfer host_test_xfer = {
  .policy = &host_test_policy,
  .producer = &gpushare_xfer_system_producer,
  .consumer = &host_test_consumer,
};

void
gpushare_host_test_xfer_register (void)
{
  if (g_getenv ("GPUSHARE_TEST_HOST_RETIRE"))
    host_test_kinds[0].flags |= GPUSHARE_KIND_RETIRE;
  if (g_getenv ("GPUSHARE_TEST_HOST_WRITABLE"))
    host_test_kinds[0].flags |= GPUSHARE_KIND_WRITABLE;
  host_test_consumer = gpushare_xfer_system_consumer;
  stall = g_getenv ("GPUSHARE_TEST_HOST_STALL");
  if (stall) {
    stall_cancelled = g_hash_table_new (NULL, NULL);
    host_test_consumer.read = host_test_read;
    host_test_consumer.cancel = host_test_cancel;
    host_test_consumer.view_free = host_test_view_free;
  }
  gpushare_xfer_register (&host_test_xfer);
}

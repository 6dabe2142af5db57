/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a CUDA context the driver refuses tells the user: the two limits
 * that many processes on one GPU meet (MPS clients, device memory for
 * contexts) are named with what to do; other errors keep the driver's
 * name alone.  No driver needed: the text is chosen from the result.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>

#include "gpusharecuda.h"

GST_START_TEST (test_context_limits_named)
{
  const gchar *mps = gpushare_cuda_context_hint
      (CUDA_ERROR_MPS_MAX_CLIENTS_REACHED);
  const gchar *oom = gpushare_cuda_context_hint (CUDA_ERROR_OUT_OF_MEMORY);

  fail_unless (mps != NULL && strstr (mps, "MPS") != NULL
      && strstr (mps, "one process") != NULL, "%s", mps);
  fail_unless (oom != NULL && strstr (oom, "memory") != NULL
      && strstr (oom, "CUDA_DEVICE_MAX_CONNECTIONS=2") != NULL
      && strstr (oom, "one process") != NULL, "%s", oom);
  fail_unless (gpushare_cuda_context_hint (CUDA_ERROR_NOT_SUPPORTED) == NULL);
  fail_unless (gpushare_cuda_context_hint (CUDA_ERROR_MAP_FAILED) == NULL);
}

GST_END_TEST;

static Suite *
cuda_hints_suite (void)
{
  Suite *s = suite_create ("gpusharecudacontext");
  TCase *tc = tcase_create ("hints");

  tcase_add_test (tc, test_context_limits_named);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (cuda_hints);

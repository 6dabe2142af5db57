/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ext/cuda/gpusharecudadriver.h, with which the plugin is built, against
 * the CUDA toolkit's cuda.h where both exist: every size, offset and value
 * of cuda-decls-list.h the same in both (the prototypes are checked by the
 * compiler, in cuda-decls-toolkit.c).  Built only where the toolkit is.
 */

#include <gst/check/gstcheck.h>

#include "cuda-decls-list.h"

GST_START_TEST (test_decls_agree)
{
  guint i, n = 0, differ = 0;

  for (i = 0; gpushare_cuda_decls_stub[i].what; i++) {
    const GpuShareCudaDecl *a = &gpushare_cuda_decls_stub[i];
    const GpuShareCudaDecl *b = &gpushare_cuda_decls_toolkit[i];

    /* the two tables come from one list */
    fail_unless (b->what && g_str_equal (a->what, b->what));
    if (a->value != b->value) {
      g_printerr ("%s: %lld in gpusharecudadriver.h, %lld in cuda.h\n",
          a->what, a->value, b->value);
      differ++;
    }
    n++;
  }
  fail_if (gpushare_cuda_decls_toolkit[i].what != NULL);
  fail_unless (n > 100, "only %u figures compared", n);
  fail_unless (differ == 0, "%u of %u figures differ", differ, n);
}

GST_END_TEST;

static Suite *
cuda_decls_suite (void)
{
  Suite *s = suite_create ("cuda-decls");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_decls_agree);
  return s;
}

GST_CHECK_MAIN (cuda_decls);

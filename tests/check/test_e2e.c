/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <gst/check/gstcheck.h>
GST_START_TEST (t) { } GST_END_TEST
static Suite *gpushare_e2e_suite (void) { Suite *x = suite_create ("e"); TCase *c = tcase_create ("g"); suite_add_tcase (x, c); tcase_add_test (c, t); return x; }
GST_CHECK_MAIN (gpushare_e2e);

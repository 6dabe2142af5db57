/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layering, read from the sources: elements -> producer / consumer
 * core -> transfer interface -> transfers.  The elements include no
 * transfer implementation, no transport, no ring and nothing of ext/, name
 * no CUDA function and hold no HAVE_CUDA; the cores reach memory only
 * through the transfer interface; CUDA's memory kinds are named only in
 * ext/ and the codec; memory code includes no socket header.  A change
 * that takes a shortcut across the layers fails here, with the file and
 * the line.
 */

#include <gst/check/gstcheck.h>
#include <string.h>

#include "gpushare-check-util.h"

/* every line of file rel that matches pattern fails the test */
static void
forbid (const gchar * rel, const gchar * pattern, const gchar * why)
{
  gchar *text = read_source (rel);
  gchar **lines = g_strsplit (text, "\n", -1);
  GRegex *re = g_regex_new (pattern, 0, 0, NULL);
  guint i;

  fail_unless (re != NULL);
  for (i = 0; lines[i]; i++)
    fail_if (g_regex_match (re, lines[i], 0, NULL), "%s:%u: %s: %s", rel,
        i + 1, why, lines[i]);
  g_regex_unref (re);
  g_strfreev (lines);
  g_free (text);
}

static const gchar *const elements[] = {
  "gst/gpushare/gstgpusharesink.c",
  "gst/gpushare/gstgpusharesinkpool.c",
  "gst/gpushare/gstgpusharesrc.c",
  "gst/gpushare/gstgpushareenums.c",
  NULL
};

static const gchar *const cores[] = {
  "gst/gpushare/gpushareserver.c",
  "gst/gpushare/gpushareserver.h",
  "gst/gpushare/gpushareclient.c",
  "gst/gpushare/gpushareclient.h",
  NULL
};

/* what of ext/ there is to name */
#define EXT_HEADERS "gpusharecuda[a-z]*\\.h|gpusharegstcuda\\.h|" \
  "gpusharecudatransfer\\.h"

GST_START_TEST (test_elements_only_reach_the_cores)
{
  guint i;

  for (i = 0; elements[i]; i++) {
    forbid (elements[i], "#\\s*include\\s+\"(" EXT_HEADERS ")\"",
        "an element includes ext/");
    forbid (elements[i], "#\\s*include\\s+\"gpushare(conn|ring|"
        "xfersys|retain|proto)\\.h\"", "an element includes a layer below "
        "the cores");
    forbid (elements[i], "HAVE_CUDA", "an element depends on the build's "
        "CUDA");
    forbid (elements[i], "\\bgpushare_(gst_)?cuda_[a-z_]+\\s*\\(",
        "an element calls into ext/");
    forbid (elements[i], "\\bgpushare_(ring|conn)_"
        "[a-z_]+\\s*\\(", "an element calls a layer below the cores");
  }
}

GST_END_TEST;

GST_START_TEST (test_cores_only_reach_the_transfer)
{
  guint i;

  for (i = 0; cores[i]; i++) {
    forbid (cores[i], "#\\s*include\\s+\"(" EXT_HEADERS ")\"",
        "a core includes a transfer implementation");
    forbid (cores[i], "#\\s*include\\s+<gst/base|\"gstgpushare",
        "a core includes an element or a base class");
    forbid (cores[i], "HAVE_CUDA", "a core depends on the build's CUDA");
    forbid (cores[i], "\\bgpushare_(gst_)?cuda_[a-z_]+\\s*\\(",
        "a core calls a transfer implementation");
    forbid (cores[i], "\\bGst(Element|Buffer|Pad|BaseSink|BaseSrc)\\b",
        "a core handles GStreamer objects");
  }
}

GST_END_TEST;

/* ext/ is reached from one place only: the plugin registers the GPU
 * transfer */
GST_START_TEST (test_ext_registered_once)
{
  gchar *plugin = read_source ("gst/gpushare/gstgpushare.c");

  fail_unless (strstr (plugin, "gpushare_cuda_xfer_register ()") != NULL);
  g_free (plugin);
  forbid ("gst/gpushare/gpusharexfer.c", "#\\s*include\\s+\"("
      EXT_HEADERS ")\"", "the transfer interface includes ext/");
  forbid ("gst/gpushare/gpusharenegotiate.c", "#\\s*include\\s+\"("
      EXT_HEADERS "|gpusharexfer\\.h)\"", "the negotiation is not pure");
}

GST_END_TEST;

/* A transport is one folder in ext/, one registration, one memory-type
 * bit and its nicks (docs/design.md, "Adding a transport"): above ext/,
 * only the codec names CUDA's memory kinds or its transport values, so
 * that the cores, the dispatch and the negotiation serve any registered
 * transfer alike */
GST_START_TEST (test_memory_kinds_stay_in_ext)
{
  static const gchar *const dirs[] = { "gst/gpushare", "gst/inspect", NULL };
  GPtrArray *files = source_files (dirs);
  guint i;

  for (i = 0; i < files->len; i++) {
    const gchar *f = g_ptr_array_index (files, i);

    if (g_str_has_prefix (f, "gst/gpushare/gpushareproto."))
      continue;
    forbid (f, "\\bGPUSHARE_MEM_CUDA_[A-Z]+",
        "a CUDA memory kind named outside ext/ and the codec");
    forbid (f, "\\bGPUSHARE_CUDA_TRANSPORT_|\\bGST_GPU_SHARE_TRANSPORT_CUDA",
        "a CUDA transport value named outside ext/");
  }
  g_ptr_array_unref (files);
}

GST_END_TEST;

/* memory code (the transfers, in gst/ and ext/) closes fds with
 * gpusharefd.h: no socket header there */
GST_START_TEST (test_memory_code_has_no_socket)
{
  static const gchar *const dirs[] = { "ext/cuda", NULL };
  GPtrArray *files = source_files (dirs);
  guint i;

  g_ptr_array_add (files, g_strdup ("gst/gpushare/gpusharexfer.c"));
  g_ptr_array_add (files, g_strdup ("gst/gpushare/gpusharexfer.h"));
  g_ptr_array_add (files, g_strdup ("gst/gpushare/gpusharexfersys.c"));
  g_ptr_array_add (files, g_strdup ("tests/xfer/gpusharexferhosttest.c"));
  for (i = 0; i < files->len; i++)
    forbid (g_ptr_array_index (files, i),
        "#\\s*include\\s+(\"gpushareconn\\.h\""
        "|<(sys/socket|gio/gio|gio/gunixsocketaddress)\\.h>)",
        "memory code includes a socket header");
  g_ptr_array_unref (files);
}

GST_END_TEST;

static Suite *
layers_suite (void)
{
  Suite *s = suite_create ("layers");
  TCase *tc = tcase_create ("layers");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_elements_only_reach_the_cores);
  tcase_add_test (tc, test_cores_only_reach_the_transfer);
  tcase_add_test (tc, test_ext_registered_once);
  tcase_add_test (tc, test_memory_kinds_stay_in_ext);
  tcase_add_test (tc, test_memory_code_has_no_socket);
  return s;
}

GST_CHECK_MAIN (layers);

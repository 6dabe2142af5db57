/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layering, read from the sources: elements -> producer / consumer
 * core -> transfer interface -> backends.  The elements include no
 * backend, no transport, no ring and nothing of ext/, name no CUDA
 * function and hold no HAVE_CUDA; the cores reach memory only through
 * the transfer interface; only the transfer and its implementations touch
 * the backends.  A change that takes a shortcut across the layers fails
 * here, with the file and the line.
 */

#include <gst/check/gstcheck.h>
#include <string.h>

static gchar *
read_source (const gchar * rel)
{
  const gchar *root = g_getenv ("GPUSHARE_SOURCE_ROOT");
  gchar *path, *text = NULL;

  fail_unless (root != NULL, "GPUSHARE_SOURCE_ROOT is not set");
  path = g_build_filename (root, rel, NULL);
  fail_unless (g_file_get_contents (path, &text, NULL, NULL),
      "cannot read %s", path);
  g_free (path);
  return text;
}

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
  "gpusharexfercuda\\.h"

GST_START_TEST (test_elements_only_reach_the_cores)
{
  guint i;

  for (i = 0; elements[i]; i++) {
    forbid (elements[i], "#\\s*include\\s+\"(" EXT_HEADERS ")\"",
        "an element includes ext/");
    forbid (elements[i], "#\\s*include\\s+\"gpushare(conn|ring|backend|"
        "sysmem|retain|proto)\\.h\"", "an element includes a layer below "
        "the cores");
    forbid (elements[i], "HAVE_CUDA", "an element depends on the build's "
        "CUDA");
    forbid (elements[i], "\\bgpushare_(gst_)?cuda_[a-z_]+\\s*\\(",
        "an element calls into ext/");
    forbid (elements[i], "\\bgpushare_(allocation|import|ring|conn)_"
        "[a-z_]+\\s*\\(", "an element calls a layer below the cores");
  }
}

GST_END_TEST;

GST_START_TEST (test_cores_only_reach_the_transfer)
{
  guint i;

  for (i = 0; cores[i]; i++) {
    forbid (cores[i], "#\\s*include\\s+\"(" EXT_HEADERS "|"
        "gpusharebackend\\.h)\"", "a core includes a backend");
    forbid (cores[i], "#\\s*include\\s+<gst/base|\"gstgpushare",
        "a core includes an element or a base class");
    forbid (cores[i], "HAVE_CUDA", "a core depends on the build's CUDA");
    forbid (cores[i], "\\bgpushare_(gst_)?cuda_[a-z_]+\\s*\\(|"
        "\\bgpushare_(allocation|import)_[a-z_]+\\s*\\(",
        "a core calls a backend");
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
      EXT_HEADERS "|gpusharebackend\\.h|gpusharexfer\\.h)\"",
      "the negotiation is not pure");
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
  return s;
}

GST_CHECK_MAIN (layers);

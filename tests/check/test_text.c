/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A peer's text past gpusharetext.h's check before GStreamer's parser:
 * what would take the parser's leaking path (GStreamer 1.22 leaks a list's
 * value, about 200 bytes, whenever the list fails to parse) is refused
 * before it, and what parses is passed on unchanged.  Under the CI's
 * LeakSanitizer lane each refused text that reached the parser would be a
 * reported leak; here, each case runs 200 times and the process's heap is
 * compared.
 */

#include <gst/check/gstcheck.h>
#include <malloc.h>

#include "gpushare-check-util.h"
#include "gpusharetext.h"

static const gchar *const refused[] = {
  /* an element that fails */
  "s, a={ 1, (int)x }",
  "s, a=< 1, (int)x >",
  "s, a={ [1,x] }",
  "s, a={ 1, { 2, (int)y } }",
  /* a list that does not close, or elements without a comma */
  "s, a={ 1, 2",
  "s, a={ 1 2 }",
  "s, a=< 1, \"x\" ",
  /* a range that fails */
  "s, a=[1, x]",
  /* a structure in a string, read again, with a list that fails */
  "s, a=(structure)\"x, b={1,(int)y}\"",
  "s, a=(GstStructure)\"x, b={1,(int)y};\"",
  "s, a=(GstCaps)\"video/x-raw, w={ 1, (int)z }\"",
  /* elements of two types: GStreamer parses them, and its own comparison
   * of such a list is a CRITICAL */
  "s, a={ 1, 2.5 }",
  "s, a=< 1, \"x\" >",
  /* nesting past the bound */
  "s, a={{{{{{{{{{1}}}}}}}}}}",
  /* names the parser reads and GStreamer then refuses with a CRITICAL
   * (found by fuzz_src): not starting with a letter, quoted, in a
   * structure read again, in a caps' second structure */
  "/c123",
  "9lives, a=(int)1",
  "\"x y\", a=(int)1",
  "s, a=(structure)\"/x, b=(int)1;\"",
  "video/x-raw; 2nd/x, a=(int)1",
};

static const gchar *const passed[] = {
  "s, a={ 1, 2 }",
  "s, a=< \"w\", \"x\" >",
  "s, a=< { 1, 2 }, { 3 } >",
  "s, a=(int)[1, 5]",
  "s, a={ 1, 2 }, b=(string)\"{ 1, (int)x }\"",
  "s, title=(string)\"a <b> [c] {d}\"",
  "s, a=(structure)\"x, b={1,2}\"",
  "s, a={ }",
  "s, a=(int)x",                /* fails, but no list: leaks nothing */
  "video/x-raw, format=(string)NV12, width=(int)64",
  "video/x-raw(memory:CUDAMemory), format=(string)NV12; video/x-raw",
  "s, a=(GstBuffer)00ff",
};

static gsize
heap_in_use (void)
{
  struct mallinfo2 mi = mallinfo2 ();

  return mi.uordblks;
}

GST_START_TEST (test_refused)
{
  guint i, n;

  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    fail_if (gpushare_text_parses_safely (refused[i]), "%s", refused[i]);
    fail_unless (gpushare_structure_from_peer (refused[i]) == NULL);
    fail_unless (gpushare_caps_from_peer (refused[i]) == NULL);
  }
  fail_unless (gpushare_tag_list_from_peer ("taglist, a={ 1, (int)x }") ==
      NULL);
  /* not a tag list: refused before GStreamer's precondition */
  fail_unless (gpushare_tag_list_from_peer ("s, title=(string)x") == NULL);
  /* and what they would have leaked: nothing (the parser never saw them) */
  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    gsize before = heap_in_use ();

    for (n = 0; n < 200; n++)
      g_assert_null (gpushare_structure_from_peer (refused[i]));
    fail_unless (heap_in_use () < before + 200 * 100, "%s: %" G_GSIZE_FORMAT
        " bytes more", refused[i], heap_in_use () - before);
  }
}

GST_END_TEST;

GST_START_TEST (test_passed)
{
  GstTagList *tags;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (passed); i++) {
    GstStructure *mine = gpushare_structure_from_peer (passed[i]);
    GstStructure *theirs = gst_structure_from_string (passed[i], NULL);

    fail_unless (gpushare_text_parses_safely (passed[i]), "%s", passed[i]);
    fail_unless ((mine == NULL) == (theirs == NULL), "%s", passed[i]);
    if (mine) {
      fail_unless (gst_structure_is_equal (mine, theirs), "%s", passed[i]);
      gst_structure_free (mine);
      gst_structure_free (theirs);
    }
  }
  tags = gpushare_tag_list_from_peer ("taglist, title=(string)\"a {b}\"");
  fail_unless (tags != NULL);
  gst_tag_list_unref (tags);
}

GST_END_TEST;

/* the GStreamer this runs against is 1.26 or newer */
static gboolean
gst_check_version_1_26 (void)
{
  guint major, minor, micro, nano;

  gst_version (&major, &minor, &micro, &nano);
  return major > 1 || minor >= 26;
}

/* A producer that names a new field in every text (an event, a custom
 * meta) made the consumer's process a quark each time, kept for its life.
 * Its texts now make GPUSHARE_TEXT_MAX_PEER_QUARKS at most: past that, a
 * text parses only where every name it may hold is a quark already (its
 * values' types, numbers and lists aside), and one that holds another is
 * refused before the parser makes it.  (GStreamer 1.26 on makes no quarks
 * of the names: there, every text parses.) */
GST_START_TEST (test_quarks_bounded)
{
  static const gchar *const fresh[] = {
    /* the structure's name, a field's, a nested structure's field's */
    "gpushare-fresh-a, gpushare-field-1=(int)1",
    "gpushare-test-s, gpushare-fresh-b=(int)1",
    "gpushare-test-s, gpushare-field-1=(structure)\"gpushare-test-s\\,\\ "
        "gpushare-fresh-c\\=\\(int\\)1\\;\"",
    /* a nested name behind an octal escape the words do not show */
    "gpushare-test-s, gpushare-field-1=(structure)\"gpushare-test-s\\,\\ "
        "\\147pushare-field-1\\=1\\;\"",
    /* a word of a string (which the parser would not make a quark: the
     * check takes every word) */
    "gpushare-test-s, gpushare-field-1=(string)gpushare-fresh-d",
  };
  const guint n = GPUSHARE_TEXT_MAX_PEER_QUARKS + 1000;
  GQuark before = quark_watermark (), mark;
  GstStructure *st;
  GstCaps *caps;
  guint i, parsed = 0;
  gint v;

  for (i = 0; i < n; i++) {
    gchar *text = g_strdup_printf ("gpushare-test-s, gpushare-field-%u="
        "(int)%u", i, i);

    st = gpushare_structure_from_peer (text);
    g_free (text);
    if (st) {
      parsed++;
      gst_structure_free (st);
    }
  }
  fail_unless (quark_watermark () - before <= GPUSHARE_TEXT_MAX_PEER_QUARKS + 3,
      "%u quarks made", quark_watermark () - before);
  if (gst_check_version_1_26 ()) {
    /* GStreamer 1.26 keeps a structure's names as GstIdStr, no quarks:
     * every text parses, and makes none */
    fail_unless_equals_int (parsed, n);
    fail_unless (quark_watermark () - before < 16, "%u quarks made",
        quark_watermark () - before);
    return;
  }
  /* a quark each (the first text two, with the structure's name; the
   * check's own "x" and "v" at most once) until the bound */
  fail_unless (parsed + 3 >= GPUSHARE_TEXT_MAX_PEER_QUARKS
      && parsed <= GPUSHARE_TEXT_MAX_PEER_QUARKS, "%u of %u texts with a new "
      "name parsed", parsed, n);
  fail_unless (gpushare_text_peer_quarks () >= GPUSHARE_TEXT_MAX_PEER_QUARKS);

  /* past it: names that are quarks, with types, numbers, a list, a
   * string of a known word */
  st = gpushare_structure_from_peer ("gpushare-test-s, gpushare-field-7="
      "(int)3, gpushare-field-8=(string)gpushare-field-9, gpushare-field-10="
      "(double)1.5, gpushare-field-11={ 1, 2 }, gpushare-field-12="
      "\"gpushare-field-3\"");
  fail_unless (st != NULL);
  fail_unless (gst_structure_get_int (st, "gpushare-field-7", &v) && v == 3);
  fail_unless_equals_string (gst_structure_get_string (st, "gpushare-field-8"),
      "gpushare-field-9");
  gst_structure_free (st);
  caps = gpushare_caps_from_peer ("gpushare-test-s, gpushare-field-1=(int)1");
  fail_unless (caps != NULL);
  gst_caps_unref (caps);
  /* and anything else refused, without a quark made */
  mark = quark_watermark ();
  for (i = 0; i < G_N_ELEMENTS (fresh); i++)
    fail_if ((st = gpushare_structure_from_peer (fresh[i])) != NULL,
        "past the bound: %s", fresh[i]);
  fail_if (gpushare_caps_from_peer ("gpushare-test-s(memory:GpushareFresh), "
          "gpushare-field-1=(int)1") != NULL);
  fail_if (gpushare_tag_list_from_peer ("taglist, gpushare-fresh-e=(string)x")
      != NULL);
  fail_unless_equals_int (quark_watermark (), mark);
}

GST_END_TEST;

static Suite *
gpushare_text_suite (void)
{
  Suite *s = suite_create ("gpusharetext");
  TCase *tc = tcase_create ("text");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_refused);
  tcase_add_test (tc, test_passed);
  /* last: it spends the process's quarks for peers' texts.  Not under
   * AddressSanitizer: GLib's quark table, grown by the thousands of new
   * quarks and kept for the process's life, is a leak to LeakSanitizer */
#ifndef __SANITIZE_ADDRESS__
  tcase_add_test (tc, test_quarks_bounded);
#endif
  return s;
}

GST_CHECK_MAIN (gpushare_text);

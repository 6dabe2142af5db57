/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the documents quote, checked against what the code says: the
 * protocol version and the caps of docs/protocol.md against
 * gpushareproto.h, its table of message types against the codec's, the
 * property tables of README.md against the
 * elements' own properties (every property listed, every default as the
 * element has it), and the tests the documents name against the programs
 * that hold them.  A document that drifts fails here.
 */

#include <gst/check/gstcheck.h>
#include <string.h>

#include "gpushareclient.h"
#include "gpushareconn.h"
#include "gpushareframemeta.h"
#include "gpusharelane.h"
#include "gpushareproto.h"
#include "gpushareretain.h"
#include "gpushareserver.h"
#include "gpusharetext.h"
#include "gstgpusharesrc.h"

#include "gpushare-check-util.h"

GST_START_TEST (test_protocol_version)
{
  gchar *doc = read_source ("docs/protocol.md");
  gchar *title = g_strdup_printf ("# gpushare wire protocol, version %d.%d\n",
      GPUSHARE_VERSION_MAJOR, GPUSHARE_VERSION_MINOR);
  gchar *minor = g_strdup_printf ("| 2 | 2 | `schema_minor` | %d",
      GPUSHARE_VERSION_MINOR);
  const gchar *p;
  guint n = 0;

  fail_unless (strstr (doc, title) != NULL, "docs/protocol.md does not open "
      "with \"%s\"", title);
  /* ANNOUNCE, ACCEPT and OBSERVE say which minor their sender speaks */
  for (p = strstr (doc, "`schema_minor`"); p; p = strstr (p + 1,
          "`schema_minor`")) {
    const gchar *line = p;

    while (line > doc && line[-1] != '\n')
      line--;
    if (line[0] != '|')
      continue;
    fail_unless (g_str_has_prefix (line, minor), "a schema_minor row does "
        "not say %d: %.60s", GPUSHARE_VERSION_MINOR, line);
    n++;
  }
  fail_unless_equals_int (n, 3);
  g_free (minor);
  g_free (title);
  g_free (doc);
}

GST_END_TEST;

static const struct
{
  const gchar *name;
  guint64 value;
} constants[] = {
  {"GPUSHARE_HEADER_SIZE", GPUSHARE_HEADER_SIZE},
  {"GPUSHARE_MAX_PAYLOAD", GPUSHARE_MAX_PAYLOAD},
  {"GPUSHARE_MAX_FDS", GPUSHARE_MAX_FDS},
  {"GPUSHARE_MAX_SLOTS", GPUSHARE_MAX_SLOTS},
  {"GPUSHARE_MAX_PLANES", GPUSHARE_MAX_PLANES},
  {"GPUSHARE_MAX_CAPS_LEN", GPUSHARE_MAX_CAPS_LEN},
  {"GPUSHARE_MAX_NAME_LEN", GPUSHARE_MAX_NAME_LEN},
  {"GPUSHARE_MAX_TEXT_LEN", GPUSHARE_MAX_TEXT_LEN},
  {"GPUSHARE_MAX_REASON_LEN", GPUSHARE_MAX_REASON_LEN},
  {"GPUSHARE_HANDLE_SIZE", GPUSHARE_HANDLE_SIZE},
  {"GPUSHARE_MAX_HANDLES", GPUSHARE_MAX_HANDLES},
  {"GPUSHARE_MAX_SLOT_SIZE", GPUSHARE_MAX_SLOT_SIZE},
  {"GPUSHARE_MAX_META_LEN", GPUSHARE_MAX_META_LEN},
  {"GPUSHARE_MAX_META_ENTRIES", GPUSHARE_MAX_META_ENTRIES},
  {"GPUSHARE_MAX_EVENT_LEN", GPUSHARE_MAX_EVENT_LEN},
  {"GPUSHARE_MAX_STATUS_LEN", GPUSHARE_MAX_STATUS_LEN},
  {"GPUSHARE_MIN_OBSERVE_INTERVAL", GPUSHARE_MIN_OBSERVE_INTERVAL},
  {"GPUSHARE_MAX_OBSERVE_INTERVAL", GPUSHARE_MAX_OBSERVE_INTERVAL},
  {"GPUSHARE_LANE_MIN_ENTRIES", GPUSHARE_LANE_MIN_ENTRIES},
  {"GPUSHARE_LANE_MAX_ENTRIES", GPUSHARE_LANE_MAX_ENTRIES},
  {"GPUSHARE_LANE_HEADER_SIZE", GPUSHARE_LANE_HEADER_SIZE},
  {"GPUSHARE_LANE_ENTRY_SIZE", GPUSHARE_LANE_ENTRY_SIZE},
  {"GPUSHARE_LANE_MIN_META_REGION", GPUSHARE_LANE_MIN_META_REGION},
  {"GPUSHARE_LANE_MAX_META_REGION", GPUSHARE_LANE_MAX_META_REGION},
  {"GPUSHARE_LANE_META_ALIGN", GPUSHARE_LANE_META_ALIGN},
  {"GPUSHARE_LANE_MAX_META_LEN", GPUSHARE_LANE_MAX_META_LEN},
  {"GPUSHARE_SIDE_PAGE", GPUSHARE_SIDE_PAGE},
  {"GPUSHARE_MAX_SIDE_PAGES", GPUSHARE_MAX_SIDE_PAGES},
};

/* "4096", or "2^40 (1 TiB)" */
static guint64
doc_number (const gchar * s)
{
  gchar *end;
  guint64 v;

  if (g_str_has_prefix (s, "2^"))
    return G_GUINT64_CONSTANT (1) << g_ascii_strtoull (s + 2, NULL, 10);
  v = g_ascii_strtoull (s, &end, 10);
  fail_if (end == s, "not a number: %s", s);
  return v;
}

/* every row of the caps table gives the header's value, and every cap is
 * in the table */
GST_START_TEST (test_protocol_caps)
{
  gchar *doc = read_source ("docs/protocol.md");
  GRegex *row = g_regex_new ("^\\| `(GPUSHARE_[A-Z_]+)` \\| ([^|]+) \\|",
      G_REGEX_MULTILINE, 0, NULL);
  gboolean seen[G_N_ELEMENTS (constants)] = { FALSE, };
  GMatchInfo *m;
  guint i;

  g_regex_match (row, doc, 0, &m);
  while (g_match_info_matches (m)) {
    gchar *name = g_match_info_fetch (m, 1);
    gchar *value = g_match_info_fetch (m, 2);

    for (i = 0; i < G_N_ELEMENTS (constants); i++)
      if (g_str_equal (name, constants[i].name))
        break;
    fail_unless (i < G_N_ELEMENTS (constants), "docs/protocol.md quotes %s, "
        "which this test does not know", name);
    fail_unless_equals_uint64 (doc_number (g_strstrip (value)),
        constants[i].value);
    seen[i] = TRUE;
    g_free (name);
    g_free (value);
    g_match_info_next (m, NULL);
  }
  g_match_info_free (m);
  for (i = 0; i < G_N_ELEMENTS (constants); i++)
    fail_unless (seen[i], "docs/protocol.md does not give %s",
        constants[i].name);
  g_regex_unref (row);
  g_free (doc);
}

GST_END_TEST;

/* how the table of message types says who sends a type */
static const gchar *
direction_text (GpuShareMsgDirection direction)
{
  switch (direction) {
    case GPUSHARE_DIR_PRODUCER_TO_CONSUMER:
      return "producer → consumer";
    case GPUSHARE_DIR_CONSUMER_TO_PRODUCER:
      return "consumer → producer";
    case GPUSHARE_DIR_BOTH:
      return "either";
    case GPUSHARE_DIR_OBSERVER_TO_PRODUCER:
      return "observer → producer";
    case GPUSHARE_DIR_PRODUCER_TO_OBSERVER:
      return "producer → observer";
    default:
      fail ("no direction %d", direction);
      return NULL;
  }
}

/* docs/protocol.md's table of message types against the codec's: a row
 * for every type it knows, each with the codec's name, direction, first
 * minor ("since minor N" unless it is 0) and whether it carries fds */
GST_START_TEST (test_protocol_types)
{
  gchar *doc = read_source ("docs/protocol.md");
  GRegex *row = g_regex_new ("^\\| (\\d+) \\| ([A-Z]+) \\| ([^|]+) \\| "
      "([^|]+) \\|$", G_REGEX_MULTILINE, 0, NULL);
  gboolean seen[GPUSHARE_MSG_LAST + 1] = { FALSE, };
  GMatchInfo *m;
  guint type;

  g_regex_match (row, doc, 0, &m);
  while (g_match_info_matches (m)) {
    gchar *number = g_match_info_fetch (m, 1);
    gchar *name = g_match_info_fetch (m, 2);
    gchar *direction = g_match_info_fetch (m, 3);
    gchar *fds = g_match_info_fetch (m, 4);
    const GpuShareMsgInfo *info;
    gchar *since;

    type = g_ascii_strtoull (number, NULL, 10);
    info = gpushare_msg_info (type);
    fail_unless (info != NULL, "docs/protocol.md has a type %u, which the "
        "codec does not know", type);
    fail_if (seen[type], "docs/protocol.md lists type %u twice", type);
    seen[type] = TRUE;
    fail_unless_equals_string (name, info->name);
    fail_unless (g_str_has_prefix (direction,
            direction_text (info->direction)), "%s: the codec says %s, "
        "docs/protocol.md %s", name, direction_text (info->direction),
        direction);
    since = g_strdup_printf ("(since minor %u)", info->first_minor);
    if (info->first_minor > 0)
      fail_unless (strstr (direction, since) != NULL, "%s: the codec says "
          "%s, docs/protocol.md %s", name, since, direction);
    else
      fail_unless (strstr (direction, "since minor") == NULL, "%s: the "
          "codec says minor 0, docs/protocol.md %s", name, direction);
    fail_unless (g_str_equal (g_strstrip (fds), "0") != info->carries_fds,
        "%s: docs/protocol.md says fds %s", name, fds);
    g_free (since);
    g_free (number);
    g_free (name);
    g_free (direction);
    g_free (fds);
    g_match_info_next (m, NULL);
  }
  g_match_info_free (m);
  for (type = GPUSHARE_MSG_ANNOUNCE; type <= GPUSHARE_MSG_LAST; type++)
    fail_unless (seen[type], "docs/protocol.md does not list type %u (%s)",
        type, gpushare_msg_type_to_string (type));
  g_regex_unref (row);
  g_free (doc);
}

GST_END_TEST;

/* the transport's limits as docs/design.md gives them */
GST_START_TEST (test_design_limits)
{
  gchar *doc = read_source ("docs/design.md");
  gchar *want;

  want = g_strdup_printf ("(header + %u KiB)", GPUSHARE_MAX_PAYLOAD / 1024);
  fail_unless (strstr (doc, want) != NULL, "docs/design.md lacks '%s'", want);
  g_free (want);
  want = g_strdup_printf ("at most %u received fds",
      GPUSHARE_CONN_MAX_HELD_FDS);
  fail_unless (strstr (doc, want) != NULL, "docs/design.md lacks '%s'", want);
  g_free (want);
  want = g_strdup_printf ("(at most %u MiB;", GPUSHARE_CONN_MAX_QUEUED /
      (1024 * 1024));
  fail_unless (strstr (doc, want) != NULL, "docs/design.md lacks '%s'", want);
  g_free (want);
  g_free (doc);
}

GST_END_TEST;

/* the bound an element property sets: "ELEMENT::PROPERTY", its default,
 * or for max-clients its largest value */
static guint64
property_bound (const gchar * where)
{
  gchar **parts = g_strsplit (where, "::", 2);
  GstElement *e = gst_element_factory_make (parts[0], NULL);
  GParamSpec *pspec;
  guint64 value;

  fail_unless (e != NULL, "no element %s", parts[0]);
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e), parts[1]);
  fail_unless (pspec != NULL && G_IS_PARAM_SPEC_UINT (pspec), "%s", where);
  value = g_str_equal (parts[1], "max-clients") ?
      G_PARAM_SPEC_UINT (pspec)->maximum :
      G_PARAM_SPEC_UINT (pspec)->default_value;
  gst_object_unref (e);
  g_strfreev (parts);
  return value;
}

/* security.md's "Bounds": every row names a bound the code has, with its
 * value, and a test; every bound of the code is a row */
GST_START_TEST (test_security_bounds)
{
  static const struct
  {
    const gchar *name;
    guint64 value;
  } bounds[] = {
    {"GPUSHARE_MAX_PAYLOAD", GPUSHARE_MAX_PAYLOAD},
    {"GPUSHARE_CONN_MAX_HELD_FDS", GPUSHARE_CONN_MAX_HELD_FDS},
    {"GPUSHARE_CONN_MAX_QUEUED", GPUSHARE_CONN_MAX_QUEUED},
    {"GPUSHARE_CONN_HANGUP_GRACE_MS", GPUSHARE_CONN_HANGUP_GRACE_MS},
    {"GPUSHARE_SERVER_MAX_OBSERVERS", GPUSHARE_SERVER_MAX_OBSERVERS},
    {"GPUSHARE_SERVER_MAP_TIMEOUTS", GPUSHARE_SERVER_MAP_TIMEOUTS},
    {"GPUSHARE_SERVER_QUARANTINE_BURST", GPUSHARE_SERVER_QUARANTINE_BURST},
    {"GPUSHARE_SERVER_QUARANTINE_BURST_UID",
        GPUSHARE_SERVER_QUARANTINE_BURST_UID},
    {"GPUSHARE_SERVER_MAX_RETIRED", GPUSHARE_SERVER_MAX_RETIRED},
    {"GPUSHARE_MAX_SLOTS", GPUSHARE_MAX_SLOTS},
    {"GPUSHARE_RETAIN_MAX_IDS", GPUSHARE_RETAIN_MAX_IDS},
    {"GPUSHARE_SERVER_MAX_GONE_HOLDERS", GPUSHARE_SERVER_MAX_GONE_HOLDERS},
    {"GPUSHARE_SERVER_MAX_LINGERING", GPUSHARE_SERVER_MAX_LINGERING},
    {"GPUSHARE_CLIENT_MAX_QUEUED_EVENTS", GPUSHARE_CLIENT_MAX_QUEUED_EVENTS},
    {"GPUSHARE_CLIENT_LANE_SPIN_MAX_US", GPUSHARE_CLIENT_LANE_SPIN_MAX_US},
    {"GPUSHARE_LANE_SPIN_MAX_SKIP", GPUSHARE_LANE_SPIN_MAX_SKIP},
    {"GST_GPU_SHARE_SRC_MAX_EARLY_EVENTS",
        GST_GPU_SHARE_SRC_MAX_EARLY_EVENTS},
    {"GST_GPU_SHARE_SRC_MAX_WAKE_AHEAD", GST_GPU_SHARE_SRC_MAX_WAKE_AHEAD},
    {"GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS",
        GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS},
    {"GPUSHARE_META_MAX_MTDS", GPUSHARE_META_MAX_MTDS},
    {"GPUSHARE_META_MAX_REGIONS", GPUSHARE_META_MAX_REGIONS},
    {"GPUSHARE_LANE_MAX_META_LEN", GPUSHARE_LANE_MAX_META_LEN},
    {"GPUSHARE_LANE_MAX_META_REGION", GPUSHARE_LANE_MAX_META_REGION},
    {"GPUSHARE_META_MAX_CLASSES", GPUSHARE_META_MAX_CLASSES},
    {"GPUSHARE_META_MAX_RELATIONS", GPUSHARE_META_MAX_RELATIONS},
    {"GPUSHARE_META_MAX_TENSORS", GPUSHARE_META_MAX_TENSORS},
    {"GPUSHARE_META_MAX_TENSOR_DIMS", GPUSHARE_META_MAX_TENSOR_DIMS},
    {"GPUSHARE_META_MAX_PEER_QUARKS", GPUSHARE_META_MAX_PEER_QUARKS},
    {"GPUSHARE_TEXT_MAX_DEPTH", GPUSHARE_TEXT_MAX_DEPTH},
    {"GPUSHARE_TEXT_MAX_PEER_QUARKS", GPUSHARE_TEXT_MAX_PEER_QUARKS},
    {"GPUSHARE_LANE_ENTRIES", GPUSHARE_LANE_ENTRIES},
    {"GPUSHARE_LANE_MAX_ENTRIES", GPUSHARE_LANE_MAX_ENTRIES},
    {"GPUSHARE_CLIENT_MAX_LANE_RINGS", GPUSHARE_CLIENT_MAX_LANE_RINGS},
    {"gpusharesink::max-pending", 0},
    {"gpusharesink::max-clients", 0},
  };
  gboolean seen[G_N_ELEMENTS (bounds)] = { FALSE, };
  gchar *doc = read_source ("docs/security.md");
  const gchar *p = strstr (doc, "\n## Bounds\n");
  gchar **lines;
  guint i, j, rows = 0;

  fail_unless (p != NULL, "docs/security.md has no Bounds section");
  lines = g_strsplit (p, "\n", -1);
  for (i = 0; lines[i] && !g_str_has_prefix (lines[i], "## Sanitizers"); i++) {
    gchar **cells;
    const gchar *at;
    gchar *where;
    guint64 documented, want = 0;
    gboolean known = FALSE;

    if (!g_str_has_prefix (lines[i], "| ") || strstr (lines[i], "| At most"))
      continue;
    cells = g_strsplit (lines[i], "|", -1);
    fail_unless (g_strv_length (cells) == 6, "a row of 4 cells: %s", lines[i]);
    /* the first number of "At most" */
    for (at = cells[2]; *at && !g_ascii_isdigit (*at); at++);
    fail_unless (*at, "no bound in: %s", lines[i]);
    documented = g_ascii_strtoull (at, NULL, 10);
    at = strchr (cells[3], '`');
    fail_unless (at != NULL, "no constant in: %s", lines[i]);
    where = g_strndup (at + 1, strcspn (at + 1, "`"));
    for (j = 0; j < G_N_ELEMENTS (bounds); j++) {
      if (!g_str_equal (where, bounds[j].name))
        continue;
      known = seen[j] = TRUE;
      want = strstr (where, "::") ? property_bound (where) : bounds[j].value;
    }
    fail_unless (known, "docs/security.md names %s, which test_docs does "
        "not know", where);
    fail_unless (documented == want, "docs/security.md gives %s as %"
        G_GUINT64_FORMAT ", the code %" G_GUINT64_FORMAT, where, documented,
        want);
    fail_unless (strstr (cells[4], "`test_") != NULL, "no test for %s", where);
    g_free (where);
    g_strfreev (cells);
    rows++;
  }
  for (j = 0; j < G_N_ELEMENTS (bounds); j++)
    fail_unless (seen[j], "docs/security.md's Bounds lacks %s", bounds[j].name);
  fail_unless (rows >= G_N_ELEMENTS (bounds));
  g_strfreev (lines);
  g_free (doc);
}

GST_END_TEST;

/* the README's way of writing a property's default */
static gchar *
default_as_documented (GParamSpec * pspec)
{
  const GValue *v = g_param_spec_get_default_value (pspec);

  if (G_IS_PARAM_SPEC_STRING (pspec))
    return g_strdup (g_value_get_string (v) ? g_value_get_string (v) : "none");
  if (G_IS_PARAM_SPEC_BOOLEAN (pspec))
    return g_strdup (g_value_get_boolean (v) ? "true" : "false");
  if (G_IS_PARAM_SPEC_ENUM (pspec)) {
    GEnumValue *e = g_enum_get_value (G_PARAM_SPEC_ENUM (pspec)->enum_class,
        g_value_get_enum (v));

    return g_strdup (e->value_nick);
  }
  if (G_IS_PARAM_SPEC_UINT (pspec) && g_str_equal (pspec->name, "socket-mode"))
    return g_strdup_printf ("`%04o`", g_value_get_uint (v));
  if (G_IS_PARAM_SPEC_UINT (pspec))
    return g_strdup_printf ("%u", g_value_get_uint (v));
  if (G_IS_PARAM_SPEC_INT (pspec))
    return g_strdup_printf ("%d", g_value_get_int (v));
  if (G_IS_PARAM_SPEC_INT64 (pspec))
    return g_strdup_printf ("%" G_GINT64_FORMAT, g_value_get_int64 (v));
  if (GST_IS_PARAM_SPEC_ARRAY_LIST (pspec))
    return g_strdup ("`<>`");
  return NULL;
}

static void
check_table (const gchar * doc, const gchar * factory_name)
{
  gchar *heading = g_strdup_printf ("\n`%s`\n", factory_name);
  const gchar *p = strstr (doc, heading);
  GstElement *e = gst_element_factory_make (factory_name, NULL);
  GHashTable *listed = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  GParamSpec **specs;
  guint n_specs, i;
  gchar **lines;

  fail_unless (e != NULL);
  fail_unless (p != NULL, "README.md has no table for %s", factory_name);
  /* the table: the rows after the heading, up to the first blank line
   * after them */
  p += strlen (heading);
  while (*p == '\n')
    p++;
  lines = g_strsplit (p, "\n", -1);
  for (i = 0; lines[i] && lines[i][0] == '|'; i++) {
    gchar **cells = g_strsplit (lines[i], "|", 4);
    gchar *name, *want, *doc_default;
    GParamSpec *pspec;

    if (!cells[1] || !cells[2] || !g_str_has_prefix (g_strstrip (cells[1]),
            "`")) {
      g_strfreev (cells);
      continue;
    }
    name = g_strndup (cells[1] + 1, strlen (cells[1]) - 2);
    doc_default = g_strstrip (cells[2]);
    pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e), name);
    fail_unless (pspec != NULL, "README.md lists %s.%s, which it does not "
        "have", factory_name, name);
    if (g_str_equal (doc_default, "read-only")) {
      fail_if (pspec->flags & G_PARAM_WRITABLE, "%s.%s is writable",
          factory_name, name);
    } else {
      want = default_as_documented (pspec);
      fail_unless (want != NULL, "%s.%s: a type this test cannot write",
          factory_name, name);
      fail_unless (g_str_equal (doc_default, want), "README.md gives %s.%s "
          "the default %s, the element %s", factory_name, name, doc_default,
          want);
      g_free (want);
    }
    g_hash_table_add (listed, name);
    g_strfreev (cells);
  }
  g_strfreev (lines);

  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n_specs);
  for (i = 0; i < n_specs; i++) {
    /* those of GstObject and the base classes are GStreamer's to list */
    if (specs[i]->owner_type != G_OBJECT_TYPE (e))
      continue;
    fail_unless (g_hash_table_contains (listed, specs[i]->name),
        "README.md does not list %s.%s", factory_name, specs[i]->name);
  }
  g_free (specs);
  g_hash_table_unref (listed);
  gst_object_unref (e);
  g_free (heading);
}

GST_START_TEST (test_readme_properties)
{
  gchar *doc = read_source ("README.md");

  check_table (doc, "gpusharesink");
  check_table (doc, "gpusharesrc");
  g_free (doc);
}

GST_END_TEST;

/* the debug categories the README names are those the sources register */
GST_START_TEST (test_readme_debug_categories)
{
  static const gchar *const dirs[] = { "gst/gpushare", "ext/cuda", NULL };
  gchar *doc = read_source ("README.md");
  const gchar *line = strstr (doc, "Debug categories:");
  GRegex *init = g_regex_new ("GST_DEBUG_CATEGORY_INIT \\([a-z_]+, "
      "\"([a-z]+)\"", 0, 0, NULL);
  GRegex *quoted = g_regex_new ("`(gpushare[a-z]+)`", 0, 0, NULL);
  GHashTable *in_code = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  GPtrArray *paths;
  gchar *paragraph;
  GMatchInfo *m;
  guint i, n_doc = 0;

  fail_unless (line != NULL, "README.md names no debug categories");
  paragraph = g_strndup (line, strstr (line, "\n\n") ? (gsize)
      (strstr (line, "\n\n") - line) : strlen (line));
  paths = source_files (dirs);
  for (i = 0; i < paths->len; i++) {
    const gchar *path = g_ptr_array_index (paths, i);
    gchar *text;

    if (!g_str_has_suffix (path, ".c"))
      continue;
    text = read_source (path);
    g_regex_match (init, text, 0, &m);
    while (g_match_info_matches (m)) {
      g_hash_table_add (in_code, g_match_info_fetch (m, 1));
      g_match_info_next (m, NULL);
    }
    g_match_info_free (m);
    g_free (text);
  }
  g_ptr_array_unref (paths);
  g_regex_match (quoted, paragraph, 0, &m);
  while (g_match_info_matches (m)) {
    gchar *name = g_match_info_fetch (m, 1);

    fail_unless (g_hash_table_contains (in_code, name), "README.md names "
        "the debug category %s, which no source registers", name);
    g_free (name);
    n_doc++;
    g_match_info_next (m, NULL);
  }
  g_match_info_free (m);
  fail_unless_equals_int (n_doc, g_hash_table_size (in_code));
  g_hash_table_unref (in_code);
  g_regex_unref (quoted);
  g_regex_unref (init);
  g_free (paragraph);
  g_free (doc);
}

GST_END_TEST;

/* an error that sends the user to a section of the user guide names a
 * section it has: a heading that holds the words the message quotes */
GST_START_TEST (test_messages_name_guide_sections)
{
  static const gchar *const dirs[] = { "gst/gpushare", "ext/cuda", NULL };
  gchar *guide = read_source ("docs/user-guide.md");
  GRegex *named = g_regex_new ("\\\\\"([^\\\\\"]+)\\\\\" in the user guide",
      0, 0, NULL);
  GPtrArray *paths = source_files (dirs);
  guint i, n = 0;

  for (i = 0; i < paths->len; i++) {
    const gchar *path = g_ptr_array_index (paths, i);
    gchar *text;
    GMatchInfo *m;

    if (!g_str_has_suffix (path, ".c"))
      continue;
    text = read_source (path);
    g_regex_match (named, text, 0, &m);
    while (g_match_info_matches (m)) {
      gchar *title = g_match_info_fetch (m, 1);
      gchar *pattern = g_strdup_printf ("(?m)^#+ .*%s", title);
      GRegex *heading = g_regex_new (pattern, 0, 0, NULL);

      fail_unless (heading != NULL && g_regex_match (heading, guide, 0, NULL),
          "%s sends the user to \"%s\" in the user guide, which has no "
          "such section", path, title);
      g_regex_unref (heading);
      g_free (pattern);
      g_free (title);
      n++;
      g_match_info_next (m, NULL);
    }
    g_match_info_free (m);
    g_free (text);
  }
  /* the one the src's message for a process without a context names */
  fail_unless (n > 0, "no message names a section of the user guide");
  g_ptr_array_unref (paths);
  g_regex_unref (named);
  g_free (guide);
}

GST_END_TEST;

/* docs/design.md's table of every source file names each of them, and
 * no file that is not there */
GST_START_TEST (test_design_names_every_file)
{
  static const gchar *const dirs[] = { "gst/gpushare", "gst/inspect",
    "ext/cuda", "tests/xfer", NULL
  };
  gchar *doc = read_source ("docs/design.md");
  const gchar *start = strstr (doc, "### Every source file");
  const gchar *end;
  GRegex *quoted = g_regex_new ("`(?:[a-z/]+/)?([a-z0-9-]+\\.[ch])`", 0, 0,
      NULL);
  GHashTable *in_tree = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  GHashTable *in_doc = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  GHashTableIter iter;
  GPtrArray *paths;
  GMatchInfo *m;
  gchar *table, *name;
  guint i;

  fail_unless (start != NULL, "docs/design.md has no table of the files");
  end = strstr (start, "\n\n`test_docs`");
  fail_unless (end != NULL);
  table = g_strndup (start, end - start);
  paths = source_files (dirs);
  for (i = 0; i < paths->len; i++)
    g_hash_table_add (in_tree, g_path_get_basename (g_ptr_array_index (paths,
                i)));
  g_ptr_array_unref (paths);
  g_regex_match (quoted, table, 0, &m);
  while (g_match_info_matches (m)) {
    g_hash_table_add (in_doc, g_match_info_fetch (m, 1));
    g_match_info_next (m, NULL);
  }
  g_match_info_free (m);
  g_hash_table_iter_init (&iter, in_tree);
  while (g_hash_table_iter_next (&iter, (gpointer *) & name, NULL))
    fail_unless (g_hash_table_contains (in_doc, name), "docs/design.md's "
        "table of files does not name %s", name);
  g_hash_table_iter_init (&iter, in_doc);
  while (g_hash_table_iter_next (&iter, (gpointer *) & name, NULL))
    fail_unless (g_hash_table_contains (in_tree, name), "docs/design.md's "
        "table of files names %s, which is not there", name);
  g_hash_table_unref (in_doc);
  g_hash_table_unref (in_tree);
  g_regex_unref (quoted);
  g_free (table);
  g_free (doc);
}

GST_END_TEST;

/* The documents name the tests behind their promises as "`program`
 * `test`", and a list that follows goes on in that program: every test
 * quoted must be held by the nearest program named before it in its
 * paragraph, and every name quoted must be a program of tests/check or one
 * of their tests ("`test_exchange_*`": a test whose name starts so).
 * Tests move between programs; a document that still sends the reader to
 * the old one fails here. */

/* the gst-check programs of tests/check, each with the set of its tests */
static GHashTable *
read_programs (void)
{
  static const gchar *const dirs[] = { "tests/check", NULL };
  GPtrArray *files = source_files (dirs);
  GHashTable *programs = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, (GDestroyNotify) g_hash_table_unref);
  GRegex *start = g_regex_new ("^GST_START_TEST \\((test_[a-z0-9_]+)\\)",
      G_REGEX_MULTILINE, 0, NULL);
  guint i;

  for (i = 0; i < files->len; i++) {
    const gchar *path = g_ptr_array_index (files, i);
    gchar *name = g_path_get_basename (path);
    GHashTable *tests;
    GMatchInfo *m;
    gchar *text;

    if (!g_str_has_prefix (name, "test_") || !g_str_has_suffix (name, ".c")) {
      g_free (name);
      continue;
    }
    text = read_source (path);
    tests = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    g_regex_match (start, text, 0, &m);
    while (g_match_info_matches (m)) {
      g_hash_table_add (tests, g_match_info_fetch (m, 1));
      g_match_info_next (m, NULL);
    }
    g_match_info_free (m);
    name[strlen (name) - 2] = '\0';
    g_hash_table_insert (programs, name, tests);
    g_free (text);
  }
  g_ptr_array_unref (files);
  g_regex_unref (start);
  return programs;
}

static gboolean
holds (GHashTable * tests, const gchar * name, gboolean prefix)
{
  GHashTableIter it;
  gpointer key;

  if (!prefix)
    return g_hash_table_contains (tests, name);
  g_hash_table_iter_init (&it, tests);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (g_str_has_prefix (key, name))
      return TRUE;
  return FALSE;
}

static guint
check_test_names (const gchar * doc_name, GHashTable * programs)
{
  gchar *doc = read_source (doc_name);
  gchar **paragraphs = g_strsplit (doc, "\n\n", -1);
  GRegex *quoted = g_regex_new ("`(test_[a-z0-9_]+)(\\*?)`", 0, 0, NULL);
  guint i, n = 0;

  for (i = 0; paragraphs[i]; i++) {
    const gchar *program = NULL;
    GMatchInfo *m;

    g_regex_match (quoted, paragraphs[i], 0, &m);
    while (g_match_info_matches (m)) {
      gchar *name = g_match_info_fetch (m, 1);
      gchar *star = g_match_info_fetch (m, 2);
      gpointer key;

      if (!*star && g_hash_table_lookup_extended (programs, name, &key, NULL)) {
        program = key;
      } else {
        GHashTableIter it;
        gpointer tests;
        gboolean anywhere = FALSE;

        g_hash_table_iter_init (&it, programs);
        while (!anywhere && g_hash_table_iter_next (&it, NULL, &tests))
          anywhere = holds (tests, name, *star);
        fail_unless (anywhere, "%s quotes %s%s, which is neither a program "
            "of tests/check nor one of their tests", doc_name, name, star);
        fail_unless (program != NULL, "%s quotes the test %s%s with no "
            "program before it: name the one that holds it", doc_name, name,
            star);
        fail_unless (holds (g_hash_table_lookup (programs, program), name,
                *star), "%s quotes `%s` `%s%s`, but %s holds no such test",
            doc_name, program, name, star, program);
        n++;
      }
      g_free (star);
      g_free (name);
      g_match_info_next (m, NULL);
    }
    g_match_info_free (m);
  }
  g_regex_unref (quoted);
  g_strfreev (paragraphs);
  g_free (doc);
  return n;
}

GST_START_TEST (test_docs_name_their_tests)
{
  static const gchar *const docs[] = { "README.md", "docs/design.md",
    "docs/protocol.md", "docs/security.md", "docs/benchmarks.md"
  };
  GHashTable *programs = read_programs ();
  guint i, n = 0;

  /* a program's worth of tests, or the regular expression found none */
  fail_unless (g_hash_table_contains (programs, "test_docs"));
  fail_unless (holds (g_hash_table_lookup (programs, "test_docs"),
          "test_docs_name_their_tests", FALSE));
  for (i = 0; i < G_N_ELEMENTS (docs); i++)
    n += check_test_names (docs[i], programs);
  /* security.md names dozens: the check did look */
  fail_unless (n > 50, "only %u tests quoted in the documents", n);
  g_hash_table_unref (programs);
}

GST_END_TEST;

static Suite *
docs_suite (void)
{
  Suite *s = suite_create ("gpushare_docs");
  TCase *tc = tcase_create ("docs");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_protocol_version);
  tcase_add_test (tc, test_protocol_caps);
  tcase_add_test (tc, test_protocol_types);
  tcase_add_test (tc, test_design_limits);
  tcase_add_test (tc, test_security_bounds);
  tcase_add_test (tc, test_readme_properties);
  tcase_add_test (tc, test_readme_debug_categories);
  tcase_add_test (tc, test_design_names_every_file);
  tcase_add_test (tc, test_messages_name_guide_sections);
  tcase_add_test (tc, test_docs_name_their_tests);
  return s;
}

GST_CHECK_MAIN (docs);

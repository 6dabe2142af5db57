/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharetext.h"

#include <string.h>

/* nesting of lists in lists, and of structures in strings, at most: peer
 * text is at most a few KiB, this bounds the recursion */

static gboolean check_text (const gchar * s, gsize len, guint depth);

/* the end of the quoted string opening at s[0] ('"'), or NULL */
static const gchar *
quote_end (const gchar * s, const gchar * end)
{
  for (s++; s < end; s++) {
    if (*s == '\\') {
      if (++s >= end)
        return NULL;
    } else if (*s == '"') {
      return s;
    }
  }
  return NULL;
}

static gchar
closer (gchar open)
{
  return open == '{' ? '}' : open == '<' ? '>' : ']';
}

/* the close of the list, array or range opening at s[0], nesting and
 * quotes respected, or NULL */
static const gchar *
group_end (const gchar * s, const gchar * end)
{
  gchar stack[GPUSHARE_TEXT_MAX_DEPTH];
  guint depth = 0;

  for (; s < end; s++) {
    if (*s == '"') {
      s = quote_end (s, end);
      if (!s)
        return NULL;
    } else if (*s == '{' || *s == '<' || *s == '[') {
      if (depth == GPUSHARE_TEXT_MAX_DEPTH)
        return NULL;
      stack[depth++] = closer (*s);
    } else if (*s == '}' || *s == '>' || *s == ']') {
      if (depth == 0 || stack[depth - 1] != *s)
        return NULL;
      if (--depth == 0)
        return s;
    }
  }
  return NULL;
}

/* one element of a list, array or range, alone: its own lists first,
 * then as the value of a structure's field (a scalar that fails leaks
 * nothing).  *type: its type, 0 for none (an empty element) */
static gboolean
check_element (const gchar * s, gsize len, guint depth, GType * type)
{
  GstStructure *st;
  gchar *text;

  *type = 0;
  while (len && g_ascii_isspace (*s)) {
    s++;
    len--;
  }
  while (len && g_ascii_isspace (s[len - 1]))
    len--;
  if (len == 0)
    return TRUE;
  if (!check_text (s, len, depth + 1))
    return FALSE;
  text = g_strdup_printf ("x, v=%.*s", (gint) len, s);
  st = gst_structure_from_string (text, NULL);
  g_free (text);
  if (!st)
    return FALSE;
  *type = gst_structure_get_field_type (st, "v");
  gst_structure_free (st);
  return TRUE;
}

/* the elements of a list or an array are of one type: GStreamer parses
 * others, and its own comparisons of them are CRITICALs later.  Empty
 * elements have none */
static gboolean
one_type (GType * first, GType type)
{
  if (type == 0)
    return TRUE;
  if (*first == 0)
    *first = type;
  return *first == type;
}

/* a range parses only of 2 or 3 numbers of one type (its step) */
static gboolean
range_ok (const GType * types, guint n)
{
  guint i;

  if (n < 2 || n > 3)
    return FALSE;
  for (i = 0; i < n; i++)
    if (types[i] != types[0] || (types[i] != G_TYPE_INT
            && types[i] != G_TYPE_INT64 && types[i] != G_TYPE_DOUBLE
            && types[i] != GST_TYPE_FRACTION))
      return FALSE;
  return TRUE;
}

/* a list, array or range from s[0] to its close at e: each element, and
 * a range's as a whole */
static gboolean
check_group (const gchar * s, const gchar * e, guint depth)
{
  const gchar *from = s + 1, *p;
  GType types[4], first = 0;
  gboolean types_ok = TRUE;
  guint n = 0;

  for (p = s + 1; p < e; p++) {
    if (*p == '"') {
      p = quote_end (p, e);
    } else if (*p == '{' || *p == '<' || *p == '[') {
      p = group_end (p, e);
    } else if (*p == ',') {
      if (!check_element (from, p - from, depth, &types[MIN (n, 3)]))
        return FALSE;
      types_ok &= one_type (&first, types[MIN (n, 3)]);
      n++;
      from = p + 1;
    }
    if (!p)
      return FALSE;
  }
  if (!check_element (from, e - from, depth, &types[MIN (n, 3)]))
    return FALSE;
  types_ok &= one_type (&first, types[MIN (n, 3)]);
  n++;
  if (*s == '[')
    return range_ok (types, n);
  return types_ok;
}

/* The name of each structure of s (one, or those of caps, split at
 * ';'): the parser reads a name of letters, digits and "/-_.:+", or a
 * quoted one, and GStreamer then refuses with a CRITICAL a name that does
 * not start with a letter.  So a name must start with one, and quoted
 * names are refused; a segment without a name fails in the parser alone */
static gboolean
names_ok (const gchar * s, const gchar * end)
{
  gboolean at_name = TRUE;

  for (; s < end; s++) {
    if (at_name) {
      if (g_ascii_isspace (*s))
        continue;
      at_name = FALSE;
      if (*s == '"' || (*s != ';' && *s != ',' && !g_ascii_isalpha (*s)))
        return FALSE;
    }
    if (*s == '"') {
      s = quote_end (s, end);
      if (!s)
        return TRUE;            /* the parser fails alone */
    } else if (*s == '{' || *s == '<' || *s == '[') {
      s = group_end (s, end);
      if (!s)
        return TRUE;
    } else if (*s == ';') {
      at_name = TRUE;
    }
  }
  return TRUE;
}

/* the quoted string at s[0] is read again by the parser when a type that
 * is not a string's stands before it, "(structure)", "(GstCaps)": its
 * text, unescaped, is checked as this text is */
static gboolean
check_typed_string (const gchar * start, const gchar * s, const gchar * e,
    guint depth)
{
  const gchar *t = s;
  gchar *inner, *quoted, *type;
  gboolean ok, names;

  while (t > start && g_ascii_isspace (t[-1]))
    t--;
  if (t == start || t[-1] != ')')
    return TRUE;
  type = NULL;
  {
    const gchar *open = t - 1;

    while (open > start && open[-1] != '(')
      open--;
    if (open == start)
      return TRUE;
    type = g_strndup (open, t - 1 - open);
  }
  g_strstrip (type);
  ok = g_ascii_strcasecmp (type, "string") == 0
      || g_ascii_strcasecmp (type, "gchararray") == 0;
  names = g_ascii_strcasecmp (type, "structure") == 0
      || g_ascii_strcasecmp (type, "GstStructure") == 0
      || g_ascii_strcasecmp (type, "caps") == 0
      || g_ascii_strcasecmp (type, "GstCaps") == 0;
  g_free (type);
  if (ok)
    return TRUE;
  quoted = g_strndup (s + 1, e - s - 1);
  inner = g_strcompress (quoted);
  ok = check_text (inner, strlen (inner), depth + 1)
      && (!names || names_ok (inner, inner + strlen (inner)));
  g_free (inner);
  g_free (quoted);
  return ok;
}

static gboolean
check_text (const gchar * s, gsize len, guint depth)
{
  const gchar *end = s + len, *p, *e;

  if (depth > GPUSHARE_TEXT_MAX_DEPTH)
    return FALSE;
  for (p = s; p < end; p++) {
    if (*p == '"') {
      e = quote_end (p, end);
      if (!e)
        return TRUE;            /* no list in it: the parser fails alone */
      if (!check_typed_string (s, p, e, depth))
        return FALSE;
      p = e;
    } else if (*p == '{' || *p == '<' || *p == '[') {
      e = group_end (p, end);
      if (!e || !check_group (p, e, depth))
        return FALSE;
      p = e;
    }
  }
  return TRUE;
}

/* Quarks.  A structure's name, its fields' names and caps features become
 * quarks when GStreamer parses them, for the life of the process: a peer
 * that named new fields in every event would grow the process without
 * end.  What a parse made is counted (quarks are numbered in the order
 * they are made); once peers made GPUSHARE_TEXT_MAX_PEER_QUARKS, a text
 * is parsed only where every name it may hold is a quark already. */

static gint peer_quarks_made;

/* the first quark the process has not made: quarks are numbered from 1
 * up, each with its string.  g_quark_to_string () is declared G_GNUC_CONST,
 * which lets the compiler take the answers before a parse for those after
 * it: it is called through a pointer the compiler cannot see into */
static GQuark
quark_watermark (void)
{
  const gchar *(*volatile to_string) (GQuark) = g_quark_to_string;
  GQuark lo = 1, hi = 1;

  while (to_string (hi) != NULL && hi < G_MAXUINT32 / 2) {
    lo = hi + 1;
    hi *= 2;
  }
  while (lo < hi) {
    GQuark mid = lo + (hi - lo) / 2;

    if (to_string (mid) != NULL)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static gboolean
is_name_char (gchar c)
{
  return g_ascii_isalnum (c) || (c != '\0' && strchr ("/-_.:+", c) != NULL);
}

/* the character before p, spaces and backslashes (escapes of a nested
 * text) aside; 0 at the start */
static gchar
char_before (const gchar * start, const gchar * p)
{
  while (p > start && (g_ascii_isspace (p[-1]) || p[-1] == '\\'))
    p--;
  return p > start ? p[-1] : 0;
}

static gchar
char_after (const gchar * p)
{
  while (*p && (g_ascii_isspace (*p) || *p == '\\'))
    p++;
  return *p;
}

/* a value's type, "(int)": GStreamer looks its name up, never makes it a
 * quark.  Caps features, "video/x-raw(memory:X)", follow a name instead */
static gboolean
is_type_name (const gchar * text, const gchar * from, const gchar * end)
{
  const gchar *open = from;
  gchar c;

  while (open > text && (g_ascii_isspace (open[-1]) || open[-1] == '\\'))
    open--;
  if (open == text || open[-1] != '(' || char_after (end) != ')')
    return FALSE;
  c = char_before (text, open - 1);
  return c == 0 || c == '=' || c == ',' || c == '{' || c == '<' || c == '[';
}

/* every name the text may hold is a quark already: each run of letters,
 * digits and "/-_.:+" with a letter in it (backslashes left out, as the
 * parser's unescaping of a nested text does), a value's type aside.  A
 * superset of the names: a word of a string counts too.  An octal escape
 * (a character the runs do not show) fails it */
static gboolean
names_known (const gchar * text)
{
  GString *run = g_string_new (NULL);
  const gchar *p, *from = text;
  gboolean ok = TRUE, letter = FALSE;

  for (p = text; ok; p++) {
    if (*p == '\\') {
      ok = !g_ascii_isdigit (p[1]);
      continue;
    }
    if (is_name_char (*p)) {
      if (run->len == 0)
        from = p;
      g_string_append_c (run, *p);
      letter |= g_ascii_isalpha (*p);
      continue;
    }
    if (letter && !is_type_name (text, from, p))
      ok = g_quark_try_string (run->str) != 0;
    g_string_truncate (run, 0);
    letter = FALSE;
    if (*p == '\0')
      break;
  }
  g_string_free (run, TRUE);
  return ok;
}

/* before a parse: where it may go on, the watermark to count from (0:
 * it may not) */
static GQuark
quarks_begin (const gchar * text)
{
  if (g_atomic_int_get (&peer_quarks_made) >= GPUSHARE_TEXT_MAX_PEER_QUARKS
      && !names_known (text))
    return 0;
  return quark_watermark ();
}

static void
quarks_end (GQuark before)
{
  GQuark after = quark_watermark ();

  if (after > before)
    g_atomic_int_add (&peer_quarks_made, (gint) MIN (after - before,
            G_MAXINT / 2));
}

guint
gpushare_text_peer_quarks (void)
{
  return (guint) g_atomic_int_get (&peer_quarks_made);
}

gboolean
gpushare_text_parses_safely (const gchar * text)
{
  g_return_val_if_fail (text != NULL, FALSE);

  return names_ok (text, text + strlen (text))
      && check_text (text, strlen (text), 0);
}

GstStructure *
gpushare_structure_from_peer (const gchar * text)
{
  GstStructure *s = NULL;
  GQuark before = quarks_begin (text);

  if (!before)
    return NULL;
  if (gpushare_text_parses_safely (text))
    s = gst_structure_from_string (text, NULL);
  quarks_end (before);
  return s;
}

GstTagList *
gpushare_tag_list_from_peer (const gchar * text)
{
  GstTagList *tags = NULL;
  GQuark before;

  /* the parser's precondition, a CRITICAL when another text reaches it */
  if (!g_str_has_prefix (text, "taglist"))
    return NULL;
  before = quarks_begin (text);
  if (!before)
    return NULL;
  if (gpushare_text_parses_safely (text))
    tags = gst_tag_list_new_from_string (text);
  quarks_end (before);
  return tags;
}

GstCaps *
gpushare_caps_from_peer (const gchar * text)
{
  GstCaps *caps = NULL;
  GQuark before = quarks_begin (text);

  if (!before)
    return NULL;
  if (gpushare_text_parses_safely (text))
    caps = gst_caps_from_string (text);
  quarks_end (before);
  return caps;
}

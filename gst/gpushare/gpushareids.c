/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpushareids.h"

void
gpushare_ids_from_value (GArray ** ids, const GValue * value)
{
  guint i, n = gst_value_array_get_size (value);

  g_clear_pointer (ids, g_array_unref);
  *ids = g_array_sized_new (FALSE, FALSE, sizeof (guint), n);
  for (i = 0; i < n; i++) {
    guint id = g_value_get_uint (gst_value_array_get_value (value, i));

    g_array_append_val (*ids, id);
  }
}

void
gpushare_ids_to_value (GArray * ids, GValue * value)
{
  guint i;

  for (i = 0; ids && i < ids->len; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_UINT);
    g_value_set_uint (&v, g_array_index (ids, guint, i));
    gst_value_array_append_and_take_value (value, &v);
  }
}

GParamSpec *
gpushare_ids_param_spec (const gchar * name, const gchar * nick,
    const gchar * blurb, const gchar * element, GParamFlags flags)
{
  gboolean gid = g_str_equal (element, "gid");

  return gst_param_spec_array (name, nick, blurb, g_param_spec_uint (element,
          element, gid ? "A gid" : "A uid", 0, G_MAXUINT32, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS), flags);
}

gboolean
gpushare_ids_contain (GArray * ids, guint v)
{
  guint i;

  for (i = 0; ids && i < ids->len; i++)
    if (g_array_index (ids, guint, i) == v)
      return TRUE;
  return FALSE;
}

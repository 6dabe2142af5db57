/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lists of uids or gids that may be on the other end of a socket, as the
 * elements' allowed-* properties hold them (a GstValueArray of uints).
 */

#ifndef __GPUSHARE_IDS_H__
#define __GPUSHARE_IDS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* replaces *ids with the uints of value, a GstValueArray */
void gpushare_ids_from_value (GArray ** ids, const GValue * value);
/* appends the ids to value, a GstValueArray */
void gpushare_ids_to_value (GArray * ids, GValue * value);
/* a property holding such a list: a GstValueArray of uints, each named
 * element ("uid" or "gid") */
GParamSpec *gpushare_ids_param_spec (const gchar * name, const gchar * nick,
    const gchar * blurb, const gchar * element, GParamFlags flags);
/* is v in ids (which may be NULL)? */
gboolean gpushare_ids_contain (GArray * ids, guint v);

G_END_DECLS

#endif /* __GPUSHARE_IDS_H__ */

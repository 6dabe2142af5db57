/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A peer's text into GStreamer values (structures, tag lists), past a
 * check of its own first.  GStreamer 1.22's parser leaks a list's or an
 * array's value (about 200 bytes), for the life of the process, whenever
 * one of its elements, or the list itself, fails to parse: a producer that
 * sent such text with every event or meta grew the consumer without bound.
 * These functions hand the parser only text whose lists, arrays and ranges
 * were checked element by element, each alone (a scalar that fails to
 * parse leaks nothing), and whose typed strings that the parser reads again
 * (a structure in a structure) were checked the same way.
 */

#ifndef __GPUSHARE_TEXT_H__
#define __GPUSHARE_TEXT_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* lists and structures nested in a peer's text, at most */
#define GPUSHARE_TEXT_MAX_DEPTH 8
/* quarks the names in peers' texts (structures', fields', caps
 * features') may make in a process, which keeps them for its life; past
 * that, a text is parsed only where every name in it is a quark already */
#define GPUSHARE_TEXT_MAX_PEER_QUARKS 4096

/* TRUE when text can go to GStreamer's parser without taking its leaking
 * path: every list, array and range closes, each of their elements parses
 * alone, those of a list or an array are of one type, and a range is of 2
 * or 3 numbers of one type */
gboolean gpushare_text_parses_safely (const gchar * text);

/* gst_structure_from_string (), gst_tag_list_new_from_string () and
 * gst_caps_from_string () of a peer's text, NULL where it would not parse,
 * is not checked safe, or names what is no quark yet once the process's
 * peers made GPUSHARE_TEXT_MAX_PEER_QUARKS */
GstStructure *gpushare_structure_from_peer (const gchar * text);
GstTagList *gpushare_tag_list_from_peer (const gchar * text);
GstCaps *gpushare_caps_from_peer (const gchar * text);
/* quarks peers' texts made in this process so far */
guint gpushare_text_peer_quarks (void);

G_END_DECLS

#endif /* __GPUSHARE_TEXT_H__ */

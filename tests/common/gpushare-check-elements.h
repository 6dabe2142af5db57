/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness of the element tests: see gpushare-check-elements.c.  Every
 * program that uses it runs each test with elements_setup () and
 * elements_teardown () as its checked fixture.
 */

#ifndef __GPUSHARE_CHECK_ELEMENTS_H__
#define __GPUSHARE_CHECK_ELEMENTS_H__

#include <gst/check/gstcheck.h>

#include "gpushare-check-util.h"
#include "gpushareproto.h"

G_BEGIN_DECLS

#define CAPS_STR "video/x-raw,format=NV12,width=64,height=48,framerate=30/1"
/* live producers run fast so that waiting for "a few more frames" is short */
#define LIVE_CAPS_STR \
  "video/x-raw,format=NV12,width=64,height=48,framerate=200/1"
#define FRAME_SIZE (64 * 48 * 3 / 2)
/* what the tests wait for when something is expected to happen: four
 * times as long under valgrind, which runs every thread of the process
 * one at a time, 20-50 times slower */
#define TIMEOUT_MS (gpushare_check_timeout_ms ())
gint gpushare_check_timeout_ms (void);
/* the most SCM_RIGHTS descriptors Linux passes in one message */
#define KERNEL_MAX_FDS 253

/* the ring a raw producer announces: two slots of 8 KiB */
#define HP_N_SLOTS 2
#define HP_SLOT_SIZE 8192

/* the test's private directory, and what it held open before the test */
extern gchar *tmpdir;
extern guint fd_baseline;

void elements_setup (void);
void elements_teardown (void);

/* Descriptors and paths */

gint make_memfd (gsize size, gboolean seal);
gchar *socket_path (const gchar * name);
/* mappings of this process whose path names a memfd called name (its
 * /proc/self/maps line holds "/memfd:NAME "), and the wait for their count
 * to reach expected: what every side unmaps once it is done with it */
guint count_memfd_maps (const gchar * name);
guint wait_memfd_maps (const gchar * name, guint expected, gint timeout_ms);

/* Pipelines */

GstElement *launch (const gchar * format, ...) G_GNUC_PRINTF (1, 2);
GstElement *child (GstElement * bin, const gchar * name);
GstMessage *pop_message (GstElement * pipeline, GstMessageType types,
    gint timeout_ms);
/* the next element message named name on pipeline's bus (the messages
 * before it are dropped), a copy of its structure, or NULL after
 * timeout_ms */
GstStructure *next_element_message (GstElement * pipeline,
    const gchar * name, gint timeout_ms);
void assert_error (GstElement * pipeline, GQuark domain, gint code);
void assert_no_error (GstElement * pipeline);
/* the producer's WARNING for a consumer it dropped: its details say the
 * reason (a client-removed nick) and the setting involved ("none") */
void expect_drop_warning (GstElement * producer, const gchar * reason,
    const gchar * setting);
GstStructure *get_stats (GstElement * element);
guint64 stat_u64 (GstElement * element, const gchar * field);
guint stat_uint (GstElement * element, const gchar * field);
guint wait_stat_uint (GstElement * element, const gchar * field,
    guint value);
guint64 wait_stat_u64_at_least (GstElement * element, const gchar * field,
    guint64 value);
guint client_stat_uint (GstElement * sink, guint index, const gchar * field);
guint64 client_stat_u64 (GstElement * sink, guint index,
    const gchar * field);
guint num_clients (GstElement * sink);

/* A real consumer: gpusharesrc ! fakesink */

typedef struct
{
  GstElement *pipeline;
  GstElement *src;
  gint frames;                  /* atomic */
  GAsyncQueue *buffers;         /* NULL: buffers are dropped at once */
} Consumer;

Consumer *consumer_new (const gchar * path, gboolean keep_buffers);
void consumer_start (Consumer * c);
gboolean consumer_wait (Consumer * c, gint n);
void assert_consumer_alive (Consumer * c);
void consumer_free (Consumer * c);

/* A live producer: videotestsrc is-live=true ! gpusharesink */

GstElement *producer_new (const gchar * path, GstElement ** sink);
void producer_start (GstElement * producer, GstElement * sink);

/* client-connected / client-removed, emitted from the sink's thread */

typedef struct
{
  GMutex lock;
  GCond cond;
  guint connected;
  GPtrArray *removed;           /* reason nicks, interned */
  GPtrArray *removed_ids;       /* GUINT_TO_POINTER (id) */
} ClientLog;

void client_log_init (ClientLog * log, GstElement * sink);
void client_log_clear (ClientLog * log, GstElement * sink);
gboolean client_log_wait (ClientLog * log, gboolean removed, guint n);
const gchar *client_log_removed_nick (ClientLog * log, guint index);
guint client_log_n_removed (ClientLog * log);

/* Raw peers */

typedef struct
{
  gint fd;
  GByteArray *in;
  GArray *fds;                  /* received, not yet claimed by a message */
  gboolean eof;
} RawPeer;

typedef enum
{
  RAW_MSG,
  RAW_EOF,
  RAW_TIMEOUT,
  RAW_GARBAGE,
} RawResult;

void raw_init (RawPeer * p, gint fd);
void raw_clear (RawPeer * p);
gint raw_connect (const gchar * path);
gint raw_listen (const gchar * path);
gint raw_accept (gint listen_fd);
RawResult raw_recv (RawPeer * p, GpuShareMsg * msg, gint * fds,
    guint * n_fds, gint timeout_ms);
void raw_expect (RawPeer * p, GpuShareMsgType type, GpuShareMsg * msg,
    gint * fds, guint * n_fds);
GArray *raw_drain_pings (RawPeer * p, guint * n_pings);
GArray *raw_drain (RawPeer * p);
gboolean raw_send_bytes (RawPeer * p, GByteArray * b, const gint * fds,
    guint n_fds);
gboolean raw_send_msg (RawPeer * p, const GpuShareMsg * msg,
    const gint * fds, guint n_fds);
/* MAPPED of the ring of epoch, made in msg (what it held is gone) */
gboolean raw_send_mapped (RawPeer * p, GpuShareMsg * msg, guint64 epoch);

/* Messages, well-formed or not */

#define HDR_OFF(field) ((gsize) G_STRUCT_OFFSET (GpuShareHeader, field))

GByteArray *build (const GpuShareMsg * msg, guint n_fds);
void patch16 (GByteArray * b, gsize offset, guint16 v);
void patch32 (GByteArray * b, gsize offset, guint32 v);
GByteArray *raw_message (guint16 type, guint32 payload_len, guint32 n_fds);
GByteArray *random_bytes (guint n);
void make_layout_of (GpuShareLayout * l, const gchar * format, guint w,
    guint h, guint n_slots, guint64 slot_size);
void make_layout (GpuShareLayout * l, guint n_slots, guint64 slot_size);
void make_announce (GpuShareMsg * m, guint n_slots, guint64 slot_size);
void make_accept (GpuShareMsg * m, guint64 instance);
void make_simple (GpuShareMsg * m, GpuShareMsgType type);
void make_frame (GpuShareMsg * m, guint64 epoch, guint32 slot,
    guint32 generation, guint64 sequence);

/* A producer with a hostile consumer beside a well-behaved one */

typedef struct
{
  gchar *path;
  GstElement *producer;
  GstElement *sink;
  ClientLog log;
  Consumer *consumer;
} Scene;

void scene_start (Scene * s, gboolean with_consumer);
void scene_stop (Scene * s);
void scene_raw_client (Scene * s, RawPeer * p, GpuShareAnnounce * announce);

G_END_DECLS

#endif /* __GPUSHARE_CHECK_ELEMENTS_H__ */

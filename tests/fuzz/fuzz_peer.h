/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A raw peer for the element fuzz targets (fuzz_src.c, fuzz_sink.c): a
 * socket that speaks the wire format through the codec, without the
 * transport, and the input they take their moves from.
 */

#ifndef __GPUSHARE_FUZZ_PEER_H__
#define __GPUSHARE_FUZZ_PEER_H__

#include <stddef.h>
#include <stdint.h>
#include <gst/gst.h>

#include "gpushareproto.h"

G_BEGIN_DECLS

/* the fuzz input, read a byte or a run at a time: 0 once it is used up */
typedef struct
{
  const guint8 *data;
  gsize size;
  gsize at;
} FuzzInput;

guint8 fuzz_byte (FuzzInput * in);
guint32 fuzz_u32 (FuzzInput * in);
/* up to max bytes of the input into buf; how many */
gsize fuzz_bytes (FuzzInput * in, guint8 * buf, gsize max);
gboolean fuzz_more (FuzzInput * in);

typedef struct
{
  gint fd;
  guint8 in[GPUSHARE_HEADER_SIZE + GPUSHARE_MAX_PAYLOAD];
  gsize in_len;
  gboolean broken;              /* the peer hung up or sent garbage */
} FuzzPeer;

void fuzz_peer_init (FuzzPeer * p, gint fd);
void fuzz_peer_clear (FuzzPeer * p);
gint fuzz_listen (const gchar * path);
/* -1 after timeout_ms */
gint fuzz_accept (gint listen_fd, gint timeout_ms);
gint fuzz_connect (const gchar * path);
/* bytes and fds on the socket, whole; FALSE once the peer is gone */
gboolean fuzz_send (FuzzPeer * p, const guint8 * data, gsize len,
    const gint * fds, guint n_fds);
gboolean fuzz_send_msg (FuzzPeer * p, const GpuShareMsg * msg,
    const gint * fds, guint n_fds);
/* the next whole message within timeout_ms (0: what is there now); the
 * fds that came with it are closed.  FALSE when there is none, the peer
 * hung up, or what came does not parse */
gboolean fuzz_recv (FuzzPeer * p, GpuShareMsg * msg, gint timeout_ms);
/* a sealed memfd of size bytes, as gpusharesink makes its slots */
gint fuzz_memfd (gsize size);
guint fuzz_count_fds (void);
/* runs func on the input; when it leaves more descriptors open than
 * there were before, runs it again: GStreamer and GLib open some on first
 * use and keep them (a clock's timer, a thread pool's), so only a second
 * run that leaves more again is a leak, which aborts naming who */
void fuzz_run_checking_fds (const gchar * who,
    void (*func) (const uint8_t * data, size_t size), const uint8_t * data,
    size_t size);
/* once per process: GStreamer, the plugin under test, quiet logs */
void fuzz_gst_init (void);
/* a path for this process's socket */
const gchar *fuzz_socket_path (void);
/* the pipeline's first error or EOS within timeout_ms, or none */
void fuzz_drain_bus (GstElement * pipeline, gint timeout_ms);

G_END_DECLS

#endif /* __GPUSHARE_FUZZ_PEER_H__ */

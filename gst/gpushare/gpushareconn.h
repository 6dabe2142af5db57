/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transport: owns one Unix stream socket and every fd that crosses it,
 * from recvmsg() to close().  Framing and fd bookkeeping live here; what
 * the bytes mean is the codec's business (gpushareproto.h), what the
 * messages do is the elements' business.
 *
 * Reading happens in the GMainContext given at creation (the element's
 * control thread).  Sending is allowed from any thread: bytes that the
 * socket does not take at once wait in a bounded queue that the control
 * thread flushes when the socket becomes writable.  Any failure (hang-up,
 * protocol error, full queue, MSG_CTRUNC) closes the socket and every
 * queued fd, then calls closed_func once, from the control thread.
 */

#ifndef __GPUSHARE_CONN_H__
#define __GPUSHARE_CONN_H__

#include <glib.h>
#include <sys/types.h>
#include "gpushareproto.h"
#include "gpusharefd.h"

G_BEGIN_DECLS

#define GPUSHARE_CONN_ERROR (gpushare_conn_error_quark ())
GQuark gpushare_conn_error_quark (void);

typedef enum
{
  GPUSHARE_CONN_ERROR_HANGUP,   /* the peer closed the socket */
  GPUSHARE_CONN_ERROR_IO,       /* a socket call failed */
  GPUSHARE_CONN_ERROR_PROTOCOL, /* malformed framing or message */
  GPUSHARE_CONN_ERROR_VERSION,  /* unknown major version */
  GPUSHARE_CONN_ERROR_FDS,      /* MSG_CTRUNC or a lying fd count */
  GPUSHARE_CONN_ERROR_OVERFLOW, /* peer does not read: send queue full */
  GPUSHARE_CONN_ERROR_CLOSED,   /* closed locally */
  GPUSHARE_CONN_ERROR_PATH,     /* socket path refused */
  GPUSHARE_CONN_ERROR_IN_USE,   /* someone listens on the path already */
  GPUSHARE_CONN_ERROR_TIMEOUT,  /* nothing received for 3 heartbeats */
  GPUSHARE_CONN_ERROR_NOT_GPUSHARE,     /* the first bytes are not
                                         * gpushare's: another program */
  GPUSHARE_CONN_ERROR_PERMISSION,       /* the socket (or its directory)
                                         * does not let us connect */
  GPUSHARE_CONN_ERROR_NO_FDS,   /* this process could not take the
                                 * descriptors sent: its limit */
} GpuShareConnError;

/* received fds held for messages not read yet: fds may run ahead of their
 * message by at most one message's worth */
#define GPUSHARE_CONN_MAX_HELD_FDS (2 * GPUSHARE_MAX_FDS)
/* bytes waiting to be sent to one peer before it counts as not reading */
#define GPUSHARE_CONN_MAX_QUEUED (1024 * 1024)
/* a send found the peer's reading side gone: the milliseconds its reader
 * has to meet the end of the stream (what the peer said before it, read
 * first) before the connection fails */
#define GPUSHARE_CONN_HANGUP_GRACE_MS 1000
/* heartbeat intervals without a byte from the peer before it is gone */
#define GPUSHARE_CONN_HEARTBEAT_MISSES 3

typedef struct _GpuShareConn GpuShareConn;

/* fds: n_fds received descriptors, now owned by the callee */
typedef void (*GpuShareConnMessageFunc) (GpuShareConn * conn,
    const GpuShareMsg * msg, gint * fds, guint n_fds, gpointer user_data);
typedef void (*GpuShareConnClosedFunc) (GpuShareConn * conn,
    const GError * error, gpointer user_data);

/* takes ownership of fd (a connected stream socket) */
GpuShareConn *gpushare_conn_new (gint fd, GMainContext * context,
    GpuShareConnMessageFunc message_func, GpuShareConnClosedFunc closed_func,
    gpointer user_data);
GpuShareConn *gpushare_conn_ref (GpuShareConn * conn);
void gpushare_conn_unref (GpuShareConn * conn);

/* starts reading; messages and closure are reported from the context */
void gpushare_conn_start (GpuShareConn * conn);

/* Queues msg.  Takes ownership of fds (closed once sent, or on failure).
 * FALSE if the connection is already failed or the message breaks a cap. */
gboolean gpushare_conn_send (GpuShareConn * conn, const GpuShareMsg * msg,
    gint * fds, guint n_fds, GError ** error);
/* Convenience: an ERROR message */
gboolean gpushare_conn_send_error (GpuShareConn * conn,
    GpuShareErrorCode code, const gchar * text);

/* One sender per message type, encoding the body alone straight into the
 * send queue (gpushare_msg_build_frame () and friends): the same bytes as
 * gpushare_conn_send () of a GpuShareMsg, without building one.  They
 * fail as it does; gpushare_conn_send_slots () takes ownership of fds as
 * it does.  type of gpushare_conn_send_mapped (): GPUSHARE_MSG_MAPPED or
 * GPUSHARE_MSG_UNMAPPED. */
gboolean gpushare_conn_send_event (GpuShareConn * conn,
    const GpuShareEvent * event);
gboolean gpushare_conn_send_meta (GpuShareConn * conn,
    const GpuShareMeta * meta);
gboolean gpushare_conn_send_observe (GpuShareConn * conn,
    const GpuShareObserve * observe);
gboolean gpushare_conn_send_status (GpuShareConn * conn,
    const GpuShareStatus * status);
gboolean gpushare_conn_send_notice (GpuShareConn * conn,
    const GpuShareNotice * notice);
/* takes fd, the lane's memfd (closed once sent, or on failure) */
gboolean gpushare_conn_send_lane (GpuShareConn * conn,
    const GpuShareLaneInfo * lane, gint fd);
gboolean gpushare_conn_send_frame (GpuShareConn * conn,
    const GpuShareFrame * frame);
gboolean gpushare_conn_send_release (GpuShareConn * conn,
    const GpuShareRelease * release);
gboolean gpushare_conn_send_mapped (GpuShareConn * conn,
    GpuShareMsgType type, guint64 epoch);
gboolean gpushare_conn_send_eos (GpuShareConn * conn, guint64 last_sequence);
gboolean gpushare_conn_send_goodbye (GpuShareConn * conn, guint32 reason,
    guint32 flags, guint64 last_sequence);
gboolean gpushare_conn_send_caps (GpuShareConn * conn,
    const GpuShareCaps * caps);
gboolean gpushare_conn_send_announce (GpuShareConn * conn,
    const GpuShareAnnounce * a);
gboolean gpushare_conn_send_accept (GpuShareConn * conn,
    const GpuShareAccept * a);
gboolean gpushare_conn_send_slots (GpuShareConn * conn,
    const GpuShareSlots * s, gint * fds, guint n_fds);

/* a PING now, beside the heartbeat's own: it wakes the peer's control
 * thread (a consumer whose producer waits for the releases in its lane) */
gboolean gpushare_conn_send_ping (GpuShareConn * conn);
/* the peer was heard another way (its frame lane moved): for the
 * heartbeat, as good as bytes on the socket */
void gpushare_conn_note_alive (GpuShareConn * conn);
/* the peer read something we wrote at since_us another way (our frame
 * lane): it heard from us then or later, and counts that for its
 * heartbeat, so that no PING need go until an interval after it */
void gpushare_conn_note_heard (GpuShareConn * conn, gint64 since_us);
/* PINGs are the transport's own unless asked for: then message_func gets
 * them too */
void gpushare_conn_deliver_pings (GpuShareConn * conn);

/* Blocks up to timeout_ms for the send queue to drain (shutdown paths). */
gboolean gpushare_conn_flush (GpuShareConn * conn, gint timeout_ms);

/* Fails the connection: closed_func runs later from the context. */
void gpushare_conn_fail (GpuShareConn * conn, const GError * error);
/* Closes now, without calling closed_func.  Idempotent. */
void gpushare_conn_close (GpuShareConn * conn);
gboolean gpushare_conn_is_closed (GpuShareConn * conn);
/* Called as the connection closes its socket while the peer has left
 * bytes of ours unread and lives on (descriptors among them count against
 * our uid until it reads or closes them): fd is a duplicate of the
 * socket, shut down both ways, the callee's to close once it is drained.
 * Called with the connection's lock held: the callee takes no lock the
 * connection's users hold. */
typedef void (*GpuShareConnLingerFunc) (gint fd, gpointer user_data);
void gpushare_conn_set_linger_func (GpuShareConn * conn,
    GpuShareConnLingerFunc func, gpointer user_data);
/* bytes a Unix socket sent that its peer has not read yet (0 once the
 * peer closed: its unread bytes went with its socket) */
gsize gpushare_socket_unread (gint fd);
/* TRUE when every holder of the peer's end closed it (or this end is
 * closed): a look at the socket, which waits for nothing */
gboolean gpushare_conn_peer_closed (GpuShareConn * conn);

gboolean gpushare_conn_get_peer (GpuShareConn * conn, pid_t * pid,
    uid_t * uid, gid_t * gid);
/* the credentials (SO_PEERCRED) of the process at the other end of a
 * connected Unix socket, as of its connect () or listen () */
/* bytes of a Unix socket's path with its NUL (sun_path) */
#define GPUSHARE_SOCKET_PATH_MAX 108

gboolean gpushare_socket_get_peer (gint fd, pid_t * pid, uid_t * uid,
    gid_t * gid);

/* Heartbeat on an idle link, every interval_ms (0: off, the default).  A
 * timer on the context sends PING when nothing was sent for an interval,
 * and fails the connection with GPUSHARE_CONN_ERROR_TIMEOUT (telling the
 * peer, ERROR TIMEOUT) when nothing was received for
 * GPUSHARE_CONN_HEARTBEAT_MISSES intervals, counted from the last byte
 * received or from this call, whichever is later.  A peer whose headers
 * say minor version 0 knows no PING: it gets them (and ignores them), but
 * its silence is not held against it.  Received PINGs never reach
 * message_func.  Any thread. */
void gpushare_conn_set_heartbeat (GpuShareConn * conn, guint interval_ms);
/* monotonic us of the last byte from the peer (or of its frame lane's
 * move, gpushare_conn_note_alive ()).  Any thread. */
gint64 gpushare_conn_last_received (GpuShareConn * conn);
/* bytes from the peer wait on the socket, not read yet (a thread that was
 * held up has the peer's replies to read before it judges a deadline).
 * Any thread. */
gboolean gpushare_conn_input_pending (GpuShareConn * conn);

/* Sends PING on each connection of this process whose heartbeat is on
 * and that sent nothing for half an interval.  For a thread that runs
 * connections' contexts and is about to do long work without returning
 * to them (GPU slots exported or mapped for many consumers in a row):
 * called between the pieces, it keeps the peers from taking the silence
 * for a hung process.  Any thread, no lock of a connection held. */
void gpushare_conn_pulse (void);

/* Long device work begins or ends (rings made, exported, mapped or let go):
 * while any goes on in this process, a thread of its own pulses every
 * connection with a heartbeat (gpushare_conn_pulse ()) each
 * GPUSHARE_CONN_BUSY_PULSE_MS, so that one driver call of seconds (imports
 * and exports while many processes make their CUDA contexts at once) is
 * not taken by the peers for a hung process, whatever thread it holds up.
 * For at most GPUSHARE_CONN_BUSY_MAX_MS without a piece of it ending (from
 * its start, or the last end): work that makes no progress for that long
 * is a hang, and the peers see it as one.  Nests; any thread, no lock of a
 * connection held. */
#define GPUSHARE_CONN_BUSY_PULSE_MS 100
#define GPUSHARE_CONN_BUSY_MAX_MS 60000
void gpushare_conn_busy_begin (void);
void gpushare_conn_busy_end (void);

/* Listening socket at path with the given mode.  A symlink or a non-socket
 * at the path is refused; a socket file nobody listens on is replaced; a
 * live one is refused with IN_USE.  Returns the fd, or -1. */
gint gpushare_listen_path (const gchar * path, guint mode, GError ** error);

/* Connects a stream socket to path; -1 with error (ENOENT and ECONNREFUSED
 * are reported as GPUSHARE_CONN_ERROR_HANGUP: "nobody there yet"). */
gint gpushare_connect_path (const gchar * path, GError ** error);

G_END_DECLS

#endif /* __GPUSHARE_CONN_H__ */

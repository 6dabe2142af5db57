/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare wire codec.
 *
 * Every message is a 24-byte header (GpuShareHeader, field for field)
 * followed by a payload: a fixed part whose layout is frozen below as a
 * GpuShareWire* struct, then the variable parts (strings) whose lengths the
 * fixed part gives.  All integers are little-endian.  Strings are UTF-8,
 * without NUL, and not NUL-terminated on the wire.
 *
 * The wire structs are never overlaid on a byte buffer: the buffer may be
 * unaligned and the host may be big-endian.  They exist so that sizeof and
 * G_STRUCT_OFFSET give every field's position, frozen by the static
 * assertions next to them, and fields are read and written one by one
 * through memcpy.  Every wire struct is naturally aligned without padding
 * (explicit reserved words fill what would be padding), so the compiler
 * and the assertions agree on one layout on every ABI we build for.
 *
 * One validation function per message type serves both the builder and the
 * parser, so that what we send is exactly what a peer of the same version
 * accepts, and a message round-trips unchanged.
 *
 * One table (msg_table, after the builders) describes every message type
 * this version knows: its name, who sends it, the minor that added it,
 * the size of its fixed part, whether it may carry fds, and its parse,
 * check and build functions.  The header check, the parser, the generic
 * builder and the names only look a type up there, so that a new type is
 * its wire struct, its functions and its row.
 */

#include "gpushareproto.h"

#include <string.h>

/* freezes one field of a wire struct at its documented byte offset */
#define WIRE_AT(type, field, offset) \
  G_STATIC_ASSERT (G_STRUCT_OFFSET (type, field) == (offset))
#define OFF(type, field) ((gsize) G_STRUCT_OFFSET (type, field))

/* Header: GpuShareHeader itself is the wire layout.
 *
 *   off size field
 *     0    4 magic            GPUSHARE_MAGIC, "GPSH"
 *     4    2 version_major    GPUSHARE_VERSION_MAJOR
 *     6    2 version_minor    GPUSHARE_VERSION_MINOR
 *     8    2 type             GpuShareMsgType
 *    10    2 flags            0 when sent, ignored when received
 *    12    4 payload_len      bytes after the header
 *    16    4 n_fds            SCM_RIGHTS fds sent with this message
 *    20    4 reserved         0 when sent, ignored when received
 */
WIRE_AT (GpuShareHeader, magic, 0);
WIRE_AT (GpuShareHeader, version_major, 4);
WIRE_AT (GpuShareHeader, version_minor, 6);
WIRE_AT (GpuShareHeader, type, 8);
WIRE_AT (GpuShareHeader, flags, 10);
WIRE_AT (GpuShareHeader, payload_len, 12);
WIRE_AT (GpuShareHeader, n_fds, 16);
WIRE_AT (GpuShareHeader, reserved, 20);

/* Frame layout, embedded in ANNOUNCE and CAPS.  88 bytes.
 *
 *   off size field
 *     0    8 epoch
 *     8    8 frame_size
 *    16    8 slot_size
 *    24    4 n_slots
 *    28    4 n_planes
 *    32   32 offsets[4]       u64 each, all four sent
 *    64   16 strides[4]       s32 each, all four sent
 *    80    4 caps_len         bytes of the caps string
 *    84    4 reserved         0 when sent, ignored when received
 */
typedef struct
{
  guint64 epoch;
  guint64 frame_size;
  guint64 slot_size;
  guint32 n_slots;
  guint32 n_planes;
  guint64 offsets[GPUSHARE_MAX_PLANES];
  gint32 strides[GPUSHARE_MAX_PLANES];
  guint32 caps_len;
  guint32 reserved;
} GpuShareWireLayout;

G_STATIC_ASSERT (sizeof (GpuShareWireLayout) == 88);
WIRE_AT (GpuShareWireLayout, epoch, 0);
WIRE_AT (GpuShareWireLayout, frame_size, 8);
WIRE_AT (GpuShareWireLayout, slot_size, 16);
WIRE_AT (GpuShareWireLayout, n_slots, 24);
WIRE_AT (GpuShareWireLayout, n_planes, 28);
WIRE_AT (GpuShareWireLayout, offsets, 32);
WIRE_AT (GpuShareWireLayout, strides, 64);
WIRE_AT (GpuShareWireLayout, caps_len, 80);
WIRE_AT (GpuShareWireLayout, reserved, 84);

/* ANNOUNCE, producer -> consumer.  160 bytes, then name_len bytes of name,
 * then layout.caps_len bytes of caps.
 *
 *   off size field
 *     0    2 schema_major
 *     2    2 schema_minor
 *     4    4 mem_types        GpuShareMemType mask
 *     8    4 flags            GPUSHARE_STREAM_FLAG_*
 *    12    4 pid
 *    16    4 uid
 *    20    4 name_len
 *    24    8 instance
 *    32    8 latency
 *    40   88 layout           GpuShareWireLayout
 *   128   16 device_uuid      the producer's GPU, zero if none offered
 *   144    4 device_caps      GPUSHARE_DEVICE_CAP_*
 *   148    4 sync_modes       GpuShareSyncMode mask offered
 *   152    4 compute_mode     CUcomputemode
 *   156    4 reserved         0 when sent, ignored when received
 */
typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 mem_types;
  guint32 flags;
  guint32 pid;
  guint32 uid;
  guint32 name_len;
  guint64 instance;
  guint64 latency;
  GpuShareWireLayout layout;
  guint8 device_uuid[16];
  guint32 device_caps;
  guint32 sync_modes;
  gint32 compute_mode;
  guint32 reserved;
} GpuShareWireAnnounce;

G_STATIC_ASSERT (sizeof (GpuShareWireAnnounce) == 160);
WIRE_AT (GpuShareWireAnnounce, schema_major, 0);
WIRE_AT (GpuShareWireAnnounce, schema_minor, 2);
WIRE_AT (GpuShareWireAnnounce, mem_types, 4);
WIRE_AT (GpuShareWireAnnounce, flags, 8);
WIRE_AT (GpuShareWireAnnounce, pid, 12);
WIRE_AT (GpuShareWireAnnounce, uid, 16);
WIRE_AT (GpuShareWireAnnounce, name_len, 20);
WIRE_AT (GpuShareWireAnnounce, instance, 24);
WIRE_AT (GpuShareWireAnnounce, latency, 32);
WIRE_AT (GpuShareWireAnnounce, layout, 40);
WIRE_AT (GpuShareWireAnnounce, device_uuid, 128);
WIRE_AT (GpuShareWireAnnounce, device_caps, 144);
WIRE_AT (GpuShareWireAnnounce, sync_modes, 148);
WIRE_AT (GpuShareWireAnnounce, compute_mode, 152);
WIRE_AT (GpuShareWireAnnounce, reserved, 156);

/* ACCEPT, consumer -> producer.  56 bytes, then name_len bytes of name,
 * then reason_len bytes of reason.
 *
 *   off size field
 *     0    2 schema_major
 *     2    2 schema_minor
 *     4    4 mem_type         exactly one GpuShareMemType bit
 *     8    4 flags            GPUSHARE_ACCEPT_FLAG_* (since minor 7);
 *                             unknown bits round-trip unchanged
 *    12    4 pid
 *    16    8 instance
 *    24    4 name_len
 *    28    4 sync_mode        one GpuShareSyncMode bit, 0 for system memory
 *    32   16 uuid             the consumer's GPU, zero if none
 *    48    4 reason_len       why this memory type (for the producer's stats)
 *    52    4 reserved         0 when sent, ignored when received
 */
typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 mem_type;
  guint32 flags;
  guint32 pid;
  guint64 instance;
  guint32 name_len;
  guint32 sync_mode;
  guint8 uuid[16];
  guint32 reason_len;
  guint32 reserved;
} GpuShareWireAccept;

G_STATIC_ASSERT (sizeof (GpuShareWireAccept) == 56);
WIRE_AT (GpuShareWireAccept, schema_major, 0);
WIRE_AT (GpuShareWireAccept, schema_minor, 2);
WIRE_AT (GpuShareWireAccept, mem_type, 4);
WIRE_AT (GpuShareWireAccept, flags, 8);
WIRE_AT (GpuShareWireAccept, pid, 12);
WIRE_AT (GpuShareWireAccept, instance, 16);
WIRE_AT (GpuShareWireAccept, name_len, 24);
WIRE_AT (GpuShareWireAccept, sync_mode, 28);
WIRE_AT (GpuShareWireAccept, uuid, 32);
WIRE_AT (GpuShareWireAccept, reason_len, 48);
WIRE_AT (GpuShareWireAccept, reserved, 52);

/* SLOTS, producer -> consumer, with n_slots fds for VMM and system memory,
 * then n_sync_fds, then the side memory's fd when side_pages is not 0.
 * 48 bytes,
 * then n_handles * 64 bytes of opaque CUDA handles: a memory handle per
 * slot for legacy and fabric memory, then the event handles.
 *
 *   off size field
 *     0    8 epoch
 *     8    8 slot_size
 *    16    4 n_slots          VMM and system memory: the first n_slots fds
 *    20    4 mem_type         exactly one GpuShareMemType bit
 *    24    4 sync_mode        0, or the GpuShareSyncMode bit in use
 *    28    4 n_sync_fds       0; with SYNC_SEMAPHORE 1 (the semaphore
 *                             block) or, since minor 12, 2 (the block,
 *                             then its ready words in host memory,
 *                             GPUSHARE_HOST_WORDS_SIZE bytes)
 *    32    8 sync_size        bytes of the semaphore block
 *    40    4 n_handles        n_slots for legacy and fabric memory, plus
 *                             2 * n_slots with SYNC_EVENT
 *    44    4 side_pages       since minor 10: each slot's side memory, in
 *                             4096-byte pages; 0: none (and no fd)
 */
typedef struct
{
  guint64 epoch;
  guint64 slot_size;
  guint32 n_slots;
  guint32 mem_type;
  guint32 sync_mode;
  guint32 n_sync_fds;
  guint64 sync_size;
  guint32 n_handles;
  guint32 side_pages;
} GpuShareWireSlots;

G_STATIC_ASSERT (sizeof (GpuShareWireSlots) == 48);
WIRE_AT (GpuShareWireSlots, epoch, 0);
WIRE_AT (GpuShareWireSlots, slot_size, 8);
WIRE_AT (GpuShareWireSlots, n_slots, 16);
WIRE_AT (GpuShareWireSlots, mem_type, 20);
WIRE_AT (GpuShareWireSlots, sync_mode, 24);
WIRE_AT (GpuShareWireSlots, n_sync_fds, 28);
WIRE_AT (GpuShareWireSlots, sync_size, 32);
WIRE_AT (GpuShareWireSlots, n_handles, 40);
WIRE_AT (GpuShareWireSlots, side_pages, 44);

/* MAPPED and UNMAPPED (since minor 2), consumer -> producer.  8 bytes.
 *
 *   off size field
 *     0    8 epoch
 */
typedef struct
{
  guint64 epoch;
} GpuShareWireMapped;

G_STATIC_ASSERT (sizeof (GpuShareWireMapped) == 8);
WIRE_AT (GpuShareWireMapped, epoch, 0);

/* FRAME, producer -> consumer.  72 bytes.
 *
 *   off size field
 *     0    8 epoch
 *     8    4 slot
 *    12    4 generation
 *    16    8 sequence
 *    24    8 pts
 *    32    8 dts
 *    40    8 duration
 *    48    8 offset
 *    56    8 offset_end
 *    64    4 buffer_flags     GstBufferFlags
 *    68    4 flags            GPUSHARE_FRAME_FLAG_*
 *   since minor 6, sent only when share is not 0 (a leaky producer), so
 *   that a FRAME of a lossless one is the same 72 bytes as before; read
 *   only when the payload holds all 8:
 *    72    4 share            slots the consumer may hold at once
 *    76    4 reserved         0
 */
typedef struct
{
  guint64 epoch;
  guint32 slot;
  guint32 generation;
  guint64 sequence;
  guint64 pts;
  guint64 dts;
  guint64 duration;
  guint64 offset;
  guint64 offset_end;
  guint32 buffer_flags;
  guint32 flags;
} GpuShareWireFrame;

G_STATIC_ASSERT (sizeof (GpuShareWireFrame) == 72);
WIRE_AT (GpuShareWireFrame, epoch, 0);
WIRE_AT (GpuShareWireFrame, slot, 8);
WIRE_AT (GpuShareWireFrame, generation, 12);
WIRE_AT (GpuShareWireFrame, sequence, 16);
WIRE_AT (GpuShareWireFrame, pts, 24);
WIRE_AT (GpuShareWireFrame, dts, 32);
WIRE_AT (GpuShareWireFrame, duration, 40);
WIRE_AT (GpuShareWireFrame, offset, 48);
WIRE_AT (GpuShareWireFrame, offset_end, 56);
WIRE_AT (GpuShareWireFrame, buffer_flags, 64);
WIRE_AT (GpuShareWireFrame, flags, 68);

typedef struct
{
  GpuShareWireFrame frame;
  guint32 share;
  guint32 reserved;
} GpuShareWireFrameShare;

G_STATIC_ASSERT (sizeof (GpuShareWireFrameShare) == 80);
WIRE_AT (GpuShareWireFrameShare, share, 72);
WIRE_AT (GpuShareWireFrameShare, reserved, 76);

/* RELEASE, consumer -> producer.  24 bytes.
 *
 *   off size field
 *     0    8 epoch
 *     8    4 slot
 *    12    4 generation
 *    16    8 sequence
 */
typedef struct
{
  guint64 epoch;
  guint32 slot;
  guint32 generation;
  guint64 sequence;
} GpuShareWireRelease;

G_STATIC_ASSERT (sizeof (GpuShareWireRelease) == 24);
WIRE_AT (GpuShareWireRelease, epoch, 0);
WIRE_AT (GpuShareWireRelease, slot, 8);
WIRE_AT (GpuShareWireRelease, generation, 12);
WIRE_AT (GpuShareWireRelease, sequence, 16);

/* CAPS, producer -> consumer.  104 bytes, then layout.caps_len bytes of
 * caps.
 *
 *   off size field
 *     0    4 flags            GPUSHARE_STREAM_FLAG_*
 *     4    4 reserved         0 when sent, ignored when received
 *     8    8 latency
 *    16   88 layout           GpuShareWireLayout
 */
typedef struct
{
  guint32 flags;
  guint32 reserved;
  guint64 latency;
  GpuShareWireLayout layout;
} GpuShareWireCaps;

G_STATIC_ASSERT (sizeof (GpuShareWireCaps) == 104);
WIRE_AT (GpuShareWireCaps, flags, 0);
WIRE_AT (GpuShareWireCaps, reserved, 4);
WIRE_AT (GpuShareWireCaps, latency, 8);
WIRE_AT (GpuShareWireCaps, layout, 16);

/* EOS, producer -> consumer.  8 bytes.
 *
 *   off size field
 *     0    8 last_sequence
 */
typedef struct
{
  guint64 last_sequence;
} GpuShareWireEos;

G_STATIC_ASSERT (sizeof (GpuShareWireEos) == 8);
WIRE_AT (GpuShareWireEos, last_sequence, 0);

/* META, producer -> consumer, since minor 4.  16 bytes + data_len.
 *
 *   off size field
 *     0    8 sequence         the FRAME it goes with, sent next
 *     8    4 n_entries        1 .. GPUSHARE_MAX_META_ENTRIES
 *    12    4 data_len         <= GPUSHARE_MAX_META_LEN
 *    16    - entries          kind (2), reserved (2), length (4), body
 */
typedef struct
{
  guint64 sequence;
  guint32 n_entries;
  guint32 data_len;
} GpuShareWireMeta;

/* EVENT, producer -> consumer, since minor 4.  8 bytes + text_len.
 *
 *   off size field
 *     0    4 kind             GpuShareEventKind
 *     4    4 text_len         1 .. GPUSHARE_MAX_EVENT_LEN
 *     8    - text             UTF-8, no NUL
 */
typedef struct
{
  guint32 word;                 /* EVENT: kind; STATUS: flags */
  guint32 text_len;
} GpuShareWireText;

G_STATIC_ASSERT (sizeof (GpuShareWireText) == 8);
G_STATIC_ASSERT (sizeof (GpuShareWireText) + GPUSHARE_MAX_EVENT_LEN <=
    GPUSHARE_MAX_PAYLOAD);
WIRE_AT (GpuShareWireText, word, 0);
WIRE_AT (GpuShareWireText, text_len, 4);

G_STATIC_ASSERT (sizeof (GpuShareWireMeta) == 16);

/* OBSERVE, consumer -> producer instead of ACCEPT, since minor 5.  16
 * bytes + name_len.
 *
 *   off size field
 *     0    2 schema_major
 *     2    2 schema_minor
 *     4    4 interval_ms      GPUSHARE_MIN .. MAX_OBSERVE_INTERVAL
 *     8    4 pid
 *    12    4 name_len         0 .. GPUSHARE_MAX_NAME_LEN
 *    16    - name             UTF-8, no NUL
 */
typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 interval_ms;
  guint32 pid;
  guint32 name_len;
} GpuShareWireObserve;

G_STATIC_ASSERT (sizeof (GpuShareWireObserve) == 16);
WIRE_AT (GpuShareWireObserve, schema_major, 0);
WIRE_AT (GpuShareWireObserve, schema_minor, 2);
WIRE_AT (GpuShareWireObserve, interval_ms, 4);
WIRE_AT (GpuShareWireObserve, pid, 8);
WIRE_AT (GpuShareWireObserve, name_len, 12);

/* STATUS, producer -> observer, since minor 5.  8 bytes + text_len, the
 * wire form of EVENT (GpuShareWireText).
 *
 *   off size field
 *     0    4 flags            0
 *     4    4 text_len         1 .. GPUSHARE_MAX_STATUS_LEN
 *     8    - text             UTF-8, no NUL
 */
G_STATIC_ASSERT (sizeof (GpuShareWireText) + GPUSHARE_MAX_STATUS_LEN <=
    GPUSHARE_MAX_PAYLOAD);
G_STATIC_ASSERT (sizeof (GpuShareWireMeta) + GPUSHARE_MAX_META_LEN <=
    GPUSHARE_MAX_PAYLOAD);
WIRE_AT (GpuShareWireMeta, sequence, 0);
WIRE_AT (GpuShareWireMeta, n_entries, 8);
WIRE_AT (GpuShareWireMeta, data_len, 12);

/* GOODBYE, either direction.  4 bytes, or 16 since minor 3.
 *
 *   off size field
 *     0    4 reason           GpuShareErrorCode
 *   since minor 3, sent only when one of them is not 0, so that a GOODBYE
 *   that says nothing more is the same 4 bytes as before; read only when
 *   the payload holds all 12 (a shorter tail is ignored, as any other):
 *     4    4 flags            GPUSHARE_GOODBYE_FLAG_*
 *     8    8 last_sequence
 */
typedef struct
{
  guint32 reason;
} GpuShareWireGoodbye;

G_STATIC_ASSERT (sizeof (GpuShareWireGoodbye) == 4);
WIRE_AT (GpuShareWireGoodbye, reason, 0);

typedef struct
{
  guint32 reason;
  guint32 flags;
  guint64 last_sequence;
} GpuShareWireGoodbyeHeld;

G_STATIC_ASSERT (sizeof (GpuShareWireGoodbyeHeld) == 16);
WIRE_AT (GpuShareWireGoodbyeHeld, reason, 0);
WIRE_AT (GpuShareWireGoodbyeHeld, flags, 4);
WIRE_AT (GpuShareWireGoodbyeHeld, last_sequence, 8);

/* NOTICE, producer -> consumer, since minor 6.  32 bytes.
 *
 *   off size field
 *     0    4 code             GpuShareNoticeCode
 *     4    4 share
 *     8    4 slots_held
 *    12    4 n_consumers
 *    16    8 skipped
 *    24    8 sequence
 */
typedef struct
{
  guint32 code;
  guint32 share;
  guint32 slots_held;
  guint32 n_consumers;
  guint64 skipped;
  guint64 sequence;
} GpuShareWireNotice;

G_STATIC_ASSERT (sizeof (GpuShareWireNotice) == 32);
WIRE_AT (GpuShareWireNotice, code, 0);
WIRE_AT (GpuShareWireNotice, share, 4);
WIRE_AT (GpuShareWireNotice, slots_held, 8);
WIRE_AT (GpuShareWireNotice, n_consumers, 12);
WIRE_AT (GpuShareWireNotice, skipped, 16);
WIRE_AT (GpuShareWireNotice, sequence, 24);

/* LANE, producer -> consumer, since minor 7.  16 bytes, or 24 since
 * minor 9 when the lane has a meta region, with one fd (the lane's
 * memfd).
 *
 *   off size field
 *     0    4 n_entries
 *     4    4 entry_size
 *     8    8 size
 *    16    4 meta_size        since minor 9; 0 when absent
 *    20    4 reserved         0
 */
typedef struct
{
  guint32 n_entries;
  guint32 entry_size;
  guint64 size;
} GpuShareWireLane;

G_STATIC_ASSERT (sizeof (GpuShareWireLane) == 16);
WIRE_AT (GpuShareWireLane, n_entries, 0);
WIRE_AT (GpuShareWireLane, entry_size, 4);
WIRE_AT (GpuShareWireLane, size, 8);

typedef struct
{
  guint32 meta_size;
  guint32 reserved;
} GpuShareWireLaneMetas;

G_STATIC_ASSERT (sizeof (GpuShareWireLaneMetas) == 8);
WIRE_AT (GpuShareWireLaneMetas, meta_size, 0);
WIRE_AT (GpuShareWireLaneMetas, reserved, 4);

/* An entry of a lane.  GPUSHARE_LANE_ENTRY_SIZE bytes.
 *
 *   off size field
 *     0    8 index            its position in the lane
 *     8    4 kind             GpuShareLaneEntryKind
 *    12    4 length           bytes of body: 88 (FRAME), 8 (MARK)
 *    16  ... body             FRAME: a FRAME's 80-byte payload, then u64
 *                             written_us; MARK: u64 mark
 */
typedef struct
{
  guint64 index;
  guint32 kind;
  guint32 length;
} GpuShareWireLaneEntry;

G_STATIC_ASSERT (sizeof (GpuShareWireLaneEntry) == 16);
WIRE_AT (GpuShareWireLaneEntry, index, 0);
WIRE_AT (GpuShareWireLaneEntry, kind, 8);
WIRE_AT (GpuShareWireLaneEntry, length, 12);
G_STATIC_ASSERT (sizeof (GpuShareWireLaneEntry) +
    sizeof (GpuShareWireFrameShare) + 8 <= GPUSHARE_LANE_ENTRY_SIZE);

/* A FRAME entry's metas in the meta region, since minor 9: after
 * written_us.
 *
 *   off size field
 *     0    8 meta_at          position in the region's bytes as written
 *     8    4 meta_len         bytes; 0: none there
 *    12    4 meta_entries     entries in them
 */
typedef struct
{
  guint64 meta_at;
  guint32 meta_len;
  guint32 meta_entries;
} GpuShareWireLaneMetaRef;

G_STATIC_ASSERT (sizeof (GpuShareWireLaneMetaRef) == 16);
WIRE_AT (GpuShareWireLaneMetaRef, meta_at, 0);
WIRE_AT (GpuShareWireLaneMetaRef, meta_len, 8);
WIRE_AT (GpuShareWireLaneMetaRef, meta_entries, 12);
/* where it starts in a FRAME entry's body */
#define LANE_META_REF_AT (sizeof (GpuShareWireFrameShare) + 8)
G_STATIC_ASSERT (sizeof (GpuShareWireLaneEntry) + LANE_META_REF_AT +
    sizeof (GpuShareWireLaneMetaRef) <= GPUSHARE_LANE_ENTRY_SIZE);

/* does this GOODBYE need its minor-3 part on the wire */
static gboolean
goodbye_has_held (const GpuShareGoodbye * g)
{
  return g->flags != 0 || g->last_sequence != 0;
}

/* ERROR, either direction.  8 bytes, then text_len bytes of text.
 *
 *   off size field
 *     0    4 code             GpuShareErrorCode
 *     4    4 text_len
 */
typedef struct
{
  guint32 code;
  guint32 text_len;
} GpuShareWireError;

G_STATIC_ASSERT (sizeof (GpuShareWireError) == 8);
WIRE_AT (GpuShareWireError, code, 0);
WIRE_AT (GpuShareWireError, text_len, 4);

/* PING, either direction, since minor 1.  0 bytes: no wire struct.  Sent
 * on a link that was idle for a heartbeat interval; a longer payload is a
 * newer minor's and is ignored, fds are refused as for every known type
 * but SLOTS. */

/* The largest message of each type fits the payload cap, so the builder
 * can never produce a message that a peer refuses as TOO_LARGE. */
G_STATIC_ASSERT (sizeof (GpuShareWireAnnounce) + GPUSHARE_MAX_NAME_LEN +
    GPUSHARE_MAX_CAPS_LEN <= GPUSHARE_MAX_PAYLOAD);
G_STATIC_ASSERT (sizeof (GpuShareWireAccept) + GPUSHARE_MAX_NAME_LEN +
    GPUSHARE_MAX_REASON_LEN <= GPUSHARE_MAX_PAYLOAD);
G_STATIC_ASSERT (sizeof (GpuShareWireSlots) + GPUSHARE_MAX_HANDLES *
    GPUSHARE_EVENT_HANDLE_SIZE <= GPUSHARE_MAX_PAYLOAD);
G_STATIC_ASSERT (sizeof (GpuShareWireCaps) + GPUSHARE_MAX_CAPS_LEN <=
    GPUSHARE_MAX_PAYLOAD);
G_STATIC_ASSERT (sizeof (GpuShareWireError) + GPUSHARE_MAX_TEXT_LEN <=
    GPUSHARE_MAX_PAYLOAD);
/* a slot's fd each, the semaphore block's, its ready words' and the
 * side memory's */
G_STATIC_ASSERT (GPUSHARE_MAX_SLOTS + 3 <= GPUSHARE_MAX_FDS);

/* Little-endian accessors.  memcpy, not a cast: p may be unaligned. */

static inline guint16
rd16 (const guint8 * p)
{
  guint16 v;

  memcpy (&v, p, sizeof (v));
  return GUINT16_FROM_LE (v);
}

static inline guint32
rd32 (const guint8 * p)
{
  guint32 v;

  memcpy (&v, p, sizeof (v));
  return GUINT32_FROM_LE (v);
}

static inline guint64
rd64 (const guint8 * p)
{
  guint64 v;

  memcpy (&v, p, sizeof (v));
  return GUINT64_FROM_LE (v);
}

static inline void
wr16 (guint8 * p, guint16 v)
{
  v = GUINT16_TO_LE (v);
  memcpy (p, &v, sizeof (v));
}

static inline void
wr32 (guint8 * p, guint32 v)
{
  v = GUINT32_TO_LE (v);
  memcpy (p, &v, sizeof (v));
}

static inline void
wr64 (guint8 * p, guint64 v)
{
  v = GUINT64_TO_LE (v);
  memcpy (p, &v, sizeof (v));
}

/* read or write field f of wire struct T at base b */
#define RD16(b, T, f) rd16 ((b) + OFF (T, f))
#define RD32(b, T, f) rd32 ((b) + OFF (T, f))
#define RD64(b, T, f) rd64 ((b) + OFF (T, f))
#define WR16(b, T, f, v) wr16 ((b) + OFF (T, f), (v))
#define WR32(b, T, f, v) wr32 ((b) + OFF (T, f), (v))
#define WR64(b, T, f, v) wr64 ((b) + OFF (T, f), (v))

/* A row of the message table.  parse reads a payload of len bytes, at
 * least the type's fixed part, into msg; check judges what parse read, or
 * what a caller asks the builder to send, with the header's n_fds; build
 * appends the whole message.  Each takes a GpuShareMsg, so that one
 * signature serves every type: the typed functions they wrap take the
 * body alone. */
typedef GpuShareParseResult (*MsgParseFunc) (const guint8 * p, gsize len,
    GpuShareMsg * msg);
typedef GpuShareParseResult (*MsgCheckFunc) (const GpuShareMsg * msg,
    guint32 n_fds);
typedef gboolean (*MsgBuildFunc) (const GpuShareMsg * msg, guint32 n_fds,
    GByteArray * out);

typedef struct
{
  GpuShareMsgInfo info;
  MsgParseFunc parse;           /* NULL: nothing to read (PING) */
  MsgCheckFunc check;           /* NULL: any value is meaningful here */
  MsgBuildFunc build;
} MsgRow;

/* type's row of the table, NULL for a type this version does not know;
 * defined with the table, after every function a row names */
static const MsgRow *msg_row (guint type);

/* Validation, shared by the builder and the parser. */

/* A chosen memory type is one bit we know: a consumer cannot pick a
 * backend this version cannot name. */
static gboolean
is_one_known_mem_type (guint32 mem_type)
{
  return (mem_type & ~GPUSHARE_MEM_KNOWN_MASK) == 0 && mem_type != 0 &&
      (mem_type & (mem_type - 1)) == 0;
}

/* len bytes at s: len within cap, no NUL (the receiver hands the string to
 * C APIs that would silently cut it there), valid UTF-8 (it ends up in
 * logs, error messages and caps). */
static GpuShareParseResult
check_string (const gchar * s, guint32 len, guint32 cap)
{
  if (len > cap)
    return GPUSHARE_PARSE_MALFORMED;
  if (len == 0)
    return GPUSHARE_PARSE_OK;
  if (memchr (s, '\0', len) != NULL)
    return GPUSHARE_PARSE_MALFORMED;
  if (!g_utf8_validate (s, len, NULL))
    return GPUSHARE_PARSE_MALFORMED;
  return GPUSHARE_PARSE_OK;
}

/* Numbers first, so that the parser can run this before trusting any of
 * them, then the caps string. */
static GpuShareParseResult
check_layout (const GpuShareLayout * l)
{
  guint i;

  if (l->n_slots == 0 || l->n_slots > GPUSHARE_MAX_SLOTS)
    return GPUSHARE_PARSE_MALFORMED;
  if (l->n_planes > GPUSHARE_MAX_PLANES)
    return GPUSHARE_PARSE_MALFORMED;
  /* the cap keeps slot_size * n_slots far from overflowing 64 bits */
  if (l->slot_size == 0 || l->slot_size > GPUSHARE_MAX_SLOT_SIZE)
    return GPUSHARE_PARSE_MALFORMED;
  if (l->frame_size > l->slot_size)
    return GPUSHARE_PARSE_MALFORMED;
  /* a zero frame_size means the producer does not describe the planes'
   * extent (e.g. opaque memory): nothing to check the offsets against */
  if (l->frame_size > 0) {
    for (i = 0; i < l->n_planes; i++) {
      if (l->offsets[i] >= l->frame_size)
        return GPUSHARE_PARSE_MALFORMED;
    }
  }
  /* a frame without caps cannot be negotiated */
  if (l->caps_len == 0)
    return GPUSHARE_PARSE_MALFORMED;
  return check_string (l->caps, l->caps_len, GPUSHARE_MAX_CAPS_LEN);
}

static GpuShareParseResult
check_announce (const GpuShareAnnounce * a)
{
  GpuShareParseResult res;

  if (a->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  /* unknown bits beside a known one are offers from a newer minor */
  if ((a->mem_types & GPUSHARE_MEM_KNOWN_MASK) == 0)
    return GPUSHARE_PARSE_MALFORMED;
  res = check_layout (&a->layout);
  if (res != GPUSHARE_PARSE_OK)
    return res;
  /* GPU memory offered without a way to synchronise it is useless */
  if ((a->mem_types & ~GPUSHARE_MEM_HOST_MASK & GPUSHARE_MEM_KNOWN_MASK)
      && (a->device.sync_modes & GPUSHARE_SYNC_KNOWN_MASK) == 0)
    return GPUSHARE_PARSE_MALFORMED;
  return check_string (a->name, a->name_len, GPUSHARE_MAX_NAME_LEN);
}

static gboolean
is_one_known_sync_mode (guint32 mode)
{
  return mode != 0 && (mode & (mode - 1)) == 0
      && (mode & ~GPUSHARE_SYNC_KNOWN_MASK) == 0;
}

static GpuShareParseResult
check_accept (const GpuShareAccept * a)
{
  if (a->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  if (!is_one_known_mem_type (a->mem_type))
    return GPUSHARE_PARSE_MALFORMED;
  /* host memory needs no synchronisation; GPU memory exactly one mode */
  if (gpushare_mem_type_is_host (a->mem_type) ? a->sync_mode != 0 :
      !is_one_known_sync_mode (a->sync_mode))
    return GPUSHARE_PARSE_MALFORMED;
  if (check_string (a->reason, a->reason_len, GPUSHARE_MAX_REASON_LEN) !=
      GPUSHARE_PARSE_OK)
    return GPUSHARE_PARSE_MALFORMED;
  return check_string (a->name, a->name_len, GPUSHARE_MAX_NAME_LEN);
}

/* legacy and fabric memory travel as one opaque handle per slot */
static guint32
slot_handles (const GpuShareSlots * s)
{
  return (s->mem_type & GPUSHARE_MEM_HANDLE_MASK) ? s->n_slots : 0;
}

static GpuShareParseResult
check_slots (const GpuShareSlots * s, guint32 n_fds)
{
  if (s->n_slots == 0 || s->n_slots > GPUSHARE_MAX_SLOTS)
    return GPUSHARE_PARSE_MALFORMED;
  if (s->slot_size == 0 || s->slot_size > GPUSHARE_MAX_SLOT_SIZE)
    return GPUSHARE_PARSE_MALFORMED;
  if (!is_one_known_mem_type (s->mem_type))
    return GPUSHARE_PARSE_MALFORMED;
  if (gpushare_mem_type_is_host (s->mem_type) ? s->sync_mode != 0 :
      !is_one_known_sync_mode (s->sync_mode))
    return GPUSHARE_PARSE_MALFORMED;
  /* a semaphore block (and its ready words in host memory) with
   * semaphores, event handles with events, and nothing else */
  if (s->sync_mode == GPUSHARE_SYNC_SEMAPHORE ? s->n_sync_fds < 1
      || s->n_sync_fds > 2 : s->n_sync_fds != 0)
    return GPUSHARE_PARSE_MALFORMED;
  if (s->n_sync_fds && (s->sync_size < 16 * (guint64) s->n_slots
          || s->sync_size > GPUSHARE_MAX_SLOT_SIZE))
    return GPUSHARE_PARSE_MALFORMED;
  if (s->n_handles != slot_handles (s) + (s->sync_mode == GPUSHARE_SYNC_EVENT ?
          2 * s->n_slots : 0))
    return GPUSHARE_PARSE_MALFORMED;
  if (s->side_pages > GPUSHARE_MAX_SIDE_PAGES)
    return GPUSHARE_PARSE_MALFORMED;
  /* one fd per slot (unless its memory travels as handles) and the
   * block's, no more, no fewer: a mismatch would leave a slot without
   * memory or an fd without a slot */
  if (n_fds != gpushare_slots_fd_count (s))
    return GPUSHARE_PARSE_BAD_FD_COUNT;
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
check_caps (const GpuShareCaps * c)
{
  return check_layout (&c->layout);
}

/* the entries chain: n_entries headers and bodies, back to back, filling
 * len exactly; reserved fields 0 */
static GpuShareParseResult
check_meta_chain (guint32 n_entries, const guint8 * data, gsize len,
    gsize max_len)
{
  gsize at = 0;
  guint i;

  if (n_entries == 0 || n_entries > GPUSHARE_MAX_META_ENTRIES || len > max_len)
    return GPUSHARE_PARSE_MALFORMED;
  for (i = 0; i < n_entries; i++) {
    guint32 body;

    if (len - at < GPUSHARE_META_ENTRY_HEADER)
      return GPUSHARE_PARSE_MALFORMED;
    if (rd16 (data + at + 2) != 0)
      return GPUSHARE_PARSE_MALFORMED;
    body = rd32 (data + at + 4);
    at += GPUSHARE_META_ENTRY_HEADER;
    if (body > len - at)
      return GPUSHARE_PARSE_MALFORMED;
    at += body;
  }
  return at == len ? GPUSHARE_PARSE_OK : GPUSHARE_PARSE_MALFORMED;
}

static GpuShareParseResult
check_meta (const GpuShareMeta * m)
{
  return check_meta_chain (m->n_entries, m->data, m->data_len,
      GPUSHARE_MAX_META_LEN);
}

GpuShareFrameMetas *
gpushare_frame_metas_new (gsize capacity)
{
  GpuShareFrameMetas *m;

  g_return_val_if_fail (capacity <= GPUSHARE_LANE_MAX_META_LEN, NULL);

  m = g_malloc0 (sizeof (GpuShareFrameMetas) + capacity);
  m->capacity = capacity;
  m->data = (guint8 *) (m + 1);
  return m;
}

GpuShareFrameMetas *
gpushare_frame_metas_new_from_meta (const GpuShareMeta * meta)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (meta->data_len);

  m->sequence = meta->sequence;
  m->n_entries = meta->n_entries;
  m->data_len = meta->data_len;
  memcpy (m->data, meta->data, meta->data_len);
  return m;
}

guint
gpushare_frame_metas_to_meta (const GpuShareFrameMetas * m, GpuShareMeta * meta)
{
  gsize at = 0;
  guint n = 0;

  /* whole entries, in order, while they fit (the chain is the
   * producer's own, checked when it was written) */
  while (n < m->n_entries && m->data_len - at >= GPUSHARE_META_ENTRY_HEADER) {
    gsize next = at + GPUSHARE_META_ENTRY_HEADER + rd32 (m->data + at + 4);

    if (next > m->data_len || next > GPUSHARE_MAX_META_LEN)
      break;
    at = next;
    n++;
  }
  meta->sequence = m->sequence;
  meta->n_entries = n;
  meta->data_len = at;
  memcpy (meta->data, m->data, at);
  return m->n_entries - n;
}

gboolean
gpushare_frame_metas_check_chain (const GpuShareFrameMetas * m)
{
  return check_meta_chain (m->n_entries, m->data, m->data_len,
      GPUSHARE_LANE_MAX_META_LEN) == GPUSHARE_PARSE_OK;
}

/* any kind (an unknown one is skipped by the consumer), a text of 1 to
 * GPUSHARE_MAX_EVENT_LEN bytes of UTF-8 without NUL */
static GpuShareParseResult
check_event (const GpuShareEvent * e)
{
  if (e->text_len == 0 || e->text_len > GPUSHARE_MAX_EVENT_LEN
      || !g_utf8_validate (e->text, e->text_len, NULL))
    return GPUSHARE_PARSE_MALFORMED;
  return GPUSHARE_PARSE_OK;
}

/* an interval in range, a valid name */
static GpuShareParseResult
check_observe (const GpuShareObserve * o)
{
  if (o->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  if (o->interval_ms < GPUSHARE_MIN_OBSERVE_INTERVAL
      || o->interval_ms > GPUSHARE_MAX_OBSERVE_INTERVAL)
    return GPUSHARE_PARSE_MALFORMED;
  return check_string (o->name, o->name_len, GPUSHARE_MAX_NAME_LEN);
}

/* 1 .. GPUSHARE_MAX_STATUS_LEN bytes of UTF-8 without NUL */
static GpuShareParseResult
check_status (const GpuShareStatus * st)
{
  if (st->text_len == 0)
    return GPUSHARE_PARSE_MALFORMED;
  return check_string (st->text, st->text_len, GPUSHARE_MAX_STATUS_LEN);
}

static GpuShareParseResult
check_error (const GpuShareError * e)
{
  /* unknown codes are allowed: a newer peer may know more reasons */
  return check_string (e->text, e->text_len, GPUSHARE_MAX_TEXT_LEN);
}

/* a share, a holding and a count of consumers are of one ring */
static GpuShareParseResult
check_notice (const GpuShareNotice * n)
{
  return n->share <= GPUSHARE_MAX_SLOTS && n->slots_held <= GPUSHARE_MAX_SLOTS
      && n->n_consumers <= GPUSHARE_MAX_HOLDERS_WIRE ? GPUSHARE_PARSE_OK :
      GPUSHARE_PARSE_MALFORMED;
}

/* a lane's shape is the one the reader maps: a power of two of entries,
 * each of the size this version knows, the memfd exactly that large */
static GpuShareParseResult
check_lane (const GpuShareLaneInfo * l, guint32 n_fds)
{
  if (l->n_entries < GPUSHARE_LANE_MIN_ENTRIES
      || l->n_entries > GPUSHARE_LANE_MAX_ENTRIES
      || (l->n_entries & (l->n_entries - 1)) != 0
      || l->entry_size != GPUSHARE_LANE_ENTRY_SIZE
      || (l->meta_size != 0
          && (l->meta_size < GPUSHARE_LANE_MIN_META_REGION
              || l->meta_size > GPUSHARE_LANE_MAX_META_REGION
              || l->meta_size % GPUSHARE_LANE_META_ALIGN != 0))
      || l->size != gpushare_lane_size (l->n_entries) + l->meta_size)
    return GPUSHARE_PARSE_MALFORMED;
  return n_fds == 1 ? GPUSHARE_PARSE_OK : GPUSHARE_PARSE_BAD_FD_COUNT;
}

guint64
gpushare_lane_size (guint32 n_entries)
{
  return GPUSHARE_LANE_HEADER_SIZE + (guint64) n_entries *
      (GPUSHARE_LANE_ENTRY_SIZE + GPUSHARE_LANE_RELEASE_SIZE);
}

/* Everything the builder refuses, and the parser rejects once the message
 * is decoded.  n_fds is the header's. */
static GpuShareParseResult
check_msg (guint type, const GpuShareMsg * msg, guint32 n_fds)
{
  const MsgRow *row = msg_row (type);

  if (n_fds > GPUSHARE_MAX_FDS)
    return GPUSHARE_PARSE_BAD_FD_COUNT;
  if (!row)
    return GPUSHARE_PARSE_UNKNOWN_TYPE;
  if (!row->info.carries_fds && n_fds != 0)
    return GPUSHARE_PARSE_BAD_FD_COUNT;
  /* a type without a check: any value of its fields is meaningful at this
   * layer (slots, epochs and sequences are checked against the ring's
   * state) */
  return row->check ? row->check (msg, n_fds) : GPUSHARE_PARSE_OK;
}

/* Header */

GpuShareParseResult
gpushare_header_parse (const guint8 * buf, gsize len, GpuShareHeader * hdr)
{
  const MsgRow *row;

  g_return_val_if_fail (hdr != NULL, GPUSHARE_PARSE_MALFORMED);
  g_return_val_if_fail (buf != NULL || len == 0, GPUSHARE_PARSE_MALFORMED);

  if (len < GPUSHARE_HEADER_SIZE)
    return GPUSHARE_PARSE_NEED_MORE;

  /* filled in full before any check, so that the caller can log what it
   * refused */
  hdr->magic = RD32 (buf, GpuShareHeader, magic);
  hdr->version_major = RD16 (buf, GpuShareHeader, version_major);
  hdr->version_minor = RD16 (buf, GpuShareHeader, version_minor);
  hdr->type = RD16 (buf, GpuShareHeader, type);
  hdr->flags = RD16 (buf, GpuShareHeader, flags);
  hdr->payload_len = RD32 (buf, GpuShareHeader, payload_len);
  hdr->n_fds = RD32 (buf, GpuShareHeader, n_fds);
  hdr->reserved = RD32 (buf, GpuShareHeader, reserved);

  if (hdr->magic != GPUSHARE_MAGIC)
    return GPUSHARE_PARSE_BAD_MAGIC;
  /* a different minor only adds: new types (ignored) and longer payloads
   * (their tail ignored) */
  if (hdr->version_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  if (hdr->payload_len > GPUSHARE_MAX_PAYLOAD)
    return GPUSHARE_PARSE_TOO_LARGE;
  if (hdr->n_fds > GPUSHARE_MAX_FDS)
    return GPUSHARE_PARSE_BAD_FD_COUNT;
  /* unknown types may carry fds (up to the cap): the caller closes them */
  row = msg_row (hdr->type);
  if (row && !row->info.carries_fds && hdr->n_fds != 0)
    return GPUSHARE_PARSE_BAD_FD_COUNT;
  /* flags and reserved are not checked: a newer minor may use them, and
   * this version has no meaning to give them */
  return GPUSHARE_PARSE_OK;
}

/* Payload decoding.  Each reader gets at least the fixed part. */

static void
read_layout_fixed (const guint8 * p, GpuShareLayout * l)
{
  guint i;

  l->epoch = RD64 (p, GpuShareWireLayout, epoch);
  l->frame_size = RD64 (p, GpuShareWireLayout, frame_size);
  l->slot_size = RD64 (p, GpuShareWireLayout, slot_size);
  l->n_slots = RD32 (p, GpuShareWireLayout, n_slots);
  l->n_planes = RD32 (p, GpuShareWireLayout, n_planes);
  for (i = 0; i < GPUSHARE_MAX_PLANES; i++) {
    l->offsets[i] = rd64 (p + OFF (GpuShareWireLayout, offsets) +
        i * sizeof (guint64));
    l->strides[i] = (gint32) rd32 (p + OFF (GpuShareWireLayout, strides) +
        i * sizeof (gint32));
  }
  l->caps_len = RD32 (p, GpuShareWireLayout, caps_len);
}

/* Copies a string whose length was checked against dst's cap and against
 * the payload; check_msg () validates its bytes afterwards. */
static void
read_string (const guint8 * p, guint32 len, gchar * dst)
{
  if (len > 0)
    memcpy (dst, p, len);
  dst[len] = '\0';
}

static GpuShareParseResult
parse_announce (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareAnnounce *a = &msg->u.announce;
  const guint8 *lp = p + OFF (GpuShareWireAnnounce, layout);
  gsize var;

  a->schema_major = RD16 (p, GpuShareWireAnnounce, schema_major);
  a->schema_minor = RD16 (p, GpuShareWireAnnounce, schema_minor);
  /* another major's ANNOUNCE is refused as such before any other field is
   * judged: the consumer answers ERROR VERSION, not PROTOCOL */
  if (a->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  a->mem_types = RD32 (p, GpuShareWireAnnounce, mem_types);
  a->flags = RD32 (p, GpuShareWireAnnounce, flags);
  a->pid = RD32 (p, GpuShareWireAnnounce, pid);
  a->uid = RD32 (p, GpuShareWireAnnounce, uid);
  a->name_len = RD32 (p, GpuShareWireAnnounce, name_len);
  a->instance = RD64 (p, GpuShareWireAnnounce, instance);
  a->latency = RD64 (p, GpuShareWireAnnounce, latency);
  read_layout_fixed (lp, &a->layout);
  memcpy (a->device.uuid, p + OFF (GpuShareWireAnnounce, device_uuid), 16);
  a->device.caps = RD32 (p, GpuShareWireAnnounce, device_caps);
  a->device.sync_modes = RD32 (p, GpuShareWireAnnounce, sync_modes);
  a->device.compute_mode = (gint32) RD32 (p, GpuShareWireAnnounce,
      compute_mode);

  /* caps before use: both lengths are small, so their sum cannot wrap */
  if (a->name_len > GPUSHARE_MAX_NAME_LEN ||
      a->layout.caps_len > GPUSHARE_MAX_CAPS_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  var = sizeof (GpuShareWireAnnounce);
  if (len - var < (gsize) a->name_len + a->layout.caps_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, a->name_len, a->name);
  read_string (p + var + a->name_len, a->layout.caps_len, a->layout.caps);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_accept (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareAccept *a = &msg->u.accept;
  gsize var;

  a->schema_major = RD16 (p, GpuShareWireAccept, schema_major);
  a->schema_minor = RD16 (p, GpuShareWireAccept, schema_minor);
  if (a->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  a->mem_type = RD32 (p, GpuShareWireAccept, mem_type);
  a->flags = RD32 (p, GpuShareWireAccept, flags);
  a->pid = RD32 (p, GpuShareWireAccept, pid);
  a->instance = RD64 (p, GpuShareWireAccept, instance);
  a->name_len = RD32 (p, GpuShareWireAccept, name_len);
  a->sync_mode = RD32 (p, GpuShareWireAccept, sync_mode);
  memcpy (a->uuid, p + OFF (GpuShareWireAccept, uuid), 16);
  a->reason_len = RD32 (p, GpuShareWireAccept, reason_len);

  if (a->name_len > GPUSHARE_MAX_NAME_LEN
      || a->reason_len > GPUSHARE_MAX_REASON_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  var = sizeof (GpuShareWireAccept);
  if (len - var < (gsize) a->name_len + a->reason_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, a->name_len, a->name);
  read_string (p + var + a->name_len, a->reason_len, a->reason);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_slots (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareSlots *s = &msg->u.slots;
  gsize var = sizeof (GpuShareWireSlots);

  s->epoch = RD64 (p, GpuShareWireSlots, epoch);
  s->slot_size = RD64 (p, GpuShareWireSlots, slot_size);
  s->n_slots = RD32 (p, GpuShareWireSlots, n_slots);
  s->mem_type = RD32 (p, GpuShareWireSlots, mem_type);
  s->sync_mode = RD32 (p, GpuShareWireSlots, sync_mode);
  s->n_sync_fds = RD32 (p, GpuShareWireSlots, n_sync_fds);
  s->sync_size = RD64 (p, GpuShareWireSlots, sync_size);
  s->n_handles = RD32 (p, GpuShareWireSlots, n_handles);
  s->side_pages = RD32 (p, GpuShareWireSlots, side_pages);
  if (s->n_handles > GPUSHARE_MAX_HANDLES)
    return GPUSHARE_PARSE_MALFORMED;
  if (len - var < (gsize) s->n_handles * GPUSHARE_EVENT_HANDLE_SIZE)
    return GPUSHARE_PARSE_TRUNCATED;
  memcpy (s->handles, p + var, s->n_handles * GPUSHARE_EVENT_HANDLE_SIZE);
  return GPUSHARE_PARSE_OK;
}

/* MAPPED and UNMAPPED */
static GpuShareParseResult
parse_mapped (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  msg->u.mapped.epoch = RD64 (p, GpuShareWireMapped, epoch);
  return GPUSHARE_PARSE_OK;
}

/* a FRAME's payload, of len bytes, at least its fixed part */
static void
read_frame (const guint8 * p, gsize len, GpuShareFrame * f)
{
  f->epoch = RD64 (p, GpuShareWireFrame, epoch);
  f->slot = RD32 (p, GpuShareWireFrame, slot);
  f->generation = RD32 (p, GpuShareWireFrame, generation);
  f->sequence = RD64 (p, GpuShareWireFrame, sequence);
  f->pts = RD64 (p, GpuShareWireFrame, pts);
  f->dts = RD64 (p, GpuShareWireFrame, dts);
  f->duration = RD64 (p, GpuShareWireFrame, duration);
  f->offset = RD64 (p, GpuShareWireFrame, offset);
  f->offset_end = RD64 (p, GpuShareWireFrame, offset_end);
  f->buffer_flags = RD32 (p, GpuShareWireFrame, buffer_flags);
  f->flags = RD32 (p, GpuShareWireFrame, flags);
  f->share = len >= sizeof (GpuShareWireFrameShare) ?
      RD32 (p, GpuShareWireFrameShare, share) : 0;
}

static GpuShareParseResult
parse_frame (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  read_frame (p, len, &msg->u.frame);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_lane (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareLaneInfo *l = &msg->u.lane;

  l->n_entries = RD32 (p, GpuShareWireLane, n_entries);
  l->entry_size = RD32 (p, GpuShareWireLane, entry_size);
  l->size = RD64 (p, GpuShareWireLane, size);
  if (len >= sizeof (GpuShareWireLane) + sizeof (GpuShareWireLaneMetas)) {
    p += sizeof (GpuShareWireLane);
    /* reserved: a newer minor's */
    l->meta_size = RD32 (p, GpuShareWireLaneMetas, meta_size);
  }
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_notice (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareNotice *n = &msg->u.notice;

  n->code = RD32 (p, GpuShareWireNotice, code);
  n->share = RD32 (p, GpuShareWireNotice, share);
  n->slots_held = RD32 (p, GpuShareWireNotice, slots_held);
  n->n_consumers = RD32 (p, GpuShareWireNotice, n_consumers);
  n->skipped = RD64 (p, GpuShareWireNotice, skipped);
  n->sequence = RD64 (p, GpuShareWireNotice, sequence);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_release (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareRelease *r = &msg->u.release;

  r->epoch = RD64 (p, GpuShareWireRelease, epoch);
  r->slot = RD32 (p, GpuShareWireRelease, slot);
  r->generation = RD32 (p, GpuShareWireRelease, generation);
  r->sequence = RD64 (p, GpuShareWireRelease, sequence);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_caps (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareCaps *c = &msg->u.caps;
  gsize var;

  c->flags = RD32 (p, GpuShareWireCaps, flags);
  c->latency = RD64 (p, GpuShareWireCaps, latency);
  read_layout_fixed (p + OFF (GpuShareWireCaps, layout), &c->layout);

  if (c->layout.caps_len > GPUSHARE_MAX_CAPS_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  var = sizeof (GpuShareWireCaps);
  if (len - var < c->layout.caps_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, c->layout.caps_len, c->layout.caps);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_eos (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  msg->u.eos.last_sequence = RD64 (p, GpuShareWireEos, last_sequence);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_goodbye (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareGoodbye *g = &msg->u.goodbye;

  g->reason = RD32 (p, GpuShareWireGoodbye, reason);
  if (len >= sizeof (GpuShareWireGoodbyeHeld)) {
    g->flags = RD32 (p, GpuShareWireGoodbyeHeld, flags);
    g->last_sequence = RD64 (p, GpuShareWireGoodbyeHeld, last_sequence);
  }
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_error (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareError *e = &msg->u.error;
  gsize var;

  e->code = RD32 (p, GpuShareWireError, code);
  e->text_len = RD32 (p, GpuShareWireError, text_len);

  if (e->text_len > GPUSHARE_MAX_TEXT_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  var = sizeof (GpuShareWireError);
  if (len - var < e->text_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, e->text_len, e->text);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_observe (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareObserve *o = &msg->u.observe;
  gsize var = sizeof (GpuShareWireObserve);

  o->schema_major = RD16 (p, GpuShareWireObserve, schema_major);
  o->schema_minor = RD16 (p, GpuShareWireObserve, schema_minor);
  if (o->schema_major != GPUSHARE_VERSION_MAJOR)
    return GPUSHARE_PARSE_BAD_VERSION;
  o->interval_ms = RD32 (p, GpuShareWireObserve, interval_ms);
  o->pid = RD32 (p, GpuShareWireObserve, pid);
  o->name_len = RD32 (p, GpuShareWireObserve, name_len);
  if (o->name_len > GPUSHARE_MAX_NAME_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  if (len - var < o->name_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, o->name_len, o->name);
  return GPUSHARE_PARSE_OK;
}

/* EVENT and STATUS: a word, then text_len (at most cap) bytes of text,
 * read NUL-terminated into text */
static GpuShareParseResult
parse_text (const guint8 * p, gsize len, guint32 cap, guint32 * word,
    guint32 * text_len, gchar * text)
{
  gsize var = sizeof (GpuShareWireText);

  *word = RD32 (p, GpuShareWireText, word);
  *text_len = RD32 (p, GpuShareWireText, text_len);
  if (*text_len > cap)
    return GPUSHARE_PARSE_MALFORMED;
  if (len - var < *text_len)
    return GPUSHARE_PARSE_TRUNCATED;
  read_string (p + var, *text_len, text);
  return GPUSHARE_PARSE_OK;
}

static GpuShareParseResult
parse_event (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareEvent *e = &msg->u.event;

  return parse_text (p, len, GPUSHARE_MAX_EVENT_LEN, &e->kind, &e->text_len,
      e->text);
}

static GpuShareParseResult
parse_status (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareStatus *st = &msg->u.status;

  return parse_text (p, len, GPUSHARE_MAX_STATUS_LEN, &st->flags,
      &st->text_len, st->text);
}

static GpuShareParseResult
parse_meta (const guint8 * p, gsize len, GpuShareMsg * msg)
{
  GpuShareMeta *m = &msg->u.meta;
  gsize var = sizeof (GpuShareWireMeta);

  m->sequence = RD64 (p, GpuShareWireMeta, sequence);
  m->n_entries = RD32 (p, GpuShareWireMeta, n_entries);
  m->data_len = RD32 (p, GpuShareWireMeta, data_len);
  if (m->data_len > GPUSHARE_MAX_META_LEN)
    return GPUSHARE_PARSE_MALFORMED;
  if (len - var < m->data_len)
    return GPUSHARE_PARSE_TRUNCATED;
  memcpy (m->data, p + var, m->data_len);
  return GPUSHARE_PARSE_OK;
}

GpuShareParseResult
gpushare_msg_parse (const GpuShareHeader * hdr, const guint8 * payload,
    gsize len, GpuShareMsg * msg)
{
  const MsgRow *row;
  GpuShareParseResult res;

  g_return_val_if_fail (hdr != NULL, GPUSHARE_PARSE_MALFORMED);
  g_return_val_if_fail (payload != NULL || len == 0, GPUSHARE_PARSE_MALFORMED);
  g_return_val_if_fail (msg != NULL, GPUSHARE_PARSE_MALFORMED);

  /* the header is the only framing: a payload of another length means the
   * caller and the peer disagree on where this message ends */
  if (hdr->payload_len != len)
    return GPUSHARE_PARSE_MALFORMED;
  /* the caller should have refused these at the header already; checked
   * again because the header struct is the caller's */
  if (len > GPUSHARE_MAX_PAYLOAD)
    return GPUSHARE_PARSE_TOO_LARGE;
  if (hdr->n_fds > GPUSHARE_MAX_FDS)
    return GPUSHARE_PARSE_BAD_FD_COUNT;

  /* zeroed so that strings end in NUL and nothing from a previous message
   * survives in fields this one does not set */
  memset (msg, 0, sizeof (*msg));

  row = msg_row (hdr->type);
  if (!row)
    return GPUSHARE_PARSE_UNKNOWN_TYPE;
  msg->type = (GpuShareMsgType) hdr->type;
  /* bytes past what this version reads are a newer minor's extension */
  if (len < row->info.fixed_size)
    return GPUSHARE_PARSE_TRUNCATED;
  /* PING has nothing to read: a newer minor's payload is ignored */
  if (row->parse) {
    res = row->parse (payload, len, msg);
    if (res != GPUSHARE_PARSE_OK)
      return res;
  }

  /* the very checks the builder runs */
  return check_msg (hdr->type, msg, hdr->n_fds);
}

/* Payload encoding.  Each writer gets exactly the room it needs. */

static void
write_layout_fixed (guint8 * p, const GpuShareLayout * l)
{
  guint i;

  WR64 (p, GpuShareWireLayout, epoch, l->epoch);
  WR64 (p, GpuShareWireLayout, frame_size, l->frame_size);
  WR64 (p, GpuShareWireLayout, slot_size, l->slot_size);
  WR32 (p, GpuShareWireLayout, n_slots, l->n_slots);
  WR32 (p, GpuShareWireLayout, n_planes, l->n_planes);
  for (i = 0; i < GPUSHARE_MAX_PLANES; i++) {
    wr64 (p + OFF (GpuShareWireLayout, offsets) + i * sizeof (guint64),
        l->offsets[i]);
    wr32 (p + OFF (GpuShareWireLayout, strides) + i * sizeof (gint32),
        (guint32) l->strides[i]);
  }
  WR32 (p, GpuShareWireLayout, caps_len, l->caps_len);
  WR32 (p, GpuShareWireLayout, reserved, 0);
}

/* Appends the header of a message of type with payload_len bytes of
 * payload and n_fds fds, and room for that payload.  Returns where the
 * payload goes, or NULL (out unchanged) when out cannot grow that far. */
static guint8 *
append_message (GByteArray * out, guint type, guint32 n_fds, gsize payload_len)
{
  gsize total;
  guint old_len;
  guint8 *p;

  /* the static assertions above make this impossible; kept so that a
   * future field cannot silently break it */
  if (payload_len > GPUSHARE_MAX_PAYLOAD)
    return NULL;
  total = GPUSHARE_HEADER_SIZE + payload_len;
  old_len = out->len;
  if (old_len > G_MAXUINT - total)
    return NULL;

  g_byte_array_set_size (out, old_len + total);
  p = out->data + old_len;

  WR32 (p, GpuShareHeader, magic, GPUSHARE_MAGIC);
  WR16 (p, GpuShareHeader, version_major, GPUSHARE_VERSION_MAJOR);
  WR16 (p, GpuShareHeader, version_minor, GPUSHARE_VERSION_MINOR);
  WR16 (p, GpuShareHeader, type, type);
  WR16 (p, GpuShareHeader, flags, 0);
  WR32 (p, GpuShareHeader, payload_len, payload_len);
  WR32 (p, GpuShareHeader, n_fds, n_fds);
  WR32 (p, GpuShareHeader, reserved, 0);
  return p + GPUSHARE_HEADER_SIZE;
}

/* One builder per type: it runs the very check the parser runs on that
 * type, sizes the payload from the body alone and writes it straight into
 * out, so that a small message costs only its own body. */

gboolean
gpushare_msg_build_announce (const GpuShareAnnounce * a, GByteArray * out)
{
  gsize var = sizeof (GpuShareWireAnnounce);
  guint8 *p;

  g_return_val_if_fail (a != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_announce (a) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_ANNOUNCE, 0,
      var + a->name_len + a->layout.caps_len);
  if (!p)
    return FALSE;
  WR16 (p, GpuShareWireAnnounce, schema_major, a->schema_major);
  WR16 (p, GpuShareWireAnnounce, schema_minor, a->schema_minor);
  WR32 (p, GpuShareWireAnnounce, mem_types, a->mem_types);
  WR32 (p, GpuShareWireAnnounce, flags, a->flags);
  WR32 (p, GpuShareWireAnnounce, pid, a->pid);
  WR32 (p, GpuShareWireAnnounce, uid, a->uid);
  WR32 (p, GpuShareWireAnnounce, name_len, a->name_len);
  WR64 (p, GpuShareWireAnnounce, instance, a->instance);
  WR64 (p, GpuShareWireAnnounce, latency, a->latency);
  write_layout_fixed (p + OFF (GpuShareWireAnnounce, layout), &a->layout);
  memcpy (p + OFF (GpuShareWireAnnounce, device_uuid), a->device.uuid, 16);
  WR32 (p, GpuShareWireAnnounce, device_caps, a->device.caps);
  WR32 (p, GpuShareWireAnnounce, sync_modes, a->device.sync_modes);
  WR32 (p, GpuShareWireAnnounce, compute_mode,
      (guint32) a->device.compute_mode);
  WR32 (p, GpuShareWireAnnounce, reserved, 0);
  memcpy (p + var, a->name, a->name_len);
  memcpy (p + var + a->name_len, a->layout.caps, a->layout.caps_len);
  return TRUE;
}

gboolean
gpushare_msg_build_accept (const GpuShareAccept * a, GByteArray * out)
{
  gsize var = sizeof (GpuShareWireAccept);
  guint8 *p;

  g_return_val_if_fail (a != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_accept (a) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_ACCEPT, 0,
      var + a->name_len + a->reason_len);
  if (!p)
    return FALSE;
  WR16 (p, GpuShareWireAccept, schema_major, a->schema_major);
  WR16 (p, GpuShareWireAccept, schema_minor, a->schema_minor);
  WR32 (p, GpuShareWireAccept, mem_type, a->mem_type);
  WR32 (p, GpuShareWireAccept, flags, a->flags);
  WR32 (p, GpuShareWireAccept, pid, a->pid);
  WR64 (p, GpuShareWireAccept, instance, a->instance);
  WR32 (p, GpuShareWireAccept, name_len, a->name_len);
  WR32 (p, GpuShareWireAccept, sync_mode, a->sync_mode);
  memcpy (p + OFF (GpuShareWireAccept, uuid), a->uuid, 16);
  WR32 (p, GpuShareWireAccept, reason_len, a->reason_len);
  WR32 (p, GpuShareWireAccept, reserved, 0);
  memcpy (p + var, a->name, a->name_len);
  memcpy (p + var + a->name_len, a->reason, a->reason_len);
  return TRUE;
}

gboolean
gpushare_msg_build_slots (const GpuShareSlots * s, guint32 n_fds,
    GByteArray * out)
{
  gsize var = sizeof (GpuShareWireSlots);
  gsize handles;
  guint8 *p;

  g_return_val_if_fail (s != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (n_fds > GPUSHARE_MAX_FDS || check_slots (s, n_fds) != GPUSHARE_PARSE_OK)
    return FALSE;
  handles = (gsize) s->n_handles * GPUSHARE_EVENT_HANDLE_SIZE;
  p = append_message (out, GPUSHARE_MSG_SLOTS, n_fds, var + handles);
  if (!p)
    return FALSE;
  WR64 (p, GpuShareWireSlots, epoch, s->epoch);
  WR64 (p, GpuShareWireSlots, slot_size, s->slot_size);
  WR32 (p, GpuShareWireSlots, n_slots, s->n_slots);
  WR32 (p, GpuShareWireSlots, mem_type, s->mem_type);
  WR32 (p, GpuShareWireSlots, sync_mode, s->sync_mode);
  WR32 (p, GpuShareWireSlots, n_sync_fds, s->n_sync_fds);
  WR64 (p, GpuShareWireSlots, sync_size, s->sync_size);
  WR32 (p, GpuShareWireSlots, n_handles, s->n_handles);
  WR32 (p, GpuShareWireSlots, side_pages, s->side_pages);
  memcpy (p + var, s->handles, handles);
  return TRUE;
}

gboolean
gpushare_msg_build_mapped (GpuShareMsgType type, guint64 epoch,
    GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (out != NULL, FALSE);

  /* the two share their body, and nothing else does */
  if (type != GPUSHARE_MSG_MAPPED && type != GPUSHARE_MSG_UNMAPPED)
    return FALSE;
  p = append_message (out, type, 0, sizeof (GpuShareWireMapped));
  if (!p)
    return FALSE;
  WR64 (p, GpuShareWireMapped, epoch, epoch);
  return TRUE;
}

/* a FRAME's payload: share and its reserved word only with want_share */
static void
write_frame (guint8 * p, const GpuShareFrame * f, gboolean want_share)
{
  WR64 (p, GpuShareWireFrame, epoch, f->epoch);
  WR32 (p, GpuShareWireFrame, slot, f->slot);
  WR32 (p, GpuShareWireFrame, generation, f->generation);
  WR64 (p, GpuShareWireFrame, sequence, f->sequence);
  WR64 (p, GpuShareWireFrame, pts, f->pts);
  WR64 (p, GpuShareWireFrame, dts, f->dts);
  WR64 (p, GpuShareWireFrame, duration, f->duration);
  WR64 (p, GpuShareWireFrame, offset, f->offset);
  WR64 (p, GpuShareWireFrame, offset_end, f->offset_end);
  WR32 (p, GpuShareWireFrame, buffer_flags, f->buffer_flags);
  WR32 (p, GpuShareWireFrame, flags, f->flags);
  if (want_share) {
    WR32 (p, GpuShareWireFrameShare, share, f->share);
    WR32 (p, GpuShareWireFrameShare, reserved, 0);
  }
}

gboolean
gpushare_msg_build_frame (const GpuShareFrame * f, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (f != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  /* a lossless producer's FRAME is the 72 bytes of minor 5 */
  p = append_message (out, GPUSHARE_MSG_FRAME, 0, f->share ?
      sizeof (GpuShareWireFrameShare) : sizeof (GpuShareWireFrame));
  if (!p)
    return FALSE;
  write_frame (p, f, f->share != 0);
  return TRUE;
}

gboolean
gpushare_msg_build_lane (const GpuShareLaneInfo * l, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (l != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_lane (l, 1) != GPUSHARE_PARSE_OK)
    return FALSE;
  /* a lane without a meta region is what a producer of minor 7 sent */
  p = append_message (out, GPUSHARE_MSG_LANE, 1, sizeof (GpuShareWireLane) +
      (l->meta_size ? sizeof (GpuShareWireLaneMetas) : 0));
  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireLane, n_entries, l->n_entries);
  WR32 (p, GpuShareWireLane, entry_size, l->entry_size);
  WR64 (p, GpuShareWireLane, size, l->size);
  if (l->meta_size) {
    p += sizeof (GpuShareWireLane);
    WR32 (p, GpuShareWireLaneMetas, meta_size, l->meta_size);
    WR32 (p, GpuShareWireLaneMetas, reserved, 0);
  }
  return TRUE;
}

/* A release of a lane.  GPUSHARE_LANE_RELEASE_SIZE bytes.
 *
 *   off size field
 *     0    8 index            its position among the releases
 *     8   24 release          a RELEASE's payload
 */
G_STATIC_ASSERT (8 + sizeof (GpuShareWireRelease) ==
    GPUSHARE_LANE_RELEASE_SIZE);

void
gpushare_lane_release_build (guint64 index, const GpuShareRelease * r,
    guint8 * out)
{
  guint8 *p = out + 8;

  wr64 (out, index);
  WR64 (p, GpuShareWireRelease, epoch, r->epoch);
  WR32 (p, GpuShareWireRelease, slot, r->slot);
  WR32 (p, GpuShareWireRelease, generation, r->generation);
  WR64 (p, GpuShareWireRelease, sequence, r->sequence);
}

void
gpushare_lane_release_parse (const guint8 * in, guint64 * index,
    GpuShareRelease * r)
{
  const guint8 *p = in + 8;

  *index = rd64 (in);
  r->epoch = RD64 (p, GpuShareWireRelease, epoch);
  r->slot = RD32 (p, GpuShareWireRelease, slot);
  r->generation = RD32 (p, GpuShareWireRelease, generation);
  r->sequence = RD64 (p, GpuShareWireRelease, sequence);
}

/* Lane entries: the same bytes in either process, like a message */

gboolean
gpushare_lane_entry_build (const GpuShareLaneEntry * e, guint8 * out)
{
  guint8 *body = out + sizeof (GpuShareWireLaneEntry);
  guint32 length;

  g_return_val_if_fail (e != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  switch (e->kind) {
    case GPUSHARE_LANE_ENTRY_FRAME:
      /* the metas' reference only where there are metas: an entry without
       * is what a producer of minor 7 wrote */
      if (e->meta_len == 0 ? e->meta_at != 0 || e->meta_entries != 0 :
          e->meta_len > GPUSHARE_LANE_MAX_META_LEN || e->meta_entries == 0
          || e->meta_entries > GPUSHARE_MAX_META_ENTRIES)
        return FALSE;
      length = LANE_META_REF_AT +
          (e->meta_len ? sizeof (GpuShareWireLaneMetaRef) : 0);
      break;
    case GPUSHARE_LANE_ENTRY_MARK:
      /* marks count from 1: what is built parses */
      if (e->mark == 0)
        return FALSE;
      length = 8;
      break;
    default:
      return FALSE;
  }
  memset (out, 0, GPUSHARE_LANE_ENTRY_SIZE);
  WR64 (out, GpuShareWireLaneEntry, index, e->index);
  WR32 (out, GpuShareWireLaneEntry, kind, e->kind);
  WR32 (out, GpuShareWireLaneEntry, length, length);
  if (e->kind == GPUSHARE_LANE_ENTRY_FRAME) {
    write_frame (body, &e->frame, TRUE);
    wr64 (body + sizeof (GpuShareWireFrameShare), e->written_us);
    if (e->meta_len) {
      guint8 *ref = body + LANE_META_REF_AT;

      WR64 (ref, GpuShareWireLaneMetaRef, meta_at, e->meta_at);
      WR32 (ref, GpuShareWireLaneMetaRef, meta_len, e->meta_len);
      WR32 (ref, GpuShareWireLaneMetaRef, meta_entries, e->meta_entries);
    }
  } else
    wr64 (body, e->mark);
  return TRUE;
}

GpuShareParseResult
gpushare_lane_entry_parse (const guint8 * in, GpuShareLaneEntry * e)
{
  const guint8 *body = in + sizeof (GpuShareWireLaneEntry);
  guint32 length;

  g_return_val_if_fail (in != NULL, GPUSHARE_PARSE_MALFORMED);
  g_return_val_if_fail (e != NULL, GPUSHARE_PARSE_MALFORMED);

  memset (e, 0, sizeof (*e));
  e->index = RD64 (in, GpuShareWireLaneEntry, index);
  e->kind = RD32 (in, GpuShareWireLaneEntry, kind);
  length = RD32 (in, GpuShareWireLaneEntry, length);
  if (length > GPUSHARE_LANE_ENTRY_SIZE - sizeof (GpuShareWireLaneEntry))
    return GPUSHARE_PARSE_MALFORMED;
  switch (e->kind) {
    case GPUSHARE_LANE_ENTRY_FRAME:
      if (length < sizeof (GpuShareWireFrame))
        return GPUSHARE_PARSE_TRUNCATED;
      read_frame (body, length, &e->frame);
      if (length >= sizeof (GpuShareWireFrameShare) + 8)
        e->written_us = rd64 (body + sizeof (GpuShareWireFrameShare));
      if (length >= LANE_META_REF_AT + sizeof (GpuShareWireLaneMetaRef)) {
        const guint8 *ref = body + LANE_META_REF_AT;

        e->meta_at = RD64 (ref, GpuShareWireLaneMetaRef, meta_at);
        e->meta_len = RD32 (ref, GpuShareWireLaneMetaRef, meta_len);
        e->meta_entries = RD32 (ref, GpuShareWireLaneMetaRef, meta_entries);
        /* the reader judges the place; the shape is the parser's */
        if (e->meta_len > GPUSHARE_LANE_MAX_META_LEN
            || (e->meta_len == 0) != (e->meta_entries == 0)
            || (e->meta_len == 0 && e->meta_at != 0)
            || e->meta_entries > GPUSHARE_MAX_META_ENTRIES)
          return GPUSHARE_PARSE_MALFORMED;
      }
      return GPUSHARE_PARSE_OK;
    case GPUSHARE_LANE_ENTRY_MARK:
      if (length < 8)
        return GPUSHARE_PARSE_TRUNCATED;
      e->mark = rd64 (body);
      /* marks count from 1 */
      return e->mark ? GPUSHARE_PARSE_OK : GPUSHARE_PARSE_MALFORMED;
    default:
      /* the lane is in order: an entry that cannot be read cannot be
       * skipped */
      return GPUSHARE_PARSE_MALFORMED;
  }
}

gboolean
gpushare_msg_build_notice (const GpuShareNotice * n, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (n != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_notice (n) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_NOTICE, 0, sizeof (GpuShareWireNotice));
  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireNotice, code, n->code);
  WR32 (p, GpuShareWireNotice, share, n->share);
  WR32 (p, GpuShareWireNotice, slots_held, n->slots_held);
  WR32 (p, GpuShareWireNotice, n_consumers, n->n_consumers);
  WR64 (p, GpuShareWireNotice, skipped, n->skipped);
  WR64 (p, GpuShareWireNotice, sequence, n->sequence);
  return TRUE;
}

gboolean
gpushare_msg_build_release (const GpuShareRelease * r, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (r != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  p = append_message (out, GPUSHARE_MSG_RELEASE, 0,
      sizeof (GpuShareWireRelease));
  if (!p)
    return FALSE;
  WR64 (p, GpuShareWireRelease, epoch, r->epoch);
  WR32 (p, GpuShareWireRelease, slot, r->slot);
  WR32 (p, GpuShareWireRelease, generation, r->generation);
  WR64 (p, GpuShareWireRelease, sequence, r->sequence);
  return TRUE;
}

gboolean
gpushare_msg_build_caps (const GpuShareCaps * c, GByteArray * out)
{
  gsize var = sizeof (GpuShareWireCaps);
  guint8 *p;

  g_return_val_if_fail (c != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_caps (c) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_CAPS, 0, var + c->layout.caps_len);
  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireCaps, flags, c->flags);
  WR32 (p, GpuShareWireCaps, reserved, 0);
  WR64 (p, GpuShareWireCaps, latency, c->latency);
  write_layout_fixed (p + OFF (GpuShareWireCaps, layout), &c->layout);
  memcpy (p + var, c->layout.caps, c->layout.caps_len);
  return TRUE;
}

gboolean
gpushare_msg_build_eos (guint64 last_sequence, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (out != NULL, FALSE);

  p = append_message (out, GPUSHARE_MSG_EOS, 0, sizeof (GpuShareWireEos));
  if (!p)
    return FALSE;
  WR64 (p, GpuShareWireEos, last_sequence, last_sequence);
  return TRUE;
}

gboolean
gpushare_msg_build_observe (const GpuShareObserve * o, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (o != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_observe (o) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_OBSERVE, 0,
      sizeof (GpuShareWireObserve) + o->name_len);
  if (!p)
    return FALSE;
  WR16 (p, GpuShareWireObserve, schema_major, o->schema_major);
  WR16 (p, GpuShareWireObserve, schema_minor, o->schema_minor);
  WR32 (p, GpuShareWireObserve, interval_ms, o->interval_ms);
  WR32 (p, GpuShareWireObserve, pid, o->pid);
  WR32 (p, GpuShareWireObserve, name_len, o->name_len);
  memcpy (p + sizeof (GpuShareWireObserve), o->name, o->name_len);
  return TRUE;
}

/* EVENT and STATUS, checked already */
static gboolean
build_text (GpuShareMsgType type, guint32 word, const gchar * text,
    guint32 text_len, GByteArray * out)
{
  guint8 *p = append_message (out, type, 0,
      sizeof (GpuShareWireText) + text_len);

  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireText, word, word);
  WR32 (p, GpuShareWireText, text_len, text_len);
  memcpy (p + sizeof (GpuShareWireText), text, text_len);
  return TRUE;
}

gboolean
gpushare_msg_build_status (const GpuShareStatus * st, GByteArray * out)
{
  g_return_val_if_fail (st != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  return check_status (st) == GPUSHARE_PARSE_OK
      && build_text (GPUSHARE_MSG_STATUS, st->flags, st->text, st->text_len,
      out);
}

gboolean
gpushare_msg_build_event (const GpuShareEvent * e, GByteArray * out)
{
  g_return_val_if_fail (e != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  return check_event (e) == GPUSHARE_PARSE_OK
      && build_text (GPUSHARE_MSG_EVENT, e->kind, e->text, e->text_len, out);
}

gboolean
gpushare_msg_build_meta (const GpuShareMeta * m, GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (m != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_meta (m) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_META, 0,
      sizeof (GpuShareWireMeta) + m->data_len);
  if (!p)
    return FALSE;
  WR64 (p, GpuShareWireMeta, sequence, m->sequence);
  WR32 (p, GpuShareWireMeta, n_entries, m->n_entries);
  WR32 (p, GpuShareWireMeta, data_len, m->data_len);
  memcpy (p + sizeof (GpuShareWireMeta), m->data, m->data_len);
  return TRUE;
}

gboolean
gpushare_msg_build_goodbye (const GpuShareGoodbye * g, GByteArray * out)
{
  gboolean held;
  guint8 *p;

  g_return_val_if_fail (g != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  /* a peer of minor 2 or older gets the 4 bytes it knows, unless there is
   * something it could not be told in them */
  held = goodbye_has_held (g);
  p = append_message (out, GPUSHARE_MSG_GOODBYE, 0,
      held ? sizeof (GpuShareWireGoodbyeHeld) : sizeof (GpuShareWireGoodbye));
  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireGoodbye, reason, g->reason);
  if (held) {
    WR32 (p, GpuShareWireGoodbyeHeld, flags, g->flags);
    WR64 (p, GpuShareWireGoodbyeHeld, last_sequence, g->last_sequence);
  }
  return TRUE;
}

gboolean
gpushare_msg_build_error (guint32 code, const gchar * text, guint32 text_len,
    GByteArray * out)
{
  guint8 *p;

  g_return_val_if_fail (text != NULL || text_len == 0, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (check_string (text, text_len, GPUSHARE_MAX_TEXT_LEN) != GPUSHARE_PARSE_OK)
    return FALSE;
  p = append_message (out, GPUSHARE_MSG_ERROR, 0,
      sizeof (GpuShareWireError) + text_len);
  if (!p)
    return FALSE;
  WR32 (p, GpuShareWireError, code, code);
  WR32 (p, GpuShareWireError, text_len, text_len);
  if (text_len)
    memcpy (p + sizeof (GpuShareWireError), text, text_len);
  return TRUE;
}

gboolean
gpushare_msg_build_ping (GByteArray * out)
{
  g_return_val_if_fail (out != NULL, FALSE);

  return append_message (out, GPUSHARE_MSG_PING, 0, 0) != NULL;
}

/* The message table.  The rows' functions take a GpuShareMsg and hand
 * its body to the typed check or builder, which take the body alone. */

static GpuShareParseResult
msg_check_announce (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_announce (&msg->u.announce);
}

static GpuShareParseResult
msg_check_accept (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_accept (&msg->u.accept);
}

static GpuShareParseResult
msg_check_slots (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_slots (&msg->u.slots, n_fds);
}

static GpuShareParseResult
msg_check_caps (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_caps (&msg->u.caps);
}

static GpuShareParseResult
msg_check_error (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_error (&msg->u.error);
}

static GpuShareParseResult
msg_check_meta (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_meta (&msg->u.meta);
}

static GpuShareParseResult
msg_check_event (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_event (&msg->u.event);
}

static GpuShareParseResult
msg_check_observe (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_observe (&msg->u.observe);
}

static GpuShareParseResult
msg_check_status (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_status (&msg->u.status);
}

static GpuShareParseResult
msg_check_lane (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_lane (&msg->u.lane, n_fds);
}

static GpuShareParseResult
msg_check_notice (const GpuShareMsg * msg, guint32 n_fds)
{
  return check_notice (&msg->u.notice);
}

static gboolean
msg_build_announce (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_announce (&msg->u.announce, out);
}

static gboolean
msg_build_accept (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_accept (&msg->u.accept, out);
}

static gboolean
msg_build_slots (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_slots (&msg->u.slots, n_fds, out);
}

/* MAPPED and UNMAPPED */
static gboolean
msg_build_mapped (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_mapped (msg->type, msg->u.mapped.epoch, out);
}

static gboolean
msg_build_frame (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_frame (&msg->u.frame, out);
}

static gboolean
msg_build_release (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_release (&msg->u.release, out);
}

static gboolean
msg_build_caps (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_caps (&msg->u.caps, out);
}

static gboolean
msg_build_eos (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_eos (msg->u.eos.last_sequence, out);
}

static gboolean
msg_build_goodbye (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_goodbye (&msg->u.goodbye, out);
}

static gboolean
msg_build_error (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_error (msg->u.error.code, msg->u.error.text,
      msg->u.error.text_len, out);
}

static gboolean
msg_build_ping (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_ping (out);
}

static gboolean
msg_build_meta (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_meta (&msg->u.meta, out);
}

static gboolean
msg_build_event (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_event (&msg->u.event, out);
}

static gboolean
msg_build_observe (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_observe (&msg->u.observe, out);
}

static gboolean
msg_build_status (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_status (&msg->u.status, out);
}

static gboolean
msg_build_lane (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  /* the one fd of a LANE is the lane: no other count goes on the wire */
  return n_fds == 1 && gpushare_msg_build_lane (&msg->u.lane, out);
}

static gboolean
msg_build_notice (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  return gpushare_msg_build_notice (&msg->u.notice, out);
}

/* the directions, short, so that a row fits its three lines */
#define P2C GPUSHARE_DIR_PRODUCER_TO_CONSUMER
#define C2P GPUSHARE_DIR_CONSUMER_TO_PRODUCER
#define BOTH GPUSHARE_DIR_BOTH
#define O2P GPUSHARE_DIR_OBSERVER_TO_PRODUCER
#define P2O GPUSHARE_DIR_PRODUCER_TO_OBSERVER

/* Indexed by type; row 0 and any row left out are unknown types.  The
 * fixed size is the wire struct of what every peer that knows the type
 * sends: a later minor's tail (FRAME's share, GOODBYE's HELD) is read
 * only when the payload holds it.  Only SLOTS and LANE carry fds: SLOTS's
 * count check_slots () judges against its memory type and sync mode, a
 * LANE carries exactly one. */
static const MsgRow msg_table[] = {
  [GPUSHARE_MSG_ANNOUNCE] = {{"ANNOUNCE", P2C, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireAnnounce), FALSE},
      parse_announce, msg_check_announce, msg_build_announce},
  [GPUSHARE_MSG_ACCEPT] = {{"ACCEPT", C2P, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireAccept), FALSE},
      parse_accept, msg_check_accept, msg_build_accept},
  [GPUSHARE_MSG_SLOTS] = {{"SLOTS", P2C, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireSlots), TRUE},
      parse_slots, msg_check_slots, msg_build_slots},
  [GPUSHARE_MSG_MAPPED] = {{"MAPPED", C2P, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireMapped), FALSE},
      parse_mapped, NULL, msg_build_mapped},
  /* share too has no check: past the ring's size it limits nothing */
  [GPUSHARE_MSG_FRAME] = {{"FRAME", P2C, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireFrame), FALSE},
      parse_frame, NULL, msg_build_frame},
  [GPUSHARE_MSG_RELEASE] = {{"RELEASE", C2P, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireRelease), FALSE},
      parse_release, NULL, msg_build_release},
  [GPUSHARE_MSG_CAPS] = {{"CAPS", P2C, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireCaps), FALSE},
      parse_caps, msg_check_caps, msg_build_caps},
  [GPUSHARE_MSG_EOS] = {{"EOS", P2C, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireEos), FALSE},
      parse_eos, NULL, msg_build_eos},
  [GPUSHARE_MSG_GOODBYE] = {{"GOODBYE", BOTH, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireGoodbye), FALSE},
      parse_goodbye, NULL, msg_build_goodbye},
  [GPUSHARE_MSG_ERROR] = {{"ERROR", BOTH, GPUSHARE_MINOR_BASE,
          sizeof (GpuShareWireError), FALSE},
      parse_error, msg_check_error, msg_build_error},
  [GPUSHARE_MSG_PING] = {{"PING", BOTH, GPUSHARE_MINOR_PING,
          0, FALSE},
      NULL, NULL, msg_build_ping},
  [GPUSHARE_MSG_UNMAPPED] = {{"UNMAPPED", C2P, GPUSHARE_MINOR_UNMAPPED,
          sizeof (GpuShareWireMapped), FALSE},
      parse_mapped, NULL, msg_build_mapped},
  [GPUSHARE_MSG_META] = {{"META", P2C, GPUSHARE_MINOR_META,
          sizeof (GpuShareWireMeta), FALSE},
      parse_meta, msg_check_meta, msg_build_meta},
  [GPUSHARE_MSG_EVENT] = {{"EVENT", P2C, GPUSHARE_MINOR_EVENT,
          sizeof (GpuShareWireText), FALSE},
      parse_event, msg_check_event, msg_build_event},
  [GPUSHARE_MSG_OBSERVE] = {{"OBSERVE", O2P, GPUSHARE_MINOR_OBSERVE,
          sizeof (GpuShareWireObserve), FALSE},
      parse_observe, msg_check_observe, msg_build_observe},
  [GPUSHARE_MSG_STATUS] = {{"STATUS", P2O, GPUSHARE_MINOR_OBSERVE,
          sizeof (GpuShareWireText), FALSE},
      parse_status, msg_check_status, msg_build_status},
  [GPUSHARE_MSG_NOTICE] = {{"NOTICE", P2C, GPUSHARE_MINOR_NOTICE,
          sizeof (GpuShareWireNotice), FALSE},
      parse_notice, msg_check_notice, msg_build_notice},
  [GPUSHARE_MSG_LANE] = {{"LANE", P2C, GPUSHARE_MINOR_LANE,
          sizeof (GpuShareWireLane), TRUE},
      parse_lane, msg_check_lane, msg_build_lane},
};

#undef P2C
#undef C2P
#undef BOTH
#undef O2P
#undef P2O

/* a row for every type up to the last one the header names, none past it */
G_STATIC_ASSERT (G_N_ELEMENTS (msg_table) == GPUSHARE_MSG_LAST + 1);

static const MsgRow *
msg_row (guint type)
{
  if (type >= G_N_ELEMENTS (msg_table) || msg_table[type].info.name == NULL)
    return NULL;
  return &msg_table[type];
}

const GpuShareMsgInfo *
gpushare_msg_info (guint type)
{
  const MsgRow *row = msg_row (type);

  return row ? &row->info : NULL;
}

gboolean
gpushare_msg_build (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  const MsgRow *row;

  g_return_val_if_fail (msg != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  /* what check_msg () refuses before looking at the body: too many fds,
   * fds on a type that carries none; and never send what nobody could
   * decode */
  if (n_fds > GPUSHARE_MAX_FDS)
    return FALSE;
  row = msg_row (msg->type);
  if (!row || (!row->info.carries_fds && n_fds != 0))
    return FALSE;
  return row->build (msg, n_fds, out);
}

gboolean
gpushare_layout_set_caps (GpuShareLayout * layout, const gchar * caps)
{
  gsize len;

  g_return_val_if_fail (layout != NULL, FALSE);
  g_return_val_if_fail (caps != NULL, FALSE);

  /* refuses, leaving layout as it was, whatever the builder would refuse:
   * too long, empty, or not UTF-8 (strlen already rules out a NUL) */
  len = strlen (caps);
  if (len == 0 || len > GPUSHARE_MAX_CAPS_LEN)
    return FALSE;
  if (!g_utf8_validate (caps, len, NULL))
    return FALSE;
  memcpy (layout->caps, caps, len + 1);
  layout->caps_len = len;
  return TRUE;
}

gsize
gpushare_utf8_prefix (const gchar * text, gsize max)
{
  const gchar *end;

  g_utf8_validate_len (text, strnlen (text, max), &end);
  return end - text;
}

const gchar *
gpushare_msg_type_to_string (guint type)
{
  const MsgRow *row = msg_row (type);

  return row ? row->info.name : "UNKNOWN";
}

const gchar *
gpushare_parse_result_to_string (GpuShareParseResult res)
{
  switch (res) {
    case GPUSHARE_PARSE_OK:
      return "ok";
    case GPUSHARE_PARSE_NEED_MORE:
      return "need more data";
    case GPUSHARE_PARSE_BAD_MAGIC:
      return "bad magic";
    case GPUSHARE_PARSE_BAD_VERSION:
      return "unsupported major version";
    case GPUSHARE_PARSE_TOO_LARGE:
      return "payload too large";
    case GPUSHARE_PARSE_BAD_FD_COUNT:
      return "wrong number of file descriptors";
    case GPUSHARE_PARSE_TRUNCATED:
      return "truncated payload";
    case GPUSHARE_PARSE_MALFORMED:
      return "malformed payload";
    case GPUSHARE_PARSE_UNKNOWN_TYPE:
      return "unknown message type";
    default:
      return "unknown parse result";
  }
}

const gchar *
gpushare_error_code_to_string (GpuShareErrorCode code)
{
  switch (code) {
    case GPUSHARE_ERR_NONE:
      return "none";
    case GPUSHARE_ERR_PROTOCOL:
      return "protocol error";
    case GPUSHARE_ERR_VERSION:
      return "unsupported version";
    case GPUSHARE_ERR_NOT_AUTHORIZED:
      return "not authorized";
    case GPUSHARE_ERR_UNSUPPORTED:
      return "no common memory type";
    case GPUSHARE_ERR_RESOURCE:
      return "resource error";
    case GPUSHARE_ERR_TOO_MANY_CLIENTS:
      return "too many clients";
    case GPUSHARE_ERR_TIMEOUT:
      return "timeout";
    case GPUSHARE_ERR_SHUTDOWN:
      return "shutdown";
    case GPUSHARE_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown error";
  }
}

gboolean
gpushare_mem_type_is_host (guint32 type)
{
  return type != 0 && (type & ~GPUSHARE_MEM_HOST_MASK) == 0;
}

guint
gpushare_slots_fd_count (const GpuShareSlots * s)
{
  return (slot_handles (s) ? 0 : s->n_slots) + s->n_sync_fds +
      (s->side_pages ? 1 : 0);
}

guint
gpushare_mem_type_index (guint32 type)
{
  g_return_val_if_fail (type != 0 && (type & (type - 1)) == 0, 0);
  return (guint) g_bit_nth_lsf (type, -1);
}

const gchar *
gpushare_mem_type_to_string (GpuShareMemType type)
{
  switch (type) {
    case GPUSHARE_MEM_SYSTEM:
      return "system";
    case GPUSHARE_MEM_CUDA_VMM:
      return "cuda-vmm";
    case GPUSHARE_MEM_CUDA_LEGACY:
      return "cuda-legacy";
    case GPUSHARE_MEM_CUDA_FABRIC:
      return "cuda-fabric";
    case GPUSHARE_MEM_HOST_TEST:
      return "host-test";
    default:
      return "unknown";
  }
}

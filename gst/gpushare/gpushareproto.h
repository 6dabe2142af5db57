/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare wire codec: bytes in, typed messages out, and back.
 *
 * Pure functions: no sockets, no GStreamer objects, no allocation sized by
 * peer input.  Every length is checked against a compile-time cap before it
 * is used, which is what makes this file fuzzable on its own.
 *
 * One message on the control socket (a Unix stream socket) is a frozen
 * 24-byte little-endian header followed by payload_len bytes of payload.
 * File descriptors travel as SCM_RIGHTS with the first byte of the message
 * that carries them; the header says how many.
 *
 *   producer (gpusharesink)                     consumer (gpusharesrc)
 *        |                                            |
 *        |  <------------- connect() -----------------|
 *        |  (SO_PEERCRED checked before anything)     |
 *        |--- ANNOUNCE (version, identity, caps, ---->|
 *        |      layout, ring, memory types, GPU)      |
 *        |<-- ACCEPT (identity, chosen memory, sync) -|
 *        |--- SLOTS (epoch, slot fds or memory ---->|  import + map once
 *        |      handles [+ sync fd or event handles]) |
 *        |<-- MAPPED (epoch) -------------------------|
 *        |                                            |
 *        |--- FRAME (epoch, slot, generation, seq, -->|  wrap slot, push
 *        |      pts, dts, duration, offsets, flags)   |
 *        |<-- RELEASE (epoch, slot, generation, seq) -|  last unref
 *        |            ... repeated ...                |
 *        |--- CAPS (layout, maybe new epoch) -------->|  at a frame boundary
 *        |--- SLOTS (new epoch) --------------------->|  only if epoch changed
 *        |<-- MAPPED (new epoch) ---------------------|
 *        |--- EOS ----------------------------------->|
 *        |--- GOODBYE / ERROR (code, text) ---------->|  either direction
 *
 *   consumer -> producer, leaving while buffers still read slots (minor 3):
 *        |<-- RELEASE ... (every slot nothing reads) -|
 *        |<-- GOODBYE (HELD, last sequence) ----------|  the rest quarantined
 *
 *   at any time after connect(), either direction (minor 1):
 *        |--- PING (empty) -------------------------->|  idle for an interval
 *        |<-- PING (empty) ---------------------------|
 *   a peer silent for 3 intervals is gone (dropped: timeout)
 *
 *   consumer -> producer, once it closed the slots of an epoch (minor 2):
 *        |<-- UNMAPPED (epoch) -----------------------|
 *
 *   leaky producer -> consumer (minor 6): each FRAME says the consumer's
 *   share of the ring; one that was skipped for a while is told so, once:
 *        |--- NOTICE (STALLED, share, slots held) --->|
 *
 * docs/protocol.md describes every field.
 */

#ifndef __GPUSHARE_PROTO_H__
#define __GPUSHARE_PROTO_H__

#include <glib.h>

G_BEGIN_DECLS

#define GPUSHARE_MAGIC 0x48535047u      /* "GPSH" as little-endian bytes */
#define GPUSHARE_VERSION_MAJOR 1
#define GPUSHARE_VERSION_MINOR 13

/* The minor version that added each feature.  A minor only adds (new
 * types, longer payloads, meaning for bits that were 0), so a feature
 * goes to a peer only when the minor it speaks (its headers'
 * version_minor, its ANNOUNCE's or ACCEPT's schema_minor) is at least
 * this: an older peer would ignore it, or could not take it.  One minor
 * may add several features; each has its name, so that a check of a
 * peer's minor says which feature it is about. */
#define GPUSHARE_MINOR_BASE 0           /* ANNOUNCE .. ERROR */
#define GPUSHARE_MINOR_PING 1           /* PING and the heartbeat */
#define GPUSHARE_MINOR_UNMAPPED 2       /* UNMAPPED */
#define GPUSHARE_MINOR_GOODBYE_HELD 3   /* GOODBYE's flags, last_sequence */
#define GPUSHARE_MINOR_SEALED 3         /* system-memory slots sealed against
                                         * writes, which a consumer demands */
#define GPUSHARE_MINOR_META 4           /* META */
#define GPUSHARE_MINOR_EVENT 4          /* EVENT */
#define GPUSHARE_MINOR_OBSERVE 5        /* OBSERVE and STATUS */
#define GPUSHARE_MINOR_SHARE 6          /* FRAME's share of a leaky ring */
#define GPUSHARE_MINOR_NOTICE 6         /* NOTICE */
#define GPUSHARE_MINOR_LANE 7           /* LANE: frames through a lane in
                                         * shared memory */
#define GPUSHARE_MINOR_HEADS_UP 8       /* a lane's announced word */
#define GPUSHARE_MINOR_LANE_ALIVE 8     /* what a peer reads from a lane
                                         * counts for its heartbeat */
#define GPUSHARE_MINOR_LANE_METAS 9     /* a frame's metas in its lane's
                                         * meta region */
#define GPUSHARE_MINOR_SIDE 10          /* SLOTS's side memory, where
                                         * metas' large payloads go */
#define GPUSHARE_MINOR_DEVICE_SIDE 11   /* payloads in GPU memory, in the
                                         * room of a GPU slot past its
                                         * frame */
#define GPUSHARE_MINOR_HOST_WORDS 12    /* SLOTS's ready words in host
                                         * memory, beside the semaphore
                                         * block */
#define GPUSHARE_MINOR_WITHHELD 13      /* ANNOUNCE's flag: memory a
                                         * consumer could write withheld
                                         * from this one */

#define GPUSHARE_HEADER_SIZE 24
/* caps, checked before anything is allocated or copied */
#define GPUSHARE_MAX_PAYLOAD (16 * 1024)
#define GPUSHARE_MAX_FDS 67             /* per message: slots + 2 sync +
                                         * 1 side memory */
/* the ready words in host memory (SLOTS, since minor 12): a memfd of
 * exactly this size, ready[s] the 64-bit word at 8 * s */
#define GPUSHARE_HOST_WORDS_SIZE 4096
/* side memory (SLOTS, since minor 10): its unit, and a slot's at most */
#define GPUSHARE_SIDE_PAGE 4096
#define GPUSHARE_MAX_SIDE_PAGES (64 * 1024 * 1024 / GPUSHARE_SIDE_PAGE)
/* payloads in GPU memory (since minor 11) lie in the room of the frame's
 * GPU slot past the frame, which begins at the frame's size rounded up to
 * this; their offsets count from there */
#define GPUSHARE_DEVICE_SIDE_ALIGN 512
#define GPUSHARE_DEVICE_SIDE_START(frame_size) \
  (((guint64) (frame_size) + GPUSHARE_DEVICE_SIDE_ALIGN - 1) & \
   ~(guint64) (GPUSHARE_DEVICE_SIDE_ALIGN - 1))
#define GPUSHARE_MAX_SLOTS 64           /* ring size */
#define GPUSHARE_MAX_HOLDERS_WIRE 64    /* consumers of one producer */
#define GPUSHARE_MAX_PLANES 4
#define GPUSHARE_MAX_CAPS_LEN 4096      /* bytes, without NUL */
#define GPUSHARE_MAX_NAME_LEN 128       /* bytes, without NUL */
#define GPUSHARE_MAX_TEXT_LEN 512       /* bytes, without NUL */
/* META: the entries of one frame, and how many */
#define GPUSHARE_MAX_META_LEN (12 * 1024)
#define GPUSHARE_MAX_META_ENTRIES 64
/* EVENT: the serialised event, bytes without NUL */
#define GPUSHARE_MAX_EVENT_LEN 8192
/* STATUS: the producer's state as text, bytes without NUL */
#define GPUSHARE_MAX_STATUS_LEN (15 * 1024)
/* OBSERVE: how often an observer asks for a STATUS, ms */
#define GPUSHARE_MIN_OBSERVE_INTERVAL 100
#define GPUSHARE_MAX_OBSERVE_INTERVAL 60000
/* META entry header: kind (16), reserved (16), length (32) */
#define GPUSHARE_META_ENTRY_HEADER 8
/* 1 TiB: no slot is ever that large; guards size arithmetic */
#define GPUSHARE_MAX_SLOT_SIZE (G_GUINT64_CONSTANT (1) << 40)

typedef enum
{
  GPUSHARE_MSG_ANNOUNCE = 1,    /* P -> C */
  GPUSHARE_MSG_ACCEPT = 2,      /* C -> P */
  GPUSHARE_MSG_SLOTS = 3,       /* P -> C, slot fds [+ sync fd] */
  GPUSHARE_MSG_MAPPED = 4,      /* C -> P */
  GPUSHARE_MSG_FRAME = 5,       /* P -> C */
  GPUSHARE_MSG_RELEASE = 6,     /* C -> P */
  GPUSHARE_MSG_CAPS = 7,        /* P -> C */
  GPUSHARE_MSG_EOS = 8,         /* P -> C */
  GPUSHARE_MSG_GOODBYE = 9,     /* both */
  GPUSHARE_MSG_ERROR = 10,      /* both */
  GPUSHARE_MSG_PING = 11,       /* both, empty; since minor 1 */
  GPUSHARE_MSG_UNMAPPED = 12,   /* C -> P; since minor 2 */
  GPUSHARE_MSG_META = 13,       /* P -> C; since minor 4 */
  GPUSHARE_MSG_EVENT = 14,      /* P -> C; since minor 4 */
  GPUSHARE_MSG_OBSERVE = 15,    /* C -> P, instead of ACCEPT; since minor 5 */
  GPUSHARE_MSG_STATUS = 16,     /* P -> observer; since minor 5 */
  GPUSHARE_MSG_NOTICE = 17,     /* P -> C; since minor 6 */
  GPUSHARE_MSG_LANE = 18,       /* P -> C, the lane's fd; since minor 7 */
} GpuShareMsgType;

/* the highest type this version knows: every type from
 * GPUSHARE_MSG_ANNOUNCE to it has its row in the codec's table */
#define GPUSHARE_MSG_LAST GPUSHARE_MSG_LANE

/* who sends a message type */
typedef enum
{
  GPUSHARE_DIR_PRODUCER_TO_CONSUMER = 1,
  GPUSHARE_DIR_CONSUMER_TO_PRODUCER = 2,
  GPUSHARE_DIR_BOTH = 3,
  GPUSHARE_DIR_OBSERVER_TO_PRODUCER = 4,
  GPUSHARE_DIR_PRODUCER_TO_OBSERVER = 5,
} GpuShareMsgDirection;

/* What this version knows of one message type: its row of the codec's
 * table, from which the header check, the parser, the builder and
 * gpushare_msg_type_to_string () take what they know of it. */
typedef struct
{
  const gchar *name;            /* as gpushare_msg_type_to_string () */
  GpuShareMsgDirection direction;
  guint16 first_minor;          /* GPUSHARE_MINOR_*: the minor that added it */
  guint32 fixed_size;           /* bytes of its fixed part: a shorter
                                 * payload is TRUNCATED */
  gboolean carries_fds;         /* may carry fds, which its payload
                                 * check counts; every other known type
                                 * carries none (BAD_FD_COUNT) */
} GpuShareMsgInfo;

/* memory types, a bit each: offered as a mask, chosen as one bit */
typedef enum
{
  GPUSHARE_MEM_SYSTEM = 1 << 0,     /* sealed memfd, mapped read-only */
  GPUSHARE_MEM_CUDA_VMM = 1 << 1,   /* CUDA VMM, POSIX fd handles */
  GPUSHARE_MEM_CUDA_LEGACY = 1 << 2,        /* cuIpcGetMemHandle */
  GPUSHARE_MEM_CUDA_FABRIC = 1 << 3,        /* fabric handles (IMEX) */
  /* host memory of a second system-memory transfer that only the test
   * build registers (tests/plugin): it proves that a transfer is added
   * without touching the cores; a release build never offers it */
  GPUSHARE_MEM_HOST_TEST = 1 << 7,
} GpuShareMemType;

#define GPUSHARE_MEM_KNOWN_MASK 0x8fu
/* the memory types whose slots the host reads and writes directly, with
 * no synchronisation beyond the protocol's own (no sync mode): every
 * other one is device memory */
#define GPUSHARE_MEM_HOST_MASK \
  ((guint32) (GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_HOST_TEST))
#define GPUSHARE_MEM_N_TYPES 8
/* the memory types whose slots travel as handles in the SLOTS body, not
 * as fds */
#define GPUSHARE_MEM_HANDLE_MASK \
  ((guint32) (GPUSHARE_MEM_CUDA_LEGACY | GPUSHARE_MEM_CUDA_FABRIC))

/* synchronisation of a CUDA slot between producer and consumer, a bit each:
 * offered as a mask in ANNOUNCE, chosen as one bit in ACCEPT */
typedef enum
{
  GPUSHARE_SYNC_HOST = 1 << 0,  /* each side synchronises its stream */
  GPUSHARE_SYNC_SEMAPHORE = 1 << 1,     /* 64-bit words in shared VMM memory */
  GPUSHARE_SYNC_EVENT = 1 << 2, /* CUDA IPC events (needs a shared /dev/shm) */
} GpuShareSyncMode;

#define GPUSHARE_SYNC_KNOWN_MASK 0x7u
/* bytes of one opaque CUDA handle on the wire: a CUipcEventHandle, a
 * CUipcMemHandle or a CUmemFabricHandle */
#define GPUSHARE_HANDLE_SIZE 64
#define GPUSHARE_EVENT_HANDLE_SIZE GPUSHARE_HANDLE_SIZE
/* SLOTS carries at most a memory handle per slot (legacy and fabric
 * memory) and a ready and a done event per slot */
#define GPUSHARE_MAX_HANDLES (3 * GPUSHARE_MAX_SLOTS)
#define GPUSHARE_MAX_REASON_LEN 128     /* bytes, without NUL */

/* what the producer's GPU can do, announced so that a consumer decides
 * before it imports anything */
#define GPUSHARE_DEVICE_CAP_VMM_FD (1u << 0)    /* VMM export as POSIX fd */
#define GPUSHARE_DEVICE_CAP_FABRIC (1u << 1)    /* fabric handles */
#define GPUSHARE_DEVICE_CAP_IPC_EVENT (1u << 2)
#define GPUSHARE_DEVICE_CAP_MEM_OPS (1u << 3)   /* 64-bit stream mem ops */
#define GPUSHARE_DEVICE_CAP_LEGACY_IPC (1u << 4)        /* cuIpcGetMemHandle */
#define GPUSHARE_DEVICE_CAP_MIG (1u << 5)       /* a MIG instance */

/* the producer's GPU; all zero when it offers no GPU memory */
typedef struct
{
  guint8 uuid[16];
  guint32 caps;                 /* GPUSHARE_DEVICE_CAP_* */
  guint32 sync_modes;           /* GpuShareSyncMode mask offered */
  gint32 compute_mode;          /* CUcomputemode */
} GpuShareDevice;

/* ANNOUNCE / CAPS flags */
#define GPUSHARE_STREAM_FLAG_LIVE (1u << 0)
/* ANNOUNCE only (0 in CAPS), since minor 13: the producer offers GPU
 * memory, which a consumer that maps it could write, only to the consumers
 * it trusts with it (gpusharesink gpu-uids, gpu-gids), and this one is not
 * among them: mem_types lacks those types for this connection alone */
#define GPUSHARE_ANNOUNCE_FLAG_WITHHELD (1u << 1)

/* FRAME flags */
/* pts/dts are CLOCK_MONOTONIC nanoseconds, not stream times */
#define GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME (1u << 0)

/* ACCEPT flags (since minor 7) */
/* the consumer reads frames from a lane (LANE): a producer of minor 7 or
 * later that can make one sends it, and from then on every FRAME goes
 * there, never on the socket */
#define GPUSHARE_ACCEPT_FLAG_LANE (1u << 0)
/* (since minor 8) with a lane: the consumer asks to be told, through the
 * lane's announced word, when the producer begins to write a frame that
 * takes it a while (docs/protocol.md, "Heads-up") */
#define GPUSHARE_ACCEPT_FLAG_HEADS_UP (1u << 1)
/* (since minor 9) with a lane: the consumer takes a frame's metas from the
 * lane's meta region, beside its FRAME entry (docs/protocol.md, "Metas in
 * the lane") */
#define GPUSHARE_ACCEPT_FLAG_LANE_METAS (1u << 2)

/* GOODBYE flags (since minor 3) */
/* from a consumer: buffers alive in its process still read the slots it
 * holds whose FRAME had a sequence up to last_sequence; every other slot
 * it received was RELEASEd before this GOODBYE */
#define GPUSHARE_GOODBYE_FLAG_HELD (1u << 0)

typedef enum
{
  GPUSHARE_ERR_NONE = 0,
  GPUSHARE_ERR_PROTOCOL = 1,    /* malformed or out-of-order message */
  GPUSHARE_ERR_VERSION = 2,     /* unknown major version */
  GPUSHARE_ERR_NOT_AUTHORIZED = 3,      /* peer credentials refused */
  GPUSHARE_ERR_UNSUPPORTED = 4, /* no common memory type */
  GPUSHARE_ERR_RESOURCE = 5,    /* mapping or allocation failed */
  GPUSHARE_ERR_TOO_MANY_CLIENTS = 6,
  GPUSHARE_ERR_TIMEOUT = 7,
  GPUSHARE_ERR_SHUTDOWN = 8,    /* orderly stop */
  GPUSHARE_ERR_INTERNAL = 9,
} GpuShareErrorCode;

typedef enum
{
  GPUSHARE_PARSE_OK = 0,
  GPUSHARE_PARSE_NEED_MORE,     /* not an error: wait for more bytes */
  GPUSHARE_PARSE_BAD_MAGIC,
  GPUSHARE_PARSE_BAD_VERSION,   /* major version differs */
  GPUSHARE_PARSE_TOO_LARGE,     /* payload_len over GPUSHARE_MAX_PAYLOAD */
  GPUSHARE_PARSE_BAD_FD_COUNT,  /* fds where none belong, or too many */
  GPUSHARE_PARSE_TRUNCATED,     /* payload shorter than the message needs */
  GPUSHARE_PARSE_MALFORMED,     /* a field out of range */
  GPUSHARE_PARSE_UNKNOWN_TYPE,  /* not an error: ignore the message */
} GpuShareParseResult;

typedef struct
{
  guint32 magic;
  guint16 version_major;
  guint16 version_minor;
  guint16 type;
  guint16 flags;                /* reserved, 0 */
  guint32 payload_len;
  guint32 n_fds;
  guint32 reserved;             /* 0 */
} GpuShareHeader;

G_STATIC_ASSERT (sizeof (GpuShareHeader) == GPUSHARE_HEADER_SIZE);

/* Frame layout: shared by ANNOUNCE and CAPS */
typedef struct
{
  guint64 epoch;                /* ring allocation this layout lives in */
  guint64 frame_size;           /* bytes used by one frame in a slot */
  guint64 slot_size;            /* bytes of one slot, >= frame_size */
  guint32 n_slots;              /* 1 .. GPUSHARE_MAX_SLOTS */
  guint32 n_planes;             /* 0 .. GPUSHARE_MAX_PLANES */
  guint64 offsets[GPUSHARE_MAX_PLANES];
  gint32 strides[GPUSHARE_MAX_PLANES];
  guint32 caps_len;
  gchar caps[GPUSHARE_MAX_CAPS_LEN + 1];        /* NUL-terminated */
} GpuShareLayout;

typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 mem_types;            /* GpuShareMemType mask offered */
  guint32 flags;                /* GPUSHARE_STREAM_FLAG_* */
  guint32 pid;
  guint32 uid;
  guint64 instance;             /* random per sink start */
  guint64 latency;              /* ns, GST_CLOCK_TIME_NONE if unknown */
  GpuShareLayout layout;
  GpuShareDevice device;
  guint32 name_len;
  gchar name[GPUSHARE_MAX_NAME_LEN + 1];
} GpuShareAnnounce;

typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 mem_type;             /* exactly one GpuShareMemType bit */
  guint32 flags;                /* GPUSHARE_ACCEPT_FLAG_*; unknown bits
                                 * are carried, and mean nothing */
  guint32 pid;
  guint64 instance;
  guint32 sync_mode;            /* one GpuShareSyncMode bit for GPU memory,
                                 * 0 for system memory */
  guint8 uuid[16];              /* the consumer's GPU, zero if none */
  guint32 name_len;
  gchar name[GPUSHARE_MAX_NAME_LEN + 1];
  guint32 reason_len;           /* why the consumer chose mem_type */
  gchar reason[GPUSHARE_MAX_REASON_LEN + 1];
} GpuShareAccept;

typedef struct
{
  guint64 epoch;
  guint64 slot_size;
  guint32 n_slots;              /* VMM and system memory: the first
                                 * n_slots fds, one per slot */
  guint32 mem_type;             /* exactly one bit */
  guint32 sync_mode;            /* 0, or the one GpuShareSyncMode bit */
  guint32 n_sync_fds;           /* 0; with SYNC_SEMAPHORE 1, the semaphore
                                 * block, or since minor 12 2: the block,
                                 * then the ready words in host memory */
  guint64 sync_size;            /* bytes of the semaphore block */
  guint32 n_handles;            /* opaque handles: n_slots memory handles
                                 * for legacy and fabric memory, then with
                                 * SYNC_EVENT n_slots ready and n_slots
                                 * done events */
  guint32 side_pages;           /* since minor 10: each slot's side memory
                                 * (GPUSHARE_SIDE_PAGE bytes each), the last
                                 * fd; 0: none */
  guint8 handles[GPUSHARE_MAX_HANDLES][GPUSHARE_HANDLE_SIZE];
} GpuShareSlots;

typedef struct
{
  guint64 epoch;
} GpuShareMapped;

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
  guint32 buffer_flags;         /* GstBufferFlags */
  guint32 flags;                /* GPUSHARE_FRAME_FLAG_* */
  /* since minor 6: slots of the ring this consumer may hold at once
   * without missing frames (a leaky producer); 0: not limited (lossless,
   * or an older producer) */
  guint32 share;
} GpuShareFrame;

typedef struct
{
  guint64 epoch;
  guint32 slot;
  guint32 generation;
  guint64 sequence;
} GpuShareRelease;

typedef struct
{
  guint32 flags;                /* GPUSHARE_STREAM_FLAG_* */
  guint64 latency;
  GpuShareLayout layout;
} GpuShareCaps;

typedef struct
{
  guint64 last_sequence;
} GpuShareEos;

/* The metadata of the next FRAME (sequence), to a consumer of minor 4 or
 * later.  data holds n_entries entries, each GPUSHARE_META_ENTRY_HEADER
 * bytes (kind, reserved, length, little-endian) and length bytes of body,
 * back to back, filling data_len exactly: the parser checks that chain,
 * gpusharemeta.c what each kind's body says. */
/* A downstream event of the stream, in its place between the FRAMEs, to a
 * consumer of minor 4 or later: kind says which, text is what
 * GStreamer's serialisation of it gives (a tag list, a structure) */
typedef enum
{
  GPUSHARE_EVENT_TAGS = 1,      /* gst_tag_list_to_string () */
  GPUSHARE_EVENT_CUSTOM = 2,    /* CUSTOM_DOWNSTREAM: its structure */
  GPUSHARE_EVENT_CUSTOM_STICKY = 3,     /* CUSTOM_DOWNSTREAM_STICKY */
  /* STREAM_START: "stream-start, stream-id=(string)..., flags=(uint)...",
   * and group-id=(uint)... when it has one */
  GPUSHARE_EVENT_STREAM_START = 4,
} GpuShareEventKind;

typedef struct
{
  guint32 kind;                 /* GpuShareEventKind; others are skipped */
  guint32 text_len;             /* 1 .. GPUSHARE_MAX_EVENT_LEN */
  gchar text[GPUSHARE_MAX_EVENT_LEN + 1];       /* NUL-terminated */
} GpuShareEvent;

/* An observer's answer to ANNOUNCE, instead of ACCEPT: it takes no
 * frames and holds no slot; the producer sends it a STATUS every
 * interval_ms */
typedef struct
{
  guint16 schema_major;
  guint16 schema_minor;
  guint32 interval_ms;          /* GPUSHARE_MIN/MAX_OBSERVE_INTERVAL */
  guint32 pid;                  /* information only */
  guint32 name_len;
  gchar name[GPUSHARE_MAX_NAME_LEN + 1];
} GpuShareObserve;

/* The producer's state, to an observer: a GstStructure as text */
typedef struct
{
  guint32 flags;                /* none yet: 0 */
  guint32 text_len;             /* 1 .. GPUSHARE_MAX_STATUS_LEN */
  gchar text[GPUSHARE_MAX_STATUS_LEN + 1];      /* NUL-terminated */
} GpuShareStatus;

/* NOTICE codes; a consumer ignores codes it does not know */
typedef enum
{
  /* a leaky producer skipped this consumer for GPUSHARE_STALL_NOTICE_MS:
   * it holds its whole share of the ring */
  GPUSHARE_NOTICE_STALLED = 1,
} GpuShareNoticeCode;

/* how long a leaky producer skips a consumer before it says so */
#define GPUSHARE_STALL_NOTICE_MS 2000

/* Something the producer tells a consumer about how it is served */
typedef struct
{
  guint32 code;                 /* GpuShareNoticeCode */
  guint32 share;                /* the consumer's share of the ring */
  guint32 slots_held;           /* what it holds of it */
  guint32 n_consumers;          /* consumers the ring is shared by */
  guint64 skipped;              /* frames skipped, in a row */
  guint64 sequence;             /* the producer's newest frame */
} GpuShareNotice;

/* The lane a producer made for one consumer (docs/protocol.md, "Frame
 * lane"): a memfd of size bytes, its one fd, holding n_entries entries of
 * GPUSHARE_LANE_ENTRY_SIZE bytes after a header of
 * GPUSHARE_LANE_HEADER_SIZE bytes */
typedef struct
{
  guint32 n_entries;            /* a power of two, GPUSHARE_LANE_MIN_ENTRIES
                                 * .. GPUSHARE_LANE_MAX_ENTRIES */
  guint32 entry_size;           /* GPUSHARE_LANE_ENTRY_SIZE */
  guint64 size;                 /* gpushare_lane_size (n_entries,
                                 * meta_size) */
  guint32 meta_size;            /* (since minor 9) bytes of its meta region,
                                 * after the releases: 0 (none), or
                                 * GPUSHARE_LANE_MIN_META_REGION ..
                                 * GPUSHARE_LANE_MAX_META_REGION, a multiple
                                 * of GPUSHARE_LANE_META_ALIGN */
} GpuShareLaneInfo;

/* a lane's meta region (since minor 9) */
#define GPUSHARE_LANE_MIN_META_REGION (64 * 1024)
#define GPUSHARE_LANE_MAX_META_REGION (16 * 1024 * 1024)
#define GPUSHARE_LANE_META_ALIGN 64
/* the region of the lanes this version makes */
#define GPUSHARE_LANE_META_REGION (1024 * 1024)
/* the metas of one frame in a meta region: at most this many bytes of
 * entries (a META's payload holds GPUSHARE_MAX_META_LEN) */
#define GPUSHARE_LANE_MAX_META_LEN (256 * 1024)

#define GPUSHARE_LANE_HEADER_SIZE 128
#define GPUSHARE_LANE_ENTRY_SIZE 128
#define GPUSHARE_LANE_MIN_ENTRIES 16
#define GPUSHARE_LANE_MAX_ENTRIES 1024
/* offsets in the lane's header: the producer writes head and bell, the
 * consumer tail, waiting and bell; every word little-endian, read and
 * written whole (docs/protocol.md, "Frame lane") */
#define GPUSHARE_LANE_HEAD_OFFSET 0     /* u64: entries written */
#define GPUSHARE_LANE_BELL_OFFSET 64    /* u32: futex word */
#define GPUSHARE_LANE_WAITING_OFFSET 68 /* u32: not 0 while the consumer
                                         * may sleep on bell: 1 for an
                                         * entry or an announcement, 2
                                         * for an entry only */
/* the values of waiting: a consumer that would not poll for an announced
 * entry now says so, and the producer rings for its entries alone */
#define GPUSHARE_LANE_WAITING_ANY 1
#define GPUSHARE_LANE_WAITING_ENTRIES 2
#define GPUSHARE_LANE_TAIL_OFFSET 72    /* u64: entries read */
/* the way back: releases the consumer writes after the entries, which the
 * producer reads */
#define GPUSHARE_LANE_RHEAD_OFFSET 80   /* u64: releases written (consumer) */
#define GPUSHARE_LANE_RTAIL_OFFSET 88   /* u64: releases read (producer) */
#define GPUSHARE_LANE_RWAITING_OFFSET 96        /* u32: 1 while the producer
                                                 * waits for a slot
                                                 * (producer) */
/* (since minor 8) u64: head + 1 while the producer writes the frame of
 * entry head, for a consumer that asked for heads-up (producer) */
#define GPUSHARE_LANE_ANNOUNCED_OFFSET 104
#define GPUSHARE_LANE_RELEASE_SIZE 32

/* what one entry of a lane holds */
typedef enum
{
  GPUSHARE_LANE_ENTRY_FRAME = 1,        /* a FRAME's payload */
  GPUSHARE_LANE_ENTRY_MARK = 2, /* the next ordered message on the socket
                                 * (CAPS, META, EVENT, EOS) belongs here */
} GpuShareLaneEntryKind;

typedef struct
{
  guint64 index;                /* its position: entries written before it */
  guint32 kind;                 /* GpuShareLaneEntryKind */
  GpuShareFrame frame;          /* FRAME */
  guint64 written_us;           /* FRAME: the producer's CLOCK_MONOTONIC
                                 * when it wrote it, us; 0: not said */
  guint64 mark;                 /* MARK: 1, 2, ... in the order of the
                                 * socket's ordered messages */
  /* FRAME, since minor 9: its metas in the lane's meta region, meta_len
   * bytes of meta_entries entries (as a META's data) at meta_at, a
   * position in the region's bytes as written (its offset: meta_at modulo
   * the region's size); meta_len 0: none there */
  guint64 meta_at;
  guint32 meta_len;
  guint32 meta_entries;
} GpuShareLaneEntry;

typedef struct
{
  guint64 sequence;
  guint32 n_entries;            /* 1 .. GPUSHARE_MAX_META_ENTRIES */
  guint32 data_len;             /* <= GPUSHARE_MAX_META_LEN */
  guint8 data[GPUSHARE_MAX_META_LEN];
} GpuShareMeta;

/* A frame's metas in this process, of any length up to
 * GPUSHARE_LANE_MAX_META_LEN: what a META's payload said, or what the
 * frame's entry in a lane points at in its meta region (since minor 9).
 * One allocation: g_free () frees it. */
typedef struct
{
  guint64 sequence;
  guint32 n_entries;
  guint32 data_len;             /* <= capacity */
  /* producer: bytes of the frame's side memory its payloads took (0:
   * none; only a consumer that has the side memory can read them) */
  gsize side_len;
  /* producer: bytes of the GPU slots' room past the frame its payloads
   * took (0: none; only a consumer of minor 11 can read them) */
  gsize device_len;
  /* consumer: the microseconds its check took (gpusharesrc's metas-us) */
  guint64 check_us;
  gsize capacity;
  guint8 *data;                 /* capacity bytes, after the struct */
} GpuShareFrameMetas;

typedef struct
{
  guint32 reason;               /* GpuShareErrorCode, GPUSHARE_ERR_SHUTDOWN */
  /* since minor 3; on the wire only when one of them is not 0 */
  guint32 flags;                /* GPUSHARE_GOODBYE_FLAG_* */
  guint64 last_sequence;        /* the last FRAME the consumer received */
} GpuShareGoodbye;

typedef struct
{
  guint32 code;                 /* GpuShareErrorCode */
  guint32 text_len;
  gchar text[GPUSHARE_MAX_TEXT_LEN + 1];
} GpuShareError;

typedef struct
{
  GpuShareMsgType type;
  union
  {
    GpuShareAnnounce announce;
    GpuShareAccept accept;
    GpuShareSlots slots;
    GpuShareMapped mapped;      /* MAPPED and UNMAPPED */
    GpuShareFrame frame;
    GpuShareRelease release;
    GpuShareCaps caps;
    GpuShareEos eos;
    GpuShareMeta meta;
    GpuShareEvent event;
    GpuShareObserve observe;
    GpuShareStatus status;
    GpuShareNotice notice;
    GpuShareLaneInfo lane;
    GpuShareGoodbye goodbye;
    GpuShareError error;
  } u;
} GpuShareMsg;

/* type's row of the codec's table, or NULL for a type this version does
 * not know (one it ignores) */
const GpuShareMsgInfo *gpushare_msg_info (guint type);

/* Header.  Returns NEED_MORE when len < GPUSHARE_HEADER_SIZE.  Checks magic,
 * major version, payload cap and fd count: n_fds <= GPUSHARE_MAX_FDS, and 0
 * for every known type but SLOTS and LANE (whose fd counts, slot fds for
 * VMM and system memory plus n_sync_fds, and 1, are checked with their
 * payloads).  An
 * unknown type is OK here: the caller skips its payload and closes its
 * fds. */
GpuShareParseResult gpushare_header_parse (const guint8 * buf, gsize len,
    GpuShareHeader * hdr);

/* Payload of a message whose header parsed OK.  len must equal
 * hdr->payload_len.  Longer payloads than a type needs are accepted (room
 * for minor-version extensions); shorter ones are TRUNCATED.  Strings are
 * copied, NUL-terminated, and must be valid UTF-8 without NUL.  Returns
 * UNKNOWN_TYPE for types this version does not know (msg->type is then not
 * meaningful: use hdr->type).  After a failure msg is partly filled. */
GpuShareParseResult gpushare_msg_parse (const GpuShareHeader * hdr,
    const guint8 * payload, gsize len, GpuShareMsg * msg);

/* Appends header + payload of msg to out.  n_fds goes into the header.
 * Returns FALSE (appending nothing) if msg breaks a cap. */
gboolean gpushare_msg_build (const GpuShareMsg * msg, guint32 n_fds,
    GByteArray * out);

/* One builder per message type, from its body alone: the same bytes as
 * gpushare_msg_build () of a GpuShareMsg holding that body, without one
 * (the union is over 12 KiB, a FRAME's body 72 bytes).  Each appends
 * header + payload to out, or returns FALSE, appending nothing, where
 * gpushare_msg_build () would.  Only SLOTS and LANE carry fds (n_fds
 * goes into the header; a LANE's is 1); gpushare_msg_build_mapped () takes GPUSHARE_MSG_MAPPED or
 * GPUSHARE_MSG_UNMAPPED. */
gboolean gpushare_msg_build_announce (const GpuShareAnnounce * a,
    GByteArray * out);
gboolean gpushare_msg_build_accept (const GpuShareAccept * a,
    GByteArray * out);
gboolean gpushare_msg_build_slots (const GpuShareSlots * s, guint32 n_fds,
    GByteArray * out);
gboolean gpushare_msg_build_mapped (GpuShareMsgType type, guint64 epoch,
    GByteArray * out);
gboolean gpushare_msg_build_frame (const GpuShareFrame * f, GByteArray * out);
gboolean gpushare_msg_build_release (const GpuShareRelease * r,
    GByteArray * out);
gboolean gpushare_msg_build_caps (const GpuShareCaps * c, GByteArray * out);
gboolean gpushare_msg_build_eos (guint64 last_sequence, GByteArray * out);
gboolean gpushare_msg_build_meta (const GpuShareMeta * m, GByteArray * out);
gboolean gpushare_msg_build_event (const GpuShareEvent * e, GByteArray * out);
gboolean gpushare_msg_build_observe (const GpuShareObserve * o,
    GByteArray * out);
gboolean gpushare_msg_build_status (const GpuShareStatus * st,
    GByteArray * out);
/* LANE carries one fd, the lane's memfd */
gboolean gpushare_msg_build_lane (const GpuShareLaneInfo * l,
    GByteArray * out);
gboolean gpushare_msg_build_notice (const GpuShareNotice * n,
    GByteArray * out);
gboolean gpushare_msg_build_goodbye (const GpuShareGoodbye * g,
    GByteArray * out);
/* text_len bytes of text (no NUL needed), within GPUSHARE_MAX_TEXT_LEN,
 * UTF-8 without NUL */
gboolean gpushare_msg_build_error (guint32 code, const gchar * text,
    guint32 text_len, GByteArray * out);
gboolean gpushare_msg_build_ping (GByteArray * out);

/* Fills a layout's caps string: FALSE (layout unchanged) if it is empty,
 * longer than GPUSHARE_MAX_CAPS_LEN or not UTF-8. */
gboolean gpushare_layout_set_caps (GpuShareLayout * layout, const gchar * caps);

/* The entries of a lane: GPUSHARE_LANE_ENTRY_SIZE bytes each.  build
 * fills out whole (FALSE, with out untouched, for a kind it does not
 * know); parse checks the kind and the length of what follows, as a
 * message's payload is checked, and nothing else (the index against the
 * reader's position, the frame against the ring are the reader's). */
gboolean gpushare_lane_entry_build (const GpuShareLaneEntry * e,
    guint8 * out);
GpuShareParseResult gpushare_lane_entry_parse (const guint8 * in,
    GpuShareLaneEntry * e);
/* The releases of a lane, GPUSHARE_LANE_RELEASE_SIZE bytes each: index
 * (its number), then a RELEASE's body.  parse reads what build wrote; the
 * producer judges the index and the release itself. */
void gpushare_lane_release_build (guint64 index, const GpuShareRelease * r,
    guint8 * out);
void gpushare_lane_release_parse (const guint8 * in, guint64 * index,
    GpuShareRelease * r);
/* bytes of a lane of n_entries entries, and as many releases (its meta
 * region comes after them) */
guint64 gpushare_lane_size (guint32 n_entries);

/* A frame's metas: room for capacity bytes (at most
 * GPUSHARE_LANE_MAX_META_LEN), none written */
GpuShareFrameMetas *gpushare_frame_metas_new (gsize capacity);
/* a copy of a META's */
GpuShareFrameMetas *gpushare_frame_metas_new_from_meta (const GpuShareMeta *
    meta);
/* into a META: the entries, in order, that fit one (GPUSHARE_MAX_META_LEN);
 * returns how many did not (meta->n_entries 0: none did) */
guint gpushare_frame_metas_to_meta (const GpuShareFrameMetas * m,
    GpuShareMeta * meta);
/* the entries chain a META's parser checks: 1 .. GPUSHARE_MAX_META_ENTRIES
 * entries filling data_len, reserved fields 0 */
gboolean gpushare_frame_metas_check_chain (const GpuShareFrameMetas * m);

/* how much of text a text field of the wire takes where it holds at most
 * max bytes: its longest beginning that is UTF-8, at most max bytes, cut on
 * a character boundary (the peer's codec refuses any other) */
gsize gpushare_utf8_prefix (const gchar * text, gsize max);

const gchar *gpushare_msg_type_to_string (guint type);
const gchar *gpushare_parse_result_to_string (GpuShareParseResult res);
const gchar *gpushare_error_code_to_string (GpuShareErrorCode code);
const gchar *gpushare_mem_type_to_string (GpuShareMemType type);
/* one memory type or a mask of them, all host memory */
gboolean gpushare_mem_type_is_host (guint32 type);
/* the bit number of one memory type, below GPUSHARE_MEM_N_TYPES */
guint gpushare_mem_type_index (guint32 type);
/* the fds a valid SLOTS body comes with: one per slot unless its memory
 * travels as handles, then the synchronisation fds */
guint gpushare_slots_fd_count (const GpuShareSlots * slots);

G_END_DECLS

#endif /* __GPUSHARE_PROTO_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which memory and which synchronisation a connection uses, decided from
 * plain values: what the producer's ANNOUNCE offers, what this end's GPU
 * can do, and what the user asked for.  No CUDA, no GStreamer objects:
 * whatever needs the driver (probing the GPU, finding the producer's GPU,
 * trying peer access) is done by the caller beforehand and handed in, so
 * that every decision and every reason text can be tested on a host
 * without a GPU.
 *
 * The reasons are the very texts the elements report (the src's stats and
 * its gpushare-transport message, the producer's log of each ACCEPT);
 * docs and tests quote them, so they change only together.
 */

#ifndef __GPUSHARE_NEGOTIATE_H__
#define __GPUSHARE_NEGOTIATE_H__

#include <glib.h>
#include "gpushareproto.h"

G_BEGIN_DECLS

/* the transport a consumer asks for: the values of GstGpuShareTransport.
 * AUTO and SYSTEM are the negotiation's own; every other value is a
 * memory kind's (GpuShareMemKind.transport), declared by its transfer */
typedef enum
{
  GPUSHARE_TRANSPORT_AUTO = 0,
  GPUSHARE_TRANSPORT_SYSTEM = 1,
} GpuShareTransport;

/* the synchronisation a consumer asks for: the values of GstGpuShareSync,
 * which are those of GpuShareSyncMode with 0 for "the fastest one both
 * ends support" */
typedef enum
{
  GPUSHARE_SYNC_REQUEST_AUTO = 0,
  GPUSHARE_SYNC_REQUEST_HOST = GPUSHARE_SYNC_HOST,
  GPUSHARE_SYNC_REQUEST_SEMAPHORE = GPUSHARE_SYNC_SEMAPHORE,
  GPUSHARE_SYNC_REQUEST_EVENT = GPUSHARE_SYNC_EVENT,
} GpuShareSyncRequest;

/* One end's GPU, as its probe found it.  A consumer fills every field; a
 * producer needs usable and the three memory flags. */
typedef struct
{
  gboolean usable;              /* GPU memory is possible at all here */
  const gchar *why_not;         /* when !usable: why, in the user's words
                                 * (NULL: a generic reason) */
  guint8 uuid[16];
  gboolean posix_fd;            /* VMM memory travels as fds */
  gboolean unified_addressing;  /* legacy CUDA IPC memory */
  gboolean fabric;              /* VMM memory as fabric handles */
  gboolean mps;                 /* this process's contexts go through MPS */
  gboolean copies;              /* this consumer copies every frame out of
                                 * its slot (io-mode=copy) */
  guint32 sync_modes;           /* GpuShareSyncMode mask this GPU supports */
  /* set when CUDA IPC handles (legacy memory, IPC events) cannot open the
   * producer's, whatever the GPU: why (GPUSHARE_NEGOTIATE_OTHER_PID_NS) */
  const gchar *no_ipc_handles;
  gint device;                  /* its CUDA ordinal in this process */
} GpuShareGpu;

/* What the caller learnt about the producer's GPU when it is not this
 * consumer's (see gpushare_negotiate_needs_peer_probe ()). */
typedef struct
{
  gboolean visible;             /* this process sees the producer's GPU */
  gint owner;                   /* its ordinal here, when visible */
  gboolean peer_ok;             /* this GPU can read its memory in place */
  const gchar *error;           /* why not, when visible && !peer_ok */
  gboolean atomics;             /* the link carries native atomics */
  gint rank;                    /* the driver's performance rank, 0 best */
} GpuSharePeerProbe;

/* GpuShareMemKind.flags */
typedef enum
{
  /* its slots travel as handles in the SLOTS body, not as fds */
  GPUSHARE_KIND_HANDLES = 1 << 0,
  /* a ring of it may not be freed while a process it went to may still
   * have it open: the producer keeps a replaced one until each of those
   * said it closed it (UNMAPPED, GOODBYE) or exited; its consumers copy
   * out of its slots, never hold them in place, and close their mappings
   * before their goodbye */
  GPUSHARE_KIND_RETIRE = 1 << 1,
  /* a consumer that maps it can write the producer's slots, whatever
   * access it asks for in its own mapping (GPU memory: CUDA has no
   * read-only export): offered only to the consumers the producer trusts
   * with it (gpusharesink gpu-uids, gpu-gids) */
  GPUSHARE_KIND_WRITABLE = 1 << 2,
} GpuShareMemKindFlags;

/* One memory kind a transfer serves: a GpuShareMemType bit (host memory
 * or device memory as GPUSHARE_MEM_HOST_MASK says), and the transport
 * value that asks for it */
typedef struct
{
  GpuShareMemType type;
  const gchar *nick;            /* gpusharesrc transport=NICK */
  gint transport;               /* that value, unique among all kinds */
  const gchar *description;     /* of the value, as gst-inspect shows it */
  guint flags;                  /* GpuShareMemKindFlags */
} GpuShareMemKind;

/* How a transfer takes part in the negotiation: pure functions of plain
 * values, asked in the transfers' order of preference */
typedef struct
{
  const gchar *name;
  const GpuShareMemKind *kinds;
  guint n_kinds;
  /* of its kinds, those a producer on gpu (NULL: none, or not usable)
   * offers; NULL: every kind, always (host memory) */
  guint32 (*offer) (const GpuShareGpu * gpu);
  /* of its kinds among offered, the one this consumer takes for transport
   * (AUTO, or one of its kinds' values), 0 if none.  *note says why that
   * one, or why none (NULL: no reason to give).  gpu is usable, for
   * device memory; NULL for host memory.  NULL: the kind whose value was
   * asked for, if offered; never for AUTO. */
  GpuShareMemType (*pick) (guint32 offered, const GpuShareGpu * gpu,
      gint transport, const gchar ** note);
} GpuShareMemPolicy;

/* the types of all kinds of the policies */
guint32 gpushare_negotiate_mem_types (const GpuShareMemPolicy * const
    *policies);
/* the types of their kinds that have every flag of flags
 * (GpuShareMemKindFlags) */
guint32 gpushare_negotiate_mem_types_with (const GpuShareMemPolicy * const
    *policies, guint flags);

/* The consumer's choice.  ok FALSE: nothing fits (a forced transport that
 * cannot work included); mem_type is then 0 and reason says why. */
typedef struct
{
  gboolean ok;
  GpuShareMemType mem_type;     /* one bit, 0 when !ok */
  GpuShareSyncMode sync_mode;   /* one bit for GPU memory, else 0 */
  gint peer_device;             /* the producer's GPU here when it is not
                                 * ours, else -1 */
  gchar *reason;                /* owned, always set */
} GpuShareNegotiation;

/* Whether gpushare_negotiate_consumer () reads a peer probe for these
 * inputs: GPU memory is possible on this end, offered, not refused by the
 * transport, and the producer's GPU is another one. */
gboolean gpushare_negotiate_needs_peer_probe (const GpuShareAnnounce * a,
    const GpuShareGpu * gpu, gint transport);

/* Picks the consumer's memory type and synchronisation for what the
 * producer offers, asking each policy (NULL-ended, in order of
 * preference; gpushare_xfer_policies () gives the registered ones).
 * gpu NULL: no GPU at all.  peer: the producer's GPU when it differs from
 * gpu's (NULL there counts as not probed).  Returns out->ok; free out
 * with gpushare_negotiation_clear (). */
gboolean gpushare_negotiate_consumer (const GpuShareAnnounce * a,
    const GpuShareGpu * gpu, const GpuSharePeerProbe * peer,
    gint transport, GpuShareSyncRequest sync,
    const GpuShareMemPolicy * const *policies, GpuShareNegotiation * out);
void gpushare_negotiation_clear (GpuShareNegotiation * n);

/* The memory types (a GpuShareMemType mask, without GPUSHARE_MEM_SYSTEM)
 * a producer on this GPU offers beside system memory, as the policies
 * say: device memory only when gpu is usable. */
guint32 gpushare_negotiate_producer_mem_types (const GpuShareGpu * gpu,
    const GpuShareMemPolicy * const *policies);

/* Why a consumer takes no CUDA IPC handle (GpuShareGpu.no_ipc_handles)
 * when the producer's pid, as SO_PEERCRED gives it, is 0 */
#define GPUSHARE_NEGOTIATE_OTHER_PID_NS \
  "the producer runs in another PID namespace (the kernel gives its pid " \
  "as 0 here), and CUDA IPC handles (legacy memory, IPC events) do not " \
  "open across PID namespaces; VMM memory (transport=cuda) with " \
  "sync-mode=host or semaphore does"

/* Why a consumer takes no GPU memory when the producer withheld it from
 * this connection (GPUSHARE_ANNOUNCE_FLAG_WITHHELD) */
#define GPUSHARE_NEGOTIATE_WITHHELD \
  "the producer offers GPU memory, which a consumer could write, only to " \
  "the consumers it trusts with it (gpusharesink gpu-uids and gpu-gids), " \
  "and this consumer's uid and group are not among them"

/* The text a producer refuses an ACCEPT with */
#define GPUSHARE_NEGOTIATE_NOT_OFFERED \
  "the chosen memory type or synchronisation was not offered"

/* The producer's check of a consumer's ACCEPT against its ANNOUNCE:
 * system memory always; another memory type only if offered (a bit of
 * offered_mem_types, GPUSHARE_MEM_SYSTEM there or not), device memory
 * with a synchronisation mode it offered (offered_sync_modes).  FALSE otherwise,
 * with GPUSHARE_NEGOTIATE_NOT_OFFERED in *why_not (why_not may be NULL). */
gboolean gpushare_negotiate_check_accept (const GpuShareAccept * acc,
    guint32 offered_mem_types, guint32 offered_sync_modes,
    const gchar ** why_not);

/* the fastest correct mode of a mask, with or without MPS (see
 * docs/design.md); 0 for an empty mask */
GpuShareSyncMode gpushare_cuda_sync_mode_pick (guint32 modes, gboolean mps,
    gboolean copies);
/* "host", "semaphore", "event", or "none" */
const gchar *gpushare_sync_mode_to_string (GpuShareSyncMode mode);
/* "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints it */
gchar *gpushare_gpu_uuid_to_string (const guint8 uuid[16]);

G_END_DECLS

#endif /* __GPUSHARE_NEGOTIATE_H__ */

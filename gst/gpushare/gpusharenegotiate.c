/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory and synchronisation negotiation.  See gpusharenegotiate.h.
 */

#include "gpusharenegotiate.h"

#include <string.h>

GpuShareSyncMode
gpushare_cuda_sync_mode_pick (guint32 modes, gboolean mps, gboolean copies)
{
  /* measured on the H200 (docs/benchmarks.md).  Two processes on one GPU
   * without MPS share it by time slices: a wait on a semaphore word that
   * the consumer enqueues before the producer's copy has run keeps the GPU
   * for the rest of the consumer's slice, so at full load host
   * synchronisation hands frames over in 0.6-0.8 ms where semaphore words
   * take 2.8 ms and events 4 ms, at the same throughput.  Under MPS both
   * share one context: semaphore words give the most 4K frames/s.
   * Where the consumer copies every frame too, both processes do device
   * work per frame: each switch between their time slices costs ~144 us
   * on the H200 (nsys), and host waits make them alternate one copy per
   * slice; semaphore words let each queue several (1.7-1.9x the frames/s
   * of host synchronisation at 4K, docs/benchmarks.md). */
  if ((mps || copies) && (modes & GPUSHARE_SYNC_SEMAPHORE))
    return GPUSHARE_SYNC_SEMAPHORE;
  if (modes & GPUSHARE_SYNC_HOST)
    return GPUSHARE_SYNC_HOST;
  if (modes & GPUSHARE_SYNC_SEMAPHORE)
    return GPUSHARE_SYNC_SEMAPHORE;
  if (modes & GPUSHARE_SYNC_EVENT)
    return GPUSHARE_SYNC_EVENT;
  return 0;
}

/* why auto took the mode it took: MPS, or a consumer that copies, where
 * semaphore words were taken for it */
static const gchar *
auto_note (GpuShareSyncRequest sync, const GpuShareGpu * gpu,
    GpuShareSyncMode picked)
{
  if (sync != GPUSHARE_SYNC_REQUEST_AUTO)
    return "";
  if (gpu->mps)
    return " (auto: MPS is on)";
  if (gpu->copies && picked == GPUSHARE_SYNC_SEMAPHORE)
    return " (auto: no MPS, io-mode=copy)";
  return " (auto: no MPS)";
}

const gchar *
gpushare_sync_mode_to_string (GpuShareSyncMode mode)
{
  switch (mode) {
    case GPUSHARE_SYNC_HOST:
      return "host";
    case GPUSHARE_SYNC_SEMAPHORE:
      return "semaphore";
    case GPUSHARE_SYNC_EVENT:
      return "event";
    default:
      return "none";
  }
}

gchar *
gpushare_gpu_uuid_to_string (const guint8 u[16])
{
  return g_strdup_printf ("GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
      "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6],
      u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* ------------------------------------------------------------------------ */
/* Consumer */

static gboolean
gpu_usable (const GpuShareGpu * gpu)
{
  return gpu != NULL && gpu->usable;
}

static guint32
policy_types (const GpuShareMemPolicy * p)
{
  guint32 types = 0;
  guint k;

  for (k = 0; k < p->n_kinds; k++)
    types |= p->kinds[k].type;
  return types;
}

guint32
gpushare_negotiate_mem_types (const GpuShareMemPolicy * const *policies)
{
  guint32 types = 0;
  guint i;

  for (i = 0; policies && policies[i]; i++)
    types |= policy_types (policies[i]);
  return types;
}

guint32
gpushare_negotiate_mem_types_with (const GpuShareMemPolicy * const *policies,
    guint flags)
{
  guint32 types = 0;
  guint i, k;

  for (i = 0; policies && policies[i]; i++)
    for (k = 0; k < policies[i]->n_kinds; k++)
      if ((policies[i]->kinds[k].flags & flags) == flags)
        types |= policies[i]->kinds[k].type;
  return types;
}

gboolean
gpushare_negotiate_needs_peer_probe (const GpuShareAnnounce * a,
    const GpuShareGpu * gpu, gint transport)
{
  g_return_val_if_fail (a != NULL, FALSE);

  return transport != GPUSHARE_TRANSPORT_SYSTEM && gpu_usable (gpu)
      && (a->mem_types & ~GPUSHARE_MEM_HOST_MASK)
      && memcmp (a->device.uuid, gpu->uuid, 16) != 0;
}

/* the policy and kind that transport asks for, or NULL */
static const GpuShareMemPolicy *
policy_of_transport (const GpuShareMemPolicy * const *policies,
    gint transport, const GpuShareMemKind ** kind)
{
  guint i, k;

  for (i = 0; policies && policies[i]; i++)
    for (k = 0; k < policies[i]->n_kinds; k++)
      if (policies[i]->kinds[k].transport == transport) {
        *kind = &policies[i]->kinds[k];
        return policies[i];
      }
  *kind = NULL;
  return NULL;
}

static GpuShareMemType
policy_pick (const GpuShareMemPolicy * p, const GpuShareMemKind * kind,
    guint32 offered, const GpuShareGpu * gpu, gint transport,
    const gchar ** note)
{
  *note = NULL;
  if (p->pick)
    return p->pick (offered, gpu, transport, note);
  return kind && (offered & kind->type) ? kind->type : 0;
}

/* The device memory type to take, 0 if none; *note says why that one, or
 * why nothing was.  A transport of its own goes to that kind's policy;
 * auto asks every policy in turn. */
static GpuShareMemType
pick_gpu_memory (const GpuShareAnnounce * a, const GpuShareGpu * gpu,
    gint transport, const GpuShareMemPolicy * const *policies,
    const gchar ** note)
{
  const GpuShareMemKind *kind;
  const GpuShareMemPolicy *p;
  GpuShareMemType type = 0;
  guint i;

  *note = NULL;
  if (transport != GPUSHARE_TRANSPORT_AUTO) {
    p = policy_of_transport (policies, transport, &kind);
    return p ? policy_pick (p, kind, a->mem_types, gpu, transport, note) : 0;
  }
  for (i = 0; policies && policies[i] && !type; i++) {
    guint32 own = policy_types (policies[i]) & ~GPUSHARE_MEM_HOST_MASK;

    if (own && policies[i]->pick)
      type = policy_pick (policies[i], NULL, a->mem_types & own, gpu,
          transport, note);
  }
  return type;
}

/* The producer's GPU is another one: can this consumer read its memory in
 * place?  Returns the sync modes that stay possible (an event is recorded
 * only on a stream of its own GPU, and a consumer records its done events
 * on its stream: they belong to the producer's GPU) with *peer_device and
 * *peer_note set, or 0 with *why_not. */
static guint32
peer_sync_modes (const GpuShareAnnounce * a, const GpuShareGpu * gpu,
    const GpuSharePeerProbe * peer, guint32 modes, gint * peer_device,
    gchar ** peer_note, gchar ** why_not)
{
  gchar *uuid = gpushare_gpu_uuid_to_string (a->device.uuid);

  if (!peer) {
    /* a caller that skipped the probe must not get a guess */
    *why_not = g_strdup_printf ("the producer is on another GPU (%s): peer "
        "access was not probed", uuid);
  } else if (!peer->visible || peer->owner < 0) {
    *why_not = g_strdup_printf ("the producer's GPU (%s) is not visible to "
        "this consumer (another host's GPU, or hidden by "
        "CUDA_VISIBLE_DEVICES)", uuid);
  } else if (!peer->peer_ok) {
    *why_not = g_strdup_printf ("the producer is on another GPU (%s): %s",
        uuid, peer->error ? peer->error : "peer access is not possible");
  } else {
    *peer_device = peer->owner;
    modes &= ~(guint32) GPUSHARE_SYNC_EVENT;
    *peer_note = g_strdup_printf ("producer on %s (device %d here), read "
        "over peer access by device %d (link rank %d%s)", uuid, peer->owner,
        gpu->device, peer->rank, peer->atomics ? ", native atomics" : "");
  }
  g_free (uuid);
  return *peer_note ? modes : 0;
}

gboolean
gpushare_negotiate_consumer (const GpuShareAnnounce * a,
    const GpuShareGpu * gpu, const GpuSharePeerProbe * peer,
    gint transport, GpuShareSyncRequest sync,
    const GpuShareMemPolicy * const *policies, GpuShareNegotiation * out)
{
  const gchar *why_not = NULL;
  gchar *why_owned = NULL;
  const GpuShareMemKind *kind = NULL;
  const GpuShareMemPolicy *owner;

  g_return_val_if_fail (a != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  out->ok = FALSE;
  out->mem_type = 0;
  out->sync_mode = 0;
  out->peer_device = -1;
  out->reason = NULL;

  owner = policy_of_transport (policies, transport, &kind);
  if (transport != GPUSHARE_TRANSPORT_SYSTEM && kind
      && gpushare_mem_type_is_host (kind->type)) {
    /* host memory of another transfer, asked for by name: no GPU, no
     * synchronisation, no fallback */
    const gchar *note = NULL;
    GpuShareMemType type = policy_pick (owner, kind, a->mem_types, NULL,
        transport, &note);

    out->ok = type != 0;
    out->mem_type = type;
    out->reason = type ? g_strdup_printf ("%s memory as asked for "
        "(transport=%s)%s%s", gpushare_mem_type_to_string (type), kind->nick,
        note ? ": " : "", note ? note : "") :
        g_strdup_printf ("%s memory was asked for but is not possible: %s",
        kind->nick, note ? note : (a->flags & GPUSHARE_ANNOUNCE_FLAG_WITHHELD)
        ? GPUSHARE_NEGOTIATE_WITHHELD : "the producer does not offer it");
    return out->ok;
  }
  if (transport == GPUSHARE_TRANSPORT_SYSTEM) {
    why_not = "system memory was asked for (transport=system)";
  } else if (!gpu_usable (gpu)) {
    /* this end's own reason first: on a host without the driver it is
     * the one that matters */
    why_not = gpu ? gpu->why_not : NULL;
  } else if (!(a->mem_types & ~GPUSHARE_MEM_HOST_MASK)) {
    why_not = (a->flags & GPUSHARE_ANNOUNCE_FLAG_WITHHELD) ?
        GPUSHARE_NEGOTIATE_WITHHELD : "the producer offers no GPU memory";
  } else {
    guint32 common = a->device.sync_modes & gpu->sync_modes;
    gchar *peer_note = NULL;
    gint peer_device = -1;
    GpuShareMemType type = 0;

    if (memcmp (a->device.uuid, gpu->uuid, 16) != 0) {
      guint32 all = common;

      common = peer_sync_modes (a, gpu, peer, common, &peer_device,
          &peer_note, &why_owned);
      why_not = why_owned;
      if (peer_note && sync == GPUSHARE_SYNC_REQUEST_EVENT
          && (all & GPUSHARE_SYNC_EVENT))
        why_not = "event synchronisation is not possible across GPUs (an "
            "event can only be recorded on its own GPU's streams)";
    }
    if (!why_not && gpu->no_ipc_handles) {
      if (sync == GPUSHARE_SYNC_REQUEST_EVENT && (common & GPUSHARE_SYNC_EVENT))
        why_not = gpu->no_ipc_handles;
      common &= ~(guint32) GPUSHARE_SYNC_EVENT;
    }
    if (!why_not) {
      const gchar *note = NULL;

      type = pick_gpu_memory (a, gpu, transport, policies, &note);
      if (sync != GPUSHARE_SYNC_REQUEST_AUTO)
        common &= (guint32) sync;
      if (!type)
        why_not = note;
      else if (!common)
        why_not = "no synchronisation mode in common";
      else {
        gchar *uuid = gpushare_gpu_uuid_to_string (gpu->uuid);
        gchar *where = peer_note ? g_strdup (peer_note) :
            g_strdup_printf ("both ends on %s", uuid);

        out->ok = TRUE;
        out->mem_type = type;
        out->sync_mode = sync != GPUSHARE_SYNC_REQUEST_AUTO ?
            (GpuShareSyncMode) sync :
            gpushare_cuda_sync_mode_pick (common, gpu->mps, gpu->copies);
        out->peer_device = peer_device;
        out->reason = g_strdup_printf ("GPU memory (%s): %s, %s "
            "synchronisation%s%s%s", gpushare_mem_type_to_string (type), where,
            gpushare_sync_mode_to_string (out->sync_mode),
            auto_note (sync, gpu, out->sync_mode),
            note ? "; " : "", note ? note : "");
        g_free (where);
        g_free (uuid);
        g_free (peer_note);
        g_free (why_owned);
        return TRUE;
      }
    }
    g_free (peer_note);
  }
  if (!why_not)
    why_not = "GPU memory is not possible here";
  /* system memory is the fallback only when nothing else was insisted on
   * and the producer has it */
  if ((transport != GPUSHARE_TRANSPORT_AUTO
          && transport != GPUSHARE_TRANSPORT_SYSTEM)
      || !(a->mem_types & GPUSHARE_MEM_SYSTEM)) {
    out->reason = g_strdup_printf ("GPU memory was asked for but is not "
        "possible: %s", why_not);
  } else {
    out->ok = TRUE;
    out->mem_type = GPUSHARE_MEM_SYSTEM;
    out->reason = g_strdup_printf ("system memory: %s", why_not);
  }
  g_free (why_owned);
  return out->ok;
}

void
gpushare_negotiation_clear (GpuShareNegotiation * n)
{
  g_return_if_fail (n != NULL);

  g_clear_pointer (&n->reason, g_free);
  n->ok = FALSE;
  n->mem_type = 0;
  n->sync_mode = 0;
  n->peer_device = -1;
}

/* ------------------------------------------------------------------------ */
/* Producer */

guint32
gpushare_negotiate_producer_mem_types (const GpuShareGpu * gpu,
    const GpuShareMemPolicy * const *policies)
{
  guint32 types = 0;
  guint i;

  for (i = 0; policies && policies[i]; i++) {
    const GpuShareMemPolicy *p = policies[i];
    guint32 own = policy_types (policies[i]);

    if (p->offer)
      types |= p->offer (gpu_usable (gpu) ? gpu : NULL) & own;
    else if (gpushare_mem_type_is_host (own))
      types |= own;
  }
  return types & ~(guint32) GPUSHARE_MEM_SYSTEM;
}

gboolean
gpushare_negotiate_check_accept (const GpuShareAccept * acc,
    guint32 offered_mem_types, guint32 offered_sync_modes,
    const gchar ** why_not)
{
  g_return_val_if_fail (acc != NULL, FALSE);

  if (why_not)
    *why_not = NULL;
  /* every producer has system memory, whatever it announced */
  if (acc->mem_type == GPUSHARE_MEM_SYSTEM)
    return TRUE;
  /* host memory has no synchronisation (the codec saw to it) */
  if ((acc->mem_type & offered_mem_types)
      && (gpushare_mem_type_is_host (acc->mem_type)
          || (acc->sync_mode & offered_sync_modes)))
    return TRUE;
  if (why_not)
    *why_not = GPUSHARE_NEGOTIATE_NOT_OFFERED;
  return FALSE;
}

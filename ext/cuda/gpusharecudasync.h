/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-slot synchronisation of the CUDA transport, two kinds:
 *
 * Semaphore words in shared VMM memory (container-safe, needs no /dev/shm).
 * One block per consumer connection, created and owned by the producer:
 *
 *   producer                                  consumer
 *   sem_new (n_slots), zeroed
 *   sem_export -> fd  ---- SCM_RIGHTS ---->   sem_import (fd), read-write
 *   [stream] wait done[s] >= g - 1 ...
 *   [stream] fill slot s
 *   [stream] signal ready[s] = g
 *             ---- "slot s, generation g" ---->
 *                                             [stream] wait ready[s] >= g
 *                                             [stream] read slot s
 *                                             [stream] signal done[s] = g
 *   peer gone / teardown: sem_force, then sem_free (each side, own mapping)
 *
 * Layout of a block, frozen (both processes compute it on their own):
 * ready[s] is the 64-bit word at offset 8 * s, done[s] the one at
 * GPUSHARE_CUDA_SEM_DONE_OFFSET + 8 * s; the rest of the granularity-sized
 * allocation is unused.  The block is separate from the frame slots because
 * the consumer maps it read-write and the frames read-only.
 *
 * Values: CUDA's "wait >= value" is a cyclic comparison,
 * (int64_t) (word - value) >= 0.  Values therefore live in
 * 0 .. GPUSHARE_CUDA_SEM_MAX_VALUE (G_MAXINT64) and only grow; signal and
 * wait refuse larger ones.  sem_force writes GPUSHARE_CUDA_SEM_FORCED
 * (G_MAXINT64), which satisfies every such wait.  G_MAXUINT64 would NOT:
 * (int64_t) (G_MAXUINT64 - v) is negative for every v < 2^63.
 *
 * CUDA IPC events, the other kind: cuEventCreate (CU_EVENT_INTERPROCESS |
 * CU_EVENT_DISABLE_TIMING) by the producer, which owns them all, ready and
 * done (trap 3 of the field notes); their 64-byte handles travel in a
 * message payload.  They need a /dev/shm shared by both processes.
 *
 * Streams given to these functions must be created CU_STREAM_NON_BLOCKING
 * by the caller: a wait in a blocking stream would also stall the legacy
 * default stream.  A stream waiting on a value that never comes waits
 * forever: before freeing anything a stream may still wait on (this block,
 * and the frame slots too, whose free synchronises the whole context), call
 * gpushare_cuda_sem_force ().
 *
 * Logs and errors carry slot and event indices only: never a handle, a
 * device pointer, an fd number or handle bytes.
 */

#ifndef __GPUSHARE_CUDA_SYNC_H__
#define __GPUSHARE_CUDA_SYNC_H__

#include <glib.h>
#include "gpusharecudaloader.h"

G_BEGIN_DECLS

/* frozen layout, see above */
#define GPUSHARE_CUDA_SEM_WORD_SIZE 8
#define GPUSHARE_CUDA_SEM_DONE_OFFSET 4096
#define GPUSHARE_CUDA_SEM_MAX_SLOTS \
  (GPUSHARE_CUDA_SEM_DONE_OFFSET / GPUSHARE_CUDA_SEM_WORD_SIZE)
#define GPUSHARE_CUDA_SEM_MAX_VALUE ((guint64) G_MAXINT64)
#define GPUSHARE_CUDA_SEM_FORCED GPUSHARE_CUDA_SEM_MAX_VALUE
/* how long gpushare_cuda_sem_force () waits for its own writes */
#define GPUSHARE_CUDA_SEM_FORCE_TIMEOUT_MS 2000

typedef struct _GpuShareCudaSem GpuShareCudaSem;

/* producer: a zeroed block of n_slots ready and n_slots done words on
 * device; retains the device's primary context until free.  Fails with
 * GPUSHARE_CUDA_ERROR_UNSUPPORTED where the device has no VMM, no POSIX-fd
 * export or no 64-bit stream memory operations. */
GpuShareCudaSem *gpushare_cuda_sem_new (gint device, guint n_slots,
    GError ** error);
/* a new fd for one consumer, FD_CLOEXEC; the caller closes it */
gint gpushare_cuda_sem_export (GpuShareCudaSem * sem, GError ** error);
/* consumer: imports and maps read-write; closes fd on every path.  Import
 * each received fd once. */
GpuShareCudaSem *gpushare_cuda_sem_import (gint device, gint fd,
    guint n_slots, GError ** error);
/* unmaps and releases exactly once, then releases the primary context.
 * Does not synchronise and does not force: force first if a stream may
 * still wait on the block. */
void gpushare_cuda_sem_free (GpuShareCudaSem * sem);

gsize gpushare_cuda_sem_size (GpuShareCudaSem * sem);
guint gpushare_cuda_sem_n_slots (GpuShareCudaSem * sem);
CUdeviceptr gpushare_cuda_sem_ready (GpuShareCudaSem * sem, guint slot);
CUdeviceptr gpushare_cuda_sem_done (GpuShareCudaSem * sem, guint slot);

/* Enqueue on stream: write value into word (with the default memory
 * barrier: work enqueued before is visible before the word changes), or
 * wait until word >= value (CU_STREAM_WAIT_VALUE_GEQ, cyclic).  They push
 * no context: the stream's context must be current, as it is for the
 * caller's own work on that stream.  value <= GPUSHARE_CUDA_SEM_MAX_VALUE. */
gboolean gpushare_cuda_sem_signal (CUstream stream, CUdeviceptr word,
    guint64 value, GError ** error);
gboolean gpushare_cuda_sem_wait (CUstream stream, CUdeviceptr word,
    guint64 value, GError ** error);

/* Releases every stream blocked on this block, in this process and in the
 * peer: writes GPUSHARE_CUDA_SEM_FORCED into every word from a private
 * CU_STREAM_NON_BLOCKING stream and waits for that stream only (polling,
 * up to GPUSHARE_CUDA_SEM_FORCE_TIMEOUT_MS), never for the legacy default
 * stream or the context.  For a vanished peer or teardown, before the block
 * is freed.  Stop enqueuing signals on the block first: a smaller value
 * written afterwards blocks later waits again. */
gboolean gpushare_cuda_sem_force (GpuShareCudaSem * sem, GError ** error);
/* Whether the done word of slot reached value: watched on a private
 * stream for at most timeout_ms.  One that did not (*late) is a peer's
 * that is not coming: every word of the block is forced
 * (gpushare_cuda_sem_force ()), which lets every stream waiting on them
 * go on.  FALSE with error where the device could not be asked. */
gboolean gpushare_cuda_sem_check_done (GpuShareCudaSem * sem, guint slot,
    guint64 value, guint timeout_ms, gboolean * late, GError ** error);
gboolean gpushare_cuda_sem_force_timeout (GpuShareCudaSem * sem,
    guint timeout_ms, GError ** error);

/* ------------------------------------------------------------------------ */

/* Ready words in host memory (SLOTS since minor 12), beside a semaphore
 * block: the producer's stream writes each ready value twice, into the
 * block for consumers that wait on the device and into a sealed memfd
 * page it registered with the driver, which the consumer maps read-only
 * and reads on the host.  A consumer that sees its frame's value there
 * hands the slot out without a call to the driver (no wait queued, no
 * synchronise: no round trip through the GPU, no switch to its context);
 * one that does not waits on the device as before.  The page is a
 * peer's: a value is only ever a reason to skip a wait on that peer's
 * own word, which the peer could satisfy as well.
 *
 *   producer                                  consumer
 *   words_new (n_slots), registered
 *   words_export -> fd ---- SCM_RIGHTS --->   words_open (fd), read-only
 *   [stream] fill slot s
 *   [stream] signal ready[s] = g (block)
 *   [stream] words_signal ready[s] = g (page)
 *             ---- "slot s, generation g" ---->
 *                                             words_wait: ready[s] >= g on
 *                                             the host? in place at once
 *                                             : [stream] wait on the block
 *
 * Layout, frozen: ready[s] is the 64-bit word at 8 * s of a page of
 * GPUSHARE_HOST_WORDS_SIZE bytes; the comparison is the block's (cyclic,
 * values up to GPUSHARE_CUDA_SEM_MAX_VALUE). */
typedef struct _GpuShareCudaWords GpuShareCudaWords;

/* producer: the zeroed page, registered with the device's primary
 * context (retained until free); UNSUPPORTED where the device cannot
 * write registered host memory from a stream */
GpuShareCudaWords *gpushare_cuda_words_new (gint device, guint n_slots,
    GError ** error);
/* a new read-only fd of the page for one consumer; the caller closes it */
gint gpushare_cuda_words_export (GpuShareCudaWords * words, GError ** error);
/* enqueue on stream (its context current): ready[slot] = value, after
 * the stream's earlier work, as gpushare_cuda_sem_signal () */
gboolean gpushare_cuda_words_signal (GpuShareCudaWords * words,
    CUstream stream, guint slot, guint64 value, GError ** error);
/* consumer: checks fd (taken, closed on every path) is a memfd of the
 * page's size sealed against writes, and maps it read-only.  Needs no
 * driver. */
GpuShareCudaWords *gpushare_cuda_words_open (gint fd, guint n_slots,
    GError ** error);
/* consumer: ready[slot] >= value, looked at until the monotonic time
 * until_us (at least once); *spun_us: how long it looked past the
 * first.  FALSE at once for a value above GPUSHARE_CUDA_SEM_MAX_VALUE,
 * which the device wait refuses */
gboolean gpushare_cuda_words_wait (GpuShareCudaWords * words, guint slot,
    guint64 value, gint64 until_us, gint64 * spun_us);
/* producer: after the last stream that writes it was synchronised */
void gpushare_cuda_words_free (GpuShareCudaWords * words);

/* ------------------------------------------------------------------------ */

typedef struct _GpuShareCudaEvents GpuShareCudaEvents;

#define GPUSHARE_CUDA_EVENT_HANDLE_SIZE 64

/* producer: n interprocess events without timing; retains the primary
 * context until free */
GpuShareCudaEvents *gpushare_cuda_events_new (gint device, guint n,
    GError ** error);
/* writes n * GPUSHARE_CUDA_EVENT_HANDLE_SIZE bytes into handles */
gboolean gpushare_cuda_events_export (GpuShareCudaEvents * ev,
    guint8 * handles, GError ** error);
/* consumer: opens n handles (n * GPUSHARE_CUDA_EVENT_HANDLE_SIZE bytes);
 * fails with CUDA_ERROR_MAP_FAILED where /dev/shm is not shared */
GpuShareCudaEvents *gpushare_cuda_events_import (gint device,
    const guint8 * handles, guint n, GError ** error);
/* destroys created and opened events alike.  The producer frees its events
 * only once no consumer uses them any more. */
void gpushare_cuda_events_free (GpuShareCudaEvents * ev);
guint gpushare_cuda_events_count (GpuShareCudaEvents * ev);
CUevent gpushare_cuda_events_get (GpuShareCudaEvents * ev, guint i);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_SYNC_H__ */

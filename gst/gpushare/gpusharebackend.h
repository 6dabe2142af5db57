/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory backends behind one small interface.
 *
 * The producer allocates a ring of slots and exports each slot once per
 * consumer connection as a file descriptor; the consumer imports all of a
 * ring's fds once and reads the slots in place.  Which backend runs is
 * decided per consumer at the handshake; the elements only see this
 * interface.  The system-memory backend (sealed memfds) lives next to this
 * file; the CUDA backend lives in ext/.
 *
 * Both objects are reference counted: every GstMemory that wraps a slot
 * holds a reference on its allocation (producer) or import (consumer), so a
 * ring that was replaced by a caps change stays mapped until the last buffer
 * that points into it is gone.
 */

#ifndef __GPUSHARE_BACKEND_H__
#define __GPUSHARE_BACKEND_H__

#include <glib.h>
#include "gpushareproto.h"
#include "gpushareconn.h"

G_BEGIN_DECLS

typedef struct _GpuShareBackend GpuShareBackend;
typedef struct _GpuShareAllocation GpuShareAllocation;
typedef struct _GpuShareImport GpuShareImport;

#define GPUSHARE_BACKEND_ERROR (gpushare_backend_error_quark ())
GQuark gpushare_backend_error_quark (void);

typedef enum
{
  GPUSHARE_BACKEND_ERROR_UNSUPPORTED,   /* this host cannot do it at all */
  GPUSHARE_BACKEND_ERROR_ALLOC,         /* allocation or mapping failed */
  GPUSHARE_BACKEND_ERROR_EXPORT,
  GPUSHARE_BACKEND_ERROR_BAD_HANDLE,    /* a received handle fails checks */
} GpuShareBackendError;

struct _GpuShareBackend
{
  const gchar *name;
  GpuShareMemType mem_type;
  /* bytes a slot needs for a frame; NULL: page-rounded */
  gsize (*slot_size) (gint device, gsize frame_size);

  /* producer */
  gboolean (*alloc) (GpuShareAllocation * alloc, GError ** error);
  /* a new fd, CLOEXEC, owned by the caller, or -1 */
  gint (*export_slot) (GpuShareAllocation * alloc, guint slot,
      GError ** error);
  void (*free) (GpuShareAllocation * alloc);

  /* consumer: owns fds[] from the call on, whatever happens */
  gboolean (*import) (GpuShareImport * import, gint * fds, GError ** error);
  void (*unimport) (GpuShareImport * import);
};

struct _GpuShareAllocation
{
  gint ref_count;
  const GpuShareBackend *backend;
  gint device;                  /* GPU ordinal, for GPU backends */
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* where the producer writes a slot, NULL if not host-visible */
  gpointer data[GPUSHARE_MAX_SLOTS];
  gint fds[GPUSHARE_MAX_SLOTS];
  gpointer priv;
};

struct _GpuShareImport
{
  gint ref_count;
  const GpuShareBackend *backend;
  gint device;                  /* GPU ordinal, for GPU backends */
  guint64 epoch;
  guint n_slots;
  gsize slot_size;
  /* where the consumer reads a slot, NULL if not host-visible */
  gconstpointer data[GPUSHARE_MAX_SLOTS];
  gpointer priv;
};

const GpuShareBackend *gpushare_backend_get (GpuShareMemType type);
extern const GpuShareBackend gpushare_sysmem_backend;

/* the slot size a frame of frame_size bytes needs with this backend */
gsize gpushare_backend_slot_size (const GpuShareBackend * backend,
    gsize frame_size);
/* rounds size up to a multiple of align (a power of two or not) */
gsize gpushare_round_up (gsize size, gsize align);

GpuShareAllocation *gpushare_allocation_new (const GpuShareBackend * backend,
    guint64 epoch, guint n_slots, gsize slot_size, GError ** error);
GpuShareAllocation *gpushare_allocation_new_on_device (const GpuShareBackend *
    backend, gint device, guint64 epoch, guint n_slots, gsize slot_size,
    GError ** error);
GpuShareAllocation *gpushare_allocation_ref (GpuShareAllocation * alloc);
void gpushare_allocation_unref (GpuShareAllocation * alloc);
gint gpushare_allocation_export (GpuShareAllocation * alloc, guint slot,
    GError ** error);

/* takes ownership of the n_slots fds, closes them on every path */
GpuShareImport *gpushare_import_new (const GpuShareBackend * backend,
    guint64 epoch, guint n_slots, gsize slot_size, gint * fds,
    GError ** error);
GpuShareImport *gpushare_import_new_on_device (const GpuShareBackend * backend,
    gint device, guint64 epoch, guint n_slots, gsize slot_size, gint * fds,
    GError ** error);
GpuShareImport *gpushare_import_ref (GpuShareImport * import);
void gpushare_import_unref (GpuShareImport * import);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GpuShareAllocation, gpushare_allocation_unref);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GpuShareImport, gpushare_import_unref);

G_END_DECLS

#endif /* __GPUSHARE_BACKEND_H__ */

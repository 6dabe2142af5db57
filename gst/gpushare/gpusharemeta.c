/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The application's zero-copy route to GPU frames: GstGpuShareCudaMeta and
 * the memory that stands for a slot; see gpusharemeta.h.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gpusharemetapriv.h"

#include <string.h>

GType
gpushare_slot_meta_api_get_type (void)
{
  static gsize type = 0;
  static const gchar *tags[] = { GST_META_TAG_VIDEO_STR, NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register (GPUSHARE_CUDA_META_API_NAME, tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstGpuShareCudaMeta *m = (GstGpuShareCudaMeta *) meta;

  m->version = GPUSHARE_CUDA_META_VERSION;
  m->size = sizeof (GstGpuShareCudaMeta);
  m->device_ptr = 0;
  m->device = -1;
  m->format = GST_VIDEO_FORMAT_UNKNOWN;
  m->width = m->height = m->n_planes = 0;
  memset (m->offset, 0, sizeof (m->offset));
  memset (m->stride, 0, sizeof (m->stride));
  return TRUE;
}

const GstMetaInfo *
gpushare_slot_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    /* no transform: a copy of the buffer does not hold the slot */
    const GstMetaInfo *mi = gst_meta_register (gpushare_slot_meta_api_get_type
        (), "GstGpuShareCudaMeta", sizeof (GstGpuShareCudaMeta), meta_init,
        NULL, NULL);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstGpuShareCudaMeta *
gpushare_buffer_add_slot_meta (GstBuffer * buf, guint64 device_ptr,
    gint device, const GstVideoInfo * info)
{
  GstGpuShareCudaMeta *m = (GstGpuShareCudaMeta *)
      gst_buffer_add_meta (buf, gpushare_slot_meta_get_info (), NULL);
  guint i;

  m->device_ptr = device_ptr;
  m->device = device;
  m->format = GST_VIDEO_INFO_FORMAT (info);
  m->width = GST_VIDEO_INFO_WIDTH (info);
  m->height = GST_VIDEO_INFO_HEIGHT (info);
  m->n_planes = GST_VIDEO_INFO_N_PLANES (info);
  for (i = 0; i < m->n_planes; i++) {
    m->offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (info, i);
    m->stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (info, i);
  }
  return m;
}

/* ------------------------------------------------------------------------ */
/* A memory that stands for a slot in GPU memory: it has a size and a
 * lifetime, and no host address */

typedef struct
{
  GstMemory mem;
  gpointer user_data;
  GDestroyNotify notify;
} SlotMemory;

typedef GstAllocator GpuShareSlotAllocator;
typedef GstAllocatorClass GpuShareSlotAllocatorClass;

GType gpushare_slot_allocator_get_type (void);
G_DEFINE_TYPE (GpuShareSlotAllocator, gpushare_slot_allocator,
    GST_TYPE_ALLOCATOR);

#define SLOT_MEMORY_TYPE "GpuShareCUDA"

static GstMemory *
slot_alloc (GstAllocator * allocator, gsize size, GstAllocationParams * p)
{
  /* made only by gpushare_slot_memory_new () */
  return NULL;
}

static void
slot_free (GstAllocator * allocator, GstMemory * memory)
{
  SlotMemory *m = (SlotMemory *) memory;

  if (m->notify)
    m->notify (m->user_data);
  g_free (m);
}

static gpointer
slot_map (GstMemory * mem, gsize maxsize, GstMapFlags flags)
{
  /* device memory: read it through the meta, on the GPU */
  return NULL;
}

static void
slot_unmap (GstMemory * mem)
{
}

static GstMemory *
slot_share (GstMemory * mem, gssize offset, gssize size)
{
  return NULL;
}

static void
gpushare_slot_allocator_class_init (GpuShareSlotAllocatorClass * klass)
{
  klass->alloc = slot_alloc;
  klass->free = slot_free;
}

static void
gpushare_slot_allocator_init (GpuShareSlotAllocator * allocator)
{
  allocator->mem_type = SLOT_MEMORY_TYPE;
  allocator->mem_map = slot_map;
  allocator->mem_unmap = slot_unmap;
  allocator->mem_share = slot_share;
  GST_OBJECT_FLAG_SET (allocator, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstMemory *
gpushare_slot_memory_new (gsize size, gpointer user_data, GDestroyNotify notify)
{
  static GstAllocator *allocator;
  SlotMemory *m;

  if (g_once_init_enter (&allocator)) {
    GstAllocator *a = g_object_new (gpushare_slot_allocator_get_type (), NULL);

    gst_object_ref_sink (a);
    /* kept for the process's life, as GStreamer's own allocators */
    GST_OBJECT_FLAG_SET (a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    g_once_init_leave (&allocator, a);
  }
  m = g_new0 (SlotMemory, 1);
  gst_memory_init (GST_MEMORY_CAST (m), GST_MEMORY_FLAG_READONLY |
      GST_MEMORY_FLAG_NOT_MAPPABLE, allocator, NULL, size, 0, 0, size);
  m->user_data = user_data;
  m->notify = notify;
  return GST_MEMORY_CAST (m);
}

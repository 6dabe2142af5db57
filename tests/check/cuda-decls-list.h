/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What ext/cuda/gpusharecudadriver.h declares, as figures the compiler
 * gives: every struct's and handle's size, every field's offset and size,
 * every enumerator's and flag's value.  Included twice, once after that
 * header's own declarations and once after the toolkit's cuda.h
 * (cuda-decls-stub.c, cuda-decls-toolkit.c); test_cuda_decls compares the
 * two tables.  SIZE (type), FIELD (type, field), VALUE (name).
 */

#define GPUSHARE_CUDA_DECLS(SIZE, FIELD, VALUE) \
  SIZE (cuuint32_t) \
  SIZE (cuuint64_t) \
  SIZE (CUdeviceptr) \
  SIZE (CUdevice) \
  SIZE (CUmemGenericAllocationHandle) \
  SIZE (CUcontext) \
  SIZE (CUstream) \
  SIZE (CUevent) \
  SIZE (CUmodule) \
  SIZE (CUfunction) \
  SIZE (CUarray) \
  SIZE (CUresult) \
  SIZE (CUdevice_attribute) \
  SIZE (CUdevice_P2PAttribute) \
  SIZE (CUcomputemode) \
  SIZE (CUmemorytype) \
  SIZE (CUpointer_attribute) \
  SIZE (CUdriverProcAddressQueryResult) \
  SIZE (CUmemAllocationType) \
  SIZE (CUmemAllocationHandleType) \
  SIZE (CUmemLocationType) \
  SIZE (CUmemAccess_flags) \
  SIZE (CUmemAllocationGranularity_flags) \
  SIZE (CUuuid) \
  FIELD (CUuuid, bytes) \
  SIZE (CUipcEventHandle) \
  FIELD (CUipcEventHandle, reserved) \
  SIZE (CUipcMemHandle) \
  FIELD (CUipcMemHandle, reserved) \
  SIZE (CUmemFabricHandle) \
  FIELD (CUmemFabricHandle, data) \
  SIZE (CUmemLocation) \
  FIELD (CUmemLocation, type) \
  FIELD (CUmemLocation, id) \
  SIZE (CUmemAllocationProp) \
  FIELD (CUmemAllocationProp, type) \
  FIELD (CUmemAllocationProp, requestedHandleTypes) \
  FIELD (CUmemAllocationProp, location) \
  FIELD (CUmemAllocationProp, win32HandleMetaData) \
  FIELD (CUmemAllocationProp, allocFlags) \
  FIELD (CUmemAllocationProp, allocFlags.compressionType) \
  FIELD (CUmemAllocationProp, allocFlags.gpuDirectRDMACapable) \
  FIELD (CUmemAllocationProp, allocFlags.usage) \
  FIELD (CUmemAllocationProp, allocFlags.reserved) \
  SIZE (CUmemAccessDesc) \
  FIELD (CUmemAccessDesc, location) \
  FIELD (CUmemAccessDesc, flags) \
  SIZE (CUDA_MEMCPY2D) \
  FIELD (CUDA_MEMCPY2D, srcXInBytes) \
  FIELD (CUDA_MEMCPY2D, srcY) \
  FIELD (CUDA_MEMCPY2D, srcMemoryType) \
  FIELD (CUDA_MEMCPY2D, srcHost) \
  FIELD (CUDA_MEMCPY2D, srcDevice) \
  FIELD (CUDA_MEMCPY2D, srcArray) \
  FIELD (CUDA_MEMCPY2D, srcPitch) \
  FIELD (CUDA_MEMCPY2D, dstXInBytes) \
  FIELD (CUDA_MEMCPY2D, dstY) \
  FIELD (CUDA_MEMCPY2D, dstMemoryType) \
  FIELD (CUDA_MEMCPY2D, dstHost) \
  FIELD (CUDA_MEMCPY2D, dstDevice) \
  FIELD (CUDA_MEMCPY2D, dstArray) \
  FIELD (CUDA_MEMCPY2D, dstPitch) \
  FIELD (CUDA_MEMCPY2D, WidthInBytes) \
  FIELD (CUDA_MEMCPY2D, Height) \
  VALUE (CU_STREAM_LEGACY) \
  VALUE (CUDA_SUCCESS) \
  VALUE (CUDA_ERROR_OUT_OF_MEMORY) \
  VALUE (CUDA_ERROR_MAP_FAILED) \
  VALUE (CUDA_ERROR_OPERATING_SYSTEM) \
  VALUE (CUDA_ERROR_NOT_READY) \
  VALUE (CUDA_ERROR_NOT_SUPPORTED) \
  VALUE (CUDA_ERROR_MPS_MAX_CLIENTS_REACHED) \
  VALUE (CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) \
  VALUE (CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) \
  VALUE (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) \
  VALUE (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) \
  VALUE (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) \
  VALUE (CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED) \
  VALUE (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) \
  VALUE (CU_DEVICE_ATTRIBUTE_MPS_ENABLED) \
  VALUE (CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK) \
  VALUE (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED) \
  VALUE (CU_COMPUTEMODE_DEFAULT) \
  VALUE (CU_COMPUTEMODE_PROHIBITED) \
  VALUE (CU_COMPUTEMODE_EXCLUSIVE_PROCESS) \
  VALUE (CU_MEMORYTYPE_HOST) \
  VALUE (CU_MEMORYTYPE_DEVICE) \
  VALUE (CU_POINTER_ATTRIBUTE_MEMORY_TYPE) \
  VALUE (CU_GET_PROC_ADDRESS_SUCCESS) \
  VALUE (CU_GET_PROC_ADDRESS_DEFAULT) \
  VALUE (CU_STREAM_NON_BLOCKING) \
  VALUE (CU_EVENT_DISABLE_TIMING) \
  VALUE (CU_EVENT_INTERPROCESS) \
  VALUE (CU_STREAM_WAIT_VALUE_GEQ) \
  VALUE (CU_STREAM_WAIT_VALUE_FLUSH) \
  VALUE (CU_STREAM_WRITE_VALUE_DEFAULT) \
  VALUE (CU_MEMHOSTREGISTER_PORTABLE) \
  VALUE (CU_MEMHOSTREGISTER_DEVICEMAP) \
  VALUE (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) \
  VALUE (CU_IPC_HANDLE_SIZE) \
  VALUE (CU_MEM_ALLOCATION_TYPE_PINNED) \
  VALUE (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) \
  VALUE (CU_MEM_HANDLE_TYPE_FABRIC) \
  VALUE (CU_MEM_LOCATION_TYPE_DEVICE) \
  VALUE (CU_MEM_ACCESS_FLAGS_PROT_READ) \
  VALUE (CU_MEM_ACCESS_FLAGS_PROT_READWRITE) \
  VALUE (CU_MEM_ALLOC_GRANULARITY_MINIMUM)

typedef struct
{
  const char *what;
  long long value;
} GpuShareCudaDecl;

#define GPUSHARE_CUDA_DECL_SIZE(type) \
  { "sizeof (" #type ")", (long long) sizeof (type) },
#define GPUSHARE_CUDA_DECL_FIELD(type, field) \
  { "offsetof (" #type ", " #field ")", \
    (long long) offsetof (type, field) }, \
  { "sizeof (((" #type " *) 0)->" #field ")", \
    (long long) sizeof (((type *) 0)->field) },
#define GPUSHARE_CUDA_DECL_VALUE(name) \
  { #name, (long long) (name) },
#define GPUSHARE_CUDA_DECL_TABLE(table) \
  const GpuShareCudaDecl table[] = { \
    GPUSHARE_CUDA_DECLS (GPUSHARE_CUDA_DECL_SIZE, GPUSHARE_CUDA_DECL_FIELD, \
        GPUSHARE_CUDA_DECL_VALUE) \
    { NULL, 0 } \
  };

extern const GpuShareCudaDecl gpushare_cuda_decls_stub[];
extern const GpuShareCudaDecl gpushare_cuda_decls_toolkit[];

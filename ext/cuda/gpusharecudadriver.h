/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The part of the CUDA driver API that gpushare uses, declared here so that
 * a build without the CUDA toolkit keeps the GPU path: libcuda.so.1 is
 * opened at run time (gpusharecudaloader.h), so only these declarations
 * are needed to compile it.  Every entry point is taken with
 * cuGetProcAddress for API version 12000 (GPUSHARE_CUDA_API_VERSION); the
 * prototypes below are the signatures the driver gives for that version.
 *
 * What is here is the driver's ABI, which NVIDIA keeps stable for a
 * version: struct layouts, enumerator values, prototypes.  Where the
 * toolkit's headers are there too, the test build checks that the two
 * agree (tests/check/test_cuda_decls.c: every size, offset and value in
 * tests/check/cuda-decls-list.h, and every prototype below redeclared
 * after the toolkit's cuda.h, which the compiler refuses if one differs).
 *
 * A program that wants the toolkit's own header with it (the toolkit side
 * of that test) defines GPUSHARE_CUDA_TOOLKIT_HEADERS: this file then
 * includes <cuda.h> instead of its own declarations.  The GPU test
 * programs use these declarations, as the plugin does; the CUDA example,
 * an application, includes <cuda.h> itself.
 */

#ifndef __GPUSHARE_CUDA_DRIVER_H__
#define __GPUSHARE_CUDA_DRIVER_H__

#ifdef GPUSHARE_CUDA_TOOLKIT_HEADERS
#include <cuda.h>
#else

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_CUDA_DRIVER_STUB 1

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUarray_st *CUarray;

/* the legacy default stream, as a handle */
#define CU_STREAM_LEGACY ((CUstream) 0x1)

typedef enum cudaError_enum
{
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_MAP_FAILED = 205,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_MPS_MAX_CLIENTS_REACHED = 808,
} CUresult;

typedef enum CUdevice_attribute_enum
{
  CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
  CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = 122,
  CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128,
  CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 133,
} CUdevice_attribute;

typedef enum CUdevice_P2PAttribute_enum
{
  CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
  CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3,
} CUdevice_P2PAttribute;

typedef enum CUcomputemode_enum
{
  CU_COMPUTEMODE_DEFAULT = 0,
  CU_COMPUTEMODE_PROHIBITED = 2,
  CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
} CUcomputemode;

typedef enum CUmemorytype_enum
{
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
} CUmemorytype;

typedef enum CUpointer_attribute_enum
{
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
} CUpointer_attribute;

typedef enum CUlimit_enum
{
  CU_LIMIT_STACK_SIZE = 0x00,
} CUlimit;

typedef enum CUdriverProcAddressQueryResult_enum
{
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
} CUdriverProcAddressQueryResult;

/* cuGetProcAddress flags */
#define CU_GET_PROC_ADDRESS_DEFAULT 0

/* cuStreamCreate flags */
#define CU_STREAM_NON_BLOCKING 0x1

/* cuEventCreate flags */
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_EVENT_INTERPROCESS 0x4

/* cuStreamWaitValue64 / cuStreamWriteValue64 flags */
#define CU_STREAM_WAIT_VALUE_GEQ 0x0
#define CU_STREAM_WAIT_VALUE_FLUSH (1 << 30)
#define CU_STREAM_WRITE_VALUE_DEFAULT 0x0

/* cuMemHostRegister flags */
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02

/* cuIpcOpenMemHandle flags */
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1

#define CU_IPC_HANDLE_SIZE 64

typedef enum CUmemAllocationType_enum
{
  CU_MEM_ALLOCATION_TYPE_PINNED = 1,
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum
{
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
  CU_MEM_HANDLE_TYPE_FABRIC = 8,
} CUmemAllocationHandleType;

typedef enum CUmemLocationType_enum
{
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
} CUmemLocationType;

typedef enum CUmemAccess_flags_enum
{
  CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
} CUmemAccess_flags;

typedef enum CUmemAllocationGranularity_flags_enum
{
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
} CUmemAllocationGranularity_flags;

typedef struct CUuuid_st
{
  char bytes[16];
} CUuuid;

typedef struct CUipcEventHandle_st
{
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcEventHandle;

typedef struct CUipcMemHandle_st
{
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;

typedef struct CUmemFabricHandle_st
{
  unsigned char data[CU_IPC_HANDLE_SIZE];
} CUmemFabricHandle;

typedef struct CUmemLocation_st
{
  CUmemLocationType type;
  int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st
{
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct
  {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st
{
  CUmemLocation location;
  CUmemAccess_flags flags;
} CUmemAccessDesc;

typedef struct CUDA_MEMCPY2D_st
{
  size_t srcXInBytes;
  size_t srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes;
  size_t dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D;

#ifdef __cplusplus
}
#endif

#endif /* GPUSHARE_CUDA_TOOLKIT_HEADERS */

/* The prototypes, for the types of the loader's table (GPUSHARE_CUDA_FUNCS).
 * Never linked: the driver's entry points come from cuGetProcAddress.
 * GPUSHARE_CUDA_CHECK_PROTOTYPES redeclares them after the toolkit's
 * cuda.h, whose macros map each name to the entry point version 12000
 * returns (cuMemAlloc to cuMemAlloc_v2): the compiler then checks each
 * against the toolkit's. */
#if !defined (GPUSHARE_CUDA_TOOLKIT_HEADERS) || \
    defined (GPUSHARE_CUDA_CHECK_PROTOTYPES)

#ifdef __cplusplus
extern "C" {
#endif

CUresult cuGetProcAddress (const char *symbol, void **pfn, int cudaVersion,
    cuuint64_t flags, CUdriverProcAddressQueryResult * symbolStatus);
CUresult cuInit (unsigned int flags);
CUresult cuDriverGetVersion (int *driverVersion);
CUresult cuGetErrorName (CUresult error, const char **pStr);
CUresult cuGetErrorString (CUresult error, const char **pStr);

CUresult cuDeviceGet (CUdevice * device, int ordinal);
CUresult cuDeviceGetCount (int *count);
CUresult cuDeviceGetAttribute (int *pi, CUdevice_attribute attrib,
    CUdevice dev);
CUresult cuDeviceGetName (char *name, int len, CUdevice dev);
CUresult cuDeviceGetUuid (CUuuid * uuid, CUdevice dev);
CUresult cuDeviceCanAccessPeer (int *canAccessPeer, CUdevice dev,
    CUdevice peerDev);
CUresult cuDeviceGetP2PAttribute (int *value, CUdevice_P2PAttribute attrib,
    CUdevice srcDevice, CUdevice dstDevice);

CUresult cuDevicePrimaryCtxRetain (CUcontext * pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease (CUdevice dev);
CUresult cuDevicePrimaryCtxGetState (CUdevice dev, unsigned int *flags,
    int *active);
CUresult cuCtxPushCurrent (CUcontext ctx);
CUresult cuCtxPopCurrent (CUcontext * pctx);
CUresult cuCtxSetCurrent (CUcontext ctx);
CUresult cuCtxSynchronize (void);
CUresult cuCtxSetLimit (CUlimit limit, size_t value);
CUresult cuCtxGetLimit (size_t *pvalue, CUlimit limit);

CUresult cuMemGetInfo (size_t *free, size_t *total);
CUresult cuMemGetAddressRange (CUdeviceptr * pbase, size_t *psize,
    CUdeviceptr dptr);
CUresult cuMemAlloc (CUdeviceptr * dptr, size_t bytesize);
CUresult cuMemFree (CUdeviceptr dptr);
CUresult cuMemAllocHost (void **pp, size_t bytesize);
CUresult cuMemFreeHost (void *p);
CUresult cuMemHostRegister (void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister (void *p);
CUresult cuMemHostGetDevicePointer (CUdeviceptr * pdptr, void *p,
    unsigned int Flags);
CUresult cuMemGetAllocationGranularity (size_t *granularity,
    const CUmemAllocationProp * prop,
    CUmemAllocationGranularity_flags option);
CUresult cuMemCreate (CUmemGenericAllocationHandle * handle, size_t size,
    const CUmemAllocationProp * prop, unsigned long long flags);
CUresult cuMemRelease (CUmemGenericAllocationHandle handle);
CUresult cuMemExportToShareableHandle (void *shareableHandle,
    CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType,
    unsigned long long flags);
CUresult cuMemImportFromShareableHandle (CUmemGenericAllocationHandle *
    handle, void *osHandle, CUmemAllocationHandleType shHandleType);
CUresult cuMemAddressReserve (CUdeviceptr * ptr, size_t size,
    size_t alignment, CUdeviceptr addr, unsigned long long flags);
CUresult cuMemAddressFree (CUdeviceptr ptr, size_t size);
CUresult cuMemMap (CUdeviceptr ptr, size_t size, size_t offset,
    CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult cuMemUnmap (CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess (CUdeviceptr ptr, size_t size,
    const CUmemAccessDesc * desc, size_t count);

CUresult cuMemcpy2DAsync (const CUDA_MEMCPY2D * pCopy, CUstream hStream);
CUresult cuMemcpyDtoHAsync (void *dstHost, CUdeviceptr srcDevice,
    size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoDAsync (CUdeviceptr dstDevice, CUdeviceptr srcDevice,
    size_t ByteCount, CUstream hStream);
CUresult cuMemsetD8Async (CUdeviceptr dstDevice, unsigned char uc, size_t N,
    CUstream hStream);
CUresult cuMemsetD32Async (CUdeviceptr dstDevice, unsigned int ui, size_t N,
    CUstream hStream);
CUresult cuPointerGetAttribute (void *data, CUpointer_attribute attribute,
    CUdeviceptr ptr);

CUresult cuStreamCreate (CUstream * phStream, unsigned int Flags);
CUresult cuStreamDestroy (CUstream hStream);
CUresult cuStreamSynchronize (CUstream hStream);
CUresult cuStreamQuery (CUstream hStream);
CUresult cuStreamWaitEvent (CUstream hStream, CUevent hEvent,
    unsigned int Flags);
CUresult cuStreamWriteValue64 (CUstream stream, CUdeviceptr addr,
    cuuint64_t value, unsigned int flags);
CUresult cuStreamWaitValue64 (CUstream stream, CUdeviceptr addr,
    cuuint64_t value, unsigned int flags);

CUresult cuEventCreate (CUevent * phEvent, unsigned int Flags);
CUresult cuEventDestroy (CUevent hEvent);
CUresult cuEventRecord (CUevent hEvent, CUstream hStream);
CUresult cuEventSynchronize (CUevent hEvent);
CUresult cuEventQuery (CUevent hEvent);

CUresult cuIpcGetEventHandle (CUipcEventHandle * pHandle, CUevent event);
CUresult cuIpcOpenEventHandle (CUevent * phEvent, CUipcEventHandle handle);
CUresult cuIpcGetMemHandle (CUipcMemHandle * pHandle, CUdeviceptr dptr);
CUresult cuIpcOpenMemHandle (CUdeviceptr * pdptr, CUipcMemHandle handle,
    unsigned int Flags);
CUresult cuIpcCloseMemHandle (CUdeviceptr dptr);

CUresult cuModuleLoadData (CUmodule * module, const void *image);
CUresult cuModuleUnload (CUmodule hmod);
CUresult cuModuleGetFunction (CUfunction * hfunc, CUmodule hmod,
    const char *name);
CUresult cuLaunchKernel (CUfunction f, unsigned int gridDimX,
    unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
    void **extra);
typedef void (*CUhostFn) (void *userData);
CUresult cuLaunchHostFunc (CUstream hStream, CUhostFn fn, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* prototypes */

#endif /* __GPUSHARE_CUDA_DRIVER_H__ */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy of a frame between device memory of one context on the GPU's
 * cores: rows of 16-byte words, one thread each.  cuMemcpy2DAsync between
 * pitched device memory ran at a third of the device's bandwidth on an
 * H200 (a 4K NV12 frame in 25 us, 12 us this way: docs/benchmarks.md).
 *
 * Built into gpusharecudacopy.fatbin (machine code for the GPUs of
 * compute capability 7.5 to 12.0, and PTX for the driver to compile for
 * newer ones) by `ninja -C BUILD cuda-kernels` where nvcc is; the
 * fatbin is committed, so that a build without the CUDA toolkit has it,
 * and the test cuda_kernels checks it is this source's.
 */

extern "C" __global__ void
gpushare_copy_rows_16 (const unsigned char *src, unsigned long long src_pitch,
    unsigned char *dst, unsigned long long dst_pitch, unsigned int row_words,
    unsigned int rows)
{
  unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;

  if (x >= row_words || y >= rows)
    return;
  ((uint4 *) (dst + y * dst_pitch))[x] =
      ((const uint4 *) (src + y * src_pitch))[x];
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A position-weighted checksum of the visible bytes of one image plane,
 * computed where the plane is: in GPU memory.
 *
 * The plane is cut into 32-bit words, row by row (the last word of a row
 * is padded with zero bytes; the pitch padding is never read).  Word k of
 * the plane (k = row * words_per_row + column) with value w contributes
 * mix64 ((k << 32) | w) to a sum modulo 2^64.  mix64 is a bijection, so a
 * word that moves (swapped rows, a shifted or misplaced frame) or changes
 * (a torn or stale frame) changes its term; unlike a plain sum, equal data
 * at another place does not cancel out.  Every block reduces its part and
 * adds it to *sum with one 64-bit atomic: the caller zeroes *sum first.
 *
 * Compiled to PTX at build time and JIT-compiled by the driver at run time
 * (cuModuleLoadData); tests/gpu/test_gpu_checksum.c has a CPU copy of the
 * same function to check the kernel with.  Keep the two in step.
 */

__device__ static unsigned long long
mix64 (unsigned long long z)
{
  /* the splitmix64 finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

extern "C" __global__ void
gpushare_checksum (const unsigned char *plane, unsigned long long pitch,
    unsigned int row_bytes, unsigned int rows, unsigned long long *sum)
{
  /* one partial sum per warp; blockDim.x is a multiple of 32, <= 1024 */
  __shared__ unsigned long long part[32];
  unsigned long long words_per_row = (row_bytes + 3u) / 4u;
  unsigned long long n = words_per_row * rows;
  unsigned long long acc = 0;
  unsigned long long i;
  unsigned int lane = threadIdx.x % 32u, warp = threadIdx.x / 32u;
  int off;

  for (i = (unsigned long long) blockIdx.x * blockDim.x + threadIdx.x; i < n;
      i += (unsigned long long) gridDim.x * blockDim.x) {
    unsigned long long y = i / words_per_row;
    unsigned int x = (unsigned int) (i % words_per_row) * 4u;
    const unsigned char *p = plane + y * pitch + x;
    unsigned int w;

    if (x + 4u <= row_bytes && ((unsigned long long) p & 3u) == 0) {
      /* little-endian, as the byte path below */
      w = *(const unsigned int *) p;
    } else {
      unsigned int b;

      w = 0;
      for (b = 0; b < 4u && x + b < row_bytes; b++)
        w |= (unsigned int) p[b] << (8u * b);
    }
    acc += mix64 ((i << 32) | w);
  }

  for (off = 16; off > 0; off /= 2)
    acc += __shfl_down_sync (0xffffffffu, acc, off);
  if (lane == 0)
    part[warp] = acc;
  __syncthreads ();
  if (warp == 0) {
    acc = lane < blockDim.x / 32u ? part[lane] : 0;
    for (off = 16; off > 0; off /= 2)
      acc += __shfl_down_sync (0xffffffffu, acc, off);
    if (lane == 0 && acc != 0)
      atomicAdd (sum, acc);
  }
}

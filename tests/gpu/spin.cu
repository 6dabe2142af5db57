/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keeps a stream busy for a while on its own: one thread that spins on the
 * GPU's global timer (nanoseconds) until ns have passed.  Work queued
 * behind it on the same stream runs that much later, without anything
 * from the host having to release it (a host-released wait can deadlock:
 * a stream blocked on a value may hold up the very hardware queue the
 * release would be written through).
 *
 * Compiled to PTX at build time, as checksum.cu.
 */

extern "C" __global__ void
gpushare_spin (unsigned long long ns)
{
  unsigned long long start, now;

  asm volatile ("mov.u64 %0, %%globaltimer;" : "=l" (start));
  do {
    asm volatile ("mov.u64 %0, %%globaltimer;" : "=l" (now));
  } while (now - start < ns);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/spin_kernel.cu: one thread spinning on a host-mapped flag, read
 * through volatile, with the GPU's nanosecond clock (%globaltimer) as its
 * bound; declared in spin_kernel.h. */
#include <cuda_runtime.h>

#include "tests/gpu/spin_kernel.h"

static __device__ unsigned long long gpu_ns(void)
{
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

static __global__ void spin_until(const volatile int *flag, unsigned long long bound_ns)
{
  const unsigned long long start = gpu_ns();
  while (!*flag && gpu_ns() - start < bound_ns)
    __nanosleep(1000);
}

extern "C" int spin_launch(const volatile int *flag, double seconds, void *stream)
{
  spin_until<<<1, 1, 0, (cudaStream_t)stream>>>(flag, (unsigned long long)(seconds * 1e9));
  return (int)cudaGetLastError();
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/devbuf.c: host or device buffers for the tools (see devbuf.h). */
#include "config.h"

#include "tools/devbuf.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int dlpar_devbuf_setup(dlpar_devbuf_ctx *dev, bool device)
{
  dev->device = device;
  dev->stream = NULL;
#ifdef HAVE_CUDA
  if (device && cudaStreamCreate((cudaStream_t *)&dev->stream) != cudaSuccess)
    return -1;
#else
  if (device)
    return -1;
#endif
  return 0;
}

void *dlpar_devbuf_alloc(const dlpar_devbuf_ctx *dev, size_t bytes)
{
#ifdef HAVE_CUDA
  void *ptr = NULL;
  if (dev->device)
    return cudaMalloc(&ptr, bytes) == cudaSuccess ? ptr : NULL;
#endif
  (void)dev;
  return calloc(1, bytes ? bytes : 1);
}

void dlpar_devbuf_free(const dlpar_devbuf_ctx *dev, void *ptr)
{
#ifdef HAVE_CUDA
  if (dev->device) {
    cudaFree(ptr);
    return;
  }
#endif
  (void)dev;
  free(ptr);
}

int dlpar_devbuf_put(const dlpar_devbuf_ctx *dev, void *dst, const void *host, size_t bytes)
{
#ifdef HAVE_CUDA
  if (dev->device)
    return cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, (cudaStream_t)dev->stream) == cudaSuccess ? 0 : -1;
#endif
  (void)dev;
  memcpy(dst, host, bytes);
  return 0;
}

int dlpar_devbuf_get(const dlpar_devbuf_ctx *dev, void *host, const void *src, size_t bytes)
{
#ifdef HAVE_CUDA
  if (dev->device)
    return cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)dev->stream) == cudaSuccess ? 0 : -1;
#endif
  (void)dev;
  memcpy(host, src, bytes);
  return 0;
}

int dlpar_devbuf_sync(const dlpar_devbuf_ctx *dev)
{
#ifdef HAVE_CUDA
  if (dev->device)
    return cudaStreamSynchronize((cudaStream_t)dev->stream) == cudaSuccess ? 0 : -1;
#endif
  (void)dev;
  return 0;
}

void dlpar_devbuf_teardown(dlpar_devbuf_ctx *dev)
{
#ifdef HAVE_CUDA
  if (dev->device && dev->stream)
    cudaStreamDestroy((cudaStream_t)dev->stream);
#endif
  dev->stream = NULL;
}

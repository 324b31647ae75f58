/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/devbuf.h: buffers for the tools (dlpar-hello, dlpar-bench-comm)
 * that live where the backend wants them: device memory on NCCL, host
 * memory otherwise, with copies in and out and a stream to sync. */
#ifndef DLPAR_DEVBUF_H
#define DLPAR_DEVBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  bool device;   /* CUDA memory (NCCL backend) */
  void *stream;  /* cudaStream_t on the device, NULL otherwise */
} dlpar_devbuf_ctx;

int dlpar_devbuf_setup(dlpar_devbuf_ctx *dev, bool device);
void *dlpar_devbuf_alloc(const dlpar_devbuf_ctx *dev, size_t bytes);
void dlpar_devbuf_free(const dlpar_devbuf_ctx *dev, void *ptr);
int dlpar_devbuf_put(const dlpar_devbuf_ctx *dev, void *dst, const void *host, size_t bytes);
int dlpar_devbuf_get(const dlpar_devbuf_ctx *dev, void *host, const void *src, size_t bytes);
int dlpar_devbuf_sync(const dlpar_devbuf_ctx *dev);
void dlpar_devbuf_teardown(dlpar_devbuf_ctx *dev);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/gpu_usable.c: exits 0 when the CUDA runtime sees a usable GPU,
 * else prints the reason and exits 77 (SKIP): the shell GPU tests ask it,
 * so they skip exactly when the C GPU tests do (CUDA_VISIBLE_DEVICES, a
 * driver the runtime cannot use), whatever nvidia-smi says. */
#include "config.h"

#include "tests/gpu/gpu_check.h"

int main(void)
{
  require_gpu();
  return 0;
}

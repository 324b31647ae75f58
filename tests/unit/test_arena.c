/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_arena.c: the CUDA model's device memory, computed on the
 * host (model_cuda_arena_bytes: the arena's layout, no GPU): at batch 16,
 * one rank, the budgets that put dlpar under 0.9 x PyTorch eager's device
 * memory on an H200 (eager: base bf16 14.88 GB, base fp32 22.04, mp_bs16
 * 36.65; the CUDA context, cuBLASLt's workspace and cuDNN's own workspace
 * come on top of the arena): base bf16 <= 13.0 GB, base fp32 <= 21.5 GB,
 * mp_bs16 bf16 <= 34.3 GB, with the default recompute: gelu; recompute:
 * none keeps GELU's output of every block but one (depth - 1 buffers of
 * B*N x 4D activations more); one batch slot (the input and target of one
 * batch, fp32); a wider tensor-parallel grid holds less per rank. cuDNN's
 * attention scratch that dlpar owns (dl_sdpa_scratch_bytes) is counted in
 * 16 bits; the rest of cuDNN's workspace is known only on a GPU. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "kernels/cuda/ops.h"
#include "tests/unit/check.h"
#include "trainer/model/model.h"

static size_t arena_of(const char *section, const char *amp, const char *recompute, int tp)
{
  const char *srcdir = getenv("DLPAR_SRCDIR") ? getenv("DLPAR_SRCDIR") : DLPAR_TEST_SRCDIR;
  char yaml[4096], amp_arg[32], recompute_arg[32];
  dlpar_error err = {0};
  char *overrides[] = {amp_arg, recompute_arg, "--global_batch_size=16"};
  config_set set;
  size_t bytes = 0, scratch;
  vit_dims d;
  snprintf(yaml, sizeof yaml, "%s/etc/vit.yaml", srcdir);
  snprintf(amp_arg, sizeof amp_arg, "--amp_mode=%s", amp);
  snprintf(recompute_arg, sizeof recompute_arg, "--recompute=%s", recompute);
  if (config_load(&set, yaml, section, overrides, 3, &err) != DLPAR_OK) {
    fprintf(stderr, "%s\n", err.text);
    exit(99);
  }
  vit_dims_fill(&d, &set.cfg, tp, 16);
  scratch = strcmp(amp, "none") ? dl_sdpa_scratch_bytes(16, d.N, d.heads, d.HD, DL_BF16, 0) : 0;
  CHECK_INT(model_cuda_arena_bytes(&set.cfg, tp, 16, scratch, &bytes), DLPAR_OK);
  printf("%s %s, recompute: %s, tp %d: %.3f GB\n", section, amp, recompute, tp, bytes / 1e9);
  return bytes;
}

static void check_budget(const char *section, const char *amp, double budget_gb)
{
  const size_t bytes = arena_of(section, amp, "gelu", 1);
  check_count++;
  if (!(bytes <= budget_gb * 1e9)) {
    check_failures++;
    fprintf(stderr, "FAILED: %s %s at batch 16: arena %.3f GB, over the budget of %.1f GB\n", section, amp, bytes / 1e9,
            budget_gb);
  } else {
    printf("ok: %s %s at batch 16: arena %.3f GB <= %.1f GB\n", section, amp, bytes / 1e9, budget_gb);
  }
}

int main(void)
{
  check_budget("base", "bf16", 13.0);
  check_budget("base", "none", 21.5);
  check_budget("mp_bs16", "bf16", 34.3);
  {
    /* recompute: none keeps depth - 1 more GELU outputs: base is 12 blocks of B*N = 64800 tokens x 1536 */
    const size_t kept = arena_of("base", "bf16", "none", 1), recomputed = arena_of("base", "bf16", "gelu", 1);
    CHECK_INT(kept - recomputed, 11 * (size_t)64800 * 1536 * 2);
    CHECK(arena_of("mp_bs16", "bf16", "gelu", 2) < arena_of("mp_bs16", "bf16", "gelu", 1));
  }
  return check_report("test_arena");
}

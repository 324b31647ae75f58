/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_sdpa_plan.c: the cuDNN attention's plans, checked without
 * a GPU (run by sdpa_plan.sh, which puts the libcuda stub on
 * LD_LIBRARY_PATH). dl_sdpa_check builds the same forward and backward
 * graphs as dlpar-train, for an H100 described by device-properties JSON
 * (a stand-in for the GPU this machine lacks), and cuDNN picks engines and
 * compiles their kernels with NVRTC; loading a kernel is where the stub
 * driver stops, which counts as compiled. Shapes: the ViT's (4050 tokens,
 * head 48 in bf16, head 128 in fp16), an odd token count, head 44, which
 * cuDNN must refuse (dlpar-train then stops, naming attention: reference),
 * and the base shape's deterministic plans (deterministic: true: dQ
 * written directly, engines not marked NONDETERMINISTIC; on an H100 those
 * are the same fused engines). Each plannable shape costs two NVRTC
 * compiles, 1-11 s on a busy 2-core machine: four of them keep the test
 * under a minute. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "kernels/cuda/ops.h"
#include "tests/unit/check.h"

/* An H100 SXM (sm90) as cuDNN 9.19 reads it: every key it requires. */
static const char H100_PROPS[] =
    "{\"maxGridSize\": [2147483647, 65535, 65535], \"maxBlockSize\": [1024, 1024, 64], \"regsPerBlock\": 65536, "
    "\"multiProcessorCount\": 132, \"warpSize\": 32, \"maxSharedMemoryPerBlock\": 49152, "
    "\"maxSharedMemoryPerBlockOptin\": 232448, \"reservedSharedMemoryPerBlock\": 1024, \"maxRegistersPerSM\": 65536, "
    "\"maxCtasPerSM\": 32, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerSM\": 2048, \"pciDeviceId\": 8992, "
    "\"isTccDriver\": 0, \"supportCoopLaunch\": 1, \"smClockRateKHz\": 1980000, \"memClockRateKHz\": 2619000, "
    "\"l2CacheSize\": 52428800, \"deviceName\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84929347584, "
    "\"cudaDeviceId\": 0, \"deviceVer\": 900, \"driverVer\": 13010}";

typedef struct {
  int B, N, NH, HD;
  dl_dtype act;
  int deterministic; /* deterministic: true's plans */
  int plannable;
} shape;

static const char *dtype_name(dl_dtype t)
{
  return t == DL_BF16 ? "bf16" : t == DL_F16 ? "fp16" : "fp32";
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check_shape(const shape *s)
{
  static const char *direction[2] = {"forward", "backward"};
  dl_sdpa_check_result r;
  const double t0 = now();
  const int rc = dl_sdpa_check(H100_PROPS, s->B, s->N, s->NH, s->HD, s->act, s->deterministic, &r);
  CHECK_INT(rc, 0);
  for (int d = 0; d < 2; d++) {
    printf("B %d H %d S %d D %d %s%s %s: %d engine configs, %s (%s)\n", s->B, s->NH, s->N, s->HD, dtype_name(s->act),
           s->deterministic ? " deterministic" : "", direction[d], r.configs[d], r.compiled[d] ? "compiled" : "no plan",
           r.status[d] ? dl_status_string(r.status[d]) : "planned");
    if (s->plannable) {
      CHECK(r.configs[d] > 0);
      CHECK(r.compiled[d]);
    } else {
      CHECK_INT(r.compiled[d], 0);
      CHECK(dl_sdpa_unsupported(r.status[d]));
    }
  }
  printf("  %.1f s\n", now() - t0);
}

int main(void)
{
  static const shape shapes[] = {
      {2, 4050, 8, 48, DL_BF16, 0, 1},  /* base */
      {2, 4050, 8, 128, DL_F16, 0, 1},  /* mp: head 128 */
      {2, 1013, 8, 48, DL_F16, 0, 1},   /* odd token count */
      {2, 4050, 8, 44, DL_BF16, 0, 0},  /* head not a multiple of 8: refused */
      {2, 4050, 8, 48, DL_BF16, 1, 1},  /* base, deterministic: true */
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    check_shape(&shapes[i]);
  printf("%d checks, %d failed\n", check_count, check_failures);
  return check_failures ? 1 : 0;
}

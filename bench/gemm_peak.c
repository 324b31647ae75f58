/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/gemm_peak.c: the anchor of bench/gpu-vs-torch: the bf16 matrix
 * product rate cuBLAS reaches on this GPU (bf16 inputs and output, fp32
 * accumulation, random data), the ceiling dlpar-train's achieved TFLOP/s is
 * divided by. Mean of the timed products after warm-up, CUDA events.
 *   dlpar-gemm-peak [M N K] [repeats]          default 8192 8192 8192 20 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* On a CUDA error: file:line, the call and cudaGetErrorString on stderr, exit 1. */
#define CUDA_OR_EXIT(call)                                                                                   \
  do {                                                                                                       \
    cudaError_t rc_ = (call);                                                                                \
    if (rc_ != cudaSuccess) {                                                                                \
      fprintf(stderr, "dlpar-gemm-peak: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(rc_)); \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

/* On a cuBLAS error: file:line, the call and cuBLAS's string on stderr, exit 1. */
#define CUBLAS_OR_EXIT(call)                                                                                 \
  do {                                                                                                       \
    cublasStatus_t rc_ = (call);                                                                             \
    if (rc_ != CUBLAS_STATUS_SUCCESS) {                                                                      \
      fprintf(stderr, "dlpar-gemm-peak: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
              cublasGetStatusString(rc_));                                                                   \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

/* Round to nearest even; the values here are finite. */
static uint16_t bf16_from_float(float value)
{
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* n bf16 values uniform in [-1, 1), on the device. */
static void *device_random_bf16(size_t n, uint64_t seed)
{
  uint16_t *host = malloc(n * sizeof(uint16_t));
  void *device = NULL;
  if (!host) {
    fprintf(stderr, "dlpar-gemm-peak: out of host memory for %zu values\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    host[i] = bf16_from_float((float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0));
  }
  CUDA_OR_EXIT(cudaMalloc(&device, n * sizeof(uint16_t)));
  CUDA_OR_EXIT(cudaMemcpy(device, host, n * sizeof(uint16_t), cudaMemcpyHostToDevice));
  free(host);
  return device;
}

int main(int argc, char **argv)
{
  int m = 8192, n = 8192, k = 8192, repeats = 20;
  if (argc >= 4)
    m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  if (argc >= 5)
    repeats = atoi(argv[4]);
  if (m <= 0 || n <= 0 || k <= 0 || repeats <= 0) {
    fprintf(stderr, "dlpar-gemm-peak: M N K and repeats must be positive: dlpar-gemm-peak [M N K] [repeats]\n");
    return 2;
  }
  struct cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  void *a = device_random_bf16((size_t)m * k, 1), *b = device_random_bf16((size_t)k * n, 2), *c = NULL;
  CUDA_OR_EXIT(cudaMalloc(&c, (size_t)m * n * sizeof(uint16_t)));
  cublasHandle_t handle;
  CUBLAS_OR_EXIT(cublasCreate(&handle));
  const float one = 1.0f, zero = 0.0f;
  cudaEvent_t start, stop;
  CUDA_OR_EXIT(cudaEventCreate(&start));
  CUDA_OR_EXIT(cudaEventCreate(&stop));
  for (int i = 0; i < 3 + repeats; i++) {
    if (i == 3)
      CUDA_OR_EXIT(cudaEventRecord(start, 0));
    CUBLAS_OR_EXIT(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, m, b, CUDA_R_16BF,
                                k, &zero, c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  CUDA_OR_EXIT(cudaEventRecord(stop, 0));
  CUDA_OR_EXIT(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_OR_EXIT(cudaEventElapsedTime(&ms, start, stop));
  const double flops = 2.0 * m * n * k * repeats;
  printf("gemm_peak: %s: bf16 %dx%dx%d, fp32 accumulation, %d repeats: %.1f TFLOP/s\n", prop.name, m, n, k,
         repeats, flops / (ms * 1e-3) / 1e12);
  CUBLAS_OR_EXIT(cublasDestroy(handle));
  CUDA_OR_EXIT(cudaFree(a));
  CUDA_OR_EXIT(cudaFree(b));
  CUDA_OR_EXIT(cudaFree(c));
  return 0;
}

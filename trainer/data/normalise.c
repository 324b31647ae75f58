/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/normalise.c: (x - mean) / std, the loader's normalisation,
 * in a plain vectorised form and, on x86-64 with AVX, a streaming one.
 * A sample's normalised steps are written once and read next by the
 * host-to-device copy or by the model a batch later, long after they have
 * left the caches. Ordinary stores first read each output line from memory
 * and then write it back; non-temporal stores only write it. On the CPU
 * machine that, with the loader's pieces made small enough to stay in L2,
 * took it from 0.78 to 0.96 of dd's page-cache bandwidth (bench/RESULTS.md,
 * 2026-12-07). Both forms divide, as numpy
 * does, so they agree bit for bit (tests/unit/test_normalise). */
#include "config.h"

#include "trainer/data/normalise.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_STREAMING 1
#else
#define HAVE_STREAMING 0
#endif

/* The sanitizers do not see non-temporal stores (GCC's ASan and both
 * compilers' TSan let a bad one through), so a sanitized build stores the
 * same groups through the caches, and they stay checked. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif
#ifdef SANITIZED
#define STORE_GROUP _mm256_store_ps
#else
#define STORE_GROUP _mm256_stream_ps
#endif

/* Below this many floats a run is normalised the plain way: partly filled
 * lines stored past the caches cost more than they save. */
enum { STREAMING_MIN_FLOATS = 1024 };

/* GCC's -O2 vectorises no loop of unknown length, and a scalar divide runs
 * at a quarter of memory speed, hence omp simd. Finiteness is one flag. */
bool normalise_floats_plain(const float *restrict x, size_t n, float mean, float std, float *restrict out)
{
  int bad = 0;
#pragma omp simd reduction(| : bad)
  for (size_t i = 0; i < n; i++) {
    bad |= !(fabsf(x[i]) <= FLT_MAX);
    out[i] = (x[i] - mean) / std;
  }
  return !bad;
}

#if HAVE_STREAMING
bool normalise_streaming_available(void)
{
  return __builtin_cpu_supports("avx");
}

/* The floats before out's first 32-byte boundary and after its last whole
 * group of eight go the plain way; the groups between are stored with
 * _mm256_stream_ps, then fenced, so they are in memory before the caller
 * hands the slot to another thread. A float is finite where its magnitude
 * is at most FLT_MAX (an ordered compare: NaN fails it). */
__attribute__((target("avx"))) bool normalise_floats_streaming(const float *restrict x, size_t n, float mean,
                                                               float std, float *restrict out)
{
  const __m256 mean8 = _mm256_set1_ps(mean), std8 = _mm256_set1_ps(std), largest = _mm256_set1_ps(FLT_MAX);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  size_t head = (32 - ((uintptr_t)out & 31)) % 32 / sizeof(float), i;
  bool ok;
  head = head < n ? head : n;
  ok = normalise_floats_plain(x, head, mean, std, out);
  for (i = head; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    finite = _mm256_and_ps(finite, _mm256_cmp_ps(_mm256_and_ps(v, magnitude), largest, _CMP_LE_OQ));
    STORE_GROUP(out + i, _mm256_div_ps(_mm256_sub_ps(v, mean8), std8));
  }
  _mm_sfence();
  ok &= normalise_floats_plain(x + i, n - i, mean, std, out + i);
  return ok && _mm256_movemask_ps(finite) == 0xff;
}
#else
bool normalise_streaming_available(void)
{
  return false;
}

bool normalise_floats_streaming(const float *restrict x, size_t n, float mean, float std, float *restrict out)
{
  return normalise_floats_plain(x, n, mean, std, out);
}
#endif

bool normalise_floats(const float *restrict x, size_t n, float mean, float std, float *restrict out)
{
  if (n >= STREAMING_MIN_FLOATS && normalise_streaming_available())
    return normalise_floats_streaming(x, n, mean, std, out);
  return normalise_floats_plain(x, n, mean, std, out);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_normalise.c: the loader's normalisation
 * (trainer/data/normalise.c). The plain form against (x - mean) / std
 * float by float; the streaming form against the plain one bit for bit,
 * at every alignment of out and lengths around its groups of eight; a NaN
 * or an infinity anywhere in a run (head, groups, tail) reported by both;
 * zeros, denormals and the largest floats among the inputs. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <time.h>

#include "tests/unit/check.h"
#include "trainer/data/normalise.h"

enum { MOST = 5000, PAD = 16 };

/* Fresh random floats over several magnitudes, from a seeded LCG */
static void fill(float *x, size_t n, unsigned *state)
{
  for (size_t i = 0; i < n; i++) {
    *state = *state * 1664525u + 1013904223u;
    x[i] = ((float)(*state >> 8) / 16777216.0f - 0.5f) * powf(10.0f, (float)(*state % 7) - 2.0f);
  }
}

static void test_plain(const float *x)
{
  static float out[MOST];
  const float mean = 273.15f, std = 17.5f;
  bool exact = true;
  CHECK(normalise_floats_plain(x, MOST, mean, std, out));
  for (size_t i = 0; i < MOST; i++) {
    volatile float diff = x[i] - mean; /* one rounding at a time, as numpy's float32 does */
    exact &= out[i] == diff / std;
  }
  CHECK(exact);
}

/* Both forms over x[0..n) into out at `shift` floats past a 32-byte
 * boundary: the same bits and the same finiteness */
static void compare(const float *x, size_t n, size_t shift)
{
  static float plain[MOST + PAD] __attribute__((aligned(32))), streamed[MOST + PAD] __attribute__((aligned(32)));
  bool plain_ok, streamed_ok;
  for (size_t i = 0; i < MOST + PAD; i++) /* a float either form forgets to write stays NaN, and differs */
    plain[i] = streamed[i] = -NAN;
  plain_ok = normalise_floats_plain(x, n, -3.25f, 0.3f, plain + shift);
  streamed_ok = normalise_floats_streaming(x, n, -3.25f, 0.3f, streamed + shift);
  CHECK(plain_ok == streamed_ok);
  CHECK(memcmp(plain + shift, streamed + shift, n * sizeof(float)) == 0);
}

/* One NaN or infinity at x[at]: both forms say so over the whole run, and
 * the run before it is all finite */
static void check_bad(float *x, size_t at, float value, size_t shift)
{
  static float out[MOST + PAD] __attribute__((aligned(32)));
  const float kept = x[at];
  x[at] = value;
  compare(x, MOST, shift);
  CHECK(!normalise_floats_streaming(x, MOST, 0.0f, 1.0f, out + shift));
  CHECK(!normalise_floats(x, MOST, 0.0f, 1.0f, out + shift));
  CHECK(normalise_floats(x, at, 0.0f, 1.0f, out + shift));
  x[at] = kept;
}

static void test_streaming(float *x)
{
  static float out[MOST + PAD] __attribute__((aligned(32)));
  const size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 1023, 1024, 1031, MOST};
  const size_t places[] = {0, 3, 40, 2500, MOST - 3, MOST - 1}; /* the head, groups, the tail */
  const float bad[] = {NAN, INFINITY, -INFINITY};
  for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
    for (size_t shift = 0; shift < 8; shift++)
      compare(x, lengths[l], shift);
  for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
    for (size_t p = 0; p < sizeof(places) / sizeof(places[0]); p++)
      for (size_t shift = 0; shift < 8; shift += 3)
        check_bad(x, places[p], bad[b], shift);
  CHECK(normalise_floats_streaming(x, MOST, 0.0f, 1.0f, out)); /* the edges are finite, FLT_MAX included */
}

/* The edges of float among the random ones: zero of either sign, the
 * smallest denormal, a larger one, the largest magnitudes */
static void add_edges(float *x)
{
  const float edges[] = {0.0f, -0.0f, FLT_TRUE_MIN, -1e-40f, FLT_MAX, -FLT_MAX};
  for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
    x[10 + 997 * i] = edges[i];
}

/* DLPAR_TEST_SEED=N replays a run; each run prints its seed */
int main(void)
{
  static float x[MOST];
  const char *seed = getenv("DLPAR_TEST_SEED");
  unsigned state = seed ? (unsigned)strtoul(seed, NULL, 10) : (unsigned)time(NULL);
  printf("seed %u (DLPAR_TEST_SEED=%u replays it)\n", state, state);
  fill(x, MOST, &state);
  add_edges(x);
  test_plain(x);
  if (!normalise_streaming_available()) {
    if (check_report("test_normalise"))
      return 1;
    SKIP("this CPU or build has no streaming form (x86-64 with AVX): the plain one passed %d checks", check_count);
  }
  test_streaming(x);
  return check_report("test_normalise");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/rng.c: splitmix64 streams (see rng.h). */
#include "config.h"

#include "trainer/data/rng.h"

#include <math.h>

void rng_init(dlpar_rng *rng, uint64_t seed, uint64_t stream)
{
  rng->state = seed * 0x9e3779b97f4a7c15ULL ^ (stream + 1) * 0xd1b54a32d192ed03ULL;
  rng_next(rng);
}

uint64_t rng_next(dlpar_rng *rng)
{
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double rng_uniform(dlpar_rng *rng)
{
  return (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

double rng_normal(dlpar_rng *rng)
{
  const double u1 = 1.0 - rng_uniform(rng), u2 = rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_trunc_normal(dlpar_rng *rng, double std, double lo, double hi)
{
  for (;;) {
    const double x = std * rng_normal(rng);
    if (x >= lo && x <= hi)
      return x;
  }
}

void rng_permutation(dlpar_rng *rng, long *perm, long n)
{
  for (long i = 0; i < n; i++)
    perm[i] = i;
  for (long i = n - 1; i > 0; i--) {
    const long j = (long)(rng_next(rng) % (uint64_t)(i + 1));
    const long t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

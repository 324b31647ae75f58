/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/rng.h: the trainer's random numbers, splitmix64 streams
 * keyed by seed and stream, so every tensor's initial values and every
 * epoch's shuffle are the same whatever the grid and whatever ran before. */
#ifndef DLPAR_RNG_H
#define DLPAR_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t state;
} dlpar_rng;

void rng_init(dlpar_rng *rng, uint64_t seed, uint64_t stream);
uint64_t rng_next(dlpar_rng *rng);
double rng_uniform(dlpar_rng *rng); /* [0, 1) */
double rng_normal(dlpar_rng *rng);  /* standard normal, by Box-Muller */
/* normal(0, std) redrawn until inside [lo, hi], as timm's trunc_normal_ */
double rng_trunc_normal(dlpar_rng *rng, double std, double lo, double hi);
/* a uniformly random permutation of 0..n-1, by Fisher-Yates */
void rng_permutation(dlpar_rng *rng, long *perm, long n);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/normalise.h: out = (x - mean) / std over a run of floats,
 * the tutorial's numpy arithmetic bit for bit, saying whether every x was
 * finite. The loader's last pass over every sample. */
#ifndef DLPAR_TRAINER_NORMALISE_H
#define DLPAR_TRAINER_NORMALISE_H

#include <stdbool.h>
#include <stddef.h>

/* The one the loader calls: the streaming form where this CPU has it and
 * the run is long enough, else the plain one. True where every x is finite. */
bool normalise_floats(const float *restrict x, size_t n, float mean, float std, float *restrict out);

/* The reference: one vectorised pass whose stores go through the caches. */
bool normalise_floats_plain(const float *restrict x, size_t n, float mean, float std, float *restrict out);

/* Whether this build and this CPU have normalise_floats_streaming (x86-64
 * with AVX). */
bool normalise_streaming_available(void);

/* Eight floats at a time with AVX, the results stored past the caches
 * (non-temporal), so writing out reads nothing back from memory first.
 * Only where normalise_streaming_available() says so. */
bool normalise_floats_streaming(const float *restrict x, size_t n, float mean, float std, float *restrict out);

#endif

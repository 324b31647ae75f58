/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/reduce.cuh: deterministic column reductions that use the
 * whole GPU (bias gradients: dl_column_sum; LayerNorm's weight and bias
 * gradients: dl_layernorm_bwd), in two stages, no atomics:
 *  stage 1: a grid of (column tiles of 32) x (row chunks of 256) blocks of
 *           32 x 8 threads; in block (tile, chunk) each of the 8 row lanes
 *           adds its 32 rows in order, then lane 0 adds the 8 lanes in
 *           order and writes partials[output][chunk][column] (fp32, in the
 *           caller's workspace: dl_column_partials_bytes);
 *  stage 2: the same kernel over the partials: one block per column tile,
 *           its 8 lanes walking the chunks in order, then the lanes in
 *           order, into the result (= or +=).
 * The chunk is a fixed 256 rows whatever the device, so a shape's result
 * is the same bits on every run and every GPU.
 * Sized for the tutorial on an H100 (132 SMs): rows = 16 x 4050 = 64800 ->
 * 254 chunks; columns 384 (base embed), 1024 (mp embed), 1536 (base MLP),
 * 3072 -> 12, 32, 48, 96 tiles: 3048 to 24384 blocks, 3 to 23 waves of
 * 8 blocks per SM (the single-stage kernels these replace ran 12 to 96
 * blocks in all). Stage 2 reads 254 x cols x 4 bytes, under 1% of what
 * stage 1 reads of bf16 and 0.4% of fp32, in 12 to 96 blocks.
 * Achieved bandwidth, bytes read / time, against the H100 SXM's ~3.35 TB/s
 * (test_kernels_gpu prints the measured figures; these are the targets at
 * ~85% of peak, 2.85 TB/s, UNMEASURED):
 *   column sum bf16 64800 x  384:  49.8 MB -> ~17 us  (was ~940 us a launch: 129 ms / 137)
 *   column sum bf16 64800 x 1536: 199.1 MB -> ~70 us
 *   column sum bf16 64800 x 3072: 398.1 MB -> ~140 us
 *   LN params  bf16 64800 x  384:  99.5 MB (dout, inp) + 0.5 MB (mean, rstd) -> ~35 us
 *                                  (was ~1870 us a launch: 88 ms / 47)
 *   LN params  bf16 64800 x 1024: 265.4 MB -> ~93 us
 * Each thread loads one 16- or 32-bit value a row (a warp: 64 or 128
 * contiguous bytes), 4 rows unrolled: 8 to 16 KB in flight per SM, about
 * what Little's law asks of HBM3 (3.35 TB/s x ~600 ns / 132 SMs). */
#ifndef DLPAR_KERNELS_CUDA_REDUCE_CUH
#define DLPAR_KERNELS_CUDA_REDUCE_CUH

#include "kernels/cuda/common.cuh"

enum { REDUCE_TILE = 32, REDUCE_LANES = 8, REDUCE_CHUNK = 256, REDUCE_MAX_CHUNKS = 65535 };

/* Where a block's sums go: dst[o][blockIdx.y * cols + column], = or += */
template <int NOUT> struct reduce_sink {
  float *dst[NOUT];
  int accumulate;
};

/* Stage 2's terms: the partials of stage 1, partials[o][chunk][column]. */
template <int NOUT> struct partial_term {
  const float *partials;
  int chunks, cols;
  __device__ void add(float *acc, int row, int col) const
  {
    for (int o = 0; o < NOUT; o++)
      acc[o] += partials[((size_t)o * chunks + row) * cols + col];
  }
};

/* Block (tile, chunk) reduces rows [chunk * rows_per_chunk, ...) of its 32
 * columns; Term::add(acc, row, col) adds row's terms of column col. */
template <int NOUT, typename Term>
__global__ void column_reduce_kernel(reduce_sink<NOUT> sink, Term term, int rows, int cols, int rows_per_chunk)
{
  __shared__ float lanes[NOUT][REDUCE_LANES][REDUCE_TILE + 1];
  const int col = blockIdx.x * REDUCE_TILE + threadIdx.x, first = blockIdx.y * rows_per_chunk;
  const int end = rows - first < rows_per_chunk ? rows : first + rows_per_chunk;
  float acc[NOUT];
  for (int o = 0; o < NOUT; o++)
    acc[o] = 0.0f;
  if (col < cols) {
#pragma unroll 4
    for (int r = first + threadIdx.y; r < end; r += REDUCE_LANES)
      term.add(acc, r, col);
  }
  for (int o = 0; o < NOUT; o++)
    lanes[o][threadIdx.y][threadIdx.x] = acc[o];
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols)
    return;
  for (int o = 0; o < NOUT; o++) {
    float sum = lanes[o][0][threadIdx.x];
    for (int y = 1; y < REDUCE_LANES; y++)
      sum += lanes[o][y][threadIdx.x];
    float *at = sink.dst[o] + (size_t)blockIdx.y * cols + col;
    *at = sink.accumulate ? *at + sum : sum;
  }
}

static inline int reduce_chunks(int rows)
{
  return (rows + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
}

/* out[o][c] (+)= sum over rows of term o of column c, both stages on s;
 * partials: dl_column_partials_bytes(rows, NOUT * cols) of device scratch. */
template <int NOUT, typename Term>
static int column_reduce(float *const *out, int accumulate, const Term &term, int rows, int cols, float *partials,
                         cudaStream_t s)
{
  const int chunks = reduce_chunks(rows);
  const dim3 threads(REDUCE_TILE, REDUCE_LANES), tiles((cols + REDUCE_TILE - 1) / REDUCE_TILE);
  const partial_term<NOUT> stage2_term = {partials, chunks, cols};
  reduce_sink<NOUT> stage1, stage2;
  if (rows < 1 || cols < 1 || chunks > REDUCE_MAX_CHUNKS || !partials)
    return (int)cudaErrorInvalidValue;
  for (int o = 0; o < NOUT; o++) {
    stage1.dst[o] = partials + (size_t)o * chunks * cols;
    stage2.dst[o] = out[o];
  }
  stage1.accumulate = 0;
  stage2.accumulate = accumulate;
  column_reduce_kernel<NOUT, Term><<<dim3(tiles.x, chunks), threads, 0, s>>>(stage1, term, rows, cols, REDUCE_CHUNK);
  DL_TRY_LAUNCH();
  column_reduce_kernel<NOUT, partial_term<NOUT> ><<<tiles, threads, 0, s>>>(stage2, stage2_term, chunks, cols, chunks);
  DL_TRY_LAUNCH();
  return 0;
}

#endif

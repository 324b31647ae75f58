/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/reduce.cuh: deterministic column reductions that use the
 * whole GPU, in two stages and without atomics. dl_column_sum uses them
 * for bias gradients, and dl_layernorm_bwd for LayerNorm's weight and bias
 * gradients, where the fused kernel of layernorm_rows.cuh writes stage 1's
 * partials itself.
 *  Stage 1 is a grid of column tiles by row chunks of 256, in blocks of
 *           256 threads that form 8 row lanes, which are warps of 32. A
 *           thread takes V consecutive columns, so a tile is 32 V columns.
 *           V = 4 where the width and the pointers allow, for 16 bytes of
 *           fp32 or 8 of 16-bit values a load, and 1 otherwise. In the
 *           block of a tile and a chunk, each row lane adds its 32 rows,
 *           lane, lane + 8 and so on, in order. Then lane 0 adds the 8
 *           lanes in order and writes partials[output][chunk][column] in
 *           fp32, in the caller's workspace of dl_column_partials_bytes.
 *  Stage 2 runs the same block code over the partials with V = 1. One
 *           block per tile of 32 columns has its 8 lanes walk the chunks
 *           in order, then adds the lanes in order, into the result with
 *           = or +=.
 * A column's order of additions does not depend on V, so it gives the same
 * bits as one value a thread. The chunk is a fixed 256 rows whatever the
 * device, so a shape's result is the same bits on every run and every GPU.
 * The block code is __host__ __device__ over a context that gives the
 * thread's index, the block barrier, and loads and stores of V values.
 * Here that is common.cuh's gpu_block_ctx. tests/unit/layernorm_emulator.cu
 * has a CPU stand-in and runs these very functions.
 * It is sized for the tutorial. rows = 16 x 4050 = 64800 make 254 chunks.
 * The columns are 384 for the base embedding, 1024 for the mp embedding,
 * 1536 for the base MLP and 3072, which make 3, 8, 12 and 24 tiles of 128
 * columns. That is 762 to 6096 blocks of 256 threads, or 1 to 6 waves of
 * 8 blocks per SM on 132 SMs. Stage 2 reads 254 x cols x 4 bytes, under
 * 1% of what stage 1 reads of bf16 and 0.4% of fp32.
 * Bytes read, from which test_kernels_gpu prints the achieved bandwidth:
 *   column sum bf16 64800 x  384:  49.8 MB, about 15 us at 3.35 TB/s
 *   column sum bf16 64800 x 3072: 398.1 MB, about 120 us
 * A warp reads 32 x 16 contiguous bytes a row in fp32, or 32 x 8 in 16
 * bits, with 4 rows unrolled. That keeps 64 KB in 16 bits to 128 KB in
 * fp32 in flight per SM at 8 blocks an SM, where one value a thread would
 * keep 16 to 32 KB in flight. */
#ifndef DLPAR_KERNELS_CUDA_REDUCE_CUH
#define DLPAR_KERNELS_CUDA_REDUCE_CUH

#include "kernels/cuda/common.cuh"

/* Loop unrolling, on the GPU only, because the host compiler does not know the pragma. */
#ifdef __CUDA_ARCH__
#define REDUCE_UNROLL _Pragma("unroll")
#define REDUCE_UNROLL_4 _Pragma("unroll 4")
#else
#define REDUCE_UNROLL
#define REDUCE_UNROLL_4
#endif

enum {
  REDUCE_TILE = 32,                              /* threads across a tile, V columns each */
  REDUCE_LANES = 8,                              /* row lanes: the block's warps */
  REDUCE_THREADS = REDUCE_TILE * REDUCE_LANES,   /* a block */
  REDUCE_CHUNK = 256,                            /* rows of a stage-1 block */
  REDUCE_MAX_CHUNKS = 65535
};

/* Where a block's sums go: dst[o][chunk * cols + column], = or += */
template <int NOUT> struct reduce_sink {
  float *dst[NOUT];
  int accumulate;
};

/* Stage 2's sink: the outputs out[0..NOUT), = or += */
template <int NOUT> static inline reduce_sink<NOUT> reduce_sink_to(float *const *out, int accumulate)
{
  reduce_sink<NOUT> sink;
  for (int o = 0; o < NOUT; o++)
    sink.dst[o] = out[o];
  sink.accumulate = accumulate;
  return sink;
}

/* Stage 1's sink: partials[o][chunk][col] of `chunks` chunks, overwritten */
template <int NOUT> static inline reduce_sink<NOUT> reduce_sink_partials(float *partials, int chunks, int cols)
{
  reduce_sink<NOUT> sink;
  for (int o = 0; o < NOUT; o++)
    sink.dst[o] = partials + (size_t)o * chunks * cols;
  sink.accumulate = 0;
  return sink;
}

/* A term adds its NOUT outputs for V consecutive columns col.. of a row,
 * through add(c, acc, row, col). On the host, by4() says whether its
 * pointers allow V = 4. */

/* The plain column sum of a rows x cols matrix, for dl_column_sum. */
template <typename T> struct column_value_term {
  const T *x;
  int cols;
  template <int V, typename Ctx>
  __host__ __device__ void add(const Ctx &c, float (&acc)[1][V], int row, int col) const
  {
    float v[V];
    c.load(v, x + (size_t)row * cols + col);
    for (int i = 0; i < V; i++)
      acc[0][i] += v[i];
  }
  bool by4() const { return vec_aligned<4>(x); }
};

/* Stage 2's terms: the partials of stage 1, partials[o][chunk][column]. */
template <int NOUT> struct partial_term {
  const float *partials;
  int chunks, cols;
  template <int V, typename Ctx>
  __host__ __device__ void add(const Ctx &c, float (&acc)[NOUT][V], int row, int col) const
  {
    for (int o = 0; o < NOUT; o++) {
      float v[V];
      c.load(v, partials + ((size_t)o * chunks + row) * cols + col);
      for (int i = 0; i < V; i++)
        acc[o][i] += v[i];
    }
  }
};

/* The floats of a block's shared memory: the row lanes' sums. */
template <int NOUT, int V> __host__ __device__ constexpr int reduce_shared_floats()
{
  return NOUT * REDUCE_LANES * REDUCE_TILE * V;
}

/* The block of a tile and a chunk reduces rows [chunk * rows_per_chunk, ...)
 * of its 32 V columns, where cols is a multiple of V. lanes holds
 * reduce_shared_floats. */
template <int NOUT, int V, typename Term, typename Ctx>
__host__ __device__ void column_reduce_block(const Ctx &c, float *lanes, const reduce_sink<NOUT> &sink,
                                             const Term &term, int rows, int cols, int rows_per_chunk, int tile,
                                             int chunk)
{
  const int x = c.tid % REDUCE_TILE, y = c.tid / REDUCE_TILE, col = (tile * REDUCE_TILE + x) * V;
  const int first = chunk * rows_per_chunk, end = rows - first < rows_per_chunk ? rows : first + rows_per_chunk;
  float acc[NOUT][V];
  for (int o = 0; o < NOUT; o++)
    for (int i = 0; i < V; i++)
      acc[o][i] = 0.0f;
  if (col < cols) {
    REDUCE_UNROLL_4
    for (int r = first + y; r < end; r += REDUCE_LANES)
      term.add(c, acc, r, col);
  }
  /* [o][lane][i][x]: a warp's stores on 32 consecutive floats */
  for (int o = 0; o < NOUT; o++)
    for (int i = 0; i < V; i++)
      lanes[((o * REDUCE_LANES + y) * V + i) * REDUCE_TILE + x] = acc[o][i];
  c.sync();
  if (y != 0 || col >= cols)
    return;
  for (int o = 0; o < NOUT; o++) {
    float sum[V], was[V];
    float *at = sink.dst[o] + (size_t)chunk * cols + col;
    for (int i = 0; i < V; i++) {
      sum[i] = lanes[(o * REDUCE_LANES * V + i) * REDUCE_TILE + x];
      for (int lane = 1; lane < REDUCE_LANES; lane++)
        sum[i] += lanes[((o * REDUCE_LANES + lane) * V + i) * REDUCE_TILE + x];
    }
    if (sink.accumulate) {
      c.load(was, at);
      for (int i = 0; i < V; i++)
        sum[i] = was[i] + sum[i];
    }
    c.store(at, sum);
  }
}

template <int NOUT, int V, typename Term>
__global__ void __launch_bounds__(REDUCE_THREADS)
    column_reduce_kernel(reduce_sink<NOUT> sink, Term term, int rows, int cols, int rows_per_chunk)
{
  __shared__ float lanes[reduce_shared_floats<NOUT, V>()];
  column_reduce_block<NOUT, V>(gpu_block_ctx{(int)threadIdx.x}, lanes, sink, term, rows, cols, rows_per_chunk,
                               (int)blockIdx.x, (int)blockIdx.y);
}

static inline int reduce_chunks(int rows)
{
  return (rows + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
}

/* A stage's grid: V columns a thread, tiles of 32 V columns x chunks. */
struct reduce_grid {
  int vec, tiles, chunks;
};

/* Stage 1 runs over rows x cols, with by4 when the term's pointers allow 4
 * values a load. Stage 2, with by4 false, runs over the chunks of stage 1
 * as its rows. */
static inline reduce_grid reduce_grid_of(int rows, int cols, bool by4)
{
  const int vec = by4 && cols % 4 == 0 ? 4 : 1;
  return {vec, (cols + REDUCE_TILE * vec - 1) / (REDUCE_TILE * vec), reduce_chunks(rows)};
}

/* Stage 2: out[o][c] = or += the sum over the chunks of partials[o][chunk][c]. */
template <int NOUT>
static int column_reduce_partials(float *const *out, int accumulate, const float *partials, int chunks, int cols,
                                  cudaStream_t s)
{
  const partial_term<NOUT> term = {partials, chunks, cols};
  const reduce_grid g = reduce_grid_of(chunks, cols, false);
  const reduce_sink<NOUT> sink = reduce_sink_to<NOUT>(out, accumulate);
  column_reduce_kernel<NOUT, 1, partial_term<NOUT> ><<<g.tiles, REDUCE_THREADS, 0, s>>>(sink, term, chunks, cols,
                                                                                          chunks);
  DL_TRY_LAUNCH();
  return 0;
}

/* out[o][c] = or += the sum over rows of term o of column c, both stages on
 * s. partials is dl_column_partials_bytes(rows, NOUT * cols) of device
 * scratch. */
template <int NOUT, typename Term>
static int column_reduce(float *const *out, int accumulate, const Term &term, int rows, int cols, float *partials,
                         cudaStream_t s)
{
  const reduce_grid g = reduce_grid_of(rows, cols, term.by4() && vec_aligned<4>(partials));
  reduce_sink<NOUT> stage1;
  if (rows < 1 || cols < 1 || g.chunks > REDUCE_MAX_CHUNKS || !partials)
    return (int)cudaErrorInvalidValue;
  stage1 = reduce_sink_partials<NOUT>(partials, g.chunks, cols);
  if (g.vec == 4)
    column_reduce_kernel<NOUT, 4, Term><<<dim3(g.tiles, g.chunks), REDUCE_THREADS, 0, s>>>(stage1, term, rows, cols,
                                                                                            REDUCE_CHUNK);
  else
    column_reduce_kernel<NOUT, 1, Term><<<dim3(g.tiles, g.chunks), REDUCE_THREADS, 0, s>>>(stage1, term, rows, cols,
                                                                                            REDUCE_CHUNK);
  DL_TRY_LAUNCH();
  return column_reduce_partials<NOUT>(out, accumulate, partials, g.chunks, cols, s);
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_layernorm_rows.c: LayerNorm's backward and the column
 * sums as the GPU runs them, in kernels/cuda/layernorm_rows.cuh and
 * kernels/cuda/reduce.cuh, along the paths and grids dl_layernorm_bwd and
 * dl_column_sum take. They run here without a GPU, in a stand-in for it named
 * so: layernorm_emulator.cu runs a fiber per CUDA thread. Inputs are fresh and
 * random.
 *  - The backward at C = 96, 64, 192, 384, 640, 1024 takes the fused block,
 *    with masked lanes and 1 to 8 column groups a lane. At C = 98, 1536 and
 *    with a dout off 16-byte alignment it takes the rows kernel and
 *    column_reduce, and the test checks that path was taken. BT leaves a
 *    partial chunk of 256 rows: 300, 513, 257, 100, 40, and 2600 for 11 chunks.
 *    dinp is added to a non-zero dinp, and dw and db to non-zero ones. The
 *    reference is the CPU's layernorm_bwd_f32, with its sums in float64, over
 *    the inputs as the kernels read them, that is with dout rounded to the
 *    activations' type. The outputs must be within 1e-5 in every type, and
 *    dinp's act copy within 1e-5 in fp32 or 2e-2 in bf16 and fp16; NaN fails.
 *  - dl_column_sum, stages 1 and 2, at 4 values a load and 1, against a
 *    float64 sum, within 1e-5; 4 values a load must give the same bits as 1.
 *  - Each runs twice, the second time with the threads in another order, and
 *    the second backward without the act copy: the same bits.
 * The GPU runs the same code in tests/gpu/test_kernels_gpu. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"
#include "tests/unit/emulators.h"

static const char *type_name(dl_dtype t)
{
  return t == DL_F32 ? "fp32" : t == DL_BF16 ? "bf16" : "fp16";
}

static float *copy_of(const float *x, size_t n)
{
  float *out = malloc(n * sizeof(float));
  memcpy(out, x, n * sizeof(float));
  return out;
}

/* ||got - ref|| / ||ref|| < bound, where NaN fails, printed either way */
static void check_error(const char *label, const char *what, const float *got, const float *ref, size_t n,
                        double bound)
{
  const double e = rel_error(got, ref, n);
  check_count++;
  if (!(e < bound)) {
    check_failures++;
    fprintf(stderr, "%s:%d: FAILED: %s %s: relative error %.3g, bound %.0e\n", __FILE__, __LINE__, label, what, e,
            bound);
  } else {
    printf("ok: %s %s: relative error %.2e (bound %.0e)\n", label, what, e, bound);
  }
}

static void check_same_bits(const char *label, const char *what, const float *first, const float *second, size_t n)
{
  check_count++;
  if (memcmp(first, second, n * sizeof(float)) != 0) {
    check_failures++;
    fprintf(stderr, "%s:%d: FAILED: %s %s: two runs differ\n", __FILE__, __LINE__, label, what);
  }
}

/* One backward: the path taken, as groups and vec of ln_emulation, and the
 * outputs against the reference. Then again in another thread order without
 * the act copy: the same bits. */
static void check_backward(int BT, int C, dl_dtype act, bool dout_unaligned, int schedule, int want_groups,
                           int want_vec)
{
  const size_t n = (size_t)BT * C;
  float *x = host_random(n, 2), *w = host_random(C, 1), *b = host_random(C, 1), *dout = host_random(n, 1);
  float *dinp0 = host_random(n, 1), *dw0 = host_random(C, 1), *db0 = host_random(C, 1), *out = malloc(n * 4);
  float *mean = malloc(BT * sizeof(float)), *rstd = malloc(BT * sizeof(float)), *dout_act = copy_of(dout, n);
  float *ref_dinp = copy_of(dinp0, n), *ref_dw = copy_of(dw0, C), *ref_db = copy_of(db0, C);
  float *got[2][3] = {{copy_of(dinp0, n), copy_of(dw0, C), copy_of(db0, C)},
                      {copy_of(dinp0, n), copy_of(dw0, C), copy_of(db0, C)}};
  float *got_act = host_zeros(n);
  const char *const names[3] = {"dinp (fp32, added to)", "dweight (added to)", "dbias (added to)"};
  const size_t sizes[3] = {n, (size_t)C, (size_t)C};
  const float *const refs[3] = {ref_dinp, ref_dw, ref_db};
  char label[128];
  clock_t start = clock();
  layernorm_fwd_f32(out, mean, rstd, x, w, b, BT, C, 1e-6f);
  ln_round_to_act(dout_act, n, act);
  layernorm_bwd_f32(ref_dinp, ref_dw, ref_db, dout_act, x, w, mean, rstd, BT, C);
  for (int run = 0; run < 2; run++) {
    ln_emulation e = {dout,    x,   w,     mean,      rstd, got[run][0], got[run][1], got[run][2],
                      run == 0 ? got_act : NULL,  BT,   C,           act,         dout_unaligned,
                      run == 0 ? schedule : schedule == 0 ? -1 : -schedule, -1, -1};
    CHECK_INT(ln_emulate_bwd(&e), 0);
    CHECK_INT(e.groups, want_groups);
    CHECK_INT(e.vec, want_vec);
  }
  snprintf(label, sizeof label, "layernorm backward BT=%d C=%d %s%s (%s, %.1f s):", BT, C, type_name(act),
           dout_unaligned ? ", dout unaligned" : "",
           want_groups ? "fused block" : want_vec == 4 ? "rows kernel, 4 a load" : "rows kernel, 1 a load",
           (double)(clock() - start) / CLOCKS_PER_SEC);
  for (int i = 0; i < 3; i++) {
    check_error(label, names[i], got[0][i], refs[i], sizes[i], 1e-5);
    check_same_bits(label, names[i], got[0][i], got[1][i], sizes[i]);
  }
  check_error(label, "dinp's act copy", got_act, ref_dinp, n, bound_for(act));
  free(x), free(w), free(b), free(dout), free(dinp0), free(dw0), free(db0), free(out), free(mean), free(rstd);
  free(dout_act), free(ref_dinp), free(ref_dw), free(ref_db), free(got_act);
  for (int run = 0; run < 2; run++)
    for (int i = 0; i < 3; i++)
      free(got[run][i]);
}

/* dl_column_sum against a float64 sum over x as the kernels read it. It runs
 * at 4 values a load where the width allows, at 1 with x unaligned, and in
 * another thread order: the same bits. */
static void check_column_sum(int rows, int cols, dl_dtype act, int accumulate, int want_vec)
{
  const size_t n = (size_t)rows * cols;
  float *x = host_random(n, 1), *x_act = copy_of(x, n), *start = host_random(cols, 1);
  float *want = malloc(cols * sizeof(float));
  float *got[3] = {copy_of(start, cols), copy_of(start, cols), copy_of(start, cols)};
  char label[96];
  ln_round_to_act(x_act, n, act);
  for (int c = 0; c < cols; c++) {
    double sum = accumulate ? start[c] : 0.0;
    for (int r = 0; r < rows; r++)
      sum += x_act[(size_t)r * cols + c];
    want[c] = (float)sum;
  }
  for (int run = 0; run < 3; run++) {
    ln_column_emulation e = {x, got[run], rows, cols, accumulate, act, run == 1, run == 2 ? -1 : 0, -1};
    CHECK_INT(ln_emulate_column_sum(&e), 0);
    CHECK_INT(e.vec, run == 1 ? 1 : want_vec);
  }
  snprintf(label, sizeof label, "column sum %d x %d %s%s (%d a load):", rows, cols, type_name(act),
           accumulate ? ", added to" : "", want_vec);
  check_error(label, "sum", got[0], want, cols, 1e-5);
  check_same_bits(label, "sum, 1 value a load", got[0], got[1], cols);
  check_same_bits(label, "sum, warps descending", got[0], got[2], cols);
  free(x), free(x_act), free(start), free(want);
  for (int run = 0; run < 3; run++)
    free(got[run]);
}

int main(void)
{
  static const struct {
    int BT, C;
    dl_dtype act;
    bool dout_unaligned;
    int schedule, groups, vec;
  } cases[] = {
      {300, 96, DL_F32, false, 0, 1, 4},    /* 3 lanes of 4 masked; chunks of 256 and 44 rows */
      {300, 96, DL_BF16, false, 1, 1, 4},
      {300, 98, DL_F32, false, -1, 0, 1},   /* the rows kernel: C % 4 != 0 */
      {300, 98, DL_BF16, false, 0, 0, 1},
      {300, 96, DL_BF16, true, 0, 0, 1},    /* dout off alignment: the rows kernel */
      {513, 384, DL_F32, false, 1, 3, 4},   /* base; a last chunk of one row */
      {513, 384, DL_BF16, false, 0, 3, 4},
      {300, 1024, DL_F32, false, -1, 8, 4}, /* mp */
      {300, 1024, DL_BF16, false, 0, 8, 4},
      {513, 64, DL_F32, false, 0, 1, 4},    /* half the lanes masked */
      {257, 192, DL_BF16, false, -1, 2, 4}, /* the second group half masked */
      {100, 640, DL_F16, false, 1, 5, 4},   /* a partial first chunk only */
      {40, 1536, DL_BF16, false, 0, 0, 4},  /* wider than the fused block: rows kernel, 4 a load */
      {2600, 384, DL_BF16, false, 0, 3, 4}, /* 11 chunks: stage 2's 8 lanes all add */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_backward(cases[i].BT, cases[i].C, cases[i].act, cases[i].dout_unaligned, cases[i].schedule,
                   cases[i].groups, cases[i].vec);
  check_column_sum(300, 384, DL_BF16, 0, 4);
  check_column_sum(513, 96, DL_F32, 1, 4);
  check_column_sum(300, 98, DL_BF16, 1, 1);
  check_column_sum(257, 1536, DL_F16, 0, 4);
  check_column_sum(2600, 384, DL_F32, 1, 4);
  return check_report("test_layernorm_rows");
}

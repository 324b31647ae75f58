/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_attention_mma.c: the tensor-core attention's block code in
 * kernels/cuda/attention_mma_tiles.cuh against the CPU reference in
 * kernels/cpu. That code covers its MMA fragments, 3xTF32 split, masks,
 * online softmax, shuffles, staging and dq's ordered turns. It runs here
 * without a GPU, in a stand-in for it named so: attention_mma_emulator.cu
 * runs a fiber per CUDA thread and the PTX ISA's m16n8k8 TF32 fragments.
 * Forward o, lse and backward dq, dk, dv on fresh random inputs. Whole grids
 * run at small token counts, with partial tiles, several heads, heads padded
 * from 13, 20, 48, 64 and 128 dims, and both cp.async landings. The first and
 * last tiles run at the ViT's 4050 and 4049 tokens, on the rows those blocks
 * own. 3xTF32 must be within 1e-5 of the fp32 reference and plain TF32 within
 * 3e-3; NaN fails. Each error is also printed against the float64 reference,
 * beside the FMA kernels' error there from test_attention_tiles' emulation.
 * The emulation also fails a vector shared-memory access off its alignment.
 * This test also fails each block's shared memory over sm_90's 227 KB or off
 * the blocks an SM it was sized for. The GPU runs the same code in
 * tests/gpu/test_attention_gpu. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"
#include "tests/unit/emulators.h"

enum { WHOLE = 0, EDGES = 1 };

/* The references of one input set: fp32 in attn_result, and float64. */
typedef struct {
  int B, N, NH, HD;
  float scale, *q, *k, *v, *dout;
  attn_result f32;
  double *o, *lse, *dq, *dk, *dv;
} case_data;

static double *to_double(const float *x, size_t n)
{
  double *out = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    out[i] = x[i];
  return out;
}

static case_data make_case(int B, int N, int NH, int HD)
{
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  case_data c = {B, N, NH, HD, 1.0f / sqrtf((float)HD), host_random(n, 1), host_random(n, 1), host_random(n, 1),
                 host_random(n, 1), {host_zeros(n), host_zeros(rows), host_zeros(n), host_zeros(n), host_zeros(n)},
                 calloc(n, 8), calloc(rows, 8), calloc(n, 8), calloc(n, 8), calloc(n, 8)};
  double *q = to_double(c.q, n), *k = to_double(c.k, n), *v = to_double(c.v, n), *dout = to_double(c.dout, n);
  attention_fwd_f32(c.f32.o, c.f32.lse, c.q, c.k, c.v, B, N, NH, HD, c.scale);
  attention_bwd_f32(c.f32.dq, c.f32.dk, c.f32.dv, c.dout, c.q, c.k, c.v, c.f32.o, c.f32.lse, B, N, NH, HD, c.scale);
  attention_fwd_f64(c.o, c.lse, q, k, v, B, N, NH, HD, (double)c.scale);
  attention_bwd_f64(c.dq, c.dk, c.dv, dout, q, k, v, c.o, c.lse, B, N, NH, HD, (double)c.scale);
  free(q), free(k), free(v), free(dout);
  return c;
}

static void free_case(case_data *c)
{
  free(c->q), free(c->k), free(c->v), free(c->dout);
  free_attn_result(&c->f32);
  free(c->o), free(c->lse), free(c->dq), free(c->dk), free(c->dv);
}

/* ||got - ref|| / ||ref|| over the token rows picked, every head, of a
 * [B, N, NH, width] tensor, or of lse [B, NH, N] with width 0. rows NULL picks
 * all. ref is fp32 when ref32 is set, else float64. NaN if got has a
 * non-finite value. */
static double rows_error(const float *got, const float *ref32, const double *ref64, const bool *rows,
                         const case_data *c, int width)
{
  double num = 0, den = 0;
  for (int b = 0; b < c->B; b++)
    for (int i = 0; i < c->N; i++)
      for (int h = 0; h < c->NH; h++)
        for (int d = 0; d < (width ? width : 1); d++) {
          const size_t at = width ? (((size_t)b * c->N + i) * c->NH + h) * width + d : ((size_t)b * c->NH + h) * c->N + i;
          const double ref = ref32 ? ref32[at] : ref64[at];
          if (rows && !rows[i])
            continue;
          if (!isfinite(got[at]))
            return NAN;
          num += (got[at] - ref) * (got[at] - ref);
          den += ref * ref;
        }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Each output against the fp32 reference, checked < bound, and float64, printed. */
static void compare(const char *label, const attn_result *got, const case_data *c, const bool *o_rows,
                    const bool *dq_rows, const bool *dkv_rows, double bound)
{
  const float *const got_fields[5] = {got->o, got->lse, got->dq, got->dk, got->dv};
  const float *const f32_fields[5] = {c->f32.o, c->f32.lse, c->f32.dq, c->f32.dk, c->f32.dv};
  const double *const f64_fields[5] = {c->o, c->lse, c->dq, c->dk, c->dv};
  const bool *const rows[5] = {o_rows, o_rows, dq_rows, dkv_rows, dkv_rows};
  const char *const names[5] = {"o", "lse", "dq", "dk", "dv"};
  for (int i = 0; i < 5; i++) {
    const int width = i == 1 ? 0 : c->HD;
    const double e32 = rows_error(got_fields[i], f32_fields[i], NULL, rows[i], c, width);
    const double e64 = rows_error(got_fields[i], NULL, f64_fields[i], rows[i], c, width);
    const double ref32 = rows_error(f32_fields[i], NULL, f64_fields[i], rows[i], c, width);
    check_count++;
    if (!(e32 < bound)) {
      check_failures++;
      fprintf(stderr, "%s:%d: FAILED: %s %s: relative error %.3g against fp32, bound %.0e\n", __FILE__, __LINE__,
              label, names[i], e32, bound);
    } else {
      printf("ok: %s %s: %.2e against fp32 (bound %.0e); against float64 %.2e (the fp32 reference's %.2e)\n", label,
             names[i], e32, bound, e64, ref32);
    }
  }
}

/* The tensor-core block code on one input set: whole grids or the edge tiles. */
static void check_mma(const case_data *c, int passes, int mode, bool copies_at_wait, int schedule)
{
  const size_t n = (size_t)c->B * c->N * c->NH * c->HD, rows = (size_t)c->B * c->NH * c->N;
  attn_result got = {host_zeros(n), host_zeros(rows), host_zeros(n), host_zeros(n), host_zeros(n)};
  bool *o_rows = calloc(c->N, 1), *dq_rows = calloc(c->N, 1), *dkv_rows = calloc(c->N, 1);
  const am_emulation e = {
      {c->q, c->k, c->v, c->dout, got.o, got.lse, got.dq, got.dk, got.dv, c->B, c->N, c->NH, c->HD, c->scale, false},
      o_rows,
      dq_rows,
      dkv_rows,
      passes,
      mode == EDGES,
      copies_at_wait,
      schedule};
  const clock_t start = clock();
  char label[128];
  /* the backward reads o and lse where the edges' forward leaves them */
  memcpy(got.o, c->f32.o, n * sizeof(float));
  memcpy(got.lse, c->f32.lse, rows * sizeof(float));
  CHECK_INT(am_emulate(&e), 0);
  snprintf(label, sizeof label, "%s %s B=%d N=%d NH=%d HD=%d (%s, copies at the %s, %s, %.1f s):",
           passes == 3 ? "3xTF32" : "TF32", mode == EDGES ? "edge tiles" : "whole grid", c->B, c->N, c->NH, c->HD,
           mode == EDGES ? "first and last tiles' rows" : "every row", copies_at_wait ? "wait" : "issue",
           schedule == 0 ? "warps in lockstep" : schedule > 0 ? "warps ascending" : "warps descending",
           (double)(clock() - start) / CLOCKS_PER_SEC);
  compare(label, &got, c, o_rows, dq_rows, dkv_rows, passes == 3 ? 1e-5 : 3e-3);
  free_attn_result(&got);
  free(o_rows), free(dq_rows), free(dkv_rows);
}

/* The FMA kernels' block code, via test_attention_tiles' emulation, on the same inputs: its errors beside. */
static void check_fma(const case_data *c)
{
  const size_t n = (size_t)c->B * c->N * c->NH * c->HD, rows = (size_t)c->B * c->NH * c->N;
  attn_result got = {host_zeros(n), host_zeros(rows), host_zeros(n), host_zeros(n), host_zeros(n)};
  const at_emulation e = {c->q,   c->k,  c->v,  c->dout, got.o,    got.lse, got.dq, got.dk,
                          got.dv, c->B,  c->N,  c->NH,   c->HD,    c->scale, false};
  char label[96];
  CHECK_INT(at_emulate(&e), 0);
  snprintf(label, sizeof label, "FMA kernels B=%d N=%d NH=%d HD=%d (every row):", c->B, c->N, c->NH, c->HD);
  compare(label, &got, c, NULL, NULL, NULL, 1e-5);
  free_attn_result(&got);
}

static float float_of(uint32_t u)
{
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* The emulation's cvt.rna.tf32.f32, bit for bit: 10 mantissa bits kept,
 * round to nearest with ties away from zero, infinities and NaN kept. */
static void check_tf32_rounding(void)
{
  static const struct {
    uint32_t in, out;
  } cases[] = {
      {0x3f800000u, 0x3f800000u}, /* 1 */
      {0x3f800fffu, 0x3f800000u}, /* below half an ulp: down */
      {0x3f801000u, 0x3f802000u}, /* a tie: away from zero */
      {0xbf801000u, 0xbf802000u}, /* a negative tie: away from zero */
      {0x3f803000u, 0x3f804000u}, /* a tie above an odd mantissa: up, as nearest-even */
      {0x3f805000u, 0x3f806000u}, /* a tie above an even one: up; nearest-even gives 0x3f804000 */
      {0x3fffffffu, 0x40000000u}, /* the carry into the exponent */
      {0x7f7fffffu, 0x7f800000u}, /* the largest float rounds to infinity */
      {0x7f800000u, 0x7f800000u}, /* infinity */
      {0x7fc00001u, 0x7fc00000u}, /* NaN stays NaN, its low bits cleared */
      {0x00001000u, 0x00002000u}, /* subnormals round alike */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const float got = am_tf32_rna(float_of(cases[i].in));
    uint32_t bits;
    memcpy(&bits, &got, sizeof bits);
    CHECK_INT(bits, cases[i].out);
  }
}

/* Each block's shared memory within sm_90's 227 KB, and the blocks an
 * H100/H200 SM holds by it at the ViT's heads, which is what the layout was
 * sized for. The SM has 228 KB, 1 KB reserved a block, and 64K registers. The
 * register counts are attention_mma_build.sh's. */
static void check_shared_memory(void)
{
  static const struct {
    int HD, passes, backward, blocks; /* blocks an SM, by shared memory */
  } expect[] = {
      {48, 3, 0, 3}, {48, 3, 1, 2}, {128, 3, 0, 1}, {128, 3, 1, 1},
      {48, 1, 0, 4}, {48, 1, 1, 2}, {128, 1, 0, 1}, {128, 1, 1, 1},
  };
  for (int HD = 1; HD <= 128; HD++)
    for (int passes = 1; passes <= 3; passes += 2)
      for (int backward = 0; backward < 2; backward++)
        CHECK(am_block_bytes(HD, passes, backward) > 0 && am_block_bytes(HD, passes, backward) <= 232448);
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
    const int bytes = am_block_bytes(expect[i].HD, expect[i].passes, expect[i].backward);
    const int threads = am_block_threads(expect[i].HD, expect[i].passes, expect[i].backward);
    printf("ok: %s HD=%d %s: %.1f KB of shared memory, %d threads a block; %d blocks an SM by shared memory\n",
           expect[i].backward ? "backward" : "forward", expect[i].HD, expect[i].passes == 3 ? "3xTF32" : "TF32",
           bytes / 1024.0, threads, 233472 / (bytes + 1024));
    CHECK_INT(233472 / (bytes + 1024), expect[i].blocks);
  }
}

/* No bank conflicts in the fragment accesses of shared memory, through the
 * swizzles of the split and raw rows, at the heads the kernels pad to. */
static void check_banks(void)
{
  static const int heads[][2] = {{16, 3}, {48, 3}, {64, 3}, {128, 3}, {16, 1}, {48, 1}, {128, 1}};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
    char report[256];
    const int bad = am_bank_check(heads[i][0], heads[i][1], report, sizeof report);
    CHECK_INT(bad, 0);
    printf("%s: shared-memory wavefronts a warp access, HD=%d %s: %s\n", bad == 0 ? "ok" : "FAILED", heads[i][0],
           heads[i][1] == 3 ? "3xTF32" : "TF32", report);
  }
}

int main(void)
{
  static const struct {
    int B, N, NH, HD, passes, mode;
    bool copies_at_wait;
    int schedule;
  } cases[] = {
      {2, 131, 3, 48, 3, WHOLE, false, 0}, /* base's head; three tiles, the last of 3 rows; 6 heads */
      {1, 131, 1, 48, 3, WHOLE, true, 1},  /* the same in other orders */
      {1, 131, 1, 48, 3, WHOLE, false, -1},
      {1, 70, 2, 20, 3, WHOLE, true, -1},  /* padded to 32 */
      {1, 100, 1, 13, 3, WHOLE, false, 1}, /* padded to 16; rows not on 16 bytes: 4-byte copies */
      {1, 65, 1, 128, 3, WHOLE, true, 0},  /* mp's head: 8 warps a backward block */
      {1, 130, 1, 128, 3, WHOLE, false, 1},
      {1, 64, 2, 64, 1, WHOLE, false, -1}, /* plain TF32; one whole tile */
      {1, 4050, 1, 48, 3, EDGES, false, 0}, /* base: 4050 tokens, 63 tiles and 18 rows */
      {1, 4049, 1, 128, 3, EDGES, true, 1}, /* mp, odd */
      {1, 4049, 1, 64, 3, EDGES, false, -1},
      {1, 4050, 1, 128, 1, EDGES, false, 0}, /* plain TF32 at mp */
  };
  float one = 0;
  bool no_rows[1];
  const am_emulation too_wide = {{&one, &one, &one, &one, &one, &one, &one, &one, &one, 1, 1, 1, 129, 1, false},
                                 no_rows,
                                 no_rows,
                                 no_rows,
                                 3,
                                 false,
                                 false,
                                 0};
  case_data fma = make_case(1, 200, 1, 48);
  check_tf32_rounding();
  check_shared_memory();
  check_banks();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    case_data c = make_case(cases[i].B, cases[i].N, cases[i].NH, cases[i].HD);
    check_mma(&c, cases[i].passes, cases[i].mode, cases[i].copies_at_wait, cases[i].schedule);
    free_case(&c);
  }
  /* the FMA kernels and the tensor cores at one shape, against float64 */
  check_fma(&fma);
  check_mma(&fma, 3, WHOLE, false, 0);
  check_mma(&fma, 1, WHOLE, false, 0);
  free_case(&fma);
  CHECK_INT(am_emulate(&too_wide), -1);
  return check_report("test_attention_mma");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_kernels_gpu.c: every CUDA kernel in kernels/cuda against its
 * CPU reference in kernels/cpu, on fresh random inputs, in fp32, bf16 and fp16.
 * Outputs are poisoned with NaN bytes before each run. The relative error must
 * be under 1e-5 in fp32 and under 2e-2 in bf16 and fp16; a NaN fails. GEMM
 * operands are also tested at offsets that are not 256-byte aligned. The column
 * reductions also run at the tutorial's sizes of 64800 rows, twice for the same
 * bits, with their bandwidth printed. Skips without a GPU. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"

/* `planes` GEMMs of one shape, through `blas`. One plane is
 * dl_matmul_fwd/bwd; more planes are the strided batch of dl_matmul_*_planes,
 * as for a block's fused q, k, v. The epilogues of `blas` are refused or not,
 * and the names say which. The operands sit `offset` bytes past 256-byte
 * alignment, and the weights a few elements more. The bias gradient is
 * poisoned first, since it is overwritten, fused or not. The reference runs
 * plane by plane, with dinp summed over planes. */
static void test_matmul(dl_blas *blas, const char *which, dl_dtype t, size_t offset, int planes, int BT, int C, int OC)
{
  const size_t w_offset = offset ? offset + 4 * dl_dtype_bytes(t) : 0, nw = (size_t)planes * OC * C;
  const size_t nout = (size_t)planes * BT * OC;
  static const char *const outputs[4] = {"forward", "dinp", "dweight", "dbias"};
  char what[4][128];
  float *inp = host_random((size_t)BT * C, 1), *w = host_random(nw, 0.5f), *bias = host_random((size_t)planes * OC, 0.5f);
  float *dout = host_random(nout, 1), *out = malloc(sizeof(float) * nout);
  /* several planes accumulate into a given dinp, summed in fp32 */
  float *dinp = planes > 1 ? host_random((size_t)BT * C, 1) : host_zeros((size_t)BT * C), *dw = host_zeros(nw);
  float *db = host_zeros((size_t)planes * OC);
  void *d_inp = device_at(inp, (size_t)BT * C, t, offset), *d_w = device_at(w, nw, t, w_offset);
  void *d_out = device_at(NULL, nout, t, offset), *d_dout = device_at(dout, nout, t, offset);
  void *d_dinp = device_at(planes > 1 ? dinp : NULL, (size_t)BT * C, t, offset);
  void *d_bias = device_at(bias, (size_t)planes * OC, t, w_offset);
  float *d_dw = device_at(dw, nw, DL_F32, offset), *d_db = device_at(NULL, (size_t)planes * OC, DL_F32, offset);
  float *bias_act = host_from(d_bias, (size_t)planes * OC, t); /* the bias rounded to the act type, as the GPU reads it */
  for (int p = 0; p < planes; p++) {
    const size_t at_w = (size_t)p * OC * C, at_out = (size_t)p * BT * OC;
    matmul_fwd_f32(out + at_out, inp, w + at_w, bias_act + (size_t)p * OC, BT, C, OC);
    matmul_bwd_f32(dinp, dw + at_w, db + (size_t)p * OC, dout + at_out, inp, w + at_w, BT, C, OC);
  }
  if (planes == 1) {
    GPU_OR_EXIT(dl_matmul_fwd(blas, d_out, d_inp, d_w, d_bias, BT, C, OC, t, 0));
    GPU_OR_EXIT(dl_matmul_bwd(blas, d_dinp, 0, d_dw, d_db, d_dout, d_inp, d_w, BT, C, OC, t, 0));
  } else {
    GPU_OR_EXIT(dl_matmul_fwd_planes(blas, d_out, d_inp, d_w, d_bias, planes, BT, C, OC, t, 0));
    float *d_sum = device_from(NULL, (size_t)BT * C, DL_F32); /* the planes' fp32 sum */
    GPU_OR_EXIT(dl_matmul_bwd_planes(blas, d_dinp, d_sum, 1, d_dw, d_db, d_dout, d_inp, d_w, planes, BT, C, OC, t, 0));
  }
  GPU_OR_EXIT(cudaDeviceSynchronize());
  for (int i = 0; i < 4; i++)
    snprintf(what[i], sizeof(what[i]), "matmul %s, %d plane(s) of %dx%dx%d, offset %zu%s%s", outputs[i], planes, BT,
             C, OC, offset, which, planes > 1 && i == 1 ? " (added to a given dinp)" : "");
  CHECK_CLOSE(what[0], t, host_from(d_out, nout, t), out, nout);
  CHECK_CLOSE(what[1], t, host_from(d_dinp, (size_t)BT * C, t), dinp, (size_t)BT * C);
  CHECK_CLOSE(what[2], t, host_from(d_dw, nw, DL_F32), dw, nw);
  CHECK_CLOSE(what[3], t, host_from(d_db, (size_t)planes * OC, DL_F32), db, (size_t)planes * OC);
}

/* recompute: gelu's backward. GELU's output is recomputed from the forward's
 * pre-activation as the forward made it; when fused, that is the epilogue's
 * tanh approximation. Then the backward runs with dpre written over that
 * output, which dl_matmul_bwd_gelu reads first. dpre and the weight's
 * gradient must match the CPU's. */
static void test_gelu_recompute(dl_blas *blas, int fused, dl_dtype t, const void *d_pre, const void *d_out,
                                const void *d_w2, const void *d_dout, const float *dpre, const float *dw2, int BT,
                                int OC, int C2)
{
  const size_t nh = (size_t)BT * OC;
  void *d_again = device_from(NULL, nh, t);
  float *d_dw2 = device_from(NULL, (size_t)C2 * OC, DL_F32), *d_db2 = device_from(NULL, C2, DL_F32);
  float *pre = host_from(d_pre, nh, t), *ref = malloc(nh * sizeof(float));
  char what[112];
  GPU_OR_EXIT(cudaMemset(d_dw2, 0, sizeof(float) * C2 * OC));
  GPU_OR_EXIT(dl_gelu_recompute(fused, d_again, d_pre, nh, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  (fused ? gelu_tanh_fwd_f32 : gelu_fwd_f32)(ref, pre, nh);
  snprintf(what, sizeof what, "gelu recomputed (%s) vs the CPU's", fused ? "tanh, as the epilogue" : "exact");
  CHECK_CLOSE(what, t, host_from(d_again, nh, t), ref, nh);
  snprintf(what, sizeof what, "gelu recomputed (%s) vs the forward's", fused ? "tanh, as the epilogue" : "exact");
  CHECK_CLOSE(what, t, host_from(d_again, nh, t), host_from(d_out, nh, t), nh);
  GPU_OR_EXIT(dl_matmul_bwd_gelu(blas, fused, d_again, d_pre, d_dw2, d_db2, d_dout, d_again, d_w2, BT, OC, C2, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("mlp dpre written over the recomputed gelu", t, host_from(d_again, nh, t), dpre, nh);
  CHECK_CLOSE("mlp dweight from the recomputed gelu", t, host_from(d_dw2, (size_t)C2 * OC, DL_F32), dw2,
              (size_t)C2 * OC);
  free(pre);
  free(ref);
}

/* The MLP's GELU: the layer [BT,C] -> [BT,OC] that feeds it and the
 * backward of the layer [BT,OC] -> [BT,C2] after it, against the exact
 * GELU of the CPU. It runs with the epilogues where dl_gelu_epilogue says so,
 * and with the separate kernels. dl_gelu_epilogue must say so for 16-bit at
 * these shapes on an H100; otherwise we get the notice, and the speed, of
 * separate kernels. With refused set, the dl_blas has its epilogues refused:
 * dl_gelu_epilogue must say so, and the fused calls are made anyway to test
 * the fallback for a refusal at run time. */
static void test_mlp_gelu(dl_blas *blas, int refused, dl_dtype t, int BT, int C, int OC, int C2)
{
  const size_t nh = (size_t)BT * OC;
  float *inp = host_random((size_t)BT * C, 1), *w1 = host_random((size_t)OC * C, 0.5f), *b1 = host_random(OC, 0.5f);
  float *w2 = host_random((size_t)C2 * OC, 0.5f), *dout = host_random((size_t)BT * C2, 1), *pre = malloc(nh * 4);
  float *out = malloc(nh * 4), *dgelu = host_zeros(nh), *dpre = malloc(nh * 4), *dw2 = host_zeros((size_t)C2 * OC);
  float *db2 = host_zeros(C2), *b1_act;
  void *d_inp = device_from(inp, (size_t)BT * C, t), *d_w1 = device_from(w1, (size_t)OC * C, t);
  void *d_b1 = device_from(b1, OC, t), *d_w2 = device_from(w2, (size_t)C2 * OC, t);
  void *d_dout = device_from(dout, (size_t)BT * C2, t);
  int fused = -1;
  char what[5][112];
  b1_act = host_from(d_b1, OC, t);
  matmul_fwd_f32(pre, inp, w1, b1_act, BT, C, OC);
  gelu_fwd_f32(out, pre, nh);
  matmul_bwd_f32(dgelu, dw2, db2, dout, out, w2, BT, OC, C2);
  gelu_bwd_f32(dpre, pre, dgelu, nh);
  GPU_OR_EXIT(dl_gelu_epilogue(blas, BT, C, OC, C2, t, &fused));
  CHECK_INT(fused, t != DL_F32 && !refused);
  for (int mode = 0; mode <= (refused ? 1 : fused); mode++) {
    void *d_pre = device_from(NULL, nh, t), *d_out = device_from(NULL, nh, t), *d_dpre = device_from(NULL, nh, t);
    float *d_dw2 = device_from(NULL, (size_t)C2 * OC, DL_F32), *d_db2 = device_from(NULL, C2, DL_F32);
    static const char *const names[5] = {"pre-activation", "gelu", "dpre", "dweight after", "dbias after"};
    GPU_OR_EXIT(cudaMemset(d_dw2, 0, sizeof(float) * C2 * OC));
    GPU_OR_EXIT(dl_matmul_gelu_fwd(blas, mode, d_out, d_pre, d_inp, d_w1, d_b1, BT, C, OC, t, 0));
    GPU_OR_EXIT(dl_matmul_bwd_gelu(blas, mode, d_dpre, d_pre, d_dw2, d_db2, d_dout, d_out, d_w2, BT, OC, C2, t, 0));
    GPU_OR_EXIT(cudaDeviceSynchronize());
    for (int i = 0; i < 5; i++)
      snprintf(what[i], sizeof(what[i]), "mlp %s %dx%dx%dx%d, %s%s", names[i], BT, C, OC, C2,
               mode ? "GELU epilogues" : "GELU kernels", refused ? " (epilogues refused)" : "");
    CHECK_CLOSE(what[0], t, host_from(d_pre, nh, t), pre, nh);
    CHECK_CLOSE(what[1], t, host_from(d_out, nh, t), out, nh);
    CHECK_CLOSE(what[2], t, host_from(d_dpre, nh, t), dpre, nh);
    CHECK_CLOSE(what[3], t, host_from(d_dw2, (size_t)C2 * OC, DL_F32), dw2, (size_t)C2 * OC);
    CHECK_CLOSE(what[4], t, host_from(d_db2, C2, DL_F32), db2, (size_t)C2);
    /* refused: the forward fell back to the exact kernel, whatever mode asked */
    test_gelu_recompute(blas, mode && !refused, t, d_pre, d_out, d_w2, d_dout, dpre, dw2, BT, OC, C2);
  }
}

/* The forward reads rows 4 values a lane at a time where C is a multiple
 * of 4, and one value otherwise. The backward uses the fused kernel, which
 * does rows and parameter partials in one pass, for C a multiple of 4 up to
 * 1024. The cases are 96 with lanes masked, 384 for base and 1024 for mp, with
 * BT = 300 leaving a partial second chunk of 256 rows. The rows kernel and the
 * column reduction are used for C = 98, one value a load, and 1536, 4 values a
 * load. dw and db are added to non-zero values. */
static void test_layernorm(dl_dtype t, int BT, int C)
{
  const size_t n = (size_t)BT * C;
  float *x = host_random(n, 2), *y = host_random(n, 1), *w = host_random(C, 1), *b = host_random(C, 1);
  float *bias = host_random(C, 1), *dout = host_random(n, 1), *sum = malloc(n * sizeof(float));
  float *out = malloc(n * sizeof(float)), *mean = malloc(BT * sizeof(float)), *rstd = malloc(BT * sizeof(float));
  float *dinp = host_random(n, 1), *dw = host_random(C, 1);
  float *db = host_random(C, 1), *d_x = device_from(x, n, DL_F32), *d_sum = device_from(NULL, n, DL_F32);
  float *d_dinp = device_from(dinp, n, DL_F32); /* the stream's gradient so far: the backward adds to it */
  float *d_dinp_alone = device_from(dinp, n, DL_F32); /* the same, backward without the act copy, for fp32 runs */
  float *d_dw_alone = device_from(dw, C, DL_F32), *d_db_alone = device_from(db, C, DL_F32);
  void *d_y = device_from(y, n, t), *d_out = device_from(NULL, n, t), *d_dout = device_from(dout, n, t);
  void *d_dinp_act = device_from(NULL, n, t);
  float *d_w = device_from(w, C, DL_F32), *d_b = device_from(b, C, DL_F32), *d_bias = device_from(bias, C, DL_F32);
  float *d_mean = device_from(NULL, BT, DL_F32), *d_rstd = device_from(NULL, BT, DL_F32);
  float *d_dw = device_from(dw, C, DL_F32), *d_db = device_from(db, C, DL_F32);
  float *d_partials = device_from(NULL, dl_column_partials_bytes(BT, 2 * C) / sizeof(float), DL_F32);
  printf("layernorm, BT=%d C=%d:\n", BT, C);
  for (size_t i = 0; i < n; i++)
    sum[i] = x[i] + y[i] + bias[i % C];
  layernorm_fwd_f32(out, mean, rstd, sum, w, b, BT, C, 1e-6f);
  free(dout);
  dout = host_from(d_dout, n, t); /* as the GPU reads it */
  layernorm_bwd_f32(dinp, dw, db, dout, sum, w, mean, rstd, BT, C);
  GPU_OR_EXIT(dl_residual_layernorm_fwd(d_sum, d_out, d_mean, d_rstd, d_x, d_y, d_bias, d_w, d_b, BT, C, 1e-6f, t, 0));
  GPU_OR_EXIT(dl_layernorm_bwd(d_dinp, d_dinp_act, d_dw, d_db, d_dout, d_sum, d_w, d_mean, d_rstd, BT, C, d_partials, t,
                               0));
  GPU_OR_EXIT(dl_layernorm_bwd(d_dinp_alone, NULL, d_dw_alone, d_db_alone, d_dout, d_sum, d_w, d_mean, d_rstd, BT, C,
                               d_partials, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("residual add (fp32 stream)", t, host_from(d_sum, n, DL_F32), sum, n);
  CHECK_CLOSE("layernorm forward", t, host_from(d_out, n, t), out, n);
  CHECK_CLOSE("layernorm dinp (fp32, accumulated)", t, host_from(d_dinp, n, DL_F32), dinp, n);
  CHECK_CLOSE("layernorm dinp's act copy", t, host_from(d_dinp_act, n, t), dinp, n);
  CHECK_CLOSE("layernorm dinp, no act copy", t, host_from(d_dinp_alone, n, DL_F32), dinp, n);
  CHECK_CLOSE("layernorm dweight", t, host_from(d_dw, C, DL_F32), dw, C);
  CHECK_CLOSE("layernorm dbias", t, host_from(d_db, C, DL_F32), db, C);
  d_out = device_from(NULL, n, t);
  GPU_OR_EXIT(dl_layernorm_fwd(d_out, d_mean, d_rstd, d_sum, d_w, d_b, BT, C, 1e-6f, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("layernorm forward (no residual)", t, host_from(d_out, n, t), out, n);
}

static void test_pointwise(dl_dtype t)
{
  const size_t n = 5003; /* not a multiple of 4: the vector loads and the tail */
  float *x = host_random(n, 3), *dout = host_random(n, 1), *out = malloc(n * 4), *dinp = malloc(n * 4);
  void *d_x = device_from(x, n, t), *d_dout = device_from(dout, n, t), *d_out = device_from(NULL, n, t);
  void *d_dinp = device_from(NULL, n, t);
  gelu_fwd_f32(out, x, n);
  gelu_bwd_f32(dinp, x, dout, n);
  GPU_OR_EXIT(dl_gelu_fwd(d_out, d_x, n, t, 0));
  GPU_OR_EXIT(dl_gelu_bwd(d_dinp, d_x, d_dout, n, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("gelu forward", t, host_from(d_out, n, t), out, n);
  CHECK_CLOSE("gelu backward", t, host_from(d_dinp, n, t), dinp, n);
}

static void test_attention(dl_dtype t, int N, int HD)
{
  const int B = 2, NH = 3;
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  const float scale = 1.0f / sqrtf((float)HD);
  float *q = host_random(n, 1.5f), *k = host_random(n, 1.5f), *v = host_random(n, 1), *dout = host_random(n, 1);
  float *o = malloc(n * 4), *lse = malloc(rows * 4), *dq = malloc(n * 4), *dk = malloc(n * 4), *dv = malloc(n * 4);
  void *d_q = device_from(q, n, t), *d_k = device_from(k, n, t), *d_v = device_from(v, n, t);
  void *d_dout = device_from(dout, n, t), *d_o = device_from(NULL, n, t), *d_dq = device_from(NULL, n, t);
  void *d_dk = device_from(NULL, n, t), *d_dv = device_from(NULL, n, t);
  float *d_lse = device_from(NULL, rows, DL_F32), *d_delta = device_from(NULL, rows, DL_F32);
  char what[64];
  attention_fwd_f32(o, lse, q, k, v, B, N, NH, HD, scale);
  attention_bwd_f32(dq, dk, dv, dout, q, k, v, o, lse, B, N, NH, HD, scale);
  GPU_OR_EXIT(dl_attention_fwd(d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
  GPU_OR_EXIT(dl_attention_bwd(d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, d_delta, B, N, NH, HD, scale, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  snprintf(what, sizeof(what), "attention output N=%d HD=%d", N, HD);
  CHECK_CLOSE(what, t, host_from(d_o, n, t), o, n);
  snprintf(what, sizeof(what), "attention lse N=%d HD=%d", N, HD);
  CHECK_CLOSE(what, t, host_from(d_lse, rows, DL_F32), lse, rows);
  snprintf(what, sizeof(what), "attention dq N=%d HD=%d", N, HD);
  CHECK_CLOSE(what, t, host_from(d_dq, n, t), dq, n);
  snprintf(what, sizeof(what), "attention dk N=%d HD=%d", N, HD);
  CHECK_CLOSE(what, t, host_from(d_dk, n, t), dk, n);
  snprintf(what, sizeof(what), "attention dv N=%d HD=%d", N, HD);
  CHECK_CLOSE(what, t, host_from(d_dv, n, t), dv, n);
}

static void test_loss_and_metrics(void)
{
  const int B = 3, C = 2, H = 9, W = 16;
  const size_t n = (size_t)C * H * W, total = (size_t)B * n;
  float *pred = host_random(total, 1), *target = host_random(total, 1), *dpred = malloc(total * 4), lat_w[9];
  float loss, rmse, zero = 0;
  float *d_pred = device_from(pred, total, DL_F32), *d_target = device_from(target, total, DL_F32);
  float *d_dpred = device_from(NULL, total, DL_F32), *d_sums = device_from(NULL, dl_l2_loss_scratch_floats(B), DL_F32);
  /* the RMSE's sum sits between two sentinels, as SUM_VAL_RMSE sits between
   * the other window sums: the kernel must write that one float only */
  const float sums_before[3] = {7.0f, 0.0f, 7.0f};
  float sums_after[3];
  float *d_loss = device_from(&zero, 1, DL_F32), *d_rmse_sums = device_from(sums_before, 3, DL_F32), *d_w;
  float *d_rmse = d_rmse_sums + 1, *d_per_sample = device_from(NULL, B, DL_F32);
  const float want_loss = l2_loss_fwd_f32(NULL, pred, target, B, n);
  l2_loss_bwd_f32(dpred, pred, target, B, n, 1.0f);
  lat_weights_f32(lat_w, H);
  d_w = device_from(lat_w, H, DL_F32);
  GPU_OR_EXIT(dl_l2_loss_fwd(d_loss, d_sums, d_pred, d_target, B, n, 0));
  GPU_OR_EXIT(dl_l2_loss_bwd(d_dpred, d_sums, d_pred, d_target, B, n, NULL, 0));
  GPU_OR_EXIT(dl_weighted_rmse(d_rmse, d_per_sample, d_pred, d_target, d_w, B, C, H, W, 0, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  GPU_OR_EXIT(cudaMemcpy(&loss, d_loss, 4, cudaMemcpyDeviceToHost));
  GPU_OR_EXIT(cudaMemcpy(&rmse, d_rmse, 4, cudaMemcpyDeviceToHost));
  CHECK_CLOSE("l2 loss", DL_F32, &loss, &want_loss, 1);
  CHECK_CLOSE("l2 loss backward", DL_F32, host_from(d_dpred, total, DL_F32), dpred, total);
  {
    const float want_rmse = (float)weighted_rmse_f32(pred, target, lat_w, B, C, H, W, 0);
    CHECK_CLOSE("weighted rmse", DL_F32, &rmse, &want_rmse, 1);
    GPU_OR_EXIT(cudaMemcpy(sums_after, d_rmse_sums, sizeof(sums_after), cudaMemcpyDeviceToHost));
    CHECK(sums_after[0] == 7.0f && sums_after[2] == 7.0f); /* the neighbouring sums untouched */
  }
}

static void test_adam(dl_dtype t)
{
  const size_t n = 3000;
  float *p = host_random(n, 1), *g1 = host_random(n, 1), *g2 = host_random(n, 1), *m = host_zeros(n), *v = host_zeros(n);
  float *d_p = device_from(p, n, DL_F32), *d_m = device_from(m, n, DL_F32), *d_v = device_from(v, n, DL_F32);
  float *d_g1 = device_from(g1, n, DL_F32), *d_g2 = device_from(g2, n, DL_F32), one = 1.0f;
  float lr_t1[2] = {1e-3f, 1}, lr_t2[2] = {1e-3f, 2};
  float *d_lr1 = device_from(lr_t1, 2, DL_F32), *d_lr2 = device_from(lr_t2, 2, DL_F32), *d_scale = device_from(&one, 1, DL_F32);
  void *d_act = device_from(NULL, n, t);
  adam_update_f32(p, m, v, g1, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 1);
  adam_update_f32(p, m, v, g2, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 2);
  GPU_OR_EXIT(dl_adam(d_p, d_act, t, d_m, d_v, d_g1, n, d_lr1, 0.9f, 0.95f, 1e-8f, d_scale, NULL, 0));
  GPU_OR_EXIT(dl_adam(d_p, d_act, t, d_m, d_v, d_g2, n, d_lr2, 0.9f, 0.95f, 1e-8f, d_scale, NULL, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("adam parameters (2 steps)", DL_F32, host_from(d_p, n, DL_F32), p, n);
  CHECK_CLOSE("adam act copy of the weights", t, host_from(d_act, n, t), p, n);
}

static void test_layout_ops(dl_dtype t)
{
  const int B = 2, C = 3, H = 8, W = 12, P = 4, N = (H / P) * (W / P), D = 20;
  const size_t n = (size_t)B * C * H * W;
  float *img = host_random(n, 1), *tokens = host_random(n, 1), *patches = malloc(n * 4), *back = malloc(n * 4);
  float *dtok = malloc(n * 4), *x = host_random((size_t)B * N * D, 1), *pos = host_random((size_t)N * D, 1);
  float *x_pos = malloc((size_t)B * N * D * 4), *dpos = host_zeros((size_t)N * D), *col = host_zeros(D);
  float *d_img = device_from(img, n, DL_F32), *d_back = device_from(NULL, n, DL_F32), *d_pos = device_from(pos, (size_t)N * D, DL_F32);
  float *d_dpos = device_from(dpos, (size_t)N * D, DL_F32), *d_col = device_from(col, D, DL_F32);
  float *d_partials = device_from(NULL, dl_column_partials_bytes(B * N, D) / sizeof(float), DL_F32);
  void *d_patches = device_from(NULL, n, t), *d_tokens = device_from(tokens, n, t), *d_dtok = device_from(NULL, n, t);
  void *d_x = device_from(x, (size_t)B * N * D, t);
  float *d_x32 = device_from(x, (size_t)B * N * D, DL_F32), *d_embedded = device_from(NULL, (size_t)B * N * D, DL_F32);
  patchify_f32(patches, img, B, C, H, W, P);
  unpatchify_f32(back, tokens, B, C, H, W, P);
  unpatchify_bwd_f32(dtok, img, B, C, H, W, P);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < N * D; i++) {
      x_pos[(size_t)b * N * D + i] = x[(size_t)b * N * D + i] + pos[i];
      dpos[i] += x[(size_t)b * N * D + i];
    }
  for (int r = 0; r < B * N; r++)
    for (int d = 0; d < D; d++)
      col[d] += x[(size_t)r * D + d];
  GPU_OR_EXIT(dl_patchify(d_patches, d_img, B, C, H, W, P, t, 0));
  GPU_OR_EXIT(dl_unpatchify(d_back, d_tokens, B, C, H, W, P, t, 0));
  GPU_OR_EXIT(dl_unpatchify_bwd(d_dtok, d_img, B, C, H, W, P, t, 0));
  GPU_OR_EXIT(dl_pos_embed_bwd(d_dpos, d_x32, B, N, D, 0));
  GPU_OR_EXIT(dl_column_sum(d_col, 1, d_x, B * N, D, d_partials, t, 0));
  GPU_OR_EXIT(dl_embed_tokens(d_embedded, d_x, d_pos, B, N, D, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  CHECK_CLOSE("patchify", t, host_from(d_patches, n, t), patches, n);
  CHECK_CLOSE("unpatchify", t, host_from(d_back, n, DL_F32), back, n);
  CHECK_CLOSE("unpatchify backward", t, host_from(d_dtok, n, t), dtok, n);
  CHECK_CLOSE("tokens + position embedding (fp32 stream)", t, host_from(d_embedded, (size_t)B * N * D, DL_F32), x_pos,
              (size_t)B * N * D);
  CHECK_CLOSE("position embedding gradient", DL_F32, host_from(d_dpos, (size_t)N * D, DL_F32), dpos, (size_t)N * D);
  CHECK_CLOSE("column sum", t, host_from(d_col, D, DL_F32), col, D);
}

/* ---- the reductions at the tutorial's sizes: rows = batch x tokens =
 * 16 x 4050. The references are computed in double over the inputs as the GPU
 * reads them, rounded to the act type. Two runs must give the same bits. The
 * time of a call and its bandwidth are printed, not asserted. The bandwidth is
 * every byte the call must move, read or written, divided by the time. */
enum { BIG_ROWS = 16 * 4050, TIMED_CALLS = 5 };

static const char *type_name(dl_dtype t)
{
  return t == DL_F32 ? "fp32" : t == DL_BF16 ? "bf16" : "fp16";
}

/* This device's name and its memory's peak in bytes/s: memory clock x bus
 * width x 2 for double data rate, or 0 where the runtime does not say. */
static double device_peak(const char **name)
{
  static char text[256];
  static double peak = -1;
  if (peak < 0) {
    struct cudaDeviceProp prop;
    int device = 0, khz = 0, bits = 0;
    GPU_OR_EXIT(cudaGetDevice(&device));
    GPU_OR_EXIT(cudaGetDeviceProperties(&prop, device));
    snprintf(text, sizeof text, "%s", prop.name);
    peak = cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
                   cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess
               ? 2.0 * khz * 1e3 * bits / 8
               : 0;
  }
  *name = text;
  return peak;
}

/* Reports the time of a call, from TIMED_CALLS calls between start and stop,
 * and `bytes`, every byte it must move, read or written, over that time. */
static void report_bandwidth(const char *what, dl_dtype t, double bytes, cudaEvent_t start, cudaEvent_t stop)
{
  const char *device;
  const double peak = device_peak(&device);
  float ms = 0;
  double rate;
  GPU_OR_EXIT(cudaEventSynchronize(stop));
  GPU_OR_EXIT(cudaEventElapsedTime(&ms, start, stop));
  ms /= TIMED_CALLS;
  rate = bytes / (ms * 1e-3);
  printf("bandwidth: %s (%s): %.1f us a call, %.1f MB moved, %.0f GB/s", what, type_name(t), ms * 1e3, bytes / 1e6,
         rate / 1e9);
  if (peak > 0)
    printf(" = %.0f%% of the %s's %.0f GB/s (memory clock x bus width x 2)\n", 100.0 * rate / peak, device,
           peak / 1e9);
  else
    printf(" on the %s\n", device);
}

static void check_same_bits(const char *what, const float *first, const float *second, size_t n)
{
  check_count++;
  if (memcmp(first, second, n * sizeof(float)) != 0) {
    check_failures++;
    fprintf(stderr, "%s:%d: FAILED: %s: two runs differ (not deterministic)\n", __FILE__, __LINE__, what);
  }
}

static void test_column_sum_large(dl_dtype t, int cols)
{
  const int rows = BIG_ROWS;
  const size_t n = (size_t)rows * cols;
  float *x = host_random(n, 1), *want = malloc(sizeof(float) * cols), *x_act, *got, *again;
  double *sums = calloc((size_t)cols, sizeof(double));
  void *d_x = device_from(x, n, t);
  float *d_sum = device_from(NULL, cols, DL_F32), *d_again = device_from(NULL, cols, DL_F32);
  float *d_partials = device_from(NULL, dl_column_partials_bytes(rows, cols) / sizeof(float), DL_F32);
  cudaEvent_t start, stop;
  char what[96];
  x_act = host_from(d_x, n, t);
  for (size_t r = 0; r < (size_t)rows; r++)
    for (int c = 0; c < cols; c++)
      sums[c] += x_act[r * cols + c];
  for (int c = 0; c < cols; c++)
    want[c] = (float)sums[c];
  GPU_OR_EXIT(dl_column_sum(d_sum, 0, d_x, rows, cols, d_partials, t, 0));
  GPU_OR_EXIT(dl_column_sum(d_again, 0, d_x, rows, cols, d_partials, t, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  got = host_from(d_sum, cols, DL_F32);
  again = host_from(d_again, cols, DL_F32);
  snprintf(what, sizeof(what), "column sum %d x %d", rows, cols);
  CHECK_CLOSE(what, t, got, want, (size_t)cols);
  check_same_bits(what, got, again, (size_t)cols);
  GPU_OR_EXIT(cudaEventCreate(&start));
  GPU_OR_EXIT(cudaEventCreate(&stop));
  GPU_OR_EXIT(cudaEventRecord(start, 0));
  for (int i = 0; i < TIMED_CALLS; i++)
    GPU_OR_EXIT(dl_column_sum(d_again, 0, d_x, rows, cols, d_partials, t, 0));
  GPU_OR_EXIT(cudaEventRecord(stop, 0));
  /* x read; the partials written in stage 1 and read in stage 2; the sums written */
  report_bandwidth(what, t, (double)n * dl_dtype_bytes(t) + 2.0 * dl_column_partials_bytes(rows, cols) + 4.0 * cols,
                   start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  cudaFree(d_x), cudaFree(d_sum), cudaFree(d_again), cudaFree(d_partials);
  free(x), free(want), free(x_act), free(got), free(again), free(sums);
}

/* LayerNorm's weight and bias gradients from given statistics. Its dinp is
 * also computed but not checked here; test_layernorm checks it. Then the time
 * of the whole backward as the model calls it, with the act copy of dinp in
 * 16 bits, and the bytes it moves. Per element, it reads x in fp32, dout in
 * the act type and dinp in fp32, and writes dinp and its act copy. That is
 * 4 + 2 + 4 + 4 + 2 = 16 bytes for bf16, and 16 for fp32 with no copy. Add the
 * statistics, w, the partials written and read, and dw, db added to. Then the
 * forward's time and bytes: x read, out written. */
static void test_layernorm_params_large(dl_dtype t, int C)
{
  const int BT = BIG_ROWS;
  const size_t n = (size_t)BT * C;
  float *inp = host_random(n, 2), *dout = host_random(n, 1), *w = host_random(C, 1), *mean = malloc(sizeof(float) * BT);
  float *rstd = malloc(sizeof(float) * BT), *want_w = malloc(sizeof(float) * C), *want_b = malloc(sizeof(float) * C);
  double *sum_w = calloc((size_t)C, sizeof(double)), *sum_b = calloc((size_t)C, sizeof(double));
  float *d_inp = device_from(inp, n, DL_F32), *d_dinp = device_from(NULL, n, DL_F32);
  void *d_dout = device_from(dout, n, t), *d_out = device_from(NULL, n, t);
  void *d_dinp_act = t == DL_F32 ? NULL : device_from(NULL, n, t); /* as the model: a copy in 16 bits only */
  const double partial_bytes = (double)dl_column_partials_bytes(BT, 2 * C);
  float *d_w = device_from(w, C, DL_F32), *d_dw = device_from(NULL, C, DL_F32), *d_db = device_from(NULL, C, DL_F32);
  float *d_partials = device_from(NULL, dl_column_partials_bytes(BT, 2 * C) / sizeof(float), DL_F32);
  float *inp_act = host_from(d_inp, n, DL_F32), *dout_act = host_from(d_dout, n, t), *d_mean, *d_rstd;
  float *got[2][2];
  cudaEvent_t start, stop;
  char what[2][96];
  for (int r = 0; r < BT; r++) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++)
      m += inp_act[(size_t)r * C + c];
    m /= C;
    for (int c = 0; c < C; c++)
      v += (inp_act[(size_t)r * C + c] - m) * (inp_act[(size_t)r * C + c] - m);
    mean[r] = (float)m;
    rstd[r] = (float)(1.0 / sqrt(v / C + 1e-6));
    for (int c = 0; c < C; c++) {
      const double d = dout_act[(size_t)r * C + c];
      sum_w[c] += d * ((double)inp_act[(size_t)r * C + c] - mean[r]) * rstd[r];
      sum_b[c] += d;
    }
  }
  for (int c = 0; c < C; c++)
    want_w[c] = (float)sum_w[c], want_b[c] = (float)sum_b[c];
  d_mean = device_from(mean, BT, DL_F32);
  d_rstd = device_from(rstd, BT, DL_F32);
  for (int run = 0; run < 2; run++) {
    GPU_OR_EXIT(cudaMemset(d_dw, 0, sizeof(float) * C));
    GPU_OR_EXIT(cudaMemset(d_db, 0, sizeof(float) * C));
    GPU_OR_EXIT(dl_layernorm_bwd(d_dinp, NULL, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, BT, C, d_partials, t, 0));
    GPU_OR_EXIT(cudaDeviceSynchronize());
    got[run][0] = host_from(d_dw, C, DL_F32);
    got[run][1] = host_from(d_db, C, DL_F32);
  }
  snprintf(what[0], sizeof(what[0]), "layernorm dweight %d x %d", BT, C);
  snprintf(what[1], sizeof(what[1]), "layernorm dbias %d x %d", BT, C);
  CHECK_CLOSE(what[0], t, got[0][0], want_w, (size_t)C);
  CHECK_CLOSE(what[1], t, got[0][1], want_b, (size_t)C);
  check_same_bits(what[0], got[0][0], got[1][0], (size_t)C);
  check_same_bits(what[1], got[0][1], got[1][1], (size_t)C);
  GPU_OR_EXIT(cudaEventCreate(&start));
  GPU_OR_EXIT(cudaEventCreate(&stop));
  GPU_OR_EXIT(cudaEventRecord(start, 0));
  for (int i = 0; i < TIMED_CALLS; i++)
    GPU_OR_EXIT(
        dl_layernorm_bwd(d_dinp, d_dinp_act, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, BT, C, d_partials, t, 0));
  GPU_OR_EXIT(cudaEventRecord(stop, 0));
  snprintf(what[0], sizeof(what[0]), "layernorm backward %d x %d (dinp%s, dw, db)", BT, C,
           d_dinp_act ? " and its act copy" : "");
  report_bandwidth(what[0], t,
                   n * (3.0 * sizeof(float) + dl_dtype_bytes(t) + (d_dinp_act ? dl_dtype_bytes(t) : 0)) +
                       2.0 * partial_bytes + 8.0 * BT + 4.0 * C + 16.0 * C,
                   start, stop);
  GPU_OR_EXIT(cudaEventRecord(start, 0));
  for (int i = 0; i < TIMED_CALLS; i++) /* overwrites the statistics, so last */
    GPU_OR_EXIT(dl_layernorm_fwd(d_out, d_mean, d_rstd, d_inp, d_w, d_w, BT, C, 1e-6f, t, 0));
  GPU_OR_EXIT(cudaEventRecord(stop, 0));
  snprintf(what[0], sizeof(what[0]), "layernorm forward %d x %d", BT, C);
  report_bandwidth(what[0], t, n * (sizeof(float) + dl_dtype_bytes(t)) + 8.0 * BT + 8.0 * C, start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  cudaFree(d_out), cudaFree(d_inp), cudaFree(d_dout), cudaFree(d_dinp), cudaFree(d_w), cudaFree(d_dw), cudaFree(d_db);
  cudaFree(d_dinp_act);
  cudaFree(d_partials), cudaFree(d_mean), cudaFree(d_rstd);
  free(inp), free(dout), free(w), free(mean), free(rstd), free(want_w), free(want_b), free(sum_w), free(sum_b);
  free(inp_act), free(dout_act);
  for (int run = 0; run < 2; run++)
    free(got[run][0]), free(got[run][1]);
}

/* fp16 loss scaling: overflows halve the scale down to its floor, counted as
 * overflow steps; at the floor an overflow is a skipped step; clean steps
 * regrow it up to its cap. */
static void test_loss_scale(void)
{
  const float start[3] = {4.0f, 0.0f, 0.0f}; /* scale, overflow steps, skipped steps */
  const int zero = 0, one = 1;
  float *d = device_from(start, 3, DL_F32), got[3];
  int *d_clean = NULL, *d_inf = NULL;
  GPU_OR_EXIT(cudaMalloc((void **)&d_clean, sizeof(int)));
  GPU_OR_EXIT(cudaMalloc((void **)&d_inf, sizeof(int)));
  GPU_OR_EXIT(cudaMemcpy(d_clean, &zero, sizeof(int), cudaMemcpyHostToDevice));
  GPU_OR_EXIT(cudaMemcpy(d_inf, &one, sizeof(int), cudaMemcpyHostToDevice));
  for (int step = 0; step < 3; step++) /* 4 -> 2 -> 1, the floor, then a skip */
    GPU_OR_EXIT(dl_update_loss_scale(d, d_clean, d_inf, 2, 1.0f, 8.0f, d + 1, d + 2, 0));
  GPU_OR_EXIT(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
  CHECK(got[0] == 1.0f && got[1] == 2.0f && got[2] == 1.0f);
  GPU_OR_EXIT(cudaMemcpy(d_inf, &zero, sizeof(int), cudaMemcpyHostToDevice));
  for (int step = 0; step < 10; step++) /* every 2 clean steps x2: 1 -> 2 -> 4 -> 8, then the cap */
    GPU_OR_EXIT(dl_update_loss_scale(d, d_clean, d_inf, 2, 1.0f, 8.0f, d + 1, d + 2, 0));
  GPU_OR_EXIT(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
  CHECK(got[0] == 8.0f && got[1] == 2.0f && got[2] == 1.0f);
  printf("ok: fp16 loss scale: halves to its floor, skips there, regrows to its cap\n");
  cudaFree(d), cudaFree(d_clean), cudaFree(d_inf);
}

/* The GEMMs through a dl_blas: with refused 0 its own epilogues, with
 * refused 1 the fallbacks of every one. */
static void test_gemms(dl_blas *blas, int refused, dl_dtype t)
{
  const char *which = refused ? ", epilogues refused" : "";
  test_matmul(blas, which, t, 0, 1, 70, 96, 80);
  test_matmul(blas, which, t, 64, 1, 70, 96, 80); /* activations sliced at 64-128-byte offsets */
  test_matmul(blas, which, t, 96, 1, 70, 96, 80);
  test_matmul(blas, which, t, 0, 3, 70, 96, 80);    /* a fused q, k, v */
  test_matmul(blas, which, t, 96, 3, 70, 96, 40);   /* bias planes 80 bytes apart in 16 bits: 16-byte aligned */
  test_matmul(blas, which, t, 0, 3, 4050, 384, 384); /* base: one sample's tokens, embed 384 */
  test_mlp_gelu(blas, refused, t, 70, 96, 80, 96);
  test_mlp_gelu(blas, refused, t, 4050, 384, 1536, 384); /* base: one sample's tokens */
}

/* The attention kernels' local memory per thread, which holds frames and
 * spills; their tiles live in registers and shared memory. The stack reserved
 * before capture must cover it. The size is asked of the runtime, and must be
 * within what a thread may have. */
static void test_attention_stack(void)
{
  size_t bytes = (size_t)-1;
  GPU_OR_EXIT(dl_attention_stack_bytes(&bytes));
  CHECK(bytes <= 64 * 1024);
  printf("ok: the attention kernels need %zu bytes of local memory per thread\n", bytes);
}

/* --small: the small shapes only, not the large reductions. This is for
 * runs under compute-sanitizer, which runs kernels tens of times slower. */
int main(int argc, char **argv)
{
  const dl_dtype types[3] = {DL_F32, DL_BF16, DL_F16};
  const bool small = argc > 1 && strcmp(argv[1], "--small") == 0;
  dl_blas *blas, *plain;
  require_gpu();
  GPU_OR_EXIT(dl_blas_create(&blas, 32u << 20, 0));
  GPU_OR_EXIT(dl_blas_create(&plain, 32u << 20, 0));
  dl_blas_refuse_epilogues(plain);
  for (int i = 0; i < 3; i++) {
    test_gemms(blas, 0, types[i]);
    test_gemms(plain, 1, types[i]);
    test_layernorm(types[i], 37, 96);
    test_layernorm(types[i], 37, 98);
    test_layernorm(types[i], 300, 384);
    test_layernorm(types[i], 300, 1024);
    test_layernorm(types[i], 40, 1536);
    test_pointwise(types[i]);
    test_attention(types[i], 150, 48);  /* the base config's head size; partial tiles */
    test_attention(types[i], 70, 128);  /* the mp config's head size */
    test_adam(types[i]);
    test_layout_ops(types[i]);
  }
  for (int i = 0; i < 3 && !small; i++) {
    test_column_sum_large(types[i], 384);  /* base embed: proj, fc2, patch bias */
    test_column_sum_large(types[i], 1536); /* base MLP: fc1 bias */
    test_column_sum_large(types[i], 3072); /* 3 x 1024: mp's q, k, v biases side by side */
    test_column_sum_large(types[i], 4096); /* mp MLP: fc1 bias */
    test_layernorm_params_large(types[i], 384);  /* base */
    test_layernorm_params_large(types[i], 1024); /* mp */
  }
  test_loss_and_metrics();
  test_loss_scale();
  test_attention_stack();
  dl_blas_destroy(blas);
  dl_blas_destroy(plain);
  return check_report("test_kernels_gpu");
}

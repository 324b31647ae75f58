/* tests/gpu/test_kernels_gpu.c: every CUDA kernel (kernels/cuda) against its
 * CPU reference (kernels/cpu) on fresh random inputs, in fp32, bf16 and fp16,
 * outputs poisoned with NaN bytes before each run: relative error under
 * 1e-5 (fp32) or 2e-2 (bf16, fp16); NaN fails. GEMM operands also at
 * offsets that are not 256-byte aligned. Skips without a GPU. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"

/* Operands at `offset` bytes past 256-byte alignment (the weights' offset
 * by a few elements more); the bias gradient poisoned first: it is
 * overwritten, fused or not. */
static void test_matmul(dl_blas *blas, dl_dtype t, size_t offset)
{
  const int BT = 70, C = 96, OC = 80;
  const size_t w_offset = offset ? offset + 4 * dl_dtype_bytes(t) : 0;
  static const char *const outputs[4] = {"forward", "dinp", "dweight", "dbias"};
  char what[4][64];
  float *inp = host_random((size_t)BT * C, 1), *w = host_random((size_t)OC * C, 0.5f), *bias = host_random(OC, 0.5f);
  float *dout = host_random((size_t)BT * OC, 1), *out = malloc(sizeof(float) * BT * OC);
  float *dinp = host_zeros((size_t)BT * C), *dw = host_zeros((size_t)OC * C), *db = host_zeros(OC);
  void *d_inp = device_at(inp, (size_t)BT * C, t, offset), *d_w = device_at(w, (size_t)OC * C, t, w_offset);
  void *d_out = device_at(NULL, (size_t)BT * OC, t, offset), *d_dout = device_at(dout, (size_t)BT * OC, t, offset);
  void *d_dinp = device_at(NULL, (size_t)BT * C, t, offset), *d_bias = device_at(bias, OC, t, w_offset);
  float *d_dw = device_at(dw, (size_t)OC * C, DL_F32, offset), *d_db = device_at(NULL, OC, DL_F32, offset);
  float *bias_act = host_from(d_bias, OC, t); /* the bias rounded to the act type, as the GPU reads it */
  matmul_fwd_f32(out, inp, w, bias_act, BT, C, OC);
  matmul_bwd_f32(dinp, dw, db, dout, inp, w, BT, C, OC);
  CHECK_GPU(dl_matmul_fwd(blas, d_out, d_inp, d_w, d_bias, BT, C, OC, t, 0));
  CHECK_GPU(dl_matmul_bwd(blas, d_dinp, 0, d_dw, d_db, d_dout, d_inp, d_w, BT, C, OC, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  for (int i = 0; i < 4; i++)
    snprintf(what[i], sizeof(what[i]), "matmul %s, offset %zu", outputs[i], offset);
  CHECK_CLOSE(what[0], t, host_from(d_out, (size_t)BT * OC, t), out, (size_t)BT * OC);
  CHECK_CLOSE(what[1], t, host_from(d_dinp, (size_t)BT * C, t), dinp, (size_t)BT * C);
  CHECK_CLOSE(what[2], t, host_from(d_dw, (size_t)OC * C, DL_F32), dw, (size_t)OC * C);
  CHECK_CLOSE(what[3], t, host_from(d_db, OC, DL_F32), db, OC);
}

static void test_layernorm(dl_dtype t)
{
  const int BT = 37, C = 96;
  const size_t n = (size_t)BT * C;
  float *x = host_random(n, 2), *y = host_random(n, 1), *w = host_random(C, 1), *b = host_random(C, 1);
  float *bias = host_random(C, 1), *dout = host_random(n, 1), *sum = malloc(n * sizeof(float));
  float *out = malloc(n * sizeof(float)), mean[37], rstd[37], *dinp = host_zeros(n), *dw = host_zeros(C), *db = host_zeros(C);
  void *d_x = device_from(x, n, t), *d_y = device_from(y, n, t), *d_out = device_from(NULL, n, t);
  void *d_sum = device_from(NULL, n, t), *d_dout = device_from(dout, n, t), *d_dinp = device_from(dinp, n, t);
  float *d_w = device_from(w, C, DL_F32), *d_b = device_from(b, C, DL_F32), *d_bias = device_from(bias, C, DL_F32);
  float *d_mean = device_from(NULL, BT, DL_F32), *d_rstd = device_from(NULL, BT, DL_F32);
  float *d_dw = device_from(dw, C, DL_F32), *d_db = device_from(db, C, DL_F32);
  for (size_t i = 0; i < n; i++)
    sum[i] = x[i] + y[i] + bias[i % C];
  layernorm_fwd_f32(out, mean, rstd, sum, w, b, BT, C, 1e-6f);
  layernorm_bwd_f32(dinp, dw, db, dout, sum, w, mean, rstd, BT, C);
  CHECK_GPU(dl_residual_layernorm_fwd(d_sum, d_out, d_mean, d_rstd, d_x, d_y, d_bias, d_w, d_b, BT, C, 1e-6f, t, 0));
  CHECK_GPU(dl_layernorm_bwd(d_dinp, d_dw, d_db, d_dout, d_sum, d_w, d_mean, d_rstd, BT, C, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  CHECK_CLOSE("residual add", t, host_from(d_sum, n, t), sum, n);
  CHECK_CLOSE("layernorm forward", t, host_from(d_out, n, t), out, n);
  CHECK_CLOSE("layernorm dinp", t, host_from(d_dinp, n, t), dinp, n);
  CHECK_CLOSE("layernorm dweight", t, host_from(d_dw, C, DL_F32), dw, C);
  CHECK_CLOSE("layernorm dbias", t, host_from(d_db, C, DL_F32), db, C);
  d_out = device_from(NULL, n, t);
  CHECK_GPU(dl_layernorm_fwd(d_out, d_mean, d_rstd, d_sum, d_w, d_b, BT, C, 1e-6f, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  CHECK_CLOSE("layernorm forward (no residual)", t, host_from(d_out, n, t), out, n);
}

static void test_pointwise(dl_dtype t)
{
  const size_t n = 5000;
  float *x = host_random(n, 3), *dout = host_random(n, 1), *out = malloc(n * 4), *dinp = malloc(n * 4);
  void *d_x = device_from(x, n, t), *d_dout = device_from(dout, n, t), *d_out = device_from(NULL, n, t);
  void *d_dinp = device_from(NULL, n, t);
  gelu_fwd_f32(out, x, n);
  gelu_bwd_f32(dinp, x, dout, n);
  CHECK_GPU(dl_gelu_fwd(d_out, d_x, n, t, 0));
  CHECK_GPU(dl_gelu_bwd(d_dinp, d_x, d_dout, n, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
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
  CHECK_GPU(dl_attention_fwd(d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
  CHECK_GPU(dl_attention_bwd(d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, d_delta, B, N, NH, HD, scale, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
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
  float *d_dpred = device_from(NULL, total, DL_F32), *d_sums = device_from(NULL, 2 * B, DL_F32);
  float *d_loss = device_from(&zero, 1, DL_F32), *d_rmse = device_from(NULL, B + 1, DL_F32), *d_w;
  const float want_loss = l2_loss_fwd_f32(NULL, pred, target, B, n);
  l2_loss_bwd_f32(dpred, pred, target, B, n, 1.0f);
  lat_weights_f32(lat_w, H);
  d_w = device_from(lat_w, H, DL_F32);
  CHECK_GPU(cudaMemset(d_rmse, 0, sizeof(float)));
  CHECK_GPU(dl_l2_loss_fwd(d_loss, d_sums, d_pred, d_target, B, n, 0));
  CHECK_GPU(dl_l2_loss_bwd(d_dpred, d_sums, d_pred, d_target, B, n, NULL, 0));
  CHECK_GPU(dl_weighted_rmse(d_rmse, d_pred, d_target, d_w, B, C, H, W, 0, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  CHECK_GPU(cudaMemcpy(&loss, d_loss, 4, cudaMemcpyDeviceToHost));
  CHECK_GPU(cudaMemcpy(&rmse, d_rmse, 4, cudaMemcpyDeviceToHost));
  CHECK_CLOSE("l2 loss", DL_F32, &loss, &want_loss, 1);
  CHECK_CLOSE("l2 loss backward", DL_F32, host_from(d_dpred, total, DL_F32), dpred, total);
  {
    const float want_rmse = (float)weighted_rmse_f32(pred, target, lat_w, B, C, H, W, 0);
    CHECK_CLOSE("weighted rmse", DL_F32, &rmse, &want_rmse, 1);
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
  CHECK_GPU(dl_adam(d_p, d_act, t, d_m, d_v, d_g1, n, d_lr1, 0.9f, 0.95f, 1e-8f, d_scale, NULL, 0));
  CHECK_GPU(dl_adam(d_p, d_act, t, d_m, d_v, d_g2, n, d_lr2, 0.9f, 0.95f, 1e-8f, d_scale, NULL, 0));
  CHECK_GPU(cudaDeviceSynchronize());
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
  void *d_patches = device_from(NULL, n, t), *d_tokens = device_from(tokens, n, t), *d_dtok = device_from(NULL, n, t);
  void *d_x = device_from(x, (size_t)B * N * D, t);
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
  CHECK_GPU(dl_patchify(d_patches, d_img, B, C, H, W, P, t, 0));
  CHECK_GPU(dl_unpatchify(d_back, d_tokens, B, C, H, W, P, t, 0));
  CHECK_GPU(dl_unpatchify_bwd(d_dtok, d_img, B, C, H, W, P, t, 0));
  CHECK_GPU(dl_pos_embed_bwd(d_dpos, d_x, B, N, D, t, 0));
  CHECK_GPU(dl_column_sum(d_col, d_x, B * N, D, t, 0));
  CHECK_GPU(dl_add_pos_embed(d_x, d_pos, B, N, D, t, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  CHECK_CLOSE("patchify", t, host_from(d_patches, n, t), patches, n);
  CHECK_CLOSE("unpatchify", t, host_from(d_back, n, DL_F32), back, n);
  CHECK_CLOSE("unpatchify backward", t, host_from(d_dtok, n, t), dtok, n);
  CHECK_CLOSE("position embedding", t, host_from(d_x, (size_t)B * N * D, t), x_pos, (size_t)B * N * D);
  CHECK_CLOSE("position embedding gradient", t, host_from(d_dpos, (size_t)N * D, DL_F32), dpos, (size_t)N * D);
  CHECK_CLOSE("column sum", t, host_from(d_col, D, DL_F32), col, D);
}

int main(void)
{
  const dl_dtype types[3] = {DL_F32, DL_BF16, DL_F16};
  dl_blas *blas;
  require_gpu();
  CHECK_GPU(dl_blas_create(&blas, 32u << 20, 0));
  for (int i = 0; i < 3; i++) {
    test_matmul(blas, types[i], 0);
    test_matmul(blas, types[i], 64);  /* activations sliced at 64-128-byte offsets */
    test_matmul(blas, types[i], 96);
    test_layernorm(types[i]);
    test_pointwise(types[i]);
    test_attention(types[i], 150, 48);  /* the base config's head size; partial tiles */
    test_attention(types[i], 70, 128);  /* the mp config's head size */
    test_adam(types[i]);
    test_layout_ops(types[i]);
  }
  test_loss_and_metrics();
  dl_blas_destroy(blas);
  return check_report("test_kernels_gpu");
}

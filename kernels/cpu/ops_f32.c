/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cpu/ops_f32.c: the CPU reference ops in float, what the trainer runs.
 * The algorithms are in ops_body.h, once for a type `real`, compiled here
 * into static NAME_real functions; each public op below is one call to its
 * algorithm, spelled out by its full name so that grep finds its
 * definition (token pasting would hide it) and the algorithm stays one
 * copy for both precisions. */
#include "config.h"

#include "kernels/cpu/ops.h"

typedef float real;
#define GEMM cblas_sgemm
#define EXP expf
#define ERF erff
#define TANH tanhf
#include "kernels/cpu/ops_body.h"

void matmul_fwd_f32(float *out, const float *inp, const float *w, const float *bias, int BT, int C, int OC)
{
  matmul_fwd_real(out, inp, w, bias, BT, C, OC);
}

void matmul_bwd_f32(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w, int BT,
                    int C, int OC)
{
  matmul_bwd_real(dinp, dw, dbias, dout, inp, w, BT, C, OC);
}

void layernorm_fwd_f32(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int BT,
                       int C, float eps)
{
  layernorm_fwd_real(out, mean, rstd, inp, w, b, BT, C, eps);
}

void layernorm_bwd_f32(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                       const float *mean, const float *rstd, int BT, int C)
{
  layernorm_bwd_real(dinp, dw, db, dout, inp, w, mean, rstd, BT, C);
}

void gelu_fwd_f32(float *out, const float *inp, size_t n)
{
  gelu_fwd_real(out, inp, n);
}

void gelu_tanh_fwd_f32(float *out, const float *inp, size_t n)
{
  gelu_tanh_fwd_real(out, inp, n);
}

void gelu_bwd_f32(float *dinp, const float *inp, const float *dout, size_t n)
{
  gelu_bwd_real(dinp, inp, dout, n);
}

void softmax_fwd_f32(float *out, const float *inp, int rows, int cols)
{
  softmax_fwd_real(out, inp, rows, cols);
}

void attention_fwd_f32(float *o, float *lse, const float *q, const float *k, const float *v, int B, int N, int NH,
                       int HD, float scale)
{
  attention_fwd_real(o, lse, q, k, v, B, N, NH, HD, scale);
}

void attention_bwd_f32(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                       const float *v, const float *o, const float *lse, int B, int N, int NH, int HD, float scale)
{
  attention_bwd_real(dq, dk, dv, dout, q, k, v, o, lse, B, N, NH, HD, scale);
}

float l2_loss_fwd_f32(float *per_sample, const float *pred, const float *target, int B, size_t n)
{
  return l2_loss_fwd_real(per_sample, pred, target, B, n);
}

void l2_loss_bwd_f32(float *dpred, const float *pred, const float *target, int B, size_t n, float dloss)
{
  l2_loss_bwd_real(dpred, pred, target, B, n, dloss);
}

void adam_update_f32(float *param, float *m, float *v, const float *grad, size_t n, float lr, float beta1,
                     float beta2, float eps, long t)
{
  adam_update_real(param, m, v, grad, n, lr, beta1, beta2, eps, t);
}

void patchify_f32(float *patches, const float *img, int B, int C, int H, int W, int P)
{
  patchify_real(patches, img, B, C, H, W, P);
}

void unpatchify_f32(float *img, const float *tokens, int B, int C, int H, int W, int P)
{
  unpatchify_real(img, tokens, B, C, H, W, P);
}

void unpatchify_bwd_f32(float *dtokens, const float *dimg, int B, int C, int H, int W, int P)
{
  unpatchify_bwd_real(dtokens, dimg, B, C, H, W, P);
}

/* The validation metrics: the trainer's alone, so float alone. */

void lat_weights_f32(float *w, int H)
{
  double sum = 0;
  for (int j = 0; j < H; j++)
    sum += cos((90.0 - j * 180.0 / (H - 1)) * M_PI / 180.0);
  for (int j = 0; j < H; j++)
    w[j] = (float)(H * cos((90.0 - j * 180.0 / (H - 1)) * M_PI / 180.0) / sum);
}

double weighted_rmse_f32(const float *pred, const float *target, const float *lat_w, int B, int C, int H, int W,
                         int c)
{
  double total = 0;
  for (int b = 0; b < B; b++) {
    const size_t base = ((size_t)b * C + c) * H * W;
    double sum = 0;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        const double d = pred[base + (size_t)y * W + x] - target[base + (size_t)y * W + x];
        sum += lat_w[y] * d * d;
      }
    total += sqrt(sum / ((double)H * W));
  }
  return total;
}

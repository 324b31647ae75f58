/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cpu/ops_f64.c: the CPU reference ops in double, for the finite-difference gradient tests.
 * The algorithms are in ops_body.h, once for a type `real`, compiled here
 * into static NAME_real functions; each public op below is one call to its
 * algorithm, spelled out by its full name so that grep finds its
 * definition (token pasting would hide it) and the algorithm stays one
 * copy for both precisions. */
#include "config.h"

#include "kernels/cpu/ops.h"

typedef double real;
#define GEMM cblas_dgemm
#define EXP exp
#define ERF erf
#define TANH tanh
#include "kernels/cpu/ops_body.h"

void matmul_fwd_f64(double *out, const double *inp, const double *w, const double *bias, int BT, int C, int OC)
{
  matmul_fwd_real(out, inp, w, bias, BT, C, OC);
}

void matmul_bwd_f64(double *dinp, double *dw, double *dbias, const double *dout, const double *inp, const double *w,
                    int BT, int C, int OC)
{
  matmul_bwd_real(dinp, dw, dbias, dout, inp, w, BT, C, OC);
}

void layernorm_fwd_f64(double *out, double *mean, double *rstd, const double *inp, const double *w, const double *b,
                       int BT, int C, double eps)
{
  layernorm_fwd_real(out, mean, rstd, inp, w, b, BT, C, eps);
}

void layernorm_bwd_f64(double *dinp, double *dw, double *db, const double *dout, const double *inp, const double *w,
                       const double *mean, const double *rstd, int BT, int C)
{
  layernorm_bwd_real(dinp, dw, db, dout, inp, w, mean, rstd, BT, C);
}

void gelu_fwd_f64(double *out, const double *inp, size_t n)
{
  gelu_fwd_real(out, inp, n);
}

void gelu_tanh_fwd_f64(double *out, const double *inp, size_t n)
{
  gelu_tanh_fwd_real(out, inp, n);
}

void gelu_bwd_f64(double *dinp, const double *inp, const double *dout, size_t n)
{
  gelu_bwd_real(dinp, inp, dout, n);
}

void softmax_fwd_f64(double *out, const double *inp, int rows, int cols)
{
  softmax_fwd_real(out, inp, rows, cols);
}

void attention_fwd_f64(double *o, double *lse, const double *q, const double *k, const double *v, int B, int N,
                       int NH, int HD, double scale)
{
  attention_fwd_real(o, lse, q, k, v, B, N, NH, HD, scale);
}

void attention_bwd_f64(double *dq, double *dk, double *dv, const double *dout, const double *q, const double *k,
                       const double *v, const double *o, const double *lse, int B, int N, int NH, int HD,
                       double scale)
{
  attention_bwd_real(dq, dk, dv, dout, q, k, v, o, lse, B, N, NH, HD, scale);
}

double l2_loss_fwd_f64(double *per_sample, const double *pred, const double *target, int B, size_t n)
{
  return l2_loss_fwd_real(per_sample, pred, target, B, n);
}

void l2_loss_bwd_f64(double *dpred, const double *pred, const double *target, int B, size_t n, double dloss)
{
  l2_loss_bwd_real(dpred, pred, target, B, n, dloss);
}

void adam_update_f64(double *param, double *m, double *v, const double *grad, size_t n, double lr, double beta1,
                     double beta2, double eps, long t)
{
  adam_update_real(param, m, v, grad, n, lr, beta1, beta2, eps, t);
}

void patchify_f64(double *patches, const double *img, int B, int C, int H, int W, int P)
{
  patchify_real(patches, img, B, C, H, W, P);
}

void unpatchify_f64(double *img, const double *tokens, int B, int C, int H, int W, int P)
{
  unpatchify_real(img, tokens, B, C, H, W, P);
}

void unpatchify_bwd_f64(double *dtokens, const double *dimg, int B, int C, int H, int W, int P)
{
  unpatchify_bwd_real(dtokens, dimg, B, C, H, W, P);
}

/* The references only the gradient tests use: double alone. */

void softmax_bwd_f64(double *dinp, const double *out, const double *dout, int rows, int cols)
{
#pragma omp parallel for
  for (int r = 0; r < rows; r++) {
    const double *y = out + (size_t)r * cols, *dy = dout + (size_t)r * cols;
    double dot = 0;
    for (int c = 0; c < cols; c++)
      dot += y[c] * dy[c];
    for (int c = 0; c < cols; c++)
      dinp[(size_t)r * cols + c] = y[c] * (dy[c] - dot);
  }
}

void attention_naive_fwd_f64(double *o, const double *q, const double *k, const double *v, int B, int N, int NH,
                             int HD, double scale)
{
  const int ld = NH * HD;
  double *scores = malloc(sizeof(double) * (size_t)N * N), *probs = malloc(sizeof(double) * (size_t)N * N);
  for (int b = 0; b < B; b++) {
    for (int head = 0; head < NH; head++) {
      const size_t base = (size_t)b * N * ld + (size_t)head * HD;
      for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
          double s = 0;
          for (int d = 0; d < HD; d++)
            s += q[base + (size_t)i * ld + d] * k[base + (size_t)j * ld + d];
          scores[(size_t)i * N + j] = s * scale;
        }
      softmax_fwd_real(probs, scores, N, N);
      for (int i = 0; i < N; i++)
        for (int d = 0; d < HD; d++) {
          double s = 0;
          for (int j = 0; j < N; j++)
            s += probs[(size_t)i * N + j] * v[base + (size_t)j * ld + d];
          o[base + (size_t)i * ld + d] = s;
        }
    }
  }
  free(scores);
  free(probs);
}

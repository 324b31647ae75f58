/* kernels/cpu/ops.h: the CPU reference ops, in float (the trainer) and
 * double (gradient tests). See kernels/README.md for the layouts. Backward
 * functions accumulate (+=) into parameter gradients and, where noted,
 * into input gradients, so residual branches add up without copies. */
#ifndef DLPAR_KERNELS_CPU_OPS_H
#define DLPAR_KERNELS_CPU_OPS_H

#include <stddef.h>

#define DLPAR_DECLARE_OPS(real, sfx)                                                                     \
  /* out[BT,OC] = inp[BT,C] w[OC,C]^T + bias[OC] (bias may be NULL) */                                   \
  void matmul_fwd_##sfx(real *out, const real *inp, const real *w, const real *bias, int BT, int C,     \
                        int OC);                                                                         \
  /* dinp += dout w; dw += dout^T inp; dbias += colsum(dout) (each may be NULL) */                       \
  void matmul_bwd_##sfx(real *dinp, real *dw, real *dbias, const real *dout, const real *inp,           \
                        const real *w, int BT, int C, int OC);                                           \
  void layernorm_fwd_##sfx(real *out, real *mean, real *rstd, const real *inp, const real *w,           \
                           const real *b, int BT, int C, real eps);                                      \
  /* dinp += ..., dw += ..., db += ... */                                                                \
  void layernorm_bwd_##sfx(real *dinp, real *dw, real *db, const real *dout, const real *inp,           \
                           const real *w, const real *mean, const real *rstd, int BT, int C);            \
  /* exact GELU: x/2 (1 + erf(x/sqrt 2)) */                                                              \
  void gelu_fwd_##sfx(real *out, const real *inp, size_t n);                                             \
  /* dinp = dout * gelu'(inp) */                                                                         \
  void gelu_bwd_##sfx(real *dinp, const real *inp, const real *dout, size_t n);                          \
  void softmax_fwd_##sfx(real *out, const real *inp, int rows, int cols);                                \
  void softmax_bwd_##sfx(real *dinp, const real *out, const real *dout, int rows, int cols);            \
  /* blocked attention with an online softmax: memory O(block^2), never N x N. q,k,v,o (B,N,NH,HD);      \
   * lse (B,NH,N) = log-sum-exp of each row of scaled scores, kept for the backward */                   \
  void attention_fwd_##sfx(real *o, real *lse, const real *q, const real *k, const real *v, int B,      \
                           int N, int NH, int HD, real scale);                                           \
  /* dq, dk, dv = (overwritten) */                                                                       \
  void attention_bwd_##sfx(real *dq, real *dk, real *dv, const real *dout, const real *q,               \
                           const real *k, const real *v, const real *o, const real *lse, int B, int N,   \
                           int NH, int HD, real scale);                                                  \
  /* the textbook N x N attention (softmax(q k^T scale) v), for tests */                                 \
  void attention_naive_fwd_##sfx(real *o, const real *q, const real *k, const real *v, int B, int N,    \
                                 int NH, int HD, real scale);                                            \
  /* mean over samples of ||pred - target|| / ||target|| (n values per sample); per_sample may be NULL */ \
  real l2_loss_fwd_##sfx(real *per_sample, const real *pred, const real *target, int B, size_t n);      \
  /* dpred = dloss * d(loss)/d(pred) */                                                                  \
  void l2_loss_bwd_##sfx(real *dpred, const real *pred, const real *target, int B, size_t n,            \
                         real dloss);                                                                    \
  /* Adam (no weight decay), step t >= 1, bias-corrected */                                              \
  void adam_update_##sfx(real *param, real *m, real *v, const real *grad, size_t n, real lr,            \
                         real beta1, real beta2, real eps, long t);                                      \
  /* image (B,C,H,W) -> patches (B*N, C*P*P), tokens row-major over (H/P, W/P) */                       \
  void patchify_##sfx(real *patches, const real *img, int B, int C, int H, int W, int P);               \
  /* tokens (B*N, P*P*C), channel fastest -> image (B,C,H,W) */                                          \
  void unpatchify_##sfx(real *img, const real *tokens, int B, int C, int H, int W, int P);              \
  /* the adjoint of unpatchify: dtokens = (overwritten) */                                               \
  void unpatchify_bwd_##sfx(real *dtokens, const real *dimg, int B, int C, int H, int W, int P);         \
  /* latitude weights w_j = H cos(lat_j) / sum cos(lat), lat_j = 90 - j 180/(H-1) degrees */              \
  void lat_weights_##sfx(real *w, int H);                                                                \
  /* per sample b: sqrt(mean over (y, x) of w_y (pred - target)^2) of channel c (the tutorial's          \
   * weighted_rmse); returns their sum over the batch */                                                 \
  double weighted_rmse_##sfx(const real *pred, const real *target, const real *lat_w, int B, int C,     \
                             int H, int W, int c);

DLPAR_DECLARE_OPS(float, f32)
DLPAR_DECLARE_OPS(double, f64)

#endif

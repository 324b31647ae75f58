/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cpu/ops.h: the CPU reference ops, in float as NAME_f32 for the
 * trainer and in double as NAME_f64 for the gradient tests. Each is
 * declared by its full name, while the algorithms are written once, in
 * kernels/cpu/ops_body.h. See kernels/README.md for the layouts. Backward
 * functions accumulate with += into parameter gradients and, where noted,
 * into input gradients, so residual branches add up without copies. */
#ifndef DLPAR_KERNELS_CPU_OPS_H
#define DLPAR_KERNELS_CPU_OPS_H

#include <stddef.h>

/* out[BT,OC] = inp[BT,C] w[OC,C]^T + bias[OC], where bias may be NULL */
void matmul_fwd_f32(float *out, const float *inp, const float *w, const float *bias, int BT, int C, int OC);
void matmul_fwd_f64(double *out, const double *inp, const double *w, const double *bias, int BT, int C, int OC);

/* dinp += dout w; dw += dout^T inp; dbias += colsum(dout). Each may be NULL. */
void matmul_bwd_f32(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w, int BT,
                    int C, int OC);
void matmul_bwd_f64(double *dinp, double *dw, double *dbias, const double *dout, const double *inp, const double *w,
                    int BT, int C, int OC);

void layernorm_fwd_f32(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int BT,
                       int C, float eps);
void layernorm_fwd_f64(double *out, double *mean, double *rstd, const double *inp, const double *w, const double *b,
                       int BT, int C, double eps);

/* dinp += ..., dw += ..., db += ... */
void layernorm_bwd_f32(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                       const float *mean, const float *rstd, int BT, int C);
void layernorm_bwd_f64(double *dinp, double *dw, double *db, const double *dout, const double *inp, const double *w,
                       const double *mean, const double *rstd, int BT, int C);

/* exact GELU: x/2 (1 + erf(x/sqrt 2)) */
void gelu_fwd_f32(float *out, const float *inp, size_t n);
void gelu_fwd_f64(double *out, const double *inp, size_t n);

/* GELU's tanh approximation: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
void gelu_tanh_fwd_f32(float *out, const float *inp, size_t n);
void gelu_tanh_fwd_f64(double *out, const double *inp, size_t n);

/* dinp = dout * gelu'(inp) */
void gelu_bwd_f32(float *dinp, const float *inp, const float *dout, size_t n);
void gelu_bwd_f64(double *dinp, const double *inp, const double *dout, size_t n);

void softmax_fwd_f32(float *out, const float *inp, int rows, int cols);
void softmax_fwd_f64(double *out, const double *inp, int rows, int cols);

void softmax_bwd_f64(double *dinp, const double *out, const double *dout, int rows, int cols);

/* Blocked attention with an online softmax, its memory a block squared, never
 * N x N. q, k, v and o are [B,N,NH,HD]. lse [B,NH,N] is the log-sum-exp of
 * each row of scaled scores, kept for the backward. */
void attention_fwd_f32(float *o, float *lse, const float *q, const float *k, const float *v, int B, int N, int NH,
                       int HD, float scale);
void attention_fwd_f64(double *o, double *lse, const double *q, const double *k, const double *v, int B, int N,
                       int NH, int HD, double scale);

/* dq, dk and dv are overwritten */
void attention_bwd_f32(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                       const float *v, const float *o, const float *lse, int B, int N, int NH, int HD, float scale);
void attention_bwd_f64(double *dq, double *dk, double *dv, const double *dout, const double *q, const double *k,
                       const double *v, const double *o, const double *lse, int B, int N, int NH, int HD,
                       double scale);

/* the textbook N x N attention, softmax(q k^T scale) v, for tests */
void attention_naive_fwd_f64(double *o, const double *q, const double *k, const double *v, int B, int N, int NH,
                             int HD, double scale);

/* the mean over samples of ||pred - target|| / ||target||, with n values per sample; per_sample may be NULL */
float l2_loss_fwd_f32(float *per_sample, const float *pred, const float *target, int B, size_t n);
double l2_loss_fwd_f64(double *per_sample, const double *pred, const double *target, int B, size_t n);

/* dpred = dloss * d(loss)/d(pred) */
void l2_loss_bwd_f32(float *dpred, const float *pred, const float *target, int B, size_t n, float dloss);
void l2_loss_bwd_f64(double *dpred, const double *pred, const double *target, int B, size_t n, double dloss);

/* Adam without weight decay, bias-corrected, at step t >= 1 */
void adam_update_f32(float *param, float *m, float *v, const float *grad, size_t n, float lr, float beta1,
                     float beta2, float eps, long t);
void adam_update_f64(double *param, double *m, double *v, const double *grad, size_t n, double lr, double beta1,
                     double beta2, double eps, long t);

/* image [B,C,H,W] -> patches [B*N, C*P*P], the tokens row-major over [H/P, W/P] */
void patchify_f32(float *patches, const float *img, int B, int C, int H, int W, int P);
void patchify_f64(double *patches, const double *img, int B, int C, int H, int W, int P);

/* tokens [B*N, P*P*C], channel fastest -> image [B,C,H,W] */
void unpatchify_f32(float *img, const float *tokens, int B, int C, int H, int W, int P);
void unpatchify_f64(double *img, const double *tokens, int B, int C, int H, int W, int P);

/* the adjoint of unpatchify; dtokens is overwritten */
void unpatchify_bwd_f32(float *dtokens, const float *dimg, int B, int C, int H, int W, int P);
void unpatchify_bwd_f64(double *dtokens, const double *dimg, int B, int C, int H, int W, int P);

/* latitude weights w_j = H cos(lat_j) / sum cos(lat), lat_j = 90 - j 180/(H-1) degrees */
void lat_weights_f32(float *w, int H);

/* Per sample b, sqrt(mean over y, x of w_y (pred - target)^2) of channel c,
 * as the tutorial's weighted_rmse computes it. Returns their sum over the batch. */
double weighted_rmse_f32(const float *pred, const float *target, const float *lat_w, int B, int C, int H, int W,
                         int c);

#endif

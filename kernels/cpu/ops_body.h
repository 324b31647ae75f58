/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cpu/ops_body.h: the algorithms of the CPU reference ops, written
 * once for a type `real` and compiled twice, each time into static
 * functions NAME_real. ops_f32.c compiles them in float for the trainer,
 * and ops_f64.c in double for the finite-difference gradient tests. They
 * define the public NAME_f32 and NAME_f64 entry points as one-line calls,
 * by their full names, without token pasting, so grep finds every
 * definition. Before including, typedef real and define GEMM as
 * cblas_sgemm or cblas_dgemm, EXP as expf or exp, and ERF as erff or erf.
 * Reductions accumulate in double in both.
 *
 * Threads come from OpenMP only. BLAS runs single-threaded inside our
 * parallel regions, where GEMMs are split by rows of the output. So one
 * pool of threads does all the work, instead of OpenMP's and OpenBLAS's
 * spinning against each other, which is 60-120x slower at the ViT's
 * attention. Every op that calls BLAS sets that itself at its first call,
 * through blas_one_thread, so every caller gets it: dlpar-train, the GPU
 * tests' CPU references, the unit tests and the benches. */
#include <cblas.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { ATTN_BLOCK_Q = 64, ATTN_BLOCK_K = 128 };

/* ------------------------------------------------------------ threads */

static pthread_once_t blas_threads_set = PTHREAD_ONCE_INIT;

/* OpenBLAS's own thread pool to one thread. An OpenMP build of OpenBLAS
 * already runs one thread inside a parallel region, and its
 * openblas_set_num_threads would set OpenMP's threads, the ops' own: it
 * is left alone. */
static void blas_threads_now(void)
{
  if (openblas_get_parallel() == OPENBLAS_THREAD)
    openblas_set_num_threads(1);
}

/* Once per process and per precision's file, before the first GEMM and
 * outside any parallel region. */
static void blas_one_thread(void)
{
  (void)pthread_once(&blas_threads_set, blas_threads_now); /* fails only for a bad argument */
}

/* ------------------------------------------------------------ matmul */

/* This thread's share [*lo, *hi) of n rows. */
static void thread_share(int n, int *lo, int *hi)
{
#ifdef _OPENMP
  const int threads = omp_get_num_threads(), me = omp_get_thread_num();
#else
  const int threads = 1, me = 0;
#endif
  *lo = (int)((long)n * me / threads);
  *hi = (int)((long)n * (me + 1) / threads);
}

static void matmul_fwd_real(real *out, const real *inp, const real *w, const real *bias, int BT, int C, int OC)
{
  blas_one_thread();
#pragma omp parallel
  {
    int lo, hi;
    thread_share(BT, &lo, &hi);
    if (hi > lo)
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, OC, C, 1, inp + (size_t)lo * C, C, w, C, 0,
           out + (size_t)lo * OC, OC);
    for (int i = lo; bias && i < hi; i++)
      for (int o = 0; o < OC; o++)
        out[(size_t)i * OC + o] += bias[o];
  }
}

static void matmul_bwd_real(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w,
                            int BT, int C, int OC)
{
  blas_one_thread();
#pragma omp parallel
  {
    int lo, hi;
    thread_share(BT, &lo, &hi); /* dinp: rows of the batch */
    if (dinp && hi > lo)
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, hi - lo, C, OC, 1, dout + (size_t)lo * OC, OC, w, C, 1,
           dinp + (size_t)lo * C, C);
    thread_share(OC, &lo, &hi); /* dw: rows of the weight */
    if (dw && hi > lo)
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, hi - lo, C, BT, 1, dout + lo, OC, inp, C, 1,
           dw + (size_t)lo * C, C);
  }
  if (!dbias)
    return;
#pragma omp parallel for
  for (int o = 0; o < OC; o++) {
    double sum = 0;
    for (int i = 0; i < BT; i++)
      sum += dout[(size_t)i * OC + o];
    dbias[o] += (real)sum;
  }
}

/* ------------------------------------------------------------ layernorm */

static void layernorm_fwd_real(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b,
                               int BT, int C, real eps)
{
#pragma omp parallel for
  for (int i = 0; i < BT; i++) {
    const real *x = inp + (size_t)i * C;
    real *y = out + (size_t)i * C;
    double m = 0, var = 0;
    for (int c = 0; c < C; c++)
      m += x[c];
    m /= C;
    for (int c = 0; c < C; c++)
      var += (x[c] - m) * (x[c] - m);
    var /= C;
    const double s = 1.0 / sqrt(var + eps);
    for (int c = 0; c < C; c++)
      y[c] = (real)((x[c] - m) * s) * w[c] + b[c];
    mean[i] = (real)m;
    rstd[i] = (real)s;
  }
}

static void layernorm_bwd_real(real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                               const real *mean, const real *rstd, int BT, int C)
{
#pragma omp parallel for
  for (int i = 0; i < BT; i++) {
    const real *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
    real *dx = dinp + (size_t)i * C;
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; c++) {
      const double norm = (x[c] - mean[i]) * rstd[i];
      dnorm_mean += dy[c] * w[c];
      dnorm_norm_mean += dy[c] * w[c] * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; c++) {
      const double norm = (x[c] - mean[i]) * rstd[i];
      dx[c] += (real)((dy[c] * w[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[i]);
    }
  }
#pragma omp parallel for
  for (int c = 0; c < C; c++) {
    double sw = 0, sb = 0;
    for (int i = 0; i < BT; i++) {
      const size_t at = (size_t)i * C + c;
      sw += dout[at] * (inp[at] - mean[i]) * rstd[i];
      sb += dout[at];
    }
    dw[c] += (real)sw;
    db[c] += (real)sb;
  }
}

/* ------------------------------------------------------------ gelu */

static void gelu_fwd_real(real *out, const real *inp, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    out[i] = (real)0.5 * inp[i] * ((real)1 + ERF(inp[i] * (real)M_SQRT1_2));
}

static void gelu_tanh_fwd_real(real *out, const real *inp, size_t n)
{
  const real k = (real)(M_2_SQRTPI * M_SQRT1_2); /* sqrt(2/pi) */
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) {
    const real x = inp[i];
    out[i] = (real)0.5 * x * ((real)1 + TANH(k * (x + (real)0.044715 * x * x * x)));
  }
}

static void gelu_bwd_real(real *dinp, const real *inp, const real *dout, size_t n)
{
  const real inv_sqrt_2pi = (real)(0.5 * M_2_SQRTPI * M_SQRT1_2);
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) {
    const real x = inp[i];
    const real cdf = (real)0.5 * ((real)1 + ERF(x * (real)M_SQRT1_2));
    dinp[i] = dout[i] * (cdf + x * inv_sqrt_2pi * EXP((real)-0.5 * x * x));
  }
}

/* ------------------------------------------------------------ softmax */

static void softmax_fwd_real(real *out, const real *inp, int rows, int cols)
{
#pragma omp parallel for
  for (int r = 0; r < rows; r++) {
    const real *x = inp + (size_t)r * cols;
    real *y = out + (size_t)r * cols;
    double max = -INFINITY, sum = 0;
    for (int c = 0; c < cols; c++)
      max = x[c] > max ? x[c] : max;
    for (int c = 0; c < cols; c++)
      sum += exp(x[c] - max);
    for (int c = 0; c < cols; c++)
      y[c] = (real)(exp(x[c] - max) / sum);
  }
}

/* ------------------------------------------------------------ attention */

/* One batch and head, whose rows of q, k, v and o are NH*HD apart. */
typedef struct {
  const real *q, *k, *v;
  int N, HD, ld;
  real scale;
} attn_head;

static void attn_head_fwd(const attn_head *h, real *o, real *lse, real *scores, real *acc)
{
  for (int q0 = 0; q0 < h->N; q0 += ATTN_BLOCK_Q) {
    const int bq = h->N - q0 < ATTN_BLOCK_Q ? h->N - q0 : ATTN_BLOCK_Q;
    double row_max[ATTN_BLOCK_Q], row_sum[ATTN_BLOCK_Q];
    for (int i = 0; i < bq; i++) {
      row_max[i] = -INFINITY;
      row_sum[i] = 0;
    }
    memset(acc, 0, sizeof(real) * (size_t)bq * h->HD);
    for (int k0 = 0; k0 < h->N; k0 += ATTN_BLOCK_K) {
      const int bk = h->N - k0 < ATTN_BLOCK_K ? h->N - k0 : ATTN_BLOCK_K;
      /* scores = q_blk k_blk^T * scale */
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, h->HD, h->scale, h->q + (size_t)q0 * h->ld, h->ld,
           h->k + (size_t)k0 * h->ld, h->ld, 0, scores, bk);
      for (int i = 0; i < bq; i++) {
        real *s = scores + (size_t)i * bk;
        double block_max = -INFINITY, new_max, correction, sum = 0;
        for (int j = 0; j < bk; j++)
          block_max = s[j] > block_max ? s[j] : block_max;
        new_max = block_max > row_max[i] ? block_max : row_max[i];
        correction = exp(row_max[i] - new_max);
        for (int j = 0; j < bk; j++) {
          s[j] = EXP(s[j] - (real)new_max);
          sum += s[j];
        }
        row_sum[i] = row_sum[i] * correction + sum;
        row_max[i] = new_max;
        for (int d = 0; d < h->HD; d++)
          acc[(size_t)i * h->HD + d] *= (real)correction;
      }
      /* acc += p v_blk */
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, h->HD, bk, 1, scores, bk, h->v + (size_t)k0 * h->ld,
           h->ld, 1, acc, h->HD);
    }
    for (int i = 0; i < bq; i++) {
      for (int d = 0; d < h->HD; d++)
        o[(size_t)(q0 + i) * h->ld + d] = (real)(acc[(size_t)i * h->HD + d] / row_sum[i]);
      lse[q0 + i] = (real)(row_max[i] + log(row_sum[i]));
    }
  }
}

static void attention_fwd_real(real *o, real *lse, const real *q, const real *k, const real *v, int B, int N, int NH,
                               int HD, real scale)
{
  const int ld = NH * HD;
  blas_one_thread();
#pragma omp parallel
  {
    real *scores = malloc(sizeof(real) * ATTN_BLOCK_Q * ATTN_BLOCK_K);
    real *acc = malloc(sizeof(real) * ATTN_BLOCK_Q * (size_t)HD);
#pragma omp for
    for (int bh = 0; bh < B * NH; bh++) {
      const int b = bh / NH, head = bh % NH;
      const size_t base = (size_t)b * N * ld + (size_t)head * HD;
      const attn_head h = {q + base, k + base, v + base, N, HD, ld, scale};
      attn_head_fwd(&h, o + base, lse + (size_t)bh * N, scores, acc);
    }
    free(scores);
    free(acc);
  }
}

typedef struct {
  real *dq, *dk, *dv;
  const real *dout, *o, *lse;
  real *p, *dp, *delta;
} attn_grads;

static void attn_head_bwd(const attn_head *h, const attn_grads *g)
{
  const int ld = h->ld, HD = h->HD;
  for (int i = 0; i < h->N; i++) {
    double delta = 0;
    for (int d = 0; d < HD; d++)
      delta += g->dout[(size_t)i * ld + d] * g->o[(size_t)i * ld + d];
    g->delta[i] = (real)delta;
    memset(g->dq + (size_t)i * ld, 0, sizeof(real) * HD);
    memset(g->dk + (size_t)i * ld, 0, sizeof(real) * HD);
    memset(g->dv + (size_t)i * ld, 0, sizeof(real) * HD);
  }
  for (int q0 = 0; q0 < h->N; q0 += ATTN_BLOCK_Q) {
    const int bq = h->N - q0 < ATTN_BLOCK_Q ? h->N - q0 : ATTN_BLOCK_Q;
    const real *qb = h->q + (size_t)q0 * ld, *dob = g->dout + (size_t)q0 * ld;
    for (int k0 = 0; k0 < h->N; k0 += ATTN_BLOCK_K) {
      const int bk = h->N - k0 < ATTN_BLOCK_K ? h->N - k0 : ATTN_BLOCK_K;
      const real *kb = h->k + (size_t)k0 * ld, *vb = h->v + (size_t)k0 * ld;
      /* p = exp(q k^T scale - lse) is recomputed, and dp = dout v^T */
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, HD, h->scale, qb, ld, kb, ld, 0, g->p, bk);
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, HD, 1, dob, ld, vb, ld, 0, g->dp, bk);
      for (int i = 0; i < bq; i++) {
        for (int j = 0; j < bk; j++) {
          const size_t at = (size_t)i * bk + j;
          g->p[at] = EXP(g->p[at] - g->lse[q0 + i]);
          g->dp[at] = g->p[at] * (g->dp[at] - g->delta[q0 + i]); /* now ds */
        }
      }
      /* dv += p^T dout; dq += ds k scale; dk += ds^T q scale */
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, bk, HD, bq, 1, g->p, bk, dob, ld, 1, g->dv + (size_t)k0 * ld, ld);
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, HD, bk, h->scale, g->dp, bk, kb, ld, 1,
           g->dq + (size_t)q0 * ld, ld);
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, bk, HD, bq, h->scale, g->dp, bk, qb, ld, 1,
           g->dk + (size_t)k0 * ld, ld);
    }
  }
}

static void attention_bwd_real(real *dq, real *dk, real *dv, const real *dout, const real *q, const real *k,
                               const real *v, const real *o, const real *lse, int B, int N, int NH, int HD, real scale)
{
  const int ld = NH * HD;
  blas_one_thread();
#pragma omp parallel
  {
    real *p = malloc(sizeof(real) * ATTN_BLOCK_Q * ATTN_BLOCK_K);
    real *dp = malloc(sizeof(real) * ATTN_BLOCK_Q * ATTN_BLOCK_K);
    real *delta = malloc(sizeof(real) * (size_t)N);
#pragma omp for
    for (int bh = 0; bh < B * NH; bh++) {
      const int b = bh / NH, head = bh % NH;
      const size_t base = (size_t)b * N * ld + (size_t)head * HD;
      const attn_head h = {q + base, k + base, v + base, N, HD, ld, scale};
      const attn_grads g = {dq + base, dk + base, dv + base, dout + base, o + base, lse + (size_t)bh * N,
                                p, dp, delta};
      attn_head_bwd(&h, &g);
    }
    free(p);
    free(dp);
    free(delta);
  }
}

/* ------------------------------------------------------------ loss */

static real l2_loss_fwd_real(real *per_sample, const real *pred, const real *target, int B, size_t n)
{
  double total = 0;
  for (int b = 0; b < B; b++) {
    const real *p = pred + (size_t)b * n, *t = target + (size_t)b * n;
    double diff2 = 0, norm2 = 0;
#pragma omp parallel for reduction(+ : diff2, norm2)
    for (size_t i = 0; i < n; i++) {
      diff2 += (double)(p[i] - t[i]) * (p[i] - t[i]);
      norm2 += (double)t[i] * t[i];
    }
    const double ratio = sqrt(diff2) / sqrt(norm2);
    if (per_sample)
      per_sample[b] = (real)ratio;
    total += ratio;
  }
  return (real)(total / B);
}

static void l2_loss_bwd_real(real *dpred, const real *pred, const real *target, int B, size_t n, real dloss)
{
  for (int b = 0; b < B; b++) {
    const real *p = pred + (size_t)b * n, *t = target + (size_t)b * n;
    real *dp = dpred + (size_t)b * n;
    double diff2 = 0, norm2 = 0, coef;
#pragma omp parallel for reduction(+ : diff2, norm2)
    for (size_t i = 0; i < n; i++) {
      diff2 += (double)(p[i] - t[i]) * (p[i] - t[i]);
      norm2 += (double)t[i] * t[i];
    }
    /* d/dp (|p - t| / |t|) / B = (p - t) / (|p - t| |t| B) */
    coef = diff2 > 0 ? dloss / (sqrt(diff2) * sqrt(norm2) * B) : 0;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++)
      dp[i] = (real)(coef * (p[i] - t[i]));
  }
}

/* ------------------------------------------------------------ adam */

static void adam_update_real(real *param, real *m, real *v, const real *grad, size_t n, real lr, real beta1, real beta2,
                             real eps, long t)
{
  /* torch.optim.Adam's arithmetic: step = lr / bc1; denom = sqrt(v) / sqrt(bc2) + eps */
  const double bc1 = 1.0 - pow(beta1, (double)t), bc2 = 1.0 - pow(beta2, (double)t);
  const real step = (real)(lr / bc1), bc2_sqrt = (real)sqrt(bc2);
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) {
    m[i] = beta1 * m[i] + (1 - beta1) * grad[i];
    v[i] = beta2 * v[i] + (1 - beta2) * grad[i] * grad[i];
    param[i] -= step * m[i] / ((real)sqrt(v[i]) / bc2_sqrt + eps);
  }
}

/* ------------------------------------------------------------ patches */

static void patchify_real(real *patches, const real *img, int B, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P, K = C * P * P;
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++)
    for (int i = 0; i < hp; i++)
      for (int j = 0; j < wp; j++)
        for (int c = 0; c < C; c++)
          for (int a = 0; a < P; a++)
            for (int e = 0; e < P; e++)
              patches[((size_t)b * hp * wp + (size_t)i * wp + j) * K + (size_t)c * P * P + a * P + e] =
                  img[(((size_t)b * C + c) * H + (size_t)i * P + a) * W + (size_t)j * P + e];
}

/* token (b, i, j), entry (a*P + e)*C + c  <->  pixel (b, c, i*P + a, j*P + e) */
static size_t token_entry(int b, int i, int j, int a, int e, int c, int hp, int wp, int C, int P)
{
  return ((size_t)b * hp * wp + (size_t)i * wp + j) * ((size_t)P * P * C) + ((size_t)a * P + e) * C + c;
}

static void unpatchify_real(real *img, const real *tokens, int B, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P;
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++)
    for (int c = 0; c < C; c++)
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
          img[(((size_t)b * C + c) * H + y) * W + x] =
              tokens[token_entry(b, y / P, x / P, y % P, x % P, c, hp, wp, C, P)];
}

static void unpatchify_bwd_real(real *dtokens, const real *dimg, int B, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P;
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++)
    for (int c = 0; c < C; c++)
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
          dtokens[token_entry(b, y / P, x / P, y % P, x % P, c, hp, wp, C, P)] =
              dimg[(((size_t)b * C + c) * H + y) * W + x];
}

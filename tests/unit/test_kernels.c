/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_kernels.c: the CPU reference ops (kernels/cpu).
 *  - every backward against central finite differences of its forward, in
 *    double, along random directions: <grad, u> vs (L(x+hu) - L(x-hu)) / 2h
 *    with L = <forward(x), r> for random r;
 *  - every float op against its double twin on the same fresh random
 *    inputs: ||out - ref|| / ||ref|| < 1e-5 (NaN fails);
 *  - blocked attention against the textbook N x N attention, with N not a
 *    multiple of the blocks;
 *  - Adam against its closed form, unpatchify against its adjoint. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/ops.h"
#include "tests/unit/check.h"

/* ------------------------------------------------------------ helpers */

/* Every buffer a test allocates, freed at the end of main. LeakSanitizer,
 * as in make check-unit in a --enable-sanitizers build, then sees only what
 * the code under test loses. */
enum { SCRATCH_MAX = 4096 };
static void *scratch[SCRATCH_MAX];
static int nscratch;

static void *scratch_alloc(size_t bytes, bool zero)
{
  void *p = zero ? calloc(1, bytes) : malloc(bytes);
  if (!p || nscratch == SCRATCH_MAX) {
    fprintf(stderr, "test_kernels: out of scratch memory\n");
    exit(99);
  }
  scratch[nscratch++] = p;
  return p;
}

static void scratch_free(void)
{
  while (nscratch > 0)
    free(scratch[--nscratch]);
}

typedef struct {
  uint64_t state;
} rng;

static double uniform(rng *r) /* splitmix64 -> [-1, 1) */
{
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double *randd(rng *r, size_t n, double scale)
{
  double *x = scratch_alloc(n * sizeof(double), false);
  for (size_t i = 0; i < n; i++)
    x[i] = uniform(r) * scale;
  return x;
}

static float *to_f32(const double *x, size_t n)
{
  float *y = scratch_alloc(n * sizeof(float), false);
  for (size_t i = 0; i < n; i++)
    y[i] = (float)x[i];
  return y;
}

static double dot(const double *a, const double *b, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* ||a - ref|| / ||ref|| for a of floats when f32 is set, else of doubles, NaN if any value is not finite */
static double rel_error(const void *a, bool f32, const double *ref, size_t n)
{
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double value = f32 ? ((const float *)a)[i] : ((const double *)a)[i];
    if (!isfinite(value))
      return NAN;
    num += (value - ref[i]) * (value - ref[i]);
    den += ref[i] * ref[i];
  }
  return sqrt(num) / sqrt(den);
}

static double rel_error_f32(const float *a, const double *ref, size_t n)
{
  return rel_error(a, true, ref, n);
}

static double rel_error_f64(const double *a, const double *ref, size_t n)
{
  return rel_error(a, false, ref, n);
}

#define CHECK_REL(what, err, bound)                                                              \
  do {                                                                                           \
    double e_ = (err);                                                                           \
    check_count++;                                                                               \
    if (!(e_ < (bound))) {                                                                       \
      check_failures++;                                                                          \
      fprintf(stderr, "%s:%d: FAILED: %s: relative error %.3g (bound %.0e)\n", __FILE__, __LINE__, \
              what, e_, (double)(bound));                                                        \
    }                                                                                            \
  } while (0)

/* Directional finite difference of L(x) = <f(x), r> along u. */
typedef double (*objective)(const double *x, void *ctx);

static double fd_directional(objective f, double *x, const double *u, size_t n, void *ctx)
{
  const double h = 1e-6;
  double plus, minus;
  for (size_t i = 0; i < n; i++)
    x[i] += h * u[i];
  plus = f(x, ctx);
  for (size_t i = 0; i < n; i++)
    x[i] -= 2 * h * u[i];
  minus = f(x, ctx);
  for (size_t i = 0; i < n; i++)
    x[i] += h * u[i];
  return (plus - minus) / (2 * h);
}

static void check_fd(const char *what, objective f, double *x, const double *grad, size_t n, void *ctx, rng *r)
{
  double *u = randd(r, n, 1.0);
  const double fd = fd_directional(f, x, u, n, ctx), analytic = dot(grad, u, n);
  CHECK_REL(what, fabs(fd - analytic) / fabs(analytic), 1e-6);
}

/* ------------------------------------------------------------ matmul */

typedef struct {
  double *inp, *w, *bias, *r, *out;
  int BT, C, OC;
  int which; /* 0: inp, 1: w, 2: bias */
} matmul_case;

static double matmul_objective(const double *x, void *ctx)
{
  matmul_case *m = ctx;
  const double *inp = m->which == 0 ? x : m->inp, *w = m->which == 1 ? x : m->w, *bias = m->which == 2 ? x : m->bias;
  matmul_fwd_f64(m->out, inp, w, bias, m->BT, m->C, m->OC);
  return dot(m->out, m->r, (size_t)m->BT * m->OC);
}

static void test_matmul(rng *r)
{
  matmul_case m = {.BT = 13, .C = 24, .OC = 17};
  const size_t ni = (size_t)m.BT * m.C, nw = (size_t)m.OC * m.C, no = (size_t)m.BT * m.OC;
  double *dinp = scratch_alloc((size_t)(ni) * (8), true), *dw = scratch_alloc((size_t)(nw) * (8), true), *db = scratch_alloc((size_t)(m.OC) * (8), true);
  float *out32 = scratch_alloc(no * 4, false);
  m.inp = randd(r, ni, 1);
  m.w = randd(r, nw, 0.5);
  m.bias = randd(r, m.OC, 0.5);
  m.r = randd(r, no, 1);
  m.out = scratch_alloc(no * 8, false);
  matmul_bwd_f64(dinp, dw, db, m.r, m.inp, m.w, m.BT, m.C, m.OC);
  m.which = 0, check_fd("matmul dinp", matmul_objective, m.inp, dinp, ni, &m, r);
  m.which = 1, check_fd("matmul dw", matmul_objective, m.w, dw, nw, &m, r);
  m.which = 2, check_fd("matmul dbias", matmul_objective, m.bias, db, m.OC, &m, r);
  matmul_fwd_f64(m.out, m.inp, m.w, m.bias, m.BT, m.C, m.OC);
  matmul_fwd_f32(out32, to_f32(m.inp, ni), to_f32(m.w, nw), to_f32(m.bias, m.OC), m.BT, m.C, m.OC);
  CHECK_REL("matmul f32 vs f64", rel_error_f32(out32, m.out, no), 1e-5);
}

/* ------------------------------------------------------------ layernorm */

typedef struct {
  double *inp, *w, *b, *r, *out, *mean, *rstd;
  int BT, C, which;
} ln_case;

static double ln_objective(const double *x, void *ctx)
{
  ln_case *l = ctx;
  layernorm_fwd_f64(l->out, l->mean, l->rstd, l->which == 0 ? x : l->inp, l->which == 1 ? x : l->w,
                    l->which == 2 ? x : l->b, l->BT, l->C, 1e-6);
  return dot(l->out, l->r, (size_t)l->BT * l->C);
}

static void test_layernorm(rng *r)
{
  ln_case l = {.BT = 9, .C = 32};
  const size_t n = (size_t)l.BT * l.C;
  double *dinp = scratch_alloc((size_t)(n) * (8), true), *dw = scratch_alloc((size_t)(l.C) * (8), true), *db = scratch_alloc((size_t)(l.C) * (8), true);
  float *out32 = scratch_alloc(n * 4, false), mean32[9], rstd32[9];
  l.inp = randd(r, n, 2);
  l.w = randd(r, l.C, 1);
  l.b = randd(r, l.C, 1);
  l.r = randd(r, n, 1);
  l.out = scratch_alloc(n * 8, false);
  l.mean = scratch_alloc(l.BT * 8, false);
  l.rstd = scratch_alloc(l.BT * 8, false);
  ln_objective(l.inp, &l);
  layernorm_bwd_f64(dinp, dw, db, l.r, l.inp, l.w, l.mean, l.rstd, l.BT, l.C);
  l.which = 0, check_fd("layernorm dinp", ln_objective, l.inp, dinp, n, &l, r);
  l.which = 1, check_fd("layernorm dw", ln_objective, l.w, dw, l.C, &l, r);
  l.which = 2, check_fd("layernorm db", ln_objective, l.b, db, l.C, &l, r);
  l.which = 0, ln_objective(l.inp, &l);
  layernorm_fwd_f32(out32, mean32, rstd32, to_f32(l.inp, n), to_f32(l.w, l.C), to_f32(l.b, l.C), l.BT, l.C, 1e-6f);
  CHECK_REL("layernorm f32 vs f64", rel_error_f32(out32, l.out, n), 1e-5);
}

/* ------------------------------------------------------------ gelu, softmax */

typedef struct {
  double *r, *out;
  int rows, cols;
} pointwise_case;

static double gelu_objective(const double *x, void *ctx)
{
  pointwise_case *p = ctx;
  gelu_fwd_f64(p->out, x, (size_t)p->rows * p->cols);
  return dot(p->out, p->r, (size_t)p->rows * p->cols);
}

static double softmax_objective(const double *x, void *ctx)
{
  pointwise_case *p = ctx;
  softmax_fwd_f64(p->out, x, p->rows, p->cols);
  return dot(p->out, p->r, (size_t)p->rows * p->cols);
}

static void test_gelu_softmax(rng *r)
{
  pointwise_case p = {.rows = 7, .cols = 19};
  const size_t n = (size_t)p.rows * p.cols;
  double *x = randd(r, n, 3), *dx = scratch_alloc(n * 8, false);
  float *out32 = scratch_alloc(n * 4, false);
  p.r = randd(r, n, 1);
  p.out = scratch_alloc(n * 8, false);
  gelu_bwd_f64(dx, x, p.r, n);
  check_fd("gelu dinp", gelu_objective, x, dx, n, &p, r);
  gelu_fwd_f64(p.out, x, n);
  gelu_fwd_f32(out32, to_f32(x, n), n);
  CHECK_REL("gelu f32 vs f64", rel_error_f32(out32, p.out, n), 1e-5);
  {
    double *tanh64 = scratch_alloc(n * 8, false); /* cuBLASLt's epilogue's GELU, recomputed in the backward */
    gelu_tanh_fwd_f64(tanh64, x, n);
    gelu_tanh_fwd_f32(out32, to_f32(x, n), n);
    CHECK_REL("gelu tanh f32 vs f64", rel_error_f32(out32, tanh64, n), 1e-5);
    CHECK_REL("gelu tanh approximation vs exact", rel_error_f64(tanh64, p.out, n), 1e-3);
    CHECK(rel_error_f64(tanh64, p.out, n) > 1e-6); /* an approximation, not the exact GELU again */
  }
  softmax_fwd_f64(p.out, x, p.rows, p.cols);
  softmax_bwd_f64(dx, p.out, p.r, p.rows, p.cols);
  check_fd("softmax dinp", softmax_objective, x, dx, n, &p, r);
  softmax_fwd_f64(p.out, x, p.rows, p.cols);
  softmax_fwd_f32(out32, to_f32(x, n), p.rows, p.cols);
  CHECK_REL("softmax f32 vs f64", rel_error_f32(out32, p.out, n), 1e-5);
}

/* ------------------------------------------------------------ attention */

typedef struct {
  double *q, *k, *v, *r, *out, *lse;
  int B, N, NH, HD, which;
  double scale;
} attn_case;

static double attn_objective(const double *x, void *ctx)
{
  attn_case *a = ctx;
  attention_fwd_f64(a->out, a->lse, a->which == 0 ? x : a->q, a->which == 1 ? x : a->k, a->which == 2 ? x : a->v,
                    a->B, a->N, a->NH, a->HD, a->scale);
  return dot(a->out, a->r, (size_t)a->B * a->N * a->NH * a->HD);
}

static void test_attention(rng *r)
{
  /* N = 150: three query blocks and two key blocks, the last ones partial */
  attn_case a = {.B = 2, .N = 150, .NH = 3, .HD = 8};
  const size_t n = (size_t)a.B * a.N * a.NH * a.HD;
  double *naive = scratch_alloc(n * 8, false), *dq = scratch_alloc(n * 8, false), *dk = scratch_alloc(n * 8, false), *dv = scratch_alloc(n * 8, false);
  float *out32 = scratch_alloc(n * 4, false), *lse32 = scratch_alloc((size_t)a.B * a.NH * a.N * 4, false);
  a.scale = 1.0 / sqrt(a.HD);
  a.q = randd(r, n, 1.5);
  a.k = randd(r, n, 1.5);
  a.v = randd(r, n, 1);
  a.r = randd(r, n, 1);
  a.out = scratch_alloc(n * 8, false);
  a.lse = scratch_alloc((size_t)a.B * a.NH * a.N * 8, false);
  attention_naive_fwd_f64(naive, a.q, a.k, a.v, a.B, a.N, a.NH, a.HD, a.scale);
  attn_objective(a.q, &a);
  CHECK_REL("blocked vs naive attention (f64)", rel_error_f64(a.out, naive, n), 1e-12);
  attention_bwd_f64(dq, dk, dv, a.r, a.q, a.k, a.v, a.out, a.lse, a.B, a.N, a.NH, a.HD, a.scale);
  a.which = 0, check_fd("attention dq", attn_objective, a.q, dq, n, &a, r);
  a.which = 1, check_fd("attention dk", attn_objective, a.k, dk, n, &a, r);
  a.which = 2, check_fd("attention dv", attn_objective, a.v, dv, n, &a, r);
  attention_fwd_f32(out32, lse32, to_f32(a.q, n), to_f32(a.k, n), to_f32(a.v, n), a.B, a.N, a.NH, a.HD,
                    (float)a.scale);
  CHECK_REL("attention f32 vs f64", rel_error_f32(out32, naive, n), 1e-5);
}

/* ------------------------------------------------------------ loss */

typedef struct {
  double *target;
  int B;
  size_t n;
} loss_case;

static double loss_objective(const double *x, void *ctx)
{
  loss_case *l = ctx;
  return l2_loss_fwd_f64(NULL, x, l->target, l->B, l->n);
}

static void test_loss(rng *r)
{
  loss_case l = {.B = 3, .n = 50};
  const size_t n = l.B * l.n;
  double *pred = randd(r, n, 1), *dpred = scratch_alloc(n * 8, false), per_sample[3];
  float per32[3];
  l.target = randd(r, n, 1);
  const double loss = l2_loss_fwd_f64(per_sample, pred, l.target, l.B, l.n);
  double by_hand = 0;
  for (int b = 0; b < l.B; b++) {
    double d = 0, t = 0;
    for (size_t i = 0; i < l.n; i++) {
      d += (pred[b * l.n + i] - l.target[b * l.n + i]) * (pred[b * l.n + i] - l.target[b * l.n + i]);
      t += l.target[b * l.n + i] * l.target[b * l.n + i];
    }
    by_hand += sqrt(d) / sqrt(t) / l.B;
  }
  CHECK_REL("l2 loss by hand", fabs(loss - by_hand) / by_hand, 1e-14);
  l2_loss_bwd_f64(dpred, pred, l.target, l.B, l.n, 1.0);
  check_fd("l2 loss dpred", loss_objective, pred, dpred, n, &l, r);
  const float loss32 = l2_loss_fwd_f32(per32, to_f32(pred, n), to_f32(l.target, n), l.B, l.n);
  CHECK_REL("l2 loss f32 vs f64", fabs(loss32 - loss) / loss, 1e-5);
}

/* ------------------------------------------------------------ adam, patches */

static void test_adam(rng *r)
{
  const size_t n = 40;
  double *p = randd(r, n, 1), *m = scratch_alloc((size_t)(n) * (8), true), *v = scratch_alloc((size_t)(n) * (8), true), *p0 = scratch_alloc(n * 8, false), *g1 = randd(r, n, 1),
         *g2 = randd(r, n, 1), want[40];
  const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8;
  memcpy(p0, p, n * 8);
  adam_update_f64(p, m, v, g1, n, lr, b1, b2, eps, 1);
  adam_update_f64(p, m, v, g2, n, lr, b1, b2, eps, 2);
  for (size_t i = 0; i < n; i++) {
    const double m1 = (1 - b1) * g1[i], v1 = (1 - b2) * g1[i] * g1[i];
    const double x1 = p0[i] - lr * (m1 / (1 - b1)) / (sqrt(v1 / (1 - b2)) + eps);
    const double m2 = b1 * m1 + (1 - b1) * g2[i], v2 = b2 * v1 + (1 - b2) * g2[i] * g2[i];
    want[i] = x1 - lr * (m2 / (1 - b1 * b1)) / (sqrt(v2 / (1 - b2 * b2)) + eps);
  }
  CHECK_REL("adam two steps vs closed form", rel_error_f64(p, want, n), 1e-12);
}

static void test_patches(rng *r)
{
  const int B = 2, C = 3, H = 8, W = 12, P = 4;
  const size_t n = (size_t)B * C * H * W;
  double *img = randd(r, n, 1), *tokens = randd(r, n, 1), *patches = scratch_alloc(n * 8, false), *back = scratch_alloc(n * 8, false),
         *dtok = scratch_alloc(n * 8, false);
  patchify_f64(patches, img, B, C, H, W, P);
  /* conv order: patch (b=1, i=1, j=2), entry (c=2, a=3, e=1) = pixel (1, 2, 1*4+3, 2*4+1) */
  CHECK(patches[((size_t)1 * 2 * 3 + 1 * 3 + 2) * (C * P * P) + 2 * P * P + 3 * P + 1] ==
        img[(((size_t)1 * C + 2) * H + 7) * W + 9]);
  unpatchify_f64(back, tokens, B, C, H, W, P);
  /* head order, channel fastest: token (0, 1, 0), entry (a=2, e=3, c=1) = pixel (0, 1, 6, 3) */
  CHECK(back[(((size_t)0 * C + 1) * H + 6) * W + 3] == tokens[((size_t)0 * 6 + 1 * 3 + 0) * (P * P * C) + (2 * P + 3) * C + 1]);
  /* adjoint: <unpatchify(t), y> = <t, unpatchify_bwd(y)> */
  unpatchify_bwd_f64(dtok, img, B, C, H, W, P);
  CHECK_REL("unpatchify adjoint", fabs(dot(back, img, n) - dot(tokens, dtok, n)) / fabs(dot(back, img, n)), 1e-13);
}

int main(void)
{
  rng r = {20261122};
  test_matmul(&r);
  test_layernorm(&r);
  test_gelu_softmax(&r);
  test_attention(&r);
  test_loss(&r);
  test_adam(&r);
  test_patches(&r);
  scratch_free();
  return check_report("test_kernels");
}

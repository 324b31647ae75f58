/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/gemm.cu: GEMMs through cuBLASLt. Row-major tensors are
 * column-major transposes, so (as in llm.c):
 *   forward   out^T[OC,BT] = W^T... : cublasLt(m=OC, n=BT, k=C, A=W (T), B=inp (N)), bias epilogue
 *   dinp      dinp^T[C,BT]        : cublasLt(m=C,  n=BT, k=OC, A=W (N), B=dout (N))
 *   dweight   dW^T[C,OC] += ...   : cublasLt(m=C,  n=OC, k=BT, A=inp (N), B=dout (T)), fp32 output,
 *                                   bias gradient (colsum of dout) in the BGRADB epilogue
 * The bias vector has D's type, as cuBLASLt requires of a 16-bit D (the
 * forward bias is the act copy of the weights; the bias gradient is fp32
 * like dW). Accumulation is always fp32, and TF32 only when allowed. There
 * is one handle and one workspace. Each shape's plan is made on its first
 * call and kept in a hash table, so a call costs a lookup, the pointers'
 * attributes and the GEMM. A plan holds the descriptor, the layouts, and
 * the heuristic's algorithm or the fact that there is none. Operands may
 * sit at any 16-byte offset, because the heuristic is told each pointer's
 * alignment, which is part of the shape's key. Every epilogue has a
 * fallback, a plain GEMM and a kernel, taken where cuBLASLt has no
 * algorithm or refuses its own at run time, and from then on without
 * asking again. The bias falls back to dl_add_bias_planes, the bias
 * gradient to dl_column_sum with its partials in the workspace, and the
 * GELUs to dl_gelu_fwd/bwd. */
#include "config.h"

#include <cublasLt.h>
#include <stdint.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/common.cuh"

/* A cuBLAS status as a dl status, DL_CUBLAS_BASE + status, which
 * dl_status_string names. DL_TRY_CUBLAS returns it on an error, and
 * DL_TRY_CUBLAS_GOTO keeps it in rc and goes to label. */
static int cublas_status(cublasStatus_t st)
{
  return st == CUBLAS_STATUS_SUCCESS ? 0 : DL_CUBLAS_BASE + (int)st;
}
#define DL_TRY_CUBLAS(call) DL_TRY(cublas_status(call))
#define DL_TRY_CUBLAS_GOTO(call, rc, label) DL_TRY_GOTO(cublas_status(call), rc, label)

/* What fixes a GEMM's descriptor, layouts and algorithm, while the pointers
 * are set per call. gemm_key_of builds it and zeroes the padding, because
 * keys are hashed and compared as bytes. */
typedef struct {
  int64_t stride_a, stride_b, stride_d, stride_bias; /* a batch's planes, elements apart, or 0 when shared */
  int m, n, k, transa, transb, ab_type, d_type, epilogue, accumulate, planes;
  int align_a, align_b, align_d, align_bias, align_aux; /* bytes, up to 256, of each plane */
} gemm_key;

/* One shape's cuBLASLt objects, made on its first call and kept. */
typedef struct {
  gemm_key key;
  bool used;    /* the slot holds a plan */
  bool usable;  /* false: cuBLASLt has no algorithm for it, or refused the one it gave at run time */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
} gemm_plan;

struct dl_blas {
  cublasLtHandle_t lt;
  void *workspace;
  size_t workspace_bytes;
  int allow_tf32;
  bool epilogues_refused; /* dl_blas_refuse_epilogues: only plain GEMMs */
  gemm_plan *plans;       /* open addressing: capacity a power of two, at most half full */
  size_t nplans, capacity;
};

typedef struct {
  void *d;
  const void *a, *b;
  void *bias; /* the bias for BIAS or its gradient for BGRADB, in D's type, or NULL for none */
  int m, n, k, transa, transb, accumulate;
  dl_dtype ab_type, d_type;
  cublasLtEpilogue_t epilogue;
  /* A strided batch of `planes` GEMMs, where 0 or 1 means one. Each
   * operand's planes are `stride_*` elements apart, or 0 when all share one. */
  int planes;
  int64_t stride_a, stride_b, stride_d, stride_bias;
  /* The GELU epilogues' pre-activation, written by GELU_AUX_BIAS and read by
   * DGELU, in D's type and shape with leading dimension m, or NULL for none. */
  void *aux;
} gemm_call;

static const int NO_ALGO = DL_CUBLAS_BASE + (int)CUBLAS_STATUS_NOT_SUPPORTED;
enum { FIRST_CAPACITY = 64 };

extern "C" size_t dl_dtype_bytes(dl_dtype t)
{
  return t == DL_F32 ? 4 : 2;
}

extern "C" const char *dl_status_string(int status)
{
#ifdef HAVE_CUDNN
  if (status >= DL_CUDNN_BASE)
    return cudnnGetErrorString((cudnnStatus_t)(status - DL_CUDNN_BASE));
#endif
  if (status >= DL_CUBLAS_BASE)
    return cublasLtGetStatusString((cublasStatus_t)(status - DL_CUBLAS_BASE));
  return cudaGetErrorString((cudaError_t)status);
}

static cudaDataType cuda_type(dl_dtype t)
{
  return t == DL_BF16 ? CUDA_R_16BF : t == DL_F16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int dl_blas_create(dl_blas **out, size_t workspace_bytes, int allow_tf32)
{
  dl_blas *b = (dl_blas *)calloc(1, sizeof(dl_blas));
  *out = b;
  if (!b || !(b->plans = (gemm_plan *)calloc(FIRST_CAPACITY, sizeof(gemm_plan))))
    return (int)cudaErrorMemoryAllocation;
  b->capacity = FIRST_CAPACITY;
  b->workspace_bytes = workspace_bytes;
  b->allow_tf32 = allow_tf32;
  DL_TRY_CUBLAS(cublasLtCreate(&b->lt));
  DL_TRY_CUDA(cudaMalloc(&b->workspace, workspace_bytes));
  return 0;
}

extern "C" void dl_blas_refuse_epilogues(dl_blas *b)
{
  b->epilogues_refused = true;
}

/* Whatever of the plan was made. A failed plan's handles may be NULL. */
static void plan_destroy(gemm_plan *plan)
{
  if (plan->la)
    cublasLtMatrixLayoutDestroy(plan->la);
  if (plan->lb)
    cublasLtMatrixLayoutDestroy(plan->lb);
  if (plan->lc)
    cublasLtMatrixLayoutDestroy(plan->lc);
  if (plan->op)
    cublasLtMatmulDescDestroy(plan->op);
}

extern "C" void dl_blas_destroy(dl_blas *b)
{
  if (!b)
    return;
  for (size_t i = 0; b->plans && i < b->capacity; i++)
    if (b->plans[i].used)
      plan_destroy(&b->plans[i]);
  free(b->plans);
  cudaFree(b->workspace);
  cublasLtDestroy(b->lt);
  free(b);
}

/* The largest power of two, up to 256, that divides the address of every
 * plane, that is the first's and the distance between them. */
static int alignment_of(const void *ptr, int64_t stride, dl_dtype type)
{
  const uintptr_t bits = (uintptr_t)ptr | (uintptr_t)(stride * (int64_t)dl_dtype_bytes(type));
  int align = 1;
  while (align < 256 && bits % (uintptr_t)(2 * align) == 0)
    align *= 2;
  return ptr ? align : 256;
}

/* The epilogue a call runs: its own where it has a bias or an aux matrix. */
static cublasLtEpilogue_t epilogue_of(const gemm_call *g)
{
  return g->bias || g->aux ? g->epilogue : CUBLASLT_EPILOGUE_DEFAULT;
}

static gemm_key gemm_key_of(const gemm_call *g)
{
  const int planes = g->planes > 1 ? g->planes : 1;
  gemm_key key;
  memset(&key, 0, sizeof(key));
  if (planes > 1) {
    key.stride_a = g->stride_a;
    key.stride_b = g->stride_b;
    key.stride_d = g->stride_d;
    key.stride_bias = g->stride_bias;
  }
  key.m = g->m;
  key.n = g->n;
  key.k = g->k;
  key.transa = g->transa;
  key.transb = g->transb;
  key.ab_type = (int)g->ab_type;
  key.d_type = (int)g->d_type;
  key.epilogue = (int)epilogue_of(g);
  key.accumulate = g->accumulate;
  key.planes = planes;
  key.align_a = alignment_of(g->a, key.stride_a, g->ab_type);
  key.align_b = alignment_of(g->b, key.stride_b, g->ab_type);
  key.align_d = alignment_of(g->d, key.stride_d, g->d_type);
  key.align_bias = alignment_of(g->bias, key.stride_bias, g->d_type);
  key.align_aux = alignment_of(g->aux, key.stride_d, g->d_type);
  return key;
}

/* FNV-1a over the key's bytes. */
static size_t key_hash(const gemm_key *key)
{
  const unsigned char *byte = (const unsigned char *)key;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof(*key); i++)
    h = (h ^ byte[i]) * 1099511628211ull;
  return (size_t)h;
}

/* The key's slot: its plan, or the empty slot where it belongs. */
static gemm_plan *find_slot(gemm_plan *plans, size_t capacity, const gemm_key *key)
{
  size_t i = key_hash(key) & (capacity - 1);
  while (plans[i].used && memcmp(&plans[i].key, key, sizeof(*key)) != 0)
    i = (i + 1) & (capacity - 1);
  return &plans[i];
}

/* Doubles the table. A plan is a few handles, so it is moved, not rebuilt. */
static int grow_plans(dl_blas *blas)
{
  const size_t capacity = 2 * blas->capacity;
  gemm_plan *plans = (gemm_plan *)calloc(capacity, sizeof(gemm_plan));
  if (!plans)
    return (int)cudaErrorMemoryAllocation;
  for (size_t i = 0; i < blas->capacity; i++)
    if (blas->plans[i].used)
      *find_slot(plans, capacity, &blas->plans[i].key) = blas->plans[i];
  free(blas->plans);
  blas->plans = plans;
  blas->capacity = capacity;
  return 0;
}

/* The layout's planes, a batch of `planes` matrices `stride` elements apart. */
static int set_planes(cublasLtMatrixLayout_t layout, int planes, int64_t stride)
{
  const int32_t count = planes;
  if (planes == 1)
    return 0;
  DL_TRY_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                          sizeof(count)));
  DL_TRY_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                          sizeof(stride)));
  return 0;
}

static int set_alignment(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, int align)
{
  const uint32_t bytes = (uint32_t)align;
  DL_TRY_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof(bytes)));
  return 0;
}

/* The epilogue's pointers, the per-call part of a plan's descriptor. */
static int set_pointers(cublasLtMatmulDesc_t op, const gemm_call *g)
{
  if (g->bias)
    DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                                          sizeof(g->bias)));
  if (g->aux)
    DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux,
                                                          sizeof(g->aux)));
  return 0;
}

/* The epilogue's fixed attributes: the bias's type and batch stride, the
 * GELU pre-activation's leading dimension. */
static int set_epilogue(cublasLtMatmulDesc_t op, const gemm_call *g, const gemm_key *key)
{
  const cublasLtEpilogue_t epilogue = (cublasLtEpilogue_t)key->epilogue;
  const cudaDataType bias_type = cuda_type(g->d_type);
  const int64_t aux_ld = g->m;
  DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                        sizeof(epilogue)));
  if (g->bias) {
    DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                          sizeof(bias_type)));
    if (key->planes > 1)
      DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                            &key->stride_bias, sizeof(key->stride_bias)));
  }
  if (g->aux)
    DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                                          sizeof(aux_ld)));
  return set_pointers(op, g);
}

/* The plan's descriptor and its three layouts, for A, B, and C = D. */
static int describe(dl_blas *blas, const gemm_call *g, gemm_plan *plan)
{
  const gemm_key *key = &plan->key;
  const cublasComputeType_t compute =
      g->ab_type == DL_F32 && blas->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasOperation_t ta = g->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  DL_TRY_CUBLAS(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
  DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  DL_TRY_CUBLAS(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  DL_TRY_CUBLAS(cublasLtMatrixLayoutCreate(&plan->la, cuda_type(g->ab_type), g->transa ? g->k : g->m,
                                                    g->transa ? g->m : g->k, g->transa ? g->k : g->m));
  DL_TRY_CUBLAS(cublasLtMatrixLayoutCreate(&plan->lb, cuda_type(g->ab_type), g->transb ? g->n : g->k,
                                                    g->transb ? g->k : g->n, g->transb ? g->n : g->k));
  DL_TRY_CUBLAS(cublasLtMatrixLayoutCreate(&plan->lc, cuda_type(g->d_type), g->m, g->n, g->m));
  DL_TRY(set_epilogue(plan->op, g, key));
  DL_TRY(set_planes(plan->la, key->planes, key->stride_a));
  DL_TRY(set_planes(plan->lb, key->planes, key->stride_b));
  return set_planes(plan->lc, key->planes, key->stride_d);
}

/* The heuristic's first algorithm for the plan. plan->usable says there is one. */
static int ask_heuristic(dl_blas *blas, gemm_plan *plan)
{
  const gemm_key *key = &plan->key;
  cublasLtMatmulHeuristicResult_t heuristic;
  cublasLtMatmulPreference_t pref;
  cublasStatus_t st;
  int found = 0, rc;
  DL_TRY_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  DL_TRY_CUBLAS_GOTO(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &blas->workspace_bytes, sizeof(blas->workspace_bytes)),
                     rc, done);
  DL_TRY_GOTO(set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key->align_a), rc, done);
  DL_TRY_GOTO(set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key->align_b), rc, done);
  DL_TRY_GOTO(set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key->align_d), rc, done);
  DL_TRY_GOTO(set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key->align_d), rc, done);
  st = cublasLtMatmulAlgoGetHeuristic(blas->lt, plan->op, plan->la, plan->lb, plan->lc, plan->lc, pref, 1,
                                      &heuristic, &found);
  /* NOT_SUPPORTED: no algorithm for this combination, as found == 0 */
  rc = st == CUBLAS_STATUS_NOT_SUPPORTED ? 0 : cublas_status(st);
  plan->usable = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan->usable)
    plan->algo = heuristic.algo;
done:
  cublasLtMatmulPreferenceDestroy(pref);
  return rc;
}

/* A new plan in its slot, described, with its algorithm asked for unless the
 * epilogues are refused. Nothing is kept on a failure. */
static int make_plan(dl_blas *blas, const gemm_call *g, const gemm_key *key, gemm_plan **out)
{
  gemm_plan plan, *slot;
  int rc;
  memset(&plan, 0, sizeof(plan));
  plan.key = *key;
  if (2 * (blas->nplans + 1) > blas->capacity)
    DL_TRY(grow_plans(blas));
  rc = describe(blas, g, &plan);
  if (rc == 0 && !(blas->epilogues_refused && key->epilogue != (int)CUBLASLT_EPILOGUE_DEFAULT))
    rc = ask_heuristic(blas, &plan);
  if (rc != 0) {
    plan_destroy(&plan);
    return rc;
  }
  slot = find_slot(blas->plans, blas->capacity, key);
  *slot = plan;
  slot->used = true;
  blas->nplans++;
  *out = slot;
  return 0;
}

/* The call's plan, made on its shape's first call, with its pointers set. */
static int plan_for(dl_blas *blas, const gemm_call *g, gemm_plan **out)
{
  const gemm_key key = gemm_key_of(g);
  gemm_plan *plan = find_slot(blas->plans, blas->capacity, &key);
  if (!plan->used)
    DL_TRY(make_plan(blas, g, &key, &plan));
  *out = plan;
  return plan->usable ? set_pointers(plan->op, g) : NO_ALGO;
}

/* Runs the GEMM. With run 0 it only plans it, and the pointers may then be
 * stand-ins of the alignment to plan for. It returns NO_ALGO, from then on
 * for this shape, where cuBLASLt has no algorithm or refuses the one it gave. */
static int lt_matmul_run(dl_blas *blas, const gemm_call *g, int run, cudaStream_t s)
{
  const float alpha = 1.0f, beta = g->accumulate ? 1.0f : 0.0f;
  gemm_plan *plan;
  cublasStatus_t st;
  int rc;
  if ((rc = plan_for(blas, g, &plan)) != 0 || !run)
    return rc;
  st = cublasLtMatmul(blas->lt, plan->op, &alpha, g->a, plan->la, g->b, plan->lb, &beta, g->d, plan->lc, g->d,
                      plan->lc, &plan->algo, blas->workspace, blas->workspace_bytes, s);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    plan->usable = false;
  return cublas_status(st);
}

static int lt_matmul(dl_blas *blas, const gemm_call *g, cudaStream_t s)
{
  return lt_matmul_run(blas, g, 1, s);
}

/* out_p[BT,OC] = inp w_p^T + bias_p, then the epilogue, aux being GELU's pre-activation */
static gemm_call forward_call(void *out, const void *inp, const void *w, const void *bias, int planes, int BT, int C,
                              int OC, dl_dtype act, cublasLtEpilogue_t epilogue, void *aux)
{
  const gemm_call g = {out, w, inp, (void *)bias, OC, BT, C, 1, 0, 0, act, act, epilogue, planes,
                       (int64_t)OC * C, 0, (int64_t)BT * OC, OC, aux};
  return g;
}

/* dinp[BT,C] = dout[BT,OC] w[OC,C], or += with accumulate, then the epilogue, aux being GELU's pre-activation */
static gemm_call input_grad_call(void *dinp, int accumulate, const void *dout, const void *w, int BT, int C, int OC,
                                 dl_dtype act, cublasLtEpilogue_t epilogue, void *aux)
{
  const gemm_call g = {dinp, w, dout, NULL, C, BT, OC, 0, 0, accumulate, act, act, epilogue, 1, 0, 0, 0, 0, aux};
  return g;
}

/* The bias in the epilogue; where cuBLASLt has no algorithm for that, the
 * plain GEMM then dl_add_bias_planes. */
extern "C" int dl_matmul_fwd_planes(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias,
                                    int planes, int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  const gemm_call fused = forward_call(out, inp, w, bias, planes, BT, C, OC, act, CUBLASLT_EPILOGUE_BIAS, NULL);
  const gemm_call plain = forward_call(out, inp, w, NULL, planes, BT, C, OC, act, CUBLASLT_EPILOGUE_DEFAULT, NULL);
  int rc = lt_matmul(blas, &fused, s);
  if (rc != NO_ALGO || !bias)
    return rc;
  DL_TRY(lt_matmul(blas, &plain, s));
  return dl_add_bias_planes(out, bias, planes > 1 ? planes : 1, BT, OC, act, s);
}

extern "C" int dl_matmul_fwd(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int BT, int C,
                             int OC, dl_dtype act, cudaStream_t s)
{
  return dl_matmul_fwd_planes(blas, out, inp, w, bias, 1, BT, C, OC, act, s);
}

/* The plane p of a tensor of planes of `plane` elements. */
static const void *plane_at(const void *x, int p, size_t plane, dl_dtype type)
{
  return (const char *)x + (size_t)p * plane * dl_dtype_bytes(type);
}

/* dbias_p = colsum(dout_p) by the two-stage reduction, its partials in the
 * GEMMs' workspace. The workspace is free once the GEMMs enqueued before on
 * s are done, and the next GEMM on s waits for the reduction, since there
 * is one stream per dl_blas. */
static int bias_grad(dl_blas *blas, float *dbias, const void *dout, int planes, int BT, int OC, dl_dtype act,
                     cudaStream_t s)
{
  int rc = 0;
  if (dl_column_partials_bytes(BT, OC) > blas->workspace_bytes)
    return (int)cudaErrorInvalidValue;
  for (int p = 0; p < planes && rc == 0; p++)
    rc = dl_column_sum(dbias + (size_t)p * OC, 0, plane_at(dout, p, (size_t)BT * OC, act), BT, OC,
                       (float *)blas->workspace, act, s);
  return rc;
}

/* dW_p += inp^T dout_p, all planes in one GEMM, and dbias_p = colsum(dout_p)
 * in its epilogue where cuBLASLt has an algorithm for that, else by the
 * two-stage column sums. */
static int weight_and_bias_grad(dl_blas *blas, float *dw, float *dbias, const void *dout, const void *inp, int planes,
                                int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  const int64_t dout_plane = (int64_t)BT * OC, dw_plane = (int64_t)OC * C;
  const gemm_call fused = {dw, inp, dout, dbias, C, OC, BT, 0, 1, 1, act, DL_F32, CUBLASLT_EPILOGUE_BGRADB,
                           planes, 0, dout_plane, dw_plane, OC, NULL};
  const gemm_call plain = {dw, inp, dout, NULL, C, OC, BT, 0, 1, 1, act, DL_F32, CUBLASLT_EPILOGUE_DEFAULT,
                           planes, 0, dout_plane, dw_plane, 0, NULL};
  int rc = dbias ? lt_matmul(blas, &fused, s) : lt_matmul(blas, &plain, s);
  if (rc != NO_ALGO || !dbias)
    return rc;
  DL_TRY(lt_matmul(blas, &plain, s));
  return bias_grad(blas, dbias, dout, planes, BT, OC, act, s);
}

/* dinp = sum_p dout_p w_p, or += with accumulate. It takes a GEMM a plane,
 * the later ones adding to the first, because the planes of dout are not
 * one matrix. Several planes in 16 bits sum in fp32 in `sum`, BT x C
 * floats, rounded once into dinp, as one GEMM over all planes would. */
static int input_grad(dl_blas *blas, void *dinp, float *sum, int accumulate, const void *dout, const void *w, int planes,
                      int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  const bool in_fp32 = planes > 1 && act != DL_F32;
  const size_t n = (size_t)BT * C;
  int rc = 0;
  if (in_fp32 && !sum)
    return (int)cudaErrorInvalidValue;
  if (in_fp32 && accumulate)
    DL_TRY(dl_cast(sum, DL_F32, dinp, act, n, s));
  for (int p = 0; p < planes && rc == 0; p++) {
    gemm_call g = input_grad_call(in_fp32 ? sum : dinp, p > 0 || accumulate, plane_at(dout, p, (size_t)BT * OC, act),
                                  plane_at(w, p, (size_t)OC * C, act), BT, C, OC, act, CUBLASLT_EPILOGUE_DEFAULT, NULL);
    g.d_type = in_fp32 ? DL_F32 : act;
    rc = lt_matmul(blas, &g, s);
  }
  if (rc == 0 && in_fp32)
    rc = dl_cast(dinp, act, sum, DL_F32, n, s);
  return rc;
}

extern "C" int dl_matmul_bwd_planes(dl_blas *blas, void *dinp, float *dinp_sum, int accumulate, float *dw,
                                    float *dbias, const void *dout, const void *inp, const void *w, int planes,
                                    int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  if (dinp)
    DL_TRY(input_grad(blas, dinp, dinp_sum, accumulate, dout, w, planes, BT, C, OC, act, s));
  if (dw)
    return weight_and_bias_grad(blas, dw, dbias, dout, inp, planes, BT, C, OC, act, s);
  return dbias ? bias_grad(blas, dbias, dout, planes, BT, OC, act, s) : 0;
}

extern "C" int dl_matmul_bwd(dl_blas *blas, void *dinp, int accumulate, float *dw, float *dbias, const void *dout,
                             const void *inp, const void *w, int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  return dl_matmul_bwd_planes(blas, dinp, NULL, accumulate, dw, dbias, dout, inp, w, 1, BT, C, OC, act, s);
}

/* ---- GELU in the epilogues, for 16-bit activations only. cuBLASLt's GELU
 * is the tanh approximation, within 5e-4 of the exact one, so fp32 keeps
 * the exact kernels. The pre-activation is the aux matrix, in D's type and
 * shape. Its leading dimension m is the layer's width, which cuBLASLt wants
 * a multiple of 8. Every epilogue has its fallback, chosen once per shape:
 * a plain GEMM and a kernel. */

extern "C" int dl_gelu_epilogue(dl_blas *blas, int BT, int C, int OC, int C2, dl_dtype act, int *fused)
{
  void *const aligned = (void *)(uintptr_t)256; /* stand-in operands: the arena's 256-byte alignment */
  const gemm_call forward = forward_call(aligned, aligned, aligned, aligned, 1, BT, C, OC, act,
                                         CUBLASLT_EPILOGUE_GELU_AUX_BIAS, aligned);
  const gemm_call backward = input_grad_call(aligned, 0, aligned, aligned, BT, OC, C2, act, CUBLASLT_EPILOGUE_DGELU,
                                             aligned);
  int rc;
  *fused = 0;
  if (act == DL_F32 || OC % 8 != 0)
    return 0;
  /* Any refusal, for want of an algorithm or of an attribute this cuBLASLt accepts, leaves the separate kernels. */
  if ((rc = lt_matmul_run(blas, &forward, 0, 0)) == 0)
    rc = lt_matmul_run(blas, &backward, 0, 0);
  *fused = rc == 0;
  return 0;
}

extern "C" int dl_matmul_gelu_fwd(dl_blas *blas, int fused, void *out, void *pre, const void *inp, const void *w,
                                  const void *bias, int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  const gemm_call g = forward_call(out, inp, w, bias, 1, BT, C, OC, act, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, pre);
  int rc = fused ? lt_matmul(blas, &g, s) : NO_ALGO;
  if (rc != NO_ALGO)
    return rc;
  DL_TRY(dl_matmul_fwd(blas, pre, inp, w, bias, BT, C, OC, act, s));
  return dl_gelu_fwd(out, pre, (size_t)BT * OC, act, s);
}

/* The weight's gradient comes first, because it reads inp and dpre may be
 * inp. Then comes the input's. Unfused, or where cuBLASLt has no DGELU
 * algorithm, the GEMM writes dpre, and then GELU's derivative works in
 * place, since the kernel reads and writes one element per thread. */
extern "C" int dl_matmul_bwd_gelu(dl_blas *blas, int fused, void *dpre, const void *pre, float *dw, float *dbias,
                                  const void *dout, const void *inp, const void *w, int BT, int C, int OC,
                                  dl_dtype act, cudaStream_t s)
{
  const gemm_call g = input_grad_call(dpre, 0, dout, w, BT, C, OC, act, CUBLASLT_EPILOGUE_DGELU, (void *)pre);
  int rc;
  DL_TRY(weight_and_bias_grad(blas, dw, dbias, dout, inp, 1, BT, C, OC, act, s));
  rc = fused ? lt_matmul(blas, &g, s) : NO_ALGO;
  if (rc != NO_ALGO)
    return rc;
  DL_TRY(input_grad(blas, dpre, NULL, 0, dout, w, 1, BT, C, OC, act, s));
  return dl_gelu_bwd(dpre, pre, dpre, (size_t)BT * C, act, s);
}

extern "C" int dl_gelu_recompute(int fused, void *out, const void *pre, size_t n, dl_dtype act, cudaStream_t s)
{
  return fused ? dl_gelu_tanh_fwd(out, pre, n, act, s) : dl_gelu_fwd(out, pre, n, act, s);
}

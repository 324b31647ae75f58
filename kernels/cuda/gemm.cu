/* kernels/cuda/gemm.cu: GEMMs through cuBLASLt. Row-major tensors are
 * column-major transposes, so (as in llm.c):
 *   forward   out^T[OC,BT] = W^T... : cublasLt(m=OC, n=BT, k=C, A=W (T), B=inp (N)), bias epilogue
 *   dinp      dinp^T[C,BT]        : cublasLt(m=C,  n=BT, k=OC, A=W (N), B=dout (N))
 *   dweight   dW^T[C,OC] += ...   : cublasLt(m=C,  n=OC, k=BT, A=inp (N), B=dout (T)), fp32 output,
 *                                   bias gradient (colsum of dout) in the BGRADB epilogue
 * The bias vector has D's type, as cuBLASLt requires of a 16-bit D (the
 * forward bias is the act copy of the weights; the bias gradient is fp32
 * like dW). fp32 accumulation always (TF32 only when allowed). One handle,
 * one workspace; each shape's algorithm (or that there is none, so the bias
 * gradient falls back to dl_column_sum, its partials in that workspace) is
 * asked of the heuristic once and kept. Operands may sit at any 16-byte
 * offset: the heuristic is told each pointer's alignment, which is part of
 * the shape's key. */
#include "config.h"

#include <cublasLt.h>
#include <stdint.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/common.cuh"

#define CHECK_CUBLAS(call)                                                                    \
  do {                                                                                        \
    cublasStatus_t st_ = (call);                                                              \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                         \
      return DL_CUBLAS_BASE + (int)st_;                                                       \
  } while (0)

enum { ALGO_CACHE = 128 };

typedef struct {
  int m, n, k, transa, transb, ab_type, d_type, epilogue, accumulate;
  int align_a, align_b, align_d, align_bias; /* bytes, up to 256 */
} gemm_key;

typedef struct {
  gemm_key key;
  cublasLtMatmulAlgo_t algo;
  bool found; /* false: cuBLASLt has none for this key */
} cached_algo;

struct dl_blas {
  cublasLtHandle_t lt;
  void *workspace;
  size_t workspace_bytes;
  int allow_tf32;
  cached_algo cache[ALGO_CACHE];
  int ncache;
};

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
  if (!b)
    return (int)cudaErrorMemoryAllocation;
  b->workspace_bytes = workspace_bytes;
  b->allow_tf32 = allow_tf32;
  CHECK_CUBLAS(cublasLtCreate(&b->lt));
  CHECK_CUDA(cudaMalloc(&b->workspace, workspace_bytes));
  return 0;
}

extern "C" void dl_blas_destroy(dl_blas *b)
{
  if (!b)
    return;
  cudaFree(b->workspace);
  cublasLtDestroy(b->lt);
  free(b);
}

typedef struct {
  void *d;
  const void *a, *b;
  void *bias; /* the bias (BIAS) or its gradient (BGRADB), D's type; NULL: none */
  int m, n, k, transa, transb, accumulate;
  dl_dtype ab_type, d_type;
  cublasLtEpilogue_t epilogue;
} gemm_call;

static const int NO_ALGO = DL_CUBLAS_BASE + (int)CUBLAS_STATUS_NOT_SUPPORTED;

/* The largest power of two (up to 256) that divides the address. */
static int alignment_of(const void *ptr)
{
  const uintptr_t address = (uintptr_t)ptr;
  int align = 1;
  while (align < 256 && address % (uintptr_t)(2 * align) == 0)
    align *= 2;
  return ptr ? align : 256;
}

static int set_alignment(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, int align)
{
  const uint32_t bytes = (uint32_t)align;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof(bytes)));
  return 0;
}

static int ask_heuristic(dl_blas *blas, const gemm_key *key, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                         cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, cublasLtMatmulHeuristicResult_t *heuristic,
                         int *found)
{
  cublasLtMatmulPreference_t pref;
  cublasStatus_t st;
  int rc;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &blas->workspace_bytes,
                                            sizeof(blas->workspace_bytes));
  rc = st == CUBLAS_STATUS_SUCCESS ? 0 : DL_CUBLAS_BASE + (int)st;
  if (rc == 0 && (rc = set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key->align_a)) == 0 &&
      (rc = set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key->align_b)) == 0 &&
      (rc = set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key->align_d)) == 0 &&
      (rc = set_alignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key->align_d)) == 0) {
    st = cublasLtMatmulAlgoGetHeuristic(blas->lt, op, la, lb, lc, lc, pref, 1, heuristic, found);
    /* NOT_SUPPORTED: no algorithm for this combination, as found == 0 */
    rc = st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_SUPPORTED ? 0 : DL_CUBLAS_BASE + (int)st;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED)
      *found = 0;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return rc;
}

/* The key's algorithm from the cache or the heuristic (then cached);
 * NO_ALGO when cuBLASLt has none for it (cached too). */
static int choose_algo(dl_blas *blas, const gemm_key *key, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, cublasLtMatmulAlgo_t *algo)
{
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0, rc;
  for (int i = 0; i < blas->ncache; i++) {
    if (memcmp(&blas->cache[i].key, key, sizeof(*key)) == 0) {
      *algo = blas->cache[i].algo;
      return blas->cache[i].found ? 0 : NO_ALGO;
    }
  }
  if ((rc = ask_heuristic(blas, key, op, la, lb, lc, &heuristic, &found)) != 0)
    return rc;
  if (found)
    *algo = heuristic.algo;
  if (blas->ncache < ALGO_CACHE) {
    blas->cache[blas->ncache].key = *key;
    blas->cache[blas->ncache].algo = heuristic.algo;
    blas->cache[blas->ncache++].found = found != 0;
  }
  return found ? 0 : NO_ALGO;
}

static int lt_matmul(dl_blas *blas, const gemm_call *g, cudaStream_t s)
{
  const cublasComputeType_t compute =
      g->ab_type == DL_F32 && blas->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasOperation_t ta = g->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = g->bias ? g->epilogue : CUBLASLT_EPILOGUE_DEFAULT;
  const cudaDataType bias_type = cuda_type(g->d_type);
  const float alpha = 1.0f, beta = g->accumulate ? 1.0f : 0.0f;
  const gemm_key key = {g->m, g->n, g->k, g->transa, g->transb, (int)g->ab_type, (int)g->d_type, (int)epilogue,
                        g->accumulate, alignment_of(g->a), alignment_of(g->b), alignment_of(g->d),
                        alignment_of(g->bias)};
  cublasLtMatmulDesc_t op = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasLtMatmulAlgo_t algo;
  int rc;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (g->bias) {
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof(g->bias)));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la, cuda_type(g->ab_type), g->transa ? g->k : g->m,
                                          g->transa ? g->m : g->k, g->transa ? g->k : g->m));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb, cuda_type(g->ab_type), g->transb ? g->n : g->k,
                                          g->transb ? g->k : g->n, g->transb ? g->n : g->k));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lc, cuda_type(g->d_type), g->m, g->n, g->m));
  rc = choose_algo(blas, &key, op, la, lb, lc, &algo);
  if (rc == 0) {
    cublasStatus_t st = cublasLtMatmul(blas->lt, op, &alpha, g->a, la, g->b, lb, &beta, g->d, lc, g->d, lc, &algo,
                                       blas->workspace, blas->workspace_bytes, s);
    rc = st == CUBLAS_STATUS_SUCCESS ? 0 : DL_CUBLAS_BASE + (int)st;
  }
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return rc;
}

extern "C" int dl_matmul_fwd(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int BT, int C,
                             int OC, dl_dtype act, cudaStream_t s)
{
  const gemm_call g = {out, w, inp, (void *)bias, OC, BT, C, 1, 0, 0, act, act, CUBLASLT_EPILOGUE_BIAS};
  return lt_matmul(blas, &g, s);
}

/* dbias = colsum(dout) by the two-stage reduction, its partials in the
 * GEMMs' workspace: free once the GEMMs enqueued before on s are done, as
 * the next GEMM on s waits for the reduction (one stream per dl_blas). */
static int bias_grad(dl_blas *blas, float *dbias, const void *dout, int BT, int OC, dl_dtype act, cudaStream_t s)
{
  if (dl_column_partials_bytes(BT, OC) > blas->workspace_bytes)
    return (int)cudaErrorInvalidValue;
  return dl_column_sum(dbias, 0, dout, BT, OC, (float *)blas->workspace, act, s);
}

/* dW += inp^T dout, and dbias = colsum(dout) in its epilogue where cuBLASLt
 * has an algorithm for that (else the two-stage column sum). */
static int weight_and_bias_grad(dl_blas *blas, float *dw, float *dbias, const void *dout, const void *inp, int BT,
                                int C, int OC, dl_dtype act, cudaStream_t s)
{
  const gemm_call fused = {dw, inp, dout, dbias, C, OC, BT, 0, 1, 1, act, DL_F32, CUBLASLT_EPILOGUE_BGRADB};
  const gemm_call plain = {dw, inp, dout, NULL, C, OC, BT, 0, 1, 1, act, DL_F32, CUBLASLT_EPILOGUE_DEFAULT};
  int rc = dbias ? lt_matmul(blas, &fused, s) : lt_matmul(blas, &plain, s);
  if (rc != NO_ALGO || !dbias)
    return rc;
  if ((rc = lt_matmul(blas, &plain, s)) != 0)
    return rc;
  return bias_grad(blas, dbias, dout, BT, OC, act, s);
}

extern "C" int dl_matmul_bwd(dl_blas *blas, void *dinp, int accumulate, float *dw, float *dbias, const void *dout,
                             const void *inp, const void *w, int BT, int C, int OC, dl_dtype act, cudaStream_t s)
{
  int rc;
  if (dinp) {
    const gemm_call g = {dinp, w, dout, NULL, C, BT, OC, 0, 0, accumulate, act, act, CUBLASLT_EPILOGUE_DEFAULT};
    if ((rc = lt_matmul(blas, &g, s)) != 0)
      return rc;
  }
  if (dw)
    return weight_and_bias_grad(blas, dw, dbias, dout, inp, BT, C, OC, act, s);
  return dbias ? bias_grad(blas, dbias, dout, BT, OC, act, s) : 0;
}

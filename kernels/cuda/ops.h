/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/ops.h: the CUDA twins of kernels/cpu/ops.h, callable from C.
 * Same math, same layouts (kernels/README.md), same argument order; each
 * takes the stream it runs on and enqueues (no host synchronisation).
 * Activations may be fp32, bf16 or fp16 (`act`); parameters, gradients,
 * Adam state and reductions are fp32. Every function returns 0 on
 * success, a cudaError_t, DL_CUBLAS_BASE + a cublasStatus_t or
 * DL_CUDNN_BASE + a cudnnStatus_t;
 * dl_status_string() names it. These codes are the kernels' own layer,
 * below dlpar_status: the model's MODEL_TRY turns a non-zero one into
 * DLPAR_ERR_CUDA with dl_status_string's words (common/status.h). */
#ifndef DLPAR_KERNELS_CUDA_OPS_H
#define DLPAR_KERNELS_CUDA_OPS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DL_F32 = 0, DL_BF16 = 1, DL_F16 = 2 } dl_dtype;

#define DL_CUBLAS_BASE 10000
size_t dl_dtype_bytes(dl_dtype t);
const char *dl_status_string(int status);

/* ---- GEMMs through cuBLASLt: one handle, one workspace, each shape
 * planned once (descriptor, layouts, algorithm) and kept. Where cuBLASLt has
 * no algorithm for an epilogue (or refuses its own at run time) the GEMM
 * runs plain and a kernel does the epilogue's work, chosen once per shape. */
typedef struct dl_blas dl_blas;
int dl_blas_create(dl_blas **blas, size_t workspace_bytes, int allow_tf32);
void dl_blas_destroy(dl_blas *blas);
/* From now on every epilogue is answered as cuBLASLt's "no algorithm": the
 * fallbacks run (their test; a way to rule the epilogues out). */
void dl_blas_refuse_epilogues(dl_blas *blas);

/* out[BT,OC] (act) = inp[BT,C] (act) w[OC,C]^T (act) + bias[OC] (act, as cuBLASLt
 * wants for a 16-bit out; may be NULL), the bias in cuBLASLt's epilogue
 * (else dl_add_bias_planes after the GEMM).
 * Any operand may sit at any 16-byte aligned offset. */
int dl_matmul_fwd(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int BT, int C, int OC,
                  dl_dtype act, cudaStream_t s);
/* dinp[BT,C] (act) = dout w, or += with accumulate (NULL: skipped); dw[OC,C] (fp32) += dout^T inp;
 * dbias[OC] (fp32) = colsum(dout), overwritten (NULL: skipped), fused in the
 * dw GEMM's epilogue (BGRADB) where cuBLASLt has an algorithm for it. */
int dl_matmul_bwd(dl_blas *blas, void *dinp, int accumulate, float *dw, float *dbias, const void *dout,
                  const void *inp, const void *w, int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* The same for `planes` GEMMs of one shape at once (a strided batch: one
 * cuBLASLt GEMM): plane p of out is out + p*BT*OC = inp w_p^T + bias_p, with
 * w_p = w + p*OC*C and bias_p = bias + p*OC: a block's q, k and v (planes
 * 3, q, k, v side by side) from one [3 OC x C] weight and one [3 OC] bias. */
int dl_matmul_fwd_planes(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int planes,
                         int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* dinp = (or += with accumulate) sum_p dout_p w_p (a GEMM a plane; with
 * planes > 1 and a 16-bit act, summed in fp32 in dinp_sum, BT x C floats,
 * then rounded once; NULL otherwise); dw_p += dout_p^T inp and dbias_p =
 * colsum(dout_p) (one GEMM, BGRADB where cuBLASLt has it); dout_p = dout +
 * p*BT*OC, dw_p = dw + p*OC*C, dbias_p = dbias + p*OC. */
int dl_matmul_bwd_planes(dl_blas *blas, void *dinp, float *dinp_sum, int accumulate, float *dw, float *dbias,
                         const void *dout, const void *inp, const void *w, int planes, int BT, int C, int OC,
                         dl_dtype act, cudaStream_t s);
/* ---- the MLP's GELU in the GEMMs' epilogues: cuBLASLt's GELU is the tanh
 * approximation (within 5e-4 of the exact erf GELU of the tutorial's model,
 * which dl_gelu_fwd/bwd compute), so only with 16-bit activations; fp32
 * keeps the exact kernels. *fused = 1 when act is 16-bit, OC a multiple of
 * 8 (the pre-activation's leading dimension) and cuBLASLt has both
 * epilogues for 256-byte aligned operands: GELU_AUX_BIAS for the layer
 * [BT,C] -> [BT,OC] that feeds GELU, DGELU for the backward of the layer
 * [BT,OC] -> [BT,C2] after it (a refusal of any kind is a 0, not an error). */
int dl_gelu_epilogue(dl_blas *blas, int BT, int C, int OC, int C2, dl_dtype act, int *fused);
/* pre[BT,OC] = inp w^T + bias, out = gelu(pre) (act): fused: one GEMM
 * (GELU_AUX_BIAS, pre its aux output); else, or where cuBLASLt has no
 * algorithm for these pointers, dl_matmul_fwd then dl_gelu_fwd. */
int dl_matmul_gelu_fwd(dl_blas *blas, int fused, void *out, void *pre, const void *inp, const void *w,
                       const void *bias, int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* out = the GELU of pre that dl_matmul_gelu_fwd computed with `fused`
 * as dl_gelu_epilogue answered it for these (aligned) operands (the tanh
 * approximation in the epilogue, else the exact kernel): its output
 * recomputed for the backward instead of kept. */
int dl_gelu_recompute(int fused, void *out, const void *pre, size_t n, dl_dtype act, cudaStream_t s);
/* The backward of the layer after GELU (inp = gelu(pre) [BT,C], w [OC,C]):
 * dpre (may be inp: read first) = (dout w) * gelu'(pre), overwritten: fused: DGELU in the dinp GEMM's
 * epilogue; else, or where cuBLASLt has no algorithm for these pointers,
 * the GEMM into dpre then dl_gelu_bwd in place (no scratch);
 * dw (required) += dout^T inp, dbias = colsum(dout) as dl_matmul_bwd. */
int dl_matmul_bwd_gelu(dl_blas *blas, int fused, void *dpre, const void *pre, float *dw, float *dbias,
                       const void *dout, const void *inp, const void *w, int BT, int C, int OC, dl_dtype act,
                       cudaStream_t s);
/* Device scratch (bytes) of the two-stage column reductions over `rows`
 * rows of `cols` sums (n outputs of c columns each: cols = n * c): fp32
 * partials of every 256-row chunk. */
size_t dl_column_partials_bytes(int rows, int cols);
/* sum[c] = (accumulate: +=) sum over rows of x[r, c] (x act, rows x cols):
 * deterministic (fixed order, no atomics), a grid of row chunks x column
 * tiles then a sum of the chunks; partials: dl_column_partials_bytes(rows, cols) */
int dl_column_sum(float *sum, int accumulate, const void *x, int rows, int cols, float *partials, dl_dtype act,
                  cudaStream_t s);

/* ---- elementwise */
int dl_cast(void *dst, dl_dtype dst_type, const void *src, dl_dtype src_type, size_t n, cudaStream_t s);
/* x[b*N + n, :] = tokens[b*N + n, :] + pos[n, :]: the residual stream's start
 * (x, pos fp32; tokens act) */
int dl_embed_tokens(float *x, const void *tokens, const float *pos, int B, int N, int D, dl_dtype act, cudaStream_t s);
/* dpos[n, :] += sum_b dx[b*N + n, :] (fp32) */
int dl_pos_embed_bwd(float *dpos, const float *dx, int B, int N, int D, cudaStream_t s);
/* out_p[r, c] += bias_p[c] for the planes p of rows x cols (out_p = out +
 * p*rows*cols, bias_p = bias + p*cols; both act): the bias epilogue's
 * fallback */
int dl_add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, dl_dtype act, cudaStream_t s);
int dl_gelu_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s);
/* GELU's tanh approximation (cuBLASLt's GELU epilogues compute it) */
int dl_gelu_tanh_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s);
/* dinp = dout * gelu'(inp); dinp may be dout (in place) */
int dl_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, dl_dtype act, cudaStream_t s);
/* image (B,C,H,W) fp32 -> patches (B*N, C*P*P) act */
int dl_patchify(void *patches, const float *img, int B, int C, int H, int W, int P, dl_dtype act, cudaStream_t s);
/* tokens (B*N, P*P*C) act -> image (B,C,H,W) fp32, and its adjoint */
int dl_unpatchify(float *img, const void *tokens, int B, int C, int H, int W, int P, dl_dtype act, cudaStream_t s);
int dl_unpatchify_bwd(void *dtokens, const float *dimg, int B, int C, int H, int W, int P, dl_dtype act,
                      cudaStream_t s);

/* ---- layernorm (fp32 statistics) over the residual stream, which is fp32 in
 * every precision (inp, x, x_out, dinp); out, y, dout, dinp_act act; mean/rstd fp32 */
int dl_layernorm_fwd(void *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int BT,
                     int C, float eps, dl_dtype act, cudaStream_t s);
/* x_out = x + y + bias (bias fp32, may be NULL), out = LN(x_out): a residual branch's
 * end fused with the next norm */
int dl_residual_layernorm_fwd(float *x_out, void *out, float *mean, float *rstd, const float *x, const void *y,
                              const float *bias, const float *w, const float *b, int BT, int C, float eps,
                              dl_dtype act, cudaStream_t s);
/* dinp += ...; dinp_act (may be NULL) = the new dinp in act; dw, db (fp32) += ...,
 * their column sums as dl_column_sum's; partials: dl_column_partials_bytes(BT, 2 * C) */
int dl_layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout, const float *inp,
                     const float *w, const float *mean, const float *rstd, int BT, int C, float *partials,
                     dl_dtype act, cudaStream_t s);

/* ---- attention: flash (online softmax, O(N) memory); q,k,v,o (B,N,NH,HD) act, lse (B,NH,N) fp32;
 * HD from 1 to 128 */
int dl_attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, int N, int NH, int HD,
                     float scale, dl_dtype act, cudaStream_t s);
/* The per-thread local memory (bytes) the attention kernels need at most,
 * over every dtype (cudaFuncGetAttributes): the stack to reserve before a
 * CUDA graph capture, where the runtime may not grow it. */
int dl_attention_stack_bytes(size_t *bytes);
/* The dynamic shared memory (bytes) a block of the attention kernels needs
 * at most for heads of HD dims (to compare with the device's
 * cudaDevAttrMaxSharedMemoryPerBlockOptin). */
int dl_attention_shared_bytes(int HD, size_t *bytes);
/* dq, dk, dv (act, overwritten); delta: B*NH*N fp32 scratch */
int dl_attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k, const void *v,
                     const void *o, const float *lse, float *delta, int B, int N, int NH, int HD, float scale,
                     dl_dtype act, cudaStream_t s);

/* ---- attention through cuDNN's fused SDPA (builds with cuDNN only:
 * HAVE_CUDNN), same math and layouts as dl_attention_*; lse is cuDNN's
 * softmax statistics. Failures print file:line and cuDNN's messages and
 * return DL_CUDNN_BASE + a cudnnStatus_t. */
#define DL_CUDNN_BASE 20000
typedef struct dl_sdpa dl_sdpa;
int dl_sdpa_create(dl_sdpa **sdpa); /* a cuDNN handle on the current device, an empty plan cache */
void dl_sdpa_destroy(dl_sdpa *sdpa);
/* the loaded cuDNN's version as MAJOR.MINOR.PATCH */
void dl_sdpa_version(char *text, size_t size);
/* Builds (first call; then cached) the forward and backward plans of one shape and
 * dtype, and gives the device workspace both directions need (dl_sdpa_fwd and _bwd
 * build on first use too, so call this at set-up). A status for which
 * dl_sdpa_unsupported() holds: cuDNN has no plan for the shape (e.g. HD not a
 * multiple of 8): use dl_attention_*. */
int dl_sdpa_plan(dl_sdpa *sdpa, int B, int N, int NH, int HD, dl_dtype act, size_t *workspace_bytes);
/* From now on plan (and run) only engines cuDNN does not mark
 * NONDETERMINISTIC, with dQ written directly instead of through an fp32
 * accumulator: bit-reproducible run to run (as torch.use_deterministic_algorithms
 * asks); a shape with no such engine is dl_sdpa_unsupported. */
void dl_sdpa_set_deterministic(dl_sdpa *sdpa, int deterministic);
int dl_sdpa_unsupported(int status);
/* The part of that workspace that is dlpar's own scratch (the backward's
 * Dsum and, unless deterministic, its fp32 dQ accumulator), without cuDNN:
 * the workspace is this plus what cuDNN's plans ask for. */
size_t dl_sdpa_scratch_bytes(int B, int N, int NH, int HD, dl_dtype act, int deterministic);
int dl_sdpa_fwd(dl_sdpa *sdpa, void *workspace, void *o, float *lse, const void *q, const void *k, const void *v,
                int B, int N, int NH, int HD, float scale, dl_dtype act, cudaStream_t s);
/* dq, dk, dv (act, overwritten) */
int dl_sdpa_bwd(dl_sdpa *sdpa, void *workspace, void *dq, void *dk, void *dv, const void *dout, const void *q,
                const void *k, const void *v, const void *o, const float *lse, int B, int N, int NH, int HD, float scale,
                dl_dtype act, cudaStream_t s);
/* Plans both directions, with the same graphs, for a device that need not be
 * here, given as cuDNN's device-properties JSON (no GPU, no cuDNN handle):
 * [0] forward, [1] backward: usable engine configs, whether a plan compiled
 * (with the libcuda stub a compiled plan fails to load: that counts), and
 * the last status. */
typedef struct {
  int configs[2], compiled[2], status[2];
} dl_sdpa_check_result;
int dl_sdpa_check(const char *props_json, int B, int N, int NH, int HD, dl_dtype act, int deterministic,
                  dl_sdpa_check_result *out);

/* ---- fp32 attention on tensor cores (attention_mma.cu, sm_80 and later):
 * the flash attention of dl_attention_* for fp32 q, k, v, o, dq, dk, dv
 * (B, N, NH, HD) and lse (B, NH, N), HD from 1 to 128, its products as
 * mma.sync TF32 MMAs: passes = 3 splits every operand into two TF32 terms
 * (3xTF32: fp32-accurate, PyTorch's fp32 SDPA); passes = 1 is plain TF32
 * (10-bit mantissas, as allow_tf32). Other passes: cudaErrorInvalidValue. */
int dl_attention_tc_fwd(float *o, float *lse, const float *q, const float *k, const float *v, int B, int N, int NH,
                        int HD, float scale, int passes, cudaStream_t s);
/* Device scratch (bytes) of dl_attention_tc_bwd: its dq turns (ints). */
size_t dl_attention_tc_scratch_bytes(int B, int N, int NH, int HD);
/* dq, dk, dv (overwritten); delta: B*NH*N fp32 scratch; scratch:
 * dl_attention_tc_scratch_bytes, cleared here on the stream (no host
 * synchronisation: graph-capturable). Deterministic: the same bits on every
 * run (dq is summed over key blocks in a fixed order, each block waiting
 * its turn: the GPU dispatches blocks in index order). */
int dl_attention_tc_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                        const float *v, const float *o, const float *lse, float *delta, void *scratch, int B, int N,
                        int NH, int HD, float scale, int passes, cudaStream_t s);
/* The dynamic shared memory (bytes) a block of these kernels needs at most
 * for heads of HD dims (to compare with cudaDevAttrMaxSharedMemoryPerBlockOptin:
 * 224.5 KB at 128 dims (the backward, 3xTF32: beyond an A100's 163 KB), 112.5 KB at 48). */
int dl_attention_tc_shared_bytes(int HD, size_t *bytes);

/* ---- loss: per-sample ||p - t|| / ||t||; loss_sum (fp32, device) += mean over B; sums:
 * dl_l2_loss_scratch_floats(B) floats of scratch, the per-sample sums first (dl_l2_loss_bwd reads them) */
size_t dl_l2_loss_scratch_floats(int B);
int dl_l2_loss_fwd(float *loss_sum, float *sums, const float *pred, const float *target, int B, size_t n,
                   cudaStream_t s);
/* dpred (may be pred) = dloss * d(mean)/dpred, using the sums of the forward;
 * dloss is a device scalar (the loss scale; NULL: 1) */
int dl_l2_loss_bwd(float *dpred, const float *sums, const float *pred, const float *target, int B, size_t n,
                   const float *dloss, cudaStream_t s);
/* *rmse_sum += sum over samples of the latitude-weighted RMSE of channel c
 * (one float written, nothing beside it); per_sample: B floats of scratch,
 * a buffer of their own */
int dl_weighted_rmse(float *rmse_sum, float *per_sample, const float *pred, const float *target, const float *lat_w,
                     int B, int C, int H, int W, int c, cudaStream_t s);

/* ---- Adam over the flat parameter buffer in one launch (multi-tensor):
 * grads are divided by *loss_scale; if *found_inf is set the step is
 * skipped; params_act (may be NULL) receives the act copy of the weights. */
int dl_adam(float *params, void *params_act, dl_dtype act, float *m, float *v, const float *grads, size_t n,
            const float *lr_t /* device: lr, step */, float beta1, float beta2, float eps, const float *loss_scale,
            const int *found_inf, cudaStream_t s);
/* found_inf = any non-finite value in x[0..n) */
int dl_check_finite(int *found_inf, const float *x, size_t n, cudaStream_t s);
/* dynamic loss scaling (fp16): on inf halve the scale (not below min_scale)
 * and reset the count, *overflow_steps += 1; on inf at min_scale (the
 * gradients themselves are not finite) *skipped_steps += 1 instead; after
 * `interval` clean steps double it (not above max_scale) */
int dl_update_loss_scale(float *scale, int *clean_steps, const int *found_inf, int interval, float min_scale,
                         float max_scale, float *overflow_steps, float *skipped_steps, cudaStream_t s);
/* *count += *flag (a device counter of flagged steps) */
int dl_count_flag(float *count, const int *flag, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif

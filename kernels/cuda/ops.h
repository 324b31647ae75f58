/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/ops.h: the CUDA twins of kernels/cpu/ops.h, callable from C.
 * They have the same math, the same layouts, described in kernels/README.md,
 * and the same argument order. Each takes the stream it runs on and only
 * enqueues, without host synchronisation. Activations may be fp32, bf16 or
 * fp16, as `act` says. Parameters, gradients, Adam state and reductions
 * are fp32. Every function returns 0 on
 * success, a cudaError_t, DL_CUBLAS_BASE + a cublasStatus_t or
 * DL_CUDNN_BASE + a cudnnStatus_t;
 * dl_status_string() names it. These codes are the kernels' own layer,
 * below dlpar_status. The model's MODEL_TRY, described in common/status.h,
 * turns a non-zero one into DLPAR_ERR_CUDA with dl_status_string's words. */
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

/* ---- GEMMs through cuBLASLt use one handle and one workspace. Each shape's
 * descriptor, layouts and algorithm are planned once and kept. Where
 * cuBLASLt has no algorithm for an epilogue, or refuses its own at run
 * time, the GEMM runs plain and a kernel does the epilogue's work. That
 * choice is made once per shape. */
typedef struct dl_blas dl_blas;
int dl_blas_create(dl_blas **blas, size_t workspace_bytes, int allow_tf32);
void dl_blas_destroy(dl_blas *blas);
/* From now on every epilogue is answered as cuBLASLt's "no algorithm", so
 * the fallbacks run. This is their test, and a way to rule the epilogues
 * out. */
void dl_blas_refuse_epilogues(dl_blas *blas);

/* out[BT,OC] = inp[BT,C] w[OC,C]^T + bias[OC], all in act. The bias is in
 * act because cuBLASLt wants that for a 16-bit out, and it may be NULL. It
 * is added in cuBLASLt's epilogue, else by dl_add_bias_planes after the
 * GEMM. Any operand may sit at any 16-byte aligned offset. */
int dl_matmul_fwd(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int BT, int C, int OC,
                  dl_dtype act, cudaStream_t s);
/* dinp[BT,C] = dout w in act, or += with accumulate, and skipped when NULL.
 * dw[OC,C] += dout^T inp in fp32. dbias[OC] = colsum(dout) in fp32,
 * overwritten, and skipped when NULL. It is fused in the dw GEMM's BGRADB
 * epilogue where cuBLASLt has an algorithm for it. */
int dl_matmul_bwd(dl_blas *blas, void *dinp, int accumulate, float *dw, float *dbias, const void *dout,
                  const void *inp, const void *w, int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* The same for `planes` GEMMs of one shape at once, as one strided-batch
 * cuBLASLt GEMM. Plane p of out is out + p*BT*OC = inp w_p^T + bias_p, with
 * w_p = w + p*OC*C and bias_p = bias + p*OC. A block's q, k and v come so
 * from one [3 OC x C] weight and one [3 OC] bias, with planes = 3 and q, k
 * and v side by side. */
int dl_matmul_fwd_planes(dl_blas *blas, void *out, const void *inp, const void *w, const void *bias, int planes,
                         int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* dinp = sum_p dout_p w_p, or += with accumulate, one GEMM a plane. With
 * planes > 1 and a 16-bit act the sum is taken in fp32 in dinp_sum, of
 * BT x C floats, then rounded once; otherwise dinp_sum is NULL.
 * dw_p += dout_p^T inp and dbias_p = colsum(dout_p) take one GEMM, with
 * BGRADB where cuBLASLt has it. Here dout_p = dout + p*BT*OC,
 * dw_p = dw + p*OC*C and dbias_p = dbias + p*OC. */
int dl_matmul_bwd_planes(dl_blas *blas, void *dinp, float *dinp_sum, int accumulate, float *dw, float *dbias,
                         const void *dout, const void *inp, const void *w, int planes, int BT, int C, int OC,
                         dl_dtype act, cudaStream_t s);
/* ---- the MLP's GELU in the GEMMs' epilogues. cuBLASLt's GELU is the tanh
 * approximation, within 5e-4 of the exact erf GELU of the tutorial's model
 * that dl_gelu_fwd/bwd compute. So it serves only 16-bit activations, and
 * fp32 keeps the exact kernels. *fused = 1 when act is 16-bit, OC is a
 * multiple of 8, being the pre-activation's leading dimension, and
 * cuBLASLt has both epilogues for 256-byte aligned operands. These are
 * GELU_AUX_BIAS for the layer [BT,C] -> [BT,OC] that feeds GELU, and DGELU
 * for the backward of the layer [BT,OC] -> [BT,C2] after it. A refusal of
 * any kind gives 0, not an error. */
int dl_gelu_epilogue(dl_blas *blas, int BT, int C, int OC, int C2, dl_dtype act, int *fused);
/* pre[BT,OC] = inp w^T + bias and out = gelu(pre), in act. When fused, this
 * is one GEMM with GELU_AUX_BIAS, pre being its aux output. Otherwise, or
 * where cuBLASLt has no algorithm for these pointers, it is dl_matmul_fwd
 * then dl_gelu_fwd. */
int dl_matmul_gelu_fwd(dl_blas *blas, int fused, void *out, void *pre, const void *inp, const void *w,
                       const void *bias, int BT, int C, int OC, dl_dtype act, cudaStream_t s);
/* out = the GELU of pre that dl_matmul_gelu_fwd computed, with `fused` as
 * dl_gelu_epilogue answered it for these aligned operands. That is the tanh
 * approximation of the epilogue, else the exact kernel. The output is
 * recomputed for the backward instead of kept. */
int dl_gelu_recompute(int fused, void *out, const void *pre, size_t n, dl_dtype act, cudaStream_t s);
/* The backward of the layer after GELU, with inp = gelu(pre) [BT,C] and
 * w [OC,C]. dpre = (dout w) * gelu'(pre), overwritten. dpre may be inp,
 * which is read first. When fused, DGELU runs in the dinp GEMM's epilogue.
 * Otherwise, or where cuBLASLt has no algorithm for these pointers, the
 * GEMM writes dpre and dl_gelu_bwd then works in place, without scratch.
 * dw is required: dw += dout^T inp, and dbias = colsum(dout) as in
 * dl_matmul_bwd. */
int dl_matmul_bwd_gelu(dl_blas *blas, int fused, void *dpre, const void *pre, float *dw, float *dbias,
                       const void *dout, const void *inp, const void *w, int BT, int C, int OC, dl_dtype act,
                       cudaStream_t s);
/* The device scratch in bytes of the two-stage column reductions over
 * `rows` rows of `cols` sums, where n outputs of c columns each make
 * cols = n * c. It holds the fp32 partials of every 256-row chunk. */
size_t dl_column_partials_bytes(int rows, int cols);
/* sum[c] = sum over rows of x[r, c], or += with accumulate, where x is
 * rows x cols in act. It is deterministic, in a fixed order without
 * atomics: a grid of row chunks by column tiles, then a sum of the chunks.
 * partials holds dl_column_partials_bytes(rows, cols) bytes. */
int dl_column_sum(float *sum, int accumulate, const void *x, int rows, int cols, float *partials, dl_dtype act,
                  cudaStream_t s);

/* ---- elementwise */
int dl_cast(void *dst, dl_dtype dst_type, const void *src, dl_dtype src_type, size_t n, cudaStream_t s);
/* x[b*N + n, :] = tokens[b*N + n, :] + pos[n, :], the residual stream's
 * start. x and pos are fp32, and tokens are in act. */
int dl_embed_tokens(float *x, const void *tokens, const float *pos, int B, int N, int D, dl_dtype act, cudaStream_t s);
/* dpos[n, :] += sum_b dx[b*N + n, :], in fp32. */
int dl_pos_embed_bwd(float *dpos, const float *dx, int B, int N, int D, cudaStream_t s);
/* out_p[r, c] += bias_p[c] for the planes p of rows x cols, where
 * out_p = out + p*rows*cols and bias_p = bias + p*cols, both in act. This
 * is the bias epilogue's fallback. */
int dl_add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, dl_dtype act, cudaStream_t s);
int dl_gelu_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s);
/* GELU's tanh approximation, which cuBLASLt's GELU epilogues compute. */
int dl_gelu_tanh_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s);
/* dinp = dout * gelu'(inp). dinp may be dout, to work in place. */
int dl_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, dl_dtype act, cudaStream_t s);
/* image [B,C,H,W] in fp32 -> patches [B*N, C*P*P] in act */
int dl_patchify(void *patches, const float *img, int B, int C, int H, int W, int P, dl_dtype act, cudaStream_t s);
/* tokens [B*N, P*P*C] in act -> image [B,C,H,W] in fp32, and its adjoint */
int dl_unpatchify(float *img, const void *tokens, int B, int C, int H, int W, int P, dl_dtype act, cudaStream_t s);
int dl_unpatchify_bwd(void *dtokens, const float *dimg, int B, int C, int H, int W, int P, dl_dtype act,
                      cudaStream_t s);

/* ---- layernorm with fp32 statistics over the residual stream. The stream
 * is fp32 in every precision, so inp, x, x_out and dinp are fp32. out, y,
 * dout and dinp_act are in act, and mean and rstd are fp32. */
int dl_layernorm_fwd(void *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int BT,
                     int C, float eps, dl_dtype act, cudaStream_t s);
/* x_out = x + y + bias and out = LN(x_out), a residual branch's end fused
 * with the next norm. bias is fp32 and may be NULL. */
int dl_residual_layernorm_fwd(float *x_out, void *out, float *mean, float *rstd, const float *x, const void *y,
                              const float *bias, const float *w, const float *b, int BT, int C, float eps,
                              dl_dtype act, cudaStream_t s);
/* dinp += ..., and dinp_act = the new dinp in act unless it is NULL.
 * dw and db += ... in fp32, their column sums taken as dl_column_sum's.
 * partials holds dl_column_partials_bytes(BT, 2 * C) bytes. */
int dl_layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout, const float *inp,
                     const float *w, const float *mean, const float *rstd, int BT, int C, float *partials,
                     dl_dtype act, cudaStream_t s);

/* ---- attention: flash attention, an online softmax with memory linear in N.
 * q, k, v and o are [B,N,NH,HD] in act, lse is [B,NH,N] in fp32, and HD
 * runs from 1 to 128. */
int dl_attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, int N, int NH, int HD,
                     float scale, dl_dtype act, cudaStream_t s);
/* The per-thread local memory in bytes that the attention kernels need at
 * most over every dtype, as cudaFuncGetAttributes tells. It is the stack to
 * reserve before a CUDA graph capture, where the runtime may not grow it. */
int dl_attention_stack_bytes(size_t *bytes);
/* The dynamic shared memory in bytes that a block of the attention kernels
 * needs at most for heads of HD dims. Compare it with the device's
 * cudaDevAttrMaxSharedMemoryPerBlockOptin. */
int dl_attention_shared_bytes(int HD, size_t *bytes);
/* dq, dk and dv are in act and overwritten. delta is B*NH*N fp32 scratch. */
int dl_attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k, const void *v,
                     const void *o, const float *lse, float *delta, int B, int N, int NH, int HD, float scale,
                     dl_dtype act, cudaStream_t s);

/* ---- attention through cuDNN's fused SDPA, built only with cuDNN under
 * HAVE_CUDNN. It has the same math and layouts as dl_attention_*, and lse is cuDNN's
 * softmax statistics. Failures print file:line and cuDNN's messages and
 * return DL_CUDNN_BASE + a cudnnStatus_t. */
#define DL_CUDNN_BASE 20000
typedef struct dl_sdpa dl_sdpa;
int dl_sdpa_create(dl_sdpa **sdpa); /* a cuDNN handle on the current device, an empty plan cache */
void dl_sdpa_destroy(dl_sdpa *sdpa);
/* the loaded cuDNN's version as MAJOR.MINOR.PATCH */
void dl_sdpa_version(char *text, size_t size);
/* Builds the forward and backward plans of one shape and dtype at the first
 * call and caches them, and gives the device workspace both directions
 * need. dl_sdpa_fwd and _bwd build on first use too, so call this at
 * set-up. A status for which dl_sdpa_unsupported() holds means cuDNN has no
 * plan for the shape, for example with HD not a multiple of 8; then use
 * dl_attention_*. */
int dl_sdpa_plan(dl_sdpa *sdpa, int B, int N, int NH, int HD, dl_dtype act, size_t *workspace_bytes);
/* From now on plan and run only engines cuDNN does not mark
 * NONDETERMINISTIC, with dQ written directly instead of through an fp32
 * accumulator. The results are then bit-reproducible run to run, as
 * torch.use_deterministic_algorithms asks. A shape with no such engine is
 * dl_sdpa_unsupported. */
void dl_sdpa_set_deterministic(dl_sdpa *sdpa, int deterministic);
int dl_sdpa_unsupported(int status);
/* The part of that workspace that is dlpar's own scratch, computed without
 * cuDNN. It holds the backward's Dsum and, unless deterministic, its fp32
 * dQ accumulator. The workspace is this plus what cuDNN's plans ask for. */
size_t dl_sdpa_scratch_bytes(int B, int N, int NH, int HD, dl_dtype act, int deterministic);
int dl_sdpa_fwd(dl_sdpa *sdpa, void *workspace, void *o, float *lse, const void *q, const void *k, const void *v,
                int B, int N, int NH, int HD, float scale, dl_dtype act, cudaStream_t s);
/* dq, dk and dv are in act and overwritten. */
int dl_sdpa_bwd(dl_sdpa *sdpa, void *workspace, void *dq, void *dk, void *dv, const void *dout, const void *q,
                const void *k, const void *v, const void *o, const float *lse, int B, int N, int NH, int HD, float scale,
                dl_dtype act, cudaStream_t s);
/* Plans both directions, with the same graphs, for a device that need not be
 * here, given as cuDNN's device-properties JSON, without a GPU or a cuDNN
 * handle. Index 0 is the forward and 1 the backward. Each gives the usable
 * engine configs, whether a plan compiled, and the last status. With the
 * libcuda stub a compiled plan fails to load, and that still counts as
 * compiled. */
typedef struct {
  int configs[2], compiled[2], status[2];
} dl_sdpa_check_result;
int dl_sdpa_check(const char *props_json, int B, int N, int NH, int HD, dl_dtype act, int deterministic,
                  dl_sdpa_check_result *out);

/* ---- fp32 attention on tensor cores, in attention_mma.cu, for sm_80 and
 * later. It is the flash attention of dl_attention_* for fp32 q, k, v, o,
 * dq, dk and dv of [B, N, NH, HD] and lse of [B, NH, N], with HD from 1 to
 * 128, and its products are mma.sync TF32 MMAs. passes = 3 splits every
 * operand into two TF32 terms. That is 3xTF32, fp32-accurate like
 * PyTorch's fp32 SDPA. passes = 1 is plain TF32 with 10-bit mantissas, as
 * allow_tf32 gives. Any other passes returns cudaErrorInvalidValue. */
int dl_attention_tc_fwd(float *o, float *lse, const float *q, const float *k, const float *v, int B, int N, int NH,
                        int HD, float scale, int passes, cudaStream_t s);
/* The device scratch in bytes of dl_attention_tc_bwd, which holds its dq turns as ints. */
size_t dl_attention_tc_scratch_bytes(int B, int N, int NH, int HD);
/* dq, dk and dv are overwritten. delta is B*NH*N fp32 scratch. scratch
 * holds dl_attention_tc_scratch_bytes and is cleared here on the stream,
 * without host synchronisation, so this can be captured in a graph. It is
 * deterministic and gives the same bits on every run. dq is summed over
 * key blocks in a fixed order, each block waiting its turn, since the GPU
 * dispatches blocks in index order. */
int dl_attention_tc_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                        const float *v, const float *o, const float *lse, float *delta, void *scratch, int B, int N,
                        int NH, int HD, float scale, int passes, cudaStream_t s);
/* The dynamic shared memory in bytes that a block of these kernels needs at
 * most for heads of HD dims. Compare it with
 * cudaDevAttrMaxSharedMemoryPerBlockOptin. It is 224.5 KB at 128 dims for
 * the 3xTF32 backward, beyond an A100's 163 KB, and 112.5 KB at 48. */
int dl_attention_tc_shared_bytes(int HD, size_t *bytes);

/* ---- loss: the per-sample ||p - t|| / ||t||. loss_sum, an fp32 on the
 * device, += the mean over B. sums is dl_l2_loss_scratch_floats(B) floats
 * of scratch, the per-sample sums first, which dl_l2_loss_bwd reads. */
size_t dl_l2_loss_scratch_floats(int B);
int dl_l2_loss_fwd(float *loss_sum, float *sums, const float *pred, const float *target, int B, size_t n,
                   cudaStream_t s);
/* dpred = dloss * d(mean)/dpred, using the sums of the forward. dpred may
 * be pred. dloss is a device scalar, the loss scale, and NULL means 1. */
int dl_l2_loss_bwd(float *dpred, const float *sums, const float *pred, const float *target, int B, size_t n,
                   const float *dloss, cudaStream_t s);
/* *rmse_sum += the sum over samples of the latitude-weighted RMSE of
 * channel c. One float is written and nothing beside it. per_sample is
 * B floats of scratch in a buffer of their own. */
int dl_weighted_rmse(float *rmse_sum, float *per_sample, const float *pred, const float *target, const float *lat_w,
                     int B, int C, int H, int W, int c, cudaStream_t s);

/* ---- Adam over the flat parameter buffer in one multi-tensor launch.
 * grads are divided by *loss_scale. If *found_inf is set the step is
 * skipped. params_act, unless NULL, receives the act copy of the weights. */
int dl_adam(float *params, void *params_act, dl_dtype act, float *m, float *v, const float *grads, size_t n,
            const float *lr_t /* device: lr, step */, float beta1, float beta2, float eps, const float *loss_scale,
            const int *found_inf, cudaStream_t s);
/* found_inf = any non-finite value in x[0..n) */
int dl_check_finite(int *found_inf, const float *x, size_t n, cudaStream_t s);
/* Dynamic loss scaling for fp16. On inf, halve the scale but not below
 * min_scale, reset the count and add 1 to *overflow_steps. On inf at
 * min_scale, where the gradients themselves are not finite, add 1 to
 * *skipped_steps instead. After `interval` clean steps, double the scale
 * but not above max_scale. */
int dl_update_loss_scale(float *scale, int *clean_steps, const int *found_inf, int interval, float min_scale,
                         float max_scale, float *overflow_steps, float *skipped_steps, cudaStream_t s);
/* *count += *flag, a device counter of flagged steps. */
int dl_count_flag(float *count, const int *flag, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif

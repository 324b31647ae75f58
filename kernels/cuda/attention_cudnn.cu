/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention_cudnn.cu: attention through cuDNN's backend graph
 * API, for cuDNN 9.13.1 or later, written against 9.19. The forward is the
 * fused SDPA_FWD operation, writing the softmax statistics that are the lse
 * of the reference kernels. The backward is the 18-operation flash-bprop
 * graph that cuDNN's fused engines accept. Plans are built once per shape
 * and dtype and kept in the dl_sdpa cache. dl_sdpa_check, CI's GPU-less
 * test, also builds them for a device that is not here, described by a
 * cuDNN device-properties JSON. Layouts are as in the reference kernels:
 * q, k, v and o are [B,N,NH,HD] in act, and lse is [B,NH,N] in fp32.
 * dl_sdpa_set_deterministic asks for deterministic plans. Then dQ is
 * written by its matmul directly, without an fp32 accumulator, as in
 * cudnn-frontend's deterministic backward, and only engines whose
 * numerical notes do not say NONDETERMINISTIC are taken. */
#include <cudnn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/common.cuh"

/* Prints file:line, the call, cuDNN's status string and its last error
 * message; returns DL_CUDNN_BASE + the status. */
static int cudnn_fail(cudnnStatus_t status, const char *call, const char *file, int line)
{
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  fprintf(stderr, "%s:%d: %s: %s%s%s\n", file, line, call, cudnnGetErrorString(status), detail[0] ? ": " : "", detail);
  return DL_CUDNN_BASE + (int)status;
}

/* A shape, type or layout cuDNN has no engine for. That is an answer about
 * the problem, which the reference kernels can take if the config allows.
 * The rest of 3000-3999 is the installation's problem and an error, in
 * cuDNN's own words. Such are an old driver, another CUDA runtime, a GPU
 * architecture this cuDNN lacks, a missing libnvrtc or libcuda.so.1, or a
 * missing sublibrary. */
static bool unsupported(cudnnStatus_t status)
{
  switch (status) {
  case CUDNN_STATUS_NOT_SUPPORTED:
  case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
  case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
  case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
  case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
  case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
  case CUDNN_STATUS_NOT_SUPPORTED_PADDING: return true;
  default: return false;
  }
}

/* cuDNN before 9.15.1 reads out of bounds replaying the SDPA backward graph
 * when the sequence length is not a multiple of 128. 9.15.1 fixed it. */
static const size_t CUDNN_SDPA_BWD_ANY_LENGTH = 91501;

/* 0 for success. A planning step's "not supported" is returned as it is,
 * quietly, because it is an answer: the caller falls back and says so
 * once. cudnn_fail prints anything else. */
static int cudnn_status(cudnnStatus_t status, bool quiet, const char *call, const char *file, int line)
{
  if (status == CUDNN_STATUS_SUCCESS)
    return 0;
  if (quiet && unsupported(status))
    return DL_CUDNN_BASE + (int)status;
  return cudnn_fail(status, call, file, line);
}

#define DL_TRY_CUDNN(call) DL_TRY(cudnn_status((call), false, #call, __FILE__, __LINE__))
#define DL_TRY_PLAN(call) DL_TRY(cudnn_status((call), true, #call, __FILE__, __LINE__))

enum { MAX_DESCS = 128, MAX_OPS = 24, SDPA_CACHE = 8, ALIGN = 256 };

/* the graphs' non-virtual tensors; virtual ones are numbered from VIRTUAL_UID */
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_DO, UID_DQ, UID_DK, UID_DV, UID_ONE, UID_DSUM,
       UID_DQACC, VIRTUAL_UID = 100 };

typedef struct {
  int B, N, NH, HD;
  dl_dtype act;
  int deterministic; /* run-to-run bit-reproducible plans only */
} sdpa_shape;

/* One graph and its plan: every descriptor it made, destroyed together. */
typedef struct {
  cudnnBackendDescriptor_t descs[MAX_DESCS];
  int n_descs;
  cudnnBackendDescriptor_t ops[MAX_OPS];
  int n_ops;
  int64_t next_virtual_uid;
  cudnnBackendDescriptor_t plan;
  int64_t workspace;
  int configs; /* usable engine configs the heuristics gave */
} sdpa_graph;

typedef struct {
  sdpa_shape shape;
  sdpa_graph fwd, bwd;
} sdpa_plans;

struct dl_sdpa {
  cudnnHandle_t handle;
  sdpa_plans *cache[SDPA_CACHE];
  int cached;
  int deterministic; /* the plans this handle builds from now on */
};

typedef struct {
  int64_t dim[4], stride[4];
} layout4;

enum { TENSOR_PLAIN = 0, TENSOR_VIRTUAL = 1, TENSOR_BY_VALUE = 2 };

/* ------------------------------------------------------------ descriptors */

static int new_desc(sdpa_graph *g, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out)
{
  if (g->n_descs == MAX_DESCS)
    return cudnn_fail(CUDNN_STATUS_INTERNAL_ERROR, "new_desc: descriptor table full", __FILE__, __LINE__);
  DL_TRY_CUDNN(cudnnBackendCreateDescriptor(type, &g->descs[g->n_descs]));
  *out = g->descs[g->n_descs++];
  return 0;
}

static void graph_destroy(sdpa_graph *g)
{
  while (g->n_descs > 0)
    cudnnBackendDestroyDescriptor(g->descs[--g->n_descs]);
  memset(g, 0, sizeof *g);
}

static int set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value)
{
  DL_TRY_CUDNN(cudnnBackendSetAttribute(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value));
  return 0;
}

static cudnnDataType_t cudnn_type(dl_dtype act)
{
  return act == DL_BF16 ? CUDNN_DATA_BFLOAT16 : act == DL_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

/* uid 0 means a virtual tensor, internal to the graph and numbered here */
static int tensor(sdpa_graph *g, cudnnBackendDescriptor_t *t, int64_t uid, cudnnDataType_t type, const layout4 *l,
                  int kind)
{
  const int64_t alignment = 16;
  const bool is_virtual = kind == TENSOR_VIRTUAL, by_value = kind == TENSOR_BY_VALUE;
  if (is_virtual)
    uid = g->next_virtual_uid++;
  DL_TRY(new_desc(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, l->dim));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, l->stride));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
  if (is_virtual)
    DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
  if (by_value)
    DL_TRY_CUDNN(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
  DL_TRY_CUDNN(cudnnBackendFinalize(*t));
  return 0;
}

typedef struct {
  cudnnBackendDescriptor_t *desc;
  int64_t uid; /* 0: virtual */
  cudnnDataType_t type;
  const layout4 *layout;
  int kind;
} tensor_spec;

/* The tensors of specs but the one whose uid is `without`, where 0 leaves none out. */
static int tensors(sdpa_graph *g, const tensor_spec *specs, size_t n, int64_t without)
{
  for (size_t i = 0; i < n; i++)
    if (without == 0 || specs[i].uid != without)
      DL_TRY(tensor(g, specs[i].desc, specs[i].uid, specs[i].type, specs[i].layout, specs[i].kind));
  return 0;
}

static int add_op(sdpa_graph *g, cudnnBackendDescriptor_t op)
{
  if (g->n_ops == MAX_OPS)
    return cudnn_fail(CUDNN_STATUS_INTERNAL_ERROR, "add_op: operation table full", __FILE__, __LINE__);
  DL_TRY_CUDNN(cudnnBackendFinalize(op));
  g->ops[g->n_ops++] = op;
  return 0;
}

/* y = mode(x[, b]); b NULL for unary modes; b of [B,H,S,1] or [1,1,1,1] broadcasts */
static int pointwise(sdpa_graph *g, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                     cudnnBackendDescriptor_t y)
{
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t pw = NULL, op = NULL;
  DL_TRY(new_desc(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision));
  DL_TRY_CUDNN(cudnnBackendFinalize(pw));
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x));
  if (b)
    DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y));
  return add_op(g, op);
}

/* c[..,M,N] = a[..,M,K] b[..,K,N], fp32 accumulation */
static int matmul(sdpa_graph *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c)
{
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t mm = NULL, op = NULL;
  DL_TRY(new_desc(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &mm));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  DL_TRY_CUDNN(cudnnBackendFinalize(mm));
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm));
  return add_op(g, op);
}

/* y[..,1] = sum over the last axis of x */
static int reduce_sum(sdpa_graph *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
  const cudnnReduceTensorOp_t op_type = CUDNN_REDUCE_TENSOR_ADD;
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t red = NULL, op = NULL;
  DL_TRY(new_desc(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &red));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
                                       &op_type));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  DL_TRY_CUDNN(cudnnBackendFinalize(red));
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red));
  return add_op(g, op);
}

/* y is x seen through other dims and strides, as a transposed view */
static int reshape(sdpa_graph *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
  cudnnBackendDescriptor_t op = NULL;
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, &op));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y));
  return add_op(g, op);
}

/* ------------------------------------------------------------ layouts */

/* [B,H,S,D] over the [B,N,NH,HD] buffers of the model */
static layout4 bshd(const sdpa_shape *s)
{
  const int64_t B = s->B, H = s->NH, S = s->N, D = s->HD;
  return (layout4){{B, H, S, D}, {S * H * D, D, H * D, 1}};
}

/* a contiguous [B,H,rows,cols], where cols 1 gives the statistics in the lse's [B,NH,N] */
static layout4 contiguous(const sdpa_shape *s, int64_t rows, int64_t cols)
{
  const int64_t B = s->B, H = s->NH;
  return (layout4){{B, H, rows, cols}, {H * rows * cols, rows * cols, cols, 1}};
}

/* the last two axes swapped, dims and strides: the same memory */
static layout4 transposed(layout4 l)
{
  return (layout4){{l.dim[0], l.dim[1], l.dim[3], l.dim[2]}, {l.stride[0], l.stride[1], l.stride[3], l.stride[2]}};
}

static const layout4 SCALAR = {{1, 1, 1, 1}, {1, 1, 1, 1}};

/* ------------------------------------------------------------ graphs */

static int build_fwd(sdpa_graph *g, const sdpa_shape *s)
{
  const cudnnDataType_t io = cudnn_type(s->act), f32 = CUDNN_DATA_FLOAT;
  const layout4 qkv = bshd(s), stats = contiguous(s, s->N, 1);
  cudnnBackendDescriptor_t q = NULL, k = NULL, v = NULL, o = NULL, st = NULL, scale = NULL, op = NULL;
  const tensor_spec specs[] = {
      {&q, UID_Q, io, &qkv, TENSOR_PLAIN},
      {&k, UID_K, io, &qkv, TENSOR_PLAIN},
      {&v, UID_V, io, &qkv, TENSOR_PLAIN},
      {&o, UID_O, io, &qkv, TENSOR_PLAIN},
      {&st, UID_STATS, f32, &stats, TENSOR_PLAIN},
      {&scale, UID_SCALE, f32, &SCALAR, TENSOR_BY_VALUE},
  };
  DL_TRY(tensors(g, specs, sizeof specs / sizeof specs[0], 0));
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, st));
  DL_TRY(set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale));
  return add_op(g, op);
}

/* doc/cudnn-attention.md's 18-operation graph: P = exp(scale QK^T - lse) recomputed,
 * Dsum = rowsum(dO o O), dV = P^T dO, dS = scale P o (dO V^T - Dsum),
 * dK = dS^T Q, dQ = dS K through the fp32 accumulator dQacc; deterministic:
 * 17 operations, dQ = dS K written directly. */
static int build_bwd(sdpa_graph *g, const sdpa_shape *s)
{
  const cudnnDataType_t io = cudnn_type(s->act), f32 = CUDNN_DATA_FLOAT;
  const layout4 qkv = bshd(s), kt = transposed(qkv), rows = contiguous(s, s->N, 1);
  const layout4 hd = contiguous(s, s->N, s->HD), ss = contiguous(s, s->N, s->N), sst = transposed(ss);
  struct {
    cudnnBackendDescriptor_t q, kt_in, vt_in, o, dout, stats, scale, one, dq, dk, dv, dsum, dqacc;
    cudnnBackendDescriptor_t t0, t1, sc, s1, s2, p, pt, dp, t2, t3, ds, dst, kn;
  } t = {};
  const tensor_spec specs[] = {
      {&t.q, UID_Q, io, &qkv, TENSOR_PLAIN},
      {&t.kt_in, UID_K, io, &kt, TENSOR_PLAIN},
      {&t.vt_in, UID_V, io, &kt, TENSOR_PLAIN},
      {&t.o, UID_O, io, &qkv, TENSOR_PLAIN},
      {&t.dout, UID_DO, io, &qkv, TENSOR_PLAIN},
      {&t.stats, UID_STATS, f32, &rows, TENSOR_PLAIN},
      {&t.scale, UID_SCALE, f32, &SCALAR, TENSOR_BY_VALUE},
      {&t.one, UID_ONE, f32, &SCALAR, TENSOR_BY_VALUE},
      {&t.dq, UID_DQ, io, &qkv, TENSOR_PLAIN},
      {&t.dk, UID_DK, io, &qkv, TENSOR_PLAIN},
      {&t.dv, UID_DV, io, &qkv, TENSOR_PLAIN},
      {&t.dsum, UID_DSUM, f32, &rows, TENSOR_PLAIN},
      {&t.dqacc, UID_DQACC, f32, &hd, TENSOR_PLAIN},
      {&t.t0, 0, f32, &hd, TENSOR_VIRTUAL},
      {&t.t1, 0, f32, &rows, TENSOR_VIRTUAL},
      {&t.sc, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.s1, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.s2, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.p, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.pt, 0, io, &sst, TENSOR_VIRTUAL},
      {&t.dp, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.t2, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.t3, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.ds, 0, f32, &ss, TENSOR_VIRTUAL},
      {&t.dst, 0, io, &sst, TENSOR_VIRTUAL},
      {&t.kn, 0, io, &qkv, TENSOR_VIRTUAL},
  };
  DL_TRY(tensors(g, specs, sizeof specs / sizeof specs[0], s->deterministic ? UID_DQACC : 0));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_MUL, t.dout, t.o, t.t0));
  DL_TRY(reduce_sum(g, t.t0, t.t1));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_MUL, t.t1, t.one, t.dsum));
  DL_TRY(matmul(g, t.q, t.kt_in, t.sc));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_MUL, t.sc, t.scale, t.s1));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_SUB, t.s1, t.stats, t.s2));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_EXP, t.s2, NULL, t.p));
  DL_TRY(reshape(g, t.p, t.pt));
  DL_TRY(matmul(g, t.pt, t.dout, t.dv));
  DL_TRY(matmul(g, t.dout, t.vt_in, t.dp));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_SUB, t.dp, t.dsum, t.t2));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_MUL, t.t2, t.p, t.t3));
  DL_TRY(pointwise(g, CUDNN_POINTWISE_MUL, t.t3, t.scale, t.ds));
  DL_TRY(reshape(g, t.ds, t.dst));
  DL_TRY(matmul(g, t.dst, t.q, t.dk));
  DL_TRY(reshape(g, t.kt_in, t.kn));
  if (s->deterministic)
    return matmul(g, t.ds, t.kn, t.dq);
  DL_TRY(matmul(g, t.ds, t.kn, t.dqacc));
  return pointwise(g, CUDNN_POINTWISE_IDENTITY, t.dqacc, NULL, t.dq);
}

/* ------------------------------------------------------------ plans */

/* Whether the engine of config cfg says it is NONDETERMINISTIC in its numerical notes. */
static int nondeterministic(sdpa_graph *g, cudnnBackendDescriptor_t cfg, bool *answer)
{
  cudnnBackendDescriptor_t engine = NULL;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t got = 0;
  DL_TRY(new_desc(g, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
  DL_TRY_CUDNN(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                       &engine));
  DL_TRY_CUDNN(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got, notes));
  *answer = false;
  for (int64_t i = 0; i < got; i++)
    *answer = *answer || notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
  return 0;
}

/* Finalizes the graph, asks heuristics mode A for engine configs and keeps
 * the first whose plan finalizes, which is where cuDNN compiles its
 * kernel. If asked, it looks among the deterministic ones only. It plans
 * for the device of `handle`, or with handle NULL for the one `props`
 * describes. Returns 0, or DL_CUDNN_BASE + the last config's status, which
 * is NOT_SUPPORTED if there was none. */
static int plan_graph(sdpa_graph *g, bool deterministic, cudnnHandle_t handle, cudnnBackendDescriptor_t props)
{
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  cudnnBackendDescriptor_t graph = NULL, heur = NULL, cfgs[MAX_DESCS / 8] = {NULL};
  int64_t available = 0, got = 0;
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  DL_TRY(new_desc(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops,
                                       g->ops));
  if (handle)
    DL_TRY_CUDNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  DL_TRY_PLAN(cudnnBackendFinalize(graph));
  DL_TRY(new_desc(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  DL_TRY(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  if (props)
    DL_TRY(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, props));
  DL_TRY_PLAN(cudnnBackendFinalize(heur));
  DL_TRY_PLAN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                      &available, NULL));
  if (available > (int64_t)(sizeof cfgs / sizeof cfgs[0]))
    available = sizeof cfgs / sizeof cfgs[0];
  for (int64_t i = 0; i < available; i++)
    DL_TRY(new_desc(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
  DL_TRY_PLAN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, available,
                                      &got, cfgs));
  g->configs = 0;
  for (int64_t i = 0; i < got; i++) { /* the usable configs, kept in cfgs[0..configs) */
    bool skip = false;
    if (deterministic)
      DL_TRY(nondeterministic(g, cfgs[i], &skip));
    if (!skip)
      cfgs[g->configs++] = cfgs[i];
  }
  for (int i = 0; i < g->configs; i++) {
    cudnnBackendDescriptor_t plan = NULL;
    DL_TRY(new_desc(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    if (handle)
      DL_TRY_CUDNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    if (props)
      DL_TRY(set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, props));
    DL_TRY(set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i]));
    last = cudnnBackendFinalize(plan);
    if (last == CUDNN_STATUS_SUCCESS) {
      g->plan = plan;
      DL_TRY_CUDNN(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL,
                                           &g->workspace));
      return 0;
    }
    if (props && last == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
      break; /* compiled for a device that is not here: as far as a plan gets */
  }
  return DL_CUDNN_BASE + (int)last;
}

/* Builds and plans one direction; the graph is left for graph_destroy either way. */
static int plan_direction(sdpa_graph *g, int backward, const sdpa_shape *s, cudnnHandle_t handle,
                          cudnnBackendDescriptor_t props)
{
  memset(g, 0, sizeof *g);
  g->next_virtual_uid = VIRTUAL_UID;
  DL_TRY(backward ? build_bwd(g, s) : build_fwd(g, s));
  return plan_graph(g, s->deterministic, handle, props);
}

static size_t aligned(size_t bytes)
{
  return (bytes + ALIGN - 1) / ALIGN * ALIGN;
}

/* The backward's workspace: Dsum, dQacc, then cuDNN's own; forward uses its start. */
static size_t dsum_bytes(const sdpa_shape *s)
{
  return aligned((size_t)s->B * s->NH * s->N * sizeof(float));
}

static size_t dqacc_bytes(const sdpa_shape *s)
{
  return s->deterministic ? 0 : aligned((size_t)s->B * s->NH * s->N * s->HD * sizeof(float));
}

extern "C" size_t dl_sdpa_scratch_bytes(int B, int N, int NH, int HD, dl_dtype act, int deterministic)
{
  const sdpa_shape s = {B, N, NH, HD, act, deterministic != 0};
  return dsum_bytes(&s) + dqacc_bytes(&s);
}

static size_t plans_workspace(const sdpa_plans *p)
{
  const size_t bwd = dsum_bytes(&p->shape) + dqacc_bytes(&p->shape) + aligned((size_t)p->bwd.workspace);
  const size_t fwd = aligned((size_t)p->fwd.workspace);
  return fwd > bwd ? fwd : bwd;
}

static bool same_shape(const sdpa_shape *a, const sdpa_shape *b)
{
  return a->B == b->B && a->N == b->N && a->NH == b->NH && a->HD == b->HD && a->act == b->act &&
         a->deterministic == b->deterministic;
}

static void plans_free(sdpa_plans *p)
{
  if (!p)
    return;
  graph_destroy(&p->fwd);
  graph_destroy(&p->bwd);
  free(p);
}

/* The cached plans for a shape, built on first use. */
static int plans_for(dl_sdpa *sdpa, const sdpa_shape *s, sdpa_plans **out)
{
  sdpa_plans *p;
  int rc;
  for (int i = 0; i < sdpa->cached; i++)
    if (same_shape(&sdpa->cache[i]->shape, s)) {
      *out = sdpa->cache[i];
      return 0;
    }
  if (sdpa->cached == SDPA_CACHE)
    return cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "plans_for: more attention shapes than the plan cache holds",
                      __FILE__, __LINE__);
  if (!(p = (sdpa_plans *)calloc(1, sizeof *p)))
    return (int)cudaErrorMemoryAllocation;
  p->shape = *s;
  rc = plan_direction(&p->fwd, 0, s, sdpa->handle, NULL);
  if (rc == 0)
    rc = plan_direction(&p->bwd, 1, s, sdpa->handle, NULL);
  if (rc != 0) {
    plans_free(p);
    return rc;
  }
  sdpa->cache[sdpa->cached++] = p;
  *out = p;
  return 0;
}

/* ------------------------------------------------------------ execution */

static int run_pack(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack, int n,
                    int64_t *uids, void **ptrs, void *workspace, cudaStream_t stream)
{
  DL_TRY_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
  DL_TRY_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  DL_TRY_CUDNN(cudnnBackendFinalize(pack));
  DL_TRY_CUDNN(cudnnSetStream(handle, stream));
  DL_TRY_CUDNN(cudnnBackendExecute(handle, plan, pack));
  return 0;
}

/* A variant pack per call, as cudnn-frontend builds one per execute. The
 * pointers change from layer to layer, and making one costs about 1 us of
 * host time, against attention kernels of milliseconds. That covers
 * create, three attributes, finalize and destroy, with cuDNN 9.19 on the
 * CI machine's CPU. A replayed CUDA graph makes none. */
static int execute(cudnnHandle_t handle, const sdpa_graph *g, int n, int64_t *uids, void **ptrs, void *workspace,
                   cudaStream_t stream)
{
  cudnnBackendDescriptor_t pack;
  int rc;
  DL_TRY_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  rc = run_pack(handle, g->plan, pack, n, uids, ptrs, workspace, stream);
  cudnnBackendDestroyDescriptor(pack);
  return rc;
}

/* ------------------------------------------------------------ API */

extern "C" int dl_sdpa_create(dl_sdpa **out)
{
  dl_sdpa *sdpa = (dl_sdpa *)calloc(1, sizeof(dl_sdpa));
  *out = sdpa;
  if (!sdpa)
    return (int)cudaErrorMemoryAllocation;
  if (cudnnGetVersion() < (size_t)CUDNN_VERSION) { /* loaded: an older libcudnn than the headers built against */
    fprintf(stderr, "%s:%d: cuDNN %zu is loaded, this program was built against %d: put cuDNN %d or later first "
            "on the library path\n", __FILE__, __LINE__, cudnnGetVersion(), CUDNN_VERSION, CUDNN_VERSION);
    return DL_CUDNN_BASE + (int)CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH;
  }
  DL_TRY_CUDNN(cudnnCreate(&sdpa->handle));
  return 0;
}

extern "C" void dl_sdpa_destroy(dl_sdpa *sdpa)
{
  if (!sdpa)
    return;
  for (int i = 0; i < sdpa->cached; i++)
    plans_free(sdpa->cache[i]);
  if (sdpa->handle)
    cudnnDestroy(sdpa->handle);
  free(sdpa);
}

extern "C" void dl_sdpa_version(char *text, size_t size)
{
  const size_t version = cudnnGetVersion(); /* MAJOR * 10000 + MINOR * 100 + PATCH since cuDNN 9 */
  snprintf(text, size, "%zu.%zu.%zu", version / 10000, version % 10000 / 100, version % 100);
}

extern "C" void dl_sdpa_set_deterministic(dl_sdpa *sdpa, int deterministic)
{
  sdpa->deterministic = deterministic != 0;
}

extern "C" int dl_sdpa_unsupported(int status)
{
  return status >= DL_CUDNN_BASE && unsupported((cudnnStatus_t)(status - DL_CUDNN_BASE));
}

extern "C" int dl_sdpa_plan(dl_sdpa *sdpa, int B, int N, int NH, int HD, dl_dtype act, size_t *workspace_bytes)
{
  const sdpa_shape s = {B, N, NH, HD, act, sdpa->deterministic};
  sdpa_plans *p;
  if (N % 128 != 0 && cudnnGetVersion() < CUDNN_SDPA_BWD_ANY_LENGTH) {
    fprintf(stderr, "%s:%d: cuDNN %zu's SDPA backward reads out of bounds for %d tokens (not a multiple of 128): "
            "put cuDNN 9.15.1 or later on the library path\n", __FILE__, __LINE__, cudnnGetVersion(), N);
    return DL_CUDNN_BASE + (int)CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH; /* the installation's, not the shape's */
  }
  DL_TRY(plans_for(sdpa, &s, &p));
  *workspace_bytes = plans_workspace(p);
  return 0;
}

extern "C" int dl_sdpa_fwd(dl_sdpa *sdpa, void *workspace, void *o, float *lse, const void *q, const void *k,
                           const void *v, int B, int N, int NH, int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const sdpa_shape shape = {B, N, NH, HD, act, sdpa->deterministic};
  sdpa_plans *p;
  int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE};
  void *ptrs[] = {(void *)q, (void *)k, (void *)v, o, lse, &scale};
  DL_TRY(plans_for(sdpa, &shape, &p));
  return execute(sdpa->handle, &p->fwd, 6, uids, ptrs, workspace, s);
}

extern "C" int dl_sdpa_bwd(dl_sdpa *sdpa, void *workspace, void *dq, void *dk, void *dv, const void *dout,
                           const void *q, const void *k, const void *v, const void *o, const float *lse, int B, int N,
                           int NH, int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const sdpa_shape shape = {B, N, NH, HD, act, sdpa->deterministic};
  float one = 1.0f;
  sdpa_plans *p;
  char *dsum = (char *)workspace, *dqacc = dsum + dsum_bytes(&shape), *own = dqacc + dqacc_bytes(&shape);
  /* the accumulator last: a deterministic plan has none */
  int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_DO, UID_STATS, UID_SCALE, UID_ONE, UID_DQ, UID_DK, UID_DV,
                    UID_DSUM, UID_DQACC};
  void *ptrs[] = {(void *)q, (void *)k, (void *)v, (void *)o, (void *)dout, (void *)lse, &scale, &one, dq, dk, dv,
                  dsum, dqacc};
  const int without_dqacc = (int)(sizeof uids / sizeof uids[0]) - 1;
  DL_TRY(plans_for(sdpa, &shape, &p));
  if (shape.deterministic)
    return execute(sdpa->handle, &p->bwd, without_dqacc, uids, ptrs, own, s);
  /* The accumulator starts at zero every call. Whether cuDNN 9.6 or later clears it is unconfirmed. */
  if (cudaMemsetAsync(dqacc, 0, dqacc_bytes(&shape), s) != cudaSuccess)
    return (int)cudaGetLastError();
  return execute(sdpa->handle, &p->bwd, 13, uids, ptrs, own, s);
}

/* ------------------------------------------------------------ GPU-less check */

static int set_props(cudnnBackendDescriptor_t props, const char *json)
{
  DL_TRY_CUDNN(cudnnBackendSetAttribute(props, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                       (int64_t)strlen(json), json));
  DL_TRY_CUDNN(cudnnBackendFinalize(props));
  return 0;
}

static int check_directions(cudnnBackendDescriptor_t props, const sdpa_shape *s, dl_sdpa_check_result *out)
{
  for (int backward = 0; backward < 2; backward++) {
    sdpa_graph g;
    const int rc = plan_direction(&g, backward, s, NULL, props);
    out->configs[backward] = g.configs;
    /* with the stub driver a compiled plan stops at loading its kernel */
    out->compiled[backward] = rc == 0 || rc == DL_CUDNN_BASE + CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
    out->status[backward] = rc;
    graph_destroy(&g);
  }
  return 0;
}

extern "C" int dl_sdpa_check(const char *props_json, int B, int N, int NH, int HD, dl_dtype act, int deterministic,
                             dl_sdpa_check_result *out)
{
  const sdpa_shape s = {B, N, NH, HD, act, deterministic != 0};
  cudnnBackendDescriptor_t props;
  int rc;
  memset(out, 0, sizeof *out);
  DL_TRY_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &props));
  rc = set_props(props, props_json);
  if (rc == 0)
    rc = check_directions(props, &s, out);
  cudnnBackendDestroyDescriptor(props);
  return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/preflight_measure.c: the pre-flight's measuring part,
 * what each rank finds for preflight.h's rank_report. That is its CPU
 * binding against the launcher's; its GPU and peer access, a SKIP on a CPU
 * rank; its NCCL-relevant settings, which are the NCCL_* and UCX_*
 * variables, the NCCL version and the node's HCAs; an allreduce on its tp
 * and dp groups against the figure its link should give; and a short GEMM.
 * The allreduce's figure is bus bandwidth as nccl-tests computes it,
 * algbw x 2(n-1)/n. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#include "libdlpar/preflight/preflight.h"
#include "common/text.h"
#include "common/topo.h"
#include "libdlpar/preflight/links.h"

extern char **environ;

#define ALLREDUCE_FLOATS (256 * 1024) /* 1 MiB */
#define ALLREDUCE_ITERS 5
#define CPU_GEMM_N 128
#define CPU_GEMM_REPS 48
#define GPU_GEMM_N 4096
#define GPU_GEMM_REPS 20
/* An allreduce passes at DLPAR_CHECK_BUSBW_FRACTION x its group's link, unless
 * DLPAR_CHECK_MIN_BUSBW gives the figure. A 1 MiB allreduce reaches a few
 * percent of a GPU link, 20 GB/s on NVLink4's 450. On CPUs the fraction is
 * a floor that says the path works, since MPI on shared cores is no link
 * test. */
#define DEFAULT_FRACTION_GPU 0.04
#define DEFAULT_FRACTION_CPU 0.0001
/* Links no source knows, in GB/s one way, shown as "default". */
#define DEFAULT_LINK_MEMORY 10.0 /* shared memory between CPU ranks */
#define DEFAULT_LINK_GPU 31.5    /* PCIe 4 x16 */
#define DEFAULT_LINK_NIC 12.5    /* 100 Gb/s */

#ifdef HAVE_CUDA
/* Per-generation figures by compute capability, in GB/s one way: NVLink per
 * GPU, as links x rate, and a PCIe x16 link. The row taken is the one with
 * the highest sm not above the GPU's. They are used where hwloc knows
 * neither. */
static const struct {
  int sm;
  double nvlink, pcie;
} GPU_GENERATIONS[] = {
    {70, 150.0, 15.75}, /* V100: NVLink2 6 x 25, PCIe 3 */
    {80, 300.0, 31.5},  /* A100: NVLink3 12 x 25, PCIe 4 */
    {90, 450.0, 63.0},  /* H100, H200, GH200: NVLink4 18 x 25, PCIe 5 */
    {100, 900.0, 63.0}, /* B200, GB200: NVLink5 18 x 50, PCIe 5 */
};
#endif

/* ------------------------------------------------------------ this rank */

static int compare_strings(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The node's HCAs from /sys/class/infiniband, sorted and comma-separated. */
static void hca_list(char *out, size_t len)
{
  char *names[64];
  int count = 0;
  size_t used = 0;
  DIR *dir = opendir("/sys/class/infiniband");
  struct dirent *entry;
  out[0] = '\0';
  while (dir && count < 64 && (entry = readdir(dir)))
    if (entry->d_name[0] != '.')
      names[count++] = strdup(entry->d_name);
  if (dir)
    closedir(dir);
  qsort(names, (size_t)count, sizeof(char *), compare_strings);
  for (int i = 0; i < count; i++) {
    if (names[i] && used < len)
      used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", names[i]);
    free(names[i]);
  }
}

static void nccl_version(char *out, size_t len)
{
#ifdef HAVE_CUDA
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) {
    snprintf(out, len, "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
    return;
  }
#endif
  snprintf(out, len, "none");
}

/* NCCL_* and UCX_* but UCX_NET_DEVICES, which is each rank's own NIC and
 * has the NIC column, then the NCCL version and the HCA list, as sorted
 * "K=V" lines. */
static void collect_settings(char *out, size_t len)
{
  const char *lines[256];
  char version[32], hcas[512], version_line[64], hca_line[600];
  int count = 0;
  size_t used = 0;
  for (char **var = environ; *var && count < 254; var++)
    if ((strncmp(*var, "NCCL_", 5) == 0 || strncmp(*var, "UCX_", 4) == 0) &&
        strncmp(*var, "UCX_NET_DEVICES=", 16) != 0)
      lines[count++] = *var;
  nccl_version(version, sizeof(version));
  hca_list(hcas, sizeof(hcas));
  snprintf(version_line, sizeof(version_line), "(NCCL version)=%s", version);
  snprintf(hca_line, sizeof(hca_line), "(HCAs)=%s", hcas[0] ? hcas : "none");
  lines[count++] = version_line;
  lines[count++] = hca_line;
  qsort(lines, (size_t)count, sizeof(char *), compare_strings);
  out[0] = '\0';
  for (int i = 0; i < count && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s\n", lines[i]);
}

/* The CPUs this rank runs on are the launcher's, or SKIP when it bound none. */
static double check_binding(const dlpar_ctx *ctx, char *cpus, size_t len)
{
  unsigned char wanted[CPU_SETSIZE];
  cpu_set_t set;
  snprintf(cpus, len, "%s", ctx->env.binding.cpus[0] ? ctx->env.binding.cpus : "unbound");
  if (!ctx->env.binding.cpus[0])
    return CHECK_SKIP;
  if (dlpar_parse_cpu_list(ctx->env.binding.cpus, wanted, CPU_SETSIZE) <= 0 ||
      sched_getaffinity(0, sizeof(set), &set) != 0)
    return CHECK_FAIL;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (!wanted[cpu] != !CPU_ISSET(cpu, &set))
      return CHECK_FAIL;
  return CHECK_OK;
}

#ifdef HAVE_CUDA
/* The device the launcher chose is the current one, and every other visible
 * GPU, which is the step's GPUs of this node, is reachable peer to peer. */
static void check_gpu(const dlpar_ctx *ctx, rank_report *report)
{
  int current = -1, devices = 0, reachable = 0;
  struct cudaDeviceProp prop;
  report->gpu = cudaGetDevice(&current) == cudaSuccess && current == ctx->info.device &&
                cudaGetDeviceProperties(&prop, current) == cudaSuccess ? CHECK_OK : CHECK_FAIL;
  snprintf(report->device, sizeof(report->device), "gpu %d%s", ctx->info.device,
           report->gpu == CHECK_OK ? "" : " (not current)");
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
    report->peer = CHECK_SKIP;
    return;
  }
  for (int peer = 0; peer < devices; peer++) {
    int can = 0;
    if (peer != current && cudaDeviceCanAccessPeer(&can, current, peer) == cudaSuccess && can)
      reachable++;
  }
  report->peer = reachable == devices - 1 ? CHECK_OK : CHECK_FAIL;
}
#endif

static void check_device(const dlpar_ctx *ctx, rank_report *report)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    check_gpu(ctx, report);
    return;
  }
#else
  (void)ctx;
#endif
  snprintf(report->device, sizeof(report->device), "cpu");
  report->gpu = report->peer = CHECK_SKIP;
}

/* ------------------------------------------------------------ allreduce */

/* A buffer the backend's collectives take: device memory on NCCL. */
static int buffer_alloc(dlpar_ctx *ctx, size_t bytes, float **buf)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    cudaError_t err = cudaMalloc((void **)buf, bytes);
    if (err == cudaSuccess)
      err = cudaMemset(*buf, 0, bytes);
    if (err != cudaSuccess)
      return dlpar_fail(ctx, DLPAR_ERR_CUDA, "%s:%d: check buffer: %s", __FILE__, __LINE__, cudaGetErrorString(err));
    return DLPAR_OK;
  }
#endif
  if (!(*buf = calloc(1, bytes)))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  return DLPAR_OK;
}

static void buffer_free(const dlpar_ctx *ctx, float *buf)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    cudaFree(buf);
    return;
  }
#else
  (void)ctx;
#endif
  free(buf);
}

/* The device has done the queued collectives. There is nothing to wait for on MPI. */
static int synchronize_device(dlpar_ctx *ctx)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
      return dlpar_fail(ctx, DLPAR_ERR_CUDA, "%s:%d: cudaDeviceSynchronize: %s", __FILE__, __LINE__,
                        cudaGetErrorString(err));
  }
#else
  (void)ctx;
#endif
  return DLPAR_OK;
}

/* Whether every rank of the group is on this rank's node. */
static bool group_on_node(const dlpar_ctx *ctx, dlpar_group group)
{
  int ranks[DLPAR_GRID_MAX];
  const int n = dlpar_grid_members(&ctx->grid, group, ctx->info.rank, ranks);
  for (int i = 0; i < n; i++)
    if (ctx->rank_node[ranks[i]] != ctx->info.node)
      return false;
  return true;
}

#ifdef HAVE_CUDA
/* Whether the GPU reaches a peer with native atomics, which NVLink does and
 * PCIe does not. It is CUDA's own sign of an NVLink path where hwloc has
 * no NVML. */
static bool gpu_nvlinked(int device)
{
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess)
    return false;
  for (int peer = 0; peer < devices; peer++) {
    int atomics = 0;
    if (peer != device &&
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device, peer) == cudaSuccess &&
        atomics)
      return true;
  }
  return false;
}

/* hwloc's NVLink figure, else the generation table's when CUDA sees
 * NVLink, else hwloc's PCIe link, else the table's. */
static void gpu_link(const dlpar_ctx *ctx, const dlpar_link *nvlink, const dlpar_link *pcie, dlpar_link *link)
{
  struct cudaDeviceProp prop;
  char source[sizeof(link->source)];
  int row = -1, sm = 0;
  if (nvlink->gbs > 0) {
    *link = *nvlink;
    return;
  }
  if (cudaGetDeviceProperties(&prop, ctx->info.device) == cudaSuccess)
    sm = prop.major * 10 + prop.minor;
  for (int i = 0; i < (int)(sizeof(GPU_GENERATIONS) / sizeof(GPU_GENERATIONS[0])); i++)
    if (GPU_GENERATIONS[i].sm <= sm)
      row = i;
  if (row >= 0 && gpu_nvlinked(ctx->info.device)) {
    snprintf(source, sizeof(source), "NVLink sm%d table", GPU_GENERATIONS[row].sm);
    dlpar_link_set(link, GPU_GENERATIONS[row].nvlink, source);
  } else if (pcie->gbs > 0) {
    *link = *pcie;
  } else if (row >= 0) {
    snprintf(source, sizeof(source), "PCIe sm%d table", GPU_GENERATIONS[row].sm);
    dlpar_link_set(link, GPU_GENERATIONS[row].pcie, source);
  } else {
    dlpar_link_set(link, DEFAULT_LINK_GPU, "GPU default");
  }
}
#endif

/* The link inside this node: NVLink or PCIe between GPUs, or shared memory
 * between CPU ranks. hwloc reads $DLPAR_HWLOC_XML where set. */
static void link_in_node(const dlpar_ctx *ctx, dlpar_link *link)
{
  dlpar_link nvlink, pcie, memory;
  char busid[32] = "";
  dlpar_error err;
  const char *xml = getenv("DLPAR_HWLOC_XML");
  bool gpu = false;
#ifdef HAVE_CUDA
  gpu = ctx->info.backend == DLPAR_BACKEND_NCCL &&
        cudaDeviceGetPCIBusId(busid, (int)sizeof(busid), ctx->info.device) == cudaSuccess;
#else
  (void)ctx;
#endif
  if (dlpar_links_in_node(xml && *xml ? xml : NULL, gpu ? busid : NULL, &nvlink, &pcie, &memory, &err) != DLPAR_OK)
    memory.gbs = 0; /* every figure unknown: the defaults below */
#ifdef HAVE_CUDA
  if (gpu) {
    gpu_link(ctx, &nvlink, &pcie, link);
    return;
  }
#endif
  if (memory.gbs > 0)
    *link = memory;
  else
    dlpar_link_set(link, DEFAULT_LINK_MEMORY, "memory default");
}

/* The HCA the topology module gave the rank, else the socket interface. */
static void link_between_nodes(const dlpar_ctx *ctx, dlpar_link *link)
{
  dlpar_link_nic(ctx->env.binding.nic, getenv("NCCL_SOCKET_IFNAME"), link);
  if (link->gbs <= 0)
    dlpar_link_set(link, DEFAULT_LINK_NIC, "NIC default");
}

/* The group's link into link_text, and the busbw that passes, which is
 * DLPAR_CHECK_MIN_BUSBW, else DLPAR_CHECK_BUSBW_FRACTION x the link.
 * in_node is this node's link. The first group that stays on the node
 * looks it up, loading hwloc's topology, and gbs is < 0 until then. */
static int expected_busbw(dlpar_ctx *ctx, dlpar_group group, dlpar_link *in_node, double *expected,
                          char *link_text, size_t len)
{
  double fraction = ctx->info.backend == DLPAR_BACKEND_NCCL ? DEFAULT_FRACTION_GPU : DEFAULT_FRACTION_CPU;
  dlpar_link link = {.gbs = 0};
  if (dlpar_group_size(ctx, group) == 1)
    snprintf(link_text, len, "-");
  else {
    if (group_on_node(ctx, group)) {
      if (in_node->gbs < 0)
        link_in_node(ctx, in_node);
      link = *in_node;
    } else
      link_between_nodes(ctx, &link);
    snprintf(link_text, len, "%.3g %s", link.gbs, link.source);
  }
  DLPAR_TRY(dlpar_env_positive(ctx, "DLPAR_CHECK_BUSBW_FRACTION", "a factor", 1e6, fraction, &fraction));
  *expected = fraction * link.gbs;
  return dlpar_env_positive(ctx, "DLPAR_CHECK_MIN_BUSBW", "a rate in GB/s", 1e6, *expected > 0 ? *expected : 10,
                            expected);
}

/* Bus bandwidth in GB/s of a 1 MiB float allreduce on the group, after one warm-up. */
static int time_allreduce(dlpar_ctx *ctx, dlpar_group group, float *buf, double *busbw)
{
  const int n = dlpar_group_size(ctx, group);
  const double bytes = sizeof(float) * (double)ALLREDUCE_FLOATS;
  double start;
  *busbw = -1;
  if (n == 1)
    return DLPAR_OK;
  DLPAR_TRY(ctx->backend->allreduce(ctx, group, buf, ALLREDUCE_FLOATS, DLPAR_FLOAT32, DLPAR_SUM, NULL));
  DLPAR_TRY(synchronize_device(ctx));
  DLPAR_TRY(ctx->backend->barrier(ctx, group));
  start = dlpar_now();
  for (int i = 0; i < ALLREDUCE_ITERS; i++)
    DLPAR_TRY(ctx->backend->allreduce(ctx, group, buf, ALLREDUCE_FLOATS, DLPAR_FLOAT32, DLPAR_SUM, NULL));
  DLPAR_TRY(synchronize_device(ctx));
  *busbw = bytes * ALLREDUCE_ITERS / (dlpar_now() - start) / 1e9 * 2.0 * (n - 1) / n;
  return DLPAR_OK;
}

static int check_allreduce(dlpar_ctx *ctx, rank_report *report)
{
  const dlpar_group groups[2] = {DLPAR_GROUP_TP, DLPAR_GROUP_DP};
  dlpar_link in_node = {.gbs = -1};
  float *buf;
  int rc = buffer_alloc(ctx, sizeof(float) * ALLREDUCE_FLOATS, &buf);
  for (int g = 0; g < 2 && rc == DLPAR_OK; g++)
    if ((rc = expected_busbw(ctx, groups[g], &in_node, &report->busbw_expected[g], report->link[g],
                             sizeof(report->link[g]))) == DLPAR_OK)
      rc = time_allreduce(ctx, groups[g], buf, &report->busbw[g]);
  if (buf)
    buffer_free(ctx, buf);
  return rc;
}

/* ------------------------------------------------------------ GEMM */

/* C += A B, n x n, row-major, the i-k-j order a compiler vectorises. */
static void cpu_gemm(int n, const float *a, const float *b, float *c)
{
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++) {
      const float aik = a[i * n + k];
      for (int j = 0; j < n; j++)
        c[i * n + j] += aik * b[k * n + j];
    }
}

static int gemm_rate_cpu(dlpar_ctx *ctx, double *gflops)
{
  const size_t elems = (size_t)CPU_GEMM_N * CPU_GEMM_N;
  float *m = malloc(3 * elems * sizeof(float));
  double start;
  if (!m)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  for (size_t i = 0; i < 3 * elems; i++)
    m[i] = i < 2 * elems ? (float)(i % 7) * 0.125f : 0.0f;
  start = dlpar_now();
  for (int rep = 0; rep < CPU_GEMM_REPS; rep++)
    cpu_gemm(CPU_GEMM_N, m, m + elems, m + 2 * elems);
  *gflops = 2.0 * CPU_GEMM_N * CPU_GEMM_N * CPU_GEMM_N * CPU_GEMM_REPS / (dlpar_now() - start) / 1e9;
  free(m);
  return DLPAR_OK;
}

#ifdef HAVE_CUDA
/* cuBLAS is loaded when the GEMM check first runs, not linked. Loading it
 * costs about 0.45 s of CPU per process, since it and cuBLASLt are
 * hundreds of MB, and every program linked with libdlpar would pay that at
 * start, the ranks of dlpar's Python module on a loaded node included. */
typedef struct {
  void *lib;
  cublasStatus_t (*create)(cublasHandle_t *handle);
  cublasStatus_t (*destroy)(cublasHandle_t handle);
  cublasStatus_t (*sgemm)(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                          const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                          float *c, int ldc);
  const char *(*status_string)(cublasStatus_t status);
} cublas_calls;

static int load_cublas(dlpar_ctx *ctx, cublas_calls *calls)
{
  char name[32];
  snprintf(name, sizeof(name), "libcublas.so.%d", CUBLAS_VER_MAJOR);
  if (!(calls->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
    return dlpar_fail(ctx, DLPAR_ERR_CUDA, "--dl-check's GEMM: cannot load %s: %s (put CUDA's libraries on the "
                      "library path)", name, dlerror());
  *(void **)&calls->create = dlsym(calls->lib, "cublasCreate_v2");
  *(void **)&calls->destroy = dlsym(calls->lib, "cublasDestroy_v2");
  *(void **)&calls->sgemm = dlsym(calls->lib, "cublasSgemm_v2");
  *(void **)&calls->status_string = dlsym(calls->lib, "cublasGetStatusString");
  if (calls->create && calls->destroy && calls->sgemm && calls->status_string)
    return DLPAR_OK;
  dlclose(calls->lib);
  calls->lib = NULL;
  return dlpar_fail(ctx, DLPAR_ERR_CUDA, "--dl-check's GEMM: %s lacks cublasCreate_v2, cublasSgemm_v2 or "
                    "cublasGetStatusString (CUDA %d's cuBLAS expected)", name, CUBLAS_VER_MAJOR);
}

/* On a cuBLAS error, dlpar_fail records file:line, the call and cuBLAS's
 * string, from calls, the loaded cublas_calls, in ctx. The status is kept
 * in rc, and control goes on to label. */
#define CUBLAS_TRY_GOTO(call, calls, ctx, rc, label)                                                \
  do {                                                                                              \
    cublasStatus_t st_ = (call);                                                                    \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      (rc) = dlpar_fail(ctx, DLPAR_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,            \
                        (calls).status_string(st_));                                                \
      goto label;                                                                                   \
    }                                                                                               \
  } while (0)

/* An fp32 GEMM on this rank's GPU with cuBLAS, after one warm-up. */
static int gemm_rate_gpu(dlpar_ctx *ctx, double *gflops)
{
  const size_t elems = (size_t)GPU_GEMM_N * GPU_GEMM_N;
  const float one = 1.0f, zero = 0.0f;
  cublas_calls cublas = {0};
  cublasHandle_t handle = NULL;
  float *m = NULL;
  double start = 0;
  int rc;
  DLPAR_TRY_GOTO(load_cublas(ctx, &cublas), rc, done);
  DLPAR_TRY_GOTO(buffer_alloc(ctx, 3 * elems * sizeof(float), &m), rc, done);
  CUBLAS_TRY_GOTO(cublas.create(&handle), cublas, ctx, rc, done);
  for (int rep = 0; rep <= GPU_GEMM_REPS; rep++) {
    if (rep == 1) {
      DLPAR_TRY_GOTO(synchronize_device(ctx), rc, done);
      start = dlpar_now();
    }
    CUBLAS_TRY_GOTO(cublas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, GPU_GEMM_N, GPU_GEMM_N, GPU_GEMM_N, &one, m,
                                 GPU_GEMM_N, m + elems, GPU_GEMM_N, &zero, m + 2 * elems, GPU_GEMM_N),
                    cublas, ctx, rc, done);
  }
  if ((rc = synchronize_device(ctx)) == DLPAR_OK)
    *gflops = 2.0 * GPU_GEMM_N * GPU_GEMM_N * (double)GPU_GEMM_N * GPU_GEMM_REPS / (dlpar_now() - start) / 1e9;
done:
  if (handle)
    cublas.destroy(handle);
  if (m)
    buffer_free(ctx, m);
  if (cublas.lib)
    dlclose(cublas.lib);
  return rc;
}
#endif

/* Every rank starts together, so a slow node is slow against its peers. */
static int check_gemm(dlpar_ctx *ctx, rank_report *report)
{
  DLPAR_TRY(dlpar_barrier(ctx, DLPAR_WORLD));
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL)
    return gemm_rate_gpu(ctx, &report->gemm);
#endif
  return gemm_rate_cpu(ctx, &report->gemm);
}

int dlpar_preflight_measure(dlpar_ctx *ctx, rank_report *report)
{
  memset(report, 0, sizeof(*report));
  report->binding = check_binding(ctx, report->cpus, sizeof(report->cpus));
  snprintf(report->nic, sizeof(report->nic), "%s", ctx->env.binding.nic[0] ? ctx->env.binding.nic : "-");
  check_device(ctx, report);
  collect_settings(report->settings, sizeof(report->settings));
  DLPAR_TRY(check_allreduce(ctx, report));
  return check_gemm(ctx, report);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_blas_threads.c: the CPU ops' thread policy holds for
 * every caller, whatever the program set before: after the first call of
 * an op that runs BLAS (each of them first in a process of its own, as a
 * GPU test's CPU reference or a bench is), OpenBLAS's own pool runs one
 * thread and OpenMP keeps the threads it had, for the ops' loops. Times
 * nothing. */
#include "config.h"

#include <cblas.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/cpu/ops.h"
#include "tests/unit/check.h"

enum { T = 8, C = 4, OC = 6, N = 5, NH = 2, HD = 4, THREADS = 3 };

static float f_inp[T * C], f_w[OC * C], f_out[T * OC], f_dout[T * OC], f_dinp[T * C], f_dw[OC * C];
static float q[N * NH * HD], k[N * NH * HD], v[N * NH * HD], o[N * NH * HD], lse[NH * N];
static float dq[N * NH * HD], dk[N * NH * HD], dv[N * NH * HD];
static double d_inp[T * C], d_w[OC * C], d_out[T * OC];

static void run_matmul_fwd_f32(void)
{
  matmul_fwd_f32(f_out, f_inp, f_w, NULL, T, C, OC);
}

static void run_matmul_bwd_f32(void)
{
  matmul_bwd_f32(f_dinp, f_dw, NULL, f_dout, f_inp, f_w, T, C, OC);
}

static void run_attention_fwd_f32(void)
{
  attention_fwd_f32(o, lse, q, k, v, 1, N, NH, HD, 0.5f);
}

static void run_attention_bwd_f32(void)
{
  attention_bwd_f32(dq, dk, dv, o, q, k, v, o, lse, 1, N, NH, HD, 0.5f);
}

static void run_matmul_fwd_f64(void)
{
  matmul_fwd_f64(d_out, d_inp, d_w, NULL, T, C, OC);
}

/* In the child: the program's own settings, the op, the policy. */
static int child(void (*op)(void))
{
  omp_set_num_threads(THREADS);
  openblas_set_num_threads(THREADS);
  CHECK_INT(openblas_get_num_threads(), THREADS); /* else the check below could not fail */
  op();
  if (openblas_get_parallel() == OPENBLAS_THREAD)
    CHECK_INT(openblas_get_num_threads(), 1);
  CHECK_INT(omp_get_max_threads(), THREADS);
  return check_failures ? 1 : 0;
}

int main(void)
{
  static const struct {
    const char *name;
    void (*op)(void);
  } ops[] = {{"matmul_fwd_f32", run_matmul_fwd_f32}, {"matmul_bwd_f32", run_matmul_bwd_f32},
             {"attention_fwd_f32", run_attention_fwd_f32}, {"attention_bwd_f32", run_attention_bwd_f32},
             {"matmul_fwd_f64", run_matmul_fwd_f64}};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    int status = 0;
    pid_t pid;
    fflush(stdout);
    if ((pid = fork()) == 0)
      _exit(child(ops[i].op));
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    check_count++;
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      printf("ok: %s: OpenBLAS on one thread after its first call, OpenMP's %d threads kept\n", ops[i].name,
             THREADS);
    } else {
      check_failures++;
      fprintf(stderr, "FAILED: %s: the thread policy did not hold (its lines above)\n", ops[i].name);
    }
  }
  return check_report("test_blas_threads");
}

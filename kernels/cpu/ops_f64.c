/* kernels/cpu/ops_f64.c: the CPU reference ops in double, for the gradient tests. */
#include "config.h"

#include "kernels/cpu/ops.h"

#define real double
#define SFX f64
#define GEMM cblas_dgemm
#define EXP exp
#define ERF erf
#include "kernels/cpu/ops_body.h"

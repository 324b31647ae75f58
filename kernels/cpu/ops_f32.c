/* kernels/cpu/ops_f32.c: the CPU reference ops in float, what the trainer runs. */
#include "config.h"

#include "kernels/cpu/ops.h"

#define real float
#define SFX f32
#define GEMM cblas_sgemm
#define EXP expf
#define ERF erff
#include "kernels/cpu/ops_body.h"

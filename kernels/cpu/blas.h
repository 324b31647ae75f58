/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cpu/blas.h: OpenBLAS's cblas.h, for the files that call it.
 * Newer OpenBLAS (Debian testing's), built with GCC 13 or later, defines
 * __STDC_WANT_IEC_60559_TYPES_EXT__ (empty) in openblas_config.h for its
 * _Float16 type, which config.h (AC_USE_SYSTEM_EXTENSIONS) defines as 1:
 * the same request to the C library spelt another way, which the compiler
 * warns of as a redefinition. Dropped here; cblas.h defines it again. */
#ifndef DLPAR_KERNELS_CPU_BLAS_H
#define DLPAR_KERNELS_CPU_BLAS_H

#undef __STDC_WANT_IEC_60559_TYPES_EXT__
#include <cblas.h>

#endif

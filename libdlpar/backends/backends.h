/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/backends/backends.h: the backends init.c chooses from, each a
 * table of the same collectives (dlpar_backend_ops, internal.h). */
#ifndef DLPAR_LIBDLPAR_BACKENDS_H
#define DLPAR_LIBDLPAR_BACKENDS_H

#include "libdlpar/internal.h"

extern const dlpar_backend_ops dlpar_backend_self;
extern const dlpar_backend_ops dlpar_backend_mpi;
/* backends/backend_mpi.c: starts MPI where it must precede PMIx_Init (Open MPI 5;
 * elsewhere nothing) and makes the MPI backend the one that serves. */
int dlpar_mpi_start_early(dlpar_ctx *ctx);
#ifdef HAVE_CUDA
extern const dlpar_backend_ops dlpar_backend_nccl;
#endif

#endif

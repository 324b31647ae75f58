/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/ncclid.c: making an NCCL unique id, and how many
 * bootstrap roots, each with an id, a group gets and which of its ranks
 * hold them. ncclGetUniqueId is the only NCCL call that works without a
 * GPU, because it only opens a bootstrap socket, so the PMIx exchange of
 * real ids is tested on machines without GPUs too. A group of one rank
 * makes its own id. Each group gets its own id, because an id's bootstrap
 * root serves one communicator. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <nccl.h>
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
#define HAVE_NCCL_INIT_SCALABLE 1 /* ncclCommInitRankScalable */
#endif
#endif

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "common/text.h"

int dlpar_nccl_make_id(dlpar_ctx *ctx, unsigned char id[DLPAR_NCCL_ID_BYTES])
{
#ifdef HAVE_CUDA
  ncclUniqueId unique;
  ncclResult_t rc;
  _Static_assert(sizeof(unique) == DLPAR_NCCL_ID_BYTES, "ncclUniqueId size");
  rc = ncclGetUniqueId(&unique);
  if (rc != ncclSuccess)
    return dlpar_fail(ctx, DLPAR_ERR_NCCL, "ncclGetUniqueId: %s %s (NIC hint: NCCL_SOCKET_IFNAME=%s)",
                      ncclGetErrorString(rc), ncclGetLastError(NULL),
                      getenv("NCCL_SOCKET_IFNAME") ? dlpar_show(getenv("NCCL_SOCKET_IFNAME")).text : "(unset)");
  memcpy(id, &unique, DLPAR_NCCL_ID_BYTES);
  return DLPAR_OK;
#else
  (void)id;
  return dlpar_fail(ctx, DLPAR_ERR_NCCL, "NCCL ids need libdlpar built with CUDA (configure --with-cuda)");
#endif
}

int dlpar_nccl_roots(const dlpar_ctx *ctx, int size)
{
#ifdef HAVE_NCCL_INIT_SCALABLE
  const int roots = (size + ctx->ranks_per_root - 1) / ctx->ranks_per_root;
  return roots > 1 ? roots : 1;
#else
  (void)ctx;
  (void)size;
  return 1; /* no ncclCommInitRankScalable: one root */
#endif
}

/* This is NCCL's documented spread, rankHasRoot in the
 * ncclCommInitRankScalable docs. The first size % roots roots cover
 * size / roots + 1 ranks each, and the others size / roots. */
int dlpar_nccl_root_rank(int size, int roots, int index)
{
  const int per_root = size / roots, longer = size % roots;
  return index < longer ? index * (per_root + 1) : longer * (per_root + 1) + (index - longer) * per_root;
}

int dlpar_nccl_own_id(dlpar_ctx *ctx, dlpar_group_ids *ids)
{
  ids->ids = calloc(1, sizeof(dlpar_nccl_id));
  if (!ids->ids)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory for an NCCL id");
  ids->count = 1;
  return dlpar_nccl_make_id(ctx, ids->ids[0]);
}

void dlpar_nccl_ids_free(dlpar_nccl_ids *ids)
{
  for (int g = 0; g < 3; g++) {
    free(ids->group[g].ids);
    ids->group[g] = (dlpar_group_ids){NULL, 0};
  }
  ids->valid = false;
}

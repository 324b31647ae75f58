/* launcher/ncclid.c: making an NCCL unique id, the only NCCL call that
 * works without a GPU (it opens a bootstrap socket), so the PMIx exchange of
 * real ids is tested on machines without GPUs too. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <nccl.h>
#endif

#include "launcher/internal.h"

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
                      getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "(unset)");
  memcpy(id, &unique, DLPAR_NCCL_ID_BYTES);
  return DLPAR_OK;
#else
  (void)id;
  return dlpar_fail(ctx, DLPAR_ERR_NCCL, "NCCL ids need libdlpar built with CUDA (configure --with-cuda)");
#endif
}

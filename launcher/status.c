/* launcher/status.c: names of dlpar's status codes, for messages. */
#include "config.h"

#include "status.h"

const char *dlpar_status_name(int status)
{
  switch (status) {
  case DLPAR_OK: return "ok";
  case DLPAR_WARN: return "warning";
  case DLPAR_ERR_INPUT: return "bad input";
  case DLPAR_ERR_SYSTEM: return "system error";
  case DLPAR_ERR_PMIX: return "PMIx error";
  case DLPAR_ERR_MPI: return "MPI error";
  case DLPAR_ERR_NCCL: return "NCCL error";
  case DLPAR_ERR_CUDA: return "CUDA error";
  case DLPAR_ERR_TIMEOUT: return "timeout";
  case DLPAR_ERR_HDF5: return "HDF5 error";
  case DLPAR_ERR_STATE: return "wrong state";
  default: return "unknown status";
  }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/struct_layout.c: the C side of tests/unit/python_mirror.sh:
 * the size of each public struct the Python module mirrors (dlpar.h) and
 * the offset of each field, "struct.field OFFSET" a line, "struct SIZE". */
#include "config.h"
#include <stddef.h>
#include <stdio.h>
#include "include/dlpar/dlpar.h"

#define FIELD(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(type, field))

int main(void)
{
  FIELD(dlpar_info, rank);
  FIELD(dlpar_info, size);
  FIELD(dlpar_info, local_rank);
  FIELD(dlpar_info, local_size);
  FIELD(dlpar_info, node);
  FIELD(dlpar_info, nnodes);
  FIELD(dlpar_info, tp_rank);
  FIELD(dlpar_info, tp_size);
  FIELD(dlpar_info, dp_rank);
  FIELD(dlpar_info, dp_size);
  FIELD(dlpar_info, device);
  FIELD(dlpar_info, backend);
  FIELD(dlpar_info, rendezvous_seconds);
  FIELD(dlpar_info, init_seconds);
  FIELD(dlpar_info, rendezvous_timeout_s);
  FIELD(dlpar_info, collective_timeout_s);
  FIELD(dlpar_info, fatal_grace_s);
  FIELD(dlpar_info, host);
  printf("dlpar_info %zu\n", sizeof(dlpar_info));
  FIELD(dlpar_options, backend);
  FIELD(dlpar_options, rendezvous_timeout_s);
  FIELD(dlpar_options, collective_timeout_s);
  FIELD(dlpar_options, exchange_nccl_ids);
  FIELD(dlpar_options, keep_signals);
  FIELD(dlpar_options, fatal_grace_s);
  printf("dlpar_options %zu\n", sizeof(dlpar_options));
  return 0;
}

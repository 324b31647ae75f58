/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/integration/pmix_client.c: the test bed's first check, a plain PMIx
 * client run by srun. Each rank checks its rank, the job size and its local
 * rank against Slurm's variables, publishes its node name with PMIx_Put,
 * commits, joins a fence that collects data, and reads every peer's node
 * name back, comparing it with the expected layout given as argv[1]
 * ("n1,n1,n2,n2"). Exits non-zero on any mismatch. */
#include "config.h"

#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PMIX_OR_EXIT(call)                                                                   \
  do {                                                                                       \
    pmix_status_t rc_ = (call);                                                              \
    if (rc_ != PMIX_SUCCESS) {                                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, PMIx_Error_string(rc_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static long env_long(const char *name)
{
  const char *value = getenv(name);
  if (!value) {
    fprintf(stderr, "pmix_client: %s is not set (run under srun)\n", name);
    exit(1);
  }
  return strtol(value, NULL, 10);
}

static int expect(const char *what, long got, long want, int rank)
{
  if (got == want)
    return 0;
  fprintf(stderr, "pmix_client rank %d: %s is %ld, expected %ld\n", rank, what, got, want);
  return 1;
}

static unsigned get_job_u32(const pmix_proc_t *me, const char *key)
{
  pmix_proc_t job = *me;
  pmix_value_t *value = NULL;
  unsigned result;
  job.rank = PMIX_RANK_WILDCARD;
  PMIX_OR_EXIT(PMIx_Get(&job, key, NULL, 0, &value));
  result = value->data.uint32;
  PMIX_VALUE_RELEASE(value);
  return result;
}

static unsigned get_local_rank(const pmix_proc_t *me)
{
  pmix_value_t *value = NULL;
  unsigned result;
  PMIX_OR_EXIT(PMIx_Get(me, PMIX_LOCAL_RANK, NULL, 0, &value));
  result = value->data.uint16;
  PMIX_VALUE_RELEASE(value);
  return result;
}

static int check_peers(const pmix_proc_t *me, unsigned size, const char *layout)
{
  char expected[4096];
  int failures = 0;
  char *save = NULL, *node;
  snprintf(expected, sizeof(expected), "%s", layout);
  node = strtok_r(expected, ",", &save);
  for (unsigned peer = 0; peer < size; peer++, node = strtok_r(NULL, ",", &save)) {
    pmix_proc_t proc = *me;
    pmix_value_t *value = NULL;
    proc.rank = peer;
    PMIX_OR_EXIT(PMIx_Get(&proc, "test.node", NULL, 0, &value));
    if (!node || strcmp(value->data.string, node) != 0) {
      fprintf(stderr, "pmix_client rank %u: peer %u is on %s, expected %s\n", me->rank, peer,
              value->data.string, node ? node : "(no entry)");
      failures++;
    }
    PMIX_VALUE_RELEASE(value);
  }
  return failures;
}

int main(int argc, char **argv)
{
  pmix_proc_t me;
  pmix_value_t value;
  pmix_info_t collect;
  const char *node = getenv("SLURMD_NODENAME");
  bool yes = true;
  int failures = 0;
  unsigned size;
  if (argc != 2 || !node) {
    fprintf(stderr, "usage: srun pmix_client n1,n1,n2,n2 (expected node of each rank)\n");
    return 2;
  }
  PMIX_OR_EXIT(PMIx_Init(&me, NULL, 0));
  size = get_job_u32(&me, PMIX_JOB_SIZE);
  failures += expect("rank", (long)me.rank, env_long("SLURM_PROCID"), (int)me.rank);
  failures += expect("job size", (long)size, env_long("SLURM_NTASKS"), (int)me.rank);
  failures += expect("local rank", (long)get_local_rank(&me), env_long("SLURM_LOCALID"), (int)me.rank);
  PMIX_VALUE_LOAD(&value, node, PMIX_STRING);
  PMIX_OR_EXIT(PMIx_Put(PMIX_GLOBAL, "test.node", &value));
  PMIX_VALUE_DESTRUCT(&value);
  PMIX_OR_EXIT(PMIx_Commit());
  PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  PMIX_OR_EXIT(PMIx_Fence(NULL, 0, &collect, 1));
  failures += check_peers(&me, size, argv[1]);
  printf("pmix_client rank %u of %u on %s: %s\n", me.rank, size, node, failures ? "FAILED" : "ok");
  PMIX_OR_EXIT(PMIx_Finalize(NULL, 0));
  return failures ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/run_server.c: dlpar-run's PMIx server, on OpenPMIx's server API,
 * the same library the ranks use as clients, so there is no home-made
 * protocol. It serves one namespace, with every rank on this host. It
 * holds the job-level and per-rank keys a PMIx client such as libdlpar or
 * Open MPI reads, and a fence that hands the collected local data straight
 * back, since all participants are local. It forwards PMIx_Abort to the
 * supervisor through a pipe. */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <pmix.h>
#include <pmix_server.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/run.h"
#include "common/status.h"

struct dlpar_run_server {
  char nspace[PMIX_MAX_NSLEN + 1];
  char tmpdir[PATH_MAX];
  char host[256];
  int nprocs;
  int abort_fd;
  bool initialized;
  bool *connected;  /* per rank: its PMIx client connected (the progress thread's) */
  bool named_absent;
};

/* ------------------------------------------------------------- callbacks */

static pmix_status_t client_connected(const pmix_proc_t *proc, void *server_object,
                                      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
  dlpar_run_server *server = server_object;
  (void)cbfunc;
  (void)cbdata;
  if (server && proc->rank < (pmix_rank_t)server->nprocs)
    server->connected[proc->rank] = true;
  return PMIX_OPERATION_SUCCEEDED;
}

/* Once per job, at the first abort, this names the ranks that never started
 * PMIx. Open MPI 5's MPI_Init, before libdlpar's rendezvous, aborts when a
 * rank of its node has not, and the rendezvous cannot name it then. */
static void name_absent_ranks(dlpar_run_server *server)
{
  char line[512];
  size_t used = 0;
  int absent = 0;
  if (server->named_absent)
    return;
  server->named_absent = true;
  for (int rank = 0; rank < server->nprocs && used < sizeof(line) - 64; rank++) {
    if (server->connected[rank])
      continue;
    used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%d (%s)", absent ? ", " : "", rank, server->host);
    absent++;
  }
  if (absent)
    fprintf(stderr, "dlpar-run: never started PMIx: %s %s (crashed, stuck before dlpar_init, or slow to start: "
            "see %s output)\n", absent == 1 ? "rank" : "ranks", line, absent == 1 ? "its" : "their");
}

static pmix_status_t client_finalized(const pmix_proc_t *proc, void *server_object,
                                      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
  (void)proc;
  (void)server_object;
  (void)cbfunc;
  (void)cbdata;
  return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t abort_job(const pmix_proc_t *proc, void *server_object, int status,
                               const char msg[], pmix_proc_t procs[], size_t nprocs,
                               pmix_op_cbfunc_t cbfunc, void *cbdata)
{
  dlpar_run_server *server = server_object;
  int code = status ? status : 1;
  (void)procs;
  (void)nprocs;
  (void)cbfunc;
  (void)cbdata;
  (void)msg; /* the rank printed it */
  fprintf(stderr, "dlpar-run: rank %u called PMIx_Abort(%d): ending the job\n", proc->rank, status);
  if (server)
    name_absent_ranks(server);
  if (server && write(server->abort_fd, &code, sizeof(code)) != (ssize_t)sizeof(code))
    perror("dlpar-run: abort pipe");
  return PMIX_OPERATION_SUCCEEDED;
}

/* Every participant is local, so the collected data is the job's data. */
static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                              void *cbdata)
{
  (void)procs;
  (void)nprocs;
  (void)info;
  (void)ninfo;
  cbfunc(PMIX_SUCCESS, data, ndata, cbdata, NULL, NULL);
  return PMIX_SUCCESS;
}

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                                  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
  (void)proc;
  (void)info;
  (void)ninfo;
  (void)cbfunc;
  (void)cbdata;
  return PMIX_ERR_NOT_SUPPORTED; /* no remote nodes */
}

/* -------------------------------------------------------- registration */

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool done;
  pmix_status_t status;
} op_wait;

static void op_done(pmix_status_t status, void *cbdata)
{
  op_wait *w = cbdata;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  w->done = true;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

/* Waits for an operation started with op_done as its callback. */
static pmix_status_t op_finish(op_wait *w, pmix_status_t started)
{
  if (started == PMIX_OPERATION_SUCCEEDED)
    return PMIX_SUCCESS;
  if (started != PMIX_SUCCESS)
    return started;
  pthread_mutex_lock(&w->lock);
  while (!w->done)
    pthread_cond_wait(&w->cond, &w->lock);
  pthread_mutex_unlock(&w->lock);
  return w->status;
}

#define OP_WAIT_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, PMIX_SUCCESS}

/* "0,1,...,n-1" */
static char *rank_list(int n)
{
  char *list = malloc((size_t)n * 8 + 1);
  size_t used = 0;
  if (!list)
    return NULL;
  list[0] = '\0';
  for (int r = 0; r < n; r++)
    used += (size_t)sprintf(list + used, "%s%d", r ? "," : "", r);
  return list;
}

static void load_proc_data(pmix_info_t *entry, const dlpar_run_server *server, int rank)
{
  pmix_data_array_t *array;
  pmix_info_t *fields;
  pmix_rank_t prank = (pmix_rank_t)rank;
  uint16_t local = (uint16_t)rank;
  uint32_t zero = 0;
  PMIX_DATA_ARRAY_CREATE(array, 6, PMIX_INFO);
  fields = array->array;
  PMIX_INFO_LOAD(&fields[0], PMIX_RANK, &prank, PMIX_PROC_RANK);
  PMIX_INFO_LOAD(&fields[1], PMIX_LOCAL_RANK, &local, PMIX_UINT16);
  PMIX_INFO_LOAD(&fields[2], PMIX_NODE_RANK, &local, PMIX_UINT16);
  PMIX_INFO_LOAD(&fields[3], PMIX_NODEID, &zero, PMIX_UINT32);
  PMIX_INFO_LOAD(&fields[4], PMIX_HOSTNAME, server->host, PMIX_STRING);
  PMIX_INFO_LOAD(&fields[5], PMIX_APPNUM, &zero, PMIX_UINT32);
  PMIX_INFO_LOAD(entry, PMIX_PROC_DATA, array, PMIX_DATA_ARRAY);
  PMIX_DATA_ARRAY_FREE(array);
}

enum { JOB_KEYS = 15 };

static pmix_status_t register_nspace(dlpar_run_server *server)
{
  const uint32_t n = (uint32_t)server->nprocs, zero = 0, one = 1;
  const pmix_rank_t leader = 0;
  char *peers = rank_list(server->nprocs), *node_map = NULL, *proc_map = NULL;
  pmix_info_t *info;
  const size_t ninfo = JOB_KEYS + n;
  op_wait w = OP_WAIT_INIT;
  pmix_status_t rc = PMIX_ERR_NOMEM;
  PMIX_INFO_CREATE(info, ninfo);
  if (!peers || !info || PMIx_generate_regex(server->host, &node_map) != PMIX_SUCCESS ||
      PMIx_generate_ppn(peers, &proc_map) != PMIX_SUCCESS)
    goto out;
  PMIX_INFO_LOAD(&info[0], PMIX_UNIV_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[1], PMIX_JOB_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[2], PMIX_MAX_PROCS, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[3], PMIX_LOCAL_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[4], PMIX_NODE_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[5], PMIX_APP_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[6], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
  PMIX_INFO_LOAD(&info[7], PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
  PMIX_INFO_LOAD(&info[8], PMIX_APPLDR, &leader, PMIX_PROC_RANK);
  PMIX_INFO_LOAD(&info[9], PMIX_NUM_NODES, &one, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[10], PMIX_NODE_MAP, node_map, PMIX_REGEX);
  PMIX_INFO_LOAD(&info[11], PMIX_PROC_MAP, proc_map, PMIX_REGEX);
  PMIX_INFO_LOAD(&info[12], PMIX_JOBID, server->nspace, PMIX_STRING);
  PMIX_INFO_LOAD(&info[13], PMIX_APPNUM, &zero, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[14], PMIX_NODEID, &zero, PMIX_UINT32);
  for (uint32_t r = 0; r < n; r++)
    load_proc_data(&info[JOB_KEYS + r], server, (int)r);
  rc = op_finish(&w, PMIx_server_register_nspace(server->nspace, server->nprocs, info, ninfo, op_done, &w));
out:
  if (info)
    PMIX_INFO_FREE(info, ninfo);
  free(peers);
  free(node_map);
  free(proc_map);
  return rc;
}

int dlpar_run_server_start(int nprocs, int abort_fd, dlpar_run_server **out, dlpar_error *err)
{
  static pmix_server_module_t module = {
      .client_connected = client_connected,
      .client_finalized = client_finalized,
      .abort = abort_job,
      .fence_nb = fence_nb,
      .direct_modex = direct_modex,
  };
  dlpar_run_server *server = calloc(1, sizeof(*server));
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  pmix_info_t info[2];
  bool no = false;
  pmix_status_t rc;
  *out = server;
  if (!server)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  server->nprocs = nprocs;
  server->abort_fd = abort_fd;
  if (!(server->connected = calloc((size_t)nprocs, sizeof(bool))))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  gethostname(server->host, sizeof(server->host) - 1);
  snprintf(server->nspace, sizeof(server->nspace), "dlpar-run.%ld", (long)getpid());
  snprintf(server->tmpdir, sizeof(server->tmpdir), "%s/dlpar-run.XXXXXX", tmp);
  if (!mkdtemp(server->tmpdir))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot create a directory in %s: %s (set TMPDIR)", tmp,
                           strerror(errno));
  /* PMIx 5's shared-memory store, gds/shmem2, leaves its segment files in
   * TMPDIR, outside the run's directory, when ranks abort. On the Debian 13
   * bed they were named pmix-gds-shmem2.HOST-NSPACE.jobdata.PID. One
   * machine's ranks need no such store, so they get the hash one, which the
   * ranks inherit, unless the user chose. */
  setenv("PMIX_MCA_gds", "hash", 0);
  PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, server->tmpdir, PMIX_STRING);
  PMIX_INFO_LOAD(&info[1], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
  rc = PMIx_server_init(&module, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc != PMIX_SUCCESS)
    return dlpar_error_set(err, DLPAR_ERR_PMIX, "PMIx_server_init: %s", PMIx_Error_string(rc));
  server->initialized = true;
  rc = register_nspace(server);
  if (rc != PMIX_SUCCESS)
    return dlpar_error_set(err, DLPAR_ERR_PMIX, "PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
  return DLPAR_OK;
}

int dlpar_run_server_client_env(dlpar_run_server *server, int rank, char ***env, dlpar_error *err)
{
  pmix_proc_t proc;
  op_wait w = OP_WAIT_INIT;
  pmix_status_t rc;
  PMIX_PROC_LOAD(&proc, server->nspace, (pmix_rank_t)rank);
  rc = op_finish(&w, PMIx_server_register_client(&proc, getuid(), getgid(), server, op_done, &w));
  if (rc == PMIX_SUCCESS)
    rc = PMIx_server_setup_fork(&proc, env);
  if (rc != PMIX_SUCCESS)
    return dlpar_error_set(err, DLPAR_ERR_PMIX, "PMIx server setup for rank %d: %s", rank, PMIx_Error_string(rc));
  return DLPAR_OK;
}

const char *dlpar_run_server_tmpdir(const dlpar_run_server *server)
{
  return server->tmpdir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* The directory first: whatever PMIx's teardown does, none is left behind.
 * Then the namespace, with its clients, deregistered before the server
 * finalizes: OpenPMIx 4.2.2's PMIx_server_finalize, left to tear down a
 * namespace whose ranks aborted or were killed, crashed with SIGSEGV in about
 * 5 of 30 runs, making dlpar-run exit 139 instead of the ranks' status. */
void dlpar_run_server_stop(dlpar_run_server *server)
{
  op_wait w = OP_WAIT_INIT;
  pmix_status_t rc;
  if (!server)
    return;
  if (server->tmpdir[0] && strstr(server->tmpdir, "/dlpar-run.") &&
      nftw(server->tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "dlpar-run: cannot remove %s: %s (remove it by hand)\n", server->tmpdir, strerror(errno));
  if (server->initialized) {
    PMIx_server_deregister_nspace(server->nspace, op_done, &w);
    if ((rc = op_finish(&w, PMIX_SUCCESS)) != PMIX_SUCCESS)
      fprintf(stderr, "dlpar-run: PMIx_server_deregister_nspace: %s\n", PMIx_Error_string(rc));
    PMIx_server_finalize();
  }
  free(server->connected);
  free(server);
}

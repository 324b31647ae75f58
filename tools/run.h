/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/run.h: dlpar-run, the one-machine launcher (torchrun
 * --standalone's job, on PMIx). Its arguments (run_args.c), its PMIx server
 * (run_server.c, OpenPMIx's server API) and the supervisor (run.c). */
#ifndef DLPAR_RUN_H
#define DLPAR_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/grid.h"
#include "common/options.h"
#include "common/profile.h"
#include "common/status.h"
#include "common/taskenv.h"
#include "common/torchenv.h"

typedef struct {
  int ntasks;
  dlpar_request request;       /* the --dl-* options (common/options.h); --check[=only] is --dl-check */
  bool tag_output;
  char topology_xml[PATH_MAX]; /* --topology=XML or $DLPAR_HWLOC_XML; "" = this machine */
  char **program;              /* argv of the program (after --) */
} dlpar_run_args;

/* Parses dlpar-run's command line; messages are the plugin's where the
 * options are the plugin's. */
int dlpar_run_parse_args(int argc, char **argv, dlpar_run_args *args, dlpar_error *err);

typedef struct dlpar_run_server dlpar_run_server;

/* Starts a PMIx server for one job of nprocs ranks on this host. The
 * server writes the status of any rank's PMIx_Abort to abort_fd. */
int dlpar_run_server_start(int nprocs, int abort_fd, dlpar_run_server **server, dlpar_error *err);
/* The PMIx variables a rank's environment needs (NULL-terminated "K=V"). */
int dlpar_run_server_client_env(dlpar_run_server *server, int rank, char ***env, dlpar_error *err);
/* The run's own directory (PMIx's server files; removed by _stop). */
const char *dlpar_run_server_tmpdir(const dlpar_run_server *server);
void dlpar_run_server_stop(dlpar_run_server *server);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/args.h: dlpar-train's command line. The tutorials' train.py flags
 * as they taught them (--k=v and --k v, booleans as bare flags,
 * --yaml_config, --run_num), dlpar's own (--data, --device, --resume, ...),
 * and every config key as an override. One table of flags in args.c. */
#ifndef DLPAR_TRAIN_ARGS_H
#define DLPAR_TRAIN_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA } device_choice;

typedef struct {
  const char *config_name, *config_file, *run;
  char **overrides; /* "--key=value" for config_load, each owned */
  int noverrides;
  bool resume, benchy, manual_profiling, help;
  device_choice device;
  double progress_seconds; /* --progress: < 0 off, 0 the default interval */
} train_args;

/* Fills *a from argv; on bad input one line in err (and args_free is still safe). */
int args_parse(int argc, char **argv, train_args *a, dlpar_error *err);
void args_free(train_args *a);
void args_usage(void);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* common/options.h: the one table of the --dl-* options. Each entry gives
 * the option's name, whether it takes a value, its --help line, the DLPAR_*
 * variable it becomes and its parser. The SPANK plugin registers its srun
 * options from it (spank/options.c), dlpar-run reads its flags with it
 * (tools/run_args.c), and the task environment exports and imports the
 * variables through it (common/taskenv.c). What the options ask for is one
 * dlpar_request. */
#ifndef DLPAR_OPTIONS_H
#define DLPAR_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "grid.h"
#include "profile.h"
#include "status.h"

/* --dl-check (srun) / --check (dlpar-run): the pre-flight checks before the
 * program's own work; ONLY stops after them. */
typedef enum { DLPAR_CHECK_OFF = 0, DLPAR_CHECK_ON, DLPAR_CHECK_ONLY } dlpar_check_mode;

/* The option's value: NULL or "" (the bare option) and "on": ON; "only";
 * "off". Else DLPAR_ERR_INPUT with the fix in err. */
int dlpar_check_mode_parse(const char *text, dlpar_check_mode *mode, dlpar_error *err);

/* What the --dl-* options ask for, one field per option or group of
 * options; dlpar_request_init gives the value of each option not given. */
typedef struct {
  dlpar_grid_request grid;       /* --dl-parallel; without it 1xD, D = tasks */
  dlpar_profile_request profile; /* --dl-profile, --dl-profile-steps, --dl-profile-ranks */
  dlpar_check_mode check;        /* --dl-check */
  bool torch_env;                /* --dl-env: export the PyTorch env:// names (common/torchenv.h) */
  bool verbose;                  /* --dl-verbose */
} dlpar_request;

/* The entries of dlpar_option_table, in the order srun --help lists them. */
enum {
  DLPAR_OPT_PARALLEL,
  DLPAR_OPT_PROFILE,
  DLPAR_OPT_PROFILE_STEPS,
  DLPAR_OPT_PROFILE_RANKS,
  DLPAR_OPT_CHECK,
  DLPAR_OPT_ENV,
  DLPAR_OPT_VERBOSE,
  DLPAR_OPTION_COUNT
};

/* How an option takes its value, as SPANK's has_arg counts. */
typedef enum { DLPAR_OPT_FLAG = 0, DLPAR_OPT_VALUE = 1, DLPAR_OPT_OPTIONAL_VALUE = 2 } dlpar_option_arg;

typedef struct {
  const char *name;    /* without the leading dashes, e.g. "dl-check" */
  const char *arginfo; /* the value's placeholder in --help; NULL for a flag */
  dlpar_option_arg arg;
  const char *help;    /* the --help line */
  /* The variable the tasks get, or NULL where the launcher exports the
   * request its own way (the grid, the profile, the torch names). */
  const char *var;
  /* Reads the option's value into req (value NULL: the option given bare),
   * and the variable's value back on the task's side. */
  int (*parse)(const char *value, dlpar_request *req, dlpar_error *err);
  /* The variable's value for req; only where var is set. */
  void (*show)(const dlpar_request *req, char *out, size_t len);
} dlpar_option_spec;

extern const dlpar_option_spec dlpar_option_table[DLPAR_OPTION_COUNT];

/* Every option not given: a 1xD grid, no profile, no checks, the torch
 * names exported, quiet. */
void dlpar_request_init(dlpar_request *req);

/* The entry named name (len bytes, without the dashes), or -1. */
int dlpar_option_find(const char *name, size_t len);

#endif

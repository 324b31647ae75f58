/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/run_args.c: dlpar-run's command line. The --dl-* options are
 * parsed by the same code as the SPANK plugin's, so both say the same. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/run.h"
#include "common/status.h"
#include "common/text.h"

static const char *value_of(const char *arg, const char *name)
{
  const size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && arg[len] == '=' ? arg + len + 1 : NULL;
}

static int parse_ntasks(const char *text, dlpar_run_args *args, dlpar_error *err)
{
  long n;
  char quoted[64];
  if (!text || dlpar_parse_uint(text, strlen(text), DLPAR_GRID_MAX, &n) != 0 || n < 1)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "-n %s: expected a number of tasks >= 1 (e.g. -n 4)",
                           text ? dlpar_quote(text, quoted, sizeof(quoted)) : "(missing)");
  args->ntasks = (int)n;
  return DLPAR_OK;
}

/* One option at argv[*i]; advances *i past a separate value. */
static int parse_option(int argc, char **argv, int *i, dlpar_run_args *args, bool *parallel_given, dlpar_error *err)
{
  const char *arg = argv[*i], *v;
  if (strcmp(arg, "-n") == 0 || strcmp(arg, "--ntasks") == 0)
    return parse_ntasks(++*i < argc ? argv[*i] : NULL, args, err);
  if ((v = value_of(arg, "--ntasks")))
    return parse_ntasks(v, args, err);
  if ((v = value_of(arg, "--dl-parallel"))) {
    *parallel_given = true;
    return dlpar_grid_parse(v, &args->grid_request, err);
  }
  if ((v = value_of(arg, "--dl-profile")))
    return dlpar_profile_parse_tool(v, &args->profile, err);
  if ((v = value_of(arg, "--dl-profile-steps")))
    return dlpar_profile_parse_steps(v, &args->profile, err);
  if ((v = value_of(arg, "--dl-profile-ranks")))
    return dlpar_profile_parse_ranks(v, &args->profile, err);
  if ((v = value_of(arg, "--dl-env")))
    return dlpar_env_mode_parse(v, &args->torch_env, err);
  if ((v = value_of(arg, "--topology"))) {
    snprintf(args->topology_xml, sizeof(args->topology_xml), "%s", v);
    return DLPAR_OK;
  }
  if (strcmp(arg, "--check") == 0 || strcmp(arg, "--dl-check") == 0)
    return dlpar_check_mode_parse(NULL, &args->check, err);
  if ((v = value_of(arg, "--check")) || (v = value_of(arg, "--dl-check")))
    return dlpar_check_mode_parse(v, &args->check, err);
  if (strcmp(arg, "--dl-verbose") == 0) {
    args->verbose = true;
    return DLPAR_OK;
  }
  if (strcmp(arg, "--tag-output") == 0) {
    args->tag_output = true;
    return DLPAR_OK;
  }
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "unknown option '%s' (see dlpar-run --help)", dlpar_show(arg).text);
}

int dlpar_run_parse_args(int argc, char **argv, dlpar_run_args *args, dlpar_error *err)
{
  bool parallel_given = false;
  const char *xml = getenv("DLPAR_HWLOC_XML");
  dlpar_grid grid;
  int i;
  memset(args, 0, sizeof(*args));
  args->torch_env = true;
  dlpar_profile_init(&args->profile);
  if (xml)
    snprintf(args->topology_xml, sizeof(args->topology_xml), "%s", xml);
  for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    DLPAR_TRY(parse_option(argc, argv, &i, args, &parallel_given, err));
  }
  if (i + 1 >= argc)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "no program to run (usage: dlpar-run -n N [--dl-parallel=MxD] -- "
                           "PROGRAM [ARGS])");
  args->program = argv + i + 1;
  if (!parallel_given) {
    args->grid_request.tp = 1;
    snprintf(args->grid_request.text, sizeof(args->grid_request.text), "1");
  }
  if (args->ntasks == 0) {
    if (args->grid_request.dp == 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "how many ranks? give -n N (e.g. -n 4), or --dl-parallel=MxD");
    if ((long)args->grid_request.tp * args->grid_request.dp > DLPAR_GRID_MAX)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s: more than %d ranks", args->grid_request.text,
                             DLPAR_GRID_MAX);
    args->ntasks = args->grid_request.tp * args->grid_request.dp;
  }
  DLPAR_TRY(dlpar_grid_resolve(&args->grid_request, args->ntasks, &grid, err));
  return dlpar_profile_check(&args->profile, args->ntasks, err);
}

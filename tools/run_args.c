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

/* The entry of the option table (common/options.h) that arg gives, with
 * its value (NULL: none): --NAME for a flag, --NAME=VALUE for an option
 * with a value, either for one whose value is optional; --check is
 * --dl-check. -1: arg is none of them. */
static int table_option(const char *arg, const char **value)
{
  const char *name = arg + 2, *eq;
  size_t len;
  int i;
  if (strncmp(arg, "--", 2) != 0)
    return -1;
  eq = strchr(name, '=');
  len = eq ? (size_t)(eq - name) : strlen(name);
  i = len == 5 && strncmp(name, "check", 5) == 0 ? DLPAR_OPT_CHECK : dlpar_option_find(name, len);
  if (i < 0 || dlpar_option_table[i].arg == (eq ? DLPAR_OPT_FLAG : DLPAR_OPT_VALUE))
    return -1;
  *value = eq ? eq + 1 : NULL;
  return i;
}

/* One option at argv[*i]; advances *i past a separate value. */
static int parse_option(int argc, char **argv, int *i, dlpar_run_args *args, dlpar_error *err)
{
  const char *arg = argv[*i], *v;
  int option;
  if (strcmp(arg, "-n") == 0 || strcmp(arg, "--ntasks") == 0)
    return parse_ntasks(++*i < argc ? argv[*i] : NULL, args, err);
  if ((v = value_of(arg, "--ntasks")))
    return parse_ntasks(v, args, err);
  if ((option = table_option(arg, &v)) >= 0)
    return dlpar_option_table[option].parse(v, &args->request, err);
  if ((v = value_of(arg, "--topology"))) {
    snprintf(args->topology_xml, sizeof(args->topology_xml), "%s", v);
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
  const char *xml = getenv("DLPAR_HWLOC_XML");
  dlpar_grid grid;
  int i;
  memset(args, 0, sizeof(*args));
  dlpar_request_init(&args->request);
  if (xml)
    snprintf(args->topology_xml, sizeof(args->topology_xml), "%s", xml);
  for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    DLPAR_TRY(parse_option(argc, argv, &i, args, err));
  }
  if (i + 1 >= argc)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "no program to run (usage: dlpar-run -n N [--dl-parallel=MxD] -- "
                           "PROGRAM [ARGS])");
  args->program = argv + i + 1;
  if (args->ntasks == 0) {
    if (args->request.grid.dp == 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "how many ranks? give -n N (e.g. -n 4), or --dl-parallel=MxD");
    if ((long)args->request.grid.tp * args->request.grid.dp > DLPAR_GRID_MAX)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s: more than %d ranks", args->request.grid.text,
                             DLPAR_GRID_MAX);
    args->ntasks = args->request.grid.tp * args->request.grid.dp;
  }
  DLPAR_TRY(dlpar_grid_resolve(&args->request.grid, args->ntasks, &grid, err));
  return dlpar_profile_check(&args->request.profile, args->ntasks, err);
}

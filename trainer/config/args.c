/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/args.c: dlpar-train's command line (see args.h). A flag of the
 * trainer is one row of `flags`; anything else of the form --key is a
 * config key (train_config.c's table), turned into a "--key=value"
 * override: --key=value, --key value, or a bare --key for a boolean. */
#include "config.h"

#include "trainer/config/args.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "trainer/run/progress.h"
#include "trainer/config/train_config.h"
#include "common/text.h"

typedef int (*flag_handler)(train_args *a, const char *value, dlpar_error *err);

typedef struct {
  const char *name;
  flag_handler handle; /* NULL: a bare flag setting the bool at `set` (a value is refused) */
  size_t set;
} flag_spec;

/* Adds one "--key=value" override (a copy). */
static int add_override(train_args *a, const char *key, const char *value, dlpar_error *err)
{
  const size_t len = strlen(key) + strlen(value) + 4;
  char *text = malloc(len);
  if (!text)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "out of memory for the command line");
  snprintf(text, len, "--%s=%s", key, value);
  a->overrides[a->noverrides++] = text;
  return DLPAR_OK;
}

static int set_config_name(train_args *a, const char *value, dlpar_error *err)
{
  (void)err;
  a->config_name = value;
  return DLPAR_OK;
}

static int set_config_file(train_args *a, const char *value, dlpar_error *err)
{
  if (a->config_file)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: one config file only (already %s)", dlpar_show(value).text,
                           dlpar_show(a->config_file).text);
  a->config_file = value;
  return DLPAR_OK;
}

static int set_run(train_args *a, const char *value, dlpar_error *err)
{
  if (!*value || strchr(value, '/') || !dlpar_is_printable(value))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--run=%s: a directory name without '/' or control characters (e.g. "
                           "--run=01)", dlpar_show(value).text);
  a->run = value;
  return DLPAR_OK;
}

/* --data=DIR: the tutorial's layout under DIR, as overrides of the path keys. */
static int set_data(train_args *a, const char *dir, dlpar_error *err)
{
  static const char *const layout[][2] = {
      {"train_data_path", "train"}, {"valid_data_path", "valid"}, {"inf_data_path", "test"},
      {"global_means_path", "stats/global_means.npy"}, {"global_stds_path", "stats/global_stds.npy"},
      {"time_means_path", "stats/time_means.npy"}};
  char path[8192];
  if (!*dir)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--data: give the dataset's directory (e.g. --data=./data)");
  for (size_t k = 0; k < sizeof(layout) / sizeof(layout[0]); k++) {
    snprintf(path, sizeof(path), "%s/%s", dir, layout[k][1]);
    DLPAR_TRY(add_override(a, layout[k][0], path, err));
  }
  return DLPAR_OK;
}

static int set_device(train_args *a, const char *value, dlpar_error *err)
{
  if (strcmp(value, "cpu") == 0)
    a->device = DEVICE_CPU;
  else if (strcmp(value, "cuda") == 0)
    a->device = DEVICE_CUDA;
  else if (strcmp(value, "auto") == 0)
    a->device = DEVICE_AUTO;
  else {
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--device=%s: expected --device=cpu, cuda or auto",
                           dlpar_show(value).text);
  }
  return DLPAR_OK;
}

static int set_progress(train_args *a, const char *value, dlpar_error *err)
{
  return progress_parse(value, &a->progress_seconds, err);
}

#define BARE(name, field) {name, NULL, offsetof(train_args, field)}
static const flag_spec flags[] = {
    {"config", set_config_name, 0},
    {"yaml_config", set_config_file, 0}, /* train.py's name for the positional FILE.yaml */
    {"run", set_run, 0},
    {"run_num", set_run, 0}, /* train.py's */
    {"data", set_data, 0},
    {"device", set_device, 0},
    {"progress", set_progress, 0},
    BARE("resume", resume),
    BARE("benchy", benchy),
    BARE("enable_benchy", benchy), /* SC22's */
    BARE("enable_manual_profiling", manual_profiling),
    BARE("help", help),
};

static const flag_spec *find_flag(const char *name, size_t len)
{
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
      return &flags[i];
  }
  return NULL;
}

/* --name[=value] at argv[*i]; a value-taking flag without '=' takes the next
 * argument (*i moves past it). */
static int parse_option(train_args *a, int argc, char **argv, int *i, dlpar_error *err)
{
  const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
  const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  const flag_spec *flag = find_flag(arg, len);
  char key[64];
  const char *value = eq ? eq + 1 : NULL;
  bool takes_value, is_key;
  if (len == 0 || len >= sizeof(key))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: expected --key=value or --key value (e.g. --lr=1e-3)",
                           dlpar_show(argv[*i]).text);
  snprintf(key, sizeof(key), "%.*s", (int)len, arg);
  is_key = !flag && config_is_key(key);
  if (!flag && !is_key)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--%s: unknown flag or config key (see dlpar-train(1) for both)",
                           dlpar_show(key).text);
  takes_value = flag ? flag->handle != NULL : !config_key_is_bool(key);
  if (!takes_value && !value)
    value = "true";
  else if (!flag && !takes_value)
    ; /* --enable_jit=false: as given */
  else if (!takes_value)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--%s=%s: --%s takes no value (give it alone)", key,
                           dlpar_show(value).text, key);
  if (!value) {
    if (*i + 1 >= argc)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "--%s: missing its value (--%s=VALUE or --%s VALUE)", key, key, key);
    value = argv[++*i];
  }
  if (flag && !flag->handle) {
    *(bool *)((char *)a + flag->set) = true;
    return DLPAR_OK;
  }
  return flag ? flag->handle(a, value, err) : add_override(a, key, value, err);
}

int args_parse(int argc, char **argv, train_args *a, dlpar_error *err)
{
  memset(a, 0, sizeof(*a));
  a->config_name = "base";
  a->run = "00";
  /* at most one override per argument, but --data gives 6 */
  a->overrides = calloc((size_t)argc * 6 + 1, sizeof(char *));
  if (!a->overrides)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "out of memory for the command line");
  for (int i = 1; i < argc; i++) {
    int rc = DLPAR_OK;
    if (strcmp(argv[i], "-h") == 0)
      a->help = true;
    else
      rc = strncmp(argv[i], "--", 2) == 0 ? parse_option(a, argc, argv, &i, err)
                                          : set_config_file(a, argv[i], err);
    if (rc != DLPAR_OK)
      return rc;
  }
  if (a->help)
    return DLPAR_OK;
  if (!a->config_file)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "no config file (e.g. dlpar-train --config=short etc/vit.yaml, or "
                           "--yaml_config=FILE)");
  if (a->benchy && a->manual_profiling)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--enable_benchy and --enable_manual_profiling: one of them (as in "
                           "the tutorial)");
  return DLPAR_OK;
}

void args_free(train_args *a)
{
  for (int i = 0; a->overrides && i < a->noverrides; i++)
    free(a->overrides[i]);
  free(a->overrides);
  a->overrides = NULL;
  a->noverrides = 0;
}

void args_usage(void)
{
  fprintf(stderr, "usage: dlpar-train [--config=NAME] FILE.yaml [--data=DIR] [--KEY=VALUE | --KEY VALUE ...]\n"
                  "                   [--resume] [--run=TAG] [--device=auto|cpu|cuda] [--benchy]\n"
                  "                   [--progress=on|off|SECONDS]\n"
                  "       (the tutorial's train.py flags too: --yaml_config FILE, --run_num, --num_epochs N,\n"
                  "        --local_batch_size N, --enable_jit, ...)\n"
                  "Trains the tutorial's ViT weather model; launch it with srun --dl-parallel=MxD or dlpar-run.\n"
                  "Any config key can be overridden (--lr=1e-3, --img_size=[32,64]); see dlpar-train(1).\n");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_quoting.c: every message that quotes user input shows it
 * escaped, so a refusal is one line whatever the input holds. Each site
 * below (a flag, a plugstack.conf key, a YAML key or value, a path, an
 * environment variable, a file header) gets text holding a newline and an
 * escape byte and must refuse with one line that shows them as \n and \x1b;
 * dlpar_one_line turns what would break a line or a terminal (C1 controls,
 * U+2028, bidirectional overrides, bytes of a cut character) into spaces;
 * a list of quoted values is cut at a character. The plugin's refusals of
 * what Slurm's environment holds (SLURM_MPI_TYPE, SLURM_HET_SIZE, a node
 * name) are tests/unit/test_spank_parsing.c's, which a plugin-only build
 * runs too. */
#include "config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grid.h"
#include "common/profile.h"
#include "common/status.h"
#include "common/taskenv.h"
#include "common/text.h"
#include "common/topo.h"
#include "common/torchenv.h"
#include "spank/admin.h"
#include "tests/unit/check.h"
#include "tools/run.h"
#include "trainer/config/args.h"
#include "trainer/run/checkpoint.h"
#include "trainer/data/data.h"
#include "trainer/data/npy.h"
#include "trainer/run/progress.h"
#include "trainer/config/train_config.h"
#include "trainer/config/yamltree.h"

#define HOSTILE "x\n\x1b[2J"
#define HOSTILE_YAML "\"x\\n\\x1b[2J\"" /* the same, as a YAML double-quoted scalar */
#define SHOWN "x\\n\\x1b[2J"

static dlpar_error err;
static char dir[64];

static int one_line(const char *text)
{
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (*p < 0x20 || *p == 0x7f)
      return 0;
  }
  return *text != '\0';
}

/* The call refuses, with one line that shows the hostile text escaped. */
#define EXPECT_QUOTED(call)                                                                 \
  do {                                                                                      \
    err.text[0] = '\0';                                                                     \
    CHECK((call) != DLPAR_OK);                                                              \
    if (!one_line(err.text) || !strstr(err.text, SHOWN))                                    \
      fprintf(stderr, "%s:%d: %s said \"%s\"\n", __FILE__, __LINE__, #call,                 \
              dlpar_show(err.text).text);                                                   \
    CHECK(one_line(err.text));                                                              \
    CHECK(strstr(err.text, SHOWN) != NULL);                                                 \
  } while (0)

static void test_common(void)
{
  dlpar_grid_request grid;
  dlpar_profile_request profile;
  dlpar_check_mode mode;
  dlpar_task_env env;
  dlpar_topology topo;
  bool present;
  dlpar_profile_init(&profile);
  EXPECT_QUOTED(dlpar_grid_parse(HOSTILE, &grid, &err));
  EXPECT_QUOTED(dlpar_profile_parse_tool(HOSTILE, &profile, &err));
  EXPECT_QUOTED(dlpar_profile_parse_steps(HOSTILE, &profile, &err));
  EXPECT_QUOTED(dlpar_profile_parse_ranks(HOSTILE, &profile, &err));
  EXPECT_QUOTED(dlpar_check_mode_parse(HOSTILE, &mode, &err));
  setenv("DLPAR_VERSION", HOSTILE, 1);
  EXPECT_QUOTED(dlpar_task_env_import(&env, &present, &err));
  unsetenv("DLPAR_VERSION");
  EXPECT_QUOTED(dlpar_topology_load("/nonexistent/" HOSTILE ".xml", &topo, &err));
}

static void test_plugstack(void)
{
  dlpar_admin_config config;
  char *args[][1] = {{"tp_span=" HOSTILE}, {"bind_cpus=" HOSTILE}, {"topology_xml=" HOSTILE},
                     {HOSTILE "=1"}, {HOSTILE}};
  for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
    EXPECT_QUOTED(dlpar_admin_config_parse(1, args[i], &config, &err));
}

static void test_dlpar_run_flags(void)
{
  dlpar_run_args args;
  char *ntasks[] = {"dlpar-run", "-n", HOSTILE, "prog", NULL};
  char *unknown[] = {"dlpar-run", "-n", "1", "--" HOSTILE, "prog", NULL};
  EXPECT_QUOTED(dlpar_run_parse_args(4, ntasks, &args, &err));
  EXPECT_QUOTED(dlpar_run_parse_args(5, unknown, &args, &err));
}

static int parse_train_args(char *flag, char *second)
{
  char *argv[] = {"dlpar-train", flag, second, NULL};
  train_args args;
  int rc = args_parse(second ? 3 : 2, argv, &args, &err);
  args_free(&args);
  return rc;
}

static void test_train_flags(void)
{
  double seconds;
  EXPECT_QUOTED(parse_train_args("--run=" HOSTILE, NULL));
  EXPECT_QUOTED(parse_train_args("--device=" HOSTILE, NULL));
  EXPECT_QUOTED(parse_train_args("--" HOSTILE, NULL));
  EXPECT_QUOTED(parse_train_args("--resume=" HOSTILE, NULL));
  EXPECT_QUOTED(parse_train_args("a.yaml", HOSTILE));
  EXPECT_QUOTED(parse_train_args("--" HOSTILE "=1", NULL));
  EXPECT_QUOTED(progress_parse(HOSTILE, &seconds, &err));
}

/* A config file holding text, loaded as config name, then checked on 1x1. */
static int load_config(const char *path, const char *text, const char *name, char *override)
{
  static config_set set;
  FILE *f = fopen(path, "w");
  int rc;
  if (!f || fputs(text, f) < 0 || fclose(f) != 0)
    return -100;
  rc = config_load(&set, path, name, &override, override ? 1 : 0, &err);
  return rc != DLPAR_OK ? rc : config_check(&set, 1, 1, &err);
}

static void test_config(void)
{
  char path[128], hostile_path[128];
  config_set set;
  char yaml[64];
  snprintf(path, sizeof(path), "%s/c.yaml", dir);
  snprintf(hostile_path, sizeof(hostile_path), "%s/" HOSTILE ".yaml", dir);
  EXPECT_QUOTED(load_config(path, "base: {optimizer: " HOSTILE_YAML "}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {lr_schedule: " HOSTILE_YAML "}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {attention: " HOSTILE_YAML "}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {parallel_order: " HOSTILE_YAML "}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {lr: " HOSTILE_YAML "}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {" HOSTILE_YAML ": 1}\n", "base", NULL));
  EXPECT_QUOTED(load_config(path, "base: {lr: 1}\n", HOSTILE, NULL));
  EXPECT_QUOTED(load_config(path, "base: {lr: 1}\n", "base", HOSTILE));
  EXPECT_QUOTED(load_config(path, "base: {lr: 1}\n", "base", "--" HOSTILE "=1"));
  EXPECT_QUOTED(load_config(path, "base: {lr: 1}\n", "base", "--lr=" HOSTILE_YAML));
  EXPECT_QUOTED(load_config(hostile_path, "base: {no_such_key: 1}\n", "base", NULL)); /* the path in "FILE:LINE" */
  EXPECT_QUOTED(load_config(hostile_path, "base: [\n", "base", NULL));              /* yamltree's "FILE:LINE" */
  unlink(hostile_path);
  /* config_to_yaml's own refusal (no room) names the config */
  CHECK_INT(load_config(path, "base: {lr: 1}\n", "base", NULL), DLPAR_OK);
  CHECK_INT(config_load(&set, path, "base", NULL, 0, &err), DLPAR_OK);
  snprintf(set.cfg.name, sizeof(set.cfg.name), "%s", HOSTILE);
  EXPECT_QUOTED(config_to_yaml(&set.cfg, yaml, sizeof(yaml), &err));
}

static void test_yaml(void)
{
  ytree *tree = NULL;
  EXPECT_QUOTED(ytree_parse_string(HOSTILE_YAML ": 1\n" HOSTILE_YAML ": 2\n", "a.yaml", &tree, &err));
  ytree_free(tree);
  EXPECT_QUOTED(ytree_parse_file("/nonexistent/" HOSTILE ".yaml", &tree, &err));
}

static void test_files(void)
{
  npy_array array;
  float *stats = NULL;
  era5_data data;
  train_config cfg = {0};
  checkpoint_position pos = {.step = -1};
  static const char header[] = "\x93NUMPY\x01\x00\x13\x00{'descr': '" HOSTILE "'}";
  FILE *f = fmemopen((void *)header, sizeof(header) - 1, "rb");
  EXPECT_QUOTED(npy_read("/nonexistent/" HOSTILE ".npy", &array, &err));
  EXPECT_QUOTED(npy_read_stream(f, (long)sizeof(header) - 1, "h.npy", &array, &err));
  fclose(f);
  EXPECT_QUOTED(era5_load_stats("/nonexistent/" HOSTILE ".npy", 1, &stats, &err));
  EXPECT_QUOTED(era5_load_stats("/nonexistent/" HOSTILE ".h5", 1, &stats, &err));
  EXPECT_QUOTED(era5_open(&data, "/nonexistent/" HOSTILE, &cfg, -1, NULL, NULL, NULL, &err));
  EXPECT_QUOTED(checkpoint_check_position(&pos, 10, 5, "/run/" HOSTILE "/checkpoint.h5", &err));
}

/* Whether text is one line of valid, printable UTF-8: nothing dlpar_quote
 * would escape (no byte of a character cut in two). */
static int printable_line(const char *text)
{
  char shown[4 * DLPAR_ERRLEN];
  return strcmp(dlpar_quote(text, shown, sizeof(shown)), text) == 0;
}

static void test_one_line(void)
{
  char text[] = "NCCL said:\nline two\r\x1b";
  /* U+0085 (NEL), U+2028 (line separator), U+202E (right-to-left override), a lone 0xC3; é stays */
  char unicode[] = "a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xae" "d\xc3" "e\xc3\xa9";
  CHECK_STR(dlpar_one_line(text), "NCCL said: line two  ");
  CHECK_STR(dlpar_one_line(unicode), "a b c d e\xc3\xa9");
}

/* srun's "keeping your exported NAME=value, ..." line: cut where its buffer
 * is full, at a character, with "...", whatever the values' lengths (cut at
 * 511 bytes it split a character in 21 of 40 layouts). */
static void test_kept_torch_names(void)
{
  char line[DLPAR_ERRLEN], value[200];
  int cut = 0;
  for (int layout = 0; layout < 40; layout++) {
    /* layout ASCII bytes, then 2-, 3- and 4-byte characters: the cut falls at every offset */
    int used = snprintf(value, sizeof(value), "%.*s", layout, "0123456789012345678901234567890123456789");
    while (used + 4 < (int)sizeof(value))
      used += snprintf(value + used, sizeof(value) - (size_t)used, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    for (const char *const *name = dlpar_torch_names; *name; name++)
      setenv(*name, value, 1);
    CHECK_INT(dlpar_torch_names_set(line, sizeof(line)), strlen(line));
    CHECK(strlen(line) < sizeof(line) && printable_line(line));
    cut += strlen(line) > 3 && strcmp(line + strlen(line) - 3, "...") == 0;
  }
  CHECK_INT(cut, 40);
  for (const char *const *name = dlpar_torch_names; *name; name++)
    unsetenv(*name);
  setenv("MASTER_PORT", HOSTILE, 1);
  CHECK(dlpar_torch_names_set(line, sizeof(line)) > 0);
  CHECK_STR(line, "MASTER_PORT=" SHOWN);
  unsetenv("MASTER_PORT");
}

int main(void)
{
  snprintf(dir, sizeof(dir), "/tmp/dlpar-quoting.XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_common();
  test_plugstack();
  test_dlpar_run_flags();
  test_train_flags();
  test_config();
  test_yaml();
  test_files();
  test_one_line();
  test_kept_torch_names();
  {
    char path[128];
    snprintf(path, sizeof(path), "%s/c.yaml", dir);
    unlink(path);
    rmdir(dir);
  }
  return check_report("test_quoting");
}

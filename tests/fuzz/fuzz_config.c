/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_config.c: a config file and --key=value overrides
 * (trainer/config/train_config.c over yamltree) on any input: the text up to a
 * line "--8<--" is the file (config 'base' is loaded), each line after it
 * one override; a loaded config is then checked against grids and
 * printed, as dlpar-train does, and what is printed (the config a
 * checkpoint keeps) must load back as the same config. */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "trainer/config/train_config.h"

#define MAX_OVERRIDES 64

static void write_file(const char *path, const char *text, size_t len)
{
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
    abort();
}

/* Splits "file --8<-- override lines" in place; returns the file's length. */
static size_t split(char *text, char **overrides, int *n)
{
  char *cut = strstr(text, "\n--8<--\n"), *line;
  *n = 0;
  if (!cut)
    return strlen(text);
  *cut = '\0';
  for (line = cut + 8; *line && *n < MAX_OVERRIDES;) {
    char *end = strchr(line, '\n');
    if (end)
      *end = '\0';
    overrides[(*n)++] = line;
    if (!end)
      break;
    line = end + 1;
  }
  return (size_t)(cut - text) + 1; /* with its newline */
}

/* The printed config under a top-level key "r", loaded again and printed
 * again: the same text after the first (comment) line, or abort. */
static void expect_round_trip(const char *path, const char *yaml)
{
  static config_set again;
  static char text[32768], yaml_again[16384];
  dlpar_error err = {0};
  size_t used = (size_t)snprintf(text, sizeof(text), "r:\n");
  for (const char *line = yaml; *line && used < sizeof(text);) {
    const size_t len = strcspn(line, "\n");
    used += (size_t)snprintf(text + used, sizeof(text) - used, "  %.*s\n", (int)len, line);
    line += len + (line[len] == '\n');
  }
  write_file(path, text, strlen(text));
  if (config_load(&again, path, "r", NULL, 0, &err) != DLPAR_OK ||
      config_to_yaml(&again.cfg, yaml_again, sizeof(yaml_again), &err) != DLPAR_OK ||
      strcmp(strchr(yaml, '\n'), strchr(yaml_again, '\n')) != 0) {
    fprintf(stderr, "fuzz: the printed config does not load back as itself: %s\n", err.text);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static config_set set; /* large: 64 sources of PATH_MAX */
  static char yaml[16384];
  char *text = fuzz_string(data, size), *overrides[MAX_OVERRIDES];
  dlpar_error err = {0};
  const char *path = fuzz_temp_path();
  int n, rc;
  write_file(path, text, split(text, overrides, &n));
  rc = config_load(&set, path, "base", overrides, n, &err);
  fuzz_expect_one_line(rc, err.text);
  for (int tp = 1; rc == DLPAR_OK && tp <= 4; tp *= 2) {
    int checked = config_check(&set, tp, 4 / tp, &err);
    fuzz_expect_one_line(checked, err.text);
  }
  if (rc == DLPAR_OK && config_to_yaml(&set.cfg, yaml, sizeof(yaml), &err) == DLPAR_OK)
    expect_round_trip(path, yaml);
  free(text);
  return 0;
}

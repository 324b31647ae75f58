/* tests/fuzz/fuzz_config.c: a config file and --key=value overrides
 * (trainer/train_config.c over yamltree) on any input: the text up to a
 * line "--8<--" is the file (config 'base' is loaded), each line after it
 * one override; a loaded config is then checked against grids and
 * printed, as dlpar-train does. */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "trainer/train_config.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static config_set set; /* large: 64 sources of PATH_MAX */
  static char yaml[16384];
  char *text = fuzz_string(data, size), *overrides[MAX_OVERRIDES], err[DLPAR_ERRLEN] = "";
  const char *path = fuzz_temp_path();
  int n, rc;
  write_file(path, text, split(text, overrides, &n));
  rc = config_load(&set, path, "base", overrides, n, err, sizeof(err));
  fuzz_expect_one_line(rc, err);
  for (int tp = 1; rc == DLPAR_OK && tp <= 4; tp *= 2) {
    int checked = config_check(&set, tp, 4 / tp, err, sizeof(err));
    fuzz_expect_one_line(checked, err);
  }
  if (rc == DLPAR_OK)
    (void)config_to_yaml(&set.cfg, yaml, sizeof(yaml));
  free(text);
  return 0;
}

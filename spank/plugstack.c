/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/plugstack.c: plugstack.conf as Slurm reads it (see plugstack.h). */
#include "config.h"

#include "spank/plugstack.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"
#include "spank/admin.h"

#define MAX_DEPTH 8 /* includes within includes: deeper is a loop */

static const char blanks[] = " \t\n"; /* Slurm's separators */

static void dir_of(const char *path, char *out, size_t len)
{
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(out, len, ".");
  else
    snprintf(out, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

static const char *base_of(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* words[0] "required" or "optional", words[1] the plugin, then its arguments */
static void record(dlpar_plugstack_entry *entry, const char *file, int line, char **words, int n)
{
  size_t used = 0;
  if (++entry->count > 1) {
    if (entry->count == 2) {
      snprintf(entry->second_file, sizeof(entry->second_file), "%s", file);
      entry->second_line = line;
    }
    return;
  }
  snprintf(entry->file, sizeof(entry->file), "%s", file);
  entry->line = line;
  entry->required = strcmp(words[0], "required") == 0;
  snprintf(entry->plugin, sizeof(entry->plugin), "%s", words[1]);
  for (int i = 2; i < n; i++) {
    const size_t size = strlen(words[i]) + 1;
    if (used + size > sizeof(entry->args))
      break;
    memcpy(entry->args + used, words[i], size);
    entry->argv[entry->argc++] = entry->args + used;
    used += size;
  }
}

static int read_file(const char *path, int depth, bool must_exist, dlpar_plugstack_entry *entry, dlpar_error *err);

/* Slurm's include: a glob, relative to the including file's directory; no
 * match reads nothing. */
static int include(const char *file, const char *pattern, int depth, dlpar_plugstack_entry *entry, dlpar_error *err)
{
  char dir[4096], full[8192];
  glob_t found;
  int rc = DLPAR_OK;
  dir_of(file, dir, sizeof(dir));
  if (pattern[0] == '/')
    snprintf(full, sizeof(full), "%s", pattern);
  else
    snprintf(full, sizeof(full), "%s/%s", dir, pattern);
  if (glob(full, 0, NULL, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc && rc == DLPAR_OK; i++)
      rc = read_file(found.gl_pathv[i], depth + 1, false, entry, err);
  }
  globfree(&found);
  return rc;
}

static int read_file(const char *path, int depth, bool must_exist, dlpar_plugstack_entry *entry, dlpar_error *err)
{
  char buf[4096];
  int line = 0, rc = DLPAR_OK;
  FILE *file;
  if (depth > MAX_DEPTH)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: includes nested deeper than %d (does a file include itself?)",
                           dlpar_show(path).text, MAX_DEPTH);
  file = fopen(path, "re");
  if (!file) {
    const int error = errno;
    if (error == ENOENT && !must_exist) /* Slurm: a missing file is an empty one */
      return DLPAR_OK;
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: cannot read it (%s)", dlpar_show(path).text, strerror(error));
  }
  while (rc == DLPAR_OK && fgets(buf, sizeof(buf), file)) {
    char *words[2 + DLPAR_PLUGSTACK_MAX_ARGS], *save = NULL, *comment = strchr(buf, '#');
    int n = 0;
    line++;
    if (comment)
      *comment = '\0';
    for (char *word = strtok_r(buf, blanks, &save); word && n < 2 + DLPAR_PLUGSTACK_MAX_ARGS;
         word = strtok_r(NULL, blanks, &save))
      words[n++] = word;
    if (n < 2)
      continue;
    if (strcmp(words[0], "include") == 0)
      rc = include(path, words[1], depth, entry, err);
    else if ((strcmp(words[0], "required") == 0 || strcmp(words[0], "optional") == 0) &&
             strcmp(base_of(words[1]), DLPAR_PLUGIN_FILE) == 0)
      record(entry, path, line, words, n);
  }
  fclose(file);
  return rc;
}

int dlpar_plugstack_read(const char *path, dlpar_plugstack_entry *entry, dlpar_error *err)
{
  memset(entry, 0, sizeof(*entry));
  return read_file(path, 0, true, entry, err);
}

int dlpar_plugstack_path(const char *slurm_conf, char *out, size_t len, dlpar_error *err)
{
  static const char key[] = "PlugStackConfig";
  char buf[4096], dir[4096];
  FILE *file = fopen(slurm_conf, "re");
  if (!file) {
    const int error = errno;
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: cannot read it (%s): name slurm.conf in SLURM_CONF, or give the "
                           "file to check", dlpar_show(slurm_conf).text, strerror(error));
  }
  out[0] = '\0';
  while (!out[0] && fgets(buf, sizeof(buf), file)) {
    char *save = NULL, *comment = strchr(buf, '#'), *name = buf + strspn(buf, blanks), *value;
    if (comment)
      *comment = '\0';
    if (strncasecmp(name, key, sizeof(key) - 1) != 0)
      continue;
    value = name + sizeof(key) - 1;
    value += strspn(value, blanks);
    if (*value == '=' && (value = strtok_r(value + 1, blanks, &save)))
      snprintf(out, len, "%s", value);
  }
  fclose(file);
  if (!out[0]) {
    dir_of(slurm_conf, dir, sizeof(dir));
    snprintf(out, len, "%s/plugstack.conf", dir);
  }
  return DLPAR_OK;
}

int dlpar_plugstack_check(const char *path, char *msg, size_t len)
{
  dlpar_plugstack_entry entry;
  dlpar_admin_config config;
  char where[4200], line[4096] = "";
  dlpar_error err = {0};
  if (dlpar_plugstack_read(path, &entry, &err) != DLPAR_OK) {
    snprintf(msg, len, "%s", err.text);
    return DLPAR_ERR_INPUT;
  }
  if (entry.count == 0) {
    snprintf(msg, len, "%s: no %s line, nor in the files it includes: dlpar is not enabled there",
             dlpar_show(path).text, DLPAR_PLUGIN_FILE);
    return DLPAR_ERR_INPUT;
  }
  snprintf(where, sizeof(where), "%s:%d", dlpar_show(entry.file).text, entry.line);
  if (entry.count > 1) {
    snprintf(msg, len, "%s:%d: a second %s line (the first is %s): Slurm loads the first only; keep one",
             dlpar_show(entry.second_file).text, entry.second_line, DLPAR_PLUGIN_FILE, where);
    return DLPAR_ERR_INPUT;
  }
  if (!entry.required) {
    snprintf(msg, len, "%s: optional: Slurm ignores an optional plugin's refusals and launches the steps dlpar "
             "refused; write required", where);
    return DLPAR_ERR_INPUT;
  }
  if (dlpar_admin_config_parse(entry.argc, entry.argv, &config, &err) != DLPAR_OK) {
    snprintf(msg, len, "%s: %s", where, err.text);
    return DLPAR_ERR_INPUT;
  }
  if (entry.plugin[0] == '/' && access(entry.plugin, R_OK) != 0) {
    const int error = errno;
    snprintf(msg, len, "%s: %s: %s (install dlpar's plugin there, or correct the path): Slurm would fail every "
             "srun and sbatch, and slurmd would not start", where, dlpar_show(entry.plugin).text, strerror(error));
    return DLPAR_ERR_INPUT;
  }
  for (int i = 0; i < entry.argc; i++)
    snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s", entry.argv[i]);
  snprintf(msg, len, "%s: ok: required %s%s", where, dlpar_show(entry.plugin).text, dlpar_show(line).text);
  return DLPAR_OK;
}

void dlpar_plugstack_where(const char *slurm_conf, int argc, char **argv, char *where, size_t len)
{
  dlpar_plugstack_entry entry;
  char path[4096];
  dlpar_error err = {0};
  snprintf(where, len, "the %s line of plugstack.conf", DLPAR_PLUGIN_FILE);
  if (dlpar_plugstack_path(slurm_conf, path, sizeof(path), &err) != DLPAR_OK ||
      dlpar_plugstack_read(path, &entry, &err) != DLPAR_OK || entry.count == 0 || entry.argc != argc)
    return;
  for (int i = 0; i < argc; i++)
    if (strcmp(entry.argv[i], argv[i]) != 0)
      return; /* not the line this process read */
  snprintf(where, len, "line %d of %s", entry.line, dlpar_show(entry.file).text);
}

void dlpar_config_refusal(dlpar_config_reader reader, const char *error, const char *where, const char *node,
                          char *out, size_t len)
{
  switch (reader) {
  case DLPAR_READER_SLURMD:
    snprintf(out, len, "warning: %s (%s): slurmd runs on, and srun, sbatch, salloc and slurmstepd refuse every "
             "--dl-* option until the admin corrects it (dlpar-check-config checks the file)", error, where);
    break;
  case DLPAR_READER_CLIENT:
    snprintf(out, len, "%s (%s): every --dl-* option is refused until the admin corrects it (dlpar-check-config "
             "checks the file); steps without them run", error, where);
    break;
  case DLPAR_READER_NODE:
    snprintf(out, len, "%s (%s on %s): %s refuses every --dl-* step until the admin corrects it "
             "(dlpar-check-config checks the file)", error, where, node, node);
    break;
  case DLPAR_READER_NODE_BEHIND:
    snprintf(out, len, "%s (%s on %s): srun accepted the step where it runs, so %s reads the line otherwise (Slurm "
             "needs the same plugstack.conf on every node): %s refuses every --dl-* step until the admin corrects it",
             error, where, node, node, node);
    break;
  }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_yamltree.c: the YAML tree (trainer/config/yamltree.c): anchors,
 * aliases and merge keys as the tutorial's configs use them, and the limits
 * that bound any input's cost, each refused in one line: nesting depth, an
 * alias inside its own anchor, merged entries, document size, duplicate
 * keys (found in linear time), non-regular files. */
#include "config.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/config/input_file.h"
#include "trainer/config/yamltree.h"

static dlpar_error err;

/* Parses text; DLPAR_OK or the status, with err one line. */
static int parse(const char *text, ytree **tree)
{
  int rc;
  err.text[0] = '\0';
  rc = ytree_parse_string(text, "t.yaml", tree, &err);
  CHECK(rc == DLPAR_OK || (err.text[0] && !strchr(err.text, '\n')));
  return rc;
}

static bool refused_with(const char *text, const char *message)
{
  ytree *tree;
  const int rc = parse(text, &tree);
  ytree_free(tree);
  if (rc == DLPAR_OK || !strstr(err.text, message)) {
    fprintf(stderr, "expected a refusal with '%s', got rc %d '%s'\n", message, rc, err.text);
    return false;
  }
  return true;
}

static const char *scalar(const ynode *map, const char *key)
{
  const ynode *v = ynode_get(map, key);
  return v && v->kind == YNODE_SCALAR ? v->text : "(none)";
}

static void test_merge_keys(void)
{
  ytree *tree;
  const ynode *c;
  CHECK_INT(parse("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  x: 3\n", &tree), DLPAR_OK);
  c = ynode_get(ytree_root(tree), "c");
  CHECK_STR(scalar(c, "x"), "3"); /* its own key wins */
  CHECK_STR(scalar(c, "y"), "1"); /* then the first merged */
  CHECK_STR(scalar(c, "z"), "2");
  CHECK_INT(c->n, 6);
  CHECK_INT(ynode_get(c, "x")->line, 5);
  ytree_free(tree);
  CHECK(refused_with("a: &a 1\nb: {<<: *a}\n", "t.yaml:2: the merge key << needs a mapping"));
  /* a list of lists is not a merge (and cannot recurse through aliases) */
  CHECK(refused_with("a: &a {x: 1}\nb: &b [*a]\nc: {<<: [*b]}\n", "the merge key << needs a mapping"));
}

static void test_depth(void)
{
  char text[512];
  ytree *tree;
  for (int depth = 63; depth <= 65; depth++) {
    memset(text, '[', (size_t)depth);
    memset(text + depth, ']', (size_t)depth);
    text[2 * depth] = '\0';
    CHECK_INT(parse(text, &tree) == DLPAR_OK, depth <= YTREE_MAX_DEPTH);
    ytree_free(tree);
  }
  CHECK(refused_with(text, "t.yaml:1: nesting deeper than 64 levels"));
}

static void test_recursion(void)
{
  CHECK(refused_with("a: &a [*a]\n", "t.yaml:1: alias *a is inside its own anchor"));
  CHECK(refused_with("a: &a\n  <<: *a\n  b: 1\n", "t.yaml:2: alias *a is inside its own anchor"));
  CHECK(refused_with("a: &a {b: {c: *a}}\n", "alias *a is inside its own anchor"));
  CHECK(refused_with("a: *nowhere\n", "unknown alias *nowhere"));
}

/* A mapping of 2048 keys merged into 600 others copies 1.2M entries: over the limit. */
static void test_merge_limit(void)
{
  const int keys = 2048, merges = 600;
  size_t cap = (size_t)keys * 16 + (size_t)merges * 32 + 64, used = 0;
  char *text = malloc(cap);
  used += (size_t)snprintf(text + used, cap - used, "big: &big {");
  for (int i = 0; i < keys; i++)
    used += (size_t)snprintf(text + used, cap - used, "k%d: 1, ", i);
  used += (size_t)snprintf(text + used, cap - used, "end: 1}\n");
  for (int i = 0; i < merges; i++)
    used += (size_t)snprintf(text + used, cap - used, "m%d: {<<: *big}\n", i);
  CHECK(refused_with(text, "merge keys copy more than 1048576 entries"));
  free(text);
}

/* 90k keys and a duplicate at the end: found, and fast (a quadratic check takes seconds here). */
static void test_duplicates(void)
{
  const int keys = 90000;
  size_t cap = (size_t)keys * 16 + 64, used = 0;
  char *text = malloc(cap);
  struct timespec start, end;
  double seconds;
  for (int i = 0; i < keys; i++)
    used += (size_t)snprintf(text + used, cap - used, "k%d: 1\n", i);
  snprintf(text + used, cap - used, "k17: 2\n");
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK(refused_with(text, "t.yaml:90001: duplicate key 'k17' (each key once per mapping)"));
  clock_gettime(CLOCK_MONOTONIC, &end);
  seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  printf("%d keys: %.3f s\n", keys, seconds);
  CHECK(seconds < 10);
  free(text);
  CHECK(refused_with("a: 1\n\"a\": 2\n", "duplicate key 'a'"));
  CHECK(refused_with("\"a\\nb\": 1\n\"a\\nb\": 2\n", "duplicate key 'a\\nb'"));
}

/* 40k anchors, each used once: the lookups are hashed (a list made this quadratic). */
static void test_many_anchors(void)
{
  const int anchors = 40000;
  size_t cap = (size_t)anchors * 40 + 64, used = 0;
  char *text = malloc(cap);
  struct timespec start, end;
  ytree *tree;
  double seconds;
  used += (size_t)snprintf(text + used, cap - used, "a: [");
  for (int i = 0; i < anchors; i++)
    used += (size_t)snprintf(text + used, cap - used, "&a%d %d, ", i, i);
  used += (size_t)snprintf(text + used, cap - used, "0]\nb: [");
  for (int i = 0; i < anchors; i++)
    used += (size_t)snprintf(text + used, cap - used, "*a%d, ", anchors - 1 - i);
  snprintf(text + used, cap - used, "*a7]\n");
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK_INT(parse(text, &tree), DLPAR_OK);
  clock_gettime(CLOCK_MONOTONIC, &end);
  seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  printf("%d anchors and aliases: %.3f s\n", anchors, seconds);
  CHECK(seconds < 10);
  CHECK_INT(ynode_get(ytree_root(tree), "b")->n, anchors + 1);
  CHECK_STR(ynode_get(ytree_root(tree), "b")->items[anchors]->text, "7");
  ytree_free(tree);
  free(text);
  CHECK_INT(parse("a: &x 1\nb: &x 2\nc: *x\n", &tree), DLPAR_OK); /* a later anchor replaces an earlier one */
  CHECK_STR(ynode_get(ytree_root(tree), "c")->text, "2");
  ytree_free(tree);
}

static void test_size(void)
{
  const size_t n = YTREE_MAX_BYTES + 16;
  char *text = malloc(n + 1);
  memset(text, '#', n);
  text[n] = '\0';
  CHECK(refused_with(text, "t.yaml:1: the document is larger than 1048576 bytes"));
  free(text);
}

static void test_files(void)
{
  char dir[] = "/tmp/test_yamltree.XXXXXX", path[64];
  ytree *tree;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/fifo.yaml", dir);
  CHECK_INT(mkfifo(path, 0600), 0);
  CHECK_INT(ytree_parse_file(path, &tree, &err), DLPAR_ERR_INPUT); /* no writer: must not block */
  CHECK(strstr(err.text, "fifo.yaml: a FIFO, not a regular file (put the file itself there)") != NULL);
  ytree_free(tree);
  CHECK_INT(ytree_parse_file(dir, &tree, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, ": a directory, not a regular file") != NULL);
  ytree_free(tree);
  unlink(path);
  snprintf(path, sizeof(path), "%s/nul.yaml", dir);
  {
    FILE *f = fopen(path, "wb");
    fwrite("a: 1\n\0b: 2\n", 1, 11, f);
    fclose(f);
  }
  CHECK_INT(ytree_parse_file(path, &tree, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "nul.yaml: holds a NUL byte") != NULL);
  ytree_free(tree);
  unlink(path);
  rmdir(dir);
}

int main(void)
{
  test_merge_keys();
  test_depth();
  test_recursion();
  test_merge_limit();
  test_duplicates();
  test_many_anchors();
  test_size();
  test_files();
  return check_report("test_yamltree");
}

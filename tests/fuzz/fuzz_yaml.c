/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_yaml.c: the YAML tree (trainer/config/yamltree.c) on any text:
 * parsed, then walked the way a reader would (keys looked up, nulls
 * tested) with a budget, since aliases share nodes. */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "trainer/config/yamltree.h"

static void walk(const ynode *node, long *budget)
{
  if (--*budget < 0)
    return;
  if (node->kind == YNODE_SCALAR) {
    (void)ynode_is_null(node);
    return;
  }
  for (int i = 0; i < node->n && *budget > 0; i++) {
    if (node->kind == YNODE_MAPPING && i % 2 == 0 && node->items[i]->kind == YNODE_SCALAR &&
        ynode_get(node, node->items[i]->text) == NULL)
      abort(); /* a key present must be found */
    walk(node->items[i], budget);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_string(data, size);
  dlpar_error err = {0};
  ytree *tree = NULL;
  long budget = 100000;
  int rc = ytree_parse_string(text, "fuzz.yaml", &tree, &err);
  fuzz_expect_one_line(rc, err.text);
  if (rc == DLPAR_OK)
    walk(ytree_root(tree), &budget);
  ytree_free(tree);
  free(text);
  return 0;
}

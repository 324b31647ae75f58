/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/yamltree.h: a YAML document as a tree of scalars, sequences and
 * mappings with the line of every node, through libyaml. Anchors and
 * aliases are resolved (an alias shares its anchor's node) and merge keys
 * (`<<: *base`, `<<: [*a, *b]`) are applied: keys written in a mapping
 * override merged ones, as in YAML's merge-key spec, the format of the
 * Deep Learning at Scale tutorial's config/ViT.yaml. Any input costs
 * bounded time and memory: a document of at most YTREE_MAX_BYTES, nesting
 * of at most YTREE_MAX_DEPTH, at most YTREE_MAX_MERGED entries copied by
 * merge keys, no alias inside its own anchor; duplicate keys are found in
 * linear time. Each limit exceeded is one error line naming it. */
#ifndef DLPAR_YAMLTREE_H
#define DLPAR_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

#define YTREE_MAX_BYTES (1 << 20)    /* a config is a few KB */
#define YTREE_MAX_DEPTH 64           /* sequences and mappings inside each other */
#define YTREE_MAX_MERGED (1 << 20)   /* entries merge keys copy, in all */

typedef enum { YNODE_SCALAR, YNODE_SEQUENCE, YNODE_MAPPING } ynode_kind;

typedef struct ynode ynode;
struct ynode {
  ynode_kind kind;
  int line;          /* 1-based line where the node starts */
  char *text;        /* scalar: its text */
  bool quoted;       /* scalar: written in quotes (always a string) */
  ynode **items;     /* sequence: n items; mapping: n keys and n values, key i at 2i */
  int n;
  int cap;           /* items allocated */
};

typedef struct ytree ytree;

/* Parses a file (a regular file) or a string (name is used in messages). */
int ytree_parse_file(const char *path, ytree **tree, dlpar_error *err);
int ytree_parse_string(const char *text, const char *name, ytree **tree, dlpar_error *err);
void ytree_free(ytree *tree);

const ynode *ytree_root(const ytree *tree);
/* The value of key in a mapping, or NULL. */
const ynode *ynode_get(const ynode *mapping, const char *key);
/* YAML's null: ~, null, None (the tutorial's), or an empty plain scalar. */
bool ynode_is_null(const ynode *node);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/yamltree.c: YAML to a tree with lines, anchors, aliases and merge
 * keys (see yamltree.h). Every node is owned by the tree's arena list. */
#include "config.h"

#include "trainer/config/yamltree.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "common/status.h"
#include "trainer/config/input_file.h"
#include "common/text.h"

/* Names to nodes, for a mapping's keys (node unused) and the anchors: an
 * open-addressing hash table, so any number of them costs linear time. */
typedef struct {
  const char *name;
  ynode *node;
} entry;

typedef struct {
  entry *slots;
  size_t cap, used;
} name_table;

struct ytree {
  ynode *root;
  ynode **nodes; /* every node, for freeing */
  int nnodes, cap_nodes;
  name_table anchors; /* names owned (strdup) */
  const ynode *open[YTREE_MAX_DEPTH + 1]; /* the nodes being parsed, outermost first */
  int depth;
  long merged;   /* entries copied by merge keys so far */
  yaml_parser_t parser;
  const char *name;
  dlpar_error *err;
};

static void *grow(void *array, int *cap, int need, size_t size)
{
  if (need <= *cap)
    return array;
  *cap = *cap ? *cap * 2 : 16;
  if (*cap < need)
    *cap = need;
  return realloc(array, (size_t)*cap * size);
}

static ynode *new_node(ytree *t, ynode_kind kind, int line)
{
  ynode *node = calloc(1, sizeof(*node));
  ynode **nodes = grow(t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof(ynode *));
  if (nodes)
    t->nodes = nodes;
  if (!node || !nodes) {
    free(node);
    return NULL;
  }
  t->nodes[t->nnodes++] = node;
  node->kind = kind;
  node->line = line;
  return node;
}

static int add_item(ynode *parent, ynode *item)
{
  ynode **items = grow(parent->items, &parent->cap, parent->n + 1, sizeof(ynode *));
  if (!items)
    return -1;
  parent->items = items;
  parent->items[parent->n++] = item;
  return 0;
}

static unsigned long hash_text(const char *text)
{
  unsigned long h = 1469598103934665603UL; /* FNV-1a */
  for (; *text; text++)
    h = (h ^ (unsigned char)*text) * 1099511628211UL;
  return h;
}

static int grow_table(name_table *table)
{
  name_table bigger = {calloc(table->cap ? 2 * table->cap : 16, sizeof(entry)), table->cap ? 2 * table->cap : 16,
                       table->used};
  if (!bigger.slots)
    return -1;
  for (size_t j = 0; j < table->cap; j++) {
    size_t i;
    if (!table->slots[j].name)
      continue;
    for (i = hash_text(table->slots[j].name) & (bigger.cap - 1); bigger.slots[i].name; i = (i + 1) & (bigger.cap - 1))
      continue;
    bigger.slots[i] = table->slots[j];
  }
  free(table->slots);
  *table = bigger;
  return 0;
}

/* The entry of name, or the empty one where it goes (NULL: out of memory). */
static entry *table_slot(name_table *table, const char *name)
{
  size_t i;
  if (2 * (table->used + 1) > table->cap && grow_table(table) != 0)
    return NULL;
  for (i = hash_text(name) & (table->cap - 1); table->slots[i].name; i = (i + 1) & (table->cap - 1)) {
    if (strcmp(table->slots[i].name, name) == 0)
      break;
  }
  return &table->slots[i];
}

/* Adds a mapping's key: 1 when it was there already, 0 when added, -1 out of memory. */
static int add_key(name_table *keys, const char *key)
{
  entry *slot = table_slot(keys, key);
  if (!slot)
    return -1;
  if (slot->name)
    return 1;
  slot->name = key;
  keys->used++;
  return 0;
}

/* YAML lets a later anchor of a name replace an earlier one. */
static int record_anchor(ytree *t, const yaml_char_t *name, ynode *node)
{
  entry *slot;
  if (!name)
    return 0;
  if (!(slot = table_slot(&t->anchors, (const char *)name)))
    return -1;
  if (!slot->name) {
    if (!(slot->name = strdup((const char *)name)))
      return -1;
    t->anchors.used++;
  }
  slot->node = node;
  return 0;
}

static ynode *find_anchor(ytree *t, const char *name)
{
  entry *slot = table_slot(&t->anchors, name);
  return slot && slot->name ? slot->node : NULL;
}

/* "NAME:LINE: " and the message; arg (input text, or NULL) is shown printable. */
static int fail(ytree *t, int line, const char *fmt, const char *arg)
{
  char *text = t->err->text;
  const size_t len = sizeof(t->err->text);
  int n = snprintf(text, len, "%s:%d: ", dlpar_show(t->name).text, line);
  if (n > 0 && (size_t)n < len)
    snprintf(text + n, len - (size_t)n, fmt, arg ? dlpar_show(arg).text : "");
  return t->err->status = DLPAR_ERR_INPUT;
}

static int next_event(ytree *t, yaml_event_t *event)
{
  if (yaml_parser_parse(&t->parser, event))
    return DLPAR_OK;
  return fail(t, (int)t->parser.problem_mark.line + 1, "YAML syntax error: %s (check indentation and quotes)",
              t->parser.problem ? t->parser.problem : "unknown");
}

static int parse_node(ytree *t, yaml_event_t *event, ynode **out);

/* One mapping merged (`<<: *base`): its entries whose keys are not set yet. */
static int merge_mapping(ytree *t, ynode *map, name_table *keys, const ynode *source, int line)
{
  if (source->kind != YNODE_MAPPING)
    return fail(t, line, "the merge key << needs a mapping or a list of mappings (e.g. <<: *base)", NULL);
  for (int i = 0; i + 1 < source->n; i += 2) {
    const ynode *key = source->items[i];
    const int seen = key->kind == YNODE_SCALAR ? add_key(keys, key->text) : 0;
    if (seen == 1)
      continue;
    if (++t->merged > YTREE_MAX_MERGED)
      return fail(t, map->line, "merge keys copy more than %s entries (merge smaller mappings, or fewer times)",
                  "1048576");
    if (seen < 0 || add_item(map, source->items[i]) != 0 || add_item(map, source->items[i + 1]) != 0)
      return fail(t, map->line, "out of memory", NULL);
  }
  return DLPAR_OK;
}

/* `<<: *base` or `<<: [*a, *b]`: keys the mapping sets itself win, then
 * the merged mappings in order. */
static int apply_merge(ytree *t, ynode *map, name_table *keys, const ynode *merge_key, const ynode *source)
{
  int rc = DLPAR_OK;
  if (source->kind != YNODE_SEQUENCE)
    return merge_mapping(t, map, keys, source, merge_key->line);
  for (int i = 0; i < source->n && rc == DLPAR_OK; i++)
    rc = merge_mapping(t, map, keys, source->items[i], merge_key->line);
  return rc;
}

static int parse_mapping(ytree *t, ynode *map)
{
  const ynode **merges = NULL; /* each << key, then its value */
  name_table keys = {NULL, 0, 0};
  int nmerges = 0, cap_merges = 0, rc = DLPAR_OK;
  for (;;) {
    yaml_event_t event;
    ynode *key = NULL, *value = NULL;
    const ynode **more;
    if ((rc = next_event(t, &event)) != DLPAR_OK)
      break;
    if (event.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&event);
      break;
    }
    rc = parse_node(t, &event, &key);
    yaml_event_delete(&event);
    if (rc != DLPAR_OK || (rc = next_event(t, &event)) != DLPAR_OK)
      break;
    rc = parse_node(t, &event, &value);
    yaml_event_delete(&event);
    if (rc != DLPAR_OK)
      break;
    if (key->kind == YNODE_SCALAR && !key->quoted && strcmp(key->text, "<<") == 0) {
      if (!(more = grow(merges, &cap_merges, nmerges + 2, sizeof(*merges)))) {
        rc = fail(t, key->line, "out of memory", NULL);
        break;
      }
      merges = more;
      merges[nmerges++] = key;
      merges[nmerges++] = value;
      continue;
    }
    if (key->kind == YNODE_SCALAR && (rc = add_key(&keys, key->text)) != 0) {
      rc = rc > 0 ? fail(t, key->line, "duplicate key '%s' (each key once per mapping)", key->text)
                  : fail(t, key->line, "out of memory", NULL);
      break;
    }
    if (add_item(map, key) != 0 || add_item(map, value) != 0) {
      rc = fail(t, key->line, "out of memory", NULL);
      break;
    }
  }
  for (int i = 0; rc == DLPAR_OK && i < nmerges; i += 2)
    rc = apply_merge(t, map, &keys, merges[i], merges[i + 1]);
  free(merges);
  free(keys.slots);
  return rc;
}

static int parse_sequence(ytree *t, ynode *seq)
{
  for (;;) {
    yaml_event_t event;
    ynode *item = NULL;
    int rc;
    DLPAR_TRY(next_event(t, &event));
    if (event.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&event);
      return DLPAR_OK;
    }
    rc = parse_node(t, &event, &item);
    yaml_event_delete(&event);
    if (rc != DLPAR_OK)
      return rc;
    if (add_item(seq, item) != 0)
      return fail(t, seq->line, "out of memory", NULL);
  }
}

/* An alias shares its anchor's node; one inside that node would make a cycle. */
static int resolve_alias(ytree *t, const char *name, int line, ynode **out)
{
  if (!(*out = find_anchor(t, name)))
    return fail(t, line, "unknown alias *%s (define the &anchor before using it)", name);
  for (int d = 0; d < t->depth; d++) {
    if (t->open[d] == *out)
      return fail(t, line, "alias *%s is inside its own anchor (a node cannot contain itself: copy the part you need)",
                  name);
  }
  return DLPAR_OK;
}

/* A sequence or a mapping: parsed one level deeper. */
static int parse_collection(ytree *t, ynode_kind kind, const yaml_char_t *anchor_name, int line, ynode **out)
{
  int rc;
  if (t->depth == YTREE_MAX_DEPTH)
    return fail(t, line, "nesting deeper than %s levels (a config is a few levels deep: flatten it)", "64");
  if (!(*out = new_node(t, kind, line)) || record_anchor(t, anchor_name, *out) != 0)
    return fail(t, line, "out of memory", NULL);
  t->open[t->depth++] = *out;
  rc = kind == YNODE_SEQUENCE ? parse_sequence(t, *out) : parse_mapping(t, *out);
  t->depth--;
  return rc;
}

static int parse_node(ytree *t, yaml_event_t *event, ynode **out)
{
  const int line = (int)event->start_mark.line + 1;
  ynode *node;
  switch (event->type) {
  case YAML_ALIAS_EVENT:
    return resolve_alias(t, (const char *)event->data.alias.anchor, line, out);
  case YAML_SCALAR_EVENT:
    if (!(node = new_node(t, YNODE_SCALAR, line)) || !(node->text = strdup((const char *)event->data.scalar.value)))
      return fail(t, line, "out of memory", NULL);
    node->quoted = event->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                   event->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    *out = node;
    return record_anchor(t, event->data.scalar.anchor, node) == 0 ? DLPAR_OK : fail(t, line, "out of memory", NULL);
  case YAML_SEQUENCE_START_EVENT:
    return parse_collection(t, YNODE_SEQUENCE, event->data.sequence_start.anchor, line, out);
  case YAML_MAPPING_START_EVENT:
    return parse_collection(t, YNODE_MAPPING, event->data.mapping_start.anchor, line, out);
  default:
    return fail(t, line, "unexpected YAML structure", NULL);
  }
}

static int parse_document(ytree *t)
{
  yaml_event_t event;
  int rc;
  do {
    DLPAR_TRY(next_event(t, &event));
    if (event.type == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&event);
      return fail(t, 1, "the document is empty", NULL);
    }
    if (event.type == YAML_STREAM_START_EVENT || event.type == YAML_DOCUMENT_START_EVENT) {
      yaml_event_delete(&event);
      continue;
    }
    break;
  } while (1);
  rc = parse_node(t, &event, &t->root);
  yaml_event_delete(&event);
  return rc;
}

int ytree_parse_string(const char *text, const char *name, ytree **out, dlpar_error *err)
{
  const size_t len = strlen(text);
  ytree *t = calloc(1, sizeof(*t));
  int rc;
  *out = t;
  if (!t || !yaml_parser_initialize(&t->parser))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  t->name = name;
  t->err = err;
  if (len > YTREE_MAX_BYTES)
    rc = fail(t, 1, "the document is larger than %s bytes (a config is a few KB: check what you gave)", "1048576");
  else {
    yaml_parser_set_input_string(&t->parser, (const unsigned char *)text, len);
    rc = parse_document(t);
  }
  yaml_parser_delete(&t->parser);
  return rc;
}

/* The whole file, if it is a regular file of at most YTREE_MAX_BYTES. */
static int read_document(const char *path, char **text, dlpar_error *err)
{
  off_t size;
  ssize_t got = 0;
  int fd, rc;
  *text = NULL;
  DLPAR_TRY(input_file_open(path, "cannot open the config file (check the path)", &fd, &size, err));
  rc = DLPAR_ERR_INPUT;
  if (size > YTREE_MAX_BYTES)
    dlpar_error_set(err, rc, "%s: %lld bytes, more than the %d a config may have (check the path)",
                    dlpar_show(path).text, (long long)size, YTREE_MAX_BYTES);
  else if (!(*text = malloc((size_t)size + 1)))
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: out of memory", dlpar_show(path).text);
  else if ((got = read(fd, *text, (size_t)size)) != (ssize_t)size)
    dlpar_error_set(err, rc, "%s: cannot read the config file (check the path)", dlpar_show(path).text);
  else if (memchr(*text, '\0', (size_t)got))
    dlpar_error_set(err, rc, "%s: holds a NUL byte, so it is not YAML text (check the path)", dlpar_show(path).text);
  else {
    (*text)[got] = '\0';
    rc = DLPAR_OK;
  }
  close(fd);
  return rc;
}

int ytree_parse_file(const char *path, ytree **out, dlpar_error *err)
{
  char *text;
  int rc = read_document(path, &text, err);
  *out = NULL;
  if (rc == DLPAR_OK)
    rc = ytree_parse_string(text, path, out, err);
  free(text);
  return rc;
}

void ytree_free(ytree *t)
{
  if (!t)
    return;
  for (int i = 0; i < t->nnodes; i++) {
    free(t->nodes[i]->text);
    free(t->nodes[i]->items);
    free(t->nodes[i]);
  }
  for (size_t i = 0; i < t->anchors.cap; i++)
    free((char *)t->anchors.slots[i].name);
  free(t->nodes);
  free(t->anchors.slots);
  free(t);
}

const ynode *ytree_root(const ytree *t)
{
  return t->root;
}

const ynode *ynode_get(const ynode *map, const char *key)
{
  if (!map || map->kind != YNODE_MAPPING)
    return NULL;
  for (int i = 0; i + 1 < map->n; i += 2) {
    if (map->items[i]->kind == YNODE_SCALAR && strcmp(map->items[i]->text, key) == 0)
      return map->items[i + 1];
  }
  return NULL;
}

bool ynode_is_null(const ynode *node)
{
  static const char *const nulls[] = {"~", "null", "Null", "NULL", "None", ""};
  if (node->kind != YNODE_SCALAR || node->quoted)
    return false;
  for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
    if (strcmp(node->text, nulls[i]) == 0)
      return true;
  }
  return false;
}

/* trainer/yamltree.c: YAML to a tree with lines, anchors, aliases and merge
 * keys (see yamltree.h). Every node is owned by the tree's arena list. */
#include "config.h"

#include "trainer/yamltree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "launcher/status.h"

typedef struct {
  char *name;
  ynode *node;
} anchor;

struct ytree {
  ynode *root;
  ynode **nodes; /* every node, for freeing */
  int nnodes, cap_nodes;
  anchor *anchors;
  int nanchors, cap_anchors;
  yaml_parser_t parser;
  const char *name;
  char *err;
  size_t errlen;
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
  if (!node || !nodes) {
    free(node);
    return NULL;
  }
  t->nodes = nodes;
  t->nodes[t->nnodes++] = node;
  node->kind = kind;
  node->line = line;
  return node;
}

static int add_item(ynode *parent, ynode *item)
{
  ynode **items = realloc(parent->items, sizeof(ynode *) * (size_t)(parent->n + 1));
  if (!items)
    return -1;
  parent->items = items;
  parent->items[parent->n++] = item;
  return 0;
}

static int record_anchor(ytree *t, const yaml_char_t *name, ynode *node)
{
  anchor *anchors;
  if (!name)
    return 0;
  anchors = grow(t->anchors, &t->cap_anchors, t->nanchors + 1, sizeof(anchor));
  if (!anchors)
    return -1;
  t->anchors = anchors;
  t->anchors[t->nanchors].name = strdup((const char *)name);
  t->anchors[t->nanchors++].node = node;
  return 0;
}

static ynode *find_anchor(const ytree *t, const char *name)
{
  for (int i = t->nanchors - 1; i >= 0; i--) {
    if (strcmp(t->anchors[i].name, name) == 0)
      return t->anchors[i].node;
  }
  return NULL;
}

static int fail(ytree *t, int line, const char *fmt, const char *arg)
{
  int n = snprintf(t->err, t->errlen, "%s:%d: ", t->name, line);
  if (n > 0 && (size_t)n < t->errlen)
    snprintf(t->err + n, t->errlen - (size_t)n, fmt, arg);
  return DLPAR_ERR_INPUT;
}

static int next_event(ytree *t, yaml_event_t *event)
{
  if (yaml_parser_parse(&t->parser, event))
    return DLPAR_OK;
  return fail(t, (int)t->parser.problem_mark.line + 1, "YAML syntax error: %s (check indentation and quotes)",
              t->parser.problem ? t->parser.problem : "unknown");
}

static int parse_node(ytree *t, yaml_event_t *event, ynode **out);

static bool has_key(const ynode *map, const char *key)
{
  for (int i = 0; i + 1 < map->n; i += 2) {
    if (map->items[i]->kind == YNODE_SCALAR && strcmp(map->items[i]->text, key) == 0)
      return true;
  }
  return false;
}

/* `<<: *base` (or a sequence of them): copy the merged mappings' entries
 * whose keys the mapping does not set itself. */
static int apply_merge(ytree *t, ynode *map, const ynode *source)
{
  if (source->kind == YNODE_SEQUENCE) {
    for (int i = 0; i < source->n; i++) {
      int rc = apply_merge(t, map, source->items[i]);
      if (rc != DLPAR_OK)
        return rc;
    }
    return DLPAR_OK;
  }
  if (source->kind != YNODE_MAPPING)
    return fail(t, source->line, "%s", "the merge key << needs a mapping or a list of mappings (e.g. <<: *base)");
  for (int i = 0; i + 1 < source->n; i += 2) {
    if (source->items[i]->kind == YNODE_SCALAR && has_key(map, source->items[i]->text))
      continue;
    if (add_item(map, source->items[i]) != 0 || add_item(map, source->items[i + 1]) != 0)
      return fail(t, map->line, "%s", "out of memory");
  }
  return DLPAR_OK;
}

static int parse_mapping(ytree *t, ynode *map)
{
  const ynode **merges = NULL;
  int nmerges = 0, rc = DLPAR_OK;
  for (;;) {
    yaml_event_t event;
    ynode *key = NULL, *value = NULL;
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
      const ynode **more = realloc(merges, sizeof(*merges) * (size_t)(nmerges + 1));
      if (!more) {
        rc = fail(t, key->line, "%s", "out of memory");
        break;
      }
      merges = more;
      merges[nmerges++] = value;
      continue;
    }
    if (key->kind == YNODE_SCALAR && has_key(map, key->text)) {
      rc = fail(t, key->line, "duplicate key '%s' (each key once per mapping)", key->text);
      break;
    }
    if (add_item(map, key) != 0 || add_item(map, value) != 0) {
      rc = fail(t, key->line, "%s", "out of memory");
      break;
    }
  }
  for (int i = 0; rc == DLPAR_OK && i < nmerges; i++)
    rc = apply_merge(t, map, merges[i]);
  free(merges);
  return rc;
}

static int parse_sequence(ytree *t, ynode *seq)
{
  for (;;) {
    yaml_event_t event;
    ynode *item = NULL;
    int rc = next_event(t, &event);
    if (rc != DLPAR_OK)
      return rc;
    if (event.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&event);
      return DLPAR_OK;
    }
    rc = parse_node(t, &event, &item);
    yaml_event_delete(&event);
    if (rc != DLPAR_OK)
      return rc;
    if (add_item(seq, item) != 0)
      return fail(t, seq->line, "%s", "out of memory");
  }
}

static int parse_node(ytree *t, yaml_event_t *event, ynode **out)
{
  const int line = (int)event->start_mark.line + 1;
  ynode *node;
  switch (event->type) {
  case YAML_ALIAS_EVENT:
    *out = find_anchor(t, (const char *)event->data.alias.anchor);
    return *out ? DLPAR_OK : fail(t, line, "unknown alias *%s (define the &anchor before using it)",
                                  (const char *)event->data.alias.anchor);
  case YAML_SCALAR_EVENT:
    if (!(node = new_node(t, YNODE_SCALAR, line)) || !(node->text = strdup((const char *)event->data.scalar.value)))
      return fail(t, line, "%s", "out of memory");
    node->quoted = event->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                   event->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    *out = node;
    return record_anchor(t, event->data.scalar.anchor, node) == 0 ? DLPAR_OK : fail(t, line, "%s", "out of memory");
  case YAML_SEQUENCE_START_EVENT:
    if (!(node = new_node(t, YNODE_SEQUENCE, line)) || record_anchor(t, event->data.sequence_start.anchor, node) != 0)
      return fail(t, line, "%s", "out of memory");
    *out = node;
    return parse_sequence(t, node);
  case YAML_MAPPING_START_EVENT:
    if (!(node = new_node(t, YNODE_MAPPING, line)) || record_anchor(t, event->data.mapping_start.anchor, node) != 0)
      return fail(t, line, "%s", "out of memory");
    *out = node;
    return parse_mapping(t, node);
  default:
    return fail(t, line, "%s", "unexpected YAML structure");
  }
}

static int parse_document(ytree *t)
{
  yaml_event_t event;
  int rc;
  do {
    if ((rc = next_event(t, &event)) != DLPAR_OK)
      return rc;
    if (event.type == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&event);
      return fail(t, 1, "%s", "the document is empty");
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

static int parse_with(ytree *t, char *err, size_t errlen)
{
  t->err = err;
  t->errlen = errlen;
  return parse_document(t);
}

int ytree_parse_file(const char *path, ytree **out, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  ytree *t;
  int rc;
  *out = NULL;
  if (!f) {
    snprintf(err, errlen, "%s: cannot open the config file (check the path)", path);
    return DLPAR_ERR_INPUT;
  }
  t = calloc(1, sizeof(*t));
  if (!t || !yaml_parser_initialize(&t->parser)) {
    fclose(f);
    free(t);
    snprintf(err, errlen, "out of memory");
    return DLPAR_ERR_SYSTEM;
  }
  t->name = path;
  yaml_parser_set_input_file(&t->parser, f);
  rc = parse_with(t, err, errlen);
  yaml_parser_delete(&t->parser);
  fclose(f);
  *out = t;
  return rc;
}

int ytree_parse_string(const char *text, const char *name, ytree **out, char *err, size_t errlen)
{
  ytree *t = calloc(1, sizeof(*t));
  int rc;
  *out = t;
  if (!t || !yaml_parser_initialize(&t->parser)) {
    snprintf(err, errlen, "out of memory");
    return DLPAR_ERR_SYSTEM;
  }
  t->name = name;
  yaml_parser_set_input_string(&t->parser, (const unsigned char *)text, strlen(text));
  rc = parse_with(t, err, errlen);
  yaml_parser_delete(&t->parser);
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
  for (int i = 0; i < t->nanchors; i++)
    free(t->anchors[i].name);
  free(t->nodes);
  free(t->anchors);
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

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/train_config.c: the tutorial's YAML configs (see train_config.h). One table
 * of keys drives reading, overriding, printing and error messages. */
#include "config.h"

#include "trainer/config/train_config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "trainer/config/input_file.h"
#include "trainer/config/yamltree.h"
#include "common/text.h"

typedef enum { K_INT, K_FLOAT, K_STRING, K_BOOL, K_PAIR, K_LIMIT, K_AMP } key_type;

typedef struct {
  const char *name;
  key_type type;
  size_t offset, size; /* size: strings' capacity */
  double min;          /* numbers: smallest accepted */
} key_spec;

#define KEY(n, t, m) {#n, t, offsetof(train_config, n), sizeof(((train_config *)0)->n), m}
static const key_spec keys[] = {
    KEY(embed_dim, K_INT, 1), KEY(depth, K_INT, 1), KEY(num_heads, K_INT, 1), KEY(patch_size, K_INT, 1),
    KEY(dropout, K_FLOAT, 0), KEY(img_size, K_PAIR, 1), KEY(n_in_channels, K_INT, 1),
    KEY(n_out_channels, K_INT, 1), KEY(dt, K_INT, 1), KEY(global_batch_size, K_INT, 1),
    KEY(num_iters, K_INT, 1), KEY(num_epochs, K_INT, 0), KEY(local_batch_size, K_INT, 0), KEY(warmup, K_INT, 0), KEY(lr, K_FLOAT, 0), KEY(lr_schedule, K_STRING, 0),
    KEY(optimizer, K_STRING, 0), {"amp_mode", K_AMP, offsetof(train_config, amp), sizeof(amp_mode), 0},
    KEY(enable_fused, K_BOOL, 0), KEY(enable_jit, K_BOOL, 0), KEY(enable_apex, K_BOOL, 0),
    KEY(disable_broadcast_buffers, K_BOOL, 0), KEY(noddp, K_BOOL, 0), KEY(row_parallel_size, K_INT, 0),
    KEY(col_parallel_size, K_INT, 1), KEY(context_parallel, K_INT, 1), KEY(parallel_order, K_STRING, 0),
    KEY(expdir, K_STRING, 0),
    KEY(data_loader_config, K_STRING, 0), KEY(num_data_workers, K_INT, 0), KEY(train_data_path, K_STRING, 0),
    KEY(valid_data_path, K_STRING, 0), KEY(inf_data_path, K_STRING, 0), KEY(time_means_path, K_STRING, 0),
    KEY(global_means_path, K_STRING, 0), KEY(global_stds_path, K_STRING, 0), KEY(limit_nsamples, K_LIMIT, 1),
    KEY(limit_nsamples_val, K_LIMIT, 1), KEY(wireup_info, K_STRING, 0), KEY(wireup_store, K_STRING, 0),
    KEY(seed, K_INT, 0), KEY(bucket_mb, K_FLOAT, 0), KEY(checkpoint_every, K_INT, 0),
    KEY(stop_after_iters, K_INT, 0), KEY(log_every, K_INT, 1), KEY(tf32, K_BOOL, 0), KEY(cuda_graph, K_BOOL, 0),
    KEY(attention, K_STRING, 0), KEY(deterministic, K_BOOL, 0), KEY(recompute, K_STRING, 0),
    KEY(max_skipped_steps, K_INT, 0), KEY(skew_every, K_INT, 1), KEY(straggler_threshold, K_FLOAT, 0),
};
#ifdef HAVE_CUDNN
#define HAVE_CUDNN_ATTENTION 1
#else
#define HAVE_CUDNN_ATTENTION 0
#endif

#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

/* Other names the tutorials give a key (train.py's flags). */
static const struct {
  const char *alias, *key;
} aliases[] = {{"bucket_cap_mb", "bucket_mb"}, {"tensor_parallel", "row_parallel_size"}, {"allow_tf32", "tf32"}};
_Static_assert(NKEYS <= CONFIG_MAX_KEYS, "CONFIG_MAX_KEYS too small");

/* The tutorial's base config, and dlpar's defaults for its own keys. */
static void set_defaults(train_config *c)
{
  memset(c, 0, sizeof(*c));
  c->embed_dim = 384;
  c->depth = 12;
  c->num_heads = 8;
  c->patch_size = 8;
  c->img_size[0] = 360;
  c->img_size[1] = 720;
  c->n_in_channels = c->n_out_channels = 20;
  c->dt = 1;
  c->global_batch_size = 16;
  c->num_iters = 30000;
  c->lr = 5e-4;
  snprintf(c->lr_schedule, sizeof(c->lr_schedule), "cosine");
  snprintf(c->optimizer, sizeof(c->optimizer), "Adam");
  snprintf(c->expdir, sizeof(c->expdir), "./logs");
  snprintf(c->data_loader_config, sizeof(c->data_loader_config), "pytorch");
  snprintf(c->train_data_path, sizeof(c->train_data_path), "./data/train");
  snprintf(c->valid_data_path, sizeof(c->valid_data_path), "./data/valid");
  snprintf(c->inf_data_path, sizeof(c->inf_data_path), "./data/test");
  snprintf(c->time_means_path, sizeof(c->time_means_path), "./data/stats/time_means.npy");
  snprintf(c->global_means_path, sizeof(c->global_means_path), "./data/stats/global_means.npy");
  snprintf(c->global_stds_path, sizeof(c->global_stds_path), "./data/stats/global_stds.npy");
  c->limit_nsamples = c->limit_nsamples_val = -1;
  snprintf(c->wireup_info, sizeof(c->wireup_info), "env");
  snprintf(c->wireup_store, sizeof(c->wireup_store), "tcp");
  c->col_parallel_size = c->context_parallel = 1;
  snprintf(c->parallel_order, sizeof(c->parallel_order), "tp-cp-dp");
  c->bucket_mb = 25;
  c->log_every = 1;
  c->skew_every = 50;
  c->straggler_threshold = 1.5;
  snprintf(c->attention, sizeof(c->attention), "%s", HAVE_CUDNN_ATTENTION ? "cudnn" : "reference");
  snprintf(c->recompute, sizeof(c->recompute), "gelu");
}

static const char *type_name(key_type type)
{
  switch (type) {
  case K_INT: return "a whole number";
  case K_FLOAT: return "a number";
  case K_BOOL: return "true or false";
  case K_PAIR: return "a list of two whole numbers, e.g. [360, 720]";
  case K_LIMIT: return "a whole number or None";
  case K_AMP: return "none, fp16 or bf16";
  default: return "a string";
  }
}

static int parse_long(const char *text, long *out)
{
  char *end;
  errno = 0;
  *out = strtol(text, &end, 10);
  return *text && !*end && errno == 0 ? 0 : -1;
}

static int parse_double(const char *text, double *out)
{
  char *end;
  errno = 0;
  *out = strtod(text, &end);
  return *text && !*end && errno == 0 && isfinite(*out) ? 0 : -1;
}

/* Stores one value; 0, or -1 when it has the wrong type or range. */
static int store(const key_spec *k, const ynode *v, train_config *c)
{
  char *field = (char *)c + k->offset;
  long l;
  double d;
  if (k->type == K_PAIR) {
    long a, b;
    if (v->kind != YNODE_SEQUENCE || v->n != 2 || v->items[0]->kind != YNODE_SCALAR ||
        v->items[1]->kind != YNODE_SCALAR || parse_long(v->items[0]->text, &a) || parse_long(v->items[1]->text, &b) ||
        a < k->min || b < k->min || a > 1 << 20 || b > 1 << 20)
      return -1;
    ((int *)field)[0] = (int)a, ((int *)field)[1] = (int)b;
    return 0;
  }
  if (v->kind != YNODE_SCALAR)
    return -1;
  switch (k->type) {
  case K_INT:
    if (v->quoted || parse_long(v->text, &l) || l < k->min || l > INT_MAX)
      return -1;
    if (k->size == sizeof(long))
      *(long *)field = l;
    else
      *(int *)field = (int)l;
    return 0;
  case K_LIMIT:
    if (ynode_is_null(v)) {
      *(long *)field = -1;
      return 0;
    }
    if (v->quoted || parse_long(v->text, &l) || l < k->min)
      return -1;
    *(long *)field = l;
    return 0;
  case K_FLOAT:
    if (v->quoted || parse_double(v->text, &d) || d < k->min)
      return -1;
    *(double *)field = d;
    return 0;
  case K_BOOL:
    if (!strcmp(v->text, "true") || !strcmp(v->text, "True") || !strcmp(v->text, "yes"))
      *(bool *)field = true;
    else if (!strcmp(v->text, "false") || !strcmp(v->text, "False") || !strcmp(v->text, "no"))
      *(bool *)field = false;
    else
      return -1;
    return 0;
  case K_AMP:
    if (!strcmp(v->text, "none"))
      *(amp_mode *)field = AMP_NONE;
    else if (!strcmp(v->text, "bf16"))
      *(amp_mode *)field = AMP_BF16;
    else if (!strcmp(v->text, "fp16"))
      *(amp_mode *)field = AMP_FP16;
    else
      return -1;
    return 0;
  default: /* K_STRING */
    if (strlen(v->text) >= k->size)
      return -1;
    snprintf(field, k->size, "%s", ynode_is_null(v) ? "" : v->text);
    return 0;
  }
}

static int find_key(const char *name)
{
  for (size_t a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++) {
    if (strcmp(aliases[a].alias, name) == 0)
      name = aliases[a].key;
  }
  for (int i = 0; i < NKEYS; i++) {
    if (strcmp(keys[i].name, name) == 0)
      return i;
  }
  return -1;
}

bool config_is_key(const char *key)
{
  return find_key(key) >= 0;
}

bool config_key_is_bool(const char *key)
{
  const int index = find_key(key);
  return index >= 0 && keys[index].type == K_BOOL;
}

int config_notes(const train_config *c, const char **notes, int max)
{
  const struct {
    bool set;
    const char *note;
  } table[] = {
      {c->enable_apex, "enable_apex: dlpar's Adam is already one fused pass per parameter bucket (no apex)"},
      {c->enable_fused, "enable_fused: dlpar's Adam is always fused; nothing to switch on"},
      {c->enable_jit, "enable_jit: dlpar's kernels are compiled ahead of time (fused layernorm, GELU, attention); "
                      "there is no JIT step"},
      {strcmp(c->data_loader_config, "dali") == 0, "data_loader_config=dali: dlpar reads the HDF5 files with its own "
                                                   "prefetching loader (num_data_workers batches ahead), not DALI"},
      {c->disable_broadcast_buffers, "disable_broadcast_buffers: dlpar's ViT has no buffers to broadcast; "
                                     "gradients are all-reduced in bucket_mb buckets"},
      {c->noddp, "noddp: dlpar always all-reduces the gradients over the data-parallel group; the flag changes "
                 "nothing"},
  };
  int n = 0;
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]) && n < max; i++) {
    if (table[i].set)
      notes[n++] = table[i].note;
  }
  return n;
}

static int apply_value(config_set *set, int key, const ynode *value, const char *source, dlpar_error *err)
{
  if (store(&keys[key], value, &set->cfg) != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %s: expected %s, got '%s'", source, keys[key].name,
                           type_name(keys[key].type),
                           value->kind == YNODE_SCALAR ? dlpar_show(value->text).text
                           : value->kind == YNODE_SEQUENCE ? "a list" : "a mapping");
  snprintf(set->source[key], sizeof(set->source[key]), "%s", source);
  return DLPAR_OK;
}

static int apply_mapping(config_set *set, const ynode *map, const char *file, dlpar_error *err)
{
  for (int i = 0; i + 1 < map->n; i += 2) {
    const ynode *key = map->items[i];
    char source[DLPAR_SHOWN_LEN + 16];
    int index;
    snprintf(source, sizeof(source), "%s:%d", dlpar_show(file).text, key->line);
    index = key->kind == YNODE_SCALAR ? find_key(key->text) : -1;
    if (index < 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: unknown key '%s' in config '%s' (see dlpar-train(1) for the "
                             "keys)", source, key->kind == YNODE_SCALAR ? dlpar_show(key->text).text : "?",
                             dlpar_show(set->cfg.name).text);
    DLPAR_TRY(apply_value(set, index, map->items[i + 1], source, err));
  }
  return DLPAR_OK;
}

/* "--key=value": the value is read as YAML (so [32, 64] and 5E-4 work). */
static int apply_override(config_set *set, const char *arg, dlpar_error *err)
{
  const char *eq = strchr(arg, '=');
  char key[64], name[80];
  ytree *tree = NULL;
  int index, rc;
  if (strncmp(arg, "--", 2) != 0 || !eq || eq - arg - 2 <= 0 || eq - arg - 2 >= (long)sizeof(key))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: expected --key=value (e.g. --lr=1e-3)", dlpar_show(arg).text);
  snprintf(key, sizeof(key), "%.*s", (int)(eq - arg - 2), arg + 2);
  if ((index = find_key(key)) < 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--%s: unknown key (see dlpar-train(1) for the keys)",
                           dlpar_show(key).text);
  snprintf(name, sizeof(name), "--%s", key);
  rc = ytree_parse_string(*(eq + 1) ? eq + 1 : "~", name, &tree, err);
  if (rc == DLPAR_OK)
    rc = apply_value(set, index, ytree_root(tree), "command line", err);
  ytree_free(tree);
  return rc;
}

int config_load(config_set *set, const char *path, const char *name, char *const *overrides, int noverrides,
                dlpar_error *err)
{
  ytree *tree = NULL;
  const ynode *config;
  int rc;
  memset(set, 0, sizeof(*set));
  set_defaults(&set->cfg);
  snprintf(set->cfg.name, sizeof(set->cfg.name), "%s", name);
  snprintf(set->cfg.file, sizeof(set->cfg.file), "%s", path);
  for (int i = 0; i < NKEYS; i++)
    snprintf(set->source[i], sizeof(set->source[i]), "default");
  DLPAR_TRY_GOTO(ytree_parse_file(path, &tree, err), rc, out);
  config = ynode_get(ytree_root(tree), name);
  if (!config || config->kind != YNODE_MAPPING) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no config named '%s' (give --config=NAME with a top-level mapping "
                         "of the file)", dlpar_show(path).text, dlpar_show(name).text);
    goto out;
  }
  DLPAR_TRY_GOTO(apply_mapping(set, config, path, err), rc, out);
  for (int i = 0; i < noverrides && rc == DLPAR_OK; i++)
    rc = apply_override(set, overrides[i], err);
out:
  ytree_free(tree);
  return rc;
}

static const char *source_of(const config_set *set, const char *key)
{
  return set->source[find_key(key)];
}

/* The key whose value makes a size beyond the kernels' int dimensions (the
 * MLP's 4 x embed_dim, 16 tensors per block, a patch's values, rows of
 * local batch x tokens), or NULL. After the divisibility checks. */
static const char *too_large(const train_config *c, int dp)
{
  const long tokens = (long)(c->img_size[0] / c->patch_size) * (c->img_size[1] / c->patch_size);
  const long channels = c->n_in_channels > c->n_out_channels ? c->n_in_channels : c->n_out_channels;
  if (4L * c->embed_dim > INT_MAX)
    return "embed_dim";
  if (c->depth > (INT_MAX - 6) / 16)
    return "depth";
  if ((long)c->patch_size * c->patch_size > INT_MAX / channels)
    return "patch_size";
  return tokens > INT_MAX / (c->global_batch_size / dp) ? "img_size" : NULL;
}

/* The tutorial's --local_batch_size: global = local x data-parallel size. */
static void resolve_batch(config_set *set, int dp)
{
  train_config *c = &set->cfg;
  char local_source[sizeof(set->source[0])];
  if (c->local_batch_size <= 0)
    return;
  c->global_batch_size = c->local_batch_size * dp;
  snprintf(local_source, sizeof(local_source), "%s", source_of(set, "local_batch_size"));
  snprintf(set->source[find_key("global_batch_size")], sizeof(set->source[0]), "%.*s (local_batch_size x %d)",
           PATH_MAX, local_source, dp);
}

/* The tutorial's model-parallel flags name the grid dlpar got from the launcher. */
static int check_parallel(const config_set *set, int tp, dlpar_error *err)
{
  const train_config *c = &set->cfg;
  if (c->row_parallel_size > 0 && c->row_parallel_size != tp)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: row_parallel_size=%d, but the grid has %d tensor-parallel "
                           "rank(s) (launch with --dl-parallel=%dxD, or drop the flag)",
                           source_of(set, "row_parallel_size"), c->row_parallel_size, tp, c->row_parallel_size);
  if (c->col_parallel_size != 1)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: col_parallel_size=%d: dlpar-train splits over rows only, as the "
                           "tutorial's train_mp.py does (set it to 1)", source_of(set, "col_parallel_size"),
                           c->col_parallel_size);
  if (c->context_parallel != 1)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: context_parallel=%d: dlpar-train has no context parallelism (set "
                           "it to 1; --dl-parallel=MxD gives tensor x data)", source_of(set, "context_parallel"),
                           c->context_parallel);
  if (strcmp(c->parallel_order, "tp-cp-dp") && strcmp(c->parallel_order, "tp-dp"))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: parallel_order=%s: dlpar's grid puts tensor-parallel ranks next "
                           "to each other (tp-cp-dp or tp-dp)", source_of(set, "parallel_order"),
                           dlpar_show(c->parallel_order).text);
  return DLPAR_OK;
}

int config_check(config_set *set, int tp, int dp, dlpar_error *err)
{
  const train_config *c = &set->cfg;
  resolve_batch(set, dp);
  DLPAR_TRY(check_parallel(set, tp, err));
  if (c->embed_dim % c->num_heads)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: embed_dim=%d is not a multiple of num_heads=%d (choose num_heads "
                           "dividing embed_dim)", source_of(set, "num_heads"), c->embed_dim, c->num_heads);
  if (c->num_heads % tp)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: num_heads=%d cannot be split over %d tensor-parallel ranks (use "
                           "--dl-parallel=MxD with M dividing %d)", source_of(set, "num_heads"), c->num_heads, tp,
                           c->num_heads);
  if (c->img_size[0] % c->patch_size || c->img_size[1] % c->patch_size)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: img_size=[%d, %d] is not a multiple of patch_size=%d (crop it to "
                           "a multiple)", source_of(set, "img_size"), c->img_size[0], c->img_size[1], c->patch_size);
  if (c->global_batch_size % dp)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: global_batch_size=%d cannot be split over %d data-parallel ranks "
                           "(use a multiple of %d, or another grid)", source_of(set, "global_batch_size"),
                           c->global_batch_size, dp, dp);
  if (c->dropout != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: dropout=%g: dlpar-train has no dropout (set dropout: 0.0)",
                           source_of(set, "dropout"), c->dropout);
  if (strcmp(c->optimizer, "Adam") != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: optimizer=%s: dlpar-train implements Adam only (set optimizer: "
                           "'Adam')", source_of(set, "optimizer"), dlpar_show(c->optimizer).text);
  if (strcmp(c->lr_schedule, "cosine") && strcmp(c->lr_schedule, "constant") && strcmp(c->lr_schedule, "none"))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: lr_schedule=%s: expected cosine, constant or none",
                           source_of(set, "lr_schedule"), dlpar_show(c->lr_schedule).text);
  if (too_large(c, dp))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %s makes tensors beyond 32-bit sizes (img_size=[%d, %d], "
                           "patch_size=%d, embed_dim=%d, depth=%d, %d samples per rank: lower it)",
                           source_of(set, too_large(c, dp)), too_large(c, dp), c->img_size[0], c->img_size[1],
                           c->patch_size, c->embed_dim, c->depth, c->global_batch_size / dp);
  if (c->lr <= 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: lr=%g: the learning rate must be positive", source_of(set, "lr"),
                           c->lr);
  if (strcmp(c->attention, "cudnn") && strcmp(c->attention, "reference"))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: attention=%s: expected cudnn or reference",
                           source_of(set, "attention"), dlpar_show(c->attention).text);
  if (!HAVE_CUDNN_ATTENTION && !strcmp(c->attention, "cudnn"))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: attention=cudnn: this dlpar-train was built without cuDNN (set "
                           "attention: reference, or rebuild where configure finds cuDNN 9.13.1 or later)",
                           source_of(set, "attention"));
  if (strcmp(c->recompute, "gelu") && strcmp(c->recompute, "none"))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: recompute=%s: expected gelu (GELU's output recomputed in the "
                           "backward: less memory) or none (kept from the forward)", source_of(set, "recompute"),
                           dlpar_show(c->recompute).text);
  return DLPAR_OK;
}

/* Whether YAML keeps code point c as is inside a double-quoted scalar: not
 * a control character, not one of YAML's line breaks (U+0085, U+2028,
 * U+2029, which it folds into a space), not a BOM or non-character. */
static bool yaml_keeps(unsigned long c)
{
  return c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0) && c != 0x2028 && c != 0x2029 && c != 0xfeff &&
         c != 0xfffe && c != 0xffff;
}

/* text as a YAML double-quoted scalar and a newline: \\ and " escaped, and
 * every character YAML would not keep as \xNN, \uNNNN or \UNNNNNNNN, so any
 * value reads back as itself. (Values came through libyaml: valid UTF-8.) */
static size_t yaml_quoted(const char *text, char *out, size_t len)
{
  size_t used = (size_t)snprintf(out, len, "\"");
  for (const char *p = text; *p && used < len;) {
    unsigned long c;
    const size_t n = dlpar_utf8_decode(p, &c);
    if (n == 0) /* not UTF-8: the byte as \xNN */
      c = (unsigned char)*p;
    if (c == '"' || c == '\\')
      used += (size_t)snprintf(out + used, len - used, "\\%c", (char)c);
    else if (n && yaml_keeps(c))
      used += (size_t)snprintf(out + used, len - used, "%.*s", (int)n, p);
    else
      used += (size_t)snprintf(out + used, len - used,
                               c < 0x100     ? "\\x%02lx"
                               : c < 0x10000 ? "\\u%04lx"
                                             : "\\U%08lx",
                               c);
    p += n ? n : 1;
  }
  return used < len ? used + (size_t)snprintf(out + used, len - used, "\"\n") : used;
}

int config_to_yaml(const train_config *c, char *out, size_t len, dlpar_error *err)
{
  size_t used = 0;
  used += (size_t)snprintf(out + used, len - used, "# dlpar-train: config '%s' of %s, resolved\n",
                           dlpar_show(c->name).text, dlpar_show(c->file).text);
  for (int i = 0; i < NKEYS && used < len; i++) {
    const key_spec *k = &keys[i];
    const char *field = (const char *)c + k->offset;
    used += (size_t)snprintf(out + used, len - used, "%s: ", k->name);
    if (used >= len)
      break;
    switch (k->type) {
    case K_INT:
      used += (size_t)(k->size == sizeof(long) ? snprintf(out + used, len - used, "%ld\n", *(const long *)field)
                                               : snprintf(out + used, len - used, "%d\n", *(const int *)field));
      break;
    case K_LIMIT:
      used += (size_t)(*(const long *)field < 0 ? snprintf(out + used, len - used, "None\n")
                                                : snprintf(out + used, len - used, "%ld\n", *(const long *)field));
      break;
    case K_FLOAT: used += (size_t)snprintf(out + used, len - used, "%.17g\n", *(const double *)field); break;
    case K_BOOL: used += (size_t)snprintf(out + used, len - used, "%s\n", *(const bool *)field ? "true" : "false"); break;
    case K_PAIR:
      used += (size_t)snprintf(out + used, len - used, "[%d, %d]\n", ((const int *)field)[0], ((const int *)field)[1]);
      break;
    case K_AMP: {
      static const char *const names[] = {"none", "bf16", "fp16"};
      used += (size_t)snprintf(out + used, len - used, "%s\n", names[*(const amp_mode *)field]);
      break;
    }
    default: used += yaml_quoted(field, out + used, len - used); break;
    }
  }
  if (used < len)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "config '%s': the resolved config is longer than %zu bytes (shorten its "
                         "strings)", dlpar_show(c->name).text, len);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/train_config.h: the training configuration, read from the
 * Deep Learning at Scale tutorial's YAML format unchanged, plus --key=value
 * overrides, checked against the grid. The format is config/ViT.yaml's,
 * with named top-level configs, anchors, merge keys, and its keys and
 * value spellings. Every key keeps where its value came from, FILE:LINE or
 * the command line, for messages. */
#ifndef DLPAR_TRAIN_CONFIG_H
#define DLPAR_TRAIN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef enum { AMP_NONE = 0, AMP_BF16, AMP_FP16 } amp_mode;

typedef struct {
  char name[64];             /* the config's name in the file (--config) */
  char file[PATH_MAX];
  /* model */
  int embed_dim, depth, num_heads, patch_size;
  double dropout;            /* accepted; only 0 is supported */
  int img_size[2];           /* H, W */
  int n_in_channels, n_out_channels;
  /* training */
  int dt, global_batch_size, num_iters, warmup;
  int num_epochs;            /* SC22's: whole epochs to train; 0: num_iters // steps per epoch (SC23/SC24) */
  int local_batch_size;      /* 0: global_batch_size / dp; else global = local x dp (config_check) */
  double lr;
  char lr_schedule[16];      /* cosine | constant */
  char optimizer[16];        /* Adam */
  amp_mode amp;
  bool enable_fused, enable_jit, enable_apex; /* accepted (the tutorial's); dlpar always fuses */
  bool disable_broadcast_buffers, noddp;        /* accepted (PyTorch DDP's); see config_notes */
  /* the tutorial's model-parallel flags, checked against the grid */
  int row_parallel_size;     /* = tensor_parallel (SC24); 0: the grid's */
  int col_parallel_size, context_parallel; /* 1 only */
  char parallel_order[16];   /* tp-cp-dp or tp-dp: dlpar's grid is tensor-parallel fastest */
  char expdir[PATH_MAX];
  /* data */
  char data_loader_config[16];
  int num_data_workers;      /* prefetch depth in batches, at least 2 */
  char train_data_path[PATH_MAX], valid_data_path[PATH_MAX], inf_data_path[PATH_MAX];
  char time_means_path[PATH_MAX], global_means_path[PATH_MAX], global_stds_path[PATH_MAX];
  long limit_nsamples, limit_nsamples_val; /* -1, the tutorial's None, means no limit */
  char wireup_info[16], wireup_store[16];  /* accepted; dlpar wires up over PMIx */
  /* dlpar's own keys */
  long seed;
  double bucket_mb;          /* data-parallel gradient bucket size */
  int checkpoint_every;      /* steps; 0: only at the end */
  int stop_after_iters;      /* stop, with a checkpoint, after this many steps in this run; 0: never */
  int log_every;             /* metrics line every N steps */
  int skew_every;            /* the ranks' step-time skew every N steps, 50 by default */
  double straggler_threshold; /* a rank's step time over this x the median is named, 1.5 by default */
  int max_skipped_steps;     /* steps with a non-finite loss or gradients skipped before the run stops; 0: stop at the first */
  bool tf32, cuda_graph;     /* tf32: TF32 GEMMs and attention in fp32 runs, also spelt allow_tf32 as in PyTorch */
  char attention[16];        /* cudnn runs cuDNN's fused attention in 16 bits and dlpar's tensor-core kernels
                                in fp32; reference runs dlpar's FMA kernels */
  bool deterministic;        /* run-to-run bit-reproducible kernels only (torch.use_deterministic_algorithms) */
  char recompute[8];         /* gelu: GELU's output recomputed in the backward, not kept (less memory) | none */
} train_config;

#define CONFIG_MAX_KEYS 64
typedef struct {
  train_config cfg;
  char source[CONFIG_MAX_KEYS][PATH_MAX + 32]; /* where each key's value came from */
} config_set;

/* Loads config `name` from `path`, then applies "--key=value" overrides. */
int config_load(config_set *set, const char *path, const char *name, char *const *overrides, int noverrides,
                dlpar_error *err);
/* Impossible combinations for a grid of tp x dp ranks, naming key and source;
 * resolves local_batch_size into global_batch_size (local x dp). */
int config_check(config_set *set, int tp, int dp, dlpar_error *err);
/* The keys set that only name a PyTorch mechanism, each as one line saying
 * what dlpar does instead; returns how many (at most max). */
int config_notes(const train_config *cfg, const char **notes, int max);
/* The resolved config as YAML text (checkpoints, logs): a mapping of every
 * key, strings double-quoted and escaped, so it loads back as the same config. */
int config_to_yaml(const train_config *cfg, char *out, size_t len, dlpar_error *err);
bool config_is_key(const char *key);
/* A key given on the command line without a value means true (--enable_jit). */
bool config_key_is_bool(const char *key);

#endif

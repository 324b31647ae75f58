/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/model_common.c: what both model implementations share: the
 * model's sizes in vit_dims, filled once here, error recording,
 * data-parallel gradient buckets, and collectives on host values for the
 * models whose backend wants host buffers, as model.h describes. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/model/model.h"
#include "common/text.h"

void vit_dims_fill(vit_dims *d, const train_config *cfg, int tp, int local_batch)
{
  d->B = local_batch;
  d->H = cfg->img_size[0];
  d->W = cfg->img_size[1];
  d->P = cfg->patch_size;
  d->N = (d->H / d->P) * (d->W / d->P);
  d->BT = (long)d->B * d->N;
  d->Cin = cfg->n_in_channels;
  d->Cout = cfg->n_out_channels;
  d->D = cfg->embed_dim;
  d->depth = cfg->depth;
  d->HD = cfg->embed_dim / cfg->num_heads;
  d->tp = tp;
  d->Dl = d->D / tp;
  d->heads = cfg->num_heads / tp;
  d->Fl = (int)(4L * d->D / tp);
}

attention_choice attention_resolve(const train_config *cfg)
{
  const attention_choice fma = {ATTENTION_FMA, 0, false};
  if (strcmp(cfg->attention, "reference") == 0)
    return fma;
  if (cfg->amp == AMP_NONE)
    return (attention_choice){ATTENTION_TENSOR_CORES, cfg->tf32 ? 1 : 3, false};
  return (attention_choice){ATTENTION_CUDNN, 0, cfg->deterministic};
}

attention_choice attention_without_cudnn(void)
{
  return (attention_choice){ATTENTION_FMA, 0, false};
}

void attention_describe(const attention_choice *c, const char *cudnn_version, char *out, size_t len)
{
  if (c->kernels == ATTENTION_CUDNN)
    snprintf(out, len, "cuDNN %s%s", cudnn_version ? cudnn_version : "", c->deterministic ? " (deterministic plans)" : "");
  else if (c->kernels == ATTENTION_TENSOR_CORES)
    snprintf(out, len, "dlpar's tensor-core kernels (%s)", c->passes == 3 ? "3xTF32, fp32-accurate" : "TF32");
  else
    snprintf(out, len, "reference kernels");
}

int grad_buckets_plan(grad_buckets *b, const param_table *t, double bucket_mb)
{
  const size_t target = (size_t)(bucket_mb * 1024 * 1024 / sizeof(float));
  size_t pending = 0;
  int end = t->n; /* the bucket being filled holds tensors [i, end) */
  b->n = 0;
  b->buckets = calloc((size_t)t->n, sizeof(grad_bucket));
  if (!b->buckets)
    return DLPAR_ERR_SYSTEM;
  for (int i = t->n - 1; i >= 0; i--) {
    pending += t->p[i].count;
    if (pending >= target || i == 0) {
      grad_bucket *bucket = &b->buckets[b->n++];
      bucket->first_param = i;
      bucket->offset = t->p[i].offset;
      bucket->count = t->p[end - 1].offset + t->p[end - 1].count - t->p[i].offset;
      pending = 0;
      end = i;
    }
  }
  return DLPAR_OK;
}

int grad_buckets_ready(grad_buckets *b, dlpar_ctx *comm, float *grads, int first_done, void *stream)
{
  if (dlpar_get_info(comm)->dp_size == 1)
    return DLPAR_OK;
  for (int i = 0; i < b->n; i++) {
    grad_bucket *bucket = &b->buckets[i];
    if (bucket->launched || bucket->first_param < first_done)
      continue;
    DLPAR_TRY(dlpar_allreduce(comm, DLPAR_DP, grads + bucket->offset, bucket->count, DLPAR_FLOAT32, DLPAR_AVG, stream));
    bucket->launched = 1;
  }
  return DLPAR_OK;
}

void grad_buckets_reset(grad_buckets *b)
{
  for (int i = 0; i < b->n; i++)
    b->buckets[i].launched = 0;
}

void grad_buckets_free(grad_buckets *b)
{
  free(b->buckets);
  b->buckets = NULL;
  b->n = 0;
}

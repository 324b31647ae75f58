/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/numerics/vit_dump.c: what torch_reference.py checks dlpar's CPU
 * model against. One rank builds the model of a config (initial weights
 * from its seed), draws `steps` random batches, and writes to an HDF5 file:
 * the initial parameters, the batches, the first batch's loss and every
 * parameter's gradient, then the loss of each of `steps` Adam steps (at the
 * cosine schedule's rates, also written). All tensors are full (1x1 grid)
 * and named as the PyTorch model's state_dict.
 *   vit_dump CONFIG.yaml NAME OUT.h5 STEPS */
#include "config.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/dlpar/dlpar.h"
#include "trainer/model/model.h"
#include "trainer/data/rng.h"
#include "trainer/config/train_config.h"

static int write_array(hid_t loc, const char *name, const float *data, int ndim, const hsize_t *dims)
{
  hid_t space = H5Screate_simple(ndim, dims, NULL);
  hid_t dset = H5Dcreate2(loc, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = dset < 0 ? -1 : H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (dset >= 0)
    H5Dclose(dset);
  H5Sclose(space);
  return rc < 0 ? -1 : 0;
}

static int write_tensors(hid_t file, const char *group_name, const param_table *t, const float *flat)
{
  hid_t group = H5Gcreate2(file, group_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = group < 0 ? -1 : 0;
  for (int i = 0; rc == 0 && i < t->n; i++) {
    hsize_t dims[4];
    for (int d = 0; d < t->p[i].ndim; d++)
      dims[d] = (hsize_t)t->p[i].shape[d];
    rc = write_array(group, t->p[i].name, flat + t->p[i].offset, t->p[i].ndim, dims);
  }
  if (group >= 0)
    H5Gclose(group);
  return rc;
}

int main(int argc, char **argv)
{
  config_set set;
  dlpar_ctx *ctx;
  model *m;
  dlpar_error err = {0};
  int steps;
  if (argc != 5 || (steps = atoi(argv[4])) < 1) {
    fprintf(stderr, "usage: vit_dump CONFIG.yaml NAME OUT.h5 STEPS\n");
    return 2;
  }
  if (dlpar_init(argc, argv, NULL, &ctx) != 0 || config_load(&set, argv[1], argv[2], NULL, 0, &err) != 0 ||
      model_create_cpu(&m, &set.cfg, ctx, set.cfg.global_batch_size, &err) != 0) {
    fprintf(stderr, "vit_dump: %s\n", err.text);
    return 1;
  }
  const train_config *c = &set.cfg;
  const int B = c->global_batch_size;
  const size_t image = (size_t)c->n_in_channels * c->img_size[0] * c->img_size[1], total = m->table.total;
  float *inp = malloc(sizeof(float) * image * B * steps), *tgt = malloc(sizeof(float) * image * B * steps);
  float *flat = malloc(sizeof(float) * total), *losses = malloc(sizeof(float) * steps), *lrs = malloc(sizeof(float) * steps);
  dlpar_rng rng;
  hid_t file = H5Fcreate(argv[3], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t batch_dims[5] = {(hsize_t)steps, (hsize_t)B, (hsize_t)c->n_in_channels, (hsize_t)c->img_size[0],
                                 (hsize_t)c->img_size[1]};
  const hsize_t step_dims[1] = {(hsize_t)steps};
  rng_init(&rng, 1234, 0);
  for (size_t i = 0; i < image * B * steps; i++) {
    inp[i] = (float)rng_normal(&rng);
    tgt[i] = (float)rng_normal(&rng);
  }
  m->ops->read_tensor(m, TENSOR_PARAMS, flat);
  if (file < 0 || write_tensors(file, "params", &m->table, flat) || write_array(file, "inputs", inp, 5, batch_dims) ||
      write_array(file, "targets", tgt, 5, batch_dims))
    return 1;
  for (int s = 0; s < steps; s++) {
    model_metrics metrics;
    const size_t at = image * B * (size_t)s;
    if (m->ops->forward_backward(m, inp + at, tgt + at) != 0)
      return 1;
    if (m->ops->post_metrics(m) != 0 || m->ops->take_metrics(m, &metrics) != 0)
      return 1;
    losses[s] = (float)metrics.train_loss_sum;
    if (s == 0) {
      m->ops->read_tensor(m, TENSOR_GRADS, flat);
      if (write_tensors(file, "grads", &m->table, flat))
        return 1;
    }
    lrs[s] = (float)(c->lr * 0.5 * (1.0 + cos(M_PI * s / c->num_iters)));
    m->ops->optimizer_step(m, lrs[s], s + 1);
  }
  if (write_array(file, "losses", losses, 1, step_dims) || write_array(file, "lrs", lrs, 1, step_dims))
    return 1;
  {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "num_heads", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, H5T_NATIVE_INT, &c->num_heads) < 0)
      return 1;
    H5Aclose(attr);
    H5Sclose(space);
  }
  H5Fclose(file);
  m->ops->destroy(m);
  dlpar_finalize(ctx);
  printf("vit_dump: %s: %d steps, first loss %.6f, last %.6f\n", argv[3], steps, losses[0], losses[steps - 1]);
  return 0;
}

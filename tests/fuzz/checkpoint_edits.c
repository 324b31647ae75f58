/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/checkpoint_edits.c: checkpoints edited byte by byte (see
 * checkpoint_edits.h), for the fuzz target and the unit test. */
#include "config.h"

#include "tests/fuzz/checkpoint_edits.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>

#include "trainer/model/model.h"

static unsigned next_byte(checkpoint_edits *e)
{
  if (!e->n)
    return 0;
  e->n--;
  return *e->p++;
}

long checkpoint_edits_long(checkpoint_edits *e)
{
  unsigned long v = 0;
  for (int i = 0; i < 8; i++)
    v |= (unsigned long)next_byte(e) << (8 * i);
  return (long)v;
}

/* Dimensions 1..4 from the input, rank from 0 (a scalar) to 6. */
static hid_t odd_space(checkpoint_edits *e)
{
  hsize_t dims[6];
  const int ndim = (int)(next_byte(e) % 7);
  for (int d = 0; d < ndim; d++)
    dims[d] = next_byte(e) % 4 + 1;
  return ndim ? H5Screate_simple(ndim, dims, NULL) : H5Screate(H5S_SCALAR);
}

static void write_attr(hid_t file, const char *name, long value, checkpoint_edits *e)
{
  static long longs[4096]; /* odd_space holds at most 4^6 */
  static double doubles[4096];
  const unsigned op = next_byte(e) % 8;
  hid_t space, attr;
  if (op == 3)
    return; /* dropped */
  if (op == 4)
    value = checkpoint_edits_long(e);
  for (int i = 0; i < 4096; i++)
    longs[i] = value, doubles[i] = (double)value;
  space = op == 5 ? odd_space(e) : H5Screate(H5S_SCALAR);
  attr = H5Acreate2(file, name, op == 6 ? H5T_NATIVE_DOUBLE : op == 7 ? H5T_NATIVE_SHORT : H5T_NATIVE_LONG, space,
                    H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    if (op == 6)
      H5Awrite(attr, H5T_NATIVE_DOUBLE, doubles);
    else
      H5Awrite(attr, H5T_NATIVE_LONG, longs);
    H5Aclose(attr);
  }
  H5Sclose(space);
}

static void write_tensor(hid_t group, const param_info *p, float *values, checkpoint_edits *e)
{
  const unsigned op = next_byte(e) % 16;
  hsize_t dims[4];
  hid_t space, type = op == 13 ? H5T_NATIVE_INT : op == 14 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT, dset;
  for (int d = 0; d < p->ndim; d++)
    dims[d] = (hsize_t)p->shape[d];
  if (op == 10)
    return; /* dropped */
  if (op == 12) {
    const unsigned axis = next_byte(e) % (unsigned)p->ndim;
    dims[axis] += 1 + next_byte(e) % 3;
  }
  space = op == 11 || op == 15 ? odd_space(e) : H5Screate_simple(p->ndim, dims, NULL);
  if (op == 15) { /* strings */
    type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
  }
  if (op == 1) {
    const long at = next_byte(e) % params_full_count(p);
    values[at] = next_byte(e) % 2 ? NAN : INFINITY;
  }
  dset = H5Dcreate2(group, p->name, type == H5T_NATIVE_FLOAT ? H5T_IEEE_F32LE : type, space, H5P_DEFAULT,
                    H5P_DEFAULT, H5P_DEFAULT);
  if (dset >= 0 && op != 11 && op != 12 && op != 15)
    H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
  if (dset >= 0)
    H5Dclose(dset);
  if (op == 15)
    H5Tclose(type);
  H5Sclose(space);
  for (long i = 0; i < params_full_count(p); i++)
    values[i] = 0.01f * (float)(i % 7);
}

void checkpoint_edits_write(const char *path, const param_table *t, float *values, checkpoint_edits *e)
{
  static const char *const groups[3] = {"params", "adam_m", "adam_v"};
  static const char *const attrs[5] = {"step", "epoch", "step_in_epoch", "seed", "tp"};
  const long good[5] = {7, 1, 2, 0, 1}; /* with 5 steps per epoch */
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0)
    abort();
  for (int i = 0; i < 5; i++)
    write_attr(file, attrs[i], good[i], e);
  for (int g = 0; g < 3; g++) {
    const unsigned op = next_byte(e) % 8;
    hid_t group;
    if (op == 6)
      continue; /* dropped */
    if (op == 7) { /* a dataset in its place */
      hid_t space = H5Screate(H5S_SCALAR), dset = H5Dcreate2(file, groups[g], H5T_NATIVE_INT, space, H5P_DEFAULT,
                                                             H5P_DEFAULT, H5P_DEFAULT);
      H5Dclose(dset);
      H5Sclose(space);
      continue;
    }
    group = H5Gcreate2(file, groups[g], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (int i = 0; i < t->n; i++)
      write_tensor(group, &t->p[i], values, e);
    H5Gclose(group);
  }
  H5Fclose(file);
}

int checkpoint_edits_table(param_table *t, int tp, int tp_rank)
{
  const train_config cfg = {.embed_dim = 8, .depth = 1, .num_heads = 2, .patch_size = 4, .img_size = {8, 8},
                            .n_in_channels = 2, .n_out_channels = 2};
  vit_dims dims;
  vit_dims_fill(&dims, &cfg, tp, 1);
  return params_build(t, &dims, tp_rank);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/checkpoint.c: HDF5 checkpoints of full tensors, as checkpoint.h describes. */
#include "config.h"

#include "trainer/run/checkpoint.h"

#include <errno.h>
#include <glob.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trainer/data/atomic_file.h"
#include "trainer/data/h5util.h"
#include "common/text.h"

static const char *const groups[3] = {"params", "adam_m", "adam_v"};
static const model_tensor tensors[3] = {TENSOR_PARAMS, TENSOR_ADAM_M, TENSOR_ADAM_V};

typedef struct {
  float *host, *pieces, *full;
} buffers;

static int make_buffers(const param_table *t, buffers *b)
{
  size_t largest_local = 0, largest_full = 0;
  for (int i = 0; i < t->n; i++) {
    largest_local = t->p[i].count > largest_local ? t->p[i].count : largest_local;
    largest_full = (size_t)params_full_count(&t->p[i]) > largest_full ? (size_t)params_full_count(&t->p[i]) : largest_full;
  }
  b->host = malloc(sizeof(float) * t->total);
  b->pieces = malloc(sizeof(float) * largest_local * (size_t)t->tp);
  b->full = malloc(sizeof(float) * largest_full);
  return b->host && b->pieces && b->full ? DLPAR_OK : DLPAR_ERR_SYSTEM;
}

static void free_buffers(buffers *b)
{
  free(b->host);
  free(b->pieces);
  free(b->full);
}

static int write_attr(hid_t file, const char *name, long value, dlpar_error *err)
{
  hid_t space = -1, attr = -1;
  int rc = DLPAR_OK;
  H5_TRY_GOTO(space = H5Screate(H5S_SCALAR), name, err, rc, out);
  H5_TRY_GOTO(attr = H5Acreate2(file, name, H5T_NATIVE_LONG, space, H5P_DEFAULT, H5P_DEFAULT), name, err, rc, out);
  H5_TRY_GOTO(H5Awrite(attr, H5T_NATIVE_LONG, &value), name, err, rc, out);
out:
  h5_close(attr);
  h5_close(space);
  return rc;
}

static int write_text(hid_t file, const char *name, const char *text, dlpar_error *err)
{
  hid_t type = -1, space = -1, dset = -1;
  int rc = DLPAR_OK;
  H5_TRY_GOTO(type = H5Tcopy(H5T_C_S1), name, err, rc, out);
  H5_TRY_GOTO(H5Tset_size(type, strlen(text) + 1), name, err, rc, out);
  H5_TRY_GOTO(space = H5Screate(H5S_SCALAR), name, err, rc, out);
  H5_TRY_GOTO(dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name, err, rc, out);
  H5_TRY_GOTO(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), name, err, rc, out);
out:
  h5_close(dset);
  h5_close(space);
  h5_close(type);
  return rc;
}

static int write_tensor(hid_t group, const param_info *p, const float *values, dlpar_error *err)
{
  hsize_t dims[4];
  hid_t space = -1, dset = -1;
  int rc = DLPAR_OK;
  for (int d = 0; d < p->ndim; d++)
    dims[d] = (hsize_t)p->shape[d];
  H5_TRY_GOTO(space = H5Screate_simple(p->ndim, dims, NULL), p->name, err, rc, out);
  H5_TRY_GOTO(dset = H5Dcreate2(group, p->name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
              p->name, err, rc, out);
  H5_TRY_GOTO(H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), p->name, err, rc, out);
out:
  h5_close(dset);
  h5_close(space);
  return rc;
}

/* One group, params, adam_m or adam_v. Every rank takes part in every
 * gather whatever happens to the file, so a write error on rank 0 cannot
 * leave the others waiting. Rank 0 writes. file is < 0 on other ranks,
 * and also once a write failed, when *write_rc holds the first error. */
static int save_group(model *m, int which, hid_t file, buffers *b, int *write_rc, dlpar_error *err)
{
  const param_table *t = &m->table;
  hid_t group = -1;
  if (m->ops->read_tensor(m, tensors[which], b->host) != DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s", m->error.text);
  if (file >= 0 && *write_rc == DLPAR_OK) {
    group = H5Gcreate2(file, groups[which], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0) {
      char h5msg[256];
      *write_rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: %s", groups[which],
                                  h5_error_string(h5msg, sizeof(h5msg)));
    }
  }
  for (int i = 0; i < t->n; i++) {
    const param_info *p = &t->p[i];
    const float *full = b->host + p->offset;
    if (p->split != SPLIT_NONE) {
      if (dlpar_allgather_host(m->comm, DLPAR_TP, b->host + p->offset, b->pieces, p->count, DLPAR_FLOAT32) != 0) {
        h5_close(group);
        return dlpar_error_set(err, DLPAR_ERR_MPI, "tensor-parallel allgather: %s", dlpar_last_error(m->comm));
      }
      params_assemble(p, t->tp, b->pieces, b->full);
      full = b->full;
    }
    if (group >= 0 && *write_rc == DLPAR_OK)
      *write_rc = write_tensor(group, p, full, err);
  }
  h5_close(group);
  return DLPAR_OK;
}

/* How long DLPAR_FAULT=checkpoint-slow holds rank 0 in the middle of a
 * checkpoint's write, long enough for a test to signal the step then. */
#define SLOW_CHECKPOINT_SECONDS 4

/* Test hooks on rank 0, in the middle of a checkpoint's write.
 * DLPAR_FAULT=checkpoint-write kills it, to show the previous checkpoint
 * stays loadable. DLPAR_FAULT=checkpoint-slow pauses it, so a test can send
 * stop signals while the temporary file is half written. */
static void maybe_fault(void)
{
  const char *fault = getenv("DLPAR_FAULT");
  struct timespec pause = {.tv_sec = SLOW_CHECKPOINT_SECONDS, .tv_nsec = 0};
  if (fault && strcmp(fault, "checkpoint-write") == 0) {
    fprintf(stderr, "dlpar-train: DLPAR_FAULT=checkpoint-write: killing myself in the middle of a checkpoint\n");
    raise(SIGKILL);
  }
  if (fault && strcmp(fault, "checkpoint-slow") == 0) {
    fprintf(stderr, "dlpar-train: DLPAR_FAULT=checkpoint-slow: pausing %d s in the middle of a checkpoint\n",
            SLOW_CHECKPOINT_SECONDS);
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
      continue;
  }
}

static void remove_stale_temps(const char *path)
{
  char pattern[PATH_MAX + 16];
  glob_t found;
  snprintf(pattern, sizeof(pattern), "%s.tmp.*", path);
  if (glob(pattern, 0, NULL, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; i++)
      unlink(found.gl_pathv[i]);
  }
  globfree(&found);
}

static int write_header(hid_t file, const model *m, const checkpoint_position *pos, const char *config_yaml,
                        dlpar_error *err)
{
  DLPAR_TRY(write_attr(file, "step", pos->step, err));
  DLPAR_TRY(write_attr(file, "epoch", pos->epoch, err));
  DLPAR_TRY(write_attr(file, "step_in_epoch", pos->step_in_epoch, err));
  DLPAR_TRY(write_attr(file, "seed", pos->seed, err));
  DLPAR_TRY(write_attr(file, "tp", m->table.tp, err));
  return write_text(file, "config", config_yaml, err);
}

/* Returns the gathers' status, and *write_rc the file's on rank 0. */
static int write_file(model *m, const checkpoint_position *pos, const char *config_yaml, atomic_file *af,
                      buffers *b, bool writer, int *write_rc, dlpar_error *err)
{
  hid_t file = -1;
  int rc = DLPAR_OK;
  *write_rc = DLPAR_OK;
  if (writer) {
    char h5msg[256];
    file = H5Fcreate(af->temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) {
      *write_rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: %s (check expdir and its free space)",
                                  dlpar_show(af->temp).text, h5_error_string(h5msg, sizeof(h5msg)));
    } else {
      *write_rc = write_header(file, m, pos, config_yaml, err);
    }
  }
  for (int which = 0; which < 3 && rc == DLPAR_OK; which++) {
    rc = save_group(m, which, file, b, write_rc, err);
    if (writer && which == 0)
      maybe_fault();
  }
  if (file >= 0 && H5Fclose(file) < 0 && *write_rc == DLPAR_OK) {
    *write_rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot close the HDF5 file (disk full?)",
                                dlpar_show(af->temp).text);
  }
  return rc;
}

/* Every rank learns whether any rank failed, through a collective, so all agree. */
static int agree(model *m, int rc, dlpar_error *err)
{
  double failed = rc != DLPAR_OK;
  if (dlpar_allreduce_host(m->comm, DLPAR_WORLD, &failed, 1, DLPAR_FLOAT64, DLPAR_MAX) != 0)
    return dlpar_error_set(err, DLPAR_ERR_MPI, "checkpoint agreement: %s", dlpar_last_error(m->comm));
  if (failed > 0 && rc == DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM,
                           "another rank could not take part in the checkpoint (see its message)");
  return rc;
}

int checkpoint_save(model *m, const checkpoint_position *pos, const char *config_yaml, const char *path,
                    dlpar_error *err)
{
  const bool writer = dlpar_get_info(m->comm)->rank == 0;
  atomic_file af;
  buffers b;
  int write_rc = DLPAR_OK, rc = make_buffers(&m->table, &b);
  if (rc != DLPAR_OK)
    dlpar_error_set(err, rc, "out of memory for a checkpoint");
  DLPAR_TRY_GOTO(agree(m, rc, err), rc, out);
  if (writer) {
    remove_stale_temps(path);
    atomic_file_prepare(&af, path);
  }
  rc = write_file(m, pos, config_yaml, &af, &b, writer, &write_rc, err);
  if (writer) {
    if (rc == DLPAR_OK && write_rc == DLPAR_OK)
      write_rc = atomic_file_commit(&af, err);
    else
      atomic_file_abandon(&af);
  }
  rc = agree(m, rc != DLPAR_OK ? rc : write_rc, err);
out:
  free_buffers(&b);
  return rc;
}

/* ------------------------------------------------------------ reading */

/* What a reader says of a file that is not what dlpar-train writes. */
#define NOT_OURS "not written by dlpar-train, or damaged: resume from another checkpoint or start without --resume"

/* One whole-number attribute, checked to be one before it is read. */
static int read_attr(hid_t file, const char *path, const char *name, long *value, dlpar_error *err)
{
  hid_t attr = -1, space = -1, type = -1;
  int rc = DLPAR_OK;
  if (H5Aexists(file, name) <= 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no attribute '%s' (%s)", dlpar_show(path).text, name, NOT_OURS);
  H5_TRY_GOTO(attr = H5Aopen(file, name, H5P_DEFAULT), name, err, rc, out);
  H5_TRY_GOTO(space = H5Aget_space(attr), name, err, rc, out);
  H5_TRY_GOTO(type = H5Aget_type(attr), name, err, rc, out);
  if (H5Sget_simple_extent_npoints(space) != 1 || H5Tget_class(type) != H5T_INTEGER) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: attribute '%s' is not one whole number (%s)", dlpar_show(path).text,
                         name, NOT_OURS);
    goto out;
  }
  H5_TRY_GOTO(H5Aread(attr, H5T_NATIVE_LONG, value), name, err, rc, out);
out:
  h5_close(type);
  h5_close(space);
  h5_close(attr);
  return rc;
}

/* A tensor's rank, shape and type against the table's, then its values. */
static int check_tensor(hid_t dset, const param_info *p, const char *path, dlpar_error *err)
{
  hsize_t dims[4];
  hid_t space = -1, type = -1;
  int rc = DLPAR_OK, ndim;
  H5_TRY_GOTO(space = H5Dget_space(dset), p->name, err, rc, out);
  H5_TRY_GOTO(type = H5Dget_type(dset), p->name, err, rc, out);
  if ((ndim = H5Sget_simple_extent_ndims(space)) != p->ndim || H5Tget_class(type) != H5T_FLOAT) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %s is %s with %d dimensions, the config makes floats with %d "
                         "(resume with the config the checkpoint was written with)", dlpar_show(path).text, p->name,
                         H5Tget_class(type) == H5T_FLOAT ? "floats" : "not floats", ndim, p->ndim);
    goto out;
  }
  H5Sget_simple_extent_dims(space, dims, NULL); /* ndim == p->ndim <= 4 */
  for (int d = 0; d < p->ndim && rc == DLPAR_OK; d++) {
    if (dims[d] != (hsize_t)p->shape[d]) {
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT,
                           "%s: %s has another shape than the config makes (dimension %d: %llu vs %ld; resume with "
                           "the config the checkpoint was written with)",
                           dlpar_show(path).text, p->name, d, (unsigned long long)dims[d], p->shape[d]);
    }
  }
out:
  h5_close(type);
  h5_close(space);
  return rc;
}

static int read_tensor(hid_t group, const param_info *p, float *full, const char *path, dlpar_error *err)
{
  const long n = params_full_count(p);
  hid_t dset = -1;
  int rc = DLPAR_OK;
  if (H5Lexists(group, p->name, H5P_DEFAULT) <= 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no tensor %s (this checkpoint is of another model; resume with "
                           "its config)", dlpar_show(path).text, p->name);
  H5_TRY_GOTO(dset = H5Dopen2(group, p->name, H5P_DEFAULT), p->name, err, rc, out);
  DLPAR_TRY_GOTO(check_tensor(dset, p, path, err), rc, out);
  H5_TRY_GOTO(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, full), p->name, err, rc, out);
  for (long i = 0; i < n; i++) {
    if (!isfinite(full[i])) {
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %s[%ld] is %g (a diverged run's checkpoint: resume from an "
                           "earlier one)", dlpar_show(path).text, p->name, i, (double)full[i]);
      break;
    }
  }
out:
  h5_close(dset);
  return rc;
}

/* One group's tensors, this rank's pieces in the flat host buffer. */
static int read_group(const param_table *t, hid_t file, int which, buffers *b, const char *path, dlpar_error *err)
{
  hid_t group = -1;
  int rc = DLPAR_OK;
  if (H5Lexists(file, groups[which], H5P_DEFAULT) <= 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no group '%s' (%s)", dlpar_show(path).text, groups[which],
                           NOT_OURS);
  H5_TRY_GOTO(group = H5Gopen2(file, groups[which], H5P_DEFAULT), groups[which], err, rc, out);
  for (int i = 0; i < t->n && rc == DLPAR_OK; i++) {
    if ((rc = read_tensor(group, &t->p[i], b->full, path, err)) == DLPAR_OK)
      params_slice(&t->p[i], t->tp, t->tp_rank, b->full, b->host + t->p[i].offset);
  }
out:
  h5_close(group);
  return rc;
}

int checkpoint_read(const param_table *t, const char *path, checkpoint_position *pos, checkpoint_take take,
                    void *ctx, dlpar_error *err)
{
  buffers b;
  hid_t file = -1;
  int rc = make_buffers(t, &b);
  if (rc != DLPAR_OK) {
    dlpar_error_set(err, rc, "out of memory to load a checkpoint");
    goto out;
  }
  DLPAR_TRY_GOTO(h5_open_read(path, "no checkpoint to resume from (run without --resume first)", &file, err),
                 rc, out);
  DLPAR_TRY_GOTO(read_attr(file, path, "step", &pos->step, err), rc, out);
  DLPAR_TRY_GOTO(read_attr(file, path, "epoch", &pos->epoch, err), rc, out);
  DLPAR_TRY_GOTO(read_attr(file, path, "step_in_epoch", &pos->step_in_epoch, err), rc, out);
  DLPAR_TRY_GOTO(read_attr(file, path, "seed", &pos->seed, err), rc, out);
  for (int which = 0; which < 3 && rc == DLPAR_OK; which++) {
    if ((rc = read_group(t, file, which, &b, path, err)) == DLPAR_OK)
      rc = take(ctx, tensors[which], b.host, err);
  }
out:
  h5_close(file);
  free_buffers(&b);
  return rc;
}

static int take_into_model(void *ctx, model_tensor which, const float *host, dlpar_error *err)
{
  model *m = ctx;
  if (m->ops->write_tensor(m, which, host) == DLPAR_OK)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s", m->error.text);
}

int checkpoint_load(model *m, checkpoint_position *pos, const char *path, dlpar_error *err)
{
  return checkpoint_read(&m->table, path, pos, take_into_model, m, err);
}

int checkpoint_check_position(const checkpoint_position *pos, long total_steps, long steps_per_epoch,
                              const char *path, dlpar_error *err)
{
  if (pos->step < 0 || pos->epoch < 0 || pos->step_in_epoch < 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: negative position (step %ld, epoch %ld, step %ld in it; %s)",
                           dlpar_show(path).text, pos->step, pos->epoch, pos->step_in_epoch, NOT_OURS);
  if (steps_per_epoch <= 0 || pos->step_in_epoch > steps_per_epoch || pos->epoch > pos->step / steps_per_epoch ||
           pos->epoch * steps_per_epoch + pos->step_in_epoch != pos->step)
    return dlpar_error_set(err, DLPAR_ERR_INPUT,
                           "%s: step %ld (epoch %ld, step %ld in it) does not fit %ld steps per epoch (were "
                           "limit_nsamples, global_batch_size or the data changed? resume with the checkpoint's)",
                           dlpar_show(path).text, pos->step, pos->epoch, pos->step_in_epoch, steps_per_epoch);
  if (pos->step > total_steps)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: written at step %ld, past this run's %ld steps (raise num_iters "
                           "or num_epochs to train on)", dlpar_show(path).text, pos->step, total_steps);
  return DLPAR_OK;
}

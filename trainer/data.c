/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data.c: ERA5 samples from HDF5 and the prefetching loader (see data.h). */
#include "config.h"

#include "trainer/data.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/h5util.h"
#include "trainer/npy.h"
#include "trainer/rng.h"

/* ------------------------------------------------------------ files */

static int list_files(era5_data *d, const char *dir, char *err, size_t errlen)
{
  char pattern[PATH_MAX + 8];
  struct stat st;
  glob_t found;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: no such directory (fix the data path in the config, or generate data with "
             "dlpar-gen-data)", dlpar_show(dir).text);
    return DLPAR_ERR_INPUT;
  }
  snprintf(pattern, sizeof(pattern), "%s/*.h5", dir);
  if (glob(pattern, 0, NULL, &found) != 0 || found.gl_pathc == 0) {
    snprintf(err, errlen, "%s: no *.h5 files (the ERA5 layout has one file per year, e.g. 2016.h5)",
             dlpar_show(dir).text);
    globfree(&found);
    return DLPAR_ERR_INPUT;
  }
  d->nfiles = (int)found.gl_pathc;
  d->files = calloc((size_t)d->nfiles, sizeof(char *));
  d->fields_dset = malloc(sizeof(long) * (size_t)d->nfiles);
  d->file_handle = malloc(sizeof(long) * (size_t)d->nfiles);
  d->step_offset = calloc((size_t)d->nfiles, sizeof(long long *));
  d->fds = malloc(sizeof(int) * (size_t)d->nfiles);
  if (!d->files || !d->fields_dset || !d->file_handle || !d->step_offset || !d->fds) {
    snprintf(err, errlen, "out of memory for the list of %d data files", d->nfiles);
    globfree(&found);
    return DLPAR_ERR_SYSTEM;
  }
  for (int i = 0; i < d->nfiles; i++) {
    d->files[i] = strdup(found.gl_pathv[i]); /* glob sorts by name */
    d->fields_dset[i] = d->file_handle[i] = -1;
    d->fds[i] = -1;
  }
  globfree(&found);
  return DLPAR_OK;
}

/* Opens file i's `fields` (kept open for the reads to come). */
static int open_fields(era5_data *d, int i, char *err, size_t errlen)
{
  const char *path = d->files[i];
  hid_t file = -1, dset = -1;
  int rc = DLPAR_OK;
  if (d->fields_dset[i] >= 0)
    return DLPAR_OK;
  if ((rc = h5_open_read(path, "cannot open (check the data path in the config)", &file, err, errlen)) != DLPAR_OK)
    goto out;
  if (H5Lexists(file, "fields", H5P_DEFAULT) <= 0) {
    snprintf(err, errlen, "%s: no dataset 'fields' (the ERA5 layout is fields[T, C, H, W])", dlpar_show(path).text);
    rc = DLPAR_ERR_INPUT;
    goto out;
  }
  H5_TRY_GOTO(dset = H5Dopen2(file, "fields", H5P_DEFAULT), path);
  d->fields_dset[i] = dset;
  d->file_handle[i] = file;
  return DLPAR_OK;
out:
  h5_close(file);
  return rc;
}

/* Shape and type of file i's fields; the first file sets the expectations. */
static int check_shape(era5_data *d, int i, char *err, size_t errlen)
{
  const char *path = d->files[i];
  const int channels = d->in_channels > d->out_channels ? d->in_channels : d->out_channels;
  hsize_t dims[4];
  hid_t space = -1, type = -1;
  int rc = DLPAR_OK, ndims;
  H5_TRY_GOTO(space = H5Dget_space((hid_t)d->fields_dset[i]), path);
  H5_TRY_GOTO(type = H5Dget_type((hid_t)d->fields_dset[i]), path);
  ndims = H5Sget_simple_extent_ndims(space);
  if (ndims != 4 || H5Tget_class(type) != H5T_FLOAT) {
    snprintf(err, errlen, "%s: fields is %s with %d %s, expected floats [T, C, H, W]", dlpar_show(path).text,
             H5Tget_class(type) == H5T_FLOAT ? "float" : "not float", ndims, dlpar_plural(ndims, "dimension", "dimensions"));
    rc = DLPAR_ERR_INPUT;
    goto out;
  }
  H5Sget_simple_extent_dims(space, dims, NULL);
  if (i == 0) {
    d->per_file = (long)dims[0];
    d->file_channels = (int)dims[1];
    d->file_height = (int)dims[2];
    d->file_width = (int)dims[3];
  }
  if ((long)dims[0] != d->per_file || (int)dims[1] != d->file_channels || (int)dims[2] != d->file_height ||
      (int)dims[3] != d->file_width) {
    snprintf(err, errlen,
             "%s: fields is [%llu, %llu, %llu, %llu] but %s has [%ld, %d, %d, %d] (all years need one "
             "shape)",
             dlpar_show(path).text, (unsigned long long)dims[0], (unsigned long long)dims[1],
             (unsigned long long)dims[2], (unsigned long long)dims[3], dlpar_show(d->files[0]).text, d->per_file,
             d->file_channels, d->file_height, d->file_width);
    rc = DLPAR_ERR_INPUT;
  } else if (d->file_channels < channels || d->file_height < d->height || d->file_width < d->width) {
    snprintf(err, errlen,
             "%s: fields [%ld, %d, %d, %d] is smaller than %d %s of %dx%d (lower "
             "n_in_channels/n_out_channels or img_size)",
             dlpar_show(path).text, d->per_file, d->file_channels, d->file_height, d->file_width, channels,
             dlpar_plural(channels, "channel", "channels"), d->height, d->width);
    rc = DLPAR_ERR_INPUT;
  } else if (d->per_file < 3L * d->dt) {
    snprintf(err, errlen, "%s: %ld time steps per file, fewer than 3*dt=%d (lower dt or add time steps)",
             dlpar_show(path).text, d->per_file, 3 * d->dt);
    rc = DLPAR_ERR_INPUT;
  }
out:
  h5_close(type);
  h5_close(space);
  return rc;
}

/* Where every time step of file i lies whole (contiguous layout, or one
 * unfiltered chunk per step) in native floats: the byte offset of each
 * step, resolved once, for pread. Other layouts keep the HDF5 path
 * (step_offset[i] stays NULL). */
static int resolve_offsets(era5_data *d, int i, char *err, size_t errlen)
{
  const char *path = d->files[i];
  const hid_t dset = (hid_t)d->fields_dset[i];
  const hsize_t step_dims[4] = {1, (hsize_t)d->file_channels, (hsize_t)d->file_height, (hsize_t)d->file_width};
  const long long step_bytes = (long long)sizeof(float) * d->file_channels * d->file_height * d->file_width;
  long long *offset = NULL;
  hsize_t chunk[4];
  hid_t plist = -1, type = -1;
  H5D_layout_t layout;
  int rc = DLPAR_OK;
  H5_TRY_GOTO(plist = H5Dget_create_plist(dset), path);
  H5_TRY_GOTO(type = H5Dget_type(dset), path);
  H5_TRY_GOTO(layout = H5Pget_layout(plist), path);
  if (H5Tequal(type, H5T_NATIVE_FLOAT) <= 0 || H5Pget_nfilters(plist) != 0 || H5Pget_external_count(plist) != 0)
    goto out;
  if (layout == H5D_CHUNKED && (H5Pget_chunk(plist, 4, chunk) != 4 || memcmp(chunk, step_dims, sizeof(chunk)) != 0))
    goto out;
  if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) || !(offset = malloc(sizeof(long long) * d->per_file)))
    goto out;
  for (long t = 0; t < d->per_file; t++) {
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = (hsize_t)step_bytes;
    if (layout == H5D_CONTIGUOUS) {
      addr = H5Dget_offset(dset);
      addr = addr == HADDR_UNDEF ? addr : addr + (haddr_t)(t * step_bytes);
    } else {
      const hsize_t at[4] = {(hsize_t)t, 0, 0, 0};
      unsigned filter_mask = 0;
      H5_TRY_GOTO(H5Dget_chunk_info_by_coord(dset, at, &filter_mask, &addr, &size), path);
    }
    if (addr == HADDR_UNDEF || size != (hsize_t)step_bytes) /* never written: HDF5 supplies the fill value */
      goto out;
    offset[t] = (long long)addr;
  }
  if ((d->fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    snprintf(err, errlen, "%s: %s (check the file's permissions)", dlpar_show(path).text, strerror(errno));
    rc = DLPAR_ERR_SYSTEM;
    goto out;
  }
  d->step_offset[i] = offset;
  offset = NULL;
out:
  free(offset);
  h5_close(type);
  h5_close(plist);
  return rc;
}

int era5_open(era5_data *d, const char *dir, const train_config *cfg, long limit, const float *means,
              const float *stds, pthread_mutex_t *hdf5_lock, char *err, size_t errlen)
{
  int rc;
  memset(d, 0, sizeof(*d));
  d->in_channels = cfg->n_in_channels;
  d->out_channels = cfg->n_out_channels;
  d->height = cfg->img_size[0];
  d->width = cfg->img_size[1];
  d->dt = cfg->dt;
  d->means = means;
  d->stds = stds;
  d->hdf5_lock = hdf5_lock;
  if ((rc = list_files(d, dir, err, errlen)) != DLPAR_OK)
    return rc;
  pthread_mutex_lock(hdf5_lock);
  for (int i = 0; i < d->nfiles && rc == DLPAR_OK; i++) {
    if ((rc = open_fields(d, i, err, errlen)) == DLPAR_OK && (rc = check_shape(d, i, err, errlen)) == DLPAR_OK)
      rc = resolve_offsets(d, i, err, errlen);
  }
  pthread_mutex_unlock(hdf5_lock);
  d->nsamples = (long)d->nfiles * d->per_file;
  if (limit > 0 && limit < d->nsamples)
    d->nsamples = limit;
  return rc;
}

/* Normalises the first `channels` channels of one time step [channels,
 * height, width] in place; NaN/inf are errors. */
static int normalise_step(const era5_data *d, int year, long t, int channels, float *out, char *err, size_t errlen)
{
  const size_t plane = (size_t)d->height * d->width;
  for (int c = 0; c < channels; c++) {
    float *x = out + (size_t)c * plane;
    for (size_t i = 0; i < plane; i++) {
      if (!isfinite(x[i])) {
        snprintf(err, errlen, "%s: fields[%ld, %d, %zu, %zu] is %s (clean the data or regenerate it)",
                 dlpar_show(d->files[year]).text, t, c, i / (size_t)d->width, i % (size_t)d->width,
                 isnan(x[i]) ? "NaN" : "infinite");
        return DLPAR_ERR_INPUT;
      }
      x[i] = (x[i] - d->means[c]) / d->stds[c];
    }
  }
  return DLPAR_OK;
}

/* The first `channels` channels of one time step of file `year` through
 * HDF5 (caller holds the HDF5 lock). */
static int hdf5_read_step(era5_data *d, int year, long t, int channels, float *out, char *err, size_t errlen)
{
  const hsize_t start[4] = {(hsize_t)t, 0, 0, 0};
  const hsize_t count[4] = {1, (hsize_t)channels, (hsize_t)d->height, (hsize_t)d->width};
  hid_t file_space = -1, mem_space = -1;
  int rc = DLPAR_OK;
  char context[PATH_MAX + 64];
  snprintf(context, sizeof(context), "%s: reading fields[%ld]", dlpar_show(d->files[year]).text, t);
  H5_TRY_GOTO(file_space = H5Dget_space((hid_t)d->fields_dset[year]), context);
  H5_TRY_GOTO(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL), context);
  H5_TRY_GOTO(mem_space = H5Screate_simple(4, count, NULL), context);
  H5_TRY_GOTO(H5Dread((hid_t)d->fields_dset[year], H5T_NATIVE_FLOAT, mem_space, file_space, H5P_DEFAULT, out), context);
out:
  h5_close(mem_space);
  h5_close(file_space);
  return rc;
}

/* bytes at offset of fd, whole (retrying short reads) */
static int pread_whole(int fd, void *buf, size_t bytes, long long offset)
{
  char *at = buf;
  while (bytes > 0) {
    const ssize_t got = pread(fd, at, bytes, (off_t)offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got == 0)
        errno = EIO; /* the file ends early */
      return -1;
    }
    at += got;
    bytes -= (size_t)got;
    offset += got;
  }
  return 0;
}

/* The first `channels` channels of one time step of file `year` by pread:
 * one read per channel, or per row when the width is cropped. Thread-safe. */
static int pread_step(const era5_data *d, int year, long t, int channels, float *out, char *err, size_t errlen)
{
  const bool whole_rows = d->width == d->file_width;
  const size_t row_floats = whole_rows ? (size_t)d->height * d->width : (size_t)d->width;
  const int rows = whole_rows ? 1 : d->height;
  for (int c = 0; c < channels; c++)
    for (int h = 0; h < rows; h++) {
      const long long offset = d->step_offset[year][t] +
                               (long long)sizeof(float) * (((long long)c * d->file_height + h) * d->file_width);
      if (pread_whole(d->fds[year], out + ((size_t)c * rows + h) * row_floats, sizeof(float) * row_floats, offset)) {
        snprintf(err, errlen, "%s: reading fields[%ld]: %s (the file is truncated or unreadable: copy or "
                 "regenerate it)", dlpar_show(d->files[year]).text, t, strerror(errno));
        return DLPAR_ERR_SYSTEM;
      }
    }
  return DLPAR_OK;
}

static int read_step(era5_data *d, int year, long t, int channels, float *out, char *err, size_t errlen)
{
  int rc;
  if (d->step_offset[year]) {
    rc = pread_step(d, year, t, channels, out, err, errlen);
  } else {
    pthread_mutex_lock(d->hdf5_lock);
    rc = hdf5_read_step(d, year, t, channels, out, err, errlen);
    pthread_mutex_unlock(d->hdf5_lock);
  }
  return rc == DLPAR_OK ? normalise_step(d, year, t, channels, out, err, errlen) : rc;
}

int era5_read(era5_data *d, long idx, float *inp, float *tgt, char *err, size_t errlen)
{
  const int year = (int)(idx / d->per_file);
  long l = (idx % d->per_file) % (d->per_file - d->dt);
  int rc;
  if (l < d->dt)
    l += d->dt;
  rc = read_step(d, year, l, d->in_channels, inp, err, errlen);
  return rc == DLPAR_OK ? read_step(d, year, l + d->dt, d->out_channels, tgt, err, errlen) : rc;
}

void era5_close(era5_data *d)
{
  pthread_mutex_lock(d->hdf5_lock);
  for (int i = 0; d->files && d->fields_dset && d->file_handle && d->step_offset && d->fds && i < d->nfiles; i++) {
    h5_close((hid_t)d->fields_dset[i]);
    h5_close((hid_t)d->file_handle[i]);
    if (d->fds[i] >= 0)
      close(d->fds[i]);
    free(d->step_offset[i]);
    free(d->files[i]);
  }
  pthread_mutex_unlock(d->hdf5_lock);
  free(d->files);
  free(d->fields_dset);
  free(d->file_handle);
  free(d->step_offset);
  free(d->fds);
  memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------ statistics */

static int read_h5_stats(const char *path, npy_array *a, char *err, size_t errlen)
{
  char name[256];
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  hid_t file = -1, dset = -1, space = -1;
  int rc = DLPAR_OK;
  snprintf(name, sizeof(name), "%.*s", (int)(strcspn(base, ".")), base);
  memset(a, 0, sizeof(*a));
  if ((rc = h5_open_read(path, "cannot open (check the stats path in the config)", &file, err, errlen)) != DLPAR_OK)
    goto out;
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) {
    snprintf(err, errlen, "%s: no such dataset '%s' (give a .npy file, or an HDF5 file with a dataset named after it)",
             dlpar_show(path).text, dlpar_show(name).text);
    rc = DLPAR_ERR_INPUT;
    goto out;
  }
  H5_TRY_GOTO(dset = H5Dopen2(file, name, H5P_DEFAULT), path);
  H5_TRY_GOTO(space = H5Dget_space(dset), path);
  a->count = (long)H5Sget_simple_extent_npoints(space);
  a->data = malloc(sizeof(float) * (size_t)(a->count > 0 ? a->count : 1));
  if (!a->data) {
    rc = DLPAR_ERR_SYSTEM;
    goto out;
  }
  H5_TRY_GOTO(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data), path);
out:
  h5_close(space);
  h5_close(dset);
  h5_close(file);
  return rc;
}

int era5_load_stats(const char *path, int channels, float **values, char *err, size_t errlen)
{
  npy_array a;
  const size_t len = strlen(path);
  int rc = len > 4 && strcmp(path + len - 4, ".npy") == 0 ? npy_read(path, &a, err, errlen)
                                                           : read_h5_stats(path, &a, err, errlen);
  if (rc != DLPAR_OK)
    return rc;
  if (a.count < channels) {
    snprintf(err, errlen, "%s: %ld %s, expected one per channel for %d %s (shape (1, C, 1, 1))", dlpar_show(path).text,
             a.count, dlpar_plural(a.count, "value", "values"), channels, dlpar_plural(channels, "channel", "channels"));
    npy_free(&a);
    return DLPAR_ERR_INPUT;
  }
  for (int c = 0; c < channels; c++) {
    if (!isfinite(a.data[c])) {
      snprintf(err, errlen, "%s: channel %d is %s (recompute the statistics)", dlpar_show(path).text, c,
               isnan(a.data[c]) ? "NaN" : "infinite");
      npy_free(&a);
      return DLPAR_ERR_INPUT;
    }
  }
  *values = a.data;
  return DLPAR_OK;
}

/* ------------------------------------------------------------ loader */

enum { SLOT_EMPTY = 0, SLOT_READY, SLOT_FAILED };

/* One reader thread's share of a batch: samples first, first + readers, ... */
typedef struct {
  struct loader *l;
  int slot, first;
  long step;
  int failed_at; /* the sample that failed, or batch when none */
  char error[DLPAR_ERRLEN];
  pthread_t thread;
  bool started;
} batch_reader;

struct loader {
  era5_data *data;
  int batch, dp_rank, dp_size, depth, nreaders;
  batch_reader *readers;
  bool shuffle;
  long seed, steps_per_epoch;
  size_t inp_floats, tgt_floats; /* of one sample */
  loader_memory memory;
  float **inp, **tgt;
  int *state;
  char (*errors)[DLPAR_ERRLEN];
  long *perm, perm_epoch;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  /* guarded by lock */
  long epoch, step, remaining, generation;
  int tail, filled;          /* the next slot to consume, how many are ready */
  bool stop;
  double wait_seconds;
};

static void *default_alloc(size_t bytes)
{
  return malloc(bytes);
}

static void *read_share(void *arg)
{
  batch_reader *r = arg;
  loader *l = r->l;
  r->failed_at = l->batch;
  for (int j = r->first; j < l->batch; j += l->nreaders) {
    const long position = (r->step * l->batch + j) * l->dp_size + l->dp_rank;
    const long idx = l->shuffle ? l->perm[position] : position;
    float *inp = l->inp[r->slot] + (size_t)j * l->inp_floats, *tgt = l->tgt[r->slot] + (size_t)j * l->tgt_floats;
    if (era5_read(l->data, idx, inp, tgt, r->error, sizeof(r->error)) != DLPAR_OK) {
      r->failed_at = j;
      break;
    }
  }
  return NULL;
}

/* Fills one slot with the batch at (epoch, step), its samples read by the
 * readers in parallel (reader 0 on the loader thread itself; a reader whose
 * thread cannot start runs there too); runs on the loader thread. The error
 * kept is that of the first failing sample, as a serial read would give. */
static int fill_slot(loader *l, int slot, long epoch, long step, char *err, size_t errlen)
{
  int failed_at = l->batch;
  if (l->shuffle && l->perm_epoch != epoch) {
    dlpar_rng rng;
    rng_init(&rng, (uint64_t)l->seed, 1000000u + (uint64_t)epoch);
    rng_permutation(&rng, l->perm, l->data->nsamples);
    l->perm_epoch = epoch;
  }
  for (int w = 0; w < l->nreaders; w++) {
    batch_reader *r = &l->readers[w];
    r->l = l;
    r->slot = slot;
    r->first = w;
    r->step = step;
    r->started = w > 0 && pthread_create(&r->thread, NULL, read_share, r) == 0;
  }
  for (int w = 0; w < l->nreaders; w++) {
    batch_reader *r = &l->readers[w];
    if (r->started)
      pthread_join(r->thread, NULL);
    else
      read_share(r);
    if (r->failed_at < failed_at) {
      failed_at = r->failed_at;
      snprintf(err, errlen, "%s", r->error);
    }
  }
  return failed_at == l->batch ? DLPAR_OK : DLPAR_ERR_INPUT;
}

static void *loader_main(void *arg)
{
  loader *l = arg;
  pthread_mutex_lock(&l->lock);
  while (!l->stop) {
    long epoch, step, generation;
    int slot, rc;
    if (l->remaining == 0 || l->filled == l->depth) {
      pthread_cond_wait(&l->changed, &l->lock);
      continue;
    }
    slot = (l->tail + l->filled) % l->depth;
    epoch = l->epoch;
    step = l->step;
    generation = l->generation;
    pthread_mutex_unlock(&l->lock);
    rc = fill_slot(l, slot, epoch, step, l->errors[slot], sizeof(l->errors[slot]));
    pthread_mutex_lock(&l->lock);
    if (generation != l->generation) /* restarted meanwhile: this batch is not wanted */
      continue;
    l->state[slot] = rc == DLPAR_OK ? SLOT_READY : SLOT_FAILED;
    l->filled++;
    l->step++;
    loader_position(l, &l->epoch, &l->step, NULL, 0);
    if (l->remaining > 0)
      l->remaining--;
    pthread_cond_broadcast(&l->changed);
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

int loader_create(loader **out, era5_data *data, int local_batch, int dp_rank, int dp_size, bool shuffle, long seed,
                  int workers, const loader_memory *memory, char *err, size_t errlen)
{
  loader *l = calloc(1, sizeof(*l));
  *out = l;
  if (!l)
    goto oom;
  l->data = data;
  l->batch = local_batch;
  l->dp_rank = dp_rank;
  l->dp_size = dp_size;
  l->shuffle = shuffle;
  l->seed = seed;
  l->depth = workers > 1 ? workers : 2;
  l->perm_epoch = -1;
  l->nreaders = workers > 1 ? workers : 1;
  l->memory = memory ? *memory : (loader_memory){default_alloc, free};
  l->inp_floats = (size_t)data->in_channels * data->height * data->width;
  l->tgt_floats = (size_t)data->out_channels * data->height * data->width;
  l->steps_per_epoch = data->nsamples / ((long)local_batch * dp_size);
  if (l->steps_per_epoch == 0) {
    snprintf(err, errlen, "%ld %s no batch of %d x %d %s (raise limit_nsamples or lower "
             "global_batch_size)", data->nsamples, dlpar_plural(data->nsamples, "sample makes", "samples make"),
             local_batch, dp_size, dlpar_plural(dp_size, "rank", "ranks"));
    return DLPAR_ERR_INPUT;
  }
  l->inp = calloc((size_t)l->depth, sizeof(float *));
  l->tgt = calloc((size_t)l->depth, sizeof(float *));
  l->state = calloc((size_t)l->depth, sizeof(int));
  l->errors = calloc((size_t)l->depth, sizeof(*l->errors));
  l->perm = malloc(sizeof(long) * (size_t)data->nsamples);
  l->readers = calloc((size_t)l->nreaders, sizeof(batch_reader));
  if (!l->inp || !l->tgt || !l->state || !l->errors || !l->perm || !l->readers)
    goto oom;
  for (int s = 0; s < l->depth; s++) {
    l->inp[s] = l->memory.alloc(sizeof(float) * l->inp_floats * (size_t)local_batch);
    l->tgt[s] = l->memory.alloc(sizeof(float) * l->tgt_floats * (size_t)local_batch);
    if (!l->inp[s] || !l->tgt[s])
      goto oom;
  }
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->changed, NULL);
  if (pthread_create(&l->thread, NULL, loader_main, l) != 0) {
    snprintf(err, errlen, "cannot start the data loader thread");
    return DLPAR_ERR_SYSTEM;
  }
  return DLPAR_OK;
oom:
  snprintf(err, errlen, "out of memory for %d %s of %d %s (lower num_data_workers)", l ? l->depth : 2,
           dlpar_plural(l ? l->depth : 2, "batch", "batches"), local_batch,
           dlpar_plural(local_batch, "sample", "samples"));
  return DLPAR_ERR_SYSTEM;
}

long loader_steps_per_epoch(const loader *l)
{
  return l->steps_per_epoch;
}

int loader_position(const loader *l, long *epoch, long *step, char *err, size_t errlen)
{
  if (*step < 0 || *step > l->steps_per_epoch || *epoch < 0) {
    snprintf(err, errlen, "epoch %ld, step %ld of it: outside the %ld steps of an epoch", *epoch, *step,
             l->steps_per_epoch);
    return DLPAR_ERR_INPUT;
  }
  if (*step == l->steps_per_epoch) {
    (*epoch)++;
    *step = 0;
  }
  return DLPAR_OK;
}

void loader_start(loader *l, long epoch, long step, long count)
{
  loader_position(l, &epoch, &step, NULL, 0);
  pthread_mutex_lock(&l->lock);
  l->generation++;
  l->epoch = epoch;
  l->step = step;
  l->remaining = count;
  l->tail = l->filled = 0;
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
}

int loader_next(loader *l, const float **inp, const float **tgt, char *err, size_t errlen)
{
  const double start = dlpar_now();
  int rc = DLPAR_OK;
  pthread_mutex_lock(&l->lock);
  while (l->filled == 0)
    pthread_cond_wait(&l->changed, &l->lock);
  l->wait_seconds += dlpar_now() - start;
  if (l->state[l->tail] == SLOT_FAILED) {
    snprintf(err, errlen, "%s", l->errors[l->tail]);
    rc = DLPAR_ERR_INPUT;
  }
  *inp = l->inp[l->tail];
  *tgt = l->tgt[l->tail];
  pthread_mutex_unlock(&l->lock);
  return rc;
}

void loader_release(loader *l)
{
  pthread_mutex_lock(&l->lock);
  l->state[l->tail] = SLOT_EMPTY;
  l->tail = (l->tail + 1) % l->depth;
  l->filled--;
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
}

double loader_wait_seconds(const loader *l)
{
  return l->wait_seconds;
}

void loader_destroy(loader *l)
{
  if (!l)
    return;
  if (l->thread) {
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
  }
  for (int s = 0; l->inp && s < l->depth; s++) {
    l->memory.free(l->inp[s]);
    l->memory.free(l->tgt[s]);
  }
  free(l->inp);
  free(l->tgt);
  free(l->state);
  free(l->errors);
  free(l->perm);
  free(l->readers);
  free(l);
}

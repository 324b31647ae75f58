/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data.h: the ERA5 data of the tutorial and its loader.
 *
 * A directory of yearly *.h5 files (sorted by name), each with a dataset
 * `fields` [T, C, H', W'] cropped to [:, :C, :H, :W]; sample idx is year
 * idx / T, l = (idx % T) % (T - dt), l += dt if l < dt; input fields[l],
 * target fields[l + dt]; both normalised by the global means and stds.
 * Samples are read one at a time (never a whole file): where a file's
 * `fields` is native floats, unfiltered, and each time step lies whole in
 * one place (contiguous layout, or one chunk per step as dlpar-gen-data
 * writes), the byte offset of every step is resolved once at open and
 * samples are read with pread(), from any thread at once; other files
 * (compressed, other chunkings) go through serialised HDF5 hyperslab reads.
 *
 * The loader: a thread that prefetches whole local batches into a ring of
 * slots, each batch read by `workers` threads in parallel (sample j by
 * reader j % workers). Data-parallel rank k of D takes, at step s, the samples at
 * positions (s*B + j)*D + k of the epoch's order (a permutation seeded by
 * (seed, epoch), or the identity for validation), as PyTorch's
 * DistributedSampler; all tensor-parallel ranks of a group read the same. */
#ifndef DLPAR_DATA_H
#define DLPAR_DATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "trainer/train_config.h"

typedef struct {
  char **files;
  int nfiles;
  long per_file;           /* T */
  int file_channels, file_height, file_width;
  int in_channels, out_channels;   /* a sample's input and target: the first channels of their time steps */
  int height, width, dt;
  long nsamples;           /* after limit_nsamples */
  const float *means, *stds;
  pthread_mutex_t *hdf5_lock; /* libhdf5 is not thread-safe: one lock for all readers */
  long *fields_dset; /* per file: hid_t of its `fields` dataset, or -1 (hid_t kept out of this header) */
  long *file_handle; /* per file: hid_t of the open file, or -1 */
  long long **step_offset; /* per file: byte offset of each time step for pread, or NULL (HDF5 reads) */
  int *fds;                /* per file: descriptor for pread, or -1 */
} era5_data;

int era5_open(era5_data *data, const char *dir, const train_config *cfg, long limit, const float *means,
              const float *stds, pthread_mutex_t *hdf5_lock, char *err, size_t errlen);
/* inp: in_channels x height x width floats, tgt: out_channels x height x
 * width, normalised; NaN/inf are errors. */
int era5_read(era5_data *data, long idx, float *inp, float *tgt, char *err, size_t errlen);
void era5_close(era5_data *data);

/* Loads the per-channel means and stds (.npy, or HDF5 with a dataset of that
 * name's stem) of shape (1, C, 1, 1) with C >= channels. */
int era5_load_stats(const char *path, int channels, float **values, char *err, size_t errlen);

typedef struct {
  void *(*alloc)(size_t bytes); /* slot memory: pinned host memory for GPUs */
  void (*free)(void *ptr);
} loader_memory;

typedef struct loader loader;

/* workers: reader threads per batch (num_data_workers; < 1: 1); the ring
 * holds max(workers, 2) batches. A batch is what the model takes as it is:
 * local_batch inputs of in_channels, then local_batch targets of
 * out_channels (era5_read's layout). */
int loader_create(loader **l, era5_data *data, int local_batch, int dp_rank, int dp_size, bool shuffle, long seed,
                  int workers, const loader_memory *memory, char *err, size_t errlen);
long loader_steps_per_epoch(const loader *l);
/* The one definition of an epoch's end, for the loader and the trainer's
 * saved position alike: step steps_per_epoch of an epoch (all its steps
 * done) is step 0 of the next. Returns DLPAR_ERR_INPUT, with err naming the
 * position, when step is outside 0..steps_per_epoch. */
int loader_position(const loader *l, long *epoch, long *step, char *err, size_t errlen);
/* Produce `count` batches (-1: no end) from (epoch, step) on; the position
 * as loader_position leaves it. */
void loader_start(loader *l, long epoch, long step, long count);
/* The next batch in order (blocks); valid until loader_release. */
int loader_next(loader *l, const float **inp, const float **tgt, char *err, size_t errlen);
void loader_release(loader *l);
/* Seconds the consumer spent waiting in loader_next (I/O not hidden). */
double loader_wait_seconds(const loader *l);
void loader_destroy(loader *l);

#endif

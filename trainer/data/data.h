/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/data.h: the ERA5 data of the tutorial and its loader.
 *
 * A directory of yearly *.h5 files (sorted by name), each with a dataset
 * `fields` [T, C, H', W'] cropped to [:, :C, :H, :W]; sample idx is year
 * idx / T, l = (idx % T) % (T - dt), l += dt if l < dt; input fields[l],
 * target fields[l + dt]; both normalised by the global means and stds.
 * Samples are read one time step at a time (never a whole file), outside
 * HDF5's lock wherever the layout allows, each file's places resolved once
 * at open (under the lock):
 *  - where `fields` is native floats, unfiltered, and each time step lies
 *    whole in one place (contiguous layout, or chunks of whole steps as
 *    dlpar-gen-data writes by default), the byte offset of every step: a
 *    step is read in pieces of whole rows of one channel (about 1 MiB,
 *    era5_data.stage_floats) with pread(), each into the caller's staging
 *    buffer, which stays in the CPU's cache, and normalised from there into
 *    the batch ((x - mean) / std, the tutorial's numpy arithmetic, bit for
 *    bit), so a batch is written once (one read a piece; one a row where
 *    the width is cropped);
 *  - other chunkings (h5py's chunks=True: parts of several steps a chunk),
 *    unfiltered or with HDF5's byte shuffle and/or deflate (h5py's
 *    shuffle=True, compression="gzip"), every chunk written: each chunk's
 *    offset and stored size (H5Dget_num_chunks, H5Dget_chunk_info_by_coord);
 *    a step is read chunk by chunk with pread() (only its slice where the
 *    chunk is unfiltered), inflated (zlib) and unshuffled here, and the
 *    cropped part normalised into the batch;
 *  - anything else (other types or filters, external, compact or virtual
 *    storage, a dataset linked from another file, chunks over 64 MiB)
 *    through serialised HDF5 hyperslab reads of a whole step, normalised
 *    piece by piece.
 * Whichever way a file is read, its storage is checked at open against its
 * shape and its size, overflow-safe: chunk dimensions as HDF5 allows them,
 * every chunk written (a fill value is not data), within the file, of a
 * size its filters can give and overlapping no other; contiguous data
 * written and within the file; every filter one this HDF5 can undo;
 * external, linked and virtual sources there and long enough. Deflated
 * chunks are inflated whole, to the stream's end, their checksum checked.
 * What fails is refused in one line naming the file (and the chunk). 
 * Files are opened once: one removed or replaced during a run is read as it
 * was; one truncated or rewritten in place stops the run with a line naming
 * the file and the sample.
 *
 * The loader: persistent reader threads (DLPAR_DATA_READERS, else half the
 * CPUs this process may run on, 2 to 8) fill a ring of batch slots, up to
 * `depth` batches ahead of the consumer (num_data_workers, at least 2); a
 * reader takes the next time step (a sample's input or target) of the
 * earliest batch not yet taken, so all readers work on one batch and start
 * the next as the first runs out. Data-parallel rank k of D takes, at step s, the samples at
 * positions (s*B + j)*D + k of the epoch's order (a permutation seeded by
 * (seed, epoch), or the identity for validation), as PyTorch's
 * DistributedSampler; all tensor-parallel ranks of a group read the same. */
#ifndef DLPAR_DATA_H
#define DLPAR_DATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"
#include "trainer/config/train_config.h"

typedef struct era5_chunks era5_chunks; /* a chunked file's chunks (data.c) */

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
  long long **step_offset; /* per file: byte offset of each time step for pread, or NULL */
  era5_chunks **chunks;    /* per file: its chunks for pread, or NULL (neither: HDF5 reads it) */
  int *fds;                /* per file: descriptor for pread, or -1 */
  long long *file_bytes;   /* per file: its size at open */
  size_t stage_floats;     /* a piece: whole rows of one channel, about 1 MiB */
  size_t scratch_floats;   /* era5_read's staging buffer: a piece, or a chunk's slice, the chunk and it stored */
} era5_data;

/* Seconds era5_read spent, added to: reading (pread or HDF5, the lock's
 * wait included; inflating and unshuffling chunks) and normalising into the
 * output. */
typedef struct {
  double read, normalise;
} era5_seconds;

int era5_open(era5_data *data, const char *dir, const train_config *cfg, long limit, const float *means,
              const float *stds, pthread_mutex_t *hdf5_lock, dlpar_error *err);
/* One time step of sample idx, normalised into out: part 0 its input
 * (in_channels x height x width floats), part 1 its target (out_channels x
 * height x width). NaN/inf are errors naming the file and the element; a
 * file that cannot be read, one naming it and the sample. stage:
 * scratch_floats floats of the caller's, one per thread; seconds:
 * added to. Thread-safe. */
int era5_read(era5_data *data, long idx, int part, float *stage, float *out, era5_seconds *seconds, dlpar_error *err);
void era5_close(era5_data *data);

/* Loads the per-channel means and stds (.npy, or HDF5 with a dataset of that
 * name's stem) of shape (1, C, 1, 1) with C >= channels. */
int era5_load_stats(const char *path, int channels, float **values, dlpar_error *err);

typedef struct {
  void *(*alloc)(size_t bytes); /* slot memory: pinned host memory for GPUs */
  void (*free)(void *ptr);
} loader_memory;

typedef struct loader loader;

/* depth: batches read ahead of the consumer (num_data_workers; < 2: 2);
 * the reader threads are the node's (see above) whatever depth says. A
 * batch is what the model takes as it is: local_batch inputs of
 * in_channels, then local_batch targets of out_channels. */
int loader_create(loader **l, era5_data *data, int local_batch, int dp_rank, int dp_size, bool shuffle, long seed,
                  int depth, const loader_memory *memory, dlpar_error *err);
long loader_steps_per_epoch(const loader *l);
/* The one definition of an epoch's end, for the loader and the trainer's
 * saved position alike: step steps_per_epoch of an epoch (all its steps
 * done) is step 0 of the next. Returns DLPAR_ERR_INPUT, with err naming the
 * position, when step is outside 0..steps_per_epoch. */
int loader_position(const loader *l, long *epoch, long *step, dlpar_error *err);
/* Produce `count` batches (-1: no end) from (epoch, step) on; the position
 * as loader_position leaves it. */
void loader_start(loader *l, long epoch, long step, long count);
/* The next batch in order (blocks); valid until loader_release. */
int loader_next(loader *l, const float **inp, const float **tgt, dlpar_error *err);
void loader_release(loader *l);
/* Seconds the consumer spent waiting in loader_next (I/O not hidden). */
double loader_wait_seconds(const loader *l);

/* Where the readers' time went since loader_create (--benchy's breakdown). */
typedef struct {
  int readers, depth;
  double bytes;             /* normalised into batch slots */
  era5_seconds seconds;     /* summed over the readers */
  double idle_seconds;      /* readers waiting for a free slot (the consumer is behind) or a start */
} loader_stats;
void loader_get_stats(loader *l, loader_stats *stats);
void loader_destroy(loader *l);

#endif

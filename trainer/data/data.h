/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/data.h: the ERA5 data of the tutorial and its loader.
 *
 * The data is a directory of yearly *.h5 files, taken in name order. Each
 * has a dataset `fields` [T, C, H', W'], cropped to [:, :C, :H, :W].
 * Sample idx is in year idx / T, at l = (idx % T) % (T - dt), with
 * l += dt if l < dt. Its input is fields[l] and its target fields[l + dt],
 * both normalised by the global means and stds.
 * Samples are read one time step at a time, never a whole file, and
 * outside HDF5's lock wherever the layout allows. Each file's places are
 * resolved once at open, under the lock. A file is read in one of three
 * ways:
 *  - Where `fields` is native floats, unfiltered, and each time step lies
 *    whole in one place, the byte offset of every step is kept. That is a
 *    contiguous layout, or chunks of whole steps as dlpar-gen-data writes
 *    by default. A step is read with pread() in pieces of whole rows of one
 *    channel, about 128 KiB, as era5_data.stage_floats says. Each piece goes
 *    into the caller's staging buffer, which stays in the core's cache, and
 *    is normalised from there into the batch as (x - mean) / std, the
 *    tutorial's numpy arithmetic bit for bit, stored past the caches where
 *    the CPU can (normalise.c). So a batch is written once,
 *    with one read a piece, or one a row where the width is cropped.
 *  - Other chunkings, such as h5py's chunks=True with parts of several
 *    steps in a chunk, are read by chunk. The chunks may be unfiltered or
 *    have HDF5's byte shuffle, deflate or both, as h5py's shuffle=True and
 *    compression="gzip" write them, and every chunk must be written. Each
 *    chunk's offset and stored size come from H5Dget_num_chunks and
 *    H5Dget_chunk_info_by_coord. A step is read chunk by chunk with
 *    pread(), only its slice where the chunk is unfiltered. It is inflated
 *    with zlib and unshuffled here, and the cropped part is normalised into
 *    the batch.
 *  - Anything else goes through serialised HDF5 hyperslab reads of a whole
 *    step, normalised piece by piece. That covers other types or filters,
 *    external, compact or virtual storage, a dataset linked from another
 *    file, and chunks over 64 MiB.
 * Whichever way a file is read, its storage is checked at open against its
 * shape and its size, safe from overflow. Chunk dimensions must be as HDF5
 * allows them. Every chunk must be written, since a fill value is not
 * data, lie within the file, have a size its filters can give and overlap
 * no other. Contiguous data must be written and within the file. Every
 * filter must be one this HDF5 can undo. External, linked and virtual
 * sources must be there and long enough. Deflated chunks are inflated
 * whole, to the stream's end, and their checksum is checked. What fails is
 * refused in one line naming the file, and the chunk where there is one.
 * Files are opened once. One removed or replaced during a run is read as
 * it was. One truncated or rewritten in place stops the run with a line
 * naming the file and the sample.
 *
 * The loader has persistent reader threads that fill a ring of batch slots,
 * up to `depth` batches ahead of the consumer. depth is num_data_workers,
 * at least 2. There are DLPAR_DATA_READERS reader threads, else half the
 * CPUs this process may run on, from 2 to 8. A reader takes the next time
 * step, a sample's input or target, of the earliest batch not yet taken.
 * So all readers work on one batch and start the next as the first runs
 * out. Data-parallel rank k of D takes, at step s, the samples at
 * positions (s*B + j)*D + k of the epoch's order, as PyTorch's
 * DistributedSampler does. The order is a permutation seeded by the seed
 * and the epoch, or the identity for validation. All tensor-parallel ranks
 * of a group read the same samples. */
#ifndef DLPAR_DATA_H
#define DLPAR_DATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"
#include "trainer/config/train_config.h"

typedef struct era5_chunks era5_chunks; /* a chunked file's chunks, defined in data.c */

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
  long *fields_dset; /* per file, the hid_t of its `fields` dataset, or -1; hid_t is kept out of this header */
  long *file_handle; /* per file: hid_t of the open file, or -1 */
  long long **step_offset; /* per file: byte offset of each time step for pread, or NULL */
  era5_chunks **chunks;    /* Per file, its chunks for pread, or NULL. With neither, HDF5 reads it. */
  int *fds;                /* per file: descriptor for pread, or -1 */
  long long *file_bytes;   /* per file: its size at open */
  size_t stage_floats;     /* a piece: whole rows of one channel, about 128 KiB */
  size_t scratch_floats;   /* era5_read's staging buffer: a piece, or a chunk's slice, the chunk and it stored */
} era5_data;

/* Seconds era5_read spent, added to. Reading counts pread or HDF5, the
 * lock's wait included, and inflating and unshuffling chunks. Normalising
 * into the output is counted apart. */
typedef struct {
  double read, normalise;
} era5_seconds;

int era5_open(era5_data *data, const char *dir, const train_config *cfg, long limit, const float *means,
              const float *stds, pthread_mutex_t *hdf5_lock, dlpar_error *err);
/* One time step of sample idx, normalised into out. Part 0 is its input of
 * in_channels x height x width floats, and part 1 its target of
 * out_channels x height x width. NaN or inf is an error naming the file
 * and the element. A file that cannot be read is an error naming it and
 * the sample. stage is the caller's scratch_floats floats, one per thread,
 * and seconds is added to. Thread-safe. */
int era5_read(era5_data *data, long idx, int part, float *stage, float *out, era5_seconds *seconds, dlpar_error *err);
void era5_close(era5_data *data);

/* Loads the per-channel means and stds of shape [1, C, 1, 1] with
 * C >= channels, from .npy or from HDF5 with a dataset named as the file's stem. */
int era5_load_stats(const char *path, int channels, float **values, dlpar_error *err);

typedef struct {
  void *(*alloc)(size_t bytes); /* slot memory: pinned host memory for GPUs */
  void (*free)(void *ptr);
} loader_memory;

typedef struct loader loader;

/* depth is the number of batches read ahead of the consumer,
 * num_data_workers, and 2 when it is less than 2. The reader threads are
 * counted for the node as above, whatever depth says. A batch is what the
 * model takes as it is: local_batch inputs of in_channels, then
 * local_batch targets of out_channels. */
int loader_create(loader **l, era5_data *data, int local_batch, int dp_rank, int dp_size, bool shuffle, long seed,
                  int depth, const loader_memory *memory, dlpar_error *err);
long loader_steps_per_epoch(const loader *l);
/* The one definition of an epoch's end, for the loader and the trainer's
 * saved position alike: step steps_per_epoch of an epoch (all its steps
 * done) is step 0 of the next. Returns DLPAR_ERR_INPUT, with err naming the
 * position, when step is outside 0..steps_per_epoch. */
int loader_position(const loader *l, long *epoch, long *step, dlpar_error *err);
/* Produce `count` batches from epoch and step on, without end when count is
 * -1. The position is taken as loader_position leaves it. */
void loader_start(loader *l, long epoch, long step, long count);
/* The next batch in order, blocking. It is valid until loader_release. */
int loader_next(loader *l, const float **inp, const float **tgt, dlpar_error *err);
void loader_release(loader *l);
/* Seconds the consumer spent waiting in loader_next, the I/O not hidden. */
double loader_wait_seconds(const loader *l);

/* Where the readers' time went since loader_create, for --benchy's breakdown. */
typedef struct {
  int readers, depth;
  double bytes;             /* normalised into batch slots */
  era5_seconds seconds;     /* summed over the readers */
  double idle_seconds;      /* readers waiting for a start, or for a free slot when the consumer is behind */
} loader_stats;
void loader_get_stats(loader *l, loader_stats *stats);
void loader_destroy(loader *l);

#endif

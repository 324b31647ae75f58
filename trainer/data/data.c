/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/data.c: ERA5 samples from HDF5 and the prefetching loader, as data.h describes. */
#include "config.h"

#include "trainer/data/data.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define ZLIB_CONST /* next_in is const */
#include <zlib.h>
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/data/h5util.h"
#include "trainer/data/normalise.h"
#include "trainer/data/npy.h"
#include "trainer/data/rng.h"

/* ------------------------------------------------------------ files */

/* A piece of a time step is whole rows of one channel, small enough to stay
 * in the core's L2 cache between its read and its normalisation: 128 KiB
 * read 0.8 of dd's bandwidth where 1 MiB pieces read 0.7 (bench/RESULTS.md,
 * 2026-12-07). */
enum { STAGE_BYTES = 1 << 17 };
/* Larger chunks, counted unpacked, stay with HDF5, because each reader holds up to two. */
enum { CHUNK_LIMIT = 64 << 20 };

/* A chunked file's chunks, read here rather than by HDF5, as data.h says.
 * This holds their shape, HDF5's filters and each chunk's place in the
 * file, resolved once at open. The filters are a byte shuffle, deflate, or
 * both in h5py's order, shuffle first. */
struct era5_chunks {
  long shape[4];          /* a chunk's [t, c, h, w] */
  long grid[4];           /* chunks along each dimension */
  bool shuffle, deflate;
  size_t max_stored;      /* the largest chunk as stored, in bytes */
  long long *offset;      /* per chunk, row-major over grid: its byte offset */
  uint32_t *stored;       /* its bytes as stored */
  unsigned char *skipped; /* its filter mask: bit i set means filter i was not applied, an optional one that failed */
};

static void chunks_free(era5_chunks *k)
{
  if (!k)
    return;
  free(k->offset);
  free(k->stored);
  free(k->skipped);
  free(k);
}

static int list_files(era5_data *d, const char *dir, dlpar_error *err)
{
  char pattern[PATH_MAX + 8];
  struct stat st;
  glob_t found;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no such directory (fix the data path in the config, or generate "
                           "data with dlpar-gen-data)", dlpar_show(dir).text);
  snprintf(pattern, sizeof(pattern), "%s/*.h5", dir);
  if (glob(pattern, 0, NULL, &found) != 0 || found.gl_pathc == 0) {
    globfree(&found);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no *.h5 files (the ERA5 layout has one file per year, e.g. "
                           "2016.h5)", dlpar_show(dir).text);
  }
  d->nfiles = (int)found.gl_pathc;
  d->files = calloc((size_t)d->nfiles, sizeof(char *));
  d->fields_dset = malloc(sizeof(long) * (size_t)d->nfiles);
  d->file_handle = malloc(sizeof(long) * (size_t)d->nfiles);
  d->step_offset = calloc((size_t)d->nfiles, sizeof(long long *));
  d->chunks = calloc((size_t)d->nfiles, sizeof(era5_chunks *));
  d->fds = malloc(sizeof(int) * (size_t)d->nfiles);
  d->file_bytes = calloc((size_t)d->nfiles, sizeof(long long));
  if (!d->files || !d->fields_dset || !d->file_handle || !d->step_offset || !d->chunks || !d->fds || !d->file_bytes) {
    globfree(&found);
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the list of %d data files", d->nfiles);
  }
  for (int i = 0; i < d->nfiles; i++) {
    d->files[i] = strdup(found.gl_pathv[i]); /* glob sorts by name */
    d->fields_dset[i] = d->file_handle[i] = -1;
    d->fds[i] = -1;
  }
  globfree(&found);
  return DLPAR_OK;
}

/* Opens file i's `fields`, kept open for the reads to come, and the file
 * for pread. Its size is noted, so that a file that shrinks later is named. */
static int open_fields(era5_data *d, int i, dlpar_error *err)
{
  const char *path = d->files[i];
  hid_t file = -1, dset = -1;
  struct stat st;
  int rc = DLPAR_OK;
  DLPAR_TRY_GOTO(h5_open_read(path, "cannot open (check the data path in the config)", &file, err), rc, out);
  if (H5Lexists(file, "fields", H5P_DEFAULT) <= 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no dataset 'fields' (the ERA5 layout is fields[T, C, H, W])",
                         dlpar_show(path).text);
    goto out;
  }
  H5_TRY_GOTO(dset = H5Dopen2(file, "fields", H5P_DEFAULT), path, err, rc, out);
  if ((d->fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(d->fds[i], &st) != 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: %s (check the file's permissions)", dlpar_show(path).text,
                         strerror(errno));
    goto out;
  }
  d->file_bytes[i] = (long long)st.st_size;
  d->fields_dset[i] = dset;
  d->file_handle[i] = file;
  return DLPAR_OK;
out:
  h5_close(dset);
  h5_close(file);
  return rc;
}

/* Shape and type of file i's fields; the first file sets the expectations. */
static int check_shape(era5_data *d, int i, dlpar_error *err)
{
  const char *path = d->files[i];
  const int channels = d->in_channels > d->out_channels ? d->in_channels : d->out_channels;
  hsize_t dims[4];
  hid_t space = -1, type = -1;
  int rc = DLPAR_OK, ndims;
  H5_TRY_GOTO(space = H5Dget_space((hid_t)d->fields_dset[i]), path, err, rc, out);
  H5_TRY_GOTO(type = H5Dget_type((hid_t)d->fields_dset[i]), path, err, rc, out);
  ndims = H5Sget_simple_extent_ndims(space);
  if (ndims != 4 || H5Tget_class(type) != H5T_FLOAT) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is %s with %d %s, expected floats [T, C, H, W]",
                         dlpar_show(path).text, H5Tget_class(type) == H5T_FLOAT ? "float" : "not float", ndims,
                         dlpar_plural(ndims, "dimension", "dimensions"));
    goto out;
  }
  H5Sget_simple_extent_dims(space, dims, NULL);
  if (dims[0] < 1 || dims[0] > (hsize_t)(LONG_MAX / d->nfiles) || dims[1] > INT_MAX || dims[2] > INT_MAX ||
      dims[3] > INT_MAX) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is [%llu, %llu, %llu, %llu], beyond what a run can index "
                         "(at least one time step, under 2^31 channels, rows and columns: the file is damaged, copy "
                         "or regenerate it)", dlpar_show(path).text, (unsigned long long)dims[0],
                         (unsigned long long)dims[1], (unsigned long long)dims[2], (unsigned long long)dims[3]);
    goto out;
  }
  if (i == 0) {
    d->per_file = (long)dims[0];
    d->file_channels = (int)dims[1];
    d->file_height = (int)dims[2];
    d->file_width = (int)dims[3];
  }
  if ((long)dims[0] != d->per_file || (int)dims[1] != d->file_channels || (int)dims[2] != d->file_height ||
      (int)dims[3] != d->file_width) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is [%llu, %llu, %llu, %llu] but %s has [%ld, %d, %d, %d] "
                         "(all years need one shape)", dlpar_show(path).text, (unsigned long long)dims[0],
                         (unsigned long long)dims[1], (unsigned long long)dims[2], (unsigned long long)dims[3],
                         dlpar_show(d->files[0]).text, d->per_file, d->file_channels, d->file_height, d->file_width);
  } else if (d->file_channels < channels || d->file_height < d->height || d->file_width < d->width) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT,
                         "%s: fields [%ld, %d, %d, %d] is smaller than %d %s of %dx%d (lower "
                         "n_in_channels/n_out_channels or img_size)",
                         dlpar_show(path).text, d->per_file, d->file_channels, d->file_height, d->file_width, channels,
                         dlpar_plural(channels, "channel", "channels"), d->height, d->width);
  } else if (d->per_file < 3L * d->dt) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %ld time steps per file, fewer than 3*dt=%d (lower dt or add time "
                         "steps)", dlpar_show(path).text, d->per_file, 3 * d->dt);
  }
out:
  h5_close(type);
  h5_close(space);
  return rc;
}

/* ------------------------------------------------------------ where a dataset's bytes are */

/* Every number below comes from the file. Each is checked, safe from
 * overflow, against the dataset's shape and the file's size before it
 * sizes a buffer or a read, whichever way the file is then read, by pread
 * here or by HDF5. */

/* HDF5 keeps a chunk under 4 GiB, and a chunk's dimension in 32 bits. */
#define H5_CHUNK_MAX UINT32_MAX
/* Bytes a filter's output may add to a chunk, such as fletcher32's 4,
 * scaleoffset's and szip's headers, or an incompressible deflate stream's
 * blocks. A chunk's stored size is at most its bytes, 1/64 of them and
 * this. */
enum { FILTER_SLACK = 1024 };

/* What check_storage found of a dataset's bytes. */
typedef struct {
  H5D_layout_t layout;
  uint64_t data_bytes;  /* the dataset's bytes as stored unfiltered: elements x element size */
  haddr_t addr;         /* contiguous: where they start */
  hsize_t chunk[4];     /* chunked: a chunk's shape */
  long grid[4];         /* chunks along each dimension */
  long count;           /* chunks */
  uint64_t chunk_bytes; /* a chunk's bytes unfiltered */
  int nfilters;
  long long *offset;    /* per chunk, row-major over grid: its byte offset */
  uint32_t *stored;     /* its bytes as stored */
  unsigned *mask;       /* its filter mask: bit f set, filter f was not applied */
} storage;

static void storage_free(storage *s)
{
  free(s->offset);
  free(s->stored);
  free(s->mask);
  memset(s, 0, sizeof(*s));
}

/* Whether [addr, addr + bytes) lies within a file of file_bytes, overflow-safe. */
static bool within_file(haddr_t addr, uint64_t bytes, long long file_bytes)
{
  return addr != HADDR_UNDEF && addr <= (uint64_t)file_bytes && bytes <= (uint64_t)file_bytes - addr;
}

/* The first element of chunk n (row-major over grid), into at. */
static void chunk_start(const storage *s, long n, hsize_t at[4])
{
  for (int j = 3; j >= 0; j--) {
    at[j] = (hsize_t)(n % s->grid[j]) * s->chunk[j];
    n /= s->grid[j];
  }
}

/* The dataset's 4 dimensions and their maxima, and the unfiltered bytes of
 * its elements of `element` bytes, checked for overflow. */
static int storage_shape(const char *path, hid_t dset, size_t element, hsize_t dims[4], hsize_t maxdims[4],
                         storage *s, dlpar_error *err)
{
  hid_t space = -1;
  int rc = DLPAR_OK;
  uint64_t elements = 1;
  bool overflow = false;
  H5_TRY_GOTO(space = H5Dget_space(dset), path, err, rc, out);
  if (H5Sget_simple_extent_ndims(space) != 4 || H5Sget_simple_extent_dims(space, dims, maxdims) != 4) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is not 4-dimensional (the ERA5 layout is fields[T, C, H, "
                         "W])", dlpar_show(path).text);
    goto out;
  }
  for (int j = 0; j < 4 && !overflow; j++)
    overflow = __builtin_mul_overflow(elements, (uint64_t)dims[j], &elements);
  if (overflow || element == 0 || __builtin_mul_overflow(elements, (uint64_t)element, &s->data_bytes) ||
      s->data_bytes > (uint64_t)INT64_MAX)
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields [%llu, %llu, %llu, %llu] of %zu-byte elements is more "
                         "bytes than any file holds (the file is damaged: copy or regenerate it)",
                         dlpar_show(path).text, (unsigned long long)dims[0], (unsigned long long)dims[1],
                         (unsigned long long)dims[2], (unsigned long long)dims[3], element);
out:
  h5_close(space);
  return rc;
}

/* A chunk's shape is checked against the dataset's by HDF5's rule. Each
 * chunk dimension is at least 1, at most the dimension's maximum where
 * that is fixed, and fits in 32 bits, and a chunk is under 4 GiB. This
 * also gives the chunks along each dimension and their number, which
 * cannot exceed the file's bytes where all are written. */
static int chunk_shape(const char *path, hid_t plist, size_t element, const hsize_t dims[4],
                       const hsize_t maxdims[4], long long file_bytes, storage *s, dlpar_error *err)
{
  uint64_t count = 1;
  bool ok = H5Pget_chunk(plist, 4, s->chunk) == 4;
  s->chunk_bytes = element;
  for (int j = 0; j < 4 && ok; j++) {
    ok = s->chunk[j] >= 1 && s->chunk[j] <= H5_CHUNK_MAX &&
         (maxdims[j] == H5S_UNLIMITED || s->chunk[j] <= maxdims[j]) &&
         !__builtin_mul_overflow(s->chunk_bytes, (uint64_t)s->chunk[j], &s->chunk_bytes) &&
         s->chunk_bytes <= H5_CHUNK_MAX;
  }
  if (!ok)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' chunks [%llu, %llu, %llu, %llu] of %zu-byte elements do "
                           "not fit its dimensions [%llu, %llu, %llu, %llu] (HDF5 allows 1 to the dimension, under "
                           "4 GiB a chunk: the file is damaged, copy or regenerate it)", dlpar_show(path).text,
                           (unsigned long long)s->chunk[0], (unsigned long long)s->chunk[1],
                           (unsigned long long)s->chunk[2], (unsigned long long)s->chunk[3], element,
                           (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2],
                           (unsigned long long)dims[3]);
  for (int j = 0; j < 4 && ok; j++) {
    const uint64_t along = dims[j] / s->chunk[j] + (dims[j] % s->chunk[j] != 0);
    s->grid[j] = (long)along;
    ok = along <= (uint64_t)LONG_MAX && !__builtin_mul_overflow(count, along, &count) &&
         count <= (uint64_t)file_bytes;
  }
  if (!ok)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields has more chunks of [%llu, %llu, %llu, %llu] than its "
                           "%lld bytes can hold (the file is damaged or not fully written: copy or regenerate it)",
                           dlpar_show(path).text, (unsigned long long)s->chunk[0], (unsigned long long)s->chunk[1],
                           (unsigned long long)s->chunk[2], (unsigned long long)s->chunk[3], file_bytes);
  s->count = (long)count;
  return DLPAR_OK;
}

/* Every filter of the pipeline must be one this HDF5 can undo. A shuffle's
 * element size must be the dataset's, as HDF5 sets it, since another size
 * unshuffles into other data. */
static int check_filters(const char *path, hid_t plist, size_t element, storage *s, dlpar_error *err)
{
  s->nfilters = H5Pget_nfilters(plist);
  if (s->nfilters < 0 || s->nfilters > 32)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields has %d filters (the file is damaged: copy or regenerate "
                           "it)", dlpar_show(path).text, s->nfilters);
  for (int f = 0; f < s->nfilters; f++) {
    unsigned flags = 0, config = 0, values[1] = {0};
    size_t nvalues = 1;
    const H5Z_filter_t id = H5Pget_filter2(plist, (unsigned)f, &flags, &nvalues, values, 0, NULL, NULL);
    if (id < 0 || H5Zfilter_avail(id) <= 0 || H5Zget_filter_info(id, &config) < 0 ||
        !(config & H5Z_FILTER_CONFIG_DECODE_ENABLED))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is stored through HDF5 filter %d, which this HDF5 "
                             "cannot undo (install its plugin, or rewrite the file without it, e.g. h5repack -f "
                             "NONE)", dlpar_show(path).text, (int)id);
    if (id == H5Z_FILTER_SHUFFLE && (nvalues < 1 || values[0] != element))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' shuffle is of %u-byte elements, its type of %zu (the "
                             "file is damaged: copy or regenerate it)", dlpar_show(path).text,
                             nvalues < 1 ? 0u : values[0], element);
  }
  return DLPAR_OK;
}

/* The bytes chunk n of stored size `size` may take, by its filter mask.
 * Where no filter other than a shuffle was applied, it takes exactly the
 * chunk's bytes, plus 4 for a fletcher32 that was applied. Otherwise it
 * takes at least a byte more than the checksums and at most what any
 * filter's output can be, FILTER_SLACK included. libhdf5 1.10.8 reads past
 * a chunk shorter than these, in its fletcher32 check and its copy of an
 * unfiltered chunk. */
static bool chunk_size_fits(const storage *s, hid_t plist, unsigned mask, hsize_t size)
{
  bool resized = false;
  uint64_t checksums = 0;
  for (int f = 0; f < s->nfilters; f++) {
    unsigned flags;
    size_t nvalues = 0;
    const H5Z_filter_t id = H5Pget_filter2(plist, (unsigned)f, &flags, &nvalues, NULL, 0, NULL, NULL);
    if (mask & (1u << f))
      continue;
    if (id == H5Z_FILTER_FLETCHER32)
      checksums += 4;
    else if (id != H5Z_FILTER_SHUFFLE)
      resized = true;
  }
  if (!resized)
    return size == s->chunk_bytes + checksums;
  return size > checksums && size <= s->chunk_bytes + s->chunk_bytes / 64 + FILTER_SLACK + checksums;
}

static int compare_places(const void *a, const void *b)
{
  const long long *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* No two chunks may share bytes, since HDF5 never writes them so. The
 * chunks' places are sorted, and each must end before the next begins. */
static int check_overlaps(const char *path, const storage *s, dlpar_error *err)
{
  long long *place = malloc(2 * sizeof(long long) * (size_t)s->count);
  int rc = DLPAR_OK;
  if (!place)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the chunk index of %s", dlpar_show(path).text);
  for (long n = 0; n < s->count; n++) {
    place[2 * n] = s->offset[n];
    place[2 * n + 1] = s->stored[n];
  }
  qsort(place, (size_t)s->count, 2 * sizeof(long long), compare_places);
  for (long n = 1; n < s->count && rc == DLPAR_OK; n++) {
    if (place[2 * n - 2] + place[2 * n - 1] > place[2 * n])
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: two chunks of fields share bytes from %lld (the file is "
                           "damaged: copy or regenerate it)", dlpar_show(path).text, place[2 * n]);
  }
  free(place);
  return rc;
}

/* What to add to H5Dget_chunk_info's addresses to count them from the
 * file's start. Up to HDF5 1.14.3 that is the user block, the bytes before
 * the HDF5 data of dset's file, because those versions give chunk
 * addresses from there while H5Dget_offset counts from the file's start.
 * From 1.14.4 on it is nothing, because HDF5 adds the user block itself,
 * after HDF5 pull request 4236 for issue 3003. */
static int user_block(const char *path, hid_t dset, hsize_t *bytes, dlpar_error *err)
{
  hid_t file = -1, fcpl = -1;
  int rc = DLPAR_OK;
  *bytes = 0;
  if (H5_VERSION_GE(1, 14, 4))
    return DLPAR_OK;
  H5_TRY_GOTO(file = H5Iget_file_id(dset), path, err, rc, out);
  H5_TRY_GOTO(fcpl = H5Fget_create_plist(file), path, err, rc, out);
  H5_TRY_GOTO(H5Pget_userblock(fcpl, bytes), path, err, rc, out);
out:
  h5_close(fcpl);
  h5_close(file);
  return rc;
}

/* Each chunk's place from the file's start, every one written, within the
 * file, of a size its filters can give, none overlapping another. */
static int index_chunks(const char *path, hid_t dset, hid_t plist, long long file_bytes, storage *s,
                        dlpar_error *err)
{
  hsize_t base = 0;
  int rc = DLPAR_OK;
  DLPAR_TRY(user_block(path, dset, &base, err));
  s->offset = malloc(sizeof(long long) * (size_t)s->count);
  s->stored = malloc(sizeof(uint32_t) * (size_t)s->count);
  s->mask = malloc(sizeof(unsigned) * (size_t)s->count);
  if (!s->offset || !s->stored || !s->mask)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the chunk index of %s", dlpar_show(path).text);
  for (long n = 0; n < s->count && rc == DLPAR_OK; n++) {
    hsize_t at[4], size = 0;
    haddr_t addr = HADDR_UNDEF;
    unsigned mask = 0;
    chunk_start(s, n, at);
    H5_TRY_GOTO(H5Dget_chunk_info_by_coord(dset, at, &mask, &addr, &size), path, err, rc, out);
    if (addr != HADDR_UNDEF && addr <= (uint64_t)file_bytes && base <= (uint64_t)file_bytes)
      addr += base; /* both under 2^63: no overflow */
    if (addr == HADDR_UNDEF)
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: the chunk at fields[%llu, %llu, %llu, %llu] was never written "
                           "(HDF5 would give its fill value, which is not data: write every time step, or regenerate "
                           "the file)", dlpar_show(path).text, (unsigned long long)at[0], (unsigned long long)at[1],
                           (unsigned long long)at[2], (unsigned long long)at[3]);
    else if (!within_file(addr, size, file_bytes) || (s->nfilters < 32 && mask >> s->nfilters) ||
             !chunk_size_fits(s, plist, mask, size))
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: the chunk at fields[%llu, %llu, %llu, %llu] claims %llu bytes "
                           "at byte %llu, filter mask %#x, for %llu bytes of data in a file of %lld (the file is "
                           "damaged: copy or regenerate it)", dlpar_show(path).text, (unsigned long long)at[0],
                           (unsigned long long)at[1], (unsigned long long)at[2], (unsigned long long)at[3],
                           (unsigned long long)size, (unsigned long long)addr, mask,
                           (unsigned long long)s->chunk_bytes, file_bytes);
    s->offset[n] = (long long)addr;
    s->stored[n] = (uint32_t)size;
    s->mask[n] = mask;
  }
  if (rc == DLPAR_OK)
    rc = check_overlaps(path, s, err);
out:
  return rc;
}

/* A contiguous dataset's bytes: written, as many as its shape needs, within
 * the file. */
static int check_contiguous(const char *path, hid_t dset, long long file_bytes, storage *s, dlpar_error *err)
{
  const hsize_t size = H5Dget_storage_size(dset);
  s->addr = H5Dget_offset(dset);
  if (s->addr == HADDR_UNDEF)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields was never written (HDF5 would give its fill value, "
                           "which is not data: write it, or regenerate the file)", dlpar_show(path).text);
  if (size != s->data_bytes || !within_file(s->addr, size, file_bytes))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields claims %llu bytes at byte %llu for %llu bytes of data "
                           "in a file of %lld (the file is damaged: copy or regenerate it)", dlpar_show(path).text,
                           (unsigned long long)size, (unsigned long long)s->addr,
                           (unsigned long long)s->data_bytes, file_bytes);
  return DLPAR_OK;
}

/* An external file's path as HDF5 1.10 finds it. It is taken as given where
 * absolute, else after HDF5_EXTFILE_PREFIX or the access list's prefix,
 * where "${ORIGIN}" stands for the HDF5 file's directory, else from the
 * working directory. */
static void external_path(const char *path, hid_t dset, const char *name, char *out, size_t len)
{
  const char *env = getenv("HDF5_EXTFILE_PREFIX");
  char prefix[PATH_MAX] = "";
  hid_t access = H5Dget_access_plist(dset);
  if (env && *env)
    snprintf(prefix, sizeof(prefix), "%s", env);
  else if (access >= 0 && H5Pget_efile_prefix(access, prefix, sizeof(prefix)) < 0)
    prefix[0] = '\0';
  h5_close(access);
  if (strncmp(prefix, "${ORIGIN}", 9) == 0) {
    const char *slash = strrchr(path, '/');
    char rest[PATH_MAX];
    snprintf(rest, sizeof(rest), "%s", prefix + 9);
    snprintf(prefix, sizeof(prefix), "%.*s%s", slash ? (int)(slash - path) : 1, slash ? path : ".", rest);
  }
  if (name[0] == '/' || !prefix[0])
    snprintf(out, len, "%s", name);
  else
    snprintf(out, len, "%s/%s", prefix, name);
}

/* External storage is raw files beside the HDF5 file. Each must be there
 * and long enough for its part of the dataset, because HDF5 reads zeros
 * past an external file's end. */
static int check_external(const char *path, hid_t dset, hid_t plist, int files, const storage *s, dlpar_error *err)
{
  uint64_t left = s->data_bytes;
  for (int f = 0; f < files && left > 0; f++) {
    char name[PATH_MAX], where[PATH_MAX + 8];
    off_t offset = 0;
    hsize_t size = 0;
    struct stat st;
    uint64_t take;
    if (H5Pget_external(plist, (unsigned)f, sizeof(name), name, &offset, &size) < 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' external file %d is unreadable (the file is "
                             "damaged: copy or regenerate it)", dlpar_show(path).text, f);
    name[sizeof(name) - 1] = '\0';
    external_path(path, dset, name, where, sizeof(where));
    take = size < left ? size : left;
    if (stat(where, &st) != 0 || !S_ISREG(st.st_mode))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is stored in the external file %s, which is not there "
                             "(copy it beside the HDF5 file, or set HDF5_EXTFILE_PREFIX)", dlpar_show(path).text,
                             dlpar_show(where).text);
    if (offset < 0 || (uint64_t)offset > (uint64_t)st.st_size || take > (uint64_t)st.st_size - (uint64_t)offset)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields needs %llu bytes from byte %lld of its external file "
                             "%s, which has %lld (copy the whole file)", dlpar_show(path).text,
                             (unsigned long long)take, (long long)offset, dlpar_show(where).text,
                             (long long)st.st_size);
    left -= take;
  }
  if (left > 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' external files hold %llu bytes too few (the file is "
                           "damaged: copy or regenerate it)", dlpar_show(path).text, (unsigned long long)left);
  return DLPAR_OK;
}

static int check_virtual(const char *path, hid_t plist, hsize_t npoints, dlpar_error *err);

/* The bytes of dataset dset, in file `path` of file_bytes bytes, checked
 * for what its layout needs, as above. s holds what was found. A virtual
 * dataset is accepted only where `virtual_ok`, which a virtual dataset's
 * sources are checked without, since they may not be virtual. */
static int check_storage(const char *path, hid_t dset, long long file_bytes, bool virtual_ok, storage *s,
                         dlpar_error *err)
{
  hsize_t dims[4], maxdims[4];
  hid_t plist = -1, type = -1;
  int rc = DLPAR_OK, external;
  size_t element;
  H5_TRY_GOTO(plist = H5Dget_create_plist(dset), path, err, rc, out);
  H5_TRY_GOTO(type = H5Dget_type(dset), path, err, rc, out);
  H5_TRY_GOTO(s->layout = H5Pget_layout(plist), path, err, rc, out);
  H5_TRY_GOTO(external = H5Pget_external_count(plist), path, err, rc, out);
  element = H5Tget_size(type);
  DLPAR_TRY_GOTO(storage_shape(path, dset, element, dims, maxdims, s, err), rc, out);
  if (s->layout == H5D_VIRTUAL && virtual_ok) {
    rc = check_virtual(path, plist, s->data_bytes / element, err);
  } else if (s->layout == H5D_VIRTUAL) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields is a virtual dataset over another virtual dataset (give "
                         "it real storage, e.g. h5repack -l CONTI)", dlpar_show(path).text);
  } else if (external > 0) {
    rc = check_external(path, dset, plist, external, s, err);
  } else if (s->layout == H5D_CONTIGUOUS) {
    rc = check_contiguous(path, dset, file_bytes, s, err);
  } else if (s->layout == H5D_COMPACT) {
    if (H5Dget_storage_size(dset) != s->data_bytes)
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: compact fields holds %llu bytes, not the %llu of its shape (the "
                           "file is damaged: copy or regenerate it)", dlpar_show(path).text,
                           (unsigned long long)H5Dget_storage_size(dset), (unsigned long long)s->data_bytes);
  } else if (s->layout == H5D_CHUNKED) {
    DLPAR_TRY_GOTO(chunk_shape(path, plist, element, dims, maxdims, file_bytes, s, err), rc, out);
    DLPAR_TRY_GOTO(check_filters(path, plist, element, s, err), rc, out);
    rc = index_chunks(path, dset, plist, file_bytes, s, err);
  } else {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields has an unknown storage layout %d (the file is damaged: "
                         "copy or regenerate it)", dlpar_show(path).text, (int)s->layout);
  }
out:
  h5_close(type);
  h5_close(plist);
  return rc;
}

/* A virtual source's file as HDF5 finds it: the virtual file itself for
 * ".", else as given where absolute, else after HDF5_VDS_PREFIX, beside the
 * virtual file, or from the working directory: the first that exists. */
static void virtual_source_path(const char *path, const char *name, char *out, size_t len)
{
  const char *env = getenv("HDF5_VDS_PREFIX"), *slash = strrchr(path, '/');
  struct stat st;
  if (strcmp(name, ".") == 0 || name[0] == '/') {
    snprintf(out, len, "%s", strcmp(name, ".") == 0 ? path : name);
    return;
  }
  if (env && *env) {
    snprintf(out, len, "%s/%s", env, name);
    if (stat(out, &st) == 0)
      return;
  }
  snprintf(out, len, "%.*s/%s", slash ? (int)(slash - path) : 1, slash ? path : ".", name);
  if (stat(out, &st) != 0)
    snprintf(out, len, "%s", name);
}

/* One source of a virtual dataset must have its file there and its dataset
 * in it, and that dataset's bytes are checked as any. HDF5 would give the
 * fill value for a missing source. */
static int check_source(const char *path, hid_t plist, size_t k, dlpar_error *err)
{
  char file_name[PATH_MAX], dset_name[PATH_MAX], where[2 * PATH_MAX + 2];
  hid_t file = -1, dset = -1;
  storage s = {0};
  struct stat st;
  int rc = DLPAR_OK;
  if (H5Pget_virtual_filename(plist, k, file_name, sizeof(file_name)) < 0 ||
      H5Pget_virtual_dsetname(plist, k, dset_name, sizeof(dset_name)) < 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' virtual source %zu is unreadable (the file is damaged: "
                           "copy or regenerate it)", dlpar_show(path).text, k);
  virtual_source_path(path, file_name, where, sizeof(where));
  if (stat(where, &st) != 0 || !S_ISREG(st.st_mode) || (file = H5Fopen(where, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0 ||
      H5Lexists(file, dset_name, H5P_DEFAULT) <= 0 || (dset = H5Dopen2(file, dset_name, H5P_DEFAULT)) < 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields maps to %s in %s, which is not there (HDF5 would give the "
                         "fill value: copy the source beside the file, or store the data in it, e.g. h5repack -l "
                         "CONTI)", dlpar_show(path).text, dlpar_show(dset_name).text, dlpar_show(where).text);
    goto out;
  }
  rc = check_storage(where, dset, (long long)st.st_size, false, &s, err);
out:
  storage_free(&s);
  h5_close(dset);
  h5_close(file);
  return rc;
}

/* The union of a virtual dataset's mapped selections so far (in *mapped,
 * -1 before the first) with mapping k's. Mappings may overlap, so only the
 * union says whether every element is mapped; a mapping of the whole
 * dataset is a union no other selection can grow. */
static herr_t add_mapping(hid_t plist, size_t k, hid_t *mapped)
{
  const hid_t space = H5Pget_virtual_vspace(plist, k);
  hid_t grown = -1;
  if (space < 0)
    return -1;
  if (*mapped < 0 || H5Sget_select_type(space) == H5S_SEL_ALL) {
    grown = H5Scopy(space);
  } else if (H5Sget_select_type(*mapped) == H5S_SEL_ALL) {
    grown = H5Scopy(*mapped);
  } else {
    grown = H5Scombine_select(*mapped, H5S_SELECT_OR, space);
  }
  h5_close(space);
  if (grown < 0)
    return -1;
  h5_close(*mapped);
  *mapped = grown;
  return 0;
}

/* A virtual dataset: every source there and sound, and the union of its
 * mappings covering every element, since an unmapped one would read as the
 * fill value. */
static int check_virtual(const char *path, hid_t plist, hsize_t npoints, dlpar_error *err)
{
  size_t count = 0;
  hid_t mapped = -1;
  hssize_t covered = 0;
  int rc = DLPAR_OK;
  if (H5Pget_virtual_count(plist, &count) < 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' virtual mappings are unreadable (the file is damaged: "
                           "copy or regenerate it)", dlpar_show(path).text);
  for (size_t k = 0; k < count; k++) {
    if (add_mapping(plist, k, &mapped) < 0) {
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' virtual mapping %zu is unreadable (the file is "
                           "damaged: copy or regenerate it)", dlpar_show(path).text, k);
      goto out;
    }
    DLPAR_TRY_GOTO(check_source(path, plist, k, err), rc, out);
  }
  covered = mapped < 0 ? 0 : H5Sget_select_npoints(mapped);
  if (covered < 0 || (hsize_t)covered < npoints)
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields' virtual mappings cover %lld of its %llu elements (HDF5 "
                         "would give the fill value for the rest: map them all)", dlpar_show(path).text,
                         (long long)covered, (unsigned long long)npoints);
out:
  h5_close(mapped);
  return rc;
}

/* The number HDF5 gives the file that object id lies in. HDF5 1.10's
 * H5Oget_info2 fills an H5O_info_t; from 1.12 on that call takes the old
 * H5O_info1_t and H5Oget_info3 fills the new H5O_info2_t. Both hold fileno. */
static herr_t object_fileno(hid_t id, unsigned long *fileno)
{
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  const herr_t rc = H5Oget_info3(id, &info, H5O_INFO_BASIC);
#else
  H5O_info_t info;
  const herr_t rc = H5Oget_info2(id, &info, H5O_INFO_BASIC);
#endif
  *fileno = rc < 0 ? 0 : info.fileno;
  return rc;
}

/* Whether file i's fields lies in the opened file, rather than in another
 * through an external link, and the size of the file it lies in. */
static int dataset_file(const era5_data *d, int i, bool *in_file, long long *bytes, dlpar_error *err)
{
  const char *path = d->files[i];
  unsigned long file_fileno, dset_fileno;
  hid_t file = -1;
  char name[PATH_MAX];
  struct stat st;
  int rc = DLPAR_OK;
  H5_TRY_GOTO(object_fileno((hid_t)d->file_handle[i], &file_fileno), path, err, rc, out);
  H5_TRY_GOTO(object_fileno((hid_t)d->fields_dset[i], &dset_fileno), path, err, rc, out);
  *in_file = file_fileno == dset_fileno;
  *bytes = d->file_bytes[i];
  if (*in_file)
    goto out;
  H5_TRY_GOTO(file = H5Iget_file_id((hid_t)d->fields_dset[i]), path, err, rc, out);
  if (H5Fget_name(file, name, sizeof(name)) < 0 || stat(name, &st) != 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields links to a file that cannot be found (store the data in "
                         "the file)", dlpar_show(path).text);
    goto out;
  }
  *bytes = (long long)st.st_size;
out:
  h5_close(file);
  return rc;
}

/* Whether this file undoes the dataset's HDF5 filters itself. It does so
 * for no filter, or a 4-byte shuffle, deflate or both in h5py's order. */
static bool known_filters(hid_t plist, bool *shuffle, bool *deflate)
{
  const int n = H5Pget_nfilters(plist);
  *shuffle = *deflate = false;
  for (int f = 0; f < n; f++) {
    unsigned flags, values[4] = {0};
    size_t nvalues = 4;
    const H5Z_filter_t id = H5Pget_filter2(plist, (unsigned)f, &flags, &nvalues, values, 0, NULL, NULL);
    if (id == H5Z_FILTER_SHUFFLE && f == 0 && nvalues >= 1 && values[0] == sizeof(float))
      *shuffle = true;
    else if (id == H5Z_FILTER_DEFLATE && f == n - 1)
      *deflate = true;
    else
      return false;
  }
  return n >= 0;
}

static bool chunk_shuffled(const era5_chunks *k, long n)
{
  return k->shuffle && !(k->skipped[n] & 1u);
}

static bool chunk_deflated(const era5_chunks *k, long n)
{
  return k->deflate && !(k->skipped[n] & (k->shuffle ? 2u : 1u));
}

/* The byte offset of every time step of file i, where each lies whole in
 * one place. The data is then contiguous from s->addr, or in s's
 * unfiltered chunks of whole steps, checked to be all written, each whole
 * and within the file. */
static int resolve_steps(era5_data *d, int i, const storage *s, dlpar_error *err)
{
  const long long step_bytes = (long long)sizeof(float) * d->file_channels * d->file_height * d->file_width;
  const long per_chunk = s->layout == H5D_CONTIGUOUS ? d->per_file : (long)s->chunk[0];
  long long *offset = malloc(sizeof(long long) * (size_t)d->per_file);
  if (!offset)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the offsets of %ld time steps of %s",
                           d->per_file, dlpar_show(d->files[i]).text);
  for (long t = 0; t < d->per_file; t++) {
    const long long first = s->layout == H5D_CONTIGUOUS ? (long long)s->addr : s->offset[t / per_chunk];
    offset[t] = first + t % per_chunk * step_bytes;
  }
  d->step_offset[i] = offset;
  return DLPAR_OK;
}

/* Each chunk's place for pread, from s, which was checked. Deflate streams
 * are no longer than any stream of the chunk can be, by zlib's bound, so
 * the buffers they size are the chunk's. */
static int resolve_chunks(era5_data *d, int i, const storage *s, bool shuffle, bool deflate, dlpar_error *err)
{
  const char *path = d->files[i];
  era5_chunks *k = calloc(1, sizeof(*k));
  const uLong bound = compressBound((uLong)s->chunk_bytes);
  int rc = DLPAR_OK;
  if (!k || !(k->offset = malloc(sizeof(long long) * (size_t)s->count)) ||
      !(k->stored = malloc(sizeof(uint32_t) * (size_t)s->count)) || !(k->skipped = malloc((size_t)s->count))) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the chunk index of %s", dlpar_show(path).text);
    goto out;
  }
  for (int j = 0; j < 4; j++) {
    k->shape[j] = (long)s->chunk[j];
    k->grid[j] = s->grid[j];
  }
  k->shuffle = shuffle;
  k->deflate = deflate;
  for (long n = 0; n < s->count && rc == DLPAR_OK; n++) {
    k->offset[n] = s->offset[n];
    k->stored[n] = s->stored[n];
    k->skipped[n] = (unsigned char)s->mask[n];
    k->max_stored = s->stored[n] > k->max_stored ? s->stored[n] : k->max_stored;
    if (chunk_deflated(k, n) && s->stored[n] > bound)
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: a gzip'ed chunk of fields at byte %lld claims %u bytes, more "
                           "than any deflate stream of its %llu bytes takes (the file is damaged: copy or regenerate "
                           "it)", dlpar_show(path).text, k->offset[n], k->stored[n],
                           (unsigned long long)s->chunk_bytes);
  }
  if (rc == DLPAR_OK) {
    d->chunks[i] = k;
    k = NULL;
  }
out:
  chunks_free(k);
  return rc;
}

/* How file i is read, as data.h describes, once check_storage has checked
 * its storage, whichever way it is read. Native floats in the opened file
 * itself, neither linked from another nor external, and filtered at most
 * by shuffle and deflate, are read by steps where each lies whole in one
 * place, unfiltered. Else they are read by chunks up to CHUNK_LIMIT. Other
 * types and filters, compact or virtual layouts and linked files are read
 * through HDF5. */
static int resolve_layout(era5_data *d, int i, dlpar_error *err)
{
  const char *path = d->files[i];
  const hid_t dset = (hid_t)d->fields_dset[i];
  storage s = {0};
  hid_t plist = -1, type = -1;
  bool in_file = false, shuffle, deflate, whole_steps;
  long long bytes = 0;
  int rc = DLPAR_OK;
  DLPAR_TRY_GOTO(dataset_file(d, i, &in_file, &bytes, err), rc, out);
  DLPAR_TRY_GOTO(check_storage(path, dset, bytes, true, &s, err), rc, out);
  H5_TRY_GOTO(plist = H5Dget_create_plist(dset), path, err, rc, out);
  H5_TRY_GOTO(type = H5Dget_type(dset), path, err, rc, out);
  if (!in_file || H5Tequal(type, H5T_NATIVE_FLOAT) <= 0 || H5Pget_external_count(plist) != 0 ||
      !known_filters(plist, &shuffle, &deflate))
    goto out;
  if (s.layout == H5D_CONTIGUOUS) {
    rc = resolve_steps(d, i, &s, err);
  } else if (s.layout == H5D_CHUNKED) {
    whole_steps = !shuffle && !deflate && s.chunk[1] == (hsize_t)d->file_channels &&
                  s.chunk[2] == (hsize_t)d->file_height && s.chunk[3] == (hsize_t)d->file_width;
    if (whole_steps)
      rc = resolve_steps(d, i, &s, err);
    else if (s.chunk_bytes <= CHUNK_LIMIT)
      rc = resolve_chunks(d, i, &s, shuffle, deflate, err);
  }
out:
  storage_free(&s);
  h5_close(type);
  h5_close(plist);
  return rc;
}

/* The floats of era5_read's staging buffer that file i needs. That is a
 * piece, or for chunks, a chunk's slice of one step, then the whole chunk
 * and a float more where it is inflated, so that a stream running past the
 * chunk is caught there. Where filtered, the chunk as stored follows, at
 * most zlib's bound as resolve_chunks checks. */
static size_t stage_need(const era5_data *d, int i)
{
  const era5_chunks *k = d->chunks[i];
  size_t slice, need;
  if (!k)
    return d->stage_floats;
  slice = (size_t)k->shape[1] * (size_t)k->shape[2] * (size_t)k->shape[3];
  need = slice + (k->deflate ? slice * (size_t)k->shape[0] + 1 : 0);
  if (k->shuffle || k->deflate)
    need += (k->max_stored + sizeof(float) - 1) / sizeof(float);
  return need;
}

/* File i: its fields opened, their shape checked, their layout resolved. */
static int open_file(era5_data *d, int i, dlpar_error *err)
{
  DLPAR_TRY(open_fields(d, i, err));
  DLPAR_TRY(check_shape(d, i, err));
  return resolve_layout(d, i, err);
}

/* How the probe's child ends when a file was refused by the checks, as
 * against a crash (a signal, or a sanitizer's own exit status). */
enum { PROBE_REFUSED = 86 };

/* The probe's child: opens every file as open_file does, saying on fd
 * which file it is at, and exits 0, or PROBE_REFUSED at the first refusal.
 * Its output goes nowhere: the parent words every outcome. */
static void probe_child(era5_data *d, int fd)
{
  const int null = open("/dev/null", O_WRONLY);
  dlpar_error ignored;
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
  }
  for (int i = 0; i < d->nfiles; i++) {
    if (write(fd, &i, sizeof(i)) != (ssize_t)sizeof(i) || open_file(d, i, &ignored) != DLPAR_OK)
      _exit(PROBE_REFUSED);
  }
  _exit(0);
}

/* libhdf5 parses a file's metadata (object headers, global heaps, B-trees)
 * before the loader can check a number of it, and its parsers are not
 * hardened: 1.10.8 reads out of bounds and crashes on a virtual dataset
 * whose global-heap entry claims a wrong size. So every file is opened
 * first in a child process, with the HDF5 lock held so that no thread of
 * ours is inside HDF5 at the fork. A child that crashes on a file is a
 * one-line refusal here naming that file; a file the checks refuse is left
 * to the parent's own open, which words the refusal. */
static int probe_files(era5_data *d, dlpar_error *err)
{
  int fds[2], status = 0, at = -1, i;
  char how[64];
  pid_t child;
  if (pipe(fds) != 0 || (child = fork()) < 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot start the check of the data files: %s (raise the "
                           "process limit)", strerror(errno));
  if (child == 0) {
    close(fds[0]);
    probe_child(d, fds[1]);
  }
  close(fds[1]);
  while (read(fds[0], &i, sizeof(i)) == (ssize_t)sizeof(i))
    at = i;
  close(fds[0]);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == PROBE_REFUSED))
    return DLPAR_OK;
  if (WIFSIGNALED(status))
    snprintf(how, sizeof(how), "crashed (%s)", strsignal(WTERMSIG(status)));
  else
    snprintf(how, sizeof(how), "failed (exit status %d)", WEXITSTATUS(status));
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: libhdf5 %s while reading the file's metadata (the file is "
                         "damaged or crafted: check it with h5dump, or regenerate it)",
                         dlpar_show(d->files[at < 0 ? 0 : at]).text, how);
}

int era5_open(era5_data *d, const char *dir, const train_config *cfg, long limit, const float *means,
              const float *stds, pthread_mutex_t *hdf5_lock, dlpar_error *err)
{
  size_t piece_rows;
  int rc = DLPAR_OK;
  memset(d, 0, sizeof(*d));
  d->in_channels = cfg->n_in_channels;
  d->out_channels = cfg->n_out_channels;
  d->height = cfg->img_size[0];
  d->width = cfg->img_size[1];
  d->dt = cfg->dt;
  d->means = means;
  d->stds = stds;
  d->hdf5_lock = hdf5_lock;
  DLPAR_TRY(list_files(d, dir, err));
  pthread_mutex_lock(hdf5_lock);
  rc = probe_files(d, err);
  for (int i = 0; i < d->nfiles && rc == DLPAR_OK; i++)
    rc = open_file(d, i, err);
  pthread_mutex_unlock(hdf5_lock);
  if (rc != DLPAR_OK)
    return rc;
  piece_rows = STAGE_BYTES / (sizeof(float) * (size_t)d->width); /* img_size is checked positive */
  piece_rows = piece_rows < 1 ? 1 : piece_rows > (size_t)d->height ? (size_t)d->height : piece_rows;
  d->stage_floats = piece_rows * (size_t)d->width;
  for (int i = 0; i < d->nfiles; i++)
    d->scratch_floats = stage_need(d, i) > d->scratch_floats ? stage_need(d, i) : d->scratch_floats;
  d->nsamples = (long)d->nfiles * d->per_file;
  if (limit > 0 && limit < d->nsamples)
    d->nsamples = limit;
  return rc;
}

/* out = (x - mean) / std for n floats of channel c of step t, from row h
 * and column w of the crop on (normalise.c). The floats lie within the row,
 * or are whole rows from w = 0. A float that is not finite is searched for
 * only where the pass said there is one, and named. */
static int normalise_run(const era5_data *d, int year, long t, int c, long h, long w, size_t n, const float *restrict x,
                         float *restrict out, dlpar_error *err)
{
  const bool bad = !normalise_floats(x, n, d->means[c], d->stds[c], out);
  for (size_t i = 0; bad && i < n; i++) {
    if (!isfinite(x[i])) {
      const size_t at = (size_t)w + i;
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: fields[%ld, %d, %zu, %zu] is %s (clean the data or regenerate "
                             "it)", dlpar_show(d->files[year]).text, t, c, (size_t)h + at / (size_t)d->width,
                             at % (size_t)d->width, isnan(x[i]) ? "NaN" : "infinite");
    }
  }
  return DLPAR_OK;
}

/* File `year` must be as long as it was opened, or the error names it and
 * the sample. This is checked before each step is read, and after it where
 * it was read through HDF5 or a read failed. A file truncated under the run
 * reads short, or reads as zeros past its end through HDF5. */
static int check_intact(const era5_data *d, int year, long idx, long t, dlpar_error *err)
{
  struct stat st;
  if (fstat(d->fds[year], &st) != 0 || (long long)st.st_size >= d->file_bytes[year])
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: sample %ld, fields[%ld]: the file shrank to %lld bytes from %lld "
                         "since the run began (it was truncated or rewritten in place: restore it, then resume from "
                         "the last checkpoint)", dlpar_show(d->files[year]).text, idx, t, (long long)st.st_size,
                         d->file_bytes[year]);
}

/* The first `channels` channels of one time step of file `year`, read
 * whole through HDF5. The caller holds the HDF5 lock. */
static int hdf5_read_step(era5_data *d, int year, long idx, long t, int channels, float *out, dlpar_error *err)
{
  const hsize_t start[4] = {(hsize_t)t, 0, 0, 0};
  const hsize_t count[4] = {1, (hsize_t)channels, (hsize_t)d->height, (hsize_t)d->width};
  hid_t file_space = -1, mem_space = -1;
  int rc = DLPAR_OK;
  char context[PATH_MAX + 64];
  snprintf(context, sizeof(context), "%s: sample %ld, reading fields[%ld]", dlpar_show(d->files[year]).text, idx, t);
  H5_TRY_GOTO(file_space = H5Dget_space((hid_t)d->fields_dset[year]), context, err, rc, out);
  H5_TRY_GOTO(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL), context, err, rc, out);
  H5_TRY_GOTO(mem_space = H5Screate_simple(4, count, NULL), context, err, rc, out);
  H5_TRY_GOTO(H5Dread((hid_t)d->fields_dset[year], H5T_NATIVE_FLOAT, mem_space, file_space, H5P_DEFAULT, out),
              context, err, rc, out);
out:
  h5_close(mem_space);
  h5_close(file_space);
  return rc;
}

/* Reads bytes at offset of file `year` whole, retrying short reads. A
 * failure is named with the sample and step it was for. */
static int pread_whole(const era5_data *d, int year, long idx, long t, void *buf, size_t bytes, long long offset,
                       dlpar_error *err)
{
  char *at = buf;
  while (bytes > 0) {
    const ssize_t got = pread(d->fds[year], at, bytes, (off_t)offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      const int why = got == 0 ? EIO : errno; /* got 0: the file ends early */
      if (check_intact(d, year, idx, t, err) == DLPAR_OK)
        dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: sample %ld, reading fields[%ld]: %s (the file is unreadable: "
                        "copy or regenerate it)", dlpar_show(d->files[year]).text, idx, t, strerror(why));
      return DLPAR_ERR_SYSTEM;
    }
    at += got;
    bytes -= (size_t)got;
    offset += got;
  }
  return DLPAR_OK;
}

/* `rows` rows of channel c from row h of step t of file `year`, by pread
 * into stage: one read, or one a row where the width is cropped. */
static int pread_rows(const era5_data *d, int year, long idx, long t, int c, int h, int rows, float *stage,
                      dlpar_error *err)
{
  const bool whole_rows = d->width == d->file_width;
  const size_t floats = whole_rows ? (size_t)rows * d->width : (size_t)d->width;
  int rc = DLPAR_OK;
  for (int r = 0; r < (whole_rows ? 1 : rows) && rc == DLPAR_OK; r++) {
    const long long offset = d->step_offset[year][t] +
                             (long long)sizeof(float) * (((long long)c * d->file_height + h + r) * d->file_width);
    rc = pread_whole(d, year, idx, t, stage + (size_t)r * d->width, sizeof(float) * floats, offset, err);
  }
  return rc;
}

/* A zlib stream, HDF5's deflate, inflated whole into dst. It must give
 * exactly `bytes` bytes, the chunk's, up to the stream's end, and its
 * checksum is checked. dst holds a byte more, so a stream running past the
 * chunk is caught, not cut. zlib serves where there is no libdeflate, which
 * inflates about twice as fast. A damaged, short or long stream gives
 * DLPAR_ERR_INPUT. */
static int inflate_chunk(const unsigned char *src, size_t src_bytes, unsigned char *dst, size_t bytes)
{
#ifdef HAVE_LIBDEFLATE
  struct libdeflate_decompressor *decompressor;
  enum libdeflate_result result;
  size_t got = 0;
  if (!(decompressor = libdeflate_alloc_decompressor()))
    return DLPAR_ERR_SYSTEM;
  result = libdeflate_zlib_decompress(decompressor, src, src_bytes, dst, bytes + 1, &got);
  libdeflate_free_decompressor(decompressor);
  return result == LIBDEFLATE_SUCCESS && got == bytes ? DLPAR_OK : DLPAR_ERR_INPUT;
#else
  z_stream z;
  int zrc;
  memset(&z, 0, sizeof(z));
  z.next_in = src;
  z.avail_in = (uInt)src_bytes;
  z.next_out = dst;
  z.avail_out = (uInt)(bytes + 1);
  if (inflateInit(&z) != Z_OK)
    return DLPAR_ERR_SYSTEM;
  zrc = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  return zrc == Z_STREAM_END && z.total_out == bytes ? DLPAR_OK : DLPAR_ERR_INPUT;
#endif
}

/* Floats [from, from + n) of a byte-shuffled chunk of `elements` floats.
 * HDF5's shuffle stores byte 0 of every element, then byte 1, and so on. */
static void unshuffle(const unsigned char *restrict src, size_t elements, size_t from, size_t n, float *restrict out)
{
  const unsigned char *restrict b0 = src + from, *restrict b1 = b0 + elements, *restrict b2 = b1 + elements,
                                *restrict b3 = b2 + elements;
  for (size_t e = 0; e < n; e++) {
    const unsigned char bytes[sizeof(float)] = {b0[e], b1[e], b2[e], b3[e]};
    memcpy(out + e, bytes, sizeof(float));
  }
}

/* Chunk n of file `year`'s part in step t into *x. That part is its slice
 * t % shape[0], the first `channels` channels of it. Where the chunk is
 * stored unfiltered, that alone is read by pread. Otherwise the chunk is
 * read whole into stage, inflated and unshuffled there, in stage_need's
 * layout of slice, whole chunk and stored chunk. */
static int fetch_chunk(const era5_data *d, int year, long idx, long t, long n, int channels, float *stage,
                       const float **x, dlpar_error *err)
{
  const era5_chunks *k = d->chunks[year];
  const size_t slice = (size_t)k->shape[1] * (size_t)k->shape[2] * (size_t)k->shape[3];
  const size_t from = (size_t)(t % k->shape[0]) * slice, want = (size_t)channels * k->shape[2] * k->shape[3];
  const bool shuffled = chunk_shuffled(k, n), deflated = chunk_deflated(k, n);
  float *whole = stage + slice;
  unsigned char *stored = (unsigned char *)(whole + (k->deflate ? slice * (size_t)k->shape[0] + 1 : 0));
  const unsigned char *unpacked = stored;
  int rc;
  *x = stage;
  if (!shuffled && !deflated)
    return pread_whole(d, year, idx, t, stage, sizeof(float) * want, k->offset[n] + (long long)(sizeof(float) * from),
                       err);
  DLPAR_TRY(pread_whole(d, year, idx, t, stored, k->stored[n], k->offset[n], err));
  if (deflated) {
    unpacked = (const unsigned char *)whole;
    rc = inflate_chunk(stored, k->stored[n], (unsigned char *)whole, sizeof(float) * slice * (size_t)k->shape[0]);
    if (rc == DLPAR_ERR_SYSTEM)
      return dlpar_error_set(err, rc, "%s: sample %ld, reading fields[%ld]: out of memory for an inflater (free "
                             "memory, or lower DLPAR_DATA_READERS)", dlpar_show(d->files[year]).text, idx, t);
    if (rc != DLPAR_OK)
      return dlpar_error_set(err, rc, "%s: sample %ld, reading fields[%ld]: the chunk at byte %lld does not inflate "
                             "to its %zu bytes with a sound checksum (the file is damaged: copy or regenerate it)",
                             dlpar_show(d->files[year]).text, idx, t, k->offset[n],
                             sizeof(float) * slice * (size_t)k->shape[0]);
  }
  if (shuffled)
    unshuffle(unpacked, slice * (size_t)k->shape[0], from, want, stage);
  else
    *x = (const float *)unpacked + from;
  return DLPAR_OK;
}

/* The first `channels` channels of step t of file `year`, from the cropped
 * part of each of its chunks, each normalised into out as it is fetched. */
static int read_chunked_step(era5_data *d, int year, long idx, long t, int channels, float *stage, float *out,
                             era5_seconds *seconds, dlpar_error *err)
{
  const era5_chunks *k = d->chunks[year];
  const long cc = k->shape[1], ch = k->shape[2], cw = k->shape[3];
  const long run_rows = cw == d->width ? ch : 1; /* rows that follow each other in the chunk and in out */
  double start = dlpar_now(), mid;
  int rc = DLPAR_OK;
  for (long kc = 0; kc * cc < channels && rc == DLPAR_OK; kc++) {
    for (long kh = 0; kh * ch < d->height && rc == DLPAR_OK; kh++) {
      for (long kw = 0; kw * cw < d->width && rc == DLPAR_OK; kw++) {
        const long n = ((t / k->shape[0] * k->grid[1] + kc) * k->grid[2] + kh) * k->grid[3] + kw;
        const long nc = channels - kc * cc < cc ? channels - kc * cc : cc;
        const long rows = d->height - kh * ch < ch ? d->height - kh * ch : ch;
        const long cols = d->width - kw * cw < cw ? d->width - kw * cw : cw;
        const float *x;
        rc = fetch_chunk(d, year, idx, t, n, (int)nc, stage, &x, err);
        mid = dlpar_now();
        seconds->read += mid - start;
        for (long c = 0; c < nc && rc == DLPAR_OK; c++) {
          for (long r = 0; r < rows && rc == DLPAR_OK; r += run_rows) {
            const long many = rows - r < run_rows ? rows - r : run_rows;
            const long cropped_c = kc * cc + c, row = kh * ch + r;
            rc = normalise_run(d, year, t, (int)cropped_c, row, kw * cw, (size_t)(many == 1 ? cols : many * cw),
                               x + (c * ch + r) * cw, out + ((size_t)cropped_c * d->height + (size_t)row) * d->width +
                               (size_t)(kw * cw), err);
          }
        }
        start = dlpar_now();
        seconds->normalise += start - mid;
      }
    }
  }
  return rc;
}

/* The first `channels` channels of step t of file `year`, for sample idx,
 * normalised into out after the file is checked intact. A file with chunks
 * is read from them, as above. Otherwise it is read piece by piece through
 * stage. Where the step offsets are known, each piece is read by pread,
 * and the kernel is told first that the whole step is wanted, so that cold
 * files are read ahead of the pieces rather than piece by piece. Else the
 * whole step is read through HDF5 into out first, under the lock, and each
 * piece is then copied to stage and normalised back. */
static int read_step(era5_data *d, int year, long idx, long t, int channels, float *stage, float *out,
                     era5_seconds *seconds, dlpar_error *err)
{
  const int piece_rows = (int)(d->stage_floats / (size_t)d->width);
  const bool by_pread = d->step_offset[year] != NULL;
  double start = dlpar_now(), mid;
  int rc = check_intact(d, year, idx, t, err);
  if (rc != DLPAR_OK || d->chunks[year])
    return rc != DLPAR_OK ? rc : read_chunked_step(d, year, idx, t, channels, stage, out, seconds, err);
  if (by_pread) /* the whole step at once, so the kernel reads ahead of the pieces; a no-op where cached */
    posix_fadvise(d->fds[year], (off_t)d->step_offset[year][t],
                  (off_t)(sizeof(float) * (size_t)channels * (size_t)d->file_height * (size_t)d->file_width),
                  POSIX_FADV_WILLNEED);
  else {
    pthread_mutex_lock(d->hdf5_lock);
    rc = hdf5_read_step(d, year, idx, t, channels, out, err);
    pthread_mutex_unlock(d->hdf5_lock);
    if (check_intact(d, year, idx, t, err) != DLPAR_OK) /* HDF5 reads past the end as zeros */
      rc = DLPAR_ERR_SYSTEM;
  }
  for (int c = 0; c < channels && rc == DLPAR_OK; c++) {
    for (int h = 0; h < d->height && rc == DLPAR_OK; h += piece_rows) {
      const int rows = d->height - h < piece_rows ? d->height - h : piece_rows;
      float *at = out + ((size_t)c * d->height + h) * d->width;
      if (by_pread)
        rc = pread_rows(d, year, idx, t, c, h, rows, stage, err);
      else
        memcpy(stage, at, sizeof(float) * (size_t)rows * d->width);
      mid = dlpar_now();
      seconds->read += mid - start;
      if (rc == DLPAR_OK)
        rc = normalise_run(d, year, t, c, h, 0, (size_t)rows * d->width, stage, at, err);
      start = dlpar_now();
      seconds->normalise += start - mid;
    }
  }
  return rc;
}

int era5_read(era5_data *d, long idx, int part, float *stage, float *out, era5_seconds *seconds, dlpar_error *err)
{
  const int year = (int)(idx / d->per_file);
  long l = (idx % d->per_file) % (d->per_file - d->dt);
  if (l < d->dt)
    l += d->dt;
  return part == 0 ? read_step(d, year, idx, l, d->in_channels, stage, out, seconds, err)
                   : read_step(d, year, idx, l + d->dt, d->out_channels, stage, out, seconds, err);
}

void era5_close(era5_data *d)
{
  pthread_mutex_lock(d->hdf5_lock);
  for (int i = 0; d->files && d->fields_dset && d->file_handle && d->step_offset && d->chunks && d->fds &&
                  i < d->nfiles; i++) {
    h5_close((hid_t)d->fields_dset[i]);
    h5_close((hid_t)d->file_handle[i]);
    if (d->fds[i] >= 0)
      close(d->fds[i]);
    free(d->step_offset[i]);
    chunks_free(d->chunks[i]);
    free(d->files[i]);
  }
  pthread_mutex_unlock(d->hdf5_lock);
  free(d->files);
  free(d->fields_dset);
  free(d->file_handle);
  free(d->step_offset);
  free(d->chunks);
  free(d->fds);
  free(d->file_bytes);
  memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------ statistics */

static int read_h5_stats(const char *path, npy_array *a, dlpar_error *err)
{
  char name[256];
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  hid_t file = -1, dset = -1, space = -1;
  int rc = DLPAR_OK;
  snprintf(name, sizeof(name), "%.*s", (int)(strcspn(base, ".")), base);
  memset(a, 0, sizeof(*a));
  DLPAR_TRY_GOTO(h5_open_read(path, "cannot open (check the stats path in the config)", &file, err), rc, out);
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no such dataset '%s' (give a .npy file, or an HDF5 file with a "
                         "dataset named after it)", dlpar_show(path).text, dlpar_show(name).text);
    goto out;
  }
  H5_TRY_GOTO(dset = H5Dopen2(file, name, H5P_DEFAULT), path, err, rc, out);
  H5_TRY_GOTO(space = H5Dget_space(dset), path, err, rc, out);
  a->count = (long)H5Sget_simple_extent_npoints(space);
  a->data = malloc(sizeof(float) * (size_t)(a->count > 0 ? a->count : 1));
  if (!a->data) {
    rc = DLPAR_ERR_SYSTEM;
    goto out;
  }
  H5_TRY_GOTO(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data), path, err, rc, out);
out:
  h5_close(space);
  h5_close(dset);
  h5_close(file);
  return rc;
}

int era5_load_stats(const char *path, int channels, float **values, dlpar_error *err)
{
  npy_array a;
  const size_t len = strlen(path);
  DLPAR_TRY(len > 4 && strcmp(path + len - 4, ".npy") == 0 ? npy_read(path, &a, err)
                                                            : read_h5_stats(path, &a, err));
  if (a.count < channels) {
    npy_free(&a);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %ld %s, expected one per channel for %d %s (shape (1, C, 1, 1))",
                           dlpar_show(path).text, a.count, dlpar_plural(a.count, "value", "values"), channels,
                           dlpar_plural(channels, "channel", "channels"));
  }
  for (int c = 0; c < channels; c++) {
    if (!isfinite(a.data[c])) {
      const bool not_a_number = isnan(a.data[c]);
      npy_free(&a);
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: channel %d is %s (recompute the statistics)",
                             dlpar_show(path).text, c, not_a_number ? "NaN" : "infinite");
    }
  }
  *values = a.data;
  return DLPAR_OK;
}

/* ------------------------------------------------------------ loader */

/* A reader thread and its staging buffer for era5_read. */
typedef struct {
  struct loader *l;
  float *stage;
  pthread_t thread;
} reader;

/* One time step to read. It is item 2j + part of the batch, sample j's
 * input or target, in batch `batch` since loader_start of `generation`. */
typedef struct {
  long generation, batch, idx;
  int slot, item;
} work;

struct loader {
  era5_data *data;
  int batch, dp_rank, dp_size, depth, nreaders, started;
  int items; /* time steps a batch: 2 * batch */
  reader *readers;
  bool shuffle;
  long seed, steps_per_epoch;
  size_t inp_floats, tgt_floats; /* of one sample */
  loader_memory memory;
  float **inp, **tgt;
  long *perm, perm_epoch;
  pthread_mutex_t lock;
  pthread_cond_t more_work, item_done;
  /* guarded by lock */
  long generation, first_epoch, first_step, count; /* since the last loader_start: where, how many batches */
  long claimed;   /* items taken by readers, over all batches */
  long consumed;  /* batches released by the consumer */
  int in_flight;  /* items being read */
  int *left;      /* per slot: items not yet read */
  bool *ready;    /* per slot: every item read */
  int *failed;    /* per slot: the first item that failed, or items */
  dlpar_error *errors; /* per slot: the first failed item's */
  bool stop;
  double wait_seconds;
  loader_stats stats;
};

static void *default_alloc(size_t bytes)
{
  return malloc(bytes);
}

/* The next item, if its batch is wanted and its slot free. The lock is held. */
static bool claim(loader *l, work *w)
{
  const long batch = l->claimed / l->items, step = l->first_step + batch;
  const long epoch = l->first_epoch + step / l->steps_per_epoch;
  long position;
  if ((l->count >= 0 && batch >= l->count) || batch >= l->consumed + l->depth)
    return false;
  w->generation = l->generation;
  w->batch = batch;
  w->slot = (int)(batch % l->depth);
  w->item = (int)(l->claimed % l->items);
  if (w->item == 0) {
    l->left[w->slot] = l->items;
    l->failed[w->slot] = l->items;
  }
  if (l->shuffle && l->perm_epoch != epoch) {
    dlpar_rng rng;
    rng_init(&rng, (uint64_t)l->seed, 1000000u + (uint64_t)epoch);
    rng_permutation(&rng, l->perm, l->data->nsamples);
    l->perm_epoch = epoch;
  }
  position = ((step % l->steps_per_epoch) * l->batch + w->item / 2) * l->dp_size + l->dp_rank;
  w->idx = l->shuffle ? l->perm[position] : position;
  l->claimed++;
  return true;
}

/* An item was read, with the lock held. This updates the slot's count, its
 * first error, which is a serial read's, and its readiness, unless
 * loader_start has moved on. */
static void finish(loader *l, const work *w, int rc, const dlpar_error *error)
{
  l->in_flight--;
  if (w->generation == l->generation) {
    if (rc != DLPAR_OK && w->item < l->failed[w->slot]) {
      l->failed[w->slot] = w->item;
      l->errors[w->slot] = *error;
    }
    l->ready[w->slot] = --l->left[w->slot] == 0;
  }
  pthread_cond_broadcast(&l->item_done);
}

static void *reader_main(void *arg)
{
  reader *r = arg;
  loader *l = r->l;
  dlpar_error error = {0};
  h5_quiet(); /* this thread's HDF5 error stack, one a thread in a thread-safe HDF5: errors come back in one line */
  pthread_mutex_lock(&l->lock);
  while (!l->stop) {
    const double idle = dlpar_now();
    era5_seconds seconds = {0, 0};
    work w;
    int rc;
    float *out;
    if (!claim(l, &w)) {
      pthread_cond_wait(&l->more_work, &l->lock);
      l->stats.idle_seconds += dlpar_now() - idle;
      continue;
    }
    l->in_flight++;
    pthread_mutex_unlock(&l->lock);
    out = w.item % 2 == 0 ? l->inp[w.slot] + (size_t)(w.item / 2) * l->inp_floats
                          : l->tgt[w.slot] + (size_t)(w.item / 2) * l->tgt_floats;
    rc = era5_read(l->data, w.idx, w.item % 2, r->stage, out, &seconds, &error);
    pthread_mutex_lock(&l->lock);
    l->stats.seconds.read += seconds.read;
    l->stats.seconds.normalise += seconds.normalise;
    l->stats.bytes += (double)sizeof(float) * (double)(w.item % 2 == 0 ? l->inp_floats : l->tgt_floats);
    finish(l, &w, rc, &error);
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

/* Reader threads: DLPAR_DATA_READERS, else half the CPUs this process may
 * run on, 2 to 8. */
static int choose_readers(int *readers, dlpar_error *err)
{
  const char *env = getenv("DLPAR_DATA_READERS");
  cpu_set_t set;
  long n = 2;
  if (env && *env) {
    if (dlpar_parse_int(env, 1, 64, &n) != 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "DLPAR_DATA_READERS=%s: not a whole number of reader threads from 1 "
                             "to 64 (e.g. 8, or unset it)", dlpar_show(env).text);
  } else if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    n = CPU_COUNT(&set) / 2;
    n = n < 2 ? 2 : n > 8 ? 8 : n;
  }
  *readers = (int)n;
  return DLPAR_OK;
}

int loader_create(loader **out, era5_data *data, int local_batch, int dp_rank, int dp_size, bool shuffle, long seed,
                  int depth, const loader_memory *memory, dlpar_error *err)
{
  loader *l = calloc(1, sizeof(*l));
  *out = l;
  if (!l)
    goto oom;
  l->data = data;
  l->batch = local_batch;
  l->items = 2 * local_batch;
  l->dp_rank = dp_rank;
  l->dp_size = dp_size;
  l->shuffle = shuffle;
  l->seed = seed;
  l->depth = depth > 2 ? depth : 2;
  l->perm_epoch = -1;
  l->memory = memory ? *memory : (loader_memory){default_alloc, free};
  l->inp_floats = (size_t)data->in_channels * data->height * data->width;
  l->tgt_floats = (size_t)data->out_channels * data->height * data->width;
  l->steps_per_epoch = data->nsamples / ((long)local_batch * dp_size);
  if (l->steps_per_epoch == 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%ld %s no batch of %d x %d %s (raise limit_nsamples or lower "
                           "global_batch_size)", data->nsamples,
                           dlpar_plural(data->nsamples, "sample makes", "samples make"), local_batch, dp_size,
                           dlpar_plural(dp_size, "rank", "ranks"));
  DLPAR_TRY(choose_readers(&l->nreaders, err));
  l->inp = calloc((size_t)l->depth, sizeof(float *));
  l->tgt = calloc((size_t)l->depth, sizeof(float *));
  l->left = calloc((size_t)l->depth, sizeof(int));
  l->ready = calloc((size_t)l->depth, sizeof(bool));
  l->failed = calloc((size_t)l->depth, sizeof(int));
  l->errors = calloc((size_t)l->depth, sizeof(*l->errors));
  l->readers = calloc((size_t)l->nreaders, sizeof(reader));
  if (!l->inp || !l->tgt || !l->left || !l->ready || !l->failed || !l->errors || !l->readers)
    goto oom;
  if (!(l->perm = malloc(sizeof(long) * (size_t)data->nsamples)))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the order of %ld samples (lower limit_nsamples)",
                           data->nsamples);
  for (int s = 0; s < l->depth; s++) {
    l->inp[s] = l->memory.alloc(sizeof(float) * l->inp_floats * (size_t)local_batch);
    l->tgt[s] = l->memory.alloc(sizeof(float) * l->tgt_floats * (size_t)local_batch);
    if (!l->inp[s] || !l->tgt[s])
      goto oom;
  }
  for (int r = 0; r < l->nreaders; r++) {
    l->readers[r].l = l;
    if (!(l->readers[r].stage = malloc(sizeof(float) * data->scratch_floats)))
      return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for %d reader %s staging buffers of %zu bytes each "
                             "(lower DLPAR_DATA_READERS)", l->nreaders, dlpar_plural(l->nreaders, "thread's",
                             "threads'"), sizeof(float) * data->scratch_floats);
  }
  l->stats.readers = l->nreaders;
  l->stats.depth = l->depth;
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->more_work, NULL);
  pthread_cond_init(&l->item_done, NULL);
  for (; l->started < l->nreaders; l->started++) {
    if (pthread_create(&l->readers[l->started].thread, NULL, reader_main, &l->readers[l->started]) != 0)
      return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot start the data loader's reader thread %d of %d (lower "
                             "DLPAR_DATA_READERS, or raise the process limit)", l->started + 1, l->nreaders);
  }
  return DLPAR_OK;
oom:
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for %d %s of %d %s (lower num_data_workers)",
                         l ? l->depth : 2, dlpar_plural(l ? l->depth : 2, "batch", "batches"), local_batch,
                         dlpar_plural(local_batch, "sample", "samples"));
}

long loader_steps_per_epoch(const loader *l)
{
  return l->steps_per_epoch;
}

int loader_position(const loader *l, long *epoch, long *step, dlpar_error *err)
{
  if (*step < 0 || *step > l->steps_per_epoch || *epoch < 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "epoch %ld, step %ld of it: outside the %ld steps of an epoch", *epoch,
                           *step, l->steps_per_epoch);
  if (*step == l->steps_per_epoch) {
    (*epoch)++;
    *step = 0;
  }
  return DLPAR_OK;
}

void loader_start(loader *l, long epoch, long step, long count)
{
  loader_position(l, &epoch, &step, NULL);
  pthread_mutex_lock(&l->lock);
  l->generation++; /* the items being read are dropped as they finish */
  while (l->in_flight > 0)
    pthread_cond_wait(&l->item_done, &l->lock);
  l->first_epoch = epoch;
  l->first_step = step;
  l->count = count;
  l->claimed = l->consumed = 0;
  memset(l->ready, 0, sizeof(bool) * (size_t)l->depth);
  pthread_cond_broadcast(&l->more_work);
  pthread_mutex_unlock(&l->lock);
}

int loader_next(loader *l, const float **inp, const float **tgt, dlpar_error *err)
{
  const double start = dlpar_now();
  int rc = DLPAR_OK, slot;
  pthread_mutex_lock(&l->lock);
  slot = (int)(l->consumed % l->depth);
  while (!l->ready[slot])
    pthread_cond_wait(&l->item_done, &l->lock);
  l->wait_seconds += dlpar_now() - start;
  if (l->failed[slot] < l->items) {
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s", l->errors[slot].text);
  }
  *inp = l->inp[slot];
  *tgt = l->tgt[slot];
  pthread_mutex_unlock(&l->lock);
  return rc;
}

void loader_release(loader *l)
{
  pthread_mutex_lock(&l->lock);
  l->ready[l->consumed % l->depth] = false;
  l->consumed++;
  pthread_cond_broadcast(&l->more_work);
  pthread_mutex_unlock(&l->lock);
}

double loader_wait_seconds(const loader *l)
{
  return l->wait_seconds;
}

void loader_get_stats(loader *l, loader_stats *stats)
{
  pthread_mutex_lock(&l->lock);
  *stats = l->stats;
  pthread_mutex_unlock(&l->lock);
}

void loader_destroy(loader *l)
{
  if (!l)
    return;
  if (l->started > 0) {
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_broadcast(&l->more_work);
    pthread_mutex_unlock(&l->lock);
  }
  for (int r = 0; r < l->started; r++)
    pthread_join(l->readers[r].thread, NULL);
  for (int s = 0; l->inp && s < l->depth; s++) {
    l->memory.free(l->inp[s]);
    l->memory.free(l->tgt[s]);
  }
  for (int r = 0; l->readers && r < l->nreaders; r++)
    free(l->readers[r].stage);
  free(l->inp);
  free(l->tgt);
  free(l->left);
  free(l->ready);
  free(l->failed);
  free(l->errors);
  free(l->perm);
  free(l->readers);
  free(l);
}

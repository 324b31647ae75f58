/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_loader.c: the ERA5 loader in trainer/data/data.c against the
 * fields it was given, normalised here, bit for bit. Every batch comes in order
 * at 1, 2 and 3 reader threads and 2 and 3 batches ahead, across epochs' ends
 * and a restart while the readers are ahead. Every HDF5 layout is tested, each
 * read the way data.h says, which is asserted. Read by steps: contiguous, and
 * chunks of one and of two whole steps. Read by chunks: chunks of parts of
 * steps, plain, gzip'ed, shuffled, shuffled and gzip'ed, and with chunks HDF5
 * stored with a filter skipped. Read through HDF5: fletcher32 and big-endian
 * floats. Reads are also cropped to fewer channels, rows or columns, with a
 * read per row, and to one chunk's width, and planes are larger than one
 * staging piece. NaN and inf are named by file and element, at the first bad
 * time step of a batch as a serial read meets it. A bad DLPAR_DATA_READERS is
 * reported in one line. Files changed under an open loader: one removed and
 * replaced still reads as opened; one truncated, by steps, by chunks and
 * through HDF5, and a damaged gzip chunk, each give an error naming the file
 * and the sample. */
#include "config.h"

#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"
#include "trainer/data/rng.h"

/* Two years of fields[T, C, H, W]. A plane of H x W floats, 1.1 MB, is more
 * than the loader's 128 KiB staging piece, so a channel is read in pieces. */
enum { YEARS = 2, T = 5, C = 3, H = 260, W = 1100, DT = 1, BATCH = 2, DP = 2, RANK = 1, SEED = 7 };
enum {
  CONTIGUOUS, STEP_CHUNKS, TWO_STEP_CHUNKS, SMALL_CHUNKS, PART_CHUNKS, GZIP, SHUFFLE, SHUFFLE_GZIP, SKIPPED_FILTERS,
  FLETCHER32, BIG_ENDIAN_FLOATS, LAYOUTS
};
static const char *const layout_names[LAYOUTS] = {
    "contiguous", "one chunk per step", "one chunk per two steps", "small chunks", "chunks of parts of two steps",
    "gzip", "shuffle", "shuffle and gzip", "chunks with a filter skipped", "fletcher32 (HDF5)",
    "big-endian floats, contiguous (HDF5)"};
enum { BY_STEPS, BY_CHUNKS, BY_HDF5 };
static const int layout_path[LAYOUTS] = {BY_STEPS, BY_STEPS,  BY_STEPS,  BY_CHUNKS, BY_CHUNKS, BY_CHUNKS,
                                         BY_CHUNKS, BY_CHUNKS, BY_CHUNKS, BY_HDF5,  BY_HDF5};
/* chunks of parts of two steps, partial at every edge of [T, C, H, W] */
static const hsize_t part_chunk[4] = {2, 2, 64, 300};

static char root[64];
static dlpar_error err;
static float *fields; /* [YEARS][T][C][H][W] */
static const float means[C] = {1.5f, -2.25f, 0.3f}, stds[C] = {0.7f, 3.1f, 11.3f};
static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;

static float *at(int year, long t, int c, int h, int w)
{
  return fields + ((((size_t)year * T + (size_t)t) * C + (size_t)c) * H + (size_t)h) * W + (size_t)w;
}

/* One chunk of `year` at `start`, a multiple of part_chunk, as HDF5 holds
 * it before its filters: padded with zeros past the edges. */
static void raw_chunk(int year, const hsize_t start[4], float *chunk)
{
  const hsize_t dims[4] = {T, C, H, W};
  size_t n = 0;
  for (hsize_t t = start[0]; t < start[0] + part_chunk[0]; t++)
    for (hsize_t c = start[1]; c < start[1] + part_chunk[1]; c++)
      for (hsize_t h = start[2]; h < start[2] + part_chunk[2]; h++)
        for (hsize_t w = start[3]; w < start[3] + part_chunk[3]; w++)
          chunk[n++] = t < dims[0] && c < dims[1] && h < dims[2] && w < dims[3] ? *at(year, (long)t, (int)c, (int)h, (int)w)
                                                                                : 0.0f;
}

/* Two chunks of a shuffled and gzip'ed dataset rewritten as HDF5 stores a
 * chunk an optional filter failed on. [0, 0, 0, 0] has both skipped, filter
 * mask 3, and is stored as it is. [2, 2, 64, 300] has shuffle skipped, mask 1,
 * and is deflated only. HDF5 reads the year back as the fields. */
static void skip_filters(hid_t dset, int year)
{
  const hsize_t first[4] = {0, 0, 0, 0}, inner[4] = {2, 2, 64, 300};
  const size_t bytes = sizeof(float) * part_chunk[0] * part_chunk[1] * part_chunk[2] * part_chunk[3];
  float *chunk = malloc(bytes), *back = malloc(sizeof(float) * T * C * H * W);
  uLongf packed_bytes = compressBound(bytes);
  Bytef *packed = malloc(packed_bytes);
  raw_chunk(year, first, chunk);
  CHECK(H5Dwrite_chunk(dset, H5P_DEFAULT, 3, first, bytes, chunk) >= 0);
  raw_chunk(year, inner, chunk);
  CHECK_INT(compress2(packed, &packed_bytes, (const Bytef *)chunk, bytes, 4), Z_OK);
  CHECK(H5Dwrite_chunk(dset, H5P_DEFAULT, 1, inner, packed_bytes, packed) >= 0);
  CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
  CHECK(memcmp(back, at(year, 0, 0, 0, 0), sizeof(float) * T * C * H * W) == 0);
  free(chunk);
  free(back);
  free(packed);
}

/* dir/YEAR.h5 for every year, in the layout. */
static void write_years(const char *dir, int layout)
{
  const hsize_t dims[4] = {T, C, H, W}, step[4] = {1, C, H, W}, two_steps[4] = {2, C, H, W};
  const hsize_t small[4] = {1, 1, 64, 128}, shuffle_chunk[4] = {3, 1, 100, W};
  const hsize_t *chunk = layout == STEP_CHUNKS ? step : layout == TWO_STEP_CHUNKS ? two_steps
                         : layout == SMALL_CHUNKS ? small : layout == SHUFFLE ? shuffle_chunk : part_chunk;
  char path[128];
  for (int y = 0; y < YEARS; y++) {
    hid_t file, space, plist, dset;
    snprintf(path, sizeof(path), "%s/%d.h5", dir, 2016 + y);
    file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    space = H5Screate_simple(4, dims, NULL);
    plist = H5Pcreate(H5P_DATASET_CREATE);
    if (layout != CONTIGUOUS && layout != BIG_ENDIAN_FLOATS)
      H5Pset_chunk(plist, 4, chunk);
    if (layout == SHUFFLE || layout == SHUFFLE_GZIP || layout == SKIPPED_FILTERS)
      H5Pset_shuffle(plist);
    if (layout == GZIP || layout == SHUFFLE_GZIP || layout == SKIPPED_FILTERS)
      H5Pset_deflate(plist, 4);
    if (layout == FLETCHER32)
      H5Pset_fletcher32(plist);
    dset = H5Dcreate2(file, "fields", layout == BIG_ENDIAN_FLOATS ? H5T_IEEE_F32BE : H5T_NATIVE_FLOAT, space, H5P_DEFAULT,
                      plist, H5P_DEFAULT);
    CHECK(dset >= 0 && H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, at(y, 0, 0, 0, 0)) >= 0);
    if (layout == SKIPPED_FILTERS)
      skip_filters(dset, y);
    H5Dclose(dset);
    H5Pclose(plist);
    H5Sclose(space);
    H5Fclose(file);
  }
}

static void remove_years(const char *dir)
{
  char path[128];
  for (int y = 0; y < YEARS; y++) {
    snprintf(path, sizeof(path), "%s/%d.h5", dir, 2016 + y);
    unlink(path);
  }
  rmdir(dir);
}

static train_config crop(int in_channels, int out_channels, int height, int width)
{
  train_config cfg = {0};
  cfg.n_in_channels = in_channels;
  cfg.n_out_channels = out_channels;
  cfg.img_size[0] = height;
  cfg.img_size[1] = width;
  cfg.dt = DT;
  return cfg;
}

/* Channels [0, channels) of step t of `year`, cropped, normalised as the
 * tutorial's numpy does. */
static void expect_step(const train_config *cfg, int year, long t, int channels, float *out)
{
  for (int c = 0; c < channels; c++)
    for (int h = 0; h < cfg->img_size[0]; h++)
      for (int w = 0; w < cfg->img_size[1]; w++)
        *out++ = (*at(year, t, c, h, w) - means[c]) / stds[c];
}

/* The batch at epoch, step of rank RANK of DP, shuffled with SEED. */
static void expect_batch(const train_config *cfg, long nsamples, long epoch, long step, float *inp, float *tgt)
{
  const size_t plane = (size_t)cfg->img_size[0] * cfg->img_size[1];
  long *perm = malloc(sizeof(long) * (size_t)nsamples);
  dlpar_rng rng;
  rng_init(&rng, SEED, 1000000u + (uint64_t)epoch);
  rng_permutation(&rng, perm, nsamples);
  for (int j = 0; j < BATCH; j++) {
    const long idx = perm[(step * BATCH + j) * DP + RANK];
    long l = (idx % T) % (T - DT);
    if (l < DT)
      l += DT;
    expect_step(cfg, (int)(idx / T), l, cfg->n_in_channels, inp + (size_t)j * cfg->n_in_channels * plane);
    expect_step(cfg, (int)(idx / T), l + DT, cfg->n_out_channels, tgt + (size_t)j * cfg->n_out_channels * plane);
  }
  free(perm);
}

/* loader_start with epoch, step and count, then `take` batches, each copied as soon
 * as it is handed out, then checked. By then the readers have read at least
 * every byte of the batches handed out, so a batch handed out early would show. */
static void check_batches(loader *l, const train_config *cfg, long nsamples, long epoch, long step, long count,
                          long take, const char *what)
{
  loader_stats before, now;
  const size_t plane = (size_t)cfg->img_size[0] * cfg->img_size[1];
  const size_t inp_bytes = sizeof(float) * BATCH * cfg->n_in_channels * plane;
  const size_t tgt_bytes = sizeof(float) * BATCH * cfg->n_out_channels * plane;
  float *inp = malloc(inp_bytes), *tgt = malloc(tgt_bytes), *want_inp = malloc(inp_bytes), *want_tgt = malloc(tgt_bytes);
  const long steps = loader_steps_per_epoch(l);
  loader_get_stats(l, &before);
  loader_start(l, epoch, step, count);
  for (long i = 0; i < take; i++, step++) {
    const float *got_inp, *got_tgt;
    int same;
    CHECK_INT(loader_next(l, &got_inp, &got_tgt, &err), DLPAR_OK);
    loader_get_stats(l, &now);
    memcpy(inp, got_inp, inp_bytes);
    memcpy(tgt, got_tgt, tgt_bytes);
    CHECK(now.bytes - before.bytes >= (double)(i + 1) * (double)(inp_bytes + tgt_bytes));
    loader_release(l);
    if (step == steps) {
      epoch++;
      step = 0;
    }
    expect_batch(cfg, nsamples, epoch, step, want_inp, want_tgt);
    same = memcmp(inp, want_inp, inp_bytes) == 0 && memcmp(tgt, want_tgt, tgt_bytes) == 0;
    if (!same)
      fprintf(stderr, "%s: epoch %ld, step %ld differs\n", what, epoch, step);
    CHECK(same);
  }
  free(inp);
  free(tgt);
  free(want_inp);
  free(want_tgt);
}

static int read_path(const era5_data *d, int year)
{
  return d->step_offset[year] ? BY_STEPS : d->chunks[year] ? BY_CHUNKS : BY_HDF5;
}

/* Every batch of 2.5 epochs, then a restart while the readers are ahead. */
static void check_loader(const char *dir, const train_config *cfg, int readers, int depth, int path, const char *what)
{
  era5_data data;
  loader *l = NULL;
  loader_stats stats;
  char count[16];
  snprintf(count, sizeof(count), "%d", readers);
  setenv("DLPAR_DATA_READERS", count, 1);
  CHECK_INT(era5_open(&data, dir, cfg, -1, means, stds, &hdf5_lock, &err), DLPAR_OK);
  for (int y = 0; y < YEARS; y++)
    CHECK_INT(read_path(&data, y), path);
  CHECK_INT(loader_create(&l, &data, BATCH, RANK, DP, true, SEED, depth, NULL, &err), DLPAR_OK);
  CHECK_INT(loader_steps_per_epoch(l), YEARS * T / (BATCH * DP));
  check_batches(l, cfg, data.nsamples, 0, 1, 5, 5, what);
  check_batches(l, cfg, data.nsamples, 1, 0, -1, 1, what); /* the readers go on */
  check_batches(l, cfg, data.nsamples, 0, 0, 3, 3, what);  /* a restart while they are ahead */
  loader_get_stats(l, &stats);
  CHECK_INT(stats.readers, readers);
  CHECK_INT(stats.depth, depth > 2 ? depth : 2);
  CHECK(stats.bytes >= 9.0 * BATCH * (cfg->n_in_channels + cfg->n_out_channels) * cfg->img_size[0] *
                           cfg->img_size[1] * sizeof(float));
  CHECK(stats.seconds.read > 0 && stats.seconds.normalise > 0);
  loader_destroy(l);
  era5_close(&data);
}

/* Each layout at 1 to 3 readers and 2 or 3 batches ahead, and cropped. The
 * gzip'ed ones are slow to read, so they run at 3 readers 3 ahead and in one crop,
 * with partial chunks at every edge: inflated, their chunks meet the unfiltered
 * ones' code. */
static void test_layouts(void)
{
  const train_config full = crop(C, C, H, W);
  const train_config cropped[4] = {crop(2, 1, H, W), crop(C, 2, H - 7, W), crop(1, C, H - 3, W - 5),
                                   crop(2, 2, H - 130, 300)};
  char dir[96];
  for (int layout = 0; layout < LAYOUTS; layout++) {
    const bool gzipped = layout == GZIP || layout == SHUFFLE_GZIP || layout == SKIPPED_FILTERS;
    snprintf(dir, sizeof(dir), "%s/%d", root, layout);
    mkdir(dir, 0700);
    write_years(dir, layout);
    for (int readers = 1; readers <= 3; readers++)
      for (int depth = 0; depth <= 3; depth += 3)
        if (!gzipped || (readers == 3 && depth == 3))
          check_loader(dir, &full, readers, depth, layout_path[layout], layout_names[layout]);
    for (int k = 0; k < 4; k++)
      if (!gzipped || k == 2)
        check_loader(dir, &cropped[k], 2, 2, layout_path[layout], layout_names[layout]);
    remove_years(dir);
  }
}

/* NaN and inf: an error naming the file and the element; in a batch, the
 * first bad time step in sample order, whichever reader meets it first. */
static void test_not_finite(void)
{
  const train_config cfg = crop(C, C, H, W);
  char dir[96], want[256];
  era5_data data;
  loader *l = NULL;
  const float *inp, *tgt;
  float *nan_at = at(0, 2, 1, 250, 3), *inf_at = at(0, 3, 0, 0, 5), kept[2] = {*nan_at, *inf_at};
  snprintf(dir, sizeof(dir), "%s/bad", root);
  mkdir(dir, 0700);
  *nan_at = NAN;
  *inf_at = INFINITY;
  write_years(dir, CONTIGUOUS);
  *nan_at = kept[0];
  *inf_at = kept[1];
  setenv("DLPAR_DATA_READERS", "3", 1);
  CHECK_INT(era5_open(&data, dir, &cfg, -1, means, stds, &hdf5_lock, &err), DLPAR_OK);
  /* batch 0: samples 0-3 read steps 1, 2, 1, 2, 2, 3, 3, 4; step 2 has a NaN, step 3 an inf */
  CHECK_INT(loader_create(&l, &data, 4, 0, 1, false, SEED, 2, NULL, &err), DLPAR_OK);
  loader_start(l, 0, 0, 2);
  CHECK_INT(loader_next(l, &inp, &tgt, &err), DLPAR_ERR_INPUT);
  snprintf(want, sizeof(want), "%s/2016.h5: fields[2, 1, 250, 3] is NaN (clean the data or regenerate it)", dir);
  CHECK_STR(err.text, want);
  loader_release(l);
  loader_destroy(l);
  /* samples 3 on: step 3, the inf, first */
  CHECK_INT(loader_create(&l, &data, 1, 0, 1, false, SEED, 2, NULL, &err), DLPAR_OK);
  loader_start(l, 0, 3, 1);
  CHECK_INT(loader_next(l, &inp, &tgt, &err), DLPAR_ERR_INPUT);
  snprintf(want, sizeof(want), "%s/2016.h5: fields[3, 0, 0, 5] is infinite (clean the data or regenerate it)", dir);
  CHECK_STR(err.text, want);
  loader_release(l);
  loader_destroy(l);
  setenv("DLPAR_DATA_READERS", "two", 1);
  CHECK_INT(loader_create(&l, &data, 1, 0, 1, false, SEED, 2, NULL, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text,
            "DLPAR_DATA_READERS=two: not a whole number of reader threads from 1 to 64 (e.g. 8, or unset it)");
  loader_destroy(l);
  era5_close(&data);
  remove_years(dir);
}

/* Sample idx alone from an open loader, as batch 1 of one rank in order: its
 * input and target against the fields, or its error in err. */
static int read_sample(era5_data *data, long idx, const train_config *cfg)
{
  const size_t floats = (size_t)C * H * W;
  float *want = malloc(sizeof(float) * floats * 2);
  const float *inp, *tgt;
  loader *l = NULL;
  int rc;
  long t = idx % T % (T - DT);
  t += t < DT ? DT : 0;
  CHECK_INT(loader_create(&l, data, 1, 0, 1, false, SEED, 2, NULL, &err), DLPAR_OK);
  loader_start(l, 0, idx, 1);
  rc = loader_next(l, &inp, &tgt, &err);
  expect_step(cfg, (int)(idx / T), t, C, want);
  expect_step(cfg, (int)(idx / T), t + DT, C, want + floats);
  if (rc == DLPAR_OK)
    CHECK(memcmp(inp, want, sizeof(float) * floats) == 0 && memcmp(tgt, want + floats, sizeof(float) * floats) == 0);
  loader_release(l);
  loader_destroy(l);
  free(want);
  return rc;
}

/* Files changed under an open loader, in each way of reading. 2017.h5 is
 * removed and another file put in its place; it still reads as it was opened.
 * 2016.h5 is truncated to 3/4, where HDF5 alone reads zeros past the end; its
 * next read gives an error naming the file, the sample and the step. */
static void test_changed_files(void)
{
  const int layouts[3] = {CONTIGUOUS, GZIP, BIG_ENDIAN_FLOATS};
  const train_config cfg = crop(C, C, H, W);
  char dir[96], path[128], want[512];
  for (int k = 0; k < 3; k++) {
    era5_data data;
    struct stat st;
    FILE *f;
    snprintf(dir, sizeof(dir), "%s/changed%d", root, k);
    mkdir(dir, 0700);
    write_years(dir, layouts[k]);
    setenv("DLPAR_DATA_READERS", "2", 1);
    CHECK_INT(era5_open(&data, dir, &cfg, -1, means, stds, &hdf5_lock, &err), DLPAR_OK);
    CHECK_INT(read_path(&data, 0), layout_path[layouts[k]]);
    snprintf(path, sizeof(path), "%s/2017.h5", dir);
    CHECK(unlink(path) == 0 && (f = fopen(path, "w")) && fputs("not the file that was opened", f) >= 0 && fclose(f) == 0);
    CHECK_INT(read_sample(&data, T + 1, &cfg), DLPAR_OK);
    snprintf(path, sizeof(path), "%s/2016.h5", dir);
    CHECK_INT(read_sample(&data, 2, &cfg), DLPAR_OK);
    CHECK(stat(path, &st) == 0 && truncate(path, st.st_size / 4 * 3) == 0);
    CHECK_INT(read_sample(&data, 2, &cfg), DLPAR_ERR_INPUT);
    snprintf(want, sizeof(want), "%s: sample 2, fields[2]: the file shrank to %lld bytes from %lld since the run "
             "began (it was truncated or rewritten in place: restore it, then resume from the last checkpoint)", path,
             (long long)(st.st_size / 4 * 3), (long long)st.st_size);
    CHECK_STR(err.text, want);
    era5_close(&data);
    remove_years(dir);
  }
}

/* A gzip'ed chunk whose zlib header is overwritten: the file, the sample
 * and the chunk's place named. */
static void test_damaged_chunk(void)
{
  const train_config cfg = crop(C, C, H, W);
  const hsize_t first[4] = {0, 0, 0, 0};
  char dir[96], path[128], want[512];
  era5_data data;
  haddr_t addr = 0;
  hsize_t size = 0;
  unsigned mask = 0;
  hid_t file, dset;
  int fd;
  snprintf(dir, sizeof(dir), "%s/damaged", root);
  mkdir(dir, 0700);
  write_years(dir, GZIP);
  snprintf(path, sizeof(path), "%s/2016.h5", dir);
  file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  dset = H5Dopen2(file, "fields", H5P_DEFAULT);
  CHECK(H5Dget_chunk_info_by_coord(dset, first, &mask, &addr, &size) >= 0 && size > 2);
  H5Dclose(dset);
  H5Fclose(file);
  CHECK((fd = open(path, O_WRONLY)) >= 0 && pwrite(fd, "\xff\xff", 2, (off_t)addr) == 2 && close(fd) == 0);
  setenv("DLPAR_DATA_READERS", "2", 1);
  CHECK_INT(era5_open(&data, dir, &cfg, -1, means, stds, &hdf5_lock, &err), DLPAR_OK);
  CHECK_INT(read_sample(&data, 0, &cfg), DLPAR_ERR_INPUT);
  snprintf(want, sizeof(want), "%s: sample 0, reading fields[1]: the chunk at byte %llu does not inflate to its %zu "
           "bytes with a sound checksum (the file is damaged: copy or regenerate it)", path, (unsigned long long)addr,
           (size_t)(sizeof(float) * part_chunk[0] * part_chunk[1] * part_chunk[2] * part_chunk[3]));
  CHECK_STR(err.text, want);
  era5_close(&data);
  remove_years(dir);
}

int main(void)
{
  size_t n = (size_t)YEARS * T * C * H * W;
  h5_quiet();
  snprintf(root, sizeof(root), "/tmp/test_loader.XXXXXX");
  if (!mkdtemp(root) || !(fields = malloc(sizeof(float) * n))) {
    perror("test_loader: a temporary directory and the fields");
    return 1;
  }
  for (size_t i = 0; i < n; i++) /* every mantissa bit in play */
    fields[i] = (float)((i * 2654435761u) % 100003u) / 977.0f - 40.0f;
  test_layouts();
  test_not_finite();
  test_changed_files();
  test_damaged_chunk();
  rmdir(root);
  free(fields);
  return check_report("test_loader");
}

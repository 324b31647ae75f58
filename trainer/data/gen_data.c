/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/gen_data.c: dlpar-gen-data, a small synthetic ERA5-like dataset
 * in the tutorial's layout, for demos and tests:
 *   DIR/train/YEAR.h5, DIR/valid/YEAR.h5, DIR/test/YEAR.h5: fields[T, C, H, W] float32
 *   DIR/stats/global_means.npy, global_stds.npy (1, C, 1, 1), time_means.npy (1, C, H, W)
 * Each channel is a sum of smooth waves travelling east at their own speed
 * (plus a channel-specific offset and scale), so the next time step is a
 * learnable function of the current one. Files are written atomically.
 * --layout picks how `fields` is stored, as the tutorial's users have it:
 * one chunk per time step (the default), contiguous, or h5py's chunks=True
 * (its guess_chunk, e.g. [3, 3, 45, 90] for [48, 20, 360, 720]: chunks that
 * hold parts of several steps), plain, gzip'ed or shuffled and gzip'ed (h5py's
 * compression="gzip", level 4, shuffle=True). */
#include "config.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/status.h"
#include "common/text.h"
#include "trainer/data/atomic_file.h"
#include "trainer/data/h5util.h"
#include "trainer/data/npy.h"
#include "trainer/data/rng.h"

enum { LAYOUT_STEPS, LAYOUT_CONTIGUOUS, LAYOUT_CHUNKED, LAYOUT_GZIP, LAYOUT_SHUFFLE_GZIP, LAYOUTS };
static const char *const layout_names[LAYOUTS] = {"steps", "contiguous", "chunked", "gzip", "shuffle-gzip"};

typedef struct {
  char dir[PATH_MAX];
  int years, steps, channels, height, width, first_year, layout;
  long seed;
} gen_args;

typedef struct {
  double phase[4], speed[2];
} channel_waves;

static int parse_int(const char *arg, const char *name, int lo, int hi, int *out)
{
  const size_t len = strlen(name);
  char *end;
  long v;
  if (strncmp(arg, name, len) != 0 || arg[len] != '=')
    return 0;
  v = strtol(arg + len + 1, &end, 10);
  if (*end || end == arg + len + 1 || v < lo || v > hi) {
    fprintf(stderr, "dlpar-gen-data: %s: expected a whole number from %d to %d\n", dlpar_show(arg).text, lo, hi);
    exit(2);
  }
  *out = (int)v;
  return 1;
}

static const char usage[] =
    "usage: dlpar-gen-data [--dir=./data] [--years=2] [--steps=64] [--channels=4] [--height=32]\n"
    "                      [--width=64] [--seed=0] [--layout=steps|contiguous|chunked|gzip|shuffle-gzip]\n"
    "  --layout: how fields[T, C, H, W] is stored: steps, one chunk per time step (the default); contiguous;\n"
    "            chunked, h5py's chunks=True; gzip, the same with compression=\"gzip\"; shuffle-gzip, with\n"
    "            shuffle=True too\n";

/* --layout=NAME: 1 if arg is it (exits on an unknown name), else 0. */
static int parse_layout(const char *arg, int *layout)
{
  if (strncmp(arg, "--layout=", 9) != 0)
    return 0;
  for (*layout = 0; *layout < LAYOUTS; (*layout)++)
    if (strcmp(arg + 9, layout_names[*layout]) == 0)
      return 1;
  fprintf(stderr, "dlpar-gen-data: %s: expected steps, contiguous, chunked, gzip or shuffle-gzip\n",
          dlpar_show(arg).text);
  exit(2);
}

static void parse_args(int argc, char **argv, gen_args *a)
{
  int seed = 0;
  *a = (gen_args){"./data", 2, 64, 4, 32, 64, 2016, LAYOUT_STEPS, 0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage, stdout);
      exit(0);
    }
    if (strncmp(argv[i], "--dir=", 6) == 0 && argv[i][6]) {
      snprintf(a->dir, sizeof(a->dir), "%s", argv[i] + 6);
      continue;
    }
    if (parse_int(argv[i], "--years", 1, 100, &a->years) || parse_int(argv[i], "--steps", 4, 100000, &a->steps) ||
        parse_int(argv[i], "--channels", 1, 1024, &a->channels) ||
        parse_int(argv[i], "--height", 2, 100000, &a->height) || parse_int(argv[i], "--width", 1, 100000, &a->width) ||
        parse_int(argv[i], "--seed", 0, 1 << 30, &seed) || parse_layout(argv[i], &a->layout))
      continue;
    fprintf(stderr, "%s(unknown: %s)\n", usage, dlpar_show(argv[i]).text);
    exit(2);
  }
  a->seed = seed;
}

/* h5py's chunks=True for float32 dims (h5py/_hl/filters.py, guess_chunk):
 * halve the axes in turn until a chunk is below, or within half of, 16 KiB
 * x 2^log10(the dataset's MiB) (kept within 8 KiB .. 1 MiB), and below 1 MiB. */
static void guess_chunk(const hsize_t dims[4], hsize_t chunk[4])
{
  double c[4], target, elements = 1;
  for (int i = 0; i < 4; i++) {
    c[i] = (double)dims[i];
    elements *= c[i];
  }
  target = 16384.0 * pow(2.0, log10(4.0 * elements / (1024.0 * 1024.0)));
  target = target > 1048576.0 ? 1048576.0 : target < 8192.0 ? 8192.0 : target;
  for (int idx = 0;; idx++) {
    const double bytes = 4.0 * c[0] * c[1] * c[2] * c[3];
    if ((bytes < target || fabs(bytes - target) / target < 0.5) && bytes < 1048576.0)
      break;
    if (bytes == 4.0)
      break;
    c[idx % 4] = ceil(c[idx % 4] / 2.0);
  }
  for (int i = 0; i < 4; i++)
    chunk[i] = (hsize_t)c[i];
}

/* The dataset creation properties of the layout; *slab: the [t, c, H, W]
 * block written at once (whole chunks along t and c). */
static int layout_props(const gen_args *a, const hsize_t dims[4], hid_t props, hsize_t slab[4], dlpar_error *err)
{
  hsize_t chunk[4] = {1, dims[1], dims[2], dims[3]};
  int rc = DLPAR_OK;
  if (a->layout >= LAYOUT_CHUNKED)
    guess_chunk(dims, chunk);
  slab[0] = chunk[0];
  slab[1] = a->layout == LAYOUT_CONTIGUOUS ? dims[1] : chunk[1];
  slab[2] = dims[2];
  slab[3] = dims[3];
  if (a->layout != LAYOUT_CONTIGUOUS)
    H5_TRY_GOTO(H5Pset_chunk(props, 4, chunk), "the chunk shape", err, rc, out);
  if (a->layout == LAYOUT_SHUFFLE_GZIP)
    H5_TRY_GOTO(H5Pset_shuffle(props), "the shuffle filter", err, rc, out);
  if (a->layout >= LAYOUT_GZIP)
    H5_TRY_GOTO(H5Pset_deflate(props, 4), "the gzip filter", err, rc, out);
out:
  return rc;
}

static void waves_of(const gen_args *a, int year, int c, channel_waves *w)
{
  dlpar_rng rng;
  rng_init(&rng, (uint64_t)a->seed, (uint64_t)(year * 4096 + c));
  for (int i = 0; i < 4; i++)
    w->phase[i] = rng_uniform(&rng);
  w->speed[0] = 0.01 + 0.01 * (c % 4);
  w->speed[1] = 0.015 + 0.005 * (c % 3);
}

/* Channel c at time t of one year. */
static void field(const gen_args *a, const channel_waves *w, int c, int t, float *out)
{
  const double offset = 5.0 * c, scale = 1.0 + c % 5, k1 = 1 + c % 3, k2 = 2 + c % 2;
  for (int y = 0; y < a->height; y++) {
    const double lat = (double)y / (a->height - 1);
    for (int x = 0; x < a->width; x++) {
      const double lon = (double)x / a->width;
      const double wave1 = sin(2 * M_PI * (k1 * (lon - w->speed[0] * t) + w->phase[0])) *
                           cos(M_PI * (lat - 0.5) + w->phase[1]);
      const double wave2 = 0.5 * sin(2 * M_PI * (k2 * (lon - w->speed[1] * t) + 1.5 * lat + w->phase[2]));
      out[(size_t)y * a->width + x] = (float)(offset + scale * (wave1 + wave2 + 0.25 * cos(2 * M_PI * (lat + w->phase[3]))));
    }
  }
}

static int make_dir(const char *path)
{
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "dlpar-gen-data: %s: %s (check the path and permissions)\n", dlpar_show(path).text,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* One year's file, a slab (whole chunks along t and c) at a time;
 * accumulates the statistics of training years. */
static int write_year(const gen_args *a, const char *path, int year, double *sum, double *sum2, double *time_sum,
                      dlpar_error *err)
{
  const size_t plane = (size_t)a->height * a->width;
  const hsize_t dims[4] = {(hsize_t)a->steps, (hsize_t)a->channels, (hsize_t)a->height, (hsize_t)a->width};
  hsize_t slab[4];
  float *block = NULL;
  channel_waves *waves = malloc(sizeof(channel_waves) * (size_t)a->channels);
  hid_t file = -1, space = -1, props = -1, dset = -1, mem = -1;
  atomic_file af;
  int rc = DLPAR_OK;
  atomic_file_prepare(&af, path);
  H5_TRY_GOTO(props = H5Pcreate(H5P_DATASET_CREATE), path, err, rc, out);
  DLPAR_TRY_GOTO(layout_props(a, dims, props, slab, err), rc, out);
  if (!waves || !(block = malloc(sizeof(float) * plane * (size_t)(slab[0] * slab[1])))) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
    goto out;
  }
  for (int c = 0; c < a->channels; c++)
    waves_of(a, year, c, &waves[c]);
  H5_TRY_GOTO(file = H5Fcreate(af.temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), af.temp, err, rc, out);
  H5_TRY_GOTO(space = H5Screate_simple(4, dims, NULL), path, err, rc, out);
  H5_TRY_GOTO(dset = H5Dcreate2(file, "fields", H5T_IEEE_F32LE, space, H5P_DEFAULT, props, H5P_DEFAULT),
              path, err, rc, out);
  for (hsize_t t0 = 0; t0 < dims[0]; t0 += slab[0]) {
    for (hsize_t c0 = 0; c0 < dims[1]; c0 += slab[1]) {
      const hsize_t start[4] = {t0, c0, 0, 0};
      const hsize_t count[4] = {dims[0] - t0 < slab[0] ? dims[0] - t0 : slab[0],
                                dims[1] - c0 < slab[1] ? dims[1] - c0 : slab[1], dims[2], dims[3]};
      for (hsize_t t = 0; t < count[0]; t++) {
        for (hsize_t c = 0; c < count[1]; c++) {
          const int ch = (int)(c0 + c);
          float *plane_c = block + (size_t)(t * count[1] + c) * plane;
          field(a, &waves[ch], ch, (int)(t0 + t), plane_c);
          for (size_t i = 0; sum && i < plane; i++) {
            sum[ch] += plane_c[i];
            sum2[ch] += (double)plane_c[i] * plane_c[i];
            time_sum[(size_t)ch * plane + i] += plane_c[i];
          }
        }
      }
      h5_close(mem);
      H5_TRY_GOTO(mem = H5Screate_simple(4, count, NULL), path, err, rc, out);
      H5_TRY_GOTO(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL), path, err, rc, out);
      H5_TRY_GOTO(H5Dwrite(dset, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, block), path, err, rc, out);
    }
  }
out:
  h5_close(mem);
  h5_close(dset);
  h5_close(props);
  h5_close(space);
  if (file >= 0 && H5Fclose(file) < 0 && rc == DLPAR_OK)
    rc = DLPAR_ERR_SYSTEM;
  if (rc == DLPAR_OK)
    rc = atomic_file_commit(&af, err);
  else if (file >= 0)
    atomic_file_abandon(&af);
  free(block);
  free(waves);
  return rc;
}

static int write_stats(const gen_args *a, const double *sum, const double *sum2, const double *time_sum,
                       dlpar_error *err)
{
  const size_t plane = (size_t)a->height * a->width;
  const double n = (double)a->years * a->steps * (double)plane;
  const long stat_shape[4] = {1, a->channels, 1, 1}, time_shape[4] = {1, a->channels, a->height, a->width};
  float *means = malloc(sizeof(float) * (size_t)a->channels), *stds = malloc(sizeof(float) * (size_t)a->channels);
  float *time_means = malloc(sizeof(float) * plane * (size_t)a->channels);
  char path[PATH_MAX + 64];
  int rc = DLPAR_ERR_SYSTEM;
  if (!means || !stds || !time_means)
    goto out;
  for (int c = 0; c < a->channels; c++) {
    means[c] = (float)(sum[c] / n);
    stds[c] = (float)sqrt(fmax(sum2[c] / n - (sum[c] / n) * (sum[c] / n), 1e-12));
  }
  for (size_t i = 0; i < plane * (size_t)a->channels; i++)
    time_means[i] = (float)(time_sum[i] / ((double)a->years * a->steps));
  snprintf(path, sizeof(path), "%s/stats/global_means.npy", a->dir);
  DLPAR_TRY_GOTO(npy_write(path, means, stat_shape, 4, err), rc, out);
  snprintf(path, sizeof(path), "%s/stats/global_stds.npy", a->dir);
  DLPAR_TRY_GOTO(npy_write(path, stds, stat_shape, 4, err), rc, out);
  snprintf(path, sizeof(path), "%s/stats/time_means.npy", a->dir);
  rc = npy_write(path, time_means, time_shape, 4, err);
out:
  free(means);
  free(stds);
  free(time_means);
  return rc;
}

int main(int argc, char **argv)
{
  gen_args a;
  char path[PATH_MAX + 64];
  dlpar_error err = {0};
  const char *const splits[3] = {"train", "valid", "test"};
  double *sum, *sum2, *time_sum;
  int year;
  h5_quiet();
  parse_args(argc, argv, &a);
  sum = calloc((size_t)a.channels, sizeof(double));
  sum2 = calloc((size_t)a.channels, sizeof(double));
  time_sum = calloc((size_t)a.channels * a.height * a.width, sizeof(double));
  if (!sum || !sum2 || !time_sum || make_dir(a.dir) != 0)
    return 1;
  year = a.first_year;
  for (int s = 0; s < 3; s++) {
    snprintf(path, sizeof(path), "%s/%s", a.dir, splits[s]);
    if (make_dir(path) != 0)
      return 1;
    for (int y = 0; y < (s == 0 ? a.years : 1); y++, year++) {
      snprintf(path, sizeof(path), "%s/%s/%d.h5", a.dir, splits[s], year);
      if (write_year(&a, path, year, s == 0 ? sum : NULL, sum2, time_sum, &err) != DLPAR_OK) {
        fprintf(stderr, "dlpar-gen-data: %s\n", err.text);
        return 1;
      }
    }
  }
  snprintf(path, sizeof(path), "%s/stats", a.dir);
  if (make_dir(path) != 0 || write_stats(&a, sum, sum2, time_sum, &err) != DLPAR_OK) {
    fprintf(stderr, "dlpar-gen-data: %s\n", err.text);
    return 1;
  }
  printf("dlpar-gen-data: %s: %d training %s, 1 validation and 1 test year of fields[%d, %d, %d, %d] (%s), "
         "stats\n", dlpar_show(a.dir).text, a.years, dlpar_plural(a.years, "year", "years"), a.steps, a.channels,
         a.height, a.width, layout_names[a.layout]);
  free(sum);
  free(sum2);
  free(time_sum);
  return 0;
}

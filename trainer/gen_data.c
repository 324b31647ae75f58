/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/gen_data.c: dlpar-gen-data, a small synthetic ERA5-like dataset
 * in the tutorial's layout, for demos and tests:
 *   DIR/train/YEAR.h5, DIR/valid/YEAR.h5, DIR/test/YEAR.h5: fields[T, C, H, W] float32
 *   DIR/stats/global_means.npy, global_stds.npy (1, C, 1, 1), time_means.npy (1, C, H, W)
 * Each channel is a sum of smooth waves travelling east at their own speed
 * (plus a channel-specific offset and scale), so the next time step is a
 * learnable function of the current one. Files are written atomically. */
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
#include "trainer/atomic_file.h"
#include "trainer/h5util.h"
#include "trainer/npy.h"
#include "trainer/rng.h"

typedef struct {
  char dir[PATH_MAX];
  int years, steps, channels, height, width, first_year;
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

static void parse_args(int argc, char **argv, gen_args *a)
{
  int seed = 0;
  *a = (gen_args){"./data", 2, 64, 4, 32, 64, 2016, 0};
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--dir=", 6) == 0 && argv[i][6]) {
      snprintf(a->dir, sizeof(a->dir), "%s", argv[i] + 6);
      continue;
    }
    if (parse_int(argv[i], "--years", 1, 100, &a->years) || parse_int(argv[i], "--steps", 4, 100000, &a->steps) ||
        parse_int(argv[i], "--channels", 1, 1024, &a->channels) ||
        parse_int(argv[i], "--height", 2, 100000, &a->height) || parse_int(argv[i], "--width", 1, 100000, &a->width) ||
        parse_int(argv[i], "--seed", 0, 1 << 30, &seed))
      continue;
    fprintf(stderr, "usage: dlpar-gen-data [--dir=./data] [--years=2] [--steps=64] [--channels=4] [--height=32]\n"
                    "                      [--width=64] [--seed=0]   (unknown: %s)\n", dlpar_show(argv[i]).text);
    exit(2);
  }
  a->seed = seed;
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

/* One year's file; accumulates the statistics of training years. */
static int write_year(const gen_args *a, const char *path, int year, double *sum, double *sum2, double *time_sum,
                      char *err, size_t errlen)
{
  const size_t plane = (size_t)a->height * a->width;
  const hsize_t dims[4] = {(hsize_t)a->steps, (hsize_t)a->channels, (hsize_t)a->height, (hsize_t)a->width};
  const hsize_t chunk[4] = {1, (hsize_t)a->channels, (hsize_t)a->height, (hsize_t)a->width};
  float *step = malloc(sizeof(float) * plane * (size_t)a->channels);
  channel_waves *waves = malloc(sizeof(channel_waves) * (size_t)a->channels);
  hid_t file = -1, space = -1, props = -1, dset = -1, mem = -1;
  atomic_file af;
  int rc = DLPAR_OK;
  if (!step || !waves) {
    snprintf(err, errlen, "out of memory");
    rc = DLPAR_ERR_SYSTEM;
    goto out;
  }
  for (int c = 0; c < a->channels; c++)
    waves_of(a, year, c, &waves[c]);
  atomic_file_prepare(&af, path);
  H5_TRY_GOTO(file = H5Fcreate(af.temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), af.temp);
  H5_TRY_GOTO(space = H5Screate_simple(4, dims, NULL), path);
  H5_TRY_GOTO(props = H5Pcreate(H5P_DATASET_CREATE), path);
  H5_TRY_GOTO(H5Pset_chunk(props, 4, chunk), path);
  H5_TRY_GOTO(dset = H5Dcreate2(file, "fields", H5T_IEEE_F32LE, space, H5P_DEFAULT, props, H5P_DEFAULT), path);
  H5_TRY_GOTO(mem = H5Screate_simple(4, chunk, NULL), path);
  for (int t = 0; t < a->steps; t++) {
    const hsize_t start[4] = {(hsize_t)t, 0, 0, 0};
    for (int c = 0; c < a->channels; c++) {
      float *plane_c = step + (size_t)c * plane;
      field(a, &waves[c], c, t, plane_c);
      for (size_t i = 0; sum && i < plane; i++) {
        sum[c] += plane_c[i];
        sum2[c] += (double)plane_c[i] * plane_c[i];
        time_sum[(size_t)c * plane + i] += plane_c[i];
      }
    }
    H5_TRY_GOTO(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, chunk, NULL), path);
    H5_TRY_GOTO(H5Dwrite(dset, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, step), path);
  }
out:
  h5_close(mem);
  h5_close(dset);
  h5_close(props);
  h5_close(space);
  if (file >= 0 && H5Fclose(file) < 0 && rc == DLPAR_OK)
    rc = TRAINER_ERR_HDF5;
  if (rc == DLPAR_OK)
    rc = atomic_file_commit(&af, err, errlen);
  else if (file >= 0)
    atomic_file_abandon(&af);
  free(step);
  free(waves);
  return rc;
}

static int write_stats(const gen_args *a, const double *sum, const double *sum2, const double *time_sum, char *err,
                       size_t errlen)
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
  if ((rc = npy_write(path, means, stat_shape, 4, err, errlen)) != DLPAR_OK)
    goto out;
  snprintf(path, sizeof(path), "%s/stats/global_stds.npy", a->dir);
  if ((rc = npy_write(path, stds, stat_shape, 4, err, errlen)) != DLPAR_OK)
    goto out;
  snprintf(path, sizeof(path), "%s/stats/time_means.npy", a->dir);
  rc = npy_write(path, time_means, time_shape, 4, err, errlen);
out:
  free(means);
  free(stds);
  free(time_means);
  return rc;
}

int main(int argc, char **argv)
{
  gen_args a;
  char path[PATH_MAX + 64], err[DLPAR_ERRLEN];
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
      if (write_year(&a, path, year, s == 0 ? sum : NULL, sum2, time_sum, err, sizeof(err)) != DLPAR_OK) {
        fprintf(stderr, "dlpar-gen-data: %s\n", err);
        return 1;
      }
    }
  }
  snprintf(path, sizeof(path), "%s/stats", a.dir);
  if (make_dir(path) != 0 || write_stats(&a, sum, sum2, time_sum, err, sizeof(err)) != DLPAR_OK) {
    fprintf(stderr, "dlpar-gen-data: %s\n", err);
    return 1;
  }
  printf("dlpar-gen-data: %s: %d training %s, 1 validation and 1 test year of fields[%d, %d, %d, %d], stats\n",
         dlpar_show(a.dir).text, a.years, dlpar_plural(a.years, "year", "years"), a.steps, a.channels, a.height,
         a.width);
  free(sum);
  free(sum2);
  free(time_sum);
  return 0;
}

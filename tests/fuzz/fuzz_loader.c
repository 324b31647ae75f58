/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_loader.c: the ERA5 loader's open and read
 * (trainer/data/data.c: era5_open, then era5_read of every sample's input
 * and target, up to 16 samples) on any bytes as the one year of a data
 * directory. Seeded with the corpus of tests/unit/loader_corpus.py
 * (tests/fuzz/corpus.sh): valid layouts, filters and float types beside
 * hostile chunk dimensions, chunk places and sizes, deflate streams,
 * filters, external, linked and virtual storage. Every refusal one line;
 * every value read touched, so the sanitizers see a buffer shorter than
 * what was written into it. */
#include "config.h"

#include <hdf5.h>
#include <pthread.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"

enum { C = 2, H = 4, W = 8, DT = 1, MAX_SAMPLES = 16 };

/* libhdf5 1.10.8 leaks what it allocated for a dataset it then refuses to
 * open, which no caller can free; the loader's own memory stays under
 * LeakSanitizer (tests/unit/test_loader_corpus counts its HDF5 objects). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
  return "leak:libhdf5_serial.so\nleak:libhdf5.so\n";
}

static char dir[64], path[96];

static void remove_dir(void)
{
  unlink(path);
  rmdir(dir);
}

/* A directory of this process holding the input as its one year. */
static void write_year(const uint8_t *data, size_t size)
{
  FILE *f;
  if (!dir[0]) {
    snprintf(dir, sizeof(dir), "%s/dlpar-fuzz-loader.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
      abort();
    snprintf(path, sizeof(path), "%s/2016.h5", dir);
    atexit(remove_dir);
    h5_quiet();
  }
  if (!(f = fopen(path, "wb")) || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const float means[C] = {0, 0}, stds[C] = {1, 1};
  static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;
  static float out[C * H * W];
  train_config cfg = {0};
  era5_seconds seconds = {0, 0};
  dlpar_error err = {0};
  era5_data loaded;
  float *stage = NULL, sum = 0;
  int rc;
  write_year(data, size);
  cfg.n_in_channels = cfg.n_out_channels = C;
  cfg.img_size[0] = H;
  cfg.img_size[1] = W;
  cfg.dt = DT;
  rc = era5_open(&loaded, dir, &cfg, MAX_SAMPLES, means, stds, &hdf5_lock, &err);
  fuzz_expect_one_line(rc, err.text);
  if (rc == DLPAR_OK && !(stage = malloc(sizeof(float) * loaded.scratch_floats)))
    abort();
  for (long idx = 0; rc == DLPAR_OK && idx < loaded.nsamples; idx++) {
    for (int part = 0; part < 2 && rc == DLPAR_OK; part++) {
      rc = era5_read(&loaded, idx, part, stage, out, &seconds, &err);
      fuzz_expect_one_line(rc, err.text);
      for (int i = 0; rc == DLPAR_OK && i < C * H * W; i++)
        sum += out[i];
    }
  }
  if (sum != sum && rc == DLPAR_OK) /* never: the loader refuses NaN; it keeps the reads */
    abort();
  free(stage);
  era5_close(&loaded);
  return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_loader_corpus.c: the loader's open and read
 * (trainer/data/data.c: era5_open, era5_read of every sample's input and
 * target) over a corpus of unusual and hostile HDF5 files that
 * tests/unit/loader_corpus.py generates (h5py, and bytes patched where
 * libhdf5 will not write the file): every valid layout, filter and float
 * type, with a user block before the HDF5 data or without, reads exactly
 * what the plain contiguous twin reads; every damaged or
 * incomplete file (chunk dimensions that wrap, chunks' sizes and places past
 * the file or overlapping, unwritten chunks, deflate streams damaged, short,
 * long or a bomb, unknown filters, odd shuffle sizes, missing external or
 * linked or source files, a huge T, truncation) is refused in one line
 * naming the file, and the sample where one was being read. In check-unit
 * this runs under ASan + UBSan (.ci/run). SKIPs where /usr/bin/python3 has
 * no h5py.
 *   test_loader_corpus [CORPUS_DIR]   (default: generated in a temporary directory) */
#include "config.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"

enum { T = 6, C = 2, H = 4, W = 8, DT = 1 };
static const float means[C] = {0, 0}, stds[C] = {1, 1};
static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;

/* Every sample's input and target of the year in dir, into got (T x 2 steps
 * of C x H x W floats); DLPAR_OK, or the first refusal in err, with *reading
 * whether it came from a read (after the open). */
static int read_all(const char *dir, float *got, bool *reading, dlpar_error *err)
{
  train_config cfg = {0};
  era5_data data;
  era5_seconds seconds = {0, 0};
  float *stage = NULL;
  int rc;
  cfg.n_in_channels = cfg.n_out_channels = C;
  cfg.img_size[0] = H;
  cfg.img_size[1] = W;
  cfg.dt = DT;
  *reading = false;
  rc = era5_open(&data, dir, &cfg, -1, means, stds, &hdf5_lock, err);
  if (rc == DLPAR_OK && data.nsamples != T)
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %ld samples, expected %d", dir, data.nsamples, T);
  if (rc == DLPAR_OK && !(stage = malloc(sizeof(float) * data.scratch_floats)))
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  *reading = rc == DLPAR_OK;
  for (long idx = 0; idx < T && rc == DLPAR_OK; idx++) {
    for (int part = 0; part < 2 && rc == DLPAR_OK; part++)
      rc = era5_read(&data, idx, part, stage, got + ((size_t)idx * 2 + (size_t)part) * C * H * W, &seconds, err);
  }
  free(stage);
  era5_close(&data);
  return rc;
}

/* What OUT/NAME/expect says: "same", "refuse" or "either". */
static void read_expect(const char *dir, char *expect, size_t len)
{
  char path[PATH_MAX];
  FILE *f;
  snprintf(path, sizeof(path), "%s/expect", dir);
  expect[0] = '\0';
  if ((f = fopen(path, "r"))) {
    if (!fgets(expect, (int)len, f))
      expect[0] = '\0';
    expect[strcspn(expect, "\n")] = '\0';
    fclose(f);
  }
}

/* One case against the plain twin's reads. */
static void check_case(const char *root, const char *name, const float *plain)
{
  const size_t floats = (size_t)T * 2 * C * H * W;
  char dir[PATH_MAX], file[PATH_MAX + 16], expect[32];
  float *got = calloc(floats, sizeof(float));
  dlpar_error err = {0};
  bool reading;
  int rc;
  snprintf(dir, sizeof(dir), "%s/%s", root, name);
  snprintf(file, sizeof(file), "%s/2016.h5", dir);
  read_expect(dir, expect, sizeof(expect));
  if (!expect[0] || !got) {
    free(got);
    return;
  }
  rc = read_all(dir, got, &reading, &err);
  if (rc == DLPAR_OK) {
    const bool same = memcmp(got, plain, sizeof(float) * floats) == 0;
    printf("%s: read (%s), expected %s\n", name, same ? "as plain reads" : "NOT as plain reads", expect);
    CHECK(strcmp(expect, "refuse") != 0);
    CHECK(same);
  } else {
    printf("%s: refused (%s), expected %s: %s\n", name, reading ? "reading" : "opening", expect, err.text);
    CHECK(strcmp(expect, "same") != 0);
    CHECK(err.text[0] && !strchr(err.text, '\n'));
    CHECK(strstr(err.text, file) != NULL);
    CHECK(!reading || strstr(err.text, ": sample ") != NULL);
  }
  CHECK_INT(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  free(got);
}

/* libhdf5 1.10.8 leaks what it allocated for a dataset it then refuses to
 * open (chunk-dims-huge: "chunk size must be < 4GB"), which no caller can
 * free; the loader's own HDF5 objects are counted instead (every case
 * leaves none open), and its own memory stays under LeakSanitizer. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
  return "leak:libhdf5_serial.so\nleak:libhdf5.so\n";
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
  return strcmp((*a)->d_name, (*b)->d_name);
}

/* The corpus in a temporary directory, from tests/unit/loader_corpus.py. */
static void generate(char *root, size_t len)
{
  const char *srcdir = getenv("DLPAR_SRCDIR");
  char command[2 * PATH_MAX];
  snprintf(root, len, "/tmp/test_loader_corpus.XXXXXX");
  if (!mkdtemp(root))
    SKIP("no temporary directory");
  if (system("/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null") != 0)
    SKIP("no h5py for /usr/bin/python3 (apt install python3-h5py): the corpus is not generated");
  snprintf(command, sizeof(command), "/usr/bin/python3 %s/tests/unit/loader_corpus.py %s", srcdir ? srcdir : ".", root);
  if (system(command) != 0) {
    fprintf(stderr, "test_loader_corpus: %s failed\n", command);
    exit(1);
  }
}

int main(int argc, char **argv)
{
  const size_t floats = (size_t)T * 2 * C * H * W;
  char root[PATH_MAX], plain_dir[PATH_MAX + 8], command[PATH_MAX + 16];
  float *plain = calloc(floats, sizeof(float));
  struct dirent **names = NULL;
  dlpar_error err = {0};
  bool reading;
  int n;
  h5_quiet();
  if (argc > 1)
    snprintf(root, sizeof(root), "%s", argv[1]);
  else
    generate(root, sizeof(root));
  snprintf(plain_dir, sizeof(plain_dir), "%s/plain", root);
  CHECK_INT(read_all(plain_dir, plain, &reading, &err), DLPAR_OK);
  for (long idx = 0; idx < T; idx++) { /* the plain twin itself against the generator's fields */
    long l = idx % (T - DT);
    l += l < DT ? DT : 0;
    CHECK(plain[(size_t)idx * 2 * C * H * W + 3] == (float)((l * 7 + 3) % 23 - 11));
  }
  n = scandir(root, &names, NULL, by_name);
  CHECK(n > 50);
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.')
      check_case(root, names[i]->d_name, plain);
    free(names[i]);
  }
  free(names);
  free(plain);
  if (argc <= 1) {
    snprintf(command, sizeof(command), "rm -rf %s", root);
    CHECK(system(command) == 0);
  }
  return check_report("test_loader_corpus");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_loader.c: the ERA5 loader's open and read in
 * trainer/data/data.c, that is era5_open, then era5_read of every sample's
 * input and target, on files edited where the loader reads them. The input
 * picks one of eight valid years of fields[6, 2, 4, 8] written here with HDF5:
 * contiguous, compact, chunks of whole steps, of parts, gzip'ed, shuffled and
 * gzip'ed, fletcher32, big-endian gzip'ed. Then it lists edits of 12 bytes to
 * the year's bytes: kind, which, two unused, and a 64-bit value. An edit hits a
 * chunk's size, filter mask or address in the B-tree, a chunk dimension in the
 * layout message, a contiguous address or size, a dimension of the dataspace,
 * any byte of a chunk's or the contiguous data, deflate streams among them, or
 * the file's length. The bytes of the HDF5 format elsewhere are libhdf5's to
 * parse and are not fuzzed here. On raw bytes, libhdf5 1.10.8's own parser
 * aborts within seconds, with a fortify abort in H5S_select_deserialize under
 * H5Dopen2 of a virtual dataset. Every refusal must be one line. Every value
 * read is touched, so the sanitizers see a buffer shorter than what was
 * written into it. The corpus of hostile files itself is
 * tests/unit/test_loader_corpus's. DLPAR_FUZZ_SHOW=1 prints each input's
 * outcome, to show what the seeds reach. */
#include "config.h"

#include <hdf5.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"

enum { T = 6, C = 2, H = 4, W = 8, DT = 1, BASES = 8, MAX_CHUNKS = 64, EDIT_BYTES = 12 };
enum { CHUNK_SIZE, CHUNK_MASK, CHUNK_ADDR, CHUNK_DIM, CONTIGUOUS_ADDR, CONTIGUOUS_SIZE, SPACE_DIM, DATA_BYTE, CUT, KINDS };

/* A base year's bytes and where in them the loader's numbers are; -1 for none. */
typedef struct {
  unsigned char *bytes;
  size_t size;
  int chunks;
  long key[MAX_CHUNKS];  /* each chunk's B-tree key: size 4, mask 4, offsets 5 x 8 bytes; its address after */
  long data[MAX_CHUNKS]; /* each chunk's data, and its stored size */
  unsigned data_size[MAX_CHUNKS];
  long chunk_dims;       /* the layout message's chunk dimensions, 5 x 4 bytes, the last the element's size */
  long contiguous;       /* a contiguous layout's address and size, 8 bytes each */
  long space;            /* the dataspace's dimensions, 4 x 8 bytes */
} base;

/* libhdf5 1.10.8 leaks what it allocated for a dataset it then refuses to
 * open, which no caller can free. The loader's own memory stays under
 * LeakSanitizer, and tests/unit/test_loader_corpus counts its HDF5 objects. */
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

static long find(const base *b, const void *what, size_t len)
{
  const unsigned char *at = memmem(b->bytes, b->size, what, len);
  return at ? (long)(at - b->bytes) : -1;
}

static void load(base *b)
{
  FILE *f = fopen(path, "rb");
  long size;
  if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
      !(b->bytes = malloc((size_t)size)) || fread(b->bytes, 1, (size_t)size, f) != (size_t)size)
    abort();
  fclose(f);
  b->size = (size_t)size;
}

/* Where base b's chunks, chunk dimensions, contiguous place and dimensions are. */
static void locate(base *b, hid_t dset, const hsize_t *chunk)
{
  const uint64_t dims[4] = {T, C, H, W};
  hid_t space = H5Dget_space(dset);
  hsize_t count = 0;
  b->space = find(b, dims, sizeof(dims));
  b->chunk_dims = b->contiguous = -1;
  if (chunk) {
    const uint32_t shape[5] = {(uint32_t)chunk[0], (uint32_t)chunk[1], (uint32_t)chunk[2], (uint32_t)chunk[3], 4};
    b->chunk_dims = find(b, shape, sizeof(shape));
    H5Dget_num_chunks(dset, space, &count);
  } else if (H5Dget_offset(dset) != HADDR_UNDEF) {
    const uint64_t place[2] = {H5Dget_offset(dset), H5Dget_storage_size(dset)};
    b->contiguous = find(b, place, sizeof(place));
  }
  for (hsize_t i = 0; i < count && b->chunks < MAX_CHUNKS; i++) {
    hsize_t offset[4], size = 0;
    unsigned mask = 0;
    haddr_t addr = 0;
    unsigned char key[48];
    uint32_t head[2];
    uint64_t offsets[5];
    H5Dget_chunk_info(dset, space, i, offset, &mask, &addr, &size);
    head[0] = (uint32_t)size;
    head[1] = mask;
    for (int j = 0; j < 4; j++)
      offsets[j] = offset[j];
    offsets[4] = 0;
    memcpy(key, head, sizeof(head));
    memcpy(key + sizeof(head), offsets, sizeof(offsets));
    b->key[b->chunks] = find(b, key, sizeof(key));
    b->data[b->chunks] = (long)addr;
    b->data_size[b->chunks++] = (unsigned)size;
  }
  H5Sclose(space);
}

/* Base n: the fields in one layout, written to path and read back. */
static void make_base(base *b, int n)
{
  static const hsize_t dims[4] = {T, C, H, W}, steps[4] = {1, C, H, W}, parts[4] = {4, 1, 3, 5},
                       small[4] = {2, 1, 4, 8}, wide[4] = {4, 2, 3, 5}, rows[4] = {3, 2, 2, 8};
  static const hsize_t *const chunk[BASES] = {NULL, NULL, steps, parts, small, wide, small, rows};
  float values[T * C * H * W];
  hid_t file, space, dcpl, dset;
  for (int i = 0; i < T * C * H * W; i++)
    values[i] = (float)((i * 7) % 23 - 11);
  file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  space = H5Screate_simple(4, dims, NULL);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (n == 1)
    H5Pset_layout(dcpl, H5D_COMPACT);
  if (chunk[n])
    H5Pset_chunk(dcpl, 4, chunk[n]);
  if (n == 5)
    H5Pset_shuffle(dcpl);
  if (n == 4 || n == 5 || n == 7)
    H5Pset_deflate(dcpl, 4);
  if (n == 6)
    H5Pset_fletcher32(dcpl);
  dset = H5Dcreate2(file, "fields", n == 7 ? H5T_IEEE_F32BE : H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (file < 0 || dset < 0 || H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
    abort();
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
  load(b);
  file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  dset = H5Dopen2(file, "fields", H5P_DEFAULT);
  if (file < 0 || dset < 0)
    abort();
  locate(b, dset, chunk[n]);
  H5Dclose(dset);
  H5Fclose(file);
}

static void put(unsigned char *bytes, size_t size, long at, const void *value, size_t len)
{
  if (at >= 0 && (size_t)at + len <= size)
    memcpy(bytes + at, value, len);
}

/* One edit to the year's bytes, whose length is in *size. */
static void edit(const base *b, unsigned char *bytes, size_t *size, const uint8_t *e)
{
  const int kind = e[0] % KINDS, which = e[1];
  const int chunk = b->chunks ? which % b->chunks : 0;
  uint64_t value;
  uint32_t value32;
  memcpy(&value, e + 4, sizeof(value));
  value32 = (uint32_t)value;
  if (kind == CHUNK_SIZE && b->chunks)
    put(bytes, *size, b->key[chunk], &value32, 4);
  else if (kind == CHUNK_MASK && b->chunks)
    put(bytes, *size, b->key[chunk] < 0 ? -1 : b->key[chunk] + 4, &value32, 4);
  else if (kind == CHUNK_ADDR && b->chunks)
    put(bytes, *size, b->key[chunk] < 0 ? -1 : b->key[chunk] + 48, &value, 8);
  else if (kind == CHUNK_DIM)
    put(bytes, *size, b->chunk_dims < 0 ? -1 : b->chunk_dims + 4 * (which % 4), &value32, 4);
  else if (kind == CONTIGUOUS_ADDR || kind == CONTIGUOUS_SIZE)
    put(bytes, *size, b->contiguous < 0 ? -1 : b->contiguous + (kind == CONTIGUOUS_SIZE ? 8 : 0), &value, 8);
  else if (kind == SPACE_DIM)
    put(bytes, *size, b->space < 0 ? -1 : b->space + 8 * (which % 4), &value, 8);
  else if (kind == DATA_BYTE && b->chunks && b->data_size[chunk])
    put(bytes, *size, b->data[chunk] + (long)((value >> 8) % b->data_size[chunk]), &value, 1);
  else if (kind == CUT && *size > 0)
    *size = (size_t)(value % *size);
}

/* The edited year as dir's one file. */
static void write_year(const base *b, const uint8_t *edits, size_t nedits)
{
  unsigned char *bytes = malloc(b->size);
  size_t size = b->size;
  FILE *f;
  if (!bytes)
    abort();
  memcpy(bytes, b->bytes, b->size);
  for (size_t i = 0; i < nedits; i++)
    edit(b, bytes, &size, edits + i * EDIT_BYTES);
  if (!(f = fopen(path, "wb")) || fwrite(bytes, 1, size, f) != size || fclose(f) != 0)
    abort();
  free(bytes);
}

static void setup(base *bases)
{
  snprintf(dir, sizeof(dir), "%s/dlpar-fuzz-loader.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  if (!mkdtemp(dir))
    abort();
  snprintf(path, sizeof(path), "%s/2016.h5", dir);
  atexit(remove_dir);
  h5_quiet();
  for (int n = 0; n < BASES; n++)
    make_base(&bases[n], n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const float means[C] = {0, 0}, stds[C] = {1, 1};
  static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;
  static base bases[BASES];
  static float out[C * H * W];
  train_config cfg = {0};
  era5_seconds seconds = {0, 0};
  dlpar_error err = {0};
  era5_data loaded;
  float *stage = NULL, sum = 0;
  int rc;
  if (!dir[0])
    setup(bases);
  if (size == 0)
    return 0;
  write_year(&bases[data[0] % BASES], data + 1, (size - 1) / EDIT_BYTES);
  cfg.n_in_channels = cfg.n_out_channels = C;
  cfg.img_size[0] = H;
  cfg.img_size[1] = W;
  cfg.dt = DT;
  rc = era5_open(&loaded, dir, &cfg, -1, means, stds, &hdf5_lock, &err);
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
  if (getenv("DLPAR_FUZZ_SHOW"))
    fprintf(stderr, "fuzz_loader: base %d, %zu edits: %s\n", data[0] % BASES, (size - 1) / EDIT_BYTES,
            rc == DLPAR_OK ? "read" : err.text);
  free(stage);
  era5_close(&loaded);
  return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_npy.c: the .npy reader and writer (trainer/data/npy.c): a
 * round trip, and headers or files that lie (a shape whose count overflows,
 * more values than the file holds, other types, a newline in the header,
 * a FIFO), each refused in one line without a huge allocation or a hang. */
#include "config.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/data/npy.h"

static dlpar_error err;

/* A version 1.0 file with this header (padded as numpy does) and payload. */
static size_t make_npy(unsigned char *out, const char *header, size_t payload)
{
  const size_t len = strlen(header), total = (10 + len + 1 + 63) / 64 * 64;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (unsigned char)((total - 10) & 0xff);
  out[9] = (unsigned char)((total - 10) >> 8);
  memcpy(out + 10, header, len);
  memset(out + 10 + len, ' ', total - 10 - len - 1);
  out[total - 1] = '\n';
  memset(out + total, 0, payload);
  return total + payload;
}

static int read_bytes(const unsigned char *bytes, size_t size, npy_array *a)
{
  FILE *f = fmemopen((void *)bytes, size, "rb");
  int rc = npy_read_stream(f, (long)size, "x.npy", a, &err);
  fclose(f);
  CHECK(rc == DLPAR_OK || (err.text[0] && !strchr(err.text, '\n')));
  return rc;
}

static void test_round_trip(void)
{
  char dir[] = "/tmp/test_npy.XXXXXX", path[64];
  const float values[6] = {1, -2, 3.5f, 4, 5, 6};
  const long shape[2] = {2, 3};
  npy_array a;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/v.npy", dir);
  CHECK_INT(npy_write(path, values, shape, 2, &err), DLPAR_OK);
  CHECK_INT(npy_read(path, &a, &err), DLPAR_OK);
  CHECK_INT(a.ndim, 2);
  CHECK_INT(a.shape[0] * 10 + a.shape[1], 23);
  CHECK_INT(a.count, 6);
  CHECK(a.data && memcmp(a.data, values, sizeof(values)) == 0);
  npy_free(&a);
  unlink(path);
  CHECK_INT(mkfifo(path, 0600), 0);
  CHECK_INT(npy_read(path, &a, &err), DLPAR_ERR_INPUT); /* no writer: must not block */
  CHECK(strstr(err.text, "v.npy: a FIFO, not a regular file") != NULL);
  unlink(path);
  CHECK_INT(npy_read(path, &a, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "v.npy: cannot open (check the stats path in the config)") != NULL);
  rmdir(dir);
}

static void test_lies(void)
{
  static unsigned char file[8192];
  npy_array a;
  size_t n = make_npy(file, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 0);
  CHECK_INT(read_bytes(file, n, &a), DLPAR_ERR_INPUT); /* the count overflows a long */
  CHECK(strstr(err.text, "x.npy: expected a C-ordered little-endian float32 or float64 array") != NULL);
  n = make_npy(file, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", 16);
  CHECK_INT(read_bytes(file, n, &a), DLPAR_ERR_INPUT); /* refused before allocating 4 TB */
  CHECK_STR(err.text, "x.npy: the header says 1000000000000 values, the file holds 4 (regenerate it)");
  n = make_npy(file, "{'descr': '<i4',\n 'fortran_order': False, 'shape': (2,), }", 8);
  CHECK_INT(read_bytes(file, n, &a), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "header {'descr': '<i4',\\n 'fortran_order'") != NULL);
  n = make_npy(file, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24);
  CHECK_INT(read_bytes(file, n, &a), DLPAR_OK);
  CHECK_INT(a.count, 3);
  npy_free(&a);
  CHECK_INT(read_bytes(file, 9, &a), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "x.npy: truncated .npy header (regenerate the file)");
  CHECK_INT(read_bytes((const unsigned char *)"PK\x03\x04 not npy", 14, &a), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "x.npy: not a NumPy .npy file") != NULL);
}

int main(void)
{
  test_round_trip();
  test_lies();
  return check_report("test_npy");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_metrics.c: trainer/run/metrics.c on its own: CRC32C against
 * its published check value, one scalar Event encoded byte for byte as the
 * protobuf wire format lays it out, records that do not fit refused, and
 * a writer's files: metrics.jsonl lines, and an event file whose every
 * record's framing (length, masked CRCs) holds. An expdir that cannot be
 * written gets the one-line error. The whole-run view (TensorBoard tags
 * read by an independent decoder) is tests/integration/train_metrics.sh. */
#include "config.h"

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/run/metrics.h"

static void test_crc(void)
{
  /* CRC-32C("123456789") = 0xE3069283; TensorBoard masks it as
   * ((crc >> 15) | (crc << 17)) + 0xa282ead8 */
  CHECK_INT(tfrecord_masked_crc32c((const unsigned char *)"123456789", 9), 0xc78ab0e5u);
  CHECK(tfrecord_masked_crc32c((const unsigned char *)"123456788", 9) != 0xc78ab0e5u);
}

static void test_encode(void)
{
  /* Event{wall_time=1.5, step=3, summary{value{tag="a", simple_value=2}}} */
  static const unsigned char want[] = {
      0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /* 1: double 1.5 */
      0x10, 0x03,                         /* 2: varint 3 */
      0x2a, 0x0a,                         /* 5: summary, 10 bytes */
      0x0a, 0x08,                         /*   1: value, 8 bytes */
      0x0a, 0x01, 'a',                    /*     1: tag "a" */
      0x15, 0, 0, 0, 0x40,                /*     2: float 2.0 */
  };
  unsigned char out[64], big_tag[600];
  size_t len = tfevent_encode_scalar(out, sizeof(out), 1.5, 3, "a", 2.0f);
  CHECK_INT(len, sizeof(want));
  CHECK(len == sizeof(want) && memcmp(out, want, len) == 0);
  /* a long step takes a multi-byte varint: 300 = 0xac 0x02 */
  len = tfevent_encode_scalar(out, sizeof(out), 1.5, 300, "a", 2.0f);
  CHECK_INT(len, sizeof(want) + 1);
  CHECK(out[9] == 0x10 && out[10] == 0xac && out[11] == 0x02);
  /* too small a buffer: the length it would need, nothing past cap written */
  memset(out, 0x55, sizeof(out));
  CHECK_INT(tfevent_encode_scalar(out, 8, 1.5, 3, "a", 2.0f), sizeof(want));
  CHECK(out[8] == 0x55);
  memset(big_tag, 'x', sizeof(big_tag) - 1);
  big_tag[sizeof(big_tag) - 1] = '\0';
  CHECK(tfevent_encode_scalar(out, sizeof(out), 1.5, 3, (const char *)big_tag, 1.0f) == SIZE_MAX);
}

static char *read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long size;
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)size + 1)) && fread(buf, 1, (size_t)size, f) == (size_t)size) {
    buf[size] = '\0';
    *len = (size_t)size;
  } else {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

/* The number of records in an event file whose framing holds; -1 at the
 * first broken one. */
static int count_records(const unsigned char *data, size_t len)
{
  size_t pos = 0;
  int records = 0;
  while (pos < len) {
    uint64_t n;
    uint32_t crc;
    if (len - pos < 12)
      return -1;
    memcpy(&n, data + pos, 8);
    memcpy(&crc, data + pos + 8, 4);
    if (crc != tfrecord_masked_crc32c(data + pos, 8) || n > len - pos - 16)
      return -1;
    memcpy(&crc, data + pos + 12 + n, 4);
    if (crc != tfrecord_masked_crc32c(data + pos + 12, (size_t)n))
      return -1;
    pos += 16 + (size_t)n;
    records++;
  }
  return records;
}

static int event_file(const char *logs, char *path, size_t len)
{
  DIR *d = opendir(logs);
  struct dirent *e;
  int found = 0;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, "events.out.tfevents.", 20) == 0 && !found++)
      snprintf(path, len, "%s/%s", logs, e->d_name);
  if (d)
    closedir(d);
  return found;
}

static void test_writer(const char *dir)
{
  metrics_writer *w;
  char path[4096], logs[4096], *text;
  dlpar_error err = {0};
  size_t len;
  epoch_summary s = {.epoch = 2, .step = 24, .train_loss = 0.5, .val_loss = 0.25, .val_rmse_u10m = 1.5, .lr = 1e-4,
                     .iters_per_sec = 3, .samples_per_sec = 48};
  CHECK_INT(metrics_open(&w, dir, &err), DLPAR_OK);
  CHECK_INT(metrics_initial(w, 1.0, 2.0, 3.0), DLPAR_OK);
  CHECK_INT(metrics_step(w, 1, 0.75, 5e-4), DLPAR_OK);
  CHECK_INT(metrics_epoch(w, &s), DLPAR_OK);
  metrics_close(w);
  snprintf(path, sizeof(path), "%s/metrics.jsonl", dir);
  text = read_all(path, &len);
  CHECK(text != NULL);
  if (text) {
    CHECK(strstr(text, "{\"step\": 1, \"loss\": 0.75, \"lr\": 0.0005}\n") == text);
    CHECK(strstr(text, "{\"epoch\": 2, \"step\": 24, \"train_loss\": 0.5, \"val_loss\": 0.25, \"val_rmse_u10m\": 1.5,") !=
          NULL);
    CHECK(text[len - 1] == '\n');
  }
  free(text);
  snprintf(logs, sizeof(logs), "%s/logs", dir);
  CHECK_INT(event_file(logs, path, sizeof(path)), 1);
  text = read_all(path, &len);
  CHECK(text != NULL);
  /* the version record, 3 step-0 losses, 3 losses + LR + 2 rates at the epoch */
  if (text)
    CHECK_INT(count_records((const unsigned char *)text, len), 1 + 3 + 6);
  if (text && len > 20) {
    text[len - 20] ^= 1; /* one flipped bit breaks a CRC */
    CHECK_INT(count_records((const unsigned char *)text, len), -1);
  }
  free(text);
}

static void test_unwritable(const char *dir)
{
  metrics_writer *w;
  char missing[4096];
  dlpar_error err = {0};
  snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
  CHECK(metrics_open(&w, missing, &err) != DLPAR_OK);
  CHECK(strstr(err.text, "no/such/dir: cannot write metrics:") != NULL && strstr(err.text, "(check expdir)") != NULL);
  CHECK(strchr(err.text, '\n') == NULL);
  metrics_close(w);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int main(void)
{
  char dir[] = "/tmp/dlpar-test-metrics.XXXXXX";
  if (!mkdtemp(dir))
    SKIP("cannot make a temporary directory in /tmp");
  test_crc();
  test_encode();
  test_writer(dir);
  test_unwritable(dir);
  if (nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "test_metrics: could not remove %s\n", dir);
  return check_report("test_metrics");
}

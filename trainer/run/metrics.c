/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/metrics.c: metrics.jsonl and TensorBoard event files, as
 * metrics.h describes. The event file is a sequence of TFRecords: uint64
 * length, uint32 masked CRC32C of the length, the bytes, uint32 masked
 * CRC32C of the bytes. Each record is an Event protobuf written by a small
 * encoder:
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; } */
#include "config.h"

#include "trainer/run/metrics.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"

struct metrics_writer {
  FILE *json, *events;
};

/* ------------------------------------------------------------ TFRecord */

unsigned int tfrecord_masked_crc32c(const unsigned char *data, size_t len)
{
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < len; i++) {
    crc ^= data[i];
    for (int k = 0; k < 8; k++)
      crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u))); /* Castagnoli */
  }
  crc = ~crc;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

typedef struct {
  unsigned char *buf;
  size_t len, cap;
} pb;

static void pb_byte(pb *p, unsigned char b)
{
  if (p->len < p->cap)
    p->buf[p->len] = b;
  p->len++;
}

static void pb_varint(pb *p, uint64_t v)
{
  while (v >= 0x80) {
    pb_byte(p, (unsigned char)(v | 0x80));
    v >>= 7;
  }
  pb_byte(p, (unsigned char)v);
}

static void pb_fixed(pb *p, const void *v, int bytes) /* little-endian host */
{
  for (int i = 0; i < bytes; i++)
    pb_byte(p, ((const unsigned char *)v)[i]);
}

static void pb_key(pb *p, int field, int wire)
{
  pb_varint(p, (uint64_t)(field << 3 | wire));
}

static void pb_bytes(pb *p, int field, const void *data, size_t len)
{
  pb_key(p, field, 2);
  pb_varint(p, len);
  for (size_t i = 0; i < len; i++)
    pb_byte(p, ((const unsigned char *)data)[i]);
}

size_t tfevent_encode_scalar(unsigned char *out, size_t cap, double wall_time, long step, const char *tag, float value)
{
  unsigned char value_buf[512], summary_buf[600];
  pb v = {value_buf, 0, sizeof(value_buf)}, s = {summary_buf, 0, sizeof(summary_buf)}, e = {out, 0, cap};
  pb_bytes(&v, 1, tag, strlen(tag));
  pb_key(&v, 2, 5);
  pb_fixed(&v, &value, 4);
  if (v.len > v.cap)
    return SIZE_MAX; /* a tag too long for one record */
  pb_bytes(&s, 1, value_buf, v.len);
  pb_key(&e, 1, 1);
  pb_fixed(&e, &wall_time, 8);
  pb_key(&e, 2, 0);
  pb_varint(&e, (uint64_t)step);
  pb_bytes(&e, 5, summary_buf, s.len);
  return e.len;
}

static size_t tfevent_encode_version(unsigned char *out, size_t cap, double wall_time)
{
  static const char version[] = "brain.Event:2";
  pb e = {out, 0, cap};
  pb_key(&e, 1, 1);
  pb_fixed(&e, &wall_time, 8);
  pb_bytes(&e, 3, version, sizeof(version) - 1);
  return e.len;
}

static int write_record(FILE *f, const unsigned char *data, size_t len)
{
  unsigned char header[12];
  const uint64_t n = len;
  uint32_t crc;
  memcpy(header, &n, 8);
  crc = tfrecord_masked_crc32c(header, 8);
  memcpy(header + 8, &crc, 4);
  crc = tfrecord_masked_crc32c(data, len);
  if (fwrite(header, 1, 12, f) != 12 || fwrite(data, 1, len, f) != len || fwrite(&crc, 1, 4, f) != 4 || fflush(f) != 0)
    return DLPAR_ERR_SYSTEM;
  return DLPAR_OK;
}

static double wall_time(void)
{
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int scalar(metrics_writer *w, const char *tag, long step, double value)
{
  unsigned char record[1024];
  const size_t len = tfevent_encode_scalar(record, sizeof(record), wall_time(), step, tag, (float)value);
  return len <= sizeof(record) ? write_record(w->events, record, len) : DLPAR_ERR_INPUT;
}

/* ------------------------------------------------------------ writer */

int metrics_open(metrics_writer **out, const char *run_dir, dlpar_error *err)
{
  char path[PATH_MAX], host[64] = "host";
  unsigned char record[128];
  metrics_writer *w = calloc(1, sizeof(*w));
  *out = w;
  if (!w)
    return DLPAR_ERR_SYSTEM;
  snprintf(path, sizeof(path), "%s/metrics.jsonl", run_dir);
  w->json = fopen(path, "a");
  snprintf(path, sizeof(path), "%s/logs", run_dir);
  if (!w->json || (mkdir(path, 0755) != 0 && errno != EEXIST))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot write metrics: %s (check expdir)",
                           dlpar_show(run_dir).text, strerror(errno));
  gethostname(host, sizeof(host) - 1);
  snprintf(path, sizeof(path), "%s/logs/events.out.tfevents.%ld.%s.%ld", run_dir, (long)time(NULL), host,
           (long)getpid());
  w->events = fopen(path, "wb");
  if (!w->events || write_record(w->events, record, tfevent_encode_version(record, sizeof(record), wall_time())) != 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot write TensorBoard events: %s", dlpar_show(path).text,
                           strerror(errno));
  return DLPAR_OK;
}

int metrics_step(metrics_writer *w, long step, double loss, double lr)
{
  if (fprintf(w->json, "{\"step\": %ld, \"loss\": %.9g, \"lr\": %.9g}\n", step, loss, lr) < 0 || fflush(w->json) != 0)
    return DLPAR_ERR_SYSTEM;
  return DLPAR_OK;
}

/* The tutorial's three loss tags, at step 0 and at each epoch's end. */
static int losses(metrics_writer *w, long step, double train_loss, double val_loss, double val_rmse_u10m)
{
  int rc = scalar(w, "Loss/train", step, train_loss) != DLPAR_OK;
  rc |= scalar(w, "Loss/valid", step, val_loss) != DLPAR_OK;
  rc |= scalar(w, "RMSE(u10m)/valid", step, val_rmse_u10m) != DLPAR_OK;
  return rc ? DLPAR_ERR_SYSTEM : DLPAR_OK;
}

int metrics_initial(metrics_writer *w, double train_loss, double val_loss, double val_rmse_u10m)
{
  return losses(w, 0, train_loss, val_loss, val_rmse_u10m);
}

int metrics_epoch(metrics_writer *w, const epoch_summary *s)
{
  int rc = fprintf(w->json,
                   "{\"epoch\": %ld, \"step\": %ld, \"train_loss\": %.9g, \"val_loss\": %.9g, \"val_rmse_u10m\": %.9g, "
                   "\"lr\": %.9g, \"epoch_seconds\": %.6g, \"samples_per_sec\": %.6g, \"data_wait_seconds\": %.6g, "
                   "\"validation_seconds\": %.6g, \"peak_memory_gb\": %.6g}\n",
                   s->epoch, s->step, s->train_loss, s->val_loss, s->val_rmse_u10m, s->lr, s->epoch_seconds,
                   s->samples_per_sec, s->data_wait_seconds, s->validation_seconds, s->peak_memory_gb) < 0 ||
           fflush(w->json) != 0;
  rc |= losses(w, s->step, s->train_loss, s->val_loss, s->val_rmse_u10m) != DLPAR_OK;
  rc |= scalar(w, "Learning Rate", s->step, s->lr) != DLPAR_OK;
  rc |= scalar(w, "Avg iters per sec", s->step, s->iters_per_sec) != DLPAR_OK;
  rc |= scalar(w, "Avg samples per sec", s->step, s->samples_per_sec) != DLPAR_OK;
  return rc ? DLPAR_ERR_SYSTEM : DLPAR_OK;
}

int metrics_skew(metrics_writer *w, long step, double slowest, double fastest, double median)
{
  int rc = scalar(w, "Step time/slowest (ms)", step, 1e3 * slowest) != DLPAR_OK;
  rc |= scalar(w, "Step time/fastest (ms)", step, 1e3 * fastest) != DLPAR_OK;
  rc |= scalar(w, "Step time/median (ms)", step, 1e3 * median) != DLPAR_OK;
  return rc ? DLPAR_ERR_SYSTEM : DLPAR_OK;
}

void metrics_close(metrics_writer *w)
{
  if (!w)
    return;
  if (w->json)
    fclose(w->json);
  if (w->events)
    fclose(w->events);
  free(w);
}

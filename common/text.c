/* common/text.c: defensive parsing and quoting of user text, nouns that agree with their counts, and stderr lines written whole (see text.h). */
#include "config.h"

#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dlpar_parse_uint(const char *text, size_t len, long max, long *out)
{
  long value = 0;
  if (len == 0)
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (text[i] < '0' || text[i] > '9')
      return -1;
  }
  for (size_t i = 0; i < len; i++) {
    value = value * 10 + (text[i] - '0');
    if (value > max)
      return -2;
  }
  *out = value;
  return 0;
}

int dlpar_parse_int(const char *text, long lo, long hi, long *out)
{
  const int negative = text[0] == '-';
  const long bound = negative ? -lo : hi;
  long value;
  if (bound < 0 || dlpar_parse_uint(text + negative, strlen(text + negative), bound, &value) != 0)
    return -1;
  value = negative ? -value : value;
  if (value < lo || value > hi)
    return -1;
  *out = value;
  return 0;
}

int dlpar_parse_seconds(const char *text, double *out)
{
  const size_t len = strlen(text), whole = strspn(text, "0123456789");
  const bool point = text[whole] == '.';
  const size_t fraction = point ? strspn(text + whole + 1, "0123456789") : 0;
  double value;
  if (len > 32 || whole == 0 || (point && fraction == 0) || whole + point + fraction != len)
    return -1;
  value = strtod(text, NULL);
  if (!(value > 0 && value <= 366 * 86400.0))
    return -1;
  *out = value;
  return 0;
}

const char *dlpar_plural(long n, const char *one, const char *many)
{
  return n == 1 || n == -1 ? one : many;
}

const char *dlpar_quote(const char *text, char *buf, size_t buflen)
{
  size_t used = 0;
  const size_t keep = buflen > 8 ? buflen - 8 : 0; /* room for \xNN and ... */
  if (buflen == 0)
    return buf;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (used >= keep) {
      snprintf(buf + used, buflen - used, "...");
      return buf;
    }
    if (*p >= 0x20 && *p < 0x7f)
      buf[used++] = (char)*p;
    else
      used += (size_t)snprintf(buf + used, buflen - used, "\\x%02x", *p);
  }
  buf[used] = '\0';
  return buf;
}

static int parse_rank_range(const char *text, size_t len, long *lo, long *hi)
{
  const char *dash = memchr(text, '-', len);
  const long max_rank = 16777215;
  if (!dash) {
    if (dlpar_parse_uint(text, len, max_rank, lo) != 0)
      return -1;
    *hi = *lo;
    return 0;
  }
  if (dlpar_parse_uint(text, (size_t)(dash - text), max_rank, lo) != 0 ||
      dlpar_parse_uint(dash + 1, len - (size_t)(dash - text) - 1, max_rank, hi) != 0 ||
      *lo > *hi)
    return -1;
  return 0;
}

int dlpar_rank_list_parse(const char *text, dlpar_rank_list *out)
{
  size_t len = strlen(text);
  memset(out, 0, sizeof(*out));
  if (len == 0 || len > DLPAR_TEXT_MAX)
    return -1;
  if (strcmp(text, "all") == 0) {
    out->all = true;
    return 0;
  }
  for (const char *item = text;;) {
    const char *comma = strchr(item, ',');
    size_t item_len = comma ? (size_t)(comma - item) : strlen(item);
    int n = out->count;
    if (n == (int)(sizeof(out->range) / sizeof(out->range[0])))
      return -1;
    if (parse_rank_range(item, item_len, &out->range[n].lo, &out->range[n].hi) != 0)
      return -1;
    out->count++;
    if (!comma)
      return 0;
    item = comma + 1;
  }
}

bool dlpar_rank_list_has(const dlpar_rank_list *list, long rank)
{
  if (list->all)
    return true;
  for (int i = 0; i < list->count; i++) {
    if (rank >= list->range[i].lo && rank <= list->range[i].hi)
      return true;
  }
  return false;
}

long dlpar_rank_list_max(const dlpar_rank_list *list)
{
  long max = -1;
  for (int i = 0; !list->all && i < list->count; i++) {
    if (list->range[i].hi > max)
      max = list->range[i].hi;
  }
  return max;
}


static int compare_doubles(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double dlpar_median_sorting(double *values, int n)
{
  qsort(values, (size_t)n, sizeof(double), compare_doubles);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void dlpar_eprintf(const char *format, ...)
{
  char text[4096];
  va_list args;
  int len;
  va_start(args, format);
  len = vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  if (len < 0)
    return;
  fwrite(text, 1, (size_t)len < sizeof(text) ? (size_t)len : sizeof(text) - 1, stderr); /* unbuffered: one write */
}

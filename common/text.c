/* SPDX-License-Identifier: BSD-3-Clause */
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

int dlpar_parse_positive(const char *text, double max, double *out)
{
  const size_t len = strlen(text), whole = strspn(text, "0123456789");
  const bool point = text[whole] == '.';
  const size_t fraction = point ? strspn(text + whole + 1, "0123456789") : 0;
  double value;
  if (len > 32 || whole == 0 || (point && fraction == 0) || whole + point + fraction != len)
    return -1;
  value = strtod(text, NULL);
  if (!(value > 0 && value <= max))
    return -1;
  *out = value;
  return 0;
}

int dlpar_parse_seconds(const char *text, double *out)
{
  return dlpar_parse_positive(text, 366 * 86400.0, out);
}

const char *dlpar_plural(long n, const char *one, const char *many)
{
  return n == 1 || n == -1 ? one : many;
}

size_t dlpar_utf8_decode(const char *text, unsigned long *code)
{
  const unsigned char *p = (const unsigned char *)text;
  const size_t len = p[0] < 0x80                   ? 1
                     : p[0] >= 0xc2 && p[0] < 0xe0 ? 2
                     : p[0] >= 0xe0 && p[0] < 0xf0 ? 3
                     : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                                    : 0;
  *code = len == 1 ? p[0] : len == 2 ? p[0] & 0x1fu : len == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
      return 0;
    *code = *code << 6 | (p[i] & 0x3fu);
  }
  if (len == 0 || (len == 3 && *code < 0x800) || (len == 4 && (*code < 0x10000 || *code > 0x10ffff)) ||
      (*code >= 0xd800 && *code <= 0xdfff))
    return 0;
  return len;
}

/* A C0 control byte or DEL: what breaks a line or drives a terminal. */
static bool is_control(unsigned char c)
{
  return c < 0x20 || c == 0x7f;
}

/* The length of the printable UTF-8 character at p (2 to 4 bytes), or 0:
 * invalid or overlong sequences, surrogates, C1 controls (U+0080..U+009F),
 * U+200E/F, U+2028/9, U+202A..U+202E and U+2066..U+2069 (they break a line
 * or reorder what a terminal shows). */
static size_t printable_utf8(const unsigned char *p)
{
  unsigned long code;
  const size_t len = dlpar_utf8_decode((const char *)p, &code);
  if (len < 2 || code < 0xa0 || code == 0x200e || code == 0x200f || code == 0x2028 || code == 0x2029 ||
      (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069) || code == 0xfffe || code == 0xffff)
    return 0;
  return len;
}

/* The shown form of the character at p into out (at most 4 bytes, not
 * NUL-terminated); returns its length and sets *consumed. */
static size_t show_char(const unsigned char *p, char out[4], size_t *consumed)
{
  static const char hex[] = "0123456789abcdef";
  const size_t utf8 = *p >= 0x80 ? printable_utf8(p) : 0;
  *consumed = utf8 ? utf8 : 1;
  if (utf8) {
    memcpy(out, p, utf8);
    return utf8;
  }
  if (*p < 0x80 && !is_control(*p)) {
    out[0] = (char)*p;
    return 1;
  }
  if (*p == '\n' || *p == '\r' || *p == '\t') {
    out[0] = '\\';
    out[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
    return 2;
  }
  out[0] = '\\', out[1] = 'x', out[2] = hex[*p >> 4], out[3] = hex[*p & 15];
  return 4;
}

const char *dlpar_quote(const char *text, char *buf, size_t buflen)
{
  const unsigned char *p = (const unsigned char *)(text ? text : "(none)");
  size_t used = 0, whole = 0, room;
  char shown[4];
  for (const unsigned char *q = p; *q;) {
    size_t consumed;
    whole += show_char(q, shown, &consumed);
    q += consumed;
  }
  if (buflen == 0)
    return buf;
  room = whole < buflen ? buflen : buflen > 3 ? buflen - 3 : 0; /* a cut text ends "..." */
  while (*p) {
    size_t consumed, len = show_char(p, shown, &consumed);
    if (used + len >= room) {
      snprintf(buf + used, buflen - used, "%s", room ? "..." : "");
      return buf;
    }
    memcpy(buf + used, shown, len);
    used += len;
    p += consumed;
  }
  buf[used] = '\0';
  return buf;
}

char *dlpar_one_line(char *text)
{
  const unsigned char *in = (const unsigned char *)text;
  unsigned char *out = (unsigned char *)text;
  while (*in) {
    unsigned long code;
    const size_t keep = *in >= 0x80 ? printable_utf8(in) : !is_control(*in);
    /* what is replaced: a whole character, or one byte not part of one */
    const size_t whole = keep || *in < 0x80 ? 0 : dlpar_utf8_decode((const char *)in, &code);
    if (keep) {
      memmove(out, in, keep);
      out += keep;
      in += keep;
      continue;
    }
    in += whole ? whole : 1; /* before out, which may be in, is written */
    *out++ = ' ';
  }
  *out = '\0';
  return text;
}

bool dlpar_is_printable(const char *text)
{
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (is_control(*p))
      return false;
  }
  return true;
}

dlpar_shown dlpar_show(const char *text)
{
  dlpar_shown shown;
  dlpar_quote(text, shown.text, sizeof(shown.text));
  return shown;
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

/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/progress.c: the progress line of a training epoch that
 * progress.h describes: when to write it, what it says, and whether it is
 * rewritten in place or written as plain lines. */
#include "config.h"

#include "trainer/run/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"

struct progress {
  FILE *stream;
  bool terminal;
  double seconds;     /* between lines */
  long epoch;         /* of the anchor; 0: none yet */
  long anchor_step;   /* the rate counts from this step of the epoch ... */
  double anchor_time; /* ... done at this time */
  double last_line;   /* when the last line was written */
  int open_width;     /* characters of a line left open on the terminal; 0: none */
};

int progress_parse(const char *text, double *seconds, dlpar_error *err)
{
  if (strcmp(text, "off") == 0)
    *seconds = -1;
  else if (strcmp(text, "on") == 0)
    *seconds = 0;
  else if (dlpar_parse_seconds(text, seconds) != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--progress=%s: expected off, on or the seconds between lines (e.g. "
                           "--progress=10)", dlpar_show(text).text);
  return DLPAR_OK;
}

int progress_create(progress **out, FILE *stream, bool terminal, double seconds, dlpar_error *err)
{
  progress *p;
  *out = NULL;
  if (seconds < 0)
    return DLPAR_OK;
  p = calloc(1, sizeof(*p));
  if (!p)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the progress line");
  p->stream = stream;
  p->terminal = terminal;
  p->seconds = seconds > 0 ? seconds : terminal ? PROGRESS_TERMINAL_SECONDS : PROGRESS_LOG_SECONDS;
  *out = p;
  return DLPAR_OK;
}

/* "12:05" or "1:02:05" */
static void format_duration(double seconds, char *buf, size_t len)
{
  const long s = lround(seconds);
  if (s >= 3600)
    snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

/* "step 12/64 of epoch 1: 245.3 samples/s, loss so far 0.8123, 0:12 left in the epoch" */
static int format_line(const progress *p, double now, const progress_point *at, char *buf, size_t len)
{
  const double rate = (double)(at->step - p->anchor_step) * at->samples_per_step / (now - p->anchor_time);
  char left[32], loss[32];
  format_duration((double)(at->steps - at->step) * at->samples_per_step / rate, left, sizeof(left));
  if (isnan(at->loss))
    snprintf(loss, sizeof(loss), "not yet");
  else
    snprintf(loss, sizeof(loss), "%.4f", at->loss);
  const int width = snprintf(buf, len, "  step %ld/%ld of epoch %ld: %.1f samples/s, loss so far %s, %s left in the epoch",
                             at->step, at->steps, at->epoch, rate, loss, left);
  return width < (int)len ? width : (int)len - 1;
}

static void write_line(progress *p, const char *line, int width)
{
  if (p->terminal) {
    /* blanks over what is left of a longer line before it */
    fprintf(p->stream, "\r%s%*s", line, p->open_width > width ? p->open_width - width : 0, "");
    p->open_width = width;
  } else
    fprintf(p->stream, "%s\n", line);
  fflush(p->stream);
}

void progress_step(progress *p, double now, const progress_point *at)
{
  char line[256];
  bool due;
  if (!p || at->step > at->steps)
    return;
  if (at->epoch != p->epoch || at->step <= p->anchor_step) {
    /* the first step seen of this epoch: the rate counts from here */
    p->epoch = at->epoch;
    p->anchor_step = at->step;
    p->anchor_time = now;
    p->last_line = now;
    return;
  }
  due = now - p->last_line >= p->seconds || (p->terminal && at->step == at->steps);
  if (!due || !(now > p->anchor_time))
    return;
  write_line(p, line, format_line(p, now, at, line, sizeof(line)));
  p->last_line = now;
}

void progress_break(progress *p)
{
  if (!p || !p->open_width)
    return;
  fputc('\n', p->stream);
  fflush(p->stream);
  p->open_width = 0;
}

void progress_destroy(progress *p)
{
  progress_break(p);
  free(p);
}

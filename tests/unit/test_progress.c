/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_progress.c: the trainer's progress line (trainer/run/progress.c)
 * driven by a clock the test holds: when lines come, what they say, in place
 * on a terminal (\r, blanks over a longer line, a newline before other
 * output) and as plain lines in a log; --progress parsing. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "common/status.h"
#include "trainer/run/progress.h"
#include "tests/unit/check.h"

static progress_point at(long step, double loss)
{
  return (progress_point){.epoch = 2, .step = step, .steps = 100, .samples_per_step = 8, .loss = loss};
}

/* Steps 1..n at one step per second from time 10 (step 1 at 10.0). */
static void run_steps(progress *p, long n, double loss)
{
  for (long s = 1; s <= n; s++) {
    progress_point point = at(s, loss);
    progress_step(p, 9.0 + (double)s, &point);
  }
}

/* A progress line into memory, and what it wrote. */
typedef struct {
  char *text;
  size_t len;
  FILE *out;
} capture;

static progress *capture_start(capture *c, bool terminal, double seconds)
{
  dlpar_error err = {0};
  progress *p = NULL;
  c->text = NULL;
  c->len = 0;
  c->out = open_memstream(&c->text, &c->len);
  CHECK_INT(progress_create(&p, c->out, terminal, seconds, &err), DLPAR_OK);
  return p;
}

static void capture_check(capture *c, progress *p, const char *want)
{
  progress_destroy(p);
  fclose(c->out);
  CHECK_STR(c->text, want);
  free(c->text);
}

static void test_log(void)
{
  capture c;
  progress *p = capture_start(&c, false, 30);
  run_steps(p, 61, 0.5);
  /* the rate counts from step 1: (31 - 1) steps x 8 samples in 30 s; 69 steps of 1 s left */
  capture_check(&c, p, "  step 31/100 of epoch 2: 8.0 samples/s, loss so far 0.5000, 1:09 left in the epoch\n"
                       "  step 61/100 of epoch 2: 8.0 samples/s, loss so far 0.5000, 0:39 left in the epoch\n");
}

static void test_terminal(void)
{
  capture c;
  progress *p = capture_start(&c, true, 0); /* default: every 2 s */
  progress_point last = at(100, 0.25);
  run_steps(p, 3, NAN);
  progress_step(p, 10.0 + 3599.0, &last); /* the epoch's last step: always shown on a terminal */
  progress_break(p);
  progress_break(p); /* nothing left open: no second newline */
  capture_check(&c, p, "\r  step 3/100 of epoch 2: 8.0 samples/s, loss so far not yet, 1:37 left in the epoch"
                       "\r  step 100/100 of epoch 2: 0.2 samples/s, loss so far 0.2500, 0:00 left in the epoch"
                       "\n");
}

/* A shorter line after a longer one blanks the rest of the longer one. */
static void test_terminal_blanks(void)
{
  capture c;
  progress *p = capture_start(&c, true, 1);
  progress_point first = at(1, 123.0), slow = at(2, 123.0), fast = at(3, 1.0);
  progress_step(p, 0, &first);
  progress_step(p, 8000, &slow);  /* 98 steps at 8000 s each: 217:46:40 left */
  progress_step(p, 16000, &fast); /* 97 steps at 8000 s: 215:33:20 */
  capture_check(&c, p, "\r  step 2/100 of epoch 2: 0.0 samples/s, loss so far 123.0000, 217:46:40 left in the epoch"
                       "\r  step 3/100 of epoch 2: 0.0 samples/s, loss so far 1.0000, 215:33:20 left in the epoch  "
                       "\n");
}

/* A new epoch starts a new rate; off creates nothing; --progress values. */
static void test_epochs_and_flags(void)
{
  capture c;
  dlpar_error err = {0};
  progress *p = capture_start(&c, false, 1);
  progress_point next = {.epoch = 3, .step = 1, .steps = 100, .samples_per_step = 8, .loss = NAN};
  double seconds = 99;
  run_steps(p, 1, 1.0);
  progress_step(p, 500, &next); /* validation between: no line, the rate restarts */
  capture_check(&c, p, "");
  CHECK_INT(progress_create(&p, stdout, true, -1, &err), DLPAR_OK);
  CHECK(p == NULL);
  progress_step(p, 1, &next);
  progress_break(p);
  progress_destroy(p);
  CHECK_INT(progress_parse("off", &seconds, &err), DLPAR_OK);
  CHECK(seconds < 0);
  CHECK_INT(progress_parse("on", &seconds, &err), DLPAR_OK);
  CHECK(seconds == 0);
  CHECK_INT(progress_parse("0.5", &seconds, &err), DLPAR_OK);
  CHECK(seconds == 0.5);
  CHECK_INT(progress_parse("false", &seconds, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--progress=false: expected off, on or the seconds between lines (e.g. --progress=10)");
}

int main(void)
{
  test_log();
  test_terminal();
  test_terminal_blanks();
  test_epochs_and_flags();
  return check_report("test_progress");
}

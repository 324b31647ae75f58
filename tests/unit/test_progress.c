/* tests/unit/test_progress.c: the trainer's progress line (trainer/progress.c)
 * driven by a clock the test holds: when lines come, what they say, in place
 * on a terminal (\r, blanks over a longer line, a newline before other
 * output) and as plain lines in a log; --progress parsing. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "launcher/status.h"
#include "trainer/progress.h"
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

static void test_log(void)
{
  char *text = NULL, err[DLPAR_ERRLEN];
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  progress *p;
  CHECK_INT(progress_create(&p, out, false, 30, err, sizeof(err)), DLPAR_OK);
  run_steps(p, 61, 0.5);
  progress_destroy(p);
  fclose(out);
  /* the rate counts from step 1: (31 - 1) steps x 8 samples in 30 s; 69 steps of 1 s left */
  CHECK_STR(text, "  step 31/100 of epoch 2: 8.0 samples/s, loss so far 0.5000, 1:09 left in the epoch\n"
                  "  step 61/100 of epoch 2: 8.0 samples/s, loss so far 0.5000, 0:39 left in the epoch\n");
  free(text);
}

static void test_terminal(void)
{
  char *text = NULL, err[DLPAR_ERRLEN];
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  progress *p;
  progress_point last = at(100, 0.25);
  CHECK_INT(progress_create(&p, out, true, 0, err, sizeof(err)), DLPAR_OK); /* default: every 2 s */
  run_steps(p, 3, NAN);
  progress_step(p, 10.0 + 3599.0, &last); /* the epoch's last step: always shown on a terminal */
  progress_break(p);
  progress_break(p); /* nothing left open: no second newline */
  progress_destroy(p);
  fclose(out);
  CHECK_STR(text, "\r  step 3/100 of epoch 2: 8.0 samples/s, loss so far not yet, 1:37 left in the epoch"
                  "\r  step 100/100 of epoch 2: 0.2 samples/s, loss so far 0.2500, 0:00 left in the epoch"
                  "\n");
  free(text);
}

/* A shorter line after a longer one blanks the rest of the longer one. */
static void test_terminal_blanks(void)
{
  char *text = NULL, err[DLPAR_ERRLEN];
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  progress *p;
  progress_point first = at(1, 123.0), slow = at(2, 123.0), fast = at(3, 1.0);
  CHECK_INT(progress_create(&p, out, true, 1, err, sizeof(err)), DLPAR_OK);
  progress_step(p, 0, &first);
  progress_step(p, 8000, &slow);  /* 98 steps at 8000 s each: 217:46:40 left */
  progress_step(p, 16000, &fast); /* 97 steps at 8000 s: 215:33:20 */
  progress_destroy(p);
  fclose(out);
  CHECK_STR(text, "\r  step 2/100 of epoch 2: 0.0 samples/s, loss so far 123.0000, 217:46:40 left in the epoch"
                  "\r  step 3/100 of epoch 2: 0.0 samples/s, loss so far 1.0000, 215:33:20 left in the epoch  "
                  "\n");
  free(text);
}

/* A new epoch starts a new rate; off creates nothing; --progress values. */
static void test_epochs_and_flags(void)
{
  char *text = NULL, err[DLPAR_ERRLEN] = "";
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  progress *p;
  progress_point next = {.epoch = 3, .step = 1, .steps = 100, .samples_per_step = 8, .loss = NAN};
  double seconds = 99;
  CHECK_INT(progress_create(&p, out, false, 1, err, sizeof(err)), DLPAR_OK);
  run_steps(p, 1, 1.0);
  progress_step(p, 500, &next); /* validation between: no line, the rate restarts */
  progress_destroy(p);
  fclose(out);
  CHECK_STR(text, "");
  free(text);
  CHECK_INT(progress_create(&p, stdout, true, -1, err, sizeof(err)), DLPAR_OK);
  CHECK(p == NULL);
  progress_step(p, 1, &next);
  progress_break(p);
  progress_destroy(p);
  CHECK_INT(progress_parse("off", &seconds, err, sizeof(err)), DLPAR_OK);
  CHECK(seconds < 0);
  CHECK_INT(progress_parse("on", &seconds, err, sizeof(err)), DLPAR_OK);
  CHECK(seconds == 0);
  CHECK_INT(progress_parse("0.5", &seconds, err, sizeof(err)), DLPAR_OK);
  CHECK(seconds == 0.5);
  CHECK_INT(progress_parse("false", &seconds, err, sizeof(err)), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--progress=false: expected off, on or the seconds between lines (e.g. --progress=10)");
}

int main(void)
{
  test_log();
  test_terminal();
  test_terminal_blanks();
  test_epochs_and_flags();
  return check_report("test_progress");
}

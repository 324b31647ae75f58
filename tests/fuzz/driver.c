/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/driver.c: the seeded mutation driver, for machines without
 * clang's libFuzzer: it runs a fuzz target (LLVMFuzzerTestOneInput) over
 * its seed files once each (with --seconds=0 that is all: the replay of
 * `make check`), then over mutations of them (bit flips, bytes, YAML and
 * number tokens inserted, ranges deleted, duplicated or spliced from
 * another seed) for a time, from a seed, so a run can be repeated. No
 * coverage feedback: a weaker search than libFuzzer's, named as such.
 * Every input runs under a per-input timeout (SIGALRM) and an address-space
 * limit (RLIMIT_AS: memory beyond it is a malloc failure the readers must
 * report, not a crash). A crash, an abort or a timeout writes the input to
 * crash-N (or timeout-N) and ends with one line and exit 1.
 * --minimize=FILE --out=MIN shrinks a failing input instead: chunks are
 * cut while the target still fails on what is left (each try in a child).
 *   fuzz_X [--seconds=S] [--seed=N] [--timeout=S] [--max-len=N] [--rss-limit-mb=N] FILE|DIR...
 *   fuzz_X --minimize=FILE --out=MIN [--timeout=S]
 */
#include "config.h"

#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

typedef struct {
  uint8_t *data;
  size_t size;
} input;

typedef struct {
  input *items;
  int n, cap;
} corpus;

typedef struct {
  double seconds;
  unsigned long seed;
  unsigned timeout;
  size_t max_len;
  long rss_limit_mb;
  const char *minimize, *out; /* --minimize: the failing input and where its shrunk form goes */
} options;

/* What the signal handlers need: the input being run (kept by main). */
static const input *running;

static void save_and_exit(const char *what)
{
  char name[64];
  int fd;
  snprintf(name, sizeof(name), "%s-%ld", what, (long)getpid());
  fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && running && write(fd, running->data, running->size) < 0)
    fd = -1;
  fprintf(stderr, "fuzz: %s on an input of %zu bytes, saved as %s\n", what, running ? running->size : 0, name);
  _exit(1);
}

static void on_signal(int sig)
{
  save_and_exit(sig == SIGALRM ? "timeout" : "crash");
}

static unsigned long next_random(unsigned long *state)
{
  *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17; /* xorshift64 */
  return *state;
}

static int add_input(corpus *c, const uint8_t *data, size_t size)
{
  input *items;
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    if (!(items = realloc(c->items, sizeof(input) * (size_t)c->cap)))
      return -1;
    c->items = items;
  }
  if (!(c->items[c->n].data = malloc(size ? size : 1)))
    return -1;
  memcpy(c->items[c->n].data, data, size);
  c->items[c->n++].size = size;
  return 0;
}

static int add_file(corpus *c, const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t *data = NULL;
  long size;
  int rc = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (data = malloc((size_t)size + 1)) && fread(data, 1, (size_t)size, f) == (size_t)size)
    rc = add_input(c, data, (size_t)size);
  free(data);
  if (f)
    fclose(f);
  return rc;
}

static int add_path(corpus *c, const char *path)
{
  struct stat st;
  DIR *dir;
  struct dirent *entry;
  if (stat(path, &st) != 0)
    return -1;
  if (!S_ISDIR(st.st_mode))
    return add_file(c, path);
  if (!(dir = opendir(path)))
    return -1;
  while ((entry = readdir(dir))) {
    char child[4096];
    if (entry->d_name[0] == '.')
      continue;
    snprintf(child, sizeof(child), "%s/%s", path, entry->d_name);
    if (add_file(c, child) != 0) {
      closedir(dir);
      return -1;
    }
  }
  closedir(dir);
  return 0;
}

/* Tokens the readers give meaning to: YAML structure, anchors and merges,
 * numbers at the edges, .npy header words. */
static const char *const tokens[] = {"[", "]", "{", "}", ": ", "- ", "\n  ", "&a ", "*a", "<<: ", "<<: [*a, *a]",
                                     "'", "\"", "#", "~", "None", "-1", "0", "9223372036854775807", "1e309",
                                     "\n--8<--\n", "--lr=", "--img_size=[", "'shape': (", "'<f8'", "'<f4'", ", ", ")"};

/* One mutation of *buf (len bytes, room for max) in place; returns the new length. */
static size_t mutate_once(uint8_t *buf, size_t len, size_t max, const corpus *c, unsigned long *rng)
{
  const unsigned long r = next_random(rng);
  const size_t at = len ? r % (len + 1) : 0, span = 1 + (r >> 20) % 16;
  switch ((r >> 8) % 7) {
  case 0: /* flip a bit */
    if (len)
      buf[at % len] ^= (uint8_t)(1u << ((r >> 16) % 8));
    return len;
  case 1: /* set a byte */
    if (len)
      buf[at % len] = (uint8_t)(r >> 24);
    return len;
  case 2: { /* insert a token */
    const char *token = tokens[(r >> 24) % (sizeof(tokens) / sizeof(tokens[0]))];
    const size_t n = strlen(token);
    if (len + n > max)
      return len;
    memmove(buf + at + n, buf + at, len - at);
    memcpy(buf + at, token, n);
    return len + n;
  }
  case 3: /* delete a range */
    if (at + span > len)
      return len;
    memmove(buf + at, buf + at + span, len - at - span);
    return len - span;
  case 4: /* duplicate a range */
    if (at + span > len || len + span > max)
      return len;
    memmove(buf + at + span, buf + at, len - at);
    return len + span;
  case 5: { /* splice in a range of another seed */
    const input *other = &c->items[(r >> 24) % (unsigned long)c->n];
    const size_t from = other->size ? (r >> 32) % other->size : 0;
    const size_t n = other->size - from < span ? other->size - from : span;
    if (len + n > max)
      return len;
    memmove(buf + at + n, buf + at, len - at);
    memcpy(buf + at, other->data + from, n);
    return len + n;
  }
  default: /* a byte at the edges */
    if (len)
      buf[at % len] = (uint8_t)((r >> 24) % 2 ? 0xff : 0x00);
    return len;
  }
}

static int parse_options(int argc, char **argv, options *o, corpus *c)
{
  *o = (options){.seconds = 10, .seed = 1, .timeout = 10, .max_len = 16384, .rss_limit_mb = 2048};
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--seconds=", 10) == 0)
      o->seconds = atof(argv[i] + 10);
    else if (strncmp(argv[i], "--seed=", 7) == 0)
      o->seed = strtoul(argv[i] + 7, NULL, 10);
    else if (strncmp(argv[i], "--timeout=", 10) == 0)
      o->timeout = (unsigned)atoi(argv[i] + 10);
    else if (strncmp(argv[i], "--max-len=", 10) == 0)
      o->max_len = (size_t)atol(argv[i] + 10);
    else if (strncmp(argv[i], "--rss-limit-mb=", 15) == 0)
      o->rss_limit_mb = atol(argv[i] + 15);
    else if (strncmp(argv[i], "--minimize=", 11) == 0)
      o->minimize = argv[i] + 11;
    else if (strncmp(argv[i], "--out=", 6) == 0)
      o->out = argv[i] + 6;
    else if (add_path(c, argv[i]) != 0) {
      fprintf(stderr, "fuzz: %s: cannot read this seed (give files or directories)\n", argv[i]);
      return -1;
    }
  }
  if (!o->seed)
    o->seed = 1; /* xorshift needs a non-zero state */
  if (o->minimize && (!o->out || add_path(c, o->minimize) != 0 || c->n != 1)) {
    fprintf(stderr, "fuzz: --minimize=FILE needs --out=MIN and a readable FILE\n");
    return -1;
  }
  return c->n || add_input(c, (const uint8_t *)"", 0) == 0 ? 0 : -1;
}

static void run_one(const input *in, unsigned timeout)
{
  running = in;
  alarm(timeout);
  LLVMFuzzerTestOneInput(in->data, in->size);
  alarm(0);
}

/* Whether the target fails (a signal, an abort, the timeout) on the input:
 * run in a child, quietly, with the default signal actions. */
static bool fails_in_child(const input *in, unsigned timeout)
{
  int status;
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDERR_FILENO);
    signal(SIGALRM, SIG_DFL), signal(SIGSEGV, SIG_DFL), signal(SIGBUS, SIG_DFL);
    signal(SIGABRT, SIG_DFL), signal(SIGFPE, SIG_DFL), signal(SIGILL, SIG_DFL);
    alarm(timeout);
    LLVMFuzzerTestOneInput(in->data, in->size);
    _exit(0);
  }
  if (pid < 0) { /* not the target's failure: minimizing cannot go on */
    perror("fuzz: fork");
    exit(2);
  }
  return waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Cuts chunks (halves, then quarters, ... single bytes) while the target
 * still fails on what is left; writes the result to out. */
static int minimize(input *in, unsigned timeout, const char *out)
{
  input cut = {malloc(in->size + 1), 0};
  FILE *f;
  if (!cut.data || !fails_in_child(in, timeout)) {
    fprintf(stderr, "fuzz: %s: the target does not fail on it (nothing to minimize)\n", out);
    return 1;
  }
  for (size_t chunk = in->size / 2; chunk >= 1; chunk /= 2) {
    for (size_t at = 0; at + chunk <= in->size;) {
      memcpy(cut.data, in->data, at);
      memcpy(cut.data + at, in->data + at + chunk, in->size - at - chunk);
      cut.size = in->size - chunk;
      if (fails_in_child(&cut, timeout)) {
        memcpy(in->data, cut.data, cut.size);
        in->size = cut.size;
      } else {
        at += chunk;
      }
    }
  }
  free(cut.data);
  if (!(f = fopen(out, "wb")) || fwrite(in->data, 1, in->size, f) != in->size || fclose(f) != 0) {
    fprintf(stderr, "fuzz: %s: cannot write the minimized input\n", out);
    return 1;
  }
  printf("fuzz: minimized to %zu bytes: %s\n", in->size, out);
  return 0;
}

int main(int argc, char **argv)
{
  options o;
  corpus c = {NULL, 0, 0};
  struct rlimit limit;
  struct rusage usage;
  struct timespec start, now;
  long runs = 0;
  input mutant;
  if (parse_options(argc, argv, &o, &c) != 0)
    return 2;
  limit.rlim_cur = limit.rlim_max = (rlim_t)o.rss_limit_mb << 20;
  setrlimit(RLIMIT_AS, &limit); /* minimizing too: a failure may need the limit */
  if (o.minimize)
    return minimize(&c.items[0], o.timeout, o.out);
  signal(SIGALRM, on_signal), signal(SIGSEGV, on_signal), signal(SIGBUS, on_signal);
  signal(SIGABRT, on_signal), signal(SIGFPE, on_signal), signal(SIGILL, on_signal);
  for (int i = 0; i < c.n; i++, runs++)
    run_one(&c.items[i], o.timeout);
  if (!(mutant.data = malloc(o.max_len)))
    return 2;
  clock_gettime(CLOCK_MONOTONIC, &start);
  now = start;
  while ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) < o.seconds) {
    const input *base = &c.items[next_random(&o.seed) % (unsigned long)c.n];
    const int rounds = 1 + (int)(next_random(&o.seed) % 8);
    mutant.size = base->size < o.max_len ? base->size : o.max_len;
    memcpy(mutant.data, base->data, mutant.size);
    for (int k = 0; k < rounds; k++)
      mutant.size = mutate_once(mutant.data, mutant.size, o.max_len, &c, &o.seed);
    run_one(&mutant, o.timeout);
    runs++;
    clock_gettime(CLOCK_MONOTONIC, &now);
  }
  getrusage(RUSAGE_SELF, &usage);
  {
    const double seconds = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
    printf("fuzz: %ld inputs (%d seeds) in %.0f s, %.0f inputs/s, 0 crashes, 0 timeouts, peak RSS %ld MB\n", runs, c.n,
           seconds, seconds > 0 ? (double)(runs - c.n) / seconds : 0.0, usage.ru_maxrss / 1024);
  }
  for (int i = 0; i < c.n; i++)
    free(c.items[i].data);
  free(c.items);
  free(mutant.data);
  return 0;
}

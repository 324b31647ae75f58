/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_train_args.c: dlpar-train's command line (trainer/config/args.c)
 * and the tutorial's keys it feeds (trainer/config/train_config.c): both value
 * forms, bare booleans, aliases, --data given twice, one-line refusals, the
 * tutorials' verbatim YAML files (etc/tutorial) loading with the flags, and
 * the GPU attention a config resolves to (deterministic, tf32, recompute). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/config/args.h"
#include "trainer/model/model.h"
#include "trainer/config/train_config.h"

/* Parses a NULL-terminated argument list (argv[0] added). */
static int parse(train_args *a, dlpar_error *err, ...)
{
  char *argv[64] = {"dlpar-train"};
  int argc = 1;
  va_list ap;
  va_start(ap, err);
  for (char *arg; (arg = va_arg(ap, char *)) != NULL && argc < 63;)
    argv[argc++] = arg;
  va_end(ap);
  err->text[0] = '\0';
  return args_parse(argc, argv, a, err);
}

static void test_forms(void)
{
  train_args a;
  dlpar_error err = {0};
  CHECK_INT(parse(&a, &err, "--yaml_config", "c.yaml", "--config=short", "--num_epochs", "4",
                  "--num_data_workers=8", "--amp_mode=fp16", "--enable_apex", "--enable_jit", "--run_num", "07",
                  "--enable_fused=false", "--resume", NULL),
            DLPAR_OK);
  CHECK_STR(a.config_file, "c.yaml");
  CHECK_STR(a.config_name, "short");
  CHECK_STR(a.run, "07");
  CHECK(a.resume && !a.benchy);
  CHECK_INT(a.noverrides, 6);
  if (a.noverrides == 6) {
    CHECK_STR(a.overrides[0], "--num_epochs=4");
    CHECK_STR(a.overrides[1], "--num_data_workers=8");
    CHECK_STR(a.overrides[2], "--amp_mode=fp16");
    CHECK_STR(a.overrides[3], "--enable_apex=true");
    CHECK_STR(a.overrides[4], "--enable_jit=true");
    CHECK_STR(a.overrides[5], "--enable_fused=false");
  }
  args_free(&a);
  /* the bare boolean does not swallow the positional file after it */
  CHECK_INT(parse(&a, &err, "--enable_benchy", "--noddp", "c.yaml", "--device", "cpu", NULL), DLPAR_OK);
  CHECK(a.benchy && a.device == DEVICE_CPU);
  CHECK_STR(a.config_file, "c.yaml");
  CHECK_INT(a.noverrides, 1);
  args_free(&a);
  CHECK_INT(parse(&a, &err, "--config=short", "--help", NULL), DLPAR_OK); /* no file needed */
  CHECK(a.help);
  args_free(&a);
}

/* --data twice: 12 overrides (more than a fixed table of slots would hold), the last wins. */
static void test_data_twice(void)
{
  train_args a;
  dlpar_error err = {0};
  CHECK_INT(parse(&a, &err, "c.yaml", "--data=one", "--data", "two", NULL), DLPAR_OK);
  CHECK_INT(a.noverrides, 12);
  if (a.noverrides == 12) {
    CHECK_STR(a.overrides[0], "--train_data_path=one/train");
    CHECK_STR(a.overrides[9], "--global_means_path=two/stats/global_means.npy");
  }
  args_free(&a);
}

static void refused(const char *want, ...)
{
  char *argv[16] = {"dlpar-train"};
  int argc = 1;
  train_args a;
  dlpar_error err = {0};
  va_list ap;
  va_start(ap, want);
  for (char *arg; (arg = va_arg(ap, char *)) != NULL && argc < 15;)
    argv[argc++] = arg;
  va_end(ap);
  CHECK_INT(args_parse(argc, argv, &a, &err), DLPAR_ERR_INPUT);
  CHECK(strchr(err.text, '\n') == NULL);
  if (!strstr(err.text, want)) {
    check_failures++;
    fprintf(stderr, "FAILED: '%s' does not say '%s'\n", err.text, want);
  }
  args_free(&a);
}

static void test_refusals(void)
{
  refused("--nosuch: unknown flag or config key", "c.yaml", "--nosuch=1", NULL);
  refused("--num_epochs: missing its value", "c.yaml", "--num_epochs", NULL);
  refused("--resume takes no value", "c.yaml", "--resume=yes", NULL);
  refused("one config file only", "--yaml_config=a.yaml", "b.yaml", NULL);
  refused("no config file", "--config=short", NULL);
  refused("--run=a/b: a directory name without '/'", "c.yaml", "--run_num=a/b", NULL);
  refused("expected --device=cpu, cuda or auto", "c.yaml", "--device=tpu", NULL);
  refused("one of them", "c.yaml", "--enable_benchy", "--enable_manual_profiling", NULL);
}

/* The SC23 file, verbatim, with the tutorial's flags: keys, aliases, notes, checks. */
static void test_tutorial_yaml(void)
{
  const char *srcdir = getenv("DLPAR_SRCDIR") ? getenv("DLPAR_SRCDIR") : ".";
  char path[4096];
  dlpar_error err = {0};
  char *overrides[] = {"--local_batch_size=3", "--bucket_cap_mb=100", "--tensor_parallel=2", "--noddp=true"};
  const char *notes[16];
  config_set set;
  snprintf(path, sizeof(path), "%s/etc/tutorial/sc23/ViT.yaml", srcdir);
  CHECK_INT(config_load(&set, path, "bs64_opt", overrides, 4, &err), DLPAR_OK);
  CHECK(set.cfg.enable_apex && set.cfg.enable_fused && set.cfg.noddp);
  CHECK_INT(set.cfg.global_batch_size, 64);
  CHECK(set.cfg.bucket_mb == 100);
  CHECK_INT(config_notes(&set.cfg, notes, 16), 4); /* apex, fused, dali, noddp */
  CHECK_INT(config_check(&set, 2, 4, &err), DLPAR_OK);
  CHECK_INT(set.cfg.global_batch_size, 12); /* local 3 x dp 4 */
  CHECK_INT(config_check(&set, 1, 4, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "row_parallel_size=2, but the grid has 1 tensor-parallel rank") != NULL);
  snprintf(path, sizeof(path), "%s/etc/tutorial/sc24/ViT.yaml", srcdir);
  overrides[0] = "--context_parallel=4";
  CHECK_INT(config_load(&set, path, "mp", overrides, 1, &err), DLPAR_OK);
  CHECK_INT(config_check(&set, 1, 1, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "no context parallelism") != NULL);
  CHECK(config_key_is_bool("enable_jit") && config_key_is_bool("disable_broadcast_buffers") &&
        !config_key_is_bool("num_epochs") && config_is_key("bucket_cap_mb"));
}

/* The attention each precision, attention key, tf32 and deterministic
 * resolve to, and the start-up line's words for it. */
static void test_attention_choice(void)
{
  const char *srcdir = getenv("DLPAR_SRCDIR") ? getenv("DLPAR_SRCDIR") : ".";
  static const struct {
    const char *overrides[3];
    attention_kernels kernels;
    int passes;
    bool deterministic;
    const char *said;
  } cases[] = {
      {{"--amp_mode=bf16", "--attention=cudnn", "--deterministic=false"}, ATTENTION_CUDNN, 0, false, "cuDNN 9.19.0"},
      {{"--amp_mode=bf16", "--attention=cudnn", "--deterministic=true"}, ATTENTION_CUDNN, 0, true,
       "cuDNN 9.19.0 (deterministic plans)"},
      {{"--amp_mode=fp16", "--attention=reference", "--deterministic=true"}, ATTENTION_FMA, 0, false,
       "reference kernels"},
      {{"--amp_mode=none", "--attention=cudnn", "--tf32=false"}, ATTENTION_TENSOR_CORES, 3, false,
       "dlpar's tensor-core kernels (3xTF32, fp32-accurate)"},
      {{"--amp_mode=none", "--attention=cudnn", "--allow_tf32=true"}, ATTENTION_TENSOR_CORES, 1, false,
       "dlpar's tensor-core kernels (TF32)"},
      {{"--amp_mode=none", "--attention=reference", "--deterministic=true"}, ATTENTION_FMA, 0, false,
       "reference kernels"},
  };
  char path[4096], said[128];
  dlpar_error err = {0};
  config_set set;
  snprintf(path, sizeof(path), "%s/etc/vit.yaml", srcdir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    attention_choice c;
    CHECK_INT(config_load(&set, path, "base", (char *const *)cases[i].overrides, 3, &err), DLPAR_OK);
    c = attention_resolve(&set.cfg);
    CHECK_INT(c.kernels, cases[i].kernels);
    CHECK_INT(c.passes, cases[i].passes);
    CHECK_INT(c.deterministic, cases[i].deterministic);
    attention_describe(&c, "9.19.0", said, sizeof said);
    CHECK_STR(said, cases[i].said);
  }
  CHECK_INT(attention_without_cudnn().kernels, ATTENTION_FMA); /* deterministic: true, no cuDNN plan */
  /* recompute: gelu by default; none keeps GELU's output; anything else refused in one line */
  CHECK_INT(config_load(&set, path, "base", NULL, 0, &err), DLPAR_OK);
  CHECK_STR(set.cfg.recompute, "gelu");
  {
    char *bad[] = {"--recompute=all"};
    CHECK_INT(config_load(&set, path, "base", bad, 1, &err), DLPAR_OK);
    CHECK_INT(config_check(&set, 1, 1, &err), DLPAR_ERR_INPUT);
    CHECK(strstr(err.text, "recompute=all: expected gelu") != NULL);
  }
}

int main(void)
{
  test_forms();
  test_data_twice();
  test_refusals();
  test_tutorial_yaml();
  test_attention_choice();
  return check_report("test_train_args");
}

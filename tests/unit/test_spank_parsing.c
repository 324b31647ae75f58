/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_spank_parsing.c: the plugin's plain modules without Slurm.
 * It covers admin keys from plugstack.conf in spank/admin.c; the user's --dl-*
 * options in spank/request.c and common/profile.c; the env:// contract's rules
 * and refusals, such as a busy MASTER_PORT, -m arbitrary and a loopback
 * NodeAddr; the quoting of what Slurm's environment holds; Slurm's
 * tasks-per-node text; plugstack.conf as Slurm reads it, with srun's step
 * mark; and the site's network settings per node class in common/netenv.c.
 * For plugstack.conf, spank/plugstack.c gives dlpar-check-config, where a bad
 * line is, and what it does in each context. */
#include "config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"
#include "common/netenv.h"
#include "common/taskenv.h"
#include "spank/admin.h"
#include "spank/hostlist.h"
#include "spank/plugstack.h"
#include "spank/request.h"
#include "tests/unit/check.h"

static void expect_admin_error(const char *arg, const char *message)
{
  dlpar_admin_config config;
  dlpar_error err = {0};
  char *argv[1] = {(char *)arg};
  CHECK_INT(dlpar_admin_config_parse(1, argv, &config, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, message);
}

static void test_admin(void)
{
  dlpar_admin_config config;
  dlpar_error err = {0};
  char *argv[4] = {"tp_span=warn", "topology_xml=/etc/dlpar/node.xml", "bind_cpus=no", "profile_dir=/scratch/prof"};
  CHECK_INT(dlpar_admin_config_parse(0, NULL, &config, &err), DLPAR_OK);
  CHECK(config.tp_span == DLPAR_SPAN_ERROR && config.bind_cpus && config.bind_nic);
  CHECK_INT(dlpar_admin_config_parse(4, argv, &config, &err), DLPAR_OK);
  CHECK(config.tp_span == DLPAR_SPAN_WARN && !config.bind_cpus);
  CHECK_STR(config.topology_xml, "/etc/dlpar/node.xml");
  CHECK_STR(config.profile_dir, "/scratch/prof");
  expect_admin_error("torch_ports=80-90", "plugstack.conf: torch_ports=80-90: expected a port range LO-HI within "
                     "1024-65535 (e.g. torch_ports=20000-29399)");
  expect_admin_error("torch_ports=30000-20000", "plugstack.conf: torch_ports=30000-20000: expected a port range LO-HI "
                     "within 1024-65535 (e.g. torch_ports=20000-29399)");
  expect_admin_error("colour=blue", "plugstack.conf: unknown key 'colour' (known: tp_span, topology_xml, profile_dir, bind_cpus, bind_nic, torch_ports, env.VAR[@NODES])");
  expect_admin_error("tp_span=maybe", "plugstack.conf: tp_span=maybe: expected error, warn or allow");
  expect_admin_error("bind_nic=perhaps", "plugstack.conf: bind_nic=perhaps: expected yes or no");
  /* yes or no only, as the docs and the error say */
  expect_admin_error("bind_cpus=true", "plugstack.conf: bind_cpus=true: expected yes or no");
  expect_admin_error("bind_cpus=1", "plugstack.conf: bind_cpus=1: expected yes or no");
  expect_admin_error("bind_nic=0", "plugstack.conf: bind_nic=0: expected yes or no");
  expect_admin_error("topology_xml=relative.xml", "plugstack.conf: topology_xml=relative.xml: expected an absolute path");
  expect_admin_error("tp_span", "plugstack.conf: 'tp_span' is not key=value (e.g. tp_span=warn)");
}

static int parse(const char *parallel, const char *profile, const char *steps, const char *ranks,
                 dlpar_profile_request *req, dlpar_error *err)
{
  dlpar_user_options options = {0};
  dlpar_request parsed;
  int rc;
  if (parallel)
    dlpar_user_value_store(&options.value[DLPAR_OPT_PARALLEL], parallel);
  if (profile)
    dlpar_user_value_store(&options.value[DLPAR_OPT_PROFILE], profile);
  if (steps)
    dlpar_user_value_store(&options.value[DLPAR_OPT_PROFILE_STEPS], steps);
  if (ranks)
    dlpar_user_value_store(&options.value[DLPAR_OPT_PROFILE_RANKS], ranks);
  rc = dlpar_request_parse(&options, &parsed, err);
  *req = parsed.profile;
  return rc;
}

static void test_request(void)
{
  dlpar_profile_request req;
  char huge[4000];
  dlpar_error err = {0};
  CHECK_INT(parse("2x2", "nsys", "30-40", "0,3", &req, &err), DLPAR_OK);
  CHECK(req.tool == DLPAR_PROFILE_NSYS && req.first_step == 30 && req.last_step == 40);
  CHECK(dlpar_profile_selects(&req, 3) && !dlpar_profile_selects(&req, 1));
  CHECK_INT(dlpar_profile_check(&req, 3, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile-ranks: rank 3 does not exist in a step of 3 tasks (use ranks 0-2)");
  CHECK_INT(parse(NULL, "nvtx", NULL, NULL, &req, &err), DLPAR_OK);
  CHECK(dlpar_profile_selects(&req, 0) && !dlpar_profile_selects(&req, 1));
  CHECK_INT(parse(NULL, "perf", NULL, NULL, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile=perf: unknown profiler (use nsys, nvtx or off)");
  CHECK_INT(parse(NULL, "nsys", "40-30", NULL, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile-steps=40-30: the range is empty (use A-B with A <= B, e.g. 30-40)");
  CHECK_INT(parse(NULL, "nsys", "30", NULL, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile-steps=30: expected a step range A-B (e.g. --dl-profile-steps=30-40)");
  CHECK_INT(parse(NULL, "nsys", NULL, "x", &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile-ranks=x: expected ranks like 0,2,4-7 or all (e.g. --dl-profile-ranks=0)");
  CHECK_INT(parse(NULL, NULL, "1-2", NULL, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-profile-steps needs a profiler (add --dl-profile=nsys or --dl-profile=nvtx)");
  memset(huge, '7', sizeof(huge) - 1);
  huge[sizeof(huge) - 1] = '\0';
  CHECK_INT(parse(huge, NULL, NULL, NULL, &req, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "value too long") != NULL);
}

static void test_tasks_per_node(void)
{
  int counts[8];
  CHECK_INT(dlpar_parse_tasks_per_node("2(x3),1", counts, 8), 4);
  CHECK(counts[0] == 2 && counts[2] == 2 && counts[3] == 1);
  CHECK_INT(dlpar_parse_tasks_per_node("4", counts, 8), 1);
  CHECK_INT(dlpar_parse_tasks_per_node("2(x9)", counts, 8), -1);
  CHECK_INT(dlpar_parse_tasks_per_node("2(3)", counts, 8), -1);
  CHECK_INT(dlpar_parse_tasks_per_node("", counts, 8), -1);
}

/* --dl-check: bare, which is the SPANK callback's NULL optarg, =only, =off, else an error; exported and imported. */
static void test_check(void)
{
  const char *texts[] = {NULL, "", "on", "only", "off"};
  const dlpar_check_mode modes[] = {DLPAR_CHECK_ON, DLPAR_CHECK_ON, DLPAR_CHECK_ON, DLPAR_CHECK_ONLY, DLPAR_CHECK_OFF};
  dlpar_user_options options = {0};
  dlpar_user_value *env_option = &options.value[DLPAR_OPT_ENV], *check_option = &options.value[DLPAR_OPT_CHECK];
  dlpar_request req = {.check = DLPAR_CHECK_ON, .torch_env = false};
  dlpar_task_env env = {.grid = {2, 2}, .local_size = 1}, back;
  dlpar_env_list list;
  dlpar_error err = {0};
  bool present;
  CHECK_INT(dlpar_request_parse(&options, &req, &err), DLPAR_OK);
  CHECK(req.check == DLPAR_CHECK_OFF && req.torch_env && !dlpar_user_options_active(&options));
  dlpar_user_value_store(env_option, "none");
  CHECK_INT(dlpar_request_parse(&options, &req, &err), DLPAR_OK);
  CHECK(!req.torch_env && dlpar_user_options_active(&options));
  dlpar_user_value_store(env_option, "torchrun");
  CHECK_INT(dlpar_request_parse(&options, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text,
            "--dl-env=torchrun: expected torch (export MASTER_ADDR, MASTER_PORT, RANK... for env://) or none");
  env_option->given = false;
  for (int i = 0; i < 5; i++) {
    dlpar_user_value_store(check_option, texts[i]);
    CHECK_INT(dlpar_request_parse(&options, &req, &err), DLPAR_OK);
    CHECK(req.check == modes[i] && dlpar_user_options_active(&options));
  }
  dlpar_user_value_store(check_option, "sometimes");
  CHECK_INT(dlpar_request_parse(&options, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-check=sometimes: expected nothing (check, then run), 'only' (check and stop) or 'off'");
  env.options.check = DLPAR_CHECK_ONLY;
  dlpar_task_env_export(&env, &list);
  for (int i = 0; i < list.count; i++)
    setenv(list.var[i].name, list.var[i].value, 1);
  CHECK_INT(dlpar_task_env_import(&back, &present, &err), DLPAR_OK);
  CHECK(present && back.options.check == DLPAR_CHECK_ONLY);
}

/* torch_ports inside this node's ephemeral ports, from ip_local_port_range,
 * are refused on every srun, as any bad admin value is. */
static void test_torch_ports_ephemeral(void)
{
  dlpar_admin_config config;
  char arg[64], want[DLPAR_ERRLEN];
  dlpar_error err = {0};
  char *argv[1] = {arg};
  int lo, hi;
  CHECK_INT(dlpar_ephemeral_ports(&lo, &hi), DLPAR_OK);
  snprintf(arg, sizeof(arg), "torch_ports=%d-%d", lo, lo < 65535 ? lo + 1 : lo);
  CHECK_INT(dlpar_admin_config_parse(1, argv, &config, &err), DLPAR_ERR_INPUT);
  snprintf(want, sizeof(want), "plugstack.conf: %s overlaps the kernel's ephemeral ports %d-%d", arg, lo, hi);
  CHECK(strncmp(err.text, want, strlen(want)) == 0);
}

/* The env:// contract's rules in slurmstepd, from spank/master.c, and srun. */
static void test_master_rules(void)
{
  dlpar_error err = {0};
  CHECK_INT(dlpar_busy_port_verdict(12000, true, false, 65534, 1000, "n1", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "MASTER_PORT 12000, the port Slurm reserved for this step, is in use on n1, where rank 0 runs: "
                      "ending the step (another process took it; run the step again, which gets other ports, or export "
                      "MASTER_PORT)");
  CHECK_INT(dlpar_busy_port_verdict(21234, false, true, 1000, 1000, "n1", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "MASTER_PORT 21234 (derived from job and step) is in use on n1, where rank 0 runs: ending the "
                      "step (run srun with --resv-ports=1 so Slurm reserves a port per step, which needs "
                      "MpiParams=ports in slurm.conf, or export MASTER_PORT)");
  CHECK_INT(dlpar_busy_port_verdict(21234, false, false, 1000, 1000, "n1", &err), DLPAR_WARN);
  CHECK_STR(err.text, "MASTER_PORT 21234 (derived from job and step) is in use on n1, where rank 0 runs: env:// cannot "
                      "open its store there, programs that do not use it run on (for env://: srun --resv-ports=1, "
                      "which needs MpiParams=ports in slurm.conf, or export MASTER_PORT; without env://: --dl-env=none)");
  /* another user's listener, or one nobody can name, ends the step whatever --dl-env says */
  CHECK_INT(dlpar_busy_port_verdict(21234, false, false, 65534, 1000, "n1", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "MASTER_PORT 21234 (derived from job and step) is held on n1, where rank 0 runs, by another user "
                      "(uid 65534): ending the step before any task starts, so no rank connects to it (run srun with "
                      "--resv-ports=1 so Slurm reserves a port per step, which needs MpiParams=ports in slurm.conf; or "
                      "--dl-env=none, with dlpar.torch.init_process_group() for torch.distributed, which needs no "
                      "port)");
  CHECK_INT(dlpar_busy_port_verdict(21234, false, true, 0, 1000, "n1", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "by another user (uid 0): ending the step before any task starts") != NULL);
  CHECK_INT(dlpar_busy_port_verdict(21234, false, false, -1, 1000, "n1", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "by a socket whose owner this node does not show: ending the step") != NULL);
  CHECK_INT(dlpar_busy_port_verdict(21234, false, false, 0, 0, "n1", &err), DLPAR_WARN); /* root's job, root's port */
  CHECK_INT(dlpar_distribution_refusal("arbitrary", true, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "-m arbitrary may put rank 0 off the step's first node, whose address MASTER_ADDR is "
                      "(--dl-env=torch, the default): use a block, cyclic or plane distribution, or --dl-env=none and "
                      "your own MASTER_ADDR");
  CHECK_INT(dlpar_distribution_refusal("arbitrary", false, &err), DLPAR_OK);
  CHECK_INT(dlpar_distribution_refusal("block", true, &err), DLPAR_OK);
  CHECK_INT(dlpar_distribution_refusal("plane=2", true, &err), DLPAR_OK);
  CHECK_INT(dlpar_distribution_refusal(NULL, true, &err), DLPAR_OK);
  /* a loopback NodeAddr is no MASTER_ADDR for a step of several nodes; on one node it is */
  CHECK_INT(dlpar_master_addr_warning("n1", "127.0.1.1", 2, &err), DLPAR_WARN);
  CHECK_STR(err.text, "MASTER_ADDR: node n1's address 127.0.1.1 is loopback, which the other nodes cannot reach (its "
                      "NodeAddr, or its name where NodeAddr is unset, resolves so, e.g. in /etc/hosts): set "
                      "NodeAddr=ADDRESS for n1 in slurm.conf, or export your own MASTER_ADDR");
  CHECK_INT(dlpar_master_addr_warning("n1", "::1", 4, &err), DLPAR_WARN);
  CHECK_INT(dlpar_master_addr_warning("n1", "127.0.1.1", 1, &err), DLPAR_OK);
  CHECK_INT(dlpar_master_addr_warning("n1", "10.77.0.11", 2, &err), DLPAR_OK);
}

/* Whether text is one line of valid, printable UTF-8, with no byte left of a
 * character cut in two and nothing dlpar_quote would escape. */
static int valid_one_line(const char *text)
{
  char shown[2 * DLPAR_ERRLEN];
  return strcmp(dlpar_quote(text, shown, sizeof(shown)), text) == 0;
}

/* The plugin's refusals that name what Slurm's environment holds, such as
 * SLURM_MPI_TYPE and SLURM_HET_SIZE, quote it with dlpar_show: one line,
 * escaped, cut at a character with "...". They used to be "%.32s" and "%.8s",
 * which passed a newline through and cut "1234567\xc3\xa9" to a lone 0xC3.
 * The rest of the quoting test is tests/unit/test_quoting.c, which is built
 * with the trainer; these run in a plugin-only build too. */
static void test_refusals_quoted(void)
{
  char long_mpi[300];
  dlpar_error err = {0};
  dlpar_pmix_refusal("pmi2\nlevel=error \xe2\x80\xa8 \xe2\x80\xae\xc2\x85", &err);
  CHECK_STR(err.text, "--dl-parallel needs PMIx but the step uses --mpi=pmi2\\nlevel=error \\xe2\\x80\\xa8 "
                      "\\xe2\\x80\\xae\\xc2\\x85 (use --mpi=pmix, or ask the admin for MpiDefault=pmix)");
  memset(long_mpi, 'x', sizeof(long_mpi) - 1);
  long_mpi[sizeof(long_mpi) - 1] = '\0';
  dlpar_pmix_refusal(long_mpi, &err);
  CHECK(strstr(err.text, "xxx... (use --mpi=pmix") != NULL && valid_one_line(err.text));
  CHECK_INT(dlpar_het_refusal("1234567\xc3\xa9", "9", 4, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-* options do not support heterogeneous steps (srun A : B, --het-group=0,1; here 9 tasks in "
                      "1234567\xc3\xa9 components): run the parallel program as a step of one component (srun "
                      "--het-group=N)");
  CHECK(valid_one_line(err.text));
  CHECK_INT(dlpar_busy_port_verdict(21234, false, false, 7, 7, "n1\n\xe2\x80\xa8", &err), DLPAR_WARN);
  CHECK(strstr(err.text, "in use on n1\\n\\xe2\\x80\\xa8, where") != NULL && valid_one_line(err.text));
}

/* A key given twice is refused, naming both; two different keys are not. */
static void test_admin_twice(void)
{
  dlpar_admin_config config;
  dlpar_error err = {0};
  char *twice[3] = {"tp_span=warn", "bind_nic=no", "tp_span=allow"}, *same[2] = {"bind_cpus=no", "bind_cpus=no"};
  char *prefix[2] = {"bind_cpus=no", "bind_cpus_x=1"};
  CHECK_INT(dlpar_admin_config_parse(3, twice, &config, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: tp_span given twice (tp_span=warn, then tp_span=allow): keep one");
  CHECK_INT(dlpar_admin_config_parse(2, same, &config, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: bind_cpus given twice (bind_cpus=no, then bind_cpus=no): keep one");
  CHECK_INT(dlpar_admin_config_parse(2, prefix, &config, &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "unknown key 'bind_cpus_x'") != NULL);
  CHECK_INT(dlpar_admin_config_parse(2, twice, &config, &err), DLPAR_OK);
}

static char plugstack_dir[] = "/tmp/dlpar-plugstack.XXXXXX";

/* dir/name with text; its path in path, of PATH_LEN bytes. */
#define PATH_LEN 4200
static void write_file(const char *name, const char *text, char *path)
{
  FILE *file;
  snprintf(path, PATH_LEN, "%s/%s", plugstack_dir, name);
  file = fopen(path, "w");
  CHECK(file != NULL);
  if (file) {
    fputs(text, file);
    fclose(file);
  }
}

/* conf.d/dlpar.conf holds text: dlpar-check-config on stack refuses it with want. */
static void expect_check_refusal(const char *stack, const char *text, const char *want)
{
  char path[PATH_LEN], msg[8192];
  write_file("conf.d/dlpar.conf", text, path);
  CHECK_INT(dlpar_plugstack_check(stack, msg, sizeof(msg)), DLPAR_ERR_INPUT);
  CHECK_STR(msg, want);
}

/* plugstack.conf as Slurm reads it: PlugStackConfig or else the file beside
 * slurm.conf, includes relative to the including file, comments, a missing
 * include. dlpar's line is checked as dlpar-check-config does, with the place
 * the plugin's refusal names. */
static void test_plugstack_files(void)
{
  char slurm_conf[PATH_LEN], stack[PATH_LEN], snippet[PATH_LEN], plugin[PATH_LEN], other[PATH_LEN], text[PATH_LEN];
  char out[PATH_LEN], msg[8192], want[8192];
  dlpar_error err = {0};
  char *args[2] = {"tp_span=warn", "bind_nic=no"}, *fewer[1] = {"tp_span=warn"};
  dlpar_plugstack_entry entry;
  CHECK(mkdtemp(plugstack_dir) != NULL);
  snprintf(text, sizeof(text), "%s/conf.d", plugstack_dir);
  CHECK_INT(mkdir(text, 0755), 0);
  write_file(DLPAR_PLUGIN_FILE, "", plugin);
  /* slurm.conf: the key in any case, a comment after it; else plugstack.conf beside it */
  write_file("slurm.conf", "ClusterName=x\n  plugstackconfig = /etc/other/stack.conf # moved\n", slurm_conf);
  CHECK_INT(dlpar_plugstack_path(slurm_conf, out, sizeof(out), &err), DLPAR_OK);
  CHECK_STR(out, "/etc/other/stack.conf");
  write_file("slurm.conf", "ClusterName=x\n#PlugStackConfig=/nowhere\nPlugStackConfigX=/nowhere\n", slurm_conf);
  CHECK_INT(dlpar_plugstack_path(slurm_conf, out, sizeof(out), &err), DLPAR_OK);
  snprintf(want, sizeof(want), "%s/plugstack.conf", plugstack_dir);
  CHECK_STR(out, want);
  CHECK_INT(dlpar_plugstack_path("/nonexistent/slurm.conf", out, sizeof(out), &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "/nonexistent/slurm.conf: cannot read it (No such file or directory): name slurm.conf in "
                      "SLURM_CONF, or give the file to check");
  /* Debian's layout: plugstack.conf includes conf.d/ *.conf, a relative glob */
  write_file("plugstack.conf", "# Slurm's\ninclude conf.d/*.conf\ninclude missing/*.conf\n", stack);
  write_file("conf.d/other.conf", "required /usr/lib/spank_other.so a=1\n", other);
  snprintf(text, sizeof(text), "# dlpar\n\n  required\t%s tp_span=warn   bind_nic=no # the admin's\n", plugin);
  write_file("conf.d/dlpar.conf", text, snippet);
  CHECK_INT(dlpar_plugstack_read(stack, &entry, &err), DLPAR_OK);
  CHECK(entry.count == 1 && entry.line == 3 && entry.required && entry.argc == 2);
  CHECK_STR(entry.file, snippet);
  CHECK_STR(entry.plugin, plugin);
  CHECK_STR(entry.argv[1], "bind_nic=no");
  CHECK_INT(dlpar_plugstack_check(stack, msg, sizeof(msg)), DLPAR_OK);
  snprintf(want, sizeof(want), "%s:3: ok: required %s tp_span=warn bind_nic=no", snippet, plugin);
  CHECK_STR(msg, want);
  dlpar_plugstack_where(slurm_conf, 2, args, out, sizeof(out));
  snprintf(want, sizeof(want), "line 3 of %s", snippet);
  CHECK_STR(out, want);
  /* other arguments than the line's: this process read another file */
  dlpar_plugstack_where(slurm_conf, 1, fewer, out, sizeof(out));
  CHECK_STR(out, "the spank_dlpar.so line of plugstack.conf");
  dlpar_plugstack_where("/nonexistent/slurm.conf", 2, args, out, sizeof(out));
  CHECK_STR(out, "the spank_dlpar.so line of plugstack.conf");
  /* what dlpar-check-config refuses, in one line each */
  snprintf(text, sizeof(text), "required %s torch_port=20000-20999\n", plugin);
  snprintf(want, sizeof(want), "%s:1: plugstack.conf: unknown key 'torch_port' (known: tp_span, topology_xml, "
           "profile_dir, bind_cpus, bind_nic, torch_ports, env.VAR[@NODES])", snippet);
  expect_check_refusal(stack, text, want);
  snprintf(text, sizeof(text), "optional %s\n", plugin);
  snprintf(want, sizeof(want), "%s:1: optional: Slurm ignores an optional plugin's refusals and launches the steps "
           "dlpar refused; write required", snippet);
  expect_check_refusal(stack, text, want);
  snprintf(want, sizeof(want), "%s:1: /nonexistent/spank_dlpar.so: No such file or directory (install dlpar's "
           "plugin there, or correct the path): Slurm would fail every srun and sbatch, and slurmd would not start",
           snippet);
  expect_check_refusal(stack, "required /nonexistent/spank_dlpar.so\n", want);
  snprintf(text, sizeof(text), "required %s\nrequired %s\n", plugin, plugin);
  snprintf(want, sizeof(want), "%s:2: a second spank_dlpar.so line (the first is %s:1): Slurm loads the first "
           "only; keep one", snippet, snippet);
  expect_check_refusal(stack, text, want);
  snprintf(text, sizeof(text), "# required %s\n", plugin);
  snprintf(want, sizeof(want), "%s: no spank_dlpar.so line, nor in the files it includes: dlpar is not enabled "
           "there", stack);
  expect_check_refusal(stack, text, want);
  /* a file that includes itself is a loop, not a hang */
  snprintf(want, sizeof(want), "%s: includes nested deeper than 8 (does a file include itself?)", snippet);
  expect_check_refusal(stack, "include dlpar.conf\n", want);
  CHECK_INT(dlpar_plugstack_check("/nonexistent/plugstack.conf", msg, sizeof(msg)), DLPAR_ERR_INPUT);
  CHECK_STR(msg, "/nonexistent/plugstack.conf: cannot read it (No such file or directory)");
  unlink(snippet);
  unlink(other);
  unlink(stack);
  unlink(slurm_conf);
  unlink(plugin);
  snprintf(text, sizeof(text), "%s/conf.d", plugstack_dir);
  CHECK_INT(rmdir(text), 0);
  CHECK_INT(rmdir(plugstack_dir), 0);
}

/* What a bad line does in each context, in the words each one prints. */
static void test_config_refusal(void)
{
  const char *error = "plugstack.conf: unknown key 'torch_port' (known: tp_span, topology_xml, profile_dir, "
                      "bind_cpus, bind_nic, torch_ports)";
  const char *where = "line 1 of /etc/slurm/plugstack.conf.d/dlpar.conf";
  char out[DLPAR_ERRLEN];
  char want[DLPAR_ERRLEN];
  dlpar_config_refusal(DLPAR_READER_SLURMD, error, where, NULL, out, sizeof(out));
  snprintf(want, sizeof(want), "warning: %s (%s): slurmd runs on, and srun, sbatch, salloc and slurmstepd refuse "
           "every --dl-* option until the admin corrects it (dlpar-check-config checks the file)", error, where);
  CHECK_STR(out, want);
  dlpar_config_refusal(DLPAR_READER_CLIENT, error, where, NULL, out, sizeof(out));
  snprintf(want, sizeof(want), "%s (%s): every --dl-* option is refused until the admin corrects it "
           "(dlpar-check-config checks the file); steps without them run", error, where);
  CHECK_STR(out, want);
  dlpar_config_refusal(DLPAR_READER_NODE, error, where, "n1", out, sizeof(out));
  snprintf(want, sizeof(want), "%s (%s on n1): n1 refuses every --dl-* step until the admin corrects it "
           "(dlpar-check-config checks the file)", error, where);
  CHECK_STR(out, want);
  dlpar_config_refusal(DLPAR_READER_NODE_BEHIND, error, where, "n1", out, sizeof(out));
  snprintf(want, sizeof(want), "%s (%s on n1): srun accepted the step where it runs, so n1 reads the line "
           "otherwise (Slurm needs the same plugstack.conf on every node): n1 refuses every --dl-* step until the "
           "admin corrects it", error, where);
  CHECK_STR(out, want);
}

/* A task without the DLPAR_* contract whose srun accepted --dl-* options
 * for this very step, as DLPAR_SRUN_STEP says: its node ran no plugin. */
static void test_srun_mark(void)
{
  dlpar_task_env env;
  dlpar_error err = {0};
  bool present = true;
  unsetenv("DLPAR_VERSION");
  setenv("SLURM_JOB_ID", "12", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURMD_NODENAME", "n2", 1);
  setenv(DLPAR_SRUN_STEP, "12.3", 1);
  CHECK_INT(dlpar_task_env_import(&env, &present, &err), DLPAR_ERR_INPUT);
  CHECK(!present);
  CHECK_STR(err.text, "srun accepted --dl-* options for step 12.3, but dlpar's plugin did not run on n2: its "
                      "plugstack.conf has no spank_dlpar.so line, and Slurm needs the same plugstack.conf on every "
                      "node (ask the admin)");
  /* another step's mark, which a nested srun inherits: a plain run */
  setenv("SLURM_STEP_ID", "4", 1);
  CHECK_INT(dlpar_task_env_import(&env, &present, &err), DLPAR_OK);
  CHECK(!present);
  unsetenv(DLPAR_SRUN_STEP);
  setenv("SLURM_STEP_ID", "3", 1);
  CHECK_INT(dlpar_task_env_import(&env, &present, &err), DLPAR_OK);
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
  unsetenv("SLURMD_NODENAME");
}

/* Whether Slurm's parser puts host in list; false too where it refuses list. */
static bool slurm_has(const char *list, const char *host)
{
  bool has = false;
  return dlpar_slurm_hostlist_has(list, host, &has) == DLPAR_OK && has;
}

/* libslurm's host-list parser leaks a few bytes of a list it refuses, such as
 * "n[3-1]" in Slurm 22.05's _parse_single_range, which no caller can free.
 * dlpar's own memory stays under LeakSanitizer. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
  return "leak:libslurm.so\n";
}

/* plugstack.conf's node classes: Slurm's own parser decides who is in one.
 * It expands "rack[1-2]-n[1-2]" and "x[0-2]y[0-1]", which dlpar's own matcher
 * did not. dlpar_hostlist_syntax refuses what Slurm's parser takes wrongly,
 * as when "n[1-3" became the host "n]", or refuses with a log line only. */
static void test_hostlists(void)
{
  dlpar_error err = {0};
  bool has;
  CHECK(slurm_has("gpu[01-16]", "gpu01") && slurm_has("gpu[01-16]", "gpu16"));
  CHECK(!slurm_has("gpu[01-16]", "gpu1") && !slurm_has("gpu[01-16]", "gpu17"));
  CHECK(slurm_has("n[1-3,7],login1", "n7") && slurm_has("n[1-3,7],login1", "login1"));
  CHECK(!slurm_has("n[1-3,7],login1", "n4") && !slurm_has("n[1-3,7],login1", "n01"));
  CHECK(!slurm_has("n[1-3,7],login1", "login10") && !slurm_has("n[1-3]", "nx"));
  CHECK_INT(dlpar_slurm_hostlist_has("n[1-2000000000]", "n2", &has), DLPAR_ERR_INPUT); /* Slurm's own rule */
  CHECK(slurm_has("n[8-12]", "n10") && slurm_has("n1", "n1") && !slurm_has("n1", "n10"));
  CHECK(slurm_has("rack[1-2]-n[1-2]", "rack2-n1") && slurm_has("rack[1-2]-n[1-2]", "rack1-n2"));
  CHECK(!slurm_has("rack[1-2]-n[1-2]", "rack3-n1") && !slurm_has("rack[1-2]-n[1-2]", "rack1-n3"));
  CHECK(slurm_has("x[0-2]y[0-1]", "x2y1") && slurm_has("x[0-2]y[0-1]", "x0y0") && !slurm_has("x[0-2]y[0-1]", "x3y0"));
  CHECK_INT(dlpar_slurm_hostlist_has("n[3-1]", "n2", &has), DLPAR_ERR_INPUT);
  /* the grammar, before any parser */
  CHECK_INT(dlpar_hostlist_syntax("env.X@K", "gpu[01-16],rack[1-2]-n[1-8],login1,x[0-2]y[0-1],a_b.c", &err), DLPAR_OK);
  CHECK_INT(dlpar_hostlist_syntax("env.NCCL_IB_HCA@n[1-3", "n[1-3", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: env.NCCL_IB_HCA@n[1-3: the host list n[1-3 is malformed (a '[' without its ']'): "
                      "write it as Slurm does, e.g. gpu[01-16],rack[1-2]-n[1-8],login1");
  CHECK_INT(dlpar_hostlist_syntax("k", "n[3-1]", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "the host list n[3-1] is malformed (the range 3-1 runs backwards)") != NULL);
  CHECK_INT(dlpar_hostlist_syntax("k", "n1-3]", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "is malformed (a ']' without its '[')") != NULL);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[1-2],,n5", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "is malformed (an empty name between commas)") != NULL);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[1-2],", &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[]", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "is malformed (the range '' is not N or LO-HI)") != NULL);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[a-b]", &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[1-]", &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[1-2-3]", &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_hostlist_syntax("k", "n[1[2]]", &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_hostlist_syntax("k", "n*", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "is malformed ('*' is no host name character)") != NULL);
  expect_admin_error("env.NCCL_IB_HCA@n[1-2000000000]=mlx5_0", "plugstack.conf: env.NCCL_IB_HCA@n[1-2000000000]: Slurm's "
                     "host list parser refuses n[1-2000000000]: write it as Slurm does, e.g. "
                     "gpu[01-16],rack[1-2]-n[1-8],login1");
  expect_admin_error("env.NCCL_IB_HCA@n[3-1]=mlx5_0", "plugstack.conf: env.NCCL_IB_HCA@n[3-1]: the host list n[3-1] "
                     "is malformed (the range 3-1 runs backwards): write it as Slurm does, e.g. "
                     "gpu[01-16],rack[1-2]-n[1-8],login1");
  /* the classes against each other and the cluster */
  {
    dlpar_net_config net = {0};
    CHECK_INT(dlpar_net_add(&net, "env.NCCL_IB_HCA@rack[1-2]-n[1-2]", "mlx5_0", &err), DLPAR_OK);
    CHECK_INT(dlpar_net_add(&net, "env.NCCL_IB_HCA@x[0-2]y[0-1]", "mlx5_1", &err), DLPAR_OK);
    CHECK_INT(dlpar_net_add(&net, "env.UCX_TLS@rack1-n2", "rc", &err), DLPAR_OK);
    CHECK_INT(dlpar_slurm_net_classes_check(&net, NULL, &err), DLPAR_OK);
    CHECK_INT(dlpar_slurm_net_classes_check(&net, "rack[1-4]-n[1-4],x[0-9]y[0-9]", &err), DLPAR_OK);
    CHECK_INT(dlpar_slurm_net_classes_check(&net, "rack[1-4]-n[1-4]", &err), DLPAR_ERR_INPUT);
    CHECK_STR(err.text, "plugstack.conf: env.NCCL_IB_HCA@x[0-2]y[0-1]: no node of the cluster (rack[1-4]-n[1-4]) is "
                        "in x[0-2]y[0-1], so this setting would never apply: correct the class, or drop it until its "
                        "nodes are in slurm.conf");
    CHECK_INT(dlpar_net_add(&net, "env.NCCL_IB_HCA@x[2-3]y[1],z", "mlx5_2", &err), DLPAR_OK);
    CHECK_INT(dlpar_slurm_net_classes_check(&net, NULL, &err), DLPAR_ERR_INPUT);
    CHECK_STR(err.text, "plugstack.conf: env.NCCL_IB_HCA@x[0-2]y[0-1] and env.NCCL_IB_HCA@x[2-3]y[1],z share x2y1 (and "
                        "maybe more): a node in two classes of one variable fails every step there; make the classes "
                        "disjoint");
  }
}

static void test_network_settings(void)
{
  char *argv[5] = {"env.NCCL_SOCKET_IFNAME=lo", "env.NCCL_SOCKET_IFNAME@gpu[01-16]=ib", "env.NCCL_IB_HCA@gpu[01-16]=mlx5_0,mlx5_1",
                   "env.UCX_TLS=rc,sm", "env.GLOO_SOCKET_IFNAME@n[1-2]=nosuch0"};
  dlpar_admin_config config;
  dlpar_net_config node;
  dlpar_error err = {0};
  CHECK_INT(dlpar_admin_config_parse(5, argv, &config, &err), DLPAR_OK);
  CHECK_INT(config.net.count, 5);
  CHECK_INT(dlpar_net_for_node(&config.net, "gpu07", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_INT(node.count, 3);
  CHECK_STR(dlpar_net_find(&node, "NCCL_SOCKET_IFNAME")->value, "ib");
  CHECK_STR(dlpar_net_find(&node, "NCCL_IB_HCA")->value, "mlx5_0,mlx5_1");
  CHECK_STR(dlpar_net_find(&node, "UCX_TLS")->value, "rc,sm");
  CHECK(dlpar_net_find(&node, "GLOO_SOCKET_IFNAME") == NULL);
  CHECK_INT(dlpar_net_for_node(&config.net, "login1", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_STR(dlpar_net_find(&node, "NCCL_SOCKET_IFNAME")->value, "lo");
  CHECK(dlpar_net_find(&node, "NCCL_IB_HCA") == NULL);
  CHECK_INT(dlpar_net_check_interfaces(&node, "login1", &err), DLPAR_OK); /* lo: every Linux host has it */
  CHECK_INT(dlpar_net_for_node(&config.net, "n2", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_INT(dlpar_net_check_interfaces(&node, "n2", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: env.GLOO_SOCKET_IFNAME@n[1-2]=nosuch0: n2 has no such interface (`ip link` "
            "on it lists them): fix the line or the node");
  /* NCCL's list syntax: an exclusion finds nothing to check; =exact must match whole */
  config.net.count = 0;
  CHECK_INT(dlpar_net_add(&config.net, "env.NCCL_SOCKET_IFNAME", "^docker,lo", &err), DLPAR_OK);
  CHECK_INT(dlpar_net_for_node(&config.net, "x", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_INT(dlpar_net_check_interfaces(&node, "x", &err), DLPAR_OK);
  config.net.count = 0;
  CHECK_INT(dlpar_net_add(&config.net, "env.NCCL_SOCKET_IFNAME", "=l", &err), DLPAR_OK);
  CHECK_INT(dlpar_net_for_node(&config.net, "x", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_INT(dlpar_net_check_interfaces(&node, "x", &err), DLPAR_ERR_INPUT);
  /* a node in two classes of one variable */
  config.net.count = 0;
  CHECK_INT(dlpar_net_add(&config.net, "env.NCCL_IB_HCA@n[1-4]", "mlx5_0", &err), DLPAR_OK);
  CHECK_INT(dlpar_net_add(&config.net, "env.NCCL_IB_HCA@n[4-8]", "mlx5_1", &err), DLPAR_OK);
  CHECK_INT(dlpar_net_for_node(&config.net, "n3", dlpar_slurm_hostlist_has, &node, &err), DLPAR_OK);
  CHECK_INT(dlpar_net_for_node(&config.net, "n4", dlpar_slurm_hostlist_has, &node, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: n4 is in two classes of NCCL_IB_HCA (n[1-4] and n[4-8]): make them disjoint");
  expect_admin_error("env.NCCL_SOCKET_IFNAM=ib0", "plugstack.conf: env.NCCL_SOCKET_IFNAM: NCCL reads no "
                   "NCCL_SOCKET_IFNAM (NCCL would ignore it): did you mean NCCL_SOCKET_IFNAME?");
  expect_admin_error("env.NCCL_IB_HCAS=mlx5_0", "plugstack.conf: env.NCCL_IB_HCAS: NCCL reads no NCCL_IB_HCAS (NCCL "
                   "would ignore it): did you mean NCCL_IB_HCA?");
  expect_admin_error("env.CUDA_VISIBLE_DEVICES=0", "plugstack.conf: env.CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES is "
                   "not a network setting (env. takes NCCL_*, UCX_* and GLOO_SOCKET_IFNAME)");
  expect_admin_error("env.NCCL_IB_HCA@=mlx5_0", "plugstack.conf: env.NCCL_IB_HCA@=mlx5_0: expected env.VAR=VALUE or "
                   "env.VAR@NODES=VALUE (e.g. env.NCCL_SOCKET_IFNAME@gpu[01-16]=ib0)");
  expect_admin_error("env.UCX_TLS=", "plugstack.conf: env.UCX_TLS=: expected env.VAR=VALUE or env.VAR@NODES=VALUE "
                   "(e.g. env.NCCL_SOCKET_IFNAME@gpu[01-16]=ib0)");
}

int main(void)
{
  test_admin();
  test_hostlists();
  test_network_settings();
  test_admin_twice();
  test_plugstack_files();
  test_config_refusal();
  test_srun_mark();
  test_torch_ports_ephemeral();
  test_master_rules();
  test_refusals_quoted();
  test_request();
  test_check();
  test_tasks_per_node();
  return check_report("test_spank_parsing");
}

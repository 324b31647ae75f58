/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_spank_parsing.c: the plugin's plain modules without Slurm:
 * admin keys from plugstack.conf (spank/admin.c), the user's --dl-* options
 * (spank/request.c, common/profile.c) and Slurm's tasks-per-node text. */
#include "config.h"

#include "common/status.h"
#include "spank/admin.h"
#include "spank/request.h"
#include "tests/unit/check.h"

static void expect_admin_error(const char *arg, const char *message)
{
  dlpar_admin_config config;
  char err[DLPAR_ERRLEN] = "";
  char *argv[1] = {(char *)arg};
  CHECK_INT(dlpar_admin_config_parse(1, argv, &config, err, sizeof(err)), DLPAR_ERR_INPUT);
  CHECK_STR(err, message);
}

static void test_admin(void)
{
  dlpar_admin_config config;
  char err[DLPAR_ERRLEN];
  char *argv[4] = {"tp_span=warn", "topology_xml=/etc/dlpar/node.xml", "bind_cpus=no", "profile_dir=/scratch/prof"};
  CHECK_INT(dlpar_admin_config_parse(0, NULL, &config, err, sizeof(err)), DLPAR_OK);
  CHECK(config.tp_span == DLPAR_SPAN_ERROR && config.bind_cpus && config.bind_nic);
  CHECK_INT(dlpar_admin_config_parse(4, argv, &config, err, sizeof(err)), DLPAR_OK);
  CHECK(config.tp_span == DLPAR_SPAN_WARN && !config.bind_cpus);
  CHECK_STR(config.topology_xml, "/etc/dlpar/node.xml");
  CHECK_STR(config.profile_dir, "/scratch/prof");
  expect_admin_error("torch_ports=80-90", "plugstack.conf: torch_ports=80-90: expected a port range LO-HI within "
                     "1024-65535 (e.g. torch_ports=20000-29399)");
  expect_admin_error("torch_ports=30000-20000", "plugstack.conf: torch_ports=30000-20000: expected a port range LO-HI "
                     "within 1024-65535 (e.g. torch_ports=20000-29399)");
  expect_admin_error("colour=blue", "plugstack.conf: unknown key 'colour' (known: tp_span, topology_xml, profile_dir, bind_cpus, bind_nic, torch_ports)");
  expect_admin_error("tp_span=maybe", "plugstack.conf: tp_span=maybe: expected error, warn or allow");
  expect_admin_error("bind_nic=perhaps", "plugstack.conf: bind_nic=perhaps: expected yes or no");
  expect_admin_error("topology_xml=relative.xml", "plugstack.conf: topology_xml=relative.xml: expected an absolute path");
  expect_admin_error("tp_span", "plugstack.conf: 'tp_span' is not key=value (e.g. tp_span=warn)");
}

static int parse(const char *parallel, const char *profile, const char *steps, const char *ranks,
                 dlpar_profile_request *req, char *err)
{
  dlpar_user_options options = {0};
  dlpar_grid_request grid;
  if (parallel)
    dlpar_user_value_store(&options.parallel, parallel);
  if (profile)
    dlpar_user_value_store(&options.profile, profile);
  if (steps)
    dlpar_user_value_store(&options.profile_steps, steps);
  if (ranks)
    dlpar_user_value_store(&options.profile_ranks, ranks);
  dlpar_check_mode check;
  bool torch_env;
  return dlpar_request_parse(&options, &grid, req, &check, &torch_env, err, DLPAR_ERRLEN);
}

static void test_request(void)
{
  dlpar_profile_request req;
  char err[DLPAR_ERRLEN] = "", huge[4000];
  CHECK_INT(parse("2x2", "nsys", "30-40", "0,3", &req, err), DLPAR_OK);
  CHECK(req.tool == DLPAR_PROFILE_NSYS && req.first_step == 30 && req.last_step == 40);
  CHECK(dlpar_profile_selects(&req, 3) && !dlpar_profile_selects(&req, 1));
  CHECK_INT(dlpar_profile_check(&req, 3, err, DLPAR_ERRLEN), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile-ranks: rank 3 does not exist in a step of 3 tasks (use ranks 0-2)");
  CHECK_INT(parse(NULL, "nvtx", NULL, NULL, &req, err), DLPAR_OK);
  CHECK(dlpar_profile_selects(&req, 0) && !dlpar_profile_selects(&req, 1));
  CHECK_INT(parse(NULL, "perf", NULL, NULL, &req, err), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile=perf: unknown profiler (use nsys, nvtx or off)");
  CHECK_INT(parse(NULL, "nsys", "40-30", NULL, &req, err), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile-steps=40-30: the range is empty (use A-B with A <= B, e.g. 30-40)");
  CHECK_INT(parse(NULL, "nsys", "30", NULL, &req, err), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile-steps=30: expected a step range A-B (e.g. --dl-profile-steps=30-40)");
  CHECK_INT(parse(NULL, "nsys", NULL, "x", &req, err), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile-ranks=x: expected ranks like 0,2,4-7 or all (e.g. --dl-profile-ranks=0)");
  CHECK_INT(parse(NULL, NULL, "1-2", NULL, &req, err), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-profile-steps needs a profiler (add --dl-profile=nsys or --dl-profile=nvtx)");
  memset(huge, '7', sizeof(huge) - 1);
  huge[sizeof(huge) - 1] = '\0';
  CHECK_INT(parse(huge, NULL, NULL, NULL, &req, err), DLPAR_ERR_INPUT);
  CHECK(strstr(err, "value too long") != NULL);
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

/* --dl-check: bare (the SPANK callback's NULL optarg), =only, =off, else an error; exported and imported. */
static void test_check(void)
{
  const char *texts[] = {NULL, "", "on", "only", "off"};
  const dlpar_check_mode modes[] = {DLPAR_CHECK_ON, DLPAR_CHECK_ON, DLPAR_CHECK_ON, DLPAR_CHECK_ONLY, DLPAR_CHECK_OFF};
  dlpar_user_options options = {0};
  dlpar_grid_request grid;
  dlpar_profile_request req;
  dlpar_check_mode check = DLPAR_CHECK_ON;
  dlpar_task_env env = {.grid = {2, 2}, .local_size = 1}, back;
  dlpar_env_list list;
  char err[DLPAR_ERRLEN] = "";
  bool present, torch_env = false;
  CHECK_INT(dlpar_request_parse(&options, &grid, &req, &check, &torch_env, err, DLPAR_ERRLEN), DLPAR_OK);
  CHECK(check == DLPAR_CHECK_OFF && torch_env && !dlpar_user_options_active(&options));
  dlpar_user_value_store(&options.env, "none");
  CHECK_INT(dlpar_request_parse(&options, &grid, &req, &check, &torch_env, err, DLPAR_ERRLEN), DLPAR_OK);
  CHECK(!torch_env && dlpar_user_options_active(&options));
  dlpar_user_value_store(&options.env, "torchrun");
  CHECK_INT(dlpar_request_parse(&options, &grid, &req, &check, &torch_env, err, DLPAR_ERRLEN), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-env=torchrun: expected torch (export MASTER_ADDR, MASTER_PORT, RANK... for env://) or none");
  options.env.given = false;
  for (int i = 0; i < 5; i++) {
    dlpar_user_value_store(&options.check, texts[i]);
    CHECK_INT(dlpar_request_parse(&options, &grid, &req, &check, &torch_env, err, DLPAR_ERRLEN), DLPAR_OK);
    CHECK(check == modes[i] && dlpar_user_options_active(&options));
  }
  dlpar_user_value_store(&options.check, "sometimes");
  CHECK_INT(dlpar_request_parse(&options, &grid, &req, &check, &torch_env, err, DLPAR_ERRLEN), DLPAR_ERR_INPUT);
  CHECK_STR(err, "--dl-check=sometimes: expected nothing (check, then run), 'only' (check and stop) or 'off'");
  env.check = DLPAR_CHECK_ONLY;
  dlpar_task_env_export(&env, &list);
  for (int i = 0; i < list.count; i++)
    setenv(list.var[i].name, list.var[i].value, 1);
  CHECK_INT(dlpar_task_env_import(&back, &present, err, DLPAR_ERRLEN), DLPAR_OK);
  CHECK(present && back.check == DLPAR_CHECK_ONLY);
}

int main(void)
{
  test_admin();
  test_request();
  test_check();
  test_tasks_per_node();
  return check_report("test_spank_parsing");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_topo.c: the rank -> GPU / CPUs / NIC mapping on synthetic
 * hwloc topologies (the XML files in tests/topo), checked exactly, and the environment
 * contract between launchers and the library (export, then import). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/status.h"
#include "common/taskenv.h"
#include "common/topo.h"
#include "common/torchenv.h"
#include "tests/unit/check.h"

static void load(const char *name, dlpar_topology *topo)
{
  char path[4096], err[DLPAR_ERRLEN] = "";
  const char *srcdir = getenv("DLPAR_SRCDIR");
  snprintf(path, sizeof(path), "%s/tests/topo/%s", srcdir ? srcdir : ".", name);
  CHECK_INT(dlpar_topology_load(path, topo, err, sizeof(err)), DLPAR_OK);
  if (err[0])
    fprintf(stderr, "%s\n", err);
}

typedef struct {
  int gpu, device;
  const char *cpus, *nic;
} expected_binding;

static void expect_map(const dlpar_topology *topo, const int *step_gpus, int nstep, int local_size,
                       const expected_binding *want, const char *visible)
{
  for (int rank = 0; rank < local_size; rank++) {
    dlpar_binding b;
    char err[DLPAR_ERRLEN];
    CHECK_INT(dlpar_map_task(topo, step_gpus, nstep, rank, local_size, &b, err, sizeof(err)), DLPAR_OK);
    CHECK_INT(b.gpu, want[rank].gpu);
    CHECK_INT(b.device, want[rank].device);
    CHECK_STR(b.cpus, want[rank].cpus);
    CHECK_STR(b.nic, want[rank].nic);
    CHECK_STR(b.visible, visible);
    CHECK_STR(b.node_nics, topo->all_nics); /* NCCL_IB_HCA: one list for every rank of the node */
  }
}

/* 8 GPUs, 2 sockets x 16 cores, 4 HCAs (one per PCI switch of 2 GPUs). */
static void test_dgx_like(void)
{
  dlpar_topology topo;
  static const expected_binding want[8] = {
      {0, 0, "0-15", "mlx5_0"},  {1, 1, "0-15", "mlx5_0"},  {2, 2, "0-15", "mlx5_1"},
      {3, 3, "0-15", "mlx5_1"},  {4, 4, "16-31", "mlx5_2"}, {5, 5, "16-31", "mlx5_2"},
      {6, 6, "16-31", "mlx5_3"}, {7, 7, "16-31", "mlx5_3"}};
  static const int second_half[4] = {7, 5, 4, 6};
  static const expected_binding want_half[4] = {
      {4, 0, "16-31", "mlx5_2"}, {5, 1, "16-31", "mlx5_2"}, {6, 2, "16-31", "mlx5_3"}, {7, 3, "16-31", "mlx5_3"}};
  load("8gpu-2socket.xml", &topo);
  CHECK_INT(topo.ngpus, 8);
  CHECK_STR(topo.gpu[0].busid, "0000:11:00.0");
  CHECK_STR(topo.gpu[7].busid, "0000:b2:00.0");
  CHECK_INT(topo.gpu[5].numa, 1);
  CHECK_STR(topo.all_nics, "mlx5_0,mlx5_1,mlx5_2,mlx5_3");
  expect_map(&topo, NULL, 0, 8, want, "0,1,2,3,4,5,6,7");
  /* a step given GPUs 4-7 (in any order): devices index the visible list */
  expect_map(&topo, second_half, 4, 4, want_half, "4,5,6,7");
}

/* 4 GPUs on one socket; the only HCA sits under the second switch. */
static void test_one_socket(void)
{
  dlpar_topology topo;
  static const expected_binding want[4] = {
      {0, 0, "0-7", "mlx5_0"}, {1, 1, "0-7", "mlx5_0"}, {2, 2, "0-7", "mlx5_0"}, {3, 3, "0-7", "mlx5_0"}};
  load("4gpu-1socket.xml", &topo);
  CHECK_INT(topo.ngpus, 4);
  CHECK_STR(topo.all_nics, "mlx5_0");
  expect_map(&topo, NULL, 0, 4, want, "0,1,2,3");
}

/* Bus order alternates sockets: consecutive local ranks (a tensor-parallel
 * group) must still get GPUs of the same socket. */
static void test_interleaved(void)
{
  dlpar_topology topo;
  static const expected_binding want[4] = {
      {0, 0, "0-3", ""}, {2, 2, "0-3", ""}, {1, 1, "4-7", ""}, {3, 3, "4-7", ""}};
  load("4gpu-interleaved.xml", &topo);
  CHECK_STR(topo.all_nics, "");
  expect_map(&topo, NULL, 0, 4, want, "0,1,2,3");
}

static void test_sharing_and_errors(void)
{
  dlpar_topology topo;
  dlpar_binding b;
  char err[DLPAR_ERRLEN];
  const int missing[1] = {9};
  load("bed-node.xml", &topo);
  CHECK_INT(dlpar_map_task(&topo, NULL, 0, 5, 6, &b, err, sizeof(err)), DLPAR_WARN);
  CHECK_INT(b.gpu, 1);
  CHECK_STR(err, "6 tasks share 4 GPUs on this node: GPU 1 is shared (request one GPU per task, e.g. --gpus-per-node=6)");
  CHECK_INT(dlpar_map_task(&topo, missing, 1, 0, 1, &b, err, sizeof(err)), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_topology_load("/nonexistent.xml", &topo, err, sizeof(err)), DLPAR_ERR_INPUT);
  CHECK_STR(err, "topology /nonexistent.xml: not a readable hwloc XML file (check the topology_xml key)");
}

static void test_cpu_list(void)
{
  unsigned char mask[64];
  int ids[8];
  CHECK_INT(dlpar_parse_cpu_list("0-3,8", mask, 64), 5);
  CHECK(mask[3] && !mask[4] && mask[8]);
  CHECK_INT(dlpar_parse_cpu_list("x", mask, 64), -1);
  CHECK_INT(dlpar_parse_id_list("0,1,3", ids, 8), 3);
  CHECK_INT(ids[2], 3);
  CHECK_INT(dlpar_parse_id_list("0,,1", ids, 8), -1);
}

static void test_env_roundtrip(void)
{
  dlpar_task_env out = {0}, in;
  dlpar_env_list list;
  bool present;
  char err[DLPAR_ERRLEN];
  out.grid = (dlpar_grid){2, 3};
  out.rank = 5;
  out.local_rank = 1;
  out.local_size = 2;
  out.span = DLPAR_SPAN_WARN;
  out.binding.gpu = 3;
  out.binding.device = 1;
  snprintf(out.binding.visible, sizeof(out.binding.visible), "2,3");
  snprintf(out.binding.nic, sizeof(out.binding.nic), "mlx5_1");
  snprintf(out.binding.node_nics, sizeof(out.binding.node_nics), "mlx5_0,mlx5_1");
  out.profile = DLPAR_PROFILE_NSYS;
  out.profile_this_rank = true;
  out.profile_first_step = 30;
  out.profile_last_step = 40;
  snprintf(out.profile_output, sizeof(out.profile_output), "/p/dlpar-7.0.rank5");
  for (const char *const *name = dlpar_torch_names; *name; name++)
    unsetenv(*name);
  dlpar_task_env_export(&out, &list); /* torch_env off: none of the torch names */
  for (int i = 0; i < list.count; i++)
    CHECK(!dlpar_env_is_torch_name(list.var[i].name));
  out.torch_env = true;
  out.node_rank = 2;
  snprintf(out.master_addr, sizeof(out.master_addr), "10.1.2.3");
  out.master_port = 20077;
  snprintf(out.gloo_ifname, sizeof(out.gloo_ifname), "ib0");
  dlpar_task_env_export(&out, &list);
  for (int i = 0; i < list.count; i++)
    setenv(list.var[i].name, list.var[i].value, 1);
  CHECK_STR(getenv("DLPAR_TP_RANK"), "1");
  CHECK_STR(getenv("DLPAR_DP_RANK"), "2");
  CHECK_STR(getenv("WORLD_SIZE"), "6");
  CHECK_STR(getenv("RANK"), "5");
  CHECK_STR(getenv("LOCAL_RANK"), "1");
  CHECK_STR(getenv("LOCAL_WORLD_SIZE"), "2");
  CHECK_STR(getenv("GROUP_RANK"), "2");
  CHECK_STR(getenv("NODE_RANK"), "2");
  CHECK_STR(getenv("MASTER_ADDR"), "10.1.2.3");
  CHECK_STR(getenv("MASTER_PORT"), "20077");
  CHECK_STR(getenv("GLOO_SOCKET_IFNAME"), "ib0");
  CHECK_STR(getenv("CUDA_VISIBLE_DEVICES"), "2,3");
  CHECK_STR(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  CHECK_STR(getenv("NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
  CHECK_STR(getenv("UCX_NET_DEVICES"), "mlx5_1:1");
  CHECK_INT(dlpar_task_env_import(&in, &present, err, sizeof(err)), DLPAR_OK);
  CHECK(present);
  CHECK(in.grid.tp == 2 && in.grid.dp == 3 && in.rank == 5 && in.local_rank == 1);
  CHECK(in.binding.device == 1 && in.span == DLPAR_SPAN_WARN && in.profile == DLPAR_PROFILE_NSYS);
  CHECK(in.profile_this_rank && in.profile_first_step == 30 && in.profile_last_step == 40);
  CHECK_STR(in.profile_output, "/p/dlpar-7.0.rank5");
  setenv("DLPAR_VERSION", "2", 1);
  CHECK_INT(dlpar_task_env_import(&in, &present, err, sizeof(err)), DLPAR_ERR_INPUT);
  CHECK_STR(err, "the launcher exported dlpar environment version 2 but this libdlpar reads version 1 "
                 "(rebuild the program against the installed libdlpar)");
  setenv("DLPAR_VERSION", "1", 1);
  setenv("DLPAR_RANK", "6", 1);
  CHECK_INT(dlpar_task_env_import(&in, &present, err, sizeof(err)), DLPAR_ERR_INPUT);
  unsetenv("DLPAR_VERSION");
  CHECK_INT(dlpar_task_env_import(&in, &present, err, sizeof(err)), DLPAR_OK);
  CHECK(!present);
}

/* The env:// contract's ports and interfaces (common/torchenv.h). */
static void test_torch_env(void)
{
  char ifname[32], addr[64];
  int port, lo, hi;
  char err[DLPAR_ERRLEN];
  CHECK_INT(dlpar_resv_ports_first("12000-12003"), 12000);
  CHECK_INT(dlpar_resv_ports_first("12005,12000"), 12005);
  CHECK_INT(dlpar_resv_ports_first("12000"), 12000);
  CHECK_INT(dlpar_resv_ports_first(""), 0);
  CHECK_INT(dlpar_resv_ports_first(NULL), 0);
  CHECK_INT(dlpar_resv_ports_first("x12"), 0);
  CHECK_INT(dlpar_resv_ports_first("99999"), 0);
  /* the same on every node; consecutive steps of a job apart, wrapping inside the range */
  CHECK_INT(dlpar_torch_port_derive(7, 0, 20000, 29399), 20000 + 7 * 64);
  CHECK_INT(dlpar_torch_port_derive(7, 1, 20000, 29399), 20000 + 7 * 64 + 1);
  CHECK_INT(dlpar_torch_port_derive(4000000000u, 3, 20000, 20009), 20000 + (int)((4000000000ull * 64 + 3) % 10));
  for (uint32_t step = 0; step < 100; step++) {
    port = dlpar_torch_port_derive(123456, step, 20000, 29399);
    CHECK(port >= 20000 && port <= 29399);
  }
  CHECK_INT(dlpar_port_range_parse("torch_ports", "21000-21010", &lo, &hi, err, sizeof(err)), DLPAR_OK);
  CHECK(lo == 21000 && hi == 21010);
  CHECK_INT(dlpar_port_range_parse("torch_ports", "21000", &lo, &hi, err, sizeof(err)), DLPAR_ERR_INPUT);
  /* a port the kernel picks is free; held by a listener, it is not */
  port = dlpar_port_pick();
  CHECK(port > 0 && dlpar_port_free(port));
  {
    struct sockaddr_in where = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&where, sizeof(where)) == 0 && listen(fd, 1) == 0);
    CHECK(!dlpar_port_free(port));
    close(fd);
  }
  CHECK_INT(dlpar_route_ifname("127.0.0.1", ifname, sizeof(ifname)), DLPAR_OK);
  CHECK_STR(ifname, "lo");
  CHECK_INT(dlpar_route_ifname("not-an-address", ifname, sizeof(ifname)), DLPAR_ERR_SYSTEM);
  CHECK_INT(dlpar_numeric_address("127.0.0.1", addr, sizeof(addr)), DLPAR_OK);
  CHECK_STR(addr, "127.0.0.1");
  CHECK_INT(dlpar_numeric_address("localhost", addr, sizeof(addr)), DLPAR_OK);
  CHECK(strcmp(addr, "127.0.0.1") == 0 || strcmp(addr, "::1") == 0);
}

int main(void)
{
  test_dgx_like();
  test_one_socket();
  test_interleaved();
  test_sharing_and_errors();
  test_cpu_list();
  test_env_roundtrip();
  test_torch_env();
  return check_report("test_topo");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_topo.c: the rank -> GPU / CPUs / NIC mapping on synthetic
 * hwloc topologies, the XML files in tests/topo, checked exactly. Also the environment
 * contract between launchers and the library: export, then import. */
#include "config.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/status.h"
#include "common/taskenv.h"
#include "common/topo.h"
#include "common/torchenv.h"
#include "tests/unit/check.h"

static void load(const char *name, dlpar_topology *topo)
{
  char path[4096];
  dlpar_error err = {0};
  const char *srcdir = getenv("DLPAR_SRCDIR");
  snprintf(path, sizeof(path), "%s/tests/topo/%s", srcdir ? srcdir : ".", name);
  CHECK_INT(dlpar_topology_load(path, topo, &err), DLPAR_OK);
  if (err.text[0])
    fprintf(stderr, "%s\n", err.text);
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
    dlpar_error err = {0};
    CHECK_INT(dlpar_map_task(topo, step_gpus, nstep, rank, local_size, &b, &err), DLPAR_OK);
    CHECK_INT(b.gpu, want[rank].gpu);
    CHECK_INT(b.device, want[rank].device);
    CHECK_STR(b.cpus, want[rank].cpus);
    CHECK_STR(b.nic, want[rank].nic);
    CHECK_STR(b.visible, visible);
    CHECK_STR(b.node_nics, topo->all_nics); /* NCCL_IB_HCA: one list for every rank of the node */
  }
}

/* 8 GPUs, 2 sockets x 16 cores, 4 HCAs, one per PCI switch of 2 GPUs. */
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
  /* a step given GPUs 4-7 in any order: devices index the visible list */
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

/* Bus order alternates sockets. Consecutive local ranks, a tensor-parallel
 * group, must still get GPUs of the same socket, and CUDA_VISIBLE_DEVICES
 * lists them in that order. Then cuda:LOCAL_RANK, the device numbered by the
 * local rank, is the GPU whose CPUs and NIC the rank is bound to, not the GPU
 * at that place in bus order. */
static void test_interleaved(void)
{
  dlpar_topology topo;
  static const expected_binding want[4] = {
      {0, 0, "0-3", ""}, {2, 1, "0-3", ""}, {1, 2, "4-7", ""}, {3, 3, "4-7", ""}};
  static const expected_binding want_bed[4] = {
      {0, 0, "0", "mlx5_0"}, {2, 1, "0", "mlx5_0"}, {1, 2, "1", "mlx5_1"}, {3, 3, "1", "mlx5_1"}};
  load("4gpu-interleaved.xml", &topo);
  CHECK_STR(topo.all_nics, "");
  expect_map(&topo, NULL, 0, 4, want, "0,2,1,3");
  for (int i = 0; i < 4; i++) /* the GPU at each visible place is on the rank's socket */
    CHECK_INT(topo.gpu[want[i].gpu].package, i / 2);
  load("bed-interleaved.xml", &topo); /* the same on the bed's node of tests/integration/spank_admin.sh */
  CHECK_STR(topo.all_nics, "mlx5_0,mlx5_1");
  expect_map(&topo, NULL, 0, 4, want_bed, "0,2,1,3");
}

static void test_sharing_and_errors(void)
{
  dlpar_topology topo;
  dlpar_binding b;
  dlpar_error err = {0};
  const int missing[1] = {9};
  load("bed-node.xml", &topo);
  CHECK_INT(dlpar_map_task(&topo, NULL, 0, 5, 6, &b, &err), DLPAR_WARN);
  CHECK_INT(b.gpu, 1);
  CHECK_STR(err.text, "6 tasks share 4 GPUs on this node: GPU 1 is shared (request one GPU per task, e.g. "
                      "--gpus-per-node=6)");
  CHECK_INT(dlpar_map_task(&topo, missing, 1, 0, 1, &b, &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_topology_load("/nonexistent.xml", &topo, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "topology /nonexistent.xml: not a readable hwloc XML file (check the topology_xml key)");
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
  dlpar_error err = {0};
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
  out.options.torch_env = true;
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
  CHECK_INT(dlpar_task_env_import(&in, &present, &err), DLPAR_OK);
  CHECK(present);
  CHECK(in.grid.tp == 2 && in.grid.dp == 3 && in.rank == 5 && in.local_rank == 1);
  CHECK(in.binding.device == 1 && in.span == DLPAR_SPAN_WARN && in.profile == DLPAR_PROFILE_NSYS);
  CHECK(in.profile_this_rank && in.profile_first_step == 30 && in.profile_last_step == 40);
  CHECK_STR(in.profile_output, "/p/dlpar-7.0.rank5");
  setenv("DLPAR_VERSION", "2", 1);
  CHECK_INT(dlpar_task_env_import(&in, &present, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "the launcher exported dlpar environment version 2 but this libdlpar reads version 1 (rebuild "
                      "the program against the installed libdlpar)");
  setenv("DLPAR_VERSION", "1", 1);
  setenv("DLPAR_RANK", "6", 1);
  CHECK_INT(dlpar_task_env_import(&in, &present, &err), DLPAR_ERR_INPUT);
  unsetenv("DLPAR_VERSION");
  CHECK_INT(dlpar_task_env_import(&in, &present, &err), DLPAR_OK);
  CHECK(!present);
}

/* A listener of family on addr:port, with IPV6_V6ONLY set as v6only for IPv6,
 * as another process might hold it: dlpar_port_free must say busy. */
static void expect_busy(int port, int family, const char *addr, bool v6only)
{
  struct sockaddr_storage where;
  socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  const int only = v6only, fd = socket(family, SOCK_STREAM, 0);
  memset(&where, 0, sizeof(where));
  where.ss_family = (sa_family_t)family;
  if (family == AF_INET) {
    ((struct sockaddr_in *)&where)->sin_port = htons((uint16_t)port);
    CHECK(inet_pton(AF_INET, addr, &((struct sockaddr_in *)&where)->sin_addr) == 1);
  } else {
    ((struct sockaddr_in6 *)&where)->sin6_port = htons((uint16_t)port);
    CHECK(inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&where)->sin6_addr) == 1);
  }
  CHECK(fd >= 0 && (family == AF_INET || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only)) == 0) &&
        bind(fd, (struct sockaddr *)&where, len) == 0 && listen(fd, 1) == 0);
  if (dlpar_port_free(port))
    fprintf(stderr, "test_topo: port %d held on %s (v6only %d) was said free\n", port, addr, v6only);
  CHECK(!dlpar_port_free(port));
  if (fd >= 0)
    close(fd);
}

static bool ipv6_here(void)
{
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  close(fd);
  return true;
}

/* Derived ports collide as rarely as the range allows, whatever the job
 * ids. Two jobs' step 0 meet with probability near 1/span. The formula
 * LO + (job x 64 + step) mod span met at 8/span, since gcd(64, 9400) = 8.
 * A job's later steps meet the next job's step 0 no more often; with that
 * formula, job J's step 64 was always job J+1's step 0. The ids are
 * consecutive, as slurmctld hands them out. */
static void test_port_collisions(void)
{
  enum { JOBS = 200000, SPAN = 9400, NEIGHBOURS = 20000, STEPS = 128 };
  static long count[SPAN];
  double same = 0, rate;
  long meets = 0;
  const double expected_meets = (double)NEIGHBOURS * STEPS / SPAN;
  for (uint32_t job = 1000; job < 1000 + JOBS; job++)
    count[dlpar_torch_port_derive(job, 0, 20000, 20000 + SPAN - 1) - 20000]++;
  for (int p = 0; p < SPAN; p++)
    same += (double)count[p] * (double)(count[p] - 1) / 2;
  rate = same / ((double)JOBS * (JOBS - 1) / 2);
  for (uint32_t job = 1000; job < 1000 + NEIGHBOURS; job++) {
    const int next = dlpar_torch_port_derive(job + 1, 0, 20000, 20000 + SPAN - 1);
    for (uint32_t step = 1; step <= STEPS; step++)
      meets += dlpar_torch_port_derive(job, step, 20000, 20000 + SPAN - 1) == next;
  }
  printf("test_topo: derived ports: step 0 of two jobs meet at %.3g (1/span %.3g); a job's steps 1-%d meet the "
         "next job's step 0 %ld times in %d jobs (expected about %.0f)\n", rate, 1.0 / SPAN, STEPS, meets,
         NEIGHBOURS, expected_meets);
  CHECK(rate > 0.9 / SPAN && rate < 1.1 / SPAN);
  CHECK(meets > expected_meets / 2 && meets < expected_meets * 2);
}

/* Who listens on a port, as dlpar_port_listener in common/torchenv.h says:
 * from the kernel's table format, another user's listener over the user's own,
 * only LISTEN rows, IPv6 rows too; then this process's own listener, live. */
static void test_port_listener(void)
{
  static const char table[] =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:5208 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 11 1 0 100 0 0 10 0\n"
      "   1: 0B4D0A0A:5209 0C4D0A0A:9C40 01 00000000:00000000 00:00000000 00000000  4242        0 12 1 0 20 4 30 10 -1\n"
      "   2: 00000000:5209 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 13 1 0 100 0 0 10 0\n"
      "   3: 00000000000000000000000000000000:520A 00000000000000000000000000000000:0000 0A 00000000:00000000 "
      "00:00000000 00000000 65534        0 14 1 0 100 0 0 10 0\n"
      "   4: 00000000:520B 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 15 1 0 100 0 0 10 0\n"
      "   5: 00000000:520B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 16 1 0 100 0 0 10 0\n";
  struct sockaddr_in where;
  long holder = 0;
  int port;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK_INT(dlpar_port_listener_parse(table, 0x5208, 1000, &holder), DLPAR_OK);
  CHECK_INT(holder, 1000);
  CHECK_INT(dlpar_port_listener_parse(table, 0x5208, 65534, &holder), DLPAR_OK);
  CHECK_INT(holder, 1000);
  CHECK_INT(dlpar_port_listener_parse(table, 0x5209, 1000, &holder), DLPAR_OK); /* 4242's is a connection */
  CHECK_INT(holder, 1000);
  CHECK_INT(dlpar_port_listener_parse(table, 0x520A, 1000, &holder), DLPAR_OK); /* an IPv6 row */
  CHECK_INT(holder, 65534);
  CHECK_INT(dlpar_port_listener_parse(table, 0x520B, 1000, &holder), DLPAR_OK); /* root's beside the user's */
  CHECK_INT(holder, 0);
  CHECK_INT(dlpar_port_listener_parse(table, 0x520C, 1000, &holder), DLPAR_OK);
  CHECK_INT(holder, -1);
  CHECK_INT(dlpar_port_listener_parse("garbage\n\n:::", 0x5208, 1000, &holder), DLPAR_OK);
  CHECK_INT(holder, -1);
  CHECK_INT(dlpar_port_listener_parse(NULL, 0x5208, 1000, &holder), DLPAR_ERR_INPUT);
  /* live: this process's listener is its own user's, and another uid's from its point of view */
  port = dlpar_port_pick();
  memset(&where, 0, sizeof(where));
  where.sin_family = AF_INET;
  where.sin_port = htons((uint16_t)port);
  CHECK(port > 0 && fd >= 0 && bind(fd, (struct sockaddr *)&where, sizeof(where)) == 0 && listen(fd, 1) == 0);
  CHECK_INT(dlpar_port_listener(port, (long)geteuid(), &holder), DLPAR_OK);
  CHECK_INT(holder, (long)geteuid());
  CHECK_INT(dlpar_port_listener(port, (long)geteuid() + 1, &holder), DLPAR_OK);
  CHECK_INT(holder, (long)geteuid());
  if (fd >= 0)
    close(fd);
  CHECK_INT(dlpar_port_listener(port, (long)geteuid(), &holder), DLPAR_OK);
  CHECK_INT(holder, -1);
}

/* The env:// contract's ports and interfaces in common/torchenv.h. */
static void test_torch_env(void)
{
  char ifname[32], addr[64];
  int port, lo, hi;
  dlpar_error err = {0};
  CHECK_INT(dlpar_resv_ports_first("12000-12003"), 12000);
  CHECK_INT(dlpar_resv_ports_first("12005,12000"), 12005);
  CHECK_INT(dlpar_resv_ports_first("12000"), 12000);
  CHECK_INT(dlpar_resv_ports_first(""), 0);
  CHECK_INT(dlpar_resv_ports_first(NULL), 0);
  CHECK_INT(dlpar_resv_ports_first("x12"), 0);
  CHECK_INT(dlpar_resv_ports_first("99999"), 0);
  /* the same on every node; consecutive steps of a job apart, wrapping inside the range */
  CHECK_INT(dlpar_torch_port_derive(7, 1, 20000, 29399) - 20000,
            (dlpar_torch_port_derive(7, 0, 20000, 29399) - 20000 + 1) % 9400);
  CHECK_INT(dlpar_torch_port_derive(7, 9400, 20000, 29399), dlpar_torch_port_derive(7, 0, 20000, 29399));
  CHECK_INT(dlpar_torch_port_derive(7, 3, 20000, 29399), dlpar_torch_port_derive(7, 3, 20000, 29399));
  for (uint32_t step = 0; step < 100; step++) {
    port = dlpar_torch_port_derive(4000000000u, step, 20000, 20009);
    CHECK(port >= 20000 && port <= 20009);
  }
  CHECK_INT(dlpar_port_range_parse("torch_ports", "21000-21010", &lo, &hi, &err), DLPAR_OK);
  CHECK(lo == 21000 && hi == 21010);
  CHECK_INT(dlpar_port_range_parse("torch_ports", "21000", &lo, &hi, &err), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_port_range_parse("torch_ports", "1000-2000", &lo, &hi, &err), DLPAR_ERR_INPUT);
  /* a range inside the kernel's ephemeral ports, or across their edge, is refused; beside them, not */
  CHECK_INT(dlpar_port_range_outside("torch_ports", 20000, 29399, 32768, 60999, false, &err), DLPAR_OK);
  CHECK_INT(dlpar_port_range_outside("torch_ports", 61000, 62000, 32768, 60999, true, &err), DLPAR_OK);
  CHECK_INT(dlpar_port_range_outside("torch_ports", 30000, 32768, 32768, 60999, true, &err),
            DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "plugstack.conf: torch_ports=30000-32768 overlaps the kernel's ephemeral ports 32768-60999 "
                      "(net.ipv4.ip_local_port_range), which any outgoing connection may take: set torch_ports=LO-HI "
                      "outside them (LO at least 1024)");
  CHECK_INT(dlpar_port_range_outside("torch_ports", 20000, 29399, 1024, 65535, false, &err),
            DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "torch_ports=20000-29399 (the default) overlaps") != NULL);
  CHECK_INT(dlpar_ephemeral_ports(&lo, &hi), DLPAR_OK); /* Linux has the file */
  CHECK(lo >= 1 && lo <= hi && hi <= 65535);
  /* a port the kernel picks is free; held by a listener of either family, on
   * any address, it is not, since torch's store binds [::] dual-stack */
  port = dlpar_port_pick();
  CHECK(port > 0 && dlpar_port_free(port));
  expect_busy(port, AF_INET, "127.0.0.1", false);
  expect_busy(port, AF_INET, "0.0.0.0", false);
  if (ipv6_here()) {
    expect_busy(port, AF_INET6, "::", true); /* an IPv6-only listener passed an IPv4-only check */
    expect_busy(port, AF_INET6, "::1", true);
  } else {
    printf("test_topo: no IPv6 on this host: the IPv6 listeners are not tried\n");
  }
  CHECK(dlpar_port_free(port));
  CHECK_INT(dlpar_route_interface("127.0.0.1", ifname, sizeof(ifname)), DLPAR_OK);
  CHECK_STR(ifname, "lo");
  CHECK(dlpar_is_loopback("127.0.0.1") && dlpar_is_loopback("127.0.1.1") && dlpar_is_loopback("127.255.255.254"));
  CHECK(dlpar_is_loopback("::1") && dlpar_is_loopback("::ffff:127.0.1.1"));
  CHECK(!dlpar_is_loopback("128.0.0.1") && !dlpar_is_loopback("10.77.0.11") && !dlpar_is_loopback("::2") &&
        !dlpar_is_loopback("::ffff:10.0.0.1") && !dlpar_is_loopback("localhost") && !dlpar_is_loopback(""));
  CHECK_INT(dlpar_route_interface("not-an-address", ifname, sizeof(ifname)), DLPAR_ERR_SYSTEM);
  CHECK_INT(dlpar_route_interface(NULL, ifname, sizeof(ifname)), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_route_interface("127.0.0.1", NULL, 16), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_route_interface("127.0.0.1", ifname, 0), DLPAR_ERR_INPUT);
  CHECK_INT(dlpar_numeric_address("127.0.0.1", addr, sizeof(addr)), DLPAR_OK);
  CHECK_STR(addr, "127.0.0.1");
  CHECK_INT(dlpar_numeric_address("localhost", addr, sizeof(addr)), DLPAR_OK);
  CHECK(strcmp(addr, "127.0.0.1") == 0 || strcmp(addr, "::1") == 0);
}

/* The interface towards an address the node holds on its loopback
 * interface, a routed /32 on lo as unnumbered fabrics do, is no interface
 * for gloo: dlpar_route_interface skips IFF_LOOPBACK interfaces, except for a
 * loopback address. Needs a network namespace of its own, so root. There, lo
 * is up with 10.254.0.1/32 on it as lo:0. */
static void test_route_skips_loopback(void)
{
  struct ifreq ifr;
  struct sockaddr_in *in = (struct sockaddr_in *)&ifr.ifr_addr;
  char ifname[32];
  const int fd = unshare(CLONE_NEWNET) == 0 ? socket(AF_INET, SOCK_DGRAM, 0) : -1;
  if (fd < 0) {
    printf("test_topo: no network namespace of its own here (not root?): the loopback route is not tried\n");
    return;
  }
  memset(&ifr, 0, sizeof(ifr));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
  CHECK(ioctl(fd, SIOCGIFFLAGS, &ifr) == 0);
  ifr.ifr_flags |= IFF_UP;
  CHECK(ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
  memset(&ifr, 0, sizeof(ifr));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:0");
  in->sin_family = AF_INET;
  CHECK(inet_pton(AF_INET, "10.254.0.1", &in->sin_addr) == 1);
  CHECK(ioctl(fd, SIOCSIFADDR, &ifr) == 0);
  close(fd);
  CHECK_INT(dlpar_route_interface("10.254.0.1", ifname, sizeof(ifname)), DLPAR_ERR_SYSTEM);
  CHECK_INT(dlpar_route_interface("127.0.0.1", ifname, sizeof(ifname)), DLPAR_OK);
  CHECK_STR(ifname, "lo");
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
  test_port_collisions();
  test_port_listener();
  test_route_skips_loopback(); /* last: it leaves this process in a network namespace of its own */
  return check_report("test_topo");
}

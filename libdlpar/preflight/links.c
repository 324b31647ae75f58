/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/links.c: the rates of the links a rank's groups cross,
 * for the pre-flight's expectations that links.h declares. NVLink and PCIe
 * come from hwloc, the memory's rate from hwloc's attributes, and the
 * NIC's from sysfs and ethtool. */
#include "config.h"

#include "libdlpar/preflight/links.h"

#include <dirent.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/status.h"
#include "common/topo.h"

void dlpar_link_set(dlpar_link *link, double gbs, const char *source)
{
  link->gbs = gbs;
  snprintf(link->source, sizeof(link->source), "%s", gbs > 0 ? source : "unknown");
}

/* The GPU's NVLink bandwidth one way, in GB/s: its row of hwloc's
 * NVLinkBandwidth matrix, summed over the peers it links to. The matrix is
 * in MB/s, and its objects are the GPUs' NVML OS devices and the
 * NVSwitches. */
static double nvlink_gbs(hwloc_topology_t topology, hwloc_obj_t gpu)
{
  struct hwloc_distances_s *matrices[4];
  unsigned count = 4;
  double total_mbs = 0;
  if (hwloc_distances_get_by_name(topology, "NVLinkBandwidth", &count, matrices, 0) != 0)
    return 0;
  for (unsigned m = 0; m < count && m < 4; m++) {
    const struct hwloc_distances_s *matrix = matrices[m];
    for (unsigned i = 0; i < matrix->nbobjs; i++) {
      if (matrix->objs[i] != gpu && matrix->objs[i]->parent != gpu)
        continue;
      for (unsigned j = 0; j < matrix->nbobjs; j++)
        total_mbs += j == i ? 0 : (double)matrix->values[i * matrix->nbobjs + j];
    }
    hwloc_distances_release(topology, matrices[m]);
  }
  return total_mbs / 1000.0;
}

/* Bandwidth of the memory local to this process's CPUs, which hwloc reports in MiB/s, or 0 when unknown. */
static double memory_gbs(hwloc_topology_t topology)
{
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  struct hwloc_location initiator = {.type = HWLOC_LOCATION_TYPE_CPUSET};
  hwloc_uint64_t mibs = 0;
  hwloc_obj_t numa = NULL;
  if (!cpus)
    return 0;
  if (hwloc_get_cpubind(topology, cpus, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(cpus))
    hwloc_bitmap_copy(cpus, hwloc_topology_get_topology_cpuset(topology));
  initiator.location.cpuset = cpus;
  while ((numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa)) &&
         !hwloc_bitmap_intersects(numa->cpuset, cpus))
    ;
  if (!numa || hwloc_memattr_get_value(topology, HWLOC_MEMATTR_ID_BANDWIDTH, numa, &initiator, 0, &mibs) != 0)
    mibs = 0;
  hwloc_bitmap_free(cpus);
  return (double)mibs * 1.048576 / 1000.0;
}

int dlpar_links_in_node(const char *xml_path, const char *gpu_busid, dlpar_link *nvlink, dlpar_link *pcie,
                        dlpar_link *memory, dlpar_error *err)
{
  hwloc_topology_t topology;
  hwloc_obj_t gpu;
  dlpar_link_set(nvlink, 0, "");
  dlpar_link_set(pcie, 0, "");
  dlpar_link_set(memory, 0, "");
  DLPAR_TRY(dlpar_hwloc_load(xml_path, &topology, err));
  if (!gpu_busid)
    dlpar_link_set(memory, memory_gbs(topology), "memory hwloc");
  else if ((gpu = hwloc_get_pcidev_by_busidstring(topology, gpu_busid))) {
    dlpar_link_set(nvlink, nvlink_gbs(topology, gpu), "NVLink hwloc");
    dlpar_link_set(pcie, gpu->attr->pcidev.linkspeed, "PCIe hwloc");
  }
  hwloc_topology_destroy(topology);
  return DLPAR_OK;
}

/* The number a sysfs file starts with, as in "400 Gb/sec (4X NDR)" or "10000"; 0 when none or negative. */
static double sysfs_number(const char *path)
{
  double value = 0;
  FILE *file = fopen(path, "r");
  if (!file)
    return 0;
  if (fscanf(file, "%lf", &value) != 1 || value < 0)
    value = 0;
  fclose(file);
  return value;
}

/* The fastest port of an HCA, from sysfs rates in Gb/s. */
static double hca_gbs(const char *hca)
{
  char path[PATH_MAX], rate_path[PATH_MAX + 300];
  double best = 0;
  DIR *ports;
  struct dirent *port;
  snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", hca);
  if (!(ports = opendir(path)))
    return 0;
  while ((port = readdir(ports)))
    if (port->d_name[0] != '.') {
      double gbs;
      snprintf(rate_path, sizeof(rate_path), "%s/%s/rate", path, port->d_name);
      if ((gbs = sysfs_number(rate_path) / 8) > best)
        best = gbs;
    }
  closedir(ports);
  return best;
}

/* The interface of this network namespace's default route, from /proc/net/route. */
static void default_route_ifname(char *out, size_t len)
{
  char name[IF_NAMESIZE + 1], line[256];
  unsigned long destination;
  FILE *routes = fopen("/proc/net/route", "r");
  out[0] = '\0';
  while (routes && fgets(line, sizeof(line), routes))
    if (sscanf(line, "%16s %lx", name, &destination) == 2 && destination == 0) {
      snprintf(out, len, "%s", name);
      break;
    }
  if (routes)
    fclose(routes);
}

/* NCCL_SOCKET_IFNAME's way: "=eth0" matches exactly, "eth" as a prefix, and
 * "^..." excludes, leaving the default route's. The first up,
 * non-loopback match wins. */
static void socket_ifname(const char *wanted, char *out, size_t len)
{
  const bool exact = wanted && wanted[0] == '=';
  struct ifaddrs *all = NULL;
  size_t prefix_len;
  out[0] = '\0';
  if (!wanted || !wanted[0] || wanted[0] == '^' || getifaddrs(&all) != 0) {
    default_route_ifname(out, len);
    return;
  }
  wanted += exact;
  prefix_len = strcspn(wanted, ",");
  for (const struct ifaddrs *ifa = all; ifa && !out[0]; ifa = ifa->ifa_next)
    if ((ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK) &&
        strncmp(ifa->ifa_name, wanted, prefix_len) == 0 && (!exact || strlen(ifa->ifa_name) == prefix_len))
      snprintf(out, len, "%s", ifa->ifa_name);
  freeifaddrs(all);
}

/* An interface's speed from the driver, turned from Mb/s into GB/s, or 0 when unknown. */
static double ethtool_gbs(const char *ifname)
{
  struct ethtool_cmd cmd = {.cmd = ETHTOOL_GSET};
  struct ifreq request;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  double gbs = 0;
  if (fd < 0)
    return 0;
  memset(&request, 0, sizeof(request));
  snprintf(request.ifr_name, sizeof(request.ifr_name), "%s", ifname);
  request.ifr_data = (char *)&cmd;
  if (ioctl(fd, SIOCETHTOOL, &request) == 0 && ethtool_cmd_speed(&cmd) != (__u32)SPEED_UNKNOWN)
    gbs = ethtool_cmd_speed(&cmd) / 8000.0;
  close(fd);
  return gbs;
}

/* An interface's speed as sysfs has it, turned from Mb/s into GB/s. sysfs shows the namespace it was mounted in. */
static double sysfs_speed_gbs(const char *ifname)
{
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
  return sysfs_number(path) / 8000.0;
}

void dlpar_link_nic(const char *hca, const char *socket_wanted, dlpar_link *link)
{
  char ifname[IF_NAMESIZE + 1], source[sizeof(link->source)];
  dlpar_link_set(link, 0, "");
  if (hca && hca[0]) {
    snprintf(source, sizeof(source), "%.24s rate", hca);
    dlpar_link_set(link, hca_gbs(hca), source);
  }
  if (link->gbs > 0)
    return;
  socket_ifname(socket_wanted, ifname, sizeof(ifname));
  if (!ifname[0])
    return;
  snprintf(source, sizeof(source), "%s ethtool", ifname);
  dlpar_link_set(link, ethtool_gbs(ifname), source);
  if (link->gbs > 0)
    return;
  snprintf(source, sizeof(source), "%s sysfs", ifname);
  dlpar_link_set(link, sysfs_speed_gbs(ifname), source);
}

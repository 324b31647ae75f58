/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/links.h: the rates of the links a rank's groups cross,
 * which only the pre-flight of --dl-check needs. They are libdlpar's, not
 * linked into the plugin. */
#ifndef DLPAR_LINKS_H
#define DLPAR_LINKS_H

#include <stddef.h>

#include "common/status.h"

/* A link a group's traffic crosses, for --dl-check's expectations: its rate
 * one way and where the figure came from. */
typedef struct {
  double gbs;      /* GB/s one way; 0: not known */
  char source[40]; /* "NVLink hwloc", "eth0 ethtool", ... */
} dlpar_link;

/* Links inside this node from hwloc, of this machine when xml_path is NULL.
 * With a gpu_busid such as "0000:3b:00.0", *nvlink is the GPU's NVLink
 * bandwidth, its row of hwloc's NVLinkBandwidth matrix, which hwloc's NVML
 * backend fills where it is built in. *pcie is its PCIe link, hwloc's
 * linkspeed. Each is 0 when hwloc does not know it. With gpu_busid NULL,
 * *memory is the bandwidth of the memory local to this process's CPUs,
 * from hwloc's memory attributes, which come from ACPI HMAT where the
 * firmware has it. */
int dlpar_links_in_node(const char *xml_path, const char *gpu_busid, dlpar_link *nvlink, dlpar_link *pcie,
                        dlpar_link *memory, dlpar_error *err);

/* The NIC between nodes: the HCA's port rate from sysfs, else the socket
 * interface and its speed. The interface is NCCL_SOCKET_IFNAME's first
 * prefix, else the default route's. Its speed comes from the ethtool
 * ioctl, which sees this network namespace, else from sysfs. link->gbs is
 * 0 when neither says. */
void dlpar_link_nic(const char *hca, const char *socket_ifname, dlpar_link *link);

/* link = gbs from source, or "unknown" when gbs is 0. */
void dlpar_link_set(dlpar_link *link, double gbs, const char *source);

#endif

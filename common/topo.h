/* SPDX-License-Identifier: BSD-3-Clause */
/* common/topo.h: a node's GPU topology, from hwloc for this machine or from
 * an hwloc XML file, and the mapping of a rank to its GPU, CPUs and NIC.
 * spank/, where slurmstepd binds tasks with it, and dlpar-run share it, so
 * srun and the one-machine launcher bind the same way. No Slurm or PMIx
 * types are here.
 *
 * GPUs are NVIDIA PCI devices, of vendor 0x10de and display or 3D class,
 * indexed in PCI bus order. That is the order of
 * CUDA_DEVICE_ORDER=PCI_BUS_ID and, with Slurm's NVML autodetection, of
 * gres indices. */
#ifndef DLPAR_TOPO_H
#define DLPAR_TOPO_H

#include <hwloc.h>
#include <stddef.h>

#include "status.h"

#define DLPAR_MAX_GPUS 64
#define DLPAR_LIST_LEN 256

typedef struct {
  char busid[16];           /* "0000:3b:00.0" */
  int package;              /* os index of the package, -1 unknown */
  int numa;                 /* os index of the closest NUMA node, -1 unknown */
  unsigned long locality[4];/* sort key: package, numa, switch, bus */
  char cpus[DLPAR_LIST_LEN];/* PUs of the GPU's NUMA node, list format */
  char nic[64];             /* closest InfiniBand/RoCE HCA, such as "mlx5_0", or "" for none */
} dlpar_gpu;

typedef struct {
  int ngpus;
  dlpar_gpu gpu[DLPAR_MAX_GPUS];
  char all_cpus[DLPAR_LIST_LEN];
  char all_nics[DLPAR_LIST_LEN];  /* every InfiniBand/RoCE HCA of the node, in bus order, such as "mlx5_0,mlx5_1" */
} dlpar_topology;

/* xml_path NULL: this machine. */
int dlpar_topology_load(const char *xml_path, dlpar_topology *topo, dlpar_error *err);

typedef struct {
  int gpu;                        /* the chosen GPU as an index into topo->gpu, its gres index, or -1 */
  int device;                     /* its index in `visible`, the local rank mod the GPUs, or -1 for none */
  char visible[DLPAR_LIST_LEN];   /* CUDA_VISIBLE_DEVICES: all of the step's GPUs on the node, in
                                   * locality order, so that cuda:LOCAL_RANK is the task's GPU */
  char cpus[DLPAR_LIST_LEN];      /* CPUs to bind to, "" for no binding */
  char nic[64];                   /* the HCA nearest the GPU, for UCX_NET_DEVICES, or "" for none */
  char node_nics[DLPAR_LIST_LEN]; /* NCCL_IB_HCA: the node's HCAs, the same for every rank of the
                                   * node, because NCCL needs one list and picks each GPU's nearest itself */
} dlpar_binding;

/* step_gpus is the step's GPUs on this node, as gres indices in any order,
 * or NULL and 0 for every GPU of the topology. Local ranks take GPUs in
 * locality order, by package, NUMA node, PCI switch and bus, so the M
 * consecutive local ranks of a tensor-parallel group get GPUs that are
 * close together. `visible` lists them in that order, with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID, whose numbering the gres indices are. So
 * local rank i's GPU is CUDA device i, the device an unchanged script's
 * cuda:LOCAL_RANK opens. */
int dlpar_map_task(const dlpar_topology *topo, const int *step_gpus, int nstep_gpus,
                   int local_rank, int local_size, dlpar_binding *out, dlpar_error *err);

/* Parses a list such as "0,1,3", from CUDA_VISIBLE_DEVICES or SLURM_STEP_GPUS, into ids; returns the count or -1. */
int dlpar_parse_id_list(const char *text, int *ids, int max_ids);

/* Parses a CPU list "0-3,8" into a bit mask of up to ncpus CPUs; returns count or -1. */
int dlpar_parse_cpu_list(const char *text, unsigned char *mask, int ncpus);

/* Binds the calling process to the CPUs of the list that its current
 * affinity allows, and returns how many. It returns 0, leaving the binding
 * as it was, when the list is empty or bad or none of its CPUs is allowed. */
int dlpar_bind_cpus(const char *cpus);

/* hwloc's topology of this machine when xml_path is NULL, or of an XML
 * file, I/O devices included. On failure it returns DLPAR_ERR_INPUT or
 * DLPAR_ERR_SYSTEM with err. */
int dlpar_hwloc_load(const char *xml_path, hwloc_topology_t *topology, dlpar_error *err);

#endif
